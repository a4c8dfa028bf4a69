"""A ``llama-bench`` binary as a runner: how a reader's Metal, CUDA or ROCm build is used.

Its ``-o json`` output is parsed field by field, its failures explained, and its
backend read from the same JSON (``backends``, ``gpu_info``) or, before the first
run, from ``--list-devices``.
"""

from __future__ import annotations

import json
import shutil
import subprocess
from collections.abc import Sequence
from pathlib import Path

from . import backend as backends
from .results import (DepthSweep, Measurement, MeasurementUnavailable, ModelInfo, Rate,
                      RunnerInfo, rate_name, summarise)
from .inputs import check_depths, check_model

REQUIRED_FIELDS = ("n_prompt", "n_gen", "avg_ts", "stddev_ts", "model_size", "model_n_params")


def parse_llama_bench_json(text: str) -> list[dict]:
    """llama-bench's ``-o json`` output as a list of test records, checked field by field."""
    try:
        rows = json.loads(text)
    except json.JSONDecodeError as err:
        head = text.strip()[:120] or "nothing"
        raise RuntimeError(f"llama-bench printed something that is not JSON ({err.msg}); "
                           f"it began: {head!r}") from None
    if not isinstance(rows, list) or not rows or not all(isinstance(r, dict) for r in rows):
        raise RuntimeError("llama-bench JSON is not a non-empty list of test records")
    for i, row in enumerate(rows):
        missing = [k for k in REQUIRED_FIELDS if k not in row]
        if missing:
            raise RuntimeError(f"llama-bench record {i} lacks {', '.join(missing)}")
    return rows


def rate_of(row: dict) -> Rate:
    """One llama-bench record as a Rate, named as the in-process runner names it."""
    kind = "pp" if row["n_prompt"] and not row["n_gen"] else "tg"
    n = int(row["n_prompt"] if kind == "pp" else row["n_gen"])
    samples_ns = row.get("samples_ns")
    name = rate_name(kind, n, int(row.get("n_depth", 0) or 0))
    if samples_ns:  # the same arithmetic as in-process: mean of per-repetition rates
        return summarise(name, n, [float(t) / 1e9 for t in samples_ns])
    return Rate(test=name, n_tokens=n, tokens_per_s=float(row["avg_ts"]),
                stddev=float(row["stddev_ts"]),
                samples=[float(x) for x in row.get("samples_ts", [])])


def model_of(row: dict) -> ModelInfo:
    return ModelInfo(model_bytes=int(row["model_size"]), model_params=int(row["model_n_params"]))


class LlamaBench:
    """A ``llama-bench`` binary (implements :class:`napkin.measure.runner.Runner`)."""

    name = "llama-bench"

    def __init__(self, binary: str | Path, threads: int | None = None, gpu_layers: int = 99,
                 why: str = "llama-bench given"):
        found = shutil.which(str(binary))
        if not found:
            raise MeasurementUnavailable(f"llama-bench not found at {binary!r}; pass the path to "
                                         "a built llama-bench with --llama-bench (or set "
                                         "LLAMA_BENCH)")
        self.binary = found
        from .probe import default_threads

        self.threads = threads or default_threads()
        self.gpu_layers = gpu_layers
        self.why = why
        self.last: list[dict] = []
        self._listed: backends.Backend | None = None

    def backend(self) -> backends.Backend | None:
        """From the last run's JSON; before any run, from ``--list-devices`` (None when this
        llama-bench is too old to have it)."""
        if self.last:
            return backends.from_llama_bench_row(self.last[0])
        if self._listed is None:
            proc = subprocess.run([self.binary, "--list-devices"], capture_output=True,
                                  text=True, timeout=120)
            if proc.returncode != 0 or "Available devices" not in proc.stdout:
                return None
            self._listed = backends.from_list_devices(proc.stdout)
        if self.gpu_layers == 0:
            return backends.Backend("CPU", (), f"-ngl 0 ({self._listed.evidence})")
        return self._listed

    def info(self) -> RunnerInfo:
        first = self.last[0] if self.last else {}
        b = self.backend() or backends.Backend("CPU", (), "not run yet")
        return RunnerInfo(runner=self.name, binary=self.binary,
                          llama_cpp_version=f"{first.get('build_commit', '?')} "
                                            f"({first.get('build_number', '?')})",
                          backend=b.name, devices=b.devices, threads=self.threads,
                          system_info=f"{first.get('cpu_info', '')} "
                                      f"{first.get('gpu_info', '')}".strip(),
                          why=f"{self.why}; backend {b.describe()}, read from {b.evidence}")

    def run_json(self, args: list[str], timeout: float = 3600) -> list[dict]:
        cmd = [self.binary, *args, "-o", "json"]
        try:
            proc = subprocess.run(cmd, capture_output=True, text=True, timeout=timeout)
        except subprocess.TimeoutExpired as err:
            raise RuntimeError(f"llama-bench did not finish in {timeout:.0f} s: "
                               f"{' '.join(cmd)}") from err
        if proc.returncode != 0:
            tail = (proc.stderr or proc.stdout).strip().splitlines()[-3:]
            raise RuntimeError(f"llama-bench exited with status {proc.returncode}: "
                               f"{' / '.join(tail) or 'no output'}")
        self.last = parse_llama_bench_json(proc.stdout)
        return self.last

    def _args(self, path: Path, n_prompt: int, n_gen: int, reps: int) -> list[str]:
        return ["-m", str(path), "-p", str(n_prompt), "-n", str(n_gen), "-r", str(reps),
                "-t", str(self.threads), "-ngl", str(self.gpu_layers)]

    def measure(self, path: str | Path, n_prompt: int, n_gen: int, reps: int,
                depth: int = 0) -> Measurement:
        path = check_model(path)
        args = self._args(path, n_prompt, n_gen, reps)
        if depth:
            args += ["-d", str(depth)]
        rows = self.run_json(args)
        rates = {("pp" if r["n_prompt"] and not r["n_gen"] else "tg"): rate_of(r) for r in rows}
        return Measurement(model=model_of(rows[0]), pp=rates.get("pp"), tg=rates.get("tg"))

    def depth_sweep(self, paths: Sequence[str | Path], depths: Sequence[int], n_gen: int,
                    reps: int, flash_attn: bool | None = None) -> list[DepthSweep]:
        """tg at every depth with ``llama-bench -d d1,d2,...``, one repetition per call, the
        models taking turns (A B A B) so that drift hits both alike. llama-bench refills the
        cache to each depth itself and warms up before every test."""
        if isinstance(paths, (str, Path)):
            raise ValueError("paths must be a list of GGUF paths (one model: [path])")
        paths = [check_model(p) for p in paths]
        depths = check_depths(depths)
        seconds = {(i, d): [] for i in range(len(paths)) for d in depths}
        models: dict[int, ModelInfo] = {}
        for _ in range(reps):
            for i, path in enumerate(paths):
                args = self._args(path, 0, n_gen, 1) + ["-d", ",".join(map(str, depths))]
                if flash_attn is not None:
                    args += ["-fa", "on" if flash_attn else "off"]
                for row in self.run_json(args):
                    models[i] = model_of(row)
                    ns = row.get("samples_ns") or [1e9 * n_gen / float(row["avg_ts"])]
                    seconds[(i, int(row.get("n_depth", 0) or 0))] += [t / 1e9 for t in ns]
        return [DepthSweep(model=models[i], depths=tuple(depths),
                           tg=tuple(summarise(rate_name("tg", n_gen, d), n_gen, seconds[(i, d)])
                                    for d in depths))
                for i in range(len(paths))]
