"""Errata: every place where the essay's numbers and the primary data part ways.

Each check is a small function that recomputes one of the essay's claims from
``data/`` and returns an :class:`Erratum` saying what the essay states, what the
data says, and whether the essay's conclusion survives. Nothing here is typed in:
the essay's side comes from ``data/essay_claims.csv`` via :func:`napkin.essay.claim`,
the data's side from the sourced tables. Chapters register their checks with
``@check``; the errata page lists them all.
"""

from __future__ import annotations

import math
from dataclasses import asdict, dataclass
from typing import Callable

import pandas as pd

from . import essay, hardware, models, published, tables
from .units import GB, MB, GiB, KiB, MiB

#: How far apart the two sides are, from harmless to wrong.
VERDICTS = ("agrees", "rounding", "unit slip", "wrong variant", "not in the source",
            "not in any copy read", "inconsistent", "sources disagree")


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
    claims: tuple[str, ...] = ()  # the rows of data/essay_claims.csv this check covers

    def __post_init__(self):
        if self.verdict not in VERDICTS:
            raise ValueError(f"verdict must be one of {', '.join(VERDICTS)}; got {self.verdict!r}")


CHECKS: list[Callable[[], Erratum]] = []


def check(fn: Callable[[], Erratum]) -> Callable[[], Erratum]:
    """Register a check; the errata page runs every registered one."""
    CHECKS.append(fn)
    return fn


def claims_checked(fn: Callable[[], Erratum]) -> set[str]:
    """The essay claims a check covers: those it declares, and those its code reads
    with ``essay.claim("name")``."""
    import inspect
    import re

    named = set(re.findall(r"""\bessay\.claim\(\s*["']([a-z0-9_]+)["']""",
                           inspect.getsource(fn)))
    return named | set(fn().claims)


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
    apple = published.apple()
    inside = apple["fraction_of_ceiling"].between(low / 100, high / 100)
    q4, big = apple["quant"] == "Q4_0", apple["chip"].str.contains("Max|Ultra")
    big_q4, small_q4 = inside[q4 & big].mean(), inside[q4 & ~big].mean()
    other, other_median = inside[~q4].mean(), apple[~q4]["fraction_of_ceiling"].median()
    return Erratum(
        topic=f"The {low:.0f}-{high:.0f} % rule against the essay's own table",
        chapter="01_napkin_ceiling",
        essay_says=f"real decode lands at roughly {low:.0f}-{high:.0f} % of the ceiling",
        data_says=f"its own table spans {lo:.0%} to {hi:.0%} (M2 Max at {hi:.0%})",
        verdict="agrees" if holds else "inconsistent",
        conclusion_holds=True,
        explanation="The stated range is narrower than the table it summarises. Over every "
                    f"Apple run of the thread (chapter 1) it holds {big_q4:.0%} of the Q4_0 "
                    f"runs on Max and Ultra chips, {small_q4:.0%} of those on smaller chips "
                    f"and {other:.0%} of the F16 and Q8_0 runs, whose median reaches "
                    f"{other_median:.0%}.",
        source="https://github.com/ggml-org/llama.cpp/discussions/4167",
        claims=("decode_fraction_low", "decode_fraction_high", "m1_max_fraction",
                "m2_max_fraction", "m1_ultra_fraction", "m2_ultra_fraction"),
    )


@check
def essay_table_measurements() -> Erratum:
    table = published.essay_table().set_index("chip")
    keys = {"M1 Max": "m1_max", "M2 Max": "m2_max", "M1 Ultra": "m1_ultra", "M2 Ultra": "m2_ultra"}
    mismatched = [chip for chip, key in keys.items()
                  if table.loc[chip, "tokens_per_s"] != essay.claim(f"{key}_tg128")]
    uplift = published.ultra_uplift(published.essay_table())
    ratios = [round(uplift.loc[g, "speed_ratio"], 2) for g in ("M1", "M2")]
    stated = [essay.claim("ultra_uplift_m1"), essay.claim("ultra_uplift_m2")]
    chosen = ", ".join(f"{chip} {int(table.loc[chip, 'gpu_cores'])}-core"
                       for chip in keys)
    thread = published.apple("tg128", ("Q4_0",))
    largest = all(table.loc[c, "gpu_cores"] == thread[thread["chip"] == c]["gpu_cores"].max()
                  for c in keys)
    slower = all((thread[(thread["chip"] == c) & (thread["gpu_cores"] < table.loc[c, "gpu_cores"])]
                  ["tokens_per_s"] < table.loc[c, "tokens_per_s"]).all() for c in keys)
    return Erratum(
        topic="Measured tg128 of the four chips, and what Max to Ultra buys",
        chapter="01_napkin_ceiling",
        essay_says=", ".join(f"{essay.claim(k + '_tg128'):.2f}" for k in keys.values())
                   + f" tok/s; Ultra over Max {stated[0]:.2f}x (M1), {stated[1]:.2f}x (M2)",
        data_says=", ".join(f"{table.loc[c, 'tokens_per_s']:.2f}" for c in keys)
                  + f" tok/s ({chosen}); {ratios[0]:.2f}x and {ratios[1]:.2f}x",
        verdict="agrees" if not mismatched and ratios == stated else "inconsistent",
        conclusion_holds=True,
        explanation=("The essay's figures are the largest GPU configuration of each chip"
                     if largest else "The essay's figures are not all the largest GPU "
                     "configuration of each chip")
                    + ("; every smaller configuration in the same thread decodes more slowly."
                       if slower else "; some smaller configurations decode faster."),
        source="https://github.com/ggml-org/llama.cpp/discussions/4167",
        claims=("m1_max_tg128", "m2_max_tg128", "m1_ultra_tg128", "m2_ultra_tg128",
                "ultra_uplift", "ultra_uplift_m1", "ultra_uplift_m2"),
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
        claims=("q4_0_file_size",),
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
        claims=("ceiling_400", "ceiling_800", "max_bandwidth", "ultra_bandwidth"),
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


@check
def quantization_cut() -> Erratum:
    f16, q4 = (published.llama2_7b_bytes_per_token(q) for q in ("F16", "Q4_0"))
    apple = published.apple()
    wide = apple.pivot_table(index="machine", columns="quant", values="tokens_per_s").dropna()
    gain = (wide["Q4_0"] / wide["F16"]).median()
    stated = essay.claim("quantization_cut")
    return Erratum(
        topic="What FP16 to 4-bit buys",
        chapter="01_napkin_ceiling",
        essay_says=f"roughly {stated:.0f}x fewer bytes per token, roughly {stated:.0f}x the ceiling",
        data_says=f"Q4_0 stores {f16 / q4:.2f}x fewer bytes than F16 (its block scales cost "
                  f"half a bit per weight); measured tg rose a median {gain:.2f}x on Apple chips",
        verdict="rounding" if round(f16 / q4) == stated else "inconsistent",
        conclusion_holds=bool(gain > 1),
        explanation="The ceiling moves with the bytes, as the essay says; the measured speed "
                    "moves less. A plausible reading, not measured here: unpacking 4-bit "
                    "blocks costs arithmetic that an F16 load does not.",
        source="https://github.com/ggml-org/llama.cpp/discussions/4167",
        claims=("quantization_cut",),
    )


@check
def buying_rule() -> Erratum:
    runs = published.all_machines()
    discount = essay.claim("buying_discount") / 100
    above = (runs["fraction_of_ceiling"] >= discount).mean()
    below = runs[runs["fraction_of_ceiling"] < discount]
    ultras = below["machine"].str.contains("Ultra").sum()
    cpus = (below["family"] == "CPU").sum()
    h100 = published.variant_readings().set_index("reading")["fraction_of_ceiling"]
    readings = ", ".join(f"{f:.0%} read as {r}" for r, f in h100.items())
    others = len(below) - ultras - cpus
    straddles = (h100 < discount).any() and (h100 >= discount).any()
    return Erratum(
        topic="The buying rule: discount the ceiling to half",
        chapter="01_napkin_ceiling",
        essay_says=f"treat {discount:.0%} of bandwidth / file size as the realistic ceiling",
        data_says=f"{above:.0%} of {len(runs)} published runs reach at least {discount:.0%}; "
                  f"the median reaches {runs['fraction_of_ceiling'].median():.0%}. Below it: "
                  f"{ultras} Ultra runs at Q4_0, {cpus} CPU runs and {others} GPU run(s). "
                  f"The scoreboard's H100, whose variant its copies disagree on, reaches "
                  f"{readings}",
        verdict="agrees" if above >= 0.5 else "inconsistent",
        conclusion_holds=bool(above >= 0.5),
        explanation="A conservative rule: most runs beat it."
                    + (" Whether the H100 does depends on which card it was: one reading puts "
                       "it below the rule, the other above." if straddles else ""),
        source="https://github.com/ggml-org/llama.cpp/discussions/15013",
        claims=("buying_discount",),
    )


class Cards:
    """The errata as one card each (a wide table does not fit a phone), differences first."""

    def __init__(self, df: pd.DataFrame, chapters_url: str = "../notebooks/"):
        order = df.assign(_agrees=df["verdict"] == "agrees").sort_values("_agrees", kind="stable")
        self.df, self.url = order.drop(columns="_agrees"), chapters_url

    def html(self) -> str:
        from html import escape

        cards = []
        for _, e in self.df.iterrows():
            holds = "the conclusion holds" if e["conclusion_holds"] else "the conclusion fails"
            cards.append(
                f'<div class="napkin-erratum napkin-verdict-{e["verdict"].replace(" ", "-")}">'
                f'<p class="napkin-erratum-head"><strong>{escape(e["topic"])}</strong> '
                f'<span class="napkin-badge">{escape(e["verdict"])}; {holds}</span></p>'
                f'<dl><dt>The essay says</dt><dd>{escape(e["essay_says"])}</dd>'
                f'<dt>The data says</dt><dd>{escape(e["data_says"])}</dd>'
                f'<dt>Why it matters</dt><dd>{escape(e["explanation"])}</dd>'
                f'<dt>Where</dt><dd><a href="{self.url}{e["chapter"]}.html">{e["chapter"]}</a>; '
                f'source: <a href="{escape(e["source"])}">{escape(e["source"])}</a></dd></dl>'
                f"</div>")
        return "\n".join(cards)

    def _repr_mimebundle_(self, include=None, exclude=None):
        text = "\n".join(f"- {r.topic}: {r.verdict}" for r in self.df.itertuples())
        return {"text/html": self.html(), "text/plain": text}


# -- chapter 6: paged attention -------------------------------------------------------------

@check
def paged_throughput() -> Erratum:
    from . import papers
    from .kvpaging import chapter

    low, high = essay.claim("paged_throughput_low"), essay.claim("paged_throughput_high")
    p_low = papers.claim("vllm_throughput_gain")
    p_high = papers.claim("vllm_throughput_gain", "high")
    oracle = (papers.claim("rate_vs_orca_oracle"),
              papers.claim("rate_vs_orca_oracle", "high"))
    worst = (papers.claim("rate_vs_orca_max"),
             papers.claim("rate_vs_orca_max", "high"))
    ft = papers.claim("rate_vs_fastertransformer")
    sim = chapter.paper_reproduction().set_index("allocator")
    return Erratum(
        topic="Paged attention's throughput gain",
        chapter="06_paged_attention",
        essay_says=f"{low:.0f}-{high:.0f}x throughput at equal latency versus "
                   "FasterTransformer and Orca",
        data_says=f"the paper's abstract says {p_low:.0f}-{p_high:.0f}x; its section 6.2 "
                  f"measures {oracle[0]:.1f}-{oracle[1]:.1f}x the request rate of Orca "
                  f"(Oracle), {worst[0]:.1f}-{worst[1]:.0f}x of Orca (Max) and up to "
                  f"{ft:.0f}x of FasterTransformer; the simulation gives "
                  f"{sim.loc['oracle', 'throughput_gain']:.1f}x over Orca (Oracle) and "
                  f"{sim.loc['max', 'throughput_gain']:.1f}x over Orca (Max)",
        verdict="agrees" if (low, high) == (p_low, p_high) else "inconsistent",
        conclusion_holds=True,
        explanation="The essay quotes the abstract's headline. Per baseline the paper's own "
                    f"figures run wider, from {oracle[0]:.1f}x against an Orca that knows "
                    f"every output length to {ft:.0f}x against FasterTransformer. In the "
                    "simulation the throughput gain follows the batch gain "
                    f"({sim.loc['oracle', 'batch_gain']:.1f}x and "
                    f"{sim.loc['max', 'batch_gain']:.1f}x more sequences), as the essay says.",
        source="https://arxiv.org/abs/2309.06180",
        claims=("paged_throughput_low", "paged_throughput_high"),
    )


@check
def paged_near_zero_waste() -> Erratum:
    from . import papers
    from .kvpaging import chapter

    words = "near-zero waste"
    in_paper = words in papers.quote("vllm_near_zero_waste")
    fig2 = papers.claim("fig2_vllm_token_states") / 100
    blog = papers.claim("blog_paged_waste", "high") / 100
    sim = 1 - chapter.paper_reproduction().set_index("allocator").loc["paged", "token"]
    return Erratum(
        topic="\"Near-zero waste\" of KV memory with paging",
        chapter="06_paged_attention",
        essay_says=f"\"{words}\" in KV memory (quoted from the paper)",
        data_says=f"the abstract uses these words; its Fig. 2 shows {fig2:.1%} of KV memory "
                  f"holding tokens ({1 - fig2:.1%} not), the launch blog says under {blog:.0%}; "
                  f"the simulation leaves {sim:.1%} not holding tokens",
        verdict="agrees" if in_paper and sim < blog else "inconsistent",
        conclusion_holds=True,
        explanation="The quote is the paper's. What remains is the unfilled tail of each "
                    "sequence's last block, under one block per sequence, plus the few blocks "
                    "vLLM keeps free when it admits a request.",
        source="https://arxiv.org/abs/2309.06180",
    )


# -- chapters 2 and 3: the Spark gap and the H100 ridge --------------------------------------

from . import phases, roofline  # noqa: E402  (appended section; kept with its checks)

SPARK_BENCH = ("https://github.com/ggml-org/llama.cpp/blob/"
               "4c7e9893c4ca8eec35d032726d14b74fae76cff8/benches/dgx-spark.md")


SPARK_THREAD = "https://github.com/ggml-org/llama.cpp/discussions/16578"


def _copies_read() -> str:
    """The copies of DGX Spark runs the book read, in words, from the data's source kinds."""
    kinds = phases.spark_bench(file_only=False)
    kinds = kinds[kinds["machine"] == "DGX Spark"]["source_kind"].unique()
    return "; ".join(sorted(kinds))


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
        essay_says=f"pp2048 {pp:,.0f} tok/s and tg32 {tg:.2f} tok/s, citing llama.cpp "
                   "discussion 16578",
        data_says=f"at empty context, {found}. {pp:,.0f} appears only as {where or 'nothing'}; "
                  + (f"no copy read shows {tg:.2f}" if tg_hits.empty else
                     f"{tg:.2f} appears in {len(tg_hits)} row(s)")
                  + f" (nearest at depth 0: {near['throughput_tok_per_s']:.2f}, build "
                    f"{near['build']})",
        verdict="agrees" if not at_zero.empty and not tg_hits.empty else "not in any copy read",
        conclusion_holds=True,
        explanation="The thread's own text was not available; the copies read are: "
                    f"{_copies_read()}. "
                    + (f"The essay's prefill figure matches a row measured with "
                       f"{', '.join(f'{d:,}' for d in pp_hits['context_depth_tokens'])} tokens "
                       "already in the cache" if not pp_hits.empty else
                       "The essay's prefill figure matches no row")
                    + ("; its decode figure matches none." if tg_hits.empty else ".")
                    + " The depth-0 pairs give about the same gap (see the gap row).",
        source=SPARK_THREAD,
        claims=("spark_pp2048", "spark_tg32"),
    )


@check
def spark_specs() -> Erratum:
    spark = hardware.chip("DGX Spark")
    stated = {"fp4_tensor_sparse_TFLOPS": essay.claim("spark_fp4_sparse"),
              "memory_bandwidth_GB_per_s": essay.claim("spark_bandwidth"),
              "memory_capacity_GiB": essay.claim("spark_capacity")}
    same = all(spark.specs[k] == v for k, v in stated.items())
    derived = ", ".join(f"{a.upper()} {spark.peak(a).flops_per_s / 1e12:,.0f}"
                        for a in ("fp4", "fp8", "int8", "fp16") if spark.peak(a).derived)
    return Erratum(
        topic="DGX Spark: the petaFLOP, the bandwidth, the memory",
        chapter="02_spark_gap",
        essay_says=f"{stated['fp4_tensor_sparse_TFLOPS']:,.0f} TFLOPS sparse FP4, "
                   f"{stated['memory_bandwidth_GB_per_s']:.0f} GB/s, "
                   f"{stated['memory_capacity_GiB']:.0f} GB",
        data_says=f"NVIDIA states {spark.specs['fp4_tensor_sparse_TFLOPS']:,.0f} TFLOPS sparse "
                  f"FP4 and FP32 {spark.specs['fp32_vector_TFLOPS']:.0f} TFLOPS; the dense "
                  f"tensor rates ({derived} TFLOPS) are derived, not vendor-stated; "
                  f"{spark.specs['memory_bandwidth_GB_per_s']:.0f} GB/s; "
                  f"{spark.capacity_bytes / GiB:.0f} GiB "
                  f"(= {spark.capacity_bytes / GB:.1f} GB)",
        verdict="agrees" if same else "inconsistent",
        conclusion_holds=True,
        explanation="The essay labels the petaFLOP correctly as sparse FP4, and its "
                    f"{stated['memory_capacity_GiB']:.0f} GB is the vendor's figure, which the "
                    "book reads as binary gigabytes (GiB). llama.cpp's prefill of MXFP4 "
                    "weights uses dense matrix instructions, not 2:4-sparse ones: INT8 or, "
                    f"from build {phases.NATIVE_MXFP4_BUILD}, FP4 (chapter 2).",
        source=spark.source("fp4_tensor_sparse_TFLOPS"),
        claims=("spark_fp4_sparse", "spark_bandwidth", "spark_capacity"),
    )


@check
def spark_gap() -> Erratum:
    gap = essay.claim("spark_gap")
    builds = phases.essay_pair_by_build()
    lo, hi = builds["ratio"].min(), builds["ratio"].max()
    own = essay.claim("spark_pp2048") / essay.claim("spark_tg32")
    first, last = builds.iloc[0], builds.iloc[-1]
    same = phases.like_for_like()
    llama = same[same["comparison"] == f"{phases.LLAMA2_Q4}, pp512 / tg128"]
    spark = llama[llama["family"] == "DGX Spark"]["ratio"].max()
    larger = llama[(llama["family"] != "DGX Spark") & (llama["ratio"] > spark)]
    top = llama.loc[llama["ratio"].idxmax()]
    return Erratum(
        topic="The prefill/decode gap on DGX Spark",
        chapter="02_spark_gap",
        essay_says=f"a {gap:.0f}x gap between the two phases",
        data_says=", ".join(f"{r['ratio']:.1f}x (build {r['build']})"
                            for _, r in builds.iterrows())
                  + f"; the essay's own pair gives {own:.1f}x. Like for like (Llama-2-7B Q4_0, "
                    f"pp512 / tg128), DGX Spark's gap is {spark:.1f}x and {len(larger)} of "
                    f"{len(llama) - 1} other runs' are larger, up to {top['ratio']:.1f}x "
                    f"({top['machine']})",
        verdict="agrees" if round(lo) <= gap <= round(hi) else "inconsistent",
        conclusion_holds=bool(round(lo) >= gap),
        explanation="Every build of the benchmark file shows about the essay's gap at empty "
                    f"context or more; from build {first['build']} to {last['build']} prefill "
                    f"changed by {last['pp_tok_per_s'] / first['pp_tok_per_s'] - 1:+.0%} and "
                    f"decode by {last['tg_tok_per_s'] / first['tg_tok_per_s'] - 1:+.0%}, so the "
                    "gap moves with the software as well as the box. A gap this size is not "
                    "peculiar to DGX Spark: on the one test every family ran, discrete GPUs "
                    "show larger ones.",
        source=SPARK_BENCH,
        claims=("spark_gap",),
    )


@check
def spark_petaflop() -> Erratum:
    """The essay's petaFLOP against what prefill reached, in FLOP/s, on DGX Spark. The
    petaFLOP "shows up" if a prefill run reaches at least half of it."""
    peta = essay.claim("spark_petaflop_in_prefill")
    compute = phases.prefill_compute()
    fractions = phases.spark_peak_fractions(compute)
    sparse = fractions[fractions["peak"].str.contains("sparse")]
    oss_peta = sparse[sparse["model"] == "gpt-oss-120b"]["fraction"].max()
    oss = compute[(compute["chip"] == "DGX Spark") & (compute["model"] == "gpt-oss-120b")]
    llama = compute[compute["model"] == "Llama-2-7B"].set_index("machine")
    spark_l = llama.loc["DGX Spark"]
    h100 = llama[llama["chip"].str.startswith("H100")]["achieved_flops_per_s"].iloc[0]
    rtx = llama.loc["RTX 4090", "achieved_flops_per_s"]
    shows_up = sparse["fraction"].max() >= 0.5
    spark = hardware.chip("DGX Spark")
    int8_share = spark.peak("int8").flops_per_s / spark.peak("fp4", sparse=True).flops_per_s
    fp4_share = spark.peak("fp4").flops_per_s / spark.peak("fp4", sparse=True).flops_per_s
    return Erratum(
        topic="The petaFLOP in the prefill number, and datacenter-class compute",
        chapter="02_spark_gap",
        essay_says=f"{peta:,.0f} TFLOPS of sparse FP4, \"datacenter-class compute\" that "
                   "\"shows up in the first number\" (prefill)",
        data_says="gpt-oss-120b pp2048 at empty context reaches "
                  + ", ".join(f"{r['achieved_flops_per_s'] / 1e12:.1f} TFLOPS ({r['detail']}, "
                              f"{r['fraction_of_roof']:.1%} of the {r['roof_kind']} rate "
                              f"llama.cpp runs it in)" for _, r in oss.iterrows())
                  + f": at most {oss_peta:.1%} of the petaFLOP. On Llama-2-7B Q4_0 pp512 "
                    f"DGX Spark reaches {spark_l['achieved_flops_per_s'] / 1e12:.0f} TFLOPS "
                    f"({spark_l['achieved_flops_per_s'] / (peta * 1e12):.1%} of it), "
                    f"the H100 {h100 / 1e12:.0f} and the RTX 4090 {rtx / 1e12:.0f} "
                    f"(FLOPs per prompt token x tokens/s)",
        verdict="agrees" if shows_up else "inconsistent",
        conclusion_holds=bool(shows_up),
        explanation="The petaFLOP is a 2:4-sparse FP4 peak; llama.cpp's prefill of MXFP4 "
                    "weights uses dense matrix instructions, INT8 before build "
                    f"{phases.NATIVE_MXFP4_BUILD} and in dense FP4 from it (llama.cpp PR "
                    f"17906), whose rates ({int8_share:.0%} and {fp4_share:.0%} of the "
                    "petaFLOP) are derived, not stated by NVIDIA. Measured, DGX Spark "
                    "prefills at "
                    f"{spark_l['achieved_flops_per_s'] / h100:.0%} of an H100's FLOP/s on the "
                    "same model and test. The gap is real; it comes from decode's "
                    f"{hardware.chip('DGX Spark').bandwidth_bytes_per_s / GB:.0f} GB/s, not "
                    "from a petaFLOP at work in prefill.",
        source=phases.NATIVE_MXFP4_SOURCE,
        claims=("spark_petaflop_in_prefill", "spark_datacenter_compute"),
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
        claims=("h100_ridge", "h100_fp16_dense", "h100_fp16_sparse", "h100_bandwidth"),
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
        claims=("decode_batch_crossover", "batch_example"),
    )


@check
def decode_crossover_with_kv() -> Erratum:
    model = roofline.llama_3_3_70b()
    ridge = roofline.chip_roof("H100 SXM").ridge
    limit = roofline.context_limit(model, ridge)
    at = {c: roofline.batch_to_ridge(model, ridge, c) for c in (1024, 2048)}
    stated = essay.claim("decode_batch_crossover")
    # the essay's batch survives the cache reads only if a chat-length context keeps it
    near = math.isfinite(at[1024]) and round(at[1024], -2) == stated
    return Erratum(
        topic="The batch crossover once every sequence reads its own KV cache",
        chapter="03_h100_ridge",
        essay_says=f"a batch of roughly {stated:.0f} makes H100 decode compute-bound",
        data_says=f"{model.name} at FP16: batch {at[1024]:,.0f} at 1,024 tokens of context; no "
                  f"batch at all beyond {limit:,.0f} tokens (e.g. 2,048: "
                  f"{'never' if math.isinf(at[2048]) else f'{at[2048]:,.0f}'})",
        verdict="rounding" if near else "inconsistent",
        conclusion_holds=bool(at[1024] <= 1.5 * stated),
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
        claims=("prefill_intensity", "prefill_over_ridge"),
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
        claims=tuple(claim for claim, _ in pairs.values()),
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
    h100 = hardware.chip("H100 SXM")
    driver = h100.specs["driver_visible_memory_MiB"] * MiB
    stated, essay_capacity = essay.claim("kv_batch32_8k_gb"), essay.claim("h100_capacity")
    exceeds = total > h100.capacity_bytes
    return Erratum(
        topic="Llama 3.3 70B: batch 32 at 8k against an 80 GB H100",
        chapter="04_kv_cache",
        essay_says=f"{stated:.0f} GB, which already exceeds a single {essay_capacity:.0f} GB "
                   "H100",
        data_says=f"{total / GB:.1f} GB = {total / GiB:.1f} GiB of cache alone; the H100 "
                  f"holds {h100.capacity_bytes / GiB:.0f} GiB ({h100.capacity_bytes / GB:.1f} "
                  f"GB), of which the driver exposes {driver / GiB:.2f} GiB",
        verdict="rounding" if exceeds and round(total / GB) == stated else "unit slip",
        conclusion_holds=total + _llama33_weights() > h100.capacity_bytes,
        explanation=f"The essay sets decimal GB against the H100's binary capacity, which makes "
                    f"the cache look {total / (essay_capacity * GB) - 1:.1%} too large. In one "
                    f"unit the cache {'exceeds' if exceeds else 'exactly fills'} the whole "
                    f"memory ({total / driver - 1:.1%} over what the driver exposes); the point "
                    "holds because the weights need room too.",
        source="essay#the-kv-cache-is-what-grows",
    )


@check
def capacity_problem() -> Erratum:
    from . import capacity

    turns = {c: capacity.capacity_turn("Llama-3.3-70B", c) for c in capacity.DATACENTER}
    # the essay's mechanism needs compute-bound batches to exist at the "long" contexts it
    # means (its own example is 8k): capacity can only drag decode back to where it was not
    long_context = essay.claim("kv_example_context")
    compute_bound_somewhere_long = any(t["never_beyond_tokens"] > long_context
                                       for t in turns.values())
    return Erratum(
        topic="Long context: from a bandwidth problem to a capacity problem",
        chapter="04_kv_cache",
        essay_says="long context turns a bandwidth problem into a capacity problem, and the "
                   "capacity problem caps your batch size, which drags you back onto the bad "
                   f"side of the decode roofline (its example: {long_context:,.0f} tokens per "
                   "sequence)",
        data_says="; ".join(f"{c}: the batch that fits falls below the batch that reaches the "
                            f"FP8 ridge at {t['turn_tokens']:,} tokens, and no batch reaches it "
                            f"beyond {t['never_beyond_tokens']:,}" for c, t in turns.items()),
        verdict="agrees" if compute_bound_somewhere_long else "inconsistent",
        conclusion_holds=all(_fits_at("Llama-3.3-70B", c, int(long_context))
                             < t["weights_only_crossover"] for c, t in turns.items()),
        explanation="With every sequence's cache read counted (Llama 3.3 70B, FP8 weights, "
                    "16-bit cache), decode never leaves the memory-bound side past a short "
                    "context, whatever the memory holds, so capacity cannot drag it back there. "
                    "Capacity still caps the batch, and with it how far each weight read is "
                    "shared: long context adds a capacity problem to a bandwidth problem.",
        source="essay#the-kv-cache-is-what-grows",
    )


def _fits_at(model: str, chip: str, context: int) -> int:
    """Sequences of ``context`` tokens whose 16-bit caches fit beside FP8 weights."""
    from . import catalog, kvcache

    return kvcache.max_batch(catalog.config(model), context, hardware.chip(chip).capacity_bytes,
                             catalog.weight_bytes(model, "FP8"))


def _llama33_weights() -> float:
    from . import catalog

    return catalog.weight_bytes("Llama-3.3-70B", "FP8")


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


# -- chapters 7 and 8: chunked prefill, disaggregation, what to buy ---------------------------

@check
def chunk_budget_dial() -> Erratum:
    from . import papers
    from .serving import chapter

    itl_b, ttft_b = int(essay.claim("chunk_budget_itl")), int(essay.claim("chunk_budget_ttft"))
    docs_itl = papers.claim("vllm_docs_budget_itl")
    docs_tp = papers.claim("vllm_docs_budget_throughput")
    s = chapter.SETTING
    dial = chapter.budget_runs()
    at = dial[(dial["rate_per_s"] == s.rate_per_s) & (dial["policy"] == "chunked")]
    at = at.set_index("budget")
    sat = chapter.saturation_runs()
    sat = sat[sat["policy"] == "chunked"].set_index("budget")
    itl_holds = at.loc[itl_b, "itl_p99_s"] < at.loc[ttft_b, "itl_p99_s"]
    return Erratum(
        topic=f"The token budget: about {itl_b:,} for inter-token latency, above {ttft_b:,} "
              "for TTFT",
        chapter="07_chunked_prefill",
        essay_says=f"max_num_batched_tokens around {itl_b:,} favours inter-token latency, "
                   f"above {ttft_b:,} favours TTFT and raw throughput",
        data_says=f"vLLM's documentation gives {docs_itl:,.0f} as its example of a small "
                  f"budget for better ITL and recommends more than {docs_tp:,.0f} for "
                  f"throughput, giving no number for TTFT. Simulated at {s.rate_per_s:.0f} "
                  f"requests/s: p99 inter-token latency {1e3 * at.loc[itl_b, 'itl_p99_s']:.0f} "
                  f"ms at {itl_b:,} against {1e3 * at.loc[ttft_b, 'itl_p99_s']:.0f} ms at "
                  f"{ttft_b:,}; median TTFT {1e3 * at.loc[itl_b, 'ttft_p50_s']:.0f} and "
                  f"{1e3 * at.loc[ttft_b, 'ttft_p50_s']:.0f} ms; throughput with a full "
                  f"queue {sat.loc[itl_b, 'throughput_tok_per_s']:,.0f} and "
                  f"{sat.loc[ttft_b, 'throughput_tok_per_s']:,.0f} tokens/s",
        verdict="agrees" if (docs_itl, docs_tp) == (itl_b, ttft_b) and itl_holds
        else "inconsistent",
        conclusion_holds=bool(itl_holds),
        explanation="The numbers are the documentation's. The inter-token half is arithmetic "
                    "and the simulation reproduces it; the TTFT and throughput half comes from "
                    "what a roofline leaves out (kernel efficiency at larger batches, fixed "
                    "costs per step), and in the simulation only budgets below the ridge point "
                    "change either (chapter 7).",
        source="https://docs.vllm.ai/en/latest/configuration/optimization.html",
        claims=("chunk_budget_itl", "chunk_budget_ttft"),
    )


@check
def coding_agent_prefill_wall() -> Erratum:
    from . import buying

    agent = buying.presets()["coding agent"]
    ranked = buying.rank(agent)
    top = ranked[ranked["rank"].notna()]
    apple = top[top["vendor"] == "Apple"].iloc[0]
    above = top[top["rank"] < apple["rank"]]
    share = apple["ttft_mid_s"] / (apple["ttft_mid_s"] +
                                   agent.output_tokens / apple["decode_mid_tok_per_s"])
    others = top[(top["vendor"] != "Apple") & (top["rank"] > apple["rank"])]["machine"]
    raised = ranked[ranked["fits_after_raising"]]["machine"]
    check = buying.extrapolation_check()
    dense = buying.extrapolation_summary(check).set_index("group").loc["dense"]
    deepest = int((check["depth_tokens"] + check["prompt_tokens"]).max())
    holds = bool((above["vendor"] != "Apple").all() and share > 0.5)
    return Erratum(
        topic=f"A {agent.prompt_tokens:,}-token coding agent: prefill is the wall, and "
              "Apple's weakest phase",
        chapter="08_what_to_buy",
        essay_says=f"if you paste {agent.prompt_tokens / 1000:.0f}k-token files into a local "
                   "coding agent, prefill is the wall you'll hit, and it's the wall Apple "
                   "hardware is worst at",
        data_says=f"with {agent.model} at {agent.weight_format}, the first token takes "
                  f"{apple['ttft_mid_s']:.0f} s on the best Apple chip ({apple['machine']}, "
                  f"rank {int(apple['rank'])} of {len(top)}), {share:.0%} of its whole request; "
                  f"every machine above it is an NVIDIA GPU "
                  f"({', '.join(above['machine'])}; the H100 and A100 runs count for both "
                  f"variants, since their sources do not agree on which they are); below it "
                  f"only {', '.join(others) or 'Apple chips'} among the others"
                  + (f"; {', '.join(raised)} hold the model only after raising macOS's GPU "
                     "memory limit and are not ranked" if len(raised) else ""),
        verdict="agrees" if holds else "inconsistent",
        conclusion_holds=holds,
        explanation="Estimated from the prefill rates published llama.cpp pp512 runs of "
                    "Llama-2-7B reached (chapter 8). The same method predicts measured pp2048 "
                    f"rates of a dense model at up to {deepest:,} tokens of context at "
                    f"{dense['low']:.2f}x to {dense['high']:.2f}x the measured rate (median "
                    f"{dense['median']:.2f}x, {int(dense['runs'])} runs): the seconds are "
                    "rough, the order of the families holds. Apple's chips are the slowest "
                    "family at prefill, with AMD's Strix Halo among them rather than clearly "
                    "ahead.",
        source="https://github.com/ggml-org/llama.cpp/discussions/4167",
        claims=("coding_agent_prompt",),
    )
