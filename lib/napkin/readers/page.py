"""The readers' page's data: every accepted submission as rows beside the published runs.

``data/readers/*.json`` are read and checked (:mod:`.check`); a file that fails stops the
page, as an unsourced row stops a table (:func:`napkin.tables.load`). Each run becomes one
row in the columns of :mod:`napkin.published` (so it sits on the napkin chart beside the
scoreboards) plus its provenance: backend, llama.cpp runner and commit, the date, and the
file it came from; and one row against the device's prefill peak (:mod:`.bounds`).
"""

from __future__ import annotations

from pathlib import Path

import pandas as pd

from .. import published
from . import bounds, check

__all__ = ["accepted", "counts", "FAMILY", "machine_label", "napkin_rows", "prefill_rows",
           "PUBLISHED_BACKENDS", "published_rows", "RUN_COLUMNS", "runs"]

FAMILY = "Readers"
#: The columns of :func:`runs`: published.COLUMNS, then provenance and prefill.
RUN_COLUMNS = published.COLUMNS + [
    "backend", "model", "llama_cpp", "date", "file", "bandwidth_origin", "probe_spread",
    "decode_stddev", "prefill_tokens_per_s", "prefill_flops_per_s", "peak_flops_per_s",
    "peak_what", "book_commit"]
#: The backend of each published family (the scoreboards say which ran).
PUBLISHED_BACKENDS = {"Apple Silicon": "Metal", "GPU (CUDA)": "CUDA", "GPU (Vulkan)": "Vulkan",
                      "GPU (ROCm)": "ROCm", "CPU": "CPU"}


def accepted(directory: Path | None = None) -> list[tuple[str, dict]]:
    """(file name, submission) of every file in ``data/readers/``, in name order; a ValueError
    listing the problems when any file fails the check."""
    directory = Path(directory or check.accepted_dir())
    files = sorted(directory.glob("*.json"))
    problems = check.check_files(files, directory)
    if problems:
        raise ValueError("data/readers/ holds files the check refuses:\n"
                         + "\n".join(map(str, problems)))
    return [(p.name, check.load(p)[0]) for p in files]


def machine_label(doc: dict) -> str:
    """``Intel(R) Xeon(R) Processor, 2 threads (CPU)`` or ``NVIDIA GeForce RTX 4090 (CUDA)``."""
    m = doc["machine"]
    who = m["gpu"] or f"{m['cpu']}, {m['threads']} thread{'s' if m['threads'] != 1 else ''}"
    return f"{who} ({m['backend']})"


def runs(entries: list[tuple[str, dict]] | None = None) -> pd.DataFrame:
    """One row per accepted run: published columns, provenance and prefill against peak."""
    entries = accepted() if entries is None else entries
    rows = []
    for name, doc in entries:
        for run in doc["runs"]:
            ceiling = bounds.ceiling_tokens_per_s(run)
            # A CPU's bound (bounds.prefill_peak) refuses the impossible but is no peak to
            # measure against: only a chip of the book's data gets a share of its peak.
            peak = bounds.prefill_peak(doc, run) if bounds.chip_of(doc) else None
            flops = bounds.prefill_flops(run)
            c, llama = run["ceiling"], doc["llama_cpp"]
            rows.append({
                "machine": machine_label(doc), "family": FAMILY,
                "quant": run["model"]["quantisation"],
                "bandwidth_bytes_per_s": c["bandwidth_bytes_per_s"],
                "bytes_per_token": run["model"]["bytes_per_token"],
                "tokens_per_s": run["decode"]["tokens_per_s"],
                "ceiling_tokens_per_s": ceiling,
                "fraction_of_ceiling": run["decode"]["tokens_per_s"] / ceiling,
                "confidence": "measured by a reader", "source_url": f"data/readers/{name}",
                "backend": doc["machine"]["backend"], "model": run["model"]["name"],
                "llama_cpp": f"{llama['commit']} ({llama['runner']})",
                "date": doc["measured_at"][:10], "file": name,
                "bandwidth_origin": c["origin"], "probe_spread": c.get("probe_spread"),
                "decode_stddev": run["decode"]["stddev"],
                "prefill_tokens_per_s": run["prefill"]["tokens_per_s"],
                "prefill_flops_per_s": flops,
                "peak_flops_per_s": peak.value if peak else float("nan"),
                "peak_what": peak.what if peak else (
                    "a CPU: no peak in data/hardware_specs.csv" if doc["machine"]["backend"]
                    == "CPU" else "a GPU data/hardware_specs.csv does not list"),
                "book_commit": doc["book"]["commit"][:7],
            })
    return pd.DataFrame(rows, columns=RUN_COLUMNS)


def published_rows() -> pd.DataFrame:
    """The scoreboards' runs the book already holds, with the same provenance columns
    (commit and date where the source records them)."""
    df = published.all_machines()
    df["backend"] = df["family"].map(PUBLISHED_BACKENDS)
    df["llama_cpp"] = df.get("llama_cpp_commit", pd.Series(index=df.index, dtype=object)) \
        .fillna("not recorded").astype(str)
    df["date"] = df.get("date", pd.Series(index=df.index, dtype=object)) \
        .fillna("not recorded").astype(str)
    return df


def napkin_rows(entries: list[tuple[str, dict]] | None = None) -> pd.DataFrame:
    """Published runs and readers' runs, stacked for the napkin chart."""
    cols = published.COLUMNS + ["backend", "llama_cpp", "date"]
    return pd.concat([published_rows()[cols], runs(entries)[cols]], ignore_index=True)


def counts(entries: list[tuple[str, dict]] | None = None) -> pd.DataFrame:
    """Submissions and runs per backend."""
    entries = accepted() if entries is None else entries
    rows = [{"backend": doc["machine"]["backend"], "runs": len(doc["runs"])}
            for _, doc in entries]
    df = pd.DataFrame(rows, columns=["backend", "runs"])
    return (df.groupby("backend").agg(submissions=("runs", "size"), runs=("runs", "sum"))
            .reset_index())


def prefill_rows(entries: list[tuple[str, dict]] | None = None) -> pd.DataFrame:
    """Readers' runs on a chip with a sourced peak, beside the published prefill runs
    (:func:`napkin.phases.compute.prefill_compute`), for the prefill chart."""
    from ..phases.compute import prefill_compute

    pub = prefill_compute().rename(columns={"achieved_flops_per_s": "prefill_flops_per_s",
                                            "roof_flops_per_s": "peak_flops_per_s",
                                            "detail": "llama_cpp"})
    pub = pub.assign(family="Published", backend="CUDA", date="not recorded",
                     peak_what=pub["chip"] + ", " + pub["roof_kind"] + " peak",
                     machine=pub["machine"] + ", " + pub["model"] + " " + pub["test"])
    mine = runs(entries)
    mine = mine[mine["peak_flops_per_s"].notna()]
    cols = ["machine", "family", "backend", "llama_cpp", "date", "prefill_flops_per_s",
            "peak_flops_per_s", "peak_what", "source_url"]
    return pd.concat([pub[cols], mine.reindex(columns=cols)], ignore_index=True)
