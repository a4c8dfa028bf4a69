"""Re-execute a page only when a file it read changed.

jupyter-cache keys a page's execution on its code alone, so an edit in the library or the
data would leave every page's stored execution standing. Instead of discarding them all, each
page's kernel records what it reads (``book/_ext/page_inputs/sitecustomize.py``: library
modules, data tables, folders it lists), this extension stores a hash of each of those files
beside the execution cache, and at the next build it drops the cached execution of exactly
the pages whose inputs changed and has Sphinx read them again. A page with no record (never
executed under this extension) counts as changed.
"""

import hashlib
import json
import os
from pathlib import Path

KERNEL_HOOK = Path(__file__).resolve().parent.parent / "page_inputs"


def _records(app) -> Path:
    return Path(app.srcdir, app.config.nb_execution_cache_path) / "page-inputs"


def _record_name(docname: str) -> str:
    return docname.replace("/", "__")


def _fingerprint(path: Path, kind: str) -> str:
    """A file's bytes, a folder's names; "missing" for a path that is not there (yet)."""
    if kind == "folder":
        if not path.is_dir():
            return "missing"
        names = sorted(entry.name for entry in os.scandir(path))
        return hashlib.sha256("\n".join(names).encode()).hexdigest()
    if not path.is_file():
        return "missing"
    return hashlib.sha256(path.read_bytes()).hexdigest()


def _changed_inputs(root: Path, record: Path) -> list[str]:
    inputs = json.loads(record.read_text(encoding="utf-8"))
    return [
        name for name, (kind, digest) in inputs.items()
        if _fingerprint(root / name, kind) != digest
    ]


def _outdated(app, env, added, changed, removed):
    """Pages whose recorded inputs changed: their cached execution goes, Sphinx re-reads them.

    Every page found is checked, not only those Sphinx already knows: after the doctrees were
    cleared (an edit in ``book/_ext``) all pages count as added, and a page whose inputs moved
    must still not be served its old execution.
    """
    from jupyter_cache import get_cache

    root, records = Path(app.srcdir), _records(app)
    cache = get_cache(root / app.config.nb_execution_cache_path)
    executed = {}  # one page may hold several executions, one for each version of its code
    for cached in cache.list_cache_records():
        executed.setdefault(str(Path(cached.uri).resolve()), []).append(cached.pk)
    stale = []
    for docname in sorted(env.found_docs):
        pks = executed.get(str(Path(env.doc2path(docname)).resolve()), [])
        if not pks:
            continue  # prose, or never executed: myst-nb executes it when Sphinx reads it
        record = records / f"{_record_name(docname)}.json"
        moved = _changed_inputs(root, record) if record.is_file() else ["no record of its inputs"]
        if moved:
            for pk in pks:
                cache.remove_cache(pk)
            print(f"napkin_site: re-executing {docname}: {_listed(moved)} changed")
            stale.append(docname)
    return [docname for docname in stale if docname not in added | changed]


def _listed(names: list[str], shown: int = 3) -> str:
    more = len(names) - shown
    return ", ".join(names[:shown]) + (f" and {more} more" if more > 0 else "")


def _before_read(app, docname, source):
    """Name the record file for the kernel this page may start (it inherits the environment)."""
    records = _records(app)
    records.mkdir(parents=True, exist_ok=True)
    reading = records / f"{_record_name(docname)}.reading"
    reading.unlink(missing_ok=True)
    os.environ["NAPKIN_PAGE_INPUTS"] = str(reading)
    os.environ["NAPKIN_REPO_ROOT"] = str(Path(app.srcdir).resolve())
    path = os.environ.get("PYTHONPATH", "")
    if str(KERNEL_HOOK) not in path.split(os.pathsep):
        os.environ["PYTHONPATH"] = os.pathsep.join(p for p in (str(KERNEL_HOOK), path) if p)


def _after_read(app, doctree):
    """A page just executed: hash what its kernel read, for the next build to compare."""
    records, root = _records(app), Path(app.srcdir)
    reading = records / f"{_record_name(app.env.docname)}.reading"
    if not reading.is_file():
        return  # served from the cache: the record of its last execution stands
    inputs = {}
    for line in reading.read_text(encoding="utf-8").splitlines():
        kind, name = line.split("\t", 1)
        inputs[name] = (kind, _fingerprint(root / name, kind))
    record = records / f"{_record_name(app.env.docname)}.json"
    record.write_text(json.dumps(inputs, indent=0, sort_keys=True), encoding="utf-8")
    reading.unlink()


def setup(app):
    app.connect("env-get-outdated", _outdated)
    app.connect("source-read", _before_read)
    app.connect("doctree-read", _after_read)
    return {"parallel_read_safe": True, "parallel_write_safe": True}
