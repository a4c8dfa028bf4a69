"""Different machines, computed: prefill on one kind of hardware, decode on another, the KV
cache crossing a link between them.

- :mod:`napkin.split.pair`: one pair and one workload, :func:`predict_split`.
- :mod:`napkin.split.pools`: a stream of requests at a service level, priced per token on
  one kind of machine or on a prefill pool and a decode pool.
- :mod:`napkin.split.desk`: which desk pairs beat each machine alone, for one user.
"""

from .pair import DESK_CHIPS, DoesNotFit, Side, SplitPrediction, is_desk, predict_split

__all__ = ["DESK_CHIPS", "DoesNotFit", "is_desk", "predict_split", "Side", "SplitPrediction"]
