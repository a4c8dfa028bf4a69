"""Different machines, computed: prefill on one kind of hardware, decode on another, the KV
cache crossing a link between them (the engine of the book's next chapter, not yet written).

- :mod:`napkin.split.pair`: one pair and one workload, :func:`predict_split`.
"""

from .pair import DESK_CHIPS, Side, SplitPrediction, is_desk, predict_split

__all__ = ["DESK_CHIPS", "is_desk", "predict_split", "Side", "SplitPrediction"]
