"""How much of a Mac's unified memory its GPU may use without changing a system setting.

macOS caps what Metal may keep resident (``recommendedMaxWorkingSetSize``, which llama.cpp
prints at start-up); Apple documents no percentage. ``data/gpu_memory_limits.csv`` holds the
values people recorded on their own Macs, and the rule here counts on the lowest recorded
for a Mac of the same class. Above that limit a workload runs only after raising
``iogpu.wired_limit_mb`` (``sudo sysctl iogpu.wired_limit_mb=<MiB>``, undone at reboot),
which takes memory from everything else the Mac runs.
"""

from __future__ import annotations

import pandas as pd

from .. import tables
from ..units import require_positive

#: Macs with at most this much memory form the small class of the GPU-limit rule: the
#: largest memory of the Pro chips and of the 32-core M4 Max. No Mac between this and
#: 64 GiB is recorded in data/gpu_memory_limits.csv.
SMALL_MAC_GiB = 36
RAISE_LIMIT = "fits only after raising iogpu.wired_limit_mb"


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


#: The name chapter 8 first gave the rule; kept for code written against it.
default_gpu_fraction = mac_default_gpu_fraction


def usable_GiB(vendor: str, memory_GiB: float) -> float:
    """GiB the GPU may use by default in a configuration with ``memory_GiB``: all of it,
    except on a Mac."""
    if vendor != "Apple":
        return memory_GiB
    return memory_GiB * mac_default_gpu_fraction(memory_GiB)[0]
