"""Which desk pairs win: every pair of desk machines (one prefills, the other decodes, the
cache crossing a link) against each machine alone, for one user, in request latency.

The workloads are the essay's: a chat, a coding agent that pastes long files (the essay's
40,000-token prompt, chapter 8's preset) and a document question (a long prompt, a short
answer; this book's lengths). The models are three the desk machines run with llama.cpp: a
small one at 16 bits, a dense 70B and a mixture of experts at 4 bits.
"""

from __future__ import annotations

import itertools
from dataclasses import dataclass

import pandas as pd

from .. import buying, catalog, kvcache
from ..units import GB
from .pair import DoesNotFit, is_desk, predict_split

__all__ = ["break_even_link", "DeskWorkload", "desk_chips", "link_sweep", "MODELS", "pair_table",
           "verdicts", "WORKLOADS"]


@dataclass(frozen=True)
class DeskWorkload:
    """A request: its prompt and answer lengths, and where they come from."""

    name: str
    input_tokens: int
    output_tokens: int
    source: str


def _workloads() -> tuple[DeskWorkload, ...]:
    p = buying.presets()
    return (
        DeskWorkload("chat", p["chat"].prompt_tokens, p["chat"].output_tokens,
                     "chapter 8's chat preset"),
        DeskWorkload("coding agent", p["coding agent"].prompt_tokens,
                     p["coding agent"].output_tokens,
                     "the essay's 40k-token prompt, chapter 8's preset"),
        DeskWorkload("document QA", 16_000, 200, "this book's choice: a long document, a "
                                                 "short answer"),
    )


WORKLOADS = _workloads()
#: (model, weight format): what a desk runs.
MODELS = (("Llama-3.1-8B", "F16"), ("Llama-3.3-70B", "Q4_K"), ("gpt-oss-120b", "MXFP4"))


def desk_chips() -> list[str]:
    """The desk machines chapter 8 prices (with a bandwidth, a capacity and a prefill run)."""
    return [m.name for m in buying.machines() if is_desk(m.name)]


def pair_table(link_gb_per_s: float, workloads=WORKLOADS, models=MODELS,
               chips: list[str] | None = None) -> pd.DataFrame:
    """One row per workload, model and (prefill, decode) pair that fits, each machine alone
    included (``prefill == decode``, no link): the split's times in seconds."""
    chips = chips or desk_chips()
    rows = []
    for w, (model, fmt) in itertools.product(workloads, models):
        for a, b in itertools.product(chips, chips):
            try:
                p = predict_split(a, b, model, weights=fmt, kv="f16",
                                  input_tokens=w.input_tokens, output_tokens=w.output_tokens,
                                  link_gb_per_s=None if a == b else link_gb_per_s)
            except DoesNotFit:
                continue
            except ValueError as err:  # a machine with no prefill run cannot prefill
                if "no published prefill run" in str(err):
                    continue
                raise
            rows.append({"workload": w.name, "model": model, "format": fmt,
                         "prefill": a, "decode": b, "alone": a == b,
                         "ttft_s": p.ttft_s, "transfer_s": p.transfer_s,
                         "transfer_bytes": p.transfer_bytes, "tpot_s": p.tpot_s,
                         "e2e_latency_s": p.e2e_latency_s})
    return pd.DataFrame(rows)


def verdicts(table: pd.DataFrame, owned: str, candidate: str) -> pd.DataFrame:
    """For each workload and model: the fastest machine alone, the fastest pair, the
    fastest helper for a reader who owns ``owned`` and keeps it for decode, and what
    ``candidate`` as that helper gives, each margin a factor (slower over faster)."""
    rows = []
    for (w, m), g in table.groupby(["workload", "model"], sort=False):
        alone = g[g["alone"]].sort_values("e2e_latency_s")
        pairs = g[~g["alone"]].sort_values("e2e_latency_s")
        mine = g[(g["decode"] == owned) & ~g["alone"]].sort_values("e2e_latency_s")
        own = g[(g["prefill"] == owned) & g["alone"]]
        best_one, best_pair = alone.iloc[0], pairs.iloc[0]
        row = {"workload": w, "model": m, "format": best_one["format"],
               "best_alone": best_one["prefill"], "best_alone_s": best_one["e2e_latency_s"],
               "best_pair": f"{best_pair['prefill']} -> {best_pair['decode']}",
               "best_pair_s": best_pair["e2e_latency_s"],
               "pair_over_alone": best_one["e2e_latency_s"] / best_pair["e2e_latency_s"]}
        if len(own) and len(mine):
            row.update({"owned_s": own["e2e_latency_s"].iloc[0],
                        "helper": mine.iloc[0]["prefill"],
                        "helper_s": mine.iloc[0]["e2e_latency_s"],
                        "helper_gain": own["e2e_latency_s"].iloc[0]
                        / mine.iloc[0]["e2e_latency_s"]})
            cand = mine[mine["prefill"] == candidate]
            if len(cand):
                row.update({"candidate_s": cand["e2e_latency_s"].iloc[0],
                            "candidate_gain": own["e2e_latency_s"].iloc[0]
                            / cand["e2e_latency_s"].iloc[0]})
        rows.append(row)
    return pd.DataFrame(rows)


def link_sweep(prefill: str, decode: str, model: str, weights: str, links_gb_per_s,
               workloads=WORKLOADS) -> pd.DataFrame:
    """A request's time on ``prefill`` -> ``decode`` at each link bandwidth, with the cache
    streamed layer by layer and sent after the last layer, beside ``decode`` alone."""
    rows = []
    for w in workloads:
        kw = dict(weights=weights, kv="f16", input_tokens=w.input_tokens,
                  output_tokens=w.output_tokens)
        alone = predict_split(decode, decode, model, link_gb_per_s=None, **kw).e2e_latency_s
        for link in links_gb_per_s:
            for overlap, cache in ((True, "streamed by layer"), (False, "sent after prefill")):
                s = predict_split(prefill, decode, model, link_gb_per_s=float(link),
                                  overlap=overlap, **kw)
                rows.append({"workload": w.name, "link_GB_per_s": float(link), "cache": cache,
                             "e2e_s": s.e2e_latency_s, "ttft_s": s.ttft_s,
                             "transfer_s": s.transfer_s, "alone_s": alone})
    return pd.DataFrame(rows)


def break_even_link(prefill: str, decode: str, model: str, weights: str, w: DeskWorkload,
                    overlap: bool = True) -> float:
    """The link (GB/s each way) below which ``prefill`` -> ``decode`` finishes a request no
    sooner than ``decode`` alone (NaN: the pair loses on any link)."""
    kw = dict(weights=weights, kv="f16", input_tokens=w.input_tokens,
              output_tokens=w.output_tokens)
    alone = predict_split(decode, decode, model, link_gb_per_s=None, **kw).e2e_latency_s
    p = predict_split(prefill, decode, model, link_gb_per_s=1.0, overlap=overlap, **kw)
    # the time is the same on every link but for the cache's arrival: solve for the link
    # at which the arrival uses up all the prefill saves
    spare = alone - p.decode_s  # what the first token may take and still tie
    if spare <= p.prefill_s:
        return float("nan")
    layers = len(kvcache.layers(catalog.config(model)))
    if overlap:  # arrival = max(prefill + t / L, prefill / L + t), t = bytes / link
        t = min((spare - p.prefill_s) * layers, spare - p.prefill_s / layers)
    else:
        t = spare - p.prefill_s
    return p.transfer_bytes / t / GB
