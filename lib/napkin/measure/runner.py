"""Prompt processing (pp) and token generation (tg), measured the way llama-bench does.

Two runners implement one interface, :class:`Runner`:

- :class:`napkin.measure.llama_bench.LlamaBench` runs a ``llama-bench`` binary and parses
  its JSON: how a reader's Metal, CUDA or ROCm build of llama.cpp is used;
- :class:`napkin.measure.inprocess.InProcess` drives llama.cpp through ``llama-cpp-python``
  with llama-bench's method, offloading every layer when the binding has a GPU.

:func:`make_runner` picks one and says why.
"""

from __future__ import annotations

import os
import shutil
from collections.abc import Sequence
from pathlib import Path
from typing import Protocol, runtime_checkable

from .backend import Backend
from .results import DepthSweep, Measurement, RunnerInfo

ENV = "LLAMA_BENCH"


@runtime_checkable
class Runner(Protocol):
    """What the sessions (:mod:`.session`, :mod:`.depth`) need from a llama.cpp runner."""

    name: str
    threads: int
    why: str

    def backend(self) -> Backend | None:
        """The backend and device llama.cpp computes on; None only when a binary cannot say
        before its first run (then ask again after :meth:`measure`)."""

    def info(self) -> RunnerInfo:
        """Runner, llama.cpp build, backend, device and threads, for the record."""

    def measure(self, path: str | Path, n_prompt: int, n_gen: int, reps: int,
                depth: int = 0) -> Measurement:
        """pp of ``n_prompt`` tokens and tg of ``n_gen``, ``reps`` repetitions each, after
        ``depth`` tokens already in the cache."""

    def depth_sweep(self, paths: Sequence[str | Path], depths: Sequence[int], n_gen: int,
                    reps: int, flash_attn: bool | None = None) -> list[DepthSweep]:
        """tg at every depth for every model, their repetitions alternating (A B A B)."""


def find_llama_bench(given: str | None = None) -> tuple[str | None, str]:
    """The llama-bench to use and why: ``--llama-bench``, else ``$LLAMA_BENCH``, else one on
    ``PATH``; (None, why) when there is none."""
    if given:
        return given, f"--llama-bench {given} given"
    env = os.environ.get(ENV, "").strip()
    if env:
        return env, f"{ENV}={env} set"
    found = shutil.which("llama-bench")
    if found:
        return found, f"llama-bench found on PATH at {found}"
    return None, f"no llama-bench given (--llama-bench, {ENV}) or on PATH"


def make_runner(llama_bench: str | None = None, threads: int | None = None) -> Runner:
    """A llama-bench binary (a reader's GPU build) when one is given or found; else llama.cpp
    in this process. The runner's ``why`` says which rule chose it."""
    binary, why = find_llama_bench(llama_bench)
    if binary:
        from .llama_bench import LlamaBench

        return LlamaBench(binary, threads=threads, why=why)
    from .inprocess import InProcess

    return InProcess(threads=threads, why=f"{why}: llama.cpp in-process through "
                                          "llama-cpp-python")
