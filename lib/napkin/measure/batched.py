"""Batched decode, measured: several sequences each generating one token per step.

At batch 1 every decode step reads all the weights to produce one token; at
batch B the same read produces B tokens, so throughput rises with B until the
arithmetic, not the memory, is what the step waits for. This module measures
that curve with llama.cpp on this machine and sets it against the roofline
prediction from this machine's own measured peak (:mod:`.gemm`) and bandwidth
(:mod:`.probe`).

The method (llama.cpp's low-level API through llama-cpp-python):

- one context per batch size with ``n_seq_max = B``; every sequence gets its own
  ``n_prompt`` random tokens first (its KV cache), then each timed step is one
  ``llama_decode`` of a batch holding one new token for each of the B sequences
  (``seq_id`` 0..B-1), logits requested for all of them, as a server would;
- every batch size has its context open at once; after one untimed step each,
  ``reps`` timed runs of ``n_steps`` steps interleave across batch sizes
  (forward, then backward), so drift on a busy machine hits all alike; the
  prompts are filled once, so the caches grow by ``reps x n_steps`` tokens;
- aggregate tokens/s = ``B x n_steps / seconds``, mean and sample standard
  deviation over repetitions (llama-bench's convention);
- before and after the batches, llama.cpp's plain decode of the same model, one sequence in a
  fresh context (llama-bench's ``tg``, the rate chapter 1 measures): the reference that says
  whether batch 1 of this harness measured the machine or the harness
  (:func:`~napkin.measure.batched_report.batch_one`).

Always on the CPU (no layers offloaded), because the prediction it is compared
with uses this CPU's measured peak and bandwidth.
"""

from __future__ import annotations

import datetime as dt
import statistics
import time
from dataclasses import asdict, dataclass

import numpy as np

from . import bandwidth as bandwidths
from . import machine, mode, session
from .gemm import peak_flops
from .probe import read_bandwidth
from .batched_report import (BUSY_SHARE, CEILING_SHARE, OVERHEAD_SHARE, batch_one,
                             bend, bend_fit, busy,
                             bend_sentence, closing_note, describes, efficiency, frame, model_of,
                             plain_decode, plan_sentence, predicted_bend, roof, sentence,
                             shape_sentence, who)
from .inprocess import InProcess

SCHEMA = "napkin.measure.batched/1"


@dataclass(frozen=True)
class BatchPlan:
    """What a batched-decode session measures."""

    mode: str
    batches: tuple[int, ...]
    n_prompt: int   # tokens each sequence holds before the timed steps
    n_steps: int    # timed decode steps per repetition
    reps: int
    fmt: str        # synthetic model format
    gemm_n: int     # size of the square float32 matmul: a yardstick, not the roof
    kernel_tokens: int = 256  # prompt whose prefill measures llama.cpp's own matmul rate
    plain_tokens: int = 32    # tokens of the plain decode (llama-bench's tg) beside batch 1

    def __post_init__(self):
        if not self.batches or any(isinstance(b, bool) or not isinstance(b, int) or b < 1
                                   for b in self.batches):
            raise ValueError(f"batches must be whole numbers >= 1, got {self.batches!r}")
        if 1 not in self.batches:
            raise ValueError(f"batches must include 1 (the point set against plain decode), "
                             f"got {self.batches!r}")
        for name in ("n_prompt", "n_steps", "reps", "kernel_tokens", "plain_tokens"):
            value = getattr(self, name)
            if isinstance(value, bool) or not isinstance(value, int) or value < 1:
                raise ValueError(f"{name} must be a whole number >= 1, got {value!r}")


#: Under a minute inside a book build, not five: three batches a factor of four apart, three
#: timed steps each, two repetitions (a standard deviation of two samples is a rough one), a
#: short prefill and a short plain decode. It shows the shape, roughly; FULL measures it.
QUICK = BatchPlan("quick", (1, 4, 16), n_prompt=8, n_steps=3, reps=2, fmt="Q8_0",
                  gemm_n=2048, kernel_tokens=64, plain_tokens=3)
FULL = BatchPlan("full", (1, 2, 3, 4, 6, 8, 12, 16, 24, 32, 48, 64), n_prompt=64, n_steps=32,
                 reps=5, fmt="Q8_0", gemm_n=3072, kernel_tokens=256, plain_tokens=32)


def plan_from_env() -> BatchPlan:
    """QUICK, or FULL when ``NAPKIN_BATCH`` (or ``NAPKIN_LIVE``) is ``full``."""
    return mode.choose("NAPKIN_BATCH", QUICK, FULL)


class BatchedDecoder:
    """llama.cpp in this process, decoding B sequences at once on the CPU."""

    def __init__(self, threads: int | None = None, seed: int = 0):
        self.runner = InProcess(threads=threads, seed=seed)
        self.llama = self.runner.llama
        self.rng = np.random.default_rng(seed)

    @property
    def threads(self) -> int:
        return self.runner.threads

    def info(self) -> dict:
        """The runner's record, with the CPU as its backend whatever the binding could use."""
        return self.runner.info().to_dict() | {
            "backend": "CPU", "devices": [], "device": "CPU", "offloaded_layers": 0,
            "why": "batched decode runs on the CPU (no layers offloaded): its prediction uses "
                   "this CPU's memory probe and llama.cpp's prefill rate on it"}

    def load(self, path):
        return self.runner.load(path, gpu=False)

    def _fill(self, batch, n_seq: int, first_seq: int, per_seq: int, pos: int, n_vocab: int):
        ids = self.rng.integers(0, n_vocab, size=n_seq * per_seq)
        n = 0
        for s in range(first_seq, first_seq + n_seq):
            for j in range(per_seq):
                batch.token[n] = int(ids[n])
                batch.pos[n] = pos + j
                batch.n_seq_id[n] = 1
                batch.seq_id[n][0] = s
                batch.logits[n] = j == per_seq - 1
                n += 1
        batch.n_tokens = n

    def _decode(self, ctx, batch):
        rc = self.llama.llama_decode(ctx, batch)
        if rc != 0:
            raise RuntimeError(f"llama_decode failed with code {rc} "
                               f"({self.runner.logs.text()[-200:]})")

    def _prompts(self, ctx, batch, n_batch_seqs: int, n_prompt: int, n_vocab: int, chunk: int):
        """Give every sequence its own prompt, a group of sequences per llama_decode."""
        per_call = max(1, chunk // n_prompt)
        for first in range(0, n_batch_seqs, per_call):
            n = min(per_call, n_batch_seqs - first)
            self._fill(batch, n, first, n_prompt, 0, n_vocab)
            self._decode(ctx, batch)
        self.llama.llama_synchronize(ctx)

    def _open(self, model, n_vocab: int, b: int, n_prompt: int, per_seq: int):
        """A context holding ``b`` sequences, their prompts filled and one step taken."""
        ctx = self.runner.context(model, b * per_seq + 256, n_seq=b)
        chunk = self.llama.llama_n_batch(ctx)
        batch = self.llama.llama_batch_init(max(b, min(chunk, b * n_prompt)), 0, 1)
        try:
            self._prompts(ctx, batch, b, n_prompt, n_vocab, chunk)
            self._step(ctx, batch, b, n_prompt, n_vocab)  # warm-up step, untimed
        except Exception:
            self._close(ctx, batch)
            raise
        return ctx, batch

    def _step(self, ctx, batch, b: int, pos: int, n_vocab: int) -> None:
        self._fill(batch, b, 0, 1, pos, n_vocab)
        self._decode(ctx, batch)
        self.llama.llama_synchronize(ctx)

    def _close(self, ctx, batch) -> None:
        self.llama.llama_batch_free(batch)
        self.llama.llama_free(ctx)

    def prefill(self, path, n_prompt: int, reps: int):
        """llama.cpp's prefill of ``n_prompt`` tokens on the CPU (:meth:`single`)."""
        return self.single(path, f"pp{n_prompt}", n_prompt, 0, reps)

    def single(self, path, test: str, n_prompt: int, n_gen: int, reps: int):
        """One llama-bench test of one sequence on the CPU, alone in a fresh context: a
        prefill of ``n_prompt`` tokens (every weight reused by every prompt token, the fastest
        the machine runs this model's matmul kernels) or a plain decode of ``n_gen`` (the rate
        chapter 1 measures, the reference for batch 1)."""
        model = self.load(path)
        try:
            return self.runner.run_test(model, test, n_prompt, n_gen, 0, reps)
        finally:
            self.llama.llama_model_free(model)

    def measure(self, path, batches, n_prompt: int, n_steps: int, reps: int,
                progress=session.quiet) -> tuple[dict, list[dict]]:
        """Aggregate tokens/s for every batch size: mean, stddev and samples of ``reps`` runs.

        All batch sizes are open at once and their runs interleave (forward, then backward,
        then forward ...), so a machine that slows down for a while slows every batch size
        alike instead of bending the curve.
        """
        batches = list(batches)
        model = self.load(path)
        streams = {}
        try:
            info = self.runner.model_info(model).to_dict()
            n_vocab = info["n_vocab"]
            per_seq = n_prompt + 1 + reps * n_steps
            for b in batches:
                progress(f"batch {b}: filling {b} prompts of {n_prompt} tokens")
                streams[b] = self._open(model, n_vocab, b, n_prompt, per_seq)
            rates = {b: [] for b in batches}
            pos = n_prompt + 1
            for rep in range(reps):
                progress(f"repetition {rep + 1} of {reps}: {n_steps} steps at every batch size")
                for b in (batches if rep % 2 == 0 else batches[::-1]):
                    ctx, batch = streams[b]
                    start = time.perf_counter_ns()
                    for step in range(n_steps):
                        self._step(ctx, batch, b, pos + step, n_vocab)
                    rates[b].append(b * n_steps / ((time.perf_counter_ns() - start) / 1e9))
                pos += n_steps
        finally:
            for ctx, batch in streams.values():
                self._close(ctx, batch)
            self.llama.llama_model_free(model)
        points = []
        for b in batches:
            mean = statistics.fmean(rates[b])
            points.append({"batch": b, "tokens_per_s": mean,
                           "stddev": statistics.stdev(rates[b]) if reps > 1 else 0.0,
                           "samples": rates[b], "step_s": b / mean,
                           # the mean depth of the caches over the timed steps
                           "context_tokens": n_prompt + 1 + (reps * n_steps) // 2})
        return info, points


def run(plan: BatchPlan = QUICK, threads: int | None = None,
        progress=session.stderr_progress, model: tuple | None = None) -> dict:
    """Probe, GEMM peak, batched decode for every batch in ``plan``, probe again.

    ``model``: a synthetic model already written, as ``(path, info)`` in the form
    :func:`napkin.measure.session.synthetic_model` returns; by default the quick
    measurement's model in ``plan.fmt`` (larger than the caches), written if missing.
    """
    decoder = BatchedDecoder(threads=threads)
    limit = decoder.llama.llama_max_parallel_sequences()
    if max(plan.batches) > limit:
        raise ValueError(f"this llama.cpp decodes at most {limit} sequences at once; "
                         f"batches go up to {max(plan.batches)}")
    if model is None:
        model = session.synthetic_model(plan.fmt, session.QUICK.model_bytes(), progress=progress)
    path, synthetic_info = model
    if not synthetic_info or "shape" not in synthetic_info:
        raise ValueError("model must be a synthetic model (path, info with its shape): the "
                         "prediction needs the shape's config for the KV cache")
    progress("probing memory bandwidth")
    before = read_bandwidth(threads=decoder.threads)
    progress(f"measuring peak FLOP/s ({plan.gemm_n} x {plan.gemm_n} float32 matmul)")
    gemm = peak_flops(plan.gemm_n)
    tg = f"tg{plan.plain_tokens}"
    progress(f"plain decode of the same model ({tg}, one sequence), before the batches")
    plain_before = decoder.single(path, tg, 0, plan.plain_tokens, plan.reps)
    info, points = decoder.measure(path, plan.batches, plan.n_prompt, plan.n_steps, plan.reps,
                                   progress)
    progress(f"plain decode again ({tg}), and llama.cpp's own matmul rate "
             f"(pp{plan.kernel_tokens} on the same model)")
    plain_after = decoder.single(path, tg, 0, plan.plain_tokens, plan.reps)
    pp = decoder.prefill(path, plan.kernel_tokens, plan.reps)
    after = read_bandwidth(threads=decoder.threads)
    used = bandwidths.of_probe(before, after, machine.cpu_model())
    progress("done")
    per_token = _prefill_flops_per_token(synthetic_info, info, plan.kernel_tokens)
    return {
        "schema": SCHEMA,
        "timestamp": dt.datetime.now(dt.timezone.utc).isoformat(timespec="seconds"),
        "mode": plan.mode, "plan": asdict(plan),
        "machine": machine.describe(decoder.threads), "runner": decoder.info(),
        "model": {"path": str(path), "synthetic": synthetic_info, **info},
        "probe_before": before.to_dict(), "probe_after": after.to_dict(),
        "bandwidth_bytes_per_s": used.bytes_per_s, "bandwidth": used.to_dict(),
        "gemm": gemm.to_dict(),
        "kernel": {"rate": pp.to_dict(), "flops_per_token": per_token,
                   "flops_per_s": pp.tokens_per_s * per_token,
                   "kind": f"llama.cpp {plan.fmt} prefill, measured"},
        "flops_per_s": pp.tokens_per_s * per_token,
        "plain": {"before": plain_before.to_dict(), "after": plain_after.to_dict(),
                  "kind": "llama.cpp plain decode of the same model: one sequence, a fresh "
                          "context, llama-bench's method (chapter 1's rate)"},
        "points": points,
    }


def _prefill_flops_per_token(synthetic_info: dict, info: dict, n_tokens: int) -> float:
    """FLOPs per prompt token of a prefill of ``n_tokens`` (weights and causal attention)."""
    from ..roofline import step_work

    m = model_of({"model": {"synthetic": synthetic_info, **info}})
    return step_work(m, prefill=[(0, n_tokens)]).flops / n_tokens


def live(plan: BatchPlan = QUICK, **kwargs) -> dict | None:
    """For a notebook cell: run and save, or say in one sentence why not (None)."""
    from .record import live as run_live

    return run_live(lambda: run(plan, progress=session.quiet, **kwargs),
                    "batched-decode measurement", save_as="batched")


__all__ = ["BatchPlan", "QUICK", "FULL", "plan_from_env", "BatchedDecoder", "run", "live",
           "BUSY_SHARE", "busy", "CEILING_SHARE", "OVERHEAD_SHARE", "batch_one", "bend", "bend_fit", "bend_sentence",
           "closing_note", "describes", "efficiency", "frame", "model_of", "plain_decode",
           "plan_sentence", "predicted_bend", "roof", "sentence", "shape_sentence", "who"]
