"""Prefill against decode on one machine: the ratio of the two phases, from published runs.

llama-bench reports prompt processing (``ppN``: N prompt tokens in one pass) and
token generation (``tgN``: N tokens, one per pass) for the same weights on the
same machine. Their ratio says how much faster a machine ingests than it
writes: large where FLOPs are plentiful and bandwidth is not (DGX Spark), small
where bandwidth is plentiful and FLOPs are not (Apple's Ultra chips).

Sources, all in ``data/``: the DGX Spark benchmark file of the llama.cpp
repository and its copies, with the M2 Ultra file run with the same command
(``spark_bench_llamacpp``), Strix Halo runs (``strix_halo_llamacpp``), the
gpt-oss guide (``gpt_oss_llamacpp``), and chapter 1's Llama-2-7B scoreboards.
"""

from __future__ import annotations

import re

import numpy as np
import pandas as pd

from . import tables

#: ``source_kind`` of rows read from the llama.cpp benchmark file or a copy of it.
BENCH_FILE = "benches file"
PREFILL, DECODE = "prefill", "decode"
#: The one model and test every family of machines in ``data/`` ran (Llama-2-7B Q4_0,
#: ``pp512 / tg128``): the like-for-like comparison.
LLAMA2_Q4 = "Llama-2-7B Q4_0"
_LLAMA2 = re.compile(r"llama[- ]?2[- ]7b", re.I)
RATIO_COLUMNS = ["machine", "family", "model", "protocol", "detail", "pp_tok_per_s",
                 "tg_tok_per_s", "ratio", "confidence", "source_url"]


def build_number(build: str) -> int | None:
    """``"2f68ce7cf (6918)"`` -> 6918; ``"b6761"`` -> 6761; None when the source gives none."""
    match = re.search(r"\((\d+)\)|^b(\d+)$", str(build).strip())
    if not match:
        return None
    return int(match.group(1) or match.group(2))


def phase(test: str) -> str:
    """``pp...`` is prefill, ``tg...`` is decode; anything else is refused."""
    t = str(test)
    if t.startswith("pp"):
        return PREFILL
    if t.startswith("tg"):
        return DECODE
    raise ValueError(f"test {test!r} is neither prompt processing (pp) nor generation (tg)")


def spark_bench(file_only: bool = True) -> pd.DataFrame:
    """The DGX Spark / M2 Ultra depth sweeps, with ``build`` (int) and ``phase`` added.

    ``file_only``: keep only rows read from the llama.cpp benchmark file or its copies
    (builds 6918, 6989, 7941 on DGX Spark; 7948 on M2 Ultra), the essay's cited source.
    """
    df = tables.load("spark_bench_llamacpp")
    if file_only:
        df = df[df["source_kind"].str.contains(BENCH_FILE, regex=False)]
    df = df.assign(build=pd.array([build_number(b) for b in df["llama_cpp_build"]], dtype="Int64"),
                   phase=[phase(t) for t in df["test"]])
    return df.reset_index(drop=True)


def _short_model(name: str) -> str:
    """``"Qwen2.5-Coder-7B (qwen2 7B)"`` -> ``"Qwen2.5-Coder-7B"``."""
    return str(name).split(" (")[0]


def depth_pairs(model: str | None = None, file_only: bool = True) -> pd.DataFrame:
    """One row per machine, build, model and context depth: pp, tg and their ratio."""
    df = spark_bench(file_only)
    if model is not None:
        known = sorted(df["model"].map(_short_model).unique())
        df = df[df["model"].map(_short_model) == model]
        if df.empty:
            raise ValueError(f"no runs of model {model!r}; models: {', '.join(known)}")
    keys = ["machine", "build", "source_kind", "model", "quant", "context_depth_tokens"]
    wide = df.pivot_table(index=keys, columns="phase",
                          values=["throughput_tok_per_s", "stddev_tok_per_s"],
                          aggfunc="first")
    wide.columns = [("pp" if p == PREFILL else "tg")
                    + ("_tok_per_s" if v.startswith("through") else "_stddev_tok_per_s")
                    for v, p in wide.columns]
    wide = wide.reset_index().dropna(subset=["pp_tok_per_s", "tg_tok_per_s"])
    wide["moe"] = wide["model"].map(is_moe)
    wide["model"] = wide["model"].map(_short_model)
    wide["ratio"] = wide["pp_tok_per_s"] / wide["tg_tok_per_s"]
    urls = df.drop_duplicates(["machine", "build", "source_kind"]).set_index(
        ["machine", "build", "source_kind"])["source_url"]
    wide["source_url"] = [urls.loc[(m, b, s)] for m, b, s in
                          zip(wide["machine"], wide["build"], wide["source_kind"])]
    wide["label"] = [f"{m}, build {b}" for m, b in zip(wide["machine"], wide["build"])]
    return wide.sort_values(["machine", "build", "model", "context_depth_tokens"]) \
        .reset_index(drop=True)


def essay_pair_by_build(model: str = "gpt-oss-120b", depth: int = 0) -> pd.DataFrame:
    """The essay's Spark pair as each build of the benchmark file records it."""
    df = depth_pairs(model)
    rows = df[(df["machine"] == "DGX Spark") & (df["context_depth_tokens"] == depth)]
    if rows.empty:
        raise ValueError(f"no DGX Spark run of {model} at depth {depth}")
    return rows.reset_index(drop=True)


def matches(value: float, decimals: int = 0, file_only: bool = False) -> pd.DataFrame:
    """Rows whose throughput, rounded to ``decimals``, equals ``value`` as the essay wrote it.

    How the book finds where a quoted figure came from, in any copy of the data.
    """
    df = spark_bench(file_only)
    hit = df["throughput_tok_per_s"].round(decimals) == round(float(value), decimals)
    return df[hit].reset_index(drop=True)


def nearest(value: float, test: str, depth: int | None = 0, model: str = "gpt-oss-120b",
            file_only: bool = True) -> pd.Series:
    """The published row of ``test`` closest to ``value`` (at ``depth``; None: any depth)."""
    df = spark_bench(file_only)
    df = df[(df["test"] == test) & (df["model"].map(_short_model) == model)]
    if depth is not None:
        df = df[df["context_depth_tokens"] == depth]
    if df.empty:
        raise ValueError(f"no {test} rows for {model} at depth {depth}")
    return df.loc[(df["throughput_tok_per_s"] - value).abs().idxmin()]


def partner(row: pd.Series, file_only: bool = False) -> pd.Series:
    """The other phase of the same run as ``row`` (a row of :func:`spark_bench`): its decode
    row for a prefill row and the reverse (same machine, build, copy, model and depth)."""
    df = spark_bench(file_only)
    keys = ["machine", "llama_cpp_build", "source_kind", "model", "context_depth_tokens"]
    other = DECODE if row["phase"] == PREFILL else PREFILL
    hit = df[(df[keys] == row[keys]).all(axis=1) & (df["phase"] == other)]
    if len(hit) != 1:
        raise ValueError(f"expected one {other} row of the run of {row['test']} at depth "
                         f"{row['context_depth_tokens']} in build {row['llama_cpp_build']}, "
                         f"found {len(hit)}")
    return hit.iloc[0]


def retention(model: str | None = None) -> pd.DataFrame:
    """Each phase's speed at every depth as a fraction of its speed at depth 0 (tidy)."""
    df = depth_pairs(model)
    keys = ["machine", "build", "model"]
    base = df[df["context_depth_tokens"] == 0].set_index(keys)
    rows = []
    for _, r in df.iterrows():
        k = tuple(r[keys])
        if k not in base.index:
            continue
        for col, name in (("pp_tok_per_s", PREFILL), ("tg_tok_per_s", DECODE)):
            rows.append({"machine": r["machine"], "build": r["build"], "label": r["label"],
                         "model": r["model"], "context_depth_tokens": r["context_depth_tokens"],
                         "phase": name, "tokens_per_s": r[col],
                         "fraction_of_depth0": r[col] / base.loc[k, col]})
    return pd.DataFrame(rows)


# -- the prefill / decode ratio of every machine ----------------------------------------------

def _pairs(df: pd.DataFrame, keys: list[str], pp: str, tg: str) -> pd.DataFrame:
    wide = df.pivot_table(index=keys, columns="test", values="throughput_tok_per_s",
                          aggfunc="first").reset_index()
    wide = wide.dropna(subset=[pp, tg]).rename(columns={pp: "pp_tok_per_s", tg: "tg_tok_per_s"})
    first = df.drop_duplicates(keys).set_index(keys)
    idx = [tuple(r) for r in wide[keys].itertuples(index=False)]
    wide["confidence"] = [first.loc[i, "confidence"] for i in idx]
    wide["source_url"] = [first.loc[i, "source_url"] for i in idx]
    wide["ratio"] = wide["pp_tok_per_s"] / wide["tg_tok_per_s"]
    return wide


def spark_ratios() -> pd.DataFrame:
    """DGX Spark (each build) and M2 Ultra, every model of the file, at depth 0."""
    df = depth_pairs()
    df = df[df["context_depth_tokens"] == 0]
    fam = {"DGX Spark": "DGX Spark", "M2 Ultra": "Apple Silicon"}
    return pd.DataFrame({
        "machine": df["machine"], "family": df["machine"].map(fam), "model": df["model"],
        "protocol": "pp2048 / tg32", "detail": [f"build {b}" for b in df["build"]],
        "pp_tok_per_s": df["pp_tok_per_s"], "tg_tok_per_s": df["tg_tok_per_s"],
        "ratio": df["ratio"], "confidence": "high", "source_url": df["source_url"],
        "moe": df["moe"]})


def flash_attention(setting) -> str:
    """``"on"``, ``"off"`` or ``"unrecorded"``, from what a source records of a run: the
    scoreboards' ``flash_attention`` column (0, 1, unknown), Strix Halo's flags
    (``fa=1``) or a backend note (``FA per notes``)."""
    text = "" if setting is None or (isinstance(setting, float) and np.isnan(setting)) \
        else str(setting).strip()
    if text in ("1", "on") or re.search(r"\bfa=1\b|\bFA\b", text):
        return "on"
    if text in ("0", "off") or re.search(r"\bfa=0\b", text):
        return "off"
    return "unrecorded"


#: The machine a Strix Halo run measures is its integrated GPU; a run on the CPU backend
#: measures another device of the same chip, and is left out of the ratios.
_CPU_BACKEND = "CPU"


def strix_ratios() -> pd.DataFrame:
    """Strix Halo's integrated GPU: every model's ``pp512 / tg128`` pair (CPU-backend runs
    left out), with ``flash_attention`` and ``quant`` columns beside the usual ones."""
    df = tables.load("strix_halo_llamacpp").fillna({"flags": "", "llama_cpp_build": ""})
    df = df[df["backend"] != _CPU_BACKEND]
    keys = ["machine", "section", "backend", "flags", "model", "quant"]
    w = _pairs(df, keys, "pp512", "tg128")
    return pd.DataFrame({
        "machine": w["machine"], "family": "Strix Halo", "model": w["model"],
        "protocol": "pp512 / tg128",
        "detail": [f"{b}{', ' + f if f else ''}" for b, f in zip(w["backend"], w["flags"])],
        "pp_tok_per_s": w["pp_tok_per_s"], "tg_tok_per_s": w["tg_tok_per_s"],
        "ratio": w["ratio"], "confidence": w["confidence"], "source_url": w["source_url"],
        "quant": w["quant"],
        "flash_attention": [flash_attention(f"{b} {f}") for b, f in zip(w["backend"],
                                                                        w["flags"])]})


def strix_llama2_q4() -> pd.DataFrame:
    """Strix Halo's runs of the one model and test every family ran: Llama-2-7B Q4_0,
    ``pp512 / tg128`` (model named as in :data:`LLAMA2_Q4`)."""
    s = strix_ratios()
    s = s[(s["quant"] == "Q4_0") & s["model"].str.contains(_LLAMA2)]
    return s.assign(model=LLAMA2_Q4).reset_index(drop=True)


#: What a row of the gpt-oss guide says when its run did not fit the GPU's memory: part of
#: the model ran elsewhere, so the pair is no measure of the GPU.
_OFFLOADED = "partial offload"


def gpt_oss_ratios() -> pd.DataFrame:
    """The gpt-oss guide's ``pp2048 / tg128`` pairs, less runs its notes mark as partially
    offloaded (the model did not fit the GPU)."""
    df = tables.load("gpt_oss_llamacpp")
    df = df[~df["note"].fillna("").str.contains(_OFFLOADED, case=False)]
    w = _pairs(df, ["hardware", "model", "backend"], "pp2048", "tg128")
    family = ["Apple Silicon" if b == "Metal" else "Discrete GPU" for b in w["backend"]]
    return pd.DataFrame({
        "machine": w["hardware"], "family": family, "model": w["model"],
        "protocol": "pp2048 / tg128", "detail": w["backend"],
        "pp_tok_per_s": w["pp_tok_per_s"], "tg_tok_per_s": w["tg_tok_per_s"],
        "ratio": w["ratio"], "confidence": w["confidence"], "source_url": w["source_url"]})


def _scoreboard_family(gpu: str) -> str:
    """The scoreboards list two integrated GPUs among the discrete ones: DGX Spark's GB10
    and Strix Halo's Radeon 8060S. Each belongs to its own family."""
    name = str(gpu)
    if "GB10" in name or "DGX Spark" in name:
        return "DGX Spark"
    if "Strix Halo" in name or "8060S" in name:
        return "Strix Halo"
    return "Discrete GPU"


def llama2_ratios() -> pd.DataFrame:
    """Chapter 1's scoreboards: Llama-2-7B pp512 / tg128 on Apple chips and discrete GPUs."""
    apple = tables.load("apple_silicon_llama2_7b")
    a = _pairs(apple, ["chip", "gpu_cores", "quant"], "pp512", "tg128")
    gpus = tables.load("gpu_llama2_7b_q4_0")
    g = _pairs(gpus, ["gpu", "backend", "flash_attention"], "pp512", "tg128")
    return pd.concat([
        pd.DataFrame({
            "machine": [f"{c} {int(n)}-core GPU" for c, n in zip(a["chip"], a["gpu_cores"])],
            "family": "Apple Silicon", "model": [f"Llama-2-7B {q}" for q in a["quant"]],
            "protocol": "pp512 / tg128", "detail": "Metal",
            "pp_tok_per_s": a["pp_tok_per_s"], "tg_tok_per_s": a["tg_tok_per_s"],
            "ratio": a["ratio"], "confidence": a["confidence"], "source_url": a["source_url"]}),
        pd.DataFrame({
            "machine": g["gpu"], "family": [_scoreboard_family(m) for m in g["gpu"]],
            "model": "Llama-2-7B Q4_0",
            "protocol": "pp512 / tg128",
            "detail": [f"{b}, flash attention {fa}" for b, fa in
                       zip(g["backend"], g["flash_attention"])],
            "pp_tok_per_s": g["pp_tok_per_s"], "tg_tok_per_s": g["tg_tok_per_s"],
            "ratio": g["ratio"], "confidence": g["confidence"], "source_url": g["source_url"]}),
    ], ignore_index=True)


def all_ratios() -> pd.DataFrame:
    """The prefill / decode ratio of every published run in ``data/``: one point per run, so
    a machine appears once per model, build, backend and setting it was run with. Runs
    that measure another device than the one named (Strix Halo's CPU backend, a GPU that
    offloaded part of the model) are left out."""
    out = pd.concat([spark_ratios(), strix_ratios(), gpt_oss_ratios(), llama2_ratios()],
                    ignore_index=True)
    return out[RATIO_COLUMNS]


LIVE_FAMILY = "This machine (live)"


#: What :func:`live_ratio` adds to the usual columns: each phase's spread over the repetitions.
LIVE_SPREAD_COLUMNS = ["pp_stddev_tok_per_s", "tg_stddev_tok_per_s"]


def live_ratio(record: dict | None) -> pd.DataFrame:
    """This machine's pp / tg ratio from a :func:`napkin.measure.live` record (empty if none),
    with each phase's sample standard deviation (a live run on a shared machine moves)."""
    columns = RATIO_COLUMNS + LIVE_SPREAD_COLUMNS
    if record is None:
        return pd.DataFrame(columns=columns)
    from .measure import machine as live_machine

    rows = []
    for run in record["runs"]:
        if "pp" not in run or "tg" not in run:
            continue
        pp, tg = run["pp"], run["tg"]
        what = f"synthetic {run['format']}" if run.get("synthetic") else run["model_path"]
        rows.append({"machine": live_machine.label(record["machine"]), "family": LIVE_FAMILY,
                     "model": what, "protocol": f"{pp['test']} / {tg['test']}",
                     "detail": record["runner"]["backend"],
                     "pp_tok_per_s": pp["tokens_per_s"], "tg_tok_per_s": tg["tokens_per_s"],
                     "ratio": pp["tokens_per_s"] / tg["tokens_per_s"],
                     "confidence": "measured here", "source_url": "live measurement (results/)",
                     "pp_stddev_tok_per_s": pp.get("stddev"),
                     "tg_stddev_tok_per_s": tg.get("stddev")})
    return pd.DataFrame(rows, columns=columns)


def mirror_table(depth: int = 0) -> pd.DataFrame:
    """M2 Ultra against DGX Spark, phase by phase, for every model both files ran.

    The DGX Spark build closest to the M2 Ultra run's build is used, so the two differ in
    hardware, not in llama.cpp. The first row is the memory bandwidth both vendors state.
    """
    from . import hardware

    df = depth_pairs()
    df = df[df["context_depth_tokens"] == depth]
    m2 = df[df["machine"] == "M2 Ultra"]
    if m2.empty:
        raise ValueError(f"no M2 Ultra runs at depth {depth}")
    m2_build = int(m2["build"].iloc[0])
    spark = df[df["machine"] == "DGX Spark"]
    spark_build = int(min(spark["build"].unique(), key=lambda b: abs(b - m2_build)))
    spark = spark[spark["build"] == spark_build].set_index("model")
    rows = [{"row": "memory bandwidth (vendor)", "unit": "GB/s", "kind": "bandwidth",
             "model": "",
             "spark": hardware.chip("DGX Spark").bandwidth_bytes_per_s / 1e9,
             "m2": hardware.chip("M2 Ultra").bandwidth_bytes_per_s / 1e9}]
    for kind, col in (("decode", "tg_tok_per_s"), ("prefill", "pp_tok_per_s")):
        for _, r in m2.sort_values("model").iterrows():
            if r["model"] not in spark.index:
                continue
            rows.append({"row": f"{kind}, {r['model']}", "unit": "tokens/s", "kind": kind,
                         "model": r["model"], "spark": spark.loc[r["model"], col],
                         "m2": r[col]})
    out = pd.DataFrame(rows)
    out["m2_over_spark"] = out["m2"] / out["spark"]
    out.attrs.update(spark_build=spark_build, m2_build=m2_build)
    return out


def is_moe(model: str) -> bool:
    """Whether a model of the benchmark files is a mixture of experts, from the name
    llama-bench prints: gpt-oss, or a ``total.active`` size label (``30B.A3B``, ``-A3B``)."""
    name = str(model)
    return name.startswith("gpt-oss") or bool(re.search(r"[.-]A\d+B", name))


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


# -- like for like: the same model and test on every machine that ran it ---------------------

def like_for_like() -> pd.DataFrame:
    """Prefill / decode ratios where the model and the llama-bench test are the same.

    ``comparison`` names model and test. Llama-2-7B Q4_0 ``pp512 / tg128``: every Apple chip
    (Metal), every scoreboard GPU, DGX Spark and Strix Halo's integrated GPU, each run kept
    only if flash attention was off or not recorded (DGX Spark's run has it off), the same
    rule for every family; a ``flash_attention`` column says which. gpt-oss-20b and -120b
    MXFP4 ``pp2048 / tg32`` at empty context: DGX Spark (each build) and M2 Ultra, from the
    benchmark files (both with flash attention on). The gpt-oss guide's ``pp2048 / tg128``
    runs form their own comparisons: their decode test differs from the files'.
    """
    llama = llama2_ratios()
    llama = llama[llama["model"] == LLAMA2_Q4]
    llama = llama.assign(flash_attention=[
        flash_attention(d.rsplit("flash attention", 1)[-1]) if "flash attention" in d
        else "unrecorded" for d in llama["detail"]])
    strix = strix_llama2_q4()
    llama = pd.concat([llama, strix[RATIO_COLUMNS + ["flash_attention"]]], ignore_index=True)
    llama = llama[llama["flash_attention"] != "on"]
    files = spark_ratios()
    files = files[files["model"].isin(["gpt-oss-120b", "gpt-oss-20b"])].assign(
        model=lambda d: d["model"] + " MXFP4", flash_attention="on")
    guide = gpt_oss_ratios().assign(model=lambda d: d["model"] + " MXFP4", flash_attention="on")
    out = pd.concat([llama, files[RATIO_COLUMNS + ["flash_attention"]], guide],
                    ignore_index=True)
    out["comparison"] = out["model"] + ", " + out["protocol"]
    return out[["comparison"] + RATIO_COLUMNS + ["flash_attention"]].reset_index(drop=True)


# -- what prefill reached against the peaks: FLOPs per prompt token x tokens/s ----------------

def layer_params(config) -> float:
    """Weights one token multiplies in the transformer layers: its attention projections
    (Q, K, V, O) and its MLP, for a mixture of experts only the ``num_experts_per_tok``
    experts it is routed to, plus the router. The vocabulary tables are left out: the input
    embedding is a lookup, and llama-bench's prompt test computes logits for the prompt's
    last token only. Biases and norms are too small to count. Refuses what it cannot count
    (compressed MLA attention, shared experts)."""
    from .models import head_dim, load_config, require_int

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
    from . import catalog, roofline

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
    from . import roofline

    m = _prefill_model(model)
    work = roofline.step_work(m, prefill=[(depth, prompt_tokens)])
    return work.flops / prompt_tokens


def achieved_flops(model, tokens_per_s: float, prompt_tokens: int, depth: int = 0) -> float:
    """FLOP/s a measured prefill reached: FLOPs per prompt token x prompt tokens per second."""
    from .units import require_positive

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
    from . import roofline

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
    from . import hardware

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
    from .published import VARIANT_READINGS

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
    from . import hardware

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


# -- DGX Spark's arithmetic beside other chips', at the same arithmetic -------------------------

#: What DGX Spark's arithmetic is set against: the datacenter GPU of each of NVIDIA's last three
#: generations, and the two newest GeForce cards, all with figures in data/hardware_specs.csv.
DATACENTER_PEERS = ("A100 SXM", "H100 SXM", "B200")
DESKTOP_PEERS = ("RTX 4090", "RTX 5090")
#: A laptop chip to hold DGX Spark's memory bandwidth against: Apple's M4 Pro, the chip of its
#: MacBook Pro laptops (and the Mac mini) in the row's source.
LAPTOP_PEER = "M4 Pro"


def peak_comparison(chip: str = "DGX Spark",
                    peers: tuple[str, ...] = DATACENTER_PEERS + DESKTOP_PEERS) -> pd.DataFrame:
    """``chip``'s peak as a share of each peer's, arithmetic by arithmetic, where both have a
    figure (dense and 2:4-sparse FP4, FP8, INT8, FP16). Only the same arithmetic compares:
    a headline is often another arithmetic than the next chip's (DGX Spark's petaFLOP is
    sparse FP4, an H100's 989 TFLOPS dense FP16). Each row also gives both chips' peak per
    byte of memory bandwidth (FLOP/byte), and ``peer_class`` (datacenter, desktop) from
    :data:`DATACENTER_PEERS` and :data:`DESKTOP_PEERS`."""
    from . import hardware

    if not peers:
        raise ValueError("peers must name at least one chip")
    own = hardware.chip(chip)
    rows = []
    for arith in ("fp4", "fp8", "int8", "fp16"):
        for sparse in (True, False):
            if not own.has_peak(arith, sparse):
                continue
            mine = own.peak(arith, sparse)
            for name in peers:
                other = hardware.chip(name)
                if not other.has_peak(arith, sparse):
                    continue
                theirs = other.peak(arith, sparse)
                rows.append({
                    "kind": mine.kind, "arithmetic": arith, "sparse": sparse, "peer": name,
                    "peer_class": "datacenter" if name in DATACENTER_PEERS else
                    "desktop" if name in DESKTOP_PEERS else "other",
                    "chip_flops_per_s": mine.flops_per_s, "peer_flops_per_s": theirs.flops_per_s,
                    "chip_derived": mine.derived, "peer_derived": theirs.derived,
                    "share": mine.flops_per_s / theirs.flops_per_s,
                    "chip_flop_per_byte": mine.flops_per_s / own.bandwidth_bytes_per_s,
                    "peer_flop_per_byte": theirs.flops_per_s / other.bandwidth_bytes_per_s})
    if not rows:
        raise ValueError(f"{chip} shares no arithmetic with {', '.join(peers)}")
    return pd.DataFrame(rows)


# -- why the gap narrows with depth: work per prompt token against bytes per generated token --

def _experts(cfg) -> tuple[int, int]:
    """(experts, experts per token) of a mixture of experts; (0, 0) for a dense model."""
    from .models import require_int

    experts = cfg.get("num_local_experts") or cfg.get("num_experts")
    if not experts:
        return 0, 0
    return int(experts), require_int(cfg, "num_experts_per_tok")


def decode_weight_bytes(model, file_bytes: float, file_params: float,
                        expert_format: str = "MXFP4") -> dict:
    """Bytes of weights one generated token reads: its layer weights (:func:`layer_params`)
    and the output layer, which decode runs for every token.

    A dense model's weights are priced at the file's average bytes per weight
    (``file_bytes / file_params``, e.g. llama-bench's model size over its parameter count).
    A mixture of experts stores its experts in ``expert_format`` (gpt-oss: MXFP4) and the
    rest (attention, router, vocabulary tables) at whatever the file has left per weight;
    the file's average would price those at nearly the experts' bits. Returns the bytes and
    both prices per weight."""
    from . import catalog
    from .models import bits_per_weight, require_int
    from .units import require_positive

    size = require_positive("file_bytes", file_bytes)
    n = require_positive("file_params", file_params)
    cfg = catalog.config(model) if isinstance(model, str) else dict(model)
    hidden = require_int(cfg, "hidden_size")
    out_layer = require_int(cfg, "vocab_size") * hidden
    layers = require_int(cfg, "num_hidden_layers")
    experts, routed = _experts(cfg)
    expert = 3 * hidden * require_int(cfg, "intermediate_size")
    if not experts:
        bpw = size / n
        return {"weight_bytes": (layer_params(cfg) + out_layer) * bpw,
                "expert_bytes_per_weight": None, "other_bytes_per_weight": bpw}
    expert_bpw = bits_per_weight(expert_format) / 8
    all_experts = layers * experts * expert
    if all_experts >= n or all_experts * expert_bpw >= size:
        raise ValueError(f"file_bytes {size:,.0f} and file_params {n:,.0f} leave nothing for "
                         f"the non-expert weights of {cfg.get('_name', model)!r}")
    other_bpw = (size - all_experts * expert_bpw) / (n - all_experts)
    active_experts = layers * routed * expert
    other = layer_params(cfg) - active_experts + out_layer
    return {"weight_bytes": active_experts * expert_bpw + other * other_bpw,
            "expert_bytes_per_weight": expert_bpw, "other_bytes_per_weight": other_bpw}


def bench_decode_weight_bytes(model: str = "gpt-oss-120b") -> dict:
    """:func:`decode_weight_bytes` of a model of the benchmark files, priced from the model
    size (GiB) and parameter count llama-bench prints there."""
    from .units import GiB

    df = spark_bench()
    df = df[df["model"].map(_short_model) == model]
    if df.empty:
        raise ValueError(f"no runs of model {model!r} in the benchmark files")
    row = df.iloc[0]
    return decode_weight_bytes(model, float(row["model_size_GiB"]) * GiB,
                               float(row["model_params_B"]) * 1e9)


def depth_growth(model: str, prompt_tokens: int, depth: int, weight_bytes: float,
                 kv_dtype_bytes: float = 2.0) -> dict:
    """How much a prompt token's FLOPs and a generated token's bytes grow from empty
    context to ``depth`` tokens, by the roofline's count.

    Prefill: :func:`prefill_flops_per_token` at ``depth`` over at 0. Decode: (weights + cache
    at ``depth``) over weights, ``weight_bytes`` being what a generated token reads of the
    weights (:func:`decode_weight_bytes`), the cache at ``kv_dtype_bytes`` per element
    (llama-bench's default f16 cache: 2), windows honoured.
    """
    from . import catalog
    from .kvcache import kv_cache_bytes
    from .units import require_positive

    if isinstance(depth, bool) or not isinstance(depth, (int, np.integer)) or depth < 0:
        raise ValueError(f"depth must be a whole number of tokens >= 0, got {depth!r}")
    d = int(depth)
    weights = require_positive("weight_bytes", weight_bytes)
    cfg = catalog.config(model) if isinstance(model, str) else dict(model)
    cache = kv_cache_bytes(cfg, d, 1, kv_dtype_bytes)
    return {"prefill_flops_ratio": prefill_flops_per_token(cfg, prompt_tokens, d)
            / prefill_flops_per_token(cfg, prompt_tokens, 0),
            "decode_bytes_ratio": (weights + cache) / weights,
            "weight_bytes": weights, "cache_bytes": cache}


def tokens_per_expert(model: str, prompt_tokens: int) -> float:
    """Prompt tokens each expert of a mixture of experts multiplies, on average, in one
    prompt: tokens x experts per token / experts (a dense model: every token)."""
    from . import catalog
    from .models import require_int

    if isinstance(prompt_tokens, bool) or not isinstance(prompt_tokens, int) or prompt_tokens < 1:
        raise ValueError(f"prompt_tokens must be a whole number >= 1, got {prompt_tokens!r}")
    cfg = catalog.config(model)
    experts = cfg.get("num_local_experts") or cfg.get("num_experts")
    if not experts:
        return float(prompt_tokens)
    return prompt_tokens * require_int(cfg, "num_experts_per_tok") / int(experts)
