"""Fitting the step model's parameters to the training split of the published rows."""

from __future__ import annotations

import math
from dataclasses import dataclass
from functools import lru_cache

import numpy as np
import pandas as pd

from ..predict import calibration as calib
from ..predict.calibration import ROOFLINE, Calibration
from .rows import TRAIN_ROUNDS, all_cases, group_of, mlperf
from .scoring import predict_cases, prepare

# -- fitting ---------------------------------------------------------------------------------

#: Loss scale: a soft L1 on the log of predicted over measured, quadratic within about
#: +-20 % and linear beyond, so a few rows the model cannot describe do not steer the fit.
LOSS_SCALE = math.log(1.2)


@dataclass
class Fit:
    """The fitted calibration and what it was fitted on."""

    calibration: Calibration
    loss: float
    rows: int
    groups: dict
    tpot_tail_rows: int




#: A measurement this many times faster than the plain roofline allows (peak bandwidth and
#: peak FLOP/s, nothing else paid) did not do what its row says: a run that stopped at a
#: context limit, a misread unit. Only where the roofline is a bound: static batches and
#: throughput as fast as memory allows (not the queueing scenarios, whose tails are a model).
IMPOSSIBLE = 2.0
BOUNDED_KINDS = ("static_e2e", "static_prefill", "static_rate", "static_rate_per_chip",
                 "offline_rate")


def impossible(cases: pd.DataFrame, roofline: pd.Series) -> pd.Series:
    """Rows measured more than :data:`IMPOSSIBLE` times faster than the plain roofline."""
    bounded = cases["kind"].isin(BOUNDED_KINDS)
    rate = cases["kind"].str.contains("rate")
    faster = np.where(rate, cases["measured"] / roofline, roofline / cases["measured"])
    return pd.Series(bounded & (faster > IMPOSSIBLE), index=cases.index)


def training_cases() -> pd.DataFrame:
    """The rows the fit sees: recognised, in the training split, not a repeated MLPerf run,
    and not faster than the chip's peaks allow (:func:`impossible`)."""
    cases = all_cases()
    keep = cases["ok"] & (cases["split"] == "train") & ~cases["duplicate"]
    cases = cases[keep].reset_index(drop=True)
    bound = predict_cases(cases, ROOFLINE)
    return cases[~impossible(cases, bound)].reset_index(drop=True)


def tpot_tail() -> tuple[float, int]:
    """99th-percentile over mean time per output token in the training rounds' MLPerf Server
    and Interactive logs (median over runs): how much the slowest requests' tokens lag."""
    m = mlperf()
    train = m[m["round"].isin(TRAIN_ROUNDS) & m["tpot_mean_ms"].notna() &
              m["tpot_p99_ms"].notna()]
    ratio = train["tpot_p99_ms"] / train["tpot_mean_ms"]
    return float(ratio.median()), int(len(ratio))


@lru_cache(maxsize=1)
def fit() -> Fit:
    """Fit :data:`~napkin.predict.calibration.FITTED` to the training split (module
    docstring): minimise the mean soft-L1 loss of log(predicted / measured), each group
    (MLPerf Offline, MLPerf Server/Interactive, Argonne's static batches) weighted equally.
    ``tpot_tail`` is measured, not fitted (:func:`tpot_tail`)."""
    cases = training_cases()
    tail, tail_rows = tpot_tail()
    base = Calibration(bandwidth_efficiency=0.7, compute_efficiency=0.6, half_tokens=64.0,
                       step_overhead_s=1e-3, allreduce_latency_s=2e-5, link_efficiency=0.6,
                       tpot_tail=max(tail, 1.0))
    prepared = prepare(cases)
    measured = cases["measured"].to_numpy(float)
    groups = pd.Series(group_of(cases))
    weight = (1.0 / groups.map(groups.value_counts())).to_numpy(float)
    weight = weight / weight.sum()

    def loss(x):
        cal = calib.from_vector(x, base)
        pred = predict_cases(cases, cal, prepared).to_numpy(float)
        r = np.log(pred / measured)
        bad = ~np.isfinite(r)
        r = np.where(bad, 5.0, r)  # a row the model cannot serve counts as far off
        s = LOSS_SCALE
        return float(np.sum(weight * 2 * s * s * (np.sqrt(1 + (r / s) ** 2) - 1)))

    x, value = calib.nelder_mead(loss, calib.to_vector(base), step=0.7, iterations=300)
    x, value = calib.nelder_mead(loss, x, step=0.2, iterations=200)
    return Fit(calibration=calib.from_vector(x, base), loss=value, rows=len(cases),
               groups=groups.value_counts().to_dict(), tpot_tail_rows=tail_rows)
