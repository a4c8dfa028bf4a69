"""Chapter 6's experiments: the engine on the paper's setting and on the essay's H100.

:class:`Setting` holds every choice the chapter makes (the seed, how many requests, the
spreads and block sizes it sweeps), so the prose can glue each one. The functions below run
:class:`napkin.kvpaging.engine.KVEngine` for every allocator on a
:class:`napkin.deployment.Deployment` and tabulate what the chapter draws; the ones that take
a ``Setting`` are the chapter's own runs, computed once per process (:func:`napkin.tables.cached`) for
the notebook and the errata page alike.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import pandas as pd

from .. import papers, roofline, tables
from ..deployment import Deployment, deploy
from ..tables import cached
from ..units import GB, GiB
from ..workloads import DEFAULT_SIGMA, RequestLengths, sample_requests, workload
from .engine import simulate
from .memory import ALLOCATORS, CATEGORIES, CATEGORY_LABELS, DEFAULT_BLOCK_SIZE, LABELS
from .result import Result, throughput

__all__ = ["block_size_runs", "block_size_sweep", "compare", "defensible_spreads", "fig2_gaps",
           "FIG2_SEGMENTS", "h100_deployment", "h100_runs", "max_len_sweep", "paper_batch",
           "paper_deployment", "paper_model", "paper_reproduction", "paper_run", "PAPER_SYSTEMS",
           "paper_token_share", "run", "Setting", "SETTING", "spread_against_paper", "spread_runs",
           "spread_sweep", "strips"]

#: The paper's name for each allocator's bar in its Fig. 2 and Fig. 13.
PAPER_SYSTEMS = {"max": "orca_max", "pow2": "orca_pow2", "oracle": "orca_oracle",
                 "paged": "vllm"}


@dataclass(frozen=True)
class Setting:
    """Chapter 6's choices, in one place so that the prose can glue every one of them.

    The paper's setting is OPT-13B with the KV memory of its Table 1 on ``paper_chip`` (whose
    FLOP/s and bandwidth set only the clock), ``n_requests`` ShareGPT-like requests all
    waiting at the start, cut at the paper's 2,048-token limit. The spread of lengths
    (``sigma``) and the seed are this book's choices; so is the H100 deployment.
    """

    workload: str = "ShareGPT"
    sigma: float = DEFAULT_SIGMA
    n_requests: int = 1000
    seed: int = 6
    block_size: int = DEFAULT_BLOCK_SIZE
    paper_chip: str = "A100 SXM"
    sigmas: tuple = (0.0, 0.25, 0.5, 0.75, 1.0, 1.25, 1.5)
    block_sizes: tuple = tuple(2 ** k for k in range(9))
    block_workloads: tuple = ("ShareGPT", "Alpaca")
    h100_model: str = "Llama-3.3-70B"
    h100_chip: str = "H100 SXM"
    h100_weights: str = "FP8"
    max_lens: tuple = (2048, 4096, 8192, 16384)

    @property
    def max_len(self) -> int:
        """The paper's length limit, the reservation of its Orca (Max)."""
        return int(papers.claim("orca_max_reservation"))

    def requests(self, sigma: float | None = None, n: int | None = None):
        """The chapter's requests (at another spread or count when asked)."""
        wl = workload(self.workload, self.sigma if sigma is None else sigma)
        return sample_requests(wl, self.n_requests if n is None else n, self.max_len, self.seed)


SETTING = Setting()


# -- the two deployments ----------------------------------------------------------------------

def paper_model() -> roofline.Model:
    """OPT-13B as ``data/serving_models.csv`` describes it, with the paper's Table 1 weights:
    26 "GB" of FP16 parameters, decimal (13 billion FP16 weights are 26e9 bytes; 26 GiB would
    be 14 billion)."""
    r = tables.row("serving_models", "model", "OPT-13B")
    config = {"num_hidden_layers": int(r["layers"]), "hidden_size": int(r["hidden_size"]),
              "num_attention_heads": int(r["attention_heads"]),
              "num_key_value_heads": int(r["kv_heads"]), "head_dim": int(r["head_dim"]),
              "max_position_embeddings": int(r["max_context_tokens"])}
    return roofline.Model(name="OPT-13B", params=float(r["total_params_B"]) * 1e9,
                          weight_bytes=papers.claim("table1_13b_parameter_size") * GB,
                          config=config)


def paper_deployment(setting: Setting = SETTING) -> Deployment:
    """OPT-13B with the KV memory of the paper's Table 1 (13B on one A100).

    The table prints 12 "GB" for the KV cache and 15.7K slots; only binary GB give that
    slot count at 800 KiB per token, so the memory is 12 GiB. The paper's A100 has 40 GiB;
    ``data/`` holds the 80 GiB SXM part's FLOP/s and bandwidth, which set only the step
    time: the KV memory is the paper's either way. The weights are FP16, so the roof is
    FP16's.
    """
    return deploy(paper_model(), setting.paper_chip, weights="F16",
                  kv_memory_bytes=papers.claim("table1_13b_kv_memory") * GiB)


def h100_deployment(setting: Setting = SETTING) -> Deployment:
    """The essay's model on the essay's chip: KV memory = capacity x (1 - the paper's
    overhead share) - weights, the roof the one its weights run on (FP8 on FP8 tensor
    cores, as a serving stack runs them)."""
    return deploy(setting.h100_model, setting.h100_chip, weights=setting.h100_weights)


# -- runs and sweeps on any deployment --------------------------------------------------------

def run(d: Deployment, wl: RequestLengths, allocator: str, *, n_requests: int = SETTING.n_requests,
        max_len: int | None = None, block_size: int = DEFAULT_BLOCK_SIZE,
        seed: int = SETTING.seed, snapshot: bool = False) -> Result:
    """One allocator on a deployment and workload (``max_len``: the model's context limit)."""
    max_len = d.max_context_tokens if max_len is None else max_len
    reqs = sample_requests(wl, n_requests, max_len, seed)
    res = simulate(reqs, allocator, d.kv_capacity_tokens, max_len, block_size=block_size)
    if snapshot:  # replay to the middle of the window and record the layout there
        mid = (res.window[0] + res.window[1]) // 2
        res = simulate(reqs, allocator, d.kv_capacity_tokens, max_len, block_size=block_size,
                       snapshot_step=mid)
    return res


def compare(d: Deployment, wl: RequestLengths, *, n_requests: int = SETTING.n_requests,
            max_len: int | None = None, block_size: int = DEFAULT_BLOCK_SIZE,
            seed: int = SETTING.seed, snapshot: bool = False) -> tuple[pd.DataFrame, dict]:
    """Every allocator on the same requests: a summary row each, and the results."""
    results = {a: run(d, wl, a, n_requests=n_requests, max_len=max_len, block_size=block_size,
                      seed=seed, snapshot=snapshot) for a in ALLOCATORS}
    rows = []
    for a, res in results.items():
        rows.append({"allocator": a, "label": res.label, **res.shares(),
                     "mean_batch": res.mean_batch, "tokens_per_s": throughput(res, d),
                     "preemptions": res.preemptions, "recomputed_tokens": res.recomputed_tokens,
                     "requests": res.n_requests})
    df = pd.DataFrame(rows)
    paged = df.set_index("allocator").loc["paged"]
    df["batch_gain"] = paged["mean_batch"] / df["mean_batch"]
    df["throughput_gain"] = paged["tokens_per_s"] / df["tokens_per_s"]
    return df, results


def block_size_sweep(d: Deployment, workloads: list[RequestLengths], block_sizes: list[int], *,
                     n_requests: int = SETTING.n_requests, max_len: int | None = None,
                     seed: int = SETTING.seed) -> pd.DataFrame:
    """Paged memory shares, batch and throughput for each block size and workload."""
    rows = []
    for wl in workloads:
        for b in block_sizes:
            res = run(d, wl, "paged", n_requests=n_requests, max_len=max_len, block_size=b,
                      seed=seed)
            rows.append({"workload": wl.name, "block_size": b, **res.shares(),
                         "waste": 1 - res.utilisation, "mean_batch": res.mean_batch,
                         "tokens_per_s": throughput(res, d), "preemptions": res.preemptions})
    return pd.DataFrame(rows)


def spread_sweep(d: Deployment, name: str, sigmas: list[float], *,
                 n_requests: int = SETTING.n_requests, max_len: int | None = None,
                 seed: int = SETTING.seed) -> pd.DataFrame:
    """Each allocator's utilisation and batch as the request lengths spread out."""
    rows = []
    max_len = d.max_context_tokens if max_len is None else max_len
    for sigma in sigmas:
        wl = workload(name, sigma)
        df, _ = compare(d, wl, n_requests=n_requests, max_len=max_len, seed=seed)
        reqs = sample_requests(wl, n_requests, max_len, seed)
        df["sigma"] = sigma
        df["mean_input_tokens"] = float(reqs.prompt.mean())
        df["mean_output_tokens"] = float(reqs.output.mean())
        rows.append(df)
    return pd.concat(rows, ignore_index=True)


def max_len_sweep(d: Deployment, wl: RequestLengths, max_lens: list[int], *,
                  n_requests: int = SETTING.n_requests, seed: int = SETTING.seed) -> pd.DataFrame:
    """Each allocator at several maximum sequence lengths (the reservation Max must make)."""
    rows = []
    for m in max_lens:
        df, _ = compare(d, wl, n_requests=n_requests, max_len=m, seed=seed)
        rows.append(df.assign(max_len=m))
    return pd.concat(rows, ignore_index=True)


# -- set against the paper --------------------------------------------------------------------

def paper_token_share(allocator: str) -> float:
    """The share of KV memory holding tokens in the paper's Fig. 2."""
    return papers.claim(f"fig2_{PAPER_SYSTEMS[allocator]}_token_states") / 100


def paper_batch(allocator: str) -> float:
    """The batch the paper's Fig. 13a reads for ShareGPT on OPT-13B."""
    return papers.claim(f"fig13_sharegpt_{PAPER_SYSTEMS[allocator]}")


def spread_against_paper(spread: pd.DataFrame) -> pd.DataFrame:
    """How the paper's figures constrain the spread: for each sigma of a :func:`spread_sweep`
    on the paper's setting, the largest gap between a simulated token share and Fig. 2's (in
    percentage points), between a simulated batch and Fig. 13's (relative), and paging's
    batch and throughput gains over Orca (Oracle) and Orca (Max), the chapter's headline."""
    rows = []
    for sigma, g in spread.groupby("sigma", sort=True):
        by = g.set_index("allocator")
        rows.append({
            "sigma": sigma,
            "share_gap_points": 100 * max(abs(by.loc[a, "token"] - paper_token_share(a))
                                          for a in ALLOCATORS),
            "batch_gap": max(abs(by.loc[a, "mean_batch"] / paper_batch(a) - 1)
                             for a in ALLOCATORS),
            "batch_gain_oracle": by.loc["oracle", "batch_gain"],
            "batch_gain_max": by.loc["max", "batch_gain"],
            "throughput_gain_oracle": by.loc["oracle", "throughput_gain"],
            "throughput_gain_max": by.loc["max", "throughput_gain"]})
    return pd.DataFrame(rows)


#: Fig. 2's labelled segments, by the simulation's category they correspond to (the paper's
#: "external fragmentation & others" is the simulation's external and free memory together).
FIG2_SEGMENTS = {"token": ("token_states",), "reserved": ("reservation",),
                 "internal": ("internal_fragmentation",),
                 "external": ("external_fragmentation_and_others",)}


def fig2_gaps(repro: pd.DataFrame) -> pd.DataFrame:
    """Every segment the paper's Fig. 2 labels, beside the simulation's share of the same
    memory (a :func:`paper_run` table): one row per allocator and segment, with the gap in
    percentage points (simulated minus paper)."""
    labelled = set(papers.table()["claim"])
    rows = []
    for _, r in repro.iterrows():
        for category, (segment,) in FIG2_SEGMENTS.items():
            claim = f"fig2_{PAPER_SYSTEMS[r['allocator']]}_{segment}"
            if claim not in labelled:
                continue
            simulated = r[category] + (r["free"] if category == "external" else 0.0)
            paper = papers.claim(claim) / 100
            rows.append({"allocator": r["allocator"], "label": r["label"],
                         "segment": CATEGORY_LABELS[category], "simulated": simulated,
                         "paper": paper, "gap_points": 100 * (simulated - paper)})
    return pd.DataFrame(rows)


def defensible_spreads(fit: pd.DataFrame, factor: float = 2.0) -> pd.DataFrame:
    """The spreads of a :func:`spread_against_paper` table that both of the paper's figures
    allow: within ``factor`` times the best gap to Fig. 2's token shares *and* within
    ``factor`` times the best gap to Fig. 13's batches. A spread that matches one figure
    while missing the other is not a reading of the paper."""
    if factor < 1:
        raise ValueError(f"factor must be at least 1 (the best spread itself), got {factor!r}")
    ok = ((fit["share_gap_points"] <= factor * fit["share_gap_points"].min())
          & (fit["batch_gap"] <= factor * fit["batch_gap"].min()))
    return fit[ok]


def strips(results: dict[str, Result]) -> pd.DataFrame:
    """Each snapshot as runs of adjacent slots with one category and owner (for drawing)."""
    rows = []
    for a, res in results.items():
        if res.layout is None:
            raise ValueError(f"{a}: run with snapshot=True to draw its memory")
        cat, owner = res.layout["category"], res.layout["owner"]
        edges = np.flatnonzero((np.diff(cat) != 0) | (np.diff(owner) != 0)) + 1
        starts = np.concatenate([[0], edges])
        ends = np.concatenate([edges, [len(cat)]])
        for s, e in zip(starts, ends):
            rows.append({"allocator": a, "label": LABELS[a], "start": int(s), "end": int(e),
                         "tokens": int(e - s), "category": CATEGORY_LABELS[CATEGORIES[cat[s]]],
                         "request": int(owner[s]), "step": res.layout["step"]})
    return pd.DataFrame(rows)


# -- the chapter's runs -----------------------------------------------------------------------

@cached()
def paper_run(setting: Setting = SETTING) -> tuple[pd.DataFrame, dict[str, Result]]:
    """Every allocator on the paper's setting, each with a snapshot of its memory, and the
    paper's Fig. 2 and Fig. 13 beside each allocator's simulated figures."""
    df, results = compare(paper_deployment(setting), workload(setting.workload, setting.sigma),
                          n_requests=setting.n_requests, seed=setting.seed,
                          block_size=setting.block_size, max_len=setting.max_len,
                          snapshot=True)
    df["paper_token_share"] = [paper_token_share(a) for a in df["allocator"]]
    df["paper_batch"] = [paper_batch(a) for a in df["allocator"]]
    return df, results


def paper_reproduction(setting: Setting = SETTING) -> pd.DataFrame:
    """The table of :func:`paper_run`: one row per allocator, simulated and paper's figures."""
    return paper_run(setting)[0]


@cached()
def spread_runs(setting: Setting = SETTING) -> pd.DataFrame:
    """:func:`spread_sweep` over the setting's spreads on the paper's setting."""
    return spread_sweep(paper_deployment(setting), setting.workload, list(setting.sigmas),
                        n_requests=setting.n_requests, max_len=setting.max_len,
                        seed=setting.seed)


@cached()
def block_size_runs(setting: Setting = SETTING) -> pd.DataFrame:
    """:func:`block_size_sweep` over the setting's block sizes, for each of its workloads."""
    return block_size_sweep(paper_deployment(setting),
                            [workload(w, setting.sigma) for w in setting.block_workloads],
                            list(setting.block_sizes), n_requests=setting.n_requests,
                            max_len=setting.max_len, seed=setting.seed)


@cached()
def h100_runs(setting: Setting = SETTING) -> pd.DataFrame:
    """:func:`max_len_sweep` over the setting's length limits on the H100 deployment."""
    return max_len_sweep(h100_deployment(setting), workload(setting.workload, setting.sigma),
                         list(setting.max_lens), n_requests=setting.n_requests,
                         seed=setting.seed)
