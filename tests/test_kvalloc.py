"""The cache formula against llama.cpp's own allocation, and decode speed at depth.

These run llama.cpp (in-process through llama-cpp-python) on tiny synthetic models:
a context is created and its allocation read back, which takes milliseconds.
"""

from __future__ import annotations

import subprocess
import sys

import pytest

from napkin import kv_cache_bytes, kvcache
from napkin.measure import depth, inputs, kvalloc, synthetic
from napkin.measure.inprocess import InProcess

@pytest.fixture(autouse=True)
def no_reader_settings(monkeypatch):
    """A reader's own llama-bench or bandwidth setting does not leak into the tests."""
    monkeypatch.delenv("LLAMA_BENCH", raising=False)
    monkeypatch.delenv("NAPKIN_BANDWIDTH_GB_PER_S", raising=False)


LINE = ("llama_kv_cache: size =    1.50 MiB (  1024 cells,   3 layers,  1/1 seqs), "
        "K (f16):    0.75 MiB, V (f16):    0.75 MiB")


def test_log_line_is_parsed_and_exactness_judged():
    got = kvalloc.parse("noise\n" + LINE + "\nmore noise")
    assert (got.cells, got.layers, got.n_seq, got.k_type) == (1024, 3, 1, "f16")
    assert got.size_bytes == 3 * 2**19 and got.k_bytes == got.v_bytes == 3 * 2**18
    assert got.exact
    rounded = kvalloc.parse(LINE.replace("1.50", "0.80").replace("0.75", "0.40"))
    assert not rounded.exact  # 0.80 MiB is not a whole number of quarter MiB
    with pytest.raises(ValueError, match="no 'llama_kv_cache: size"):
        kvalloc.parse("llama_context: n_ctx = 1024")


def test_exact_n_ctx_prints_without_loss():
    for _, shape in kvalloc.SHAPES:
        for dtype in ("f16", "q8_0"):
            n = kvalloc.exact_n_ctx(shape.config(), dtype)
            assert n % kvalloc.CELL_PADDING == 0
            assert (kv_cache_bytes(shape.config(), n, 1, dtype) // 2) % kvalloc.QUARTER_MIB == 0
    with pytest.raises(ValueError, match="at_least"):
        kvalloc.exact_n_ctx(kvalloc.SHAPES[0][1].config(), "f16", at_least=0)


def test_unknown_cache_type_for_llama_cpp():
    with pytest.raises(ValueError, match="unknown KV cache dtype"):
        kvalloc.ggml_type("int3")
    assert kvalloc.ggml_type("q8_0") == 8 and kvalloc.ggml_type("f16") == 1


def test_formula_matches_llama_cpp_allocation_for_every_shape():
    """The book's claim: for every shape tested, the bytes agree exactly."""
    df = kvalloc.compare()
    assert len(df) == len(kvalloc.CASES)
    assert df["printed_exactly"].all(), df[~df["printed_exactly"]]["log_line"].tolist()
    assert (df["cells"] == df["n_ctx_requested"]).all()  # no padding we did not expect
    bad = df[df["napkin_bytes"] != df["llamacpp_bytes"]]
    assert bad.empty, bad[["case", "kv_dtype", "napkin_bytes", "llamacpp_bytes"]]
    assert df["match"].all()
    assert set(df["attention"]) == {"MHA", "GQA", "MQA"}
    assert set(df["kv_dtype"]) == {"f16", "q8_0"} and set(df["batch"]) == {1, 2}
    assert "every one agrees" in kvalloc.sentence(df) and "to the byte" not in kvalloc.sentence(df)
    assert "hundredth of a MiB the log resolves" in kvalloc.sentence(df)


def test_a_formula_error_would_be_caught(monkeypatch):
    """Break the formula (forget V) and the comparison must say so."""
    real = kvcache.kv_cache_bytes
    monkeypatch.setattr(kvcache, "kv_cache_bytes",
                        lambda cfg, n, batch=1, dtype=2: real(cfg, n, batch, dtype) // 2)
    df = kvalloc.compare(kvalloc.CASES[:1])
    assert df["printed_exactly"].all() and not df["match"].any()
    assert "only 0 agree" in kvalloc.sentence(df)


# -- decode at depth ---------------------------------------------------------------------

TINY = synthetic.Shape(hidden_size=256, num_hidden_layers=2, num_attention_heads=4,
                       num_key_value_heads=4, head_dim=64, intermediate_size=256,
                       vocab_size=512, context_length=4096)
TINY_PLAN = depth.DepthPlan("test", depths=(0, 64, 128), n_gen=4, reps=2, base=TINY,
                            gqa_kv_heads=1)


def test_matched_pair_holds_the_same_weights():
    mha, gqa = depth.matched_pair(depth.BASE, 3)
    assert mha.num_key_value_heads == mha.num_attention_heads and gqa.num_key_value_heads == 3
    for fmt in ("F16", "Q8_0"):
        assert synthetic.tensor_bytes(mha, fmt) == synthetic.tensor_bytes(gqa, fmt)
    with pytest.raises(ValueError, match="divide"):
        depth.matched_pair(depth.BASE, 5)
    with pytest.raises(ValueError, match="whole columns"):
        depth.matched_pair(synthetic.Shape(hidden_size=2048, num_attention_heads=16,
                                           num_key_value_heads=16, head_dim=128), 2)


def test_prediction_falls_faster_with_more_kv_heads():
    pred = depth.prediction(depth.FULL).set_index(["attention", "depth_tokens"])["relative"]
    assert pred[("MHA", 0)] == pred[("GQA", 0)] == 1
    for d in depth.FULL.depths[1:]:
        assert pred[("MHA", d)] < pred[("GQA", d)] < 1


def test_depth_sweep_measures_each_depth(tmp_path):
    path = synthetic.write(tmp_path / "tiny.gguf", TINY, "Q8_0")
    inproc = InProcess(threads=1)
    [out] = inproc.depth_sweep([path], [128, 0, 64], 4, 2, flash_attn=False)
    assert out.depths == (0, 64, 128)
    assert [r.test for r in out.tg] == ["tg4", "tg4@d64", "tg4@d128"]
    assert all(r.tokens_per_s > 0 and len(r.samples) == 2 for r in out.tg)
    assert out.to_dict()["depths"] == [0, 64, 128]
    both = inproc.depth_sweep([path, path], [0, 32], 2, 3)
    assert len(both) == 2 and all(len(o.tg) == 2 and len(o.tg[1].samples) == 3 for o in both)
    for bad in ([-1], [], [1.5]):
        with pytest.raises(ValueError, match="depths"):
            inproc.depth_sweep([path], bad, 4, 1)
    with pytest.raises(ValueError, match="list of GGUF paths"):
        inproc.depth_sweep(path, [0], 4, 1)
    assert inputs.check_depths([3, 0, 3]) == [0, 3]


def test_depth_run_record_frame_and_sentence(tmp_path, monkeypatch):
    monkeypatch.setenv("NAPKIN_CACHE", str(tmp_path / "models"))
    record = depth.run(TINY_PLAN, threads=1)
    df = depth.frame(record)
    assert list(df["attention"].unique()) == ["MHA", "GQA"] and len(df) == 6
    assert (df["predicted_tokens_per_s"] > 0).all() and (df["tokens_per_s"] > 0).all()
    mha = df[df["attention"] == "MHA"]
    assert mha["kv_bytes"].is_monotonic_increasing
    rel = depth.relative(record)
    assert (rel[rel["depth_tokens"] == 0]["relative"] == 1).all()
    words = depth.sentence(record)
    assert "of the GQA model's speed, give or take" in words
    assert "the bytes alone predict" in words
    assert "memory probe" in words and record["bandwidth"]["origin"] == "probe"
    assert record["bandwidth_bytes_per_s"] == record["probe_best_bytes_per_s"]
    assert "GQA" in depth.table(record)
    path = depth.save(record, tmp_path / "results")
    assert path.is_file() and path.name.startswith("depth-")
    assert depth.sentence(None).startswith("This page was built where llama.cpp")
    assert depth.frame(None).empty


def test_depth_plan_from_env(monkeypatch):
    monkeypatch.setenv("NAPKIN_DEPTH", "full")
    assert depth.plan_from_env() is depth.FULL
    monkeypatch.setenv("NAPKIN_DEPTH", "fast")
    with pytest.raises(ValueError, match="NAPKIN_DEPTH"):
        depth.plan_from_env()


def test_depth_cli_rejects_bad_threads():
    proc = subprocess.run([sys.executable, "-m", "napkin", "depth", "--threads", "0"],
                          capture_output=True, text=True)
    assert proc.returncode == 2 and "--threads" in proc.stderr


def test_llama_cpp_window_margin():
    import llama_cpp

    assert llama_cpp.llama_context_default_params().n_ubatch == kvalloc.LLAMA_CPP_UBATCH
    assert kvalloc.llama_cpp_window_cells(128, 131_072) == 768  # 128 + 512, to 256s
    assert kvalloc.llama_cpp_window_cells(4096, 1024) == 1024  # never beyond the context
    with pytest.raises(ValueError, match="window"):
        kvalloc.llama_cpp_window_cells(0, 1024)
    gpt = {"num_hidden_layers": 2, "num_attention_heads": 64, "num_key_value_heads": 8,
           "head_dim": 64, "hidden_size": 2880, "sliding_window": 128,
           "layer_types": ["sliding_attention", "full_attention"]}
    assert kvalloc.llama_cpp_cache_bytes(gpt, 4096) == 2 * 8 * 64 * 2 * (768 + 4096)
    plain = kvalloc.SHAPES[0][1].config()
    assert kvalloc.llama_cpp_cache_bytes(plain, 4096) == kv_cache_bytes(plain, 4096)


def test_cells_llama_cpp_reads_per_step():
    assert kvalloc.llama_cpp_cells_read(1, 4096) == 256
    assert kvalloc.llama_cpp_cells_read(257, 4096) == 512
    assert kvalloc.llama_cpp_cells_read(5000, 4096) == 4096
    with pytest.raises(ValueError):
        kvalloc.llama_cpp_cells_read(-1, 4096)
    cfg = kvalloc.SHAPES[0][1].config()
    # from an empty context, 4 timed tokens all read one 256-cell page
    assert depth.kv_read_bytes(cfg, 0, 4, 1024) == kv_cache_bytes(cfg, 256)
    # 254 deep: the first two tokens read 256 cells, the next two 512
    assert depth.kv_read_bytes(cfg, 254, 4, 1024) == (kv_cache_bytes(cfg, 256) +
                                                       kv_cache_bytes(cfg, 512)) / 2


def test_chapters_build_without_llama_cpp(tmp_path):
    """Where llama.cpp is missing the live cells say so in a sentence and the charts still
    draw (prediction only)."""
    code = (
        "import sys; sys.modules['llama_cpp'] = None\n"
        "from napkin import measure\n"
        "from napkin.gqa import figures as charts\n"
        "assert measure.kvalloc.live_compare() is None\n"
        "rec = measure.depth.live(measure.depth.QUICK)\n"
        "assert rec is None\n"
        "print(measure.depth.sentence(rec)); print(measure.kvalloc.sentence(None))\n"
        "charts.live_vs_prediction(measure.depth.prediction(), measure.depth.relative(rec),\n"
        "                          measure.who(rec)).to_dict()\n"
        "measure.depth.shown(rec); measure.kvalloc.shown(None)\n")
    env = {**__import__("os").environ, "NAPKIN_CACHE": str(tmp_path)}
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env)
    assert out.returncode == 0, out.stderr[-2000:]
    assert out.stdout.count("llama-cpp-python is not installed") == 2
    assert "prediction only" in out.stdout and list(tmp_path.iterdir()) == []


def _depth_record(speeds: dict, bandwidth: float, stddev: float = 0.1) -> dict:
    """A sweep record at depths 0 and 1,024 with the given tokens/s, no llama.cpp needed."""
    from dataclasses import asdict

    models = []
    for label, shape in zip(("MHA", "GQA"), depth.matched_pair(depth.BASE, 3)):
        models.append({"attention": label, "config": shape.config(),
                       "model_bytes": synthetic.tensor_bytes(shape, "Q8_0"),
                       "tg": [{"tokens_per_s": v, "stddev": stddev} for v in speeds[label]]})
    return {"plan": {"depths": [0, 1024], "n_gen": 16, "reps": 3, "kv_dtype": "f16",
                     "base": asdict(depth.BASE)},
            "machine": {"cpu": "test CPU", "threads": 2}, "runner": {"backend": "CPU"},
            "probe_best_bytes_per_s": bandwidth, "models": models}


def test_depth_sentence_says_whether_the_measurement_can_test_the_prediction(monkeypatch):
    monkeypatch.setattr(depth.machine, "label", lambda m: "test machine")
    # bandwidth-bound runs that follow the bytes exactly: the ratio agrees
    bw = 30e9
    pred = depth.frame(_depth_record({"MHA": [1, 1], "GQA": [1, 1]}, bw))
    exact = {m: list(pred[pred["attention"] == m]["predicted_tokens_per_s"])
             for m in ("MHA", "GQA")}
    words = depth.sentence(_depth_record(exact, bw, stddev=0.5))
    assert "within that range" in words and "something other than the bytes" not in words
    # the reviewed run: at a sixth of the ceiling, and the GQA model falling more than MHA
    words = depth.sentence(_depth_record({"MHA": [16.7, 14.1], "GQA": [20.3, 15.0]}, 19.3e9,
                                         stddev=0.2))
    assert "something other than the bytes set the speed" in words and "cannot test the prediction" in words
    assert "outside that range" in words
    assert "\u221226%" in words  # GQA's measured fall, beside its bytes' prediction
