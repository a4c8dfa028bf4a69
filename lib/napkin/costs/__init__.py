"""What a token costs, in dollars and joules: on a desk, on a rented GPU, through an API.

Chapter 11 (``notebooks/11_cost_and_energy``). The modules, one concept each:

- :mod:`~napkin.costs.prices`: rental, API, list and electricity prices from ``data/``, with
  their dates and how old they are on a given day;
- :mod:`~napkin.costs.power`: what a machine draws while it generates (measured at the wall,
  or rated; a rented GPU's share of its server times the data center's PUE);
- :mod:`~napkin.costs.service`: the service level a way is priced at (speed per user, first
  token), from sourced reading speeds and attention limits;
- :mod:`~napkin.costs.throughput`: output tokens per second of each way to serve a workload
  (the calibrated step model for rented GPUs, chapter 8's estimate for desk machines), with
  its band, and whether the workload fits at all;
- :mod:`~napkin.costs.model`: the cost formulas (owned, rented, energy, break-even), written
  once for Python and for the page's calculator;
- :mod:`~napkin.costs.compare`: every way side by side, the break-even hours, and the cost
  column chapter 8 shows;
- :mod:`~napkin.costs.energy`: the energy model against ML.ENERGY's measurements;
- :mod:`~napkin.costs.moe`: a large mixture of experts at chat speed on a rack, a server and
  one GPU, and its price per million tokens;
- :mod:`~napkin.costs.page`: the in-page calculator's rows and expressions;
- :mod:`~napkin.costs.chapter`: what chapter 11 shows (tables formatted for the page).

The workload is chapter 8's :class:`napkin.buying.Workload` (model, weight format, prompt and
answer lengths, users at once).
"""

from . import chapter, compare, energy, model, moe, page, power, prices, service, throughput
from .compare import API, breakeven_table, cost_column, cost_table
from .model import (DEFAULT_HOURS_PER_DAY, DEFAULT_LIFE_YEARS, FORMULAS, Usage,
                    breakeven_price_usd)
from .service import ServiceLevel
from .throughput import DESK, RENTED, Serving, committed, desk_format, owned, rented

__all__ = ["chapter", "compare", "energy", "model", "moe", "page", "power", "prices", "service",
           "throughput", "API", "breakeven_table", "cost_column", "cost_table",
           "DEFAULT_HOURS_PER_DAY", "DEFAULT_LIFE_YEARS", "FORMULAS", "Usage",
           "breakeven_price_usd", "ServiceLevel", "DESK", "RENTED", "Serving", "committed",
           "desk_format", "owned", "rented"]
