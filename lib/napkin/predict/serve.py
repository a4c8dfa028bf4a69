"""Serving scenarios built from the step model: a static batch, continuous batching as fast as
memory allows (MLPerf Offline), under latency limits with random arrivals (MLPerf Server and
Interactive), and a fixed number of users who wait for each answer (a closed loop).

Every function takes :class:`~napkin.predict.engines.Constants` and arrays, one element per
case, and returns arrays.

**Queueing.** Under Poisson arrivals the first token waits for the prefills of the requests
ahead of it. The queue is taken as M/D/1: Poisson arrivals, and a deterministic service, the
prefill of one prompt of the workload's mean length, ``s`` seconds of the engine's arithmetic;
the load is ``rho = lambda s`` (``lambda`` = requests per second). Its waiting time is
approximated by an exponential tail of the M/D/1 mean: a request waits at all with
probability ``rho``, and then ``s / (2 (1 - rho))`` on average (half the M/M/1 wait:
Pollaczek-Khinchine with no variance in service), so the 99th percentile wait is
``s / (2 (1 - rho)) ln(rho / 0.01)`` (zero below ``rho = 0.01``). Real prompts vary in length,
which lengthens the tail, and chunked prefill shares steps with decodes, which the service
time already charges.
"""

from __future__ import annotations

import numpy as np

from .calibration import Calibration
from .engines import Constants
from .step import cost, decode_steps_seconds, decode_work, prefill_work, seconds

#: The percentile the latency limits (MLPerf's) are stated at.
TAIL = 0.99
#: Layers' worth of a one-token decode step that one draft of multi-token prediction costs:
#: the MTP module (one more layer) and the output head.
DRAFT_LAYERS = 2


def kv_bytes_per_sequence(c: Constants, depth):
    d = np.asarray(depth, dtype=float)
    return c.kv_bytes_full * d + c.kv_bytes_window * np.minimum(d, c.window)


def inflight_depth(input_tokens, output_tokens, inflight=1.0):
    """Mean cached tokens of the sequences in flight under continuous batching: the prompt
    plus half the answer the sequences in flight are writing. A sequence stays in the batch
    for as many steps as its answer is long, so at a random step the long answers are
    over-represented (the inspection paradox): their mean is ``inflight`` = ``E[o^2] /
    E[o]^2`` times the mean answer (1 where every answer has the same length)."""
    return (np.asarray(input_tokens, dtype=float) +
            np.asarray(inflight, dtype=float) * np.asarray(output_tokens, dtype=float) / 2)


def memory_batch(c: Constants, input_tokens, output_tokens, inflight=1.0):
    """Sequences that fit in each engine's cache memory at the mean depth of continuous
    batching (:func:`inflight_depth`: paged caches hold what a sequence has written)."""
    depth = inflight_depth(input_tokens, output_tokens, inflight)
    return np.floor(c.kv_memory_bytes / np.maximum(kv_bytes_per_sequence(c, depth), 1.0))


def static_batch(c: Constants, batch, input_tokens, output_tokens, cal: Calibration) -> dict:
    """A static batch: ``batch`` prompts prefilled in one step (which gives each its first
    token), then ``output_tokens - 1`` tokens of decode steps at growing depth (with their
    drafting, where the engine drafts). When the caches of the
    whole batch do not fit at full depth, the engine runs as many as fit, then the next
    ``waves`` (NaN where not even one sequence fits)."""
    b = np.asarray(batch, dtype=float)
    i = np.asarray(input_tokens, dtype=float)
    o = np.asarray(output_tokens, dtype=float)
    fit = np.floor(c.kv_memory_bytes / np.maximum(kv_bytes_per_sequence(c, i + o), 1.0))
    fit = np.where(fit >= 1, np.minimum(fit, b), np.nan)
    waves = np.ceil(b / fit)
    last = b - (waves - 1) * fit

    def one(n):
        prefill = seconds(c, prefill_work(c, n, i), cal)
        steps = (o - 1) / c.accepted_tokens
        decode = decode_steps_seconds(c, n, i, steps, cal)
        if np.any(draft_share(c) > 0):
            decode = decode + draft_share(c) * decode_steps_seconds(c, n, i, steps, cal,
                                                                    new_tokens=1)
        return prefill, prefill + decode

    full_prefill, full = one(np.nan_to_num(fit, nan=1.0))
    last_prefill, tail = one(np.nan_to_num(last, nan=1.0))
    e2e = np.where(np.isnan(fit), np.nan, (waves - 1) * full + tail)
    return {"prefill_s": np.where(np.isnan(fit), np.nan, full_prefill), "e2e_s": e2e,
            "waves": waves}


def rank_prompts(c: Constants, prompts):
    """Prompts a step's cost counts: with data-parallel attention a prompt is prefilled on one
    rank while the others wait for it at every layer's all-to-all, so the step lasts as if
    every rank prefilled as many prompts as the busiest one, ``ceil(prompts / dp)``."""
    p = np.asarray(prompts, dtype=float)
    return np.where(c.dp > 1, c.dp * np.ceil(p / c.dp), p)


def draft_share(c: Constants):
    """Multi-token prediction's drafting as a share of a one-token decode step: each of
    ``verify_tokens - 1`` drafts runs the MTP module (one more layer) and the output head,
    costed as :data:`DRAFT_LAYERS` layers' share of the step; 0 without drafts."""
    return (c.verify_tokens - 1) * DRAFT_LAYERS / c.layers


def draft_seconds(c: Constants, batch, depth, cal: Calibration):
    """The drafting in one step of ``batch`` sequences at ``depth`` (:func:`draft_share`)."""
    share = draft_share(c)
    if not np.any(share > 0):
        return 0.0
    return share * seconds(c, decode_work(c, batch, depth, 1), cal)


def decode_step_seconds(c: Constants, batch, depth, cal: Calibration):
    """A step that decodes ``batch`` sequences at ``depth`` and carries no prompt, its
    drafting included (a decode pool's step)."""
    return seconds(c, decode_work(c, batch, depth), cal) + draft_seconds(c, batch, depth, cal)


def steady_step(c: Constants, batch, input_tokens, output_tokens, cal: Calibration,
                inflight=1.0) -> dict:
    """The average step of continuous batching with ``batch`` sequences in flight.

    Each sequence adds a token at the mean depth in flight (:func:`inflight_depth`), and the
    ``q = batch x accepted / output_tokens`` sequences that finish per step (``accepted``:
    tokens a step keeps per sequence, one without drafts) are replaced: their prompts
    are prefilled in the same steps. A step carries whole prompts, ``floor(q)`` of them or one
    more, in the proportion that averages to ``q``; the mean step is the mean of the two
    steps' times, so a rare step with a prompt (compute-bound, and reading every expert of a
    mixture) is not smeared over the cheap decode-only ones. Returns the mean step, which roof
    binds it (of the mean memory and compute times), and the step that carries one more
    prompt (a first token's service time)."""
    b = np.asarray(batch, dtype=float)
    i = np.asarray(input_tokens, dtype=float)
    o = np.asarray(output_tokens, dtype=float)
    q = b * c.accepted_tokens / o
    low = np.floor(q)
    share = q - low
    depth = inflight_depth(i, o, inflight)
    decode = decode_work(c, b, depth)
    few = cost(c, decode + prefill_work(c, rank_prompts(c, low), i), cal)
    more = cost(c, decode + prefill_work(c, rank_prompts(c, low + 1), i), cal)
    step = (1 - share) * few.seconds + share * more.seconds + draft_seconds(c, b, depth, cal)
    return {"step_s": step, "tpot_s": step / c.accepted_tokens,
            "bound": few.blend(more, share).bound, "first_token_s": more.seconds}


def continuous(c: Constants, batch, input_tokens, output_tokens, cal: Calibration,
               inflight=1.0) -> dict:
    """Continuous batching with ``batch`` sequences in flight (:func:`steady_step`): the mean
    step, output tokens per second of each engine, which roof binds, the step that carries a
    prompt, and the prefill time of one prompt alone (the queue's service time)."""
    b = np.asarray(batch, dtype=float)
    i = np.asarray(input_tokens, dtype=float)
    run = steady_step(c, b, i, output_tokens, cal, inflight)
    alone = cost(c, prefill_work(c, 1, i), cal)
    return {**run, "tokens_per_s": b / run["tpot_s"],
            "prefill_s": alone.roof_s}


def first_token_tail(service_s, prefill_s, rate_per_s, tail: float = TAIL):
    """The ``tail`` percentile of the first token under Poisson arrivals at ``rate_per_s``:
    its own service plus the M/D/1 waiting-time tail of the prefill work (module docstring);
    inf where the prefill load reaches 1."""
    rho = np.asarray(rate_per_s, dtype=float) * np.asarray(prefill_s, dtype=float)
    miss = 1.0 - tail
    with np.errstate(divide="ignore", invalid="ignore"):
        wait = np.where(rho > miss, prefill_s / (2 * (1 - rho)) * np.log(rho / miss), 0.0)
    return np.where(rho < 1, service_s + wait, np.inf)


def under_limits(c: Constants, input_tokens, output_tokens, ttft_limit_s, tpot_limit_s,
                 cal: Calibration, max_batch, inflight=1.0) -> dict:
    """The largest batch (at most ``max_batch``) whose 99th-percentile time per output token
    (``tpot_tail`` x the mean step) and first token meet the limits (NaN: no limit), found by
    bisection on whole sequences; ``batch`` 0 where not even one sequence meets them."""
    i = np.asarray(input_tokens, dtype=float)
    o = np.asarray(output_tokens, dtype=float)
    ttft_lim = np.where(np.isnan(ttft_limit_s), np.inf, ttft_limit_s)
    tpot_lim = np.where(np.isnan(tpot_limit_s), np.inf, tpot_limit_s)

    def evaluate(b):
        run = continuous(c, b, i, o, cal, inflight)
        ttft = first_token_tail(run["first_token_s"], run["prefill_s"],
                                run["tokens_per_s"] / o)
        tpot = cal.tpot_tail * run["tpot_s"]
        return run, ttft, tpot, (tpot <= tpot_lim) & (ttft <= ttft_lim)

    top = np.floor(np.maximum(np.asarray(max_batch, dtype=float), 0)) + np.zeros_like(i + c.tp)
    ok_top = (top >= 1) & evaluate(np.maximum(top, 1))[3]
    low = np.where(ok_top, top, 0.0)          # feasible (0: none found)
    high = np.where(ok_top, top + 1, top)     # infeasible, or beyond memory
    while np.any(high - low > 1):
        mid = np.floor((low + high) / 2)
        ok = evaluate(np.maximum(mid, 1))[3]
        live = high - low > 1
        low = np.where(live & ok, mid, low)
        high = np.where(live & ~ok, mid, high)
    run, ttft, tpot, ok = evaluate(np.maximum(low, 1))
    return {"batch": low, "tokens_per_s": np.where(low > 0, run["tokens_per_s"], 0.0),
            "step_s": run["step_s"], "tpot_s": run["tpot_s"], "tpot_p99_s": tpot,
            "ttft_p99_s": ttft,
            "bound": run["bound"]}


def closed_loop(c: Constants, users, input_tokens, output_tokens, cal: Calibration,
                max_batch, inflight=1.0) -> dict:
    """``users`` clients, each sending its next request when the last one is answered (a
    benchmark at fixed concurrency). At most ``max_batch`` run at once; the rest queue, which
    by Little's law lengthens their first token."""
    u = np.asarray(users, dtype=float)
    i = np.asarray(input_tokens, dtype=float)
    o = np.asarray(output_tokens, dtype=float)
    b = np.maximum(np.minimum(u, max_batch), 1)
    run = continuous(c, b, i, o, cal, inflight)
    itl = run["tpot_s"]
    request_s = run["first_token_s"] + (o - 1) * itl
    rate = b * o / request_s                      # output tokens per second
    ttft = np.where(u > b, u / b * request_s - (o - 1) * itl, run["first_token_s"])
    return {"batch": b, "itl_s": itl, "ttft_s": ttft, "tokens_per_s": rate,
            "request_s": ttft + (o - 1) * itl, "bound": run["bound"]}


def decode_only(c: Constants, batch, depth, cal: Calibration):
    """One decode step of ``batch`` sequences at ``depth`` (arrays): seconds."""
    return seconds(c, decode_work(c, batch, depth), cal)
