"""Benchmark (b): napkin's numpy memory probe against a compiled C reference.

Compiles benchmarks/stream_read.c (gcc -O3 -march=native -fopenmp), then runs the
probe and the reference alternately, A B A B, so drift on a shared machine hits
both alike, and reports the medians and the median of the per-pair ratios.
Goal: the probe reaches at least 90 % of the reference.

    .venv/bin/python benchmarks/probe_vs_reference.py [--pairs 8] [--mib 512]
"""

from __future__ import annotations

import argparse
import statistics
import subprocess
from pathlib import Path

from napkin.measure.probe import default_threads, read_bandwidth

HERE = Path(__file__).resolve().parent
BUILD = HERE.parent / ".cache" / "bench"


def compile_reference() -> Path:
    BUILD.mkdir(parents=True, exist_ok=True)
    binary = BUILD / "stream_read"
    source = HERE / "stream_read.c"
    if not binary.exists() or binary.stat().st_mtime < source.stat().st_mtime:
        subprocess.run(["gcc", "-O3", "-march=native", "-fopenmp", str(source), "-o",
                        str(binary)], check=True)
    return binary


def reference(binary: Path, mib: int, threads: int) -> float:
    out = subprocess.run([str(binary), str(mib)], capture_output=True, text=True, check=True,
                         env={"OMP_NUM_THREADS": str(threads), "OMP_PROC_BIND": "true"})
    return float(out.stdout) * 1e9


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--pairs", type=int, default=8)
    p.add_argument("--mib", type=int, default=512)
    args = p.parse_args()
    threads = default_threads()
    binary = compile_reference()
    probe, ref = [], []
    for i in range(args.pairs):
        probe.append(read_bandwidth(array_bytes=args.mib * 2**20, threads=threads).best_bytes_per_s)
        ref.append(reference(binary, args.mib, threads))
        print(f"pair {i + 1}: probe {probe[-1] / 1e9:6.1f} GB/s   C reference "
              f"{ref[-1] / 1e9:6.1f} GB/s", flush=True)
    ratios = [a / b for a, b in zip(probe, ref)]
    print(f"\n{threads} threads, {args.mib} MiB, {args.pairs} pairs (A B A B)")
    print(f"median probe      {statistics.median(probe) / 1e9:6.1f} GB/s")
    print(f"median reference  {statistics.median(ref) / 1e9:6.1f} GB/s")
    print(f"probe / reference: median of pair ratios {statistics.median(ratios):.3f} "
          f"(min {min(ratios):.3f}, max {max(ratios):.3f}); goal >= 0.90")


if __name__ == "__main__":
    main()
