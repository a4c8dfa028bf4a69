# ---
# jupyter:
#   jupytext:
#     cell_metadata_filter: tags,-all
#     formats: ipynb,py:percent
#     notebook_metadata_filter: kernelspec,jupytext
#     text_representation:
#       extension: .py
#       format_name: percent
#       format_version: '1.3'
#       jupytext_version: 1.19.6
#   kernelspec:
#     display_name: Python 3 (ipykernel)
#     language: python
#     name: python3
# ---

# %% [markdown]
# # Rerun it on your machine
#
# Every chapter can measure the machine it runs on. This page says what is measured, why a
# model with random weights gives an honest answer, and how to point the measurement at a
# real model or at a GPU build of llama.cpp.
#

# %% tags=["remove-cell"]
# Every setting this page states is read from the code that runs it.
import inspect

from napkin.measure import (FULL, QUICK, backend, bandwidth, batched, depth, devices, probe,
                            synthetic, verify)
from napkin.prose import glue, glue_markdown


def words(items) -> str:
    items = [str(i) for i in items]
    return ", ".join(items[:-1]) + " and " + items[-1] if len(items) > 1 else items[0]


for plan in (QUICK, FULL):
    glue(f"{plan.mode}_formats", words(plan.formats))
    glue(f"{plan.mode}_pp", f"pp{plan.n_prompt}")
    glue(f"{plan.mode}_tg", f"tg{plan.n_gen}")
    glue(f"{plan.mode}_reps", plan.reps)
glue("hidden", synthetic.Shape().hidden_size)
glue("synthetic_formats", words(synthetic.FORMATS))
glue("batch_min", min(batched.QUICK.batches))
glue("batch_max", max(batched.QUICK.batches))
glue("batch_full_max", max(batched.FULL.batches))
glue("depth_full", words(f"{d:,}" for d in depth.FULL.depths))
glue("depth_quick", words(f"{d:,}" for d in depth.QUICK.depths))
glue_markdown("probe_kernels", words(f"`{k}`" for k in probe.KERNELS))
probe_args = inspect.signature(probe.read_bandwidth).parameters
glue("probe_passes", probe_args["passes"].default)
glue("probe_seconds", probe_args["min_seconds"].default)
glue_markdown("bandwidth_env", f"`{bandwidth.ENV}`")
glue_markdown("gpu_builds", "```sh\n" + "\n".join(
    f"# {kind}\n" + backend.gpu_build_hint(kind, backend.pinned_binding()).replace(
        "pip install", ".venv/bin/pip install")
    for kind in ("CUDA", "ROCm", "Vulkan")) + "\n```")
examples = ["NVIDIA GeForce RTX 4090", "NVIDIA H100 80GB HBM3", "NVIDIA H100 PCIe", "NVIDIA GB10",
            "Apple M2 Ultra", "AMD Instinct MI300X", "AMD Radeon 8060S Graphics",
            "NVIDIA GeForce RTX 4090 Laptop GPU"]
rows = []
for name in examples:
    m = devices.match(name)
    rows.append(f"| `{name}` | {m.chip if m else 'unknown: pass `--bandwidth`'} | "
                + (f"{m.bandwidth_bytes_per_s / 1e9:,.0f}" if m else "") + " |")
glue_markdown("device_table", "| device, as llama.cpp names it | chip in `data/hardware_specs.csv` "
              "| bandwidth (GB/s) |\n|---|---|---|\n" + "\n".join(rows))
glue("verify_quick", words(verify.QUICK.tokens))

# The probe's comparison with its references, as the benchmark stored it.
from napkin.measure import probe_compare

stored = probe_compare.latest()
if stored is None:
    glue_markdown("probe_check_sentence", "No comparison is stored in this checkout.")
    glue_markdown("probe_check_table", "")
else:
    result = probe_compare.load(stored)
    m = result["machine"]
    glue_markdown("probe_check_sentence", (
        f"Measured on {result['date']} on {m['cpu_model']} ({result['threads']} threads, "
        f"{len(result['others_cpu'])} rounds, `{stored.name}`; other processes took "
        f"{min(result['others_cpu']):.0%} to {max(result['others_cpu']):.0%} of the CPU in a "
        "round): medians in GB/s, and the median of each round's ratio (\"baseline\" is the "
        "probe before issue 23), with its range and the rounds in which it was below 1."))
    med = probe_compare.medians(result)
    rat = probe_compare.ratios(result)
    glue_markdown("probe_check_table", "| side | median (GB/s) | range |\n|---|---|---|\n" + "\n".join(
        f"| {r.what} | {r.median / 1e9:,.1f} | {r.min / 1e9:,.1f} to {r.max / 1e9:,.1f} |"
        for r in med.itertuples()) + "\n\n| ratio | median | range | rounds below 1 |\n"
        "|---|---|---|---|\n" + "\n".join(
        f"| {r.ratio} | {r.median:.2f} | {r.min:.2f} to {r.max:.2f} | {r.below} of {r.rounds} |"
        for r in rat.itertuples()))
glue("verify_full", words(verify.FULL.tokens))

# %% [markdown]
# ## One command
#
# The full run measures {glue:text}`full_formats` models with {glue:text}`full_pp` and
# {glue:text}`full_tg`, {glue:text}`full_reps:d` repetitions each; the quick run, which the
# notebooks use, measures {glue:text}`quick_formats` with {glue:text}`quick_pp` and
# {glue:text}`quick_tg`, {glue:text}`quick_reps:d` repetitions each.
#
# ```sh
# make measure          # the full run
# make measure QUICK=1  # the quick run: seconds
# ```
#
# or, with more control, `.venv/bin/python -m napkin measure --help`:
#
# | option | what it does |
# |---|---|
# | `--quick` | the seconds-long version the notebooks use |
# | `--model PATH` | measure a real GGUF, for example the essay's `llama-2-7b.Q4_0.gguf` |
# | `--llama-bench PATH` | use this `llama-bench` binary (a Metal, CUDA or ROCm build); without it, `$LLAMA_BENCH`, then one on `PATH`, then llama.cpp in-process |
# | `--threads N` | CPU threads (default: every core this process may use) |
# | `--reps N` | repetitions per test |
# | `--bandwidth GB_PER_S` | the bandwidth to put in the ceiling instead of the GPU's figure or the probe; needed on a GPU the data does not list |
# | `--json` | print the result record as JSON instead of a table |
# | `--out DIR` | where to save the record (default `results/`) |
#
# It prints progress as it goes, which runner and backend ran and why, which bandwidth the
# ceiling uses and where it came from, then a table: bytes per token, that bandwidth (and on
# the CPU how much the probe's passes varied), prompt processing (pp) and token generation
# (tg) in tokens/s with their standard deviation, the napkin ceiling, the fraction of it
# that was reached, and the bandwidth decode itself achieved (bytes per token x tg). The
# full record (machine, llama.cpp build, every repetition) is saved as JSON under `results/`,
# which git ignores; a new run never overwrites an earlier one, and nothing is ever written
# into `data/`.
#
# ## What is timed
#
# **Memory bandwidth.** The numerator of the napkin. On a GPU it is the device's memory
# bandwidth as its vendor states it (see below). On the CPU it is measured: read-only passes
# over an array far larger than the last-level cache, with several read kernels taking turns
# ({glue:md}`probe_kernels`), each on one thread and on up to one thread per core, at least
# {glue:text}`probe_passes:d` passes of each and more until {glue:text}`probe_seconds:.1f` s
# per thread count have gone by. The best pass counts: other programs can only take
# bandwidth away, so the best pass of a longer window is the closer estimate of what the
# memory delivers; and on a shared machine a pass that needs every core waits for the
# slowest of them, which is why fewer threads are tried too. A ceiling set too low would
# make every fraction of it look too good. The median and the spread between best and worst
# are kept because shared and laptop machines drift. The probe runs right before and right
# after each model, so a machine that changed speed during the run shows it.
#
# **How far to trust the probe.** `benchmarks/probe_vs_reference.py` in the repository
# measures it, round by round and taking turns, against `llama-roofline membw` (a
# bandwidth tool on PyPI), compiled C loops, the probe as it was before, and the bandwidth
# llama.cpp's own decode streams. {glue:md}`probe_check_sentence`
#
# ```{glue:md} probe_check_table
# :format: myst
# ```
#
# **Prompt processing (pp).** A prompt of random token ids is fed to a fresh context in
# batches, as `llama-bench -p` does; tokens/s is the prompt length over the time to process
# it. This is the compute-bound phase.
#
# **Token generation (tg).** Tokens are generated one at a time from an empty context, as
# `llama-bench -n` does; each step reads every weight once. This is the phase the napkin
# bounds.
#
# Each test gets a new context, one warm-up run and several timed repetitions with the cache
# cleared before each; the result is the mean of the per-repetition rates with their sample
# standard deviation, which is how `llama-bench` reports it. Run in-process through the
# Python binding, the same llama.cpp comes out slightly slower than a `llama-bench` binary on
# the same model and machine, so the live numbers lean conservative; `benchmarks/README.md`
# in the repository has the measured ratios and how to rerun the comparison.
#
# ## Why a synthetic model is honest for speed
#
# The default model is written by `napkin` itself: llama architecture, random weights from a
# fixed seed, in any of {glue:text}`synthetic_formats`. How fast a matrix multiplication runs depends on the
# shape of the matrices and the format of their numbers, not on whether the numbers were
# learned, so random weights time exactly like trained ones of the same shape. Three details
# keep the measurement clean:
#
# - The output layer is **tied to the token embeddings**, so every byte of weights is read
#   once per generated token: the tensor data is exactly the bytes per token in the ceiling.
# - The model is several times larger than the CPU's last-level cache, so it streams from
#   memory rather than running from cache.
# - Layers are few and wide (hidden size {glue:text}`hidden:d`), because narrow layers
#   spend their time synchronising threads, not moving bytes.
#
# The same seed always gives the same bytes, and models are cached under `.cache/models`
# (git-ignored), so a rerun does not rewrite them.
#
# ## A real model, a GPU
#
# **A real model**: `python -m napkin measure --model ~/models/llama-2-7b.Q4_0.gguf`. The
# bytes per token are then the model's tensor data as llama.cpp reports it.
#
# **Your GPU.** The measurement runs llama.cpp on whatever it was built for and asks it which
# backend (CPU, CUDA, Metal, ROCm, Vulkan) and which device it computes on: from the
# binding's own device list, or from a `llama-bench` binary's JSON. On a GPU the ceiling uses
# that device's memory bandwidth from `data/hardware_specs.csv`, found by the name llama.cpp
# reports, and the match is printed. For example:
#
# ```{glue:md} device_table
# :format: myst
# ```
#
# A device the table does not list (or cannot tell apart, such as a laptop part or a variant
# with less memory and less bandwidth) is never guessed: the run stops with a message, and
# `--bandwidth GB_PER_S` (in a notebook, the environment variable {glue:md}`bandwidth_env`)
# supplies the vendor's figure.
#
# **A GPU build of the binding.** On Linux, `pip` builds `llama-cpp-python` for the CPU.
# Rebuild it for your GPU (on a Mac with Apple silicon it is built with Metal already);
# `--no-cache-dir` keeps pip from reusing the CPU wheel it cached, and ROCm also needs HIP's
# compiler and your GPU's architecture named (see the repository's README):
#
# ```{glue:md} gpu_builds
# :format: myst
# ```
#
# **An existing `llama-bench`** with a GPU backend is used instead when it is passed with
# `--llama-bench`, named in `LLAMA_BENCH`, or on your `PATH`.
#
# **Only the measurement**, without the book's toolchain: from a clone,
# `pip install -e ".[measure]"`, then `python -m napkin measure`.
#
# ## The other live measurements
#
# Four chapters measure more than the ceiling. Each runs in seconds inside its notebook
# (the quick plan) and has a fuller version:
#
# | chapter | what is measured | fuller run |
# |---|---|---|
# | [The gap on one box](../notebooks/02_spark_gap.ipynb) | this machine's prefill/decode ratio (pp over tg from the run above) | `make measure` |
# | [The ridge point and batching](../notebooks/03_h100_ridge.ipynb) | llama.cpp's own prefill rate on the synthetic model (a float32 matrix multiplication through numpy beside it as a yardstick), its plain decode of the same model, and batched decode: {glue:text}`batch_min:d` to {glue:text}`batch_max:d` sequences decoding together through llama.cpp's batch API ({glue:text}`batch_full_max:d` with `NAPKIN_BATCH=full`), against the roofline that prefill rate and the probe predict; batch 1 is checked against the plain decode | re-execute the notebook |
# | [Grouped-query attention](../notebooks/05_gqa.ipynb) | decode speed at several context depths for two synthetic models with identical weights, one with every head cached (MHA) and one with grouped heads (GQA), alternating the two so drift hits both alike | `python -m napkin depth` (depths {glue:text}`depth_full`; the notebook's quick plan: {glue:text}`depth_quick`), or `NAPKIN_DEPTH=full make sync` |
# | [Speculative decoding](../notebooks/10_speculative_decoding.ipynb) | steps that add {glue:text}`verify_quick` tokens to one sequence at several depths, and a small synthetic draft's step, interleaved, against the roofline of this machine's measured roof; with a real model and a draft, greedy speculative decoding end to end (tokens kept per verify step) | `python -m napkin verify` (sizes {glue:text}`verify_full`), `--model TARGET --draft DRAFT` for acceptance, or `NAPKIN_VERIFY=full make sync` |
#
# The KV-cache chapter also checks the book's cache formula against the buffer llama.cpp
# itself allocates for synthetic models of several shapes; that check is a test
# (`tests/test_kvalloc.py`), so it runs on every `make test`.
#
# ## When it cannot run
#
# If llama.cpp is not installed, the machine lacks the memory or disk for the model, or a
# `llama-bench` fails, the command says which, and what to do, in one line; a notebook cell
# says so in one sentence and the chapter shows the published figures alone. A half-written
# model or result file is never left behind.
