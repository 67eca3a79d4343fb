"""Bpref, RBP, SetP / SetR / SetF, NumNonRelJudgedRet, Judged@k and Unjudged@k.

Expected values come from (1) the matrix oracle of tests/oracle.py (every ordering of every tie),
(2) a run-level brute force written here from trec_eval's definitions (judged, in-pool unjudged and
absent documents kept apart), (3) pytrec_eval (trec_eval 9) on tie-free runs, (4) hand computations.
"""

from __future__ import annotations

import itertools
import math
import os
import pickle
import sys
import warnings

import numpy as np
import pytest
import pytrec_eval
from hypothesis import given, settings
from hypothesis import strategies as st

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import oracle  # noqa: E402
from test_oracle_matrix import _configs, call_kwargs, fill, gen_matrix  # noqa: E402

import tierank
from tierank.errors import InputError
from tierank.measures import parse_measure

# ================================================================== 1. matrices against the oracle

TEMPLATES = [
    "Bpref", "Bpref(rel=2)", "Bpref(rel=0.5)", "Bpref(rel=0)",
    "RBP(rel=1)", "RBP(rel=1)@{k}", "RBP(p=0.5, rel=2)@{k}", "RBP(rel=1, p=0)@{k}", "RBP(rel=1, p=0.95)",
    "SetP", "SetP(rel=2)", "SetR", "SetR(rel=0.5)", "SetF", "SetF(beta=0.5, rel=2)", "SetF(beta=0)",
    "NumNonRelJudgedRet", "NumNonRelJudgedRet(rel=2)",
    "Judged@{k}", "Judged(clip=False)@{k}", "Unjudged@{k}",
]
GRADE_SETS = [(0.0, 1.0), (0.0, 1.0, 2.0, 3.0), (0.0, 0.25, 0.5, 1.5), (0.0, 0.0, 0.0, 1.0, 2.0)]


@pytest.mark.parametrize("template", TEMPLATES)
def test_matrix_against_oracle(template):
    rng = np.random.default_rng(sum(map(ord, template)))
    for n, k in _configs(rng, template):
        rel, keys = gen_matrix(rng, n, int(rng.integers(3, 7)), GRADE_SETS[int(rng.integers(len(GRADE_SETS)))])
        oracle.check_library(tierank, rel, fill(template, k), seed=int(rng.integers(1000)),
                             **call_kwargs(rng, keys))


# ================================================================== 2. runs against a brute force

def _grade(qrels_q: dict, doc: str) -> float | None:
    return qrels_q.get(doc)          # None: not in the qrels


def plain(measure: str, ranking: list[str], qrels_q: dict) -> float:
    """trec_eval's definitions, one position at a time (None = absent, negative = unjudged)."""
    m = parse_measure(measure)
    p, k = m.params, m.cutoff
    grades = [_grade(qrels_q, d) for d in ranking]
    judged = [g is not None and g >= 0 for g in grades]
    rel = p.get("rel", 1)
    relevant = [j and g >= rel for j, g in zip(judged, grades)]
    R = sum(1 for g in qrels_q.values() if g >= rel)
    N = sum(1 for g in qrels_q.values() if 0 <= g < rel)
    n = len(ranking)
    H = sum(relevant)
    if m.name == "NumNonRelJudgedRet":
        return float(sum(j and not r for j, r in zip(judged, relevant)))
    if m.name == "Judged":
        den = min(k, n) if p["clip"] else k
        return sum(judged[:k]) / den if den else 0.0
    if m.name == "Unjudged":
        return sum(not j for j in judged[:k]) / k
    if m.name == "SetP":
        return H / n if n else 0.0
    if m.name == "SetR":
        return H / R if R else 0.0
    if m.name == "SetF":
        if not H:
            return 0.0
        P, Rc, x = H / n, H / R, p["beta"]
        return (x + 1) * P * Rc / (x * P + Rc)
    if m.name == "RBP":
        q = p["p"]
        top = ranking if k is None else ranking[:k]
        return (1 - q) * sum(q ** i for i, r in enumerate(relevant[:len(top)]) if r)
    if m.name == "Bpref":
        above, total = 0, 0.0
        for j, r in zip(judged, relevant):
            if r:
                total += 1.0 - (min(above, R) / min(N, R) if above else 0.0)
            elif j:
                above += 1
        return total / R if R else 0.0
    raise ValueError(measure)


def _orderings(run_q: dict):
    """Every ranking consistent with the scores (ties permuted)."""
    by_score: dict[float, list[str]] = {}
    for d, s in run_q.items():
        by_score.setdefault(s, []).append(d)
    groups = [by_score[s] for s in sorted(by_score, reverse=True)]
    for combo in itertools.product(*(itertools.permutations(g) for g in groups)):
        yield [d for grp in combo for d in grp]


def brute_force(measure, run_q, qrels_q):
    vals = [plain(measure, o, qrels_q) for o in _orderings(run_q)]
    return math.fsum(vals) / len(vals), min(vals), max(vals)


def trec_order(run_q: dict) -> list[str]:
    # trec_eval: score descending, then document id descending
    return sorted(run_q, key=lambda d: (run_q[d], d), reverse=True)


RUN_MEASURES = ["Bpref", "Bpref(rel=2)", "RBP(rel=1)", "RBP(rel=1, p=0.5)@{k}", "RBP(rel=2, p=0.9)@{k}", "SetP", "SetR(rel=2)",
                "SetF", "SetF(beta=0.25, rel=2)", "NumNonRelJudgedRet", "NumNonRelJudgedRet(rel=2)",
                "Judged@{k}", "Judged(clip=False)@{k}", "Unjudged@{k}"]


@st.composite
def run_case(draw):
    n_q = draw(st.integers(1, 3))
    qrels, run = {}, {}
    for q in range(n_q):
        n = draw(st.integers(1, 6))
        docs = [f"d{i}" for i in range(n + 3)]
        scores = draw(st.lists(st.integers(0, 2), min_size=n, max_size=n))
        run[f"q{q}"] = {d: float(s) for d, s in zip(docs, scores)}
        kinds = draw(st.lists(st.sampled_from([None, -2, 0, 0, 1, 2, 3]), min_size=n + 3, max_size=n + 3))
        qrels[f"q{q}"] = {d: g for d, g in zip(docs, kinds) if g is not None} or {"dz": 1}
    k = draw(st.integers(1, 8))
    return qrels, run, k


def _evaluate(qrels, run, measures, **kw):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", tierank.TierankWarning)
        return tierank.evaluate(qrels, run, measures, bounds=True, **kw)


@settings(max_examples=300, deadline=None, derandomize=True, database=None)
@given(run_case())
def test_runs_against_brute_force(case):
    qrels, run, k = case
    measures = [fill(t, k) for t in RUN_MEASURES]
    exp = _evaluate(qrels, run, measures)
    fixed = _evaluate(qrels, run, measures, ties="trec_eval")
    for q in exp.per_query.index:
        for m in measures:
            mean, lo, hi = brute_force(m, run[q], qrels[q])
            where = (q, m, run[q], qrels[q])
            assert exp.per_query.loc[q, m] == pytest.approx(mean, abs=1e-12), where
            assert exp.lower.loc[q, m] == pytest.approx(lo, abs=1e-12), where
            assert exp.upper.loc[q, m] == pytest.approx(hi, abs=1e-12), where
            want = plain(m, trec_order(run[q]), qrels[q])
            assert fixed.per_query.loc[q, m] == pytest.approx(want, abs=1e-12), where


def test_brute_force_by_hand():
    # ranking c (0), then a tie {a (1), b (0), u (absent)}, then a tie {d (2), j (-2)}; R = 2, N = 2.
    # a has c above and b with probability 1/2: terms 1 - 1/2 and 1 - 2/2, mean 1/4; d has 2 above: 0.
    qrels = {"q": {"a": 1, "b": 0, "c": 0, "d": 2, "j": -2}}
    run = {"q": {"c": 2.0, "a": 1.0, "b": 1.0, "u": 1.0, "d": 0.5, "j": 0.5}}
    assert brute_force("Bpref", run["q"], qrels["q"]) == pytest.approx((0.125, 0.0, 0.25))
    res = _evaluate(qrels, run, ["Bpref"])
    assert res.per_query.loc["q", "Bpref"] == pytest.approx(0.125)
    assert (res.lower.loc["q", "Bpref"], res.upper.loc["q", "Bpref"]) == pytest.approx((0.0, 0.25))


# ================================================================== 3. pytrec_eval (trec_eval 9)

PYTREC = {"bpref": "Bpref", "set_P": "SetP", "set_recall": "SetR", "set_F": "SetF",
          "num_nonrel_judged_ret": "NumNonRelJudgedRet"}


def _collection(seed):
    rng = np.random.default_rng(seed)
    qrels, run = {}, {}
    for q in range(20):
        n = int(rng.integers(1, 30))
        docs = [f"d{i}" for i in rng.permutation(60)[:n + 10]]
        scores = rng.permutation(n).astype(float)          # distinct: one ordering
        run[f"q{q}"] = dict(zip(docs[:n], scores))
        qrels[f"q{q}"] = {d: int(rng.choice([-2, 0, 0, 1, 2, 3])) for d in docs if rng.random() < 0.6}
        qrels[f"q{q}"].setdefault(docs[-1], 1)
    return qrels, run


@pytest.mark.parametrize("seed", range(5))
@pytest.mark.parametrize("rel", [1, 2])
def test_pytrec_eval_crosscheck(seed, rel):
    qrels, run = _collection(seed)
    want = pytrec_eval.RelevanceEvaluator(qrels, set(PYTREC), relevance_level=rel).evaluate(run)
    measures = [f"{name}(rel={rel})" for name in PYTREC.values()]
    for ties in ("trec_eval", "expected", "optimistic", "pessimistic"):
        res = _evaluate(qrels, run, measures, ties=ties, trec_eval_version=9)
        for q in want:
            for trec, name in PYTREC.items():
                got = res.per_query.loc[q, f"{name}(rel={rel})"]
                assert got == pytest.approx(want[q][trec], abs=1e-12), (seed, rel, ties, q, trec)


def test_pytrec_eval_set_f_parameter():
    qrels, run = _collection(7)
    want = pytrec_eval.RelevanceEvaluator(qrels, {"set_F.0.5"}).evaluate(run)
    res = _evaluate(qrels, run, ["SetF(beta=0.5)"], ties="trec_eval", trec_eval_version=9)
    for q in want:
        assert res.per_query.loc[q, "SetF(beta=0.5)"] == pytest.approx(want[q]["set_F"], abs=1e-12)


# ================================================================== 4. names, parameters, edges

@pytest.mark.parametrize("text, canonical", [
    ("bpref", "Bpref"), ("set_P", "SetP"), ("set_recall", "SetR"), ("set_F", "SetF"),
    ("num_nonrel_judged_ret", "NumNonRelJudgedRet"), ("unj.10", "Unjudged@10"), ("unj_5", "Unjudged@5"),
    ("Judged@10", "Judged@10"), ("judged@3", "Judged@3"), ("RBP(rel=1, p=0.95)@10", "RBP(p=0.95, rel=1)@10"),
    ("SetF(beta=0.5)", "SetF(beta=0.5)"),
])
def test_names(text, canonical):
    assert str(parse_measure(text)) == canonical
    assert pickle.loads(pickle.dumps(parse_measure(text))) == parse_measure(text)


@pytest.mark.parametrize("text, message", [
    ("RBP(rel=1, p=1)", r"p must be >= 0 and < 1"), ("RBP(rel=1, p=-0.1)", r"p must be >= 0 and < 1"),
    ("RBP(rel=1, p='x')", r"p must be a finite number"), ("SetF(beta=-1)", r"beta must be >= 0"),
    ("Judged", r"Judged needs a cutoff k"), ("Bpref@5", r"Bpref takes no cutoff"),
    ("SetP@5", r"SetP takes no cutoff"), ("Bpref(rel=-1)", r"rel must be >= 0"),
])
def test_bad_parameters(text, message):
    with pytest.raises(InputError, match=message):
        parse_measure(text)


def _one(measure, rel, scores, **kw):
    res = tierank.evaluate_matrix(np.array([rel]), scores=np.array([scores], dtype=float), measures=[measure],
                                  bounds=True, **kw)
    return res.per_query.loc[0, measure], res.lower.loc[0, measure], res.upper.loc[0, measure]


def test_rbp_by_hand():
    # all tied, 2 relevant of 4, p = 0.5: each position has mean relevance 1/2, so
    # RBP = 0.5 * (1 - 0.5^4) = 0.46875; best (1, 1, 0, 0): 0.5 * (1 + 0.5) = 0.75;
    # worst (0, 0, 1, 1): 0.5 * (0.25 + 0.125) = 0.1875
    assert _one("RBP(rel=1, p=0.5)", [1, 0, 1, 0], [1, 1, 1, 1]) == pytest.approx((0.46875, 0.1875, 0.75))
    # k = 1 inside the tie: 0.5 * 1/2; k = n and k > n: the whole list
    assert _one("RBP(rel=1, p=0.5)@1", [1, 0, 1, 0], [1, 1, 1, 1])[0] == pytest.approx(0.25)
    assert _one("RBP(rel=1, p=0.5)@4", [1, 0, 1, 0], [1, 1, 1, 1])[0] == _one("RBP(rel=1, p=0.5)@9", [1, 0, 1, 0], [1, 1, 1, 1])[0]
    # p = 0: only rank 1 counts
    assert _one("RBP(rel=1, p=0)", [0, 1], [1, 1]) == pytest.approx((0.5, 0.0, 1.0))
    # far down a long list p^t underflows quietly to 0
    n = 5000
    rel = np.zeros(n, dtype=int)
    rel[-1] = 1
    assert _one("RBP(rel=1, p=0.5)", list(rel), list(-np.arange(n)))[0] == 0.0


def test_bpref_edges():
    # no relevant: 0; no judged non-relevant: every retrieved relevant counts 1
    assert _one("Bpref", [0, 0], [1, 1]) == (0.0, 0.0, 0.0)
    assert _one("Bpref", [1, 2, 1], [1, 1, 0]) == (1.0, 1.0, 1.0)
    # one item
    assert _one("Bpref", [1], [3]) == (1.0, 1.0, 1.0)
    # all tied, 1 relevant, 3 non-relevant, R = 1 = D: term 1 - min(U, 1) with U uniform on 0..3: 1/4
    assert _one("Bpref", [0, 1, 0, 0], [2, 2, 2, 2]) == pytest.approx((0.25, 0.0, 1.0))
    # R = 3 > N = 2, all tied: n_d uniform on 0..2, term 1 - n_d / 2, mean 1/2 each
    assert _one("Bpref", [1, 1, 1, 0, 0], [0, 0, 0, 0, 0]) == pytest.approx((0.5, 0.0, 1.0))


def test_judged_and_unjudged_edges():
    qrels = {"q": {"a": 1, "b": 0, "j": -2}}
    run = {"q": {"a": 1.0, "j": 1.0, "u": 1.0, "b": 0.0}}     # a judged, j in pool unjudged, u absent
    r = _evaluate(qrels, run, ["Judged@1", "Judged@2", "Judged@4", "Judged@9", "Judged(clip=False)@9",
                               "Unjudged@2", "Unjudged@9", "NumNonRelJudgedRet", "NumNonRelJudgedRet(rel=0)"])
    got = r.per_query.loc["q"].to_dict()
    assert got["Judged@1"] == pytest.approx(1 / 3)        # top 1 inside the 3-tie holding 1 judged
    assert got["Judged@2"] == pytest.approx(1 / 3)        # 2/3 judged expected, over 2
    assert got["Judged@4"] == got["Judged@9"] == 0.5      # 2 judged of 4 (ir-measures: min(k, n))
    assert got["Judged(clip=False)@9"] == pytest.approx(2 / 9)
    assert got["Unjudged@2"] == pytest.approx(2 / 3)      # 2 * 2/3 unjudged, over 2
    assert got["Unjudged@9"] == pytest.approx(2 / 9)      # trec_eval unj: over k
    assert (got["NumNonRelJudgedRet"], got["NumNonRelJudgedRet(rel=0)"]) == (1.0, 0.0)
    assert r.mean["NumNonRelJudgedRet"] == 1.0
    assert r.lower.loc["q", "Judged@1"] == 0.0 and r.upper.loc["q", "Judged@1"] == 1.0


def test_sets_are_order_free():
    q = {"q": {"a": 1, "b": 0, "c": 2}}
    run = {"q": {"a": 1.0, "b": 1.0, "c": 0.0, "x": 5.0}}
    r = _evaluate(q, run, ["SetP", "SetR(rel=2)", "SetF", "SetF(beta=0)"])
    # H = 2 (a, c), n = 4, R = 2: P = 1/2, R = 1, F = 2 * 0.5 / 1.5 = 2/3; beta = 0: F = P
    assert r.per_query.loc["q"].tolist() == pytest.approx([0.5, 1.0, 2 / 3, 0.5])
    assert r.lower.equals(r.per_query) and r.upper.equals(r.per_query)
