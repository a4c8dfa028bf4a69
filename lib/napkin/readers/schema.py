"""The submission format, ``napkin-result/1``: every field, what it must be, as data.

A reader's measurement is shared as one JSON file in this shape (documented in
``data/README.md`` and on the readers' page). The shape is a nested mapping of field
name to :class:`Kind` (or to a mapping, or to a one-item list of a mapping for a list of
them), so the check, the documentation table and the tests read the same definition.
A field the format does not name is refused too: that is how a host name or a user name
cannot travel in an extra field.
"""

from __future__ import annotations

import math
import re
from dataclasses import dataclass
from typing import Callable

__all__ = ["COUNT", "DATE", "documented", "FIELDS", "FLAG", "Kind", "one_of", "optional",
           "ORIGINS", "RATE", "RATE_FIELDS", "RUNNERS", "SAMPLES", "SCHEMA", "SHA256",
           "shape_problems", "SHARE", "SOME", "SPREAD", "TEXT", "TIME"]

SCHEMA = "napkin-result/1"


@dataclass(frozen=True)
class Kind:
    """What a field's value must be (``what``, as the refusal says it) and the test."""

    what: str
    test: Callable[[object], bool]
    optional: bool = False


def _real(v) -> bool:
    return isinstance(v, (int, float)) and not isinstance(v, bool) and math.isfinite(v)


def _whole(v) -> bool:
    return isinstance(v, int) and not isinstance(v, bool)


TEXT = Kind("a non-empty string", lambda v: isinstance(v, str) and v.strip() != "")
FLAG = Kind("true or false", lambda v: isinstance(v, bool))
COUNT = Kind("a whole number above 0", lambda v: _whole(v) and v > 0)
SOME = Kind("a whole number, 0 or more", lambda v: _whole(v) and v >= 0)
RATE = Kind("a number above 0", lambda v: _real(v) and v > 0)
SPREAD = Kind("a number, 0 or more", lambda v: _real(v) and v >= 0)
SHARE = Kind("a fraction from 0 to 1", lambda v: _real(v) and 0 <= v <= 1)
SAMPLES = Kind("a list of numbers above 0", lambda v: isinstance(v, list) and len(v) > 0
               and all(_real(x) and x > 0 for x in v))
SHA256 = Kind("64 hexadecimal digits (sha256 of the GGUF file)",
              lambda v: isinstance(v, str) and re.fullmatch(r"[0-9a-f]{64}", v) is not None)
DATE = Kind("a date, YYYY-MM-DD", lambda v: isinstance(v, str)
            and re.fullmatch(r"\d{4}-\d{2}-\d{2}", v) is not None)
TIME = Kind("a UTC time, YYYY-MM-DDTHH:MM:SS+00:00", lambda v: isinstance(v, str)
            and re.fullmatch(r"\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}\+00:00", v) is not None)


def one_of(*values: str) -> Kind:
    return Kind(f"one of {', '.join(values)}", lambda v: v in values)


def optional(kind: Kind) -> Kind:
    """The field may be absent or null."""
    return Kind(f"{kind.what}, or null", lambda v: v is None or kind.test(v), optional=True)


RUNNERS = ("llama-cpp-python", "llama-bench")
ORIGINS = ("probe", "spec", "given")

RATE_FIELDS = {
    "test": TEXT,                 # llama-bench's name: pp128, tg64
    "tokens_per_s": RATE,         # mean of the per-repetition rates
    "stddev": SPREAD,             # their sample standard deviation
    "repetitions": COUNT,
    "samples": SAMPLES,           # every repetition's tokens/s
}

FIELDS = {
    "schema": one_of(SCHEMA),
    "measured_at": TIME,          # when make measure ran (UTC)
    "shared_on": DATE,            # when it was shared
    "book": {"version": TEXT, "commit": TEXT},
    "machine": {
        "cpu": TEXT,
        "gpu": optional(TEXT),    # the device(s) llama.cpp computed on; null on the CPU
        "backend": TEXT,          # CPU, CUDA, Metal, ROCm, Vulkan ...
        "logical_cpus": COUNT,
        "threads": COUNT,         # CPU threads llama.cpp used
        "memory_bytes": COUNT,    # installed memory
        "os_family": one_of("Linux", "macOS", "Windows", "FreeBSD", "other"),
        "arch": TEXT,
    },
    "llama_cpp": {
        "runner": one_of(*RUNNERS),
        "version": TEXT,          # as llama.cpp reports it
        "commit": TEXT,           # llama.cpp's commit, or "unknown"
        "binding_version": optional(TEXT),
        "build": TEXT,            # its system info: backends and CPU features compiled in
    },
    "speculative": FLAG,          # speculative decoding ran (decode may pass the ceiling)
    "runs": [{
        "model": {
            "name": TEXT,
            "synthetic": FLAG,
            "quantisation": TEXT,
            "file_bytes": COUNT,
            "bytes_per_token": COUNT,  # tensor data llama.cpp reports: read once per token
            "params": COUNT,
            "embedding_params": SOME,  # the token embedding: a lookup, not a matmul
            "sha256": SHA256,
        },
        "prefill": RATE_FIELDS,
        "decode": RATE_FIELDS,
        "ceiling": {
            "bandwidth_bytes_per_s": RATE,
            "origin": one_of(*ORIGINS),
            "source": TEXT,
            "chip": optional(TEXT),            # the chip of data/hardware_specs.csv (spec)
            "probe_best_bytes_per_s": optional(RATE),
            "probe_median_bytes_per_s": optional(RATE),
            "probe_spread": optional(SHARE),
        },
    }],
}


def shape_problems(doc, spec=FIELDS, where: str = "") -> list[tuple[str, str]]:
    """(field, problem) for every field of ``doc`` that is missing, mistyped or unknown."""
    if not isinstance(doc, dict):
        return [(where or "(file)", "should be a JSON object {...}")]
    out = []
    for name, kind in spec.items():
        field = f"{where}{name}"
        if name not in doc:
            if not (isinstance(kind, Kind) and kind.optional):
                out.append((field, "is missing"))
            continue
        value = doc[name]
        if isinstance(kind, Kind):
            if not kind.test(value):
                out.append((field, f"is {_show(value)}, should be {kind.what}"))
        elif isinstance(kind, list):
            if not isinstance(value, list) or not value:
                out.append((field, f"is {_show(value)}, should be a list of at least one"))
            else:
                for i, item in enumerate(value):
                    out += shape_problems(item, kind[0], f"{field}[{i}].")
        else:
            out += shape_problems(value, kind, f"{field}.")
    out += [(f"{where}{name}", "is not a field of " + SCHEMA) for name in doc if name not in spec]
    return out


def _show(value) -> str:
    text = repr(value)
    return text if len(text) <= 40 else text[:37] + "..."


def documented(spec=FIELDS, where: str = "") -> list[tuple[str, str]]:
    """(field, what it must be) for every field, in order: the format's documentation."""
    out = []
    for name, kind in spec.items():
        field = f"{where}{name}"
        if isinstance(kind, Kind):
            out.append((field, kind.what))
        elif isinstance(kind, list):
            out += documented(kind[0], f"{field}[].")
        else:
            out += documented(kind, f"{field}.")
    return out
