"""Does llama-bench's persistent thread pool explain the in-process runner's small deficit?

llama-bench attaches a CPU thread pool (polling level 50) to every context it measures;
the Python binding exposes no way to do so, so napkin's runner leaves llama.cpp to make
its own. This script reaches the pool functions through ctypes and measures the same
model with and without one attached, alternately A B A B, reporting the ratio of medians.
A ratio near 1 rules the pool out.

    .venv/bin/python benchmarks/threadpool_effect.py [--pairs 5]
"""

from __future__ import annotations

import argparse
import ctypes
import statistics
from pathlib import Path

from napkin.measure.inprocess import InProcess
from napkin.measure.session import FULL, stderr_progress, synthetic_model

MAX_THREADS = 512  # GGML_MAX_N_THREADS in ggml.h


class PoolParams(ctypes.Structure):
    """struct ggml_threadpool_params (ggml.h)."""
    _fields_ = [("cpumask", ctypes.c_bool * MAX_THREADS), ("n_threads", ctypes.c_int),
                ("prio", ctypes.c_int), ("poll", ctypes.c_uint32),
                ("strict_cpu", ctypes.c_bool), ("paused", ctypes.c_bool)]


class PooledInProcess(InProcess):
    """The in-process runner with one persistent pool attached to each context, as
    llama-bench does (its defaults: all cores allowed, normal priority, polling 50)."""

    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        libdir = Path(self.llama.__file__).parent / "lib"
        cpu = ctypes.CDLL(str(next(libdir.glob("libggml-cpu.*"))))
        cpu.ggml_threadpool_new.restype = ctypes.c_void_p
        cpu.ggml_threadpool_new.argtypes = [ctypes.POINTER(PoolParams)]
        params = PoolParams(n_threads=self.threads, poll=50)
        self.pool = cpu.ggml_threadpool_new(ctypes.byref(params))
        attach = self.llama.llama_cpp._lib.llama_attach_threadpool
        attach.argtypes, attach.restype = [ctypes.c_void_p] * 3, None
        self._attach = attach

    def context(self, *args, **kwargs):
        ctx = super().context(*args, **kwargs)
        self._attach(ctx, self.pool, None)
        return ctx


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--pairs", type=int, default=5)
    p.add_argument("--reps", type=int, default=3)
    args = p.parse_args()
    model, info = synthetic_model("Q8_0", FULL.model_bytes(), progress=stderr_progress)
    runners = {"own threads": InProcess(), "thread pool": PooledInProcess()}
    rates = {name: {"pp": [], "tg": []} for name in runners}
    for i in range(args.pairs):
        for name, runner in runners.items():
            out = runner.measure(model, 512, 64, args.reps)
            for kind in ("pp", "tg"):
                rates[name][kind].append(getattr(out, kind).tokens_per_s)
            print(f"pair {i + 1} {name:<12} pp512 {out.pp.tokens_per_s:7.1f}  "
                  f"tg64 {out.tg.tokens_per_s:6.2f} tok/s", flush=True)
    print(f"\nQ8_0 synthetic model, {info['tensor_bytes'] / 1e6:.0f} MB, "
          f"{runners['own threads'].threads} threads, {args.pairs} pairs x {args.reps} reps")
    for kind in ("pp", "tg"):
        own, pool = rates["own threads"][kind], rates["thread pool"][kind]
        print(f"{kind}: own threads {statistics.median(own):7.2f}  thread pool "
              f"{statistics.median(pool):7.2f}  ratio of medians "
              f"{statistics.median(pool) / statistics.median(own):.3f}")


if __name__ == "__main__":
    main()
