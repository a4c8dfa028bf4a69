"""Prefill on one machine, decode on another, the KV cache crossing a link between them.

A request's life on a split pair, for ``batch`` requests served together:

1. the prefill side runs the prompts (``prefill_s``), which gives each its first token;
2. their caches cross the link: ``transfer_bytes`` are exactly the caches of the prompts
   (:func:`napkin.kvcache.kv_cache_bytes`), ``transfer_s`` that over the link;
3. the decode side writes the other ``output_tokens - 1`` tokens (``decode_s``), one step per
   token at a growing depth.

Streamed layer by layer (``overlap``), a layer's cache leaves as soon as the layer is done,
so the transfer hides behind the prefill of the layers after it: with ``L`` layers of equal
cost the last byte arrives at ``max(P + T / L, P / L + T)`` for a prefill of ``P`` seconds and
a transfer of ``T``; sent after the last layer, at ``P + T``. ``ttft_s`` is that arrival:
the prefill side has the first token at ``prefill_s``, but the answer goes on only once the
decode side has the cache, so a user waits the unhidden transfer before the second token
(as Splitwise and DistServe charge it). Times are the whole batch's: ``prefill_s`` ends with
the batch's last prompt. A one-token answer needs no decode side: nothing moves.

Each side is priced by the book's model for its kind of machine:

- a **datacenter chip** (one the calibrated step model of chapter 9 is fitted on: H100, A100,
  MI300X, ...) by that step model, a static batch as :func:`napkin.predict` prices one;
- a **desk machine** (chapter 8's: the Macs, DGX Spark, Strix Halo, the GeForce and
  workstation cards, run with llama.cpp) by chapter 8's estimates: the prompts' FLOPs at the
  median rate its published prefill runs reached, one prompt after another, and the decode
  step of all of them at the middle of its family's decode discount.

With the same machine on both sides and no link (``link_gb_per_s=None``) it is one machine,
which runs the two phases one after the other. On a datacenter chip its ``e2e_latency_s`` is
then :func:`napkin.predict`'s static batch, and its ``output_tokens_per_s`` that batch's
rate, for a batch whose caches fit at full depth (the split does not run a batch in waves:
it refuses one that does not fit). A desk machine agrees with chapter 8's estimate instead,
but for one token: chapter 8 decodes every output token, the split takes the first from
the prefill.
"""

from __future__ import annotations

import math
import re
from dataclasses import dataclass

import numpy as np

from .. import hardware, kvcache
from ..units import GB, GiB

__all__ = ["arrival_s", "DESK_CHIPS", "DoesNotFit", "is_desk", "phase_seconds", "predict_split",
           "Side", "SplitPrediction"]

#: Machines that sit on a desk besides Apple's chips and the GeForce cards (chapter 8's
#: unified-memory machines and workstation cards): priced by chapter 8's llama.cpp estimates.
DESK_CHIPS = ("DGX Spark", "Strix Halo", "RTX PRO 6000 Blackwell", "RTX 6000 Ada")
_GEFORCE = re.compile(r"^RTX \d{4}$")


def is_desk(chip: str) -> bool:
    """Whether ``chip`` is a desk machine (priced by chapter 8) rather than a datacenter chip
    (priced by chapter 9's calibrated step model)."""
    return (hardware.chip(chip).vendor == "Apple" or chip in DESK_CHIPS
            or bool(_GEFORCE.match(chip)))


class DoesNotFit(ValueError):
    """A side's memory cannot hold the weights with the batch's caches."""


@dataclass(frozen=True)
class Side:
    """One side of a pair: ``n_chips`` of ``chip``, and the model that prices it."""

    chip: str
    n_chips: int
    basis: str

    @property
    def label(self) -> str:
        return self.chip if self.n_chips == 1 else f"{self.n_chips} x {self.chip}"


@dataclass(frozen=True)
class SplitPrediction:
    """What :func:`predict_split` says about one pair and workload: seconds and bytes.

    ``binding`` is the stage that takes longest per batch (``"prefill"``, ``"link"`` or
    ``"decode"``): in a pipeline of many batches, the one that sets the pair's throughput;
    ``"prefill+decode"`` for one machine, which runs both in turn. ``output_tokens_per_s``
    is that rate: ``batch * output_tokens`` per batch over the binding stage's seconds (one
    machine: over both phases'). ``link_gb_per_s`` is the bandwidth between the two sides
    in all, whatever their chips."""

    prefill: Side
    decode: Side
    model: str
    weights: str
    kv: str
    input_tokens: int
    output_tokens: int
    batch: int
    link_gb_per_s: float
    overlap: bool
    prefill_s: float
    transfer_bytes: float
    transfer_s: float
    ttft_s: float
    tpot_s: float
    decode_s: float
    e2e_latency_s: float
    binding: str
    output_tokens_per_s: float

    @property
    def one_machine(self) -> bool:
        return self.prefill == self.decode and self.transfer_s == 0


def _side(which: str, spec) -> tuple[str, int]:
    """A side given as a chip name or a ``(chip, n_chips)`` pair."""
    chip, n = None, None
    if isinstance(spec, str):
        chip, n = spec, 1
    elif isinstance(spec, (tuple, list)) and len(spec) == 2:
        chip, n = spec
    if not isinstance(chip, str) or isinstance(n, bool) or not isinstance(n, int) or n < 1:
        raise ValueError(f"{which} must be a book chip name or a (chip, n_chips) pair with "
                         f"n_chips a whole number >= 1, got {spec!r}")
    hardware.chip(chip)  # refuses an unknown chip, naming the known ones
    return chip, n


def _tokens(name: str, value, low: int = 1) -> int:
    if isinstance(value, bool) or not isinstance(value, (int, np.integer)) or value < low:
        raise ValueError(f"{name} must be a whole number >= {low}, got {value!r}")
    return int(value)


def _datacenter(which: str, chip: str, n: int, model, weights: str, kv: str, i: int, o: int,
                b: int, depth: int, cal):
    """(prefill seconds, decode seconds, model name) of ``b`` requests on a datacenter side,
    by the step model with calibration ``cal`` (None: chapter 9's published fit); refuses a
    side whose memory cannot hold the weights and the caches at ``depth``."""
    from ..predict import calibrated, engine, step
    from ..predict.serve import kv_bytes_per_sequence

    try:
        e = engine(chip, model, n_chips=n, weights=weights, kv=kv)
    except ValueError as err:
        kind = DoesNotFit if "no room" in str(err) else ValueError
        raise kind(f"the {which} side ({n} x {chip}): {err}") from None
    c, cal = e.constants, cal or calibrated()
    need = b * float(kv_bytes_per_sequence(c, depth)[0])
    if need > e.kv_memory_bytes:
        raise DoesNotFit(
            f"the {which} side ({n} x {chip}) holds {e.kv_memory_bytes / GiB:,.1f} "
            f"GiB of cache beside {e.model.name}'s weights, and {b} sequences of {depth:,} "
            f"tokens need {need / GiB:,.1f} GiB: use more chips, a smaller batch or a "
            "smaller format")
    prefill = float(step.seconds(c, step.prefill_work(c, b, i), cal)[0])
    decode = float(step.decode_steps_seconds(c, b, i, o - 1, cal)[0])
    return prefill, decode, e.model.name


def _desk(which: str, chip: str, n: int, model, weights: str, kv: str, i: int, o: int, b: int):
    """(prefill seconds, decode seconds, model name, note) of ``b`` requests on a desk
    machine, by chapter 8's estimates (:func:`napkin.buying.estimate`)."""
    from .. import buying
    from ..buying.workload import KV_DTYPE
    from ..predict import weight_format

    if kv != KV_DTYPE:
        raise ValueError(f"the {which} side ({chip}) is priced by chapter 8's estimates, whose "
                         f"caches are {KV_DTYPE}; give kv='{KV_DTYPE}' (got {kv!r})")
    if n != 1:
        raise ValueError(f"the {which} side: chapter 8 prices one {chip}, not {n}; give "
                         f"{chip!r} alone")
    if not isinstance(model, str):
        raise ValueError(f"the {which} side ({chip}) is a desk machine, priced by chapter 8's "
                         "estimates, which know the book's models by name only; give a name "
                         "from data/models.csv")
    w = buying.Workload(name="split", prompt_tokens=i, output_tokens=o, users=b, model=model,
                        weight_format=weight_format(weights))
    est = buying.estimate(buying.machine(chip), w)
    if not (est["fits"] or est["fits_after_raising"]):
        raise DoesNotFit(f"the {which} side ({chip}): {est['message']}; use a smaller batch, a "
                         "smaller format or a larger machine")
    prefill = b * est["ttft_mid_s"]
    if which == "prefill" and not math.isfinite(prefill):
        raise ValueError(f"the prefill side ({chip}) has no published prefill run in data/ "
                         "to estimate its prefill from; put the prefill on another machine")
    decode = (o - 1) / est["per_user_mid_tok_per_s"]
    note = f"; {est['message']}" if est["fits_after_raising"] else ""
    return prefill, decode, model, note


def phase_seconds(which: str, chip: str, n: int, model, weights, kv, i: int, o: int, b: int,
                  depth: int, calibration=None):
    """(prefill seconds, decode seconds, model name, basis) of ``b`` requests of ``i`` prompt
    and ``o`` output tokens on one side, ``which`` ("prefill" or "decode") naming it in
    errors; a datacenter side must hold ``b`` caches of ``depth`` tokens. ``calibration``
    prices a datacenter side with another fit (``napkin.predict.ROOFLINE``: the plain
    roofline); a desk side is always chapter 8's estimate."""
    if is_desk(chip):
        prefill, decode, name, note = _desk(which, chip, n, model, weights, kv, i, o, b)
        return prefill, decode, name, "chapter 8's estimates (published llama.cpp runs)" + note
    basis = "chapter 9's calibrated step model" if calibration is None else "the step model " \
        "with the given calibration"
    return (*_datacenter(which, chip, n, model, weights, kv, i, o, b, depth, calibration),
            basis)


def arrival_s(prefill_s: float, transfer_s: float, layers: int, overlap: bool) -> float:
    """When the last byte of the cache reaches the decode side (module docstring)."""
    if not overlap:
        return prefill_s + transfer_s
    return max(prefill_s + transfer_s / layers, prefill_s / layers + transfer_s)


def predict_split(prefill, decode, model, *, weights: str = "fp16", kv: str = "fp16",
                  input_tokens: int, output_tokens: int, link_gb_per_s: float | None,
                  batch: int = 1, overlap: bool = True) -> SplitPrediction:
    """Prefill ``batch`` prompts of ``input_tokens`` on ``prefill``, move their caches over a
    link of ``link_gb_per_s`` (decimal GB/s each way; None: the same machine, nothing moves),
    and decode ``output_tokens`` each on ``decode``. ``prefill`` and ``decode`` are a book
    chip name or a ``(chip, n_chips)`` pair; ``model`` a book model name (or, on datacenter
    chips, a Hugging Face config mapping). See the module docstring."""
    from ..catalog import config as catalog_config
    from ..predict import kv_format
    from ..models import load_config, require_int

    p_chip, p_n = _side("prefill", prefill)
    d_chip, d_n = _side("decode", decode)
    i, o, b = (_tokens("input_tokens", input_tokens), _tokens("output_tokens", output_tokens),
               _tokens("batch", batch))
    same = (p_chip, p_n) == (d_chip, d_n)
    if not isinstance(overlap, bool):
        raise ValueError(f"overlap must be True (the cache streamed layer by layer) or False "
                         f"(sent after the last layer), got {overlap!r}")
    if link_gb_per_s is None:
        if not same:
            raise ValueError(f"the prefill side ({p_n} x {p_chip}) and the decode side "
                             f"({d_n} x {d_chip}) differ, so the cache crosses a link: give "
                             "link_gb_per_s (10 GbE is 1.25, a 400 Gb/s NIC 50)")
        link = math.inf
    else:
        if isinstance(link_gb_per_s, bool) or not isinstance(link_gb_per_s, (int, float)):
            raise ValueError(f"link_gb_per_s must be a number of GB/s (10 GbE is 1.25), got "
                             f"{link_gb_per_s!r}")
        link = float(link_gb_per_s)
        if not link > 0 or math.isnan(link):
            raise ValueError(f"link_gb_per_s must be a positive bandwidth in GB/s (10 GbE is "
                             f"1.25), got {link_gb_per_s!r}; for one machine give None")
    k = kv_format(kv)
    pre_s, _, name, pre_basis = phase_seconds("prefill", p_chip, p_n, model, weights, k, i, 1,
                                              b, i)
    if o > 1:
        _, dec_s, _, dec_basis = phase_seconds("decode", d_chip, d_n, model, weights, k, i, o,
                                               b, i + o)
    else:  # the prefill's token is the whole answer: no decode side, nothing to move
        dec_s, dec_basis = 0.0, "none (a one-token answer comes from the prefill)"
    cfg = catalog_config(model) if isinstance(model, str) else load_config(model)
    one = same and link_gb_per_s is None
    moved = 0 if one or o == 1 else kvcache.kv_cache_bytes(cfg, i, b, k)
    transfer = moved / (link * GB) if moved else 0.0
    ttft = arrival_s(pre_s, transfer, require_int(cfg, "num_hidden_layers"), overlap)
    if one:  # one machine runs both phases in turn: its rate is the whole batch's
        binding, busy = "prefill+decode", pre_s + dec_s
    else:  # a pipeline of batches: the slowest stage sets the rate
        stages = {"prefill": pre_s, "link": transfer, "decode": dec_s}
        binding = max(stages, key=stages.get)
        busy = stages[binding]
    return SplitPrediction(
        prefill=Side(p_chip, p_n, pre_basis), decode=Side(d_chip, d_n, dec_basis), model=name,
        weights=weights, kv=k, input_tokens=i, output_tokens=o, batch=b,
        link_gb_per_s=link if link_gb_per_s is not None else math.inf, overlap=bool(overlap),
        prefill_s=pre_s, transfer_bytes=float(moved), transfer_s=transfer, ttft_s=ttft,
        tpot_s=dec_s / (o - 1) if o > 1 else math.nan, decode_s=dec_s,
        e2e_latency_s=ttft + dec_s, binding=binding, output_tokens_per_s=b * o / busy)
