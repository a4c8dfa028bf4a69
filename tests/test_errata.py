"""The errata are recomputed, never typed: every verdict is an expression over the data and
the essay's numbers, and every check reads the essay's numbers when it runs."""

from __future__ import annotations

import ast
import inspect
import textwrap

import pytest

from napkin import errata, essay

CHECKS = {fn.__name__: fn for fn in errata.CHECKS}


def _erratum_keywords(fn) -> dict[str, ast.expr]:
    tree = ast.parse(textwrap.dedent(inspect.getsource(fn)))
    calls = [n for n in ast.walk(tree) if isinstance(n, ast.Call)
             and getattr(n.func, "id", None) == "Erratum"]
    assert len(calls) == 1, f"{fn.__name__} builds {len(calls)} Erratum objects"
    return {k.arg: k.value for k in calls[0].keywords}


@pytest.mark.parametrize("name", CHECKS)
def test_every_verdict_is_computed_not_typed(name):
    verdict = _erratum_keywords(CHECKS[name])["verdict"]
    assert not isinstance(verdict, ast.Constant), \
        f"{name} types its verdict ({verdict.value!r}): compute it from the data and the essay"


@pytest.mark.parametrize("name", [n for n, fn in CHECKS.items() if errata.claims_checked(fn)])
def test_every_check_reads_the_essays_numbers_when_it_runs(name, monkeypatch):
    """Halving every number the essay states must show up in what the check says it says."""
    before = CHECKS[name]()
    real = essay.claim
    monkeypatch.setattr(essay, "claim", lambda claim: real(claim) * 0.5)
    after = CHECKS[name]()
    assert after.essay_says != before.essay_says or after.verdict != before.verdict, \
        f"{name} does not read the essay's numbers from data/essay_claims.csv"


def test_verdicts_are_among_the_known_ones():
    found = errata.all_errata()
    assert set(found["verdict"]) <= set(errata.VERDICTS)
    assert found["chapter"].str.match(r"\d\d_[a-z0-9_]+$").all()
