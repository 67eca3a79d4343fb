"""Recurrences over a long tie: RR's offsets and Success's slots (src/tierank/measures/rr.py, counting.py).

Both run a product recurrence step by step across queries; a tie of a million documents made that
a million numpy steps (RR on one query with 10**6 tied documents: 10 s). After VECTOR_STEPS steps a
query still going now finishes alone, its remaining steps in one array, multiplied and summed in the
same order. Expected values: the brute-force enumeration of tie orderings (tests/oracle.py) with the
switch moved to 0, 1 and 2 steps so that small ties take the long path; and, for a tie of 200,000
documents, the closed forms written out below in exact integers.
"""

from __future__ import annotations

import math
import os
import sys
from fractions import Fraction

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import oracle  # noqa: E402

import tierank  # noqa: E402
import tierank.measures.counting as counting  # noqa: E402
import tierank.measures.rr as rr  # noqa: E402

MEASURES = ["RR", "RR@3", "Success@1", "Success@3", "Success@6"]


def _means(grades: list[float], keys: list[float]) -> dict[str, float]:
    res = tierank.evaluate_matrix(np.array([grades]), np.array([keys]), MEASURES)
    return {m: float(res.mean[m]) for m in MEASURES}


@settings(max_examples=300, deadline=None)
@given(st.integers(1, 7).flatmap(lambda n: st.tuples(
    st.lists(st.sampled_from([0.0, 0.0, 1.0, 2.0]), min_size=n, max_size=n),
    st.lists(st.sampled_from([0.0, 0.5, 1.0]), min_size=n, max_size=n))),
    st.sampled_from([0, 1, 2]))
def test_the_long_path_gives_the_brute_force_values_and_the_same_floats(case, steps):
    grades, keys = case
    before = _means(grades, keys)
    with pytest.MonkeyPatch.context() as mp:
        mp.setattr(rr, "VECTOR_STEPS", steps)
        mp.setattr(counting, "VECTOR_STEPS", steps)
        after = _means(grades, keys)
    for m in MEASURES:
        want = oracle.tie_aware(m, grades, keys)[0]
        assert math.isclose(after[m], want, rel_tol=1e-12, abs_tol=1e-12), (m, after[m], want)
        assert after[m] == before[m], m   # the same multiplications and additions, in the same order


def test_a_tie_of_200000_documents():
    n, r = 200_000, 7
    labels = np.zeros((1, n))
    labels[0, np.linspace(0, n - 1, r).astype(int)] = 1
    res = tierank.evaluate_matrix(labels, np.zeros((1, n)), ["RR", "Success@1000", "Success@150000"])
    # RR: the first relevant document is at rank j with probability C(n - j, r - 1) / C(n, r); each term
    # from exact integers (one rounding), summed exactly by fsum
    top = math.comb(n, r)
    want_rr = math.fsum(math.comb(n - j, r - 1) / (j * top) for j in range(1, n - r + 2))
    assert math.isclose(float(res.mean["RR"]), want_rr, rel_tol=1e-12)
    # Success@k: 1 - P(no relevant document in the top k) = 1 - C(n - k, r) / C(n, r), exactly
    for k in (1000, 150_000):
        want = 1 - Fraction(math.comb(n - k, r), top)
        assert math.isclose(float(res.mean[f"Success@{k}"]), float(want), rel_tol=1e-12)
