"""The step model's decode step against InferenceX's batched DeepSeek-R1 runs at chat speed.

The runs (``rows.csv``, source 1 of ``NOTES.md``) are disaggregated: a prefill pool and a
decode pool of engines over ``EP`` GPUs, prompts and answers of 1,024 tokens. Each states its
concurrency and the median tokens a second each user saw. The post does not state the decode
engines' drafts, attention layout or batch cap; the recipes the run used do (``DRAFTS.md``:
NVIDIA/srt-slurm's ``sa-submission-q2-2026`` recipes named by InferenceX's config, exact for
the B200, the same-named files for the GB200), and :data:`RECIPES` holds them. This reads the
decode pool as the book's step model would (:func:`napkin.predict.serve.decode_step_seconds`
at the published parameters, each engine holding its share of the concurrency up to its
cap, at the mean depth of 1,024 + 512 tokens) with the recipe's drafts, and for comparison
with none, and prints the measured time per output token over the model's. Nothing here is
fitted, and these rows are not in ``data/``: the model never saw them.

    .venv/bin/python scripts/research/serving/moe_interactive/step_check.py
"""

from __future__ import annotations

import re
from dataclasses import replace
from pathlib import Path

import numpy as np
import pandas as pd

from napkin.predict import calibrated, engine
from napkin.predict.multitoken import accepted_tokens
from napkin.predict.serve import decode_step_seconds

ROWS = Path(__file__).with_name("rows.csv")
SRT = ("https://github.com/NVIDIA/srt-slurm/blob/75f6e32a3cfce99ab525481e04443f5e7da501a2/"
       "recipes/trtllm/{}-fp4/1k1k/mtp/{}.yaml")
#: Per run: the recipe's MTP drafts, whether its decode engines run attention data-parallel,
#: the decode batch cap (per rank with data-parallel attention, else per engine), the recipe.
RECIPES = {
    "moe-int-001": (3, False, 8, SRT.format("gb200", "ctx1_gen4_tep8_batch8_eplb0_mtp3")),
    "moe-int-003": (3, True, 4, SRT.format("gb200", "ctx1_gen1_dep32_batch4_eplb0_mtp3")),
    "moe-int-005": (1, True, 64, SRT.format("gb200", "ctx3_gen1_dep32_batch64_eplb288_mtp1")),
    "moe-int-007": (3, False, 32, SRT.format("b200", "ctx1_gen5_tep8_batch32_eplb0_mtp3")),
    "moe-int-009": (3, True, 16, SRT.format("b200", "ctx1_gen5_dep8_batch16_eplb0_mtp3")),
    "moe-int-011": (2, True, 64, SRT.format("b200", "ctx1_gen2_dep8_batch64_eplb0_mtp2")),
    "moe-int-013": (1, True, 128, SRT.format("b200", "ctx3_gen4_dep8_batch128_eplb0_mtp1")),
}
#: Each run's prompt and answer, in tokens: the mean depth of a sequence being decoded is the
#: prompt and half the answer.
PROMPT, ANSWER = 1024, 1024
CHIPS = {"GB200": "GB200 (per GPU)", "B200": "B200"}


def runs() -> pd.DataFrame:
    """InferenceX's DeepSeek-R1 runs: chip, decode GPUs, engine size, concurrency, and the
    measured median time per output token (the inverse of the tokens a second per user)."""
    r = pd.read_csv(ROWS)
    r = r[r["model"].str.contains("DeepSeek") & (r["unit"] == "tokens/s/user")]
    out = []
    for _, u in r.iterrows():
        decode = re.search(r"decode (\d+) GPU, EP=(\d+)", u["tp"])
        out.append({"row_id": u["row_id"], "chip": CHIPS[u["gpu"]],
                    "decode_gpus": int(decode[1]), "ep": int(decode[2]),
                    "concurrency": int(re.search(r"concurrency=(\d+)",
                                                 u["concurrency_or_batch"])[1]),
                    "tpot_ms": 1e3 / float(u["value"])})
    return pd.DataFrame(out)


def predicted_tpot_ms(run: pd.Series, with_drafts: bool = True) -> float:
    """The model's mean time per output token of the run's decode pool, as its recipe ran it
    (or with no drafts)."""
    drafts, dp, cap, _ = RECIPES[run["row_id"]]
    drafts = drafts if with_drafts else 0
    ep = int(run["ep"])
    c = engine(run["chip"], "DeepSeek-V3", n_chips=ep, weights="NVFP4", kv="fp8",
               attention_dp=dp).constants
    kept = float(accepted_tokens(drafts))
    c = replace(c, verify_tokens=c.verify_tokens * 0 + 1.0 + drafts,
                accepted_tokens=c.accepted_tokens * 0 + kept)
    engines = run["decode_gpus"] / ep
    batch = min(run["concurrency"] / engines, cap * (ep if dp else 1))
    step = decode_step_seconds(c, batch, PROMPT + ANSWER / 2, calibrated())
    return 1e3 * float(np.ravel(step)[0]) / kept


def main() -> None:
    t = runs()
    t["drafts"] = [RECIPES[i][0] for i in t["row_id"]]
    t["attention_dp"] = [RECIPES[i][1] for i in t["row_id"]]
    for label, drafts in (("recipe", True), ("none", False)):
        t[f"model_ms_{label}"] = [predicted_tpot_ms(r, drafts) for _, r in t.iterrows()]
        t[f"measured_over_model_{label}"] = t["tpot_ms"] / t[f"model_ms_{label}"]
    pd.set_option("display.width", 200)
    print(t.round(2).to_string(index=False))
    for label in ("recipe", "none"):
        ratio = t[f"measured_over_model_{label}"]
        factor = np.exp(np.abs(np.log(ratio)))
        print(f"drafts {label}: measured / model median x{ratio.median():.2f}, "
              f"factor error median x{factor.median():.2f}, largest x{factor.max():.2f}")


if __name__ == "__main__":
    main()
