"""A mixed step's work: prefill chunks and decodes in one forward pass.

A serving engine's step is one forward pass over whatever the scheduler put in it: whole
prompts, chunks of prompts, and one token for each sequence that is decoding. What it does:

  FLOPs = 2 x params x tokens + 2 x query groups x (cached elements each query attends to)
  bytes = weights once + every cached element read (a decode reads its whole cache; a
          prefill chunk reads the cache of its prompt's earlier chunks)

What that costs on a chip is the book's one step model's (:mod:`napkin.predict.step`; its
plain roofline is :data:`~napkin.predict.calibration.ROOFLINE`).

A query at position p (0-based) attends to the p + 1 keys up to and including itself (at most
a window's worth in a windowed layer), so a chunk of n prompt tokens starting after s cached
ones attends n s + n (n + 1) / 2 (query, key) pairs: summed over the chunks of one prompt,
that is the n (n + 1) / 2 of the whole prompt, whatever the chunk size. Chunking changes the
bytes (earlier chunks are re-read), never the FLOPs. Writing the new tokens' keys and values
is not counted: one token's worth per sequence is small beside what a step reads.

Chapters 2 (prefill FLOPs) and 8 (estimates) count work with it; chapters 6, 7 and 9 count
a step's totals with :func:`attention_pairs`.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from ..kvcache import linear_form
from ..units import require_positive
from .model import Model, _count


def attention_pairs(start, n, window=None):
    """(query, key) pairs of ``n`` consecutive queries after ``start`` cached tokens, causal,
    each query seeing itself and at most ``window`` keys in all. Works on numpy arrays."""
    s = np.asarray(start, dtype=float)
    k = np.asarray(n, dtype=float)
    if window is None:
        return k * s + k * (k + 1) / 2
    w = float(require_positive("window", window))

    def upto(m):  # sum over p = 1..m of min(p, w)
        return np.where(m <= w, m * (m + 1) / 2, w * (w + 1) / 2 + (m - w) * w)

    return upto(s + k) - upto(s)


@dataclass(frozen=True)
class StepWork:
    """What one step does, whatever it runs on: tokens, FLOPs and cache bytes read."""

    prefill_tokens: int
    decode_tokens: int
    flops: float
    kv_bytes: float


def step_work(model: Model, prefill=(), decode_contexts=()) -> StepWork:
    """The FLOPs and cache reads of one step: prefill chunks ``(start, n)`` (``n`` prompt
    tokens after ``start`` already cached) and one decode token for each context in
    ``decode_contexts`` (tokens cached before the step). Sliding windows are honoured layer
    by layer."""
    chunks = [(_count("prefill start", s, 0), _count("prefill chunk", n, 1)) for s, n in prefill]
    contexts = [_count("decode context", c, 0) for c in decode_contexts]
    if not chunks and not contexts:
        raise ValueError("a step needs at least one prefill chunk or one decode")
    form = linear_form(model.config)
    window = form.window
    full, windowed = form.full_elements_per_token, form.windowed_elements_per_token
    starts = np.array([s for s, _ in chunks], dtype=float)
    lengths = np.array([n for _, n in chunks], dtype=float)
    ctx = np.array(contexts, dtype=float)

    def capped(x):
        return np.minimum(x, window) if window else np.zeros_like(x)

    # cached elements read: each decode its whole cache, each chunk its prompt's earlier part
    read = full * (ctx.sum() + starts.sum()) + windowed * (capped(ctx).sum() +
                                                          capped(starts).sum())
    # (query, key) element pairs: a decode attends its cache and itself
    pairs = full * (attention_pairs(ctx, 1).sum() + attention_pairs(starts, lengths).sum())
    if windowed:
        pairs += windowed * (attention_pairs(ctx, 1, window).sum() +
                             attention_pairs(starts, lengths, window).sum())
    n_tokens = int(lengths.sum()) + len(contexts)
    flops = 2.0 * model.params * n_tokens + 2.0 * model.query_groups * pairs
    return StepWork(prefill_tokens=int(lengths.sum()), decode_tokens=len(contexts),
                    flops=float(flops), kv_bytes=float(read * model.kv_dtype_bytes))
