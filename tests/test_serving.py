"""napkin.roofline's mixed step and napkin.serving's simulation: invariants, not outputs."""

from __future__ import annotations

import numpy as np
import pytest

import dataclasses

from napkin import catalog, roofline
from napkin.kvpaging import chapter as paging_chapter
from napkin.serving import chapter as sv
from napkin.serving import disagg, engine, runs, traffic as tf


@pytest.fixture(scope="module")
def server():
    return sv.server()


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


def test_mixed_step_is_the_decode_step_when_it_only_decodes():
    model, roof = roofline.llama_3_3_70b(), roofline.chip_roof("H100 SXM")
    step = roofline.mixed_step(model, roof, decode_contexts=[4096] * 16)
    # the new token attends to itself too: decode_step counts 4,096 keys, mixed_step 4,097
    assert step.flops == pytest.approx(roofline.decode_step(model, roof, 16, 4097).flops)
    assert step.bytes == pytest.approx(roofline.decode_step(model, roof, 16, 4096).bytes)
    assert step.seconds == pytest.approx(roofline.decode_step(model, roof, 16, 4096).seconds,
                                         rel=1e-3)
    assert step.bound == "memory"


def test_mixed_step_prefill_is_compute_bound_and_chunking_keeps_the_flops():
    model, roof = roofline.llama_3_3_70b(), roofline.chip_roof("H100 SXM")
    whole = roofline.mixed_step(model, roof, prefill=[(0, 8192)])
    assert whole.bound == "compute" and whole.kv_bytes == 0
    parts = [roofline.mixed_step(model, roof, prefill=[(s, 2048)]) for s in range(0, 8192, 2048)]
    assert sum(p.flops for p in parts) == pytest.approx(whole.flops)
    assert sum(p.kv_bytes for p in parts) > 0      # later chunks re-read the earlier ones
    assert sum(p.seconds for p in parts) >= whole.seconds


def test_mixed_step_honours_windows_and_agrees_with_the_linear_form():
    cfg = catalog.config("gpt-oss-20b")
    model = roofline.Model.from_config(cfg, "gpt-oss-20b", params=catalog.params(
        "gpt-oss-20b", active=True))
    roof = roofline.chip_roof("H100 SXM")
    with pytest.raises(ValueError, match="windowed"):
        roofline.step_cost(model, roof)
    short = roofline.mixed_step(model, roof, decode_contexts=[100])
    long = roofline.mixed_step(model, roof, decode_contexts=[100_000])
    # only the full-attention layers keep growing beyond the window
    from napkin import kvcache
    form = kvcache.linear_form(cfg)
    grow = (long.kv_bytes - short.kv_bytes) / model.kv_dtype_bytes
    assert grow == pytest.approx(form.full_elements_per_token * (100_000 - 100)
                                 + form.windowed_elements_per_token * (form.window - 100))
    # without windows the aggregate form and the exact one agree
    llama = roofline.llama_3_3_70b()
    step = roofline.mixed_step(llama, roof, prefill=[(1000, 512), (0, 300)],
                               decode_contexts=[10, 5000])
    tokens, kv = 512 + 300 + 2, 1000 + 10 + 5000
    pairs = 512 * 1000 + 512 * 513 // 2 + 300 * 301 // 2 + 11 + 5001
    assert float(roofline.step_seconds(llama, roof, tokens, kv, pairs)) == \
        pytest.approx(step.seconds)


def test_mixed_step_bad_input():
    model, roof = roofline.llama_3_3_70b(), roofline.chip_roof("H100 SXM")
    with pytest.raises(ValueError, match="at least one"):
        roofline.mixed_step(model, roof)
    with pytest.raises(ValueError, match="prefill chunk"):
        roofline.mixed_step(model, roof, prefill=[(0, 0)])
    with pytest.raises(ValueError, match="decode context"):
        roofline.mixed_step(model, roof, decode_contexts=[-1])


def test_paging_uses_the_same_roofline():
    """Chapter 6's clock and chapter 7's step cost are one roofline of a step."""
    d = paging_chapter.h100_deployment()
    pairs = 4096 * 4097 // 2
    assert float(roofline.step_cost(d.model, d.roof).seconds(4096, 0, pairs)) == \
        float(roofline.step_seconds(d.model, d.roof, 4096, 0, pairs))


# -- the simulation ---------------------------------------------------------------------------

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


def test_tokens_are_conserved(traffic, server):
    for run in _runs(traffic, server):
        s = run.steps
        assert s["prefill_tokens"].sum() == traffic.prompt.sum(), run.label
        assert s["decode_tokens"].sum() == (traffic.output - 1).sum(), run.label


def test_no_step_beats_its_roofline(traffic, server):
    """Every step's duration is the roofline of what it ran, recomputed from the step's
    own chunks and contexts through mixed_step (the exact, per-chunk path)."""
    for run in _runs(traffic, server):
        assert len(run.compositions) == len(run.steps)
        for (chunks, contexts), seconds in zip(run.compositions, run.steps["seconds"]):
            exact = roofline.mixed_step(server.model, server.roof, chunks, contexts)
            assert seconds >= exact.compute_s * (1 - 1e-12)
            assert seconds >= exact.memory_s * (1 - 1e-12)
            assert seconds == pytest.approx(exact.seconds, rel=1e-9)


def test_steps_never_overlap_on_one_instance(traffic, server):
    for run in _runs(traffic, server):
        for _, s in run.steps.groupby("instance"):
            ends = (s["start_s"] + s["seconds"]).to_numpy()
            assert (s["start_s"].to_numpy()[1:] >= ends[:-1] - 1e-12).all()


def test_chunking_never_changes_the_work(traffic, server):
    """The same requests cost the same FLOPs whatever the budget; only re-reads change."""
    cost = roofline.step_cost(server.model, server.roof)
    work = []
    for run in _runs(traffic, server):
        s = run.steps
        work.append((cost.flops(s["prefill_tokens"] + s["decode_tokens"], s["pairs"]).sum(),
                     s["pairs"].sum()))
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


def test_max_rate_interpolates_the_attainment_curve():
    import pandas as pd
    sweep = pd.DataFrame({"config": "x", "rate_per_s": [1.0, 2.0, 3.0],
                          "attainment": [1.0, 0.95, 0.5]})
    assert runs.max_rate(sweep, "x", 0.9) == pytest.approx(2 + 0.05 / 0.45)
    assert np.isnan(runs.max_rate(sweep.assign(attainment=0.1), "x", 0.9))
    assert runs.max_rate(sweep.assign(attainment=1.0), "x", 0.9) == 3.0


def test_goodput_says_when_it_is_only_a_bound():
    import pandas as pd
    sweep = pd.DataFrame({"config": ["a"] * 3 + ["b"] * 3 + ["c"] * 3,
                          "rate_per_s": [1.0, 2.0, 3.0] * 3,
                          "attainment": [1.0, 0.95, 0.5, 1.0, 0.99, 0.91, 0.8, 0.5, 0.1]})
    g = sv.goodput(sweep, 0.9).set_index("config")
    assert g.loc["a", "goodput_req_per_s"] == pytest.approx(2 + 0.05 / 0.45)
    assert not g.loc["a", "capped"] and not g.loc["a", "missed"]
    assert g.loc["b", "goodput_req_per_s"] == 3.0 and g.loc["b", "capped"]  # at least 3
    assert np.isnan(g.loc["c", "goodput_req_per_s"]) and g.loc["c", "missed"]


def test_per_token_targets_are_multiples_of_the_bare_step(server):
    bare = sv.bare_decode_s(server)
    assert sv.targets(server) == (sv.SETTING.ttft_slo_s, sv.SETTING.tpot_slo_factor * bare)
    assert sv.targets(server, tpot_slo_factor=3)[1] == pytest.approx(3 * bare)
    with pytest.raises(ValueError, match="tpot_slo_factor"):
        sv.targets(server, tpot_slo_factor=0)


def test_an_instance_would_share_the_systems_nics():
    # ten 400 Gb/s NICs for eight GPUs: five for a 4-GPU instance
    assert sv.nics_per_instance() == pytest.approx(10 / 8 * sv.SETTING.gpus)
    assert sv.default_link_bytes_per_s() == 50e9


# -- the engine, step by step on a hand-made queue ---------------------------------------------

def test_chunked_prefill_step_by_step(server):
    """Budget 8: decodes first, then prompt chunks, the one cut at the budget finished next."""
    cost = roofline.step_cost(server.model, server.roof)
    e = engine.ServingEngine([0.0, 0.0], [5, 6], [3, 2], cost, 1000, "chunked", 8)
    e.arrive()
    chunks, decode = e.schedule_chunked()
    # nobody decodes yet: request 0's whole prompt, then 3 of request 1's 6 tokens
    assert chunks == [(0, 0, 5), (1, 0, 3)] and not decode and e.prefilling == [0, 1]
    e.t += e.execute(chunks, decode)
    e.finish_chunks(chunks)
    # request 0's prompt is done and gives its first token; request 1's is not
    assert e.prefilling == [1] and e.decoding == [0]
    assert e.first[0] == e.t and np.isnan(e.first[1])

    chunks, decode = e.schedule_chunked()
    # request 0's decode takes one token of the budget; request 1's last 3 prompt tokens follow
    assert chunks == [(1, 3, 3)] and decode
    seconds = e.execute(chunks, decode)
    # the decode reads 5 cached tokens and attends to 6 keys; the chunk re-reads the 3
    # tokens its prompt's first chunk wrote and attends 3 x 3 + 3 x 4 / 2 pairs
    assert e.steps[-1][2:7] == (3, 1, 5 + 3, 6 + 15, 1)
    assert seconds == pytest.approx(roofline.mixed_step(server.model, server.roof, [(3, 3)],
                                                        [5]).seconds)
    e.t += seconds
    e.emit_decodes()
    e.finish_chunks(chunks)
    assert e.decoding == [0, 1] and list(e.generated) == [2, 1]

    chunks, decode = e.schedule_chunked()
    assert chunks == [] and decode
    e.t += e.execute(chunks, decode)
    e.emit_decodes()
    # both reach their output length in this step: done, and their memory returned
    assert e.done == 2 and e.held == 0 and (e.finish == e.t).all()
    assert len(e.gaps) == 2 and list(e.gaps[1]) == pytest.approx([e.steps[2][1]] * 2)


def test_without_chunking_a_prompt_step_decodes_nothing(server):
    cost = roofline.step_cost(server.model, server.roof)
    e = engine.ServingEngine([0.0, 0.0], [5, 6], [3, 2], cost, 1000, "prefill_first", 6)
    e.arrive()
    # whole prompts while they fit in the budget (at least one): 5 + 6 > 6, so one
    assert e.schedule_prompts() == ([(0, 0, 5)], False)
    log = engine.ServingEngine([0.0, 0.0], [5, 6], [3, 2], cost, 1000, "prefill_first",
                               6).run()
    assert not np.isnan(log.finish_s).any()


def test_the_budget_must_hold_the_running_decodes(server):
    cost = roofline.step_cost(server.model, server.roof)
    e = engine.ServingEngine([0.0] * 3, [4, 4, 4], [9, 9, 9], cost, 1000, "chunked", 2)
    with pytest.raises(ValueError, match="smaller than the 3 running decodes"):
        e.decoding = [0, 1, 2]
        e.schedule_chunked()
    with pytest.raises(ValueError, match="mode"):
        engine.ServingEngine([0.0], [4], [9], cost, 1000, "fastest", 2)


def test_chapter_runs_are_computed_once_and_handed_out_as_copies():
    a = sv.saturation_runs()
    a.loc[:, "steps"] = -1
    assert (sv.saturation_runs()["steps"] > 0).all()
