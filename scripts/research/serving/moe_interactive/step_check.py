"""The step model's decode step against InferenceX's batched DeepSeek-R1 runs at chat speed.

The runs (``rows.csv``, sources 1 of ``NOTES.md``) are disaggregated: a prefill pool and a
decode pool of engines with data-parallel attention and the experts spread over ``EP`` GPUs,
MTP on with its drafts unstated, prompts and answers of 1,024 tokens. Each run states its
concurrency and the median tokens a second each user saw. This reads the decode pool as the
book's step model would (:func:`napkin.predict.serve.decode_step_seconds` at the published
parameters, each engine holding its share of the concurrency, at the mean depth of 1,024 +
512 tokens) for 0, 1 and 3 drafts, and prints the measured time per output token over the
model's. Nothing here is fitted, and these rows are not in ``data/``: the model never saw them.

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
DRAFTS = (0, 1, 3)
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


def predicted_tpot_ms(run: pd.Series, drafts: int) -> float:
    """The model's mean time per output token of the run's decode pool with ``drafts``."""
    c = engine(run["chip"], "DeepSeek-V3", n_chips=int(run["ep"]), weights="NVFP4", kv="fp8",
               attention_dp=True).constants
    kept = float(accepted_tokens(drafts))
    c = replace(c, verify_tokens=c.verify_tokens * 0 + 1.0 + drafts,
                accepted_tokens=c.accepted_tokens * 0 + kept)
    batch = run["concurrency"] / (run["decode_gpus"] / run["ep"])  # per engine
    step = decode_step_seconds(c, batch, PROMPT + ANSWER / 2, calibrated())
    return 1e3 * float(np.ravel(step)[0]) / kept


def main() -> None:
    t = runs()
    for k in DRAFTS:
        t[f"model_ms_{k}_drafts"] = [predicted_tpot_ms(r, k) for _, r in t.iterrows()]
        t[f"measured_over_model_{k}"] = t["tpot_ms"] / t[f"model_ms_{k}_drafts"]
    pd.set_option("display.width", 200)
    print(t.round(2).to_string(index=False))
    for k in DRAFTS:
        ratio = t[f"measured_over_model_{k}"]
        factor = np.exp(np.abs(np.log(ratio)))
        print(f"{k} drafts: measured / model median x{ratio.median():.2f}, "
              f"factor error median x{factor.median():.2f}, largest x{factor.max():.2f}")


if __name__ == "__main__":
    main()
