"""napkin: the arithmetic behind "Prefill and decode want different machines".

Every number the book prints is computed here from the sourced tables in
``data/``; notebooks only call these functions and draw the results.

Names load on first use (PEP 562): ``import napkin`` alone reads no module, so a page's
record of what it read (``book/_ext/napkin_site/inputs.py``) names only the modules it uses,
and an edit in one re-executes only the pages that read it.
"""

from importlib import import_module

_MODULES = ("ceiling", "charts", "hardware", "kvcache", "models", "predict", "tables", "units")
_NAMES = {
    "decode_ceiling": "ceiling", "fraction_of_ceiling": "ceiling",
    "realistic_decode": "ceiling", "Figure": "charts",
    "kv_bytes_per_token": "kvcache", "kv_cache_bytes": "kvcache",
    "ridge_point": "roofline", "predict_split": "split", "SplitPrediction": "split",
}
__all__ = [*_MODULES, *_NAMES]
__version__ = "0.1.0"


def __getattr__(name):
    if name in _NAMES:
        value = getattr(import_module(f".{_NAMES[name]}", __name__), name)
    elif name in _MODULES:
        value = import_module(f".{name}", __name__)
    else:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    globals()[name] = value
    return value


def __dir__():
    return sorted({*globals(), *__all__})
