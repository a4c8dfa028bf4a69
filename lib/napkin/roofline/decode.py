"""A decode step on a roof: the batch that reaches the ridge, and the memory that stops it.

What the essay leaves out, and :func:`decode_step` puts back: every sequence in
a decode batch also reads its *own* KV cache, which no other sequence shares.
Batching amortises the weights, not the cache, so the intensity of a whole
decode step tends, as the batch grows, to that of attention alone (the ratio of
query heads to KV heads, at FP16), far below any GPU's ridge point. Chapter 3.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Iterable

import pandas as pd

from ..kvcache import max_context_tokens, sequences_that_fit
from ..units import require_positive
from .model import Model, _count
from .roof import Roof, bound


@dataclass(frozen=True)
class Step:
    """One decode step of ``batch`` sequences, each with ``context_tokens`` in its cache."""

    batch: int
    context_tokens: int
    flops: float
    weight_bytes: float
    kv_bytes: float
    seconds: float
    ridge: float

    @property
    def bytes(self) -> float:
        return self.weight_bytes + self.kv_bytes

    @property
    def intensity(self) -> float:
        return self.flops / self.bytes

    @property
    def tokens_per_s(self) -> float:
        return self.batch / self.seconds

    @property
    def bound(self) -> str:
        return bound(self.intensity, self.ridge)


def _batch(batch) -> int:
    if isinstance(batch, bool) or not isinstance(batch, int) or batch < 1:
        raise ValueError(f"batch must be a whole number of sequences >= 1, got {batch!r}")
    return batch


def decode_step(model: Model, roof: Roof, batch: int, context_tokens: int = 0) -> Step:
    """The roofline time of one decode step: the slower of its FLOPs and its bytes.

    FLOPs: ``2 x params`` per sequence for the matmuls plus its attention; bytes: the
    weights once (shared by the batch) plus every sequence's own KV cache.
    """
    b = _batch(batch)
    flops = b * (2.0 * model.params + model.attention_flops(context_tokens))
    kv = float(model.kv_bytes(context_tokens, b))
    seconds = max(flops / roof.flops_per_s, (model.weight_bytes + kv) / roof.bandwidth_bytes_per_s)
    return Step(batch=b, context_tokens=context_tokens, flops=flops,
                weight_bytes=model.weight_bytes, kv_bytes=kv, seconds=seconds, ridge=roof.ridge)


def batch_to_ridge(model: Model, ridge: float, context_tokens: int = 0,
                   attention_ridge: float | None = None) -> float:
    """The batch at which a decode step turns compute-bound (``math.inf``: never).

    The step as a whole, FLOPs and bytes pooled: B sequences take B (2P / R + a / R_a) in
    units of one byte's read time against W + B m bytes, with 2P the weight matmuls' FLOPs and
    a the attention's of one sequence, m its cache bytes, W the weight bytes, R the ridge of
    the weights' arithmetic and R_a that of the attention's (the cache's number format; the
    same R unless given). So B = W / (2P / R + a / R_a - m) while that is positive; otherwise
    the cache reads outgrow the arithmetic however large the batch. With one roof this is
    the familiar B = R W / (f - R m), f = 2P + a.
    """
    r = require_positive("ridge", ridge)
    r_a = r if attention_ridge is None else require_positive("attention_ridge", attention_ridge)
    per_sequence = (2.0 * model.params / r + model.attention_flops(context_tokens) / r_a
                    - float(model.kv_bytes(context_tokens)))
    if per_sequence <= 0:
        return math.inf
    return model.weight_bytes / per_sequence


def context_limit(model: Model, ridge: float, attention_ridge: float | None = None) -> float:
    """Context length beyond which no batch reaches the ridge (``math.inf``: none).

    Needs a cache that grows linearly with context (no sliding windows): then the FLOPs are
    2P + a c and the cache k c, and the limit is c = (2P / R) / (k - a / R_a), with R_a the
    attention's ridge (``ridge`` unless given); with one roof, c = 2P / (R k - a).
    """
    r = require_positive("ridge", ridge)
    r_a = r if attention_ridge is None else require_positive("attention_ridge", attention_ridge)
    k = model.kv_bytes_per_token()
    probe = 1 << 20
    if model.kv_bytes(probe) != probe * k:
        raise ValueError(f"{model.name}: the cache does not grow linearly with context "
                         "(sliding windows); use batch_to_ridge at each context instead")
    a = 2.0 * model.query_groups * k / model.kv_dtype_bytes
    if k <= a / r_a:
        return math.inf
    return 2.0 * model.params / r / (k - a / r_a)


def max_batch(model: Model, roof: Roof, context_tokens: int) -> int:
    """Sequences at ``context_tokens`` whose caches fit beside the weights, by the rule of
    :func:`napkin.kvcache.sequences_that_fit`."""
    if roof.capacity_bytes is None:
        raise ValueError(f"{roof.name} has no memory capacity in hardware_specs.csv")
    return sequences_that_fit(roof.capacity_bytes - model.weight_bytes,
                              model.kv_bytes(context_tokens))


def _bisect(predicate, low: int, high: int) -> int:
    """The smallest integer in (low, high] where a monotone ``predicate`` holds, given it
    fails at ``low`` and holds at ``high``."""
    while high - low > 1:
        mid = (low + high) // 2
        low, high = (low, mid) if predicate(mid) else (mid, high)
    return high


def capacity_turn(model: Model, roof: Roof, attention_ridge: float | None = None,
                  max_context: int | None = None, need=None) -> dict:
    """Where memory, not the roofline, keeps decode memory-bound, computed exactly.

    With every sequence's cache read counted, the batch a decode step needs to reach the
    ridge, B*(c), grows with the context c and is infinite from ``never_beyond_tokens`` on;
    the batch that fits beside the weights, M(c) (:func:`max_batch`), shrinks. ``turn_tokens``
    is the shortest context at which M(c) < B*(c): from there on, no batch the memory holds is
    compute-bound (1 when even one-token sequences cannot fit enough of a batch; None when
    compute-bound batches fit at every context up to ``max_context``, by default the model's
    own limit, :func:`napkin.kvcache.max_context_tokens`). ``need``: another model's B*(c), a
    function of the context returning a batch (``math.inf`` for none), e.g. the calibrated
    step model's (:func:`napkin.capacity.calibrated_turn`); by default the roofline's.
    """
    limit = max_context_tokens(model.config) if max_context is None else _count("max_context",
                                                                       max_context, 1)
    if need is None:
        def need(c: int) -> float:
            return batch_to_ridge(model, roof.ridge, c, attention_ridge)

    def short(c: int) -> bool:
        return max_batch(model, roof, c) < need(c)

    def unreachable(c: int) -> bool:
        return math.isinf(need(c))

    # the cache only grows with context, so once no batch reaches the ridge none ever does
    never = None if not unreachable(limit) else \
        (1 if unreachable(1) else _bisect(unreachable, 1, limit))
    top = never or limit
    if short(1):
        turn = 1
    elif not short(top):
        turn = None
    else:
        turn = _bisect(short, 1, top)
    at = turn if turn is not None else top
    return {"never_beyond_tokens": never, "turn_tokens": turn,
            "fits_at_turn": max_batch(model, roof, at), "needed_at_turn": need(at)}


def batch_curve(model: Model, roof: Roof, batches: Iterable[int],
                contexts: Iterable[int]) -> pd.DataFrame:
    """Decode throughput and cost for every (batch, context): the batching chapter's table.

    ``chip_s_per_mtok`` is the cost: seconds of one chip per million tokens generated,
    which is a price once multiplied by what one chip-hour costs you.
    """
    rows = []
    for c in contexts:
        fits = max_batch(model, roof, c) if roof.capacity_bytes is not None else None
        for b in batches:
            s = decode_step(model, roof, b, c)
            rows.append({"batch": s.batch, "context_tokens": c, "flops": s.flops,
                         "weight_bytes": s.weight_bytes, "kv_bytes": s.kv_bytes,
                         "intensity": s.intensity, "step_s": s.seconds,
                         "tokens_per_s": s.tokens_per_s,
                         "chip_s_per_mtok": roof.n_chips * s.seconds / s.batch * 1e6,
                         "bound": s.bound, "fits_in_memory": fits is None or b <= fits})
    return pd.DataFrame(rows)


def chips_to_hold(model: Model, roof: Roof, kv_share: float = 0.5) -> int:
    """The smallest power-of-two number of chips whose memory holds the weights and leaves
    at least ``kv_share`` of the total for the KV cache."""
    share = require_positive("kv_share", kv_share)
    if share >= 1:
        raise ValueError(f"kv_share is a fraction of memory below 1, got {kv_share!r}")
    if roof.capacity_bytes is None:
        raise ValueError(f"{roof.name} has no memory capacity in hardware_specs.csv")
    n = 1
    while model.weight_bytes > (1 - share) * n * roof.capacity_bytes:
        n *= 2
    return n
