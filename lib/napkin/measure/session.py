"""One measurement session: for each model, pp and tg, and the ceiling they are held against.

A :class:`Plan` says what to run; :func:`run` runs it and returns a result
record (a plain dict, the JSON that :mod:`napkin.measure.record` saves). The
ceiling's bandwidth follows the backend that ran (:mod:`.bandwidth`): a GPU's
vendor figure, or on the CPU the memory probe taken right before and after each
model.
"""

from __future__ import annotations

import datetime as dt
import math
import os
import shutil
import sys
from dataclasses import asdict, dataclass, replace
from pathlib import Path
from typing import Callable

from . import bandwidth as bandwidths
from . import machine, mode, synthetic
from .probe import ProbeResult, read_bandwidth
from .results import Measurement, MeasurementUnavailable
from .inputs import check_model
from .runner import make_runner

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
    max_model_bytes: float = math.inf

    def model_bytes(self) -> float:
        """``cache_multiple`` times the last-level cache, within the plan's bounds. A virtual
        machine may report its host's whole cache (480 MiB here), of which it holds a share:
        the quick plan stops at ``max_model_bytes`` so that it stays seconds long, and its
        sentence says how the model compares with the cache (:func:`.record.cache_note`)."""
        wanted = self.cache_multiple * machine.last_level_cache_bytes()
        return min(max(self.min_model_bytes, wanted), max(self.max_model_bytes,
                                                          self.min_model_bytes))


QUICK = Plan("quick", ("Q8_0",), n_prompt=128, n_gen=64, reps=3,
             min_model_bytes=100e6, cache_multiple=4, max_model_bytes=512e6)
FULL = Plan("full", ("F16", "Q8_0", "Q4_0"), n_prompt=512, n_gen=128, reps=5,
            min_model_bytes=400e6, cache_multiple=8)


def plan_from_env() -> Plan:
    """QUICK, or FULL when ``NAPKIN_MEASURE`` (or ``NAPKIN_LIVE``) is ``full``."""
    return mode.choose("NAPKIN_MEASURE", QUICK, FULL)


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


def _targets(plan: Plan, model, progress: Progress) -> tuple[Plan, list[tuple[Path, dict | None]]]:
    """The models to measure: one real GGUF (checked against free memory) or the plan's
    synthetic ones, written if missing."""
    if model is None:
        return plan, [synthetic_model(fmt, plan.model_bytes(), progress=progress)
                      for fmt in plan.formats]
    path = check_model(model)
    memory = machine.available_memory_bytes()
    if memory is not None and memory < path.stat().st_size * 1.2:
        raise MeasurementUnavailable(
            f"{path.name} is {path.stat().st_size / 1e9:.2f} GB but only "
            f"{memory / 1e9:.2f} GB of memory is available")
    return replace(plan, mode=f"{plan.mode}, real model"), [(path, None)]


def run(plan: Plan = QUICK, *, model: str | Path | None = None, llama_bench: str | None = None,
        threads: int | None = None, bandwidth_gb_per_s: float | None = None,
        progress: Progress = stderr_progress) -> dict:
    """Run ``plan`` (or one real GGUF given as ``model``) and return the result record.

    ``bandwidth_gb_per_s`` replaces the ceiling's bandwidth (else ``$NAPKIN_BANDWIDTH_GB_PER_S``,
    else the GPU's spec or the CPU probe). An unknown GPU fails here, before any run, with
    the fix in the message (:class:`napkin.measure.bandwidth.UnknownDevice`)."""
    runner = make_runner(llama_bench, threads)
    backend = runner.backend()
    fixed = None if backend is None else bandwidths.for_run(backend, bandwidth_gb_per_s)
    plan, targets = _targets(plan, model, progress)
    progress(f"runner: {runner.info().why}")
    runs = []
    for i, (path, synthetic_info) in enumerate(targets, 1):
        label = f"[{i}/{len(targets)}] {synthetic_info['format'] if synthetic_info else path.name}"
        probing = backend is None or not backend.gpu
        if probing:
            progress(f"{label}: probing memory bandwidth")
        before = read_bandwidth(threads=runner.threads) if probing else None
        progress(f"{label}: pp{plan.n_prompt} and tg{plan.n_gen}, {plan.reps} repetitions "
                 f"each, {runner.threads} threads ({runner.name})")
        measured = runner.measure(path, plan.n_prompt, plan.n_gen, plan.reps)
        after = read_bandwidth(threads=runner.threads) if probing else None
        if backend is None:  # a llama-bench without --list-devices: its JSON says now
            backend = runner.backend()
            fixed = bandwidths.for_run(backend, bandwidth_gb_per_s)
        used = fixed or bandwidths.of_probe(before, after, machine.cpu_model())
        runs.append(run_record(path, synthetic_info, measured, used, before, after))
    progress("done")
    return {
        "schema": SCHEMA,
        "timestamp": dt.datetime.now(dt.timezone.utc).isoformat(timespec="seconds"),
        "mode": plan.mode,
        "plan": asdict(plan),
        "machine": machine.describe(runner.threads),
        "runner": runner.info().to_dict(),
        "runs": runs,
    }


def run_record(path: Path, synthetic_info: dict | None, measured: Measurement,
               used: bandwidths.Bandwidth, before: ProbeResult | None,
               after: ProbeResult | None) -> dict:
    """One model's entry in the record: its bytes, the bandwidth used and where it came from,
    the probes (on the CPU), pp and tg, the ceiling, and the bandwidth decode achieved."""
    model_bytes = measured.model.model_bytes
    ceiling = used.bytes_per_s / model_bytes
    record = {
        "model_path": str(path),
        "format": synthetic_info["format"] if synthetic_info else "as in file",
        "synthetic": synthetic_info,
        "model_bytes": model_bytes,
        "model_params": measured.model.model_params,
        "file_bytes": path.stat().st_size,
        "bandwidth_bytes_per_s": used.bytes_per_s,
        "bandwidth_source": used.source,
        "bandwidth": used.to_dict(),
        "ceiling_tokens_per_s": ceiling,
    }
    if before is not None and after is not None:
        best = max(before.best_bytes_per_s, after.best_bytes_per_s)
        record |= {"probe_before": before.to_dict(), "probe_after": after.to_dict(),
                   "probe_best_bytes_per_s": best,
                   "probe_spread": 1 - min(before.worst_bytes_per_s,
                                           after.worst_bytes_per_s) / best}
    record |= {k: v for k, v in measured.to_dict().items() if k in ("pp", "tg")}
    if measured.tg is not None:
        record["fraction_of_ceiling"] = measured.tg.tokens_per_s / ceiling
        record["decode_bytes_per_s"] = measured.tg.tokens_per_s * model_bytes
    return record


def live(plan: Plan = QUICK, **kwargs) -> dict | None:
    """For a notebook cell: run and save ``plan``, or say in one sentence why not (None)."""
    from .record import live as run_live

    return run_live(lambda: run(plan, progress=quiet, **kwargs))

