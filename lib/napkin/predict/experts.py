"""Mixture of experts: which weights one step of a serving engine actually reads.

A dense model reads every weight once per step, whatever the batch. A mixture of experts
routes each token to ``k`` of the ``E`` experts of every MoE layer, so a step of ``n``
tokens reads the experts *some* token chose: one token reads ``k``, a large batch reads all
``E``, and in between the count is what matters for the bytes of a decode step. With routing
spread evenly over the experts (each token picks ``k`` distinct experts, independently of
the other tokens), an expert is missed by one token with probability ``1 - k/E``, so

    expected distinct experts = E (1 - (1 - k/E) ** n).

Real routers are not uniform (popular experts are hit more often), which makes the true count
smaller: the formula is the most a router spreading load evenly can read, and the one a
serving engine's load balancing aims at. ``tests/test_predict.py`` checks it against a
seeded simulation of that routing.

Parameter counts come from the book's catalog for its own models; for a Hugging Face config
given directly, :func:`param_counts` counts them (Mixtral and DeepSeek-V3 conventions,
multi-head latent attention included).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Mapping

import numpy as np

from ..models import dense_params, head_dim, load_config, require_int


@dataclass(frozen=True)
class Experts:
    """The routed experts of a model: ``routed`` per MoE layer, ``top_k`` chosen per token,
    ``params_per_expert`` weights in one expert of one layer, over ``moe_layers`` layers.
    Shared experts are not routed: they count as dense weights, read every step."""

    moe_layers: int
    routed: int
    top_k: int
    params_per_expert: float

    @property
    def routed_params(self) -> float:
        """Weights of every routed expert of every MoE layer."""
        return self.moe_layers * self.routed * self.params_per_expert

    @property
    def active_routed_params(self) -> float:
        """Routed weights one token uses."""
        return self.moe_layers * self.top_k * self.params_per_expert


def expected_distinct(routed, top_k, tokens):
    """Expected number of distinct experts (of ``routed`` in one layer) that ``tokens``
    tokens choose when each picks ``top_k`` of them uniformly: ``E (1 - (1 - k/E)^n)``.
    Works on numpy arrays; ``routed`` of 0 (a dense model) gives 0."""
    e = np.asarray(routed, dtype=float)
    k = np.asarray(top_k, dtype=float)
    n = np.asarray(tokens, dtype=float)
    if np.any(n < 0):
        raise ValueError(f"tokens must be >= 0, got {tokens!r}")
    if np.any(k > e):
        raise ValueError(f"top_k ({top_k!r}) cannot exceed the routed experts ({routed!r})")
    with np.errstate(divide="ignore", invalid="ignore"):
        miss = np.where(e > 0, 1.0 - k / np.where(e > 0, e, 1.0), 1.0)
    return e * (1.0 - miss ** n)


def layout(config: Mapping) -> Experts | None:
    """The routed experts a config declares, or None for a dense model.

    Mixtral and gpt-oss: ``num_local_experts`` experts of ``intermediate_size`` in every
    layer; DeepSeek-V2/V3: ``n_routed_experts`` of ``moe_intermediate_size`` in all but the
    first ``first_k_dense_replace`` layers; Qwen MoE: ``num_experts`` of
    ``moe_intermediate_size``. Each expert is a gated MLP: three matrices of hidden x width.
    """
    cfg = load_config(config)
    routed_key = next((k for k in ("num_local_experts", "n_routed_experts", "num_experts")
                       if cfg.get(k)), None)
    if routed_key is None:
        return None
    routed = require_int(cfg, routed_key)
    top_k = require_int(cfg, "num_experts_per_tok")
    if top_k > routed:
        raise ValueError(f"config field 'num_experts_per_tok' ({top_k}) exceeds "
                         f"{routed_key!r} ({routed})")
    width_key = "moe_intermediate_size" if cfg.get("moe_intermediate_size") else \
        "intermediate_size"
    width = require_int(cfg, width_key)
    hidden = require_int(cfg, "hidden_size")
    layers = require_int(cfg, "num_hidden_layers")
    dense_first = require_int(cfg, "first_k_dense_replace", minimum=0, default=0)
    return Experts(moe_layers=layers - dense_first, routed=routed, top_k=top_k,
                   params_per_expert=3.0 * hidden * width)


def _attention_params(cfg: Mapping) -> float:
    """Attention weights of one layer: multi-head latent attention (DeepSeek) or the usual
    query, key, value and output projections (GQA, MQA, MHA)."""
    hidden = require_int(cfg, "hidden_size")
    heads = require_int(cfg, "num_attention_heads")
    if cfg.get("kv_lora_rank") is not None:
        rope = require_int(cfg, "qk_rope_head_dim")
        nope = require_int(cfg, "qk_nope_head_dim")
        v_dim = require_int(cfg, "v_head_dim")
        latent = require_int(cfg, "kv_lora_rank")
        q_rank = cfg.get("q_lora_rank")
        q = heads * (nope + rope)
        query = hidden * q if not q_rank else hidden * int(q_rank) + int(q_rank) * q + int(q_rank)
        kv = hidden * (latent + rope) + latent * heads * (nope + v_dim) + latent
        return query + kv + heads * v_dim * hidden
    kv_heads = require_int(cfg, "num_key_value_heads", default=heads)
    return hidden * head_dim(cfg) * (2 * heads + 2 * kv_heads)


def param_counts(config: Mapping) -> tuple[float, float]:
    """(total, active) parameters of a config: counted as :func:`napkin.models.dense_params`
    does for a dense model; for a mixture of experts, attention and norms in every layer, a
    dense MLP of ``intermediate_size`` in the first dense layers, the routed experts (all of
    them for the total, ``top_k`` for the active count), the shared experts and router, and
    the embeddings."""
    cfg = load_config(config)
    moe = layout(cfg)
    if moe is None:
        n = float(dense_params(cfg))
        return n, n
    hidden = require_int(cfg, "hidden_size")
    layers = require_int(cfg, "num_hidden_layers")
    vocab = require_int(cfg, "vocab_size")
    dense_layers = layers - moe.moe_layers
    shared = require_int(cfg, "n_shared_experts", minimum=0, default=0)
    shared_width = cfg.get("shared_expert_intermediate_size") or (
        shared * require_int(cfg, "moe_intermediate_size") if shared else 0)
    per_moe_layer = 3.0 * hidden * shared_width + hidden * moe.routed  # shared experts, router
    base = (layers * (_attention_params(cfg) + 2 * hidden)
            + dense_layers * 3.0 * hidden * require_int(cfg, "intermediate_size")
            + moe.moe_layers * per_moe_layer + hidden
            + vocab * hidden * (1 if cfg.get("tie_word_embeddings") else 2))
    return base + moe.routed_params, base + moe.active_routed_params
