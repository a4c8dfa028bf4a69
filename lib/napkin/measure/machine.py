"""What machine a measurement ran on: the label every live figure carries."""

from __future__ import annotations

import os
import platform
import re
import shutil
import subprocess
from pathlib import Path

FALLBACK_LLC_BYTES = 32 * 2**20


def cpu_model() -> str:
    """The CPU's marketing name, from the OS (falls back to the architecture)."""
    cpuinfo = Path("/proc/cpuinfo")
    if cpuinfo.is_file():
        match = re.search(r"^model name\s*:\s*(.+)$", cpuinfo.read_text(), re.MULTILINE)
        if match:
            return match.group(1).strip()
    if platform.system() == "Darwin":
        out = _sysctl("machdep.cpu.brand_string")
        if out:
            return out
    return platform.processor() or platform.machine()


def _sysctl(key: str) -> str | None:
    if not shutil.which("sysctl"):
        return None
    proc = subprocess.run(["sysctl", "-n", key], capture_output=True, text=True)
    return proc.stdout.strip() if proc.returncode == 0 and proc.stdout.strip() else None


def last_level_cache_bytes() -> int:
    """Size of the largest CPU cache, so synthetic models can be made bigger than it."""
    sizes = []
    for f in Path("/sys/devices/system/cpu/cpu0/cache").glob("index*/size"):
        text = f.read_text().strip()
        unit = {"K": 2**10, "M": 2**20, "G": 2**30}.get(text[-1:], 1)
        sizes.append(int(text.rstrip("KMG")) * unit)
    for key in ("hw.l3cachesize", "hw.l2cachesize"):
        value = _sysctl(key) if not sizes else None
        if value and value.isdigit() and int(value) > 0:
            sizes.append(int(value))
    return max(sizes) if sizes else FALLBACK_LLC_BYTES


#: psutil's figure, and the sysconf page count that stands for it without psutil.
_MEMORY = {"available": "SC_AVPHYS_PAGES", "total": "SC_PHYS_PAGES"}


def _memory_bytes(which: str) -> int | None:
    try:
        import psutil

        return int(getattr(psutil.virtual_memory(), which))
    except ImportError:  # pragma: no cover - psutil ships with the book's environment
        pages = _MEMORY[which]
        if hasattr(os, "sysconf") and pages in os.sysconf_names:
            return os.sysconf(pages) * os.sysconf("SC_PAGE_SIZE")
        return None


def available_memory_bytes() -> int | None:
    """Memory free for a model now (checked before one is written or loaded)."""
    return _memory_bytes("available")


def total_memory_bytes() -> int | None:
    """Installed memory (what a reader's submission says the machine has)."""
    return _memory_bytes("total")


def describe(threads: int) -> dict:
    return {"cpu_model": cpu_model(), "logical_cpus": os.cpu_count(), "threads_used": threads,
            "os": platform.platform(), "machine": platform.machine(),
            "python": platform.python_version(),
            "memory_bytes_total": total_memory_bytes(),
            "memory_bytes_available": available_memory_bytes(),
            "last_level_cache_bytes": last_level_cache_bytes()}


def label(machine: dict) -> str:
    """A short label for charts: 'AMD EPYC, 2 threads'."""
    n = machine["threads_used"]
    return f"{machine['cpu_model']}, {n} thread{'s' if n != 1 else ''}"
