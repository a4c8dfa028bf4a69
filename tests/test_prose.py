"""The built pages say what their sources say: each paragraph of a page's source, with its
glued values filled in, is a paragraph of the built HTML, with the same words in the same
order, and the paragraphs come in the source's order.

Sphinx transforms the prose on its way to HTML (myst-nb pastes glued values, the site links
each mention of a chapter), and a transform that moves a node moves words: chapter 4 once
read "room for 11 sequences of gpt-oss-20b" where its source says "room for 11 sequences of
4,096 tokens". Words are compared, not punctuation (Sphinx turns quotes and dashes into
typographic ones); what only the build can write (a citation's label, an equation's number,
a figure's title in an empty link, maths as MathJax reads it) matches any words. Run
`make book` first.
"""

from __future__ import annotations

import re
from pathlib import Path

import nbformat
import pytest
from myst_nb.core.variables import format_plain_text

from napkin import toc

pytestmark = pytest.mark.site

ROOT = Path(__file__).resolve().parents[1]
HTML = ROOT / "_build" / "html"
#: Stands for words only the build writes.
ANY = object()
#: Directives whose body is prose (the boxes); every other fenced block is not a paragraph.
PROSE_DIRECTIVES = {"admonition", "note", "tip", "important", "warning", "seealso", "hint",
                    "attention", "caution", "danger", "error"}
#: A word: letters, or digits ("x1.46" is x, 1 and 46 however the build splits it).
WORD = re.compile(r"[^\W\d_]+|\d+")


def words(text: str) -> list[str]:
    return WORD.findall(text)


# -- the source side ---------------------------------------------------------------------------

def glued(nb) -> dict[str, dict]:
    """Each glued key's stored output data."""
    out = {}
    for cell in nb.cells:
        for o in cell.get("outputs", []):
            name = o.get("metadata", {}).get("scrapbook", {}).get("name")
            if name:
                prefix = o["metadata"]["scrapbook"]["mime_prefix"]
                out[name] = {k.removeprefix(prefix): v for k, v in o["data"].items()}
    return out


def paragraphs(markdown: str) -> list[str]:
    """The paragraphs of a Markdown source (list items and the boxes' paragraphs each one),
    leaving out headings, tables, code, maths, directives that are not prose, targets,
    comments and footnote definitions."""
    found, block, fences = [], [], []

    def end():
        if block:
            found.append(" ".join(block))
            block.clear()

    for line in markdown.splitlines():
        stripped = line.strip()
        fence = re.match(r"^(`{3,}|:{3,})\s*(\{([\w:-]+)\})?", stripped)
        if fence and fences and fence.group(1) == fences[-1][0] and not fence.group(2):
            end()
            fences.pop()
            continue
        if fence and (not fences or fences[-1][1]):
            end()
            fences.append((fence.group(1), (fence.group(3) or "") in PROSE_DIRECTIVES))
            continue
        if fences and not fences[-1][1]:
            continue  # inside code, maths, a figure or a pasted table
        if stripped.startswith(">"):
            stripped = stripped.lstrip("> ").strip()
        if fences and re.match(r"^:[\w-]+:", stripped):
            continue  # a directive's option
        if not stripped or re.match(r"^(#{1,6}\s|\||\(.+\)=$|%|\[\^[^\]]+\]:|\$\$|<)",
                                    stripped):
            end()
            continue
        if re.match(r"^([-*+]|\d+\.)\s+", stripped):
            end()
            stripped = re.sub(r"^([-*+]|\d+\.)\s+", "", stripped)
        block.append(stripped)
    end()
    return found


ROLE = re.compile(r"\{([\w:]+)\}`([^`]*)`")
LINK = re.compile(r"!?\[([^\]]*)\]\(([^)]*)\)")


def expected(paragraph: str, glue: dict[str, dict]) -> list:
    """The words the built paragraph must have, in order, :data:`ANY` where only the build
    knows them."""
    out: list = []
    pos = 0
    for m in re.finditer(rf"{ROLE.pattern}|{LINK.pattern}|\$[^$]+\$|\[\^[^\]]+\]",
                         paragraph):
        out += words(_plain(paragraph[pos:m.start()]))
        pos = m.end()
        token = m.group(0)
        if token.startswith("$") or token.startswith("[^"):
            out.append(ANY)
        elif ROLE.fullmatch(token):
            out += _role(m.group(1), m.group(2), glue)
        elif m.group(3):  # a link with its own words
            out += expected(m.group(3), glue)
        else:  # [](#fig-name): the build writes the target's title
            out.append(ANY)
    out += words(_plain(paragraph[pos:]))
    return out


def _plain(text: str) -> str:
    """Markdown escapes, inline code marks and inline HTML tags off (code kept as it is);
    the words stay."""
    parts = text.split("`")
    return " ".join(part if i % 2 else re.sub(r"<[^<>]+>", " ", re.sub(r"\\(.)", r"\1", part))
                    for i, part in enumerate(parts))


def _role(name: str, content: str, glue: dict[str, dict]) -> list:
    if name == "glue:text" and "::" not in content:
        key, _, spec = content.rpartition(":") if ":" in content else (content, "", "s")
        return words(format_plain_text(glue[key]["text/plain"], spec))
    if name in ("glue:md", "glue") and "::" not in content:
        key = content.split(":")[0]
        data = glue[key]
        if "text/markdown" in data:
            return expected(" ".join(data["text/markdown"].splitlines()), {})
        return words(format_plain_text(data["text/plain"], ""))
    explicit = re.match(r"^(.*?)\s*<[^>]+>$", content)
    if name in ("doc", "ref", "numref", "term") and explicit and explicit.group(1):
        return words(explicit.group(1))
    if name in ("cite", "cite:p", "cite:t", "eq", "doc", "ref", "numref", "term",
                "glue:text", "glue:md", "glue"):
        return [ANY]
    return words(content)  # a role whose text is shown as it is ({k}, {field})


def sources() -> list[tuple[str, Path]]:
    """Every page of the table of contents with its source file."""
    found = []
    for page in toc.pages(ROOT):
        for suffix in (".ipynb", ".md"):
            path = ROOT / f"{page.docname}{suffix}"
            if path.is_file():
                found.append((page.docname, path))
                break
    return found


def executed(path: Path):
    """The notebook as the book build executed it (its glued values are what the page
    shows, live measurements included)."""
    from jupyter_cache import get_cache

    cache_dir = ROOT / "_build" / ".jupyter_cache"
    if not (cache_dir / "global.db").is_file():
        pytest.fail("no executed notebooks in _build/.jupyter_cache: run `make book` first")
    cache = get_cache(cache_dir)
    stored = nbformat.read(path, as_version=4)
    try:
        return cache.get_cache_bundle(cache.match_cache_notebook(stored).pk).nb
    except KeyError:
        pytest.fail(f"{path.name}: the book build holds no execution of it; run `make book`")


def source_paragraphs(path: Path) -> list[list]:
    if path.suffix == ".ipynb":
        glue = glued(executed(path))
        cells = [c.source for c in nbformat.read(path, as_version=4).cells
                 if c.cell_type == "markdown"]
    else:
        glue, cells = {}, [re.sub(r"(?s)^---\n.*?\n---\n", "", path.read_text())]
    return [e for cell in cells for p in paragraphs(cell) if (e := expected(p, glue))]


# -- the built side ----------------------------------------------------------------------------

def built_paragraphs(html: str) -> list[list[str]]:
    from bs4 import BeautifulSoup

    soup = BeautifulSoup(html, "html.parser")
    article = soup.select_one("article.bd-article") or soup
    for junk in article.select("script, style, .headerlink, .cell_output .vega-embed"):
        junk.decompose()
    return [words(p.get_text(" ")) for p in article.find_all("p")]


def fits(want: list, got: list[str]) -> bool:
    """Whether ``got`` is ``want``, word for word, :data:`ANY` matching any words."""
    pattern = "".join(r"(?:\S+ )*?" if w is ANY else re.escape(w) + " " for w in want)
    return re.fullmatch(pattern, " ".join(got) + " " if got else "") is not None


def unmatched(want: list[list], got: list[list[str]]) -> list[str]:
    """Each source paragraph with no built paragraph that fits it, looking forward from the
    last one found (so the order is checked too), with the built paragraph it most resembles."""
    problems, at = [], 0
    for paragraph in want:
        found = next((i for i in range(at, len(got)) if fits(paragraph, got[i])), None)
        if found is None:
            literal = {w for w in paragraph if w is not ANY}
            closest = max(got, key=lambda g: len(literal & set(g)), default=[])
            problems.append("source: " + " ".join("…" if w is ANY else w for w in paragraph)
                            + "\n  built: " + " ".join(closest))
        else:
            at = found + 1
    return problems


@pytest.mark.parametrize("docname, source", sources(), ids=lambda x: str(x).split("/")[-1])
def test_every_built_paragraph_says_what_its_source_says(docname, source):
    page = HTML / f"{docname}.html"
    if not page.is_file():
        pytest.fail(f"no {page.relative_to(ROOT)}: run `make book` first")
    want = source_paragraphs(source)
    assert want, f"{source.name}: no paragraphs read from the source"
    problems = unmatched(want, built_paragraphs(page.read_text(encoding="utf-8")))
    assert not problems, (f"{docname}: {len(problems)} of {len(want)} paragraphs differ from "
                          f"the source (same words, same order):\n" + "\n".join(problems[:4]))


def test_the_paragraph_check_catches_clauses_swapped_between_lines():
    """Chapter 4's built page with two clauses of one paragraph swapped, as the old joining of
    a paragraph's lines did."""
    docname, source = next(s for s in sources() if s[0].endswith("04_kv_cache"))
    html = (HTML / f"{docname}.html").read_text(encoding="utf-8")
    want = source_paragraphs(source)
    assert not unmatched(want, built_paragraphs(html))
    a, b = "tokens, and even a B200 holds only", "(windowed layers, few KV heads) but"
    assert a in html and b in html
    swapped = html.replace(a, "\0").replace(b, a).replace("\0", b)
    [problem] = unmatched(want, built_paragraphs(swapped))
    assert "room for" in problem


@pytest.mark.parametrize("source, built, same", [
    ("As chapter {glue:text}`n:d` shows, [the chart](#fig-x) agrees {cite}`k`.",
     "As chapter 3 shows, the chart agrees [Kwon et al., 2023].", True),
    ("As chapter {glue:text}`n:d` shows, [the chart](#fig-x) agrees {cite}`k`.",
     "As chapter 4 shows, the chart agrees [Kwon et al., 2023].", False),
    ("See [](#fig-x) and $b/2$ of it.", "See Figure 4.2 and b/2 of it.", True),
    ("See [](#fig-x) and $b/2$ of it.", "See Figure 4.2 and of b/2 it.", False),
    ("**Bold** and *em* and `code`.", "Bold and em and code.", True),
])
def test_what_counts_as_the_same_paragraph(source, built, same):
    want = expected(source, {"n": {"text/plain": "3"}})
    assert fits(want, words(built)) is same
