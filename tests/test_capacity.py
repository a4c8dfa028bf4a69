"""What fits where (chapter 4) and MHA, GQA, MQA at depth (chapter 5)."""

from __future__ import annotations

import math

import pytest

from napkin import (capacity, catalog, errata, gqa, hardware, kv_cache_bytes, kvcache,
                    roofline)
from napkin.units import GiB

LLAMA = "Llama-3.3-70B"


def test_units_table_shows_one_cache_in_every_unit():
    df = capacity.units_table(catalog.config(LLAMA), [("full", 131_072, 1)])
    row = df.iloc[0]
    assert row["bytes"] == 42_949_672_960 and row["GiB"] == 40
    assert row["GB"] == pytest.approx(42.95, abs=0.005)
    shown = capacity.units_display(df).iloc[0]
    assert shown["binary"] == "40.00 GiB" and shown["decimal"] == "42.95 GB"


def test_naive_formula_agrees_only_for_plain_mha():
    table = capacity.model_table().set_index("model")
    mha = table.loc["Llama-2-7B"]
    assert mha["naive_at_context_bytes"] == mha["kv_at_context_bytes"]
    for model in ("Llama-3.3-70B", "gpt-oss-120b", "Mistral-7B-v0.1", "DeepSeek-V3"):
        naive, right = table.loc[model, ["naive_at_context_bytes", "kv_at_context_bytes"]]
        assert naive > 4 * right, model
    assert "windowed" in table.loc["gpt-oss-120b", "layout"]
    assert table.loc["DeepSeek-V3", "layout"].startswith("MLA")


def test_max_batch_table_says_why_a_cell_is_empty():
    t = capacity.max_batch_table().set_index(["model", "chip", "context_tokens"])
    # 80 GiB less 70.55 GB of FP8 weights, over 2.5 GiB per 8k sequence
    assert t.loc[("Llama-3.3-70B", "H100 SXM", 8192), "max_batch"] == \
        int((80 * GiB - 70.5537e9) // (327_680 * 8192))
    assert math.isnan(t.loc[("Llama-2-7B", "H200", 8192), "max_batch"])  # beyond its 4k
    assert not t.loc[("DeepSeek-V3", "B200", 4096), "weights_fit"]
    assert t.loc[("DeepSeek-V3", "B200", 4096), "max_batch"] == 0
    grid = capacity.max_batch_grid(capacity.max_batch_table()).set_index(
        ["model", "context_tokens"])
    assert grid.loc[("DeepSeek-V3", 4096), "B200"] == "weights do not fit"
    assert grid.loc[("Llama-2-7B", 8192), "H100 SXM"] == "beyond its context"
    assert list(grid.columns) == list(capacity.CHIPS)


def test_capacity_turn_is_computed_exactly():
    turn = capacity.roofline_turn(LLAMA, "H200")
    t = turn["turn_tokens"]
    m = roofline.Model.from_catalog(LLAMA, "FP8")
    roof = capacity.roof_of("H200")
    assert "FP8" in roof.flops_kind
    cap = hardware.chip("H200").capacity_bytes

    def fits(c):
        return kvcache.max_batch(m.config, c, cap, m.weight_bytes)

    # the weight matmuls on the FP8 roof, attention over the 16-bit cache on the FP16 one
    attention = capacity.attention_ridge("H200")
    assert attention == pytest.approx(roofline.chip_roof("H200", "fp16").ridge)
    assert turn["attention_ridge_flop_per_byte"] == attention

    def need(c):
        return roofline.batch_to_ridge(m, roof.ridge, c, attention)

    assert fits(t) < need(t)
    assert fits(t - 1) >= need(t - 1)
    never = turn["never_beyond_tokens"]
    assert math.isinf(need(never))
    assert math.isfinite(need(never - 1))
    # attention at the FP16 rate gives up later than one FP8 roof for the whole step would
    assert math.isfinite(roofline.batch_to_ridge(m, roof.ridge, never - 1, attention))
    assert never > roofline.context_limit(m, roof.ridge)
    # weights only, 8-bit weights on the FP8 roof cross where 16-bit ones do on FP16's
    assert turn["weights_only_crossover"] == pytest.approx(1978.9 / 4.8 / 2, rel=1e-3)
    curves = capacity.batch_limit_curves([LLAMA])
    marked = curves[curves["turn"]].set_index("chip")["context_tokens"]
    assert marked["H200"] == t


def test_an_extra_sequence_costs_its_cache_over_the_weights():
    cost = capacity.extra_sequence_cost(LLAMA, [2048]).iloc[0]
    assert cost["share_of_weights"] == pytest.approx(327_680 * 2048 / 70.5537e9)


def test_calculator_rows_reproduce_the_formula():
    """The page's calculator evaluates this linear form; it must equal kv_cache_bytes."""
    for _, r in capacity.calculator_rows().iterrows():
        cfg = catalog.config(r["model"])
        for n in (1024, 4096, 131_072):
            elements = r["full_elements"] * n + r["windowed_elements"] * min(n, r["window"])
            assert elements * 2 * 3 == kv_cache_bytes(cfg, n, 3), r["model"]


def test_gqa_variants_scale_with_kv_heads():
    llama = catalog.config(LLAMA)
    table = gqa.variant_table(llama, 131_072, 70e9).set_index("variant")
    assert table.loc["MHA", "kv_per_token_bytes"] == 8 * table.loc["GQA", "kv_per_token_bytes"]
    assert table.loc["GQA", "kv_per_token_bytes"] == 8 * table.loc["MQA", "kv_per_token_bytes"]
    assert table.loc["MHA", "kv_at_context_bytes"] / GiB == 320
    assert table.loc["GQA", "read_at_131072_bytes"] == 70e9 + 40 * GiB
    with pytest.raises(ValueError, match="MLA"):
        gqa.variants(catalog.config("DeepSeek-V3"))
    with pytest.raises(ValueError, match="start from a GQA model"):
        gqa.variants(catalog.config("Llama-2-7B"))


def test_decode_at_depth_falls_and_stops_fitting():
    llama = catalog.config(LLAMA)
    h200 = hardware.chip("H200")
    df = gqa.decode_at_depth(gqa.variants(llama), 70.55e9, h200.bandwidth_bytes_per_s,
                             gqa.depth_grid(131_072), 141e9)
    for variant, rows in df.groupby("variant"):
        assert rows["tokens_per_s"].is_monotonic_decreasing
    first = df[df["depth_tokens"] == 0]["tokens_per_s"]
    assert first.nunique() == 1 and first.iloc[0] == pytest.approx(4.8e12 / 70.55e9)
    assert not df[(df["variant"] == "MHA") & (df["depth_tokens"] == 131_072)]["fits"].iloc[0]
    assert df[(df["variant"] == "GQA") & (df["depth_tokens"] == 131_072)]["fits"].iloc[0]
    assert gqa.depth_where_cache_equals_weights(llama, 327_680 * 1000) == 1000
    with pytest.raises(ValueError, match="bandwidth"):
        gqa.decode_at_depth(gqa.variants(llama), 1e9, -1, [0])


def test_errata_of_the_kv_section():
    mha = errata.erratum("mha_per_token")
    assert mha.verdict == "unit slip" and mha.conclusion_holds
    assert errata.erratum("gqa_cut").verdict == "agrees"
    assert errata.erratum("kv_batch_example").conclusion_holds
    assert errata.erratum("kv_per_token").verdict == "agrees"


def test_the_mac_counts_what_its_gpu_may_use_by_default():
    """The chip's one rule (napkin.hardware.Chip.gpu_share) that chapter 8 uses too, without
    the operating system's reserve (a serving chapter counts its own overheads)."""
    from napkin import buying, hardware

    chips = capacity.chip_table().set_index("chip")
    share, basis = hardware.mac_default_gpu_fraction(192)
    assert chips.loc["M2 Ultra", "gpu_usable_bytes"] == share * 192 * GiB
    assert chips.loc["M2 Ultra", "gpu_limit_basis"] == basis
    assert (chips.drop("M2 Ultra")["gpu_usable_bytes"]
            == chips.drop("M2 Ultra")["capacity_bytes"]).all()
    assert buying.machine("M2 Ultra").gpu_limit_bytes == chips.loc["M2 Ultra", "gpu_usable_bytes"]
    t = capacity.max_batch_table().set_index(["model", "chip", "context_tokens"])
    w = catalog.weight_bytes(LLAMA, "FP8")
    assert t.loc[(LLAMA, "M2 Ultra", 4096), "max_batch"] == \
        int((share * 192 * GiB - w) // (327_680 * 4096))
    shown = capacity.chip_display(capacity.chip_table()).set_index("chip")["gpu"]
    assert shown["H100 SXM"] == "all" and shown["M2 Ultra"].endswith("GiB by default")


def test_a_context_nobody_recorded_is_named_as_a_stand_in():
    table = capacity.model_table().set_index("model")
    assert table.loc["Mistral-7B-v0.1", "context_basis"] == "config position limit"
    assert table.loc["Llama-3.3-70B", "context_basis"] == "served"
    shown = capacity.model_display(capacity.model_table()).set_index("model")["context"]
    assert shown["Mistral-7B-v0.1"] == "32,768 (config position limit)"
    assert shown["Llama-3.3-70B"] == "131,072"


def test_the_calibrated_turn_is_the_roofline_turn_when_one_share_scales_both_peaks():
    """Chapter 4's band, recomputed through napkin.predict: the published fit reaches one
    share of both peaks, so the calibrated step model turns compute-bound at the roofline's
    batches, and the turn and the point beyond which no batch reaches the ridge stay put."""
    from napkin.predict.calibration import calibrated

    assert calibrated().bandwidth_efficiency == calibrated().compute_efficiency
    for chip in capacity.DATACENTER:
        roof = capacity.roofline_turn("Llama-3.3-70B", chip)
        cal = capacity.calibrated_turn("Llama-3.3-70B", chip)
        assert cal["bandwidth_share"] == cal["compute_share"]
        assert cal["never_beyond_tokens"] == roof["never_beyond_tokens"]
        assert cal["turn_tokens"] == roof["turn_tokens"]


def test_unequal_shares_move_the_calibrated_turn():
    """With less of the FLOP/s reached than of the bandwidth (the book's first edition), the
    effective ridge is lower, and a batch reaches it at longer contexts than the roofline's."""
    from dataclasses import replace

    from napkin.predict.calibration import calibrated

    fit = calibrated()
    slower = replace(fit, compute_efficiency=fit.bandwidth_efficiency / 2)
    roof = capacity.roofline_turn("Llama-3.3-70B", "H100 SXM")
    moved = capacity.calibrated_turn("Llama-3.3-70B", "H100 SXM", calibration=slower)
    assert moved["never_beyond_tokens"] > roof["never_beyond_tokens"]
    assert moved["compute_share"] < moved["bandwidth_share"]


def test_one_memory_rule_with_and_without_the_os_reserve():
    from napkin import hardware
    spark = hardware.chip("DGX Spark")
    share, basis = spark.gpu_share()
    assert share < 1 and "reported by the driver" in basis
    assert spark.gpu_share(os_reserve=False) == (1.0, "")
    mac = hardware.chip("M2 Ultra")
    assert mac.gpu_share() == mac.gpu_share(os_reserve=False) == \
        hardware.mac_default_gpu_fraction(192)
    assert mac.gpu_share(64)[0] == hardware.mac_default_gpu_fraction(64)[0]
