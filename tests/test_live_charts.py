"""Live charts draw whatever a busy machine measures: inverted, missing, noisy or empty.

Each chart that shows a measurement made where the book is built gets frames a quiet machine
would never produce, and must still draw every mark on its plot (``napkin.charts.misdrawn``
renders the spec offline with the site's Vega-Lite). The words beside a live chart are tested
where they are made (test_speculative, test_measure).
"""

from __future__ import annotations

import math

import numpy as np
import pandas as pd
import pytest

from napkin import charts, essay, published
from napkin.ceiling import figures as ceiling
from napkin.gqa import figures as gqa
from napkin.phases import figures as spark
from napkin.roofline import figures as roofline
from napkin.speculative import figures as speculative
from napkin.phases import all_ratios

NAN = math.nan


def _drawn(chart) -> None:
    spec = chart.to_dict()
    problems = charts.misdrawn(spec)
    assert not problems, problems


def test_misdrawn_finds_a_whisker_below_zero_on_a_log_axis():
    """The check itself: chapter 10's first live chart drew NaN whiskers like this one."""
    import altair as alt

    df = pd.DataFrame({"x": [1, 2, 4], "low": [0.5, -1.0, 2.0], "high": [1.5, 3.0, 4.0]})
    chart = alt.Chart(df).mark_rule().encode(
        x=alt.X("x:Q", scale=alt.Scale(type="log")),
        y=alt.Y("low:Q", scale=alt.Scale(type="log")), y2="high:Q")
    assert charts.misdrawn(charts.responsive(chart, 200, alt.Title("t")).to_dict())


def test_misdrawn_finds_marks_off_the_plot():
    import altair as alt

    df = pd.DataFrame({"x": [1, 2, 30], "y": [0.5, 0.6, 0.7]})
    chart = alt.Chart(df).mark_point().encode(
        x=alt.X("x:Q", scale=alt.Scale(domain=[0, 10])), y="y:Q")
    assert "outside" in " ".join(charts.misdrawn(
        charts.responsive(chart, 200, alt.Title("t")).to_dict()))


VERIFY = {"inverted": [1.0, 0.5, 0.8, 3.0], "zero and missing": [1.0, 0.0, NAN, 2.5],
          "noisy": [1.0, 1.4, 2.0, 3.0], "quiet": [1.0, 1.2, 1.5, 2.5]}
#: The roofline of each case; "flat roofline" is a machine whose measured roof keeps every
#: verify step memory-bound (one plain step at every size), as a CI machine measured once.
ROOFLINE = {"flat roofline": [1.0, 1.0, 1.0, 1.0]}
STDDEV = {"flat roofline": [0.0, 0.05, 0.05, 0.05]}
VERIFY["flat roofline"] = [1.0, 1.2, 1.5, 2.5]


@pytest.mark.parametrize("case", VERIFY)
def test_chapter_10_verify_steps(case):
    rel = VERIFY[case]
    df = pd.DataFrame({"depth": [512] * 4, "tokens": [1, 2, 4, 8],
                       "step_s": [0.1 * r if r == r else NAN for r in rel], "stddev_s": 0.01,
                       "relative": rel,
                       "relative_stddev": STDDEV.get(case, [0.0, 3.0, 2.5, 0.1]),
                       "predicted_s": 0.1,
                       "predicted_relative": ROOFLINE.get(case, [1.0, 1.1, 1.2, 1.5]),
                       "predicted_bound": "memory"})
    _drawn(speculative.live(df, "a busy machine"))


def test_chapter_10_verify_steps_empty():
    from napkin.measure import verify

    _drawn(speculative.live(verify.frame(None), "nowhere"))


LIVE_FRACTION = {"above its ceiling": (40.0, 1.6), "missing": (NAN, NAN),
                 "zero ceiling": (0.0, NAN), "quiet": (15.0, 0.45)}


@pytest.mark.parametrize("case", LIVE_FRACTION)
def test_chapter_1_your_machine(case):
    ceiling_tps, fraction = LIVE_FRACTION[case]
    live = pd.DataFrame([{"machine": "this machine (live)", "family": "This machine (live)",
                          "quant": "Q8_0", "tokens_per_s": 7.0,
                          "ceiling_tokens_per_s": ceiling_tps,
                          "fraction_of_ceiling": fraction, "confidence": "measured here"}])
    band = (essay.claim("decode_fraction_low") / 100, essay.claim("decode_fraction_high") / 100)
    _drawn(ceiling.all_machines(pd.concat([published.all_machines(), live]), band))


@pytest.mark.parametrize("ratio", [0.5, NAN, 0.0, np.inf, 17.0])
def test_chapter_2_live_gap(ratio):
    everyone = all_ratios()
    live = everyone.iloc[:1].assign(family="This machine (live)", ratio=ratio,
                                    pp_tok_per_s=ratio * 7.0, tg_tok_per_s=7.0)
    _drawn(spark.ratio_strip(pd.concat([everyone, live], ignore_index=True),
                             essay.claim("spark_gap")))


BATCH = {"inverted": [40.0, 20.0, 10.0, 5.0], "zero and missing": [40.0, 0.0, NAN, 90.0],
         "noisy": [40.0, 45.0, 41.0, 100.0], "quiet": [40.0, 75.0, 140.0, 250.0]}


@pytest.mark.parametrize("case", BATCH)
def test_chapter_3_live_batching(case):
    df = pd.DataFrame({"batch": [1, 2, 4, 8], "tokens_per_s": BATCH[case],
                       "stddev": [1.0, 60.0, 5.0, 2.0],
                       "predicted_tokens_per_s": [50.0, 100.0, 200.0, 380.0],
                       "memory_bound_tokens_per_s": [50.0, 100.0, 200.0, 400.0]})
    _drawn(roofline.live_batching(df, "a busy machine"))
    _drawn(roofline.live_batching(df, "a busy machine", plain=400.0))


DEPTH = {"faster when deeper": [1.0, 1.3, 1.6], "noise below zero": [1.0, 0.2, 0.1],
         "missing": [1.0, NAN, 0.8], "quiet": [1.0, 0.9, 0.7]}


@pytest.mark.parametrize("case", DEPTH)
def test_chapter_5_live_depth(case):
    from napkin import measure

    plan = measure.depth.QUICK
    predicted = measure.depth.prediction(plan)
    model = predicted["attention"].iloc[0]
    measured = pd.DataFrame({"attention": model, "depth_tokens": [0, 512, 1024],
                             "relative": DEPTH[case], "relative_sd": [0.0, 0.5, 0.9],
                             "tokens_per_s": 10.0, "stddev": 5.0})
    _drawn(gqa.live_vs_prediction(predicted, measured, "a busy machine"))
