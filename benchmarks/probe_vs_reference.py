"""Benchmark (b): the memory probe against compiled C loops and against what decode streams.

Which figure is the better ceiling for llama.cpp on a CPU? The sides take turns, round by
round (probes, decode F16, probes, decode Q8_0, probes, reference; reversed every other
round), so drift on a shared machine hits all alike, and each decode is bracketed by the
probes right before and after it, as a measurement session brackets each model:

  probe        napkin.measure.probe.read_bandwidth as the book runs it: every kernel, for
               at least its minimum time; best pass and median
  old probe    the probe as it was: the float64 sum alone, best of 7 passes
  reference    benchmarks/stream_read.c, gcc -O3 -march=native -fopenmp: three C kernels,
               the best pass of any
  decode F16   llama.cpp tg on a large synthetic F16 model, in-process: bytes per token
               (every weight once: the output layer is tied to the embeddings) x tokens/s
  decode Q8_0  the same on Q8_0

Reports medians per side and the medians of the per-round ratios (a probe against the
reference right beside it; the better of the two probes around a decode against that
decode), over every round and over
the quiet ones: each round records how much CPU other processes took while it ran (from
/proc/stat), because llama.cpp's threads wait for each other at every step and a busy
neighbour turns decode into a scheduling measurement, not a bandwidth one. Goals: the
probe's best within 10 % of the best reference, and never below what decode achieves in
the same round.

    .venv/bin/python benchmarks/probe_vs_reference.py [--rounds 10] [--mib 512]
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import time
from pathlib import Path

from napkin.measure.inprocess import InProcess
from napkin.measure.probe import default_threads, read_bandwidth
from napkin.measure.session import stderr_progress, synthetic_model

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


def reference(binary: Path, mib: int, passes: int, threads: int) -> dict:
    """{kernel: (best, median)} in bytes/s from one run of stream_read."""
    out = subprocess.run([str(binary), str(mib), str(passes)], capture_output=True, text=True,
                         check=True, env={**os.environ, "OMP_NUM_THREADS": str(threads),
                                          "OMP_PROC_BIND": "true"})
    kernels = {}
    for line in out.stdout.split("\n"):
        if line.strip():
            name, best, median = line.split()
            kernels[name] = (float(best) * 1e9, float(median) * 1e9)
    return kernels


def cpu_ticks() -> tuple[float, float, float]:
    """(busy, total) clock ticks of the whole machine, and this process's own (with children)."""
    fields = [float(x) for x in Path("/proc/stat").read_text().split("\n")[0].split()[1:9]]
    t = os.times()
    ours = (t.user + t.system + t.children_user + t.children_system) * os.sysconf("SC_CLK_TCK")
    return sum(fields) - fields[3] - fields[4], sum(fields), ours


def others_share(before, after) -> float:
    """The share of the machine's CPU time other processes used between two cpu_ticks()."""
    busy, total, ours = (b - a for a, b in zip(before, after))
    return max(0.0, (busy - ours) / total) if total > 0 else 0.0


class Decode:
    """One loaded model, decoded with llama-bench's method each round: bytes/token x tg."""

    def __init__(self, runner: InProcess, fmt: str, model_bytes: float, n_gen: int, reps: int):
        path, _ = synthetic_model(fmt, model_bytes, progress=stderr_progress)
        self.runner, self.n_gen, self.reps = runner, n_gen, reps
        self.model = runner.load(path)
        self.bytes = runner.model_info(self.model).model_bytes

    def __call__(self) -> float:
        rate = self.runner.run_test(self.model, f"tg{self.n_gen}", 0, self.n_gen, 0, self.reps)
        return rate.tokens_per_s * self.bytes


def measure_rounds(args, threads: int) -> tuple[dict[str, list[float]], dict]:
    """Each round: probes, decode F16, probes, decode Q8_0, probes, reference (reversed every
    other round); "probes" is the probe then the old probe. A decode is bracketed by the
    probes right before and after it, as a measurement session brackets each model."""
    binary = compile_reference()
    runner = InProcess(threads=threads)
    decoders = {f"decode {fmt}": Decode(runner, fmt, args.model_mb * 1e6, args.n_gen, args.reps)
                for fmt in args.formats.split(",")}
    mib = args.mib * 2**20

    def probes():
        new = read_bandwidth(array_bytes=mib, passes=args.passes, threads=threads)
        old = read_bandwidth(array_bytes=mib, passes=7, threads=threads, kernels=("sum_f64",),
                             min_seconds=0)
        return {"probe": new, "old": old}

    def ref():
        return {"reference": reference(binary, args.mib, args.ref_passes, threads)}

    steps = [probes]
    for name, d in decoders.items():
        steps += [lambda d=d, name=name: {name: d()}, probes]
    steps.append(ref)
    series: dict[str, list[float]] = {}
    kernels, others = [], []
    for i in range(args.rounds):
        got, share = [], 0.0
        for step in (steps if i % 2 == 0 else steps[::-1]):
            before = cpu_ticks()
            got.append(step())
            share = max(share, others_share(before, cpu_ticks()))
        if i % 2:
            got.reverse()
        others.append(share)
        for key, value in round_values(got, list(decoders)).items():
            if key == "probe kernel":
                kernels.append(value)
            else:
                series.setdefault(key, []).append(value)
        print(f"round {i + 1:>2}: " + "  ".join(
            f"{k} {v[-1] / 1e9:5.1f}" for k, v in series.items()
            if k.split()[0] in ("probe", "old", "decode") or k == "reference best")
            + f"  others' CPU {share:.0%}", flush=True)
    return series, {"model_bytes": {k: d.bytes for k, d in decoders.items()},
                    "probe_kernels": kernels, "others_cpu": others}


def round_values(got: list[dict], decoders: list[str]) -> dict:
    """One round's figures from its steps in forward order (probes, decode, probes, ..., ref)."""
    probes = got[0::2][:len(decoders) + 1]
    last, k = probes[-1], got[-1]["reference"]
    out = {"probe best": last["probe"].best_bytes_per_s,
           "probe median": last["probe"].median_bytes_per_s,
           "old probe best": last["old"].best_bytes_per_s,
           "reference best": max(b for b, _ in k.values()),
           "reference median": max(m for _, m in k.values()),
           **{f"reference {name}": b for name, (b, _) in k.items()},
           "probe kernel": last["probe"].kernel}
    for j, name in enumerate(decoders):
        fmt = name.split()[-1]
        pair = probes[j], probes[j + 1]
        out[name] = got[2 * j + 1][name]
        out[f"probe around {fmt}"] = max(p["probe"].best_bytes_per_s for p in pair)
        out[f"old probe around {fmt}"] = max(p["old"].best_bytes_per_s for p in pair)
    return out


def ratio(series, a: str, b: str) -> tuple[float, float, float]:
    pairs = [x / y for x, y in zip(series[a], series[b])]
    return statistics.median(pairs), min(pairs), max(pairs)


def summary(series: dict, kernels: list[str], title: str) -> None:
    n = len(next(iter(series.values())))
    print(f"\n== {title}: {n} rounds ==")
    if not n:
        return
    print("medians (GB/s):")
    for key, values in series.items():
        print(f"  {key:<22}{statistics.median(values) / 1e9:7.1f}   "
              f"(min {min(values) / 1e9:.1f}, max {max(values) / 1e9:.1f})")
    print("median of per-round ratios (min, max):")
    decodes = [k for k in series if k.startswith("decode")]
    for a, b in ([("probe best", "reference best"), ("probe median", "reference median"),
                  ("old probe best", "reference best")]
                 + [(f"{p} around {d.split()[-1]}", d) for d in decodes
                    for p in ("probe", "old probe")]
                 + [("reference best", d) for d in decodes]):
        m, lo, hi = ratio(series, a, b)
        print(f"  {a} / {b}: {m:.3f} ({lo:.3f}, {hi:.3f})")
    for d in decodes:
        for p in (f"probe around {d.split()[-1]}", f"old probe around {d.split()[-1]}",
                  "reference best"):
            below = sum(a < x for a, x in zip(series[p], series[d]))
            print(f"  rounds where {p} is below {d}: {below} of {n}")
    print("  probe kernel with the best pass: " + ", ".join(
        f"{k} {kernels.count(k)}x" for k in sorted(set(kernels))))


def report(series: dict, extra: dict, args, threads: int) -> None:
    print(f"\n{threads} threads, {args.mib} MiB, probe >= {args.passes} passes per kernel and "
          f">= 1 s, C reference {args.ref_passes} passes per kernel, "
          f"{args.rounds} rounds (order reversed every other round); decode: tg{args.n_gen} x "
          f"{args.reps} repetitions, models " + ", ".join(
              f"{k.split()[-1]} {v / 1e6:,.0f} MB" for k, v in extra["model_bytes"].items()))
    summary(series, extra["probe_kernels"], "every round")
    quiet = [i for i, share in enumerate(extra["others_cpu"]) if share < args.quiet]
    summary({k: [v[i] for i in quiet] for k, v in series.items()},
            [extra["probe_kernels"][i] for i in quiet],
            f"quiet rounds (other processes below {args.quiet:.0%} of the CPU)")


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--rounds", type=int, default=10)
    p.add_argument("--mib", type=int, default=512)
    p.add_argument("--passes", type=int, default=7,
                   help="passes per kernel, probe (at least) and C alike")
    p.add_argument("--ref-passes", type=int, default=15, help="passes per C kernel")
    p.add_argument("--formats", default="F16,Q8_0", help="decode models, comma-separated")
    p.add_argument("--model-mb", type=float, default=800, help="size of each decode model")
    p.add_argument("--n-gen", type=int, default=32)
    p.add_argument("--reps", type=int, default=3)
    p.add_argument("--quiet", type=float, default=0.05,
                   help="a round is quiet when other processes used less than this share of "
                        "the CPU while it ran")
    args = p.parse_args()
    threads = default_threads()
    start = time.time()
    series, extra = measure_rounds(args, threads)
    report(series, extra, args, threads)
    out = BUILD / f"probe_vs_reference-{time.strftime('%Y%m%dT%H%M%S')}.json"
    out.write_text(json.dumps({"args": vars(args), "threads": threads, "series": series,
                               **extra, "seconds": time.time() - start}, indent=1))
    print(f"\n{time.time() - start:.0f} s; every value in {out}")


if __name__ == "__main__":
    main()
