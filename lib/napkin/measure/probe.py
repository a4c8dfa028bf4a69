"""Memory read bandwidth, measured: the numerator of the napkin on a CPU.

Read-only passes over an array far larger than the last-level cache, one thread
per core (numpy releases the GIL inside its reductions). Several read kernels
take turns, pass by pass, because which one streams fastest depends on the CPU
and on numpy's build: a float64 sum (numpy's pairwise loop), a float32 max and a
64-bit OR (both vectorised with the widest loads the CPU has), and a matrix-vector
product with a short vector of ones (BLAS). The best pass of any kernel is the
closest to what the memory system can deliver; the median and the spread say how
noisy the machine was (``benchmarks/probe_vs_reference.py`` checks the best
against a compiled C loop and against what llama.cpp's decode itself streams).
"""

from __future__ import annotations

import os
import statistics
import threading
import time
from dataclasses import asdict, dataclass, field

import numpy as np

DEFAULT_BYTES = 512 * 2**20  # 16x a 32 MiB last-level cache
GEMV_WIDTH = 4096            # columns of the matrix-vector kernel: its vector stays in L1


def _gemv(view: np.ndarray) -> float:
    rows = view[: view.size - view.size % GEMV_WIDTH].reshape(-1, GEMV_WIDTH)
    return float((rows @ np.ones(GEMV_WIDTH, dtype=view.dtype)).sum())


#: name -> (dtype the array is read as, reduction over one thread's chunk)
KERNELS = {
    "sum_f64": (np.float64, lambda v: float(np.add.reduce(v))),
    "max_f32": (np.float32, lambda v: float(np.maximum.reduce(v))),
    "or_u64": (np.uint64, lambda v: int(np.bitwise_or.reduce(v))),
    "gemv_f64": (np.float64, _gemv),
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
                   threads: int | None = None, kernels: tuple[str, ...] | None = None
                   ) -> ProbeResult:
    """``passes`` timed passes of every kernel (after one warm-up pass each), the kernels
    taking turns so that a machine which slows down part-way slows them all alike."""
    if array_bytes < 64 * 2**20:
        raise ValueError(f"array_bytes={array_bytes} is too small to leave the caches; "
                         "use at least 64 MiB")
    if passes < 1:
        raise ValueError(f"passes must be at least 1, got {passes}")
    kernels = tuple(kernels or KERNELS)
    unknown = [k for k in kernels if k not in KERNELS]
    if unknown or not kernels:
        raise ValueError(f"unknown probe kernel(s) {unknown}; known: {', '.join(KERNELS)}")
    threads = threads or default_threads()
    # Distinct values on every page: a hypervisor or KSM may merge identical pages (an
    # array of ones), and reads would then come from cache and overstate bandwidth.
    data = np.arange(array_bytes // 8, dtype=np.float64)
    views = {k: np.array_split(data.view(KERNELS[k][0]), threads) for k in kernels}
    rates: dict[str, list[float]] = {k: [] for k in kernels}
    for n in range(passes + 1):
        for k in kernels:
            elapsed = _one_pass(views[k], KERNELS[k][1])
            if n:  # the first pass warms the page tables and caches
                rates[k].append(data.nbytes / elapsed)
    summary = {k: {"best": max(r), "median": statistics.median(r), "worst": min(r)}
               for k, r in rates.items()}
    best = max(summary, key=lambda k: summary[k]["best"])
    return ProbeResult(best_bytes_per_s=summary[best]["best"],
                       worst_bytes_per_s=summary[best]["worst"],
                       median_bytes_per_s=summary[best]["median"], passes=passes,
                       threads=threads, array_bytes=array_bytes, kernel=best, kernels=summary)
