"""The sourced tables in data/: every row sourced, units named, nothing duplicated."""

from __future__ import annotations

import re
from pathlib import Path

import pandas as pd
import pytest

from napkin import rowids, tables

DATA = Path(__file__).resolve().parents[1] / "data"
TABLES = sorted(DATA.glob("*.csv"))
README = (DATA / "README.md").read_text()

#: Numeric columns must name their unit; these are the units the book uses.
UNIT_SUFFIXES = ("_GB_per_s", "_GB", "_GiB", "_MiB", "_bytes", "_tok_per_s", "_TFLOPS", "_B",
                 "_tokens", "_s", "_ms", "_W", "_J_per_token", "_percent")
#: Numeric columns that are counts or self-describing (documented in data/README.md).
UNITLESS = {"gpu_cores", "threads", "bits_per_weight", "bits_nominal", "flash_attention",
            "value", "stated_size", "context_depth_tokens",
            # architecture counts (serving_models.csv)
            "layers", "hidden_size", "attention_heads", "kv_heads", "head_dim",
            # how many NICs and GPUs a system has (serving_links.csv)
            "nics_in_system", "gpus_in_system",
            # how many chips a scale-up link joins (scaleup_topology.csv)
            "gpus_in_domain",
            # the unit is in the same row's `unit` column (serving_papers_claims.csv)
            "value_low", "value_high",
            # the currency is in the same row's `currency` column (machine_prices.csv)
            "price",
            # chapter 9: counts and a fraction, and the measurement tables' own column names,
            # kept so that published rows in their schema can be dropped in unchanged
            "n_accelerators", "per_accelerator_value", "accuracy_field_tokens_per_sample",
            "n_gpus", "max_batch", "share_of_chip",
            # chapter 9: how much longer the answers in flight are than the mean (a ratio)
            "output_inflight_ratio",
            # chapter 10: a batch (sequences) and a ratio of two speeds; a drafted token's
            # position and the probability it is accepted there
            "batch", "speedup", "draft_position", "acceptance_low", "acceptance_high",
            # chapter 11: ML.ENERGY's parallelism and mean batch (mlenergy_llm.csv)
            "tensor_parallel", "expert_parallel", "mean_batch",
            # chapter 9's peer baseline (peer_llm_analysis.csv): a prediction whose unit is in
            # the same row's `unit` column
            "predicted",
            # chapter 11: a data center's power usage effectiveness (datacenter_pue.csv)
            "pue", "year",
            # chapter 9's derived fits: rows fitted on, and a stack's two multipliers
            "rows", "efficiency", "overhead",
            # multi-token prediction: drafts per step, and the tokens a step keeps
            # (mtp_acceptance_length.csv)
            "mtp_depth", "tokens_per_step",
            # batched runs of a mixture of experts at a chat pace (moe_chat_runs.csv): GPUs of
            # each pool and engine, and requests in flight
            "prefill_gpus", "decode_gpus", "engine_gpus", "concurrency"}
SOURCE = re.compile(r"(?:https?://\S+|^essay#[a-z0-9-]+$)")


def test_there_are_tables():
    assert len(TABLES) >= 5


@pytest.mark.parametrize("path", TABLES, ids=lambda p: p.name)
def test_every_row_has_a_checkable_source(path):
    df = pd.read_csv(path)
    assert "source_url" in df.columns, f"{path.name} has no source_url column"
    bad = df[~df["source_url"].astype(str).str.contains(SOURCE)]
    assert bad.empty, f"{path.name}: rows without a URL: {bad.index[:5].tolist()}"


@pytest.mark.parametrize("path", TABLES, ids=lambda p: p.name)
def test_no_duplicate_rows(path):
    df = pd.read_csv(path)
    dupes = df[df.duplicated(keep=False)]
    assert dupes.empty, f"{path.name}: duplicate rows {dupes.index.tolist()}"


@pytest.mark.parametrize("path", TABLES, ids=lambda p: p.name)
def test_numeric_columns_name_their_unit(path):
    df = pd.read_csv(path)
    for col in df.select_dtypes("number").columns:
        assert col in UNITLESS or col.endswith(UNIT_SUFFIXES), \
            f"{path.name}: numeric column {col!r} does not name its unit"
        assert not ("GB" in col and "GiB" in col), f"{path.name}: {col!r} mixes GB and GiB"


@pytest.mark.parametrize("path", TABLES, ids=lambda p: p.name)
def test_data_dictionary_documents_every_column(path):
    section = README.split(f"## `{path.name}`")
    assert len(section) == 2, f"data/README.md has no section for {path.name}"
    body = section[1].split("\n## ")[0]
    for col in pd.read_csv(path, nrows=0).columns:
        assert f"| `{col}` |" in body, f"data/README.md does not document {path.name}:{col}"


@pytest.mark.parametrize("table", sorted(rowids.PREFIXES))
def test_published_rows_keep_ids_that_are_present_unique_and_never_reused(table):
    assert rowids.problems(table) == []


def test_every_row_a_derived_table_names_is_a_published_row():
    """Derived tables join a published row by its id: every id they name is in its table."""
    for path in (DATA / "step_model_crossval.csv", DATA / "peer_llm_analysis.csv"):
        df = pd.read_csv(path)
        assert set(df["table"]) <= set(rowids.PREFIXES), path.name
        for table, part in df.groupby("table"):
            unknown = set(part[tables.ROW_ID]) - set(pd.read_csv(DATA / f"{table}.csv")[
                tables.ROW_ID])
            assert not unknown, f"{path.name} names rows {sorted(unknown)[:5]} not in {table}"


def _ids_copy(tmp_path, monkeypatch, edit, retire=()) -> list[str]:
    """``rowids.problems`` of mlperf_llm after ``edit`` (of its rows) on a copy of data/,
    with ``retire`` retired."""
    for name in ("mlperf_llm", rowids.RETIRED):
        (tmp_path / f"{name}.csv").write_bytes((DATA / f"{name}.csv").read_bytes())
    df = edit(pd.read_csv(tmp_path / "mlperf_llm.csv"))
    df.to_csv(tmp_path / "mlperf_llm.csv", index=False)
    pd.DataFrame({"table": "mlperf_llm", tables.ROW_ID: list(retire), "why": "a test",
                  "source_url": "https://example.org"}).to_csv(
        tmp_path / f"{rowids.RETIRED}.csv", index=False)
    monkeypatch.setenv("NAPKIN_DATA", str(tmp_path))
    return rowids.problems("mlperf_llm")


def test_a_row_removed_without_retiring_its_id_or_an_id_reused_is_refused(tmp_path,
                                                                           monkeypatch):
    def drop(df):
        return df[df[tables.ROW_ID] != "mlperf-0042"]

    assert "mlperf-0042" in " ".join(_ids_copy(tmp_path, monkeypatch, drop))
    assert _ids_copy(tmp_path, monkeypatch, drop, retire=["mlperf-0042"]) == []
    assert "retired ids in use again: mlperf-0041" in " ".join(
        _ids_copy(tmp_path, monkeypatch, drop, retire=["mlperf-0041", "mlperf-0042"]))
    twice = _ids_copy(tmp_path, monkeypatch, lambda df: df.replace({"mlperf-0007": "mlperf-0006"}))
    assert any("more than one row: mlperf-0006" in p for p in twice)
    blank = _ids_copy(tmp_path, monkeypatch, lambda df: df.replace({"mlperf-0007": ""}))
    assert any("without a row_id" in p for p in blank)


def test_a_rebuilt_table_keeps_its_ids_and_new_rows_take_the_next_number():
    existing = [{tables.ROW_ID: "mlperf-0001", "a": "1"}, {tables.ROW_ID: "mlperf-0002", "a": "2"}]
    rebuilt = rowids.issue("mlperf_llm", [{"a": "9"}, {"a": "2"}, {"a": "1"}], existing)
    assert [r[tables.ROW_ID] for r in rebuilt] == ["mlperf-0003", "mlperf-0002", "mlperf-0001"]


def test_hardware_specs_name_their_unit():
    df = pd.read_csv(DATA / "hardware_specs.csv")
    for spec in df["spec"].unique():
        assert spec.endswith(("_GB_per_s", "_GiB", "_MiB", "_TFLOPS", "_TOPS")), \
            f"spec {spec!r} has no unit"
    flops = df[df["spec"].str.endswith(("_TFLOPS", "_TOPS"))]["spec"]
    assert flops.str.contains("dense|sparse|vector").all(), "a FLOP/s spec hides dense vs sparse"
    assert flops.str.match(r"(fp16|bf16|fp8|fp6|fp4|int8|int4|fp32)_").all(), \
        "a FLOP/s spec does not name its arithmetic"
    assert not df["spec"].str.contains(r"capacity_GB$").any(), \
        "a memory capacity in decimal GB: DRAM and HBM capacities are binary (GiB)"
    assert not df.duplicated(["chip", "spec"]).any(), "a chip has two values for one spec"


def test_derived_figures_say_so_and_explain_how():
    df = pd.read_csv(DATA / "hardware_specs.csv")
    derived = df[df["figure_origin"].str.startswith("computed")]
    assert not derived.empty
    assert derived["note"].fillna("").str.strip().ne("").all(), "a derived figure without its " \
        "derivation in the note"


def test_sizes_in_bytes_agree_with_what_was_printed():
    df = pd.read_csv(DATA / "llama2_7b_gguf_sizes.csv")
    scale = {"GB": 1e9, "GiB": 2**30, "B": 1}
    for _, r in df.iterrows():
        expected = float(r["stated_size"]) * scale[r["stated_unit"]]
        assert abs(r["size_bytes"] - expected) <= 1, r.to_dict()


def test_essay_claims_are_unique_and_sourced_to_a_section():
    df = pd.read_csv(DATA / "essay_claims.csv")
    assert df["claim"].is_unique
    assert df["source_url"].str.startswith("essay#").all()


@pytest.mark.parametrize("path", TABLES, ids=lambda p: p.name)
def test_a_number_whose_unit_is_in_a_unit_column_has_one(path):
    df = pd.read_csv(path)
    if "unit" not in df.columns:
        return
    numbers = df.select_dtypes("number").notna().any(axis=1)
    missing = df[numbers & df["unit"].isna()]
    assert missing.empty, f"{path.name}: numbers without a unit in rows {missing.index.tolist()}"


def _claims():
    df = pd.read_csv(DATA / "serving_papers_claims.csv")
    assert df["claim"].is_unique
    return df.set_index("claim")["value_low"]


def test_vllm_figure_labels_agree_with_the_papers_text():
    c = _claims()
    # Fig. 13a against the text's "2.2x more requests than Orca (Oracle) and 4.3x than Max"
    fig13 = c["fig13_sharegpt_vllm"]
    assert round(fig13 / c["fig13_sharegpt_orca_oracle"], 1) == c["batch_vs_orca_fig13a"]
    text_max = pd.read_csv(DATA / "serving_papers_claims.csv").set_index("claim")
    assert round(fig13 / c["fig13_sharegpt_orca_max"], 1) == \
        text_max.loc["batch_vs_orca_fig13a", "value_high"]
    # Fig. 11's means against "8.4x longer input prompts and 5.8x longer outputs"
    ratio_in = c["fig11_sharegpt_input_mean"] / c["fig11_alpaca_input_mean"]
    ratio_out = c["fig11_sharegpt_output_mean"] / c["fig11_alpaca_output_mean"]
    assert round(ratio_in, 1) == c["dataset_length_ratio"]
    assert round(ratio_out, 1) == text_max.loc["dataset_length_ratio", "value_high"]
    # Fig. 2: every fully labelled bar sums to 100 % (to the labels' rounding)
    for system in ("orca_max", "orca_pow2", "orca_oracle"):
        parts = c[[k for k in c.index if k.startswith(f"fig2_{system}_")]]
        assert abs(parts.sum() - 100) <= 0.15, (system, parts.sum())
    # the 20.4 %-38.2 % of the text are the lowest and highest token-state labels of Fig. 2
    orca = [c[f"fig2_{s}_token_states"] for s in ("orca_max", "orca_pow2", "orca_oracle")]
    assert (min(orca), max(orca)) == (c["existing_token_states"],
                                      text_max.loc["existing_token_states", "value_high"])


def test_table1_kv_slots_are_binary_gigabytes_over_800_kib():
    c = _claims()
    opt = pd.read_csv(DATA / "serving_models.csv").set_index("model").loc["OPT-13B"]
    # the paper's own product for OPT-13B (section 3): K and V x hidden x layers x FP16 bytes
    per_token = 2 * opt["hidden_size"] * opt["layers"] * 2
    assert per_token == c["opt13b_kv_per_token"] * 1024
    slots = c["table1_13b_kv_memory"] * 2**30 / per_token
    assert round(slots / 1000, 1) * 1000 == c["table1_13b_kv_slots"]
    assert round(c["table1_13b_kv_memory"] * 1e9 / per_token / 1000, 1) * 1000 != \
        c["table1_13b_kv_slots"], "with decimal GB the printed slot count would not follow"
