"""Speculative decoding: spending the arithmetic decode leaves idle.

Every decode step reads all the weights to produce one token per sequence, so at small
batches the chip's arithmetic mostly waits on memory. A cheap draft proposes ``k`` tokens,
the target checks them all in one step that reads the weights once, and the accepted ones
are kept. The step model of chapter 9 prices both halves, so the speedup follows from the
acceptance rate, the draft's cost and the chip's roof, and it falls as batching uses the
idle arithmetic up.

Modules: :mod:`~napkin.speculative.acceptance` (tokens per cycle),
:mod:`~napkin.speculative.draft` (what drafts, at what cost), :mod:`~napkin.speculative.cost`
(cycle, speedup, break-even batch), :mod:`~napkin.speculative.published` (the model against
published speedups), :mod:`~napkin.speculative.machines` (the essay's machines and the
in-page chart's arithmetic). Chapter 10 uses them.
"""

from __future__ import annotations

from . import acceptance, cost, draft
from .acceptance import (acceptance_for, decay_profile, expected_tokens, position_rates,
                         tokens_per_cycle)
from .cost import (DEPTH, Cycle, break_even, curve, cycle, cycle_tokens, speedup,
                   speedup_for_tokens, verify_cost)
from .draft import Draft, eagle, model, mtp, share

__all__ = ["acceptance", "cost", "draft", "acceptance_for", "decay_profile", "expected_tokens",
           "position_rates", "tokens_per_cycle", "DEPTH", "Cycle", "break_even", "curve",
           "cycle", "cycle_tokens", "speedup", "speedup_for_tokens", "verify_cost", "Draft",
           "eagle", "model", "mtp", "share"]
