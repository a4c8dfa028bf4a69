"""The code passes ruff's checks for unused and undefined names and likely bugs (the rules
are in pyproject.toml), so a dead import or a typo'd name fails here, not in a reader's run."""
import math
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def test_code_passes_ruff():
    ruff = Path(sys.executable).parent / "ruff"
    assert ruff.exists(), "ruff is missing from the environment: run `make env` (requirements.txt)"
    targets = ["lib", "tests", "scripts", "benchmarks", "book/_ext",
               *map(str, ROOT.glob("notebooks/*.py")), *map(str, ROOT.glob("book/*.py"))]
    proc = subprocess.run([str(ruff), "check", "--no-cache", "--output-format", "concise",
                           *targets], cwd=ROOT, capture_output=True, text=True)
    assert proc.returncode == 0, f"ruff found problems:\n{proc.stdout}{proc.stderr}"


def _imports() -> dict[str, set[str]]:
    """Every napkin module and the napkin modules it imports, at module level or inside a
    function (a deferred import still ties the two together): napkin.derived.imports, which
    finds the code a derived table is made by the same way."""
    from napkin import derived

    lib = ROOT / "lib"
    paths = {".".join(p.relative_to(lib).with_suffix("").parts).removesuffix(".__init__"): p
             for p in (lib / "napkin").rglob("*.py")}
    return {name: derived.imports(path) for name, path in paths.items()}


def test_the_library_has_no_import_circle():
    """No module imports, however indirectly, a module that imports it: a circle makes the
    order of imports matter and hides which concept rests on which."""
    graph = _imports()
    index, low, stack, on, circles = {}, {}, [], set(), []

    def visit(v):  # Tarjan's strongly connected components
        index[v] = low[v] = len(index)
        stack.append(v)
        on.add(v)
        for w in graph[v]:
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            component = []
            while True:
                w = stack.pop()
                on.discard(w)
                component.append(w)
                if w == v:
                    break
            if len(component) > 1:
                circles.append(sorted(component))

    for v in sorted(graph):
        if v not in index:
            visit(v)
    assert not circles, f"import circles: {circles}"


def test_the_library_does_not_import_the_site():
    """The book's Sphinx extension (``book/_ext/napkin_site``) reads the library; the library
    a reader imports never reads the extension, nor Sphinx or docutils."""
    import ast

    site = {"napkin_site", "sphinx", "docutils"}
    found = []
    for path in (ROOT / "lib" / "napkin").rglob("*.py"):
        for node in ast.walk(ast.parse(path.read_text())):
            names = [a.name for a in node.names] if isinstance(node, ast.Import) else \
                [node.module or ""] if isinstance(node, ast.ImportFrom) and not node.level else []
            found += [f"{path.relative_to(ROOT)}: {n}" for n in names if n.split(".")[0] in site]
    assert not found, f"the library imports the site's machinery: {found}"


def test_the_step_model_does_not_import_its_validation():
    """napkin.predict reads its fitted parameters from data/; fitting them is
    napkin.validation's business, which may import napkin.predict, never the reverse."""
    graph = _imports()
    reach, todo = set(), [m for m in graph if m.startswith("napkin.predict")]
    while todo:
        m = todo.pop()
        for dep in graph[m] - reach:
            reach.add(dep)
            todo.append(dep)
    assert not {m for m in reach if m.startswith("napkin.validation")}


def test_pages_read_only_the_declared_surface():
    """A chapter reaches the library through names a module declares in ``__all__`` (the API
    page lists them), never a private one."""
    from napkin import surface
    wrong = [f"{u.page}:{u.line} {u.module}.{u.name}" for path in surface.sources()
             for u in surface.uses(path) if u.name not in surface.public_names(u.module)]
    assert not wrong, f"pages read names their modules do not declare public: {wrong}; add " \
                      "them to the module's __all__ or use a public one"


def test_the_surface_finds_what_a_page_reads(tmp_path):
    from napkin import surface
    page = tmp_path / "p.py"
    page.write_text("import napkin\nfrom napkin import buying\nfrom napkin.serving import "
                    "chapter as sv\nfrom napkin.prose import glue\nbuying.rank(1).x\n"
                    "sv._private\nnapkin.predict.step.cost(1)\n")
    found = {(u.module, u.name) for u in surface.uses(page)}
    assert found == {("napkin.prose", "glue"), ("napkin.buying", "rank"),
                     ("napkin.serving.chapter", "_private"), ("napkin.predict.step", "cost")}


def test_the_readmes_chapter_map_is_current():
    import subprocess
    import sys
    out = subprocess.run([sys.executable, str(ROOT / "scripts/chapter_map.py"), "--check"],
                         capture_output=True, text=True)
    assert out.returncode == 0, out.stdout + out.stderr


def test_every_chapter_shows_an_engine():
    from napkin import surface
    rows = surface.chapter_map().splitlines()[2:]
    assert rows and all(row.split(" | ")[2] != "-" for row in rows), rows


def test_every_chapter_has_one_package():
    """Each chapter's engine, figures and errata are found in one topic package, which the
    README's chapter map names; its checks of the essay say which notebook they check."""
    from napkin import surface
    from napkin.errata import registry

    rows = [row.split(" | ") for row in surface.chapter_map().splitlines()[2:]]
    assert rows and all(row[1].startswith("`napkin.") for row in rows), rows
    for module in registry.CHAPTER_MODULES:
        package = module.rsplit(".", 1)[0]
        row = next(r for r in rows if r[0].removeprefix("| ").split()[0]
                   == str(int(registry.chapter_of(module)[:2])))
        assert row[1].startswith(f"`{package}` (figures, errata)"), (module, row)


#: Topic packages whose engine is also a shared piece the rest of the library builds on (the
#: decode ceiling, the roofline): their ``figures`` and ``errata`` are chapter code, the
#: rest is shared.
SHARED_ENGINES = {"ceiling", "roofline"}
#: The command line and the site's maps sit on top and may import anything.
TOP = {"napkin.__main__", "napkin.cli", "napkin.surface", "napkin.exports"}
#: The live harness runs chapters' engines on the reader's machine: chapters may import it
#: and it may import them, but no shared piece imports it.
HARNESS = "measure"


def _layers() -> dict[str, float | None]:
    """Each module's place: 0 for a shared piece, a chapter's number for its topic package's
    modules (the chapter whose page imports the package's figures), None where unchecked."""
    import re

    drawn = re.compile(r"^from napkin\.(\w+) import figures\b", re.M)
    chapter: dict[str, float] = {}
    for page in sorted([*ROOT.glob("notebooks/[0-9]*.py"), *ROOT.glob("book/*.py")]):
        number = int(page.name[:2]) if page.name[:2].isdigit() else math.inf  # appendices last
        for package in drawn.findall(page.read_text()):
            chapter.setdefault(package, number)
    layers: dict[str, float | None] = {}
    for module in _imports():
        parts = module.split(".")
        package = parts[1] if len(parts) > 1 else ""
        if module in TOP or package == HARNESS:
            layers[module] = None
        elif package in chapter and not (package in SHARED_ENGINES
                                         and parts[-1] not in ("figures", "errata")):
            layers[module] = chapter[package]
        else:
            layers[module] = 0
    return layers


def test_no_upward_import():
    """Shared pieces (units, tables, hardware, models, KV cache, roofline, the step model,
    charts) never import a chapter's package nor the live harness, and a chapter imports no
    later chapter's package: a reader going in order has met everything a page builds on."""
    graph, layers = _imports(), _layers()
    assert sum(v is not None and v > 0 for v in layers.values()) > 50, "no chapter found"
    upward = [f"{m} -> {d}" for m, deps in graph.items() for d in deps
              if layers[m] is not None and (
                  (layers[d] is not None and layers[d] > layers[m])
                  or (layers[m] == 0 and (layers[d] is None or layers[d] > 0)))]
    assert not upward, f"upward imports: {sorted(upward)}"
