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
from .units import GB, GiB

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
