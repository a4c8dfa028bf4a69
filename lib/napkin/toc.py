"""The book's table of contents as data: which page is chapter N, and what it is called.

``_toc.yml`` numbers the chapters of its numbered part (``numbered:``); Sphinx numbers the
headings from it. The same numbers are needed outside Sphinx's headings: a figure is "Figure
9.2" in its chapter, on the Figures page and in its export (:mod:`napkin.exports`), a page
names a chapter by number (the essay's claims, the API page), the site links each prose
mention of "chapter 3" to chapter 3's page (the book's Sphinx extension, ``book/_ext``), and
the site test maps numbers back to pages. They are all read here, from the one file, so they
cannot disagree (the build checks them against Sphinx's own numbering).
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass
from pathlib import Path

__all__ = ["Page", "chapter", "chapters", "figure_label", "page", "pages", "title_of_source"]

ROOT = Path(__file__).resolve().parents[2]


@dataclass(frozen=True)
class Page:
    """One page of the book: its Sphinx docname (``notebooks/09_validation``), its title
    and, for a chapter, its number (``None`` for the root and the "About this book" pages)."""

    docname: str
    title: str
    number: int | None = None

    @property
    def label(self) -> str:
        """How the site names it: "9 The napkin against real servers", or the bare title."""
        return f"{self.number} {self.title}" if self.number else self.title


def title_of_source(path: Path) -> str:
    """The first top-level heading of a page's source: a notebook's first Markdown cell, a
    jupytext ``.py`` or a MyST ``.md`` file."""
    path = Path(path)
    if path.suffix == ".ipynb":
        cells = json.loads(path.read_text(encoding="utf-8"))["cells"]
        lines = [line for c in cells if c["cell_type"] == "markdown"
                 for line in "".join(c["source"]).splitlines()]
    else:
        lines = [re.sub(r"^# ?", "", line) if path.suffix == ".py" else line
                 for line in path.read_text(encoding="utf-8").splitlines()]
    for line in lines:
        if line.startswith("# "):
            return line[2:].strip()
    raise ValueError(f"{path} has no top-level heading ('# Title'): every page needs a title")


def _source(root: Path, docname: str) -> Path:
    """A page's source: the Markdown file, the jupytext ``.py`` (quick to read; a chapter's
    ``.ipynb`` holds megabytes of outputs), or the notebook."""
    for suffix in (".md", ".py", ".ipynb"):
        path = root / f"{docname}{suffix}"
        if path.is_file():
            return path
    raise ValueError(f"_toc.yml names {docname!r}, but there is no {docname}.ipynb, .md or .py")


def pages(root: Path = ROOT) -> list[Page]:
    """Every page in reading order. Chapters of numbered parts are numbered from 1 on,
    continuously across parts (the book has one numbered part; a second would continue it)."""
    import yaml

    root = Path(root)
    toc = yaml.safe_load((root / "_toc.yml").read_text(encoding="utf-8"))
    out = [Page(toc["root"], title_of_source(_source(root, toc["root"])))]
    number = 0
    for part in toc.get("parts", []):
        numbered = part.get("numbered", toc.get("numbered", False))
        for entry in part.get("chapters", []):
            if "file" not in entry:
                raise ValueError(f"_toc.yml: entry {entry!r} has no 'file'; the book links "
                                 "chapters by file")
            number += 1 if numbered else 0
            out.append(Page(entry["file"], title_of_source(_source(root, entry["file"])),
                            number if numbered else None))
    return out


def chapters(root: Path = ROOT) -> list[Page]:
    """The numbered pages, chapter 1 first."""
    return [p for p in pages(root) if p.number]


def chapter(number: int, root: Path = ROOT) -> Page:
    """Chapter ``number``; a ValueError names the chapters there are."""
    found = [p for p in chapters(root) if p.number == number]
    if not found:
        raise ValueError(f"no chapter {number} in _toc.yml (chapters 1 to "
                         f"{len(chapters(root))}); fix the reference or the table of contents")
    return found[0]


def page(docname: str, root: Path = ROOT) -> Page:
    """The page whose docname is ``docname`` (``notebooks/09_validation``)."""
    for p in pages(root):
        if p.docname == docname:
            return p
    raise ValueError(f"no page {docname!r} in _toc.yml")


def figure_label(chapter_number: int | None, index: int) -> str:
    """"Figure 9.2": the ``index``-th figure (from 1) of chapter ``chapter_number``, or
    "Figure 2" on an unnumbered page."""
    if index < 1:
        raise ValueError(f"figure index {index} must count from 1")
    return f"Figure {chapter_number}.{index}" if chapter_number else f"Figure {index}"
