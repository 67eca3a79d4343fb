"""Shared closed-form pieces: hypergeometric expectations, computed stably and vectorised.

The pmf is built from its ratio recurrence, starting at the mode with weight 1 and walking outward,
then normalised (docs/maths.md, "Computing them"): no binomial coefficient is ever formed, no overflow, and the ratios
are quotients of exact integer products.
"""

from __future__ import annotations

from typing import Callable

import numpy as np

__all__ = ["hypergeometric_expectation", "hypergeometric_support"]


def hypergeometric_support(N: np.ndarray, K: np.ndarray, d: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Smallest and largest value of X ~ Hypergeometric(population N, K successes, d draws)."""
    return np.maximum(0, d - (N - K)), np.minimum(d, K)


def hypergeometric_expectation(N: np.ndarray, K: np.ndarray, d: np.ndarray,
                               f: Callable[[np.ndarray, np.ndarray], np.ndarray]) -> np.ndarray:
    """E[f(X)] for X ~ Hypergeometric(N, K, d), one distribution per entry.

    ``f(x, idx)`` evaluates the function at values ``x`` for the entries ``idx``. The loop runs over
    the distance from the mode, vectorised across entries; entries drop out when their support ends
    or their probabilities underflow.
    """
    N = N.astype(np.float64)
    K = K.astype(np.float64)
    d = d.astype(np.float64)
    lo, hi = hypergeometric_support(N, K, d)
    mode = np.clip(np.floor((d + 1) * (K + 1) / (N + 2)), lo, hi)
    everyone = np.arange(len(N))
    acc = f(mode, everyone).astype(np.float64)
    total = np.ones(len(N))
    for step in (+1, -1):
        p = np.ones(len(N))
        x = mode.copy()
        idx = everyone[(x < hi) if step > 0 else (x > lo)]
        while idx.size:
            xi, Ki, di, Ni = x[idx], K[idx], d[idx], N[idx]
            if step > 0:   # p(x+1)/p(x) = (K-x)(d-x) / ((x+1)(N-K-d+x+1))
                ratio = (Ki - xi) * (di - xi) / ((xi + 1) * (Ni - Ki - di + xi + 1))
            else:          # p(x-1)/p(x) = x (N-K-d+x) / ((K-x+1)(d-x+1))
                ratio = xi * (Ni - Ki - di + xi) / ((Ki - xi + 1) * (di - xi + 1))
            p[idx] *= ratio
            x[idx] += step
            acc[idx] += p[idx] * f(x[idx], idx)
            total[idx] += p[idx]
            more = (x[idx] < hi[idx]) if step > 0 else (x[idx] > lo[idx])
            idx = idx[more & (p[idx] > 0)]
    return acc / total
