"""Chapter 11's tables, built from the research notes on prices and power.

The notes (``scripts/research/costs/prices.csv`` and ``power.csv``, copied from the research
drop) record every figure as found, with its source and date. These builders pick what the
book uses, give each row a book name (chip, model), split the notes' free-text dates into an
ISO date and what the date is (checked, read, retrieved), and keep each row's source. Ranges
("3.49-7.49"), approximations ("~6", "<200") and rows without a number are left out: the book
computes with numbers a source states. Imported by ``curate_data.py``, which writes the tables.
"""

from __future__ import annotations

import csv
import re
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
COSTS_RESEARCH = ROOT / "scripts" / "research" / "costs"

# -- shared ----------------------------------------------------------------------------------

_NUMBER = re.compile(r"^\d+(?:\.\d+)?$")
_DATE = re.compile(r"(\d{4}-\d{2}-\d{2})|(\d{4}-\d{2})|(\d{4})")
_KIND = re.compile(r"\((checked|read|read_at|retrieved|record date|api-evangelist record|"
                   r"research note date|article|announcement)\)|^(retrieved)")


def _read(name: str) -> list[dict]:
    with (COSTS_RESEARCH / name).open(newline="") as f:
        return list(csv.DictReader(f))


def _date(text: str) -> str:
    """The last full date in a note's date field (a row read again later keeps the later
    date), else the first year-month, else the year."""
    full = re.findall(r"\d{4}-\d{2}-\d{2}", text)
    if full:
        return full[-1]
    m = _DATE.search(text)
    if not m:
        raise SystemExit(f"no date in {text!r}")
    return m.group(0)


def _date_kind(text: str) -> str:
    """What the date is: when a provider page was checked or read, when a copy was retrieved,
    or when the price was announced."""
    t = text.lower()
    for word, kind in (("checked", "provider page checked"), ("read_at", "copy read"),
                       ("(read)", "copy read"), ("retrieved", "copy retrieved"),
                       ("record", "record dated"), ("research note", "note dated"),
                       ("announcement", "announced"), ("article", "article dated"),
                       ("launch", "launch"), ("on sale", "announced")):
        if word in t:
            return kind
    return "dated"


def _url(source: str) -> str:
    """A checkable address for a note's source: its first URL, or a ``github.com/...`` or
    ``docs.rs`` reference made into one."""
    m = re.search(r"https?://\S+", source)
    if m:
        return source
    m = re.search(r"github\.com/[\w.-]+/[\w.-]+", source)
    if m:
        return f"https://{m.group(0)} ({source})"
    m = re.search(r"docs\.rs crate (\S+) (\S+) (\S+)", source)
    if m:
        crate, version, path = m.groups()
        return f"https://docs.rs/crate/{crate}/{version}/source/{path} ({source})"
    raise SystemExit(f"no address in source {source!r}")


def _confidence(row: dict) -> str:
    """``low`` for a copy the notes call SECONDARY (an aggregator, a news report, a catalog),
    ``medium`` for a provider's own page read through a transcription."""
    return "low" if "SECONDARY" in (row.get("notes", "") + row.get("source", "")) else "medium"


# -- GPU rental ------------------------------------------------------------------------------

#: The notes' item -> the book's chip name. A variant the source does not state stays
#: unnamed; the book's H200 and B200 are the SXM parts (NVL and 192 GB are said when meant).
RENTAL_CHIPS = {
    "H100 SXM 80GB": "H100 SXM", "H100 PCIe 80GB": "H100 PCIe", "H100 NVL 94GB": "H100 NVL",
    "H100 NVLink 80GB": "H100 (variant not stated)", "H100 80GB": "H100 (variant not stated)",
    "H200 141GB": "H200", "H200 SXM 141GB": "H200", "H200 SXM": "H200",
    "B200 180GB": "B200", "B200 192GB": "B200", "B200 SXM": "B200",
    "A100 SXM 80GB": "A100 SXM", "A100 PCIe 80GB": "A100 PCIe",
    "A100 SXM 40GB": "A100 SXM 40GB", "GH200 96GB": "GH200",
    "RTX 4090 24GB": "RTX 4090", "MI300X 192GB": "MI300X",
    "GB200 Superchip (1 Grace + 2 B200)": "GB200 superchip (2 GPUs)",
}


#: One name per provider where the notes spell it two ways.
PROVIDERS = {"Hyperstack (NexGen Cloud)": "Hyperstack"}


def _offer(row: dict) -> str:
    """What kind of rental the price is for, in the words the book filters on."""
    text = (row["provider_or_vendor"] + " " + row["notes"]).lower()
    if "capacity block" in text or "reservation" in text:
        return "reserved (capacity block)"
    if "one-year contract" in text:
        return "committed, 1 year"
    if "spot" in row["provider_or_vendor"].lower():
        return "spot"
    if "marketplace" in text:
        return "marketplace"
    if "gpu+26 vcpu" in text:
        return "on-demand, instance with host"
    return "on-demand"


def gpu_rental_prices(research: Path) -> list[dict]:
    """Rental price per GPU-hour, one row per provider, product and date read."""
    rows = []
    for r in _read("prices.csv"):
        if r["kind"] != "gpu_hour" or not _NUMBER.match(r["value"]):
            continue
        if r["provider_or_vendor"].startswith("median of"):  # a statistic, not a quote
            continue
        chip = RENTAL_CHIPS.get(r["item"])
        if chip is None:
            raise SystemExit(f"no chip name for rental item {r['item']!r}")
        product = re.search(r"product: ([^;]+)", r["notes"])
        rows.append({
            "chip": chip, "item": r["item"],
            "provider": PROVIDERS.get(r["provider_or_vendor"], r["provider_or_vendor"]),
            "product": product.group(1).strip() if product else "",
            "offer": _offer(r), "price": float(r["value"]), "currency": r["currency"],
            "unit": "GPU-hour", "price_date": _date(r["date"]),
            "date_kind": _date_kind(r["date"]), "confidence": _confidence(r),
            "source_url": _url(r["source"]), "note": r["notes"]})
        if "derived/cost.json records" in r["notes"]:  # a later reading of the same offer
            later = re.search(r"records (\d+\.\d+) on (\d{4}-\d{2}-\d{2})", r["notes"])
            rows.append({**rows[-1], "price": float(later.group(1)),
                         "price_date": later.group(2), "date_kind": "copy read",
                         "note": "the same repository's derived/cost.json, a later reading "
                                 "of the same marketplace median"})
    return rows


# -- API prices ------------------------------------------------------------------------------

#: The notes' item -> the book's model (``data/models.csv``).
API_MODELS = {
    "Llama-3.3-70B-Instruct (llama-3.3-70b-versatile)": "Llama-3.3-70B",
    "Llama-3.3-70B-Instruct (llama-v3p3-70b-instruct)": "Llama-3.3-70B",
    "Llama-3.3-70B-Instruct-Turbo": "Llama-3.3-70B",
    "Llama-3.3-70B-Instruct": "Llama-3.3-70B",
    "Llama-3.1-8B-Instruct (llama-3.1-8b-instant)": "Llama-3.1-8B",
    "Llama-3.1-8B-class (4B-16B size tier)": "Llama-3.1-8B",
    "Meta-Llama-3.1-8B-Instruct-Turbo": "Llama-3.1-8B",
    "gpt-oss-120b": "gpt-oss-120b", "gpt-oss-120b-Turbo": "gpt-oss-120b",
    "gpt-oss-20b": "gpt-oss-20b",
    "DeepSeek-V3 family": "DeepSeek-V3", "DeepSeek-V3 (deepseek-v3)": "DeepSeek-V3",
    "DeepSeek-V3 (deepseek-chat)": "DeepSeek-V3", "DeepSeek V3 (Turbo)": "DeepSeek-V3",
}


def _api_status(r: dict) -> str:
    """``listed`` where the page read lists the price now; ``superseded`` where the notes say
    a newer price or model replaced it."""
    text = r["notes"] + " " + r["date"]
    if "older" in text or "current (late-2026) DeepSeek API serves V4" in text:
        return "superseded"
    return "listed"


def api_prices(research: Path) -> list[dict]:
    """Per-million-token prices, one row per provider, model and direction (input or
    output)."""
    rows = []
    for r in _read("prices.csv"):
        if not r["kind"].startswith("api_per_mtok"):
            continue
        value = r["value"].lstrip("~")
        if not _NUMBER.match(value):
            continue
        model = API_MODELS.get(r["item"])
        if model is None:
            raise SystemExit(f"no model name for API item {r['item']!r}")
        note = r["notes"]
        if r["value"].startswith("~"):
            note = f"the record says about (~) {value}; " + note
        rows.append({
            "model": model, "item": r["item"], "provider": r["provider_or_vendor"],
            "direction": r["kind"].rsplit("_", 1)[-1], "price": float(value),
            "currency": r["currency"], "unit": "million tokens",
            "price_date": _date(r["date"]), "date_kind": _date_kind(r["date"]),
            "status": _api_status(r), "confidence": _confidence(r),
            "source_url": _url(r["source"]), "note": note})
    return rows


# -- power -----------------------------------------------------------------------------------

#: The notes' device -> the book's chip (``hardware_specs.csv``), or the system's own name
#: where the book has no chip for it.
POWER_MACHINES = {
    "NVIDIA H100 SXM5 80GB": "H100 SXM", "NVIDIA H100 80GB HBM3": "H100 SXM",
    "NVIDIA H100 PCIe 80GB": "H100 PCIe", "NVIDIA H100 NVL 94GB (PCIe)": "H100 NVL",
    "NVIDIA H200 SXM 141GB": "H200", "NVIDIA H200 NVL 141GB (PCIe)": "H200 NVL",
    "NVIDIA B200 (HGX B200)": "B200",
    "NVIDIA GB200 (Blackwell GPU in GB200 NVL72 / NVL4)": "GB200 (per GPU)",
    "NVIDIA DGX H100/H200 (8 GPU system)": "8 x H100 SXM or H200 (DGX)",
    "AMD Instinct MI300X (OAM)": "MI300X",
    "NVIDIA A100 80GB SXM": "A100 SXM", "NVIDIA A100 80GB PCIe": "A100 PCIe",
    "NVIDIA A100 40GB PCIe": "A100 PCIe 40GB",
    "NVIDIA GeForce RTX 4090": "RTX 4090", "NVIDIA GeForce RTX 5090": "RTX 5090",
    "NVIDIA GeForce RTX 3090": "RTX 3090",
    "NVIDIA RTX PRO 6000 Blackwell Workstation Edition": "RTX PRO 6000 Blackwell",
    "NVIDIA RTX PRO 6000 Blackwell Max-Q Workstation Edition": "RTX PRO 6000 Blackwell Max-Q",
    "NVIDIA DGX Spark (GB10)": "DGX Spark", "NVIDIA GB10 SoC (in DGX Spark)": "DGX Spark",
    "Dell Pro Max with GB10 (NVIDIA DGX Spark-class)": "DGX Spark",
    "Apple Mac Studio (2023) M2 Ultra 24C CPU/76C GPU, 192GB, 8TB": "M2 Ultra",
    "Apple Mac Studio (2022) M1 Ultra 20C CPU/48C GPU, 64GB, 1TB": "M1 Ultra",
    "Apple Mac Studio (2023) M2 Max 12C CPU/30C GPU, 32GB": "M2 Max",
    "Apple Mac Studio (2025) M3 Ultra 32C CPU/80C GPU, 512GB, 16TB": "M3 Ultra",
    "Apple Mac Studio (2025)": "M3 Ultra",
    "Apple Mac Studio M3 Ultra 512GB": "M3 Ultra",
    "NVIDIA DGX B200 (8 GPU system)": "8 x B200 (DGX)",
    "Framework Desktop (Ryzen AI Max+ 395)": "Strix Halo",
    "Framework Desktop Mainboard, Ryzen AI Max+ 395 128GB (GPU/CPU)": "Strix Halo",
    "Framework Mainboard 128GB (Ryzen AI Max+ 395), GPU": "Strix Halo",
    "Framework Mainboard 128GB (Ryzen AI Max+ 395), CPU": "Strix Halo (CPU)",
    "Intel 265K PC + NVIDIA RTX 4090": "RTX 4090",
    "Raspberry Pi CM5 16GB + NVIDIA RTX 4090 (Vulkan)": "RTX 4090",
    "Intel 265K PC (idle reference, RTX 2080 Ti installed)": "Intel 265K PC (idle)",
    "AmpereOne A192-32X 512GB (CPU only)": "AmpereOne A192-32X (CPU)",
}
#: The notes' metric -> (what the figure is, what it covers).
POWER_METRICS = {
    "tdp_W": ("thermal design power", "chip or board"),
    "tgp_W": ("total graphics power", "graphics card"),
    "max_power_W": ("maximum board power", "graphics card or board"),
    "psu_W": ("power supply rating", "power supply"),
    "psu_max_continuous_W": ("power supply, maximum continuous", "power supply"),
    "wall_max_W (vendor)": ("vendor's maximum at the wall", "whole system at the wall"),
    "system_max_input_W": ("maximum input", "whole 8-GPU system"),
    "system_typical_W (low end)": ("typical input, low end", "whole 8-GPU system"),
    "system_typical_W (high end)": ("typical input, high end", "whole 8-GPU system"),
    "measured_W (wall, peak)": ("measured peak while generating", "whole system at the wall"),
    "measured_W (wall, idle)": ("measured at idle", "whole system at the wall"),
    "measured_W (reported, approx.)": ("reported while generating (approximate)",
                                        "graphics card"),
}
_EVAL_RATE = re.compile(r"eval rate ([\d.]+) tok/s")


def machine_power(research: Path) -> list[dict]:
    """Board ratings and measured draws of whole machines (ML.ENERGY's GPU measurements are
    in ``mlenergy_llm.csv``): one row per figure that states a number."""
    rows = []
    for r in _read("power.csv"):
        if r["metric"] not in POWER_METRICS or not _NUMBER.match(r["value"]):
            continue
        machine = POWER_MACHINES.get(r["device"])
        if machine is None:
            raise SystemExit(f"no machine name for power device {r['device']!r}")
        what, scope = POWER_METRICS[r["metric"]]
        rate = _EVAL_RATE.search(r["workload"])
        rows.append({
            "machine": machine, "device": r["device"], "metric": what, "scope": scope,
            "power_W": float(r["value"]), "workload": r["workload"],
            "tok_per_s": float(rate.group(1)) if rate else None,
            "date": _date(r["date"]), "confidence": _confidence(r),
            "source_url": _url(r["source"]), "note": r["notes"]})
    return rows


# -- ML.ENERGY -------------------------------------------------------------------------------

MLENERGY_MODELS = {
    "meta-llama/Llama-3.1-8B-Instruct": "Llama-3.1-8B",
    "meta-llama/Llama-3.1-70B-Instruct": "Llama-3.1-70B",
    "meta-llama/Llama-3.3-70B-Instruct": "Llama-3.3-70B",
    "openai/gpt-oss-120b": "gpt-oss-120b", "openai/gpt-oss-20b": "gpt-oss-20b",
    "deepseek-ai/DeepSeek-V3.1": "DeepSeek-V3",
    "Qwen/Qwen3-30B-A3B-Instruct-2507": "",
}
#: ML.ENERGY's GPUs: the H100 is the 80 GB HBM3 (SXM) part at 700 W, per its About page.
MLENERGY_CHIPS = {"H100": "H100 SXM", "B200": "B200"}
_CONFIG = re.compile(r"^(?P<hf>[^ ]+) \((?P<weights>[\w]+)\), (?P<task>[^,]+(?:\([^)]*\))?)"
                     r".*max_num_seqs=(?P<seqs>\d+) \(avg batch (?P<batch>[\d.]+)\)")


def _note_number(pattern: str, text: str) -> float:
    m = re.search(pattern, text)
    if not m:
        raise SystemExit(f"{pattern!r} not in {text!r}")
    return float(m.group(1))


def mlenergy_llm(research: Path) -> list[dict]:
    """ML.ENERGY leaderboard v3: one row per measured configuration (GPUs, model, batch cap),
    its energy per output token and the average GPU power of the same run."""
    notes = _read("power.csv")
    rows = []
    for i, r in enumerate(notes):
        if not r["metric"].startswith("J_per_token (output") or not _NUMBER.match(r["value"]):
            continue
        # the run's power is the next row of the notes (two runs may share a workload text)
        after = notes[i + 1] if i + 1 < len(notes) else {}
        same = (after.get("metric", "").startswith("measured_W (avg GPU power") and
                after["device"] == r["device"] and after["workload"] == r["workload"])
        m = _CONFIG.match(r["workload"])
        if not m:
            raise SystemExit(f"unread ML.ENERGY workload {r['workload']!r}")
        n, gpu = re.match(r"(\d+)x NVIDIA (\w+)", r["device"]).groups()
        text = r["notes"]
        watts = float(after["value"]) if same else _note_number(r"avg GPU power (\d+) W", text)
        rows.append({
            "gpu": gpu, "chip": MLENERGY_CHIPS[gpu], "n_gpus": int(n),
            "tensor_parallel": int(_note_number(r"TP=(\d+)", text)),
            "expert_parallel": int(_note_number(r"EP=(\d+)", text)),
            "hf_model": m["hf"], "model": MLENERGY_MODELS[m["hf"]], "weights": m["weights"],
            "task": m["task"].strip(), "max_batch": int(m["seqs"]),
            "mean_batch": float(m["batch"]),
            "mean_output_tokens": _note_number(r"avg output len (\d+)", text),
            "output_tok_per_s": _note_number(r"output throughput (\d+)", text),
            "median_itl_ms": _note_number(r"median ITL ([\d.]+) ms", text),
            "gpu_power_W": watts, "energy_J_per_token": float(r["value"]),
            "date": _date(r["date"]), "source_url": _url(r["source"]),
            "note": "GPU-only energy (Zeus), steady state; the model blank where the book "
                    "has no config for it"})
    return rows


# -- electricity -----------------------------------------------------------------------------

EIA_TABLE = "https://www.eia.gov/electricity/monthly/epm_table_grapher.php?t=table_5_06_a"
#: (region, period, price USD/kWh, confidence, note). Table 5.6.A is EIA's average revenue
#: per kWh (its proxy for the retail price), residential sector.
ELECTRICITY = [
    ("United States", "2026-04", 0.1883, "low",
     "EIA Electric Power Monthly Table 5.6.A, residential, U.S. average, April 2026: 18.83 "
     "cents/kWh, as quoted (with the table's address) in a public cost note checked "
     "2026-07-09; the U.S. row of EIA's own page was not read here"),
    ("New England", "2025-04", 0.2961, "high", "EIA Table 5.6.A, April 2025 (release "
     "2025-06-25), residential, read from EIA's page"),
    ("Middle Atlantic", "2025-04", 0.2182, "high", "as above"),
    ("East North Central", "2025-04", 0.1784, "high", "as above"),
    ("West North Central", "2025-04", 0.1367, "high", "as above"),
]


def electricity_prices(research: Path) -> list[dict]:
    """Residential electricity prices: the U.S. average the book defaults to, and regions
    that show the spread a reader's own bill may sit in."""
    return [{"region": region, "sector": "residential", "period": period, "price": price,
             "currency": "USD", "unit": "kWh", "confidence": conf, "source_url": EIA_TABLE,
             "note": note} for region, period, price, conf, note in ELECTRICITY]


TABLES = {
    "gpu_rental_prices.csv": gpu_rental_prices,
    "api_prices.csv": api_prices,
    "machine_power.csv": machine_power,
    "mlenergy_llm.csv": mlenergy_llm,
    "electricity_prices.csv": electricity_prices,
}
