"""Fit the step model and everything chapter 9 compares it with; store the derived tables.

    .venv/bin/python scripts/fit_step_model.py            # refuses to replace existing tables
    .venv/bin/python scripts/fit_step_model.py --overwrite

Writes data/step_model_parameters.csv, data/step_model_stacks.csv and
data/step_model_crossval.csv (napkin.validation.derive says what each holds), each with its
fingerprint (data/<table>.fingerprint.json, napkin.derived): the data files read while
fitting and the code that fitted, which tests/test_derived.py checks. About half an hour on
2 cores: every structure on the fixed split, the published fits on every row, and each
cross-validation fold fitted from scratch. Run scripts/glue_diff.py afterwards to see which
of the book's numbers moved.
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

from napkin import derived, tables
from napkin.validation import derive

REFIT = ".venv/bin/python scripts/fit_step_model.py --overwrite"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--overwrite", action="store_true",
                        help="replace the stored tables (they are refused otherwise)")
    parser.add_argument("--out", default=None, help="write here instead of data/")
    args = parser.parse_args(argv)
    if args.out is not None:  # made now, not found missing after half an hour of fitting
        Path(args.out).mkdir(parents=True, exist_ok=True)
    try:  # ... and tables already there refused now, not after it
        derive.destination(args.out, args.overwrite)
    except ValueError as err:
        print(f"error: {err}", file=sys.stderr)
        return 1
    start = time.time()

    def progress(message: str) -> None:
        print(f"[fit {time.time() - start:6.0f} s] {message}", flush=True)

    try:
        with derived.Reads(tables.data_dir()) as reads:  # before anything is read and cached
            frames = derive.build(progress)
        paths = derive.write(frames, overwrite=args.overwrite, directory=args.out)
    except ValueError as err:
        print(f"error: {err}", file=sys.stderr)
        return 1
    for path in paths:
        print(f"wrote {path} and {derived.stamp(path, reads, Path(derive.__file__), REFIT)}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
