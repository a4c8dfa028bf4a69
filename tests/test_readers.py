"""Readers' machines: share a measurement, refuse what is malformed or impossible, show it."""

from __future__ import annotations

import copy
import json
import re
from pathlib import Path

import pandas as pd
import pytest

from napkin import cli
from napkin import tables
from napkin.readers import figures as charts
from napkin.measure import probe_compare
from napkin.readers import bounds, check, page, schema, submission

ROOT = Path(__file__).resolve().parents[1]
ACCEPTED = ROOT / "data" / "readers"
SHA = "ab" * 32


def record(tmp_path: Path | None = None) -> dict:
    """A `make measure` record as session.run writes it (values from a quick run here)."""
    model = (tmp_path or Path("/nonexistent")) / "synthetic-Q8_0.gguf"
    if tmp_path is not None:
        model.write_bytes(b"GGUF" + bytes(1000))
    pp, tg = [46.3, 47.3, 46.1], [6.86, 6.85, 6.85]
    return {
        "schema": "napkin.measure/1", "timestamp": "2026-12-01T20:30:00+00:00", "mode": "quick",
        "machine": {"cpu_model": "Intel(R) Xeon(R) Processor", "logical_cpus": 2,
                    "threads_used": 2, "os": "Linux-6.1.0-x86_64-with-glibc2.36",
                    "machine": "x86_64", "memory_bytes_total": 25 * 10**9},
        "runner": {"runner": "llama-cpp-python", "llama_cpp_version": "0.5.0-dev",
                   "backend": "CPU", "devices": [], "threads": 2, "binding_version": "0.3.36",
                   "system_info": "CPU : AVX2 = 1 | AVX512 = 1 |"},
        "runs": [{
            "model_path": str(model), "format": "Q8_0",
            "synthetic": {"format": "Q8_0", "seed": 0, "shape": {
                "hidden_size": 2048, "num_hidden_layers": 36, "vocab_size": 32000}},
            "model_bytes": 2035523584, "model_params": 1915373568, "file_bytes": 1004,
            "bandwidth_bytes_per_s": 31.6e9,
            "bandwidth": {"origin": "probe", "source": "memory probe on the CPU, best pass"},
            "probe_before": {"best_bytes_per_s": 31.6e9, "median_bytes_per_s": 29.8e9},
            "probe_best_bytes_per_s": 31.6e9, "probe_spread": 0.47,
            "pp": {"test": "pp128", "tokens_per_s": sum(pp) / 3, "stddev": 0.6, "samples": pp},
            "tg": {"test": "tg64", "tokens_per_s": sum(tg) / 3, "stddev": 0.01, "samples": tg},
        }],
    }


FACTS = [{"name": "synthetic Q8_0 (hidden 2048, 36 layers, seed 0)", "quantisation": "Q8_0",
          "embedding_params": 32000 * 2048, "sha256": SHA}]


@pytest.fixture
def good() -> dict:
    return submission.from_record(record(), FACTS, commit="0" * 40, shared_on="2026-12-01")


def gpu(doc: dict) -> dict:
    """``doc`` as measured on an RTX 4090 with its vendor bandwidth."""
    doc["machine"] |= {"gpu": "NVIDIA GeForce RTX 4090", "backend": "CUDA"}
    doc["runs"][0]["ceiling"] = {"bandwidth_bytes_per_s": 1008e9, "origin": "spec",
                                 "source": "data/hardware_specs.csv", "chip": "RTX 4090"}
    return doc


def run0(doc: dict) -> dict:
    return doc["runs"][0]


def rate(doc: dict, kind: str, value: float) -> dict:
    r = run0(doc)[kind]
    r |= {"tokens_per_s": value, "samples": [value] * r["repetitions"]}
    return doc


def test_a_submission_from_a_record_is_valid_and_holds_nothing_personal(good, tmp_path):
    assert good["schema"] == schema.SCHEMA
    assert schema.shape_problems(good) == []
    assert check.check_document(good, "x.json", tmp_path) == []
    assert good["machine"]["os_family"] == "Linux" and good["machine"]["gpu"] is None
    assert good["llama_cpp"] == {"runner": "llama-cpp-python", "version": "0.5.0-dev",
                                 "commit": "0c1e570", "binding_version": "0.3.36",
                                 "build": "CPU : AVX2 = 1 | AVX512 = 1 |"}
    r = run0(good)
    assert r["decode"]["repetitions"] == 3 and r["ceiling"]["probe_spread"] == 0.47
    text = json.dumps(good)
    assert "/nonexistent" not in text and "model_path" not in text


# (what is wrong, how to break a valid submission, field named, words of the message)
REFUSALS = [
    ("malformed JSON", lambda d: "{not json", "(file)", "is not valid JSON"),
    ("a list, not an object", lambda d: [d], "(file)", "not a submission object"),
    ("unknown schema", lambda d: d | {"schema": "napkin-result/2"}, "schema",
     "this book reads napkin-result/1 only"),
    ("missing field", lambda d: (d["machine"].pop("cpu"), d)[1], "machine.cpu", "is missing"),
    ("mistyped field", lambda d: (d["machine"].update(threads="2"), d)[1], "machine.threads",
     "should be a whole number above 0"),
    ("unknown field", lambda d: (d["machine"].update(hostname="lab-7"), d)[1],
     "machine.hostname", "is not a field of napkin-result/1"),
    ("zero decode", lambda d: (run0(d)["decode"].update(tokens_per_s=0.0), d)[1],
     "runs[0].decode.tokens_per_s", "should be a number above 0"),
    ("negative prefill", lambda d: (run0(d)["prefill"].update(tokens_per_s=-46.0), d)[1],
     "runs[0].prefill.tokens_per_s", "should be a number above 0"),
    ("a negative repetition", lambda d: (run0(d)["decode"].update(samples=[6.9, -1.0, 6.8]),
                                         d)[1], "runs[0].decode.samples",
     "a list of numbers above 0"),
    ("repetitions and samples disagree", lambda d: (run0(d)["decode"].update(repetitions=5),
                                                    d)[1], "runs[0].decode.repetitions",
     "but there are 3 samples"),
    ("mean is not the samples'", lambda d: (run0(d)["decode"].update(tokens_per_s=9.0), d)[1],
     "runs[0].decode.tokens_per_s", "its samples average"),
    ("decode above 1.1x its ceiling", lambda d: rate(d, "decode", 18.0),
     "runs[0].decode.tokens_per_s", "x its ceiling"),
    ("prefill above a GPU's peak", lambda d: rate(gpu(d), "prefill", 2e6),
     "runs[0].prefill.tokens_per_s", "RTX 4090, INT8"),
    ("prefill above what any CPU can do", lambda d: rate(d, "prefill", 2e4),
     "runs[0].prefill.tokens_per_s", "INT8 operations per cycle (AMX)"),
    ("a spec bandwidth the data does not list",
     lambda d: (run0(gpu(d))["ceiling"].update(bandwidth_bytes_per_s=2000e9), d)[1],
     "runs[0].ceiling.bandwidth_bytes_per_s", "lists 1,008.0 for RTX 4090"),
    ("a home-directory path", lambda d: (run0(d)["model"].update(
        name="/home/alice/models/llama.gguf"), d)[1], "runs[0].model.name",
     "contains a home-directory path"),
    ("another absolute path", lambda d: (d["llama_cpp"].update(
        build="built in /opt/build/llama.cpp"), d)[1], "llama_cpp.build", "contains a file path"),
    ("an e-mail address", lambda d: (d["machine"].update(cpu="alice@example.org's box"), d)[1],
     "machine.cpu", "contains an e-mail address"),
]


@pytest.mark.parametrize("what,breaks,field,words", REFUSALS, ids=[r[0] for r in REFUSALS])
def test_the_check_refuses_with_one_line_naming_file_field_and_fix(good, tmp_path, capsys,
                                                                   what, breaks, field, words):
    bad = breaks(copy.deepcopy(good))
    path = tmp_path / "bad.json"
    path.write_text(bad if isinstance(bad, str) else json.dumps(bad))
    problems = check.check_file(path, tmp_path / "accepted")
    assert [p.field for p in problems] == [field], problems
    assert words in problems[0].message
    assert cli.main(["results", "check", str(path)]) == 1
    out = capsys.readouterr()
    lines = out.out.strip().splitlines()
    assert lines == [f"{path}: {field}: {problems[0].message}"] and not out.err
    assert re.search(r"; |: check|: share|, or ", lines[0]), "the line must say what to do"


def test_speculative_decoding_may_pass_the_ceiling(good, tmp_path):
    fast = rate(copy.deepcopy(good), "decode", 18.0)
    assert check.check_document(fast | {"speculative": True}, "x.json", tmp_path) == []


def test_this_machines_user_name_is_refused(good, tmp_path, monkeypatch):
    monkeypatch.setattr(check, "local_names", lambda: ["alicew"])
    run0(good)["model"]["name"] = "alicew-llama.gguf"
    [p] = check.check_document(good, "x.json", tmp_path)
    assert p.field == "runs[0].model.name" and "user or host name" in p.message


def test_a_measurement_already_accepted_is_refused(good, tmp_path):
    accepted = tmp_path / "accepted"
    accepted.mkdir()
    (accepted / "first.json").write_text(json.dumps(good))
    assert check.check_file(accepted / "first.json", accepted) == []  # not its own duplicate
    again = tmp_path / "again.json"
    again.write_text(json.dumps(good | {"shared_on": "2026-12-02"}))
    [p] = check.check_file(again, accepted)
    assert p.field == "measured_at" and "already accepted as data/readers/first.json" in p.message


def napkin_cli(*args: str, cwd: Path = ROOT, env: dict | None = None):
    """``python -m napkin ARGS`` as a reviewer types it, in a shell (so ``*.json`` globs)."""
    import os
    import shlex
    import subprocess
    import sys

    line = " ".join([shlex.quote(sys.executable), "-m", "napkin", *args])
    return subprocess.run(line, shell=True, cwd=cwd, capture_output=True, text=True,
                          env=os.environ | (env or {}))


def test_the_documented_reviewer_command_passes_on_the_books_data():
    """CONTRIBUTING's command, exactly as it is written there, over ``data/readers/``."""
    command = "python -m napkin results check data/readers/*.json"
    assert f"`{command}`" in (ROOT / "CONTRIBUTING.md").read_text()
    done = napkin_cli(*command.split()[3:])
    assert done.returncode == 0, done.stdout + done.stderr
    assert done.stdout.strip().endswith("valid")


def test_a_pull_request_adding_a_submission_passes_and_a_true_duplicate_fails(good, tmp_path):
    """A copy of ``data/`` (its readers' folder copied, the rest linked) gains a new reader's
    file, checked as a pull request is; then the same measurement under a second name."""
    import shutil

    data = tmp_path / "data"
    data.mkdir()
    for item in (ROOT / "data").iterdir():
        if item.name != "readers":
            (data / item.name).symlink_to(item)
    shutil.copytree(ACCEPTED, data / "readers")
    new = data / "readers" / submission.file_name(good)
    new.write_text(json.dumps(good, indent=1))
    env = {"NAPKIN_DATA": str(data)}
    done = napkin_cli("results", "check", "data/readers/*.json", cwd=tmp_path, env=env)
    assert done.returncode == 0, done.stdout + done.stderr
    assert done.stdout.strip() == f"{len(list(ACCEPTED.glob('*.json'))) + 1} files valid"
    twin = new.with_name("2026-12-02-" + new.name.split("-", 3)[3])
    twin.write_text(json.dumps(good | {"shared_on": "2026-12-02"}))
    done = napkin_cli("results", "check", "data/readers/*.json", cwd=tmp_path, env=env)
    assert done.returncode == 1
    lines = done.stdout.strip().splitlines()
    assert len(lines) == 2 and all("measured_at: the same measurement is already" in x
                                   for x in lines), done.stdout
    assert f"as data/readers/{twin.name}" in lines[0] or f"as data/readers/{twin.name}" in lines[1]


def test_an_accepted_file_is_not_its_own_duplicate_through_another_path(good, tmp_path):
    """The same file spelled through a symlink, or the same entry in another checkout."""
    accepted = tmp_path / "accepted"
    accepted.mkdir()
    (accepted / "first.json").write_text(json.dumps(good))
    (tmp_path / "link").symlink_to(accepted)
    assert check.check_file(tmp_path / "link" / "first.json", accepted) == []
    clone = tmp_path / "clone"
    clone.mkdir()
    (clone / "first.json").write_text(json.dumps(good))
    assert check.check_file(clone / "first.json", accepted) == []
    (clone / "second.json").write_text(json.dumps(good))
    [p] = check.check_file(clone / "second.json", accepted)
    assert "already accepted as data/readers/first.json" in p.message


def test_missing_file_and_several_files(good, tmp_path, capsys):
    ok = tmp_path / "ok.json"
    ok.write_text(json.dumps(good))
    assert cli.main(["results", "check", str(ok)]) == 0
    assert capsys.readouterr().out.strip() == "1 file valid"
    assert cli.main(["results", "check", str(ok), str(tmp_path / "gone.json")]) == 1
    assert "gone.json: (file): no such file" in capsys.readouterr().out


def test_share_writes_checks_and_never_overwrites(tmp_path, monkeypatch, capsys):
    monkeypatch.setenv("NAPKIN_RESULTS", str(tmp_path / "results"))
    (tmp_path / "results").mkdir()
    rec = tmp_path / "results" / "measure-2026-12-01T203000Z-quick.json"
    rec.write_text(json.dumps(record(tmp_path)))
    assert cli.main(["share"]) == 0
    out = capsys.readouterr().out
    [made] = (tmp_path / "results" / "share").glob("*.json")
    doc = json.loads(made.read_text())
    assert doc["runs"][0]["model"]["sha256"] == submission.sha256(tmp_path / "synthetic-Q8_0.gguf")
    assert f"data/readers/{made.name}" in out and "issue form" in out
    assert str(tmp_path) not in made.read_text()
    assert cli.main(["share", str(rec)]) == 1
    assert "exists already" in capsys.readouterr().err
    (tmp_path / "synthetic-Q8_0.gguf").write_bytes(b"GGUF")
    assert cli.main(["share", str(rec), "--out", str(tmp_path / "elsewhere")]) == 1
    assert "changed since it was measured" in capsys.readouterr().err


def test_share_without_a_measurement_says_what_to_run(tmp_path, monkeypatch, capsys):
    monkeypatch.setenv("NAPKIN_RESULTS", str(tmp_path))
    assert cli.main(["share"]) == 1
    assert "make measure QUICK=1" in capsys.readouterr().err


def test_every_accepted_submission_passes_the_check():
    files = sorted(ACCEPTED.glob("*.json"))
    assert files, "data/readers/ holds the book's own measurement at least"
    assert check.check_files(files, ACCEPTED) == []
    for f in files:
        assert f.name == submission.file_name(json.loads(f.read_text()))


def test_the_format_is_documented_where_readers_look():
    readme = (ROOT / "data" / "README.md").read_text()
    for field, what in schema.documented():
        assert f"| `{field}` | {what} |" in readme, field
    form = (ROOT / ".github" / "ISSUE_TEMPLATE" / "reader-result.yml").read_text()
    config = (ROOT / "_config.yml").read_text()
    repo = re.search(r"url: (https://github.com/\S+)", config).group(1)
    assert from_cli_issue_url().startswith(repo + "/issues/new")
    assert "reader-result.yml" in from_cli_issue_url() and "render: json" in form


def from_cli_issue_url() -> str:
    return cli.ISSUE_FORM


def test_bounds():
    doc = gpu(submission.from_record(record(), FACTS, commit="x", shared_on="2026-12-01"))
    peak = bounds.prefill_peak(doc, run0(doc))
    assert peak.value > 1e14 and "RTX 4090" in peak.what
    doc["machine"]["gpu"] = "Some Future GPU"
    assert bounds.prefill_peak(doc, run0(doc)) is None  # not bounded: the data lacks it
    cpu = submission.from_record(record(), FACTS, commit="x", shared_on="2026-12-01")
    assert bounds.prefill_peak(cpu, run0(cpu)).value == 2 * 2048 * 6e9


def test_the_page_rows_charts_and_table_draw_offline(good, tmp_path):
    import vl_convert

    entries = [("a.json", good), ("b.json", gpu(copy.deepcopy(good)))]
    runs = page.runs(entries)
    assert list(runs["backend"]) == ["CPU", "CUDA"]
    assert runs["fraction_of_ceiling"].between(0, 1.1).all()
    assert pd.isna(runs["peak_flops_per_s"].iloc[0]) and runs["peak_flops_per_s"].iloc[1] > 0
    both = page.napkin_rows(entries)
    assert {"Readers", "Apple Silicon", "CPU"} <= set(both["family"])
    assert not both[["llama_cpp", "date", "backend"]].isna().any().any()
    prefill = page.prefill_rows(entries)
    assert (prefill["family"] == "Readers").sum() == 1
    assert page.counts(entries).to_dict("records") == [
        {"backend": "CPU", "submissions": 1, "runs": 1},
        {"backend": "CUDA", "submissions": 1, "runs": 1}]
    for chart in (charts.decode_chart(both), charts.prefill_chart(prefill)):
        svg = vl_convert.vegalite_to_svg(chart.to_dict(), vl_version="5.20")
        assert svg.count("<path") > 10
    html = tables.sortable(runs, "t", {"machine": "Machine", "tokens_per_s": "Decode"}).html()
    assert 'id="t"' in html and "addEventListener" in html and 'data-sort="6.85' in html


def test_probe_comparison_is_read_from_the_stored_benchmark():
    path = probe_compare.latest()
    assert path is not None and path.parent.name == "measured"
    result = probe_compare.load(path)
    ratios = probe_compare.ratios(result).set_index("ratio")
    assert {"probe best / llama-roofline best", "baseline best / llama-roofline best",
            "decode F16 / probe around F16"} <= set(ratios.index)
    assert probe_compare.medians(result)["median"].gt(0).all()


@pytest.mark.slow
def test_round_trip_measure_share_check_and_page(tmp_path, monkeypatch):
    """This machine, for real: the quick plan (on a 100 MB model, so that it takes seconds
    however busy the machine is), shared, checked, shown."""
    from dataclasses import replace

    from napkin import measure

    monkeypatch.setenv("NAPKIN_RESULTS", str(tmp_path / "results"))
    monkeypatch.setenv("NAPKIN_CACHE", str(tmp_path / "cache"))
    plan = replace(measure.QUICK, cache_multiple=0, n_prompt=32, n_gen=8, reps=2)
    rec = measure.live(plan)
    if rec is None:
        pytest.skip("llama.cpp cannot run here")
    assert cli.main(["share", "--out", str(tmp_path / "share")]) == 0
    [made] = (tmp_path / "share").glob("*.json")
    assert check.check_file(made, tmp_path / "accepted") == []
    doc = json.loads(made.read_text())
    assert doc["runs"][0]["decode"]["repetitions"] == 2
    runs = page.runs([(made.name, doc)])
    assert runs["tokens_per_s"].iloc[0] > 0 and runs["backend"].iloc[0] == rec["runner"]["backend"]


def test_a_misshapen_file_is_still_checked_for_personal_strings(good, tmp_path):
    good["machine"]["hostname"] = "lab-7"
    run0(good)["model"]["name"] = "/Users/alice/llama.gguf"
    fields = [p.field for p in check.check_document(good, "x.json", tmp_path)]
    assert fields == ["machine.hostname", "runs[0].model.name"]
