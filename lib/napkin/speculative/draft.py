"""What drafts the tokens, and what drafting one costs.

Three kinds of draft, all priced by the same calibrated step model as the target
(:mod:`napkin.predict.step`):

- a **head** that reuses the target's own hidden states: EAGLE's single decoder layer, or
  DeepSeek-V3's multi-token-prediction (MTP) module. It is built here from the target's
  config: ``layers`` decoder layers like the target's (for a mixture of experts, with the
  same routed experts), a fusion matrix of ``fusion_inputs`` x hidden by hidden (EAGLE feeds
  the target's features and the token's embedding, two inputs; EAGLE-3 fuses three layers'
  features; DeepSeek's MTP projects two), and a language-model head over the vocabulary,
  read at every draft step, over a reduced draft vocabulary where the head's configuration
  has one, as EAGLE-3's does (:func:`eagle3_for` reads it from
  ``data/speculative_drafts.csv``);
- a separate small **model** (classic speculative sampling): a book model or a config on
  the same chips;
- a **share**: a draft step that costs a fixed share of a plain target step at the same
  batch and depth, the in-page chart's slider.

Chains draft one token per pass (``k`` passes per cycle); a ``parallel`` draft (Medusa's
heads) proposes all ``k`` in one pass. A draft as large as the target is refused: it would
cost more than it saves whatever it guessed.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, replace

import numpy as np
import pandas as pd

from .. import tables
from ..models import require_int
from ..predict import engines
from ..predict.engines import Constants, Engine

__all__ = ["configured", "constants", "Draft", "DRAFTS_TABLE", "eagle", "eagle3_for",
           "head_params", "KINDS", "model", "mtp", "share", "weight_share"]

KINDS = ("head", "model", "share")
#: What drafts are, where the book prices them from their configuration (``data/``).
DRAFTS_TABLE = "speculative_drafts"


@dataclass(frozen=True)
class Draft:
    """One way of drafting; build it with :func:`eagle`, :func:`mtp`, :func:`model` or
    :func:`share`."""

    name: str
    kind: str
    layers: int = 0            # head: decoder layers like the target's
    fusion_inputs: int = 0     # head: inputs of the fusion matrix (each hidden wide)
    model: object = None       # model: a book model name or a config mapping
    weights: str | None = None  # model: its weight format (None: the target's)
    fraction: float = 0.0      # share: a draft step over a plain target step
    parallel: bool = False     # all k drafted tokens in one pass (Medusa) instead of k passes
    draft_vocab: int | None = None  # head: a reduced output vocabulary (None: the target's)

    def __post_init__(self):
        if self.kind not in KINDS:
            raise ValueError(f"draft kind must be one of {', '.join(KINDS)}, got {self.kind!r}")
        if self.kind == "head":
            if isinstance(self.layers, bool) or not isinstance(self.layers, int) or \
                    self.layers < 1:
                raise ValueError(f"a head draft has a whole number of layers >= 1, got "
                                 f"{self.layers!r}")
            if isinstance(self.fusion_inputs, bool) or not isinstance(self.fusion_inputs, int) \
                    or self.fusion_inputs < 0:
                raise ValueError(f"fusion_inputs must be a whole number >= 0, got "
                                 f"{self.fusion_inputs!r}")
        if self.draft_vocab is not None and (isinstance(self.draft_vocab, bool) or not
                                             isinstance(self.draft_vocab, int) or
                                             self.draft_vocab < 1):
            raise ValueError(f"draft_vocab must be a whole number of tokens >= 1 (or None for "
                             f"the target's vocabulary), got {self.draft_vocab!r}")
        if self.kind == "share" and not (isinstance(self.fraction, (int, float)) and
                                         not isinstance(self.fraction, bool) and
                                         0 <= self.fraction <= 1):
            raise ValueError(f"a draft step's share of a target step must be in [0, 1] (a draft "
                             f"costlier than the target is larger than it), got "
                             f"{self.fraction!r}")
        if self.kind == "model" and self.model is None:
            raise ValueError("a model draft needs its model (a book model name or a config)")

    def passes(self, k: int) -> int:
        """Draft passes per cycle of ``k`` drafted tokens."""
        return 1 if self.parallel else k


def eagle(version: int = 1, draft_vocab: int | None = None) -> Draft:
    """EAGLE's draft head: one decoder layer over the target's features and the token's
    embedding (two inputs), or, for EAGLE-3, over features fused from three layers; its
    output head over ``draft_vocab`` tokens (None: the target's whole vocabulary)."""
    if version not in (1, 2, 3):
        raise ValueError(f"EAGLE versions are 1, 2 and 3, got {version!r}")
    return Draft(name=f"EAGLE-{version} head" if version > 1 else "EAGLE head", kind="head",
                 layers=1, fusion_inputs=3 if version == 3 else 2, draft_vocab=draft_vocab)


def configured(draft: str, target_model: str, parameter: str) -> float:
    """A draft's configuration as its published files state it (``data/speculative_drafts.csv``:
    ``target_model`` ``"any"`` for a draft that needs no training)."""
    df = tables.load(DRAFTS_TABLE)
    hit = df[(df["draft"] == draft) & df["target_model"].isin([target_model, "any"]) &
             (df["parameter"] == parameter)]
    if len(hit) != 1:
        raise ValueError(f"no single {parameter!r} for draft {draft!r} with target "
                         f"{target_model!r} in data/{DRAFTS_TABLE}.csv (found {len(hit)})")
    return float(pd.to_numeric(hit["value"]).iloc[0])


def eagle3_for(model: str) -> Draft:
    """The EAGLE-3 head the EAGLE-3 paper ran for ``model``, with the output vocabulary its
    configuration states."""
    return eagle(3, draft_vocab=int(configured("EAGLE-3 head", model, "draft_vocab_size")))


def mtp() -> Draft:
    """DeepSeek-V3's multi-token-prediction module as a draft: one decoder layer of the
    target's kind and a projection of two hidden-wide inputs, sharing the output head."""
    return Draft(name="MTP module", kind="head", layers=1, fusion_inputs=2)


def model(name_or_config, weights: str | None = None) -> Draft:
    """A separate draft model on the target's chips (``weights``: the target's format when
    None)."""
    label = name_or_config if isinstance(name_or_config, str) else \
        str(dict(name_or_config).get("_name", "draft config"))
    return Draft(name=f"{label} draft", kind="model", model=name_or_config, weights=weights)


def share(fraction: float, parallel: bool = False) -> Draft:
    """A draft step costing ``fraction`` of a plain target step (the same batch and depth)."""
    d = Draft(name="share draft", kind="share", fraction=fraction, parallel=parallel)
    return replace(d, name=f"draft at {d.fraction:.0%} of a step")


def head_params(target: Engine, draft: Draft) -> dict:
    """Parameters of a head draft of ``target``: its layers (the target's average layer), the
    fusion matrix and the output head; ``active`` counts the routed experts one token uses."""
    cfg = target.model.config
    layers = require_int(cfg, "num_hidden_layers")
    hidden = require_int(cfg, "hidden_size")
    vocab = require_int(cfg, "vocab_size")
    if draft.layers >= layers:  # with its output head and fusion it would outweigh the target
        raise ValueError(f"a head of {draft.layers} layers is larger than the target allows "
                         f"({layers} layers in all, and a head adds an output head); a draft "
                         "must be smaller than what it drafts for")
    embeddings = vocab * hidden * (1 if cfg.get("tie_word_embeddings") else 2)
    extra = (draft.draft_vocab or vocab) * hidden + draft.fusion_inputs * hidden * hidden
    active_layer = (target.model.params - embeddings) / layers
    total_layer = (target.total_params - embeddings) / layers
    return {"active": draft.layers * active_layer + extra,
            "total": draft.layers * total_layer + extra, "layers_of": layers}


def _head_constants(target: Engine, draft: Draft) -> Constants:
    """The target's constants cut down to the head: its layers (the dense bytes of the
    target's average layer, the routed experts of one MoE layer), the fusion matrix and the
    output head, one layer's share of the cache and of attention, two all-reduces a layer."""
    c = target.constants
    p = head_params(target, draft)
    cfg = target.model.config
    layers = p["layers_of"]
    vocab, hidden = require_int(cfg, "vocab_size"), require_int(cfg, "hidden_size")
    bpw = target.bytes_per_weight
    embeddings = vocab * hidden * (1 if cfg.get("tie_word_embeddings") else 2) * bpw
    per_layer_dense = (c.dense_weight_bytes - embeddings) / layers
    extra_bytes = ((draft.draft_vocab or vocab) * hidden +
                   draft.fusion_inputs * hidden * hidden) * bpw
    moe_layers = target.experts.moe_layers if target.experts else 1
    part = draft.layers / layers
    return replace(
        c, dense_weight_bytes=draft.layers * per_layer_dense + extra_bytes,
        expert_bytes=c.expert_bytes * draft.layers / moe_layers,
        flops_per_token=np.full_like(c.flops_per_token, 2.0 * p["active"]),
        flops_per_pair_full=c.flops_per_pair_full * part,
        flops_per_pair_window=c.flops_per_pair_window * part,
        kv_bytes_full=c.kv_bytes_full * part, kv_bytes_window=c.kv_bytes_window * part,
        allreduces=np.full_like(c.allreduces, 2.0 * draft.layers))


def constants(target: Engine, draft: Draft) -> Constants:
    """The step constants of ``draft`` beside ``target`` (not for a share draft, which has
    none of its own). A draft whose weights are not smaller than the target's is refused."""
    if draft.kind == "share":
        raise ValueError("a share draft is priced as a share of the target's step; it has no "
                         "step constants of its own")
    if draft.kind == "head":
        out = _head_constants(target, draft)
        _smaller(target, draft, float(out.dense_weight_bytes[0] + out.expert_bytes[0] *
                                      (target.experts.routed if target.experts else 0)))
        return out
    weights, kv = engines.weight_format(draft.weights or target.weights), _kv_of(target)
    # sized before it is deployed: a draft too large for the chips should say it is too large
    _smaller(target, draft,
             engines.resolve_model(draft.model, weights, engines.kv_format(kv))[0].weight_bytes)
    return engines.engine(target.chip, draft.model, n_chips=target.tp, weights=weights,
                          kv=kv).constants


def _smaller(target: Engine, draft: Draft, size: float) -> None:
    if size > target.model.weight_bytes:
        raise ValueError(f"the draft ({draft.name}, {size / 1e9:,.2f} GB of weights) is larger "
                         f"than the target ({target.model.weight_bytes / 1e9:,.2f} GB); a draft "
                         "must cost less than what it drafts for")


def weight_share(target: Engine, draft: Draft) -> float:
    """The draft's weights over the target's: what a memory-bound draft step costs beside a
    memory-bound plain step when both read only weights (batch 1, short context; a mixture of
    experts reads only the experts one token chose, in both)."""
    if draft.kind == "share":
        return draft.fraction
    c = constants(target, draft)
    t = target.constants
    from ..predict.experts import expected_distinct

    one = lambda k: float(k.dense_weight_bytes[0] + k.expert_bytes[0] *  # noqa: E731
                          expected_distinct(k.routed[0], k.top_k[0], 1))
    return one(c) / one(t)


def _kv_of(target: Engine) -> str:
    kv = float(target.model.kv_dtype_bytes)
    return {1.0: "fp8", 2.0: "f16", 4.0: "f32"}.get(kv, "f16") if not math.isnan(kv) else "f16"
