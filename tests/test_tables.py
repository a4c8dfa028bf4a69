"""What is made from ``data/`` is remembered per version of the tables it was made from
(:func:`napkin.tables.cached`): no cache to clear by hand, none handed out to be changed."""

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pandas as pd
import pytest

from napkin import catalog, hardware, tables
from napkin.validation import rows

ROOT = Path(__file__).resolve().parents[1]


def test_a_table_edited_is_read_afresh(data_copy):
    before = hardware.chip("H100 SXM").specs["memory_bandwidth_GB_per_s"]
    specs = pd.read_csv(data_copy / "hardware_specs.csv")
    at = (specs["chip"] == "H100 SXM") & (specs["spec"] == "memory_bandwidth_GB_per_s")
    specs.loc[at, "value"] = before * 2
    specs.to_csv(data_copy / "hardware_specs.csv", index=False)
    assert hardware.chip("H100 SXM").specs["memory_bandwidth_GB_per_s"] == before * 2


def test_an_edit_within_one_clock_tick_is_read_afresh(data_copy):
    """A file rewritten with the same modification time (a coarse clock, or a copy that
    keeps it) but another size is another version, down to the table read from disk."""
    path = data_copy / "hardware_specs.csv"
    before = hardware.chip("H100 SXM").specs["memory_bandwidth_GB_per_s"]
    stamp = path.stat()
    specs = pd.read_csv(path)
    at = (specs["chip"] == "H100 SXM") & (specs["spec"] == "memory_bandwidth_GB_per_s")
    specs.loc[at, "value"] = before * 20
    specs.to_csv(path, index=False)
    os.utime(path, ns=(stamp.st_atime_ns, stamp.st_mtime_ns))
    assert hardware.chip("H100 SXM").specs["memory_bandwidth_GB_per_s"] == before * 20


def test_a_published_row_edited_in_place_is_read_afresh(data_copy):
    first = rows.all_cases()
    table = pd.read_csv(data_copy / "serving_measurements.csv", dtype=str,
                        keep_default_na=False)
    row_id = first.loc[first["ok"] & (first["table"] == "serving_measurements"),
                       tables.ROW_ID].iloc[0]
    table.loc[table[tables.ROW_ID] == row_id, "value"] = "12345.5"
    table.to_csv(data_copy / "serving_measurements.csv", index=False)
    again = rows.all_cases().set_index(tables.ROW_ID)
    assert again.loc[row_id, "measured"] == 12345.5


def test_a_model_config_edited_is_read_afresh_by_the_rows_it_limits(data_copy):
    """A shorter context in a model's config declines the published rows that ran longer."""
    def over(cases):
        return cases["reason"].str.contains("exceed Llama-3.1-8B's context").sum()

    before = over(rows.all_cases())
    path = data_copy / catalog.index().set_index("model").loc["Llama-3.1-8B", "config_file"]
    config = json.loads(path.read_text())
    config["_max_context_tokens"] = 1024
    path.write_text(json.dumps(config))
    assert over(rows.all_cases()) > before


def test_another_data_folder_is_another_version(data_copy, monkeypatch):
    inside = tables.versions(rows.READS)
    monkeypatch.delenv("NAPKIN_DATA")
    assert tables.versions(rows.READS) != inside


def test_a_call_is_one_call_with_or_without_its_defaults_and_the_last_used_versions_stay(
        tmp_path, monkeypatch):
    calls = []

    @tables.cached("models")
    def count(setting="S"):
        calls.append(setting)
        return len(calls)

    assert count() == count("S") == count(setting="S") == 1
    copies = {}
    for name in "ABC":
        copies[name] = tmp_path / name
        shutil.copytree(tables.data_dir(), copies[name])
    for name in "ABACA":  # A is used just before C, so C puts out B, not A
        monkeypatch.setenv("NAPKIN_DATA", str(copies[name]))
        count()
    assert len(calls) == 1 + 3


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


#: Every function kept by ``tables.cached`` with named tables, and a call of it.
KEYED = {
    "napkin.hardware.chips": "()",
    "napkin.predict.calibration.calibrated": "()",
    "napkin.predict.calibration.stacks": "()",
    "napkin.costs.service.sources": "()",
    "napkin.validation.rows.reference": "()",
    "napkin.validation.rows.all_cases": "()",
    "napkin.validation.derive.rows": "()",
    "napkin.validation.report.scored": "()",
    "napkin.validation.report._crossval": "(('model',),)",
    "napkin.validation.scoring._engine": "('B200', 'DeepSeek-V3', 1, 1, 'NVFP4', 'fp8', 1.0,"
                                         " None, None, None, 8)",
    "napkin.predict.engines._catalog_model": "('DeepSeek-V3', 'FP8', 'fp8')",
    "napkin.predict.engines._roof": "('H100 SXM', 'fp8')",
    "napkin.predict.engines._overhead_share": "()",
    "napkin.predict.engines._link": "('H100 SXM', 8)",
    "napkin.predict.engines.attention_roof_ratio": "('B200', 'NVFP4', 'fp8')",
    "napkin.buying.estimate._terms": "(napkin.buying.Workload('chat', 512, 256, 4, "
                                     "'Llama-3.1-8B', 'Q4_0'),)",
}


def test_every_function_kept_against_named_tables_is_named():
    """The list below covers each use of ``tables.cached`` with names in the library."""
    import re

    found = set()
    for path in (ROOT / "lib" / "napkin").rglob("*.py"):
        module = ".".join(path.relative_to(ROOT / "lib").with_suffix("").parts)
        text = path.read_text()
        for m in re.finditer(r"tables\.cached\([^)]+\)\n(?:def (\w+)|)", text):
            if m.group(1):
                found.add(f"{module}.{m.group(1)}")
        for m in re.finditer(r"^(\w+) = tables\.cached\([^)]+\)\(", text, re.M):
            found.add(f"{module}.{m.group(1)}")
    assert found == set(KEYED)


def test_each_kept_reading_is_keyed_on_every_file_it_reads(tmp_path):
    """Each function kept against named tables, run on a fresh copy of data/ (so nothing it
    reads is remembered, its own or its callees'), opens only files of the tables it is
    keyed on: a file it read but was not keyed on would leave it stale when edited."""
    script = f"""
import importlib, importlib.util, json, os, shutil, sys
import napkin, napkin.buying
spec = importlib.util.spec_from_file_location("d", {str(ROOT / "lib/napkin/derived.py")!r})
d = importlib.util.module_from_spec(spec); spec.loader.exec_module(d)
out = {{}}
for i, (name, args) in enumerate(json.loads(sys.argv[1]).items()):
    module, function = name.rsplit(".", 1)
    fn = getattr(importlib.import_module(module), function)
    copy = os.path.join({str(tmp_path)!r}, str(i))
    shutil.copytree({str(tables.data_dir())!r}, copy)
    os.environ["NAPKIN_DATA"] = copy
    with d.Reads(copy) as reads:
        fn(*eval(args))
    out[name] = {{"read": sorted(reads.files), "keyed": list(fn.tables)}}
print(json.dumps(out))
"""
    env = {**os.environ, "PYTHONPATH": str(ROOT / "lib")}
    env.pop("NAPKIN_DATA", None)
    done = subprocess.run([sys.executable, "-c", script, json.dumps(KEYED)],
                          capture_output=True, text=True, env=env, cwd=ROOT)
    assert done.returncode == 0, done.stderr[-2000:]
    found = json.loads(done.stdout.strip().splitlines()[-1])
    assert found["napkin.validation.rows.all_cases"]["read"]  # the hook saw the reads
    for name, seen in found.items():
        keyed = {f"{t}.csv" for t in seen["keyed"] if not t.endswith("/")}
        folders = tuple(t for t in seen["keyed"] if t.endswith("/"))
        assert [f for f in seen["read"] if f not in keyed and not f.startswith(folders)] \
            == [], name
