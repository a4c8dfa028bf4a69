"""Different machines, computed: prefill on one kind of hardware, decode on another, the KV
cache crossing a link between them.

- :mod:`napkin.split.pair`: one pair and one workload, :func:`predict_split`.
- :mod:`napkin.split.pools`: a stream of requests at a service level, priced per token on
  one kind of machine or on a prefill pool and a decode pool.
- :mod:`napkin.split.desk`: which desk pairs beat each machine alone, for one user.
- :mod:`napkin.split.servers`: which server pairs beat one kind, in cost per token at a
  service level.
- :mod:`napkin.split.published`: Splitwise's designs redone from the book's model, and how
  far the book lands from what the paper measured.
"""

from .pair import DESK_CHIPS, DoesNotFit, Side, SplitPrediction, is_desk, predict_split

__all__ = ["DESK_CHIPS", "DoesNotFit", "is_desk", "predict_split", "Side", "SplitPrediction"]
