"""Named edge cases, each against the brute-force oracle and/or a hand computation written out below, the
oracle's own self-checks, and invalid inputs that must raise tierank.InputError.

Hand computations use positions 1..n (best first); b = relevant (grade >= rel), H_i = relevant in 1..i.
"""

from __future__ import annotations

import math
import os
import sys

import numpy as np
import pytest

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import oracle  # noqa: E402

try:
    import tierank
except ImportError:  # the oracle self-checks below still run
    if os.path.exists(os.path.join(os.path.dirname(__file__), "..", "src", "tierank", "__init__.py")):
        raise
    tierank = None

TOL = 1e-9
MODES = oracle.ALL_MODES
L2 = math.log2


@pytest.fixture
def tr():
    if tierank is None:
        pytest.skip("tierank is not importable yet")
    return tierank


def lib(tr, relevance, measure, mode="expected", **kw):
    """(per_query, lower, upper) of row 0 and the mean, for one measure."""
    kw.setdefault("bounds", True)
    res = tr.evaluate_matrix(relevance, measures=[measure], ties=mode, **kw)
    return (float(res.per_query[measure].iloc[0]), float(res.lower[measure].iloc[0]),
            float(res.upper[measure].iloc[0]), float(res.mean[measure]))


def approx(x):
    return pytest.approx(x, abs=TOL, rel=0)


# ===================================================================== oracle self-checks (no library)


class TestOracleSelf:
    def test_dedupe_equals_full_enumeration(self):
        rng = np.random.default_rng(7)
        for _ in range(150):
            n = int(rng.integers(1, 7))
            g = list(rng.choice([0.0, 1.0, 2.0, 0.5], size=n))
            key = list(rng.integers(0, 3, size=n).astype(float))
            for m in ("AP@3", "AP(denom='retrieved')@2", "nDCG@2", "ERR", "WAP@3", "RR", "P@2"):
                a = oracle.tie_aware(m, g, key, dedupe=True)
                b = oracle.tie_aware(m, g, key, dedupe=False)
                assert a == pytest.approx(b, abs=1e-12)

    def test_distinct_permutations(self):
        from itertools import permutations

        for vals in ([1.0, 0.0, 1.0, 2.0], [0.0] * 4, [3.0], [], [0.5, 0.25, 0.5, 0.5, 0.0]):
            got = oracle.distinct_permutations(vals)
            assert len(got) == len(set(got))
            assert set(got) == set(permutations(vals))

    def test_orderings_count(self):
        # ties {0,1,2} and {3,4}: 3! * 2! = 12 orderings; with grades deduplicated: 3!/(2!1!) * 2!/2! = 3
        g, key = [1, 1, 0, 2, 2], [5, 5, 5, 1, 1]
        assert len(list(oracle.enumerate_orderings(g, key, dedupe=False))) == 12
        assert len(list(oracle.enumerate_orderings(g, key))) == 3
        assert oracle.count_orderings(g, key) == 3

    def test_signed_zero_and_infinities_tie(self):
        assert oracle.tie_groups([0.0, -0.0, math.inf, math.inf, -math.inf, -1]) == [[2, 3], [0, 1], [5], [4]]

    def test_ap_retrieved_cut_tie(self):
        # tie_math.md §2: distances [0,1,1,1,2,2], grades [1,0,0,0,1,0], k = 5.  Ties: {0} {1,2,3} {4,5};
        # slot 5 is one of the last tie.  Relevant in slot 5: AP = (1/1 + 2/5) / 2 = 0.7;
        # otherwise AP = (1/1) / 1 = 1.0.  Each with probability 1/2: mean 0.85.
        keys = [-d for d in (0, 1, 1, 1, 2, 2)]
        g = [1, 0, 0, 0, 1, 0]
        assert oracle.tie_aware("AP(denom='retrieved')@5", g, keys) == approx((0.85, 0.7, 1.0))
        # optimistic (relevant first) is the MIN here, pessimistic the max
        assert oracle.fixed_value("AP(denom='retrieved')@5", g, keys, "optimistic") == approx(0.7)
        assert oracle.fixed_value("AP(denom='retrieved')@5", g, keys, "pessimistic") == approx(1.0)

    def test_ap_retrieved_c6(self):
        # tie_math.md §4 C6: distances [0,0,1,1,1,1], grades [1,0,1,0,0,0], k = 3.
        # relevant at 1 (p 1/2): slot 3 relevant (p 1/4): (1 + 2/3)/2 = 5/6, else 1;
        # relevant at 2 (p 1/2): slot 3 relevant: (1/2 + 2/3)/2 = 7/12, else 1/2.
        # mean = 1/2 (5/24 + 3/4) + 1/2 (7/48 + 3/8) = 71/96 = 0.7395833...; min 1/2, max 1.
        keys = [-d for d in (0, 0, 1, 1, 1, 1)]
        g = [1, 0, 1, 0, 0, 0]
        assert oracle.tie_aware("AP(denom='retrieved')@3", g, keys) == approx((71 / 96, 0.5, 1.0))

    def test_all_tied_ap_rr(self):
        # grades [1,0,1,0], all tied: the 6 position pairs (i<j) of the relevant items, AP = (1/i + 2/j)/2:
        # (1,2) 1, (1,3) 5/6, (1,4) 3/4, (2,3) 7/12, (2,4) 1/2, (3,4) 5/12 -> sum 49/12, mean 49/72.
        # RR: first relevant at 1 w.p. 1/2, at 2 w.p. 1/3, at 3 w.p. 1/6 -> 1/2 + 1/6 + 1/18 = 13/18.
        g, key = [1, 0, 1, 0], [5, 5, 5, 5]
        assert oracle.tie_aware("AP", g, key) == approx((49 / 72, 5 / 12, 1.0))
        assert oracle.tie_aware("RR", g, key) == approx((13 / 18, 1 / 3, 1.0))

    def test_sklearn_counterexample(self):
        # tie_math.md §3: scores [0,2,0], grades [1,0,1]: every ordering gives (1/2 + 2/3)/2 = 7/12.
        assert oracle.tie_aware("AP", [1, 0, 1], [0, 2, 0]) == approx((7 / 12,) * 3)

    def test_plain_definitions(self):
        g = [2, 0, 1, 3]  # ranked order
        # DCG@3 linear/log2 = 2/log2(2) + 0 + 1/log2(4) = 2.5; ideal [3,2,1]: 3 + 2/log2 3 + 1/2
        assert oracle.plain_value("DCG@3", g) == approx(2.5)
        assert oracle.plain_value("nDCG@3", g) == approx(2.5 / (3 + 2 / L2(3) + 0.5))
        # exp2 gains [3,0,1,7], jk discounts [1,1,1/log2 3, 1/2]: DCG = 3 + 0 + 1/log2 3 + 7/2
        assert oracle.plain_value("DCG(gain='exp2', discount='jk')", g) == approx(6.5 + 1 / L2(3))
        # gains={1: 1, 2: 5}: gains [5,0,1,3]; DCG@2 = 5
        assert oracle.plain_value("DCG(gains={1: 1, 2: 5})@2", g) == approx(5.0)
        # ERR, gmax 3: R = [3/8, 0, 1/8, 7/8]; 3/8 + (5/8)(1/3)(1/8) + (5/8)(7/8)(1/4)(7/8)
        assert oracle.plain_value("ERR", g) == approx(3 / 8 + 5 / 192 + 245 / 2048)
        # P@6 = 3/6 (rel=1: 2,1,3 relevant); clip: 3/4; R@2 = 1/3; F1@2 = 2*1/(2+3)
        assert oracle.plain_value("P@6", g) == approx(0.5)
        assert oracle.plain_value("P(clip=True)@6", g) == approx(0.75)
        assert oracle.plain_value("R@2", g) == approx(1 / 3)
        assert oracle.plain_value("F1@2", g) == approx(0.4)
        # AP = (1/1 + 2/3 + 3/4)/3; AP@2 min_k_R: (1/1)/min(2,3); AP@2 retrieved: 1/1
        assert oracle.plain_value("AP", g) == approx((1 + 2 / 3 + 3 / 4) / 3)
        assert oracle.plain_value("AP(denom='min_k_R')@2", g) == approx(0.5)
        assert oracle.plain_value("AP(denom='retrieved')@2", g) == approx(1.0)
        # WAP@4 retrieved: relevant at 1,3,4 with running grade sums 2, 3, 6: (2/1 + 3/3 + 6/4)/3
        assert oracle.plain_value("WAP@4", g) == approx((2 + 1 + 1.5) / 3)
        # ACG@3 = (2+0+1)/3; Rprec: R = 3, H_3 = 2
        assert oracle.plain_value("ACG@3", g) == approx(1.0)
        assert oracle.plain_value("Rprec", g) == approx(2 / 3)
        assert oracle.plain_value("RR(rel=3)", g) == approx(0.25)


# ====================================================================== edge cases against the library


def test_all_items_tied(tr):
    # grades [1,0,1,0], one tie (see TestOracleSelf.test_all_tied_ap_rr): AP mean 49/72, min 5/12, max 1.
    rel = np.array([[1, 0, 1, 0]])
    s = np.array([[5.0, 5.0, 5.0, 5.0]])
    assert lib(tr, rel, "AP", scores=s)[:3] == approx((49 / 72, 5 / 12, 1.0))
    assert lib(tr, rel, "RR", scores=s)[:3] == approx((13 / 18, 1 / 3, 1.0))
    # P@2: E[H_2] = 2 * 2/4 = 1 -> 0.5, min 0, max 1
    assert lib(tr, rel, "P@2", scores=s)[:3] == approx((0.5, 0.0, 1.0))
    # input: [1,0,1,0] -> AP (1 + 2/3)/2 = 5/6; trec_eval: [0,1,0,1] -> (1/2 + 2/4)/2 = 1/2
    assert lib(tr, rel, "AP", "input", scores=s)[0] == approx(5 / 6)
    assert lib(tr, rel, "AP", "trec_eval", scores=s)[0] == approx(0.5)
    for m in ("AP", "nDCG@3", "ERR@2", "AP(denom='retrieved')@3", "WAP@3", "Success@2", "Rprec"):
        oracle.check_library(tr, rel, m, scores=s)


def test_no_ties(tr):
    # scores distinct: every mode gives the plain value and lower == upper.
    # order by score: grades [0,1,1]; AP = (1/2 + 2/3)/2 = 7/12;
    # nDCG@2 = (1/log2 3) / (1 + 1/log2 3)
    rel = np.array([[1, 0, 1]])
    s = np.array([[1.0, 3.0, 2.0]])
    for mode in ("expected", "optimistic", "pessimistic", "input", "trec_eval", "random"):
        assert lib(tr, rel, "AP", mode, scores=s)[:3] == approx((7 / 12,) * 3)
        nd = (1 / L2(3)) / (1 + 1 / L2(3))
        assert lib(tr, rel, "nDCG@2", mode, scores=s)[:3] == approx((nd,) * 3)
    for m in ("P@2", "RR", "ERR", "WAP@3", "AP(denom='retrieved')@2", "F1@1"):
        oracle.check_library(tr, rel, m, scores=s)


@pytest.mark.parametrize("m", ["P@3", "R@3", "F1@3", "Success@3", "AP", "AP@2", "AP(denom='retrieved')@2",
                               "AP(denom='min_k_R')@2", "RR", "nDCG", "nDCG@2", "DCG@3", "ERR", "ERR@2",
                               "ACG@2", "WAP@3", "WAP(denom='R')@2", "Rprec", "NumRel", "NumRelRet"])
def test_no_relevant_items(tr, m):
    # every grade 0: all these are 0 (empty denominators give 0; IDCG = 0 -> nDCG 0; gmax 0 -> ERR 0)
    rel = np.zeros((2, 4))
    s = np.array([[1.0, 1.0, 0.0, 2.0], [0.0, 0.0, 0.0, 0.0]])
    for mode in MODES:
        res = tr.evaluate_matrix(rel, scores=s, measures=[m], ties=mode, bounds=True)
        for frame in (res.per_query, res.lower, res.upper):
            assert list(frame[m].to_numpy(float)) == approx([0.0, 0.0])
        assert float(res.mean[m]) == approx(0.0)
    # but the counts still count: NumQ 2 (sum over rows), NumRet 8
    assert lib(tr, rel, "NumQ", scores=s)[3] == approx(2.0)
    assert lib(tr, rel, "NumRet", scores=s)[3] == approx(8.0)


def test_single_item(tr):
    # n = 1, grade 1: P@1 = 1, P@3 = 1/3, P(clip=True)@3 = 1, R@3 = 1, F1@3 = 2/(3+1), AP = RR = nDCG = 1,
    # DCG = 1/log2 2 = 1, ERR = (2^1 - 1)/2^1 = 1/2, ERR(max_grade=4) = 1/16, ACG@2 = 1/2, Rprec = 1
    want = {"P@1": 1.0, "P@3": 1 / 3, "P(clip=True)@3": 1.0, "R@3": 1.0, "F1@3": 0.5, "AP": 1.0, "RR": 1.0,
            "nDCG": 1.0, "DCG": 1.0, "ERR": 0.5, "ERR(max_grade=4)": 1 / 16, "ACG@2": 0.5, "Rprec": 1.0,
            "AP(denom='min_k_R')@3": 1.0, "WAP@2": 1.0, "NumRet": 1.0}
    for m, v in want.items():
        for mode in MODES:
            assert lib(tr, np.array([[1]]), m, mode, scores=np.array([[0.3]])) == approx((v, v, v, v)), (m, mode)
    # 1-D arrays are one query
    res = tr.evaluate_matrix(np.array([2.0]), distances=np.array([0.0]), measures=["DCG(gain='exp2')"],
                             bounds=True)
    assert list(res.per_query.index) == [0]
    assert float(res.per_query["DCG(gain='exp2')"].iloc[0]) == approx(3.0)


def test_one_dimensional_input(tr):
    rel = np.array([1, 0, 2, 0, 1])
    d = np.array([3, 1, 1, 0, 3])
    for m in ("nDCG@2", "AP(denom='retrieved')@2", "ERR@3", "P@4"):
        oracle.check_library(tr, rel, m, distances=d)


def test_k_equals_one(tr):
    # all tied [1,0,0,1]: the top item is relevant w.p. 1/2 -> P@1 = Success@1 = RR@1 = 0.5
    rel = np.array([[1, 0, 0, 1]])
    s = np.zeros((1, 4))
    for m in ("P@1", "Success@1", "RR@1", "AP(denom='retrieved')@1", "AP(denom='min_k_R')@1"):
        assert lib(tr, rel, m, scores=s)[:3] == approx((0.5, 0.0, 1.0)), m
    # AP@1 (denom R = 2): 1/2 * (1/1)/2 = 0.25
    assert lib(tr, rel, "AP@1", scores=s)[:3] == approx((0.25, 0.0, 0.5))
    # graded [2,0,1] tied: E[gain at 1] = 1, IDCG@1 = 2 -> nDCG@1 = 0.5 (min 0, max 1)
    assert lib(tr, np.array([[2, 0, 1]]), "nDCG@1", scores=np.zeros((1, 3)))[:3] == approx((0.5, 0.0, 1.0))
    for m in ("nDCG@1", "ERR@1", "WAP@1", "ACG@1", "F1@1", "R@1"):
        oracle.check_library(tr, np.array([[2, 0, 1, 1], [0, 0, 3, 1]]), m, scores=np.array([[1, 1, 1, 0],
                                                                                             [2, 0, 2, 2]]))


def test_k_equals_n_and_beyond(tr):
    # n = 3, grades [1,1,0] (order irrelevant at k >= n for these):
    # P@5 = 2/5; P(clip=True)@5 = 2/3; R@5 = 1; F1@5 = 2*2/(5+2) = 4/7; F1(clip=True)@5 = 4/(3+2) = 0.8;
    # P@3 = 2/3; AP@3 = AP@7 = AP (k >= n); ACG@5 of grades [2,0,1] = 3/5, clip: 1
    rel = np.array([[1, 1, 0]])
    s = np.array([[0.0, 0.0, 0.0]])
    for m, v in {"P@5": 0.4, "P(clip=True)@5": 2 / 3, "R@5": 1.0, "F1@5": 4 / 7, "F1(clip=True)@5": 0.8,
                 "P@3": 2 / 3, "Success@9": 1.0, "NumRelRet": 2.0}.items():
        assert lib(tr, rel, m, scores=s)[:3] == approx((v, v, v)), m
    g = np.array([[2, 0, 1]])
    assert lib(tr, g, "ACG@5", scores=s)[:3] == approx((0.6,) * 3)
    assert lib(tr, g, "ACG(clip=True)@5", scores=s)[:3] == approx((1.0,) * 3)
    assert lib(tr, g, "nDCG@7", scores=s)[1:3] == approx(lib(tr, g, "nDCG", scores=s)[1:3])
    for m in ("AP@3", "AP@7", "AP(denom='min_k_R')@9", "AP(denom='retrieved')@4", "nDCG@3", "nDCG@8",
              "ERR@3", "ERR@6", "WAP@5", "RR@10", "DCG@4"):
        oracle.check_library(tr, np.array([[2, 0, 1, 1], [1, 0, 0, 0]]), m,
                             distances=np.array([[0, 1, 0, 1], [1, 1, 1, 1]]))


def test_k_inside_a_tie(tr):
    # tie_math.md §2 example: AP(retrieved)@5 mean 0.85, min 0.7, max 1.0 (see TestOracleSelf);
    # optimistic (relevant first in the cut tie) = 0.7 = the min, pessimistic = 1.0 = the max.
    rel = np.array([[1, 0, 0, 0, 1, 0]])
    d = np.array([[0, 1, 1, 1, 2, 2]])
    m = "AP(denom='retrieved')@5"
    assert lib(tr, rel, m, distances=d)[:3] == approx((0.85, 0.7, 1.0))
    assert lib(tr, rel, m, "optimistic", distances=d)[:3] == approx((0.7, 0.7, 1.0))
    assert lib(tr, rel, m, "pessimistic", distances=d)[:3] == approx((1.0, 0.7, 1.0))
    # input: positions 5, 6 = columns 4, 5 -> relevant at 5 -> 0.7; trec_eval: column 5 first -> 1.0
    assert lib(tr, rel, m, "input", distances=d)[0] == approx(0.7)
    assert lib(tr, rel, m, "trec_eval", distances=d)[0] == approx(1.0)
    # same with graded WAP: grades [2,0,0,0,3,0]: slot 5 relevant: (2/1 + 5/5)/2 = 1.5, else 2/1 = 2
    g = np.array([[2, 0, 0, 0, 3, 0]])
    assert lib(tr, g, "WAP@5", distances=d)[:3] == approx((1.75, 1.5, 2.0))
    # C6 example: mean 71/96, min 1/2, max 1
    rel2 = np.array([[1, 0, 1, 0, 0, 0]])
    d2 = np.array([[0, 0, 1, 1, 1, 1]])
    assert lib(tr, rel2, "AP(denom='retrieved')@3", distances=d2)[:3] == approx((71 / 96, 0.5, 1.0))
    # P@3 there: E[H_3] = 1 + 1/4 -> 5/12
    assert lib(tr, rel2, "P@3", distances=d2)[:3] == approx((5 / 12, 1 / 3, 2 / 3))
    for m in ("AP(denom='retrieved')@3", "AP(denom='retrieved')@4", "WAP@4", "AP@3", "AP(denom='min_k_R')@3",
              "nDCG@3", "ERR@3", "RR@3", "Success@3", "Rprec", "ACG@3", "F1@3"):
        oracle.check_library(tr, np.vstack([rel, rel2, g]), m, distances=np.vstack([d, d2, d]))


def test_graded_and_fractional_grades(tr):
    # grades [0.5, 2.25, 0], scores [1, 1, 0]: top tie {0.5, 2.25}.
    rel = np.array([[0.5, 2.25, 0.0]])
    s = np.array([[1.0, 1.0, 0.0]])
    # nDCG@1: E[gain at 1] = (0.5 + 2.25)/2 = 1.375, IDCG@1 = 2.25 -> 0.6111..., min 0.5/2.25, max 1
    assert lib(tr, rel, "nDCG@1", scores=s)[:3] == approx((1.375 / 2.25, 0.5 / 2.25, 1.0))
    # P(rel=0.5)@2 = 1 whatever the order; P(rel=2)@1 = 1/2 (min 0, max 1); default rel=1: P@1 = 1/2
    assert lib(tr, rel, "P(rel=0.5)@2", scores=s)[:3] == approx((1.0, 1.0, 1.0))
    assert lib(tr, rel, "P(rel=2)@1", scores=s)[:3] == approx((0.5, 0.0, 1.0))
    # ERR@1, gmax 2.25: R(2.25) = 1 - 2^-2.25, R(0.5) = (2^0.5 - 1)/2^2.25; mean of both
    r_hi, r_lo = 1 - 2 ** -2.25, (2 ** 0.5 - 1) / 2 ** 2.25
    assert lib(tr, rel, "ERR@1", scores=s)[:3] == approx(((r_hi + r_lo) / 2, r_lo, r_hi))
    # ACG@2 = (0.5 + 2.25)/2 in every order
    assert lib(tr, rel, "ACG@2", scores=s)[:3] == approx((1.375,) * 3)
    grades = np.array([[0.5, 2.25, 0.0, 0.25, 2.25, 1.5], [1.5, 0.0, 0.5, 0.5, 0.25, 0.0]])
    sc = np.array([[2.0, 2.0, 2.0, 1.0, 1.0, 0.0], [0.0, 0.0, 1.0, 1.0, 1.0, 1.0]])
    for m in ("nDCG@3", "nDCG(gain='exp2')@2", "DCG@4", "ERR@3", "ERR(max_grade=4)@5", "WAP@4",
              "WAP(rel=0.5, denom='R')@3", "AP(rel=0.5)@4", "AP(rel=2)", "P(rel=0.5)@3", "R(rel=2)@2",
              "ACG@4", "Rprec(rel=0.5)", "RR(rel=1.5)", "NumRel(rel=0.25)", "Success(rel=2)@2"):
        oracle.check_library(tr, grades, m, scores=sc)


def test_gains_mapping_non_monotone(tr):
    # gains={2: 0.5}: grade 2 -> 0.5, grade 1 -> 1 (linear default). Tie of grades [1, 2] then [0]:
    # the optimistic order sorts by GAIN, so grade 1 (gain 1) comes first: DCG@1 = 1; pessimistic 0.5;
    # expected 0.75; IDCG@1 = 1 -> nDCG@1 = 0.75, min 0.5, max 1.
    rel = np.array([[1, 2, 0]])
    s = np.array([[3, 3, 1]])
    m = "nDCG(gains={2: 0.5})@1"
    assert lib(tr, rel, m, scores=s)[:3] == approx((0.75, 0.5, 1.0))
    assert lib(tr, rel, m, "optimistic", scores=s)[0] == approx(1.0)
    assert lib(tr, rel, m, "pessimistic", scores=s)[0] == approx(0.5)
    oracle.check_library(tr, rel, m, scores=s)


def test_negative_and_infinite_scores(tr):
    # scores [inf, -inf, inf, 0.0, -0.0]: ties {0, 2} (grades 0, 1), {3, 4} (grades 1, 0; 0.0 == -0.0),
    # then {1} (grade 1).  R = 3.
    rel = np.array([[0, 1, 1, 1, 0]])
    s = np.array([[math.inf, -math.inf, math.inf, 0.0, -0.0]])
    # RR: relevant first in the top tie w.p. 1/2 -> 1/2 * 1 + 1/2 * 1/2 = 0.75
    assert lib(tr, rel, "RR", scores=s)[:3] == approx((0.75, 0.5, 1.0))
    # P@2: exactly one relevant in the top tie -> 1/2; P@4: two ties fully inside -> 2/4
    assert lib(tr, rel, "P@2", scores=s)[:3] == approx((0.5, 0.5, 0.5))
    assert lib(tr, rel, "P@4", scores=s)[:3] == approx((0.5, 0.5, 0.5))
    # input order [0,2,3,4,1] -> grades [0,1,1,0,1]: AP = (1/2 + 2/3 + 3/5)/3 = 53/90;
    # trec_eval order [2,0,4,3,1] -> grades [1,0,0,1,1]: AP = (1 + 2/4 + 3/5)/3 = 0.7.
    # (If -0.0 and 0.0 were NOT tied, trec_eval would put column 3 before 4: [1,0,1,0,1] -> 0.7555...)
    assert lib(tr, rel, "AP", "input", scores=s)[0] == approx(53 / 90)
    assert lib(tr, rel, "AP", "trec_eval", scores=s)[0] == approx(0.7)
    # negative scores: [-3, -1, -2] -> order columns 1, 2, 0 -> grades [0, 1, 1]: AP = (1/2 + 2/3)/2
    assert lib(tr, np.array([[1, 0, 1]]), "AP", scores=np.array([[-3.0, -1.0, -2.0]]))[:3] == approx((7 / 12,) * 3)
    # -inf only, all tied
    oracle.check_library(tr, np.array([[1, 0, 2]]), "nDCG@2", scores=np.full((1, 3), -math.inf))
    for m in ("AP", "nDCG@3", "ERR@2", "AP(denom='retrieved')@3", "WAP@4", "P@1", "Rprec", "RR@2"):
        oracle.check_library(tr, np.vstack([rel, [[2, 0, 1, 0, 1]]]), m,
                             scores=np.vstack([s, [[-0.0, 0.0, -math.inf, 1e308, -1e308]]]))
        # distances with infinities: +inf is the worst distance
        oracle.check_library(tr, rel, m, distances=np.array([[math.inf, -0.0, 0.0, math.inf, -math.inf]]))


@pytest.mark.parametrize("m", ["nDCG@3", "AP", "AP(denom='retrieved')@3", "ERR@4", "WAP@2", "RR@3", "P@3",
                               "DCG(gain='exp2', discount='jk')@5", "Rprec", "Success@2"])
def test_distances_mirror_scores(tr, m):
    # distances D and scores -D (or C - D) order items identically, so every output must be identical
    rel = np.array([[2, 0, 1, 1, 0, 3], [1, 1, 0, 0, 0, 1]])
    d = np.array([[0.0, 1.0, 1.0, 2.0, 1.0, 0.0], [3.0, 3.0, 3.0, 3.0, 1.0, 2.0]])
    for mode in ("expected", "optimistic", "pessimistic", "input", "trec_eval", "random"):
        a = tr.evaluate_matrix(rel, distances=d, measures=[m], ties=mode, bounds=True)
        for scores in (-d, 10.0 - d):
            b = tr.evaluate_matrix(rel, scores=scores, measures=[m], ties=mode, bounds=True)
            for fa, fb in ((a.per_query, b.per_query), (a.lower, b.lower), (a.upper, b.upper)):
                assert list(fa[m].to_numpy(float)) == approx(list(fb[m].to_numpy(float)))
    oracle.check_library(tr, rel, m, distances=d)
    oracle.check_library(tr, rel, m, scores=d)


def test_dtypes_and_memory_layouts(tr):
    # int / float32 inputs, Fortran order and strided views: same values as plain float64
    rel = np.array([[2, 0, 1, 1, 0], [0, 1, 1, 0, 3], [1, 1, 1, 1, 1]])
    s = np.array([[3, 3, 1, 0, 3], [2, 2, 2, 2, 2], [0, 1, 0, 1, 2]])
    wide_rel = np.zeros((3, 10))
    wide_rel[:, ::2] = rel
    wide_s = np.zeros((3, 10))
    wide_s[:, ::2] = s
    variants = [
        (rel, s), (rel.astype(np.float32), s.astype(np.float32)), (rel.astype(np.int32), s.astype(np.int16)),
        (np.asfortranarray(rel), np.asfortranarray(s.astype(float))), (wide_rel[:, ::2], wide_s[:, ::2]),
        (rel[::-1][::-1], (s * 0.5)[:, :]),
    ]
    for m in ("nDCG@3", "AP(denom='retrieved')@2", "ERR", "WAP@4", "RR@2"):
        for rv, sv in variants:
            oracle.check_library(tr, rv, m, scores=sv, modes=("expected", "input", "trec_eval", "optimistic"))
            oracle.check_library(tr, rv, m, distances=sv, modes=("expected", "trec_eval"))


def test_rows_are_independent(tr):
    # the same row gives the same values alone and inside a matrix with other rows
    rel = np.array([[1, 0, 2, 0], [0, 0, 0, 0], [3, 3, 0, 1]])
    s = np.array([[1, 1, 0, 1], [2, 2, 2, 2], [0, 5, 5, 5]])
    for m in ("nDCG@2", "AP(denom='retrieved')@2", "ERR@3", "RR"):
        full = tr.evaluate_matrix(rel, scores=s, measures=[m], bounds=True)
        for r in range(3):
            one = tr.evaluate_matrix(rel[r:r + 1], scores=s[r:r + 1], measures=[m], bounds=True)
            for fa, fb in ((full.per_query, one.per_query), (full.lower, one.lower), (full.upper, one.upper)):
                assert float(fa[m].iloc[r]) == approx(float(fb[m].iloc[0]))
        oracle.check_library(tr, rel, m, scores=s)


def test_means_and_sums(tr):
    # per row grades/scores below; NumQ sums to 3, NumRet to 3*3, NumRel to 2+0+1 = 3;
    # P@1 rows: tie {1,0} -> 1/2; no relevant -> 0; top [1] -> 1  => mean 0.5
    rel = np.array([[1, 0, 1], [0, 0, 0], [1, 0, 0]])
    s = np.array([[2, 2, 0], [1, 2, 3], [9, 1, 1]])
    assert lib(tr, rel, "NumQ", scores=s)[3] == approx(3.0)
    assert lib(tr, rel, "NumRet", scores=s)[3] == approx(9.0)
    assert lib(tr, rel, "NumRel", scores=s)[3] == approx(3.0)
    assert lib(tr, rel, "NumRelRet", scores=s)[3] == approx(3.0)
    assert lib(tr, rel, "P@1", scores=s)[3] == approx(0.5)
    assert lib(tr, rel, "NumRel(rel=2)", scores=s)[3] == approx(0.0)


def test_several_measures_one_call(tr):
    # measure strings come back exactly as given, each column equal to its own single-measure call
    rel = np.array([[1, 0, 2, 0, 1], [0, 1, 0, 0, 1]])
    s = np.array([[1, 1, 0, 1, 2], [0, 0, 0, 1, 1]])
    ms = ["nDCG@3", "AP(denom='retrieved')@2", "P@2", "NumRel", "ERR"]
    res = tr.evaluate_matrix(rel, scores=s, measures=ms, ties="expected", bounds=True)
    assert list(res.per_query.columns) == ms
    assert set(res.mean) == set(ms)
    for m in ms:
        an = [oracle.analyse(m, list(rel[r]), list(s[r])) for r in range(2)]
        assert list(res.per_query[m].to_numpy(float)) == approx([a.mean for a in an])
        assert list(res.lower[m].to_numpy(float)) == approx([a.lo for a in an])
        assert list(res.upper[m].to_numpy(float)) == approx([a.hi for a in an])


def test_default_tie_mode_is_expected(tr):
    rel = np.array([[1, 0, 0, 1]])
    s = np.zeros((1, 4))
    res = tr.evaluate_matrix(rel, scores=s, measures=["RR"])
    # first relevant at 1 w.p. 1/2, at 2 w.p. 1/3, at 3 w.p. 1/6: 1/2 + 1/6 + 1/18 = 13/18
    assert float(res.per_query["RR"].iloc[0]) == approx(13 / 18)
    assert float(res.mean["RR"]) == approx(13 / 18)


def test_random_mode_seeds(tr):
    rel = np.array([[1, 0, 0, 1, 2, 0, 1]] * 4)
    s = np.zeros((4, 7))
    for seed in (0, 1, 12345):
        oracle.check_library(tr, rel, "nDCG@3", scores=s, modes=("random",), seed=seed)
        oracle.check_library(tr, rel, "AP(denom='retrieved')@3", scores=s, modes=("random",), seed=seed)
    a = tr.evaluate_matrix(rel, scores=s, measures=["AP"], ties="random").per_query["AP"].to_numpy(float)
    b = tr.evaluate_matrix(rel, scores=s, measures=["AP"], ties="random", seed=0).per_query["AP"].to_numpy(float)
    assert np.array_equal(a, b)  # default seed is 0


# ================================================================================== invalid inputs

REL = np.array([[1.0, 0.0, 2.0], [0.0, 1.0, 0.0]])
SC = np.array([[0.5, 0.1, 0.5], [1.0, 2.0, 3.0]])


def _raises(tr, pattern, relevance=REL, measures=("P@2",), **kw):
    if "scores" not in kw and "distances" not in kw and not kw.pop("no_keys", False):
        kw["scores"] = SC
    with pytest.raises(tr.InputError, match=pattern):
        tr.evaluate_matrix(relevance, measures=list(measures), **kw)


def test_input_error_is_value_error(tr):
    assert issubclass(tr.InputError, ValueError)


def test_nan_scores(tr):
    bad = SC.copy()
    bad[1, 2] = np.nan
    _raises(tr, r"(?i)nan", scores=bad)
    _raises(tr, r"(?i)nan", distances=bad)


def test_nan_grades(tr):
    bad = REL.copy()
    bad[0, 1] = np.nan
    _raises(tr, r"(?i)nan", relevance=bad)


def test_negative_grades(tr):
    bad = REL.copy()
    bad[1, 0] = -1.0
    _raises(tr, r"(?i)negative", relevance=bad)


@pytest.mark.parametrize("m", ["P@0", "P@-1", "P@2.5", "nDCG@0", "AP@-3"])
def test_bad_cutoff(tr, m):
    _raises(tr, r"(?i)\bk\b|cutoff|integer|positive", measures=[m])


@pytest.mark.parametrize("m", ["P", "R", "F1", "Success", "ACG", "WAP"])
def test_cutoff_required(tr, m):
    # design.md §2: @k is required for P, R, F1, Success, ACG and WAP
    _raises(tr, r"(?i)\bk\b|cutoff|integer|positive", measures=[m])


def test_rprec_takes_no_cutoff(tr):
    # design.md §2: "Rprec takes none"
    _raises(tr, r"(?i)\bk\b|cutoff", measures=["Rprec@5"])


def test_shape_mismatch(tr):
    _raises(tr, r"(?i)shape", scores=np.array([[0.5, 0.1], [1.0, 2.0]]))
    _raises(tr, r"(?i)shape", distances=np.array([[0.5, 0.1, 0.3]]))


def test_both_scores_and_distances(tr):
    _raises(tr, r"(?i)both|exactly one|only one|not both", scores=SC, distances=SC)


def test_neither_scores_nor_distances(tr):
    _raises(tr, r"(?i)neither|exactly one|one of|required|missing", no_keys=True)


def test_empty_array(tr):
    _raises(tr, r"(?i)empty|no items|no columns|0 columns|zero|at least one",
            relevance=np.zeros((2, 0)), scores=np.zeros((2, 0)))


def test_grade_above_max_grade(tr):
    rel = np.array([[3.0, 0.0, 1.0]])
    _raises(tr, r"(?i)max_grade", relevance=rel, scores=np.array([[1.0, 2.0, 3.0]]),
            measures=["ERR(max_grade=2)@3"])


def test_unknown_measure(tr):
    _raises(tr, r"(?i)unknown.*measure|measure.*unknown|not a known measure", measures=["Foo@3"])


def test_unknown_parameter(tr):
    _raises(tr, r"(?i)unknown param|param\w*.*bogus|bogus.*param", measures=["P(bogus=1)@3"])
