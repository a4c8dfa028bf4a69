"""Result records: saved as JSON under ``results/`` (never ``data/``), shown as a table."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pandas as pd

from ..texttable import Column, render
from . import machine

#: The table ``python -m napkin measure`` prints, a row per model run (:func:`table`). A run
#: without a prefill rate or a probe (a GPU, an older record) shows "-" there; one without a
#: decode rate, nothing.
COLUMNS = (Column("model", 22, "{model}", "<"), Column("bytes/token", 13, "{mb:,.1f} MB"),
           Column("GB/s used", 11, "{gb_s:,.1f}"),
           Column("probe spread", 13, "{probe_spread:.0%}"),
           Column("pp tok/s", 16, "{pp[tokens_per_s]:>9,.1f} ±{pp[stddev]:>5.1f}"),
           Column("tg tok/s", 16, "{tg[tokens_per_s]:>9,.1f} ±{tg[stddev]:>5.1f}"),
           Column("ceiling", 10, "{ceiling_tokens_per_s:,.1f}"),
           Column("fraction", 10, "{fraction_of_ceiling:.0%}"),
           Column("decode GB/s", 13, "{decode:,.1f}", missing=""))


def results_dir() -> Path:
    """``$NAPKIN_RESULTS``, else ``results/`` at the repository root (git-ignored), or in the
    current folder when napkin was installed without the repository."""
    override = os.environ.get("NAPKIN_RESULTS")
    if override:
        return Path(override)
    root = Path(__file__).resolve().parents[3]
    return (root if (root / "pyproject.toml").is_file() else Path.cwd()) / "results"


def live(measure, what: str = "measurement", save_as: str | None = ""):
    """For a notebook cell: ``measure()``'s record, saved as a new file under ``results/``
    (its mode prefixed ``save_as``; None: not saved), or one sentence on why this machine
    cannot measure, and None, so that a page built where llama.cpp cannot run still builds."""
    from .results import MeasurementUnavailable

    try:
        record = measure()
    except MeasurementUnavailable as err:
        print(f"No live {what} on this machine: {err}.")
        return None
    if save_as is not None:
        mode = f"{save_as}-{record['mode']}" if save_as else record["mode"]
        record["saved_to"] = str(save(record | {"mode": mode}))
    return record


def save(record: dict, directory: Path | None = None) -> Path:
    """Write ``record`` to a new file; an earlier result is never overwritten."""
    directory = Path(directory or results_dir())
    directory.mkdir(parents=True, exist_ok=True)
    stamp = record["timestamp"].replace(":", "").replace("+0000", "Z")
    base = f"measure-{stamp}-{record['mode'].split(',')[0]}"
    path = directory / f"{base}.json"
    n = 1
    while path.exists():
        n += 1
        path = directory / f"{base}-{n}.json"
    tmp = path.with_name(f".{path.name}.partial")
    tmp.write_text(json.dumps(record, indent=2) + "\n")
    tmp.replace(path)
    return path


def load(path: str | Path) -> dict:
    path = Path(path)
    try:
        record = json.loads(path.read_text())
    except FileNotFoundError:
        raise ValueError(f"no result file at {path}") from None
    except json.JSONDecodeError as err:
        raise ValueError(f"{path} is not a measurement result (invalid JSON: {err.msg})") from None
    if record.get("schema") != "napkin.measure/1":
        raise ValueError(f"{path} is not a napkin measurement result")
    return record


def _name(run: dict) -> str:
    return f"synthetic {run['format']}" if run["synthetic"] else Path(run["model_path"]).name


def _get(run: dict, kind: str, key: str) -> float:
    return run[kind][key] if kind in run else float("nan")


def frame(record: dict | None) -> pd.DataFrame:
    """One row per model run, in the columns of :mod:`napkin.published` (family 'live');
    empty when there was no measurement."""
    from ..published import COLUMNS

    if record is None:
        return pd.DataFrame(columns=COLUMNS)
    rows = []
    for run in record["runs"]:
        rows.append({
            "machine": f"{machine.label(record['machine'])} ({_name(run)}, live)",
            "family": "This machine (live)", "quant": run["format"],
            "bandwidth_bytes_per_s": run["bandwidth_bytes_per_s"],
            "bytes_per_token": run["model_bytes"],
            "tokens_per_s": _get(run, "tg", "tokens_per_s"),
            "ceiling_tokens_per_s": run["ceiling_tokens_per_s"],
            "fraction_of_ceiling": run.get("fraction_of_ceiling", float("nan")),
            "confidence": "measured here", "source_url": "live measurement (results/)",
            "pp_tokens_per_s": _get(run, "pp", "tokens_per_s"),
            "tg_stddev": _get(run, "tg", "stddev"),
            "probe_spread": run.get("probe_spread", float("nan")),
            "bandwidth_origin": bandwidth_label(run),
        })
    return pd.DataFrame(rows)


def bandwidth_label(entry: dict) -> str:
    """Which bandwidth a run (or a depth record) used and where from: ``33.1 GB/s (memory
    probe)``, ``1,008.0 GB/s (RTX 4090, vendor spec)``. Records from before the label say
    what their own fields say."""
    if "bandwidth" in entry:
        return entry["bandwidth"]["label"]
    value = entry.get("bandwidth_bytes_per_s", entry.get("probe_best_bytes_per_s"))
    given = "command line" in entry.get("bandwidth_source", "")
    return f"{value / 1e9:,.1f} GB/s ({'given by hand' if given else 'memory probe'})"


def backend_label(record: dict) -> str:
    """``CPU`` or ``CUDA on NVIDIA GeForce RTX 4090``."""
    r = record["runner"]
    devices = r.get("devices") or []
    return f"{r['backend']} on {', '.join(devices)}" if devices else r["backend"]


def who(record: dict | None) -> str:
    """The label a live figure carries: which machine, backend and ceiling bandwidth measured
    it (a :func:`napkin.measure.live` or :func:`napkin.measure.depth.live` record)."""
    if record is None:
        return "no live measurement (llama.cpp unavailable where this page was built)"
    entry = record["runs"][0] if "runs" in record else record
    return (f"{machine.label(record['machine'])}, {backend_label(record)}, bandwidth "
            f"{bandwidth_label(entry)}, {record['mode']} measurement")


def _row(run: dict) -> dict:
    """A run with the fields :data:`COLUMNS` shows in their units (MB, GB/s)."""
    decode = run.get("decode_bytes_per_s")
    return run | {"model": _name(run)[:21], "mb": run["model_bytes"] / 1e6,
                  "gb_s": run["bandwidth_bytes_per_s"] / 1e9,
                  "decode": decode / 1e9 if decode else None}


def table(record: dict) -> str:
    """The readable summary ``python -m napkin measure`` prints."""
    m, r = record["machine"], record["runner"]
    lines = [f"Machine : {m['cpu_model']} ({m['threads_used']} of {m['logical_cpus']} logical "
             f"CPUs), {m['os']}",
             f"Runner  : {r['runner']}, llama.cpp {r['llama_cpp_version']}, backend "
             f"{backend_label(record)}"]
    if r.get("why"):
        lines.append(f"Why     : {r['why']}")
    first = record["runs"][0]
    lines += [f"Ceiling : {bandwidth_label(first)}: "
              f"{first.get('bandwidth', {}).get('source', first['bandwidth_source'])}", ""]
    lines.append(render(COLUMNS, map(_row, record["runs"])))
    lines += ["", "ceiling = bandwidth / bytes per token; fraction = measured tg / ceiling; "
              "decode GB/s = bytes per token x tg. pp and tg: mean ± sample stddev of "
              "per-repetition tokens/s."]
    return "\n".join(lines)


def cache_note(record: dict) -> str:
    """A clause on how the synthetic models compare with the last-level cache this machine
    reports (empty when they are at least four times it, or the record does not say)."""
    cache = record.get("machine", {}).get("last_level_cache_bytes")
    sizes = [r["model_bytes"] for r in record.get("runs", []) if r.get("synthetic")]
    if not cache or not sizes or min(sizes) >= 4 * cache:
        return ""
    return (f"the {record['mode']} plan's model ({min(sizes) / 1e6:,.0f} MB) is "
            f"{min(sizes) / cache:.1f} times the {cache / 2**20:,.0f} MiB last-level cache this "
            "machine reports, so some of it may be read from cache and decode can read high "
            "(`make book FULL=1` measures models eight times the cache)")


def sentence(record: dict | None, run_index: int = 0) -> str:
    """One Markdown sentence on a live run, for the page (numbers computed, not typed)."""
    if record is None:
        return ("This page was built on a machine where llama.cpp could not run, so only the "
                "published figures are shown; run `make measure` on yours.")
    run = record["runs"][run_index]
    tg = run["tg"]
    ran = ("llama.cpp on the CPU" if record["runner"]["backend"] == "CPU"
           else f"llama.cpp on {backend_label(record)}")
    where = f"The machine that built this page ({machine.label(record['machine'])}, {ran})"
    used = run.get("bandwidth", {})
    origin = used.get("origin", "given" if "command line" in run.get("bandwidth_source", "")
                      else "probe")
    value = f"**{run['bandwidth_bytes_per_s'] / 1e9:,.1f} GB/s**"
    if origin == "probe":
        probe = max((run.get("probe_before", {}), run.get("probe_after", {})),
                    key=lambda p: p.get("best_bytes_per_s", 0))
        how = f", {probe['kernel']} kernel" if "kernel" in probe else ""
        bandwidth = (f"read memory at {value} in the memory probe (best pass{how}; passes "
                     f"varied by {run['probe_spread']:.0%})")
    elif origin == "spec":
        bandwidth = (f"has a memory bandwidth of {value}, the {used['chip']}'s vendor figure in "
                     f"`data/hardware_specs.csv` (matched by {used['rule']})")
    else:
        bandwidth = f"was given a bandwidth of {value} by hand ({run['bandwidth_source']})"
    note = cache_note(record)
    return (f"{where} {bandwidth}, which puts the ceiling for its "
            f"{run['model_bytes'] / 1e6:,.0f} MB {_name(run)} model at "
            f"**{run['ceiling_tokens_per_s']:,.0f} tokens/s**. llama.cpp generated "
            f"**{tg['tokens_per_s']:,.1f} ± {tg['stddev']:.1f} tokens/s**, "
            f"**{run['fraction_of_ceiling']:.0%}** of that ceiling, in the "
            f"{record['mode']} measurement" + (f"; {note}." if note else "."))
