"""Published llama.cpp decode results, each set against its own napkin ceiling.

Three families of machines from ``data/``: Apple Silicon (discussion #4167),
discrete GPUs (the CUDA, ROCm and Vulkan scoreboards) and CPUs (issues and
PRs). Each function returns one tidy frame with the same columns, so a chapter
can stack them on one chart:

    machine, family, quant, bandwidth_bytes_per_s, bytes_per_token,
    tokens_per_s, ceiling_tokens_per_s, fraction_of_ceiling, confidence, source_url
"""

from __future__ import annotations

import pandas as pd

from . import hardware, models, tables
from .units import GB

__all__ = ["all_machines", "apple", "COLUMNS", "cpus", "ESSAY_CHIPS", "essay_table",
           "fixed_cost_fit", "gpus", "llama2_7b_bytes_per_token", "llama2_7b_embedding_bytes",
           "ultra_uplift", "variant_readings", "VARIANT_READINGS"]

COLUMNS = ["machine", "family", "quant", "bandwidth_bytes_per_s", "bytes_per_token",
           "tokens_per_s", "ceiling_tokens_per_s", "fraction_of_ceiling", "confidence",
           "source_url"]


def _finish(df: pd.DataFrame) -> pd.DataFrame:
    df = df.copy()
    df["ceiling_tokens_per_s"] = df["bandwidth_bytes_per_s"] / df["bytes_per_token"]
    df["fraction_of_ceiling"] = df["tokens_per_s"] / df["ceiling_tokens_per_s"]
    extra = [c for c in df.columns if c not in COLUMNS]
    return df[COLUMNS + extra].reset_index(drop=True)


def llama2_7b_bytes_per_token(quant: str) -> float:
    """Bytes a Llama-2-7B decode step reads: the tensor data llama-bench reports."""
    return models.gguf_size_bytes(quant, kind="tensors")


def llama2_7b_embedding_bytes(quant: str) -> float:
    """Bytes of Llama-2-7B's token embedding table in ``quant``: counted in llama-bench's
    tensor data, though a decode step looks up one row of it. llama.cpp stores it in the
    file's own format (Q4_0's tensor data add up exactly so; tests/test_napkin.py)."""
    from . import catalog

    cfg = catalog.config("Llama-2-7B")
    return cfg["vocab_size"] * cfg["hidden_size"] * models.bits_per_weight(quant) / 8


def apple(test: str = "tg128", quants: tuple[str, ...] = ("F16", "Q8_0", "Q4_0")) -> pd.DataFrame:
    """Apple M1..M4 GPUs on Llama-2-7B, bandwidth from the chip specs (Apple's figures)."""
    df = tables.load("apple_silicon_llama2_7b")
    df = df[(df["test"] == test) & df["quant"].isin(quants)].copy()
    names = [hardware.apple_chip_name(c, g) for c, g in zip(df["chip"], df["gpu_cores"])]
    chips = hardware.chips()
    df["spec_chip"] = names
    df["machine"] = [f"{c} {int(g)}-core GPU" for c, g in zip(df["chip"], df["gpu_cores"])]
    df["family"] = "Apple Silicon"
    df["bandwidth_bytes_per_s"] = [chips[n].bandwidth_bytes_per_s for n in names]
    df["bytes_per_token"] = [llama2_7b_bytes_per_token(q) for q in df["quant"]]
    df["tokens_per_s"] = df["throughput_tok_per_s"].astype(float)
    return _finish(df[["machine", "family", "quant", "bandwidth_bytes_per_s", "bytes_per_token",
                       "tokens_per_s", "confidence", "source_url", "chip", "gpu_cores",
                       "spec_chip"]])


def fixed_cost_fit(df: pd.DataFrame | None = None, fit: tuple[str, str] = ("F16", "Q8_0"),
                   test: str = "Q4_0") -> pd.DataFrame:
    """Why fewer bytes per weight reach a smaller share of the ceiling, tested per chip.

    A token's time is split as ``t = bytes / effective bandwidth + fixed cost``: a line
    through each chip's two ``fit`` formats (two points, so exact) gives both, and predicts
    the ``test`` format's time. If unpacking 4-bit blocks cost extra time per byte, Q4_0
    would take longer than the line says; if a fixed cost per token (launches,
    synchronisation, sampling) is what weighs, the line predicts it. One row per machine
    run at all three formats, times in seconds: ``effective_share`` (effective over paper
    bandwidth), ``fixed_s``, ``predicted_s`` and ``measured_s`` of the test format, their
    ``residual_s``, and each format's time beyond reading its bytes at paper bandwidth
    (``beyond_<format>_s``).
    """
    df = apple() if df is None else df
    formats = (*fit, test)
    if len(set(formats)) != 3:
        raise ValueError(f"fit {fit!r} and test {test!r} must be three different formats")
    missing = [q for q in formats if q not in set(df["quant"])]
    if missing:
        raise ValueError(f"no runs at {', '.join(missing)} to fit or test")
    rows = []
    for machine, runs in df.groupby("machine", sort=False):
        runs = runs.drop_duplicates("quant").set_index("quant")
        if not set(formats) <= set(runs.index):
            continue
        t = 1 / runs["tokens_per_s"]
        b = runs["bytes_per_token"]
        bw = runs["bandwidth_bytes_per_s"].iloc[0]
        slope = (t[fit[0]] - t[fit[1]]) / (b[fit[0]] - b[fit[1]])
        fixed = t[fit[1]] - slope * b[fit[1]]
        predicted = slope * b[test] + fixed
        rows.append({"machine": machine, "chip": runs["chip"].iloc[0],
                     "bandwidth_bytes_per_s": bw, "effective_share": 1 / slope / bw,
                     "fixed_s": fixed, "predicted_s": predicted, "measured_s": t[test],
                     "residual_s": t[test] - predicted}
                    | {f"beyond_{q}_s": t[q] - b[q] / bw for q in formats})
    if not rows:
        raise ValueError(f"no machine was run at all of {', '.join(formats)}")
    return pd.DataFrame(rows)


def gpus(test: str = "tg128") -> pd.DataFrame:
    """Discrete GPUs from the scoreboards (no flash attention), where bandwidth is sourced."""
    df = tables.load("gpu_llama2_7b_q4_0")
    df = df[(df["test"] == test) & (df["flash_attention"].astype(str) == "0")]
    df = df[df["memory_bandwidth_GB_per_s"].notna()].copy()
    df["machine"] = df["gpu"] + " (" + df["backend"] + ")"
    df["family"] = "GPU (" + df["backend"] + ")"
    df["bandwidth_bytes_per_s"] = df["memory_bandwidth_GB_per_s"].astype(float) * GB
    df["bytes_per_token"] = llama2_7b_bytes_per_token("Q4_0")
    df["tokens_per_s"] = df["throughput_tok_per_s"].astype(float)
    df["quant"] = "Q4_0"
    df["variant_note"] = [_variant_note(g) for g in df["gpu"]]
    return _finish(df[["machine", "family", "quant", "bandwidth_bytes_per_s", "bytes_per_token",
                       "tokens_per_s", "confidence", "source_url", "backend", "variant_note",
                       "llama_cpp_commit"]])


def _variant_note(gpu: str) -> str:
    """For a run whose variant is in doubt: each reading and its bandwidth ("" otherwise)."""
    if gpu not in VARIANT_READINGS:
        return ""
    return "copies of the scoreboard disagree: " + " or ".join(
        f"{n} ({hardware.chip(n).bandwidth_bytes_per_s / GB:,.0f} GB/s)"
        for n in VARIANT_READINGS[gpu])


#: Scoreboard rows whose variant the copies of the scoreboard disagree on, and the chip (in
#: ``hardware_specs.csv``) of each reading. One copy of the CUDA scoreboard labels this run
#: "H100 80 GB (HBM3, so SXM5 ...)", another "H100 PCIe" (see the row's note).
VARIANT_READINGS = {"H100 80GB (HBM3 => SXM5, see note)": ("H100 SXM", "H100 PCIe")}


def variant_readings(test: str = "tg128", flash_attention: str = "0") -> pd.DataFrame:
    """Every scoreboard run whose GPU variant is in doubt, once per reading of it.

    :func:`gpus` keeps one row per run, at the bandwidth the scoreboard table assumed; this
    shows each reading side by side, with the bandwidth of that variant from
    ``hardware_specs.csv``, so a chapter states both rather than one as fact. Columns: the
    usual ones plus ``gpu`` (as the scoreboard names it), ``reading`` (the spec chip) and
    ``bandwidth_source``.
    """
    df = tables.load("gpu_llama2_7b_q4_0")
    df = df[(df["test"] == test) & (df["flash_attention"].astype(str) == str(flash_attention))
            & df["gpu"].isin(list(VARIANT_READINGS))]
    if df.empty:
        raise ValueError(f"no {test} run with flash_attention {flash_attention!r} of a GPU "
                         f"whose variant is in doubt ({', '.join(VARIANT_READINGS)})")
    rows = []
    for _, r in df.iterrows():
        for name in VARIANT_READINGS[r["gpu"]]:
            chip = hardware.chip(name)
            rows.append({"machine": f"{r['gpu']} read as {name}",
                         "family": "GPU (" + r["backend"] + ")", "quant": "Q4_0", "bandwidth_bytes_per_s": chip.bandwidth_bytes_per_s,
                         "bytes_per_token": llama2_7b_bytes_per_token("Q4_0"),
                         "tokens_per_s": float(r["throughput_tok_per_s"]),
                         "confidence": r["confidence"], "source_url": r["source_url"],
                         "gpu": r["gpu"], "reading": name,
                         "bandwidth_source": chip.source("memory_bandwidth_GB_per_s")})
    return _finish(pd.DataFrame(rows))


def cpus() -> pd.DataFrame:
    """CPU decode runs; bytes per token estimated as parameters x bits per weight / 8."""
    df = tables.load("cpu_llamacpp").copy()
    df["machine"] = df["cpu"] + ", " + df["model"] + " " + df["quant"]
    df["family"] = "CPU"
    df["bandwidth_bytes_per_s"] = df["memory_bandwidth_GB_per_s"].astype(float) * GB
    df["bytes_per_token"] = df["model_params_B"].astype(float) * 1e9 * \
        df["bits_per_weight"].astype(float) / 8
    df["tokens_per_s"] = df["throughput_tok_per_s"].astype(float)
    return _finish(df[["machine", "family", "quant", "bandwidth_bytes_per_s", "bytes_per_token",
                       "tokens_per_s", "confidence", "source_url", "bandwidth_kind",
                       "bits_per_weight_basis", "date"]])


def all_machines(test: str = "tg128") -> pd.DataFrame:
    """Apple (Q4_0), GPUs and CPUs stacked: the napkin against every published run."""
    return pd.concat([apple(test, ("Q4_0",)), gpus(test), cpus()], ignore_index=True)


#: The four chips of the essay's table, at the GPU core counts whose tg128 it quotes.
ESSAY_CHIPS = (("M1", "Max", 32), ("M2", "Max", 38), ("M1", "Ultra", 64), ("M2", "Ultra", 76))


def essay_table() -> pd.DataFrame:
    """The essay's Max/Ultra table, recomputed with its own model size (the file on disk)."""
    file_bytes = models.gguf_size_bytes("Q4_0", kind="file")
    df = apple("tg128", ("Q4_0",))
    rows = []
    for generation, tier, cores in ESSAY_CHIPS:
        match = df[(df["chip"] == f"{generation} {tier}") & (df["gpu_cores"] == cores)]
        if len(match) != 1:
            raise ValueError(f"expected one tg128 Q4_0 row for {generation} {tier} {cores}-core")
        rows.append(match.iloc[0].to_dict() | {"generation": generation, "tier": tier})
    out = pd.DataFrame(rows)
    out["bytes_per_token"] = file_bytes
    return _finish(out)


def ultra_uplift(table: pd.DataFrame) -> pd.DataFrame:
    """Per generation: what doubling paper bandwidth (Max -> Ultra) bought in tokens/s."""
    wide = table.pivot_table(index="generation", columns="tier",
                             values=["tokens_per_s", "bandwidth_bytes_per_s"])
    return pd.DataFrame({
        "bandwidth_ratio": wide["bandwidth_bytes_per_s"]["Ultra"] / wide["bandwidth_bytes_per_s"]["Max"],
        "speed_ratio": wide["tokens_per_s"]["Ultra"] / wide["tokens_per_s"]["Max"],
    })
