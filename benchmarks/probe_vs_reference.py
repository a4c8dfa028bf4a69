"""Benchmark (b): the memory probe against llama-roofline, compiled C loops and decode.

Which figure is the better ceiling for llama.cpp on a CPU? The sides take turns, round by
round (probes, decode F16, probes, decode Q8_0, probes, C loops, llama-roofline; reversed
every other round), so drift on a shared machine hits all alike, and each decode is
bracketed by the probes right before and after it, as a measurement session brackets each
model:

  probe           napkin.measure.probe.read_bandwidth as the book runs it now
  baseline        the probe at git revision --baseline (before issue 23: three kernels,
                  one thread per core only, one second in all), loaded from git
  llama-roofline  `llama-roofline membw` (PyPI; numpy sum/max/dot kernels at 1, n/4, n/2
                  and n threads, best of 5 each), a benchmark extra in its own venv:
                  --llama-roofline PATH, $LLAMA_ROOFLINE or on PATH; skipped when absent
  C               benchmarks/stream_read.c, gcc -O3 -march=native -fopenmp: three kernels,
                  the best pass of any
  decode F16      llama.cpp tg on a large synthetic F16 model, in-process: bytes per token
                  (every weight once: the output layer is tied to the embeddings) x tokens/s
  decode Q8_0     the same on Q8_0

Each round also records how much CPU other processes took while it ran (/proc/stat):
llama.cpp's threads wait for each other at every step, so a busy neighbour turns decode into
a scheduling measurement. Medians and per-round ratios come from
napkin.measure.probe_compare, over every round and over the quiet ones; every value is kept
in benchmarks/measured/. Goals: the probe's best pass at least 0.90 of the best reference
in the same round, and never below what decode streams.

    .venv/bin/python benchmarks/probe_vs_reference.py [--rounds 10] [--mib 512] \
        [--llama-roofline /work/venv-bench/bin/llama-roofline]
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
import types
from pathlib import Path

import numpy as np

from napkin.measure import machine, probe_compare
from napkin.measure.inprocess import InProcess
from napkin.measure.probe import default_threads, read_bandwidth
from napkin.measure.session import stderr_progress, synthetic_model

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent
BUILD = ROOT / ".cache" / "bench"
BASELINE = "772e58f"  # main before issue 23


def compile_reference() -> Path:
    BUILD.mkdir(parents=True, exist_ok=True)
    binary = BUILD / "stream_read"
    source = HERE / "stream_read.c"
    if not binary.exists() or binary.stat().st_mtime < source.stat().st_mtime:
        subprocess.run(["gcc", "-O3", "-march=native", "-fopenmp", str(source), "-o",
                        str(binary)], check=True)
    return binary


def c_loops(binary: Path, mib: int, passes: int, threads: int) -> dict:
    """{"C best", "C median", "C <kernel>"} in bytes/s from one run of stream_read."""
    out = subprocess.run([str(binary), str(mib), str(passes)], capture_output=True, text=True,
                         check=True, env={**os.environ, "OMP_NUM_THREADS": str(threads),
                                          "OMP_PROC_BIND": "true"})
    kernels = {}
    for line in out.stdout.split("\n"):
        if line.strip():
            name, best, median = line.split()
            kernels[name] = (float(best) * 1e9, float(median) * 1e9)
    return {"C best": max(b for b, _ in kernels.values()),
            "C median": max(m for _, m in kernels.values()),
            **{f"C {name}": b for name, (b, _) in kernels.items()}}


def find_roofline(given: str | None) -> str | None:
    """llama-roofline's command: --llama-roofline, else $LLAMA_ROOFLINE, else on PATH."""
    path = given or os.environ.get("LLAMA_ROOFLINE") or shutil.which("llama-roofline")
    if path and not (Path(path).is_file() and os.access(path, os.X_OK)):
        sys.exit(f"error: llama-roofline {path!r} is not an executable file")
    return path


def roofline_version(binary: str) -> str:
    out = subprocess.run([binary, "--version"], capture_output=True, text=True)
    return (out.stdout or out.stderr).strip()


def llama_roofline(binary: str, mib: int, reps: int) -> dict:
    """`llama-roofline membw`'s headline (its best read kernel at its best thread count)."""
    with tempfile.TemporaryDirectory() as tmp:
        out = Path(tmp) / "membw.json"
        subprocess.run([binary, "membw", "--membw-mb", str(mib), "--membw-reps", str(reps),
                        "--json", str(out)], capture_output=True, text=True, check=True)
        m = json.loads(out.read_text())["membw"]
    return {"llama-roofline best": m["peak_read_GBs"] * 1e9,
            "llama-roofline kernel": f"{m['best_kernel']}@{m['best_threads']}"}


def baseline_probe(rev: str):
    """read_bandwidth as it was at ``rev``, loaded from git, to run beside today's."""
    source = subprocess.run(["git", "-C", str(ROOT), "show", f"{rev}:lib/napkin/measure/probe.py"],
                            capture_output=True, text=True, check=True).stdout
    module = types.ModuleType("napkin_probe_baseline")
    sys.modules[module.__name__] = module  # dataclasses look their module up
    exec(compile(source, f"{rev}:lib/napkin/measure/probe.py", "exec"), module.__dict__)
    return module.read_bandwidth


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
        self.runner, self.n_gen, self.reps, self.fmt = runner, n_gen, reps, fmt
        self.model = runner.load(path)
        self.bytes = runner.model_info(self.model).model_bytes

    def __call__(self) -> dict:
        rate = self.runner.run_test(self.model, f"tg{self.n_gen}", 0, self.n_gen, 0, self.reps)
        return {f"decode {self.fmt}": rate.tokens_per_s * self.bytes}


def measure_rounds(args, threads: int, roofline: str | None) -> dict:
    """Every round's values, by series name, and how busy the machine was in each."""
    binary = compile_reference()
    runner = InProcess(threads=threads)
    decoders = [Decode(runner, fmt, args.model_mb * 1e6, args.n_gen, args.reps)
                for fmt in args.formats.split(",") if fmt]
    old = baseline_probe(args.baseline)
    mib = args.mib * 2**20

    def probes() -> dict:
        new = read_bandwidth(array_bytes=mib, passes=args.passes, threads=threads)
        before = old(array_bytes=mib, passes=args.passes, threads=threads)
        return {"probe": new, "baseline": before}

    steps = [probes]
    for d in decoders:
        steps += [d, probes]
    steps.append(lambda: c_loops(binary, args.mib, args.ref_passes, threads))
    if roofline:
        steps.append(lambda: llama_roofline(roofline, args.mib, args.roofline_reps))
    series: dict[str, list] = {}
    others = []
    for i in range(args.rounds):
        got, share = [], 0.0
        for step in (steps if i % 2 == 0 else steps[::-1]):
            before = cpu_ticks()
            got.append(step())
            share = max(share, others_share(before, cpu_ticks()))
        if i % 2:
            got.reverse()
        others.append(share)
        for key, value in round_values(got, [d.fmt for d in decoders]).items():
            series.setdefault(key, []).append(value)
        print(f"round {i + 1:>2}: " + "  ".join(
            f"{k} {series[k][-1] / 1e9:5.1f}" for k in
            ("probe best", "baseline best", "llama-roofline best", "C best",
             *(f"decode {d.fmt}" for d in decoders)) if k in series)
            + f"  others' CPU {share:.0%}", flush=True)
    return {"series": series, "others_cpu": others,
            "model_bytes": {f"decode {d.fmt}": d.bytes for d in decoders}}


def round_values(got: list[dict], formats: list[str]) -> dict:
    """One round's figures from its steps in forward order (probes, decode, probes, ...,
    references): the last probes (beside the references) against the references, and the
    better of the two probes around each decode against that decode."""
    probes = got[0:2 * len(formats) + 1:2]
    last = probes[-1]
    out = {"probe best": last["probe"].best_bytes_per_s,
           "probe median": last["probe"].median_bytes_per_s,
           "probe kernel": f"{last['probe'].kernel}@{last['probe'].threads}",
           "baseline best": last["baseline"].best_bytes_per_s,
           "baseline median": last["baseline"].median_bytes_per_s}
    for step in got[2 * len(formats) + 1:]:
        out |= step
    for j, fmt in enumerate(formats):
        pair = probes[j], probes[j + 1]
        out |= got[2 * j + 1]
        for side in ("probe", "baseline"):
            out[f"{side} around {fmt}"] = max(p[side].best_bytes_per_s for p in pair)
    return out


def report(result: dict) -> None:
    """Medians and ratios over every round and over the quiet ones."""
    quiet = probe_compare.quiet(result)
    for title, rounds in (("every round", None),
                          (f"quiet rounds (others below {result['args']['quiet']:.0%} of "
                           f"the CPU)", quiet)):
        n = len(result["others_cpu"]) if rounds is None else len(rounds)
        print(f"\n== {title}: {n} rounds ==")
        if not n:
            continue
        m = probe_compare.medians(result, rounds)
        for _, row in m.iterrows():
            print(f"  {row['side']:<22}{row['median'] / 1e9:7.1f} GB/s  (min "
                  f"{row['min'] / 1e9:.1f}, max {row['max'] / 1e9:.1f})")
        print("  median of per-round ratios (min, max; rounds below 1):")
        for _, row in probe_compare.ratios(result, rounds).iterrows():
            print(f"  {row['ratio']:<42}{row['median']:6.3f} ({row['min']:.3f}, "
                  f"{row['max']:.3f}; {row['below']} of {row['rounds']})")
    for key in ("probe kernel", "llama-roofline kernel"):
        if key in result["series"]:
            values = result["series"][key]
            print(f"  {key} of the best pass: " + ", ".join(
                f"{k} {values.count(k)}x" for k in sorted(set(values))))


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--rounds", type=int, default=10)
    p.add_argument("--mib", type=int, default=512)
    p.add_argument("--passes", type=int, default=7, help="passes per probe kernel (at least)")
    p.add_argument("--ref-passes", type=int, default=15, help="passes per C kernel")
    p.add_argument("--roofline-reps", type=int, default=5,
                   help="llama-roofline membw repetitions per kernel and thread count")
    p.add_argument("--llama-roofline", metavar="PATH",
                   help="llama-roofline's command (else $LLAMA_ROOFLINE, else on PATH)")
    p.add_argument("--baseline", default=BASELINE,
                   help="git revision whose probe runs beside today's")
    p.add_argument("--formats", default="F16", help="decode models, comma-separated")
    p.add_argument("--model-mb", type=float, default=None,
                   help="size of each decode model (default: 4x the last-level cache, as a "
                        "quick measurement sizes its model, and at least 800 MB)")
    p.add_argument("--n-gen", type=int, default=32)
    p.add_argument("--reps", type=int, default=3)
    p.add_argument("--quiet", type=float, default=0.05,
                   help="a round is quiet when other processes used less than this share of "
                        "the CPU while it ran")
    p.add_argument("--out", type=Path, default=HERE / "measured", help="where to keep the values")
    args = p.parse_args()
    if args.model_mb is None:
        args.model_mb = max(800, 4 * machine.last_level_cache_bytes() / 1e6)
    roofline = find_roofline(args.llama_roofline)
    if roofline is None:
        print("llama-roofline not found: the comparison runs without it. Install it in a venv "
              "of its own (python3 -m venv /work/venv-bench && /work/venv-bench/bin/pip install "
              "llama-roofline) and pass --llama-roofline /work/venv-bench/bin/llama-roofline "
              "or set LLAMA_ROOFLINE.", flush=True)
    threads = default_threads()
    start = time.time()
    result = {"args": {k: str(v) if isinstance(v, Path) else v for k, v in vars(args).items()},
              "date": time.strftime("%Y-%m-%d"), "threads": threads,
              "machine": {"cpu_model": machine.cpu_model(), "logical_cpus": os.cpu_count(),
                          "last_level_cache_bytes": machine.last_level_cache_bytes(),
                          "numpy": np.__version__},
              "llama_roofline": roofline_version(roofline) if roofline else None}
    result |= measure_rounds(args, threads, roofline)
    result["seconds"] = time.time() - start
    print(f"\n{threads} threads, {args.mib} MiB, {args.rounds} rounds (order reversed every "
          f"other round); decode tg{args.n_gen} x {args.reps}, models " + ", ".join(
              f"{k.split()[-1]} {v / 1e6:,.0f} MB" for k, v in result["model_bytes"].items()))
    report(probe_compare.load_dict(result))
    args.out.mkdir(parents=True, exist_ok=True)
    out = args.out / f"probe_vs_reference-{time.strftime('%Y%m%dT%H%M%S')}.json"
    out.write_text(json.dumps(result, indent=1) + "\n")
    print(f"\n{time.time() - start:.0f} s; every value in {out}")


if __name__ == "__main__":
    main()
