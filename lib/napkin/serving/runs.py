"""A deployment serving a traffic, and what users feel: first tokens, gaps, goodput.

:func:`simulate` deals the traffic round robin to identical instances of a
:class:`napkin.deployment.Deployment`, runs each as a
:class:`napkin.serving.engine.ServingEngine` timed by the calibrated step
(:class:`napkin.predict.totals.StepModel`) and gathers their logs into a :class:`Run`: per
request (arrival, first token, finish), per step, per gap between two tokens of a stream.

A sweep runs many simulations: :func:`run_jobs` steps all their engines side by side (one
vectorised step-model call per round), each simulation written as a *job*, a generator
that yields the engines it needs run and returns its :class:`Run` (:func:`colocated`, and
:func:`napkin.serving.disagg.disaggregated`).

A run starts empty and ends draining, and neither is the steady state a server lives in:
:meth:`Run.steady` leaves the first and last requests out of what is measured (they are
still served, and load the engine). The metrics chapter 7 reads off a run live here too.
"""

from __future__ import annotations

import gc
import math
from dataclasses import dataclass, field, replace

import numpy as np
import pandas as pd

from ..deployment import Deployment
from ..units import require_whole
from ..predict.totals import StepModel, step_model
from .engine import Log, ServingEngine, run_together
from .traffic import Traffic, deal

__all__ = ["assemble", "budget_or_longest", "colocated", "LABELS", "longest_freeze", "max_rate",
           "POLICIES", "Run", "run_jobs", "simulate", "stall_window", "STEP_COLUMNS", "timelines"]

POLICIES = ("prefill_first", "chunked")
LABELS = {"prefill_first": "No chunking (prefill first)", "chunked": "Chunked prefill",
          "disaggregated": "Disaggregated"}
STEP_COLUMNS = ["instance", "pool", *ServingEngine.STEP_FIELDS]


@dataclass
class Run:
    """One simulated deployment serving one traffic: per request, per step, per gap.

    ``measured``: the requests whose latencies count (all of them, until :meth:`steady`
    leaves out the start and the end)."""

    label: str
    policy: str
    budget: int | None
    instances: str
    requests: pd.DataFrame
    gaps: np.ndarray
    gap_requests: np.ndarray
    steps: pd.DataFrame
    n_instances: int = 1
    logs: list = field(default_factory=list, repr=False)
    compositions: list | None = field(default=None, repr=False)
    measured: np.ndarray | None = None

    @property
    def tokens(self) -> pd.DataFrame:
        """Every token of every stream that decoded: request, time, and which token."""
        rows = [(idx[r], t) for idx, _, log in self.logs for r, t in log.streams()]
        if not rows:
            return pd.DataFrame({"request": [], "time_s": [], "token": []})
        return pd.DataFrame({
            "request": np.concatenate([np.full(len(t), r) for r, t in rows]),
            "time_s": np.concatenate([t for _, t in rows]),
            "token": np.concatenate([np.arange(1, len(t) + 1) for _, t in rows])})

    def steady(self, drop_first: int, drop_last: int) -> "Run":
        """The same run, measuring only the requests between the first ``drop_first`` and
        the last ``drop_last`` to arrive: the engine warming up from empty and draining
        after the last arrival are not the steady state a server runs in."""
        n = len(self.requests)
        first = require_whole("drop_first", drop_first, 0)
        last = require_whole("drop_last", drop_last, 0)
        if first + last >= n:
            raise ValueError(f"dropping {first} + {last} of {n} requests leaves none to "
                             "measure; simulate more requests")
        order = np.argsort(self.requests["arrival_s"].to_numpy(), kind="stable")
        keep = np.zeros(n, dtype=bool)
        keep[order[first:n - last]] = True
        return replace(self, measured=keep)

    @property
    def kept(self) -> np.ndarray:
        return np.ones(len(self.requests), dtype=bool) if self.measured is None else \
            self.measured

    @property
    def window_s(self) -> tuple[float, float]:
        """From the first measured arrival to the last."""
        t = self.requests["arrival_s"].to_numpy()[self.kept]
        return float(t.min()), float(t.max())

    @property
    def ttft_s(self) -> np.ndarray:
        return (self.requests["first_token_s"] - self.requests["arrival_s"]).to_numpy()

    def tpot_s(self) -> np.ndarray:
        """Each request's mean time per output token after the first (NaN for one token)."""
        r = self.requests
        spread = (r["finish_s"] - r["first_token_s"]).to_numpy()
        steps = (r["output"] - 1).to_numpy()
        with np.errstate(invalid="ignore", divide="ignore"):
            return np.where(steps > 0, spread / np.maximum(steps, 1), np.nan)

    def measured_gaps(self) -> np.ndarray:
        """Gaps between two tokens of the measured requests' streams."""
        return self.gaps[self.kept[self.gap_requests]] if len(self.gaps) else self.gaps

    @property
    def duration_s(self) -> float:
        return float(self.requests["finish_s"].max() - self.requests["arrival_s"].min())

    def met(self, ttft_slo_s: float, tpot_slo_s: float) -> np.ndarray:
        """Whether each request met both targets: its first token within ``ttft_slo_s`` and
        its mean time per later token within ``tpot_slo_s``."""
        return (self.ttft_s <= ttft_slo_s) & (np.nan_to_num(self.tpot_s(), nan=0.0)
                                              <= tpot_slo_s)

    def summary(self, ttft_slo_s: float, tpot_slo_s: float) -> dict:
        """Latency percentiles and the share of measured requests that meet the latency
        target (attainment), over the measured requests and their gaps."""
        keep = self.kept
        ttft, tpot = self.ttft_s[keep], self.tpot_s()[keep]
        ok = self.met(ttft_slo_s, tpot_slo_s)[keep]
        gaps = self.measured_gaps()
        t0, t1 = self.window_s
        return {"label": self.label, "policy": self.policy, "budget": self.budget,
                "instances": self.instances,
                "ttft_p50_s": float(np.percentile(ttft, 50)),
                "ttft_p99_s": float(np.percentile(ttft, 99)),
                "itl_p50_s": float(np.percentile(gaps, 50)) if len(gaps) else np.nan,
                "itl_p99_s": float(np.percentile(gaps, 99)) if len(gaps) else np.nan,
                "itl_max_s": float(gaps.max()) if len(gaps) else np.nan,
                "tpot_p50_s": float(np.nanpercentile(tpot, 50)),
                "tpot_p99_s": float(np.nanpercentile(tpot, 99)),
                "attainment": float(ok.mean()),
                "offered_req_per_s": float((keep.sum() - 1) / (t1 - t0)) if t1 > t0
                else math.inf,
                "requests": int(keep.sum())}

    def saturated(self, drop_first: int, drop_last: int) -> dict:
        """What an engine with an endless queue serves: for a run whose requests all wait
        from the start, the requests, tokens and output tokens per second between the
        ``drop_first``-th first token and the ``drop_last``-th from the end, while the
        queue still holds work (the start, when nothing decodes yet, and the drain, when
        the last requests decode alone, are left out). Needs the run's steps."""
        n = len(self.requests)
        first = require_whole("drop_first", drop_first, 0)
        last = require_whole("drop_last", drop_last, 0)
        if first + last + 2 > n:
            raise ValueError(f"dropping {first} + {last} of {n} requests leaves too few to "
                             "measure; simulate more requests")
        if self.steps.empty:
            raise ValueError("the run kept no steps; simulate with keep_steps=True")
        firsts = np.sort(self.requests["first_token_s"].to_numpy())
        t0, t1 = float(firsts[first]), float(firsts[n - last - 1])
        s = self.steps
        inside = (s["start_s"] >= t0) & (s["start_s"] + s["seconds"] <= t1)
        span = t1 - t0
        emitted = s.loc[inside, "decode_tokens"].sum() + (n - first - last - 1)
        return {"requests_per_s": (n - first - last - 1) / span,
                "tokens_per_s": float((s.loc[inside, "prefill_tokens"] +
                                       s.loc[inside, "decode_tokens"]).sum() / span),
                "output_tokens_per_s": float(emitted / span),
                "decodes_per_step": float(s.loc[inside, "decode_tokens"].mean()),
                "window_s": span}


def assemble(tr: Traffic, logs: list[tuple[np.ndarray, str, Log]], label: str, policy: str,
             budget: int | None, instances: str, first_s=None, finish_s=None) -> Run:
    """One :class:`Run` from the logs of every instance: ``logs`` holds, per instance, the
    indices of the requests it served, its pool (``colocated``, ``prefill`` or ``decode``)
    and its log."""
    n = len(tr)
    first = np.full(n, np.nan) if first_s is None else first_s
    finish = np.full(n, np.nan) if finish_s is None else finish_s
    where = np.full(n, "", dtype=object)
    steps, gaps, gap_ids, comps = [], [], [], []
    for k, (idx, pool, log) in enumerate(logs):
        if pool != "decode":
            first[idx] = log.first_s
        if pool != "prefill":
            finish[idx] = log.finish_s
        where[idx] = (where[idx] + " " if pool == "decode" else "") + f"{pool} {k}"
        if len(log.steps):
            table = pd.DataFrame(log.steps, columns=STEP_COLUMNS[2:])
            steps.append(table.assign(instance=k, pool=pool))
        g, local = log.gaps()
        gaps.append(g)
        gap_ids.append(idx[local])
        if log.compositions is not None:
            comps += log.compositions
    requests = pd.DataFrame({"arrival_s": tr.arrival_s, "prompt": tr.prompt, "output": tr.output,
                             "first_token_s": first, "finish_s": finish,
                             "instance": [w.strip() for w in where]})
    return Run(label=label, policy=policy, budget=budget, instances=instances,
               requests=requests, gaps=np.concatenate(gaps) if gaps else np.zeros(0),
               gap_requests=np.concatenate(gap_ids) if gap_ids else np.zeros(0, dtype=int),
               steps=pd.concat(steps, ignore_index=True)[STEP_COLUMNS] if steps else
               pd.DataFrame(columns=STEP_COLUMNS), n_instances=len(logs),
               logs=logs, compositions=comps or None)


def budget_or_longest(budget, tr: Traffic) -> int:
    """The token budget, or (``None``) the longest prompt, so that any prompt runs whole."""
    return int(tr.prompt.max()) if budget is None else require_whole("budget", budget, 1)


def run_jobs(jobs, finish=None) -> list:
    """Run simulation jobs side by side and return their runs, in order. A job is a
    generator that yields lists of engines (each list run to completion, together with
    every other job's, before the job goes on) and returns a :class:`Run`. ``finish``, a
    function of a run, is applied to each as soon as it is done (a sweep keeps a summary,
    not the run).

    The engines allocate millions of small objects that hold no reference cycles, so the
    cycle collector is paused while they run (its passes over them cost much and find
    nothing) and resumed after."""
    jobs = list(jobs)
    results: list = [None] * len(jobs)
    collecting = gc.isenabled()
    gc.disable()
    try:
        waiting = {i: next(job) for i, job in enumerate(jobs)}
        while waiting:
            run_together([e for engines in waiting.values() for e in engines])
            after = {}
            for i in waiting:
                try:
                    after[i] = jobs[i].send(None)
                except StopIteration as done:
                    results[i] = done.value if finish is None else finish(done.value)
            waiting = after
    finally:
        if collecting:
            gc.enable()
    return results


def colocated(tr: Traffic, d: Deployment, policy: str, budget: int | None = None, *,
              instances: int = 1, compose: bool = False, keep_steps: bool = True,
              model: StepModel | None = None):
    """The job of :func:`simulate` (for :func:`run_jobs`); ``keep_steps=False`` records
    no steps (latencies only)."""
    if policy not in POLICIES:
        raise ValueError(f"unknown policy {policy!r}; known: {', '.join(POLICIES)} "
                         "(and disaggregate() for separate pools)")
    if policy == "chunked" and budget is None:
        raise ValueError("chunked prefill needs a token budget (max_num_batched_tokens)")
    b = budget_or_longest(budget, tr)
    k = require_whole("instances", instances, 1)
    cost = step_model(d) if model is None else model
    parts = deal(len(tr), k)
    engines = [ServingEngine(tr.arrival_s[idx], tr.prompt[idx], tr.output[idx], cost,
                             d.kv_capacity_tokens, policy, b, keep_steps=keep_steps,
                             compose=compose)
               for idx in parts]
    yield engines
    logs = [(idx, "colocated", e.log()) for idx, e in zip(parts, engines)]
    label = LABELS[policy] + (f", budget {b:,}" if policy == "chunked" else "")
    return assemble(tr, logs, label, policy, b, f"{k} colocated")


def simulate(tr: Traffic, d: Deployment, policy: str, budget: int | None = None, *,
             instances: int = 1, compose: bool = False,
             model: StepModel | None = None) -> Run:
    """Serve ``tr`` on ``instances`` copies of ``d``, each scheduling with ``policy``.

    ``budget``: tokens per step (``max_num_batched_tokens``); for ``"prefill_first"`` the
    default is the longest prompt, so that any prompt runs in one step. ``compose`` keeps
    every step's chunks and contexts (for
    checking the costs against :func:`napkin.predict.step.cost`). ``model``: the step model
    (default: ``d``'s, calibrated, :func:`napkin.predict.totals.step_model`).
    """
    return run_jobs([colocated(tr, d, policy, budget, instances=instances, compose=compose,
                               model=model)])[0]


# -- what the chapter reads off runs ----------------------------------------------------------

def max_rate(sweep: pd.DataFrame, config: str, attainment: float) -> float:
    """The highest arrival rate at which ``config`` still meets the target for at least
    ``attainment`` of requests (DistServe's goodput), by linear interpolation on the sweep;
    NaN when even the lowest rate misses."""
    rows = sweep[sweep["config"] == config].sort_values("rate_per_s")
    x, y = rows["rate_per_s"].to_numpy(), rows["attainment"].to_numpy()
    if not len(x) or y[0] < attainment:
        return float("nan")
    below = np.flatnonzero(y < attainment)
    if not len(below):
        return float(x[-1])
    i = below[0]
    return float(x[i - 1] + (y[i - 1] - attainment) / (y[i - 1] - y[i]) * (x[i] - x[i - 1]))


def stall_window(run: Run, min_prompt: int) -> tuple[int, float, float]:
    """The first request whose prompt has at least ``min_prompt`` tokens: its id, and when
    its prefill began and ended (the step that emitted its first token)."""
    r = run.requests
    long = r.index[r["prompt"] >= min_prompt]
    if not len(long):
        raise ValueError(f"no request has a prompt of {min_prompt} tokens or more")
    rid = int(long[0])
    return rid, float(r.loc[rid, "arrival_s"]), float(r.loc[rid, "first_token_s"])


def longest_freeze(run: Run, start: float, end: float) -> tuple[float, float]:
    """The longest time between two consecutive decode steps of one instance that overlaps
    ``start``..``end``: when every stream on that instance stood still."""
    best = (start, start)
    for _, s in run.steps.groupby("instance"):
        ends = (s["start_s"] + s["seconds"])[s["decode_tokens"] > 0].to_numpy()
        for a, b in zip(ends[:-1], ends[1:]):
            if a <= end and b >= start and b - a > best[1] - best[0]:
                best = (float(a), float(b))
    return best


def timelines(runs: dict[str, Run], t0: float, t1: float, n_requests: int = 8) -> pd.DataFrame:
    """Token emissions between ``t0`` and ``t1`` of the requests decoding throughout that
    window (the same requests for every run), for drawing one lane per request and run."""
    first = next(iter(runs.values()))
    r = first.requests
    busy = r.index[(r["first_token_s"] < t0) & (r["finish_s"] > t1)]
    if not len(busy):
        raise ValueError("no request decodes through the whole window")
    chosen = list(busy[:n_requests])
    rows = []
    for label, run in runs.items():
        tokens = run.tokens
        tk = tokens[tokens["request"].isin(chosen) & tokens["time_s"].between(t0, t1)]
        rows.append(tk.assign(run=label))
    df = pd.concat(rows, ignore_index=True)
    df["gap_s"] = df.groupby(["run", "request"])["time_s"].diff()
    return df
