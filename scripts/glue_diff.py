"""Maintainer tool: which glued numbers moved between a git revision and the working tree.

Every number the book's prose states is glued (MyST-NB ``glue``) and stored in the executed
``.ipynb``. After a change to ``lib/`` or ``data/`` and ``make sync``, this lists every glued
value whose stored text changed, notebook by notebook, so a change note can say exactly
which numbers moved (old -> new) and nothing moves unnoticed.

    python scripts/glue_diff.py [--base REV] [--all] [notebooks/04_kv_cache.ipynb ...]

``--base`` defaults to ``HEAD``; ``--all`` also lists glued values that appeared or
disappeared. Live measurements (cells tagged ``nbval-ignore-output``) are skipped: they move
with every run.
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
IGNORE = "nbval-ignore-output"


def glued(notebook: dict) -> dict[str, str]:
    """``{name: stored text}`` of every glued value outside live-measurement cells."""
    out = {}
    for cell in notebook.get("cells", []):
        if cell["cell_type"] != "code" or IGNORE in cell["metadata"].get("tags", []):
            continue
        for o in cell.get("outputs", []):
            meta = o.get("metadata", {}).get("scrapbook")
            if not meta:
                continue
            prefix = meta["mime_prefix"]
            data = o.get("data", {})
            text = data.get(prefix + "text/markdown", data.get(prefix + "text/plain", ""))
            out[meta["name"]] = text if isinstance(text, str) else "".join(text)
    return out


def at_revision(rev: str, path: Path) -> dict:
    rel = path.resolve().relative_to(ROOT)
    proc = subprocess.run(["git", "show", f"{rev}:{rel}"], cwd=ROOT, capture_output=True,
                          text=True)
    return json.loads(proc.stdout) if proc.returncode == 0 else {}


def _short(text: str, width: int = 60) -> str:
    text = " ".join(text.split())
    return text if len(text) <= width else text[:width - 1] + "…"


def diff(base: str, paths: list[Path], show_all: bool) -> list[str]:
    lines = []
    for path in paths:
        old, new = glued(at_revision(base, path)), glued(json.loads(path.read_text()))
        moved = [(k, old[k], new[k]) for k in new if k in old and old[k] != new[k]]
        added = sorted(set(new) - set(old)) if show_all else []
        gone = sorted(set(old) - set(new)) if show_all else []
        if not (moved or added or gone):
            continue
        lines.append(f"## {path.relative_to(ROOT)}")
        lines += [f"- {k}: {_short(a)} -> {_short(b)}" for k, a, b in moved]
        lines += [f"- {k}: (new) {_short(new[k])}" for k in added]
        lines += [f"- {k}: {_short(old[k])} -> (gone)" for k in gone]
    return lines


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--base", default="HEAD", help="git revision to compare with (HEAD)")
    p.add_argument("--all", action="store_true", help="list added and removed values too")
    p.add_argument("notebooks", nargs="*", type=Path,
                   help="notebooks to compare (every notebooks/*.ipynb and book/*.ipynb)")
    args = p.parse_args(argv)
    paths = [p.resolve() for p in args.notebooks] or \
        sorted([*ROOT.glob("notebooks/*.ipynb"), *ROOT.glob("book/*.ipynb")])
    missing = [str(x) for x in paths if not x.is_file()]
    if missing:
        print(f"not found: {', '.join(missing)}", file=sys.stderr)
        return 2
    lines = diff(args.base, paths, args.all)
    print("\n".join(lines) if lines else f"no glued value moved since {args.base}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
