"""napkin.buying: the what-to-buy calculator, its inputs, bad input, and the in-page copy."""

from __future__ import annotations

import math
import re

import numpy as np
import pandas as pd
import pytest

from napkin import buying, catalog, hardware, kvcache, phases, tables
from napkin.buying import decode, roofs
from napkin.units import GiB


@pytest.fixture(scope="module")
def fleet():
    return buying.machines()


def test_machines_carry_their_sources_and_the_roofs_they_are_held_to(fleet):
    names = {m.name for m in fleet}
    assert {"H100 SXM", "H100 PCIe", "DGX Spark", "M3 Ultra", "Strix Halo", "RTX 5090"} <= names
    spark = buying.machine("DGX Spark")
    assert spark.roof("Q4_K")[:2] == ("int8", pytest.approx(250e12))
    assert "derived, not vendor-stated" in spark.roof("Q4_K")[2]   # NVIDIA states no dense rate
    assert spark.prefill_flops                                       # but it has published runs
    h100 = buying.machine("H100 SXM")
    assert h100.roof("Q4_0")[1] == pytest.approx(1978.9e12)
    assert buying.machine("H100 PCIe").roof("Q4_0")[1] == pytest.approx(1513e12)
    m3 = buying.machine("M3 Ultra")                    # no derivation for M3 in the data
    assert m3.roof("Q4_K") == ("fp16", None, "no FP16 figure stated")
    for m in fleet:
        assert "http" in m.sources["bandwidth"]
        if m.prefill_flops:
            assert "http" in m.sources["prefill"]
        if m.roofs:
            assert "http" in m.sources["flops"]
        assert m.capacity_bytes == hardware.chip(m.name).capacity_bytes  # binary, whole


def test_each_format_is_held_to_the_arithmetic_it_runs_in():
    rtx = buying.machine("RTX 4090")
    assert rtx.backend == "CUDA"
    assert rtx.roof("Q4_0")[:2] == ("int8", pytest.approx(660.6e12))   # MMQ kernels
    assert rtx.roof("F16")[:2] == ("fp16", pytest.approx(165.2e12))    # FP32 accumulate
    assert rtx.roof("FP8")[:2] == ("fp8", pytest.approx(330.3e12))
    assert rtx.roof("MXFP4")[0] == "int8"                              # not a 12.x Blackwell
    spark = buying.machine("DGX Spark")                                # native FP4, build 7536 on
    assert spark.roof("MXFP4")[:2] == ("fp4", pytest.approx(500e12))
    ultra = buying.machine("M2 Ultra")
    assert ultra.backend == "Metal"
    assert ultra.roof("Q4_0")[:2] == ("fp16", pytest.approx(27.2e12))  # dequantized to FP16
    assert "76-core GPU" in ultra.roof("Q4_0")[2]
    strix = buying.machine("Strix Halo")
    assert strix.backend == "ROCm" and strix.roof("Q4_0")[:2] == ("int8", pytest.approx(59e12))
    arith, flops, label = buying.machine("RTX 3090").roof("FP8")       # no FP8 units
    assert (arith, flops) == ("fp16", pytest.approx(71.2e12)) and "no FP8 figure" in label


def test_an_apple_chip_is_held_to_the_fp32_vector_figure_of_its_own_configuration():
    """Apple's GPUs run FP16 at the FP32 rate: the M2 Pro's roof is its 19-core FP32 figure
    (6.8), not the leak-based FP16 lower bound (6.441); a binned 24-core M1 Max run is held
    to 24/32 of the 32-core figure."""
    assert buying.machine("M2 Pro").roof("Q4_0")[1] == pytest.approx(6.8e12)
    runs = buying.prefill_runs().set_index("run")
    binned = runs.loc["M1 Max 24-core GPU, Metal"]
    assert binned["roof_flops_per_s"] == pytest.approx(10.617e12 * 24 / 32)
    assert "24-core GPU" in binned["roof_label"]
    full = runs.loc["M1 Max 32-core GPU, Metal"]
    assert full["roof_flops_per_s"] == pytest.approx(10.617e12)
    metal = runs[runs["backend"] == "Metal"].dropna(subset=["fraction_of_roof"])
    assert metal["fraction_of_roof"].between(0.55, 0.7).all()          # tight once per config


def test_a_vulkan_run_is_held_to_the_fp16_figure():
    rtx = hardware.chip("RTX 4090")
    assert roofs.run_roof(rtx, "Vulkan")[0] == pytest.approx(rtx.peak("fp16").flops_per_s)
    assert roofs.run_roof(rtx, "CUDA")[0] == pytest.approx(rtx.peak("int8").flops_per_s)
    assert math.isnan(roofs.run_roof(None, "CUDA")[0])


def test_no_published_prefill_run_passes_the_roof_it_is_held_to():
    runs = buying.prefill_runs().dropna(subset=["fraction_of_roof"])
    assert len(runs) > 20
    assert (runs["fraction_of_roof"] < 1).all(), runs.sort_values("fraction_of_roof").tail()
    # the RTX 4090's best run passes its FP16 (FP32-accumulate) figure, not its INT8 roof
    best = runs[runs["chip"] == "RTX 4090"]["flops_per_s"].max()
    assert best > hardware.chip("RTX 4090").peak("fp16").flops_per_s
    by_backend = buying.backend_fractions([m.name for m in buying.machines()])
    assert set(by_backend["run_backend"]) >= {"CUDA", "Metal", "Vulkan"}
    assert (by_backend["high"] < 1).all()


def test_second_hand_runs_are_left_out_only_beside_first_hand_ones():
    left = buying.second_hand_runs()
    assert (left["confidence"] == "low").all()
    strix = left[left["chip"] == "Strix Halo"]
    assert "ROCm" in set(strix["backend"])                 # the early transcription
    kept = buying.reference_runs("pp512")
    assert not ((kept["chip"] == "Strix Halo") & (kept["confidence"] == "low")).any()
    # the M3 Ultra has only second-hand runs: they stay
    m3 = kept[kept["chip"] == "M3 Ultra"]
    assert len(m3) == 2 and (m3["confidence"] == "low").all()


def test_prefill_rate_is_the_published_rate_times_the_reference_flops():
    runs = buying.prefill_runs()
    per_token = buying.reference_flops_per_token()
    # 2 per layer weight (no embedding lookup, no output layer but the last token's), plus
    # the attention of a 512-token prompt, per token
    cfg = catalog.config("Llama-2-7B")
    layers = catalog.params("Llama-2-7B") - 2 * cfg["vocab_size"] * cfg["hidden_size"]
    attention = 2 * 1 * kvcache.linear_form(cfg).full_elements_per_token * 512 * 513 / 2 / 512
    assert per_token == pytest.approx(2 * layers + attention, rel=1e-4)  # catalog rounds
    assert per_token == pytest.approx(13.09e9, rel=1e-3)
    spark = runs[runs["chip"] == "DGX Spark"]
    assert (spark["flops_per_s"] == spark["pp512_tok_per_s"] * per_token).all()
    assert not runs["run"].str.contains(", CPU$").any()
    # the disputed H100 run counts for both variants, and says so, once per published run
    sxm, pcie = (runs[runs["chip"] == n] for n in ("H100 SXM", "H100 PCIe"))
    assert list(sxm["pp512_tok_per_s"]) == list(pcie["pp512_tok_per_s"]) and len(sxm) == 2
    assert sxm["note"].str.contains("SXM, another PCIe").all()
    assert list(sxm["run_id"]) == list(pcie["run_id"])


def test_a_prompt_is_counted_like_the_reference():
    """The same convention for the workload's prompt as for the reference run."""
    assert buying.prompt_flops("Llama-2-7B", 512) / 512 == pytest.approx(
        buying.reference_flops_per_token())
    prompt, decoded = buying.matmul_params("Llama-3.3-70B")
    cfg = catalog.config("Llama-3.3-70B")
    assert decoded - prompt == cfg["vocab_size"] * cfg["hidden_size"]   # the output layer
    assert prompt == pytest.approx(phases.layer_params(cfg))
    # compressed MLA attention cannot be counted by layer: the catalog's count stands in
    assert buying.matmul_params("DeepSeek-V3")[0] == catalog.params("DeepSeek-V3", active=True)


def test_the_h100_decode_run_is_read_both_ways():
    r = buying.h100_decode_readings().set_index("reading")
    assert r.loc["H100 PCIe", "fraction_of_ceiling"] == pytest.approx(
        r.loc["H100 SXM", "fraction_of_ceiling"] * 3350 / 2000)
    without = buying.fraction_quartiles().set_index("family").loc["GPU (CUDA)", "runs"]
    with_it = buying.fraction_quartiles("H100 PCIe").set_index("family").loc["GPU (CUDA)", "runs"]
    assert with_it == without + 1
    with pytest.raises(ValueError, match="h100_reading"):
        buying.fraction_quartiles("H100 NVL")


def test_the_decode_discount_is_the_family_widened_to_the_machines_own_runs():
    quart = buying.fraction_quartiles().set_index("family").loc["Apple Silicon"]
    own = buying.own_decode_runs()
    ultra = buying.machine("M2 Ultra")
    mine = own[own["chip"] == "M2 Ultra"]["fraction_of_ceiling"]
    assert ultra.decode_fractions == pytest.approx((mine.min(), quart["q50"], quart["q75"]))
    assert mine.max() < quart["q25"]                      # the Ultras convert less
    # AMD has no family: Strix Halo is discounted by its own runs
    strix = buying.machine("Strix Halo")
    mine = own[own["chip"] == "Strix Halo"]["fraction_of_ceiling"]
    assert strix.family == buying.OWN and len(mine) == 6
    assert strix.decode_fractions[1] == pytest.approx(mine.median())
    # a datacenter GPU's disputed run widens both readings, at each card's bandwidth
    h100 = own[own["chip"].isin(["H100 SXM", "H100 PCIe"])].set_index("chip")
    assert h100.loc["H100 PCIe", "fraction_of_ceiling"] == pytest.approx(
        h100.loc["H100 SXM", "fraction_of_ceiling"] * 3350 / 2000)
    assert buying.machine("H100 SXM").decode_fractions[0] == pytest.approx(
        h100.loc["H100 SXM", "fraction_of_ceiling"])
    assert decode.widened((0.5, 0.6, 0.7), ()) == (0.5, 0.6, 0.7)
    assert decode.widened((0.5, 0.6, 0.7), (0.4, 0.8)) == (0.4, 0.6, 0.8)


def test_the_fraction_grows_with_the_bytes_a_token_reads():
    by_format = buying.fraction_by_format(["M1 Ultra", "M2 Ultra", "M3 Ultra"]).set_index("quant")
    assert list(by_format.index) == ["Q4_0", "Q8_0", "F16"]
    assert by_format.loc["F16", "low"] > by_format.loc["Q4_0", "high"]


def test_a_chip_of_two_devices_is_left_out_with_its_reason(fleet):
    assert "MI250" not in {m.name for m in fleet}
    with pytest.raises(ValueError, match="separate device"):
        buying.machine("MI250")
    note = tables.load("hardware_specs").query("chip == 'MI250' and "
                                               "spec == 'memory_capacity_GiB'")["note"].iloc[0]
    assert "separate device" in note                     # the data says so
    assert buying.left_out().set_index("machine").loc["MI250", "capacity_GiB"] == 128


def _box(**kw) -> buying.Machine:
    """A made-up CUDA machine: 100 GiB, 1 TB/s, INT8 400 TOPS, FP16 100 TFLOP/s, three
    published runs at 50, 100 and 150 TFLOP/s, decode at 60 / 70 / 80 % of the ceiling."""
    return buying.Machine(**{**dict(
        name="box", vendor="NVIDIA", family=buying.POOLED, bandwidth_bytes_per_s=1e12,
        capacity_bytes=100 * GiB, backend="CUDA", roofs={"int8": 400e12, "fp16": 100e12},
        prefill_flops=(50e12, 100e12, 150e12), prefill_fractions=(0.125, 0.25, 0.375),
        fraction_quartiles=(0.6, 0.7, 0.8)), **kw})


def test_hand_computed_first_token_on_an_int8_roof():
    m = _box()
    w = buying.Workload("w", 1000, 100, 1, "Llama-3.1-8B", "Q4_0", "ttft")
    # 32 layers x 2 (K and V) x 8 KV heads x 128 = 65,536 cached elements per token, each
    # used by 32 / 8 = 4 query heads; 1,000 x 1,001 / 2 causal pairs
    cfg = catalog.config("Llama-3.1-8B")
    prefill = 2 * phases.layer_params(cfg) * 1000 + 2 * 4 * 65536 * 1000 * 1001 / 2
    weights = catalog.weight_bytes("Llama-3.1-8B", "Q4_0")
    e = buying.estimate(m, w)
    assert e["prefill_flops"] == pytest.approx(prefill)
    assert e["roof_arithmetic"] == "int8"
    assert e["ttft_bound_s"] == pytest.approx(max(prefill / 400e12, weights / 1e12))
    assert (e["ttft_fast_s"], e["ttft_mid_s"], e["ttft_slow_s"]) == pytest.approx(
        (prefill / 150e12, prefill / 100e12, prefill / 50e12))
    assert (e["prefill_fraction_low"], e["prefill_fraction_high"]) == pytest.approx(
        (0.125, 0.375))
    # the same machine on Metal is held to its FP16 figure: a bound four times longer
    metal = buying.estimate(buying.Machine(**{**m.__dict__, "backend": "Metal"}), w)
    assert metal["roof_arithmetic"] == "fp16"
    assert metal["ttft_bound_s"] == pytest.approx(max(prefill / 100e12, weights / 1e12))


def test_hand_computed_step_of_many_users_discounts_only_the_reads():
    """64 users of Llama-3.1-8B at Q8_0 on the made-up machine: the step's reads at the
    discounted bandwidth, its arithmetic at the rate the reference runs reached (not
    discounted again), whichever is longer."""
    w = buying.Workload("w", 2000, 500, 64, "Llama-3.1-8B", "Q8_0", "concurrency")
    cfg = catalog.config("Llama-3.1-8B")
    mean = 2000 + 250
    kv = 65536 * mean * 2                                  # bytes of one cache, f16
    total = catalog.weight_bytes("Llama-3.1-8B", "Q8_0")
    read = total + 64 * kv
    flops = 64 * (2 * buying.matmul_params("Llama-3.1-8B")[1] + 2 * 4 * 65536 * (mean + 1))
    e = buying.estimate(_box(), w)
    for name, f, rate in (("low", 0.6, 50e12), ("mid", 0.7, 100e12), ("high", 0.8, 150e12)):
        want = 1 / max(flops / rate, read / (f * 1e12))
        assert e[f"per_user_{name}_tok_per_s"] == pytest.approx(want, rel=1e-6), name
    assert e["step_compute_s"] == pytest.approx(flops / 100e12)
    assert e["step_read_s"] == pytest.approx(read / 0.7e12)
    assert cfg["num_key_value_heads"] == 8


def test_estimate_arithmetic(fleet):
    w = buying.presets()["coding agent"]
    m = buying.machine("M3 Ultra")
    e = buying.estimate(m, w)
    model, total, active = buying.model_for(w)
    prefill = buying.prompt_flops(w.model, w.prompt_tokens)
    assert e["ttft_mid_s"] == pytest.approx(prefill / np.median(m.prefill_flops))
    assert e["ttft_fast_s"] <= e["ttft_mid_s"] <= e["ttft_slow_s"]
    assert math.isnan(e["ttft_bound_s"])                  # no FP16 figure for the M3 Ultra
    kv = kvcache.kv_cache_bytes(model.config, w.mean_context_tokens)
    assert e["ceiling_tok_per_s"] == pytest.approx(m.bandwidth_bytes_per_s / (active + kv))
    assert e["decode_low_tok_per_s"] < e["decode_mid_tok_per_s"] < e["decode_high_tok_per_s"]
    assert e["decode_own_tok_per_s"] == pytest.approx(
        np.median(m.own_fractions) * e["ceiling_tok_per_s"])
    # one user: the per-user figure is the single stream's (the step is memory-bound)
    assert e["per_user_mid_tok_per_s"] == pytest.approx(e["decode_mid_tok_per_s"], rel=1e-3)
    assert e["fits"] and e["need_GiB"] == pytest.approx(
        (total + kvcache.kv_cache_bytes(model.config, w.context_tokens)) / GiB)
    assert e["capacity_GiB"] == 512 and e["usable_GiB"] == pytest.approx(512 * 0.75)


def test_default_gpu_limit_of_a_mac():
    assert hardware.mac_default_gpu_fraction(16)[0] == pytest.approx(2 / 3, abs=1e-3)
    assert hardware.mac_default_gpu_fraction(36)[0] == pytest.approx(2 / 3, abs=1e-3)
    assert hardware.mac_default_gpu_fraction(64)[0] == pytest.approx(0.75)
    assert hardware.mac_default_gpu_fraction(512)[0] == pytest.approx(0.75)  # not 128 GiB's 84 %
    assert "lowest recorded" in hardware.mac_default_gpu_fraction(128)[1]
    limits = hardware.gpu_memory_limits()
    assert (limits["source_url"].str.startswith("https://github.com/")).all()
    assert limits[limits["kind"] == "measured"]["fraction"].between(0.6, 0.9).all()
    with pytest.raises(ValueError, match="memory_GiB"):
        hardware.mac_default_gpu_fraction(0)
    assert buying.machine("A100 SXM").gpu_limit_bytes is None       # reports all 80 GiB


def test_what_the_operating_system_keeps_is_reserved_before_sizing_users():
    """Off a Mac, the GPU may use what the driver or the operating system reports (Linux's
    MemTotal on a DGX Spark, nvidia-smi on an H100), and no setting lifts it."""
    spark = buying.machine("DGX Spark")
    visible = hardware.chip("DGX Spark").specs["driver_visible_memory_MiB"] * 2**20
    assert spark.capacity_bytes == 128 * GiB and spark.usable_bytes == pytest.approx(visible)
    assert spark.usable_bytes / GiB == pytest.approx(121.7, abs=0.05)
    assert spark.raisable_bytes == spark.usable_bytes
    assert "reported by the driver or the operating system" in spark.gpu_limit_basis
    assert [p[1] for p in spark.prices] == pytest.approx([visible])   # the priced 128 GB one
    h100 = buying.machine("H100 SXM")
    assert h100.usable_bytes == pytest.approx(81559 * 2**20)
    many = buying.presets()["many users"]
    e = buying.estimate(spark, buying.Workload("x", 2000, 500, 200, many.model, "Q8_0"))
    assert not e["fits"] and not e["fits_after_raising"] and "iogpu" not in e["message"]
    kv_user = e["kv_per_user_GiB"] * GiB
    assert e["max_users"] == int((visible - e["weights_GiB"] * GiB) // kv_user)
    mac = buying.machine("M3 Ultra")
    assert mac.raisable_bytes == mac.capacity_bytes > mac.usable_bytes


def test_a_mac_over_its_default_gpu_limit_is_not_ranked_as_fitting():
    agent = buying.presets()["coding agent"]
    ranked = buying.rank(agent).set_index("machine")
    m1 = ranked.loc["M1 Max"]                      # 64 GiB, of which 48 GiB by default
    assert m1["need_GiB"] < 64 and m1["need_GiB"] > 48
    assert not m1["fits"] and m1["fits_after_raising"] and pd_isna(m1["rank"])
    assert "iogpu.wired_limit_mb" in m1["message"] and m1["max_users"] == 0
    # the raised ones come after every ranked machine and before those that cannot hold it
    order = list(ranked.index)
    assert order.index("M1 Max") > max(order.index(n) for n in ranked.index
                                       if not pd_isna(ranked.loc[n, "rank"]))
    assert order.index("M1 Max") < order.index("RTX 4090")
    # a made-up Mac that holds it in full memory but not within the default limit
    mac = buying.Machine(name="mac", vendor="Apple", family="Apple Silicon",
                         bandwidth_bytes_per_s=400e9, capacity_bytes=60 * GiB,
                         gpu_limit_bytes=45 * GiB, backend="Metal", prefill_flops=(10e12,))
    e = buying.estimate(mac, agent)
    assert not e["fits"] and e["fits_after_raising"]
    assert f"{math.ceil(e['need_GiB'] * 1024):,} MiB" in e["message"]


def pd_isna(v) -> bool:
    import pandas as pd
    return bool(pd.isna(v))


def test_rankings_follow_what_each_workload_cares_about():
    p = buying.presets()
    agent = buying.rank(p["coding agent"])
    ranked = agent[agent["rank"].notna()]
    assert ranked["ttft_mid_s"].is_monotonic_increasing and ranked["fits"].all()
    chat = buying.rank(p["chat"])
    assert chat[chat["rank"].notna()]["decode_mid_tok_per_s"].is_monotonic_decreasing
    many = buying.rank(p["many users"])
    assert many[many["rank"].notna()]["per_user_mid_tok_per_s"].is_monotonic_decreasing
    # an 80 GiB H100 cannot hold 64 users' caches beside 66 GiB of FP8 weights
    h100 = many.set_index("machine").loc["H100 SXM"]
    assert not h100["fits"] and "room for" in h100["message"]


def test_price_is_the_smallest_recorded_configuration_whose_gpu_holds_it():
    p = buying.presets()
    chat = buying.rank(p["chat"]).set_index("machine")
    assert chat.loc["M3 Ultra", "price"] == 3999          # the 96 GiB configuration
    many = buying.rank(p["many users"]).set_index("machine")
    assert math.isnan(many.loc["M3 Ultra", "price"])      # needs more than 96 x 3/4 GiB
    assert "no recorded price for a configuration" in many.loc["M3 Ultra", "price_note"]
    assert chat.loc["H100 SXM", "price_note"] == "no vendor price stated"
    # a 64 GiB Mac's GPU may use 48 GiB by default: enough for the chat preset's 38 GiB
    assert chat.loc["M2 Ultra", "price"] == 3999


@pytest.mark.parametrize("field,value", [("bandwidth_bytes_per_s", 0),
                                         ("bandwidth_bytes_per_s", -1.0),
                                         ("capacity_bytes", 0),
                                         ("gpu_limit_bytes", 2e11),
                                         ("backend", "OpenCL"),
                                         ("roofs", {"fp64": 1e12}),
                                         ("roofs", {"int8": 0}),
                                         ("fraction_quartiles", (0.7, 0.6, 0.8)),
                                         ("own_fractions", (1.2,))])
def test_bad_machine_names_the_field(field, value):
    good = dict(name="x", vendor="y", family=buying.POOLED, bandwidth_bytes_per_s=1e11,
                capacity_bytes=1e11)
    with pytest.raises(ValueError, match=field):
        buying.Machine(**(good | {field: value}))


def test_bad_workload_names_the_field():
    with pytest.raises(ValueError, match="prompt_tokens"):
        buying.Workload("w", 0, 10, 1, "Llama-3.3-70B", "Q4_K")
    with pytest.raises(ValueError, match="users"):
        buying.Workload("w", 10, 10, 1.5, "Llama-3.3-70B", "Q4_K")
    with pytest.raises(ValueError, match="unknown model"):
        buying.Workload("w", 10, 10, 1, "Llama-9", "Q4_K")
    with pytest.raises(ValueError, match="weight format"):
        buying.Workload("w", 10, 10, 1, "Llama-3.3-70B", "Q3_X")
    with pytest.raises(ValueError, match="context"):
        buying.Workload("w", 200_000, 10, 1, "Llama-3.3-70B", "Q4_K")
    with pytest.raises(ValueError, match="rank_by"):
        buying.Workload("w", 10, 10, 1, "Llama-3.3-70B", "Q4_K", "price")


def test_a_model_that_fits_nowhere_gets_a_clear_message():
    w = buying.Workload("huge", 1000, 100, 1, "Llama-3.1-405B", "F16")
    ranked = buying.rank(w)
    assert ranked["rank"].isna().all()
    with pytest.raises(ValueError, match="no machine in data/ can run this workload"):
        buying.best(w)
    small = buying.Machine(name="laptop", vendor="none", family=buying.POOLED,
                           bandwidth_bytes_per_s=100e9, capacity_bytes=16 * GiB)
    e = buying.estimate(small, buying.presets()["chat"])
    assert not e["fits"] and not e["fits_after_raising"] and e["max_users"] == 0
    assert "does not fit in laptop's 16 GiB" in e["message"]
    assert math.isnan(e["ttft_bound_s"])                  # no backend, no roof


# -- the first-token method against runs it did not see -----------------------------------------

def test_extrapolation_check_is_the_ranking_method():
    check = buying.extrapolation_check()
    row = check[(check["machine"] == "DGX Spark") & (check["model"] == "gpt-oss-20b") &
                (check["depth_tokens"] == 4096)].iloc[0]
    runs = buying.prefill_runs()
    eff = np.median(runs[runs["chip"] == "DGX Spark"]["flops_per_s"])
    flops = phases.prefill_flops_per_token("gpt-oss-20b", 2048, 4096) * 2048
    assert row["predicted_tok_per_s"] == pytest.approx(2048 * eff / flops)
    assert row["ratio"] == pytest.approx(row["predicted_tok_per_s"] / row["measured_tok_per_s"])
    assert {"gpt-oss-20b", "gpt-oss-120b", "Qwen2.5-Coder-7B", "Shisa V2 70B"} <= \
        set(check["model"])
    assert set(check["backend"]) == {"CUDA", "Metal", "ROCm", "Vulkan"}
    # a run that names its GPU configuration is predicted from that configuration's run
    m3 = check[check["machine"] == "Apple M3 Ultra 80c 512GB"].iloc[0]
    ref80 = runs[(runs["chip"] == "M3 Ultra") & (runs["gpu_cores"] == 80)]["flops_per_s"]
    assert m3["reference_runs"] == 1
    assert m3["predicted_tok_per_s"] == pytest.approx(2048 * ref80.iloc[0] / m3["prefill_flops"])
    # the agent's architecture on Strix Halo, costed as Llama-3.3-70B
    strix = check[check["chip"] == "Strix Halo"]
    assert set(strix["architecture"]) == {"Llama-3.3-70B"} and not strix["moe"].any()
    assert check["moe"].any() and (~check["moe"]).any()
    summary = buying.extrapolation_summary(check).set_index("group")
    assert summary.loc["all", "runs"] == len(check)
    assert summary.loc["all", "low"] <= summary.loc["all", "median"] <= summary.loc["all", "high"]


# -- the in-page calculator is the same arithmetic ---------------------------------------------

SHOWN = ["Llama-3.3-70B", "Llama-3.1-8B", "gpt-oss-120b"]
FORMATS = ["Q4_K", "Q4_0", "MXFP4", "Q8_0", "FP8", "F16"]
MID = {"ttft": "ttft_mid_s", "decode": "decode_mid_tok_per_s",
       "concurrency": "per_user_mid_tok_per_s"}
LOW = {"ttft": "ttft_fast_s", "decode": "decode_low_tok_per_s",
       "concurrency": "per_user_low_tok_per_s"}
HIGH = {"ttft": "ttft_slow_s", "decode": "decode_high_tok_per_s",
        "concurrency": "per_user_high_tok_per_s"}
GRID = [  # prompt, answer, users, model, format, rank by
    (40000, 1000, 1, "Llama-3.3-70B", "Q4_K", "ttft"),       # Macs over their limit
    (2000, 500, 64, "Llama-3.3-70B", "FP8", "concurrency"),  # 128 GiB Macs over theirs
    (8000, 500, 1, "gpt-oss-120b", "MXFP4", "decode"),
    (16000, 2000, 4, "Llama-3.1-8B", "F16", "ttft"),
    (30000, 200, 8, "Llama-3.3-70B", "Q8_0", "ttft"),
    (1000, 100, 1, "Llama-3.1-8B", "Q4_0", "concurrency"),
]


def _page(preset: str, custom: dict | None = None) -> tuple[dict, list[str]]:
    """Render the calculator (no browser: vl-convert runs Vega) and read each value label's
    audit description: every computed value, unrounded, by machine; and the axis order."""
    import vl_convert as vlc

    from napkin.buying import figures as charts

    chart = charts.calculator(buying.calculator_rows(SHOWN, FORMATS), buying.presets(),
                              FORMATS, SHOWN, default=preset, custom=custom, audit=True)
    svg = vlc.vegalite_to_svg(chart.to_dict() | {"width": 600})
    group = svg[svg.index('class="mark-text role-mark'):]
    group = group[:group.index("</g>")]
    page = {}
    for label in re.findall(r'aria-label="([^"]*)"', group):
        fields = dict(part.split("=", 1) for part in label.split(";"))
        page[fields["machine"]] = fields
    axis = svg[svg.index('role-axis-label'):]
    order = []
    for t in re.findall(r"<text[^>]*>([^<]*)</text>", axis):
        stem = t.rstrip("…")                     # long labels are cut short with an ellipsis
        hits = [name for name in page if t in (name, name + charts.RAISED)
                or (t != stem and (name + charts.RAISED).startswith(stem))]
        if len(hits) == 1:
            order.append(hits[0])
    return page, order


def _num(v: str) -> float:
    return math.nan if v in ("null", "NaN", "undefined") else float(v)


def _agrees(page: dict, ranked, rank_by: str) -> None:
    shown = ranked[ranked["fits"] | ranked["fits_after_raising"]]
    shown = shown[shown[MID[rank_by]].notna()].set_index("machine")
    assert sorted(page) == sorted(shown.index)
    for name, f in page.items():
        row = shown.loc[name]
        assert (f["fits"] == "true") == bool(row["fits"]), name
        for key, col in (("mid", MID[rank_by]), ("low", LOW[rank_by]),
                         ("high", HIGH[rank_by]), ("ttft_bound", "ttft_bound_s")):
            want = row[col]
            assert (math.isnan(_num(f[key])) and math.isnan(want)) or \
                _num(f[key]) == pytest.approx(want, rel=1e-6), (name, key)
        assert _num(f["need"]) == pytest.approx(row["need_GiB"] * GiB, rel=1e-9)
        price = _num(f["price"])
        assert (math.isnan(price) and math.isnan(row["price"])) or price == row["price"], name


def _sorted_as_ranked(order: list, ranked, rank_by: str) -> None:
    """The page lists the ranked machines first, in the library's order up to ties (two
    machines whose values agree to float noise, such as one run read as two variants, may
    come either way)."""
    top = ranked[ranked["rank"].notna()]
    assert set(order[:len(top)]) == set(top["machine"])
    value = top.set_index("machine")[MID[rank_by]]
    seq = [value[m] for m in order[:len(top)]]
    sign = 1 if rank_by == "ttft" else -1
    assert all(sign * (b - a) >= -1e-9 * abs(a) for a, b in zip(seq, seq[1:])), order


@pytest.mark.parametrize("preset", ["coding agent", "chat", "many users"])
def test_calculator_page_agrees_with_the_library(preset):
    page, order = _page(preset)
    w = buying.presets()[preset]
    ranked = buying.rank(w)
    _agrees(page, ranked, w.rank_by)
    _sorted_as_ranked(order, ranked, w.rank_by)           # sorted as the library ranks


@pytest.mark.parametrize("prompt,answer,users,model,fmt,rank_by", GRID)
def test_calculator_page_agrees_on_a_grid(prompt, answer, users, model, fmt, rank_by):
    page, order = _page("custom", dict(prompt=prompt, output=answer, users=users, model=model,
                                       fmt=fmt, rank_by=rank_by))
    ranked = buying.rank(buying.Workload("grid", prompt, answer, users, model, fmt, rank_by))
    _agrees(page, ranked, rank_by)
    _sorted_as_ranked(order, ranked, rank_by)
    top = list(ranked[ranked["rank"].notna()]["machine"])
    raised = set(ranked[ranked["fits_after_raising"]]["machine"]) & set(page)
    assert set(order[len(top):]) == raised                # faint, last


def test_the_grid_reaches_the_new_limit():
    """At least one grid point puts a Mac between its default GPU limit and its memory."""
    hits = 0
    for prompt, answer, users, model, fmt, rank_by in GRID:
        r = buying.rank(buying.Workload("g", prompt, answer, users, model, fmt, rank_by))
        hits += int(r["fits_after_raising"].sum())
    assert hits >= 2


@pytest.mark.parametrize("preset,unit", [("coding agent", " s"), ("chat", " tok/s"),
                                         ("many users", " tok/s per user")])
def test_calculator_labels_and_ticks_carry_the_unit_of_what_is_ranked(preset, unit):
    import vl_convert as vlc

    from napkin.buying import figures as charts

    chart = charts.calculator(buying.calculator_rows(SHOWN, FORMATS), buying.presets(),
                              FORMATS, SHOWN, default=preset)
    svg = vlc.vegalite_to_svg(chart.to_dict() | {"width": 600})
    group = svg[svg.index('class="mark-text role-mark'):]
    values = re.findall(r"<text[^>]*>([^<]*)</text>", group[:group.index("</g>")])
    assert values and all(v.endswith(unit) and re.search(r"\d", v) for v in values), values
    ticks = [t for part in svg.split('role-axis-label')[1:]
             for t in re.findall(r"<text[^>]*>([^<]*)</text>", part[:part.index("</g>")])]
    tick_unit = " s" if unit == " s" else " tok/s"
    assert any(t.endswith(tick_unit) and re.match(r"[\d,.]+ ", t) for t in ticks), ticks
    assert "(s)" in svg and "tokens/s" in svg  # the axis title names both units


def test_bound_by_classifies_each_step_from_its_two_times():
    made_up = pd.DataFrame({"rank": [1, 2, 3, pd.NA], "machine": ["A", "B", "C", "D"],
                            "vendor": ["Apple", "NVIDIA", "AMD", "NVIDIA"],
                            "step_compute_s": [0.6, 0.2, 0.66, 1.0],
                            "step_read_s": [0.2, 0.6, 0.62, 0.1]})
    b = buying.bound_by(made_up).set_index("machine")
    assert list(b.index) == ["A", "B", "C"]                   # unranked rows left out
    assert b.loc["A", "bound"] == "compute" and b.loc["B", "bound"] == "memory"
    assert b.loc["C", "bound"] == "neither"                   # within buying.TIE
    assert b.loc["A", "ratio"] == pytest.approx(3) and b.loc["B", "ratio"] == pytest.approx(3)
    assert buying.bound_by(made_up, tie=1.0).set_index("machine").loc["C", "bound"] == "compute"
    text = buying.bound_sentence(buying.bound_by(made_up))
    assert "the A's step is bound by its arithmetic (0.60 s of arithmetic against 0.20 s" in text
    assert "B's step is bound by its reads" in text and "C's step is bound by neither" in text
    with pytest.raises(ValueError, match="tie"):
        buying.bound_by(made_up, tie=0.5)
    with pytest.raises(ValueError, match="empty"):
        buying.bound_sentence(buying.bound_by(made_up.iloc[3:]))


def test_many_users_on_a_desk_dgx_spark_is_bound_by_its_reads_not_its_arithmetic():
    """Chapter 8's desk sentence: the arithmetic does not run out first everywhere. DGX Spark
    waits on memory, Strix Halo on neither, the Macs on arithmetic."""
    ranked = buying.rank(buying.presets()["many users"])
    b = buying.bound_by(ranked[buying.on_desk(ranked)]).set_index("machine")
    spark = b.loc["DGX Spark"]
    assert spark["bound"] == "memory" and spark["step_read_s"] > 2 * spark["step_compute_s"]
    assert b.loc["Strix Halo", "bound"] == "neither"
    macs = b[b["vendor"] == "Apple"]
    assert not macs.empty and (macs["bound"] == "compute").all()


def test_whole_requests_count_every_users_prompt():
    """The many-users ranking's decode-only rate leaves out each user's prompt; over whole
    requests (prompts prefilled one after another, then the answers) a desk machine's users
    get far less, and the order can change (reviewed: DGX Spark against the M3 Ultra)."""
    many = buying.presets()["many users"]
    r = buying.rank(many).set_index("machine")
    for m in ("DGX Spark", "M3 Ultra"):
        row = r.loc[m]
        expected = many.users * row["ttft_mid_s"] + many.output_tokens / row[
            "per_user_mid_tok_per_s"]
        assert row["round_s"] == pytest.approx(expected)
        assert row["request_per_user_mid_tok_per_s"] < row["per_user_mid_tok_per_s"]
    assert np.isnan(r.loc["B200", "request_per_user_mid_tok_per_s"])  # no prefill run


def test_a_chip_faster_than_every_run_of_its_family_takes_the_datacenter_runs():
    quart = decode.fraction_quartiles().set_index("family")
    fastest = quart.loc["GPU (CUDA)", "fastest_GB_per_s"]
    dc = quart.loc[decode.DATACENTER]
    own = decode.own_decode_runs()
    fast = own[own["chip"].map(lambda c: hardware.chip(c).bandwidth_bytes_per_s / 1e9) > fastest]
    assert dc["q50"] == pytest.approx(fast["fraction_of_ceiling"].median())
    assert dc["q75"] < quart.loc["GPU (CUDA)", "q25"]  # well below the consumer cards
    for m in buying.machines():
        beyond = m.bandwidth_bytes_per_s / 1e9 > quart.loc[
            decode.FAMILY.get(m.vendor, decode.POOLED), "fastest_GB_per_s"]
        assert (m.family == decode.DATACENTER) == beyond, m.name
    assert buying.machine("B200").family == decode.DATACENTER
    assert buying.machine("RTX 5090").family == "GPU (CUDA)"  # at the family's fastest run
