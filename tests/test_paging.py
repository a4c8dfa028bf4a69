"""The KV allocator simulation: invariants, the paper's arithmetic, determinism, bad input."""

from __future__ import annotations

import math

import numpy as np
import pandas as pd
import pytest

from napkin import paging as pg
from napkin.units import GiB

SMALL = dict(capacity_tokens=700, max_len=256)


def small_requests(seed=1, n=40, arrival_rate=None, sigma=1.0):
    wl = pg.Workload("test", 40.0, 80.0, sigma)
    return pg.sample_requests(wl, n, SMALL["max_len"], seed, arrival_rate=arrival_rate)


# -- the buddy allocator ---------------------------------------------------------------------

def test_buddy_splits_rounds_up_and_merges_back():
    b = pg.Buddy(15_728)  # the paper's slot count: 8192 + 4096 + 2048 + 1024 + 256 + 64 + 32 + 16
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
    b = pg.Buddy(1000)
    got = []
    while (c := b.alloc(1)) is not None:
        got.append(c)
    assert len(got) == 1000 and max(a for a, _ in got) == 999


# -- invariants, verified at every step ------------------------------------------------------

@pytest.mark.parametrize("arrival_rate", [None, 0.2])
@pytest.mark.parametrize("allocator", pg.ALLOCATORS)
def test_allocator_invariants_hold_at_every_step(allocator, arrival_rate):
    """check=True rebuilds the memory map every step and fails if a block is owned twice,
    a token is stored twice or not at all, memory is exceeded, or memory is not returned."""
    reqs = small_requests(arrival_rate=arrival_rate)
    res = pg.simulate(reqs, allocator, **SMALL, block_size=8, check=True)
    assert len(res.finishes) == len(reqs)
    assert sorted(res.finishes["request"]) == list(range(len(reqs)))
    assert (res.finishes["stored"] == res.finishes["final_length"]).all()
    tl = res.timeline
    assert (tl[list(pg.CATEGORIES)].sum(axis=1) == SMALL["capacity_tokens"]).all()
    assert (tl[list(pg.CATEGORIES)] >= 0).all().all()


def test_paged_preemption_is_exercised_and_keeps_every_token():
    reqs = small_requests(n=60)
    res = pg.simulate(reqs, "paged", **SMALL, block_size=8, watermark=0, check=True)
    assert res.preemptions > 0 and res.recomputed_tokens > 0
    assert len(res.finishes) == 60
    # recomputation rebuilds the cache of every token already generated: no output token is
    # generated twice (each running sequence makes one token per step)
    assert res.timeline["running"].sum() == reqs.output.sum()


def test_the_checker_catches_a_block_owned_twice():
    a, b = pg._Seq(0, 3, 10, 0, 0), pg._Seq(1, 3, 10, 0, 1)
    a.blocks, b.blocks = [0], [0]
    with pytest.raises(AssertionError, match="owned twice"):
        pg._layout("paged", {0: a, 1: b}, 0, 64, 8, 8, False)
    a.address, a.order, a.reserve = 0, 4, 10
    b.address, b.order, b.reserve = 8, 3, 8
    with pytest.raises(AssertionError, match="overlaps"):
        pg._layout("oracle", {0: a, 1: b}, 0, 64, 0, 8, False)


def test_the_oracle_is_exactly_full_when_each_request_finishes():
    reqs = small_requests(seed=3)
    res = pg.simulate(reqs, "oracle", **SMALL)
    f = res.finishes
    assert (f["held"] == f["final_length"]).all() and (f["stored"] == f["held"]).all()
    # its only waste is room for tokens not generated yet: no internal fragmentation ever,
    # and the reserved share is exactly what the running requests still have to write
    assert (res.timeline["internal"] == 0).all()
    assert res.timeline["reserved"].min() >= 0


def test_max_and_pow2_reserve_more_than_they_use():
    reqs = small_requests(seed=3)
    for allocator in ("max", "pow2"):
        res = pg.simulate(reqs, allocator, **SMALL)
        assert (res.finishes["held"] >= res.finishes["final_length"]).all()
        assert res.timeline["internal"].sum() > 0
    held = pg.simulate(reqs, "max", **SMALL).finishes["held"]
    assert (held == SMALL["max_len"]).all()


@pytest.mark.parametrize("block_size", [1, 4, 16, 64])
def test_paging_wastes_less_than_one_block_per_sequence(block_size):
    reqs = small_requests(seed=5, n=80)
    res = pg.simulate(reqs, "paged", capacity_tokens=4096, max_len=256, block_size=block_size)
    tl = res.timeline[res.timeline["running"] > 0]
    unused = tl["reserved"] + tl["internal"]
    assert (unused < block_size * tl["running"]).all()
    assert (unused <= (block_size - 1) * tl["running"]).all()


# -- determinism ------------------------------------------------------------------------------

def test_results_are_deterministic_per_seed():
    a = pg.simulate(small_requests(seed=7), "paged", **SMALL).timeline
    b = pg.simulate(small_requests(seed=7), "paged", **SMALL).timeline
    c = pg.simulate(small_requests(seed=8), "paged", **SMALL).timeline
    pd.testing.assert_frame_equal(a, b)
    assert not a.equals(c)
    r1 = pg.sample_requests(pg.workload("ShareGPT"), 50, 2048, seed=11, arrival_rate=0.5)
    r2 = pg.sample_requests(pg.workload("ShareGPT"), 50, 2048, seed=11, arrival_rate=0.5)
    assert all(np.array_equal(getattr(r1, k), getattr(r2, k))
               for k in ("prompt", "output", "arrival"))


def test_lengths_keep_the_papers_means_and_fit_the_context():
    wl = pg.workload("ShareGPT")
    assert (wl.input_mean_tokens, wl.output_mean_tokens) == (161.31, 337.99)
    reqs = pg.sample_requests(wl, 20_000, 2048, seed=1)
    assert (reqs.final_length <= 2048).all() and reqs.prompt.min() >= 1
    assert reqs.output.min() >= 1
    # the cut at 2,048 tokens trims a few percent off the lognormal's means
    assert reqs.prompt.mean() == pytest.approx(161.31, rel=0.06)
    assert reqs.output.mean() == pytest.approx(337.99, rel=0.06)
    flat = pg.sample_requests(pg.workload("Alpaca", sigma=0), 10, 2048)
    assert set(flat.prompt) == {19} and set(flat.output) == {58}


# -- the paper's setting ---------------------------------------------------------------------

def test_paper_memory_is_table1_slots():
    d = pg.paper_deployment()
    assert d.kv_bytes_per_token == pg.paper_claim("opt13b_kv_per_token") * 1024
    assert round(d.capacity_tokens, -2) == pg.paper_claim("table1_13b_kv_slots")
    assert d.kv_memory_bytes == 12 * GiB


def test_orca_max_batch_is_the_papers_memory_arithmetic():
    d = pg.paper_deployment()
    max_len = int(pg.paper_claim("orca_max_reservation"))
    reqs = pg.sample_requests(pg.workload("ShareGPT"), 150, max_len)
    res = pg.simulate(reqs, "max", d.capacity_tokens, max_len)
    w = res.in_window()
    assert (w["running"] == d.capacity_tokens // max_len).all()
    assert d.capacity_tokens // max_len == pg.paper_claim("fig13_sharegpt_orca_max")
    # the memory left over by seven 2,048-token chunks is Fig. 2's grey segment
    assert res.shares()["external"] == pytest.approx(
        pg.paper_claim("fig2_orca_max_external_fragmentation_and_others") / 100, abs=0.001)


def test_paging_holds_tokens_in_almost_all_of_the_memory():
    d = pg.paper_deployment()
    reqs = pg.sample_requests(pg.workload("ShareGPT"), 200, 2048)
    res = pg.simulate(reqs, "paged", d.capacity_tokens, 2048)
    assert 1 - res.utilisation < pg.paper_claim("blog_paged_waste", "high") / 100


def test_h100_deployment_arithmetic():
    d = pg.h100_deployment()
    assert d.kv_bytes_per_token == 327_680
    assert d.weight_bytes == pytest.approx(70.5537e9)
    # an "80 GB" H100 holds 80 GiB: the capacity is binary, the weights' bytes are bytes
    assert d.kv_memory_bytes == pytest.approx(80 * GiB * (1 - pg.paper_overhead_share())
                                              - 70.5537e9)
    assert d.flops_per_s == 1978.9e12 and "FP8" in d.flops_kind  # 8-bit weights, FP8 roof
    assert d.capacity_tokens == int(d.kv_memory_bytes // 327_680)
    assert pg.paper_overhead_share() == pytest.approx((40 - 26 - 12) / 40)


def test_step_seconds_is_a_roofline():
    d = pg.h100_deployment()
    # one decode token against 1,000 cached tokens: bytes dominate
    t = pg.step_seconds(d, 1, 1000, 1001)
    assert t == pytest.approx((d.weight_bytes + 1000 * 327_680) / d.bandwidth_bytes_per_s)
    # a 4,096-token prompt: FLOPs dominate
    pairs = 4096 * 4097 // 2
    t = pg.step_seconds(d, 4096, 0, pairs)
    flops = 2 * d.n_params * 4096 + 4 * 80 * 64 * 128 * pairs
    assert t == pytest.approx(flops / d.flops_per_s)
    assert flops / d.flops_per_s > d.weight_bytes / d.bandwidth_bytes_per_s


def test_throughput_grows_with_the_batch_paging_allows():
    d = pg.paper_deployment()
    df, _ = pg.compare(d, pg.workload("ShareGPT"), n_requests=200, max_len=2048)
    by = df.set_index("allocator")
    assert by.loc["paged", "mean_batch"] > by.loc["oracle", "mean_batch"] > \
        by.loc["max", "mean_batch"]
    assert by.loc["paged", "tokens_per_s"] > by.loc["oracle", "tokens_per_s"]
    assert (by["throughput_gain"] >= 1).all()


def test_strips_cover_the_memory_once():
    d = pg.paper_deployment()
    res = pg.run(d, pg.workload("Alpaca"), "paged", n_requests=100, max_len=2048, snapshot=True)
    s = pg.strips({"paged": res})
    assert s["start"].iloc[0] == 0 and s["end"].iloc[-1] == d.capacity_tokens
    assert (s["start"].iloc[1:].to_numpy() == s["end"].iloc[:-1].to_numpy()).all()
    step = res.layout["step"]
    tokens = s[s["category"] == pg.CATEGORY_LABELS["token"]]["tokens"].sum()
    assert tokens == res.timeline.set_index("step").loc[step, "token"]


# -- bad input --------------------------------------------------------------------------------

@pytest.mark.parametrize("block_size", [0, -16, 2.5, True])
def test_block_size_must_be_a_positive_whole_number(block_size):
    with pytest.raises(ValueError, match="block_size"):
        pg.simulate(small_requests(), "paged", **SMALL, block_size=block_size)


@pytest.mark.parametrize("allocator", pg.ALLOCATORS)
def test_memory_smaller_than_one_sequence_is_rejected(allocator):
    with pytest.raises(ValueError, match="smaller than one sequence"):
        pg.simulate(small_requests(), allocator, capacity_tokens=200, max_len=256)


def test_the_buddy_rounding_counts_when_checking_room():
    # 300 tokens hold a 256-token sequence contiguously, but not 512 slots for max_len 300
    reqs = pg.Requests(np.array([10]), np.array([10]), np.array([0]))
    pg.simulate(reqs, "oracle", capacity_tokens=300, max_len=256)
    with pytest.raises(ValueError, match="power of two"):
        pg.simulate(reqs, "oracle", capacity_tokens=300, max_len=300)


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
        pg.simulate(**args)


def test_a_request_longer_than_max_len_is_rejected():
    reqs = pg.Requests(np.array([200]), np.array([100]), np.array([0]))
    with pytest.raises(ValueError, match="request 0"):
        pg.simulate(reqs, "max", **SMALL)


def test_bad_workloads_and_deployments():
    with pytest.raises(ValueError, match="workload"):
        pg.workload("LMSYS")
    with pytest.raises(ValueError, match="sigma"):
        pg.workload("ShareGPT", sigma=-1)
    with pytest.raises(ValueError, match="n must"):
        pg.sample_requests(pg.workload(), 0, 2048)
    with pytest.raises(ValueError, match="no room for a KV cache"):
        pg.h100_deployment(weight_format="BF16")
    with pytest.raises(ValueError, match="unknown weight format"):
        pg.h100_deployment(weight_format="FP9")
    with pytest.raises(ValueError, match="no claim"):
        pg.paper_claim("fig99")
    with pytest.raises(ValueError, match="states no number"):
        pg.paper_claim("vllm_near_zero_waste")
    with pytest.raises(ValueError, match="no model"):
        pg.model_config("GPT-5")
    assert math.isfinite(pg.paper_claim("vllm_throughput_gain", "high"))
