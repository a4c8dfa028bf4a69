"""A measurement record -> a submission: what a reader shares, and nothing personal.

``make measure`` saves everything it knows under ``results/`` (the model's path, the OS
string, why it chose its runner); a submission (:mod:`.schema`) keeps what the readers'
page needs to place the machine and trust the point: the machine, the llama.cpp build, the
model and its content hash, pp and tg with every repetition, the ceiling's bandwidth and
where it came from, the book's commit and the date. Paths, host and user names stay home.
"""

from __future__ import annotations

import datetime as dt
import hashlib
import json
import platform
import subprocess
from pathlib import Path

from ..measure import record as records
from .schema import SCHEMA

#: The llama.cpp commit vendored in each llama-cpp-python release the book has pinned (the
#: binding reports only ggml's version): see benchmarks/README.md.
BINDING_COMMITS = {"0.3.36": "0c1e570"}
OS_FAMILIES = {"Linux": "Linux", "Darwin": "macOS", "macOS": "macOS", "Windows": "Windows",
               "FreeBSD": "FreeBSD"}
ROOT = Path(__file__).resolve().parents[3]


def share_dir() -> Path:
    """``results/share/``: submissions made here, before a pull request moves one."""
    return records.results_dir() / "share"


def latest_record(directory: Path | None = None) -> Path:
    """The newest ``make measure`` record, or a ValueError that says how to make one."""
    directory = Path(directory or records.results_dir())
    found = sorted(directory.glob("measure-*.json"), key=lambda p: p.stat().st_mtime)
    if not found:
        raise ValueError(f"no measurement in {directory}: run `make measure QUICK=1` (or "
                         "`python -m napkin measure --quick`) first, or name a record")
    return found[-1]


def book_commit() -> str:
    """The book's git commit this napkin runs from ("unknown" outside a clone)."""
    try:
        out = subprocess.run(["git", "-C", str(ROOT), "rev-parse", "HEAD"], capture_output=True,
                             text=True, timeout=10)
    except (OSError, subprocess.SubprocessError):
        return "unknown"
    return out.stdout.strip() if out.returncode == 0 and out.stdout.strip() else "unknown"


def os_family(os_string: str) -> str:
    """``Linux-6.1.0-...-x86_64-with-glibc2.36`` -> ``Linux``; ``macOS-14.4-arm64`` -> ``macOS``."""
    return OS_FAMILIES.get(os_string.split("-")[0], "other")


def sha256(path: Path) -> str:
    digest = hashlib.sha256()
    with open(path, "rb") as f:
        while block := f.read(1 << 24):
            digest.update(block)
    return digest.hexdigest()


def model_facts(run: dict) -> dict:
    """Name, quantisation, embedding parameters and content hash of a run's model file. The
    file must still be the one measured (same size), else the hash would vouch for another."""
    path = Path(run["model_path"])
    if not path.is_file():
        raise ValueError(f"the model measured ({path.name}) is no longer on disk, so its hash "
                         "cannot be taken: run `make measure QUICK=1` again, then share")
    if path.stat().st_size != run["file_bytes"]:
        raise ValueError(f"{path.name} changed since it was measured ({run['file_bytes']:,} "
                         f"bytes then, {path.stat().st_size:,} now): measure again, then share")
    if run.get("synthetic"):
        s = run["synthetic"]
        shape = s["shape"]
        facts = {"name": f"synthetic {s['format']} (hidden {shape['hidden_size']}, "
                         f"{shape['num_hidden_layers']} layers, seed {s['seed']})",
                 "quantisation": s["format"],
                 "embedding_params": shape["vocab_size"] * shape["hidden_size"]}
    else:
        facts = {"name": path.name} | gguf_facts(path)
    return facts | {"sha256": sha256(path)}


def gguf_facts(path: Path) -> dict:
    """A real GGUF's quantisation (``general.file_type``) and token-embedding size."""
    import gguf

    reader = gguf.GGUFReader(str(path))
    field = reader.fields.get("general.file_type")
    quant = "unknown"
    if field is not None:
        try:
            quant = gguf.LlamaFileType(int(field.parts[field.data[0]][0])).name
        except ValueError:
            pass
    embedding = next((int(t.n_elements) for t in reader.tensors if t.name == "token_embd.weight"),
                     0)
    return {"quantisation": quant.removeprefix("MOSTLY_"), "embedding_params": embedding}


def _rate(rate: dict) -> dict:
    return {"test": rate["test"], "tokens_per_s": rate["tokens_per_s"],
            "stddev": rate["stddev"], "repetitions": len(rate["samples"]),
            "samples": rate["samples"]}


def _ceiling(run: dict) -> dict:
    used = run.get("bandwidth", {})
    origin = used.get("origin", "probe")
    out = {"bandwidth_bytes_per_s": run["bandwidth_bytes_per_s"], "origin": origin,
           "source": used.get("source", run.get("bandwidth_source", "")),
           "chip": used.get("chip")}
    if "probe_best_bytes_per_s" in run:
        probes = [run[k] for k in ("probe_before", "probe_after") if k in run]
        best = max(probes, key=lambda p: p["best_bytes_per_s"]) if probes else {}
        out |= {"probe_best_bytes_per_s": run["probe_best_bytes_per_s"],
                "probe_median_bytes_per_s": best.get("median_bytes_per_s"),
                "probe_spread": run["probe_spread"]}
    return out


def llama_cpp(runner: dict) -> dict:
    """Which llama.cpp ran: runner, version, commit and the features it was built with."""
    version = runner["llama_cpp_version"]
    if runner["runner"] == "llama-bench":
        commit = version.split()[0]
    else:
        commit = BINDING_COMMITS.get(runner.get("binding_version") or "", "unknown")
    return {"runner": runner["runner"], "version": version, "commit": commit,
            "binding_version": runner.get("binding_version"),
            "build": runner.get("system_info") or "unknown"}


def from_record(record: dict, facts: list[dict] | None = None, *, commit: str | None = None,
                shared_on: str | None = None) -> dict:
    """The submission for ``record`` (a ``make measure`` result). ``facts``: each run's
    :func:`model_facts` (read from the model files when not given)."""
    from .. import __version__
    from ..measure import machine as machines

    if record.get("schema") != "napkin.measure/1":
        raise ValueError("not a `make measure` record (its schema is not napkin.measure/1)")
    runs = [r for r in record["runs"] if "pp" in r and "tg" in r]
    if not runs:
        raise ValueError("the record has no run with both prefill (pp) and decode (tg): "
                         "measure with both, e.g. `make measure QUICK=1`")
    facts = facts if facts is not None else [model_facts(r) for r in runs]
    m, r = record["machine"], record["runner"]
    memory = m.get("memory_bytes_total") or machines.total_memory_bytes()
    return {
        "schema": SCHEMA,
        "measured_at": record["timestamp"],
        "shared_on": shared_on or dt.date.today().isoformat(),
        "book": {"version": __version__, "commit": commit or book_commit()},
        "machine": {"cpu": m["cpu_model"], "gpu": ", ".join(r.get("devices") or []) or None,
                    "backend": r["backend"], "logical_cpus": m["logical_cpus"],
                    "threads": m["threads_used"], "memory_bytes": memory,
                    "os_family": os_family(m.get("os", platform.platform())),
                    "arch": m.get("machine") or platform.machine()},
        "llama_cpp": llama_cpp(r),
        "speculative": False,
        "runs": [{"model": {"name": f["name"], "synthetic": bool(run.get("synthetic")),
                            "quantisation": f["quantisation"], "file_bytes": run["file_bytes"],
                            "bytes_per_token": run["model_bytes"],
                            "params": run["model_params"],
                            "embedding_params": f["embedding_params"], "sha256": f["sha256"]},
                  "prefill": _rate(run["pp"]), "decode": _rate(run["tg"]),
                  "ceiling": _ceiling(run)} for run, f in zip(runs, facts)],
    }


def file_name(doc: dict) -> str:
    """``2026-12-01-cpu-intel-r-xeon-r-processor-3f2a9c1d.json``: date, backend, machine and
    a hash of the measurement, so the same measurement always gets the same name."""
    import re

    m = doc["machine"]
    who = re.sub(r"[^a-z0-9]+", "-", f"{m['backend']} {m['gpu'] or m['cpu']}".lower()).strip("-")
    key = hashlib.sha256(json.dumps([doc["measured_at"], doc["runs"]], sort_keys=True)
                         .encode()).hexdigest()[:8]
    return f"{doc['measured_at'][:10]}-{who[:48].strip('-')}-{key}.json"


def write(doc: dict, directory: Path | None = None) -> Path:
    """Write ``doc`` as a new file; an existing file is never overwritten (FileExistsError)."""
    directory = Path(directory or share_dir())
    directory.mkdir(parents=True, exist_ok=True)
    path = directory / file_name(doc)
    with open(path, "x") as f:  # "x": refuse to replace what is there
        f.write(json.dumps(doc, indent=2) + "\n")
    return path
