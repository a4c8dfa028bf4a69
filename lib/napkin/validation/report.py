"""The errors, as factors: every usable row predicted by each stored fit, summarised per group,
split and case, and the cross-validated bands other chapters quote.

An error is a factor, ``exp(|ln(predicted / measured)|)``: a prediction twice or half the
measured value is off by x2 either way, and a latency row counts the same as a throughput
row. A group's error is the median and the 90th percentile of its rows' factors; its *bias*
is the median of the signed log-ratio turned into a factor, signed by speed, so that a bias
above 1 always means the model promises more speed than the servers delivered (more tokens
per second, or less time) and below 1 less, whatever the row's unit.
"""

from __future__ import annotations

import math

import numpy as np
import pandas as pd

from .. import tables
from ..predict.calibration import MODEL, PARAMETERS_TABLE, STACKS_TABLE, stored, stored_stacks
from .derive import CROSSVAL_TABLE, FIXED, rows
from .fitting import STRUCTURES
from .rows import group_of
from .scoring import READS, predict_cases, prepare

__all__ = ["bands", "BANDS", "BUYER_FOLDS", "POOLED_FOLDS", "case_of", "CASES", "seen_in", "crossval", "error_band", "error_table", "errors",
           "factor_stats", "PEER_TABLE", "peer_errors", "scored", "with_rows"]

#: The scenarios other chapters quote, and the groups of rows each covers.
BANDS = {"offline": ("MLPerf Offline",),
         "server": ("MLPerf Server/Interactive",),
         "static": ("Argonne static batch",),
         "published": None,  # every other published table
         "all": None}
#: The folds the ``"new"``, ``"seen"`` and ``"all"`` cases pool (a row scored in several
#: counts once per fold): a new chip family, model, MLPerf round or prompt length.
POOLED_FOLDS = ("round", "chip family", "model", "length")
#: Every kind of fold :func:`napkin.validation.derive.folds` makes.
FOLD_KINDS = POOLED_FOLDS + ("campaign", "stack", "pace")
#: The buyer's cases: one fold kind each, which scores every row once
#: (:func:`napkin.validation.derive.folds`), and the rows of it read: ``"new stack"`` is a
#: buyer's question, a chip and model the fit has not seen together, on a stack it has not
#: seen;
#: ``"new campaign"`` every row of a campaign left out whole.
BUYER_FOLDS = {"new stack": ("stack", "new"), "new campaign": ("campaign", None)}
CASES = ("new", "seen", "all") + tuple(BUYER_FOLDS)
_CASE_TEXT = {"new": "a chip and model the fit had not seen together",
              "seen": "a chip and model the fit had seen",
              "all": "every cross-validated row",
              "new stack": "a chip and model the fit had not seen together, on a serving "
                           "stack it had not seen, each row once",
              "new campaign": "a measurement campaign the fit had not seen, each row once"}
#: A peer calculator's predictions of the published rows (``benchmarks/peer_llm_analysis.py``).
PEER_TABLE = "peer_llm_analysis"


def factor_stats(log_ratio, speed) -> dict:
    """Rows, median and 90th-percentile factor error, and the speed bias factor."""
    a = np.abs(np.asarray(log_ratio, dtype=float))
    n = int(len(a))
    if not n:
        return {"n": 0, "median": math.nan, "p90": math.nan, "bias": math.nan}
    return {"n": n, "median": float(np.exp(np.median(a))),
            "p90": float(np.exp(np.quantile(a, 0.9))),
            "bias": float(np.exp(np.median(np.asarray(speed, dtype=float))))}


def _errors(df: pd.DataFrame) -> pd.DataFrame:
    """``log_ratio`` and ``speed`` (the log-ratio signed so that + promises more speed) of
    rows with a ``predicted`` and a ``measured`` value; rows not predicted are dropped."""
    df = df[df["predicted"].gt(0) & np.isfinite(df["predicted"])].copy()
    df["log_ratio"] = np.log(df["predicted"] / df["measured"])
    rate = df["kind"].str.contains("rate")
    df["speed"] = np.where(rate, df["log_ratio"], -df["log_ratio"])
    df["factor"] = np.exp(df["log_ratio"].abs())
    return df


def _case_vs(train: pd.DataFrame, df: pd.DataFrame) -> np.ndarray:
    pairs = set(zip(train["chip"], train["model"]))
    return np.array(["seen" if p in pairs else "new" for p in zip(df["chip"], df["model"])])


#: Every table the scored rows depend on: the published rows and the stored fits.
SCORED_READS = READS + (PARAMETERS_TABLE, STACKS_TABLE)


@tables.cached(*SCORED_READS)
def scored(fit: str = FIXED) -> pd.DataFrame:
    """Every usable row predicted by every structure stored for ``fit`` (long: one row per
    published row and structure), with its errors, group, split and case (``"seen"`` when
    the fixed split's training rows hold its chip and model together)."""
    cases = rows()
    cases = cases.assign(group=group_of(cases),
                         case=_case_vs(cases[cases["split"] == "train"], cases))
    prepared = prepare(cases)
    parts = []
    for name in STRUCTURES:
        try:
            cal = stored(fit, name)
        except ValueError:
            continue
        pred = predict_cases(cases, cal, prepared, stored_stacks(fit, name))
        parts.append(cases.assign(structure=name, predicted=pred.to_numpy(float)))
    return _errors(pd.concat(parts, ignore_index=True))


def errors(structure: str = MODEL, fit: str = FIXED) -> pd.DataFrame:
    """:func:`scored` for one structure."""
    s = scored(fit)
    return s[s["structure"] == structure].reset_index(drop=True)


def error_table(by=("group",), frame: pd.DataFrame | None = None,
                structures=None) -> pd.DataFrame:
    """Factor errors (:func:`factor_stats`) per ``by``, split and structure."""
    df = scored() if frame is None else frame
    if structures is not None:
        df = df[df["structure"].isin(structures)]
    keys = list(by) + ["split", "structure"]
    out = [{**dict(zip(keys, k if isinstance(k, tuple) else (k,))),
            **factor_stats(g["log_ratio"], g["speed"])}
           for k, g in df.groupby(keys, sort=True)]
    return pd.DataFrame(out)


def with_rows(predictions: pd.DataFrame) -> pd.DataFrame:
    """Predictions of published rows (``table``, ``row_id``, ``predicted``) joined with each
    row's measurement, chip, model, family, stack and group, and their errors."""
    cases = rows()[["table", tables.ROW_ID, "measured", "kind", "chip", "model", "source",
                    "scenario", "family", "stack"]].copy()
    cases["group"] = group_of(cases)
    return _errors(predictions.merge(cases, on=["table", tables.ROW_ID], how="inner"))


@tables.cached(*SCORED_READS, CROSSVAL_TABLE)
def _crossval(kinds: tuple[str, ...]) -> pd.DataFrame:
    stored_cv = tables.load(CROSSVAL_TABLE)
    stored_cv = stored_cv[stored_cv["fold_kind"].isin(kinds)]
    folds = stored_cv[stored_cv["structure"] == MODEL][["fold_kind", "fold", "table",
                                                        tables.ROW_ID, "case"]]
    fitted = set(stored_cv["structure"])
    s = scored()
    unfitted = [folds.merge(s[s["structure"] == name][["table", tables.ROW_ID, "predicted"]],
                            on=["table", tables.ROW_ID]).assign(structure=name)
                for name, structure in STRUCTURES.items()
                if not structure.fitted and name not in fitted]
    return with_rows(pd.concat([stored_cv] + unfitted, ignore_index=True))


def crossval(kinds=POOLED_FOLDS) -> pd.DataFrame:
    """Every out-of-fold prediction in folds of ``kinds`` (:func:`napkin.validation.derive.
    folds`; by default those the ``"new"``, ``"seen"`` and ``"all"`` cases pool): those
    :func:`napkin.validation.derive.crossval` stored for the fitted structures, and for the
    structures that fit nothing (the essay's rule, the plain roofline) their predictions of
    the same rows in the same folds; each with its row's measurement, group and errors.
    ``kinds`` is one fold kind or several."""
    kinds = (kinds,) if isinstance(kinds, str) else tuple(kinds)
    known = FOLD_KINDS
    unknown = [k for k in kinds if k not in known]
    if unknown:
        raise ValueError(f"no fold kind {', '.join(map(repr, unknown))} in "
                         f"data/{CROSSVAL_TABLE}.csv; known: {', '.join(known)}")
    return _crossval(kinds)


def _in_case(case: str, frame: pd.DataFrame | None = None) -> pd.DataFrame:
    """The out-of-fold predictions of ``case`` (:data:`CASES`): a buyer's case reads its own
    fold kind, the others the pooled folds (or ``frame``) by their ``case`` column."""
    if case not in CASES:
        raise ValueError(f"unknown case {case!r}; known: {', '.join(CASES)}")
    if case in BUYER_FOLDS:
        kind, pair = BUYER_FOLDS[case]
        cv = crossval((kind,))
        return cv if pair is None else cv[cv["case"] == pair]
    cv = crossval() if frame is None else frame
    return cv if case == "all" else cv[cv["case"] == case]


def _in_scenario(df: pd.DataFrame, scenario: str) -> pd.DataFrame:
    if scenario not in BANDS:
        raise ValueError(f"unknown scenario {scenario!r}; known: {', '.join(BANDS)}")
    groups = BANDS[scenario]
    if groups is not None:
        return df[df["group"].isin(groups)]
    if scenario == "published":
        return df[~df["group"].str.startswith(("MLPerf", "Argonne"))]
    return df


def bands(structures=None, frame: pd.DataFrame | None = None) -> pd.DataFrame:
    """The cross-validated errors per scenario, case and structure (a row scored in several
    folds counts once per fold), of :func:`crossval` or of ``frame`` (out-of-fold
    predictions through :func:`with_rows`)."""
    out = []
    for scenario in BANDS:
        for case in CASES if frame is None else CASES[:3]:
            sel = _in_scenario(_in_case(case, frame), scenario)
            for name, g in sel.groupby("structure", sort=False):
                if structures is None or name in structures:
                    out.append({"scenario": scenario, "case": case, "structure": name,
                                **factor_stats(g["log_ratio"], g["speed"])})
    return pd.DataFrame(out)


def seen_in(chips, model: str) -> pd.DataFrame:
    """The published fit's rows (every usable row) that hold one of ``chips`` with ``model``:
    where a prediction for that pair was seen, with each row's ``source`` and ``stack``."""
    r = rows()
    return r[r["chip"].isin(list(chips)) & (r["model"] == model)]


def case_of(chip: str, model: str) -> str:
    """``"seen"`` where the published fit's rows (every usable row) hold ``chip`` and
    ``model`` together, else ``"new"``: which of :func:`error_band`'s cases a prediction for
    that pair belongs to."""
    return "seen" if len(seen_in([chip], model)) else "new"


def error_band(scenario: str = "all", case: str = "new", structure: str = MODEL) -> dict:
    """The cross-validated error of the calibrated model for ``scenario`` (``"offline"``:
    MLPerf Offline; ``"server"``: MLPerf Server and Interactive; ``"static"``: Argonne's
    static-batch latencies; ``"published"``: the engines' and vendors' own tables; ``"all"``)
    and ``case``: ``"new"``, a chip and model the fit has not seen together (the question a reader
    asks of a new machine), ``"seen"``, a chip and model it has, or ``"all"``; or a buyer's
    case, each row counted once: ``"new stack"``, a chip and model the fit has not seen
    together, on a serving stack left out whole (a buyer's own stack), ``"new campaign"``, every row of a
    measurement campaign left out whole. Returns rows,
    median and 90th-percentile factor, speed bias factor, and a sentence to quote."""
    cv = _in_scenario(_in_case(case), scenario)
    cv = cv[cv["structure"] == structure]
    s = factor_stats(cv["log_ratio"], cv["speed"])
    which = _CASE_TEXT[case]
    return {**s, "scenario": scenario, "case": case, "structure": structure,
            "text": (f"within x{s['median']:.2f} of the measured value for half of the rows "
                     f"and x{s['p90']:.2f} for nine in ten ({which}; cross-validated, "
                     f"{s['n']:,} predictions)")}


def peer_errors(table: str = PEER_TABLE) -> pd.DataFrame:
    """A peer calculator's stored predictions (``data/peer_llm_analysis.csv``, made at its
    defaults by ``benchmarks/peer_llm_analysis.py``) beside the rows they predict, with
    their errors; empty when the table is absent."""
    if table not in tables.available():
        return pd.DataFrame()
    peer = tables.load(table)[["table", tables.ROW_ID, "predicted", "tool"]]
    split = rows()[["table", tables.ROW_ID, "split"]]
    return with_rows(peer).merge(split, on=["table", tables.ROW_ID])
