"""Where a sequence's KV cache lives: one contiguous reservation, or fixed-size blocks.

Chapter 6's engine (:class:`napkin.kvpaging.engine.KVEngine`) asks its memory to *place* a
request it admits, to *grow* a sequence that needs room for its next token, to *free* a
sequence that leaves, and to split itself into five categories of tokens for the accounting:

- **token**: slots holding a token's key and value;
- **reserved**: slots a sequence holds for tokens it will still generate;
- **internal**: slots a sequence holds beyond its final length (never used);
- **external**: memory the allocator cannot give out: a buddy chunk's rounding above the
  reservation, plus free memory while a request waits that does not fit in it (the paper's
  "external fragmentation & others"); for paging only the tail too short for a block;
- **free**: unallocated memory nobody is waiting for (for paging, every free block).

Two memories answer: :class:`ContiguousMemory` (the paper's three Orca baselines) and
:class:`PagedMemory` (vLLM). Chapter 6 shows how each places a request.
"""

from __future__ import annotations

import heapq

import numpy as np

from .buddy import Buddy, next_pow2

ALLOCATORS = ("max", "pow2", "oracle", "paged")
LABELS = {"max": "Orca (Max)", "pow2": "Orca (Pow2)", "oracle": "Orca (Oracle)",
          "paged": "Paged (vLLM)"}
CATEGORIES = ("token", "reserved", "internal", "external", "free")
CATEGORY_LABELS = {"token": "Token states", "reserved": "Reserved for future tokens",
                   "internal": "Internal fragmentation", "external": "External fragmentation",
                   "free": "Free"}
CODE = {name: i for i, name in enumerate(CATEGORIES)}

#: vLLM's default block size (the paper, section 7.2).
DEFAULT_BLOCK_SIZE = 16


class Seq:
    """A running sequence: its request, its lengths, when it joined, and what memory it holds."""

    __slots__ = ("rid", "admitted", "prompt", "final", "order_key", "reserve", "address",
                 "order", "blocks", "internal")

    def __init__(self, rid: int, prompt: int, final: int, admitted: int, order_key: int):
        self.rid, self.prompt, self.final = rid, prompt, final
        self.admitted, self.order_key = admitted, order_key
        self.reserve = self.address = self.order = 0
        self.blocks: list[int] = []
        self.internal = 0

    def stored(self, step: int) -> int:
        """Tokens cached at the end of ``step`` (the prefill step stores prompt + 1)."""
        return self.prompt + 1 + step - self.admitted


def reservation(allocator: str, prompt: int, output: int, max_len: int) -> int:
    """Tokens a contiguous allocator asks for: the paper's three Orca policies. Chapter 6
    shows this function."""
    if allocator == "max":
        return max_len
    if allocator == "pow2":
        return min(max_len, prompt + next_pow2(output))
    if allocator == "oracle":
        return prompt + output
    raise ValueError(f"{allocator!r} reserves nothing up front; contiguous allocators: "
                     "max, pow2, oracle")


class _Memory:
    """What both memories share: the picture of every slot, and its checks."""

    capacity: int

    def layout(self, running: dict, step: int, waiting: bool) -> dict:
        """Every token slot's category and owner at one step (for pictures and checks)."""
        category = np.full(self.capacity, self._idle(waiting), dtype=np.int8)
        owner = np.full(self.capacity, -1, dtype=np.int64)
        self._paint_idle(category)
        for seq in running.values():
            self._paint(seq, seq.stored(step), category, owner)
        return {"step": step, "category": category, "owner": owner}

    def _paint_idle(self, category: np.ndarray) -> None:
        pass


class ContiguousMemory(_Memory):
    """Orca's memory: each request reserves one contiguous chunk when it is admitted.

    ``allocator`` says how much (:func:`reservation`); a buddy allocator places it, rounding
    the chunk up to a power of two. The reservation covers every token the request will
    write, so a running sequence never needs more.
    """

    def __init__(self, allocator: str, capacity: int, max_len: int):
        reservation(allocator, 1, 1, max_len)  # refuses an allocator that reserves nothing
        if next_pow2(max_len) > capacity:
            raise ValueError(
                f"capacity_tokens {capacity} is smaller than one sequence: max_len {max_len} "
                f"needs {next_pow2(max_len)} tokens of KV memory with the {LABELS[allocator]} "
                "allocator (the buddy allocator rounds a reservation up to a power of two)")
        self.allocator, self.capacity, self.max_len = allocator, capacity, max_len
        self.buddy = Buddy(capacity)
        self.reserved = 0  # tokens reserved by the running sequences
        self.chunks = 0    # tokens in their chunks (reservations rounded up)

    def place(self, seq: Seq) -> bool:
        """Reserve the request's chunk, if the buddy allocator has one that large. Chapter 6
        shows this method."""
        want = reservation(self.allocator, seq.prompt, seq.final - seq.prompt, self.max_len)
        got = self.buddy.alloc(want)
        if got is None:
            return False
        seq.reserve, (seq.address, seq.order) = want, got
        self.reserved += want
        self.chunks += 1 << seq.order
        return True

    def due(self, step: int):
        """Sequences that need more memory at ``step``: never one (the reservation holds it)."""
        return ()

    def free(self, seq: Seq) -> None:
        self.buddy.release(seq.address, seq.order)
        self.reserved -= seq.reserve
        self.chunks -= 1 << seq.order

    def held(self, seq: Seq) -> int:
        return seq.reserve

    def all_free(self) -> bool:
        return self.buddy.free_tokens == self.capacity

    def categories(self, tokens: int, final: int, waiting: bool) -> tuple[int, ...]:
        """Tokens in each category, given the running sequences' stored and final lengths.
        Free memory is external fragmentation while a request waits that does not fit in it."""
        spare = self.capacity - self.chunks
        stranded = spare if waiting else 0
        return (tokens, final - tokens, self.reserved - final,
                self.chunks - self.reserved + stranded, spare - stranded)

    def _idle(self, waiting: bool) -> int:
        return CODE["external"] if waiting else CODE["free"]

    def _paint(self, seq: Seq, stored: int, category: np.ndarray, owner: np.ndarray) -> None:
        base, size = seq.address, 1 << seq.order
        if (owner[base:base + size] != -1).any():
            raise AssertionError(f"chunk at {base} overlaps another")
        owner[base:base + size] = seq.rid
        category[base:base + size] = CODE["external"]
        category[base:base + seq.reserve] = CODE["internal"]
        category[base:base + seq.final] = CODE["reserved"]
        category[base:base + stored] = CODE["token"]

    def check(self, running: dict, step: int, owner: np.ndarray) -> None:
        """Free chunks overlap neither each other nor a sequence's, and all cover the memory."""
        seen = np.zeros(self.capacity, dtype=bool)
        for address, order in self.buddy.free_chunks():
            chunk = slice(address, address + (1 << order))
            if seen[chunk].any() or (owner[chunk] != -1).any():
                raise AssertionError(f"step {step}: free chunk {address} overlaps")
            seen[chunk] = True
        if int(seen.sum()) + int((owner != -1).sum()) != self.capacity:
            raise AssertionError(f"step {step}: chunks and free memory do not cover capacity")


class PagedMemory(_Memory):
    """vLLM's memory: blocks of ``block`` tokens, handed out as the tokens arrive.

    A request is admitted with the blocks its prompt and first token need, if that leaves
    ``watermark`` of the blocks free; a sequence takes one more block whenever its last one
    is full. Only the last block of a sequence can hold empty slots.
    """

    def __init__(self, capacity: int, block: int, watermark: float, max_len: int):
        self.capacity, self.block = capacity, block
        self.n_blocks = capacity // block
        self.keep_free = int(watermark * self.n_blocks)
        need = (-(-max_len // block) + self.keep_free) * block
        if need > self.n_blocks * block:
            raise ValueError(
                f"capacity_tokens {capacity} is smaller than one sequence: max_len {max_len} "
                f"needs {need} tokens of KV memory with the {LABELS['paged']} allocator "
                f"(block_size {block}, watermark {watermark})")
        self.free_blocks = list(range(self.n_blocks - 1, -1, -1))  # pop() gives block 0 first
        self.internal = 0  # slots of full-length sequences' last blocks that stay empty
        self._due: list = []  # (step a sequence needs its next block, admission order, seq)

    def place(self, seq: Seq) -> bool:
        """Blocks for the prompt and the first new token, if enough stay free. Chapter 6
        shows this method."""
        blocks = -(-(seq.prompt + 1) // self.block)
        if len(self.free_blocks) - blocks < self.keep_free:
            return False
        seq.blocks = [self.free_blocks.pop() for _ in range(blocks)]
        self._track(seq)
        return True

    def due(self, step: int):
        """The sequences whose last block filled up at the step before ``step``."""
        while self._due and self._due[0][0] <= step:
            yield heapq.heappop(self._due)[2]

    def has_free_block(self) -> bool:
        return bool(self.free_blocks)

    def grow(self, seq: Seq) -> None:
        """One more block for ``seq`` (there must be a free one)."""
        seq.blocks.append(self.free_blocks.pop())
        self._track(seq)

    def _track(self, seq: Seq) -> None:
        slots = len(seq.blocks) * self.block
        if slots >= seq.final:  # its last block: what lies beyond the final length stays empty
            seq.internal = slots - seq.final
            self.internal += seq.internal
        else:  # the step at which these blocks are full and the next token needs another
            heapq.heappush(self._due, (seq.admitted + slots - seq.prompt, seq.order_key, seq))

    def free(self, seq: Seq) -> None:
        self.free_blocks.extend(reversed(seq.blocks))
        self.internal -= seq.internal

    def held(self, seq: Seq) -> int:
        return len(seq.blocks) * self.block

    def all_free(self) -> bool:
        return len(self.free_blocks) == self.n_blocks

    def categories(self, tokens: int, final: int, waiting: bool) -> tuple[int, ...]:
        """Tokens in each category: the empty slots of last blocks are reserved (for tokens
        still to come) or internal (beyond the final length); the tail too short for a block
        is external; every free block is free."""
        allocated = (self.n_blocks - len(self.free_blocks)) * self.block
        return (tokens, allocated - self.internal - tokens, self.internal,
                self.capacity - self.n_blocks * self.block, len(self.free_blocks) * self.block)

    def _idle(self, waiting: bool) -> int:
        return CODE["free"]

    def _paint_idle(self, category: np.ndarray) -> None:
        category[self.n_blocks * self.block:] = CODE["external"]

    def _paint(self, seq: Seq, stored: int, category: np.ndarray, owner: np.ndarray) -> None:
        for j, b in enumerate(seq.blocks):
            pos = np.arange(j * self.block, (j + 1) * self.block)
            slots = slice(b * self.block, (b + 1) * self.block)
            if (owner[slots] != -1).any():
                raise AssertionError(f"block {b} is owned twice")
            owner[slots] = seq.rid
            category[slots] = np.where(pos < stored, CODE["token"], np.where(
                pos < seq.final, CODE["reserved"], CODE["internal"]))

    def check(self, running: dict, step: int, owner: np.ndarray) -> None:
        """Each sequence holds the blocks its tokens need, and no block is owned twice or
        lost."""
        for seq in running.values():
            if len(seq.blocks) != -(-seq.stored(step) // self.block):
                raise AssertionError(
                    f"step {step}: request {seq.rid} holds blocks it does not need")
        owned = [b for seq in running.values() for b in seq.blocks]
        if len(set(owned)) != len(owned) or set(owned) & set(self.free_blocks) or \
                len(owned) + len(self.free_blocks) != self.n_blocks:
            raise AssertionError(f"step {step}: a block is owned twice or lost")
