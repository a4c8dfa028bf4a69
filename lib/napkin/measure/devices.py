"""A GPU as llama.cpp names it -> the chip in ``data/hardware_specs.csv`` whose bandwidth applies.

Two steps, both data: first the aliases below (device names whose chip name is not
spelled out in them, such as the SXM H100's ``NVIDIA H100 80GB HBM3``), then the
device name with its vendor words removed (``NVIDIA GeForce RTX 4090`` -> ``RTX 4090``,
``Apple M2 Ultra`` -> ``M2 Ultra``, ``AMD Instinct MI300X`` -> ``MI300X``) compared
with every chip name in the table. A name neither step matches is unknown, never
guessed: a 40 GB A100 or a laptop RTX 4090 has less bandwidth than the table's part.
"""

from __future__ import annotations

import re
import subprocess
from dataclasses import dataclass

from .. import hardware

__all__ = ["ALIASES", "apple_gpu_cores", "DeviceMatch", "match", "normalise", "tiered",
           "VENDOR_WORDS"]

#: (device name as CUDA, ROCm, Metal or Vulkan reports it, chip in hardware_specs.csv).
#: Whole-name matches (case-insensitive), for parts whose reported name does not
#: contain the table's chip name.
ALIASES = (
    ("NVIDIA H100 80GB HBM3", "H100 SXM"),          # the SXM5 part; the PCIe one says PCIe
    ("NVIDIA A100-SXM4-80GB", "A100 SXM"),
    ("NVIDIA A100 80GB PCIe", "A100 PCIe"),
    ("NVIDIA GH200 480GB", "GH200"),                # the 96 GB HBM3 version
    ("NVIDIA GB200", "GB200 (per GPU)"),
    ("NVIDIA GB300", "GB300 (per GPU)"),
    ("NVIDIA GB10", "DGX Spark"),
    ("NVIDIA RTX 6000 Ada Generation", "RTX 6000 Ada"),
    ("NVIDIA RTX PRO 6000 Blackwell Workstation Edition", "RTX PRO 6000 Blackwell"),
    ("AMD Radeon 8060S Graphics", "Strix Halo"),
)

#: Words a vendor puts before the chip name.
VENDOR_WORDS = ("NVIDIA", "GeForce", "AMD", "Instinct", "Apple")


@dataclass(frozen=True)
class DeviceMatch:
    """Which chip a device name was matched to, and by which rule (shown to the reader)."""

    device: str
    chip: str
    rule: str

    @property
    def bandwidth_bytes_per_s(self) -> float:
        return hardware.chip(self.chip).bandwidth_bytes_per_s

    @property
    def source_url(self) -> str:
        return hardware.chip(self.chip).source("memory_bandwidth_GB_per_s")


def normalise(device: str) -> str:
    """The device name without vendor words or a trailing parenthesis (Vulkan's driver name)."""
    name = re.sub(r"\s*\([^)]*\)\s*$", "", device.strip())
    words = [w for w in name.split() if w not in VENDOR_WORDS]
    return " ".join(words)


def match(device: str, gpu_cores: int | None = None) -> DeviceMatch | None:
    """The chip for ``device``, or None when no rule knows it. ``gpu_cores`` picks between
    Apple chips the table lists per GPU core count (M3 Max, M4 Max)."""
    if not isinstance(device, str) or not device.strip():
        raise ValueError(f"device must be a non-empty name, got {device!r}")
    known = hardware.chips()
    plain = re.sub(r"\s*\([^)]*\)\s*$", "", device.strip())
    for alias, chip in ALIASES:
        if plain.lower() == alias.lower():
            return DeviceMatch(device, chip, f"alias {alias!r} -> {chip!r}")
    name = normalise(device)
    by_lower = {k.lower(): k for k in known}
    if name.lower() in by_lower:
        chip = by_lower[name.lower()]
        return DeviceMatch(device, chip, f"{device!r} without vendor words is {chip!r}")
    tiers = tiered(name)
    if tiers and gpu_cores:
        chip = f"{name} ({gpu_cores}-core GPU)"
        if chip in known:
            return DeviceMatch(device, chip, f"{name} with {gpu_cores} GPU cores")
    return None


def tiered(name: str) -> list[str]:
    """Chips the table lists per GPU core count for this name (``M3 Max`` -> two rows)."""
    return [c for c in hardware.chips() if c.startswith(f"{name} (") and c.endswith("-core GPU)")]


def apple_gpu_cores() -> int | None:
    """The GPU core count macOS reports (``system_profiler``), or None elsewhere."""
    try:
        out = subprocess.run(["system_profiler", "SPDisplaysDataType"], capture_output=True,
                             text=True, timeout=30).stdout
    except (OSError, subprocess.SubprocessError):
        return None
    m = re.search(r"Total Number of Cores:\s*(\d+)", out)
    return int(m.group(1)) if m else None
