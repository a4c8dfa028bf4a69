"""A service level: how fast each user's answer must stream and how soon its first token must
come, so that a way of serving is priced at a load a chat user would accept.

Serving more users at once makes each token cheaper and each stream slower (chapter 11's
trade chart), so a price "at as many users as fit" can be a price nobody would pay for: a
stream slower than its reader, a first token minutes away. Chapter 11 prices each way at the
largest number of users it serves within a :class:`ServiceLevel` instead. The default,
:func:`chat`, comes from ``data/chat_service_level.csv``: a stream at least as fast as an
adult reads English (words per minute over words per token) and a first token within the
wait that keeps a user's attention on the dialogue.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from .. import tables

__all__ = ["chat", "reading_tokens_per_s", "ServiceLevel", "sources"]


@dataclass(frozen=True)
class ServiceLevel:
    """Each user sees at least ``tokens_per_s_per_user`` while the answer streams, and the
    first token within ``first_token_s`` seconds of sending the prompt."""

    tokens_per_s_per_user: float
    first_token_s: float

    def __post_init__(self):
        for name in ("tokens_per_s_per_user", "first_token_s"):
            v = getattr(self, name)
            if isinstance(v, bool) or not isinstance(v, (int, float)) or not math.isfinite(v) \
                    or v <= 0:
                raise ValueError(f"{name} must be a positive number, got {v!r}; a service "
                                 f"level needs a speed per user and a first-token limit")

    @property
    def tpot_s(self) -> float:
        """The longest time per output token the level allows."""
        return 1.0 / self.tokens_per_s_per_user

    def met(self, per_user_tokens_per_s: float, first_token_s: float) -> bool:
        """Whether a stream of that speed, whose first token takes that long, meets it."""
        return bool(per_user_tokens_per_s >= self.tokens_per_s_per_user
                    and first_token_s <= self.first_token_s)

    def text(self) -> str:
        """``5.3 tokens/s per user, first token within 10 s``."""
        return (f"{self.tokens_per_s_per_user:.1f} tokens/s per user, first token within "
                f"{self.first_token_s:.0f} s")


@tables.cached("chat_service_level")
def sources() -> dict:
    """``data/chat_service_level.csv`` by quantity: value, unit and source of each row."""
    df = tables.load("chat_service_level").set_index("quantity")
    return {q: {"value": float(r["value"]), "unit": r["unit"], "source_url": r["source_url"]}
            for q, r in df.iterrows()}


def reading_tokens_per_s() -> float:
    """How many tokens a second an adult reads: silent reading rate (words per minute) over
    words per token, over 60."""
    s = sources()
    return s["silent_reading_rate"]["value"] / s["words_per_token"]["value"] / 60


def chat() -> ServiceLevel:
    """The book's default for a chat user: a stream no slower than reading (rounded to a
    tenth of a token a second, as the calculator's slider sets it), the first token within
    the attention limit."""
    return ServiceLevel(round(reading_tokens_per_s(), 1), sources()["attention_limit"]["value"])
