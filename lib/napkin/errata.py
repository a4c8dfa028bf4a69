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


# -- chapters 2 and 3: the Spark gap and the H100 ridge --------------------------------------

from . import phases, roofline  # noqa: E402  (appended section; kept with its checks)

SPARK_BENCH = ("https://github.com/ggml-org/llama.cpp/blob/"
               "4c7e9893c4ca8eec35d032726d14b74fae76cff8/benches/dgx-spark.md")


@check
def spark_pair() -> Erratum:
    pp, tg = essay.claim("spark_pp2048"), essay.claim("spark_tg32")
    builds = phases.essay_pair_by_build()
    pp_hits = phases.matches(pp, decimals=0)
    tg_hits = phases.matches(tg, decimals=2)
    at_zero = pp_hits[pp_hits["context_depth_tokens"] == 0]
    found = "; ".join(f"build {r['build']}: {r['pp_tok_per_s']:,.2f} / {r['tg_tok_per_s']:.2f}"
                      for _, r in builds.iterrows())
    where = "; ".join(f"{r['test']} at depth {r['context_depth_tokens']:,} in build {r['build']}"
                      f" ({r['throughput_tok_per_s']:,.2f})" for _, r in pp_hits.iterrows())
    near = phases.nearest(tg, "tg32")
    return Erratum(
        topic="DGX Spark gpt-oss-120b pair, build by build",
        chapter="02_spark_gap",
        essay_says=f"pp2048 {pp:,.0f} tok/s and tg32 {tg:.2f} tok/s",
        data_says=f"at empty context, {found}. {pp:,.0f} appears only as {where or 'nothing'}; "
                  + (f"no run shows {tg:.2f}" if tg_hits.empty else
                     f"{tg:.2f} appears in {len(tg_hits)} row(s)")
                  + f" (nearest at depth 0: {near['throughput_tok_per_s']:.2f}, build "
                    f"{near['build']})",
        verdict="agrees" if not at_zero.empty and not tg_hits.empty else "not in the source",
        conclusion_holds=True,
        explanation=(f"The essay's prefill figure matches a row measured with "
                     f"{', '.join(f'{d:,}' for d in pp_hits['context_depth_tokens'])} tokens "
                     "already in the cache" if not pp_hits.empty else
                     "The essay's prefill figure matches no row") +
                    ", paired with a decode figure no copy of the file contains. The file's "
                    "own depth-0 pairs give the same picture (see the next row).",
        source=SPARK_BENCH,
    )


@check
def spark_gap() -> Erratum:
    gap = essay.claim("spark_gap")
    builds = phases.essay_pair_by_build()
    lo, hi = builds["ratio"].min(), builds["ratio"].max()
    own = essay.claim("spark_pp2048") / essay.claim("spark_tg32")
    first, last = builds.iloc[0], builds.iloc[-1]
    return Erratum(
        topic="The prefill/decode gap on DGX Spark",
        chapter="02_spark_gap",
        essay_says=f"a {gap:.0f}x gap between the two phases",
        data_says=", ".join(f"{r['ratio']:.1f}x (build {r['build']})"
                            for _, r in builds.iterrows())
                  + f"; the essay's own pair gives {own:.1f}x",
        verdict="agrees" if round(lo) <= gap <= round(hi) else "inconsistent",
        conclusion_holds=bool(round(lo) >= gap),
        explanation="Every build of the benchmark file shows about the essay's gap at empty "
                    f"context or more; from build {first['build']} to {last['build']} prefill "
                    f"changed by {last['pp_tok_per_s'] / first['pp_tok_per_s'] - 1:+.0%} and "
                    f"decode by {last['tg_tok_per_s'] / first['tg_tok_per_s'] - 1:+.0%}, so the "
                    "gap is a property of the software as much as of the box.",
        source=SPARK_BENCH,
    )


H100_URL = "https://www.nvidia.com/en-us/data-center/h100/"


@check
def h100_ridge() -> Erratum:
    chip = hardware.chip("H100 SXM")
    dense = chip.specs["fp16_tensor_dense_TFLOPS"]
    sparse = chip.specs["fp16_tensor_sparse_TFLOPS"]
    bw = chip.bandwidth_bytes_per_s
    ridge = roofline.ridge_point(dense * 1e12, bw)
    stated = essay.claim("h100_ridge")
    return Erratum(
        topic="H100 SXM ridge point, dense and sparse",
        chapter="03_h100_ridge",
        essay_says=f"{essay.claim('h100_fp16_dense'):.0f} dense TFLOPS / "
                   f"{essay.claim('h100_bandwidth') / 1000:.2f} TB/s = {stated:.0f} FLOP/byte",
        data_says=f"{dense:.0f} dense FP16 TFLOPS / {bw / 1e12:.2f} TB/s = {ridge:.1f} "
                  f"FLOP/byte; the sparse {sparse:,.0f} would give "
                  f"{roofline.ridge_point(sparse * 1e12, bw):.1f}",
        verdict="rounding" if round(ridge) == stated else "inconsistent",
        conclusion_holds=True,
        explanation="The essay correctly halves NVIDIA's with-sparsity headline before dividing; "
                    "a ridge from the sparse figure would be twice as high and wrong for dense "
                    "matmuls.",
        source=H100_URL,
    )


@check
def decode_batch_crossover() -> Erratum:
    ridge = roofline.chip_roof("H100 SXM").ridge
    # FP16 weights: intensity of the weight matmuls equals the batch size.
    batch = ridge / roofline.matmul_intensity(1, 2.0)
    stated = essay.claim("decode_batch_crossover")
    return Erratum(
        topic="Batch at which H100 decode turns compute-bound (weights only)",
        chapter="03_h100_ridge",
        essay_says=f"roughly {stated:.0f} concurrent sequences",
        data_says=f"intensity of the FP16 weight matmuls = batch, so batch {batch:.0f}",
        verdict="rounding" if round(batch, -2) == stated else "inconsistent",
        conclusion_holds=True,
        explanation="Exactly the ridge point, as the essay says, counting weight reads only.",
        source=H100_URL,
    )


@check
def decode_crossover_with_kv() -> Erratum:
    model = roofline.llama_3_3_70b()
    ridge = roofline.chip_roof("H100 SXM").ridge
    limit = roofline.context_limit(model, ridge)
    at = {c: roofline.batch_to_ridge(model, ridge, c) for c in (1024, 2048)}
    stated = essay.claim("decode_batch_crossover")
    return Erratum(
        topic="The batch crossover once every sequence reads its own KV cache",
        chapter="03_h100_ridge",
        essay_says=f"a batch of roughly {stated:.0f} makes H100 decode compute-bound",
        data_says=f"{model.name} at FP16: batch {at[1024]:,.0f} at 1,024 tokens of context; no "
                  f"batch at all beyond {limit:,.0f} tokens (e.g. 2,048: "
                  f"{'never' if at[2048] == float('inf') else f'{at[2048]:,.0f}'})",
        verdict="inconsistent",
        conclusion_holds=False,
        explanation="Batching shares the weight reads, not the cache reads: each sequence's "
                    "attention does about as many FLOPs per cached byte as there are query "
                    f"heads per KV head ({model.query_groups}), far below the ridge, so past a "
                    "short context the step stays memory-bound however large the batch.",
        source=roofline.LLAMA_3_3_70B_SOURCE,
    )


@check
def prefill_over_ridge() -> Erratum:
    ridge = roofline.chip_roof("H100 SXM").ridge
    n = essay.claim("prefill_intensity")
    intensity = roofline.matmul_intensity(n, 2.0)
    stated = essay.claim("prefill_over_ridge")
    return Erratum(
        topic="A 2,000-token prefill against the H100 ridge",
        chapter="03_h100_ridge",
        essay_says=f"intensity ~{n:,.0f}, compute-bound {stated:.0f} times over",
        data_says=f"{intensity:,.0f} FLOP/byte at FP16 / {ridge:.1f} = {intensity / ridge:.2f}x",
        verdict="rounding" if round(intensity / ridge) == stated else "inconsistent",
        conclusion_holds=True,
        explanation="Weight matmuls only; the prompt's attention adds FLOPs, so the real "
                    "intensity is a little higher still.",
        source=H100_URL,
    )
