"""What is made from ``data/`` is remembered per version of the tables it was made from
(:func:`napkin.tables.cached`): no cache to clear by hand, none handed out to be changed."""

import json
import os
import subprocess
import sys
from pathlib import Path

import pandas as pd
import pytest

from napkin import catalog, hardware, tables
from napkin.validation import derive, report, rows, scoring

ROOT = Path(__file__).resolve().parents[1]


def test_a_table_edited_is_read_afresh(data_copy):
    before = hardware.chip("H100 SXM").specs["memory_bandwidth_GB_per_s"]
    specs = pd.read_csv(data_copy / "hardware_specs.csv")
    at = (specs["chip"] == "H100 SXM") & (specs["spec"] == "memory_bandwidth_GB_per_s")
    specs.loc[at, "value"] = before * 2
    specs.to_csv(data_copy / "hardware_specs.csv", index=False)
    assert hardware.chip("H100 SXM").specs["memory_bandwidth_GB_per_s"] == before * 2


def test_a_model_config_edited_is_read_afresh_by_the_rows_it_limits(data_copy):
    name = "Llama-3.1-8B"
    before = rows._context_limit(name)
    path = data_copy / catalog.index().set_index("model").loc[name, "config_file"]
    config = json.loads(path.read_text())
    config["_max_context_tokens"] = 4096
    path.write_text(json.dumps(config))
    assert before > 4096 and rows._context_limit(name) == 4096


def test_another_data_folder_is_another_version(data_copy, monkeypatch):
    inside = tables.versions(scoring.READS)
    monkeypatch.delenv("NAPKIN_DATA")
    assert tables.versions(scoring.READS) != inside


def test_a_caller_cannot_change_what_the_next_caller_gets():
    first = rows.all_cases()
    first.loc[first.index[0], "measured"] = -1.0
    assert rows.all_cases().loc[first.index[0], "measured"] != -1.0
    with pytest.raises(TypeError):  # a mapping handed out read-only is shared, not copied
        hardware.chips()["H100 SXM"] = None


def test_tables_inside_a_result_are_copies_too():
    calls = []

    @tables.cached("models")
    def frames():
        calls.append(1)
        return {"models": [tables.load("models")]}, (tables.load("models"),)

    first, (second,) = frames()
    first["models"][0].loc[0, "model"] = "changed"
    first["extra"] = 1
    second.loc[0, "model"] = "changed"
    again, (twice,) = frames()
    assert list(again) == ["models"] and len(calls) == 1
    assert again["models"][0].loc[0, "model"] != "changed" != twice.loc[0, "model"]


def test_a_missing_table_is_named_with_those_there_are():
    with pytest.raises(ValueError, match="available: .*hardware_specs"):
        tables.version("no_such_table")


READERS = {"napkin.validation.rows.all_cases": rows.READS,
           "napkin.validation.derive.rows": scoring.READS,
           "napkin.validation.report.scored": report.SCORED_READS}


@pytest.mark.parametrize("name", sorted(READERS))
def test_what_a_cached_reading_is_keyed_on_holds_every_file_it_reads(name):
    """Run in a fresh process (a table read and cached before is not opened again), the
    files each remembered reading opens are all among the tables it is keyed on: a table it
    read but was not keyed on would leave it stale when edited."""
    module, function = name.rsplit(".", 1)
    script = f"""
import importlib.util, json, sys
spec = importlib.util.spec_from_file_location("d", {str(ROOT / "lib/napkin/derived.py")!r})
d = importlib.util.module_from_spec(spec); spec.loader.exec_module(d)
with d.Reads(d.ROOT / "data") as reads:
    import {module} as m
    m.{function}()
print(json.dumps(sorted(reads.files)))
"""
    env = {**os.environ, "PYTHONPATH": str(ROOT / "lib")}
    env.pop("NAPKIN_DATA", None)
    out = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True,
                         env=env, check=True, cwd=ROOT).stdout
    read = json.loads(out.strip().splitlines()[-1])
    keyed = {f"{t}.csv" for t in READERS[name] if not t.endswith("/")}
    folders = tuple(t for t in READERS[name] if t.endswith("/"))
    assert read and "mlperf_llm.csv" in read
    assert [f for f in read if f not in keyed and not f.startswith(folders)] == []


def test_the_cached_readings_are_what_reading_afresh_gives(data_copy):
    """The remembered rows are the rows: read again in another data/ copy (so nothing is
    remembered), every case is the same."""
    pd.testing.assert_frame_equal(derive.rows(), derive.rows())
    fresh = derive.rows()
    os.environ["NAPKIN_DATA"] = str(tables._CHECKOUT_DATA)
    pd.testing.assert_frame_equal(fresh, derive.rows())
