"""A machine as the calculator sees it, built from ``data/``: bandwidth, the memory its GPU
may use, the roofs of the arithmetic it runs, its reference runs and its prices."""

from __future__ import annotations

import math
from dataclasses import dataclass, field

import pandas as pd

from .. import hardware, roofline, tables
from ..units import GB, GiB, require_positive
from . import decode, roofs
from .reference import prefill_runs

#: Chips of ``data/hardware_specs.csv`` the calculator leaves out, and why.
LEFT_OUT = {
    "MI250": "two graphics compute dies in one package, each a separate device to software "
             "with 64 GiB and 1.6 TB/s of its own (the notes of data/hardware_specs.csv): a "
             "model over 64 GiB runs split across two devices, a single stream reads one at "
             "a time, and the package's 128 GiB and 3.2 TB/s overstate what one device has; "
             "this chapter models one device per machine",
}


@dataclass(frozen=True)
class Machine:
    """One machine. Every figure keeps where it came from.

    ``capacity_bytes`` is the whole memory (binary); ``gpu_limit_bytes`` what the GPU may
    use by default where that is less, else None: on a Mac the default GPU limit, elsewhere
    what the driver or the operating system reports after what firmware and kernel keep
    (:meth:`napkin.hardware.Chip.gpu_share`). ``raisable_bytes`` is what a system setting can lift the limit to
    (the whole memory on a Mac; nothing more elsewhere). ``roofs`` are dense peaks by
    arithmetic (``"int8"``: FLOP/s), ``roof_labels`` what each figure is; ``backend`` the
    llama.cpp backend that decides which of them a weight format runs in.
    ``prefill_flops`` are the FLOP/s the reference prefill runs reached (one per run),
    ``prefill_fractions`` each run's share of the roof it is held to.
    ``fraction_quartiles`` is the family's decode discount, ``own_fractions`` the machine's
    own decode runs'; :attr:`decode_fractions` joins them.
    """

    name: str
    vendor: str
    family: str
    bandwidth_bytes_per_s: float
    capacity_bytes: float
    capacity_basis: str = ""
    gpu_limit_bytes: float | None = None
    gpu_limit_basis: str = ""
    backend: str = ""
    roofs: dict = field(default_factory=dict)
    roof_labels: dict = field(default_factory=dict)
    prefill_flops: tuple = ()
    prefill_fractions: tuple = ()
    prefill_note: str = ""
    fraction_quartiles: tuple = (0.5, 0.5, 0.5)
    own_fractions: tuple = ()
    fraction_basis: str = ""
    prices: tuple = ()   # (memory bytes, usable bytes, price, currency, configuration, source)
    sources: dict = field(default_factory=dict)

    def __post_init__(self):
        require_positive("bandwidth_bytes_per_s", self.bandwidth_bytes_per_s)
        require_positive("capacity_bytes", self.capacity_bytes)
        if self.gpu_limit_bytes is not None:
            require_positive("gpu_limit_bytes", self.gpu_limit_bytes)
            if self.gpu_limit_bytes > self.capacity_bytes:
                raise ValueError(f"gpu_limit_bytes {self.gpu_limit_bytes!r} is more than "
                                 f"capacity_bytes {self.capacity_bytes!r}")
        if self.backend and self.backend not in roofline.BACKENDS:
            raise ValueError(f"backend must be one of {', '.join(roofline.BACKENDS)}, "
                             f"got {self.backend!r}")
        for arith, flops in self.roofs.items():
            if arith not in roofs.ARITHMETIC:
                raise ValueError(f"roofs: unknown arithmetic {arith!r}")
            require_positive(f"roofs[{arith!r}]", flops)
        for f in self.prefill_flops:
            require_positive("prefill_flops", f)
        for what in ("fraction_quartiles", "own_fractions"):
            if not all(0 < x <= 1 for x in getattr(self, what)):
                raise ValueError(f"{what} must be fractions of the ceiling in (0, 1], got "
                                 f"{getattr(self, what)!r}")
        q = self.fraction_quartiles
        if len(q) != 3 or list(q) != sorted(q):
            raise ValueError(f"fraction_quartiles must be three increasing fractions, "
                             f"got {q!r}")

    @property
    def usable_bytes(self) -> float:
        """Memory the GPU may use without changing a system setting."""
        return self.capacity_bytes if self.gpu_limit_bytes is None else self.gpu_limit_bytes

    @property
    def raisable_bytes(self) -> float:
        """Memory the GPU may use after raising a system setting: a Mac's GPU limit can be
        lifted (``iogpu.wired_limit_mb``); what firmware and the kernel keep elsewhere
        cannot."""
        return self.capacity_bytes if self.vendor == "Apple" else self.usable_bytes

    @property
    def decode_fractions(self) -> tuple[float, float, float]:
        """(low, middle, high) fraction of the decode ceiling: the family's quartiles, the
        range widened to the machine's own runs (:func:`napkin.buying.decode.widened`)."""
        return decode.widened(self.fraction_quartiles, self.own_fractions)

    def roof(self, weight_format: str) -> tuple[str, float | None, str]:
        """(arithmetic, dense FLOP/s or None, what the figure is) for a matmul of weights in
        ``weight_format`` on this machine's backend. FP8 weights on a chip that states no FP8
        figure run as FP16 matmuls (the weights are widened: weight-only FP8)."""
        if not self.backend:
            return "", None, "no llama.cpp backend known for this vendor"
        arith = roofs.format_arithmetic(self.name, weight_format, self.backend)
        if arith in self.roofs:
            return arith, self.roofs[arith], self.roof_labels.get(arith, arith.upper())
        if arith == "fp8" and "fp16" in self.roofs:
            return "fp16", self.roofs["fp16"], (self.roof_labels.get("fp16", "FP16") +
                                                 "; no FP8 figure: FP8 weights run as FP16")
        return arith, None, f"no {arith.upper()} figure stated"


def _usable_GiB(chip: hardware.Chip, memory_GiB: float) -> float:
    """GiB the GPU may use by default in a configuration with ``memory_GiB``
    (:meth:`napkin.hardware.Chip.gpu_share`)."""
    return memory_GiB * chip.gpu_share(memory_GiB)[0]


def _prices(chip: hardware.Chip) -> tuple:
    p = tables.load("machine_prices")
    p = p[p["chip"] == chip.name].sort_values("memory_GiB")
    return tuple((float(r["memory_GiB"]) * GiB, _usable_GiB(chip, float(r["memory_GiB"])) * GiB,
                  float(r["price"]), r["currency"], r["configuration"], r["source_url"])
                 for _, r in p.iterrows())


def _family(chip: hardware.Chip, quart: pd.DataFrame, own: tuple) -> tuple[str, tuple, str]:
    """The family a chip is discounted by: (name, (low, middle, high), basis). A chip faster
    than every run of its family (or of all runs pooled) takes the datacenter GPUs' own runs
    (:func:`napkin.buying.decode.datacenter_quartiles`): their span, and their median in the
    middle, or its own runs' where it has some."""
    family = decode.FAMILY.get(chip.vendor)
    fastest = quart.loc[family if family in quart.index else decode.POOLED, "fastest_GB_per_s"]
    if chip.bandwidth_bytes_per_s / GB > fastest:
        q = quart.loc[decode.DATACENTER]
        mid = float(pd.Series(own).median()) if own else float(q["q50"])
        return decode.DATACENTER, (float(q["low"]), mid, float(q["high"])), \
            f"{decode.DATACENTER} ({int(q['runs'])} runs, read as the {q['chips']})" + \
            ("; the middle its own" if own else "")
    if family in quart.index:
        q = quart.loc[family]
        return family, (float(q["q25"]), float(q["q50"]), float(q["q75"])), \
            f"{family} ({int(q['runs'])} runs)"
    if own:
        s = pd.Series(own)
        return decode.OWN, (float(s.quantile(0.25)), float(s.median()),
                            float(s.quantile(0.75))), f"its own runs ({len(own)})"
    q = quart.loc[decode.POOLED]
    return decode.POOLED, (float(q["q25"]), float(q["q50"]), float(q["q75"])), \
        f"{decode.POOLED} ({int(q['runs'])} runs)"


def _span(values: tuple) -> str:
    low, high = f"{min(values):.0%}", f"{max(values):.0%}"
    return low if low == high else f"{low} to {high}"


def _machine(chip: hardware.Chip, runs: pd.DataFrame, own: pd.DataFrame,
             quart: pd.DataFrame) -> Machine:
    mine = runs[runs["chip"] == chip.name].sort_values("flops_per_s")
    own_f = tuple(float(f) for f in own[own["chip"] == chip.name]["fraction_of_ceiling"])
    family, quartiles, basis = _family(chip, quart, own_f)
    capacity, spec = chip.capacity_bytes, chip.capacity_spec
    share, limit_basis = chip.gpu_share()
    limit = share * capacity if chip.vendor == "Apple" or share < 1 else None
    found = roofs.chip_roofs(chip)
    return Machine(
        name=chip.name, vendor=chip.vendor, family=family,
        bandwidth_bytes_per_s=chip.bandwidth_bytes_per_s, capacity_bytes=capacity,
        capacity_basis=hardware.CAPACITY_SPECS[spec],
        gpu_limit_bytes=limit, gpu_limit_basis=limit_basis,
        backend=roofs.BACKEND.get(chip.vendor, ""),
        roofs={a: f for a, (f, _, _) in found.items()},
        roof_labels={a: lab for a, (_, lab, _) in found.items()},
        prefill_flops=tuple(mine["flops_per_s"]),
        prefill_fractions=tuple(mine["fraction_of_roof"]),
        prefill_note="; ".join(sorted(set(n for n in mine["note"] if n))),
        fraction_quartiles=quartiles, own_fractions=own_f,
        fraction_basis=basis + (f"; its own runs {_span(own_f)}"
                                if own_f and family != decode.OWN else ""),
        prices=_prices(chip),
        sources={"bandwidth": chip.source("memory_bandwidth_GB_per_s"),
                 "capacity": chip.source(spec),
                 "prefill": "; ".join(sorted(set(mine["source_url"]))),
                 "flops": "; ".join(sorted(set(s for _, _, s in found.values())))})


@tables.cached()
def _fleet() -> tuple[Machine, ...]:
    quart = decode.fraction_quartiles().set_index("family")
    runs, own = prefill_runs(), decode.own_decode_runs()
    return tuple(_machine(chip, runs, own, quart) for name, chip in hardware.chips().items()
                 if "memory_bandwidth_GB_per_s" in chip.specs
                 and chip.capacity_bytes is not None and name not in LEFT_OUT)


def machines() -> list[Machine]:
    """Every chip in ``data/hardware_specs.csv`` with a bandwidth and a memory capacity,
    except those in :data:`LEFT_OUT` (built once per state of ``data/``)."""
    return list(_fleet())


def machine(name: str) -> Machine:
    if name in LEFT_OUT:
        raise ValueError(f"{name} is left out of the calculator: {LEFT_OUT[name]}")
    for m in machines():
        if m.name == name:
            return m
    raise ValueError(f"no machine {name!r} with a bandwidth and a capacity in data/")


def left_out() -> pd.DataFrame:
    """The chips left out of the calculator, with the reason and the figures they would
    have been ranked by."""
    rows = []
    for name, why in LEFT_OUT.items():
        chip = hardware.chip(name)
        rows.append({"machine": name, "reason": why,
                     "capacity_GiB": chip.capacity_bytes / GiB,
                     "bandwidth_GB_per_s": chip.bandwidth_bytes_per_s / 1e9,
                     "source_url": chip.source("memory_capacity_GiB")})
    return pd.DataFrame(rows)


def nan_if_empty(values: tuple, how) -> float:
    """``how`` of the values that are not NaN, or NaN for none (a machine without runs, or
    runs without a roof)."""
    known = [v for v in values if v == v]
    return float(how(known)) if known else math.nan
