"""The decode discount: the fraction of the bandwidth ceiling published decode runs reach.

The middle estimate is the machine's family's median (chapter 1's published runs): Apple
Silicon, or NVIDIA's GPUs under CUDA. A vendor with no family there (AMD) is discounted by
the machine's own runs where it has some (Strix Halo), else by every run pooled. The range
is the family's quartiles, widened to take in the machine's own runs of the reference model
where they fall outside it (the Ultras' do, below).

A machine faster than every run of its family is not given the family's fraction: the
fraction falls as bandwidth rises (a fixed cost per token weighs more when the bytes take
less time), and the only runs past that bandwidth, the datacenter GPUs' own runs of the
reference model, reach about half the consumer cards' fraction. Such a machine is
discounted by those runs (:data:`DATACENTER`, :func:`datacenter_quartiles`): their median in
the middle, the whole span of their readings as the range (two runs, each read as two
variants, are too few for quartiles), and a chip's own run in the middle where it has one.

Why the family's middle and not the machine's own runs: those are of a 3.6 GiB model, and
the fraction a machine reaches grows with the bytes a token reads (a fixed cost per token
weighs less): the same Apple chips reach more at Q8_0 and more again at F16
(:func:`fraction_by_format`), and a 70B model reads ten times what the reference does.
"""

from __future__ import annotations

import math

import pandas as pd

from .. import hardware, published, tables
from ..units import GB
from .reference import DISPUTED, SCOREBOARD_NAMES, reference_runs

#: Chapter 1's machine families, by vendor.
FAMILY = {"Apple": "Apple Silicon", "NVIDIA": "GPU (CUDA)"}
POOLED = "all published runs"
OWN = "its own runs"
#: The family of machines faster than every run of their own family.
DATACENTER = "datacenter GPUs' own runs"
_H100 = "H100 80GB (HBM3 => SXM5, see note)"


def fraction_quartiles(h100_reading: str | None = None) -> pd.DataFrame:
    """Quartiles of decode's fraction of the bandwidth ceiling per machine family (chapter 1's
    published runs), and over every run pooled.

    The H100 scoreboard run is left out by default: one copy of the scoreboard calls the card
    SXM, another PCIe, so its ceiling is not known. ``h100_reading="H100 SXM"`` or
    ``"H100 PCIe"`` puts it in with that card's bandwidth, to show what each reading does.
    """
    runs = published.all_machines()
    disputed = runs["machine"].str.startswith(tuple(DISPUTED))
    if h100_reading is None:
        runs = runs[~disputed]
    else:
        if h100_reading not in SCOREBOARD_NAMES[_H100]:
            raise ValueError(f"h100_reading must be 'H100 SXM' or 'H100 PCIe', "
                             f"got {h100_reading!r}")
        runs = runs.copy()
        bw = hardware.chip(h100_reading).bandwidth_bytes_per_s
        runs.loc[disputed, "bandwidth_bytes_per_s"] = bw
        runs["ceiling_tokens_per_s"] = runs["bandwidth_bytes_per_s"] / runs["bytes_per_token"]
        runs["fraction_of_ceiling"] = runs["tokens_per_s"] / runs["ceiling_tokens_per_s"]
    rows = []
    for family, g in list(runs.groupby("family")) + [(POOLED, runs)]:
        rows.append({"family": family, **_quartiles(g["fraction_of_ceiling"]),
                     "fastest_GB_per_s": g["bandwidth_bytes_per_s"].max() / GB,
                     "source_url": "; ".join(tables.sources(g)[:3])})
    rows.append(datacenter_quartiles(max(r["fastest_GB_per_s"] for r in rows)))
    return pd.DataFrame(rows)


def datacenter_quartiles(fastest_GB_per_s: float) -> dict:
    """The :data:`DATACENTER` family: the own runs of the reference model
    (:func:`own_decode_runs`) of chips faster than ``fastest_GB_per_s``, the fastest run of
    any family; a run whose variant is disputed counts at each variant's bandwidth."""
    own = own_decode_runs()
    fast = own[own["chip"].map(lambda c: hardware.chip(c).bandwidth_bytes_per_s / GB)
               > fastest_GB_per_s]
    return {"family": DATACENTER, **_quartiles(fast["fraction_of_ceiling"]),
            "low": float(fast["fraction_of_ceiling"].min()),
            "high": float(fast["fraction_of_ceiling"].max()),
            "runs": fast["run_id"].nunique(), "readings": len(fast),
            "chips": ", ".join(sorted(set(fast["chip"]))), "fastest_GB_per_s": math.nan,
            "source_url": "; ".join(sorted(set(fast["source_url"])))}


def _quartiles(f: pd.Series) -> dict:
    return {"runs": len(f), "q25": float(f.quantile(0.25)), "q50": float(f.median()),
            "q75": float(f.quantile(0.75))}


def h100_decode_readings() -> pd.DataFrame:
    """The disputed H100 decode run read both ways: its fraction of each card's ceiling."""
    run = published.gpus()
    run = run[run["machine"].str.startswith("H100 80GB")].iloc[0]
    rows = []
    for name in SCOREBOARD_NAMES[_H100]:
        bw = hardware.chip(name).bandwidth_bytes_per_s
        rows.append({"reading": name, "bandwidth_GB_per_s": bw / GB,
                     "tg128_tok_per_s": float(run["tokens_per_s"]),
                     "fraction_of_ceiling": float(run["tokens_per_s"]) /
                     (bw / float(run["bytes_per_token"])),
                     "source_url": run["source_url"]})
    return pd.DataFrame(rows)


def own_decode_runs() -> pd.DataFrame:
    """Each chip's own published decode runs of the reference model (tg128 of Llama-2-7B at
    Q4_0; the scoreboards without flash attention, as chapter 1 reads them), each as a
    fraction of that chip's ceiling: its bandwidth over the bytes a token reads. A run whose
    variant is disputed counts for each variant, at that variant's bandwidth."""
    df = reference_runs("tg128", flash_attention=("0",))
    chips = hardware.chips()
    df = df[[c in chips and "memory_bandwidth_GB_per_s" in chips[c].specs
             for c in df["chip"]]].copy()
    bw = df["chip"].map(lambda c: chips[c].bandwidth_bytes_per_s)
    df["bytes_per_token"] = published.llama2_7b_bytes_per_token("Q4_0")
    df["fraction_of_ceiling"] = df["tok_per_s"] * df["bytes_per_token"] / bw
    return df.reset_index(drop=True)


def fraction_by_format(chips: list[str]) -> pd.DataFrame:
    """Apple chips' decode fraction of the ceiling on Llama-2-7B at each format chapter 1's
    data has (F16 reads 3.5 times the bytes of Q4_0 per token): lowest and highest over the
    chips' GPU configurations, by format."""
    df = published.apple("tg128")
    df = df[df["spec_chip"].isin(chips)]
    out = df.groupby("quant").agg(runs=("fraction_of_ceiling", "size"),
                                  low=("fraction_of_ceiling", "min"),
                                  high=("fraction_of_ceiling", "max"),
                                  bytes_per_token=("bytes_per_token", "first"))
    return out.reset_index().sort_values("bytes_per_token", ignore_index=True)


def widened(family: tuple[float, float, float], own: tuple[float, ...]) -> tuple[float, ...]:
    """(low, middle, high): the family's quartiles, the range widened to take in ``own``."""
    low, mid, high = family
    if not own:
        return low, mid, high
    return min(low, min(own)), mid, max(high, max(own))
