"""How long a live measurement runs: a short one by default, the full one when asked.

Building the book runs every live cell, and a reader who only wants to read it should not
wait for minutes of llama.cpp: each measurement has a quick plan (seconds) and a full one.
``NAPKIN_LIVE=full`` (what ``make book FULL=1`` sets) asks for the full plan of every
measurement; a measurement's own variable (``NAPKIN_MEASURE``, ``NAPKIN_DEPTH``,
``NAPKIN_VERIFY``, ``NAPKIN_BATCH``) overrides it for that one. The plan's ``mode`` is saved in
its record and named beside every live figure.
"""

from __future__ import annotations

import os

LIVE = "NAPKIN_LIVE"
MODES = ("quick", "full")


def choose(variable: str, quick, full):
    """``full`` when ``$variable`` (or, unset, ``$NAPKIN_LIVE``) says ``full``, else
    ``quick``; anything else in either is refused, naming the variable."""
    for name in (variable, LIVE):
        value = os.environ.get(name, "").strip().lower()
        if not value:
            continue
        if value not in MODES:
            raise ValueError(f"{name} must be 'quick' or 'full', got {value!r}")
        return full if value == "full" else quick
    return quick
