"""Derived tables: what each was made from, so that one made from other inputs is found.

A fit or a cross-validation takes minutes to half an hour, so its results are stored in
``data/`` beside the measurements they come from, and chapters read them as they are. A
measurement corrected, a row added or a fitted module changed afterwards would leave such a
table out of date with nothing to say so. So each derived table ``data/<name>.csv`` is
written with a sidecar, ``data/<name>.fingerprint.json`` (:func:`stamp`), that records

- ``data``: every file of ``data/`` read while the table was made (:class:`Reads` records
  them as the script runs), by digest; a table whose first column names each row once (the
  published rows' ``row_id``, :mod:`napkin.rowids`) by each row's digest too, so that a
  check names the rows that changed;
- ``code``: the module that makes the table and every module of ``lib/`` it imports, however
  indirectly (:func:`code_of`), each by the digest of its syntax tree without docstrings, so
  that a comment or a docstring edited is not a change;
- ``sha256``: the table's own digest, so that a hand edit counts too;
- ``refit``: the command that makes the table again.

:func:`check` recomputes every digest from the files as they are now and says what moved.

Only the standard library is used here: ``benchmarks/peer_llm_analysis.py`` runs in the peer
calculator's own environment, without the book's packages, and loads this file by its path.
"""

from __future__ import annotations

import ast
import csv
import hashlib
import json
import os
import platform
import sys
from pathlib import Path
from typing import Iterable

__all__ = ["check", "code_digest", "code_of", "content_digest", "data_digest", "imports",
           "module_path", "Reads", "ROOT", "sidecar", "stamp"]

ROOT = Path(__file__).resolve().parents[2]
LIB = ROOT / "lib"
SUFFIX = ".fingerprint.json"
#: Hex digits kept of each row's digest: enough to name the rows that changed (the table's
#: own digest is kept whole).
ROW_DIGEST = 12
#: Rows or modules named in a message before "and N more".
SHOWN = 5


def sidecar(table: Path) -> Path:
    """Where ``data/<name>.csv`` keeps its fingerprint: ``data/<name>.fingerprint.json``."""
    table = Path(table)
    return table.with_name(table.stem + SUFFIX)


def _sha(value) -> str:
    text = json.dumps(value, sort_keys=True, ensure_ascii=False, separators=(",", ":"))
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


# -- data ----------------------------------------------------------------------------------

def _csv(path: Path) -> list[list[str]]:
    with open(path, newline="", encoding="utf-8") as f:
        return list(csv.reader(f))


def content_digest(path: Path) -> str:
    """A file's digest by what it says, not how it is laid out: a CSV by its cells (quoting
    and line endings aside), a JSON file by its values, anything else by its bytes."""
    path = Path(path)
    if path.suffix == ".csv":
        return _sha(_csv(path))
    if path.suffix == ".json":
        return _sha(json.loads(path.read_text(encoding="utf-8")))
    return hashlib.sha256(path.read_bytes()).hexdigest()


def data_digest(path: Path):
    """An input's digest: :func:`content_digest`, or for a table whose first column names
    each row once (a published table's ``row_id``), its columns and each row's digest by that
    name, so that a row moved within the file is no change and a row changed is named."""
    path = Path(path)
    table = _csv(path) if path.suffix == ".csv" else []
    if len(table) < 2:
        return content_digest(path)
    header, *rows = table
    by_id = {r[0]: _sha(dict(zip(header[1:], r[1:]))) for r in rows if r}
    if len(by_id) < len(rows) or "" in by_id:
        return content_digest(path)
    columns = sorted(header[1:])
    return {"sha256": _sha({"columns": columns, "rows": by_id}), "columns": columns,
            "rows": {k: v[:ROW_DIGEST] for k, v in sorted(by_id.items())}}


class Reads:
    """Every file under ``directory`` opened for reading while the ``with`` block runs
    (Python's audit event ``open``), as names relative to it. Record in a fresh process: a
    table read before the block and cached is not opened again inside it."""

    def __init__(self, directory: Path):
        self.directory = Path(os.path.abspath(directory))
        self.files: set[str] = set()

    def __enter__(self) -> Reads:
        _install()
        _ACTIVE.append(self)
        return self

    def __exit__(self, *exc) -> None:
        _ACTIVE.remove(self)

    def _saw(self, path: str) -> None:
        relative = os.path.relpath(path, self.directory)
        if not relative.startswith(os.pardir):
            self.files.add(Path(relative).as_posix())


_ACTIVE: list[Reads] = []
_INSTALLED: list[bool] = []


def _audit(event: str, args) -> None:
    if event != "open" or not _ACTIVE:
        return
    path, mode, flags = args
    if not isinstance(path, (str, bytes, os.PathLike)):
        return  # a file descriptor
    writing = any(c in mode for c in "wax+") if mode else \
        bool(flags & (os.O_WRONLY | os.O_RDWR))
    if not writing:
        for reads in _ACTIVE:
            reads._saw(os.path.abspath(os.fsdecode(path)))


def _install() -> None:
    """An audit hook cannot be removed, so one is added per process and idles outside
    :class:`Reads`."""
    if not _INSTALLED:
        sys.addaudithook(_audit)
        _INSTALLED.append(True)


# -- code ----------------------------------------------------------------------------------

def _source(path: Path) -> str:
    return Path(path).read_text(encoding="utf-8")


def code_digest(path: Path) -> str:
    """The digest of a Python file's syntax tree with every docstring (every statement that
    is a bare string) left out: comments and docstrings do not change what it computes."""
    tree = ast.parse(_source(path))
    for node in ast.walk(tree):
        body = getattr(node, "body", None)
        if isinstance(body, list):
            kept = [s for s in body if not (isinstance(s, ast.Expr) and
                                            isinstance(s.value, ast.Constant) and
                                            isinstance(s.value.value, str))]
            node.body = kept or [ast.Pass()]
    return hashlib.sha256(ast.unparse(tree).encode("utf-8")).hexdigest()


def module_path(name: str) -> Path | None:
    """The file of the module ``name`` (``napkin.validation.fitting``) in ``lib/``, or None."""
    base = LIB.joinpath(*name.split("."))
    for path in (base / "__init__.py", base.with_suffix(".py")):
        if path.is_file():
            return path
    return None


def _module_name(path: Path) -> str:
    path = Path(path).resolve()
    if not path.is_relative_to(LIB):
        return ""
    return ".".join(path.relative_to(LIB).with_suffix("").parts).removesuffix(".__init__")


def imports(path: Path) -> set[str]:
    """The modules of ``lib/`` that the Python file at ``path`` imports, at module level or
    inside a function (a deferred import ties the two together as much)."""
    name = _module_name(path)
    package = name if Path(path).name == "__init__.py" else name.rpartition(".")[0]
    found = set()
    for node in ast.walk(ast.parse(_source(path))):
        if isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                parts = package.split(".")
                base = ".".join(parts[:len(parts) - node.level + 1] + ([base] if base else []))
            found |= {f"{base}.{a.name}" if module_path(f"{base}.{a.name}") else base
                      for a in node.names}
        elif isinstance(node, ast.Import):
            found |= {a.name for a in node.names}
    return {m for m in found if m != name and module_path(m)}


def code_of(entry: Path) -> list[Path]:
    """``entry`` and every module of ``lib/`` it imports, however indirectly: the code that
    can change what it computes. Importing a module runs its package's ``__init__`` too, but
    that only gathers names; a package counts where its own name is imported."""
    seen: set[Path] = set()
    todo = [Path(entry).resolve()]
    while todo:
        path = todo.pop()
        if path not in seen:
            seen.add(path)
            todo += [module_path(m) for m in imports(path)]
    return sorted(seen)


def _repo_name(path: Path) -> str:
    path = Path(os.path.abspath(path))
    return path.relative_to(ROOT).as_posix() if path.is_relative_to(ROOT) else str(path)


# -- the fingerprint -----------------------------------------------------------------------

def stamp(table: Path, reads: Reads, entry: Path, refit: str) -> Path:
    """Write ``table``'s fingerprint beside it: the files ``reads`` saw (digested from its
    directory; named relative to ``data/``), the code of ``entry`` (:func:`code_of`), the
    table's own digest and ``refit``, the command that makes it again."""
    table = Path(table)
    found = {
        "table": table.name,
        "refit": refit,
        "python": platform.python_version(),
        "sha256": content_digest(table),
        "entry": _repo_name(entry),
        "code": {_repo_name(p): code_digest(p) for p in code_of(entry)},
        "data": {name: data_digest(reads.directory / name) for name in sorted(reads.files)
                 if name != table.name},
    }
    path = sidecar(table)
    path.write_text(json.dumps(found, indent=1, sort_keys=True, ensure_ascii=False) + "\n",
                    encoding="utf-8")
    return path


def _some(names: Iterable[str]) -> str:
    names = sorted(names)
    more = f" and {len(names) - SHOWN} more" if len(names) > SHOWN else ""
    return ", ".join(names[:SHOWN]) + more


def _data_change(name: str, was, now) -> str:
    """What moved in one input: which rows (by id) and columns, or just that it changed."""
    if not (isinstance(was, dict) and isinstance(now, dict)):
        return f"data/{name} changed"
    parts = []
    for label, names in (("columns added", set(now["columns"]) - set(was["columns"])),
                         ("columns removed", set(was["columns"]) - set(now["columns"]))):
        if names:
            parts.append(f"{label}: {_some(names)}")
    if not parts:
        old, new = was["rows"], now["rows"]
        for label, ids in (("changed", {k for k in old.keys() & new if old[k] != new[k]}),
                           ("added", new.keys() - old), ("removed", old.keys() - new)):
            if ids:
                parts.append(f"{len(ids)} row{'s' * (len(ids) != 1)} {label} ({_some(ids)})")
    return f"data/{name}: " + "; ".join(parts)


def _changes(table: Path, found: dict) -> list[str]:
    out = []
    if content_digest(table) != found["sha256"]:
        out.append(f"{table.name} itself was edited after it was made")
    for name, was in found["data"].items():
        path = table.parent / name
        if not path.is_file():
            out.append(f"data/{name} is gone")
        elif (now := data_digest(path)) != was:
            out.append(_data_change(name, was, now))
    entry = ROOT / found["entry"]
    if not entry.is_file():
        return out + [f"{found['entry']}, which made it, is gone"]
    now = {_repo_name(p): p for p in code_of(entry)}
    moved = sorted(n for n in found["code"].keys() & now
                   if code_digest(now[n]) != found["code"][n])
    for label, names in (("code changed", moved),
                         ("no longer part of the code that makes it",
                          found["code"].keys() - now),
                         ("now part of the code that makes it", now.keys() - found["code"])):
        if names:
            out.append(f"{label}: {_some(names)}")
    return out


def check(table: Path) -> str | None:
    """None when ``table`` is what its inputs make (every digest of its fingerprint is the
    same now), else a message naming the table, each input that moved and the command that
    makes it again."""
    table = Path(table)
    where = _repo_name(table)
    if not sidecar(table).is_file():
        return (f"{where} has no fingerprint ({sidecar(table).name}): make it again with the "
                "script that derives it, which writes one")
    found = json.loads(sidecar(table).read_text(encoding="utf-8"))
    changes = _changes(table, found)
    if not changes:
        return None
    note = ""
    if found.get("python", "").rsplit(".", 1)[0] != platform.python_version().rsplit(".", 1)[0]:
        note = (f" (fingerprinted under Python {found.get('python')}; another Python may "
                "write the same code's syntax tree differently)")
    lines = "\n".join(f"  - {c}" for c in changes)
    return (f"{where} was made from inputs that have changed since{note}:\n{lines}\n"
            f"Make it again: {found['refit']}")
