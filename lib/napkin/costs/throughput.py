"""How many output tokens a second each way of getting them makes for a workload, with the
model's error beside it, and what that way costs to hold.

- **Rented datacenter GPUs**: the calibrated step model (:func:`napkin.predict`) on an engine
  of 1, 2, 4 or 8 GPUs in tensor parallel, whichever makes a token cheapest; its band is the
  held-out error of :func:`napkin.validation.report.error_band` (MLPerf Offline: an engine
  kept busy at a batch, the scenario closest to a rented GPU).
- **Desk machines you own**: chapter 8's estimate (:func:`napkin.buying.estimate`: the
  roofline of one decode step of all users, discounted by the fraction of the ceiling
  published runs of the same family reach; the first token from published prefill rates),
  with each prompt's prefill counted in the time (:func:`desk_tokens_per_s`); its band is
  chapter 8's (quartiles of the discount, range of the prefill runs). A machine's price is
  that of the cheapest recorded configuration whose GPU may hold the workload.
- **An API**: no throughput; the quoted prices (:mod:`napkin.costs.prices`).

A workload that does not fit a machine's memory is returned as not fitting, with the reason,
and is never priced.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, replace
from functools import lru_cache

from .. import buying, catalog, kvcache
from ..prose import counted
from ..units import GiB
from . import power, prices

#: The desk machines chapter 11 prices (chip names of ``data/hardware_specs.csv``).
DESK = ("DGX Spark", "M3 Ultra", "Strix Halo", "RTX PRO 6000 Blackwell", "RTX 5090",
        "RTX 4090")
#: The datacenter GPUs it rents (priced in ``data/gpu_rental_prices.csv``).
RENTED = ("H100 SXM", "H200", "B200")
#: Engine sizes tried for a rented workload.
TP_SIZES = (1, 2, 4, 8)
#: The KV cache format of every workload here: chapter 8's (16-bit).
KV = buying.KV_DTYPE
#: The held-out scenario whose error band the rented rates carry.
BAND_SCENARIO = "offline"


@dataclass(frozen=True)
class Serving:
    """One way of getting a workload's tokens, at a number of users served at once.

    ``tokens_per_s`` (and its ``_low``/``_high`` band) counts every user's output tokens;
    ``per_user_tokens_per_s`` is the speed each stream sees. Owned machines carry
    ``price_usd`` (the configuration bought), rented ones ``usd_per_hour`` (all their GPUs,
    at the median quote, with the cheapest and dearest quote beside it). ``power_W`` is the
    draw the energy per token uses. A way that cannot hold the workload has ``fits`` False,
    ``reason`` saying why, and no rate or price."""

    option: str
    kind: str
    chip: str
    users: int
    fits: bool
    reason: str = ""
    tokens_per_s: float = math.nan
    tokens_per_s_low: float = math.nan
    tokens_per_s_high: float = math.nan
    per_user_tokens_per_s: float = math.nan
    n_chips: int = 0
    price_usd: float = math.nan
    configuration: str = ""
    usd_per_hour: float = math.nan
    usd_per_hour_low: float = math.nan
    usd_per_hour_high: float = math.nan
    power_W: float = math.nan
    power_basis: str = ""
    throughput_basis: str = ""
    price_basis: str = ""
    price_scope: str = ""

    @property
    def card_only(self) -> bool:
        """Whether the price bought a graphics card alone (its host computer unpriced)."""
        return self.price_scope.startswith("graphics card")


def _users(users) -> int | None:
    if users is None:
        return None
    if isinstance(users, bool) or not isinstance(users, int) or users < 1:
        raise ValueError(f"users must be a whole number >= 1 (or None: as many as fit), "
                         f"got {users!r}")
    return users


def desk_tokens_per_s(users, output_tokens, first_token_s, per_user_tokens_per_s):
    """Output tokens per second of a desk machine serving ``users`` at once: each request's
    prompt is prefilled alone (``first_token_s``, compute-bound, so batching prompts does not
    help), then all users decode together at ``per_user_tokens_per_s`` each (equation
    ``eq-cost-desk``)."""
    return users * output_tokens / (users * first_token_s + output_tokens / per_user_tokens_per_s)


@lru_cache(maxsize=1)
def _desk_machines() -> dict:
    return {m.name: m for m in buying.machines()}


def _need_bytes(w: buying.Workload, users: int) -> tuple[float, float, float]:
    """Weights, one user's cache at the end of a request, and both for ``users``."""
    _, w_total, _ = buying.model_for(w)
    kv_end = kvcache.kv_cache_bytes(catalog.config(w.model), w.context_tokens, 1, KV)
    return w_total, kv_end, w_total + users * kv_end


def owned(chip: str, w: buying.Workload, users: int | None = 1) -> Serving:
    """``chip`` bought, serving ``w`` to ``users`` at once (None: as many as fit in the
    cheapest recorded configuration that holds the model)."""
    users = _users(users)
    machines = _desk_machines()
    if chip not in machines:
        raise ValueError(f"no desk machine {chip!r} with a bandwidth and a capacity in data/")
    m = machines[chip]
    option = chip
    w_total, kv_end, _ = _need_bytes(w, users or 1)
    configs = sorted(m.prices, key=lambda p: p[2])  # (memory, usable, price, cur, what, src)
    if not configs:
        return Serving(option, "owned", chip, users or 0, False,
                       reason=f"no vendor price for {chip} in data/machine_prices.csv")
    fit = [(p, kvcache.max_batch(catalog.config(w.model), w.context_tokens, p[1], w_total, KV))
           for p in configs]
    fit = [(p, n) for p, n in fit if n >= (users or 1)]
    if not fit:
        largest = max(configs, key=lambda p: p[1])
        return Serving(option, "owned", chip, users or 0, False, reason=(
            f"{w.model} at {w.weight_format} for {counted(users or 1, 'user')} needs "
            f"{(w_total + (users or 1) * kv_end) / GiB:,.1f} GiB; the largest priced "
            f"{chip} lets its GPU use {largest[1] / GiB:,.1f} GiB"))
    config, most = fit[0]
    n = users or most
    e = buying.estimate(m, replace(w, users=n))
    first = (e["ttft_fast_s"], e["ttft_mid_s"], e["ttft_slow_s"])
    basis = "chapter 8: roofline of the decode step, family discount; published prefill rates"
    if math.isnan(first[1]):
        first = (e["ttft_bound_s"],) * 3
        basis = "chapter 8's decode estimate; first token from the roofline bound (no " \
                "published prefill run)"
    rate = [desk_tokens_per_s(n, w.output_tokens, t, s) for t, s in zip(
        first, (e["per_user_high_tok_per_s"], e["per_user_mid_tok_per_s"],
                e["per_user_low_tok_per_s"]))]
    p = power.used(chip)
    listed = prices.list_prices(chip)
    row = listed[listed["price"] == config[2]].iloc[0]
    return Serving(option, "owned", chip, n, True, tokens_per_s=rate[1],
                   tokens_per_s_low=rate[2], tokens_per_s_high=rate[0],
                   per_user_tokens_per_s=e["per_user_mid_tok_per_s"], n_chips=1,
                   price_usd=config[2], configuration=config[4], power_W=p["power_W"],
                   power_basis=p["basis"], throughput_basis=basis,
                   price_basis=f"{config[3]} {config[2]:,.0f}, {row['price_kind']} of "
                               f"{row['price_date']} ({config[5]})",
                   price_scope=row["scope"])


@lru_cache(maxsize=1)
def band() -> float:
    """The median held-out error of the calibrated model (:data:`BAND_SCENARIO`): half of
    the held-out rows lie within it."""
    from ..validation.report import error_band

    return error_band(BAND_SCENARIO)["median_abs"]


def _predict(chip, w, n, users):
    """The prediction on ``n`` chips, or the reason there is none."""
    from .. import predict

    try:
        p = predict.predict(chip, w.model, n_chips=n, weights=w.weight_format, kv=KV,
                            input_tokens=w.prompt_tokens, output_tokens=w.output_tokens,
                            batch=users)
    except ValueError as err:  # the weights leave no room, or the chip lacks the arithmetic
        return None, str(err)
    return (p, "") if p.feasible else (None, p.reason)


def rented(chip: str, w: buying.Workload, users: int | None = 1,
           sizes: tuple[int, ...] = TP_SIZES) -> Serving:
    """``chip`` rented by the hour, serving ``w`` to ``users`` at once (None: as many as
    memory allows), on whichever engine of ``sizes`` GPUs makes a token cheapest."""
    users = _users(users)
    quote = prices.rental_price(chip)
    option = f"{chip} (rented)"
    best, why = None, ""
    for n in sizes:
        p, reason = _predict(chip, w, n, users)
        why = why or reason
        if p is not None and (best is None or p.per_chip_output_tokens_per_s >
                              best.per_chip_output_tokens_per_s):
            best = p
    if best is None:
        return Serving(option, "rented", chip, users or 0, False, reason=(
            f"{w.model} at {w.weight_format} for {counted(users or 1, 'user')}: no engine of "
            f"{', '.join(map(str, sizes))} x {chip} serves it ({why})"))
    m = band()
    rate = best.output_tokens_per_s
    try:
        p = power.rating(chip)
    except ValueError:  # no single rating stated: the cost stands, the energy is unknown
        p = {"power_W": math.nan, "basis": "no power rating in data/machine_power.csv"}
    n = best.n_chips
    return Serving(option, "rented", chip, best.batch, True, tokens_per_s=rate,
                   tokens_per_s_low=rate / (1 + m), tokens_per_s_high=rate / (1 - m),
                   per_user_tokens_per_s=best.tokens_per_s_per_user, n_chips=n,
                   configuration=f"{n} x {chip}", usd_per_hour=n * quote["median"],
                   usd_per_hour_low=n * quote["low"], usd_per_hour_high=n * quote["high"],
                   power_W=n * p["power_W"], power_basis=f"{n} x {p['basis']}",
                   throughput_basis=f"napkin.predict, calibrated; held-out band "
                                    f"(MLPerf {BAND_SCENARIO.title()}) ±{m:.0%}",
                   price_basis=f"{n} x median of {quote['quotes']} providers' on-demand "
                               f"quotes ({prices.span_text([quote['oldest'], quote['newest']])})")
