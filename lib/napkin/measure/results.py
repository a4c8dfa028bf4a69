"""What a runner returns: rates, model facts and who ran them, as dataclasses.

Every result has ``to_dict`` (the JSON a record under ``results/`` holds) and
``from_dict`` (so a saved record reads back into the same objects).
"""

from __future__ import annotations

import statistics
from dataclasses import asdict, dataclass, field


class MeasurementUnavailable(RuntimeError):
    """This machine cannot run the measurement; the message says why and what to do."""


@dataclass(frozen=True)
class Rate:
    """One llama-bench style test result: mean and sample stddev of tokens/s."""

    test: str  # "pp512", "tg128", "tg64@d1024" ...
    n_tokens: int
    tokens_per_s: float
    stddev: float
    samples: list[float] = field(default_factory=list)

    def to_dict(self) -> dict:
        return asdict(self)

    @classmethod
    def from_dict(cls, d: dict) -> Rate:
        return cls(test=d["test"], n_tokens=int(d["n_tokens"]),
                   tokens_per_s=float(d["tokens_per_s"]), stddev=float(d["stddev"]),
                   samples=[float(x) for x in d.get("samples", [])])


def summarise(test: str, n_tokens: int, seconds: list[float]) -> Rate:
    """Mean of per-repetition rates, as llama-bench reports them (not tokens / total time)."""
    if not seconds or any(s <= 0 for s in seconds):
        raise ValueError(f"{test}: need positive timings, got {seconds}")
    rates = [n_tokens / s for s in seconds]
    spread = statistics.stdev(rates) if len(rates) > 1 else 0.0
    return Rate(test=test, n_tokens=n_tokens, tokens_per_s=statistics.fmean(rates),
                stddev=spread, samples=rates)


def rate_name(kind: str, n_tokens: int, depth: int = 0) -> str:
    """llama-bench's test names: ``pp512``, ``tg128``, ``tg32@d4096``."""
    return f"{kind}{n_tokens}" + (f"@d{depth}" if depth else "")


@dataclass(frozen=True)
class ModelInfo:
    """What llama.cpp reports about a loaded model: bytes of weights, parameters."""

    model_bytes: int
    model_params: int
    n_vocab: int | None = None
    n_layer: int | None = None

    def to_dict(self) -> dict:
        return {k: v for k, v in asdict(self).items() if v is not None}

    @classmethod
    def from_dict(cls, d: dict) -> ModelInfo:
        return cls(**{k: d.get(k) for k in ("model_bytes", "model_params", "n_vocab", "n_layer")})


@dataclass(frozen=True)
class Measurement:
    """pp and tg of one model (either may be absent when its token count was 0)."""

    model: ModelInfo
    pp: Rate | None = None
    tg: Rate | None = None

    def to_dict(self) -> dict:
        out = {"model": self.model.to_dict()}
        for kind in ("pp", "tg"):
            rate = getattr(self, kind)
            if rate is not None:
                out[kind] = rate.to_dict()
        return out

    @classmethod
    def from_dict(cls, d: dict) -> Measurement:
        return cls(model=ModelInfo.from_dict(d["model"]),
                   pp=Rate.from_dict(d["pp"]) if "pp" in d else None,
                   tg=Rate.from_dict(d["tg"]) if "tg" in d else None)


@dataclass(frozen=True)
class DepthSweep:
    """tg of one model at several context depths, one Rate per depth (ascending)."""

    model: ModelInfo
    depths: tuple[int, ...]
    tg: tuple[Rate, ...]

    def __post_init__(self):
        if len(self.depths) != len(self.tg):
            raise ValueError(f"a sweep needs one rate per depth: {len(self.depths)} depths, "
                             f"{len(self.tg)} rates")

    def to_dict(self) -> dict:
        return {"model": self.model.to_dict(), "depths": list(self.depths),
                "tg": [rate.to_dict() for rate in self.tg]}


@dataclass(frozen=True)
class RunnerInfo:
    """Who ran llama.cpp, which build, on which backend and device, and why that one."""

    runner: str            # "llama-cpp-python" or "llama-bench"
    llama_cpp_version: str
    backend: str           # "CPU", "CUDA", "Metal", "ROCm", "Vulkan" ...
    devices: tuple[str, ...]
    threads: int
    system_info: str = ""
    binary: str | None = None
    binding_version: str | None = None
    why: str = ""          # why this runner and this backend, in words

    @property
    def device(self) -> str:
        """The device llama.cpp computes on: its GPUs, or "CPU"."""
        return ", ".join(self.devices) if self.devices else "CPU"

    def to_dict(self) -> dict:
        out = asdict(self) | {"devices": list(self.devices), "device": self.device}
        return {k: v for k, v in out.items() if v is not None}
