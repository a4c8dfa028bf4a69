"""What to buy: the essay's closing table as a calculator over the machines in ``data/``.

For a workload (prompt and output length, concurrent users, a model from ``data/models`` at
a weight format) every machine gets these numbers, each traceable to the rows behind it:

- **time to first token** (:mod:`.estimate`): the prompt's FLOPs over the prefill rate the
  machine *reached* in published llama.cpp runs of one reference model (:mod:`.reference`),
  a range over those runs; beside it the roofline bound of the arithmetic the weights run in
  on that machine's llama.cpp backend (:mod:`.roofs`).
- **single-stream tokens/s**: bandwidth over the bytes a decode step reads, discounted by
  the fraction of that ceiling published runs reach (:mod:`.decode`).
- **capacity**: whether the weights and every user's cache fit in the memory the GPU may
  use (:meth:`napkin.hardware.Chip.gpu_share`: on a Mac, macOS's default limit), and how
  many users could.
- **per-user tokens/s at that concurrency**: one decode step of all users, its reads at the
  discounted bandwidth, its arithmetic at the rate the reference runs reached.
- **price**, where a vendor states one (``data/machine_prices.csv``).

:mod:`.ranking` orders the machines and formats a ranking for the page,
:mod:`.calculator` is the same arithmetic for the reader's browser, and
:mod:`.extrapolation` tests the first-token method on published runs it did not use.
"""

from .calculator import calculator_rows, js_expressions
from .decode import (DATACENTER, FAMILY, OWN, POOLED, datacenter_quartiles, fraction_by_format,
                     fraction_quartiles, h100_decode_readings, own_decode_runs)
from .estimate import RAISE_LIMIT, estimate, matmul_params, model_for, prompt_flops
from .extrapolation import (VALIDATION_MODELS, extrapolation_check, extrapolation_summary,
                            target_runs, ttft_check_band)
from .machine import LEFT_OUT, Machine, left_out, machine, machines
from .ranking import (BANDS, DESK, TIE, WORKSTATION_CARDS, best, bound_by, bound_sentence,
                      decision, decision_table, fmt_range,
                      hardware_and_software, machine_table, on_desk, rank, ranking_display,
                      roof_text, span, swapped_pairs)
from .reference import (DISPUTED, REFERENCE_FORMAT, REFERENCE_MODEL, REFERENCE_TOKENS,
                        SCOREBOARD_NAMES, backend_fractions, prefill_runs,
                        reference_flops_per_token, reference_runs, second_hand_runs)
from .roofs import ARITHMETIC, BACKEND, VULKAN_SOURCE
from .workload import KV_DTYPE, RANK_BY, Workload, presets

__all__ = [
    "ARITHMETIC", "BACKEND", "BANDS", "DATACENTER", "DESK", "DISPUTED", "FAMILY", "KV_DTYPE", "LEFT_OUT", "Machine", "OWN",
    "POOLED", "RAISE_LIMIT", "RANK_BY", "REFERENCE_FORMAT", "REFERENCE_MODEL", "TIE",
    "REFERENCE_TOKENS", "SCOREBOARD_NAMES", "VALIDATION_MODELS",
    "VULKAN_SOURCE", "WORKSTATION_CARDS", "Workload", "backend_fractions", "best", "bound_by",
    "bound_sentence", "calculator_rows", "datacenter_quartiles", "decision", "decision_table",
    "estimate", "extrapolation_check", "extrapolation_summary",
    "fmt_range", "fraction_by_format", "fraction_quartiles",
    "h100_decode_readings", "hardware_and_software", "js_expressions", "left_out",
    "machine", "on_desk", "machine_table", "machines", "matmul_params",
    "model_for", "own_decode_runs", "prefill_runs", "presets", "prompt_flops", "rank",
    "ranking_display", "reference_flops_per_token", "reference_runs", "roof_text",
    "second_hand_runs", "span", "swapped_pairs", "target_runs", "ttft_check_band",
]
