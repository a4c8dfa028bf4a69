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
- **cache quantization**: bytes per element for f16, bf16, fp8, q8_0, q4_0.

A layer kind the module does not know is an error, never a guess.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from pathlib import Path
from typing import Mapping

from .models import head_dim, load_config, require_int
from .units import require_positive

#: Bytes per cached element by format; q8_0 and q4_0 are llama.cpp's block layouts
#: (34 bytes per 32 values, 18 bytes per 32 values).
KV_DTYPE_BYTES = {"f32": 4.0, "f16": 2.0, "bf16": 2.0, "fp8": 1.0, "q8_0": 34 / 32,
                  "q4_0": 18 / 32}

FULL, WINDOW, NONE = "full", "window", "none"
#: ``layer_types`` values and how each caches: every token, a window, or nothing per token.
LAYER_KINDS = {"full_attention": FULL, "attention": FULL, "global": FULL,
               "sliding_attention": WINDOW, "local": WINDOW, "chunked_attention": WINDOW,
               "linear_attention": NONE, "mamba": NONE, "conv": NONE}


def dtype_bytes(kv_dtype) -> float:
    """Bytes per cached element, from a number (2) or a name ("f16", "q8_0", "fp8")."""
    if isinstance(kv_dtype, str):
        key = kv_dtype.lower().replace("float", "f").replace("-", "_")
        if key not in KV_DTYPE_BYTES:
            raise ValueError(f"unknown KV cache dtype {kv_dtype!r}; known: "
                             f"{', '.join(KV_DTYPE_BYTES)} (or bytes per element as a number)")
        return KV_DTYPE_BYTES[key]
    return require_positive("kv_dtype_bytes", kv_dtype)


@dataclass(frozen=True)
class Layer:
    """What one layer caches per token (in elements) and for how many tokens at most."""

    elements_per_token: int
    window: int | None  # None: every token of the context


def _window(cfg: Mapping) -> int:
    for key in ("sliding_window", "attention_chunk_size"):
        if cfg.get(key) is not None:
            return require_int(cfg, key)
    raise ValueError("config marks layers as sliding but gives no sliding_window")


def _kinds(cfg: Mapping, n_layers: int) -> list[str]:
    """full / window / none for every layer, from whichever convention the config uses."""
    types = cfg.get("layer_types")
    if types is not None:
        if len(types) != n_layers:
            raise ValueError(f"layer_types has {len(types)} entries for {n_layers} layers")
        unknown = sorted({t for t in types if t not in LAYER_KINDS})
        if unknown:
            raise ValueError(f"unknown layer type(s) {', '.join(unknown)} in layer_types; "
                             f"known: {', '.join(LAYER_KINDS)}")
        return [LAYER_KINDS[t] for t in types]
    window = cfg.get("sliding_window")
    if window is None or cfg.get("use_sliding_window") is False:
        return [FULL] * n_layers
    if cfg.get("sliding_window_pattern") is not None:  # Gemma 3: every Nth layer is global
        every = require_int(cfg, "sliding_window_pattern")
        return [FULL if (i + 1) % every == 0 else WINDOW for i in range(n_layers)]
    if cfg.get("model_type") == "gemma2":  # alternating, starting with a sliding layer
        return [WINDOW if i % 2 == 0 else FULL for i in range(n_layers)]
    if cfg.get("use_sliding_window") and cfg.get("max_window_layers") is not None:
        first = require_int(cfg, "max_window_layers", minimum=0)  # Qwen2: layers below are full
        return [FULL if i < first else WINDOW for i in range(n_layers)]
    return [WINDOW] * n_layers  # Mistral 7B v0.1: every layer windowed


def layers(config: Mapping | str | Path) -> list[Layer]:
    """Per-layer cache layout of a model."""
    cfg = load_config(config)
    n_layers = require_int(cfg, "num_hidden_layers")
    if cfg.get("kv_lora_rank") is not None:  # MLA: a latent and a rope key per token
        per_token = require_int(cfg, "kv_lora_rank") + require_int(cfg, "qk_rope_head_dim")
        kinds = [FULL] * n_layers
    else:
        heads = require_int(cfg, "num_attention_heads")
        kv_heads = require_int(cfg, "num_key_value_heads", default=heads)
        if heads % kv_heads:
            raise ValueError(f"num_attention_heads {heads} is not a multiple of "
                             f"num_key_value_heads {kv_heads}")
        k_dim = head_dim(cfg)
        v_dim = require_int(cfg, "v_head_dim", default=k_dim)
        per_token = kv_heads * (k_dim + v_dim)
        kinds = _kinds(cfg, n_layers)
    window = _window(cfg) if WINDOW in kinds else None
    return [Layer(elements_per_token=0 if kind == NONE else per_token,
                  window=window if kind == WINDOW else None) for kind in kinds]


def kv_bytes_per_token(config: Mapping | str | Path, kv_dtype_bytes=2) -> int:
    """Bytes one token adds to the cache while the context is shorter than any window
    (all layers, K and V). Beyond a window, :func:`kv_cache_bytes` is the one to use."""
    size = dtype_bytes(kv_dtype_bytes)
    return math.ceil(sum(layer.elements_per_token for layer in layers(config)) * size)


def kv_cache_bytes(config: Mapping | str | Path, n_tokens: int, batch: int = 1,
                   kv_dtype_bytes=2) -> int:
    """Bytes of cache for ``batch`` sequences of ``n_tokens`` each (windows honoured)."""
    if isinstance(n_tokens, bool) or not isinstance(n_tokens, int) or n_tokens < 0:
        raise ValueError(f"n_tokens must be a whole number of tokens >= 0, got {n_tokens!r}")
    if isinstance(batch, bool) or not isinstance(batch, int) or batch < 1:
        raise ValueError(f"batch must be a whole number of sequences >= 1, got {batch!r}")
    size = dtype_bytes(kv_dtype_bytes)
    elements = sum(layer.elements_per_token * (n_tokens if layer.window is None
                                               else min(n_tokens, layer.window))
                   for layer in layers(config))
    return math.ceil(elements * size) * batch


def max_tokens(config, memory_bytes: float, weight_bytes: float, kv_dtype_bytes=2) -> int:
    """Tokens of cache (summed over all sequences) that fit in what the weights leave."""
    free = require_positive("memory_bytes", memory_bytes) - \
        require_positive("weight_bytes", weight_bytes, allow_zero=True)
    if free <= 0:
        raise ValueError(f"the weights ({weight_bytes / 1e9:.1f} GB) do not fit in "
                         f"{memory_bytes / 1e9:.1f} GB; there is no room for any cache")
    return int(free // kv_bytes_per_token(config, kv_dtype_bytes))


def max_batch(config, context_tokens: int, memory_bytes: float, weight_bytes: float,
              kv_dtype_bytes=2) -> int:
    """Sequences of ``context_tokens`` each whose caches fit beside the weights (0: none)."""
    free = require_positive("memory_bytes", memory_bytes) - \
        require_positive("weight_bytes", weight_bytes, allow_zero=True)
    if free <= 0:
        return 0
    one = kv_cache_bytes(config, context_tokens, 1, kv_dtype_bytes)
    return int(free // one) if one else 0
