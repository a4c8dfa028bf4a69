"""How the step model reads the book's mixture-of-experts rows (issue 30): one line per row
of a model (default DeepSeek-V3), its measured value, and predicted over measured in three
readings at the published parameters: every engine tensor parallel with one token per step
(the model before it read a row's layout), the published reading (a row's stated
data-parallel attention, decode pool and multi-token prediction read as stated, a row that
states none tensor parallel), and the faster of tensor parallel and data-parallel attention
where a row states none (``Calibration.wide_when_unstated``). Only the middle one is a fit.

    .venv/bin/python scripts/moe_layouts.py [MODEL]
"""

from __future__ import annotations

import sys
from dataclasses import replace

import numpy as np

from napkin.predict import calibrated
from napkin.predict.calibration import stacks
from napkin.validation.rows import all_cases
from napkin.validation.scoring import predict_cases


def main(argv: list[str] | None = None) -> int:
    args = sys.argv[1:] if argv is None else argv
    model = args[0] if args else "DeepSeek-V3"
    cases = all_cases()
    rows = cases[(cases["model"] == model) & cases["ok"]]
    if rows.empty:
        print(f"no recognised rows of {model!r}; models with rows: "
              f"{', '.join(sorted(cases.loc[cases['ok'], 'model'].unique()))}", file=sys.stderr)
        return 1
    published = calibrated()
    readings = {
        "all TP": replace(published, expert_parallel=False, multi_token=False),
        "published": published,
        "wide unstated": replace(published, wide_when_unstated=True)}
    readings = {k: predict_cases(rows, cal, stacks=stacks()) for k, cal in readings.items()}
    print(f"{'row':14} {'source':13} {'scenario':17} {'chip':16} {'chips':>5} "
          f"{'measured':>11} " + " ".join(f"{k:>14}" for k in readings))
    for label, r in rows.iterrows():
        ratios = " ".join(f"{readings[k][label] / r['measured']:>13.2f}x" for k in readings)
        print(f"{r['row_id']:14} {r['source']:13} {r['scenario'][:17]:17} {r['chip'][:16]:16} "
              f"{r['n_chips']:>5.0f} {r['measured']:>11,.1f} {ratios}")
    for k, p in readings.items():
        miss = np.exp(np.abs(np.log(p / rows["measured"])))
        print(f"{k}: median miss x{miss.median():.2f} over {miss.notna().sum()} rows")
    return 0


if __name__ == "__main__":
    sys.exit(main())
