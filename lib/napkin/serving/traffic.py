"""Requests arriving over time: prompt and output lengths, and when each arrives.

Arrivals are a Poisson process; lengths are lognormal with chosen means, drawn by the same
sampler as chapter 6's requests (:func:`napkin.workloads.sample_requests`). Chapter 7 serves
this traffic; :func:`deal` shares it among instances.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from ..units import require_positive
from ..workloads import DEFAULT_SIGMA, RequestLengths, sample_requests


@dataclass(frozen=True)
class Traffic:
    """Requests: prompt and output lengths (tokens) and arrival times (seconds), in order."""

    prompt: np.ndarray
    output: np.ndarray
    arrival_s: np.ndarray

    def __len__(self) -> int:
        return len(self.prompt)

    @property
    def rate_per_s(self) -> float:
        return float(len(self) / self.arrival_s[-1]) if self.arrival_s[-1] > 0 else math.inf

    def stats(self) -> dict:
        """What the sampled traffic actually is (the lognormal's target means are not what a
        finite, cut sample realises): means, medians, 99th percentiles and the longest."""
        out = {"requests": len(self), "rate_per_s": self.rate_per_s}
        for what, x in (("prompt", self.prompt), ("output", self.output)):
            out |= {f"{what}_mean_tokens": float(x.mean()),
                    f"{what}_median_tokens": float(np.median(x)),
                    f"{what}_p99_tokens": float(np.percentile(x, 99)),
                    f"{what}_max_tokens": int(x.max())}
        return out


def traffic(rate_per_s: float, n: int, prompt_mean_tokens: float, output_mean_tokens: float,
            *, sigma: float = DEFAULT_SIGMA, max_len: int = 32768, seed: int) -> Traffic:
    """``n`` requests arriving at ``rate_per_s`` on average (Poisson), with lognormal prompt and
    output lengths of the given means (chapter 6's sampler, cut to ``max_len`` tokens)."""
    rate = require_positive("rate_per_s", rate_per_s)
    wl = RequestLengths(name="traffic",
                  input_mean_tokens=require_positive("prompt_mean_tokens", prompt_mean_tokens),
                  output_mean_tokens=require_positive("output_mean_tokens", output_mean_tokens),
                  sigma=require_positive("sigma", sigma, allow_zero=True))
    lengths = sample_requests(wl, n, max_len, seed)
    gaps = np.random.default_rng([seed, 1]).exponential(1 / rate, len(lengths))
    return Traffic(prompt=lengths.prompt, output=lengths.output, arrival_s=np.cumsum(gaps))


def deal(n: int, k: int) -> list[np.ndarray]:
    """Round robin: request i goes to instance i mod k."""
    return [np.arange(i, n, k) for i in range(k)]
