"""The roof a machine's llama.cpp matmuls are held to: the dense peak of the arithmetic
they actually run in.

- **CUDA and ROCm** multiply quantized weights (Q4_0, Q4_K, Q8_0 ...) with INT8 MMQ
  kernels (:func:`napkin.roofline.arithmetic_for`), except MXFP4 on a 12.x Blackwell chip,
  which current builds multiply in native FP4 (:func:`napkin.phases.llamacpp_arithmetic`).
- **Metal** dequantizes every format to FP16; Apple's GPUs have no matrix units and run FP16
  at their FP32 vector rate (``data/README.md``), so an Apple chip's roof is its FP32 vector
  figure, which the source derives for a stated GPU core count. A run on a configuration
  with fewer cores is held to that figure scaled by its cores (the clock is the same).
- **Vulkan** builds multiply with cooperative-matrix FP16 instructions where the GPU has
  them, the weights dequantized to FP16 (:data:`VULKAN_SOURCE`), so a Vulkan run is held to
  the FP16 figure (on a GeForce card, the one with FP32 accumulation).
"""

from __future__ import annotations

import math
import re

from .. import hardware, phases, roofline, tables

#: The llama.cpp backend each vendor's machines are held to. Strix Halo (AMD) runs both
#: ROCm/HIP and Vulkan builds; its data puts its INT8 and FP16 rates level, so the choice
#: does not move its bound.
BACKEND = {"NVIDIA": "CUDA", "AMD": "ROCm", "Apple": "Metal"}
#: The arithmetic kinds a machine's roof may be read in.
ARITHMETIC = ("fp16", "int8", "fp8", "fp4")
VULKAN_SOURCE = ("https://github.com/ggml-org/llama.cpp/pull/12015 (ggml-vulkan matmul "
                 "dequantization: quantized weights dequantized to FP16 for the "
                 "cooperative-matrix shaders of GPUs with matrix units)")
DERIVED = " (derived, not vendor-stated)"
_CORES = re.compile(r"(\d+)-core GPU")


def metal_rate(chip: hardware.Chip) -> tuple[float, int, hardware.Peak] | None:
    """An Apple chip's FP16 rate per GPU core, the core count of the configuration its
    figure is for, and the figure (its FP32 vector peak); None where the data has none."""
    if not chip.has_peak("fp32"):
        return None
    peak = chip.peak("fp32")
    specs = tables.load("hardware_specs")
    variant = specs[(specs["chip"] == chip.name) & (specs["spec"] == peak.spec)]["variant"]
    found = _CORES.search(str(variant.iloc[0]))
    if not found:
        raise ValueError(f"{chip.name}: {peak.spec} names no GPU core count "
                         f"({variant.iloc[0]!r})")
    cores = int(found.group(1))
    return peak.flops_per_s / cores, cores, peak


def _metal_label(cores: int, peak: hardware.Peak) -> str:
    return f"FP16 at the FP32 vector rate, {cores}-core GPU" + (DERIVED if peak.derived else "")


def chip_roofs(chip: hardware.Chip) -> dict[str, tuple[float, str, str]]:
    """A chip's dense peak of each arithmetic it states: ``{arith: (FLOP/s, label, source)}``.
    An Apple chip has one, FP16 at its FP32 vector rate (its largest GPU configuration)."""
    if chip.vendor == "Apple":
        found = metal_rate(chip)
        if found is None:
            return {}
        per_core, cores, peak = found
        return {"fp16": (per_core * cores, _metal_label(cores, peak), peak.source)}
    out = {}
    for arith in ARITHMETIC:
        if chip.has_peak(arith):
            p = chip.peak(arith)
            out[arith] = (p.flops_per_s, p.kind + (DERIVED if p.derived else ""), p.source)
    return out


def format_arithmetic(machine: str, weight_format: str, backend: str) -> str:
    """The arithmetic a matmul of ``weight_format`` runs in on ``machine``'s backend in
    current llama.cpp builds (MXFP4 on a 12.x Blackwell chip: native FP4)."""
    if backend == "CUDA":
        return phases.llamacpp_arithmetic(weight_format, machine,
                                          build=phases.NATIVE_MXFP4_BUILD)
    return roofline.arithmetic_for(weight_format, backend)


def run_roof(chip: hardware.Chip | None, run_backend: str,
             gpu_cores: float | None = None) -> tuple[float, str]:
    """The roof one published Q4_0 prefill run is held to, by the backend it ran (a group
    name: ``"Metal"``, ``"CUDA"``, ``"ROCm"``, ``"Vulkan"``) and, on Metal, the GPU cores of
    its configuration: (FLOP/s, label), or (NaN, why) where the data has no figure."""
    if chip is None:
        return math.nan, "no specs in data/"
    if run_backend == "Metal":
        found = metal_rate(chip)
        if found is None:
            return math.nan, "no figure stated for that arithmetic"
        per_core, cores, peak = found
        n = cores if gpu_cores is None or gpu_cores != gpu_cores else int(gpu_cores)
        return per_core * n, _metal_label(n, peak)
    arith = "fp16" if run_backend == "Vulkan" else "int8"
    roofs = chip_roofs(chip)
    if arith not in roofs:
        return math.nan, "no figure stated for that arithmetic"
    return roofs[arith][0], roofs[arith][1]
