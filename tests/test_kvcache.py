"""KV cache sizes from config.json: GQA, MQA, head_dim, windows, MLA, cache dtypes."""

from __future__ import annotations

import json
import os
import shutil
from pathlib import Path

import pandas as pd
import pytest

from napkin import catalog, kv_bytes_per_token, kv_cache_bytes, kvcache, models, tables

LLAMA_33_70B = {"num_hidden_layers": 80, "num_attention_heads": 64, "num_key_value_heads": 8,
                "hidden_size": 8192}
MISTRAL_7B = {"num_hidden_layers": 32, "num_attention_heads": 32, "num_key_value_heads": 8,
              "hidden_size": 4096, "sliding_window": 4096}
DEEPSEEK_V3 = {"num_hidden_layers": 61, "num_attention_heads": 128, "hidden_size": 7168,
               "kv_lora_rank": 512, "qk_rope_head_dim": 64, "qk_nope_head_dim": 128,
               "v_head_dim": 128}


def test_llama_33_70b_is_the_essays_320_kib():
    assert kv_bytes_per_token(LLAMA_33_70B) == 327_680 == 320 * 1024
    assert kv_cache_bytes(LLAMA_33_70B, 131_072) == 327_680 * 131_072
    assert kv_cache_bytes(LLAMA_33_70B, 8192, batch=32) == 327_680 * 8192 * 32


def test_gqa_mha_mqa_scale_with_kv_heads():
    mha = {**LLAMA_33_70B, "num_key_value_heads": 64}
    mqa = {**LLAMA_33_70B, "num_key_value_heads": 1}
    assert kv_bytes_per_token(mha) == 8 * kv_bytes_per_token(LLAMA_33_70B)
    assert kv_bytes_per_token(mqa) * 8 == kv_bytes_per_token(LLAMA_33_70B)
    no_kv_field = {k: v for k, v in mha.items() if k != "num_key_value_heads"}
    assert kv_bytes_per_token(no_kv_field) == kv_bytes_per_token(mha)


def test_explicit_head_dim_wins_over_hidden_over_heads():
    gemma_like = {"num_hidden_layers": 2, "num_attention_heads": 8, "num_key_value_heads": 4,
                  "hidden_size": 2048, "head_dim": 256}
    assert kv_bytes_per_token(gemma_like) == 2 * 2 * 4 * 256 * 2


def test_sliding_window_caps_every_windowed_layer():
    assert kv_cache_bytes(MISTRAL_7B, 32_768) == kv_cache_bytes(MISTRAL_7B, 4096)
    off = {**MISTRAL_7B, "use_sliding_window": False}
    assert kv_cache_bytes(off, 32_768) == 8 * kv_cache_bytes(off, 4096)


def test_layer_types_alternate_windowed_and_full():
    cfg = {"num_hidden_layers": 4, "num_attention_heads": 64, "num_key_value_heads": 8,
           "head_dim": 64, "hidden_size": 2880, "sliding_window": 128,
           "layer_types": ["sliding_attention", "full_attention"] * 2}
    per_layer = 2 * 8 * 64 * 2
    assert kv_cache_bytes(cfg, 1000) == per_layer * (2 * 128 + 2 * 1000)


def test_gemma3_pattern_and_qwen2_window_layers():
    gemma3 = {"num_hidden_layers": 12, "num_attention_heads": 8, "num_key_value_heads": 4,
              "head_dim": 256, "hidden_size": 2560, "sliding_window": 1024,
              "sliding_window_pattern": 6}
    kinds = [layer.window for layer in kvcache.layers(gemma3)]
    assert kinds.count(None) == 2 and kinds[5] is None and kinds[11] is None
    qwen2 = {"num_hidden_layers": 4, "num_attention_heads": 4, "num_key_value_heads": 2,
             "hidden_size": 512, "sliding_window": 64, "use_sliding_window": True,
             "max_window_layers": 3}
    assert [layer.window for layer in kvcache.layers(qwen2)] == [None, None, None, 64]


def test_mla_caches_latent_and_rope_key():
    assert kv_bytes_per_token(DEEPSEEK_V3) == (512 + 64) * 61 * 2


def test_cache_dtypes():
    assert kv_bytes_per_token(LLAMA_33_70B, "q8_0") == 327_680 // 2 * 34 // 32
    assert kv_bytes_per_token(LLAMA_33_70B, "fp8") == 327_680 // 2
    assert kv_bytes_per_token(LLAMA_33_70B, 1) == 327_680 // 2
    with pytest.raises(ValueError, match="unknown KV cache dtype"):
        kv_bytes_per_token(LLAMA_33_70B, "int3")
    with pytest.raises(ValueError, match="kv_dtype_bytes"):
        kv_bytes_per_token(LLAMA_33_70B, -2)


def test_config_path(tmp_path):
    path = tmp_path / "config.json"
    path.write_text(json.dumps(LLAMA_33_70B))
    assert kv_bytes_per_token(path) == 327_680


@pytest.mark.parametrize("cfg,message", [
    ({k: v for k, v in LLAMA_33_70B.items() if k != "num_attention_heads"}, "num_attention_heads"),
    ({**LLAMA_33_70B, "num_hidden_layers": -80}, "num_hidden_layers"),
    ({**LLAMA_33_70B, "num_key_value_heads": 7}, "not a multiple"),
    ({**MISTRAL_7B, "layer_types": ["sliding_attention"] * 31 + ["cross_attention"]},
     "unknown layer type.*cross_attention"),
    ({**MISTRAL_7B, "layer_types": ["full_attention"]}, "1 entries for 32 layers"),
    ({**LLAMA_33_70B, "layer_types": ["sliding_attention"] * 80}, "no sliding_window"),
])
def test_bad_configs_are_errors_not_guesses(cfg, message):
    with pytest.raises(ValueError, match=message):
        kv_cache_bytes(cfg, 10)


@pytest.mark.parametrize("kwargs,message", [({"n_tokens": -1}, "n_tokens"),
                                            ({"n_tokens": 10, "batch": 0}, "batch"),
                                            ({"n_tokens": 1.5}, "n_tokens")])
def test_bad_sizes(kwargs, message):
    with pytest.raises(ValueError, match=message):
        kv_cache_bytes(LLAMA_33_70B, **kwargs)


def test_capacity_beside_the_weights():
    weights = 70.55e9  # Llama 3.3 70B at 8 bits per weight
    assert kvcache.max_batch(LLAMA_33_70B, 8192, 80e9, weights) == 3
    assert kvcache.max_batch(LLAMA_33_70B, 8192, 60e9, weights) == 0
    assert kvcache.max_tokens(LLAMA_33_70B, 80e9, weights) == int((80e9 - weights) // 327_680)
    with pytest.raises(ValueError, match="do not fit"):
        kvcache.max_tokens(LLAMA_33_70B, 60e9, weights)


# -- what the module refuses, and what it keeps exact -------------------------------------

@pytest.mark.parametrize("cfg,message", [
    ({**LLAMA_33_70B, "head_dim": -128}, "head_dim"),
    ({**MISTRAL_7B, "sliding_window": -4096}, "sliding_window"),
    ({k: v for k, v in DEEPSEEK_V3.items() if k != "qk_rope_head_dim"}, "qk_rope_head_dim"),
    ({k: v for k, v in LLAMA_33_70B.items() if k != "num_hidden_layers"}, "num_hidden_layers"),
    ({**LLAMA_33_70B, "num_key_value_heads": 0}, "num_key_value_heads"),
    ({**LLAMA_33_70B, "num_hidden_layers": 2,
      "layer_types": ["full_attention", "linear_attention"]}, "recurrent state"),
    ({**LLAMA_33_70B, "is_encoder_decoder": True}, "encoder-decoder"),
])
def test_missing_negative_or_unsizable_fields_are_named(cfg, message):
    with pytest.raises(ValueError, match=message):
        kv_bytes_per_token(cfg)


def test_block_formats_need_whole_blocks_per_head():
    odd = {**LLAMA_33_70B, "head_dim": 80}
    assert kv_bytes_per_token(odd, "f16") == 2 * 8 * 80 * 80 * 2
    with pytest.raises(ValueError, match="q8_0 cache stores blocks of 32"):
        kv_cache_bytes(odd, 10, kv_dtype_bytes="q8_0")


def test_quantized_sizes_are_exact_integers_at_any_scale():
    # 34/32 bytes per element: floats would drift at a trillion elements, fractions do not
    n = 10**7
    assert kv_cache_bytes(LLAMA_33_70B, n, 64, "q8_0") == 327_680 // 2 * n * 64 * 34 // 32
    assert kvcache.dtype_bytes("q4_1") * 32 == 20 and kvcache.dtype_bytes("iq4_nl") * 32 == 18


def test_linear_form_is_the_cache_formula():
    for cfg in (LLAMA_33_70B, MISTRAL_7B, DEEPSEEK_V3):
        form = kvcache.linear_form(cfg)
        for n in (0, 1, 4095, 4096, 4097, 100_000):
            assert form.elements(n) * 2 == kv_cache_bytes(cfg, n)


def test_max_context_is_the_last_length_that_fits():
    weights, memory = 70.55e9, 141e9
    n = kvcache.max_context(LLAMA_33_70B, memory, weights)
    assert kv_cache_bytes(LLAMA_33_70B, n) <= memory - weights < kv_cache_bytes(LLAMA_33_70B, n + 1)
    n4 = kvcache.max_context(LLAMA_33_70B, memory, weights, batch=4)
    assert kv_cache_bytes(LLAMA_33_70B, n4, 4) <= memory - weights < \
        kv_cache_bytes(LLAMA_33_70B, n4 + 1, 4)
    assert kvcache.max_context(LLAMA_33_70B, 60e9, weights) == 0
    # every layer windowed: the cache stops growing, so any context fits
    assert kvcache.max_context(MISTRAL_7B, 24e9, 14.5e9) is None
    assert kvcache.max_context(MISTRAL_7B, 14.5e9 + 1e8, 14.5e9) < 4096


def test_decode_step_reads_weights_once_and_every_cache():
    step = kvcache.decode_step_bytes(LLAMA_33_70B, 70e9, 8192, batch=4)
    assert step == 70e9 + 4 * 327_680 * 8192
    with pytest.raises(ValueError, match="weight_bytes"):
        kvcache.decode_step_bytes(LLAMA_33_70B, -1, 8192)


def test_capacities_are_binary_and_one_per_chip():
    from napkin import hardware

    for name, chip in hardware.chips().items():
        if chip.capacity_spec is None:
            continue
        assert chip.capacity_spec.endswith("_GiB"), name
        assert chip.capacity_bytes == chip.specs[chip.capacity_spec] * 2**30, name
    assert hardware.chip("B200").capacity_bytes == 180 * 2**30
    assert hardware.chip("M2 Ultra").capacity_spec == "max_memory_capacity_GiB"
    # the driver keeps back a little of an H100's 80 GiB (nvidia-smi: 81,559 MiB)
    h100 = hardware.chip("H100 SXM")
    assert h100.specs["driver_visible_memory_MiB"] * 2**20 < h100.capacity_bytes


# -- the model configs in data/models ------------------------------------------------------

ROOT = Path(__file__).resolve().parents[1]
DATA = ROOT / "data"
#: The research notes the configs were built from, where this checkout can see them
#: ($NAPKIN_RESEARCH, or shared/research beside the repository or its worktree folder).
RESEARCH = next((p / "model_configs.csv" for p in (
    Path(os.environ["NAPKIN_RESEARCH"]) if "NAPKIN_RESEARCH" in os.environ else None,
    ROOT.parent / "shared" / "research", ROOT.parents[1] / "shared" / "research")
    if p is not None and (p / "model_configs.csv").is_file()), Path("/nonexistent"))


def test_every_indexed_model_has_its_config_and_no_other_exists():
    index = catalog.index()
    files = {p.name for p in (DATA / "models").glob("*.json")}
    assert files == {Path(f).name for f in index["config_file"]}
    for _, r in index.iterrows():
        cfg = json.loads((DATA / r["config_file"]).read_text())
        assert cfg["_name"] == r["model"]
        assert cfg["_source_url"] == r["source_url"] and "https://" in cfg["_source_url"]
        assert cfg["_config_url"] == r["config_url"] and "https://" in cfg["_config_url"]
        expected = None if pd.isna(r["max_context_tokens"]) else int(r["max_context_tokens"])
        assert cfg["_max_context_tokens"] == expected


@pytest.mark.parametrize("model", catalog.names())
def test_configs_reproduce_the_research_kv_per_token(model):
    """The notes computed KV bytes per token by hand; the formula must agree from the file."""
    row = catalog.index().set_index("model").loc[model]
    assert kv_bytes_per_token(catalog.config(model)) == row["kv_per_token_fp16_research_bytes"]


@pytest.mark.parametrize("model", [m for m in catalog.names()
                                   if "kv_lora_rank" not in catalog.config(m)
                                   and "num_local_experts" not in catalog.config(m)])
def test_dense_configs_reproduce_the_parameter_count(model):
    counted = models.dense_params(catalog.config(model))
    assert counted == pytest.approx(catalog.params(model), rel=2e-4)  # biases aside


@pytest.mark.skipif(not RESEARCH.is_file(), reason="the research notes are not on this machine")
def test_configs_match_the_research_table():
    research = pd.read_csv(RESEARCH, dtype=str).fillna("")
    fields = {"layers": "num_hidden_layers", "hidden_size": "hidden_size",
              "attention_heads": "num_attention_heads", "kv_heads": "num_key_value_heads",
              "head_dim": "head_dim", "intermediate_size": "intermediate_size",
              "vocab_size": "vocab_size"}
    for _, r in research.iterrows():
        name = {"Qwen2.5-7B(-Instruct)": "Qwen2.5-7B-Instruct",
                "Qwen2.5-72B(-Instruct)": "Qwen2.5-72B-Instruct",
                "DeepSeek-V3 (671B)": "DeepSeek-V3"}.get(r["model"], r["model"])
        cfg = catalog.config(name)
        for col, field in fields.items():
            if r[col].isdigit():
                assert cfg[field] == int(r[col]), (name, field)


def test_window_layouts_of_the_real_configs():
    gpt = catalog.config("gpt-oss-120b")
    kinds = [layer.window for layer in kvcache.layers(gpt)]
    assert kinds[0::2] == [128] * 18 and kinds[1::2] == [None] * 18
    per_layer = 2 * 8 * 64 * 2
    assert kv_cache_bytes(gpt, 131_072) == per_layer * 18 * (131_072 + 128)
    qwen = catalog.config("Qwen2.5-7B-Instruct")  # sliding_window present but switched off
    assert kv_cache_bytes(qwen, 131_072) == 131_072 * kv_bytes_per_token(qwen)
    assert kvcache.max_context_tokens(catalog.config("Mistral-7B-v0.1")) == 32_768


def test_mla_layers_honour_windows_and_refuse_recurrent_types():
    windowed = {**DEEPSEEK_V3, "num_hidden_layers": 2, "sliding_window": 100,
                "layer_types": ["sliding_attention", "full_attention"]}
    assert kv_cache_bytes(windowed, 1000) == (512 + 64) * 2 * (100 + 1000)
    hybrid = {**windowed, "layer_types": ["linear_attention", "full_attention"]}
    with pytest.raises(ValueError, match="recurrent state"):
        kv_cache_bytes(hybrid, 10)


def test_a_config_is_parsed_once_and_read_only():
    """Issue 28: a catalog config is read once per process and interpreted once; every
    function that takes a config takes the parsed one as is, with the same answers."""
    arch = catalog.config("Llama-3.3-70B")
    assert catalog.config("Llama-3.3-70B") is arch
    assert models.load_config(arch) is arch
    raw = json.loads((tables.data_dir() / "models" / "Llama-3.3-70B.json").read_text())
    assert arch == raw and kv_cache_bytes(arch, 8192, 4) == kv_cache_bytes(raw, 8192, 4)
    assert arch.layers is arch.layers and len(arch.layers) == raw["num_hidden_layers"]
    with pytest.raises(TypeError):
        arch["num_key_value_heads"] = 64
    assert {**arch, "num_key_value_heads": 64}["num_key_value_heads"] == 64
    assert hash(models.load_config(raw)) == hash(arch)


def test_an_edited_config_file_is_read_again(tmp_path, monkeypatch):
    """The parse is kept against the file's size and time: an edit is seen, never a stale
    parse."""
    shutil.copytree(tables.data_dir(), tmp_path / "data")
    monkeypatch.setattr(tables, "data_dir", lambda: tmp_path / "data")
    before = kv_bytes_per_token(catalog.config("Llama-3.3-70B"))
    path = tmp_path / "data" / "models" / "Llama-3.3-70B.json"
    cfg = json.loads(path.read_text())
    path.write_text(json.dumps({**cfg, "num_key_value_heads": 64}))
    assert kv_bytes_per_token(catalog.config("Llama-3.3-70B")) == 8 * before
