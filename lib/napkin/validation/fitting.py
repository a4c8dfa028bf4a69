"""Fitting the step model, and the simpler models it must beat, to published rows.

A *structure* is a version of the model: the calibration it starts from, the parameters it
frees, whether it knows serving stacks. :data:`STRUCTURES` holds the calibrated step model,
the simpler models beside it (the one-number discount, the essay's 50 % rule, the plain
roofline) and the ablations, each the calibrated model with one part taken out. Every fitted
structure minimises the same loss on the same rows: a soft L1 on log(predicted / measured),
quadratic within about +-20 % and linear beyond, so that a few rows the model cannot describe
do not steer it, with the four families of rows (MLPerf Offline, MLPerf Server and
Interactive, Argonne's static batches, the engines' and vendors' own tables) weighted
equally. Stack multipliers are shrunk towards 1 (a ridge on their logarithms).

The minimiser is Levenberg-Marquardt on the reweighted residuals (numpy only: no scipy in the
book's pins), over the parameters mapped to unbounded values: shares of a peak through a
logistic, times and token counts through a logarithm, so every trial point is physical.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field, replace

import numpy as np
import pandas as pd

from ..predict.calibration import ROOFLINE, Calibration
from ..predict.software import Stack
from .rows import group_of
from .scoring import predict_cases, prepare

#: Loss scale: the soft L1's knee, a factor of 1.2.
LOSS_SCALE = math.log(1.2)
#: Ridge on the stacks' log-multipliers: a stack must earn its distance from 1.
STACK_RIDGE = 0.003
#: A row the model cannot serve (no batch fits, none meets the limits) counts as this far off
#: in log terms.
UNSERVED = 5.0

#: A measurement this many times faster than the plain roofline allows (peak bandwidth and
#: peak FLOP/s, nothing else paid) did not do what its row says: a run that stopped at a
#: context limit, a misread unit. Only where the roofline is a bound: static batches and
#: throughput as fast as memory allows (not the queueing scenarios, whose tails are a model).
IMPOSSIBLE = 2.0
BOUNDED_KINDS = ("static_e2e", "static_prefill", "static_rate", "static_rate_per_chip",
                 "offline_rate")

_SHARES = {"bandwidth_efficiency", "compute_efficiency", "link_efficiency"}


def impossible(cases: pd.DataFrame, roofline: pd.Series) -> pd.Series:
    """Rows measured more than :data:`IMPOSSIBLE` times faster than the plain roofline."""
    bounded = cases["kind"].isin(BOUNDED_KINDS)
    rate = cases["kind"].str.contains("rate")
    faster = np.where(rate, cases["measured"] / roofline, roofline / cases["measured"])
    return pd.Series(bounded & (faster > IMPOSSIBLE), index=cases.index)


def family_of(cases: pd.DataFrame) -> pd.Series:
    """The four families of rows the loss weights equally."""
    group = pd.Series(group_of(cases), index=cases.index)
    return group.where(group.str.startswith(("MLPerf", "Argonne")), "published tables")


# -- structures ------------------------------------------------------------------------------

@dataclass(frozen=True)
class Structure:
    """A version of the step model: ``base`` with the parameters in ``free`` fitted (the
    others kept), with or without serving stacks (:mod:`napkin.predict.software`);
    ``tie``: one efficiency for reads and arithmetic (the compute share follows the
    bandwidth share)."""

    name: str
    base: Calibration
    free: tuple[str, ...] = ()
    stacks: bool = False
    tie: bool = False
    ridge: float = STACK_RIDGE
    what: str = ""

    @property
    def fitted(self) -> bool:
        return bool(self.free) or self.stacks


#: The calibrated step model: the plain roofline at one fitted share of both peaks, plus
#: what the roofline leaves out and the data showed to matter out of sample: a fixed cost
#: per layer (kernel launches) and per sequence (sampling, scheduling) in every step, the
#: all-reduces of tensor parallelism, and the serving stacks. Each part earned its place in
#: the ablation on the fixed split (:data:`ABLATIONS`); :data:`TRIED` lists the parts that
#: were tried there and did not.
CALIBRATED = Structure(
    "calibrated step model",
    replace(ROOFLINE, bandwidth_efficiency=0.6, compute_efficiency=0.6, communication=True,
            layer_overhead_s=3e-5, sequence_overhead_s=2e-5, allreduce_latency_s=2e-5,
            link_efficiency=0.6),
    free=("bandwidth_efficiency", "layer_overhead_s", "sequence_overhead_s",
          "allreduce_latency_s", "link_efficiency"),
    stacks=True, tie=True, what="the model of this chapter")
#: The simplest model that could do as well: the plain roofline times one efficiency.
ONE_NUMBER = Structure("one-number discount", replace(ROOFLINE, bandwidth_efficiency=0.5,
                                                      compute_efficiency=0.5),
                       free=("bandwidth_efficiency",), tie=True,
                       what="the plain roofline at one fitted share of both peaks")
#: The essay's rule of thumb: decode lands at about half its napkin ceiling.
ESSAY = Structure("essay's 50 % rule", replace(ROOFLINE, bandwidth_efficiency=0.5,
                                               compute_efficiency=0.5),
                  what="the plain roofline at half of both peaks, nothing fitted")
PLAIN = Structure("plain roofline", ROOFLINE, what="peaks reached, nothing else paid")


def _without(name: str, what: str, **changes) -> Structure:
    """The calibrated structure with one part taken out: ``free`` loses the parameters set
    here, ``stacks`` as given, the calibration's switches as given."""
    switches = {k: v for k, v in changes.items() if k in ("stacks", "tie")}
    settings = {k: v for k, v in changes.items() if k not in switches}
    free = tuple(p for p in CALIBRATED.free if p not in settings)
    return replace(CALIBRATED, name=name, base=replace(CALIBRATED.base, **settings), free=free,
                   what=what, **switches)


def _with(name: str, what: str, fitted: tuple[str, ...] = (), **settings) -> Structure:
    """The calibrated structure with one more part: ``settings`` on its calibration and
    ``fitted`` parameters freed (``tie=False`` frees the compute share from the bandwidth's)."""
    tie = settings.pop("tie", True)
    return replace(CALIBRATED, name=name, base=replace(CALIBRATED.base, **settings),
                   free=CALIBRATED.free + fitted, tie=tie, what=what)


#: Each part of the calibrated model taken out in turn, the rest refitted.
ABLATIONS = (
    _without("without the per-layer cost", "no fixed cost per layer", layer_overhead_s=0.0),
    _without("without the per-sequence cost", "no cost per sequence in a step",
             sequence_overhead_s=0.0),
    _without("without all-reduce costs", "tensor parallelism is free", communication=False,
             allreduce_latency_s=0.0, link_efficiency=1.0),
    _without("without serving stacks", "one calibration for every stack", stacks=False),
    _without("without the stated expert layout", "rows that state data-parallel attention "
             "with wide expert parallelism read as tensor parallel", expert_parallel=False),
    _without("without multi-token prediction", "one token per step, where a row drafts "
             "with the model's own prediction module too", multi_token=False),
)
#: Parts tried on top of it that did not earn their place on the fixed split.
TRIED = (
    _with("plus a separate compute share", "the arithmetic's share of peak fitted apart "
          "from the memory's", ("compute_efficiency",), tie=False),
    _with("plus a matmul ramp", "a step of few tokens reaches a smaller share of the "
          "arithmetic's peak (per expert in a mixture)", ("half_tokens",), half_tokens=64.0,
          expert_ramp=True),
    _with("plus per-operator roofs", "the weights' matmuls and attention each bound by "
          "their own roof", per_operator=True),
    _with("plus a fixed cost per step", "a cost every step pays whatever its size",
          ("step_overhead_s",), step_overhead_s=1e-3),
    _with("plus a cost per expert layer", "a layer with routed experts pays more fixed "
          "time than a dense one (router, sorting tokens by expert, grouped kernels)",
          ("moe_layer_overhead_s",), moe_layer_overhead_s=3e-5),
)
STRUCTURES = {s.name: s for s in (CALIBRATED, ONE_NUMBER, ESSAY, PLAIN) + ABLATIONS + TRIED}


# -- the fit ---------------------------------------------------------------------------------

@dataclass
class Fit:
    """A fitted structure: its calibration and stacks, the loss it reached and its rows."""

    structure: Structure
    calibration: Calibration
    stacks: dict[str, Stack] = field(default_factory=dict)
    loss: float = math.nan
    rows: int = 0
    families: dict = field(default_factory=dict)


def _to_vector(cal: Calibration, free) -> np.ndarray:
    out = []
    for name in free:
        v = getattr(cal, name)
        if name in _SHARES:
            v = min(max(v, 1e-6), 1 - 1e-9)
            out.append(math.log(v / (1 - v)))
        else:
            out.append(math.log(max(v, 1e-12)))
    return np.array(out, dtype=float)


def _from_vector(x, free, base: Calibration, tie: bool) -> Calibration:
    values = {name: (1 / (1 + math.exp(-v)) if name in _SHARES else math.exp(min(v, 50.0)))
              for name, v in zip(free, np.asarray(x, dtype=float))}
    cal = replace(base, **values)
    return replace(cal, compute_efficiency=cal.bandwidth_efficiency) if tie else cal


def soft_l1(r, scale: float = LOSS_SCALE):
    """The loss of each log-ratio: ``r**2`` near zero, ``2 s |r|`` far from it."""
    return 2 * scale * scale * (np.sqrt(1 + (r / scale) ** 2) - 1)


def levenberg_marquardt(residuals, x0, weights, ridge, iterations: int = 60,
                        scale: float = LOSS_SCALE):
    """Minimise ``sum(weights * soft_l1(residuals(x))) + sum(ridge * x**2)``: Gauss-Newton
    steps on the reweighted residuals (forward-difference Jacobian), damped by Marquardt's
    rule. Deterministic; returns ``(x, loss)``."""
    x = np.asarray(x0, dtype=float).copy()
    ridge = np.asarray(ridge, dtype=float) * np.ones_like(x)

    def objective(r, x):
        return float(np.sum(weights * soft_l1(r, scale)) + np.sum(ridge * x * x))

    r = residuals(x)
    loss = objective(r, x)
    damping = 1e-2
    for _ in range(iterations):
        irls = weights / np.sqrt(1 + (r / scale) ** 2)
        jac = np.empty((len(r), len(x)))
        for j in range(len(x)):
            step = np.zeros_like(x)
            step[j] = 1e-4
            jac[:, j] = (residuals(x + step) - r) / 1e-4
        a = jac.T @ (irls[:, None] * jac) + np.diag(ridge)
        g = jac.T @ (irls * r) + ridge * x
        for _ in range(10):
            trial = x + np.linalg.solve(a + damping * np.diag(np.diag(a) + 1e-12), -g)
            r_trial = residuals(trial)
            loss_trial = objective(r_trial, trial)
            if loss_trial < loss:
                break
            damping *= 4
        else:
            break
        gain = loss - loss_trial
        x, r, loss = trial, r_trial, loss_trial
        damping = max(damping / 3, 1e-9)
        if gain < 1e-10 * max(loss, 1e-12):
            break
    return x, loss


def fit(cases: pd.DataFrame, structure: Structure = CALIBRATED) -> Fit:
    """``structure`` fitted to ``cases`` (recognised rows, one per measurement, none
    :func:`impossible`; see :func:`usable`). A structure with nothing to fit comes back as
    it is."""
    cases = cases.reset_index(drop=True)
    families = family_of(cases)
    if not structure.fitted:
        return Fit(structure, structure.base, rows=len(cases),
                   families=families.value_counts().to_dict())
    prepared = prepare(cases)
    measured = cases["measured"].to_numpy(float)
    weights = (1.0 / families.map(families.value_counts())).to_numpy(float)
    weights = weights / weights.sum()
    names = sorted(set(cases["stack"])) if structure.stacks else []
    k = len(structure.free)

    def unpack(x):
        cal = _from_vector(x[:k], structure.free, structure.base, structure.tie)
        eff, over = np.exp(x[k:k + len(names)]), np.exp(x[k + len(names):])
        return cal, {n: Stack(n, float(e), float(o)) for n, e, o in zip(names, eff, over)}

    def residuals(x):
        cal, stacks = unpack(x)
        r = np.log(predict_cases(cases, cal, prepared, stacks).to_numpy(float) / measured)
        return np.where(np.isfinite(r), r, UNSERVED)

    x0 = np.concatenate([_to_vector(structure.base, structure.free), np.zeros(2 * len(names))])
    ridge = np.concatenate([np.zeros(k), np.full(2 * len(names), structure.ridge)])
    x, loss = levenberg_marquardt(residuals, x0, weights, ridge)
    cal, stacks = unpack(x)
    counts = cases["stack"].value_counts()
    stacks = {n: replace(s, rows=int(counts.get(n, 0))) for n, s in stacks.items()}
    return Fit(structure, cal, stacks, loss, len(cases), families.value_counts().to_dict())


def usable(cases: pd.DataFrame) -> pd.DataFrame:
    """The rows a fit may see: recognised, not a repeated MLPerf run, served by some layout
    the plain roofline runs (a disaggregated pool that only wide expert parallelism holds is
    not, until the fit takes it), and not faster than the chip's peaks allow
    (:func:`impossible`)."""
    keep = cases[cases["ok"] & ~cases["duplicate"]]
    bound = predict_cases(keep, ROOFLINE)
    return keep[bound.notna() & ~impossible(keep, bound)]
