"""Every fit chapter 9 reports, computed once and stored as derived tables in ``data/``.

Fitting is slow (seconds per structure, minutes for the cross-validation), and a chapter
that refits on every build, or a library that fits when first asked for a prediction, makes
every page wait and hides what was fitted on what. So the fits are made here, by
``scripts/fit_step_model.py``, and stored with their source:

- ``step_model_parameters.csv`` and ``step_model_stacks.csv``: the calibration and serving
  stacks of each structure (:data:`napkin.validation.fitting.STRUCTURES`) fitted on the fixed
  split's training rows (``fit`` = ``"fixed split"``), and of the calibrated model and the
  one-number discount fitted on every usable row (``"published"``: what
  :func:`napkin.predict.calibrated` returns);
- ``step_model_crossval.csv``: every row's prediction by a fit that never saw it, in each
  cross-validation fold it is scored in (:func:`folds`), with whether its chip and model were
  in that fold's training rows (``case``: ``"seen"`` or ``"new"``), the row named by its
  ``row_id`` (:mod:`napkin.rowids`).

The script writes each table with its fingerprint (:mod:`napkin.derived`): the data it read
and this module's code with everything it imports, which ``tests/test_derived.py`` checks in
seconds; ``tests/test_validation.py`` refits the published calibration from the raw rows and
compares it with the stored one.
"""

from __future__ import annotations

import time
from dataclasses import asdict, dataclass, replace
from pathlib import Path
from typing import Callable

import numpy as np
import pandas as pd

from .. import tables
from ..predict.calibration import PARAMETERS_TABLE, PUBLISHED, STACKS_TABLE
from .fitting import CALIBRATED, ONE_NUMBER, STRUCTURES, Fit, Structure, fit, usable
from .rows import all_cases, mlperf
from .scoring import READS, predict_cases

#: Where the derived rows come from: the script that fits them, in the book's repository.
SHORT_SOURCE = "https://github.com/napkin-book/prefill-decode/blob/main/scripts/fit_step_model.py"
SOURCE = f"{SHORT_SOURCE} (napkin.validation.derive), from data/mlperf_llm.csv and " \
         "data/serving_measurements.csv"
CROSSVAL_TABLE = "step_model_crossval"
#: The tables :func:`build` makes.
TABLES = (PARAMETERS_TABLE, STACKS_TABLE, CROSSVAL_TABLE)
FIXED = "fixed split"
#: The structures cross-validated (the others are scored on the fixed split only).
CROSSVALIDATED = (CALIBRATED, ONE_NUMBER)
#: Chip families: a fold leaves out every chip of one (a GH200 is an H100 with a CPU).
CHIP_FAMILIES = {"A100": ("A100 SXM", "A100 PCIe"), "H100": ("H100 SXM", "H100 PCIe",
                                                             "H100 NVL", "GH200"),
                 "H200": ("H200", "H200 NVL"),
                 "Blackwell": ("B200", "GB200 (per GPU)", "GB300 (per GPU)"),
                 "L40S": ("L40S",), "MI250": ("MI250",),
                 "MI300": ("MI300X", "MI325X", "MI355X"), "Gaudi": ("Gaudi 2",)}
#: MLPerf rounds, oldest first: a round is scored by a fit on every round before it.
ROUNDS = ("v4.0", "v4.1", "v5.0", "v5.1")
#: A model (or chip family) with fewer rows than this is not a fold of its own.
MIN_FOLD_ROWS = 8
#: What makes one run of a published table: rows that share these are one measurement
#: published in several forms (a total, a rate per GPU, a rate per user, a latency).
RUN = ("chip", "engine", "input_tokens", "output_tokens", "batch", "dp", "draft_tokens")
#: Rows that state the tokens a second each sequence saw.
PER_USER_KINDS = ("closed_user_rate", "closed_user_rate_ctx")

Progress = Callable[[str], None]


def _quiet(message: str) -> None:
    pass


# -- the rows --------------------------------------------------------------------------------

@tables.cached(*READS)
def rows() -> pd.DataFrame:
    """Every usable published row (:func:`napkin.validation.fitting.usable`) with its MLPerf
    round (blank for other sources), chip family and whether the fixed split trains on it."""
    cases = usable(all_cases())
    m = mlperf().set_index(tables.ROW_ID)
    rounds = pd.Series("", index=cases.index, dtype=object)
    is_mlperf = cases["table"] == "mlperf_llm"
    rounds[is_mlperf] = m.loc[cases.loc[is_mlperf, tables.ROW_ID], "round"].to_numpy()
    family = {chip: f for f, chips in CHIP_FAMILIES.items() for chip in chips}
    return cases.assign(round=rounds, family=cases["chip"].map(family).fillna(cases["chip"]))


def tpot_tail(cases: pd.DataFrame) -> float:
    """99th-percentile over mean time per output token in the MLPerf Server and Interactive
    logs among ``cases`` (median over runs): how much the slowest requests' tokens lag. It
    is measured, not fitted, and every structure but the plain roofline uses it. NaN where
    ``cases`` hold no such log (a fold that leaves MLPerf out)."""
    m = mlperf().set_index(tables.ROW_ID)
    runs = m.loc[cases.loc[cases["table"] == "mlperf_llm", tables.ROW_ID]]
    runs = runs[runs["tpot_mean_ms"].notna() & runs["tpot_p99_ms"].notna()]
    return float((runs["tpot_p99_ms"] / runs["tpot_mean_ms"]).median()) if len(runs) \
        else float("nan")


def fit_on(cases: pd.DataFrame, structure: Structure) -> Fit:
    """``structure`` fitted on ``cases``, with the TPOT tail measured on the same rows (no
    tail, 1, where they hold no MLPerf log to measure it on)."""
    if structure.name != "plain roofline":
        tail = tpot_tail(cases)
        structure = replace(structure, base=replace(
            structure.base, tpot_tail=1.0 if np.isnan(tail) else max(tail, 1.0)))
    return fit(cases, structure)


# -- folds -----------------------------------------------------------------------------------

@dataclass(frozen=True)
class Fold:
    """One fit of a cross-validation: ``kind`` and ``name``, the rows it is fitted on and the
    rows it scores (boolean masks over :func:`rows`)."""

    kind: str
    name: str
    train: np.ndarray
    test: np.ndarray


def folds(cases: pd.DataFrame) -> list[Fold]:
    """The cross-validation, each fold fitted from scratch on every usable row it does not
    score:

    - ``round``: MLPerf rolling origin, each round from v5.0 on scored by a fit on the
      rounds before it (and every non-MLPerf row), as a calibration made before a round
      meets it;
    - ``chip family``: one family of chips (:data:`CHIP_FAMILIES`) left out: a new chip;
    - ``model``: one model left out: a new model;
    - ``length``: Argonne's rows of one prompt length left out: a chip and model the fit
      has seen, at a length it has not;
    - ``campaign``: one measurement campaign (a ``source``: Argonne, MLPerf, a vendor's or
      an engine's own tables) left out whole: who measured, how, and on which stacks;
    - ``stack``: one serving stack left out whole: a buyer's own stack, which no fold of
      the kinds above hides;
    - ``pace``: what ran under interactive limits left out in one fold (:func:`at_pace`):
      MLPerf's Interactive rows and every run that publishes its pace, whatever the model
      (runs that publish only a latency or a static batch's time stay in).

    Each kind with a column scores every row of a group of at least :data:`MIN_FOLD_ROWS`
    rows exactly once, so a band read from one kind counts each row once."""
    out = []
    is_mlperf = (cases["table"] == "mlperf_llm").to_numpy()
    order = {r: i for i, r in enumerate(ROUNDS)}
    rank = cases["round"].map(order).to_numpy(dtype=float)
    for r in ROUNDS[2:]:
        test = is_mlperf & (rank == order[r])
        train = ~is_mlperf | (rank < order[r])
        out.append(Fold("round", r, train, test))
    out += _column_folds(cases, (("chip family", "family"), ("model", "model")))
    argonne = (cases["source"] == "Argonne").to_numpy()
    for length in sorted(cases.loc[argonne, "input_tokens"].unique()):
        test = argonne & (cases["input_tokens"] == length).to_numpy()
        out.append(Fold("length", f"{int(length)} prompt tokens", ~test, test))
    out += _column_folds(cases, (("campaign", "source"), ("stack", "stack")))
    test = at_pace(cases, interactive_pace())
    return out + [Fold("pace", "interactive", ~test, test)]


def interactive_pace() -> float:
    """Tokens a second each sequence sees under MLPerf's strictest Interactive limit on the
    time per output token (DeepSeek-R1's, of ``data/mlperf_datasets.csv``)."""
    limits = tables.load("mlperf_datasets")["tpot_limit_interactive_ms"]
    return 1e3 / float(limits.min())


def at_pace(cases: pd.DataFrame, pace: float) -> np.ndarray:
    """The rows of runs that say they were served at interactive pace: MLPerf's Interactive
    scenario (under its own benchmark's limit, by its rules), and every form of a run
    (:data:`RUN`) that publishes a rate per user of ``pace`` tokens a second or more."""
    key = pd.util.hash_pandas_object(cases[list(RUN)], index=False).to_numpy()
    user = cases["kind"].isin(PER_USER_KINDS).to_numpy()
    fast = set(key[user & (cases["measured"] >= pace).to_numpy()])
    return np.isin(key, list(fast)) | (cases["scenario"] == "Interactive").to_numpy()


def _column_folds(cases: pd.DataFrame, columns) -> list[Fold]:
    """One fold per value of each ``column`` with at least :data:`MIN_FOLD_ROWS` rows."""
    out = []
    for kind, column in columns:
        counts = cases[column].value_counts()
        for name in sorted(counts[counts >= MIN_FOLD_ROWS].index):
            test = (cases[column] == name).to_numpy()
            out.append(Fold(kind, name, ~test, test))
    return out


def _case(cases: pd.DataFrame, fold: Fold) -> np.ndarray:
    """``"seen"`` where the fold's training rows hold the scored row's chip and model
    together, else ``"new"``."""
    pairs = set(zip(cases.loc[fold.train, "chip"], cases.loc[fold.train, "model"]))
    scored = cases[fold.test]
    return np.array(["seen" if p in pairs else "new"
                     for p in zip(scored["chip"], scored["model"])], dtype=object)


def crossval(cases: pd.DataFrame, structures=CROSSVALIDATED,
             progress: Progress = _quiet) -> pd.DataFrame:
    """Every fold's predictions of the rows it scores, by each structure fitted on the
    fold's training rows alone."""
    out = []
    all_folds = folds(cases)
    for i, fold in enumerate(all_folds, start=1):
        train, test = cases[fold.train], cases[fold.test]
        case = _case(cases, fold)
        for s in structures:
            start = time.time()
            f = fit_on(train, s)
            pred = predict_cases(test, f.calibration, stacks=f.stacks).to_numpy(float)
            out.append(pd.DataFrame({
                "fold_kind": fold.kind, "fold": fold.name, "structure": s.name,
                "table": test["table"].to_numpy(), tables.ROW_ID: test[tables.ROW_ID].to_numpy(),
                "case": case, "predicted": pred}))
            progress(f"fold {i}/{len(all_folds)} ({fold.kind}: {fold.name}, "
                     f"{int(fold.test.sum())} rows scored): {s.name} in "
                     f"{time.time() - start:.0f} s")
    return pd.concat(out, ignore_index=True).assign(source_url=SHORT_SOURCE)


# -- the stored tables -----------------------------------------------------------------------

def _parameters(fit_name: str, f: Fit) -> pd.DataFrame:
    values = asdict(f.calibration)
    return pd.DataFrame({"fit": fit_name, "structure": f.structure.name,
                         "parameter": list(values), "value": [float(v) for v in values.values()],
                         "rows": f.rows, "source_url": SOURCE})


def _stacks(fit_name: str, f: Fit) -> pd.DataFrame:
    return pd.DataFrame([{"fit": fit_name, "structure": f.structure.name, "stack": s.name,
                          "efficiency": s.efficiency, "overhead": s.overhead, "rows": s.rows,
                          "source_url": SOURCE} for s in f.stacks.values()],
                        columns=["fit", "structure", "stack", "efficiency", "overhead", "rows",
                                 "source_url"])


def fixed_split(cases: pd.DataFrame) -> pd.DataFrame:
    """The fixed split's training rows: MLPerf rounds before v5.1 and Argonne's training
    chips (:data:`napkin.validation.rows.TRAIN_ROUNDS`, ``ARGONNE_TRAIN_GPUS``)."""
    return cases[cases["split"] == "train"]


def fits(cases: pd.DataFrame, progress: Progress = _quiet) -> dict[tuple[str, str], Fit]:
    """Every structure on the fixed split, and the cross-validated ones on every row."""
    out = {}
    jobs = [(FIXED, fixed_split(cases), s) for s in STRUCTURES.values()] + \
        [(PUBLISHED, cases, s) for s in CROSSVALIDATED]
    for i, (name, rows_, s) in enumerate(jobs, start=1):
        start = time.time()
        out[(name, s.name)] = fit_on(rows_, s)
        progress(f"fit {i}/{len(jobs)}: {s.name} on the {name} rows ({len(rows_):,}) in "
                 f"{time.time() - start:.0f} s")
    return out


def build(progress: Progress = _quiet) -> dict[str, pd.DataFrame]:
    """Every derived table, from the raw rows."""
    cases = rows()
    found = fits(cases, progress)
    return {
        PARAMETERS_TABLE: pd.concat([_parameters(n, f) for (n, _), f in found.items()],
                                    ignore_index=True),
        STACKS_TABLE: pd.concat([_stacks(n, f) for (n, _), f in found.items()],
                                ignore_index=True),
        CROSSVAL_TABLE: crossval(cases, progress=progress),
    }


def destination(directory: Path | None = None, overwrite: bool = False) -> Path:
    """Where :func:`write` puts the derived tables: ``data/`` or ``directory``. A table
    already there is refused unless ``overwrite``, so nothing the book states moves by
    accident; a script checks before it fits, not after."""
    directory = Path(directory or tables.data_dir())
    existing = [f"{name}.csv" for name in TABLES if (directory / f"{name}.csv").exists()]
    if existing and not overwrite:
        raise ValueError(f"{', '.join(existing)} already exist in {directory}; pass "
                         "--overwrite to replace them (then look at what moved)")
    return directory


def write(frames: dict[str, pd.DataFrame], overwrite: bool = False,
          directory: Path | None = None) -> list[Path]:
    """Write the derived tables (:data:`TABLES`) into :func:`destination`."""
    directory = destination(directory, overwrite)
    paths = [directory / f"{name}.csv" for name in frames]
    for path, frame in zip(paths, frames.values()):
        frame.to_csv(path, index=False, float_format="%.6g" if path.stem == CROSSVAL_TABLE
                     else "%.10g")
    return paths


__all__ = ["SOURCE", "CROSSVAL_TABLE", "TABLES", "FIXED", "CROSSVALIDATED", "CHIP_FAMILIES", "ROUNDS",
           "MIN_FOLD_ROWS", "RUN", "PER_USER_KINDS", "interactive_pace", "at_pace",
           "Fold", "rows", "tpot_tail", "fit_on", "folds", "crossval", "fits",
           "fixed_split", "build", "destination", "write"]
