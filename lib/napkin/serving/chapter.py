"""Chapter 7's experiments: the token-budget dial, a stall made visible, goodput of a cluster.

:class:`Setting` holds every choice the chapter makes; the functions that take one are the
chapter's own runs, computed once per process (:mod:`napkin.memo`) for the notebook and the
errata page alike.
"""

from __future__ import annotations

from dataclasses import dataclass

import pandas as pd

from .. import models, papers, roofline, tables
from ..deployment import Deployment, deploy
from ..memo import experiment
from ..predict import step
from ..predict.calibration import ROOFLINE, calibrated
from ..units import GB, require_positive
from ..workloads import DEFAULT_SIGMA
from .disagg import disaggregate, transfer_seconds
from .runs import LABELS, longest_freeze, max_rate, simulate, stall_window, timelines
from .traffic import Traffic, traffic


@dataclass(frozen=True)
class Setting:
    """Chapter 7's choices, in one place so that the prose can glue every one of them.

    One instance is Llama 3.3 70B at ``weights`` on ``gpus`` of ``chip`` working as one. The
    traffic is a chat service where some users paste documents: lognormal lengths (the
    paging chapter's shape and spread, ``sigma``) with these means, cut at ``max_len``,
    seeded with ``seed``. The
    latency targets are a first token within ``ttft_slo_s`` and a mean time per later token
    within ``tpot_slo_factor`` times one bare decode step (the weights read once, nobody else
    running); ``tpot_slo_factors`` are the looser and tighter targets the goodput ranking is
    also read at. None of these numbers comes from a paper; they are this book's choices.
    """

    chip: str = "H100 SXM"
    gpus: int = 4
    weights: str = "BF16"
    prompt_mean_tokens: float = 2048
    output_mean_tokens: float = 256
    sigma: float = DEFAULT_SIGMA
    max_len: int = 32768
    seed: int = 7
    n_requests: int = 600
    rate_per_s: float = 9.0
    rates_per_s: tuple = (6.0, 9.0, 12.0)
    budgets: tuple = (256, 512, 1024, 2048, 4096, 8192, 16384)
    timeline_budget: int = 2048
    stall_prompt_tokens: int = 8192
    ttft_slo_s: float = 1.0
    tpot_slo_factor: float = 2.0
    tpot_slo_factors: tuple = (1.5, 2.0, 3.0)
    instances: int = 4
    cluster_rates_per_s: tuple = (10.0, 20.0, 30.0, 40.0, 50.0, 60.0)
    cluster_requests: int = 500
    split_rate_per_s: float = 40.0
    slow_link_share: float = 0.1

    def traffic(self, rate_per_s: float | None = None, n: int | None = None) -> Traffic:
        return traffic(self.rate_per_s if rate_per_s is None else rate_per_s,
                       self.n_requests if n is None else n, self.prompt_mean_tokens,
                       self.output_mean_tokens, sigma=self.sigma, max_len=self.max_len,
                       seed=self.seed)


SETTING = Setting()


def server(setting: Setting = SETTING) -> Deployment:
    """One instance: the essay's model on ``gpus`` chips working as one (ideal tensor
    parallelism), its KV memory what the weights leave after the runtime's share (chapter
    6's accounting, :func:`napkin.deployment.paper_overhead_share`)."""
    model = roofline.llama_3_3_70b(bytes_per_weight=models.bits_per_weight(setting.weights) / 8)
    return deploy(model, setting.chip, n_chips=setting.gpus, weights=setting.weights)


def bare_decode_s(d: Deployment) -> float:
    """One decode step with nothing else running: the weights read once."""
    return d.model.weight_bytes / d.roof.bandwidth_bytes_per_s


def targets(d: Deployment, setting: Setting = SETTING,
            tpot_slo_factor: float | None = None) -> tuple[float, float]:
    """(TTFT target, time-per-output-token target) in seconds; the per-token target is
    ``tpot_slo_factor`` (default: the setting's) bare decode steps."""
    factor = setting.tpot_slo_factor if tpot_slo_factor is None else tpot_slo_factor
    return setting.ttft_slo_s, require_positive("tpot_slo_factor", factor) * bare_decode_s(d)


def _link() -> pd.Series:
    return tables.load("serving_links").iloc[0]


def default_link_bytes_per_s() -> float:
    """The KV-transfer link of ``data/serving_links.csv`` (one 400 Gb/s NIC)."""
    return float(_link()["bandwidth_GB_per_s"]) * GB


def nics_per_instance(setting: Setting = SETTING) -> float:
    """How many of the link's NICs an instance of ``gpus`` GPUs would get in the system the
    link comes from (its NICs shared evenly among its GPUs); the chapter gives it one."""
    link = _link()
    return float(link["nics_in_system"]) / float(link["gpus_in_system"]) * setting.gpus


# -- sweeps on any deployment -----------------------------------------------------------------

def budget_sweep(tr: Traffic, d: Deployment, budgets, *, instances: int = 1,
                 ttft_slo_s: float, tpot_slo_s: float) -> pd.DataFrame:
    """Chunked prefill at each token budget, with prefill-first as the first row."""
    rows = [simulate(tr, d, "prefill_first", instances=instances)
            .summary(ttft_slo_s, tpot_slo_s)]
    for b in budgets:
        rows.append(simulate(tr, d, "chunked", int(b), instances=instances)
                    .summary(ttft_slo_s, tpot_slo_s))
    return pd.DataFrame(rows)


def serve_sweep(make_traffic, rates, configs: dict) -> dict:
    """Every configuration at each arrival rate, the runs by ``(rate, label)``: ``configs``
    maps a label to a function of a :class:`Traffic` that returns a
    :class:`napkin.serving.runs.Run`."""
    served = {}
    for rate in rates:
        tr = make_traffic(rate)
        for label, serve in configs.items():
            served[(float(rate), label)] = serve(tr)
    return served


def summarise(served: dict, *, ttft_slo_s: float, tpot_slo_s: float) -> pd.DataFrame:
    """SLO attainment and latencies of each run of a :func:`serve_sweep`, one row each."""
    return pd.DataFrame([run.summary(ttft_slo_s, tpot_slo_s) | {"config": label,
                                                                 "rate_per_s": rate}
                         for (rate, label), run in served.items()])


def load_sweep(make_traffic, rates, configs: dict, *, ttft_slo_s: float,
               tpot_slo_s: float) -> pd.DataFrame:
    """SLO attainment at each arrival rate for each configuration (:func:`serve_sweep`,
    :func:`summarise`)."""
    return summarise(serve_sweep(make_traffic, rates, configs), ttft_slo_s=ttft_slo_s,
                     tpot_slo_s=tpot_slo_s)


def goodput(sweep: pd.DataFrame, attainment: float) -> pd.DataFrame:
    """DistServe's goodput of each configuration of a sweep (:func:`max_rate`), and whether
    it is only a bound: ``capped`` when even the highest rate tried met the target (the
    goodput is at least that rate), ``missed`` when even the lowest did not."""
    rows = []
    for config, g in sweep.groupby("config", sort=False):
        met = g.sort_values("rate_per_s")["attainment"].to_numpy() >= attainment
        rows.append({"config": config,
                     "goodput_req_per_s": max_rate(sweep, config, attainment),
                     "capped": bool(met.all()), "missed": not met[0]})
    return pd.DataFrame(rows)


# -- the chapter's runs -----------------------------------------------------------------------

@experiment
def budget_runs(setting: Setting = SETTING) -> pd.DataFrame:
    """The budget dial at each of the setting's loads, one instance (prefill-first first)."""
    d = server(setting)
    ttft, tpot = targets(d, setting)
    rows = []
    for rate in setting.rates_per_s:
        df = budget_sweep(setting.traffic(rate), d, setting.budgets,
                          ttft_slo_s=ttft, tpot_slo_s=tpot)
        rows.append(df.assign(rate_per_s=rate))
    return pd.concat(rows, ignore_index=True)


@experiment
def saturation_runs(setting: Setting = SETTING) -> pd.DataFrame:
    """Throughput with every request waiting at the start (the engine never idles), per
    budget: what the scheduler can push through, not what the arrivals ask for."""
    d = server(setting)
    tr = setting.traffic(1e6)  # every request arrives within microseconds
    rows = []
    for policy, b in [("prefill_first", None)] + [("chunked", b) for b in setting.budgets]:
        r = simulate(tr, d, policy, b)
        rows.append({"label": r.label, "policy": policy, "budget": r.budget,
                     "makespan_s": r.duration_s,
                     "throughput_tok_per_s": float(tr.output.sum() / r.duration_s),
                     "prefill_tok_per_s": float(tr.prompt.sum() / r.duration_s),
                     "steps": len(r.steps), "utilisation": r.utilisation(whole_run=True),
                     "mean_decodes": float(r.steps["decode_tokens"].mean())})
    return pd.DataFrame(rows)


@experiment
def stall_runs(setting: Setting = SETTING) -> tuple[dict, pd.DataFrame, dict]:
    """Prefill-first and chunked prefill on the same requests at the setting's load, with
    every token recorded; the window around the first long prompt, and the lanes to draw."""
    d = server(setting)
    tr = setting.traffic()
    runs = {LABELS["prefill_first"]: simulate(tr, d, "prefill_first", record=True),
            f"Chunked, budget {setting.timeline_budget:,}":
                simulate(tr, d, "chunked", setting.timeline_budget, record=True)}
    stall = {label: stall_window(r, setting.stall_prompt_tokens) for label, r in runs.items()}
    freeze = longest_freeze(next(iter(runs.values())), *next(iter(stall.values()))[1:])
    pad = 0.25 * (freeze[1] - freeze[0])
    lanes = timelines(runs, freeze[0] - pad, freeze[1] + pad)
    spans = {label: (s[0], int(tr.prompt[s[0]]), s[1], s[2]) for label, s in stall.items()}
    return runs, lanes, spans


def cluster_configs(setting: Setting = SETTING) -> dict:
    """The ways to run ``instances`` machines, by label: colocated (no chunking; chunked at
    two budgets) and every prefill/decode split, each a function of a traffic."""
    d, k, link = server(setting), setting.instances, default_link_bytes_per_s()
    configs = {f"No chunking x {k}": lambda tr: simulate(tr, d, "prefill_first", instances=k),
               f"Chunked 2,048 x {k}": lambda tr: simulate(tr, d, "chunked", 2048, instances=k),
               f"Chunked 512 x {k}": lambda tr: simulate(tr, d, "chunked", 512, instances=k)}
    for p in range(1, k):
        configs[f"{p} prefill + {k - p} decode"] = \
            (lambda p: lambda tr: disaggregate(tr, d, p, k - p, link))(p)
    return configs


@experiment
def cluster_served(setting: Setting = SETTING) -> dict:
    """Every :func:`cluster_configs` at each of the setting's cluster rates: the runs, by
    ``(rate, label)``, so that they can be read against more than one latency target."""
    return serve_sweep(lambda rate: setting.traffic(rate, setting.cluster_requests),
                       setting.cluster_rates_per_s, cluster_configs(setting))


@experiment
def cluster_runs(setting: Setting = SETTING,
                 tpot_slo_factor: float | None = None) -> pd.DataFrame:
    """Attainment of every :func:`cluster_configs` at each of the setting's cluster rates,
    under the setting's targets (or a per-token target of ``tpot_slo_factor`` bare steps)."""
    ttft, tpot = targets(server(setting), setting, tpot_slo_factor)
    return summarise(cluster_served(setting), ttft_slo_s=ttft, tpot_slo_s=tpot)


@experiment
def goodput_by_target(setting: Setting = SETTING) -> pd.DataFrame:
    """DistServe's goodput (the highest rate at which the share of requests meeting both
    targets stays at its attainment) of every cluster configuration, under each per-token
    target of ``tpot_slo_factors``: how much the ranking rests on this book's choice."""
    attainment = papers.claim("distserve_attainment") / 100
    bare = bare_decode_s(server(setting))
    rows = [goodput(cluster_runs(setting, f), attainment).assign(
                tpot_slo_factor=f, tpot_slo_s=f * bare)
            for f in setting.tpot_slo_factors]
    return pd.concat(rows, ignore_index=True)


@experiment
def link_runs(prefill: int, decode: int, setting: Setting = SETTING) -> pd.DataFrame:
    """One disaggregated split at the setting's split rate, over the default link and over
    ``slow_link_share`` of it: what a slower link costs."""
    d = server(setting)
    ttft, tpot = targets(d, setting)
    tr = setting.traffic(setting.split_rate_per_s, setting.cluster_requests)
    rows = []
    for share in (1.0, setting.slow_link_share):
        link = default_link_bytes_per_s() * share
        s = disaggregate(tr, d, prefill, decode, link).summary(ttft, tpot)
        move = float(transfer_seconds(d, tr.prompt, link).mean())
        rows.append(s | {"link_GB_per_s": link / GB, "link_share": share,
                         "mean_transfer_s": move,
                         "link_busy": setting.split_rate_per_s / prefill * move})
    return pd.DataFrame(rows)



def calibrated_budget_rates(budgets, decodes: float, prompt_position: float,
                            setting: Setting = SETTING) -> pd.DataFrame:
    """What chapter 9's calibrated step model says about the token budget: the tokens per
    second of one full step of each budget (``decodes`` decode tokens, the rest one prompt's
    chunk starting ``prompt_position`` tokens in), calibrated and on the plain roofline.

    The calibrated model adds what the simulation's roofline leaves out (a fixed cost per
    step, matmuls that reach less of their peak when they have few rows, all-reduces), so
    it can say whether a larger budget buys throughput; the simulation above cannot."""
    c = step.engine_of(server(setting)).constants
    rows = []
    for budget in budgets:
        d = min(float(decodes), budget - 1.0)
        work = step.prefill_work(c, 1, budget - d, prompt_position) + \
            step.decode_work(c, d, prompt_position)
        rows.append({"budget": budget,
                     "calibrated_tok_per_s": budget / float(step.seconds(c, work, calibrated())[0]),
                     "roofline_tok_per_s": budget / float(step.seconds(c, work, ROOFLINE)[0])})
    return pd.DataFrame(rows)
