"""Command line: ``python -m napkin measure`` (and more subcommands as the book grows)."""

from __future__ import annotations

import argparse
import sys


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m napkin",
                                     description="Napkin arithmetic for LLM inference hardware.")
    sub = parser.add_subparsers(dest="command", required=True)
    from .measure import cli as measure_cli

    measure = sub.add_parser("measure", help="measure this machine with llama.cpp",
                             description=measure_cli.__doc__)
    measure_cli.add_arguments(measure)
    from .measure import depth_cli

    depth = sub.add_parser("depth", help="decode speed against context depth, MHA and GQA",
                           description=depth_cli.__doc__)
    depth_cli.add_arguments(depth)
    from .measure import verify_cli

    verify_cli.add_arguments(sub.add_parser("verify", help="what verifying k drafted tokens "
                                            "costs here", description=verify_cli.__doc__))
    from .readers import cli as readers_cli

    readers_cli.add_share_arguments(sub.add_parser(
        "share", help="turn a `make measure` record into a submission for the readers' page",
        description=readers_cli.share.__doc__))
    readers_cli.add_results_arguments(sub.add_parser(
        "results", help="check submissions for the readers' page"))
    figures = sub.add_parser("figures", help="export every figure to SVG/PNG/PDF with its data")
    figures.add_argument("--out", default="_build/figures", help="output folder")
    args = parser.parse_args(argv)
    if args.command == "measure":
        return measure_cli.main(args)
    if args.command == "depth":
        return depth_cli.main(args)
    if args.command == "verify":
        return verify_cli.main(args)
    if args.command == "share":
        return readers_cli.share(args)
    if args.command == "results":
        return readers_cli.results(args)
    if args.command == "figures":
        from pathlib import Path

        from .exports import book_notebooks, export_all

        written = export_all(Path(args.out), book_notebooks(),
                             progress=lambda m: print(f"[figures] {m}", flush=True))
        print(f"{len(written)} figures exported to {args.out}")
        return 0
    return 2  # pragma: no cover - argparse rejects unknown commands


if __name__ == "__main__":
    sys.exit(main())
