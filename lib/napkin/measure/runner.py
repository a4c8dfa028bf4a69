"""Prompt processing (pp) and token generation (tg), measured the way llama-bench does.

Two runners with one interface:

- :class:`LlamaBench` runs a ``llama-bench`` binary (found on ``PATH`` or given)
  and parses its JSON: this is how a reader's Metal, CUDA or ROCm build is used.
- :class:`InProcess` drives llama.cpp through ``llama-cpp-python``'s low-level
  API with llama-bench's method: a fresh context per test, one warm-up run,
  the KV cache cleared before every repetition, random token ids, and
  tokens/s as the mean of the per-repetition rates with their sample standard
  deviation. It offloads every layer to a GPU when the binding was built with one.
"""

from __future__ import annotations

import ctypes
import json
import shutil
import statistics
import subprocess
import time
from dataclasses import asdict, dataclass, field
from pathlib import Path

import numpy as np


class MeasurementUnavailable(RuntimeError):
    """This machine cannot run the measurement; the message says why and what to do."""


@dataclass(frozen=True)
class Rate:
    """One llama-bench style test result: mean and sample stddev of tokens/s."""

    test: str  # "pp512", "tg128", "tg64@d1024" ...
    n_tokens: int
    tokens_per_s: float
    stddev: float
    samples: list[float] = field(default_factory=list)

    def to_dict(self) -> dict:
        return asdict(self)


def summarise(test: str, n_tokens: int, seconds: list[float]) -> Rate:
    """Mean of per-repetition rates, as llama-bench reports them (not tokens / total time)."""
    if not seconds or any(s <= 0 for s in seconds):
        raise ValueError(f"{test}: need positive timings, got {seconds}")
    rates = [n_tokens / s for s in seconds]
    spread = statistics.stdev(rates) if len(rates) > 1 else 0.0
    return Rate(test=test, n_tokens=n_tokens, tokens_per_s=statistics.fmean(rates),
                stddev=spread, samples=rates)


def check_model(path: str | Path) -> Path:
    """A GGUF path that exists and starts with the GGUF magic, or a clear error."""
    path = Path(path)
    if not path.is_file():
        raise ValueError(f"model file not found: {path}")
    with path.open("rb") as f:
        magic = f.read(4)
    if magic != b"GGUF":
        raise ValueError(f"{path} is not a GGUF file (it starts with {magic!r}); "
                         "point --model at a .gguf file")
    return path


# -- in-process through llama-cpp-python ----------------------------------------------------

class _Logs:
    """llama.cpp's log lines, captured instead of printed (the KV size is read from them)."""

    def __init__(self):
        import llama_cpp

        self.lines: list[str] = []
        self._callback = llama_cpp.llama_log_callback(self._collect)  # keep a reference
        llama_cpp.llama_log_set(self._callback, ctypes.c_void_p(0))

    def _collect(self, level, text, user_data):
        self.lines.append(text.decode("utf-8", "replace"))

    def text(self) -> str:
        return "".join(self.lines)


class InProcess:
    """llama.cpp in this Python process, via llama-cpp-python."""

    name = "llama-cpp-python"

    def __init__(self, threads: int | None = None, n_batch: int = 2048, n_ubatch: int = 512,
                 seed: int = 0):
        try:
            import llama_cpp
        except ImportError as err:
            raise MeasurementUnavailable(
                "llama-cpp-python is not installed, so llama.cpp cannot run here; "
                "run `make book` (it installs it) or `pip install llama-cpp-python`") from err
        self.llama = llama_cpp
        self.logs = _Logs()
        llama_cpp.llama_backend_init()
        from .probe import default_threads

        self.threads = threads or default_threads()
        self.n_batch, self.n_ubatch = n_batch, n_ubatch
        self.rng = np.random.default_rng(seed)
        self.gpu = bool(llama_cpp.llama_supports_gpu_offload())

    # what the record says about this runner
    def info(self) -> dict:
        system = self.llama.llama_print_system_info().decode()
        return {"runner": self.name, "binding_version": self.llama.__version__,
                "llama_cpp_version": self.llama.llama_version().decode(),
                "backend": self.backend(), "threads": self.threads, "system_info": system}

    def backend(self) -> str:
        """CPU, or the GPU backend the binding was built with (as its system info names it)."""
        if not self.gpu:
            return "CPU"
        system = self.llama.llama_print_system_info().decode()
        for name in ("CUDA", "Metal", "ROCm", "HIP", "Vulkan", "SYCL"):
            if name in system:
                return name
        return "GPU"

    def load(self, path: str | Path):
        path = check_model(path)
        params = self.llama.llama_model_default_params()
        params.n_gpu_layers = 999 if self.gpu else 0
        model = self.llama.llama_model_load_from_file(str(path).encode(), params)
        if not model:
            raise ValueError(f"llama.cpp could not load {path} (a corrupt or unsupported GGUF?); "
                             f"its last log lines: {self.logs.text()[-400:]}")
        return model

    def model_info(self, model) -> dict:
        vocab = self.llama.llama_model_get_vocab(model)
        return {"model_bytes": int(self.llama.llama_model_size(model)),
                "model_params": int(self.llama.llama_model_n_params(model)),
                "n_vocab": int(self.llama.llama_vocab_n_tokens(vocab)),
                "n_layer": int(self.llama.llama_model_n_layer(model))}

    def context(self, model, n_ctx: int, n_seq: int = 1, type_kv: int | None = None,
                flash_attn: bool | None = None):
        """A new context. ``type_kv`` is a ggml type id for K and V (a quantized V cache
        needs flash attention); ``flash_attn`` None leaves llama.cpp's default (auto)."""
        params = self.llama.llama_context_default_params()
        params.n_ctx = n_ctx
        params.n_batch = min(self.n_batch, n_ctx)
        params.n_ubatch = min(self.n_ubatch, params.n_batch)
        params.n_seq_max = n_seq
        params.n_threads = params.n_threads_batch = self.threads
        params.no_perf = True
        if type_kv is not None:
            params.type_k = params.type_v = type_kv
        if flash_attn is not None:
            if hasattr(params, "flash_attn_type"):
                params.flash_attn_type = (self.llama.LLAMA_FLASH_ATTN_TYPE_ENABLED if flash_attn
                                          else self.llama.LLAMA_FLASH_ATTN_TYPE_DISABLED)
            else:  # bindings before llama.cpp's flash_attn_type (a plain bool)
                params.flash_attn = bool(flash_attn)
        ctx = self.llama.llama_init_from_model(model, params)
        if not ctx:
            raise MeasurementUnavailable(
                f"llama.cpp could not create a {n_ctx}-token context (out of memory, or a "
                f"setting it refuses): "
                f"{self.logs.text()[-300:]}")
        return ctx

    def _tokens(self, n: int, n_vocab: int):
        ids = self.rng.integers(0, n_vocab, size=n, dtype=np.int32)
        return (self.llama.llama_token * n)(*ids.tolist())

    def _decode(self, ctx, tokens, n: int) -> None:
        rc = self.llama.llama_decode(ctx, self.llama.llama_batch_get_one(tokens, n))
        if rc != 0:
            raise RuntimeError(f"llama_decode failed with code {rc}")

    def _prompt(self, ctx, n_prompt: int, n_vocab: int) -> None:
        done = 0
        while done < n_prompt:
            n = min(self.n_batch, n_prompt - done)
            self._decode(ctx, self._tokens(n, n_vocab), n)
            done += n
        self.llama.llama_synchronize(ctx)

    def _generate(self, ctx, n_gen: int, n_vocab: int) -> None:
        for _ in range(n_gen):
            self._decode(ctx, self._tokens(1, n_vocab), 1)
            self.llama.llama_synchronize(ctx)

    def run_test(self, model, test: str, n_prompt: int, n_gen: int, depth: int,
                 reps: int) -> Rate:
        """One llama-bench test (``n_prompt`` tokens of prefill, then ``n_gen`` generated)
        on a model already loaded: a fresh context, a warm-up, ``reps`` timed repetitions."""
        n_vocab = self.model_info(model)["n_vocab"]
        ctx = self.context(model, n_prompt + n_gen + depth)
        try:
            memory = self.llama.llama_get_memory(ctx)
            # warm-up, as llama-bench: a short prompt and one generated token
            if n_prompt:
                self._prompt(ctx, min(n_prompt, self.n_batch), n_vocab)
            if n_gen:
                self._generate(ctx, 1, n_vocab)
            seconds = []
            for _ in range(reps):
                self.llama.llama_memory_clear(memory, True)
                if depth:
                    self._prompt(ctx, depth, n_vocab)
                start = time.perf_counter_ns()
                if n_prompt:
                    self._prompt(ctx, n_prompt, n_vocab)
                if n_gen:
                    self._generate(ctx, n_gen, n_vocab)
                seconds.append((time.perf_counter_ns() - start) / 1e9)
        finally:
            self.llama.llama_free(ctx)
        return summarise(test, n_prompt + n_gen, seconds)

    def depth_sweep(self, paths, depths: list[int], n_gen: int, reps: int,
                    flash_attn: bool | None = None):
        """tg at several context depths, as ``llama-bench -n N -d d1,d2,...`` measures it,
        in one context per model: the cache is filled up to each depth in turn (never
        refilled from zero), and after every timed repetition the generated tokens are
        removed again, so each repetition starts from exactly ``depth`` cached tokens.

        Given several models (a list of paths), their repetitions alternate (A B A B ...)
        at every depth, so a machine that slows down part-way slows all of them alike.
        ``flash_attn`` as in :meth:`context`. Returns {"model": {...}, "tg": [Rate per
        depth]} for one path, a list of those for a list of paths."""
        single = isinstance(paths, (str, Path))
        paths = [paths] if single else list(paths)
        depths = sorted(set(int(d) for d in depths))
        if not depths or depths[0] < 0:
            raise ValueError(f"depths must be whole numbers of tokens >= 0, got {depths}")
        loaded, contexts = [], []
        try:
            for path in paths:
                loaded.append(self.load(path))
            infos = [self.model_info(model) for model in loaded]
            for model, info in zip(loaded, infos):
                ctx = self.context(model, depths[-1] + n_gen + 1, flash_attn=flash_attn)
                contexts.append(ctx)
                self._generate(ctx, 1, info["n_vocab"])  # warm-up, as llama-bench
                self.llama.llama_memory_clear(self.llama.llama_get_memory(ctx), True)
            seconds = {(i, d): [] for i in range(len(paths)) for d in depths}
            filled = [0] * len(paths)
            for depth in depths:
                for i, ctx in enumerate(contexts):
                    if depth > filled[i]:
                        self._prompt(ctx, depth - filled[i], infos[i]["n_vocab"])
                        filled[i] = depth
                    # an untimed repetition at this depth first (llama-bench warms up before
                    # each test; a whole repetition also touches every page the timed ones use)
                    self._generate(ctx, n_gen, infos[i]["n_vocab"])
                    self.llama.llama_memory_seq_rm(self.llama.llama_get_memory(ctx), 0, depth, -1)
                for _ in range(reps):
                    for i, ctx in enumerate(contexts):
                        start = time.perf_counter_ns()
                        self._generate(ctx, n_gen, infos[i]["n_vocab"])
                        seconds[(i, depth)].append((time.perf_counter_ns() - start) / 1e9)
                        self.llama.llama_memory_seq_rm(self.llama.llama_get_memory(ctx), 0,
                                                       depth, -1)
        finally:
            for ctx in contexts:
                self.llama.llama_free(ctx)
            for model in loaded:
                self.llama.llama_model_free(model)
        out = [{"model": infos[i],
                "tg": [summarise(f"tg{n_gen}" + (f"@d{d}" if d else ""), n_gen, seconds[(i, d)])
                       for d in depths]} for i in range(len(paths))]
        return out[0] if single else out

    def measure(self, path: str | Path, n_prompt: int, n_gen: int, reps: int,
                depth: int = 0) -> dict:
        """pp and tg for one model: {"pp": Rate, "tg": Rate, "model": {...}}."""
        model = self.load(path)
        try:
            suffix = f"@d{depth}" if depth else ""
            out = {"model": self.model_info(model)}
            if n_prompt:
                out["pp"] = self.run_test(model, f"pp{n_prompt}{suffix}", n_prompt, 0, depth, reps)
            if n_gen:
                out["tg"] = self.run_test(model, f"tg{n_gen}{suffix}", 0, n_gen, depth, reps)
            return out
        finally:
            self.llama.llama_model_free(model)


# -- an external llama-bench binary ----------------------------------------------------------

class LlamaBench:
    """A ``llama-bench`` binary; its JSON output is parsed, its failures explained."""

    name = "llama-bench"

    def __init__(self, binary: str | Path, threads: int | None = None, gpu_layers: int = 99):
        found = shutil.which(str(binary))
        if not found:
            raise MeasurementUnavailable(f"llama-bench not found at {binary!r}; pass the path to "
                                         "a built llama-bench with --llama-bench")
        self.binary = found
        from .probe import default_threads

        self.threads = threads or default_threads()
        self.gpu_layers = gpu_layers
        self.last: list[dict] = []

    def info(self) -> dict:
        first = self.last[0] if self.last else {}
        return {"runner": self.name, "binary": self.binary,
                "llama_cpp_version": f"{first.get('build_commit', '?')} "
                                     f"({first.get('build_number', '?')})",
                "backend": first.get("backends", "unknown"), "threads": self.threads,
                "system_info": f"{first.get('cpu_info', '')} {first.get('gpu_info', '')}".strip()}

    def backend(self) -> str:
        return self.info()["backend"]

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

    def measure(self, path: str | Path, n_prompt: int, n_gen: int, reps: int,
                depth: int = 0) -> dict:
        path = check_model(path)
        args = ["-m", str(path), "-p", str(n_prompt), "-n", str(n_gen), "-r", str(reps),
                "-t", str(self.threads), "-ngl", str(self.gpu_layers)]
        if depth:
            args += ["-d", str(depth)]
        rows = self.run_json(args)
        suffix = f"@d{depth}" if depth else ""
        out = {"model": {"model_bytes": int(rows[0]["model_size"]),
                         "model_params": int(rows[0]["model_n_params"])}}
        for row in rows:
            kind = "pp" if row["n_prompt"] and not row["n_gen"] else "tg"
            n = row["n_prompt"] if kind == "pp" else row["n_gen"]
            out[kind] = Rate(test=f"{kind}{n}{suffix}", n_tokens=n,
                             tokens_per_s=float(row["avg_ts"]), stddev=float(row["stddev_ts"]),
                             samples=[float(x) for x in row.get("samples_ts", [])])
        return out


def depth_sweep_by_runs(runner, path, depths, n_gen: int, reps: int) -> dict:
    """The same sweep for any runner with ``measure(..., depth=d)`` (llama-bench)."""
    runs = [runner.measure(path, 0, n_gen, reps, depth=d) for d in sorted(set(depths))]
    return {"model": runs[0]["model"], "tg": [run["tg"] for run in runs]}


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
