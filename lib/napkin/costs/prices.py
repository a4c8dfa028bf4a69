"""What things cost, read from ``data/`` with their dates: renting a GPU by the hour, an API
by the million tokens, a desk machine once, and electricity by the kWh.

Prices move within weeks, so every summary here keeps the dates of the quotes behind it,
and :func:`age_days` says how old they are on a given day (the book's build date).
A summary is the median of the latest quote of each provider (a provider read twice counts
once, at its later reading, and one listing several products on that day counts once, at
their median), with the cheapest and the dearest beside it; nothing is averaged with a quote
no source gives.
"""

from __future__ import annotations

import datetime as dt

import pandas as pd

from .. import tables
from ..units import require_positive

__all__ = ["age_days", "api_price", "api_quotes", "api_usd_per_mtok", "COMMITTED",
           "committed_price", "committed_quotes", "day", "DEFAULT_REGION", "electricity",
           "electricity_range", "list_prices", "ON_DEMAND", "price_dates", "rental_price",
           "rental_quotes", "rental_table", "span_text", "STANDS_FOR"]

#: Offers that a reader can rent by the hour today, without a reservation or a spot bid.
ON_DEMAND = ("on-demand", "on-demand, instance with host", "marketplace")
#: Contracts that pay every hour of a term, used or not (data/gpu_rental_prices.csv).
COMMITTED = ("committed, 1 year",)
#: A quote whose variant its source does not name, read as the part it stands for: an index
#: of "80GB H100" contracts at GPU clouds, whose 8-GPU servers are HGX (SXM) boards.
STANDS_FOR = {"H100 (variant not stated)": "H100 SXM"}
#: The electricity price the book defaults to: the U.S. residential average.
DEFAULT_REGION = "United States"


def day(text: str) -> dt.date:
    """A table's date (``2026-09-25``, ``2026-09`` or ``2026``) as the first day it names."""
    parts = [int(p) for p in str(text).split("-")]
    if not 1 <= len(parts) <= 3:
        raise ValueError(f"price_date must be YYYY, YYYY-MM or YYYY-MM-DD, got {text!r}")
    return dt.date(*(parts + [1] * (3 - len(parts))))


def rental_quotes(chip: str | None = None) -> pd.DataFrame:
    """The latest on-demand price per GPU-hour of each provider, one quote per provider: where
    it lists several products on its latest date (one GPU, or one of a server of eight), their
    median, with ``products`` how many; for ``chip`` or for every chip."""
    df = tables.load("gpu_rental_prices")
    df = df[df["offer"].isin(ON_DEMAND)].copy()
    if chip is not None:
        if chip not in set(df["chip"]):
            raise ValueError(f"no on-demand rental price for {chip!r} in data/gpu_rental_prices"
                             f".csv; priced: {', '.join(sorted(set(df['chip'])))}")
        df = df[df["chip"] == chip]
    df["day"] = df["price_date"].map(day)
    latest = df[df["day"] == df.groupby(["chip", "provider"])["day"].transform("max")]
    one = latest.groupby(["chip", "provider"], as_index=False).agg(
        price=("price", "median"), products=("price", "size"), day=("day", "first"),
        offer=("offer", "first"), confidence=("confidence", "first"),
        source_url=("source_url", "first"))
    return one.sort_values(["chip", "price"]).reset_index(drop=True)


def _summary(prices: pd.Series, days: pd.Series) -> dict:
    return {"quotes": int(len(prices)), "low": float(prices.min()),
            "median": float(prices.median()), "high": float(prices.max()),
            "oldest": min(days), "newest": max(days)}


def rental_price(chip: str) -> dict:
    """USD per GPU-hour to rent ``chip`` on demand: the median of the providers' latest
    quotes (``median``), the cheapest (``low``) and dearest (``high``), how many, and the
    dates of the oldest and newest."""
    q = rental_quotes(chip)
    return {"chip": chip, **_summary(q["price"], q["day"])}


def committed_quotes(chip: str | None = None) -> pd.DataFrame:
    """Prices per GPU-hour of contracts that pay every hour of a term (``COMMITTED``), the
    latest reading of each, for ``chip`` (a quote that does not name its variant counts for
    the part it stands for, :data:`STANDS_FOR`) or for every chip; empty where none is
    recorded."""
    df = tables.load("gpu_rental_prices")
    df = df[df["offer"].isin(COMMITTED)].copy()
    df["chip"] = df["chip"].replace(STANDS_FOR)
    df["day"] = df["price_date"].map(day)
    if chip is not None:
        df = df[df["chip"] == chip]
    latest = df.groupby(["chip", "provider", "offer"])["day"].transform("max")
    return df[df["day"] == latest].sort_values(["chip", "price"]).reset_index(drop=True)


def committed_price(chip: str) -> dict | None:
    """USD per GPU-hour of the cheapest recorded contract for ``chip`` (every hour of its
    term is paid), with its term, date and source; None where none is recorded."""
    q = committed_quotes(chip)
    if q.empty:
        return None
    r = q.iloc[0]
    return {"chip": chip, "price": float(r["price"]), "offer": r["offer"],
            "provider": r["provider"], "day": r["day"], "confidence": r["confidence"],
            "source_url": r["source_url"]}


def rental_table(chips: list[str]) -> pd.DataFrame:
    """:func:`rental_price` for each chip, one row each."""
    return pd.DataFrame([rental_price(c) for c in chips])


def api_quotes(model: str) -> pd.DataFrame:
    """Each provider's listed price per million input and output tokens for ``model``, one
    row per provider (superseded prices are left out)."""
    df = tables.load("api_prices")
    df = df[df["status"] == "listed"]
    if model not in set(df["model"]):
        raise ValueError(f"no listed API price for {model!r} in data/api_prices.csv; priced: "
                         f"{', '.join(sorted(set(df['model'])))}")
    df = df[df["model"] == model]
    wide = df.pivot_table(index="provider", columns="direction", values="price",
                          aggfunc="first")
    days = df.groupby("provider")["price_date"].agg(lambda s: max(map(day, s)))
    wide = wide.dropna(subset=["input", "output"])
    return pd.DataFrame({"provider": wide.index, "input_usd_per_mtok": wide["input"].values,
                         "output_usd_per_mtok": wide["output"].values,
                         "day": days.loc[wide.index].values}).reset_index(drop=True)


def api_usd_per_mtok(input_usd_per_mtok, output_usd_per_mtok, prompt_tokens, output_tokens):
    """Dollars per million *output* tokens of a request of ``prompt_tokens`` in and
    ``output_tokens`` out: the output price plus the input price weighted by the prompt's
    share (equation ``eq-cost-api``)."""
    return output_usd_per_mtok + input_usd_per_mtok * prompt_tokens / output_tokens


def api_price(model: str, prompt_tokens: int, output_tokens: int) -> dict:
    """:func:`api_usd_per_mtok` over the providers that list ``model``: median, cheapest,
    dearest, and the dates of their quotes."""
    require_positive("prompt_tokens", prompt_tokens)
    require_positive("output_tokens", output_tokens)
    q = api_quotes(model)
    cost = api_usd_per_mtok(q["input_usd_per_mtok"], q["output_usd_per_mtok"], prompt_tokens,
                            output_tokens)
    return {"model": model, **_summary(cost, q["day"]),
            "providers": ", ".join(q["provider"])}


def list_prices(chip: str | None = None) -> pd.DataFrame:
    """Desk machines' vendor prices (``data/machine_prices.csv``, chapter 8's table)."""
    df = tables.load("machine_prices")
    df = df.assign(day=df["price_date"].map(day))
    return df if chip is None else df[df["chip"] == chip].reset_index(drop=True)


def electricity(region: str = DEFAULT_REGION) -> dict:
    """USD per kWh for ``region`` (residential), with its period and source."""
    df = tables.load("electricity_prices")
    rows = df[df["region"] == region]
    if rows.empty:
        raise ValueError(f"no electricity price for {region!r}; known: "
                         f"{', '.join(df['region'])}")
    r = rows.iloc[0]
    return {"region": region, "usd_per_kWh": float(r["price"]), "period": r["period"],
            "day": day(r["period"]), "confidence": r["confidence"],
            "source_url": r["source_url"]}


def electricity_range() -> tuple[float, float]:
    """The cheapest and dearest residential price recorded (for a slider's ends)."""
    p = tables.load("electricity_prices")["price"]
    return float(p.min()), float(p.max())


def price_dates() -> pd.DataFrame:
    """Every price the chapter uses with its date: kind (rental, API, list price,
    electricity), what, and the day it was read or announced."""
    rent = pd.concat([rental_quotes(), committed_quotes()], ignore_index=True)
    api = tables.load("api_prices")
    api = api[api["status"] == "listed"]
    lists = list_prices()
    elec = tables.load("electricity_prices")
    return pd.concat([
        pd.DataFrame({"kind": "GPU rental", "what": rent["chip"] + ", " + rent["provider"],
                      "day": rent["day"]}),
        pd.DataFrame({"kind": "API", "what": api["model"] + ", " + api["provider"],
                      "day": api["price_date"].map(day)}),
        pd.DataFrame({"kind": "desk machine", "what": lists["chip"] + ", " + lists["product"],
                      "day": lists["day"]}),
        pd.DataFrame({"kind": "electricity", "what": elec["region"],
                      "day": elec["period"].map(day)}),
    ], ignore_index=True)


def age_days(on: dt.date, dates: pd.DataFrame | None = None) -> pd.DataFrame:
    """How old the prices of each kind are on day ``on``: the newest and the oldest quote,
    in days. A quote dated after ``on`` is refused (a clock set wrong)."""
    if not isinstance(on, dt.date):
        raise ValueError(f"on must be a datetime.date, got {on!r}")
    df = price_dates() if dates is None else dates
    ages = df["day"].map(lambda d: (on - d).days)
    if (ages < 0).any():
        raise ValueError(f"prices dated after {on}: {df[ages < 0]['what'].tolist()[:3]}")
    out = df.assign(age_days=ages).groupby("kind", sort=False)["age_days"].agg(
        newest="min", oldest="max", quotes="size")
    return out.reset_index()


def span_text(days) -> str:
    """``2026-08-26 to 2026-11-30`` (or one date) for a list of dates."""
    days = sorted(days)
    a, b = days[0].isoformat(), days[-1].isoformat()
    return a if a == b else f"{a} to {b}"
