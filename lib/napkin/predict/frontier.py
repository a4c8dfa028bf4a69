"""The practitioner's trade-off: output tokens per second per GPU against tokens per second
each user sees.

One engine serving more sequences at once makes more tokens per GPU and each of them more
slowly; more chips per engine (tensor parallelism) make every stream faster and cost the
all-reduces. :func:`curve` sweeps the batch for one engine; :func:`frontier` keeps, over the
tensor-parallel sizes that hold the model, the points no other beats on both axes.
"""

from __future__ import annotations

import numpy as np
import pandas as pd

from .calibration import Calibration, calibrated
from .engines import engine
from .serve import continuous, memory_batch


def curve(chip: str, model, *, n_chips: int = 1, weights: str = "FP8", kv: str = "fp8",
          input_tokens: int, output_tokens: int, calibration: Calibration | None = None,
          points: int = 48, inflight_ratio: float = 1.0) -> pd.DataFrame:
    """Continuous batching at batches from 1 to what memory allows (log-spaced): per batch,
    output tokens/s per GPU, tokens/s per user (one per step) and which roof binds. Empty
    where the weights leave no room for one sequence. ``inflight_ratio``: the answers'
    spread (:func:`~napkin.predict.serve.inflight_depth`)."""
    cal = calibrated() if calibration is None else calibration
    e = engine(chip, model, n_chips=n_chips, weights=weights, kv=kv)
    c = e.constants
    top = int(memory_batch(c, input_tokens, output_tokens, inflight_ratio)[0])
    if top < 1:
        return pd.DataFrame(columns=["chip", "tp", "batch", "per_gpu_tok_per_s",
                                     "per_user_tok_per_s", "bound"])
    batches = np.unique(np.round(np.geomspace(1, top, points)).astype(int))
    run = continuous(c.take(np.zeros(len(batches), dtype=int)), batches, input_tokens,
                     output_tokens, cal, inflight_ratio)
    return pd.DataFrame({"chip": chip, "tp": e.tp, "batch": batches,
                         "per_gpu_tok_per_s": run["tokens_per_s"] / e.n_chips,
                         "per_user_tok_per_s": 1.0 / run["step_s"], "bound": run["bound"]})


def frontier(chip: str, model, *, weights: str = "FP8", kv: str = "fp8", input_tokens: int,
             output_tokens: int, sizes=(1, 2, 4, 8), calibration: Calibration | None = None,
             points: int = 48, inflight_ratio: float = 1.0) -> pd.DataFrame:
    """The upper-right edge of :func:`curve` over tensor-parallel ``sizes``: for each speed
    per user, the most tokens per GPU any size reaches (sizes that cannot hold the model are
    skipped), sorted by speed per user."""
    parts = []
    for tp in sizes:
        try:
            parts.append(curve(chip, model, n_chips=tp, weights=weights, kv=kv,
                               input_tokens=input_tokens, output_tokens=output_tokens,
                               calibration=calibration, points=points,
                               inflight_ratio=inflight_ratio))
        except ValueError:
            continue
    parts = [p for p in parts if len(p)]
    if not parts:
        raise ValueError(f"{model} at {weights} fits on no engine of {list(sizes)} x {chip}")
    df = pd.concat(parts, ignore_index=True).sort_values(
        ["per_user_tok_per_s", "per_gpu_tok_per_s"], ascending=[False, False])
    best = df["per_gpu_tok_per_s"].cummax()
    keep = df["per_gpu_tok_per_s"] >= best  # nothing faster per user makes more per GPU
    return df[keep].sort_values("per_user_tok_per_s").reset_index(drop=True)
