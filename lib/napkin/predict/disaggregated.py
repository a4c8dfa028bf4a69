"""Disaggregated serving: prompts prefilled on one pool of chips, answers decoded on another.

In one engine a step that carries a prompt makes every sequence in it wait; with
data-parallel attention a prompt prefilled on one rank holds every rank
(:func:`napkin.predict.serve.rank_prompts`). Serving engines for large mixtures of experts
(SGLang, TensorRT-LLM, NVIDIA Dynamo) therefore keep two pools. Each is sized to the stream
as a fluid count (fractional engines), so with ``mu_p`` prompts a second per chip of the
prefill pool and ``lambda_d`` answers a second per chip of the decode pool, a chip of the
whole serves

    output tokens/s per chip = output_tokens / (1 / mu_p + 1 / lambda_d)

- **decode pool**: the largest batch whose steps, with no prompt in them, keep the
  99th-percentile time per output token (``tpot_tail`` x the mean, as in one engine) within
  its limit and whose caches fit at the mean depth;
- **prefill pool**: batches of prompts, the largest batch whose prefill, waited for once (a
  prompt arrives while the batch before it runs) and run once, stays within the first-token
  limit: ``2 t_p(k) <= ttft_limit``.

The caches' move between pools is left out: a prompt's cache is tens of megabytes, a
millisecond or less over a rack's NVLink or a server's NIC, against a first-token limit of a
second or more. Chapter 12 prices the two pools on two kinds of machine
(:mod:`napkin.split.pools`); this is the same arithmetic for one kind, inside the step model.
"""

from __future__ import annotations

import math

import numpy as np

from .calibration import Calibration
from .engines import Constants
from .serve import decode_step_seconds, inflight_depth, memory_batch
from .step import cost, prefill_work

__all__ = ["decode_pool", "largest", "pools", "prefill_pool"]

#: The largest batch tried in either pool.
MAX_BATCH = 1 << 16


def largest(ok, top: int) -> int:
    """The largest whole ``k`` in [1, top] with ``ok(k)``, for an ``ok`` that holds up to some
    ``k`` and fails above it (a pool's batch under a limit), else 0; by bisection."""
    if top < 1 or not ok(1):
        return 0
    low, high = 1, top + 1
    while high - low > 1:
        mid = (low + high) // 2
        low, high = (mid, high) if ok(mid) else (low, mid)
    return low


def decode_pool(c: Constants, input_tokens: float, output_tokens: float,
                tpot_limit_s: float, cal: Calibration, inflight: float = 1.0) -> dict:
    """The decode pool's engine: its batch, mean step and time per output token, and answers
    a second per chip (``c`` holds one engine; ``inflight``: the answers' spread, as in
    :func:`~napkin.predict.serve.inflight_depth`)."""
    depth = float(inflight_depth(input_tokens, output_tokens, inflight))
    fits = int(min(memory_batch(c, input_tokens, output_tokens, inflight)[0], MAX_BATCH))

    def step(b):
        return float(np.ravel(decode_step_seconds(c, b, depth, cal))[0])

    limit = math.inf if math.isnan(tpot_limit_s) else tpot_limit_s
    kept = float(c.accepted_tokens[0])
    b = largest(lambda k: cal.tpot_tail * step(k) / kept <= limit, fits)
    if b < 1:
        return {"batch": 0, "step_s": math.nan, "tpot_s": math.nan,
                "requests_per_s_per_chip": 0.0}
    s = step(b)
    chips = float(c.tp[0] * c.pp[0] * c.dp[0])
    return {"batch": b, "step_s": s, "tpot_s": s / kept,
            "requests_per_s_per_chip": b * kept / s / output_tokens / chips}


def prefill_pool(c: Constants, input_tokens: float, ttft_limit_s: float,
                 cal: Calibration) -> dict:
    """The prefill pool's engine: its batch of prompts, the time one batch takes, and prompts
    a second per chip (``c`` holds one engine)."""
    def t(k):
        return float(cost(c, prefill_work(c, k, input_tokens), cal).seconds[0])

    limit = math.inf if math.isnan(ttft_limit_s) else ttft_limit_s
    k = largest(lambda n: 2 * t(n) <= limit, MAX_BATCH)
    if k < 1:
        return {"batch": 0, "step_s": math.nan, "requests_per_s_per_chip": 0.0}
    chips = float(c.tp[0] * c.pp[0] * c.dp[0])
    return {"batch": k, "step_s": t(k), "requests_per_s_per_chip": k / t(k) / chips}


def pools(prefill: Constants, decode: Constants, input_tokens: float, output_tokens: float,
          ttft_limit_s: float, tpot_limit_s: float, cal: Calibration,
          inflight: float = 1.0) -> dict:
    """Both pools sized to one stream: output tokens a second per chip of the whole, the
    share of chips that prefill, and each pool's engine (module docstring)."""
    p = prefill_pool(prefill, input_tokens, ttft_limit_s, cal)
    d = decode_pool(decode, input_tokens, output_tokens, tpot_limit_s, cal, inflight)
    mu, lam = p["requests_per_s_per_chip"], d["requests_per_s_per_chip"]
    if mu <= 0 or lam <= 0:
        return {"tokens_per_s_per_chip": 0.0, "prefill_share": math.nan, "prefill": p,
                "decode": d}
    return {"tokens_per_s_per_chip": output_tokens / (1 / mu + 1 / lam),
            "prefill_share": (1 / mu) / (1 / mu + 1 / lam), "prefill": p, "decode": d}
