"""Each notebook's stored outputs against the execution the book build just made.

`make test` executes every notebook once, in the book build (jupyter-cache, under
`_build/.jupyter_cache`), and compares that execution here with the outputs stored in the
`.ipynb`, cell by cell, the way nbval does (`pytest --nbval`): every output field but those
nbval skips, stream text coalesced, strictly equal; cells tagged `nbval-ignore-output`
(live measurements) are not compared. nbval would execute every notebook a second time to
make the same comparison. Run `make book` first.
"""

from __future__ import annotations

import difflib
from collections import defaultdict
from pathlib import Path

import nbformat
import pytest
from nbval.plugin import coalesce_streams, transform_streams_for_comparison

from test_notebooks import IGNORE_TAG, SOURCES

pytestmark = pytest.mark.site

ROOT = Path(__file__).resolve().parents[1]
CACHE = ROOT / "_build" / ".jupyter_cache"
#: What nbval leaves out of its comparison by default (nbval.plugin.IPyNbFile.skip_compare,
#: without --nbdime).
SKIP = {"metadata", "traceback", "prompt_number", "output_type", "name", "execution_count",
        "application/vnd.jupyter.widget-view+json", "image/png", "image/jpeg"}


def comparable(outputs) -> dict[str, list]:
    """nbval's view of a cell's outputs: each field (a MIME type of ``data`` flattened) with
    the list of its values, in order."""
    flat = defaultdict(list)
    for out in transform_streams_for_comparison(coalesce_streams(
            [nbformat.from_dict(o) for o in outputs])):
        for key, value in out.items():
            if key in SKIP:
                continue
            if key == "data":
                for mime, data in value.items():
                    if mime not in SKIP:
                        flat[mime].append(data)
            else:
                flat[key].append(value)
    return dict(flat)


def difference(executed: dict, stored: dict) -> str:
    """The first difference between two :func:`comparable` views, in a few lines."""
    if executed.keys() != stored.keys():
        return (f"fields differ: executed has {sorted(executed)}, stored has {sorted(stored)}")
    for key in stored:
        for a, b in zip(executed[key], stored[key]):
            if a != b:
                lines = difflib.unified_diff(str(b).splitlines(), str(a).splitlines(),
                                             "stored", "executed", n=0, lineterm="")
                return f"{key}:\n" + "\n".join(list(lines)[:12])
        if len(executed[key]) != len(stored[key]):
            return f"{key}: {len(executed[key])} outputs executed, {len(stored[key])} stored"
    return ""


@pytest.fixture(scope="module")
def cache():
    from jupyter_cache import get_cache

    if not (CACHE / "global.db").is_file():
        pytest.fail("no executed notebooks in _build/.jupyter_cache: run `make book` first")
    return get_cache(CACHE)


@pytest.mark.parametrize("py", SOURCES, ids=lambda p: p.stem)
def test_stored_outputs_are_what_the_build_executed(cache, py):
    stored = nbformat.read(py.with_suffix(".ipynb"), as_version=4)
    try:
        record = cache.match_cache_notebook(stored)
    except KeyError:
        pytest.fail(f"{py.name}: the book build holds no execution of this notebook's code; "
                    "run `make book` (after `make sync` if you edited it)")
    executed = cache.get_cache_bundle(record.pk).nb
    ran = [c for c in executed.cells if c.cell_type == "code"]
    kept = [c for c in stored.cells if c.cell_type == "code"]
    assert len(ran) == len(kept), f"{py.name}: {len(ran)} code cells executed, {len(kept)} stored"
    differ = []
    for number, (run, ref) in enumerate(zip(ran, kept), start=1):
        if IGNORE_TAG in ref.metadata.get("tags", []) or ref.execution_count is None:
            continue
        why = difference(comparable(run.outputs), comparable(ref.outputs))
        if why:
            differ.append(f"code cell {number}: {why}")
    assert not differ, (f"{py.name}: stored outputs differ from this build's execution; if the "
                        "change is meant, run `make sync`\n" + "\n\n".join(differ[:3]))
