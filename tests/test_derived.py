"""Derived tables are what their inputs make: a raw row or a fitting module changed since a
table was made fails here, in seconds, naming the table, the input and the command that
makes it again (the refits themselves are slow and run in make test)."""

from __future__ import annotations


import pandas as pd
import pytest

from napkin import derived, tables
from napkin.validation import derive, report

DERIVED = (*derive.TABLES, report.PEER_TABLE)
FITTING = derived.ROOT / "lib" / "napkin" / "validation" / "fitting.py"


@pytest.mark.parametrize("name", DERIVED)
def test_each_derived_table_is_what_the_data_and_code_here_make(name):
    problem = derived.check(tables.path_of(name))
    assert problem is None, problem


def test_every_fingerprint_belongs_to_a_derived_table():
    found = {p.name.removesuffix(derived.SUFFIX) for p in tables.data_dir().glob(
        f"*{derived.SUFFIX}")}
    assert found == set(DERIVED)


def test_a_measured_value_changed_without_a_refit_is_named(data_copy):
    m = pd.read_csv(data_copy / "mlperf_llm.csv", dtype=str, keep_default_na=False)
    m.loc[m[tables.ROW_ID] == "mlperf-0042", "value"] = "12345.6"
    m.to_csv(data_copy / "mlperf_llm.csv", index=False)
    for name in derive.TABLES:
        problem = derived.check(tables.path_of(name))
        assert problem and f"{name}.csv" in problem
        assert "data/mlperf_llm.csv: 1 row changed (mlperf-0042)" in problem
        assert "scripts/fit_step_model.py --overwrite" in problem
    peer = derived.check(tables.path_of(report.PEER_TABLE))
    assert "mlperf-0042" in peer and "benchmarks/peer_llm_analysis.py --overwrite" in peer


def test_a_row_inserted_and_the_table_edited_are_named(data_copy):
    s = pd.read_csv(data_copy / "serving_measurements.csv", dtype=str, keep_default_na=False)
    next_id = f"serving-{s[tables.ROW_ID].str[len('serving-'):].astype(int).max() + 1:04d}"
    new = s.iloc[[5]].assign(**{tables.ROW_ID: next_id, "value": "1.0"})
    pd.concat([s.iloc[:100], new, s.iloc[100:]]).to_csv(
        data_copy / "serving_measurements.csv", index=False)
    cv = data_copy / "step_model_crossval.csv"
    header, first, rest = cv.read_text().split("\n", 2)
    cv.write_text("\n".join([header, first + "1", rest]))   # one cell edited by hand
    problem = derived.check(cv)
    assert f"1 row added ({next_id})" in problem
    assert "step_model_crossval.csv itself was edited" in problem


def test_rows_moved_within_their_table_are_no_change(data_copy):
    s = pd.read_csv(data_copy / "serving_measurements.csv", dtype=str, keep_default_na=False)
    s.iloc[::-1].to_csv(data_copy / "serving_measurements.csv", index=False)
    assert derived.check(tables.path_of(derive.CROSSVAL_TABLE)) is None


def _edited(monkeypatch, path, edit):
    """``derived`` reads ``path``'s code as ``edit`` makes it."""
    read = derived._source
    monkeypatch.setattr(derived, "_source",
                        lambda p: edit(read(p)) if p == path else read(p))


def test_a_fitted_modules_code_change_is_named(monkeypatch):
    _edited(monkeypatch, FITTING, lambda code: code.replace(
        "LOSS_SCALE = math.log(1.2)", "LOSS_SCALE = math.log(1.25)"))
    problem = derived.check(tables.path_of(derive.CROSSVAL_TABLE))
    assert "code changed: lib/napkin/validation/fitting.py" in problem
    assert "scripts/fit_step_model.py --overwrite" in problem
    assert derived.check(tables.path_of(report.PEER_TABLE)) is None  # not its code


def test_a_docstring_or_a_comment_changed_is_no_change(monkeypatch):
    def reworded(code):
        code = code.replace('"""Fitting the step model', '"""How the step model is fitted', 1)
        code = code.replace("#: Loss scale: the soft L1's knee", "#: the soft L1's knee")
        return code.replace("def soft_l1(r, scale: float = LOSS_SCALE):\n",
                            "def soft_l1(r, scale: float = LOSS_SCALE):  # per row\n"
                            '    """A new docstring."""\n', 1)
    assert reworded(FITTING.read_text()) != FITTING.read_text()
    _edited(monkeypatch, FITTING, reworded)
    assert derived.check(tables.path_of(derive.CROSSVAL_TABLE)) is None


def test_the_fit_reads_the_published_rows_and_is_made_by_the_validation():
    fingerprint = derived.sidecar(tables.path_of(derive.CROSSVAL_TABLE)).read_text()
    for name in ("mlperf_llm.csv", "serving_measurements.csv", "hardware_specs.csv",
                 "lib/napkin/validation/fitting.py", "lib/napkin/predict/step.py"):
        assert f'"{name}"' in fingerprint, name
    assert '"lib/napkin/derived.py"' not in fingerprint  # the instrument is no input


def test_reads_records_the_files_opened_under_its_directory(tmp_path):
    (tmp_path / "a.csv").write_text("x\n1\n")
    (tmp_path / "sub").mkdir()
    (tmp_path / "sub" / "b.json").write_text("{}")
    with derived.Reads(tmp_path) as reads:
        pd.read_csv(tmp_path / "a.csv")
        (tmp_path / "sub" / "b.json").read_text()
        (tmp_path / "c.csv").write_text("written, not read")
    (tmp_path / "a.csv").read_text()  # after the block
    assert reads.files == {"a.csv", "sub/b.json"}


def test_the_refit_refuses_a_table_in_its_way_before_it_fits(tmp_path, capsys):
    """A table already in the output folder is refused at once (the script returns before
    reading a row), not after a quarter of an hour of fitting; nothing there is touched."""
    import importlib.util
    import time

    spec = importlib.util.spec_from_file_location(
        "fit_step_model", derived.ROOT / "scripts" / "fit_step_model.py")
    script = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(script)
    kept = tmp_path / f"{derive.CROSSVAL_TABLE}.csv"
    kept.write_text("a reader's own table\n")
    start = time.time()
    assert script.main(["--out", str(tmp_path)]) == 1
    assert time.time() - start < 5
    assert "already exist" in capsys.readouterr().err
    assert kept.read_text() == "a reader's own table\n"
    with pytest.raises(ValueError, match="pass --overwrite"):
        derive.destination(tmp_path)
    assert derive.destination(tmp_path, overwrite=True) == tmp_path
