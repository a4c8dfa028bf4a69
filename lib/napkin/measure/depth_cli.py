"""``python -m napkin depth``: decode speed against context depth, MHA beside GQA."""

from __future__ import annotations

import argparse
import json
import sys

from . import depth
from .results import MeasurementUnavailable
from .session import quiet, stderr_progress


def add_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("--quick", action="store_true",
                   help=f"depths {', '.join(map(str, depth.QUICK.depths))} (seconds); "
                        f"default: {', '.join(map(str, depth.FULL.depths))}")
    p.add_argument("--llama-bench", metavar="PATH", help="a llama-bench binary to use")
    p.add_argument("--threads", type=int, metavar="N", help="threads (default: all cores)")
    p.add_argument("--bandwidth", type=float, metavar="GB_PER_S",
                   help="the bandwidth for the prediction, instead of the GPU's spec or the "
                        "CPU memory probe")
    p.add_argument("--json", action="store_true", help="print the result record as JSON")
    p.add_argument("--out", metavar="DIR", help="where to save the result (default: results/)")


def main(args: argparse.Namespace) -> int:
    if args.threads is not None and args.threads < 1:
        print("error: --threads must be at least 1", file=sys.stderr)
        return 2
    if args.bandwidth is not None and args.bandwidth <= 0:
        print(f"error: --bandwidth must be a positive number of GB/s, got {args.bandwidth}",
              file=sys.stderr)
        return 2
    plan = depth.QUICK if args.quick else depth.FULL
    try:
        record = depth.run(plan, llama_bench=args.llama_bench, threads=args.threads,
                           bandwidth_gb_per_s=args.bandwidth,
                           progress=quiet if args.json else stderr_progress)
    except (MeasurementUnavailable, ValueError, RuntimeError) as err:
        print(f"error: {err}", file=sys.stderr)
        return 1
    path = depth.save(record, args.out)
    print(json.dumps(record, indent=2) if args.json else depth.table(record))
    if not args.json:
        print(f"\nSaved {path}")
    return 0
