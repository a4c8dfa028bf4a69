"""Chapter 3, the H100 ridge: the ridge point, the batch at which decode turns
compute-bound, with and without the KV cache, and a prefill against the ridge."""

from __future__ import annotations

import math

from .. import essay, hardware, roofline
from ..errata.finding import Finding

#: The notebook these checks belong to (the errata page groups them by it).
CHAPTER = "03_h100_ridge"


def h100_ridge() -> Finding:
    chip = hardware.chip("H100 SXM")
    dense = chip.specs["fp16_tensor_dense_TFLOPS"]
    sparse = chip.specs["fp16_tensor_sparse_TFLOPS"]
    bw = chip.bandwidth_bytes_per_s
    ridge = roofline.ridge_point(dense * 1e12, bw)
    stated = essay.claim("h100_ridge")
    return Finding(
        data_says=f"{dense:.0f} dense FP16 TFLOPS / {bw / 1e12:.2f} TB/s = {ridge:.1f} "
                  f"FLOP/byte; the sparse {sparse:,.0f} would give "
                  f"{roofline.ridge_point(sparse * 1e12, bw):.1f}",
        verdict="rounding" if round(ridge) == stated else "inconsistent",
        conclusion_holds=True,
        explanation="The essay correctly halves NVIDIA's with-sparsity headline before dividing; "
                    "a ridge from the sparse figure would be twice as high and wrong for dense "
                    "matmuls.",
        essay_values={"h100_bandwidth_TB_per_s": essay.claim("h100_bandwidth") / 1000},
    )


def decode_batch_crossover() -> Finding:
    ridge = roofline.chip_roof("H100 SXM").ridge
    # FP16 weights: intensity of the weight matmuls equals the batch size.
    batch = ridge / roofline.matmul_intensity(1, 2.0)
    stated = essay.claim("decode_batch_crossover")
    return Finding(
        data_says=f"intensity of the FP16 weight matmuls = batch, so batch {batch:.0f}",
        verdict="rounding" if round(batch, -2) == stated else "inconsistent",
        conclusion_holds=True,
        explanation="Exactly the ridge point, as the essay says, counting weight reads only.",
    )


def decode_crossover_with_kv() -> Finding:
    model = roofline.llama_3_3_70b()
    h100 = roofline.chip_roof("H100 SXM")
    ridge = h100.ridge
    limit = roofline.context_limit(model, ridge)
    at = {c: roofline.batch_to_ridge(model, ridge, c) for c in (1024, 2048)}
    group = h100.times(roofline.chips_to_hold(model, h100))
    turn = roofline.capacity_turn(model, group)
    stated = essay.claim("decode_batch_crossover")
    # the essay's batch survives the cache reads only if a chat-length context keeps it
    near = math.isfinite(at[1024]) and round(at[1024], -2) == stated
    return Finding(
        data_says=f"{model.name} at FP16, the decode step as a whole (FLOPs and bytes pooled): "
                  f"batch {at[1024]:,.0f} at 1,024 tokens of context, of which "
                  f"{roofline.max_batch(model, group, 1024):,} fit on {group.name}; no batch at "
                  f"all beyond {limit:,.0f} tokens (e.g. 2,048: "
                  f"{'never' if math.isinf(at[2048]) else f'{at[2048]:,.0f}'}), and none that "
                  f"fits from {turn['turn_tokens']:,}",
        verdict="rounding" if near else "inconsistent",
        conclusion_holds=bool(at[1024] <= 1.5 * stated),
        explanation="Batching shares the weight reads, not the cache reads: each sequence's "
                    "attention does about as many FLOPs per cached byte as there are query "
                    f"heads per KV head ({model.query_groups}), far below the ridge, so past a "
                    "short context the step stays memory-bound however large the batch (the "
                    "weight matmuls alone, kernels of their own, still turn compute-bound from the "
                    "essay's batch on).",
    )


def prefill_over_ridge() -> Finding:
    ridge = roofline.chip_roof("H100 SXM").ridge
    n = essay.claim("prefill_intensity")
    intensity = roofline.matmul_intensity(n, 2.0)
    stated = essay.claim("prefill_over_ridge")
    return Finding(
        data_says=f"{intensity:,.0f} FLOP/byte at FP16 / {ridge:.1f} = {intensity / ridge:.2f}x",
        verdict="rounding" if round(intensity / ridge) == stated else "inconsistent",
        conclusion_holds=True,
        explanation="Weight matmuls only; the prompt's attention adds FLOPs, so the real "
                    "intensity is a little higher still.",
    )
