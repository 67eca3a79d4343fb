"""infAP, IPrec (trec_eval iprec_at_recall, ir-measures IPrec@r) and IPrecAvg (trec_eval 11pt_avg), tie-aware.

Expected values come from

1. the matrix oracle of tests/oracle.py (``trec_interpolated_value``: m_infap.c, m_iprec_at_recall.c and
   m_11pt_avg.c transcribed one position at a time, trec_eval's lround / ``(long)(x R + 0.9)`` cut counts),
   over every ordering of every tie;
2. the same transcription at run level (documents outside the pool, in the pool but unjudged, judged
   non-relevant, relevant; relevant documents that were not retrieved count in R), over every distinct
   arrangement of every tie, on many queries per call;
3. pytrec_eval (trec_eval 9.x) and ir-measures, per query, on runs with ties (``ties="trec_eval"``,
   ``trec_eval_version=9``);
4. hand computations written out below.
"""

from __future__ import annotations

import itertools
import math
import os
import sys
import warnings

import numpy as np
import pytest
import pytrec_eval
from hypothesis import given, settings
from hypothesis import strategies as st

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import oracle  # noqa: E402
from test_oracle_matrix import call_kwargs, gen_matrix  # noqa: E402

import tierank
from tierank.errors import InputError
from tierank.measures import parse_measure

ELEVEN = (0.0, 0.1, 0.2, 0.3, 0.4, 0.5, 0.6, 0.7, 0.8, 0.9, 1.0)

# ================================================================== 1. matrices against the oracle

TEMPLATES = [
    "infAP", "infAP(rel=2)", "infAP(rel=0.5)",
    "IPrec", "IPrec(recall=0.5)", "IPrec(recall=1)", "IPrec(recall=0.3, rounding='trec9')",
    "IPrec(recall=0.25, rel=2)", "IPrec(recall=0.7, rel=0.5)",
    "IPrecAvg", "IPrecAvg(levels=(0.2, 0.5, 0.8))", "IPrecAvg(rounding='trec9')", "IPrecAvg(rel=2)",
]
GRADE_SETS = [(0.0, 1.0), (0.0, 1.0, 2.0, 3.0), (0.0, 0.25, 0.5, 1.5), (0.0, 0.0, 0.0, 1.0, 2.0)]


@pytest.mark.parametrize("template", TEMPLATES)
def test_matrix_against_oracle(template):
    """Every tie mode (expected, optimistic, pessimistic, input, trec_eval, random) and the bounds, rows of
    1..8 items with random key styles (all tied, no ties, a few ties)."""
    rng = np.random.default_rng(sum(map(ord, template)))
    for n in [1, 1, 2, 3, 4, 5, 6, 7, 8, 8]:
        rel, keys = gen_matrix(rng, n, int(rng.integers(4, 9)), GRADE_SETS[int(rng.integers(len(GRADE_SETS)))])
        oracle.check_library(tierank, rel, template, seed=int(rng.integers(1000)), **call_kwargs(rng, keys))


def test_oracle_by_hand():
    # infAP on grades [1, 0, -1, 1] (R = 2): 1 at rank 1; the second relevant at rank 4 has a = 1 relevant,
    # m = 1 non-relevant and u = 1 unjudged above: 1/4 + (3/4) (3/3) (1 + e) / (2 + 2e) = 1/4 + 3/8
    assert oracle.plain_value("infAP", [1, 0, -1, 1]) == pytest.approx((1 + 0.25 + 0.375) / 2, abs=1e-9)
    # outside the pool (None) only moves ranks: [None, 1] scores 1/2 at rank 2
    assert oracle.trec_interpolated_value("infAP", [None, 1]) == pytest.approx(0.5)
    # IPrec: relevant at ranks 2, 3 of 4, R = 2: precisions 1/2, 2/3
    assert oracle.plain_value("IPrec(recall=0.5)", [0, 1, 1, 0]) == pytest.approx(2 / 3)
    assert oracle.plain_value("IPrec(recall=0)", [1, 0, 0, 1]) == 1.0
    # R = 4 in the qrels, 2 retrieved at ranks 1 and 4: level 0.75 -> 3 relevant > 2 retrieved -> 0;
    # level 0.5 -> 2: 2/4; level 0.25 -> 1: max(1/1, 2/4)
    assert oracle.trec_interpolated_value("IPrec(recall=0.75)", [1, 0, 0, 1], num_rel=4) == 0.0
    assert oracle.trec_interpolated_value("IPrec(recall=0.5)", [1, 0, 0, 1], num_rel=4) == 0.5
    assert oracle.trec_interpolated_value("IPrec(recall=0.25)", [1, 0, 0, 1], num_rel=4) == 1.0
    # 11pt_avg with R = 1 at rank 2: every level cuts at 0 or 1 relevant -> 1/2 at all eleven
    assert oracle.plain_value("IPrecAvg", [0, 1]) == pytest.approx(0.5)
    # trec_eval 10 rounds x R (lround: halves up), 9.x takes (long)(x R + 0.9)
    assert oracle._trec_lround(0.5) == 1 and oracle._trec_lround(0.49999999999999994) == 0
    assert oracle._trec_lround(2.5) == 3
    # a tie of a relevant and a non-relevant item above a relevant one: (max(1, 2/3) + max(1/2, 2/3)) / 2
    assert oracle.tie_aware("IPrec(recall=0.5)", [0, 1, 1, 0], [4, 4, 2, 1])[0] == pytest.approx((1 + 2 / 3) / 2)


# ================================================================== 2. runs against a brute force

ABSENT = -100.0   # a code for "not in the qrels" inside the enumeration (sortable, hashable)


def _plain(measure, grades: list, R: int) -> float:
    return oracle.trec_interpolated_value(measure, [None if g == ABSENT else g for g in grades], num_rel=R)


def _ties(run_q: dict) -> list[list[str]]:
    by_score: dict[float, list[str]] = {}
    for d, s in run_q.items():
        by_score.setdefault(s, []).append(d)
    return [by_score[s] for s in sorted(by_score, reverse=True)]


def _arrangements(run_q: dict, qrels_q: dict):
    """Each distinct grade sequence over the orderings of the ties (equally likely, see oracle.py)."""
    per_tie = [oracle.distinct_permutations([float(qrels_q.get(d, ABSENT)) for d in tie]) for tie in _ties(run_q)]
    for combo in itertools.product(*per_tie):
        yield [g for tie in combo for g in tie]


def _R(measure: str, qrels_q: dict) -> int:
    rel = parse_measure(measure).params.get("rel", 1)
    return sum(1 for g in qrels_q.values() if g >= rel)


def brute_force(measure: str, run_q: dict, qrels_q: dict) -> tuple[float, float, float]:
    R = _R(measure, qrels_q)
    parsed = oracle.parse(measure)   # once: the oracle's parser is slow
    vals = [_plain(parsed, seq, R) for seq in _arrangements(run_q, qrels_q)]
    return math.fsum(vals) / len(vals), min(vals), max(vals)


def _fixed(measure: str, run_q: dict, qrels_q: dict, mode: str) -> float:
    rel = parse_measure(measure).params.get("rel", 1)
    if mode == "trec_eval":   # score descending, then document id descending
        order = sorted(run_q, key=lambda d: (run_q[d], d), reverse=True)
    else:                      # relevant first / last inside each tie (other kinds in any order)
        sign = -1 if mode == "optimistic" else 1
        order = [d for tie in _ties(run_q) for d in sorted(tie, key=lambda d: sign * (qrels_q.get(d, -1) >= rel))]
    return _plain(measure, [float(qrels_q.get(d, ABSENT)) for d in order], _R(measure, qrels_q))


RUN_MEASURES = ["infAP", "infAP(rel=2)", "IPrec", "IPrec(recall=0.2)", "IPrec(recall=0.5)", "IPrec(recall=1)",
                "IPrec(recall=0.3, rounding='trec9')", "IPrec(recall=0.5, rel=2)", "IPrecAvg",
                "IPrecAvg(levels=(0.25, 0.5, 0.75))", "IPrecAvg(rounding='trec9')", "IPrecAvg(rel=2)"]
KINDS = [None, None, -2, -1, -3, 0, 0, 1, 1, 2, 3]   # None: not in the qrels; negative: in the pool, unjudged


@st.composite
def one_query(draw):
    n = draw(st.integers(1, 8))
    shape = draw(st.sampled_from(["all tied", "no ties", "few scores", "few scores", "few scores"]))
    if shape == "all tied":
        scores = [1.0] * n
    elif shape == "no ties":
        scores = [float(s) for s in draw(st.permutations(range(n)))]
    else:
        scores = [float(s) for s in draw(st.lists(st.integers(0, 2), min_size=n, max_size=n))]
    extra = draw(st.integers(0, 3))    # judged documents that were not retrieved
    kinds = draw(st.lists(st.sampled_from(KINDS), min_size=n + extra, max_size=n + extra))
    docs = [f"d{i}" for i in draw(st.permutations(range(n + extra)))]
    run_q = dict(zip(docs[:n], scores))
    qrels_q = {d: k for d, k in zip(docs, kinds) if k is not None}
    return run_q, qrels_q or {"zz": 0}


def _evaluate(qrels, run, measures, **kw):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", tierank.TierankWarning)   # e.g. queries with no relevant document
        return tierank.evaluate(qrels, run, measures, **kw)


def _check_runs(queries, measures, tol=1e-12):
    qrels = {f"q{i}": qq for i, (_r, qq) in enumerate(queries)}
    run = {f"q{i}": rq for i, (rq, _q) in enumerate(queries)}
    exp = _evaluate(qrels, run, measures, bounds=True)
    fixed = {mode: _evaluate(qrels, run, measures, ties=mode) for mode in ("trec_eval", "optimistic", "pessimistic")}
    for q in run:
        for m in measures:
            mean, lo, hi = brute_force(m, run[q], qrels[q])
            where = (q, m, run[q], qrels[q])
            assert exp.per_query.loc[q, m] == pytest.approx(mean, abs=tol), where
            assert exp.lower.loc[q, m] == pytest.approx(lo, abs=tol), where
            assert exp.upper.loc[q, m] == pytest.approx(hi, abs=tol), where
            for mode, res in fixed.items():
                assert res.per_query.loc[q, m] == pytest.approx(_fixed(m, run[q], qrels[q], mode), abs=tol), (mode, where)
    return exp


@settings(max_examples=25, deadline=None, derandomize=True, database=None)
@given(st.lists(one_query(), min_size=60, max_size=100))
def test_runs_against_brute_force(queries):
    """About 2,000 queries, 60-100 per call: expected, bounds, trec_eval, optimistic and pessimistic equal the
    brute force over every arrangement of every tie (all tied, no ties, judged non-relevant, unjudged in the
    pool, outside the pool, relevant documents not retrieved, no relevant document, one document)."""
    _check_runs(queries, RUN_MEASURES)


def _big_tie_query(rng, n, sizes):
    """One query: a head of distinct scores, one tie of ``n`` documents, a tail; kinds drawn per ``sizes``."""
    kinds = [1] * sizes[0] + [0] * sizes[1] + [-2] * sizes[2] + [None] * sizes[3]
    kinds += list(rng.choice(np.array([0, 1, -2, 9], dtype=object), size=n - len(kinds) + 4))
    docs = [f"d{i:02d}" for i in rng.permutation(len(kinds))]
    scores = [5.0, 4.0] + [3.0] * n + [2.0, 1.0]
    run_q = dict(zip(docs, scores))
    qrels_q = {d: (None if k == 9 else k) for d, k in zip(docs, kinds)}
    qrels_q = {d: k for d, k in qrels_q.items() if k is not None}
    qrels_q["unretrieved"] = 1
    return run_q, qrels_q


@pytest.mark.parametrize("seed", range(3))
def test_larger_ties_against_enumeration(seed):
    """Ties of 9 to 12 documents of every kind (thousands of distinct arrangements each)."""
    rng = np.random.default_rng(seed)
    queries = [_big_tie_query(rng, n, sizes) for n, sizes in
               [(9, (3, 2, 2, 1)), (10, (4, 3, 1, 0)), (11, (2, 2, 2, 2)), (12, (5, 5, 0, 0)), (10, (1, 1, 1, 1))]]
    _check_runs(queries, ["infAP", "IPrec(recall=0.4)", "IPrecAvg", "IPrecAvg(rounding='trec9')"], tol=1e-11)


# ================================================================== 3. edge cases by hand

def _one(measures, qrels_q, run_q, **kw):
    return _evaluate({"q": qrels_q}, {"q": run_q}, measures, **kw)


def test_edges_by_hand():
    ms = ["infAP", "IPrec(recall=0)", "IPrec(recall=1)", "IPrecAvg"]
    # no relevant document in the qrels: every value 0 in every mode, bounds 0
    res = _one(ms, {"a": 0, "b": -2}, {"a": 1.0, "b": 1.0, "c": 1.0}, bounds=True)
    assert res.per_query.loc["q"].tolist() == [0.0] * 4 and res.upper.loc["q"].tolist() == [0.0] * 4
    # one relevant document, retrieved alone: 1 everywhere
    res = _one(ms, {"a": 1}, {"a": 0.5}, bounds=True)
    assert res.per_query.loc["q"].tolist() == [1.0] * 4
    # relevant but not retrieved: R = 1, H = 0: 0 (level 0 cuts at 0 relevant: precision 0 / n)
    res = _one(ms, {"a": 1, "b": 0}, {"b": 1.0, "c": 1.0})
    assert res.per_query.loc["q"].tolist() == [0.0] * 4
    # all tied, one relevant among n = 4: at rank i, infAP = IPrec = 1/i (nothing judged above -> infAP's
    # fraction term needs a + m + u > 0: absent documents only); here the others are absent: mean of 1/i
    res = _one(ms, {"a": 1}, {"a": 1.0, "b": 1.0, "c": 1.0, "d": 1.0}, bounds=True)
    h4 = (1 + 1 / 2 + 1 / 3 + 1 / 4) / 4
    assert res.per_query.loc["q"].tolist() == [pytest.approx(h4, abs=1e-15)] * 4
    assert res.lower.loc["q"].tolist() == [0.25] * 4 and res.upper.loc["q"].tolist() == [1.0] * 4


def test_infap_unjudged_above_can_raise_the_score():
    """Why infAP's bounds are computed, not taken from relevant-first: with a document outside the pool above
    the tie, an unjudged document placed above the relevant one raises its score.  Ranks: x (outside the
    pool), then a tie of r (relevant), n (non-relevant), u (unjudged in the pool).  For r at rank p with
    a = 0 relevant, m non-relevant and k unjudged above: (1 + (m + k) e / (m + 2e)) / p with e = 1e-5.
      r n u: (1 + 0) / 2 = 0.5               r u n: 0.5
      n r u: (1 + 1 e / (1 + 2e)) / 3         u r n: (1 + 1 e / (2e)) / 3 = 1.5 / 3 = 0.5
      n u r: (1 + 2 e / (1 + 2e)) / 4         u n r: same as n u r
    The maximum 0.5 is reached by r first and by u r n; the minimum is n u r's (1 + 2e / (1 + 2e)) / 4,
    about 0.25."""
    e = 1e-5
    qrels = {"r": 1, "n": 0, "u": -2}
    run = {"x": 2.0, "r": 1.0, "n": 1.0, "u": 1.0}
    vals = [0.5, 0.5, (1 + e / (1 + 2 * e)) / 3, 0.5, (1 + 2 * e / (1 + 2 * e)) / 4, (1 + 2 * e / (1 + 2 * e)) / 4]
    res = _one(["infAP"], qrels, run, bounds=True)
    assert res.per_query.loc["q", "infAP"] == pytest.approx(sum(vals) / 6, abs=1e-15)
    assert res.lower.loc["q", "infAP"] == pytest.approx(min(vals), abs=1e-15)
    assert res.upper.loc["q", "infAP"] == pytest.approx(max(vals), abs=1e-15)
    # a case where relevant-first is strictly below the maximum: x absent above the tie {r1, r2, u}
    # r1 r2 u: r1 = 1/2, r2 = (1 + 1 (1+e)/(1+2e)) / 3;  u r1 r2: r1 = (1 + 1 e/(2e)) / 3 = 1/2,
    # r2 = (1 + 2 (1+e)/(1+2e)) / 4; compare the sums through the library's bounds against the brute force
    qrels = {"r1": 1, "r2": 1, "u": -2}
    run = {"x": 2.0, "r1": 1.0, "r2": 1.0, "u": 1.0}
    first = (0.5 + (1 + (1 + e) / (1 + 2 * e)) / 3) / 2
    u_first = (0.5 + (1 + 2 * (1 + e) / (1 + 2 * e)) / 4) / 2
    assert u_first > first
    mean, lo, hi = brute_force("infAP", run, qrels)
    assert hi == pytest.approx(u_first, abs=1e-15)
    res = _one(["infAP"], qrels, run, bounds=True)
    assert res.upper.loc["q", "infAP"] == pytest.approx(u_first, abs=1e-15)
    assert res.per_query.loc["q", "infAP"] == pytest.approx(mean, abs=1e-15)
    assert _one(["infAP"], qrels, run, ties="optimistic").per_query.loc["q", "infAP"] == pytest.approx(first)


def test_iprec_half_counts_round_like_lround():
    """trec_eval 10 turns a level into lround(x R): x R = 0.5 -> 1, 0.49999999999999994 -> 0 (floor(x R + 0.5)
    gives 1 there, its only difference from lround in doubles, and harmless: counts 0 and 1 select the same
    maximum); trec_eval 9 takes (long)(x R + 0.9)."""
    qrels = {"a": 1, "b": 1}
    run = {"z": 3.0, "a": 2.0, "y": 1.5, "b": 1.0}   # relevant at ranks 2 and 4: precisions 1/2, 2/4
    lvl = 0.49999999999999994 / 2                      # x R = 0.49999999999999994 with R = 2
    assert lvl * 2 == 0.49999999999999994
    got = _one([f"IPrec(recall={lvl!r})", "IPrec(recall=0.25)", f"IPrec(recall={lvl!r}, rounding='trec9')"],
               qrels, run).per_query.loc["q"].tolist()
    want = [oracle.trec_interpolated_value(f"IPrec(recall={lvl!r})", [None, 1, None, 1]),
            oracle.trec_interpolated_value("IPrec(recall=0.25)", [None, 1, None, 1]),
            oracle.trec_interpolated_value(f"IPrec(recall={lvl!r}, rounding='trec9')", [None, 1, None, 1])]
    assert want == [0.5, 0.5, 0.5]   # c = 0, c = 1, c = 1: max over ranks >= the first relevant in each case
    assert got == want


# ================================================================== 4. the exact method's limit

def test_iprec_beyond_the_exact_method_names_query_and_tie():
    """A tie of 400 documents, 150 relevant, at level 0.5 (c = 75): the 76 relevant documents from the 75th
    on take 251 offsets each, and each value costs r (n - r + 1) = 150 x 251: 76 x 251 x 37,650 = 7.2e8
    work units, beyond a budget of 5e8 operations per query (tie_cost_budget): an InputError up front naming
    the query and the tie's ranks; fixed modes and the bounds still work."""
    docs = [f"d{i:03d}" for i in range(400)]
    qrels = {"small": {"a": 1, "b": 0}, "big-query": {d: int(i % 8 < 3) for i, d in enumerate(docs)}}
    run = {"small": {"a": 1.0, "b": 1.0}, "big-query": {**{d: 1.0 for d in docs}, "top": 2.0}}
    with pytest.raises(InputError) as err:
        _evaluate(qrels, run, ["IPrec(recall=0.5)"], tie_cost_budget=5e8)
    text = str(err.value)
    work = 76 * 251 * (150 * 251)   # values x r (n - r + 1), the docstring's count
    assert "big-query" in text and "2-401" in text and f"about {work:.3g} operations" in text, text
    res = _evaluate(qrels, run, ["IPrec(recall=0.5)", "IPrecAvg"], ties="pessimistic", bounds=True)
    # worst: the 150 relevant last in the tie: relevant j at rank 1 + 250 + j; level 0.5 -> c = 75: the max
    # over j >= 75 of j / (251 + j) is at j = 150: 150 / 401
    assert res.per_query.loc["big-query", "IPrec(recall=0.5)"] == pytest.approx(150 / 401, abs=1e-15)
    assert res.upper.loc["big-query", "IPrec(recall=0.5)"] == pytest.approx(150 / 151, abs=1e-15)


def test_infap_beyond_the_budget_names_query_and_tie():
    qrels = {"q-small": {"a": 1}, "q-tied": {"a": 1, "b": 0, "c": -2, "d": 1}}
    run = {"q-small": {"a": 1.0}, "q-tied": {"z": 9.0, "a": 1.0, "b": 1.0, "c": 1.0, "d": 1.0, "e": 1.0}}
    with pytest.raises(InputError) as err:
        _evaluate(qrels, run, ["infAP"], tie_cost_budget=10)
    assert "q-tied" in str(err.value) and "2-6" in str(err.value), str(err.value)
    assert _evaluate(qrels, run, ["infAP"], ties="trec_eval").per_query.shape == (2, 1)


# ================================================================== 5. pytrec_eval and ir-measures

def _tied_collection(seed):
    rng = np.random.default_rng(seed)
    qrels, run = {}, {}
    for q in range(25):
        n = int(rng.integers(1, 40))
        docs = [f"d{i}" for i in rng.permutation(80)[:n + 10]]
        style = q % 3
        if style == 0:
            scores = rng.integers(0, 4, size=n).astype(float)          # heavy ties
        elif style == 1:
            scores = np.round(rng.random(n), 1)                        # some ties
        else:   # distinct as float64, several equal once read as float32 (trec_eval 9 / pytrec_eval)
            scores = 1.0 + rng.integers(0, 5, size=n) * 1e-9 + rng.integers(0, 3, size=n)
        run[f"q{q}"] = dict(zip(docs[:n], scores.tolist()))
        qrels[f"q{q}"] = {d: int(rng.choice([-2, 0, 0, 1, 2, 3])) for d in docs if rng.random() < 0.6}
        qrels[f"q{q}"].setdefault(docs[-1], 1)
    return qrels, run


@pytest.mark.parametrize("seed", range(4))
@pytest.mark.parametrize("rel", [1, 2])
def test_pytrec_eval_per_query_with_ties(seed, rel):
    """pytrec_eval embeds trec_eval 9.x: float32 scores, ties by document id descending, (long)(x R + 0.9)."""
    qrels, run = _tied_collection(seed)
    want = pytrec_eval.RelevanceEvaluator(qrels, {"infAP", "iprec_at_recall", "11pt_avg"},
                                          relevance_level=rel).evaluate(run)
    names = {"infAP": f"infAP(rel={rel})", "11pt_avg": f"IPrecAvg(rel={rel})"}
    names.update({f"iprec_at_recall_{x:.2f}": f"IPrec(recall={x}, rel={rel})" for x in ELEVEN})
    res = _evaluate(qrels, run, list(names.values()), ties="trec_eval", trec_eval_version=9)
    assert set(want) == set(res.per_query.index)
    for q in want:
        for trec, mine in names.items():
            assert res.per_query.loc[q, mine] == pytest.approx(want[q][trec], abs=1e-12), (q, trec)


def test_ir_measures_names():
    """ir-measures' IPrec@r and infAP (computed by its pytrec_eval provider) on a run with ties."""
    ir_measures = pytest.importorskip("ir_measures")
    qrels, run = _tied_collection(7)
    measures = [ir_measures.parse_measure(t) for t in ("IPrec@0.2", "IPrec@0.5", "IPrec@1.0", "infAP")]
    want = {(m.query_id, str(m.measure)): m.value for m in ir_measures.iter_calc(measures, qrels, run)}
    texts = ["IPrec@0.2", "IPrec@0.5", "IPrec@1.0", "infAP"]
    res = _evaluate(qrels, run, texts, ties="trec_eval", trec_eval_version=9)
    for (q, name), value in want.items():
        assert res.per_query.loc[q, name] == pytest.approx(value, abs=1e-12), (q, name)


@pytest.mark.parametrize("text, canonical", [
    ("IPrec@0.2", "IPrec(recall=0.2)"), ("IPrec@.5", "IPrec(recall=0.5)"), ("IPrec@1.0", "IPrec(recall=1.0)"),
    ("iprec_at_recall_0.10", "IPrec(recall=0.1)"), ("11pt_avg", "IPrecAvg"),
    ("11pt_avg.0.2,0.5,0.8", "IPrecAvg(levels=(0.2, 0.5, 0.8))"), ("infAP", "infAP"), ("infap", "infAP"),
    ("iprec", "IPrec"),
])
def test_names(text, canonical):
    assert str(parse_measure(text)) == canonical


def test_recall_given_twice_is_an_error():
    """ir-measures reads IPrec(recall=0.3)@0.2 as level 0.2; a silent choice either way would mislead."""
    with pytest.raises(InputError, match="recall"):
        parse_measure("IPrec(recall=0.3)@0.2")


@pytest.mark.parametrize("text", ["IPrec(recall=1.5)", "IPrec(recall=-0.1)", "IPrecAvg(levels=())",
                                  "IPrecAvg(levels=(0.2, 2))", "infAP@10", "IPrecAvg@0.5"])
def test_bad_parameters(text):
    with pytest.raises(InputError):
        parse_measure(text)


@settings(max_examples=400, deadline=None, derandomize=True, database=None)
@given(st.integers(0, 6), st.integers(0, 30), st.integers(2, 11), st.integers(2, 5), st.integers(1, 5),
       st.integers(1, 40), st.integers(1, 40))
def test_placement_shares_equal_enumeration(a, t, n, r, k0, num, den):
    """The share of a tie's placements with every (a+k)/(t+o_k) <= x for k >= k0, from the closed forms
    (two, three and four relevant documents) and the dynamic programme, against enumerating the placements."""
    from tierank.measures import iprec

    if r > n or k0 > r:
        return
    x = num / (num + den)
    placements = list(itertools.combinations(range(1, n + 1), r))
    want = sum(all((a + k) / (t + o) <= x for k, o in enumerate(offs, start=1) if k >= k0)
               for offs in placements) / len(placements)
    args = [np.array([v]) for v in (a, t, n, r, k0)] + [np.array([x])]
    assert iprec._placements_below(*args)[0] == pytest.approx(want, abs=1e-14)
    closed = {2: iprec._two_below, 3: iprec._three_below, 4: iprec._four_below}.get(r)
    if closed is not None:
        assert closed(*args)[0] == pytest.approx(want, abs=1e-14)


@settings(max_examples=30, deadline=None, derandomize=True, database=None)
@given(st.lists(one_query(), min_size=5, max_size=40), st.sampled_from(["expected", "trec_eval", "optimistic"]))
def test_levels_alone_equal_levels_together(queries, ties):
    """IPrec's ``batch`` computes every requested level in one pass: each level, and IPrecAvg, must come out
    bit for bit as when it is evaluated alone (values and bounds)."""
    qrels = {f"q{i}": qq for i, (_r, qq) in enumerate(queries)}
    run = {f"q{i}": rq for i, (rq, _q) in enumerate(queries)}
    every = [f"IPrec(recall={x})" for x in ELEVEN] + ["IPrecAvg", "IPrec(recall=0.35, rounding='trec9')"]
    together = _evaluate(qrels, run, every, ties=ties, bounds=True)
    for m in every:
        alone = _evaluate(qrels, run, [m], ties=ties, bounds=True)
        for part in ("per_query", "lower", "upper"):
            assert np.array_equal(getattr(alone, part)[m].to_numpy(), getattr(together, part)[m].to_numpy()), (m, part)


def test_levels_share_one_pass(monkeypatch):
    """Eleven IPrec levels and IPrecAvg over the same levels cost one pass of the exact expectation."""
    from tierank.measures import iprec

    calls = []
    real = iprec._expected_values
    monkeypatch.setattr(iprec, "_expected_values", lambda *a: calls.append(a[1]["worst"].shape[1]) or real(*a))
    run = {"q": {"a": 1.0, "b": 1.0, "c": 1.0, "d": 0.5}}
    qrels = {"q": {"a": 1, "c": 1, "d": 1}}
    _evaluate(qrels, run, [f"IPrec(recall={x})" for x in ELEVEN] + ["IPrecAvg"])
    assert calls == [11]


@settings(max_examples=2000, deadline=None, derandomize=True, database=None)
@given(st.integers(1, 10**6), st.integers(0, 10**6), st.integers(1, 10**6), st.integers(-2, 2))
def test_first_at_most_equals_a_scan(num, t, o, nudge):
    """The first offset o >= 1 with num / (t + o) <= x, against a scan of the same float quotients, for x
    one of those quotients itself (the boundary case) or a few ulps either side of it."""
    from tierank.measures import iprec

    x = num / (t + o)
    for _ in range(abs(nudge)):
        x = float(np.nextafter(x, np.inf if nudge > 0 else 0.0))
    want = max(1, int(num / x - t) - 3)           # the scan starts a little below the real bound
    while want > 1 and num / (t + want - 1) <= x:
        want -= 1
    while num / (t + want) > x:
        want += 1
    got = iprec._first_at_most(np.array([num]), np.array([t]), np.array([x]))[0]
    assert got == want


def test_fixed_values_sort_positions_given_out_of_order():
    """_fixed_values reads relevant items listed by query, then j; given in another order it sorts them
    first: the same values either way. Hand check: query 0 has relevant items at ranks 1 and 4 (j = 1, 2):
    precisions 1 and 0.5, so the best at or after j = 1 is 1 and after j = 2 is 0.5."""
    from tierank.measures import iprec

    query, j, pos = np.array([0, 0, 1]), np.array([1, 2, 1]), np.array([1, 4, 2])
    cuts, H = np.array([[1.0, 2.0], [1.0, 1.0]]), np.array([2.0, 1.0])
    skip = np.zeros(2, dtype=bool)
    want = iprec._fixed_values(query, j, pos, 2, cuts, H, skip)
    assert want.tolist() == [[1.0, 0.5], [0.5, 0.5]]
    shuffled = np.array([2, 1, 0])
    assert np.array_equal(iprec._fixed_values(query[shuffled], j[shuffled], pos[shuffled], 2, cuts, H, skip), want)


@settings(max_examples=15, deadline=None, derandomize=True, database=None)
@given(st.lists(one_query(), min_size=5, max_size=40), st.booleans())
def test_batch_in_the_background_gives_the_same_bits(queries, bounds):
    """With two cores IPrec's batch runs in a background thread while the other measures are computed;
    with one it runs in line. Every value (and the order of the measures) must be the same either way."""
    from tierank.engine import core as evaluation

    qrels = {f"q{i}": qq for i, (_r, qq) in enumerate(queries)}
    run = {f"q{i}": rq for i, (rq, _q) in enumerate(queries)}
    measures = ["IPrec(recall=0.3)", "P@3", "IPrecAvg", "infAP", "AP", "IPrec"]
    real = evaluation.background
    try:
        evaluation.background = lambda: True
        two = _evaluate(qrels, run, measures, bounds=bounds)
        evaluation.background = lambda: False
        one = _evaluate(qrels, run, measures, bounds=bounds)
    finally:
        evaluation.background = real
    assert list(two.per_query.columns) == list(one.per_query.columns) == measures
    for part in ("per_query", "lower", "upper") if bounds else ("per_query",):
        assert np.array_equal(getattr(two, part).to_numpy(), getattr(one, part).to_numpy()), part


@settings(max_examples=6, deadline=None, derandomize=True, database=None)
@given(st.lists(one_query(), min_size=60, max_size=100), st.sampled_from([1, 9, 200]))
def test_blocks_of_queries_against_brute_force(queries, block):
    """The expectation computed in blocks of queries (a block of at most ``block`` values, so with 1 every
    query alone) still equals the brute force, bounds and fixed modes included."""
    from tierank.measures import iprec

    real = iprec.VALUE_BLOCK
    try:
        iprec.VALUE_BLOCK = block
        _check_runs(queries, RUN_MEASURES)
    finally:
        iprec.VALUE_BLOCK = real


@pytest.mark.parametrize("seed", range(3))
@pytest.mark.parametrize("block", [1, 50, 2000])
def test_blocks_of_queries_give_the_same_bits(seed, block):
    """Every query's values do not depend on which queries share its block: blocks of any size give the
    bits of one block for the whole run."""
    from tierank.measures import iprec

    qrels, run = _tied_collection(seed)
    measures = ["IPrecAvg", "IPrec(recall=0.2)", "IPrec(recall=0.7, rel=2)"]
    real = iprec.VALUE_BLOCK
    try:
        iprec.VALUE_BLOCK = 1 << 40
        whole = _evaluate(qrels, run, measures).per_query.to_numpy()
        iprec.VALUE_BLOCK = block
        blocked = _evaluate(qrels, run, measures).per_query.to_numpy()
    finally:
        iprec.VALUE_BLOCK = real
    assert np.array_equal(whole.view(np.int64), blocked.view(np.int64))


def test_query_blocks_by_hand(monkeypatch):
    """Pairs of queries 0, 0, 1, 2, 2, 2, 5 with at most 3, 1, 2, 1, 1, 1, 4 values, blocks of 4 values:
    values before each query are 0 (q0), 4 (q1), 6 (q2), 9 (q5), i.e. blocks 0, 1, 1, 2: cut before q1
    and before q5, never inside a query (q0 alone already fills a block)."""
    from tierank.measures import iprec

    monkeypatch.setattr(iprec, "VALUE_BLOCK", 4)
    query = np.array([0, 0, 1, 2, 2, 2, 5])
    values = np.array([3, 1, 2, 1, 1, 1, 4])
    assert iprec._query_blocks(query, values) == [(0, 2), (2, 6), (6, 7)]
    assert iprec._query_blocks(query[:0], values[:0]) == []
