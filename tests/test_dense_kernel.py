"""The dense kernel (tierank.dense) against tierank's numpy core and the brute-force oracle.

THE test: on random padded batches with heavy ties, graded labels, rows without relevant items, every
dense measure (enumerated from DENSE_MEASURES, so a new one is tested against its registry measure),
every cutoff (1, inside a tie, L, beyond L, none), every tie mode, the kernel on numpy and on torch
(float64 and float32) equals ``tierank.evaluate_matrix`` on the same arrays (masked entries removed) in
the same mode, and "upper" / "lower" also equal ``bounds=True``'s upper / lower. Tiny lists are also
checked against every ordering (tests/oracle.py): "upper" / "lower" the max / min over them,
"optimistic" / "pessimistic" the value of the fixed arrangement (preferred items first / last).
"""

from __future__ import annotations

import math
import os
import sys

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import tierank
from tierank.dense import (DENSE_MEASURES, DENSE_TIES, NumpyOps, Ops, dense_values, numpy_ops, random_keys,
                           registry_measure)

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import oracle  # noqa: E402

torch = pytest.importorskip("torch")
from tierank.dense import torch_ops  # noqa: E402

FIXED = ("input", "trec_eval", "optimistic", "pessimistic")
BOUND = ("lower", "upper")


def batch(rng: np.random.Generator, B: int = 24, L: int = 7, n_keys: int = 3, grades: int = 3):
    """Scores from a few values (heavy ties), integer grades 0..grades-1, ~15% padding, every row with
    at least one real item, some rows without any relevant item."""
    S = rng.integers(0, n_keys, (B, L)).astype(np.float64)
    Y = rng.integers(0, grades, (B, L)).astype(np.float64)
    Y[rng.random(B) < 0.2] = 0.0
    M = rng.random((B, L)) < 0.85
    M[:, 0] |= ~M.any(axis=1)
    return S, Y, M


def reference(S, Y, M, measure: str, k, ties: str, **kw) -> np.ndarray:
    """tierank.evaluate_matrix on the same arrays: per-row values (0 where the measure is undefined)."""
    name = registry_measure(measure, k, S.shape[1])
    res = tierank.evaluate_matrix(Y, S, [name], ties=ties, mask=M, bounds=ties in BOUND, **kw)
    if ties in BOUND:   # ties="upper" in the core is bounds=True's upper (one computation)
        np.testing.assert_array_equal(res.per_query[name].to_numpy(), getattr(res, ties)[name].to_numpy())
    return res.per_query[name].to_numpy()


def cutoffs(measure: str, L: int):
    if measure == "r_precision":
        return [None]
    return [None, 1, 3, L, L + 2]


def run(ops: Ops, S, Y, M, dtype=None, **kw):
    if ops is numpy_ops:
        return dense_values(ops, S, Y, M, **kw)
    t = lambda a: torch.tensor(a, dtype=dtype)   # noqa: E731
    v, ok = dense_values(ops, t(S), t(Y), torch.tensor(M), **kw)
    assert v.dtype == dtype and ok.dtype == torch.bool
    return v.double().numpy(), ok.numpy()


def assert_close(got, want, rtol: float):
    np.testing.assert_allclose(got, want, rtol=rtol, atol=rtol)


@pytest.mark.parametrize("measure", sorted(DENSE_MEASURES))
def test_equals_evaluate_matrix(measure):
    rng = np.random.default_rng(sorted(DENSE_MEASURES).index(measure))
    S, Y, M = batch(rng)
    L = S.shape[1]
    inside = 0
    for k in cutoffs(measure, L):
        for ties in ("expected",) + BOUND + FIXED:
            want = reference(S, Y, M, measure, k, ties)
            for ops, dtype, rtol in ((numpy_ops, None, 1e-12), (torch_ops(), torch.float64, 1e-12),
                                     (torch_ops(), torch.float32, 1e-5)):
                got, valid = run(ops, S, Y, M, dtype, measure=measure, k=k, ties=ties)
                assert_close(got, want, rtol)
        if k is not None and k < L:   # the cut falls inside a tie in some rows: the hard case is covered
            keys = np.where(M, -S, np.inf)
            kth = np.sort(keys, axis=1)[:, k - 1]
            inside += int(((keys == kth[:, None]).sum(axis=1) > 1).sum())
    assert measure == "r_precision" or inside > 0


@pytest.mark.parametrize("measure", sorted(DENSE_MEASURES))
def test_valid_flags(measure):
    S = np.array([[1.0, 1.0, 0.0], [2.0, 1.0, 0.0], [1.0, 1.0, 1.0]])
    Y = np.array([[0.0, 0.0, 0.0], [1.0, 0.0, 0.0], [1.0, 1.0, 1.0]])
    M = np.array([[True, True, True], [True, True, False], [False, False, False]])
    values, valid = dense_values(numpy_ops, S, Y, M, measure=measure, k=None if measure == "r_precision" else 2)
    needs_relevant = DENSE_MEASURES[measure][1]
    assert valid.tolist() == [not needs_relevant, True, False]
    assert values[2] == 0.0 and (needs_relevant is False or values[0] == 0.0)


@pytest.mark.parametrize("gain, gain_fn", [("exp2", lambda y: 2.0 ** y - 1.0), ("linear", None)])
@pytest.mark.parametrize("discount, discount_fn", [
    ("log2", None),
    ("jk", lambda r: np.where(r == 1.0, 1.0, 1.0 / np.log2(np.maximum(r, 2.0)))),
])
@pytest.mark.parametrize("measure", ["dcg", "ndcg"])
def test_gain_and_discount_functions(measure, gain, gain_fn, discount, discount_fn):
    rng = np.random.default_rng(7)
    S, Y, M = batch(rng, grades=4)
    name = DENSE_MEASURES[measure][0]
    for k in (1, 3, None):
        spec = f"{name}(gain='{gain}', discount='{discount}')" + ("" if k is None else f"@{k}")
        for ties in ("expected", "input"):
            want = tierank.evaluate_matrix(Y, S, [spec], ties=ties, mask=M).per_query[spec].to_numpy()
            got, _ = dense_values(numpy_ops, S, Y, M, measure=measure, k=k, ties=ties, gain_fn=gain_fn,
                                  discount_fn=discount_fn)
            assert_close(got, want, 1e-12)


def test_item_weights_multiply_the_gains():
    # DCG of weighted gains = DCG (linear gain) of relevance = gain * weight, a fractional grade
    rng = np.random.default_rng(3)
    S, Y, M = batch(rng)
    W = rng.choice([0.0, 0.5, 1.0, 2.0], size=S.shape)
    for measure in ("dcg", "ndcg"):
        for ties in ("expected", "optimistic", "pessimistic", "input") + BOUND:
            for k in (2, None):
                want = reference(S, Y * W, M, measure, k, ties)
                got, _ = dense_values(numpy_ops, S, Y, M, measure=measure, k=k, ties=ties, item_weights=W)
                assert_close(got, want, 1e-12)


def test_random_ties_are_a_seeded_column_order():
    """ties='random' = the input order after sorting every row's columns by random_keys(seed)."""
    rng = np.random.default_rng(11)
    S, Y, M = batch(rng, L=9)
    for seed in (0, 1, 12345):
        keys = random_keys(numpy_ops, S, seed)
        perm = np.argsort(keys, kind="stable")
        for measure in sorted(DENSE_MEASURES):
            k = None if measure == "r_precision" else 3
            want = reference(S[:, perm], Y[:, perm], M[:, perm], measure, k, "input")
            got, _ = dense_values(numpy_ops, S, Y, M, measure=measure, k=k, ties="random", seed=seed)
            assert_close(got, want, 1e-12)
            t, _ = run(torch_ops(), S, Y, M, torch.float64, measure=measure, k=k, ties="random", seed=seed)
            assert_close(t, got, 1e-12)
    orders = {tuple(np.argsort(random_keys(numpy_ops, S, s), kind="stable")) for s in range(5)}
    assert len(orders) > 1


def test_random_keys_distinct():
    keys = random_keys(numpy_ops, np.zeros((1, 65537)), 5)
    assert len(np.unique(keys)) == 65537


def test_infinities_and_signed_zero_tie():
    S = np.array([[np.inf, np.inf, 0.0, -0.0, -np.inf, -np.inf, 1.0]])
    Y = np.array([[1.0, 0.0, 1.0, 0.0, 1.0, 0.0, 0.0]])
    M = np.ones_like(S, dtype=bool)
    for measure in sorted(DENSE_MEASURES):
        for k in cutoffs(measure, 7):
            for ties in ("expected", "optimistic", "pessimistic", "input") + BOUND:
                want = reference(S, Y, M, measure, k, ties)
                got, _ = dense_values(numpy_ops, S, Y, M, measure=measure, k=k, ties=ties)
                assert_close(got, want, 1e-12)
                t, _ = run(torch_ops(), S, Y, M, torch.float64, measure=measure, k=k, ties=ties)
                assert_close(t, want, 1e-12)


# the oracle's measure strings (it has no Hits; Hits@k = k P@k is covered by the registry test)
ORACLE = {m: v for m, v in DENSE_MEASURES.items() if m != "hits"}


@pytest.mark.parametrize("measure", sorted(ORACLE))
def test_brute_force_over_orderings(measure):
    """expected / upper / lower = mean / max / min over every ordering of tied items; optimistic /
    pessimistic = the value of the fixed arrangement with the preferred items first / last."""
    rng = np.random.default_rng(100 + sorted(ORACLE).index(measure))
    for _ in range(25):
        n = int(rng.integers(1, 7))
        keys = rng.integers(0, 3, n).astype(np.float64)
        grades = rng.integers(0, 3, n).astype(np.float64)
        for k in cutoffs(measure, n):
            spec = registry_measure(measure, k, n)
            a = oracle.analyse(spec, list(grades), list(keys))
            for ties in ("expected", "lower", "upper", "optimistic", "pessimistic"):
                want = a.expected_for(ties)
                got, _ = dense_values(numpy_ops, keys[None], grades[None], np.ones((1, n), bool), measure=measure,
                                      k=k, ties=ties)
                assert math.isclose(float(got[0]), want, rel_tol=1e-12, abs_tol=1e-12), (spec, ties, keys, grades)


@settings(max_examples=60, deadline=None, derandomize=True, database=None)
@given(data=st.data(), measure=st.sampled_from(sorted(DENSE_MEASURES)),
       ties=st.sampled_from(("expected", "optimistic", "pessimistic", "input", "trec_eval", "lower", "upper")))
def test_property_torch_equals_core(data, measure, ties):
    B = data.draw(st.integers(1, 4))
    L = data.draw(st.integers(1, 8))
    S = np.array(data.draw(st.lists(st.lists(st.sampled_from([-np.inf, -1.0, 0.0, 0.5, 2.0, np.inf]),
                                             min_size=L, max_size=L), min_size=B, max_size=B)))
    Y = np.array(data.draw(st.lists(st.lists(st.sampled_from([0.0, 0.0, 1.0, 2.0]), min_size=L, max_size=L),
                                    min_size=B, max_size=B)))
    M = np.array(data.draw(st.lists(st.lists(st.booleans(), min_size=L, max_size=L), min_size=B, max_size=B)))
    M[:, 0] |= ~M.any(axis=1)
    k = None if measure == "r_precision" else data.draw(st.one_of(st.none(), st.integers(1, L + 2)))
    want = reference(S, Y, M, measure, k, ties)
    got, _ = run(torch_ops(), S, Y, M, torch.float64, measure=measure, k=k, ties=ties)
    assert_close(got, want, 1e-12)


def test_column_order_does_not_matter_for_expected():
    rng = np.random.default_rng(5)
    S, Y, M = batch(rng, L=12)
    perm = rng.permutation(12)
    for measure in sorted(DENSE_MEASURES):
        for k in cutoffs(measure, 12):
            a, _ = dense_values(numpy_ops, S, Y, M, measure=measure, k=k)
            b, _ = dense_values(numpy_ops, S[:, perm], Y[:, perm], M[:, perm], measure=measure, k=k)
            assert_close(a, b, 1e-13)


def test_padding_is_ignored_entirely():
    """A padded entry's score and label do not matter, wherever it sits."""
    rng = np.random.default_rng(9)
    S, Y, M = batch(rng)
    S2 = np.where(M, S, rng.choice([-np.inf, 5.0, np.inf], size=S.shape))
    Y2 = np.where(M, Y, 7.0)
    for measure in sorted(DENSE_MEASURES):
        for ties in DENSE_TIES:
            a, va = dense_values(numpy_ops, S, Y, M, measure=measure, ties=ties)
            b, vb = dense_values(numpy_ops, S2, Y2, M, measure=measure, ties=ties)
            np.testing.assert_array_equal(va, vb)
            assert_close(a, b, 1e-13)


@pytest.mark.parametrize("kwargs, match", [
    ({"measure": "nope"}, "unknown dense measure"),
    ({"measure": "ap", "k": 0}, "positive integer"),
    ({"measure": "ap", "k": -3}, "positive integer"),
    ({"measure": "ap", "k": 2.5}, "positive integer"),
    ({"measure": "ap", "k": True}, "positive integer"),
    ({"measure": "ap", "ties": "shuffle"}, "ties must be one of"),
    ({"measure": "r_precision", "k": 3}, "no cutoff"),
])
def test_bad_arguments(kwargs, match):
    with pytest.raises(ValueError, match=match):
        dense_values(numpy_ops, np.zeros((1, 2)), np.zeros((1, 2)), np.ones((1, 2), bool), **kwargs)


def test_protocol_is_complete():
    """Every method of the Ops protocol is implemented by the numpy and torch namespaces."""
    names = [n for n, v in vars(Ops).items() if callable(v) and not n.startswith("_")]
    assert "group_sum" in names and "order_by_score" in names
    for impl in (NumpyOps, type(torch_ops())):
        for n in names:
            if n == "order_by_score":   # has a default built from the other methods
                continue
            assert getattr(impl, n) is not getattr(Ops, n), (impl, n)


def test_order_by_score_default_equals_torch_override():
    rng = np.random.default_rng(2)
    S, _, M = batch(rng, L=10)
    S[rng.random(S.shape) < 0.2] = -np.inf
    S[rng.random(S.shape) < 0.1] = np.inf
    n_real = M.sum(axis=1)[:, None]
    real = np.arange(10)[None, :] < n_real     # real items first; the order of the padding is free
    default = Ops.order_by_score(torch_ops(), torch.tensor(S), torch.tensor(M)).numpy()
    for got in (torch_ops().order_by_score(torch.tensor(S), torch.tensor(M)).numpy(),
                numpy_ops.order_by_score(S, M)):
        assert np.array_equal(np.where(real, got, -1), np.where(real, default, -1))
        assert np.take_along_axis(M, got, axis=1)[real].all() and not np.take_along_axis(M, got, axis=1)[~real].any()


def test_optimistic_is_the_arrangement_and_upper_the_maximum():
    """Issue 27 item 8: relevance [1, 0, 1, 0], scores [3, 2, 1, 1], AP(denom='retrieved')@3. The tie
    {2, 3} straddles rank 3. Relevant item first (optimistic): top 3 = 1, 0, 1, so AP = (1/1 + 2/3) / 2
    = 5/6; relevant item last (pessimistic): top 3 = 1, 0, 0, so AP = (1/1) / 1 = 1. The maximum over
    both orderings is 1, the minimum 5/6. The dense kernel gave the maximum for "optimistic" (1.0) where
    the core gives the arrangement (5/6)."""
    S, Y, M = np.array([[3.0, 2.0, 1.0, 1.0]]), np.array([[1.0, 0.0, 1.0, 0.0]]), np.ones((1, 4), bool)
    hand = {"optimistic": 5 / 6, "pessimistic": 1.0, "upper": 1.0, "lower": 5 / 6}
    for ties, want in hand.items():
        assert math.isclose(reference(S, Y, M, "ap_retrieved", 3, ties)[0], want, rel_tol=1e-12)
        got, _ = dense_values(numpy_ops, S, Y, M, measure="ap_retrieved", k=3, ties=ties)
        assert math.isclose(float(got[0]), want, rel_tol=1e-12), ties
        t, _ = run(torch_ops(), S, Y, M, torch.float64, measure="ap_retrieved", k=3, ties=ties)
        assert math.isclose(float(t[0]), want, rel_tol=1e-12), ties
