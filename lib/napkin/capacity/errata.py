"""Chapter 4, the KV cache: Llama 3.3 70B's config as the essay reads it, its cache per
token, at the full context and in the essay's batch example, and the capacity argument."""

from __future__ import annotations

from .. import capacity, essay, hardware, kvcache
from ..units import GB, GiB, KiB, MiB
from . import llama33
from ..errata.finding import Finding

#: The notebook these checks belong to (the errata page groups them by it).
CHAPTER = "04_kv_cache"


def llama33_config_reading() -> Finding:
    cfg = llama33.config()
    pairs = {"layers": ("llama33_layers", cfg["num_hidden_layers"]),
             "attention heads": ("llama33_attention_heads", cfg["num_attention_heads"]),
             "KV heads": ("llama33_kv_heads", cfg["num_key_value_heads"]),
             "hidden size": ("llama33_hidden_size", cfg["hidden_size"]),
             "head dim": ("llama33_head_dim", kvcache.head_dim(cfg))}
    differ = [k for k, (claim, value) in pairs.items() if essay.claim(claim) != value]
    return Finding(
        data_says=", ".join(f"{v} {k}" for k, (_, v) in pairs.items()),
        verdict="inconsistent" if differ else "agrees",
        conclusion_holds=not differ,
        explanation="The config.json the essay links, as recorded in data/models.",
    )


def kv_per_token() -> Finding:
    per_token = kvcache.kv_bytes_per_token(llama33.config(), essay.claim("kv_bytes_per_element"))
    stated, kib = essay.claim("kv_per_token_bytes"), essay.claim("kv_per_token_kib")
    exact = per_token == stated and per_token / KiB == kib
    return Finding(
        data_says=f"{per_token:,} bytes = {per_token / KiB:.0f} KiB = {per_token / 1e3:.2f} KB",
        verdict="agrees" if exact else "inconsistent",
        conclusion_holds=exact,
        explanation="2 (K and V) × KV heads × head dim × layers × 2 bytes; exact, so the "
                    "essay's '≈' is not needed.",
    )


def kv_full_context() -> Finding:
    tokens = int(essay.claim("kv_full_context_tokens"))
    full = llama33.kv_bytes(llama33.config(), tokens)
    rounded = llama33.kv_bytes(llama33.config(), 128_000)
    stated = essay.claim("kv_full_context_gb")
    return Finding(
        data_says=f"{full / GB:.2f} GB = {full / GiB:.2f} GiB",
        verdict="rounding" if round(full / GB) == stated else "inconsistent",
        conclusion_holds=True,
        explanation=f"The same cache is quoted as {full / GiB:.0f} (GiB) or {stated:.0f} (GB): "
                    f"the GiB figure is {1 - GB / GiB:.1%} smaller, the GB one "
                    f"{GiB / GB - 1:.1%} larger. Reading 128k as 128,000 tokens gives "
                    f"{rounded / GB:.1f} GB, {1 - rounded / full:.1%} less.",
    )


def kv_batch_example() -> Finding:
    batch, tokens = int(essay.claim("kv_example_batch")), int(essay.claim("kv_example_context"))
    total = llama33.kv_bytes(llama33.config(), tokens, batch)
    h100 = hardware.chip("H100 SXM")
    driver = h100.specs["driver_visible_memory_MiB"] * MiB
    stated, essay_capacity = essay.claim("kv_batch32_8k_gb"), essay.claim("h100_capacity")
    exceeds = total > h100.capacity_bytes
    fills = "exceeds" if exceeds else "exactly fills" if total == h100.capacity_bytes else \
        "falls short of"
    return Finding(
        data_says=f"{total / GB:.1f} GB = {total / GiB:.1f} GiB of cache alone; the H100 "
                  f"holds {h100.capacity_bytes / GiB:.0f} GiB ({h100.capacity_bytes / GB:.1f} "
                  f"GB), of which nvidia-smi reports {driver / GiB:.2f} GiB",
        verdict="rounding" if exceeds and round(total / GB) == stated else "unit slip",
        conclusion_holds=total + llama33.fp8_weight_bytes() > h100.capacity_bytes,
        explanation=f"The essay sets decimal GB against the H100's binary capacity, which makes "
                    f"the cache look {total / (essay_capacity * GB) - 1:.1%} too large. In one "
                    f"unit the cache {fills} the whole "
                    f"memory ({total / driver - 1:.1%} over the total nvidia-smi reports, and "
                    "CUDA and an engine's runtime take more still); the point holds because the "
                    "weights need room too.",
    )


def capacity_problem() -> Finding:
    turns = {c: capacity.roofline_turn(llama33.MODEL, c) for c in capacity.DATACENTER}
    # the essay's mechanism: at long context (its example is 8k) the capacity cap is what
    # drags decode back onto the memory-bound side. That needs compute-bound batches to exist
    # there, ones the memory merely cannot hold; where none exist at any batch, the cache
    # reads keep decode memory-bound and capacity only lowers throughput within that regime.
    long_context = int(essay.claim("kv_example_context"))
    compute_bound_somewhere_long = any(t["never_beyond_tokens"] > long_context
                                       for t in turns.values())
    return Finding(
        data_says="; ".join(f"{c}: the batch that fits falls below the batch that reaches the "
                            f"ridge from {t['turn_tokens']:,} tokens, and from "
                            f"{t['never_beyond_tokens']:,} no batch reaches it at all"
                            for c, t in turns.items())
                  + f"; at {long_context:,} tokens no batch is compute-bound on any of them",
        verdict="agrees" if compute_bound_somewhere_long else "inconsistent",
        conclusion_holds=all(llama33.fits_at(c, long_context) < t["weights_only_crossover"]
                             for c, t in turns.items()),
        explanation="Llama 3.3 70B, FP8 weights, 16-bit cache, every sequence's cache read "
                    "counted. The outcome the essay states holds: at long context capacity caps "
                    "the batch and decode is memory-bound. Its mechanism holds only in a band of "
                    "short contexts (between the two figures above for each chip), where a "
                    "compute-bound batch exists but does not fit. At the long contexts it means, "
                    "each sequence's own cache reads keep decode memory-bound however much "
                    "memory there is; capacity then sets how many sequences share each read of "
                    "the weights, and so the throughput of a decode that was memory-bound "
                    "anyway.",
    )
