"""Benchmark: the memory probe with new threads each pass against a persistent thread pool.

llama-roofline keeps one ThreadPoolExecutor for all its passes; napkin's probe starts new
threads each pass. Everything else equal (the probe as committed, or ``--sweep off``: one
thread per core only), the two take turns, round by round (order alternating), and the
script reports each side's median best pass and the median of the per-round ratios. Raw
values go to benchmarks/measured/.

    .venv/bin/python benchmarks/probe_threads_effect.py [--rounds 10] [--sweep off]
"""

from __future__ import annotations

import argparse
import json
import statistics
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

from napkin.measure import machine, probe

HERE = Path(__file__).resolve().parent


def pooled(pool: ThreadPoolExecutor):
    """A pass as a persistent pool runs it: the same chunks, the same reduction."""
    def one_pass(chunks, reduce) -> float:
        start = time.perf_counter()
        for _ in pool.map(reduce, chunks):
            pass
        return time.perf_counter() - start
    return one_pass


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--rounds", type=int, default=10)
    p.add_argument("--sweep", choices=("on", "off"), default="on")
    args = p.parse_args()
    threads = probe.default_threads()
    fresh = probe._one_pass
    series: dict[str, list[float]] = {"new threads": [], "pool": []}
    start = time.time()
    with ThreadPoolExecutor(max_workers=threads) as pool:
        sides = {"new threads": fresh, "pool": pooled(pool)}
        for i in range(args.rounds):
            for name in (list(sides) if i % 2 == 0 else list(sides)[::-1]):
                probe._one_pass = sides[name]
                try:
                    r = probe.read_bandwidth(threads=threads, sweep=args.sweep == "on")
                finally:
                    probe._one_pass = fresh
                series[name].append(r.best_bytes_per_s)
            print(f"round {i + 1:>2}: " + "  ".join(f"{k} {v[-1] / 1e9:5.1f}"
                                                   for k, v in series.items()), flush=True)
    ratios = [a / b for a, b in zip(series["pool"], series["new threads"])]
    for k, v in series.items():
        print(f"{k:<12} median {statistics.median(v) / 1e9:5.1f} GB/s")
    print(f"pool / new threads: median {statistics.median(ratios):.3f} "
          f"({min(ratios):.3f}-{max(ratios):.3f}; {sum(r < 1 for r in ratios)} of "
          f"{len(ratios)} below 1)")
    out = HERE / "measured" / f"probe_threads_effect-{time.strftime('%Y%m%dT%H%M%S')}.json"
    out.write_text(json.dumps({"args": vars(args), "date": time.strftime("%Y-%m-%d"),
                               "threads": threads, "cpu_model": machine.cpu_model(),
                               "series": series, "seconds": time.time() - start},
                              indent=1) + "\n")
    print(f"every value in {out}")


if __name__ == "__main__":
    main()
