"""What to buy: the essay's closing table as a calculator over the machines in ``data/``.

For a workload (prompt and output length, concurrent users, a model from ``data/models`` at
a weight format) every machine gets four numbers, each traceable to the rows behind it:

- **time to first token**: the prompt's prefill FLOPs (:func:`napkin.roofline.step_work`)
  divided by the prefill rate the machine *reached* in published llama.cpp runs (Llama-2-7B
  Q4_0, pp512, turned into FLOP/s the same way), a range over those runs; beside it the
  roofline bound from the vendor's dense 16-bit FLOP/s, where one is sourced. Never a
  sparse or FP4 figure: a machine without a dense one has no bound.
- **single-stream tokens/s**: bandwidth over the bytes a decode step reads (the active
  weights at the chosen format plus the cache at the mean context), discounted by the
  fraction of that ceiling published runs on the same family of machine reach (chapter 1's
  data): the first and third quartiles as the range, the median as the middle.
- **capacity**: whether the weights and every user's cache fit, and how many users could.
- **per-user tokens/s at that concurrency**: the roofline of one decode step of all users
  (weights once, every cache), discounted like the single stream.
- **price**, where a vendor states one (``data/machine_prices.csv``): the cheapest recorded
  configuration with enough memory, and that price per token/s of decode.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field

import numpy as np
import pandas as pd

from . import catalog, essay, hardware, kvcache, models, published, roofline, tables
from .units import GB, TFLOPS, require_positive

#: Chapter 1's machine families, by vendor; a vendor with no published runs of its own
#: (AMD here) is discounted by every published run pooled.
FAMILY = {"Apple": "Apple Silicon", "NVIDIA": "GPU (CUDA)"}
POOLED = "all published runs"
#: Chip names in the CUDA/Vulkan scoreboard -> the book's chip names. Only rows whose variant
#: is known (or, for the A100, the only 80 GB part with a capacity in data/) are used.
SCOREBOARD_NAMES = {
    "H100 80GB (HBM3 => SXM5, see note)": "H100 SXM",
    "A100 80GB (PCIe or SXM not stated)": "A100 SXM",
    "RTX 3090": "RTX 3090", "RTX 4090": "RTX 4090", "RTX 5090": "RTX 5090",
    "RTX 6000 Ada": "RTX 6000 Ada", "RTX PRO 6000 Blackwell": "RTX PRO 6000 Blackwell",
    "DGX Spark (GB10)": "DGX Spark",
    "Strix Halo (Radeon 8060S iGPU, Ryzen AI Max+ 395)": "Strix Halo",
}
#: The reference run that turns a published prefill rate into FLOP/s.
REFERENCE_MODEL, REFERENCE_TOKENS = "Llama-2-7B", 512
RANK_BY = {"ttft": "time to first token", "decode": "single-stream tokens/s",
           "concurrency": "tokens/s per user at that concurrency"}
KV_DTYPE = "f16"


# -- the inputs -------------------------------------------------------------------------------

@dataclass(frozen=True)
class Workload:
    """What you will run: prompt and output tokens per request, users at once, the model
    (a name in ``data/models.csv``) and its weight format, and what matters most."""

    name: str
    prompt_tokens: int
    output_tokens: int
    users: int
    model: str
    weight_format: str
    rank_by: str = "ttft"

    def __post_init__(self):
        for what in ("prompt_tokens", "output_tokens", "users"):
            v = getattr(self, what)
            if isinstance(v, bool) or not isinstance(v, (int, np.integer)) or v < 1:
                raise ValueError(f"{what} must be a whole number >= 1, got {v!r}")
        if self.model not in catalog.names():
            raise ValueError(f"unknown model {self.model!r}; known: {', '.join(catalog.names())}")
        models.bits_per_weight(self.weight_format)  # raises for an unknown format
        if self.rank_by not in RANK_BY:
            raise ValueError(f"rank_by must be one of {', '.join(RANK_BY)}, got {self.rank_by!r}")
        limit = kvcache.context_limit(catalog.config(self.model))
        if self.prompt_tokens + self.output_tokens > limit:
            raise ValueError(f"prompt_tokens + output_tokens = "
                             f"{self.prompt_tokens + self.output_tokens:,} is beyond "
                             f"{self.model}'s context of {limit:,} tokens")

    @property
    def context_tokens(self) -> int:
        """Tokens cached at the end of a request."""
        return self.prompt_tokens + self.output_tokens

    @property
    def mean_context_tokens(self) -> int:
        """Tokens cached, on average, while the answer is written."""
        return self.prompt_tokens + self.output_tokens // 2


def presets() -> dict[str, Workload]:
    """The essay's three buyers. The coding agent's prompt is the essay's; the concurrent
    users are the essay's batch example; the other lengths and the formats are this book's
    choices (a 4-bit local model, an 8-bit served one)."""
    model = "Llama-3.3-70B"
    return {
        "coding agent": Workload("coding agent", int(essay.claim("coding_agent_prompt")), 1000,
                                 1, model, "Q4_K", "ttft"),
        "chat": Workload("chat", 2000, 500, 1, model, "Q4_K", "decode"),
        "many users": Workload("many users", 2000, 500, int(essay.claim("batch_example")),
                               model, "FP8", "concurrency"),
    }


@dataclass(frozen=True)
class Machine:
    """One machine as the calculator sees it. Every figure keeps where it came from.

    ``prefill_flops`` are the FLOP/s published llama.cpp prefill runs reached on it (one per
    run); ``dense_flops_per_s`` its vendor's dense 16-bit figure, or None.
    """

    name: str
    vendor: str
    family: str
    bandwidth_bytes_per_s: float
    capacity_bytes: float
    capacity_basis: str = ""
    dense_flops_per_s: float | None = None
    flops_kind: str = ""
    prefill_flops: tuple = ()
    fraction_quartiles: tuple = (0.5, 0.5, 0.5)
    fraction_basis: str = ""
    prices: tuple = ()           # (memory bytes, price, currency, product, source) per config
    sources: dict = field(default_factory=dict)

    def __post_init__(self):
        require_positive("bandwidth_bytes_per_s", self.bandwidth_bytes_per_s)
        require_positive("capacity_bytes", self.capacity_bytes)
        if self.dense_flops_per_s is not None:
            require_positive("dense_flops_per_s", self.dense_flops_per_s)
        for f in self.prefill_flops:
            require_positive("prefill_flops", f)
        q = self.fraction_quartiles
        if len(q) != 3 or not all(0 < x <= 1 for x in q) or list(q) != sorted(q):
            raise ValueError(f"fraction_quartiles must be three increasing fractions in (0, 1], "
                             f"got {q!r}")


# -- from data/ to machines -------------------------------------------------------------------

def fraction_quartiles() -> pd.DataFrame:
    """Quartiles of decode's fraction of the bandwidth ceiling per machine family (chapter 1's
    published runs), and over every run pooled."""
    runs = published.all_machines()
    rows = []
    for family, g in list(runs.groupby("family")) + [(POOLED, runs)]:
        f = g["fraction_of_ceiling"]
        rows.append({"family": family, "runs": len(f), "q25": float(f.quantile(0.25)),
                     "q50": float(f.median()), "q75": float(f.quantile(0.75)),
                     "source_url": "; ".join(tables.sources(g)[:3])})
    return pd.DataFrame(rows)


def reference_model() -> roofline.Model:
    cfg = catalog.config(REFERENCE_MODEL)
    return roofline.Model(name=REFERENCE_MODEL, params=catalog.params(REFERENCE_MODEL),
                          weight_bytes=models.weight_bytes(catalog.params(REFERENCE_MODEL),
                                                           "Q4_0"),
                          config=cfg)


def reference_flops_per_token() -> float:
    """FLOPs per prompt token of the reference run (Llama-2-7B, 512-token prompt)."""
    work = roofline.step_work(reference_model(), prefill=[(0, REFERENCE_TOKENS)])
    return work.flops / REFERENCE_TOKENS


def prefill_runs() -> pd.DataFrame:
    """Every published llama.cpp pp512 run of Llama-2-7B Q4_0 on a chip of the specs table,
    with the FLOP/s it reached."""
    per_token = reference_flops_per_token()
    rows = []
    apple = tables.load("apple_silicon_llama2_7b")
    apple = apple[(apple["quant"] == "Q4_0") & (apple["test"] == "pp512")]
    for _, r in apple.iterrows():
        rows.append({"chip": hardware.apple_chip_name(r["chip"], r["gpu_cores"]),
                     "run": f"{r['chip']} {int(r['gpu_cores'])}-core GPU, Metal",
                     "pp512_tok_per_s": float(r["throughput_tok_per_s"]),
                     "source_url": r["source_url"]})
    gpus = tables.load("gpu_llama2_7b_q4_0")
    gpus = gpus[(gpus["test"] == "pp512") & gpus["gpu"].isin(SCOREBOARD_NAMES)]
    for _, r in gpus.iterrows():
        rows.append({"chip": SCOREBOARD_NAMES[r["gpu"]],
                     "run": f"{r['gpu']}, {r['backend']}, flash attention {r['flash_attention']}",
                     "pp512_tok_per_s": float(r["throughput_tok_per_s"]),
                     "source_url": r["source_url"]})
    strix = tables.load("strix_halo_llamacpp")
    strix = strix[(strix["test"] == "pp512") & (strix["quant"] == "Q4_0") &
                  strix["model"].str.contains("Llama-2-7B|Llama 2 7B", regex=True) &
                  ~strix["backend"].str.fullmatch("CPU")]  # the chip's GPU, not its cores
    for _, r in strix.iterrows():
        rows.append({"chip": "Strix Halo", "run": f"Strix Halo, {r['backend']}",
                     "pp512_tok_per_s": float(r["throughput_tok_per_s"]),
                     "source_url": r["source_url"]})
    df = pd.DataFrame(rows)
    df["flops_per_s"] = df["pp512_tok_per_s"] * per_token
    return df


def _prices() -> pd.DataFrame:
    return tables.load("machine_prices")


def machines() -> list[Machine]:
    """Every chip in ``data/hardware_specs.csv`` with a bandwidth and a memory capacity."""
    quart = fraction_quartiles().set_index("family")
    runs = prefill_runs()
    prices = _prices()
    out = []
    for name, chip in hardware.chips().items():
        if "memory_bandwidth_GB_per_s" not in chip.specs:
            continue
        try:
            capacity = kvcache.usable_capacity_bytes(chip)
        except ValueError:
            continue
        family = FAMILY.get(chip.vendor, POOLED)
        q = quart.loc[family] if family in quart.index else quart.loc[POOLED]
        dense = chip.dense_fp16_flops
        mine = runs[runs["chip"] == name]
        p = prices[prices["chip"] == name].sort_values("memory_GB")
        spec = kvcache.capacity_spec(chip)
        out.append(Machine(
            name=name, vendor=chip.vendor, family=family,
            bandwidth_bytes_per_s=chip.bandwidth_bytes_per_s, capacity_bytes=capacity,
            capacity_basis={"memory_capacity_GB": "as stated",
                            "max_memory_capacity_GB": "largest configuration",
                            "memory_capacity_as_shipped_GB": "as shipped"}[spec],
            dense_flops_per_s=dense[0] if dense else None,
            flops_kind=dense[1] if dense else "no dense 16-bit figure sourced",
            prefill_flops=tuple(sorted(mine["flops_per_s"])),
            fraction_quartiles=(float(q["q25"]), float(q["q50"]), float(q["q75"])),
            fraction_basis=f"{family if family in quart.index else POOLED} "
                           f"({int(q['runs'])} runs)",
            prices=tuple((float(r["memory_GB"]) * GB, float(r["price"]), r["currency"],
                          f"{r['product']}, {r['configuration']}", r["source_url"])
                         for _, r in p.iterrows()),
            sources={"bandwidth": chip.source("memory_bandwidth_GB_per_s"),
                     "capacity": chip.source(spec),
                     "prefill": "; ".join(sorted(set(mine["source_url"]))),
                     "flops": next((chip.source(s) for s in hardware.DENSE_FP16_SPECS
                                    if s in chip.specs), "")}))
    return out


def machine(name: str) -> Machine:
    for m in machines():
        if m.name == name:
            return m
    raise ValueError(f"no machine {name!r} with a bandwidth and a capacity in data/")


# -- the arithmetic ---------------------------------------------------------------------------

def model_for(workload: Workload) -> tuple[roofline.Model, float, float]:
    """The workload's model for the roofline (FLOPs from the active parameters, the cache
    from its config), and its total and active weight bytes at the chosen format."""
    total = catalog.weight_bytes(workload.model, workload.weight_format)
    active = catalog.weight_bytes(workload.model, workload.weight_format, active=True)
    cfg = catalog.config(workload.model)
    m = roofline.Model(name=workload.model, params=catalog.params(workload.model, active=True),
                       weight_bytes=total, config=cfg,
                       kv_dtype_bytes=float(kvcache.dtype_bytes(KV_DTYPE)))
    return m, total, active


def estimate(m: Machine, w: Workload) -> dict:
    """Every number the ranking uses for one machine and workload, with the reasons."""
    model, w_total, w_active = model_for(w)
    cfg = model.config
    kv_end = kvcache.kv_cache_bytes(cfg, w.context_tokens, 1, KV_DTYPE)
    kv_mean = kvcache.kv_cache_bytes(cfg, w.mean_context_tokens, 1, KV_DTYPE)
    need = w_total + w.users * kv_end
    fits_weights = w_total <= m.capacity_bytes
    fits = need <= m.capacity_bytes
    max_users = kvcache.max_batch(cfg, w.context_tokens, m.capacity_bytes, w_total, KV_DTYPE) \
        if fits_weights else 0
    if not fits_weights:
        message = (f"{w.model} at {w.weight_format} ({w_total / GB:,.1f} GB of weights) does "
                   f"not fit in {m.name}'s {m.capacity_bytes / GB:,.0f} GB")
    elif not fits:
        message = (f"{w.users} users need {need / GB:,.1f} GB (weights {w_total / GB:,.1f} GB "
                   f"+ {w.users} x {kv_end / GB:,.2f} GB of cache); {m.name} has "
                   f"{m.capacity_bytes / GB:,.0f} GB, room for {max_users}")
    else:
        message = ""
    # first token
    prefill = roofline.step_work(model, prefill=[(0, w.prompt_tokens)]).flops
    eff = np.array(m.prefill_flops) if m.prefill_flops else None
    ttft = (prefill / eff.max(), prefill / float(np.median(eff)), prefill / eff.min()) \
        if eff is not None else (math.nan,) * 3
    bound = max(prefill / m.dense_flops_per_s, w_total / m.bandwidth_bytes_per_s) \
        if m.dense_flops_per_s else math.nan
    # one stream
    q = np.array(m.fraction_quartiles)
    ceiling = m.bandwidth_bytes_per_s / (w_active + kv_mean)
    single = q * ceiling
    # everyone at once: one decode step of all users (weights once, every cache); its
    # arithmetic at the rate published runs reached where there are some, else the roof
    compute = float(np.median(eff)) if eff is not None else m.dense_flops_per_s
    work = roofline.step_work(model, decode_contexts=[w.mean_context_tokens] * w.users)
    read = min(w_total, w.users * w_active) + work.kv_bytes
    step = max(work.flops / compute if compute else 0.0, read / m.bandwidth_bytes_per_s)
    per_user = q / step
    # price: the smallest recorded configuration that holds it all
    offer = next(((mem, price, cur, what, src) for mem, price, cur, what, src in
                  sorted(m.prices, key=lambda p: p[0]) if mem >= need), None)
    if offer:
        price_note = f"{offer[3]} ({offer[4]})"
    elif m.prices:
        price_note = (f"no recorded price for a configuration with {need / GB:,.0f} GB; "
                      + "; ".join(f"{p[3]}: {p[2]} {p[1]:,.0f}" for p in m.prices))
    else:
        price_note = "no vendor price stated"
    aggregate = w.users * per_user[1]
    return {
        "machine": m.name, "vendor": m.vendor, "family": m.family,
        "bandwidth_GB_per_s": m.bandwidth_bytes_per_s / GB,
        "capacity_GB": m.capacity_bytes / GB, "capacity_basis": m.capacity_basis,
        "dense_TFLOPS": (m.dense_flops_per_s or math.nan) / TFLOPS, "flops_kind": m.flops_kind,
        "prefill_runs": len(m.prefill_flops),
        "prefill_TFLOPS_low": (min(m.prefill_flops) / TFLOPS) if m.prefill_flops else math.nan,
        "prefill_TFLOPS_high": (max(m.prefill_flops) / TFLOPS) if m.prefill_flops else math.nan,
        "fraction_q25": q[0], "fraction_q50": q[1], "fraction_q75": q[2],
        "fraction_basis": m.fraction_basis,
        "weights_GB": w_total / GB, "kv_per_user_GB": kv_end / GB, "need_GB": need / GB,
        "fits": bool(fits), "max_users": int(max_users), "message": message,
        "prefill_flops": prefill,
        "ttft_fast_s": ttft[0], "ttft_mid_s": ttft[1], "ttft_slow_s": ttft[2],
        "ttft_bound_s": bound,
        "ceiling_tok_per_s": ceiling,
        "decode_low_tok_per_s": single[0], "decode_mid_tok_per_s": single[1],
        "decode_high_tok_per_s": single[2],
        "per_user_low_tok_per_s": per_user[0], "per_user_mid_tok_per_s": per_user[1],
        "per_user_high_tok_per_s": per_user[2],
        "compute_basis": ("published prefill runs" if eff is not None else
                          m.flops_kind if m.dense_flops_per_s else "none (memory only)"),
        "price": offer[1] if offer else math.nan, "currency": offer[2] if offer else "",
        "price_note": price_note,
        "price_per_tok_per_s": offer[1] / aggregate if offer else math.nan,
        "source_bandwidth": m.sources.get("bandwidth", ""),
        "source_capacity": m.sources.get("capacity", ""),
        "source_prefill": m.sources.get("prefill", ""),
    }


SORT = {"ttft": ("ttft_mid_s", True), "decode": ("decode_mid_tok_per_s", False),
        "concurrency": ("per_user_mid_tok_per_s", False)}


def rank(w: Workload, among: list[Machine] | None = None) -> pd.DataFrame:
    """Every machine's estimate for ``w``, best first by what the workload ranks by. Machines
    that cannot hold the workload come last, unranked, with the reason; for the first token,
    machines without a published prefill run come after those with one, ranked by nothing
    (their roofline bound is shown, not compared)."""
    df = pd.DataFrame([estimate(m, w) for m in (among or machines())])
    col, ascending = SORT[w.rank_by]
    ok = df["fits"] & df[col].notna()
    ranked = df[ok].sort_values(col, ascending=ascending, kind="stable")
    rest = df[~ok].sort_values(["fits", "machine"], ascending=[False, True], kind="stable")
    out = pd.concat([ranked, rest], ignore_index=True)
    out.insert(0, "rank", [i + 1 for i in range(len(ranked))] + [pd.NA] * len(rest))
    out["rank"] = out["rank"].astype("Int64")
    out["why_unranked"] = np.where(out["rank"].isna(), np.where(
        out["message"] != "", out["message"],
        "no published prefill run in data/ to estimate it from"), "")
    return out


def best(w: Workload, among: list[Machine] | None = None) -> pd.Series:
    """The top machine for ``w``, or a ValueError saying why there is none."""
    r = rank(w, among)
    if r["rank"].isna().all():
        model, total, _ = model_for(w)
        raise ValueError(f"no machine in data/ can run this workload: {w.model} at "
                         f"{w.weight_format} needs {total / GB:,.1f} GB of weights plus "
                         f"{r['kv_per_user_GB'].iloc[0]:,.2f} GB of cache per user "
                         f"for {w.users} users; the largest memory is "
                         f"{r['capacity_GB'].max():,.0f} GB")
    return r.iloc[0]


# -- for the in-page calculator ---------------------------------------------------------------

def calculator_rows(model_names: list[str] | None = None) -> pd.DataFrame:
    """One row per machine and model with every constant the in-page calculator needs to
    redo :func:`estimate` in JavaScript (tested to agree)."""
    names = model_names or catalog.names()
    rows = []
    for m in machines():
        eff = np.array(m.prefill_flops) if m.prefill_flops else None
        prices = sorted(m.prices, key=lambda p: p[0])[:3]
        base = {
            "machine": m.name, "vendor": m.vendor, "family": m.family,
            "bw": m.bandwidth_bytes_per_s,
            "capacity": m.capacity_bytes, "capacity_basis": m.capacity_basis,
            "dense": m.dense_flops_per_s or 0.0,
            "eff_low": float(eff.min()) if eff is not None else 0.0,
            "eff_mid": float(np.median(eff)) if eff is not None else 0.0,
            "eff_high": float(eff.max()) if eff is not None else 0.0,
            "runs": len(m.prefill_flops),
            "q25": m.fraction_quartiles[0], "q50": m.fraction_quartiles[1],
            "q75": m.fraction_quartiles[2], "fraction_basis": m.fraction_basis,
        }
        for i in range(3):
            base[f"p{i}_mem"] = prices[i][0] if i < len(prices) else 0.0
            base[f"p{i}_usd"] = prices[i][1] if i < len(prices) else 0.0
        for name in names:
            cfg = catalog.config(name)
            form = kvcache.linear_form(cfg)
            heads = cfg["num_attention_heads"]
            rows.append({**base, "model": name,
                         "params_total": catalog.params(name),
                         "params_active": catalog.params(name, active=True),
                         "full": form.full_elements_per_token,
                         "win": form.windowed_elements_per_token, "window": form.window or 0,
                         "groups": heads // cfg.get("num_key_value_heads", heads),
                         "context_limit": kvcache.context_limit(cfg)})
    return pd.DataFrame(rows)


KV_BYTES = float(kvcache.dtype_bytes(KV_DTYPE))


def js_expressions() -> dict[str, str]:
    """:func:`estimate` as Vega expressions over a :func:`calculator_rows` row and the params
    ``L`` (prompt), ``O`` (output), ``U`` (users) and ``bpw`` (bytes per weight)."""
    def elems(n):  # cached elements of one sequence of n tokens
        return f"(datum.full * ({n}) + datum.win * min({n}, datum.window))"

    def pairs(n):  # causal (query, key) element pairs of an n-token prompt
        return (f"(datum.full * ({n}) * (({n}) + 1) / 2 + datum.win * (({n}) <= datum.window ? "
                f"({n}) * (({n}) + 1) / 2 : datum.window * (datum.window + 1) / 2 + "
                f"(({n}) - datum.window) * datum.window))")

    mean = "(L + floor(O / 2))"
    e = {
        "w_total": "datum.params_total * bpw",
        "w_active": "datum.params_active * bpw",
        "kv_end": f"{elems('L + O')} * {KV_BYTES}",
        "kv_mean": f"{elems(mean)} * {KV_BYTES}",
        "prefill": f"2 * datum.params_active * L + 2 * datum.groups * {pairs('L')}",
        "decode_flops": f"U * (2 * datum.params_active + 2 * datum.groups * "
                        f"(datum.full * ({mean} + 1) + datum.win * min({mean} + 1, "
                        f"datum.window)))",
    }
    e["need"] = f"({e['w_total']}) + U * ({e['kv_end']})"
    e["fits"] = f"({e['need']}) <= datum.capacity"
    e["ttft_mid"] = f"datum.eff_mid > 0 ? ({e['prefill']}) / datum.eff_mid : null"
    e["ttft_fast"] = f"datum.eff_high > 0 ? ({e['prefill']}) / datum.eff_high : null"
    e["ttft_slow"] = f"datum.eff_low > 0 ? ({e['prefill']}) / datum.eff_low : null"
    e["ttft_bound"] = (f"datum.dense > 0 ? max(({e['prefill']}) / datum.dense, "
                       f"({e['w_total']}) / datum.bw) : null")
    ceiling = f"datum.bw / (({e['w_active']}) + ({e['kv_mean']}))"
    for q, name in (("q25", "low"), ("q50", "mid"), ("q75", "high")):
        e[f"decode_{name}"] = f"datum.{q} * {ceiling}"
    compute = "(datum.eff_mid > 0 ? datum.eff_mid : datum.dense)"
    step = (f"max({compute} > 0 ? ({e['decode_flops']}) / {compute} : 0, "
            f"(min({e['w_total']}, U * ({e['w_active']})) + U * ({e['kv_mean']})) / datum.bw)")
    for q, name in (("q25", "low"), ("q50", "mid"), ("q75", "high")):
        e[f"per_user_{name}"] = f"datum.{q} / ({step})"
    cheapest = "null"
    for i in (2, 1, 0):  # the smallest recorded memory that holds it all: configs by memory
        cheapest = (f"(datum.p{i}_mem > 0 && datum.p{i}_mem >= ({e['need']}) ? "
                    f"datum.p{i}_usd : {cheapest})")
    e["price"] = cheapest
    return e


# -- for the page -----------------------------------------------------------------------------

def machine_table(among: list[Machine] | None = None) -> pd.DataFrame:
    """The inputs behind every ranking, one row per machine, with their sources."""
    rows = []
    for m in among or machines():
        rows.append({
            "machine": m.name, "family": m.family,
            "bandwidth_GB_per_s": m.bandwidth_bytes_per_s / GB,
            "capacity_GB": m.capacity_bytes / GB, "capacity_basis": m.capacity_basis,
            "dense_TFLOPS": (m.dense_flops_per_s or math.nan) / TFLOPS,
            "flops_kind": m.flops_kind, "prefill_runs": len(m.prefill_flops),
            "prefill_TFLOPS_low": min(m.prefill_flops) / TFLOPS if m.prefill_flops else math.nan,
            "prefill_TFLOPS_high": max(m.prefill_flops) / TFLOPS if m.prefill_flops
            else math.nan,
            "fraction_basis": m.fraction_basis,
            "priced_configs": len(m.prices),
            "source_bandwidth": m.sources.get("bandwidth", ""),
        })
    return pd.DataFrame(rows)


def fmt_range(low: float, mid: float, high: float, digits: int = 0) -> str:
    """``mid (low–high)``, or ``mid`` when the range is one value; blank for NaN."""
    if mid != mid:  # NaN
        return ""
    one = f"{mid:,.{digits}f}"
    if f"{low:,.{digits}f}" == f"{high:,.{digits}f}":
        return one
    return f"{one} ({low:,.{digits}f}–{high:,.{digits}f})"


def ranking_display(ranked: pd.DataFrame, limit: int | None = None) -> pd.DataFrame:
    """A ranking formatted for the page: ranges as text, reasons for the unranked."""
    df = ranked if limit is None else ranked.head(limit)
    return pd.DataFrame({
        "rank": df["rank"].map(lambda r: "" if pd.isna(r) else str(int(r))),
        "machine": df["machine"],
        "ttft": [fmt_range(a, b, c) for a, b, c in
                 zip(df["ttft_fast_s"], df["ttft_mid_s"], df["ttft_slow_s"])],
        "bound": df["ttft_bound_s"].map(lambda v: "" if v != v else f"{v:,.1f}"),
        "decode": [fmt_range(a, b, c, 1) for a, b, c in zip(
            df["decode_low_tok_per_s"], df["decode_mid_tok_per_s"], df["decode_high_tok_per_s"])],
        "per_user": [fmt_range(a, b, c, 1) for a, b, c in zip(
            df["per_user_low_tok_per_s"], df["per_user_mid_tok_per_s"],
            df["per_user_high_tok_per_s"])],
        "memory": [f"{n:,.0f} of {c:,.0f} GB" for n, c in zip(df["need_GB"], df["capacity_GB"])],
        "users": df["max_users"].map("{:,}".format),
        "price": [f"{cur} {p:,.0f}" if p == p else "" for p, cur in
                  zip(df["price"], df["currency"])],
        "note": df["why_unranked"],
    })
