"""Fixed tie orders (ties="input", "trec_eval", "random") on their fast paths, against independent sources.

* ``order_within_groups`` (one sort of a combined bit-field key) against ``np.lexsort``, on every path: exact
  key, truncated key (random hashes) with colliding runs resorted, the lexsort fallbacks, equal secondary
  values, one big group, groups of one item, descending order.
* ``TieStats.singletons`` (the ``all_singletons`` shortcuts) against the generic group code on the same
  ordering (``TieStats._from_starts`` with every item starting a group), empty queries included.
* ``within_query_exclusive_cumsum`` and the one-slot ``position_sum`` against plain loops / formulas.
* ``evaluate_matrix(ties="random")`` against the brute-force oracle on the order the seed defines.
"""

from __future__ import annotations

import math
import os
import sys

import numpy as np
import pytest

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import oracle  # noqa: E402

tierank = pytest.importorskip("tierank")
from tierank.data.ranked import RankedLists  # noqa: E402
from tierank.measures import parse_measures  # noqa: E402
from tierank.measures.ap import harmonic  # noqa: E402
from tierank.measures.dcg import jk_discount, log2_discount  # noqa: E402
from tierank.ties.groups import (Judged, TieStats, position_prefix, position_sum,  # noqa: E402
                                 within_query_exclusive_cumsum)
from tierank.ties.policy import order_within_groups, order_within_groups_by_words, random_tiebreak  # noqa: E402


# ----------------------------------------------------------------------------------- order_within_groups

def _reference(sizes, secondary, descending):
    """np.lexsort, the definition (descending: ~v reverses integers without overflow)."""
    v = secondary
    if descending:
        v = ~v if v.dtype.kind in "iub" else -v
    return np.lexsort((v, np.repeat(np.arange(len(sizes)), sizes)))


def _check(sizes, secondary, descending):
    before = secondary.copy()
    got = order_within_groups(sizes, secondary, descending=descending)
    got = np.arange(len(secondary)) if got is None else got
    np.testing.assert_array_equal(got, _reference(sizes, secondary, descending),
                                  err_msg=f"sizes={sizes.tolist()} secondary={secondary.tolist()}")
    np.testing.assert_array_equal(secondary, before)   # the input is left alone


def _case(kind, rng):
    """(sizes, secondary) for one path of order_within_groups."""
    sizes = rng.integers(1, 9, 300)
    n = int(sizes.sum())
    if kind == "permutation":            # unique secondary (trec_eval ranks, input rows): exact key
        return sizes, rng.permutation(n).astype(np.int64) * 7 - 1000
    if kind == "singletons":              # every group one item: nothing to sort
        return np.ones(200, dtype=np.int64), rng.permutation(200).astype(np.int64)
    if kind == "one_group":               # one big tie
        return np.array([1000]), rng.permutation(1000).astype(np.int64)
    if kind == "duplicates":              # equal secondary values inside a group: position order
        return sizes, rng.integers(0, 3, n).astype(np.int64)
    if kind == "hash":                    # random hashes: the key is truncated
        return sizes, random_tiebreak(int(rng.integers(0, 1000)), np.arange(n))
    if kind == "collide":                 # truncated keys collide in a few runs, resorted by full value
        sizes = rng.integers(2, 7, 300)
        s = rng.integers(-2**62, 2**62, int(sizes.sum()), dtype=np.int64)
        first = np.concatenate(([0], np.cumsum(sizes)[:-1]))
        pick = first[rng.random(len(first)) < 0.2]
        s[pick + 1] = s[pick] + rng.choice([-1, 1], len(pick))   # the same high bits, almost surely
        return sizes, s
    if kind == "collide_most":            # most keys collide: lexsort on everything
        sizes = rng.integers(2, 7, 100)
        n = int(sizes.sum())
        return sizes, (rng.integers(0, 2, n) << 62) - rng.integers(0, 4, n)
    if kind == "uint64":
        return sizes, rng.integers(0, 2**64 - 1, n, dtype=np.uint64)
    if kind == "int32":
        return sizes, rng.integers(-5, 5, n).astype(np.int32)
    if kind == "bool":
        return sizes, rng.random(n) < 0.5
    if kind == "float":                   # not an integer: lexsort
        return sizes, np.round(rng.random(n), 1)
    raise ValueError(kind)


KINDS = ["permutation", "singletons", "one_group", "duplicates", "hash", "collide", "collide_most",
         "uint64", "int32", "bool", "float"]


@pytest.mark.parametrize("descending", [False, True])
@pytest.mark.parametrize("kind", KINDS)
def test_order_within_groups_is_lexsort(kind, descending):
    rng = np.random.default_rng(2 * KINDS.index(kind) + descending)
    for _ in range(5):
        _check(*_case(kind, rng), descending)


def test_order_within_groups_small_random():
    rng = np.random.default_rng(7)
    for _ in range(1500):
        sizes = rng.integers(1, 6, int(rng.integers(0, 12)))
        span = int(rng.choice([2, 50, 2**40, 2**63 - 1]))
        s = rng.integers(-span, span, int(sizes.sum()), dtype=np.int64)
        for descending in (False, True):
            _check(sizes, s, descending)


@pytest.mark.parametrize("seed", range(6))
@pytest.mark.parametrize("descending", [False, True])
def test_order_by_words_is_lexsort(seed, descending):
    # words of 8-byte-prefixed ids: few distinct first words, so many runs need the later words
    rng = np.random.default_rng(seed)
    sizes = rng.integers(1, 12, 200)
    n = int(sizes.sum())
    words = [rng.integers(0, 4, n).astype(np.uint64) << np.uint64(60),
             rng.integers(0, 3, n).astype(np.uint64), rng.integers(0, 2 ** 64 - 1, n, dtype=np.uint64)]
    group = np.repeat(np.arange(len(sizes)), sizes)
    keys = [np.invert(w) if descending else w for w in words]
    expected = np.lexsort((*keys[::-1], group))
    got = order_within_groups_by_words(sizes, words, descending=descending)
    np.testing.assert_array_equal(np.arange(n) if got is None else got, expected)
    one = order_within_groups_by_words(sizes, words[:1], descending=descending)
    np.testing.assert_array_equal(np.arange(n) if one is None else one,
                                  np.lexsort((np.invert(words[0]) if descending else words[0], group)))


def test_order_within_groups_identity_and_errors():
    sizes = np.full(5, 4)
    s = np.arange(20, dtype=np.int64)
    assert order_within_groups(sizes, s) is None
    assert order_within_groups(sizes, s[::-1].copy(), descending=True) is None
    assert order_within_groups(np.zeros(0, np.int64), np.zeros(0, np.int64)) is None
    with pytest.raises(ValueError):
        order_within_groups(np.array([2, 0, 2]), s[:4])
    with pytest.raises(ValueError):
        order_within_groups(np.array([2, 3]), s[:4])


# ---------------------------------------------------------------------------------- singleton statistics

def _ranked(rng, lengths, grade_levels=(0.0, 1.0, 2.0, 3.0)):
    lengths = np.asarray(lengths, dtype=np.int64)
    qptr = np.concatenate(([0], np.cumsum(lengths)))
    n = int(qptr[-1])
    keys = np.concatenate([np.sort(rng.integers(0, 4, k))[::-1] for k in lengths]).astype(np.float64) \
        if n else np.zeros(0)
    grades = rng.choice(grade_levels, n).astype(np.float64)
    judged = np.concatenate([grades[qptr[q]:qptr[q + 1]] for q in range(len(lengths))] + [np.zeros(0)])
    return RankedLists(qptr=qptr, keys=keys, grades=grades, judged_ptr=qptr.copy(), judged=judged,
                       trec_order_fn=lambda: np.arange(n, dtype=np.int64),
                       input_order=np.arange(n, dtype=np.int64))


@pytest.mark.parametrize("lengths", [[5, 0, 3, 1, 7], [0, 0, 4, 6], [1, 1, 1], [40], [3, 0, 0, 2, 9, 1]])
def test_singletons_match_the_generic_groups(lengths):
    rng = np.random.default_rng(sum(lengths) + len(lengths))
    ranked = _ranked(rng, lengths)
    judged = Judged.from_csr(ranked.judged_ptr, ranked.judged)
    fast = TieStats.singletons(ranked, ranked.grades, judged)
    generic = TieStats._from_starts(ranked, ranked.grades, np.ones(len(ranked.grades), dtype=bool), judged)
    assert fast.all_singletons and not generic.all_singletons
    assert fast.n_groups == generic.n_groups
    for attr in ("group_query", "group_size", "group_first", "query_groups", "group_key", "lengths"):
        np.testing.assert_array_equal(getattr(fast, attr), getattr(generic, attr), err_msg=attr)
    np.testing.assert_array_equal(fast.item_group, generic.item_group)

    def f(x, q):
        return np.where(x >= 1, 1.5, 0.25) + (0 if q is None else q)
    for with_query in (False, True):
        np.testing.assert_array_equal(fast.group_sum(("f", with_query), f, with_query),
                                      generic.group_sum(("f", with_query), f, with_query))
        np.testing.assert_allclose(fast.before(("f", with_query), f, with_query),
                                   generic.before(("f", with_query), f, with_query), rtol=1e-14, atol=0)
    for rel in (1.0, 2.5):
        for a, b in zip(fast.relevant_sum(rel), generic.relevant_sum(rel)):
            np.testing.assert_array_equal(a, b)
    groups = rng.permutation(fast.n_groups)[: max(1, fast.n_groups // 2)] if fast.n_groups else np.zeros(0, int)
    for a, b in zip(fast.group_grades(groups), generic.group_grades(groups)):
        np.testing.assert_array_equal(a, b)
    nonempty = fast.lengths > 0
    for _ in range(5):
        K = np.where(nonempty, rng.integers(1, np.maximum(fast.lengths, 1) + 1), 1)
        cf, cg = fast.cut(K), generic.cut(K)
        for attr in ("group", "t", "m", "n"):
            np.testing.assert_array_equal(getattr(cf, attr)[nonempty], getattr(cg, attr)[nonempty], attr)
        K0 = np.where(nonempty, K, 0)
        np.testing.assert_array_equal(fast.expected_top_sum(("b", 1.0), lambda x, _q: x >= 1, K0),
                                      generic.expected_top_sum(("b", 1.0), lambda x, _q: x >= 1, K0))


MEASURES = ["AP", "AP@3", "AP(denom='retrieved')@3", "AP(denom='min_k_R')@4", "WAP@3", "nDCG", "nDCG@3",
            "DCG(gain='exp2', discount='jk')@4", "P@2", "R@4", "F1@3", "Success@2", "Rprec", "RR", "RR@2",
            "ERR", "ERR@3", "ACG@3", "NumRelRet"]


@pytest.mark.parametrize("measure", MEASURES)
def test_singleton_kernels_match_the_generic_groups(measure):
    """Every kernel on the all-singletons statistics equals the same kernel on generic one-item groups."""
    rng = np.random.default_rng(len(measure))
    ranked = _ranked(rng, rng.integers(1, 12, 30))
    judged = Judged.from_csr(ranked.judged_ptr, ranked.judged)
    fast = TieStats.singletons(ranked, ranked.grades, judged)
    generic = TieStats._from_starts(ranked, ranked.grades, np.ones(len(ranked.grades), dtype=bool), judged)
    m = next(iter(parse_measures([measure]).values()))
    np.testing.assert_allclose(m.family.kernel(fast, m), m.family.kernel(generic, m), rtol=1e-13, atol=1e-15)


# ------------------------------------------------------------------------------ prefix sums and positions

def _loop_exclusive(values, query):
    out, acc, last = [], 0, None
    for v, q in zip(values.tolist(), query.tolist()):
        acc = 0 if q != last else acc
        out.append(acc)
        acc += v
        last = q
    return np.array(out, dtype=np.float64)


@pytest.mark.parametrize("kind", ["int", "bool", "float_integral", "float_huge", "float"])
def test_within_query_exclusive_cumsum(kind):
    rng = np.random.default_rng(3)
    lengths = np.array([0, 4, 0, 0, 7, 1, 0, 12, 3])
    query = np.repeat(np.arange(len(lengths)), lengths)
    starts = np.concatenate(([0], np.cumsum(lengths)))[:-1]
    n = len(query)
    values = {"int": rng.integers(-5, 9, n), "bool": rng.random(n) < 0.5,
              "float_integral": rng.integers(-5, 9, n).astype(np.float64),
              "float_huge": rng.integers(1, 9, n).astype(np.float64) * 2.0 ** 52,
              "float": rng.random(n) * 3}[kind]
    got = within_query_exclusive_cumsum(values, query, starts)
    ref = _loop_exclusive(values.astype(object) if kind == "float_huge" else values, query)
    assert got.dtype == np.float64
    if kind == "float":
        np.testing.assert_allclose(got, ref, rtol=1e-15, atol=1e-15)
    else:
        np.testing.assert_array_equal(got, ref)


@pytest.mark.parametrize("kind", ["harmonic", "log2", "jk"])
def test_position_sum_one_slot(kind):
    start = np.array([0, 1, 2, 5, 99, 12345])
    f = {"harmonic": lambda i: 1.0 / i, "log2": lambda i: 1.0 / math.log2(i + 1),
         "jk": lambda i: 1.0 if i == 1 else 1.0 / math.log2(i)}[kind]
    ref = np.array([f(int(s) + 1) for s in start])
    fn = {"harmonic": harmonic, "log2": log2_discount, "jk": jk_discount}[kind]
    np.testing.assert_allclose(position_sum(fn, start, np.ones_like(start)), ref, rtol=1e-15)
    # mixed with longer runs: the one-slot entries are unchanged, the others use the prefix sums
    count = np.array([1, 3, 1, 2, 1, 4])
    got = position_sum(fn, start, count)
    prefix = position_prefix(fn, int((start + count).max()))
    many = count > 1
    np.testing.assert_allclose(got[~many], ref[~many], rtol=1e-15)
    np.testing.assert_allclose(got[many], (prefix[start + count] - prefix[start])[many].astype(float), rtol=1e-15)


# ------------------------------------------------------------------------- end to end against the oracle

@pytest.mark.parametrize("seed", [0, 5, 2**40 + 1])
@pytest.mark.parametrize("measure", ["AP", "AP@3", "nDCG@3", "P@2", "RR", "ERR", "AP(denom='retrieved')@4",
                                     "WAP@3", "R@3", "nDCG(gain='exp2')"])
def test_random_mode_against_oracle(measure, seed):
    """ties='random' is the plain metric of the order (key desc, hash of (seed, flat index) asc)."""
    rng = np.random.default_rng(seed % 1000 + len(measure))
    rel = rng.integers(0, 4, (6, 9))
    scores = rng.integers(0, 3, (6, 9)).astype(float)
    scores[0] = 1.0                    # one big tie
    scores[1] = np.arange(9)           # no tie
    got = tierank.evaluate_matrix(rel, scores=scores, measures=[measure], ties="random",
                                  seed=seed).per_query[measure].to_numpy()
    n_rows, n_cols = rel.shape
    for r in range(n_rows):
        h = random_tiebreak(seed, r * n_cols + np.arange(n_cols))
        order = sorted(range(n_cols), key=lambda c: (-scores[r, c], int(h[c])))
        assert abs(got[r] - oracle.plain_value(measure, [rel[r, c] for c in order])) <= 1e-12


@pytest.mark.parametrize("mode", ["input", "trec_eval"])
@pytest.mark.parametrize("measure", MEASURES)
def test_fixed_modes_big_tie_and_no_tie_against_oracle(measure, mode):
    rng = np.random.default_rng(len(measure))
    rel = rng.integers(0, 3, (3, 11))
    scores = np.vstack([np.full(11, 2.0), np.arange(11.0), rng.integers(0, 2, 11)])
    got = tierank.evaluate_matrix(rel, scores=scores, measures=[measure], ties=mode).per_query[measure]
    for r in range(3):
        want = oracle.fixed_value(measure, list(rel[r]), list(scores[r]), mode)
        assert abs(got.iloc[r] - want) <= 1e-12, (r, got.iloc[r], want)


@pytest.mark.parametrize("block", [1, 2, 5, 64])
def test_group_sums_by_blocks_of_items_are_plain_reduceat(block, monkeypatch):
    """Per-group sums of grade functions, computed over blocks of whole groups, equal one reduceat."""
    from tierank.ties import groups as groups_module
    rng = np.random.default_rng(block)
    lengths = rng.integers(0, 30, 25)
    qptr = np.concatenate(([0], np.cumsum(lengths)))
    keys = rng.integers(0, 4, int(qptr[-1])).astype(np.float64)
    order = np.lexsort((-keys, np.repeat(np.arange(len(lengths)), lengths)))
    grades = rng.choice([0.0, 1.0, 2.5, 3.0], size=len(keys))
    ranked = RankedLists(qptr=qptr, keys=keys[order], grades=grades, judged_ptr=qptr, judged=grades,
                         trec_order_fn=lambda: np.arange(len(keys)), input_order=np.arange(len(keys)))
    stats = TieStats.from_ranked(ranked, Judged.from_csr(qptr, grades))
    item_query = np.repeat(np.arange(len(lengths)), lengths)
    starts = np.flatnonzero(np.concatenate(([True], (ranked.keys[1:] != ranked.keys[:-1])
                                            | np.isin(np.arange(1, len(keys)), qptr))))
    monkeypatch.setattr(groups_module, "_ITEM_BLOCK", block)
    for with_query in (False, True):
        def f(x, q):
            return x * (1.0 if q is None else 1.0 + q)   # uses each item's own query when given
        got = stats.group_sum(("blocked", with_query), f, with_query)
        expected = np.add.reduceat(f(grades, item_query if with_query else None), starts)
        np.testing.assert_array_equal(got, expected)


@pytest.mark.parametrize("seed", range(6))
def test_shallow_dcg_cutoffs_read_only_the_top_groups(seed):
    """nDCG@k evaluated alone (only the groups above the cut are read) equals nDCG@k evaluated after
    the full list's sums were cached, and the brute-force oracle."""
    rng = np.random.default_rng(seed)
    relevance = rng.choice([0, 0, 0, 1, 2, 3], size=(6, 10)).astype(float)
    scores = rng.integers(0, 5, size=(6, 10)) / (3.0 if seed % 2 else 1)   # floats: sorted; ints: counted
    for k in (1, 3, 7):
        alone = tierank.evaluate_matrix(relevance, scores=scores, measures=[f"nDCG@{k}", f"DCG@{k}"]).per_query
        after = tierank.evaluate_matrix(relevance, scores=scores, measures=["nDCG", "DCG", f"nDCG@{k}", f"DCG@{k}"]).per_query
        np.testing.assert_allclose(alone.to_numpy(), after[[f"nDCG@{k}", f"DCG@{k}"]].to_numpy(), rtol=1e-13, atol=0)
        for row in range(len(relevance)):
            expected = oracle.tie_aware(f"nDCG@{k}", relevance[row], scores[row])[0]
            assert alone[f"nDCG@{k}"].iloc[row] == pytest.approx(expected, rel=1e-12, abs=1e-15)
