"""Decisions read against the bands: an order holds only where the bands are apart."""

import pandas as pd
import pytest

from napkin import decide


def _ways():
    return pd.DataFrame({"way": ["a", "b", "c", "d"], "usd": [1.0, 2.0, 1.2, None],
                         "lo": [0.6, 1.7, 0.9, None], "hi": [1.5, 2.5, 1.6, None]})


def test_a_price_ranking_holds_only_where_the_bands_are_apart():
    got = decide.against_best(_ways(), "usd", "lo", "hi").set_index("way")
    assert list(got.index) == ["a", "c", "b"]                   # no value: left out
    assert got.loc["a", "verdict"] == "best" and got.loc["a", "margin"] == 1
    # c's cheap end (0.9) is below a's dear end (1.5): the model cannot tell them apart
    assert got.loc["c", "verdict"] == "tie" and not got.loc["c", "holds"]
    assert got.loc["c", "margin"] == pytest.approx(1.2)
    # b's cheap end (1.7) is above a's dear end: a is cheaper at both ends
    assert got.loc["b", "verdict"] == "behind" and got.loc["b", "holds"]


def test_a_rate_ranking_reads_the_other_ends():
    rates = pd.DataFrame({"m": ["x", "y", "z"], "tps": [100.0, 60.0, 90.0],
                          "lo": [80.0, 50.0, 70.0], "hi": [120.0, 70.0, 95.0]})
    got = decide.against_best(rates, "tps", "lo", "hi", better="higher").set_index("m")
    assert list(got.index) == ["x", "z", "y"]
    assert got.loc["z", "verdict"] == "tie"                     # 95 above x's slow end, 80
    assert got.loc["y", "verdict"] == "behind"                  # 70 below 80
    assert got.loc["y", "margin"] == pytest.approx(100 / 60)


def test_bad_input_says_what_is_wrong():
    with pytest.raises(ValueError, match="no column 'price'"):
        decide.against_best(_ways(), "price", "lo", "hi")
    with pytest.raises(ValueError, match="better must be"):
        decide.against_best(_ways(), "usd", "lo", "hi", better="cheaper")
    flipped = _ways().assign(lo=[1.5, 1.7, 0.9, None], hi=[0.6, 2.5, 1.6, None])
    with pytest.raises(ValueError, match="a band must hold its value"):
        decide.against_best(flipped, "usd", "lo", "hi")


def test_an_estimate_against_a_reference_is_a_tie_where_its_band_straddles_it():
    # a speedup of 1.5 within x1.3 pays at every end; 1.2 within x1.3 cannot be told from 1
    assert decide.versus(1.5 / 1.3, 1.5 * 1.3) == "better"
    assert decide.versus(1.2 / 1.3, 1.2 * 1.3) == "tie"
    assert decide.versus(0.5, 0.9) == "worse"
    assert list(decide.versus([0.5, 1.2], [0.9, 1.4], better="lower")) == ["better", "worse"]
    with pytest.raises(ValueError, match="low end"):
        decide.versus(2.0, 1.0)
