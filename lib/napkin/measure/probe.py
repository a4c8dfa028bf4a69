"""Memory read bandwidth, measured: the numerator of the napkin on a CPU.

Read-only passes over an array far larger than the last-level cache, one thread
per core (numpy releases the GIL inside its reductions). Three read kernels take
turns, pass by pass, because which one streams fastest depends on the CPU and on
numpy's build: a float64 sum (numpy's pairwise loop), a float32 max and a 64-bit
OR (both vectorised with the widest loads the CPU has). Passes continue for at
least ``min_seconds``: on a shared machine the bandwidth left to us moves with
the neighbours over seconds, and contention only ever lowers it, so the best pass
of a longer window is the closer estimate of what the memory system delivers.
The median and the spread say how noisy the machine was.
``benchmarks/probe_vs_reference.py`` checks the best pass against compiled C loops
and against the bandwidth llama.cpp's own decode achieves.
"""

from __future__ import annotations

import os
import statistics
import threading
import time
from dataclasses import asdict, dataclass, field

import numpy as np

DEFAULT_BYTES = 512 * 2**20  # 16x a 32 MiB last-level cache
MAX_PASSES = 200             # per kernel: bounds the time on a very fast machine

#: name -> (dtype the array is read as, reduction over one thread's chunk). A matrix-vector
#: product with a vector of ones (BLAS) and an interleaved read of eight streams per thread
#: were tried too and were slower here (benchmarks/README.md).
KERNELS = {
    "sum_f64": (np.float64, lambda v: float(np.add.reduce(v))),
    "max_f32": (np.float32, lambda v: float(np.maximum.reduce(v))),
    "or_u64": (np.uint64, lambda v: int(np.bitwise_or.reduce(v))),
}


@dataclass(frozen=True)
class ProbeResult:
    """Best, median and worst pass in bytes/s, which kernel gave the best, and how it ran."""

    best_bytes_per_s: float
    worst_bytes_per_s: float
    passes: int
    threads: int
    array_bytes: int
    median_bytes_per_s: float = float("nan")
    kernel: str = "sum_f64"
    kernels: dict = field(default_factory=dict)  # name -> {"best", "median", "worst"} bytes/s

    @property
    def spread(self) -> float:
        """(best - worst) / best of the best kernel's passes: 0.05 means they varied by 5 %."""
        return 1 - self.worst_bytes_per_s / self.best_bytes_per_s

    def to_dict(self) -> dict:
        return asdict(self) | {"spread": self.spread}


def default_threads() -> int:
    return len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count() or 1


def _one_pass(chunks: list[np.ndarray], reduce) -> float:
    """Seconds for every thread to read its chunk once."""
    sink = [None] * len(chunks)

    def read(i: int) -> None:
        sink[i] = reduce(chunks[i])

    workers = [threading.Thread(target=read, args=(i,)) for i in range(len(chunks))]
    start = time.perf_counter()
    for w in workers:
        w.start()
    for w in workers:
        w.join()
    return time.perf_counter() - start


def read_bandwidth(array_bytes: int = DEFAULT_BYTES, passes: int = 7,
                   threads: int | None = None, kernels: tuple[str, ...] | None = None,
                   min_seconds: float = 1.0) -> ProbeResult:
    """At least ``passes`` timed passes of every kernel (after one warm-up pass each), and
    more until ``min_seconds`` have gone by, the kernels taking turns so that a machine which
    slows down part-way slows them all alike."""
    if array_bytes < 64 * 2**20:
        raise ValueError(f"array_bytes={array_bytes} is too small to leave the caches; "
                         "use at least 64 MiB")
    if isinstance(passes, bool) or not isinstance(passes, int) or passes < 1:
        raise ValueError(f"passes must be a whole number >= 1, got {passes!r}")
    if not min_seconds >= 0:
        raise ValueError(f"min_seconds must be >= 0, got {min_seconds!r}")
    kernels = tuple(kernels or KERNELS)
    unknown = [k for k in kernels if k not in KERNELS]
    if unknown or not kernels:
        raise ValueError(f"unknown probe kernel(s) {unknown}; known: {', '.join(KERNELS)}")
    threads = threads or default_threads()
    # Distinct values on every page: a hypervisor or KSM may merge identical pages (an
    # array of ones), and reads would then come from cache and overstate bandwidth.
    data = np.arange(array_bytes // 8, dtype=np.float64)
    views = {k: np.array_split(data.view(KERNELS[k][0]), threads) for k in kernels}
    for k in kernels:  # warm-up: page tables and caches
        _one_pass(views[k], KERNELS[k][1])
    rates: dict[str, list[float]] = {k: [] for k in kernels}
    start = time.perf_counter()
    n = 0
    while n < passes or (time.perf_counter() - start < min_seconds and n < MAX_PASSES):
        for k in kernels:
            rates[k].append(data.nbytes / _one_pass(views[k], KERNELS[k][1]))
        n += 1
    summary = {k: {"best": max(r), "median": statistics.median(r), "worst": min(r)}
               for k, r in rates.items()}
    best = max(summary, key=lambda k: summary[k]["best"])
    return ProbeResult(best_bytes_per_s=summary[best]["best"],
                       worst_bytes_per_s=summary[best]["worst"],
                       median_bytes_per_s=summary[best]["median"], passes=n,
                       threads=threads, array_bytes=array_bytes, kernel=best, kernels=summary)
