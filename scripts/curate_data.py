"""Maintainer tool: build the book's data/ tables from the research drop.

The research files (``../shared/research`` by default) hold every public figure
with its source, as found. This script picks what the book uses, gives every
chip one stable name, puts the unit into every column name and keeps each row's
``source_url``. It never overwrites a table that already exists unless told to
with ``--overwrite``, so hand edits to data/ are not lost by accident. The rows of
the tables derived tables refer to keep their ``row_id`` (napkin.rowids).

    python scripts/curate_data.py [--research DIR] [--overwrite]
"""

from __future__ import annotations

import argparse
import csv
import json
import re
import sys
from pathlib import Path

import curate_costs  # chapter 11's tables (prices, power, energy)
from napkin import rowids

ROOT = Path(__file__).resolve().parents[1]

# (vendor, device, variant) in the research file -> the book's chip name.
CHIP_NAMES = {
    ("NVIDIA", "H100", "SXM5 80GB"): "H100 SXM",
    ("NVIDIA", "H100", "PCIe 80GB"): "H100 PCIe",
    ("NVIDIA", "H200", "SXM 141GB"): "H200",
    ("NVIDIA", "B200", "SXM (HGX, 1000 W)"): "B200",
    ("NVIDIA", "GB200 (per B200 GPU)", "Grace Blackwell superchip GPU"): "GB200 (per GPU)",
    ("NVIDIA", "A100", "SXM4 80GB"): "A100 SXM",
    ("NVIDIA", "A100", "PCIe 80GB"): "A100 PCIe",
    ("NVIDIA", "GeForce RTX 3090", ""): "RTX 3090",
    ("NVIDIA", "GeForce RTX 4090", ""): "RTX 4090",
    ("NVIDIA", "GeForce RTX 5090", ""): "RTX 5090",
    ("NVIDIA", "RTX PRO 6000 Blackwell", "Workstation Edition 96GB"): "RTX PRO 6000 Blackwell",
    ("NVIDIA", "RTX 6000 Ada", "48GB"): "RTX 6000 Ada",
    ("NVIDIA", "DGX Spark (GB10 Grace Blackwell)", "128GB"): "DGX Spark",
    ("AMD", "Instinct MI300X", "192GB"): "MI300X",
    ("AMD", "Ryzen AI Max+ 395 (Strix Halo), Radeon 8060S (40 CU, RDNA 3.5)",
     "128GB LPDDR5x-8000 config"): "Strix Halo",
}

# research spec name -> the book's spec name, unit included.
SPEC_NAMES = {
    "memory_bandwidth": "memory_bandwidth_GB_per_s",
    # DRAM and HBM capacities are binary: a vendor's "80 GB" is 80 GiB (nvidia-smi shows an
    # H100 80GB at 81,559 MiB). A part that ships with less than was announced keeps the
    # shipped figure only (see SUPERSEDED).
    "memory_capacity": "memory_capacity_GiB",
    "memory_capacity_as_shipped": "memory_capacity_GiB",
    "max_memory_capacity": "max_memory_capacity_GiB",
    "bf16_tensor_dense": "fp16_tensor_dense_TFLOPS",
    "bf16_tensor_sparse": "fp16_tensor_sparse_TFLOPS",
    "bf16_tensor_dense_fp32_accumulate": "fp16_tensor_dense_fp32acc_TFLOPS",
    "bf16_tensor_sparse_fp32_accumulate": "fp16_tensor_sparse_fp32acc_TFLOPS",
    "fp16_tensor_dense_fp16_accumulate": "fp16_tensor_dense_fp16acc_TFLOPS",
    "fp4_tensor_sparse": "fp4_tensor_sparse_TFLOPS",
    "fp32_non_tensor": "fp32_vector_TFLOPS",
    "fp16_dense_theoretical": "fp16_tensor_dense_TFLOPS",
    "gpu_fp16_equals_fp32_peak": "fp16_vector_TFLOPS",
}

# CPU rows from llama.cpp issues: the model's parameter count and the storage
# format's bits per weight at the time of the run, so that bytes per token can
# be estimated. Bits per weight: llama.cpp PR #1508 (2023-05-19) moved Q4_0 from
# an F32 to an F16 block scale, 5.0 -> 4.5 bits per weight, and lists both.
PR_1508 = "https://github.com/ggml-org/llama.cpp/pull/1508"
LLAMA1_PAPER = "https://arxiv.org/abs/2302.13971 (Table 2)"
CPU_MODEL_BASIS = {
    # model text in the research file -> (params in billions, source)
    "LLaMA-1 7B (ggml)": (6.7, LLAMA1_PAPER),
    "LLaMA-1 13B (ggml)": (13.0, LLAMA1_PAPER),
    "LLaMA-1 30B (ggml)": (32.5, LLAMA1_PAPER),
    "guanaco-7B (LLaMA-1 7B fine-tune, ggmlv3)": (6.7, LLAMA1_PAPER),
    "Llama-3.1-70B-Instruct": (70.5537, "computed from config.json (model_configs.csv)"),
}


def cpu_bits_per_weight(row: dict) -> tuple[float, str] | None:
    """Bits per weight of the run's format, or None when the format is ambiguous."""
    quant, date = row["quant"].lower(), row["date"]
    if quant == "f16":
        return 16.0, "F16 weights"
    if quant.startswith("q4"):
        if "ggmlv3" in row["model"] or date >= "2023-05-19":
            return 4.5, f"Q4_0 with F16 block scale, ggml v3 ({PR_1508})"
        return 5.0, f"Q4_0 with F32 block scale, before ggml v3 ({PR_1508})"
    return None


def read(path: Path) -> list[dict]:
    with path.open(newline="") as f:
        return list(csv.DictReader(f))


# (chip, research spec) rows left out, with why: a later figure for the same part replaces them.
SUPERSEDED = {
    ("B200", "memory_capacity"): "the announced 192 GB, eight stacks of 24 GiB installed; "
                                 "the part ships with 180 GiB of them enabled (nvidia-smi: "
                                 "183,359 MiB)",
}
#: Notes added to a research row's own, keyed like SUPERSEDED.
ADDED_NOTES = {
    ("B200", "memory_capacity_as_shipped"):
        "Binary: 180 GiB enabled of 192 GiB installed (eight HBM3e stacks of 24 GiB, "
        "memory_physical_GiB), as the H200 enables 141 of its 144 GiB. nvidia-smi reports "
        "183,359 MiB = 179.1 GiB (192.3 GB, which is why the announced 192 can also be read "
        "as this memory in decimal GB).",
}
#: The book's own research, beyond the shared drop: peaks by arithmetic (FP8, INT8, FP4,
#: dense and sparse), capacities, what drivers expose and scale-up links, each row sourced,
#: in data/'s own columns. Where it and the drop give the same spec, its row replaces the
#: drop's (it was chosen for a better source).
OWN_RESEARCH = ROOT / "scripts" / "research" / "hardware_specs_extra.csv"


def hardware(research: Path) -> list[dict]:
    rows = []
    for r in read(research / "hardware_specs.csv"):
        key = (r["vendor"], r["device"], r["variant"])
        chip = CHIP_NAMES.get(key)
        if chip is None and r["vendor"] == "Apple":
            # M3 Max and M4 Max come in two bandwidth tiers: name the tier.
            split = r["device"] in ("M3 Max", "M4 Max")
            chip = f"{r['device']} ({r['variant']})" if split else r["device"]
        if chip is None:
            raise SystemExit(f"no chip name for {key}: add it to CHIP_NAMES")
        if (chip, r["spec"]) in SUPERSEDED:
            print(f"skip   {chip} {r['spec']}: {SUPERSEDED[chip, r['spec']]}")
            continue
        note = " ".join(n for n in (r["note"], ADDED_NOTES.get((chip, r["spec"]), "")) if n)
        rows.append({
            "chip": chip, "vendor": r["vendor"], "variant": r["variant"],
            "spec": SPEC_NAMES[r["spec"]], "value": r["value"],
            "figure_origin": r["figure_origin"], "confidence": r["confidence"],
            "source_url": r["source_url"], "note": note,
        })
    if OWN_RESEARCH.is_file():  # the book's own research wins where both give a figure
        extra = read(OWN_RESEARCH)
        ours = {(r["chip"], r["spec"]) for r in extra}
        for r in rows:
            if (r["chip"], r["spec"]) in ours:
                print(f"replace {r['chip']} {r['spec']}: {OWN_RESEARCH.name} has a better source")
        rows = [r for r in rows if (r["chip"], r["spec"]) not in ours] + extra
    return rows


def apple(research: Path) -> list[dict]:
    keep = ["chip", "gpu_cores", "memory_bandwidth_GB_per_s", "quant", "test",
            "throughput_tok_per_s", "confidence", "source_url", "note"]
    return [{k: r[k] for k in keep} for r in read(research / "llamacpp_apple_silicon_4167.csv")]


def gpus(research: Path) -> list[dict]:
    keep = ["gpu", "backend", "flash_attention", "test", "throughput_tok_per_s",
            "stddev_tok_per_s", "llama_cpp_commit", "memory_bandwidth_GB_per_s",
            "bandwidth_source", "confidence", "source_url", "note"]
    return [{k: r[k] for k in keep}
            for r in read(research / "llamacpp_gpu_scoreboards_llama2_7b_q4_0.csv")]


def cpus(research: Path) -> list[dict]:
    rows = []
    for r in read(research / "llamacpp_cpu_results.csv"):
        generation = "token generation" in r["test"] or r["test"].startswith("tg")
        basis = CPU_MODEL_BASIS.get(r["model"])
        bpw = cpu_bits_per_weight(r)
        if not (generation and r["memory_bandwidth_GB_per_s"] and basis and bpw):
            continue
        if r["bandwidth_kind"].startswith("lower bound computed"):
            continue  # bandwidth derived from this very speed: circular
        rows.append({
            "cpu": r["cpu"], "memory_config": r["memory_config"],
            "memory_bandwidth_GB_per_s": r["memory_bandwidth_GB_per_s"],
            "bandwidth_kind": r["bandwidth_kind"], "model": r["model"], "quant": r["quant"],
            "threads": r["threads"], "test": r["test"],
            "throughput_tok_per_s": r["throughput_tok_per_s"], "date": r["date"],
            "model_params_B": basis[0], "params_source": basis[1],
            "bits_per_weight": bpw[0], "bits_per_weight_basis": bpw[1],
            "confidence": r["confidence"], "source_url": r["source_url"], "note": r["note"],
        })
    return rows


def gguf_sizes(research: Path) -> list[dict]:
    """Llama-2-7B sizes in bytes, from whichever unit the source printed."""
    scale = {"GB": 10**9, "GiB": 2**30}
    rows = []
    for r in read(research / "gguf_sizes_llama2_7b.csv"):
        if r["file_size_bytes"]:
            size, stated, unit, kind = int(r["file_size_bytes"]), r["file_size_bytes"], "B", \
                "tensor data (llama-bench model_size)"
        elif r["file_size_GiB"]:
            stated, unit, kind = r["file_size_GiB"], "GiB", "tensor data (llama-bench model size)"
            size = round(float(stated) * scale[unit])
        elif r["file_size_GB"]:
            stated, unit, kind = r["file_size_GB"], "GB", "file on disk (Hugging Face listing)"
            size = round(float(stated) * scale[unit])
        else:
            continue
        if r["confidence"] == "low":
            continue
        rows.append({"model": r["model"], "quant": r["quant"], "bits_nominal": r["bits_nominal"],
                     "size_bytes": size, "stated_size": stated, "stated_unit": unit,
                     "size_kind": kind, "confidence": r["confidence"],
                     "source_url": r["source_url"], "note": r["note"]})
    return rows



# -- chapter 6: paged attention ---------------------------------------------------------------

VLLM_PAPER = "vLLM / PagedAttention (Kwon et al.)"
VLLM_ARXIV = "https://arxiv.org/abs/2309.06180 (SOSP 2023, https://doi.org/10.1145/3600006.3613165)"
#: The research rows the chapter uses, found by a phrase of their quote and given a stable name.
SERVING_CLAIMS = {
    "vllm_throughput_gain": "improves the throughput of popular LLMs by 2-4x",
    "existing_token_states": "only 20.4% - 38.2% of the KV cache memory",
    "opt13b_kv_per_token": "the KV cache of a single token demands 800 KB",
    "opt13b_kv_per_request": "can be as much as 1.6 GB",
    "rate_vs_orca_oracle": "1.7x-2.7x higher request rates compared to Orca (Oracle)",
    "rate_vs_orca_max": "^2.7x-8x compared to Orca (Max)",  # ^: the quote starts so
    "batch_vs_orca_fig13a": "processes 2.2x more requests at the same time",
    "rate_vs_fastertransformer": "up to 22x higher request rates",
    "default_block_size": "default block size as 16",
    "kernel_overhead": "20-26% higher attention kernel latency",
    "dataset_length_ratio": "8.4x longer input prompts and 5.8x longer outputs",
    "blog_existing_waste": "waste 60% – 80% of memory",
    "blog_paged_waste": "a mere waste of under 4%",
}
# How the printed numbers were read: the figures' labels come from secondary transcriptions
# (no machine-readable copy of the PDF's figures was available), cross-checked against the text.
FIGURE_READING = ("label printed on the figure; transcribed from independent secondary readings "
                  "of the figure that agree")
FIG13_READING = ("label printed on the figure; transcribed from one secondary reading of the "
                 "figure, consistent with the text's 2.2x and 4.3x (tests/test_data.py)")
TABLE_READING = ("printed in the table; transcribed from two secondary readings that agree, "
                 "consistent with the text's 800 KB per token (tests/test_data.py)")
TEXT_READING = "read from a full-text copy of the paper"
# Fig. 2 bar labels: (system, segment) -> % of KV cache memory. Orca (Oracle) has no internal
# fragmentation segment and only vLLM's token-state share is printed.
FIG2 = {("Orca (Max)", "token states"): 20.4, ("Orca (Max)", "reservation"): 13.3,
        ("Orca (Max)", "internal fragmentation"): 57.3,
        ("Orca (Max)", "external fragmentation and others"): 8.9,
        ("Orca (Pow2)", "token states"): 26.8, ("Orca (Pow2)", "reservation"): 17.9,
        ("Orca (Pow2)", "internal fragmentation"): 13.6,
        ("Orca (Pow2)", "external fragmentation and others"): 41.6,
        ("Orca (Oracle)", "token states"): 38.2, ("Orca (Oracle)", "reservation"): 25.2,
        ("Orca (Oracle)", "external fragmentation and others"): 36.6,
        ("vLLM", "token states"): 96.3}
# Fig. 13 bar labels: average number of batched requests, OPT-13B.
FIG13 = {("ShareGPT", "Orca (Max)"): 7.00, ("ShareGPT", "Orca (Pow2)"): 9.81,
         ("ShareGPT", "Orca (Oracle)"): 13.62, ("ShareGPT", "vLLM"): 30.42,
         ("Alpaca", "Orca (Max)"): 7.00, ("Alpaca", "Orca (Pow2)"): 43.24,
         ("Alpaca", "Orca (Oracle)"): 72.75, ("Alpaca", "vLLM"): 132.44}
# Fig. 11 legends: mean lengths in tokens.
FIG11 = {("ShareGPT", "input"): 161.31, ("ShareGPT", "output"): 337.99,
         ("Alpaca", "input"): 19.31, ("Alpaca", "output"): 58.45}
# Table 1, the 13B column (the one GPU configuration the chapter reproduces).
TABLE1_13B = {"gpu_memory": (40, "GB (as printed)", "Total GPU memory"),
              "parameter_size": (26, "GB (as printed)", "Parameter size"),
              "kv_memory": (12, "GB (as printed)", "Memory for KV cache"),
              "kv_slots": (15700, "tokens (printed as 15.7K)", "Max. # KV cache slots")}
#: How each "GB" of Table 1 reads in bytes (napkin.deployment.paper_table1_bytes).
TABLE1_NOTES = {
    "gpu_memory": "A vendor capacity, binary like every capacity in the book: 40 GiB.",
    "parameter_size": "Decimal GB: 13e9 FP16 parameters x 2 bytes = 26e9 bytes (26 GiB would "
                      "be 14 billion parameters).",
    "kv_memory": "The table's KV GB are binary: 12 x 2^30 bytes / 800 KiB per token = 15,729 "
                 "slots, the printed 15.7K.",
    "kv_slots": "The table's KV GB are binary: 12 x 2^30 bytes / 800 KiB per token = 15,729 "
                "slots, the printed 15.7K."}
VLLM_BLOCK_MANAGER = ("https://github.com/vllm-project/vllm/blob/"
                      "9a4b60a4c91d972116c01e818048ab8868542d62/vllm/core/block_manager.py")


def _slug(text: str) -> str:
    return "".join(c if c.isalnum() else "_" for c in text.lower()).strip("_").replace("__", "_")


def _claim(claim, location, quote, low, high, unit, *, paper=VLLM_PAPER, source=VLLM_ARXIV,
           baseline="", model="", hardware="", workload="", verification=TEXT_READING, note=""):
    return {"claim": claim, "paper": paper, "location": location, "quote": quote,
            "value_low": low, "value_high": high, "unit": unit, "baseline": baseline,
            "model": model, "hardware": hardware, "workload": workload, "source_url": source,
            "verification": verification, "note": note}


def serving_claims(research: Path) -> list[dict]:
    """The vLLM paper's claims the chapter recomputes: the research rows it uses (named),
    plus numbers printed in the paper's figures and tables and vLLM's admission default."""
    found = read(research / "serving_papers_claims.csv")
    rows = []
    for claim, phrase in SERVING_CLAIMS.items():
        quote = (lambda r: r["quote"].replace("\u00d7", "x"))
        hits = [r for r in found if (quote(r).startswith(phrase[1:]) if phrase.startswith("^")
                                     else phrase in quote(r))]
        if len(hits) != 1:
            raise SystemExit(f"{claim}: {len(hits)} research rows quote {phrase!r}")
        rows.append({"claim": claim, **{k: v for k, v in hits[0].items() if k != "claim"}})
    rows.append(_claim(
        "vllm_near_zero_waste", "Abstract",
        "vLLM, an LLM serving system that achieves (1) near-zero waste in KV cache memory",
        "", "", "", note="Words only; Fig. 2 gives the number (vllm token states)."))
    rows.append(_claim(
        "orca_buddy_allocator", "§6.1 Baseline 2: Orca",
        "We assume Orca uses the buddy allocation algorithm to determine the memory address "
        "to store KV cache.", "", "", ""))
    rows.append(_claim(
        "orca_max_reservation", "§6.1 Baseline 2: Orca",
        "Orca (Max). We assume the system always reserves the space up to the maximum "
        "sequence length of the model, i.e., 2048 tokens.", 2048, 2048, "tokens",
        model="OPT"))
    rows.append(_claim(
        "orca_pow2_reservation", "§6.1 Baseline 2: Orca",
        "Orca (Pow2). We assume the system over-reserves the space for outputs by at most 2x. "
        "For example, if the true output length is 25, it reserves 32 positions for outputs.",
        2, 2, "x (most over-reservation of the output)"))
    rows.append(_claim(
        "vllm_preempt_latest", "§4.5 Scheduling and Preemption",
        "When vLLM needs to preempt requests, it ensures that the earliest arrived requests are "
        "served first and the latest requests are preempted first.", "", "", ""))
    for (system, segment), value in FIG2.items():
        rows.append(_claim(
            f"fig2_{_slug(system)}_{_slug(segment)}", "Fig. 2 (bar labels)",
            f"{system}: {segment} {value}", value, value, "% of KV cache memory",
            baseline=system, model="OPT-13B", hardware="A100",
            workload="experiment of §6.2", verification=FIGURE_READING,
            note="Fig. 2 caption: average percentage of memory wastes during the experiment "
                 "in §6.2." + (" The bar's other segments carry no label." if system == "vLLM"
                               else "")))
    for (dataset, system), value in FIG13.items():
        rate = {"ShareGPT": "2 reqs/s", "Alpaca": "30 reqs/s"}[dataset]
        rows.append(_claim(
            f"fig13_{_slug(dataset)}_{_slug(system)}", "Fig. 13 (bar labels)",
            f"{system}: {value:.2f} batched requests ({dataset}, {rate})", value, value,
            "requests in the batch (average)", baseline=system, model="OPT-13B",
            hardware="A100", workload=f"{dataset} trace at {rate}",
            verification=FIG13_READING))
    for (dataset, side), value in FIG11.items():
        rows.append(_claim(
            f"fig11_{_slug(dataset)}_{side}_mean", "Fig. 11 (legend)",
            f"{dataset} {side.capitalize()} (mean: {value})", value, value,
            "tokens (mean length)", workload=dataset, verification=FIGURE_READING,
            note="Histograms of the tokenized datasets: a spike at short lengths and a long "
                 "tail towards 2,000 tokens."))
    for key, (value, unit, label) in TABLE1_13B.items():
        rows.append(_claim(
            f"table1_13b_{key}", "Table 1 (13B column)", f"{label}: {value}", value, value, unit,
            model="OPT-13B", hardware="A100 (40 GB)", verification=TABLE_READING,
            note=TABLE1_NOTES[key]))
    rows.append(_claim(
        "vllm_admission_watermark", "vllm/core/block_manager.py (SelfAttnBlockSpaceManager)",
        "watermark: float = 0.01 ... if num_free_gpu_blocks - num_required_blocks >= "
        "self.watermark_blocks: return AllocStatus.OK", 0.01, 0.01,
        "fraction of KV blocks kept free when admitting", paper="vLLM source code",
        source=VLLM_BLOCK_MANAGER, verification="read from the source file at this commit",
        note="A waiting request is admitted only if its prompt's blocks leave this share of "
             "all blocks free (\"to avoid frequent cache eviction\")."))
    return rows + scheduling_claims(found)


# -- chapters 7 and 8: scheduling, disaggregation, what to buy -------------------------------

#: Research rows chapter 7 uses (Sarathi-Serve and DistServe abstracts), found by a phrase.
SCHEDULING_CLAIMS = {
    "sarathi_throughput_v1": "improves serving throughput within desired latency SLOs",
    "sarathi_capacity": "we achieve 2.6x higher serving capacity",
    "sarathi_pipeline": "Sarathi-Serve provides up to 5.6x gain",
    "distserve_goodput": "DistServe can serve 7.4x more requests",
    "distserve_goodput_v1": "DistServe can serve 4.48x more requests",
}
VLLM_DOCS = "vLLM documentation (Optimization and Tuning, V1)"
VLLM_DOCS_URL = ("https://github.com/vllm-project/vllm/blob/"
                 "00620f91ea186ca295a1eb69f4acba9d0efaaaaa/docs/configuration/optimization.md "
                 "(published as https://docs.vllm.ai/en/latest/configuration/optimization.html)")
DOCS_READING = "read from the documentation source file in the vllm-project/vllm repository"


def scheduling_claims(found: list[dict]) -> list[dict]:
    """Chapter 7's rows: Sarathi-Serve's and DistServe's headline numbers (research rows),
    DistServe's attainment target, and what vLLM's documentation says about its scheduler and
    the token budget (the page the essay cites)."""
    rows = []
    for claim, phrase in SCHEDULING_CLAIMS.items():
        hits = [r for r in found if phrase in r["quote"].replace("\u00d7", "x")]
        if len(hits) != 1:
            raise SystemExit(f"{claim}: {len(hits)} research rows quote {phrase!r}")
        rows.append({"claim": claim, **{k: v for k, v in hits[0].items() if k != "claim"}})
    distserve = next(r for r in rows if r["claim"] == "distserve_goodput")
    rows.append({**distserve, "claim": "distserve_attainment", "value_low": 90,
                 "value_high": 90, "unit": "% of requests within latency constraints",
                 "note": "The share of requests DistServe's goodput keeps within both latency "
                         "targets (\"> 90% of requests\"); the same sentence as "
                         "distserve_goodput."})
    docs = dict(paper=VLLM_DOCS, source=VLLM_DOCS_URL, verification=DOCS_READING)
    rows.append(_claim(
        "vllm_docs_v1_default", "Chunked Prefill",
        "In vLLM V1, chunked prefill is always enabled by default.", "", "", "", **docs))
    rows.append(_claim(
        "vllm_docs_scheduler", "Chunked Prefill",
        "With chunked prefill enabled, the scheduling policy prioritizes decode requests. It "
        "batches all pending decode requests before scheduling any prefill operations. When "
        "there are available tokens in the max_num_batched_tokens budget, it schedules pending "
        "prefills. If a pending prefill request cannot fit into max_num_batched_tokens, it "
        "automatically chunks it.", "", "", "", **docs))
    rows.append(_claim(
        "vllm_docs_utilization", "Chunked Prefill",
        "It helps achieve better GPU utilization by locating compute-bound (prefill) and "
        "memory-bound (decode) requests to the same batch.", "", "", "", **docs,
        note="The sentence the essay quotes."))
    rows.append(_claim(
        "vllm_docs_budget_itl", "Performance Tuning with Chunked Prefill",
        "Smaller values (e.g., 2048) achieve better inter-token latency (ITL) because there are "
        "fewer prefills slowing down decodes.", 2048, 2048, "tokens (max_num_batched_tokens)",
        **docs))
    rows.append(_claim(
        "vllm_docs_budget_ttft", "Performance Tuning with Chunked Prefill",
        "Higher values achieve better time to first token (TTFT) as you can process more "
        "prefill tokens in a batch.", "", "", "", **docs, note="No number is given."))
    rows.append(_claim(
        "vllm_docs_budget_throughput", "Performance Tuning with Chunked Prefill",
        "For optimal throughput, we recommend setting max_num_batched_tokens > 8192 especially "
        "for smaller models on large GPUs.", 8192, 8192, "tokens (max_num_batched_tokens)",
        **docs))
    return rows


#: The link a disaggregated deployment moves KV caches over: one InfiniBand NIC of an
#: H200 system as its vendor described it for an MLPerf submission.
LINKS = [
    {"link": "400 Gb/s InfiniBand NIC (one of ten in an 8 x H200 system)",
     "stated": "10x 400Gbe Infiniband", "bandwidth_GB_per_s": 50,
     "nics_in_system": 10, "gpus_in_system": 8,
     "system": "NVIDIA H200-SXM-141GBx8 (MLPerf Inference v4.1 closed submission)",
     "source_url": "https://github.com/mlcommons/inference_results_v4.1/blob/main/closed/"
                   "NVIDIA/systems/H200-SXM-141GBx8_TRT_MaxQ.json",
     "note": "host_network_card_count as submitted; 400 Gb/s / 8 bits = 50 GB/s per NIC, "
             "per direction, before protocol overhead."},
]


def serving_links(research: Path) -> list[dict]:
    """Chapter 7's default KV-transfer link, with its source."""
    return [dict(r) for r in LINKS]


MACWORLD_2025 = ("https://english.worldmagazine.it/431260 (copy of Macworld's 2025-03-05 "
                 "report of Apple's announcement)")
IMORE_2023 = "https://www.imore.com/mac/m2-mac-studio-2023"
#: Vendor prices as announced (US dollars, before tax), one row per configuration. Where no
#: vendor states a price (datacenter GPUs are sold through system makers and quotes) there is
#: no row: the book leaves the cost blank rather than guess.
PRICES = [
    ("DGX Spark", "NVIDIA DGX Spark (Founders Edition)", "GB10, 128 GB, 4 TB SSD", 128, 3999,
     "2025-10", "list price at launch", "complete computer", "medium",
     "https://ai-infrastructure.net/dgx-spark/",
     "That page says it checked NVIDIA's product page (June 2026): \"lists at ~$3,999 for the "
     "Founders Edition\"; reports of the October 2025 launch give the same $3,999. Later "
     "reports (2026) cite about $4,700: prices moved."),
    ("M4 Max (32-core GPU)", "Mac Studio (2025)", "M4 Max 14-core CPU, 32-core GPU, 36 GB, "
     "512 GB SSD", 36, 1999, "2025-03-05", "starting price", "complete computer", "high",
     MACWORLD_2025, "Six Colors reports the same starting prices."),
    ("M3 Ultra", "Mac Studio (2025)", "M3 Ultra 28-core CPU, 60-core GPU, 96 GB, 1 TB SSD", 96,
     3999, "2025-03-05", "starting price", "complete computer", "high", MACWORLD_2025,
     "Six Colors reports the same starting prices. Up to 512 GB as a build-to-order option "
     "whose price is not recorded here."),
    ("M2 Max", "Mac Studio (2023)", "M2 Max 12-core CPU, 30-core GPU, 32 GB, 512 GB SSD", 32,
     1999, "2023-06-05", "starting price", "complete computer", "high", IMORE_2023,
     "Discontinued; the launch price."),
    ("M2 Ultra", "Mac Studio (2023)", "M2 Ultra 24-core CPU, 60-core GPU, 64 GB, 1 TB SSD", 64,
     3999, "2023-06-05", "starting price", "complete computer", "high", IMORE_2023,
     "Discontinued; the launch price."),
    ("Strix Halo", "Framework Desktop", "Ryzen AI Max+ 395, 128 GB (DIY edition)", 128, 1999,
     "2025-02-25", "pre-order price", "computer without storage, fan or expansion cards",
     "medium", "https://matthewjayhunter.com/post/reviews/hardware/framework_desktop",
     "\"$1,999 for the 128GB configuration before storage, cooling, and accessories\"; "
     "Gizmodo's report of the announcement gives the same figure (US$2,000 rounded)."),
    ("RTX 5090", "GeForce RTX 5090 Founders Edition", "32 GB GDDR7", 32, 1999, "2025-01-06",
     "launch price (MSRP)", "graphics card only: needs a host computer", "high",
     "https://worldnl.com/nvidia-announces-new-rtx-5090-graphics-card-that-costs-2-000-at-ces-"
     "132635.html (copy of Engadget's CES 2025 report)",
     "TechBriefly's report of the keynote gives the same price."),
    # chapter 11 (scripts/research/costs/prices.csv)
    ("RTX PRO 6000 Blackwell", "NVIDIA RTX PRO 6000 Blackwell Workstation Edition",
     "96 GB GDDR7", 96, 8565, "2026-04-06", "MSRP as reported",
     "graphics card only: needs a host computer", "low",
     "https://www.newgearhub.com/review/nvidia-gtc-2026-blackwell-gpus-pro-workstations",
     "\"MSRP of $8,565 - now retailing between $8,000 and $9,200 as of April 2026\"; another "
     "site (gotfort.com) says it \"can sell for well over $10,000\"."),
    ("RTX 4090", "GeForce RTX 4090", "24 GB GDDR6X", 24, 1599, "2022-10",
     "launch price (MSRP)", "graphics card only: needs a host computer", "low",
     "https://technologistmag.com/nvidia-rtx-50-series-gpus-everything-we-know-so-far/amp",
     "Restated in 2025 beside the RTX 5090's launch: \"up from the $1,599 for the RTX 4090\"; "
     "the card launched in 2022 and street prices have moved since."),
]


def machine_prices(research: Path) -> list[dict]:
    """Chapter 8's vendor prices: one row per priced configuration, with date and source."""
    rows = []
    for chip, product, config, memory, price, date, kind, scope, conf, url, note in PRICES:
        rows.append({"chip": chip, "product": product, "configuration": config,
                     "memory_GiB": memory, "price": price, "currency": "USD",
                     "price_date": date, "price_kind": kind, "scope": scope,
                     "confidence": conf, "source_url": url, "note": note})
    return rows


OPT_PAPER = "https://arxiv.org/abs/2205.01068 (Table 1)"


def serving_models(research: Path) -> list[dict]:
    """The two models the paging chapter serves: OPT-13B (the paper's) and Llama-3.3-70B."""
    rows = []
    for r in read(research / "model_configs.csv"):
        if r["model"] == "Llama-3.3-70B":
            rows.append({"model": r["model"], "layers": r["layers"],
                         "hidden_size": r["hidden_size"], "attention_heads": r["attention_heads"],
                         "kv_heads": r["kv_heads"], "head_dim": r["head_dim"],
                         "total_params_B": r["total_params_B_computed"],
                         "max_context_tokens": r["max_context_tokens"],
                         "source_url": r["source_url"],
                         "note": "total_params_B computed from the config (stated: "
                                 f"{r['total_params_B_stated']} B). " + r["note"]})
    if len(rows) != 1:
        raise SystemExit("model_configs.csv has no single Llama-3.3-70B row")
    rows.append({"model": "OPT-13B", "layers": 40, "hidden_size": 5120, "attention_heads": 40,
                 "kv_heads": 40, "head_dim": 128, "total_params_B": 13,
                 "max_context_tokens": 2048, "source_url": f"{OPT_PAPER}; {VLLM_ARXIV}",
                 "note": "Layers, hidden size and the 2,048-token limit as the vLLM paper "
                         "states them (§3); 40 heads from the OPT paper's Table 1 (multi-head "
                         "attention, so kv_heads = heads). 13 B is the nominal size; the vLLM "
                         "paper's Table 1 lists 26 GB of FP16 parameters."})
    return rows
# Machines in the DGX Spark benchmark file (and its M2 Ultra companion): book names.
SPARK_BENCH_MACHINES = {
    "NVIDIA DGX Spark (GB10)": "DGX Spark",
    "Apple M2 Ultra (Mac Studio)": "M2 Ultra",
}


def spark_bench(research: Path) -> list[dict]:
    """llama-bench pp2048 / tg32 at context depths 0..32768 on DGX Spark and M2 Ultra.

    The research file also holds the essay's own pair, which no copy of the benchmark
    confirms (``unverified``): it is left out, since the essay's side of the story lives
    in ``essay_claims.csv``. Everything else keeps its confidence grade.
    """
    keep = ["device", "backend", "source_kind", "date", "llama_cpp_build", "model", "quant",
            "model_size_GiB", "model_params_B", "test", "context_depth_tokens",
            "throughput_tok_per_s", "stddev_tok_per_s", "confidence", "source_url", "note"]
    rows = []
    for r in read(research / "dgx_spark_llamacpp_16578.csv"):
        if r["confidence"] == "unverified":
            continue
        machine = SPARK_BENCH_MACHINES.get(r["device"])
        if machine is None:
            raise SystemExit(f"no machine name for {r['device']!r}: add it to SPARK_BENCH_MACHINES")
        rows.append({"machine": machine} | {k: r[k] for k in keep})
    return rows


def strix_halo(research: Path) -> list[dict]:
    """AMD Ryzen AI Max+ 395 llama-bench runs (lhl/strix-halo-testing), pp512 / tg128 pairs.

    ``max_memory_MiB`` is dropped: the book does not use it and MiB is not one of its units.
    """
    keep = ["section", "llama_cpp_build", "backend", "flags", "model", "quant",
            "weights_params_B", "active_params_B", "test", "throughput_tok_per_s",
            "stddev_tok_per_s", "confidence", "source_url", "note"]
    return [{"machine": "Strix Halo"} | {k: r[k] for k in keep}
            for r in read(research / "strix_halo_llamacpp.csv")]


def gpt_oss_guide(research: Path) -> list[dict]:
    """gpt-oss-20b / 120b across GPUs and Macs from the llama.cpp guide (discussion #15396)."""
    keep = ["hardware", "model", "quant", "backend", "test", "throughput_tok_per_s", "copies",
            "confidence", "source_url", "note"]
    return [{k: r[k] for k in keep} for r in read(research / "llamacpp_gpt_oss_guide_15396.csv")]
# -- model configs (chapters 4 and 5): data/models/<name>.json and the data/models.csv index --

#: Research model name -> the book's name (also the config file's name).
MODEL_NAMES = {"Qwen2.5-7B(-Instruct)": "Qwen2.5-7B-Instruct",
               "Qwen2.5-72B(-Instruct)": "Qwen2.5-72B-Instruct",
               "DeepSeek-V3 (671B)": "DeepSeek-V3"}

HF = "https://huggingface.co"
GPT_OSS_CODE = ("https://github.com/openai/gpt-oss/blob/a194b990f370fe9976bed6e6468a6d549b13c2fd/"
                "gpt_oss/torch/model.py")
LLAMA = {"architectures": ["LlamaForCausalLM"], "model_type": "llama",
         "tie_word_embeddings": False}

#: What a Hugging Face config.json holds beyond the research table's columns, per model,
#: and where each model's config.json was read. The research table's own values always
#: win: these only fill fields it does not record (the model family, the attention
#: layout of sliding-window and MLA models, MoE sizes).
CONFIG_EXTRAS: dict[str, tuple[dict, str]] = {
    "Llama-2-7B": (LLAMA, f"{HF}/meta-llama/Llama-2-7b-hf/blob/main/config.json"),
    "Llama-2-70B": (LLAMA, f"{HF}/meta-llama/Llama-2-70b-hf/blob/main/config.json"),
    "Llama-3.1-8B": (LLAMA, f"{HF}/meta-llama/Llama-3.1-8B/blob/main/config.json"),
    "Llama-3.1-70B": (LLAMA, f"{HF}/meta-llama/Llama-3.1-70B/blob/main/config.json"),
    # the essay's own link
    "Llama-3.3-70B": (LLAMA, f"{HF}/unsloth/Llama-3.3-70B-Instruct/raw/main/config.json"),
    "Llama-3.1-405B": (LLAMA, f"{HF}/meta-llama/Llama-3.1-405B/blob/main/config.json"),
    # every layer windowed: sliding_window 4096 and no use_sliding_window switch
    "Mistral-7B-v0.1": ({"architectures": ["MistralForCausalLM"], "model_type": "mistral",
                         "sliding_window": 4096, "tie_word_embeddings": False},
                        f"{HF}/mistralai/Mistral-7B-v0.1/blob/main/config.json"),
    # a sliding_window that is switched off: the trap for calculators that see the field
    "Qwen2.5-7B-Instruct": ({"architectures": ["Qwen2ForCausalLM"], "model_type": "qwen2",
                             "sliding_window": 131072, "use_sliding_window": False,
                             "max_window_layers": 28, "tie_word_embeddings": False},
                            f"{HF}/Qwen/Qwen2.5-7B-Instruct/blob/main/config.json"),
    "Qwen2.5-72B-Instruct": ({"architectures": ["Qwen2ForCausalLM"], "model_type": "qwen2",
                              "sliding_window": 131072, "use_sliding_window": False,
                              "max_window_layers": 70, "tie_word_embeddings": False},
                             f"{HF}/Qwen/Qwen2.5-72B-Instruct/blob/main/config.json"),
    # even layers windowed (128 tokens), odd layers full: `sliding_window if layer_idx % 2
    # == 0 else 0` in OpenAI's reference code; layer_types in the Hugging Face config
    "gpt-oss-120b": ({"architectures": ["GptOssForCausalLM"], "model_type": "gpt_oss",
                      "intermediate_size": 2880, "sliding_window": 128,
                      "layer_types": ["sliding_attention", "full_attention"] * 18,
                      "num_local_experts": 128, "num_experts_per_tok": 4,
                      "max_position_embeddings": 131072, "initial_context_length": 4096,
                      "rope_scaling": {"rope_type": "yarn", "factor": 32.0,
                                       "original_max_position_embeddings": 4096},
                      "tie_word_embeddings": False},
                     f"{HF}/openai/gpt-oss-120b/blob/main/config.json ; {GPT_OSS_CODE}"),
    "gpt-oss-20b": ({"architectures": ["GptOssForCausalLM"], "model_type": "gpt_oss",
                     "intermediate_size": 2880, "sliding_window": 128,
                     "layer_types": ["sliding_attention", "full_attention"] * 12,
                     "num_local_experts": 32, "num_experts_per_tok": 4,
                     "max_position_embeddings": 131072, "initial_context_length": 4096,
                     "rope_scaling": {"rope_type": "yarn", "factor": 32.0,
                                      "original_max_position_embeddings": 4096},
                     "tie_word_embeddings": False},
                    f"{HF}/openai/gpt-oss-20b/blob/main/config.json ; {GPT_OSS_CODE}"),
    # MLA: the cache holds a 512-wide latent and a 64-wide rope key per layer
    "DeepSeek-V3": ({"architectures": ["DeepseekV3ForCausalLM"], "model_type": "deepseek_v3",
                     "num_key_value_heads": 128, "q_lora_rank": 1536, "kv_lora_rank": 512,
                     "qk_nope_head_dim": 128, "qk_rope_head_dim": 64, "v_head_dim": 128,
                     "moe_intermediate_size": 2048, "n_routed_experts": 256,
                     "n_shared_experts": 1, "num_experts_per_tok": 8,
                     "first_k_dense_replace": 3, "max_position_embeddings": 163840,
                     "tie_word_embeddings": False},
                    f"{HF}/deepseek-ai/DeepSeek-V3/blob/main/config.json"),
}

#: research column -> Hugging Face config.json field.
CONFIG_FIELDS = {"layers": "num_hidden_layers", "hidden_size": "hidden_size",
                 "attention_heads": "num_attention_heads", "kv_heads": "num_key_value_heads",
                 "head_dim": "head_dim", "intermediate_size": "intermediate_size",
                 "vocab_size": "vocab_size",
                 "config_max_position_embeddings": "max_position_embeddings"}


def _int_or_none(text: str) -> int | None:
    text = text.strip()
    return int(text) if text.isdigit() else None


def model_config(r: dict) -> dict:
    """One model's config.json: research values, then the sourced extras, then provenance."""
    name = MODEL_NAMES.get(r["model"], r["model"])
    if name not in CONFIG_EXTRAS:
        raise SystemExit(f"no config extras for {name}: add it to CONFIG_EXTRAS")
    extras, hf_url = CONFIG_EXTRAS[name]
    cfg = {field: _int_or_none(r[col]) for col, field in CONFIG_FIELDS.items()
           if _int_or_none(r[col]) is not None}
    clash = {k for k in extras if k in cfg and extras[k] != cfg[k]}
    if clash:
        raise SystemExit(f"{name}: extras contradict the research table on {sorted(clash)}")
    cfg = {**extras, **cfg}
    return {"_name": name, "_source_url": r["source_url"], "_config_url": hf_url,
            "_max_context_tokens": _int_or_none(r["max_context_tokens"]),
            "_note": r["note"], **dict(sorted(cfg.items()))}


def model_index(research: Path) -> list[dict]:
    rows = []
    for r in read(research / "model_configs.csv"):
        name = MODEL_NAMES.get(r["model"], r["model"])
        rows.append({
            "model": name, "config_file": f"models/{name}.json",
            "architecture": r["architecture"],
            "params_total_B": r["total_params_B_computed"],
            "params_total_stated_B": r["total_params_B_stated"],
            "params_active_B": r["active_params_B_computed"],
            "params_active_stated_B": r["active_params_B_stated"],
            "max_context_tokens": r["max_context_tokens"],
            "kv_per_token_fp16_research_bytes": r["kv_cache_bytes_per_token_fp16_computed"],
            "source_url": r["source_url"], "config_url": CONFIG_EXTRAS[name][1],
            "note": r["note"],
        })
    return rows


def write_model_configs(research: Path, overwrite: bool) -> None:
    """data/models/<name>.json, one Hugging Face style config.json per model."""
    out_dir = ROOT / "data" / "models"
    out_dir.mkdir(exist_ok=True)
    for r in read(research / "model_configs.csv"):
        cfg = model_config(r)
        out = out_dir / f"{cfg['_name']}.json"
        if out.exists() and not overwrite:
            print(f"keep   data/models/{out.name} (exists; --overwrite to rebuild)")
            continue
        out.write_text(json.dumps(cfg, indent=2) + "\n")
        print(f"wrote  data/models/{out.name}")


# -- chapter 9: published serving measurements and what reading them needs ------------------

#: The book's research notes for the validation chapter: MLPerf dataset lengths and latency
#: limits, submission configs (tensor and pipeline parallelism, batch caps, formats) and the
#: configs of the models the measurements ran (see scripts/research/mlperf/REPORT.md).
MLPERF_RESEARCH = ROOT / "scripts" / "research" / "mlperf"
#: The measured models the book's catalog lacks, added to data/models.csv and data/models/.
#: Left out: DeciLM-7B (a different KV-head count per layer), BLOOM-7B1 (no context length in
#: its config), GPT-J-6B and OPT-6.7B (two-matrix MLPs, outside the llama-style parameter
#: count the catalog is checked against), Llama-3-8B (only a row the chapter declines),
#: DeepSeek-R1 (the DeepSeek-V3 transformer, already in the catalog).
VALIDATION_MODELS = ("Mixtral-8x7B", "Llama-3-70B", "Qwen2-7B", "Qwen1.5-7B", "Aquila-7B",
                     "LLaMA-7B")
_COMMIT_PATH = re.compile(r"(\S+) @([0-9a-f]{40})")


def mlperf_llm(research: Path) -> list[dict]:
    """MLPerf Inference LLM results as the shared drop has them, plus a ``source_url``: the
    result file at its commit in the results repository the row names."""
    rows = []
    for r in read(research / "serving" / "mlperf_llm.csv"):
        found = _COMMIT_PATH.findall(r["source_path_or_url"])
        repo = r["source_repo"].split(" ")[0]
        if found:
            path, commit = found[-1]
            url = f"https://github.com/{repo}/blob/{commit}/{path}"
        else:
            url = f"https://github.com/{repo}"
        rows.append({**r, "source_url": url})
    return rows


#: The book's own serving rows, in the drop's schema (README beside it): rows a drop lacks,
#: and corrections of a drop's row (the same source, metric, value, GPU and concurrency).
SERVING_ADDITIONS = ROOT / "scripts" / "research" / "serving" / "moe_large_ep.csv"


def _serving_key(row: dict) -> tuple:
    return tuple(row[k] for k in ("source_url", "metric", "value", "gpu", "concurrency_or_batch"))


def serving_measurements(research: Path) -> list[dict]:
    """Engine and vendor serving measurements as the drop has them (each row has its
    source_url), a row the book corrected in its corrected form, then the book's additions."""
    book = read(SERVING_ADDITIONS)
    mine = {_serving_key(r): r for r in book}
    drop = read(research / "serving" / "serving_measurements.csv")
    out = [mine.pop(_serving_key(r), r) for r in drop]
    return out + [r for r in book if _serving_key(r) in mine]


def mlperf_datasets(research: Path) -> list[dict]:
    """Input and output lengths and latency limits of each MLPerf LLM benchmark's dataset."""
    keep = ("benchmark_model", "dataset", "input_mean_tokens", "input_median_tokens",
            "input_max_tokens", "output_mean_tokens", "output_max_tokens",
            "output_inflight_ratio", "output_inflight_source_url", "ttft_limit_server_ms",
            "tpot_limit_server_ms", "ttft_limit_interactive_ms", "tpot_limit_interactive_ms",
            "confidence", "source_url", "note")
    return [{k: r[k] for k in keep} for r in read(MLPERF_RESEARCH / "datasets.csv")]


def mlperf_system_configs(research: Path) -> list[dict]:
    """Tensor and pipeline parallelism, batch cap and formats of MLPerf submissions."""
    return read(MLPERF_RESEARCH / "system_configs.csv")


def validation_model_rows() -> list[dict]:
    """data/models.csv rows for :data:`VALIDATION_MODELS`, from the chapter's research."""
    return [r for r in read(MLPERF_RESEARCH / "models.csv") if r["model"] in VALIDATION_MODELS]


def models_with_validation(research: Path) -> list[dict]:
    return model_index(research) + validation_model_rows()


def write_validation_model_configs(overwrite: bool) -> None:
    """data/models/<name>.json for :data:`VALIDATION_MODELS`, as the research wrote them."""
    for r in validation_model_rows():
        out = ROOT / "data" / r["config_file"]
        if out.exists() and not overwrite:
            print(f"keep   data/{r['config_file']} (exists; --overwrite to rebuild)")
            continue
        cfg = json.loads((MLPERF_RESEARCH / r["config_file"]).read_text())
        out.write_text(json.dumps(cfg, indent=2) + "\n")
        print(f"wrote  data/{r['config_file']}")


# -- chapter 10: speculative decoding, published ------------------------------------------------

#: The book's copy of the research drop's speculative-decoding table (README beside it).
SPECULATIVE_RESEARCH = ROOT / "scripts" / "research" / "speculative" / "speculative.csv"
_URL = re.compile(r"https?://[^\s;,)]+")
_IN_REPO = re.compile(r"(\S+) in github\.com/([\w.-]+/[\w.-]+) \(commit ([0-9a-f]+)\)")
_REPO_FILE = re.compile(r"github\.com/([\w.-]+/[\w.-]+) (\S+) \(commit ([0-9a-f]+)\)")
_TIMES = re.compile(r"^\s*(\d+(?:\.\d+)?)x(?:\s|$|\s*\()")
_LEADING_INT = re.compile(r"^\s*(\d+)(?:\s*\(|\s*$)")
#: What each source's speedup compares, in order of precedence (substring of the source or
#: the notes -> the definition): papers time one stream against plain Hugging Face decoding,
#: engines time a fixed batch against themselves without speculation. Never pooled.
SPEEDUP_DEFINITIONS = (
    ("THROUGHPUT improvement", "throughput at a fixed batch, against the same engine without "
                               "speculation"),
    ("max-THROUGHPUT ratio", "throughput at each method's largest batch, against plain "
                             "decoding at its own"),
    ("latency speedup at this batch", "latency at a fixed batch, against plain decoding"),
    ("NOT a pure", "not an ablation: the engine or the number format changed too"),
    ("TensorRT Edge-LLM", "generation throughput against the same model, precision and batch "
                          "without speculation"),
    ("sgl-project/sglang", "decoding speed at a fixed batch, against the same engine without "
                           "MTP"),
    ("DeepSeek-V3 Technical Report", "tokens per second with MTP against without, serving "
                                     "setup not stated"),
    ("Spec-Bench", "one stream, wall-clock time against plain Hugging Face decoding"),
    ("arXiv:2503.01840", "one stream, wall-clock time against plain Hugging Face decoding"),
    ("arXiv:2406.16858", "one stream, wall-clock time against plain Hugging Face decoding"),
    ("arXiv:2401.15077", "one stream, wall-clock time against plain Hugging Face decoding"),
    ("arXiv:2401.10774", "one stream, wall-clock tokens/s against plain Hugging Face decoding"),
)
_THROUGHPUTS = (  # patterns in the notes that state measured tokens/s
    (re.compile(r"spec decode ([\d.,]+) tok/s vs vanilla ([\d.,]+) tok/s"), ("spec", "plain")),
    (re.compile(r"baseline ([\d.,]+) tok/s -> ([\d.,]+) tok/s"), ("plain", "spec")),
    (re.compile(r"no-spec llama-cli eval ([\d.,]+) tok/s; speculative decoded ([\d.,]+) tok/s"),
     ("plain", "spec")),
    (re.compile(r"throughput ([\d.,]+) tokens/s at bs=1"), ("row",)),
    (re.compile(r"generation ([\d.,]+) tok/s"), ("spec",)),
)


def _speculative_url(source: str) -> str:
    """The address a row's source names: a URL it contains, or a file at a commit of a
    GitHub repository; empty when it names none (the row is then left out)."""
    found = _URL.search(source)
    if found:
        return found.group(0).rstrip(".")
    for pattern, order in ((_IN_REPO, (2, 3, 1)), (_REPO_FILE, (1, 3, 2))):
        m = pattern.search(source)
        if m:
            repo, commit, path = (m.group(i) for i in order)
            return f"https://github.com/{repo}/blob/{commit}/{path}"
    return ""


def _number(text: str) -> float | None:
    return float(text.replace(",", "")) if text else None


def speculative_published(research: Path) -> list[dict]:
    """Published speculative-decoding results (``scripts/research/speculative``): each row's
    acceptance length and speedup as numbers where the source states one plain number, what
    its speedup compares (``speedup_definition``), the batch where it is one number, the
    tokens/s the notes state, and the address of its source."""
    rows = []
    for r in read(SPECULATIVE_RESEARCH):
        url = _speculative_url(r["source"])
        text = f"{r['source']} {r['notes']}"
        definition = next((d for key, d in SPEEDUP_DEFINITIONS if key in text),
                          "as the source states it (see notes)")
        speedup = _TIMES.match(r["speedup"] or "")
        batch = _LEADING_INT.match(r["batch_or_concurrency"] or "")
        spec = plain = None
        for pattern, order in _THROUGHPUTS:
            m = pattern.search(r["notes"] or "")
            if m:
                values = dict(zip(order, (_number(g) for g in m.groups())))
                if "row" in values:  # a method's own throughput: the baseline row is plain
                    key = "plain" if r["method"].startswith("none") else "spec"
                    values = {key: values["row"]}
                spec, plain = values.get("spec"), values.get("plain")
                break
        rows.append({
            "source": r["source"], "method": r["method"], "target_model": r["target_model"],
            "draft": r["draft"], "hardware": r["hardware"],
            "batch": int(batch.group(1)) if batch else None,
            "batch_stated": r["batch_or_concurrency"], "temperature": r["temperature"],
            "dataset": r["dataset"],
            "acceptance_length_tokens": float(r["acceptance_length"]) if r["acceptance_length"]
            else None,
            "speedup": float(speedup.group(1)) if speedup else None,
            "speedup_stated": r["speedup"], "speedup_definition": definition,
            "speculative_tok_per_s": spec, "plain_tok_per_s": plain,
            "notes": r["notes"], "date": r["date"], "source_url": url,
        })
    return rows


# -- chapter 10: acceptance by draft position ---------------------------------------------------

_POSITIONS = re.compile(r"(\d)-a=([0-9.]+)")
_RANGE = re.compile(r"(\d+)%-(\d+)%")
#: Medusa's heads, each on its own: top-1 accuracy of head k (the token k + 1 ahead) at the
#: end of training, read from the run log the Medusa repository publishes beside its paper
#: (the 33B run is marked failed there and is left out).
MEDUSA_ACC = ("https://github.com/FasterDecoding/Medusa/blob/"
              "5d374e9bf99f7bf6438cb40a4e0c2c29ff9ed7f7/assets/medusa_acc.csv")
MEDUSA_TOP1 = {"Vicuna-7B-v1.3": (0.5604, 0.3164, 0.2010, 0.1474, 0.1175),
               "Vicuna-13B-v1.3": (0.5939, 0.3397, 0.2161, 0.1500, 0.1223)}


def speculative_acceptance_by_position(research: Path) -> list[dict]:
    """Acceptance by draft position, where a source publishes it: EAGLE's Table 2 (the chance
    the n-th drafted token of a chain is accepted, given the ones before it were), DeepSeek-V3's
    report (its one MTP token), from the research copy's notes; Medusa's heads on their own,
    from the repository's run log (``MEDUSA_TOP1``)."""
    rows = []
    for r in read(SPECULATIVE_RESEARCH):
        url = _speculative_url(r["source"])
        base = {"source": r["source"], "method": r["method"], "target_model": r["target_model"],
                "temperature": r["temperature"], "dataset": r["dataset"]}
        found = _POSITIONS.findall(r["notes"] or "")
        if "per-position acceptance rates (chain draft)" in (r["notes"] or "") and found:
            for n, a in found:
                rows.append({**base, "draft_position": int(n) + 1, "acceptance_low": float(a),
                             "acceptance_high": float(a),
                             "definition": "given the earlier drafted tokens were accepted",
                             "notes": f"{n}-alpha of the paper (n = {n} drafted features in "
                                      "the input)", "date": r["date"], "source_url": url})
        stated = _RANGE.search(r["notes"] or "")
        if "DeepSeek-V3 Technical Report" in r["source"] and stated:
            rows.append({**base, "draft_position": 1,
                         "acceptance_low": int(stated.group(1)) / 100,
                         "acceptance_high": int(stated.group(2)) / 100,
                         "definition": "given the earlier drafted tokens were accepted",
                         "notes": "the second-token prediction (one MTP module, one drafted "
                                  "token); the report states a range",
                         "date": r["date"], "source_url": url})
    for model, top1 in MEDUSA_TOP1.items():
        for n, a in enumerate(top1, start=1):
            rows.append({"source": "Medusa repository, assets/medusa_acc.csv (run log)",
                         "method": "Medusa-1 heads", "target_model": model, "temperature": "",
                         "dataset": "training data (ShareGPT), end of training",
                         "draft_position": n, "acceptance_low": a, "acceptance_high": a,
                         "definition": "the head's own top-1 accuracy, whatever the earlier "
                                       "heads guessed",
                         "notes": f"train/medusa{n - 1}_top1", "date": "2023-08 (run log); "
                         "read 2026-12-01", "source_url": MEDUSA_ACC})
    return rows


TABLES = {
    **curate_costs.TABLES,
    "hardware_specs.csv": hardware,
    "apple_silicon_llama2_7b.csv": apple,
    "gpu_llama2_7b_q4_0.csv": gpus,
    "cpu_llamacpp.csv": cpus,
    "llama2_7b_gguf_sizes.csv": gguf_sizes,
    "serving_papers_claims.csv": serving_claims,
    "serving_models.csv": serving_models,
    "spark_bench_llamacpp.csv": spark_bench,
    "strix_halo_llamacpp.csv": strix_halo,
    "gpt_oss_llamacpp.csv": gpt_oss_guide,
    "models.csv": models_with_validation,
    "serving_links.csv": serving_links,
    "machine_prices.csv": machine_prices,
    "mlperf_llm.csv": mlperf_llm,
    "serving_measurements.csv": serving_measurements,
    "mlperf_datasets.csv": mlperf_datasets,
    "mlperf_system_configs.csv": mlperf_system_configs,
    "speculative_published.csv": speculative_published,
    "speculative_acceptance_by_position.csv": speculative_acceptance_by_position,
}


def with_row_ids(out: Path, rows: list[dict]) -> list[dict]:
    """``rows`` with the ids their rows have in ``out`` (new rows get new ids); says which ids
    the rebuild left without a row, each either corrected (give it back by hand) or removed
    (retire it)."""
    existing = read(out) if out.exists() else []
    rows = rowids.issue(out.stem, rows, existing)
    left = sorted({r["row_id"] for r in existing} - {r["row_id"] for r in rows})
    if left:
        print(f"note   data/{out.name}: {len(left)} ids no longer match a row "
              f"({', '.join(left[:5])}{' ...' if len(left) > 5 else ''}): a row corrected in "
              f"the research drop came back under a new id, so give it its old one by hand; "
              f"a row removed retires its id in data/{rowids.RETIRED}.csv")
    return rows


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--research", type=Path, default=ROOT.parent / "shared" / "research")
    p.add_argument("--overwrite", action="store_true", help="replace tables that already exist")
    args = p.parse_args(argv)
    if not args.research.is_dir():
        print(f"research folder not found: {args.research}; pass --research DIR", file=sys.stderr)
        return 2
    for name, build in TABLES.items():
        out = ROOT / "data" / name
        if out.exists() and not args.overwrite:
            print(f"keep   data/{name} (exists; --overwrite to rebuild)")
            continue
        # A row whose source names no address cannot be checked by a reader: leave it out.
        rows = [r for r in build(args.research) if "http" in r["source_url"]]
        if out.stem in rowids.PREFIXES:
            rows = with_row_ids(out, rows)
        tmp = out.with_suffix(".tmp")
        with tmp.open("w", newline="") as f:
            w = csv.DictWriter(f, fieldnames=list(rows[0]), lineterminator="\n")
            w.writeheader()
            w.writerows(rows)
        tmp.replace(out)
        print(f"wrote  data/{name} ({len(rows)} rows)")
    write_model_configs(args.research, args.overwrite)
    write_validation_model_configs(args.overwrite)
    return 0


if __name__ == "__main__":
    sys.exit(main())
