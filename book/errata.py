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
# # Errata
#
# Every number the essay states is recomputed somewhere in this book. This page collects
# the places where the essay and its primary sources part ways: a figure that is not in the
# source it cites, a unit slip between GB and GiB or KiB and KB, a spec quoted for the wrong
# variant, or two sources that disagree with each other. Each row is computed when the book
# is built, from `data/essay_claims.csv` (the essay's side, in the words of
# `data/errata_checks.csv`) and the sourced tables (the data's side), by the checks in
# `napkin.errata`, one module per chapter; none is typed in.
#
# Of the {glue:text}`n_checks:d` checks, {glue:text}`n_differ:d` find a difference, and in
# {glue:text}`n_holds:d` of those the essay's conclusion survives it.

# %% tags=["remove-cell"]
from napkin import errata, tables
from napkin.prose import glue

found = errata.all_errata()
differ = found[found["verdict"] != "agrees"]
glue("n_checks", len(found))
glue("n_differ", len(differ))
glue("n_holds", int(differ["conclusion_holds"].sum()))

# %%
tables.styled(found.assign(conclusion_holds=found["conclusion_holds"].map({True: "yes",
                                                                          False: "no"})),
              "errata-table", {"topic": "What", "essay_says": "The essay says",
                               "data_says": "The data says", "verdict": "Verdict",
                               "conclusion_holds": "Conclusion holds?",
                               "explanation": "Why it matters", "chapter": "Chapter"})
