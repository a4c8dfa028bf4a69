"""napkin: the arithmetic behind "Prefill and decode want different machines".

Every number the book prints is computed here from the sourced tables in
``data/``; notebooks only call these functions and draw the results.
"""

from . import ceiling, charts, hardware, models, tables, units
from .ceiling import decode_ceiling, fraction_of_ceiling, realistic_decode
from .charts import Figure

__all__ = [
    "ceiling", "charts", "hardware", "models", "tables", "units",
    "decode_ceiling", "fraction_of_ceiling", "realistic_decode", "Figure",
]
__version__ = "0.1.0"
