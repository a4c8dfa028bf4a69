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
from types import MappingProxyType

import pandas as pd

from . import tables
from .units import GB, TFLOPS, GiB, MiB, require_positive

__all__ = ["apple_chip_name", "ARITHMETIC", "CAPACITY_SPECS", "chip", "Chip", "chips",
           "gpu_memory_limits", "mac_default_gpu_fraction", "Peak", "peak_spec_parts",
           "SMALL_MAC_GiB", "spec_table", "VISIBLE_SPEC"]

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

    def gpu_share(self, memory_GiB: float | None = None,
                  os_reserve: bool = True) -> tuple[float, str]:
        """The share of ``memory_GiB`` (by default the chip's capacity) its GPU may use by
        default, and why: the one rule for it. On a Mac, macOS's default cap for a Mac of
        that size (:func:`mac_default_gpu_fraction`); elsewhere, with ``os_reserve``, what
        the driver or the operating system reports over the capacity (:data:`VISIBLE_SPEC`,
        where a source recorded it and it is less, the same share for a configuration of
        another size); else all of it."""
        memory = self.capacity_bytes / GiB if memory_GiB is None else memory_GiB
        if self.vendor == "Apple":
            return mac_default_gpu_fraction(memory)
        cap = self.capacity_bytes
        if not os_reserve or VISIBLE_SPEC not in self.specs or not cap:
            return 1.0, ""
        visible = self.specs[VISIBLE_SPEC] * MiB
        if visible >= cap:
            return 1.0, ""
        return visible / cap, (f"{visible / GiB:,.1f} of {cap / GiB:,.0f} GiB reported by the "
                               f"driver or the operating system ({self.source(VISIBLE_SPEC)})")

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


#: The spec of ``data/hardware_specs.csv`` that says what the driver or the operating
#: system reports of a chip's memory (nvidia-smi, Linux ``MemTotal``, the GTT size of an AMD
#: APU): what is left once firmware, the kernel and the driver have kept their share.
VISIBLE_SPEC = "driver_visible_memory_MiB"

# How much of a Mac's unified memory its GPU may use without changing a system setting:
# macOS caps what Metal may keep resident (``recommendedMaxWorkingSetSize``, which llama.cpp
# prints at start-up); Apple documents no percentage. ``data/gpu_memory_limits.csv`` holds the
# values people recorded on their own Macs, and the rule counts on the lowest recorded for a
# Mac of the same class. Above it a workload runs only after raising ``iogpu.wired_limit_mb``.
#: Macs with at most this much memory form the small class of the GPU-limit rule: the
#: largest memory of the Pro chips and of the 32-core M4 Max. No Mac between this and
#: 64 GiB is recorded in data/gpu_memory_limits.csv.
SMALL_MAC_GiB = 36


def gpu_memory_limits() -> pd.DataFrame:
    """Recorded default GPU memory limits of Macs, with the fraction of memory each is."""
    df = tables.load("gpu_memory_limits")
    return df.assign(fraction=df["limit_GiB"] / df["memory_GiB"])


def mac_default_gpu_fraction(memory_GiB: float) -> tuple[float, str]:
    """The fraction of a Mac's unified memory its GPU may use by default, and why.

    The rule: the lowest fraction recorded (``data/gpu_memory_limits.csv``, measured rows)
    for a Mac of the same class, at most :data:`SMALL_MAC_GiB` or above it. Higher values
    have been recorded (newer macOS, larger Macs); the lowest is what a buyer can count on
    without changing a system setting.
    """
    require_positive("memory_GiB", memory_GiB)
    df = gpu_memory_limits()
    df = df[df["kind"] == "measured"]
    small = memory_GiB <= SMALL_MAC_GiB
    band = df[(df["memory_GiB"] <= SMALL_MAC_GiB) == small]
    low = band.loc[band["fraction"].idxmin()]
    side = f"at most {SMALL_MAC_GiB}" if small else f"more than {SMALL_MAC_GiB}"
    return float(low["fraction"]), (f"lowest recorded default for Macs with {side} GiB "
                                    f"({low['machine']}, {low['memory_GiB']:.0f} GiB: "
                                    f"{low['reported_as']})")



def _frame() -> pd.DataFrame:
    return tables.load("hardware_specs")


@tables.cached("hardware_specs")
def chips() -> Mapping[str, Chip]:
    """Every chip in ``data/hardware_specs.csv``, by name: built once per version of the
    table and handed out read-only, since the book asks for chips thousands of times a
    chapter."""
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
