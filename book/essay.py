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
from napkin import errata, essay
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
# The table lists every number in the essay's order: the section it comes from, the
# essay's words, the chapter that checks it and what the checks found. A verdict links to
# the errata page, which says what each check compared and why it matters.

# %%
essay.claims_table(checked)
