"""The llama.cpp benchmark file's depth sweeps: DGX Spark and M2 Ultra, both phases, every depth.

llama-bench reports prompt processing (``ppN``: N prompt tokens in one pass) and token
generation (``tgN``: N tokens, one per pass) for the same weights on the same machine, here at
every context depth the file ran. Rows come from the benchmark file of the llama.cpp repository
and its copies, with the M2 Ultra file run with the same command (``spark_bench_llamacpp``).
Chapter 2 reads the essay's DGX Spark figures here; chapter 8 extrapolates from them.
"""

from __future__ import annotations

import re

import numpy as np
import pandas as pd

from .. import essay, tables

#: ``source_kind`` of rows read from the llama.cpp benchmark file or a copy of it.
BENCH_FILE = "benches file"
PREFILL, DECODE = "prefill", "decode"


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


def long_prompt_tokens() -> int:
    """The reader's long prompt: the essay's coding agent pasting files (the essay's claim
    that chapter 8's preset reads too)."""
    return int(essay.claim("coding_agent_prompt"))


def wait_seconds(depth_tokens, pp_tok_per_s, prompt_tokens: int, chunk: int = 2048) -> tuple:
    """Seconds to prefill ``prompt_tokens`` from an empty context, from ``ppN`` rates measured
    at several depths: a ``pp{chunk}`` run at depth ``d`` times the tokens ``d`` to
    ``d + chunk``, so its seconds per token stand at ``d + chunk / 2``, and between those points
    they are read linearly. Past the deepest point the deepest rate is held, a floor for those
    tokens since prefill slows with depth. Returns (seconds, tokens past the deepest point)."""
    order = np.argsort(np.asarray(depth_tokens, dtype=float))
    at = np.asarray(depth_tokens, dtype=float)[order] + chunk / 2
    per_token = 1 / np.asarray(pp_tok_per_s, dtype=float)[order]
    tokens = np.arange(prompt_tokens) + 0.5
    return float(np.interp(tokens, at, per_token).sum()), max(0, int(prompt_tokens - at[-1]))


def wait_table(prompt_tokens: int | None = None, answer_tokens: int = 1000,
               model: str = "gpt-oss-120b") -> pd.DataFrame:
    """What a reader waits on each machine of the depth sweeps (the newest build of each), for
    one ``prompt_tokens`` prompt of ``model`` and its ``answer_tokens`` answer: the prefill
    (:func:`wait_seconds`), then the answer at the deepest measured decode rate (a floor for
    a deeper context), beside the empty-context rates a spec sheet's reader compares;
    ``prompt_tokens`` defaults to :func:`long_prompt_tokens`."""
    prompt_tokens = long_prompt_tokens() if prompt_tokens is None else prompt_tokens
    pairs = depth_pairs(model)
    rows = []
    for machine, runs in pairs.groupby("machine"):
        runs = runs[runs["build"] == runs["build"].max()].sort_values("context_depth_tokens")
        first, deepest = runs.iloc[0], runs.iloc[-1]
        prefill_s, beyond = wait_seconds(runs["context_depth_tokens"], runs["pp_tok_per_s"],
                                         prompt_tokens)
        answer_s = answer_tokens / deepest["tg_tok_per_s"]
        rows.append({"machine": machine, "build": int(first["build"]), "model": model,
                     "prompt_tokens": prompt_tokens, "answer_tokens": answer_tokens,
                     "pp_empty_tok_per_s": first["pp_tok_per_s"],
                     "tg_empty_tok_per_s": first["tg_tok_per_s"],
                     "prefill_s": prefill_s, "tokens_past_deepest": beyond,
                     "tg_deepest_tok_per_s": deepest["tg_tok_per_s"], "answer_s": answer_s,
                     "total_s": prefill_s + answer_s, "source_url": first["source_url"]})
    return pd.DataFrame(rows)


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


def mirror_table(depth: int = 0) -> pd.DataFrame:
    """M2 Ultra against DGX Spark, phase by phase, for every model both files ran.

    The DGX Spark build closest to the M2 Ultra run's build is used, so the two differ in
    hardware, not in llama.cpp. The first row is the memory bandwidth both vendors state.
    """
    from .. import hardware

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
