"""Reading published rows: what each measured, in the step model's terms.

A row of ``data/mlperf_llm.csv`` or ``data/serving_measurements.csv`` (or any table in their
schema) is read into a *case*: the chip and how the measured device differs from the specs
table, the model, the formats, the parallelism, the lengths, the scenario, what its
``value`` measures (the ``kind``) and in which unit, and whether the fit may see it (the
``split``, :mod:`napkin.validation`). A row the model cannot describe is declined with its
reason. Names are read through ``data/validation_aliases.csv``.
"""

from __future__ import annotations

import math
import re
from dataclasses import dataclass
from types import MappingProxyType
from typing import Mapping
import numpy as np
import pandas as pd

from .. import catalog, kvcache, tables
from ..predict import software

#: MLPerf rounds the calibration may see; later rounds are held out.
TRAIN_ROUNDS = ("v4.0", "v4.1", "v5.0")
#: Argonne devices the calibration may see; the newest of each vendor is held out.
ARGONNE_TRAIN_GPUS = ("Nvidia A100 GPU", "Nvidia H100 GPU", "AMD MI250 GPU", "Habana Gaudi2")
ARGONNE = "argonne-lcf/LLM-Inference-Bench"
#: Tensor-parallel sizes tried where a row does not say which one ran (the best one is kept:
#: submitters tune for their number).
TP_CHOICES = (1, 2, 4, 8)
#: Data-parallel attention groups tried for a mixture of experts whose row states no layout
#: (with ``Calibration.wide_when_unstated``): a server board, and a rack's NVLink domain.
DP_CHOICES = (8, 72)
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


#: Which of the book's own tables names each kind of thing a row can name.
_BOOK_KIND = {"accelerator": "chip", "gpu": "chip", "model": "model", "benchmark": "model"}
#: The tables a row is read against (beside the row's own table).
REFERENCE = ("validation_aliases", "hardware_specs", "models", "models/", "mlperf_datasets",
             "mlperf_system_configs")
#: Every table that reading the published rows depends on: what :func:`all_cases` is
#: remembered against.
READS = ("mlperf_llm", "serving_measurements") + REFERENCE


@dataclass(frozen=True)
class Reference:
    """What a published row is read against, read once per version of :data:`REFERENCE`
    (:func:`reference`) and shared read-only: the aliases by (kind, name), the book's own
    chip and model names, MLPerf's datasets by benchmark, the submissions' configs by
    (round, submitter, system, benchmark, scenario) and each book model's context limit."""

    aliases: Mapping
    book_names: Mapping
    datasets: Mapping
    configs: Mapping
    context_limits: Mapping


@tables.cached(*REFERENCE)
def reference() -> Reference:
    from .. import hardware

    datasets = tables.load("mlperf_datasets").set_index("benchmark_model")
    configs = tables.load("mlperf_system_configs")
    return Reference(
        aliases=MappingProxyType({(r.kind, r.name): r
                                  for r in tables.load("validation_aliases").itertuples()}),
        book_names=MappingProxyType({"chip": frozenset(hardware.chips()),
                                     "model": frozenset(catalog.names())}),
        datasets=MappingProxyType({name: datasets.loc[name] for name in datasets.index}),
        configs=MappingProxyType({(r.round, r.submitter, r.system, r.benchmark_model,
                                   r.scenario): r for r in configs.itertuples()}),
        context_limits=MappingProxyType({m: kvcache.max_context_tokens(catalog.config(m))
                                         for m in catalog.names()}))


class _BookName:
    """An alias row for a name that is already the book's own: the chip or model itself,
    with nothing about the measured device changed."""

    def __init__(self, name: str):
        self.book_name = name
        self.share_of_chip = self.memory_bandwidth_GB_per_s = self.memory_capacity_GiB = \
            self.peer_link_per_direction_GB_per_s = np.nan


def alias(kind: str, name, ref: Reference | None = None) -> tuple[object, str]:
    """The alias row of ``name`` (or None) and, when it is missing or declined, why. A name
    the book itself uses (a chip of ``data/hardware_specs.csv``, a model of
    ``data/models.csv``) is read as that chip or model without an alias row."""
    ref = ref or reference()
    text = str(name).strip()
    row = ref.aliases.get((kind, text))
    if row is None:
        if text in ref.book_names[_BOOK_KIND[kind]]:
            return _BookName(text), ""
        return None, f"unknown {kind} {name!r} (not in data/validation_aliases.csv)"
    if pd.isna(row.book_name):
        return None, row.note
    return row, ""


def dataset(benchmark: str) -> pd.Series:
    """An MLPerf benchmark's row of ``data/mlperf_datasets.csv`` (``llama2-70b`` reads its
    ``-99`` accuracy target's row)."""
    d = reference().datasets
    for name in (benchmark, f"{benchmark}-99"):
        if name in d:
            return d[name].copy()
    raise ValueError(f"no MLPerf benchmark {benchmark!r} in data/mlperf_datasets.csv; "
                     f"known: {', '.join(d)}")


def dataset_lengths(row: pd.Series) -> tuple[float, float]:
    """A dataset row's mean prompt and answer in tokens (the longest answer allowed where the
    mean is not published)."""
    out = row["output_mean_tokens"]
    return (float(row["input_mean_tokens"]),
            float(out if pd.notna(out) else row["output_max_tokens"]))


def answer_spread(row: pd.Series) -> float:
    """How much longer a dataset row's answers in flight are than its mean answer,
    ``E[o^2] / E[o]^2`` of the submissions' answers (1 where not measured;
    :func:`napkin.predict.serve.inflight_depth`)."""
    ratio = row["output_inflight_ratio"]
    return float(ratio) if pd.notna(ratio) else 1.0


def source_of(url) -> str:
    for key, label in SOURCES.items():
        if key in str(url):
            return label
    return "other"


# -- reading a row ---------------------------------------------------------------------------

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
            "duplicate": False, "system": "", "measured": np.nan, "stack": "", "dp": np.nan,
            "draft_tokens": 0.0, "per_chips": 1.0, "inflight": 1.0}


def _stack(out: dict, engine) -> None:
    """The row's serving stack (:func:`napkin.predict.software.stack_of`), once its chip is
    known."""
    from .. import hardware

    out["stack"] = software.stack_of(out["source"], hardware.chip(out["chip"]).vendor, engine)


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


def _read_mlperf(r, ref: Reference) -> dict:
    out = _blank()
    out.update(source="MLPerf", scenario=str(r.scenario), measured=float(r.value),
               system=f"{r.submitter}: {r.system}", n_chips=float(r.n_accelerators))
    out["split"] = "train" if r.round in TRAIN_ROUNDS else "test"
    if str(r.division).strip() != "closed":
        out["reason"] = "open division: the model or its weights were changed"
        return out
    acc, why = alias("accelerator", r.accelerator, ref)
    if acc is None:
        out["reason"] = why
        return out
    _device(out, acc)
    _stack(out, r.software)
    bench, why = alias("benchmark", r.benchmark_model, ref)
    if bench is None or r.benchmark_model not in ref.datasets:
        out["reason"] = why or f"no dataset lengths for {r.benchmark_model}"
        return out
    out["model"] = bench.book_name
    data = ref.datasets[r.benchmark_model]
    out["input_tokens"], out["output_tokens"] = dataset_lengths(data)
    out["inflight"] = answer_spread(data)
    config = ref.configs.get((r.round, r.submitter, r.system, r.benchmark_model, r.scenario))
    weights, kv, why = _mlperf_formats(r, out["chip"], config)
    if weights is None:
        out["reason"] = why or "weight format of the config not modelled"
        return out
    out.update(weights=weights, kv=kv)
    if config is not None:
        out["tp"] = float(_leading_int(config.tp) or 1)
        out["pp"] = _leading_int(config.pp) or 1
        _layout(out, str(config.tp), str(config.note))
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
    ("decode throughput per node (8 gpus)", "output tokens/s/node"): "pool_decode_rate",
    ("decode throughput per gpu", "output tokens/s/gpu"): "pool_decode_rate",
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


def _layout(out: dict, parallelism: str, notes: str) -> None:
    """What a row states beyond tensor parallelism: data-parallel attention over the
    ``TPn`` group with its experts spread (``dp``; TensorRT-LLM's "attention DP"), and the
    multi-token prediction drafts it ran (``draft_tokens``; ``num_nextn_predict_layers``)."""
    text = f"{parallelism} {notes}"
    group = re.match(r"\s*TP(\d+)\s+EP\d+", parallelism)
    if group and re.search(r"attention DP|DP attention", text, flags=re.I):
        out["dp"] = float(group.group(1))
    wide = re.match(r"\s*EP(\d+)", parallelism)
    if wide:  # SGLang's large-scale EP: attention data-parallel on every rank (its blogs)
        out["dp"] = float(wide.group(1))
    drafts = re.search(r"num_nextn_predict_layers\s*=\s*(\d+)", text)
    if drafts:
        out["draft_tokens"] = float(drafts.group(1))


def _read_decode_pool(out: dict, r) -> dict:
    """A disaggregated decode pool's own rate: ``batch`` sequences on each GPU at a stated
    cache length, per GPU or per node of the GPUs the metric names (``per_chips``)."""
    _layout(out, str(r.tp), str(r.notes))
    text = str(r.concurrency_or_batch)
    batch = re.search(r"batch\s+([\d,]+)", text)
    depth = re.search(r"KV cache length\s+([\d,]+)", text)
    if "simulated" in f"{text} {r.notes}".lower():
        out["reason"] = "a simulated run, not a measurement"
        return out
    if batch is None or ("per device" not in text and "per GPU" not in text):
        out["reason"] = "sequences per GPU not stated"
        return out
    if depth is None:
        out["reason"] = "cache length not stated"
        return out
    node = re.search(r"\((\d+) GPUs\)", str(r.metric))
    out.update(batch=float(batch.group(1).replace(",", "")), output_tokens=1.0,
               input_tokens=float(depth.group(1).replace(",", "")),
               per_chips=float(node.group(1)) if node else 1.0,
               n_chips=float(_leading_int(r.n_gpus) or np.nan), scenario="decode pool",
               tp=1.0 if not math.isnan(out["dp"]) else np.nan)
    if math.isnan(out["dp"]):
        out["reason"] = "a decode pool's layout not stated"
        return out
    out["ok"] = True
    return out


def _read_serving(r, ref: Reference) -> dict:
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
    gpu, why = alias("gpu", r.gpu, ref)
    if gpu is None:
        out["reason"] = why
        return out
    _device(out, gpu)
    _stack(out, r.engine)
    model, why = alias("model", r.model, ref)
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
    if kind == "pool_decode_rate":
        return _read_decode_pool(out, r)
    if tp_text.startswith("EP"):
        out["reason"] = "expert parallelism across nodes, which the step model does not describe"
        return out
    tp = _leading_int(tp_text)
    _layout(out, tp_text, str(r.notes))
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
    limit = ref.context_limits[out["model"]]
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
    out, ref = [], reference()
    for r in rows.itertuples():
        try:
            out.append(reader(r, ref))
        except (ValueError, TypeError, KeyError, AttributeError) as err:
            case = _blank()
            case["reason"] = f"row not readable: {err}"
            out.append(case)
    cases = pd.DataFrame(out, index=rows.index)
    cases["duplicate"] = _mark_duplicates(cases, rows) if reader is _read_mlperf else False
    return cases

@tables.cached(*READS)
def all_cases() -> pd.DataFrame:
    """Every published row, read once per version of the tables it is read from (:data:`READS`): MLPerf first, then the serving measurements; the columns of
    :func:`interpret` plus ``table`` and ``row_id`` (the row's stable id in its table,
    :mod:`napkin.rowids`: what derived tables join on)."""
    m, s = mlperf(), serving()
    a, b = interpret(m), interpret(s)
    a["table"], b["table"] = "mlperf_llm", "serving_measurements"
    a[tables.ROW_ID], b[tables.ROW_ID] = m[tables.ROW_ID], s[tables.ROW_ID]
    a = a.join(pd.DataFrame({"chip_name": m["accelerator"], "detail": m["benchmark_model"],
                             "unit": m["unit"], "engine": m["software"].astype(str)}))
    b = b.join(pd.DataFrame({"chip_name": s["gpu"], "detail": s["model"] + ", " + s["metric"],
                             "unit": s["unit"], "engine": s["engine"]}))
    return pd.concat([a, b], ignore_index=True)


def group_of(cases: pd.DataFrame) -> pd.Series:
    """Each case's group: MLPerf Offline, MLPerf Server/Interactive, or its source and
    scenario (Argonne static batch, TensorRT-LLM max load ...)."""
    return np.where(cases["source"] == "MLPerf",
                    np.where(cases["scenario"] == "Offline", "MLPerf Offline",
                             "MLPerf Server/Interactive"), cases["source"] + " " +
                    cases["scenario"])
