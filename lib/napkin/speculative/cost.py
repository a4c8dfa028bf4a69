"""What a draft-and-verify cycle costs on a chip, and the speedup it buys.

Decode leaves arithmetic idle: a step of one token per sequence reads every weight and does
two FLOPs per weight per sequence. Verifying ``k`` drafted tokens is the same step with
``k + 1`` tokens per sequence (the ``k`` drafted and the last accepted one), so while the
step stays memory-bound it costs barely more than a plain one: the weights are read once
either way. It turns compute-bound once ``(k + 1) x batch`` tokens cross the ridge, and from
there it costs ``k + 1`` times as much. A cycle is the draft's passes plus one verify step:

    t_cycle(B) = passes x t_draft(B) + t_step(B, k + 1)
    speedup(B) = tau(a, k) x t_step(B, 1) / t_cycle(B)

with ``t_step(B, n)`` the calibrated step of :func:`napkin.predict.step_seconds` (``B``
sequences at ``depth`` cached tokens, each adding ``n``), the plain roofline when
``calibration`` is :data:`~napkin.predict.ROOFLINE`, and ``tau`` the tokens a cycle yields
(:func:`~napkin.speculative.acceptance.expected_tokens`). The ratio is the same for one
stream's latency and for a batch's throughput at a fixed batch, which is how engines report
it. Left out: the extra tokens the draft itself runs over after a cycle (the accepted ones
it has not seen), sampling, and the scheduling of sequences that accept different numbers of
tokens; a tree of drafts is a verify step of more tokens than ``k + 1``.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import pandas as pd

from ..deployment import Deployment
from ..predict.calibration import Calibration, calibrated
from ..predict.engines import Constants, Engine, engine_of
from ..predict.step import cost, decode_work, step_seconds
from . import draft as drafts
from .acceptance import expected_tokens, require_acceptance, require_drafts, tokens_per_cycle

#: The context each sequence holds when a step is costed, unless told otherwise: a chat
#: turn's depth (the chapter's setting; speedups barely move with it at small batches).
DEPTH = 512


def _engine(target) -> Engine:
    if isinstance(target, Engine):
        return target
    if isinstance(target, Deployment):
        return engine_of(target)
    raise ValueError(f"target must be a napkin.predict Engine or a Deployment, got "
                     f"{type(target).__name__}")


def _whole(name: str, value, low: int) -> np.ndarray:
    arr = np.asarray(value)
    if arr.dtype == bool or not np.issubdtype(arr.dtype, np.integer) or np.any(arr < low):
        raise ValueError(f"{name} must be a whole number >= {low} (or an array of them), got "
                         f"{value!r}")
    return arr.astype(float)


def verify_cost(target, tokens: int, batch: int = 1, depth: int = DEPTH,
                calibration: Calibration | None = None) -> float:
    """A verify step of ``tokens`` tokens per sequence over a plain decode step (one token),
    both at ``batch`` sequences of ``depth`` cached tokens: 1 for ``tokens`` = 1, never less,
    flat while the step is memory-bound."""
    if isinstance(tokens, bool) or not isinstance(tokens, (int, np.integer)) or tokens < 1:
        raise ValueError(f"tokens (per sequence in the verify step) must be a whole number "
                         f">= 1, got {tokens!r}")
    one = step_seconds(target, batch, depth, 1, calibration)
    return step_seconds(target, batch, depth, int(tokens), calibration) / one


@dataclass(frozen=True)
class Cycle:
    """One cycle at each batch (arrays): the plain step it replaces, the verify step, the
    draft's passes together, and which roof binds the verify step."""

    batch: np.ndarray
    plain_s: np.ndarray
    verify_s: np.ndarray
    draft_s: np.ndarray
    verify_bound: np.ndarray

    @property
    def seconds(self):
        return self.draft_s + self.verify_s

    @property
    def relative(self):
        """The cycle in plain steps."""
        return self.seconds / self.plain_s


def cycle(target, draft: drafts.Draft, k: int, batch=1, depth: int = DEPTH,
          calibration: Calibration | None = None) -> Cycle:
    """The cost of one cycle of ``k`` drafted tokens at each ``batch`` (a number or array)."""
    k = require_drafts(k)
    b = _whole("batch", batch, 1)
    d = float(_whole("depth", depth, 0))
    cal = calibrated() if calibration is None else calibration
    if draft.kind == "share" and isinstance(target, Constants):
        c = target
    else:
        e = _engine(target)
        c = e.constants
    plain = cost(c, decode_work(c, b, d, 1), cal)
    verify = cost(c, decode_work(c, b, d, k + 1), cal)
    if draft.kind == "share":
        one = draft.fraction * plain.seconds
    else:
        dc = drafts.constants(e, draft)
        one = cost(dc, decode_work(dc, b, d, 1), cal).seconds
    return Cycle(np.atleast_1d(b), plain.seconds, verify.seconds, draft.passes(k) * one,
                 verify.bound)


def cycle_tokens(acceptance, k: int) -> float:
    """Tokens a cycle of ``k`` drafted tokens yields: ``acceptance`` one rate for every
    position (:func:`~napkin.speculative.acceptance.expected_tokens`), or a sequence of rates
    by position, each given the earlier ones were accepted
    (:func:`~napkin.speculative.acceptance.tokens_per_cycle`, its first ``k``)."""
    k = require_drafts(k)
    a = require_acceptance(acceptance)
    if a.ndim == 0:
        return expected_tokens(float(a), k)
    if a.ndim == 1 and a.size >= k:
        return tokens_per_cycle(a[:k])
    raise ValueError(f"acceptance must be one rate or a rate for each of the k = {k} drafted "
                     f"positions, got {acceptance!r}")


def speedup_for_tokens(target, draft: drafts.Draft, tokens: float, k: int, batch=1,
                       depth: int = DEPTH, calibration: Calibration | None = None):
    """The speedup of cycles that yield ``tokens`` on average (a published acceptance length)
    with ``k`` drafted tokens each: a float for a single batch, an array for an array."""
    k = require_drafts(k)
    if not (isinstance(tokens, (int, float, np.floating)) and 1 <= tokens <= k + 1):
        raise ValueError(f"tokens (per cycle) must lie between 1 and k + 1 = {k + 1}, got "
                         f"{tokens!r}")
    c = cycle(target, draft, k, batch, depth, calibration)
    out = float(tokens) * c.plain_s / c.seconds
    return float(out[0]) if np.ndim(batch) == 0 else out


def speedup(target, draft: drafts.Draft, acceptance, k: int, batch=1, depth: int = DEPTH,
            calibration: Calibration | None = None):
    """Tokens per second with speculation over without, at ``batch`` sequences: a float for
    a single batch, an array for an array of them. ``acceptance``: see :func:`cycle_tokens`."""
    return speedup_for_tokens(target, draft, cycle_tokens(acceptance, k), k, batch, depth,
                              calibration)


def curve(target, draft: drafts.Draft, acceptance, k: int, batches, depth: int = DEPTH,
          calibration: Calibration | None = None) -> pd.DataFrame:
    """:func:`speedup` and its parts at each of ``batches``."""
    b = np.asarray(list(batches))
    c = cycle(target, draft, k, b, depth, calibration)
    tau = cycle_tokens(acceptance, k)
    return pd.DataFrame({"batch": b.astype(int), "plain_s": c.plain_s, "verify_s": c.verify_s,
                         "draft_s": c.draft_s, "cycle_relative": c.relative,
                         "tokens_per_cycle": tau, "speedup": tau * c.plain_s / c.seconds,
                         "verify_bound": c.verify_bound})


def break_even(target, draft: drafts.Draft, acceptance, k: int, depth: int = DEPTH,
               calibration: Calibration | None = None, max_batch: int = 4096):
    """The smallest batch at which speculation no longer pays (speedup below 1), or None when
    it still pays at ``max_batch`` (or at the most sequences the engine's memory holds at
    ``depth``, whichever is fewer)."""
    top = int(max_batch)
    if not isinstance(target, Constants):
        top = min(top, max(1, _engine(target).max_sequences(depth)))
    b = np.arange(1, top + 1)
    s = speedup(target, draft, acceptance, k, b, depth, calibration)
    below = np.nonzero(s < 1)[0]
    return int(b[below[0]]) if below.size else None
