"""``python -m napkin verify``: what a verify step of several tokens costs on this machine,
and, with ``--model`` and ``--draft``, speculative decoding end to end."""

from __future__ import annotations

import argparse
import json
import sys

from . import record as records
from . import verify
from .results import MeasurementUnavailable
from .session import quiet, stderr_progress
from .verify_report import table


def add_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("--quick", action="store_true",
                   help=f"steps of {', '.join(map(str, verify.QUICK.tokens))} tokens at depths "
                        f"{', '.join(map(str, verify.QUICK.depths))} (seconds); default: more")
    p.add_argument("--model", metavar="PATH", help="a real GGUF target: run speculative "
                   "decoding end to end with --draft (acceptance needs real weights)")
    p.add_argument("--draft", metavar="PATH", help="a smaller GGUF sharing the target's "
                   "vocabulary")
    p.add_argument("--k", type=int, default=4, metavar="N", help="drafted tokens per cycle "
                   "(end to end; default 4)")
    p.add_argument("--tokens", type=int, default=128, metavar="N",
                   help="tokens to generate end to end (default 128)")
    p.add_argument("--threads", type=int, metavar="N", help="threads (default: all cores)")
    p.add_argument("--json", action="store_true", help="print the result record as JSON")
    p.add_argument("--out", metavar="DIR", help="where to save the result (default: results/)")


def main(args: argparse.Namespace) -> int:
    if args.threads is not None and args.threads < 1:
        print("error: --threads must be at least 1", file=sys.stderr)
        return 2
    if bool(args.model) != bool(args.draft):
        print("error: --model and --draft go together (a target and its draft)", file=sys.stderr)
        return 2
    progress = quiet if args.json else stderr_progress
    try:
        if args.model:
            result = verify.speculate(args.model, args.draft, args.k, args.tokens,
                                      threads=args.threads, progress=progress)
            text = verify.speculate_sentence(result).replace("**", "")
        else:
            plan = verify.QUICK if args.quick else verify.FULL
            result = verify.run(plan, threads=args.threads, progress=progress)
            text = table(result)
    except (MeasurementUnavailable, ValueError, RuntimeError) as err:
        print(f"error: {err}", file=sys.stderr)
        return 1
    path = records.save(result | {"mode": "speculate" if args.model else
                                  f"verify-{result['mode']}"}, args.out)
    print(json.dumps(result, indent=2) if args.json else text)
    if not args.json:
        print(f"\nSaved {path}")
    return 0
