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
# # Readers' machines
#
# The book's promise is that you can rerun it on your machine. A rerun that stays in your
# `results/` folder teaches only you; this page collects the ones readers chose to share.
# Each is a `make measure` run turned into a small JSON file by one command, checked by
# another, and accepted into `data/readers/` by a pull request. Every shared run is drawn
# on the napkin chart of chapter 1 beside the published scoreboards, with the machine, the
# llama.cpp build and the date it was measured.
#
# {glue:md}`readers_count`

# %% tags=["remove-cell"]
import napkin
from napkin import tables
from napkin.readers import figures as charts
from napkin.prose import glue, glue_markdown
from napkin.readers import bounds, page, schema

entries = page.accepted()
runs = page.runs(entries)
by_backend = page.counts(entries)


def plural(n: int, word: str) -> str:
    return f"{n} {word}{'' if n == 1 else 's'}"


glue_markdown("readers_count", (
    f"There {'is' if len(entries) == 1 else 'are'} **{plural(len(entries), 'submission')}** "
    f"so far, with {plural(len(runs), 'run')} in all, on "
    + ", ".join(f"{r.backend} ({plural(r.submissions, 'submission')})"
                for r in by_backend.itertuples())
    + (". The first is this book's own measurement, shared with the same command a reader "
       "uses." if len(entries) else "")))
glue("decode_slack", bounds.DECODE_SLACK)
glue("cpu_ops", bounds.CPU_OPS_PER_CYCLE)
glue("cpu_ghz", bounds.CPU_MAX_HZ / 1e9)
glue_markdown("schema", f"`{schema.SCHEMA}`")
glue_markdown("fields", "| field | what it must be |\n|---|---|\n" + "\n".join(
    f"| `{field}` | {what} |" for field, what in schema.documented()))

# %% [markdown]
# ## Add your machine
#
# From a clone of the book (see [Rerun it on your machine](rerun.ipynb)):
#
# ```sh
# make measure QUICK=1     # or the full run: make measure
# make share               # the newest result -> results/share/<date>-<machine>-<id>.json
# ```
#
# `make share` (or `python -m napkin share [RESULT.json]` for a result other than the
# newest) prints the submission, checks it as a reviewer would, writes it without ever
# replacing an existing file, and says how to send it: a pull request that adds the file to
# `data/readers/`, or the repository's "Reader's result" issue form, which takes the JSON as
# it is. Any file can be checked on its own:
#
# ```sh
# python -m napkin results check results/share/*.json
# ```
#
# ## What a submission holds
#
# The format is versioned ({glue:md}`schema`). It says which machine ran (CPU and GPU
# names, backend, memory, OS family), which llama.cpp (the runner, in-process binding or
# `llama-bench`, its commit and the features it was built with), which model (name, file
# size, quantisation and a `sha256` of the file; the book's synthetic model is a model like
# any other), prefill and decode with every repetition, the bandwidth in the ceiling and
# where it came from (on a CPU the memory probe's best pass and spread; on a GPU the
# device's sourced figure), the book's commit and the dates. It holds no host name, user
# name or path.
#
# ```{glue:md} fields
# :format: myst
# ```
#
# ## What the check refuses
#
# `python -m napkin results check FILE...` prints one line per problem, naming the file,
# the field and what to do, and exits with status `1`; with `0` when every file is valid. It refuses
#
# - a file that is not JSON, or of a schema version this book does not know;
# - a missing, mistyped or unknown field (an unknown field is how a host name would slip
#   in), and rates that are not above zero or do not match their own repetitions;
# - decode faster than {glue:text}`decode_slack` times its own ceiling (bandwidth / bytes
#   per token), unless the file says speculative decoding ran;
# - prefill above the device's peak: at least two FLOPs per matmul weight per prompt token,
#   against the chip's dense peak for the arithmetic llama.cpp ran on that weight format,
#   where the device is a chip of the book's data. A CPU has no such row, so its prefill is
#   held to what no CPU core can do: {glue:text}`cpu_ops:,d` INT8 operations per cycle
#   (Intel's AMX tiles, the widest matrix unit a CPU has) at {glue:text}`cpu_ghz:.0f` GHz,
#   per thread used. That refuses only the impossible; a GPU the data does not list is
#   not bounded at all, and its points say so;
# - anything that looks personal: a home-directory or other absolute path, an e-mail
#   address, the checking machine's user or host name;
# - a measurement already accepted in `data/readers/`.
#
# The same check runs in the book's tests over every file in `data/readers/`, so a file
# that fails it cannot reach this page.
#
# ## On the napkin
#
# Each point is one decode run as a share of its own ceiling, at the bandwidth in that
# ceiling; the small points are the published runs of chapter 1. Hover or tap a point for
# the machine, backend, llama.cpp build and date.

# %% tags=["hide-input"]
napkin.Figure(
    name="fig-readers-napkin",
    chart=charts.decode_chart(page.napkin_rows(entries)),
    caption="Readers' decode runs (large) beside the published llama.cpp runs the book keeps: "
            "measured tokens/s over bandwidth / bytes per token, against that bandwidth.",
    source="Readers: data/readers/*.json (napkin-result/1), each checked by "
           "`python -m napkin results check`; published: data/apple_silicon_llama2_7b.csv, "
           "data/gpu_llama2_7b_q4_0.csv, data/cpu_llamacpp.csv.",
)

# %% tags=["remove-cell"]
on_peak = int(runs["peak_flops_per_s"].notna().sum()) if len(runs) else 0
glue_markdown("prefill_readers", (
    f"{plural(on_peak, 'reader run')} of {len(runs)} {'is' if on_peak == 1 else 'are'} on it"
    + ("; the rest ran on CPUs or GPUs without a peak in the book's data, and their prefill "
       "FLOP/s are in the table below" if on_peak < len(runs) else "")))

# %% [markdown]
# ## Prefill against the device's peak
#
# Prefill is the compute-bound phase, so its yardstick is the device's peak, not its
# bandwidth: two FLOPs per matmul weight per prompt token, times tokens per second, over the
# dense peak of the arithmetic llama.cpp ran. {glue:md}`prefill_readers`.

# %% tags=["hide-input"]
napkin.Figure(
    name="fig-readers-prefill",
    chart=charts.prefill_chart(page.prefill_rows(entries)),
    caption="Prefill FLOP/s as a share of the device's dense peak for the arithmetic that ran, "
            "against that peak: readers' runs on chips of the book's data, and the published "
            "prefill runs the book keeps.",
    source="Readers: data/readers/*.json; published: napkin.phases.compute.prefill_compute "
           "(llama.cpp scoreboards and DGX Spark's benchmark file); peaks: "
           "data/hardware_specs.csv.",
)

# %% [markdown]
# ## Every submission
#
# Select a column's title to sort by it (again to reverse).

# %% tags=["remove-input"]
tables.sortable(runs.assign(
    prefill_TFLOPS=runs["prefill_flops_per_s"] / 1e12, bw=runs["bandwidth_bytes_per_s"] / 1e9),
    "readers-table", {
        "machine": "Machine", "backend": "Backend", "model": "Model", "quant": "Weights",
        "bw": "Bandwidth (GB/s)", "bandwidth_origin": "From",
        "tokens_per_s": "Decode (tok/s)", "fraction_of_ceiling": "Of ceiling",
        "prefill_tokens_per_s": "Prefill (tok/s)", "prefill_TFLOPS": "Prefill (TFLOP/s)",
        "llama_cpp": "llama.cpp", "date": "Date", "file": "File"},
    formats={"bw": "{:,.1f}", "prefill_TFLOPS": "{:,.2f}"})

# %% [markdown]
# ## By backend

# %% tags=["remove-input"]
tables.styled(by_backend, "readers-backends",
              {"backend": "Backend", "submissions": "Submissions", "runs": "Runs"})
