"""Predicting what each published row measured, in its own unit.

:func:`prepare` builds one engine per recognised row (one per tensor-parallel size where the
row does not say which ran; the best is kept, as a submitter would keep it);
:func:`predict_cases` costs them all at once with a calibration; :func:`predict_rows` is the
whole path from a table to a Series of predictions.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, replace
from typing import Mapping

import numpy as np
import pandas as pd

from ..predict import calibration as calib
from ..predict.calibration import Calibration
from ..predict import software
from ..predict.engines import Constants, engine
from ..predict.software import Stack
from ..predict.serve import (closed_loop, decode_step_seconds, memory_batch, static_batch,
                             steady_step, under_limits)
from ..predict.step import cost, decode_work
from .. import catalog, tables
from ..predict.multitoken import accepted_tokens
from .rows import DP_CHOICES, READS as ROW_READS, TP_CHOICES, interpret

# -- predicting what each row measured -------------------------------------------------------

def _opt(x):
    return None if x is None or (isinstance(x, float) and math.isnan(x)) else float(x)


#: Every table an engine is built from (:func:`napkin.predict.engines.engine`).
ENGINE_READS = ("hardware_specs", "models", "models/", "scaleup_topology", "serving_links",
                "serving_papers_claims")
#: Every table that scoring the published rows depends on: what derived results are
#: remembered against (:func:`napkin.tables.cached`).
READS = tuple(dict.fromkeys(ROW_READS + ENGINE_READS + ("mtp_acceptance_length",)))


@tables.cached(*ENGINE_READS)
def _engine(chip, model, tp, pp, weights, kv, share, bw, cap, peer, dp=1):
    if dp > 1:
        return engine(chip, model, n_chips=dp, weights=weights, kv=kv, share_of_chip=share,
                      bandwidth_GB_per_s=bw, capacity_GiB=cap, attention_dp=True)
    return engine(chip, model, n_chips=tp, weights=weights, kv=kv, pipeline=pp,
                  share_of_chip=share, bandwidth_GB_per_s=bw, capacity_GiB=cap,
                  peer_link_GB_per_s=peer)


def _choices(c) -> list[tuple[str, int, int]]:
    """(layout, tp, dp) for each way a row may have run: its stated layout (``dp``:
    data-parallel attention with the experts spread as the row states, and beside it
    ``tp-fallback``, its tensor-parallel reading, which the model runs without
    ``Calibration.expert_parallel``), else every tensor-parallel size of :data:`TP_CHOICES`
    that divides its chips (``tp``), and for a mixture of experts every group of
    :data:`DP_CHOICES` that does (``dp-unstated``, only with
    ``Calibration.wide_when_unstated``)."""
    pp = int(c["pp"])
    if not math.isnan(c["dp"]):
        fallback = int(c["tp"]) if c["tp"] > 1 else 8  # an EP-only row: a server's TP8
        return [("dp", 1, int(c["dp"])), ("tp-fallback", fallback, 1)]
    if not math.isnan(c["tp"]):
        return [("tp", int(c["tp"]), 1)]
    n = int(c["n_chips"])
    out = [("tp", t, 1) for t in TP_CHOICES if t * pp <= n and n % (t * pp) == 0]
    if pp == 1 and catalog.is_moe(c["model"]):
        out += [("dp-unstated", 1, d) for d in DP_CHOICES if d <= n and n % d == 0]
    return out


@dataclass
class Prepared:
    """Rows ready to predict: one element per (row, tensor-parallel choice)."""

    cases: pd.DataFrame        # the recognised rows' cases, one per choice
    constants: Constants
    row: np.ndarray            # position of each choice's row in ``index``
    index: pd.Index            # the recognised rows
    declined: dict             # index label -> reason, for rows no engine could be built for


def prepare(cases: pd.DataFrame) -> Prepared:
    """Engines for every recognised row, one per layout it may have run (:func:`_choices`)
    that holds the model."""
    items, engines, positions, declined = [], [], [], {}
    keys = {}
    ok = cases[cases["ok"]]
    for pos, (label, c) in enumerate(ok.iterrows()):
        built = 0
        last = ""
        for layout, tp, dp in _choices(c):
            key = (c["chip"], c["model"], tp, int(c["pp"]), c["weights"], c["kv"],
                   float(c["share"]), _opt(c["bandwidth_GB_per_s"]), _opt(c["capacity_GiB"]),
                   _opt(c["peer_GB_per_s"]), dp)
            if key not in keys:
                try:
                    engines.append(_engine(*key))
                    keys[key] = len(engines) - 1
                except ValueError as err:
                    keys[key] = str(err)
            if isinstance(keys[key], str):
                last = keys[key]
                continue
            case = c.copy()
            case["tp"], case["dp"], case["layout"] = float(tp), float(dp), layout
            case["engine"] = keys[key]
            items.append(case)
            positions.append(pos)
            built += 1
        if not built:
            declined[label] = f"no engine: {last}"
    frame = pd.DataFrame(items).reset_index(drop=True) if items else pd.DataFrame(
        columns=list(cases.columns) + ["engine", "layout"])
    consts = Constants.of(engines) if engines else None
    if consts is not None:
        consts = consts.take(frame["engine"].to_numpy(dtype=int))
    return Prepared(frame, consts, np.array(positions, dtype=int), ok.index, declined)


def _values(p: Prepared, cal: Calibration) -> tuple[np.ndarray, np.ndarray]:
    """Each choice's prediction in its row's unit, and the total output rate that ranks the
    choices of one row (the best is what a submitter would run)."""
    c, f = _drafting(p.constants, p.cases, cal), p.cases
    n = len(f)
    value = np.full(n, np.nan)
    rank = np.zeros(n)
    kind = f["kind"].to_numpy()
    i = f["input_tokens"].to_numpy(float)
    o = f["output_tokens"].to_numpy(float)
    b = f["batch"].to_numpy(float)
    chips = f["tp"].to_numpy(float) * f["pp"].to_numpy(float) * f["dp"].to_numpy(float)
    engines = f["n_chips"].to_numpy(float) / chips
    engines = np.where(np.isnan(engines), 1.0, engines)
    scale = f["scale"].to_numpy(float)

    def pick(mask):
        return np.flatnonzero(mask)

    static = pick(np.char.startswith(kind.astype(str), "static"))
    if len(static):
        cs = c.take(static)
        run = static_batch(cs, b[static], i[static], o[static], cal)
        rate = b[static] * o[static] / run["e2e_s"]
        k = kind[static]
        value[static] = np.select(
            [k == "static_e2e", k == "static_prefill", k == "static_rate_per_chip",
             k == "static_rate"],
            [run["e2e_s"], run["prefill_s"], rate / chips[static], rate]) * scale[static]
        rank[static] = rate
    inflight = f["inflight"].to_numpy(float) if "inflight" in f else np.ones(n)
    fits = memory_batch(c, i, o, inflight)
    cap = np.where(np.isnan(f["max_batch"].to_numpy(float)), np.inf,
                   f["max_batch"].to_numpy(float))
    offline = pick(kind == "offline_rate")
    if len(offline):
        cs = c.take(offline)
        bo = np.minimum(fits[offline], cap[offline])
        step = steady_step(cs, bo, i[offline], o[offline], cal, inflight[offline])["step_s"]
        rate = np.where(bo >= 1, bo / step, np.nan) * engines[offline]
        value[offline] = rate
        rank[offline] = rate
    limited = pick(kind == "limits_rate")
    if len(limited):
        cs = c.take(limited)
        found = under_limits(cs, i[limited], o[limited], f["ttft_limit_s"].to_numpy(float)[
            limited], f["tpot_limit_s"].to_numpy(float)[limited], cal,
            np.minimum(fits[limited], cap[limited]), inflight[limited])
        rate = np.where(found["batch"] >= 1, found["tokens_per_s"], np.nan) * engines[limited]
        value[limited] = rate
        rank[limited] = rate
    closed = pick(np.char.startswith(kind.astype(str), "closed"))
    if len(closed):
        cs = c.take(closed)
        run = closed_loop(cs, b[closed], i[closed], o[closed], cal, fits[closed],
                          inflight[closed])
        rate = run["tokens_per_s"] * engines[closed]
        k = kind[closed]
        value[closed] = np.select(
            [k == "closed_ttft", k == "closed_itl", k == "closed_rate",
             k == "closed_rate_per_chip", k == "closed_user_rate", k == "closed_user_rate_ctx",
             k == "closed_latency", k == "closed_duration"],
            [run["ttft_s"], run["itl_s"], rate, rate / f["n_chips"].to_numpy(float)[closed],
             1 / run["itl_s"], o[closed] / run["request_s"], run["request_s"],
             f["requests"].to_numpy(float)[closed] * o[closed] / rate]) * scale[closed]
        rank[closed] = rate
    pool = pick(kind == "pool_decode_rate")
    if len(pool):
        cs = c.take(pool)
        sequences = b[pool] * chips[pool]
        step = decode_step_seconds(cs, sequences, i[pool], cal)
        rate = sequences * cs.accepted_tokens / step
        value[pool] = rate / chips[pool] * f["per_chips"].to_numpy(float)[pool]
        rank[pool] = rate
    itl = pick(np.char.startswith(kind.astype(str), "itl"))
    if len(itl):
        cs = c.take(itl)
        deep = 100_000.0
        t0 = cost(cs, decode_work(cs, 1, 0.0), cal).seconds
        t1 = cost(cs, decode_work(cs, 1, deep), cal).seconds
        value[itl] = np.where(kind[itl] == "itl_intercept", t0, (t1 - t0) / deep) * scale[itl]
        rank[itl] = 1 / t0
    return value, rank


def _drafting(c: Constants, cases: pd.DataFrame, cal: Calibration) -> Constants:
    """``c`` with each row's multi-token prediction (``Calibration.multi_token``): its stated
    drafts run in every decode step, :func:`~napkin.predict.multitoken.accepted_tokens` kept."""
    drafts = cases["draft_tokens"].to_numpy(float) if "draft_tokens" in cases else None
    if not cal.multi_token or drafts is None or not np.any(drafts > 0):
        return c
    return replace(c, verify_tokens=1.0 + drafts, accepted_tokens=accepted_tokens(drafts))


def _allowed(p: Prepared, cal: Calibration) -> np.ndarray:
    """Which choices the calibration may run: a stated data-parallel layout with
    ``expert_parallel`` (else its tensor-parallel reading), an unstated one only with
    ``wide_when_unstated``."""
    layout = p.cases["layout"].to_numpy(str) if "layout" in p.cases else np.full(
        len(p.cases), "tp")
    ok = layout != ("tp-fallback" if cal.expert_parallel else "dp")
    return ok & ((layout != "dp-unstated") | cal.wide_when_unstated)


def _best(p: Prepared, values, rank, allowed=True) -> tuple[np.ndarray, np.ndarray]:
    """One value per recognised row: the allowed choice with the highest rate (the first
    allowed choice where none has one); and its tensor-parallel size."""
    out = np.full(len(p.index), np.nan)
    tp = np.full(len(p.index), np.nan)
    score = np.where(np.isfinite(rank) & ~np.isnan(values), rank, -np.inf)
    allowed = np.broadcast_to(allowed, score.shape)
    values = np.where(allowed, values, np.nan)
    order = np.lexsort((-score, ~allowed, p.row))  # by row, allowed and best first (stable)
    first = order[np.r_[True, np.diff(p.row[order]) != 0]]
    out[p.row[first]] = values[first]
    tp[p.row[first]] = p.cases["tp"].to_numpy(float)[first]
    return out, tp


def with_stacks(p: Prepared, stacks: Mapping[str, Stack] | None) -> Prepared:
    """``p`` with each row's serving-stack multipliers (:mod:`napkin.predict.software`); a
    stack not in ``stacks`` (or none given) runs as the typical one."""
    if not stacks or not len(p.cases):
        return p
    efficiency, overhead = software.multipliers(stacks, p.cases["stack"])
    return replace(p, constants=replace(p.constants, stack_efficiency=np.array(efficiency),
                                        stack_overhead=np.array(overhead)))


def predict_cases(cases: pd.DataFrame, calibration: Calibration | None = None,
                  prepared: Prepared | None = None,
                  stacks: Mapping[str, Stack] | None = None) -> pd.Series:
    """Predictions for :func:`interpret`'s cases, in each row's unit (NaN: declined). With no
    calibration given, the published one and its stacks (:func:`napkin.predict.calibrated`,
    :func:`napkin.predict.calibration.stacks`); a calibration given runs with ``stacks``
    only (none: every row on the typical stack)."""
    if calibration is None:
        calibration, stacks = calib.calibrated(), calib.stacks() if stacks is None else stacks
    p = prepare(cases) if prepared is None else prepared
    return _predict(cases, calibration, with_stacks(p, stacks))[0]


def _predict(cases, cal, p) -> tuple[pd.Series, pd.Series]:
    out = pd.Series(np.nan, index=cases.index, dtype=float)
    tp = pd.Series(np.nan, index=cases.index, dtype=float)
    if len(p.cases):
        values, rank = _values(p, cal)
        out.loc[p.index], tp.loc[p.index] = _best(p, values, rank, _allowed(p, cal))
    return out, tp


def predict_rows(rows: pd.DataFrame, calibration: Calibration | None = None,
                 stacks: Mapping[str, Stack] | None = None) -> pd.Series:
    """The step model's prediction for each row of a table in the schema of
    ``data/mlperf_llm.csv`` or ``data/serving_measurements.csv``: the row's ``value`` as the
    model sees it, in the row's own unit, aligned to ``rows.index``; NaN where the model
    declines (an unknown chip, model, metric, precision or length; :func:`interpret` says
    why). ``calibration`` defaults to the published one with its serving stacks; ``ROOFLINE``
    gives the plain roofline."""
    if not isinstance(rows, pd.DataFrame):
        raise ValueError(f"rows must be a pandas DataFrame, got {type(rows).__name__}")
    if rows.empty:
        return pd.Series(dtype=float, index=rows.index)
    return predict_cases(interpret(rows), calibration, stacks=stacks)
