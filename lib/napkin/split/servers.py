"""Which server pairs win: every prefill pool x decode pool of rented datacenter chips
against each kind alone, in dollars per million output tokens at a service level.

The workloads are the essay's, at chapter 11's chat service level (each user's answer at
reading speed, the first token within its limit), a chat at MLPerf's Interactive limits, and
an offline batch whose only limits are the book's choice of loose ones. Every instance is one server of ``n_chips`` chips, priced
at chapter 11's median rental and drawing its share of the server at the wall; each GPU of
a prefill server sends its share of the caches over its own NIC.
"""

from __future__ import annotations

import itertools
from dataclasses import dataclass

import pandas as pd

from .. import tables
from . import pools

__all__ = ["ServerWorkload", "link_per_server", "NVIDIA", "pair_table", "priced_chips",
           "verdicts", "workloads"]

#: The chips of the one vendor whose generations Splitwise mixes.
NVIDIA = ("A100", "H100", "H200", "B200", "GB200", "GB300", "GH200")


@dataclass(frozen=True)
class ServerWorkload:
    """A stream of requests: prompt and answer lengths and the limits each must meet."""

    name: str
    input_tokens: int
    output_tokens: int
    ttft_limit_s: float
    tpot_limit_s: float
    source: str


#: An offline batch: nobody waits, so the limits only keep a batch from growing forever.
OFFLINE_TTFT_S, OFFLINE_TPOT_S = 600.0, 1.0


def workloads() -> tuple[ServerWorkload, ...]:
    """The essay's workloads: chapter 11's chat at its service level and at MLPerf's
    Interactive limits, chapter 8's coding agent and a document question at chapter 11's
    level, and chapter 11's chat lengths run offline."""
    from .. import buying
    from ..costs import chapter, service
    level = service.chat()
    tpot = 1 / level.tokens_per_s_per_user
    head = chapter.headline()
    coding = buying.presets()["coding agent"]
    at = f"chapter 11's service level ({level.tokens_per_s_per_user:g} tokens/s a user, " \
         f"first token within {level.first_token_s:g} s)"
    fast = tables.row("mlperf_datasets", "benchmark_model", "llama2-70b-99")
    return (
        ServerWorkload("chat", head.prompt_tokens, head.output_tokens, level.first_token_s,
                       tpot, f"chapter 11's headline request at {at}"),
        ServerWorkload("interactive chat", head.prompt_tokens, head.output_tokens,
                       fast["ttft_limit_interactive_ms"] / 1e3,
                       fast["tpot_limit_interactive_ms"] / 1e3,
                       "chapter 11's headline request at MLPerf's Interactive limits for "
                       "Llama 2 70B (data/mlperf_datasets.csv)"),
        ServerWorkload("coding agent", coding.prompt_tokens, coding.output_tokens,
                       level.first_token_s, tpot, f"chapter 8's preset at {at}"),
        ServerWorkload("document QA", 16_000, 200, level.first_token_s, tpot,
                       f"a long document and a short answer (this book's choice) at {at}"),
        ServerWorkload("offline batch", head.prompt_tokens, head.output_tokens, OFFLINE_TTFT_S,
                       OFFLINE_TPOT_S, f"chapter 11's headline request, no one waiting (a "
                       f"{OFFLINE_TTFT_S:g} s first token, {OFFLINE_TPOT_S:g} s a token)"),
    )


def link_per_server(n_chips: int) -> float:
    """GB/s a server of ``n_chips`` GPUs sends, one 400 Gb/s NIC per GPU (data/links.csv)."""
    nic = tables.row("links", "link", "400 Gb/s InfiniBand NIC")["bandwidth_GB_per_s"]
    return n_chips * float(nic)


def priced_chips() -> list[str]:
    """The datacenter chips chapter 11 prices (a rental quote and a power figure)."""
    from .. import hardware
    from .pair import is_desk
    out = []
    for chip in hardware.chips():
        if is_desk(chip):
            continue
        try:
            pools.rented_price(chip), pools.rented_power(chip)
        except ValueError:
            continue
        out.append(chip)
    return out


def pair_table(model: str = "Llama-3.3-70B", weights: str = "fp16", n_chips: int = 8,
               chips: list[str] | None = None, work=None) -> pd.DataFrame:
    """One row per workload and (prefill, decode) kind of server, each kind alone included
    (``prefill == decode``: one machine for both, :func:`napkin.split.pools.one_machine`)."""
    chips = chips or priced_chips()
    link = link_per_server(n_chips)
    rows = []
    for w in work or workloads():
        limits = dict(input_tokens=w.input_tokens, output_tokens=w.output_tokens,
                      ttft_limit_s=w.ttft_limit_s, tpot_limit_s=w.tpot_limit_s)
        for p, d in itertools.product(chips, chips):
            designs = [(True, pools.one_machine((p, n_chips), model, weights=weights,
                                                **limits))] if p == d else []
            designs.append((False, pools.design((p, n_chips), (d, n_chips), model,
                                                weights=weights, link_gb_per_s=link,
                                                **limits)))
            for alone, x in designs:
                rows.append({"workload": w.name, "prefill": p, "decode": d, "alone": alone,
                             "met": x.met, "usd_per_mtok": x.usd_per_mtok,
                             "joules_per_token": x.joules_per_token, "ttft_s": x.ttft_s,
                             "tpot_s": x.tpot_s, "prefill_share": x.prefill_share,
                             "batches": "/".join(str(q.batch) for q in x.pools),
                             "missed": x.missed})
    return pd.DataFrame(rows)


def verdicts(table: pd.DataFrame, chips=None) -> pd.DataFrame:
    """For each workload: the cheapest kind alone, the cheapest split (two kinds, or one
    kind in two pools) and how much less the split costs, a factor (alone over split);
    among ``chips`` only if given."""
    rows = []
    if chips is not None:
        table = table[table["prefill"].isin(chips) & table["decode"].isin(chips)]
    for w, g in table[table["met"]].groupby("workload", sort=False):
        alone = g[g["alone"]].sort_values("usd_per_mtok").iloc[0]
        split = g[~g["alone"]].sort_values("usd_per_mtok").iloc[0]
        mixed = g[~g["alone"] & (g["prefill"] != g["decode"])].sort_values(
            "usd_per_mtok").iloc[0]
        rows.append({"workload": w, "best_alone": alone["prefill"],
                     "best_alone_usd": alone["usd_per_mtok"],
                     "best_split": f"{split['prefill']} -> {split['decode']}",
                     "best_split_usd": split["usd_per_mtok"],
                     "split_gain": alone["usd_per_mtok"] / split["usd_per_mtok"],
                     "best_mixed": f"{mixed['prefill']} -> {mixed['decode']}",
                     "best_mixed_usd": mixed["usd_per_mtok"],
                     "mixed_gain": alone["usd_per_mtok"] / mixed["usd_per_mtok"]})
    return pd.DataFrame(rows)
