"""Model architecture from a Hugging Face ``config.json``, and weight bytes by format.

Decode reads every weight once per token, so the napkin needs two numbers
about a model: how many parameters a token touches, and how many bytes each
takes in the chosen format. Both come from here.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Mapping

import pandas as pd

from . import tables
from .units import require_positive

__all__ = ["BITS_PER_WEIGHT", "bits_per_weight", "dense_params", "gguf_size_bytes", "gguf_sizes",
           "head_dim", "load_config", "require_int", "params_bytes"]

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


def load_config(config: Mapping | str | Path) -> dict:
    """A Hugging Face ``config.json`` as a dict, from a dict or a path.

    Multimodal configs nest the language model under ``text_config``; that part
    is what inference on text reads, so it is returned merged over the top level.
    """
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
    return cfg


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


def dense_params(cfg: Mapping | str | Path) -> int:
    """Parameters of a dense llama-style decoder (attention + gated MLP + embeddings).

    Good to within a fraction of a percent for Llama, Mistral and Qwen2 (their
    biases and norms are tiny); MoE and MLA models need their own accounting.
    """
    cfg = load_config(cfg)
    hidden = require_int(cfg, "hidden_size")
    layers = require_int(cfg, "num_hidden_layers")
    heads = require_int(cfg, "num_attention_heads")
    kv_heads = require_int(cfg, "num_key_value_heads", default=heads)
    ffn = require_int(cfg, "intermediate_size")
    vocab = require_int(cfg, "vocab_size")
    hd = head_dim(cfg)
    attention = hidden * hd * (2 * heads + 2 * kv_heads)
    mlp = 3 * hidden * ffn
    norms = 2 * hidden
    embeddings = vocab * hidden * (1 if cfg.get("tie_word_embeddings") else 2)
    return layers * (attention + mlp + norms) + hidden + embeddings


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
