"""How far the first-token method can be trusted: the method applied to published prefill
runs of other models it did not see, predicted over measured.

Targets: the DGX Spark / M2 Ultra depth sweeps of the llama.cpp benchmark file (and its
copies), the gpt-oss guide's runs, and Strix Halo's runs of a dense 70B model of the Llama 3
architecture at Q4_K_M (the coding agent's own shape and nearly its format). Each is
predicted from the same machine's reference runs (the median, as the ranking uses; the range
as low and high), of the same GPU configuration where the target names one.
"""

from __future__ import annotations

import re

import pandas as pd

from .. import hardware, phases, tables
from .reference import prefill_runs
from .estimate import prompt_flops

#: ``gpt_oss_llamacpp.csv`` hardware -> the chip its reference runs carry in
#: :func:`prefill_runs`. The 36 GB M4 Max has the 32-core GPU (``machine_prices.csv``).
GPT_OSS_NAMES = {
    "RTX 5090 32GB": "RTX 5090", "RTX 4090 24GB": "RTX 4090", "RTX 3090 24GB": "RTX 3090",
    "RTX 4080 SUPER 16GB": "RTX 4080 SUPER", "RTX 5080 16GB": "RTX 5080",
    "RTX 5070 Ti 16GB": "RTX 5070 Ti", "RTX 3060 12GB": "RTX 3060 12GB",
    "RTX PRO 6000 96GB": "RTX PRO 6000 Blackwell", "Apple M3 Ultra 80c 512GB": "M3 Ultra",
    "Apple M2 Ultra 76c 192GB": "M2 Ultra", "Apple M4 Max 36GB": "M4 Max (32-core GPU)",
    "Apple M1 Max 64GB": "M1 Max", "Apple M1 Pro 32GB": "M1 Pro",
}
#: Benchmarked models -> the architecture in ``data/models`` that costs them. The file's
#: Qwen2.5-Coder-7B has Qwen2.5-7B's shape (llama-bench counts the same 7.62 B parameters);
#: Shisa V2 70B is a fine-tune of the Llama 3 70B architecture.
VALIDATION_MODELS = {"gpt-oss-20b": "gpt-oss-20b", "gpt-oss-120b": "gpt-oss-120b",
                     "Qwen2.5-Coder-7B": "Qwen2.5-7B-Instruct",
                     "Shisa V2 70B": "Llama-3.3-70B"}
_CORES = re.compile(r" (\d+)c\b")
#: The vendor of a target run's GPU the specs table does not list (GeForce cards).
_BACKEND_VENDOR = {"Metal": "Apple", "CUDA": "NVIDIA"}


def _bench_runs() -> pd.DataFrame:
    sb = phases.spark_bench()
    sb = sb[sb["phase"] == phases.PREFILL]
    return pd.DataFrame({
        "machine": sb["machine"], "chip": sb["machine"],
        "model": sb["model"].map(lambda s: str(s).split(" (")[0]), "test": sb["test"],
        "depth_tokens": sb["context_depth_tokens"].astype(int),
        "measured_tok_per_s": sb["throughput_tok_per_s"].astype(float),
        "backend": sb["backend"].map(lambda b: "Metal" if str(b).startswith("Metal") else b),
        "source": "benchmark file, build " + sb["build"].astype(str),
        "confidence": sb["confidence"], "source_url": sb["source_url"]})


def _guide_runs() -> pd.DataFrame:
    g = tables.load("gpt_oss_llamacpp")
    g = g[g["test"].str.fullmatch(r"pp\d+") & g["hardware"].isin(GPT_OSS_NAMES)]
    return pd.DataFrame({
        "machine": g["hardware"], "chip": g["hardware"].map(GPT_OSS_NAMES),
        "model": g["model"], "test": g["test"], "depth_tokens": 0,
        "measured_tok_per_s": g["throughput_tok_per_s"].astype(float),
        "backend": g["backend"], "source": "gpt-oss guide", "confidence": g["confidence"],
        "source_url": g["source_url"]})


def _strix_runs() -> pd.DataFrame:
    s = tables.load("strix_halo_llamacpp")
    s = s[s["test"].str.fullmatch(r"pp\d+") & s["model"].str.startswith("Shisa V2 70B")]
    return pd.DataFrame({
        "machine": "Strix Halo, " + s["backend"], "chip": "Strix Halo",
        "model": "Shisa V2 70B", "test": s["test"], "depth_tokens": 0,
        "measured_tok_per_s": s["throughput_tok_per_s"].astype(float),
        "backend": s["backend"].map(lambda b: "Vulkan" if "Vulkan" in b else "ROCm"),
        "source": "Strix Halo benchmarks, " + s["backend"] + " " + s["quant"],
        "confidence": s["confidence"], "source_url": s["source_url"]})


def target_runs() -> pd.DataFrame:
    """Published prefill runs of other models on machines that have reference runs, with
    ``gpu_cores`` where the run names its GPU configuration."""
    df = pd.concat([_bench_runs(), _guide_runs(), _strix_runs()], ignore_index=True)
    df = df[df["model"].isin(VALIDATION_MODELS)].reset_index(drop=True)
    df["gpu_cores"] = [float(m.group(1)) if (m := _CORES.search(str(n))) else float("nan")
                       for n in df["machine"]]
    return df


def _reference_rates(runs: pd.DataFrame, chip: str, cores: float) -> pd.Series:
    mine = runs[runs["chip"] == chip]
    same = mine[mine["gpu_cores"] == cores]
    return (same if len(same) else mine)["flops_per_s"]


def extrapolation_check() -> pd.DataFrame:
    """The first-token method, applied to runs it did not see: the machine's FLOP/s on its
    reference runs (median, as the ranking uses; the range as low and high) times the target
    run's prompt tokens over their FLOPs (:func:`napkin.buying.estimate.prompt_flops`, after
    ``depth_tokens`` already cached), against the rate the run measured. ``ratio`` is
    predicted over measured: above 1 the method is too optimistic (the first token would
    come later than it says)."""
    runs = prefill_runs()
    df = target_runs()
    df = df[df["chip"].isin(set(runs["chip"]))].reset_index(drop=True)
    rates = [_reference_rates(runs, c, k) for c, k in zip(df["chip"], df["gpu_cores"])]
    n = df["test"].str[2:].astype(int)
    df["prompt_tokens"] = n
    df["architecture"] = df["model"].map(VALIDATION_MODELS)
    df["moe"] = df["model"].map(phases.is_moe)
    known = hardware.chips()
    df["vendor"] = [known[c].vendor if c in known else _BACKEND_VENDOR[b]
                    for c, b in zip(df["chip"], df["backend"])]
    df["reference_runs"] = [len(r) for r in rates]
    df["prefill_flops"] = [prompt_flops(a, int(t), int(d)) for a, t, d in
                           zip(df["architecture"], n, df["depth_tokens"])]
    for col, how in (("predicted_tok_per_s", "median"), ("predicted_low_tok_per_s", "min"),
                     ("predicted_high_tok_per_s", "max")):
        df[col] = n * pd.Series([getattr(r, how)() for r in rates]) / df["prefill_flops"]
    df["ratio"] = df["predicted_tok_per_s"] / df["measured_tok_per_s"]
    df["measured_in_range"] = df["measured_tok_per_s"].between(
        df["predicted_low_tok_per_s"], df["predicted_high_tok_per_s"])
    return df


def _spread(r: pd.Series) -> dict:
    return {"runs": len(r), "median": float(r.median()), "q25": float(r.quantile(0.25)),
            "q75": float(r.quantile(0.75)), "low": float(r.min()), "high": float(r.max())}


GROUPS = {"all": lambda d, deep: d.index == d.index,
          "dense": lambda d, deep: ~d["moe"],
          "MoE": lambda d, deep: d["moe"],
          "Metal (Apple)": lambda d, deep: d["backend"] == "Metal",
          "CUDA (NVIDIA)": lambda d, deep: d["backend"] == "CUDA",
          "Strix Halo (AMD)": lambda d, deep: d["vendor"] == "AMD",
          "dense, deepest context": lambda d, deep: ~d["moe"] & deep}


def extrapolation_summary(check: pd.DataFrame | None = None) -> pd.DataFrame:
    """Predicted over measured, summarised: over every run, by model kind, by backend, and
    for the dense model at the deepest context measured (the case nearest a long prompt)."""
    df = extrapolation_check() if check is None else check
    ctx = df["depth_tokens"] + df["prompt_tokens"]
    deep = ctx == ctx[~df["moe"]].max()
    rows = [{"group": k, **_spread(df[pick(df, deep)]["ratio"])} for k, pick in GROUPS.items()]
    return pd.DataFrame([r for r in rows if r["runs"]])


def ttft_check_band(ranked: pd.DataFrame, check: pd.DataFrame | None = None) -> pd.DataFrame:
    """Each machine's median first-token estimate scaled by the smallest and largest
    predicted/measured ratio :func:`extrapolation_check` found for dense models on machines
    of its vendor: how long the first token would take if the method erred here as it did
    there (a ratio above 1 means the method was too fast, so the real wait is longer). NaN
    for a vendor the check has no dense runs of."""
    df = extrapolation_check() if check is None else check
    err = df[~df["moe"]].groupby("vendor")["ratio"].agg(["min", "max"])
    lo = ranked["vendor"].map(err["min"])
    hi = ranked["vendor"].map(err["max"])
    return ranked.assign(ttft_check_low_s=ranked["ttft_mid_s"] * lo,
                         ttft_check_high_s=ranked["ttft_mid_s"] * hi)
