"""Published rows in, predictions out: the readers, the split, the fit, the error band."""

from __future__ import annotations

import shutil

import numpy as np
import pandas as pd
import pytest

from napkin import validation as v
from napkin.predict import ROOFLINE, Calibration

CAL = Calibration(bandwidth_efficiency=0.7, compute_efficiency=0.4, half_tokens=50.0,
                  step_overhead_s=1.5e-3, allreduce_latency_s=3e-5, link_efficiency=0.5,
                  tpot_tail=1.2)


def _mlperf_fixture() -> pd.DataFrame:
    m = v.mlperf()
    pick = m[(m["round"] == "v4.1") & (m["submitter"] == "NVIDIA") &
             m["accelerator"].str.contains("H100") &
             (m["benchmark_model"] == "llama2-70b-99")].head(2)
    assert len(pick) == 2
    unknown_chip = pick.iloc[[0]].assign(accelerator="Acme TPU-9000")
    unknown_model = pick.iloc[[0]].assign(benchmark_model="gpt-9-1t")
    open_division = pick.iloc[[0]].assign(division="open")
    rows = pd.concat([pick, unknown_chip, unknown_model, open_division])
    rows.index = ["h100 a", "h100 b", "unknown chip", "unknown model", "open"]
    return rows


def _serving_fixture() -> pd.DataFrame:
    s = v.serving()
    argonne = s[s["source_url"].str.contains(v.ARGONNE) & (s["gpu"] == "Nvidia H100 GPU") &
                (s["metric"] == "end-to-end batch latency (offline static batch)")].head(1)
    nim = s[s["source_url"].str.contains("nim") & (s["metric"] == "ITL")].head(1)
    assert len(argonne) == len(nim) == 1
    rows = pd.concat([
        argonne, nim,
        argonne.assign(metric="joules per token"),
        argonne.assign(gpu="Acme TPU-9000"),
        argonne.assign(model="someone/unknown-7b"),
        argonne.assign(precision="not stated"),
    ])
    rows.index = [10, 20, 30, 40, 50, 60]
    return rows


def test_predict_rows_on_mlperf_rows_is_aligned_and_declines_what_it_cannot_read():
    rows = _mlperf_fixture()
    pred = v.predict_rows(rows, CAL)
    assert list(pred.index) == list(rows.index)
    assert np.isfinite(pred[["h100 a", "h100 b"]]).all()
    assert pred[["unknown chip", "unknown model", "open"]].isna().all()
    cases = v.interpret(rows)
    assert "Acme TPU-9000" in cases.loc["unknown chip", "reason"]
    assert "open division" in cases.loc["open", "reason"]
    # the value is the whole system's output tokens per second, as MLPerf's is
    ratio = pred["h100 a"] / rows.loc["h100 a", "value"]
    assert 0.2 < ratio < 5


def test_predict_rows_on_serving_rows_reads_each_metric_in_its_unit():
    rows = _serving_fixture()
    pred = v.predict_rows(rows, CAL)
    assert list(pred.index) == list(rows.index)
    assert np.isfinite(pred[[10, 20]]).all()
    assert pred[[30, 40, 50, 60]].isna().all()
    assert 0.2 < pred[10] / rows.loc[10, "value"] < 5      # seconds
    assert 0.2 < pred[20] / rows.loc[20, "value"] < 5      # milliseconds
    reasons = v.interpret(rows)["reason"]
    assert "joules per token" in reasons[30] and "not stated" in reasons[60]


def test_every_declined_published_row_says_why():
    cases = v.all_cases()
    declined = cases[~cases["ok"]]
    assert len(declined) and declined["reason"].str.len().gt(0).all()
    assert cases["ok"].sum() > 2500


def test_bad_tables_are_refused_and_empty_ones_are_empty():
    with pytest.raises(ValueError, match="columns of mlperf_llm.csv"):
        v.predict_rows(pd.DataFrame({"a": [1]}), CAL)
    with pytest.raises(ValueError, match="DataFrame"):
        v.predict_rows([{"gpu": "H100"}], CAL)
    empty = v.predict_rows(v.mlperf().iloc[0:0], CAL)
    assert empty.empty


def test_the_split_is_by_round_and_by_chip():
    cases = v.all_cases()
    m = cases[cases["table"] == "mlperf_llm"]
    rounds = v.mlperf().loc[m["row"], "round"].to_numpy()
    assert (m["split"].to_numpy() == np.where(np.isin(rounds, v.TRAIN_ROUNDS), "train",
                                              "test")).all()
    s = cases[cases["table"] == "serving_measurements"]
    argonne = s[s["source"] == "Argonne"]
    assert set(argonne[argonne["split"] == "test"]["chip"].dropna()) - {""} <= \
        {"GH200", "MI300X"}
    assert (s[s["source"] != "Argonne"]["split"] == "test").all()


def test_repeated_mlperf_runs_are_counted_once():
    cases = v.interpret(v.mlperf())
    m = v.mlperf()
    dup = m[cases["duplicate"]]
    assert len(dup) and dup["benchmark_model"].eq("llama2-70b-99.9").all()
    for _, r in dup.head(5).iterrows():
        twin = m[(m["round"] == r["round"]) & (m["system"] == r["system"]) &
                 (m["scenario"] == r["scenario"]) & (m["benchmark_model"] == "llama2-70b-99")]
        assert (twin["value"] == r["value"]).any()


def test_the_plain_roofline_is_optimistic_on_mlperf():
    """Peaks are never reached: the roofline predicts more tokens/s than every MLPerf run."""
    m = v.mlperf()
    rows = m[(m["round"] == "v4.1") & (m["scenario"] == "Offline") & (m["division"] == "closed")]
    roof = v.predict_rows(rows, ROOFLINE)
    ok = roof.notna()
    assert ok.sum() > 10
    assert (roof[ok] > rows.loc[ok, "value"]).mean() > 0.9


# -- the fit and the reported error ----------------------------------------------------------

def test_the_fit_is_physical_and_beats_the_roofline_where_it_was_fitted():
    fit = v.fit()
    cal = fit.calibration
    assert 0.3 < cal.bandwidth_efficiency <= 1 and 0.1 < cal.compute_efficiency <= 1
    assert 0 < cal.step_overhead_s < 0.05 and cal.tpot_tail >= 1
    t = v.error_table(("group",))
    train = t[t["split"] == "train"].set_index("group")
    assert (train["median_abs"] < train["roofline_median_abs"]).all()


def _offline_band_by_hand() -> dict:
    """The held-out MLPerf Offline error, recomputed through the public API from the data."""
    m = v.mlperf()
    rows = m[(m["round"] == "v5.1") & (m["scenario"] == "Offline")]
    pred = v.predict_rows(rows)
    roof = v.predict_rows(rows, ROOFLINE)
    cases = v.interpret(rows)
    keep = pred.notna() & ~cases["duplicate"] & ~v.impossible(cases, roof)
    err = pred[keep] / rows.loc[keep, "value"] - 1
    return {"n": int(keep.sum()), "median_abs": float(err.abs().median()),
            "p90_abs": float(err.abs().quantile(0.9)), "bias": float(err.median())}


def test_the_reported_held_out_error_is_recomputed_from_the_data(tmp_path, monkeypatch):
    """The band is what the rows in data/ say: recomputed by hand it agrees; scale the
    held-out measurements and the fit does not move (it never sees them) while the band
    does, by exactly what the scaling implies."""
    band = v.error_band("offline")
    by_hand = _offline_band_by_hand()
    for key in ("n", "median_abs", "p90_abs", "bias"):
        assert band[key] == pytest.approx(by_hand[key], rel=1e-9)
    fitted = v.fit().calibration

    data = tmp_path / "data"
    shutil.copytree(v.tables.data_dir(), data)
    table = pd.read_csv(data / "mlperf_llm.csv")
    held_out = table["round"] == "v5.1"
    table.loc[held_out, "value"] *= 1.5
    table.to_csv(data / "mlperf_llm.csv", index=False)
    monkeypatch.setenv("NAPKIN_DATA", str(data))
    v.refresh()
    try:
        assert v.fit().calibration == fitted
        scaled = v.error_band("offline")
        assert scaled["n"] == band["n"]
        assert scaled["bias"] == pytest.approx((1 + band["bias"]) / 1.5 - 1, rel=1e-6)
    finally:
        monkeypatch.delenv("NAPKIN_DATA")
        v.refresh()


def test_error_bands_cover_each_scenario_and_refuse_unknown_ones():
    for name in ("offline", "server", "static", "all"):
        b = v.error_band(name)
        assert b["n"] > 0 and 0 <= b["median_abs"] <= b["p90_abs"]
        assert "held-out" in b["text"]
    with pytest.raises(ValueError, match="scenario"):
        v.error_band("batch")


def test_the_frontier_data_pairs_model_curves_with_mlperf_runs():
    pts = v.frontier_points()
    assert set(pts["chip"]) <= set(v.FRONTIER_CHIPS)
    assert (pts["per_user_tok_per_s"] > 0).all() and (pts["per_gpu_tok_per_s"] > 0).all()
    assert set(pts["model"]) == set(v.FRONTIER_MODELS)
    assert v.benchmark_lengths("llama2-70b") == (222, 294)
