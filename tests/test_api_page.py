"""The API page is current without a book build.

It lists every public name of the library with the chapters that read it, so a new name, a
changed docstring or a chapter that imports one more function each change its stored
outputs; ``make test`` would find that only after executing the whole book. Executed here
(seconds), it is compared with what is stored the way the book build's execution is
(:mod:`test_executed`: words exactly, numbers within floating-point noise).
"""

from __future__ import annotations

from pathlib import Path

import nbformat
from nbclient import NotebookClient

from test_executed import comparable, difference

ROOT = Path(__file__).resolve().parents[1]
PAGE = ROOT / "book" / "api.ipynb"


def test_the_api_pages_stored_outputs_are_what_it_computes_now():
    stored = nbformat.read(PAGE, as_version=4)
    run = nbformat.read(PAGE, as_version=4)
    NotebookClient(run, timeout=600, resources={"metadata": {"path": str(PAGE.parent)}}).execute()
    pairs = [(a, b) for a, b in zip(run.cells, stored.cells) if a.cell_type == "code"]
    differ = [f"code cell {i}: {why}" for i, (a, b) in enumerate(pairs, start=1)
              if (why := difference(comparable(a.outputs), comparable(b.outputs)))]
    assert not differ, ("book/api.ipynb is out of date (the library's names or what a chapter "
                        "reads changed): re-execute it with `make sync`\n"
                        + "\n\n".join(differ[:2]))
