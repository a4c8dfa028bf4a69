"""Live batched decode and the measured peak: the roofline of the machine running the tests."""

from __future__ import annotations

import json
import math
import os
import subprocess
import sys
from dataclasses import asdict

import numpy as np
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
    knee, misfit = batched.bend_fit(batches, ideal)
    assert knee == pytest.approx(6) and misfit == pytest.approx(0, abs=1e-12)
    assert batched.bend(batches, ideal) == pytest.approx(6)
    # a curve that never flattens has no bend within the batches measured
    assert math.isinf(batched.bend(batches, [10 * b for b in batches]))
    with pytest.raises(ValueError, match="positive"):
        batched.bend([1, 2], [0, 2])


def test_the_bend_is_fitted_to_every_point_and_says_how_badly_it_fits():
    """The reviewed run: nearly flat from 1 to 4, then rising until 32. Its old two-point
    reading (the batch-1 line meeting the best point) put the bend at 10.7; every point
    puts it past 16, and the roofline's shape misses them by far more than an ideal curve."""
    batches = [1, 2, 4, 8, 16, 32, 64]
    measured = [12.42, 15.58, 17.65, 32.84, 69.58, 115.31, 132.78]
    knee, misfit = batched.bend_fit(batches, measured)
    assert 16 < knee < 32 and misfit > 0.3
    # the fit's optimum: no other bend fits these points better on a log scale
    lb, ly = np.log(batches), np.log(measured)

    def rss(k):
        shape = np.minimum(lb, np.log(k))
        return np.sum((ly - np.mean(ly - shape) - shape) ** 2)

    assert all(rss(knee) <= rss(k) + 1e-12 for k in np.geomspace(1, 64, 400))


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
    assert "ridge point" in text and "fitted to all the measured points" in text
    assert "the passes varied by" in text and "standard deviation" in text
    assert "roofline has it grow" in text and "bend moves" not in text
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
    assert "could not run" in batched.closing_note(None, 32, 295)
    text = batched.closing_note(tiny_record, 32, 295)
    # the gap comes from the batched run itself: its prefill over its batch-1 decode
    gap = tiny_record["kernel"]["rate"]["tokens_per_s"] / tiny_record["points"][0]["tokens_per_s"]
    assert f"**{gap:.1f}x**" in text and "pp32 against batch-1 decode" in text
    assert "for scale only" in text and "datasheet" in text  # unlike tests, said so
    assert "prefill, measured" in text  # the roof of the kernels that ran, named
    assert "ridge point" in text and "Fitted with the roofline's shape" in text
