"""Every mention of a chapter is a link, and every figure and table a target.

``_toc.yml`` numbers the chapters (:mod:`napkin.toc` reads it); here a prose mention of
"chapter 3" or "chapters 6 and 8" becomes a link to that chapter's page
(:class:`ChapterReferences`, a transform, so the prose keeps its words), as does one in a
notebook's table (:func:`table_links`) or in the HTML the site writes itself
(:func:`link_mentions`, for figure captions); a chapter's figures and tables become Sphinx
targets by name; and each page's number is checked against Sphinx's own numbering.
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Callable, Iterator

from docutils import nodes
from sphinx import addnodes
from sphinx.transforms import SphinxTransform
from sphinx.util import logging

from napkin import toc

logger = logging.getLogger(__name__)

#: A mention of chapters by number in prose: "chapter 3", "Chapter 3", "chapters 6 and 8",
#: "chapters 2, 6 to 9", "chapters 6-10".
MENTION = re.compile(
    r"\b(?P<word>[Cc]hapters?)(?P<gap>\s+)(?P<first>\d+)\b"
    r"(?P<rest>(?:\s*(?:,\s*and|,|and|or|to|-|\u2013)\s*\d+\b)*)")
_MORE = re.compile(r"(\s*(?:,\s*and|,|and|or|to|-|\u2013)\s*)(\d+)\b")


def mentions(text: str) -> Iterator[tuple[re.Match, list[tuple[str, int]]]]:
    """Each mention of chapters in ``text``: the match, and its parts as (the text before the
    number, the number): ("chapters ", 6), (" and ", 8). A link covers "chapters 6" and
    "8"."""
    for m in MENTION.finditer(text):
        parts = [(m.group("word") + m.group("gap"), int(m.group("first")))]
        parts += [(lead, int(n)) for lead, n in _MORE.findall(m.group("rest"))]
        yield m, parts


def link_mentions(html_text: str, href: Callable[[int], str]) -> str:
    """``html_text`` (escaped HTML) with each mention of a chapter made a link to
    ``href(number)``: what :class:`ChapterReferences` does to the prose, for the HTML the
    site writes itself (the captions of figures)."""
    out, pos = [], 0
    for m, parts in mentions(html_text):
        out.append(html_text[pos:m.start()])
        for lead, number in parts:
            words = lead + str(number) if lead.strip().lower().startswith("chapter") else \
                str(number)
            if words == str(number):
                out.append(lead)
            out.append(f'<span class="napkin-chapter-ref"><a class="reference internal" '
                       f'href="{href(number)}">{words}</a></span>')
        pos = m.end()
    return "".join(out) + html_text[pos:]


_TABLE_TEXT = re.compile(r">([^<>]+)<")


def table_links(html: str, docname: str, chapters: dict) -> tuple[str, int]:
    """A notebook's HTML table with each mention of a chapter in its cells' text linked to
    that chapter's page, as the prose is (a table is raw HTML, not text nodes, so
    :class:`ChapterReferences` hands it here); how many were linked."""
    count = 0

    def href(number: int) -> str:
        nonlocal count
        if number not in chapters:
            logger.warning("a table on %s mentions chapter %s, which _toc.yml does not have",
                           docname, number)
            return "#"
        count += 1
        return relative_uri(docname, chapters[number].docname)

    linked = _TABLE_TEXT.sub(lambda m: ">" + link_mentions(m.group(1), href) + "<", html)
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
        for m, parts in mentions(value):
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
    app.add_transform(ChapterReferences)
    app.connect("doctree-read", _register_targets)
    app.connect("env-merge-info", _merge_links)
    app.connect("env-purge-doc", _purge_links)
    app.connect("build-finished", _report_links)
    app.connect("html-page-context", _check_numbering)
    return {"parallel_read_safe": True, "parallel_write_safe": True}
