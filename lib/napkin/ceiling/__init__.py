"""The decode ceiling: at batch 1 every weight is read once per generated token.

    tokens/s  <=  memory bandwidth / bytes read per token

Nothing about FLOPs appears in it, which is the essay's whole point.
"""

from __future__ import annotations

from ..units import require_positive


def decode_ceiling(bandwidth_bytes_per_s: float, bytes_per_token: float) -> float:
    """Upper bound on single-stream decode speed, in tokens/s.

    ``bytes_per_token`` is what one decode step must read: the weights (a
    GGUF's tensor data, roughly its file size) plus, at depth, the KV cache.
    """
    bw = require_positive("bandwidth_bytes_per_s", bandwidth_bytes_per_s)
    size = require_positive("bytes_per_token", bytes_per_token)
    return bw / size


def fraction_of_ceiling(measured_tokens_per_s: float, ceiling_tokens_per_s: float) -> float:
    """How much of the napkin ceiling a measurement reached (0.45 means 45 %)."""
    measured = require_positive("measured_tokens_per_s", measured_tokens_per_s, allow_zero=True)
    ceiling = require_positive("ceiling_tokens_per_s", ceiling_tokens_per_s)
    return measured / ceiling


def realistic_decode(bandwidth_bytes_per_s: float, bytes_per_token: float,
                     discount: float = 0.5) -> float:
    """The essay's buying rule: the ceiling, discounted (by default to 50 %)."""
    d = require_positive("discount", discount)
    if d > 1:
        raise ValueError(f"discount is a fraction of the ceiling (0-1], got {discount!r}")
    return decode_ceiling(bandwidth_bytes_per_s, bytes_per_token) * d
