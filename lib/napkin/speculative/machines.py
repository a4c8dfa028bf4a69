"""The essay's machines under speculative decoding, and the in-page chart's arithmetic.

The essay's buyers choose between an M2 Ultra (much bandwidth, little arithmetic), a DGX
Spark (much arithmetic, little bandwidth), an RTX 4090 and an H100. Speculative decoding
turns idle arithmetic into tokens, so it should favour the Spark and do least for the Mac.
Here each machine runs the same model the way chapter 8 prices local machines (llama.cpp:
Metal on the Mac, CUDA elsewhere, quantized weights), under two roofs:

- ``"peak"``: the spec sheet's bandwidth and the dense peak of the arithmetic the weights
  run in (:meth:`napkin.buying.Machine.roof`), the plain roofline;
- ``"llama.cpp"``: measured roofs, the share of the bandwidth ceiling that published
  llama.cpp decode reached (:func:`decode_share`: the machine's own runs of chapter 1's
  reference model where the book has them, else its family's median) and the FLOP/s its
  published prefill runs reached (the median of the machine's runs). That prefill rate is a
  large matrix product's; a verify step of a few tokens runs llama.cpp's small-batch kernels,
  which may reach less, so this roof is the most a short verify step could reach.

The ``"peak"`` view's arithmetic is the one llama.cpp runs the weights' matmuls in: for
Q4_K on CUDA that is the INT8 tensor peak (its quantized kernels multiply 8-bit integers),
on Metal FP16; :func:`ridge_tokens` can take another stated peak to show what that choice
moves.

Chapter 9's calibrated model is not used for these machines: its one share of both peaks
and its fixed costs per layer and per sequence were fitted to serving engines on datacenter
chips, while llama.cpp on these machines reaches measured shares of its own (the
``"llama.cpp"`` view).

Acceptance falls with a token's position in the draft: the chart's acceptance is the first
position's, and later positions fall as EAGLE's published rates do
(:func:`napkin.speculative.acceptance.position_rates`). The chart recomputes
:func:`napkin.speculative.speedup` in the page from :func:`rows` with :func:`js_expressions`
(tested to agree on a grid of slider settings).
"""

from __future__ import annotations

import math

import pandas as pd

import numpy as np

from .. import buying, catalog, tables
from ..deployment import deploy
from ..predict.calibration import Calibration
from ..predict.engines import Engine
from ..predict.experts import layout
from ..predict.step import decode_work, seconds
from . import draft as drafts
from .acceptance import position_rates
from .cost import DEPTH, break_even, speedup, speedup_for_tokens

__all__ = ["BATCHES", "decode_share", "js_expressions", "K_MAX", "local_engine", "machine",
           "machine_break_even", "machine_speedup", "MACHINES", "MODEL", "PARAMS", "prompt_lookup",
           "ridge_tokens", "rows", "summary", "tokens_speedup", "view_calibration", "VIEWS",
           "WEIGHTS"]

MACHINES = ("M2 Ultra", "DGX Spark", "RTX 4090", "H100 SXM")
MODEL = "Llama-3.1-8B"
WEIGHTS = "Q4_K"
VIEWS = {"peak": "spec-sheet roofs", "llama.cpp": "llama.cpp's measured roofs (chapter 8)"}
#: Batches the chart draws (a sequence's cache at DEPTH tokens fits every machine's memory
#: at each of them with this model).
BATCHES = (1, 2, 3, 4, 6, 8, 12, 16, 24, 32, 48, 64, 96, 128)


@tables.cached()
def machine(name: str) -> buying.Machine:
    return buying.machine(name)


def _require_view(view: str) -> str:
    if view not in VIEWS:
        raise ValueError(f"view must be one of {', '.join(VIEWS)}, got {view!r}")
    return view


@tables.cached()
def local_engine(name: str, model: str = MODEL, weights: str = WEIGHTS) -> Engine:
    """``model`` at ``weights`` on one machine, priced as llama.cpp runs it there: the
    weights' matmuls in the arithmetic its backend uses for them, attention in 16 bits."""
    m = machine(name)
    arith, peak, label = m.roof(weights)
    if peak is None:
        raise ValueError(f"{name} has no {arith} figure for {weights} weights ({label})")
    dep = deploy(model, name, weights=weights, kv="f16", backend=m.backend)
    attention = m.roofs.get("fp16", peak) / peak
    return Engine(deployment=dep, chip=name, tp=1, pp=1, link_bytes_per_s=math.inf,
                  link_spec="none (one chip)", experts=layout(dep.model.config),
                  total_params=catalog.params(model), attention_roof_ratio=attention)


def decode_share(name: str) -> tuple[float, str]:
    """The share of its bandwidth ceiling llama.cpp decode reaches on this machine, and where
    it comes from: the median of the machine's own published runs of the reference model
    (chapter 1's Llama-2-7B at Q4_0, a model of about the size priced here), else its
    family's median (chapter 8's discount)."""
    m = machine(name)
    if m.own_fractions:
        runs = len(m.own_fractions)
        return float(np.median(m.own_fractions)), f"its own run{'s' if runs > 1 else ''} ({runs})"
    return float(m.fraction_quartiles[1]), f"its family's median ({m.family})"


def view_calibration(name: str, view: str, weights: str = WEIGHTS) -> Calibration:
    """The roof ``view`` as a calibration of the step model: all peaks reached (``peak``),
    or the measured shares of them (``llama.cpp``: :func:`decode_share` of the bandwidth,
    the median published prefill rate of the FLOP/s). No ramp, no fixed cost per step."""
    _require_view(view)
    if view == "peak":
        return Calibration(communication=False)
    m = machine(name)
    if not m.prefill_flops:
        raise ValueError(f"{name} has no published llama.cpp prefill run to measure its roof")
    _, peak, _ = m.roof(weights)
    measured = float(pd.Series(m.prefill_flops).median())
    return Calibration(bandwidth_efficiency=decode_share(name)[0],
                       compute_efficiency=min(1.0, measured / peak), communication=False)


def machine_speedup(name: str, view: str, acceptance: float, share: float, k: int, batch=1,
                    depth: int = DEPTH):
    """What the chart draws: :func:`napkin.speculative.speedup` of a draft costing ``share``
    of a plain step, on one machine under one view, the first drafted token accepted with
    probability ``acceptance`` and later ones falling as published (``position_rates``)."""
    return speedup(local_engine(name), drafts.share(share), position_rates(acceptance, k), k,
                   batch, depth, view_calibration(name, view))


def machine_break_even(name: str, view: str, acceptance: float, share: float, k: int,
                       depth: int = DEPTH):
    """The smallest batch at which speculation no longer pays on one machine, acceptance as
    in :func:`machine_speedup` (None: it still pays when memory is full)."""
    return break_even(local_engine(name), drafts.share(share), position_rates(acceptance, k),
                      k, depth, view_calibration(name, view))


def tokens_speedup(name: str, view: str, tokens: float, k: int, batch=1, depth: int = DEPTH):
    """The speedup on one machine of a draft that costs nothing and yields ``tokens`` per
    cycle of ``k`` drafted tokens (a published acceptance length: prompt lookup)."""
    return speedup_for_tokens(local_engine(name), drafts.share(0.0), tokens, k, batch, depth,
                              view_calibration(name, view))


def ridge_tokens(name: str, view: str, depth: int = DEPTH,
                 arithmetic: str | None = None) -> float:
    """Tokens in one step at which the machine's step turns compute-bound (weights and
    attention against the bytes of the weights and one sequence's cache at ``depth``).

    ``arithmetic`` (``"peak"`` view only): price the weights' matmuls at another stated
    peak of the machine (``"fp16"``), to show what the backend's choice of arithmetic
    moves; attention keeps its own roof."""
    c = local_engine(name).constants
    cal = view_calibration(name, view)
    bw = float(c.bandwidth_bytes_per_s[0]) * cal.bandwidth_efficiency
    matmul = float(c.flops_per_s[0])
    if arithmetic is not None:
        if view != "peak":
            raise ValueError(f"arithmetic applies to the 'peak' view only, got view={view!r}; "
                             f"drop arithmetic or pass view='peak'")
        roofs = machine(name).roofs
        if arithmetic not in roofs:
            raise ValueError(f"{name} states no {arithmetic!r} peak (it states "
                             f"{', '.join(roofs)}); pass one of those")
        matmul = float(roofs[arithmetic])
    flops = matmul * cal.compute_efficiency
    per_token = float(c.flops_per_token[0]) + float(c.flops_per_pair_full[0]) * depth * \
        matmul / float(c.attention_flops_per_s[0])
    return flops * float(c.dense_weight_bytes[0]) / (bw * per_token)


def rows(depth: int = DEPTH, batches=BATCHES) -> pd.DataFrame:
    """One row per machine, view and batch with every constant :func:`js_expressions`
    needs: effective bandwidth and FLOP/s (the view's share of the peaks), the weights'
    bytes, FLOPs per token, cache bytes per token and attention FLOPs per (query, key) pair."""
    out = []
    for name in MACHINES:
        c = local_engine(name).constants
        for view, label in VIEWS.items():
            cal = view_calibration(name, view)
            for b in batches:
                out.append({
                    "machine": name, "view": view, "view_label": label, "B": int(b),
                    "d": float(depth), "W": float(c.dense_weight_bytes[0]),
                    "N2": float(c.flops_per_token[0]), "kvb": float(c.kv_bytes_full[0]),
                    "fpp": float(c.flops_per_pair_full[0]),
                    "bw": float(c.bandwidth_bytes_per_s[0]) * cal.bandwidth_efficiency,
                    "P": float(c.flops_per_s[0]) * cal.compute_efficiency,
                    "Pa": float(c.attention_flops_per_s[0]) * cal.compute_efficiency})
    return pd.DataFrame(out)


#: The most tokens the chart's slider drafts per cycle.
K_MAX = 15
#: The page's parameters, as the chart's sliders name them.
PARAMS = {"acceptance": "acceptance", "share": "draft_share", "k": "drafted"}


def _decay_products() -> list[float]:
    """For each position up to :data:`K_MAX`, the product of the published fall
    (:func:`~napkin.speculative.acceptance.decay_profile`) up to it: the chance that the first
    ``i`` drafted tokens are all accepted is ``a^i`` times this."""
    return [float(p) for p in np.cumprod(position_rates(1.0, K_MAX))]


def js_expressions() -> dict[str, str]:
    """:func:`machine_speedup` as Vega expressions over a :func:`rows` row and the page's
    parameters (:data:`PARAMS`: the first drafted token's acceptance, the draft step over a
    plain step, the drafted tokens per cycle): the step of ``m`` tokens per sequence is the
    slower of its bytes over the bandwidth and its FLOPs (weights, then attention) over the
    FLOP/s; the tokens a cycle yields fall with position as :func:`machine_speedup`'s do."""
    a, c, k = PARAMS["acceptance"], PARAMS["share"], PARAMS["k"]
    memory = "(datum.W + datum.B * datum.kvb * datum.d) / datum.bw"

    def compute(m: str) -> str:
        return (f"(datum.N2 * datum.B * ({m}) / datum.P + datum.B * datum.fpp * "
                f"(({m}) * datum.d + ({m}) * (({m}) + 1) / 2) / datum.Pa)")

    e = {"plain_s": f"max({memory}, {compute('1')})",
         "verify_s": f"max({memory}, {compute(f'{k} + 1')})",
         "tau": "1 + " + " + ".join(f"({k} >= {i} ? pow({a}, {i}) * {float(d)!r} : 0)"
                                    for i, d in enumerate(_decay_products(), start=1))}
    e["cycle"] = f"({k} * {c} * ({e['plain_s']}) + ({e['verify_s']})) / ({e['plain_s']})"
    e["speedup"] = f"({e['tau']}) / ({e['cycle']})"
    e["verify_bound"] = (f"{memory} >= {compute(f'{k} + 1')} ? 'memory-bound' : "
                         "'compute-bound'")
    return e


def summary(acceptance: float, share: float, k: int, batches=(1, 4),
            depth: int = DEPTH) -> pd.DataFrame:
    """Per machine: its decode share and where it comes from, its ridge in tokens under both
    roofs, the speedup at each of ``batches`` and the batch at which speculation stops paying
    (llama.cpp's measured roofs, and the spec sheet's), and what one stream decodes with and
    without it (measured roofs)."""
    out = []
    for name in MACHINES:
        share_of_ceiling, basis = decode_share(name)
        row = {"machine": name, "decode_share": share_of_ceiling, "decode_share_basis": basis,
               "ridge_llama_tokens": ridge_tokens(name, "llama.cpp", depth),
               "ridge_peak_tokens": ridge_tokens(name, "peak", depth)}
        for b in batches:
            row[f"speedup_b{b}"] = machine_speedup(name, "llama.cpp", acceptance, share, k, b,
                                                   depth)
        for view, key in (("llama.cpp", "break_even_llama"), ("peak", "break_even_peak")):
            row[key] = machine_break_even(name, view, acceptance, share, k, depth)
        e = local_engine(name)
        step = float(seconds(e.constants, decode_work(e.constants, 1, depth, 1),
                             view_calibration(name, "llama.cpp"))[0])
        row["plain_tok_per_s"] = 1 / step
        row["speculative_tok_per_s"] = row["speedup_b1"] / step
        out.append(row)
    return pd.DataFrame(out)


def prompt_lookup(tokens: tuple[float, ...], k: int, batches=(1, 4),
                  depth: int = DEPTH) -> pd.DataFrame:
    """Per machine and published acceptance length of prompt lookup (``tokens``): its
    speedup at each of ``batches`` with ``k`` drafted tokens a cycle, under llama.cpp's
    measured roofs (drafting costs nothing: it is a search of the context)."""
    return pd.DataFrame([{"machine": name, "tokens_per_cycle": t,
                          **{f"speedup_b{b}": tokens_speedup(name, "llama.cpp", t, k, b, depth)
                             for b in batches}}
                         for name in MACHINES for t in tokens])
