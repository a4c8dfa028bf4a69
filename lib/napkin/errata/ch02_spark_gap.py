"""Chapter 2, the Spark gap: DGX Spark's pair of numbers, its specs, its gap and its
petaFLOP against the copies of the llama.cpp benchmark file."""

from __future__ import annotations

from .. import essay, hardware, phases
from ..units import GB, GiB
from .finding import Finding


def _copies_read() -> str:
    """The copies of DGX Spark runs the book read, in words, from the data's source kinds."""
    kinds = phases.spark_bench(file_only=False)
    kinds = kinds[kinds["machine"] == "DGX Spark"]["source_kind"].unique()
    return "; ".join(sorted(kinds))


def spark_pair() -> Finding:
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
    return Finding(
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
    )


def spark_specs() -> Finding:
    spark = hardware.chip("DGX Spark")
    stated = {"fp4_tensor_sparse_TFLOPS": essay.claim("spark_fp4_sparse"),
              "memory_bandwidth_GB_per_s": essay.claim("spark_bandwidth"),
              "memory_capacity_GiB": essay.claim("spark_capacity")}
    same = all(spark.specs[k] == v for k, v in stated.items())
    derived = ", ".join(f"{a.upper()} {spark.peak(a).flops_per_s / 1e12:,.0f}"
                        for a in ("fp4", "fp8", "int8", "fp16") if spark.peak(a).derived)
    return Finding(
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
    )


def spark_gap() -> Finding:
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
    return Finding(
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
    )


def spark_petaflop() -> Finding:
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
    return Finding(
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
                    f"{spark.bandwidth_bytes_per_s / GB:.0f} GB/s, not "
                    "from a petaFLOP at work in prefill.",
    )
