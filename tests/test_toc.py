"""The table of contents as data (napkin.toc) and what the site builds from it: chapter
numbers, page titles, figure numbers, and which prose mentions of a chapter become links."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from napkin import essay, errata, exports, toc
from napkin_site import links

ROOT = Path(__file__).resolve().parents[1]


def _book(tmp_path: Path, toc_yml: str, pages: dict[str, str]) -> Path:
    (tmp_path / "_toc.yml").write_text(toc_yml)
    for docname, title in pages.items():
        path = tmp_path / f"{docname}.md"
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(f"# {title}\n\nText.\n")
    return tmp_path


TOC = """format: jb-book
root: intro
parts:
  - caption: Chapters
    numbered: 2
    chapters:
      - file: ch/one
      - file: ch/two
  - caption: About
    chapters:
      - file: about
"""


def test_numbered_parts_number_their_chapters_and_others_stay_unnumbered(tmp_path):
    root = _book(tmp_path, TOC, {"intro": "Home", "ch/one": "One", "ch/two": "Two",
                                 "about": "About"})
    assert [(p.docname, p.number, p.label) for p in toc.pages(root)] == [
        ("intro", None, "Home"), ("ch/one", 1, "1 One"), ("ch/two", 2, "2 Two"),
        ("about", None, "About")]
    assert toc.chapter(2, root).title == "Two"
    with pytest.raises(ValueError, match="no chapter 3 in _toc.yml"):
        toc.chapter(3, root)
    with pytest.raises(ValueError, match="no page 'nope'"):
        toc.page("nope", root)


def test_a_page_without_a_source_or_a_title_is_named(tmp_path):
    root = _book(tmp_path, TOC, {"intro": "Home", "ch/one": "One", "about": "About"})
    with pytest.raises(ValueError, match="ch/two"):
        toc.pages(root)
    (tmp_path / "ch" / "two.md").write_text("No heading here.\n")
    with pytest.raises(ValueError, match="no top-level heading"):
        toc.pages(root)


def test_titles_come_from_notebooks_and_jupytext_sources(tmp_path):
    nb = {"cells": [{"cell_type": "code", "source": ["x = 1"]},
                    {"cell_type": "markdown", "source": ["# A notebook\n", "\n", "text"]}]}
    (tmp_path / "a.ipynb").write_text(json.dumps(nb))
    (tmp_path / "b.py").write_text("# %% [markdown]\n# # A script\n#\n# text\n")
    assert toc.title_of_source(tmp_path / "a.ipynb") == "A notebook"
    assert toc.title_of_source(tmp_path / "b.py") == "A script"


def test_the_books_chapters_are_its_notebooks_in_order():
    chapters = toc.chapters(ROOT)
    assert [c.number for c in chapters] == list(range(1, len(chapters) + 1))
    assert all(c.docname.startswith("notebooks/") for c in chapters)
    assert toc.page("book/essay", ROOT).number is None


def test_figure_labels():
    assert toc.figure_label(9, 2) == "Figure 9.2"
    assert toc.figure_label(None, 3) == "Figure 3"
    with pytest.raises(ValueError, match="count from 1"):
        toc.figure_label(1, 0)


def test_every_figure_is_numbered_in_its_chapter():
    figures = exports.book_figures(ROOT, executed=False)
    by_page: dict[str, list[str]] = {}
    for fig in figures:
        by_page.setdefault(fig["docname"], []).append((fig["chapter_number"], fig["label"]))
    assert any(number for labels in by_page.values() for number, _ in labels)
    for labels in by_page.values():
        # a chapter's figures read "Figure 9.1, 9.2, ...", an unnumbered page's "Figure 1, 2"
        assert [label for _, label in labels] == [
            toc.figure_label(number, k) for k, (number, _) in enumerate(labels, 1)]


@pytest.mark.parametrize("text, mentions", [
    ("see chapter 3.", [["3"]]),
    ("Chapter 10's model", [["10"]]),
    ("chapters 6 and 8", [["6", "8"]]),
    ("chapters 2, 6 to 9", [["2", "6", "9"]]),
    ("chapters 6-10 and then", [["6", "10"]]),
    ("chapters 1\nand 2", [["1", "2"]]),
    ("chapter 3, and chapter 4", [["3"], ["4"]]),
    ("the chapter on the ridge; chapter3; section 3", []),
])
def test_what_counts_as_a_mention_of_a_chapter(text, mentions):
    found = [[str(n) for _, n in parts] for _, parts in links.mentions(text)]
    assert found == mentions


def test_mentions_in_html_become_links():
    linked = links.link_mentions("as chapters 6 and 8 show", lambda n: f"c{n}.html")
    assert linked == ('as <span class="napkin-chapter-ref"><a class="reference internal" '
                      'href="c6.html">chapters 6</a></span> and <span class="napkin-chapter-ref">'
                      '<a class="reference internal" href="c8.html">8</a></span> show')


def test_an_interactive_chart_is_named_by_its_fixed_words():
    spec = {"title": {"text": {"expr": "'x' + y"}}}
    assert exports.title_of(spec, "What it shows: details. More.") == \
        "What it shows (interactive)"
    assert exports.title_of({**spec, "title": {**spec["title"], "subtitle": "Fixed"}}) == \
        "Fixed (interactive)"
    assert exports.title_of({"title": ["Two", "lines"]}) == "Two lines"


def test_every_essay_claim_has_its_checks_and_the_table_links_them():
    """Joined with the checks' own rows (verdicts made up here: running every check takes a
    minute, and test_errata runs them)."""
    import pandas as pd

    found = pd.DataFrame([{"check": c.id, "chapter": c.chapter, "claims": c.claims,
                           "verdict": "agrees" if i % 2 else "unit slip",
                           "conclusion_holds": i != 1}
                          for i, c in enumerate(errata.CHECKS.values())])
    checked = errata.by_claim(found)
    assert checked["claim"].tolist() == essay.claims()["claim"].tolist()
    covering = {c for check in errata.CHECKS.values() for c in check.claims}
    assert set(checked.loc[checked["checks"].map(len) > 0, "claim"]) == covering
    html = essay.claims_table(checked)._repr_mimebundle_()["text/html"]
    assert 'id="T_table-essay-claims"' in html
    first = toc.page(f"notebooks/{checked['chapters'].iloc[0][0]}", ROOT)
    assert f'href="../notebooks/{first.docname.split("/")[-1]}.html">{first.label}</a>' in html
    assert html.count('href="errata.html"') == int((checked["checks"].map(len) > 0).sum())
    fails = checked[~checked["conclusion_holds"]]
    assert set(fails["claim"]) == set(list(errata.CHECKS.values())[1].claims) != set()
    assert html.count("the conclusion fails") == len(fails)


def test_joining_a_paragraphs_lines_keeps_repeated_phrases_in_place():
    """Chapter 4 once read "room for 11 sequences of gpt-oss-20b": docutils finds a child to
    remove or replace by equality, so joining lines moved a repeated " sequences of " to the
    first place it stood. The join rebuilds the children by position."""
    from docutils import nodes

    para = nodes.paragraph()
    for child in [nodes.Text("room for "), nodes.inline("11", "11"), nodes.Text(" sequences of"),
                  nodes.inline("4,096", "4,096"), nodes.Text(" tokens; an H100 holds"),
                  nodes.Text(" "), nodes.inline("20", "20"), nodes.Text(" sequences of"),
                  nodes.Text(" gpt-oss-20b but "), nodes.inline("4", "4"),
                  nodes.Text(" sequences of"), nodes.Text(" Llama")]:
        para += child  # MyST: a text node per source line, glued values as inline nodes
    before = para.astext()
    links._join_text(para)
    assert para.astext() == before
    assert not any(isinstance(a, nodes.Text) and isinstance(b, nodes.Text)
                   for a, b in zip(para.children, para.children[1:]))
    last = para.children[-1]
    links._replace_by_identity(para, last, [nodes.Text(str(last) + " 3.1")])
    assert para.astext() == before + " 3.1"


def test_a_notebook_table_links_its_mentions_of_a_chapter():
    class Page:
        def __init__(self, docname):
            self.docname = docname

    chapters = {8: Page("notebooks/08_what_to_buy")}
    html = ('<table id="T_x"><tr><th>band</th></tr><tr><td>chapter 8\'s: quartiles</td></tr>'
            '<tr><td>chapter 8</td></tr></table>')
    linked, count = links.table_links(html, "notebooks/11_cost_and_energy", chapters)
    assert count == 2
    assert linked.count('href="../notebooks/08_what_to_buy.html">chapter 8</a>') == 2
    assert linked.startswith('<table id="T_x"><tr><th>band</th>')
