"""Glue that is checked: every glued value is used, and prose comes after the cell that
computes its numbers (a chapter's opening may summarise what comes later)."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from test_notebooks import SOURCES, load


# -- glue that is checked ----------------------------------------------------------------------
#
# A glued number no sentence uses is dead code a reader cannot see; a sentence that uses a
# number glued further down the page cannot be read next to the code that computes it. The
# chapter's opening (everything before its first "## " heading) may summarise what comes later.

# the role ({glue:text}`key`) and the directive (```{glue:md} key, on a line of its own)
_GLUE_REF = re.compile(r"\{glue:(?:text|md|any|math|figure)\}`([A-Za-z0-9_]+)(?::[^`]*)?`"
                       r"|^`{3,}\{glue(?::(?:md|any|math|figure))?\}[ \t]+([A-Za-z0-9_]+)", re.M)


def _glue_layout(py: Path):
    cells = load(py)["cells"]
    opening = next((i for i, c in enumerate(cells) if c["cell_type"] == "markdown"
                    and re.search(r"^## ", "".join(c["source"]), re.M)), len(cells))
    glued = {}
    for i, c in enumerate(cells):
        for o in c.get("outputs", []) if c["cell_type"] == "code" else []:
            meta = o.get("metadata", {}).get("scrapbook")
            if meta:
                glued.setdefault(meta["name"], i)
    refs: dict[str, list[int]] = {}
    for i, c in enumerate(cells):
        if c["cell_type"] == "markdown":
            for role, directive in _GLUE_REF.findall("".join(c["source"])):
                refs.setdefault(role or directive, []).append(i)
    return opening, glued, refs


@pytest.mark.parametrize("py", SOURCES, ids=lambda p: p.stem)
def test_every_glued_value_is_used(py):
    _, glued, refs = _glue_layout(py)
    unused = sorted(set(glued) - set(refs))
    assert not unused, f"{py.name} glues values no sentence uses: {unused}"
    missing = sorted(set(refs) - set(glued))
    assert not missing, f"{py.name} uses values nothing glues: {missing}"


@pytest.mark.parametrize("py", SOURCES, ids=lambda p: p.stem)
def test_prose_comes_after_the_cell_that_glues_its_numbers(py):
    opening, glued, refs = _glue_layout(py)
    early = sorted({key for key, cells in refs.items() if key in glued
                    for i in cells if opening <= i < glued[key]})
    assert not early, (f"{py.name}: prose uses values glued further down the page (move the "
                       f"glue cell above the prose): {early}")


@pytest.mark.parametrize("py", SOURCES, ids=lambda p: p.stem)
def test_each_key_is_glued_once(py):
    """The book build (-W) fails on a key glued twice; the quick loop says so first."""
    names = [o["metadata"]["scrapbook"]["name"] for c in load(py)["cells"]
             if c["cell_type"] == "code" for o in c.get("outputs", [])
             if o.get("metadata", {}).get("scrapbook")]
    twice = sorted({n for n in names if names.count(n) > 1})
    assert not twice, f"{py.name} glues these keys more than once: {twice}"


_MD_REF = re.compile(r"\{glue:md\}`([A-Za-z0-9_]+)`|^`{3,}\{glue:md\}[ \t]+([A-Za-z0-9_]+)", re.M)


@pytest.mark.parametrize("py", SOURCES, ids=lambda p: p.stem)
def test_markdown_glue_is_glued_as_markdown(py):
    """{glue:md} needs a text/markdown record (glue_markdown); a plain glue() fails the book
    build (-W) with "No text/markdown found", which the quick loop should say first."""
    cells = load(py)["cells"]
    kinds = {o["metadata"]["scrapbook"]["name"]: o.get("data", {})
             for c in cells if c["cell_type"] == "code" for o in c.get("outputs", [])
             if o.get("metadata", {}).get("scrapbook")}
    md_refs = {role or directive for c in cells if c["cell_type"] == "markdown"
               for role, directive in _MD_REF.findall("".join(c["source"]))}
    plain = sorted(k for k in md_refs if k in kinds
                   and "application/papermill.record/text/markdown" not in kinds[k])
    assert not plain, (f"{py.name} reads these with {{glue:md}} but glues them with glue(), "
                       f"not glue_markdown(): {plain}")
