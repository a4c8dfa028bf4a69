"""The calibrated step model's parameters: what a roofline leaves out, as a few numbers fitted
to measured servers.

A roofline says a step takes the slower of its bytes over the peak bandwidth and its FLOPs
over the peak FLOP/s. Real engines reach a fraction of each peak, a small step's matmuls
reach a smaller fraction than a large one's, every step pays fixed costs (launching kernels,
scheduling, sampling), and tensor parallelism pays for its all-reduces. :class:`Calibration`
holds one number for each; :data:`ROOFLINE` is the plain roofline (every efficiency 1, no
overhead, communication free), and :func:`calibrated` the values fitted to the training split
of the published measurements (:func:`napkin.validation.fit`), computed from ``data/`` on
first use and kept for the session.

The fit is a Nelder-Mead search (numpy only; no scipy in the book's pins) over the
parameters mapped to unbounded values: efficiencies through a logistic, times and token counts
through a logarithm, so every trial point is physical.
"""

from __future__ import annotations

import math
from dataclasses import asdict, dataclass, replace
from functools import lru_cache

import numpy as np


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
    - ``tpot_tail``: 99th-percentile time per output token over the mean step time (per-token
      times vary with the prefill work each step carries);
    - ``communication``: whether tensor parallelism costs anything (the plain roofline treats
      it as free, as :func:`napkin.deployment.deploy` does).
    """

    bandwidth_efficiency: float = 1.0
    compute_efficiency: float = 1.0
    half_tokens: float = 0.0
    step_overhead_s: float = 0.0
    allreduce_latency_s: float = 0.0
    link_efficiency: float = 1.0
    tpot_tail: float = 1.0
    communication: bool = True

    def __post_init__(self):
        for name in ("bandwidth_efficiency", "compute_efficiency", "link_efficiency"):
            v = getattr(self, name)
            if not 0 < v <= 1:
                raise ValueError(f"{name} is a share of a peak in (0, 1], got {v!r}")
        for name in ("half_tokens", "step_overhead_s", "allreduce_latency_s"):
            if not getattr(self, name) >= 0:
                raise ValueError(f"{name} must be >= 0, got {getattr(self, name)!r}")
        if not self.tpot_tail >= 1:
            raise ValueError(f"tpot_tail is a 99th percentile over a mean, >= 1; got "
                             f"{self.tpot_tail!r}")

    def as_dict(self) -> dict:
        return asdict(self)


#: The plain roofline: peaks reached, nothing else paid, tensor parallelism free.
ROOFLINE = Calibration(communication=False)

#: The parameters the optimiser moves, and how each maps to an unbounded number.
FITTED = ("bandwidth_efficiency", "compute_efficiency", "half_tokens", "step_overhead_s",
          "allreduce_latency_s", "link_efficiency")
_SHARES = {"bandwidth_efficiency", "compute_efficiency", "link_efficiency"}


def to_vector(cal: Calibration) -> np.ndarray:
    """The fitted parameters as unbounded numbers (logit of a share, log of the others)."""
    out = []
    for name in FITTED:
        v = getattr(cal, name)
        if name in _SHARES:
            v = min(v, 1 - 1e-9)
            out.append(math.log(v / (1 - v)))
        else:
            out.append(math.log(max(v, 1e-12)))
    return np.array(out)


def from_vector(x, base: Calibration) -> Calibration:
    """Inverse of :func:`to_vector`, the other fields taken from ``base``."""
    values = {}
    for name, v in zip(FITTED, np.asarray(x, dtype=float)):
        values[name] = 1 / (1 + math.exp(-v)) if name in _SHARES else math.exp(v)
    return replace(base, **values)


def nelder_mead(f, x0, step: float = 0.5, iterations: int = 400, tol: float = 1e-7):
    """Minimise ``f`` from ``x0`` by the Nelder-Mead simplex (standard coefficients:
    reflection 1, expansion 2, contraction 1/2, shrink 1/2). Deterministic."""
    x0 = np.asarray(x0, dtype=float)
    n = len(x0)
    simplex = np.vstack([x0] + [x0 + step * np.eye(n)[i] for i in range(n)])
    values = np.array([f(x) for x in simplex])
    for _ in range(iterations):
        order = np.argsort(values)
        simplex, values = simplex[order], values[order]
        if values[-1] - values[0] < tol:
            break
        centroid = simplex[:-1].mean(axis=0)
        reflected = centroid + (centroid - simplex[-1])
        fr = f(reflected)
        if fr < values[0]:
            expanded = centroid + 2 * (centroid - simplex[-1])
            fe = f(expanded)
            simplex[-1], values[-1] = (expanded, fe) if fe < fr else (reflected, fr)
        elif fr < values[-2]:
            simplex[-1], values[-1] = reflected, fr
        else:
            inside = fr >= values[-1]
            contracted = centroid + 0.5 * ((simplex[-1] if inside else reflected) - centroid)
            fc = f(contracted)
            if fc < min(fr, values[-1]):
                simplex[-1], values[-1] = contracted, fc
            else:
                simplex[1:] = simplex[0] + 0.5 * (simplex[1:] - simplex[0])
                values[1:] = [f(x) for x in simplex[1:]]
    best = int(np.argmin(values))
    return simplex[best], float(values[best])


@lru_cache(maxsize=1)
def calibrated() -> Calibration:
    """The parameters fitted to the training split of the published measurements in
    ``data/`` (:func:`napkin.validation.fit`); computed once per session."""
    from .. import validation

    return validation.fit().calibration
