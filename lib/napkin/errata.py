"""Errata: every place where the essay's numbers and the primary data part ways.

Each check is a small function that recomputes one of the essay's claims from
``data/`` and returns an :class:`Erratum` saying what the essay states, what the
data says, and whether the essay's conclusion survives. Nothing here is typed in:
the essay's side comes from ``data/essay_claims.csv`` via :func:`napkin.essay.claim`,
the data's side from the sourced tables. Chapters register their checks with
``@check``; the errata page lists them all.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass
from typing import Callable

import pandas as pd

from . import essay, hardware, models, published, tables
from .units import GB, MB, GiB, KiB, MiB

#: How far apart the two sides are, from harmless to wrong.
VERDICTS = ("agrees", "rounding", "unit slip", "wrong variant", "not in the source",
            "inconsistent", "sources disagree")


@dataclass(frozen=True)
class Erratum:
    topic: str
    chapter: str
    essay_says: str
    data_says: str
    verdict: str
    conclusion_holds: bool
    explanation: str
    source: str

    def __post_init__(self):
        if self.verdict not in VERDICTS:
            raise ValueError(f"verdict must be one of {', '.join(VERDICTS)}; got {self.verdict!r}")


CHECKS: list[Callable[[], Erratum]] = []


def check(fn: Callable[[], Erratum]) -> Callable[[], Erratum]:
    """Register a check; the errata page runs every registered one."""
    CHECKS.append(fn)
    return fn


def all_errata(include_agreeing: bool = True) -> pd.DataFrame:
    rows = [asdict(fn()) for fn in CHECKS]
    df = pd.DataFrame(rows)
    return df if include_agreeing else df[df["verdict"] != "agrees"].reset_index(drop=True)


# -- chapter 1: the napkin ceiling ----------------------------------------------------------

@check
def fraction_band() -> Erratum:
    low, high = essay.claim("decode_fraction_low"), essay.claim("decode_fraction_high")
    table = published.essay_table()
    lo, hi = table["fraction_of_ceiling"].min(), table["fraction_of_ceiling"].max()
    holds = round(100 * lo) >= low and round(100 * hi) <= high
    return Erratum(
        topic=f"The {low:.0f}-{high:.0f} % rule against the essay's own table",
        chapter="01_napkin_ceiling",
        essay_says=f"real decode lands at roughly {low:.0f}-{high:.0f} % of the ceiling",
        data_says=f"its own table spans {lo:.0%} to {hi:.0%} (M2 Max at {hi:.0%})",
        verdict="agrees" if holds else "inconsistent",
        conclusion_holds=True,
        explanation="The stated range is narrower than the table it summarises; the wider "
                    "data (chapter 1) shows the range describes Q4_0 on Max and Ultra chips "
                    "only, while F16, Q8_0 and smaller chips sit well above it.",
        source="https://github.com/ggml-org/llama.cpp/discussions/4167",
    )


@check
def model_size_units() -> Erratum:
    file_bytes = models.gguf_size_bytes("Q4_0", "file")
    tensor_bytes = models.gguf_size_bytes("Q4_0", "tensors")
    stated = essay.claim("q4_0_file_size")
    return Erratum(
        topic="Llama-2-7B Q4_0 size: GB on disk, GiB in llama-bench",
        chapter="01_napkin_ceiling",
        essay_says=f"{stated:.2f} GB on disk",
        data_says=f"{file_bytes / GB:.2f} GB file (= {file_bytes / GiB:.2f} GiB); llama-bench "
                  f"reports {tensor_bytes / GiB:.2f} GiB (= {tensor_bytes / GB:.3f} GB) of "
                  "tensor data",
        verdict="agrees" if abs(stated * GB - file_bytes) < 0.005 * GB else "unit slip",
        conclusion_holds=True,
        explanation="Both numbers describe the same file: Hugging Face prints decimal GB, "
                    f"llama-bench prints GiB. Reading {tensor_bytes / GiB:.2f} as GB would put "
                    f"the ceiling {GiB / GB - 1:.1%} too high.",
        source="https://huggingface.co/TheBloke/Llama-2-7B-GGUF",
    )


@check
def ceilings() -> Erratum:
    table = published.essay_table().drop_duplicates("bandwidth_bytes_per_s")
    computed = table["ceiling_tokens_per_s"].tolist()
    stated = [essay.claim("ceiling_400"), essay.claim("ceiling_800")]
    same = all(round(c) == s for c, s in zip(computed, stated))
    return Erratum(
        topic="The ceilings of the essay's table",
        chapter="01_napkin_ceiling",
        essay_says=" and ".join(f"{s:.0f} tok/s" for s in stated),
        data_says=" and ".join(f"{c:.1f} tok/s" for c in computed),
        verdict="rounding" if same else "inconsistent",
        conclusion_holds=True,
        explanation="Bandwidth over file size, rounded to whole tokens per second.",
        source="https://huggingface.co/TheBloke/Llama-2-7B-GGUF",
    )


@check
def m3_ultra_bandwidth() -> Erratum:
    apple = hardware.chip("M3 Ultra").bandwidth_bytes_per_s / GB
    table = published.apple("tg128", ("Q4_0",))
    thread = table[table["chip"] == "M3 Ultra"]
    listed = tables.load("apple_silicon_llama2_7b")
    listed = listed[listed["chip"] == "M3 Ultra"]["memory_bandwidth_GB_per_s"].iloc[0]
    return Erratum(
        topic="M3 Ultra bandwidth in the llama.cpp thread",
        chapter="01_napkin_ceiling",
        essay_says="(not quoted by the essay)",
        data_says=f"the thread's table lists {listed:.0f} GB/s; Apple states {apple:.0f} GB/s",
        verdict="sources disagree" if listed != apple else "agrees",
        conclusion_holds=True,
        explanation=f"The book uses Apple's figure for the ceiling of all {len(thread)} M3 "
                    f"Ultra runs; the difference moves their fraction of ceiling by "
                    f"{apple / listed - 1:.1%}.",
        source="https://github.com/ggml-org/llama.cpp/discussions/4167",
    )


# -- chapters 4 and 5: the KV cache and grouped-query attention ----------------------------

def _llama33() -> dict:
    from . import catalog

    return catalog.config("Llama-3.3-70B")


def _kv(config, tokens: int, batch: int = 1) -> int:
    from .kvcache import kv_cache_bytes

    return kv_cache_bytes(config, tokens, batch, essay.claim("kv_bytes_per_element"))


@check
def llama33_config_reading() -> Erratum:
    from . import catalog, kvcache

    cfg = _llama33()
    pairs = {"layers": ("llama33_layers", cfg["num_hidden_layers"]),
             "attention heads": ("llama33_attention_heads", cfg["num_attention_heads"]),
             "KV heads": ("llama33_kv_heads", cfg["num_key_value_heads"]),
             "hidden size": ("llama33_hidden_size", cfg["hidden_size"]),
             "head dim": ("llama33_head_dim", kvcache.head_dim(cfg))}
    differ = [k for k, (claim, value) in pairs.items() if essay.claim(claim) != value]
    return Erratum(
        topic="Llama 3.3 70B's architecture as the essay reads its config.json",
        chapter="04_kv_cache",
        essay_says=", ".join(f"{essay.claim(c):.0f} {k}" for k, (c, _) in pairs.items()),
        data_says=", ".join(f"{v} {k}" for k, (_, v) in pairs.items()),
        verdict="inconsistent" if differ else "agrees",
        conclusion_holds=not differ,
        explanation="The config.json the essay links, as recorded in data/models.",
        source=catalog.index().set_index("model").loc["Llama-3.3-70B", "config_url"],
    )


@check
def kv_per_token() -> Erratum:
    from .kvcache import kv_bytes_per_token

    per_token = kv_bytes_per_token(_llama33(), essay.claim("kv_bytes_per_element"))
    stated, kib = essay.claim("kv_per_token_bytes"), essay.claim("kv_per_token_kib")
    exact = per_token == stated and per_token / KiB == kib
    return Erratum(
        topic="Llama 3.3 70B: KV cache per token at FP16",
        chapter="04_kv_cache",
        essay_says=f"{stated:,.0f} bytes ≈ {kib:.0f} KiB per token",
        data_says=f"{per_token:,} bytes = {per_token / KiB:.0f} KiB = {per_token / 1e3:.2f} KB",
        verdict="agrees" if exact else "inconsistent",
        conclusion_holds=exact,
        explanation="2 (K and V) × KV heads × head dim × layers × 2 bytes; exact, so the "
                    "essay's '≈' is not needed.",
        source="essay#the-kv-cache-is-what-grows",
    )


@check
def kv_full_context() -> Erratum:
    tokens = int(essay.claim("kv_full_context_tokens"))
    full = _kv(_llama33(), tokens)
    rounded = _kv(_llama33(), 128_000)
    stated = essay.claim("kv_full_context_gb")
    return Erratum(
        topic="Llama 3.3 70B: one sequence at the full context",
        chapter="04_kv_cache",
        essay_says=f"{stated:.0f} GB at {tokens:,} tokens",
        data_says=f"{full / GB:.2f} GB = {full / GiB:.2f} GiB",
        verdict="rounding" if round(full / GB) == stated else "inconsistent",
        conclusion_holds=True,
        explanation=f"The same cache is quoted as {full / GiB:.0f} (GiB) or {stated:.0f} (GB): "
                    f"{GiB / GB - 1:.1%} apart. Reading 128k as 128,000 tokens gives "
                    f"{rounded / GB:.1f} GB, {tokens / 128_000 - 1:.1%} less.",
        source="essay#the-kv-cache-is-what-grows",
    )


@check
def kv_batch_example() -> Erratum:
    from . import hardware

    batch, tokens = int(essay.claim("kv_example_batch")), int(essay.claim("kv_example_context"))
    total = _kv(_llama33(), tokens, batch)
    h100 = hardware.chip("H100 SXM").capacity_bytes
    stated = essay.claim("kv_batch32_8k_gb")
    return Erratum(
        topic="Llama 3.3 70B: batch 32 at 8k against an 80 GB H100",
        chapter="04_kv_cache",
        essay_says=f"{stated:.0f} GB, more than an {essay.claim('h100_capacity'):.0f} GB H100",
        data_says=f"{total / GB:.1f} GB = {total / GiB:.1f} GiB of cache alone; the H100 "
                  f"holds {h100 / GB:.0f} GB",
        verdict="rounding" if round(total / GB) == stated else "inconsistent",
        conclusion_holds=total > h100,
        explanation=f"Exactly {total / GiB:.0f} GiB: the cache alone exceeds the GPU by "
                    f"{total / h100 - 1:.1%} before a single weight is loaded.",
        source="essay#the-kv-cache-is-what-grows",
    )


@check
def mha_per_token() -> Erratum:
    cfg = {**_llama33(), "num_key_value_heads": int(essay.claim("mha_kv_heads"))}
    per_token = _kv(cfg, 1)
    stated = essay.claim("mha_per_token_mib")
    slip = abs(per_token / KiB / 1000 - stated) < 0.005
    return Erratum(
        topic="Full multi-head attention: cache per token",
        chapter="05_gqa",
        essay_says=f"{stated:.2f} MiB per token",
        data_says=f"{per_token:,} bytes = {per_token / MiB:.2f} MiB = {per_token / MB:.2f} MB",
        verdict="unit slip" if slip else ("agrees" if round(per_token / MiB, 2) == stated
                                          else "inconsistent"),
        conclusion_holds=True,
        explanation=f"{per_token / KiB:,.0f} KiB divided by 1,000 instead of 1,024: the figure "
                    f"is neither MiB ({per_token / MiB:.2f}) nor MB ({per_token / MB:.2f}). "
                    "The 8x ratio to GQA is unaffected.",
        source="essay#the-kv-cache-is-what-grows",
    )


@check
def mha_full_context() -> Erratum:
    cfg = {**_llama33(), "num_key_value_heads": int(essay.claim("mha_kv_heads"))}
    total = _kv(cfg, int(essay.claim("kv_full_context_tokens")))
    stated = essay.claim("mha_128k_gb")
    return Erratum(
        topic="Full multi-head attention: one sequence at 128k",
        chapter="05_gqa",
        essay_says=f"{stated:.0f} GB",
        data_says=f"{total / GB:.1f} GB = {total / GiB:.0f} GiB",
        verdict="rounding" if int(total / GB) == stated else "inconsistent",
        conclusion_holds=True,
        explanation=f"Truncated rather than rounded ({total / GB:.1f} GB); in GiB it is "
                    f"{total / GiB:.0f}, eight times the GQA cache's "
                    f"{_kv(_llama33(), int(essay.claim('kv_full_context_tokens'))) / GiB:.0f} GiB.",
        source="essay#the-kv-cache-is-what-grows",
    )


@check
def gqa_cut() -> Erratum:
    cfg = _llama33()
    mha = {**cfg, "num_key_value_heads": int(essay.claim("mha_kv_heads"))}
    tokens = int(essay.claim("kv_full_context_tokens"))
    ratio = _kv(mha, tokens) / _kv(cfg, tokens)
    stated = essay.claim("gqa_cut")
    return Erratum(
        topic="GQA's cut in KV footprint and traffic",
        chapter="05_gqa",
        essay_says=f"{stated:.0f}x",
        data_says=f"{ratio:.0f}x in cache bytes ({cfg['num_attention_heads']} query heads share "
                  f"{cfg['num_key_value_heads']} KV heads)",
        verdict="agrees" if ratio == stated else "inconsistent",
        conclusion_holds=True,
        explanation="The cache and the bytes it adds to each decode step both scale with the "
                    "KV heads; the whole step shrinks by less, since the weights are read too "
                    "(chapter 5).",
        source="https://arxiv.org/abs/2305.13245",
    )
