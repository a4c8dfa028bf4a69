"""A step described by its totals, costed by the one step model of the book.

Chapters 6 and 7's simulated engines describe a step by four totals: the tokens it runs (prompt tokens and one per
decoding sequence), the cached tokens it reads (every decode's whole context, each prompt
chunk the part of its prompt that earlier chunks wrote), the (query, key) pairs its
attention computes, and the sequences in it (a decode or a prompt chunk each). For a model
without windowed layers those totals are exactly the :class:`napkin.predict.step.Work` of
the step (``prefill_work`` and ``decode_work`` are linear in them), and its time is
:func:`napkin.predict.step.cost` with the published calibration on the typical serving
stack: nothing here prices anything on its own. With
:data:`~napkin.predict.calibration.ROOFLINE` it is chapter 3's plain roofline, which times
chapter 6's allocators.

Costs are vectorised, so that many engines stepping together (:func:`napkin.serving.engine.
run_together`) pay for one call.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from .. import kvcache
from ..deployment import Deployment
from . import step
from .calibration import Calibration, calibrated
from .engines import Constants, engine_of

__all__ = ["step_model", "StepModel"]


@dataclass(frozen=True, eq=False)
class StepModel:
    """The calibrated step of one deployment: ``constants`` of its engine and the
    ``calibration`` that prices them. Compared by identity: engines that share one are
    costed together."""

    constants: Constants
    calibration: Calibration
    name: str = ""

    def work(self, tokens, kv_tokens, pairs, sequences) -> step.Work:
        """The step's :class:`~napkin.predict.step.Work` from its four totals."""
        c = self.constants
        t = np.asarray(tokens, dtype=float)
        return step.Work(tokens=t, kv_bytes=c.kv_bytes_full * np.asarray(kv_tokens, dtype=float),
                         linear_flops=c.flops_per_token * t,
                         attention_flops=c.flops_per_pair_full * np.asarray(pairs, dtype=float),
                         sequences=np.asarray(sequences, dtype=float))

    def cost(self, tokens, kv_tokens, pairs, sequences) -> step.Cost:
        """:func:`napkin.predict.step.cost` of the step (its parts, arrays)."""
        return step.cost(self.constants, self.work(tokens, kv_tokens, pairs, sequences),
                         self.calibration)

    def seconds(self, tokens, kv_tokens, pairs, sequences) -> np.ndarray:
        return self.cost(tokens, kv_tokens, pairs, sequences).seconds

    @property
    def bare_decode_s(self) -> float:
        """One decode step with nobody else running: one sequence, nothing cached."""
        return float(self.seconds(1, 0, 1, 1)[0])


def step_model(d: Deployment, calibration: Calibration | None = None) -> StepModel:
    """The step model of ``d`` (its chips in one tensor-parallel group,
    :func:`napkin.predict.engines.engine_of`) under ``calibration``, by default the published
    one. Refuses a model with windowed layers, whose cache does not grow one token per
    token, so that four totals cannot describe its step."""
    form = kvcache.linear_form(d.model.config)
    if form.windowed_elements_per_token:
        raise ValueError(f"{d.model.name} has windowed layers (window {form.window}); the "
                         "serving simulation describes a step by its totals, which needs "
                         "every layer's cache to grow one token per token")
    cal = calibrated() if calibration is None else calibration
    return StepModel(engine_of(d).constants, cal, d.name)
