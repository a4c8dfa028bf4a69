"""How many tokens one draft-and-verify cycle yields, from the chance a drafted token is
accepted.

A draft proposes ``k`` tokens; the target model checks all of them in one forward pass and
keeps the longest prefix it agrees with, plus one token of its own (the correction at the
first disagreement, or the next token after the last drafted one when all are accepted).
If each drafted token is accepted with probability ``a``, independently of the others (the
standard simplification of Leviathan et al. and of Chen et al.), a cycle yields

    tau(a, k) = 1 + a + a^2 + ... + a^k = (1 - a^(k+1)) / (1 - a)

tokens: one at least (the target's own), ``k + 1`` at most. Papers report ``tau`` itself as
the *acceptance length*; :func:`acceptance_for` reads the ``a`` a measured ``tau`` implies.
Acceptance is a property of the draft and the text, not of the hardware: random weights
cannot measure it (chapter 10 takes it from the papers).
"""

from __future__ import annotations

import numpy as np


def require_drafts(k) -> int:
    """``k``, the tokens a draft proposes per cycle: a whole number >= 1."""
    if isinstance(k, bool) or not isinstance(k, (int, np.integer)) or k < 1:
        raise ValueError(f"k (drafted tokens per cycle) must be a whole number >= 1, got {k!r}")
    return int(k)


def require_acceptance(a) -> np.ndarray:
    """Acceptance rates as an array, each in [0, 1]."""
    arr = np.asarray(a, dtype=float)
    if arr.size == 0 or np.any(~np.isfinite(arr)) or np.any((arr < 0) | (arr > 1)):
        raise ValueError(f"acceptance must be a probability in [0, 1], got {a!r}")
    return arr


def expected_tokens(acceptance, k):
    """Tokens one cycle yields on average, ``(1 - a^(k+1)) / (1 - a)`` (``k + 1`` at a = 1).
    A float for a scalar ``acceptance``, an array for an array."""
    k = require_drafts(k)
    a = require_acceptance(acceptance)
    with np.errstate(divide="ignore", invalid="ignore"):
        tau = np.where(a < 1, (1 - a ** (k + 1)) / np.where(a < 1, 1 - a, 1.0), k + 1.0)
    return float(tau) if tau.ndim == 0 else tau


def acceptance_for(tokens_per_cycle: float, k: int) -> float:
    """The acceptance rate whose cycles of ``k`` drafted tokens yield ``tokens_per_cycle``
    on average (the inverse of :func:`expected_tokens`, by bisection: tau rises with a)."""
    k = require_drafts(k)
    tau = float(tokens_per_cycle)
    if not 1 <= tau <= k + 1:
        raise ValueError(f"tokens_per_cycle must lie between 1 and k + 1 = {k + 1} for k = {k}, "
                         f"got {tokens_per_cycle!r}")
    low, high = 0.0, 1.0
    for _ in range(60):
        mid = (low + high) / 2
        low, high = (mid, high) if expected_tokens(mid, k) < tau else (low, mid)
    return (low + high) / 2
