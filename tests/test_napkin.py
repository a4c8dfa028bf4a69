"""napkin's arithmetic, data access and figures, including what it does with bad input."""

from __future__ import annotations

import json
import math

import altair as alt
import numpy as np
import pandas as pd
import pytest

import napkin
from napkin import charts, errata, essay, hardware, models, prose, published, tables, units
from napkin.units import GB, GiB, KiB


# -- units -------------------------------------------------------------------------------

def test_gb_and_gib_are_different_units():
    assert GB == 1e9 and GiB == 2**30
    assert units.to_bytes(3.56, "GiB") == pytest.approx(3.822520893e9, rel=1e-9)
    assert units.fmt_bytes(327_680, "KiB", 0) == "320 KiB"
    assert units.fmt_bandwidth(3.35e12) == "3,350 GB/s"


@pytest.mark.parametrize("value", [-1, 0.0, float("nan"), float("inf"), "400", None, True])
def test_require_positive_rejects(value):
    with pytest.raises(ValueError, match="bandwidth"):
        units.require_positive("bandwidth", value)


def test_unknown_unit_is_named():
    with pytest.raises(ValueError, match="'GBs'"):
        units.to_bytes(1, "GBs")


# -- ceiling -----------------------------------------------------------------------------

def test_decode_ceiling_is_the_essays_arithmetic():
    assert napkin.decode_ceiling(400e9, 3.83e9) == pytest.approx(104.44, abs=0.01)
    assert napkin.decode_ceiling(800e9, 3.83e9) == pytest.approx(208.88, abs=0.01)


def test_fraction_and_realistic():
    assert napkin.fraction_of_ceiling(61.19, 104.44) == pytest.approx(0.586, abs=1e-3)
    assert napkin.realistic_decode(400e9, 4e9, 0.5) == pytest.approx(50)


@pytest.mark.parametrize("bw,size,field", [(-400e9, 3.83e9, "bandwidth_bytes_per_s"),
                                          (400e9, 0, "bytes_per_token"),
                                          (float("nan"), 1e9, "bandwidth_bytes_per_s")])
def test_decode_ceiling_bad_input(bw, size, field):
    with pytest.raises(ValueError, match=field):
        napkin.decode_ceiling(bw, size)


def test_discount_must_be_a_fraction():
    with pytest.raises(ValueError, match="discount"):
        napkin.realistic_decode(400e9, 4e9, 1.5)


# -- tables and hardware -----------------------------------------------------------------

def test_missing_table_lists_what_exists():
    with pytest.raises(ValueError, match="available: .*hardware_specs"):
        tables.load("no_such_table")


def test_unsourced_rows_are_refused(tmp_path, monkeypatch):
    (tmp_path / "t.csv").write_text("a,source_url\n1,https://x\n2,\n")
    monkeypatch.setenv("NAPKIN_DATA", str(tmp_path))
    with pytest.raises(ValueError, match="without a source_url .*line.* 3"):
        tables.load("t")
    (tmp_path / "u.csv").write_text("a\n1\n")
    with pytest.raises(ValueError, match="no source_url column"):
        tables.load("u")


def test_chip_lookup_and_units():
    h100 = hardware.chip("H100 SXM")
    assert h100.bandwidth_bytes_per_s == 3350 * GB
    peak = h100.peak("fp16")
    assert peak.flops_per_s == 989e12 and "dense" in peak.kind
    assert "http" in h100.source("memory_bandwidth_GB_per_s")


def test_unknown_chip_lists_known_ones():
    with pytest.raises(ValueError, match="unknown chip 'H1000'.*H100 SXM"):
        hardware.chip("H1000")


def test_apple_tiers_resolve_to_their_own_bandwidth():
    assert hardware.apple_chip_name("M4 Max", 40) == "M4 Max (40-core GPU)"
    assert hardware.apple_chip_name("M2 Ultra", 76) == "M2 Ultra"
    assert hardware.chip("M4 Max (40-core GPU)").bandwidth_bytes_per_s == 546 * GB


# -- models ------------------------------------------------------------------------------

LLAMA2_7B = {"hidden_size": 4096, "num_hidden_layers": 32, "num_attention_heads": 32,
             "intermediate_size": 11008, "vocab_size": 32000}


def test_dense_params_match_llama_2_7b():
    # llama.cpp reports 6,738,415,616 parameters for llama-2-7b (data/research).
    assert models.dense_params(LLAMA2_7B) == 6_738_415_616


def test_config_from_path_and_text_config(tmp_path):
    path = tmp_path / "config.json"
    path.write_text(json.dumps({"text_config": LLAMA2_7B, "model_type": "llava"}))
    assert models.dense_params(path) == 6_738_415_616


def test_bits_per_weight_from_block_layouts():
    assert models.bits_per_weight("q4_0") == 4.5
    assert models.bits_per_weight("Q8_0") == 8.5
    assert models.params_bytes(6.738e9, "F16") == pytest.approx(13.476e9)


@pytest.mark.parametrize("config,message", [
    ({**LLAMA2_7B, "num_attention_heads": -4}, "num_attention_heads.*at least 1"),
    ({k: v for k, v in LLAMA2_7B.items() if k != "num_attention_heads"}, "num_attention_heads"),
    ({**LLAMA2_7B, "hidden_size": "4096"}, "hidden_size.*integer"),
    ({**LLAMA2_7B, "num_attention_heads": 30}, "not a multiple"),
])
def test_bad_configs_name_the_field(config, message):
    with pytest.raises(ValueError, match=message):
        models.dense_params(config)


def test_bad_config_files(tmp_path):
    with pytest.raises(ValueError, match="not found"):
        models.load_config(tmp_path / "missing.json")
    broken = tmp_path / "config.json"
    broken.write_text("{not json")
    with pytest.raises(ValueError, match="not valid JSON"):
        models.load_config(broken)
    with pytest.raises(ValueError, match="unknown weight format"):
        models.bits_per_weight("Q3_XYZ")


def test_gguf_sizes_file_versus_tensor_data():
    file_bytes = models.gguf_size_bytes("Q4_0", "file")
    tensor_bytes = models.gguf_size_bytes("Q4_0", "tensors")
    assert file_bytes == 3.83e9
    assert tensor_bytes == 3_825_065_984  # llama-bench's exact model_size
    with pytest.raises(ValueError, match="kind"):
        models.gguf_size_bytes("Q4_0", "disk")


# -- published results -------------------------------------------------------------------

def test_essay_table_reproduces_the_essay():
    table = published.essay_table().set_index("chip")
    for chip, key in [("M1 Max", "m1_max"), ("M2 Max", "m2_max"),
                      ("M1 Ultra", "m1_ultra"), ("M2 Ultra", "m2_ultra")]:
        assert table.loc[chip, "tokens_per_s"] == essay.claim(f"{key}_tg128")
        assert round(100 * table.loc[chip, "fraction_of_ceiling"]) == \
            essay.claim(f"{key}_fraction")
    uplift = published.ultra_uplift(published.essay_table())
    assert round(uplift.loc["M1", "speed_ratio"], 2) == essay.claim("ultra_uplift_m1")
    assert round(uplift.loc["M2", "speed_ratio"], 2) == essay.claim("ultra_uplift_m2")


def test_a_run_whose_variant_is_in_doubt_is_read_both_ways():
    both = published.variant_readings().set_index("reading")
    assert list(both.index) == ["H100 SXM", "H100 PCIe"]
    assert both.loc["H100 SXM", "bandwidth_bytes_per_s"] == 3350 * GB
    assert both.loc["H100 PCIe", "bandwidth_bytes_per_s"] == 2000 * GB
    assert both["tokens_per_s"].nunique() == 1
    tensor = models.gguf_size_bytes("Q4_0", "tensors")
    assert both.loc["H100 PCIe", "fraction_of_ceiling"] == pytest.approx(
        267.81 / (2000 * GB / tensor))
    # gpus() keeps one row per run, and says in a column that the run has two readings
    gpus = published.gpus()
    h100 = gpus[gpus["machine"].str.startswith("H100")]
    assert len(h100) == 1 and "H100 PCIe" in h100["variant_note"].iloc[0]
    assert (gpus[~gpus["machine"].str.startswith("H100")]["variant_note"] == "").all()
    with pytest.raises(ValueError, match="variant is in doubt"):
        published.variant_readings(test="tg999")


def test_no_published_run_beats_its_ceiling():
    df = published.all_machines()
    assert len(df) > 40
    assert (df["fraction_of_ceiling"] < 1).all()
    assert df[published.COLUMNS].notna().all().all()


def test_the_embedding_table_is_in_the_tensor_data_at_q4_0():
    """Llama-2-7B Q4_0's tensor data, by hand: every matrix at Q4_0's 18 bytes per 32 weights
    (the token embedding included), the output layer at Q6_K's 210 per 256, norms in F32."""
    h, v, layers, inter = 4096, 32000, 32, 11008
    q4 = (layers * (4 * h * h + 3 * h * inter) + v * h) * 18 / 32
    assert q4 + v * h * 210 / 256 + (2 * layers + 1) * h * 4 == \
        published.llama2_7b_bytes_per_token("Q4_0")
    assert published.llama2_7b_embedding_bytes("Q4_0") == v * h * 18 / 32
    assert published.llama2_7b_embedding_bytes("F16") == v * h * 2


def _runs(machine, bandwidth, times):
    return pd.DataFrame([{"machine": machine, "chip": machine, "quant": q,
                          "bandwidth_bytes_per_s": bandwidth, "bytes_per_token": b,
                          "tokens_per_s": 1 / t} for q, (b, t) in times.items()])


def test_fixed_cost_fit_by_hand():
    """A chip reading at 80% of a 100 GB/s paper bandwidth with 5 ms fixed per token; Q4_0
    takes 1 ms more than that line says."""
    bw, fixed = 100e9, 0.005
    times = {q: (b, b / (0.8 * bw) + fixed) for q, b in (("F16", 10e9), ("Q8_0", 5e9))}
    times["Q4_0"] = (2.5e9, 2.5e9 / (0.8 * bw) + fixed + 0.001)
    fit = published.fixed_cost_fit(_runs("X", bw, times)).iloc[0]
    assert fit["effective_share"] == pytest.approx(0.8)
    assert fit["fixed_s"] == pytest.approx(fixed)
    assert fit["residual_s"] == pytest.approx(0.001)
    assert fit["beyond_F16_s"] == pytest.approx(10e9 / (0.8 * bw) + fixed - 10e9 / bw)
    # the published Apple runs: Q4_0 never carries more time beyond memory than F16
    apple = published.fixed_cost_fit()
    assert (apple["beyond_Q4_0_s"] < apple["beyond_F16_s"]).all()
    assert apple["residual_s"].abs().median() < 0.05 * apple["measured_s"].median()


def test_fixed_cost_fit_refuses_what_it_cannot_fit():
    runs = _runs("X", 1e11, {"F16": (1e10, 0.2), "Q8_0": (5e9, 0.1)})
    with pytest.raises(ValueError, match="no runs at Q4_0"):
        published.fixed_cost_fit(runs)
    with pytest.raises(ValueError, match="three different formats"):
        published.fixed_cost_fit(runs, fit=("F16", "F16"))
    mixed = pd.concat([runs, _runs("Y", 1e11, {"Q4_0": (2.5e9, 0.05)})])
    with pytest.raises(ValueError, match="no machine was run at all"):
        published.fixed_cost_fit(mixed)


# -- essay, prose, figures ---------------------------------------------------------------

def test_unknown_claim():
    with pytest.raises(ValueError, match="no claim 'nope'"):
        essay.claim("nope")


def test_plain_numbers_for_glue():
    assert type(prose.plain(np.float64(1.5))) is float
    assert type(prose.plain(np.int64(3))) is int
    assert prose.plain("text") == "text"


def _figure(name="fig-test-chart"):
    chart = alt.Chart(pd.DataFrame({"x": [1, 2], "y": [3, 4]})).mark_line().encode(x="x", y="y")
    return charts.Figure(name=name, chart=chart, caption="A caption.", source="A source.")


def test_figure_html_is_deterministic_and_self_identified():
    a, b = _figure().html(), _figure().html()
    assert a == b
    assert 'id="fig-test-chart"' in a and "altair-viz" not in a
    data, meta = _figure()._repr_mimebundle_()
    # JupyterLab prefers HTML to Vega-Lite: a figure offers it none, so Lab draws the chart
    assert data[charts.JUPYTER_MIME]["$schema"].endswith("/v5.json") and "text/html" not in data
    site = charts.figure_html(meta["napkin_figure"], data[charts.JUPYTER_MIME])
    assert site == a and '"$schema":"' + alt.SCHEMA_URL in site  # the site's own Vega-Lite
    assert meta["napkin_figure"]["name"] == "fig-test-chart"


def test_figure_html_cannot_break_out_of_its_script():
    chart = alt.Chart(pd.DataFrame({"x": ["</script><b>"]})).mark_point().encode(x="x")
    html = charts.Figure("fig-x", chart, "c", "s").html()
    assert "</script><b>" not in html


@pytest.mark.parametrize("name", ["Fig Napkin", "napkin-ceiling", "fig-", "fig_x"])
def test_figure_names_are_validated(name):
    with pytest.raises(ValueError, match="figure name"):
        _figure(name)


def test_figure_needs_caption_and_source():
    with pytest.raises(ValueError, match="needs a source"):
        charts.Figure("fig-x", _figure().chart, "caption", "  ")


def test_styled_table_has_a_stable_id():
    df = pd.DataFrame({"machine": ["a"], "tokens_per_s": [1.234]})
    bundle = tables.styled(df, "t1", {"machine": "Chip", "tokens_per_s": "tok/s"})._repr_mimebundle_()
    html = bundle["text/html"]
    assert "0x" not in bundle["text/plain"]
    assert "T_t1" in html and "1.23" in html
    with pytest.raises(ValueError, match="not in the table"):
        tables.styled(df, "t1", {"nope": "x"})


def test_styled_table_takes_formats_by_column():
    df = pd.DataFrame({"share": [0.2041], "gain": [3.456], "tokens_per_s": [1.234]})
    cols = {"share": "Share", "gain": "Gain", "tokens_per_s": "tok/s"}
    html = tables.styled(df, "t2", cols, formats={"share": "{:.1%}",
                                                  "gain": lambda v: f"{v:.1f}x"})
    html = html._repr_mimebundle_()["text/html"]
    assert "20.4%" in html and "3.5x" in html and "1.23" in html  # the others as before
    with pytest.raises(ValueError, match="not shown: nope"):
        tables.styled(df, "t2", cols, formats={"nope": "{:.1%}"})


def test_styled_bytes_are_shown_in_the_unit_the_title_names():
    """A bytes column becomes GB only where its title says GB: chapter 5 once showed the
    2,048 bytes per token of a small cache as 0.00."""
    df = pd.DataFrame({"kv_bytes_per_token": [2048], "bytes_per_token": [3.5e9],
                       "bandwidth_bytes_per_s": [3.35e12], "read_bytes_per_s": [1.5e9]})
    html = tables.styled(df, "t3", {"kv_bytes_per_token": "Bytes per token",
                                    "bytes_per_token": "Bytes/token (GB)",
                                    "bandwidth_bytes_per_s": "Bandwidth (GB/s)",
                                    "read_bytes_per_s": "Read (bytes/s)"})
    html = html._repr_mimebundle_()["text/html"]
    assert "2,048" in html and "0.00" not in html
    assert "3.50" in html and "3,350" in html and "1,500,000,000" in html


def test_kib_constant():
    assert 327_680 / KiB == 320
    assert math.isclose(units.KiB * 1024, units.MiB)


def test_every_number_the_essay_states_is_checked():
    """The errata page must read every claim in data/essay_claims.csv against the data."""
    covered = set().union(*(errata.claims_checked(check) for check in errata.CHECKS))
    unchecked = set(essay.claims()["claim"]) - covered
    assert not unchecked, f"no errata check covers these essay claims: {sorted(unchecked)}"


def test_notebook_figures_have_a_fixed_width_and_the_site_gets_container_back():
    """JupyterLab hangs on a chart as wide as its container; the site wants exactly that."""
    spec = _figure().spec()
    assert spec.get("width") != "container"  # a plain chart: nothing to set aside
    assert charts.book_spec(charts.jupyter_spec(spec)) == spec
    responsive = charts.responsive(_figure().chart, 200, alt.Title("t"))
    site = charts.Figure("fig-r", responsive, "c", "s").spec()
    notebook = charts.jupyter_spec(site)
    assert site["width"] == "container" and notebook["width"] == charts.JUPYTER_WIDTH
    assert charts.book_spec(notebook) == site


def test_table_row_finds_one_keyed_row_or_names_the_known_keys():
    assert tables.row("models", "model", "Llama-3.3-70B")["model"] == "Llama-3.3-70B"
    with pytest.raises(ValueError, match=r"no model 'GPT-9' in data/models.csv; known: .*Llama"):
        tables.row("models", "model", "GPT-9")
