"""napkin.phases: the DGX Spark benchmark file, the prefill/decode ratio of every machine."""

from __future__ import annotations

from dataclasses import asdict

import pandas as pd
import pytest

from napkin import errata, essay, phases
from napkin.phases import figures as figures


def test_build_numbers_and_phases():
    assert phases.build_number("2f68ce7cf (6918)") == 6918
    assert phases.build_number("b6761") == 6761
    assert phases.build_number("not shown in retrieved excerpt") is None
    assert phases.phase("pp2048") == "prefill" and phases.phase("tg32") == "decode"
    with pytest.raises(ValueError, match="'x128' is neither"):
        phases.phase("x128")


def test_bench_file_rows_are_the_three_spark_builds_and_the_m2_ultra():
    df = phases.spark_bench()
    builds = df.groupby("machine")["build"].unique().map(sorted).to_dict()
    assert builds == {"DGX Spark": [6918, 6989, 7941], "M2 Ultra": [7948]}
    assert (df["confidence"] == "high").all()
    assert len(phases.spark_bench(file_only=False)) > len(df)


def test_depth_zero_pairs_are_what_the_file_says():
    """The values the research notes read from each copy of the benchmark file."""
    pairs = phases.essay_pair_by_build().set_index("build")
    expected = {6918: (1937.54, 59.02), 6989: (1919.36, 60.40), 7941: (2443.91, 58.72)}
    for build, (pp, tg) in expected.items():
        assert pairs.loc[build, "pp_tok_per_s"] == pp
        assert pairs.loc[build, "tg_tok_per_s"] == tg
        assert pairs.loc[build, "ratio"] == pytest.approx(pp / tg)


def test_the_essays_pair_is_not_at_depth_zero_anywhere():
    pp_hits = phases.matches(essay.claim("spark_pp2048"), decimals=0)
    assert len(pp_hits) == 1
    hit = pp_hits.iloc[0]
    assert (hit["build"], hit["context_depth_tokens"], hit["test"]) == (7941, 16384, "pp2048")
    assert phases.matches(essay.claim("spark_tg32"), decimals=2).empty
    near = phases.nearest(essay.claim("spark_tg32"), "tg32")
    assert near["throughput_tok_per_s"] == 60.40 and near["build"] == 6989


def test_bad_model_and_depth_are_named():
    with pytest.raises(ValueError, match="no runs of model 'nope'"):
        phases.depth_pairs("nope")
    with pytest.raises(ValueError, match="depth 123"):
        phases.essay_pair_by_build(depth=123)
    with pytest.raises(ValueError, match="no tg99"):
        phases.nearest(50, "tg99")


def test_retention_starts_at_one_and_prefill_falls_faster_on_gpt_oss():
    r = phases.retention("gpt-oss-120b")
    assert (r[r["context_depth_tokens"] == 0]["fraction_of_depth0"] == 1).all()
    deep = r[r["context_depth_tokens"] == r["context_depth_tokens"].max()]
    wide = deep.pivot_table(index="label", columns="phase", values="fraction_of_depth0")
    assert (wide["prefill"] < wide["decode"]).all()


def test_all_ratios_are_prefill_over_decode():
    df = phases.all_ratios()
    assert list(df.columns) == phases.RATIO_COLUMNS
    assert df[["pp_tok_per_s", "tg_tok_per_s", "ratio"]].notna().all().all()
    assert (df["ratio"] == df["pp_tok_per_s"] / df["tg_tok_per_s"]).all()
    assert set(df["family"]) == {"DGX Spark", "Apple Silicon", "Discrete GPU", "Strix Halo"}
    assert df["source_url"].str.contains("http").all()
    # DGX Spark's gap is the largest family median, Apple Silicon's among the smallest
    med = df.groupby("family")["ratio"].median()
    assert med.idxmax() == "DGX Spark"


def test_mirror_image_holds_for_every_model():
    t = phases.mirror_table()
    assert t.attrs == {"spark_build": 7941, "m2_build": 7948}
    assert t.iloc[0]["m2_over_spark"] == pytest.approx(800 / 273)
    assert (t[t["kind"] == "decode"]["m2_over_spark"] > 1).all()
    assert (t[t["kind"] == "prefill"]["m2_over_spark"] < 1).all()


def test_moe_names():
    assert phases.is_moe("gpt-oss-20b")
    assert phases.is_moe("GLM-4.7-Flash (llama.cpp arch deepseek2 30B.A3B)")
    assert phases.is_moe("Qwen3-Coder-30B-A3B-Instruct (qwen3moe 30B.A3B)")
    assert not phases.is_moe("Qwen2.5-Coder-7B (qwen2 7B)")


def test_live_ratio():
    assert phases.live_ratio(None).empty
    record = {"machine": {"cpu_model": "CPU", "threads_used": 2},
              "runner": {"backend": "CPU"},
              "runs": [{"format": "Q8_0", "synthetic": {"format": "Q8_0"}, "model_path": "m",
                        "pp": {"test": "pp128", "tokens_per_s": 400.0},
                        "tg": {"test": "tg64", "tokens_per_s": 100.0}}]}
    df = phases.live_ratio(record)
    assert df["ratio"].tolist() == [4.0]
    assert df["pp_stddev_tok_per_s"].isna().all()  # a record without spreads
    assert df["family"].tolist() == [phases.LIVE_FAMILY]
    assert df["protocol"].tolist() == ["pp128 / tg64"]
    record["runs"][0]["tg"]["stddev"] = 5.0
    assert phases.live_ratio(record)["tg_stddev_tok_per_s"].tolist() == [5.0]


CHAPTER_2_AND_3_CHECKS = ("spark_pair", "spark_specs", "spark_gap", "spark_datacenter_compute",
                          "spark_petaflop", "h100_ridge", "decode_batch_crossover",
                          "decode_crossover_with_kv", "prefill_over_ridge")


def test_errata_checks_for_chapters_2_and_3():
    assert set(CHAPTER_2_AND_3_CHECKS) <= set(errata.CHECKS)  # every one registered
    found = pd.DataFrame([asdict(errata.erratum(name)) for name in CHAPTER_2_AND_3_CHECKS])
    ours = found[found["chapter"].isin(["02_spark_gap", "03_h100_ridge"])].set_index("check")
    assert set(CHAPTER_2_AND_3_CHECKS) == set(ours.index)
    assert ours.loc["spark_specs", "verdict"] == "agrees"
    assert "128 GiB" in ours.loc["spark_specs", "data_says"]
    pair = ours.loc["spark_pair"]
    assert pair["verdict"] == "not in any copy read" and pair["conclusion_holds"]
    assert "16,384" in pair["data_says"] and "49.45" in pair["data_says"]
    assert "coincidence" in pair["explanation"]
    gap = ours.loc["spark_gap"]
    assert gap["verdict"] == "agrees" and gap["conclusion_holds"]
    # datacenter-class compute: not on paper, at any arithmetic; laptop memory and the
    # imbalance between the two do hold
    dc = ours.loc["spark_datacenter_compute"]
    assert dc["verdict"] == "inconsistent" and dc["conclusion_holds"]
    assert "M4 Pro" in dc["data_says"] and "6.6%" in dc["explanation"]
    # the petaFLOP: not literally in prefill, but compute sets prefill and not decode
    peta = ours.loc["spark_petaflop"]
    assert peta["verdict"] == "inconsistent" and peta["conclusion_holds"]
    assert "2.3% of the petaFLOP" in peta["data_says"]
    kv = ours.loc["decode_crossover_with_kv"]
    assert not kv["conclusion_holds"]
    assert ours.loc["h100_ridge", "verdict"] == "rounding"


def test_chapter_charts_build():
    builds = phases.essay_pair_by_build()
    ratios = phases.all_ratios()
    charts = [figures.like_for_like(phases.like_for_like()),
              figures.prefill_flops(phases.prefill_compute(), 1000),
              figures.essay_pair(1956, 60.57, builds),
              figures.depth_retention(phases.retention(), "gpt-oss-120b"),
              figures.ratio_by_depth(phases.depth_pairs(), "gpt-oss-120b"),
              figures.mirror(phases.mirror_table()),
              figures.ratio_strip(ratios, 32)]
    for chart in charts:
        spec = chart.to_dict()
        assert spec["width"] == "container"
        assert "tooltip" in str(spec)
    # deterministic: the same data gives the same spec
    assert figures.ratio_strip(ratios, 32).to_dict() == charts[-1].to_dict()
    assert isinstance(ratios, pd.DataFrame)


def test_live_prefill_flops_count_layer_weights_only():
    assert phases.live_prefill_flops(None) is None
    shape = {"vocab_size": 100, "hidden_size": 10}
    record = {"runs": [{"synthetic": {"shape": shape}, "model_params": 3000,
                        "pp": {"tokens_per_s": 50.0}}]}
    assert phases.live_prefill_flops(record) == 50.0 * 2 * (3000 - 1000)
    record["runs"][0]["synthetic"] = None
    assert phases.live_prefill_flops(record) is None


# -- like for like, and what prefill reached in FLOP/s ------------------------------------------

def test_like_for_like_holds_model_and_test_fixed():
    df = phases.like_for_like()
    assert df["ratio"].tolist() == (df["pp_tok_per_s"] / df["tg_tok_per_s"]).tolist()
    for comparison, group in df.groupby("comparison"):
        assert group["model"].nunique() == 1 and group["protocol"].nunique() == 1, comparison
    llama = df[df["comparison"] == "Llama-2-7B Q4_0, pp512 / tg128"]
    assert set(llama["family"]) == {"Apple Silicon", "Discrete GPU", "DGX Spark", "Strix Halo"}
    # DGX Spark's GB10 and Strix Halo's 8060S are on the scoreboards, not discrete GPUs
    spark = llama[llama["family"] == "DGX Spark"]
    assert spark["machine"].tolist() == ["DGX Spark (GB10)"]
    assert spark["ratio"].iloc[0] == pytest.approx(3062.31 / 57.21)
    assert not llama["machine"].str.contains("Strix|GB10").loc[
        llama["family"] == "Discrete GPU"].any()
    # one rule for every family: flash attention off or not recorded (DGX Spark's is off)
    assert set(llama["flash_attention"]) <= {"off", "unrecorded"}
    assert spark["flash_attention"].tolist() == ["off"]
    strix = llama[llama["family"] == "Strix Halo"]
    assert len(strix) == 1 and strix["confidence"].tolist() == ["low"]
    oss = df[df["comparison"] == "gpt-oss-120b MXFP4, pp2048 / tg32"]
    assert sorted(oss["machine"]) == ["DGX Spark"] * 3 + ["M2 Ultra"]


def test_flash_attention_as_each_source_records_it():
    assert phases.flash_attention("0") == "off" and phases.flash_attention(1) == "on"
    assert phases.flash_attention("unknown") == "unrecorded"
    assert phases.flash_attention(None) == "unrecorded"
    assert phases.flash_attention("Vulkan AMDVLK fa=1 mmap=0") == "on"
    assert phases.flash_attention("HIP/ROCm (rocWMMA, FA per notes) ") == "on"
    assert phases.flash_attention("Metal") == "unrecorded"


def test_strix_halo_runs_are_its_gpus():
    s = phases.strix_ratios()
    assert "CPU" not in set(s["detail"].str.split(",").str[0])
    llama = phases.strix_llama2_q4()
    assert (llama["model"] == phases.LLAMA2_Q4).all()
    high = llama[llama["confidence"] == "high"]
    assert len(high) == 6 and (high["flash_attention"] == "on").all()
    assert high["tg_tok_per_s"].max() == 51.88 and high["pp_tok_per_s"].max() == 1314.00


def test_every_ratio_leaves_out_runs_of_another_device():
    df = phases.all_ratios()
    # the gpt-oss guide's RTX 3060 ran gpt-oss-20b partly offloaded
    assert not (df["machine"].str.contains("RTX 3060") & df["model"].str.contains("gpt-oss")).any()
    assert not ((df["family"] == "Strix Halo") & df["detail"].str.startswith("CPU")).any()


def test_partner_is_the_other_phase_of_the_same_run():
    hit = phases.matches(essay.claim("spark_pp2048"), decimals=0).iloc[0]
    tg = phases.partner(hit)
    assert (tg["test"], tg["context_depth_tokens"], tg["build"]) == ("tg32", 16384, 7941)
    assert tg["throughput_tok_per_s"] == 49.45
    assert phases.partner(tg)["throughput_tok_per_s"] == hit["throughput_tok_per_s"]
    bad = hit.copy()
    bad["context_depth_tokens"] = 99
    with pytest.raises(ValueError, match="expected one decode row"):
        phases.partner(bad)


def test_peak_comparison_holds_the_arithmetic_fixed():
    df = phases.peak_comparison()
    assert (df["share"] == df["chip_flops_per_s"] / df["peer_flops_per_s"]).all()
    sparse = df[df["sparse"]].set_index("peer")
    assert set(sparse.index) == {"B200", "RTX 5090"}  # the only other sparse-FP4 figures
    assert sparse.loc["B200", "share"] == pytest.approx(1000 / 18000)
    h100 = df[(df["peer"] == "H100 SXM") & (df["arithmetic"] == "int8")].iloc[0]
    assert h100["share"] == pytest.approx(250 / 1978.9)
    assert h100["chip_flop_per_byte"] == pytest.approx(250e12 / 273e9)
    assert h100["peer_flop_per_byte"] == pytest.approx(1978.9e12 / 3350e9)
    assert set(df["peer_class"]) == {"datacenter", "desktop"}
    assert "A100 SXM" not in set(df[df["arithmetic"] == "fp8"]["peer"])  # no FP8 figure
    with pytest.raises(ValueError, match="at least one"):
        phases.peak_comparison(peers=())
    with pytest.raises(ValueError, match="shares no arithmetic"):
        phases.peak_comparison(peers=("M4 Pro",))


def test_the_faster_arithmetic_moved_prefill_not_decode():
    df = phases.arithmetic_path_change()
    assert sorted(zip(df["from_build"], df["to_build"])) == [(6918, 7941), (6989, 7941)]
    assert df["prefill_change"].min() > 0.25
    assert df["decode_change"].abs().max() < 0.03
    row = df[df["from_build"] == 6918].iloc[0]
    assert row["decode_change"] == pytest.approx(58.72 / 59.02 - 1)


def test_layer_params_count_what_a_token_multiplies():
    from napkin import catalog

    # Llama-2-7B: 32 x (4 x 4096^2 + 3 x 4096 x 11008); its 6,738,415,616 parameters add the
    # two 32000 x 4096 vocabulary tables and the norms
    llama = 32 * (4 * 4096 ** 2 + 3 * 4096 * 11008)
    assert phases.layer_params(catalog.config("Llama-2-7B")) == llama == 6_476_005_376
    assert llama + 2 * 32000 * 4096 == pytest.approx(catalog.params("Llama-2-7B"), rel=1e-4)
    # gpt-oss-120b: 36 x (attention + 4 routed experts + router); the active count adds the
    # output layer (201088 x 2880)
    attn = 2 * 2880 * 64 * 64 + 2 * 2880 * 8 * 64
    oss = 36 * (attn + 4 * 3 * 2880 * 2880 + 2880 * 128)
    assert phases.layer_params(catalog.config("gpt-oss-120b")) == oss
    assert oss + 201088 * 2880 == pytest.approx(catalog.params("gpt-oss-120b", active=True),
                                                rel=1e-3)
    with pytest.raises(ValueError, match="kv_lora_rank"):
        phases.layer_params(catalog.config("DeepSeek-V3"))


def test_prefill_flops_by_hand():
    """Llama-2-7B, a 512-token prompt at empty context: 2 FLOPs per layer weight, plus the
    causal attention, 512 x 513 / 2 (query, key) pairs, each 2 FLOPs per cached element
    (K and V: 2 x 32 heads x 128 x 32 layers) for the one query head that shares it."""
    matmul = 2 * 6_476_005_376
    attention = 2 * (2 * 32 * 128 * 32) * (512 * 513 // 2) / 512
    per_token = phases.prefill_flops_per_token("Llama-2-7B", 512)
    assert per_token == pytest.approx(matmul + attention, rel=1e-12)
    assert phases.achieved_flops("Llama-2-7B", 1000.0, 512) == pytest.approx(1000 * per_token)
    # deeper prompts cost more per token; the rate scales linearly
    assert phases.prefill_flops_per_token("Llama-2-7B", 512, depth=512) > per_token
    for bad, match in ((lambda: phases.achieved_flops("Llama-2-7B", -1.0, 512), "tokens_per_s"),
                       (lambda: phases.prefill_flops_per_token("Llama-2-7B", 0), "prefill chunk"),
                       (lambda: phases.prefill_flops_per_token("Llama-2-7B", 512, -1),
                        "prefill start"),
                       (lambda: phases.prefill_flops_per_token("GPT-9", 512), "unknown model")):
        with pytest.raises(ValueError, match=match):
            bad()


def test_llamacpp_arithmetic_of_mxfp4_follows_the_build():
    assert phases.llamacpp_arithmetic("Q4_0", "DGX Spark") == "int8"
    assert phases.llamacpp_arithmetic("MXFP4", "RTX 4090") == "int8"
    assert phases.llamacpp_arithmetic("MXFP4", "DGX Spark", build=6918) == "int8"
    assert phases.llamacpp_arithmetic("MXFP4", "DGX Spark", build=7535) == "int8"
    assert phases.llamacpp_arithmetic("MXFP4", "DGX Spark", build=7536) == "fp4"
    assert phases.llamacpp_arithmetic("MXFP4", "RTX PRO 6000 Blackwell", date="2025-08") == "int8"
    assert phases.llamacpp_arithmetic("MXFP4", "RTX 5090", date="2026-02-01") == "fp4"
    assert phases.llamacpp_arithmetic("MXFP4", "DGX Spark", build=7941, backend="Metal") == "fp16"
    with pytest.raises(ValueError, match="give the run's build or date"):
        phases.llamacpp_arithmetic("MXFP4", "DGX Spark")
    with pytest.raises(ValueError, match="build must be"):
        phases.llamacpp_arithmetic("MXFP4", "DGX Spark", build="7941")
    with pytest.raises(ValueError, match="date must be"):
        phases.llamacpp_arithmetic("MXFP4", "DGX Spark", date="Feb 2026")


def test_prefill_compute_and_the_petaflop():
    df = phases.prefill_compute()
    assert (df["achieved_flops_per_s"] == df["tokens_per_s"] * df["flops_per_token"]).all()
    assert (df["fraction_of_roof"] == df["achieved_flops_per_s"] / df["roof_flops_per_s"]).all()
    spark = df[(df["chip"] == "DGX Spark") & (df["model"] == "gpt-oss-120b")].set_index("detail")
    assert spark["arithmetic"].to_dict() == {"build 6918": "int8", "build 6989": "int8",
                                             "build 7941": "fp4"}
    assert spark["roof_derived"].all()
    # both readings of the H100: the same speed, two roofs
    h100 = df[df["chip"].str.startswith("H100")]
    assert sorted(h100["chip"]) == ["H100 PCIe", "H100 SXM"]
    assert h100["achieved_flops_per_s"].nunique() == 1
    peaks = phases.spark_peak_fractions(df)
    assert set(peaks["peak_flops_per_s"] / 1e12) == {1000, 500, 250, 125}
    sparse = peaks[peaks["peak"].str.contains("sparse")]
    assert (sparse["fraction"] < 0.05).all()  # the petaFLOP does not show up in prefill
    with pytest.raises(ValueError, match="no DGX Spark run"):
        phases.spark_peak_fractions(df[df["chip"] != "DGX Spark"])


def test_decode_weight_bytes_prices_experts_and_the_rest_apart():
    """gpt-oss-120b: every expert at MXFP4's 17 bytes per 32 weights; what the file has left
    spread over the other parameters; a token reads its 4 routed experts per layer, its
    attention and router and the output layer."""
    from napkin import catalog

    size, n = 63e9, 117e9
    cfg = catalog.config("gpt-oss-120b")
    expert = 3 * 2880 * 2880
    experts = 36 * 128 * expert
    other_bpw = (size - experts * 17 / 32) / (n - experts)
    active_experts = 36 * 4 * expert
    other = phases.layer_params(cfg) - active_experts + 201088 * 2880
    got = phases.decode_weight_bytes("gpt-oss-120b", size, n)
    assert got["other_bytes_per_weight"] == pytest.approx(other_bpw)
    assert got["weight_bytes"] == pytest.approx(active_experts * 17 / 32 + other * other_bpw)
    # a dense model: the file's average for everything a token reads
    dense = phases.decode_weight_bytes("Llama-2-7B", 3.8e9, 6.74e9)
    assert dense["weight_bytes"] == pytest.approx((6_476_005_376 + 32000 * 4096) * 3.8 / 6.74)
    with pytest.raises(ValueError, match="leave nothing"):
        phases.decode_weight_bytes("gpt-oss-120b", 1e9, 117e9)
    with pytest.raises(ValueError, match="file_bytes"):
        phases.decode_weight_bytes("gpt-oss-120b", -1, 117e9)
    # the benchmark file's gpt-oss-120b: about 3.7 GB a token, experts at 0.53 B per weight
    bench = phases.bench_decode_weight_bytes("gpt-oss-120b")
    assert bench["expert_bytes_per_weight"] == 17 / 32
    assert 3.5e9 < bench["weight_bytes"] < 3.8e9
    with pytest.raises(ValueError, match="no runs of model"):
        phases.bench_decode_weight_bytes("nope")


def test_the_buying_rule_over_what_a_token_reads():
    """Chapter 1's rule on a mixture: over the file it undershoots what is measured many
    times; over the weights a token reads it scales with the discount alone."""
    half, full = phases.rule_by_read(0.5), phases.rule_by_read(1.0)
    assert {"gpt-oss-20b", "gpt-oss-120b"} <= set(half["model"])
    assert {"DGX Spark", "M2 Ultra"} <= set(half["machine"])
    assert (half["read_GB"] < half["file_GB"] / 4).all()
    assert (half["by_file_tok_per_s"] * 3 < half["measured_tok_per_s"]).all()
    assert (half["by_read_error"] < half["by_file_error"]).all()
    # at a discount of one the rule is the ceiling, which no measured run passes
    assert (full["by_read_tok_per_s"] > full["measured_tok_per_s"]).all()
    assert full["by_read_tok_per_s"].to_numpy() == pytest.approx(
        2 * half["by_read_tok_per_s"].to_numpy())
    with pytest.raises(ValueError, match="discount"):
        phases.rule_by_read(0)


def test_depth_growth_and_tokens_per_expert():
    g = phases.depth_growth("gpt-oss-120b", 2048, 0, 3e9)
    assert g["prefill_flops_ratio"] == 1 and g["decode_bytes_ratio"] == 1
    g = phases.depth_growth("gpt-oss-120b", 2048, 32768, 3e9)
    assert g["prefill_flops_ratio"] > g["decode_bytes_ratio"] > 1
    assert g["decode_bytes_ratio"] == pytest.approx((3e9 + g["cache_bytes"]) / 3e9)
    with pytest.raises(ValueError, match="depth"):
        phases.depth_growth("gpt-oss-120b", 2048, -5, 3e9)
    with pytest.raises(ValueError, match="weight_bytes"):
        phases.depth_growth("gpt-oss-120b", 2048, 0, 0)
    assert phases.tokens_per_expert("gpt-oss-120b", 2048) == 2048 * 4 / 128
    assert phases.tokens_per_expert("Llama-2-7B", 2048) == 2048
    with pytest.raises(ValueError, match="prompt_tokens"):
        phases.tokens_per_expert("gpt-oss-120b", 0)


def test_the_gap_equation_is_checked_against_every_like_for_like_cuda_run():
    """(b / 2) F / BW at the dense INT8 figure, beside each measured CUDA gap; their ratio is
    decode's share of its bandwidth over prefill's share of its peak, exactly."""
    from napkin import hardware

    eq = phases.equation_gap()
    assert set(eq["chip"]) == set(phases.EQUATION_CHIPS.values())
    assert eq["backend"].str.startswith("CUDA").all()
    spark = hardware.chip("DGX Spark")
    row = eq[eq["chip"] == "DGX Spark"].iloc[0]
    assert row["predicted"] == pytest.approx(4.5 / 8 / 2 * spark.peak("int8").flops_per_s
                                             / spark.bandwidth_bytes_per_s)
    assert eq["over"].to_numpy() == pytest.approx((eq["decode_share"] / eq["prefill_share"])
                                                  .to_numpy(), rel=1e-12)
    assert row["peak_origin"].startswith("computed")


def test_the_wait_for_a_prompt_integrates_the_rate_measured_at_each_depth():
    # one rate everywhere: prompt over rate, and every token past the deepest point is counted
    seconds, beyond = phases.wait_seconds([0], [100.0], 1000)
    assert seconds == pytest.approx(10.0) and beyond == 0
    seconds, beyond = phases.wait_seconds([0, 4096], [200.0, 100.0], 10_000)
    assert beyond == 10_000 - (4096 + 1024)
    assert 10_000 / 200 < seconds < 10_000 / 100  # slower than empty, faster than the deepest
    # the book's machines: the Mac decodes faster, the Spark answers a long prompt sooner
    wait = phases.wait_table().set_index("machine")
    assert wait.loc["M2 Ultra", "tg_empty_tok_per_s"] > wait.loc["DGX Spark", "tg_empty_tok_per_s"]
    assert wait.loc["DGX Spark", "total_s"] < wait.loc["M2 Ultra", "total_s"]
