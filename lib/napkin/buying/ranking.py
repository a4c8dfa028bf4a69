"""Ranking the machines for a workload, and the tables that explain a ranking: ranges as
text, reasons for the unranked, which side binds each machine."""

from __future__ import annotations

import numpy as np
import pandas as pd

from ..decide import against_best
from ..units import GB, TFLOPS, GiB
from .estimate import estimate
from .machine import Machine, machines, nan_if_empty
from .reference import REFERENCE_FORMAT
from .estimate import model_for
from .workload import Workload

SORT = {"ttft": ("ttft_mid_s", True), "decode": ("decode_mid_tok_per_s", False),
        "concurrency": ("per_user_mid_tok_per_s", False)}
NO_RUN = "no published prefill run in data/ to estimate it from"
#: The machines that sit on a desk with one pool of unified memory besides Apple's chips.
DESK = ("DGX Spark", "Strix Halo")
#: Graphics cards sold for workstations: they sit on a desk too, inside a computer bought
#: separately, with their own memory.
WORKSTATION_CARDS = ("RTX PRO 6000 Blackwell", "RTX 6000 Ada")


def on_desk(ranked: pd.DataFrame) -> pd.Series:
    """Which rows are unified-memory machines on a desk: every Apple chip, and :data:`DESK`."""
    return (ranked["vendor"] == "Apple") | ranked["machine"].isin(DESK)


#: A concurrent decode step whose arithmetic and reads take within this factor of each other
#: is bound by neither: the middle estimates carry more error than that (chapter 8's check).
TIE = 1.25


def bound_by(ranked: pd.DataFrame, tie: float = TIE) -> pd.DataFrame:
    """Which side binds each ranked machine's decode step of all users at once, at the middle
    estimates: its arithmetic (``step_compute_s``, at the rate its published prefill runs
    reached, or at its roof without one) or its reads (``step_read_s``, at its discounted
    bandwidth). ``ratio`` is the slower side over the faster; ``bound`` is "memory",
    "compute", or "neither" when the two are within ``tie`` of each other."""
    if not tie >= 1:
        raise ValueError(f"tie must be a factor of at least 1, got {tie!r}")
    df = ranked[ranked["rank"].notna()][["machine", "vendor", "step_compute_s",
                                         "step_read_s"]].copy()
    slower = df[["step_compute_s", "step_read_s"]].max(axis=1)
    faster = df[["step_compute_s", "step_read_s"]].min(axis=1)
    df["ratio"] = slower / faster
    df["bound"] = np.where(df["ratio"] < tie, "neither",
                           np.where(df["step_read_s"] >= df["step_compute_s"], "memory",
                                    "compute"))
    return df.reset_index(drop=True)


def rank(w: Workload, among: list[Machine] | None = None) -> pd.DataFrame:
    """Every machine's estimate for ``w``, best first by what the workload ranks by.

    Only machines that hold the workload in the memory their GPU may use by default are
    ranked. The rest come after, unranked, with the reason: first those that hold it only
    after a system setting is raised (a Mac over its default GPU limit), then those that
    cannot. For the first token, machines without a published prefill run come after those
    with one, ranked by nothing (their roofline bound is shown, not compared).
    """
    df = pd.DataFrame([estimate(m, w) for m in (among or machines())])
    col, ascending = SORT[w.rank_by]
    ok = df["fits"] & df[col].notna()
    ranked = df[ok].sort_values(col, ascending=ascending, kind="stable")
    rest = df[~ok].sort_values(["fits", "fits_after_raising", "machine"],
                               ascending=[False, False, True], kind="stable")
    out = pd.concat([ranked, rest], ignore_index=True)
    out.insert(0, "rank", [i + 1 for i in range(len(ranked))] + [pd.NA] * len(rest))
    out["rank"] = out["rank"].astype("Int64")
    out["why_unranked"] = np.where(out["rank"].isna(), np.where(
        out["message"] != "", out["message"], NO_RUN), "")
    return out


#: Each ranking's middle estimate and range, and which way is better: (middle, low end, high
#: end, "lower" or "higher").
BANDS = {"ttft": ("ttft_mid_s", "ttft_fast_s", "ttft_slow_s", "lower"),
         "decode": ("decode_mid_tok_per_s", "decode_low_tok_per_s", "decode_high_tok_per_s",
                    "higher"),
         "concurrency": ("per_user_mid_tok_per_s", "per_user_low_tok_per_s",
                         "per_user_high_tok_per_s", "higher")}


def decision(w: Workload, among: list[Machine] | None = None) -> pd.DataFrame:
    """The ranked machines for ``w``, each against the top one at both ends of their ranges
    (:func:`napkin.decide.against_best`): ``margin`` behind the top, and ``verdict`` ``best``,
    ``behind`` (the order holds however the estimates err within their ranges) or ``tie``
    (the ranges overlap)."""
    value, low, high, better = BANDS[w.rank_by]
    ranked = rank(w, among)
    return against_best(ranked[ranked["rank"].notna()], value, low, high, better=better)


def decision_table(workloads: dict[str, Workload],
                   among: list[Machine] | None = None) -> pd.DataFrame:
    """One row per workload: the top machine with its middle estimate and range, the
    machines whose ranges overlap its own (a tie the estimates cannot break), and the first
    machine that is behind at every end of both ranges, with its margin."""
    rows = []
    for name, w in workloads.items():
        d = decision(w, among)
        value, low, high, _ = BANDS[w.rank_by]
        top, ties = d.iloc[0], d[d["verdict"] == "tie"]
        behind = d[d["verdict"] == "behind"]
        nxt = behind.iloc[0] if len(behind) else None
        rows.append({"workload": name, "rank_by": w.rank_by, "best": top["machine"],
                     "value": top[value], "low": top[low], "high": top[high],
                     "ties": tuple(ties["machine"]),
                     "next": None if nxt is None else nxt["machine"],
                     "next_margin": np.nan if nxt is None else float(nxt["margin"])})
    return pd.DataFrame(rows)


def best(w: Workload, among: list[Machine] | None = None) -> pd.Series:
    """The top machine for ``w``, or a ValueError saying why there is none."""
    r = rank(w, among)
    if r["rank"].isna().all():
        _, total, _ = model_for(w)
        raise ValueError(f"no machine in data/ can run this workload: {w.model} at "
                         f"{w.weight_format} needs {total / GiB:,.1f} GiB of weights plus "
                         f"{r['kv_per_user_GiB'].iloc[0]:,.2f} GiB of cache per user "
                         f"for {w.users} users; the most any GPU may use is "
                         f"{r['usable_GiB'].max():,.0f} GiB")
    return r.iloc[0]


def machine_table(among: list[Machine] | None = None) -> pd.DataFrame:
    """The inputs behind every ranking, one row per machine, with their sources. The share
    of the roof is each reference run's own (a Metal run against its configuration's
    roof), lowest and highest."""
    rows = []
    for m in among or machines():
        arith, roof, label = m.roof(REFERENCE_FORMAT)
        fracs = m.decode_fractions
        rows.append({
            "machine": m.name, "family": m.family, "backend": m.backend,
            "bandwidth_GB_per_s": m.bandwidth_bytes_per_s / GB,
            "capacity_GiB": m.capacity_bytes / GiB, "capacity_basis": m.capacity_basis,
            "usable_GiB": m.usable_bytes / GiB, "gpu_limit_basis": m.gpu_limit_basis,
            "roof_arithmetic": arith, "roof_TFLOPS": (roof or np.nan) / TFLOPS,
            "roof_label": label,
            "prefill_runs": len(m.prefill_flops), "prefill_note": m.prefill_note,
            "prefill_TFLOPS_low": nan_if_empty(m.prefill_flops, min) / TFLOPS,
            "prefill_TFLOPS_high": nan_if_empty(m.prefill_flops, max) / TFLOPS,
            "prefill_fraction_low": nan_if_empty(m.prefill_fractions, min),
            "prefill_fraction_high": nan_if_empty(m.prefill_fractions, max),
            "fraction_low": fracs[0], "fraction_mid": fracs[1], "fraction_high": fracs[2],
            "fraction_basis": m.fraction_basis,
            "priced_configs": len(m.prices),
            "source_bandwidth": m.sources.get("bandwidth", ""),
            "source_roof": m.sources.get("flops", ""),
        })
    return pd.DataFrame(rows)


def hardware_and_software(ranked: pd.DataFrame) -> pd.DataFrame:
    """The first-token ranking split in two: the roofline bound (hardware: the arithmetic's
    peak) and how much of it the published runs reached (mostly software: backend, kernels,
    build), for every ranked machine with a bound and a run of an undisputed variant.
    ``reached`` is bound over estimate; ``order_by_bound`` the rank the bound alone gives."""
    df = ranked[ranked["rank"].notna() & ranked["ttft_bound_s"].notna() &
                (ranked["prefill_note"] == "")].copy()
    df["reached"] = df["ttft_bound_s"] / df["ttft_mid_s"]
    df["order_by_bound"] = df["ttft_bound_s"].rank(method="first").astype(int)
    df["order_by_runs"] = df["ttft_mid_s"].rank(method="first").astype(int)
    return df[["machine", "vendor", "backend", "ttft_bound_s", "ttft_mid_s", "reached",
               "roof_label", "order_by_bound", "order_by_runs"]].reset_index(drop=True)


def swapped_pairs(split: pd.DataFrame) -> list[tuple[str, str]]:
    """Pairs (a, b) the bound puts a first and the published runs put b first."""
    out = []
    rows = list(split.itertuples())
    for a in rows:
        for b in rows:
            if a.order_by_bound < b.order_by_bound and a.order_by_runs > b.order_by_runs:
                out.append((a.machine, b.machine))
    return out


def fmt_range(low: float, mid: float, high: float, digits: int = 0) -> str:
    """``mid (low–high)``, or ``mid`` when the range is one value; blank for NaN."""
    if mid != mid:  # NaN
        return ""
    one = f"{mid:,.{digits}f}"
    if f"{low:,.{digits}f}" == f"{high:,.{digits}f}":
        return one
    return f"{one} ({low:,.{digits}f}–{high:,.{digits}f})"


def span(low: float, high: float, digits: int = 0, pct: bool = False) -> str:
    """``low–high``, or one value when they print the same; blank for NaN."""
    if low != low:
        return ""
    f = (lambda v: f"{v:.{digits}%}") if pct else (lambda v: f"{v:,.{digits}f}")
    return f(low) if f(low) == f(high) else f"{f(low)}–{f(high)}"


def roof_text(arith: str, tflops: float, label: str) -> str:
    """What a machine is held to, for a table cell: ``"1,979 (INT8, dense tensor)"``."""
    if tflops != tflops:
        return label
    return f"{tflops:,.0f} ({label})"


def _ranges(df: pd.DataFrame, stem: str, unit: str, digits: int) -> list[str]:
    return [fmt_range(a, b, c, digits) for a, b, c in zip(
        df[f"{stem}_low_{unit}"], df[f"{stem}_mid_{unit}"], df[f"{stem}_high_{unit}"])]


def ranking_display(ranked: pd.DataFrame, limit: int | None = None) -> pd.DataFrame:
    """A ranking formatted for the page: ranges as text, reasons for the unranked."""
    df = ranked if limit is None else ranked.head(limit)
    return pd.DataFrame({
        "rank": df["rank"].map(lambda r: "" if pd.isna(r) else str(int(r))),
        "machine": [m + (" †" if n else "") for m, n in zip(df["machine"], df["prefill_note"])],
        "ttft": [fmt_range(a, b, c) for a, b, c in
                 zip(df["ttft_fast_s"], df["ttft_mid_s"], df["ttft_slow_s"])],
        "bound": df["ttft_bound_s"].map(lambda v: "" if v != v else f"{v:,.1f}"),
        "roof": [roof_text(a, t, lab) for a, t, lab in
                 zip(df["roof_arithmetic"], df["roof_TFLOPS"], df["roof_label"])],
        "reached": [span(a, b, pct=True) for a, b in
                    zip(df["prefill_fraction_low"], df["prefill_fraction_high"])],
        "decode": _ranges(df, "decode", "tok_per_s", 1),
        "discount": [fmt_range(a, b, c, 0).replace(",", "") + " %" if b == b else ""
                     for a, b, c in zip(100 * df["fraction_low"], 100 * df["fraction_mid"],
                                        100 * df["fraction_high"])],
        "per_user": _ranges(df, "per_user", "tok_per_s", 1),
        "memory": [f"{n:,.0f} of {u:,.0f} GiB" + (f" ({c:,.0f} in all)" if u < c else "")
                   for n, u, c in zip(df["need_GiB"], df["usable_GiB"], df["capacity_GiB"])],
        "users": df["max_users"].map("{:,}".format),
        "price": [f"{cur} {p:,.0f} ({what})" if p == p else "" for p, cur, what in
                  zip(df["price"], df["currency"], df["price_configuration"])],
        "note": df["why_unranked"],
    })


def bound_sentence(bound: pd.DataFrame) -> str:
    """Which machine's step is bound by what (a :func:`~napkin.buying.ranking.bound_by`
    table), in one sentence, slowest side named with both times: "the M3 Ultra's by its
    arithmetic (0.56 s against 0.21 s of reads, 2.7x); DGX Spark's by memory (...)"."""
    if bound.empty:
        raise ValueError("bound is empty: no ranked machine to describe")
    words = {"compute": "by its arithmetic", "memory": "by its reads",
             "neither": "by neither"}
    parts = []
    for _, r in bound.iterrows():
        name = f"the {r['machine']}'s" if r["vendor"] == "Apple" else f"{r['machine']}'s"
        times = (f"{r['step_compute_s']:.2f} s of arithmetic against {r['step_read_s']:.2f} s "
                 "of reads")
        tail = (f" ({times}, {r['ratio']:.1f}x)" if r["bound"] != "neither" else
                f" ({times}, within {r['ratio']:.2f}x of each other)")
        parts.append(f"{name} step is bound {words[r['bound']]}{tail}")
    return "; ".join(parts)
