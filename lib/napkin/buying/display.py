"""A ranking as the page shows it: ranges as text, reasons for the unranked."""

from __future__ import annotations

import pandas as pd


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
