"""The reference runs: every published llama.cpp run of one model, Llama-2-7B at Q4_0, on a
machine's GPU. Their prompt-processing rate (pp512), turned into FLOP/s, is what the first
token is estimated from; their decode rate (tg128) is each machine's own decode discount.

A run read second-hand (``confidence`` low) is left out for a machine that has first-hand
runs (high); a machine with none keeps what there is. A run whose GPU variant the sources
dispute counts once for every variant it may be, and says so.
"""

from __future__ import annotations

import pandas as pd

from .. import hardware, phases, tables
from . import roofs

REFERENCE_MODEL, REFERENCE_FORMAT, REFERENCE_TOKENS = "Llama-2-7B", "Q4_0", 512
#: Chip names in the CUDA/Vulkan scoreboard -> the book's chip names.
SCOREBOARD_NAMES = {
    "H100 80GB (HBM3 => SXM5, see note)": ("H100 SXM", "H100 PCIe"),
    "A100 80GB (PCIe or SXM not stated)": ("A100 SXM", "A100 PCIe"),
    "DGX Spark (GB10)": ("DGX Spark",),
    "Strix Halo (Radeon 8060S iGPU, Ryzen AI Max+ 395)": ("Strix Halo",),
}
DISPUTED = {
    "H100 80GB (HBM3 => SXM5, see note)": "one copy of the scoreboard labels this run SXM, "
                                          "another PCIe: shown as both",
    "A100 80GB (PCIe or SXM not stated)": "the scoreboard does not say PCIe or SXM: shown "
                                          "as both",
}
COLUMNS = ["chip", "run", "run_backend", "backend", "gpu_cores", "note", "run_id",
           "confidence", "tok_per_s", "source_url"]


def reference_flops_per_token() -> float:
    """FLOPs per prompt token of the reference run: 2 per layer weight plus the prompt's
    attention (:func:`napkin.phases.prefill_flops_per_token`; the embedding is a lookup and
    llama-bench computes logits for the last prompt token only)."""
    return phases.prefill_flops_per_token(REFERENCE_MODEL, REFERENCE_TOKENS)


def backend_group(backend: str) -> str:
    """A run's backend as the book groups it: ``"Vulkan AMDVLK, ..."`` -> ``"Vulkan"``,
    ``"HIP/ROCm (rocWMMA ...)"`` -> ``"ROCm"``."""
    b = str(backend)
    for name, marks in (("Vulkan", ("Vulkan",)), ("ROCm", ("ROCm", "HIP")),
                        ("Metal", ("Metal",)), ("CUDA", ("CUDA",))):
        if any(m in b for m in marks):
            return name
    return b


def _apple(test: str) -> pd.DataFrame:
    df = tables.load("apple_silicon_llama2_7b")
    df = df[(df["quant"] == REFERENCE_FORMAT) & (df["test"] == test)]
    pairs = list(zip(df["chip"], df["gpu_cores"]))
    name = {p: hardware.apple_chip_name(*p) for p in set(pairs)}
    return pd.DataFrame({
        "chip": [name[p] for p in pairs],
        "run": [f"{c} {int(g)}-core GPU, Metal" for c, g in zip(df["chip"], df["gpu_cores"])],
        "run_backend": "Metal", "gpu_cores": df["gpu_cores"].astype(float), "note": "",
        "confidence": df["confidence"], "tok_per_s": df["throughput_tok_per_s"].astype(float),
        "source_url": df["source_url"]})


def _scoreboard(test: str, flash_attention: tuple[str, ...]) -> pd.DataFrame:
    df = tables.load("gpu_llama2_7b_q4_0")
    df = df[(df["test"] == test) & df["flash_attention"].astype(str).isin(flash_attention)]
    rows = []
    for i, r in df.iterrows():
        for name in SCOREBOARD_NAMES.get(r["gpu"], (r["gpu"],)):
            rows.append({"chip": name, "run": f"{r['gpu']}, {r['backend']}, flash attention "
                                              f"{r['flash_attention']}",
                         "run_backend": r["backend"], "gpu_cores": float("nan"),
                         "note": DISPUTED.get(r["gpu"], ""), "run_id": f"scoreboard {i}",
                         "confidence": r["confidence"],
                         "tok_per_s": float(r["throughput_tok_per_s"]),
                         "source_url": r["source_url"]})
    return pd.DataFrame(rows)


def _strix(test: str) -> pd.DataFrame:
    df = tables.load("strix_halo_llamacpp")
    df = df[(df["test"] == test) & (df["quant"] == REFERENCE_FORMAT) &
            df["model"].str.contains("Llama-2-7B|Llama 2 7B", regex=True) &
            ~df["backend"].str.fullmatch("CPU")]  # the chip's GPU, not its cores
    return pd.DataFrame({
        "chip": "Strix Halo", "run": "Strix Halo, " + df["backend"],
        "run_backend": df["backend"], "gpu_cores": float("nan"), "note": "",
        "confidence": df["confidence"], "tok_per_s": df["throughput_tok_per_s"].astype(float),
        "source_url": df["source_url"]})


def _all_runs(test: str, flash_attention: tuple[str, ...]) -> pd.DataFrame:
    parts = [_apple(test), _scoreboard(test, flash_attention), _strix(test)]
    df = pd.concat(parts, ignore_index=True)
    own_id = df["run_id"].isna()
    df.loc[own_id, "run_id"] = [f"run {i}" for i in df.index[own_id]]
    df["backend"] = df["run_backend"].map(backend_group)
    return df[COLUMNS]


def _second_hand(df: pd.DataFrame) -> pd.Series:
    """Runs read second-hand (low confidence) of a chip that has first-hand (high) runs."""
    first_hand = set(df.loc[df["confidence"] == "high", "chip"])
    return (df["confidence"] == "low") & df["chip"].isin(first_hand)


_ALL_FA = ("0", "1", "unknown")


def reference_runs(test: str = "pp512", flash_attention: tuple[str, ...] = _ALL_FA,
                   ) -> pd.DataFrame:
    """Every kept reference run of one llama-bench test, one row per chip it counts for:
    ``chip`` (the book's name, or the scoreboard's for a GPU with no specs), ``run``,
    ``run_backend`` (as published) and ``backend`` (grouped), ``gpu_cores`` (Apple),
    ``note`` (a disputed variant), ``run_id`` (one per published run), ``tok_per_s``.
    ``flash_attention`` filters the scoreboards' runs."""
    if test not in ("pp512", "tg128"):
        raise ValueError(f"test must be 'pp512' or 'tg128', got {test!r}")
    df = _all_runs(test, flash_attention)
    return df[~_second_hand(df)].reset_index(drop=True)


def second_hand_runs(test: str = "pp512") -> pd.DataFrame:
    """The reference runs left out: read second-hand, of a chip with first-hand runs."""
    df = _all_runs(test, _ALL_FA)
    return df[_second_hand(df)].reset_index(drop=True)


def prefill_runs() -> pd.DataFrame:
    """Every kept pp512 reference run with the FLOP/s it reached and, for a chip of the specs
    table, the roof it is held to (:func:`napkin.buying.roofs.run_roof`) and its fraction of
    it. ``machine_backend`` is the backend the chip's bound is read on."""
    df = reference_runs("pp512")
    df["flops_per_s"] = df["tok_per_s"] * reference_flops_per_token()
    known = hardware.chips()
    found = [roofs.run_roof(known.get(c), b, g)
             for c, b, g in zip(df["chip"], df["backend"], df["gpu_cores"])]
    df["roof_flops_per_s"] = [f for f, _ in found]
    df["roof_label"] = [lab for _, lab in found]
    df["fraction_of_roof"] = df["flops_per_s"] / df["roof_flops_per_s"]
    df["machine_backend"] = [roofs.BACKEND.get(known[c].vendor, "") if c in known else ""
                             for c in df["chip"]]
    return df.rename(columns={"tok_per_s": "pp512_tok_per_s"})


def backend_fractions(among: list[str] | None = None) -> pd.DataFrame:
    """Fraction of the roof published prefill runs reached, by the run's own llama.cpp
    backend and the machine's vendor: how much of the first-token ranking is software. Runs
    whose variant is disputed (the H100 and A100 scoreboard rows) are left out."""
    runs = prefill_runs().dropna(subset=["fraction_of_roof"])
    if among is not None:
        runs = runs[runs["chip"].isin(among)]
    runs = runs[runs["note"] == ""]  # a run of a disputed variant has no known roof
    vendor = {n: c.vendor for n, c in hardware.chips().items()}
    runs = runs.assign(vendor=runs["chip"].map(vendor))
    rows = []
    for (v, b), g in runs.groupby(["vendor", "backend"]):
        f = g["fraction_of_roof"]
        rows.append({"vendor": v, "run_backend": b, "runs": len(f),
                     "machines": ", ".join(sorted(g["chip"].unique())),
                     "low": float(f.min()), "median": float(f.median()),
                     "high": float(f.max())})
    return pd.DataFrame(rows).sort_values("median", ascending=False, ignore_index=True)
