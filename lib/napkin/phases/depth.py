"""Why the gap narrows with depth: work per prompt token against bytes per generated token.

Deeper in a context, a prompt token's attention FLOPs grow and a generated token's cache
reads grow; which grows faster relative to what it started from decides whether the
prefill / decode ratio shrinks. Chapter 2.
"""

from __future__ import annotations

import numpy as np
import pandas as pd

from .bench import _short_model, spark_bench
from .compute import layer_params, prefill_flops_per_token

def _experts(cfg) -> tuple[int, int]:
    """(experts, experts per token) of a mixture of experts; (0, 0) for a dense model."""
    from ..models import require_int

    experts = cfg.get("num_local_experts") or cfg.get("num_experts")
    if not experts:
        return 0, 0
    return int(experts), require_int(cfg, "num_experts_per_tok")


def decode_weight_bytes(model, file_bytes: float, file_params: float,
                        expert_format: str = "MXFP4") -> dict:
    """Bytes of weights one generated token reads: its layer weights (:func:`layer_params`)
    and the output layer, which decode runs for every token.

    A dense model's weights are priced at the file's average bytes per weight
    (``file_bytes / file_params``, e.g. llama-bench's model size over its parameter count).
    A mixture of experts stores its experts in ``expert_format`` (gpt-oss: MXFP4) and the
    rest (attention, router, vocabulary tables) at whatever the file has left per weight;
    the file's average would price those at nearly the experts' bits. Returns the bytes and
    both prices per weight."""
    from .. import catalog
    from ..models import bits_per_weight, load_config, require_int
    from ..units import require_positive

    size = require_positive("file_bytes", file_bytes)
    n = require_positive("file_params", file_params)
    cfg = catalog.config(model) if isinstance(model, str) else load_config(model)
    hidden = require_int(cfg, "hidden_size")
    out_layer = require_int(cfg, "vocab_size") * hidden
    layers = require_int(cfg, "num_hidden_layers")
    experts, routed = _experts(cfg)
    expert = 3 * hidden * require_int(cfg, "intermediate_size")
    if not experts:
        bpw = size / n
        return {"weight_bytes": (layer_params(cfg) + out_layer) * bpw,
                "expert_bytes_per_weight": None, "other_bytes_per_weight": bpw}
    expert_bpw = bits_per_weight(expert_format) / 8
    all_experts = layers * experts * expert
    if all_experts >= n or all_experts * expert_bpw >= size:
        raise ValueError(f"file_bytes {size:,.0f} and file_params {n:,.0f} leave nothing for "
                         f"the non-expert weights of {cfg.get('_name', model)!r}")
    other_bpw = (size - all_experts * expert_bpw) / (n - all_experts)
    active_experts = layers * routed * expert
    other = layer_params(cfg) - active_experts + out_layer
    return {"weight_bytes": active_experts * expert_bpw + other * other_bpw,
            "expert_bytes_per_weight": expert_bpw, "other_bytes_per_weight": other_bpw}


def bench_decode_weight_bytes(model: str = "gpt-oss-120b") -> dict:
    """:func:`decode_weight_bytes` of a model of the benchmark files, priced from the model
    size (GiB) and parameter count llama-bench prints there."""
    from ..units import GiB

    df = spark_bench()
    df = df[df["model"].map(_short_model) == model]
    if df.empty:
        raise ValueError(f"no runs of model {model!r} in the benchmark files")
    row = df.iloc[0]
    return decode_weight_bytes(model, float(row["model_size_GiB"]) * GiB,
                               float(row["model_params_B"]) * 1e9)


def rule_by_read(discount: float) -> pd.DataFrame:
    """The essay's buying rule (bandwidth over bytes a token reads, times ``discount``) for
    each machine and mixture of experts the benchmark files decode at empty context, read
    two ways: over the file's size, as the essay words it, and over the weights one token
    reads (:func:`bench_decode_weight_bytes`: the routed experts and the rest), beside the
    decode rate measured (the median over the files' builds) and each reading's miss as a
    factor. A mixture reads a small part of its file per token, so the file-size reading
    undershoots it many times."""
    from ..hardware import chip
    from ..units import GiB, require_positive
    from .bench import is_moe

    require_positive("discount", discount)
    df = spark_bench()
    df = df[(df["phase"] == "decode") & (df["context_depth_tokens"] == 0)].assign(
        short=lambda d: d["model"].map(_short_model))
    rows = []
    for (machine, model), runs in df[df["short"].map(is_moe)].groupby(
            ["machine", "short"], sort=False):
        try:
            read = bench_decode_weight_bytes(model)["weight_bytes"]
        except ValueError:  # no config in data/models for it: its active part is unknown
            continue
        bandwidth = chip(machine).bandwidth_bytes_per_s
        file_bytes = float(runs["model_size_GiB"].iloc[0]) * GiB
        rows.append({"machine": machine, "model": model, "file_GB": file_bytes / 1e9,
                     "read_GB": read / 1e9,
                     "by_file_tok_per_s": discount * bandwidth / file_bytes,
                     "by_read_tok_per_s": discount * bandwidth / read,
                     "measured_tok_per_s": runs["throughput_tok_per_s"].median(),
                     "builds": runs["build"].nunique()})
    out = pd.DataFrame(rows)
    for way in ("by_file", "by_read"):  # a miss as a factor, either way the same
        out[f"{way}_error"] = np.exp(np.abs(np.log(out[f"{way}_tok_per_s"]
                                                   / out["measured_tok_per_s"])))
    return out


def depth_growth(model: str, prompt_tokens: int, depth: int, weight_bytes: float,
                 kv_dtype_bytes: float = 2.0) -> dict:
    """How much a prompt token's FLOPs and a generated token's bytes grow from empty
    context to ``depth`` tokens, by the roofline's count.

    Prefill: :func:`prefill_flops_per_token` at ``depth`` over at 0. Decode: (weights + cache
    at ``depth``) over weights, ``weight_bytes`` being what a generated token reads of the
    weights (:func:`decode_weight_bytes`), the cache at ``kv_dtype_bytes`` per element
    (llama-bench's default f16 cache: 2), windows honoured.
    """
    from .. import catalog
    from ..kvcache import kv_cache_bytes, load_config
    from ..units import require_positive

    if isinstance(depth, bool) or not isinstance(depth, (int, np.integer)) or depth < 0:
        raise ValueError(f"depth must be a whole number of tokens >= 0, got {depth!r}")
    d = int(depth)
    weights = require_positive("weight_bytes", weight_bytes)
    cfg = catalog.config(model) if isinstance(model, str) else load_config(model)
    cache = kv_cache_bytes(cfg, d, 1, kv_dtype_bytes)
    return {"prefill_flops_ratio": prefill_flops_per_token(cfg, prompt_tokens, d)
            / prefill_flops_per_token(cfg, prompt_tokens, 0),
            "decode_bytes_ratio": (weights + cache) / weights,
            "weight_bytes": weights, "cache_bytes": cache}


def tokens_per_expert(model: str, prompt_tokens: int) -> float:
    """Prompt tokens each expert of a mixture of experts multiplies, on average, in one
    prompt: tokens x experts per token / experts (a dense model: every token)."""
    from .. import catalog
    from ..models import require_int

    if isinstance(prompt_tokens, bool) or not isinstance(prompt_tokens, int) or prompt_tokens < 1:
        raise ValueError(f"prompt_tokens must be a whole number >= 1, got {prompt_tokens!r}")
    cfg = catalog.config(model)
    experts = cfg.get("num_local_experts") or cfg.get("num_experts")
    if not experts:
        return float(prompt_tokens)
    return prompt_tokens * require_int(cfg, "num_experts_per_tok") / int(experts)
