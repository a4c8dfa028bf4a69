"""The roofs of the book's chips: which arithmetic a weight format runs in, and its peak.

A chip states several peaks (FP16, FP8, INT8, FP4, dense or sparse); the one that bounds a
matmul is the one its engine's kernel runs, so a weight format is first mapped to its
arithmetic (:func:`arithmetic_for`), then to the chip's figure for it (:func:`peak_for`,
:func:`chip_roof`). Chapter 3's ridge and crossover tables are built here.
"""

from __future__ import annotations

from typing import Iterable

import pandas as pd

from .. import hardware
from ..models import BITS_PER_WEIGHT
from ..units import TFLOPS
from .roof import Roof, matmul_intensity, ridge_point


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
