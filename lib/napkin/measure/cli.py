"""``python -m napkin measure``: this machine's napkin ceiling against llama.cpp."""

from __future__ import annotations

import argparse
import json
import sys

from . import record as records
from .results import MeasurementUnavailable
from .session import FULL, QUICK, quiet, run, stderr_progress


def add_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("--quick", action="store_true",
                   help="one small Q8_0 model, pp128/tg64, 3 repetitions (seconds)")
    p.add_argument("--model", metavar="PATH",
                   help="measure a real GGUF instead of synthetic ones "
                        "(e.g. llama-2-7b.Q4_0.gguf)")
    p.add_argument("--llama-bench", metavar="PATH",
                   help="a llama-bench binary to use (a Metal or CUDA build, say); by default "
                        "$LLAMA_BENCH, else one on PATH, else llama.cpp in-process through "
                        "llama-cpp-python")
    p.add_argument("--threads", type=int, metavar="N", help="threads (default: all cores)")
    p.add_argument("--reps", type=int, metavar="N", help="repetitions per test")
    p.add_argument("--bandwidth", type=float, metavar="GB_PER_S",
                   help="use this bandwidth for the ceiling instead of the GPU's spec or the "
                        "CPU memory probe (needed on a GPU that data/hardware_specs.csv lacks; "
                        "also $NAPKIN_BANDWIDTH_GB_PER_S)")
    p.add_argument("--json", action="store_true", help="print the result record as JSON")
    p.add_argument("--out", metavar="DIR", help="where to save the result (default: results/)")


def main(args: argparse.Namespace) -> int:
    plan = QUICK if args.quick else FULL
    if args.reps is not None:
        if args.reps < 1:
            print("error: --reps must be at least 1", file=sys.stderr)
            return 2
        plan = plan.__class__(**{**plan.__dict__, "reps": args.reps})
    if args.threads is not None and args.threads < 1:
        print("error: --threads must be at least 1", file=sys.stderr)
        return 2
    if args.bandwidth is not None and args.bandwidth <= 0:
        print(f"error: --bandwidth must be a positive number of GB/s, got {args.bandwidth}",
              file=sys.stderr)
        return 2
    try:
        result = run(plan, model=args.model, llama_bench=args.llama_bench, threads=args.threads,
                     bandwidth_gb_per_s=args.bandwidth,
                     progress=stderr_progress if not args.json else quiet)
    except (MeasurementUnavailable, ValueError, RuntimeError) as err:
        print(f"error: {err}", file=sys.stderr)
        return 1
    path = records.save(result, args.out)
    if args.json:
        print(json.dumps(result, indent=2))
    else:
        print(records.table(result))
        print(f"\nSaved {path}")
    return 0
