"""tierank.engine.blocked: evaluate_matrix block by block of rows, and the top-k fast path.

* blocked == unblocked (tierank.evaluate_matrix) to 1e-12 for every measure and tie mode, bounds included,
  with and without masks; the random order does not depend on the block size;
* the top-k path (np.partition to the kmax-th key, boundary tie kept whole, judged set = whole row) ==
  the full sort to 1e-12, and both == the brute-force oracle;
* float32, float64, integer and boolean keys; integers float64 cannot hold exactly are refused.
"""

from __future__ import annotations

import math
import os
import sys
import warnings

import numpy as np
import pytest

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import oracle  # noqa: E402

import tierank  # noqa: E402
from tierank import InputError, TierankWarning, parse_measure  # noqa: E402
from tierank.engine.blocked import block_rows, evaluate_matrix_blocked, topk_plan  # noqa: E402
from tierank.engine.options import Options  # noqa: E402
from tierank.ties.policy import random_tiebreak  # noqa: E402
from tierank.measures.radius import radius_measure  # noqa: E402

TOL = 1e-12
FIXED_AND_EXPECTED = ("expected", "optimistic", "pessimistic", "input", "trec_eval")
MODES = FIXED_AND_EXPECTED + ("random",)

# measures the top-k path serves (every cutoff-based family, judged-only counts)
TOPK_MEASURES = [
    "P@1", "P@4", "P(clip=True)@12", "P(rel=2)@3", "R@4", "R(rel=0.5)@9", "F1@3", "F1(clip=True)@12",
    "Success@1", "Success@5", "AP@4", "AP(denom='retrieved')@3", "AP(denom='retrieved')@9",
    "AP(denom='min_k_R')@5", "WAP@4", "WAP(denom='R')@6", "RR@2", "RR(rel=2)@7", "DCG@4",
    "DCG(gain='exp2', discount='jk')@5", "nDCG@4", "nDCG(gains={1: 1, 2: 5})@8", "ERR@3", "ERR(max_grade=5)@6",
    "ACG@4", "ACG(clip=True)@12", "NumQ", "NumRel", "NumRel(rel=2)",
]
# whole-list measures: full sort only
WHOLE_MEASURES = ["AP", "AP(denom='retrieved')", "RR", "DCG", "nDCG", "ERR", "Rprec", "NumRet", "NumRelRet"]


def blocked(relevance, keys, measures, *, distances=False, block_size=None, memory=None, topk=None, mask=None,
            **kw):
    parsed = {m: parse_measure(m) if isinstance(m, str) else m for m in measures}
    sizes = {"block_size": block_size, "topk": topk, "mask": mask, **({"memory": memory} if memory is not None else {})}
    return evaluate_matrix_blocked(relevance, keys, Options.checked(parsed, trec9_measures=False, **kw),
                                   keyname="distances" if distances else "scores", lower_is_better=distances, **sizes)


def assert_same(a, b, tol=TOL, what=""):
    for name in ("per_query", "lower", "upper"):
        fa, fb = getattr(a, name), getattr(b, name)
        assert (fa is None) == (fb is None), name
        if fa is None:
            continue
        assert list(fa.index) == list(fb.index), f"{what} {name} index"
        x, y = fa.to_numpy(dtype=float), fb.to_numpy(dtype=float)
        err = np.abs(x - y)
        bad = np.argwhere(~(err <= tol))
        assert bad.size == 0, (f"{what} {name}: {fa.columns[bad[0][1]]} row {bad[0][0]}: "
                               f"{x[tuple(bad[0])]!r} != {y[tuple(bad[0])]!r}")
    for m in a.mean:
        assert abs(a.mean[m] - b.mean[m]) <= tol * max(1.0, abs(b.mean[m])), m


def gen(rng, n_rows, n_cols, *, key_range=4, grades=(0, 0, 1, 2, 3)):
    rel = rng.choice(np.array(grades), size=(n_rows, n_cols))
    keys = rng.integers(0, key_range, size=(n_rows, n_cols)).astype(np.float64)
    return rel, keys


class Blocked:
    """evaluate_matrix with a fixed block size / top-k choice, for the oracle harness."""

    def __init__(self, **kw):
        self.kw = kw

    def evaluate_matrix(self, relevance, scores=None, distances=None, measures=(), ties="expected",
                        bounds=False, seed=0, mask=None):
        keys = scores if scores is not None else distances
        return blocked(relevance, keys, measures, distances=distances is not None, ties=ties, bounds=bounds,
                       seed=seed, mask=mask, **self.kw)


# ------------------------------------------------------------------------------ blocked == unblocked

@pytest.mark.parametrize("ties", FIXED_AND_EXPECTED)
def test_blocked_equals_unblocked(ties):
    rng = np.random.default_rng(FIXED_AND_EXPECTED.index(ties))
    measures = TOPK_MEASURES + WHOLE_MEASURES
    for n_rows, n_cols, key_range in ((7, 12, 3), (5, 30, 6), (4, 9, 1)):
        rel, keys = gen(rng, n_rows, n_cols, key_range=key_range)
        want = tierank.evaluate_matrix(rel, scores=keys, measures=measures, ties=ties, bounds=True)
        for bs in (1, 3, n_rows + 5):
            for topk in (None, False):
                got = blocked(rel, keys, measures, ties=ties, bounds=True, block_size=bs, topk=topk)
                assert_same(got, want, what=f"{ties} block_size={bs} topk={topk}")
        got = blocked(rel, -keys, measures, distances=True, ties=ties, bounds=True, block_size=2)
        assert_same(got, want, what=f"{ties} distances")


@pytest.mark.parametrize("ties", FIXED_AND_EXPECTED)
def test_blocked_equals_unblocked_with_mask(ties):
    rng = np.random.default_rng(40 + FIXED_AND_EXPECTED.index(ties))
    rel, keys = gen(rng, 8, 15, key_range=3)
    mask = rng.random((8, 15)) < 0.7
    mask[2] = False                  # an empty row: left out with a warning
    mask[5, :2] = True
    mask[5, 2:] = False              # a row shorter than most cutoffs
    keys[~mask] = np.nan             # padding may hold anything
    measures = TOPK_MEASURES + WHOLE_MEASURES
    with pytest.warns(TierankWarning, match="1 row"):
        want = tierank.evaluate_matrix(rel, scores=keys, measures=measures, ties=ties, bounds=True, mask=mask)
    for bs in (1, 2, 8):
        for topk in (None, False):
            with pytest.warns(TierankWarning, match="1 row"):
                got = blocked(rel, keys, measures, ties=ties, bounds=True, mask=mask, block_size=bs, topk=topk)
            assert_same(got, want, what=f"{ties} mask block_size={bs} topk={topk}")
    assert 2 not in list(got.per_query.index)


def test_random_order_does_not_depend_on_blocks_or_the_path():
    rng = np.random.default_rng(7)
    rel, keys = gen(rng, 9, 40, key_range=3)
    measures = TOPK_MEASURES
    base = blocked(rel, keys, measures, ties="random", bounds=True, block_size=9, topk=False, seed=5)
    for bs in (1, 4):
        for topk in (None, False):
            assert_same(blocked(rel, keys, measures, ties="random", bounds=True, block_size=bs, topk=topk,
                                seed=5), base, tol=0.0 if topk is False else TOL)
    other = blocked(rel, keys, measures, ties="random", bounds=True, seed=6)
    assert not np.array_equal(other.per_query.to_numpy(), base.per_query.to_numpy())
    # random_tiebreak: a function of (seed, index) only
    idx = np.arange(1000, 2000)
    np.testing.assert_array_equal(random_tiebreak(3, idx)[10:20], random_tiebreak(3, idx[10:20]))
    assert len(np.unique(random_tiebreak(3, idx))) == 1000
    assert random_tiebreak(-1, idx).dtype == np.int64


# ------------------------------------------------------------------------------- top-k fast path

def _topk_cases(rng):
    # a big boundary tie, k inside / beyond it, k > n, every item tied, distinct keys, +-inf
    yield gen(rng, 6, 25, key_range=3)
    yield gen(rng, 4, 10, key_range=1)
    yield gen(rng, 5, 30, key_range=30)
    rel, keys = gen(rng, 5, 12, key_range=4)
    keys[rng.random(keys.shape) < 0.3] = np.inf
    keys[rng.random(keys.shape) < 0.3] = -np.inf
    yield rel, keys
    rel, keys = gen(rng, 3, 6, key_range=2, grades=(0, 0.5, 1.25))
    yield rel, keys


@pytest.mark.parametrize("ties", MODES)
def test_topk_path_equals_full_sort(ties):
    rng = np.random.default_rng(100 + MODES.index(ties))
    for rel, keys in _topk_cases(rng):
        for measures in (TOPK_MEASURES, ["P@2"], ["nDCG@3", "AP(denom='retrieved')@2"], ["NumQ", "NumRel"]):
            full = blocked(rel, keys, measures, ties=ties, bounds=True, topk=False, seed=1)
            fast = blocked(rel, keys, measures, ties=ties, bounds=True, topk=True, block_size=2, seed=1)
            assert_same(fast, full, what=f"{ties} {measures[:2]}")
        mask = rng.random(keys.shape) < 0.6
        mask[:, 0] = True
        full = blocked(rel, keys, TOPK_MEASURES, ties=ties, bounds=True, topk=False, mask=mask, seed=1)
        fast = blocked(rel, keys, TOPK_MEASURES, ties=ties, bounds=True, topk=True, mask=mask, seed=1)
        assert_same(fast, full, what=f"{ties} masked")


def test_topk_path_keeps_radius_items():
    rng = np.random.default_rng(9)
    rel = rng.integers(0, 2, size=(6, 40))
    dist = rng.integers(0, 9, size=(6, 40)).astype(np.uint8)
    measures = ["P@2", radius_measure("P", 3), radius_measure("R", 5), radius_measure("P", 0, empty="skip")]
    for ties in MODES:
        full = blocked(rel, dist, measures, distances=True, ties=ties, bounds=True, topk=False)
        fast = blocked(rel, dist, measures, distances=True, ties=ties, bounds=True, topk=True, block_size=4)
        for name in ("per_query", "lower", "upper"):
            np.testing.assert_allclose(getattr(fast, name).to_numpy(), getattr(full, name).to_numpy(),
                                       atol=TOL, rtol=0)


def test_topk_plan():
    p = [parse_measure(m) for m in ("P@10", "nDCG@100", "AP@5", "NumQ")]
    assert topk_plan(p) == (100, None)
    assert topk_plan(p + [radius_measure("P", 2), radius_measure("R", 3)]) == (100, 3)
    for whole in WHOLE_MEASURES:
        assert topk_plan(p + [parse_measure(whole)]) is None, whole
    with pytest.raises(InputError, match="topk=True"):
        blocked([[1, 0]], [[1, 2]], ["AP"], topk=True)


@pytest.mark.parametrize("template", ["P@{k}", "AP(denom='retrieved')@{k}", "nDCG@{k}", "ERR@{k}", "WAP@{k}",
                                      "Success@{k}", "RR@{k}", "R@{k}", "F1(clip=True)@{k}"])
def test_topk_and_blocks_against_the_oracle(template):
    rng = np.random.default_rng(sum(map(ord, template)))
    for n in (3, 5, 7):
        for k in sorted({1, n - 1, n + 1, int(rng.integers(1, n + 2))}):
            if k < 1:
                continue
            rel = rng.choice([0, 1, 2, 3], size=(4, n))
            keys = rng.integers(0, 3, size=(4, n)).astype(float)
            measure = template.replace("{k}", str(k))
            oracle.check_library(Blocked(block_size=3, topk=True), rel, measure, scores=keys)
            oracle.check_library(Blocked(block_size=1, topk=False), rel, measure, distances=-keys,
                                 modes=("expected", "trec_eval", "random"))


# ---------------------------------------------------------------------------------------- key dtypes

@pytest.mark.parametrize("topk", [None, False])
def test_key_dtypes_give_identical_values(topk):
    rng = np.random.default_rng(3)
    rel = rng.integers(0, 3, size=(5, 50))
    dist = rng.integers(0, 12, size=(5, 50))
    measures = ["AP@10", "nDCG@20", "P@5", "ERR@8"]
    base = blocked(rel, dist.astype(np.float64), measures, distances=True, bounds=True, topk=topk)
    for dt in (np.float32, np.int8, np.int16, np.int32, np.int64, np.uint8, np.uint16, np.uint64):
        # float keys are sorted; integer keys of small range are counted (no sort): the two paths
        # agree to 1e-12, not to the last bit (their sums run in different orders)
        tol = 0.0 if np.dtype(dt).kind == "f" else 1e-12
        got = blocked(rel, dist.astype(dt), measures, distances=True, bounds=True, topk=topk, block_size=2)
        assert_same(got, base, tol=tol, what=str(dt))
        scores = (dist.max() - dist).astype(dt)          # as scores (unsigned: no negative values)
        assert_same(blocked(rel, scores, measures, bounds=True, topk=topk), base, tol=tol, what=f"{dt} scores")
    # float32 keys that differ only beyond float32 precision of float64 keys are genuinely tied in float32
    f32 = (rng.random((5, 50)) * 4).astype(np.float32)
    assert_same(blocked(rel, f32, measures, bounds=True), blocked(rel, f32.astype(np.float64), measures,
                                                                   bounds=True), tol=0.0)
    # booleans (relevance and keys) work too
    assert_same(blocked(rel > 0, dist < 4, measures), blocked((rel > 0).astype(float),
                                                              (dist < 4).astype(float), measures), tol=0.0)


def test_large_integers_stay_exact():
    # 2**60 and 2**60 + 1 are the same float64: as integers they must not tie
    keys = np.array([[2 ** 60, 2 ** 60 + 1, 3]], dtype=np.int64)
    for topk in (None, False):
        res = blocked([[0, 1, 0]], keys, ["P@1", "RR"], topk=topk, bounds=True)
        assert res.per_query.loc[0].tolist() == [1.0, 1.0] and res.lower.loc[0].tolist() == [1.0, 1.0]
        res = blocked([[0, 1, 0]], keys, ["P@1", "RR"], distances=True, topk=topk)
        assert res.per_query.loc[0].tolist() == [0.0, 1 / 3]      # 3, then 2**60, then 2**60 + 1
    extreme = np.array([[np.iinfo(np.int64).min, np.iinfo(np.int64).max, 0]])
    assert blocked([[1, 0, 0]], extreme, ["RR"]).mean["RR"] == 1 / 3
    with pytest.raises(InputError, match=r"distances holds -2\*\*63.*row 0"):
        blocked([[1, 0, 0]], extreme, ["RR"], distances=True)
    keys = np.array([[1, 2], [3, 2 ** 63 + 5]], dtype=np.uint64)
    with pytest.raises(InputError, match=r"distances holds integers beyond the int64 range \(row 1\)"):
        blocked([[1, 0], [0, 1]], keys, ["P@1"], distances=True, block_size=1)
    # masked entries are not looked at
    mask = np.array([[True, True], [True, False]])
    assert blocked([[1, 0], [0, 1]], keys, ["P@1"], distances=True, mask=mask).per_query["P@1"].tolist() == [1, 0]
    # and the radius of the top-k path works on integer keys
    dist = np.array([[0, 2, 2, 3, 7]], dtype=np.int64)
    ms = ["P@1", radius_measure("P", 2.5)]
    assert_same(blocked([[1, 0, 1, 1, 0]], dist, ms, distances=True, topk=True),
                blocked([[1, 0, 1, 1, 0]], dist, ms, distances=True, topk=False), tol=0.0)


# ------------------------------------------------------------------------------- block size, errors

def test_block_rows_from_the_memory_budget():
    assert block_rows(1000, topk=False, block_size=7) == 7
    assert block_rows(10 ** 9, topk=False) == 1
    full = block_rows(10_000, topk=False, memory=1 << 30)
    fast = block_rows(10_000, topk=True, memory=1 << 30)
    fixed = block_rows(10_000, topk=False, ties="trec_eval", memory=1 << 30)
    assert fast > full > fixed >= 1
    assert block_rows(10_000, topk=False, bounds=True, memory=1 << 30) < full
    for bad in (0, -1, 2.5, True):
        with pytest.raises(InputError, match="block_size"):
            block_rows(10, topk=False, block_size=bad)
    with pytest.raises(InputError, match="memory"):
        block_rows(10, topk=False, memory=0)
    rng = np.random.default_rng(0)
    rel, keys = gen(rng, 6, 20)
    assert_same(blocked(rel, keys, ["AP", "P@3"], memory=1, bounds=True),
                blocked(rel, keys, ["AP", "P@3"], bounds=True), tol=0.0)


def test_errors_name_the_global_row():
    rel = np.zeros((6, 4))
    keys = np.zeros((6, 4))
    keys[5, 2] = np.nan
    with pytest.raises(InputError, match=r"scores contains NaN \(row 5\)"):
        blocked(rel, keys, ["P@1"], block_size=2)
    rel[4, 1] = -1
    with pytest.raises(InputError, match=r"relevance contains a negative grade \(row 4\)"):
        blocked(rel, np.zeros((6, 4)), ["P@1"], block_size=2)
    rel[4, 1] = np.inf
    with pytest.raises(InputError, match=r"relevance contains an infinite grade \(row 4\)"):
        blocked(rel, np.zeros((6, 4)), ["P@1"], block_size=3)
    with pytest.raises(InputError, match=r"max_grade.*row 3"):
        blocked([[1, 0]] * 3 + [[4, 0]], np.zeros((4, 2)), ["ERR(max_grade=2)"], block_size=2)
    with pytest.raises(InputError, match="shape mismatch"):
        blocked(np.zeros((2, 3)), np.zeros((2, 4)), ["P@1"])
    with pytest.raises(InputError, match="numeric"):
        blocked([["a", "b"]], [[1, 2]], ["P@1"])
    with pytest.raises(InputError, match="mask must be boolean"):
        blocked([[1, 0]], [[1, 2]], ["P@1"], mask=[[1, 0]])
    with pytest.raises(InputError, match="empty input"):
        blocked(np.zeros((0, 3)), np.zeros((0, 3)), ["P@1"])
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", TierankWarning)
        with pytest.raises(InputError, match="every row is masked out"):
            blocked([[1, 0], [0, 1]], [[1, 2], [2, 1]], ["P@1"], mask=np.zeros((2, 2), bool), block_size=1)


def test_one_dimensional_input_is_one_row():
    res = blocked([1, 0, 1, 0], [0, 1, 1, 3], ["AP", "P@2"], distances=True, bounds=True)
    assert list(res.per_query.index) == [0]
    assert math.isclose(res.mean["AP"], 0.9166666666666666) and res.mean["P@2"] == 0.75


def test_counting_path_equals_sorting_path():
    """Integer keys and grades of small range are counted (no sort); float keys are sorted."""
    from tierank.engine.blocked import histogram_rows
    from test_invariance import MEASURES
    measures = MEASURES + ["P(radius=2)", "R(radius=1)", "WAP(denom='R')@3"]
    rng = np.random.default_rng(11)
    for trial in range(20):
        rows, cols = int(rng.integers(1, 6)), int(rng.integers(1, 15))
        rel = rng.integers(0, 4, size=(rows, cols))
        dist = rng.integers(0, int(rng.integers(1, 6)), size=(rows, cols))
        mask = rng.random((rows, cols)) < 0.8 if trial % 3 == 0 else None
        if mask is not None:
            mask[:, 0] = True
        assert histogram_rows(rel, -dist.astype(np.int64), mask) is not None
        for ties in ("expected", "optimistic", "pessimistic"):
            counted = tierank.evaluate_matrix(rel, distances=dist, measures=measures, ties=ties, bounds=True,
                                              mask=mask)
            sorted_ = tierank.evaluate_matrix(rel, distances=dist.astype(np.float64), measures=measures,
                                              ties=ties, bounds=True, mask=mask)
            assert_same(counted, sorted_, tol=1e-12, what=f"trial {trial} {ties}")
    # not applicable: float grades, or keys of too wide a range
    assert histogram_rows(rel.astype(float), -dist.astype(np.int64), None) is None
    wide = np.array([[0, 10 ** 6]], dtype=np.int64)     # two keys a million apart: too many bins
    assert histogram_rows(np.array([[1, 0]]), wide, None) is None
