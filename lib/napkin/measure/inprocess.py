"""llama.cpp in this Python process, through ``llama-cpp-python``'s low-level API.

llama-bench's method: a fresh context per test, one warm-up run, the KV cache
cleared before every repetition, random token ids, and tokens/s as the mean of
the per-repetition rates with their sample standard deviation. Every layer is
offloaded when the binding was built with a GPU backend (:mod:`.backend` reads
which one from the binding's own device list).
"""

from __future__ import annotations

import ctypes
import time
from collections.abc import Sequence
from pathlib import Path

import numpy as np

from . import backend as backends
from .results import (DepthSweep, Measurement, MeasurementUnavailable, ModelInfo, Rate,
                      RunnerInfo, rate_name, summarise)
from .inputs import check_depths, check_model


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


def _binding():
    try:
        import llama_cpp
    except ImportError as err:
        raise MeasurementUnavailable(
            "llama-cpp-python is not installed, so llama.cpp cannot run here; "
            "run `make book` (it installs it) or `pip install -e '.[measure]'`") from err
    return llama_cpp


class InProcess:
    """llama.cpp in this Python process, via llama-cpp-python (implements :class:`Runner`)."""

    name = "llama-cpp-python"

    def __init__(self, threads: int | None = None, n_batch: int = 2048, n_ubatch: int = 512,
                 seed: int = 0, why: str = "llama.cpp in-process through llama-cpp-python"):
        llama_cpp = _binding()
        self.llama = llama_cpp
        self.logs = _Logs()
        llama_cpp.llama_backend_init()
        from .probe import default_threads

        self.threads = threads or default_threads()
        self.n_batch, self.n_ubatch = n_batch, n_ubatch
        self.rng = np.random.default_rng(seed)
        self._backend = backends.from_binding(llama_cpp)
        self.gpu = self._backend.gpu
        self.why = why
        # llama.cpp's AMX matmul crashes the process on some Xeons (llama.cpp issue #20824,
        # open); a binding built with it runs without its extra weight buffers (AMX and the
        # repacked layouts), and says so. `make env` builds the binding without AMX.
        self.amx = "AMX_INT8 = 1" in llama_cpp.llama_print_system_info().decode()
        if self.amx:
            self.why = (f"{why}; this binding was built with llama.cpp's AMX kernels, which "
                        "crash on some Xeons (llama.cpp #20824), so its extra weight buffers "
                        "(AMX, repacking) are off")

    def backend(self) -> backends.Backend:
        return self._backend

    def info(self) -> RunnerInfo:
        b = self._backend
        why = f"{self.why}; backend {b.describe()}, read from {b.evidence}"
        hint = backends.unused_gpu()
        if not b.gpu and hint and hint in backends.GPU_BUILDS:
            why += (f". This binding was built for the CPU only, but the machine seems to have "
                    f"a {hint} GPU: rebuild it with "
                    f"{backends.gpu_build_hint(hint, self.llama.__version__)} "
                    f"or set LLAMA_BENCH to a {hint} build of llama-bench")
        return RunnerInfo(runner=self.name, llama_cpp_version=self.llama.llama_version().decode()
                          if hasattr(self.llama, "llama_version") else "?",
                          backend=b.name, devices=b.devices, threads=self.threads,
                          system_info=self.llama.llama_print_system_info().decode(),
                          binding_version=self.llama.__version__, why=why)

    def load(self, path: str | Path, gpu: bool | None = None):
        """A loaded model: every layer on the GPU when there is one (``gpu=False``: none)."""
        path = check_model(path)
        params = self.llama.llama_model_default_params()
        params.n_gpu_layers = 999 if (self.gpu if gpu is None else gpu) else 0
        if self.amx:
            params.use_extra_bufts = False
        model = self.llama.llama_model_load_from_file(str(path).encode(), params)
        if not model:
            raise ValueError(f"llama.cpp could not load {path} (a corrupt or unsupported GGUF?); "
                             f"its last log lines: {self.logs.text()[-400:]}")
        return model

    def model_info(self, model) -> ModelInfo:
        vocab = self.llama.llama_model_get_vocab(model)
        return ModelInfo(model_bytes=int(self.llama.llama_model_size(model)),
                         model_params=int(self.llama.llama_model_n_params(model)),
                         n_vocab=int(self.llama.llama_vocab_n_tokens(vocab)),
                         n_layer=int(self.llama.llama_model_n_layer(model)))

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
                f"setting it refuses): {self.logs.text()[-300:]}")
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

    def _timed(self, fn, *args) -> float:
        start = time.perf_counter_ns()
        fn(*args)
        return (time.perf_counter_ns() - start) / 1e9

    def run_test(self, model, test: str, n_prompt: int, n_gen: int, depth: int,
                 reps: int) -> Rate:
        """One llama-bench test (``n_prompt`` tokens of prefill, then ``n_gen`` generated)
        on a model already loaded: a fresh context, a warm-up, ``reps`` timed repetitions."""
        n_vocab = self.model_info(model).n_vocab
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

    def measure(self, path: str | Path, n_prompt: int, n_gen: int, reps: int,
                depth: int = 0) -> Measurement:
        """pp and tg for one model (either skipped when its token count is 0)."""
        model = self.load(path)
        try:
            info = self.model_info(model)
            pp = (self.run_test(model, rate_name("pp", n_prompt, depth), n_prompt, 0, depth, reps)
                  if n_prompt else None)
            tg = (self.run_test(model, rate_name("tg", n_gen, depth), 0, n_gen, depth, reps)
                  if n_gen else None)
            return Measurement(model=info, pp=pp, tg=tg)
        finally:
            self.llama.llama_model_free(model)

    def depth_sweep(self, paths: Sequence[str | Path], depths: Sequence[int], n_gen: int,
                    reps: int, flash_attn: bool | None = None) -> list[DepthSweep]:
        """tg at several context depths, as ``llama-bench -n N -d d1,d2,...`` measures it, in
        one context per model: the cache is filled up to each depth in turn (never refilled
        from zero), and after every timed repetition the generated tokens are removed again,
        so each repetition starts from exactly ``depth`` cached tokens.

        The models' repetitions alternate (A B A B ...) at every depth, so a machine that
        slows down part-way slows all of them alike. ``flash_attn`` as in :meth:`context`."""
        if isinstance(paths, (str, Path)):
            raise ValueError("paths must be a list of GGUF paths (one model: [path])")
        depths = check_depths(depths)
        loaded, contexts = [], []
        try:
            for path in paths:
                loaded.append(self.load(path))
            infos = [self.model_info(model) for model in loaded]
            for model, info in zip(loaded, infos):
                ctx = self.context(model, depths[-1] + n_gen + 1, flash_attn=flash_attn)
                contexts.append(ctx)
                self._generate(ctx, 1, info.n_vocab)  # warm-up, as llama-bench
                self.llama.llama_memory_clear(self.llama.llama_get_memory(ctx), True)
            seconds = self._sweep(contexts, [i.n_vocab for i in infos], depths, n_gen, reps)
        finally:
            for ctx in contexts:
                self.llama.llama_free(ctx)
            for model in loaded:
                self.llama.llama_model_free(model)
        return [DepthSweep(model=info, depths=tuple(depths),
                           tg=tuple(summarise(rate_name("tg", n_gen, d), n_gen, seconds[(i, d)])
                                    for d in depths))
                for i, info in enumerate(infos)]

    def _sweep(self, contexts, n_vocabs, depths, n_gen: int, reps: int) -> dict:
        """Seconds of every timed repetition, by (model index, depth)."""
        seconds = {(i, d): [] for i in range(len(contexts)) for d in depths}
        filled = [0] * len(contexts)

        def forget(ctx, depth):  # drop the generated tokens: back to exactly ``depth``
            self.llama.llama_memory_seq_rm(self.llama.llama_get_memory(ctx), 0, depth, -1)

        for depth in depths:
            for i, ctx in enumerate(contexts):
                if depth > filled[i]:
                    self._prompt(ctx, depth - filled[i], n_vocabs[i])
                    filled[i] = depth
                # an untimed repetition at this depth first (llama-bench warms up before
                # each test; a whole repetition also touches every page the timed ones use)
                self._generate(ctx, n_gen, n_vocabs[i])
                forget(ctx, depth)
            for _ in range(reps):
                for i, ctx in enumerate(contexts):
                    seconds[(i, depth)].append(self._timed(self._generate, ctx, n_gen,
                                                           n_vocabs[i]))
                    forget(ctx, depth)
        return seconds
