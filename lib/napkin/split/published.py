"""A published split, redone: Splitwise's designs (Patel et al., ISCA 2024) priced by the
book's pools, and each of its stated comparisons against what three predictors give.

Splitwise serves Llama-2-70B and BLOOM-176B on DGX-A100 and DGX-H100 machines (8 GPUs, tensor
parallel) for two Azure traces, at service levels stated as slowdowns against a request
alone on a DGX-A100. Its cluster results are for BLOOM-176B, which is not among the book's
models: :func:`bloom_config` builds its shape from the paper's Table III as a llama-style
config (its two-matrix MLP of width 4 x hidden given as the gated width with the same
weights, 8/3 x hidden). The comparisons are redone on it and, as a second reading, on
Llama-2-70B, the model of the paper's measured phases (Table IV).

The service level at the median (``data/split_papers.csv``): a first token within 2x, each
token within 1.25x and the whole request within 1.25x of the request alone on a DGX-A100,
as each predictor prices that request. The fluid pools take a first-token and a per-token
limit; the whole-request limit is met by tightening the first token's to what the
per-token limit leaves of it.

Three predictors:

- **the book**: :mod:`napkin.split.pools` on chapter 9's calibrated step model;
- **the plain roofline**: the same pools with ``napkin.predict.ROOFLINE``;
- **one machine for both**: splitting gains nothing, so a split design does what one machine
  of its token machines' kind does (priced by the book), and prompt machines are to token
  machines as a request's prefill seconds are to its decode seconds on that machine.
"""

from __future__ import annotations

import dataclasses
import math

import numpy as np
import pandas as pd

from .. import tables
from . import pools
from .pair import phase_seconds

__all__ = ["alone", "bloom_config", "check", "designs", "facts", "GPUS", "limits", "MODELS",
           "phase_check", "PREDICTORS"]

#: The models the comparisons are redone on: the paper's cluster model first.
MODELS = ("BLOOM-176B", "Llama-2-70B")
#: GPUs in each of the paper's machines (tensor parallel across all of them).
GPUS = 8
#: The paper's machines as the book's chips.
CHIPS = {"DGX-A100": "A100 SXM", "DGX-H100": "H100 SXM"}
#: Each design's prompt and token machines (None: one machine for both).
DESIGNS = {"Baseline-A100": ("DGX-A100", None), "Baseline-H100": ("DGX-H100", None),
           "Splitwise-AA": ("DGX-A100", "DGX-A100"), "Splitwise-HH": ("DGX-H100", "DGX-H100"),
           "Splitwise-HA": ("DGX-H100", "DGX-A100"),
           "Splitwise-HHcap": ("DGX-H100", "DGX-H100 token machine capped")}
PREDICTORS = ("the book (calibrated)", "the plain roofline", "one machine for both")


def facts() -> pd.DataFrame:
    """Splitwise's rows of ``data/split_papers.csv``."""
    df = tables.load("split_papers")
    return df[df["paper"] == "Splitwise"].fillna({"design": "", "baseline": "", "trace": ""})


def _value(quantity: str, design: str = "", trace: str = "") -> float:
    f = facts()
    row = f[(f["quantity"] == quantity) & (f["design"] == design) & (f["trace"] == trace)]
    if len(row) != 1:
        raise ValueError(f"data/split_papers.csv has {len(row)} Splitwise rows for "
                         f"{quantity!r} ({design or 'any design'}, {trace or 'any trace'})")
    return float(row["value"].iloc[0])


def bloom_config() -> dict:
    """BLOOM-176B as a llama-style config, from ``data/split_papers.csv`` (module
    docstring): multi-head attention, tied embeddings, the training length as its limit."""
    def shape(what):
        return int(_value(f"model shape: {what}", design="BLOOM-176B"))
    hidden = shape("hidden size")
    return {"_name_or_path": "bigscience/bloom", "model_type": "bloom",
            "hidden_size": hidden, "num_hidden_layers": shape("layers"),
            "num_attention_heads": shape("attention heads"),
            "num_key_value_heads": shape("attention heads"),
            "intermediate_size": round(8 * hidden / 3), "vocab_size": shape("vocabulary"),
            "tie_word_embeddings": True,
            "max_position_embeddings": shape("training sequence length")}


def _model(name: str):
    if name not in MODELS:
        raise ValueError(f"Splitwise's comparisons are redone on {', '.join(MODELS)}, not "
                         f"{name!r}")
    return bloom_config() if name == "BLOOM-176B" else name


def _lengths(trace: str) -> tuple[int, int]:
    return int(_value("median prompt", trace=trace)), int(_value("median output", trace=trace))


def _calibration(predictor: str):
    from ..predict import ROOFLINE
    return ROOFLINE if predictor == "the plain roofline" else None


def alone(machine: str, trace: str, calibration=None,
          model: str = MODELS[0]) -> tuple[float, float]:
    """(first token, time between tokens) in seconds of one median request alone on a
    ``machine`` (the paper's name), by the step model with ``calibration``."""
    i, o = _lengths(trace)
    chip, m = CHIPS[machine], _model(model)
    ttft = phase_seconds("prefill", chip, GPUS, m, "fp16", "fp16", i, 1, 1, i, calibration)[0]
    decode = phase_seconds("decode", chip, GPUS, m, "fp16", "fp16", i, o, 1, i + o,
                           calibration)[1]
    return ttft, decode / (o - 1)


def limits(trace: str, calibration=None, model: str = MODELS[0]) -> dict:
    """The median service level of ``trace`` in seconds (module docstring)."""
    i, o = _lengths(trace)
    ttft0, tbt0 = alone("DGX-A100", trace, calibration, model)
    tbt = _value("SLO slowdown P50 TBT") * tbt0
    e2e = _value("SLO slowdown P50 E2E") * (ttft0 + (o - 1) * tbt0)
    ttft = min(_value("SLO slowdown P50 TTFT") * ttft0, e2e - (o - 1) * tbt)
    return {"input_tokens": i, "output_tokens": o, "ttft_limit_s": ttft, "tpot_limit_s": tbt}


def _per_gpu(quantity: str, machine: str) -> float:
    base = "DGX-H100" if machine.startswith("DGX-H100") else machine
    return _value(quantity, design=machine if quantity == "machine power" else base) / GPUS


def designs(trace: str, calibration=None, model: str = MODELS[0]) -> dict[str, pools.Design]:
    """Each Splitwise design of ``model`` at ``trace``'s median service level, priced with
    the paper's machine costs and powers (power in DGX-A100s)."""
    lv = limits(trace, calibration, model)
    m = _model(model)
    by_chip = {CHIPS[m]: m for m in ("DGX-A100", "DGX-H100")}

    def usd(chip):
        return _per_gpu("machine cost", by_chip[chip])

    def watts(chip):
        return _per_gpu("machine power", by_chip[chip])

    out = {}
    for name, (prompt, token) in DESIGNS.items():
        kw = dict(weights="fp16", usd_per_chip_hour=usd, watts_per_chip=watts,
                  calibration=calibration, name=name, **lv)
        if token is None:
            out[name] = pools.one_machine((CHIPS[prompt], GPUS), m, **kw)
            continue
        capped = token.endswith("capped")
        token_machine = "DGX-H100" if capped else token
        # each GPU its own NIC, a pair at the slower machine's (Table V): Gb/s to GB/s
        link = GPUS * min(_value("link per GPU", design=m) for m in (prompt, token_machine)) / 8
        d = pools.design((CHIPS[prompt], GPUS), (CHIPS[token_machine], GPUS), m,
                         link_gb_per_s=link, **kw)
        if capped and d.met:  # the token pool at its capped power (its speed is unchanged)
            p, t = d.pools
            d = dataclasses.replace(d, pools=(p, dataclasses.replace(
                t, watts=GPUS * _per_gpu("machine power", token))))
        out[name] = d
    return out


def _ratio(quantity: str, x: pools.Design, y: pools.Design) -> float:
    if quantity == "throughput at the same power":
        return x.tokens_per_s_per_kw / y.tokens_per_s_per_kw
    return x.tokens_per_s_per_usd_hour / y.tokens_per_s_per_usd_hour


def _one_machine_of(name: str) -> str:
    token = DESIGNS[name][1] or DESIGNS[name][0]
    return "Baseline-H100" if token.startswith("DGX-H100") else "Baseline-A100"


def check(model: str = MODELS[0]) -> pd.DataFrame:
    """One row per published comparison and predictor, redone on ``model``: what it
    predicts, what was published and the error, a factor (``exp |ln(predicted /
    published)|``)."""
    f = facts()
    claims = f[(f["unit"] == "x") & ~f["quantity"].str.startswith("SLO")]
    cache = {}

    def of(trace, predictor):
        key = (trace, "the plain roofline" if predictor == "the plain roofline" else "book")
        if key not in cache:
            cache[key] = designs(trace, _calibration(predictor), model)
        return cache[key]

    rows = []
    for c in claims.itertuples():
        for predictor in PREDICTORS:
            d = of(c.trace, predictor)
            if c.quantity == "prompt machines per token machine":
                if predictor == "one machine for both":
                    i, o = _lengths(c.trace)
                    token = DESIGNS[c.design][1]
                    ttft, tbt = alone(token, c.trace, model=model)
                    predicted = ttft / ((o - 1) * tbt)
                else:
                    share = d[c.design].prefill_share
                    predicted = share / (1 - share)
                label = f"{c.design}: prompt / token machines ({c.trace})"
            else:
                x = d[_one_machine_of(c.design)] if predictor == "one machine for both" \
                    else d[c.design]
                predicted = _ratio(c.quantity, x, d[c.baseline])
                label = f"{c.design} / {c.baseline}, {c.quantity} ({c.where.split(', ')[-1]})"
            rows.append({"model": model, "comparison": label, "predictor": predictor,
                         "predicted": predicted,
                         "published": float(c.value),
                         "error": math.exp(abs(math.log(predicted / float(c.value)))),
                         "where": c.where})
    return pd.DataFrame(rows)


def phase_check() -> pd.DataFrame:
    """Table IV's measured phases (one request alone, each trace's median) against the step
    model, calibrated and plain: first token and time between tokens on each machine."""
    f = facts()
    rows = []
    for r in f[f["quantity"].isin(["P50 TTFT", "P50 TBT"])].itertuples():
        for predictor in PREDICTORS[:2]:
            ttft, tbt = alone(r.design, r.trace, _calibration(predictor), "Llama-2-70B")
            predicted = (ttft if r.quantity == "P50 TTFT" else tbt) * 1e3
            rows.append({"quantity": r.quantity, "machine": r.design, "trace": r.trace,
                         "predictor": predictor, "predicted_ms": predicted,
                         "published_ms": float(r.value),
                         "error": float(np.exp(abs(np.log(predicted / r.value))))})
    return pd.DataFrame(rows)
