"""Record which of the book's files a page's kernel reads, so that only its readers re-run.

The site's extension (``napkin_site.inputs``) puts this folder first on the kernel's
``PYTHONPATH`` and names a record file in ``NAPKIN_PAGE_INPUTS``; Python imports this module
as the kernel starts, before the page's first cell. An audit hook then appends one line per
file the page opens for reading, or folder it lists, inside the repository (library modules
through their bytecode, data tables, readers' results), outside ``.venv``, ``_build`` and
``.git``. The extension hashes those paths after the run; a later build re-executes the page
only when one of them changed. Python imports one ``sitecustomize``: the interpreter's own,
if it has one, is imported after this.
"""

import os
import sys

_RECORD = os.environ.get("NAPKIN_PAGE_INPUTS")
_ROOT = os.environ.get("NAPKIN_REPO_ROOT", "")
_SKIP = tuple(os.path.join(_ROOT, part) + os.sep for part in (".venv", "_build", ".git"))
_READ_MODES = frozenset({"r", "rb", "rt", "br", "tr"})
_WRITE_FLAGS = os.O_WRONLY | os.O_RDWR


def _source_of(path):
    """A module's bytecode stands for its source file: that is what an edit changes."""
    folder, name = os.path.split(path)
    if os.path.basename(folder) == "__pycache__" and name.endswith(".pyc"):
        return os.path.join(os.path.dirname(folder), name.split(".", 1)[0] + ".py")
    return path


def _importing():
    """The import system lists every folder on the path it searches: not a page's input."""
    caller = sys._getframe(2)  # the hook, then the frame that called os.listdir
    return caller.f_code.co_filename.startswith("<frozen importlib")


def _install(record, root):
    seen = set()
    busy = []

    def note(kind, path):
        path = _source_of(os.path.abspath(os.fsdecode(path)))
        if not path.startswith(root + os.sep) or path.startswith(_SKIP) or path == record:
            return
        if (kind, path) in seen:
            return
        seen.add((kind, path))
        busy.append(True)
        try:
            with open(record, "a", encoding="utf-8") as out:
                out.write(f"{kind}\t{os.path.relpath(path, root)}\n")
        finally:
            busy.pop()

    def hook(event, args):
        if busy:
            return
        if event == "open":
            path, mode, flags = args
            reading = mode in _READ_MODES if mode is not None else not flags & _WRITE_FLAGS
            if reading and isinstance(path, (str, bytes, os.PathLike)):
                note("file", path)
        elif event in ("os.listdir", "os.scandir") and args and args[0] is not None:
            if isinstance(args[0], (str, bytes, os.PathLike)) and not _importing():
                note("folder", args[0])

    open(record, "a", encoding="utf-8").close()  # the kernel ran, even if it reads nothing
    sys.addaudithook(hook)


def _chain():
    """Import the interpreter's own sitecustomize, which this module shadows."""
    here = os.path.dirname(os.path.abspath(__file__))
    sys.path[:] = [p for p in sys.path if os.path.abspath(p or ".") != here]
    this = sys.modules.pop(__name__)
    try:
        import sitecustomize  # noqa: F401
    except ImportError:
        sys.modules[__name__] = this  # there is none: the import that loaded this one ends well


if _RECORD and _ROOT:
    _install(_RECORD, os.path.abspath(_ROOT))
_chain()
