"""Chips: bandwidth, capacity and FLOP/s, each figure with its source.

Loaded from ``data/hardware_specs.csv`` (long format: one row per chip and
spec). FLOP/s figures keep their kind in the name (dense or sparse, tensor or
vector, accumulate precision), because the commonest error in this field is
dividing a sparse FLOP figure by a bandwidth and calling it a ridge point.
"""

from __future__ import annotations

from dataclasses import dataclass

import pandas as pd

from . import tables
from .units import GB, TFLOPS

#: Dense 16-bit matmul throughput, in order of preference, with what each means.
DENSE_FP16_SPECS = {
    "fp16_tensor_dense_TFLOPS": "dense FP16/BF16 tensor",
    "fp16_tensor_dense_fp32acc_TFLOPS": "dense FP16 tensor, FP32 accumulate",
    "fp16_dense_TFLOPS": "dense FP16 (theoretical)",
    "fp16_vector_TFLOPS": "FP16 GPU peak (no separate tensor path)",
}


@dataclass(frozen=True)
class Chip:
    """One chip's specs in SI units, with the source of each figure."""

    name: str
    vendor: str
    specs: dict[str, float]
    sources: dict[str, str]

    def _get(self, spec: str) -> float | None:
        return self.specs.get(spec)

    @property
    def bandwidth_bytes_per_s(self) -> float:
        gbps = self._get("memory_bandwidth_GB_per_s")
        if gbps is None:
            raise ValueError(f"{self.name}: no memory_bandwidth_GB_per_s in hardware_specs.csv")
        return gbps * GB

    @property
    def capacity_bytes(self) -> float | None:
        for spec in ("memory_capacity_GB", "max_memory_capacity_GB"):
            if spec in self.specs:
                return self.specs[spec] * GB
        return None

    @property
    def dense_fp16_flops(self) -> tuple[float, str] | None:
        """(FLOP/s, what kind of figure it is), or None when no dense figure is sourced."""
        for spec, meaning in DENSE_FP16_SPECS.items():
            if spec in self.specs:
                return self.specs[spec] * TFLOPS, meaning
        return None

    def source(self, spec: str) -> str:
        return self.sources[spec]


def _frame() -> pd.DataFrame:
    return tables.load("hardware_specs")


def chips() -> dict[str, Chip]:
    """Every chip in ``data/hardware_specs.csv``, by name."""
    out = {}
    for name, group in _frame().groupby("chip", sort=True):
        specs = dict(zip(group["spec"], group["value"].astype(float)))
        sources = dict(zip(group["spec"], group["source_url"]))
        out[name] = Chip(name=name, vendor=group["vendor"].iloc[0], specs=specs, sources=sources)
    return out


def chip(name: str) -> Chip:
    """One chip by its book name (``"H100 SXM"``, ``"M2 Ultra"``)."""
    known = chips()
    if name not in known:
        raise ValueError(f"unknown chip {name!r}; known chips: {', '.join(known)}")
    return known[name]


def apple_chip_name(chip_family: str, gpu_cores: int) -> str:
    """Map a benchmark row (``"M4 Max"``, 40 cores) to its chip name in the specs table."""
    known = chips()
    tiered = f"{chip_family} ({int(gpu_cores)}-core GPU)"
    if tiered in known:
        return tiered
    if chip_family in known:
        return chip_family
    raise ValueError(f"no spec row for Apple {chip_family} with {gpu_cores} GPU cores")


def spec_table(spec: str) -> pd.DataFrame:
    """One spec for every chip that has it: chip, vendor, value, source_url."""
    df = _frame()
    rows = df[df["spec"] == spec]
    if rows.empty:
        raise ValueError(f"no chip has spec {spec!r}; specs: {', '.join(sorted(df['spec'].unique()))}")
    return rows[["chip", "vendor", "value", "figure_origin", "source_url"]].reset_index(drop=True)
