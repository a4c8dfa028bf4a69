"""How often a chapter's execution reads a model config file and interprets a config.

Issue 28 asked for a model parsed once, at the edge: this script executes one or more
chapters' code (their jupytext ``.py`` files, as a kernel would) and counts the reads of
``data/models/*.json`` and the times a config is turned into its per-layer cache layout.
Run it from the repository root:

    .venv/bin/python benchmarks/config_reads.py notebooks/04_kv_cache.py
"""

from __future__ import annotations

import collections
import os
import runpy
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def count(chapter: Path) -> dict:
    import builtins
    import napkin.models as models
    models_dir = (ROOT / "data" / "models").resolve()
    reads = collections.Counter()
    real_open, real_read_text = builtins.open, Path.read_text

    def note(path) -> None:
        try:
            p = Path(path).resolve()
        except TypeError:
            return
        if p.parent == models_dir and p.suffix == ".json":
            reads[p.name] += 1

    def counting_open(file, *args, **kwargs):
        note(file)
        return real_open(file, *args, **kwargs)

    def counting_read_text(self, *args, **kwargs):
        note(self)
        return real_read_text(self, *args, **kwargs)

    layouts = collections.Counter()
    real_kinds = models._kinds  # the step that turns a config into its per-layer layout

    def counting_kinds(config, n_layers):
        layouts["layers"] += 1
        return real_kinds(config, n_layers)

    builtins.open, Path.read_text = counting_open, counting_read_text
    models._kinds = counting_kinds
    cwd = os.getcwd()
    os.chdir(chapter.parent)
    start = time.perf_counter()
    try:
        runpy.run_path(str(chapter), run_name="__main__")
    finally:
        os.chdir(cwd)
        builtins.open, Path.read_text = real_open, real_read_text
        models._kinds = real_kinds
    return {"chapter": chapter.stem, "config_reads": sum(reads.values()),
            "files_read": len(reads), "most_read": max(reads.values(), default=0),
            "layer_layouts": layouts["layers"], "seconds": round(time.perf_counter() - start, 1)}


if __name__ == "__main__":
    sys.path.insert(0, str(ROOT / "lib"))
    for arg in sys.argv[1:] or ["notebooks/04_kv_cache.py"]:
        print(count(Path(arg).resolve()), flush=True)
