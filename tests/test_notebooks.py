"""Notebooks: .py and .ipynb in sync, outputs stored, figures named and stable."""

from __future__ import annotations

import ast
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


CHAPTERS = [p for p in SOURCES if p.parent.name == "notebooks"]
BOX = "```{admonition} In one minute"


#: Tags that keep a cell's code from the reader (``hide-input`` only folds it).
REMOVED = {"remove-cell", "remove-input"}


def _code_lines(cell) -> int:
    return sum(1 for line in cell.source.splitlines()
               if line.strip() and not line.strip().startswith("#"))


@pytest.mark.parametrize("py", CHAPTERS, ids=lambda p: p.stem)
def test_a_chapter_shows_the_code_that_makes_its_numbers(py):
    """A reader sees (in view or folded under "Show code") the cells that compute what the
    prose states: no cell that glues a value or a sentence is removed from the page, and at
    least half of the chapter's code lines can be read beside the prose."""
    cells = [c for c in jupytext.read(py).cells if c.cell_type == "code"]
    hidden = [c for c in cells if REMOVED & set(c.metadata.get("tags", []))]
    glued = [c.source.splitlines()[0] for c in hidden if "glue" in c.source]
    assert not glued, f"{py.name} removes cells that compute its prose's numbers: {glued}; " \
                      "tag them hide-input (folded) instead"
    shown = sum(map(_code_lines, cells)) - sum(map(_code_lines, hidden))
    assert shown >= sum(map(_code_lines, cells)) / 2, \
        f"{py.name} shows {shown} of {sum(map(_code_lines, cells))} code lines"


@pytest.mark.parametrize("py", CHAPTERS, ids=lambda p: p.stem)
def test_every_chapter_opens_with_its_in_one_minute_box(py):
    """The first words after a chapter's title are its "In one minute" box (a merge once
    dropped chapter 2's, and no test noticed), before any code cell, folded or not."""
    cells = jupytext.read(py).cells
    prose = [line for c in cells if c.cell_type == "markdown"
             for line in c.source.splitlines() if line.strip()]
    box = next((i for i, c in enumerate(cells) if BOX in c.source), len(cells))
    assert all(c.cell_type == "markdown" for c in cells[:box]), \
        f"{py.name} has code before its box: a reader would meet a 'Show code' button first"
    assert prose and prose[0].startswith("# "), f"{py.name} does not open with its title"
    assert len(prose) > 1 and prose[1].strip() == BOX, (
        f"{py.name}: the title is followed by {prose[1][:60]!r}, not its \"In one minute\" "
        "box (```{admonition} In one minute, :class: tip, three to six findings)")
    body = prose[2:prose.index("```", 2)] if "```" in prose[2:] else []
    items = [line for line in body if line.startswith("- ")]
    assert 3 <= len(items) <= 6, f"{py.name}: the box holds {len(items)} findings, not 3 to 6"


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
    # a warning is printed with the kernel's temporary file name, which changes every run:
    # nbval would fail on it, and a reader should not see it
    warned = [i for i, c in enumerate(cells) if IGNORE_TAG not in c["metadata"].get("tags", [])
              and any(o.get("name") == "stderr" for o in c["outputs"])]
    assert not warned, f"{py.name}: code cells {warned} print warnings; fix their cause"


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


# -- no number typed into prose ---------------------------------------------------------------
#
# Every number a chapter states is glued from a computation. What may still carry digits is a
# *name*: a model (Llama 3.3 70B), a format (Q4_0, 16-bit), a test (pp512), a chip (H100, M2
# Ultra), a reference (chapter 3, Table 1, Fig. 11, §7.1), a statistic's name (99th
# percentile) or words quoted from a source. Anything else is a number typed by hand.

_STRIP = [re.compile(p, re.S) for p in (
    r"```.*?```",                 # fenced blocks: code and {math}
    r"\{[a-z:]+\}`[^`]*`",        # MyST roles: {glue:text}`x`, {eq}`..`, {doc}`..`
    r"`[^`]*`",                   # inline code
    r"\$\$.*?\$\$|\$[^$\n]+\$",   # inline and display math
    r"\]\([^)]*\)",               # link targets
    r"\"[^\"]{1,120}\"|“[^”]{1,120}”",  # quoted words of a source
)]
_NUMBER_TOKEN = re.compile(r"[\w.+×%/:-]*\d[\w.+×%/:-]*")
#: Names that contain digits.
_NAMES = re.compile(r"""(?x)
    (?:pp|tg)\d+                                  # llama-bench tests
  | [QqFf]\d+(?:_[0-9A-Za-z]+)*|I?Q\d_[A-Z0-9_]+  # llama.cpp formats
  | (?:FP|fp|BF|bf|INT|int|MXFP|NVFP|float)\d+(?:/BF16)?  # arithmetic formats
  | \d+-bit|\d+(?:st|nd|rd|th)(?:-percentile)?     # widths, statistics' names
  | [A-Z]{1,4}\d{2,4}[A-Z]{0,3}(?:-\w+)?           # chips: H100, MI300X, GB10, L40S, A100
  | M[1-4]|V\d|sm_\d+|HBM\d[e]?|2:4|Pow2            # Apple chips, versions, 2:4 sparsity
  | [Bb]atch-1                                     # the single-stream regime
  | (?:Llama|Mistral|Qwen|gpt-oss|DeepSeek|OPT|Mixtral|Gemma)[-\w.]*
  | \d+(?:\.\d+)?[BMK]|\d+(?:\.\d)?|\d+[kK]         # parts of model names (3.3 70B, 8B)
""")
#: Words after which a number is a name: a section, figure, table, model generation or
#: GeForce card, and the two regimes the book names by a number (batch 1, context 0).
_CONTEXT = re.compile(r"(?:chapters?|Chapters?|Table|Fig\.|Figure|§|[Ss]ection|Llama|RTX|"
                      r"Max\+|equation|[Dd]iscussions?|issues?|PR|builds?)\s*$")
_REGIMES = re.compile(r"(?:[Bb]atch|context|depth)\s*$")
#: A bare number: a name only after a word of _CONTEXT, as a model's size (70B) or before
#: "bits" (a format's width).
_BARE = re.compile(r"\d+(?:\.\d+)?[A-Za-z]?")


def _typed_numbers(text: str) -> list[str]:
    for pat in _STRIP:
        text = pat.sub(" ", text)
    found = []
    for m in _NUMBER_TOKEN.finditer(text):
        token = m.group().strip(".,:;/-")
        before = text[max(0, m.start() - 12):m.start()]
        after = text[m.end():m.end() + 6]
        if _BARE.fullmatch(token):
            if _CONTEXT.search(before) or (token in ("0", "1") and _REGIMES.search(before)) \
                    or re.search(r"Llama \d(?:\.\d)?\s*$", before) \
                    or re.fullmatch(r"\d+(?:\.\d+)?B", token) or re.match(r" bits?\b", after):
                continue
            found.append(f"{token!r} in '...{text[max(0, m.start() - 30):m.end() + 15]}...'")
        elif not all(_NAMES.fullmatch(part) for part in token.split("-") if re.search(r"\d", part)) \
                and not _NAMES.fullmatch(token):
            found.append(f"{token!r} in '...{text[max(0, m.start() - 30):m.end() + 15]}...'")
    return [" ".join(f.split()) for f in found]


def _captions(nb) -> list[str]:
    """The literal text of every figure caption (f-string parts that are computed are not)."""
    out = []
    for cell in nb.cells:
        if cell.cell_type != "code" or "Figure(" not in cell.source:
            continue
        for node in ast.walk(ast.parse(cell.source)):
            if isinstance(node, ast.keyword) and node.arg == "caption":
                out.append(" ".join(_literal_parts(node.value)))
    return out


def _literal_parts(node) -> list[str]:
    """The typed text of a string expression: constants, f-strings' literal parts and string
    concatenations; a computed part (a formatted value and its format spec) is skipped."""
    if isinstance(node, ast.Constant) and isinstance(node.value, str):
        return [node.value]
    if isinstance(node, ast.JoinedStr):
        return [v.value for v in node.values if isinstance(v, ast.Constant)]
    if isinstance(node, ast.BinOp):
        return _literal_parts(node.left) + _literal_parts(node.right)
    return []


@pytest.mark.parametrize("py", SOURCES, ids=lambda p: p.stem)
def test_no_number_is_typed_into_prose_or_captions(py):
    nb = jupytext.read(py)
    texts = [c.source for c in nb.cells if c.cell_type == "markdown"] + _captions(nb)
    typed = [t for text in texts for t in _typed_numbers(text)]
    assert not typed, (f"{py.name}: numbers typed into prose or captions (glue them, or name "
                       "them as in tests/test_notebooks.py):\n" + "\n".join(typed))


@pytest.mark.parametrize("text,typed", [
    ("prefill runs at 1,956 tokens/s", True), ("a 32x gap", True), ("about 40 % more", True),
    ("a gain of 2.1x", True), ("batch 64 reads", True), ("at 80 GB", True),
    ("Llama 3.3 70B at Q4_0, pp512 and tg128 on an H100 or M2 Ultra", False),
    ("chapter 3 and Table 1 and Fig. 11 and §7.1", False), ("the 99th percentile", False),
    ("{glue:text}`x:.1f` GB, the essay's \"128k contexts\"", False), ("RTX 4090", False),
])
def test_the_typed_number_detector(text, typed):
    assert bool(_typed_numbers(text)) == typed, _typed_numbers(text)



# -- code shown beside the prose ----------------------------------------------------------------

_INCLUDE = re.compile(r"```\{literalinclude\}\s+(\S+)\n((?::[a-z-]+:.*\n)*)")


def _includes(py: Path):
    text = "\n".join(line[2:] if line.startswith("# ") else line.lstrip("#")
                     for line in py.read_text().splitlines())
    for m in _INCLUDE.finditer(text):
        options = dict(re.findall(r":([a-z-]+):\s*(.*)", m.group(2)))
        yield (py.parent / m.group(1)).resolve(), options


def _defines(path: Path, dotted: str) -> bool:
    """Whether ``path`` defines ``dotted`` (``Class.method`` or a function) at its top level."""
    scope = ast.parse(path.read_text()).body
    for part in dotted.split("."):
        found = next((n for n in scope if isinstance(
            n, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)) and n.name == part), None)
        if found is None:
            return False
        scope = found.body
    return True


@pytest.mark.parametrize("py", SOURCES, ids=lambda p: p.stem)
def test_every_shown_piece_of_code_exists(py):
    """A `literalinclude` names a file and a `:pyobject:` (or text to start after): renaming
    the function must fail here, not in a reader's build."""
    for path, options in _includes(py):
        assert path.is_file(), f"{py.name} includes {path}, which does not exist"
        if "pyobject" in options:
            assert _defines(path, options["pyobject"].strip()), \
                f"{py.name}: {path.name} defines no {options['pyobject']!r}"
        for key in ("start-after", "end-before"):
            if key in options:
                assert options[key].strip().strip('"') in path.read_text(), \
                    f"{py.name}: {path.name} has no {options[key]!r}"


# A chapter quotes the calibrated model through napkin.predict: it may show a fitted parameter,
# but arithmetic on one re-derives the model by a formula of the chapter's own (chapter 3's
# "ridge x efficiency" crossover ignored the model's matmul ramp).
def _calibration_fields() -> set[str]:
    from dataclasses import fields
    from napkin.predict.calibration import Calibration
    return {f.name for f in fields(Calibration) if f.type in ("float", float)}


def _own_calibrated_formulas(source: str, fields: set[str]) -> list[str]:
    """Lines of ``source`` doing arithmetic on a calibration parameter, directly or through a
    name it was assigned to."""
    tree = ast.parse(source)

    def reads_field(node) -> bool:
        return any(isinstance(n, ast.Attribute) and n.attr in fields for n in ast.walk(node))
    tainted = {t.id for node in ast.walk(tree) if isinstance(node, ast.Assign)
               and reads_field(node.value) for t in node.targets if isinstance(t, ast.Name)}
    found = []
    for node in ast.walk(tree):
        if isinstance(node, (ast.BinOp, ast.AugAssign)) and (reads_field(node) or any(
                isinstance(n, ast.Name) and n.id in tainted for n in ast.walk(node))):
            found.append(f"line {node.lineno}: {ast.unparse(node)}")
    return found


@pytest.mark.parametrize("py", SOURCES, ids=lambda p: p.stem)
def test_calibrated_figures_come_from_napkin_predict(py):
    source = "\n".join("".join(c["source"]) for c in code_cells(load(py)))
    found = _own_calibrated_formulas(source, _calibration_fields())
    assert not found, (f"{py.name} does arithmetic on the calibration's parameters: "
                       f"{found}; compute the figure through napkin.predict (step.cost, "
                       "compute_bound_batch, ...) and glue its result")


def test_the_own_formula_detector():
    fields = _calibration_fields()
    assert "compute_efficiency" in fields
    assert _own_calibrated_formulas("glue('eta', cal.bandwidth_efficiency)", fields) == []
    assert _own_calibrated_formulas(
        "b = ridge * cal.compute_efficiency / cal.bandwidth_efficiency", fields)
    assert _own_calibrated_formulas("eta = cal.compute_efficiency\nb = 295 * eta", fields)
    assert _own_calibrated_formulas("b = step_seconds(d, 64, 0) * 2", fields) == []
