"""Chapter experiments run once per process, and every caller gets its own copy.

A chapter's notebook and the errata page ask for the same simulations (chapter 6's paper
reproduction, chapter 7's budget sweep); each takes seconds to minutes, so it runs once per
set of arguments (a chapter's frozen ``Setting`` is hashable) and is remembered with
:func:`functools.lru_cache`. Tables come back as copies, so a caller that changes one does
not change what the next caller sees. Chapters 6 and 7 use it.
"""

from __future__ import annotations

import functools

import pandas as pd


def experiment(fn):
    """Decorate a chapter experiment: run once per arguments, hand out copies."""
    cached = functools.lru_cache(maxsize=None)(fn)

    @functools.wraps(fn)
    def wrapper(*args, **kwargs):
        return _copy(cached(*args, **kwargs))

    wrapper.cache_clear = cached.cache_clear
    return wrapper


def _copy(value):
    """Copies of the tables in a result (inside tuples and dicts too); other values as is."""
    if isinstance(value, pd.DataFrame):
        return value.copy()
    if isinstance(value, tuple):
        return tuple(_copy(v) for v in value)
    if isinstance(value, dict):
        return {k: _copy(v) for k, v in value.items()}
    return value
