"""Chapter 6's KV memory engine: invariants, the paper's arithmetic, determinism, bad input."""

from __future__ import annotations

import math

import numpy as np
import pandas as pd
import pytest

from napkin import deployment, papers, roofline, workloads
from napkin.kvpaging import buddy, engine, memory, result
from napkin.kvpaging import chapter as ch
from napkin.predict.calibration import ROOFLINE
from napkin.predict.totals import step_model
from napkin.units import GiB

SMALL = dict(capacity_tokens=700, max_len=256)


def small_requests(seed=1, n=40, arrival_rate=None, sigma=1.0):
    wl = workloads.RequestLengths("test", 40.0, 80.0, sigma)
    return workloads.sample_requests(wl, n, SMALL["max_len"], seed, arrival_rate=arrival_rate)


# -- the buddy allocator ---------------------------------------------------------------------

def test_buddy_splits_rounds_up_and_merges_back():
    b = buddy.Buddy(15_728)  # the paper's slot count: 8192 + 4096 + 2048 + 1024 + 256 + 64 + 32 + 16
    start = sorted(b.free_chunks())
    assert sum(1 << o for _, o in start) == 15_728
    chunks = [b.alloc(2048) for _ in range(7)]
    assert all(c is not None and c[1] == 11 for c in chunks)
    assert b.alloc(2048) is None, "seven 2,048-token chunks fill the aligned space"
    assert b.free_tokens == 15_728 - 7 * 2048
    small = b.alloc(300)
    assert small[1] == 9, "300 tokens take a 512-token chunk"
    for c in [*chunks, small]:
        b.release(*c)
    assert sorted(b.free_chunks()) == start and b.free_tokens == 15_728


def test_no_chunk_crosses_the_end_of_memory():
    b = buddy.Buddy(1000)
    got = []
    while (c := b.alloc(1)) is not None:
        got.append(c)
    assert len(got) == 1000 and max(a for a, _ in got) == 999


# -- the engine, step by step on a hand-made queue ---------------------------------------------

def _tiny_queue():
    """Three requests waiting at step 0: (prompt, output) = (3, 3), (5, 2), (2, 1)."""
    return workloads.Requests(np.array([3, 5, 2]), np.array([3, 2, 1]), np.zeros(3, dtype=int))


def test_the_engine_step_by_step():
    """32 slots in blocks of 4, no watermark: every method's effect, worked by hand."""
    e = engine.KVEngine(_tiny_queue(), "paged", 32, 16, block_size=4, watermark=0)
    e.arrive(0)
    assert [q[0] for q in e.queue] == [0, 1, 2]
    e.write_tokens(0)  # nobody runs yet
    joined = e.admit(0)
    # prompt + first token: 4 slots (1 block), 6 (2 blocks), 3 (1 block); block 0 goes first
    assert [s.rid for s in joined] == [0, 1, 2] and not e.queue
    assert [e.running[r].blocks for r in (0, 1, 2)] == [[0], [1, 2], [3]]
    # request 1 (final 7) and 2 (final 3) hold their last block: one empty slot each, forever
    assert [e.running[r].internal for r in (0, 1, 2)] == [0, 1, 1]
    cats = e.account(0, joined)
    # 13 tokens written (4 + 6 + 3), 16 slots allocated: 2 internal, 1 reserved (request 0's
    # fifth token), no tail, 4 free blocks
    assert cats == (13, 1, 2, 0, 16)
    assert e.rows[-1] == (0, 3, 0, 3, *cats, 10, 0, 6 + 15 + 3)
    e.release(0)  # request 2 wanted one token: done at once, its block back
    assert list(e.finishes[-1]) == [2, 0, 3, 3, 4] and 2 not in e.running

    e.arrive(1)
    e.write_tokens(1)  # request 0's block is full: it takes the block request 2 gave back
    assert e.running[0].blocks == [0, 3] and e.running[0].internal == 2
    assert e.admit(1) == []
    # 5 + 7 tokens; each decode reads its cache (4 and 6 tokens) and attends to it and itself
    assert e.account(1, []) == (12, 1, 3, 0, 16)
    assert e.rows[-1][-3:] == (0, 10, 12)
    e.release(1)
    assert list(e.finishes[-1]) == [1, 1, 7, 7, 8]
    assert e.finished == 2 and list(e.running) == [0]


def test_the_engine_preempts_the_latest_and_recomputes_it():
    """8 slots in blocks of 2: two 6-token sequences cannot both grow past 4 tokens."""
    reqs = workloads.Requests(np.array([1, 1]), np.array([5, 5]), np.zeros(2, dtype=int))
    e = engine.KVEngine(reqs, "paged", 8, 8, block_size=2, watermark=0)
    res = e.run(check=True)
    # at step 3 request 0 needs a third block and none is free: request 1, admitted last, is
    # preempted with 4 tokens stored; it returns as a 4-token prompt once request 0 is done
    assert res.preemptions == 1 and res.recomputed_tokens == 4
    assert list(res.finishes["request"]) == [0, 1]
    assert list(res.finishes["step"]) == [4, 6]
    assert res.timeline["running"].sum() == reqs.output.sum()


def test_a_reservation_never_grows():
    e = engine.KVEngine(_tiny_queue(), "oracle", 32, 16)
    e.arrive(0)
    joined = e.admit(0)
    # the buddy allocator rounds 6, 7 and 3 up to 8, 8 and 4 slots at aligned addresses
    assert [(s.reserve, s.address, 1 << s.order) for s in joined] == \
        [(6, 0, 8), (7, 8, 8), (3, 16, 4)]
    # tokens, room for future tokens, none beyond the final length, rounding, free
    assert e.account(0, joined) == (13, 3, 0, 4, 12)
    assert list(e.memory.due(1)) == []


# -- invariants, verified at every step ------------------------------------------------------

@pytest.mark.parametrize("arrival_rate", [None, 0.2])
@pytest.mark.parametrize("allocator", memory.ALLOCATORS)
def test_allocator_invariants_hold_at_every_step(allocator, arrival_rate):
    """check=True rebuilds the memory map every step and fails if a block is owned twice,
    a token is stored twice or not at all, memory is exceeded, or memory is not returned."""
    reqs = small_requests(arrival_rate=arrival_rate)
    res = engine.simulate(reqs, allocator, **SMALL, block_size=8, check=True)
    assert len(res.finishes) == len(reqs)
    assert sorted(res.finishes["request"]) == list(range(len(reqs)))
    assert (res.finishes["stored"] == res.finishes["final_length"]).all()
    tl = res.timeline
    assert (tl[list(memory.CATEGORIES)].sum(axis=1) == SMALL["capacity_tokens"]).all()
    assert (tl[list(memory.CATEGORIES)] >= 0).all().all()


def test_paged_preemption_is_exercised_and_keeps_every_token():
    reqs = small_requests(n=60)
    res = engine.simulate(reqs, "paged", **SMALL, block_size=8, watermark=0, check=True)
    assert res.preemptions > 0 and res.recomputed_tokens > 0
    assert len(res.finishes) == 60
    # recomputation rebuilds the cache of every token already generated: no output token is
    # generated twice (each running sequence makes one token per step)
    assert res.timeline["running"].sum() == reqs.output.sum()


def test_the_checker_catches_a_block_owned_twice():
    a, b = memory.Seq(0, 3, 10, 0, 0), memory.Seq(1, 3, 10, 0, 1)
    a.blocks, b.blocks = [0], [0]
    with pytest.raises(AssertionError, match="owned twice"):
        memory.PagedMemory(64, 8, 0.0, 16).layout({0: a, 1: b}, 0, False)
    a.address, a.order, a.reserve = 0, 4, 10
    b.address, b.order, b.reserve = 8, 3, 8
    with pytest.raises(AssertionError, match="overlaps"):
        memory.ContiguousMemory("oracle", 64, 16).layout({0: a, 1: b}, 0, False)


def test_the_oracle_is_exactly_full_when_each_request_finishes():
    reqs = small_requests(seed=3)
    res = engine.simulate(reqs, "oracle", **SMALL)
    f = res.finishes
    assert (f["held"] == f["final_length"]).all() and (f["stored"] == f["held"]).all()
    # its only waste is room for tokens not generated yet: no internal fragmentation ever,
    # and the reserved share is exactly what the running requests still have to write
    assert (res.timeline["internal"] == 0).all()
    assert res.timeline["reserved"].min() >= 0


def test_max_and_pow2_reserve_more_than_they_use():
    reqs = small_requests(seed=3)
    for allocator in ("max", "pow2"):
        res = engine.simulate(reqs, allocator, **SMALL)
        assert (res.finishes["held"] >= res.finishes["final_length"]).all()
        assert res.timeline["internal"].sum() > 0
    held = engine.simulate(reqs, "max", **SMALL).finishes["held"]
    assert (held == SMALL["max_len"]).all()


@pytest.mark.parametrize("block_size", [1, 4, 16, 64])
def test_paging_wastes_less_than_one_block_per_sequence(block_size):
    reqs = small_requests(seed=5, n=80)
    res = engine.simulate(reqs, "paged", capacity_tokens=4096, max_len=256, block_size=block_size)
    tl = res.timeline[res.timeline["running"] > 0]
    unused = tl["reserved"] + tl["internal"]
    assert (unused < block_size * tl["running"]).all()
    assert (unused <= (block_size - 1) * tl["running"]).all()


# -- determinism ------------------------------------------------------------------------------

def test_results_are_deterministic_per_seed():
    a = engine.simulate(small_requests(seed=7), "paged", **SMALL).timeline
    b = engine.simulate(small_requests(seed=7), "paged", **SMALL).timeline
    c = engine.simulate(small_requests(seed=8), "paged", **SMALL).timeline
    pd.testing.assert_frame_equal(a, b)
    assert not a.equals(c)
    r1 = workloads.sample_requests(workloads.workload("ShareGPT"), 50, 2048, seed=11,
                                   arrival_rate=0.5)
    r2 = workloads.sample_requests(workloads.workload("ShareGPT"), 50, 2048, seed=11,
                                   arrival_rate=0.5)
    assert all(np.array_equal(getattr(r1, k), getattr(r2, k))
               for k in ("prompt", "output", "arrival"))


def test_lengths_keep_the_papers_means_and_fit_the_context():
    wl = workloads.workload("ShareGPT")
    assert (wl.input_mean_tokens, wl.output_mean_tokens) == (161.31, 337.99)
    reqs = workloads.sample_requests(wl, 20_000, 2048, seed=1)
    assert (reqs.final_length <= 2048).all() and reqs.prompt.min() >= 1
    assert reqs.output.min() >= 1
    # the cut at 2,048 tokens trims a few percent off the lognormal's means
    assert reqs.prompt.mean() == pytest.approx(161.31, rel=0.06)
    assert reqs.output.mean() == pytest.approx(337.99, rel=0.06)
    flat = workloads.sample_requests(workloads.workload("Alpaca", sigma=0), 10, 2048, seed=1)
    assert set(flat.prompt) == {19} and set(flat.output) == {58}


# -- the paper's setting ---------------------------------------------------------------------

def test_paper_memory_is_table1_slots():
    d = ch.paper_deployment()
    assert d.kv_bytes_per_token == papers.claim("opt13b_kv_per_token") * 1024
    assert round(d.kv_capacity_tokens, -2) == papers.claim("table1_13b_kv_slots")
    assert d.kv_memory_bytes == 12 * GiB
    assert d.model.weight_bytes == 26e9 and d.max_context_tokens == ch.SETTING.max_len == 2048


def test_orca_max_batch_is_the_papers_memory_arithmetic():
    d = ch.paper_deployment()
    max_len = int(papers.claim("orca_max_reservation"))
    reqs = ch.SETTING.requests(n=150)
    res = engine.simulate(reqs, "max", d.kv_capacity_tokens, max_len)
    w = res.in_window()
    assert (w["running"] == d.kv_capacity_tokens // max_len).all()
    assert d.kv_capacity_tokens // max_len == papers.claim("fig13_sharegpt_orca_max")
    # the memory left over by seven 2,048-token chunks is Fig. 2's grey segment
    assert res.shares()["external"] == pytest.approx(
        papers.claim("fig2_orca_max_external_fragmentation_and_others") / 100, abs=0.001)


def test_paging_holds_tokens_in_almost_all_of_the_memory():
    d = ch.paper_deployment()
    reqs = ch.SETTING.requests(n=200)
    res = engine.simulate(reqs, "paged", d.kv_capacity_tokens, 2048)
    assert 1 - res.utilisation < papers.claim("blog_paged_waste", "high") / 100


def test_h100_deployment_arithmetic():
    d = ch.h100_deployment()
    assert d.kv_bytes_per_token == 327_680
    assert d.model.weight_bytes == pytest.approx(70.5537e9)
    # an "80 GB" H100 holds 80 GiB: the capacity is binary, the weights' bytes are bytes
    assert d.kv_memory_bytes == pytest.approx(80 * GiB * (1 - deployment.paper_overhead_share())
                                              - 70.5537e9)
    assert d.roof.flops_per_s == 1978.9e12 and "FP8" in d.roof.flops_kind  # FP8 weights, roof
    assert d.kv_capacity_tokens == int(d.kv_memory_bytes // 327_680)
    assert deployment.paper_overhead_share() == pytest.approx(
        (40 * GiB - 26e9 - 12 * GiB) / (40 * GiB))


def test_step_seconds_is_a_roofline():
    d = ch.h100_deployment()
    bw, flops_per_s = d.roof.bandwidth_bytes_per_s, d.roof.flops_per_s
    # one decode token against 1,000 cached tokens: bytes dominate
    clock = step_model(d, ROOFLINE)
    t = float(clock.seconds(1, 1000, 1001, 1)[0])
    assert t == pytest.approx((d.model.weight_bytes + 1000 * 327_680) / bw)
    # a 4,096-token prompt: FLOPs dominate, the weights' matmuls in their FP8 and attention
    # in the 16-bit arithmetic of its 16-bit cache, as chapters 7 and 9 count it
    pairs = 4096 * 4097 // 2
    t = float(clock.seconds(4096, 0, pairs, 1)[0])
    matmul, attention = 2 * d.model.params * 4096, 4 * 80 * 64 * 128 * pairs
    fp16 = roofline.chip_roof(ch.SETTING.h100_chip, "fp16").flops_per_s
    assert t == pytest.approx(matmul / flops_per_s + attention / fp16)
    assert matmul / flops_per_s > d.model.weight_bytes / bw


def test_the_clock_is_the_books_one_roofline_of_a_step():
    """Each step of a run costs what the book's one step model, at ROOFLINE, says (the step
    that times chapter 7's engine too)."""
    d = ch.paper_deployment()
    res = engine.simulate(ch.SETTING.requests(n=60), "paged", d.kv_capacity_tokens, 2048)
    tl = result.timed(res, d)
    decode = tl["running"] - tl["admitted"]
    expect = step_model(d, ROOFLINE).seconds(decode + tl["prefill_tokens"], tl["context_tokens"],
                                             tl["attended_pairs"], tl["running"])
    assert np.array_equal(tl["step_s"].to_numpy(), np.asarray(expect))
    assert tl["time_s"].iloc[1] == tl["step_s"].iloc[0]


def test_throughput_grows_with_the_batch_paging_allows():
    d = ch.paper_deployment()
    df, _ = ch.compare(d, workloads.workload("ShareGPT"), n_requests=200, max_len=2048)
    by = df.set_index("allocator")
    assert by.loc["paged", "mean_batch"] > by.loc["oracle", "mean_batch"] > \
        by.loc["max", "mean_batch"]
    assert by.loc["paged", "tokens_per_s"] > by.loc["oracle", "tokens_per_s"]
    assert (by["throughput_gain"] >= 1).all()


def test_strips_cover_the_memory_once():
    d = ch.paper_deployment()
    res = ch.run(d, workloads.workload("Alpaca"), "paged", n_requests=100, max_len=2048,
                 snapshot=True)
    s = ch.strips({"paged": res})
    assert s["start"].iloc[0] == 0 and s["end"].iloc[-1] == d.kv_capacity_tokens
    assert (s["start"].iloc[1:].to_numpy() == s["end"].iloc[:-1].to_numpy()).all()
    step = res.layout["step"]
    tokens = s[s["category"] == memory.CATEGORY_LABELS["token"]]["tokens"].sum()
    assert tokens == res.timeline.set_index("step").loc[step, "token"]


def test_chapter_runs_are_computed_once_and_handed_out_as_copies():
    a = ch.paper_reproduction()
    a.loc[:, "token"] = -1.0
    b = ch.paper_reproduction()
    assert (b["token"] > 0).all()
    assert ch.paper_run()[1] is not ch.paper_run()[1]  # a fresh dict of the same runs
    assert ch.paper_run()[1]["paged"] is ch.paper_run()[1]["paged"]


def test_fig2_gaps_set_each_labelled_segment_beside_the_simulation():
    repro = pd.DataFrame([
        {"allocator": "max", "label": "Orca (Max)", "token": 0.25, "reserved": 0.10,
         "internal": 0.55, "external": 0.08, "free": 0.02},
        {"allocator": "paged", "label": "Paged (vLLM)", "token": 0.97, "reserved": 0.01,
         "internal": 0.0, "external": 0.0, "free": 0.02}])
    g = ch.fig2_gaps(repro).set_index(["allocator", "segment"])
    # Orca (Max): all four segments are labelled in Fig. 2 (20.4, 13.3, 57.3, 8.9)
    assert g.loc[("max", "Token states"), "gap_points"] == pytest.approx(25 - 20.4)
    assert g.loc[("max", "Reserved for future tokens"), "gap_points"] == pytest.approx(10 - 13.3)
    assert g.loc[("max", "Internal fragmentation"), "gap_points"] == pytest.approx(55 - 57.3)
    # "external fragmentation & others": the simulation's external and free memory together
    assert g.loc[("max", "External fragmentation"), "gap_points"] == pytest.approx(10 - 8.9)
    # vLLM's bar labels only its token states
    assert list(g.loc["paged"].index) == ["Token states"]
    assert g.loc[("paged", "Token states"), "gap_points"] == pytest.approx(97 - 96.3)


def test_a_defensible_spread_fits_both_figures():
    fit = pd.DataFrame({"sigma": [0.25, 0.5, 0.75, 1.0, 1.25],
                        "share_gap_points": [5.0, 3.0, 2.8, 5.1, 7.0],
                        "batch_gap": [0.45, 0.29, 0.10, 0.12, 0.20]})
    # Fig. 2 alone would allow 0.25 to 1.0 (gaps within 5.6 points); Fig. 13 (within 0.20)
    # rules out 0.25 and 0.5, and Fig. 2 rules out 1.25
    assert list(ch.defensible_spreads(fit)["sigma"]) == [0.75, 1.0]
    assert list(ch.defensible_spreads(fit, factor=1)["sigma"]) == [0.75]
    with pytest.raises(ValueError, match="factor"):
        ch.defensible_spreads(fit, factor=0.5)


def test_mean_standard_error_of_lognormal_lengths():
    # sigma = 1: the standard deviation is sqrt(e - 1) = 1.3108 times the mean
    assert workloads.mean_standard_error(161.31, 1.0, 1000) == pytest.approx(
        161.31 * 1.31083 / math.sqrt(1000), rel=1e-4)
    assert workloads.mean_standard_error(2048, 1.0, 600) == pytest.approx(109.6, abs=0.1)
    assert workloads.mean_standard_error(500, 0.0, 10) == 0.0  # identical lengths
    # the sampler agrees: means of many seeds spread by about this much
    wl = workloads.RequestLengths("test", 200.0, 100.0, 1.0)
    means = [workloads.sample_requests(wl, 400, 10**6, s).prompt.mean() for s in range(300)]
    assert np.std(means) == pytest.approx(workloads.mean_standard_error(200.0, 1.0, 400),
                                          rel=0.15)
    for kwargs, field in [({"mean_tokens": 0}, "mean_tokens"), ({"sigma": -1}, "sigma"),
                          ({"n": 0}, "n")]:
        with pytest.raises(ValueError, match=field):
            workloads.mean_standard_error(**({"mean_tokens": 100, "sigma": 1, "n": 10} | kwargs))


# -- bad input --------------------------------------------------------------------------------

@pytest.mark.parametrize("block_size", [0, -16, 2.5, True])
def test_block_size_must_be_a_positive_whole_number(block_size):
    with pytest.raises(ValueError, match="block_size"):
        engine.simulate(small_requests(), "paged", **SMALL, block_size=block_size)


@pytest.mark.parametrize("allocator", memory.ALLOCATORS)
def test_memory_smaller_than_one_sequence_is_rejected(allocator):
    with pytest.raises(ValueError, match="smaller than one sequence"):
        engine.simulate(small_requests(), allocator, capacity_tokens=200, max_len=256)


def test_the_buddy_rounding_counts_when_checking_room():
    # 300 tokens hold a 256-token sequence contiguously, but not 512 slots for max_len 300
    reqs = workloads.Requests(np.array([10]), np.array([10]), np.array([0]))
    engine.simulate(reqs, "oracle", capacity_tokens=300, max_len=256)
    with pytest.raises(ValueError, match="power of two"):
        engine.simulate(reqs, "oracle", capacity_tokens=300, max_len=300)


@pytest.mark.parametrize("kwargs,field", [
    (dict(allocator="lru"), "allocator"),
    (dict(capacity_tokens=0), "capacity_tokens"),
    (dict(max_len=1), "max_len"),
    (dict(watermark=1.5), "watermark"),
    (dict(watermark=-0.1), "watermark"),
])
def test_bad_simulation_input_is_named(kwargs, field):
    args = dict(requests=small_requests(), allocator="paged", **SMALL)
    args.update(kwargs)
    with pytest.raises(ValueError, match=field):
        engine.simulate(**args)


def test_a_request_longer_than_max_len_is_rejected():
    reqs = workloads.Requests(np.array([200]), np.array([100]), np.array([0]))
    with pytest.raises(ValueError, match="request 0"):
        engine.simulate(reqs, "max", **SMALL)


def test_bad_workloads_and_deployments():
    with pytest.raises(ValueError, match="workload"):
        workloads.workload("LMSYS")
    with pytest.raises(ValueError, match="sigma"):
        workloads.workload("ShareGPT", sigma=-1)
    with pytest.raises(ValueError, match="n must"):
        workloads.sample_requests(workloads.workload(), 0, 2048, seed=1)
    with pytest.raises(ValueError, match="no room for a KV cache"):
        ch.h100_deployment(ch.Setting(h100_weights="BF16"))
    with pytest.raises(ValueError, match="unknown weight format"):
        ch.h100_deployment(ch.Setting(h100_weights="FP9"))
    with pytest.raises(ValueError, match="no claim"):
        papers.claim("fig99")
    with pytest.raises(ValueError, match="states no number"):
        papers.claim("vllm_near_zero_waste")
    with pytest.raises(ValueError, match="no model"):
        ch.h100_deployment(ch.Setting(h100_model="GPT-5"))
    assert math.isfinite(papers.claim("vllm_throughput_gain", "high"))
