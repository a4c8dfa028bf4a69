"""The prefill / decode ratio of every published run: how much faster a machine ingests
than it writes.

Large where FLOPs are plentiful and bandwidth is not (DGX Spark), small where bandwidth is
plentiful and FLOPs are not (Apple's Ultra chips). Sources, all in ``data/``: the benchmark
file (:mod:`napkin.phases.bench`), Strix Halo runs (``strix_halo_llamacpp``), the gpt-oss guide
(``gpt_oss_llamacpp``), chapter 1's Llama-2-7B scoreboards, and a live run on this machine.
Chapter 2's ratio chart and like-for-like table.
"""

from __future__ import annotations

import re

import numpy as np
import pandas as pd

from .. import tables
from .bench import depth_pairs

#: The one model and test every family of machines in ``data/`` ran (Llama-2-7B Q4_0,
#: ``pp512 / tg128``): the like-for-like comparison.
LLAMA2_Q4 = "Llama-2-7B Q4_0"
_LLAMA2 = re.compile(r"llama[- ]?2[- ]7b", re.I)
RATIO_COLUMNS = ["machine", "family", "model", "protocol", "detail", "pp_tok_per_s",
                 "tg_tok_per_s", "ratio", "confidence", "source_url"]


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
    from ..measure import machine as live_machine

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


#: The like-for-like runs on CUDA chips with a dense INT8 figure in ``data/hardware_specs.csv``
#: (the arithmetic of llama.cpp's Q4_0 matmuls on CUDA), as the scoreboard names the machine,
#: and the chip. Only the CUDA backend's runs count (a Vulkan run multiplies otherwise). The
#: A100 and H100 runs are left out, by one rule: their scoreboard copies disagree on, or do
#: not say, PCIe or SXM, whose bandwidths and peaks differ (chapter 1).
EQUATION_CHIPS = {"DGX Spark (GB10)": "DGX Spark", "RTX 3090": "RTX 3090",
                  "RTX 4090": "RTX 4090", "RTX 5090": "RTX 5090",
                  "RTX 6000 Ada": "RTX 6000 Ada", "RTX PRO 6000 Blackwell": "RTX PRO 6000 Blackwell"}
#: The model of the like-for-like test, as the catalog names it.
EQUATION_MODEL = "Llama-2-7B"


def equation_gap(same: pd.DataFrame | None = None) -> pd.DataFrame:
    """Chapter 2's equation, gap = (b / 2) F / BW, beside the gap each like-for-like CUDA run
    measured (Llama-2-7B Q4_0 ``pp512 / tg128``, :func:`like_for_like`), for the runs of
    :data:`EQUATION_CHIPS`: ``b`` the bytes of a Q4_0 weight, ``F`` the chip's dense INT8
    figure (``peak_origin`` says whether its maker states it), ``BW`` its bandwidth.

    The equation's gap over the measured one, ``over``, is exactly the share of its
    bandwidth decode reached (``decode_share``: tokens/s x bytes a token reads / BW) over the
    share of its peak prefill reached (``prefill_share``: tokens/s x 2 FLOPs a weight / F),
    the weights counted the equation's way (all of them, attention left out): the equation
    overstates a gap exactly where decode gets closer to its roof than prefill does."""
    from .. import catalog, hardware, models

    same = like_for_like() if same is None else same
    runs = same[(same["comparison"] == f"{LLAMA2_Q4}, pp512 / tg128")
                & same["machine"].isin(list(EQUATION_CHIPS))
                & same["detail"].str.startswith("CUDA")]
    b = models.bits_per_weight("Q4_0") / 8
    params = catalog.params(EQUATION_MODEL)
    rows = []
    for _, r in runs.iterrows():
        chip = hardware.chip(EQUATION_CHIPS[r["machine"]])
        peak = chip.peak("int8")
        bw = chip.bandwidth_bytes_per_s
        rows.append({"machine": r["machine"], "chip": chip.name, "backend": r["detail"],
                     "peak_origin": peak.origin, "measured": r["ratio"],
                     "predicted": b / 2 * peak.flops_per_s / bw,
                     "decode_share": r["tg_tok_per_s"] * b * params / bw,
                     "prefill_share": r["pp_tok_per_s"] * 2 * params / peak.flops_per_s})
    out = pd.DataFrame(rows)
    return out.assign(over=out["predicted"] / out["measured"])
