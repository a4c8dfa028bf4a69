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
the weights say. With a real target and draft (``speculate``), the standard greedy
draft-then-verify loop runs end to end and reports the tokens accepted per step. llama.cpp's
own speculative decoding (its ``common`` library, behind ``llama-speculative`` and
``llama-server``) is not part of the C API the binding wraps, so that loop is napkin's, on
``llama_decode``.
"""

from __future__ import annotations

import datetime as dt
import os
import statistics
import time
from dataclasses import asdict, dataclass, field
from pathlib import Path

import numpy as np
import pandas as pd

from . import bandwidth as bandwidths
from . import machine, session, synthetic
from .batched import BatchedDecoder, _prefill_flops_per_token
from .probe import read_bandwidth
from .inprocess import InProcess
from .results import MeasurementUnavailable
from .runner import check_model

SCHEMA = "napkin.measure.verify/1"
SPECULATE_SCHEMA = "napkin.measure.speculate/1"

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
    """QUICK, or FULL when ``NAPKIN_VERIFY=full``."""
    choice = os.environ.get("NAPKIN_VERIFY", "quick").lower()
    if choice not in ("quick", "full"):
        raise ValueError(f"NAPKIN_VERIFY must be 'quick' or 'full', got {choice!r}")
    return FULL if choice == "full" else QUICK


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
    from .record import save

    try:
        record = run(plan, progress=session.quiet, **kwargs)
    except MeasurementUnavailable as err:
        print(f"No live verify-step measurement on this machine: {err}.")
        return None
    record["saved_to"] = str(save(record | {"mode": f"verify-{record['mode']}"}))
    return record


# -- the prediction ----------------------------------------------------------------------------

def _model(record: dict, which: str = "model"):
    from ..roofline import Model

    m = record[which]
    shape = synthetic.Shape(**m["synthetic"]["shape"])
    return Model(name=f"synthetic {m['synthetic']['format']}", params=m["model_params"],
                 weight_bytes=m["model_bytes"], config=shape.config())


def roof(record: dict):
    """This machine's roof: llama.cpp's prefill rate on the target and the probe's bandwidth
    (chapter 3's, :func:`napkin.measure.batched.roof`)."""
    from ..roofline import Roof

    return Roof(name=machine.label(record["machine"]), flops_per_s=record["flops_per_s"],
                bandwidth_bytes_per_s=record["bandwidth_bytes_per_s"],
                flops_kind=record["kernel"]["kind"])


def predicted_seconds(record: dict, tokens: int, depth: int, which: str = "model") -> float:
    """The roofline's step of ``tokens`` tokens after ``depth`` cached ones on this machine's
    measured roof: the weights read once, the cache read once, the FLOPs of every token."""
    from ..roofline import mixed_step

    return mixed_step(_model(record, which), roof(record), prefill=[(depth, tokens)]).seconds


def frame(record: dict | None) -> pd.DataFrame:
    """Measured and predicted seconds per step and cost relative to a one-token step, per
    depth and size (empty when there was no measurement)."""
    cols = ["depth", "tokens", "step_s", "stddev_s", "relative", "relative_stddev",
            "predicted_s", "predicted_relative", "predicted_bound"]
    if record is None:
        return pd.DataFrame(columns=cols)
    from ..roofline import mixed_step

    m, r = _model(record), roof(record)
    rows = []
    for p in record["points"]:
        step = mixed_step(m, r, prefill=[(p["depth"], p["tokens"])])
        one = mixed_step(m, r, prefill=[(p["depth"], 1)])
        rows.append({**{k: p[k] for k in cols[:6]}, "predicted_s": step.seconds,
                     "predicted_relative": step.seconds / one.seconds,
                     "predicted_bound": step.bound})
    return pd.DataFrame(rows, columns=cols)


def draft_share(record: dict) -> pd.DataFrame:
    """The draft's step over the target's plain step at each depth, measured (repetition by
    repetition, the two interleaved) and predicted (the roofline of both on this machine)."""
    rows = []
    for p in record["draft_points"]:
        d = p["depth"]
        rows.append({"depth": d, "draft_s": p["step_s"], "share": p["relative"],
                     "share_stddev": p["relative_stddev"],
                     "predicted_share": predicted_seconds(record, 1, d, "draft") /
                     predicted_seconds(record, 1, d)})
    return pd.DataFrame(rows)


def buys(record: dict | None, acceptance: float, depth: int | None = None) -> pd.DataFrame:
    """What speculative decoding would buy on this machine: for every measured verify size
    ``n = k + 1`` above one, the speedup ``tau(a, k) / (k x draft share + verify cost)`` from
    the measured costs and the given acceptance (which random weights cannot measure)."""
    from ..speculative.acceptance import expected_tokens

    cols = ["depth", "k", "verify_tokens", "tokens_per_cycle", "verify_relative",
            "draft_share", "cycle_relative", "speedup"]
    if record is None:
        return pd.DataFrame(columns=cols)
    df = frame(record)
    shares = draft_share(record).set_index("depth")["share"]
    depth = max(df["depth"]) if depth is None else depth
    rows = []
    for _, r in df[(df["depth"] == depth) & (df["tokens"] > 1)].iterrows():
        k = int(r["tokens"]) - 1
        tau = expected_tokens(acceptance, k)
        cycle = k * shares[depth] + r["relative"]
        rows.append({"depth": depth, "k": k, "verify_tokens": int(r["tokens"]),
                     "tokens_per_cycle": tau, "verify_relative": r["relative"],
                     "draft_share": shares[depth], "cycle_relative": cycle,
                     "speedup": tau / cycle})
    return pd.DataFrame(rows, columns=cols)


def who(record: dict | None) -> str:
    """The label a live figure carries."""
    if record is None:
        return "no live measurement (llama.cpp unavailable where this page was built)"
    return f"{machine.label(record['machine'])}, llama.cpp on the CPU"


def sentence(record: dict | None, acceptance: float) -> str:
    """The live result in Markdown, every number computed."""
    if record is None:
        return ("This page was built where llama.cpp could not run, so there is no live "
                "verify-step curve; run the notebook on your machine to draw yours.")
    df = frame(record)
    deep = df[df["depth"] == df["depth"].max()].set_index("tokens")
    steps = [n for n in deep.index if n > 1]
    costs = "; ".join(f"{n} tokens **{deep.loc[n, 'relative']:.2f}x** (roofline "
                      f"{deep.loc[n, 'predicted_relative']:.2f}x)" for n in steps)
    share = draft_share(record).set_index("depth")
    best = buys(record, acceptance).sort_values("speedup").iloc[-1]
    r = roof(record)
    text = (f"On the machine that built this page ({who(record)}; "
            f"{record.get('threads_reason', 'every core')}), at "
            f"{int(deep['depth'].iloc[0]):,} cached tokens a step cost, in one-token steps: "
            f"{costs}. The roofline is this machine's measured roof, llama.cpp's prefill at "
            f"{r.flops_per_s / 1e9:,.0f} GFLOP/s and memory at "
            f"{r.bandwidth_bytes_per_s / 1e9:,.1f} GB/s.")
    if deep.loc[steps[0], "relative"] > 1.5 * deep.loc[steps[0], "predicted_relative"]:
        text += (" Steps of a few tokens cost far more than the roofline says here: "
                 "llama.cpp's CPU path for small batches does not share one read of the "
                 "weights among their tokens the way its prefill path does (plausibly the "
                 "small-batch matmul path chapter 3's batch curve ran into).")
    text += (f" The synthetic draft's step cost **{share['share'].iloc[-1]:.0%}** of the "
             f"target's (its bytes predict {share['predicted_share'].iloc[-1]:.0%}). With "
             f"the acceptance rate of {acceptance:.0%} from the papers, the best draft "
             f"length here is **{int(best['k'])}** tokens, for a speedup of "
             f"**{best['speedup']:.2f}x**")
    return text + (": speculative decoding would not pay on this machine with this software."
                   if best["speedup"] < 1 else ".")


# -- end to end, with a real target and draft --------------------------------------------------

PROMPT = ("Speculative decoding lets a small draft model propose several tokens that the large "
          "model then checks in a single forward pass. Explain, step by step, why this makes "
          "generation faster on a machine whose memory bandwidth, not its arithmetic, limits "
          "how quickly each token is produced, and when it stops helping.")


def native_speculative_available() -> tuple[bool, str]:
    """Whether the binding exposes llama.cpp's own speculative decoding, and what it has."""
    try:
        import llama_cpp
    except ImportError:
        return False, "llama-cpp-python is not installed"
    names = [n for n in dir(llama_cpp) if n.startswith("common_speculative")]
    if names:
        return True, ", ".join(names)
    return False, ("llama-cpp-python wraps llama.cpp's C API, and llama.cpp's speculative "
                   "decoding lives in its common library (llama-speculative, llama-server), "
                   "outside that API")


class _Greedy:
    """One model in one context: feed tokens, read the argmax at every position fed."""

    def __init__(self, runner: InProcess, model, n_ctx: int):
        self.llama, self.runner = runner.llama, runner
        self.ctx = runner.context(model, n_ctx)
        self.vocab = self.llama.llama_vocab_n_tokens(self.llama.llama_model_get_vocab(model))
        self.batch = self.llama.llama_batch_init(max(512, n_ctx), 0, 1)
        self.memory = self.llama.llama_get_memory(self.ctx)

    def feed(self, tokens: list[int], pos: int, logits: bool = True) -> list[int]:
        """Decode ``tokens`` at ``pos``...; the argmax after each (if ``logits``)."""
        out, chunk = [], self.llama.llama_n_batch(self.ctx)
        for first in range(0, len(tokens), chunk):
            part = tokens[first:first + chunk]
            for j, t in enumerate(part):
                self.batch.token[j] = t
                self.batch.pos[j] = pos + first + j
                self.batch.n_seq_id[j] = 1
                self.batch.seq_id[j][0] = 0
                self.batch.logits[j] = logits or first + j == len(tokens) - 1
            self.batch.n_tokens = len(part)
            rc = self.llama.llama_decode(self.ctx, self.batch)
            if rc != 0:
                raise RuntimeError(f"llama_decode failed with code {rc}")
            for j in range(len(part)):
                if logits or first + j == len(tokens) - 1:
                    row = self.llama.llama_get_logits_ith(self.ctx, j)
                    out.append(int(np.argmax(np.ctypeslib.as_array(row, (self.vocab,)))))
        return out

    def trim(self, keep: int) -> None:
        self.llama.llama_memory_seq_rm(self.memory, 0, keep, -1)

    def clear(self) -> None:
        self.llama.llama_memory_clear(self.memory, True)

    def close(self) -> None:
        self.llama.llama_batch_free(self.batch)
        self.llama.llama_free(self.ctx)


def _tokenize(llama, model, text: str) -> list[int]:
    vocab = llama.llama_model_get_vocab(model)
    raw = text.encode()
    buf = (llama.llama_token * (len(raw) + 8))()
    n = llama.llama_tokenize(vocab, raw, len(raw), buf, len(buf), True, False)
    if n < 0:  # the buffer was short: -n is what it needs
        buf = (llama.llama_token * -n)()
        n = llama.llama_tokenize(vocab, raw, len(raw), buf, len(buf), True, False)
    if n < 1:
        raise ValueError("the prompt tokenized to nothing")
    return list(buf[:n])


def speculate(target: str | Path, draft: str | Path, k: int = 4, n_tokens: int = 128,
              prompt: str = PROMPT, threads: int | None = None,
              progress=session.quiet) -> dict:
    """Greedy decoding of ``n_tokens`` tokens by ``target`` alone, then with ``draft``
    proposing ``k`` tokens per cycle that one target step verifies: tokens per second of
    both, tokens per cycle (accepted drafted tokens plus the target's own), and whether the
    two outputs agree (greedy speculative decoding is exact up to the last bits of the
    arithmetic, which differ between a one-token and a many-token step)."""
    from ..speculative.acceptance import require_drafts

    k = require_drafts(k)
    if isinstance(n_tokens, bool) or not isinstance(n_tokens, int) or n_tokens < 1:
        raise ValueError(f"n_tokens must be a whole number >= 1, got {n_tokens!r}")
    paths = check_model(target), check_model(draft)
    if paths[1].stat().st_size > paths[0].stat().st_size:
        raise ValueError(f"the draft ({paths[1].name}) is larger than the target "
                         f"({paths[0].name}); a draft must cost less than what it drafts for")
    runner = InProcess(threads=threads)
    llama = runner.llama
    models = [runner.load(p) for p in paths]
    engines = []
    try:
        sizes = [runner.model_info(m).to_dict() for m in models]
        if sizes[0]["n_vocab"] != sizes[1]["n_vocab"]:
            raise ValueError(f"the draft's vocabulary ({sizes[1]['n_vocab']} tokens) is not "
                             f"the target's ({sizes[0]['n_vocab']}); a draft must propose the "
                             "target's tokens")
        ids = _tokenize(llama, models[0], prompt)
        n_ctx = len(ids) + n_tokens + k + 8
        engines = [_Greedy(runner, m, n_ctx) for m in models]
        big, small = engines
        progress(f"plain greedy decoding of {n_tokens} tokens")
        big.feed(ids, 0, logits=False)  # warm-up and the prompt's cache
        big.clear()
        nxt = big.feed(ids, 0, logits=False)[-1]
        start = time.perf_counter_ns()
        plain = [nxt]
        while len(plain) < n_tokens:
            plain.append(big.feed([plain[-1]], len(ids) + len(plain) - 1)[0])
        plain_s = (time.perf_counter_ns() - start) / 1e9
        progress(f"speculative: the draft proposes {k}, one target step verifies")
        big.clear()
        small.clear()
        cur = big.feed(ids, 0, logits=False)[-1]
        small.feed(ids, 0, logits=False)
        pos, out, cycles, accepted, pending = len(ids), [cur], 0, 0, []
        start = time.perf_counter_ns()
        while len(out) < n_tokens:
            guess = small.feed(pending + [cur], pos - len(pending))[-1:]
            while len(guess) < k:
                guess += small.feed([guess[-1]], pos + len(guess))
            checks = big.feed([cur] + guess, pos)
            n_ok = 0
            while n_ok < k and guess[n_ok] == checks[n_ok]:
                n_ok += 1
            new = guess[:n_ok] + [checks[n_ok]]
            cycles += 1
            accepted += n_ok
            big.trim(pos + n_ok + 1)
            small.trim(pos + min(n_ok, k - 1) + 1)
            pending = [guess[-1]] if n_ok == k else []
            out += new
            pos += n_ok + 1
            cur = out[-1]
        spec_s = (time.perf_counter_ns() - start) / 1e9
    finally:
        for e in engines:
            e.close()
        for m in models:
            llama.llama_model_free(m)
    n = min(len(out), n_tokens)
    agree = next((i for i, (a, b) in enumerate(zip(out[:n], plain[:n])) if a != b), n)
    return {
        "schema": SPECULATE_SCHEMA,
        "timestamp": dt.datetime.now(dt.timezone.utc).isoformat(timespec="seconds"),
        "machine": machine.describe(runner.threads), "runner": runner.info().to_dict(),
        "target": {"path": str(paths[0]), **sizes[0]}, "draft": {"path": str(paths[1]),
                                                                 **sizes[1]},
        "k": k, "n_tokens": n_tokens, "prompt_tokens": len(ids),
        "plain_tok_per_s": (len(plain) - 1) / plain_s,
        "speculative_tok_per_s": (len(out) - 1) / spec_s,
        "cycles": cycles, "accepted_drafted": accepted,
        "tokens_per_cycle": (accepted + cycles) / cycles,
        "acceptance_rate": accepted / (cycles * k),
        "speedup": (len(out) - 1) / spec_s / ((len(plain) - 1) / plain_s),
        "outputs_agree_for_tokens": agree,
        "native_speculative": native_speculative_available()[1],
    }


def speculate_live(target: str | None, draft: str | None, k: int = 4,
                   n_tokens: int = 128) -> dict | None:
    """For a notebook cell: the end-to-end run when a reader names a real target and draft
    (``NAPKIN_TARGET`` and ``NAPKIN_DRAFT``), else one sentence on why not (None)."""
    if not target or not draft:
        print("No end-to-end speculative run: set NAPKIN_TARGET and NAPKIN_DRAFT to a real "
              "GGUF model and a smaller draft sharing its vocabulary (random weights cannot "
              "accept anything).")
        return None
    try:
        return speculate(target, draft, k, n_tokens)
    except (MeasurementUnavailable, ValueError) as err:
        print(f"No end-to-end speculative run: {err}.")
        return None


def speculate_sentence(result: dict | None) -> str:
    """The end-to-end result in Markdown (numbers computed)."""
    ok, why = native_speculative_available()
    native = ("" if ok else f" (llama.cpp's own speculative decoding is not available through "
                            f"the binding: {why}; the loop here is the standard greedy one, "
                            f"on llama_decode)")
    if result is None:
        return ("No real target and draft were given where this page was built, so acceptance "
                "was not measured here; the speedups on this page take it from the papers" + native +
                ".")
    return (f"With {Path(result['target']['path']).name} and {Path(result['draft']['path']).name}"
            f" drafting {result['k']} tokens a cycle, each verify step kept "
            f"**{result['tokens_per_cycle']:.2f}** tokens on average (an acceptance rate of "
            f"{result['acceptance_rate']:.0%}), and decoding ran at "
            f"**{result['speculative_tok_per_s']:.1f}** tokens/s against "
            f"{result['plain_tok_per_s']:.1f} without the draft: **{result['speedup']:.2f}x**"
            + native + ".")
