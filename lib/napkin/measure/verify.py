"""Verify steps, measured: one sequence adding ``n`` tokens per step instead of one.

Speculative decoding rests on one measurable fact: a step that checks ``n`` drafted tokens
of one sequence reads the weights once, like a plain decode step, so while it is
memory-bound it costs barely more. This module times that step with llama.cpp on this
machine, the way chapter 3's batched decoder times batches (llama.cpp's low-level API
through llama-cpp-python, on the CPU), but with one sequence and ``n`` positions per
``llama_decode``, logits requested for every position (verification compares all of them):

- the synthetic model of the quick measurement (random weights: speed does not depend on
  their values), its cache filled to each depth in turn;
- at each depth, one untimed step of every size first; then ``reps`` repetitions of
  ``n_steps`` rounds, each round one step of every size and of the draft (forward, then
  backward), and after every step the tokens it added are removed again, so every step
  starts from exactly ``depth`` cached tokens and a busy moment hits every size alike;
- seconds per step: mean and sample standard deviation over repetitions (llama-bench's
  convention); the cost of a step of ``n`` relative to one of 1 is taken repetition by
  repetition, so drift cancels.

A small synthetic draft model (same vocabulary, a fraction of the bytes) is timed in the same
rounds at one token per step: the draft's cost per drafted token. The prediction beside the
measurement is the roofline of this machine's own measured roof: llama.cpp's prefill rate
on the same model (chapter 3's compute roof) and the memory probe.

Random weights cannot measure acceptance: how often a draft guesses right depends on what
the weights say. With a real target and draft, :mod:`.speculation` runs the standard greedy
draft-then-verify loop end to end and reports the tokens accepted per step.

The prediction and the prose live in :mod:`.verify_report`, the end-to-end run in
:mod:`.speculation`; both are imported here, so every name is importable from this module.
"""

from __future__ import annotations

import datetime as dt
import os
import statistics
import time
from dataclasses import asdict, dataclass, field
from pathlib import Path

from . import bandwidth as bandwidths
from . import machine, mode, session, synthetic
from .batched import BatchedDecoder, _prefill_flops_per_token
from .probe import read_bandwidth
from .speculation import (PROMPT, SPECULATE_SCHEMA, native_speculative_available, speculate,
                          speculate_live, speculate_sentence)
from .verify_report import (buys, draft_share, frame, predicted_seconds, roof, sentence,
                            unreadable, who)

SCHEMA = "napkin.measure.verify/1"

#: The draft: the target's vocabulary (a draft's tokens must be the target's), a quarter of
#: its width and one layer. Its tied embedding is most of its bytes, as in real small drafts.
DRAFT_SHAPE = synthetic.Shape(hidden_size=512, num_hidden_layers=1, num_attention_heads=4,
                              num_key_value_heads=4, head_dim=128, intermediate_size=1408)


@dataclass(frozen=True)
class VerifyPlan:
    """What a verify-cost session measures."""

    mode: str
    tokens: tuple[int, ...]   # tokens per verify step (1: a plain decode step)
    depths: tuple[int, ...]   # cached tokens before each step
    n_steps: int
    reps: int
    fmt: str = "Q8_0"
    draft: synthetic.Shape = field(default=DRAFT_SHAPE)
    kernel_tokens: int = 256  # prompt whose prefill measures llama.cpp's own matmul rate

    def __post_init__(self):
        for name in ("tokens", "depths"):
            values = getattr(self, name)
            low = 1 if name == "tokens" else 0
            if not values or any(isinstance(v, bool) or not isinstance(v, int) or v < low
                                 for v in values):
                raise ValueError(f"{name} must be whole numbers >= {low}, got {values!r}")
        if 1 not in self.tokens:
            raise ValueError(f"tokens must include 1 (the plain step the others are measured "
                             f"against), got {self.tokens!r}")
        for name in ("n_steps", "reps", "kernel_tokens"):
            value = getattr(self, name)
            if isinstance(value, bool) or not isinstance(value, int) or value < 1:
                raise ValueError(f"{name} must be a whole number >= 1, got {value!r}")
        synthetic.check_format(self.fmt)


QUICK = VerifyPlan("quick", tokens=(1, 2, 4, 8, 16), depths=(64, 512), n_steps=3, reps=3)
FULL = VerifyPlan("full", tokens=(1, 2, 3, 4, 6, 8, 12, 16, 24, 32), depths=(64, 512, 2048),
                  n_steps=8, reps=5)


def plan_from_env() -> VerifyPlan:
    """QUICK, or FULL when ``NAPKIN_VERIFY`` (or ``NAPKIN_LIVE``) is ``full``."""
    return mode.choose("NAPKIN_VERIFY", QUICK, FULL)


class VerifyTimer(BatchedDecoder):
    """llama.cpp in this process on the CPU, timing steps of several tokens of one sequence."""

    def _fill_run(self, batch, n: int, pos: int, n_vocab: int, logits_all: bool = True):
        ids = self.rng.integers(0, n_vocab, size=n)
        for j in range(n):
            batch.token[j] = int(ids[j])
            batch.pos[j] = pos + j
            batch.n_seq_id[j] = 1
            batch.seq_id[j][0] = 0
            batch.logits[j] = logits_all or j == n - 1
        batch.n_tokens = n

    def _step(self, ctx, batch, n: int, depth: int, n_vocab: int, memory) -> float:
        """One timed step of ``n`` tokens after ``depth``; its tokens removed afterwards."""
        self._fill_run(batch, n, depth, n_vocab)
        start = time.perf_counter_ns()
        self._decode(ctx, batch)
        self.llama.llama_synchronize(ctx)
        seconds = (time.perf_counter_ns() - start) / 1e9
        self.llama.llama_memory_seq_rm(memory, 0, depth, -1)
        return seconds

    def _grow(self, ctx, batch, upto: int, filled: int, n_vocab: int, chunk: int) -> None:
        while filled < upto:
            n = min(chunk, upto - filled)
            self._fill_run(batch, n, filled, n_vocab, logits_all=False)
            self._decode(ctx, batch)
            filled += n
        self.llama.llama_synchronize(ctx)

    def measure(self, jobs, depths, n_steps: int, reps: int,
                progress=session.quiet) -> list[tuple[dict, list[dict]]]:
        """Seconds per step for every (model, size) of ``jobs`` (a list of ``(path, sizes)``)
        at every depth: mean, stddev, samples, and the cost relative to the first model's
        one-token step, repetition by repetition. Every step of every model and size is
        interleaved with the others (the order reversed each time round), so a machine that
        slows down for a moment slows them all alike."""
        depths = sorted(set(depths))
        jobs = [(path, sorted(set(sizes))) for path, sizes in jobs]
        loaded, opened, out = [], [], []
        try:
            for path, sizes in jobs:
                model = self.load(path)
                loaded.append(model)
                info = self.runner.model_info(model).to_dict()
                ctx = self.runner.context(model, depths[-1] + max(sizes) + 8)
                chunk = self.llama.llama_n_batch(ctx)
                batch = self.llama.llama_batch_init(max(chunk, max(sizes)), 0, 1)
                opened.append((ctx, batch, self.llama.llama_get_memory(ctx), info["n_vocab"],
                               chunk))
                out.append((info, []))
            order = [(j, n) for j, (_, sizes) in enumerate(jobs) for n in sizes]
            filled = [0] * len(jobs)
            for depth in depths:
                progress(f"depth {depth}: filling the caches, then steps of "
                         f"{', '.join(str(n) for _, n in order)} tokens, interleaved")
                for j, (ctx, batch, memory, n_vocab, chunk) in enumerate(opened):
                    self._grow(ctx, batch, depth, filled[j], n_vocab, chunk)
                    filled[j] = depth
                times = {key: [[] for _ in range(reps)] for key in order}
                for j, n in order:  # untimed: warms the kernels and the pages each touches
                    ctx, batch, memory, n_vocab, _ = opened[j]
                    self._step(ctx, batch, n, depth, n_vocab, memory)
                for rep in range(reps):
                    for step in range(n_steps):
                        for j, n in (order if (rep * n_steps + step) % 2 == 0 else order[::-1]):
                            ctx, batch, memory, n_vocab, _ = opened[j]
                            times[(j, n)][rep].append(self._step(ctx, batch, n, depth, n_vocab,
                                                                 memory))
                per_rep = {key: [statistics.fmean(t) for t in v] for key, v in times.items()}
                base = per_rep[order[0]]
                for (j, n), seconds in per_rep.items():
                    rel = [s / one for s, one in zip(seconds, base)]
                    out[j][1].append({
                        "depth": depth, "tokens": n, "step_s": statistics.fmean(seconds),
                        "stddev_s": statistics.stdev(seconds) if reps > 1 else 0.0,
                        "samples_s": seconds, "relative": statistics.fmean(rel),
                        "relative_stddev": statistics.stdev(rel) if reps > 1 else 0.0})
        finally:
            for ctx, batch, *_ in opened:
                self._close(ctx, batch)
            for model in loaded:
                self.llama.llama_model_free(model)
        return out


def choose_threads(cores: int | None = None, load: float | None = None) -> tuple[int, str]:
    """Every core, unless other work already keeps them nearly all busy (the one-minute load
    average within half a core of their number): then one. A step whose threads wait at a
    barrier for one the scheduler put aside times the scheduler, not the step; on a busy
    machine one thread is slower but honest. Returns the count and why."""
    from .probe import default_threads

    n = default_threads() if cores is None else int(cores)
    if load is None:
        load = os.getloadavg()[0] if hasattr(os, "getloadavg") else 0.0
    if n > 1 and load >= n - 0.5:
        return 1, (f"one thread: the machine was busy (load {load:.1f} on {n} cores), and a "
                   "step waiting for a descheduled thread would time the scheduler")
    return n, f"every core ({n})"


def draft_model(plan: VerifyPlan = QUICK, progress=session.quiet) -> tuple[Path, dict]:
    """The plan's synthetic draft model, written if missing (cached like the others)."""
    shape, fmt = plan.draft, plan.fmt
    size = synthetic.tensor_bytes(shape, fmt)
    path = session.cache_dir() / (f"draft-{fmt}-h{shape.hidden_size}-l{shape.num_hidden_layers}"
                                  f"-v{shape.vocab_size}-seed1.gguf")
    if not path.is_file():
        session.ensure_room(path.parent, size, f"a {fmt} synthetic draft model")
        progress(f"writing synthetic draft model ({size / 1e6:,.0f} MB) to {path}")
        synthetic.write(path, shape, fmt, seed=1)
    return path, {"format": fmt, "seed": 1, "shape": asdict(shape), "tensor_bytes": size}


def run(plan: VerifyPlan = QUICK, threads: int | None = None,
        progress=session.stderr_progress, model: tuple | None = None,
        draft: tuple | None = None) -> dict:
    """Probe, the target's verify steps at every depth, the draft's plain steps, llama.cpp's
    prefill rate on the target, probe again. ``model`` and ``draft``: synthetic models already
    written, as ``(path, info)`` (:func:`napkin.measure.session.synthetic_model`'s form); by
    default the quick measurement's model and :func:`draft_model`."""
    why = "as asked"
    if threads is None:
        threads, why = choose_threads()
    timer = VerifyTimer(threads=threads)
    if model is None:
        model = session.synthetic_model(plan.fmt, session.QUICK.model_bytes(), progress=progress)
    if draft is None:
        draft = draft_model(plan, progress)
    for label, (_, info) in (("model", model), ("draft", draft)):
        if not info or "shape" not in info:
            raise ValueError(f"{label} must be a synthetic model (path, info with its shape): "
                             "the prediction needs its shape")
    if draft[1]["shape"]["vocab_size"] != model[1]["shape"]["vocab_size"]:
        raise ValueError("the draft's vocabulary must be the target's (a draft proposes the "
                         "target's tokens)")
    if draft[1]["tensor_bytes"] > model[1]["tensor_bytes"]:
        raise ValueError(f"the draft ({draft[1]['tensor_bytes'] / 1e6:,.0f} MB) is larger than "
                         f"the target ({model[1]['tensor_bytes'] / 1e6:,.0f} MB)")
    progress("probing memory bandwidth")
    before = read_bandwidth(threads=timer.threads)
    (info, points), (draft_info, draft_points) = timer.measure(
        [(model[0], plan.tokens), (draft[0], (1,))], plan.depths, plan.n_steps, plan.reps,
        progress)
    progress(f"llama.cpp's own matmul rate (pp{plan.kernel_tokens} on the target)")
    pp = timer.prefill(model[0], plan.kernel_tokens, plan.reps)
    after = read_bandwidth(threads=timer.threads)
    used = bandwidths.of_probe(before, after, machine.cpu_model())
    progress("done")
    per_token = _prefill_flops_per_token(model[1], info, plan.kernel_tokens)
    return {
        "schema": SCHEMA,
        "timestamp": dt.datetime.now(dt.timezone.utc).isoformat(timespec="seconds"),
        "mode": plan.mode, "plan": asdict(plan),
        "machine": machine.describe(timer.threads), "runner": timer.info(),
        "threads_reason": why,
        "model": {"path": str(model[0]), "synthetic": model[1], **info},
        "draft": {"path": str(draft[0]), "synthetic": draft[1], **draft_info},
        "probe_before": before.to_dict(), "probe_after": after.to_dict(),
        "bandwidth_bytes_per_s": used.bytes_per_s, "bandwidth": used.to_dict(),
        "kernel": {"rate": pp.to_dict(), "flops_per_token": per_token,
                   "kind": f"llama.cpp {plan.fmt} prefill, measured"},
        "flops_per_s": pp.tokens_per_s * per_token,
        "points": points, "draft_points": draft_points,
    }


def live(plan: VerifyPlan = QUICK, **kwargs) -> dict | None:
    """For a notebook cell: the record, saved, or one sentence on why not (None)."""
    from .record import live as run_live

    return run_live(lambda: run(plan, progress=session.quiet, **kwargs), "verify-step measurement",
                    save_as="verify")


__all__ = ["SCHEMA", "DRAFT_SHAPE", "VerifyPlan", "QUICK", "FULL", "plan_from_env",
           "VerifyTimer", "choose_threads", "draft_model", "run", "live",
           "roof", "predicted_seconds", "frame", "draft_share", "buys", "who", "sentence",
           "unreadable",
           "SPECULATE_SCHEMA", "PROMPT", "native_speculative_available", "speculate",
           "speculate_live", "speculate_sentence"]
