"""A model as a decode step sees it: the bytes it reads and the FLOPs it computes.

:class:`Model` holds what every token touches (its matmul weights) and what reading them
costs, with the config that sizes its KV cache; :func:`llama_3_3_70b` is the essay's example.
Chapter 3's decode step and the mixed steps of chapters 6 to 10 take it.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Mapping

import numpy as np

from .. import catalog
from ..kvcache import dtype_bytes, kv_bytes_per_token, kv_cache_bytes
from ..models import dense_params, load_config, require_int
from ..units import require_positive


@dataclass(frozen=True)
class Model:
    """What a decode step of one model reads and computes.

    ``params``: parameters every token touches (its matmul weights); ``weight_bytes``:
    what reading them once costs; ``config``: the Hugging Face config, for the KV cache
    (via :func:`napkin.kv_cache_bytes`) and the attention FLOPs, parsed once into an
    :class:`~napkin.models.Architecture` when the model is made.
    """

    name: str
    params: float
    weight_bytes: float
    config: Mapping
    kv_dtype_bytes: float = 2.0

    def __post_init__(self):
        object.__setattr__(self, "config", load_config(self.config))
        require_positive("params", self.params)
        require_positive("weight_bytes", self.weight_bytes)
        require_positive("kv_dtype_bytes", self.kv_dtype_bytes)

    @classmethod
    def from_config(cls, config: Mapping | str | Path, name: str, bytes_per_weight: float = 2.0,
                    kv_dtype_bytes: float = 2.0, params: float | None = None) -> "Model":
        """A dense llama-style model; parameters counted from the config unless given."""
        cfg = load_config(config)
        n = dense_params(cfg) if params is None else require_positive("params", params)
        return cls(name=name, params=n,
                   weight_bytes=n * require_positive("bytes_per_weight", bytes_per_weight),
                   config=cfg, kv_dtype_bytes=kv_dtype_bytes)

    @classmethod
    def from_catalog(cls, name: str, weight_format: str, kv_dtype="f16") -> "Model":
        """A model of ``data/models`` as a decode step sees it: FLOPs from the parameters a
        token uses (the active ones of a mixture of experts), bytes from all its weights at
        ``weight_format`` (a large batch touches every expert), its cache at ``kv_dtype``."""
        return cls(name=name, params=catalog.params(name, active=True),
                   weight_bytes=catalog.weight_bytes(name, weight_format),
                   config=catalog.config(name), kv_dtype_bytes=float(dtype_bytes(kv_dtype)))

    @property
    def bytes_per_weight(self) -> float:
        return self.weight_bytes / self.params

    @property
    def query_groups(self) -> int:
        """Query heads per KV head: how often each cached K and V element is used."""
        return require_int(self.config, "num_attention_heads") // self.config.kv_heads

    def kv_bytes_per_token(self) -> int:
        return kv_bytes_per_token(self.config, self.kv_dtype_bytes)

    def kv_bytes(self, context_tokens: int, batch: int = 1) -> int:
        """Cache bytes a decode step reads for ``batch`` sequences at ``context_tokens``."""
        return kv_cache_bytes(self.config, context_tokens, batch, self.kv_dtype_bytes)

    def attention_flops(self, context_tokens: int) -> float:
        """FLOPs of one query token's attention over its cache (QK and AV): every cached
        element is multiplied and added once per query head that shares it."""
        elements = self.kv_bytes(context_tokens) / self.kv_dtype_bytes
        return 2.0 * self.query_groups * elements


#: Llama 3.3 70B's architecture, the essay's example model: the fields of its row in the
#: research notes' ``model_configs.csv`` (from the oumi recipe README, :data:`LLAMA_3_3_70B_SOURCE`,
#: and Meta's model card, github.com/meta-llama/llama-models at a9c89c4,
#: models/llama3_3/MODEL_CARD.md), written as the Hugging Face ``config.json`` keys the
#: library reads.
LLAMA_3_3_70B = {
    "model_type": "llama", "num_hidden_layers": 80, "hidden_size": 8192,
    "num_attention_heads": 64, "num_key_value_heads": 8, "head_dim": 128,
    "intermediate_size": 28672, "vocab_size": 128256, "max_position_embeddings": 131072,
    "tie_word_embeddings": False,
}
LLAMA_3_3_70B_SOURCE = ("https://github.com/oumi-ai/oumi/blob/bd18cd68cdcdb3b1942c9813689c5c3e4d7d"
                        "9977/configs/recipes/llama3_3/README.md")


def llama_3_3_70b(bytes_per_weight: float = 2.0, kv_dtype_bytes: float = 2.0) -> Model:
    """The essay's example model at FP16 weights and cache unless told otherwise."""
    return Model.from_config(LLAMA_3_3_70B, "Llama 3.3 70B", bytes_per_weight, kv_dtype_bytes)


def _count(name: str, value, minimum: int) -> int:
    """A whole number of tokens >= ``minimum``, else a ValueError naming it (the decode
    and mixed steps' check)."""
    if isinstance(value, bool) or not isinstance(value, (int, np.integer)) or value < minimum:
        raise ValueError(f"{name} must be a whole number of tokens >= {minimum}, got {value!r}")
    return int(value)
