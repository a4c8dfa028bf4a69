"""Each notebook's stored outputs against the execution the book build just made.

`make test` executes every notebook once, in the book build (jupyter-cache, under
`_build/.jupyter_cache`), and compares that execution here with the outputs stored in the
`.ipynb`, cell by cell, over the fields nbval compares (`pytest --nbval`): every output field
but those nbval skips, stream text coalesced; cells tagged `nbval-ignore-output` (live
measurements) are not compared. nbval would execute every notebook a second time to make the
same comparison. Run `make book` first.

The comparison is by value, not by text: the words, markup and structure of an output must
be identical, and every number in it (in glued text, tables, chart specs' data) equal within
:data:`REL_TOL`. The outputs are executed on one machine and compared on any reader's: another
CPU, math library or thread count moves a float in its last digits (OpenBLAS picks its kernels
by CPU, and a least-squares fit moves in its 11th significant digit between an Intel Xeon and
an AMD EPYC: a glued ``1.4629304871829274`` stored, ``...276`` executed), which is no
difference a reader can see: the pages print four significant digits at most.
"""

from __future__ import annotations

import difflib
import json
import math
import re
from collections import defaultdict
from pathlib import Path

import nbformat
import pytest
from nbval.plugin import coalesce_streams, transform_streams_for_comparison

from test_notebooks import IGNORE_TAG, SOURCES

ROOT = Path(__file__).resolve().parents[1]
CACHE = ROOT / "_build" / ".jupyter_cache"
#: What nbval leaves out of its comparison by default (nbval.plugin.IPyNbFile.skip_compare,
#: without --nbdime).
SKIP = {"metadata", "traceback", "prompt_number", "output_type", "name", "execution_count",
        "application/vnd.jupyter.widget-view+json", "image/png", "image/jpeg"}
#: How far two numbers may differ, relative to the larger: a hundred times the 1e-11 that
#: CPUs' BLAS kernels move a fit by, and five orders of magnitude below the finest printed
#: digit, so any change a page could show fails.
REL_TOL = 1e-9
#: Below this, in absolute value, a number is zero up to rounding (a residual, the difference
#: of two equal values prints as 1e-17 on one machine and -3e-17 on another).
ABS_TOL = 1e-12
#: A number as it is written in an output's text: sign, digits, fraction, exponent.
NUMBER = re.compile(r"[-+]?(?:\d+\.\d*|\.\d+|\d+)(?:[eE][-+]?\d+)?")


def close(a: float, b: float) -> bool:
    return math.isclose(a, b, rel_tol=REL_TOL, abs_tol=ABS_TOL)


def _same_number(a: str, b: str) -> bool:
    """Two numbers as written: equal text, or two finite floats within the tolerance. An
    integer (a count, a year, digits of a hash) is compared as text, and so is what reads
    as an infinite float (``8e6183`` inside a commit hash)."""
    if a == b:
        return True
    if not any(c in a + b for c in ".eE"):
        return False
    x, y = float(a), float(b)
    return math.isfinite(x) and math.isfinite(y) and close(x, y)


def same_value(a, b) -> bool:
    """Whether two outputs are the same up to floating-point noise: text and structure
    identical, numbers within :data:`REL_TOL` (a JSON output is compared as data)."""
    if isinstance(a, dict) and isinstance(b, dict):
        return a.keys() == b.keys() and all(same_value(a[k], b[k]) for k in a)
    if isinstance(a, list) and isinstance(b, list):
        return len(a) == len(b) and all(same_value(x, y) for x, y in zip(a, b))
    if isinstance(a, bool) or isinstance(b, bool):
        return a is b
    if isinstance(a, (int, float)) and isinstance(b, (int, float)):
        return close(a, b)
    if isinstance(a, str) and isinstance(b, str):
        if a == b:
            return True
        return NUMBER.split(a) == NUMBER.split(b) and all(
            _same_number(x, y) for x, y in zip(NUMBER.findall(a), NUMBER.findall(b)))
    return a == b


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
    """The first difference between two :func:`comparable` views (:func:`same_value`), in a
    few lines."""
    if executed.keys() != stored.keys():
        return (f"fields differ: executed has {sorted(executed)}, stored has {sorted(stored)}")
    for key in stored:
        for a, b in zip(executed[key], stored[key]):
            if not same_value(a, b):
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


@pytest.mark.site
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


# -- the comparison itself, on a chapter's real stored outputs (no build needed) ---------------

def _nudge(value, ulps: int = 3):
    """``value`` as another machine might print it: every float moved ``ulps`` units in
    the last place (in JSON data, and where a float is written in text)."""
    if isinstance(value, dict):
        return {k: _nudge(v, ulps) for k, v in value.items()}
    if isinstance(value, list):
        return [_nudge(v, ulps) for v in value]
    if isinstance(value, float):
        for _ in range(ulps):
            value = math.nextafter(value, math.inf)
        return value
    if isinstance(value, str):
        return STANDALONE_FLOAT.sub(lambda m: repr(_nudge(float(m.group(0)), ulps)), value)
    return value


#: A float written on its own in text (not part of a name, a version or a hash).
STANDALONE_FLOAT = re.compile(r"(?<![\w.])-?\d+\.\d+(?:[eE][-+]?\d+)?(?![\w.])")


def _stored_views(py: Path) -> list[dict]:
    nb = nbformat.read(py.with_suffix(".ipynb"), as_version=4)
    return [comparable(c.outputs) for c in nb.cells
            if c.cell_type == "code" and IGNORE_TAG not in c.metadata.get("tags", [])]


@pytest.fixture(scope="module")
def chapter9():
    """Chapter 9's stored outputs: fits, glued floats, tables and chart specs."""
    views = _stored_views(ROOT / "notebooks" / "09_validation.py")
    assert sum(len(values) for v in views for values in v.values()) > 100
    return views


@pytest.mark.parametrize("py", SOURCES, ids=lambda p: p.stem)
def test_outputs_moved_by_a_few_units_in_the_last_place_are_the_same(py):
    """What another CPU's execution looks like to the comparison: no difference."""
    stored = _stored_views(py)
    nudged = [_nudge(v) for v in stored]
    assert [difference(a, b) for a, b in zip(nudged, stored)] == [""] * len(stored)
    if py.stem == "09_validation":  # the nudge must have moved something to prove anything
        assert sum(json.dumps(a) != json.dumps(b) for a, b in zip(nudged, stored)) > 20


def _first(views, want):
    """The (cell, field, index) of the first stored output string for which ``want`` holds."""
    for i, view in enumerate(views):
        for key, values in view.items():
            for j, v in enumerate(values):
                if isinstance(v, str) and want(v):
                    return i, key, j
    raise AssertionError("no such output")


def test_one_number_past_the_tolerance_or_one_word_changed_is_a_difference(chapter9):
    glued_float = re.compile(r"^-?\d+\.\d{6,}$")
    i, key, j = _first(chapter9, lambda v: bool(glued_float.match(v)))
    for change in (lambda v: repr(float(v) * (1 + 10 * REL_TOL)),  # a number moved
                   lambda v: repr(float(v) + 1e-6)):
        moved = [_nudge(v) for v in chapter9]
        moved[i][key][j] = change(chapter9[i][key][j])
        assert difference(moved[i], chapter9[i]), "a number moved past the tolerance"
    i, key, j = _first(chapter9, lambda v: "<table" in v and " the " in v)
    worded = [_nudge(v) for v in chapter9]
    worded[i][key][j] = chapter9[i][key][j].replace(" the ", " a ", 1)
    assert difference(worded[i], chapter9[i]), "a word changed"
    i, key, j = _first(chapter9, lambda v: "<table" in v and re.search(r">\d+<", v))
    counted = [dict(v) for v in chapter9]
    counted[i] = {**chapter9[i], key: list(chapter9[i][key])}
    counted[i][key][j] = re.sub(r">(\d+)<", lambda m: f">{int(m.group(1)) + 1}<",
                                chapter9[i][key][j], count=1)
    assert difference(counted[i], chapter9[i]), "a count changed by one"


@pytest.mark.parametrize("a, b, same", [
    ("1.4629304871829274", "1.4629304871829276", True),
    ("x1.46 for half", "x1.46 for half", True),
    ("0.1", "0.09999999999999999", True),
    ("1e-17", "-3e-17", True),
    ("room for 11 sequences", "room for 12 sequences", False),
    ("room for 11 sequences", "room for 11 sequence", False),
    ("1.4629", "1.4630", False),
    ({"data": [1.0, 2.0000000000000004]}, {"data": [1.0, 2.0]}, True),
    ({"data": [1.0, 2.0]}, {"data": [1.0, 2.1]}, False),
    ({"data": [True]}, {"data": [1]}, False),
    ("commit 5a8e6183", "commit 5a8e6184", False),
    ("seed 1e5", "seed 1e6", False),
    ("2,854 rows", "2,855 rows", False),
])
def test_what_counts_as_the_same_output(a, b, same):
    assert same_value(a, b) is same
