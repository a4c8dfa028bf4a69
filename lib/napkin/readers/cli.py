"""``python -m napkin share`` and ``python -m napkin results check``: the readers' commands."""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

from . import check, submission

ISSUE_FORM = ("https://github.com/napkin-book/prefill-decode/issues/new?"
              "template=reader-result.yml")


def add_share_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("record", nargs="?", metavar="RESULT.json",
                   help="a `make measure` record (default: the newest under results/)")
    p.add_argument("--out", metavar="DIR", help="where to write it (default: results/share/)")


def add_results_arguments(p: argparse.ArgumentParser) -> None:
    sub = p.add_subparsers(dest="results_command", required=True)
    c = sub.add_parser("check", help="check submissions (napkin-result/1)",
                       description=check.__doc__)
    c.add_argument("files", nargs="+", metavar="FILE")


def share(args: argparse.Namespace) -> int:
    """Make the submission, check it as a reviewer would, write it, say how to submit it."""
    from ..measure import record as records

    try:
        path = Path(args.record) if args.record else submission.latest_record()
        doc = submission.from_record(records.load(path))
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


def results(args: argparse.Namespace) -> int:
    problems = check.check_files(args.files)
    for p in problems:
        print(p)
    if not problems:
        print(f"{len(args.files)} file{'s' if len(args.files) != 1 else ''} valid")
    return 1 if problems else 0
