"""A model deployed on chips: how much memory is left for the KV cache, and which roof the
weights run against.

Every serving chapter needs the same three facts about a deployment: the model (what a step
computes and reads), the roof of the chips together (their FLOP/s for the arithmetic the
weights run in, their bandwidth, their binary capacity) and the memory left for the cache once
the weights and the runtime's own share are taken. They are decided here, once.

The runtime's share defaults to the vLLM paper's own accounting, read in bytes
(:func:`paper_overhead_share`: its Table 1 prints 40 "GB" of A100 memory, 26 "GB" of OPT-13B
weights and 12 "GB" of KV cache; the rest is activations and buffers). Where a source states
the KV memory itself (that same Table 1, which chapter 6 replays), the deployment carries the
stated figure instead of the arithmetic (``deploy(..., kv_memory_bytes=...)``).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Mapping

from . import catalog, kvcache, papers, roofline
from .models import bits_per_weight
from .units import GB, GiB, require_positive

__all__ = ["deploy", "Deployment", "model_of", "paper_overhead_share", "paper_table1_bytes"]


def paper_table1_bytes() -> dict[str, float]:
    """The vLLM paper's Table 1 (OPT-13B on one A100) in bytes, each "GB" read as what it is.

    The table prints every figure as "GB", but they are not one unit. The GPU memory is a
    vendor capacity, binary like every capacity in this book (the A100's 40 GB are 40 GiB).
    The KV memory is binary too: only 12 GiB give the printed 15.7K slots at 800 KiB per
    token (12 decimal GB would give 14.6K). The parameters are decimal: 13 billion FP16
    weights are 26e9 bytes, where 26 GiB would be 14 billion.
    """
    return {"gpu": papers.claim("table1_13b_gpu_memory") * GiB,
            "parameters": papers.claim("table1_13b_parameter_size") * GB,
            "kv": papers.claim("table1_13b_kv_memory") * GiB}


def paper_overhead_share() -> float:
    """Share of GPU memory that is neither weights nor KV in the vLLM paper's Table 1 (13B):
    activations and the runtime's own buffers, in bytes (:func:`paper_table1_bytes`).

    Subtracting the printed numbers as if they shared a unit, (40 - 26 - 12) / 40, gives 5 %;
    in bytes the rest is 9.5 % of the card.
    """
    t = paper_table1_bytes()
    return (t["gpu"] - t["parameters"] - t["kv"]) / t["gpu"]


@dataclass(frozen=True)
class Deployment:
    """A model on ``roof`` (one chip, or several working as one), with the runtime's share of
    memory set aside. Defined in ``napkin.deployment``; chapters 6, 7 and 9 use it.

    ``stated_kv_memory_bytes``: the KV memory a source states for this deployment (the vLLM
    paper's Table 1); when set it replaces the arithmetic and ``overhead_share`` is unused.
    """

    name: str
    model: roofline.Model
    roof: roofline.Roof
    weight_format: str
    overhead_share: float
    stated_kv_memory_bytes: float | None = None

    def __post_init__(self):
        if self.roof.capacity_bytes is None:
            raise ValueError(f"{self.roof.name} has no memory capacity in hardware_specs.csv")
        share = require_positive("overhead_share", self.overhead_share, allow_zero=True)
        if share >= 1:
            raise ValueError(f"overhead_share is a fraction of memory below 1, got {share!r}")
        if self.stated_kv_memory_bytes is not None:
            stated = require_positive("stated_kv_memory_bytes", self.stated_kv_memory_bytes)
            if stated + self.model.weight_bytes > self.roof.capacity_bytes:
                raise ValueError(
                    f"stated_kv_memory_bytes {stated / GiB:.1f} GiB and {self.model.name}'s "
                    f"{self.model.weight_bytes / GiB:.1f} GiB of weights exceed "
                    f"{self.roof.name}'s {self.roof.capacity_bytes / GiB:.0f} GiB")
        elif self.kv_memory_bytes <= 0:
            raise ValueError(
                f"{self.model.name} at {self.weight_format} "
                f"({self.model.weight_bytes / GiB:.1f} GiB of weights) leaves no room for a KV "
                f"cache on {self.roof.name} ({self.roof.capacity_bytes / GiB:.0f} GiB, "
                f"{share:.0%} kept for the runtime): use more chips or a smaller format")

    @property
    def kv_memory_bytes(self) -> float:
        """Memory for the KV cache: the capacity, less the runtime's share, less the weights
        (or the stated figure, where a source gives one)."""
        if self.stated_kv_memory_bytes is not None:
            return float(self.stated_kv_memory_bytes)
        return self.roof.capacity_bytes * (1 - self.overhead_share) - self.model.weight_bytes

    @property
    def max_context_tokens(self) -> int:
        """The longest context the model is meant to serve (:func:`napkin.kvcache.max_context_tokens`)."""
        return kvcache.max_context_tokens(self.model.config)

    @property
    def kv_bytes_per_token(self) -> int:
        return self.model.kv_bytes_per_token()

    @property
    def kv_capacity_tokens(self) -> int:
        """Tokens of cache that fit, summed over every sequence (no sliding windows)."""
        return int(self.kv_memory_bytes // self.kv_bytes_per_token)

    def max_batch(self, context_tokens: int) -> int:
        """Sequences of ``context_tokens`` each whose caches fit (windows honoured)."""
        one = self.model.kv_bytes(context_tokens)
        return int(self.kv_memory_bytes // one) if one else 2**31 - 1


def model_of(model: str | Mapping | roofline.Model, weights: str, kv: str = "f16",
             name: str | None = None) -> roofline.Model:
    """A book model name, a Hugging Face config mapping or a :class:`roofline.Model`, as the
    roofline's model at ``weights`` (a dense config's parameters are counted from it)."""
    if isinstance(model, roofline.Model):
        return model
    if isinstance(model, str):
        return roofline.Model.from_catalog(model, weights, kv)
    if isinstance(model, Mapping):
        return roofline.Model.from_config(model, name or str(model.get("_name", "config")),
                                          bits_per_weight(weights) / 8,
                                          float(kvcache.dtype_bytes(kv)))
    raise ValueError(f"model must be a book model name ({', '.join(catalog.names())}), a "
                     f"config mapping or a roofline.Model; got {type(model).__name__}")


def deploy(model: str | Mapping | roofline.Model, chip: str, *, n_chips: int = 1,
           weights: str = "FP8", kv: str = "f16", backend: str = "serving",
           overhead_share: float | None = None,
           kv_memory_bytes: float | None = None) -> Deployment:
    """``model`` on ``n_chips`` of ``chip`` working as one (ideal tensor parallelism: FLOP/s,
    bandwidth and memory add up), its weights at ``weights`` running against the roof of
    the arithmetic they use on ``backend`` (:func:`napkin.roofline.arithmetic_for`).
    ``kv_memory_bytes``: the KV memory a source states, instead of the arithmetic."""
    m = model_of(model, weights, kv)
    roof = roofline.chip_roof(chip, roofline.arithmetic_for(weights, backend)).times(n_chips)
    share = paper_overhead_share() if overhead_share is None else overhead_share
    return Deployment(name=f"{m.name}, {weights} weights, {roof.name}", model=m, roof=roof,
                      weight_format=weights, overhead_share=share,
                      stated_kv_memory_bytes=kv_memory_bytes)
