"""The KV cache: bytes per token and per sequence, from a Hugging Face ``config.json``.

Every decode step reads the whole cache of every sequence in the batch, and the
cache must fit beside the weights, so its size sets both the bandwidth cost of
long context and the largest batch. What most calculators get wrong, and this
module does not:

- **GQA / MQA**: only ``num_key_value_heads`` heads are cached, not all heads;
- **explicit head_dim**: it can differ from ``hidden_size / num_attention_heads``;
- **sliding windows**: a windowed layer caches at most ``sliding_window``
  tokens (``sliding_window`` with ``use_sliding_window``, Qwen2's
  ``max_window_layers``, Gemma's alternation, or per-layer ``layer_types``);
- **MLA** (DeepSeek-V2/V3): the cache holds one compressed latent
  (``kv_lora_rank``) and the rope key (``qk_rope_head_dim``) per layer, not
  full K and V;
- **cache quantization**: bytes per element for f16, bf16, fp8 and llama.cpp's
  block formats (q8_0 is 34 bytes per 32 values, not 1 byte per value).

A layer kind the module does not know, or one whose state it cannot size (a
recurrent or linear-attention layer), is an error that says so, never a guess.
Sizes are exact integers: dtype sizes are fractions, so a q8_0 cache of
billions of elements is not off by a rounding error.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from fractions import Fraction
from pathlib import Path
from typing import Mapping

from .models import LAYER_KINDS, RECURRENT_KINDS, Layer, head_dim, load_config, require_int
from .units import require_positive

__all__ = ["decode_step_bytes", "dtype_bytes", "dtype_name", "head_dim", "KV_BLOCK",
           "kv_bytes_per_token", "kv_cache_bytes", "KV_DTYPE_BYTES", "Layer",
           "LAYER_KINDS", "layers", "linear_form", "LinearForm", "max_batch", "max_context",
           "max_context_tokens", "max_tokens", "NO_LIMIT", "RECURRENT_KINDS",
           "sequences_that_fit"]

#: Bytes per cached element by format. The q and iq formats are llama.cpp's block
#: layouts (ggml-common.h): q8_0 stores 32 values in 34 bytes (an f16 scale and 32
#: int8), q4_0 in 18, q4_1 in 20, q5_0 in 22, q5_1 in 24, iq4_nl in 18.
KV_DTYPE_BYTES = {"f32": Fraction(4), "f16": Fraction(2), "bf16": Fraction(2),
                  "fp8": Fraction(1), "q8_0": Fraction(34, 32), "q5_1": Fraction(24, 32),
                  "q5_0": Fraction(22, 32), "q4_1": Fraction(20, 32),
                  "q4_0": Fraction(18, 32), "iq4_nl": Fraction(18, 32)}
#: Values per block of the block formats: a row of the cache must be whole blocks.
KV_BLOCK = {"q8_0": 32, "q5_1": 32, "q5_0": 32, "q4_1": 32, "q4_0": 32, "iq4_nl": 32}

def dtype_bytes(kv_dtype) -> Fraction:
    """Bytes per cached element, exactly: from a number (2) or a name ("f16", "q8_0")."""
    if isinstance(kv_dtype, str):
        key = kv_dtype.lower().replace("float", "f").replace("-", "_")
        if key not in KV_DTYPE_BYTES:
            raise ValueError(f"unknown KV cache dtype {kv_dtype!r}; known: "
                             f"{', '.join(KV_DTYPE_BYTES)} (or bytes per element as a number)")
        return KV_DTYPE_BYTES[key]
    return Fraction(require_positive("kv_dtype_bytes", kv_dtype)).limit_denominator(1 << 20)


def dtype_name(kv_dtype) -> str:
    """A readable name for a dtype given as a name or as bytes per element."""
    if isinstance(kv_dtype, str):
        dtype_bytes(kv_dtype)
        return kv_dtype.lower()
    return f"{float(dtype_bytes(kv_dtype)):g} bytes/element"


def layers(config: Mapping | str | Path) -> list[Layer]:
    """Per-layer cache layout of a model (parsed once per :class:`~napkin.models.Architecture`)."""
    return list(load_config(config).layers)


def _check_blocks(config, kv_dtype) -> None:
    """A block-quantized cache stores whole blocks per head: refuse shapes that cannot."""
    if not isinstance(kv_dtype, str) or kv_dtype.lower() not in KV_BLOCK:
        return
    block = KV_BLOCK[kv_dtype.lower()]
    cfg = load_config(config)
    width = cfg.cache_row_width
    if width % block:
        what = "kv_lora_rank + qk_rope_head_dim" if cfg.is_mla else "head_dim"
        raise ValueError(f"a {kv_dtype} cache stores blocks of {block} values, but "
                         f"{what} is {width}; llama.cpp refuses this cache type here")


def kv_bytes_per_token(config: Mapping | str | Path, kv_dtype_bytes=2) -> int:
    """Bytes one token adds to the cache while the context is shorter than any window
    (all layers, K and V). Beyond a window, :func:`kv_cache_bytes` is the one to use."""
    size = dtype_bytes(kv_dtype_bytes)
    cfg = load_config(config)
    _check_blocks(cfg, kv_dtype_bytes)
    return math.ceil(sum(layer.elements_per_token for layer in cfg.layers) * size)


def _require_count(name: str, value, minimum: int) -> int:
    if isinstance(value, bool) or not isinstance(value, int) or value < minimum:
        what = "tokens" if "token" in name else "sequences"
        raise ValueError(f"{name} must be a whole number of {what} >= {minimum}, got {value!r}")
    return value


def kv_cache_bytes(config: Mapping | str | Path, n_tokens: int, batch: int = 1,
                   kv_dtype_bytes=2) -> int:
    """Bytes of cache for ``batch`` sequences of ``n_tokens`` each (windows honoured).

    This is also what one decode step at that depth reads from the cache: attention
    reads every cached K and V of every layer (a windowed layer, its window).
    """
    _require_count("n_tokens", n_tokens, 0)
    _require_count("batch", batch, 1)
    size = dtype_bytes(kv_dtype_bytes)
    cfg = load_config(config)
    _check_blocks(cfg, kv_dtype_bytes)
    elements = sum(layer.elements_per_token * (n_tokens if layer.window is None
                                               else min(n_tokens, layer.window))
                   for layer in cfg.layers)
    return math.ceil(elements * size) * batch


@dataclass(frozen=True)
class LinearForm:
    """The cache as a formula a chart can evaluate without Python:
    ``bytes = (full * n + windowed * min(n, window)) * dtype_bytes * batch``."""

    full_elements_per_token: int
    windowed_elements_per_token: int
    window: int | None

    def elements(self, n_tokens: int) -> int:
        capped = min(n_tokens, self.window) if self.window else 0
        return self.full_elements_per_token * n_tokens + \
            self.windowed_elements_per_token * capped


def linear_form(config: Mapping | str | Path) -> LinearForm:
    """Per-token elements of the full layers and of the windowed ones, and the window."""
    per_layer = load_config(config).layers
    windows = {layer.window for layer in per_layer if layer.window is not None}
    if len(windows) > 1:
        raise ValueError(f"layers use different windows {sorted(windows)}; "
                         "no single linear form describes this cache")
    return LinearForm(
        full_elements_per_token=sum(l.elements_per_token for l in per_layer if l.window is None),
        windowed_elements_per_token=sum(l.elements_per_token for l in per_layer
                                        if l.window is not None),
        window=windows.pop() if windows else None)


def max_context_tokens(config: Mapping | str | Path) -> int:
    """The longest context the model is meant to serve: the book's ``_max_context_tokens``
    (from the model card) where the config in ``data/models`` records it, else the
    config's ``max_position_embeddings``."""
    cfg = load_config(config)
    if cfg.get("_max_context_tokens") is not None:
        return require_int(cfg, "_max_context_tokens")
    return require_int(cfg, "max_position_embeddings")


def max_tokens(config, memory_bytes: float, weight_bytes: float, kv_dtype_bytes=2) -> int:
    """Tokens of cache (summed over all sequences) that fit in what the weights leave."""
    free = require_positive("memory_bytes", memory_bytes) - \
        require_positive("weight_bytes", weight_bytes, allow_zero=True)
    if free <= 0:
        raise ValueError(f"the weights ({weight_bytes / 1e9:.1f} GB) do not fit in "
                         f"{memory_bytes / 1e9:.1f} GB; there is no room for any cache")
    return int(free // kv_bytes_per_token(config, kv_dtype_bytes))


#: What :func:`sequences_that_fit` returns when a sequence holds no cache: memory sets no
#: limit on the batch.
NO_LIMIT = 2**31 - 1


def sequences_that_fit(free_bytes: float, bytes_per_sequence: float) -> int:
    """The one rule for how many sequences' caches fit in what the weights leave: none when
    nothing is left, :data:`NO_LIMIT` when a sequence holds no cache (an empty context)."""
    if free_bytes <= 0:
        return 0
    return int(free_bytes // bytes_per_sequence) if bytes_per_sequence else NO_LIMIT


def max_batch(config, context_tokens: int, memory_bytes: float, weight_bytes: float,
              kv_dtype_bytes=2) -> int:
    """Sequences of ``context_tokens`` each whose caches fit beside the weights
    (:func:`sequences_that_fit`)."""
    free = require_positive("memory_bytes", memory_bytes) - \
        require_positive("weight_bytes", weight_bytes, allow_zero=True)
    return sequences_that_fit(free, kv_cache_bytes(config, context_tokens, 1, kv_dtype_bytes))


def max_context(config, memory_bytes: float, weight_bytes: float, batch: int = 1,
                kv_dtype_bytes=2) -> int | None:
    """The longest context per sequence at which ``batch`` sequences fit beside the
    weights: 0 when the weights leave no room, None when the cache stops growing
    (every layer windowed) before the memory runs out."""
    _require_count("batch", batch, 1)
    free = require_positive("memory_bytes", memory_bytes) - \
        require_positive("weight_bytes", weight_bytes, allow_zero=True)
    if free <= 0:
        return 0
    config = load_config(config)  # parsed once for the search below
    form = linear_form(config)
    size = dtype_bytes(kv_dtype_bytes)
    if form.full_elements_per_token == 0:
        ceiling = kv_cache_bytes(config, form.window or 0, batch, kv_dtype_bytes)
        return None if ceiling <= free else _search(config, free, batch, kv_dtype_bytes,
                                                    form.window)
    # A bracket, then bisection: the cache only grows with the context.
    high = int(free / (form.full_elements_per_token * size * batch)) + 1
    return _search(config, free, batch, kv_dtype_bytes, high)


def _search(config, free: float, batch: int, kv_dtype_bytes, high: int) -> int:
    low = 0  # fits; high does not (or is the bound)
    while kv_cache_bytes(config, high, batch, kv_dtype_bytes) <= free:
        high *= 2
    while high - low > 1:
        mid = (low + high) // 2
        if kv_cache_bytes(config, mid, batch, kv_dtype_bytes) <= free:
            low = mid
        else:
            high = mid
    return low


def decode_step_bytes(config, weight_bytes: float, context_tokens: int, batch: int = 1,
                      kv_dtype_bytes=2) -> float:
    """Bytes one decode step reads: every weight once (shared by the batch) plus every
    sequence's whole cache at ``context_tokens`` deep (not shared)."""
    weights = require_positive("weight_bytes", weight_bytes, allow_zero=True)
    return weights + kv_cache_bytes(config, context_tokens, batch, kv_dtype_bytes)
