"""Parameters and helpers shared by several measure families."""

from __future__ import annotations

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


def divide(num: np.ndarray, den: np.ndarray) -> np.ndarray:
    """num / den with 0 where den == 0 (empty denominators give 0)."""
    num = np.asarray(num, dtype=np.float64)
    den = np.asarray(den, dtype=np.float64)
    out = np.zeros(np.broadcast(num, den).shape)
    return np.divide(num, den, out=out, where=den != 0)


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
