"""The book's Sphinx extension: what turns the notebooks into the published site.

It lives with the book, not in :mod:`napkin` (the library a reader imports), and reads the
library only downwards. Jupyter Book loads it from ``_config.yml``
(``sphinx: local_extensions``, which puts ``book/_ext`` on ``sys.path``):

- :mod:`.assets`: vega, vega-lite, vega-embed and MathJax served by the site itself, so every
  page works offline; the site's script and style (``static/``); the theme resolved before
  the page draws; the footer's version stamp.
- :mod:`.links`: every prose mention of a chapter a link; figures and tables Sphinx targets.
- :mod:`.figures`: each notebook figure as the page's numbered ``<figure>``, the Figures
  page, and every figure exported into the site.

:mod:`.browser` is how the site test and ``scripts/screenshots.py`` drive the built site in
headless Chromium.
"""


def setup(app):
    for module in ("assets", "links", "figures", "inputs"):
        app.setup_extension(f"{__name__}.{module}")
    return {"parallel_read_safe": True, "parallel_write_safe": True}
