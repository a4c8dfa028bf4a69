"""Numbers for the prose: every figure a chapter's text states is glued, never typed.

A thin layer over MyST-NB's ``glue``: values are converted to plain Python
numbers first (a numpy float would be stored as ``np.float64(...)`` and fail to
format on the page), and nothing is displayed in the notebook.
"""

from __future__ import annotations

from numbers import Integral, Real
from typing import Mapping

__all__ = ["count", "glue", "glue_all", "glue_markdown", "plain"]


def plain(value):
    """A numpy scalar as the Python int/float it stands for; anything else unchanged."""
    if isinstance(value, bool) or not isinstance(value, Real):
        return value
    return int(value) if isinstance(value, Integral) else float(value)


def glue(name: str, value) -> None:
    """Make ``value`` available to the page as ``{glue:text}`name:format```."""
    from myst_nb import glue as myst_glue

    myst_glue(name, plain(value), display=False)


def glue_all(values: Mapping[str, object]) -> None:
    """Glue a section's values in one call, ``{name: value}``, in the mapping's order: the
    cell that computes them reads as the list of what the paragraph will say."""
    for name, value in values.items():
        glue(name, value)


def glue_markdown(name: str, text: str) -> None:
    """Make a computed sentence available as ``{glue:md}`name```."""
    from IPython.display import Markdown
    from myst_nb import glue as myst_glue

    myst_glue(name, Markdown(text), display=False)


def count(n, noun: str, plural: str | None = None) -> str:
    """``1 user``, ``2 users``, ``1 GPU``, ``8 GPUs``: a whole number with its noun in the
    right number (never ``user(s)``). ``plural`` for a noun that does not take an ``s``."""
    if isinstance(n, bool) or int(n) != n:
        raise ValueError(f"count needs a whole number, got {n!r}")
    n = int(n)
    return f"{n:,} {noun if n == 1 else (plural or noun + 's')}"
