"""The memory probe against its references, from the benchmark's stored result.

``benchmarks/probe_vs_reference.py`` measures, round by round and alternating, this
probe, the probe as it was before (a git revision), ``llama-roofline membw``, compiled C
loops and llama.cpp's own decode; it keeps every value in
``benchmarks/measured/probe_vs_reference-*.json``. This module reads that file back and
computes the medians and the per-round ratios, for the script's report and for the rerun
page, so both say the same thing. A ratio is a median of per-round ratios (each side
measured minutes apart in the same round), not a ratio of medians.
"""

from __future__ import annotations

import json
import statistics
from pathlib import Path

import pandas as pd

__all__ = ["latest", "load", "load_dict", "measured_dir", "medians", "quiet", "RATIOS", "ratios",
           "SIDES"]

#: series name -> what it is, in the order the page shows them.
SIDES = {
    "probe best": "the book's probe, best pass",
    "probe median": "the book's probe, median pass",
    "baseline best": "the probe before issue 23, best pass",
    "llama-roofline best": "llama-roofline membw (best kernel and thread count)",
    "C best": "compiled C loops (stream_read.c), best kernel",
    "decode F16": "llama.cpp decode on F16: bytes per token x tokens/s",
    "decode Q8_0": "llama.cpp decode on Q8_0: bytes per token x tokens/s",
}

#: (numerator, denominator) of each per-round ratio the benchmark reports. "reference best"
#: is the better of llama-roofline and the C loops in that round; "probe around X" the
#: better of the two probes right before and after decode X.
RATIOS = (
    ("probe best", "reference best"),
    ("probe best", "llama-roofline best"),
    ("baseline best", "llama-roofline best"),
    ("probe best", "C best"),
    ("baseline best", "C best"),
    ("decode F16", "probe around F16"),
    ("decode F16", "baseline around F16"),
    ("decode Q8_0", "probe around Q8_0"),
)


def measured_dir() -> Path:
    """``benchmarks/measured`` in the repository this napkin was imported from."""
    return Path(__file__).resolve().parents[3] / "benchmarks" / "measured"


def latest(directory: Path | None = None) -> Path | None:
    """The newest stored comparison that has llama-roofline in it (None when there is none)."""
    found = sorted(Path(directory or measured_dir()).glob("probe_vs_reference-*.json"))
    found = [p for p in found if "llama-roofline best" in load(p)["series"]]
    return found[-1] if found else None


def load(path: str | Path) -> dict:
    """A stored result, with ``reference best`` added (see :func:`load_dict`)."""
    return load_dict(json.loads(Path(path).read_text()))


def load_dict(result: dict) -> dict:
    """``result`` with ``reference best``: the better of llama-roofline and the C loops in
    each round, where they ran."""
    series = result["series"]
    refs = [series[k] for k in ("llama-roofline best", "C best") if k in series]
    if refs and "reference best" not in series:
        series["reference best"] = [max(v) for v in zip(*refs)]
    return result


def quiet(result: dict, threshold: float | None = None) -> list[int]:
    """Rounds in which other processes took less than ``threshold`` of the CPU."""
    threshold = result["args"].get("quiet", 0.05) if threshold is None else threshold
    return [i for i, share in enumerate(result["others_cpu"]) if share < threshold]


def _pick(values: list[float], rounds: list[int] | None) -> list[float]:
    return values if rounds is None else [values[i] for i in rounds]


def medians(result: dict, rounds: list[int] | None = None) -> pd.DataFrame:
    """One row per side the run measured: median, min and max in bytes/s."""
    rows = []
    for key, what in SIDES.items():
        if key in result["series"]:
            v = _pick(result["series"][key], rounds)
            if v:
                rows.append({"side": key, "what": what, "median": statistics.median(v),
                             "min": min(v), "max": max(v), "rounds": len(v)})
    return pd.DataFrame(rows)


def ratios(result: dict, rounds: list[int] | None = None) -> pd.DataFrame:
    """One row per ratio both of whose sides ran: the median of per-round ratios, min, max,
    and in how many rounds the numerator was below the denominator."""
    rows, series = [], result["series"]
    for a, b in RATIOS:
        if a in series and b in series:
            r = [x / y for x, y in zip(_pick(series[a], rounds), _pick(series[b], rounds))]
            if r:
                rows.append({"ratio": f"{a} / {b}", "median": statistics.median(r),
                             "min": min(r), "max": max(r), "below": sum(x < 1 for x in r),
                             "rounds": len(r)})
    return pd.DataFrame(rows)
