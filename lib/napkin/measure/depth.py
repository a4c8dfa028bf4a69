"""Decode speed against context depth, for an MHA and a GQA model of the same weight size.

Each decode step reads every weight and the whole KV cache, so tokens/s falls as
the context deepens, and falls faster the more KV heads the model caches. This
module builds two synthetic llama-architecture models that differ only in how
many KV heads they have (the GQA model gets a wider feed-forward block so that
both hold exactly the same number of weights), measures tg at several depths
the way ``llama-bench -d`` does, and puts the napkin's prediction beside each
measurement:

    predicted tg = bandwidth / (weight bytes + KV cache bytes at that depth)

with the bandwidth of the backend that ran (:mod:`.bandwidth`): a GPU's vendor figure, or
on the CPU the memory probe taken right before and after.
"""

from __future__ import annotations

import datetime as dt
from dataclasses import asdict, dataclass, replace

import pandas as pd

from .. import kvcache
from ..texttable import Column, render
from . import bandwidth as bandwidths
from . import machine, mode, synthetic
from .probe import read_bandwidth
from .record import backend_label, bandwidth_label
from .runner import make_runner
from .session import Progress, cache_dir, ensure_room, quiet

__all__ = ["BASE", "DepthPlan", "display", "frame", "FULL", "kv_read_bytes", "live",
           "matched_pair", "models_table", "plan_from_env", "prediction", "QUICK", "relative",
           "run", "save", "SCHEMA", "sentence", "shown", "shown_models", "table"]

SCHEMA = "napkin.depth/1"


@dataclass(frozen=True)
class DepthPlan:
    """What a depth sweep measures."""

    mode: str
    depths: tuple[int, ...]
    n_gen: int
    reps: int
    base: synthetic.Shape
    gqa_kv_heads: int
    weight_format: str = "Q8_0"
    kv_dtype: str = "f16"
    flash_attn: bool = False


#: The MHA model: 24 heads of 128 (hidden 3072) in 3 layers, a small vocabulary and a
#: narrow feed-forward block, so that the cache is large next to the weights already a
#: few thousand tokens deep. Q8_0 weights: 145 MB, more than 4 x a 32 MiB cache.
BASE = synthetic.Shape(hidden_size=3072, num_hidden_layers=3, num_attention_heads=24,
                       num_key_value_heads=24, head_dim=128, intermediate_size=256,
                       vocab_size=4096, context_length=32768)
QUICK = DepthPlan("quick", depths=(0, 512, 1024), n_gen=16, reps=3, base=BASE,
                  gqa_kv_heads=3)
FULL = DepthPlan("full", depths=(0, 1024, 2048, 4096, 8192), n_gen=32, reps=4, base=BASE,
                 gqa_kv_heads=3)

#: The table ``python -m napkin depth`` prints (:func:`table`), a row per model and depth.
COLUMNS = (Column("model", 6, "{attention}", "<"), Column("depth", 8, "{depth_tokens:,}"),
           Column("bytes/token", 14, "{mb:,.0f} MB"),
           Column("tg tok/s", 18, "{tokens_per_s:>11,.1f} ±{stddev:>5.1f}"),
           Column("napkin", 9, "{predicted_tokens_per_s:,.0f}"),
           Column("fraction", 10, "{fraction_of_ceiling:.0%}"))


def matched_pair(base: synthetic.Shape, gqa_kv_heads: int) -> tuple[synthetic.Shape,
                                                                   synthetic.Shape]:
    """(MHA, GQA) shapes with the same number of weights: the GQA model's smaller K and V
    projections are given back to its feed-forward block (3 matrices of hidden x ffn)."""
    heads = base.num_attention_heads
    if gqa_kv_heads < 1 or heads % gqa_kv_heads or gqa_kv_heads == heads:
        raise ValueError(f"gqa_kv_heads must divide num_attention_heads ({heads}) and be "
                         f"fewer than it, got {gqa_kv_heads}")
    mha = replace(base, num_key_value_heads=heads)
    freed = 2 * base.hidden_size * (heads - gqa_kv_heads) * base.head_dim  # K and V weights
    if freed % (3 * base.hidden_size):
        raise ValueError(f"the {freed:,} weights GQA frees cannot be given to the feed-forward "
                         "block in whole columns; pick another head count or head_dim")
    gqa = replace(base, num_key_value_heads=gqa_kv_heads,
                  intermediate_size=base.intermediate_size + freed // (3 * base.hidden_size))
    return mha, gqa  # replace() re-validated both: whole quant blocks, heads divisible


def _model(shape: synthetic.Shape, fmt: str, progress: Progress):
    size = synthetic.tensor_bytes(shape, fmt)
    path = cache_dir() / (f"depth-{fmt}-h{shape.hidden_size}-l{shape.num_hidden_layers}"
                          f"-kv{shape.num_key_value_heads}-ffn{shape.intermediate_size}"
                          f"-v{shape.vocab_size}.gguf")
    if not path.is_file():
        ensure_room(path.parent, size, f"a {fmt} synthetic model")
        progress(f"writing {path.name} ({size / 1e6:,.0f} MB)")
        synthetic.write(path, shape, fmt, seed=0)
    return path


def run(plan: DepthPlan = QUICK, *, llama_bench: str | None = None, threads: int | None = None,
        bandwidth_gb_per_s: float | None = None, progress: Progress = quiet) -> dict:
    """Measure tg at every depth of ``plan`` for the MHA and the GQA model, with whichever
    runner :func:`napkin.measure.runner.make_runner` picks."""
    runner = make_runner(llama_bench, threads)
    backend = runner.backend()
    fixed = None if backend is None else bandwidths.for_run(backend, bandwidth_gb_per_s)
    mha, gqa = matched_pair(plan.base, plan.gqa_kv_heads)
    models = []
    for label, shape in (("MHA", mha), ("GQA", gqa)):
        models.append({"attention": label, "shape": asdict(shape), "config": shape.config(),
                       "path": _model(shape, plan.weight_format, progress)})
    probing = backend is None or not backend.gpu
    before = read_bandwidth(threads=runner.threads, passes=5) if probing else None
    progress(f"MHA and GQA, alternating: tg{plan.n_gen} at depths "
             f"{', '.join(map(str, plan.depths))} ({runner.name})")
    sweeps = runner.depth_sweep([m["path"] for m in models], plan.depths, plan.n_gen,
                                plan.reps, flash_attn=plan.flash_attn)
    for m, sweep in zip(models, sweeps):
        m["model_bytes"] = sweep.model.model_bytes
        m["tg"] = [rate.to_dict() for rate in sweep.tg]
        m["path"] = str(m["path"])
    after = read_bandwidth(threads=runner.threads, passes=5) if probing else None
    if backend is None:  # a llama-bench without --list-devices: its JSON says now
        fixed = bandwidths.for_run(runner.backend(), bandwidth_gb_per_s)
    used = fixed or bandwidths.of_probe(before, after, machine.cpu_model())
    record = {
        "schema": SCHEMA,
        "timestamp": dt.datetime.now(dt.timezone.utc).isoformat(timespec="seconds"),
        "mode": plan.mode, "plan": {**asdict(plan), "base": asdict(plan.base)},
        "machine": machine.describe(runner.threads), "runner": runner.info().to_dict(),
        "bandwidth_bytes_per_s": used.bytes_per_s, "bandwidth": used.to_dict(),
        "models": models,
    }
    if before is not None and after is not None:
        best = max(before.best_bytes_per_s, after.best_bytes_per_s)
        record |= {"probe_best_bytes_per_s": best,
                   "probe_spread": 1 - min(before.worst_bytes_per_s,
                                           after.worst_bytes_per_s) / best}
    return record


def kv_read_bytes(config: dict, depth: int, n_gen: int, max_depth: int,
                  kv_dtype="f16") -> float:
    """Cache bytes one timed decode step reads, averaged over the ``n_gen`` timed tokens
    from ``depth``: every layer's K and V over the cells llama.cpp attends to (the filled
    cells rounded up to 256; see :func:`napkin.measure.kvalloc.llama_cpp_cells_read`)."""
    from .kvalloc import CELL_PADDING, llama_cpp_cells_read

    cache = -(-(max_depth + n_gen + 1) // CELL_PADDING) * CELL_PADDING  # as the sweep sizes it
    config = kvcache.load_config(config)  # parsed once for the n_gen steps
    reads = [kvcache.kv_cache_bytes(config, llama_cpp_cells_read(depth + i + 1, cache), 1,
                                    kv_dtype) for i in range(n_gen)]
    return sum(reads) / len(reads)


def frame(record: dict | None) -> pd.DataFrame:
    """One row per model and depth: measured tg beside the napkin's prediction."""
    columns = ["attention", "depth_tokens", "tokens_per_s", "stddev", "weight_bytes",
               "kv_bytes", "bytes_per_token", "predicted_tokens_per_s", "fraction_of_ceiling"]
    if record is None:
        return pd.DataFrame(columns=columns)
    plan = record["plan"]
    bandwidth = record.get("bandwidth_bytes_per_s", record.get("probe_best_bytes_per_s"))
    rows = []
    for m in record["models"]:
        for depth, rate in zip(sorted(plan["depths"]), m["tg"]):
            kv = kv_read_bytes(m["config"], depth, plan["n_gen"], max(plan["depths"]),
                               plan["kv_dtype"])
            total = m["model_bytes"] + kv
            predicted = bandwidth / total
            rows.append({"attention": m["attention"], "depth_tokens": depth,
                         "tokens_per_s": rate["tokens_per_s"], "stddev": rate["stddev"],
                         "weight_bytes": m["model_bytes"], "kv_bytes": kv,
                         "bytes_per_token": total, "predicted_tokens_per_s": predicted,
                         "fraction_of_ceiling": rate["tokens_per_s"] / predicted})
    return pd.DataFrame(rows, columns=columns)


def live(plan: DepthPlan = QUICK, **kwargs) -> dict | None:
    """For a notebook cell: the sweep's record (not saved: the chapter only draws it), or one
    sentence on why not (None)."""
    from .record import live as run_live

    return run_live(lambda: run(plan, **kwargs), save_as=None)


def sentence(record: dict | None) -> str:
    """The sweep in a few Markdown sentences, every number computed: each model's fall
    against the bytes' prediction, whether the ratio of the two agrees with the prediction
    within the measured spread (two standard errors), and whether the run was bandwidth-bound
    enough for the bytes model to apply (its median fraction of the ceiling at least half)."""
    if record is None:
        return ("This page was built where llama.cpp could not run, so the chart shows the "
                "prediction only; run the notebook on your machine to add the measurement.")
    df = frame(record)
    reps = record["plan"]["reps"]
    deepest = int(df["depth_tokens"].max())
    first = df[df["depth_tokens"] == 0].set_index("attention")
    last = df[df["depth_tokens"] == deepest].set_index("attention")

    def fall(model: str) -> str:
        measured = 1 - last.loc[model, "tokens_per_s"] / first.loc[model, "tokens_per_s"]
        bytes_say = 1 - first.loc[model, "bytes_per_token"] / last.loc[model, "bytes_per_token"]
        return (f"the {model} model went from **{first.loc[model, 'tokens_per_s']:.1f}** to "
                f"**{last.loc[model, 'tokens_per_s']:.1f} tokens/s** ({_signed(-measured)}; its "
                f"bytes predict {_signed(-bytes_say)})")

    predicted = last.loc["GQA", "bytes_per_token"] / last.loc["MHA", "bytes_per_token"]
    measured = last.loc["MHA", "tokens_per_s"] / last.loc["GQA", "tokens_per_s"]
    spread = 2 * measured * ((last["stddev"] / last["tokens_per_s"]) ** 2).sum() ** 0.5 \
        / reps ** 0.5
    agrees = abs(measured - predicted) <= spread
    share = df["fraction_of_ceiling"].median()
    ran = ("the CPU" if record["runner"]["backend"] == "CPU" else backend_label(record))
    text = (f"On the machine that built this page ({machine.label(record['machine'])}; "
            f"llama.cpp on {ran}), with a ceiling bandwidth of {bandwidth_label(record)}, "
            f"between an empty context and "
            f"{deepest:,} tokens deep {fall('MHA')}, {fall('GQA')}. At that depth the MHA model "
            f"ran at **{measured:.0%}** of the GQA model's speed, give or take "
            f"{spread:.0%} (two standard errors of {reps} repetitions); the bytes alone predict "
            f"**{predicted:.0%}**, {'within' if agrees else 'outside'} that range.")
    faster = [m for m in ("MHA", "GQA") if last.loc[m, "tokens_per_s"] - 2 * last.loc[
        m, "stddev"] / reps ** 0.5 > first.loc[m, "tokens_per_s"]]
    if faster:
        text += (f" But the {' and the '.join(faster)} model ran faster {deepest:,} tokens deep "
                 "than at an empty context, beyond the spread, which more bytes per token "
                 "cannot do: this run timed the machine's other load or the harness's fixed "
                 "costs more than decode, and tests nothing (rerun it on a quieter machine, or "
                 "with `NAPKIN_DEPTH=full` for longer runs).")
    elif share < 0.5:
        text += (f" But the runs reached a median {share:.0%} of the napkin ceiling, so "
                 "something other than the bytes set the speed (the machine's arithmetic, "
                 "other load on it, or a fixed cost per token), and the bytes model does not "
                 "describe it: here the measurement cannot test the prediction.")
    return text


def _signed(x: float) -> str:
    """A relative change in words: "-20%" or "+3%"."""
    return f"{x:+.0%}".replace("-", "−")


def models_table(plan: DepthPlan = QUICK) -> pd.DataFrame:
    """The two synthetic models: shape, weight bytes and cache per token (no llama.cpp)."""
    rows = []
    for label, shape in zip(("MHA", "GQA"), matched_pair(plan.base, plan.gqa_kv_heads)):
        cfg = shape.config()
        rows.append({"attention": label, "layers": shape.num_hidden_layers,
                     "hidden_size": shape.hidden_size, "heads": shape.num_attention_heads,
                     "kv_heads": shape.num_key_value_heads, "head_dim": shape.head_dim,
                     "ffn": shape.intermediate_size, "vocab": shape.vocab_size,
                     "weight_bytes": synthetic.tensor_bytes(shape, plan.weight_format),
                     "kv_per_token_bytes": kvcache.kv_bytes_per_token(cfg, plan.kv_dtype),
                     "cache_equals_weights_tokens": -(-synthetic.tensor_bytes(
                         shape, plan.weight_format) // kvcache.kv_bytes_per_token(
                         cfg, plan.kv_dtype))})
    return pd.DataFrame(rows)


def prediction(plan: DepthPlan = QUICK, depths=None) -> pd.DataFrame:
    """The napkin's prediction, from bytes alone: tokens/s at each depth relative to the
    same model at an empty context, ``bytes(0) / bytes(depth)``, with bytes = weights +
    the cache llama.cpp reads over the timed tokens (:func:`kv_read_bytes`)."""
    rows = []
    for label, shape in zip(("MHA", "GQA"), matched_pair(plan.base, plan.gqa_kv_heads)):
        cfg = shape.config()
        weights = synthetic.tensor_bytes(shape, plan.weight_format)
        depths_here = list(depths or plan.depths)

        def kv(depth: int) -> float:
            return kv_read_bytes(cfg, depth, plan.n_gen, max(depths_here), plan.kv_dtype)

        for depth in depths_here:
            rows.append({"attention": label, "depth_tokens": depth,
                         "relative": (weights + kv(0)) / (weights + kv(depth)),
                         "kv_MB": kv(depth) / 1e6, "bytes_per_token": weights + kv(depth)})
    return pd.DataFrame(rows)


def relative(record: dict | None) -> pd.DataFrame:
    """Measured tokens/s relative to the same model's empty-context speed."""
    df = frame(record)
    if df.empty:
        return df.assign(relative=[], relative_sd=[])
    first = df[df["depth_tokens"] == 0].set_index("attention")["tokens_per_s"]
    base = df["attention"].map(first)
    return df.assign(relative=df["tokens_per_s"] / base, relative_sd=df["stddev"] / base)


def plan_from_env() -> DepthPlan:
    """QUICK, or FULL when ``NAPKIN_DEPTH`` (or ``NAPKIN_LIVE``) is ``full`` (how the book's
    release build runs it)."""
    return mode.choose("NAPKIN_DEPTH", QUICK, FULL)


def display(record: dict | None) -> pd.DataFrame:
    """The sweep formatted for the page: measured beside predicted, per model and depth."""
    df = frame(record)
    return pd.DataFrame({
        "attention": df["attention"], "depth": df["depth_tokens"].map("{:,}".format),
        "bytes": df["bytes_per_token"].map(lambda v: f"{v / 1e6:,.0f} MB"),
        "kv": df["kv_bytes"].map(lambda v: f"{v / 1e6:,.1f} MB"),
        "measured": [f"{m:,.1f} ± {s:,.1f}" for m, s in zip(df["tokens_per_s"], df["stddev"])],
        "predicted": df["predicted_tokens_per_s"].map("{:,.0f}".format),
        "fraction": df["fraction_of_ceiling"].map("{:.0%}".format),
    })


def save(record: dict, directory=None):
    """Write the record as JSON under ``results/`` (never ``data/``); returns the path."""
    import json
    from pathlib import Path

    from .record import results_dir

    directory = Path(directory or results_dir())
    directory.mkdir(parents=True, exist_ok=True)
    stamp = record["timestamp"].replace(":", "").replace("+0000", "Z")
    path = directory / f"depth-{stamp}-{record['mode']}.json"
    n = 1
    while path.exists():
        n += 1
        path = directory / f"depth-{stamp}-{record['mode']}-{n}.json"
    path.write_text(json.dumps(record, indent=2) + "\n")
    return path


def table(record: dict) -> str:
    """The summary ``python -m napkin depth`` prints."""
    df = frame(record)
    spread = (f", probe spread {record['probe_spread']:.0%}" if "probe_spread" in record else "")
    lines = [f"Machine : {machine.label(record['machine'])}, {backend_label(record)}",
             f"Ceiling : {bandwidth_label(record)}{spread}: "
             f"{record.get('bandwidth', {}).get('source', 'memory probe')}", ""]
    lines.append(render(COLUMNS, (r | {"mb": r["bytes_per_token"] / 1e6}
                                  for r in df.to_dict("records"))))
    lines += ["", "napkin = bandwidth / (weights + the KV cache llama.cpp reads, averaged "
              "over the timed tokens); tg: mean ± sample stddev of per-repetition tokens/s."]
    return "\n".join(lines)


def shown(record: dict | None):
    """The sweep as a page table."""
    from .. import tables

    return tables.styled(display(record), "gqa-live-table", {
        "attention": "Model", "depth": "Depth (tokens)", "bytes": "Read per token",
        "kv": "of which cache", "measured": "Measured tg (tok/s)",
        "predicted": "Napkin ceiling (tok/s)", "fraction": "Fraction"})


def shown_models(plan: DepthPlan = QUICK):
    """The two synthetic models as a page table."""
    from .. import tables

    pair = models_table(plan)
    pair = pair.assign(weight_MB=(pair["weight_bytes"] / 1e6).map("{:,.1f}".format),
                       kv_KiB=(pair["kv_per_token_bytes"] / 1024).map("{:,.1f}".format),
                       equal=pair["cache_equals_weights_tokens"].map("{:,}".format))
    return tables.styled(pair, "gqa-synthetic-table", {
        "attention": "Model", "layers": "Layers", "heads": "Query heads",
        "kv_heads": "KV heads", "head_dim": "Head dim", "ffn": "Feed-forward",
        "weight_MB": "Weights (MB)", "kv_KiB": "Cache per token (KiB)",
        "equal": "Depth where cache = weights (tokens)"})
