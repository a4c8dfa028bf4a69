"""What a submission's rates may not exceed: decode its ceiling, prefill the device's peak.

Decode reads every weight once per token, so it cannot beat bandwidth / bytes per token
by more than measurement noise (:data:`DECODE_SLACK`), unless speculative decoding ran.
Prefill does at least 2 FLOPs per matmul weight per prompt token, so 2 x (parameters -
embedding) x tokens/s cannot pass the peak of the arithmetic llama.cpp ran: on a GPU the
book's chips know (:func:`napkin.measure.devices.match`), that chip's dense peak for the
weight format (:func:`napkin.phases.compute.llamacpp_arithmetic`, :meth:`Chip.peak`), or
the largest dense peak it states where the backend or format has no mapping. A CPU has no
row in ``data/hardware_specs.csv``; its bound is what no CPU core can beat: Intel's AMX
tiles, the widest matrix unit in a CPU, do 2,048 INT8 operations per cycle per core, at a
6 GHz clock no server or desktop part reaches, per thread llama.cpp used. A GPU the data
does not list is not bounded (the page says so).
"""

from __future__ import annotations

from dataclasses import dataclass

__all__ = ["Bound", "ceiling_tokens_per_s", "chip_of", "CPU_MAX_HZ", "CPU_OPS_PER_CYCLE",
           "CPU_SOURCE", "DECODE_SLACK", "prefill_flops", "prefill_peak"]

DECODE_SLACK = 1.1
CPU_OPS_PER_CYCLE = 2048
CPU_MAX_HZ = 6.0e9
CPU_SOURCE = ("https://www.intel.com/content/www/us/en/products/docs/accelerator-engines/"
              "advanced-matrix-extensions/overview.html")


@dataclass(frozen=True)
class Bound:
    """A ceiling on a rate: how much, and in words what it is."""

    value: float
    what: str


def ceiling_tokens_per_s(run: dict) -> float:
    """The napkin ceiling of one run: bandwidth / bytes per token."""
    return run["ceiling"]["bandwidth_bytes_per_s"] / run["model"]["bytes_per_token"]


def prefill_flops(run: dict) -> float:
    """FLOP/s prefill reached, at least: 2 per matmul weight per prompt token."""
    m = run["model"]
    return 2.0 * (m["params"] - m["embedding_params"]) * run["prefill"]["tokens_per_s"]


def chip_of(doc: dict):
    """The chip of ``data/hardware_specs.csv`` the submission's GPU is (None: a CPU run, or a
    GPU the data does not list)."""
    from ..measure import devices

    gpu = doc["machine"]["gpu"]
    if doc["machine"]["backend"] == "CPU" or not gpu:
        return None
    match = devices.match(gpu.split(", ")[0])
    return match.chip if match else None


def prefill_peak(doc: dict, run: dict) -> Bound | None:
    """The FLOP/s prefill cannot pass on this device (None where the book cannot say)."""
    from .. import hardware
    from ..phases.compute import llamacpp_arithmetic

    if doc["machine"]["backend"] == "CPU":
        threads = doc["machine"]["threads"]
        return Bound(threads * CPU_OPS_PER_CYCLE * CPU_MAX_HZ,
                     f"no CPU core beats {CPU_OPS_PER_CYCLE:,} INT8 operations per cycle "
                     f"(AMX) at {CPU_MAX_HZ / 1e9:.0f} GHz; x {threads} threads")
    name = chip_of(doc)
    if name is None:
        return None
    chip = hardware.chip(name)
    try:
        arith = llamacpp_arithmetic(run["model"]["quantisation"], name,
                                    date=doc["measured_at"][:10],
                                    backend=doc["machine"]["backend"])
        peak = chip.peak(arith)
    except ValueError:  # a backend or format with no mapping: the chip's largest dense peak
        peaks = [chip.peak(a) for a in chip.peaks() if _states(chip, a)]
        if not peaks:
            return None
        peak = max(peaks, key=lambda p: p.flops_per_s)
    return Bound(peak.flops_per_s, f"{name}, {peak.kind} peak")


def _states(chip, arithmetic: str) -> bool:
    try:
        chip.peak(arithmetic)
    except ValueError:
        return False
    return True
