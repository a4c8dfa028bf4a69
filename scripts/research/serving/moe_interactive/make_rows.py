"""Writes rows.csv beside this file: each published point as two rows (its pace per user and
its throughput per GPU), with the quoted table row and the source's caveats in the notes."""
import csv
from pathlib import Path

SA_DS = "https://github.com/SemiAnalysisAI/InferenceX-app/blob/0e0425cb6df620768ebb9bf730dae4482868135c/packages/app/content/blog/gb200-nvl72-vs-b200-disagg-deepseek-r1-fp4-dynamo-trt.mdx"
SA_KIMI = "https://github.com/SemiAnalysisAI/InferenceX-app/blob/26a3586c0b9c5edf27cf7a43eea694512bbf547a/packages/app/content/blog/b200-nvfp4-vs-h200-int4-kimi-k2-vllm-perf-per-dollar.mdx"
SA_GPTOSS = "https://github.com/SemiAnalysisAI/InferenceX-app/blob/2d1d3d65df4d6cb7773de89d548becc15dafab44/packages/app/content/blog/best-gpu-for-gptoss120b-inference.mdx"
DYN_GPTOSS = "https://github.com/ai-dynamo/dynamo/blob/0e72f06c7e614aa7bddd5e9ab3b6cfa50201916e/recipes/gpt-oss-120b/README.md"
DYN_KIMI = "https://github.com/ai-dynamo/dynamo/blob/04521f473b68375705a553f4082fac8254d71a2f/recipes/kimi-k2.5/README.md"

rows = []


def add_pair(base, note, pace, throughput):
    """A point's two rows: ``pace`` and ``throughput`` are (metric, value, unit[, more note])."""
    for metric, value, unit, *more in (pace, throughput):
        rows.append(dict(base, metric=metric, value=value, unit=unit, notes=note + "".join(more)))

# ---- Source A: SemiAnalysis InferenceX, DeepSeek R1 0528 FP4, GB200 NVL72 vs B200, Dynamo TRT-LLM + MTP, disagg
sa_ds_common = ("SemiAnalysis InferenceX blog 'GB200 NVL72 vs B200 on DeepSeek R1 670B' (web: https://inferencex.semianalysis.com/blog/gb200-nvl72-vs-b200-disagg-deepseek-r1-fp4-dynamo-trt), "
    "measured table (NOT the interpolated iso-interactivity table): 'All rows are DeepSeek R1 0528 FP4 at ISL 1024 / OSL 1024, Dynamo TRT-LLM with MTP enabled, disaggregated prefill/decode on both SKUs, multinode in both cases, measured on InferenceX on 2026-05-22 (run 26306422380).' "
    "MTP ON (number of draft tokens not stated). tok/s/GPU is InferenceX tput_per_gpu = TOTAL (input+output) tokens/s per GPU (InferenceX-app .claude/skills/inferencex-data/SKILL.md: 'tput_per_gpu is total throughput (input+output tokens) per second per GPU'), so output-only tokens/s/GPU is lower and is not stated in the post. "
    "tok/s/user is InferenceX median interactivity (inverse of TPOT). n_gpus = prefill GPUs + decode GPUs as listed (InferenceX docs: total GPU count = num_prefill_gpu + num_decode_gpu); the post does not spell out the divisor.")
ds_points = [
 # gpu, conc, prefill, decode, n, tput, tpsu, tpot, row text
 ("GB200", 48, "4 GPU, TP=4", "32 GPU, EP=8", 36, 363.3, 207.30, 4.82, "| 48     | 4 GPU, TP=4   | 32 GPU, EP=8  | 363.3        | 207.30     | 4.82      | $1.69     |"),
 ("GB200", 180, "4 GPU, TP=4", "32 GPU, EP=32", 36, 1149.1, 164.37, 6.08, "| 180    | 4 GPU, TP=4   | 32 GPU, EP=32 | 1,149.1      | 164.37     | 6.08      | $0.53     |"),
 ("GB200", 2253, "12 GPU, TP=12", "32 GPU, EP=32", 44, 7698.0, 90.99, 10.99, "| 2,253  | 12 GPU, TP=12 | 32 GPU, EP=32 | 7,698.0      | 90.99      | 10.99     | $0.08     |"),
 ("B200", 180, "4 GPU, TP=4", "40 GPU, EP=8", 44, 897.9, 126.42, 7.91, "| 180    | 4 GPU, TP=4   | 40 GPU, EP=8 | 897.9        | 126.42     | 7.91      | $0.60     |"),
 ("B200", 875, "4 GPU, TP=4", "40 GPU, EP=8", 44, 2832.9, 101.79, 9.82, "| 875    | 4 GPU, TP=4   | 40 GPU, EP=8 | 2,832.9      | 101.79     | 9.82      | $0.19     |"),
 ("B200", 1214, "4 GPU, TP=4", "16 GPU, EP=8", 20, 7111.4, 74.04, 13.51, "| 1,214  | 4 GPU, TP=4   | 16 GPU, EP=8 | 7,111.4      | 74.04      | 13.51     | $0.08     |"),
 ("B200", 4968, "12 GPU, TP=12", "32 GPU, EP=8", 44, 9660.7, 56.35, 17.75, "| 4,968  | 12 GPU, TP=12 | 32 GPU, EP=8 | 9,660.7      | 56.35      | 17.75     | $0.06     |"),
]
for gpu, conc, pre, dec, n, tput, tpsu, tpot, txt in ds_points:
    sku = "GB200 NVL72" if gpu == "GB200" else "B200 (multinode, RoCEv2 between nodes)"
    base = dict(source_url=SA_DS, engine="NVIDIA Dynamo + TensorRT-LLM (InferenceX 'dynamo-trt')", version="not stated (InferenceX run 26306422380, 2026-05-22)",
                model="DeepSeek R1 0528 (deepseek-ai/DeepSeek-R1-0528)", precision="FP4 (as stated: 'DeepSeek R1 0528 FP4')", gpu=gpu, n_gpus=n,
                tp=f"disagg: prefill {pre}; decode {dec} ({n} GPUs total)", input_len=1024, output_len=1024, concurrency_or_batch=f"concurrency={conc}")
    note = f"{sku}. Quoted table row (Conc | Prefill | Decode | tok/s/GPU | tok/s/user | TPOT (ms) | $/M tok): '{txt}'. " + sa_ds_common
    add_pair(base, note, ("median interactivity (per-user output rate)", tpsu, "tokens/s/user", f" Same run also states TPOT {tpot} ms."),
             ("total (input+output) token throughput per GPU at the per-user rate in the paired row", tput, "total tokens/s/GPU"))

# ---- Source B: SemiAnalysis InferenceX, Kimi K2.5/K2.6, vLLM, single node, 8k/1k
sa_k_common = ("SemiAnalysis InferenceX blog 'B200 NVFP4 vs H200 INT4 on Kimi K2.5/K2.6' (web: https://inferencex.semianalysis.com/blog/b200-nvfp4-vs-h200-int4-kimi-k2-vllm-perf-per-dollar): "
    "'All rows are Kimi K2.5 / K2.6 at ISL 8192 / OSL 1024 on a single 8-GPU node, measured on InferenceX on 2026-05-19, GHA run 26118912054. Throughput is per-GPU.' 'Both SKUs run the same vllm/vllm-openai:v0.21.0 container.' "
    "Speculative decoding: not mentioned for these vLLM runs (assume off; not stated). tok/s/GPU is InferenceX tput_per_gpu = TOTAL (input+output) tokens/s per GPU; at 8k/1k most of it is input (prefill) tokens, so output-only per GPU is far lower (not stated). "
    "Kimi K2.5 is the K2 architecture (1T total / 32B active); post says results apply to both K2.5 and K2.6.")
k_points = [
 ("B200", "NVFP4 (NVFP4 requantization of the native INT4 weights)", 4, "TP=4", 8, 1537.2, 90.66, 11.03, "B200 vLLM NVFP4 (TP=4 + TP=8)", "| 8    | 1,537.2   | 90.66      | 11.03     | $0.352     | TP=4 |"),
 ("B200", "NVFP4 (NVFP4 requantization of the native INT4 weights)", 4, "TP=4", 16, 2318.7, 67.40, 14.84, "B200 vLLM NVFP4 (TP=4 + TP=8)", "| 16   | 2,318.7   | 67.40      | 14.84     | $0.234     | TP=4 |"),
 ("H200", "INT4 (Moonshot native INT4 weights)", 8, "TP=8", 8, 590.2, 70.28, 14.23, "H200 vLLM INT4 (TP=8)", "| 8    | 590.2     | 70.28      | 14.23     | $0.664     |"),
 ("B200", "INT4 (Moonshot native INT4 weights)", 8, "TP=8", 16, 969.4, 59.21, 16.89, "B200 vLLM INT4 (TP=8)", "| 16   | 969.4     | 59.21      | 16.89     | $0.559     |"),
]
for gpu, prec, n, tp, conc, tput, tpsu, tpot, table, txt in k_points:
    base = dict(source_url=SA_KIMI, engine="vLLM", version="vllm/vllm-openai:v0.21.0 (InferenceX run 26118912054, 2026-05-19)",
                model="Kimi K2.5 / K2.6 (moonshotai/Kimi-K2.5)", precision=prec, gpu=gpu, n_gpus=n, tp=tp,
                input_len=8192, output_len=1024, concurrency_or_batch=f"concurrency={conc}")
    note = f"Table '{table}', quoted row (Conc | tok/s/GPU | tok/s/user | TPOT (ms) | $/M tokens [| TP]): '{txt}'. " + sa_k_common
    add_pair(base, note, ("median interactivity (per-user output rate)", tpsu, "tokens/s/user", f" Same row states TPOT {tpot} ms."),
             ("total (input+output) token throughput per GPU at the per-user rate in the paired row", tput, "total tokens/s/GPU"))

# ---- Source C: SemiAnalysis InferenceX best-GPU gpt-oss-120b (max-throughput config per GPU; only rows with TPOT <= 20 ms kept)
sa_g_common = ("SemiAnalysis InferenceX blog 'Best GPU for gpt-oss-120b Inference (April 2026)' (web: https://inferencex.semianalysis.com/blog/best-gpu-for-gptoss120b-inference); "
    "'One row per GPU showing the highest-throughput configuration. All data from automated InferenceX benchmarks.' GPU count / TP of each config NOT stated in the post. "
    "Throughput/GPU is InferenceX tput_per_gpu = TOTAL (input+output) tokens/s per GPU. The post's per-user figure is median TPOT (ms); 1000/TPOT would give tokens/s/user but is not stated, so only TPOT is recorded. "
    "Speculative decoding: not stated. Note: the post wrongly calls gpt-oss-120b 'dense'; it is an MoE (128 experts, top-4).")
g_points = [
 ("GB200", "dynamo-trt (NVIDIA Dynamo + TensorRT-LLM)", 8192, 1024, 512, 53952.5, 14.7, "2026-01-07", "8k/1k table", "| NVIDIA GB200 | FP4       | dynamo-trt |               53,952.5 |  $0.01 |          5,027.7 |             14.7 |         512 | 2026-01-07 |"),
 ("B200", "trt (TensorRT-LLM)", 1024, 1024, 256, 28012.9, 17.9, "2026-02-05", "1k/1k table", "| NVIDIA B200  | FP4       | trt        |               28,012.9 |             72.9 |             17.9 |         256 | 2026-02-05 |"),
 ("MI355X", "atom (AMD ATOM)", 1024, 1024, 128, 17577.2, 14.2, "2026-01-14", "1k/1k table", "| AMD MI355X   | FP4       | atom       |               17,577.2 |             50.5 |             14.2 |         128 | 2026-01-14 |"),
 ("MI325X", "vllm", 1024, 1024, 64, 4521.2, 13.8, "2026-03-09", "1k/1k table", "| AMD MI325X   | FP4       | vllm       |                4,521.2 |             62.5 |             13.8 |          64 | 2026-03-09 |"),
 ("H100", "vllm", 1024, 1024, 64, 4170.9, 15.0, "2026-03-27", "1k/1k table", "| NVIDIA H100  | FP4       | vllm       |                4,170.9 |             70.8 |             15.0 |          64 | 2026-03-27 |"),
]
for gpu, eng, isl, osl, conc, tput, tpot, date, table, txt in g_points:
    base = dict(source_url=SA_GPTOSS, engine=eng, version=f"not stated (InferenceX run dated {date})",
                model="gpt-oss-120b (openai/gpt-oss-120b)", precision="FP4 (as stated; gpt-oss ships MXFP4 MoE weights)", gpu=gpu, n_gpus="not stated", tp="not stated",
                input_len=isl, output_len=osl, concurrency_or_batch=f"concurrency={conc}")
    hdr = ("GPU | Precision | Framework | Throughput/GPU (tok/s) | $/Mtok | Median TTFT (ms) | Median TPOT (ms) | Concurrency | Date" if "8k" in table
           else "GPU | Precision | Framework | Throughput/GPU (tok/s) | Median TTFT (ms) | Median TPOT (ms) | Concurrency | Date")
    note = f"{table}, quoted row ({hdr}): '{txt}'. " + sa_g_common
    add_pair(base, note, ("median time per output token (per-user pace)", tpot, "ms/token (TPOT)"),
             ("total (input+output) token throughput per GPU at the TPOT in the paired row", tput, "total tokens/s/GPU"))

# ---- Source D: Dynamo gpt-oss-120b recipe performance table
d_common = ("NVIDIA Dynamo recipe README 'gpt-oss-120b Recipes', section 'Performance results': 'Measured 2026-07-09 on the agentic 15% trace (see perf/README.md), 8 GPUs, with the synthetic-acceptance EAGLE3 throughput proxy (AL=2.72 on all workers — output is garbage by design; use for relative comparisons) and each recipe's KV-offload default. Per-GPU = system throughput / 8.' "
    "perf/README.md: 'Per-GPU throughput = output_token_throughput / 8 (all variants run on 8 GPUs); the interactivity target is >=50 tok/s/user.' "
    "Speculative decoding ON: EAGLE3-v3, draft length 3 (DL=3), with SYNTHETIC acceptance (mean accepted length forced to 2.72), so absolute numbers overstate real serving. "
    "Workload: Mooncake-format agentic trace, median ISL 64k, median OSL 400, 90% KV-cache hit rate; aiperf trace replay at fixed concurrency.")
d_points = [
 ("agg — 8x TP1 replicas (KV-aware routing)", 8, "aggregated, 8x TP1 replicas", 512, 2896, 58, "| B200 | **agg** — 8x TP1                 | c512 | **2896**  | 58         | 4.4s     | offload quality-neutral                     |"),
 ("disagg — 2P6D colocated", 8, "disaggregated, 2x TP1 prefill + 6x TP1 decode (one node)", 256, 2069, 99, "| B200 | disagg — 2P6D colocated             | c256 | 2069      | 99         | 5.6s     | plateau; TTFT-limited above c256            |"),
]
for cfg, n, tp, conc, tput, tpsu, txt in d_points:
    base = dict(source_url=DYN_GPTOSS, engine="NVIDIA Dynamo + vLLM", version="Dynamo 1.3.0 / vLLM 0.23",
                model="openai/gpt-oss-120b", precision="MXFP4 MoE + FP8 KV cache", gpu="B200", n_gpus=n, tp=tp,
                input_len="agentic trace, median 64k (90% KV hit)", output_len="median 400", concurrency_or_batch=f"concurrency={conc}")
    note = f"Quoted row (SKU | config (shipped) | conc | tok/s/GPU | tok/s/user | TTFT avg | note): '{txt}'. " + d_common
    add_pair(base, note, ("per-user output rate (tok/s/user)", tpsu, "tokens/s/user"),
             ("output throughput per GPU at the per-user rate in the paired row", tput, "output tokens/s/GPU"))

# ---- Source E: Dynamo Kimi-K2.5 recipe 'Expected metrics'
e_common = ("NVIDIA Dynamo recipe README 'Kimi-K2.5 NVFP4 Recipes: Agentic Coding Workload' on '6x GB200 (24 GPU)'. The values are the README's APPROXIMATE 'Expected metrics' ('~'), '(Consistent with the pareto plot at the top)'; concurrency from the 'Configurations' table. "
    "Workload: 'Mooncake-style trace that emulates a long-context, KV-reuse-heavy agentic coding workload (~200k-token context window, multi-turn sessions ...)'; ISL/OSL per request not stated; 1-hour benchmark. "
    "The README does not define tok/s/GPU; (helper's reasoning, not the source's) with concurrency 24-32 on 24 GPUs and ~85-130 tok/s/user it cannot be output-only tokens, so read it as total (input incl. cached prefix + output) tokens/s/GPU. Model checkpoint nvidia/Kimi-K2.5-NVFP4; Eagle3 head nvidia/Kimi-K2.5-Thinking-Eagle3 (draft length not stated in README).")
e_points = [
 ("Disaggregated, KV-aware routing, Eagle3, TRTLLM-native KV offload", "3x DEP4 prefill + 3x TEP4 decode (12 prefill + 12 decode GPUs)", 32, 130, 5400,
  "Config row: '| **Disaggregated** | KV-aware | Eagle3 | ✅ (TRTLLM-native offload) | 32 | 3x DEP4 prefill + 3x TEP4 decode |'; metrics row: '| Disagg + Eagle + KV routing + offload | ~130 | ~5,400 |'"),
 ("Aggregated, KV-aware routing, Eagle3", "3x TEP=8", 24, 85, 4400,
  "Config row: '| **Aggregated** | KV-aware | Eagle3 | ❌ | 24 | 3x TEP=8 |'; metrics row: '| Agg + Eagle + KV routing | ~85 | ~4,400 |'"),
]
for cfg, tp, conc, tpsu, tput, txt in e_points:
    base = dict(source_url=DYN_KIMI, engine="NVIDIA Dynamo + TensorRT-LLM", version="not stated (manifests ship tensorrtllm-runtime:1.3.1 as a placeholder)",
                model="Kimi-K2.5 NVFP4 (nvidia/Kimi-K2.5-NVFP4)", precision="NVFP4", gpu="GB200", n_gpus=24, tp=tp,
                input_len="agentic coding trace (~200k context window)", output_len="not stated", concurrency_or_batch=f"concurrency={conc}")
    note = f"{cfg}. {txt}. Speculative decoding ON (Eagle3). " + e_common
    add_pair(base, note, ("average per-user output rate (approximate, '~')", tpsu, "tokens/s/user"),
             ("throughput per GPU (approximate, '~'; token type not defined, see notes)", tput, "tokens/s/GPU (undefined; likely total)"))

hdr = ["row_id","source_url","engine","version","model","precision","gpu","n_gpus","tp","input_len","output_len","concurrency_or_batch","metric","value","unit","notes"]
with open(Path(__file__).with_name("rows.csv"), "w", newline="") as f:
    w = csv.writer(f)
    w.writerow(hdr)
    for i, r in enumerate(rows, 1):
        r["row_id"] = f"moe-int-{i:03d}"
        w.writerow([r[h] for h in hdr])
print(len(rows))
