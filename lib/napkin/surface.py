"""The library's public surface: each module's ``__all__``, and the pages that use each name.

The API page lists it, d2l's "defined in" turned round: every public name with the chapters
that call it. A notebook reaches the library only through these names (tests/test_lint.py), so
a reader who follows a chapter's code lands on something documented.
"""

from __future__ import annotations

import ast
import importlib
import inspect
import pkgutil
import re
from collections import defaultdict
from functools import lru_cache
from pathlib import Path
from typing import NamedTuple

import pandas as pd

from . import tables
from .toc import ROOT

__all__ = ["Use", "api_display", "api_table", "chapter_map", "modules", "packages", "public_names",
           "sources", "uses"]


def sources(root: Path = ROOT) -> list[Path]:
    """The book's pages that run code: the chapters' and the prose pages' Jupytext sources."""
    return sorted((root / "notebooks").glob("[0-9][0-9]_*.py")) + sorted(
        (root / "book").glob("*.py"))


@lru_cache(maxsize=None)
def modules() -> tuple[str, ...]:
    """Every module of the library, by dotted name."""
    import napkin
    names = ["napkin"] + [m.name for m in pkgutil.walk_packages(napkin.__path__, "napkin.")]
    return tuple(sorted(names))


def _is_module(dotted: str) -> bool:
    return dotted in modules()


def public_names(module: str) -> list[str]:
    """A module's declared surface (its ``__all__``); an empty list if it declares none."""
    return list(getattr(importlib.import_module(module), "__all__", []))


class Use(NamedTuple):
    """(page, module, name, line): ``name`` of ``module`` read at ``line`` of ``page``."""

    page: str
    module: str
    name: str
    line: int


def _chain(node: ast.Attribute) -> list[str] | None:
    parts = []
    while isinstance(node, ast.Attribute):
        parts.append(node.attr)
        node = node.value
    if not isinstance(node, ast.Name):
        return None
    return [node.id] + parts[::-1]


def _resolve(module: str, attrs: list[str]) -> tuple[str, str] | None:
    """The (module, name) a dotted read lands on: submodules followed, the first name that
    is not a module returned."""
    for attr in attrs:
        obj = getattr(importlib.import_module(module), attr, None)
        if not inspect.ismodule(obj):
            return module, attr
        if attr == attrs[-1] and callable(obj):  # napkin.predict(...): a callable package
            return module, attr
        module = obj.__name__
    return None


def uses(path: Path) -> list[Use]:
    """Every library name a page reads: ``from napkin.x import y`` and ``alias.y.z`` reads
    through a module it imported."""
    tree = ast.parse(path.read_text())
    page, aliases, found = path.stem, {}, []
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            for a in node.names:
                if a.name.split(".")[0] == "napkin":
                    aliases[a.asname or a.name.split(".")[0]] = a.asname and a.name or "napkin"
        elif isinstance(node, ast.ImportFrom) and (node.module or "").split(".")[0] == "napkin":
            for a in node.names:
                if _is_module(f"{node.module}.{a.name}"):
                    aliases[a.asname or a.name] = f"{node.module}.{a.name}"
                else:
                    found.append(Use(page, node.module, a.name, node.lineno))
    inner = {id(n.value) for n in ast.walk(tree) if isinstance(n, ast.Attribute)}
    for node in ast.walk(tree):
        if isinstance(node, ast.Attribute) and id(node) not in inner:  # a.b.c, not its a.b
            chain = _chain(node)
            if chain and chain[0] in aliases:
                hit = _resolve(aliases[chain[0]], chain[1:])
                if hit:
                    found.append(Use(page, *hit, node.lineno))
    return sorted(set(found))


def _kind(obj) -> str:
    if inspect.isclass(obj):
        return "class"
    if callable(obj):
        return "function"
    return "module" if inspect.ismodule(obj) else "constant"


def _summary(obj) -> str:
    doc = inspect.getdoc(obj) if (callable(obj) or inspect.ismodule(obj)) else ""
    return (doc or "").strip().split("\n\n")[0].replace("\n", " ")


def api_table(root: Path = ROOT) -> pd.DataFrame:
    """One row per public name of every module that declares ``__all__``: what it is, its
    first docstring paragraph, and the pages that read it."""
    read_by: dict[tuple[str, str], set[str]] = defaultdict(set)
    for path in sources(root):
        for use in uses(path):
            read_by[use.module, use.name].add(use.page)
    rows = []
    for module in modules():
        mod = importlib.import_module(module)
        for name in public_names(module):
            obj = getattr(mod, name)
            home = getattr(obj, "__module__", module) if not inspect.ismodule(obj) else module
            rows.append({"module": module, "name": name, "kind": _kind(obj),
                         "defined_in": home, "summary": _summary(obj),
                         "pages": sorted(read_by.get((module, name), set()))})
    return pd.DataFrame(rows)


def api_display(table: pd.DataFrame, package: str, chapters_url: str = "../notebooks/",
                pages_url: str = "") -> tables.Shown:
    """One package's rows of :func:`api_table` for the API page: each name with what it is
    and links to the pages that read it, numbered as the site numbers them."""
    from html import escape

    from . import toc

    def links(pages) -> str:
        out = []
        for stem in pages:
            folder = "notebooks" if (ROOT / "notebooks" / f"{stem}.py").exists() else "book"
            page = toc.page(f"{folder}/{stem}")
            url = chapters_url if folder == "notebooks" else pages_url
            out.append(f'<a href="{url}{stem}.html">{escape(page.label)}</a>')
        return "<br>".join(out) or "only the library and its tests"

    rows = table[(table["module"] == package) | (package != "napkin") &
                 table["module"].str.startswith(package + ".")]
    shown = pd.DataFrame({
        "name": [f"<code>{escape(m)}.{escape(n)}</code>" for m, n in
                 zip(rows["module"], rows["name"])],
        "kind": rows["kind"].values,
        "summary": rows["summary"].map(escape).values,
        "pages": rows["pages"].map(links).values,
    })
    out = tables.styled(shown, f"table-api-{package.replace('.', '-')}",
                        {"name": "Name", "kind": "Kind", "summary": "What it is",
                         "pages": "Read in"})
    about = _summary(importlib.import_module(package)).split(". ")[0].rstrip(".")
    about = about.removeprefix(f"{package.split('.')[-1]}: ")  # "napkin: the arithmetic ..."
    out.styler.set_caption(f"<code>{escape(package)}</code>: {escape(about)}")
    return out


def packages() -> list[str]:
    """The library's top-level modules and packages that declare a surface, for the API
    page's sections."""
    tops = sorted({".".join(m.split(".")[:2]) for m in modules() if m != "napkin"})
    return ["napkin"] + [t for t in tops if any(
        public_names(m) for m in modules() if m == t or m.startswith(t + "."))]


_INCLUDE = re.compile(r"```\{literalinclude\} \.\./lib/(napkin/[\w/]+)\.py\n# :language: python\n"
                      r"# :pyobject: ([\w.]+)")


#: Modules every chapter reads (figures, tables, glue): no help in telling chapters apart.
_EVERYWHERE = ("napkin", "napkin.tables", "napkin.prose")


#: A chapter's topic package is the one whose chart builders it imports.
_FIGURES = re.compile(r"^from napkin\.(\w+) import figures\b", re.M)


def chapter_map(root: Path = ROOT) -> str:
    """The README's map of the book, as a Markdown table: each chapter with its topic
    package (the package whose ``figures`` module draws it), what that package holds, the
    engines the chapter shows (its ``literalinclude``s), the library modules it reads most
    and its figures."""
    from . import exports, toc
    from .errata import registry

    checked = {registry.chapter_of(m): m for m in registry.CHAPTER_MODULES}

    figures: dict[str, list[str]] = defaultdict(list)
    for fig in exports.book_figures(root, executed=False):
        figures[fig["docname"]].append(f"`{fig['name']}`")
    lines = ["| Chapter | Package | Engines shown | Reads most | Figures |",
             "|---|---|---|---|---|"]
    for page in toc.chapters(root):
        source = root / f"{page.docname}.py"
        shown = [f"`{path.removesuffix('/__init__').replace('/', '.')}.{obj}`" for path, obj in
                 _INCLUDE.findall(source.read_text())]
        counts = pd.Series([u.module for u in uses(source)
                            if u.module not in _EVERYWHERE]).value_counts().sort_index() \
            .sort_values(ascending=False, kind="stable")  # ties by name, the same every run
        most = [f"`{m}`" for m in counts.index[:3]]
        package = _FIGURES.search(source.read_text())
        holds = "figures" + (", errata" if Path(page.docname).name in checked else "")
        home = f"`napkin.{package.group(1)}` ({holds})" if package else "-"
        lines.append(f"| {page.number} {page.title} | {home} | {', '.join(shown) or '-'} | "
                     f"{', '.join(most)} | {', '.join(figures[page.docname]) or '-'} |")
    return "\n".join(lines) + "\n"
