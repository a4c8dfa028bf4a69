"""The calibrated step model: its arithmetic by hand, its shape, its scenarios, bad input."""

from __future__ import annotations

import math
from dataclasses import replace

import numpy as np
import pytest

import napkin
from napkin import catalog, deployment, roofline
from napkin.predict import (ROOFLINE, Calibration, engine, expected_distinct, kv_format,
                            step_seconds, weight_format)
from napkin.predict import experts, serve, step
from napkin.predict.engines import link_bytes_per_s
from napkin.predict.frontier import curve, frontier
from napkin.units import GB

#: A fixed calibration, so the unit tests do not depend on (or wait for) the fit.
CAL = Calibration(bandwidth_efficiency=0.75, compute_efficiency=0.4, half_tokens=16.0,
                  step_overhead_s=2e-3, allreduce_latency_s=3e-5, link_efficiency=0.3,
                  tpot_tail=1.2)


# -- mixture of experts ----------------------------------------------------------------------

@pytest.mark.parametrize("routed,top_k", [(8, 2), (256, 8), (128, 4)])
def test_distinct_experts_match_a_seeded_simulation(routed, top_k):
    rng = np.random.default_rng(20260512)
    for tokens in (1, 3, 16, 64, 300):
        counts = []
        for _ in range(400):
            chosen = set()
            for _ in range(tokens):
                chosen.update(rng.choice(routed, size=top_k, replace=False).tolist())
            counts.append(len(chosen))
        simulated = np.mean(counts)
        assert expected_distinct(routed, top_k, tokens) == pytest.approx(simulated, rel=0.03)


def test_distinct_experts_by_hand_and_at_the_edges():
    assert expected_distinct(8, 2, 1) == pytest.approx(2)               # one token: its top-k
    assert expected_distinct(8, 2, 2) == pytest.approx(8 * (1 - 0.75 ** 2))
    assert expected_distinct(8, 2, 10_000) == pytest.approx(8)           # a large batch: all
    assert expected_distinct(0, 0, 50) == 0                              # a dense model
    assert expected_distinct(8, 2, 0) == 0
    with pytest.raises(ValueError, match="top_k"):
        expected_distinct(4, 8, 1)
    with pytest.raises(ValueError, match="tokens"):
        expected_distinct(8, 2, -1)


@pytest.mark.parametrize("model", ["Mixtral-8x7B", "DeepSeek-V3"])
def test_moe_parameter_counts_from_the_config_match_the_catalog(model):
    total, active = experts.param_counts(catalog.config(model))
    assert total == pytest.approx(catalog.params(model), rel=1e-4)
    assert active == pytest.approx(catalog.params(model, active=True), rel=1e-4)


def test_a_moe_decode_step_of_one_token_reads_exactly_the_active_weights():
    e = engine("H100 SXM", "Mixtral-8x7B", weights="FP8", kv="fp8")
    c = e.constants
    read = float(step.weights_read_bytes(c, 1)[0])
    # the catalog rounds its counts to 0.1 M parameters
    assert read == pytest.approx(catalog.params("Mixtral-8x7B", active=True) * 1.0, rel=1e-5)
    assert float(step.weights_read_bytes(c, 10_000)[0]) == pytest.approx(e.model.weight_bytes)


# -- the step --------------------------------------------------------------------------------

def test_the_plain_roofline_is_chapter_3s_when_memory_binds():
    """Batch 1 decode of Llama-2-7B at F16 on an H100: weights plus the cache over the peak
    bandwidth, as roofline.decode_step says; nothing else paid."""
    dep = deployment.deploy("Llama-2-7B", "H100 SXM", weights="F16", kv="f16")
    mine = step_seconds(dep, 1, 1000, calibration=ROOFLINE)
    book = roofline.decode_step(dep.model, dep.roof, 1, 1000)
    assert book.bound == "memory"
    assert mine == pytest.approx(book.seconds, rel=1e-12)
    by_hand = (6.7384e9 * 2 + 1000 * 524288) / (3350 * GB)
    assert mine == pytest.approx(by_hand, rel=1e-4)


def test_the_step_work_matches_roofline_step_work():
    """The vectorised work of a mixed step is napkin.roofline.step_work's, pair for pair."""
    e = engine("H100 SXM", "Llama-3.1-8B", weights="F16", kv="f16")
    c = e.constants
    work = step.decode_work(c, 3, 500) + step.prefill_work(c, 2, 700, start=100)
    book = roofline.step_work(e.model, prefill=[(100, 700), (100, 700)],
                              decode_contexts=[500, 500, 500])
    assert float(work.tokens[0]) == book.prefill_tokens + book.decode_tokens
    assert float(work.kv_bytes[0]) == pytest.approx(book.kv_bytes)
    assert float(work.flops[0]) == pytest.approx(book.flops)


def test_calibrated_time_by_hand():
    """A memory-bound step: bytes over eta_bw x bandwidth, plus the overhead."""
    e = engine("H200", "Llama-2-70B", weights="FP8", kv="fp8")
    t = step_seconds(e, 1, 0, calibration=CAL)
    weights = catalog.params("Llama-2-70B") * 1.0
    assert t == pytest.approx(weights / (0.75 * 4800 * GB) + 2e-3, rel=1e-9)


@pytest.mark.parametrize("cal", [CAL, ROOFLINE])
def test_step_time_grows_with_batch_and_depth(cal):
    e = engine("H100 SXM", "Llama-3.3-70B", n_chips=2, weights="FP8", kv="fp8")
    batches = [1, 2, 8, 32, 128, 512]
    depths = [0, 100, 1000, 10_000, 100_000]
    by_batch = [step_seconds(e, b, 1000, calibration=cal) for b in batches]
    by_depth = [step_seconds(e, 16, d, calibration=cal) for d in depths]
    assert all(a <= b for a, b in zip(by_batch, by_batch[1:]))
    assert all(a < b for a, b in zip(by_depth, by_depth[1:]))
    # and throughput per step still grows with the batch (weights amortised)
    assert all(b1 / t1 < b2 / t2 for b1, t1, b2, t2 in
               zip(batches, by_batch, batches[1:], by_batch[1:]))


def test_verifying_k_tokens_costs_more_than_one_and_less_than_k_steps():
    e = engine("H100 SXM", "Llama-3.1-8B", weights="FP8", kv="fp8")
    one = step_seconds(e, 8, 2000, 1, calibration=CAL)
    four = step_seconds(e, 8, 2000, 4, calibration=CAL)
    assert one <= four < 4 * one          # memory-bound: a draft is verified almost free
    one = step_seconds(e, 256, 2000, 1, calibration=CAL)
    four = step_seconds(e, 256, 2000, 4, calibration=CAL)
    assert one < four < 4 * one           # compute-bound: it is not


def test_tensor_parallelism_is_never_free():
    """Two chips: each reads half, but the all-reduces cost time; the same step with
    communication free is faster, and one chip costs no communication at all."""
    one = engine("H100 SXM", "Llama-3.3-70B", n_chips=1, weights="FP8", kv="fp8")
    two = engine("H100 SXM", "Llama-3.3-70B", n_chips=2, weights="FP8", kv="fp8")
    free = replace(CAL, communication=False)
    for batch in (1, 64):
        paid = step_seconds(two, batch, 1000, calibration=CAL)
        assert paid > step_seconds(two, batch, 1000, calibration=free)
        work = step.decode_work(two.constants, batch, 1000)
        assert float(step.cost(two.constants, work, CAL).comm_s[0]) > 0
        work1 = step.decode_work(one.constants, batch, 1000)
        assert float(step.cost(one.constants, work1, CAL).comm_s[0]) == 0
    # compute-bound, two chips at the same per-chip batch make fewer tokens per chip than
    # one (memory-bound, two can make more: each reads half the weights)
    per_chip_one = 512 / step_seconds(one, 512, 100, calibration=CAL)
    per_chip_two = 1024 / step_seconds(two, 1024, 100, calibration=CAL) / 2
    assert per_chip_two < per_chip_one


def test_a_mesh_gives_two_amd_chips_one_link():
    one_link = engine("MI300X", "Llama-3.3-70B", n_chips=2, weights="FP8").link_bytes_per_s
    all_links = engine("MI300X", "Llama-3.3-70B", n_chips=8, weights="FP8").link_bytes_per_s
    assert one_link == pytest.approx(64 * GB)
    assert all_links == pytest.approx(448 * GB)
    assert engine("H100 SXM", "Llama-3.3-70B", n_chips=2,
                  weights="FP8").link_bytes_per_s == pytest.approx(450 * GB)


def test_a_bridge_joins_its_cards_and_a_larger_group_talks_over_pcie():
    # an A100 PCIe's NVLink bridge joins two cards; four reach each other over PCIe Gen4 x16
    assert link_bytes_per_s("A100 PCIe", 2)[0] == pytest.approx(300 * GB)
    bw, spec = link_bytes_per_s("A100 PCIe", 4)
    assert bw == pytest.approx(32 * GB) and "beyond the bridge of 2" in spec
    assert link_bytes_per_s("H200 NVL", 4)[0] == pytest.approx(450 * GB)
    assert link_bytes_per_s("H200 NVL", 8)[0] == pytest.approx(64 * GB)


def test_attention_runs_in_the_caches_arithmetic():
    fp8 = engine("B200", "Llama-3.3-70B", weights="NVFP4", kv="fp8")
    f16 = engine("B200", "Llama-3.3-70B", weights="NVFP4", kv="f16")
    assert fp8.attention_roof_ratio == pytest.approx(4500 / 9000)
    assert f16.attention_roof_ratio == pytest.approx(2250 / 9000)


def test_mla_attention_counts_every_head_on_the_latent():
    full, window = napkin.predict.engines.attention_flops_per_pair(catalog.config("DeepSeek-V3"))
    assert window == 0
    assert full == pytest.approx(61 * 2 * 128 * (2 * 512 + 64))


def test_engine_agrees_with_deploy():
    """The engine's deployment is deploy()'s, so the book has one answer for the cache."""
    e = engine("H100 SXM", "Llama-3.3-70B", n_chips=2, weights="FP8", kv="f16")
    d = deployment.deploy("Llama-3.3-70B", "H100 SXM", n_chips=2, weights="FP8", kv="f16")
    assert e.deployment.kv_memory_bytes == pytest.approx(d.kv_memory_bytes)
    assert e.deployment.roof == d.roof
    assert napkin.predict.engine_of(d).constants.flops_per_s == pytest.approx(
        e.constants.flops_per_s)


def test_static_batch_sums_every_decode_step():
    """The segment sum of the decode steps equals the step-by-step sum."""
    e = engine("A100 SXM", "Mistral-7B-v0.1", weights="F16", kv="f16")
    c = e.constants
    total = float(step.decode_steps_seconds(c, 8, 300, 700, CAL)[0])
    brute = sum(float(step.seconds(c, step.decode_work(c, 8, d), CAL)[0])
                for d in range(300, 1000))
    assert total == pytest.approx(brute, rel=1e-3)


def test_a_static_batch_that_does_not_fit_runs_in_waves():
    e = engine("H100 SXM", "Llama-3.3-70B", n_chips=1, weights="FP8", kv="fp8")
    c = e.constants
    fit = int(e.deployment.kv_memory_bytes // e.kv_bytes(4096))
    run = serve.static_batch(c, 3 * fit, 2048, 2048, CAL)
    assert float(run["waves"][0]) == 3
    one = serve.static_batch(c, fit, 2048, 2048, CAL)
    assert float(run["e2e_s"][0]) == pytest.approx(3 * float(one["e2e_s"][0]))


def test_the_first_token_tail_is_md1_by_hand():
    s = 1.0
    tail = float(serve.first_token_tail(0.3, s, 0.5))  # rho = 0.5
    assert tail == pytest.approx(0.3 + s / (2 * 0.5) * math.log(0.5 / 0.01))
    assert float(serve.first_token_tail(0.3, s, 0.005)) == pytest.approx(0.3)
    assert math.isinf(float(serve.first_token_tail(0.3, s, 1.0)))


# -- predict() -------------------------------------------------------------------------------

def test_napkin_predict_is_callable_and_keeps_its_parts():
    p = napkin.predict("H100 SXM", "Llama-3.3-70B", n_chips=2, weights="FP8", kv="fp8",
                       input_tokens=1000, output_tokens=200, batch=32, calibration=CAL)
    assert p.batch == 32 and p.feasible and p.limited_by == "batch"
    assert p.output_tokens_per_s == pytest.approx(2 * p.per_chip_output_tokens_per_s)
    assert p.output_tokens_per_s == pytest.approx(32 / p.tpot_s)
    assert callable(napkin.predict.step_seconds) and p.e2e_latency_s > p.ttft_s > 0
    assert p.bound in ("memory", "compute")


def test_format_names_are_case_insensitive():
    assert weight_format("fp16") == weight_format("F16") == "F16"
    assert weight_format("fp8") == "FP8" and weight_format("nvfp4") == "NVFP4"
    assert kv_format("FP8") == kv_format("fp8") == "fp8"
    assert kv_format("f16") == kv_format("FP16") == kv_format("fp16") == "f16"
    a = napkin.predict("H200", "Llama-3.1-8B", weights="FP8", kv="FP16", input_tokens=500,
                       output_tokens=500, batch=8, calibration=CAL)
    b = napkin.predict("H200", "Llama-3.1-8B", weights="fp8", kv="f16", input_tokens=500,
                       output_tokens=500, batch=8, calibration=CAL)
    assert a == b


def test_offline_takes_the_largest_batch_memory_allows():
    p = napkin.predict("H200", "Llama-3.3-70B", weights="FP8", kv="fp8", input_tokens=222,
                       output_tokens=294, calibration=CAL)
    assert p.limited_by == "memory" and p.batch == p.memory_batch > 100


def test_limits_choose_the_largest_batch_that_meets_them():
    kw = dict(weights="FP8", kv="fp8", input_tokens=222, output_tokens=294, calibration=CAL)
    server = napkin.predict("H200", "Llama-3.3-70B", ttft_limit_s=2.0, tpot_limit_s=0.2, **kw)
    tight = napkin.predict("H200", "Llama-3.3-70B", ttft_limit_s=0.45, tpot_limit_s=0.04, **kw)
    assert tight.feasible and server.feasible
    assert tight.tpot_p99_s <= 0.04 and tight.ttft_p99_s <= 0.45
    assert tight.batch < server.batch <= server.memory_batch
    assert tight.output_tokens_per_s < server.output_tokens_per_s
    assert tight.limited_by == "tpot"
    one_more = napkin.predict("H200", "Llama-3.3-70B", batch=tight.batch + 1, ttft_limit_s=0.45,
                              tpot_limit_s=0.04, **kw)
    assert not one_more.feasible and "limits" in one_more.reason


def test_a_limit_no_batch_can_meet_is_an_infeasible_result_that_says_why():
    p = napkin.predict("H100 SXM", "Llama-3.3-70B", n_chips=2, weights="FP8",
                       input_tokens=222, output_tokens=294, tpot_limit_s=0.001,
                       calibration=CAL)
    assert not p.feasible and p.batch == 0 and p.output_tokens_per_s == 0
    assert "time per output token" in p.reason and "limit" in p.reason


def test_a_batch_beyond_memory_is_infeasible_and_says_so():
    p = napkin.predict("H100 SXM", "Llama-3.3-70B", n_chips=2, weights="FP8",
                       input_tokens=222, output_tokens=294, batch=10**6, calibration=CAL)
    assert not p.feasible and "GiB of cache" in p.reason


@pytest.mark.parametrize("kwargs,match", [
    (dict(chip="H900"), "unknown chip"),
    (dict(input_tokens=0), "input_tokens"),
    (dict(output_tokens=-5), "output_tokens"),
    (dict(batch=0), "batch"),
    (dict(tpot_limit_s=-1), "tpot_limit_s"),
    (dict(weights="FP3"), "weight format"),
    (dict(kv="fp5"), "KV cache dtype"),
    (dict(model="Llama-9-9B"), "Llama-9-9B"),
    (dict(n_chips=0), "n_chips"),
    (dict(weights="F16", n_chips=1), "no room for a KV cache"),
])
def test_bad_input_is_a_clear_error(kwargs, match):
    args = dict(chip="H100 SXM", model="Llama-3.3-70B", weights="FP8", input_tokens=100,
                output_tokens=100, calibration=CAL) | kwargs
    chip, model = args.pop("chip"), args.pop("model")
    with pytest.raises(ValueError, match=match):
        napkin.predict(chip, model, **args)


def test_a_config_mapping_is_served_like_the_book_model():
    cfg = catalog.config("Mixtral-8x7B")
    a = napkin.predict("H100 SXM", cfg, weights="FP8", input_tokens=400, output_tokens=150,
                       batch=16, calibration=CAL)
    b = napkin.predict("H100 SXM", "Mixtral-8x7B", weights="FP8", input_tokens=400,
                       output_tokens=150, batch=16, calibration=CAL)
    assert a.output_tokens_per_s == pytest.approx(b.output_tokens_per_s, rel=1e-4)


def test_the_frontier_trades_speed_per_user_for_tokens_per_gpu():
    f = frontier("H200", "Llama-3.3-70B", input_tokens=222, output_tokens=294,
                 calibration=CAL, points=16)
    assert f["per_user_tok_per_s"].is_monotonic_increasing
    assert f["per_gpu_tok_per_s"].is_monotonic_decreasing
    assert set(f["tp"]) <= {1, 2, 4, 8}
    # nothing on one size's curve beats the frontier on both axes
    one = curve("H200", "Llama-3.3-70B", n_chips=2, input_tokens=222, output_tokens=294,
                calibration=CAL, points=16)
    for _, r in one.iterrows():
        better = f[(f["per_user_tok_per_s"] >= r["per_user_tok_per_s"] * (1 + 1e-9))
                   & (f["per_gpu_tok_per_s"] >= r["per_gpu_tok_per_s"] * (1 + 1e-9))]
        dominated = f[(f["per_user_tok_per_s"] >= r["per_user_tok_per_s"])
                      & (f["per_gpu_tok_per_s"] >= r["per_gpu_tok_per_s"])]
        assert len(dominated) or len(better) == 0


# -- calibration -----------------------------------------------------------------------------

def test_calibration_refuses_unphysical_values():
    for bad in (dict(bandwidth_efficiency=1.5), dict(compute_efficiency=0),
                dict(step_overhead_s=-1), dict(tpot_tail=0.5)):
        with pytest.raises(ValueError):
            Calibration(**bad)


def test_levenberg_marquardt_minimises_a_soft_l1_by_hand():
    """A straight line through points with two outliers: the soft L1 finds the line the
    inliers lie on, where least squares would be pulled off it."""
    from napkin.validation.fitting import levenberg_marquardt

    x = np.linspace(0, 1, 40)
    y = 2.0 * x - 1.0
    y[[5, 30]] += 5.0
    best, _ = levenberg_marquardt(lambda p: p[0] * x + p[1] - y, [0.0, 0.0],
                                  np.full(40, 1 / 40), np.zeros(2), iterations=200)
    assert best == pytest.approx([2.0, -1.0], abs=0.02)
    squares = np.polyfit(x, y, 1)  # pulled a quarter of the way to the outliers
    assert abs(squares[1] + 1) > 10 * abs(best[1] + 1)


# -- the second edition's structure -----------------------------------------------------------

PER_OP = replace(CAL, per_operator=True)


def test_a_per_operator_step_is_the_sum_of_its_two_operators():
    """Weights' matmuls and attention are separate kernels: each waits on its own roof, so
    a step whose matmuls are compute-bound and whose attention reads a deep cache pays both;
    the whole-step roofline pays only the larger total."""
    e = engine("H100 SXM", "Llama-3.3-70B", n_chips=2, weights="FP8", kv="fp8")
    work = step.decode_work(e.constants, 256, 8000)
    c = step.cost(e.constants, work, PER_OP)
    parts = (max(float(c.weights_memory_s[0]), float(c.matmul_s[0])) +
             max(float(c.cache_memory_s[0]), float(c.attention_s[0])))
    assert float(c.roof_s[0]) == pytest.approx(parts)
    whole = step.cost(e.constants, work, CAL)
    assert float(whole.roof_s[0]) == pytest.approx(max(float(whole.memory_s[0]),
                                                       float(whole.compute_s[0])))
    assert float(c.roof_s[0]) >= float(whole.roof_s[0])


def test_each_expert_ramps_with_its_own_share_of_the_tokens():
    """A step of n tokens gives each of a mixture's E experts about n k / E rows: with the
    expert ramp its routed matmuls cost more than if they ramped with all n; a dense model
    is unchanged."""
    ramped = replace(PER_OP, expert_ramp=True)
    moe = engine("H100 SXM", "Mixtral-8x7B", n_chips=2, weights="FP8", kv="fp8").constants
    work = step.decode_work(moe, 64, 1000)
    assert float(step.cost(moe, work, ramped).matmul_s[0]) > \
        float(step.cost(moe, work, PER_OP).matmul_s[0])
    dense = engine("H100 SXM", "Llama-3.1-8B", weights="FP8", kv="fp8").constants
    work = step.decode_work(dense, 64, 1000)
    assert float(step.cost(dense, work, ramped).matmul_s[0]) == \
        pytest.approx(float(step.cost(dense, work, PER_OP).matmul_s[0]))


def test_fixed_costs_per_layer_and_per_sequence_by_hand():
    cal = replace(PER_OP, step_overhead_s=1e-3, layer_overhead_s=2e-5, sequence_overhead_s=3e-6)
    c = engine("H200", "Llama-2-70B", weights="FP8", kv="fp8").constants
    work = step.decode_work(c, 16, 100)
    assert float(step.cost(c, work, cal).overhead_s[0]) == pytest.approx(1e-3 + 80 * 2e-5 +
                                                                         16 * 3e-6)
    slow = replace(c, stack_overhead=np.array([3.0]))
    assert float(step.cost(slow, work, cal).overhead_s[0]) == pytest.approx(1e-3 + 3 * 80 *
                                                                            2e-5 + 16 * 3e-6)


def test_a_stack_multiplies_the_shares_of_peak_it_reaches_never_past_the_peak():
    c = engine("H200", "Llama-2-70B", weights="FP8", kv="fp8").constants
    work = step.decode_work(c, 1, 0)
    base = float(step.cost(c, work, PER_OP).weights_memory_s[0])
    half = replace(c, stack_efficiency=np.array([0.5]))
    assert float(step.cost(half, work, PER_OP).weights_memory_s[0]) == pytest.approx(2 * base)
    huge = replace(c, stack_efficiency=np.array([10.0]))
    peak = float(step.cost(huge, work, PER_OP).weights_memory_s[0])
    assert peak == pytest.approx(base * PER_OP.bandwidth_efficiency)


@pytest.mark.parametrize("text,family", [("vLLM 0.4.3+rocm614, PyTorch 2.3.0", "vLLM"),
                                         ("TensorRT 10.1.0, CUDA 12.7", "TensorRT-LLM"),
                                         ("NVIDIA NIM (AIPerf client)", "TensorRT-LLM"),
                                         ("Deepspeed-MII", "DeepSpeed"), ("CUDA 12.2", "other")])
def test_engine_families_are_read_from_the_software_field(text, family):
    from napkin.predict import software

    assert software.engine_family(text) == family
    assert software.stack_of("Argonne", "AMD", text) == f"Argonne/AMD/{family}"
    assert software.stack_of("NVIDIA NIM", "NVIDIA", text).startswith("published/")


def test_an_unknown_stack_runs_as_the_typical_one():
    from napkin.predict import software

    stacks = {"Argonne/AMD/vLLM": software.Stack("Argonne/AMD/vLLM", 0.6, 1.4)}
    assert software.multipliers(stacks, ["Argonne/AMD/vLLM", "MLPerf/Acme/vLLM"]) == \
        ([0.6, 1.0], [1.4, 1.0])
    with pytest.raises(ValueError, match="efficiency must be > 0"):
        software.Stack("x", 0.0, 1.0)