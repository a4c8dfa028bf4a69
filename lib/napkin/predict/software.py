"""Serving software: the one thing a napkin that knows only the hardware cannot know.

The same model on the same chip runs at different speeds under different serving stacks:
Argonne's runs of vLLM on AMD's chips take several times the time of the same runs on
NVIDIA's, most of it outside the roofline. The step model therefore knows a *stack*, a
label made of who measured (MLPerf submitters, Argonne's sweeps, or the engines' and vendors'
own published tables), the chip's vendor and the engine's family, and each stack seen in the
fit carries two multipliers on the step (:class:`Stack`): one on the shares of the peaks the
engine reaches, one on its fixed per-layer costs. They are fitted with the rest of the
calibration, shrunk towards 1 so that a stack seen on few rows moves little, and published
with their spread as the *software band*. A stack the fit never saw runs as the typical one
(both multipliers 1).
"""

from __future__ import annotations

from dataclasses import dataclass

#: Engine families, found by a piece of the engine or software field (first match wins).
ENGINES = (("tensorrt", "TensorRT-LLM"), ("trt", "TensorRT-LLM"), ("nim", "TensorRT-LLM"),
           ("vllm", "vLLM"), ("sglang", "SGLang"), ("deepspeed", "DeepSpeed"),
           ("sambaflow", "SambaFlow"), ("tgi", "TGI"), ("synapseai", "PyTorch"),
           ("pytorch", "PyTorch"))
#: Who measured: a row's source as the validation reads it, and the stack's first part.
MEASURED_BY = {"MLPerf": "MLPerf", "Argonne": "Argonne"}
PUBLISHED = "published"
#: The stack of a row whose software is not known: the typical one.
TYPICAL = "typical"


def engine_family(text) -> str:
    """``"vLLM 0.4.3+rocm614, PyTorch 2.3.0"`` -> ``"vLLM"``; ``"other"`` when none is named."""
    t = str(text).lower()
    return next((family for key, family in ENGINES if key in t), "other")


def stack_of(source: str, vendor: str, engine: str) -> str:
    """The stack label of a measurement: who measured, the chip's vendor, the engine's
    family (``"Argonne/AMD/vLLM"``, ``"MLPerf/NVIDIA/TensorRT-LLM"``)."""
    who = MEASURED_BY.get(source, PUBLISHED)
    return f"{who}/{vendor}/{engine_family(engine)}"


@dataclass(frozen=True)
class Stack:
    """What a serving stack changes in a step, relative to the typical stack: ``efficiency``
    multiplies the shares of peak bandwidth and peak FLOP/s it reaches (capped at the
    peaks), ``overhead`` its fixed per-layer cost; ``rows`` the fitted rows behind them."""

    name: str
    efficiency: float = 1.0
    overhead: float = 1.0
    rows: int = 0

    def __post_init__(self):
        for field in ("efficiency", "overhead"):
            if not getattr(self, field) > 0:
                raise ValueError(f"stack {self.name!r}: {field} must be > 0, got "
                                 f"{getattr(self, field)!r}")


def multipliers(stacks: dict[str, Stack], names) -> tuple[list[float], list[float]]:
    """Each name's efficiency and overhead multipliers (1 and 1 for a stack not in
    ``stacks``)."""
    typical = Stack(TYPICAL)
    found = [stacks.get(n, typical) for n in names]
    return [s.efficiency for s in found], [s.overhead for s in found]
