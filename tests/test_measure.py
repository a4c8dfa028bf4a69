"""Live measurement: synthetic models, llama.cpp runners, probe, records, and faults."""

from __future__ import annotations

import json
import os
import stat
import subprocess
import sys
from pathlib import Path

import pytest

from napkin import measure
from napkin.measure import machine, record, results, runner, session, synthetic
from napkin.measure.inprocess import InProcess
from napkin.measure.llama_bench import LlamaBench, parse_llama_bench_json
from napkin.measure import probe
from napkin.measure.probe import KERNELS, read_bandwidth, thread_counts

FIXTURES = Path(__file__).with_name("fixtures")
TINY = synthetic.Shape(hidden_size=256, num_hidden_layers=1, num_attention_heads=4,
                       num_key_value_heads=4, head_dim=64, intermediate_size=512,
                       vocab_size=512, context_length=512)


@pytest.fixture(scope="module")
def tiny_models(tmp_path_factory):
    root = tmp_path_factory.mktemp("models")
    return {fmt: synthetic.write(root / f"tiny-{fmt}.gguf", TINY, fmt, seed=0)
            for fmt in synthetic.FORMATS}


@pytest.fixture(autouse=True)
def isolated_results(tmp_path, monkeypatch):
    """Results of tests go to a temporary folder, never the reader's results/; a reader's
    own llama-bench or bandwidth setting does not leak into the tests."""
    monkeypatch.setenv("NAPKIN_RESULTS", str(tmp_path / "results"))
    monkeypatch.delenv("LLAMA_BENCH", raising=False)
    monkeypatch.delenv("NAPKIN_BANDWIDTH_GB_PER_S", raising=False)


# -- synthetic models --------------------------------------------------------------------

def test_same_seed_same_bytes_different_seed_different(tmp_path, tiny_models):
    again = synthetic.write(tmp_path / "again.gguf", TINY, "Q8_0", seed=0)
    other = synthetic.write(tmp_path / "other.gguf", TINY, "Q8_0", seed=1)
    assert synthetic.sha256(again) == synthetic.sha256(tiny_models["Q8_0"])
    assert synthetic.sha256(other) != synthetic.sha256(again)


@pytest.mark.parametrize("fmt", synthetic.FORMATS)
def test_synthetic_model_loads_and_file_is_bytes_per_token(tiny_models, fmt):
    path = tiny_models[fmt]
    inproc = InProcess(threads=1)
    model = inproc.load(path)
    try:
        info = inproc.model_info(model)
    finally:
        inproc.llama.llama_model_free(model)
    # Everything after the header is tensor data, and llama.cpp counts exactly that.
    assert path.stat().st_size - synthetic.data_offset(path) == info.model_bytes
    assert info.model_bytes == synthetic.tensor_bytes(TINY, fmt)
    assert info.n_vocab == TINY.vocab_size


def test_shape_for_size_lands_near_the_target():
    shape = synthetic.shape_for_size(400e6, "Q8_0")
    size = synthetic.tensor_bytes(shape, "Q8_0")
    per_layer = synthetic.tensor_bytes(synthetic.Shape(num_hidden_layers=2), "Q8_0") - \
        synthetic.tensor_bytes(synthetic.Shape(num_hidden_layers=1), "Q8_0")
    assert abs(size - 400e6) <= per_layer / 2


@pytest.mark.parametrize("kwargs,message", [({"hidden_size": 100}, "multiple of 32"),
                                            ({"num_key_value_heads": 3}, "multiple"),
                                            ({"vocab_size": 10}, "vocab_size"),
                                            ({"head_dim": 0}, "positive")])
def test_bad_shapes(kwargs, message):
    with pytest.raises(ValueError, match=message):
        synthetic.Shape(**kwargs)


def test_unknown_format():
    with pytest.raises(ValueError, match="F16, Q8_0, Q4_0"):
        synthetic.tensor_bytes(TINY, "Q5_K")


def test_failed_write_leaves_nothing_behind(tmp_path, monkeypatch):
    def explode(*args, **kwargs):
        raise OSError("disk full")

    monkeypatch.setattr(synthetic, "_random_blocks", explode)
    with pytest.raises(OSError, match="disk full"):
        synthetic.write(tmp_path / "m.gguf", TINY, "Q8_0")
    assert list(tmp_path.iterdir()) == []


# -- runners -------------------------------------------------------------------------------

def test_in_process_runner_measures_pp_and_tg(tiny_models):
    inproc = InProcess(threads=1)
    assert isinstance(inproc, runner.Runner)
    out = inproc.measure(tiny_models["Q8_0"], 16, 8, 2)
    assert isinstance(out, results.Measurement)
    for rate, n in ((out.pp, 16), (out.tg, 8)):
        assert rate.n_tokens == n and rate.tokens_per_s > 0 and len(rate.samples) == 2
        assert rate.tokens_per_s == pytest.approx(sum(rate.samples) / 2)
    assert out.model.model_bytes == synthetic.tensor_bytes(TINY, "Q8_0")
    assert results.Measurement.from_dict(json.loads(json.dumps(out.to_dict()))) == out
    only_tg = inproc.measure(tiny_models["Q8_0"], 0, 4, 1)
    assert only_tg.pp is None and "pp" not in only_tg.to_dict()


def test_summarise_is_mean_of_rates_not_total():
    rate = results.summarise("tg4", 4, [1.0, 2.0])
    assert rate.tokens_per_s == pytest.approx((4 + 2) / 2)
    assert rate.stddev == pytest.approx(1.41421356, rel=1e-6)
    with pytest.raises(ValueError):
        results.summarise("tg4", 4, [])


def test_recorded_llama_bench_json_parses():
    text = (FIXTURES / "llama_bench_cpu.json").read_text()
    rows = parse_llama_bench_json(text)
    assert {(r["n_prompt"], r["n_gen"]) for r in rows} == {(128, 0), (0, 64)}
    assert all(r["avg_ts"] > 0 and r["model_size"] > 0 for r in rows)


@pytest.mark.parametrize("text,message", [("", "not JSON"), ("garbage", "not JSON"),
                                          ("[]", "non-empty list"),
                                          ('[{"n_prompt": 1}]', "lacks n_gen")])
def test_llama_bench_garbage_is_explained(text, message):
    with pytest.raises(RuntimeError, match=message):
        parse_llama_bench_json(text)


def _fake_llama_bench(tmp_path: Path, script: str) -> Path:
    """A stand-in executable that misbehaves the way a broken llama-bench build can."""
    path = tmp_path / "llama-bench"
    path.write_text("#!/bin/sh\n" + script)
    path.chmod(path.stat().st_mode | stat.S_IEXEC)
    return path


def test_llama_bench_exiting_nonzero(tmp_path, tiny_models):
    fake = _fake_llama_bench(tmp_path, "echo 'error: failed to load model' >&2; exit 3\n")
    with pytest.raises(RuntimeError, match="status 3: error: failed to load model"):
        LlamaBench(fake).measure(tiny_models["Q8_0"], 16, 8, 1)


def test_llama_bench_printing_garbage(tmp_path, tiny_models):
    fake = _fake_llama_bench(tmp_path, "echo 'Segmentation fault'\n")
    with pytest.raises(RuntimeError, match="not JSON.*Segmentation fault"):
        LlamaBench(fake).measure(tiny_models["Q8_0"], 16, 8, 1)


def test_missing_llama_bench():
    with pytest.raises(results.MeasurementUnavailable, match="--llama-bench"):
        LlamaBench("/nonexistent/llama-bench")


def test_missing_and_corrupt_models(tmp_path):
    inproc = InProcess(threads=1)
    with pytest.raises(ValueError, match="not found"):
        inproc.measure(tmp_path / "nope.gguf", 8, 8, 1)
    (tmp_path / "text.gguf").write_text("hello")
    with pytest.raises(ValueError, match="not a GGUF file"):
        inproc.measure(tmp_path / "text.gguf", 8, 8, 1)
    (tmp_path / "cut.gguf").write_bytes(b"GGUF" + os.urandom(2000))
    with pytest.raises(ValueError, match="could not load"):
        inproc.measure(tmp_path / "cut.gguf", 8, 8, 1)


def test_no_llama_cpp_installed_says_what_to_do():
    code = ("import sys; sys.modules['llama_cpp'] = None\n"
            "from napkin.measure import inprocess, results\n"
            "try:\n    inprocess.InProcess()\n"
            "except results.MeasurementUnavailable as e:\n    print(e)\n")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert "llama-cpp-python is not installed" in out.stdout and "make book" in out.stdout
    assert ".[measure]" in out.stdout


def test_cli_without_llama_cpp_fails_cleanly(tmp_path):
    env = {**os.environ, "NAPKIN_RESULTS": str(tmp_path), "PATH": "/usr/bin:/bin"}
    code = ("import sys; sys.modules['llama_cpp'] = None\n"
            "from napkin.cli import main; sys.exit(main(['measure', '--quick']))")
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env)
    assert proc.returncode == 1
    assert proc.stderr.strip().startswith("error: llama-cpp-python is not installed")
    assert list(tmp_path.iterdir()) == []


# -- resources -----------------------------------------------------------------------------

def test_too_little_memory_or_disk(tmp_path, monkeypatch):
    monkeypatch.setattr(machine, "available_memory_bytes", lambda: 10**6)
    with pytest.raises(results.MeasurementUnavailable, match="free memory.*--quick"):
        session.ensure_room(tmp_path, 100e6, "a model")
    monkeypatch.setattr(session.shutil, "disk_usage",
                        lambda p: type("U", (), {"free": 10**6})())
    with pytest.raises(results.MeasurementUnavailable, match="disk.*NAPKIN_CACHE"):
        session.ensure_room(tmp_path, 100e6, "a model")


def test_probe_reports_best_median_spread_and_rejects_bad_input():
    result = read_bandwidth(array_bytes=128 * 2**20, passes=3)
    assert result.best_bytes_per_s >= result.median_bytes_per_s >= result.worst_bytes_per_s > 1e8
    assert 0 <= result.spread < 1
    assert set(result.kernels) == set(KERNELS) and result.kernel in KERNELS
    assert result.best_bytes_per_s == max(k["best"] for k in result.kernels.values())
    one = read_bandwidth(array_bytes=64 * 2**20, passes=1, kernels=("sum_f64",), min_seconds=0)
    assert one.kernel == "sum_f64" and one.passes == 1 and one.spread == 0
    longer = read_bandwidth(array_bytes=64 * 2**20, passes=1, kernels=("or_u64",),
                            min_seconds=0.3)
    assert longer.passes > 1  # passes continue for the minimum time
    assert result.threads in result.thread_counts == thread_counts(probe.default_threads())
    assert thread_counts(1) == (1,) and thread_counts(2) == (1, 2)
    assert thread_counts(16) == (1, 4, 8, 16)  # llama-roofline's sweep
    assert one.thread_counts == thread_counts(probe.default_threads())
    fixed = read_bandwidth(array_bytes=64 * 2**20, passes=1, kernels=("dot_f32",), threads=2,
                           sweep=False, min_seconds=0)
    assert fixed.thread_counts == (2,) and fixed.threads == 2 and fixed.kernel == "dot_f32"
    with pytest.raises(ValueError, match="too small"):
        read_bandwidth(array_bytes=2**20)
    for bad in (0, 1.5, True):
        with pytest.raises(ValueError, match="passes"):
            read_bandwidth(passes=bad)
    with pytest.raises(ValueError, match="min_seconds"):
        read_bandwidth(min_seconds=-1)
    with pytest.raises(ValueError, match="unknown probe kernel"):
        read_bandwidth(array_bytes=64 * 2**20, kernels=("memcpy",))


# -- a quick measurement, end to end ---------------------------------------------------------

@pytest.fixture(scope="module")
def quick_record(tmp_path_factory):
    os.environ.setdefault("NAPKIN_CACHE", str(tmp_path_factory.mktemp("cache")))
    return measure.run(measure.QUICK, progress=session.quiet)


def test_quick_measurement_runs(quick_record):
    run = quick_record["runs"][0]
    assert run["pp"]["tokens_per_s"] > 0 and run["tg"]["tokens_per_s"] > 0
    assert run["probe_best_bytes_per_s"] > 1e9
    assert 0 < run["fraction_of_ceiling"] < 1.5
    # on the CPU the ceiling is the probe, and the record says so
    assert quick_record["runner"]["backend"] == "CPU" and quick_record["runner"]["why"]
    assert run["bandwidth"]["origin"] == "probe"
    assert run["bandwidth_bytes_per_s"] == run["probe_best_bytes_per_s"]
    assert run["decode_bytes_per_s"] == pytest.approx(run["tg"]["tokens_per_s"] *
                                                      run["model_bytes"])
    assert run["model_bytes"] == run["synthetic"]["tensor_bytes"]
    assert quick_record["machine"]["cpu_model"]
    json.dumps(quick_record)  # the record is plain JSON


def test_results_are_saved_beside_never_over(quick_record, tmp_path):
    first = record.save(quick_record, tmp_path)
    second = record.save(quick_record, tmp_path)
    assert first != second and first.exists() and second.exists()
    assert record.load(first)["runs"] == quick_record["runs"]
    assert not list(tmp_path.glob(".*partial"))
    table = record.table(quick_record)
    assert "fraction" in table and "Why     :" in table and "memory probe" in table
    frame = record.frame(quick_record)
    assert frame["family"].eq("This machine (live)").all()
    assert "memory probe" in record.sentence(quick_record)
    assert "memory probe" in record.who(quick_record)


def test_bad_result_files(tmp_path):
    with pytest.raises(ValueError, match="no result file"):
        record.load(tmp_path / "none.json")
    (tmp_path / "x.json").write_text("{")
    with pytest.raises(ValueError, match="invalid JSON"):
        record.load(tmp_path / "x.json")
    (tmp_path / "y.json").write_text("{}")
    with pytest.raises(ValueError, match="not a napkin measurement"):
        record.load(tmp_path / "y.json")


def test_live_cell_without_llama_cpp_says_one_sentence():
    code = ("import sys; sys.modules['llama_cpp'] = None\n"
            "from napkin import measure\n"
            "r = measure.live(measure.QUICK)\n"
            "assert r is None\n"
            "print(measure.sentence(r))\n")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    lines = [line for line in out.stdout.splitlines() if line]
    assert lines[0].startswith("No live measurement on this machine: llama-cpp-python")
    assert "make measure" in lines[1]


# -- quick by default, full when asked -------------------------------------------------------

@pytest.mark.parametrize("env,expect", [({}, "quick"), ({"NAPKIN_LIVE": "full"}, "full"),
                                        ({"NAPKIN_LIVE": "full", "NAPKIN_MEASURE": "quick"},
                                         "quick"),
                                        ({"NAPKIN_MEASURE": "FULL"}, "full")])
def test_live_cells_run_quick_unless_asked(monkeypatch, env, expect):
    from napkin.measure import batched, depth, verify

    for name in ("NAPKIN_LIVE", "NAPKIN_MEASURE", "NAPKIN_DEPTH", "NAPKIN_VERIFY",
                 "NAPKIN_BATCH"):
        monkeypatch.delenv(name, raising=False)
    for name, value in env.items():
        monkeypatch.setenv(name, value)
    assert measure.plan_from_env().mode == expect
    if "NAPKIN_MEASURE" not in env:  # the others follow NAPKIN_LIVE alone
        for plan in (depth.plan_from_env(), verify.plan_from_env(), batched.plan_from_env()):
            assert plan.mode == expect


def test_a_bad_mode_names_its_variable(monkeypatch):
    monkeypatch.setenv("NAPKIN_LIVE", "fast")
    with pytest.raises(ValueError, match="NAPKIN_LIVE must be 'quick' or 'full'"):
        measure.plan_from_env()


def test_the_quick_model_stays_small_on_a_machine_reporting_a_huge_cache(monkeypatch):
    """A VM may report its host's whole cache: the quick plan stops at its bound (seconds,
    not minutes) and says how the model compares with the cache; the full plan does not."""
    from napkin.measure import machine, session

    monkeypatch.setattr(machine, "last_level_cache_bytes", lambda: 480 * 2**20)
    assert session.QUICK.model_bytes() == session.QUICK.max_model_bytes
    assert session.FULL.model_bytes() == 8 * 480 * 2**20
    rec = {"mode": "quick", "machine": {"last_level_cache_bytes": 480 * 2**20},
              "runs": [{"synthetic": {"format": "Q8_0"}, "model_bytes": 500e6}]}
    assert "1.0 times the 480 MiB last-level cache" in record.cache_note(rec)
    monkeypatch.setattr(machine, "last_level_cache_bytes", lambda: 32 * 2**20)
    assert session.QUICK.model_bytes() == 4 * 32 * 2**20
    small = rec | {"machine": {"last_level_cache_bytes": 32 * 2**20}}
    assert record.cache_note(small) == ""
