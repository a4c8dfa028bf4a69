"""The step model against measured servers: every published row read, predicted, and scored.

Two tables of measurements taken by others are in ``data/``: MLPerf Inference datacenter LLM
results (``mlperf_llm.csv``) and engine and vendor measurements (``serving_measurements.csv``:
Argonne's LLM-Inference-Bench static-batch sweeps, TensorRT-LLM and NIM tables, vLLM and SGLang
posts). :func:`predict_rows` reads rows in either schema, works out what each measured (the
model, the chips and how many share a layer, the formats, the lengths, the scenario and the
metric, with the aliases of ``data/validation_aliases.csv``) and returns the step model's
prediction in the row's own unit, or NaN where it declines, with the reason in
:func:`interpret`'s ``reason`` column. New published rows in the same schema can be dropped in.

**The split, chosen before any fit.** A model fitted and scored on the same rows says
nothing about the next server, so the rows are split by when or where they come from, the
way a calibration made today meets hardware and software of tomorrow:

- MLPerf: rounds v4.0, v4.1 and v5.0 train; **v5.1, the latest round, is held out** (its
  B200 and MI325X fleets, FP4 weights and new benchmarks are what a calibration made before
  it could not have seen);
- Argonne's static-batch latencies: the A100, H100, MI250 and Gaudi 2 train; **the newest
  chip of each vendor, GH200 and MI300X, is held out**;
- every other published measurement (TensorRT-LLM, NIM, vLLM, SGLang tables) is held out.

Held-out rows never enter :func:`fit`; the chapter reports both splits, and beside them the
plain roofline's error on the same rows.

Modules: :mod:`~napkin.validation.rows` (reading a published row),
:mod:`~napkin.validation.scoring` (predicting it), :mod:`~napkin.validation.fitting` (the
fit), :mod:`~napkin.validation.report` (errors and bands), :mod:`~napkin.validation.chapter`
(what chapter 9 draws).
"""

from __future__ import annotations

from .. import tables
from . import chapter, derive, fitting, report, rows, scoring
from .chapter import (FRONTIER_CHIPS, FRONTIER_MODELS, PARAMETERS, benchmark_lengths,
                      decline_reasons, frontier_curves, frontier_gap, frontier_points,
                      frontier_read, parameters_table, per_gpu_ratio, per_gpu_ratio_by_round,
                      server_over_offline,
                      stack_spread)
from .fitting import (ABLATIONS, BOUNDED_KINDS, CALIBRATED, ESSAY, IMPOSSIBLE, LOSS_SCALE,
                      ONE_NUMBER, PLAIN, STRUCTURES, TRIED, Fit, Structure, fit, impossible,
                      usable)
from .report import (BANDS, CASES, bands, case_of, crossval, error_band, error_table, errors,
                     factor_stats, peer_errors, scored, seen_in)
from .rows import (ARGONNE, ARGONNE_TRAIN_GPUS, SERVING_METRICS, SOURCES, TP_CHOICES,
                   TRAIN_ROUNDS, alias, all_cases, group_of, interpret, mlperf, serving,
                   source_of)
from .scoring import Prepared, predict_cases, predict_rows, prepare


__all__ = [
    "predict_rows", "interpret", "fit", "errors", "scored", "error_table", "error_band",
    "bands", "case_of", "crossval", "factor_stats", "seen_in", "peer_errors", "all_cases", "mlperf",
    "serving", "alias", "source_of", "group_of", "tables", "predict_cases", "prepare",
    "Prepared", "impossible", "usable", "Fit", "Structure", "STRUCTURES", "CALIBRATED",
    "ONE_NUMBER", "ESSAY", "PLAIN", "ABLATIONS", "TRIED", "BOUNDED_KINDS", "IMPOSSIBLE", "LOSS_SCALE",
    "BANDS", "CASES", "ARGONNE", "ARGONNE_TRAIN_GPUS", "SERVING_METRICS", "SOURCES",
    "TP_CHOICES", "TRAIN_ROUNDS", "FRONTIER_CHIPS", "FRONTIER_MODELS", "PARAMETERS",
    "benchmark_lengths", "decline_reasons", "frontier_curves", "frontier_gap",
    "frontier_points", "frontier_read", "parameters_table", "per_gpu_ratio", "per_gpu_ratio_by_round",
    "server_over_offline", "stack_spread", "chapter", "derive", "fitting", "report", "rows",
    "scoring",
]
