"""The bandwidth in the ceiling, and where it came from: it follows the backend that ran.

- llama.cpp on a GPU: the device's memory bandwidth from ``data/hardware_specs.csv``,
  found by the device's name (:mod:`napkin.measure.devices`); an unknown device is an
  error that names the fix (``--bandwidth``), never a guess;
- llama.cpp on the CPU: the memory probe (:mod:`napkin.measure.probe`), before and after;
- a bandwidth given by hand (``--bandwidth`` or ``NAPKIN_BANDWIDTH_GB_PER_S``) wins over both.
"""

from __future__ import annotations

import math
import os
from dataclasses import asdict, dataclass

from . import devices
from .backend import Backend
from .results import MeasurementUnavailable

__all__ = ["Bandwidth", "ENV", "for_run", "from_env", "given", "of_device", "of_probe", "ORIGINS",
           "unknown_message", "UnknownDevice"]

ENV = "NAPKIN_BANDWIDTH_GB_PER_S"
ORIGINS = ("probe", "spec", "given")


class UnknownDevice(MeasurementUnavailable):
    """llama.cpp runs on a GPU whose bandwidth the book's data does not list."""


@dataclass(frozen=True)
class Bandwidth:
    """A bandwidth for the ceiling: how much, of what device, and where the figure came from."""

    bytes_per_s: float
    origin: str      # "probe", "spec" or "given"
    source: str      # one line: where the figure came from
    device: str      # whose bandwidth it is
    chip: str | None = None
    rule: str | None = None       # how the device name was matched to the chip
    source_url: str | None = None

    def __post_init__(self):
        if self.origin not in ORIGINS:
            raise ValueError(f"origin must be one of {', '.join(ORIGINS)}, got {self.origin!r}")
        if not (isinstance(self.bytes_per_s, (int, float)) and math.isfinite(self.bytes_per_s)
                and self.bytes_per_s > 0):
            raise ValueError(f"bandwidth must be a positive number of bytes/s, "
                             f"got {self.bytes_per_s!r}")

    def label(self) -> str:
        """``1,008 GB/s (RTX 4090, vendor spec)``: the figure and its origin, for every cell."""
        what = {"probe": "memory probe", "given": "given by hand",
                "spec": f"{self.chip}, vendor spec"}[self.origin]
        return f"{self.bytes_per_s / 1e9:,.1f} GB/s ({what})"

    def to_dict(self) -> dict:
        return {k: v for k, v in asdict(self).items() if v is not None} | {"label": self.label()}


def given(gb_per_s: float, device: str, how: str = "--bandwidth") -> Bandwidth:
    """A bandwidth typed by the reader, in GB/s (decimal, as vendors state it)."""
    if isinstance(gb_per_s, bool) or not isinstance(gb_per_s, (int, float)) \
            or not math.isfinite(gb_per_s) or gb_per_s <= 0:
        raise ValueError(f"--bandwidth must be a positive number of GB/s, got {gb_per_s!r}")
    return Bandwidth(gb_per_s * 1e9, "given", f"given with {how}", device)


def from_env() -> float | None:
    """``NAPKIN_BANDWIDTH_GB_PER_S`` in GB/s (how a notebook's live cell gets a GPU's bandwidth
    the data lacks), or None when unset."""
    text = os.environ.get(ENV, "").strip()
    if not text:
        return None
    try:
        return float(text)
    except ValueError:
        raise ValueError(f"{ENV} must be a number of GB/s, got {text!r}") from None


def of_device(backend: Backend, gpu_cores: int | None = None) -> Bandwidth:
    """The vendor bandwidth of the GPUs ``backend`` runs on, or :class:`UnknownDevice`.
    Several identical GPUs read their layers one after another, so one GPU's bandwidth
    bounds a token; different GPUs have no single figure."""
    if not backend.gpu:
        raise ValueError(f"{backend.describe()} is not a GPU backend")
    if not backend.devices:
        raise UnknownDevice(f"llama.cpp runs on {backend.name} but does not name its device; "
                            f"pass the device's memory bandwidth with --bandwidth GB_PER_S "
                            f"(in a notebook: set {ENV})")
    if backend.name == "Metal" and gpu_cores is None:
        gpu_cores = devices.apple_gpu_cores()
    found = [devices.match(d, gpu_cores) for d in backend.devices]
    if any(m is None for m in found):
        unknown = backend.devices[found.index(None)]
        raise UnknownDevice(unknown_message(unknown, backend.name))
    chips = {m.chip for m in found}
    if len(chips) > 1:
        raise UnknownDevice(f"llama.cpp splits the model across different GPUs "
                            f"({', '.join(backend.devices)}), which have no single bandwidth; "
                            f"pass the one to use with --bandwidth GB_PER_S")
    m = found[0]
    count = f" (one of {len(found)}, which take their layers in turn)" if len(found) > 1 else ""
    return Bandwidth(m.bandwidth_bytes_per_s, "spec",
                     f"data/hardware_specs.csv, memory_bandwidth_GB_per_s of {m.chip}{count}; "
                     f"matched by {m.rule}", m.device, chip=m.chip, rule=m.rule,
                     source_url=m.source_url)


def unknown_message(device: str, backend: str) -> str:
    """What to do when the device's bandwidth is not in the data."""
    tiers = devices.tiered(devices.normalise(device))
    which = (f"; the data lists it per GPU core count ({', '.join(tiers)}) and the core count "
             f"could not be read" if tiers else "")
    return (f"llama.cpp runs on {backend} ({device}), whose memory bandwidth "
            f"data/hardware_specs.csv does not list{which}; pass the vendor's figure with "
            f"--bandwidth GB_PER_S (in a notebook: set {ENV})")


def of_probe(before, after, device: str) -> Bandwidth:
    """The CPU memory probe's best pass, taken right before and after a model's run."""
    best = max(before, after, key=lambda p: p.best_bytes_per_s)
    return Bandwidth(best.best_bytes_per_s, "probe",
                     f"memory probe on the CPU, best pass before and after the run "
                     f"({best.kernel}, {best.threads} threads)", device)


def for_run(backend: Backend, override_gb_per_s: float | None = None) -> Bandwidth | None:
    """The bandwidth decided before any run: given, or the GPU's spec (:class:`UnknownDevice`
    when the data lacks it); None on the CPU, where the probe decides around each model."""
    if override_gb_per_s is None:
        override_gb_per_s = from_env()
        how = ENV
    else:
        how = "--bandwidth"
    if override_gb_per_s is not None:
        return given(override_gb_per_s, backend.describe(), how)
    if backend.gpu:
        return of_device(backend)
    return None
