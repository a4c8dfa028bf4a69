"""What a workload's model computes and reads: the FLOPs of a prompt and of a decode step,
and the bytes of its weights at a format.

FLOPs follow one convention with the reference runs (:func:`napkin.phases.layer_params`):
2 per layer weight per token, plus attention. The input embedding is a lookup, so it never
counts; the output layer runs for a prompt's last token only (negligible, left out) and
for every decoded token. A model whose layers cannot be counted that way (compressed MLA
attention) is counted by the catalog's active parameters instead.
"""

from __future__ import annotations

from .. import catalog, kvcache, phases, roofline
from .workload import KV_DTYPE, Workload


def matmul_params(model: str) -> tuple[float, float]:
    """Weights a token multiplies: (per prompt token, per decoded token)."""
    cfg = catalog.config(model)
    try:
        layers = phases.layer_params(cfg)
    except ValueError:  # compressed MLA attention: the catalog's count stands for both
        active = catalog.params(model, active=True)
        return active, active
    head = float(cfg["vocab_size"] * cfg["hidden_size"])
    return layers, layers + head


def _model(model: str, params: float, weight_bytes: float = 1.0) -> roofline.Model:
    return roofline.Model(name=model, params=params, weight_bytes=weight_bytes,
                          config=catalog.config(model),
                          kv_dtype_bytes=float(kvcache.dtype_bytes(KV_DTYPE)))


def prompt_flops(model: str, tokens: int, depth: int = 0) -> float:
    """FLOPs of a prompt of ``tokens`` after ``depth`` tokens already cached."""
    return roofline.step_work(_model(model, matmul_params(model)[0]),
                              prefill=[(depth, tokens)]).flops


def model_for(workload: Workload) -> tuple[roofline.Model, float, float]:
    """The workload's model for a decode step (FLOPs from the weights a decoded token
    multiplies, the cache from its config), and its total and active weight bytes at the
    chosen format."""
    total = catalog.weight_bytes(workload.model, workload.weight_format)
    active = catalog.weight_bytes(workload.model, workload.weight_format, active=True)
    return _model(workload.model, matmul_params(workload.model)[1], total), total, active
