"""The roofline: where a chip stops waiting on memory and starts waiting on arithmetic.

    attainable FLOP/s  =  min(peak FLOP/s,  intensity x bandwidth)
    ridge point        =  peak FLOP/s / bandwidth            (FLOP per byte)

A piece of work whose arithmetic intensity (FLOPs per byte moved from memory)
is below the chip's ridge point is memory-bound; above it, compute-bound.

For the weight matmuls of a transformer, each weight is read once per forward
pass and used once per token in that pass: ``2 x n_tokens`` FLOPs per weight
against ``bytes_per_weight`` bytes, so the intensity is ``2 n / bytes_per_weight``
(``n`` at FP16). Decode has ``n`` = batch size, prefill ``n`` = prompt length.

What the essay leaves out, and :func:`decode_step` puts back: every sequence in
a decode batch also reads its *own* KV cache, which no other sequence shares.
Batching amortises the weights, not the cache, so the intensity of a whole
decode step tends, as the batch grows, to that of attention alone (the ratio of
query heads to KV heads, at FP16), far below any GPU's ridge point.

FLOP/s are always of one declared kind (dense or sparse, tensor or vector);
:class:`Roof` carries the kind with the number.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Iterable, Mapping

import numpy as np
import pandas as pd

from . import catalog, hardware
from .kvcache import dtype_bytes, kv_bytes_per_token, kv_cache_bytes, linear_form
from .models import BITS_PER_WEIGHT, dense_params, load_config, require_int
from .units import TFLOPS, require_positive


def ridge_point(flops_per_s: float, bandwidth_bytes_per_s: float) -> float:
    """FLOP per byte at which a chip turns from memory-bound to compute-bound."""
    peak = require_positive("flops_per_s", flops_per_s)
    bw = require_positive("bandwidth_bytes_per_s", bandwidth_bytes_per_s)
    return peak / bw


def attainable_flops(intensity: float, flops_per_s: float, bandwidth_bytes_per_s: float) -> float:
    """The roofline itself: FLOP/s a kernel of this intensity can reach at best."""
    i = require_positive("intensity", intensity)
    peak = require_positive("flops_per_s", flops_per_s)
    bw = require_positive("bandwidth_bytes_per_s", bandwidth_bytes_per_s)
    return min(peak, i * bw)


def matmul_intensity(n_tokens: float, bytes_per_weight: float = 2.0) -> float:
    """FLOP per weight byte when every weight serves ``n_tokens`` tokens in one pass.

    ``2 n`` FLOPs (a multiply and an add per token) per ``bytes_per_weight`` bytes.
    Decode: ``n_tokens`` is the batch; prefill: the prompt length. At FP16, it is ``n``.
    """
    n = require_positive("n_tokens", n_tokens)
    b = require_positive("bytes_per_weight", bytes_per_weight)
    return 2 * n / b


def bound(intensity: float, ridge: float) -> str:
    """``"memory"`` below the ridge point, ``"compute"`` at or above it."""
    return "compute" if require_positive("intensity", intensity) >= \
        require_positive("ridge", ridge) else "memory"


# -- chips ----------------------------------------------------------------------------------

@dataclass(frozen=True)
class Roof:
    """One machine's roof: peak FLOP/s of a stated kind, and memory bandwidth."""

    name: str
    flops_per_s: float
    bandwidth_bytes_per_s: float
    flops_kind: str
    capacity_bytes: float | None = None
    n_chips: int = 1

    def __post_init__(self):
        require_positive("flops_per_s", self.flops_per_s)
        require_positive("bandwidth_bytes_per_s", self.bandwidth_bytes_per_s)
        if self.capacity_bytes is not None:
            require_positive("capacity_bytes", self.capacity_bytes)
        if isinstance(self.n_chips, bool) or not isinstance(self.n_chips, int) or self.n_chips < 1:
            raise ValueError(f"n_chips must be a whole number >= 1, got {self.n_chips!r}")

    @property
    def ridge(self) -> float:
        return ridge_point(self.flops_per_s, self.bandwidth_bytes_per_s)

    def times(self, n_chips: int) -> "Roof":
        """``n_chips`` of these working as one (ideal tensor parallelism: FLOP/s, bandwidth
        and capacity all scale, so the ridge point does not move)."""
        if isinstance(n_chips, bool) or not isinstance(n_chips, int) or n_chips < 1:
            raise ValueError(f"n_chips must be a whole number >= 1, got {n_chips!r}")
        return replace(self, name=f"{n_chips} x {self.name}" if n_chips > 1 else self.name,
                       flops_per_s=self.flops_per_s * n_chips,
                       bandwidth_bytes_per_s=self.bandwidth_bytes_per_s * n_chips,
                       capacity_bytes=None if self.capacity_bytes is None
                       else self.capacity_bytes * n_chips,
                       n_chips=self.n_chips * n_chips)


#: The arithmetic each weight format runs in, by engine backend. llama.cpp's CUDA and ROCm
#: backends multiply quantized blocks with 8-bit integer dot products (ggml-cuda's MMQ
#: kernels quantize the activations to q8_1 and use the INT8 tensor cores), and its F16
#: weights through FP16 GEMMs; its Metal backend dequantizes every format to FP16 in the
#: matmul (Apple's GPUs have no integer matrix path). A serving stack runs FP8 weights on FP8
#: tensor cores and FP4 (NVFP4) on Blackwell's FP4 ones.
_FLOAT_FORMATS = {"F32": "fp32", "F16": "fp16", "BF16": "fp16", "FP8": "fp8", "FP4": "fp4",
                  "NVFP4": "fp4"}
BACKENDS = ("CUDA", "ROCm", "Metal", "serving")
ARITHMETIC_SOURCE = ("https://github.com/ggml-org/llama.cpp/blob/master/ggml/src/ggml-cuda/"
                     "mmq.cuh (MMQ: quantized weights x q8_1 activations, INT8 MMA)")


def arithmetic_for(weight_format: str, backend: str = "CUDA") -> str:
    """The arithmetic kind (:data:`napkin.hardware.ARITHMETIC`) a matmul of weights stored in
    ``weight_format`` runs in on ``backend``; an unknown format or backend is refused."""
    fmt = str(weight_format).upper()
    if backend not in BACKENDS:
        raise ValueError(f"unknown backend {backend!r}; known: {', '.join(BACKENDS)}")
    if fmt not in BITS_PER_WEIGHT:
        raise ValueError(f"unknown weight format {weight_format!r}; known: "
                         f"{', '.join(BITS_PER_WEIGHT)}")
    if backend == "Metal":
        return "fp32" if fmt == "F32" else "fp16"
    if fmt in _FLOAT_FORMATS:
        return _FLOAT_FORMATS[fmt]
    return "int8"  # a llama.cpp block format (Q4_0, Q8_0, Q4_K, MXFP4 ...)


#: llama.cpp's CUDA backend multiplies F16 weights at batches above its vector and small-matrix
#: kernels (more than 16 tokens) through cuBLAS with FP16 accumulation (``CUBLAS_COMPUTE_16F``;
#: FP32 only on Volta, CDNA and RDNA4, or where a graph asks for F32 precision), and BF16
#: weights with FP32 accumulation. GeForce cards run FP16 accumulation twice as fast as FP32.
#: (ggml_cuda_mul_mat, ggml_cuda_mul_mat_cublas and batched_mul_mat_traits, at this commit.)
ACCUMULATE_SOURCE = ("https://github.com/ggml-org/llama.cpp/blob/"
                     "00108827d87949b538ad1821f81a6b111827fcda/ggml/src/ggml-cuda/ggml-cuda.cu")


def peak_for(chip_name: str, weight_format: str, backend: str = "CUDA") -> hardware.Peak:
    """The dense peak a matmul of ``weight_format`` weights runs at on ``backend``: the rate of
    :func:`arithmetic_for`, and for llama.cpp's F16 weights on CUDA the FP16-accumulate figure
    where the chip states one apart (GeForce cards), since that is the GEMM llama.cpp asks for
    (:data:`ACCUMULATE_SOURCE`). Other chips' FP16 figures hold for either accumulator."""
    chip = hardware.chip(chip_name)
    arith = arithmetic_for(weight_format, backend)
    spec = "fp16_tensor_dense_fp16acc_TFLOPS"
    if backend == "CUDA" and str(weight_format).upper() == "F16" and spec in chip.specs:
        return hardware.Peak(chip=chip.name, arithmetic="fp16",
                             flops_per_s=chip.specs[spec] * TFLOPS, spec=spec,
                             source=chip.source(spec), origin=chip.origins.get(spec, ""))
    return chip.peak(arith)


def chip_roof(name: str, arithmetic: str = "fp16", sparse: bool = False) -> Roof:
    """The roof of a chip in ``data/hardware_specs.csv`` for one arithmetic.

    Dense FP16/BF16 by default, the essay's roof; ``arithmetic="int8"`` for llama.cpp's
    quantized kernels, ``"fp8"`` for a served FP8 model. A chip that states no figure for
    that arithmetic is a ValueError naming what it does state, so no other figure can stand
    in for it silently; 2:4-sparse figures only when asked for.
    """
    chip = hardware.chip(name)
    peak = chip.peak(arithmetic, sparse)
    return Roof(name=name, flops_per_s=peak.flops_per_s,
                bandwidth_bytes_per_s=chip.bandwidth_bytes_per_s, flops_kind=peak.kind,
                capacity_bytes=chip.capacity_bytes)


def ridge_table(names: Iterable[str], arithmetic: Iterable[str] = ("fp16", "fp8", "int8",
                                                                    "fp4")) -> pd.DataFrame:
    """One row per chip and arithmetic it states a dense peak for: peak, bandwidth, ridge
    point, and the sources of both. Sparse figures are left out: no dense model runs them."""
    rows = []
    for name in names:
        chip = hardware.chip(name)
        kinds = [a for a in arithmetic if chip.has_peak(a)]
        if not kinds:
            raise ValueError(f"{name} states no dense peak for {', '.join(arithmetic)}")
        for a in kinds:
            peak = chip.peak(a)
            roof = chip_roof(name, a)
            rows.append({
                "chip": name, "vendor": chip.vendor, "arithmetic": a,
                "flops_kind": peak.kind, "flops_spec": peak.spec, "derived": peak.derived,
                "flops_per_s": roof.flops_per_s,
                "bandwidth_bytes_per_s": roof.bandwidth_bytes_per_s,
                "ridge_flop_per_byte": roof.ridge,
                "flops_source": peak.source,
                "bandwidth_source": chip.source("memory_bandwidth_GB_per_s"),
            })
    return pd.DataFrame(rows)


def crossover_table(chips: Iterable[str], formats: Iterable[str],
                    backend: str = "CUDA") -> pd.DataFrame:
    """For every chip and weight format: the arithmetic the format runs in, that roof's ridge,
    and the batch at which decode's weight matmuls reach it (weights only, no cache).

    A batch of B sequences does 2 FLOPs per weight per sequence against ``b`` bytes per
    weight, so the intensity is 2B/b and the crossover batch is ridge x b / 2: a format whose
    arithmetic is as much faster as its weights are smaller (FP8 on FP8 tensor cores) leaves
    the crossover where 16 bits had it; 4-bit blocks on INT8 kernels move it lower. The peak
    is the one the engine's kernel runs at (:func:`peak_for`: FP16 accumulate for llama.cpp's
    F16 GEMMs). A chip with no figure for the arithmetic gets no row.
    """
    rows = []
    for name in chips:
        chip = hardware.chip(name)
        for fmt in formats:
            arith = arithmetic_for(fmt, backend)
            if not chip.has_peak(arith):
                continue
            peak = peak_for(name, fmt, backend)
            bytes_per_weight = BITS_PER_WEIGHT[fmt.upper()] / 8
            ridge = ridge_point(peak.flops_per_s, chip.bandwidth_bytes_per_s)
            rows.append({"chip": name, "weight_format": fmt, "arithmetic": arith,
                         "bytes_per_weight": bytes_per_weight, "flops_per_s": peak.flops_per_s,
                         "flops_kind": peak.kind, "derived": peak.derived,
                         "ridge_flop_per_byte": ridge,
                         "crossover_batch": ridge / matmul_intensity(1, bytes_per_weight),
                         "flops_source": peak.source})
    return pd.DataFrame(rows)


# -- a model's decode step ------------------------------------------------------------------

@dataclass(frozen=True)
class Model:
    """What a decode step of one model reads and computes.

    ``params``: parameters every token touches (its matmul weights); ``weight_bytes``:
    what reading them once costs; ``config``: the Hugging Face config, for the KV cache
    (via :func:`napkin.kv_cache_bytes`) and the attention FLOPs.
    """

    name: str
    params: float
    weight_bytes: float
    config: Mapping
    kv_dtype_bytes: float = 2.0

    def __post_init__(self):
        require_positive("params", self.params)
        require_positive("weight_bytes", self.weight_bytes)
        require_positive("kv_dtype_bytes", self.kv_dtype_bytes)

    @classmethod
    def from_config(cls, config: Mapping | str | Path, name: str, bytes_per_weight: float = 2.0,
                    kv_dtype_bytes: float = 2.0, params: float | None = None) -> "Model":
        """A dense llama-style model; parameters counted from the config unless given."""
        cfg = load_config(config)
        n = dense_params(cfg) if params is None else require_positive("params", params)
        return cls(name=name, params=n,
                   weight_bytes=n * require_positive("bytes_per_weight", bytes_per_weight),
                   config=cfg, kv_dtype_bytes=kv_dtype_bytes)

    @classmethod
    def from_catalog(cls, name: str, weight_format: str, kv_dtype="f16") -> "Model":
        """A model of ``data/models`` as a decode step sees it: FLOPs from the parameters a
        token uses (the active ones of a mixture of experts), bytes from all its weights at
        ``weight_format`` (a large batch touches every expert), its cache at ``kv_dtype``."""
        return cls(name=name, params=catalog.params(name, active=True),
                   weight_bytes=catalog.weight_bytes(name, weight_format),
                   config=catalog.config(name), kv_dtype_bytes=float(dtype_bytes(kv_dtype)))

    @property
    def bytes_per_weight(self) -> float:
        return self.weight_bytes / self.params

    @property
    def query_groups(self) -> int:
        """Query heads per KV head: how often each cached K and V element is used."""
        heads = require_int(self.config, "num_attention_heads")
        return heads // require_int(self.config, "num_key_value_heads", default=heads)

    def kv_bytes_per_token(self) -> int:
        return kv_bytes_per_token(self.config, self.kv_dtype_bytes)

    def kv_bytes(self, context_tokens: int, batch: int = 1) -> int:
        """Cache bytes a decode step reads for ``batch`` sequences at ``context_tokens``."""
        return kv_cache_bytes(self.config, context_tokens, batch, self.kv_dtype_bytes)

    def attention_flops(self, context_tokens: int) -> float:
        """FLOPs of one query token's attention over its cache (QK and AV): every cached
        element is multiplied and added once per query head that shares it."""
        elements = self.kv_bytes(context_tokens) / self.kv_dtype_bytes
        return 2.0 * self.query_groups * elements


@dataclass(frozen=True)
class Step:
    """One decode step of ``batch`` sequences, each with ``context_tokens`` in its cache."""

    batch: int
    context_tokens: int
    flops: float
    weight_bytes: float
    kv_bytes: float
    seconds: float
    ridge: float

    @property
    def bytes(self) -> float:
        return self.weight_bytes + self.kv_bytes

    @property
    def intensity(self) -> float:
        return self.flops / self.bytes

    @property
    def tokens_per_s(self) -> float:
        return self.batch / self.seconds

    @property
    def bound(self) -> str:
        return bound(self.intensity, self.ridge)


def _batch(batch) -> int:
    if isinstance(batch, bool) or not isinstance(batch, int) or batch < 1:
        raise ValueError(f"batch must be a whole number of sequences >= 1, got {batch!r}")
    return batch


def decode_step(model: Model, roof: Roof, batch: int, context_tokens: int = 0) -> Step:
    """The roofline time of one decode step: the slower of its FLOPs and its bytes.

    FLOPs: ``2 x params`` per sequence for the matmuls plus its attention; bytes: the
    weights once (shared by the batch) plus every sequence's own KV cache.
    """
    b = _batch(batch)
    flops = b * (2.0 * model.params + model.attention_flops(context_tokens))
    kv = float(model.kv_bytes(context_tokens, b))
    seconds = max(flops / roof.flops_per_s, (model.weight_bytes + kv) / roof.bandwidth_bytes_per_s)
    return Step(batch=b, context_tokens=context_tokens, flops=flops,
                weight_bytes=model.weight_bytes, kv_bytes=kv, seconds=seconds, ridge=roof.ridge)


def batch_to_ridge(model: Model, ridge: float, context_tokens: int = 0,
                   attention_ridge: float | None = None) -> float:
    """The batch at which a decode step turns compute-bound (``math.inf``: never).

    The step as a whole, FLOPs and bytes pooled: B sequences take B (2P / R + a / R_a) in
    units of one byte's read time against W + B m bytes, with 2P the weight matmuls' FLOPs and
    a the attention's of one sequence, m its cache bytes, W the weight bytes, R the ridge of
    the weights' arithmetic and R_a that of the attention's (the cache's number format; the
    same R unless given). So B = W / (2P / R + a / R_a - m) while that is positive; otherwise
    the cache reads outgrow the arithmetic however large the batch. With one roof this is
    the familiar B = R W / (f - R m), f = 2P + a.
    """
    r = require_positive("ridge", ridge)
    r_a = r if attention_ridge is None else require_positive("attention_ridge", attention_ridge)
    per_sequence = (2.0 * model.params / r + model.attention_flops(context_tokens) / r_a
                    - float(model.kv_bytes(context_tokens)))
    if per_sequence <= 0:
        return math.inf
    return model.weight_bytes / per_sequence


def context_limit(model: Model, ridge: float, attention_ridge: float | None = None) -> float:
    """Context length beyond which no batch reaches the ridge (``math.inf``: none).

    Needs a cache that grows linearly with context (no sliding windows): then the FLOPs are
    2P + a c and the cache k c, and the limit is c = (2P / R) / (k - a / R_a), with R_a the
    attention's ridge (``ridge`` unless given); with one roof, c = 2P / (R k - a).
    """
    r = require_positive("ridge", ridge)
    r_a = r if attention_ridge is None else require_positive("attention_ridge", attention_ridge)
    k = model.kv_bytes_per_token()
    probe = 1 << 20
    if model.kv_bytes(probe) != probe * k:
        raise ValueError(f"{model.name}: the cache does not grow linearly with context "
                         "(sliding windows); use batch_to_ridge at each context instead")
    a = 2.0 * model.query_groups * k / model.kv_dtype_bytes
    if k <= a / r_a:
        return math.inf
    return 2.0 * model.params / r / (k - a / r_a)


def max_batch(model: Model, roof: Roof, context_tokens: int) -> int:
    """Sequences at ``context_tokens`` whose caches fit beside the weights (0: none)."""
    if roof.capacity_bytes is None:
        raise ValueError(f"{roof.name} has no memory capacity in hardware_specs.csv")
    free = roof.capacity_bytes - model.weight_bytes
    one = model.kv_bytes(context_tokens)
    if free <= 0:
        return 0
    return int(free // one) if one else 2**31 - 1


def _bisect(predicate, low: int, high: int) -> int:
    """The smallest integer in (low, high] where a monotone ``predicate`` holds, given it
    fails at ``low`` and holds at ``high``."""
    while high - low > 1:
        mid = (low + high) // 2
        low, high = (low, mid) if predicate(mid) else (mid, high)
    return high


def capacity_turn(model: Model, roof: Roof, attention_ridge: float | None = None,
                  max_context: int | None = None) -> dict:
    """Where memory, not the roofline, keeps decode memory-bound, computed exactly.

    With every sequence's cache read counted, the batch a decode step needs to reach the
    ridge, B*(c), grows with the context c and is infinite from ``never_beyond_tokens`` on;
    the batch that fits beside the weights, M(c) (:func:`max_batch`), shrinks. ``turn_tokens``
    is the shortest context at which M(c) < B*(c): from there on, no batch the memory holds is
    compute-bound (1 when even one-token sequences cannot fit enough of a batch; None when
    compute-bound batches fit at every context up to ``max_context``, by default the model's
    own limit, :func:`napkin.kvcache.context_limit`).
    """
    from .kvcache import context_limit as served

    limit = served(model.config) if max_context is None else _count("max_context",
                                                                       max_context, 1)

    def need(c: int) -> float:
        return batch_to_ridge(model, roof.ridge, c, attention_ridge)

    def short(c: int) -> bool:
        return max_batch(model, roof, c) < need(c)

    def unreachable(c: int) -> bool:
        return math.isinf(need(c))

    # the cache only grows with context, so once no batch reaches the ridge none ever does
    never = None if not unreachable(limit) else \
        (1 if unreachable(1) else _bisect(unreachable, 1, limit))
    top = never or limit
    if short(1):
        turn = 1
    elif not short(top):
        turn = None
    else:
        turn = _bisect(short, 1, top)
    at = turn if turn is not None else top
    return {"never_beyond_tokens": never, "turn_tokens": turn,
            "fits_at_turn": max_batch(model, roof, at), "needed_at_turn": need(at)}


def batch_curve(model: Model, roof: Roof, batches: Iterable[int],
                contexts: Iterable[int]) -> pd.DataFrame:
    """Decode throughput and cost for every (batch, context): the batching chapter's table.

    ``chip_s_per_mtok`` is the cost: seconds of one chip per million tokens generated,
    which is a price once multiplied by what one chip-hour costs you.
    """
    rows = []
    for c in contexts:
        fits = max_batch(model, roof, c) if roof.capacity_bytes is not None else None
        for b in batches:
            s = decode_step(model, roof, b, c)
            rows.append({"batch": s.batch, "context_tokens": c, "flops": s.flops,
                         "weight_bytes": s.weight_bytes, "kv_bytes": s.kv_bytes,
                         "intensity": s.intensity, "step_s": s.seconds,
                         "tokens_per_s": s.tokens_per_s,
                         "chip_s_per_mtok": roof.n_chips * s.seconds / s.batch * 1e6,
                         "bound": s.bound, "fits_in_memory": fits is None or b <= fits})
    return pd.DataFrame(rows)


def chips_to_hold(model: Model, roof: Roof, kv_share: float = 0.5) -> int:
    """The smallest power-of-two number of chips whose memory holds the weights and leaves
    at least ``kv_share`` of the total for the KV cache."""
    share = require_positive("kv_share", kv_share)
    if share >= 1:
        raise ValueError(f"kv_share is a fraction of memory below 1, got {kv_share!r}")
    if roof.capacity_bytes is None:
        raise ValueError(f"{roof.name} has no memory capacity in hardware_specs.csv")
    n = 1
    while model.weight_bytes > (1 - share) * n * roof.capacity_bytes:
        n *= 2
    return n


#: Llama 3.3 70B's architecture, the essay's example model: the fields of its row in the
#: research notes' ``model_configs.csv`` (from the oumi recipe README, :data:`LLAMA_3_3_70B_SOURCE`,
#: and Meta's model card, github.com/meta-llama/llama-models at a9c89c4,
#: models/llama3_3/MODEL_CARD.md), written as the Hugging Face ``config.json`` keys the
#: library reads.
LLAMA_3_3_70B = {
    "model_type": "llama", "num_hidden_layers": 80, "hidden_size": 8192,
    "num_attention_heads": 64, "num_key_value_heads": 8, "head_dim": 128,
    "intermediate_size": 28672, "vocab_size": 128256, "max_position_embeddings": 131072,
    "tie_word_embeddings": False,
}
LLAMA_3_3_70B_SOURCE = ("https://github.com/oumi-ai/oumi/blob/bd18cd68cdcdb3b1942c9813689c5c3e4d7d"
                        "9977/configs/recipes/llama3_3/README.md")


def llama_3_3_70b(bytes_per_weight: float = 2.0, kv_dtype_bytes: float = 2.0) -> Model:
    """The essay's example model at FP16 weights and cache unless told otherwise."""
    return Model.from_config(LLAMA_3_3_70B, "Llama 3.3 70B", bytes_per_weight, kv_dtype_bytes)


# -- a mixed step: prefill chunks and decodes in one forward pass -----------------------------
#
# A serving engine's step is one forward pass over whatever the scheduler put in it: whole
# prompts, chunks of prompts, and one token for each sequence that is decoding. Its roofline
# cost is the slower of its FLOPs and its bytes:
#
#   FLOPs = 2 x params x tokens + 2 x query groups x (cached elements each query attends to)
#   bytes = weights once + every cached element read (a decode reads its whole cache; a
#           prefill chunk reads the cache of its prompt's earlier chunks)
#
# A query at position p (0-based) attends to the p + 1 keys up to and including itself (at most
# a window's worth in a windowed layer), so a chunk of n prompt tokens starting after s cached
# ones attends n s + n (n + 1) / 2 (query, key) pairs: summed over the chunks of one prompt,
# that is the n (n + 1) / 2 of the whole prompt, whatever the chunk size. Chunking changes the
# bytes (earlier chunks are re-read), never the FLOPs. Writing the new tokens' keys and values
# is not counted: one token's worth per sequence is small beside what a step reads.

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


def step_seconds(model: Model, roof: Roof, tokens, kv_tokens, pairs):
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


def _count(name: str, value, minimum: int) -> int:
    if isinstance(value, bool) or not isinstance(value, (int, np.integer)) or value < minimum:
        raise ValueError(f"{name} must be a whole number of tokens >= {minimum}, got {value!r}")
    return int(value)
