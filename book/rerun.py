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
from napkin.measure import FULL, QUICK, batched, depth, synthetic, verify
from napkin.prose import glue


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
glue("depth_full", words(f"{d:,}" for d in depth.FULL.depths))
glue("depth_quick", words(f"{d:,}" for d in depth.QUICK.depths))
glue("verify_quick", words(verify.QUICK.tokens))
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
# | `--llama-bench PATH` | use this `llama-bench` binary (a Metal, CUDA or ROCm build) |
# | `--threads N` | CPU threads (default: every core this process may use) |
# | `--reps N` | repetitions per test |
# | `--bandwidth GB_PER_S` | the bandwidth to put in the ceiling, when llama.cpp runs on a GPU |
# | `--json` | print the result record as JSON instead of a table |
# | `--out DIR` | where to save the record (default `results/`) |
#
# It prints progress as it goes, then a table: bytes per token, the probed bandwidth and how
# much its passes varied, prompt processing (pp) and token generation (tg) in tokens/s with
# their standard deviation, the napkin ceiling and the fraction of it that was reached. The
# full record (machine, llama.cpp build, every repetition) is saved as JSON under `results/`,
# which git ignores; a new run never overwrites an earlier one, and nothing is ever written
# into `data/`.
#
# ## What is timed
#
# **Memory bandwidth.** The numerator of the napkin. A read-only pass over an array far larger
# than the last-level cache, one thread per core, repeated; the best pass counts, and the
# spread between best and worst is reported because shared and laptop machines drift. The
# probe runs right before and right after each model, so a machine that changed speed during
# the run shows it.
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
# - **A real model**: `python -m napkin measure --model ~/models/llama-2-7b.Q4_0.gguf`. The
#   bytes per token are then the model's tensor data as llama.cpp reports it.
# - **A GPU build of llama.cpp**: build `llama-bench` with Metal, CUDA or ROCm, put it on your
#   `PATH` (or pass `--llama-bench`), and `napkin` runs it and reads its JSON output. The
#   memory probe measures the CPU's memory, not the GPU's, so pass your GPU's bandwidth with
#   `--bandwidth` (in GB/s, the vendor's figure; `data/hardware_specs.csv` lists many) to get
#   the right ceiling.
# - A `llama-cpp-python` built with GPU support offloads every layer automatically.
#
# ## The other live measurements
#
# Four chapters measure more than the ceiling. Each runs in seconds inside its notebook
# (the quick plan) and has a fuller version:
#
# | chapter | what is measured | fuller run |
# |---|---|---|
# | [The gap on one box](../notebooks/02_spark_gap.ipynb) | this machine's prefill/decode ratio (pp over tg from the run above) | `make measure` |
# | [The ridge point and batching](../notebooks/03_h100_ridge.ipynb) | peak FLOP/s from a large float32 matrix multiplication (numpy's BLAS, all cores, reported as dense FP32) and batched decode: {glue:text}`batch_min:d` to {glue:text}`batch_max:d` sequences decoding together through llama.cpp's batch API, against the roofline that peak and the probe predict | re-execute the notebook |
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
