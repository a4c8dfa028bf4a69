"""Memory read bandwidth, measured: the numerator of the napkin on this machine.

Read-only passes over an array far larger than the last-level cache, one
thread per core (numpy releases the GIL inside ``sum``), keeping the best pass:
the best is the closest to what the memory system can deliver, the spread says
how noisy the machine was.
"""

from __future__ import annotations

import os
import threading
import time
from dataclasses import asdict, dataclass

import numpy as np

DEFAULT_BYTES = 512 * 2**20  # 16x a 32 MiB last-level cache


@dataclass(frozen=True)
class ProbeResult:
    """Best and worst pass, in bytes/s, and how the probe ran."""

    best_bytes_per_s: float
    worst_bytes_per_s: float
    passes: int
    threads: int
    array_bytes: int

    @property
    def spread(self) -> float:
        """(best - worst) / best: 0.05 means the passes varied by 5 %."""
        return 1 - self.worst_bytes_per_s / self.best_bytes_per_s

    def to_dict(self) -> dict:
        return asdict(self) | {"spread": self.spread}


def default_threads() -> int:
    return len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count() or 1


def read_bandwidth(array_bytes: int = DEFAULT_BYTES, passes: int = 7,
                   threads: int | None = None) -> ProbeResult:
    """Measure read bandwidth with ``passes`` timed passes (after one warm-up pass)."""
    if array_bytes < 64 * 2**20:
        raise ValueError(f"array_bytes={array_bytes} is too small to leave the caches; "
                         "use at least 64 MiB")
    if passes < 1:
        raise ValueError(f"passes must be at least 1, got {passes}")
    threads = threads or default_threads()
    # Distinct values on every page: a hypervisor or KSM may merge identical pages (an
    # array of ones), and reads would then come from cache and overstate bandwidth.
    data = np.arange(array_bytes // 8, dtype=np.float64)
    chunks = np.array_split(data, threads)
    sink = [0.0] * threads

    def read(i: int) -> None:
        sink[i] = float(chunks[i].sum())

    rates = []
    for n in range(passes + 1):
        workers = [threading.Thread(target=read, args=(i,)) for i in range(threads)]
        start = time.perf_counter()
        for w in workers:
            w.start()
        for w in workers:
            w.join()
        elapsed = time.perf_counter() - start
        if n:  # the first pass warms the page tables and caches
            rates.append(data.nbytes / elapsed)
    return ProbeResult(best_bytes_per_s=max(rates), worst_bytes_per_s=min(rates),
                       passes=passes, threads=threads, array_bytes=array_bytes)
