"""The calibrated step model's parameters: what a roofline leaves out, as a few numbers fitted
to measured servers.

A roofline says a step takes the slower of its bytes over the peak bandwidth and its FLOPs
over the peak FLOP/s. Real engines reach a fraction of each peak, a small step's matmuls
reach a smaller fraction than a large one's, every step pays fixed costs (launching each
layer's kernels, scheduling, sampling each sequence), and tensor parallelism pays for its
all-reduces. :class:`Calibration` holds one number for each; :data:`ROOFLINE` is the plain
roofline (every efficiency 1, no overhead, communication free).

:func:`calibrated` and :func:`stacks` are the published fit: fitted by
:mod:`napkin.validation.derive` to every published row the book holds and stored in
``data/step_model_parameters.csv`` and ``data/step_model_stacks.csv`` (a test refits them from
the raw rows and compares), so that nothing here fits anything, or imports the validation.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass, fields

from .. import tables
from .software import Stack

__all__ = ["calibrated", "Calibration", "MODEL", "PARAMETERS_TABLE", "PUBLISHED", "ROOFLINE",
           "stacks", "STACKS_TABLE", "stored", "stored_stacks"]


@dataclass(frozen=True)
class Calibration:
    """Efficiencies and overheads of a serving step (see :func:`napkin.predict.step.seconds`).

    - ``bandwidth_efficiency``: share of peak memory bandwidth a step's reads reach;
    - ``compute_efficiency``: share of peak FLOP/s a large step's matmuls reach;
    - ``half_tokens``: tokens in a step at which the weight matmuls reach half of that share
      (a matmul of few rows leaves the tensor cores idle);
    - ``step_overhead_s``: fixed time every step pays on top of the roofline;
    - ``allreduce_latency_s``: fixed time of one all-reduce between tensor-parallel chips;
    - ``link_efficiency``: share of the link's peak an all-reduce's bytes reach;
    - ``layer_overhead_s``: fixed time every step pays per layer (its kernels' launches), on
      the typical serving stack (a stack multiplies it, :mod:`napkin.predict.software`);
    - ``sequence_overhead_s``: time a step pays per sequence in it (sampling, scheduling);
    - ``moe_layer_overhead_s``: fixed time every step pays per layer with routed experts on
      top of ``layer_overhead_s`` (the router, the tokens' sort by expert and its undoing, a
      grouped matmul per projection: more kernels than a dense layer's), scaled by the
      stack as the per-layer cost is;
    - ``tpot_tail``: 99th-percentile time per output token over the mean step time (per-token
      times vary with the prefill work each step carries);
    - ``communication``: whether tensor parallelism costs anything (the plain roofline treats
      it as free, as :func:`napkin.deployment.deploy` does);
    - ``per_operator``: the weight matmuls and attention are separate kernels, each bound by
      its own roof (:class:`napkin.predict.step.Cost`); the plain roofline takes the slower
      of all bytes and all FLOPs;
    - ``expert_ramp``: a mixture's routed experts each see only their share of the step's
      tokens, and ramp with that share;
    - ``expert_parallel``: a row that states data-parallel attention with its experts spread
      over every chip (:func:`napkin.predict.engines.engine`'s ``attention_dp``) is read so;
      off, as tensor parallel;
    - ``multi_token``: a row that states multi-token prediction keeps
      :func:`~napkin.predict.multitoken.accepted_tokens` per step; off, one;
    - ``wide_when_unstated``: a mixture of experts whose row states no layout may also have
      run data-parallel attention, and the faster reading is kept (off in the published fit,
      which guesses no row's layout; MLPerf's DeepSeek-R1 rows are read as their
      configuration files state, chapter 9).
    """

    bandwidth_efficiency: float = 1.0
    compute_efficiency: float = 1.0
    half_tokens: float = 0.0
    step_overhead_s: float = 0.0
    allreduce_latency_s: float = 0.0
    link_efficiency: float = 1.0
    tpot_tail: float = 1.0
    communication: bool = True
    layer_overhead_s: float = 0.0
    sequence_overhead_s: float = 0.0
    moe_layer_overhead_s: float = 0.0
    per_operator: bool = False
    expert_ramp: bool = False
    expert_parallel: bool = False
    multi_token: bool = False
    wide_when_unstated: bool = False

    def __post_init__(self):
        for name in ("bandwidth_efficiency", "compute_efficiency", "link_efficiency"):
            v = getattr(self, name)
            if not 0 < v <= 1:
                raise ValueError(f"{name} is a share of a peak in (0, 1], got {v!r}")
        for name in ("half_tokens", "step_overhead_s", "allreduce_latency_s",
                     "layer_overhead_s", "sequence_overhead_s", "moe_layer_overhead_s"):
            if not getattr(self, name) >= 0:
                raise ValueError(f"{name} must be >= 0, got {getattr(self, name)!r}")
        if not self.tpot_tail >= 1:
            raise ValueError(f"tpot_tail is a 99th percentile over a mean, >= 1; got "
                             f"{self.tpot_tail!r}")

    def as_dict(self) -> dict:
        return asdict(self)


#: The plain roofline: peaks reached, nothing else paid, communication free; a row's stated
#: layout and drafts read as stated.
ROOFLINE = Calibration(communication=False, expert_parallel=True, multi_token=True)

#: Where the fitted parameters are stored, and the fit a chapter uses unless it asks for
#: another (the other is the fixed split's, chapter 9's held-out table).
PARAMETERS_TABLE = "step_model_parameters"
STACKS_TABLE = "step_model_stacks"
PUBLISHED = "published"
#: The structure whose parameters :func:`calibrated` returns.
MODEL = "calibrated step model"


def stored(fit: str = PUBLISHED, structure: str = MODEL) -> Calibration:
    """A calibration as :mod:`napkin.validation.derive` stored it (``fit``: ``"published"``,
    fitted on every row, or ``"fixed split"``, on the training split only)."""
    df = tables.load(PARAMETERS_TABLE)
    rows = df[(df["fit"] == fit) & (df["structure"] == structure)]
    if rows.empty:
        raise ValueError(f"no {structure!r} fit {fit!r} in data/{PARAMETERS_TABLE}.csv; "
                         "run scripts/fit_step_model.py")
    values = {}
    for name, value in zip(rows["parameter"], rows["value"]):
        kind = {f.name: f.type for f in fields(Calibration)}.get(name)
        if kind is None:
            raise ValueError(f"data/{PARAMETERS_TABLE}.csv names {name!r}, which is not a "
                             "Calibration field")
        values[name] = bool(value) if kind in ("bool", bool) else float(value)
    return Calibration(**values)


def stored_stacks(fit: str = PUBLISHED, structure: str = MODEL) -> dict[str, Stack]:
    """The serving stacks of a stored fit, by name (empty for a structure without them)."""
    df = tables.load(STACKS_TABLE)
    rows = df[(df["fit"] == fit) & (df["structure"] == structure)]
    return {r.stack: Stack(r.stack, float(r.efficiency), float(r.overhead), int(r.rows))
            for r in rows.itertuples()}


@tables.cached(PARAMETERS_TABLE)
def calibrated() -> Calibration:
    """The published calibration (:func:`stored`), read once per version of the table."""
    return stored()


@tables.cached(STACKS_TABLE)
def stacks() -> dict[str, Stack]:
    """The published fit's serving stacks (:mod:`napkin.predict.software`), read-only."""
    return stored_stacks()
