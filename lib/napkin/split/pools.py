"""Pools: machines serving a stream of requests within a service level, and what a request
costs in dollars and joules on one kind of machine or on two.

A **split design** keeps two pools. Prefill instances run batches of prompts and send their
caches; decode instances run batches of answers. Each pool is sized to the stream (a fluid
count: fractional instances), so a request costs each pool's price over that pool's rate::

    usd_per_request = usd_per_hour_p / 3600 / rate_p + usd_per_hour_d / 3600 / rate_d

- ``rate_p = b_p / max(prefill_s(b_p), transfer_s(b_p))`` requests a second: the largest
  batch of prompts whose first token (the cache's arrival, :func:`napkin.split.arrival_s`)
  meets the first-token limit; an instance prefills one batch while the last one's caches
  cross the link.
- ``rate_d = b_d / decode_s(b_d)``: the largest batch of answers whose time per token meets
  its limit and whose caches fit at full depth.

**One machine for both** batches continuously: it prefills each arriving batch of prompts
(the same largest batch within the first-token limit) between the steps of its answers, so a
share ``f = rate * prefill_s(b_p) / b_p`` of its time goes to prompts and each decode step of
``s`` seconds is seen by its users as ``s / (1 - f)``. Its rate is
``r = R / (1 + R * prefill_s(b_p) / b_p)`` with ``R = b / decode_s(b)``, at the largest
answer batch ``b`` whose stretched step meets the limit: the interference that splitting
removes. The split's gain is that each phase gets its own batch, its own machine and no
interruptions by the other; its cost is the link and a second machine's memory. Both are
priced by :func:`napkin.split.pair.phase_seconds`.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Callable

from .. import kvcache
from ..catalog import config as catalog_config
from ..predict.disaggregated import largest
from ..units import GB
from .pair import DoesNotFit, _side, arrival_s, phase_seconds

__all__ = ["Design", "design", "MAX_BATCH", "one_machine", "Pool", "rented_price", "rented_power"]

#: The largest prompt batch tried on a prefill instance.
MAX_PREFILL_BATCH = 256
#: The most sequences one engine decodes at once (a serving engine's cap on its batch).
MAX_BATCH = 1024


@dataclass(frozen=True)
class Pool:
    """Instances of ``n_chips`` x ``chip`` doing one phase (or both): the batch each runs and
    the requests a second one instance finishes, and what one instance costs an hour and
    draws."""

    phase: str
    chip: str
    n_chips: int
    batch: int
    requests_per_s: float
    usd_per_hour: float
    watts: float

    @property
    def label(self) -> str:
        return self.chip if self.n_chips == 1 else f"{self.n_chips} x {self.chip}"


@dataclass(frozen=True)
class Design:
    """A way of serving a stream of requests within a service level: its pools (one for one
    machine, prefill and decode for a split) and what each request costs. A design that
    cannot meet the level has ``pools == ()`` and says why in ``missed``."""

    name: str
    pools: tuple[Pool, ...]
    output_tokens: int
    ttft_s: float
    tpot_s: float
    missed: str = ""

    @property
    def met(self) -> bool:
        return not self.missed

    def _per_request(self, field: str) -> float:
        if not self.met:
            return math.nan
        return sum(getattr(p, field) / p.requests_per_s for p in self.pools)

    @property
    def usd_per_mtok(self) -> float:
        """Dollars per million output tokens."""
        return self._per_request("usd_per_hour") / 3600 / self.output_tokens * 1e6

    @property
    def joules_per_token(self) -> float:
        """Joules per output token."""
        return self._per_request("watts") / self.output_tokens

    @property
    def tokens_per_s_per_usd_hour(self) -> float:
        """Output tokens a second for each dollar an hour spent: throughput at equal cost."""
        return 1e6 / 3600 / self.usd_per_mtok if self.met else math.nan

    @property
    def tokens_per_s_per_kw(self) -> float:
        """Output tokens a second for each kilowatt drawn: throughput at equal power."""
        return 1000 / self.joules_per_token if self.met else math.nan

    @property
    def prefill_share(self) -> float:
        """The share of a split design's instances that prefill (NaN for one machine)."""
        if len(self.pools) != 2:
            return math.nan
        p, d = (1 / pool.requests_per_s for pool in self.pools)
        return p / (p + d)


def rented_price(chip: str) -> float:
    """Chapter 11's price of one ``chip`` an hour: the median on-demand rental quote."""
    from ..costs import prices
    return prices.rental_price(chip)["median"]


def rented_power(chip: str) -> float:
    """Chapter 11's draw of one rented ``chip``: its share of its server at the wall."""
    from ..costs import power
    return power.rented_draw(chip)["power_W"]


def _price_of(chip, n, usd_per_chip_hour, watts_per_chip):
    return n * usd_per_chip_hour(chip), n * watts_per_chip(chip)


def one_machine(machine, model, *, weights="fp16", kv="fp16", input_tokens: int,
                output_tokens: int, ttft_limit_s: float, tpot_limit_s: float,
                usd_per_chip_hour: Callable[[str], float] = rented_price,
                watts_per_chip: Callable[[str], float] = rented_power, max_batch: int = MAX_BATCH,
                calibration=None, name: str | None = None) -> Design:
    """One kind of machine for both phases, batching continuously (module docstring): its
    prompts interrupt its answers, so a decode step of ``s`` seconds is seen as
    ``s / (1 - f)`` when a share ``f`` of the machine's time goes to prefill."""
    chip, n = _side("machine", machine)
    label = name or (chip if n == 1 else f"{n} x {chip}")
    phases = _Phases(chip, n, chip, n, model, weights, kv, input_tokens, output_tokens,
                     math.inf, True, calibration)
    b_p = phases.prompt_batch(ttft_limit_s, max_batch)
    if b_p == 0:
        return Design(label, (), phases.o, math.nan, math.nan,
                      phases.prompt_miss(ttft_limit_s, label))
    p_s, ttft = phases.prefill(b_p)
    per_prompt = p_s / b_p

    def stretch(b):  # 1 / (1 - f) at the rate a decode batch of b sustains
        return 1 + b / phases.decode(b) * per_prompt

    b = largest(lambda b: phases.decode(b) is not None
                 and phases.decode(b) / (phases.o - 1) * stretch(b) <= tpot_limit_s, max_batch)
    if b == 0:
        return Design(label, (), phases.o, math.nan, math.nan,
                      phases.answer_miss(tpot_limit_s, label))
    usd, watts = _price_of(chip, n, usd_per_chip_hour, watts_per_chip)
    rate = b / phases.decode(b) / stretch(b)
    pool = Pool("both", chip, n, b, rate, usd, watts)
    return Design(label, (pool,), phases.o, ttft, phases.decode(b) / (phases.o - 1) * stretch(b))


class _Phases:
    """Each phase's seconds at a batch, worked out once per batch: the prefill side's
    prompts (with the cache's arrival over the link) and the decode side's answers."""

    def __init__(self, p_chip, p_n, d_chip, d_n, model, weights, kv, input_tokens,
                 output_tokens, link_gb_per_s, overlap, calibration):
        from ..predict import kv_format
        self.sides = (p_chip, p_n), (d_chip, d_n)
        self.model, self.weights, self.kv = model, weights, kv_format(kv)
        self.i, self.o = int(input_tokens), int(output_tokens)
        if self.o < 2:
            raise ValueError("a stream of answers needs 2 tokens or more each "
                             "(output_tokens): a one-token answer has no decode phase")
        self.calibration, self.overlap = calibration, overlap
        cfg = catalog_config(model) if isinstance(model, str) else model
        self.layers = len(kvcache.layers(cfg))
        self.per_prompt_link_s = kvcache.kv_cache_bytes(cfg, self.i, 1, self.kv) / (
            link_gb_per_s * GB)
        self._pre, self._dec = {}, {}

    def _seconds(self, which, b):
        chip, n = self.sides[which == "decode"]
        o, depth = (1, self.i) if which == "prefill" else (self.o, self.i + self.o)
        try:
            return phase_seconds(which, chip, n, self.model, self.weights, self.kv, self.i, o,
                                 b, depth, self.calibration)[:2]
        except DoesNotFit:
            return None

    def prefill(self, b):
        """(prefill seconds, the cache's arrival) of ``b`` prompts, or None: no room."""
        if b not in self._pre:
            t = self._seconds("prefill", b)
            self._pre[b] = None if t is None else (
                t[0], arrival_s(t[0], b * self.per_prompt_link_s, self.layers, self.overlap))
        return self._pre[b]

    def decode(self, b):
        """Seconds of ``b`` answers' decode, or None: their caches do not fit."""
        if b not in self._dec:
            t = self._seconds("decode", b)
            self._dec[b] = None if t is None else t[1]
        return self._dec[b]

    def prompt_batch(self, ttft_limit_s, top):
        return largest(lambda b: self.prefill(b) is not None
                        and self.prefill(b)[1] <= ttft_limit_s, min(top, MAX_PREFILL_BATCH))

    def answer_batch(self, tpot_limit_s, top):
        return largest(lambda b: self.decode(b) is not None
                        and self.decode(b) / (self.o - 1) <= tpot_limit_s, top)

    def prompt_miss(self, ttft_limit_s, label) -> str:
        t = self.prefill(1)
        if t is None:
            return f"one prompt's cache does not fit on {label}"
        return f"one prompt's first token takes {t[1]:.2f} s on {label}, over the " \
               f"{ttft_limit_s:g} s limit"

    def answer_miss(self, tpot_limit_s, label) -> str:
        t = self.decode(1)
        if t is None:
            return f"one answer's cache does not fit on {label}"
        return (f"one answer takes {t / (self.o - 1) * 1e3:.0f} ms a token on {label} (with "
                f"the prompts it also runs), over the {tpot_limit_s * 1e3:.0f} ms limit")


def design(prefill, decode, model, *, weights="fp16", kv="fp16", input_tokens: int,
           output_tokens: int, link_gb_per_s: float, ttft_limit_s: float, tpot_limit_s: float,
           usd_per_chip_hour: Callable[[str], float] = rented_price,
           watts_per_chip: Callable[[str], float] = rented_power, max_batch: int = MAX_BATCH,
           overlap: bool = True, calibration=None, name: str | None = None) -> Design:
    """A split design: a prefill pool of ``prefill`` instances and a decode pool of
    ``decode`` instances, each at its largest batch within the limits, the caches crossing
    ``link_gb_per_s`` (decimal GB/s, each prefill instance's own) (module docstring)."""
    p_chip, p_n = _side("prefill", prefill)
    d_chip, d_n = _side("decode", decode)
    if isinstance(link_gb_per_s, bool) or not isinstance(link_gb_per_s, (int, float)) \
            or not link_gb_per_s > 0:
        raise ValueError(f"link_gb_per_s must be a positive bandwidth in GB/s, got "
                         f"{link_gb_per_s!r}")
    label = name or f"{p_n} x {p_chip} -> {d_n} x {d_chip}"
    phases = _Phases(p_chip, p_n, d_chip, d_n, model, weights, kv, input_tokens,
                     output_tokens, float(link_gb_per_s), overlap, calibration)
    b_p = phases.prompt_batch(ttft_limit_s, max_batch)
    if b_p == 0:
        return Design(label, (), phases.o, math.nan, math.nan,
                      phases.prompt_miss(ttft_limit_s, f"{p_n} x {p_chip}"))
    b_d = phases.answer_batch(tpot_limit_s, max_batch)
    if b_d == 0:
        return Design(label, (), phases.o, math.nan, math.nan,
                      phases.answer_miss(tpot_limit_s, f"{d_n} x {d_chip}"))
    p_s, ttft = phases.prefill(b_p)
    p_usd, p_w = _price_of(p_chip, p_n, usd_per_chip_hour, watts_per_chip)
    d_usd, d_w = _price_of(d_chip, d_n, usd_per_chip_hour, watts_per_chip)
    link_s = b_p * phases.per_prompt_link_s
    pools = (Pool("prefill", p_chip, p_n, b_p, b_p / max(p_s, link_s), p_usd, p_w),
             Pool("decode", d_chip, d_n, b_d, b_d / phases.decode(b_d), d_usd, d_w))
    return Design(label, pools, phases.o, ttft, phases.decode(b_d) / (phases.o - 1))
