"""What prefill reached against the peaks: FLOPs per prompt token x prompt tokens per second.

A prefill run's FLOP/s is its tokens per second times the FLOPs each prompt token costs
(:func:`prefill_flops_per_token`); set against the dense peak of the arithmetic llama.cpp
actually ran (:func:`llamacpp_arithmetic`: INT8 or native FP4 for MXFP4, by build), it says how
hard prefill drove the chip. Chapter 2 (DGX Spark's prefill), chapter 8 (what to buy).
"""

from __future__ import annotations

import re

import pandas as pd

from .. import tables
from .bench import essay_pair_by_build

def live_prefill_flops(record: dict | None, run_index: int = 0) -> float | None:
    """Matmul FLOP/s a live prefill reached on a synthetic model (None without one).

    Per prompt token, every layer weight is used once (2 FLOPs); the token embedding is a
    lookup, and the tied output layer runs only for the prompt's last token, so neither
    counts. Comparing this with a measured peak says how hard prefill drove the arithmetic.
    """
    if record is None:
        return None
    run = record["runs"][run_index]
    if not run.get("synthetic") or "pp" not in run:
        return None
    shape = run["synthetic"]["shape"]
    matmul_params = run["model_params"] - shape["vocab_size"] * shape["hidden_size"]
    return run["pp"]["tokens_per_s"] * 2.0 * matmul_params


def layer_params(config) -> float:
    """Weights one token multiplies in the transformer layers: its attention projections
    (Q, K, V, O) and its MLP, for a mixture of experts only the ``num_experts_per_tok``
    experts it is routed to, plus the router. The vocabulary tables are left out: the input
    embedding is a lookup, and llama-bench's prompt test computes logits for the prompt's
    last token only. Biases and norms are too small to count. Refuses what it cannot count
    (compressed MLA attention, shared experts)."""
    from ..models import head_dim, load_config, require_int

    cfg = load_config(config)
    for key in ("kv_lora_rank", "n_shared_experts", "q_lora_rank"):
        if cfg.get(key):
            raise ValueError(f"config has {key}={cfg[key]!r}: layer_params counts standard "
                             "attention and routed experts only")
    hidden = require_int(cfg, "hidden_size")
    heads = require_int(cfg, "num_attention_heads")
    kv_heads = require_int(cfg, "num_key_value_heads", default=heads)
    hd = head_dim(cfg)
    attention = 2 * hidden * heads * hd + 2 * hidden * kv_heads * hd
    experts = cfg.get("num_local_experts") or cfg.get("num_experts")
    routed = require_int(cfg, "num_experts_per_tok") if experts else 1
    mlp = 3 * hidden * require_int(cfg, "intermediate_size") * routed
    router = hidden * int(experts) if experts else 0
    return float(require_int(cfg, "num_hidden_layers") * (attention + mlp + router))


def _prefill_model(model):
    """A :class:`napkin.roofline.Model` of the layer weights, from a catalog name or config."""
    from .. import catalog, roofline

    if isinstance(model, str):
        if model not in catalog.names():
            raise ValueError(f"unknown model {model!r}; known: {', '.join(catalog.names())}")
        cfg, name = catalog.config(model), model
    else:
        cfg, name = dict(model), str(dict(model).get("_name", "model"))
    params = layer_params(cfg)
    return roofline.Model(name=name, params=params, weight_bytes=2.0 * params, config=cfg)


def prefill_flops_per_token(model, prompt_tokens: int, depth: int = 0) -> float:
    """FLOPs per prompt token of a llama-bench ``pp{prompt_tokens}`` test ``depth`` tokens
    deep: 2 per layer weight (:func:`layer_params`) plus the prompt's attention, sliding
    windows honoured (:func:`napkin.roofline.step_work`). ``model``: a book model name
    (``"gpt-oss-120b"``: its routed experts only) or a config mapping."""
    from .. import roofline

    m = _prefill_model(model)
    work = roofline.step_work(m, prefill=[(depth, prompt_tokens)])
    return work.flops / prompt_tokens


def achieved_flops(model, tokens_per_s: float, prompt_tokens: int, depth: int = 0) -> float:
    """FLOP/s a measured prefill reached: FLOPs per prompt token x prompt tokens per second."""
    from ..units import require_positive

    rate = require_positive("tokens_per_s", tokens_per_s)
    return rate * prefill_flops_per_token(model, prompt_tokens, depth)


#: llama.cpp's CUDA backend multiplies MXFP4 weights with Blackwell's native block-scaled FP4
#: MMA instruction (``mma.sync ... kind::mxf4.block_scale``, activations quantized to MXFP4)
#: from PR #17906, merged 2025-12-24 in build b7536. Before it, and on every other chip, its
#: MMQ kernels unpack MXFP4 to 8-bit integers (a lookup table) and multiply them with q8_1
#: activations on the INT8 tensor cores.
NATIVE_MXFP4_BUILD = 7536
NATIVE_MXFP4_DATE = "2025-12-24"
NATIVE_MXFP4_SOURCE = "https://github.com/ggml-org/llama.cpp/pull/17906"
#: The chips of compute capability 12.x (GB10 is 12.1), the only ones llama.cpp's
#: ``blackwell_mma_available()`` admits (from GGML_CUDA_CC_BLACKWELL, 1200, up to Rubin).
SM12X_CHIPS = ("DGX Spark", "RTX 5090", "RTX PRO 6000 Blackwell")


def llamacpp_arithmetic(weight_format: str, chip: str, build: int | None = None,
                        date: str | None = None, backend: str = "CUDA") -> str:
    """The arithmetic llama.cpp's prefill matmuls of ``weight_format`` run in on ``chip``:
    :func:`napkin.roofline.arithmetic_for`, except MXFP4 on a 12.x Blackwell chip, which
    runs native FP4 from build :data:`NATIVE_MXFP4_BUILD` (or a run dated from
    :data:`NATIVE_MXFP4_DATE`) on, INT8 before. There the build (or the date, ``YYYY-MM``
    or ``YYYY-MM-DD``) must be given: it decides."""
    from .. import roofline

    arith = roofline.arithmetic_for(weight_format, backend)
    if str(weight_format).upper() != "MXFP4" or backend != "CUDA" or chip not in SM12X_CHIPS:
        return arith
    if build is not None:
        if isinstance(build, bool) or not isinstance(build, int) or build < 1:
            raise ValueError(f"build must be a llama.cpp build number, got {build!r}")
        return "fp4" if build >= NATIVE_MXFP4_BUILD else arith
    if date is not None:
        if not re.fullmatch(r"\d{4}-\d{2}(-\d{2})?", str(date)):
            raise ValueError(f"date must be YYYY-MM or YYYY-MM-DD, got {date!r}")
        return "fp4" if str(date) >= NATIVE_MXFP4_DATE else arith
    raise ValueError(f"MXFP4 on {chip}: llama.cpp runs INT8 before build {NATIVE_MXFP4_BUILD} "
                     "and native FP4 from it; give the run's build or date")


#: The gpt-oss guide's runs (data/gpt_oss_llamacpp.csv): discussion #15396 of August 2025.
GUIDE_DATE = "2025-08"
#: The book's chip name of each machine in the runs :func:`prefill_compute` reads.
_CHIP = {"DGX Spark (GB10)": "DGX Spark", "RTX 4090": "RTX 4090", "RTX 4090 24GB": "RTX 4090",
         "RTX PRO 6000 96GB": "RTX PRO 6000 Blackwell"}


def _compute_row(machine, chip, model, fmt, test, detail, tok_s, arith, source, confidence):
    from .. import hardware

    n = int(test[2:])
    peak = hardware.chip(chip).peak(arith)
    flops = achieved_flops(model, tok_s, n)
    return {"machine": machine, "chip": chip, "model": model, "weight_format": fmt,
            "test": test, "detail": detail, "tokens_per_s": tok_s,
            "flops_per_token": prefill_flops_per_token(model, n),
            "achieved_flops_per_s": flops, "arithmetic": arith,
            "roof_flops_per_s": peak.flops_per_s, "roof_kind": peak.kind,
            "roof_derived": peak.derived, "fraction_of_roof": flops / peak.flops_per_s,
            "source_url": source, "confidence": confidence}


def prefill_compute() -> pd.DataFrame:
    """What published prefill runs reached in FLOP/s, against the dense peak of the arithmetic
    llama.cpp runs them in (:func:`llamacpp_arithmetic`), at empty context.

    DGX Spark's gpt-oss-120b and -20b ``pp2048`` (each build of the benchmark file), the
    gpt-oss guide's RTX 4090 (20b) and RTX PRO 6000 Blackwell (120b), and Llama-2-7B Q4_0
    ``pp512`` without flash attention on DGX Spark, the RTX 4090 and the H100, once as each
    variant the scoreboard's copies name (SXM and PCIe: the same speed, two roofs).
    """
    from ..published import VARIANT_READINGS

    rows = []
    for model in ("gpt-oss-120b", "gpt-oss-20b"):
        for _, r in essay_pair_by_build(model).iterrows():
            b = int(r["build"])
            rows.append(_compute_row("DGX Spark", "DGX Spark", model, "MXFP4", "pp2048",
                                     f"build {b}", r["pp_tok_per_s"],
                                     llamacpp_arithmetic("MXFP4", "DGX Spark", build=b),
                                     r["source_url"], "high"))
    guide = tables.load("gpt_oss_llamacpp")
    guide = guide[(guide["test"] == "pp2048") & guide["hardware"].isin(list(_CHIP))
                  & ((guide["model"] == "gpt-oss-120b") | (guide["hardware"] == "RTX 4090 24GB"))]
    for _, r in guide.iterrows():
        chip = _CHIP[r["hardware"]]
        rows.append(_compute_row(chip, chip, r["model"], "MXFP4", "pp2048", "gpt-oss guide",
                                 float(r["throughput_tok_per_s"]),
                                 llamacpp_arithmetic("MXFP4", chip, date=GUIDE_DATE),
                                 r["source_url"], r["confidence"]))
    board = tables.load("gpu_llama2_7b_q4_0")
    board = board[(board["test"] == "pp512") & (board["flash_attention"].astype(str) == "0")
                  & board["gpu"].isin(list(_CHIP) + list(VARIANT_READINGS))]
    for _, r in board.iterrows():
        readings = VARIANT_READINGS.get(r["gpu"], (_CHIP.get(r["gpu"]),))
        for chip in readings:
            label = chip if r["gpu"] in _CHIP else f"H100 (read as {chip})"
            rows.append(_compute_row(label, chip, "Llama-2-7B", "Q4_0", "pp512",
                                     f"CUDA scoreboard, commit {r['llama_cpp_commit']}",
                                     float(r["throughput_tok_per_s"]),
                                     llamacpp_arithmetic("Q4_0", chip), r["source_url"],
                                     r["confidence"]))
    return pd.DataFrame(rows)


def arithmetic_path_change(model: str = "gpt-oss-120b") -> pd.DataFrame:
    """What moving DGX Spark's prefill to a faster arithmetic did to each phase: every build
    of the benchmark file that ran INT8 against each that ran FP4 (:func:`llamacpp_arithmetic`),
    at empty context. If compute sets prefill and not decode, prefill moves and decode does
    not. Columns: ``from_build``, ``to_build``, ``prefill_change``, ``decode_change``."""
    builds = essay_pair_by_build(model)
    arith = {int(b): llamacpp_arithmetic("MXFP4", "DGX Spark", build=int(b))
             for b in builds["build"]}
    by = builds.set_index("build")
    rows = [{"from_build": a, "to_build": b,
             "prefill_change": by.loc[b, "pp_tok_per_s"] / by.loc[a, "pp_tok_per_s"] - 1,
             "decode_change": by.loc[b, "tg_tok_per_s"] / by.loc[a, "tg_tok_per_s"] - 1}
            for a in arith if arith[a] == "int8" for b in arith if arith[b] == "fp4"]
    if not rows:
        raise ValueError(f"no DGX Spark builds of {model} on both sides of build "
                         f"{NATIVE_MXFP4_BUILD}")
    return pd.DataFrame(rows)


def spark_peak_fractions(compute: pd.DataFrame | None = None) -> pd.DataFrame:
    """Each DGX Spark prefill run of :func:`prefill_compute` as a share of every peak the
    chip has a figure for: NVIDIA's sparse FP4 (the petaFLOP) and the dense FP4, FP8, INT8
    and FP16 rates derived from it (no vendor states those)."""
    from .. import hardware

    compute = prefill_compute() if compute is None else compute
    spark = hardware.chip("DGX Spark")
    peaks = [spark.peak("fp4", sparse=True)] + [spark.peak(a) for a in
                                                 ("fp4", "fp8", "int8", "fp16")]
    runs = compute[compute["chip"] == "DGX Spark"]
    if runs.empty:
        raise ValueError("no DGX Spark run in the prefill table")
    rows = []
    for _, r in runs.iterrows():
        for p in peaks:
            rows.append({"run": f"{r['model']} {r['test']}, {r['detail']}", "model": r["model"],
                         "detail": r["detail"], "arithmetic_run": r["arithmetic"],
                         "peak": p.kind, "peak_flops_per_s": p.flops_per_s,
                         "peak_derived": p.derived, "peak_source": p.source,
                         "achieved_flops_per_s": r["achieved_flops_per_s"],
                         "fraction": r["achieved_flops_per_s"] / p.flops_per_s})
    return pd.DataFrame(rows)
