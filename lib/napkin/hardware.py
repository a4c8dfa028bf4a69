"""Chips: bandwidth, capacity and peak arithmetic, each figure with its source.

Loaded from ``data/hardware_specs.csv`` (long format: one row per chip and spec). Two
conventions carry most of the book's truth:

- **Capacity is binary, bandwidth is decimal.** DRAM and HBM come in power-of-two dies, so
  a vendor's "80 GB" H100 holds 80 GiB (nvidia-smi shows 81,559 MiB); a "3.35 TB/s" link
  moves 3.35e12 bytes a second. The capacity specs say so in their names (``_GiB``).
- **A peak is of one arithmetic.** FP16, FP8, INT8 and FP4 matmuls run at different rates,
  dense and 2:4-sparse figures differ by two, and GeForce cards halve FP16 with FP32
  accumulation. :meth:`Chip.peak` returns the dense (or, when asked, sparse) figure of the
  arithmetic a workload actually runs, and refuses an arithmetic it does not know or a chip
  that states no figure for it, so a sparse FP4 headline can never stand in for the INT8
  kernels llama.cpp runs.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from functools import lru_cache
from types import MappingProxyType

import pandas as pd

from . import tables
from .units import GB, TFLOPS, GiB

__all__ = ["apple_chip_name", "ARITHMETIC", "CAPACITY_SPECS", "chip", "Chip", "chips", "Peak",
           "peak_spec_parts", "spec_table"]

#: The arithmetic kinds the book knows, and what each covers.
ARITHMETIC = {
    "fp16": "FP16/BF16 matmul",
    "fp8": "FP8 matmul (E4M3/E5M2)",
    "int8": "INT8 matmul (integer dot products)",
    "fp4": "FP4 matmul (NVFP4/MXFP4 on Blackwell)",
    "fp32": "FP32 (vector units)",
}
#: For one arithmetic, the specs that can stand for its dense peak, most specific first.
#: ``tensor_dense`` is a datacenter part's figure; ``tensor_dense_fp32acc`` a GeForce or
#: workstation card's with FP32 accumulation (what frameworks use by default; FP16
#: accumulation runs twice as fast on GeForce); ``vector`` a chip with no matrix units,
#: whose matmuls run on its ordinary ALUs (Apple's GPUs).
_DENSE = ("tensor_dense", "tensor_dense_fp32acc", "vector")
_SPARSE = ("tensor_sparse", "tensor_sparse_fp32acc")
_SPEC = re.compile(r"^(fp16|bf16|fp8|int8|fp4|fp6|fp32)_(tensor|vector)(?:_(dense|sparse))?"
                   r"(?:_(fp16acc|fp32acc))?_(TFLOPS|TOPS)$")
#: What each part of a peak spec's name means, for labels.
_WORDS = {"tensor_dense": "dense tensor", "tensor_dense_fp32acc": "dense tensor, FP32 accumulate",
          "tensor_dense_fp16acc": "dense tensor, FP16 accumulate",
          "tensor_sparse": "2:4-sparse tensor", "tensor_sparse_fp32acc":
          "2:4-sparse tensor, FP32 accumulate", "vector": "vector ALUs, no matrix units"}
#: Capacity specs, in the order :attr:`Chip.capacity_bytes` reads them, and what each is.
CAPACITY_SPECS = {"memory_capacity_GiB": "as stated",
                  "max_memory_capacity_GiB": "largest configuration"}


def peak_spec_parts(spec: str) -> dict | None:
    """``"int8_tensor_dense_TOPS"`` -> its arithmetic, path and unit; None for other specs."""
    m = _SPEC.match(spec)
    if not m:
        return None
    arith, unit_kind, density, acc, unit = m.groups()
    path = "_".join(p for p in (unit_kind, density, f"{acc}" if acc else None) if p)
    return {"arithmetic": "fp16" if arith == "bf16" else arith, "path": path, "unit": unit}


@dataclass(frozen=True)
class Peak:
    """A peak arithmetic rate: how fast, of which arithmetic, read from which spec."""

    chip: str
    arithmetic: str
    flops_per_s: float
    spec: str
    source: str
    origin: str = ""
    sparse: bool = False

    @property
    def derived(self) -> bool:
        """True when no vendor states the figure (the book's data derives it)."""
        return self.origin.startswith("computed")

    @property
    def kind(self) -> str:
        """A label that says exactly what the number is (``"INT8, dense tensor"``)."""
        parts = peak_spec_parts(self.spec)
        return f"{self.arithmetic.upper()}, {_WORDS[parts['path']]}"


@dataclass(frozen=True)
class Chip:
    """One chip's specs in SI units, with the source of each figure."""

    name: str
    vendor: str
    specs: Mapping[str, float]
    sources: Mapping[str, str]
    origins: Mapping[str, str] = field(default_factory=dict)

    @property
    def bandwidth_bytes_per_s(self) -> float:
        gbps = self.specs.get("memory_bandwidth_GB_per_s")
        if gbps is None:
            raise ValueError(f"{self.name}: no memory_bandwidth_GB_per_s in hardware_specs.csv")
        return gbps * GB

    @property
    def capacity_spec(self) -> str | None:
        """Which capacity figure the book uses: the one stated for this part, else the
        largest configuration sold (Apple's chips come in several)."""
        return next((s for s in CAPACITY_SPECS if s in self.specs), None)

    @property
    def capacity_bytes(self) -> float | None:
        """Memory in bytes, read as binary: the vendor's "80 GB" is 80 GiB. The book uses
        the whole capacity, not the slightly smaller total a driver reports (about 0.4 %
        less on an H100); serving overheads are counted where a chapter serves a model."""
        spec = self.capacity_spec
        return None if spec is None else self.specs[spec] * GiB

    def peaks(self) -> dict[str, list[str]]:
        """Every peak spec this chip states, grouped by arithmetic."""
        out: dict[str, list[str]] = {}
        for spec in self.specs:
            parts = peak_spec_parts(spec)
            if parts:
                out.setdefault(parts["arithmetic"], []).append(spec)
        return out

    def peak(self, arithmetic: str, sparse: bool = False) -> Peak:
        """The dense (or 2:4-sparse) peak of one arithmetic, or a ValueError naming what
        this chip does state."""
        arith = str(arithmetic).lower()
        if arith == "bf16":
            arith = "fp16"
        if arith not in ARITHMETIC:
            raise ValueError(f"unknown arithmetic {arithmetic!r}; known: {', '.join(ARITHMETIC)}")
        unit = "TOPS" if arith == "int8" else "TFLOPS"
        for path in (_SPARSE if sparse else _DENSE):
            for name in (arith, "bf16") if arith == "fp16" else (arith,):
                spec = f"{name}_{path}_{unit}"
                if spec in self.specs:
                    return Peak(chip=self.name, arithmetic=arith,
                                flops_per_s=self.specs[spec] * TFLOPS, spec=spec,
                                source=self.sources[spec], origin=self.origins.get(spec, ""),
                                sparse=sparse)
        have = "; ".join(f"{a}: {', '.join(s)}" for a, s in self.peaks().items()) or "none"
        raise ValueError(f"{self.name} states no {'sparse' if sparse else 'dense'} "
                         f"{arith.upper()} peak in hardware_specs.csv (it states: {have})")

    def has_peak(self, arithmetic: str, sparse: bool = False) -> bool:
        try:
            self.peak(arithmetic, sparse)
        except ValueError:
            return False
        return True

    def source(self, spec: str) -> str:
        return self.sources[spec]


def _frame() -> pd.DataFrame:
    return tables.load("hardware_specs")


def chips() -> Mapping[str, Chip]:
    """Every chip in ``data/hardware_specs.csv``, by name: built once per version of the
    table (its path and modification time) and handed out read-only, since the book asks
    for chips thousands of times a chapter."""
    return _chips(*tables.version("hardware_specs"))


@lru_cache(maxsize=4)
def _chips(path, mtime) -> Mapping[str, Chip]:
    out = {}
    for name, group in _frame().groupby("chip", sort=True):
        column = lambda c: MappingProxyType(dict(zip(group["spec"], group[c])))  # noqa: E731
        out[name] = Chip(name=name, vendor=group["vendor"].iloc[0],
                         specs=MappingProxyType(dict(zip(group["spec"],
                                                         group["value"].astype(float)))),
                         sources=column("source_url"), origins=column("figure_origin"))
    return MappingProxyType(out)


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
