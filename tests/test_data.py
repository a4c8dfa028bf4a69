"""The sourced tables in data/: every row sourced, units named, nothing duplicated."""

from __future__ import annotations

import re
from pathlib import Path

import pandas as pd
import pytest

DATA = Path(__file__).resolve().parents[1] / "data"
TABLES = sorted(DATA.glob("*.csv"))
README = (DATA / "README.md").read_text()

#: Numeric columns must name their unit; these are the units the book uses.
UNIT_SUFFIXES = ("_GB_per_s", "_GB", "_GiB", "_bytes", "_tok_per_s", "_TFLOPS", "_B",
                 "_tokens", "_s", "_ms")
#: Numeric columns that are counts or self-describing (documented in data/README.md).
UNITLESS = {"gpu_cores", "threads", "bits_per_weight", "bits_nominal", "flash_attention",
            "value", "stated_size", "context_depth_tokens"}
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


def test_hardware_specs_name_their_unit():
    df = pd.read_csv(DATA / "hardware_specs.csv")
    for spec in df["spec"].unique():
        assert spec.endswith(("_GB_per_s", "_GB", "_TFLOPS")), f"spec {spec!r} has no unit"
    flops = df[df["spec"].str.endswith("_TFLOPS")]["spec"]
    assert flops.str.contains("dense|sparse|vector").all(), "a FLOP/s spec hides dense vs sparse"
    assert not df.duplicated(["chip", "spec"]).any(), "a chip has two values for one spec"


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
