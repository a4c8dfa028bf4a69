"""Prefill and decode on one machine or two: a step-level simulation of a serving engine.

Requests arrive over time (a Poisson process), each with a prompt and an output length. An
engine runs forward passes ("steps") back to back; what goes into each step is the
scheduler's choice, and what a step costs is the roofline of its contents
(:class:`napkin.roofline.StepCost`): the slower of its FLOPs and the bytes it reads (the
weights once, plus every cached token its queries attend to). Three ways to share the work:

- ``"prefill_first"``: no chunking. Whenever a waiting request fits in memory, the next step
  runs whole prompts, first come first served, up to the token budget (at least one), and
  no decode; otherwise a step decodes every running sequence. A long prompt freezes every
  stream for as long as its prefill takes (vLLM's V0 default without chunked prefill).
- ``"chunked"``: vLLM V1's scheduler (Sarathi-Serve's stall-free batching). Every step takes
  one token of each running decode first, then fills what is left of the token budget
  (``max_num_batched_tokens``) with prefill: the unfinished prompts already started, then
  waiting requests, cut into chunks where they do not fit.
- disaggregation (:func:`disaggregate`): prefill instances only prefill (their last prefill
  step emits the first token), the cache then crosses a link of a given bandwidth, and decode
  instances only decode.

Memory: a request is admitted when the cache of its whole final length fits beside what the
running requests hold (no preemption). Each instance serves the requests dealt to it in turn
(round robin in arrival order). All randomness is seeded.
"""

from __future__ import annotations

import math
from collections import deque
from dataclasses import dataclass, field

import numpy as np
import pandas as pd

from . import paging, roofline, tables
from .units import GB, require_positive

SEED = 7
POLICIES = ("prefill_first", "chunked")
LABELS = {"prefill_first": "No chunking (prefill first)", "chunked": "Chunked prefill",
          "disaggregated": "Disaggregated"}
_MODES = ("prefill_first", "chunked", "prefill_only", "decode_only")


# -- the papers and docs this chapter checks against -------------------------------------------

def claim(name: str, end: str = "low") -> float:
    """A number from ``data/serving_papers_claims.csv`` (``end="high"``: top of a range)."""
    return paging.paper_claim(name, end)


def quote(name: str) -> str:
    return paging.paper_quote(name)


def claim_source(name: str) -> str:
    df = paging.paper_claims()
    return str(df[df["claim"] == name]["source_url"].iloc[0])


# -- what serves ------------------------------------------------------------------------------

@dataclass(frozen=True)
class Server:
    """One serving instance: a model on a roof, with the KV memory the weights leave."""

    name: str
    model: roofline.Model
    roof: roofline.Roof
    kv_capacity_tokens: int

    def __post_init__(self):
        if isinstance(self.kv_capacity_tokens, bool) or int(self.kv_capacity_tokens) < 1:
            raise ValueError(f"kv_capacity_tokens must be at least 1, got "
                             f"{self.kv_capacity_tokens!r}: the weights leave no room for a cache")

    @property
    def cost(self) -> roofline.StepCost:
        return roofline.step_cost(self.model, self.roof)


def llama_server(chip: str = "H100 SXM", gpus: int = 4, bytes_per_weight: float = 2.0,
                 overhead_share: float | None = None) -> Server:
    """Llama 3.3 70B (the essay's model) on ``gpus`` chips working as one (ideal tensor
    parallelism), at 16-bit weights unless told otherwise. The KV memory is what the weights
    leave after the paging chapter's overhead share (the vLLM paper's Table 1 accounting)."""
    model = roofline.llama_3_3_70b(bytes_per_weight=bytes_per_weight)
    roof = roofline.chip_roof(chip).times(gpus)
    share = paging.paper_overhead_share() if overhead_share is None else \
        require_positive("overhead_share", overhead_share, allow_zero=True)
    free = roof.capacity_bytes * (1 - share) - model.weight_bytes
    if free <= 0:
        raise ValueError(f"{model.name} ({model.weight_bytes / GB:.0f} GB of weights) leaves no "
                         f"room for a cache on {roof.name} ({roof.capacity_bytes / GB:.0f} GB)")
    return Server(name=f"{model.name} on {roof.name}", model=model, roof=roof,
                  kv_capacity_tokens=int(free // model.kv_bytes_per_token()))


# -- the requests -----------------------------------------------------------------------------

@dataclass(frozen=True)
class Traffic:
    """Requests: prompt and output lengths (tokens) and arrival times (seconds), in order."""

    prompt: np.ndarray
    output: np.ndarray
    arrival_s: np.ndarray

    def __len__(self) -> int:
        return len(self.prompt)

    @property
    def rate_per_s(self) -> float:
        return float(len(self) / self.arrival_s[-1]) if self.arrival_s[-1] > 0 else math.inf

    def stats(self) -> dict:
        """What the sampled traffic actually is (the lognormal's target means are not what a
        finite, cut sample realises): means, medians, 99th percentiles and the longest."""
        out = {"requests": len(self), "rate_per_s": self.rate_per_s}
        for what, x in (("prompt", self.prompt), ("output", self.output)):
            out |= {f"{what}_mean_tokens": float(x.mean()),
                    f"{what}_median_tokens": float(np.median(x)),
                    f"{what}_p99_tokens": float(np.percentile(x, 99)),
                    f"{what}_max_tokens": int(x.max())}
        return out


def traffic(rate_per_s: float, n: int, prompt_mean_tokens: float, output_mean_tokens: float,
            *, sigma: float = paging.DEFAULT_SIGMA, max_len: int = 32768,
            seed: int = SEED) -> Traffic:
    """``n`` requests arriving at ``rate_per_s`` on average (Poisson), with lognormal prompt and
    output lengths of the given means (chapter 6's sampler, cut to ``max_len`` tokens)."""
    rate = require_positive("rate_per_s", rate_per_s)
    wl = paging.Workload(name="traffic",
                         input_mean_tokens=require_positive("prompt_mean_tokens",
                                                            prompt_mean_tokens),
                         output_mean_tokens=require_positive("output_mean_tokens",
                                                             output_mean_tokens),
                         sigma=require_positive("sigma", sigma, allow_zero=True))
    lengths = paging.sample_requests(wl, n, max_len, seed)
    gaps = np.random.default_rng([seed, 1]).exponential(1 / rate, len(lengths))
    return Traffic(prompt=lengths.prompt, output=lengths.output, arrival_s=np.cumsum(gaps))


def _deal(n: int, k: int) -> list[np.ndarray]:
    """Round robin: request i goes to instance i mod k."""
    return [np.arange(i, n, k) for i in range(k)]


# -- one engine -------------------------------------------------------------------------------

@dataclass
class _Log:
    first_s: np.ndarray
    finish_s: np.ndarray
    gaps: list
    steps: list
    emits: list | None
    compositions: list | None


def _engine(arrival_s, prompt, output, cost: roofline.StepCost, capacity: int, mode: str,
            budget: int, first_s=None, record: bool = False, compose: bool = False) -> _Log:
    """Run one instance until every request it was given is done. Times in seconds.

    ``decode_only`` requests arrive already prefilled, with their first token emitted at
    ``first_s``; ``prefill_only`` requests leave after their first token.
    """
    n = len(prompt)
    prompt = np.asarray(prompt, dtype=np.int64)
    output = np.asarray(output, dtype=np.int64)
    arrival = np.asarray(arrival_s, dtype=float)
    order = np.argsort(arrival, kind="stable")
    decode_only, prefill_only = mode == "decode_only", mode == "prefill_only"
    need = prompt if prefill_only else prompt + output
    if need.max(initial=0) > capacity:
        r = int(need.argmax())
        raise ValueError(f"request of {int(prompt[r])} + {int(output[r])} tokens cannot fit in "
                         f"{capacity} tokens of KV memory")
    prefilled = prompt.copy() if decode_only else np.zeros(n, dtype=np.int64)
    generated = np.ones(n, dtype=np.int64) if decode_only else np.zeros(n, dtype=np.int64)
    first = np.array(first_s, dtype=float) if decode_only else np.full(n, np.nan)
    last = first.copy()
    finish = np.full(n, np.nan)
    queue: deque = deque()
    prefilling: list[int] = []
    decoding: list[int] = []
    dec_idx = np.zeros(0, dtype=np.int64)
    dec_ctx = 0  # cached tokens over all decoding sequences, before the step
    held = 0
    t = 0.0
    nxt = done = 0
    gaps, steps = [], []
    emits = [] if record else None
    compositions = [] if compose else None

    def fits(r: int) -> bool:
        return held + need[r] <= capacity

    while done < n:
        while nxt < n and arrival[order[nxt]] <= t:
            queue.append(int(order[nxt]))
            nxt += 1
        if not queue and not prefilling and not decoding:
            t = float(arrival[order[nxt]])
            continue
        chunks: list[tuple[int, int, int]] = []  # (request, start, tokens)
        decode_now = False
        if mode == "chunked":
            left = budget - len(decoding)
            if left < 0:
                raise ValueError(f"budget {budget} is smaller than the {len(decoding)} running "
                                 "decodes; raise max_num_batched_tokens")
            decode_now = bool(decoding)
            for r in prefilling:
                if left == 0:
                    break
                take = min(left, int(prompt[r] - prefilled[r]))
                chunks.append((r, int(prefilled[r]), take))
                left -= take
            while left > 0 and queue and fits(queue[0]):
                r = queue.popleft()
                held += need[r]
                prefilling.append(r)
                take = min(left, int(prompt[r]))
                chunks.append((r, 0, take))
                left -= take
        elif mode in ("prefill_first", "prefill_only"):
            total = 0
            while queue and fits(queue[0]) and (not chunks or total + prompt[queue[0]] <= budget):
                r = queue.popleft()
                held += need[r]
                chunks.append((r, 0, int(prompt[r])))
                total += int(prompt[r])
            decode_now = not chunks and bool(decoding)
        else:  # decode_only
            while queue and fits(queue[0]):
                r = queue.popleft()
                held += need[r]
                decoding.append(r)
                dec_ctx += int(prompt[r] + generated[r] - 1)
                dec_idx = np.array(decoding, dtype=np.int64)
            decode_now = bool(decoding)
        if not chunks and not decode_now:  # everything waiting is blocked on memory
            if nxt >= n:
                raise AssertionError("no request can run and none will arrive")
            t = max(t, float(arrival[order[nxt]]))
            continue

        n_dec = len(decoding) if decode_now else 0
        pre_tokens = sum(c[2] for c in chunks)
        kv_tokens = (dec_ctx if decode_now else 0) + sum(c[1] for c in chunks)
        pairs = (dec_ctx + n_dec if decode_now else 0) + \
            sum(c[2] * c[1] + c[2] * (c[2] + 1) // 2 for c in chunks)
        seconds = float(cost.seconds(pre_tokens + n_dec, kv_tokens, pairs))
        flops = float(cost.flops(pre_tokens + n_dec, pairs))
        steps.append((t, seconds, pre_tokens, n_dec, kv_tokens, pairs, len(chunks), flops))
        if compose:
            compositions.append(([(s, k) for _, s, k in chunks],
                                 [int(prompt[r] + generated[r] - 1) for r in decoding]
                                 if decode_now else []))
        t += seconds

        # decodes: one token each
        if decode_now:
            gaps.append(t - last[dec_idx])
            last[dec_idx] = t
            generated[dec_idx] += 1
            dec_ctx += n_dec
            if record:
                emits.append((t, dec_idx.copy()))
            ended = dec_idx[generated[dec_idx] >= output[dec_idx]]
            if len(ended):
                finish[ended] = t
                done += len(ended)
                gone = set(ended.tolist())
                for r in ended:
                    held -= need[r]
                    dec_ctx -= int(prompt[r] + generated[r] - 1)
                decoding = [r for r in decoding if r not in gone]
                dec_idx = np.array(decoding, dtype=np.int64)
        # prefill chunks: a prompt's last chunk emits its first token
        joined = False
        for r, start, take in chunks:
            prefilled[r] = start + take
            if prefilled[r] < prompt[r]:
                continue
            if r in prefilling:
                prefilling.remove(r)
            first[r] = last[r] = t
            generated[r] = 1
            if record:
                emits.append((t, np.array([r])))
            if prefill_only or output[r] == 1:
                finish[r] = t
                held -= need[r]
                done += 1
            else:
                decoding.append(r)
                dec_ctx += int(prompt[r])
                joined = True
        if joined:
            dec_idx = np.array(decoding, dtype=np.int64)
    return _Log(first_s=first, finish_s=finish, gaps=gaps, steps=steps, emits=emits,
                compositions=compositions)


# -- runs -------------------------------------------------------------------------------------

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
        return {"label": self.label, "policy": self.policy, "budget": self.budget,
                "instances": self.instances,
                "ttft_p50_s": float(np.percentile(ttft, 50)),
                "ttft_p99_s": float(np.percentile(ttft, 99)),
                "itl_p50_s": float(np.percentile(self.gaps, 50)) if len(self.gaps) else np.nan,
                "itl_p99_s": float(np.percentile(self.gaps, 99)) if len(self.gaps) else np.nan,
                "itl_max_s": float(self.gaps.max()) if len(self.gaps) else np.nan,
                "tpot_p50_s": float(np.nanpercentile(tpot, 50)),
                "tpot_p99_s": float(np.nanpercentile(tpot, 99)),
                "throughput_tok_per_s": float(self.requests["output"].sum() / self.duration_s),
                "attainment": float(ok.mean()),
                "goodput_req_per_s": float(ok.sum() / self.duration_s),
                "utilisation": self.utilisation(),
                "requests": len(self.requests)}


def _run(tr: Traffic, logs: list[tuple[np.ndarray, str, _Log]], label: str, policy: str,
         budget: int | None, instances: str, server: Server, first_s=None,
         finish_s=None) -> Run:
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
               flops_per_s=server.roof.flops_per_s, n_instances=len(logs),
               compositions=comps or None)


def _budget(budget, tr: Traffic) -> int:
    if budget is None:
        return int(tr.prompt.max())
    if isinstance(budget, bool) or not isinstance(budget, (int, np.integer)) or budget < 1:
        raise ValueError(f"budget must be a whole number of tokens >= 1, got {budget!r}")
    return int(budget)


def simulate(tr: Traffic, server: Server, policy: str, budget: int | None = None, *,
             instances: int = 1, record: bool = False, compose: bool = False) -> Run:
    """Serve ``tr`` on ``instances`` copies of ``server``, each scheduling with ``policy``.

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
    b = _budget(budget, tr)
    k = _instances("instances", instances)
    cost = server.cost
    logs = []
    for i, idx in enumerate(_deal(len(tr), k)):
        logs.append((idx, "colocated", _engine(tr.arrival_s[idx], tr.prompt[idx],
                                               tr.output[idx], cost,
                                               server.kv_capacity_tokens, policy, b,
                                               record=record, compose=compose)))
    label = LABELS[policy] + (f", budget {b:,}" if policy == "chunked" else "")
    return _run(tr, logs, label, policy, b, f"{k} colocated", server)


def _instances(name: str, value) -> int:
    if isinstance(value, bool) or not isinstance(value, (int, np.integer)) or value < 1:
        raise ValueError(f"{name} must be a whole number >= 1, got {value!r}")
    return int(value)


def transfer_seconds(server: Server, prompt_tokens, link_bytes_per_s: float) -> np.ndarray:
    """Seconds to move a prompt's KV cache over a link of the given bandwidth."""
    bw = require_positive("link_bytes_per_s", link_bytes_per_s)
    return np.asarray(prompt_tokens, dtype=float) * server.model.kv_bytes_per_token() / bw


def disaggregate(tr: Traffic, server: Server, prefill: int, decode: int,
                 link_bytes_per_s: float, budget: int | None = None, *,
                 record: bool = False) -> Run:
    """Serve ``tr`` with ``prefill`` prefill-only and ``decode`` decode-only instances.

    Each prefill instance sends finished caches one at a time over its own link of
    ``link_bytes_per_s``; a request joins a decode instance (round robin, in the order the
    caches arrive) when its cache has arrived.
    """
    p, d = _instances("prefill", prefill), _instances("decode", decode)
    b = _budget(budget, tr)
    cost = server.cost
    n = len(tr)
    logs, first = [], np.full(n, np.nan)
    ready = np.full(n, np.nan)
    for i, idx in enumerate(_deal(n, p)):
        log = _engine(tr.arrival_s[idx], tr.prompt[idx], tr.output[idx], cost,
                      server.kv_capacity_tokens, "prefill_only", b, record=record)
        logs.append((idx, "prefill", log))
        first[idx] = log.first_s
        move = transfer_seconds(server, tr.prompt[idx], link_bytes_per_s)
        link_free = 0.0
        for j in np.argsort(log.first_s, kind="stable"):
            link_free = max(log.first_s[j], link_free) + move[j]
            ready[idx[j]] = link_free
    finish = np.full(n, np.nan)
    one = tr.output == 1
    finish[one] = first[one]
    todo = np.flatnonzero(~one)
    todo = todo[np.argsort(ready[todo], kind="stable")]
    for j, part in enumerate(_deal(len(todo), d)):
        idx = todo[part]
        log = _engine(ready[idx], tr.prompt[idx], tr.output[idx], cost,
                      server.kv_capacity_tokens, "decode_only", b, first_s=first[idx],
                      record=record)
        logs.append((idx, "decode", log))
    label = f"{LABELS['disaggregated']}, {p} prefill + {d} decode"
    return _run(tr, logs, label, "disaggregated", b, f"{p}P + {d}D", server, first_s=first,
                finish_s=finish)


# -- the chapter's experiments ---------------------------------------------------------------

def budget_sweep(tr: Traffic, server: Server, budgets, *, instances: int = 1,
                 ttft_slo_s: float, tpot_slo_s: float) -> pd.DataFrame:
    """Chunked prefill at each token budget, with prefill-first as the first row."""
    rows = [simulate(tr, server, "prefill_first", instances=instances)
            .summary(ttft_slo_s, tpot_slo_s)]
    for b in budgets:
        rows.append(simulate(tr, server, "chunked", int(b), instances=instances)
                    .summary(ttft_slo_s, tpot_slo_s))
    return pd.DataFrame(rows)


def split_sweep(tr: Traffic, server: Server, total: int, link_bytes_per_s: float, *,
                budget: int, ttft_slo_s: float, tpot_slo_s: float) -> pd.DataFrame:
    """Every split of ``total`` instances into prefill and decode pools, beside the same
    instances colocated with chunked prefill at ``budget``."""
    rows = [simulate(tr, server, "chunked", budget, instances=total)
            .summary(ttft_slo_s, tpot_slo_s) | {"prefill_share": np.nan}]
    for p in range(1, total):
        run = disaggregate(tr, server, p, total - p, link_bytes_per_s)
        rows.append(run.summary(ttft_slo_s, tpot_slo_s) | {"prefill_share": p / total})
    return pd.DataFrame(rows)


def load_sweep(make_traffic, rates, configs: dict, *, ttft_slo_s: float,
               tpot_slo_s: float) -> pd.DataFrame:
    """SLO attainment at each arrival rate for each configuration: ``configs`` maps a label to
    a function of a :class:`Traffic` that returns a :class:`Run`."""
    rows = []
    for rate in rates:
        tr = make_traffic(rate)
        for label, serve in configs.items():
            s = serve(tr).summary(ttft_slo_s, tpot_slo_s)
            rows.append(s | {"config": label, "rate_per_s": float(rate)})
    return pd.DataFrame(rows)


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


def paper_claims() -> pd.DataFrame:
    """The Sarathi-Serve, DistServe and vLLM-docs rows of ``serving_papers_claims.csv``."""
    df = tables.load("serving_papers_claims")
    keep = df["paper"].str.contains("Sarathi|DistServe|vLLM documentation", regex=True)
    return df[keep].reset_index(drop=True)


# -- the chapter's setting and experiments (cached: the notebook and the errata share them) -----

@dataclass(frozen=True)
class Setting:
    """Chapter 7's choices, in one place so that the prose can glue every one of them.

    The traffic is a chat service where some users paste documents: lognormal lengths (the
    paging chapter's shape) with these means, cut at ``max_len``. The latency targets are a
    first token within ``ttft_slo_s`` and a mean time per later token within
    ``tpot_slo_factor`` times one bare decode step (the weights read once, nobody else
    running). None of these numbers comes from a paper; they are this book's choices.
    """

    prompt_mean_tokens: float = 2048
    output_mean_tokens: float = 256
    max_len: int = 32768
    n_requests: int = 600
    rate_per_s: float = 9.0
    rates_per_s: tuple = (6.0, 9.0, 12.0)
    budgets: tuple = (256, 512, 1024, 2048, 4096, 8192, 16384)
    timeline_budget: int = 2048
    stall_prompt_tokens: int = 8192
    ttft_slo_s: float = 1.0
    tpot_slo_factor: float = 2.0
    instances: int = 4
    cluster_rates_per_s: tuple = (10.0, 20.0, 30.0, 40.0, 50.0, 60.0)
    cluster_requests: int = 500
    split_rate_per_s: float = 40.0
    slow_link_share: float = 0.1

    def traffic(self, rate_per_s: float | None = None, n: int | None = None) -> Traffic:
        return traffic(self.rate_per_s if rate_per_s is None else rate_per_s,
                       self.n_requests if n is None else n, self.prompt_mean_tokens,
                       self.output_mean_tokens, max_len=self.max_len)


SETTING = Setting()


def bare_decode_s(server: Server) -> float:
    """One decode step with nothing else running: the weights read once."""
    return server.model.weight_bytes / server.roof.bandwidth_bytes_per_s


def targets(server: Server, setting: Setting = SETTING) -> tuple[float, float]:
    """(TTFT target, time-per-output-token target) in seconds."""
    return setting.ttft_slo_s, setting.tpot_slo_factor * bare_decode_s(server)


def default_link_bytes_per_s() -> float:
    """The KV-transfer link of ``data/serving_links.csv`` (one 400 Gb/s NIC)."""
    return float(tables.load("serving_links")["bandwidth_GB_per_s"].iloc[0]) * GB


def chapter_server() -> Server:
    return llama_server()


_CACHE: dict = {}


def _cached(key, fn):
    if key not in _CACHE:
        _CACHE[key] = fn()
    return _CACHE[key]


def chapter_budget_sweep(setting: Setting = SETTING) -> pd.DataFrame:
    """The budget dial at each of the setting's loads, one instance (prefill-first first)."""
    def run():
        server = chapter_server()
        ttft, tpot = targets(server, setting)
        rows = []
        for rate in setting.rates_per_s:
            df = budget_sweep(setting.traffic(rate), server, setting.budgets,
                              ttft_slo_s=ttft, tpot_slo_s=tpot)
            rows.append(df.assign(rate_per_s=rate))
        return pd.concat(rows, ignore_index=True)
    return _cached(("budget", setting), run).copy()


def chapter_saturation(setting: Setting = SETTING) -> pd.DataFrame:
    """Throughput with every request waiting at the start (the engine never idles), per
    budget: what the scheduler can push through, not what the arrivals ask for."""
    def run():
        server = chapter_server()
        tr = setting.traffic(1e6)  # every request arrives within microseconds
        rows = []
        for policy, b in [("prefill_first", None)] + [("chunked", b) for b in setting.budgets]:
            r = simulate(tr, server, policy, b)
            rows.append({"label": r.label, "policy": policy, "budget": r.budget,
                         "makespan_s": r.duration_s,
                         "throughput_tok_per_s": float(tr.output.sum() / r.duration_s),
                         "prefill_tok_per_s": float(tr.prompt.sum() / r.duration_s),
                         "steps": len(r.steps), "utilisation": r.utilisation(whole_run=True),
                         "mean_decodes": float(r.steps["decode_tokens"].mean())})
        return pd.DataFrame(rows)
    return _cached(("saturation", setting), run).copy()


def chapter_stall(setting: Setting = SETTING) -> tuple[dict, pd.DataFrame, dict]:
    """Prefill-first and chunked prefill on the same requests at the setting's load, with
    every token recorded; the window around the first long prompt, and the lanes to draw."""
    def run():
        server = chapter_server()
        tr = setting.traffic()
        runs = {LABELS["prefill_first"]: simulate(tr, server, "prefill_first", record=True),
                f"Chunked, budget {setting.timeline_budget:,}":
                    simulate(tr, server, "chunked", setting.timeline_budget, record=True)}
        stall = {label: stall_window(r, setting.stall_prompt_tokens) for label, r in runs.items()}
        freeze = longest_freeze(next(iter(runs.values())), *next(iter(stall.values()))[1:])
        pad = 0.25 * (freeze[1] - freeze[0])
        lanes = timelines(runs, freeze[0] - pad, freeze[1] + pad)
        spans = {label: (s[0], int(tr.prompt[s[0]]), s[1], s[2]) for label, s in stall.items()}
        return runs, lanes, spans
    return _cached(("stall", setting), run)


def chapter_cluster(setting: Setting = SETTING) -> tuple[pd.DataFrame, dict]:
    """Goodput of ``instances`` machines: colocated (no chunking; chunked at two budgets)
    and every prefill/decode split, at each of the setting's cluster rates."""
    def run():
        server = chapter_server()
        link = default_link_bytes_per_s()
        k = setting.instances
        configs = {f"No chunking x {k}": lambda tr: simulate(tr, server, "prefill_first",
                                                             instances=k),
                   f"Chunked 2,048 x {k}": lambda tr: simulate(tr, server, "chunked", 2048,
                                                                instances=k),
                   f"Chunked 512 x {k}": lambda tr: simulate(tr, server, "chunked", 512,
                                                              instances=k)}
        for p in range(1, k):
            configs[f"{p} prefill + {k - p} decode"] = \
                (lambda p: lambda tr: disaggregate(tr, server, p, k - p, link))(p)
        ttft, tpot = targets(server, setting)
        sweep = load_sweep(lambda rate: setting.traffic(rate, setting.cluster_requests),
                           setting.cluster_rates_per_s, configs, ttft_slo_s=ttft,
                           tpot_slo_s=tpot)
        return sweep, configs
    return _cached(("cluster", setting), run)


def chapter_link(prefill: int, decode: int, setting: Setting = SETTING) -> pd.DataFrame:
    """One disaggregated split at the setting's split rate, over the default link and over
    ``slow_link_share`` of it: what a slower link costs."""
    def run():
        server = chapter_server()
        ttft, tpot = targets(server, setting)
        tr = setting.traffic(setting.split_rate_per_s, setting.cluster_requests)
        rows = []
        for share in (1.0, setting.slow_link_share):
            link = default_link_bytes_per_s() * share
            s = disaggregate(tr, server, prefill, decode, link).summary(ttft, tpot)
            move = float(transfer_seconds(server, tr.prompt, link).mean())
            rows.append(s | {"link_GB_per_s": link / GB, "link_share": share,
                             "mean_transfer_s": move,
                             "link_busy": setting.split_rate_per_s / prefill * move})
        return pd.DataFrame(rows)
    return _cached(("link", prefill, decode, setting), run).copy()
