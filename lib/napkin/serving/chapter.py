"""Chapter 7's experiments: a stall made visible, the token-budget dial, goodput of a cluster.

:class:`Setting` holds every choice the chapter makes; the functions that take one are the
chapter's own runs, computed once per process (:func:`napkin.tables.cached`) for the notebook and the
errata page alike. Every step is timed by chapter 9's calibrated step
(:mod:`napkin.predict.totals`), every arrival rate is a fraction of what the configuration can
carry (:mod:`napkin.serving.capacity`), every latency is read in the steady state (the first
and last requests of a run are served but not measured), and every sweep is repeated over
several traffic seeds, whose spread the chapter shows.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import pandas as pd

from .. import models, papers, roofline, tables
from ..deployment import Deployment, deploy
from ..tables import cached
from ..units import GB, require_positive
from ..workloads import DEFAULT_SIGMA
from . import capacity
from ..predict.totals import StepModel, step_model
from .disagg import disaggregated, transfer_seconds
from .runs import LABELS, Run, colocated, longest_freeze, max_rate, run_jobs, stall_window, \
    timelines
from .traffic import Traffic, traffic

__all__ = ["bare_decode_s", "budget_runs", "capacities", "cluster_capacities", "cluster_configs",
           "cluster_runs", "default_link_bytes_per_s", "describe", "goodput", "goodput_by_target",
           "goodput_spread", "goodput_text", "goodput_words", "label", "link_runs", "median_range",
           "nics_per_instance", "population", "reference_rate", "representative_seed",
           "saturation_runs", "seed_means", "server", "SETTING", "Setting", "single_capacity",
           "single_configs", "spread", "stall_runs", "step_of", "targets"]


@dataclass(frozen=True)
class Setting:
    """Chapter 7's choices, in one place so that the prose can glue every one of them.

    One instance is Llama 3.3 70B at ``weights`` on ``gpus`` of ``chip`` in one
    tensor-parallel group. The traffic is a chat service where some users paste documents:
    lognormal lengths (the paging chapter's shape and spread, ``sigma``) with these means,
    cut at ``max_len``, Poisson arrivals. Each run serves ``n_requests`` and measures all but
    the first ``drop_first`` and the last ``drop_last`` to arrive; each sweep repeats over
    ``seeds``. The budget dial runs at ``loads``, fractions of what one instance carries at
    ``reference_budget`` (``load`` is the one the prose reads); the cluster runs each of its
    configurations at ``cluster_loads``, fractions of that configuration's own capacity.
    The latency targets are a first token within ``ttft_slo_s`` and a mean time per later
    token within ``tpot_slo_factor`` times one bare decode step (one sequence, nothing
    cached, nobody else running); ``tpot_slo_factors`` are the tighter and looser targets
    the goodput ranking is also read at. None of these numbers comes from a paper; they are
    this book's choices.
    """

    chip: str = "H100 SXM"
    gpus: int = 4
    weights: str = "BF16"
    prompt_mean_tokens: float = 2048
    output_mean_tokens: float = 256
    sigma: float = DEFAULT_SIGMA
    max_len: int = 32768
    seeds: tuple = (0, 1, 2, 3, 4)
    seed_candidates: int = 20
    population_requests: int = 100_000
    n_requests: int = 1200
    drop_first: int = 200
    drop_last: int = 100
    reference_budget: int = 2048
    loads: tuple = (0.3, 0.45, 0.6)
    load: float = 0.45
    budgets: tuple = (256, 512, 1024, 2048, 4096, 8192, 16384)
    timeline_budget: int = 2048
    stall_prompt_tokens: int = 8192
    ttft_slo_s: float = 1.0
    tpot_slo_factor: float = 2.0
    tpot_slo_factors: tuple = (1.5, 2.0, 3.0)
    instances: int = 4
    cluster_seeds: tuple = (0, 1, 2)
    cluster_loads: tuple = (0.2, 0.3, 0.45, 0.6, 0.75)
    cluster_requests: int = 1600
    cluster_drop_first: int = 300
    cluster_drop_last: int = 100
    split_load: float = 0.45
    slow_link_GB_per_s: float = 1.25

    def traffic(self, rate_per_s: float, seed: int, n: int | None = None) -> Traffic:
        return traffic(rate_per_s, self.n_requests if n is None else n,
                       self.prompt_mean_tokens, self.output_mean_tokens, sigma=self.sigma,
                       max_len=self.max_len, seed=seed)


SETTING = Setting()


def server(setting: Setting = SETTING) -> Deployment:
    """One instance: the essay's model on ``gpus`` chips in one tensor-parallel group, its KV
    memory what the weights leave after the runtime's share (chapter 6's accounting,
    :func:`napkin.deployment.paper_overhead_share`)."""
    model = roofline.llama_3_3_70b(bytes_per_weight=models.bits_per_weight(setting.weights) / 8)
    return deploy(model, setting.chip, n_chips=setting.gpus, weights=setting.weights)


def step_of(setting: Setting = SETTING) -> StepModel:
    """The calibrated step of one instance (published fit, typical serving stack), one
    object per setting, so that every engine of a sweep is costed in the same call."""
    return _step_of(setting)


@cached()
def _step_of(setting: Setting) -> StepModel:
    return step_model(server(setting))


def bare_decode_s(setting: Setting = SETTING) -> float:
    """One decode step with nothing else running, calibrated: one sequence, nothing cached."""
    return step_of(setting).bare_decode_s


def targets(setting: Setting = SETTING,
            tpot_slo_factor: float | None = None) -> tuple[float, float]:
    """(TTFT target, time-per-output-token target) in seconds; the per-token target is
    ``tpot_slo_factor`` (default: the setting's) bare decode steps."""
    factor = setting.tpot_slo_factor if tpot_slo_factor is None else tpot_slo_factor
    return setting.ttft_slo_s, require_positive("tpot_slo_factor", factor) * \
        bare_decode_s(setting)


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


# -- the traffic ------------------------------------------------------------------------------

def population(setting: Setting = SETTING) -> Traffic:
    """A long sample of the sampler (``population_requests``, seed 0): what the lengths
    average to in the long run, which capacities are computed on."""
    return _population(setting)


@cached()
def _population(setting: Setting) -> Traffic:
    return setting.traffic(1.0, 0, setting.population_requests)


def seed_means(setting: Setting = SETTING) -> pd.DataFrame:
    """The mean prompt and output of each candidate seed's ``n_requests``, and how far each
    mean prompt lies from the long-run mean."""
    long = float(population(setting).prompt.mean())
    rows = []
    for seed in range(setting.seed_candidates):
        tr = setting.traffic(1.0, seed)
        rows.append({"seed": seed, "prompt_mean_tokens": float(tr.prompt.mean()),
                     "output_mean_tokens": float(tr.output.mean()),
                     "distance": abs(float(tr.prompt.mean()) - long)})
    return pd.DataFrame(rows)


def representative_seed(setting: Setting = SETTING) -> int:
    """The rule for a run that shows one seed: of seeds 0 to ``seed_candidates - 1``, the one
    whose mean prompt lies closest to the long-run mean."""
    m = seed_means(setting)
    return int(m.loc[m["distance"].idxmin(), "seed"])


# -- capacity ---------------------------------------------------------------------------------

def single_configs(setting: Setting = SETTING) -> list[tuple[str, int | None]]:
    """One instance's configurations: no chunking, then chunked prefill at each budget."""
    return [("prefill_first", None)] + [("chunked", int(b)) for b in setting.budgets]


def label(policy: str, budget: int | None) -> str:
    return LABELS[policy] + (f", budget {budget:,}" if policy == "chunked" else "")


def single_capacity(policy: str, budget: int | None, setting: Setting = SETTING) -> dict:
    """What one instance carries in a configuration (:mod:`napkin.serving.capacity`), on the
    long-run lengths."""
    tr, d, m = population(setting), server(setting), step_of(setting)
    if policy == "chunked":
        return capacity.chunked(m, d, tr.prompt, tr.output, budget)
    return capacity.prefill_first(m, d, tr.prompt, tr.output)


def capacities(setting: Setting = SETTING) -> pd.DataFrame:
    """Every single-instance configuration's capacity, one row each."""
    rows = []
    for policy, budget in single_configs(setting):
        c = single_capacity(policy, budget, setting)
        rows.append({"label": label(policy, budget), "policy": policy, "budget": budget,
                     **{k: c.get(k, np.nan) for k in ("requests_per_s", "tokens_per_s",
                                                      "output_tokens_per_s", "limited_by",
                                                      "step_s", "decodes")}})
    return pd.DataFrame(rows)


def reference_rate(setting: Setting = SETTING) -> float:
    """Requests per second one instance carries at the reference budget: the budget dial's
    loads are fractions of it."""
    return single_capacity("chunked", setting.reference_budget, setting)["requests_per_s"]


def spread(df: pd.DataFrame, keys: list[str], columns: list[str]) -> pd.DataFrame:
    """Median, least and greatest of ``columns`` over the rows (seeds) of each ``keys``
    group: ``<column>`` is the median, ``<column>_min`` and ``<column>_max`` the range."""
    g = df.groupby(keys, sort=False)[columns]
    return g.median().join(g.min().add_suffix("_min")).join(g.max().add_suffix("_max")) \
        .reset_index()


# -- one instance -----------------------------------------------------------------------------

def _steady(run: Run, setting: Setting) -> Run:
    return run.steady(setting.drop_first, setting.drop_last)


@cached()
def budget_runs(setting: Setting = SETTING) -> pd.DataFrame:
    """The budget dial: every single-instance configuration at each load and seed, its
    steady-state latencies under the setting's targets; ``own_load`` is the arrival rate
    over that configuration's own capacity."""
    d, m = server(setting), step_of(setting)
    ttft, tpot = targets(setting)
    ref = reference_rate(setting)
    caps = capacities(setting).set_index("label")["requests_per_s"]
    jobs, keys = [], []
    for load in setting.loads:
        for seed in setting.seeds:
            tr = setting.traffic(load * ref, seed)
            for policy, budget in single_configs(setting):
                jobs.append(colocated(tr, d, policy, budget, keep_steps=False, model=m))
                keys.append({"load": load, "rate_per_s": load * ref, "seed": seed,
                             "own_load": load * ref / caps[label(policy, budget)]})
    done = run_jobs(jobs, lambda r: _steady(r, setting).summary(ttft, tpot))
    return pd.DataFrame([s | k for s, k in zip(done, keys)])


@cached()
def saturation_runs(setting: Setting = SETTING) -> pd.DataFrame:
    """What the simulated engine serves with an endless queue (every request waiting at the
    start), per configuration and seed, in the steady state (:meth:`Run.saturated`), beside
    the capacity computed from the mean step."""
    d, m = server(setting), step_of(setting)
    caps = capacities(setting).set_index("label")
    jobs, keys = [], []
    for seed in setting.seeds:
        tr = setting.traffic(1e6, seed)  # every request arrives within microseconds
        for policy, budget in single_configs(setting):
            jobs.append(colocated(tr, d, policy, budget, model=m))
            keys.append({"label": label(policy, budget), "policy": policy, "budget": budget,
                         "seed": seed})
    done = run_jobs(jobs, lambda r: r.saturated(setting.drop_first, setting.drop_last))
    df = pd.DataFrame([k | s for s, k in zip(done, keys)])
    df["capacity_req_per_s"] = df["label"].map(caps["requests_per_s"])
    return df


@cached()
def stall_runs(setting: Setting = SETTING) -> tuple[dict, pd.DataFrame, dict]:
    """No chunking and chunked prefill on the same requests (the representative seed, at the
    setting's load), every step kept; the window around the first long prompt, and the lanes
    to draw."""
    d, m = server(setting), step_of(setting)
    tr = setting.traffic(setting.load * reference_rate(setting), representative_seed(setting))
    plain, chunked = run_jobs([colocated(tr, d, "prefill_first", model=m),
                               colocated(tr, d, "chunked", setting.timeline_budget, model=m)])
    runs = {LABELS["prefill_first"]: plain,
            f"Chunked, budget {setting.timeline_budget:,}": chunked}
    stall = {lab: stall_window(r, setting.stall_prompt_tokens) for lab, r in runs.items()}
    freeze = longest_freeze(plain, *next(iter(stall.values()))[1:])
    pad = 0.25 * (freeze[1] - freeze[0])
    lanes = timelines(runs, freeze[0] - pad, freeze[1] + pad)
    spans = {lab: (s[0], int(tr.prompt[s[0]]), s[1], s[2]) for lab, s in stall.items()}
    return runs, lanes, spans


# -- a cluster --------------------------------------------------------------------------------

def cluster_configs(setting: Setting = SETTING) -> dict:
    """The ways to run ``instances`` machines, by label: colocated (no chunking; chunked at
    two budgets) and every prefill/decode split, each as (a job of a traffic, its capacity)."""
    d, m, k, link = server(setting), step_of(setting), setting.instances, \
        default_link_bytes_per_s()
    pop = population(setting)
    configs = {}
    for name, policy, budget in ((f"No chunking x {k}", "prefill_first", None),
                                 (f"Chunked 2,048 x {k}", "chunked", 2048),
                                 (f"Chunked 512 x {k}", "chunked", 512)):
        one = single_capacity(policy, budget, setting)
        configs[name] = ((lambda policy, budget: lambda tr: colocated(
            tr, d, policy, budget, instances=k, keep_steps=False, model=m))(policy, budget),
            one | {"requests_per_s": k * one["requests_per_s"],
                   "tokens_per_s": k * one["tokens_per_s"]})
    for p in range(1, k):
        configs[f"{p} prefill + {k - p} decode"] = (
            (lambda p: lambda tr: disaggregated(tr, d, p, k - p, link, keep_steps=False,
                                                model=m))(p),
            capacity.split(m, d, pop.prompt, pop.output, p, k - p, link))
    return configs


def describe(config: str) -> str:
    """A :func:`cluster_configs` label in words: ``"Chunked 512 x 4"`` is chunked prefill at
    512 tokens on every machine, ``"3 prefill + 1 decode"`` a split of three prefill machines
    and one decode machine (each the subject of a sentence in the singular)."""
    if " x " in config:
        what, _ = config.rsplit(" x ", 1)
        if what.startswith("Chunked "):
            return f"chunked prefill at a budget of {what.split()[1]} tokens on every machine"
        return f"{what.lower()} on every machine"
    pre, dec = config.split(" prefill + ")
    dec = dec.split()[0]
    return f"a split of {pre} prefill {'machine' if pre == '1' else 'machines'} and {dec} " \
           f"decode {'machine' if dec == '1' else 'machines'}"


def cluster_capacities(setting: Setting = SETTING) -> pd.DataFrame:
    """Every cluster configuration's capacity and what limits it."""
    return pd.DataFrame([{"config": name, **{key: c[key] for key in (
        "requests_per_s", "tokens_per_s", "limited_by")}}
        for name, (_, c) in cluster_configs(setting).items()])


@cached()
def cluster_runs(setting: Setting = SETTING) -> pd.DataFrame:
    """Every cluster configuration at each of ``cluster_loads`` of its own capacity and each
    cluster seed, read in the steady state against every per-token target of
    ``tpot_slo_factors``: one row per (configuration, load, seed, target)."""
    bare = bare_decode_s(setting)
    jobs, keys = [], []
    for name, (make, cap) in cluster_configs(setting).items():
        for load in setting.cluster_loads:
            rate = load * cap["requests_per_s"]
            for seed in setting.cluster_seeds:
                jobs.append(make(setting.traffic(rate, seed, setting.cluster_requests)))
                keys.append({"config": name, "load": load, "rate_per_s": rate, "seed": seed})

    def read(run: Run) -> list[dict]:
        steady = run.steady(setting.cluster_drop_first, setting.cluster_drop_last)
        return [steady.summary(setting.ttft_slo_s, f * bare) | {"tpot_slo_factor": f}
                for f in setting.tpot_slo_factors]

    done = run_jobs(jobs, read)
    return pd.DataFrame([s | k for summaries, k in zip(done, keys) for s in summaries])


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


@cached()
def goodput_by_target(setting: Setting = SETTING) -> pd.DataFrame:
    """DistServe's goodput (the highest rate at which the share of requests meeting both
    targets stays at its attainment) of every cluster configuration, per seed and per-token
    target: how much the ranking rests on the seed and on this book's choice of target."""
    attainment = papers.claim("distserve_attainment") / 100
    runs = cluster_runs(setting)
    caps = cluster_capacities(setting).set_index("config")["requests_per_s"]
    rows = []
    for (factor, seed), sweep in runs.groupby(["tpot_slo_factor", "seed"], sort=False):
        rows.append(goodput(sweep, attainment).assign(tpot_slo_factor=factor, seed=seed))
    df = pd.concat(rows, ignore_index=True)
    df["capacity_req_per_s"] = df["config"].map(caps)
    return df


@cached()
def link_runs(prefill: int, decode: int, setting: Setting = SETTING) -> pd.DataFrame:
    """One disaggregated split at ``split_load`` of its capacity over the default link,
    served once over that link and once over a link of ``slow_link_GB_per_s``, on the
    representative seed: what a slower link costs, and each link's capacity."""
    d, m = server(setting), step_of(setting)
    ttft, tpot = targets(setting)
    pop = population(setting)
    fast = default_link_bytes_per_s()
    rate = setting.split_load * capacity.split(m, d, pop.prompt, pop.output, prefill, decode,
                                               fast)["requests_per_s"]
    tr = setting.traffic(rate, representative_seed(setting), setting.cluster_requests)
    links = (fast, setting.slow_link_GB_per_s * GB)
    done = run_jobs([disaggregated(tr, d, prefill, decode, link, keep_steps=False, model=m)
                     for link in links])
    rows = []
    for link, run in zip(links, done):
        s = run.steady(setting.cluster_drop_first, setting.cluster_drop_last).summary(ttft, tpot)
        move = float(transfer_seconds(d, tr.prompt, link).mean())
        cap = capacity.split(m, d, pop.prompt, pop.output, prefill, decode, link)
        rows.append(s | {"link_GB_per_s": link / GB, "rate_per_s": rate,
                         "mean_transfer_s": move, "link_busy": rate / prefill * move,
                         "capacity_req_per_s": cap["requests_per_s"],
                         "limited_by": cap["limited_by"]})
    return pd.DataFrame(rows)


# -- reading the seeds ------------------------------------------------------------------------

def median_range(df: pd.DataFrame, column: str, fmt: str = "{:,.0f}",
                 scale: float = 1.0) -> pd.Series:
    """A :func:`spread` column as text for a table: the median, then the least and greatest
    seed in brackets (``"194 (189-198)"``), each times ``scale``."""
    def text(row) -> str:
        m, lo, hi = (scale * row[f"{column}{s}"] for s in ("", "_min", "_max"))
        return f"{fmt.format(m)} ({fmt.format(lo)}\u2013{fmt.format(hi)})"
    return df.apply(text, axis=1)


def goodput_spread(by_target: pd.DataFrame) -> pd.DataFrame:
    """Per configuration and per-token target, the goodput over seeds
    (:func:`goodput_by_target`): median, least and greatest, and whether any seed's is only
    a bound (``capped``: met the target at every rate tried; ``missed``: at none)."""
    g = by_target.groupby(["config", "tpot_slo_factor"], sort=False)
    out = spread(by_target, ["config", "tpot_slo_factor"], ["goodput_req_per_s"])
    flags = g[["capped", "missed"]].any().reset_index()
    return out.merge(flags, on=["config", "tpot_slo_factor"])


def goodput_words(row) -> str:
    """A :func:`goodput_spread` row for a sentence: ``"9.0 (8.8 to 9.1)"``, ``"at least"``
    before it when a seed met the target at its highest rate."""
    m, lo, hi = (row[f"goodput_req_per_s{s}"] for s in ("", "_min", "_max"))
    return ("at least " if row["capped"] else "") + f"{m:.1f} ({lo:.1f} to {hi:.1f})"


def goodput_text(row, lowest_rate: float) -> str:
    """A :func:`goodput_spread` row as text: ``"9.0 (8.8-9.1)"``, ``"at least ..."`` when a
    seed met the target at its highest rate, ``"below ..."`` when one missed at its
    lowest."""
    if row["missed"]:
        return f"below {lowest_rate:.1f}"
    m, lo, hi = (row[f"goodput_req_per_s{s}"] for s in ("", "_min", "_max"))
    return ("at least " if row["capped"] else "") + f"{m:.1f} ({lo:.1f}\u2013{hi:.1f})"
