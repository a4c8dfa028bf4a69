"""Every number the ranking uses for one machine and one workload, with the reasons.

- **what the model computes and reads**: FLOPs follow one convention with the reference runs
  (:func:`napkin.phases.layer_params`): 2 per layer weight per token, plus attention. The input
  embedding is a lookup, so it never counts; the output layer runs for a prompt's last token
  only (negligible, left out) and for every decoded token. A model whose layers cannot be
  counted that way (compressed MLA attention) is counted by the catalog's active parameters.
- **first token**: the prompt's FLOPs (:func:`prompt_flops`) over the
  FLOP/s the machine's reference prefill runs reached (fastest, median and slowest run);
  beside it the roofline bound of the arithmetic the weights run in.
- **single stream**: bandwidth over the bytes a token reads (the active weights plus the
  cache at the mean context), times the decode discount (low, middle, high).
- **everyone at once**: one decode step of all users (the weights once, every cache): its
  reads at the discounted bandwidth, its arithmetic at the rate the reference prefill runs
  reached (the roof where there are none), whichever takes longer.
- **fit and price**: whether the weights and every cache fit in what the GPU may use, and
  the cheapest recorded configuration that holds them.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from .. import catalog, kvcache, phases, roofline, tables
from ..units import GB, TFLOPS, GiB, MiB
from .machine import Machine, nan_if_empty
from .reference import REFERENCE_FORMAT
from .workload import KV_DTYPE, Workload

RAISE_LIMIT = "fits only after raising iogpu.wired_limit_mb"


def matmul_params(model: str) -> tuple[float, float]:
    """Weights a token multiplies: (per prompt token, per decoded token)."""
    cfg = catalog.config(model)
    try:
        layers = phases.layer_params(cfg)
    except ValueError:  # compressed MLA attention: the catalog's count stands for both
        active = catalog.params(model, active=True)
        return active, active
    head = float(cfg["vocab_size"] * cfg["hidden_size"])
    return layers, layers + head


def _model(model: str, params: float, weight_bytes: float = 1.0) -> roofline.Model:
    return roofline.Model(name=model, params=params, weight_bytes=weight_bytes,
                          config=catalog.config(model),
                          kv_dtype_bytes=float(kvcache.dtype_bytes(KV_DTYPE)))


def prompt_flops(model: str, tokens: int, depth: int = 0) -> float:
    """FLOPs of a prompt of ``tokens`` after ``depth`` tokens already cached."""
    return roofline.step_work(_model(model, matmul_params(model)[0]),
                              prefill=[(depth, tokens)]).flops


def model_for(workload: Workload) -> tuple[roofline.Model, float, float]:
    """The workload's model for a decode step (FLOPs from the weights a decoded token
    multiplies, the cache from its config), and its total and active weight bytes at the
    chosen format."""
    total = catalog.weight_bytes(workload.model, workload.weight_format)
    active = catalog.weight_bytes(workload.model, workload.weight_format, active=True)
    return _model(workload.model, matmul_params(workload.model)[1], total), total, active



@dataclass(frozen=True)
class _Terms:
    """What a workload's model reads and computes, whatever the machine."""

    model: roofline.Model
    w_total: float
    w_active: float
    kv_end: float
    kv_mean: float
    prefill_flops: float
    step: roofline.StepWork


@tables.cached("models", "models/")
def _terms(w: Workload) -> _Terms:
    model, w_total, w_active = model_for(w)
    cfg = model.config
    return _Terms(model=model, w_total=w_total, w_active=w_active,
                  kv_end=kvcache.kv_cache_bytes(cfg, w.context_tokens, 1, KV_DTYPE),
                  kv_mean=kvcache.kv_cache_bytes(cfg, w.mean_context_tokens, 1, KV_DTYPE),
                  prefill_flops=prompt_flops(w.model, w.prompt_tokens),
                  step=roofline.step_work(model,
                                          decode_contexts=[w.mean_context_tokens] * w.users))


def _fit(m: Machine, w: Workload, t: _Terms) -> dict:
    """Memory: what the workload needs, whether it fits, and why not."""
    cfg, w_total, kv_end = t.model.config, t.w_total, t.kv_end
    need = w_total + w.users * kv_end
    max_users = kvcache.max_batch(cfg, w.context_tokens, m.usable_bytes, w_total, KV_DTYPE) \
        if w_total <= m.usable_bytes else 0
    cap, usable, most = m.capacity_bytes, m.usable_bytes, m.raisable_bytes
    users = "1 user" if w.users == 1 else f"{w.users} users"
    message = ""
    if w_total > most:
        message = (f"{w.model} at {w.weight_format} ({w_total / GiB:,.1f} GiB of weights) does "
                   f"not fit in {m.name}'s {cap / GiB:,.0f} GiB"
                   + (f" (its GPU may use {most / GiB:,.1f})" if most < cap else ""))
    elif need > most:
        message = (f"{users} need {need / GiB:,.1f} GiB (weights {w_total / GiB:,.1f} "
                   f"GiB + {w.users} x {kv_end / GiB:,.2f} GiB of cache); {m.name} has "
                   f"{cap / GiB:,.0f} GiB" + (f", its GPU may use {most / GiB:,.1f}"
                                              if most < cap else "") + f", room for {max_users}"
                   + (" within its default GPU limit" if usable < most else ""))
    elif need > usable:
        message = (f"{RAISE_LIMIT} to at least {math.ceil(need / MiB):,} MiB: it needs "
                   f"{need / GiB:,.1f} GiB, and macOS lets the GPU use {usable / GiB:,.1f} of "
                   f"{cap / GiB:,.0f} GiB by default")
    return {"weights_GiB": w_total / GiB, "kv_per_user_GiB": kv_end / GiB,
            "need_GiB": need / GiB, "fits": bool(need <= usable),
            "fits_after_raising": bool(usable < need <= most), "max_users": int(max_users),
            "message": message}


def _first_token(m: Machine, w: Workload, t: _Terms) -> dict:
    """Time to the first token from the reference runs, and the roofline bound."""
    prefill, w_total = t.prefill_flops, t.w_total
    eff = m.prefill_flops
    ttft = (prefill / max(eff), prefill / float(np.median(eff)), prefill / min(eff)) \
        if eff else (math.nan,) * 3
    arith, roof, label = m.roof(w.weight_format)
    bound = max(prefill / roof, w_total / m.bandwidth_bytes_per_s) if roof else math.nan
    return {"roof_arithmetic": arith, "roof_TFLOPS": (roof or math.nan) / TFLOPS,
            "roof_label": label, "prefill_flops": prefill,
            "ttft_fast_s": ttft[0], "ttft_mid_s": ttft[1], "ttft_slow_s": ttft[2],
            "ttft_bound_s": bound}


def _decode(m: Machine, w: Workload, t: _Terms) -> dict:
    """One stream's tokens/s, and each user's when all decode at once."""
    fracs = m.decode_fractions
    ceiling = m.bandwidth_bytes_per_s / (t.w_active + t.kv_mean)
    own = float(np.median(m.own_fractions)) if m.own_fractions else math.nan
    work = t.step
    read = min(t.w_total, w.users * t.w_active) + work.kv_bytes
    _, roof, _ = m.roof(w.weight_format)
    eff = m.prefill_flops
    rates = (min(eff), float(np.median(eff)), max(eff)) if eff else (roof or 0.0,) * 3
    compute_s = [work.flops / r if r else 0.0 for r in rates]
    read_s = [read / (f * m.bandwidth_bytes_per_s) for f in fracs]
    per_user = [1 / max(c, r) for c, r in zip(compute_s, read_s)]
    out = {"ceiling_tok_per_s": ceiling, "decode_own_tok_per_s": own * ceiling,
           "step_compute_s": compute_s[1], "step_read_s": read_s[1],
           "compute_basis": ("published prefill runs" if eff else
                             f"roof: {m.roof(w.weight_format)[2]}" if roof else
                             "none (memory only)")}
    for i, name in enumerate(("low", "mid", "high")):
        out[f"decode_{name}_tok_per_s"] = fracs[i] * ceiling
        out[f"per_user_{name}_tok_per_s"] = per_user[i]
    return out


def _whole_request(w: Workload, first: dict, dec: dict) -> dict:
    """Each user's output rate over whole requests: every user's prompt prefilled, one after
    another at the middle prefill rate, then the answers decoded together. Prompts and steps
    are not overlapped, so where a step leaves arithmetic spare (a memory-bound one) this is
    the slow end; the decode-only rate is the fast end. NaN without a prefill run."""
    round_s = w.users * first["ttft_mid_s"] + w.output_tokens / dec["per_user_mid_tok_per_s"]
    return {"round_s": round_s, "request_per_user_mid_tok_per_s": w.output_tokens / round_s}


def _price(m: Machine, w: Workload, need: float, per_user_mid: float, own: float) -> dict:
    """The smallest recorded configuration whose usable memory holds it all."""
    offer = next((p for p in sorted(m.prices, key=lambda p: p[0]) if p[1] >= need), None)
    if offer:
        note = f"{offer[4]} ({offer[5]})"
    elif m.prices:
        note = (f"no recorded price for a configuration whose GPU may use {need / GiB:,.0f} "
                "GiB; " + "; ".join(f"{p[4]}: {p[3]} {p[2]:,.0f}" for p in m.prices))
    else:
        note = "no vendor price stated"
    price = offer[2] if offer else math.nan
    return {"price": price, "currency": offer[3] if offer else "",
            "price_configuration": offer[4] if offer else "", "price_note": note,
            "price_per_tok_per_s": price / (w.users * per_user_mid),
            "price_per_own_tok_per_s": price / own if w.users == 1 else math.nan}


def estimate(m: Machine, w: Workload) -> dict:
    """Every number the ranking uses for one machine and workload, with the reasons."""
    t = _terms(w)
    fit = _fit(m, w, t)
    first = _first_token(m, w, t)
    dec = _decode(m, w, t)
    _, ref_roof, _ = m.roof(REFERENCE_FORMAT)
    fracs = m.decode_fractions
    return {
        "machine": m.name, "vendor": m.vendor, "family": m.family, "backend": m.backend,
        "bandwidth_GB_per_s": m.bandwidth_bytes_per_s / GB,
        "capacity_GiB": m.capacity_bytes / GiB, "capacity_basis": m.capacity_basis,
        "usable_GiB": m.usable_bytes / GiB, "gpu_limit_basis": m.gpu_limit_basis,
        "prefill_runs": len(m.prefill_flops), "prefill_note": m.prefill_note,
        "prefill_TFLOPS_low": nan_if_empty(m.prefill_flops, min) / TFLOPS,
        "prefill_TFLOPS_high": nan_if_empty(m.prefill_flops, max) / TFLOPS,
        "prefill_fraction_low": nan_if_empty(m.prefill_fractions, min),
        "prefill_fraction_high": nan_if_empty(m.prefill_fractions, max),
        "reference_roof_TFLOPS": (ref_roof or math.nan) / TFLOPS,
        "fraction_low": fracs[0], "fraction_mid": fracs[1], "fraction_high": fracs[2],
        "fraction_basis": m.fraction_basis,
        **fit, **first, **dec, **_whole_request(w, first, dec),
        **_price(m, w, fit["need_GiB"] * GiB, dec["per_user_mid_tok_per_s"],
                 dec["decode_own_tok_per_s"]),
        "source_bandwidth": m.sources.get("bandwidth", ""),
        "source_capacity": m.sources.get("capacity", ""),
        "source_prefill": m.sources.get("prefill", ""),
        "source_roof": m.sources.get("flops", ""),
    }
