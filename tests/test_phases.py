"""napkin.phases: the DGX Spark benchmark file, the prefill/decode ratio of every machine."""

from __future__ import annotations

import pandas as pd
import pytest

from napkin import errata, essay, phases
from napkin.figures import spark as figures


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
    assert df["family"].tolist() == [phases.LIVE_FAMILY]
    assert df["protocol"].tolist() == ["pp128 / tg64"]


def test_errata_checks_for_chapters_2_and_3():
    found = errata.all_errata()
    ours = found[found["chapter"].isin(["02_spark_gap", "03_h100_ridge"])].set_index("topic")
    assert {"DGX Spark gpt-oss-120b pair, build by build",
            "DGX Spark: the petaFLOP, the bandwidth, the memory",
            "The prefill/decode gap on DGX Spark",
            "H100 SXM ridge point, dense and sparse",
            "Batch at which H100 decode turns compute-bound (weights only)",
            "The batch crossover once every sequence reads its own KV cache",
            "A 2,000-token prefill against the H100 ridge"} == set(ours.index)
    assert ours.loc["DGX Spark: the petaFLOP, the bandwidth, the memory", "verdict"] == "agrees"
    pair = ours.loc["DGX Spark gpt-oss-120b pair, build by build"]
    assert pair["verdict"] == "not in the source" and pair["conclusion_holds"]
    assert "16,384" in pair["data_says"]
    gap = ours.loc["The prefill/decode gap on DGX Spark"]
    assert gap["verdict"] == "agrees" and gap["conclusion_holds"]
    kv = ours.loc["The batch crossover once every sequence reads its own KV cache"]
    assert not kv["conclusion_holds"]
    assert ours.loc["H100 SXM ridge point, dense and sparse", "verdict"] == "rounding"


def test_chapter_charts_build():
    builds = phases.essay_pair_by_build()
    ratios = phases.all_ratios()
    charts = [figures.essay_pair(1956, 60.57, builds),
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
