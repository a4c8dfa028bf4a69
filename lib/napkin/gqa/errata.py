"""Chapter 5, grouped-query attention: Llama 3.3 70B's cache with one KV head per query
head, and GQA's cut."""

from __future__ import annotations

from .. import essay
from ..units import MB, GB, GiB, KiB, MiB
from ..capacity import llama33
from ..errata.finding import Finding

#: The notebook these checks belong to (the errata page groups them by it).
CHAPTER = "05_gqa"


def _mha_config() -> dict:
    """Llama 3.3 70B with as many KV heads as the essay gives full multi-head attention."""
    return {**llama33.config(), "num_key_value_heads": int(essay.claim("mha_kv_heads"))}


def mha_per_token() -> Finding:
    per_token = llama33.kv_bytes(_mha_config(), 1)
    stated = essay.claim("mha_per_token_mib")
    slip = abs(per_token / KiB / 1000 - stated) < 0.005
    return Finding(
        data_says=f"{per_token:,} bytes = {per_token / MiB:.2f} MiB = {per_token / MB:.2f} MB",
        verdict="unit slip" if slip else ("agrees" if round(per_token / MiB, 2) == stated
                                          else "inconsistent"),
        conclusion_holds=True,
        explanation=f"{per_token / KiB:,.0f} KiB divided by 1,000 instead of 1,024: the figure "
                    f"is neither MiB ({per_token / MiB:.2f}) nor MB ({per_token / MB:.2f}). "
                    "The 8x ratio to GQA is unaffected.",
    )


def mha_full_context() -> Finding:
    tokens = int(essay.claim("kv_full_context_tokens"))
    total = llama33.kv_bytes(_mha_config(), tokens)
    stated = essay.claim("mha_128k_gb")
    return Finding(
        data_says=f"{total / GB:.1f} GB = {total / GiB:.0f} GiB",
        verdict="rounding" if int(total / GB) == stated else "inconsistent",
        conclusion_holds=True,
        explanation=f"Truncated rather than rounded ({total / GB:.1f} GB); in GiB it is "
                    f"{total / GiB:.0f}, eight times the GQA cache's "
                    f"{llama33.kv_bytes(llama33.config(), tokens) / GiB:.0f} GiB.",
    )


def gqa_cut() -> Finding:
    cfg = llama33.config()
    tokens = int(essay.claim("kv_full_context_tokens"))
    ratio = llama33.kv_bytes(_mha_config(), tokens) / llama33.kv_bytes(cfg, tokens)
    stated = essay.claim("gqa_cut")
    return Finding(
        data_says=f"{ratio:.0f}x in cache bytes ({cfg['num_attention_heads']} query heads share "
                  f"{cfg['num_key_value_heads']} KV heads)",
        verdict="agrees" if ratio == stated else "inconsistent",
        conclusion_holds=True,
        explanation="The cache and the bytes it adds to each decode step both scale with the "
                    "KV heads; the whole step shrinks by less, since the weights are read too "
                    "(chapter 5).",
    )
