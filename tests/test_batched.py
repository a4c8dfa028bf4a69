"""Live batched decode and the measured peak: the roofline of the machine running the tests."""

from __future__ import annotations

import copy
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
                         gemm_n=256, kernel_tokens=32, plain_tokens=2)


@pytest.fixture(autouse=True)
def isolated_results(tmp_path, monkeypatch):
    monkeypatch.setenv("NAPKIN_RESULTS", str(tmp_path / "results"))


def _quiet(record: dict) -> dict:
    """``record`` as a quiet machine would have measured it: plain decode at half the memory
    bound, every probe pass alike. The tiny test model decodes far below its bound (its
    reads are a few KiB) and the test machine may be busy; the page's words are tested on
    records whose condition the test sets, not the machine's."""
    out = copy.deepcopy(record)
    bound = batched.frame(out)["memory_bound_tokens_per_s"].iloc[0]
    for side in ("before", "after"):
        out["plain"][side]["tokens_per_s"] = 0.5 * bound
    best = max(out[k]["best_bytes_per_s"] for k in ("probe_before", "probe_after"))
    for k in ("probe_before", "probe_after"):
        out[k].update(best_bytes_per_s=best, worst_bytes_per_s=best)
    return out


@pytest.fixture(scope="module")
def tiny_record(tmp_path_factory):
    path = synthetic.write(tmp_path_factory.mktemp("m") / "tiny.gguf", TINY, "Q8_0", seed=0)
    info = {"format": "Q8_0", "seed": 0, "shape": asdict(TINY),
            "tensor_bytes": synthetic.tensor_bytes(TINY, "Q8_0")}
    return _quiet(batched.run(PLAN, threads=1, progress=session.quiet, model=(path, info)))


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
                                          ({"kernel_tokens": 0}, "kernel_tokens"),
                                          ({"plain_tokens": 0}, "plain_tokens"),
                                          ({"batches": (2, 4)}, "include 1")])
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


def _with_batch_one(record: dict, rate: float) -> dict:
    """A made-up record: ``record`` with its batch-1 point at ``rate`` tokens/s (samples and
    spread scaled alike)."""
    out = copy.deepcopy(record)
    one = out["points"][0]
    scale = rate / one["tokens_per_s"]
    one.update(tokens_per_s=rate, stddev=one["stddev"] * scale,
               samples=[x * scale for x in one["samples"]], step_s=1 / rate)
    return out


def test_the_plain_decode_is_measured_beside_the_batches(tiny_record):
    plain = batched.plain_decode(tiny_record)
    assert plain["test"] == f"tg{PLAN.plain_tokens}"
    assert plain["slower"] == min(plain["before"], plain["after"]) > 0
    assert plain["mean"] == pytest.approx((plain["before"] + plain["after"]) / 2)
    assert "chapter 1" in tiny_record["plain"]["kind"]
    assert batched.plain_decode({k: v for k, v in tiny_record.items() if k != "plain"}) is None


def test_harness_overhead_is_detected_against_the_plain_decode(tiny_record):
    """The reviewed case: batch 1 of the harness at a few per cent of what llama.cpp's plain
    decode of the same model reaches. The page must say so, read no roofline into the curve
    and take no prefill/decode gap from batch 1."""
    slower = batched.plain_decode(tiny_record)["slower"]
    slow = _with_batch_one(tiny_record, 0.05 * slower)
    check = batched.batch_one(slow)
    assert check["overhead"] and check["reference"] == "plain"
    assert check["share"] == pytest.approx(0.05)
    assert check["threshold"] == batched.OVERHEAD_SHARE
    text = batched.sentence(slow)
    assert "measured its own cost per step" in text and "5%" in text
    assert "describes" not in text and "roofline has it grow" not in text
    assert "reads no bend" in batched.bend_sentence(slow)
    assert not batched.describes(slow)
    # the gap divides the prefill by the plain decode, never by the slow batch 1
    note = batched.closing_note(slow, 32, 295)
    pp = slow["kernel"]["rate"]["tokens_per_s"]
    assert f"**{pp / batched.plain_decode(slow)['mean']:.1f}x**" in note
    assert f"**{pp / (0.05 * slower):.1f}x**" not in note
    # at the plain rate, batch 1 measured the machine
    fine = _with_batch_one(tiny_record, slower)
    assert not batched.batch_one(fine)["overhead"]
    assert "batch 1 measured the machine" in batched.sentence(fine)
    # just under and just over the threshold
    assert batched.batch_one(_with_batch_one(tiny_record, 0.49 * slower))["overhead"]
    assert not batched.batch_one(_with_batch_one(tiny_record, 0.51 * slower))["overhead"]


def test_without_a_plain_decode_the_ceiling_is_the_reference(tiny_record):
    old = {k: v for k, v in tiny_record.items() if k != "plain"}
    bound = batched.frame(old)["memory_bound_tokens_per_s"].iloc[0]
    slow = _with_batch_one(old, 0.02 * bound)
    check = batched.batch_one(slow)
    assert check["reference"] == "ceiling" and check["overhead"]
    assert check["reference_tokens_per_s"] == pytest.approx(bound)
    assert "no prefill/decode gap" in batched.closing_note(slow, 32, 295)
    assert "cannot be told from the machine's" in batched.sentence(slow)
    ok = _with_batch_one(old, 0.5 * bound)
    assert not batched.batch_one(ok)["overhead"]
    gap = ok["kernel"]["rate"]["tokens_per_s"] / (0.5 * bound)
    assert f"**{gap:.1f}x**" in batched.closing_note(ok, 32, 295)


def _shaped(record: dict, bend_scale: float) -> dict:
    """A made-up record whose points follow this machine's roofline prediction (ridge set so
    that it bends inside the batches), with the compute side moved by ``bend_scale``: 1 puts
    the bend where the roofline does, 8 eight times further out."""
    out = copy.deepcopy(record)
    out["flops_per_s"] = out["bandwidth_bytes_per_s"] * 12
    out["kernel"]["flops_per_s"] = out["flops_per_s"]
    batches = [1, 2, 4, 8, 16, 32, 64]
    context = out["points"][0]["context_tokens"]
    out["points"] = [{"batch": b, "tokens_per_s": 1.0, "stddev": 0.0, "samples": [1.0, 1.0],
                      "step_s": 1.0, "context_tokens": context} for b in batches]
    df = batched.frame(out)
    curve = (0.8 * df[["memory_bound_tokens_per_s", "compute_bound_tokens_per_s"]]
             .assign(compute_bound_tokens_per_s=lambda d: d["compute_bound_tokens_per_s"]
                     * bend_scale).min(axis=1))
    for point, rate in zip(out["points"], curve):
        point.update(tokens_per_s=float(rate), stddev=0.2 * float(rate),
                     samples=[0.8 * float(rate), 1.2 * float(rate)])
    plain = out["points"][0]["tokens_per_s"]
    for when in ("before", "after"):
        out["plain"][when] = dict(out["plain"][when], tokens_per_s=plain)
    return out


def test_the_roofline_describes_a_curve_only_where_it_bends_there(tiny_record):
    at_ridge = _shaped(tiny_record, 1.0)
    assert 1 < batched.predicted_bend(at_ridge) < 64
    assert batched.describes(at_ridge)
    assert "the roofline describes" in batched.sentence(at_ridge)
    far = _shaped(tiny_record, 8.0)
    knee, misfit = batched.bend_fit(*zip(*[(p["batch"], p["tokens_per_s"])
                                           for p in far["points"]]))
    assert misfit < 0.1 and knee > 4 * batched.predicted_bend(far)
    assert not batched.describes(far)
    text = batched.sentence(far)
    assert "so the roofline does not describe it" in text
    assert "the roofline describes" not in text


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
    assert eff["plain_memory_fraction"] > 0
    # batch 1 at the plain rate, so that the text does not depend on a quiet machine
    steady = _with_batch_one(tiny_record, batched.plain_decode(tiny_record)["slower"])
    text = batched.sentence(steady) + batched.bend_sentence(steady)
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
    from napkin.roofline import figures as figures

    chart = figures.live_batching(batched.frame(None), batched.who(None))
    html = napkin.Figure("fig-live-test", chart, "caption", "source").html()
    assert 'id="fig-live-test"' in html


def test_a_busy_machine_is_said_and_quotes_no_gap(tiny_record):
    """The reviewed case: a build machine busy with other work slowed the probe, the plain
    decode and the batches together (8.3 GB/s probed, plain decode at 5 % of that bound),
    so every check that compares the run with itself passed."""
    assert batched.busy(tiny_record) == ""
    bound = batched.frame(tiny_record)["memory_bound_tokens_per_s"].iloc[0]
    slow = copy.deepcopy(tiny_record)
    for side in ("before", "after"):
        slow["plain"][side]["tokens_per_s"] = 0.05 * bound
    slow = _with_batch_one(slow, 0.05 * bound)
    assert "5% of the memory bound" in batched.busy(slow)
    assert "disturbed run" in batched.sentence(slow)
    note = batched.closing_note(slow, 32, 295)
    assert "quotes no prefill/decode gap" in note and "for scale only" not in note
    # a quick probe's one slow pass is no sign of a busy machine
    shaky = copy.deepcopy(tiny_record)
    shaky["probe_after"]["worst_bytes_per_s"] = 0.1 * shaky["probe_after"]["best_bytes_per_s"]
    assert batched.busy(shaky) == ""


def test_closing_note(tiny_record):
    assert "could not run" in batched.closing_note(None, 32, 295)
    steady = _with_batch_one(tiny_record, batched.plain_decode(tiny_record)["slower"])
    text = batched.closing_note(steady, 32, 295)
    # the gap comes from the same record: its prefill over llama.cpp's plain decode
    gap = steady["kernel"]["rate"]["tokens_per_s"] / batched.plain_decode(steady)["mean"]
    assert f"**{gap:.1f}x**" in text and f"pp32 against tg{PLAN.plain_tokens}" in text
    assert "for scale only" in text and "datasheet" in text  # unlike tests, said so
    assert "prefill, measured" in text  # the roof of the kernels that ran, named
    assert "ridge point" in text and "Fitted with the roofline's shape" in text


def test_the_quick_plan_is_short_and_says_what_it_measures():
    quick, full = batched.QUICK, batched.FULL
    steps = lambda p: p.reps * p.n_steps * sum(p.batches)  # noqa: E731 - sequence-steps timed
    assert steps(quick) * 20 < steps(full) and len(quick.batches) < len(full.batches)
    text = batched.plan_sentence(quick)
    assert text.startswith("batches 1, 4 and 16") and f"{quick.reps:,d} repetitions" in text
    assert batched.plan_sentence(asdict(full)).startswith("batches 1, 2, 3")
