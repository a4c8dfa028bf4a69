"""One step of a serving engine: its work, and what it costs on a real server.

A step is one forward pass over whatever the scheduler put in it: prompt tokens being
prefilled and one (or, when verifying a draft, ``k``) new tokens for each sequence being
decoded. Its work:

- **bytes**: the weights it reads (all of a dense model's; for a mixture of experts the
  dense part plus the experts its tokens chose, :func:`napkin.predict.experts.expected_distinct`)
  plus every cached element its queries attend to;
- **FLOPs**: ``2 x active parameters`` per token plus attention, ``2 g e`` per
  (query, key) pair (quadratic in a prompt's length, chapter 7's pairs).

Its time is the calibrated roofline

    t = max(bytes / (eta_bw B), F_mm / (eta_c n / (n + n_half) P_w) + F_att / (eta_c P_kv))
        + t_comm + t_0,

with ``B`` the engine's peak bandwidth, ``F_mm`` the matmuls' FLOPs against ``P_w``, the peak
of the weights' arithmetic, and ``F_att`` attention's against ``P_kv``, the peak of the
cache's (FP8 attention on an FP8 cache, 16-bit otherwise: no engine runs attention in FP4).
``n`` is the tokens in the step: a matmul of few rows leaves the tensor cores idle, an
attention kernel spreads over the cached keys instead, so only the matmuls ramp; and
``t_comm`` the all-reduces of tensor parallelism (two per layer, each a fixed latency plus a
ring's ``2 (tp - 1) / tp`` share of the activations over the link) or, for a mixture of
experts served with data-parallel attention, the all-to-all of expert parallelism
(:func:`alltoall_seconds`). With :data:`~napkin.predict.calibration.ROOFLINE` it is chapter
3's roofline exactly.

**Wide expert parallelism.** An engine of ``dp`` attention ranks reads the dense weights
once per rank and each chosen expert once (it lives on one chip); a rank's fixed costs per
layer run beside the others', and its per-sequence costs cover only its own sequences.
**Multi-token prediction.** A step of an engine that drafts runs ``verify_tokens`` tokens
per sequence and keeps ``accepted_tokens`` of them (:mod:`napkin.predict.multitoken`); the
drafting passes are costed by :func:`napkin.predict.serve.draft_seconds` in the serving
scenarios that decode continuously.

Every function works on numpy arrays (one element per step, broadcast against
:class:`~napkin.predict.engines.Constants`), so thousands of published rows cost one pass.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from ..roofline import attention_pairs
from .calibration import Calibration
from .engines import Constants, Engine, engine_of
from .experts import expected_distinct

__all__ = ["compute_bound_batch", "cost", "Cost", "decode_steps_seconds", "decode_work",
           "prefill_work", "seconds", "step_seconds", "weights_read_bytes", "Work"]


@dataclass(frozen=True)
class Work:
    """What a step does: tokens run through the model, cache bytes read, and FLOPs, those of
    the weight matmuls (in the weights' arithmetic) and those of attention (in the cache's).
    Additive: a step that prefills and decodes is the sum of the two (its weights are read
    once)."""

    tokens: np.ndarray
    kv_bytes: np.ndarray
    linear_flops: np.ndarray
    attention_flops: np.ndarray
    sequences: np.ndarray = 0.0

    @property
    def flops(self):
        return self.linear_flops + self.attention_flops

    def __add__(self, other: "Work") -> "Work":
        return Work(self.tokens + other.tokens, self.kv_bytes + other.kv_bytes,
                    self.linear_flops + other.linear_flops,
                    self.attention_flops + other.attention_flops,
                    self.sequences + other.sequences)


def _pairs(start, n, window):
    """(query, key) pairs of ``n`` queries after ``start`` cached tokens, each seeing at most
    ``window`` keys; ``window`` may be an array holding inf for none."""
    full = attention_pairs(start, n)
    w = np.asarray(window, dtype=float)
    if np.all(np.isinf(w)):
        return full, np.zeros_like(full)
    s = np.asarray(start, dtype=float)
    k = np.asarray(n, dtype=float)
    wf = np.where(np.isinf(w), 1.0, w)

    def upto(m):  # sum over p = 1..m of min(p, w)
        return np.where(m <= wf, m * (m + 1) / 2, wf * (wf + 1) / 2 + (m - wf) * wf)

    return full, np.where(np.isinf(w), full, upto(s + k) - upto(s))


def decode_work(c: Constants, batch, depth, new_tokens=None) -> Work:
    """``batch`` sequences with ``depth`` tokens cached each add ``new_tokens`` tokens (one
    for plain decoding, ``k`` when a draft of ``k`` is verified; by default the engine's own,
    ``c.verify_tokens``: one unless it serves with multi-token prediction)."""
    if new_tokens is None:
        new_tokens = c.verify_tokens
    b = np.asarray(batch, dtype=float)
    d = np.asarray(depth, dtype=float)
    full, windowed = _pairs(d, new_tokens, c.window)
    kv = b * (c.kv_bytes_full * d + c.kv_bytes_window * np.minimum(d, c.window))
    tokens = b * np.asarray(new_tokens, dtype=float) + 0 * c.tp  # one per engine at least
    attention = b * (c.flops_per_pair_full * full + c.flops_per_pair_window * windowed)
    return Work(tokens, kv, c.flops_per_token * tokens, attention, b + 0 * tokens)


def prefill_work(c: Constants, prompts, length, start=0) -> Work:
    """``prompts`` prompts of ``length`` tokens each, after ``start`` already cached."""
    p = np.asarray(prompts, dtype=float)
    s = np.asarray(start, dtype=float)
    full, windowed = _pairs(s, length, c.window)
    kv = p * (c.kv_bytes_full * s + c.kv_bytes_window * np.minimum(s, c.window))
    tokens = p * np.asarray(length, dtype=float) + 0 * c.tp
    attention = p * (c.flops_per_pair_full * full + c.flops_per_pair_window * windowed)
    return Work(tokens, kv, c.flops_per_token * tokens, attention, p + 0 * tokens)


def weights_read_bytes(c: Constants, tokens):
    """Weights a step of ``tokens`` tokens reads: the dense part (once per data-parallel
    attention rank, each reading its own copy), and each expert some token chose (all of
    them for a dense model, which has no routed experts)."""
    return c.dp * c.dense_weight_bytes + c.expert_bytes * expected_distinct(c.routed, c.top_k,
                                                                          tokens)


@dataclass(frozen=True)
class Cost:
    """A step's time and its parts (arrays): the weight matmuls' reads and arithmetic, the
    cache's reads and attention's arithmetic, communication and fixed costs.

    ``per_operator``: the matmuls and attention run as separate kernels, each bound by its
    own roof, so the step takes the sum of the two operators' slower sides; otherwise (the
    plain roofline of chapter 3) the step takes the slower of all its bytes and all its
    FLOPs."""

    weights_memory_s: np.ndarray
    matmul_s: np.ndarray
    cache_memory_s: np.ndarray
    attention_s: np.ndarray
    comm_s: np.ndarray
    overhead_s: np.ndarray
    per_operator: bool = False

    @property
    def memory_s(self):
        return self.weights_memory_s + self.cache_memory_s

    @property
    def compute_s(self):
        return self.matmul_s + self.attention_s

    @property
    def roof_s(self):
        """The roofline's part of the step: what the chip's peaks (as reached) allow."""
        if self.per_operator:
            return (np.maximum(self.weights_memory_s, self.matmul_s) +
                    np.maximum(self.cache_memory_s, self.attention_s))
        return np.maximum(self.memory_s, self.compute_s)

    @property
    def seconds(self):
        return self.roof_s + self.comm_s + self.overhead_s

    @property
    def bound(self):
        """Which roof binds each step, ``"memory"`` or ``"compute"``: the weight matmuls'
        when operators are costed apart (the question batching answers), else the step's."""
        if self.per_operator:
            return np.where(self.weights_memory_s >= self.matmul_s, "memory", "compute")
        return np.where(self.memory_s >= self.compute_s, "memory", "compute")

    def blend(self, other: "Cost", share) -> "Cost":
        """The parts of ``share`` of ``other`` and ``1 - share`` of this step (the mean parts
        of a mix of two kinds of step; its ``seconds`` is not the mix's mean time)."""
        mix = {f: (1 - share) * getattr(self, f) + share * getattr(other, f)
               for f in ("weights_memory_s", "matmul_s", "cache_memory_s", "attention_s",
                         "comm_s", "overhead_s")}
        return Cost(**mix, per_operator=self.per_operator)


def alltoall_seconds(c: Constants, tokens, cal: Calibration):
    """Expert parallelism's traffic in a step of ``tokens`` tokens over ``dp`` chips: in each
    MoE layer every chip sends each of its tokens to the chips of its ``top_k`` experts and
    takes the results back (two collectives, each with the all-reduce's fixed latency), the
    share ``(dp - 1) / dp`` of it leaving the chip; 0 where ``dp`` is 1."""
    per_chip = np.asarray(tokens, dtype=float) / c.dp
    leaving = per_chip * c.top_k * c.dispatch_bytes_per_token * (c.dp - 1) / c.dp
    with np.errstate(invalid="ignore"):
        layer = 2 * cal.allreduce_latency_s + leaving / (cal.link_efficiency *
                                                         c.alltoall_bytes_per_s)
    return np.where(c.dp > 1, c.moe_layers * layer, 0.0)


def _ramp(tokens, half_tokens):
    """Share of a matmul's peak reached by a product of ``tokens`` rows."""
    return tokens / (tokens + half_tokens)


def cost(c: Constants, work: Work, cal: Calibration) -> Cost:
    """The calibrated roofline of ``work`` on the engines of ``c`` (module docstring)."""
    n = np.maximum(work.tokens, 1e-9)
    bandwidth = np.minimum(cal.bandwidth_efficiency * c.stack_efficiency, 1.0) * \
        c.bandwidth_bytes_per_s
    compute = np.minimum(cal.compute_efficiency * c.stack_efficiency, 1.0)
    routed = c.routed_flops_per_token * n if cal.expert_ramp else 0.0
    rows_per_expert = n * c.expert_share
    matmul = ((work.linear_flops - routed) / _ramp(n, cal.half_tokens) +
              routed / _ramp(np.maximum(rows_per_expert, 1e-9), cal.half_tokens)) / (
        compute * c.flops_per_s)
    attention = work.attention_flops / (compute * c.attention_flops_per_s)
    comm = np.zeros_like(matmul)
    if cal.communication:
        ring = 2 * (c.tp - 1) / c.tp * n * c.allreduce_bytes_per_token / (
            cal.link_efficiency * c.link_bytes_per_s)
        comm = np.where(c.tp > 1, c.allreduces / c.pp * (cal.allreduce_latency_s + ring), 0.0)
        comm = comm + alltoall_seconds(c, n, cal)
    overhead = (cal.step_overhead_s + (cal.layer_overhead_s * c.layers + cal.moe_layer_overhead_s
                                       * c.moe_layers) * c.stack_overhead +
                cal.sequence_overhead_s * work.sequences / c.dp + 0 * matmul)
    return Cost(weights_memory_s=weights_read_bytes(c, n) / bandwidth, matmul_s=matmul,
                cache_memory_s=work.kv_bytes / bandwidth + 0 * matmul, attention_s=attention,
                comm_s=comm, overhead_s=overhead, per_operator=cal.per_operator)


def seconds(c: Constants, work: Work, cal: Calibration):
    return cost(c, work, cal).seconds


def decode_steps_seconds(c: Constants, batch, first_depth, steps, cal: Calibration,
                         segments: int = 16, new_tokens=None):
    """Total time of ``steps`` decode steps of ``batch`` sequences, the first at
    ``first_depth`` cached tokens, each one deeper, each adding ``new_tokens`` per sequence
    (:func:`decode_work`). A step's time is piecewise linear in the depth (the larger of two
    lines, with a kink where a window fills), so the sum is taken segment by segment at each
    segment's middle: exact on every segment without a kink."""
    b = np.asarray(batch, dtype=float)
    d0 = np.asarray(first_depth, dtype=float)
    m = np.asarray(steps, dtype=float)
    total = np.zeros(np.broadcast(b, d0, m, c.tp).shape)
    edges = np.linspace(0.0, 1.0, segments + 1)
    for lo, hi in zip(edges[:-1], edges[1:]):
        start, stop = np.floor(lo * m), np.floor(hi * m)
        count = stop - start
        middle = d0 + (start + stop - 1) / 2
        total = total + np.where(count > 0, count * seconds(
            c, decode_work(c, b, np.maximum(middle, 0), new_tokens), cal), 0.0)
    return total


def _constants_of(target) -> Constants:
    if isinstance(target, Constants):
        return target
    if isinstance(target, Engine):
        return target.constants
    return engine_of(target).constants


def step_seconds(deployment, batch: int, context_tokens: int, new_tokens_per_sequence: int = 1,
                 calibration: Calibration | None = None) -> float:
    """Seconds of one decode (or draft-verify) step: ``batch`` sequences with
    ``context_tokens`` cached each add ``new_tokens_per_sequence`` tokens.

    ``deployment`` is a :class:`~napkin.predict.engines.Engine` or a
    :class:`~napkin.deployment.Deployment` (its chips then share every layer);
    ``calibration`` defaults to the fitted one (:func:`~napkin.predict.calibration.calibrated`),
    :data:`~napkin.predict.calibration.ROOFLINE` gives the plain roofline.
    """
    from .calibration import calibrated

    for name, value, low in (("batch", batch, 1), ("context_tokens", context_tokens, 0),
                             ("new_tokens_per_sequence", new_tokens_per_sequence, 1)):
        if isinstance(value, bool) or not isinstance(value, (int, np.integer)) or value < low:
            raise ValueError(f"{name} must be a whole number >= {low}, got {value!r}")
    c = _constants_of(deployment)
    cal = calibrated() if calibration is None else calibration
    work = decode_work(c, batch, context_tokens, new_tokens_per_sequence)
    return float(seconds(c, work, cal)[0])


def compute_bound_batch(deployment, context_tokens: int = 0,
                        calibration: Calibration | None = None, limit: int = 1 << 20) -> int:
    """The smallest batch whose decode step at ``context_tokens`` the model calls
    compute-bound (:attr:`Cost.bound`), by bisection: the model's own crossover, with every
    part of its calibration in it. ``limit`` + 1 when no batch up to ``limit`` is (a
    cache read per sequence can keep a step memory-bound at any batch)."""
    from .calibration import calibrated

    c = _constants_of(deployment)
    cal = calibrated() if calibration is None else calibration

    def compute_bound(b: int) -> bool:
        return str(cost(c, decode_work(c, b, context_tokens), cal).bound[0]) == "compute"

    if not compute_bound(limit):
        return limit + 1
    low, high = 0, limit  # compute_bound(high) holds; low is memory-bound (or 0)
    while high - low > 1:
        mid = (low + high) // 2
        low, high = (low, mid) if compute_bound(mid) else (mid, high)
    return high
