"""The roofline, and what a model's steps cost on it: one concept per module.

- :mod:`napkin.roofline.roof`: the roofline itself (ridge point, intensity, bound) and
  :class:`Roof`, one machine's peak and bandwidth (chapter 3);
- :mod:`napkin.roofline.chips`: the book's chips as roofs, per weight format's arithmetic,
  with chapter 3's ridge and crossover tables;
- :mod:`napkin.roofline.model`: :class:`Model`, what a step of one model reads and computes,
  and the essay's Llama 3.3 70B (chapter 3 on);
- :mod:`napkin.roofline.decode`: a decode step with every sequence's cache read, the batch
  that reaches the ridge and the memory that stops it (chapter 3);
- :mod:`napkin.roofline.mixed`: a step of prefill chunks and decodes in one forward pass
  (chapters 2, 6 to 9).

Every name is importable from :mod:`napkin.roofline` itself.
"""

from __future__ import annotations

from .chips import (ACCUMULATE_SOURCE, ARITHMETIC_SOURCE, BACKENDS, arithmetic_for, chip_roof,
                    crossover_table, peak_for, ridge_table)
from .decode import (Step, batch_curve, batch_to_ridge, capacity_turn, chips_to_hold,
                     context_limit, decode_step, max_batch)
from .mixed import StepWork, attention_pairs, step_work
from .model import LLAMA_3_3_70B, LLAMA_3_3_70B_SOURCE, Model, llama_3_3_70b
from .roof import Roof, attainable_flops, bound, matmul_intensity, ridge_point

__all__ = ["ridge_point", "attainable_flops", "matmul_intensity", "bound", "Roof",
           "BACKENDS", "ARITHMETIC_SOURCE", "ACCUMULATE_SOURCE", "arithmetic_for", "peak_for",
           "chip_roof", "ridge_table", "crossover_table",
           "Model", "LLAMA_3_3_70B", "LLAMA_3_3_70B_SOURCE", "llama_3_3_70b",
           "Step", "decode_step", "batch_to_ridge", "context_limit", "max_batch",
           "capacity_turn", "batch_curve", "chips_to_hold",
           "attention_pairs", "StepWork", "step_work"]
