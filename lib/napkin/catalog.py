"""The book's model configs: ``data/models/<name>.json``, indexed by ``data/models.csv``.

Each file is a Hugging Face style ``config.json`` built from the research notes
(with its source in ``_source_url`` and the model's own config.json in
``_config_url``); the index adds what a config does not hold: parameter counts,
total and active, in billions. Weight bytes come from those counts and a
storage format (:mod:`napkin.models`), so a mixture-of-experts model is charged
for all its experts when it must fit in memory, and for the active ones when a
token is decoded.

Each file is read and parsed once per process (:func:`config`), into the
:class:`~napkin.models.Architecture` every other module takes; an edited file is read
again, since the parse is kept against the file's size and modification time.
"""

from __future__ import annotations

import pandas as pd

from . import models, tables

__all__ = ["config", "index", "is_moe", "names", "params", "source", "weight_bytes"]


def index() -> pd.DataFrame:
    """``data/models.csv``: one row per model, with its config file and sources."""
    return tables.load("models")


def names() -> list[str]:
    return index()["model"].tolist()


def _row(name: str) -> pd.Series:
    return tables.row("models", "model", name)


#: One parse per config file, keyed by its path, size and modification time.
_PARSED: dict[tuple, models.Architecture] = {}


def config(name: str) -> models.Architecture:
    """The model's config.json, parsed (read once per process unless the file changes)."""
    path = tables.data_dir() / _row(name)["config_file"]
    try:
        stat = path.stat()
    except FileNotFoundError:
        raise ValueError(f"config file not found: {path} (listed for {name!r} in "
                         "data/models.csv)") from None
    key = (str(path), stat.st_size, stat.st_mtime_ns)
    if key not in _PARSED:
        _PARSED[key] = models.load_config(path)
    return _PARSED[key]


def params(name: str, active: bool = False) -> float:
    """Parameters (total, or active per token for a mixture of experts), as counted from
    the config in the research notes."""
    row = _row(name)
    value = row["params_active_B" if active else "params_total_B"]
    return float(value) * 1e9


def is_moe(name: str) -> bool:
    """Whether a book model is a mixture of experts: a token reads fewer parameters than the
    model holds."""
    return params(name, active=True) < params(name)


def weight_bytes(name: str, fmt: str = "FP8", active: bool = False) -> float:
    """Bytes of the model's weights in ``fmt`` (all of them, or those one token reads)."""
    return models.params_bytes(params(name, active), fmt)


def source(name: str) -> str:
    return str(_row(name)["source_url"])
