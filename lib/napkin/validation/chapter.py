"""What chapter 9 draws and states, computed from the errors and the step model."""

from __future__ import annotations

import math

import numpy as np
import pandas as pd

from ..predict import calibration as calib
from ..predict.calibration import Calibration
from ..predict.frontier import frontier
from .. import catalog, tables
from .derive import RUN, at_pace, interactive_pace
from .fitting import ABLATIONS, CALIBRATED, TRIED
from .report import bands, crossval, errors, factor_stats, peer_errors, scored
from .rows import (all_cases, answer_spread, dataset, dataset_lengths,
                   interpret, mlperf)

__all__ = ["ablation_table", "BASELINES", "baselines_table", "benchmark_inflight", "CHAT_RUNS",
           "benchmark_lengths", "crossval_table", "decline_reasons", "EARNS", "FRONTIER_CHIPS",
           "frontier_curves", "frontier_gap", "FRONTIER_MODELS", "frontier_points",
           "frontier_read", "held_out", "interactive_limits", "pace_check", "moe_chat_steps", "moe_interactive_band",
           "PARAMETERS", "parameters_table", "PEER", "per_gpu_ratio", "per_gpu_ratio_by_round",
           "RACK", "rack_layouts", "RACK_LAYOUTS", "regimes", "SCENARIOS",
           "server_over_offline", "server_over_offline_spread", "server_steps", "software_band",
           "speculative", "SPECULATIVE_NOTE", "stack_spread", "stats_by", "trades",
           "UNTRUSTED_MEDIAN", "UNTRUSTED_P90", "wide_reading_checks"]

#: The practitioner's chart: the models, their MLPerf benchmark, lengths and formats.
FRONTIER_MODELS = {"Llama-3.3-70B": ("llama2-70b", "FP8", "fp8"),
                   "Mixtral-8x7B": ("mixtral-8x7b", "FP8", "fp8")}
FRONTIER_CHIPS = ("H100 SXM", "H200", "B200", "MI300X")


def benchmark_lengths(benchmark: str) -> tuple[int, int]:
    """Mean input and output tokens of an MLPerf benchmark's dataset (rounded)."""
    i, o = dataset_lengths(dataset(benchmark))
    return int(round(i)), int(round(o))


def benchmark_inflight(benchmark: str) -> float:
    """How much longer an MLPerf benchmark's answers in flight are than its mean answer,
    ``E[o^2] / E[o]^2`` of the submissions' answers (1 where not measured)."""
    return answer_spread(dataset(benchmark))


def frontier_curves(calibration: Calibration | None = None) -> pd.DataFrame:
    """The calibrated model's frontier (:func:`napkin.predict.frontier.frontier`) for each
    of :data:`FRONTIER_MODELS` on each of :data:`FRONTIER_CHIPS` at its MLPerf benchmark's
    mean lengths and spread of answers, FP8 weights and cache; and the B200 again at FP4
    (NVFP4) weights, the format its MLPerf runs use."""
    parts = []
    for model, (bench, weights, kv) in FRONTIER_MODELS.items():
        i, o = benchmark_lengths(bench)
        for chip, fmt in [(c, weights) for c in FRONTIER_CHIPS] + [("B200", "NVFP4")]:
            f = frontier(chip, model, weights=fmt, kv=kv, input_tokens=i, output_tokens=o,
                         calibration=calibration, inflight_ratio=benchmark_inflight(bench))
            parts.append(f.assign(model=model, weights=fmt, curve=f"{chip}, {fmt}"))
    return pd.concat(parts, ignore_index=True)


def frontier_points() -> pd.DataFrame:
    """MLPerf Server and Interactive runs of :data:`FRONTIER_CHIPS` for the frontier's
    benchmarks: tokens/s per GPU (the result over the accelerators) and per user (one over
    the run's mean time per output token), with the weights the model reads the run as."""
    m = mlperf()
    cases = interpret(m)
    keep = (m["scenario"].isin(["Server", "Interactive"]) & m["tpot_mean_ms"].notna() &
            cases["ok"] & ~cases["duplicate"] & cases["chip"].isin(FRONTIER_CHIPS))
    out = []
    for model, (bench, _, _) in FRONTIER_MODELS.items():
        sel = keep & m["benchmark_model"].str.startswith(bench)
        rows = m[sel]
        out.append(pd.DataFrame({
            "model": model, "benchmark": rows["benchmark_model"], "chip": cases.loc[sel, "chip"],
            "system": rows["submitter"] + ": " + rows["system"], "round": rows["round"],
            "scenario": rows["scenario"], "weights": cases.loc[sel, "weights"],
            "per_gpu_tok_per_s": rows["value"] / rows["n_accelerators"],
            "per_user_tok_per_s": 1e3 / rows["tpot_mean_ms"],
            "source_url": rows["source_url"]}))
    return pd.concat(out, ignore_index=True)


def stack_spread(frame: pd.DataFrame | None = None) -> pd.DataFrame:
    """Argonne's static batches: measured over predicted latency per chip and serving engine
    (median, lowest, highest, rows), the calibrated model's view of each software stack."""
    df = errors() if frame is None else frame
    a = df[df["group"] == "Argonne static batch"].copy()
    a["ratio"] = a["measured"] / a["predicted"]
    out = a.groupby(["chip", "engine", "split"])["ratio"].agg(
        median="median", low="min", high="max", n="count").reset_index()
    return out


def decline_reasons(top: int = 8) -> pd.DataFrame:
    """Why rows are declined: the most common reasons per table, with counts (the reason's
    first clause; names of unknown chips and models kept)."""
    cases = all_cases()
    d = cases[~cases["ok"]].copy()
    why = d["reason"].str.replace(r"^Declined: ", "", regex=True)
    why = why.str.split(r"(?<=[a-z0-9)'])(?:\. |; | \(not in )", n=1, regex=True).str[0]
    d["why"] = why.where(why.str.len() <= 110, why.str.slice(0, 107) + "...")
    counts = d.groupby(["table", "why"]).size().rename("rows").reset_index()
    return counts.sort_values("rows", ascending=False).head(top).reset_index(drop=True)


#: How each fitted parameter is shown: (label, factor to the display unit, unit, meaning).
PARAMETERS = {
    "bandwidth_efficiency": ("share of peak", 1.0, "share of peak bandwidth and FLOP/s",
                             "a step's bytes and FLOPs move at this share of the chip's peaks"),
    "compute_efficiency": ("matmul and attention", 1.0, "share of dense peak",
                           "a large step's FLOPs run at this share of the arithmetic's peak"),
    "half_tokens": ("matmul ramp", 1.0, "tokens",
                    "a step of this many tokens gets half that share from its matmuls"),
    "step_overhead_s": ("fixed cost per step", 1e3, "ms per step",
                        "scheduling and bookkeeping, paid every step"),
    "layer_overhead_s": ("fixed cost per layer", 1e6, "µs per layer",
                         "launching a layer's kernels, on the typical stack"),
    "sequence_overhead_s": ("cost per sequence", 1e6, "µs per sequence",
                            "sampling and scheduling each sequence in a step"),
    "moe_layer_overhead_s": ("fixed cost per expert layer", 1e6, "µs per layer",
                             "an expert layer's routing and grouped kernels, beyond a dense "
                             "layer's, on the typical stack"),
    "allreduce_latency_s": ("all-reduce latency", 1e6, "µs",
                            "each of a layer's two all-reduces, before any byte moves"),
    "link_efficiency": ("link", 1.0, "share of link peak",
                        "an all-reduce's bytes cross the scale-up link at this share"),
    "tpot_tail": ("time-per-token tail", 1.0, "p99 / mean",
                  "measured in the MLPerf logs of the rows fitted on, not fitted"),
}


def parameters_table(calibration: Calibration | None = None) -> pd.DataFrame:
    """The calibrated model's parameters (those it fits, and the measured TPOT tail) in
    display units, with what each means: the published fit unless another calibration is
    given."""
    cal = calib.calibrated() if calibration is None else calibration
    rows = []
    for name in CALIBRATED.free + ("tpot_tail",):
        label, factor, unit, meaning = PARAMETERS[name]
        rows.append({"parameter": name, "label": label, "value": getattr(cal, name) * factor,
                     "unit": unit, "meaning": meaning})
    return pd.DataFrame(rows)


def server_over_offline_spread(frame: pd.DataFrame | None = None) -> float:
    """The 90th-percentile factor between predicted and measured Server over Offline
    (:func:`server_over_offline`): how far single systems are off."""
    so = server_over_offline(frame)
    ratio = np.log(so["predicted"].astype(float) / so["measured"].astype(float))
    return factor_stats(ratio, ratio)["p90"]


def server_over_offline(frame: pd.DataFrame | None = None) -> pd.DataFrame:
    """MLPerf systems that ran both Offline and Server on one benchmark in one round: the
    Server result over the Offline one, measured and predicted (what the latency limits and
    the queue cost)."""
    df = errors() if frame is None else frame
    m = df[(df["source"] == "MLPerf") & ~df["duplicate"]].copy()
    m["key"] = m["system"] + " | " + m["detail"] + " | " + m["split"]
    off = m[m["scenario"] == "Offline"].set_index("key")
    srv = m[m["scenario"] == "Server"].set_index("key")
    both = off.index.intersection(srv.index)
    out = pd.DataFrame({"chip": off.loc[both, "chip"], "split": off.loc[both, "split"],
                        "benchmark": off.loc[both, "detail"],
                        "measured": srv.loc[both, "measured"] / off.loc[both, "measured"],
                        "predicted": srv.loc[both, "predicted"] / off.loc[both, "predicted"]})
    return out.reset_index()


def _mlperf_runs(frame: pd.DataFrame | None, scenario: str, detail: str) -> pd.DataFrame:
    """One MLPerf benchmark's unique rows, each with its result per accelerator (measured and
    predicted) and its submitter (the system name up to its colon)."""
    df = errors() if frame is None else frame
    m = df[(df["source"] == "MLPerf") & (df["scenario"] == scenario) &
           (df["detail"] == detail) & ~df["duplicate"]]
    return m.assign(measured_per_chip=m["measured"] / m["n_chips"],
                    predicted_per_chip=m["predicted"] / m["n_chips"],
                    submitter=m["system"].str.split(":").str[0].str.strip())


def _ratio(m: pd.DataFrame, chip_a: str, chip_b: str) -> dict:
    a, b = m[m["chip"] == chip_a], m[m["chip"] == chip_b]
    return {"measured": float(a["measured_per_chip"].median() / b["measured_per_chip"].median()),
            "predicted": float(a["predicted_per_chip"].median() /
                               b["predicted_per_chip"].median()),
            "rows_a": len(a), "rows_b": len(b)}


def per_gpu_ratio(chip_a: str, chip_b: str, frame: pd.DataFrame | None = None,
                  scenario: str = "Offline", detail: str = "llama2-70b-99") -> dict:
    """Median MLPerf result per accelerator of ``chip_a`` over ``chip_b`` (same benchmark and
    scenario, every round pooled), measured and as the calibrated model predicts it. Pooled
    rounds confound the chips with the software of the rounds each ran in: see
    :func:`per_gpu_ratio_by_round`."""
    return _ratio(_mlperf_runs(frame, scenario, detail), chip_a, chip_b)


def per_gpu_ratio_by_round(chip_a: str, chip_b: str, frame: pd.DataFrame | None = None,
                           scenario: str = "Offline", detail: str = "llama2-70b-99",
                           by: str = "round") -> pd.DataFrame:
    """:func:`per_gpu_ratio` within each MLPerf round (``by="round"``), or within each
    submitter's systems of one round (``by="submitter"``), where both chips ran: software
    moves between rounds, so a ratio across rounds mixes the chip with the stack."""
    m = _mlperf_runs(frame, scenario, detail)
    keys = ["round"] if by == "round" else ["round", "submitter"]
    if by not in ("round", "submitter"):
        raise ValueError(f"by must be 'round' or 'submitter', got {by!r}")
    rows = [{**dict(zip(keys, k if isinstance(k, tuple) else (k,))), **_ratio(g, chip_a, chip_b)}
            for k, g in m.groupby(keys)
            if (g["chip"] == chip_a).any() and (g["chip"] == chip_b).any()]
    return pd.DataFrame(rows, columns=[*keys, "measured", "predicted", "rows_a", "rows_b"])


def frontier_read(curves: pd.DataFrame, model: str, per_user_tok_per_s: float) -> pd.Series:
    """Tokens/s per GPU each curve of ``model`` reaches at a speed per user (log-log
    interpolation; NaN where the curve does not reach that speed)."""
    out = {}
    for name, g in curves[curves["model"] == model].groupby("curve", sort=False):
        g = g.sort_values("per_user_tok_per_s")
        x, y = np.log(g["per_user_tok_per_s"]), np.log(g["per_gpu_tok_per_s"])
        s = math.log(per_user_tok_per_s)
        out[name] = float(np.exp(np.interp(s, x, y))) if x.min() <= s <= x.max() else np.nan
    return pd.Series(out)


def frontier_gap(curves: pd.DataFrame, points: pd.DataFrame) -> pd.DataFrame:
    """Each MLPerf point of :func:`frontier_points` against the model's curves of its chip at
    its speed per user: measured over the FP8 curve and over the FP4 one (B200 only)."""
    out = points.copy()
    for fmt in ("FP8", "NVFP4"):
        ratios = []
        for _, r in points.iterrows():
            read = frontier_read(curves, r["model"], r["per_user_tok_per_s"])
            value = read.get(f"{r['chip']}, {fmt}", np.nan)
            ratios.append(r["per_gpu_tok_per_s"] / value if value == value else np.nan)
        out[f"over_{fmt.lower()}"] = ratios
    return out


# -- the second edition's tables -------------------------------------------------------------

#: The scenario groups of the fixed split's tables, in reading order.
SCENARIOS = {"offline": "MLPerf Offline", "server": "MLPerf Server and Interactive",
             "static": "Argonne's static batches", "published": "engines' and vendors' tables"}
#: The simpler models beside the calibrated one.
BASELINES = ("one-number discount", "essay's 50 % rule", "plain roofline")
PEER = "llm-analysis at its defaults"


def _scenario(df: pd.DataFrame) -> pd.Series:
    g = df["group"]
    return pd.Series(np.select([g == "MLPerf Offline", g == "MLPerf Server/Interactive",
                                g == "Argonne static batch"], ["offline", "server", "static"],
                               "published"), index=df.index)


def stats_by(df: pd.DataFrame, keys) -> pd.DataFrame:
    out = [{**dict(zip(keys, k if isinstance(k, tuple) else (k,))),
            **factor_stats(g["log_ratio"], g["speed"])} for k, g in df.groupby(keys, sort=False)]
    return pd.DataFrame(out)


def held_out(structures=None) -> pd.DataFrame:
    """The fixed split's held-out rows (:func:`napkin.validation.report.scored`), each with
    its scenario, for ``structures`` (all stored ones when None)."""
    s = scored()
    s = s[s["split"] == "test"]
    if structures is not None:
        s = s[s["structure"].isin(structures)]
    return s.assign(scenario=_scenario(s))


def baselines_table() -> pd.DataFrame:
    """Held-out factor errors per scenario of the calibrated model, the simpler models
    (:data:`BASELINES`) and, on the rows it can express, the peer calculator at its defaults
    (a separate row: its rows are not the same rows)."""
    df = held_out((calib.MODEL,) + BASELINES)
    out = stats_by(df, ["scenario", "structure"])
    peer = peer_errors()
    if len(peer):
        peer = peer[peer["split"] == "test"] if "split" in peer else peer
        peer = peer.assign(scenario=_scenario(peer), structure=PEER)
        out = pd.concat([out, stats_by(peer, ["scenario", "structure"])], ignore_index=True)
        mine = held_out((calib.MODEL,))
        same = mine.merge(peer[["table", tables.ROW_ID]], on=["table", tables.ROW_ID])
        same = same.assign(structure=f"{calib.MODEL}, on the peer's rows")
        out = pd.concat([out, stats_by(same, ["scenario", "structure"])], ignore_index=True)
    order = {k: i for i, k in enumerate(SCENARIOS)}
    return out.sort_values(["scenario", "median"], key=lambda c: c.map(order)
                           if c.name == "scenario" else c).reset_index(drop=True)


#: How much a part must move the mean of the groups' median factors to count: taken out,
#: it must make them this much worse; tried, this much better (a hundredth of a factor).
EARNS = 0.01


def ablation_table() -> pd.DataFrame:
    """Each part of the calibrated model taken out (:data:`~.fitting.ABLATIONS`), and each
    part tried on top of it (:data:`~.fitting.TRIED`), the rest refitted on the fixed split:
    held-out factor errors per scenario, over every held-out row and over the mixtures of
    experts' (``moe_median``, ``moe_p90``), beside the full model's; ``change`` is the mean
    change of the four scenarios' medians, and ``earns``
    whether the part earns its place: taken out, the medians get worse by more than
    :data:`EARNS`; tried, they would get better by more than it."""
    variants = ABLATIONS + TRIED
    names = (calib.MODEL,) + tuple(a.name for a in variants)
    df = held_out(names)
    per = stats_by(df, ["structure", "scenario"])
    out = per.pivot(index="structure", columns="scenario", values="median")[list(SCENARIOS)]
    pooled = stats_by(df, ["structure"]).set_index("structure")
    out = out.join(pooled[["n", "median", "p90"]].rename(
        columns={"median": "all_median", "p90": "all_p90"}))
    moe = stats_by(df[df["model"].map(catalog.is_moe)], ["structure"]).set_index("structure")
    out = out.join(moe[["n", "median", "p90"]].rename(
        columns={"n": "moe_n", "median": "moe_median", "p90": "moe_p90"}))
    out["change"] = (out[list(SCENARIOS)] - out.loc[calib.MODEL, list(SCENARIOS)]).mean(axis=1)
    taken = out.index.isin([a.name for a in ABLATIONS])
    out["earns"] = np.where(taken, out["change"] > EARNS, out["change"] < -EARNS)
    out["part"] = out.index.map({a.name: "taken out" for a in ABLATIONS} |
                                {a.name: "tried" for a in TRIED} | {calib.MODEL: "model"})
    out["what"] = out.index.map({a.name: a.what for a in variants} |
                                {calib.MODEL: "every part"})
    return out.loc[list(names)].reset_index()


def crossval_table(structures=(calib.MODEL,) + BASELINES) -> pd.DataFrame:
    """Cross-validated factor errors (:func:`napkin.validation.report.bands`) per scenario
    and case for the calibrated model and the simpler ones."""
    return bands(structures)


#: A regime the chapter tells a reader not to trust: a median factor past this, or one
#: prediction in ten past :data:`UNTRUSTED_P90`.
UNTRUSTED_MEDIAN = 1.5
UNTRUSTED_P90 = 2.0


def trades(ablation: pd.DataFrame, part: str) -> dict[str, list[str]]:
    """The groups of held-out rows (:data:`SCENARIOS`) whose median factor a row of
    :func:`ablation_table` makes better and worse than the calibrated model's."""
    ab = ablation.set_index("structure")
    out = {"better": [], "worse": []}
    for key, name in SCENARIOS.items():
        side = "better" if ab.loc[part, key] < ab.loc[calib.MODEL, key] else "worse"
        out[side].append(name)
    return out


def regimes(min_rows: int = 10) -> pd.DataFrame:
    """Where not to trust the model: its cross-validated errors on a chip and model new together
    (:func:`napkin.validation.report.crossval`, case ``"new"``) per chip family, dense or
    mixture of experts, and scenario, worst first; regimes with fewer than ``min_rows``
    predictions are left out."""
    cv = crossval()
    cv = cv[(cv["structure"] == calib.MODEL) & (cv["case"] == "new")]
    moe = {m: catalog.is_moe(m) for m in cv["model"].unique()}
    cv = cv.assign(kind_of_model=cv["model"].map(lambda m: "mixture of experts" if moe[m]
                                                 else "dense"),
                   scenario_name=_scenario(cv).map(SCENARIOS), speculative=speculative(cv))
    keys = ["family", "kind_of_model", "scenario_name"]
    out = stats_by(cv, keys).merge(
        cv.groupby(keys)["speculative"].mean().rename("speculative_share").reset_index(),
        on=keys)
    out = out[out["n"] >= min_rows]
    return out.sort_values("median", ascending=False).reset_index(drop=True)


#: What a published row's notes say when it ran speculative decoding (the step model reads
#: only the drafts a row states as multi-token prediction; chapter 10 puts the rest back).
SPECULATIVE_NOTE = r"\bMTP\b|speculative|EAGLE|draft model"
#: ... and what a note says when it names MTP only to say the run went without it.
NOT_SPECULATIVE_NOTE = r"\b(?:without|no) MTP\b"


def speculative(predictions: pd.DataFrame) -> pd.Series:
    """Whether each prediction's published row (``table``, ``row_id``) ran speculative
    decoding the model leaves out: its notes say so (:data:`SPECULATIVE_NOTE`) and it states
    no multi-token-prediction drafts the model reads (``draft_tokens``)."""
    flags = pd.Series(False, index=predictions.index)
    for table, part in predictions.groupby("table"):
        notes = tables.load(table).set_index(tables.ROW_ID)["notes"].fillna("")
        said = notes.loc[part[tables.ROW_ID]]
        flags[part.index] = (said.str.contains(SPECULATIVE_NOTE, case=False, regex=True) &
                             ~said.str.contains(NOT_SPECULATIVE_NOTE, case=False,
                                                regex=True)).to_numpy()
    drafts = predictions["draft_tokens"] if "draft_tokens" in predictions else \
        predictions[tables.ROW_ID].map(all_cases().set_index(tables.ROW_ID)["draft_tokens"])
    return flags & ~(drafts.fillna(0) > 0)


def software_band() -> pd.DataFrame:
    """The published fit's serving stacks: their multipliers, the rows behind them, and the
    spread of the model's errors on those rows (what the stack's two numbers leave)."""
    st = calib.stacks()
    e = errors(calib.MODEL, calib.PUBLISHED)
    out = []
    for name, stack in sorted(st.items(), key=lambda kv: -kv[1].rows):
        g = e[e["stack"] == name]
        stats = factor_stats(g["log_ratio"], g["speed"])
        out.append({"stack": name, "efficiency": stack.efficiency, "overhead": stack.overhead,
                    "rows": stack.rows, "median": stats["median"], "p90": stats["p90"]})
    return pd.DataFrame(out)


# -- a rack serving a mixture of experts at chat speed (issue 30) ---------------------------

#: The layouts a rack may serve a mixture of experts in, as (name, data-parallel attention,
#: chips per engine (None: the whole rack), drafts per step, prefill on its own pool); the
#: first is how the published fit reads a row that states no layout and has no
#: configuration read, the second how MLPerf's DeepSeek-R1 submissions ran
#: (``data/mlperf_system_configs.csv``).
RACK_LAYOUTS = (("tensor parallel, engines of 8 (the fit's reading of a row that states "
                 "no layout)", False, 8, 0, False),
                ("data-parallel attention, engines of 8 (as MLPerf's submissions ran)", True,
                 8, 0, False),
                ("data-parallel attention, experts over the rack", True, None, 0, False),
                ("... with prefill on its own pool", True, None, 0, True),
                ("... and three multi-token-prediction drafts", True, None, 3, True))


#: The rack :func:`rack_layouts` costs: a GB200 NVL72 serving DeepSeek-R1 (DeepSeek-V3's
#: architecture) in NVFP4 with an FP8 cache, at MLPerf's DeepSeek-R1 lengths and limits.
RACK = {"chip": "GB200 (per GPU)", "model": "DeepSeek-V3", "n_chips": 72, "weights": "NVFP4",
        "kv": "fp8", "benchmark": "deepseek-r1"}


def interactive_limits(benchmark: str) -> tuple[float, float]:
    """An MLPerf benchmark's Interactive limits: first token and time per output token at
    the 99th percentile, in seconds."""
    row = dataset(benchmark)
    return (float(row["ttft_limit_interactive_ms"]) / 1e3,
            float(row["tpot_limit_interactive_ms"]) / 1e3)


def rack_layouts(chip: str = RACK["chip"], model: str = RACK["model"],
                 n_chips: int = RACK["n_chips"], weights: str = RACK["weights"],
                 kv: str = RACK["kv"], benchmark: str = RACK["benchmark"]) -> pd.DataFrame:
    """What the step model, at the published parameters, says ``n_chips`` of ``chip`` serve
    of ``model`` under ``benchmark``'s MLPerf Interactive limits, mean lengths and spread of
    answers (:func:`benchmark_inflight`), in each of :data:`RACK_LAYOUTS`: output tokens per second for the rack and per chip, the mean time
    per output token, and where prompts are prefilled (a split pool's share of the chips,
    sized to the stream as a fluid count: :mod:`napkin.predict.disaggregated`). Every weight
    is in ``weights``: the book gives a model one format, where real deployments keep
    attention and the embeddings in FP8 or BF16, so each data-parallel rank's dense read is
    a lower bound."""
    from ..predict import disaggregated, engine, predict, with_drafts

    i, o = benchmark_lengths(benchmark)
    spread = benchmark_inflight(benchmark)
    ttft, tpot = interactive_limits(benchmark)
    cal = calib.calibrated()
    out = []
    for name, wide, chips, drafts, split in RACK_LAYOUTS:
        group = n_chips if chips is None else chips
        if split:
            c = engine(chip, model, n_chips=group, weights=weights, kv=kv,
                       attention_dp=wide).constants
            run = disaggregated.pools(c, with_drafts(c, drafts), i, o, ttft, tpot, cal, spread)
            per_chip, tpot_s = run["tokens_per_s_per_chip"], run["decode"]["tpot_s"]
            share = run["prefill_share"]
        else:
            p = predict(chip, model, n_chips=group, weights=weights, kv=kv, input_tokens=i,
                        output_tokens=o, ttft_limit_s=ttft, tpot_limit_s=tpot,
                        attention_dp=wide, draft_tokens=drafts, inflight_ratio=spread)
            per_chip, tpot_s, share = p.per_chip_output_tokens_per_s, p.tpot_s, 0.0
        out.append({"layout": name, "tokens_per_s": per_chip * n_chips, "per_chip": per_chip,
                    "tpot_ms": tpot_s * 1e3, "prefill_share": share,
                    "prefill": f"{share:.1%} of the GPUs (a fluid share)" if split else
                    "on every GPU, between decode steps"})
    return pd.DataFrame(out)


def server_steps(model: str = "DeepSeek-V3") -> pd.DataFrame:
    """MLPerf Server rows of ``model`` where the run's mean time per output token was logged:
    the sequences an engine had in flight (Little's law: tokens a second x the mean time per
    token, over the engines), the logged mean time per token, and the mean step the published
    parameters give at that many sequences in the row's stated layout. Their ratio isolates
    the step's cost from the arithmetic of the limits, which choose the batch."""
    from ..predict.serve import steady_step
    from .scoring import prepare, with_stacks

    cases = all_cases()
    m = mlperf().set_index(tables.ROW_ID)
    rows = cases[(cases["model"] == model) & cases["ok"] & (cases["kind"] == "limits_rate") &
                 (cases["source"] == "MLPerf")]
    rows = rows[m.loc[rows[tables.ROW_ID], "tpot_mean_ms"].notna().to_numpy()]
    if rows.empty:
        return pd.DataFrame(columns=[tables.ROW_ID, "chip", "batch", "tpot_ms",
                                     "predicted_step_ms"])
    p = with_stacks(prepare(rows), calib.stacks())
    first = ~pd.Series(p.row).duplicated().to_numpy()  # each row's stated layout
    f, c = p.cases[first], p.constants.take(np.flatnonzero(first))
    tpot_s = m.loc[f[tables.ROW_ID], "tpot_mean_ms"].to_numpy(float) / 1e3
    engines = f["n_chips"].to_numpy(float) / (f["tp"] * f["pp"] * f["dp"]).to_numpy(float)
    batch = np.round(f["measured"].to_numpy(float) * tpot_s / engines)
    step = steady_step(c, batch, f["input_tokens"].to_numpy(float),
                       f["output_tokens"].to_numpy(float), calib.calibrated(),
                       f["inflight"].to_numpy(float))["tpot_s"]
    return pd.DataFrame({tables.ROW_ID: f[tables.ROW_ID].to_numpy(), "chip": f["chip"].to_numpy(),
                         "batch": batch, "tpot_ms": tpot_s * 1e3,
                         "predicted_step_ms": step * 1e3})


def moe_interactive_band(benchmark: str = "deepseek-r1", kinds: tuple[str, ...] = ("model",)
                         ) -> dict:
    """The calibrated model's error on a mixture of experts served at interactive pace: the
    runs whose sequences each saw at least one token per ``benchmark``'s MLPerf Interactive
    limit on the time per output token, and MLPerf's Interactive rows
    (:func:`napkin.validation.derive.at_pace`), predicted by the fits of the folds of
    ``kinds`` (by default ``model``: the fits that left their model out whole; ``pace``: the
    fit that saw no row of :func:`napkin.validation.derive.at_pace`). A run published in several forms (a rate per user, a
    total, a latency) counts once, at the mean of its rows' speed errors. Returns the rows,
    the runs (and those that drafted), the worst run, the largest batch among them, the pace
    and the factor errors over runs (:func:`napkin.validation.report.factor_stats`). The
    pace compares each run's mean rate per user with a limit MLPerf states at the 99th
    percentile."""
    pace = 1.0 / interactive_limits(benchmark)[1]
    if "pace" in kinds and pace < interactive_pace():
        raise ValueError(f"the pace fold holds the runs at {interactive_pace():.1f} tokens/s "
                         f"per user or more, and {benchmark}'s limit asks {pace:.1f}: read "
                         "its band from the model folds")
    cv = crossval(kinds)
    cv = cv[cv["structure"] == calib.MODEL]
    cv = cv[cv["model"].map({m: catalog.is_moe(m) for m in cv["model"].unique()})]
    cases = all_cases().drop_duplicates(tables.ROW_ID).set_index(tables.ROW_ID)
    cv = cv.join(cases[["engine", "input_tokens", "output_tokens", "batch", "dp",
                        "draft_tokens"]], on=tables.ROW_ID)
    sel = cv[at_pace(cv, pace)]
    key = pd.util.hash_pandas_object(sel[list(RUN)], index=False)
    drafted = (sel["draft_tokens"].fillna(0) > 0).to_numpy()
    # a run's forms agree in speed (a latency's log ratio has the other sign): one per run
    per_run = sel.groupby(key.to_numpy())["speed"].mean()
    return {**factor_stats(per_run, per_run),
            "rows": len(sel), "runs": len(per_run),
            "drafted_runs": int(key[drafted].nunique()),
            "worst": float(np.exp(per_run.abs().max())) if len(sel) else math.nan,
            "largest_batch": float(sel["batch"].max()) if len(sel) else math.nan,
            "pace_tokens_per_s": pace, "benchmark": benchmark}


def pace_check() -> pd.DataFrame:
    """The rows served at interactive pace (the ``pace`` fold's), dense and mixture of
    experts, each predicted twice by the calibrated model: by the fit that left its model
    out (``model`` folds) and by the fit that saw no row at that pace (``pace`` fold); rows,
    median and 90th-percentile factor errors and bias of each."""
    pace = crossval(("pace",))
    pace = pace[pace["structure"] == calib.MODEL]
    model = crossval(("model",))
    model = model[model["structure"] == calib.MODEL].merge(
        pace[["table", tables.ROW_ID]], on=["table", tables.ROW_ID])
    out = []
    for fold, frame in (("model", model), ("pace", pace)):
        kind = frame["model"].map(lambda m: "mixture of experts" if catalog.is_moe(m)
                                  else "dense")
        stats = stats_by(frame.assign(kind_of_model=kind), ["kind_of_model"])
        out.append(stats.set_index("kind_of_model").add_prefix(f"{fold}_"))
    return out[0].join(out[1]).reset_index().sort_values("kind_of_model", ignore_index=True)


#: Batched runs of a mixture of experts at a chat pace, each with the recipe it ran.
CHAT_RUNS = "moe_chat_runs"


def moe_chat_steps() -> pd.DataFrame:
    """The decode step of batched runs of a mixture of experts at a chat pace
    (``data/moe_chat_runs.csv``: published after the book's data, never fitted), each read as
    its recipe ran it: its decode engines of ``engine_gpus`` with or without data-parallel
    attention and with its drafts, each engine holding its share of the concurrency up to its
    cap, at the mean depth of the prompt and half the answer. Beside the measured median time
    per output token, the model's mean at the published parameters, with the recipe's drafts
    and with none; their ratio (model over measured) and factor errors."""
    from ..predict import engine, with_drafts
    from ..predict.serve import decode_step_seconds

    runs = tables.load(CHAT_RUNS)
    cal = calib.calibrated()
    out = []
    for r in runs.itertuples():
        c = engine(r.chip, r.architecture, n_chips=int(r.engine_gpus), weights=r.weights,
                   kv=r.kv, attention_dp=bool(r.attention_dp)).constants
        cap = r.max_batch * (r.engine_gpus if r.attention_dp else 1)
        batch = min(r.concurrency / (r.decode_gpus / r.engine_gpus), cap)
        depth = r.prompt_tokens + r.answer_tokens / 2
        tpot = {}
        for label, drafts in (("model", int(r.mtp_depth)), ("no_drafts", 0)):
            d = with_drafts(c, drafts)
            step = float(np.ravel(decode_step_seconds(d, batch, depth, cal))[0])
            tpot[label] = 1e3 * step / float(d.accepted_tokens[0])
        out.append({"chip": r.chip, "engine_gpus": int(r.engine_gpus),
                    "attention_dp": bool(r.attention_dp), "drafts": int(r.mtp_depth),
                    "batch": batch, "tpot_ms": 1e3 / r.per_user_tok_per_s,
                    "model_ms": tpot["model"], "no_drafts_ms": tpot["no_drafts"]})
    out = pd.DataFrame(out)
    ratio, bare = out["model_ms"] / out["tpot_ms"], out["no_drafts_ms"] / out["tpot_ms"]
    return out.assign(ratio=ratio, factor=np.exp(np.abs(np.log(ratio))),
                      no_drafts_factor=np.exp(np.abs(np.log(bare))))


def wide_reading_checks(model: str = "DeepSeek-V3") -> dict[str, float]:
    """How the wide readings fare on the book's rows of ``model``, as the fixed split's fit
    predicts them (it never saw them; the tokens a draft keeps were measured on the same
    runs as the draft rows): each group's row count, the runs behind it (a run published as
    a total, a per-GPU and a per-user rate counts once) and the median ratio of predicted to
    measured. ``dp``: engines' throughput rows that state data-parallel attention;
    ``drafts``: those that state drafts only; ``offline`` and ``server``: MLPerf's rows of
    each scenario (each a submission, so without a count of runs), which ran data-parallel
    attention over engines of 8 as their configs state."""
    held = held_out((calib.MODEL,))
    held = held[(held["model"] == model) & held["kind"].str.contains("rate")]
    engines = held["source"] != "MLPerf"
    run = list(RUN)
    groups = {"dp": engines & held["dp"].notna(),
              "drafts": engines & held["dp"].isna() & (held["draft_tokens"] > 0),
              "offline": ~engines & (held["kind"] == "offline_rate"),
              "server": ~engines & (held["kind"] == "limits_rate")}
    out = {}
    for name, mask in groups.items():
        part = held[mask]
        out |= {f"{name}_n": len(part),
                f"{name}_ratio": float((part["predicted"] / part["measured"]).median())}
        if name in ("dp", "drafts"):  # an MLPerf row is a submission of its own
            out[f"{name}_runs"] = len(part[run].astype(str).drop_duplicates())
    return out
