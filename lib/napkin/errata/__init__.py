"""Errata: every place where the essay's numbers and the primary data part ways.

Each check recomputes one of the essay's claims from ``data/`` and says what the essay
states, what the data says, and whether the essay's conclusion survives. Nothing is typed
in: the check's fixed text (topic, the essay's claim in words, the claims it covers, its
source) is a row of ``data/errata_checks.csv``, the essay's numbers come from
``data/essay_claims.csv`` via :func:`napkin.essay.claim`, and the data's side is computed
by a function in the ``errata`` module of the chapter's topic package, beside its engine and
figures (``napkin.ceiling.errata`` for chapter 1 ... ``napkin.costs.errata`` for chapter 11).
:mod:`.registry` joins the two; the errata page lists every check, and a chapter asserts
what its prose says about the essay with :func:`erratum`.
"""

from .finding import VERDICTS, Erratum, Finding
from .registry import CHECKS, Check, all_errata, by_claim, check, claims_checked, erratum

__all__ = ["VERDICTS", "Erratum", "Finding", "CHECKS", "Check", "all_errata", "by_claim", "check",
           "claims_checked", "erratum"]
