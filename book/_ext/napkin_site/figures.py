"""The book's figures on the site: each chapter's, the Figures page, and their exports.

A notebook stores each :class:`napkin.Figure` as Vega-Lite with its name, caption and
source beside it; :class:`FigureOutput` (a myst-nb mime renderer) turns that output into the
page's numbered ``<figure>``. ``{napkin-figure-gallery}`` lists every figure of the book
(read from the notebooks in ``_toc.yml``), grouped by chapter, with its number, title,
caption, downloads and a "cite this figure" block; ``{napkin-figure}`` shows one stored
figure on another page (the index shows one of chapter 1's). At the end of the build the
images, data and metadata are exported into ``figures/`` of the site (see
:mod:`napkin.exports`), so every link on the page works offline. Anchors are the figure
names, so a citation survives rebuilds.

myst-nb finds a mime renderer only through the entry point group
``myst_nb.mime_renderers``; ``../napkin_site-0.1.0.dist-info/entry_points.txt`` declares
:class:`FigureOutput` there, and Jupyter Book puts ``book/_ext`` on ``sys.path``
(``local_extensions`` in ``_config.yml``), where the entry point is found.
"""

from __future__ import annotations

import json
from html import escape
from pathlib import Path

from docutils import nodes
from sphinx.util import logging
from sphinx.util.docutils import SphinxDirective

from napkin import exports, prose, toc
from napkin.charts import JUPYTER_MIME, METADATA_KEY, figure_html

from .links import book_pages, link_mentions, relative_uri

FIGURES_DIR = "figures"


#: The page that holds the gallery: every figure's "cite" link points at its entry there.
PAGE = "book/figures"


class FigureOutput:
    """myst-nb mime plugin: a notebook figure becomes the site's ``<figure>``.

    Notebooks store a figure as Vega-Lite 5 JSON (what JupyterLab draws) with its
    name, caption and source in the output's metadata; the site builds the HTML that
    draws it with the site's own Vega from those (:func:`napkin.charts.figure_html`),
    numbered in its chapter ("Figure 9.2", the n-th figure of the page, as
    :func:`napkin.exports.book_figures` numbers it for the Figures page) and linked to its
    citation there.
    """

    mime_priority_overrides = [("*", JUPYTER_MIME, 1),
                               ("*", "application/vnd.vegalite.v6+json", None)]

    @staticmethod
    def handle_mime(renderer, data, inline):
        if inline or data.mime_type != JUPYTER_MIME:
            return None
        meta = data.output_metadata.get(METADATA_KEY)
        if not meta:  # a bare Altair chart: myst-nb warns, and the strict build fails
            return None
        spec = data.content if isinstance(data.content, dict) else json.loads(data.string)
        document = renderer.renderer.document
        label = cite = ""
        env = getattr(document.settings, "env", None)
        if env is not None:
            env.note_dependency(str(Path(env.srcdir) / "_toc.yml"))
            page = book_pages(env.app).get(env.docname)
            count = getattr(document, "napkin_figure_count", 0) + 1
            document.napkin_figure_count = count
            label = toc.figure_label(page.number if page else None, count)
            cite = f"{relative_uri(env.docname, PAGE)}#{meta['name']}"
        html = figure_html(meta, spec, label, cite)
        if env is not None:  # "chapter 3" in a caption or a source is a link, as in the prose
            html = caption_links(html, (meta["caption"], f"Source: {meta['source']}"),
                                 env.docname, book_pages(env.app))
        return [nodes.raw(text=html, format="html", classes=["output", "text_html"])]


def caption_links(html: str, texts, docname: str, pages: dict) -> str:
    """The figure's HTML with each mention of a chapter in ``texts`` (its caption and its
    source line, as they stand in its ``<figcaption>``) linked."""
    chapters = {p.number: p for p in pages.values() if p.number}
    head, sep, tail = html.rpartition("<figcaption>")
    for text in texts:
        escaped = escape(text)  # as figure_html escapes it
        tail = tail.replace(escaped, link_mentions(
            escaped, lambda n: relative_uri(docname, chapters[n].docname)
            if n in chapters else "#"), 1)
    return head + sep + tail



def citation_text(fig: dict, url: str, version: dict) -> str:
    return (f"The napkin book authors ({version['date'][:4]}). {fig['label']}, "
            f"{fig['title']} ({fig['name']}). In: {exports.BOOK_TITLE}, version "
            f"{version['commit']} ({version['date']}). {url}")


def citation_bibtex(fig: dict, url: str, version: dict) -> str:
    def clean(text: str) -> str:
        return text.replace("{", "").replace("}", "").replace("%", r"\%").replace("&", r"\&")

    return (f"@misc{{napkin-{fig['name']},\n"
            f"  author       = {{{{The napkin book authors}}}},\n"
            f"  title        = {{{clean(fig['label'])}: {clean(fig['title'])}}},\n"
            f"  howpublished = {{{clean(exports.BOOK_TITLE)}, figure {fig['name']}}},\n"
            f"  year         = {{{version['date'][:4]}}},\n"
            f"  note         = {{Version {version['commit']} ({version['date']}). "
            f"Source: {clean(fig['source'])}}},\n"
            f"  url          = {{{url}}}\n}}")


def seen_in(fig: dict) -> str:
    """"chapter 9: The napkin against real servers", or the page's title."""
    number = fig.get("chapter_number")
    return f"chapter {number}: {fig['page_title']}" if number else fig["page_title"]


def item_html(fig: dict, base_url: str, version: dict, to_root: str,
              chapters: dict[int, str] | None = None) -> str:
    """One figure's entry: number and title, image, caption, where it is seen, downloads and
    its citation (text and BibTeX, each with the theme's copy button). ``chapters`` maps a
    chapter's number to its page, to link a caption's mentions of chapters."""
    name = fig["name"]
    def linked(text: str) -> str:  # "chapter 3" in a caption or a source line is a link
        return link_mentions(escape(text), lambda n: f"{to_root}{chapters[n]}.html") \
            if chapters else escape(text)

    files = f"{to_root}{FIGURES_DIR}/{name}"
    url = f"{base_url.rstrip('/')}/{PAGE}.html#{name}" if base_url else f"#{name}"
    links = " · ".join(f'<a href="{files}{suffix}.{fmt}" download>{label}</a>'
                       for suffix, label_prefix in (("", ""), ("-dark", "dark "))
                       for fmt, label in ((f, f"{label_prefix}{f.upper()}")
                                          for f in exports.FORMATS))
    alt = escape(fig["caption"])
    return f"""
<section class="napkin-gallery-item" id="{name}">
<h3 class="napkin-gallery-title"><a class="napkin-figure-number" href="#{name}">{fig['label']}</a>
 {escape(fig['title'])}</h3>
<p class="napkin-gallery-name"><code>{name}</code></p>
<img class="napkin-gallery-image only-light" src="{files}.png" alt="{alt}" loading="lazy">
<img class="napkin-gallery-image only-dark" src="{files}-dark.png" alt="{alt}" loading="lazy">
<p>{linked(fig['caption'])} <span class="napkin-source">{linked('Source: ' + fig['source'])}</span></p>
<p class="napkin-gallery-links">Seen in <a href="{to_root}{fig['docname']}.html#{name}">{escape(seen_in(fig))}</a>.
 Download: {links} · <a href="{files}.csv" download>data (CSV)</a>
 · <a href="{files}.json" download>metadata</a></p>
<details class="napkin-cite"><summary>Cite this figure</summary>
<p>As text:</p>
<div class="highlight"><pre>{escape(citation_text(fig, url, version))}</pre></div>
<p>As BibTeX:</p>
<div class="highlight"><pre>{escape(citation_bibtex(fig, url, version))}</pre></div>
</details>
</section>"""


def group_id(fig: dict) -> str:
    """The anchor of a chapter's group on the Figures page."""
    return f"chapter-{fig['chapter_number']}" if fig.get("chapter_number") else \
        fig["docname"].replace("/", "-")


class FigureGallery(SphinxDirective):
    """Every figure of the book, grouped by chapter in reading order, after a list of the
    chapters that links to each group."""

    has_content = False

    def run(self):
        root = Path(self.env.srcdir)
        for nb in exports.book_notebooks(root, executed=False):
            self.env.note_dependency(str(nb))
        self.env.note_dependency(str(root / "_toc.yml"))
        figures = [{**f, "title": exports.title_of(f["spec"], f["caption"])}
                   for f in exports.book_figures(root, executed=False)]
        groups: dict[str, list[dict]] = {}
        for fig in figures:
            groups.setdefault(group_id(fig), []).append(fig)
        version = exports.book_version(root)
        base_url = self.config.html_baseurl or ""
        to_root = "../" * self.env.docname.count("/")
        chapters = {p.number: p.docname for p in toc.chapters(root)}
        in_chapters = len({f["docname"] for f in figures if f["chapter_number"]})
        others = len(groups) - in_chapters
        where = f"{in_chapters} chapters" + (f" and {prose.count(others, 'other page')}"
                                             if others else "")
        count = nodes.paragraph(text=f"{len(figures)} figures in {where}, "
                                     f"version {version['commit']} ({version['date']}).")
        contents = nodes.bullet_list(classes=["napkin-gallery-contents"])
        sections = []
        for anchor, figs in groups.items():
            first = figs[0]
            heading = (f"{first['chapter_number']} {first['page_title']}"
                       if first.get("chapter_number") else first["page_title"])
            link = nodes.reference("", heading, refid=anchor)
            contents += nodes.list_item("", nodes.paragraph(
                "", "", link, nodes.Text(f" ({len(figs)} figure{'s' if len(figs) > 1 else ''})")))
            section = nodes.section(ids=[anchor], names=[anchor])
            section += nodes.title(text=heading)
            section += nodes.raw("", "\n".join(item_html(f, base_url, version, to_root, chapters)
                                               for f in figs), format="html")
            sections.append(section)
        return [count, contents, *sections]


class StoredFigure(SphinxDirective):
    """One figure of the book on another page, drawn from its chapter's stored output (the
    executed notebook): ``{napkin-figure} fig-all-machines``. It keeps its number and its
    caption and says which chapter it is from, with a link to it there."""

    required_arguments = 1
    has_content = False

    def run(self):
        root = Path(self.env.srcdir)
        name = self.arguments[0]
        figures = {f["name"]: f for f in exports.book_figures(root, executed=False)}
        if name not in figures:
            raise self.error(f"napkin-figure: no figure {name!r} in the book's notebooks; "
                             "give a name from book/figure-names.txt")
        fig = figures[name]
        self.env.note_dependency(str(root / f"{fig['docname']}.ipynb"))
        self.env.note_dependency(str(root / "_toc.yml"))
        to_root = "../" * self.env.docname.count("/")
        html = figure_html(fig, fig["spec"], fig["label"], f"{to_root}{PAGE}.html#{name}")
        source = (f'<p class="napkin-figure-from">{fig["label"]} is from <a href="{to_root}'
                  f'{fig["docname"]}.html#{name}">{escape(seen_in(fig))}</a>.</p>')
        return [nodes.raw("", f'<div class="napkin-embedded-figure">{html}\n{source}</div>',
                          format="html")]


def _export(app, exception):
    if exception is not None or app.builder.format != "html":
        return
    logger = logging.getLogger(__name__)
    exports.export_all(Path(app.outdir) / FIGURES_DIR, exports.book_figures(Path(app.srcdir)),
                       progress=lambda m: logger.info("[figures] %s", m))


def setup(app):
    app.add_directive("napkin-figure-gallery", FigureGallery)
    app.add_directive("napkin-figure", StoredFigure)
    app.connect("build-finished", _export)
    return {"parallel_read_safe": True, "parallel_write_safe": True}
