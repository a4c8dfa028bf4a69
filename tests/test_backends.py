"""The reader's own GPU: which backend ran, which bandwidth the ceiling uses, and the errors.

No GPU is needed: a fake ``llama-bench`` replays llama-bench JSON for CUDA and Metal
(``tests/fixtures``), and the binding's ggml device list is replaced by monkeypatch.
llama.cpp itself still runs (on the CPU) wherever the in-process path is exercised.
"""

from __future__ import annotations

import json
import stat
import sys
from pathlib import Path

import pytest

from napkin import hardware
from napkin.cli import main as napkin_main
from napkin.measure import backend, bandwidth, depth, devices, record, session, synthetic
from napkin.measure.inprocess import InProcess
from napkin.measure.llama_bench import LlamaBench
from napkin.measure.runner import Runner, find_llama_bench, make_runner

FIXTURES = Path(__file__).with_name("fixtures")
TINY = synthetic.Shape(hidden_size=256, num_hidden_layers=1, num_attention_heads=4,
                       num_key_value_heads=4, head_dim=64, intermediate_size=512,
                       vocab_size=512, context_length=512)


@pytest.fixture(autouse=True)
def isolated(tmp_path, monkeypatch):
    monkeypatch.setenv("NAPKIN_RESULTS", str(tmp_path / "results"))
    monkeypatch.setenv("NAPKIN_CACHE", str(tmp_path / "models"))
    monkeypatch.delenv("LLAMA_BENCH", raising=False)
    monkeypatch.delenv(bandwidth.ENV, raising=False)


@pytest.fixture(scope="module")
def tiny(tmp_path_factory):
    return synthetic.write(tmp_path_factory.mktemp("m") / "tiny.gguf", TINY, "Q8_0", seed=0)


# -- device names -> chips ------------------------------------------------------------------

@pytest.mark.parametrize("name,chip", [
    ("NVIDIA GeForce RTX 4090", "RTX 4090"),
    ("NVIDIA GeForce RTX 3090", "RTX 3090"),
    ("Apple M2 Ultra", "M2 Ultra"),
    ("AMD Instinct MI300X", "MI300X"),
    ("NVIDIA H100 80GB HBM3", "H100 SXM"),
    ("NVIDIA H100 PCIe", "H100 PCIe"),
    ("NVIDIA H100 NVL", "H100 NVL"),
    ("NVIDIA H200", "H200"),
    ("NVIDIA L40S", "L40S"),
    ("NVIDIA GB10", "DGX Spark"),
    ("NVIDIA GeForce RTX 4090 (dev p0/v1)", "RTX 4090"),
    ("AMD Radeon 8060S Graphics (RADV GFX1151)", "Strix Halo"),
])
def test_device_names_match_their_chip(name, chip):
    found = devices.match(name)
    assert found is not None and found.chip == chip, found
    assert found.rule and found.bandwidth_bytes_per_s == hardware.chip(chip).bandwidth_bytes_per_s


@pytest.mark.parametrize("name", ["NVIDIA GeForce RTX 4090 Laptop GPU", "NVIDIA GeForce RTX 4090 D",
                                  "NVIDIA A100-SXM4-40GB", "NVIDIA GeForce GTX 1080",
                                  "AMD Instinct MI250X/MI250", "Apple M3 Max"])
def test_unknown_or_ambiguous_devices_are_not_guessed(name):
    assert devices.match(name) is None


def test_apple_chips_listed_by_gpu_cores_need_the_core_count():
    assert devices.match("Apple M3 Max", gpu_cores=40).chip == "M3 Max (40-core GPU)"
    assert devices.match("Apple M4 Max", gpu_cores=32).chip == "M4 Max (32-core GPU)"
    assert devices.match("Apple M3 Max", gpu_cores=35) is None
    with pytest.raises(ValueError, match="device"):
        devices.match("")


def test_every_alias_names_a_chip_with_a_bandwidth():
    known = hardware.chips()
    for alias, chip in devices.ALIASES:
        assert chip in known, alias
        assert known[chip].bandwidth_bytes_per_s > 0
        assert devices.match(alias).chip == chip


# -- backends from llama.cpp's own words ------------------------------------------------------

def _row(name: str) -> dict:
    return json.loads((FIXTURES / f"llama_bench_{name}.json").read_text())[0]


def test_backend_from_llama_bench_json():
    cpu = backend.from_llama_bench_row(_row("cpu"))
    assert (cpu.name, cpu.devices, cpu.gpu) == ("CPU", (), False)
    cuda = backend.from_llama_bench_row(_row("cuda"))
    assert (cuda.name, cuda.devices, cuda.gpu) == ("CUDA", ("NVIDIA GeForce RTX 4090",), True)
    assert "backends='CUDA'" in cuda.evidence
    metal = backend.from_llama_bench_row(_row("metal"))
    assert (metal.name, metal.devices) == ("Metal", ("Apple M2 Ultra",))
    rocm = backend.from_llama_bench_row({"backends": "ROCm", "gpu_info": "AMD Instinct MI300X"})
    assert rocm.describe() == "ROCm on AMD Instinct MI300X"
    assert not backend.from_llama_bench_row(_row("cuda") | {"n_gpu_layers": 0}).gpu
    two = backend.from_llama_bench_row({"backends": "CUDA",
                                        "gpu_info": "NVIDIA GeForce RTX 4090, NVIDIA GeForce "
                                                    "RTX 4090"})
    assert len(two.devices) == 2


def test_backend_from_list_devices():
    text = ("Available devices:\n  CUDA0: NVIDIA GeForce RTX 4090 (24080 MiB, 23000 MiB free)\n")
    assert backend.from_list_devices(text).describe() == "CUDA on NVIDIA GeForce RTX 4090"
    mac = ("Available devices:\n  MTL0: Apple M2 Ultra (147456 MiB, 147456 MiB free)\n"
           "  BLAS: Accelerate (0 MiB, 0 MiB free)\n")
    assert backend.from_list_devices(mac).describe() == "Metal on Apple M2 Ultra"
    assert not backend.from_list_devices("Available devices:\n  (none)\n").gpu


def test_backend_from_ggml_devices():
    cpu = [("CPU", "AMD EPYC", "CPU")]
    assert backend.from_devices(cpu, "x").name == "CPU"
    assert backend.from_devices(cpu + [("BLAS", "OpenBLAS", "ACCEL")], "x").name == "CPU"
    cuda = backend.from_devices(cpu + [("CUDA", "NVIDIA H100 PCIe", "GPU")], "x")
    assert cuda.describe() == "CUDA on NVIDIA H100 PCIe"
    igpu = backend.from_devices(cpu + [("Vulkan", "AMD Radeon 8060S Graphics (RADV GFX1151)",
                                        "IGPU")], "x")
    assert igpu.name == "Vulkan" and bandwidth.of_device(igpu).chip == "Strix Halo"
    assert backend.backend_name("HIP") == backend.backend_name("ROCm") == "ROCm"
    assert backend.backend_name("MTL") == "Metal"


def test_the_real_binding_reports_its_devices():
    inproc = InProcess(threads=1)
    found = backend.ggml_devices(inproc.llama)
    assert any(kind == "CPU" for _, _, kind in found)
    assert inproc.backend().evidence.startswith("llama-cpp-python's ggml devices")


# -- the bandwidth follows the backend ----------------------------------------------------------

def test_gpu_bandwidth_is_the_vendor_spec_with_its_match():
    cuda = backend.Backend("CUDA", ("NVIDIA GeForce RTX 4090",))
    used = bandwidth.of_device(cuda)
    assert used.bytes_per_s == hardware.chip("RTX 4090").bandwidth_bytes_per_s
    assert used.origin == "spec" and used.chip == "RTX 4090"
    assert "hardware_specs.csv" in used.source and "RTX 4090" in used.rule
    assert "http" in used.source_url and "vendor spec" in used.label()
    two = bandwidth.of_device(backend.Backend("CUDA", ("NVIDIA GeForce RTX 4090",) * 2))
    assert two.bytes_per_s == used.bytes_per_s and "one of 2" in two.source
    with pytest.raises(bandwidth.UnknownDevice, match="different GPUs.*--bandwidth"):
        bandwidth.of_device(backend.Backend("CUDA", ("NVIDIA GeForce RTX 4090",
                                                     "NVIDIA GeForce RTX 3090")))


def test_unknown_gpu_names_the_fix(monkeypatch):
    gtx = backend.Backend("CUDA", ("NVIDIA GeForce GTX 1080",))
    with pytest.raises(bandwidth.UnknownDevice) as err:
        bandwidth.for_run(gtx)
    text = str(err.value)
    assert "GTX 1080" in text and "--bandwidth GB_PER_S" in text and bandwidth.ENV in text
    assert bandwidth.for_run(gtx, 320).bytes_per_s == 320e9
    m3 = backend.Backend("Metal", ("Apple M3 Max",))
    monkeypatch.setattr(devices, "apple_gpu_cores", lambda: None)
    with pytest.raises(bandwidth.UnknownDevice, match="per GPU core count.*--bandwidth"):
        bandwidth.of_device(m3)
    monkeypatch.setattr(devices, "apple_gpu_cores", lambda: 30)
    assert bandwidth.of_device(m3).chip == "M3 Max (30-core GPU)"
    with pytest.raises(bandwidth.UnknownDevice, match="does not name its device"):
        bandwidth.of_device(backend.Backend("CUDA", ()))


@pytest.mark.parametrize("value", [0, -5, float("nan"), float("inf"), "fast", True])
def test_bad_bandwidths_are_refused(value):
    with pytest.raises(ValueError, match="--bandwidth must be a positive number of GB/s"):
        bandwidth.given(value, "x")


def test_bandwidth_from_the_environment(monkeypatch):
    cpu = backend.Backend("CPU")
    assert bandwidth.for_run(cpu) is None  # the probe decides on the CPU
    monkeypatch.setenv(bandwidth.ENV, "250")
    used = bandwidth.for_run(cpu)
    assert used.bytes_per_s == 250e9 and used.origin == "given" and bandwidth.ENV in used.source
    assert bandwidth.for_run(cpu, 100).source == "given with --bandwidth"
    monkeypatch.setenv(bandwidth.ENV, "fast")
    with pytest.raises(ValueError, match=bandwidth.ENV):
        bandwidth.for_run(cpu)


# -- the runners --------------------------------------------------------------------------------

def fake_llama_bench(tmp_path: Path, fixture: str, list_devices: str | None,
                     log: Path | None = None) -> Path:
    """An executable that answers like a llama-bench build: ``--list-devices`` (or fails, as
    an old build does when ``list_devices`` is None) and ``-o json`` built from a fixture."""
    template = _row(fixture)
    script = tmp_path / f"llama-bench-{fixture}"
    script.write_text(f"""#!{sys.executable}
import json, sys
args = sys.argv[1:]
if "--list-devices" in args:
    if {list_devices!r} is None:
        sys.exit("error: invalid parameter for argument: --list-devices")
    print("Available devices:"); print({list_devices!r}); sys.exit(0)
opt = dict(zip(args[::2], args[1::2]))
if {str(log) if log else None!r}:
    open({str(log)!r}, "a").write(opt["-m"] + "\\n")
template = json.loads({json.dumps(json.dumps(template))})
rows = []
reps = int(opt.get("-r", 5))
def row(p, n, d, ts):
    ns = [int(1e9 * (p + n) / ts)] * reps
    return dict(template, n_prompt=p, n_gen=n, n_depth=d, avg_ts=ts, stddev_ts=0.0,
                samples_ts=[ts] * reps, samples_ns=ns, avg_ns=ns[0], stddev_ns=0,
                n_gpu_layers=int(opt.get("-ngl", 99)))
depths = [int(d) for d in opt.get("-d", "0").split(",")]
for d in depths:
    if int(opt["-p"]):
        rows.append(row(int(opt["-p"]), 0, d, 1000.0))
    if int(opt["-n"]):
        rows.append(row(0, int(opt["-n"]), d, 100.0 / (1 + d / 1000)))
print(json.dumps(rows))
""")
    script.chmod(script.stat().st_mode | stat.S_IEXEC)
    return script


CUDA_LIST = "  CUDA0: NVIDIA GeForce RTX 4090 (24080 MiB, 23000 MiB free)"
METAL_LIST = "  MTL0: Apple M2 Ultra (147456 MiB, 147456 MiB free)"


def test_llama_bench_on_cuda_measures_against_the_gpu_spec(tmp_path, tiny):
    fake = fake_llama_bench(tmp_path, "cuda", CUDA_LIST)
    runner = make_runner(str(fake))
    assert isinstance(runner, Runner) and isinstance(runner, LlamaBench)
    assert runner.backend().describe() == "CUDA on NVIDIA GeForce RTX 4090"
    rec = session.run(session.QUICK, model=tiny, llama_bench=str(fake), progress=session.quiet)
    run = rec["runs"][0]
    assert rec["runner"]["backend"] == "CUDA"
    assert rec["runner"]["devices"] == ["NVIDIA GeForce RTX 4090"]
    assert "--llama-bench" in rec["runner"]["why"] and "gpu_info" in rec["runner"]["why"]
    assert run["bandwidth"]["origin"] == "spec" and run["bandwidth"]["chip"] == "RTX 4090"
    assert run["bandwidth_bytes_per_s"] == hardware.chip("RTX 4090").bandwidth_bytes_per_s
    assert "probe_before" not in run  # the CPU probe says nothing about a GPU
    assert run["ceiling_tokens_per_s"] == run["bandwidth_bytes_per_s"] / run["model_bytes"]
    assert run["tg"]["tokens_per_s"] == 100.0
    for text in (record.table(rec), record.who(rec)):
        assert "RTX 4090" in text and "vendor spec" in text, text
    words = record.sentence(rec)
    assert "RTX 4090's vendor figure" in words and "tiny.gguf model" in words, words
    assert "CUDA on NVIDIA GeForce RTX 4090" in record.table(rec)
    saved = record.save(rec)
    assert record.load(saved)["runs"][0]["bandwidth"]["chip"] == "RTX 4090"


def test_llama_bench_on_metal(tmp_path, tiny):
    fake = fake_llama_bench(tmp_path, "metal", METAL_LIST)
    rec = session.run(session.QUICK, model=tiny, llama_bench=str(fake), progress=session.quiet)
    assert rec["runner"]["backend"] == "Metal"
    assert rec["runs"][0]["bandwidth"]["chip"] == "M2 Ultra"
    assert rec["runs"][0]["bandwidth_bytes_per_s"] == 800e9


def test_llama_bench_found_through_the_environment(tmp_path, monkeypatch):
    fake = fake_llama_bench(tmp_path, "cuda", CUDA_LIST)
    monkeypatch.setenv("LLAMA_BENCH", str(fake))
    binary, why = find_llama_bench()
    assert binary == str(fake) and "LLAMA_BENCH=" in why
    assert find_llama_bench("/x/llama-bench")[1].startswith("--llama-bench")
    monkeypatch.delenv("LLAMA_BENCH")
    monkeypatch.setenv("PATH", "/nonexistent")
    assert find_llama_bench() == (None, "no llama-bench given (--llama-bench, LLAMA_BENCH) "
                                        "or on PATH")


def test_old_llama_bench_without_list_devices_decides_after_its_first_run(tmp_path, tiny):
    fake = fake_llama_bench(tmp_path, "cuda", None)
    assert LlamaBench(fake).backend() is None
    rec = session.run(session.QUICK, model=tiny, llama_bench=str(fake), progress=session.quiet)
    assert rec["runs"][0]["bandwidth"]["chip"] == "RTX 4090"


def test_llama_bench_unknown_gpu_fails_before_running(tmp_path, tiny):
    log = tmp_path / "calls.log"
    fake = fake_llama_bench(tmp_path, "cuda", "  CUDA0: NVIDIA GeForce GTX 1080 (8192 MiB, "
                                              "8000 MiB free)", log)
    with pytest.raises(bandwidth.UnknownDevice, match="GTX 1080.*--bandwidth"):
        session.run(session.QUICK, model=tiny, llama_bench=str(fake), progress=session.quiet)
    assert not log.exists()  # nothing was measured in vain
    rec = session.run(session.QUICK, model=tiny, llama_bench=str(fake), bandwidth_gb_per_s=320,
                      progress=session.quiet)
    assert rec["runs"][0]["bandwidth"]["origin"] == "given"
    assert "by hand (given with --bandwidth)" in record.sentence(rec)


def test_llama_bench_depth_sweep_alternates_models(tmp_path, tiny):
    log = tmp_path / "calls.log"
    fake = fake_llama_bench(tmp_path, "cuda", CUDA_LIST, log)
    other = tmp_path / "other.gguf"
    other.write_bytes(tiny.read_bytes())
    sweeps = LlamaBench(fake).depth_sweep([tiny, other], [512, 0], 16, 3, flash_attn=False)
    calls = log.read_text().split()
    assert calls == [str(tiny), str(other)] * 3  # A B A B, one repetition per call
    assert [s.depths for s in sweeps] == [(0, 512)] * 2
    assert [r.test for r in sweeps[0].tg] == ["tg16", "tg16@d512"]
    assert len(sweeps[0].tg[1].samples) == 3 and sweeps[0].tg[0].tokens_per_s == 100.0
    with pytest.raises(ValueError, match="list of GGUF paths"):
        LlamaBench(fake).depth_sweep(tiny, [0], 4, 1)


def test_depth_run_on_a_fake_gpu(tmp_path):
    fake = fake_llama_bench(tmp_path, "metal", METAL_LIST)
    plan = depth.DepthPlan("test", depths=(0, 64), n_gen=4, reps=2, base=TINY, gqa_kv_heads=1)
    rec = depth.run(plan, llama_bench=str(fake))
    assert rec["bandwidth"]["chip"] == "M2 Ultra" and "probe_best_bytes_per_s" not in rec
    assert (depth.frame(rec)["predicted_tokens_per_s"] > 0).all()
    assert "M2 Ultra, vendor spec" in depth.sentence(rec)
    assert "Metal on Apple M2 Ultra" in depth.table(rec)
    assert "M2 Ultra" in record.who(rec)
    assert "tests nothing" not in depth.sentence(rec)  # as fast deep as empty: no speed-up
    for m in rec["models"]:  # deeper and faster beyond the spread: what no byte count allows
        m["tg"][-1] = {**m["tg"][-1], "tokens_per_s": 2 * m["tg"][0]["tokens_per_s"]}
    assert "ran faster 64 tokens deep" in depth.sentence(rec)
    assert "tests nothing" in depth.sentence(rec)


# -- the in-process binding, told it has a GPU -------------------------------------------------

def _pretend(monkeypatch, reg: str, name: str) -> None:
    monkeypatch.setattr(backend, "ggml_devices",
                        lambda llama_cpp: [("CPU", "AMD EPYC", "CPU"), (reg, name, "GPU")])


def test_binding_with_a_cuda_gpu_uses_its_spec(monkeypatch, tiny):
    _pretend(monkeypatch, "CUDA", "NVIDIA H100 PCIe")
    inproc = InProcess(threads=1)
    assert inproc.gpu and inproc.info().backend == "CUDA"
    assert inproc.info().device == "NVIDIA H100 PCIe"
    # llama.cpp itself (a CPU build here) runs; the ceiling is the H100 PCIe's bandwidth
    rec = session.run(session.QUICK, model=tiny, threads=1, progress=session.quiet)
    run = rec["runs"][0]
    assert run["bandwidth"]["chip"] == "H100 PCIe" and "probe_before" not in run
    assert "llama-cpp-python's ggml devices" in rec["runner"]["why"]


@pytest.mark.parametrize("reg,name,chip", [("ROCm", "AMD Instinct MI300X", "MI300X"),
                                           ("MTL", "Apple M2 Ultra", "M2 Ultra"),
                                           ("Vulkan", "NVIDIA GeForce RTX 3090", "RTX 3090")])
def test_binding_backends(monkeypatch, reg, name, chip):
    _pretend(monkeypatch, reg, name)
    used = bandwidth.for_run(InProcess(threads=1).backend())
    assert used.chip == chip


def test_binding_with_an_unknown_gpu_fails_with_the_fix(monkeypatch, tiny, tmp_path, capsys):
    _pretend(monkeypatch, "CUDA", "NVIDIA GeForce GTX 1080")
    code = napkin_main(["measure", "--quick", "--out", str(tmp_path / "out")])
    err = capsys.readouterr().err
    assert code == 1 and err.startswith("error: llama.cpp runs on CUDA (NVIDIA GeForce GTX 1080)")
    assert "--bandwidth GB_PER_S" in err
    assert not (tmp_path / "out").exists() and not (tmp_path / "models").exists()
    # the same in a notebook: one sentence, no crash
    assert session.live(session.QUICK, model=tiny) is None
    assert "No live measurement on this machine: llama.cpp runs on CUDA" in capsys.readouterr().out
    code = napkin_main(["measure", "--model", str(tiny), "--bandwidth", "320", "--out",
                        str(tmp_path / "out")])
    assert code == 0 and "given by hand" in capsys.readouterr().out


def test_cpu_only_binding_on_a_gpu_machine_says_how_to_rebuild(monkeypatch):
    monkeypatch.setattr(backend.shutil, "which",
                        lambda name: "/usr/bin/nvidia-smi" if name == "nvidia-smi" else None)
    why = InProcess(threads=1).info().why
    assert 'CMAKE_ARGS="-DGGML_CUDA=on"' in why and "--no-cache-dir" in why
    assert "LLAMA_BENCH" in why


def test_old_records_still_read(tmp_path, tiny):
    rec = session.run(session.QUICK, model=tiny, threads=1, progress=session.quiet)
    old = json.loads(json.dumps(rec))
    for run in old["runs"]:
        for key in ("bandwidth", "decode_bytes_per_s"):
            run.pop(key)
        run["bandwidth_source"] = "memory probe (best pass, before and after)"
    for key in ("why", "devices", "device"):
        old["runner"].pop(key)
    assert "memory probe" in record.sentence(old) and "memory probe" in record.who(old)
    assert "Machine" in record.table(old) and len(record.frame(old)) == 1
    path = record.save(old, tmp_path)
    assert record.load(path)["runs"][0]["format"] == "as in file"
