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

Acceptance is not one rate, though: a drafted token further from what the target has
confirmed is guessed from guesses, and the papers that publish acceptance by position show
it falling (``data/speculative_acceptance_by_position.csv``). With rates ``a_1 .. a_k``,
each given that the earlier tokens were accepted, a cycle yields
``1 + a_1 + a_1 a_2 + ... + a_1 ... a_k`` (:func:`tokens_per_cycle`); :func:`position_rates`
builds them from the first position's rate and the published fall (:func:`decay_profile`).
Acceptance is a property of the draft and the text, not of the hardware: random weights
cannot measure it (chapter 10 takes it from the papers).
"""

from __future__ import annotations


import numpy as np
import pandas as pd

from .. import tables

__all__ = ["acceptance_for", "by_position", "CONDITIONAL", "decay_profile", "expected_tokens",
           "position_rates", "position_table", "POSITIONS_TABLE", "require_acceptance",
           "require_drafts", "stated", "tokens_per_cycle"]

#: Acceptance by draft position (``data/``): EAGLE's Table 2, DeepSeek-V3, Medusa's heads.
POSITIONS_TABLE = "speculative_acceptance_by_position"
#: The rows whose rate is conditional on the earlier tokens (a chain's), as the table says.
CONDITIONAL = "given the earlier drafted tokens were accepted"


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


def by_position() -> pd.DataFrame:
    """``data/speculative_acceptance_by_position.csv``."""
    return tables.load(POSITIONS_TABLE)


@tables.cached()
def decay_profile(method: str = "EAGLE", temperature: str = "0") -> tuple[float, ...]:
    """How a chain's acceptance falls with position, relative to the first: for each position
    the median over the ``method``'s models (at ``temperature``) of its rate over that model's
    first-position rate. Only rates conditional on the earlier tokens qualify, and a later
    position is never taken to be likelier than the first (capped at 1)."""
    df = by_position()
    df = df[(df["method"] == method) & (df["temperature"].astype(str) == str(temperature)) &
            (df["definition"] == CONDITIONAL)]
    if df.empty or df["draft_position"].nunique() < 2:
        raise ValueError(f"no conditional acceptance by position for method {method!r} at "
                         f"temperature {temperature!r} in data/{POSITIONS_TABLE}.csv")
    wide = df.pivot_table(index="target_model", columns="draft_position",
                          values="acceptance_low")
    relative = wide.div(wide[1], axis=0).median()
    return tuple(float(min(1.0, r)) for r in relative.sort_index())


def position_rates(first, k, profile: tuple[float, ...] | None = None) -> np.ndarray:
    """The ``k`` conditional rates of a chain whose first drafted token is accepted with
    probability ``first``, falling as ``profile`` (:func:`decay_profile` by default); past the
    profile's last position the last rate holds."""
    k = require_drafts(k)
    a = require_acceptance(first)
    if a.ndim:
        raise ValueError(f"first (the first position's acceptance) must be one number, got "
                         f"{first!r}")
    r = np.asarray(decay_profile() if profile is None else profile, dtype=float)
    if r.size == 0 or r[0] != 1 or np.any((r < 0) | (r > 1)):
        raise ValueError(f"profile must start at 1 and stay in [0, 1], got {profile!r}")
    r = np.concatenate([r, np.full(max(0, k - r.size), r[-1])])[:k]
    return float(a) * r


def tokens_per_cycle(rates) -> float:
    """Tokens one cycle yields with conditional acceptance ``rates`` by position:
    ``1 + a_1 + a_1 a_2 + ... + a_1 ... a_k``."""
    a = require_acceptance(rates)
    if a.ndim != 1:
        raise ValueError(f"rates must be a sequence of per-position acceptances, got {rates!r}")
    return float(1 + np.cumprod(a).sum())


def stated(method: str) -> tuple[float, float]:
    """The first position's acceptance a source states for ``method`` (low, high)."""
    df = by_position()
    df = df[(df["method"] == method) & (df["draft_position"] == 1)]
    if len(df) != 1:
        raise ValueError(f"method {method!r}: expected one stated first-position acceptance in "
                         f"data/{POSITIONS_TABLE}.csv, found {len(df)}")
    return float(df["acceptance_low"].iloc[0]), float(df["acceptance_high"].iloc[0])


def position_table(method: str = "EAGLE", temperature: str = "0") -> pd.DataFrame:
    """The published rates behind :func:`decay_profile`, by position: the lowest, median and
    highest over the method's models, and the median relative to the first position."""
    df = by_position()
    df = df[(df["method"] == method) & (df["temperature"].astype(str) == str(temperature)) &
            (df["definition"] == CONDITIONAL)]
    out = df.groupby("draft_position")["acceptance_low"].agg(
        models="size", low="min", median="median", high="max").reset_index()
    out["relative"] = decay_profile(method, temperature)[:len(out)]
    return out
