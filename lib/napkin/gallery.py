"""Sphinx extension: the Figures page, and every figure exported into the site.

``{napkin-figure-gallery}`` lists every figure of the book (read from the
notebooks in ``_toc.yml``) with its caption, downloads and a "cite this figure"
block; at the end of the build the images, data and metadata are exported into
``figures/`` of the site (see :mod:`napkin.exports`), so every link on the page
works offline. Anchors are the figure names, so a citation survives rebuilds.
"""

from __future__ import annotations

from html import escape
from pathlib import Path

from docutils import nodes
from sphinx.util import logging
from sphinx.util.docutils import SphinxDirective

from . import exports

FIGURES_DIR = "figures"


def citation_text(fig: dict, url: str, version: dict) -> str:
    return (f"The napkin book authors ({version['date'][:4]}). Figure {fig['name']}: "
            f"{fig['caption']} In: {exports.BOOK_TITLE}, version {version['commit']} "
            f"({version['date']}). {url}")


def citation_bibtex(fig: dict, url: str, version: dict) -> str:
    def clean(text: str) -> str:
        return text.replace("{", "").replace("}", "").replace("%", r"\%").replace("&", r"\&")

    return (f"@misc{{napkin-{fig['name']},\n"
            f"  author       = {{{{The napkin book authors}}}},\n"
            f"  title        = {{{clean(fig['name'])}: {clean(fig['caption'])}}},\n"
            f"  howpublished = {{{clean(exports.BOOK_TITLE)}, figure {fig['name']}}},\n"
            f"  year         = {{{version['date'][:4]}}},\n"
            f"  note         = {{Version {version['commit']} ({version['date']}). "
            f"Source: {clean(fig['source'])}}},\n"
            f"  url          = {{{url}}}\n}}")


def item_html(fig: dict, base_url: str, version: dict, to_root: str) -> str:
    name, chapter = fig["name"], fig["chapter"]
    files = f"{to_root}{FIGURES_DIR}/{name}"
    url = f"{base_url.rstrip('/')}/book/figures.html#{name}" if base_url else f"#{name}"
    links = " · ".join(f'<a href="{files}{suffix}.{fmt}" download>{label}</a>'
                       for suffix, label_prefix in (("", ""), ("-dark", "dark "))
                       for fmt, label in ((f, f"{label_prefix}{f.upper()}")
                                          for f in exports.FORMATS))
    page = fig["page"]
    return f"""
<section class="napkin-gallery-item" id="{name}">
<h2 class="napkin-gallery-name"><a class="headerlink-inline" href="#{name}">{name}</a></h2>
<p class="napkin-gallery-title">{escape(fig['title'])}</p>
<img class="napkin-gallery-image only-light" src="{files}.png" alt="{escape(fig['caption'])}"
 loading="lazy">
<img class="napkin-gallery-image only-dark" src="{files}-dark.png" alt="{escape(fig['caption'])}"
 loading="lazy">
<p>{escape(fig['caption'])} <span class="napkin-source">Source: {escape(fig['source'])}</span></p>
<p class="napkin-gallery-links">Download: {links} · <a href="{files}.csv" download>data (CSV)</a>
 · <a href="{files}.json" download>metadata</a> · seen in
 <a href="{to_root}{page}.html#{name}">{escape(chapter)}</a></p>
<details class="napkin-cite"><summary>Cite this figure</summary>
<pre>{escape(citation_text(fig, url, version))}</pre>
<pre>{escape(citation_bibtex(fig, url, version))}</pre>
</details>
</section>"""


class FigureGallery(SphinxDirective):
    """Every figure of the book, in reading order."""

    has_content = False

    def run(self):
        root = Path(self.env.srcdir)
        notebooks = exports.book_notebooks(root, executed=False)
        for nb in notebooks:
            self.env.note_dependency(str(nb))
        figures = []
        for nb in notebooks:
            page = nb.relative_to(root).with_suffix("").as_posix()
            for fig in exports.notebook_figures(nb):
                figures.append({**fig, "title": exports.title_of(fig["spec"]), "page": page})
        version = exports.book_version(root)
        base_url = self.config.html_baseurl or ""
        depth = self.env.docname.count("/")
        html = "\n".join(item_html(f, base_url, version, "../" * depth) for f in figures)
        count = nodes.paragraph(text=f"{len(figures)} figures, version {version['commit']} "
                                     f"({version['date']}).")
        return [count, nodes.raw("", html, format="html")]


def _export(app, exception):
    if exception is not None or app.builder.format != "html":
        return
    root = Path(app.srcdir)
    logger = logging.getLogger(__name__)
    exports.export_all(Path(app.outdir) / FIGURES_DIR, exports.book_notebooks(root),
                       progress=lambda m: logger.info("[figures] %s", m))


def setup(app):
    app.add_directive("napkin-figure-gallery", FigureGallery)
    app.connect("build-finished", _export)
    return {"parallel_read_safe": True, "parallel_write_safe": True}
