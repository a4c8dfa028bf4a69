"""``python -m napkin``: the book's one command line.

Every subcommand is a row of :data:`COMMANDS`, and the arguments the measurements share are
declared once, in :data:`SHARED`, so ``measure``, ``depth`` and ``verify`` cannot drift apart.
Exit status: 0 done, 1 it could not be done here (no llama.cpp, a refused submission), 2 bad
input, said in one line that names it, before any work starts.
"""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Callable
from pathlib import Path
from typing import NamedTuple

#: Where a reader pastes a submission instead of opening a pull request.
ISSUE_FORM = ("https://github.com/napkin-book/prefill-decode/issues/new?"
              "template=reader-result.yml")

#: The arguments the measurements share: name (the flag without ``--``) -> how it parses.
SHARED = {
    "llama-bench": dict(metavar="PATH", help="a llama-bench binary to use (a Metal or CUDA "
                        "build, say); by default $LLAMA_BENCH, else one on PATH, else llama.cpp "
                        "in-process through llama-cpp-python"),
    "threads": dict(type=int, metavar="N", help="threads (default: all cores)"),
    "bandwidth": dict(type=float, metavar="GB_PER_S",
                      help="use this bandwidth for the ceiling instead of the GPU's spec or the "
                           "CPU memory probe (needed on a GPU that data/hardware_specs.csv "
                           "lacks; also $NAPKIN_BANDWIDTH_GB_PER_S)"),
    "json": dict(action="store_true", help="print the result record as JSON"),
    "out": dict(metavar="DIR", help="where to save the result (default: results/)"),
}

#: Numbers argparse accepts but a measurement cannot use: the argument, the test it must pass,
#: and the message when it does not (exit 2, like any bad input).
LIMITS = (("reps", lambda n: n >= 1, "--reps must be at least 1"),
          ("threads", lambda n: n >= 1, "--threads must be at least 1"),
          ("bandwidth", lambda x: x > 0, "--bandwidth must be a positive number of GB/s, got {}"))


class Command(NamedTuple):
    """A subcommand: its ``name`` and one-line ``help``; ``run``, which takes the parsed
    arguments and returns the exit status; the ``description`` its ``--help`` shows; ``quick``,
    the help of its ``--quick`` (what the quick plan measures) if it has one; ``arguments``,
    which adds its own arguments; and the :data:`SHARED` ones it takes, in order."""

    name: str
    help: str
    run: Callable[[argparse.Namespace], int]
    description: str | None = None
    quick: Callable[[], str] | None = None
    arguments: Callable[[argparse.ArgumentParser], None] | None = None
    shared: tuple[str, ...] = ()


def _measured(args: argparse.Namespace, measure, save, report) -> int:
    """Run ``measure(progress)``, save its record with ``save(record, args.out)`` and print the
    record as JSON or ``report(record)``; exit 1 with one line when this machine cannot run it."""
    from .measure.results import MeasurementUnavailable
    from .measure.session import quiet, stderr_progress

    try:
        record = measure(quiet if args.json else stderr_progress)
        text = None if args.json else report(record)
    except (MeasurementUnavailable, ValueError, RuntimeError) as err:
        print(f"error: {err}", file=sys.stderr)
        return 1
    path = save(record, args.out)
    print(json.dumps(record, indent=2) if args.json else text)
    if not args.json:
        print(f"\nSaved {path}")
    return 0


def _llama_cpp(args: argparse.Namespace, progress) -> dict:
    """The :data:`MEASUREMENT` arguments as ``session.run`` and ``depth.run`` both take them."""
    return dict(llama_bench=args.llama_bench, threads=args.threads,
                bandwidth_gb_per_s=args.bandwidth, progress=progress)


def _measure_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("--model", metavar="PATH", help="measure a real GGUF instead of synthetic "
                   "ones (e.g. llama-2-7b.Q4_0.gguf)")
    p.add_argument("--reps", type=int, metavar="N", help="repetitions per test")


def _measure(args: argparse.Namespace) -> int:
    from dataclasses import replace

    from .measure import record, session

    plan = session.QUICK if args.quick else session.FULL
    if args.reps is not None:
        plan = replace(plan, reps=args.reps)
    return _measured(args, lambda progress: session.run(
        plan, model=args.model, **_llama_cpp(args, progress)), record.save, record.table)


def _depth_quick() -> str:
    from .measure import depth

    return (f"depths {', '.join(map(str, depth.QUICK.depths))} (seconds); "
            f"default: {', '.join(map(str, depth.FULL.depths))}")


def _depth(args: argparse.Namespace) -> int:
    from .measure import depth

    plan = depth.QUICK if args.quick else depth.FULL
    return _measured(args, lambda progress: depth.run(plan, **_llama_cpp(args, progress)),
                     depth.save, depth.table)


def _verify_quick() -> str:
    from .measure import verify

    return (f"steps of {', '.join(map(str, verify.QUICK.tokens))} tokens at depths "
            f"{', '.join(map(str, verify.QUICK.depths))} (seconds); default: more")


def _verify_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("--model", metavar="PATH", help="a real GGUF target: run speculative "
                   "decoding end to end with --draft (acceptance needs real weights)")
    p.add_argument("--draft", metavar="PATH", help="a smaller GGUF sharing the target's "
                   "vocabulary")
    p.add_argument("--k", type=int, default=4, metavar="N", help="drafted tokens per cycle "
                   "(end to end; default 4)")
    p.add_argument("--tokens", type=int, default=128, metavar="N",
                   help="tokens to generate end to end (default 128)")


def _verify(args: argparse.Namespace) -> int:
    from .measure import record, verify, verify_report

    if bool(args.model) != bool(args.draft):
        raise ValueError("--model and --draft go together (a target and its draft)")
    if args.model:
        return _measured(args, lambda progress: verify.speculate(
            args.model, args.draft, args.k, args.tokens, threads=args.threads,
            progress=progress), lambda r, out: record.save(r | {"mode": "speculate"}, out),
            lambda r: verify.speculate_sentence(r).replace("**", ""))
    plan = verify.QUICK if args.quick else verify.FULL
    return _measured(args, lambda progress: verify.run(plan, threads=args.threads,
                                                       progress=progress),
                     lambda r, out: record.save(r | {"mode": f"verify-{r['mode']}"}, out),
                     verify_report.table)


def _share_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("record", nargs="?", metavar="RESULT.json",
                   help="a `make measure` record (default: the newest under results/)")
    p.add_argument("--out", metavar="DIR", help="where to write it (default: results/share/)")


def _share(args: argparse.Namespace) -> int:
    from .measure import record
    from .readers import check, submission

    try:
        path = Path(args.record) if args.record else submission.latest_record()
        doc = submission.from_record(record.load(path))
    except (ValueError, KeyError) as err:
        what = f"field {err} missing" if isinstance(err, KeyError) else str(err)
        print(f"error: cannot share: {what}", file=sys.stderr)
        return 1
    problems = check.check_document(doc, submission.file_name(doc))
    if problems:
        print("error: this measurement would be refused, so nothing was written:\n"
              + "\n".join(f"  {p}" for p in problems), file=sys.stderr)
        return 1
    try:
        out = submission.write(doc, Path(args.out) if args.out else None)
    except FileExistsError as err:
        print(f"error: {err.filename} exists already (this measurement was shared before); "
              "nothing was overwritten", file=sys.stderr)
        return 1
    print(json.dumps(doc, indent=2))
    print(f"\nWrote {out} from {path.name}. It passes `python -m napkin results check`.\n"
          f"To put your machine on the readers' page, either\n"
          f"  - open a pull request that adds it as data/readers/{out.name}, or\n"
          f"  - paste it into the issue form: {ISSUE_FORM}")
    return 0


def _results_arguments(p: argparse.ArgumentParser) -> None:
    from .readers import check

    sub = p.add_subparsers(dest="results_command", required=True)
    c = sub.add_parser("check", help="check submissions (napkin-result/1)",
                       description=check.__doc__)
    c.add_argument("files", nargs="+", metavar="FILE")


def _results(args: argparse.Namespace) -> int:
    from .readers import check

    problems = check.check_files(args.files)
    for p in problems:
        print(p)
    if not problems:
        print(f"{len(args.files)} file{'s' if len(args.files) != 1 else ''} valid")
    return 1 if problems else 0


def _figures_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("--out", default="_build/figures", help="output folder")


def _figures(args: argparse.Namespace) -> int:
    from . import exports

    written = exports.export_all(args.out,
                                 progress=lambda m: print(f"[figures] {m}", flush=True))
    print(f"{len(written)} figures exported to {args.out}")
    return 0


#: What ``measure`` and ``depth`` both take (``verify`` runs in-process: threads, json, out).
MEASUREMENT = ("llama-bench", "threads", "bandwidth", "json", "out")

COMMANDS = (
    Command("measure", "measure this machine with llama.cpp", _measure,
            description="``python -m napkin measure``: this machine's napkin ceiling against "
                        "llama.cpp.",
            quick=lambda: "one small Q8_0 model, pp128/tg64, 3 repetitions (seconds)",
            arguments=_measure_arguments, shared=MEASUREMENT),
    Command("depth", "decode speed against context depth, MHA and GQA", _depth,
            description="``python -m napkin depth``: decode speed against context depth, MHA "
                        "beside GQA.",
            quick=_depth_quick, shared=MEASUREMENT),
    Command("verify", "what verifying k drafted tokens costs here", _verify,
            description="``python -m napkin verify``: what a verify step of several tokens "
                        "costs on this machine, and, with ``--model`` and ``--draft``, "
                        "speculative decoding end to end.",
            quick=_verify_quick, arguments=_verify_arguments, shared=("threads", "json", "out")),
    Command("share", "turn a `make measure` record into a submission for the readers' page",
            _share, description="Make the submission, check it as a reviewer would, write it, "
                                "say how to submit it.", arguments=_share_arguments),
    Command("results", "check submissions for the readers' page", _results,
            arguments=_results_arguments),
    Command("figures", "export every figure to SVG/PNG/PDF with its data", _figures,
            arguments=_figures_arguments),
)


def parser() -> argparse.ArgumentParser:
    """The one parser: a subparser per row of :data:`COMMANDS`."""
    top = argparse.ArgumentParser(prog="python -m napkin",
                                  description="Napkin arithmetic for LLM inference hardware.")
    sub = top.add_subparsers(dest="command", required=True)
    for c in COMMANDS:
        p = sub.add_parser(c.name, help=c.help, description=c.description)
        p.set_defaults(run=c.run)
        if c.quick:
            p.add_argument("--quick", action="store_true", help=c.quick())
        if c.arguments:
            c.arguments(p)
        for name in c.shared:
            p.add_argument(f"--{name}", **SHARED[name])
    return top


def main(argv: list[str] | None = None) -> int:
    """Parse, check the output folder and :data:`LIMITS`, run; bad input and a path that goes
    bad while it runs are one line on stderr, never a traceback."""
    args = parser().parse_args(argv)
    from .folders import writable

    try:
        if getattr(args, "out", None):  # a folder that cannot be written stops it before work
            writable(args.out)
        for name, ok, message in LIMITS:
            value = getattr(args, name, None)
            if value is not None and not ok(value):
                raise ValueError(message.format(value))
        return args.run(args)
    except ValueError as err:  # bad input: one line that names it, no traceback
        print(f"error: {err}", file=sys.stderr)
        return 2
    except OSError as err:  # a path that went bad while it ran (a full disk, a removed folder)
        where = f"{err.filename}: " if err.filename else ""
        print(f"error: {where}{err.strerror or err}", file=sys.stderr)
        return 1
