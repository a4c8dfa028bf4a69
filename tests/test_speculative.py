"""napkin.speculative and napkin.measure.verify: the model's invariants and hand-computed
cases, bad input, the check against published sweeps, the in-page chart's arithmetic against
the library, and the live measurement (with and without llama.cpp)."""

from __future__ import annotations

import copy
import json
import math
import os
import re
import subprocess
import sys
from dataclasses import asdict, replace

import numpy as np
import pytest

from napkin import catalog, speculative
from napkin.measure import synthetic, verify
from napkin.predict import ROOFLINE, engine
from napkin.speculative import machines, published
from napkin.speculative.acceptance import acceptance_for, expected_tokens


@pytest.fixture(scope="module")
def h100():
    return engine("H100 SXM", "Llama-3.1-8B", weights="BF16", kv="bf16")


# -- tokens per cycle -------------------------------------------------------------------------

def test_expected_tokens_by_hand():
    assert expected_tokens(0.5, 2) == pytest.approx(1 + 0.5 + 0.25)
    assert expected_tokens(0.0, 5) == 1.0
    assert expected_tokens(1.0, 3) == 4.0
    assert expected_tokens(0.9, 1) == pytest.approx(1.9)
    a = np.linspace(0, 1, 21)
    assert np.all(np.diff(expected_tokens(a, 4)) > 0)          # rises with acceptance
    assert expected_tokens(0.999999, 4) == pytest.approx(5, rel=1e-5)  # continuous at a = 1


def test_tokens_per_cycle_by_position_by_hand():
    from napkin.speculative.acceptance import position_rates, tokens_per_cycle

    assert tokens_per_cycle([0.8, 0.5]) == pytest.approx(1 + 0.8 + 0.8 * 0.5)
    assert tokens_per_cycle([0.0, 0.9, 0.9]) == 1.0        # the chain stops at a rejection
    assert tokens_per_cycle([0.7] * 4) == pytest.approx(expected_tokens(0.7, 4))
    rates = position_rates(0.8, 7, profile=(1.0, 0.5, 0.25))
    assert rates.tolist() == pytest.approx([0.8, 0.4, 0.2, 0.2, 0.2, 0.2, 0.2])  # last holds
    with pytest.raises(ValueError, match="profile"):
        position_rates(0.8, 3, profile=(1.0, 1.2))           # never likelier than the first
    with pytest.raises(ValueError, match="profile"):
        position_rates(0.8, 3, profile=(0.9, 0.8))
    with pytest.raises(ValueError, match="rates"):
        tokens_per_cycle([[0.5, 0.5]])
    with pytest.raises(ValueError, match="acceptance"):
        speculative.cycle_tokens([0.8, 0.7], 3)               # fewer rates than positions


def test_acceptance_falls_with_position_as_published():
    """EAGLE's Table 2 (data/): the chain's conditional rate by position, relative to the
    first, is the median over the paper's models; it falls, and so a cycle yields fewer
    tokens than one independent rate would promise."""
    from napkin.speculative import acceptance as acc

    table = acc.by_position()
    eagle = table[(table["method"] == "EAGLE") & (table["temperature"].astype(str) == "0")]
    assert eagle["target_model"].nunique() == 6 and eagle["draft_position"].max() == 5
    wide = eagle.pivot_table(index="target_model", columns="draft_position",
                             values="acceptance_low")
    profile = acc.decay_profile()
    assert profile[0] == 1.0
    assert profile[1] == pytest.approx(float((wide[2] / wide[1]).median()))
    assert all(r < 1 for r in profile[1:])
    for k in (2, 3, 5, 10):
        assert acc.tokens_per_cycle(acc.position_rates(0.85, k)) < expected_tokens(0.85, k)
    low, high = acc.stated(published.DEEPSEEK_MTP)
    ds = table[table["method"] == published.DEEPSEEK_MTP]
    assert (low, high) == (ds["acceptance_low"].iloc[0], ds["acceptance_high"].iloc[0])
    assert published.SWEEPS[2].acceptance == (low, high)
    medusa = table[table["method"] == "Medusa-1 heads"]
    assert (medusa["definition"] != acc.CONDITIONAL).all()  # a head's own accuracy, not used
    with pytest.raises(ValueError, match="Medusa"):
        acc.decay_profile("Medusa-1 heads", "")


def test_acceptance_for_inverts_expected_tokens():
    for a, k in ((0.3, 1), (0.7, 4), (0.95, 7)):
        assert acceptance_for(expected_tokens(a, k), k) == pytest.approx(a, abs=1e-9)
    assert acceptance_for(1.0, 3) == pytest.approx(0.0, abs=1e-9)
    with pytest.raises(ValueError, match="tokens_per_cycle"):
        acceptance_for(5.5, 4)
    with pytest.raises(ValueError, match="tokens_per_cycle"):
        acceptance_for(0.5, 4)


@pytest.mark.parametrize("k", [0, -1, 1.5, True, "3"])
def test_bad_draft_lengths(k, h100):
    with pytest.raises(ValueError, match="k"):
        expected_tokens(0.5, k)
    with pytest.raises(ValueError, match="k"):
        speculative.speedup(h100, speculative.share(0.1), 0.5, k)


@pytest.mark.parametrize("a", [-0.1, 1.01, math.nan, math.inf])
def test_acceptance_outside_zero_one(a, h100):
    with pytest.raises(ValueError, match="acceptance"):
        expected_tokens(a, 3)
    with pytest.raises(ValueError, match="acceptance"):
        speculative.speedup(h100, speculative.share(0.1), a, 3)


# -- what a verify step costs -----------------------------------------------------------------

def test_one_token_is_a_plain_decode_step(h100):
    for cal in (None, ROOFLINE):
        for batch in (1, 16, 256):
            assert speculative.verify_cost(h100, 1, batch, 512, cal) == 1.0


def test_verify_cost_is_never_below_one_step_and_rises_with_tokens(h100):
    for cal in (None, ROOFLINE):
        for batch in (1, 8, 64):
            costs = [speculative.verify_cost(h100, n, batch, 512, cal) for n in (1, 2, 4, 16, 64)]
            assert all(c >= 1 for c in costs)
            assert costs == sorted(costs)


def test_verify_cost_is_flat_while_memory_bound_then_proportional(h100):
    # the plain roofline of an H100 at BF16: the weights' matmuls turn compute-bound near
    # 295 tokens a step (989 TFLOPS / 3.35 TB/s, one FLOP per byte per token)
    assert speculative.verify_cost(h100, 8, 1, 0, ROOFLINE) == 1.0
    far = speculative.verify_cost(h100, 1024, 1, 0, ROOFLINE)
    near = speculative.verify_cost(h100, 512, 1, 0, ROOFLINE)
    assert far / near == pytest.approx(2.0, rel=0.02)  # attention's pairs add a little


@pytest.mark.parametrize("tokens", [0, -2, 1.5, True])
def test_bad_verify_sizes(tokens, h100):
    with pytest.raises(ValueError, match="tokens"):
        speculative.verify_cost(h100, tokens)


# -- the speedup --------------------------------------------------------------------------------

def test_speedup_by_hand_while_memory_bound(h100):
    # memory-bound verify step (costs one plain step), a draft pass at 10 % of one:
    # S = tau / (k c + 1) = 1.75 / 1.2
    s = speculative.speedup(h100, speculative.share(0.1), 0.5, 2, 1, 512, ROOFLINE)
    assert s == pytest.approx(1.75 / 1.2, rel=1e-12)
    parallel = speculative.share(0.1, parallel=True)  # Medusa: one pass for all k
    assert speculative.speedup(h100, parallel, 0.5, 2, 1, 512, ROOFLINE) == \
        pytest.approx(1.75 / 1.1, rel=1e-12)


def test_speedup_at_acceptance_zero_is_below_one(h100):
    for draft in (speculative.share(0.05), speculative.eagle(3), speculative.eagle(1)):
        for cal in (None, ROOFLINE):
            s = speculative.speedup(h100, draft, 0.0, 3, np.array([1, 8, 64, 512]), 512, cal)
            assert np.all(s < 1)


def test_speedup_rises_with_acceptance(h100):
    a = np.linspace(0, 0.99, 12)
    for draft in (speculative.share(0.1), speculative.eagle(3)):
        for batch in (1, 32, 300):
            s = [speculative.speedup(h100, draft, x, 4, batch, 512, ROOFLINE) for x in a]
            assert np.all(np.diff(s) > 0)


def test_speedup_falls_below_one_once_batching_uses_the_arithmetic(h100):
    b = speculative.break_even(h100, speculative.eagle(3), 0.65, 3, 512, ROOFLINE)
    assert b is not None
    assert speculative.speedup(h100, speculative.eagle(3), 0.65, 3, b, 512, ROOFLINE) < 1
    assert speculative.speedup(h100, speculative.eagle(3), 0.65, 3, b - 1, 512, ROOFLINE) >= 1
    # a perfect, free draft pays until memory runs out
    assert speculative.break_even(h100, speculative.share(0.0), 1.0, 3, 512, ROOFLINE) is None


def test_curve_parts_add_up(h100):
    df = speculative.curve(h100, speculative.eagle(3), 0.8, 3, [1, 16, 256])
    assert df["speedup"].to_numpy() == pytest.approx(
        (df["tokens_per_cycle"] * df["plain_s"] / (df["draft_s"] + df["verify_s"])).to_numpy())
    assert (df["cycle_relative"] >= 1).all()


# -- drafts -------------------------------------------------------------------------------------

def test_eagle_head_by_hand(h100):
    cfg = catalog.config("Llama-3.1-8B")
    h, layers, vocab = cfg["hidden_size"], cfg["num_hidden_layers"], cfg["vocab_size"]
    one_layer = (catalog.params("Llama-3.1-8B") - 2 * vocab * h) / layers  # untied embeddings
    p = speculative.draft.head_params(h100, speculative.eagle(3))
    assert p["active"] == pytest.approx(one_layer + vocab * h + 3 * h * h)
    share = speculative.draft.weight_share(h100, speculative.eagle(3))
    assert share == pytest.approx(p["active"] / catalog.params("Llama-3.1-8B"), rel=1e-9)


def test_eagle3_head_has_its_reduced_draft_vocabulary(h100):
    """The EAGLE-3 head the chapter cites scores a reduced vocabulary (its config, data/): its
    output layer reads draft_vocab x hidden weights, not the target's whole vocabulary."""
    cfg = catalog.config("Llama-3.1-8B")
    head = speculative.draft.eagle3_for("Llama-3.1-8B")
    assert head.draft_vocab == int(speculative.draft.configured(
        "EAGLE-3 head", "Llama-3.1-8B", "draft_vocab_size")) < cfg["vocab_size"]
    full = speculative.draft.head_params(h100, speculative.eagle(3))
    reduced = speculative.draft.head_params(h100, head)
    assert full["active"] - reduced["active"] == pytest.approx(
        (cfg["vocab_size"] - head.draft_vocab) * cfg["hidden_size"])
    assert speculative.draft.weight_share(h100, head) < \
        speculative.draft.weight_share(h100, speculative.eagle(3))
    with pytest.raises(ValueError, match="draft_vocab"):
        speculative.eagle(3, draft_vocab=0)
    with pytest.raises(ValueError, match="draft_vocab_size"):
        speculative.draft.configured("EAGLE-3 head", "Llama-3.1-70B", "draft_vocab_size")


def test_mtp_head_of_a_mixture_reads_one_layers_experts():
    ds = engine("H200", "DeepSeek-V3", n_chips=8, weights="FP8", kv="bf16")
    c = speculative.draft.constants(ds, speculative.mtp())
    t = ds.constants
    assert c.expert_bytes[0] == pytest.approx(t.expert_bytes[0] / ds.experts.moe_layers)
    assert c.routed[0] == t.routed[0] and c.allreduces[0] == 2
    assert 0 < speculative.draft.weight_share(ds, speculative.mtp()) < 0.1


def test_drafts_larger_than_the_target_are_refused(h100):
    with pytest.raises(ValueError, match="larger"):
        speculative.share(1.5)
    with pytest.raises(ValueError, match="larger"):
        speculative.draft.constants(h100, replace(speculative.eagle(3), layers=32))
    small = engine("H200", "Llama-3.1-8B", weights="BF16", kv="bf16")
    with pytest.raises(ValueError, match="larger than the target"):
        speculative.speedup(small, speculative.model("Llama-3.3-70B"), 0.8, 3)


@pytest.mark.parametrize("kwargs,field", [({"kind": "tree"}, "kind"),
                                          ({"kind": "head", "layers": 0}, "layers"),
                                          ({"kind": "head", "layers": 1, "fusion_inputs": -1},
                                           "fusion_inputs"),
                                          ({"kind": "share", "fraction": -0.1}, "share"),
                                          ({"kind": "share", "fraction": True}, "share"),
                                          ({"kind": "model"}, "model")])
def test_bad_drafts(kwargs, field):
    with pytest.raises(ValueError, match=field):
        speculative.Draft(name="x", **kwargs)
    with pytest.raises(ValueError, match="EAGLE"):
        speculative.eagle(4)


def test_a_separate_draft_model_is_priced_as_its_own_engine():
    big = engine("H200", "Llama-3.3-70B", weights="FP8", kv="fp8")
    s = speculative.speedup(big, speculative.model("Llama-3.1-8B"), 0.8, 4, 1, 512, ROOFLINE)
    share = speculative.draft.weight_share(big, speculative.model("Llama-3.1-8B"))
    assert share == pytest.approx(catalog.weight_bytes("Llama-3.1-8B", "FP8") /
                                  catalog.weight_bytes("Llama-3.3-70B", "FP8"), rel=1e-6)
    assert s == pytest.approx(expected_tokens(0.8, 4) / (4 * share + 1), rel=0.02)


# -- the check against published sweeps ---------------------------------------------------------

@pytest.fixture(scope="module")
def checked():
    return published.check(ROOFLINE)  # the plain roofline: fast, and the same machinery


def test_the_sweeps_are_the_rows_chosen(checked):
    counts = checked.groupby("sweep").size()
    assert counts[published.SWEEPS[0].name] == 18 and counts[published.SWEEPS[1].name] == 16
    assert counts[published.SWEEPS[2].name] == 2
    fit = checked[checked["split"] == "fit"]
    assert set(fit["batch"]) == {2} and len(fit) == 4          # one per EAGLE method
    assert fit["predicted"].to_numpy() == pytest.approx(fit["measured"].to_numpy(), rel=1e-6)
    ds = checked[checked["sweep"] == published.SWEEPS[2].name]
    assert (ds["split"] == "test").all()
    assert ds["acceptance"].tolist() == pytest.approx([0.875, 0.875])
    assert (ds["predicted_low"] <= ds["predicted_high"]).all()


def test_held_out_rows_never_move_the_fit():
    table = published.load()
    moved = table.copy()
    rows = published.SWEEPS[0].rows(table)
    target = rows[rows["batch"] == 64].iloc[0]
    hit = (moved["source_url"] == target["source_url"]) & (moved["method"] == target["method"]) \
        & (moved["batch"] == 64) & moved["speedup"].notna()
    moved.loc[hit, "speedup"] = 5.0
    a = published.predict_sweep(published.SWEEPS[0], ROOFLINE, table=table)
    b = published.predict_sweep(published.SWEEPS[0], ROOFLINE, table=moved)
    assert a["acceptance"].tolist() == b["acceptance"].tolist()
    assert a["predicted"].tolist() == pytest.approx(b["predicted"].tolist())


def test_errors_are_factors_per_sweep(checked):
    """Each sweep's held-out errors, and all of them, as factors (exp |ln(pred/meas)|) with a
    speed-signed bias: the same numbers napkin.validation.factor_stats gives."""
    from napkin.validation import factor_stats

    errors = published.errors(checked).set_index("sweep")
    test = checked[checked["split"] == "test"]
    assert set(errors.index) == {s.name for s in published.SWEEPS} | {"all"}
    assert errors.loc["all", "n"] == len(test)
    for sweep, rows in list(test.groupby("sweep")) + [("all", test)]:
        log_ratio = np.log(rows["predicted"] / rows["measured"])
        want = factor_stats(log_ratio, log_ratio)
        for stat in ("n", "median", "p90", "bias"):
            assert errors.loc[sweep, stat] == pytest.approx(want[stat]), (sweep, stat)
        assert errors.loc[sweep, "median"] == pytest.approx(
            np.exp(np.median(np.abs(log_ratio))))
        roof = np.log(rows["roofline"] / rows["measured"])
        assert errors.loc[sweep, "roofline_median"] == pytest.approx(
            np.exp(np.median(np.abs(roof))))
    assert (errors[["median", "p90", "max", "roofline_median"]] >= 1).all().all()
    assert (checked["factor"] >= 1).all()
    # a model that promises more speedup than measured has a bias above one
    over = checked.assign(predicted=checked["measured"] * 1.5, log_ratio=np.log(1.5))
    assert published.errors(over).set_index("sweep").loc["all", "bias"] == pytest.approx(1.5)


def test_published_speedups_are_never_pooled_across_definitions():
    table = published.load()
    for sweep in published.SWEEPS:
        assert sweep.rows(table)["speedup_definition"].nunique() == 1
    assert published.batch1_cycles(table)["speedup_definition"].str.startswith(
        "one stream").all()
    edge = published.edge_llm(table)
    assert (edge["cycle_relative_b8"] > edge["cycle_relative_b1"]).all()


# -- the essay's machines and the in-page chart ------------------------------------------------

def test_machine_views(h100):
    for name in machines.MACHINES:
        assert machines.ridge_tokens(name, "peak") > 0
        assert machines.ridge_tokens(name, "llama.cpp") > 0
    with pytest.raises(ValueError, match="view"):
        machines.view_calibration("M2 Ultra", "vibes")


def test_ridge_at_another_peak():
    """Q4_K on CUDA is priced at the INT8 peak; the H100's FP16 peak is half of it, so its
    ridge comes about twice as soon (attention keeps its own roof, hence not exactly)."""
    int8 = machines.ridge_tokens("H100 SXM", "peak")
    fp16 = machines.ridge_tokens("H100 SXM", "peak", arithmetic="fp16")
    assert machines.machine("H100 SXM").roof(machines.WEIGHTS)[0] == "int8"
    assert 0.4 * int8 < fp16 < 0.6 * int8
    assert machines.ridge_tokens("M2 Ultra", "peak", arithmetic="fp16") == pytest.approx(
        machines.ridge_tokens("M2 Ultra", "peak"))
    with pytest.raises(ValueError, match="int8"):
        machines.ridge_tokens("M2 Ultra", "peak", arithmetic="int8")
    with pytest.raises(ValueError, match="peak"):
        machines.ridge_tokens("H100 SXM", "llama.cpp", arithmetic="fp16")


def test_each_machine_decodes_at_its_own_measured_share():
    """The llama.cpp roof's bandwidth share is the machine's own published decode runs of the
    reference model where the book has them (read from data), else its family's median."""
    from napkin import buying

    own = buying.own_decode_runs()
    for name in machines.MACHINES:
        runs = own[own["chip"] == name]["fraction_of_ceiling"]
        share, basis = machines.decode_share(name)
        assert len(runs), f"{name} has no own decode run in data/"
        assert share == pytest.approx(float(np.median(runs)))
        assert "own" in basis
        assert machines.view_calibration(name, "llama.cpp").bandwidth_efficiency == share
    # the M2 Ultra's own runs sit far below its family's median: the reason for this change
    mac = buying.machine("M2 Ultra")
    assert machines.decode_share("M2 Ultra")[0] < mac.fraction_quartiles[0]



def test_a_machine_without_its_own_runs_takes_its_familys_median(monkeypatch):
    from napkin import buying

    mac = replace(buying.machine("M2 Ultra"), own_fractions=())
    monkeypatch.setattr(machines, "machine", lambda name: mac)
    share, basis = machines.decode_share("M2 Ultra")
    assert share == mac.fraction_quartiles[1] and "family" in basis


@pytest.fixture(scope="module")
def chart_rows():
    return machines.rows()


GRID = [  # acceptance, draft share, drafted tokens, roofs
    (0.85, 0.10, 3, "llama.cpp"),
    (0.60, 0.00, 7, "peak"),
    (0.95, 0.30, 1, "llama.cpp"),
    (0.00, 0.20, 5, "peak"),
    (0.50, 0.05, 15, "llama.cpp"),
]


@pytest.mark.parametrize("a,c,k,view", GRID)
def test_the_page_computes_what_the_library_does(chart_rows, a, c, k, view):
    """Render the explorer (no browser: vl-convert runs Vega) and read each point's audit
    description: machine, batch and the speedup computed in the page."""
    import vl_convert as vlc

    from napkin.speculative import figures as charts

    chart = charts.explorer(chart_rows, dict(acceptance=a, share=c, k=k, view=view), "t",
                            audit=True)
    svg = vlc.vegalite_to_svg(chart.to_dict() | {"width": 600})
    labels = re.findall(r'aria-label="(machine=[^"]*)"', svg)
    assert len(labels) == len(machines.MACHINES) * len(machines.BATCHES)
    for label in labels:
        f = dict(part.split("=", 1) for part in label.split(";"))
        want = machines.machine_speedup(f["machine"], view, a, c, k, int(f["B"]))
        assert float(f["speedup"]) == pytest.approx(want, rel=1e-9), f


def test_summary_is_the_library(chart_rows):
    s = machines.summary(0.85, 0.1, 3).set_index("machine")
    for name in machines.MACHINES:
        assert s.loc[name, "speedup_b1"] == pytest.approx(
            machines.machine_speedup(name, "llama.cpp", 0.85, 0.1, 3, 1))
        assert s.loc[name, "decode_share"] == machines.decode_share(name)[0]
    assert s.loc["M2 Ultra", "break_even_llama"] < s.loc["DGX Spark", "break_even_llama"]


def test_prompt_lookup_acceptance_comes_from_the_data():
    """Free n-gram drafting gets prompt lookup's own published acceptance lengths (the
    averaged rows), not another draft's acceptance; with a draft that costs nothing and a
    memory-bound verify step, the speedup is about those lengths on every machine."""
    table = published.load()
    rows = published.prompt_lookup(table)
    assert len(rows) and rows["method"].isin(published.PROMPT_LOOKUP).all()
    assert rows["dataset"].str.contains("Mean of|overall", case=False).all()
    pld = table[table["method"].isin(published.PROMPT_LOOKUP) &
                table["acceptance_length_tokens"].notna()]
    assert len(pld) > len(rows)            # the per-dataset rows are left out
    k = int(speculative.draft.configured("prompt lookup (PLD)", "any", "draft_tokens"))
    low, high = rows["acceptance_length_tokens"].min(), rows["acceptance_length_tokens"].max()
    out = machines.prompt_lookup((low, high), k, batches=(1,))
    for _, r in out.iterrows():
        assert 1 < r["speedup_b1"] <= r["tokens_per_cycle"] + 1e-9
    spark = out[out["machine"] == "DGX Spark"].set_index("tokens_per_cycle")["speedup_b1"]
    assert spark[high] == pytest.approx(high, rel=0.05)   # k + 1 tokens far below its ridge
    with pytest.raises(ValueError, match="tokens"):
        machines.tokens_speedup("DGX Spark", "llama.cpp", k + 2.0, k)


# -- live measurement -----------------------------------------------------------------------------

TINY = synthetic.Shape(hidden_size=256, num_hidden_layers=2, num_attention_heads=4,
                       num_key_value_heads=4, head_dim=64, intermediate_size=512,
                       vocab_size=512, context_length=1024)
SMALL = synthetic.Shape(hidden_size=128, num_hidden_layers=1, num_attention_heads=2,
                        num_key_value_heads=2, head_dim=64, intermediate_size=256,
                        vocab_size=512, context_length=1024)
PLAN = verify.VerifyPlan("test", tokens=(1, 2, 4), depths=(4, 16), n_steps=1, reps=2,
                         draft=SMALL, kernel_tokens=32)


@pytest.fixture(autouse=True)
def isolated_results(tmp_path, monkeypatch):
    monkeypatch.setenv("NAPKIN_RESULTS", str(tmp_path / "results"))


def _model(path, shape, seed=0):
    synthetic.write(path, shape, "Q8_0", seed)
    return path, {"format": "Q8_0", "seed": seed, "shape": asdict(shape),
                  "tensor_bytes": synthetic.tensor_bytes(shape, "Q8_0")}


@pytest.fixture(scope="module")
def tiny(tmp_path_factory):
    d = tmp_path_factory.mktemp("spec")
    return _model(d / "target.gguf", TINY), _model(d / "draft.gguf", SMALL, 1)


@pytest.fixture(scope="module")
def tiny_record(tiny):
    target, draft = tiny
    return verify.run(PLAN, threads=1, progress=verify.session.quiet, model=target, draft=draft)


def test_verify_steps_run_end_to_end(tiny_record):
    pts = tiny_record["points"]
    assert [(p["depth"], p["tokens"]) for p in pts] == [(4, 1), (4, 2), (4, 4), (16, 1),
                                                        (16, 2), (16, 4)]
    assert all(p["step_s"] > 0 and len(p["samples_s"]) == PLAN.reps for p in pts)
    assert all(p["relative"] == 1.0 for p in pts if p["tokens"] == 1)
    assert len(tiny_record["draft_points"]) == 2
    assert tiny_record["threads_reason"] == "as asked"
    json.dumps(tiny_record)


def test_prediction_is_this_machines_roofline(tiny_record):
    df = verify.frame(tiny_record)
    assert (df.loc[df["tokens"] == 1, "predicted_relative"] == 1.0).all()
    assert (df["predicted_relative"] >= 1).all()
    share = verify.draft_share(tiny_record)
    assert (share["predicted_share"] > 0).all() and (share["predicted_share"] < 1).all()
    buys = verify.buys(tiny_record, 0.85)
    assert buys["k"].tolist() == [1, 3]
    assert buys["speedup"].to_numpy() == pytest.approx(
        (buys["tokens_per_cycle"] / (buys["k"] * buys["draft_share"] +
                                     buys["verify_relative"])).to_numpy())
    text = verify.sentence(_quiet(tiny_record), 0.85)
    assert "one-token steps" in text and "**" in text


def _quiet(record: dict) -> dict:
    """The record as a quiet machine would have timed it (each extra token a tenth of a
    step, a small spread): what the sentence says must not depend on how busy the machine
    running the tests is."""
    record = copy.deepcopy(record)
    for p in record["points"]:
        p["relative"] = 1 + 0.1 * (p["tokens"] - 1)
        p["relative_stddev"] = 0.0 if p["tokens"] == 1 else 0.01
        p["step_s"] = 0.01 * p["relative"]
    return record


@pytest.mark.parametrize("change,why", [
    (lambda p: p["tokens"] > 1 and {"relative": 0.6}, "cheaper than a step that does less"),
    (lambda p: p["tokens"] == 2 and {"step_s": 0.0}, "have no usable time"),
    (lambda p: p["tokens"] > 1 and {"relative_stddev": 9.0}, "standard deviation"),
])
def test_a_busy_machines_verify_steps_are_not_read(tiny_record, change, why):
    """A step that checks more tokens measured cheaper than one token, a step timed at
    nothing, or noise as large as the signal: the sentence says so and draws no speedup."""
    record = _quiet(tiny_record)
    assert verify.unreadable(record) == ""
    record["points"] = [p | (change(p) or {}) for p in record["points"]]
    assert why in verify.unreadable(record)
    text = verify.sentence(record, 0.85)
    assert "cannot be read" in text and "speedup" in text and "best draft" not in text


@pytest.mark.parametrize("kwargs,field", [({"tokens": (2, 4)}, "include 1"),
                                          ({"tokens": (1, 0)}, "tokens"),
                                          ({"depths": (-1,)}, "depths"),
                                          ({"n_steps": 0}, "n_steps"),
                                          ({"reps": 1.5}, "reps"),
                                          ({"fmt": "Q5_K"}, "synthetic models")])
def test_bad_plans(kwargs, field):
    with pytest.raises(ValueError, match=field):
        verify.VerifyPlan(**(asdict(PLAN) | {"draft": SMALL} | kwargs))


def test_a_draft_larger_than_the_target_or_of_another_vocabulary_is_refused(tiny, tmp_path):
    target, draft = tiny
    with pytest.raises(ValueError, match="larger"):
        verify.run(PLAN, threads=1, progress=verify.session.quiet, model=draft, draft=target)
    other = _model(tmp_path / "other.gguf", replace(SMALL, vocab_size=1024))
    with pytest.raises(ValueError, match="vocabulary"):
        verify.run(PLAN, threads=1, progress=verify.session.quiet, model=target, draft=other)


def test_threads_on_a_busy_machine():
    assert verify.choose_threads(2, 2.0)[0] == 1
    assert verify.choose_threads(8, 1.0) == (8, "every core (8)")
    assert verify.choose_threads(1, 9.0)[0] == 1


def test_greedy_speculation_end_to_end(tiny):
    (target, _), (draft, _) = tiny
    same = verify.speculate(target, target, k=4, n_tokens=24, threads=1)
    assert same["acceptance_rate"] == 1.0 and same["tokens_per_cycle"] == 5.0
    assert same["outputs_agree_for_tokens"] == 24
    other = verify.speculate(target, draft, k=3, n_tokens=24, threads=1)
    assert other["tokens_per_cycle"] == pytest.approx(1 + 3 * other["acceptance_rate"])
    assert other["outputs_agree_for_tokens"] == 24          # greedy speculation is exact
    assert "tokens/s" in verify.speculate_sentence(other)
    with pytest.raises(ValueError, match="larger"):
        verify.speculate(draft, target, k=3, n_tokens=8, threads=1)
    with pytest.raises(ValueError, match="k"):
        verify.speculate(target, draft, k=0)
    with pytest.raises(ValueError, match="n_tokens"):
        verify.speculate(target, draft, n_tokens=0)
    with pytest.raises(ValueError, match="not found"):
        verify.speculate(target, "/no/such/draft.gguf")


def test_live_cells_without_llama_cpp_say_one_sentence():
    code = ("import sys; sys.modules['llama_cpp'] = None\n"
            "from napkin.measure import verify\n"
            "r = verify.live(verify.QUICK)\n"
            "assert r is None and verify.frame(r).empty and verify.buys(r, 0.8).empty\n"
            "print(verify.sentence(r, 0.8))\n"
            "print(verify.who(r))\n"
            "e = verify.speculate_live('a.gguf', 'b.gguf')\n"
            "assert e is None\n"
            "print(verify.speculate_sentence(e))\n")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True,
                         env={**os.environ})
    lines = [line for line in out.stdout.splitlines() if line]
    assert lines[0].startswith("No live verify-step measurement on this machine: "
                               "llama-cpp-python is not installed")
    assert "run the notebook" in lines[1]
    assert "no live measurement" in lines[2]
    assert lines[3].startswith("No end-to-end speculative run")
    assert "not available through the binding" in lines[4]


def test_the_live_chart_draws_without_a_measurement():
    import napkin
    from napkin.speculative import figures as charts

    chart = charts.live(verify.frame(None), verify.who(None))
    assert 'id="fig-live-test"' in napkin.Figure("fig-live-test", chart, "c", "s").html()


def test_cli_wants_a_target_and_a_draft_together(tmp_path):
    code = "from napkin.cli import main; import sys; sys.exit(main(['verify', '--model', 'x']))"
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                          env={**os.environ, "NAPKIN_RESULTS": str(tmp_path)})
    assert proc.returncode == 2 and "--draft" in proc.stderr
