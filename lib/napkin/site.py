"""Sphinx extension for the book's site: every page works with the network off.

Altair's notebook HTML fetches vega, vega-lite and vega-embed from a CDN, and
Sphinx loads MathJax from one, so an offline reader would see errors instead of
charts and equations. This extension writes the three Vega libraries, bundled
by the pinned ``vl-convert-python`` at the versions the pinned Altair expects,
and MathJax 3 (from the pinned ``django-static-mathjax`` wheel, SVG output, so
no web fonts) into the site's ``_static`` folder, and loads them on every page
before the figures that call them (see :mod:`napkin.charts`). It also turns each
notebook figure output into the page's ``<figure>`` (:class:`FigureOutput`) and
gives the page script the dark-mode chart colours.
"""

from __future__ import annotations

import json
import re
from html import escape
from pathlib import Path

from docutils import nodes
from sphinx import addnodes
from sphinx.transforms import SphinxTransform
from sphinx.util import logging

from . import gallery, toc
from .charts import DARK_CONFIG, JUPYTER_MIME, METADATA_KEY, figure_html

logger = logging.getLogger(__name__)

STATIC = Path(__file__).with_name("static")
BUNDLE = "vega-bundle.js"
THEME = "napkin-theme.js"
MATHJAX = "mathjax/tex-svg-full.js"


def vega_bundle() -> str:
    """vega + vega-lite + vega-embed as one classic script defining three globals.

    The bundle's own top-level names (``_`` among them) are wrapped in a function
    scope: at top level they would clash with Sphinx's ``const _`` in doctools.js.
    """
    import altair as alt
    import vl_convert as vlc

    major, minor = alt.VEGALITE_VERSION.split(".")[:2]
    bundle = vlc.javascript_bundle(vl_version=f"v{major}.{minor}")
    return f"(function () {{\n{bundle}\n}}).call(window);\n"


def library_versions() -> dict:
    """The versions the site must serve: what the pinned Altair writes specs for."""
    import altair as alt

    return {"vega": alt.VEGA_VERSION, "vega-lite": alt.VEGALITE_VERSION,
            "vega-embed": alt.VEGAEMBED_VERSION}


def mathjax_dir() -> Path:
    """MathJax 3's ES5 build, as shipped in the django-static-mathjax wheel."""
    import mathjax

    return Path(mathjax.__file__).parent / "static" / "mathjax"


def _configure(app, config):
    config.html_static_path.append(str(STATIC))
    config.mathjax_path = MATHJAX
    config.html_theme_options = {**config.html_theme_options,
                                 "extra_footer": version_stamp(config.html_baseurl)}


def version_stamp(base_url: str = "") -> str:
    """The footer line: which commit and day the site was built from, on what machine its
    live figures were measured, and where it is published (``html.baseurl`` of
    ``_config.yml``, the one setting the figure citations read too)."""
    from .exports import book_version
    from .measure import machine

    version = book_version()
    where = (f' Published at <a href="{escape(base_url)}">{escape(base_url)}</a>.'
             if base_url else "")
    return (f'<p class="napkin-stamp">Version {escape(version["commit"])}, built '
            f'{version["date"]}. Live figures measured on '
            f'{escape(machine.cpu_model())} while building.{where}</p>')


def _write(path: Path, text: str) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(path.name + ".tmp")
    tmp.write_text(text, encoding="utf-8")
    tmp.replace(path)


def _write_assets(app):
    """Write the libraries before any page, so pages get their cache-busting checksums."""
    if app.builder.format != "html":
        return
    static = Path(app.outdir) / "_static"
    _write(static / BUNDLE, vega_bundle())
    _write(static / THEME, theme_script())
    source = mathjax_dir()
    _write(static / MATHJAX, (source / "es5" / "tex-svg-full.js").read_text(encoding="utf-8"))
    _write(static / "mathjax" / "LICENSE", (source / "LICENSE").read_text(encoding="utf-8"))


#: Runs in the page's head, before anything is drawn. Unless the reader chose light or dark
#: with the theme button (pydata keeps the choice in localStorage), ``default_mode: auto``
#: leaves the page ``data-theme="auto"``, or the theme of an earlier visit, until the theme's
#: deferred script resolves it from the system's setting; resolving it here first means the
#: page and its charts are drawn in the right colours once, not light and then redrawn dark.
RESOLVE_AUTO = """(function () {
  var root = document.documentElement;
  var chosen = root.dataset.mode === "light" || root.dataset.mode === "dark";
  if (!chosen || (root.dataset.theme !== "light" && root.dataset.theme !== "dark")) {
    root.dataset.theme = window.matchMedia &&
      window.matchMedia("(prefers-color-scheme: dark)").matches ? "dark" : "light";
  }
})();
"""


def theme_script() -> str:
    """The dark-mode chart colours for napkin.js, from the one definition in
    :mod:`napkin.charts` that the dark exports use too, and the system's light or dark
    setting applied before the page draws (:data:`RESOLVE_AUTO`)."""
    return (f"window.napkinDarkConfig = {json.dumps(DARK_CONFIG, sort_keys=True)};\n"
            + RESOLVE_AUTO)


def _drop_duplicate_scripts(app, pagename, templatename, context, doctree):
    """Sphinx 7 lists some inline scripts twice, once with filename None and once
    with '' (sphinx-thebe's ``const THEBE_JS_URL``): a redeclaration, so a console error."""
    scripts = context.get("script_files")
    if not scripts:
        return
    seen, unique = set(), []
    for script in scripts:
        attributes = getattr(script, "attributes", {})
        key = (getattr(script, "filename", str(script)) or "", tuple(sorted(attributes.items())))
        if key in seen:
            continue
        seen.add(key)
        unique.append(script)
    scripts[:] = unique


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
            cite = f"{relative_uri(env.docname, gallery.PAGE)}#{meta['name']}"
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
        tail = tail.replace(escaped, toc.link_mentions(
            escaped, lambda n: relative_uri(docname, chapters[n].docname)
            if n in chapters else "#"), 1)
    return head + sep + tail


_TABLE_TEXT = re.compile(r">([^<>]+)<")


def table_links(html: str, docname: str, chapters: dict) -> tuple[str, int]:
    """A notebook's HTML table with each mention of a chapter in its cells' text linked to
    that chapter's page, as the prose is (a table is raw HTML, which the transform above
    does not read); how many were linked."""
    count = 0

    def href(number: int) -> str:
        nonlocal count
        if number not in chapters:
            logger.warning("a table on %s mentions chapter %s, which _toc.yml does not have",
                           docname, number)
            return "#"
        count += 1
        return relative_uri(docname, chapters[number].docname)

    linked = _TABLE_TEXT.sub(lambda m: ">" + toc.link_mentions(m.group(1), href) + "<", html)
    return linked, count


def relative_uri(from_doc: str, to_doc: str) -> str:
    """The link from one page of the site to another (``../book/figures.html``)."""
    return "../" * from_doc.count("/") + f"{to_doc}.html"


def book_pages(app) -> dict:
    """The book's pages by docname (:func:`napkin.toc.pages`), read once per build."""
    if getattr(app, "_napkin_pages", None) is None:
        app._napkin_pages = {p.docname: p for p in toc.pages(Path(app.srcdir))}
    return app._napkin_pages


#: Where a mention of a chapter is prose; inside these it is not (a title, code, a link).
_NOT_PROSE = (nodes.title, nodes.literal, nodes.reference, nodes.raw, nodes.comment,
              nodes.FixedTextElement, nodes.math, nodes.citation_reference,
              addnodes.pending_xref)


def _join_text(parent: nodes.Element) -> None:
    """Join neighbouring text nodes of ``parent`` into one (MyST makes a node of each source
    line), so a mention written across a line break is read whole. The children are rebuilt
    by position: docutils finds a child to remove or replace by equality, and a text node
    equals any other of the same words, so ``remove``/``replace`` would move a repeated
    phrase ("sequences of") to another place in the paragraph."""
    joined: list[nodes.Node] = []
    for child in parent.children:
        if joined and isinstance(child, nodes.Text) and isinstance(joined[-1], nodes.Text):
            joined[-1] = nodes.Text(str(joined[-1]) + str(child))
        else:
            joined.append(child)
    if len(joined) != len(parent.children):
        parent[:] = joined


def _replace_by_identity(parent: nodes.Element, old: nodes.Node, new: list[nodes.Node]) -> None:
    """``old`` replaced by ``new`` at its own position (see :func:`_join_text` for why not
    ``parent.replace``)."""
    at = next(i for i, child in enumerate(parent.children) if child is old)
    parent[at:at + 1] = new


class ChapterReferences(SphinxTransform):
    """Every prose mention of a chapter by number ("chapter 3", "chapters 6 and 8",
    "chapters 6-10") becomes a link to that chapter's page, its number read from
    ``_toc.yml`` (:mod:`napkin.toc`), so the prose keeps its words and a reader can follow
    them. Only text in paragraphs (which includes list items, admonitions and table cells)
    is linked, never a title, code, a literal or an existing link; a number that is no
    chapter is a warning, which the strict build turns into an error."""

    default_priority = 800  # after myst-nb has pasted glued text into the page

    def apply(self):
        chapters = {p.number: p for p in book_pages(self.app).values() if p.number}
        for parent in self.document.findall(nodes.TextElement):
            _join_text(parent)  # a line break in the source splits "chapter" from its number
        linked = 0
        for text in list(self.document.findall(nodes.Text)):
            parent = text.parent
            if not any(isinstance(a, nodes.paragraph) for a in _ancestors(parent)) or \
                    any(isinstance(a, _NOT_PROSE) for a in _ancestors(parent)):
                continue
            new, count = self._link(str(text), chapters, parent)
            if count:
                _replace_by_identity(parent, text, new)
                linked += count
        for raw in self.document.findall(nodes.raw):
            if raw.get("format") == "html" and "<table" in raw.astext():
                html, count = table_links(raw.astext(), self.env.docname, chapters)
                if count:
                    _replace_by_identity(raw.parent, raw, [nodes.raw(
                        text=html, format="html", classes=raw.get("classes", []))])
                    linked += count
        if linked:
            self.env.note_dependency(str(Path(self.env.srcdir) / "_toc.yml"))
        self.env.napkin_chapter_links = getattr(self.env, "napkin_chapter_links", {})
        self.env.napkin_chapter_links[self.env.docname] = linked

    def _link(self, value: str, chapters: dict, where) -> tuple[list[nodes.Node], int]:
        """``value`` as text and links; how many links."""
        out: list[nodes.Node] = []
        pos = count = 0
        for m, parts in toc.mentions(value):
            missing = [str(n) for _, n in parts if n not in chapters]
            if missing:
                logger.warning("%r mentions chapter %s, which _toc.yml does not have",
                               m.group(0), ", ".join(missing), location=where)
                continue
            out.append(nodes.Text(value[pos:m.start()]))
            for lead, number in parts:
                if lead.strip().lower().startswith("chapter"):
                    text = lead + str(number)
                else:
                    out.append(nodes.Text(lead))
                    text = str(number)
                out.append(self._xref(chapters[number], text))
                count += 1
            pos = m.end()
        out.append(nodes.Text(value[pos:]))
        return [n for n in out if not isinstance(n, nodes.Text) or str(n)], count

    def _xref(self, page, text: str) -> nodes.inline:
        """A link to the chapter's page that Sphinx resolves (and checks), in a span that
        marks it as one of these links (Sphinx drops the classes of what it resolves)."""
        ref = addnodes.pending_xref("", refdomain="std", reftype="doc",
                                    reftarget=f"/{page.docname}", refdoc=self.env.docname,
                                    refexplicit=True, refwarn=True)
        ref += nodes.inline(text, text)
        return nodes.inline("", "", ref, classes=["napkin-chapter-ref"])


def _ancestors(node):
    while node is not None:
        yield node
        node = node.parent


_FIGURE_ID = re.compile(r'<figure class="napkin-figure" id="([^"]+)">')
_FIGURE_NUMBER = re.compile(r'class="napkin-figure-number"[^>]*>([^<]+)<')
_TABLE_ID = re.compile(r'<table id="T_([^"]+)"')


def _register_targets(app, doctree):
    """A chapter's figures and tables become Sphinx targets, so prose can link them by name
    (``[the chart](#fig-gqa-decode-depth)``, ``[the table](#gqa-variants-table)``) and
    ``{ref}`` gives a figure's number. Their anchors are the ids the HTML already has: the
    figure's name, and ``T_`` + a table's id (pandas' prefix)."""
    std = app.env.get_domain("std")
    docname = app.env.docname
    for raw in doctree.findall(nodes.raw):
        if "output" not in raw.get("classes", []):  # notebook outputs, not embedded copies
            continue
        text = raw.astext()
        targets = [(m.group(1), m.group(1), (_FIGURE_NUMBER.search(text, m.end()) or m)[1])
                   for m in _FIGURE_ID.finditer(text)]
        targets += [(m.group(1), f"T_{m.group(1)}", m.group(1)) for m in _TABLE_ID.finditer(text)]
        for name, anchor, title in targets:
            if name in std.anonlabels and std.anonlabels[name][0] != docname:
                logger.warning("%s is a target in both %s and %s; figure and table names must "
                               "be unique", name, std.anonlabels[name][0], docname,
                               location=raw)
                continue
            std.anonlabels[name] = (docname, anchor)
            std.labels[name] = (docname, anchor, title)


def _check_numbering(app, pagename, templatename, context, doctree):
    """Sphinx numbers the headings, and so the page titles and the sidebar, from
    ``_toc.yml`` itself; the site's own reading of it (figure numbers, chapter links) must
    agree, page by page."""
    page = book_pages(app).get(pagename)
    if page is None:
        return
    numbers = app.env.toc_secnumbers.get(pagename, {}).get("")
    if (numbers[0] if numbers else None) != page.number:
        logger.warning("napkin.toc numbers %s as chapter %s, Sphinx as %s: fix napkin.toc.pages",
                       pagename, page.number, numbers)


def _merge_links(app, env, docnames, other):
    env.napkin_chapter_links = {**getattr(env, "napkin_chapter_links", {}),
                                **getattr(other, "napkin_chapter_links", {})}


def _purge_links(app, env, docname):
    getattr(env, "napkin_chapter_links", {}).pop(docname, None)


def _report_links(app, exception):
    if exception is None:
        links = getattr(app.env, "napkin_chapter_links", {})
        logger.info("[napkin] %d mentions of a chapter linked on %d pages",
                    sum(links.values()), sum(1 for n in links.values() if n))


def setup(app):
    app.connect("config-inited", _configure)
    app.add_transform(ChapterReferences)
    app.connect("doctree-read", _register_targets)
    app.connect("env-merge-info", _merge_links)
    app.connect("env-purge-doc", _purge_links)
    app.connect("build-finished", _report_links)
    app.connect("html-page-context", _check_numbering)
    app.connect("html-page-context", _drop_duplicate_scripts, priority=900)
    app.connect("builder-inited", _write_assets)
    app.add_js_file(BUNDLE, priority=200)
    app.add_js_file(THEME, priority=205)
    app.add_js_file("napkin.js", priority=210)
    app.add_css_file("napkin.css")
    return {"parallel_read_safe": True, "parallel_write_safe": True}
