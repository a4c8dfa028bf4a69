"""A deployment serving a traffic, and what users feel: first tokens, gaps, goodput.

:func:`simulate` deals the traffic round robin to identical instances of a
:class:`napkin.deployment.Deployment`, runs each as a
:class:`napkin.serving.engine.ServingEngine` and gathers their logs into a :class:`Run`: per
request (arrival, first token, finish), per step, per gap between two tokens of a stream.
The metrics chapter 7 reads off a run live here too.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np
import pandas as pd

from .. import roofline
from ..deployment import Deployment
from ..units import require_whole
from .engine import Log, ServingEngine
from .traffic import Traffic, deal

POLICIES = ("prefill_first", "chunked")
LABELS = {"prefill_first": "No chunking (prefill first)", "chunked": "Chunked prefill",
          "disaggregated": "Disaggregated"}
STEP_COLUMNS = ["instance", "pool", "start_s", "seconds", "prefill_tokens", "decode_tokens",
                "kv_tokens", "pairs", "chunks", "flops"]


@dataclass
class Run:
    """One simulated deployment serving one traffic: per request, per step, per gap."""

    label: str
    policy: str
    budget: int | None
    instances: str
    requests: pd.DataFrame
    gaps: np.ndarray
    steps: pd.DataFrame
    flops_per_s: float = float("nan")
    n_instances: int = 1
    tokens: pd.DataFrame | None = None
    compositions: list | None = field(default=None, repr=False)

    def utilisation(self, whole_run: bool = False) -> float:
        """Share of the instances' arithmetic (peak FLOP/s x time) the run used. By default
        over the arrival window, from the first arrival to the last, so that the tail in which
        the last requests drain does not dilute it (a step straddling its end counts for the
        part inside); ``whole_run`` from the first arrival to the last finish, for a run whose
        requests all arrive at once."""
        t0 = float(self.requests["arrival_s"].min())
        t1 = float(self.requests["finish_s" if whole_run else "arrival_s"].max())
        if t1 <= t0:
            raise ValueError("every request arrived at once: use whole_run=True")
        start = self.steps["start_s"].to_numpy()
        end = start + self.steps["seconds"].to_numpy()
        inside = np.clip(np.minimum(end, t1) - np.maximum(start, t0), 0, None)
        share = np.divide(inside, end - start, out=np.zeros_like(inside), where=end > start)
        used = float((self.steps["flops"].to_numpy() * share).sum())
        return used / (self.flops_per_s * (t1 - t0) * self.n_instances)

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

    @property
    def duration_s(self) -> float:
        return float(self.requests["finish_s"].max() - self.requests["arrival_s"].min())

    def summary(self, ttft_slo_s: float, tpot_slo_s: float) -> dict:
        """Latency percentiles, throughput, and goodput under a latency target: a request
        meets it when its TTFT and its mean time per later token are both within bounds."""
        ttft, tpot = self.ttft_s, self.tpot_s()
        ok = (ttft <= ttft_slo_s) & (np.nan_to_num(tpot, nan=0.0) <= tpot_slo_s)
        gaps = self.gaps
        return {"label": self.label, "policy": self.policy, "budget": self.budget,
                "instances": self.instances,
                "ttft_p50_s": float(np.percentile(ttft, 50)),
                "ttft_p99_s": float(np.percentile(ttft, 99)),
                "itl_p50_s": float(np.percentile(gaps, 50)) if len(gaps) else np.nan,
                "itl_p99_s": float(np.percentile(gaps, 99)) if len(gaps) else np.nan,
                "itl_max_s": float(gaps.max()) if len(gaps) else np.nan,
                "tpot_p50_s": float(np.nanpercentile(tpot, 50)),
                "tpot_p99_s": float(np.nanpercentile(tpot, 99)),
                "throughput_tok_per_s": float(self.requests["output"].sum() / self.duration_s),
                "attainment": float(ok.mean()),
                "goodput_req_per_s": float(ok.sum() / self.duration_s),
                "utilisation": self.utilisation(),
                "requests": len(self.requests)}


def assemble(tr: Traffic, logs: list[tuple[np.ndarray, str, Log]], label: str, policy: str,
             budget: int | None, instances: str, d: Deployment, first_s=None,
             finish_s=None) -> Run:
    """One :class:`Run` from the logs of every instance: ``logs`` holds, per instance, the
    indices of the requests it served, its pool (``colocated``, ``prefill`` or ``decode``)
    and its log."""
    n = len(tr)
    first = np.full(n, np.nan) if first_s is None else first_s
    finish = np.full(n, np.nan) if finish_s is None else finish_s
    where = np.full(n, "", dtype=object)
    steps, gaps, emits, comps = [], [], [], []
    for k, (idx, pool, log) in enumerate(logs):
        if pool != "decode":
            first[idx] = log.first_s
        if pool != "prefill":
            finish[idx] = log.finish_s
        where[idx] = (where[idx] + " " if pool == "decode" else "") + f"{pool} {k}"
        steps += [(k, pool, *s) for s in log.steps]
        gaps += log.gaps
        if log.emits is not None:
            emits += [(t, idx[local]) for t, local in log.emits]
        if log.compositions is not None:
            comps += log.compositions
    requests = pd.DataFrame({"arrival_s": tr.arrival_s, "prompt": tr.prompt, "output": tr.output,
                             "first_token_s": first, "finish_s": finish,
                             "instance": [w.strip() for w in where]})
    tokens = None
    if emits:
        t = np.concatenate([np.full(len(ids), t) for t, ids in emits])
        ids = np.concatenate([ids for _, ids in emits])
        tokens = pd.DataFrame({"request": ids, "time_s": t}).sort_values(
            ["request", "time_s"], kind="stable").reset_index(drop=True)
        tokens["token"] = tokens.groupby("request").cumcount() + 1
    return Run(label=label, policy=policy, budget=budget, instances=instances,
               requests=requests, gaps=np.concatenate(gaps) if gaps else np.zeros(0),
               steps=pd.DataFrame(steps, columns=STEP_COLUMNS), tokens=tokens,
               flops_per_s=d.roof.flops_per_s, n_instances=len(logs),
               compositions=comps or None)


def budget_or_longest(budget, tr: Traffic) -> int:
    """The token budget, or (``None``) the longest prompt, so that any prompt runs whole."""
    return int(tr.prompt.max()) if budget is None else require_whole("budget", budget, 1)


def simulate(tr: Traffic, d: Deployment, policy: str, budget: int | None = None, *,
             instances: int = 1, record: bool = False, compose: bool = False) -> Run:
    """Serve ``tr`` on ``instances`` copies of ``d``, each scheduling with ``policy``.

    ``budget``: tokens per step (``max_num_batched_tokens``); for ``"prefill_first"`` the
    default is the longest prompt, so that any prompt runs in one step. ``record`` keeps every
    token's emission time (for timelines); ``compose`` every step's chunks and contexts (for
    checking the costs against :func:`napkin.roofline.mixed_step`).
    """
    if policy not in POLICIES:
        raise ValueError(f"unknown policy {policy!r}; known: {', '.join(POLICIES)} "
                         "(and disaggregate() for separate pools)")
    if policy == "chunked" and budget is None:
        raise ValueError("chunked prefill needs a token budget (max_num_batched_tokens)")
    b = budget_or_longest(budget, tr)
    k = require_whole("instances", instances, 1)
    cost = roofline.step_cost(d.model, d.roof)
    logs = []
    for idx in deal(len(tr), k):
        engine = ServingEngine(tr.arrival_s[idx], tr.prompt[idx], tr.output[idx], cost,
                               d.kv_capacity_tokens, policy, b, record=record, compose=compose)
        logs.append((idx, "colocated", engine.run()))
    label = LABELS[policy] + (f", budget {b:,}" if policy == "chunked" else "")
    return assemble(tr, logs, label, policy, b, f"{k} colocated", d)


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
        if run.tokens is None:
            raise ValueError(f"{label}: simulate with record=True to draw its timeline")
        tk = run.tokens[run.tokens["request"].isin(chosen) &
                        run.tokens["time_s"].between(t0, t1)]
        rows.append(tk.assign(run=label))
    df = pd.concat(rows, ignore_index=True)
    df["gap_s"] = df.groupby(["run", "request"])["time_s"].diff()
    return df
