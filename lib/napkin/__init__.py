"""napkin: the arithmetic behind "Prefill and decode want different machines".

Every number the book prints is computed here from the sourced tables in
``data/``; notebooks only call these functions and draw the results.
"""

from . import ceiling, charts, hardware, kvcache, models, predict, tables, units
from .ceiling import decode_ceiling, fraction_of_ceiling, realistic_decode
from .charts import Figure
from .kvcache import kv_bytes_per_token, kv_cache_bytes
from .roofline import ridge_point
from .split import SplitPrediction, predict_split

__all__ = [
    "ceiling", "charts", "hardware", "kvcache", "models", "predict", "tables", "units",
    "decode_ceiling", "fraction_of_ceiling", "realistic_decode", "Figure",
    "kv_bytes_per_token", "kv_cache_bytes", "ridge_point", "predict_split", "SplitPrediction",
]
__version__ = "0.1.0"
