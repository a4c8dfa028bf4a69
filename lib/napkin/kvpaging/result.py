"""What one run of chapter 6's engine leaves behind, and how its batch becomes speed.

A :class:`Result` holds the memory in tokens at every step; its shares are averaged over the
*window*, from the first finish to the last admission, when the engine is full and turning
over. :func:`timed` puts a roofline clock on the steps: the book's one step model
(:func:`napkin.predict.totals.step_model`, which times chapter 7's serving engine too) with
every efficiency at 1 (:data:`~napkin.predict.calibration.ROOFLINE`), so the batch that memory
allows becomes tokens per second on a :class:`napkin.deployment.Deployment`. Chapter 6 uses
both.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np
import pandas as pd

from ..deployment import Deployment
from ..predict.calibration import ROOFLINE
from ..predict.totals import step_model
from .memory import CATEGORIES, LABELS

__all__ = ["Result", "throughput", "timed"]


@dataclass
class Result:
    """One allocator's run: memory in tokens at every step, and what happened."""

    allocator: str
    capacity_tokens: int
    block_size: int
    max_len: int
    n_requests: int
    timeline: pd.DataFrame
    finishes: pd.DataFrame
    preemptions: int
    recomputed_tokens: int
    window: tuple[int, int]
    layout: dict | None = field(default=None, repr=False)

    @property
    def label(self) -> str:
        return LABELS[self.allocator]

    def in_window(self) -> pd.DataFrame:
        """Steps from the first finish to the last admission: the engine full and turning
        over, without the initial fill or the final drain."""
        lo, hi = self.window
        tl = self.timeline
        return tl[(tl["step"] >= lo) & (tl["step"] <= hi)]

    def shares(self) -> dict[str, float]:
        """Mean share of the KV memory in each category over the window."""
        w = self.in_window()
        return {c: float(w[c].mean() / self.capacity_tokens) for c in CATEGORIES}

    @property
    def utilisation(self) -> float:
        """Share of KV memory holding token states (the paper's Fig. 2 green bar)."""
        return self.shares()["token"]

    @property
    def mean_batch(self) -> float:
        return float(self.in_window()["running"].mean())


def timed(result: Result, d: Deployment) -> pd.DataFrame:
    """The timeline with each step's duration on ``d`` (a roofline of its forward pass: one
    token per decoding sequence, whole prompts for those admitted) and the clock (seconds
    since the start)."""
    tl = result.timeline
    decode = tl["running"] - tl["admitted"]
    secs = step_model(d, ROOFLINE).seconds(decode + tl["prefill_tokens"], tl["context_tokens"],
                                           tl["attended_pairs"], tl["running"])
    return tl.assign(step_s=secs, time_s=np.cumsum(secs) - secs)


def throughput(result: Result, d: Deployment) -> float:
    """Tokens generated per second while the engine is full (the result's window)."""
    tl = timed(result, d)
    lo, hi = result.window
    w = tl[(tl["step"] >= lo) & (tl["step"] <= hi)]
    # every running sequence produces one token per step (a new one its first)
    return float(w["running"].sum() / w["step_s"].sum())
