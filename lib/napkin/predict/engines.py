"""A serving engine: a model on a tensor-parallel group of chips, with the constants one step
of it needs.

:func:`napkin.deployment.deploy` already decides the memory left for the KV cache and the roof
of the arithmetic the weights run in. An engine adds what a *serving* step needs beyond that:
how many chips share each layer (tensor parallelism, and the all-reduces it costs), the link
those all-reduces cross, and, for a mixture of experts, which weights are routed. The step
arithmetic itself is in :mod:`napkin.predict.step`; it works on :class:`Constants`, the
per-engine numbers laid out as numpy arrays so that thousands of published rows can be
costed at once.

**Links.** An all-reduce among ``tp`` chips moves data over each chip's scale-up link
(``scaleup_link_per_direction_GB_per_s`` in ``hardware_specs.csv``: NVLink, Infinity Fabric,
RoCE, or PCIe where that is all a card has). Behind an NVLink switch, any group gets the whole
figure. AMD's boards and Gaudi 2 are a mesh instead (``data/scaleup_topology.csv``): each
chip has one link to each peer, so a group of ``tp`` uses only ``tp - 1`` of them, and two
MI300X talk over one link of 64 GB/s, not the 448 GB/s of all seven. The PCIe cards with
NVLink (A100 PCIe, H100 PCIe and NVL, H200 NVL) have a bridge instead, which joins two or four
cards: a larger group reaches the others over PCIe, so its all-reduces run at PCIe's speed.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, fields, replace
from typing import Mapping

import numpy as np
import pandas as pd

from .. import catalog, deployment, hardware, kvcache, roofline, tables
from ..models import BITS_PER_WEIGHT, load_config, require_int
from ..units import GB, GiB
from .experts import Experts, layout, param_counts

#: Weight-format spellings accepted besides :data:`napkin.models.BITS_PER_WEIGHT`'s keys.
WEIGHT_ALIASES = {"FP16": "F16", "FP32": "F32", "FLOAT16": "F16", "BFLOAT16": "BF16",
                  "HALF": "F16", "FP8_E4M3": "FP8", "E4M3": "FP8"}
#: KV-cache spellings accepted besides :data:`napkin.kvcache.KV_DTYPE_BYTES`'s keys.
KV_ALIASES = {"fp16": "f16", "fp32": "f32", "float16": "f16", "bfloat16": "bf16", "half": "f16",
              "fp8_e4m3": "fp8", "e4m3": "fp8", "f8": "fp8"}
#: Bytes of one activation element moved by an all-reduce (serving engines keep activations
#: in 16 bits even when weights are FP8 or FP4).
ACTIVATION_BYTES = 2
#: Bytes per activation element of expert parallelism's all-to-all, there and back: tokens
#: go to their experts in FP8 and come back in 16 bits (DeepEP's dispatch and combine).
DISPATCH_BYTES = 1 + 2


def weight_format(name: str) -> str:
    """A weight format's key in :data:`napkin.models.BITS_PER_WEIGHT`, whatever its case
    ("fp16", "F16", "bf16", "FP8", "nvfp4")."""
    key = str(name).strip().upper()
    key = WEIGHT_ALIASES.get(key, key)
    if key not in BITS_PER_WEIGHT:
        raise ValueError(f"unknown weight format {name!r}; known: "
                         f"{', '.join(BITS_PER_WEIGHT)} (any case; fp16 = F16)")
    return key


def kv_format(name) -> str:
    """A KV-cache format's key in :data:`napkin.kvcache.KV_DTYPE_BYTES` ("FP8", "fp16" and
    "f16" all accepted), or bytes per element given as a number."""
    if not isinstance(name, str):
        kvcache.dtype_bytes(name)
        return name
    key = name.strip().lower()
    key = KV_ALIASES.get(key, key)
    kvcache.dtype_bytes(key)  # refuses an unknown name, listing the known ones
    return key


def _count(name: str, value, minimum: int = 1) -> int:
    if isinstance(value, bool) or not isinstance(value, (int, np.integer)) or value < minimum:
        raise ValueError(f"{name} must be a whole number >= {minimum}, got {value!r}")
    return int(value)


def _topology(chip: str):
    """The chip's row of ``data/scaleup_topology.csv``, or None."""
    topology = tables.load("scaleup_topology")
    row = topology[topology["chip"] == chip]
    return None if row.empty else row.iloc[0]


def domain_size(chip: str) -> float:
    """How many chips the scale-up link joins (a board's switch or mesh, a bridge, a rack's
    NVLink domain), from ``data/scaleup_topology.csv``; inf where the table says nothing (any
    group is taken to share one domain)."""
    row = _topology(chip)
    return math.inf if row is None or pd.isna(row["gpus_in_domain"]) else \
        float(row["gpus_in_domain"])


def scaleout_bytes_per_s() -> float:
    """What one GPU sends each way to another server: one 400 Gb/s NIC per GPU
    (``data/serving_links.csv``, as chapter 7's disaggregated cluster)."""
    return float(tables.load("serving_links").iloc[0]["bandwidth_GB_per_s"]) * GB


def link_bytes_per_s(chip: str, tp: int) -> tuple[float, str]:
    """What one chip of a tensor-parallel group of ``tp`` can send each way to the others,
    and the spec it comes from: the scale-up link behind a switch, ``tp - 1`` peer links on a
    mesh (``data/scaleup_topology.csv``), the bridge within a bridged group and PCIe beyond
    it, PCIe where a chip states nothing else."""
    c = hardware.chip(chip)
    if "scaleup_link_per_direction_GB_per_s" in c.specs:
        spec = "scaleup_link_per_direction_GB_per_s"
        bw = c.specs[spec] * GB
    elif "pcie_bidirectional_GB_per_s" in c.specs:
        spec = "pcie_bidirectional_GB_per_s"
        bw = c.specs[spec] / 2 * GB
    else:
        raise ValueError(f"{chip} states no scale-up or PCIe link in hardware_specs.csv, so "
                         "an all-reduce between its chips cannot be costed")
    row = _topology(chip)
    if row is None or tp <= 1 or row["topology"] == "switch":
        return bw, spec
    kind, peer = row["topology"], float(row["peer_link_per_direction_GB_per_s"])
    if kind == "bridge":
        joined = int(row["gpus_in_domain"])
        if tp <= joined:
            return min(bw, peer * GB), f"{spec}, bridge of {joined} (scaleup_topology.csv)"
        if "pcie_bidirectional_GB_per_s" not in c.specs:
            raise ValueError(f"{chip}: a group of {tp} is beyond its bridge of {joined}, and "
                             "hardware_specs.csv states no PCIe link to cost the rest")
        return (c.specs["pcie_bidirectional_GB_per_s"] / 2 * GB,
                f"pcie_bidirectional_GB_per_s, beyond the bridge of {joined} "
                "(scaleup_topology.csv)")
    return min(bw, (tp - 1) * peer * GB), f"{spec}, mesh of {tp} (scaleup_topology.csv)"


@dataclass(frozen=True)
class Engine:
    """One serving engine: ``deployment`` (model, roof of all its chips, cache memory) on
    ``tp`` x ``pp`` x ``dp`` chips of ``chip``: ``tp`` share every layer and all-reduce twice
    per layer over ``link`` bytes/s each way; ``pp`` pipeline stages hold a share of the
    layers; ``dp`` > 1 is data-parallel attention with wide expert parallelism (a mixture of
    experts only): each of ``dp`` chips holds the dense weights and serves its own sequences,
    the routed experts are spread over all of them, and each MoE layer sends every token to
    its experts' chips and back over ``alltoall_bytes_per_s`` (per chip, each way)."""

    deployment: deployment.Deployment
    chip: str
    tp: int
    pp: int
    link_bytes_per_s: float
    link_spec: str
    experts: Experts | None
    total_params: float
    attention_roof_ratio: float = 1.0
    dp: int = 1
    alltoall_bytes_per_s: float = math.inf

    @property
    def model(self) -> roofline.Model:
        return self.deployment.model

    @property
    def n_chips(self) -> int:
        return self.tp * self.pp * self.dp

    @property
    def dense_weight_bytes(self) -> float:
        """Weights every chip of a data-parallel attention group holds: all but the routed
        experts."""
        routed = self.bytes_per_weight * self.experts.routed_params if self.experts else 0.0
        return self.model.weight_bytes - routed

    @property
    def kv_memory_bytes(self) -> float:
        """Cache memory of the whole engine: the deployment's, less the copies of the dense
        weights that data-parallel attention keeps on each of its ``dp`` chips."""
        return self.deployment.kv_memory_bytes - (self.dp - 1) * self.dense_weight_bytes

    @property
    def bytes_per_weight(self) -> float:
        return self.model.weight_bytes / self.total_params

    @property
    def weights(self) -> str:
        return self.deployment.weight_format

    def kv_bytes(self, context_tokens: int) -> float:
        """Cache bytes of one sequence at ``context_tokens`` (windows honoured)."""
        return float(self.model.kv_bytes(int(context_tokens)))

    def max_sequences(self, context_tokens: float) -> int:
        """Sequences of ``context_tokens`` whose caches fit in the engine's cache memory."""
        one = self.kv_bytes(max(1, math.ceil(context_tokens)))
        return int(self.kv_memory_bytes // one)

    @property
    def constants(self) -> "Constants":
        return Constants.of([self])


@tables.cached("models", "models/")
def _catalog_model(name: str, weights: str, kv: str) -> tuple[roofline.Model, float]:
    return deployment.model_of(name, weights, kv), catalog.params(name)


def resolve_model(model, weights: str, kv: str) -> tuple[roofline.Model, float]:
    """The roofline's model and its total parameter count for anything :func:`engine` takes
    as a model, before it is deployed (a draft is sized with it). ``weights`` and ``kv`` are
    keys from :func:`weight_format` and :func:`kv_format`. A book model's counts come from
    the catalog; a config mapping's from :func:`experts.param_counts` (experts honoured)."""
    bpw = BITS_PER_WEIGHT[weights] / 8
    if isinstance(model, roofline.Model):
        moe = layout(model.config)
        total = model.weight_bytes / model.bytes_per_weight if moe is None else \
            param_counts(model.config)[0]
        return model, total
    if isinstance(model, Mapping):
        cfg = load_config(model)
        total, active = param_counts(cfg)
        name = str(cfg.get("_name", "config"))
        return roofline.Model(name=name, params=active, weight_bytes=total * bpw, config=cfg,
                              kv_dtype_bytes=float(kvcache.dtype_bytes(kv))), total
    if not isinstance(model, str):
        deployment.model_of(model, weights, kv)  # refuses anything else, naming what it takes
    return _catalog_model(model, weights, kv)


#: Lookups an engine repeats, made once per version of the tables they read.
_roof = tables.cached("hardware_specs")(roofline.chip_roof)
_overhead_share = tables.cached("serving_papers_claims")(deployment.paper_overhead_share)
_link = tables.cached("hardware_specs", "scaleup_topology")(link_bytes_per_s)


def engine(chip: str, model, *, n_chips: int = 1, weights: str = "fp16", kv: str = "fp16",
           pipeline: int = 1, share_of_chip: float = 1.0, bandwidth_GB_per_s: float | None = None,
           capacity_GiB: float | None = None,
           peer_link_GB_per_s: float | None = None, attention_dp: bool = False) -> Engine:
    """``model`` (a book model name, a Hugging Face config mapping or a roofline Model) on
    ``n_chips`` of ``chip`` in tensor parallel, times ``pipeline`` stages: the deployment of
    :func:`napkin.deployment.deploy` (the chip's roof for the arithmetic the weights run in,
    times the chips; the runtime's share of memory kept back), plus the link.

    The rest describe a measured device the specs table does not hold as such:
    ``share_of_chip`` a device that is part of a chip (an MI250 shows each of its two dies as
    a GPU: 0.5); ``bandwidth_GB_per_s`` and ``capacity_GiB`` a memory variant (an A100 of
    40 GiB); ``peer_link_GB_per_s`` chips joined directly to each other (a mesh) rather than
    through a switch. Bandwidth and capacity are per whole chip, the peer link per device;
    ``data/validation_aliases.csv`` sources each.

    ``attention_dp``: serve a mixture of experts as the large expert-parallel deployments do
    (SGLang, TensorRT-LLM's wide EP): every chip runs attention on its own sequences with a
    copy of the dense weights, and the routed experts are spread over all ``n_chips``
    (:class:`Engine`, ``dp``). Within the scale-up domain (``data/scaleup_topology.csv``)
    the all-to-all runs over the scale-up link, beyond it over one 400 Gb/s NIC per GPU.
    """
    tp = _count("n_chips", n_chips)
    pp = _count("pipeline", pipeline)
    w, k = weight_format(weights), kv_format(kv)
    m, total = resolve_model(model, w, k)
    share = float(share_of_chip)
    if not 0 < share <= 1:
        raise ValueError(f"share_of_chip must be in (0, 1], got {share_of_chip!r}")
    roof = _roof(chip, roofline.arithmetic_for(w, "serving"))
    cap = roof.capacity_bytes if capacity_GiB is None else float(capacity_GiB) * GiB
    if cap is None:
        raise ValueError(f"{chip} has no memory capacity in hardware_specs.csv; give "
                         "capacity_GiB")
    bw = roof.bandwidth_bytes_per_s if bandwidth_GB_per_s is None else \
        float(bandwidth_GB_per_s) * GB
    roof = replace(roof, flops_per_s=roof.flops_per_s * share, bandwidth_bytes_per_s=bw * share,
                   capacity_bytes=cap * share).times(tp * pp)
    dep = deployment.Deployment(name=f"{m.name}, {w} weights, {roof.name}", model=m, roof=roof,
                                weight_format=w, overhead_share=_overhead_share())
    moe = layout(m.config)
    if attention_dp:
        return _data_parallel(dep, chip, tp, pp, moe, total, share,
                              attention_roof_ratio(chip, w, k))
    if tp == 1:
        link, spec = math.inf, "none (one chip)"
    elif peer_link_GB_per_s is not None:
        link, spec = (tp - 1) * float(peer_link_GB_per_s) * GB, f"mesh of {tp}, given peer link"
    else:
        link, spec = _link(chip, tp)
        link *= share
    return Engine(deployment=dep, chip=chip, tp=tp, pp=pp, link_bytes_per_s=link,
                  link_spec=spec, experts=moe, total_params=total,
                  attention_roof_ratio=attention_roof_ratio(chip, w, k))


def _data_parallel(dep, chip: str, n: int, pp: int, moe: Experts | None, total: float,
                   share: float, attention_ratio: float) -> Engine:
    """:func:`engine` with ``attention_dp``: ``n`` chips, each its own attention rank, the
    experts over all of them. Of what a chip sends to the other ``n - 1``, the share bound
    for its own domain crosses the scale-up link and the rest one NIC, both at once."""
    if moe is None:
        raise ValueError(f"{dep.model.name} is dense: data-parallel attention with expert "
                         "parallelism needs a mixture of experts (serve a dense model as "
                         "separate engines instead)")
    if pp != 1:
        raise ValueError("attention_dp takes pipeline=1")
    up, spec = _link(chip, int(min(n, domain_size(chip)))) if n > 1 else (math.inf, "none")
    up *= share
    inside = min(n, domain_size(chip)) - 1
    if n == 1:
        alltoall = math.inf
    else:
        per_byte = max(inside / (n - 1) / up, (n - 1 - inside) / (n - 1) / scaleout_bytes_per_s())
        alltoall = 1.0 / per_byte
    e = Engine(deployment=dep, chip=chip, tp=1, pp=1, link_bytes_per_s=up, link_spec=spec,
               experts=moe, total_params=total, attention_roof_ratio=attention_ratio, dp=n,
               alltoall_bytes_per_s=alltoall)
    if e.kv_memory_bytes <= 0:
        raise ValueError(f"{n} chips of {chip} each holding {dep.model.name}'s dense weights "
                         f"({e.dense_weight_bytes / GiB:,.1f} GiB) and 1/{n} of its experts "
                         "leave no memory for the cache")
    return e


def attention_arithmetic(kv) -> str:
    """The arithmetic attention runs in: FP8 for an FP8 cache (FlashAttention-3 and
    TensorRT-LLM's FP8 attention), 16-bit for any other (engines dequantize to it)."""
    return "fp8" if kv_format(kv) == "fp8" else "fp16"


@tables.cached("hardware_specs")
def attention_roof_ratio(chip: str, weights: str, kv) -> float:
    """Peak of attention's arithmetic over the peak of the weights' (1 when they are the
    same; an FP8 cache on a chip with no FP8 figure runs at the 16-bit rate)."""
    c = hardware.chip(chip)
    arith = attention_arithmetic(kv)
    if not c.has_peak(arith):
        arith = "fp16"
    weights_peak = _roof(chip, roofline.arithmetic_for(weight_format(weights), "serving"))
    return c.peak(arith).flops_per_s / weights_peak.flops_per_s


def engine_of(dep: deployment.Deployment) -> Engine:
    """An engine for a bare :class:`~napkin.deployment.Deployment` from ``deploy()``: its
    chips in one tensor-parallel group (the chip is read from the roof's name)."""
    name = dep.roof.name
    n = dep.roof.n_chips
    chip = name.split(" x ", 1)[1] if n > 1 and " x " in name else name
    link, spec = link_bytes_per_s(chip, n) if n > 1 else (math.inf, "none (one chip)")
    experts = layout(dep.model.config)
    total = param_counts(dep.model.config)[0] if experts else dep.model.params
    kv = {1.0: "fp8", 2.0: "f16", 4.0: "f32"}.get(float(dep.model.kv_dtype_bytes), "f16")
    return Engine(deployment=dep, chip=chip, tp=n, pp=1, link_bytes_per_s=link, link_spec=spec,
                  experts=experts, total_params=total,
                  attention_roof_ratio=attention_roof_ratio(chip, dep.weight_format, kv))


def attention_flops_per_pair(config: Mapping) -> tuple[float, float]:
    """FLOPs of one (query, key) pair in all full layers and in all windowed layers.

    Grouped-query attention: each cached K and V element is multiplied and added once per
    query head sharing it, ``2 g e`` (as :func:`napkin.roofline.step_work` counts). Multi-head
    latent attention (DeepSeek) caches one latent per token that *every* head reads twice,
    for its keys (latent and rope parts) and its values (latent): ``2 h (2 r + r_rope)`` per
    layer, far more than the cached elements suggest.
    """
    cfg = load_config(config)
    form = kvcache.linear_form(cfg)
    if cfg.get("kv_lora_rank") is not None:
        heads = require_int(cfg, "num_attention_heads")
        per_layer = 2.0 * heads * (2 * require_int(cfg, "kv_lora_rank")
                                   + require_int(cfg, "qk_rope_head_dim"))
        per_token = require_int(cfg, "kv_lora_rank") + require_int(cfg, "qk_rope_head_dim")
        return (per_layer * form.full_elements_per_token / per_token,
                per_layer * form.windowed_elements_per_token / per_token)
    heads = require_int(cfg, "num_attention_heads")
    groups = heads // require_int(cfg, "num_key_value_heads", default=heads)
    return (2.0 * groups * form.full_elements_per_token,
            2.0 * groups * form.windowed_elements_per_token)


@dataclass(frozen=True)
class Constants:
    """What one step of each engine costs per unit of work, one array element per engine
    (or per published row): every field is a numpy array of the same length."""

    dense_weight_bytes: np.ndarray    # read every step: all but the routed experts
    expert_bytes: np.ndarray          # one routed expert, in every MoE layer
    routed: np.ndarray                # routed experts per MoE layer (0: dense)
    top_k: np.ndarray
    flops_per_token: np.ndarray       # 2 x active parameters
    flops_per_pair_full: np.ndarray
    flops_per_pair_window: np.ndarray
    kv_bytes_full: np.ndarray         # cache bytes per token, full layers
    kv_bytes_window: np.ndarray       # cache bytes per token, windowed layers
    window: np.ndarray                # tokens (inf: none)
    flops_per_s: np.ndarray           # the whole engine's roof for its weights' arithmetic
    attention_flops_per_s: np.ndarray  # ... and for its cache's (attention)
    bandwidth_bytes_per_s: np.ndarray
    tp: np.ndarray
    pp: np.ndarray
    link_bytes_per_s: np.ndarray      # per chip, per direction
    allreduce_bytes_per_token: np.ndarray  # hidden x activation bytes
    allreduces: np.ndarray            # per step: two per layer
    kv_memory_bytes: np.ndarray
    layers: np.ndarray
    routed_flops_per_token: np.ndarray  # the routed experts' share of flops_per_token
    expert_share: np.ndarray          # top_k / routed: a routed expert's share of the tokens
    stack_efficiency: np.ndarray      # the serving software's share of the peaks, relative
    stack_overhead: np.ndarray        # ... and its fixed per-layer costs (software.Stack)
    dp: np.ndarray                    # data-parallel attention ranks (1: tensor parallel)
    moe_layers: np.ndarray            # layers with routed experts (an all-to-all each)
    dispatch_bytes_per_token: np.ndarray  # to one chosen expert and back: hidden x (1 + 2)
    alltoall_bytes_per_s: np.ndarray  # per chip, each way, what the all-to-all reaches
    verify_tokens: np.ndarray         # tokens a decode step runs per sequence (1 + drafts)
    accepted_tokens: np.ndarray       # ... and how many of them it keeps, on average

    @classmethod
    def of(cls, engines) -> "Constants":
        rows = [_constants(e) for e in engines]
        return cls(**{f.name: np.array([r[f.name] for r in rows], dtype=float)
                      for f in fields(cls)})

    def take(self, index) -> "Constants":
        """The constants of the engines at ``index`` (repeats allowed)."""
        return Constants(**{f.name: getattr(self, f.name)[index] for f in fields(self)})

    def __len__(self) -> int:
        return len(self.tp)


def on_roof(model: roofline.Model, roof: roofline.Roof) -> Constants:
    """The step constants of ``model`` on one device of ``roof``, a roof the specs table need
    not hold (a reader's machine as measured: llama.cpp's prefill rate and the memory probe):
    nothing shared between chips, attention at the roof's own rate, and no cache budget (a
    step's cost needs none). Chapter 10 prices its live steps with it."""
    moe = layout(model.config)
    total = param_counts(model.config)[0] if moe else model.params
    row = _step_constants(model, roof, model.weight_bytes / total, moe, tp=1, pp=1,
                          link_bytes_per_s=math.inf, kv_memory_bytes=math.nan,
                          attention_roof_ratio=1.0)
    return Constants(**{f.name: np.array([row[f.name]], dtype=float) for f in fields(Constants)})


def _constants(e: Engine) -> dict:
    row = _step_constants(e.model, e.deployment.roof, e.bytes_per_weight, e.experts, tp=e.tp,
                          pp=e.pp, link_bytes_per_s=e.link_bytes_per_s,
                          kv_memory_bytes=e.kv_memory_bytes,
                          attention_roof_ratio=e.attention_roof_ratio)
    row.update(dp=e.dp, alltoall_bytes_per_s=e.alltoall_bytes_per_s)
    return row


def _step_constants(model: roofline.Model, roof: roofline.Roof, b: float, moe: Experts | None, *,
                    tp: int, pp: int, link_bytes_per_s: float, kv_memory_bytes: float,
                    attention_roof_ratio: float) -> dict:
    """One engine's :class:`Constants` as numbers: ``b`` bytes per weight, ``moe`` its routed
    experts (None: dense)."""
    cfg = model.config
    form = kvcache.linear_form(cfg)
    kvb = float(model.kv_dtype_bytes)
    routed_bytes = b * moe.routed_params if moe else 0.0
    pair_full, pair_window = attention_flops_per_pair(cfg)
    return {
        "dense_weight_bytes": model.weight_bytes - routed_bytes,
        "expert_bytes": b * moe.moe_layers * moe.params_per_expert if moe else 0.0,
        "routed": moe.routed if moe else 0, "top_k": moe.top_k if moe else 0,
        "flops_per_token": 2.0 * model.params,
        "flops_per_pair_full": pair_full, "flops_per_pair_window": pair_window,
        "kv_bytes_full": form.full_elements_per_token * kvb,
        "kv_bytes_window": form.windowed_elements_per_token * kvb,
        "window": float(form.window) if form.window else math.inf,
        "flops_per_s": roof.flops_per_s,
        "attention_flops_per_s": roof.flops_per_s * attention_roof_ratio,
        "bandwidth_bytes_per_s": roof.bandwidth_bytes_per_s,
        "tp": tp, "pp": pp, "link_bytes_per_s": link_bytes_per_s,
        "allreduce_bytes_per_token": require_int(cfg, "hidden_size") * ACTIVATION_BYTES,
        "allreduces": 2 * require_int(cfg, "num_hidden_layers"),
        "kv_memory_bytes": kv_memory_bytes,
        "layers": require_int(cfg, "num_hidden_layers"),
        "routed_flops_per_token": 2.0 * moe.active_routed_params if moe else 0.0,
        "expert_share": moe.top_k / moe.routed if moe else 1.0,
        "stack_efficiency": 1.0, "stack_overhead": 1.0,
        "dp": 1, "moe_layers": moe.moe_layers if moe else 0,
        "dispatch_bytes_per_token": require_int(cfg, "hidden_size") * DISPATCH_BYTES,
        "alltoall_bytes_per_s": math.inf, "verify_tokens": 1, "accepted_tokens": 1,
    }
