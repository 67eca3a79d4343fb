"""Per-group sums of grade functions read only the pooled items when documents outside the pool are most of
the ranked items (``_PooledItems``): the sums must have the same bits as the sum over every item.

The reference is the sum over every item by the same blocked ``segment_reduce`` (the path taken when the
pool is not sparse), and, to within rounding, a plain ``np.add.reduceat`` in item order.
"""

from __future__ import annotations

import os
import sys

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "src"))

from tierank.data.ranked import NOT_IN_POOL, UNJUDGED_IN_POOL, RankedLists  # noqa: E402
from tierank.ties import groups as groups_module  # noqa: E402
from tierank.ties.groups import Judged, TieStats  # noqa: E402


def _gain(g, q):
    return np.where(g > 0, 2.0 ** g - 1.0, 0.0) / 3.0          # not integers: sorted inside each group


def _per_query_gain(g, q):
    return np.where(g > 0, g / (1.0 + q), 0.0)                   # uses each item's query


def _negative_zero(g, q):
    return np.where(g == 0, -0.0, np.where(g > 0, 0.1 * g, 0.0))  # -0.0 for judged non-relevant documents


def _indicator(g, q):
    return (g > 0).astype(np.float64)                             # integers: summed in item order


def _nonzero_off_pool(g, q):
    return (g == NOT_IN_POOL) * 0.3 + 0.1 * g                     # not 0 outside the pool: every item is read


FUNCTIONS = [(_gain, False), (_per_query_gain, True), (_negative_zero, False), (_indicator, False),
             (_nonzero_off_pool, False)]


def _stats(lengths: list[int], keys: np.ndarray, grades: np.ndarray) -> tuple[TieStats, np.ndarray]:
    qptr = np.concatenate(([0], np.cumsum(lengths))).astype(np.int64)
    item_query = np.repeat(np.arange(len(lengths)), lengths)
    order = np.lexsort((-keys, item_query))
    judged = np.where(grades == NOT_IN_POOL, 0.0, grades)
    ranked = RankedLists(qptr=qptr, keys=keys[order], grades=grades[order], judged_ptr=qptr, judged=judged,
                         trec_order_fn=lambda: np.arange(len(keys)), input_order=np.arange(len(keys)))
    return TieStats.from_ranked(ranked, Judged.from_csr(qptr, judged)), item_query


def _all_items(stats: TieStats, f, with_query: bool, item_query: np.ndarray) -> np.ndarray:
    source = stats.source
    return groups_module._blocked_group_sums(f, source.grades, source.group_start,
                                             item_query if with_query else None)


def _check(stats: TieStats, item_query: np.ndarray) -> None:
    source = stats.source
    sparse = 2 * int(np.sum(source.grades != NOT_IN_POOL)) <= len(source.grades)
    assert (source._pooled is not None) == sparse
    for f, with_query in FUNCTIONS:
        got = stats.group_sum((f.__name__, with_query), f, with_query)
        want = _all_items(stats, f, with_query, item_query)
        assert np.array_equal(got.view(np.int64), want.view(np.int64)), f.__name__   # same bits, signs of 0
        plain = np.add.reduceat(f(source.grades, item_query if with_query else None), source.group_start)
        np.testing.assert_allclose(got, plain, rtol=1e-12, atol=1e-15)


@settings(max_examples=300, deadline=None)
@given(st.data())
def test_pooled_sums_have_the_bits_of_sums_over_every_item(data):
    lengths = data.draw(st.lists(st.integers(0, 12), min_size=1, max_size=8))
    n = sum(lengths)
    keys = np.array(data.draw(st.lists(st.integers(0, 3), min_size=n, max_size=n)), dtype=np.float64)
    grade_set = [NOT_IN_POOL] * 6 + [UNJUDGED_IN_POOL, 0.0, 1.0, 2.5, 3.0]
    grades = np.array(data.draw(st.lists(st.sampled_from(grade_set), min_size=n, max_size=n)))
    if n == 0:
        return
    block = data.draw(st.sampled_from([1, 3, 1 << 16]))
    old = groups_module._ITEM_BLOCK
    groups_module._ITEM_BLOCK = block
    try:
        stats, item_query = _stats(lengths, keys, grades)
        _check(stats, item_query)
    finally:
        groups_module._ITEM_BLOCK = old


def test_negative_zero_of_a_group_with_unpooled_items_by_hand():
    """One tie of three items: a judged non-relevant document (-0.0 under ``_negative_zero``) and two
    outside the pool (+0.0). Over every item the sum is -0.0 + 0.0 + 0.0 = +0.0, the pooled item alone
    would give -0.0: sums start from +0.0, so both are +0.0. Same for a tie of the judged document alone
    (a group of one item, reduceat's path)."""
    stats, _ = _stats([3], np.zeros(3), np.array([0.0, NOT_IN_POOL, NOT_IN_POOL]))
    assert stats.source._pooled is not None
    got = stats.group_sum("negative_zero", _negative_zero, False)
    assert got.tolist() == [0.0] and not np.signbit(got[0])
    alone, _ = _stats([3], np.array([1.0, 0.0, 0.0]), np.array([0.0, NOT_IN_POOL, NOT_IN_POOL]))
    assert not np.signbit(alone.group_sum("negative_zero", _negative_zero, False)).any()


def test_segment_sums_ignore_where_zeros_sit():
    """Sorted (non-integer) segments are added one after the other from +0.0, so zeros inserted anywhere
    leave the bits unchanged; reduceat's pairwise order (16 values of both signs here, zeros in the middle
    once sorted) gives other bits."""
    rng = np.random.default_rng(2)
    values = (rng.random(16) - 0.5) / 3.0
    padded = np.insert(values, [0, 3, 3, 9, 16], 0.0)
    sums = [groups_module.segment_reduce(v, np.array([0])) for v in (values, padded)]
    assert sums[0].view(np.int64)[0] == sums[1].view(np.int64)[0]
    pairwise = [np.add.reduceat(np.sort(v), [0])[0] for v in (values, padded)]
    assert pairwise[0] != pairwise[1]   # the data does tell the two orders apart
    total = 0.0
    for v in np.sort(values):   # one after the other, ascending: the documented order
        total += v
    assert sums[0][0] == total


@pytest.mark.parametrize("share", [0.3, 0.9])
def test_deep_run_against_a_shallow_pool(share):
    """Long lists where most (share 0.9) or few (0.3) items lie outside the pool: both paths, same bits."""
    rng = np.random.default_rng(int(share * 10))
    lengths = [200] * 30
    keys = rng.integers(0, 20, 6000).astype(np.float64)
    grades = np.where(rng.random(6000) < share, NOT_IN_POOL, rng.choice([0.0, 1.0, 2.0, UNJUDGED_IN_POOL], 6000))
    stats, item_query = _stats(lengths, keys, grades)
    _check(stats, item_query)
