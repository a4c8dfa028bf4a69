"""What one errata check finds, and the record the errata page shows.

A check computes a :class:`Finding` (what the data says, the verdict, whether the
essay's conclusion survives); :mod:`napkin.errata.registry` joins it with the check's
fixed text in ``data/errata_checks.csv`` into an :class:`Erratum`.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Mapping

#: How far apart the two sides are, from harmless to wrong.
VERDICTS = ("agrees", "rounding", "unit slip", "wrong variant", "not in the source",
            "not in any copy read", "inconsistent", "sources disagree")


def require_verdict(verdict: str) -> None:
    if verdict not in VERDICTS:
        raise ValueError(f"verdict must be one of {', '.join(VERDICTS)}; got {verdict!r}")


@dataclass(frozen=True)
class Finding:
    """What a check computes from the data and the essay's numbers.

    ``essay_values`` fills the placeholders of the check's text in
    ``data/errata_checks.csv`` that are not essay claims by name: the essay's numbers in
    the unit its words use (3.35 TB/s for the 3,350 GB/s claim), or words it quotes.
    """

    data_says: str
    verdict: str
    conclusion_holds: bool
    explanation: str
    essay_values: Mapping[str, object] = field(default_factory=dict)

    def __post_init__(self):
        require_verdict(self.verdict)


@dataclass(frozen=True)
class Erratum:
    """One row of the errata page: the essay's side, the data's side, and the verdict."""

    check: str
    topic: str
    chapter: str
    essay_says: str
    data_says: str
    verdict: str
    conclusion_holds: bool
    explanation: str
    source: str
    claims: tuple[str, ...] = ()  # the rows of data/essay_claims.csv this check covers

    def __post_init__(self):
        require_verdict(self.verdict)
