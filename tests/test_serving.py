"""napkin.roofline's mixed step and napkin.serving's simulation: invariants, not outputs."""

from __future__ import annotations

import numpy as np
import pytest

from napkin import catalog, paging, roofline
from napkin import serving as sv


@pytest.fixture(scope="module")
def server():
    return sv.llama_server()


@pytest.fixture(scope="module")
def traffic():
    # busy enough that decodes and prefills share steps, small enough to run in a second
    return sv.traffic(12.0, 150, 2048, 128, seed=3)


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
    d = paging.h100_deployment()
    assert float(paging.step_seconds(d, 4096, 0, 4096 * 4097 // 2)) == \
        float(roofline.step_seconds(d.model, d.roof, 4096, 0, 4096 * 4097 // 2))


# -- the simulation ---------------------------------------------------------------------------

def _runs(traffic, server):
    return [sv.simulate(traffic, server, "prefill_first", compose=True),
            sv.simulate(traffic, server, "chunked", 512, compose=True),
            sv.simulate(traffic, server, "chunked", 2048, instances=2, compose=True)]


def test_every_request_completes_in_order(traffic, server):
    runs = _runs(traffic, server) + [sv.disaggregate(traffic, server, 1, 2, 50e9)]
    for run in runs:
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
    cost = server.cost
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
    plain, small = sv.simulate(traffic, server, "prefill_first"), \
        sv.simulate(traffic, server, "chunked", 512)
    assert (small.steps["prefill_tokens"] + small.steps["decode_tokens"]).max() <= 512
    assert plain.gaps.max() > small.gaps.max()


def test_deterministic_per_seed(server):
    a = sv.traffic(10.0, 60, 1000, 100, seed=11)
    b = sv.traffic(10.0, 60, 1000, 100, seed=11)
    c = sv.traffic(10.0, 60, 1000, 100, seed=12)
    assert (a.prompt == b.prompt).all() and (a.arrival_s == b.arrival_s).all()
    assert not (a.prompt == c.prompt).all()
    ra, rb = (sv.simulate(t, server, "chunked", 1024) for t in (a, b))
    assert ra.requests.equals(rb.requests) and (ra.gaps == rb.gaps).all()


def test_disaggregation_moves_the_cache_over_the_link(server):
    tr = sv.traffic(2.0, 30, 4000, 50, seed=5)
    fast = sv.disaggregate(tr, server, 1, 1, 50e9)
    slow = sv.disaggregate(tr, server, 1, 1, 0.5e9)
    # the first token is the prefill instance's: the link cannot change it
    assert np.allclose(fast.requests["first_token_s"], slow.requests["first_token_s"])
    # ... but the second token waits for the cache
    gap = sv.transfer_seconds(server, tr.prompt, 0.5e9)
    assert (slow.requests["finish_s"] - slow.requests["first_token_s"]
            >= gap * (tr.output > 1) - 1e-9).all()
    assert slow.gaps.max() > fast.gaps.max()


def test_bad_input(server, traffic):
    with pytest.raises(ValueError, match="policy"):
        sv.simulate(traffic, server, "fastest")
    with pytest.raises(ValueError, match="budget"):
        sv.simulate(traffic, server, "chunked")
    with pytest.raises(ValueError, match="budget"):
        sv.simulate(traffic, server, "chunked", 0)
    with pytest.raises(ValueError, match="rate_per_s"):
        sv.traffic(0, 10, 100, 10)
    with pytest.raises(ValueError, match="link_bytes_per_s"):
        sv.disaggregate(traffic, server, 1, 1, 0)
    with pytest.raises(ValueError, match="prefill"):
        sv.disaggregate(traffic, server, 0, 1, 50e9)
    with pytest.raises(ValueError, match="no room"):
        sv.llama_server(chip="H100 SXM", gpus=1)
    tiny = sv.Server("tiny", server.model, server.roof, kv_capacity_tokens=100)
    with pytest.raises(ValueError, match="cannot fit"):
        sv.simulate(traffic, tiny, "chunked", 512)


def test_max_rate_interpolates_the_attainment_curve():
    import pandas as pd
    sweep = pd.DataFrame({"config": "x", "rate_per_s": [1.0, 2.0, 3.0],
                          "attainment": [1.0, 0.95, 0.5]})
    assert sv.max_rate(sweep, "x", 0.9) == pytest.approx(2 + 0.05 / 0.45)
    assert np.isnan(sv.max_rate(sweep.assign(attainment=0.1), "x", 0.9))
    assert sv.max_rate(sweep.assign(attainment=1.0), "x", 0.9) == 3.0
