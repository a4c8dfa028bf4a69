"""Model architecture from a Hugging Face ``config.json``, and weight bytes by format.

Decode reads every weight once per token, so the napkin needs two numbers
about a model: how many parameters a token touches, and how many bytes each
takes in the chosen format. Both come from here.

A config is parsed once, at the edge: :func:`load_config` turns a dict or a path into an
:class:`Architecture`, a read-only mapping of the config's keys that also holds what the
library derives from them (the per-layer cache layout, the dense parameter count), each
worked out the first time it is asked for and kept. Every function that takes a config
takes an :class:`Architecture` as is, so a chapter that prices a model a thousand times
reads and interprets its config once.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from functools import cached_property
from pathlib import Path
from types import MappingProxyType
from typing import Iterator, Mapping

import pandas as pd

from . import tables
from .units import require_positive

__all__ = ["Architecture", "BITS_PER_WEIGHT", "bits_per_weight", "dense_params",
           "gguf_size_bytes", "gguf_sizes", "head_dim", "Layer", "LAYER_KINDS", "load_config",
           "require_int", "params_bytes", "RECURRENT_KINDS"]

#: Bits per weight of llama.cpp storage formats: the block layouts in ggml's
#: ggml-common.h (block size and bytes per block). Q8_0: 34 bytes per 32
#: weights; Q4_0: 18 per 32; MXFP4: 17 per 32; Q4_K: 144 per 256. FP8 (E4M3, as
#: served on Hopper and Blackwell) is one byte per weight, scales aside; FP4 likewise half a
#: byte, and NVFP4 adds an FP8 scale per 16 weights (4.5 bits).
BITS_PER_WEIGHT = {
    "F32": 32.0, "F16": 16.0, "BF16": 16.0, "FP8": 8.0, "FP4": 4.0, "NVFP4": 4.5,
    "Q8_0": 34 * 8 / 32, "Q6_K": 210 * 8 / 256, "Q5_1": 24 * 8 / 32, "Q5_0": 22 * 8 / 32,
    "Q5_K": 176 * 8 / 256, "Q4_1": 20 * 8 / 32, "Q4_0": 18 * 8 / 32, "Q4_K": 144 * 8 / 256,
    "MXFP4": 17 * 8 / 32, "Q3_K": 110 * 8 / 256, "Q2_K": 84 * 8 / 256,
}


def bits_per_weight(fmt: str) -> float:
    key = fmt.upper()
    if key not in BITS_PER_WEIGHT:
        raise ValueError(f"unknown weight format {fmt!r}; known: {', '.join(BITS_PER_WEIGHT)}")
    return BITS_PER_WEIGHT[key]


def params_bytes(n_params: float, fmt: str) -> float:
    """Bytes of ``n_params`` weights stored in ``fmt`` (``"Q4_0"``, ``"F16"`` ...)."""
    return require_positive("n_params", n_params) * bits_per_weight(fmt) / 8


def load_config(config: "Architecture | Mapping | str | Path") -> "Architecture":
    """A Hugging Face ``config.json`` as an :class:`Architecture`, from a dict or a path
    (an :class:`Architecture` comes back as is: it was parsed already).

    Multimodal configs nest the language model under ``text_config``; that part
    is what inference on text reads, so it is returned merged over the top level.
    """
    if isinstance(config, Architecture):
        return config
    if isinstance(config, (str, Path)):
        path = Path(config)
        if not path.is_file():
            raise ValueError(f"config file not found: {path}")
        try:
            config = json.loads(path.read_text())
        except json.JSONDecodeError as err:
            raise ValueError(f"config file {path} is not valid JSON: {err}") from None
    if not isinstance(config, Mapping):
        raise ValueError(f"config must be a dict or a path to config.json, got {type(config).__name__}")
    cfg = dict(config)
    if isinstance(cfg.get("text_config"), Mapping):
        cfg = {**cfg, **cfg["text_config"]}
    return Architecture(cfg)


def require_int(cfg: Mapping, key: str, *, minimum: int = 1, default=None) -> int:
    """An integer config field, or a ValueError naming the field and its value."""
    if key not in cfg or cfg[key] is None:
        if default is not None:
            return default
        raise ValueError(f"config has no {key!r}; it is needed here")
    value = cfg[key]
    if isinstance(value, bool) or not isinstance(value, (int, float)) or value != int(value):
        raise ValueError(f"config field {key!r} must be an integer, got {value!r}")
    if value < minimum:
        raise ValueError(f"config field {key!r} must be at least {minimum}, got {value!r}")
    return int(value)


def head_dim(cfg: Mapping) -> int:
    """Per-head width: explicit ``head_dim`` when given (it can differ from hidden/heads)."""
    if cfg.get("head_dim") is not None:
        return require_int(cfg, "head_dim")
    hidden = require_int(cfg, "hidden_size")
    heads = require_int(cfg, "num_attention_heads")
    if hidden % heads:
        raise ValueError(f"hidden_size {hidden} is not a multiple of num_attention_heads {heads}; "
                         "the config must state head_dim")
    return hidden // heads


FULL, WINDOW = "full", "window"
#: ``layer_types`` values the library can size, and how each caches: every token of
#: the context, or at most a window (``sliding_window``, or ``attention_chunk_size``).
LAYER_KINDS = {"full_attention": FULL, "attention": FULL, "global": FULL,
               "sliding_attention": WINDOW, "local": WINDOW, "chunked_attention": WINDOW}
#: Layer types that keep a fixed-size recurrent state instead of a per-token cache:
#: their memory is not a function of the context, and the library does not size it.
RECURRENT_KINDS = ("linear_attention", "mamba", "conv", "recurrent")


@dataclass(frozen=True)
class Layer:
    """What one layer caches per token (in elements) and for how many tokens at most."""

    elements_per_token: int
    window: int | None  # None: every token of the context


class Architecture(Mapping):
    """A model's config, parsed once: its keys, read-only, and what is derived from them.

    Build one with :func:`load_config`. Derived values (:attr:`layers`,
    :attr:`dense_params` ...) are computed on first use, so a config the library cannot
    size (a recurrent layer, an encoder-decoder) still loads, and the error comes from
    the question it cannot answer, naming the field.
    """

    def __init__(self, config: Mapping):
        self._config = MappingProxyType(dict(config))

    def __getitem__(self, key):
        return self._config[key]

    def __iter__(self) -> Iterator:
        return iter(self._config)

    def __len__(self) -> int:
        return len(self._config)

    def get(self, key, default=None):
        return self._config.get(key, default)

    def __hash__(self) -> int:
        return hash(self._canonical)

    def __eq__(self, other) -> bool:
        if isinstance(other, Architecture):
            return self._canonical == other._canonical
        return isinstance(other, Mapping) and dict(self._config) == dict(other)

    def __repr__(self) -> str:
        return f"Architecture({self.get('_name') or self.get('model_type') or 'config'})"

    @cached_property
    def _canonical(self) -> str:
        return json.dumps(dict(self._config), sort_keys=True, default=str)

    @cached_property
    def layers(self) -> tuple[Layer, ...]:
        """Per-layer cache layout: elements each token adds, and the window if any."""
        if self.get("is_encoder_decoder"):
            raise ValueError("config is an encoder-decoder model (is_encoder_decoder is true); "
                             "its cross-attention cache depends on the input length, which "
                             "this library does not model")
        n_layers = require_int(self, "num_hidden_layers")
        if self.is_mla:  # a latent and a rope key per token
            per_token = self.cache_row_width
        else:
            per_token = self.kv_heads * (self.head_dim + require_int(self, "v_head_dim",
                                                                     default=self.head_dim))
        kinds = _kinds(self, n_layers)  # windows and unsizable layer types apply to MLA too
        window = _window(self) if WINDOW in kinds else None
        return tuple(Layer(elements_per_token=per_token, window=window if k == WINDOW else None)
                     for k in kinds)

    @cached_property
    def is_mla(self) -> bool:
        """DeepSeek's multi-head latent attention: one compressed latent per token."""
        return self.get("kv_lora_rank") is not None

    @cached_property
    def kv_heads(self) -> int:
        heads = require_int(self, "num_attention_heads")
        kv_heads = require_int(self, "num_key_value_heads", default=heads)
        if heads % kv_heads:
            raise ValueError(f"num_attention_heads {heads} is not a multiple of "
                             f"num_key_value_heads {kv_heads}")
        return kv_heads

    @cached_property
    def head_dim(self) -> int:
        return head_dim(self)

    @cached_property
    def cache_row_width(self) -> int:
        """Values in one cached row: a head's K width, or MLA's latent plus rope key
        (a block-quantized cache must store whole blocks of it)."""
        if self.is_mla:
            return require_int(self, "kv_lora_rank") + require_int(self, "qk_rope_head_dim")
        return self.head_dim

    @cached_property
    def dense_params(self) -> int:
        """:func:`dense_params` of this config."""
        hidden = require_int(self, "hidden_size")
        layers = require_int(self, "num_hidden_layers")
        heads = require_int(self, "num_attention_heads")
        ffn = require_int(self, "intermediate_size")
        vocab = require_int(self, "vocab_size")
        attention = hidden * self.head_dim * (2 * heads + 2 * self.kv_heads)
        mlp = 3 * hidden * ffn
        norms = 2 * hidden
        embeddings = vocab * hidden * (1 if self.get("tie_word_embeddings") else 2)
        return layers * (attention + mlp + norms) + hidden + embeddings


def _window(cfg: Mapping) -> int:
    for key in ("sliding_window", "attention_chunk_size"):
        if cfg.get(key) is not None:
            return require_int(cfg, key)
    raise ValueError("config marks layers as sliding but gives no sliding_window")


def _kinds(cfg: Mapping, n_layers: int) -> list[str]:
    """full / window for every layer, from whichever convention the config uses."""
    types = cfg.get("layer_types")
    if types is not None:
        if len(types) != n_layers:
            raise ValueError(f"layer_types has {len(types)} entries for {n_layers} layers")
        recurrent = sorted({t for t in types if t in RECURRENT_KINDS})
        if recurrent:
            raise ValueError(f"layer type(s) {', '.join(recurrent)} in layer_types keep a "
                             "fixed-size recurrent state, not a per-token KV cache; "
                             "kv_cache_bytes does not size it")
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


def dense_params(cfg: Mapping | str | Path) -> int:
    """Parameters of a dense llama-style decoder (attention + gated MLP + embeddings).

    Good to within a fraction of a percent for Llama, Mistral and Qwen2 (their
    biases and norms are tiny); MoE and MLA models need their own accounting.
    """
    return load_config(cfg).dense_params


def gguf_sizes(model: str = "Llama-2-7B") -> pd.DataFrame:
    """Sourced sizes of one model's GGUF files, in bytes, per format."""
    df = tables.load("llama2_7b_gguf_sizes")
    rows = df[df["model"] == model]
    if rows.empty:
        raise ValueError(f"no GGUF sizes for {model!r}; models: {', '.join(df['model'].unique())}")
    return rows.reset_index(drop=True)


def gguf_size_bytes(quant: str, kind: str = "file", model: str = "Llama-2-7B") -> float:
    """One sourced size: ``kind="file"`` (bytes on disk, as Hugging Face lists
    it) or ``kind="tensors"`` (tensor data, as llama-bench reports it)."""
    rows = gguf_sizes(model)
    prefix = {"file": "file on disk", "tensors": "tensor data"}
    if kind not in prefix:
        raise ValueError(f"kind must be 'file' or 'tensors', got {kind!r}")
    match = rows[(rows["quant"] == quant) & rows["size_kind"].str.startswith(prefix[kind])]
    if match.empty:
        raise ValueError(f"no {kind} size for {model} {quant} in llama2_7b_gguf_sizes.csv")
    exact = match[match["stated_unit"] == "B"]
    return float((exact if not exact.empty else match)["size_bytes"].iloc[0])
