"""Parameters and helpers shared by several measure families."""

from __future__ import annotations

import math
from typing import Iterator

import numpy as np

from ..ties.groups import TieStats
from ._spec import Measure, Param, bool_param, choice_param, real_param

_REL_WHY = ": negative grades are unjudged documents, never relevant"
REL = Param(1, real_param("rel", minimum=0, why=_REL_WHY),
            "grade threshold: an item is relevant when its grade >= rel (rel >= 0: negative grades are "
            "unjudged documents, never relevant)")
#: NumRet's threshold: None counts every retrieved document, X those with grade >= X (ir-measures)
REL_OR_ALL = Param(None, real_param("rel", minimum=0, allow_none=True, why=_REL_WHY),
                   "grade threshold of the counted documents; None: every retrieved document")
CLIP = Param(False, bool_param("clip"), "divide by min(k, list length) instead of k")
DENOM_CHOICES = ("R", "retrieved", "min_k_R")


def denom_param(default: str) -> Param:
    return Param(default, choice_param("denom", DENOM_CHOICES),
                 "AP denominator: 'R' all relevant (trec_eval), 'retrieved' relevant in the top k "
                 "(torchmetrics, hashing papers), 'min_k_R' min(k, R) (Spark, Kaggle apk)")


def positive_grade(grades: np.ndarray, _query: np.ndarray | None = None) -> np.ndarray:
    """Grades with negative values (unjudged: in pool with a negative grade, or not in pool) counted
    as 0."""
    return np.maximum(grades, 0.0)


def binary_preference(m: Measure, grades: np.ndarray) -> list[np.ndarray]:
    return [(grades >= m["rel"]).astype(np.float64)]


def grade_preference(m: Measure, grades: np.ndarray) -> list[np.ndarray]:
    return [np.maximum(grades, 0.0)]


# Exponent below which a query's largest grade leaves sums of up to 2**60 grades finite in float64
_MAX_GRADE_EXP = 960


def grade_shifts(g: TieStats) -> np.ndarray | None:
    """Per query, a power of two 2**s (s an int64, 0..64) such that the grades times 2**-s sum without
    overflow (sums of up to 2**60 of them stay below 2**1020); None when no query needs one (the common
    case: every grade below 2**960). Measures linear in the grades (ACG, WAP) sum scaled grades and scale
    their value back, exactly: a power of two changes only the exponent (grades that underflow are
    below 2**-2000 of the largest).

    >>> from tierank.ties.groups import TieStats
    >>> stats = TieStats.from_histogram(np.array([[[1, 1]]]), np.array([0.0, 1.5e308]))
    >>> grade_shifts(stats)
    array([64])
    """
    top = g.memo("max_grade", g.judged.max_grade)
    e = np.frexp(top)[1]
    if not (e > _MAX_GRADE_EXP).any():
        return None
    return np.maximum(e - _MAX_GRADE_EXP, 0).astype(np.int64)


def unscaled(values: np.ndarray, shift: np.ndarray | None) -> np.ndarray:
    """Values computed on grades times 2**-shift, times 2**shift (inf beyond float64, which the evaluation
    reports as an error naming the query)."""
    if shift is None:
        return values
    with np.errstate(over="ignore"):
        return np.ldexp(values, shift)


#: steps of a product recurrence run across queries at once (RR's offsets, Success's slots); a query
#: still going after them (a tie of thousands of documents) finishes alone, all its steps in one array
VECTOR_STEPS = 64


def running_products(first: float, ratios: np.ndarray) -> np.ndarray:
    """``[first, first*ratios[0], first*ratios[0]*ratios[1], ...]``, multiplied in that order (as the
    recurrence run step by step: the same floats)."""
    return np.cumprod(np.concatenate(([first], ratios)))


def divide(num: np.ndarray, den: np.ndarray) -> np.ndarray:
    """num / den with 0 where den == 0 (empty denominators give 0)."""
    num = np.asarray(num, dtype=np.float64)
    den = np.asarray(den, dtype=np.float64)
    out = np.zeros(np.broadcast(num, den).shape)
    return np.divide(num, den, out=out, where=den != 0)


def f_measure(hits: np.ndarray, k: np.ndarray, R: np.ndarray, weight: float) -> np.ndarray:
    """``(1 + w) H / (w R + k)``: the F measure of H hits among k retrieved items and R relevant ones,
    recall weighing ``w`` times precision (F1's beta^2, trec_eval set_F's x); 0 when the denominator is 0.

    Stable for every w >= 0, including w = inf (an overflowing beta^2: the limit, recall): for w > 1
    numerator and denominator are divided by w, so nothing overflows and no inf / inf is formed.

    >>> f_measure(np.array([1.0]), np.array([2.0]), np.array([4.0]), 1e308 * 10)   # w = inf: recall
    array([0.25])
    >>> f_measure(np.array([1.0]), np.array([2.0]), np.array([4.0]), 1.0)         # 2 H / (R + k)
    array([0.33333333])
    """
    if weight > 1.0:
        inv = 1.0 / weight
        return divide((1.0 + inv) * hits, R + inv * k)
    return divide((1.0 + weight) * hits, weight * R + k)


def k_prime(g: TieStats, m: Measure, K: np.ndarray) -> np.ndarray:
    """The precision denominator: k, or K = min(k, n) with clip=True."""
    if m["clip"]:
        return K.astype(np.float64)
    return np.full(g.n_queries, float(m.cutoff))

# The parameters each preference reads: orderings are cached per (preference, these values).
binary_preference.params = ("rel",)  # type: ignore[attr-defined]
grade_preference.params = ()  # type: ignore[attr-defined]


def chunks(terms: np.ndarray, size: int) -> Iterator[np.ndarray]:
    """Consecutive index ranges of ``terms`` whose sum stays within ``size`` (at least one index each):
    the rows of a flat enumeration evaluated at once, so memory stays bounded."""
    ends = np.cumsum(terms)
    first = 0
    while first < len(terms):   # loop over chunks of whole rows
        last = max(int(np.searchsorted(ends, ends[first] - terms[first] + size, side="right")), first + 1)
        yield np.arange(first, last)
        first = last


#: the operations (of a few nanoseconds) one state of a dynamic programme run in Python counts for in a
#: family's ``cost`` (measured: 2 to 7 microseconds a state, for infAP's and G's exact bounds)
PYTHON_STATE = 1000

#: below this, an int64 product of non-negative factors cannot have wrapped (its float64 estimate is
#: within a relative 2**-50 of it, far from 2**63)
_INT64_SAFE = 2.0 ** 62


def exact_products(*factors: np.ndarray) -> np.ndarray:
    """The products of non-negative integer factors, element by element, as float64: ``float(p)`` of the
    exact integer product ``p`` (so exact below 2**53, correctly rounded above), never wrapped around
    as an int64 product of large factors would be. The cost estimates of ties are made of these.

    The products are computed in int64 where a float64 estimate shows they fit, and in Python integers
    (exact at any size) for the others, which only ties of millions of documents reach.

    >>> import numpy as np
    >>> n = np.array([10, 300_000])
    >>> exact_products(n, n, n, n).tolist()    # 300000**4 = 8.1e21 does not fit an int64
    [10000.0, 8.1e+21]
    """
    ints = [np.asarray(f, dtype=np.int64) for f in factors]
    if any((f < 0).any() for f in ints):
        raise ValueError("exact_products takes non-negative factors")
    estimate = np.ones(np.broadcast(*ints).shape if ints else ())
    for f in ints:
        estimate = estimate * f
    small = estimate < _INT64_SAFE
    out = np.empty(estimate.shape)
    exact = np.ones(int(small.sum()), dtype=np.int64)
    for f in ints:
        exact *= np.broadcast_to(f, estimate.shape)[small]
    out[small] = exact
    big = np.flatnonzero(~small.ravel())
    if len(big):   # Python integers: exact, then rounded once to float64
        cols = [np.broadcast_to(f, estimate.shape).ravel()[big].tolist() for f in ints]
        out.ravel()[big] = [float(math.prod(v)) for v in zip(*cols)]
    return out
