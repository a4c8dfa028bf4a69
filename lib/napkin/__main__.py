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
    from .folders import writable

    try:
        if getattr(args, "out", None):  # a folder that cannot be written stops it before work
            writable(args.out)
        return run(args)
    except ValueError as err:  # bad input: one line that names it, no traceback
        print(f"error: {err}", file=sys.stderr)
        return 2
    except OSError as err:  # a path that went bad while it ran (a full disk, a removed folder)
        where = f"{err.filename}: " if err.filename else ""
        print(f"error: {where}{err.strerror or err}", file=sys.stderr)
        return 1


def run(args: argparse.Namespace) -> int:
    if args.command == "measure":
        from .measure import cli as measure_cli

        return measure_cli.main(args)
    if args.command == "depth":
        from .measure import depth_cli

        return depth_cli.main(args)
    if args.command == "verify":
        from .measure import verify_cli

        return verify_cli.main(args)
    if args.command in ("share", "results"):
        from .readers import cli as readers_cli

        return getattr(readers_cli, args.command)(args)
    if args.command == "figures":
        from .exports import export_all

        written = export_all(args.out,
                             progress=lambda m: print(f"[figures] {m}", flush=True))
        print(f"{len(written)} figures exported to {args.out}")
        return 0
    return 2  # pragma: no cover - argparse rejects unknown commands


if __name__ == "__main__":
    sys.exit(main())
