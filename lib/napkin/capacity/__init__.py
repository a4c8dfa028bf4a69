"""What fits where: KV caches beside the weights, in every unit people quote them in.

The questions of chapter 4: how big is a model's cache per token and at its full
context, how many sequences of a given length fit on a chip beside the weights,
and at what context the memory, not the bandwidth, starts to set the batch size.
Every figure is computed from ``data/models`` and ``data/hardware_specs.csv``.
"""

from __future__ import annotations

import math
from dataclasses import replace

import numpy as np
import pandas as pd

from .. import catalog, hardware, kvcache, roofline
from ..units import GB, KB, MB, GiB, KiB, MiB

__all__ = ["attention_ridge", "batch_limit_curves", "calculator_rows", "calibrated_turn",
           "roofline_turn", "chip_display", "chip_table", "CHIPS", "CONTEXTS", "DATACENTER",
           "extra_sequence_cost", "in_units", "max_batch_grid", "max_batch_table", "model_display",
           "model_table", "naive_kv_cache_bytes", "roof_of", "units_display", "units_table",
           "WEIGHTS"]

#: The chips the chapter sizes caches for, by their book names.
CHIPS = ("H100 SXM", "H200", "B200", "M2 Ultra", "DGX Spark")
#: Datacenter chips whose roofline crossover the capacity chart draws.
DATACENTER = ("H100 SXM", "H200", "B200")
#: Context lengths of the capacity table (tokens per sequence).
CONTEXTS = (4096, 8192, 32768, 131072)
#: Weights are counted at 8 bits (FP8) everywhere, so models compare on architecture.
WEIGHTS = "FP8"


def in_units(n_bytes: float) -> dict[str, float]:
    """One byte count in every unit a published figure might use."""
    return {"bytes": n_bytes, "KiB": n_bytes / KiB, "KB": n_bytes / KB,
            "MiB": n_bytes / MiB, "MB": n_bytes / MB, "GiB": n_bytes / GiB, "GB": n_bytes / GB}


def units_table(config, cases: list[tuple[str, int, int]], kv_dtype="f16") -> pd.DataFrame:
    """(label, tokens per sequence, sequences) -> the cache in bytes, KiB..GiB and KB..GB."""
    rows = []
    for label, tokens, batch in cases:
        size = kvcache.kv_cache_bytes(config, tokens, batch, kv_dtype)
        rows.append({"case": label, "context_tokens": tokens, "batch": batch, **in_units(size)})
    return pd.DataFrame(rows)


def model_table(kv_dtype="f16") -> pd.DataFrame:
    """Every model in ``data/models``: its cache per token and at its full context."""
    rows = []
    for _, r in catalog.index().iterrows():
        cfg = catalog.config(r["model"])
        form = kvcache.linear_form(cfg)
        context = kvcache.max_context_tokens(cfg)
        if cfg.get("kv_lora_rank") is not None:
            layout = (f"MLA: latent {cfg['kv_lora_rank']} + rope key "
                      f"{cfg['qk_rope_head_dim']} per layer")
        else:
            heads, kv = cfg["num_attention_heads"], cfg.get("num_key_value_heads",
                                                           cfg["num_attention_heads"])
            kind = "MHA" if kv == heads else "MQA" if kv == 1 else f"GQA {heads}:{kv}"
            layout = f"{kind}, head_dim {kvcache.head_dim(cfg)}"
        if form.window:
            windowed = sum(1 for layer in kvcache.layers(cfg) if layer.window)
            layout += (f"; {windowed} of {cfg['num_hidden_layers']} layers windowed "
                       f"({form.window:,} tokens)")
        rows.append({
            "model": r["model"], "layout": layout, "layers": cfg["num_hidden_layers"],
            "kv_per_token_bytes": kvcache.kv_bytes_per_token(cfg, kv_dtype),
            "context_tokens": context,
            # kvcache.max_context_tokens falls back to the config's position limit where the
            # model card's served context is not recorded
            "context_basis": "served" if cfg.get("_max_context_tokens") is not None
            else "config position limit",
            "kv_at_context_bytes": kvcache.kv_cache_bytes(cfg, context, 1, kv_dtype),
            "naive_at_context_bytes": naive_kv_cache_bytes(cfg, context, 1, kv_dtype),
            "source_url": r["source_url"],
        })
    return pd.DataFrame(rows)


def naive_kv_cache_bytes(config, n_tokens: int, batch: int = 1, kv_dtype="f16") -> int:
    """What a calculator that knows only ``hidden_size`` computes: K and V as wide as the
    hidden state in every layer for every token (no GQA, no head_dim, no windows, no MLA).
    Shown beside :func:`napkin.kv_cache_bytes` to make its corrections visible."""
    cfg = kvcache.load_config(config)
    hidden = kvcache.require_int(cfg, "hidden_size")
    layers = kvcache.require_int(cfg, "num_hidden_layers")
    return int(2 * hidden * layers * n_tokens * batch * kvcache.dtype_bytes(kv_dtype))


def chip_table(chips=CHIPS) -> pd.DataFrame:
    """Capacity (binary, as the vendor states it) and bandwidth of each chip, with sources,
    and the memory its GPU may use by default: all of it, except on a Mac, where macOS caps
    the GPU's share (:meth:`napkin.hardware.Chip.gpu_share`; a serving chapter counts its
    own overheads, so no operating system's reserve)."""
    rows = []
    for name in chips:
        chip = hardware.chip(name)
        if chip.capacity_spec is None:
            raise ValueError(f"{name}: no memory capacity in hardware_specs.csv")
        share, basis = chip.gpu_share(os_reserve=False)
        rows.append({"chip": name, "capacity_bytes": chip.capacity_bytes,
                     "capacity_spec": chip.capacity_spec,
                     "gpu_usable_bytes": share * chip.capacity_bytes, "gpu_limit_basis": basis,
                     "bandwidth_bytes_per_s": chip.bandwidth_bytes_per_s,
                     "source_url": chip.source(chip.capacity_spec)})
    return pd.DataFrame(rows)


def _models(models, weight_format):
    """Each model (all in the catalog by default) with its config, context limit and
    weight bytes: what every capacity table needs before it loops over chips."""
    for model in models or catalog.names():
        cfg = catalog.config(model)
        yield model, cfg, kvcache.max_context_tokens(cfg), catalog.weight_bytes(model, weight_format)


def max_batch_table(models=None, chips=CHIPS, contexts=CONTEXTS, weight_format=WEIGHTS,
                    kv_dtype="f16") -> pd.DataFrame:
    """Largest batch of ``context`` tokens each that fits beside the weights, per model,
    chip and context (long format), in the memory the chip's GPU may use by default
    (:func:`chip_table`). ``max_batch`` is NaN where the context is beyond what the model
    serves; 0 where the weights alone do not fit, or leave room for no sequence."""
    rows = []
    capacity = chip_table(chips).set_index("chip")["gpu_usable_bytes"]
    for model, cfg, limit, weights in _models(models, weight_format):
        for chip in chips:
            for context in contexts:
                beyond = context > limit
                batch = (float("nan") if beyond else
                         kvcache.max_batch(cfg, context, capacity[chip], weights, kv_dtype))
                rows.append({"model": model, "chip": chip, "context_tokens": context,
                             "weight_bytes": weights, "capacity_bytes": capacity[chip],
                             "weights_fit": weights < capacity[chip],
                             "beyond_context": beyond, "max_batch": batch})
    return pd.DataFrame(rows)


def max_batch_grid(table: pd.DataFrame) -> pd.DataFrame:
    """The long table as one row per model and context, one text column per chip:
    a number of sequences, or why there is none."""
    def cell(r) -> str:
        if not r["weights_fit"]:
            return "weights do not fit"
        if r["beyond_context"]:
            return "beyond its context"
        return f"{int(r['max_batch']):,}"

    shown = table.assign(cell=table.apply(cell, axis=1))
    grid = shown.pivot_table(index=["model", "context_tokens"], columns="chip", values="cell",
                             aggfunc="first", sort=False).reset_index()
    grid.columns.name = None
    order = {m: i for i, m in enumerate(dict.fromkeys(table["model"]))}
    grid = grid.sort_values(["model", "context_tokens"], key=lambda s: s.map(order)
                            if s.name == "model" else s).reset_index(drop=True)
    return grid[["model", "context_tokens", *dict.fromkeys(table["chip"])]]


def roof_of(chip_name: str, weight_format: str = WEIGHTS) -> roofline.Roof:
    """The chip's roof for weights in ``weight_format`` as a serving stack runs them (FP8
    weights on FP8 tensor cores), the roof chapter 3 says the format runs against."""
    return roofline.chip_roof(chip_name, roofline.arithmetic_for(weight_format, "serving"))


def attention_ridge(chip_name: str, kv_dtype: str = "f16") -> float:
    """The ridge of the arithmetic attention runs in: that of the cache's number format (a
    16-bit cache is multiplied at the FP16 rate, whatever format the weights are in)."""
    return roof_of(chip_name, kv_dtype).ridge


def roofline_turn(model: str, chip: str, weight_format: str = WEIGHTS,
                  kv_dtype: str = "f16") -> dict:
    """:func:`napkin.roofline.capacity_turn` for a model of ``data/models`` on a chip: the
    weight matmuls on the roof of their format, attention on that of the cache's, the memory
    the chip's GPU may use by default."""
    m = roofline.Model.from_catalog(model, weight_format, kv_dtype)
    roof = replace(roof_of(chip, weight_format),
                   capacity_bytes=chip_table([chip])["gpu_usable_bytes"].iloc[0])
    turn = roofline.capacity_turn(m, roof, attention_ridge(chip, kv_dtype))
    return {"model": model, "chip": chip, "weight_format": weight_format,
            "arithmetic": roofline.arithmetic_for(weight_format, "serving"),
            "ridge_flop_per_byte": roof.ridge,
            "attention_ridge_flop_per_byte": attention_ridge(chip, kv_dtype),
            "weights_only_crossover": roof.ridge / roofline.matmul_intensity(
                1, m.bytes_per_weight), **turn}


def calibrated_turn(model: str, chip: str, weight_format: str = WEIGHTS,
                    kv_dtype: str = "f16", limit: int = 1 << 20, calibration=None) -> dict:
    """:func:`roofline_turn` with the batch a decode step needs taken from chapter 9's
    calibrated step model instead of the roofline: the smallest batch whose step the published
    fit calls compute-bound (:func:`napkin.predict.step.compute_bound_batch`, one chip, the
    fitted shares of both peaks, its fixed costs aside since they bind neither roof), beside
    the same memory. ``limit``: the largest batch searched (beyond it, none);
    ``calibration``: another :class:`~napkin.predict.calibration.Calibration` than the
    published fit. Also returns its shares of peak bandwidth and FLOP/s: equal shares scale
    both roofs alike and leave the turn where the roofline puts it, unequal ones move it."""
    from ..deployment import deploy
    from ..predict.calibration import calibrated
    from ..predict.step import compute_bound_batch

    cal = calibrated() if calibration is None else calibration
    served = deploy(model, chip, weights=weight_format, kv=kv_dtype)

    def need(context: int) -> float:
        b = compute_bound_batch(served, int(context), cal, limit)
        return math.inf if b > limit else b

    m = roofline.Model.from_catalog(model, weight_format, kv_dtype)
    roof = replace(roof_of(chip, weight_format),
                   capacity_bytes=chip_table([chip])["gpu_usable_bytes"].iloc[0])
    return {"model": model, "chip": chip, "weight_format": weight_format,
            "bandwidth_share": cal.bandwidth_efficiency, "compute_share": cal.compute_efficiency,
            **roofline.capacity_turn(m, roof, need=need)}


def batch_limit_curves(models=None, chips=DATACENTER, weight_format=WEIGHTS, kv_dtype="f16",
                       points: int = 40) -> pd.DataFrame:
    """For the capacity chart: per model, chip and context, the largest batch that fits and
    the batch a decode step needs to reach the ridge with its cache reads counted (NaN where
    none does). Contexts run from 256 tokens to the model's limit, plus each turn."""
    rows = []
    capacity = chip_table(chips).set_index("chip")["gpu_usable_bytes"]
    for model in models or catalog.names():
        m = roofline.Model.from_catalog(model, weight_format, kv_dtype)
        limit = kvcache.max_context_tokens(m.config)
        if limit <= 256:
            continue
        grid = np.unique(np.geomspace(256, limit, points).round().astype(int))
        for chip in chips:
            roof = roof_of(chip, weight_format)
            turn = roofline_turn(model, chip, weight_format, kv_dtype)["turn_tokens"]
            for context in sorted(set(grid.tolist()) | ({turn} if turn else set())):
                fits = kvcache.max_batch(m.config, context, capacity[chip], m.weight_bytes,
                                         kv_dtype)
                need = roofline.batch_to_ridge(m, roof.ridge, context,
                                               attention_ridge(chip, kv_dtype))
                rows.append({"model": model, "chip": chip, "context_tokens": context,
                             "max_batch": fits,
                             "needed_batch": need if math.isfinite(need) else np.nan,
                             "kv_per_sequence_bytes": kvcache.kv_cache_bytes(m.config, context,
                                                                             1, kv_dtype),
                             "free_bytes": capacity[chip] - m.weight_bytes,
                             "turn": context == turn,
                             "memory_bound": fits < need})
    return pd.DataFrame(rows)


def extra_sequence_cost(model: str, contexts, weight_format: str = WEIGHTS,
                        kv_dtype: str = "f16") -> pd.DataFrame:
    """What one more sequence adds to a memory-bound decode step: its cache read over the
    weights' read. While that is small an extra sequence is nearly free throughput; at long
    context it is not (chapter 3's result, seen from chapter 4)."""
    m = roofline.Model.from_catalog(model, weight_format, kv_dtype)
    return pd.DataFrame([{"context_tokens": c,
                          "kv_per_sequence_bytes": m.kv_bytes(c),
                          "share_of_weights": m.kv_bytes(c) / m.weight_bytes}
                         for c in contexts])


def calculator_rows(kv_dtype_names=("f16", "fp8", "q8_0", "q4_0")) -> pd.DataFrame:
    """Per model, what the in-page calculator needs to redo :func:`kv_cache_bytes` in
    JavaScript: elements per token of full and windowed layers, the window, and the
    parameters. Tested to agree with the Python formula."""
    rows = []
    for _, r in catalog.index().iterrows():
        cfg = catalog.config(r["model"])
        form = kvcache.linear_form(cfg)
        rows.append({"model": r["model"], "full_elements": form.full_elements_per_token,
                     "windowed_elements": form.windowed_elements_per_token,
                     "window": form.window or 0, "params": catalog.params(r["model"]),
                     "max_context_tokens": kvcache.max_context_tokens(cfg)})
    return pd.DataFrame(rows)


def units_display(df: pd.DataFrame) -> pd.DataFrame:
    """:func:`units_table` formatted for the page: exact bytes, then binary and decimal."""
    return pd.DataFrame({
        "case": df["case"],
        "bytes": df["bytes"].map(lambda v: f"{int(v):,}"),
        "binary": [_pick(r, ("GiB", "MiB", "KiB")) for _, r in df.iterrows()],
        "decimal": [_pick(r, ("GB", "MB", "KB")) for _, r in df.iterrows()],
    })


def _pick(row, units) -> str:
    """The largest unit in which the value is at least 1, to two decimals."""
    for unit in units:
        if row[unit] >= 1:
            return f"{row[unit]:,.2f} {unit}"
    return f"{row[units[-1]]:,.2f} {units[-1]}"


def model_display(df: pd.DataFrame) -> pd.DataFrame:
    """:func:`model_table` formatted for the page."""
    return pd.DataFrame({
        "model": df["model"], "layout": df["layout"],
        "per_token": df["kv_per_token_bytes"].map(lambda v: f"{v / KiB:,.0f} KiB"),
        "context": [f"{v:,}" + ("" if basis == "served" else f" ({basis})")
                    for v, basis in zip(df["context_tokens"], df["context_basis"])],
        "at_context": df["kv_at_context_bytes"].map(lambda v: f"{v / GB:,.2f} GB"),
        "at_context_gib": df["kv_at_context_bytes"].map(lambda v: f"{v / GiB:,.2f} GiB"),
        "naive": df["naive_at_context_bytes"].map(lambda v: f"{v / GB:,.1f} GB"),
    })


def chip_display(df: pd.DataFrame) -> pd.DataFrame:
    return pd.DataFrame({
        "chip": df["chip"],
        "capacity": df["capacity_bytes"].map(lambda v: f"{v / GiB:,.0f} GiB ({v / GB:,.1f} GB)"),
        "which": df["capacity_spec"].map(hardware.CAPACITY_SPECS),
        "gpu": [f"{u / GiB:,.0f} GiB by default" if u < c else "all"
                for u, c in zip(df["gpu_usable_bytes"], df["capacity_bytes"])],
        "bandwidth": df["bandwidth_bytes_per_s"].map(lambda v: f"{v / GB:,.0f} GB/s"),
    })
