"""Grouped-query attention: MHA, GQA and MQA of one model shape, and decode at depth.

The three layouts differ only in how many K and V heads each layer keeps (all of
them, a group's worth, one). The query side and the weights hardly change; the
cache changes by the ratio of KV heads, and so does what every decode step must
read from it. At batch one a decode step reads

    bytes per token = weight bytes + KV cache bytes at the current depth

so the napkin ceiling, bandwidth over those bytes, falls as the context deepens,
much faster with more KV heads.
"""

from __future__ import annotations

import pandas as pd

from .. import kvcache
from ..models import load_config, require_int
from ..units import require_positive

__all__ = ["decode_at_depth", "depth_grid", "depth_where_cache_equals_weights", "variant_display",
           "variant_table", "variants"]


def variants(config, gqa_label: str = "GQA") -> dict[str, dict]:
    """{"MHA": ..., "GQA": ..., "MQA": ...}: the config with every query head given its
    own KV head, as it is, and with a single KV head. Everything else stays."""
    cfg = load_config(config)
    heads = require_int(cfg, "num_attention_heads")
    kv = require_int(cfg, "num_key_value_heads", default=heads)
    if cfg.get("kv_lora_rank") is not None:
        raise ValueError("an MLA model caches a latent, not KV heads; it has no MHA/GQA/MQA "
                         "variants to compare")
    if kv in (1, heads):
        raise ValueError(f"the config has {kv} KV heads for {heads} query heads; start from a "
                         "GQA model (1 < num_key_value_heads < num_attention_heads)")
    hd = kvcache.head_dim(cfg)  # pin head_dim: changing KV heads must not change it
    return {"MHA": {**cfg, "num_key_value_heads": heads, "head_dim": hd},
            gqa_label: {**cfg, "head_dim": hd},
            "MQA": {**cfg, "num_key_value_heads": 1, "head_dim": hd}}


def variant_table(config, context_tokens: int, weight_bytes: float, kv_dtype="f16",
                  depths=(8192, 32768, 131072)) -> pd.DataFrame:
    """Per variant: KV heads, cache per token, cache at ``context_tokens``, and the bytes
    one decode step reads (weights + cache) at each of ``depths``."""
    require_positive("weight_bytes", weight_bytes)
    rows = []
    for label, cfg in variants(config).items():
        row = {"variant": label, "kv_heads": cfg["num_key_value_heads"],
               "kv_per_token_bytes": kvcache.kv_bytes_per_token(cfg, kv_dtype),
               "kv_at_context_bytes": kvcache.kv_cache_bytes(cfg, context_tokens, 1, kv_dtype)}
        for depth in depths:
            row[f"read_at_{depth}_bytes"] = kvcache.decode_step_bytes(cfg, weight_bytes, depth,
                                                                      1, kv_dtype)
        rows.append(row)
    return pd.DataFrame(rows)


def decode_at_depth(configs: dict[str, dict], weight_bytes: float, bandwidth_bytes_per_s: float,
                    depths, capacity_bytes: float | None = None,
                    kv_dtype="f16") -> pd.DataFrame:
    """The napkin ceiling at batch one for each config and depth: bandwidth over (weights +
    cache). ``fits`` says whether weights and cache fit in ``capacity_bytes``."""
    bandwidth = require_positive("bandwidth_bytes_per_s", bandwidth_bytes_per_s)
    rows = []
    for label, cfg in configs.items():
        cfg = kvcache.load_config(cfg)  # parsed once for every depth
        for depth in depths:
            kv = kvcache.kv_cache_bytes(cfg, int(depth), 1, kv_dtype)
            step = weight_bytes + kv
            rows.append({"variant": label, "depth_tokens": int(depth), "kv_bytes": kv,
                         "weight_bytes": weight_bytes, "bytes_per_token": step,
                         "kv_share": kv / step, "tokens_per_s": bandwidth / step,
                         "fits": True if capacity_bytes is None else step <= capacity_bytes})
    return pd.DataFrame(rows)


def depth_grid(limit: int, points_per_doubling: int = 4, start: int = 1024) -> list[int]:
    """Depths from 0 to ``limit`` tokens, evenly spaced on a log scale above ``start``."""
    grid = {0}
    value, k = start, 0
    while value <= limit:
        grid.add(int(round(value)))
        k += 1
        value = start * 2 ** (k / points_per_doubling)
    grid.add(limit)
    return sorted(grid)


def depth_where_cache_equals_weights(config, weight_bytes: float, kv_dtype="f16") -> int:
    """The context depth at which the cache read per token outweighs the weights."""
    per_token = kvcache.kv_bytes_per_token(config, kv_dtype)
    if kvcache.linear_form(config).full_elements_per_token == 0:
        raise ValueError("every layer is windowed: the cache never outgrows the window")
    return int(-(-require_positive("weight_bytes", weight_bytes) // per_token))


def variant_display(df: pd.DataFrame, depths=(8192, 32768, 131072)) -> pd.DataFrame:
    """:func:`variant_table` formatted for the page (decimal GB, binary in brackets)."""
    from ..units import GB, GiB, MB, MiB

    out = pd.DataFrame({
        "variant": df["variant"], "kv_heads": df["kv_heads"],
        "per_token": [f"{v / MB:,.3f} MB ({v / MiB:,.3f} MiB)" for v in df["kv_per_token_bytes"]],
        "at_context": [f"{v / GB:,.1f} GB ({v / GiB:,.0f} GiB)"
                       for v in df["kv_at_context_bytes"]]})
    for depth in depths:
        out[f"read_{depth}"] = [f"{v / GB:,.1f} GB" for v in df[f"read_at_{depth}_bytes"]]
    return out
