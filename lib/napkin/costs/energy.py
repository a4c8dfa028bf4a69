"""The energy model against ML.ENERGY's measurements.

The model: a decode step's time from the calibrated step model
(:func:`napkin.predict.step.step_seconds`) times the GPUs' power rating, over the tokens the
step makes (one per sequence): ``E = n P_rated t_step(B) / B`` joules per output token.
Nothing in it is fitted to ML.ENERGY: the step model's parameters were fitted to the training
split of chapter 9 (MLPerf rounds before v5.1, Argonne's older chips), and the rating is the
vendor's. ML.ENERGY's leaderboard (v3) measured GPU energy per output token of vLLM serving
chat and reasoning prompts on H100 and B200 at batch caps from 8 to thousands; every row is
held out.

ML.ENERGY states each configuration's mean batch and mean answer length but not its prompts'
length, so the step is taken at the mean answer's middle depth with the prompts' prefill left
out, which makes the model's time (and energy) a little short. Beside the rated power the
check also uses ML.ENERGY's own measured power, which splits the error in two: the power
(rating against draw) and the time (model step against measured rate). Only configurations
the step model can represent are scored: a model the book has a config for, run in tensor
parallel over all its GPUs (expert or data parallelism is not modelled).
"""

from __future__ import annotations

import math

import pandas as pd

from .. import catalog, predict, tables
from . import power

__all__ = ["at_the_wall", "check", "cost_from_measurements", "error_summary", "measurements",
           "WEIGHTS"]

#: ML.ENERGY's weight precisions -> the book's weight formats.
WEIGHTS = {"bfloat16": "BF16", "mxfp4": "MXFP4", "fp8": "FP8"}


def measurements() -> pd.DataFrame:
    """ML.ENERGY's configurations the step model can represent, with why the others are not
    scored in ``excluded``."""
    df = tables.load("mlenergy_llm")
    why = pd.Series("", index=df.index)
    why[df["model"].isna() | (df["model"] == "")] = "no config for this model in data/models"
    why[(why == "") & (df["tensor_parallel"] != df["n_gpus"])] = \
        "expert or data parallel (the step model runs tensor parallel only)"
    return df.assign(excluded=why)


@tables.cached()
def check() -> pd.DataFrame:
    """Every scorable ML.ENERGY row with the model's energy per token (rated power, and the
    measured power of the same run), its step against the measured time per step, and the
    relative errors (model over measured, minus one)."""
    df = measurements()
    df = df[df["excluded"] == ""].copy()
    steps, rated = [], []
    for r in df.itertuples():
        e = predict.engine(r.chip, r.model, n_chips=int(r.n_gpus), weights=WEIGHTS[r.weights],
                           kv="bf16")
        batch = max(1, round(r.mean_batch))
        steps.append(predict.step_seconds(e, batch, int(r.mean_output_tokens // 2)))
        rated.append(r.n_gpus * power.rating(r.chip)["power_W"])
    df["batch"] = df["mean_batch"].round().clip(lower=1).astype(int)
    df["model_step_s"] = steps
    df["measured_step_s"] = df["batch"] / df["output_tok_per_s"]
    df["rated_W"] = rated
    df["draw_over_rating"] = df["gpu_power_W"] / df["rated_W"]
    df["model_J_per_token"] = df["rated_W"] * df["model_step_s"] / df["batch"]
    df["model_measured_power_J_per_token"] = df["gpu_power_W"] * df["model_step_s"] / df["batch"]
    df["error"] = df["model_J_per_token"] / df["energy_J_per_token"] - 1
    df["error_measured_power"] = df["model_measured_power_J_per_token"] / \
        df["energy_J_per_token"] - 1
    df["step_error"] = df["model_step_s"] / df["measured_step_s"] - 1
    df["kind"] = df["model"].map(lambda m: "mixture of experts" if catalog.is_moe(m) else "dense")
    df["engine"] = df["n_gpus"].astype(str) + " x " + df["gpu"]
    return df.reset_index(drop=True)


def _stats(e: pd.Series) -> dict:
    a = e.abs()
    return {"n": int(len(e)), "median_abs": float(a.median()) if len(e) else math.nan,
            "p90_abs": float(a.quantile(0.9)) if len(e) else math.nan,
            "bias": float(e.median()) if len(e) else math.nan}


def error_summary(df: pd.DataFrame | None = None) -> pd.DataFrame:
    """The model's error against ML.ENERGY: rows, median and 90th-percentile absolute error
    and median signed error, with the rated power and with the measured one, over all rows,
    dense models and mixtures of experts, and the 70B dense models alone."""
    df = check() if df is None else df
    groups = {"all": df, "dense": df[df["kind"] == "dense"],
              "mixture of experts": df[df["kind"] != "dense"],
              "70B dense": df[df["model"].str.contains("70B")]}
    rows = []
    for name, g in groups.items():
        rated, meas = _stats(g["error"]), _stats(g["error_measured_power"])
        rows.append({"group": name, "n": rated["n"], "median_abs": rated["median_abs"],
                     "p90_abs": rated["p90_abs"], "bias": rated["bias"],
                     "measured_power_median_abs": meas["median_abs"],
                     "measured_power_bias": meas["bias"],
                     "draw_over_rating": float(g["draw_over_rating"].median())})
    return pd.DataFrame(rows)


def cost_from_measurements(model: str, chip: str, usd_per_gpu_hour: float) -> pd.DataFrame:
    """Dollars per million output tokens of ML.ENERGY's measured runs of ``model`` on
    ``chip``, at a rental price per GPU-hour: the measured rate, not the model's."""
    df = measurements()
    df = df[(df["model"] == model) & (df["chip"] == chip) & (df["task"] == "LM Arena chat")]
    if df.empty:
        raise ValueError(f"no ML.ENERGY chat run of {model!r} on {chip!r}")
    usd = df["n_gpus"] * usd_per_gpu_hour / 3600 * 1e6 / df["output_tok_per_s"]
    return df.assign(usd_per_mtok=usd).sort_values("mean_batch").reset_index(drop=True)


def at_the_wall(runs: pd.DataFrame) -> pd.DataFrame:
    """ML.ENERGY's measured runs with their energy per token counted as a desk machine's is,
    at the wall: the GPUs' measured power plus each GPU's share of the rest of its server at
    the server's maximum input (:func:`napkin.costs.power.node`: CPUs, NICs, NVSwitches,
    fans), times the data center's PUE (:func:`napkin.costs.power.pue`), over the measured
    rate. The server share at its maximum makes it an upper bound."""
    out = runs.copy()
    rest, facility = [], power.pue()["pue"]
    for r in out.itertuples():
        n = power.node(r.chip)
        rest.append(r.n_gpus * (n["server_W"] - n["gpus"] * n["gpu_W"]) / n["gpus"])
    out["server_rest_W"] = rest
    out["pue"] = facility
    out["wall_W"] = (out["gpu_power_W"] + out["server_rest_W"]) * facility
    out["wall_J_per_token"] = out["wall_W"] / out["output_tok_per_s"]
    return out
