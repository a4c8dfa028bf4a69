"""What to buy: the essay's closing table as a calculator over the machines in ``data/``.

For a workload (prompt and output length, concurrent users, a model from ``data/models`` at
a weight format) every machine gets these numbers, each traceable to the rows behind it:

- **time to first token**: the prompt's prefill FLOPs (:func:`napkin.roofline.step_work`)
  divided by the prefill rate the machine *reached* in published llama.cpp runs (Llama-2-7B
  Q4_0, pp512, turned into FLOP/s the same way), a range over those runs; beside it the
  roofline bound from the dense peak of the arithmetic the weights actually run in on that
  machine's llama.cpp backend (:func:`napkin.roofline.arithmetic_for`): INT8 for quantized
  weights on CUDA and ROCm (MMQ kernels), FP16 on Metal. A machine that states no figure for
  that arithmetic has no bound, and no other figure stands in for it.
- **single-stream tokens/s**: bandwidth over the bytes a decode step reads (the active
  weights at the chosen format plus the cache at the mean context), discounted by the
  fraction of that ceiling published runs on the same family of machine reach (chapter 1's
  data): the first and third quartiles as the range, the median as the middle.
- **capacity**: whether the weights and every user's cache fit in the memory the GPU may
  use, and how many users could. Capacities are binary (GiB). On a Mac that is the default
  GPU limit macOS sets (Metal's ``recommendedMaxWorkingSetSize``, ``data/gpu_memory_limits.csv``),
  not the whole unified memory: above it a workload fits only after raising
  ``iogpu.wired_limit_mb``, and is not ranked.
- **per-user tokens/s at that concurrency**: the roofline of one decode step of all users
  (weights once, every cache), discounted like the single stream.
- **price**, where a vendor states one (``data/machine_prices.csv``): the cheapest recorded
  configuration whose usable memory holds the workload, and that price per token/s of decode.

:func:`extrapolation_check` tests the first-token method itself: it predicts published
pp2048 rates of other models at context depths up to 32k tokens from the same pp512 runs.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field

import numpy as np
import pandas as pd

from . import catalog, essay, hardware, kvcache, models, phases, published, roofline, tables
from .units import GB, TFLOPS, GiB, MiB, require_positive

#: Chapter 1's machine families, by vendor; a vendor with no published runs of its own
#: (AMD here) is discounted by every published run pooled.
FAMILY = {"Apple": "Apple Silicon", "NVIDIA": "GPU (CUDA)"}
POOLED = "all published runs"
#: The llama.cpp backend each vendor's machines are held to. Strix Halo (AMD) runs both
#: ROCm/HIP and Vulkan builds; it is held to the ROCm roof (INT8 for quantized weights),
#: which its data puts at the same rate as FP16, so the choice does not move its bound.
BACKEND = {"NVIDIA": "CUDA", "AMD": "ROCm", "Apple": "Metal"}
WHY_BACKEND = {
    "CUDA": "llama.cpp's CUDA build multiplies quantized weights with INT8 MMQ kernels on the "
            "tensor cores",
    "ROCm": "llama.cpp's ROCm/HIP build runs the same MMQ kernels (INT8 dot products); its "
            "Vulkan builds are held to the same roof",
    "Metal": "llama.cpp's Metal build dequantizes every format to FP16 before its matmuls "
             "(Apple's GPUs have no integer matrix path)",
}
#: The arithmetic kinds a machine's roof may be read in.
ARITHMETIC = ("fp16", "int8", "fp8", "fp4")
#: Chip names in the CUDA/Vulkan scoreboard -> the book's chip names. A run whose variant
#: the sources dispute (or do not state) counts for every variant it may be, and says so.
SCOREBOARD_NAMES = {
    "H100 80GB (HBM3 => SXM5, see note)": ("H100 SXM", "H100 PCIe"),
    "A100 80GB (PCIe or SXM not stated)": ("A100 SXM", "A100 PCIe"),
    "DGX Spark (GB10)": ("DGX Spark",),
    "Strix Halo (Radeon 8060S iGPU, Ryzen AI Max+ 395)": ("Strix Halo",),
}
DISPUTED = {
    "H100 80GB (HBM3 => SXM5, see note)": "one copy of the scoreboard labels this run SXM, "
                                          "another PCIe: shown as both",
    "A100 80GB (PCIe or SXM not stated)": "the scoreboard does not say PCIe or SXM: shown "
                                          "as both",
}
#: The reference run that turns a published prefill rate into FLOP/s.
REFERENCE_MODEL, REFERENCE_FORMAT, REFERENCE_TOKENS = "Llama-2-7B", "Q4_0", 512
RANK_BY = {"ttft": "time to first token", "decode": "single-stream tokens/s",
           "concurrency": "tokens/s per user at that concurrency"}
KV_DTYPE = "f16"
#: Macs with at most this much memory form the small class of the GPU-limit rule: the
#: largest memory of the Pro chips and of the 32-core M4 Max. No Mac between this and
#: 64 GiB is recorded in data/gpu_memory_limits.csv.
SMALL_MAC_GiB = 36
RAISE_LIMIT = "fits only after raising iogpu.wired_limit_mb"
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

    ``capacity_bytes`` is the whole memory (binary); ``gpu_limit_bytes`` what the GPU may
    use by default where that is less (a Mac), else None. ``roofs`` are dense peaks by
    arithmetic (``"int8"``: FLOP/s), ``roof_labels`` what each figure is; ``backend`` the
    llama.cpp backend that decides which of them a weight format runs in.
    ``prefill_flops`` are the FLOP/s published llama.cpp prefill runs reached (one per run).
    """

    name: str
    vendor: str
    family: str
    bandwidth_bytes_per_s: float
    capacity_bytes: float
    capacity_basis: str = ""
    gpu_limit_bytes: float | None = None
    gpu_limit_basis: str = ""
    backend: str = ""
    roofs: dict = field(default_factory=dict)
    roof_labels: dict = field(default_factory=dict)
    prefill_flops: tuple = ()
    prefill_note: str = ""
    fraction_quartiles: tuple = (0.5, 0.5, 0.5)
    fraction_basis: str = ""
    prices: tuple = ()   # (memory bytes, usable bytes, price, currency, product, source)
    sources: dict = field(default_factory=dict)

    def __post_init__(self):
        require_positive("bandwidth_bytes_per_s", self.bandwidth_bytes_per_s)
        require_positive("capacity_bytes", self.capacity_bytes)
        if self.gpu_limit_bytes is not None:
            require_positive("gpu_limit_bytes", self.gpu_limit_bytes)
            if self.gpu_limit_bytes > self.capacity_bytes:
                raise ValueError(f"gpu_limit_bytes {self.gpu_limit_bytes!r} is more than "
                                 f"capacity_bytes {self.capacity_bytes!r}")
        if self.backend and self.backend not in roofline.BACKENDS:
            raise ValueError(f"backend must be one of {', '.join(roofline.BACKENDS)}, "
                             f"got {self.backend!r}")
        for arith, flops in self.roofs.items():
            if arith not in ARITHMETIC:
                raise ValueError(f"roofs: unknown arithmetic {arith!r}")
            require_positive(f"roofs[{arith!r}]", flops)
        for f in self.prefill_flops:
            require_positive("prefill_flops", f)
        q = self.fraction_quartiles
        if len(q) != 3 or not all(0 < x <= 1 for x in q) or list(q) != sorted(q):
            raise ValueError(f"fraction_quartiles must be three increasing fractions in (0, 1], "
                             f"got {q!r}")

    @property
    def usable_bytes(self) -> float:
        """Memory the GPU may use without changing a system setting."""
        return self.capacity_bytes if self.gpu_limit_bytes is None else self.gpu_limit_bytes

    def roof(self, weight_format: str) -> tuple[str, float | None, str]:
        """(arithmetic, dense FLOP/s or None, what the figure is) for a matmul of weights in
        ``weight_format`` on this machine's backend. FP8 weights on a chip that states no FP8
        figure run as FP16 matmuls (the weights are widened: weight-only FP8)."""
        if not self.backend:
            return "", None, "no llama.cpp backend known for this vendor"
        arith = roofline.arithmetic_for(weight_format, self.backend)
        if arith in self.roofs:
            return arith, self.roofs[arith], self.roof_labels.get(arith, arith.upper())
        if arith == "fp8" and "fp16" in self.roofs:
            return "fp16", self.roofs["fp16"], (self.roof_labels.get("fp16", "FP16") +
                                                 "; no FP8 figure: FP8 weights run as FP16")
        return arith, None, f"no {arith.upper()} figure stated"

# -- from data/ to machines -------------------------------------------------------------------

def fraction_quartiles(h100_reading: str | None = None) -> pd.DataFrame:
    """Quartiles of decode's fraction of the bandwidth ceiling per machine family (chapter 1's
    published runs), and over every run pooled.

    The H100 scoreboard run is left out by default: one copy of the scoreboard calls the card
    SXM, another PCIe, so its ceiling is not known. ``h100_reading="H100 SXM"`` or
    ``"H100 PCIe"`` puts it in with that card's bandwidth, to show what each reading does.
    """
    runs = published.all_machines()
    disputed = runs["machine"].str.startswith(tuple(DISPUTED))
    if h100_reading is None:
        runs = runs[~disputed]
    else:
        if h100_reading not in SCOREBOARD_NAMES["H100 80GB (HBM3 => SXM5, see note)"]:
            raise ValueError(f"h100_reading must be 'H100 SXM' or 'H100 PCIe', "
                             f"got {h100_reading!r}")
        runs = runs.copy()
        bw = hardware.chip(h100_reading).bandwidth_bytes_per_s
        runs.loc[disputed, "bandwidth_bytes_per_s"] = bw
        runs["ceiling_tokens_per_s"] = runs["bandwidth_bytes_per_s"] / runs["bytes_per_token"]
        runs["fraction_of_ceiling"] = runs["tokens_per_s"] / runs["ceiling_tokens_per_s"]
    rows = []
    for family, g in list(runs.groupby("family")) + [(POOLED, runs)]:
        f = g["fraction_of_ceiling"]
        rows.append({"family": family, "runs": len(f), "q25": float(f.quantile(0.25)),
                     "q50": float(f.median()), "q75": float(f.quantile(0.75)),
                     "source_url": "; ".join(tables.sources(g)[:3])})
    return pd.DataFrame(rows)


def h100_decode_readings() -> pd.DataFrame:
    """The disputed H100 decode run read both ways: its fraction of each card's ceiling."""
    run = published.gpus()
    run = run[run["machine"].str.startswith("H100 80GB")].iloc[0]
    rows = []
    for name in SCOREBOARD_NAMES["H100 80GB (HBM3 => SXM5, see note)"]:
        bw = hardware.chip(name).bandwidth_bytes_per_s
        rows.append({"reading": name, "bandwidth_GB_per_s": bw / GB,
                     "tg128_tok_per_s": float(run["tokens_per_s"]),
                     "fraction_of_ceiling": float(run["tokens_per_s"]) /
                     (bw / float(run["bytes_per_token"])),
                     "source_url": run["source_url"]})
    return pd.DataFrame(rows)


def gpu_memory_limits() -> pd.DataFrame:
    """Recorded default GPU memory limits of Macs, with the fraction of memory each is."""
    df = tables.load("gpu_memory_limits")
    return df.assign(fraction=df["limit_GiB"] / df["memory_GiB"])


def default_gpu_fraction(memory_GiB: float) -> tuple[float, str]:
    """The fraction of a Mac's unified memory its GPU may use by default, and why.

    The rule: the lowest fraction recorded (``data/gpu_memory_limits.csv``, measured rows)
    for a Mac of the same class, at most :data:`SMALL_MAC_GiB` or above it. Higher values
    have been recorded (newer macOS, larger Macs); the lowest is what a buyer can count on
    without changing a system setting.
    """
    require_positive("memory_GiB", memory_GiB)
    df = gpu_memory_limits()
    df = df[df["kind"] == "measured"]
    small = memory_GiB <= SMALL_MAC_GiB
    band = df[(df["memory_GiB"] <= SMALL_MAC_GiB) == small]
    low = band.loc[band["fraction"].idxmin()]
    side = f"at most {SMALL_MAC_GiB}" if small else f"more than {SMALL_MAC_GiB}"
    return float(low["fraction"]), (f"lowest recorded default for Macs with {side} GiB "
                                    f"({low['machine']}, {low['memory_GiB']:.0f} GiB: "
                                    f"{low['reported_as']})")


def reference_model() -> roofline.Model:
    return _flops_model(REFERENCE_MODEL, REFERENCE_FORMAT)


def _flops_model(name: str, fmt: str = "Q4_0") -> roofline.Model:
    """A catalog model for the roofline: FLOPs from its active parameters (MoE), attention
    from its config (sliding windows honoured)."""
    return roofline.Model(name=name, params=catalog.params(name, active=True),
                          weight_bytes=catalog.weight_bytes(name, fmt),
                          config=catalog.config(name))


def reference_flops_per_token() -> float:
    """FLOPs per prompt token of the reference run (Llama-2-7B, 512-token prompt)."""
    work = roofline.step_work(reference_model(), prefill=[(0, REFERENCE_TOKENS)])
    return work.flops / REFERENCE_TOKENS


def _roof_of(chip: hardware.Chip, arithmetic: str) -> tuple[float, str] | None:
    """A chip's dense peak of one arithmetic and a label saying what it is, or None."""
    if not chip.has_peak(arithmetic):
        return None
    p = chip.peak(arithmetic)
    return p.flops_per_s, p.kind + (" (derived, not vendor-stated)" if p.derived else "")


def prefill_runs() -> pd.DataFrame:
    """Every published llama.cpp pp512 run of Llama-2-7B Q4_0 on a GPU, with the FLOP/s it
    reached and, for a chip of the specs table, its fraction of the roof the run's weights
    are held to there (INT8 on CUDA/ROCm machines, FP16 on Apple's).

    ``chip`` is the book's chip name (a run whose variant is disputed appears once for each
    variant, with a ``note``), or the scoreboard's name for a GPU the book has no specs for.
    """
    per_token = reference_flops_per_token()
    rows = []
    apple = tables.load("apple_silicon_llama2_7b")
    apple = apple[(apple["quant"] == "Q4_0") & (apple["test"] == "pp512")]
    for _, r in apple.iterrows():
        rows.append({"chip": hardware.apple_chip_name(r["chip"], r["gpu_cores"]),
                     "run": f"{r['chip']} {int(r['gpu_cores'])}-core GPU, Metal",
                     "run_backend": "Metal", "note": "",
                     "pp512_tok_per_s": float(r["throughput_tok_per_s"]),
                     "source_url": r["source_url"]})
    gpus = tables.load("gpu_llama2_7b_q4_0")
    gpus = gpus[gpus["test"] == "pp512"]
    for _, r in gpus.iterrows():
        for name in SCOREBOARD_NAMES.get(r["gpu"], (r["gpu"],)):
            rows.append({"chip": name,
                         "run": f"{r['gpu']}, {r['backend']}, flash attention "
                                f"{r['flash_attention']}",
                         "run_backend": r["backend"], "note": DISPUTED.get(r["gpu"], ""),
                         "pp512_tok_per_s": float(r["throughput_tok_per_s"]),
                         "source_url": r["source_url"]})
    strix = tables.load("strix_halo_llamacpp")
    strix = strix[(strix["test"] == "pp512") & (strix["quant"] == "Q4_0") &
                  strix["model"].str.contains("Llama-2-7B|Llama 2 7B", regex=True) &
                  ~strix["backend"].str.fullmatch("CPU")]  # the chip's GPU, not its cores
    for _, r in strix.iterrows():
        rows.append({"chip": "Strix Halo", "run": f"Strix Halo, {r['backend']}",
                     "run_backend": r["backend"], "note": "",
                     "pp512_tok_per_s": float(r["throughput_tok_per_s"]),
                     "source_url": r["source_url"]})
    df = pd.DataFrame(rows)
    df["flops_per_s"] = df["pp512_tok_per_s"] * per_token
    known = hardware.chips()
    roofs, labels, backends = [], [], []
    for name in df["chip"]:
        chip = known.get(name)
        backend = BACKEND.get(chip.vendor, "") if chip else ""
        roof = _roof_of(chip, roofline.arithmetic_for(REFERENCE_FORMAT, backend)) \
            if backend else None
        backends.append(backend)
        roofs.append(roof[0] if roof else math.nan)
        labels.append(roof[1] if roof else ("no specs in data/" if chip is None else
                                            "no figure stated for that arithmetic"))
    df["backend"] = backends
    df["roof_flops_per_s"] = roofs
    df["roof_label"] = labels
    df["fraction_of_roof"] = df["flops_per_s"] / df["roof_flops_per_s"]
    return df


def _backend_name(backend: str) -> str:
    """A run's backend as the book groups it: ``"Vulkan AMDVLK, ..."`` -> ``"Vulkan"``,
    ``"HIP/ROCm (rocWMMA ...)"`` -> ``"ROCm"``."""
    b = str(backend)
    for name, marks in (("Vulkan", ("Vulkan",)), ("ROCm", ("ROCm", "HIP")),
                        ("Metal", ("Metal",)), ("CUDA", ("CUDA",))):
        if any(m in b for m in marks):
            return name
    return b


def backend_fractions(among: list[str] | None = None) -> pd.DataFrame:
    """Fraction of the roof published prefill runs reached, by the run's own llama.cpp
    backend and the machine's vendor: how much of the first-token ranking is software. Runs
    whose variant is disputed (the H100 and A100 scoreboard rows) are left out."""
    runs = prefill_runs().dropna(subset=["fraction_of_roof"])
    if among is not None:
        runs = runs[runs["chip"].isin(among)]
    runs = runs[runs["note"] == ""]  # a run of a disputed variant has no known roof
    vendor = {n: c.vendor for n, c in hardware.chips().items()}
    runs = runs.assign(vendor=runs["chip"].map(vendor),
                       run_backend=runs["run_backend"].map(_backend_name))
    rows = []
    for (v, b), g in runs.groupby(["vendor", "run_backend"]):
        f = g["fraction_of_roof"]
        rows.append({"vendor": v, "run_backend": b, "runs": len(f),
                     "machines": ", ".join(sorted(g["chip"].unique())),
                     "low": float(f.min()), "median": float(f.median()),
                     "high": float(f.max())})
    return pd.DataFrame(rows).sort_values("median", ascending=False, ignore_index=True)


def _usable(vendor: str, memory_GiB: float) -> float:
    """GiB the GPU may use by default in a configuration with ``memory_GiB``."""
    return memory_GiB * default_gpu_fraction(memory_GiB)[0] if vendor == "Apple" else memory_GiB


def _prices() -> pd.DataFrame:
    return tables.load("machine_prices")


def machines() -> list[Machine]:
    """Every chip in ``data/hardware_specs.csv`` with a bandwidth and a memory capacity."""
    quart = fraction_quartiles().set_index("family")
    runs = prefill_runs()
    prices = _prices()
    out = []
    for name, chip in hardware.chips().items():
        if "memory_bandwidth_GB_per_s" not in chip.specs or chip.capacity_bytes is None:
            continue
        capacity = chip.capacity_bytes
        family = FAMILY.get(chip.vendor, POOLED)
        q = quart.loc[family] if family in quart.index else quart.loc[POOLED]
        mine = runs[runs["chip"] == name]
        p = prices[prices["chip"] == name].sort_values("memory_GiB")
        spec = chip.capacity_spec
        limit, limit_basis = None, ""
        if chip.vendor == "Apple":
            share, limit_basis = default_gpu_fraction(capacity / GiB)
            limit = share * capacity
        roofs, labels, srcs = {}, {}, []
        for arith in ARITHMETIC:
            found = _roof_of(chip, arith)
            if found:
                roofs[arith], labels[arith] = found
                srcs.append(chip.peak(arith).source)
        out.append(Machine(
            name=name, vendor=chip.vendor, family=family,
            bandwidth_bytes_per_s=chip.bandwidth_bytes_per_s, capacity_bytes=capacity,
            capacity_basis=hardware.CAPACITY_SPECS[spec],
            gpu_limit_bytes=limit, gpu_limit_basis=limit_basis,
            backend=BACKEND.get(chip.vendor, ""), roofs=roofs, roof_labels=labels,
            prefill_flops=tuple(sorted(mine["flops_per_s"])),
            prefill_note="; ".join(sorted(set(n for n in mine["note"] if n))),
            fraction_quartiles=(float(q["q25"]), float(q["q50"]), float(q["q75"])),
            fraction_basis=f"{family if family in quart.index else POOLED} "
                           f"({int(q['runs'])} runs)",
            prices=tuple((float(r["memory_GiB"]) * GiB,
                          _usable(chip.vendor, float(r["memory_GiB"])) * GiB,
                          float(r["price"]), r["currency"],
                          f"{r['product']}, {r['configuration']}", r["source_url"])
                         for _, r in p.iterrows()),
            sources={"bandwidth": chip.source("memory_bandwidth_GB_per_s"),
                     "capacity": chip.source(spec),
                     "prefill": "; ".join(sorted(set(mine["source_url"]))),
                     "flops": "; ".join(sorted(set(srcs)))}))
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


def _fit_message(m: Machine, w: Workload, w_total: float, kv_end: float, need: float,
                 max_users: int) -> str:
    """Why a workload does not fit (blank when it does)."""
    cap, usable = m.capacity_bytes, m.usable_bytes
    if w_total > cap:
        return (f"{w.model} at {w.weight_format} ({w_total / GiB:,.1f} GiB of weights) does "
                f"not fit in {m.name}'s {cap / GiB:,.0f} GiB")
    if need > cap:
        return (f"{w.users} users need {need / GiB:,.1f} GiB (weights {w_total / GiB:,.1f} GiB "
                f"+ {w.users} x {kv_end / GiB:,.2f} GiB of cache); {m.name} has "
                f"{cap / GiB:,.0f} GiB, room for {max_users}"
                + (" within its default GPU limit" if usable < cap else ""))
    if need > usable:
        return (f"{RAISE_LIMIT} to at least {math.ceil(need / MiB):,} MiB: it needs "
                f"{need / GiB:,.1f} GiB, and macOS lets the GPU use {usable / GiB:,.1f} of "
                f"{cap / GiB:,.0f} GiB by default")
    return ""


def estimate(m: Machine, w: Workload) -> dict:
    """Every number the ranking uses for one machine and workload, with the reasons."""
    model, w_total, w_active = model_for(w)
    cfg = model.config
    kv_end = kvcache.kv_cache_bytes(cfg, w.context_tokens, 1, KV_DTYPE)
    kv_mean = kvcache.kv_cache_bytes(cfg, w.mean_context_tokens, 1, KV_DTYPE)
    need = w_total + w.users * kv_end
    fits = need <= m.usable_bytes
    fits_raised = need <= m.capacity_bytes
    max_users = kvcache.max_batch(cfg, w.context_tokens, m.usable_bytes, w_total, KV_DTYPE) \
        if w_total <= m.usable_bytes else 0
    message = _fit_message(m, w, w_total, kv_end, need, max_users)
    # first token: measured rates, and the roof of the arithmetic the weights run in
    prefill = roofline.step_work(model, prefill=[(0, w.prompt_tokens)]).flops
    eff = np.array(m.prefill_flops) if m.prefill_flops else None
    ttft = (prefill / eff.max(), prefill / float(np.median(eff)), prefill / eff.min()) \
        if eff is not None else (math.nan,) * 3
    arith, roof, roof_label = m.roof(w.weight_format)
    bound = max(prefill / roof, w_total / m.bandwidth_bytes_per_s) if roof else math.nan
    _, ref_roof, _ = m.roof(REFERENCE_FORMAT)
    # one stream
    q = np.array(m.fraction_quartiles)
    ceiling = m.bandwidth_bytes_per_s / (w_active + kv_mean)
    single = q * ceiling
    # everyone at once: one decode step of all users (weights once, every cache); its
    # arithmetic at the rate published runs reached where there are some, else the roof
    compute = float(np.median(eff)) if eff is not None else roof
    work = roofline.step_work(model, decode_contexts=[w.mean_context_tokens] * w.users)
    read = min(w_total, w.users * w_active) + work.kv_bytes
    step = max(work.flops / compute if compute else 0.0, read / m.bandwidth_bytes_per_s)
    per_user = q / step
    # price: the smallest recorded configuration whose usable memory holds it all
    offer = next(((mem, usable, price, cur, what, src) for mem, usable, price, cur, what, src
                  in sorted(m.prices, key=lambda p: p[0]) if usable >= need), None)
    if offer:
        price_note = f"{offer[4]} ({offer[5]})"
    elif m.prices:
        price_note = (f"no recorded price for a configuration whose GPU may use "
                      f"{need / GiB:,.0f} GiB; "
                      + "; ".join(f"{p[4]}: {p[3]} {p[2]:,.0f}" for p in m.prices))
    else:
        price_note = "no vendor price stated"
    aggregate = w.users * per_user[1]
    nan = math.nan
    return {
        "machine": m.name, "vendor": m.vendor, "family": m.family, "backend": m.backend,
        "bandwidth_GB_per_s": m.bandwidth_bytes_per_s / GB,
        "capacity_GiB": m.capacity_bytes / GiB, "capacity_basis": m.capacity_basis,
        "usable_GiB": m.usable_bytes / GiB, "gpu_limit_basis": m.gpu_limit_basis,
        "roof_arithmetic": arith, "roof_TFLOPS": (roof or nan) / TFLOPS, "roof_label": roof_label,
        "prefill_runs": len(m.prefill_flops), "prefill_note": m.prefill_note,
        "prefill_TFLOPS_low": (min(m.prefill_flops) / TFLOPS) if m.prefill_flops else nan,
        "prefill_TFLOPS_high": (max(m.prefill_flops) / TFLOPS) if m.prefill_flops else nan,
        "prefill_fraction_low": (min(m.prefill_flops) / ref_roof)
        if m.prefill_flops and ref_roof else nan,
        "prefill_fraction_high": (max(m.prefill_flops) / ref_roof)
        if m.prefill_flops and ref_roof else nan,
        "fraction_q25": q[0], "fraction_q50": q[1], "fraction_q75": q[2],
        "fraction_basis": m.fraction_basis,
        "weights_GiB": w_total / GiB, "kv_per_user_GiB": kv_end / GiB, "need_GiB": need / GiB,
        "fits": bool(fits), "fits_after_raising": bool(fits_raised and not fits),
        "max_users": int(max_users), "message": message,
        "prefill_flops": prefill,
        "ttft_fast_s": ttft[0], "ttft_mid_s": ttft[1], "ttft_slow_s": ttft[2],
        "ttft_bound_s": bound,
        "ceiling_tok_per_s": ceiling,
        "decode_low_tok_per_s": single[0], "decode_mid_tok_per_s": single[1],
        "decode_high_tok_per_s": single[2],
        "per_user_low_tok_per_s": per_user[0], "per_user_mid_tok_per_s": per_user[1],
        "per_user_high_tok_per_s": per_user[2],
        "compute_basis": ("published prefill runs" if eff is not None else
                          f"roof: {roof_label}" if roof else "none (memory only)"),
        "price": offer[2] if offer else nan, "currency": offer[3] if offer else "",
        "price_note": price_note,
        "price_per_tok_per_s": offer[2] / aggregate if offer else nan,
        "source_bandwidth": m.sources.get("bandwidth", ""),
        "source_capacity": m.sources.get("capacity", ""),
        "source_prefill": m.sources.get("prefill", ""),
        "source_roof": m.sources.get("flops", ""),
    }


SORT = {"ttft": ("ttft_mid_s", True), "decode": ("decode_mid_tok_per_s", False),
        "concurrency": ("per_user_mid_tok_per_s", False)}


def rank(w: Workload, among: list[Machine] | None = None) -> pd.DataFrame:
    """Every machine's estimate for ``w``, best first by what the workload ranks by.

    Only machines that hold the workload in the memory their GPU may use by default are
    ranked. The rest come after, unranked, with the reason: first those that hold it only
    after a system setting is raised (a Mac over its default GPU limit), then those that
    cannot. For the first token, machines without a published prefill run come after those
    with one, ranked by nothing (their roofline bound is shown, not compared).
    """
    df = pd.DataFrame([estimate(m, w) for m in (among or machines())])
    col, ascending = SORT[w.rank_by]
    ok = df["fits"] & df[col].notna()
    ranked = df[ok].sort_values(col, ascending=ascending, kind="stable")
    rest = df[~ok].sort_values(["fits", "fits_after_raising", "machine"],
                               ascending=[False, False, True], kind="stable")
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
                         f"{w.weight_format} needs {total / GiB:,.1f} GiB of weights plus "
                         f"{r['kv_per_user_GiB'].iloc[0]:,.2f} GiB of cache per user "
                         f"for {w.users} users; the most any GPU may use is "
                         f"{r['usable_GiB'].max():,.0f} GiB")
    return r.iloc[0]

# -- how far the first-token method can be trusted --------------------------------------------

#: ``gpt_oss_llamacpp.csv`` hardware -> the chip its reference runs carry in
#: :func:`prefill_runs`. The 36 GB M4 Max has the 32-core GPU (``machine_prices.csv``).
GPT_OSS_NAMES = {
    "RTX 5090 32GB": "RTX 5090", "RTX 4090 24GB": "RTX 4090", "RTX 3090 24GB": "RTX 3090",
    "RTX 4080 SUPER 16GB": "RTX 4080 SUPER", "RTX 5080 16GB": "RTX 5080",
    "RTX 5070 Ti 16GB": "RTX 5070 Ti", "RTX 3060 12GB": "RTX 3060 12GB",
    "RTX PRO 6000 96GB": "RTX PRO 6000 Blackwell", "Apple M3 Ultra 80c 512GB": "M3 Ultra",
    "Apple M2 Ultra 76c 192GB": "M2 Ultra", "Apple M4 Max 36GB": "M4 Max (32-core GPU)",
    "Apple M1 Max 64GB": "M1 Max", "Apple M1 Pro 32GB": "M1 Pro",
}
#: Benchmarked models -> the architecture in ``data/models`` that costs them. The file's
#: Qwen2.5-Coder-7B has Qwen2.5-7B's shape (llama-bench counts the same 7.62 B parameters).
VALIDATION_MODELS = {"gpt-oss-20b": "gpt-oss-20b", "gpt-oss-120b": "gpt-oss-120b",
                     "Qwen2.5-Coder-7B": "Qwen2.5-7B-Instruct"}


def _target_runs() -> pd.DataFrame:
    """Published prefill runs of other models: the DGX Spark / M2 Ultra depth sweeps of the
    llama.cpp benchmark file (and its copies), and the gpt-oss guide's runs."""
    sb = phases.spark_bench()
    sb = sb[sb["phase"] == phases.PREFILL]
    a = pd.DataFrame({
        "machine": sb["machine"], "chip": sb["machine"],
        "model": sb["model"].map(lambda s: str(s).split(" (")[0]), "test": sb["test"],
        "depth_tokens": sb["context_depth_tokens"].astype(int),
        "measured_tok_per_s": sb["throughput_tok_per_s"].astype(float),
        "backend": sb["backend"].map(lambda b: "Metal" if str(b).startswith("Metal") else b),
        "source": "benchmark file, build " + sb["build"].astype(str),
        "confidence": sb["confidence"], "source_url": sb["source_url"]})
    g = tables.load("gpt_oss_llamacpp")
    g = g[g["test"].str.fullmatch(r"pp\d+") & g["hardware"].isin(GPT_OSS_NAMES)]
    b = pd.DataFrame({
        "machine": g["hardware"], "chip": g["hardware"].map(GPT_OSS_NAMES),
        "model": g["model"], "test": g["test"], "depth_tokens": 0,
        "measured_tok_per_s": g["throughput_tok_per_s"].astype(float),
        "backend": g["backend"], "source": "gpt-oss guide", "confidence": g["confidence"],
        "source_url": g["source_url"]})
    df = pd.concat([a, b], ignore_index=True)
    return df[df["model"].isin(VALIDATION_MODELS)].reset_index(drop=True)


def extrapolation_check() -> pd.DataFrame:
    """The first-token method, applied to runs it did not see: each machine's FLOP/s on
    Llama-2-7B Q4_0 pp512 (median run, as the ranking uses; the range as low and high)
    times the target run's prompt tokens over their prefill FLOPs (:func:`roofline.step_work`,
    after ``depth_tokens`` already cached; MoE by active parameters), against the rate the
    target run measured. ``ratio`` is predicted over measured: above 1 the method is too
    optimistic (the first token would come later than it says)."""
    runs = prefill_runs()
    eff = runs.groupby("chip")["flops_per_s"]
    mid, low, high = eff.median(), eff.min(), eff.max()
    n_ref = eff.size()
    df = _target_runs()
    df = df[df["chip"].isin(mid.index)].reset_index(drop=True)
    flops = []
    for model, test, depth in zip(df["model"], df["test"], df["depth_tokens"]):
        m = _flops_model(VALIDATION_MODELS[model])
        flops.append(roofline.step_work(m, prefill=[(int(depth), int(test[2:]))]).flops)
    n = df["test"].str[2:].astype(int)
    df["prompt_tokens"] = n
    df["architecture"] = df["model"].map(VALIDATION_MODELS)
    df["moe"] = df["model"].map(phases.is_moe)
    df["reference_runs"] = df["chip"].map(n_ref).astype(int)
    df["prefill_flops"] = flops
    df["predicted_tok_per_s"] = n * df["chip"].map(mid) / df["prefill_flops"]
    df["predicted_low_tok_per_s"] = n * df["chip"].map(low) / df["prefill_flops"]
    df["predicted_high_tok_per_s"] = n * df["chip"].map(high) / df["prefill_flops"]
    df["ratio"] = df["predicted_tok_per_s"] / df["measured_tok_per_s"]
    df["measured_in_range"] = df["measured_tok_per_s"].between(
        df["predicted_low_tok_per_s"], df["predicted_high_tok_per_s"])
    return df


def _spread(r: pd.Series) -> dict:
    return {"runs": len(r), "median": float(r.median()), "q25": float(r.quantile(0.25)),
            "q75": float(r.quantile(0.75)), "low": float(r.min()), "high": float(r.max())}


def extrapolation_summary(check: pd.DataFrame | None = None) -> pd.DataFrame:
    """Predicted over measured, summarised: over every run, by model kind, by backend, and
    at the deepest context measured (the case nearest a long coding prompt)."""
    df = extrapolation_check() if check is None else check
    deepest = df["depth_tokens"] + df["prompt_tokens"] == \
        (df["depth_tokens"] + df["prompt_tokens"]).max()
    groups = {"all": df, "dense": df[~df["moe"]], "MoE": df[df["moe"]],
              "Metal (Apple)": df[df["backend"] == "Metal"],
              "CUDA (NVIDIA)": df[df["backend"] == "CUDA"],
              "dense, deepest context": df[~df["moe"] & deepest],
              "deepest context": df[deepest]}
    return pd.DataFrame([{"group": k, **_spread(g["ratio"])} for k, g in groups.items()
                         if len(g)])

# -- for the in-page calculator ---------------------------------------------------------------

def calculator_rows(model_names: list[str] | None = None,
                    formats: list[str] | None = None) -> pd.DataFrame:
    """One row per machine and model with every constant the in-page calculator needs to
    redo :func:`estimate` in JavaScript (tested to agree): ``roof_<format>`` is the dense
    FLOP/s of the arithmetic each weight format runs in on that machine (0: no figure)."""
    names = model_names or catalog.names()
    fmts = formats or ["Q4_K", "Q4_0", "MXFP4", "Q8_0", "FP8", "F16"]
    rows = []
    for m in machines():
        eff = np.array(m.prefill_flops) if m.prefill_flops else None
        prices = sorted(m.prices, key=lambda p: p[0])[:3]
        base = {
            "machine": m.name, "vendor": m.vendor, "family": m.family, "backend": m.backend,
            "bw": m.bandwidth_bytes_per_s,
            "capacity": m.capacity_bytes, "usable": m.usable_bytes,
            "capacity_basis": m.capacity_basis,
            "eff_low": float(eff.min()) if eff is not None else 0.0,
            "eff_mid": float(np.median(eff)) if eff is not None else 0.0,
            "eff_high": float(eff.max()) if eff is not None else 0.0,
            "runs": len(m.prefill_flops),
            "q25": m.fraction_quartiles[0], "q50": m.fraction_quartiles[1],
            "q75": m.fraction_quartiles[2], "fraction_basis": m.fraction_basis,
        }
        for f in fmts:
            _, roof, label = m.roof(f)
            base[f"roof_{f}"] = roof or 0.0
            base[f"roofkind_{f}"] = label
        for i in range(3):
            base[f"p{i}_usable"] = prices[i][1] if i < len(prices) else 0.0
            base[f"p{i}_usd"] = prices[i][2] if i < len(prices) else 0.0
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
    """:func:`estimate` as Vega expressions over a :func:`calculator_rows` row (with
    ``datum.roof``, the row's ``roof_<format>`` for the chosen format) and the params ``L``
    (prompt), ``O`` (output), ``U`` (users) and ``bpw`` (bytes per weight)."""
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
    e["fits"] = f"({e['need']}) <= datum.usable"
    e["fits_raised"] = f"({e['need']}) <= datum.capacity"
    e["ttft_mid"] = f"datum.eff_mid > 0 ? ({e['prefill']}) / datum.eff_mid : null"
    e["ttft_fast"] = f"datum.eff_high > 0 ? ({e['prefill']}) / datum.eff_high : null"
    e["ttft_slow"] = f"datum.eff_low > 0 ? ({e['prefill']}) / datum.eff_low : null"
    e["ttft_bound"] = (f"datum.roof > 0 ? max(({e['prefill']}) / datum.roof, "
                       f"({e['w_total']}) / datum.bw) : null")
    ceiling = f"datum.bw / (({e['w_active']}) + ({e['kv_mean']}))"
    for q, name in (("q25", "low"), ("q50", "mid"), ("q75", "high")):
        e[f"decode_{name}"] = f"datum.{q} * {ceiling}"
    compute = "(datum.eff_mid > 0 ? datum.eff_mid : datum.roof)"
    step = (f"max({compute} > 0 ? ({e['decode_flops']}) / {compute} : 0, "
            f"(min({e['w_total']}, U * ({e['w_active']})) + U * ({e['kv_mean']})) / datum.bw)")
    for q, name in (("q25", "low"), ("q50", "mid"), ("q75", "high")):
        e[f"per_user_{name}"] = f"datum.{q} / ({step})"
    cheapest = "null"
    for i in (2, 1, 0):  # the smallest recorded configuration whose usable memory holds it
        cheapest = (f"(datum.p{i}_usable > 0 && datum.p{i}_usable >= ({e['need']}) ? "
                    f"datum.p{i}_usd : {cheapest})")
    e["price"] = cheapest
    return e


# -- for the page -----------------------------------------------------------------------------

def machine_table(among: list[Machine] | None = None) -> pd.DataFrame:
    """The inputs behind every ranking, one row per machine, with their sources."""
    rows = []
    for m in among or machines():
        arith, roof, label = m.roof(REFERENCE_FORMAT)
        lo = min(m.prefill_flops) if m.prefill_flops else math.nan
        hi = max(m.prefill_flops) if m.prefill_flops else math.nan
        rows.append({
            "machine": m.name, "family": m.family, "backend": m.backend,
            "bandwidth_GB_per_s": m.bandwidth_bytes_per_s / GB,
            "capacity_GiB": m.capacity_bytes / GiB, "capacity_basis": m.capacity_basis,
            "usable_GiB": m.usable_bytes / GiB, "gpu_limit_basis": m.gpu_limit_basis,
            "roof_arithmetic": arith, "roof_TFLOPS": (roof or math.nan) / TFLOPS,
            "roof_label": label,
            "prefill_runs": len(m.prefill_flops), "prefill_note": m.prefill_note,
            "prefill_TFLOPS_low": lo / TFLOPS, "prefill_TFLOPS_high": hi / TFLOPS,
            "prefill_fraction_low": lo / roof if roof else math.nan,
            "prefill_fraction_high": hi / roof if roof else math.nan,
            "fraction_basis": m.fraction_basis,
            "priced_configs": len(m.prices),
            "source_bandwidth": m.sources.get("bandwidth", ""),
            "source_roof": m.sources.get("flops", ""),
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


def span(low: float, high: float, digits: int = 0, pct: bool = False) -> str:
    """``low–high``, or one value when they print the same; blank for NaN."""
    if low != low:
        return ""
    f = (lambda v: f"{v:.{digits}%}") if pct else (lambda v: f"{v:,.{digits}f}")
    return f(low) if f(low) == f(high) else f"{f(low)}–{f(high)}"


def roof_text(arith: str, tflops: float, label: str) -> str:
    """What a machine is held to, for a table cell: ``"1,979 (INT8, dense tensor)"``."""
    if tflops != tflops:
        return label
    return f"{tflops:,.0f} ({label})"


def ranking_display(ranked: pd.DataFrame, limit: int | None = None) -> pd.DataFrame:
    """A ranking formatted for the page: ranges as text, reasons for the unranked."""
    df = ranked if limit is None else ranked.head(limit)
    return pd.DataFrame({
        "rank": df["rank"].map(lambda r: "" if pd.isna(r) else str(int(r))),
        "machine": [m + (" †" if n else "") for m, n in zip(df["machine"], df["prefill_note"])],
        "ttft": [fmt_range(a, b, c) for a, b, c in
                 zip(df["ttft_fast_s"], df["ttft_mid_s"], df["ttft_slow_s"])],
        "bound": df["ttft_bound_s"].map(lambda v: "" if v != v else f"{v:,.1f}"),
        "roof": [roof_text(a, t, lab) for a, t, lab in
                 zip(df["roof_arithmetic"], df["roof_TFLOPS"], df["roof_label"])],
        "reached": [span(a, b, pct=True) for a, b in
                    zip(df["prefill_fraction_low"], df["prefill_fraction_high"])],
        "decode": [fmt_range(a, b, c, 1) for a, b, c in zip(
            df["decode_low_tok_per_s"], df["decode_mid_tok_per_s"], df["decode_high_tok_per_s"])],
        "per_user": [fmt_range(a, b, c, 1) for a, b, c in zip(
            df["per_user_low_tok_per_s"], df["per_user_mid_tok_per_s"],
            df["per_user_high_tok_per_s"])],
        "memory": [f"{n:,.0f} of {u:,.0f} GiB" + (f" ({c:,.0f} in all)" if u < c else "")
                   for n, u, c in zip(df["need_GiB"], df["usable_GiB"], df["capacity_GiB"])],
        "users": df["max_users"].map("{:,}".format),
        "price": [f"{cur} {p:,.0f}" if p == p else "" for p, cur in
                  zip(df["price"], df["currency"])],
        "note": df["why_unranked"],
    })


def ttft_check_band(ranked: pd.DataFrame, check: pd.DataFrame | None = None) -> pd.DataFrame:
    """Each machine's median first-token estimate scaled by the smallest and largest
    predicted/measured ratio :func:`extrapolation_check` found for dense models on its
    backend: how long the first token would take if the method erred here as it did there
    (a ratio above 1 means the method was too fast, so the real wait is longer). NaN for a
    backend the check has no dense runs of."""
    df = extrapolation_check() if check is None else check
    err = df[~df["moe"]].groupby("backend")["ratio"].agg(["min", "max"])
    lo = ranked["backend"].map(err["min"])
    hi = ranked["backend"].map(err["max"])
    return ranked.assign(ttft_check_low_s=ranked["ttft_mid_s"] * lo,
                         ttft_check_high_s=ranked["ttft_mid_s"] * hi)


def hardware_and_software(ranked: pd.DataFrame) -> pd.DataFrame:
    """The first-token ranking split in two: the roofline bound (hardware: the arithmetic's
    peak) and how much of it the published runs reached (mostly software: backend, kernels,
    build), for every ranked machine with a bound and a run of an undisputed variant.
    ``reached`` is bound over estimate; ``order_by_bound`` the rank the bound alone gives."""
    df = ranked[ranked["rank"].notna() & ranked["ttft_bound_s"].notna() &
                (ranked["prefill_note"] == "")].copy()
    df["reached"] = df["ttft_bound_s"] / df["ttft_mid_s"]
    df["order_by_bound"] = df["ttft_bound_s"].rank(method="first").astype(int)
    df["order_by_runs"] = df["ttft_mid_s"].rank(method="first").astype(int)
    return df[["machine", "vendor", "backend", "ttft_bound_s", "ttft_mid_s", "reached",
               "roof_label", "order_by_bound", "order_by_runs"]].reset_index(drop=True)


def swapped_pairs(split: pd.DataFrame) -> list[tuple[str, str]]:
    """Pairs (a, b) the bound puts a first and the published runs put b first."""
    out = []
    rows = list(split.itertuples())
    for a in rows:
        for b in rows:
            if a.order_by_bound < b.order_by_bound and a.order_by_runs > b.order_by_runs:
                out.append((a.machine, b.machine))
    return out
