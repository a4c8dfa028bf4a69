"""The KV cache llama.cpp allocates, checked against :func:`napkin.kv_cache_bytes`.

When llama.cpp creates a context it allocates the whole cache up front and logs
one line about it::

    llama_kv_cache: size = 1.50 MiB (1024 cells, 3 layers, 1/1 seqs),
        K (f16): 0.75 MiB, V (f16): 0.75 MiB

(on one line)

The sizes are printed in MiB with two decimals, so a comparison is only exact
when every printed figure is a whole multiple of 0.25 MiB (2^18 bytes): then the
two decimals lose nothing. :func:`exact_n_ctx` picks such a context length for a
shape and cache type, and :func:`allocation` refuses to call a rounded print
exact. llama.cpp also pads the context to a multiple of 256 cells; the cell
count is read back from the same line rather than assumed.

The models are tiny synthetic GGUF files (a few MB): allocation does not depend
on the weights, only on layers, KV heads and head width.
"""

from __future__ import annotations

import re
import tempfile
from dataclasses import dataclass
from decimal import Decimal
from pathlib import Path

import pandas as pd

from .. import kvcache
from . import synthetic
from .inprocess import InProcess
from .results import MeasurementUnavailable

QUARTER_MIB = 2**18
#: llama.cpp pads the number of cells to a multiple of this.
CELL_PADDING = 256

LINE = re.compile(
    r"llama_kv_cache: size =\s*(?P<size>[\d.]+) MiB \(\s*(?P<cells>\d+) cells,\s*"
    r"(?P<layers>\d+) layers,\s*(?P<seqs>\d+)/(?P<seq_max>\d+) seqs\), "
    r"K \((?P<k_type>\w+)\):\s*(?P<k>[\d.]+) MiB, V \((?P<v_type>\w+)\):\s*(?P<v>[\d.]+) MiB")


def mib_to_bytes(text: str) -> tuple[int, bool]:
    """Bytes of a two-decimal MiB figure, and whether the figure is exact (a multiple
    of 0.25 MiB, which two decimals print without loss)."""
    quarters = Decimal(text) * 4
    exact = quarters == quarters.to_integral_value()
    return int(Decimal(text) * 2**20), exact


@dataclass(frozen=True)
class Allocation:
    """What llama.cpp reported for one context's cache."""

    cells: int
    layers: int
    n_seq: int
    k_type: str
    v_type: str
    size_bytes: int
    k_bytes: int
    v_bytes: int
    exact: bool  # every printed MiB figure was a multiple of 0.25 MiB
    line: str


def parse(log_text: str) -> Allocation:
    """The last KV-cache line in llama.cpp's log, or a ValueError saying it is missing."""
    matches = list(LINE.finditer(log_text))
    if not matches:
        raise ValueError("llama.cpp's log has no 'llama_kv_cache: size = ...' line; this "
                         "llama.cpp version reports its cache differently")
    m = matches[-1]
    size, size_exact = mib_to_bytes(m["size"])
    k, k_exact = mib_to_bytes(m["k"])
    v, v_exact = mib_to_bytes(m["v"])
    return Allocation(cells=int(m["cells"]), layers=int(m["layers"]), n_seq=int(m["seqs"]),
                      k_type=m["k_type"], v_type=m["v_type"], size_bytes=size, k_bytes=k,
                      v_bytes=v, exact=size_exact and k_exact and v_exact, line=m.group(0))


def ggml_type(kv_dtype: str) -> int:
    """llama.cpp's type id for a cache type name ("f16", "q8_0")."""
    import gguf

    kvcache.dtype_bytes(kv_dtype)  # a clear error for an unknown name
    key = kv_dtype.upper()
    if not hasattr(gguf.GGMLQuantizationType, key):
        raise ValueError(f"llama.cpp has no cache type {kv_dtype!r}")
    return int(getattr(gguf.GGMLQuantizationType, key))


def exact_n_ctx(config, kv_dtype: str, at_least: int = CELL_PADDING, batch: int = 1) -> int:
    """The smallest context of whole 256-cell pages, at least ``at_least`` cells, at which
    the K half of the cache (one sequence's share times ``batch``) is a whole number of
    quarter MiB, so llama.cpp's two-decimal print of it is exact."""
    if at_least < 1:
        raise ValueError(f"at_least must be a positive number of cells, got {at_least}")
    n = -(-at_least // CELL_PADDING) * CELL_PADDING
    config = kvcache.load_config(config)  # parsed once for the search
    for _ in range(1 << 16):
        k_half = kvcache.kv_cache_bytes(config, n, batch, kv_dtype) // 2
        if k_half % QUARTER_MIB == 0:
            return n
        n += CELL_PADDING
    raise ValueError("no context length up to 16M cells prints exactly for this shape")


@dataclass(frozen=True)
class Case:
    """One allocation to check: a synthetic shape, a cache type, a batch."""

    label: str
    shape: synthetic.Shape
    kv_dtype: str = "f16"
    batch: int = 1

    @property
    def attention(self) -> str:
        heads, kv = self.shape.num_attention_heads, self.shape.num_key_value_heads
        return "MHA" if kv == heads else "MQA" if kv == 1 else "GQA"


def _tiny(**kwargs) -> synthetic.Shape:
    base = dict(hidden_size=256, intermediate_size=256, vocab_size=512, context_length=65536)
    return synthetic.Shape(**{**base, **kwargs})


#: The shapes the book checks: MHA, GQA and MQA; head widths of 64, 96, 128 and 256 (one
#: of them not hidden_size / heads, as in gpt-oss); 1 to 5 layers; f16 and q8_0; batch 2.
SHAPES = (
    ("MHA, 4 heads of 64, 2 layers", _tiny(num_hidden_layers=2, num_attention_heads=4,
                                           num_key_value_heads=4, head_dim=64)),
    ("MHA, 2 heads of 128, 5 layers", _tiny(num_hidden_layers=5, num_attention_heads=2,
                                            num_key_value_heads=2, head_dim=128)),
    ("GQA 8:2, head_dim 128 (not 256/8), 3 layers",
     _tiny(num_hidden_layers=3, num_attention_heads=8, num_key_value_heads=2, head_dim=128)),
    ("GQA 16:4, head_dim 256, 1 layer", _tiny(num_hidden_layers=1, num_attention_heads=16,
                                              num_key_value_heads=4, head_dim=256)),
    ("MQA 8:1, head_dim 96, 4 layers", _tiny(num_hidden_layers=4, num_attention_heads=8,
                                             num_key_value_heads=1, head_dim=96)),
)
CASES = tuple(Case(label, shape, dtype) for label, shape in SHAPES for dtype in ("f16", "q8_0")) \
    + (Case(SHAPES[2][0], SHAPES[2][1], "f16", batch=2),)


def allocation(runner: InProcess, model, config: dict, case: Case) -> dict:
    """Create one context for ``case`` and compare llama.cpp's cache with the formula."""
    n_ctx = exact_n_ctx(config, case.kv_dtype, batch=case.batch)
    runner.logs.lines.clear()
    # A quantized V cache needs flash attention; f16 gets llama.cpp's default.
    fa = True if case.kv_dtype != "f16" else None
    ctx = runner.context(model, n_ctx * case.batch, n_seq=case.batch,
                         type_kv=ggml_type(case.kv_dtype), flash_attn=fa)
    try:
        got = parse(runner.logs.text())
    finally:
        runner.llama.llama_free(ctx)
    formula = kvcache.kv_cache_bytes(config, got.cells, got.n_seq, case.kv_dtype)
    return {
        "case": case.label, "attention": case.attention, "layers": case.shape.num_hidden_layers,
        "heads": case.shape.num_attention_heads, "kv_heads": case.shape.num_key_value_heads,
        "head_dim": case.shape.head_dim, "kv_dtype": case.kv_dtype, "batch": case.batch,
        "n_ctx_requested": n_ctx, "cells": got.cells, "n_seq": got.n_seq,
        "napkin_bytes": formula, "llamacpp_bytes": got.size_bytes,
        "llamacpp_k_bytes": got.k_bytes, "llamacpp_v_bytes": got.v_bytes,
        "printed_exactly": got.exact, "k_type": got.k_type, "v_type": got.v_type,
        "match": got.exact and formula == got.size_bytes and got.cells == n_ctx
        and got.layers == case.shape.num_hidden_layers, "log_line": got.line,
    }


def compare(cases=CASES, runner: InProcess | None = None,
            workdir: str | Path | None = None) -> pd.DataFrame:
    """One row per case: the formula's bytes beside llama.cpp's allocation."""
    runner = runner or InProcess(threads=1)
    rows = []
    with tempfile.TemporaryDirectory(dir=workdir) as tmp:
        for i, case in enumerate(cases):
            path = synthetic.write(Path(tmp) / f"kv-{i}.gguf", case.shape, "F16", seed=i)
            model = runner.load(path)
            try:
                rows.append(allocation(runner, model, case.shape.config(), case))
            finally:
                runner.llama.llama_model_free(model)
    return pd.DataFrame(rows)


def live_compare(cases=CASES) -> pd.DataFrame | None:
    """For a notebook cell: the comparison, or one sentence on why it cannot run (None)."""
    try:
        return compare(cases)
    except MeasurementUnavailable as err:
        print(f"No llama.cpp on this machine, so the allocation was not checked here: {err}.")
        return None
    except ValueError as err:  # a llama.cpp whose log reads differently
        print(f"llama.cpp ran, but its allocation could not be read: {err}.")
        return None


def case_table(cases=CASES) -> pd.DataFrame:
    """The shapes checked, as a table (no llama.cpp needed)."""
    rows = []
    for case in cases:
        cfg = case.shape.config()
        rows.append({"case": case.label, "attention": case.attention,
                     "layers": case.shape.num_hidden_layers,
                     "heads": case.shape.num_attention_heads,
                     "kv_heads": case.shape.num_key_value_heads,
                     "head_dim": case.shape.head_dim, "kv_dtype": case.kv_dtype,
                     "batch": case.batch,
                     "kv_bytes_per_token": kvcache.kv_bytes_per_token(cfg, case.kv_dtype)})
    return pd.DataFrame(rows)


__all__ = ["Allocation", "Case", "CASES", "SHAPES", "parse", "mib_to_bytes", "exact_n_ctx",
           "allocation", "compare", "live_compare", "case_table", "ggml_type", "CELL_PADDING",
           "LLAMA_CPP_ISWA_SOURCE", "LLAMA_CPP_N_KV_SOURCE", "LLAMA_CPP_UBATCH",
           "llama_cpp_cache_bytes", "sentence", "shown", "display"]


def display(df: pd.DataFrame) -> pd.DataFrame:
    """The comparison formatted for the page."""
    return pd.DataFrame({
        "case": df["case"], "kv_dtype": df["kv_dtype"], "batch": df["batch"],
        "cells": df["cells"].map(lambda v: f"{v:,}"),
        "napkin": df["napkin_bytes"].map(lambda v: f"{v:,}"),
        "llamacpp": df["llamacpp_bytes"].map(lambda v: f"{v:,}"),
        "mib": (df["llamacpp_bytes"] / 2**20).map(lambda v: f"{v:,.2f}"),
        "match": df["match"].map({True: "exact", False: "differs"}),
    })


def sentence(df: pd.DataFrame | None) -> str:
    """One Markdown sentence on the comparison, every number computed."""
    if df is None or df.empty:
        return ("llama.cpp could not run where this page was built, so the comparison above "
                "is empty; `tests/test_kvalloc.py` runs it wherever llama.cpp is installed.")
    n, ok = len(df), int(df["match"].sum())
    shapes = df["case"].nunique()
    # the log prints MiB to two decimals: agreement is to that, not to the byte
    verdict = "every one agrees" if ok == n else f"only {ok} agree"
    return (f"Of the {n} contexts llama.cpp built here ({shapes} shapes, "
            f"{', '.join(sorted(df['kv_dtype'].unique()))} caches, batch "
            f"{' and '.join(str(b) for b in sorted(df['batch'].unique()))}), {verdict} with "
            "the formula to the hundredth of a MiB the log resolves: from "
            f"{df['llamacpp_bytes'].min() / 2**20:,.2f} MiB to "
            f"{df['llamacpp_bytes'].max() / 2**20:,.2f} MiB.")


#: llama.cpp's allocator for models that mix windowed and full layers (read at this commit).
LLAMA_CPP_ISWA_SOURCE = ("https://github.com/ggml-org/llama.cpp/blob/"
                         "2aef9767d982beb7ab61b3ae359366f627eb74dd/src/llama-kv-cache-iswa.cpp")


#: llama.cpp's default micro-batch (``n_ubatch`` of ``llama_context_default_params``).
LLAMA_CPP_UBATCH = 512


def llama_cpp_window_cells(window: int, n_ctx: int, n_ubatch: int = LLAMA_CPP_UBATCH) -> int:
    """Cells llama.cpp gives each windowed layer of one sequence: the window plus one
    micro-batch (room to write a batch before old entries may go), at most the context,
    rounded up to 256 (``size_swa`` in its llama-kv-cache-iswa.cpp)."""
    for name, value in (("window", window), ("n_ctx", n_ctx), ("n_ubatch", n_ubatch)):
        if isinstance(value, bool) or not isinstance(value, int) or value < 1:
            raise ValueError(f"{name} must be a positive whole number, got {value!r}")
    return -(-min(n_ctx, window + n_ubatch) // CELL_PADDING) * CELL_PADDING


def llama_cpp_cache_bytes(config, n_ctx: int, kv_dtype: str = "f16",
                          n_ubatch: int = LLAMA_CPP_UBATCH) -> int:
    """The cache llama.cpp allocates for one sequence of ``n_ctx`` cells (a multiple of
    256): full layers hold every cell, windowed layers :func:`llama_cpp_window_cells`."""
    size = kvcache.dtype_bytes(kv_dtype)
    elements = 0
    for layer in kvcache.layers(config):
        cells = n_ctx if layer.window is None else llama_cpp_window_cells(layer.window, n_ctx,
                                                                          n_ubatch)
        elements += layer.elements_per_token * cells
    return int(elements * size)


#: Where llama.cpp decides how many cells a decode step attends over (``get_n_kv``).
LLAMA_CPP_N_KV_SOURCE = ("https://github.com/ggml-org/llama.cpp/blob/"
                         "3514e9f6e795d3b3cd88d6614f6c07e7ce6f916f/src/llama-kv-cache.cpp")


def llama_cpp_cells_read(n_used: int, cache_cells: int) -> int:
    """Cells one llama.cpp decode step reads from each layer's K and V when ``n_used``
    cells are filled: rounded up to a whole 256 (at least 256, at most the cache), so the
    compute graph can be reused from token to token; the extra cells are masked, but read."""
    if n_used < 0 or cache_cells < 1:
        raise ValueError(f"need n_used >= 0 and cache_cells >= 1, got {n_used}, {cache_cells}")
    padded = -(-n_used // CELL_PADDING) * CELL_PADDING
    return min(cache_cells, max(CELL_PADDING, padded))


def shown(df: pd.DataFrame | None):
    """The comparison as a page table (or, without llama.cpp, the shapes it would check)."""
    from .. import tables

    if df is None:
        return tables.styled(case_table(), "kv-llamacpp-table", {
            "case": "Shape", "kv_dtype": "Cache type", "batch": "Sequences",
            "kv_bytes_per_token": "napkin (bytes per token)"})
    return tables.styled(display(df), "kv-llamacpp-table", {
        "case": "Shape", "kv_dtype": "Cache type", "batch": "Sequences",
        "cells": "Cells per sequence", "napkin": "napkin (bytes)", "llamacpp": "llama.cpp (bytes)",
        "mib": "llama.cpp (MiB, as logged)", "match": "Agreement"})
