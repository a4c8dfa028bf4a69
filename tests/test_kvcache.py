"""KV cache sizes from config.json: GQA, MQA, head_dim, windows, MLA, cache dtypes."""

from __future__ import annotations

import json

import pytest

from napkin import kv_bytes_per_token, kv_cache_bytes, kvcache

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
