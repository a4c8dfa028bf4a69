"""Multi-token prediction: how many tokens a decode step keeps when the model drafts its own.

DeepSeek-V3 and R1 carry a multi-token prediction (MTP) module, one more transformer layer
that proposes the next token from the main model's last hidden state. A serving engine with
``k`` MTP drafts runs the module ``k`` times (each draft from the one before), then runs
``1 + k`` tokens per sequence through the main model, which keeps the accepted prefix and
one token of its own. How many it keeps on average is measured, not derived: acceptance falls
with depth faster than a constant rate would say (``data/mtp_acceptance_length.csv``,
TensorRT-LLM's DeepSeek-R1 runs: 1.92 tokens a step with one draft, 2.82 with three).
"""

from __future__ import annotations

import numpy as np

from .. import tables

__all__ = ["accepted_tokens", "TABLE"]

#: Tokens a step keeps, by the number of drafts, as measured.
TABLE = "mtp_acceptance_length"


def accepted_tokens(draft_tokens):
    """Tokens a step keeps per sequence with ``draft_tokens`` MTP drafts (0: plain decoding,
    one), as measured (:data:`TABLE`). Works on arrays."""
    k = np.asarray(draft_tokens, dtype=float)
    if np.any(k < 0) or np.any(k != np.floor(k)):
        raise ValueError(f"draft_tokens must be whole numbers >= 0, got {draft_tokens!r}")
    df = tables.load(TABLE)
    depth = np.concatenate([[0.0], df["mtp_depth"].to_numpy(float)])
    kept = np.concatenate([[1.0], df["tokens_per_step"].to_numpy(float)])
    if np.any(k > depth.max()):
        raise ValueError(f"data/{TABLE}.csv measures at most {depth.max():.0f} drafts, got "
                         f"{draft_tokens!r}")
    return np.interp(k, depth, kept)
