"""napkin.roofline's mixed step and napkin.serving's simulation on chapter 9's calibrated
step: invariants, not outputs."""

from __future__ import annotations

import numpy as np
import pytest

import dataclasses

import pandas as pd

from napkin import catalog, roofline
from napkin.predict import step as predict_step
from napkin.predict.calibration import ROOFLINE, calibrated
from napkin.serving import capacity, chapter as sv
from napkin.serving import disagg, engine, runs, traffic as tf
from napkin.predict.totals import step_model


@pytest.fixture(scope="module")
def server():
    return sv.server()


@pytest.fixture(scope="module")
def model(server):
    return step_model(server)


@pytest.fixture(scope="module")
def traffic():
    # busy enough that decodes and prefills share steps, small enough to run in a second
    return tf.traffic(12.0, 150, 2048, 128, seed=3)


# -- the mixed step ---------------------------------------------------------------------------

def test_attention_pairs_of_chunks_add_up_to_the_whole_prompt():
    n = 10_000
    whole = roofline.attention_pairs(0, n)
    assert whole == n * (n + 1) / 2
    for chunk in (1, 7, 512, 2048, 4096):
        starts = np.arange(0, n, chunk)
        sizes = np.minimum(chunk, n - starts)
        assert roofline.attention_pairs(starts, sizes).sum() == whole
    # a window caps what each query sees, chunked or not
    w = 4096
    capped = sum(min(p + 1, w) for p in range(n))
    assert roofline.attention_pairs(0, n, w) == capped
    starts = np.arange(0, n, 1000)
    assert roofline.attention_pairs(starts, np.minimum(1000, n - starts), w).sum() == capped


def test_step_work_is_the_decode_steps_when_it_only_decodes():
    model, roof = roofline.llama_3_3_70b(), roofline.chip_roof("H100 SXM")
    work = roofline.step_work(model, decode_contexts=[4096] * 16)
    # the new token attends to itself too: decode_step counts 4,096 keys, step_work 4,097
    assert work.flops == pytest.approx(roofline.decode_step(model, roof, 16, 4097).flops)
    assert model.weight_bytes + work.kv_bytes == pytest.approx(
        roofline.decode_step(model, roof, 16, 4096).bytes)


def test_chunking_a_prompt_keeps_its_flops_and_rereads_its_cache():
    model = roofline.llama_3_3_70b()
    whole = roofline.step_work(model, prefill=[(0, 8192)])
    assert whole.kv_bytes == 0
    parts = [roofline.step_work(model, prefill=[(s, 2048)]) for s in range(0, 8192, 2048)]
    assert sum(p.flops for p in parts) == pytest.approx(whole.flops)
    assert sum(p.kv_bytes for p in parts) > 0      # later chunks re-read the earlier ones


def test_step_work_honours_windows():
    cfg = catalog.config("gpt-oss-20b")
    model = roofline.Model.from_config(cfg, "gpt-oss-20b", params=catalog.params(
        "gpt-oss-20b", active=True))
    short = roofline.step_work(model, decode_contexts=[100])
    long = roofline.step_work(model, decode_contexts=[100_000])
    # only the full-attention layers keep growing beyond the window
    from napkin import kvcache
    form = kvcache.linear_form(cfg)
    grow = (long.kv_bytes - short.kv_bytes) / model.kv_dtype_bytes
    assert grow == pytest.approx(form.full_elements_per_token * (100_000 - 100)
                                 + form.windowed_elements_per_token * (form.window - 100))


def test_step_work_bad_input():
    model = roofline.llama_3_3_70b()
    with pytest.raises(ValueError, match="at least one"):
        roofline.step_work(model)
    with pytest.raises(ValueError, match="prefill chunk"):
        roofline.step_work(model, prefill=[(0, 0)])
    with pytest.raises(ValueError, match="decode context"):
        roofline.step_work(model, decode_contexts=[-1])


def test_the_roofline_calibration_is_the_plain_roofline(server):
    """With every efficiency 1 and nothing else paid, the book's one step model is the plain
    roofline, the slower of all the FLOPs and all the bytes (chapter 6's clock); the published
    calibration costs more."""
    plain = step_model(server, ROOFLINE)
    tokens, kv, pairs = 4096, 10_000, 4096 * 4097 // 2 + 10_000
    m, roof = server.model, server.roof
    flops = 2 * m.params * tokens + 2 * m.query_groups * pairs * (
        2 * m.config["num_hidden_layers"] * m.config["num_key_value_heads"]
        * m.config["hidden_size"] // m.config["num_attention_heads"])
    n_bytes = m.weight_bytes + kv * m.kv_bytes_per_token()
    assert float(plain.seconds(tokens, kv, pairs, 3)[0]) == pytest.approx(
        max(flops / roof.flops_per_s, n_bytes / roof.bandwidth_bytes_per_s), rel=1e-12)
    assert float(step_model(server).seconds(tokens, kv, pairs, 3)[0]) > \
        float(plain.seconds(tokens, kv, pairs, 3)[0])


def _runs(traffic, server):
    return [runs.simulate(traffic, server, "prefill_first", compose=True),
            runs.simulate(traffic, server, "chunked", 512, compose=True),
            runs.simulate(traffic, server, "chunked", 2048, instances=2, compose=True)]


def test_every_request_completes_in_order(traffic, server):
    every = _runs(traffic, server) + [disagg.disaggregate(traffic, server, 1, 2, 50e9)]
    for run in every:
        r = run.requests
        assert r["finish_s"].notna().all() and r["first_token_s"].notna().all(), run.label
        assert (r["first_token_s"] > r["arrival_s"]).all(), run.label
        assert (r["finish_s"] >= r["first_token_s"]).all(), run.label
        assert len(run.gaps) == (r["output"] - 1).sum(), run.label
        assert (run.gaps > 0).all(), run.label
        # every stream's tokens: its first, then one per decode step, the last at its finish
        tk = run.tokens.groupby("request")
        assert (tk.size() == r.loc[tk.size().index, "output"]).all(), run.label
        assert np.allclose(tk["time_s"].max(), r.loc[tk.size().index, "finish_s"]), run.label


def test_tokens_are_conserved(traffic, server):
    for run in _runs(traffic, server):
        s = run.steps
        assert s["prefill_tokens"].sum() == traffic.prompt.sum(), run.label
        assert s["decode_tokens"].sum() == (traffic.output - 1).sum(), run.label


def test_every_step_is_napkin_predict_step_cost(traffic, server):
    """The simulator prices nothing itself: each step's seconds are napkin.predict.step.cost
    with the published calibration of the same work, rebuilt here from the step's own chunks
    (prefill_work) and decode contexts (decode_work)."""
    c = predict_step.engine_of(server).constants
    for run in _runs(traffic, server):
        assert len(run.compositions) == len(run.steps)
        for (chunks, contexts), seconds in zip(run.compositions, run.steps["seconds"]):
            works = [predict_step.prefill_work(c, 1, m, start) for start, m in chunks] + \
                [predict_step.decode_work(c, 1, ctx) for ctx in contexts]
            work = works[0]
            for w in works[1:]:
                work = work + w
            expected = float(predict_step.cost(c, work, calibrated()).seconds[0])
            assert seconds == pytest.approx(expected, rel=1e-9)


def test_running_together_is_running_alone(traffic, server, model):
    """Engines stepped side by side (one step-model call per round) keep their own clocks."""
    alone = [runs.simulate(traffic, server, "chunked", b, model=model) for b in (256, 4096)]
    together = runs.run_jobs([runs.colocated(traffic, server, "chunked", b, model=model)
                              for b in (256, 4096)])
    for a, t in zip(alone, together):
        assert a.requests.equals(t.requests) and np.array_equal(a.gaps, t.gaps)
        assert a.steps.equals(t.steps)


def test_steps_never_overlap_on_one_instance(traffic, server):
    for run in _runs(traffic, server):
        for _, s in run.steps.groupby("instance"):
            ends = (s["start_s"] + s["seconds"]).to_numpy()
            assert (s["start_s"].to_numpy()[1:] >= ends[:-1] - 1e-12).all()


def test_chunking_never_changes_the_work(traffic, server):
    """The same requests cost the same FLOPs whatever the budget; only re-reads change."""
    work = [(run.steps["flops"].sum(), run.steps["pairs"].sum())
            for run in _runs(traffic, server)]
    for flops, pairs in work[1:]:
        assert flops == pytest.approx(work[0][0], rel=1e-12)
        assert pairs == work[0][1]


def test_chunking_bounds_the_stall(traffic, server):
    """Without chunking a step can be as long as the longest prefill; with a budget no step
    runs more tokens than the budget."""
    plain, small = runs.simulate(traffic, server, "prefill_first"), \
        runs.simulate(traffic, server, "chunked", 512)
    assert (small.steps["prefill_tokens"] + small.steps["decode_tokens"]).max() <= 512
    assert plain.gaps.max() > small.gaps.max()


def test_deterministic_per_seed(server):
    a = tf.traffic(10.0, 60, 1000, 100, seed=11)
    b = tf.traffic(10.0, 60, 1000, 100, seed=11)
    c = tf.traffic(10.0, 60, 1000, 100, seed=12)
    assert (a.prompt == b.prompt).all() and (a.arrival_s == b.arrival_s).all()
    assert not (a.prompt == c.prompt).all()
    ra, rb = (runs.simulate(t, server, "chunked", 1024) for t in (a, b))
    assert ra.requests.equals(rb.requests) and (ra.gaps == rb.gaps).all()


def test_disaggregation_moves_the_cache_over_the_link(server):
    tr = tf.traffic(2.0, 30, 4000, 50, seed=5)
    fast = disagg.disaggregate(tr, server, 1, 1, 50e9)
    slow = disagg.disaggregate(tr, server, 1, 1, 0.5e9)
    # the first token is the prefill instance's: the link cannot change it
    assert np.allclose(fast.requests["first_token_s"], slow.requests["first_token_s"])
    # ... but the second token waits for the cache
    gap = disagg.transfer_seconds(server, tr.prompt, 0.5e9)
    assert (slow.requests["finish_s"] - slow.requests["first_token_s"]
            >= gap * (tr.output > 1) - 1e-9).all()
    assert slow.gaps.max() > fast.gaps.max()


# -- the steady state -------------------------------------------------------------------------

def test_steady_state_leaves_out_the_first_and_last_arrivals(traffic, server):
    run = runs.simulate(traffic, server, "chunked", 1024)
    steady = run.steady(30, 20)
    order = np.argsort(traffic.arrival_s, kind="stable")
    assert not steady.measured[order[:30]].any() and not steady.measured[order[-20:]].any()
    assert steady.measured[order[30:-20]].all()
    s = steady.summary(1.0, 0.05)
    assert s["requests"] == len(traffic) - 50
    assert len(steady.measured_gaps()) == (traffic.output[steady.measured] - 1).sum()
    assert steady.window_s == (traffic.arrival_s[order[30]], traffic.arrival_s[order[-21]])
    # what happens to a dropped request does not reach the summary; a measured one does
    worse = run.requests.copy()
    worse.loc[order[0], "first_token_s"] += 100.0
    assert runs.Run(**{**steady.__dict__, "requests": worse}).summary(1.0, 0.05) == s
    worse.loc[order[40], "first_token_s"] += 100.0
    assert runs.Run(**{**steady.__dict__, "requests": worse}).summary(1.0, 0.05) != s
    # the whole run, measured, is the default
    assert run.summary(1.0, 0.05)["requests"] == len(traffic)
    with pytest.raises(ValueError, match="leaves none"):
        run.steady(100, 50)
    with pytest.raises(ValueError, match="drop_first"):
        run.steady(-1, 0)


def test_the_warm_up_is_what_steady_state_leaves_out(server, model):
    """The first requests meet an engine that holds fewer requests than it later does."""
    tr = tf.traffic(3.0, 400, 2048, 256, seed=1)
    r = runs.simulate(tr, server, "chunked", 2048, model=model).requests
    t = r["arrival_s"].to_numpy()
    in_flight = np.array([((t < x) & (r["finish_s"].to_numpy() > x)).sum() for x in t])
    order = np.argsort(t, kind="stable")
    assert in_flight[order[0]] == 0
    assert np.median(in_flight[order[:20]]) < np.median(in_flight[order[100:300]])


def test_an_endless_queue_is_measured_while_it_lasts(server, model):
    tr = tf.traffic(1e6, 300, 2048, 256, seed=2)  # everyone waiting from the start
    run = runs.simulate(tr, server, "chunked", 1024, model=model)
    sat = run.saturated(50, 50)
    firsts = np.sort(run.requests["first_token_s"].to_numpy())
    assert sat["window_s"] == pytest.approx(firsts[249] - firsts[50])
    assert sat["requests_per_s"] == pytest.approx(199 / sat["window_s"])
    # the whole run, start and drain included, serves fewer per second
    assert len(tr) / run.duration_s < sat["requests_per_s"]
    with pytest.raises(ValueError, match="too few"):
        run.saturated(200, 100)
    lean = runs.run_jobs([runs.colocated(tr, server, "chunked", 1024, keep_steps=False,
                                         model=model)])[0]
    assert lean.steps.empty and lean.requests.equals(run.requests)
    with pytest.raises(ValueError, match="keep_steps"):
        lean.saturated(50, 50)


# -- capacity ---------------------------------------------------------------------------------

def test_capacity_of_a_full_budget(server, model):
    """A chunked step at capacity carries exactly its budget (or what memory lets in), and
    its seconds are the step model's for that mean step."""
    pop = sv.population()
    small = capacity.chunked(model, server, pop.prompt, pop.output, 512)
    assert small["limited_by"] == "budget"
    per_request = (pop.prompt + pop.output - 1).mean()
    assert small["requests_per_s"] * small["step_s"] * per_request == pytest.approx(512)
    assert small["tokens_per_s"] == pytest.approx(512 / small["step_s"])
    big = capacity.chunked(model, server, pop.prompt, pop.output, 1 << 20)
    assert big["limited_by"] == "memory"
    # memory-bound: the sequences in flight, each holding its whole final length, fill it
    steps = pop.output - 1 + 1  # a prompt under this budget is one chunk
    held = big["requests_per_s"] * big["step_s"] * ((pop.prompt + pop.output) * steps).mean()
    assert held == pytest.approx(server.kv_capacity_tokens, rel=1e-6)
    # more budget never loses capacity; a split is bound by its scarcest part
    assert capacity.chunked(model, server, pop.prompt, pop.output, 2048)["requests_per_s"] \
        >= small["requests_per_s"]
    split = capacity.split(model, server, pop.prompt, pop.output, 1, 3, 50e9)
    assert split["requests_per_s"] == min(split[f"{p}_req_per_s"] for p in
                                          ("prefill", "decode", "link"))
    thin = capacity.split(model, server, pop.prompt, pop.output, 3, 1, 0.1e9)
    assert thin["limited_by"] == "link"


def test_capacity_agrees_with_an_endless_queue(server, model):
    """The mean step's capacity against the simulated engine with every request waiting."""
    tr = tf.traffic(1e6, 600, 2048, 256, seed=3)
    for policy, budget in (("chunked", 512), ("chunked", 4096), ("prefill_first", None)):
        run = runs.simulate(tr, server, policy, budget, model=model)
        measured = run.saturated(100, 100)["requests_per_s"]
        computed = (capacity.chunked(model, server, tr.prompt, tr.output, budget)
                    if policy == "chunked" else
                    capacity.prefill_first(model, server, tr.prompt, tr.output))
        assert measured == pytest.approx(computed["requests_per_s"], rel=0.2), policy


def test_the_chapters_rates_are_below_capacity():
    """Every run of the budget dial and of the cluster arrives slower than its
    configuration can serve."""
    s = sv.SETTING
    ref = sv.reference_rate()
    caps = sv.capacities()
    assert ref == pytest.approx(caps.set_index("budget").loc[s.reference_budget,
                                                            "requests_per_s"])
    assert max(s.loads) * ref < caps["requests_per_s"].min()
    assert max(s.cluster_loads) < 1 and s.split_load < 1
    cl = sv.cluster_capacities().set_index("config")["requests_per_s"]
    one = caps.set_index("label")["requests_per_s"]
    assert cl[f"Chunked 2,048 x {s.instances}"] == pytest.approx(
        s.instances * one[sv.label("chunked", 2048)])


def test_a_reservation_holds_the_final_length_from_the_first_decode():
    # 100 prompt and 3 output tokens: two decode steps hold 101 and 102 tokens, and the
    # reservation 103 in each; with no decode step there is nothing to compare
    assert capacity.reserved_over_held([100], [3]) == pytest.approx(206 / 203)
    assert capacity.reserved_over_held([100, 100], [3, 1]) == pytest.approx(206 / 203)
    assert capacity.reserved_over_held([100], [1]) == 1.0
    with pytest.raises(ValueError, match="one length"):
        capacity.reserved_over_held([100, 200], [3])


def test_capacity_bad_input(server, model):
    with pytest.raises(ValueError, match="one length"):
        capacity.chunked(model, server, [100, 200], [10], 512)
    with pytest.raises(ValueError, match="at least one token"):
        capacity.chunked(model, server, [0], [10], 512)
    with pytest.raises(ValueError, match="budget"):
        capacity.chunked(model, server, [100], [10], 0)
    with pytest.raises(ValueError, match="link_bytes_per_s"):
        capacity.split(model, server, [100], [10], 1, 1, 0)
    with pytest.raises(ValueError, match="decode"):
        capacity.split(model, server, [100], [10], 1, 0, 1e9)


# -- seeds ------------------------------------------------------------------------------------

def test_spread_is_the_median_and_range_over_seeds():
    df = pd.DataFrame({"config": ["a"] * 3 + ["b"] * 2, "seed": [0, 1, 2, 0, 1],
                       "x": [3.0, 1.0, 2.0, 5.0, 7.0]})
    s = sv.spread(df, ["config"], ["x"]).set_index("config")
    assert s.loc["a", ["x", "x_min", "x_max"]].tolist() == [2.0, 1.0, 3.0]
    assert s.loc["b", ["x", "x_min", "x_max"]].tolist() == [6.0, 5.0, 7.0]
    assert sv.median_range(s.reset_index(), "x", "{:.0f}").tolist() == ["2 (1\u20133)",
                                                                         "6 (5\u20137)"]


def test_the_representative_seed_follows_its_rule():
    m = sv.seed_means()
    assert len(m) == sv.SETTING.seed_candidates and m["prompt_mean_tokens"].nunique() > 1
    rep = sv.representative_seed()
    long = sv.population().prompt.mean()
    assert abs(m.set_index("seed").loc[rep, "prompt_mean_tokens"] - long) == \
        pytest.approx((m["prompt_mean_tokens"] - long).abs().min())
    # the seeds of a sweep are different samples of one sampler
    a, b = (sv.SETTING.traffic(1.0, seed) for seed in sv.SETTING.seeds[:2])
    assert not np.array_equal(a.prompt, b.prompt)


def test_goodput_over_seeds_says_when_it_is_a_bound():
    df = pd.DataFrame({"config": ["a"] * 3, "tpot_slo_factor": [2.0] * 3, "seed": [0, 1, 2],
                       "goodput_req_per_s": [8.0, 9.0, 10.0], "capped": [False, True, False],
                       "missed": [False] * 3})
    row = sv.goodput_spread(df).iloc[0]
    assert row["goodput_req_per_s"] == 9.0 and row["capped"]
    assert sv.goodput_text(row, 1.0) == "at least 9.0 (8.0\u201310.0)"
    assert sv.goodput_words(row) == "at least 9.0 (8.0 to 10.0)"
    missed = row.copy()
    missed["missed"] = True
    assert sv.goodput_text(missed, 1.5) == "below 1.5"


def test_bad_input(server, traffic):
    with pytest.raises(ValueError, match="policy"):
        runs.simulate(traffic, server, "fastest")
    with pytest.raises(ValueError, match="budget"):
        runs.simulate(traffic, server, "chunked")
    with pytest.raises(ValueError, match="budget"):
        runs.simulate(traffic, server, "chunked", 0)
    with pytest.raises(ValueError, match="rate_per_s"):
        tf.traffic(0, 10, 100, 10, seed=1)
    with pytest.raises(ValueError, match="link_bytes_per_s"):
        disagg.disaggregate(traffic, server, 1, 1, 0)
    with pytest.raises(ValueError, match="prefill"):
        disagg.disaggregate(traffic, server, 0, 1, 50e9)
    with pytest.raises(ValueError, match="no room"):
        sv.server(sv.Setting(chip="H100 SXM", gpus=1))
    tiny = dataclasses.replace(server, stated_kv_memory_bytes=100 * server.kv_bytes_per_token)
    assert tiny.kv_capacity_tokens == 100
    with pytest.raises(ValueError, match="cannot fit"):
        runs.simulate(traffic, tiny, "chunked", 512)
    gpt = catalog.config("gpt-oss-20b")
    windowed = dataclasses.replace(server, model=roofline.Model.from_config(
        gpt, "gpt-oss-20b", params=catalog.params("gpt-oss-20b", active=True)))
    with pytest.raises(ValueError, match="windowed"):
        step_model(windowed)


def test_max_rate_interpolates_the_attainment_curve():
    sweep = pd.DataFrame({"config": "x", "rate_per_s": [1.0, 2.0, 3.0],
                          "attainment": [1.0, 0.95, 0.5]})
    assert runs.max_rate(sweep, "x", 0.9) == pytest.approx(2 + 0.05 / 0.45)
    assert np.isnan(runs.max_rate(sweep.assign(attainment=0.1), "x", 0.9))
    assert runs.max_rate(sweep.assign(attainment=1.0), "x", 0.9) == 3.0


def test_goodput_says_when_it_is_only_a_bound():
    sweep = pd.DataFrame({"config": ["a"] * 3 + ["b"] * 3 + ["c"] * 3,
                          "rate_per_s": [1.0, 2.0, 3.0] * 3,
                          "attainment": [1.0, 0.95, 0.5, 1.0, 0.99, 0.91, 0.8, 0.5, 0.1]})
    g = sv.goodput(sweep, 0.9).set_index("config")
    assert g.loc["a", "goodput_req_per_s"] == pytest.approx(2 + 0.05 / 0.45)
    assert not g.loc["a", "capped"] and not g.loc["a", "missed"]
    assert g.loc["b", "goodput_req_per_s"] == 3.0 and g.loc["b", "capped"]  # at least 3
    assert np.isnan(g.loc["c", "goodput_req_per_s"]) and g.loc["c", "missed"]


def test_per_token_targets_are_multiples_of_the_calibrated_bare_step(server):
    bare = sv.bare_decode_s()
    assert bare == pytest.approx(predict_step.step_seconds(server, 1, 0))
    assert sv.targets() == (sv.SETTING.ttft_slo_s, sv.SETTING.tpot_slo_factor * bare)
    assert sv.targets(tpot_slo_factor=3)[1] == pytest.approx(3 * bare)
    with pytest.raises(ValueError, match="tpot_slo_factor"):
        sv.targets(tpot_slo_factor=0)


def test_an_instance_would_share_the_systems_nics():
    # ten 400 Gb/s NICs for eight GPUs: five for a 4-GPU instance
    assert sv.nics_per_instance() == pytest.approx(10 / 8 * sv.SETTING.gpus)
    assert sv.default_link_bytes_per_s() == 50e9


def test_configurations_in_words():
    assert sv.describe("Chunked 512 x 4") == \
        "chunked prefill at a budget of 512 tokens on every machine"
    assert sv.describe("No chunking x 4") == "no chunking on every machine"
    assert sv.describe("1 prefill + 3 decode") == \
        "a split of 1 prefill machine and 3 decode machines"


# -- the engine, step by step on a hand-made queue ---------------------------------------------

def _step(e):
    """Plan and run one step of an engine alone; its seconds."""
    totals = e.plan()
    seconds = float(e.cost.seconds(*totals)[0])
    e.commit(seconds)
    return totals, seconds


def test_chunked_prefill_step_by_step(server, model):
    """Budget 8: decodes first, then prompt chunks, the one cut at the budget finished next."""
    e = engine.ServingEngine([0.0, 0.0], [5, 6], [3, 2], model, 1000, "chunked", 8,
                             compose=True)
    totals, _ = _step(e)
    # nobody decodes yet: request 0's whole prompt, then 3 of request 1's 6 tokens
    assert e.compositions[0] == ([(0, 5), (0, 3)], [])
    assert totals == (8, 0, 15 + 6, 2)
    # request 0's prompt is done and gives its first token; request 1's is not
    assert e.prefilling == [1] and list(e.decoding) == [0]
    assert e.first[0] == e.t and np.isnan(e.first[1])

    totals, seconds = _step(e)
    # request 0's decode takes one token of the budget; request 1's last 3 prompt tokens follow;
    # the decode reads 5 cached tokens and attends to 6 keys; the chunk re-reads the 3
    # tokens its prompt's first chunk wrote and attends 3 x 3 + 3 x 4 / 2 pairs
    assert e.compositions[1] == ([(3, 3)], [5])
    assert totals == (4, 5 + 3, 6 + 15, 2)
    assert seconds == pytest.approx(float(model.seconds(4, 8, 21, 2)[0]))
    assert list(e.decoding) == [0, 1]

    totals, seconds = _step(e)
    assert e.compositions[2] == ([], [6, 6])
    # both reach their output length in this step: done, and their memory returned
    assert e.done == 2 and e.held == 0 and e.finish == [e.t, e.t]
    log = e.log()
    gaps, ids = log.gaps()
    assert sorted(ids.tolist()) == [0, 0, 1]
    assert gaps[ids == 1] == pytest.approx([seconds])
    assert e.plan() is None


def test_without_chunking_a_prompt_step_decodes_nothing(server, model):
    e = engine.ServingEngine([0.0, 0.0], [5, 6], [3, 2], model, 1000, "prefill_first", 6)
    e.arrive()
    # whole prompts while they fit in the budget (at least one): 5 + 6 > 6, so one
    assert e.schedule_prompts() == ([(0, 0, 5)], False)
    log = engine.ServingEngine([0.0, 0.0], [5, 6], [3, 2], model, 1000, "prefill_first",
                               6).run()
    assert not np.isnan(log.finish_s).any()


def test_the_budget_must_hold_the_running_decodes(server, model):
    e = engine.ServingEngine([0.0] * 3, [4, 4, 4], [9, 9, 9], model, 1000, "chunked", 2)
    with pytest.raises(ValueError, match="smaller than the 3 running decodes"):
        e.decoding = {0: None, 1: None, 2: None}
        e.schedule_chunked()
    with pytest.raises(ValueError, match="mode"):
        engine.ServingEngine([0.0], [4], [9], model, 1000, "fastest", 2)


def test_chapter_runs_are_computed_once_and_handed_out_as_copies():
    small = sv.Setting(seeds=(0,), n_requests=120, drop_first=20, drop_last=20,
                       budgets=(512,))
    a = sv.saturation_runs(small)
    a.loc[:, "requests_per_s"] = -1
    assert (sv.saturation_runs(small)["requests_per_s"] > 0).all()
