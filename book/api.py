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
# # The library

# %% tags=["remove-cell"]
from IPython.display import display

from napkin import surface
from napkin.prose import glue

table = surface.api_table()
read = table[table["pages"].map(len) > 0]
glue("n_names", len(table))
glue("n_modules", table["module"].nunique())
glue("n_read", len(read))
glue("n_packages", len(surface.packages()))

# %% [markdown]
# Every number in the book is computed by `napkin`, the Python package in `lib/napkin`, and
# every chapter reaches it through the names listed here. A module declares what it offers
# in its `__all__`; {glue:text}`n_modules:d` modules declare {glue:text}`n_names:,d` names,
# and the book's pages read {glue:text}`n_read:d` of them. A test fails if a page reads a
# name its module does not declare, so a reader who follows a chapter's code always lands
# on a documented name. The tables below are generated from the code each time the book is
# built: one per package ({glue:text}`n_packages:d` in all), each name with the first
# paragraph of its docstring and the pages that read it, numbered as the site numbers them.
# Names read by no page are used by the library itself, its command line or its tests.
#
# To read one in full, `help(napkin.buying.rank)` in Python, or open its module under
# `lib/napkin`; the chapters show the short engines they describe beside the paragraph that
# explains them.

# %% tags=["remove-input"]
for package in surface.packages():
    display(surface.api_display(table, package, pages_url=""))
