"""Measures at the edges: the three kinds of retrieved document (judged, in pool with a negative grade,
not in pool), rel >= 0, gains maps, NumRet(rel=X), grades in the thousands (exp2 gains, ERR), pickling,
bit-identical values under any order of tied items, declared value ranges (registry-wide), and the
no_relevant policy.

Expected values come from the brute-force oracle (tests/oracle.py), exact big-number computations
written out here (Python ints and fractions), or hand computations in the comments.
"""

from __future__ import annotations

import math
import os
import pickle
import sys
from fractions import Fraction

import numpy as np
import pandas as pd
import pytest
from hypothesis import HealthCheck, given, note, settings
from hypothesis import strategies as st

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import oracle  # noqa: E402

import tierank  # noqa: E402
from tierank import InputError, parse_measure  # noqa: E402
from tierank.measures import NO_RELEVANT, REGISTRY  # noqa: E402
from tierank.measures._no_relevant import apply_no_relevant, check_no_relevant, has_relevant  # noqa: E402
from tierank.measures.radius import RADIUS_FAMILIES  # noqa: E402
from tierank.results import aggregate  # noqa: E402
from tierank.ties.groups import TieStats  # noqa: E402
from tierank.engine.core import evaluate_stats  # noqa: E402
from tierank.engine.options import Options  # noqa: E402
from tierank.ties.policy import TieOrderings  # noqa: E402

HYP = settings(deadline=None, derandomize=True, database=None,
               suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])

# Every family of the registry (and the Hamming-radius families) with its parameter variants; ``{k}``
# is the cutoff. A family missing here fails test_every_family_has_variants.
VARIANTS: dict[tuple[str, bool], list[str]] = {
    ("P", False): ["P@{k}", "P(rel=0)@{k}", "P(rel=2)@{k}", "P(rel=0.5, clip=True)@{k}"],
    ("R", False): ["R@{k}", "R(rel=0)@{k}", "R(rel=1.5)@{k}"],
    ("F1", False): ["F1@{k}", "F1(rel=0, clip=True)@{k}", "F1(rel=2)@{k}", "F1(beta=0.5)@{k}", "F1(beta=2, rel=2)@{k}"],
    ("Success", False): ["Success@{k}", "Success(rel=0)@{k}", "Success(rel=2.5)@{k}"],
    ("Rprec", False): ["Rprec", "Rprec(rel=0)", "Rprec(rel=2)"],
    ("ACG", False): ["ACG@{k}", "ACG(clip=True)@{k}"],
    ("NumQ", False): ["NumQ", "NumQ(rel=2)"],
    ("NumRet", False): ["NumRet", "NumRet(rel=0)", "NumRet(rel=1)", "NumRet(rel=0.5)"],
    ("NumRel", False): ["NumRel", "NumRel(rel=0)", "NumRel(rel=2)"],
    ("NumRelRet", False): ["NumRelRet", "NumRelRet(rel=0)", "NumRelRet(rel=2)"],
    ("AP", False): ["AP", "AP@{k}", "AP(rel=0)", "AP(rel=2, denom='retrieved')@{k}", "AP(denom='min_k_R')@{k}",
                    "AP(rel=0.5, denom='retrieved')"],
    ("WAP", False): ["WAP@{k}", "WAP(rel=0)@{k}", "WAP(denom='R')@{k}", "WAP(rel=2, denom='min_k_R')@{k}"],
    ("RR", False): ["RR", "RR@{k}", "RR(rel=0)", "RR(rel=2)@{k}"],
    ("nDCG", False): ["nDCG(discount='ln')@{k}", "nDCG(discount='log10')@{k}", "nDCG", "nDCG@{k}", "nDCG(gain='exp2')@{k}", "nDCG(discount='jk')",
                      "nDCG(gains={0: 1, 2: 0.5})@{k}", "nDCG(gain='exp2', gains={1: 3})", "nDCG(dcg='exp-log2')@{k}"],
    ("DCG", False): ["DCG", "DCG@{k}", "DCG(gain='exp2', discount='jk')@{k}", "DCG(gains={0: 0.5, 1: 2})"],
    ("ERR", False): ["ERR", "ERR@{k}", "ERR(max_grade=4)@{k}"],
    ("NumNonRelJudgedRet", False): ["NumNonRelJudgedRet", "NumNonRelJudgedRet(rel=0)", "NumNonRelJudgedRet(rel=2)"],
    ("Judged", False): ["Judged@{k}", "Judged(clip=False)@{k}"],
    ("Unjudged", False): ["Unjudged@{k}"],
    ("SetP", False): ["SetP", "SetP(rel=0)", "SetP(rel=2)"],
    ("SetR", False): ["SetR", "SetR(rel=0.5)"],
    ("SetF", False): ["SetF", "SetF(beta=0.5, rel=2)", "SetF(beta=0)"],
    ("RBP", False): ["RBP(rel=1)", "RBP(rel=1)@{k}", "RBP(p=0.95, rel=2)@{k}", "RBP(rel=0, p=0)"],
    ("Bpref", False): ["Bpref", "Bpref(rel=0)", "Bpref(rel=2)"],
    ("GMAP", False): ["GMAP", "GMAP(rel=2)"],
    ("RelString", False): ["RelString", "RelString(length=3)"],
    ("RBPResid", False): ["RBPResid", "RBPResid(p=0.5)"],
    ("RprecMult", False): ["RprecMult", "RprecMult(mult=0.2)", "RprecMult(mult=2, rel=2)"],
    ("Hits", False): ["Hits@{k}", "Hits(rel=2)@{k}"],
    ("SetRelP", False): ["SetRelP", "SetRelP(rel=2)"],
    ("SetAP", False): ["SetAP", "SetAP(rel=0)"],
    ("Utility", False): ["Utility", "Utility(a=2, b=-1, c=0.5, d=1, N=50)"],
    ("BinG", False): ["BinG", "BinG(rel=2)"],
    ("IPrec", False): ["IPrec", "IPrec(recall=0.5)", "IPrec(recall=1, rel=2, rounding='trec9')"],
    ("IPrecAvg", False): ["IPrecAvg", "IPrecAvg(levels=(0.2, 0.7))"],
    ("NDCGRel", False): ["NDCGRel", "NDCGRel(gain='exp2')", "NDCGRel(gains={1: 3, 2: 0.5})"],
    ("Rndcg", False): ["Rndcg", "Rndcg(rel=2)", "Rndcg(gains={1: 3, 2: 0.5})"],
    ("G", False): ["G", "G(gains={1: 3, 2: 0.5})"],
    ("infAP", False): ["infAP", "infAP(rel=2)"],
    ("GMBpref", False): ["GMBpref", "GMBpref(rel=0)"],
    ("P", True): ["P(radius=0)", "P(radius=1, empty='one')", "P(radius=1.5, empty='skip')", "P(radius=2, rel=0)"],
    ("R", True): ["R(radius=1)", "R(radius=0, rel=2)"],
}


def _families():
    return [((f.name, False), f) for f in REGISTRY.values()] + [((n, True), f) for n, f in RADIUS_FAMILIES.items()]


def measures_for(ks, radius=True):
    """Every numeric variant, with each cutoff of ``ks`` (text measures: tests/test_trec_layer.py)."""
    out = []
    for (name, is_radius), templates in VARIANTS.items():
        if (is_radius and not radius) or (not is_radius and REGISTRY[name].text):
            continue
        for t in templates:
            out.extend(dict.fromkeys(t.replace("{k}", str(k)) for k in ks) if "{k}" in t else [t])
    return list(dict.fromkeys(out))


def test_every_family_has_variants_and_a_range():
    for key, family in _families():
        assert VARIANTS.get(key), f"family {key} has no parameter variants listed in VARIANTS"
        if family.text:   # strings (RelString): no range; tests/test_trec_layer.py checks them
            assert family.value_range is None and family.aggregate == "none"
            continue
        lo, hi = family.value_range
        # Utility's coefficients may be negative: its values are any real number
        assert lo <= hi and (lo == 0.0 or family.value_range == (-math.inf, math.inf)), (key, family.value_range)
        for t in VARIANTS[key]:
            m = parse_measure(t.replace("{k}", "3"))
            assert m.family is family, (t, key)


# ====================================================================== rel, gains and NumRet rules

@pytest.mark.parametrize("text", ["P(rel=-1)@5", "AP(rel=-0.5)", "NumRet(rel=-2)", "RR(rel=-1)",
                                  "P(radius=1, rel=-1)"])
def test_negative_rel_is_rejected(text):
    # regression: rel=-1 was accepted, and grade >= -1 counted not-in-pool documents as relevant
    with pytest.raises(InputError, match=r"rel must be >= 0: negative grades are unjudged documents, never "
                                         r"relevant"):
        parse_measure(text)


@pytest.mark.parametrize("text", ["nDCG(gains={-1: 2})", "DCG(gains={0: 1, -2: 0.5})@3"])
def test_negative_gains_key_is_rejected(text):
    with pytest.raises(InputError, match=r"negative grades are unjudged documents, whose gain is always 0"):
        parse_measure(text)


def test_negative_gain_value_is_rejected():
    with pytest.raises(InputError, match=r"gain of grade 1 is negative"):
        parse_measure("nDCG(gains={1: -1})")


QRELS = {"q1": {"d1": 0, "d2": -2, "d4": 2}, "q2": {"e1": 1, "e3": 0}}
RUN = {"q1": {"d1": 3.0, "d2": 2.0, "d3": 1.0, "d4": 0.5}, "q2": {"e1": 1.0, "e2": 1.0}}


def _run_values(measure, qrels=QRELS, run=RUN, **kw):
    res = tierank.evaluate(qrels, run, [measure], bounds=True, **kw)
    return res.per_query[measure].to_dict()


def test_three_kinds_rel_zero_counts_judged_only():
    # q1 ranked: d1 (grade 0), d2 (in pool, -2), d3 (not in pool, -1), d4 (2); q2: e1 (1), e2 (not in pool)
    # tied. rel=0: relevant = judged documents only: q1 d1, d4; q2 e1 (e3 judged 0, not retrieved).
    assert _run_values("P(rel=0)@3") == pytest.approx({"q1": 1 / 3, "q2": 2 / 3 / 2 * 1.0 * 0 + 1 / 3})
    assert _run_values("NumRel(rel=0)") == {"q1": 2.0, "q2": 2.0}
    assert _run_values("NumRelRet(rel=0)") == {"q1": 2.0, "q2": 1.0}
    # AP(rel=0), q1: relevant at 1 and 4, R = 2: (1/1 + 2/4)/2 = 0.75
    assert _run_values("AP(rel=0)")["q1"] == pytest.approx(0.75)


def test_numret_rel_counts_retrieved_with_grade_at_least():
    # regression: NumRet(rel=X) counted every retrieved document. ir-measures: NumRet(rel=X) counts
    # retrieved documents with grade >= X; without rel, every retrieved document.
    assert _run_values("NumRet") == {"q1": 4.0, "q2": 2.0}
    assert _run_values("NumRet(rel=0)") == {"q1": 2.0, "q2": 1.0}    # d1, d4 | e1
    assert _run_values("NumRet(rel=1)") == {"q1": 1.0, "q2": 1.0}    # d4 | e1
    assert _run_values("NumRet(rel=2)") == {"q1": 1.0, "q2": 0.0}
    assert str(parse_measure("NumRet")) == "NumRet" and parse_measure("NumRet")["rel"] is None
    res = tierank.evaluate_matrix([[2, 0, 1, 0]], scores=[[1, 1, 0, 0]], measures=["NumRet", "NumRet(rel=1)"])
    assert res.per_query.loc[0].tolist() == [4.0, 2.0]


def test_unjudged_gain_is_zero_whatever_the_gains_map():
    # gains={0: 2}: judged non-relevant d1 has gain 2; d2 (-2) and d3 (not in pool) gain 0; d4 grade 2
    # keeps gain 2. q1 order d1, d2, d3, d4: DCG = 2/log2(2) + 0 + 0 + 2/log2(5)
    got = _run_values("DCG(gains={0: 2})")["q1"]
    assert got == pytest.approx(2.0 + 2.0 / math.log2(5))
    # exp2 gains: 2^2 - 1 = 3 at rank 4; the unjudged documents add nothing
    assert _run_values("DCG(gain='exp2')")["q1"] == pytest.approx(3.0 / math.log2(5))


# ----------------------------------------------------- the oracle, with unjudged documents (runs)

def _oracle_analysis(spec, grades, keys, monkeypatch):
    """oracle.analyse with the unjudged rule: negative grades are never relevant (rel >= 0 does it in
    the oracle's own ``x >= rel``) and have value / gain 0 (ACG, ERR, DCG: patched here)."""
    name = oracle.parse(spec).name
    if name in ("ACG", "ERR"):
        grades = [max(float(g), 0.0) for g in grades]
    orig = oracle.gain_function

    def gain_function(m):
        G = orig(m)
        return lambda g: 0.0 if g < 0 else G(g)

    monkeypatch.setattr(oracle, "gain_function", gain_function)
    try:
        return oracle.analyse(spec, grades, keys)
    finally:
        monkeypatch.setattr(oracle, "gain_function", orig)


ORACLE_TEMPLATES = ["P@{k}", "P(rel=0)@{k}", "R(rel=0)@{k}", "F1(rel=2)@{k}", "F1(beta=0.5)@{k}", "F1(beta=3, clip=True)@{k}", "Success(rel=0)@{k}", "Rprec(rel=0)",
                    "AP", "AP(rel=0)@{k}", "AP(rel=0, denom='retrieved')@{k}", "RR(rel=0)", "WAP(rel=0)@{k}",
                    "ACG@{k}", "nDCG@{k}", "nDCG(gains={0: 1, 2: 3})", "DCG(gain='exp2')@{k}", "ERR@{k}",
                    "NumRel(rel=0)", "NumRelRet(rel=0)"]


@st.composite
def run_case(draw):
    n = draw(st.integers(1, 6))
    grades = [draw(st.sampled_from([-2.0, -1.0, 0.0, 0.5, 1.0, 2.0, 3.0])) for _ in range(n)]
    if all(g == -1.0 for g in grades):
        grades[0] = 0.0     # the query needs one qrels line
    keys = [float(draw(st.integers(0, 2))) for _ in range(n)]
    template = draw(st.sampled_from(ORACLE_TEMPLATES))
    k = draw(st.integers(1, n + 1))
    return grades, keys, template.replace("{k}", str(k))


@settings(HYP, max_examples=150)
@given(run_case())
def test_unjudged_documents_against_the_oracle(case):
    # every judged document is retrieved, so the oracle's list is the judged set (not-in-pool -1 and
    # in-pool -2 documents add nothing to R or the ideal DCG)
    grades, keys, measure = case
    note(f"{measure} grades={grades} keys={keys}")
    qrels = {"q": {f"d{i}": g for i, g in enumerate(grades) if g != -1.0}}
    run = {"q": {f"d{i}": s for i, s in enumerate(keys)}}
    mp = pytest.MonkeyPatch()
    try:
        a = _oracle_analysis(measure, grades, keys, mp)
    finally:
        mp.undo()
    res = tierank.evaluate(qrels, run, [measure], bounds=True)
    got = (float(res.per_query[measure].iloc[0]), float(res.lower[measure].iloc[0]),
           float(res.upper[measure].iloc[0]))
    assert got == pytest.approx((a.mean, a.lo, a.hi), abs=1e-9)
    for mode in ("optimistic", "pessimistic"):
        v = float(tierank.evaluate(qrels, run, [measure], ties=mode).per_query[measure].iloc[0])
        assert a.lo - 1e-9 <= v <= a.hi + 1e-9


# ========================================================================== grades in the thousands

def _ndcg_exact(seq, judged, k=None, exp2=True):
    """nDCG of one ordered grade list with exact big-int gains (discounts are the float64 1/log2(i+1))."""
    def gain(g):
        g = Fraction(g)
        if g <= 0:
            return Fraction(0)
        if not exp2:
            return g
        assert g.denominator == 1
        return Fraction(2 ** int(g) - 1)
    K = len(seq) if k is None else min(k, len(seq))
    disc = [Fraction(1.0 / math.log2(i + 1)) for i in range(1, len(seq) + 1)]
    dcg = sum(gain(g) * disc[i] for i, g in enumerate(seq[:K]))
    ideal = sorted((gain(g) for g in judged), reverse=True)
    idcg = sum(x * disc[i] for i, x in enumerate(ideal[:K]))
    return dcg / idcg if idcg else Fraction(0)


def _err_exact(seq, k=None):
    """ERR with exact rationals: R = (2^g - 1) / 2^gmax, integer grades."""
    gmax = max(max(int(g) for g in seq), 0)
    K = len(seq) if k is None else min(k, len(seq))
    out, alive = Fraction(0), Fraction(1)
    for i, g in enumerate(seq[:K], start=1):
        R = Fraction(2 ** max(int(g), 0) - 1, 2 ** gmax)
        out += alive * R / i
        alive *= 1 - R
    return out


def _tie_mean(exact, grades, keys, **kw):
    vals = [exact(list(seq), **kw) for seq in oracle.enumerate_orderings(grades, keys)]
    return float(sum(vals) / len(vals)), float(min(vals)), float(max(vals))


def test_huge_exp2_grades_regression():
    # regression: nDCG(gain='exp2') and ERR gave NaN with grades in the thousands (2**g overflowed)
    rel = [3000, 0, 1500, 2999]
    s = [1.0, 1.0, 0.0, 2.0]
    res = tierank.evaluate_matrix([rel], scores=[s], measures=["nDCG(gain='exp2')", "ERR", "ERR@2"], bounds=True)
    got = res.per_query.loc[0]
    want = _tie_mean(lambda seq: _ndcg_exact(seq, rel), rel, s)
    assert (got["nDCG(gain='exp2')"], res.lower.loc[0, "nDCG(gain='exp2')"],
            res.upper.loc[0, "nDCG(gain='exp2')"]) == pytest.approx(want, rel=1e-12)
    assert got["ERR"] == pytest.approx(_tie_mean(_err_exact, rel, s)[0], rel=1e-12)
    assert got["ERR@2"] == pytest.approx(_tie_mean(lambda seq: _err_exact(seq, 2), rel, s)[0], rel=1e-12)


def test_grade_100_err_no_warning():
    # regression: a grade of 100 warned "divide by zero in log" (x = 1 - (2^100 - 1)/2^100 rounded to 0)
    # and gave a wrong value. Exact: order [100, 0, 100] etc. (pytest turns RuntimeWarnings into errors)
    rel, s = [100, 0, 100, 3], [1.0, 1.0, 1.0, 0.0]
    res = tierank.evaluate_matrix([rel], scores=[s], measures=["ERR"], bounds=True)
    want = _tie_mean(_err_exact, rel, s)
    assert (res.per_query.loc[0, "ERR"], res.lower.loc[0, "ERR"], res.upper.loc[0, "ERR"]) == \
        pytest.approx(want, rel=1e-12, abs=1e-300)


def test_dcg_beyond_float64_is_an_input_error():
    # regression: DCG(gain='exp2') of grade 2000 was inf / NaN; it cannot be represented
    with pytest.raises(InputError, match=r"DCG\(gain='exp2'\).*beyond float64.*grade 2000.*row 1"):
        tierank.evaluate_matrix([[1, 0], [2000, 3]], scores=[[1, 0], [0, 1]], measures=["DCG(gain='exp2')"])
    with pytest.raises(InputError, match=r"beyond float64"):
        # 1.5e308 (1 + 1/log2 3) > 1.8e308, the largest float64
        tierank.evaluate_matrix([[1.5e308, 1.5e308]], scores=[[1, 0]], measures=["DCG"])
    # nDCG of the same data is a ratio: exact and finite (linear gains 1e308: every item the same gain)
    res = tierank.evaluate_matrix([[1e308, 1e308, 0]], scores=[[1, 0, 2]], measures=["nDCG", "nDCG@1"])
    d = [1 / math.log2(i + 1) for i in (1, 2, 3)]
    assert res.per_query.loc[0].tolist() == pytest.approx([(d[1] + d[2]) / (d[0] + d[1]), 0.0], rel=1e-12)
    # a DCG that fits stays exact: grade 1000 -> 2^1000 - 1 at rank 1
    res = tierank.evaluate_matrix([[1000, 0]], scores=[[1, 0]], measures=["DCG(gain='exp2')"])
    assert res.per_query.iloc[0, 0] == pytest.approx(float(2 ** 1000 - 1), rel=1e-15)


@settings(HYP, max_examples=120)
@given(st.lists(st.integers(0, 6000), min_size=1, max_size=6), st.data())
def test_big_grades_exact_and_finite(grades, data):
    keys = [float(data.draw(st.integers(0, 2))) for _ in grades]
    k = data.draw(st.integers(1, len(grades) + 1))
    ms = ["nDCG(gain='exp2')", f"nDCG(gain='exp2')@{k}", "ERR", f"ERR@{k}", f"nDCG(gain='exp2', discount='jk')@{k}"]
    res = tierank.evaluate_matrix([grades], scores=[keys], measures=ms, bounds=True)
    for m in ms:
        for frame in (res.per_query, res.lower, res.upper):
            v = float(frame.loc[0, m])
            assert math.isfinite(v) and -1e-12 <= v <= 1 + 1e-12, (m, v)
    assert float(res.per_query.loc[0, ms[0]]) == pytest.approx(
        _tie_mean(lambda seq: _ndcg_exact(seq, grades), grades, keys)[0], rel=1e-9, abs=1e-300)
    assert float(res.per_query.loc[0, ms[3]]) == pytest.approx(
        _tie_mean(lambda seq: _err_exact(seq, k), grades, keys)[0], rel=1e-9, abs=1e-15)


# ===================================================================================== pickling

def test_every_measure_pickles():
    # regression: Measure did not pickle (closures such as real_param.<locals>.check)
    for text in measures_for((1, 5)):
        m = parse_measure(text)
        back = pickle.loads(pickle.dumps(m))
        assert back == m and str(back) == str(m) and back.family is m.family and hash(back) == hash(m)
        assert back.replace() == m


def test_results_pickle():
    res = tierank.evaluate_matrix([[1, 0, 2], [0, 0, 1]], scores=[[1, 1, 0], [2, 2, 2]],
                                  measures=["AP", "nDCG@2", "P(radius=1, empty='skip')"], bounds=True)
    back = pickle.loads(pickle.dumps(res))
    assert back == res and back.mean.keys() == res.mean.keys()
    assert back.summary().equals(res.summary())
    # the unpickled measures evaluate to the same values
    again = tierank.evaluate_matrix([[1, 0, 2], [0, 0, 1]], scores=[[1, 1, 0], [2, 2, 2]],
                                    measures=list(back.measures.values()), bounds=True)
    assert np.array_equal(again.per_query.to_numpy(), res.per_query.to_numpy(), equal_nan=True)
    run_res = tierank.evaluate(QRELS, RUN, ["AP", "ERR@2"], bounds=True)
    assert pickle.loads(pickle.dumps(run_res)) == run_res
    codes = tierank.evaluate_codes([[0, 1, 1], [1, 1, 1]], [[0, 0, 0], [0, 1, 1], [1, 1, 0]], [0, 1], [0, 0, 1],
                                   measures=["AP", "P(radius=1)"], bounds=True)
    back = pickle.loads(pickle.dumps(codes))
    assert type(back) is type(codes) and back == codes and back.mean == codes.mean


def test_other_result_objects_pickle():
    report = tierank.tie_report(QRELS, RUN, ["AP", "P@2"])
    back = pickle.loads(pickle.dumps(report))
    assert back.table.equals(report.table)
    runs = {"a": RUN, "b": {q: {d: -s for d, s in docs.items()} for q, docs in RUN.items()}}
    comp = tierank.compare(QRELS, runs, ["AP"])
    back = pickle.loads(pickle.dumps(comp))
    assert back.means.equals(comp.means) and back.tests.equals(comp.tests)


# ========================================================= bit-identical under any order of ties

def _permute_rows(a, perms):
    return np.take_along_axis(np.asarray(a), perms, axis=1)


@st.composite
def tied_matrix(draw):
    n = draw(st.integers(2, 9))
    nrows = draw(st.integers(1, 3))
    levels = draw(st.sampled_from([(0.0, 0.1, 0.2, 0.7, 1.3, 2.9), (0.0, 1 / 3, 2 / 3, 1.0, 2.5),
                                   (0.0, 0.3, 3.0), (0.0, 1.0, 2.0, 3.0)]))
    rel = np.array([[draw(st.sampled_from(levels)) for _ in range(n)] for _ in range(nrows)])
    dist = np.array([[float(draw(st.integers(0, 2))) for _ in range(n)] for _ in range(nrows)])
    perms = np.array([draw(st.permutations(range(n))) for _ in range(nrows)])
    k = draw(st.sampled_from([1, 2, n, n + 2]))
    return rel, dist, perms, k


def _frames(res):
    return [f.to_numpy(dtype=np.float64) for f in (res.per_query, res.lower, res.upper)]


@settings(HYP, max_examples=150)
@given(tied_matrix())
def test_bit_identical_under_permutation_of_tied_items(case):
    # the same multiset of (distance, grade) per row, columns permuted: bit-identical values for every
    # mode that does not look at the input order, and the bounds
    rel, dist, perms, k = case
    ms = measures_for((1, k))
    note(f"rel={rel.tolist()} dist={dist.tolist()} perms={perms.tolist()}")
    for ties in ("expected", "optimistic", "pessimistic"):
        a = tierank.evaluate_matrix(rel, distances=dist, measures=ms, ties=ties, bounds=True)
        b = tierank.evaluate_matrix(_permute_rows(rel, perms), distances=_permute_rows(dist, perms), measures=ms,
                                    ties=ties, bounds=True)
        for fa, fb in zip(_frames(a), _frames(b)):
            same = (fa == fb) | (np.isnan(fa) & np.isnan(fb))
            bad = [ms[j] for j in np.flatnonzero(~same.all(axis=0))]
            assert not bad, f"ties={ties}: {bad} changed: {fa[:, ~same.all(axis=0)]} vs {fb[:, ~same.all(axis=0)]}"


def test_bit_identical_regression():
    # regression: tied fractional grades summed in input order moved ERR and nDCG by one ulp when the
    # tied columns were swapped (per-group sums and ERR's recurrence in input order)
    rel = np.array([[0.1, 0.2, 0.7, 1.3, 2.9, 0.1, 0.7]])
    dist = np.zeros((1, 7))
    ms = ["ERR", "nDCG", "nDCG(gain='exp2')", "DCG@3", "ACG@3", "WAP@3"]
    base = tierank.evaluate_matrix(rel, distances=dist, measures=ms, bounds=True)
    rng = np.random.default_rng(3)
    for _ in range(40):
        p = rng.permutation(7)
        other = tierank.evaluate_matrix(rel[:, p], distances=dist, measures=ms, bounds=True)
        for fa, fb in zip(_frames(base), _frames(other)):
            assert np.array_equal(fa, fb), (p, fa - fb)


# ================================================================= value ranges, registry-wide

@st.composite
def range_case(draw):
    nq = draw(st.integers(1, 3))
    qrels, run, kinds = {}, {}, {}
    for q in range(nq):
        n = draw(st.integers(1, 7))
        grades = [draw(st.sampled_from([-2.0, -1.0, 0.0, 0.0, 0.5, 1.0, 2.0, 3.0])) for _ in range(n)]
        keys = [float(draw(st.integers(0, 2))) for _ in range(n)]
        extra = draw(st.lists(st.sampled_from([-2.0, 0.0, 1.0, 3.0]), max_size=2))   # judged, not retrieved
        if all(g == -1.0 for g in grades) and not extra:
            extra = [0.0]
        qrels[f"q{q}"] = {**{f"d{i}": g for i, g in enumerate(grades) if g != -1.0},
                          **{f"x{i}": g for i, g in enumerate(extra)}}
        run[f"q{q}"] = {f"d{i}": s for i, s in enumerate(keys)}
        kinds[f"q{q}"] = grades
    k = draw(st.sampled_from([1, 2, 8]))
    return qrels, run, kinds, k


MODES_FIXED = ("optimistic", "pessimistic", "input", "trec_eval", "random")


@settings(HYP, max_examples=60)
@given(range_case())
def test_registry_value_ranges(case):
    qrels, run, kinds, k = case
    ms = measures_for((1, k), radius=False)
    note(f"qrels={qrels} run={run}")
    exp = tierank.evaluate(qrels, run, ms, bounds=True)
    frames = {"expected": exp.per_query}
    for mode in MODES_FIXED:
        if mode == "trec_eval" and any(g != int(g) for judged in qrels.values() for g in judged.values()):
            # trec_eval reads grades as integers (0.5 as 0): ties="trec_eval" refuses them (test_trec_eval_grades.py)
            with pytest.raises(tierank.InputError, match=r"which trec_eval reads as"):
                tierank.evaluate(qrels, run, ms, ties=mode)
            continue
        frames[mode] = tierank.evaluate(qrels, run, ms, ties=mode).per_query
    for text in ms:
        lo_r, hi_r = parse_measure(text).family.value_range
        lower, upper = exp.lower[text].to_numpy(), exp.upper[text].to_numpy()
        assert np.all(np.isfinite(lower)) and np.all(np.isfinite(upper)), text
        assert np.all(lo_r <= lower) and np.all(upper <= hi_r), (text, lower, upper)
        for mode, frame in frames.items():
            v = frame[text].to_numpy()
            assert np.all(np.isfinite(v)), (text, mode)
            assert np.all(lo_r <= v) and np.all(v <= hi_r), (text, mode, v)
            tol = 1e-9 * (1 + np.abs(v))
            assert np.all(lower - tol <= v) and np.all(v <= upper + tol), (text, mode, v, lower, upper)
    for mode, f in frames.items():
        for rel in ("", "(rel=0)", "(rel=2)"):
            assert np.all(f[f"NumRelRet{rel}"] <= f["NumRet"]), mode
            assert np.all(f[f"NumRelRet{rel}"] <= f[f"NumRel{rel}"]), mode
        # unjudged documents never count: NumRet(rel=0) is the retrieved judged documents
        assert f["NumRet(rel=0)"].to_dict() == {q: float(sum(g >= 0 for g in gs)) for q, gs in kinds.items()}
        assert np.all(f["NumRet(rel=1)"] <= f["NumRet(rel=0.5)"]) and np.all(f["NumRet(rel=0.5)"] <= f["NumRet(rel=0)"])
        assert np.all(f["NumQ"] == 1.0)


@settings(HYP, max_examples=40)
@given(tied_matrix())
def test_radius_and_matrix_value_ranges(case):
    rel, dist, _, k = case
    ms = measures_for((1, k))
    for ties in ("expected",) + MODES_FIXED:
        res = tierank.evaluate_matrix(rel, distances=dist, measures=ms, ties=ties, bounds=True)
        for text in ms:
            lo_r, hi_r = parse_measure(text).family.value_range
            for frame in (res.per_query, res.lower, res.upper):
                v = frame[text].to_numpy()
                if "skip" in text:
                    v = v[~np.isnan(v)]
                assert np.all(np.isfinite(v)) and np.all(lo_r <= v) and np.all(v <= hi_r), (text, ties, v)


# ===================================================================================== no_relevant

# Three queries by histogram (bins = distance 0, 1; levels = grades 0, 1, 2):
#   q0: bin 0 {1, 0}, bin 1 {0}   -> AP: the tie puts the relevant item at 1 or 2: (1 + 1/2)/2 = 0.75
#   q1: bin 0 {0, 0}              -> no relevant item for any measure
#   q2: bin 0 {2}                 -> AP = 1
LEVELS = np.array([0.0, 1.0, 2.0])
COUNTS = np.zeros((3, 2, 3), dtype=np.int64)
COUNTS[0, 0, 1] = COUNTS[0, 0, 0] = COUNTS[0, 1, 0] = 1
COUNTS[1, 0, 0] = 2
COUNTS[2, 0, 2] = 1
GRADES = {0: ([1, 0, 0], [0, 0, -1]), 1: ([0, 0], [0, 0]), 2: ([2], [0])}   # (grades, keys) per query


def _policy_values(texts, policy, labels=("a", "b", "c")):
    stats = TieStats.from_histogram(COUNTS, LEVELS)
    ms = [parse_measure(t) for t in texts]
    opts = Options.checked({str(m): m for m in ms}, bounds=True, no_relevant=policy)
    values, lower, upper = evaluate_stats(TieOrderings(stats), opts, labels=list(labels))
    return {str(m): (values[m], lower[m], upper[m]) for m in ms}


def test_no_relevant_policies_against_the_oracle():
    texts = ["AP", "nDCG", "DCG", "AP(rel=2)", "NumQ", "NumQ(rel=2)", "NumRel", "P@1"]
    an = {t: [oracle.analyse(t, *GRADES[q]) for q in range(3)] for t in texts}
    own = {t: [a.mean for a in an[t]] for t in texts}
    assert own["AP"] == pytest.approx([0.75, 0.0, 1.0])
    zero = _policy_values(texts, "zero")
    for t in texts:
        for arr, field in zip(zero[t], ("mean", "lo", "hi")):
            assert arr.tolist() == pytest.approx([getattr(a, field) for a in an[t]])
    skip = _policy_values(texts, "skip")
    assert np.isnan(skip["AP"][0][1]) and skip["AP"][0][[0, 2]].tolist() == pytest.approx([0.75, 1.0])
    # AP(rel=2): q0 (max grade 1) and q1 have no document with grade >= 2
    assert np.isnan(skip["AP(rel=2)"][0][[0, 1]]).all() and skip["AP(rel=2)"][0][2] == 1.0
    frame = pd.DataFrame({t: skip[t][0] for t in texts})
    means = aggregate(frame, {t: parse_measure(t) for t in texts})
    assert means["AP"] == pytest.approx((0.75 + 1.0) / 2)        # by hand: q1 left out
    assert means["NumQ"] == 2.0 and means["NumQ(rel=2)"] == 1.0  # left out of NumQ's sum
    one = _policy_values(texts, "one")
    for i in range(3):   # values, lower and upper alike: the query without relevant items gets 1
        assert one["AP"][i].tolist() == pytest.approx([zero["AP"][i][0], 1.0, 1.0])
        assert one["nDCG"][i][1] == 1.0 and one["P@1"][i][1] == 1.0
        # a DCG and the counts keep their own value (0 relevant items, NumQ 1)
        assert one["DCG"][i].tolist() == zero["DCG"][i].tolist() and one["DCG"][i][1] == 0.0
        assert one["NumRel"][i].tolist() == [1.0, 0.0, 1.0] and one["NumQ"][i].tolist() == [1.0] * 3
    assert one["AP(rel=2)"][0].tolist() == [1.0, 1.0, 1.0]
    with pytest.raises(InputError, match=r"measure 'AP': query 'b' has no relevant judged document \(grade >= 1\)"):
        _policy_values(["AP"], "error")
    with pytest.raises(InputError, match=r"'AP\(rel=2\)': query 'a' .*grade >= 2"):
        _policy_values(["AP(rel=2)"], "error")
    with pytest.raises(InputError, match=r"'nDCG': query 'b' .*grade > 0"):
        _policy_values(["nDCG"], "error")


def test_no_relevant_check_and_helpers():
    assert NO_RELEVANT == ("zero", "skip", "one", "error")
    for p in NO_RELEVANT:
        assert check_no_relevant(p) == p
    with pytest.raises(InputError, match=r"no_relevant='never'.*'zero', 'skip', 'one', 'error'"):
        check_no_relevant("never")
    stats = TieStats.from_histogram(COUNTS, LEVELS)
    assert has_relevant(parse_measure("AP(rel=0)"), stats.judged).tolist() == [True, True, True]
    assert has_relevant(parse_measure("ERR"), stats.judged).tolist() == [True, False, True]
    assert has_relevant(parse_measure("NumRet"), stats.judged).tolist() == [True, False, True]
    v = np.array([0.2, 0.0, 0.4])
    out = apply_no_relevant(parse_measure("AP"), v, np.array([True, False, True]), "skip")
    assert out is not v and v.tolist() == [0.2, 0.0, 0.4]


def test_no_relevant_unjudged_only_query():
    # a query whose retrieved documents are all unjudged (-2 in pool, -1 not in pool) and whose only
    # judged document has grade 0: no relevant document at rel=1; relevant at rel=0
    stats = TieStats.from_histogram(np.array([[[1, 1, 1]]]), np.array([-2.0, -1.0, 0.0]))
    assert has_relevant(parse_measure("P@2"), stats.judged).tolist() == [False]
    assert has_relevant(parse_measure("P(rel=0)@2"), stats.judged).tolist() == [True]
    assert has_relevant(parse_measure("nDCG"), stats.judged).tolist() == [False]


def test_radius_empty_words():
    assert str(parse_measure("P(radius=1)")) == "P(radius=1)"
    assert str(parse_measure("P(radius=1, empty=0)")) == "P(radius=1)"
    assert str(parse_measure("P(radius=1, empty=1)")) == "P(empty='one', radius=1)"
    assert parse_measure("P(radius=1, empty='one')") == parse_measure("P(radius=1, empty=1)")
    with pytest.raises(InputError, match=r"empty must be 'zero', 'one' or 'skip'"):
        parse_measure("P(radius=1, empty='none')")
    # nothing within radius 0 in row 0 (distances 1, 2): 'zero' 0, 'one' 1, 'skip' NaN
    res = tierank.evaluate_matrix([[1, 0], [1, 0]], distances=[[1, 2], [0, 2]],
                                  measures=["P(radius=0)", "P(radius=0, empty='one')", "P(radius=0, empty='skip')"])
    assert res.per_query.iloc[0, :2].tolist() == [0.0, 1.0] and np.isnan(res.per_query.iloc[0, 2])
    assert res.per_query.iloc[1].tolist() == [1.0, 1.0, 1.0]
