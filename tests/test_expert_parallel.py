"""Wide expert parallelism and multi-token prediction in the step model (issue 30): the
arithmetic by hand, the links they cross, and the published fit left as it was."""

from __future__ import annotations

import math
from dataclasses import replace

import numpy as np
import pandas as pd
import pytest

from napkin.predict import ROOFLINE, calibrated, engine, predict
from napkin.predict import multitoken, serve, step
from napkin.predict.engines import domain_size, scaleout_bytes_per_s
from napkin.validation import rows as published_rows
from napkin.validation.scoring import predict_cases

MODEL = "DeepSeek-V3"


def _pair(chip="B200", n=8, weights="NVFP4"):
    """The same chips as one tensor-parallel engine and as data-parallel attention."""
    return (engine(chip, MODEL, n_chips=n, weights=weights, kv="fp8"),
            engine(chip, MODEL, n_chips=n, weights=weights, kv="fp8", attention_dp=True))


def test_scaleup_domains_are_read_from_the_topology_table():
    assert domain_size("GB200 (per GPU)") == 72
    assert domain_size("H100 SXM") == 8
    assert domain_size("MI300X") == 8
    assert domain_size("RTX 4090") == math.inf


def test_data_parallel_attention_copies_the_dense_weights_and_spreads_the_experts():
    tp, dp = _pair()
    assert (dp.tp, dp.dp, dp.n_chips) == (1, 8, 8)
    # each chip holds the dense weights: the cache loses seven more copies of them
    assert dp.kv_memory_bytes == pytest.approx(tp.kv_memory_bytes - 7 * dp.dense_weight_bytes)
    c_tp, c_dp = tp.constants, dp.constants
    tokens = np.array([64.0])
    read_tp = step.weights_read_bytes(c_tp, tokens)
    read_dp = step.weights_read_bytes(c_dp, tokens)
    assert read_dp - read_tp == pytest.approx(7 * dp.dense_weight_bytes)
    # a large step reads every expert once, wherever it lives
    huge = step.weights_read_bytes(c_dp, np.array([1e7]))
    assert huge == pytest.approx(8 * dp.dense_weight_bytes + c_dp.expert_bytes * c_dp.routed)


def test_the_all_to_all_by_hand_and_free_on_one_chip():
    _, dp = _pair()
    c = dp.constants
    cal = calibrated()
    tokens = 800.0
    per_chip = tokens / 8 * c.top_k * c.dispatch_bytes_per_token * 7 / 8
    layer = 2 * cal.allreduce_latency_s + per_chip / (cal.link_efficiency * 900e9)
    assert step.alltoall_seconds(c, tokens, cal) == pytest.approx(c.moe_layers * layer)
    one = engine("B200", MODEL, n_chips=4, weights="NVFP4", kv="fp8").constants
    assert step.alltoall_seconds(one, tokens, cal) == 0.0


def test_an_expert_parallel_group_beyond_its_domain_talks_over_the_network():
    inside = engine("H200", MODEL, n_chips=8, weights="FP8", kv="fp8", attention_dp=True)
    across = engine("H200", MODEL, n_chips=16, weights="FP8", kv="fp8", attention_dp=True)
    assert inside.alltoall_bytes_per_s == pytest.approx(450e9)
    # 8 of the 15 peers are in another server, behind one 400 Gb/s NIC
    assert across.alltoall_bytes_per_s == pytest.approx(scaleout_bytes_per_s() * 15 / 8)
    rack = engine("GB200 (per GPU)", MODEL, n_chips=72, weights="NVFP4", kv="fp8",
                  attention_dp=True)
    assert rack.alltoall_bytes_per_s == pytest.approx(900e9)


def test_a_dense_model_is_refused_data_parallel_attention_with_a_reason():
    with pytest.raises(ValueError, match="dense.*mixture of experts"):
        engine("H100 SXM", "Llama-3.1-70B", n_chips=8, attention_dp=True)


def test_multi_token_prediction_keeps_what_was_measured():
    table = multitoken.accepted_tokens(np.arange(6))
    assert table[0] == 1.0 and table[3] == pytest.approx(2.82)   # TensorRT-LLM's blog 1
    assert np.all(np.diff(table) > 0)
    with pytest.raises(ValueError, match="whole numbers >= 0"):
        multitoken.accepted_tokens(-1)
    with pytest.raises(ValueError, match="at most 5 drafts"):
        multitoken.accepted_tokens(6)


def test_a_prompt_prefilled_on_one_rank_holds_every_rank():
    _, dp = _pair()
    c = dp.constants
    assert serve.rank_prompts(c, 0.0) == 0.0
    assert serve.rank_prompts(c, 1.0) == 8.0      # one rank prefills, seven wait
    assert serve.rank_prompts(c, 9.0) == 16.0     # the busiest rank has two
    tp, _ = _pair()
    assert serve.rank_prompts(tp.constants, 3.0) == 3.0


def test_each_draft_costs_two_layers_of_a_decode_step():
    e = engine("B200", MODEL, n_chips=8, weights="NVFP4", kv="fp8")
    c = replace(e.constants, verify_tokens=np.array([4.0]),
                accepted_tokens=np.array([2.82]))
    cal = calibrated()
    one = step.seconds(c, step.decode_work(c, 1.0, 1000.0, 1), cal)
    assert serve.draft_seconds(c, 1.0, 1000.0, cal) == pytest.approx(3 * 2 * one / 61)
    assert serve.draft_seconds(e.constants, 1.0, 1000.0, cal) == 0.0


def test_drafts_run_in_every_step_and_each_step_keeps_the_accepted_tokens():
    e = engine("B200", MODEL, n_chips=8, weights="NVFP4", kv="fp8")
    c = e.constants
    kept = float(multitoken.accepted_tokens(3))
    drafting = replace(c, verify_tokens=np.array([4.0]), accepted_tokens=np.array([kept]))
    cal = calibrated()
    plain = serve.steady_step(c, 64.0, 1000.0, 1000.0, cal)
    run = serve.steady_step(drafting, 64.0, 1000.0, 1000.0, cal)
    assert run["tpot_s"] == pytest.approx(run["step_s"] / kept)
    assert run["step_s"] > plain["step_s"]            # four tokens per sequence cost more
    assert run["tpot_s"] < plain["tpot_s"]            # ... and keep 2.8 of them
    assert plain["tpot_s"] == plain["step_s"]


def test_a_static_batch_and_a_decode_pool_charge_the_same_drafting_per_step():
    """A static batch's answers are decode steps at growing depth, each with its drafts run:
    the same step a decode pool costs (``serve.decode_step_seconds``), summed."""
    e = engine("B200", MODEL, n_chips=8, weights="NVFP4", kv="fp8")
    c = replace(e.constants, verify_tokens=np.array([4.0]), accepted_tokens=np.array([2.0]))
    cal = calibrated()
    run = serve.static_batch(c, 16.0, 1000.0, 17.0, cal)       # 8 steps of 2 tokens kept
    steps = sum(float(np.ravel(serve.decode_step_seconds(c, 16.0, 1000.0 + j, cal))[0])
                for j in range(8))
    assert float(run["e2e_s"][0] - run["prefill_s"][0]) == pytest.approx(steps, rel=1e-6)
    plain = serve.static_batch(e.constants, 16.0, 1000.0, 17.0, cal)
    assert float(run["e2e_s"][0]) < float(plain["e2e_s"][0])    # 8 steps instead of 16


def test_predict_takes_the_layout_and_refuses_bad_drafts():
    one = dict(input_tokens=804, output_tokens=4043, ttft_limit_s=1.5, tpot_limit_s=0.015)
    rack = dict(n_chips=72, weights="NVFP4", kv="fp8")
    tp = predict("GB200 (per GPU)", MODEL, **rack, **one)
    dp = predict("GB200 (per GPU)", MODEL, **rack, **one, attention_dp=True)
    assert dp.n_chips == tp.n_chips == 72
    assert dp.output_tokens_per_s > tp.output_tokens_per_s
    with pytest.raises(ValueError, match="draft_tokens must be a whole number >= 0"):
        predict("GB200 (per GPU)", MODEL, **rack, **one, draft_tokens=-1)


def _row(tp_text, notes):
    return pd.DataFrame([{
        "row_id": "t-1", "source_url": "https://github.com/NVIDIA/TensorRT-LLM/x",
        "engine": "TensorRT-LLM (trtllm-bench, PyTorch workflow)", "version": "x",
        "model": "deepseek-ai/DeepSeek-R1", "precision": "FP8", "gpu": "H200", "n_gpus": 8,
        "tp": tp_text, "input_len": "1024", "output_len": "2048",
        "concurrency_or_batch": "concurrency=1024", "metric": "Total Output Throughput",
        "value": 11489.2671, "unit": "tokens/s", "notes": notes}])


def test_a_row_states_its_attention_layout_and_drafts():
    case = published_rows.interpret(_row("TP8 EP8", "attention DP, max_batch_size 128; "
                                         "MTP (num_nextn_predict_layers=3)")).iloc[0]
    assert case["ok"] and case["dp"] == 8 and case["draft_tokens"] == 3
    plain = published_rows.interpret(_row("TP8 EP8", "max_batch_size 128")).iloc[0]
    assert math.isnan(plain["dp"]) and plain["draft_tokens"] == 0


def test_a_stated_layout_is_read_as_stated_and_as_tensor_parallel_without_it():
    """The model reads a row's data-parallel attention and drafts as the row states them;
    the ablation without them reads the row as its tensor-parallel group, as if unstated."""
    stated = published_rows.interpret(_row("TP8 EP8", "attention DP; "
                                           "num_nextn_predict_layers=3"))
    plain = published_rows.interpret(_row("TP8 EP8", ""))
    read = replace(calibrated(), expert_parallel=True, multi_token=True)
    blind = replace(read, expert_parallel=False, multi_token=False)
    for cal in (blind, replace(ROOFLINE, expert_parallel=False, multi_token=False)):
        assert predict_cases(stated, cal).iloc[0] == predict_cases(plain, cal).iloc[0]
    assert predict_cases(stated, read).iloc[0] != predict_cases(plain, read).iloc[0]
    assert predict_cases(plain, read).iloc[0] == predict_cases(plain, blind).iloc[0]
    # the published fit and the plain roofline read the stated layout
    assert calibrated().expert_parallel and calibrated().multi_token
    assert ROOFLINE.expert_parallel and ROOFLINE.multi_token


def test_a_row_that_states_no_layout_is_read_tensor_parallel_unless_asked():
    rows = published_rows.mlperf()
    row = rows[rows["benchmark_model"] == "deepseek-r1"].head(1).assign(
        system="a system whose configuration the book has not read")
    cases = published_rows.interpret(row)
    assert cases.iloc[0]["ok"] and np.isnan(cases.iloc[0]["dp"])
    published = predict_cases(cases).iloc[0]
    wide = replace(calibrated(), wide_when_unstated=True)
    from napkin.predict.calibration import stacks
    assert predict_cases(cases, wide, stacks=stacks()).iloc[0] > published


def test_an_mlperf_row_whose_config_was_read_runs_its_stated_layout_and_cap():
    """v5.1's DeepSeek-R1 submissions all ran data-parallel attention over engines of 8
    (data/mlperf_system_configs.csv), their answers spread as the submissions' logs show."""
    rows = published_rows.mlperf()
    nvidia = rows[(rows["benchmark_model"] == "deepseek-r1") & (rows["submitter"] == "NVIDIA")]
    case = published_rows.interpret(nvidia.head(1)).iloc[0]
    assert (case["dp"], case["tp"], case["max_batch"]) == (8, 8, 4096)
    assert case["inflight"] > 2


def _pool_row(batch_text):
    return pd.DataFrame([{
        "row_id": "t-2", "source_url": "https://github.com/lm-sys/lm-sys.github.io/x",
        "engine": "SGLang", "version": "x", "model": "DeepSeek-V3", "precision": "FP8",
        "gpu": "H100", "n_gpus": 72, "tp": "EP72 (9 decode nodes)", "input_len": "2000",
        "output_len": "(decode only)", "concurrency_or_batch": batch_text,
        "metric": "decode throughput per node (8 GPUs)", "value": 22282.0,
        "unit": "output tokens/s/node", "notes": ""}])


def test_a_decode_pool_is_read_per_gpu_and_served_only_by_wide_expert_parallelism():
    cases = published_rows.interpret(_pool_row("batch 256 (per device), KV cache length 2,000"))
    case = cases.iloc[0]
    assert case["ok"] and case["kind"] == "pool_decode_rate"
    assert (case["dp"], case["batch"], case["input_tokens"], case["per_chips"]) == \
        (72, 256, 2000, 8)
    # eight H100 cannot hold the model in tensor parallel: only the wide reading serves it
    assert predict_cases(cases, ROOFLINE).iloc[0] > 0
    blind = replace(ROOFLINE, expert_parallel=False)
    assert math.isnan(predict_cases(cases, blind).iloc[0])
    simulated = published_rows.interpret(_pool_row("batch 128, KV cache length 4,000, "
                                                    "simulated MTP")).iloc[0]
    assert not simulated["ok"] and "simulated" in simulated["reason"]
    vague = published_rows.interpret(_pool_row("batch 256, KV cache length 2,000")).iloc[0]
    assert not vague["ok"] and "per GPU not stated" in vague["reason"]


def test_the_fit_sees_a_decode_pool_but_no_row_that_no_layout_can_serve():
    from napkin.validation.derive import rows as usable_rows
    from napkin.validation.fitting import usable
    pool = usable_rows()
    assert (pool["kind"] == "pool_decode_rate").any()
    # two H100 cannot hold DeepSeek-V3 in FP8 however it is laid out
    row = _pool_row("batch 256 (per device), KV cache length 2,000").assign(
        tp="EP2 (one server)", n_gpus=2)
    cases = published_rows.interpret(row)
    assert cases["ok"].all() and usable(cases).empty


def test_two_pools_sized_to_one_stream_by_hand():
    from napkin.predict import disaggregated
    c = engine("GB200 (per GPU)", MODEL, n_chips=72, weights="NVFP4", kv="fp8",
               attention_dp=True).constants
    cal = calibrated()
    run = disaggregated.pools(c, c, 804.0, 4043.0, 1.5, 0.015, cal)
    p, d = run["prefill"], run["decode"]
    mu, lam = p["requests_per_s_per_chip"], d["requests_per_s_per_chip"]
    assert run["tokens_per_s_per_chip"] == pytest.approx(4043.0 / (1 / mu + 1 / lam))
    assert run["prefill_share"] == pytest.approx((1 / mu) / (1 / mu + 1 / lam))
    # each pool at its largest batch within its own limit
    assert 2 * p["step_s"] <= 1.5 and cal.tpot_tail * d["tpot_s"] <= 0.015
    bigger = disaggregated.decode_pool(c, 804.0, 4043.0, 0.015 * 1.5, cal)
    assert bigger["batch"] > d["batch"]
    # no step carries a prompt, so the decode pool beats one engine at the same limit
    one = predict("GB200 (per GPU)", MODEL, n_chips=72, weights="NVFP4", kv="fp8",
                  input_tokens=804, output_tokens=4043, ttft_limit_s=1.5,
                  tpot_limit_s=0.015, attention_dp=True)
    assert d["batch"] > one.batch


def test_a_pool_that_cannot_meet_its_limit_serves_nobody():
    from napkin.predict import disaggregated
    c = engine("B200", MODEL, n_chips=8, weights="NVFP4", kv="fp8").constants
    run = disaggregated.pools(c, c, 804.0, 4043.0, 1.5, 1e-4, calibrated())
    assert run["tokens_per_s_per_chip"] == 0.0 and run["decode"]["batch"] == 0


def test_the_rack_table_costs_every_layout_and_names_the_fits_own():
    from napkin.validation import chapter
    rack = chapter.rack_layouts()
    assert list(rack["layout"]) == [name for name, *_ in chapter.RACK_LAYOUTS]
    assert "states no layout" in rack["layout"].iloc[0] and "MLPerf" in rack["layout"].iloc[1]
    assert (rack["tokens_per_s"] == rack["per_chip"] * chapter.RACK["n_chips"]).all()
    assert rack["prefill_share"].iloc[0] == 0 and rack["prefill_share"].iloc[-1] > 0
    assert "fluid" in rack["prefill"].iloc[-1] and "every GPU" in rack["prefill"].iloc[0]
    checks = chapter.wide_reading_checks()
    assert checks["dp_n"] >= checks["dp_runs"] >= 4 and checks["drafts_n"] >= 6
    assert checks["offline_n"] >= 8 and checks["server_n"] >= 8


def test_server_steps_read_the_batch_each_engine_ran_from_its_log():
    from napkin.validation import chapter
    steps = chapter.server_steps()
    assert len(steps) >= 8
    # Little's law over an engine of eight: hundreds of sequences, each token within the
    # Server limit (80 ms at the 99th percentile, so the mean below it)
    assert steps["batch"].between(100, 5120).all() and (steps["tpot_ms"] < 80).all()
    assert (steps["predicted_step_ms"] > 0).all()


def test_a_note_that_says_the_run_went_without_mtp_is_not_speculative():
    from napkin.validation import chapter
    rows = pd.DataFrame({"table": "serving_measurements",
                         "row_id": ["serving-2861", "serving-2867", "serving-2864"],
                         "draft_tokens": [0.0, 0.0, 0.0]})
    assert list(chapter.speculative(rows)) == [False, False, True]
    rows["draft_tokens"] = [0.0, 0.0, 3.0]        # drafts the model reads are not "unread"
    assert not chapter.speculative(rows).any()


def test_unequal_answers_put_longer_sequences_in_flight():
    """The inspection paradox: with answers of unequal length the sequences in flight are
    the longer ones, so their cache is deeper, fewer fit and each step takes longer."""
    assert serve.inflight_depth(800, 4000, 1.0) == 2800
    assert serve.inflight_depth(800, 4000, 2.5) == 5800
    c = engine("H100 SXM", "Llama-3.1-8B", weights="FP8").constants
    cal = calibrated()
    even, spread = (serve.memory_batch(c, 800, 4000, k)[0] for k in (1.0, 2.5))
    assert spread < even
    steps = [serve.steady_step(c, 64, 800, 4000, cal, k)["step_s"][0] for k in (1.0, 2.5)]
    assert steps[1] > steps[0]


def test_predict_takes_the_answers_spread_and_refuses_a_spread_below_one():
    args = dict(n_chips=8, weights="NVFP4", kv="fp8", input_tokens=804, output_tokens=4043,
                attention_dp=True)
    even = predict("B200", MODEL, **args)
    spread = predict("B200", MODEL, inflight_ratio=2.38, **args)
    assert spread.memory_batch < even.memory_batch
    assert spread.output_tokens_per_s < even.output_tokens_per_s
    for bad in (0.5, float("nan"), float("inf"), "2", True):
        with pytest.raises(ValueError, match="inflight_ratio"):
            predict("B200", MODEL, inflight_ratio=bad, **args)


def test_batched_chat_runs_are_read_within_their_caps_and_their_drafts_pay():
    """Each later InferenceX run is read at its share of the concurrency, never above the
    recipe's cap (per GPU with data-parallel attention, else per engine), and with the drafts
    it ran each token takes less time than it would without them."""
    from napkin import tables
    from napkin.validation import chapter

    runs = tables.load(chapter.CHAT_RUNS)
    steps = chapter.moe_chat_steps()
    assert len(steps) == len(runs) > 0
    cap = runs["max_batch"] * runs["engine_gpus"].where(runs["attention_dp"], 1)
    share = runs["concurrency"] / (runs["decode_gpus"] / runs["engine_gpus"])
    assert (steps["batch"] == share.clip(upper=cap)).all()
    assert (steps["model_ms"] < steps["no_drafts_ms"]).all()
    assert (steps["factor"] >= 1).all() and (steps["tpot_ms"] > 0).all()
