"""Chapter 10, speculative decoding: the essay's one token per read of the weights against a
published single stream that outruns the bandwidth ceiling."""

from __future__ import annotations

from .. import essay
from ..speculative import published
from ..errata.finding import Finding

#: The notebook these checks belong to (the errata page groups them by it).
CHAPTER = "10_speculative_decoding"


def ceiling_under_speculation() -> Finding:
    beyond = published.beyond_ceiling()
    spec, plain, ceiling = (beyond["tokens_per_s"], beyond["plain_tokens_per_s"],
                            beyond["ceiling_tokens_per_s"])
    size, per_read = beyond["weight_bytes"], beyond["per_read"]
    stated = essay.claim("tokens_per_weight_read")
    return Finding(
        data_says=f"EAGLE-3 in SGLang decodes one stream of Llama 3.1 8B (BF16, "
                  f"{size / 1e9:.1f} GB) on one H100 at {spec:.0f} tokens/s, {per_read:.2f}x the "
                  f"ceiling of {ceiling:.0f} tokens/s: at least {per_read:.2f} tokens per read of "
                  f"the weights; without speculation the same engine reaches {plain:.0f} "
                  f"tokens/s, {plain / ceiling:.0%} of the ceiling",
        verdict="agrees" if per_read <= stated else "inconsistent",
        conclusion_holds=per_read <= stated,
        explanation="The ceiling bounds the target model's forward passes, not the tokens: a "
                    "pass that verifies a draft emits every drafted token it accepts, and a "
                    "memory-bound pass costs barely more for checking several. It holds for "
                    "plain decoding, which the essay describes; speculative decoding, which "
                    "the essay leaves out, spends the arithmetic the ceiling leaves idle "
                    "(chapter 10), and compute starts to matter for a single stream.",
    )
