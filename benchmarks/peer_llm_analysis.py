#!/usr/bin/env python3
"""A peer calculator's predictions for the book's published measurements: llm-analysis at its
defaults.

Chapter 9 scores the book's step model against published LLM-serving measurements and sets
beside it one peer calculator, run as it comes: llm-analysis (https://github.com/cli99/
llm-analysis, PyPI ``llm-analysis``), an analytical latency and memory calculator. This script
asks it, row by row, for the number each measurement reports, and writes the answers to
``data/peer_llm_analysis.csv`` (each naming its measurement by ``row_id``) with their
fingerprint, ``data/peer_llm_analysis.fingerprint.json`` (``lib/napkin/derived.py``): the data
files read while predicting and this script's code, which ``tests/test_derived.py`` checks.

Nothing of llm-analysis is tuned: its efficiency factors stay at their defaults, its GPUs are
its own GPU configs, its data type is its own ``w16a16e16`` (FP16 weights, activations and
embeddings). What this script supplies is the row: GPU (mapped by hand below to one of
llm-analysis's configs), model (the book's Hugging Face config, read the way llm-analysis reads
one, or llm-analysis's own config where it ships the model), tensor parallelism, batch, prompt
length and generated tokens.

Run it with the peer's own environment, not the book's (it needs only llm-analysis and pandas):

    python3 -m venv /work/venv-peer
    /work/venv-peer/bin/pip install llm-analysis==0.2.2 pandas
    /work/venv-peer/bin/python benchmarks/peer_llm_analysis.py [--overwrite] [--out PATH]

It refuses to overwrite an existing output unless given ``--overwrite``.
"""

from __future__ import annotations

import argparse
import importlib.util
import json
import logging
import math
import os
import re
import sys
from collections import Counter
from importlib.metadata import version
from pathlib import Path

os.environ.setdefault("TRANSFORMERS_VERBOSITY", "error")  # before llm-analysis imports it

import numpy as np  # noqa: E402
import pandas as pd  # noqa: E402
from llm_analysis import config as la_config  # noqa: E402
from llm_analysis.analysis import LLMAnalysis  # noqa: E402
from llm_analysis.logger import logger as la_logger  # noqa: E402

REPO = Path(__file__).resolve().parents[1]
DATA = REPO / "data"
OUT = DATA / "peer_llm_analysis.csv"
TOOL = f"llm-analysis {version('llm-analysis')}"
SOURCE = (f"benchmarks/peer_llm_analysis.py ({TOOL}: "
          f"https://pypi.org/project/llm-analysis/{version('llm-analysis')}/)")
DTYPE = "w16a16e16"  # llm-analysis's FP16 weights, activations and embeddings
REFIT = ("/work/venv-peer/bin/python benchmarks/peer_llm_analysis.py --overwrite "
         "(in llm-analysis's own environment: benchmarks/README.md)")


def _derived():
    """The book's fingerprints of derived tables, ``lib/napkin/derived.py``, loaded by its path:
    it needs only the standard library, and this environment has llm-analysis, not the book's
    packages."""
    spec = importlib.util.spec_from_file_location("napkin_derived",
                                                  REPO / "lib" / "napkin" / "derived.py")
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module
    spec.loader.exec_module(module)
    return module

#: The tables' GPU names -> llm-analysis's GPU config. Any name not here is skipped: llm-analysis
#: has no config for it (GH200, H200, B200, MI300X, Gaudi 2, Intel GPUs, L40S, SN40L ...), and
#: lending it a neighbour's config would be this script's choice, not the tool's.
GPUS = {
    # Argonne's A100s are ALCF Polaris's, 40 GB SXM (data/validation_aliases.csv)
    "Nvidia A100 GPU": "a100-sxm-40gb",
    # Argonne's H100 node reports 'NVIDIA H100 80GB HBM3': SXM (data/validation_aliases.csv)
    "Nvidia H100 GPU": "h100-sxm-80gb",
    # one Argonne 'GPU' is one MI250 OAM (two dies; data/validation_aliases.csv), and
    # llm-analysis's mi250-128gb is one whole OAM (128 GB, 3.2 TB/s, both dies' FLOP/s)
    "AMD MI250 GPU": "mi250-128gb",
    # TensorRT-LLM's tables: SXM 80GB parts (data/validation_aliases.csv)
    "A100": "a100-sxm-80gb",
    "A100 SXM 80GB": "a100-sxm-80gb",
    "A100 (SXM 80GB per H100vsA100 blog)": "a100-sxm-80gb",
    "H100": "h100-sxm-80gb",
    "H100 SXM 80GB": "h100-sxm-80gb",
    "H100 (SXM 80GB per H100vsA100 blog)": "h100-sxm-80gb",
    "H100 80GB": "h100-sxm-80gb",
    "H100 (blog Hopper section: single H100)": "h100-sxm-80gb",
}

#: The tables' model names -> a model config: ("book", the book's Hugging Face config under
#: data/models/) or ("llm-analysis", the name of a config llm-analysis ships). Names not here
#: are skipped: neither has a config for them.
MODELS = {
    "meta-llama/Llama-2-7b-hf": ("book", "models/Llama-2-7B.json"),
    "meta-llama/Llama-2-70b-hf": ("book", "models/Llama-2-70B.json"),
    "meta-llama/Meta-Llama-3-70B": ("book", "models/Llama-3-70B.json"),
    "mistralai/Mistral-7B-v0.1": ("book", "models/Mistral-7B-v0.1.json"),
    "mistralai/Mixtral-8x7B-v0.1": ("book", "models/Mixtral-8x7B.json"),
    "Qwen/Qwen2-7B": ("book", "models/Qwen2-7B.json"),
    "Qwen/Qwen1.5-7B": ("book", "models/Qwen1.5-7B.json"),
    "BAAI/Aquila-7B": ("book", "models/Aquila-7B.json"),
    "huggyllama/llama-7b": ("book", "models/LLaMA-7B.json"),
    # TensorRT-LLM's 'LLaMA 7B/70B' are Llama 2 (data/validation_aliases.csv)
    "LLaMA 7B": ("book", "models/Llama-2-7B.json"),
    "LLaMA 70B": ("book", "models/Llama-2-70B.json"),
    # the book has no config for these; llm-analysis ships one under the exact model id
    "EleutherAI/gpt-j-6b": ("llm-analysis", "EleutherAI_gpt-j-6b"),
    "GPT-J 6B": ("llm-analysis", "EleutherAI_gpt-j-6b"),
    "facebook/opt-6.7b": ("llm-analysis", "facebook_opt-6.7b"),
    "bigscience/bloom-7b1": ("llm-analysis", "bigscience_bloom-7b1"),
}

#: Metrics of one static batch that llm-analysis's inference() answers, lower-cased:
#: -> what to take from it. Every other metric is a live-serving run (fixed concurrency,
#: request rate, maximum load) or a fitted line, which needs a scheduler llm-analysis lacks.
STATIC = {
    "end-to-end batch latency (offline static batch)": "e2e",
    "ttft (batch of prompts, prefill)": "prefill",
    "1st token latency (ttft, batch 1)": "prefill",
    "1st token latency": "prefill",
    "peak output throughput (static batch)": "rate",
    "throughput": "rate",
    "peak output throughput per gpu (static batch)": "rate_per_gpu",
    "max throughput per gpu": "rate_per_gpu",
    "throughput per gpu": "rate_per_gpu",
}
UNDOCUMENTED = {"column 'end_latency' (meaning not documented in csv)"}


def leading_int(text) -> int | None:
    m = re.match(r"\s*(\d+)", str(text))
    return int(m.group(1)) if m else None


def weight_precision(text: str) -> str | None:
    """The weight format a row states, upper-cased (FP16, BF16, FP8, FP4 ...), or None."""
    weights = re.split(r"KV cache", str(text), flags=re.I)[0]
    m = re.search(r"\b(NVFP4|MXFP4|FP4|FP8|FP16|BF16|INT8|INT4)\b", weights, flags=re.I)
    return m.group(1).upper() if m else None


# --- model configs --------------------------------------------------------------------------

def _fields_as_llm_analysis_reads_them(hf: dict, name: str) -> la_config.ModelConfig:
    """The fields llm-analysis's Hugging Face reader (config.get_model_config_from_hf) takes,
    taken from the config itself: used where the transformers that llm-analysis 0.2.2 pins
    (4.31, through huggingface-hub < 0.15) does not know the model type (mistral, mixtral,
    qwen2). Checked against the reader on the configs it can read (check_reader_mirror)."""
    return la_config.ModelConfig(
        name=la_config.canonical_model_name(name),
        max_seq_len=hf.get("max_position_embeddings"),
        num_layers=hf.get("num_hidden_layers", hf.get("n_layers")),
        n_head=hf.get("num_attention_heads", hf.get("n_heads")),
        hidden_dim=hf.get("hidden_size", hf.get("d_model")),
        vocab_size=hf["vocab_size"],
        model_type=hf.get("model_type"),
        num_key_value_heads=hf.get("num_key_value_heads"),
    )


_MODEL_CACHE: dict[str, tuple[la_config.ModelConfig, str]] = {}


def model_config(kind: str, ref: str) -> tuple[la_config.ModelConfig, str]:
    """An llm-analysis ModelConfig and a short note of how it was made."""
    key = f"{kind}:{ref}"
    if key in _MODEL_CACHE:
        return _MODEL_CACHE[key]
    if kind == "llm-analysis":
        result = la_config.get_model_config_by_name(ref), f"model={ref} (llm-analysis's own)"
    else:
        path = DATA / ref
        hf = json.loads(path.read_text())
        try:
            cfg = la_config.get_model_config_from_hf(str(path))
            how = "its HF reader"
        except (ValueError, KeyError):  # model_type unknown to transformers 4.31
            cfg = _fields_as_llm_analysis_reads_them(hf, str(path))
            how = "its HF reader's fields"
        note = f"model=data/{ref} via {how}"
        # The reader drops the expert count; llm-analysis's ModelConfig can state it.
        if hf.get("num_local_experts"):
            cfg = la_config.ModelConfig(**{**cfg.__dict__, "ffn_embed_dim": None,
                                           "expansion_ratio": None,
                                           "num_key_value_groups": None,
                                           "moe_num_experts": int(hf["num_local_experts"]),
                                           "moe_top_k": int(hf["num_experts_per_tok"])})
            note += f" + moe {cfg.moe_num_experts}/top-{cfg.moe_top_k}"
        result = cfg, note
    _MODEL_CACHE[key] = result
    return result


def check_reader_mirror() -> None:
    """Where llm-analysis's own reader can read a book config, the fallback must agree."""
    for kind, ref in sorted(set(MODELS.values())):
        if kind != "book":
            continue
        path = DATA / ref
        try:
            theirs = la_config.get_model_config_from_hf(str(path))
        except (ValueError, KeyError):
            continue
        ours = _fields_as_llm_analysis_reads_them(json.loads(path.read_text()), str(path))
        assert theirs == ours, f"fallback reader disagrees on {ref}: {theirs} != {ours}"


# --- one row -----------------------------------------------------------------------------------

class Skip(Exception):
    """A row llm-analysis cannot express; the message is the reason, counted in the summary."""


def refusal(text: str) -> str:
    """Why llm-analysis's inference() refused a row, from its assertion message."""
    if "max_seq_len" in text:
        return "prompt longer than the model's max_seq_len"
    if "model is too large" in text:
        return "weights do not fit in GPU memory"
    if "prefill activation" in text:
        return "prefill activations do not fit in GPU memory"
    if "kv_cache" in text:
        return "KV cache does not fit in GPU memory"
    return text[:60]


def predict_serving(r) -> tuple[float, str]:
    metric = str(r.metric).strip().lower()
    if metric in UNDOCUMENTED:
        raise Skip("metric's meaning not documented by its source")
    kind = STATIC.get(metric)
    batch_m = re.search(r"\bbatch\s*=\s*(\d+)", str(r.concurrency_or_batch))
    if kind is None or not batch_m:
        raise Skip("not one static batch (live serving, maximum load or a fitted line): "
                   "llm-analysis has no scheduler")
    if weight_precision(r.precision) not in ("FP16", "BF16"):
        raise Skip("weights not FP16/BF16 (llm-analysis models 16-, 8- and 4-bit integer "
                   "types, no FP8 or FP4)")
    gpu = GPUS.get(str(r.gpu).strip())
    if gpu is None:
        raise Skip(f"GPU not among llm-analysis's GPU configs: {str(r.gpu).strip()}")
    if str(r.model).strip() not in MODELS:
        raise Skip("model without a config (neither in data/models nor shipped by "
                   f"llm-analysis): {str(r.model).strip()}")
    model, model_note = model_config(*MODELS[str(r.model).strip()])
    unit = str(r.unit).strip()
    n_gpus = leading_int(r.n_gpus)
    tp = leading_int(r.tp)
    if tp is None or n_gpus is None:
        raise Skip("parallelism not stated")
    if tp != n_gpus:
        raise Skip("GPUs beyond the tensor-parallel group (data or pipeline parallel)")
    if "not stated" in unit and n_gpus != 1:
        raise Skip("unit ambiguous: per GPU or for all GPUs is not stated")
    batch = int(batch_m.group(1))
    seq_len = leading_int(r.input_len)
    gen = 1 if kind == "prefill" else leading_int(r.output_len)
    if seq_len is None or gen is None or not str(r.input_len).strip().isdigit() or (
            kind != "prefill" and not str(r.output_len).strip().isdigit()):
        raise Skip("input or output length not stated as one number")

    analysis = LLMAnalysis(model, la_config.get_gpu_config_by_name(gpu),
                           la_config.get_dtype_config_by_name(DTYPE),
                           la_config.ParallelismConfig(tp_size=tp))
    try:
        out = analysis.inference(batch_size_per_gpu=batch, seq_len=seq_len,
                                 num_tokens_to_generate=gen)
    except AssertionError as err:  # its own checks: context length, memory
        raise Skip(f"llm-analysis refuses: {refusal(str(err))}") from err

    if kind == "e2e":
        seconds, took = out["total_latency"], "total_latency"
    elif kind == "prefill":
        seconds, took = out["prefill_latency"], "prefill_latency"
    else:
        rate = batch * gen / out["total_latency"]
        took = "batch*gen/total_latency"
        if kind == "rate_per_gpu":
            rate, took = rate / n_gpus, took + f"/{n_gpus} GPUs"
        seconds = None
    if seconds is not None:
        if unit.startswith("ms"):
            value = seconds * 1e3
        elif unit.startswith("s"):
            value = seconds
        else:
            raise Skip(f"unit {unit!r} not a time")
    else:
        if "tokens/s" not in unit:
            raise Skip(f"unit {unit!r} not a token rate")
        value = rate
    settings = (f"gpu={gpu} tp={tp} batch_size_per_gpu={batch} seq_len={seq_len} "
                f"num_tokens_to_generate={gen} dtype={DTYPE} efficiencies=defaults; "
                f"{model_note}; took {took}")
    return float(value), settings


def predict_mlperf(r) -> tuple[float, str]:
    raise Skip("MLPerf Offline/Server/Interactive: a system's token rate over a dataset of "
               "varied lengths under a scheduler, with no batch stated; llm-analysis "
               "models one static batch")


def parameter_lines() -> list[str]:
    """llm-analysis's parameter count for each model config used, beside data/models.csv's
    count: how much of each model llm-analysis sees when it reads the config its way."""
    book = pd.read_csv(DATA / "models.csv").set_index("config_file")["params_total_B"]
    gpu = la_config.get_gpu_config_by_name("h100-sxm-80gb")  # any: counts do not depend on it
    lines = ["parameters as llm-analysis counts them (total, billions) / data/models.csv:"]
    for kind, ref in sorted(set(MODELS.values())):
        cfg, _ = model_config(kind, ref)
        la = LLMAnalysis(cfg, gpu, la_config.get_dtype_config_by_name(DTYPE),
                         la_config.ParallelismConfig())
        ours = la.get_num_params_total() / 1e9
        theirs = f"{book[ref]:.2f}" if ref in book.index else "-"
        lines.append(f"  {ref}: {ours:.2f} / {theirs}  (ffn_embed_dim {cfg.ffn_embed_dim}, "
                     f"kv heads {cfg.num_key_value_heads})")
    return lines


# --- the run -----------------------------------------------------------------------------------

def factor(pred: np.ndarray, meas: np.ndarray) -> np.ndarray:
    return np.exp(np.abs(np.log(pred / meas)))


def summary_lines(done: pd.DataFrame, skipped: Counter, measured: dict) -> list[str]:
    lines = [f"rows predicted: {len(done)}",
             f"rows skipped: {sum(skipped.values())}"]
    for reason, n in skipped.most_common():
        lines.append(f"  {n:5d}  {reason}")
    if done.empty:
        return lines
    d = done.copy()
    d["measured"] = [measured[(t, i)][0] for t, i in zip(d["table"], d["row_id"])]
    d["gpu"] = [measured[(t, i)][1] for t, i in zip(d["table"], d["row_id"])]
    d["metric"] = [measured[(t, i)][2] for t, i in zip(d["table"], d["row_id"])]
    d["factor"] = factor(d["predicted"].to_numpy(float), d["measured"].to_numpy(float))
    # how much faster llm-analysis says it runs than it ran: measured/predicted for a time,
    # predicted/measured for a token rate (above 1: the prediction is optimistic)
    rate = d["unit"].str.contains("tokens/s")
    d["speed"] = np.where(rate, d["predicted"] / d["measured"], d["measured"] / d["predicted"])

    def stats(g: pd.DataFrame) -> str:
        return (f"n={len(g):4d}  factor error median {g['factor'].median():.2f}  "
                f"p90 {g['factor'].quantile(0.9):.2f}  (speed predicted/measured: median "
                f"{g['speed'].median():.2f}, above 1 in {(g['speed'] > 1).mean():.0%})")

    lines.append("factor error exp(|ln(predicted/measured)|) on the predicted rows:")
    lines.append(f"  all: {stats(d)}")
    for key in ("gpu", "metric"):
        for name, g in d.groupby(key):
            label = f"{name} (-> {GPUS[name]})" if key == "gpu" else name
            lines.append(f"  {key} {label}: {stats(g)}")
    return lines


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--out", type=Path, default=OUT, help=f"output CSV (default {OUT})")
    ap.add_argument("--overwrite", action="store_true", help="replace an existing output")
    args = ap.parse_args(argv)
    if args.out.exists() and not args.overwrite:
        print(f"{args.out} exists; pass --overwrite to replace it", file=sys.stderr)
        return 2

    la_logger.setLevel(logging.ERROR)  # llm-analysis logs every step at INFO/WARNING
    check_reader_mirror()
    derived = _derived()

    with derived.Reads(DATA) as reads:  # what the predictions are made from
        tables = {
            "serving_measurements": (pd.read_csv(DATA / "serving_measurements.csv"),
                                     predict_serving, "gpu", "metric"),
            "mlperf_llm": (pd.read_csv(DATA / "mlperf_llm.csv"), predict_mlperf,
                           "accelerator", "scenario"),
        }
        total = sum(len(t[0]) for t in tables.values())
        rows, skipped, measured, n = [], Counter(), {}, 0
        for table, (df, predict, gpu_col, metric_col) in tables.items():
            for r in df.itertuples():
                n += 1
                try:
                    value, settings = predict(r)
                except Skip as why:
                    skipped[f"{table}: {why}"] += 1
                else:
                    if not (math.isfinite(value) and value > 0):
                        skipped[f"{table}: prediction not a positive number"] += 1
                    else:
                        rows.append({"table": table, "row_id": r.row_id, "predicted": value,
                                     "unit": str(r.unit), "tool": TOOL, "settings": settings,
                                     "source_url": SOURCE})
                        measured[(table, r.row_id)] = (float(r.value),
                                                       str(getattr(r, gpu_col)),
                                                       str(getattr(r, metric_col)))
                if n % 250 == 0 or n == total:
                    print(f"rows {n} / {total} done ({len(rows)} predicted)", flush=True)

    done = pd.DataFrame(rows, columns=["table", "row_id", "predicted", "unit", "tool",
                                       "settings", "source_url"])
    args.out.parent.mkdir(parents=True, exist_ok=True)
    done.to_csv(args.out, index=False, float_format="%.6g")
    print(f"wrote {len(done)} rows to {args.out} and "
          f"{derived.stamp(args.out, reads, Path(__file__), REFIT)}")
    print("\n".join(summary_lines(done, skipped, measured)))
    print("\n".join(parameter_lines()))
    return 0


if __name__ == "__main__":
    sys.exit(main())
