"""Live batched decode and the measured peak: the roofline of the machine running the tests."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from dataclasses import asdict

import pytest

from napkin.measure import batched, gemm, session, synthetic

TINY = synthetic.Shape(hidden_size=256, num_hidden_layers=1, num_attention_heads=4,
                       num_key_value_heads=4, head_dim=64, intermediate_size=512,
                       vocab_size=512, context_length=512)
PLAN = batched.BatchPlan("test", (1, 2, 4), n_prompt=4, n_steps=2, reps=2, fmt="Q8_0",
                         gemm_n=256, kernel_tokens=32)


@pytest.fixture(autouse=True)
def isolated_results(tmp_path, monkeypatch):
    monkeypatch.setenv("NAPKIN_RESULTS", str(tmp_path / "results"))


@pytest.fixture(scope="module")
def tiny_record(tmp_path_factory):
    path = synthetic.write(tmp_path_factory.mktemp("m") / "tiny.gguf", TINY, "Q8_0", seed=0)
    info = {"format": "Q8_0", "seed": 0, "shape": asdict(TINY),
            "tensor_bytes": synthetic.tensor_bytes(TINY, "Q8_0")}
    return batched.run(PLAN, threads=1, progress=session.quiet, model=(path, info))


def test_gemm_peak_is_positive_and_refuses_tiny_products():
    result = gemm.peak_flops(256, repeats=2)
    assert result.best_flops_per_s >= result.worst_flops_per_s > 1e8
    assert "dense FP32" in result.kind and 0 <= result.spread < 1
    for n in (64, 256.0, True):
        with pytest.raises(ValueError, match="n must be"):
            gemm.peak_flops(n)
    with pytest.raises(ValueError, match="repeats"):
        gemm.peak_flops(256, 0)


@pytest.mark.parametrize("kwargs,field", [({"batches": ()}, "batches"),
                                          ({"batches": (1, 0)}, "batches"),
                                          ({"n_steps": 0}, "n_steps"),
                                          ({"reps": 1.5}, "reps"),
                                          ({"kernel_tokens": 0}, "kernel_tokens")])
def test_bad_plans(kwargs, field):
    base = asdict(PLAN) | kwargs
    with pytest.raises(ValueError, match=field):
        batched.BatchPlan(**base)


def test_bend_of_an_ideal_roofline_curve_is_its_ridge():
    batches = [1, 2, 4, 8, 16, 32]
    ideal = [min(100 * b, 600) for b in batches]
    assert batched.bend(batches, ideal) == 6
    with pytest.raises(ValueError, match="batch-1"):
        batched.bend([2, 4], [1, 2])
    with pytest.raises(ValueError, match="positive"):
        batched.bend([1, 2], [0, 2])


def test_batched_decode_runs_end_to_end(tiny_record):
    points = tiny_record["points"]
    assert [p["batch"] for p in points] == [1, 2, 4]
    assert all(p["tokens_per_s"] > 0 and len(p["samples"]) == PLAN.reps for p in points)
    assert tiny_record["model"]["model_bytes"] == synthetic.tensor_bytes(TINY, "Q8_0")
    assert tiny_record["runner"]["backend"] == "CPU"
    json.dumps(tiny_record)


def test_prediction_is_the_roofline_of_the_measured_peak_and_bandwidth(tiny_record):
    df = batched.frame(tiny_record)
    bound = df[["memory_bound_tokens_per_s", "compute_bound_tokens_per_s"]].min(axis=1)
    assert df["predicted_tokens_per_s"].tolist() == pytest.approx(bound.tolist(), rel=1e-12)
    roof = batched.roof(tiny_record)
    assert roof.ridge == tiny_record["flops_per_s"] / tiny_record["bandwidth_bytes_per_s"]
    # the compute roof is llama.cpp's own prefill of the same model, not the float32 GEMM
    kernel = tiny_record["kernel"]
    assert roof.flops_per_s == kernel["flops_per_s"] == pytest.approx(
        kernel["rate"]["tokens_per_s"] * kernel["flops_per_token"])
    assert kernel["flops_per_token"] > 2 * tiny_record["model"]["model_params"] * 0.5
    assert "prefill, measured" in roof.flops_kind
    assert batched.predicted_bend(tiny_record) > 0
    eff = batched.efficiency(tiny_record)
    assert eff["memory_fraction"] > 0 and eff["compute_fraction"] > 0
    text = batched.sentence(tiny_record) + batched.bend_sentence(tiny_record)
    assert "ridge point" in text and "bends" in text
    assert batched.frame(None).empty


def test_model_must_be_synthetic(tmp_path):
    path = synthetic.write(tmp_path / "m.gguf", TINY, "Q8_0")
    with pytest.raises(ValueError, match="synthetic model"):
        batched.run(PLAN, threads=1, progress=session.quiet, model=(path, None))


def test_too_many_sequences_are_refused(tmp_path):
    plan = batched.BatchPlan("x", (1, 100000), 4, 2, 1, "Q8_0", 256)
    with pytest.raises(ValueError, match="at most"):
        batched.run(plan, threads=1, progress=session.quiet)


def test_live_cell_without_llama_cpp_says_one_sentence():
    code = ("import sys; sys.modules['llama_cpp'] = None\n"
            "from napkin.measure import batched\n"
            "r = batched.live(batched.QUICK)\n"
            "assert r is None\n"
            "print(batched.sentence(r))\n"
            "print(batched.who(r))\n")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True,
                         env={**os.environ})
    lines = [line for line in out.stdout.splitlines() if line]
    assert lines[0].startswith("No live batched-decode measurement on this machine")
    assert "run the notebook" in lines[1]
    assert "no live measurement" in lines[2]


def test_the_live_chart_draws_without_a_measurement():
    import napkin
    from napkin.figures import roofline as figures

    chart = figures.live_batching(batched.frame(None), batched.who(None))
    html = napkin.Figure("fig-live-test", chart, "caption", "source").html()
    assert 'id="fig-live-test"' in html


def test_closing_note(tiny_record):
    assert "could not run" in batched.closing_note(None, None, 32, 295)
    pp_record = {"machine": tiny_record["machine"], "runner": {"backend": "CPU"},
                 "runs": [{"format": "Q8_0", "synthetic": tiny_record["model"]["synthetic"],
                           "model_path": "m", "model_params": tiny_record["model"]["model_params"],
                           "pp": {"test": "pp128", "tokens_per_s": 1000.0},
                           "tg": {"test": "tg64", "tokens_per_s": 100.0}}]}
    text = batched.closing_note(tiny_record, pp_record, 32, 295)
    assert "**10.0x**" in text and "ridge point" in text and "bends" in text
    assert "prefill, measured" in text  # the roof of the kernels that ran, named
