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
    rounds = v.mlperf().set_index("row_id").loc[m["row_id"], "round"].to_numpy()
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


def test_a_row_naming_a_book_chip_and_model_needs_no_alias():
    rows = _serving_fixture().loc[[10]].assign(gpu="MI300X", model="Qwen2.5-72B-Instruct")
    cases = v.interpret(rows)
    assert cases.loc[10, "ok"], cases.loc[10, "reason"]
    assert (cases.loc[10, "chip"], cases.loc[10, "model"]) == ("MI300X", "Qwen2.5-72B-Instruct")
    assert np.isfinite(v.predict_rows(rows, CAL)[10])


def test_every_row_carries_its_serving_stack():
    cases = v.all_cases()
    ok = cases[cases["ok"]]
    assert ok["stack"].str.count("/").eq(2).all()
    assert {"Argonne/AMD/vLLM", "MLPerf/NVIDIA/TensorRT-LLM"} <= set(ok["stack"])


# -- the stored fit, and the errors as factors -----------------------------------------------

@pytest.mark.slow
def test_the_published_fit_is_what_the_raw_rows_give():
    """data/step_model_parameters.csv and step_model_stacks.csv are derived: refitting the
    calibrated model on every usable row gives them back."""
    from napkin.predict import calibration as calib
    from napkin.validation import derive

    found = derive.fit_on(derive.rows(), v.CALIBRATED)
    stored = calib.stored()
    for name in v.CALIBRATED.free + ("tpot_tail",):
        assert getattr(found.calibration, name) == pytest.approx(getattr(stored, name),
                                                                 rel=1e-3, abs=1e-9), name
    stacks = calib.stored_stacks()
    assert set(stacks) == set(found.stacks)
    for name, s in found.stacks.items():
        assert (s.efficiency, s.overhead) == pytest.approx(
            (stacks[name].efficiency, stacks[name].overhead), rel=1e-3), name


@pytest.mark.slow
def test_the_fixed_split_fit_never_sees_a_held_out_row():
    """Scale every held-out measurement by 1.5: the fixed split's fit does not move."""
    from napkin.validation import derive

    cases = derive.rows()
    before = derive.fit_on(derive.fixed_split(cases), v.ONE_NUMBER).calibration
    held = cases["split"] == "test"
    scaled = cases.assign(measured=np.where(held, 1.5 * cases["measured"], cases["measured"]))
    after = derive.fit_on(derive.fixed_split(scaled), v.ONE_NUMBER).calibration
    assert after == before


def test_errors_are_factors_either_way():
    stats = v.factor_stats(np.log([2.0, 0.5, 1.0, 1.25, 0.8]),
                           np.log([2.0, 0.5, 1.0, 1.25, 0.8]))
    assert stats["median"] == pytest.approx(1.25) and stats["n"] == 5
    assert stats["bias"] == pytest.approx(1.0)
    # a prediction twice the measured latency is as far off as half the measured rate, and
    # both are pessimistic about speed
    rows = pd.DataFrame({"predicted": [2.0, 50.0], "measured": [1.0, 100.0],
                         "kind": ["static_e2e", "offline_rate"]})
    e = v.report._errors(rows)
    assert e["factor"].tolist() == pytest.approx([2.0, 2.0])
    assert e["speed"].tolist() == pytest.approx([-np.log(2), -np.log(2)])


def test_bands_are_factors_for_each_scenario_and_case_and_refuse_unknown_ones():
    for scenario in ("offline", "server", "static", "all"):
        for case in ("new", "seen"):
            b = v.error_band(scenario, case)
            assert b["n"] > 0 and 1 <= b["median"] <= b["p90"] and b["bias"] > 0
            assert "cross-validated" in b["text"] and f"x{b['median']:.2f}" in b["text"]
    with pytest.raises(ValueError, match="scenario"):
        v.error_band("batch")
    with pytest.raises(ValueError, match="case"):
        v.error_band("offline", "old")


def test_the_pace_fold_leaves_every_run_at_interactive_pace_out_of_its_fit():
    """One fold scores what ran under interactive limits (MLPerf's Interactive scenario, and
    every form of a run that publishes a rate per user of the strictest limit's pace), and
    its fit sees none of them; the band read from it is the same runs as the model folds'."""
    cases = v.derive.rows()
    pace = v.derive.interactive_pace()
    assert pace == pytest.approx(1e3 / 15)  # DeepSeek-R1's 15 ms, MLPerf's strictest
    folds = v.derive.folds(cases)
    assert {f.kind for f in folds} == set(v.report.FOLD_KINDS)
    (fold,) = [f for f in folds if f.kind == "pace"]
    fast = v.derive.at_pace(cases, pace)
    assert (fold.test == fast).all() and not (fold.train & fast).any()
    assert fold.test[(cases["scenario"] == "Interactive").to_numpy()].all()
    user = cases["kind"].isin(v.derive.PER_USER_KINDS)
    assert fold.test[(user & (cases["measured"] >= pace)).to_numpy()].all()
    assert not fold.test[(user & (cases["measured"] < pace)).to_numpy()].any()
    # a run's other forms (a total, a latency) go with its per-user row
    assert fold.test.sum() > (fast & user.to_numpy()).sum() + (
        cases["scenario"] == "Interactive").sum()
    by_model, by_pace = (v.chapter.moe_interactive_band(kinds=k) for k in (("model",),
                                                                           ("pace",)))
    assert by_pace["runs"] == by_model["runs"] > 0 and by_pace["rows"] == by_model["rows"]
    with pytest.raises(ValueError, match="model folds"):  # a looser pace than the fold's
        v.chapter.moe_interactive_band("gpt-oss-120b", kinds=("pace",))
    with pytest.raises(ValueError, match="known: round"):
        v.crossval(("nope",))


def test_a_buyers_band_counts_each_row_once_and_is_kept_out_of_the_pooled_ones():
    cases = v.derive.rows()
    for case, (kind, pair) in v.report.BUYER_FOLDS.items():
        folds = [f for f in v.derive.folds(cases) if f.kind == kind]
        scored = np.sum([f.test for f in folds], axis=0)
        assert scored.max() == 1  # a partition: no row scored twice
        b = v.error_band("all", case)
        cv = v.crossval((kind,))
        cv = cv[cv["structure"] == v.report.MODEL]
        assert len(cv) == cv[["table", "row_id"]].drop_duplicates().shape[0] == scored.sum()
        read = cv if pair is None else cv[cv["case"] == pair]
        assert b["n"] == len(read) > 0 and 1 <= b["median"] <= b["p90"]
    stack = v.crossval(("stack",))
    assert 0 < v.error_band("all", "new stack")["n"] < (stack["structure"] == v.report.MODEL).sum()
    assert set(v.crossval()["fold_kind"]) == set(v.report.POOLED_FOLDS)


def test_a_band_is_recomputed_from_the_rows_in_data(tmp_path, monkeypatch):
    """The stored predictions stay, the measurements are read afresh: scale every MLPerf
    Offline result by 1.5 and the Offline band's bias moves by exactly that factor (the
    model now promises 1.5 times less speed than measured)."""
    band = v.error_band("offline", "all")
    data = tmp_path / "data"
    shutil.copytree(v.tables.data_dir(), data)
    table = pd.read_csv(data / "mlperf_llm.csv")
    table.loc[table["scenario"] == "Offline", "value"] *= 1.5
    table.to_csv(data / "mlperf_llm.csv", index=False)
    monkeypatch.setenv("NAPKIN_DATA", str(data))  # no cache to clear: each is keyed on data/
    scaled = v.error_band("offline", "all")
    assert scaled["n"] == band["n"]
    assert scaled["bias"] == pytest.approx(band["bias"] / 1.5, rel=1e-9)
    monkeypatch.delenv("NAPKIN_DATA")
    assert v.error_band("offline", "all") == band


def test_a_row_inserted_mid_table_leaves_every_stored_prediction_on_its_row(tmp_path,
                                                                          monkeypatch):
    """Derived tables join a published row by its id, not its position: a row inserted near
    the top of mlperf_llm.csv moves every row below it, and every stored cross-validated
    prediction still meets the measurement it was made for."""
    keys = ["fold", "structure", "table", "row_id", "measured", "chip", "model"]
    stored = v.tables.load("step_model_crossval")
    before = v.report.with_rows(stored)[keys]
    data = tmp_path / "data"
    shutil.copytree(v.tables.data_dir(), data)
    m = pd.read_csv(data / "mlperf_llm.csv", dtype=str, keep_default_na=False)
    new = m.iloc[[300]].assign(row_id="mlperf-0648", value="1.0")
    pd.concat([m.iloc[:10], new, m.iloc[10:]]).to_csv(data / "mlperf_llm.csv", index=False)
    monkeypatch.setenv("NAPKIN_DATA", str(data))
    after = v.report.with_rows(stored)[keys]
    pd.testing.assert_frame_equal(after.reset_index(drop=True),
                                  before.reset_index(drop=True))


def test_the_fixed_split_table_has_every_baseline_beside_the_model():
    t = v.error_table(("group",))
    held = t[(t["split"] == "test") & (t["group"] == "MLPerf Offline")]
    assert {"calibrated step model", "one-number discount", "essay's 50 % rule",
            "plain roofline"} <= set(held["structure"])
    assert (held["median"] >= 1).all()


def test_the_frontier_data_pairs_model_curves_with_mlperf_runs():
    pts = v.frontier_points()
    assert set(pts["chip"]) <= set(v.FRONTIER_CHIPS)
    assert (pts["per_user_tok_per_s"] > 0).all() and (pts["per_gpu_tok_per_s"] > 0).all()
    assert set(pts["model"]) == set(v.FRONTIER_MODELS)
    assert v.benchmark_lengths("llama2-70b") == (222, 294)


def test_a_chip_ratio_by_round_holds_the_software_of_each_round():
    """Two rows per round, built by hand: pooled, the H200's later rounds (faster software)
    inflate its ratio; one round at a time each ratio is the chips' own."""
    rows = pd.DataFrame({
        "source": "MLPerf", "scenario": "Offline", "detail": "llama2-70b-99", "duplicate": False,
        "round": ["v4.1", "v4.1", "v5.0", "v5.0", "v5.0"],
        "system": ["A: x", "A: y", "B: x", "B: y", "C: z"],
        "chip": ["H100 SXM", "H200", "H100 SXM", "H200", "H200"],
        "n_chips": [8, 8, 8, 8, 1],
        "measured": [800.0, 960.0, 1600.0, 2000.0, 250.0],
        "predicted": [700.0, 910.0, 1400.0, 1820.0, 227.5]})
    pooled = v.per_gpu_ratio("H200", "H100 SXM", rows)
    assert pooled["rows_a"] == 3 and pooled["rows_b"] == 2
    assert pooled["measured"] == pytest.approx(250 / 150)      # medians 250 and 150 per GPU
    by_round = v.per_gpu_ratio_by_round("H200", "H100 SXM", rows).set_index("round")
    assert by_round.loc["v4.1", "measured"] == pytest.approx(1.2)
    assert by_round.loc["v5.0", "measured"] == pytest.approx(1.25)
    assert by_round.loc["v5.0", "predicted"] == pytest.approx(1.3)
    by_submitter = v.per_gpu_ratio_by_round("H200", "H100 SXM", rows, by="submitter")
    assert list(by_submitter["submitter"]) == ["A", "B"]      # C ran only one of the chips
    with pytest.raises(ValueError, match="'round' or 'submitter'"):
        v.per_gpu_ratio_by_round("H200", "H100 SXM", rows, by="vendor")
