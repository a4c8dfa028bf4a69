"""The in-page calculator: :func:`napkin.buying.estimate` as Vega expressions over one row per
machine and model, so a reader's browser can redo the arithmetic for any workload (tests
render the page and compare it with the library)."""

from __future__ import annotations

import numpy as np
import pandas as pd

from .. import catalog, kvcache
from .machine import Machine, machines
from .estimate import matmul_params
from .workload import KV_DTYPE

FORMATS = ["Q4_K", "Q4_0", "MXFP4", "Q8_0", "FP8", "F16"]
KV_BYTES = float(kvcache.dtype_bytes(KV_DTYPE))


def _machine_row(m: Machine, fmts: list[str]) -> dict:
    eff = np.array(m.prefill_flops) if m.prefill_flops else None
    prices = sorted(m.prices, key=lambda p: p[0])[:3]
    low, mid, high = m.decode_fractions
    row = {
        "machine": m.name, "vendor": m.vendor, "family": m.family, "backend": m.backend,
        "bw": m.bandwidth_bytes_per_s, "capacity": m.capacity_bytes, "usable": m.usable_bytes,
        "raisable": m.raisable_bytes, "capacity_basis": m.capacity_basis,
        "eff_low": float(eff.min()) if eff is not None else 0.0,
        "eff_mid": float(np.median(eff)) if eff is not None else 0.0,
        "eff_high": float(eff.max()) if eff is not None else 0.0,
        "runs": len(m.prefill_flops),
        "f_low": low, "f_mid": mid, "f_high": high, "fraction_basis": m.fraction_basis,
    }
    for f in fmts:
        _, roof, label = m.roof(f)
        row[f"roof_{f}"] = roof or 0.0
        row[f"roofkind_{f}"] = label
    for i in range(3):
        row[f"p{i}_usable"] = prices[i][1] if i < len(prices) else 0.0
        row[f"p{i}_usd"] = prices[i][2] if i < len(prices) else 0.0
    return row


def _model_row(name: str) -> dict:
    cfg = catalog.config(name)
    form = kvcache.linear_form(cfg)
    heads = cfg["num_attention_heads"]
    prompt, decoded = matmul_params(name)
    return {"model": name, "params_total": catalog.params(name),
            "params_active": catalog.params(name, active=True),
            "params_prompt": prompt, "params_decode": decoded,
            "full": form.full_elements_per_token, "win": form.windowed_elements_per_token,
            "window": form.window or 0,
            "groups": heads // cfg.get("num_key_value_heads", heads),
            "max_context_tokens": kvcache.max_context_tokens(cfg)}


def calculator_rows(model_names: list[str] | None = None,
                    formats: list[str] | None = None) -> pd.DataFrame:
    """One row per machine and model with every constant the in-page calculator needs to
    redo :func:`estimate` in JavaScript (tested to agree): ``roof_<format>`` is the dense
    FLOP/s of the arithmetic each weight format runs in on that machine (0: no figure)."""
    names = model_names or catalog.names()
    fmts = formats or FORMATS
    per_model = [_model_row(n) for n in names]
    return pd.DataFrame([{**_machine_row(m, fmts), **row}
                         for m in machines() for row in per_model])


def _elems(n: str) -> str:  # cached elements of one sequence of n tokens
    return f"(datum.full * ({n}) + datum.win * min({n}, datum.window))"


def _pairs(n: str) -> str:  # causal (query, key) element pairs of an n-token prompt
    return (f"(datum.full * ({n}) * (({n}) + 1) / 2 + datum.win * (({n}) <= datum.window ? "
            f"({n}) * (({n}) + 1) / 2 : datum.window * (datum.window + 1) / 2 + "
            f"(({n}) - datum.window) * datum.window))")


def _work() -> dict[str, str]:
    """Bytes and FLOPs of the workload, per machine and model row."""
    mean = "(L + floor(O / 2))"
    e = {
        "w_total": "datum.params_total * bpw",
        "w_active": "datum.params_active * bpw",
        "kv_end": f"{_elems('L + O')} * {KV_BYTES}",
        "kv_mean": f"{_elems(mean)} * {KV_BYTES}",
        "prefill": f"2 * datum.params_prompt * L + 2 * datum.groups * {_pairs('L')}",
        "decode_flops": f"U * (2 * datum.params_decode + 2 * datum.groups * "
                        f"(datum.full * ({mean} + 1) + datum.win * min({mean} + 1, "
                        f"datum.window)))",
    }
    e["kv_prompt"] = f"{_elems('L')} * {KV_BYTES}"  # one prompt's cache, as a split moves it
    e["need"] = f"({e['w_total']}) + U * ({e['kv_end']})"
    e["read"] = f"(min({e['w_total']}, U * ({e['w_active']})) + U * ({e['kv_mean']}))"
    return e


def js_expressions() -> dict[str, str]:
    """:func:`estimate` as Vega expressions over a :func:`calculator_rows` row (with
    ``datum.roof``, the row's ``roof_<format>`` for the chosen format) and the params ``L``
    (prompt), ``O`` (output), ``U`` (users) and ``bpw`` (bytes per weight)."""
    e = _work()
    e["fits"] = f"({e['need']}) <= datum.usable"
    e["fits_raised"] = f"({e['need']}) <= datum.raisable"
    e["ttft_mid"] = f"datum.eff_mid > 0 ? ({e['prefill']}) / datum.eff_mid : null"
    e["ttft_fast"] = f"datum.eff_high > 0 ? ({e['prefill']}) / datum.eff_high : null"
    e["ttft_slow"] = f"datum.eff_low > 0 ? ({e['prefill']}) / datum.eff_low : null"
    e["ttft_bound"] = (f"datum.roof > 0 ? max(({e['prefill']}) / datum.roof, "
                       f"({e['w_total']}) / datum.bw) : null")
    ceiling = f"datum.bw / (({e['w_active']}) + ({e['kv_mean']}))"
    for name in ("low", "mid", "high"):
        e[f"decode_{name}"] = f"datum.f_{name} * {ceiling}"
        rate = f"(datum.eff_{name} > 0 ? datum.eff_{name} : datum.roof)"
        step = (f"max({rate} > 0 ? ({e['decode_flops']}) / {rate} : 0, "
                f"{e['read']} / (datum.f_{name} * datum.bw))")
        e[f"per_user_{name}"] = f"1 / ({step})"
    cheapest = "null"
    for i in (2, 1, 0):  # the smallest recorded configuration whose usable memory holds it
        cheapest = (f"(datum.p{i}_usable > 0 && datum.p{i}_usable >= ({e['need']}) ? "
                    f"datum.p{i}_usd : {cheapest})")
    e["price"] = cheapest
    return e
