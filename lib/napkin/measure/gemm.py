"""Peak arithmetic, measured: the other half of this machine's roofline.

A large square float32 matrix product through numpy (its BLAS, on every core it
is allowed), best of several runs. It is reported as **dense FP32 FLOP/s**: what
this CPU's vector units deliver to a well-blocked floating-point matmul. It is a
yardstick, not llama.cpp's own ceiling: llama.cpp multiplies quantized weights
with integer dot products (Q8_0: 8-bit), which a CPU may run faster or slower
than float32, so the chapters compare the two instead of assuming either.
"""

from __future__ import annotations

import time
from dataclasses import asdict, dataclass

import numpy as np


@dataclass(frozen=True)
class GemmResult:
    """Best and worst rate of ``repeats`` products of two ``n x n`` float32 matrices."""

    best_flops_per_s: float
    worst_flops_per_s: float
    n: int
    repeats: int
    dtype: str = "float32"
    kind: str = "dense FP32 (numpy BLAS matmul)"

    @property
    def spread(self) -> float:
        return 1 - self.worst_flops_per_s / self.best_flops_per_s

    def to_dict(self) -> dict:
        return asdict(self) | {"spread": self.spread}


def peak_flops(n: int = 2048, repeats: int = 5, seed: int = 0) -> GemmResult:
    """Time ``repeats`` products ``A @ B`` (after one warm-up) and keep the fastest.

    ``2 n^3`` FLOPs per product: ``n^2`` outputs, each ``n`` multiply-adds.
    """
    if isinstance(n, bool) or not isinstance(n, int) or n < 256:
        raise ValueError(f"n must be a whole number >= 256 (smaller products measure the "
                         f"caches and call overhead, not the arithmetic), got {n!r}")
    if isinstance(repeats, bool) or not isinstance(repeats, int) or repeats < 1:
        raise ValueError(f"repeats must be a whole number >= 1, got {repeats!r}")
    rng = np.random.default_rng(seed)
    a = rng.standard_normal((n, n), dtype=np.float32)
    b = rng.standard_normal((n, n), dtype=np.float32)
    out = np.empty((n, n), dtype=np.float32)
    np.matmul(a, b, out=out)  # warm-up: thread pool, page faults
    rates = []
    for _ in range(repeats):
        start = time.perf_counter()
        np.matmul(a, b, out=out)
        rates.append(2.0 * n**3 / (time.perf_counter() - start))
    return GemmResult(best_flops_per_s=max(rates), worst_flops_per_s=min(rates), n=n,
                      repeats=repeats)
