"""How much traffic a configuration can carry: its capacity, from the calibrated step.

A queue only settles when requests arrive more slowly than the engine can serve them; above
that rate every latency grows for as long as the run lasts, and what a finite run reports
is how long it ran. So chapter 7 first computes what each configuration can carry and
chooses its arrival rates as fractions of it.

At capacity the engine always has work, and its steps are as full as the traffic and the
memory let them be. Per request of ``P`` prompt and ``O`` output tokens the engine runs the
prompt (in chunks, for chunked prefill) and ``O - 1`` decode tokens, one per step, at a
growing context; the totals of that work (tokens, cached tokens read, (query, key) pairs,
sequences, as :mod:`napkin.serving.engine` counts them) are averaged over a sample of the
traffic. A request holds the memory of its whole final length, ``P + O`` tokens, for every
step it is in, so by Little's law the requests in flight are what arrives per step times
the steps each stays. The *mean step* at capacity is that many requests' share of the work,
and its seconds come from :class:`napkin.predict.totals.StepModel` (chapter 9's calibrated
step). The capacity is the requests one mean step serves over its seconds.

- **Chunked prefill** with a budget of ``B`` tokens: each step starts ``x`` requests, as
  many as fill the budget (``x = B / E[P + O - 1]``) or the memory, whichever is fewer.
- **No chunking**: a prompt runs alone in a step of its own, and the decode steps between
  carry every sequence memory holds.
- **Disaggregated**: the prefill pool packs waiting prompts into steps of up to its budget,
  the decode pool decodes every sequence its memory holds, each prefill instance's link
  moves one cache at a time; the pipeline carries the least of the three.

These are averages: a heavy tail of long prompts makes the real engine's steps uneven, so
the simulated engine with an endless queue (chapter 7's saturation run) is the check.
"""

from __future__ import annotations

import numpy as np

from ..deployment import Deployment
from ..units import require_positive, require_whole
from ..predict.totals import StepModel

__all__ = ["chunked", "decode_totals", "prefill_first", "prefill_totals", "reserved_over_held",
           "split"]


def _lengths(prompt, output) -> tuple[np.ndarray, np.ndarray]:
    p = np.asarray(prompt, dtype=float)
    o = np.asarray(output, dtype=float)
    if p.shape != o.shape or not len(p):
        raise ValueError(f"prompt and output must be non-empty and of one length, got "
                         f"{p.shape} and {o.shape}")
    if (p < 1).any() or (o < 1).any():
        raise ValueError("every prompt and output must hold at least one token")
    return p, o


def prefill_totals(prompt, chunk: float) -> np.ndarray:
    """Per prompt, the totals of prefilling it in chunks of ``chunk`` tokens: its tokens,
    the earlier chunks re-read (a chunk starting at ``s`` reads ``s`` cached tokens), its
    (query, key) pairs (the same for any chunking) and its chunks (one sequence each)."""
    p = np.asarray(prompt, dtype=float)
    m = float(require_positive("chunk", chunk))
    k = np.ceil(p / m)
    return np.stack([p, m * k * (k - 1) / 2, p * (p + 1) / 2, k])


def decode_totals(prompt, output) -> np.ndarray:
    """Per request, the totals of its ``O - 1`` decode tokens: the tokens, the context each
    reads (the prompt and the tokens before it), the pairs (that context and itself) and
    one sequence per token."""
    p, o = np.asarray(prompt, dtype=float), np.asarray(output, dtype=float)
    kv = (o - 1) * p + (o - 1) * (o - 2) / 2
    return np.stack([o - 1, kv, kv + (o - 1), o - 1])


def reserved_over_held(prompt, output) -> float:
    """How many times the tokens a decoding request holds its reservation is. Admission here
    reserves the whole final length ``P + O`` for every decode step, which needs each output
    length known in advance (like chapter 6's Orca (Oracle)); an engine that allocates as
    tokens are written holds only the context so far. A memory-bound batch here is about
    this factor smaller than such an engine's."""
    p, o = _lengths(prompt, output)
    held = decode_totals(p, o)[2].sum()  # per decode step, its context and itself
    return float(((p + o) * (o - 1)).sum() / held) if held else 1.0


def _result(requests_per_s: float, p, o, limited_by: str, **more) -> dict:
    return {"requests_per_s": float(requests_per_s),
            "tokens_per_s": float(requests_per_s * (p + o - 1).mean()),
            "output_tokens_per_s": float(requests_per_s * o.mean()),
            "limited_by": limited_by, **more}


def _memory_batch(d: Deployment, p, o, steps) -> float:
    """Sequences in flight when memory is full: each holds ``P + O`` tokens for ``steps``
    steps, so by Little's law the in-flight mix is weighted by ``steps``."""
    return d.kv_capacity_tokens * steps.mean() / ((p + o) * steps).mean()


def chunked(model: StepModel, d: Deployment, prompt, output, budget: int) -> dict:
    """Capacity of one instance running chunked prefill with a token ``budget``: requests
    and tokens per second, the mean step (its seconds, decodes, prompt tokens) and whether
    the budget or the memory fills it."""
    p, o = _lengths(prompt, output)
    b = require_whole("budget", budget, 1)
    chunk = max(1.0, b * p.mean() / (p + o - 1).mean())  # the prompt's share of a full step
    pre, dec = prefill_totals(p, chunk), decode_totals(p, o)
    per_request = pre.mean(axis=1) + dec.mean(axis=1)
    by_budget = b / (p + o - 1).mean()
    by_memory = d.kv_capacity_tokens / ((p + o) * (pre[3] + o - 1)).mean()
    x = min(by_budget, by_memory)
    seconds = float(model.seconds(*(x * per_request))[0])
    return _result(x / seconds, p, o, "budget" if by_budget <= by_memory else "memory",
                   step_s=seconds, decodes=float(x * dec[0].mean()),
                   prefill_tokens=float(x * p.mean()))


def prefill_first(model: StepModel, d: Deployment, prompt, output) -> dict:
    """Capacity of one instance without chunking: every prompt in a step of its own, and
    decode steps carrying every sequence memory holds."""
    p, o = _lengths(prompt, output)
    pre = prefill_totals(p, float(p.max()))  # each prompt whole
    prefill_s = model.seconds(*pre).mean()
    batch = _memory_batch(d, p, o, o)
    dec = decode_totals(p, o)
    decode_s = float(model.seconds(*(batch * dec.mean(axis=1) / dec[0].mean()))[0])
    per_request = prefill_s + (o - 1).mean() * decode_s / batch
    return _result(1 / per_request, p, o, "memory", decodes=float(batch),
                   decode_step_s=decode_s, prefill_s=float(prefill_s))


def split(model: StepModel, d: Deployment, prompt, output, prefill: int, decode: int,
          link_bytes_per_s: float, budget: int | None = None) -> dict:
    """Capacity of ``prefill`` prefill-only and ``decode`` decode-only instances joined by
    links of ``link_bytes_per_s``: the least of what the prefill pool (prompts packed into
    steps of up to ``budget`` tokens, default the longest prompt), the decode pool and the
    links carry, and which one binds."""
    p, o = _lengths(prompt, output)
    n_pre, n_dec = require_whole("prefill", prefill, 1), require_whole("decode", decode, 1)
    link = require_positive("link_bytes_per_s", link_bytes_per_s)
    b = float(p.max()) if budget is None else require_whole("budget", budget, 1)
    packed = max(1.0, b / p.mean())
    pre = prefill_totals(p, float(p.max())).mean(axis=1)
    pre_rate = n_pre * packed / float(model.seconds(*(packed * pre))[0])
    batch = _memory_batch(d, p, o, o - 1)
    dec = decode_totals(p, o)
    decode_s = float(model.seconds(*(batch * dec.mean(axis=1) / dec[0].mean()))[0])
    dec_rate = n_dec * batch / ((o - 1).mean() * decode_s)
    link_rate = n_pre * link / (p.mean() * d.kv_bytes_per_token)
    rates = {"prefill": pre_rate, "decode": dec_rate, "link": link_rate}
    binding = min(rates, key=rates.get)
    return _result(rates[binding], p, o, binding, prefill_req_per_s=pre_rate,
                   decode_req_per_s=dec_rate, link_req_per_s=link_rate)
