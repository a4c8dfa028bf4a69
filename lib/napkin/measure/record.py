"""Result records: saved as JSON under ``results/`` (never ``data/``), shown as a table."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pandas as pd

from . import machine


def results_dir() -> Path:
    """``$NAPKIN_RESULTS``, else ``results/`` at the repository root (git-ignored)."""
    override = os.environ.get("NAPKIN_RESULTS")
    if override:
        return Path(override)
    return Path(__file__).resolve().parents[3] / "results"


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


def frame(record: dict | None) -> pd.DataFrame:
    """One row per model run, in the columns of :mod:`napkin.published` (family 'live');
    empty when there was no measurement."""
    from ..published import COLUMNS

    if record is None:
        return pd.DataFrame(columns=COLUMNS)
    rows = []
    for run in record["runs"]:
        what = f"synthetic {run['format']}" if run["synthetic"] else Path(run["model_path"]).name
        rows.append({
            "machine": f"{machine.label(record['machine'])} ({what}, live)",
            "family": "This machine (live)", "quant": run["format"],
            "bandwidth_bytes_per_s": run["bandwidth_bytes_per_s"],
            "bytes_per_token": run["model_bytes"],
            "tokens_per_s": run["tg"]["tokens_per_s"] if "tg" in run else float("nan"),
            "ceiling_tokens_per_s": run["ceiling_tokens_per_s"],
            "fraction_of_ceiling": run.get("fraction_of_ceiling", float("nan")),
            "confidence": "measured here", "source_url": "live measurement (results/)",
            "pp_tokens_per_s": run["pp"]["tokens_per_s"] if "pp" in run else float("nan"),
            "tg_stddev": run["tg"]["stddev"] if "tg" in run else float("nan"),
            "probe_spread": run["probe_spread"],
        })
    return pd.DataFrame(rows)


def who(record: dict | None) -> str:
    """The label a live figure carries: which machine and backend measured it."""
    if record is None:
        return "no live measurement (llama.cpp unavailable where this page was built)"
    return f"{machine.label(record['machine'])}, {record['runner']['backend']}"


def table(record: dict) -> str:
    """The readable summary ``python -m napkin measure`` prints."""
    m, r = record["machine"], record["runner"]
    lines = [f"Machine : {m['cpu_model']} ({m['threads_used']} of {m['logical_cpus']} logical "
             f"CPUs), {m['os']}",
             f"Runner  : {r['runner']}, llama.cpp {r['llama_cpp_version']}, backend {r['backend']}",
             ""]
    head = (f"{'model':<22}{'bytes/token':>13}{'probe GB/s':>12}{'spread':>8}"
            f"{'pp tok/s':>16}{'tg tok/s':>16}{'ceiling':>10}{'fraction':>10}")
    lines += [head, "-" * len(head)]
    for run in record["runs"]:
        name = f"synthetic {run['format']}" if run["synthetic"] else Path(run["model_path"]).name
        pp, tg = run.get("pp"), run.get("tg")
        lines.append(
            f"{name[:21]:<22}{run['model_bytes'] / 1e6:>10,.1f} MB"
            f"{run['probe_best_bytes_per_s'] / 1e9:>12.1f}{run['probe_spread']:>8.0%}"
            + (f"{pp['tokens_per_s']:>9,.1f} ±{pp['stddev']:>5.1f}" if pp else f"{'-':>16}")
            + (f"{tg['tokens_per_s']:>9,.1f} ±{tg['stddev']:>5.1f}" if tg else f"{'-':>16}")
            + f"{run['ceiling_tokens_per_s']:>10,.1f}"
            + (f"{run['fraction_of_ceiling']:>10.0%}" if "fraction_of_ceiling" in run else ""))
    lines += ["", "ceiling = bandwidth / bytes per token; fraction = measured tg / ceiling. "
              "pp and tg: mean ± sample stddev of per-repetition tokens/s."]
    return "\n".join(lines)


def sentence(record: dict | None, run_index: int = 0) -> str:
    """One Markdown sentence on a live run, for the page (numbers computed, not typed)."""
    if record is None:
        return ("This page was built on a machine where llama.cpp could not run, so only the "
                "published figures are shown; run `make measure` on yours.")
    run = record["runs"][run_index]
    tg = run["tg"]
    return (f"The machine that built this page ({machine.label(record['machine'])}, "
            f"{record['runner']['backend']} backend) read memory at "
            f"**{run['bandwidth_bytes_per_s'] / 1e9:.1f} GB/s** in the probe "
            f"(passes varied by {run['probe_spread']:.0%}), which puts the ceiling for its "
            f"{run['model_bytes'] / 1e6:,.0f} MB synthetic {run['format']} model at "
            f"**{run['ceiling_tokens_per_s']:,.0f} tokens/s**. llama.cpp generated "
            f"**{tg['tokens_per_s']:,.1f} ± {tg['stddev']:.1f} tokens/s**, "
            f"**{run['fraction_of_ceiling']:.0%}** of that ceiling.")
