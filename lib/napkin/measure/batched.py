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
  deviation over repetitions (llama-bench's convention).

Always on the CPU (no layers offloaded), because the prediction it is compared
with uses this CPU's measured peak and bandwidth.
"""

from __future__ import annotations

import datetime as dt
import math
import statistics
import time
from dataclasses import asdict, dataclass

import numpy as np
import pandas as pd

from . import machine, session
from .gemm import peak_flops
from .probe import read_bandwidth
from .runner import InProcess, MeasurementUnavailable, check_model

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

    def __post_init__(self):
        if not self.batches or any(isinstance(b, bool) or not isinstance(b, int) or b < 1
                                   for b in self.batches):
            raise ValueError(f"batches must be whole numbers >= 1, got {self.batches!r}")
        for name in ("n_prompt", "n_steps", "reps", "kernel_tokens"):
            value = getattr(self, name)
            if isinstance(value, bool) or not isinstance(value, int) or value < 1:
                raise ValueError(f"{name} must be a whole number >= 1, got {value!r}")


QUICK = BatchPlan("quick", (1, 2, 4, 8, 16, 32, 64), n_prompt=8, n_steps=8, reps=3,
                  fmt="Q8_0", gemm_n=2048)
FULL = BatchPlan("full", (1, 2, 3, 4, 6, 8, 12, 16, 24, 32, 48, 64), n_prompt=64, n_steps=32,
                 reps=5, fmt="Q8_0", gemm_n=3072)


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
        return self.runner.info() | {"backend": "CPU", "offloaded_layers": 0}

    def load(self, path):
        path = check_model(path)
        params = self.llama.llama_model_default_params()
        params.n_gpu_layers = 0
        model = self.llama.llama_model_load_from_file(str(path).encode(), params)
        if not model:
            raise ValueError(f"llama.cpp could not load {path}: "
                             f"{self.runner.logs.text()[-400:]}")
        return model

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
        """llama.cpp's prefill of ``n_prompt`` tokens on the CPU: every weight reused by every
        prompt token, the fastest the machine runs this model's matmul kernels."""
        model = self.load(path)
        try:
            return self.runner.run_test(model, f"pp{n_prompt}", n_prompt, 0, 0, reps)
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
            info = self.runner.model_info(model)
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
    info, points = decoder.measure(path, plan.batches, plan.n_prompt, plan.n_steps, plan.reps,
                                   progress)
    progress(f"measuring llama.cpp's own matmul rate (pp{plan.kernel_tokens} on the same model)")
    pp = decoder.prefill(path, plan.kernel_tokens, plan.reps)
    after = read_bandwidth(threads=decoder.threads)
    progress("done")
    per_token = _prefill_flops_per_token(synthetic_info, info, plan.kernel_tokens)
    return {
        "schema": SCHEMA,
        "timestamp": dt.datetime.now(dt.timezone.utc).isoformat(timespec="seconds"),
        "mode": plan.mode, "plan": asdict(plan),
        "machine": machine.describe(decoder.threads), "runner": decoder.info(),
        "model": {"path": str(path), "synthetic": synthetic_info, **info},
        "probe_before": before.to_dict(), "probe_after": after.to_dict(),
        "bandwidth_bytes_per_s": max(before.best_bytes_per_s, after.best_bytes_per_s),
        "gemm": gemm.to_dict(),
        "kernel": {"rate": pp.to_dict(), "flops_per_token": per_token,
                   "flops_per_s": pp.tokens_per_s * per_token,
                   "kind": f"llama.cpp {plan.fmt} prefill, measured"},
        "flops_per_s": pp.tokens_per_s * per_token,
        "points": points,
    }


def _prefill_flops_per_token(synthetic_info: dict, info: dict, n_tokens: int) -> float:
    """FLOPs per prompt token of a prefill of ``n_tokens`` (weights and causal attention)."""
    from ..roofline import step_work

    m = model_of({"model": {"synthetic": synthetic_info, **info}})
    return step_work(m, prefill=[(0, n_tokens)]).flops / n_tokens


def live(plan: BatchPlan = QUICK, **kwargs) -> dict | None:
    """For a notebook cell: run and save, or say in one sentence why not (None)."""
    from .record import save

    try:
        record = run(plan, progress=session.quiet, **kwargs)
    except MeasurementUnavailable as err:
        print(f"No live batched-decode measurement on this machine: {err}.")
        return None
    record["saved_to"] = str(save(record | {"mode": f"batched-{record['mode']}"}))
    return record


# -- the prediction and the bend ---------------------------------------------------------------

def roof(record: dict):
    """This machine's roof for the kernels that ran: llama.cpp's own prefill rate on the same
    model (its quantized matmuls, every weight reused by every prompt token) and the probe's
    bandwidth. Records from before that measurement fall back to the float32 GEMM peak."""
    from ..roofline import Roof

    kind = record["kernel"]["kind"] if "kernel" in record else record["gemm"]["kind"]
    return Roof(name=machine.label(record["machine"]), flops_per_s=record["flops_per_s"],
                bandwidth_bytes_per_s=record["bandwidth_bytes_per_s"], flops_kind=kind)


def model_of(record: dict):
    """The measured model as :class:`napkin.roofline.Model`: llama.cpp's own byte and
    parameter counts, and the synthetic shape's config for its KV cache (F16 cache)."""
    from ..roofline import Model
    from .synthetic import Shape

    m = record["model"]
    shape = Shape(**m["synthetic"]["shape"])
    return Model(name=f"synthetic {m['synthetic']['format']}", params=m["model_params"],
                 weight_bytes=m["model_bytes"], config=shape.config())


def frame(record: dict | None) -> pd.DataFrame:
    """Measured and predicted tokens/s per batch (empty when there was no measurement)."""
    cols = ["batch", "tokens_per_s", "stddev", "predicted_tokens_per_s",
            "memory_bound_tokens_per_s", "compute_bound_tokens_per_s", "intensity", "bound"]
    if record is None:
        return pd.DataFrame(columns=cols)
    from ..roofline import decode_step

    r, m = roof(record), model_of(record)
    rows = []
    for p in record["points"]:
        s = decode_step(m, r, p["batch"], p["context_tokens"])
        rows.append({"batch": p["batch"], "tokens_per_s": p["tokens_per_s"], "stddev": p["stddev"],
                     "predicted_tokens_per_s": s.tokens_per_s,
                     "memory_bound_tokens_per_s": s.batch * r.bandwidth_bytes_per_s / s.bytes,
                     "compute_bound_tokens_per_s": s.batch * r.flops_per_s / s.flops,
                     "intensity": s.intensity, "bound": s.bound})
    return pd.DataFrame(rows, columns=cols)


def bend_fit(batches, tokens_per_s) -> tuple[float, float]:
    """A curve of the roofline's shape fitted to every measured point: (bend, misfit).

    The roofline's shape is two lines: throughput rising in proportion to batch (one weight
    read per step, whatever the batch), then flat (the arithmetic is the limit). It is fitted
    by least squares on a log scale, so each point's relative miss counts alike; the bend is
    where the two lines meet (``math.inf`` when the best fit never flattens within the batches
    measured), the misfit the typical relative miss, exp(rms log residual) - 1. A large misfit
    says the measured curve does not have the roofline's shape at all.
    """
    df = pd.DataFrame({"batch": list(batches), "tps": list(tokens_per_s)})
    if df.empty or (df["tps"] <= 0).any() or (df["batch"] <= 0).any():
        raise ValueError("need positive batches and throughputs to find the bend")
    df = df.sort_values("batch")
    lb, ly = np.log(df["batch"].to_numpy(float)), np.log(df["tps"].to_numpy(float))

    def rss(lk: float) -> float:
        shape = np.minimum(lb, lk)
        return float(np.sum((ly - np.mean(ly - shape) - shape) ** 2))

    # the optimum is at a measured batch or at a split's own optimum: the rising line through
    # the points below it, the flat one through those above
    candidates = list(lb)
    for j in range(1, len(lb)):
        lk = np.mean(ly[j:]) - np.mean(ly[:j] - lb[:j])
        if lb[j - 1] <= lk <= lb[j]:
            candidates.append(float(lk))
    lk = min(candidates, key=rss)
    misfit = float(np.expm1(np.sqrt(rss(lk) / len(lb))))
    return (math.inf if lk >= lb[-1] else float(np.exp(lk))), misfit


def bend(batches, tokens_per_s) -> float:
    """Where a roofline-shaped curve fitted to all the measured points bends, as a batch
    size (:func:`bend_fit`; ``math.inf``: it never flattens within the batches measured)."""
    return bend_fit(batches, tokens_per_s)[0]


def predicted_bend(record: dict) -> float:
    """The batch at which the prediction turns compute-bound (this machine's ridge)."""
    from ..roofline import batch_to_ridge

    m = model_of(record)
    context = record["points"][0]["context_tokens"]
    return batch_to_ridge(m, roof(record).ridge, context)


def _probe_spread(record: dict) -> float:
    """How much the memory probe's passes varied, before and after the runs together."""
    before, after = record["probe_before"], record["probe_after"]
    return 1 - min(before["worst_bytes_per_s"], after["worst_bytes_per_s"]) / \
        max(before["best_bytes_per_s"], after["best_bytes_per_s"])


def _growth(df: pd.DataFrame, lo: int, hi: int, column: str) -> float:
    at = df.set_index("batch")[column]
    return float(at[hi] / at[lo])


def shape_sentence(record: dict) -> str:
    """The measured curve against the roofline's shape, in growth between measured batches:
    the prediction rises in proportion to batch up to its bend and is flat beyond."""
    df = frame(record)
    predicted = predicted_bend(record)
    first, last = int(df["batch"].min()), int(df["batch"].max())
    below = df[df["batch"] <= predicted]["batch"]
    pivot = int(below.max()) if not below.empty else first
    spans = [(first, pivot), (pivot, last)] if first < pivot < last else [(first, last)]
    said = "; ".join(f"from batch {lo} to {hi} the roofline has it grow "
                     f"{_growth(df, lo, hi, 'predicted_tokens_per_s'):.1f}x and it grew "
                     f"**{_growth(df, lo, hi, 'tokens_per_s'):.1f}x**" for lo, hi in spans)
    return (f"The roofline has throughput rising in proportion to batch up to a batch of "
            f"**{predicted:,.1f}** and flat beyond: {said}.")


def _fit(record: dict) -> tuple[float, float, float]:
    """The fitted bend and misfit (:func:`bend_fit`), and the spread that would explain a
    miss: the typical relative standard error of the measured means."""
    df = frame(record)
    knee, misfit = bend_fit(df["batch"], df["tokens_per_s"])
    reps = len(record["points"][0].get("samples", [])) or 1
    return knee, misfit, float((df["stddev"] / df["tokens_per_s"]).median()) / math.sqrt(reps)


def _fit_words(record: dict) -> str:
    """The fitted bend, how well the roofline's shape fits, and whether the noise explains
    the miss."""
    knee, misfit, error = _fit(record)
    where = ("never flattens within the batches measured" if math.isinf(knee)
             else f"bends at a batch of **{knee:,.1f}**")
    verdict = ("more than the spread of the means (about {:.0%}) explains, so on this machine "
               "the measured curve does not have the roofline's shape" if misfit > error else
               "within the spread of the means (about {:.0%}), so the roofline's shape "
               "describes it").format(error)
    return (f"A curve of the roofline's shape fitted to all the measured points {where}, "
            f"missing them by {misfit:.0%} on average, {verdict}.")


def sentence(record: dict | None) -> str:
    """The live batched run in a few Markdown sentences (numbers computed, not typed)."""
    if record is None:
        return ("This page was built where llama.cpp could not run, so there is no live batch "
                "curve; run the notebook on your machine to draw yours.")
    df = frame(record)
    r = roof(record)
    top = df.loc[df["tokens_per_s"].idxmax()]
    gemm = record["gemm"]["best_flops_per_s"]
    noisiest = df.loc[(df["stddev"] / df["tokens_per_s"]).idxmax()]
    return (f"On the machine that built this page ({machine.label(record['machine'])}) "
            f"llama.cpp prefilled the same model at **{r.flops_per_s / 1e9:,.0f} GFLOP/s** "
            f"({r.flops_kind}; a {record['gemm']['n']}-wide float32 matmul through numpy ran at "
            f"{gemm / 1e9:,.0f}, {_times(gemm, r.flops_per_s)}) and the probe read memory "
            f"at **{r.bandwidth_bytes_per_s / 1e9:,.1f} GB/s** (its best pass, before and after "
            f"the runs; the passes varied by {_probe_spread(record):.0%}), a ridge point of "
            f"**{r.ridge:,.1f} FLOP/byte**. Decoding one sequence gave "
            f"**{df['tokens_per_s'].iloc[0]:,.0f} tokens/s**; the best batch, "
            f"{int(top['batch'])}, gave **{top['tokens_per_s']:,.0f} tokens/s** in all. The "
            f"repetitions' standard deviation reached "
            f"{noisiest['stddev'] / noisiest['tokens_per_s']:.0%} of their mean (at batch "
            f"{int(noisiest['batch'])}; the ± column). " + shape_sentence(record) + " "
            + _fit_words(record))


def who(record: dict | None) -> str:
    """The label a live figure carries."""
    if record is None:
        return "no live measurement (llama.cpp unavailable where this page was built)"
    return f"{machine.label(record['machine'])}, llama.cpp on the CPU"


def efficiency(record: dict) -> dict:
    """How close llama.cpp came to each side of the roof: batch 1 against the memory bound,
    the best batch against the compute bound (one point each, so as noisy as those points)."""
    df = frame(record)
    one = df[df["batch"] == 1].iloc[0]
    best = df.loc[df["tokens_per_s"].idxmax()]
    return {"memory_fraction": one["tokens_per_s"] / one["memory_bound_tokens_per_s"],
            "compute_fraction": best["tokens_per_s"] / best["compute_bound_tokens_per_s"],
            "best_batch": int(best["batch"])}


def bend_sentence(record: dict | None) -> str:
    """The fitted bend against the prediction, and how far each side of the roof was reached."""
    if record is None:
        return "There is no live batch curve on this page."
    knee, misfit, error = _fit(record)
    predicted = predicted_bend(record)
    eff = efficiency(record)
    where = ("never flattens within the batches measured" if math.isinf(knee)
             else f"bends at about **{knee:.1f}**")
    text = (f"Fitted with the roofline's shape, its measured batch curve {where}, where the "
            f"prediction bends at **{predicted:.1f}**"
            + (f"; but that shape misses the measured points by {misfit:.0%} on average, more "
               "than their spread explains, so the bend is a summary of a curve the roofline "
               "does not describe here." if misfit > error else
               ", and the shape fits the points within their spread.")
            + f" At batch 1 llama.cpp reached {eff['memory_fraction']:.0%} of the memory bound, "
            f"and at its best batch ({eff['best_batch']}) {eff['compute_fraction']:.0%} of the "
            f"compute bound.")
    if knee < 0.5 * predicted:
        text += (" Batched decode stops scaling well before the roof of its own kernels: "
                 "llama.cpp's prefill shows this machine can run these matmuls far faster "
                 "than decode at any batch here did, so something the roofline's two "
                 "resources leave out caps it (plausibly the small-batch matmul path, which "
                 "is not the tiled one a long prefill uses).")
    return text


def _times(a: float, b: float) -> str:
    """``a`` relative to ``b`` in words: "2.1x less" or "1.3x more"."""
    return f"{b / a:.1f}x less" if a <= b else f"{a / b:.1f}x more"


def closing_note(record: dict | None, essay_gap: float, reference_ridge: float,
                 reference: str = "an H100",
                 essay_test: str = "gpt-oss-120b, pp2048 against tg32, on DGX Spark") -> str:
    """Chapter 3's closing paragraph: this machine's prefill/decode gap and ridge point, both
    from the batched run itself (its prefill rate and its batch-1 decode), set beside the
    essay's figures for scale only (other models, tests and machines), then its batch curve."""
    if record is None:
        return ("llama.cpp could not run where this page was built, so this machine's gap, "
                "ridge point and batch curve are missing; run the notebooks on yours.")
    r = roof(record)
    pp = record["kernel"]["rate"]
    one = frame(record).set_index("batch")["tokens_per_s"].iloc[0]
    return (f"The machine that built this page ({machine.label(record['machine'])}) prefilled "
            f"**{pp['tokens_per_s'] / one:.1f}x** faster than it decoded in the run above "
            f"({pp['test']} against batch-1 decode of the same model), where the essay has "
            f"{essay_gap:.0f}x ({essay_test}): another model, test and machine, shown for "
            f"scale only. Its ridge point is **{r.ridge:.1f} FLOP/byte** "
            f"({r.flops_kind}, over the probed bandwidth: a rate reached, not a datasheet peak), "
            f"where {reference}'s datasheet gives {reference_ridge:.0f}. " + bend_sentence(record))
