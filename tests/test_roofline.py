"""napkin.roofline: ridge points, intensities, and the batch crossover with and without KV."""

from __future__ import annotations

import math

import pandas as pd
import pytest

import napkin
from napkin import hardware, essay, roofline
from napkin.roofline import figures as figures

CHIPS = ["H100 SXM", "H100 PCIe", "H200", "B200", "A100 SXM", "A100 PCIe", "MI300X",
         "RTX 4090", "RTX 5090", "DGX Spark", "M2 Ultra", "Strix Halo"]


# -- the arithmetic ------------------------------------------------------------------------

def test_ridge_point_is_public_and_is_the_essays_division():
    assert napkin.ridge_point is roofline.ridge_point
    assert napkin.ridge_point(989e12, 3.35e12) == pytest.approx(295.22, abs=0.01)
    assert round(napkin.ridge_point(989e12, 3.35e12)) == essay.claim("h100_ridge")


@pytest.mark.parametrize("flops,bw,field", [(-1, 1e9, "flops_per_s"), (1e12, 0, "bandwidth"),
                                            (float("nan"), 1e9, "flops_per_s"),
                                            ("989e12", 1e9, "flops_per_s")])
def test_ridge_point_bad_input_names_the_field(flops, bw, field):
    with pytest.raises(ValueError, match=field):
        roofline.ridge_point(flops, bw)


def test_attainable_is_the_lower_of_the_two_roofs():
    assert roofline.attainable_flops(1, 1e15, 1e12) == 1e12           # memory-bound
    assert roofline.attainable_flops(1e4, 1e15, 1e12) == 1e15         # compute-bound
    with pytest.raises(ValueError, match="intensity"):
        roofline.attainable_flops(0, 1e15, 1e12)


def test_matmul_intensity_is_batch_at_fp16_and_scales_with_bytes():
    assert roofline.matmul_intensity(1) == 1
    assert roofline.matmul_intensity(64) == 64
    assert roofline.matmul_intensity(64, 0.5) == 256   # 4-bit weights: four times as intense
    with pytest.raises(ValueError, match="n_tokens"):
        roofline.matmul_intensity(0)
    with pytest.raises(ValueError, match="bytes_per_weight"):
        roofline.matmul_intensity(8, -2)


def test_bound():
    assert roofline.bound(1, 295) == "memory"
    assert roofline.bound(2000, 295) == "compute"
    assert roofline.bound(295, 295) == "compute"


# -- chips -----------------------------------------------------------------------------------

def test_chip_roof_uses_dense_fp16_and_says_so():
    h100 = roofline.chip_roof("H100 SXM")
    assert h100.flops_per_s == 989e12 and h100.flops_kind == "FP16, dense tensor"
    assert h100.capacity_bytes == 80 * 2**30  # an "80 GB" H100 holds 80 GiB
    rtx = roofline.chip_roof("RTX 4090")
    assert rtx.flops_kind == "FP16, dense tensor, FP32 accumulate"
    assert rtx.flops_per_s == 165.2e12


def test_roofs_by_arithmetic_and_refusals():
    assert roofline.chip_roof("H100 SXM", "fp8").flops_per_s == pytest.approx(1978.9e12)
    assert roofline.chip_roof("RTX 4090", "int8").flops_per_s == pytest.approx(660.6e12)
    sparse = roofline.chip_roof("H100 SXM", "fp16", sparse=True)
    assert sparse.flops_per_s == 1979e12 and "sparse" in sparse.flops_kind
    spark = hardware.chip("DGX Spark")
    assert spark.peak("fp4", sparse=True).flops_per_s == 1000e12
    assert spark.peak("fp4").derived and not hardware.chip("H100 SXM").peak("fp16").derived
    with pytest.raises(ValueError, match="unknown arithmetic 'fp9'"):
        roofline.chip_roof("H100 SXM", "fp9")
    with pytest.raises(ValueError, match="M2 Ultra states no dense INT8.*fp16"):
        roofline.chip_roof("M2 Ultra", "int8")
    with pytest.raises(ValueError, match="A100 SXM states no dense FP4"):
        roofline.chip_roof("A100 SXM", "fp4")
    with pytest.raises(ValueError, match="unknown chip"):
        roofline.chip_roof("H1000")


@pytest.mark.parametrize("fmt,backend,arith", [
    ("F16", "CUDA", "fp16"), ("BF16", "serving", "fp16"), ("FP8", "serving", "fp8"),
    ("NVFP4", "serving", "fp4"), ("Q4_0", "CUDA", "int8"), ("q8_0", "ROCm", "int8"),
    ("MXFP4", "CUDA", "int8"), ("Q4_K", "Metal", "fp16"), ("F32", "Metal", "fp32")])
def test_the_arithmetic_a_format_runs_in(fmt, backend, arith):
    assert roofline.arithmetic_for(fmt, backend) == arith


def test_arithmetic_for_refuses_what_it_does_not_know():
    with pytest.raises(ValueError, match="unknown weight format 'Q3_X'"):
        roofline.arithmetic_for("Q3_X")
    with pytest.raises(ValueError, match="unknown backend 'OpenCL'"):
        roofline.arithmetic_for("Q4_0", "OpenCL")


def test_ridge_table_is_dense_and_one_row_per_stated_arithmetic():
    table = roofline.ridge_table(CHIPS)
    assert not table["flops_kind"].str.contains("sparse").any()
    h100 = table[table["chip"] == "H100 SXM"].set_index("arithmetic")
    assert set(h100.index) == {"fp16", "fp8", "int8"}
    assert h100.loc["fp8", "ridge_flop_per_byte"] == pytest.approx(
        2 * h100.loc["fp16", "ridge_flop_per_byte"], rel=1e-3)
    assert table[table["chip"] == "DGX Spark"]["derived"].all()
    assert (table["ridge_flop_per_byte"] ==
            table["flops_per_s"] / table["bandwidth_bytes_per_s"]).all()
    assert table["flops_source"].str.contains("http").all()


def test_llama_cpp_f16_gemms_run_at_the_fp16_accumulate_rate():
    # an RTX 4090 lists FP16 at 165.2 TFLOPS with FP32 accumulate, 330.3 with FP16 accumulate
    f16 = roofline.peak_for("RTX 4090", "F16")
    assert f16.flops_per_s == pytest.approx(330.3e12) and "FP16 accumulate" in f16.kind
    assert roofline.peak_for("RTX 4090", "BF16").flops_per_s == pytest.approx(165.2e12)
    assert roofline.peak_for("RTX 4090", "F16", "serving").flops_per_s == pytest.approx(165.2e12)
    assert roofline.peak_for("RTX 4090", "Q4_K").flops_per_s == pytest.approx(660.6e12)
    # a datacenter part states one FP16 figure, good for either accumulator
    assert roofline.peak_for("H100 SXM", "F16").flops_per_s == pytest.approx(989e12)
    assert "ggml-cuda" in roofline.ACCUMULATE_SOURCE
    with pytest.raises(ValueError, match="unknown weight format"):
        roofline.peak_for("RTX 4090", "F12")
    t = roofline.crossover_table(["RTX 4090"], ["F16", "Q4_K"]).set_index("weight_format")
    assert t.loc["F16", "crossover_batch"] == pytest.approx(330.3 / 1.008)
    assert t.loc["Q4_K", "crossover_batch"] < t.loc["F16", "crossover_batch"]


def test_crossover_batch_is_ridge_times_bytes_over_two():
    t = roofline.crossover_table(["H100 SXM", "M2 Ultra"], ["F16", "FP8", "Q4_0"])
    h = t[t["chip"] == "H100 SXM"].set_index("weight_format")
    assert h.loc["F16", "crossover_batch"] == pytest.approx(989 / 3.35)
    assert h.loc["FP8", "crossover_batch"] == pytest.approx(1978.9 / 3.35 / 2)
    assert h.loc["Q4_0", "crossover_batch"] == pytest.approx(1978.9 / 3.35 * 0.5625 / 2)
    # Apple's GPUs run every format in FP16 under Metal; under CUDA they have no INT8 row
    assert set(t[t["chip"] == "M2 Ultra"]["weight_format"]) == {"F16"}


def test_a_group_of_chips_has_the_same_ridge():
    h100 = roofline.chip_roof("H100 SXM")
    four = h100.times(4)
    assert four.ridge == pytest.approx(h100.ridge)
    assert four.capacity_bytes == 4 * h100.capacity_bytes and four.n_chips == 4
    with pytest.raises(ValueError, match="n_chips"):
        h100.times(0)
    with pytest.raises(ValueError, match="bandwidth"):
        roofline.Roof("x", 1e12, -1, "dense")


# -- a model's decode step -----------------------------------------------------------------------

@pytest.fixture(scope="module")
def llama70():
    return roofline.llama_3_3_70b()


def test_llama_3_3_70b_matches_the_essay_and_its_config(llama70):
    assert llama70.params == pytest.approx(70.5537e9, rel=1e-5)  # research notes' count
    assert llama70.kv_bytes_per_token() == essay.claim("kv_per_token_bytes")
    assert llama70.query_groups == 8
    assert llama70.bytes_per_weight == 2


def test_attention_does_as_many_flops_per_cached_byte_as_query_groups(llama70):
    assert llama70.attention_flops(1000) / llama70.kv_bytes(1000) == pytest.approx(8)


def test_weights_only_step_has_intensity_batch(llama70):
    h100 = roofline.chip_roof("H100 SXM")
    for b in (1, 64, 512):
        step = roofline.decode_step(llama70, h100, b, 0)
        assert step.intensity == pytest.approx(b)
        assert step.seconds == max(step.flops / h100.flops_per_s,
                                   step.bytes / h100.bandwidth_bytes_per_s)
    assert roofline.decode_step(llama70, h100, 1).bound == "memory"
    assert roofline.decode_step(llama70, h100, 512).bound == "compute"
    with pytest.raises(ValueError, match="batch"):
        roofline.decode_step(llama70, h100, 0)
    with pytest.raises(ValueError, match="n_tokens"):
        roofline.decode_step(llama70, h100, 1, -5)


def test_batch_to_ridge_with_and_without_the_cache(llama70):
    h100 = roofline.chip_roof("H100 SXM")
    assert roofline.batch_to_ridge(llama70, h100.ridge, 0) == pytest.approx(h100.ridge)
    b = roofline.batch_to_ridge(llama70, h100.ridge, 1024)
    assert b > h100.ridge
    # at that batch the step sits exactly on the ridge
    flops = b * (2 * llama70.params + llama70.attention_flops(1024))
    bytes_ = llama70.weight_bytes + b * llama70.kv_bytes(1024)
    assert flops / bytes_ == pytest.approx(h100.ridge)
    limit = roofline.context_limit(llama70, h100.ridge)
    assert 1024 < limit < 2048
    assert math.isfinite(roofline.batch_to_ridge(llama70, h100.ridge, int(limit) - 1))
    assert math.isinf(roofline.batch_to_ridge(llama70, h100.ridge, int(limit) + 1))
    # a chip with a lower ridge holds out to a longer context
    a100 = roofline.chip_roof("A100 SXM")
    assert roofline.context_limit(llama70, a100.ridge) > limit


def test_context_limit_refuses_sliding_windows():
    mistral = {"num_hidden_layers": 2, "hidden_size": 512, "num_attention_heads": 8,
               "num_key_value_heads": 2, "intermediate_size": 1024, "vocab_size": 1000,
               "sliding_window": 4096}
    model = roofline.Model.from_config(mistral, "windowed")
    with pytest.raises(ValueError, match="sliding windows"):
        roofline.context_limit(model, 295)
    # batch_to_ridge still works at each context, and the window caps the cache
    assert math.isfinite(roofline.batch_to_ridge(model, 1.0, 100_000))


def test_capacity_and_group_size(llama70):
    h100 = roofline.chip_roof("H100 SXM")
    assert roofline.chips_to_hold(llama70, h100) == 4
    assert roofline.max_batch(llama70, h100, 8192) == 0        # weights alone overflow one
    four = h100.times(4)
    fits = roofline.max_batch(llama70, four, 8192)
    assert fits == int((4 * 80 * 2**30 - llama70.weight_bytes) // llama70.kv_bytes(8192))
    with pytest.raises(ValueError, match="kv_share"):
        roofline.chips_to_hold(llama70, h100, 1.5)
    no_capacity = roofline.Roof("bare", 1e12, 1e11, "dense")
    with pytest.raises(ValueError, match="capacity"):
        roofline.max_batch(llama70, no_capacity, 10)


def test_batch_curve(llama70):
    group = roofline.chip_roof("H100 SXM").times(4)
    df = roofline.batch_curve(llama70, group, [1, 64, 4096], [0, 32768])
    assert len(df) == 6
    zero = df[df["context_tokens"] == 0].set_index("batch")
    assert zero.loc[64, "tokens_per_s"] == pytest.approx(64 * zero.loc[1, "tokens_per_s"])
    assert zero.loc[1, "chip_s_per_mtok"] == pytest.approx(
        4 * zero.loc[1, "step_s"] * 1e6)
    long = df[df["context_tokens"] == 32768]
    assert not long.set_index("batch").loc[4096, "fits_in_memory"]
    assert (long["bound"] == "memory").all()


# -- the chapter's charts build, with tooltips ----------------------------------------------------

def _has_tooltips(spec: dict) -> bool:
    layers = spec.get("layer", [spec])
    return any("tooltip" in layer.get("encoding", {}) or _has_tooltips(layer)
               for layer in layers if isinstance(layer, dict) and layer is not spec)


def test_chapter_charts_build(llama70):
    table = roofline.ridge_table(CHIPS)
    marks = pd.DataFrame({"intensity": [1.0, 2000.0], "label": ["a", "b"], "short": ["a", "b"]})
    group = roofline.chip_roof("H100 SXM").times(4)
    curve = roofline.batch_curve(llama70, group, [1, 8, 64], [0, 1024])
    charts = [figures.roofline_lines(table[table["arithmetic"] == "fp16"], marks),
              figures.ridge_dots(table, marks),
              figures.batch_lines(curve, "tokens_per_s"),
              figures.batch_lines(curve, "chip_s_per_mtok"),
              figures.ridge_batch_by_context(llama70, [group], [0, 512, 1024, 2048]),
              figures.batch_explorer(llama70, group, 64, 1024)]
    for chart in charts:
        spec = chart.to_dict()
        assert spec["width"] == "container"
        assert _has_tooltips(spec)
    with pytest.raises(ValueError, match="metric"):
        figures.batch_lines(curve, "dollars")
    with pytest.raises(ValueError, match="at most 12 chips"):
        figures.roofline_lines(table, marks)  # every arithmetic of every chip: too many lines


def test_attention_on_its_own_roof(llama70):
    """B* = W / (2P / R + a / R_a - m): weights on one roof, attention on another."""
    r, r_a, c = 590.7, 295.2, 512
    m = float(llama70.kv_bytes(c))
    a = llama70.attention_flops(c)
    expected = llama70.weight_bytes / (2 * llama70.params / r + a / r_a - m)
    assert roofline.batch_to_ridge(llama70, r, c, r_a) == pytest.approx(expected)
    # one roof for both is the familiar R W / (f - R m)
    assert roofline.batch_to_ridge(llama70, r, c, r) == pytest.approx(
        roofline.batch_to_ridge(llama70, r, c))
    limit = roofline.context_limit(llama70, r, r_a)
    assert math.isfinite(roofline.batch_to_ridge(llama70, r, int(limit) - 1, r_a))
    assert math.isinf(roofline.batch_to_ridge(llama70, r, int(limit) + 1, r_a))
    with pytest.raises(ValueError, match="attention_ridge"):
        roofline.batch_to_ridge(llama70, r, c, 0)


def test_capacity_turn_of_a_group(llama70):
    """Four H100s, FP16 weights and cache: capacity rules the ridge out before arithmetic."""
    h100 = roofline.chip_roof("H100 SXM")
    group = h100.times(4)
    turn = roofline.capacity_turn(llama70, group)
    t, never = turn["turn_tokens"], turn["never_beyond_tokens"]
    assert t < never and turn["fits_at_turn"] == roofline.max_batch(llama70, group, t)
    assert roofline.max_batch(llama70, group, t) < roofline.batch_to_ridge(llama70, h100.ridge, t)
    assert roofline.max_batch(llama70, group, t - 1) >= \
        roofline.batch_to_ridge(llama70, h100.ridge, t - 1)
    assert never == math.ceil(roofline.context_limit(llama70, h100.ridge))
    with pytest.raises(ValueError, match="max_context"):
        roofline.capacity_turn(llama70, group, max_context=0)


def _lab(hex_color: str) -> tuple[float, float, float]:
    """CIE L*a*b* of an sRGB colour (D65), for distances a reader's eye roughly follows."""
    rgb = [int(hex_color[i:i + 2], 16) / 255 for i in (1, 3, 5)]
    lin = [c / 12.92 if c <= 0.04045 else ((c + 0.055) / 1.055) ** 2.4 for c in rgb]
    x = (0.4124 * lin[0] + 0.3576 * lin[1] + 0.1805 * lin[2]) / 0.95047
    y = 0.2126 * lin[0] + 0.7152 * lin[1] + 0.0722 * lin[2]
    z = (0.0193 * lin[0] + 0.1192 * lin[1] + 0.9505 * lin[2]) / 1.08883
    f = [t ** (1 / 3) if t > 0.008856 else 7.787 * t + 16 / 116 for t in (x, y, z)]
    return 116 * f[1] - 16, 500 * (f[0] - f[1]), 200 * (f[1] - f[2])


def test_twelve_chip_roofline_tells_chips_apart_and_keeps_its_legend_near_on_a_phone():
    """Chapter 3's chart of every chip's roof: no look-alike pairs of hues, a shape per chip
    (so it reads in greyscale, where a dozen colours cannot stay apart), and at 400 px the
    legend sits above the plot, not a screen below it."""
    import vl_convert as vlc

    chips = ["H100 SXM", "H100 PCIe", "H200", "B200", "A100 SXM", "A100 PCIe", "MI300X",
             "RTX 4090", "RTX 5090", "DGX Spark", "M2 Ultra", "Strix Halo"]
    ridges = roofline.ridge_table(chips)
    markers = pd.DataFrame({"intensity": [1.0, 2000.0], "label": ["decode", "prefill"],
                            "short": ["B=1", "prefill"]})
    spec = figures.roofline_lines(ridges[ridges["arithmetic"] == "fp16"], markers).to_dict()
    layers = spec["layer"]
    color = layers[1]["encoding"]["color"]["scale"]["range"]
    shape = layers[1]["encoding"]["shape"]["scale"]["range"]
    assert len(color) == len(set(color)) == len(shape) == len(set(shape)) == len(chips)
    labs = [_lab(c) for c in color]
    closest = min(math.dist(a, b) for i, a in enumerate(labs) for b in labs[i + 1:])
    assert closest > 15, f"two chips' colours are only {closest:.1f} apart in L*a*b*"
    graph = vlc.vegalite_to_scenegraph(dict(spec, width=400))["scenegraph"]
    view = graph["items"][0]
    legend = next(g["items"][0] for g in view["items"] if g.get("role") == "legend")
    assert legend["y"] + legend["height"] <= 0 or legend["x"] >= view["width"], \
        f"legend at {legend['x']:.0f}, {legend['y']:.0f}: below the plot on a phone"
    assert not napkin.charts.misdrawn(spec, 400)
