"""Notebooks: .py and .ipynb in sync, outputs stored, figures named and stable."""

from __future__ import annotations

import json
import re
from pathlib import Path

import jupytext
import pytest

from napkin import charts

ROOT = Path(__file__).resolve().parents[1]
SOURCES = sorted((ROOT / "notebooks").glob("[0-9][0-9]_*.py")) + sorted(
    p for p in (ROOT / "book").glob("*.py") if p.with_suffix(".ipynb").exists() or
    "jupytext" in p.read_text()[:400])
IGNORE_TAG = "nbval-ignore-output"
#: A cell may skip nbval's comparison only when its output is a live measurement.
LIVE = re.compile(r"napkin\.measure|measure\.|live_")


def load(py: Path) -> dict:
    return json.loads(py.with_suffix(".ipynb").read_text())


def code_cells(nb: dict):
    return [c for c in nb["cells"] if c["cell_type"] == "code"]


def test_there_are_notebooks():
    assert SOURCES, "no notebooks/NN_topic.py found"


@pytest.mark.parametrize("py", SOURCES, ids=lambda p: p.stem)
def test_paired_and_in_sync(py):
    ipynb = py.with_suffix(".ipynb")
    assert ipynb.is_file(), f"{py.name} has no paired {ipynb.name}: run `make sync`"
    # The Python API, not `jupytext --to py:percent -o -`: writing to stdout drops the
    # pairing metadata, and `jupytext --diff` always exits 0.
    rendered = jupytext.writes(jupytext.read(ipynb), fmt="py:percent")
    assert rendered == py.read_text(), \
        f"{py.name} and {ipynb.name} differ: run `make sync` after editing the .py"


@pytest.mark.parametrize("py", SOURCES, ids=lambda p: p.stem)
def test_outputs_are_stored(py):
    cells = code_cells(load(py))
    assert cells
    # Cells that glue numbers or draw figures always produce output; an empty one means
    # the notebook was saved unexecuted, and nbval would then compare nothing.
    producing = [i for i, c in enumerate(cells)
                 if re.search(r"\bglue\(|napkin\.Figure\(", "".join(c["source"]))]
    assert producing, f"{py.name} neither glues a number nor draws a figure"
    empty = [i for i in producing if not cells[i]["outputs"]]
    assert not empty, f"{py.name}: code cells {empty} have no stored output; run `make sync`"
    errors = [o for c in cells for o in c["outputs"] if o["output_type"] == "error"]
    assert not errors, f"{py.name} stores an error output"


@pytest.mark.parametrize("py", SOURCES, ids=lambda p: p.stem)
def test_only_live_cells_skip_comparison(py):
    for cell in code_cells(load(py)):
        if IGNORE_TAG in cell["metadata"].get("tags", []):
            assert LIVE.search("".join(cell["source"])), \
                f"{py.name}: a cell that is not a live measurement is excluded from nbval"


def _figures():
    for py in SOURCES:
        for cell in code_cells(load(py)):
            for out in cell["outputs"]:
                meta = out.get("metadata", {}).get("napkin_figure")
                if meta:
                    yield py, meta, out


def test_figures_are_named_uniquely_with_caption_and_source():
    names = [meta["name"] for _, meta, _ in _figures()]
    assert names, "no figures in any notebook"
    assert len(names) == len(set(names)), f"duplicate figure names: {names}"
    for py, meta, out in _figures():
        assert re.fullmatch(r"fig-[a-z0-9-]+", meta["name"])
        assert meta["caption"] and meta["source"]
        assert set(out["data"]) == {charts.JUPYTER_MIME, "text/plain"}, \
            f"{py.name}: {meta['name']} is stored as {sorted(out['data'])}"


def test_no_random_element_ids_in_outputs():
    for py in SOURCES:
        text = py.with_suffix(".ipynb").read_text()
        assert "altair-viz-" not in text, f"{py.name} has Altair's random div ids"
        assert not re.search(r"T_[0-9a-f]{5}_", text), f"{py.name} has a pandas random table id"
