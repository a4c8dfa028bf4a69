"""Chapter 1, the napkin ceiling: the essay's Apple table, its units, and its rules of thumb
against the published llama.cpp runs."""

from __future__ import annotations

from .. import essay, hardware, models, published, tables
from ..prose import count
from ..units import GB, GiB
from ..errata.finding import Finding

#: The notebook these checks belong to (the errata page groups them by it).
CHAPTER = "01_napkin_ceiling"


def fraction_band() -> Finding:
    low, high = essay.claim("decode_fraction_low"), essay.claim("decode_fraction_high")
    table = published.essay_table()
    lo, hi = table["fraction_of_ceiling"].min(), table["fraction_of_ceiling"].max()
    holds = round(100 * lo) >= low and round(100 * hi) <= high
    apple = published.apple()
    inside = apple["fraction_of_ceiling"].between(low / 100, high / 100)
    q4, big = apple["quant"] == "Q4_0", apple["chip"].str.contains("Max|Ultra")
    big_q4, small_q4 = inside[q4 & big].mean(), inside[q4 & ~big].mean()
    other, other_median = inside[~q4].mean(), apple[~q4]["fraction_of_ceiling"].median()
    return Finding(
        data_says=f"its own table spans {lo:.0%} to {hi:.0%} (M2 Max at {hi:.0%})",
        verdict="agrees" if holds else "inconsistent",
        conclusion_holds=True,
        explanation="The stated range is narrower than the table it summarises. Over every "
                    f"Apple run of the thread (chapter 1) it holds {big_q4:.0%} of the Q4_0 "
                    f"runs on Max and Ultra chips, {small_q4:.0%} of those on smaller chips "
                    f"and {other:.0%} of the F16 and Q8_0 runs, whose median reaches "
                    f"{other_median:.0%}.",
    )


def essay_table_measurements() -> Finding:
    table = published.essay_table().set_index("chip")
    keys = {"M1 Max": "m1_max", "M2 Max": "m2_max", "M1 Ultra": "m1_ultra", "M2 Ultra": "m2_ultra"}
    mismatched = [chip for chip, key in keys.items()
                  if table.loc[chip, "tokens_per_s"] != essay.claim(f"{key}_tg128")]
    uplift = published.ultra_uplift(published.essay_table())
    ratios = [round(uplift.loc[g, "speed_ratio"], 2) for g in ("M1", "M2")]
    stated = [essay.claim("ultra_uplift_m1"), essay.claim("ultra_uplift_m2")]
    chosen = ", ".join(f"{chip} {int(table.loc[chip, 'gpu_cores'])}-core"
                       for chip in keys)
    thread = published.apple("tg128", ("Q4_0",))
    largest = all(table.loc[c, "gpu_cores"] == thread[thread["chip"] == c]["gpu_cores"].max()
                  for c in keys)
    slower = all((thread[(thread["chip"] == c) & (thread["gpu_cores"] < table.loc[c, "gpu_cores"])]
                  ["tokens_per_s"] < table.loc[c, "tokens_per_s"]).all() for c in keys)
    return Finding(
        data_says=", ".join(f"{table.loc[c, 'tokens_per_s']:.2f}" for c in keys)
                  + f" tok/s ({chosen}); {ratios[0]:.2f}x and {ratios[1]:.2f}x",
        verdict="agrees" if not mismatched and ratios == stated else "inconsistent",
        conclusion_holds=True,
        explanation=("The essay's figures are the largest GPU configuration of each chip"
                     if largest else "The essay's figures are not all the largest GPU "
                     "configuration of each chip")
                    + ("; every smaller configuration in the same thread decodes more slowly."
                       if slower else "; some smaller configurations decode faster."),
    )


def model_size_units() -> Finding:
    file_bytes = models.gguf_size_bytes("Q4_0", "file")
    tensor_bytes = models.gguf_size_bytes("Q4_0", "tensors")
    stated = essay.claim("q4_0_file_size")
    return Finding(
        data_says=f"{file_bytes / GB:.2f} GB file (= {file_bytes / GiB:.2f} GiB); llama-bench "
                  f"reports {tensor_bytes / GiB:.2f} GiB (= {tensor_bytes / GB:.3f} GB) of "
                  "tensor data",
        verdict="agrees" if abs(stated * GB - file_bytes) < 0.005 * GB else "unit slip",
        conclusion_holds=True,
        explanation="Both numbers describe the same file: Hugging Face prints decimal GB, "
                    f"llama-bench prints GiB. Reading {tensor_bytes / GiB:.2f} as GB would put "
                    f"the ceiling {GiB / GB - 1:.1%} too high.",
    )


def ceilings() -> Finding:
    table = published.essay_table().drop_duplicates("bandwidth_bytes_per_s")
    computed = table["ceiling_tokens_per_s"].tolist()
    stated = [essay.claim("ceiling_400"), essay.claim("ceiling_800")]
    same = all(round(c) == s for c, s in zip(computed, stated))
    return Finding(
        data_says=" and ".join(f"{c:.1f} tok/s" for c in computed),
        verdict="rounding" if same else "inconsistent",
        conclusion_holds=True,
        explanation="Bandwidth over file size, rounded to whole tokens per second.",
    )


def m3_ultra_bandwidth() -> Finding:
    apple = hardware.chip("M3 Ultra").bandwidth_bytes_per_s / GB
    table = published.apple("tg128", ("Q4_0",))
    thread = table[table["chip"] == "M3 Ultra"]
    listed = tables.load("apple_silicon_llama2_7b")
    listed = listed[listed["chip"] == "M3 Ultra"]["memory_bandwidth_GB_per_s"].iloc[0]
    return Finding(
        data_says=f"the thread's table lists {listed:.0f} GB/s; Apple states {apple:.0f} GB/s",
        verdict="sources disagree" if listed != apple else "agrees",
        conclusion_holds=True,
        explanation=f"The book uses Apple's figure for the ceiling of all {len(thread)} M3 "
                    f"Ultra runs; the difference moves their fraction of ceiling by "
                    f"{apple / listed - 1:.1%}.",
    )


def quantization_cut() -> Finding:
    f16, q4 = (published.llama2_7b_bytes_per_token(q) for q in ("F16", "Q4_0"))
    apple = published.apple()
    wide = apple.pivot_table(index="machine", columns="quant", values="tokens_per_s").dropna()
    gain = (wide["Q4_0"] / wide["F16"]).median()
    stated = essay.claim("quantization_cut")
    fit = published.fixed_cost_fit(apple)
    return Finding(
        data_says=f"Q4_0 stores {f16 / q4:.2f}x fewer bytes than F16 (its block scales cost "
                  f"half a bit per weight); measured tg rose a median {gain:.2f}x on Apple chips",
        verdict="rounding" if round(f16 / q4) == stated else "inconsistent",
        conclusion_holds=bool(gain > 1),
        explanation="The ceiling moves with the bytes, as the essay says; the measured speed "
                    "moves less, because part of each token's time does not shrink with the "
                    f"bytes. On the {len(fit)} Apple GPU configurations run at F16, Q8_0 and Q4_0, a fixed "
                    f"cost of {fit['fixed_s'].min() * 1e3:.0f} to "
                    f"{fit['fixed_s'].max() * 1e3:.0f} ms per token fitted to F16 and Q8_0 "
                    f"predicts the Q4_0 time to a median {fit['residual_s'].median() * 1e3:.1f} "
                    "ms (chapter 1).",
    )


def buying_rule() -> Finding:
    runs = published.all_machines()
    discount = essay.claim("buying_discount") / 100
    above = (runs["fraction_of_ceiling"] >= discount).mean()
    below = runs[runs["fraction_of_ceiling"] < discount]
    ultras = below["machine"].str.contains("Ultra").sum()
    cpus = (below["family"] == "CPU").sum()
    h100 = published.variant_readings().set_index("reading")["fraction_of_ceiling"]
    readings = ", ".join(f"{f:.0%} read as {r}" for r, f in h100.items())
    others = len(below) - ultras - cpus
    straddles = (h100 < discount).any() and (h100 >= discount).any()
    return Finding(
        data_says=f"{above:.0%} of {len(runs)} published runs reach at least {discount:.0%}; "
                  f"the median reaches {runs['fraction_of_ceiling'].median():.0%}. Below it: "
                  f"{count(ultras, 'Ultra run')} at Q4_0, {count(cpus, 'CPU run')} and "
                  f"{count(others, 'GPU run')}. "
                  f"The scoreboard's H100, whose variant its copies disagree on, reaches "
                  f"{readings}",
        verdict="agrees" if above >= 0.5 else "inconsistent",
        conclusion_holds=bool(above >= 0.5),
        explanation=("As a conservative planning figure it holds: most runs beat it. As the "
                     "'realistic ceiling' the essay calls it, it does not: "
                     f"{above:.0%} of runs exceed it. {ultras} of the runs below it are the "
                     "Ultras' Q4_0 runs, the chips the essay warns about.")
                    + (" Whether the H100 does depends on which card it was: one reading puts "
                       "it below the rule, the other above." if straddles else ""),
    )
