"""SI base units inside, explicit decimal or binary prefixes at the edge.

Every quantity in napkin is a plain float in bytes, bytes/s, FLOP, FLOP/s or
seconds. Prefixes only appear when a number enters (``3.83 * GB``) or leaves
(``fmt_bytes(x, "GiB")``), so a GB can never silently become a GiB.
"""

from __future__ import annotations

import math
from numbers import Integral, Real

__all__ = ["BYTE_UNITS", "fmt_bandwidth", "fmt_bytes", "GB", "GiB", "KB", "KiB", "MB", "MiB",
           "require_positive", "require_whole", "TFLOPS", "to_bytes"]

KB, MB, GB, TB = 1e3, 1e6, 1e9, 1e12
KiB, MiB, GiB, TiB = 2.0**10, 2.0**20, 2.0**30, 2.0**40
TFLOPS = 1e12

BYTE_UNITS = {"B": 1.0, "KB": KB, "MB": MB, "GB": GB, "TB": TB,
              "KiB": KiB, "MiB": MiB, "GiB": GiB, "TiB": TiB}


def require_positive(name: str, value, *, allow_zero: bool = False) -> float:
    """Return ``value`` as a float, or raise a ValueError that names the field.

    Used at every public entry point so a negative bandwidth or a NaN model
    size fails loudly instead of producing a plausible-looking wrong number.
    """
    if isinstance(value, bool) or not isinstance(value, Real):
        raise ValueError(f"{name} must be a number, got {value!r}")
    x = float(value)
    if math.isnan(x) or math.isinf(x):
        raise ValueError(f"{name} must be finite, got {value!r}")
    if x < 0 or (x == 0 and not allow_zero):
        bound = "zero or more" if allow_zero else "greater than zero"
        raise ValueError(f"{name} must be {bound}, got {value!r}")
    return x


def to_bytes(value: float, unit: str) -> float:
    """Convert ``value`` expressed in ``unit`` (GB, GiB, ...) to bytes."""
    if unit not in BYTE_UNITS:
        raise ValueError(f"unknown byte unit {unit!r}; use one of {', '.join(BYTE_UNITS)}")
    return require_positive("value", value, allow_zero=True) * BYTE_UNITS[unit]


def fmt_bytes(n_bytes: float, unit: str = "GB", digits: int = 2) -> str:
    """Format a byte count in one explicit unit, e.g. ``'3.83 GB'``."""
    if unit not in BYTE_UNITS:
        raise ValueError(f"unknown byte unit {unit!r}; use one of {', '.join(BYTE_UNITS)}")
    return f"{n_bytes / BYTE_UNITS[unit]:,.{digits}f} {unit}"


def fmt_bandwidth(bytes_per_s: float, digits: int = 0) -> str:
    """Format a bandwidth in decimal GB/s, the unit every vendor quotes."""
    return f"{bytes_per_s / GB:,.{digits}f} GB/s"


def require_whole(name: str, value, minimum: int = 1) -> int:
    """Return ``value`` as an int, or raise a ValueError that names the field: counts of
    tokens, requests or instances are whole numbers (a float 2.5 or a bool is refused)."""
    if isinstance(value, bool) or not isinstance(value, Integral) or value < minimum:
        raise ValueError(f"{name} must be a whole number >= {minimum}, got {value!r}")
    return int(value)
