"""The errata checks: each row of ``data/errata_checks.csv`` joined with the function of
the same name in a chapter's ``errata`` module.

The table holds what is fixed about a check (its topic, the essay's claim in words, the
essay claims it covers, its source); the function computes what the data says. A chapter's
checks live in its topic package beside its engine and figures (``napkin.capacity.errata``
checks chapter 4), and the module names the notebook it checks in ``CHAPTER``. Every public
function of such a module is a check: a row without a function, or a function without a
row, stops the import with a ValueError naming it.

The table's ``topic`` and ``essay_says`` are format strings: a placeholder names a claim of
``data/essay_claims.csv`` the row covers (``{q4_0_file_size:.2f} GB on disk``), read when the
check runs, or a value the check returns in ``Finding.essay_values``.
"""

from __future__ import annotations

import ast
import importlib
import re
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Callable, Iterable, Mapping

import pandas as pd

from .. import essay, tables
from .finding import Erratum, Finding

TABLE = "errata_checks"
_LIB = Path(__file__).resolve().parents[1]
#: The chapters' check modules, one ``errata.py`` per topic package, by module name: a
#: check's module is imported when the check runs, so chapter 4 loads no code of chapter 11.
CHAPTER_MODULES = tuple(sorted(f"napkin.{p.parent.name}.errata" for p in _LIB.glob("*/errata.py")))
_CHAPTER = re.compile(r"\d\d_[a-z0-9_]+")


class _Deferred:
    """A chapter module's check function, imported on its first call."""

    def __init__(self, module: str, name: str):
        self.module, self.name = module, name

    def resolve(self) -> Callable[[], Finding]:
        return getattr(importlib.import_module(self.module), self.name)

    def __call__(self) -> Finding:
        return self.resolve()()


class _Values:
    """What a check's text may name: the values it computed, then the claims it covers."""

    def __init__(self, check: "Check", computed: Mapping[str, object]):
        self.check, self.computed = check, computed

    def __getitem__(self, name: str):
        if name in self.computed:
            return self.computed[name]
        if name in self.check.claims:
            return essay.claim(name)
        raise ValueError(f"data/{TABLE}.csv row {self.check.id!r} names {{{name}}}, which is "
                         f"neither a claim in its claims column nor a value the check computes")


@dataclass(frozen=True)
class Check:
    """One check: its fixed text from the table and the function that computes the rest."""

    id: str
    chapter: str
    topic: str
    essay_says: str
    claims: tuple[str, ...]
    source: str
    compute: Callable[[], Finding]

    @property
    def function(self) -> Callable[[], Finding]:
        """The function that computes the check (imported if it was deferred)."""
        return self.compute.resolve() if isinstance(self.compute, _Deferred) else self.compute

    def __call__(self) -> Erratum:
        found = self.compute()
        values = _Values(self, found.essay_values)
        return Erratum(check=self.id, topic=self.topic.format_map(values), chapter=self.chapter,
                       essay_says=self.essay_says.format_map(values), data_says=found.data_says,
                       verdict=found.verdict, conclusion_holds=found.conclusion_holds,
                       explanation=found.explanation, source=self.source, claims=self.claims)


def _source(module: str) -> ast.Module:
    """A chapter module's syntax tree, read without importing it."""
    return ast.parse((_LIB / module.split(".")[1] / "errata.py").read_text())


def chapter_of(module: str) -> str:
    """The notebook a check module checks, its ``CHAPTER`` (``napkin.capacity.errata`` ->
    ``04_kv_cache``), read without importing it."""
    for node in _source(module).body:
        if (isinstance(node, ast.Assign) and [getattr(t, "id", None) for t in node.targets]
                == ["CHAPTER"] and isinstance(node.value, ast.Constant)):
            if not _CHAPTER.fullmatch(str(node.value.value)):
                raise ValueError(f"{module}.CHAPTER is {node.value.value!r}; name the notebook "
                                 "it checks, like '04_kv_cache'")
            return node.value.value
    raise ValueError(f"{module} has no CHAPTER = '<NN>_<chapter>' naming the notebook it checks")


def defined(module: str) -> list[str]:
    """The public functions a chapter module defines, read from its source without
    importing it."""
    return [n.name for n in _source(module).body
            if isinstance(n, ast.FunctionDef) and not n.name.startswith("_")]


def functions(modules: Iterable[str]) -> dict[str, tuple[str, _Deferred]]:
    """Every public function defined in the chapter modules, by name: (chapter, function,
    imported when first called)."""
    found: dict[str, tuple[str, _Deferred]] = {}
    for module in modules:
        for name in defined(module):
            if name in found:
                raise ValueError(f"check {name!r} is defined in both {found[name][0]} and "
                                 f"{chapter_of(module)}")
            found[name] = (chapter_of(module), _Deferred(module, name))
    return found


def build(table: pd.DataFrame, modules: Iterable[str],
          known_claims: Iterable[str]) -> dict[str, Check]:
    """Join the table's rows with the chapter modules' functions, in the table's order."""
    fns = functions(modules)
    ids = table["check"].tolist()
    duplicated = sorted({i for i in ids if ids.count(i) > 1})
    no_function = [i for i in ids if i not in fns]
    no_row = sorted(set(fns) - set(ids))
    problems = [f"rows named twice: {', '.join(duplicated)}" if duplicated else "",
                f"rows without a function: {', '.join(no_function)}" if no_function else "",
                f"functions without a row: {', '.join(no_row)}" if no_row else ""]
    if any(problems):
        raise ValueError(f"data/{TABLE}.csv and the errata modules disagree: "
                         + "; ".join(p for p in problems if p))
    known = set(known_claims)
    checks = {}
    for row in table.itertuples(index=False):
        claims = tuple(str(row.claims).split()) if pd.notna(row.claims) else ()
        unknown = [c for c in claims if c not in known]
        if unknown:
            raise ValueError(f"data/{TABLE}.csv row {row.check!r} covers claims not in "
                             f"data/essay_claims.csv: {', '.join(unknown)}")
        chapter, fn = fns[row.check]
        checks[row.check] = Check(row.check, chapter, row.topic, row.essay_says, claims,
                                  row.source_url, fn)
    return checks


#: Every check, by id, in the order of the table (the errata page's order).
CHECKS: dict[str, Check] = build(tables.load(TABLE), CHAPTER_MODULES, essay.claims()["claim"])


def check(check_id: str) -> Check:
    if check_id not in CHECKS:
        raise ValueError(f"no errata check {check_id!r}; known: {', '.join(CHECKS)}")
    return CHECKS[check_id]


def erratum(check_id: str) -> Erratum:
    """Run one check: what a chapter calls to assert what its prose says about the essay."""
    return check(check_id)()


def claims_checked(check_or_id: Check | str) -> set[str]:
    """The rows of data/essay_claims.csv a check covers (its row's ``claims`` column)."""
    found = check(check_or_id) if isinstance(check_or_id, str) else check_or_id
    return set(found.claims)


def all_errata(include_agreeing: bool = True) -> pd.DataFrame:
    df = pd.DataFrame([asdict(c()) for c in CHECKS.values()])
    return df if include_agreeing else df[df["verdict"] != "agrees"].reset_index(drop=True)


def by_claim(found: pd.DataFrame | None = None) -> pd.DataFrame:
    """Every claim of data/essay_claims.csv, in the essay's order, with the checks that
    cover it (a check's ``claims``): ``checks``, ``chapters`` and ``verdicts`` are tuples in
    the errata's order, empty for a claim no check covers; ``conclusion_holds`` is False
    when any of them finds the essay's conclusion fails. ``found`` is :func:`all_errata`,
    passed in when the caller already ran the checks."""
    found = all_errata() if found is None else found
    claims = essay.claims()
    covering = {name: [] for name in claims["claim"]}
    for e in found.itertuples(index=False):
        for name in e.claims:
            covering[name].append(e)

    def of(name, field):
        return tuple(getattr(e, field) for e in covering[name])

    return claims[["claim", "section", "value", "unit", "quote"]].assign(
        checks=[of(n, "check") for n in claims["claim"]],
        chapters=[tuple(dict.fromkeys(of(n, "chapter"))) for n in claims["claim"]],
        verdicts=[tuple(dict.fromkeys(of(n, "verdict"))) for n in claims["claim"]],
        conclusion_holds=[all(of(n, "conclusion_holds")) for n in claims["claim"]])
