"""Prefill and decode on separate machines, with the KV cache crossing a link between them.

Prefill instances only prefill (their last prefill step emits the first token), each
finished cache crosses its instance's link, and decode instances only decode, DistServe's
design. Chapter 7 sets it beside chunked prefill on the same machines.
"""

from __future__ import annotations

import numpy as np

from ..deployment import Deployment
from ..units import require_positive, require_whole
from ..predict.totals import StepModel, step_model
from .engine import ServingEngine
from .runs import LABELS, Run, assemble, budget_or_longest, run_jobs
from .traffic import Traffic, deal

__all__ = ["disaggregate", "disaggregated", "transfer_seconds"]


def transfer_seconds(d: Deployment, prompt_tokens, link_bytes_per_s: float) -> np.ndarray:
    """Seconds to move a prompt's KV cache over a link of the given bandwidth."""
    bw = require_positive("link_bytes_per_s", link_bytes_per_s)
    return np.asarray(prompt_tokens, dtype=float) * d.kv_bytes_per_token / bw


def disaggregated(tr: Traffic, d: Deployment, prefill: int, decode: int,
                  link_bytes_per_s: float, budget: int | None = None, *,
                  keep_steps: bool = True, model: StepModel | None = None):
    """The job of :func:`disaggregate` (for :func:`napkin.serving.runs.run_jobs`): its
    prefill pool runs first, then its decode pool on the caches as they arrive."""
    p, k = require_whole("prefill", prefill, 1), require_whole("decode", decode, 1)
    require_positive("link_bytes_per_s", link_bytes_per_s)
    b = budget_or_longest(budget, tr)
    cost = step_model(d) if model is None else model
    n = len(tr)
    parts = deal(n, p)
    pre = [ServingEngine(tr.arrival_s[idx], tr.prompt[idx], tr.output[idx], cost,
                         d.kv_capacity_tokens, "prefill_only", b, keep_steps=keep_steps)
           for idx in parts]
    yield pre
    logs, first = [], np.full(n, np.nan)
    ready = np.full(n, np.nan)
    for idx, e in zip(parts, pre):
        log = e.log()
        logs.append((idx, "prefill", log))
        first[idx] = log.first_s
        move = transfer_seconds(d, tr.prompt[idx], link_bytes_per_s)
        link_free = 0.0
        for j in np.argsort(log.first_s, kind="stable"):
            link_free = max(log.first_s[j], link_free) + move[j]
            ready[idx[j]] = link_free
    finish = np.full(n, np.nan)
    one = tr.output == 1
    finish[one] = first[one]
    todo = np.flatnonzero(~one)
    todo = todo[np.argsort(ready[todo], kind="stable")]
    dec_parts = [todo[part] for part in deal(len(todo), k)]
    dec = [ServingEngine(ready[idx], tr.prompt[idx], tr.output[idx], cost,
                         d.kv_capacity_tokens, "decode_only", b, first_s=first[idx],
                         keep_steps=keep_steps)
           for idx in dec_parts]
    yield dec
    logs += [(idx, "decode", e.log()) for idx, e in zip(dec_parts, dec)]
    label = f"{LABELS['disaggregated']}, {p} prefill + {k} decode"
    return assemble(tr, logs, label, "disaggregated", b, f"{p}P + {k}D", first_s=first,
                    finish_s=finish)


def disaggregate(tr: Traffic, d: Deployment, prefill: int, decode: int,
                 link_bytes_per_s: float, budget: int | None = None, *,
                 model: StepModel | None = None) -> Run:
    """Serve ``tr`` with ``prefill`` prefill-only and ``decode`` decode-only instances of ``d``.

    Each prefill instance sends finished caches one at a time over its own link of
    ``link_bytes_per_s``; a request joins a decode instance (round robin, in the order the
    caches arrive) when its cache has arrived. ``model``: the step model (default: ``d``'s,
    calibrated).
    """
    return run_jobs([disaggregated(tr, d, prefill, decode, link_bytes_per_s, budget,
                                   model=model)])[0]
