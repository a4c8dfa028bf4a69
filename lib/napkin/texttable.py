"""Fixed-width text tables: how the command line's reports lay out their columns.

``python -m napkin measure``, ``depth`` and ``verify`` each print a table. Each column is
declared once as a header, a width and a :meth:`str.format` template over a row's fields,
so a report says what its columns show and pads no cell by hand, and all of them line up alike.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping, Sequence
from string import Formatter
from typing import NamedTuple


class Column(NamedTuple):
    """One column: its ``header``; its ``width`` in characters, the gap before it included;
    the ``template`` that makes a cell from the row's fields (``"{tg:>9,.1f} ±{sd:>5.1f}"``);
    ``align`` (``">"`` right, ``"<"`` left); and what a cell shows when a field it names
    (``pp`` of ``{pp[stddev]}``) is missing: absent from the row, or None."""

    header: str
    width: int
    template: str
    align: str = ">"
    missing: str = "-"

    def cell(self, row: Mapping) -> str:
        names = [re.match(r"[^.[]*", name).group() for _, name, _, _ in
                 Formatter().parse(self.template) if name]
        text = (self.missing if any(row.get(n) is None for n in names)
                else self.template.format_map(row))
        return f"{text:{self.align}{self.width}}"


def render(columns: Sequence[Column], rows: Iterable[Mapping]) -> str:
    """The header, a rule as long as it, and a line per row, with no trailing blanks."""
    head = "".join(f"{c.header:{c.align}{c.width}}" for c in columns).rstrip()
    lines = [head, "-" * len(head)]
    lines += ["".join(c.cell(row) for c in columns).rstrip() for row in rows]
    return "\n".join(lines)
