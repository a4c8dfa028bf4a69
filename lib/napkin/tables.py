"""The book's sourced tables in ``data/``, loaded read-only.

Every row of every table carries a ``source_url``; a table that lacks the
column, or a row that leaves it empty, is refused here, so an unsourced
number cannot reach a chart. Nothing in napkin writes into ``data/``.
"""

from __future__ import annotations

import functools
import inspect
import os
from functools import lru_cache
from pathlib import Path

import pandas as pd

__all__ = ["available", "BYTE_FORMATS", "cached", "data_dir", "DISPLAY_FORMATS", "load", "path_of", "row",
           "ROW_ID", "Shown", "SORT_SCRIPT", "sortable", "Sortable", "sources", "styled",
           "version", "versions"]

#: The column that names a published row for good (:mod:`napkin.rowids`), by which derived
#: tables join it: never its position in the file.
ROW_ID = "row_id"


#: ``data/`` of this checkout (resolved once: the book asks for it tens of thousands of times).
_CHECKOUT_DATA = Path(__file__).resolve().parents[2] / "data"


def data_dir() -> Path:
    """``data/`` of this checkout, or ``$NAPKIN_DATA`` when set."""
    override = os.environ.get("NAPKIN_DATA")
    return Path(override) if override else _CHECKOUT_DATA


def available() -> list[str]:
    return sorted(p.stem for p in data_dir().glob("*.csv"))


@lru_cache(maxsize=256)
def _read(path: Path, size: int, mtime_ns: int) -> pd.DataFrame:
    return pd.read_csv(path, dtype={"source_url": str, "note": str}, keep_default_na=True)


def path_of(name: str) -> Path:
    """``data/<name>.csv``, or a ValueError naming the tables there are."""
    path = data_dir() / f"{name.removesuffix('.csv')}.csv"
    if not path.is_file():
        known = ", ".join(available()) or "none"
        raise ValueError(f"no table {name!r} in {data_dir()} (available: {known})")
    return path


def version(name: str) -> tuple:
    """What identifies a table's contents for a cache: its path, size and modification time;
    for a folder of ``data/`` named with a trailing ``/`` (``"models/"``), those of each of its
    files."""
    if name.endswith("/"):
        folder = data_dir() / name
        with os.scandir(folder) as found:
            return (folder, *sorted((e.name, *_stamp(e)) for e in found if e.is_file()))
    path = data_dir() / f"{name.removesuffix('.csv')}.csv"
    try:
        return (path, *_stamp(path))
    except FileNotFoundError:
        path_of(name)  # the error that names the tables there are
        raise


def _stamp(path) -> tuple[int, int]:
    st = path.stat()
    return st.st_size, st.st_mtime_ns


def versions(names) -> tuple:
    """:func:`version` of each of ``names`` (of every file of ``data/`` when there are none):
    the key under which :func:`cached` remembers."""
    return tuple(version(n) for n in names) if names else _everything(data_dir())


def _everything(folder: Path) -> tuple:
    found = []
    with os.scandir(folder) as entries:
        for e in entries:
            found.extend(_everything(Path(e.path)) if e.is_dir() else [(e.path, *_stamp(e))])
    return tuple(sorted(found))


def cached(*names: str):
    """Remember what a function makes from ``data/``, per arguments and per version of the
    tables ``names`` it reads (a folder as ``"models/"``; none: every file of ``data/``, for
    a result drawn from many tables and asked for seldom). A table edited, a row dropped in,
    or another ``data/`` (``$NAPKIN_DATA``) is read afresh, with no cache to clear by hand.
    Each caller gets its own copy of the tables, lists and dicts in a result, so none can
    change what the next one sees. A call is known by its arguments with the defaults filled
    in (``f()`` and ``f(default)`` are one call); the two versions used last are kept."""

    def wrap(fn):
        store: dict = {}
        signature = inspect.signature(fn)
        plain = all(p.default is p.empty and p.kind is p.POSITIONAL_OR_KEYWORD
                    for p in signature.parameters.values())

        @functools.wraps(fn)
        def wrapper(*args, **kwargs):
            key = versions(names)
            remembered = store.pop(key, None)
            if remembered is None:
                if len(store) >= 2:
                    store.pop(next(iter(store)))
                remembered = {}
            store[key] = remembered  # the newest used last
            if plain and not kwargs:
                call = (args, ())
            else:
                bound = signature.bind(*args, **kwargs)
                bound.apply_defaults()
                call = (bound.args, tuple(sorted(bound.kwargs.items())))
            if call not in remembered:
                remembered[call] = fn(*args, **kwargs)
            return _handed_out(remembered[call])

        wrapper.tables = names
        return wrapper

    return wrap


def _handed_out(value):
    """A caller's own copy of each table, series, list and dict in a result (inside tuples
    too); other values (numbers, strings, frozen records) as they are."""
    if isinstance(value, (pd.DataFrame, pd.Series)):
        return value.copy()
    if type(value) is tuple:  # a named tuple is a record, handed out as it is
        return tuple(_handed_out(v) for v in value)
    if isinstance(value, list):
        return [_handed_out(v) for v in value]
    if isinstance(value, dict):
        return {k: _handed_out(v) for k, v in value.items()}
    return value


def load(name: str) -> pd.DataFrame:
    """Load ``data/<name>.csv`` as a DataFrame (a copy: callers may modify it)."""
    path = path_of(name)
    df = _read(path, *_stamp(path))
    if "source_url" not in df.columns:
        raise ValueError(f"table {path.name} has no source_url column; every row needs a source")
    missing = df["source_url"].isna() | (df["source_url"].astype(str).str.strip() == "")
    if missing.any():
        rows = ", ".join(str(i + 2) for i in df.index[missing][:5])
        raise ValueError(f"table {path.name} has rows without a source_url (lines {rows})")
    return df.copy()


def row(name: str, column: str, key) -> pd.Series:
    """The first row of ``data/<name>.csv`` whose ``column`` is ``key``; a missing key is
    a ValueError that names the table and the keys it does have."""
    found = _first_rows(name, column, version(name)).get(key)
    if found is None:
        known = ", ".join(map(str, _first_rows(name, column, version(name))))
        raise ValueError(f"no {column} {key!r} in data/{name}.csv; known: {known}")
    return found.copy()


@lru_cache(maxsize=64)
def _first_rows(name: str, column: str, stamp: tuple) -> dict:
    """Each key's first row of a table's ``column``, once per version of the table (models
    and claims are looked up by name thousands of times a chapter)."""
    df = load(name)
    first = df.drop_duplicates(column)
    return {key: first.loc[i] for key, i in zip(first[column], first.index)}


def sources(df: pd.DataFrame) -> list[str]:
    """The distinct sources behind a (filtered) table, for a chart's source line."""
    return sorted(df["source_url"].dropna().unique())


#: How a column is shown, by the unit in its name: rates keep two decimals.
DISPLAY_FORMATS = {
    "tokens_per_s": lambda v: f"{v:,.2f}",
    "_tok_per_s": lambda v: f"{v:,.2f}",
    "fraction_of_ceiling": lambda v: f"{v:.0%}",
}
#: Byte columns, by the unit in their name: shown in the unit their title names, else in
#: whole bytes (a title that does not say GB must not get gigabytes: 2,048 bytes are not 0.00).
BYTE_FORMATS = {
    "bytes_per_s": ("(GB/s)", lambda v: f"{v / 1e9:,.0f}"),
    "bytes_per_token": ("(GB)", lambda v: f"{v / 1e9:,.2f}"),
}


class Shown:
    """A formatted table that renders identically every run (HTML and plain text).

    pandas gives each rendered table a random id and a Styler's plain-text repr
    is its memory address; either would make strict nbval comparison fail.
    """

    def __init__(self, frame: pd.DataFrame, styler):
        self.frame, self.styler = frame, styler

    def _repr_mimebundle_(self, include=None, exclude=None):
        return {"text/html": self.styler.to_html(), "text/plain": self.frame.to_string(index=False)}


def styled(df: pd.DataFrame, table_id: str, columns: dict[str, str],
           formats: dict | None = None) -> Shown:
    """A table for the page: chosen columns renamed, units formatted, a stable id.

    ``formats`` overrides how a column is shown, keyed by its name in ``df``: a format
    string (``"{:.1%}"``) or a function of the value.
    """
    formats = formats or {}
    unshown = [c for c in formats if c not in columns]
    if unshown:
        raise ValueError(f"formats for columns not shown: {', '.join(unshown)}")
    missing = [c for c in columns if c not in df.columns]
    if missing:
        raise ValueError(f"columns not in the table: {', '.join(missing)}")
    shown_formats = {}
    for col, title in columns.items():
        shown_formats[title] = _by_name(col, title, df[col])
    shown_formats = {t: f for t, f in shown_formats.items() if f is not None}
    shown_formats |= {columns[col]: fmt for col, fmt in formats.items()}
    shown = df[list(columns)].rename(columns=columns)
    return Shown(shown, shown.style.format(shown_formats).hide(axis="index").set_uuid(table_id))


def _by_name(col: str, title: str, values: pd.Series):
    """The format a column gets from its name and title when none is given (None: pandas')."""
    for suffix, (unit, fmt) in BYTE_FORMATS.items():
        if col.endswith(suffix):
            return fmt if unit in title else (lambda v: "" if pd.isna(v) else f"{v:,.0f}")
    for suffix, fmt in DISPLAY_FORMATS.items():
        if col.endswith(suffix):
            return fmt
    if pd.api.types.is_float_dtype(values):  # four significant digits, never six decimals
        return lambda v: "" if pd.isna(v) else f"{v:,.4g}"
    return None


SORT_SCRIPT = """(function (t) {
  var heads = t.tHead.rows[0].cells;
  Array.prototype.forEach.call(heads, function (th, col) {
    th.addEventListener("click", function () {
      var up = th.getAttribute("aria-sort") !== "ascending";
      Array.prototype.forEach.call(heads, function (h) { h.removeAttribute("aria-sort"); });
      th.setAttribute("aria-sort", up ? "ascending" : "descending");
      var rows = Array.prototype.slice.call(t.tBodies[0].rows);
      rows.sort(function (a, b) {
        var x = a.cells[col].dataset.sort, y = b.cells[col].dataset.sort;
        var nx = parseFloat(x), ny = parseFloat(y);
        var c = (isNaN(nx) || isNaN(ny)) ? x.localeCompare(y) : nx - ny;
        return up ? c : -c;
      });
      rows.forEach(function (r) { t.tBodies[0].appendChild(r); });
    });
  });
})(document.getElementById("%s"));"""


class Sortable(Shown):
    """A table whose columns sort on a click or tap (numbers by value), offline: its own
    few lines of script, no library. It scrolls inside its box on a narrow phone."""

    def __init__(self, frame: pd.DataFrame, raw: pd.DataFrame, table_id: str):
        self.frame, self.raw, self.table_id = frame, raw, table_id

    def html(self) -> str:
        import html as h

        head = "".join(f'<th scope="col" tabindex="0" title="sort">{h.escape(str(c))}</th>'
                       for c in self.frame.columns)
        body = "".join(
            "<tr>" + "".join(f'<td data-sort="{h.escape(_sort_key(v))}">{h.escape(str(s))}</td>'
                             for s, v in zip(shown, raw)) + "</tr>"
            for shown, raw in zip(self.frame.itertuples(index=False),
                                  self.raw.itertuples(index=False)))
        return (f'<div class="napkin-sortable" style="overflow-x:auto;max-width:100%">'
                f'<table id="{self.table_id}" class="dataframe"><thead><tr>{head}</tr></thead>'
                f'<tbody>{body}</tbody></table></div>\n'
                f'<script type="text/javascript">{SORT_SCRIPT % self.table_id}</script>')

    def _repr_mimebundle_(self, include=None, exclude=None):
        return {"text/html": self.html(), "text/plain": self.frame.to_string(index=False)}


def _sort_key(value) -> str:
    if isinstance(value, bool) or value is None or (isinstance(value, float) and pd.isna(value)):
        return ""
    return repr(float(value)) if isinstance(value, (int, float)) else str(value)


def sortable(df: pd.DataFrame, table_id: str, columns: dict[str, str],
             formats: dict | None = None) -> Sortable:
    """:func:`styled`'s table (same columns, titles and formats) that sorts by any column."""
    shown = styled(df, table_id, columns, formats)
    cells = shown.frame.copy()
    for col, title in columns.items():
        fmt = (formats or {}).get(col) or _by_name(col, title, df[col])
        if isinstance(fmt, str):
            fmt = fmt.format
        if fmt is not None:
            cells[title] = [fmt(v) if not (isinstance(v, float) and pd.isna(v)) else ""
                            for v in df[col]]
    return Sortable(cells, df[list(columns)], table_id)
