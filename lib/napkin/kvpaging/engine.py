"""A serving engine's KV memory, token by token: what reservation wastes and paging saves.

A serving engine keeps every running sequence's KV cache in a fixed pool of memory. Before
vLLM, engines stored each sequence contiguously and so reserved its space up front; vLLM's
PagedAttention hands out fixed-size blocks on demand (Kwon et al., SOSP 2023).
:class:`KVEngine` replays a queue of requests through either design, one step at a time;
each step it

1. lets every running sequence write one token (:meth:`KVEngine.write_tokens`),
2. admits waiting requests first come first served while they fit (:meth:`KVEngine.admit`),
3. splits the memory into five categories (:meth:`KVEngine.account`), and
4. returns the memory of the sequences that finished (:meth:`KVEngine.release`).

Chapter 6 shows each of these methods beside the paragraph that explains it.
"""

from __future__ import annotations

import heapq
from collections import deque

import pandas as pd

from .. import papers
from ..units import require_positive, require_whole
from ..workloads import Requests
from .memory import (ALLOCATORS, CATEGORIES, CODE, DEFAULT_BLOCK_SIZE, ContiguousMemory,
                     PagedMemory, Seq)
from .result import Result

TIMELINE_COLUMNS = ("step", "running", "waiting", "admitted", *CATEGORIES, "prefill_tokens",
                    "context_tokens", "attended_pairs")


class KVEngine:
    """Serve ``requests`` from ``capacity_tokens`` slots of KV memory with one allocator.

    ``allocator``: ``"max"``, ``"pow2"`` or ``"oracle"`` (the paper's Orca baselines: a
    contiguous reservation of the maximum length, of the prompt plus the output rounded up
    to a power of two, or of the exact final length) or ``"paged"`` (vLLM: blocks of
    ``block_size`` tokens, admitting while ``watermark`` of them stay free). Defined in
    ``napkin.kvpaging.engine``; chapter 6 shows its steps.
    """

    def __init__(self, requests: Requests, allocator: str, capacity_tokens: int, max_len: int,
                 *, block_size: int = DEFAULT_BLOCK_SIZE, watermark: float | None = None):
        if allocator not in ALLOCATORS:
            raise ValueError(f"unknown allocator {allocator!r}; known: {', '.join(ALLOCATORS)}")
        block = require_whole("block_size", block_size, 1)
        capacity = require_whole("capacity_tokens", capacity_tokens, 1)
        self.max_len = require_whole("max_len", max_len, 2)
        if watermark is None:
            watermark = papers.claim("vllm_admission_watermark")
        watermark = require_positive("watermark", watermark, allow_zero=True)
        if watermark >= 1:
            raise ValueError(f"watermark must be a fraction below 1, got {watermark!r}")
        self.allocator, self.capacity, self.block = allocator, capacity, block
        self.memory = PagedMemory(capacity, block, watermark, self.max_len) \
            if allocator == "paged" else ContiguousMemory(allocator, capacity, self.max_len)
        self._take(requests)
        self.queue: deque = deque()  # waiting (request, prompt, output), first come first
        self.running: dict[int, Seq] = {}  # in admission order: the last is preempted first
        self._finishing: list = []  # (step a sequence writes its last token, order, seq)
        self.stored_base = 0  # sum of prompt + 1 - admission step: + batch x step = tokens
        self.final_tokens = 0  # the running sequences' final lengths, summed
        self.admitted = self.finished = self.next_arrival = 0
        self.preemptions = self.recomputed = 0
        self.first_finish = self.last_admit = None
        self.rows: list[tuple] = []
        self.finishes: list[tuple] = []

    def _take(self, requests: Requests) -> None:
        self.prompts, self.outputs = requests.prompt.tolist(), requests.output.tolist()
        self.arrivals = requests.arrival.tolist()
        if not self.prompts:
            raise ValueError("requests is empty")
        for i, (p, o) in enumerate(zip(self.prompts, self.outputs)):
            if p < 1 or o < 1 or p + o > self.max_len:
                raise ValueError(f"request {i} (prompt {p}, output {o}) must have prompt >= 1, "
                                 f"output >= 1 and prompt + output <= max_len {self.max_len}")
        if any(b < a for a, b in zip(self.arrivals, self.arrivals[1:])):
            raise ValueError("requests must be sorted by arrival step")

    def run(self, *, check: bool = False, snapshot_step: int | None = None) -> Result:
        """Step until every request has finished. ``check=True`` verifies the memory's
        invariants after every step (slow; for tests); ``snapshot_step`` records where every
        token slot stands at that step (for pictures)."""
        layout, step = None, 0
        while self.finished < len(self.prompts):
            self.arrive(step)
            if not self.running and not self.queue:
                step = self.arrivals[self.next_arrival]  # idle until the next request
                continue
            self.write_tokens(step)
            joined = self.admit(step)
            cats = self.account(step, joined)
            if check:
                self.check(step, cats)
            if step == snapshot_step:
                layout = self.memory.layout(self.running, step, bool(self.queue))
            self.release(step)
            step += 1
        if check and (self.running or not self.memory.all_free()):
            raise AssertionError("memory was not all returned when every request finished")
        return self._result(layout)

    def arrive(self, step: int) -> None:
        """Requests that have arrived by ``step`` join the back of the queue."""
        while self.next_arrival < len(self.prompts) and self.arrivals[self.next_arrival] <= step:
            i = self.next_arrival
            self.queue.append((i, self.prompts[i], self.outputs[i]))
            self.next_arrival += 1

    def write_tokens(self, step: int) -> None:
        """Every running sequence writes one token. A reservation already has room for it; a
        paged sequence whose last block is full takes a new block, and when none is free the
        most recently admitted sequence is preempted, to be recomputed later. Chapter 6
        shows this method."""
        for seq in self.memory.due(step):  # paged sequences whose last block is full
            if not self._running(seq):  # preempted since, or finished
                continue
            while not self.memory.has_free_block():
                victim = self.running[next(reversed(self.running))]  # the latest admitted
                self.preempt(victim, step)
                if victim is seq:
                    break
            if self._running(seq):
                self.memory.grow(seq)

    def preempt(self, seq: Seq, step: int) -> None:
        """Drop ``seq``'s cache and put it back at the head of the queue: when admitted again,
        its prompt is everything it had stored, recomputed in one prefill (as vLLM does)."""
        stored = seq.stored(step - 1)
        self._remove(seq)
        self.queue.appendleft((seq.rid, stored, seq.final - stored))
        self.preemptions += 1
        self.recomputed += stored

    def admit(self, step: int) -> list[Seq]:
        """Waiting requests join, first come first served, while the memory can place them;
        the first that does not fit waits, and so does everyone behind it. A request's first
        step writes its whole prompt and its first new token. Chapter 6 shows this method."""
        joined = []
        while self.queue:
            rid, prompt, output = self.queue[0]
            seq = Seq(rid, prompt, prompt + output, step, self.admitted)
            if not self.memory.place(seq):
                break
            self.queue.popleft()
            self.running[rid] = seq
            heapq.heappush(self._finishing, (step + output - 1, seq.order_key, seq))
            self.admitted += 1
            self.stored_base += prompt + 1 - step  # it stores prompt + 1 + (now - step)
            self.final_tokens += seq.final
            joined.append(seq)
            self.last_admit = step
        return joined

    def account(self, step: int, joined: list[Seq]) -> tuple[int, ...]:
        """Record the step: how many run and wait, the memory in its five categories, and
        the work of the forward pass (prompt tokens, cached tokens read, attention pairs).
        Chapter 6 shows this method."""
        batch = len(self.running)
        tokens = self.stored_base + batch * step  # every running sequence's stored tokens
        prefill = sum(s.prompt for s in joined)
        pairs = sum(s.prompt * (s.prompt + 1) // 2 for s in joined)  # causal prompts
        decode = batch - len(joined)
        context = tokens - decode - prefill - len(joined)  # cached before this step
        cats = self.memory.categories(tokens, self.final_tokens, bool(self.queue))
        self.rows.append((step, batch, len(self.queue), len(joined), *cats, prefill, context,
                          context + decode + pairs))
        return cats

    def release(self, step: int) -> None:
        """Sequences that wrote their last token give their memory back. Chapter 6 shows
        this method."""
        while self._finishing and self._finishing[0][0] <= step:
            seq = heapq.heappop(self._finishing)[2]
            if not self._running(seq):
                continue
            self.finishes.append((seq.rid, step, seq.stored(step), seq.final,
                                  self.memory.held(seq)))
            self._remove(seq)
            self.finished += 1
            if self.first_finish is None:
                self.first_finish = step

    def _running(self, seq: Seq) -> bool:
        """Whether ``seq`` is still running (not finished, not preempted and readmitted)."""
        return self.running.get(seq.rid) is seq

    def _remove(self, seq: Seq) -> None:
        del self.running[seq.rid]
        self.stored_base -= seq.prompt + 1 - seq.admitted
        self.final_tokens -= seq.final
        self.memory.free(seq)

    def check(self, step: int, cats: tuple[int, ...]) -> None:
        """The memory's invariants, verified from scratch (tests run this every step)."""
        if sum(cats) != self.capacity or min(cats) < 0:
            raise AssertionError(f"step {step}: categories {cats} do not partition "
                                 f"{self.capacity}")
        layout = self.memory.layout(self.running, step, bool(self.queue))
        category, owner = layout["category"], layout["owner"]
        for code, name in enumerate(CATEGORIES):
            if int((category == code).sum()) != cats[code]:
                raise AssertionError(f"step {step}: {name} slots differ from the running total")
        for seq in self.running.values():
            stored = seq.stored(step)
            mine = int(((owner == seq.rid) & (category == CODE["token"])).sum())
            if mine != stored or stored > seq.final:
                raise AssertionError(f"step {step}: request {seq.rid} stores {mine} of {stored}")
        self.memory.check(self.running, step, owner)

    def _result(self, layout: dict | None) -> Result:
        timeline = pd.DataFrame(self.rows, columns=list(TIMELINE_COLUMNS))
        window = (self.first_finish, self.last_admit) if self.last_admit >= self.first_finish \
            else (0, int(timeline["step"].iloc[-1]))
        finishes = pd.DataFrame(self.finishes, columns=["request", "step", "stored",
                                                        "final_length", "held"])
        return Result(allocator=self.allocator, capacity_tokens=self.capacity,
                      block_size=self.block, max_len=self.max_len, n_requests=len(self.prompts),
                      timeline=timeline, finishes=finishes, preemptions=self.preemptions,
                      recomputed_tokens=self.recomputed, window=window, layout=layout)


def simulate(requests: Requests, allocator: str, capacity_tokens: int, max_len: int, *,
             block_size: int = DEFAULT_BLOCK_SIZE, watermark: float | None = None,
             check: bool = False, snapshot_step: int | None = None) -> Result:
    """One run of :class:`KVEngine` (see it for the arguments)."""
    return KVEngine(requests, allocator, capacity_tokens, max_len, block_size=block_size,
                    watermark=watermark).run(check=check, snapshot_step=snapshot_step)

