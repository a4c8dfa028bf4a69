"""The errata are recomputed, never typed: every verdict is an expression over the data and
the essay's numbers, every check reads the essay's numbers when it runs, and the table of the
checks' fixed text and the functions that compute them match one to one."""

from __future__ import annotations

import ast
import inspect
import re
import textwrap
from pathlib import Path

import pandas as pd
import pytest

from napkin import errata, essay, hardware, phases, roofline, tables
from napkin.errata import registry
from napkin.errata.cards import ErrataCards

ROOT = Path(__file__).resolve().parents[1]
CHECKS = errata.CHECKS


def _finding_keywords(check) -> dict[str, ast.expr]:
    tree = ast.parse(textwrap.dedent(inspect.getsource(check.function)))
    calls = [n for n in ast.walk(tree) if isinstance(n, ast.Call)
             and "Finding" in (getattr(n.func, "id", None), getattr(n.func, "attr", None))]
    assert len(calls) == 1, f"{check.id} builds {len(calls)} Finding objects"
    return {k.arg: k.value for k in calls[0].keywords}


@pytest.mark.parametrize("name", CHECKS)
def test_every_verdict_is_computed_not_typed(name):
    verdict = _finding_keywords(CHECKS[name])["verdict"]
    assert not isinstance(verdict, ast.Constant), \
        f"{name} types its verdict ({verdict.value!r}): compute it from the data and the essay"


def test_the_verdict_test_catches_a_typed_verdict():
    def typed():
        return errata.Finding(data_says="", verdict="agrees", conclusion_holds=True,
                              explanation="")

    fake = registry.Check("typed", "01_x", "", "", (), "", typed)
    assert isinstance(_finding_keywords(fake)["verdict"], ast.Constant)


#: Checks that run a chapter's simulation (seconds each, twice here): in `make test`, not in
#: the quick loop.
SIMULATING = {"chunk_budget_dial"}


@pytest.mark.parametrize("name", [pytest.param(n, marks=pytest.mark.slow) if n in SIMULATING
                                  else n for n in CHECKS if errata.claims_checked(n)])
def test_every_check_reads_the_essays_numbers_when_it_runs(name, monkeypatch):
    """Halving every number the essay states must show up in what the check says it says."""
    before = CHECKS[name]()
    real = essay.claim
    monkeypatch.setattr(essay, "claim", lambda claim: real(claim) * 0.5)
    after = CHECKS[name]()
    assert after.essay_says != before.essay_says or after.verdict != before.verdict, \
        f"{name} does not read the essay's numbers from data/essay_claims.csv"


@pytest.mark.parametrize("name", CHECKS)
def test_the_table_lists_every_claim_its_check_reads(name):
    """A claim the check's code quotes is one its row of data/errata_checks.csv covers."""
    source = inspect.getsource(CHECKS[name].function)
    read = set(re.findall(r"""\bessay\.claim\(\s*f?["']([a-z0-9_]+)["']""", source))
    assert read <= errata.claims_checked(name), \
        f"{name} reads {sorted(read - errata.claims_checked(name))}; add them to its row"


def test_verdicts_are_among_the_known_ones_and_chapters_are_notebooks():
    found = errata.all_errata()
    assert set(found["verdict"]) <= set(errata.VERDICTS)
    assert found["chapter"].str.match(r"\d\d_[a-z0-9_]+$").all()
    for chapter in found["chapter"].unique():
        assert (ROOT / "notebooks" / f"{chapter}.py").is_file(), chapter
    assert found["check"].tolist() == tables.load("errata_checks")["check"].tolist()


def test_a_check_takes_its_chapter_from_its_module():
    assert CHECKS["kv_batch_example"].chapter == "04_kv_cache"
    assert CHECKS["fraction_band"].chapter == "01_napkin_ceiling"
    assert errata.erratum("gqa_cut").chapter == "05_gqa"


def _table():
    return tables.load("errata_checks")


def _known():
    return essay.claims()["claim"]


def test_the_registry_joins_every_row_with_its_function():
    checks = registry.build(_table(), registry.CHAPTER_MODULES, _known())
    assert list(checks) == _table()["check"].tolist()


def test_a_row_without_a_function_stops_the_registry():
    extra = pd.concat([_table(), _table().head(1).assign(check="no_such_check")])
    with pytest.raises(ValueError, match="rows without a function: no_such_check"):
        registry.build(extra, registry.CHAPTER_MODULES, _known())


def test_a_function_without_a_row_stops_the_registry():
    fewer = _table()[_table()["check"] != "gqa_cut"]
    with pytest.raises(ValueError, match="functions without a row: gqa_cut"):
        registry.build(fewer, registry.CHAPTER_MODULES, _known())


def test_a_row_named_twice_or_an_unknown_claim_stops_the_registry():
    twice = pd.concat([_table(), _table().head(1)])
    with pytest.raises(ValueError, match="rows named twice: fraction_band"):
        registry.build(twice, registry.CHAPTER_MODULES, _known())
    wrong = _table().assign(claims=lambda t: t["claims"].where(t["check"] != "gqa_cut",
                                                               "gqa_cut no_such_claim"))
    with pytest.raises(ValueError, match="gqa_cut.*no_such_claim"):
        registry.build(wrong, registry.CHAPTER_MODULES, _known())


def test_a_placeholder_that_is_neither_claim_nor_value_is_refused():
    fake = registry.Check("gqa_cut", "05_gqa", "t", "{spark_gap:.0f}x", ("gqa_cut",), "s",
                          CHECKS["gqa_cut"].function)
    with pytest.raises(ValueError, match="names {spark_gap}"):
        fake()


def test_an_unknown_check_is_refused_by_name():
    with pytest.raises(ValueError, match="no errata check 'nope'; known: fraction_band"):
        errata.erratum("nope")


def test_a_finding_refuses_an_unknown_verdict():
    with pytest.raises(ValueError, match="verdict must be one of"):
        errata.Finding(data_says="", verdict="fine", conclusion_holds=True, explanation="")


def test_sources_typed_in_the_table_are_the_datas():
    """Where a check's source is a data row's, the table's URL is that row's."""
    rows = _table().set_index("check")["source_url"]
    llama = tables.row("models", "model", "Llama-3.3-70B")["config_url"]
    assert rows["spark_specs"] == hardware.chip("DGX Spark").source("fp4_tensor_sparse_TFLOPS")
    assert rows["llama33_config_reading"] == llama
    assert rows["decode_crossover_with_kv"] == roofline.LLAMA_3_3_70B_SOURCE
    assert rows["spark_petaflop"] == phases.NATIVE_MXFP4_SOURCE
    assert rows["spark_datacenter_compute"] == rows["spark_specs"]


def test_errata_cards_put_differences_first_and_escape_text():
    df = pd.DataFrame([
        {"topic": "A <b>", "chapter": "01_napkin_ceiling", "essay_says": "x", "data_says": "y",
         "verdict": "agrees", "conclusion_holds": True, "explanation": "z", "source": "s"},
        {"topic": "B", "chapter": "04_kv_cache", "essay_says": "x", "data_says": "y",
         "verdict": "unit slip", "conclusion_holds": False, "explanation": "z", "source": "s"}])
    cards = ErrataCards(df)
    html = cards.html()
    assert html.index("napkin-verdict-unit-slip") < html.index("napkin-verdict-agrees")
    assert "A &lt;b&gt;" in html and "the conclusion fails" in html
    assert '<a href="../notebooks/04_kv_cache.html">' in html
    assert cards._repr_mimebundle_()["text/plain"].splitlines() == ["- B: unit slip",
                                                                     "- A <b>: agrees"]
