"""Stable ids of the published rows that derived tables refer to.

A derived table (a fit's cross-validated predictions, a peer calculator's) names the
measurement each of its rows predicts. A position in the file would name another row as soon
as a row is inserted above it, and the join would go wrong without a word. So every row of
these tables carries a :data:`~napkin.tables.ROW_ID`, ``<prefix>-<number>``, given once when
the row enters the table and kept through any edit of its values. Numbers are issued in
order and never reused: a row removed retires its id in ``data/retired_row_ids.csv``, and a
new row takes the next number after the highest ever issued (:func:`issue`).
:func:`problems` checks a table against these rules.

An id derived from a row's fields would not do: 24 MLPerf rows and 92 serving rows differ
from another row only in their measured value or its notes, and correcting a field would
change the id.
"""

from __future__ import annotations

import re

from . import tables

__all__ = ["issue", "number", "PREFIXES", "problems", "RETIRED", "retired"]

#: The tables whose rows derived tables refer to, and the prefix of their ids.
PREFIXES = {"mlperf_llm": "mlperf", "serving_measurements": "serving"}
#: Ids of rows removed from those tables, which are never issued again.
RETIRED = "retired_row_ids"


def number(table: str, row_id: str) -> int | None:
    """The number of ``row_id`` (``mlperf-0042`` -> 42), or None when it is not an id of
    ``table``."""
    m = re.fullmatch(rf"{re.escape(PREFIXES[table])}-(\d{{4,}})", str(row_id))
    return int(m.group(1)) if m else None


def retired(table: str) -> set[str]:
    """The ids of ``table`` retired with their rows."""
    df = tables.load(RETIRED)
    return set(df.loc[df["table"] == table, tables.ROW_ID])


def problems(table: str) -> list[str]:
    """What breaks the rules in ``table``'s ids: a row without one, one not in the table's
    form, one given twice, a retired id back in use, or a number skipped that was not
    retired (a row removed without retiring its id, whose number could be issued again)."""
    df = tables.load(table)
    if df.columns[0] != tables.ROW_ID:
        return [f"data/{table}.csv does not begin with a {tables.ROW_ID} column (a derived "
                "table's fingerprint names each row by its first column)"]
    ids, out = df[tables.ROW_ID], []
    blank = ids.isna() | (ids.astype(str).str.strip() == "")
    if blank.any():
        out.append(f"data/{table}.csv: rows without a {tables.ROW_ID} (lines "
                   f"{', '.join(str(i + 2) for i in ids.index[blank][:5])})")
    ids = ids[~blank].astype(str)
    malformed = [i for i in ids if number(table, i) is None]
    if malformed:
        out.append(f"data/{table}.csv: ids not of the form {PREFIXES[table]}-NNNN: "
                   f"{', '.join(malformed[:5])}")
    twice = sorted(set(ids[ids.duplicated()]))
    if twice:
        out.append(f"data/{table}.csv: ids given to more than one row: {', '.join(twice[:5])}")
    gone = retired(table)
    back = sorted(gone & set(ids))
    if back:
        out.append(f"data/{table}.csv: retired ids in use again: {', '.join(back[:5])}")
    issued = {number(table, i) for i in set(ids) | gone} - {None}
    skipped = sorted(set(range(1, max(issued, default=0) + 1)) - issued)
    if skipped:
        out.append(f"data/{table}.csv: ids missing and not retired: "
                   f"{', '.join(f'{PREFIXES[table]}-{n:04d}' for n in skipped[:5])} (a row "
                   f"removed retires its id in data/{RETIRED}.csv, so that it is never "
                   "issued again)")
    return out


def issue(table: str, rows: list[dict], existing: list[dict]) -> list[dict]:
    """``rows`` (``table`` rebuilt, without ids) with an id first in each: a row whose cells
    are those of a row of ``existing`` (the table as it stands) keeps that row's id, any other
    row is new and takes the next number after the highest ever issued, retired ones
    included. A row whose values were corrected in the rebuild comes back as new: give it its
    old id by hand, or retire the old one."""
    def cells(row: dict) -> tuple:
        return tuple(sorted((k, v) for k, v in row.items() if k != tables.ROW_ID))

    kept = {cells(r): r[tables.ROW_ID] for r in existing}
    top = max((number(table, i) or 0 for i in {r[tables.ROW_ID] for r in existing} |
               retired(table)), default=0)
    out = []
    for row in rows:
        row_id = kept.pop(cells(row), None)
        if row_id is None:
            top += 1
            row_id = f"{PREFIXES[table]}-{top:04d}"
        out.append({tables.ROW_ID: row_id, **row})
    return out
