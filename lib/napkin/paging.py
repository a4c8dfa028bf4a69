"""Paged KV memory, simulated: what contiguous reservation wastes and what paging buys.

A serving engine keeps every running sequence's KV cache in a fixed pool of memory. Before
vLLM, engines stored each sequence contiguously and so had to reserve its space up front;
vLLM's PagedAttention hands out fixed-size blocks on demand (Kwon et al., SOSP 2023). This
module replays a queue of requests through both designs, token by token:

- ``"max"``: reserve the model's maximum sequence length (the paper's *Orca (Max)*);
- ``"pow2"``: reserve the prompt plus the output rounded up to a power of two (*Orca (Pow2)*);
- ``"oracle"``: reserve the prompt plus the true output length, known in advance
  (*Orca (Oracle)*, an upper bound no real engine reaches);
- ``"paged"``: fixed-size blocks (16 tokens by default) allocated as tokens arrive.

The three contiguous reservations are placed by a buddy allocator, as the paper assumes for
its Orca baselines. Each step every running sequence gains one token; a waiting request is
admitted, first come first served, when its reservation (or its prompt's blocks, keeping
vLLM's 1 % watermark free) fits; a finished request returns its memory. When a paged
sequence needs a block and none is free, the most recently admitted sequence is preempted and
later recomputed, as in vLLM.

Every step the memory is split five ways, in tokens (they sum to the capacity):

- **token**: slots holding a token's key and value;
- **reserved**: slots a sequence holds for tokens it will still generate;
- **internal**: slots a sequence holds beyond its final length (never used);
- **external**: memory the allocator cannot give out: a buddy chunk's rounding above the
  reservation, plus free memory while a request waits that does not fit in it (the paper's
  "external fragmentation & others"); for paging only the tail too short for a block;
- **free**: unallocated memory nobody is waiting for (for paging, every free block).

With :func:`step_seconds` (a roofline for one forward pass) the batch that memory allows
becomes tokens per second on a given chip and model.
"""

from __future__ import annotations

import heapq
import math
from collections import deque
from dataclasses import dataclass, field
from functools import lru_cache

import numpy as np
import pandas as pd

from . import kvcache, models, roofline, tables
from .units import GB, GiB, require_positive

ALLOCATORS = ("max", "pow2", "oracle", "paged")
LABELS = {"max": "Orca (Max)", "pow2": "Orca (Pow2)", "oracle": "Orca (Oracle)",
          "paged": "Paged (vLLM)"}
#: The paper's name for each allocator's bar in its Fig. 2 and Fig. 13.
PAPER_SYSTEMS = {"max": "orca_max", "pow2": "orca_pow2", "oracle": "orca_oracle",
                 "paged": "vllm"}
CATEGORIES = ("token", "reserved", "internal", "external", "free")
CATEGORY_LABELS = {"token": "Token states", "reserved": "Reserved for future tokens",
                   "internal": "Internal fragmentation", "external": "External fragmentation",
                   "free": "Free"}
_CODE = {name: i for i, name in enumerate(CATEGORIES)}

#: vLLM's default block size (paper, section 7.2) and the seed every chapter run uses.
DEFAULT_BLOCK_SIZE = 16
SEED = 6
#: Shape of the lognormal request lengths: see :func:`sample_requests`.
DEFAULT_SIGMA = 1.0
DEFAULT_REQUESTS = 1000


# -- the paper's numbers ----------------------------------------------------------------------

def paper_claims() -> pd.DataFrame:
    """``data/serving_papers_claims.csv``: the vLLM paper's quotes and printed figures."""
    return tables.load("serving_papers_claims")


def paper_claim(name: str, end: str = "low") -> float:
    """One number from the paper (``end="high"`` for the top of a range)."""
    if end not in ("low", "high"):
        raise ValueError(f"end must be 'low' or 'high', got {end!r}")
    row = _claim_row(name)
    value = row[f"value_{end}"]
    if pd.isna(value):
        raise ValueError(f"claim {name!r} states no number; see its quote")
    return float(value)


def paper_quote(name: str) -> str:
    return str(_claim_row(name)["quote"])


def _claim_row(name: str) -> pd.Series:
    return tables.row("serving_papers_claims", "claim", name)


# -- workloads --------------------------------------------------------------------------------

@dataclass(frozen=True)
class Workload:
    """Request lengths: lognormal prompt and output lengths with the dataset's means.

    The paper gives each dataset's mean input and output length (Fig. 11's legends) and
    draws the histograms: a spike at short lengths and a long right tail. A lognormal with
    those means has that shape; ``sigma`` (the standard deviation of log-length) sets how
    long the tail is. At ``sigma=1`` the median is 61 % of the mean and about one ShareGPT
    output in a hundred exceeds 2,048 tokens, the tail the figure shows; ``sigma=0`` makes
    every request the same length.
    """

    name: str
    input_mean_tokens: float
    output_mean_tokens: float
    sigma: float = DEFAULT_SIGMA


def workload(name: str = "ShareGPT", sigma: float = DEFAULT_SIGMA) -> Workload:
    """ShareGPT or Alpaca lengths, with the means the paper prints in its Fig. 11."""
    key = {"sharegpt": "sharegpt", "alpaca": "alpaca"}.get(str(name).lower())
    if key is None:
        raise ValueError(f"unknown workload {name!r}; known: ShareGPT, Alpaca")
    require_positive("sigma", sigma, allow_zero=True)
    return Workload(name={"sharegpt": "ShareGPT", "alpaca": "Alpaca"}[key],
                    input_mean_tokens=paper_claim(f"fig11_{key}_input_mean"),
                    output_mean_tokens=paper_claim(f"fig11_{key}_output_mean"),
                    sigma=float(sigma))


@dataclass(frozen=True)
class Requests:
    """A queue of requests: prompt and output lengths in tokens, arrival step."""

    prompt: np.ndarray
    output: np.ndarray
    arrival: np.ndarray

    def __len__(self) -> int:
        return len(self.prompt)

    @property
    def final_length(self) -> np.ndarray:
        return self.prompt + self.output


def sample_requests(wl: Workload, n: int, max_len: int, seed: int = SEED,
                    arrival_rate: float | None = None) -> Requests:
    """``n`` seeded requests from a workload, cut to fit ``max_len`` tokens.

    Lengths are lognormal with the workload's means, rounded to whole tokens (at least
    one); a prompt keeps at least one token of room for output, and an output stops where
    the sequence reaches ``max_len``, as a model stops at its context limit. With
    ``arrival_rate=None`` every request is waiting at the start, so the engine runs full
    (memory, not demand, sets the batch); otherwise arrivals are a Poisson process with that
    many requests per step.
    """
    n = _whole("n", n, 1)
    max_len = _whole("max_len", max_len, 2)
    rng = np.random.default_rng(seed)

    def draw(mean: float) -> np.ndarray:
        if wl.sigma == 0:
            return np.full(n, float(mean))
        return rng.lognormal(math.log(mean) - wl.sigma ** 2 / 2, wl.sigma, n)

    prompt = np.maximum(1, np.rint(draw(wl.input_mean_tokens))).astype(np.int64)
    output = np.maximum(1, np.rint(draw(wl.output_mean_tokens))).astype(np.int64)
    prompt = np.minimum(prompt, max_len - 1)
    output = np.minimum(output, max_len - prompt)
    if arrival_rate is None:
        arrival = np.zeros(n, dtype=np.int64)
    else:
        rate = require_positive("arrival_rate", arrival_rate)
        arrival = np.floor(np.cumsum(rng.exponential(1 / rate, n))).astype(np.int64)
    return Requests(prompt=prompt, output=output, arrival=arrival)


def _whole(name: str, value, minimum: int) -> int:
    if isinstance(value, bool) or not isinstance(value, (int, np.integer)) or value < minimum:
        raise ValueError(f"{name} must be a whole number >= {minimum}, got {value!r}")
    return int(value)


# -- allocators -------------------------------------------------------------------------------

def next_pow2(n: int) -> int:
    return 1 << (int(n) - 1).bit_length()


def reservation(allocator: str, prompt: int, output: int, max_len: int) -> int:
    """Tokens a contiguous allocator asks for: the paper's three Orca policies."""
    if allocator == "max":
        return max_len
    if allocator == "pow2":
        return min(max_len, prompt + next_pow2(output))
    if allocator == "oracle":
        return prompt + output
    raise ValueError(f"{allocator!r} reserves nothing up front; contiguous allocators: "
                     "max, pow2, oracle")


class Buddy:
    """A binary buddy allocator over ``capacity`` token slots.

    Chunks are powers of two at addresses aligned to their size; the capacity is cut into
    its binary digits (15,728 = 8,192 + 4,096 + ...) so that no chunk crosses its end. A
    freed chunk merges with its buddy when that is free too.
    """

    def __init__(self, capacity: int):
        self.capacity = capacity
        self.max_order = capacity.bit_length() - 1
        self.free: dict[int, set[int]] = {}
        address = 0
        for order in range(self.max_order, -1, -1):
            if capacity >> order & 1:
                self.free.setdefault(order, set()).add(address)
                address += 1 << order
        self.free_tokens = capacity

    def alloc(self, size: int) -> tuple[int, int] | None:
        """(address, order) of a chunk of at least ``size`` slots, or None if none fits."""
        order = (size - 1).bit_length()
        for have in range(order, self.max_order + 1):
            if self.free.get(have):
                break
        else:
            return None
        address = min(self.free[have])
        self.free[have].remove(address)
        while have > order:
            have -= 1
            self.free.setdefault(have, set()).add(address + (1 << have))
        self.free_tokens -= 1 << order
        return address, order

    def release(self, address: int, order: int) -> None:
        self.free_tokens += 1 << order
        while order < self.max_order:
            buddy = address ^ (1 << order)
            same = self.free.get(order)
            if not same or buddy not in same:
                break
            same.remove(buddy)
            address = min(address, buddy)
            order += 1
        self.free.setdefault(order, set()).add(address)

    def free_chunks(self):
        for order, addresses in self.free.items():
            for address in addresses:
                yield address, order


class _Seq:
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


# -- the simulation ---------------------------------------------------------------------------

TIMELINE_COLUMNS = ("step", "running", "waiting", "admitted", *CATEGORIES, "prefill_tokens",
                    "context_tokens", "attended_pairs")


@dataclass
class Result:
    """One allocator's run: memory in tokens at every step, and what happened."""

    allocator: str
    capacity_tokens: int
    block_size: int
    max_len: int
    n_requests: int
    timeline: pd.DataFrame
    finishes: pd.DataFrame
    preemptions: int
    recomputed_tokens: int
    window: tuple[int, int]
    layout: dict | None = field(default=None, repr=False)

    @property
    def label(self) -> str:
        return LABELS[self.allocator]

    def in_window(self) -> pd.DataFrame:
        """Steps from the first finish to the last admission: the engine full and turning
        over, without the initial fill or the final drain."""
        lo, hi = self.window
        tl = self.timeline
        return tl[(tl["step"] >= lo) & (tl["step"] <= hi)]

    def shares(self) -> dict[str, float]:
        """Mean share of the KV memory in each category over the window."""
        w = self.in_window()
        return {c: float(w[c].mean() / self.capacity_tokens) for c in CATEGORIES}

    @property
    def utilisation(self) -> float:
        """Share of KV memory holding token states (the paper's Fig. 2 green bar)."""
        return self.shares()["token"]

    @property
    def mean_batch(self) -> float:
        return float(self.in_window()["running"].mean())


def simulate(requests: Requests, allocator: str, capacity_tokens: int, max_len: int, *,
             block_size: int = DEFAULT_BLOCK_SIZE, watermark: float | None = None,
             check: bool = False, snapshot_step: int | None = None) -> Result:
    """Serve ``requests`` from ``capacity_tokens`` slots of KV memory with one allocator.

    ``check=True`` verifies the allocator's invariants after every step (slow; for tests).
    ``snapshot_step`` records where every token slot stands at that step (for pictures).
    """
    if allocator not in ALLOCATORS:
        raise ValueError(f"unknown allocator {allocator!r}; known: {', '.join(ALLOCATORS)}")
    block = _whole("block_size", block_size, 1)
    capacity = _whole("capacity_tokens", capacity_tokens, 1)
    max_len = _whole("max_len", max_len, 2)
    if watermark is None:
        watermark = paper_claim("vllm_admission_watermark")
    watermark = require_positive("watermark", watermark, allow_zero=True)
    if watermark >= 1:
        raise ValueError(f"watermark must be a fraction below 1, got {watermark!r}")
    paged = allocator == "paged"
    n_blocks = capacity // block if paged else 0
    keep_free = int(watermark * n_blocks)
    need = (-(-max_len // block) + keep_free) * block if paged else next_pow2(max_len)
    if need > (n_blocks * block if paged else capacity):
        raise ValueError(
            f"capacity_tokens {capacity} is smaller than one sequence: max_len {max_len} "
            f"needs {need} tokens of KV memory with the {LABELS[allocator]} allocator"
            + (f" (block_size {block}, watermark {watermark})" if paged else
               " (the buddy allocator rounds a reservation up to a power of two)"))
    prompts, outputs = requests.prompt.tolist(), requests.output.tolist()
    arrivals = requests.arrival.tolist()
    n = len(prompts)
    if n == 0:
        raise ValueError("requests is empty")
    for i, (p, o) in enumerate(zip(prompts, outputs)):
        if p < 1 or o < 1 or p + o > max_len:
            raise ValueError(f"request {i} (prompt {p}, output {o}) must have prompt >= 1, "
                             f"output >= 1 and prompt + output <= max_len {max_len}")
    if any(b < a for a, b in zip(arrivals, arrivals[1:])):
        raise ValueError("requests must be sorted by arrival step")

    buddy = None if paged else Buddy(capacity)
    free_blocks = list(range(n_blocks - 1, -1, -1))  # pop() hands out block 0 first
    queue: deque = deque()
    running: dict[int, _Seq] = {}  # in admission order: the last one is preempted first
    finish_heap: list = []
    block_heap: list = []
    n_run = k_sum = final_sum = reserve_sum = chunk_sum = internal_sum = 0
    order_key = finished = next_arrival = preemptions = recomputed = 0
    first_finish = last_admit = None
    rows: list[tuple] = []
    finishes: list[tuple] = []
    layout = None

    def remove(seq: _Seq) -> None:
        nonlocal n_run, k_sum, final_sum, reserve_sum, chunk_sum, internal_sum
        del running[seq.rid]
        n_run -= 1
        k_sum -= seq.prompt + 1 - seq.admitted
        final_sum -= seq.final
        if paged:
            free_blocks.extend(reversed(seq.blocks))
            internal_sum -= seq.internal
        else:
            buddy.release(seq.address, seq.order)
            reserve_sum -= seq.reserve
            chunk_sum -= 1 << seq.order

    step = 0
    while finished < n:
        while next_arrival < n and arrivals[next_arrival] <= step:
            queue.append((next_arrival, prompts[next_arrival], outputs[next_arrival]))
            next_arrival += 1
        if not running and not queue:
            step = arrivals[next_arrival]  # idle until the next request arrives
            continue

        # 1. every running sequence writes one token; a paged one may need a new block
        while block_heap and block_heap[0][0] == step:
            seq = heapq.heappop(block_heap)[2]
            if running.get(seq.rid) is not seq:
                continue
            while not free_blocks:
                victim = running[next(reversed(running))]
                stored = victim.stored(step - 1)
                remove(victim)
                queue.appendleft((victim.rid, stored, victim.final - stored))
                preemptions += 1
                recomputed += stored
                if victim is seq:
                    break
            if running.get(seq.rid) is not seq:
                continue
            seq.blocks.append(free_blocks.pop())
            slots = len(seq.blocks) * block
            if slots >= seq.final:
                seq.internal = slots - seq.final
                internal_sum += seq.internal
            else:
                heapq.heappush(block_heap, (step + block, seq.order_key, seq))

        # 2. admit waiting requests, first come first served, while they fit
        admitted = prefill = pairs = 0
        while queue:
            rid, p, o = queue[0]
            final = p + o
            if paged:
                blocks = -(-(p + 1) // block)
                if len(free_blocks) - blocks < keep_free:
                    break
                seq = _Seq(rid, p, final, step, order_key)
                seq.blocks = [free_blocks.pop() for _ in range(blocks)]
                slots = blocks * block
                if slots >= final:
                    seq.internal = slots - final
                    internal_sum += seq.internal
                else:
                    heapq.heappush(block_heap, (step + slots - p, order_key, seq))
            else:
                want = reservation(allocator, p, o, max_len)
                got = buddy.alloc(want)
                if got is None:
                    break
                seq = _Seq(rid, p, final, step, order_key)
                seq.reserve, (seq.address, seq.order) = want, got
                reserve_sum += want
                chunk_sum += 1 << seq.order
            queue.popleft()
            running[rid] = seq
            heapq.heappush(finish_heap, (step + o - 1, order_key, seq))
            order_key += 1
            n_run += 1
            k_sum += p + 1 - step
            final_sum += final
            admitted += 1
            prefill += p
            pairs += p * (p + 1) // 2
            last_admit = step

        # 3. account for the memory after this step's writes
        tokens = k_sum + n_run * step
        decode = n_run - admitted
        context = tokens - decode - prefill - admitted
        if paged:
            allocated = (n_blocks - len(free_blocks)) * block
            cats = (tokens, allocated - internal_sum - tokens, internal_sum,
                    capacity - n_blocks * block, len(free_blocks) * block)
        else:
            spare = capacity - chunk_sum
            stranded = spare if queue else 0
            cats = (tokens, final_sum - tokens, reserve_sum - final_sum,
                    chunk_sum - reserve_sum + stranded, spare - stranded)
        rows.append((step, n_run, len(queue), admitted, *cats, prefill, context,
                     context + decode + pairs))
        if check:
            _check(allocator, running, step, buddy, free_blocks, n_blocks, block, capacity,
                   cats, bool(queue))
        if step == snapshot_step:
            layout = _layout(allocator, running, step, capacity, n_blocks, block, bool(queue))

        # 4. finished sequences return their memory
        while finish_heap and finish_heap[0][0] == step:
            seq = heapq.heappop(finish_heap)[2]
            if running.get(seq.rid) is not seq:
                continue
            held = len(seq.blocks) * block if paged else seq.reserve
            finishes.append((seq.rid, step, seq.stored(step), seq.final, held))
            remove(seq)
            finished += 1
            if first_finish is None:
                first_finish = step
        step += 1

    if check:
        returned = len(free_blocks) == n_blocks if paged else buddy.free_tokens == capacity
        if not returned or running:
            raise AssertionError("memory was not all returned when every request finished")
    timeline = pd.DataFrame(rows, columns=list(TIMELINE_COLUMNS))
    window = (first_finish, last_admit) if last_admit >= first_finish else \
        (0, int(timeline["step"].iloc[-1]))
    return Result(allocator=allocator, capacity_tokens=capacity, block_size=block,
                  max_len=max_len, n_requests=n, timeline=timeline,
                  finishes=pd.DataFrame(finishes, columns=["request", "step", "stored",
                                                           "final_length", "held"]),
                  preemptions=preemptions, recomputed_tokens=recomputed, window=window,
                  layout=layout)


def _layout(allocator, running, step, capacity, n_blocks, block, waiting) -> dict:
    """Every token slot's category and owner at one step."""
    paged = allocator == "paged"
    idle = _CODE["external"] if (waiting and not paged) else _CODE["free"]
    category = np.full(capacity, idle, dtype=np.int8)
    owner = np.full(capacity, -1, dtype=np.int64)
    if paged:
        category[n_blocks * block:] = _CODE["external"]
    for seq in running.values():
        stored = seq.stored(step)
        if paged:
            for j, b in enumerate(seq.blocks):
                pos = np.arange(j * block, (j + 1) * block)
                slots = slice(b * block, (b + 1) * block)
                if (owner[slots] != -1).any():
                    raise AssertionError(f"block {b} is owned twice")
                owner[slots] = seq.rid
                category[slots] = np.where(pos < stored, _CODE["token"], np.where(
                    pos < seq.final, _CODE["reserved"], _CODE["internal"]))
        else:
            base, size = seq.address, 1 << seq.order
            if (owner[base:base + size] != -1).any():
                raise AssertionError(f"chunk at {base} overlaps another")
            owner[base:base + size] = seq.rid
            category[base:base + size] = _CODE["external"]
            category[base:base + seq.reserve] = _CODE["internal"]
            category[base:base + seq.final] = _CODE["reserved"]
            category[base:base + stored] = _CODE["token"]
    return {"step": step, "category": category, "owner": owner}


def _check(allocator, running, step, buddy, free_blocks, n_blocks, block, capacity, cats,
           waiting) -> None:
    """The allocator's invariants, verified from scratch (tests run this every step)."""
    paged = allocator == "paged"
    if sum(cats) != capacity or min(cats) < 0:
        raise AssertionError(f"step {step}: categories {cats} do not partition {capacity}")
    layout = _layout(allocator, running, step, capacity, n_blocks, block, waiting)
    category, owner = layout["category"], layout["owner"]
    for code, name in enumerate(CATEGORIES):
        if int((category == code).sum()) != cats[code]:
            raise AssertionError(f"step {step}: {name} slots differ from the running total")
    for seq in running.values():
        stored = seq.stored(step)
        mine = int(((owner == seq.rid) & (category == _CODE["token"])).sum())
        if mine != stored or stored > seq.final:
            raise AssertionError(f"step {step}: request {seq.rid} stores {mine} of {stored}")
        if paged and len(seq.blocks) != -(-stored // block):
            raise AssertionError(f"step {step}: request {seq.rid} holds blocks it does not need")
    if paged:
        owned = [b for seq in running.values() for b in seq.blocks]
        if len(set(owned)) != len(owned) or set(owned) & set(free_blocks) or \
                len(owned) + len(free_blocks) != n_blocks:
            raise AssertionError(f"step {step}: a block is owned twice or lost")
    else:
        seen = np.zeros(capacity, dtype=bool)
        for address, order in buddy.free_chunks():
            if seen[address:address + (1 << order)].any() or \
                    (owner[address:address + (1 << order)] != -1).any():
                raise AssertionError(f"step {step}: free chunk {address} overlaps")
            seen[address:address + (1 << order)] = True
        if int(seen.sum()) + int((owner != -1).sum()) != capacity:
            raise AssertionError(f"step {step}: chunks and free memory do not cover capacity")


# -- from memory to tokens per second ---------------------------------------------------------

@dataclass(frozen=True, eq=False)
class Deployment:
    """A model on a chip: its weights, what the KV cache may use, and the chip's roof for the
    arithmetic its weights run in."""

    name: str
    chip: str
    config: dict
    n_params: float
    weight_bytes: float
    kv_memory_bytes: float
    flops_per_s: float
    bandwidth_bytes_per_s: float
    kv_dtype_bytes: float = 2
    flops_kind: str = "FP16, dense tensor"

    @property
    def kv_bytes_per_token(self) -> int:
        return kvcache.kv_bytes_per_token(self.config, self.kv_dtype_bytes)

    @property
    def capacity_tokens(self) -> int:
        """Token slots of KV memory."""
        return int(self.kv_memory_bytes // self.kv_bytes_per_token)

    @property
    def model(self) -> roofline.Model:
        """The deployment as the roofline module's model: its parameters, weights and cache."""
        return roofline.Model(name=self.name, params=self.n_params, weight_bytes=self.weight_bytes,
                              config=self.config, kv_dtype_bytes=self.kv_dtype_bytes)

    @property
    def roof(self) -> roofline.Roof:
        return roofline.Roof(name=self.chip, flops_per_s=self.flops_per_s,
                             bandwidth_bytes_per_s=self.bandwidth_bytes_per_s,
                             flops_kind=self.flops_kind)


def model_config(model: str) -> dict:
    """A Hugging Face-style config for a model in ``data/serving_models.csv``."""
    r = tables.row("serving_models", "model", model)
    return {"num_hidden_layers": int(r["layers"]), "hidden_size": int(r["hidden_size"]),
            "num_attention_heads": int(r["attention_heads"]),
            "num_key_value_heads": int(r["kv_heads"]), "head_dim": int(r["head_dim"]),
            "n_params": float(r["total_params_B"]) * 1e9,
            "max_context_tokens": int(r["max_context_tokens"])}


def paper_deployment(chip: str = "A100 SXM") -> Deployment:
    """OPT-13B with the KV memory of the paper's Table 1 (13B on one A100).

    The table prints 12 "GB" for the KV cache and 15.7K slots; only binary GB give that
    slot count at 800 KiB per token, so the memory is 12 GiB. Its 26 "GB" of parameters are
    decimal: 13 billion FP16 weights are 26e9 bytes (26 GiB would be 14 billion). The paper's
    A100 has 40 GiB; ``data/`` holds the 80 GiB SXM part's FLOP/s and bandwidth, which set
    only the step time: the KV memory is the paper's either way. The weights are FP16, so
    the roof is FP16's.
    """
    cfg = model_config("OPT-13B")
    roof = roofline.chip_roof(chip, "fp16")
    return Deployment(name="OPT-13B, paper's Table 1", chip=chip, config=cfg,
                      n_params=cfg["n_params"],
                      weight_bytes=paper_claim("table1_13b_parameter_size") * GB,
                      kv_memory_bytes=paper_claim("table1_13b_kv_memory") * GiB,
                      flops_per_s=roof.flops_per_s, bandwidth_bytes_per_s=roof.bandwidth_bytes_per_s,
                      flops_kind=roof.flops_kind)


def paper_overhead_share() -> float:
    """Share of GPU memory that is neither weights nor KV in the paper's Table 1 (13B):
    activations and the runtime's own buffers."""
    total = paper_claim("table1_13b_gpu_memory")
    return (total - paper_claim("table1_13b_parameter_size")
            - paper_claim("table1_13b_kv_memory")) / total


def h100_deployment(weight_format: str = "FP8", model: str = "Llama-3.3-70B",
                    chip: str = "H100 SXM", overhead_share: float | None = None,
                    kv_dtype_bytes: float = 2) -> Deployment:
    """A model on one GPU: KV memory = capacity x (1 - overhead) - weights, the capacity
    binary (an "80 GB" H100 holds 80 GiB). The roof is the one the weights run on (FP8 weights
    on FP8 tensor cores, as a serving stack runs them).

    The overhead share defaults to the paper's own accounting (:func:`paper_overhead_share`).
    """
    cfg = model_config(model)
    roof = roofline.chip_roof(chip, roofline.arithmetic_for(weight_format, "serving"))
    if roof.capacity_bytes is None:
        raise ValueError(f"{chip} has no memory capacity in hardware_specs.csv")
    share = paper_overhead_share() if overhead_share is None else \
        require_positive("overhead_share", overhead_share, allow_zero=True)
    weights = models.weight_bytes(cfg["n_params"], weight_format)
    kv_memory = roof.capacity_bytes * (1 - share) - weights
    if kv_memory <= 0:
        raise ValueError(f"{model} at {weight_format} ({weights / GiB:.1f} GiB of weights) "
                         f"leaves no room for a KV cache on {chip} "
                         f"({roof.capacity_bytes / GiB:.0f} GiB)")
    return Deployment(name=f"{model}, {weight_format} weights, {chip}", chip=chip, config=cfg,
                      n_params=cfg["n_params"], weight_bytes=weights, kv_memory_bytes=kv_memory,
                      flops_per_s=roof.flops_per_s,
                      bandwidth_bytes_per_s=roof.bandwidth_bytes_per_s,
                      kv_dtype_bytes=kv_dtype_bytes, flops_kind=roof.flops_kind)


def step_seconds(d: Deployment, new_tokens, context_tokens, attended_pairs) -> np.ndarray:
    """Seconds for one forward pass: the slower of its FLOPs and its bytes (a roofline).

    FLOPs: two per parameter per token processed (prompt tokens and one decode token per
    sequence) plus attention's four per layer, head dimension and (query, key) pair. Bytes:
    every weight once, plus the KV cache of every decoding sequence. The arithmetic is the
    book's one roofline of a step, :func:`napkin.roofline.step_seconds`.
    """
    return roofline.step_seconds(d.model, d.roof, new_tokens, context_tokens, attended_pairs)


def timed(result: Result, d: Deployment) -> pd.DataFrame:
    """The timeline with each step's duration and the clock (seconds since the start)."""
    tl = result.timeline
    decode = tl["running"] - tl["admitted"]
    secs = step_seconds(d, decode + tl["prefill_tokens"], tl["context_tokens"],
                        tl["attended_pairs"])
    return tl.assign(step_s=secs, time_s=np.cumsum(secs) - secs)


def throughput(result: Result, d: Deployment) -> float:
    """Tokens generated per second while the engine is full (the result's window)."""
    tl = timed(result, d)
    lo, hi = result.window
    w = tl[(tl["step"] >= lo) & (tl["step"] <= hi)]
    # every running sequence produces one token per step (a new one its first)
    return float(w["running"].sum() / w["step_s"].sum())


# -- the experiments the chapter runs ---------------------------------------------------------

def run(d: Deployment, wl: Workload, allocator: str, *, n_requests: int = DEFAULT_REQUESTS,
        max_len: int | None = None, block_size: int = DEFAULT_BLOCK_SIZE, seed: int = SEED,
        snapshot: bool = False) -> Result:
    """One allocator on a deployment and workload (``max_len``: the model's context limit)."""
    max_len = d.config["max_context_tokens"] if max_len is None else max_len
    reqs = sample_requests(wl, n_requests, max_len, seed)
    res = simulate(reqs, allocator, d.capacity_tokens, max_len, block_size=block_size)
    if snapshot:  # replay to the middle of the window and record the layout there
        mid = (res.window[0] + res.window[1]) // 2
        res = simulate(reqs, allocator, d.capacity_tokens, max_len, block_size=block_size,
                       snapshot_step=mid)
    return res


def compare(d: Deployment, wl: Workload, *, n_requests: int = DEFAULT_REQUESTS,
            max_len: int | None = None, block_size: int = DEFAULT_BLOCK_SIZE,
            seed: int = SEED, snapshot: bool = False) -> tuple[pd.DataFrame, dict]:
    """Every allocator on the same requests: a summary row each, and the results."""
    results = {a: run(d, wl, a, n_requests=n_requests, max_len=max_len, block_size=block_size,
                      seed=seed, snapshot=snapshot) for a in ALLOCATORS}
    rows = []
    for a, res in results.items():
        rows.append({"allocator": a, "label": res.label, **res.shares(),
                     "mean_batch": res.mean_batch, "tokens_per_s": throughput(res, d),
                     "preemptions": res.preemptions, "recomputed_tokens": res.recomputed_tokens,
                     "requests": res.n_requests})
    df = pd.DataFrame(rows)
    paged = df.set_index("allocator").loc["paged"]
    df["batch_gain"] = paged["mean_batch"] / df["mean_batch"]
    df["throughput_gain"] = paged["tokens_per_s"] / df["tokens_per_s"]
    return df, results


def paper_reproduction(n_requests: int = DEFAULT_REQUESTS, seed: int = SEED) -> pd.DataFrame:
    """The paper's setting (OPT-13B, 12 GiB of KV memory, ShareGPT, 2,048 tokens) with the
    paper's Fig. 2 and Fig. 13 beside each allocator's simulated figures."""
    return _paper_run(n_requests, seed)[0].copy()


def paper_results(n_requests: int = DEFAULT_REQUESTS, seed: int = SEED) -> dict[str, Result]:
    """The runs behind :func:`paper_reproduction`, each with a snapshot of its memory."""
    return dict(_paper_run(n_requests, seed)[1])


@lru_cache(maxsize=None)
def _paper_run(n_requests: int, seed: int) -> tuple[pd.DataFrame, dict]:
    d = paper_deployment()
    df, results = compare(d, workload("ShareGPT"), n_requests=n_requests, seed=seed,
                          max_len=int(paper_claim("orca_max_reservation")), snapshot=True)
    df["paper_token_share"] = [paper_claim(f"fig2_{PAPER_SYSTEMS[a]}_token_states") / 100
                               for a in df["allocator"]]
    df["paper_batch"] = [paper_claim(f"fig13_sharegpt_{PAPER_SYSTEMS[a]}")
                         for a in df["allocator"]]
    return df, results


def block_size_sweep(d: Deployment, workloads: list[Workload], block_sizes: list[int], *,
                     n_requests: int = DEFAULT_REQUESTS, max_len: int | None = None,
                     seed: int = SEED) -> pd.DataFrame:
    """Paged memory shares, batch and throughput for each block size and workload."""
    rows = []
    for wl in workloads:
        for b in block_sizes:
            res = run(d, wl, "paged", n_requests=n_requests, max_len=max_len, block_size=b,
                      seed=seed)
            rows.append({"workload": wl.name, "block_size": b, **res.shares(),
                         "waste": 1 - res.utilisation, "mean_batch": res.mean_batch,
                         "tokens_per_s": throughput(res, d), "preemptions": res.preemptions})
    return pd.DataFrame(rows)


def spread_sweep(d: Deployment, name: str, sigmas: list[float], *,
                 n_requests: int = DEFAULT_REQUESTS, max_len: int | None = None,
                 seed: int = SEED) -> pd.DataFrame:
    """Each allocator's utilisation and batch as the request lengths spread out."""
    rows = []
    for sigma in sigmas:
        wl = workload(name, sigma)
        df, results = compare(d, wl, n_requests=n_requests, max_len=max_len, seed=seed)
        reqs = sample_requests(wl, n_requests,
                               d.config["max_context_tokens"] if max_len is None else max_len,
                               seed)
        df["sigma"] = sigma
        df["mean_input_tokens"] = float(reqs.prompt.mean())
        df["mean_output_tokens"] = float(reqs.output.mean())
        rows.append(df)
    return pd.concat(rows, ignore_index=True)


def spread_against_paper(spread: pd.DataFrame) -> pd.DataFrame:
    """How the paper's figures constrain the spread: for each sigma of a :func:`spread_sweep`
    on the paper's setting, the largest gap between a simulated token share and Fig. 2's (in
    percentage points), between a simulated batch and Fig. 13's (relative), and paging's
    batch and throughput gains over Orca (Oracle) and Orca (Max), the chapter's headline."""
    paper_share = {a: paper_claim(f"fig2_{PAPER_SYSTEMS[a]}_token_states") / 100
                   for a in ALLOCATORS}
    paper_batch = {a: paper_claim(f"fig13_sharegpt_{PAPER_SYSTEMS[a]}") for a in ALLOCATORS}
    rows = []
    for sigma, g in spread.groupby("sigma", sort=True):
        by = g.set_index("allocator")
        rows.append({
            "sigma": sigma,
            "share_gap_points": 100 * max(abs(by.loc[a, "token"] - paper_share[a])
                                          for a in ALLOCATORS),
            "batch_gap": max(abs(by.loc[a, "mean_batch"] / paper_batch[a] - 1)
                             for a in ALLOCATORS),
            "batch_gain_oracle": by.loc["oracle", "batch_gain"],
            "batch_gain_max": by.loc["max", "batch_gain"],
            "throughput_gain_oracle": by.loc["oracle", "throughput_gain"],
            "throughput_gain_max": by.loc["max", "throughput_gain"]})
    return pd.DataFrame(rows)


def max_len_sweep(d: Deployment, wl: Workload, max_lens: list[int], *,
                  n_requests: int = DEFAULT_REQUESTS, seed: int = SEED) -> pd.DataFrame:
    """Each allocator at several maximum sequence lengths (the reservation Max must make)."""
    rows = []
    for m in max_lens:
        df, _ = compare(d, wl, n_requests=n_requests, max_len=m, seed=seed)
        rows.append(df.assign(max_len=m))
    return pd.concat(rows, ignore_index=True)


def strips(results: dict[str, Result]) -> pd.DataFrame:
    """Each snapshot as runs of adjacent slots with one category and owner (for drawing)."""
    rows = []
    for a, res in results.items():
        if res.layout is None:
            raise ValueError(f"{a}: run with snapshot=True to draw its memory")
        cat, owner = res.layout["category"], res.layout["owner"]
        edges = np.flatnonzero((np.diff(cat) != 0) | (np.diff(owner) != 0)) + 1
        starts = np.concatenate([[0], edges])
        ends = np.concatenate([edges, [len(cat)]])
        for s, e in zip(starts, ends):
            rows.append({"allocator": a, "label": LABELS[a], "start": int(s), "end": int(e),
                         "tokens": int(e - s), "category": CATEGORY_LABELS[CATEGORIES[cat[s]]],
                         "request": int(owner[s]), "step": res.layout["step"]})
    return pd.DataFrame(rows)
