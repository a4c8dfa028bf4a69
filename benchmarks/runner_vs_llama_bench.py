"""Benchmark (a): napkin's in-process runner against a real llama-bench, same model.

Both run the same llama.cpp (llama-bench is built from the sources vendored in the
pinned llama-cpp-python, by benchmarks/build_llama_bench.sh), on the same synthetic
model and thread count, alternately A B A B so that drift on a shared machine hits
both alike. Reports median pp and tg for each and the ratios (goal: within 5 %).

    .venv/bin/python benchmarks/runner_vs_llama_bench.py [--pairs 4] [--format Q8_0]
"""

from __future__ import annotations

import argparse
import statistics
import subprocess
from pathlib import Path

from napkin.measure.probe import default_threads
from napkin.measure.inprocess import InProcess
from napkin.measure.llama_bench import LlamaBench
from napkin.measure.session import FULL, QUICK, stderr_progress, synthetic_model

HERE = Path(__file__).resolve().parent


def llama_bench_binary() -> str:
    out = subprocess.run([str(HERE / "build_llama_bench.sh")], capture_output=True, text=True,
                         check=True)
    return out.stdout.strip().splitlines()[-1]


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--pairs", type=int, default=4)
    p.add_argument("--format", default="Q8_0", choices=("F16", "Q8_0", "Q4_0"))
    p.add_argument("--n-prompt", type=int, default=512)
    p.add_argument("--n-gen", type=int, default=128)
    p.add_argument("--reps", type=int, default=5)
    p.add_argument("--quick-model", action="store_true",
                   help="use the quick (smaller) synthetic model, for more pairs per minute")
    args = p.parse_args()
    threads = default_threads()
    plan = QUICK if args.quick_model else FULL
    model, info = synthetic_model(args.format, plan.model_bytes(), progress=stderr_progress)
    bench = LlamaBench(llama_bench_binary(), threads=threads, gpu_layers=0)
    inproc = InProcess(threads=threads)
    results = {"in-process": {"pp": [], "tg": []}, "llama-bench": {"pp": [], "tg": []}}
    for i in range(args.pairs):
        for name, runner in (("in-process", inproc), ("llama-bench", bench)):
            out = runner.measure(model, args.n_prompt, args.n_gen, args.reps)
            for kind in ("pp", "tg"):
                results[name][kind].append(getattr(out, kind).tokens_per_s)
            print(f"pair {i + 1} {name:<12} pp{args.n_prompt} {out.pp.tokens_per_s:8.1f}  "
                  f"tg{args.n_gen} {out.tg.tokens_per_s:7.2f} tok/s", flush=True)
    print(f"\n{args.format} synthetic model, {info['tensor_bytes'] / 1e6:.0f} MB, {threads} "
          f"threads, {args.pairs} pairs x {args.reps} repetitions; llama.cpp "
          f"{bench.info().llama_cpp_version}")
    for kind in ("pp", "tg"):
        a = statistics.median(results["in-process"][kind])
        b = statistics.median(results["llama-bench"][kind])
        pairs = [x / y for x, y in zip(results["in-process"][kind], results["llama-bench"][kind])]
        print(f"{kind}: in-process {a:8.2f}  llama-bench {b:8.2f}  ratio of medians {a / b:.3f}  "
              f"(pair ratios {min(pairs):.3f}..{max(pairs):.3f}); goal within 5 %")


if __name__ == "__main__":
    main()
