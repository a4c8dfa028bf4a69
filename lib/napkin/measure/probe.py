"""Memory read bandwidth, measured: the numerator of the napkin on a CPU.

Read-only passes over an array far larger than the last-level cache, one chunk a
thread (numpy releases the GIL inside its reductions). Four read kernels take
turns, pass by pass, because which one streams fastest depends on the CPU and on
numpy's build: a float64 sum (numpy's pairwise loop), a float32 max and a 64-bit
OR (vectorised with the widest loads the CPU has), and a float32 dot product of
the two halves of each thread's chunk (two streams through BLAS). Each kernel runs
at several thread counts, from one to one per core: on a shared machine a pass
that needs every core waits for the slowest of them, while a pass on fewer
threads may find the memory system just as open, so the best pass of any count
is the closer estimate. Passes continue for at least ``min_seconds`` per thread
count: the bandwidth left to us moves with the neighbours over seconds, and
contention only ever lowers it. The median and the spread say how noisy the machine was.

The dot kernel and the thread sweep come from ``llama-roofline membw`` (PyPI), which a
reviewer measured at 1/0.70 of the probe without them on a 2-core VM; its persistent
thread pool read less here, so the probe keeps new threads each pass.
``benchmarks/probe_vs_reference.py`` compares the two, the probe as it was, compiled C
loops, and the bandwidth llama.cpp's own decode achieves.
"""

from __future__ import annotations

import os
import statistics
import threading
import time
from dataclasses import asdict, dataclass, field

import numpy as np

__all__ = ["DEFAULT_BYTES", "default_threads", "KERNELS", "MAX_PASSES", "ProbeResult",
           "read_bandwidth", "thread_counts"]

DEFAULT_BYTES = 512 * 2**20  # 16x a 32 MiB last-level cache
MAX_PASSES = 200             # per kernel and thread count: bounds the time on a fast machine


def _dot_halves(v: np.ndarray) -> float:
    """Two streams at once: the first half of a chunk dotted with its second half (the
    odd element of an odd chunk is left out: 4 bytes in hundreds of MB)."""
    half = len(v) // 2
    with np.errstate(all="ignore"):  # the float64 array's bits read as float32 overflow
        return float(np.dot(v[:half], v[half:2 * half]))


#: name -> (dtype the array is read as, reduction over one thread's chunk). A matrix-vector
#: product with a vector of ones and an interleaved read of eight streams per thread were
#: tried too and were slower (benchmarks/README.md).
KERNELS = {
    "sum_f64": (np.float64, lambda v: float(np.add.reduce(v))),
    "max_f32": (np.float32, lambda v: float(np.maximum.reduce(v))),
    "or_u64": (np.uint64, lambda v: int(np.bitwise_or.reduce(v))),
    "dot_f32": (np.float32, _dot_halves),
}


@dataclass(frozen=True)
class ProbeResult:
    """Best, median and worst pass in bytes/s of the kernel and thread count that gave the
    best pass, which those were, and how the probe ran."""

    best_bytes_per_s: float
    worst_bytes_per_s: float
    passes: int
    threads: int                 # the thread count of the best pass
    array_bytes: int
    median_bytes_per_s: float = float("nan")
    kernel: str = "sum_f64"
    kernels: dict = field(default_factory=dict)  # name -> {"best", "median", "worst", "threads"}
    thread_counts: tuple[int, ...] = ()          # every count tried

    @property
    def spread(self) -> float:
        """(best - worst) / best of the best kernel's passes: 0.05 means they varied by 5 %."""
        return 1 - self.worst_bytes_per_s / self.best_bytes_per_s

    def to_dict(self) -> dict:
        return asdict(self) | {"thread_counts": list(self.thread_counts), "spread": self.spread}


def default_threads() -> int:
    return len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count() or 1


def thread_counts(threads: int) -> tuple[int, ...]:
    """One thread, a quarter, half and all of ``threads`` (llama-roofline's sweep)."""
    return tuple(sorted({1, max(1, threads // 4), max(1, threads // 2), threads}))


def _one_pass(chunks: list[np.ndarray], reduce) -> float:
    """Seconds for every thread to read its chunk once. The threads are new each pass: on a
    busy machine the scheduler places a new thread at the front of the queue, while a pool's
    long-lived worker carries the CPU time it has already had, and a persistent pool (as
    llama-roofline keeps) read 0.83 of this here (benchmarks/README.md)."""
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
                   min_seconds: float = 1.0, sweep: bool = True) -> ProbeResult:
    """At least ``passes`` timed passes of every kernel at every thread count (after one
    warm-up pass each), and more until ``min_seconds`` per thread count have gone by, all of
    them taking turns so that a machine which slows down part-way slows them all alike (a
    thread count gets as long as the probe without the sweep took: with one second in all,
    the all-core passes got fewer chances at a quiet moment, and their best fell).
    ``sweep=False`` runs ``threads`` threads only."""
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
    counts = thread_counts(threads) if sweep else (threads,)
    # Distinct values on every page: a hypervisor or KSM may merge identical pages (an
    # array of ones), and reads would then come from cache and overstate bandwidth.
    data = np.arange(array_bytes // 8, dtype=np.float64)
    runs = [(k, n, np.array_split(data.view(KERNELS[k][0]), n)) for n in counts for k in kernels]
    rates: dict[tuple[str, int], list[float]] = {(k, n): [] for k, n, _ in runs}
    for k, _, chunks in runs:  # warm-up: page tables and caches
        _one_pass(chunks, KERNELS[k][1])
    start, budget = time.perf_counter(), min_seconds * len(counts)
    n = 0
    while n < passes or (time.perf_counter() - start < budget and n < MAX_PASSES):
        for k, count, chunks in runs:
            rates[k, count].append(data.nbytes / _one_pass(chunks, KERNELS[k][1]))
        n += 1
    stats = {key: {"best": max(r), "median": statistics.median(r), "worst": min(r),
                   "threads": key[1]} for key, r in rates.items()}
    summary = {k: max((s for (name, _), s in stats.items() if name == k),
                      key=lambda s: s["best"]) for k in kernels}
    best = max(summary, key=lambda k: summary[k]["best"])
    return ProbeResult(best_bytes_per_s=summary[best]["best"],
                       worst_bytes_per_s=summary[best]["worst"],
                       median_bytes_per_s=summary[best]["median"], passes=n,
                       threads=summary[best]["threads"], array_bytes=array_bytes, kernel=best,
                       kernels=summary, thread_counts=counts)
