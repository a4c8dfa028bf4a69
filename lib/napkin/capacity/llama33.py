"""The essay's running example for the KV cache, Llama 3.3 70B, as chapters 4 and 5 check
it: its config.json, and its cache at the essay's bytes per element."""

from __future__ import annotations

from typing import Mapping

from .. import catalog, essay, hardware, kvcache

MODEL = "Llama-3.3-70B"


def config() -> dict:
    return catalog.config(MODEL)


def kv_bytes(config: Mapping, tokens: int, batch: int = 1) -> int:
    """Cache bytes of ``batch`` sequences of ``tokens``, at the essay's bytes per element."""
    return kvcache.kv_cache_bytes(config, tokens, batch, essay.claim("kv_bytes_per_element"))


def fp8_weight_bytes() -> float:
    return catalog.weight_bytes(MODEL, "FP8")


def fits_at(chip: str, context: int) -> int:
    """Sequences of ``context`` tokens whose 16-bit caches fit beside FP8 weights."""
    return kvcache.max_batch(config(), context, hardware.chip(chip).capacity_bytes,
                             fp8_weight_bytes())
