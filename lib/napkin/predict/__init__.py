"""The calibrated step model: how fast a model serves on real servers, with its error known.

``napkin.predict(chip, model, input_tokens=..., output_tokens=...)`` answers "how many output
tokens per second, at what latency?" for a serving engine: one model on ``n_chips`` chips in
tensor parallel. It is the roofline of chapter 3 turned into a step model
(:mod:`napkin.predict.step`) whose efficiencies and overheads are fitted to published
measurements (:mod:`napkin.predict.calibration`, :mod:`napkin.validation`), and it knows three
ways to serve (:mod:`napkin.predict.serve`):

- ``batch`` given: that many sequences in flight;
- no batch, no limits (MLPerf Offline): the largest batch memory allows;
- no batch, ``ttft_limit_s`` and/or ``tpot_limit_s`` (MLPerf Server, Interactive): the
  largest batch whose 99th-percentile first token and time per output token meet them under
  Poisson arrivals.

The module itself is callable (``napkin.predict(...)`` is :func:`predict`), so its parts stay
reachable as ``napkin.predict.step_seconds``, ``napkin.predict.calibrated`` and so on.

Modules: :mod:`~napkin.predict.experts` (which experts a step reads),
:mod:`~napkin.predict.engines` (model, chips and link of one engine),
:mod:`~napkin.predict.step` (one step's work and time), :mod:`~napkin.predict.serve`
(scenarios), :mod:`~napkin.predict.calibration` (the parameters and their fit).
"""

from __future__ import annotations

import math
import sys
import types
from dataclasses import dataclass, replace

import numpy as np

from ..units import GiB
from .calibration import ROOFLINE, Calibration, calibrated
from .engines import Constants, Engine, engine, engine_of, kv_format, weight_format
from .experts import expected_distinct
from .multitoken import accepted_tokens
from .serve import (closed_loop, continuous, inflight_depth, memory_batch, static_batch,
                    under_limits)
from .step import step_seconds


@dataclass(frozen=True)
class Prediction:
    """What :func:`predict` says about one engine and workload.

    Rates are output tokens per second; times in seconds. ``tpot_s`` is the mean time of a
    step (one output token per sequence), ``tpot_p99_s`` its 99th percentile; ``ttft_s`` is
    the first token with no queue (the step that carries the prompt), ``ttft_p99_s`` its 99th
    percentile under Poisson arrivals at the predicted rate; ``e2e_latency_s`` is a static
    batch of ``batch`` prompts start to finish. ``bound``: the roof that binds the mean step
    (``"memory"`` or ``"compute"``); ``limited_by``: what set the batch (``"batch"`` given,
    ``"memory"``, ``"tpot"`` or ``"ttft"``). An infeasible prediction (``feasible`` False)
    says why in ``reason`` and serves nobody (``batch`` 0, no throughput).
    """

    chip: str
    model: str
    n_chips: int
    weights: str
    kv: str
    input_tokens: int
    output_tokens: int
    batch: int
    output_tokens_per_s: float
    per_chip_output_tokens_per_s: float
    tpot_s: float
    tpot_p99_s: float
    ttft_s: float
    ttft_p99_s: float
    e2e_latency_s: float
    static_output_tokens_per_s: float
    bound: str
    limited_by: str
    memory_batch: int
    feasible: bool = True
    reason: str = ""

    @property
    def tokens_per_s_per_user(self) -> float:
        """A stream's speed: one token per step."""
        return 1.0 / self.tpot_s if self.tpot_s > 0 else math.nan


def _whole(name: str, value, low: int = 1, unit: str = " of tokens") -> int:
    if isinstance(value, bool) or not isinstance(value, (int, np.integer)) or value < low:
        raise ValueError(f"{name} must be a whole number{unit} >= {low}, got {value!r}")
    return int(value)


def _spread(value) -> float:
    """``inflight_ratio``: E[o^2] / E[o]^2 of the answers, a finite number of at least 1."""
    k = float(value) if isinstance(value, (int, float, np.number)) and \
        not isinstance(value, bool) else math.nan
    if not k >= 1 or math.isinf(k):
        raise ValueError(f"inflight_ratio is E[o^2] / E[o]^2 of the answers, a finite number "
                         f">= 1 (1 when all answers have the same length), got {value!r}")
    return k


def _limit(name: str, value) -> float:
    if value is None:
        return math.nan
    v = float(value)
    if not v > 0:
        raise ValueError(f"{name} must be a positive number of seconds, got {value!r}")
    return v


def with_drafts(c: Constants, drafts: int) -> Constants:
    """Engines ``c`` serving with ``drafts`` tokens of multi-token prediction a step: each
    step verifies ``1 + drafts`` tokens per sequence and keeps
    :func:`~napkin.predict.multitoken.accepted_tokens` of them (``c`` unchanged for none)."""
    if not drafts:
        return c
    return replace(c, verify_tokens=c.verify_tokens * 0 + 1.0 + drafts,
                   accepted_tokens=c.accepted_tokens * 0 + float(accepted_tokens(drafts)))


def predict(chip: str, model, *, n_chips: int = 1, weights: str = "fp16", kv: str = "fp16",
            input_tokens: int, output_tokens: int, batch: int | None = None,
            ttft_limit_s: float | None = None, tpot_limit_s: float | None = None,
            calibration: Calibration | None = None, attention_dp: bool = False,
            draft_tokens: int = 0, inflight_ratio: float = 1.0) -> Prediction:
    """Serve ``model`` (a book model name or a Hugging Face config mapping) on ``n_chips``
    of ``chip`` (a book chip name) in tensor parallel, prompts of ``input_tokens`` and
    answers of ``output_tokens`` (means). See :class:`Prediction` for what comes back and the
    module docstring for how ``batch`` and the limits choose the batch. ``calibration``
    defaults to the fitted parameters; :data:`ROOFLINE` gives the plain roofline.

    For a mixture of experts, ``attention_dp`` serves it with data-parallel attention and its
    experts spread over every chip (:func:`~napkin.predict.engines.engine`), and
    ``draft_tokens`` runs that many multi-token-prediction drafts in each decode step
    (:mod:`~napkin.predict.multitoken`). The published fit reads both where a published row
    states them (chapter 9); a row that states neither is read tensor parallel.

    ``inflight_ratio`` is ``E[o^2] / E[o]^2`` of the answers (1 when all are
    ``output_tokens`` long): with answers of unequal length the sequences in flight are the
    longer ones, and their caches deeper (:func:`~napkin.predict.serve.inflight_depth`;
    MLPerf's DeepSeek-R1 answers give 2.38, ``data/mlperf_datasets.csv``)."""
    i, o = _whole("input_tokens", input_tokens), _whole("output_tokens", output_tokens)
    ttft_lim, tpot_lim = _limit("ttft_limit_s", ttft_limit_s), _limit("tpot_limit_s",
                                                                      tpot_limit_s)
    if batch is not None:
        batch = _whole("batch", batch, unit=" of sequences")
    cal = calibrated() if calibration is None else calibration
    drafts = _whole("draft_tokens", draft_tokens, low=0, unit="")
    k = _spread(inflight_ratio)
    e = engine(chip, model, n_chips=n_chips, weights=weights, kv=kv, attention_dp=attention_dp)
    c = with_drafts(e.constants, drafts)
    fits = int(memory_batch(c, i, o, k)[0])
    depth = float(inflight_depth(i, o, k))
    base = dict(chip=chip, model=e.model.name, n_chips=e.n_chips, weights=e.weights,
                kv=kv_format(kv), input_tokens=i, output_tokens=o, memory_batch=fits)
    need = lambda b: (f"{b} sequences at a mean depth of {depth:,.0f} tokens need "  # noqa: E731
                      f"{b * e.kv_bytes(math.ceil(depth)) / GiB:,.1f} GiB of cache; "
                      f"the engine has {e.kv_memory_bytes / GiB:,.1f} GiB")
    if fits < 1:
        return _infeasible(base, c, i, o, k, cal, need(1))
    limited = not (math.isnan(ttft_lim) and math.isnan(tpot_lim))
    if batch is not None and batch > fits:
        return _infeasible(base, c, i, o, k, cal, need(batch))
    if batch is None and limited:
        found = under_limits(c, i, o, ttft_lim, tpot_lim, cal, fits, k)
        b = int(found["batch"][0])
        if b < 1:
            one = under_limits(c, i, o, math.nan, math.nan, cal, 1, k)
            tpot1, ttft1 = float(one["tpot_p99_s"][0]), float(one["ttft_p99_s"][0])
            why = []
            if tpot1 > tpot_lim:
                why.append(f"a time per output token of {tpot1:.3g} s at the 99th percentile "
                           f"(limit {tpot_lim:.3g} s)")
            if ttft1 > ttft_lim:
                why.append(f"a first token of {ttft1:.3g} s at the 99th percentile "
                           f"(limit {ttft_lim:.3g} s)")
            return _infeasible(base, c, i, o, k, cal, "no batch meets the limits: one sequence "
                               "alone has " + " and ".join(why))
        by = "memory" if b == fits else _binding(c, i, o, k, cal, b + 1, ttft_lim, tpot_lim)
    else:
        b = fits if batch is None else batch
        by = "memory" if batch is None else "batch"
    return _evaluate(base, c, i, o, k, cal, b, by, ttft_lim, tpot_lim)


def _binding(c, i, o, k, cal, b, ttft_lim, tpot_lim) -> str:
    """Which limit the next batch size breaks."""
    found = under_limits(c, i, o, math.nan, math.nan, cal, b, k)
    return "tpot" if float(found["tpot_p99_s"][0]) > tpot_lim else "ttft"


def _evaluate(base, c, i, o, k, cal, b, by, ttft_lim=math.nan, tpot_lim=math.nan,
              feasible=True, reason="") -> Prediction:
    run = continuous(c, b, i, o, cal, k)
    limits = under_limits(c, i, o, math.nan, math.nan, cal, b, k)
    static = static_batch(c, b, i, o, cal)
    rate = float(run["tokens_per_s"][0])
    ttft99, tpot99 = float(limits["ttft_p99_s"][0]), float(limits["tpot_p99_s"][0])
    if feasible and (ttft99 > ttft_lim or tpot99 > tpot_lim):
        feasible, reason = False, (f"batch {b} misses the limits: first token {ttft99:.3g} s, "
                                   f"time per token {tpot99:.3g} s at the 99th percentile")
    e2e = float(static["e2e_s"][0])
    return Prediction(**base, batch=b if feasible else 0,
                      output_tokens_per_s=rate if feasible else 0.0,
                      per_chip_output_tokens_per_s=(rate if feasible else 0.0) / base["n_chips"],
                      tpot_s=float(run["tpot_s"][0]), tpot_p99_s=tpot99,
                      ttft_s=float(run["first_token_s"][0]), ttft_p99_s=ttft99,
                      e2e_latency_s=e2e, static_output_tokens_per_s=b * o / e2e,
                      bound=str(run["bound"][0]), limited_by=by, feasible=feasible,
                      reason=reason)


def _infeasible(base, c, i, o, k, cal, reason) -> Prediction:
    """A result that serves nobody and says why; its times are those of one sequence."""
    return _evaluate(base, c, i, o, k, cal, 1, "memory" if "cache" in reason else "limits",
                     feasible=False, reason=reason)


__all__ = ["predict", "Prediction", "step_seconds", "calibrated", "Calibration", "ROOFLINE",
           "engine", "engine_of", "Engine", "Constants", "expected_distinct", "weight_format",
           "kv_format", "closed_loop", "continuous", "memory_batch", "static_batch",
           "under_limits", "with_drafts"]


class _CallableModule(types.ModuleType):
    """``napkin.predict`` is both this package and its main function."""

    def __call__(self, *args, **kwargs) -> Prediction:
        return predict(*args, **kwargs)


sys.modules[__name__].__class__ = _CallableModule
