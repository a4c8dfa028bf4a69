"""The cost model: dollars per million output tokens and joules per token, owned, rented or
through an API, and the hours of use a day at which owning breaks even.

Every formula is written once, as an arithmetic expression over named inputs
(:data:`FORMULAS`). Python evaluates it here (:func:`evaluate`, numbers or numpy arrays), and
:func:`js` writes the same expression for the book's in-page calculator, so the page cannot
drift from the library: a test renders the page and compares the two on a grid.

The inputs, all positive:

- ``price_usd``: what an owned machine cost; ``life_years``: years it is used;
  ``hours_per_day``: hours a day it generates; ``power_W``: its draw while it does;
  ``usd_per_kWh``: the electricity price;
- ``usd_per_hour``: what the rented GPUs cost together per hour (on demand, paid for the
  hours used; or on a contract, paid for all 24 hours of every day);
- ``tokens_per_s``: output tokens per second the machine makes for the workload;
- ``ref_usd_per_mtok``: the price per million tokens owning is compared with (renting, or an
  API).
"""

from __future__ import annotations

import math
import re
from dataclasses import dataclass

import numpy as np

from ..units import require_positive

#: Days in a year of use (the book counts 365).
DAYS_PER_YEAR = 365
#: The book's stated defaults: a working day of use, and three years of life.
DEFAULT_HOURS_PER_DAY = 8.0
DEFAULT_LIFE_YEARS = 3.0

_AMORTISED = f"price_usd / (life_years * {DAYS_PER_YEAR} * hours_per_day * 3600)"
_ENERGY = "power_W * usd_per_kWh / 3600000"
_MARGIN = f"(tokens_per_s * ref_usd_per_mtok / 1000000 - {_ENERGY})"

#: Each formula once, as an expression both Python and the page's Vega expressions read.
FORMULAS = {
    # an owned machine, per second of use: its price spread over the seconds it runs,
    # plus the electricity it draws meanwhile
    "owned_usd_per_s": f"{_AMORTISED} + {_ENERGY}",
    "owned_usd_per_mtok": f"({_AMORTISED} + {_ENERGY}) * 1000000 / tokens_per_s",
    # rented GPUs: the hourly price over the tokens an hour makes (electricity included)
    "rented_usd_per_mtok": "usd_per_hour / 3600 * 1000000 / tokens_per_s",
    # rented on a contract that pays every hour of the day, used or not: the hours paid
    # over the hours used
    "committed_usd_per_mtok": "usd_per_hour * 24 / hours_per_day / 3600 * 1000000 / "
                              "tokens_per_s",
    # energy per output token: draw over rate
    "joules_per_token": "power_W / tokens_per_s",
    # hours a day at which the owned machine's dollars per token equal the reference's:
    # the price over the dollars a second of use saves, net of electricity
    "breakeven_margin_usd_per_s": _MARGIN,
    "breakeven_hours_per_day": f"price_usd / (life_years * {DAYS_PER_YEAR} * 3600 * {_MARGIN})",
    # the price at which it breaks even at the hours it is used: every second of its life
    # times what each saves
    "breakeven_price_usd": f"life_years * {DAYS_PER_YEAR} * hours_per_day * 3600 * {_MARGIN}",
}
_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")


def inputs_of(name: str) -> list[str]:
    """The input names a formula reads, in order of first use."""
    return list(dict.fromkeys(_NAME.findall(FORMULAS[name])))


def evaluate(name: str, **values):
    """Formula ``name`` of :data:`FORMULAS` at ``values`` (floats or numpy arrays)."""
    if name not in FORMULAS:
        raise ValueError(f"unknown formula {name!r}; known: {', '.join(FORMULAS)}")
    missing = [n for n in inputs_of(name) if n not in values]
    if missing:
        raise ValueError(f"formula {name!r} needs {', '.join(missing)}")
    env = {k: np.asarray(v, dtype=float) if not np.isscalar(v) else float(v)
           for k, v in values.items()}
    return eval(FORMULAS[name], {"__builtins__": {}}, env)  # noqa: S307 (our own strings)


def js(name: str, fields: dict[str, str] | None = None) -> str:
    """Formula ``name`` as a Vega expression: each input ``x`` becomes ``datum.x``, or the
    expression ``fields[x]`` names (a slider's parameter, say)."""
    if name not in FORMULAS:
        raise ValueError(f"unknown formula {name!r}; known: {', '.join(FORMULAS)}")
    fields = fields or {}
    return "(" + _NAME.sub(lambda m: fields.get(m.group(0), f"datum.{m.group(0)}"),
                           FORMULAS[name]) + ")"


def breakeven_js(fields: dict[str, str] | None = None, limit: float = 24.0) -> str:
    """:func:`breakeven_hours_per_day` in the page: null where owning never breaks even."""
    margin, hours = js("breakeven_margin_usd_per_s", fields), js("breakeven_hours_per_day",
                                                                   fields)
    return f"({margin} > 0 && {hours} <= {limit} ? {hours} : null)"


@dataclass(frozen=True)
class Usage:
    """How an owned machine is used: hours a day it generates, years it lasts, and what its
    electricity costs. Renting and APIs charge only for what is used."""

    hours_per_day: float = DEFAULT_HOURS_PER_DAY
    life_years: float = DEFAULT_LIFE_YEARS
    usd_per_kWh: float = math.nan

    def __post_init__(self):
        h = require_positive("hours_per_day", self.hours_per_day)
        if h > 24:
            raise ValueError(f"hours_per_day must be at most 24, got {self.hours_per_day!r}")
        require_positive("life_years", self.life_years)
        if not math.isnan(self.usd_per_kWh):
            require_positive("usd_per_kWh", self.usd_per_kWh)

    def resolved(self) -> "Usage":
        """This usage with the book's default electricity price where none was given."""
        if not math.isnan(self.usd_per_kWh):
            return self
        from .prices import electricity

        return Usage(self.hours_per_day, self.life_years, electricity()["usd_per_kWh"])


def _positive(**values) -> None:
    for k, v in values.items():
        a = np.asarray(v, dtype=float)
        if a.size == 0 or not np.all(np.isfinite(a)) or np.any(a <= 0):
            raise ValueError(f"{k} must be a positive finite number, got {v!r}")


def owned_usd_per_mtok(price_usd, tokens_per_s, power_W, usage: Usage):
    """Dollars per million output tokens of a machine you own (equation ``eq-cost-owned``)."""
    u = usage.resolved()
    _positive(price_usd=price_usd, tokens_per_s=tokens_per_s, power_W=power_W)
    return evaluate("owned_usd_per_mtok", price_usd=price_usd, tokens_per_s=tokens_per_s,
                    power_W=power_W, life_years=u.life_years, hours_per_day=u.hours_per_day,
                    usd_per_kWh=u.usd_per_kWh)


def rented_usd_per_mtok(usd_per_hour, tokens_per_s):
    """Dollars per million output tokens of rented GPUs (equation ``eq-cost-rented``)."""
    _positive(usd_per_hour=usd_per_hour, tokens_per_s=tokens_per_s)
    return evaluate("rented_usd_per_mtok", usd_per_hour=usd_per_hour, tokens_per_s=tokens_per_s)


def committed_usd_per_mtok(usd_per_hour, tokens_per_s, usage: Usage):
    """Dollars per million output tokens of GPUs rented on a contract that pays every hour,
    used ``usage.hours_per_day`` of them (equation ``eq-cost-committed``)."""
    u = usage.resolved()
    _positive(usd_per_hour=usd_per_hour, tokens_per_s=tokens_per_s)
    return evaluate("committed_usd_per_mtok", usd_per_hour=usd_per_hour,
                    tokens_per_s=tokens_per_s, hours_per_day=u.hours_per_day)


def joules_per_token(power_W, tokens_per_s):
    """Energy per output token: the draw over the rate (equation ``eq-energy``)."""
    _positive(power_W=power_W, tokens_per_s=tokens_per_s)
    return evaluate("joules_per_token", power_W=power_W, tokens_per_s=tokens_per_s)


def breakeven_price_usd(tokens_per_s, power_W, ref_usd_per_mtok, usage: Usage) -> float:
    """The most an owned machine may cost, with whatever it needs to run (a graphics card's
    host computer), and still make tokens no dearer than ``ref_usd_per_mtok`` at ``usage``'s
    hours and years; 0 where its electricity alone costs more per token."""
    u = usage.resolved()
    _positive(tokens_per_s=tokens_per_s, power_W=power_W, ref_usd_per_mtok=ref_usd_per_mtok)
    return max(0.0, float(evaluate("breakeven_price_usd", tokens_per_s=tokens_per_s,
                                   power_W=power_W, ref_usd_per_mtok=ref_usd_per_mtok,
                                   life_years=u.life_years, hours_per_day=u.hours_per_day,
                                   usd_per_kWh=u.usd_per_kWh)))


def breakeven_hours_per_day(price_usd, tokens_per_s, power_W, ref_usd_per_mtok,
                            usage: Usage) -> float:
    """Hours of use a day above which an owned machine makes tokens cheaper than
    ``ref_usd_per_mtok`` (equation ``eq-breakeven``); ``inf`` where it never does within a
    day (its electricity alone costs more per token, or it would need more than 24 hours)."""
    u = usage.resolved()
    _positive(price_usd=price_usd, tokens_per_s=tokens_per_s, power_W=power_W,
              ref_usd_per_mtok=ref_usd_per_mtok)
    values = dict(price_usd=price_usd, tokens_per_s=tokens_per_s, power_W=power_W,
                  ref_usd_per_mtok=ref_usd_per_mtok, life_years=u.life_years,
                  usd_per_kWh=u.usd_per_kWh)
    if evaluate("breakeven_margin_usd_per_s", **values) <= 0:
        return math.inf
    h = float(evaluate("breakeven_hours_per_day", **values))
    return h if h <= 24 else math.inf
