"""The model against published speedups, on rows chosen before looking at the fit.

Three published sweeps say what was run precisely enough to predict (the chip, the target
model, the draft and how many tokens it proposes per cycle), and each is predicted with the
calibrated step model of chapter 9 and, beside it, the plain roofline:

- **EAGLE and EAGLE-3 in SGLang** (EAGLE-3 paper, Table 3): Llama 3.1 8B on one H100 (the
  variant is not stated: the SXM part is assumed), a chain of three drafted tokens, batches
  2 to 64; speedup = throughput over SGLang's own without speculation.
- **EAGLE and EAGLE-3 in vLLM** (Table 5): the same model, a chain of two, batches 2 to 56,
  on an RTX 3090 as the paper's text says (a table caption says A100; both are computed).
- **DeepSeek-V3 with its MTP module in SGLang** (SGLang's documentation): eight H200, three
  drafted tokens, batches 1 and 32.

The papers state no acceptance rate for these runs. For the two EAGLE sweeps the first
drafted token's acceptance is fitted, per method, to the smallest batch (2) and the other
batches are held out, so what they test is how the speedup changes with batch, not its
level; later positions fall as EAGLE's published rates do
(:func:`~napkin.speculative.acceptance.position_rates`). Nothing else is fitted (the step
model's parameters are chapter 9's, fitted to other rows). For DeepSeek-V3 the first
position's acceptance is the range DeepSeek's report states for its MTP module (the middle is
scored, both ends are shown; later positions fall as EAGLE's), so nothing is fitted at all.
Errors are factors (:func:`napkin.validation.factor_stats`). The TensorRT Edge-LLM rows
(Jetson AGX Thor, batch 1 and 8) are shown as measured but not predicted: the book holds no
sourced roof for that chip.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np
import pandas as pd

from .. import tables
from ..predict import calibration as calib
from ..predict.engines import engine
from ..validation.report import factor_stats
from . import draft as drafts
from .acceptance import position_rates, stated, tokens_per_cycle
from .cost import speedup

__all__ = ["alternatives", "AVERAGED", "batch1_cycles", "beyond_ceiling", "check", "DEEPSEEK_MTP",
           "DEEPSEEK_REPORT", "definitions", "EAGLE3_PAPER", "EDGE_LLM", "edge_llm", "errors",
           "load", "predict_sweep", "prompt_lookup", "PROMPT_LOOKUP", "SGLANG_DOCS", "Sweep",
           "SWEEPS", "TABLE"]

TABLE = "speculative_published"
EAGLE3_PAPER = "https://arxiv.org/abs/2503.01840"
SGLANG_DOCS = "sgl-project/sglang"
DEEPSEEK_REPORT = "https://arxiv.org/abs/2412.19437"
EDGE_LLM = "TensorRT-Edge-LLM"
#: The acceptance DeepSeek's report states for its MTP module (``data/``'s method name).
DEEPSEEK_MTP = "MTP (multi-token prediction) module used for speculative decoding"
#: Prompt lookup in ``data/speculative_published.csv``, and the rows that average datasets.
PROMPT_LOOKUP = ("PLD", "PLD (prompt lookup)")
AVERAGED = ("Mean of", "overall")


def load() -> pd.DataFrame:
    """``data/speculative_published.csv``."""
    return tables.load(TABLE)


@dataclass(frozen=True)
class Sweep:
    """A published sweep the model predicts: which rows, on what, and how acceptance is set
    (``fit_batch``: fitted per method at that batch; else the range a source states for the
    method ``acceptance_of``, :attr:`acceptance`)."""

    name: str
    url: str
    methods: dict            # method in the table -> the Draft it ran
    chip: str
    chip_basis: str
    model: str
    weights: str
    kv: str
    k: int
    k_basis: str
    n_chips: int = 1
    depth: int = 512
    fit_batch: int | None = None
    acceptance_of: str = ""
    acceptance_basis: str = ""
    alternatives: tuple = field(default=())   # other chips the source could mean

    @property
    def acceptance(self) -> tuple:
        """The first position's acceptance as stated (low, high); empty where it is fitted."""
        return stated(self.acceptance_of) if self.acceptance_of else ()

    def rows(self, table: pd.DataFrame | None = None) -> pd.DataFrame:
        """The sweep's rows: its methods, a stated batch and a stated plain speedup."""
        df = load() if table is None else table
        keep = (df["source_url"].str.contains(self.url, regex=False) &
                df["method"].isin(list(self.methods)) & df["batch"].notna() &
                df["speedup"].notna() & df["speedup_definition"].str.contains("fixed batch"))
        return df[keep].sort_values(["method", "batch"]).reset_index(drop=True)

    def engine(self, chip: str | None = None):
        return engine(chip or self.chip, self.model, n_chips=self.n_chips, weights=self.weights,
                      kv=self.kv)


SWEEPS = (
    Sweep(name="EAGLE-3 paper, Table 3: SGLang, one H100", url=EAGLE3_PAPER,
          methods={"EAGLE (in SGLang)": drafts.eagle(1),
                   "EAGLE-3 (in SGLang)": drafts.eagle3_for("Llama-3.1-8B")},
          chip="H100 SXM", chip_basis="one H100 (the variant is not stated; SXM assumed)",
          model="Llama-3.1-8B", weights="BF16", kv="bf16", k=3,
          k_basis="chain draft length 3, no tree (the paper)", fit_batch=2,
          alternatives=("H100 PCIe",)),
    Sweep(name="EAGLE-3 paper, Table 5: vLLM", url=EAGLE3_PAPER,
          methods={"EAGLE (in vLLM)": drafts.eagle(1),
                   "EAGLE-3 (in vLLM)": drafts.eagle3_for("Llama-3.1-8B")},
          chip="RTX 3090", chip_basis="an RTX 3090, as the paper's text says (a table caption "
                                      "says A100)",
          model="Llama-3.1-8B", weights="BF16", kv="bf16", k=2,
          k_basis="chain length 2, no tree (the paper)", fit_batch=2,
          alternatives=("A100 SXM",)),
    Sweep(name="SGLang documentation: DeepSeek-V3 with MTP, eight H200", url=SGLANG_DOCS,
          methods={"DeepSeek-V3 MTP via SGLang EAGLE speculative decoding": drafts.mtp()},
          chip="H200", chip_basis="eight H200 in tensor parallel (the documentation)",
          model="DeepSeek-V3", weights="FP8", kv="bf16", k=3, n_chips=8, depth=1024,
          k_basis="3 steps, top-k 1, 4 draft tokens (the documentation's default)",
          acceptance_of=DEEPSEEK_MTP,
          acceptance_basis="the acceptance of the second token the DeepSeek-V3 report states "
                           "(data/speculative_acceptance_by_position.csv)"),
)


def _speedup(target, draft, first, k, batch, depth, cal):
    """The model's speedup with the first drafted token accepted with probability ``first``
    and later ones falling as published."""
    return speedup(target, draft, position_rates(first, k), k, batch, depth, cal)


def _fit_acceptance(target, draft, k, batch, depth, measured, cal) -> float:
    """The first position's acceptance at which the model's speedup at ``batch`` equals
    ``measured`` (speedup rises with acceptance, so bisection); 0 or 1 where even those miss
    it."""
    low, high = 0.0, 1.0
    if _speedup(target, draft, 1.0, k, batch, depth, cal) <= measured:
        return 1.0
    if _speedup(target, draft, 0.0, k, batch, depth, cal) >= measured:
        return 0.0
    for _ in range(50):
        mid = (low + high) / 2
        low, high = (mid, high) if _speedup(target, draft, mid, k, batch, depth, cal) < \
            measured else (low, mid)
    return (low + high) / 2


def predict_sweep(sweep: Sweep, cal: calib.Calibration, chip: str | None = None,
                  table: pd.DataFrame | None = None) -> pd.DataFrame:
    """Every row of ``sweep`` predicted with ``cal``: the first position's acceptance used,
    the tokens a cycle yields, the prediction (and, for a stated acceptance range, at both
    ends), and whether the row is the one the acceptance was fitted to."""
    rows = sweep.rows(table)
    e = sweep.engine(chip)
    out = []
    for method, group in rows.groupby("method", sort=True):
        d = sweep.methods[method]
        if sweep.fit_batch is not None:
            fit = group[group["batch"] == sweep.fit_batch]
            if fit.empty:
                raise ValueError(f"{sweep.name}: {method} has no row at batch {sweep.fit_batch} "
                                 "to fit acceptance to")
            a = _fit_acceptance(e, d, sweep.k, int(sweep.fit_batch), sweep.depth,
                                float(fit["speedup"].iloc[0]), cal)
            ends = (a, a)
        else:
            ends = sweep.acceptance
            a = float(np.mean(ends))
        for _, r in group.iterrows():
            b = int(r["batch"])
            out.append({"sweep": sweep.name, "method": method, "chip": chip or sweep.chip,
                        "batch": b, "measured": float(r["speedup"]), "acceptance": a,
                        "tokens_per_cycle": tokens_per_cycle(position_rates(a, sweep.k)),
                        "predicted": _speedup(e, d, a, sweep.k, b, sweep.depth, cal),
                        "predicted_low": _speedup(e, d, ends[0], sweep.k, b, sweep.depth, cal),
                        "predicted_high": _speedup(e, d, ends[1], sweep.k, b, sweep.depth,
                                                   cal),
                        "split": "fit" if sweep.fit_batch == b else "test",
                        "definition": r["speedup_definition"], "source_url": r["source_url"]})
    return pd.DataFrame(out)


def check(calibration: calib.Calibration | None = None,
          table: pd.DataFrame | None = None) -> pd.DataFrame:
    """Every sweep row predicted by the calibrated step model (``predicted``) and by the plain
    roofline (``roofline``, with its own fitted acceptance), with their errors as log-ratios
    ``ln(predicted / measured)`` (positive: more speedup than measured) and as factors."""
    cal = calib.calibrated() if calibration is None else calibration
    parts = []
    for sweep in SWEEPS:
        model = predict_sweep(sweep, cal, table=table)
        roof = predict_sweep(sweep, calib.ROOFLINE, table=table)
        model["roofline"] = roof["predicted"].to_numpy()
        model["roofline_acceptance"] = roof["acceptance"].to_numpy()
        parts.append(model)
    return _with_errors(pd.concat(parts, ignore_index=True), ("", "roofline_"))


def _with_errors(df: pd.DataFrame, prefixes) -> pd.DataFrame:
    """``log_ratio`` and ``factor`` (exp |log_ratio|) of each prediction column."""
    for p in prefixes:
        column = "predicted" if p == "" else p.rstrip("_")
        df[f"{p}log_ratio"] = np.log(df[column] / df["measured"])
        df[f"{p}factor"] = np.exp(df[f"{p}log_ratio"].abs())
    return df


def alternatives(calibration: calib.Calibration | None = None) -> pd.DataFrame:
    """The sweeps predicted on the other chip their source could mean (an H100 PCIe for
    Table 3, an A100 for Table 5), calibrated model only."""
    cal = calib.calibrated() if calibration is None else calibration
    parts = [predict_sweep(s, cal, chip) for s in SWEEPS for chip in s.alternatives]
    return _with_errors(pd.concat(parts, ignore_index=True), ("",))


def _stats(log_ratio: pd.Series) -> dict:
    """:func:`napkin.validation.factor_stats` of a speedup's log-ratios (a speedup is a rate:
    a positive log-ratio promises more speed), and the largest factor."""
    out = factor_stats(log_ratio, log_ratio)
    return {**out, "max": float(np.exp(log_ratio.abs().max())) if len(log_ratio) else np.nan}


def errors(checked: pd.DataFrame, by=("sweep",)) -> pd.DataFrame:
    """Held-out errors per ``by`` (and over all held-out rows, ``all``) as factors: rows,
    median and 90th-percentile factor, the speed bias factor (above 1: the model promises
    more speedup than was measured) and the largest factor, the calibrated model's and (where
    ``checked`` has one) the plain roofline's."""
    test = checked[checked["split"] == "test"]
    groups = [(k if isinstance(k, tuple) else (k,), g) for k, g in test.groupby(list(by))]
    groups.append((("all",) * len(by), test))
    out = []
    for keys, g in groups:
        row = {**dict(zip(by, keys)), **_stats(g["log_ratio"])}
        if "roofline_log_ratio" in g:
            roof = _stats(g["roofline_log_ratio"])
            row |= {f"roofline_{k}": v for k, v in roof.items() if k != "n"}
        out.append(row)
    return pd.DataFrame(out)


def prompt_lookup(table: pd.DataFrame | None = None) -> pd.DataFrame:
    """Prompt lookup's published acceptance lengths averaged over each source's datasets
    (the EAGLE papers' and Spec-Bench's mean rows): tokens a cycle yields when the draft is a
    search of the context."""
    df = load() if table is None else table
    keep = (df["method"].isin(PROMPT_LOOKUP) & df["acceptance_length_tokens"].notna() &
            df["dataset"].str.contains("|".join(AVERAGED), case=False, regex=True))
    return df[keep].reset_index(drop=True)


def edge_llm(table: pd.DataFrame | None = None) -> pd.DataFrame:
    """TensorRT Edge-LLM's EAGLE-3 rows at batch 1 and 8 (the same model and format in one
    release's table): acceptance length, speedup and what a cycle costs in plain steps
    (``tau / speedup``), measured, not predicted."""
    df = load() if table is None else table
    keep = (df["source_url"].str.contains(EDGE_LLM, regex=False) & df["batch"].isin([1, 8]) &
            df["speedup"].notna() & df["acceptance_length_tokens"].notna() &
            df["method"].str.startswith("EAGLE-3"))
    rows = df[keep].copy()
    rows["release"] = rows["date"].str.extract(r"(v\d+\.\d+\.\d+)", expand=False)
    rows["cycle_relative"] = rows["acceptance_length_tokens"] / rows["speedup"]
    wide = rows.pivot_table(index=["target_model", "release"], columns="batch",
                            values=["acceptance_length_tokens", "speedup", "cycle_relative"])
    wide.columns = [f"{name}_b{int(b)}" for name, b in wide.columns]
    wide = wide.dropna().reset_index()
    return wide


def batch1_cycles(table: pd.DataFrame | None = None) -> pd.DataFrame:
    """Published one-stream rows with both an acceptance length and a speedup (the EAGLE
    papers' tables and Spec-Bench): what a cycle cost in plain steps, ``tau / speedup``."""
    df = load() if table is None else table
    keep = (df["speedup_definition"].str.startswith("one stream") &
            df["acceptance_length_tokens"].notna() & df["speedup"].notna())
    rows = df[keep].copy()
    rows["cycle_relative"] = rows["acceptance_length_tokens"] / rows["speedup"]
    return rows.reset_index(drop=True)


def definitions(table: pd.DataFrame | None = None) -> pd.DataFrame:
    """How many published rows state a plain speedup under each definition."""
    df = load() if table is None else table
    stated = df[df["speedup"].notna()]
    return (stated.groupby("speedup_definition").size().rename("rows").sort_values(
        ascending=False).reset_index())


def beyond_ceiling() -> dict:
    """The published single stream that outruns the essay's ceiling: EAGLE-3 in SGLang on one
    H100 (Llama 3.1 8B, BF16), its tokens/s and its engine's without speculation, against the
    essay's bandwidth over the weights' bytes. ``per_read`` is tokens/s over the ceiling: the
    tokens each read of the weights produced, at least (chapters 1 and 10, the errata)."""
    from .. import catalog, essay

    rows = load()
    sglang = rows[rows["source_url"].str.contains(EAGLE3_PAPER, regex=False) &
                  rows["batch"].eq(1) & rows["hardware"].str.contains("H100")]
    spec = float(sglang.loc[sglang["method"] == "EAGLE-3 (in SGLang)",
                            "speculative_tok_per_s"].iloc[0])
    plain = float(sglang.loc[sglang["method"].str.startswith("none"),
                             "plain_tok_per_s"].iloc[0])
    size = catalog.weight_bytes("Llama-3.1-8B", "BF16")
    ceiling = essay.claim("h100_bandwidth") * 1e9 / size
    return {"tokens_per_s": spec, "plain_tokens_per_s": plain, "weight_bytes": size,
            "ceiling_tokens_per_s": ceiling, "per_read": spec / ceiling}
