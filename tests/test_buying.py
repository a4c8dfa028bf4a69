"""napkin.buying: the what-to-buy calculator, its inputs, bad input, and the in-page copy."""

from __future__ import annotations

import math
import re

import numpy as np
import pytest

from napkin import buying, catalog, kvcache, roofline
from napkin.units import GB


@pytest.fixture(scope="module")
def fleet():
    return buying.machines()


def test_machines_carry_their_sources_and_never_a_sparse_figure(fleet):
    names = {m.name for m in fleet}
    assert {"H100 SXM", "DGX Spark", "M3 Ultra", "Strix Halo", "RTX 5090"} <= names
    spark = buying.machine("DGX Spark")
    assert spark.dense_flops_per_s is None          # its figures are sparse FP4 and FP32 only
    assert spark.prefill_flops                      # but it has published prefill runs
    h100 = buying.machine("H100 SXM")
    assert h100.dense_flops_per_s == pytest.approx(989e12)
    for m in fleet:
        assert m.sources["bandwidth"].startswith("http") or "http" in m.sources["bandwidth"]
        if m.prefill_flops:
            assert "http" in m.sources["prefill"]


def test_prefill_rate_is_the_published_rate_times_the_reference_flops():
    runs = buying.prefill_runs()
    per_token = buying.reference_flops_per_token()
    # 2 x params per token, plus the attention of a 512-token prompt, per token
    cfg = catalog.config("Llama-2-7B")
    attention = 2 * 1 * kvcache.linear_form(cfg).full_elements_per_token * 512 * 513 / 2 / 512
    assert per_token == pytest.approx(2 * catalog.params("Llama-2-7B") + attention)
    spark = runs[runs["chip"] == "DGX Spark"]
    assert (spark["flops_per_s"] == spark["pp512_tok_per_s"] * per_token).all()
    assert not runs["run"].str.contains(", CPU$").any()


def test_estimate_arithmetic(fleet):
    w = buying.presets()["coding agent"]
    m = buying.machine("M3 Ultra")
    e = buying.estimate(m, w)
    model, total, active = buying.model_for(w)
    prefill = roofline.step_work(model, prefill=[(0, w.prompt_tokens)]).flops
    assert e["ttft_mid_s"] == pytest.approx(prefill / np.median(m.prefill_flops))
    assert e["ttft_fast_s"] <= e["ttft_mid_s"] <= e["ttft_slow_s"]
    kv = kvcache.kv_cache_bytes(model.config, w.mean_context_tokens)
    assert e["ceiling_tok_per_s"] == pytest.approx(m.bandwidth_bytes_per_s / (active + kv))
    assert e["decode_low_tok_per_s"] < e["decode_mid_tok_per_s"] < e["decode_high_tok_per_s"]
    # one user: the per-user figure is the single stream's (the step is memory-bound)
    assert e["per_user_mid_tok_per_s"] == pytest.approx(e["decode_mid_tok_per_s"], rel=1e-3)
    assert e["fits"] and e["need_GB"] == pytest.approx(
        (total + kvcache.kv_cache_bytes(model.config, w.context_tokens)) / GB)


def test_rankings_follow_what_each_workload_cares_about():
    p = buying.presets()
    agent = buying.rank(p["coding agent"])
    ranked = agent[agent["rank"].notna()]
    assert ranked["ttft_mid_s"].is_monotonic_increasing
    chat = buying.rank(p["chat"])
    assert chat[chat["rank"].notna()]["decode_mid_tok_per_s"].is_monotonic_decreasing
    many = buying.rank(p["many users"])
    assert many[many["rank"].notna()]["per_user_mid_tok_per_s"].is_monotonic_decreasing
    # an 80 GB H100 cannot hold 64 users' caches beside 70 GB of FP8 weights
    h100 = many.set_index("machine").loc["H100 SXM"]
    assert not h100["fits"] and "room for" in h100["message"]


def test_price_is_the_smallest_recorded_configuration_that_holds_it():
    p = buying.presets()
    chat = buying.rank(p["chat"]).set_index("machine")
    assert chat.loc["M3 Ultra", "price"] == 3999          # the 96 GB configuration
    many = buying.rank(p["many users"]).set_index("machine")
    assert math.isnan(many.loc["M3 Ultra", "price"])      # needs more than 96 GB
    assert "no recorded price for a configuration" in many.loc["M3 Ultra", "price_note"]
    assert chat.loc["H100 SXM", "price_note"] == "no vendor price stated"


@pytest.mark.parametrize("field,value", [("bandwidth_bytes_per_s", 0),
                                         ("bandwidth_bytes_per_s", -1.0),
                                         ("capacity_bytes", 0),
                                         ("dense_flops_per_s", 0)])
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
    assert ranked["message"].str.contains("does not fit").all()
    with pytest.raises(ValueError, match="no machine in data/ can run this workload"):
        buying.best(w)
    small = buying.Machine(name="laptop", vendor="none", family=buying.POOLED,
                           bandwidth_bytes_per_s=100e9, capacity_bytes=16e9)
    e = buying.estimate(small, buying.presets()["chat"])
    assert not e["fits"] and e["max_users"] == 0
    assert "does not fit in laptop's 16 GB" in e["message"]


# -- the in-page calculator is the same arithmetic ---------------------------------------------

HIGH = {"ttft": "ttft_slow_s", "decode": "decode_high_tok_per_s",
        "concurrency": "per_user_high_tok_per_s"}


@pytest.mark.parametrize("preset", ["coding agent", "chat", "many users"])
def test_calculator_page_agrees_with_the_library(preset):
    """Render the chart (no browser: vl-convert runs Vega) at a preset and read each value
    label's accessible description, which carries the machine and the unrounded value."""
    import vl_convert as vlc

    from napkin.figures import buying as charts

    shown = ["Llama-3.3-70B", "Llama-3.1-8B", "gpt-oss-120b"]
    presets = buying.presets()
    chart = charts.calculator(buying.calculator_rows(shown), presets,
                              ["Q4_K", "Q8_0", "FP8", "F16"], shown, default=preset)
    svg = vlc.vegalite_to_svg(chart.to_dict() | {"width": 600})
    group = svg[svg.index('class="mark-text role-mark'):]
    group = group[:group.index("</g>")]
    page = {}
    for label in re.findall(r'aria-label="([^"]*)"', group):
        fields = dict(part.split(": ", 1) for part in label.split("; "))
        page[fields["machine"]] = float(fields["high"])
    ranked = buying.rank(presets[preset])
    top = ranked[ranked["rank"].notna()].set_index("machine")
    assert sorted(page) == sorted(top.index)
    for name, value in page.items():
        assert value == pytest.approx(top.loc[name, HIGH[presets[preset].rank_by]], rel=1e-6)
    axis = svg[svg.index('role-axis-label'):]
    order = []
    for t in re.findall(r"<text[^>]*>([^<]*)</text>", axis):
        stem = t.rstrip("…")                     # long labels are cut short with an ellipsis
        hits = [name for name in page if name == t or (t != stem and name.startswith(stem))]
        if len(hits) == 1:
            order.append(hits[0])
    assert order == list(top.index)             # sorted as the library ranks
