"""What the reader will run: a workload, and the essay's three buyers as presets."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from .. import catalog, essay, kvcache, models

#: What a workload may be ranked by.
RANK_BY = {"ttft": "time to first token", "decode": "single-stream tokens/s",
           "concurrency": "tokens/s per user at that concurrency"}
#: The cache is kept at 16 bits, llama.cpp's default.
KV_DTYPE = "f16"


@dataclass(frozen=True)
class Workload:
    """What you will run: prompt and output tokens per request, users at once, the model
    (a name in ``data/models.csv``) and its weight format, and what matters most."""

    name: str
    prompt_tokens: int
    output_tokens: int
    users: int
    model: str
    weight_format: str
    rank_by: str = "ttft"

    def __post_init__(self):
        for what in ("prompt_tokens", "output_tokens", "users"):
            v = getattr(self, what)
            if isinstance(v, bool) or not isinstance(v, (int, np.integer)) or v < 1:
                raise ValueError(f"{what} must be a whole number >= 1, got {v!r}")
        if self.model not in catalog.names():
            raise ValueError(f"unknown model {self.model!r}; known: {', '.join(catalog.names())}")
        models.bits_per_weight(self.weight_format)  # raises for an unknown format
        if self.rank_by not in RANK_BY:
            raise ValueError(f"rank_by must be one of {', '.join(RANK_BY)}, got {self.rank_by!r}")
        limit = kvcache.max_context_tokens(catalog.config(self.model))
        if self.prompt_tokens + self.output_tokens > limit:
            raise ValueError(f"prompt_tokens + output_tokens = "
                             f"{self.prompt_tokens + self.output_tokens:,} is beyond "
                             f"{self.model}'s context of {limit:,} tokens")

    @property
    def context_tokens(self) -> int:
        """Tokens cached at the end of a request."""
        return self.prompt_tokens + self.output_tokens

    @property
    def mean_context_tokens(self) -> int:
        """Tokens cached, on average, while the answer is written."""
        return self.prompt_tokens + self.output_tokens // 2


def presets() -> dict[str, Workload]:
    """The essay's three buyers. The coding agent's prompt is the essay's; the concurrent
    users are the essay's batch example; the other lengths and the formats are this book's
    choices (a 4-bit local model, an 8-bit served one)."""
    model = "Llama-3.3-70B"
    return {
        "coding agent": Workload("coding agent", int(essay.claim("coding_agent_prompt")), 1000,
                                 1, model, "Q4_K", "ttft"),
        "chat": Workload("chat", 2000, 500, 1, model, "Q4_K", "decode"),
        "many users": Workload("many users", 2000, 500, int(essay.claim("batch_example")),
                               model, "FP8", "concurrency"),
    }
