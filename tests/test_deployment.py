"""One deployment concept: a model on chips, the memory left for its cache, its roof."""

from __future__ import annotations

import pytest

import dataclasses

from napkin import deployment, roofline
from napkin.kvpaging import chapter as paging_chapter
from napkin.serving import chapter as serving_chapter
from napkin.roofline import LLAMA_3_3_70B
from napkin.units import GiB


def test_kv_memory_is_binary_capacity_less_overhead_less_weights():
    d = deployment.deploy("Llama-3.3-70B", "H100 SXM")
    share = deployment.paper_overhead_share()
    # Table 1 in bytes: a 40 GiB card, 26e9 bytes of FP16 weights, 12 GiB of KV cache
    assert share == pytest.approx((40 * GiB - 26e9 - 12 * GiB) / (40 * GiB))
    assert share == pytest.approx(0.0946, abs=1e-4)  # not the 5 % of the printed numbers
    assert d.kv_memory_bytes == pytest.approx(80 * GiB * (1 - share) - 70.5537e9, rel=1e-6)
    assert d.kv_capacity_tokens == int(d.kv_memory_bytes // 327_680)
    assert "FP8" in d.roof.flops_kind  # 8-bit weights run on the FP8 tensor cores
    assert d.max_batch(8192) == int(d.kv_memory_bytes // (327_680 * 8192))


def test_chips_add_up_and_a_config_mapping_works():
    one = deployment.deploy(LLAMA_3_3_70B, "H100 SXM", n_chips=4, weights="BF16")
    assert one.roof.n_chips == 4 and one.roof.capacity_bytes == 4 * 80 * GiB
    assert one.model.weight_bytes == pytest.approx(2 * one.model.params)
    assert "FP16" in one.roof.flops_kind


def test_table1_reads_each_gb_as_what_it_is():
    t = deployment.paper_table1_bytes()
    assert t == {"gpu": 40 * GiB, "parameters": 26e9, "kv": 12 * GiB}
    # only binary KV gigabytes give the printed 15.7K slots at 800 KiB per token
    assert round(t["kv"] / (800 * 1024), -2) == 15_700
    # 13 billion FP16 weights are 26e9 bytes; 26 GiB would be 14 billion
    assert t["parameters"] / 2 == pytest.approx(13e9)


def test_paging_and_serving_agree_with_it():
    d = deployment.deploy("Llama-3.3-70B", "H100 SXM")
    assert paging_chapter.h100_deployment().kv_memory_bytes == pytest.approx(d.kv_memory_bytes,
                                                                             rel=1e-9)
    four = deployment.deploy(LLAMA_3_3_70B, "H100 SXM", n_chips=4, weights="BF16")
    assert serving_chapter.server().kv_capacity_tokens == four.kv_capacity_tokens


def test_a_stated_kv_memory_replaces_the_arithmetic():
    """The vLLM paper's Table 1 states 12 GiB of KV memory for OPT-13B on an A100."""
    model = paging_chapter.paper_model()
    d = deployment.deploy(model, "A100 SXM", weights="F16", kv_memory_bytes=12 * GiB)
    assert d.kv_memory_bytes == 12 * GiB and d.stated_kv_memory_bytes == 12 * GiB
    assert d.kv_capacity_tokens == 12 * GiB // (800 * 1024)
    assert d.max_context_tokens == 2048 and "FP16" in d.roof.flops_kind
    derived = deployment.deploy(model, "A100 SXM", weights="F16")
    assert derived.kv_memory_bytes == pytest.approx(
        80 * GiB * (1 - deployment.paper_overhead_share()) - 26e9)
    with pytest.raises(ValueError, match="stated_kv_memory_bytes"):
        dataclasses.replace(d, stated_kv_memory_bytes=-1.0)
    with pytest.raises(ValueError, match="exceed"):
        deployment.deploy(model, "A100 SXM", weights="F16", kv_memory_bytes=70 * GiB)


@pytest.mark.parametrize("kwargs,match", [
    ({"model": "Llama-3.3-70B", "chip": "H100 SXM", "weights": "BF16"}, "no room for a KV"),
    ({"model": "GPT-5", "chip": "H100 SXM"}, "no models? 'GPT-5'|GPT-5"),
    ({"model": "Llama-3.3-70B", "chip": "H1000"}, "unknown chip"),
    ({"model": "Llama-3.3-70B", "chip": "H100 SXM", "overhead_share": 1.5}, "overhead_share"),
    ({"model": 42, "chip": "H100 SXM"}, "model must be"),
])
def test_bad_deployments_say_what_is_wrong(kwargs, match):
    with pytest.raises(ValueError, match=match):
        deployment.deploy(kwargs.pop("model"), kwargs.pop("chip"), **kwargs)


def test_model_of_passes_a_model_through():
    m = roofline.llama_3_3_70b()
    assert deployment.model_of(m, "FP8") is m
