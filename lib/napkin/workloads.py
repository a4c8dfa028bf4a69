"""Request lengths: how long prompts and outputs are, drawn the same way in every chapter.

The vLLM paper gives each dataset's mean input and output length (its Fig. 11's legends) and
draws the histograms: a spike at short lengths and a long right tail. A lognormal with those
means has that shape. Chapter 6 replays such requests through its KV memory engine; chapter
7 draws its traffic's lengths with the same sampler (:func:`napkin.serving.traffic.traffic`).
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from . import papers
from .units import require_positive, require_whole

__all__ = ["DEFAULT_SIGMA", "mean_standard_error", "Requests", "sample_requests", "workload",
           "RequestLengths"]

#: The spread (standard deviation of log-length) unless a chapter says otherwise.
DEFAULT_SIGMA = 1.0


@dataclass(frozen=True)
class RequestLengths:
    """Request lengths: lognormal prompt and output lengths with the dataset's means.

    ``sigma`` (the standard deviation of log-length) sets how long the tail is. At
    ``sigma=1`` the median is 61 % of the mean and about one ShareGPT output in a hundred
    exceeds 2,048 tokens, the tail the paper's figure shows; ``sigma=0`` makes every request
    the same length.
    """

    name: str
    input_mean_tokens: float
    output_mean_tokens: float
    sigma: float = DEFAULT_SIGMA


def workload(name: str = "ShareGPT", sigma: float = DEFAULT_SIGMA) -> RequestLengths:
    """ShareGPT or Alpaca lengths, with the means the vLLM paper prints in its Fig. 11."""
    key = {"sharegpt": "sharegpt", "alpaca": "alpaca"}.get(str(name).lower())
    if key is None:
        raise ValueError(f"unknown workload {name!r}; known: ShareGPT, Alpaca")
    require_positive("sigma", sigma, allow_zero=True)
    return RequestLengths(name={"sharegpt": "ShareGPT", "alpaca": "Alpaca"}[key],
                    input_mean_tokens=papers.claim(f"fig11_{key}_input_mean"),
                    output_mean_tokens=papers.claim(f"fig11_{key}_output_mean"),
                    sigma=float(sigma))


def mean_standard_error(mean_tokens: float, sigma: float, n: int) -> float:
    """How far the mean of ``n`` lognormal lengths of this mean and spread typically lands
    from its target (before any cut): the lognormal's standard deviation,
    ``mean * sqrt(exp(sigma**2) - 1)``, over ``sqrt(n)``. A chapter quotes it beside a sample's
    realised mean, so that a reader can tell a low draw from a biased sampler."""
    mean = require_positive("mean_tokens", mean_tokens)
    sigma = require_positive("sigma", sigma, allow_zero=True)
    n = require_whole("n", n, 1)
    return mean * math.sqrt(math.expm1(sigma ** 2)) / math.sqrt(n)


@dataclass(frozen=True)
class Requests:
    """A queue of requests: prompt and output lengths in tokens, arrival step."""

    prompt: np.ndarray
    output: np.ndarray
    arrival: np.ndarray

    def __len__(self) -> int:
        return len(self.prompt)

    @property
    def final_length(self) -> np.ndarray:
        return self.prompt + self.output


def sample_requests(wl: RequestLengths, n: int, max_len: int, seed: int,
                    arrival_rate: float | None = None) -> Requests:
    """``n`` requests from a workload, seeded, cut to fit ``max_len`` tokens.

    Lengths are lognormal with the workload's means, rounded to whole tokens (at least
    one); a prompt keeps at least one token of room for output, and an output stops where
    the sequence reaches ``max_len``, as a model stops at its context limit. With
    ``arrival_rate=None`` every request is waiting at the start, so the engine runs full
    (memory, not demand, sets the batch); otherwise arrivals are a Poisson process with that
    many requests per step.
    """
    n = require_whole("n", n, 1)
    max_len = require_whole("max_len", max_len, 2)
    rng = np.random.default_rng(seed)

    def draw(mean: float) -> np.ndarray:
        if wl.sigma == 0:
            return np.full(n, float(mean))
        return rng.lognormal(math.log(mean) - wl.sigma ** 2 / 2, wl.sigma, n)

    prompt = np.maximum(1, np.rint(draw(wl.input_mean_tokens))).astype(np.int64)
    output = np.maximum(1, np.rint(draw(wl.output_mean_tokens))).astype(np.int64)
    prompt = np.minimum(prompt, max_len - 1)
    output = np.minimum(output, max_len - prompt)
    if arrival_rate is None:
        arrival = np.zeros(n, dtype=np.int64)
    else:
        rate = require_positive("arrival_rate", arrival_rate)
        arrival = np.floor(np.cumsum(rng.exponential(1 / rate, n))).astype(np.int64)
    return Requests(prompt=prompt, output=output, arrival=arrival)
