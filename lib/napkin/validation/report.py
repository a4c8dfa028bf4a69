"""The errors: every recognised row scored by the calibrated model and the plain roofline,
summarised per group and split, and the held-out band other chapters quote."""

from __future__ import annotations

import math
from functools import lru_cache

import pandas as pd

from ..predict.calibration import ROOFLINE
from .fitting import fit, impossible
from .rows import all_cases, group_of
from .scoring import _predict, predict_cases, prepare

# -- errors ----------------------------------------------------------------------------------

@lru_cache(maxsize=1)
def scored() -> pd.DataFrame:
    """Every recognised published row with its measured value and both predictions (the
    calibrated step model and the plain roofline), the relative errors, its split, its group
    and whether it is :func:`impossible`. Recomputed from ``data/`` (cached for the session)."""
    cases = all_cases()
    ok = cases[cases["ok"]].copy()
    prepared = prepare(ok)
    ok["predicted"], ok["tp_used"] = _predict(ok, fit().calibration, prepared)
    ok["roofline"] = predict_cases(ok, ROOFLINE, prepared)
    ok["impossible"] = impossible(ok, ok["roofline"])
    ok = ok[ok["predicted"].notna() & ok["measured"].gt(0)].copy()
    ok["error"] = ok["predicted"] / ok["measured"] - 1
    ok["roofline_error"] = ok["roofline"] / ok["measured"] - 1
    ok["group"] = group_of(ok)
    return ok.reset_index(drop=True)


def errors() -> pd.DataFrame:
    """:func:`scored` without the rows measured faster than the chip's peaks allow."""
    s = scored()
    return s[~s["impossible"]].reset_index(drop=True)


def _stats(e: pd.Series) -> dict:
    a = e.abs()
    return {"n": int(len(e)), "median_abs": float(a.median()) if len(e) else math.nan,
            "p90_abs": float(a.quantile(0.9)) if len(e) else math.nan,
            "bias": float(e.median()) if len(e) else math.nan}


def error_table(by=("group",), frame: pd.DataFrame | None = None) -> pd.DataFrame:
    """Error statistics per ``by`` and split: rows, median and 90th-percentile absolute
    relative error and bias (median signed error), for the calibrated model and, on the same
    rows, the plain roofline. Duplicated MLPerf rows count once."""
    df = errors() if frame is None else frame
    df = df[~df["duplicate"]]
    out = []
    for keys, g in df.groupby(list(by) + ["split"], sort=True):
        keys = keys if isinstance(keys, tuple) else (keys,)
        cal, roof = _stats(g["error"]), _stats(g["roofline_error"].dropna())
        out.append({**dict(zip(list(by) + ["split"], keys)), "n": cal["n"],
                    "median_abs": cal["median_abs"], "p90_abs": cal["p90_abs"],
                    "bias": cal["bias"], "roofline_median_abs": roof["median_abs"],
                    "roofline_p90_abs": roof["p90_abs"], "roofline_bias": roof["bias"]})
    return pd.DataFrame(out)


#: The scenarios other chapters quote, and the groups of :func:`errors` each covers.
BANDS = {"offline": ("MLPerf Offline",),
         "server": ("MLPerf Server/Interactive",),
         "static": ("Argonne static batch",),
         "all": None}


def error_band(scenario: str = "all") -> dict:
    """The held-out error of the calibrated model for ``scenario`` (``"offline"``: MLPerf
    Offline; ``"server"``: MLPerf Server and Interactive; ``"static"``: Argonne's static-batch
    latencies; ``"all"``: every held-out row): rows, median and 90th-percentile absolute
    relative error, bias, and a sentence other chapters can quote."""
    if scenario not in BANDS:
        raise ValueError(f"unknown scenario {scenario!r}; known: {', '.join(BANDS)}")
    df = errors()
    df = df[(df["split"] == "test") & ~df["duplicate"]]
    groups = BANDS[scenario]
    if groups is not None:
        df = df[df["group"].isin(groups)]
    s = _stats(df["error"])
    roof = _stats(df["roofline_error"].dropna())
    s |= {"roofline_median_abs": roof["median_abs"], "roofline_p90_abs": roof["p90_abs"],
          "roofline_bias": roof["bias"]}
    s["scenario"] = scenario
    s["text"] = (f"within ±{s['median_abs']:.0%} of measured servers for half of the "
                 f"held-out rows, ±{s['p90_abs']:.0%} for nine in ten")
    return s
