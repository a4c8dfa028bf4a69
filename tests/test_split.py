"""Prefill on one machine, decode on another: napkin.predict_split (chapter 12's engine)."""

from __future__ import annotations

import math
from dataclasses import fields

import pytest

import napkin
from napkin import kvcache
from napkin.catalog import config
from napkin.split import pair

FIELDS = ("prefill_s", "transfer_bytes", "transfer_s", "ttft_s", "tpot_s", "decode_s",
          "e2e_latency_s", "binding")


@pytest.fixture(scope="module")
def desk():
    """The issue's desk pair: DGX Spark prefills, an M3 Ultra decodes, over 10 GbE."""
    return napkin.predict_split("DGX Spark", "M3 Ultra", "Llama-3.1-8B", weights="fp16",
                                input_tokens=8192, output_tokens=500, link_gb_per_s=1.25)


@pytest.fixture(scope="module")
def datacenter():
    """The issue's datacenter pair: H100s prefill Llama-2-70B, A100s decode it."""
    return napkin.predict_split(("H100 SXM", 4), ("A100 SXM", 4), "Llama-2-70B",
                                input_tokens=1500, output_tokens=200, link_gb_per_s=50,
                                batch=8)


@pytest.mark.parametrize("which", ["desk", "datacenter"])
def test_every_field_of_the_contract_is_there(which, request):
    s = request.getfixturevalue(which)
    assert isinstance(s, napkin.SplitPrediction)
    assert set(FIELDS) <= {f.name for f in fields(s)}
    for name in FIELDS[:-1]:
        assert math.isfinite(getattr(s, name)) and getattr(s, name) > 0, name
    assert s.binding in ("prefill", "link", "decode")
    assert s.e2e_latency_s == pytest.approx(s.ttft_s + s.decode_s)
    assert s.tpot_s == pytest.approx(s.decode_s / (s.output_tokens - 1))
    assert s.ttft_s >= s.prefill_s


def test_each_side_is_priced_by_the_model_for_its_kind_of_machine(desk, datacenter):
    assert "chapter 8" in desk.prefill.basis and "chapter 8" in desk.decode.basis
    assert "chapter 9" in datacenter.prefill.basis and "chapter 9" in datacenter.decode.basis
    assert pair.is_desk("M3 Ultra") and pair.is_desk("RTX 4090") and pair.is_desk("DGX Spark")
    assert not pair.is_desk("H100 SXM") and not pair.is_desk("MI300X")


def test_the_cache_that_moves_is_exactly_the_prompts_cache(desk, datacenter):
    assert desk.transfer_bytes == kvcache.kv_cache_bytes(config("Llama-3.1-8B"), 8192, 1, "f16")
    assert datacenter.transfer_bytes == kvcache.kv_cache_bytes(config("Llama-2-70B"), 1500, 8,
                                                               "f16")
    assert desk.transfer_s == pytest.approx(desk.transfer_bytes / 1.25e9)


@pytest.mark.parametrize("chip, model", [("H100 SXM", "Llama-3.1-8B"),
                                         (("H100 SXM", 4), "Llama-3.3-70B"),
                                         ("MI300X", "Llama-3.3-70B")])
def test_one_machine_for_both_is_napkin_predict(chip, model):
    one = napkin.predict_split(chip, chip, model, input_tokens=2000, output_tokens=200,
                               link_gb_per_s=None, batch=4)
    name, n = (chip, 1) if isinstance(chip, str) else chip
    alone = napkin.predict(name, model, n_chips=n, input_tokens=2000, output_tokens=200,
                           batch=4)
    assert one.transfer_bytes == one.transfer_s == 0 and one.one_machine
    assert one.e2e_latency_s == pytest.approx(alone.e2e_latency_s, rel=1e-12)
    # one machine runs the phases in turn: its rate is the static batch's, not a pipeline's
    assert one.binding == "prefill+decode"
    assert one.output_tokens_per_s == pytest.approx(alone.static_output_tokens_per_s, rel=1e-12)


def test_one_desk_machine_is_chapter_8s_estimate_but_for_the_first_token():
    from napkin import buying

    one = napkin.predict_split("DGX Spark", "DGX Spark", "Llama-3.1-8B", input_tokens=8192,
                               output_tokens=500, link_gb_per_s=None, batch=2)
    est = buying.estimate(buying.machine("DGX Spark"), buying.Workload(
        name="x", prompt_tokens=8192, output_tokens=500, users=2, model="Llama-3.1-8B",
        weight_format="F16"))
    assert one.prefill_s == pytest.approx(2 * est["ttft_mid_s"])
    assert one.decode_s == pytest.approx(499 / est["per_user_mid_tok_per_s"])
    assert one.e2e_latency_s == pytest.approx(est["round_s"] - 1 / est["per_user_mid_tok_per_s"])


def test_the_same_kind_of_chip_on_both_sides_with_a_link_moves_the_cache():
    apart = napkin.predict_split("H100 SXM", "H100 SXM", "Llama-3.1-8B", input_tokens=4096,
                                 output_tokens=100, link_gb_per_s=50)
    assert apart.transfer_bytes > 0 and not apart.one_machine and apart.binding == "decode"


def test_a_one_token_answer_needs_no_decode_side():
    s = napkin.predict_split("H100 SXM", "M1", "Llama-3.1-8B", input_tokens=8192,
                             output_tokens=1, link_gb_per_s=1.25)
    assert s.transfer_bytes == s.decode_s == 0 and s.ttft_s == s.e2e_latency_s == s.prefill_s
    assert s.binding == "prefill" and "none" in s.decode.basis


def test_a_config_mapping_serves_on_datacenter_sides_only():
    cfg = dict(config("Llama-3.1-8B"))
    s = napkin.predict_split("H100 SXM", "A100 SXM", cfg, input_tokens=2000, output_tokens=50,
                             link_gb_per_s=50)
    named = napkin.predict_split("H100 SXM", "A100 SXM", "Llama-3.1-8B", input_tokens=2000,
                                 output_tokens=50, link_gb_per_s=50)
    assert s.transfer_bytes == named.transfer_bytes
    with pytest.raises(ValueError, match="the decode side \\(M3 Ultra\\).*by name"):
        napkin.predict_split("H100 SXM", "M3 Ultra", cfg, input_tokens=2000, output_tokens=50,
                             link_gb_per_s=1)


def test_streaming_layer_by_layer_hides_what_the_prefill_covers():
    p, layers = 2.0, 80
    assert pair.arrival_s(p, 0.5, layers, overlap=False) == 2.5
    assert pair.arrival_s(p, 0.5, layers, overlap=True) == pytest.approx(p + 0.5 / layers)
    assert pair.arrival_s(p, 10.0, layers, overlap=True) == pytest.approx(p / layers + 10.0)
    kw = dict(input_tokens=8192, output_tokens=100, batch=1)
    streamed = napkin.predict_split("H100 SXM", "A100 SXM", "Llama-3.1-8B", link_gb_per_s=1.25,
                                    **kw)
    after = napkin.predict_split("H100 SXM", "A100 SXM", "Llama-3.1-8B", link_gb_per_s=1.25,
                                 overlap=False, **kw)
    assert streamed.ttft_s < after.ttft_s == pytest.approx(after.prefill_s + after.transfer_s)


def test_a_thinner_link_or_a_longer_prompt_moves_the_cache_later():
    kw = dict(output_tokens=100)
    fast, slow = (napkin.predict_split("H100 SXM", "A100 SXM", "Llama-3.1-8B", input_tokens=4096,
                                       link_gb_per_s=bw, **kw) for bw in (50, 1.25))
    assert slow.transfer_s == pytest.approx(40 * fast.transfer_s)
    assert slow.ttft_s > fast.ttft_s and slow.decode_s == fast.decode_s
    longer = napkin.predict_split("H100 SXM", "A100 SXM", "Llama-3.1-8B", input_tokens=8192,
                                  link_gb_per_s=50, **kw)
    assert longer.transfer_bytes == 2 * fast.transfer_bytes
    assert longer.prefill_s > fast.prefill_s


def test_the_binding_stage_sets_the_pipelines_rate():
    thin = napkin.predict_split("H100 SXM", "A100 SXM", "Llama-3.1-8B", input_tokens=30_000,
                                output_tokens=2, link_gb_per_s=0.01)
    assert thin.binding == "link"
    assert thin.output_tokens_per_s == pytest.approx(2 / thin.transfer_s)


@pytest.mark.parametrize("kwargs, match", [
    (dict(link_gb_per_s=0), "link_gb_per_s must be a positive"),
    (dict(link_gb_per_s=-1), "link_gb_per_s must be a positive"),
    (dict(link_gb_per_s=float("nan")), "link_gb_per_s must be a positive"),
    (dict(link_gb_per_s=None), "give link_gb_per_s"),
    (dict(link_gb_per_s=1, batch=0), "batch must be a whole number"),
    (dict(link_gb_per_s=1, input_tokens=1.5), "input_tokens must be a whole number"),
    (dict(link_gb_per_s=1, decode=("A100 SXM", 0)), "decode must be a book chip name"),
    (dict(link_gb_per_s=1, prefill=("H100 SXM", 4), decode="A100 SXM", model="Llama-3.3-70B"),
     "the decode side \\(1 x A100 SXM\\).*use more chips or a smaller format"),
    (dict(link_gb_per_s=1, decode="M1", model="Llama-3.3-70B", weights="fp8"),
     "the decode side \\(M1\\).*does not fit"),
    (dict(link_gb_per_s=1, decode=("M3 Ultra", 2)), "chapter 8 prices one M3 Ultra"),
    (dict(link_gb_per_s=1, decode="M3 Ultra", kv="fp8"), "the decode side \\(M3 Ultra\\).*kv='f16'"),
    (dict(link_gb_per_s="fast"), "link_gb_per_s must be a number"),
    (dict(link_gb_per_s=True), "link_gb_per_s must be a number"),
    (dict(link_gb_per_s=1, overlap="no"), "overlap must be True"),
    (dict(link_gb_per_s=1, prefill="A100 SXM", model="Llama-3.3-70B"),
     "the prefill side \\(1 x A100 SXM\\).*use more chips or a smaller format"),
    (dict(link_gb_per_s=1, prefill=("H100 SXM", 2), decode=("A100 SXM", 1), batch=16,
          input_tokens=50_000),
     "the decode side \\(1 x A100 SXM\\) holds .* GiB of cache .* need"),
])
def test_bad_input_names_the_side_or_the_field_and_what_to_do(kwargs, match):
    args = dict(prefill="H100 SXM", decode="A100 SXM", model="Llama-3.1-8B", input_tokens=2000,
                output_tokens=100)
    args.update(kwargs)
    with pytest.raises(ValueError, match=match):
        napkin.predict_split(args.pop("prefill"), args.pop("decode"), args.pop("model"), **args)
