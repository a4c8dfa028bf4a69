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
# # The essay

# %% tags=["remove-cell"]
import napkin
from napkin import errata, essay, tables
from napkin.prose import glue, glue_markdown

checked = errata.by_claim()
differs = checked["verdicts"].map(lambda v: any(x != "agrees" for x in v))
glue_markdown("essay_title", f"*{essay.TITLE}*")
glue_markdown("essay_date", essay.DATE)
glue("n_claims", len(checked))
glue("n_sections", checked["section"].nunique())
glue("n_checks", len(errata.CHECKS))
unchecked = checked[checked["checks"].map(len) == 0]
glue_markdown("coverage", "every number is covered by at least one of them." if unchecked.empty
              else f"{len(unchecked)} numbers are covered by none of them yet "
                   f"({', '.join(unchecked['claim'])}).")
glue("n_agree", int((~differs & (checked["checks"].map(len) > 0)).sum()))
glue("n_differ", int(differs.sum()))
glue("n_fails", int((~checked["conclusion_holds"]).sum()))

# %% tags=["remove-cell"]
# The title, computed (chapter 12): the essay's two desk machines, split and alone
link = tables.load("links").set_index("link").loc["10 GbE"]
request = dict(weights="F16", input_tokens=8192, output_tokens=500)
split = napkin.predict_split("DGX Spark", "M3 Ultra", "Llama-3.1-8B",
                             link_gb_per_s=float(link["bandwidth_GB_per_s"]), **request)
alone = {chip: napkin.predict_split(chip, chip, "Llama-3.1-8B", link_gb_per_s=None, **request)
         for chip in ("DGX Spark", "M3 Ultra")}
glue("title_prompt", request["input_tokens"])
glue_markdown("title_link", str(link.name))
glue("title_split_s", split.e2e_latency_s)
glue("title_mac_s", alone["M3 Ultra"].e2e_latency_s)
glue("title_spark_s", alone["DGX Spark"].e2e_latency_s)

# %% [markdown]
# This book grew out of one essay, {glue:md}`essay_title`, dated {glue:md}`essay_date`. Its
# argument fits in a paragraph. A request to a language model runs in two phases. Prefill
# pushes the whole prompt through the model in one pass, so each weight read from memory is
# used for every prompt token: the phase is limited by arithmetic. Decode then makes one
# token per pass and reads every weight, and the growing key-value cache, to make it: the
# phase is limited by memory bandwidth. So single-stream decode has a ceiling you can work
# out on a napkin, bandwidth over the bytes read per token, and real systems land some way
# below it. A box with a great deal of arithmetic and little bandwidth prefills fast and
# decodes slowly; a Mac is the mirror image. Batching is what makes hosted tokens cheap,
# because a batch shares one read of the weights, until the key-value cache fills memory;
# grouped-query attention, paged attention, chunked prefill and running the two phases on
# separate machines are how serving stacks live with that. A buyer should therefore ask
# which phase a workload spends its time in before comparing spec sheets.
#
# The chapters take the essay's numbers one by one and recompute them from their sources.
# The essay states {glue:text}`n_claims:d` numbers in {glue:text}`n_sections:d` sections;
# each is a row of `data/essay_claims.csv`, which the chapters quote with
# `napkin.essay.claim` rather than retype. The {glue:text}`n_checks:d` checks on the
# [errata page](errata.ipynb) recompute them, and {glue:md}`coverage` They find
# {glue:text}`n_agree:d` of the numbers in agreement with their sources and
# {glue:text}`n_differ:d` that differ from them; for {glue:text}`n_fails:d` the essay's
# conclusion does not survive the difference.
#
# The title is a claim no single number carries, and
# [chapter 12](../notebooks/12_different_machines.ipynb) computes it: a DGX Spark that only
# prefills a {glue:text}`title_prompt:,d`-token prompt for an M3 Ultra, the cache crossing
# {glue:md}`title_link`, finishes a request of Llama 3.1 8B in
# {glue:text}`title_split_s:.0f` s, against {glue:text}`title_mac_s:.0f` s on the Mac alone
# and {glue:text}`title_spark_s:.0f` s on the Spark alone. The same chapter says where the
# split stops paying (a thin link, a short prompt, a desk machine fast at both phases) and
# checks itself against a published split of datacenter GPUs.
#
# The table lists every number in the essay's order: the section it comes from, the
# essay's words, the chapter that checks it and what the checks found. A verdict links to
# the errata page, which says what each check compared and why it matters.

# %%
essay.claims_table(checked)
