"""A mixed step: prefill chunks and decodes in one forward pass.

A serving engine's step is one forward pass over whatever the scheduler put in it: whole
prompts, chunks of prompts, and one token for each sequence that is decoding. Its roofline
cost is the slower of its FLOPs and its bytes:

  FLOPs = 2 x params x tokens + 2 x query groups x (cached elements each query attends to)
  bytes = weights once + every cached element read (a decode reads its whole cache; a
          prefill chunk reads the cache of its prompt's earlier chunks)

A query at position p (0-based) attends to the p + 1 keys up to and including itself (at most
a window's worth in a windowed layer), so a chunk of n prompt tokens starting after s cached
ones attends n s + n (n + 1) / 2 (query, key) pairs: summed over the chunks of one prompt,
that is the n (n + 1) / 2 of the whole prompt, whatever the chunk size. Chunking changes the
bytes (earlier chunks are re-read), never the FLOPs. Writing the new tokens' keys and values
is not counted: one token's worth per sequence is small beside what a step reads.

Chapters 2 (prefill FLOPs), 6 and 7 (engine steps), 8 and 9 (estimates, predictions)
use it.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from ..kvcache import linear_form
from ..units import require_positive
from .model import Model, _count
from .roof import Roof


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
class StepCost:
    """The per-token constants of one model on one roof, for costing many steps quickly.

    ``seconds(tokens, kv_tokens, pairs)`` is the roofline of a forward pass that processes
    ``tokens`` tokens, reads ``kv_tokens`` cached tokens and attends ``pairs`` (query, key)
    pairs, for a model whose every layer caches every token (no sliding windows). It works
    on numpy arrays, one element per step.
    """

    flops_per_token: float          # 2 x params: the matmuls
    flops_per_pair: float           # attention, all layers, QK and AV
    weight_bytes: float
    kv_bytes_per_token: float
    flops_per_s: float
    bandwidth_bytes_per_s: float

    def flops(self, tokens, pairs):
        return self.flops_per_token * np.asarray(tokens, dtype=float) + \
            self.flops_per_pair * np.asarray(pairs, dtype=float)

    def bytes(self, kv_tokens):
        return self.weight_bytes + self.kv_bytes_per_token * np.asarray(kv_tokens, dtype=float)

    def seconds(self, tokens, kv_tokens, pairs):
        return _roof_seconds(self.flops(tokens, pairs), self.bytes(kv_tokens),
                             self.flops_per_s, self.bandwidth_bytes_per_s)


def _roof_seconds(flops, n_bytes, flops_per_s, bandwidth_bytes_per_s):
    """The roofline itself, in one place: the slower of the arithmetic and the memory."""
    return np.maximum(flops / flops_per_s, n_bytes / bandwidth_bytes_per_s)


def step_cost(model: Model, roof: Roof) -> StepCost:
    """:class:`StepCost` of ``model`` on ``roof``; refuses a model with windowed layers, whose
    cache does not grow one token per token (cost those with :func:`mixed_step`)."""
    form = linear_form(model.config)
    if form.windowed_elements_per_token:
        raise ValueError(f"{model.name} has windowed layers (window {form.window}); a step's "
                         "cost is not linear in its cached tokens: use mixed_step")
    return StepCost(flops_per_token=2.0 * model.params,
                    flops_per_pair=2.0 * model.query_groups * form.full_elements_per_token,
                    weight_bytes=model.weight_bytes,
                    kv_bytes_per_token=float(model.kv_bytes_per_token()),
                    flops_per_s=roof.flops_per_s,
                    bandwidth_bytes_per_s=roof.bandwidth_bytes_per_s)


def roofline_step_seconds(model: Model, roof: Roof, tokens, kv_tokens, pairs):
    """Roofline seconds of forward passes described by their totals (numpy arrays welcome):
    tokens processed, cached tokens read, (query, key) pairs attended. See :class:`StepCost`."""
    return step_cost(model, roof).seconds(tokens, kv_tokens, pairs)


@dataclass(frozen=True)
class MixedStep:
    """One forward pass of prefill chunks and decodes: its work, bytes and roofline time."""

    prefill_tokens: int
    decode_tokens: int
    flops: float
    weight_bytes: float
    kv_bytes: float
    flops_per_s: float
    bandwidth_bytes_per_s: float

    @property
    def tokens(self) -> int:
        return self.prefill_tokens + self.decode_tokens

    @property
    def bytes(self) -> float:
        return self.weight_bytes + self.kv_bytes

    @property
    def compute_s(self) -> float:
        return self.flops / self.flops_per_s

    @property
    def memory_s(self) -> float:
        return self.bytes / self.bandwidth_bytes_per_s

    @property
    def seconds(self) -> float:
        return float(_roof_seconds(self.flops, self.bytes, self.flops_per_s,
                                   self.bandwidth_bytes_per_s))

    @property
    def intensity(self) -> float:
        return self.flops / self.bytes

    @property
    def bound(self) -> str:
        return "compute" if self.compute_s >= self.memory_s else "memory"


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


def mixed_step(model: Model, roof: Roof, prefill=(), decode_contexts=()) -> MixedStep:
    """The roofline cost of one step (:func:`step_work` on ``roof``): the weights are read
    once, whatever the step runs."""
    work = step_work(model, prefill, decode_contexts)
    return MixedStep(prefill_tokens=work.prefill_tokens, decode_tokens=work.decode_tokens,
                     flops=work.flops, weight_bytes=model.weight_bytes, kv_bytes=work.kv_bytes,
                     flops_per_s=roof.flops_per_s,
                     bandwidth_bytes_per_s=roof.bandwidth_bytes_per_s)
