"""One measurement session: probe, model, pp and tg, probe again, for each model.

A :class:`Plan` says what to run; :func:`run` runs it and returns a result
record (a plain dict, the JSON that :mod:`napkin.measure.record` saves).
"""

from __future__ import annotations

import datetime as dt
import os
import shutil
import sys
from dataclasses import asdict, dataclass, replace
from pathlib import Path
from typing import Callable

from . import machine, synthetic
from .probe import read_bandwidth
from .runner import InProcess, LlamaBench, MeasurementUnavailable

SCHEMA = "napkin.measure/1"
Progress = Callable[[str], None]


def stderr_progress(message: str) -> None:
    print(f"[measure] {message}", file=sys.stderr, flush=True)


def quiet(message: str) -> None:
    pass


@dataclass(frozen=True)
class Plan:
    """What a session measures. Sizes are bytes of tensor data per synthetic model."""

    mode: str
    formats: tuple[str, ...]
    n_prompt: int
    n_gen: int
    reps: int
    min_model_bytes: float
    cache_multiple: float  # models are at least this many times the last-level cache

    def model_bytes(self) -> float:
        return max(self.min_model_bytes, self.cache_multiple * machine.last_level_cache_bytes())


QUICK = Plan("quick", ("Q8_0",), n_prompt=128, n_gen=64, reps=3,
             min_model_bytes=100e6, cache_multiple=4)
FULL = Plan("full", ("F16", "Q8_0", "Q4_0"), n_prompt=512, n_gen=128, reps=5,
            min_model_bytes=400e6, cache_multiple=8)


def cache_dir() -> Path:
    """Where synthetic models are kept: ``$NAPKIN_CACHE``, else ``.cache/models`` here."""
    override = os.environ.get("NAPKIN_CACHE")
    if override:
        return Path(override)
    root = Path(__file__).resolve().parents[3]
    if (root / "pyproject.toml").is_file():
        return root / ".cache" / "models"
    return Path.home() / ".cache" / "napkin" / "models"


def ensure_room(path: Path, need_bytes: float, what: str) -> None:
    """Refuse early, with the fix, when disk or memory is short for ``need_bytes``."""
    path.mkdir(parents=True, exist_ok=True)
    free = shutil.disk_usage(path).free
    if free < need_bytes * 1.1:
        raise MeasurementUnavailable(
            f"{what} needs {need_bytes / 1e9:.2f} GB of disk in {path}, but only "
            f"{free / 1e9:.2f} GB is free; free some space or set NAPKIN_CACHE to another disk")
    memory = machine.available_memory_bytes()
    if memory is not None and memory < need_bytes * 1.5:
        raise MeasurementUnavailable(
            f"{what} needs about {need_bytes * 1.5 / 1e9:.2f} GB of free memory, but only "
            f"{memory / 1e9:.2f} GB is available; try --quick or close other programs")


def synthetic_model(fmt: str, target_bytes: float, seed: int = 0,
                    progress: Progress = quiet) -> tuple[Path, dict]:
    """The cached synthetic model for ``fmt`` near ``target_bytes``, written if missing."""
    shape = synthetic.shape_for_size(target_bytes, fmt)
    size = synthetic.tensor_bytes(shape, fmt)
    path = cache_dir() / (f"synthetic-{fmt}-h{shape.hidden_size}-l{shape.num_hidden_layers}"
                          f"-kv{shape.num_key_value_heads}-seed{seed}.gguf")
    if not path.is_file():
        ensure_room(path.parent, size, f"a {fmt} synthetic model")
        progress(f"writing synthetic {fmt} model ({size / 1e6:,.0f} MB) to {path}")
        synthetic.write(path, shape, fmt, seed)
    return path, {"format": fmt, "seed": seed, "shape": asdict(shape), "tensor_bytes": size}


def make_runner(llama_bench: str | None, threads: int | None):
    """A llama-bench given or on PATH (a reader's GPU build); else llama.cpp in-process."""
    binary = llama_bench or shutil.which("llama-bench")
    if binary:
        return LlamaBench(binary, threads=threads)
    return InProcess(threads=threads)


def run(plan: Plan = QUICK, *, model: str | Path | None = None, llama_bench: str | None = None,
        threads: int | None = None, bandwidth_bytes_per_s: float | None = None,
        progress: Progress = stderr_progress) -> dict:
    """Run ``plan`` (or one real GGUF given as ``model``) and return the result record."""
    runner = make_runner(llama_bench, threads)
    targets: list[tuple[Path, dict | None]] = []
    if model is not None:
        from .runner import check_model

        path = check_model(model)
        memory = machine.available_memory_bytes()
        if memory is not None and memory < path.stat().st_size * 1.2:
            raise MeasurementUnavailable(
                f"{path.name} is {path.stat().st_size / 1e9:.2f} GB but only "
                f"{memory / 1e9:.2f} GB of memory is available")
        targets.append((path, None))
        plan = replace(plan, mode=f"{plan.mode}, real model")
    else:
        for fmt in plan.formats:
            targets.append(synthetic_model(fmt, plan.model_bytes(), progress=progress))

    runs = []
    for i, (path, synthetic_info) in enumerate(targets, 1):
        label = synthetic_info["format"] if synthetic_info else path.name
        progress(f"[{i}/{len(targets)}] {label}: probing memory bandwidth")
        before = read_bandwidth(threads=runner.threads)
        progress(f"[{i}/{len(targets)}] {label}: pp{plan.n_prompt} and tg{plan.n_gen}, "
                 f"{plan.reps} repetitions each, {runner.threads} threads ({runner.name})")
        measured = runner.measure(path, plan.n_prompt, plan.n_gen, plan.reps)
        after = read_bandwidth(threads=runner.threads)
        runs.append(_run_record(path, synthetic_info, measured, before, after,
                                bandwidth_bytes_per_s))
    progress("done")
    return {
        "schema": SCHEMA,
        "timestamp": dt.datetime.now(dt.timezone.utc).isoformat(timespec="seconds"),
        "mode": plan.mode,
        "plan": asdict(plan),
        "machine": machine.describe(runner.threads),
        "runner": runner.info(),
        "runs": runs,
    }


def _run_record(path, synthetic_info, measured, before, after, bandwidth_override) -> dict:
    probe_best = max(before.best_bytes_per_s, after.best_bytes_per_s)
    probe_worst = min(before.worst_bytes_per_s, after.worst_bytes_per_s)
    bandwidth = bandwidth_override or probe_best
    model_bytes = measured["model"]["model_bytes"]
    ceiling = bandwidth / model_bytes
    record = {
        "model_path": str(path),
        "format": synthetic_info["format"] if synthetic_info else "as in file",
        "synthetic": synthetic_info,
        "model_bytes": model_bytes,
        "model_params": measured["model"]["model_params"],
        "file_bytes": path.stat().st_size,
        "probe_before": before.to_dict(),
        "probe_after": after.to_dict(),
        "probe_best_bytes_per_s": probe_best,
        "probe_spread": 1 - probe_worst / probe_best,
        "bandwidth_bytes_per_s": bandwidth,
        "bandwidth_source": "given on the command line" if bandwidth_override else
                            "memory probe (best pass, before and after)",
        "ceiling_tokens_per_s": ceiling,
    }
    for kind in ("pp", "tg"):
        if kind in measured:
            record[kind] = measured[kind].to_dict()
    if "tg" in measured:
        record["fraction_of_ceiling"] = measured["tg"].tokens_per_s / ceiling
    return record


def live(plan: Plan = QUICK, **kwargs) -> dict | None:
    """For a notebook cell: run and save ``plan``, or say in one sentence why not (None)."""
    from .record import save

    try:
        record = run(plan, progress=quiet, **kwargs)
    except MeasurementUnavailable as err:
        print(f"No live measurement on this machine: {err}.")
        return None
    record["saved_to"] = str(save(record))
    return record
