"""How many output tokens a second each way of getting them makes for a workload, how long a
user waits for an answer, the model's error beside it, and what that way costs to hold.

- **Rented datacenter GPUs**: the calibrated step model (:func:`napkin.predict`) on an engine
  of 1, 2, 4 or 8 GPUs in tensor parallel, whichever makes a token cheapest; its band is the
  cross-validated error of :func:`napkin.validation.report.error_band` for the scenario
  closest to the row (:func:`band_scenario`) and the case of the chip and model
  (:func:`band_case`: one the fit has seen, or a new pair, whose band is wider), the
  rate's range the 90th-percentile factor either way.
- **Desk machines you own**: chapter 8's estimate (:func:`napkin.buying.estimate`: the
  roofline of one decode step of all users, discounted by the fraction of the ceiling
  published runs of the same family reach; the first token from published prefill rates),
  with each prompt's prefill counted in the time (:func:`desk_tokens_per_s`), at the weight
  format llama.cpp would run (:func:`desk_format`), within the memory the GPU may use once
  the operating system has kept its share (:mod:`napkin.buying.machine`); its band is
  chapter 8's (quartiles of the discount, range of the prefill runs). A machine's price is
  that of the cheapest recorded configuration whose GPU may hold the workload.
- **An API**: no throughput; the quoted prices (:mod:`napkin.costs.prices`).

Each way serves a number of users at once: a whole number, as many as memory holds (None),
or as many as it serves within a :class:`~napkin.costs.service.ServiceLevel`. A workload that
does not fit a machine's memory, or that misses the service level even for one user, is
returned as not served, with the reason, and is never priced.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, replace

from .. import buying, catalog, kvcache, tables
from ..prose import count
from ..units import GiB
from . import power, prices
from .service import ServiceLevel

__all__ = ["band", "band_case", "band_scenario", "committed", "DESK", "desk_format",
           "desk_tokens_per_s", "KV", "LLAMA_CPP_FORMATS", "owned", "rented", "RENTED", "Serving",
           "TP_SIZES"]

#: The desk machines chapter 11 prices (chip names of ``data/hardware_specs.csv``).
DESK = ("DGX Spark", "M3 Ultra", "Strix Halo", "RTX PRO 6000 Blackwell", "RTX 5090",
        "RTX 4090")
#: The datacenter GPUs it rents (priced in ``data/gpu_rental_prices.csv``, at least three
#: providers' on-demand quotes each). The MI300X has two, from secondary pages: chapter 11
#: prices it beside the table, with the wider band of a pair the fit has not seen.
RENTED = ("H100 SXM", "H200", "B200")
#: Engine sizes tried for a rented workload.
TP_SIZES = (1, 2, 4, 8)
#: The KV cache format of every workload here: chapter 8's (16-bit).
KV = buying.KV_DTYPE
#: A serving engine's weight format -> the llama.cpp format a desk machine runs for the same
#: number of bits: llama.cpp's 8-bit format is Q8_0 (32 weights and one 16-bit scale in 34
#: bytes, 8.5 bits per weight), and it has no BF16 matmuls on most backends (F16 instead).
LLAMA_CPP_FORMATS = {"FP8": "Q8_0", "BF16": "F16"}


def desk_format(weight_format: str) -> str:
    """The weight format a desk machine runs for ``weight_format`` (llama.cpp's)."""
    return LLAMA_CPP_FORMATS.get(weight_format.upper(), weight_format)


def band_scenario(users) -> str:
    """One user's requests, one after another, are a static batch of one (Argonne's
    scenario); users held to a service level arrive at random under latency limits (MLPerf
    Server's); as many users as fit keep an engine busy at a batch (MLPerf Offline's)."""
    if isinstance(users, ServiceLevel):
        return "server"
    return "static" if users is not None and users <= 1 else "offline"


@dataclass(frozen=True)
class Serving:
    """One way of getting a workload's tokens, at a number of users served at once.

    ``tokens_per_s`` (and its ``_low``/``_high`` band) counts every user's output tokens,
    the time each request's prompt takes included; ``per_user_tokens_per_s`` is the speed
    each stream sees once its answer has begun. ``first_token_s`` is the slowest user's wait
    for the first token (a desk machine: the last of a round of prompts prefilled one after
    another; a rented engine: the 99th percentile under random arrivals) and ``latency_s``
    that wait plus the answer at the stream's speed. ``band`` says which error band the rate
    carries, with its factors (``band_median``, ``band_p90``) where it has them. Owned
    machines carry ``price_usd`` (the configuration bought), rented ones ``usd_per_hour``
    (all their GPUs, at the median quote, with the cheapest and dearest quote beside it; a
    ``committed`` row at its contract's rate, paid every hour). ``power_W`` is the draw the
    energy per token uses. A way that cannot serve the workload as asked (memory, or the
    service level) has ``fits`` False, ``reason`` saying why, and no rate or price."""

    option: str
    kind: str
    chip: str
    users: int
    fits: bool
    reason: str = ""
    weight_format: str = ""
    tokens_per_s: float = math.nan
    tokens_per_s_low: float = math.nan
    tokens_per_s_high: float = math.nan
    per_user_tokens_per_s: float = math.nan
    first_token_s: float = math.nan
    latency_s: float = math.nan
    n_chips: int = 0
    price_usd: float = math.nan
    configuration: str = ""
    usd_per_hour: float = math.nan
    usd_per_hour_low: float = math.nan
    usd_per_hour_high: float = math.nan
    power_W: float = math.nan
    power_basis: str = ""
    throughput_basis: str = ""
    band: str = ""
    band_median: float = math.nan
    band_p90: float = math.nan
    price_basis: str = ""
    price_scope: str = ""

    @property
    def card_only(self) -> bool:
        """Whether the price bought a graphics card alone (its host computer unpriced)."""
        return self.price_scope.startswith("graphics card")


def _users(users):
    if users is None or isinstance(users, ServiceLevel):
        return users
    if isinstance(users, bool) or not isinstance(users, int) or users < 1:
        raise ValueError(f"users must be a whole number >= 1, None (as many as fit) or a "
                         f"ServiceLevel (as many as it serves within it), got {users!r}")
    return users


def _asked(users) -> str:
    """What was asked, for a reason: ``1 user``, ``as many users as fit``, a level."""
    if users is None:
        return "as many users as fit"
    if isinstance(users, ServiceLevel):
        return f"users at {users.text()}"
    return count(users, "user")


def desk_tokens_per_s(users, output_tokens, first_token_s, per_user_tokens_per_s):
    """Output tokens per second of a desk machine serving ``users`` at once: each request's
    prompt is prefilled alone (``first_token_s``, compute-bound, so batching prompts does not
    help), then all users decode together at ``per_user_tokens_per_s`` each (equation
    ``eq-cost-desk``)."""
    return users * output_tokens / (users * first_token_s + output_tokens / per_user_tokens_per_s)


@tables.cached()
def _desk_machines() -> dict:
    return {m.name: m for m in buying.machines()}


def _need_bytes(w: buying.Workload) -> tuple[float, float]:
    """The weights, and one user's cache at the end of a request."""
    _, w_total, _ = buying.model_for(w)
    return w_total, kvcache.kv_cache_bytes(catalog.config(w.model), w.context_tokens, 1, KV)


def _desk_step(m, w: buying.Workload, n: int) -> dict:
    """Chapter 8's estimate for ``n`` users: first token (fast, middle, slow), each user's
    decode speed (high, middle, low) and what the first token came from."""
    e = buying.estimate(m, replace(w, users=n))
    first = (e["ttft_fast_s"], e["ttft_mid_s"], e["ttft_slow_s"])
    basis = "chapter 8: roofline of the decode step, family discount; published prefill rates"
    if math.isnan(first[1]):
        first = (e["ttft_bound_s"],) * 3
        basis = "chapter 8's decode estimate; first token from the roofline bound (no " \
                "published prefill run)"
    speed = (e["per_user_high_tok_per_s"], e["per_user_mid_tok_per_s"],
             e["per_user_low_tok_per_s"])
    return {"first": first, "speed": speed, "basis": basis}


def _desk_meets(m, w, n: int, level: ServiceLevel) -> bool:
    """Whether ``n`` users each get the level: the middle speed, and the last of ``n``
    prompts prefilled one after another within the first-token limit."""
    d = _desk_step(m, w, n)
    return level.met(d["speed"][1], n * d["first"][1])


def _most_within(m, w, top: int, level: ServiceLevel) -> int:
    """The largest number of users, at most ``top``, that each get ``level`` (0: not even
    one). Speed falls and the wait grows with users, so bisection finds it."""
    if top < 1 or not _desk_meets(m, w, 1, level):
        return 0
    low, high = 1, top + 1
    if _desk_meets(m, w, top, level):
        return top
    high = top
    while high - low > 1:
        mid = (low + high) // 2
        low, high = (mid, high) if _desk_meets(m, w, mid, level) else (low, mid)
    return low


def owned(chip: str, w: buying.Workload, users=1) -> Serving:
    """``chip`` bought, serving ``w`` at the weight format llama.cpp runs (:func:`desk_format`)
    to ``users`` at once: a whole number, None (as many as fit in the cheapest recorded
    configuration that holds the model) or a :class:`ServiceLevel` (as many as that
    configuration serves within it)."""
    users = _users(users)
    machines = _desk_machines()
    if chip not in machines:
        raise ValueError(f"no desk machine {chip!r} with a bandwidth and a capacity in data/")
    m = machines[chip]
    w = replace(w, weight_format=desk_format(w.weight_format))
    option, fmt = chip, w.weight_format
    w_total, kv_end = _need_bytes(w)
    configs = sorted(m.prices, key=lambda p: p[2])  # (memory, usable, price, cur, what, src)
    if not configs:
        return Serving(option, "owned", chip, 0, False, weight_format=fmt,
                       reason=f"no vendor price for {chip} in data/machine_prices.csv")
    asked = users if isinstance(users, int) else 1
    fit = [(p, kvcache.max_batch(catalog.config(w.model), w.context_tokens, p[1], w_total, KV))
           for p in configs]
    fit = [(p, n) for p, n in fit if n >= asked]
    if not fit:
        largest = max(configs, key=lambda p: p[1])
        return Serving(option, "owned", chip, 0, False, weight_format=fmt, reason=(
            f"{w.model} at {fmt} for {count(asked, 'user')} needs "
            f"{(w_total + asked * kv_end) / GiB:,.1f} GiB; the largest priced "
            f"{chip} lets its GPU use {largest[1] / GiB:,.1f} GiB"))
    config, most = fit[0]
    if isinstance(users, ServiceLevel):
        n = _most_within(m, w, most, users)
        if n == 0:
            d = _desk_step(m, w, 1)
            return Serving(option, "owned", chip, 0, False, weight_format=fmt, reason=(
                f"misses the service level ({users.text()}) even with one user: "
                f"{d['speed'][1]:.1f} tokens/s, first token in {d['first'][1]:.1f} s"))
    else:
        n = users or most
    d = _desk_step(m, w, n)
    rate = [desk_tokens_per_s(n, w.output_tokens, t, s) for t, s in zip(d["first"], d["speed"])]
    first = n * d["first"][1]
    p = power.used(chip)
    listed = prices.list_prices(chip)
    row = listed[listed["price"] == config[2]].iloc[0]
    return Serving(option, "owned", chip, n, True, weight_format=fmt, tokens_per_s=rate[1],
                   tokens_per_s_low=rate[2], tokens_per_s_high=rate[0],
                   per_user_tokens_per_s=d["speed"][1], first_token_s=first,
                   latency_s=first + w.output_tokens / d["speed"][1], n_chips=1,
                   price_usd=config[2], configuration=config[4], power_W=p["power_W"],
                   power_basis=p["basis"], throughput_basis=d["basis"],
                   band="chapter 8's: quartiles of the decode discount, range of the prefill "
                        "runs",
                   price_basis=f"{config[3]} {config[2]:,.0f}, {row['price_kind']} of "
                               f"{row['price_date']} ({config[5]})",
                   price_scope=row["scope"])


def band_case(chip: str, model: str) -> str:
    """``"seen"`` where the calibrated model was fitted on rows of ``chip`` with ``model``,
    else ``"new"``: which cross-validated band a rented rate carries."""
    from ..validation.report import case_of

    return case_of(chip, model)


@tables.cached()
def band(scenario: str, case: str) -> dict:
    """The calibrated model's cross-validated error band for ``scenario`` and ``case``
    (factors: ``median``, ``p90``)."""
    from ..validation.report import error_band

    return error_band(scenario, case)


def _predict(chip, w, n, users):
    """The prediction on ``n`` chips, or the reason there is none. A service level limits
    the mean time per output token (the model's limit is on the 99th percentile, its tail
    factor times the mean) and the 99th-percentile first token."""
    from .. import predict

    limits = {}
    if isinstance(users, ServiceLevel):
        limits = dict(tpot_limit_s=users.tpot_s * predict.calibrated().tpot_tail,
                      ttft_limit_s=users.first_token_s)
    try:
        p = predict.predict(chip, w.model, n_chips=n, weights=w.weight_format, kv=KV,
                            input_tokens=w.prompt_tokens, output_tokens=w.output_tokens,
                            batch=users if isinstance(users, int) else None, **limits)
    except ValueError as err:  # the weights leave no room, or the chip lacks the arithmetic
        return None, str(err)
    return (p, "") if p.feasible else (None, p.reason)


def rented(chip: str, w: buying.Workload, users=1, sizes: tuple[int, ...] = TP_SIZES) -> Serving:
    """``chip`` rented by the hour, serving ``w`` to ``users`` at once (a whole number, None:
    as many as memory allows, or a :class:`ServiceLevel`: as many as it serves within it), on
    whichever engine of ``sizes`` GPUs makes a token cheapest."""
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
        return Serving(option, "rented", chip, 0, False, weight_format=w.weight_format, reason=(
            f"{w.model} at {w.weight_format} for {_asked(users)}: no engine of "
            f"{', '.join(map(str, sizes))} x {chip} serves it ({why})"))
    scenario, case = band_scenario(users), band_case(chip, w.model)
    m = band(scenario, case)
    rate = best.output_tokens_per_s
    try:
        p = power.rented_draw(chip)
    except ValueError:  # no rating stated at all: the cost stands, the energy is unknown
        p = {"power_W": math.nan, "basis": "no power rating in data/machine_power.csv"}
    n = best.n_chips
    return Serving(option, "rented", chip, best.batch, True, weight_format=w.weight_format,
                   tokens_per_s=rate, tokens_per_s_low=rate / m["p90"],
                   tokens_per_s_high=rate * m["p90"],
                   per_user_tokens_per_s=best.tokens_per_s_per_user,
                   first_token_s=best.ttft_p99_s,
                   latency_s=best.ttft_p99_s + w.output_tokens * best.tpot_s, n_chips=n,
                   configuration=f"{n} x {chip}",
                   usd_per_hour=n * quote["median"], usd_per_hour_low=n * quote["low"],
                   usd_per_hour_high=n * quote["high"], power_W=n * p["power_W"],
                   power_basis=f"{n} x {p['basis']}",
                   throughput_basis="napkin.predict, calibrated",
                   band=f"{scenario}, {case} chips and models",
                   band_median=m["median"], band_p90=m["p90"],
                   price_basis=f"{n} x median of {quote['quotes']} providers' on-demand "
                               f"quotes ({prices.span_text([quote['oldest'], quote['newest']])})")


def committed(chip: str, w: buying.Workload, users=1,
              sizes: tuple[int, ...] = TP_SIZES) -> Serving | None:
    """:func:`rented` at the cheapest recorded contract that pays every hour of a term
    (:func:`napkin.costs.prices.committed_price`), or None where no contract is recorded."""
    q = prices.committed_price(chip)
    if q is None:
        return None
    s = rented(chip, w, users, sizes)
    n = s.n_chips
    term = q["offer"].split(", ")[-1].replace(" ", "-")
    return replace(s, option=f"{chip} (rented, {term} contract)",
                   kind="committed", usd_per_hour=n * q["price"] if s.fits else math.nan,
                   usd_per_hour_low=n * q["price"] if s.fits else math.nan,
                   usd_per_hour_high=n * q["price"] if s.fits else math.nan,
                   price_basis=f"{n} x {q['price']:.2f} USD per GPU-hour, {q['offer']} "
                               f"({q['provider']}, {q['day'].isoformat()[:7]}), every hour "
                               f"of the term paid")
