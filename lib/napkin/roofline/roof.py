"""The roofline: where a chip stops waiting on memory and starts waiting on arithmetic.

    attainable FLOP/s  =  min(peak FLOP/s,  intensity x bandwidth)
    ridge point        =  peak FLOP/s / bandwidth            (FLOP per byte)

A piece of work whose arithmetic intensity (FLOPs per byte moved from memory)
is below the chip's ridge point is memory-bound; above it, compute-bound.

For the weight matmuls of a transformer, each weight is read once per forward
pass and used once per token in that pass: ``2 x n_tokens`` FLOPs per weight
against ``bytes_per_weight`` bytes, so the intensity is ``2 n / bytes_per_weight``
(``n`` at FP16). Decode has ``n`` = batch size, prefill ``n`` = prompt length.

FLOP/s are always of one declared kind (dense or sparse, tensor or vector);
:class:`Roof` carries the kind with the number. Chapter 3 draws it.
"""

from __future__ import annotations

from dataclasses import dataclass, replace

from ..units import require_positive


def ridge_point(flops_per_s: float, bandwidth_bytes_per_s: float) -> float:
    """FLOP per byte at which a chip turns from memory-bound to compute-bound."""
    peak = require_positive("flops_per_s", flops_per_s)
    bw = require_positive("bandwidth_bytes_per_s", bandwidth_bytes_per_s)
    return peak / bw


def attainable_flops(intensity: float, flops_per_s: float, bandwidth_bytes_per_s: float) -> float:
    """The roofline itself: FLOP/s a kernel of this intensity can reach at best."""
    i = require_positive("intensity", intensity)
    peak = require_positive("flops_per_s", flops_per_s)
    bw = require_positive("bandwidth_bytes_per_s", bandwidth_bytes_per_s)
    return min(peak, i * bw)


def matmul_intensity(n_tokens: float, bytes_per_weight: float = 2.0) -> float:
    """FLOP per weight byte when every weight serves ``n_tokens`` tokens in one pass.

    ``2 n`` FLOPs (a multiply and an add per token) per ``bytes_per_weight`` bytes.
    Decode: ``n_tokens`` is the batch; prefill: the prompt length. At FP16, it is ``n``.
    """
    n = require_positive("n_tokens", n_tokens)
    b = require_positive("bytes_per_weight", bytes_per_weight)
    return 2 * n / b


def bound(intensity: float, ridge: float) -> str:
    """``"memory"`` below the ridge point, ``"compute"`` at or above it."""
    return "compute" if require_positive("intensity", intensity) >= \
        require_positive("ridge", ridge) else "memory"


@dataclass(frozen=True)
class Roof:
    """One machine's roof: peak FLOP/s of a stated kind, and memory bandwidth."""

    name: str
    flops_per_s: float
    bandwidth_bytes_per_s: float
    flops_kind: str
    capacity_bytes: float | None = None
    n_chips: int = 1

    def __post_init__(self):
        require_positive("flops_per_s", self.flops_per_s)
        require_positive("bandwidth_bytes_per_s", self.bandwidth_bytes_per_s)
        if self.capacity_bytes is not None:
            require_positive("capacity_bytes", self.capacity_bytes)
        if isinstance(self.n_chips, bool) or not isinstance(self.n_chips, int) or self.n_chips < 1:
            raise ValueError(f"n_chips must be a whole number >= 1, got {self.n_chips!r}")

    @property
    def ridge(self) -> float:
        return ridge_point(self.flops_per_s, self.bandwidth_bytes_per_s)

    def times(self, n_chips: int) -> "Roof":
        """``n_chips`` of these working as one (ideal tensor parallelism: FLOP/s, bandwidth
        and capacity all scale, so the ridge point does not move)."""
        if isinstance(n_chips, bool) or not isinstance(n_chips, int) or n_chips < 1:
            raise ValueError(f"n_chips must be a whole number >= 1, got {n_chips!r}")
        return replace(self, name=f"{n_chips} x {self.name}" if n_chips > 1 else self.name,
                       flops_per_s=self.flops_per_s * n_chips,
                       bandwidth_bytes_per_s=self.bandwidth_bytes_per_s * n_chips,
                       capacity_bytes=None if self.capacity_bytes is None
                       else self.capacity_bytes * n_chips,
                       n_chips=self.n_chips * n_chips)
