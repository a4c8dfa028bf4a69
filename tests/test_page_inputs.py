"""A page re-executes when, and only when, a file its kernel read has changed."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from types import SimpleNamespace

import nbformat
from jupyter_cache import get_cache
from jupyter_cache.base import CacheBundleIn

from napkin_site import inputs

ROOT = Path(__file__).resolve().parent.parent


def test_the_kernel_hook_records_modules_and_data_it_reads_and_nothing_it_writes(tmp_path):
    record = tmp_path / "page.reading"
    script = (
        "import os, napkin\n"
        "from napkin import kv_cache_bytes\n"
        "open('data/models.csv').read()\n"
        "os.listdir('data/models')\n"
        f"open({str(tmp_path / 'out.txt')!r}, 'w').write('x')\n"
    )
    env = {**os.environ, "NAPKIN_PAGE_INPUTS": str(record), "NAPKIN_REPO_ROOT": str(ROOT),
           "PYTHONPATH": os.pathsep.join([str(inputs.KERNEL_HOOK), str(ROOT / "lib")])}
    subprocess.run([sys.executable, "-c", script], cwd=ROOT, env=env, check=True)
    lines = set(record.read_text(encoding="utf-8").splitlines())
    assert {"file\tlib/napkin/__init__.py", "file\tlib/napkin/kvcache.py",
            "file\tdata/models.csv", "folder\tdata/models"} <= lines
    # The import system's listings of lib/ and the page's own output are not inputs; and
    # `import napkin` alone loads no topic module, so a page names only what it used.
    assert not {"folder\tlib", "folder\tlib/napkin"} & lines
    assert not any("split" in line or "out.txt" in line for line in lines)


def _record(root: Path, names: dict[str, str]) -> Path:
    path = root / "page.json"
    path.write_text(json.dumps({name: (kind, inputs._fingerprint(root / name, kind))
                                for name, kind in names.items()}), encoding="utf-8")
    return path


def test_an_edit_a_new_file_in_a_listed_folder_and_a_deletion_each_count(tmp_path):
    (tmp_path / "data").mkdir()
    (tmp_path / "data" / "a.csv").write_text("x\n1\n")
    (tmp_path / "m.py").write_text("X = 1\n")
    record = _record(tmp_path, {"m.py": "file", "data": "folder", "later.csv": "file"})
    assert inputs._changed_inputs(tmp_path, record) == []
    (tmp_path / "m.py").write_text("X = 2\n")
    (tmp_path / "data" / "b.csv").write_text("x\n")
    (tmp_path / "later.csv").write_text("x\n")  # recorded as missing: its arrival counts
    assert sorted(inputs._changed_inputs(tmp_path, record)) == ["data", "later.csv", "m.py"]
    (tmp_path / "m.py").unlink()
    assert "m.py" in inputs._changed_inputs(tmp_path, record)


def test_only_the_page_whose_input_moved_loses_its_cached_execution(tmp_path, capsys):
    cache_dir = "cache"
    cache = get_cache(tmp_path / cache_dir)
    for page in ("one", "two"):
        (tmp_path / f"{page}.ipynb").write_text("{}")
        for version in ("1", "2"):  # jupyter-cache keeps one execution per version of the code
            nb = nbformat.v4.new_notebook(cells=[nbformat.v4.new_code_cell(f"{page} = {version}")])
            cache.cache_notebook_bundle(CacheBundleIn(nb, str(tmp_path / f"{page}.ipynb")),
                                        check_validity=False)
    (tmp_path / "one.py").write_text("A = 1\n")
    (tmp_path / "two.py").write_text("B = 1\n")
    records = tmp_path / cache_dir / "page-inputs"
    records.mkdir()
    for page in ("one", "two"):
        (records / f"{page}.json").write_text(json.dumps(
            {f"{page}.py": ("file", inputs._fingerprint(tmp_path / f"{page}.py", "file"))}))
    app = SimpleNamespace(srcdir=str(tmp_path), config=SimpleNamespace(
        nb_execution_cache_path=cache_dir))
    env = SimpleNamespace(found_docs={"one", "two", "prose"},
                          doc2path=lambda doc: str(tmp_path / f"{doc}.ipynb"))
    assert inputs._outdated(app, env, set(), set(), set()) == []
    (tmp_path / "one.py").write_text("A = 2\n")
    assert inputs._outdated(app, env, set(), set(), set()) == ["one"]
    left = {Path(record.uri).stem for record in cache.list_cache_records()}
    assert left == {"two"}
    assert "re-executing one: one.py changed" in capsys.readouterr().out
    # A page Sphinx already re-reads is not named twice, but still loses its execution.
    (records / "two.json").unlink()
    assert inputs._outdated(app, env, set(), {"two"}, set()) == []
    assert cache.list_cache_records() == []
