"""The step model against measured servers: every published row read, predicted, and scored.

Two tables of measurements taken by others are in ``data/``: MLPerf Inference datacenter LLM
results (``mlperf_llm.csv``) and engine and vendor measurements (``serving_measurements.csv``:
Argonne's LLM-Inference-Bench static-batch sweeps, TensorRT-LLM and NIM tables, vLLM and SGLang
posts). :func:`predict_rows` reads rows in either schema, works out what each measured (the
model, the chips and how many share a layer, the formats, the lengths, the scenario and the
metric, with the aliases of ``data/validation_aliases.csv``) and returns the step model's
prediction in the row's own unit, or NaN where it declines, with the reason in
:func:`interpret`'s ``reason`` column. New published rows in the same schema can be dropped in.

**The split, chosen before any fit.** A model fitted and scored on the same rows says
nothing about the next server, so the rows are split by when or where they come from, the
way a calibration made today meets hardware and software of tomorrow:

- MLPerf: rounds v4.0, v4.1 and v5.0 train; **v5.1, the latest round, is held out** (its
  B200 and MI325X fleets, FP4 weights and new benchmarks are what a calibration made before
  it could not have seen);
- Argonne's static-batch latencies: the A100, H100, MI250 and Gaudi 2 train; **the newest
  chip of each vendor, GH200 and MI300X, is held out**;
- every other published measurement (TensorRT-LLM, NIM, vLLM, SGLang tables) is held out.

Held-out rows never enter :func:`fit`; the chapter reports both splits, and beside them the
plain roofline's error on the same rows.
"""

from __future__ import annotations

import math
import re
from dataclasses import dataclass
from functools import lru_cache

import numpy as np
import pandas as pd

from . import tables
from .predict import calibration as calib
from .predict.calibration import ROOFLINE, Calibration
from .predict.engines import Constants, engine
from .predict.serve import closed_loop, memory_batch, static_batch, steady_step, under_limits
from .predict.step import cost, decode_work

#: MLPerf rounds the calibration may see; later rounds are held out.
TRAIN_ROUNDS = ("v4.0", "v4.1", "v5.0")
#: Argonne devices the calibration may see; the newest of each vendor is held out.
ARGONNE_TRAIN_GPUS = ("Nvidia A100 GPU", "Nvidia H100 GPU", "AMD MI250 GPU", "Habana Gaudi2")
ARGONNE = "argonne-lcf/LLM-Inference-Bench"
#: Tensor-parallel sizes tried where a row does not say which one ran (the best one is kept:
#: submitters tune for their number).
TP_CHOICES = (1, 2, 4, 8)
#: Where a published row comes from, by a piece of its address.
SOURCES = {"mlcommons": "MLPerf", ARGONNE: "Argonne", "TensorRT-LLM": "TensorRT-LLM",
           "docs.nvidia.com/nim": "NVIDIA NIM", "developer.nvidia.com": "NVIDIA blog",
           "vllm-project": "vLLM blog", "lm-sys": "SGLang"}
#: What the plain and calibrated models are called in tables.
MODELS = {"calibrated": "calibrated step model", "roofline": "plain roofline"}
SECOND = {"s": 1.0, "ms": 1e3}


# -- the tables ------------------------------------------------------------------------------

def mlperf() -> pd.DataFrame:
    return tables.load("mlperf_llm")


def serving() -> pd.DataFrame:
    return tables.load("serving_measurements")


@lru_cache(maxsize=1)
def _aliases() -> dict:
    df = tables.load("validation_aliases")
    out = {}
    for r in df.itertuples():
        out[(r.kind, r.name)] = r
    return out


def alias(kind: str, name) -> tuple[object, str]:
    """The alias row of ``name`` (or None) and, when it is missing or declined, why."""
    row = _aliases().get((kind, str(name).strip()))
    if row is None:
        return None, f"unknown {kind} {name!r} (not in data/validation_aliases.csv)"
    if pd.isna(row.book_name):
        return None, row.note
    return row, ""


@lru_cache(maxsize=1)
def _datasets() -> pd.DataFrame:
    return tables.load("mlperf_datasets").set_index("benchmark_model")


@lru_cache(maxsize=1)
def _configs() -> dict:
    df = tables.load("mlperf_system_configs")
    return {(r.round, r.submitter, r.system, r.benchmark_model, r.scenario): r
            for r in df.itertuples()}


def source_of(url) -> str:
    for key, label in SOURCES.items():
        if key in str(url):
            return label
    return "other"


# -- reading a row ---------------------------------------------------------------------------

@lru_cache(maxsize=None)
def _context_limit(model: str) -> int:
    from . import catalog, kvcache
    return kvcache.context_limit(catalog.config(model))


_INT = re.compile(r"^\s*~?(\d[\d,]*)\s*([kK])?")


def _tokens(text):
    """``"1K (1024 nominal)"`` -> 1024, ``"~20000 (+/-15%)"`` -> 20000, ``"2048"`` -> 2048."""
    if text is None or (isinstance(text, float) and math.isnan(text)):
        return None
    m = _INT.match(str(text))
    if not m:
        return None
    value = int(m.group(1).replace(",", ""))
    return value * 1024 if m.group(2) else value


def _leading_int(text):
    m = re.match(r"^\s*(?:TP)?(\d+)", str(text))
    return int(m.group(1)) if m else None


def _blank() -> dict:
    return {"ok": False, "reason": "", "source": "", "scenario": "", "kind": "", "chip": "",
            "share": 1.0, "bandwidth_GB_per_s": np.nan, "capacity_GiB": np.nan,
            "peer_GB_per_s": np.nan, "model": "", "weights": "", "kv": "", "tp": np.nan,
            "pp": 1, "n_chips": np.nan, "input_tokens": np.nan, "output_tokens": np.nan,
            "batch": np.nan, "max_batch": np.nan, "ttft_limit_s": np.nan,
            "tpot_limit_s": np.nan, "requests": np.nan, "scale": 1.0, "split": "test",
            "duplicate": False, "system": "", "measured": np.nan}


def _device(out: dict, row) -> bool:
    for key, col in (("share", "share_of_chip"), ("bandwidth_GB_per_s",
                                                  "memory_bandwidth_GB_per_s"),
                     ("capacity_GiB", "memory_capacity_GiB"),
                     ("peer_GB_per_s", "peer_link_per_direction_GB_per_s")):
        value = getattr(row, col)
        out[key] = (1.0 if key == "share" else np.nan) if pd.isna(value) else float(value)
    out["chip"] = row.book_name
    return True


def _mlperf_formats(r, chip: str, config) -> tuple[str | None, str, str]:
    """(weights, kv, why not) of an MLPerf row: the submission's config where the research
    read it, else its declared precision; NVIDIA's TensorRT submissions that declare FP16
    starting weights ran FP8 (FP4 on Blackwell), per NVIDIA's v4.1 calibration notes; rows
    whose precision was not read (v5.0) follow the same stack rule (FP8 on Hopper and AMD,
    FP4 on Blackwell). The cache is FP8 unless a config says otherwise: every config read sets
    it so."""
    blackwell = chip.startswith(("B200", "GB200", "GB300"))
    nvidia_fp4 = "NVFP4" if blackwell else "FP4"
    if config is not None and isinstance(config.weights_precision, str):
        w = config.weights_precision.lower()
        return ("FP8" if w.startswith("fp8") else nvidia_fp4 if w.startswith("fp4") else None,
                "fp8", "")
    declared = str(r.precision).lower()
    if declared.startswith("fp8"):
        return "FP8", "fp8", ""
    if declared.startswith("fp4"):
        return nvidia_fp4, "fp8", ""
    if declared.startswith("mxfp4"):
        return "FP4", "fp8", ""
    stack_rule = ("tensorrt" in str(r.software).lower() and declared.startswith("fp16")) or \
        declared.startswith("not read")
    if stack_rule:
        return ("NVFP4" if blackwell else "FP8"), "fp8", ""
    if declared.startswith("fp16"):
        return "F16", "f16", ""
    return None, "", f"weight format {r.precision!r} not modelled"


def _read_mlperf(r) -> dict:
    out = _blank()
    out.update(source="MLPerf", scenario=str(r.scenario), measured=float(r.value),
               system=f"{r.submitter}: {r.system}", n_chips=float(r.n_accelerators))
    out["split"] = "train" if r.round in TRAIN_ROUNDS else "test"
    if str(r.division).strip() != "closed":
        out["reason"] = "open division: the model or its weights were changed"
        return out
    acc, why = alias("accelerator", r.accelerator)
    if acc is None:
        out["reason"] = why
        return out
    _device(out, acc)
    bench, why = alias("benchmark", r.benchmark_model)
    if bench is None or r.benchmark_model not in _datasets().index:
        out["reason"] = why or f"no dataset lengths for {r.benchmark_model}"
        return out
    out["model"] = bench.book_name
    data = _datasets().loc[r.benchmark_model]
    out["input_tokens"] = float(data["input_mean_tokens"])
    out["output_tokens"] = float(data["output_mean_tokens"]) if \
        pd.notna(data["output_mean_tokens"]) else float(data["output_max_tokens"])
    config = _configs().get((r.round, r.submitter, r.system, r.benchmark_model, r.scenario))
    weights, kv, why = _mlperf_formats(r, out["chip"], config)
    if weights is None:
        out["reason"] = why or "weight format of the config not modelled"
        return out
    out.update(weights=weights, kv=kv)
    if config is not None:
        out["tp"] = float(_leading_int(config.tp) or 1)
        out["pp"] = _leading_int(config.pp) or 1
        if pd.notna(config.max_batch):
            out["max_batch"] = float(config.max_batch)
    if r.scenario == "Offline":
        out["kind"] = "offline_rate"
    else:
        interactive = r.scenario == "Interactive"
        ttft = r.ttft_limit_ms if pd.notna(r.ttft_limit_ms) else data[
            "ttft_limit_interactive_ms" if interactive else "ttft_limit_server_ms"]
        tpot = r.tpot_limit_ms if pd.notna(r.tpot_limit_ms) else data[
            "tpot_limit_interactive_ms" if interactive else "tpot_limit_server_ms"]
        if pd.isna(ttft) or pd.isna(tpot):
            out["reason"] = f"latency limits of {r.benchmark_model} {r.scenario} not known"
            return out
        out.update(kind="limits_rate", ttft_limit_s=float(ttft) / 1e3,
                   tpot_limit_s=float(tpot) / 1e3)
    out["ok"] = True
    return out


#: Serving metrics the model can predict: (metric as published, unit) -> kind.
SERVING_METRICS = {
    ("end-to-end batch latency (offline static batch)", "s"): "static_e2e",
    ("ttft (batch of prompts, prefill)", None): "static_prefill",
    ("1st token latency (ttft, batch 1)", "ms"): "static_prefill",
    ("1st token latency", "ms"): "static_prefill",
    ("peak output throughput per gpu (static batch)", None): "static_rate_per_chip",
    ("max throughput per gpu", None): "static_rate_per_chip",
    ("throughput per gpu", None): "static_rate_per_chip",
    ("peak output throughput (static batch)", None): "static_rate",
    ("throughput", "output tokens/s"): "static_rate",
    ("total output throughput", "output tokens/s (total for the tp group)"): "offline_rate",
    ("output tokens/second (max throughput)", None): "offline_rate",
    ("ttft", "ms"): "closed_ttft", ("median ttft", "ms"): "closed_ttft",
    ("itl", "ms"): "closed_itl", ("median itl", "ms"): "closed_itl",
    ("throughput", "tokens/s"): "closed_rate", ("output throughput", None): "closed_rate",
    ("total output throughput", "tokens/s"): "closed_rate",
    ("per gpu output throughput", None): "closed_rate_per_chip",
    ("per user output throughput", None): "closed_user_rate",
    ("per user output throughput [w/ ctx]", None): "closed_user_rate_ctx",
    ("average request latency", "ms"): "closed_latency",
    ("total duration", "s"): "closed_duration",
    ("fitted itl intercept", "ms"): "itl_intercept",
    ("fitted itl slope", "ms per context token"): "itl_slope",
}


def _serving_kind(metric: str, unit: str) -> str | None:
    m, u = metric.strip().lower(), unit.strip().lower()
    return SERVING_METRICS.get((m, u)) or SERVING_METRICS.get((m, None))


def _serving_formats(text: str, chip: str) -> tuple[str | None, str]:
    t = str(text)
    weights_part = re.split(r"KV cache", t, flags=re.I)[0]
    m = re.search(r"\b(NVFP4|MXFP4|FP4|FP8|FP16|BF16)\b", weights_part, flags=re.I)
    if not m:
        return None, ""
    w = m.group(1).upper()
    w = {"FP16": "F16", "MXFP4": "FP4"}.get(w, w)
    if w == "FP4" and chip.startswith(("B200", "GB200", "GB300")):
        w = "NVFP4"
    kv = re.search(r"(FP8|FP16|BF16)\s+KV|KV cache\s+(FP8|FP16|BF16)", t, flags=re.I)
    kv_name = next((g for g in kv.groups() if g), "").lower() if kv else "f16"
    return w, {"fp16": "f16"}.get(kv_name, kv_name)


def _read_serving(r) -> dict:
    out = _blank()
    out.update(source=source_of(r.source_url), measured=float(r.value),
               system=f"{r.engine}: {r.gpu}")
    argonne = ARGONNE in str(r.source_url)
    out["scenario"] = "static batch" if argonne else str(r.concurrency_or_batch)
    if argonne:
        out["split"] = "train" if str(r.gpu).strip() in ARGONNE_TRAIN_GPUS else "test"
    kind = _serving_kind(str(r.metric), str(r.unit))
    if kind is None:
        out["reason"] = f"metric {r.metric!r} ({r.unit}) not modelled"
        return out
    out["kind"] = kind
    out["scenario"] = ("static batch" if kind.startswith("static") else
                       "max load" if kind == "offline_rate" else
                       "ITL fit" if kind.startswith("itl") else "fixed concurrency")
    unit = str(r.unit).strip().lower()
    out["scale"] = SECOND["ms"] if unit.startswith("ms") else 1.0
    if "not stated" in unit and _leading_int(r.n_gpus) != 1:
        out["reason"] = f"unit {r.unit!r}: per GPU or for all of them is not stated"
        return out
    gpu, why = alias("gpu", r.gpu)
    if gpu is None:
        out["reason"] = why
        return out
    _device(out, gpu)
    model, why = alias("model", r.model)
    if model is None:
        out["reason"] = why
        return out
    out["model"] = model.book_name
    weights, kv = _serving_formats(r.precision, out["chip"])
    if weights is None:
        out["reason"] = f"precision {r.precision!r} not stated"
        return out
    out.update(weights=weights, kv=kv)
    n = _leading_int(r.n_gpus)
    out["n_chips"] = float(n) if n else np.nan
    tp_text = str(r.tp)
    if tp_text.startswith("EP"):
        out["reason"] = "expert parallelism across nodes, which the step model does not describe"
        return out
    tp = _leading_int(tp_text)
    if tp is None and (kind.startswith("static") or not n):
        out["reason"] = f"parallelism {r.tp!r} not stated"
        return out
    out["tp"] = float(tp) if tp else np.nan
    if out["share"] < 1:  # a listed GPU made of several devices (an MI250 OAM: two dies)
        devices = round(1 / out["share"])
        out["n_chips"] *= devices
        out["tp"] *= devices
    i, o = _tokens(r.input_len), _tokens(r.output_len)
    batch_text = str(r.concurrency_or_batch)
    numbers = re.findall(r"(?:batch|concurrency)\s*=\s*(\d+)", batch_text)
    requests = re.search(r"(\d+)\s+requests", batch_text)
    if requests:
        out["requests"] = float(requests.group(1))
    if kind.startswith("itl"):
        i, o = 0, 1
    if i is None or o is None:
        out["reason"] = "input or output length not stated"
        return out
    out["input_tokens"], out["output_tokens"] = float(i), float(o)
    limit = _context_limit(out["model"])
    if not kind.startswith("itl") and i + o > limit:
        out["reason"] = (f"{i:,} + {o:,} tokens exceed {out['model']}'s context of {limit:,}: "
                         "the run cannot have generated what the row says")
        return out
    if kind.startswith(("static", "closed")):
        if not numbers:
            out["reason"] = f"batch or concurrency {batch_text!r} not stated"
            return out
        out["batch"] = float(numbers[0])
    if kind == "static_prefill":
        out["output_tokens"] = 1.0
    if kind == "closed_duration" and math.isnan(out["requests"]):
        out["reason"] = "number of requests not stated"
        return out
    out["ok"] = True
    return out


def _mark_duplicates(cases: pd.DataFrame, rows: pd.DataFrame) -> pd.Series:
    """MLPerf's 99.9 rows that repeat a 99 run (same system, scenario and value): one
    measurement reported twice counts once."""
    if "benchmark_model" not in rows.columns:
        return pd.Series(False, index=rows.index)
    key = rows["benchmark_model"].astype(str).str.replace(r"-99\.9$", "-99", regex=True)
    frame = pd.DataFrame({"round": rows.get("round"), "system": rows.get("system"),
                          "scenario": rows.get("scenario"), "bench": key,
                          "value": rows.get("value")})
    strict = rows["benchmark_model"].astype(str).str.endswith("99.9")
    dup = frame.duplicated(keep=False) & strict
    return dup


def interpret(rows: pd.DataFrame) -> pd.DataFrame:
    """What each row measured, in the step model's terms (one row out per row in, same
    index): ``ok`` and, where False, ``reason``; ``source``, ``scenario``, ``kind`` (what to
    predict), the chip and its overrides, the model, formats, parallelism, lengths, batch,
    limits, ``scale`` (the row's unit per SI unit), ``split`` and ``duplicate``."""
    if "accelerator" in rows.columns and "benchmark_model" in rows.columns:
        reader = _read_mlperf
    elif "gpu" in rows.columns and "metric" in rows.columns:
        reader = _read_serving
    else:
        raise ValueError("rows must have the columns of mlperf_llm.csv (accelerator, "
                         "benchmark_model, ...) or of serving_measurements.csv (gpu, metric, "
                         "...)")
    out = []
    for r in rows.itertuples():
        try:
            out.append(reader(r))
        except (ValueError, TypeError, KeyError, AttributeError) as err:
            case = _blank()
            case["reason"] = f"row not readable: {err}"
            out.append(case)
    cases = pd.DataFrame(out, index=rows.index)
    cases["duplicate"] = _mark_duplicates(cases, rows) if reader is _read_mlperf else False
    return cases


# -- predicting what each row measured -------------------------------------------------------

def _opt(x):
    return None if x is None or (isinstance(x, float) and math.isnan(x)) else float(x)


@lru_cache(maxsize=None)
def _engine(chip, model, tp, pp, weights, kv, share, bw, cap, peer):
    return engine(chip, model, n_chips=tp, weights=weights, kv=kv, pipeline=pp,
                  share_of_chip=share, bandwidth_GB_per_s=bw, capacity_GiB=cap,
                  peer_link_GB_per_s=peer)


@dataclass
class Prepared:
    """Rows ready to predict: one element per (row, tensor-parallel choice)."""

    cases: pd.DataFrame        # the recognised rows' cases, one per choice
    constants: Constants
    row: np.ndarray            # position of each choice's row in ``index``
    index: pd.Index            # the recognised rows
    declined: dict             # index label -> reason, for rows no engine could be built for


def prepare(cases: pd.DataFrame) -> Prepared:
    """Engines for every recognised row; a row whose tensor parallelism is not stated gets
    one choice per size in :data:`TP_CHOICES` that divides its chips and holds the model."""
    items, engines, positions, declined = [], [], [], {}
    keys = {}
    ok = cases[cases["ok"]]
    for pos, (label, c) in enumerate(ok.iterrows()):
        if math.isnan(c["tp"]):
            n = int(c["n_chips"])
            choices = [t for t in TP_CHOICES if t * c["pp"] <= n and n % (t * c["pp"]) == 0]
        else:
            choices = [int(c["tp"])]
        built = 0
        last = ""
        for tp in choices:
            key = (c["chip"], c["model"], tp, int(c["pp"]), c["weights"], c["kv"],
                   float(c["share"]), _opt(c["bandwidth_GB_per_s"]), _opt(c["capacity_GiB"]),
                   _opt(c["peer_GB_per_s"]))
            try:
                e = _engine(*key)
            except ValueError as err:
                last = str(err)
                continue
            if key not in keys:
                keys[key] = len(engines)
                engines.append(e)
            case = c.copy()
            case["tp"] = float(tp)
            case["engine"] = keys[key]
            items.append(case)
            positions.append(pos)
            built += 1
        if not built:
            declined[label] = f"no engine: {last}"
    frame = pd.DataFrame(items).reset_index(drop=True) if items else pd.DataFrame(
        columns=list(cases.columns) + ["engine"])
    consts = Constants.of(engines) if engines else None
    if consts is not None:
        consts = consts.take(frame["engine"].to_numpy(dtype=int))
    return Prepared(frame, consts, np.array(positions, dtype=int), ok.index, declined)


def _values(p: Prepared, cal: Calibration) -> tuple[np.ndarray, np.ndarray]:
    """Each choice's prediction in its row's unit, and the total output rate that ranks the
    choices of one row (the best is what a submitter would run)."""
    c, f = p.constants, p.cases
    n = len(f)
    value = np.full(n, np.nan)
    rank = np.zeros(n)
    kind = f["kind"].to_numpy()
    i = f["input_tokens"].to_numpy(float)
    o = f["output_tokens"].to_numpy(float)
    b = f["batch"].to_numpy(float)
    chips = f["tp"].to_numpy(float) * f["pp"].to_numpy(float)
    engines = f["n_chips"].to_numpy(float) / chips
    engines = np.where(np.isnan(engines), 1.0, engines)
    scale = f["scale"].to_numpy(float)

    def pick(mask):
        return np.flatnonzero(mask)

    static = pick(np.char.startswith(kind.astype(str), "static"))
    if len(static):
        cs = c.take(static)
        run = static_batch(cs, b[static], i[static], o[static], cal)
        rate = b[static] * o[static] / run["e2e_s"]
        k = kind[static]
        value[static] = np.select(
            [k == "static_e2e", k == "static_prefill", k == "static_rate_per_chip",
             k == "static_rate"],
            [run["e2e_s"], run["prefill_s"], rate / chips[static], rate]) * scale[static]
        rank[static] = rate
    fits = memory_batch(c, i, o)
    cap = np.where(np.isnan(f["max_batch"].to_numpy(float)), np.inf,
                   f["max_batch"].to_numpy(float))
    offline = pick(kind == "offline_rate")
    if len(offline):
        cs = c.take(offline)
        bo = np.minimum(fits[offline], cap[offline])
        step = steady_step(cs, bo, i[offline], o[offline], cal)["step_s"]
        rate = np.where(bo >= 1, bo / step, np.nan) * engines[offline]
        value[offline] = rate
        rank[offline] = rate
    limited = pick(kind == "limits_rate")
    if len(limited):
        cs = c.take(limited)
        found = under_limits(cs, i[limited], o[limited], f["ttft_limit_s"].to_numpy(float)[
            limited], f["tpot_limit_s"].to_numpy(float)[limited], cal,
            np.minimum(fits[limited], cap[limited]))
        rate = np.where(found["batch"] >= 1, found["tokens_per_s"], np.nan) * engines[limited]
        value[limited] = rate
        rank[limited] = rate
    closed = pick(np.char.startswith(kind.astype(str), "closed"))
    if len(closed):
        cs = c.take(closed)
        run = closed_loop(cs, b[closed], i[closed], o[closed], cal, fits[closed])
        rate = run["tokens_per_s"] * engines[closed]
        k = kind[closed]
        value[closed] = np.select(
            [k == "closed_ttft", k == "closed_itl", k == "closed_rate",
             k == "closed_rate_per_chip", k == "closed_user_rate", k == "closed_user_rate_ctx",
             k == "closed_latency", k == "closed_duration"],
            [run["ttft_s"], run["itl_s"], rate, rate / f["n_chips"].to_numpy(float)[closed],
             1 / run["itl_s"], o[closed] / run["request_s"], run["request_s"],
             f["requests"].to_numpy(float)[closed] * o[closed] / rate]) * scale[closed]
        rank[closed] = rate
    itl = pick(np.char.startswith(kind.astype(str), "itl"))
    if len(itl):
        cs = c.take(itl)
        deep = 100_000.0
        t0 = cost(cs, decode_work(cs, 1, 0.0), cal).seconds
        t1 = cost(cs, decode_work(cs, 1, deep), cal).seconds
        value[itl] = np.where(kind[itl] == "itl_intercept", t0, (t1 - t0) / deep) * scale[itl]
        rank[itl] = 1 / t0
    return value, rank


def _best(p: Prepared, values, rank) -> tuple[np.ndarray, np.ndarray]:
    """One value per recognised row: the choice with the highest rate (the first choice
    where none has one); and its tensor-parallel size."""
    out = np.full(len(p.index), np.nan)
    tp = np.full(len(p.index), np.nan)
    score = np.where(np.isfinite(rank) & ~np.isnan(values), rank, -np.inf)
    order = np.lexsort((-score, p.row))           # by row, best score first (stable)
    first = order[np.r_[True, np.diff(p.row[order]) != 0]]
    out[p.row[first]] = values[first]
    tp[p.row[first]] = p.cases["tp"].to_numpy(float)[first]
    return out, tp


def predict_cases(cases: pd.DataFrame, calibration: Calibration | None = None,
                  prepared: Prepared | None = None) -> pd.Series:
    """Predictions for :func:`interpret`'s cases, in each row's unit (NaN: declined)."""
    cal = calib.calibrated() if calibration is None else calibration
    p = prepare(cases) if prepared is None else prepared
    return _predict(cases, cal, p)[0]


def _predict(cases, cal, p) -> tuple[pd.Series, pd.Series]:
    out = pd.Series(np.nan, index=cases.index, dtype=float)
    tp = pd.Series(np.nan, index=cases.index, dtype=float)
    if len(p.cases):
        values, rank = _values(p, cal)
        out.loc[p.index], tp.loc[p.index] = _best(p, values, rank)
    return out, tp


def predict_rows(rows: pd.DataFrame, calibration: Calibration | None = None) -> pd.Series:
    """The step model's prediction for each row of a table in the schema of
    ``data/mlperf_llm.csv`` or ``data/serving_measurements.csv``: the row's ``value`` as the
    model sees it, in the row's own unit, aligned to ``rows.index``; NaN where the model
    declines (an unknown chip, model, metric, precision or length; :func:`interpret` says
    why). ``calibration`` defaults to the fitted one; ``ROOFLINE`` gives the plain roofline."""
    if not isinstance(rows, pd.DataFrame):
        raise ValueError(f"rows must be a pandas DataFrame, got {type(rows).__name__}")
    if rows.empty:
        return pd.Series(dtype=float, index=rows.index)
    return predict_cases(interpret(rows), calibration)


# -- fitting ---------------------------------------------------------------------------------

#: Loss scale: a soft L1 on the log of predicted over measured, quadratic within about
#: +-20 % and linear beyond, so a few rows the model cannot describe do not steer the fit.
LOSS_SCALE = math.log(1.2)


@dataclass
class Fit:
    """The fitted calibration and what it was fitted on."""

    calibration: Calibration
    loss: float
    rows: int
    groups: dict
    tpot_tail_rows: int


def all_cases() -> pd.DataFrame:
    """Every published row, read: MLPerf first, then the serving measurements; the columns of
    :func:`interpret` plus ``table`` and ``row`` (the row's position in its table)."""
    m, s = mlperf(), serving()
    a, b = interpret(m), interpret(s)
    a["table"], b["table"] = "mlperf_llm", "serving_measurements"
    a["row"], b["row"] = m.index, s.index
    a = a.join(pd.DataFrame({"chip_name": m["accelerator"], "detail": m["benchmark_model"],
                             "unit": m["unit"], "engine": m["software"].astype(str)}))
    b = b.join(pd.DataFrame({"chip_name": s["gpu"], "detail": s["model"] + ", " + s["metric"],
                             "unit": s["unit"], "engine": s["engine"]}))
    return pd.concat([a, b], ignore_index=True)


def _group(cases: pd.DataFrame) -> pd.Series:
    return np.where(cases["source"] == "MLPerf",
                    np.where(cases["scenario"] == "Offline", "MLPerf Offline",
                             "MLPerf Server/Interactive"), cases["source"] + " " +
                    cases["scenario"])


#: A measurement this many times faster than the plain roofline allows (peak bandwidth and
#: peak FLOP/s, nothing else paid) did not do what its row says: a run that stopped at a
#: context limit, a misread unit. Only where the roofline is a bound: static batches and
#: throughput as fast as memory allows (not the queueing scenarios, whose tails are a model).
IMPOSSIBLE = 2.0
BOUNDED_KINDS = ("static_e2e", "static_prefill", "static_rate", "static_rate_per_chip",
                 "offline_rate")


def impossible(cases: pd.DataFrame, roofline: pd.Series) -> pd.Series:
    """Rows measured more than :data:`IMPOSSIBLE` times faster than the plain roofline."""
    bounded = cases["kind"].isin(BOUNDED_KINDS)
    rate = cases["kind"].str.contains("rate")
    faster = np.where(rate, cases["measured"] / roofline, roofline / cases["measured"])
    return pd.Series(bounded & (faster > IMPOSSIBLE), index=cases.index)


def training_cases() -> pd.DataFrame:
    """The rows the fit sees: recognised, in the training split, not a repeated MLPerf run,
    and not faster than the chip's peaks allow (:func:`impossible`)."""
    cases = all_cases()
    keep = cases["ok"] & (cases["split"] == "train") & ~cases["duplicate"]
    cases = cases[keep].reset_index(drop=True)
    bound = predict_cases(cases, ROOFLINE)
    return cases[~impossible(cases, bound)].reset_index(drop=True)


def tpot_tail() -> tuple[float, int]:
    """99th-percentile over mean time per output token in the training rounds' MLPerf Server
    and Interactive logs (median over runs): how much the slowest requests' tokens lag."""
    m = mlperf()
    train = m[m["round"].isin(TRAIN_ROUNDS) & m["tpot_mean_ms"].notna() &
              m["tpot_p99_ms"].notna()]
    ratio = train["tpot_p99_ms"] / train["tpot_mean_ms"]
    return float(ratio.median()), int(len(ratio))


@lru_cache(maxsize=1)
def fit() -> Fit:
    """Fit :data:`~napkin.predict.calibration.FITTED` to the training split (module
    docstring): minimise the mean soft-L1 loss of log(predicted / measured), each group
    (MLPerf Offline, MLPerf Server/Interactive, Argonne's static batches) weighted equally.
    ``tpot_tail`` is measured, not fitted (:func:`tpot_tail`)."""
    cases = training_cases()
    tail, tail_rows = tpot_tail()
    base = Calibration(bandwidth_efficiency=0.7, compute_efficiency=0.6, half_tokens=64.0,
                       step_overhead_s=1e-3, allreduce_latency_s=2e-5, link_efficiency=0.6,
                       tpot_tail=max(tail, 1.0))
    prepared = prepare(cases)
    measured = cases["measured"].to_numpy(float)
    groups = pd.Series(_group(cases))
    weight = (1.0 / groups.map(groups.value_counts())).to_numpy(float)
    weight = weight / weight.sum()

    def loss(x):
        cal = calib.from_vector(x, base)
        pred = predict_cases(cases, cal, prepared).to_numpy(float)
        r = np.log(pred / measured)
        bad = ~np.isfinite(r)
        r = np.where(bad, 5.0, r)  # a row the model cannot serve counts as far off
        s = LOSS_SCALE
        return float(np.sum(weight * 2 * s * s * (np.sqrt(1 + (r / s) ** 2) - 1)))

    x, value = calib.nelder_mead(loss, calib.to_vector(base), step=0.7, iterations=300)
    x, value = calib.nelder_mead(loss, x, step=0.2, iterations=200)
    return Fit(calibration=calib.from_vector(x, base), loss=value, rows=len(cases),
               groups=groups.value_counts().to_dict(), tpot_tail_rows=tail_rows)


# -- errors ----------------------------------------------------------------------------------

@lru_cache(maxsize=1)
def scored() -> pd.DataFrame:
    """Every recognised published row with its measured value and both predictions (the
    calibrated step model and the plain roofline), the relative errors, its split, its group
    and whether it is :func:`impossible`. Recomputed from ``data/`` (cached for the session)."""
    cases = all_cases()
    ok = cases[cases["ok"]].copy()
    prepared = prepare(ok)
    ok["predicted"], ok["tp_used"] = _predict(ok, fit().calibration, prepared)
    ok["roofline"] = predict_cases(ok, ROOFLINE, prepared)
    ok["impossible"] = impossible(ok, ok["roofline"])
    ok = ok[ok["predicted"].notna() & ok["measured"].gt(0)].copy()
    ok["error"] = ok["predicted"] / ok["measured"] - 1
    ok["roofline_error"] = ok["roofline"] / ok["measured"] - 1
    ok["group"] = _group(ok)
    return ok.reset_index(drop=True)


def errors() -> pd.DataFrame:
    """:func:`scored` without the rows measured faster than the chip's peaks allow."""
    s = scored()
    return s[~s["impossible"]].reset_index(drop=True)


def _stats(e: pd.Series) -> dict:
    a = e.abs()
    return {"n": int(len(e)), "median_abs": float(a.median()) if len(e) else math.nan,
            "p90_abs": float(a.quantile(0.9)) if len(e) else math.nan,
            "bias": float(e.median()) if len(e) else math.nan}


def error_table(by=("group",), frame: pd.DataFrame | None = None) -> pd.DataFrame:
    """Error statistics per ``by`` and split: rows, median and 90th-percentile absolute
    relative error and bias (median signed error), for the calibrated model and, on the same
    rows, the plain roofline. Duplicated MLPerf rows count once."""
    df = errors() if frame is None else frame
    df = df[~df["duplicate"]]
    out = []
    for keys, g in df.groupby(list(by) + ["split"], sort=True):
        keys = keys if isinstance(keys, tuple) else (keys,)
        cal, roof = _stats(g["error"]), _stats(g["roofline_error"].dropna())
        out.append({**dict(zip(list(by) + ["split"], keys)), "n": cal["n"],
                    "median_abs": cal["median_abs"], "p90_abs": cal["p90_abs"],
                    "bias": cal["bias"], "roofline_median_abs": roof["median_abs"],
                    "roofline_p90_abs": roof["p90_abs"], "roofline_bias": roof["bias"]})
    return pd.DataFrame(out)


#: The scenarios other chapters quote, and the groups of :func:`errors` each covers.
BANDS = {"offline": ("MLPerf Offline",),
         "server": ("MLPerf Server/Interactive",),
         "static": ("Argonne static batch",),
         "all": None}


def error_band(scenario: str = "all") -> dict:
    """The held-out error of the calibrated model for ``scenario`` (``"offline"``: MLPerf
    Offline; ``"server"``: MLPerf Server and Interactive; ``"static"``: Argonne's static-batch
    latencies; ``"all"``: every held-out row): rows, median and 90th-percentile absolute
    relative error, bias, and a sentence other chapters can quote."""
    if scenario not in BANDS:
        raise ValueError(f"unknown scenario {scenario!r}; known: {', '.join(BANDS)}")
    df = errors()
    df = df[(df["split"] == "test") & ~df["duplicate"]]
    groups = BANDS[scenario]
    if groups is not None:
        df = df[df["group"].isin(groups)]
    s = _stats(df["error"])
    s["scenario"] = scenario
    s["text"] = (f"within ±{s['median_abs']:.0%} of measured servers for half of the "
                 f"held-out rows, ±{s['p90_abs']:.0%} for nine in ten")
    return s


def refresh() -> None:
    """Forget what this session computed from ``data/`` (the fit, the errors, the readers'
    tables), so that rows dropped into the tables are read and scored afresh."""
    for f in (fit, scored, _aliases, _datasets, _configs, _engine, _context_limit,
              calib.calibrated):
        f.cache_clear()


# -- what the chapter draws ------------------------------------------------------------------

#: The practitioner's chart: the models, their MLPerf benchmark, lengths and formats.
FRONTIER_MODELS = {"Llama-3.3-70B": ("llama2-70b", "FP8", "fp8"),
                   "Mixtral-8x7B": ("mixtral-8x7b", "FP8", "fp8")}
FRONTIER_CHIPS = ("H100 SXM", "H200", "B200", "MI300X")


def benchmark_lengths(benchmark: str) -> tuple[int, int]:
    """Mean input and output tokens of an MLPerf benchmark's dataset (rounded)."""
    d = _datasets()
    row = d.loc[benchmark] if benchmark in d.index else d.loc[f"{benchmark}-99"]
    out = row["output_mean_tokens"] if pd.notna(row["output_mean_tokens"]) else \
        row["output_max_tokens"]
    return int(round(row["input_mean_tokens"])), int(round(out))


def frontier_curves(calibration: Calibration | None = None) -> pd.DataFrame:
    """The calibrated model's frontier (:func:`napkin.predict.frontier.frontier`) for each
    of :data:`FRONTIER_MODELS` on each of :data:`FRONTIER_CHIPS` at its MLPerf benchmark's
    mean lengths, FP8 weights and cache; and the B200 again at FP4 (NVFP4) weights, the
    format its MLPerf runs use."""
    from .predict.frontier import frontier
    parts = []
    for model, (bench, weights, kv) in FRONTIER_MODELS.items():
        i, o = benchmark_lengths(bench)
        for chip, fmt in [(c, weights) for c in FRONTIER_CHIPS] + [("B200", "NVFP4")]:
            f = frontier(chip, model, weights=fmt, kv=kv, input_tokens=i, output_tokens=o,
                         calibration=calibration)
            parts.append(f.assign(model=model, weights=fmt, curve=f"{chip}, {fmt}"))
    return pd.concat(parts, ignore_index=True)


def frontier_points() -> pd.DataFrame:
    """MLPerf Server and Interactive runs of :data:`FRONTIER_CHIPS` for the frontier's
    benchmarks: tokens/s per GPU (the result over the accelerators) and per user (one over
    the run's mean time per output token), with the weights the model reads the run as."""
    m = mlperf()
    cases = interpret(m)
    keep = (m["scenario"].isin(["Server", "Interactive"]) & m["tpot_mean_ms"].notna() &
            cases["ok"] & ~cases["duplicate"] & cases["chip"].isin(FRONTIER_CHIPS))
    out = []
    for model, (bench, _, _) in FRONTIER_MODELS.items():
        sel = keep & m["benchmark_model"].str.startswith(bench)
        rows = m[sel]
        out.append(pd.DataFrame({
            "model": model, "benchmark": rows["benchmark_model"], "chip": cases.loc[sel, "chip"],
            "system": rows["submitter"] + ": " + rows["system"], "round": rows["round"],
            "scenario": rows["scenario"], "weights": cases.loc[sel, "weights"],
            "per_gpu_tok_per_s": rows["value"] / rows["n_accelerators"],
            "per_user_tok_per_s": 1e3 / rows["tpot_mean_ms"],
            "source_url": rows["source_url"]}))
    return pd.concat(out, ignore_index=True)


def stack_spread(frame: pd.DataFrame | None = None) -> pd.DataFrame:
    """Argonne's static batches: measured over predicted latency per chip and serving engine
    (median, lowest, highest, rows), the calibrated model's view of each software stack."""
    df = errors() if frame is None else frame
    a = df[df["group"] == "Argonne static batch"].copy()
    a["ratio"] = a["measured"] / a["predicted"]
    out = a.groupby(["chip", "engine", "split"])["ratio"].agg(
        median="median", low="min", high="max", n="count").reset_index()
    return out


def decline_reasons(top: int = 8) -> pd.DataFrame:
    """Why rows are declined: the most common reasons per table, with counts (the reason's
    first clause; names of unknown chips and models kept)."""
    cases = all_cases()
    d = cases[~cases["ok"]].copy()
    why = d["reason"].str.replace(r"^Declined: ", "", regex=True)
    why = why.str.split(r"(?<=[a-z0-9)'])(?:\. |; | \(not in )", n=1, regex=True).str[0]
    d["why"] = why.where(why.str.len() <= 110, why.str.slice(0, 107) + "...")
    counts = d.groupby(["table", "why"]).size().rename("rows").reset_index()
    return counts.sort_values("rows", ascending=False).head(top).reset_index(drop=True)


#: How each fitted parameter is shown: (label, factor to the display unit, unit, meaning).
PARAMETERS = {
    "bandwidth_efficiency": ("memory", 1.0, "share of peak bandwidth",
                             "the bytes of a step move at this share of the HBM's peak"),
    "compute_efficiency": ("matmul and attention", 1.0, "share of dense peak",
                           "a large step's FLOPs run at this share of the arithmetic's peak"),
    "half_tokens": ("matmul ramp", 1.0, "tokens",
                    "a step of this many tokens gets half that share from its matmuls"),
    "step_overhead_s": ("fixed cost", 1e3, "ms per step",
                        "scheduling, sampling and kernel launches, paid every step"),
    "allreduce_latency_s": ("all-reduce latency", 1e6, "µs",
                            "each of a layer's two all-reduces, before any byte moves"),
    "link_efficiency": ("link", 1.0, "share of link peak",
                        "an all-reduce's bytes cross the scale-up link at this share"),
    "tpot_tail": ("time-per-token tail", 1.0, "p99 / mean",
                  "measured in the training rounds' MLPerf logs, not fitted"),
}


def parameters_table(calibration: Calibration | None = None) -> pd.DataFrame:
    """The fitted parameters in display units, with what each means."""
    cal = calib.calibrated() if calibration is None else calibration
    rows = []
    for name, (label, factor, unit, meaning) in PARAMETERS.items():
        rows.append({"parameter": name, "label": label, "value": getattr(cal, name) * factor,
                     "unit": unit, "meaning": meaning})
    return pd.DataFrame(rows)


def server_over_offline(frame: pd.DataFrame | None = None) -> pd.DataFrame:
    """MLPerf systems that ran both Offline and Server on one benchmark in one round: the
    Server result over the Offline one, measured and predicted (what the latency limits and
    the queue cost)."""
    df = errors() if frame is None else frame
    m = df[(df["source"] == "MLPerf") & ~df["duplicate"]].copy()
    m["key"] = m["system"] + " | " + m["detail"] + " | " + m["split"]
    off = m[m["scenario"] == "Offline"].set_index("key")
    srv = m[m["scenario"] == "Server"].set_index("key")
    both = off.index.intersection(srv.index)
    out = pd.DataFrame({"chip": off.loc[both, "chip"], "split": off.loc[both, "split"],
                        "benchmark": off.loc[both, "detail"],
                        "measured": srv.loc[both, "measured"] / off.loc[both, "measured"],
                        "predicted": srv.loc[both, "predicted"] / off.loc[both, "predicted"]})
    return out.reset_index()


def per_gpu_ratio(chip_a: str, chip_b: str, frame: pd.DataFrame | None = None,
                  scenario: str = "Offline", detail: str = "llama2-70b-99") -> dict:
    """Median MLPerf result per accelerator of ``chip_a`` over ``chip_b`` (same benchmark and
    scenario, every round), measured and as the calibrated model predicts it."""
    df = errors() if frame is None else frame
    m = df[(df["source"] == "MLPerf") & (df["scenario"] == scenario) &
           (df["detail"] == detail) & ~df["duplicate"]]

    def per_gpu(chip, col):
        rows = m[m["chip"] == chip]
        return float((rows[col] / rows["n_chips"]).median())
    return {"measured": per_gpu(chip_a, "measured") / per_gpu(chip_b, "measured"),
            "predicted": per_gpu(chip_a, "predicted") / per_gpu(chip_b, "predicted"),
            "rows_a": int((m["chip"] == chip_a).sum()), "rows_b": int((m["chip"] == chip_b).sum())}


def frontier_read(curves: pd.DataFrame, model: str, per_user_tok_per_s: float) -> pd.Series:
    """Tokens/s per GPU each curve of ``model`` reaches at a speed per user (log-log
    interpolation; NaN where the curve does not reach that speed)."""
    out = {}
    for name, g in curves[curves["model"] == model].groupby("curve", sort=False):
        g = g.sort_values("per_user_tok_per_s")
        x, y = np.log(g["per_user_tok_per_s"]), np.log(g["per_gpu_tok_per_s"])
        s = math.log(per_user_tok_per_s)
        out[name] = float(np.exp(np.interp(s, x, y))) if x.min() <= s <= x.max() else np.nan
    return pd.Series(out)


def frontier_gap(curves: pd.DataFrame, points: pd.DataFrame) -> pd.DataFrame:
    """Each MLPerf point of :func:`frontier_points` against the model's curves of its chip at
    its speed per user: measured over the FP8 curve and over the FP4 one (B200 only)."""
    out = points.copy()
    for fmt in ("FP8", "NVFP4"):
        ratios = []
        for _, r in points.iterrows():
            read = frontier_read(curves, r["model"], r["per_user_tok_per_s"])
            value = read.get(f"{r['chip']}, {fmt}", np.nan)
            ratios.append(r["per_gpu_tok_per_s"] / value if value == value else np.nan)
        out[f"over_{fmt.lower()}"] = ratios
    return out
