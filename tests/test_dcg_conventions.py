"""DCG conventions of other libraries: log bases (MatchZoo's ln, log10), and in Python a custom gain of
the grade and a custom discount of the rank (keras-rs gain_fn / rank_discount_fn), tie-aware.

Expected values: brute force over every ordering (tests/oracle.py's enumeration) with the functions
applied by hand, and scikit-learn's dcg_score with log_base on tie-free rows."""

from __future__ import annotations

import math
import pickle

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from sklearn.metrics import dcg_score

import tierank
from tierank.errors import InputError
from tierank.measures import parse_measure

import oracle


def keras_gain(grades):      # keras-rs default gain_fn: 2**y - 1
    return np.power(2.0, grades) - 1.0


def keras_discount(ranks):   # keras-rs default rank_discount_fn: 1 / log2(rank + 1)
    return 1.0 / np.log2(ranks + 1.0)


def flat_discount(ranks):
    return np.ones_like(ranks)


def rising(ranks):
    return ranks * 1.0


def dcg_by_hand(grades_in_order, gain, discount, k):
    return sum(gain(np.array([g]))[0] * discount(np.array([float(i + 1)]))[0]
               for i, g in enumerate(grades_in_order[:k]))


@settings(max_examples=150, deadline=None)
@given(st.lists(st.tuples(st.integers(0, 2), st.integers(0, 3)), min_size=1, max_size=6), st.integers(1, 7),
       st.sampled_from([(keras_gain, keras_discount), (keras_gain, flat_discount),
                        (np.sqrt, keras_discount)]))
def test_custom_gain_and_discount_against_brute_force(items, k, fns):
    gain, discount = fns
    keys = [float(s) for s, _ in items]
    grades = [float(g) for _, g in items]
    m = parse_measure(f"DCG@{k}").replace(gain=gain, discount=discount)
    res = tierank.evaluate_matrix([grades], [keys], [m], bounds=True)
    values = [dcg_by_hand(list(seq), gain, discount, k) for seq in oracle.enumerate_orderings(grades, keys)]
    col = res.per_query.columns[0]
    assert res.per_query.iloc[0, 0] == pytest.approx(math.fsum(values) / len(values), rel=1e-12, abs=1e-12)
    assert res.lower[col].iloc[0] == pytest.approx(min(values), rel=1e-12, abs=1e-12)
    assert res.upper[col].iloc[0] == pytest.approx(max(values), rel=1e-12, abs=1e-12)


@pytest.mark.parametrize("base, name", [(math.e, "ln"), (10, "log10"), (2, "log2")])
def test_log_bases_match_sklearn_on_tie_free_rows(base, name):
    rng = np.random.default_rng(3)
    rel = rng.integers(0, 4, size=(20, 15)).astype(float)
    scores = rng.permutation(300).reshape(20, 15).astype(float)
    want = dcg_score(rel, scores, k=10, log_base=base)
    got = tierank.evaluate_matrix(rel, scores, [f"DCG(discount='{name}')@10"]).mean[f"DCG(discount='{name}')@10"]
    assert got == pytest.approx(want, rel=1e-12)


def test_a_function_measure_prints_by_name_and_pickles():
    m = parse_measure("nDCG@10").replace(gain=keras_gain, discount=keras_discount)
    assert str(m) == "nDCG(discount=keras_discount, gain=keras_gain)@10"
    assert pickle.loads(pickle.dumps(m)) == m


def test_keras_rs_defaults_equal_exp2_log2():
    rel = [[3.0, 0.0, 1.0, 2.0]]
    scores = [[1.0, 1.0, 0.5, 0.2]]
    m = parse_measure("nDCG").replace(gain=keras_gain, discount=keras_discount)
    a = tierank.evaluate_matrix(rel, scores, [m]).per_query.iloc[0, 0]
    b = tierank.evaluate_matrix(rel, scores, ["nDCG(gain='exp2')"]).per_query.iloc[0, 0]
    assert a == pytest.approx(b, rel=1e-14)


@pytest.mark.parametrize("fn, message", [
    (rising, "increases from rank 1 to 2"), (lambda r: -np.ones_like(r), "finite and >= 0"),
    (lambda r: 1.0, "one value per rank"),
])
def test_bad_discounts_are_errors(fn, message):
    m = parse_measure("DCG@3").replace(discount=fn)
    with pytest.raises(InputError, match=message):
        tierank.evaluate_matrix([[1.0, 0.0, 1.0]], [[3.0, 2.0, 1.0]], [m])


def test_bad_gains_are_errors():
    m = parse_measure("DCG@3").replace(gain=lambda g: g - 5.0)
    with pytest.raises(InputError, match="gains must be finite and >= 0"):
        tierank.evaluate_matrix([[1.0, 0.0, 1.0]], [[3.0, 2.0, 1.0]], [m])
