"""trec_eval 10's other measures: relative_P (P with clip_at_r), Rprec_mult, set_relative_P, set_map
(SetAP), utility, binG, graded rbp, rbp_resid, and ranx's hits@k.

Expected values come from a run-level brute force over every ordering of tied documents, written here
from trec_eval's C definitions (m_rel_P.c, m_Rprec_mult.c, m_set_rel_P.c, m_set_map.c, m_utility.c,
m_binG.c, m_rbp.c, m_rbp_resid.c) one position at a time, with judged, in-pool unjudged (negative grade)
and absent documents kept apart; from pytrec_eval (trec_eval 9) on tie-free runs; and by hand.
"""

from __future__ import annotations

import itertools
import math
import warnings

import numpy as np
import pytest
import pytrec_eval
from hypothesis import given, settings
from hypothesis import strategies as st

import tierank
from tierank.measures import parse_measure


def plain(measure: str, ranking: list[str], qrels_q: dict) -> float:
    """trec_eval's definitions on one ranking (grade None: absent; negative: in the pool, unjudged)."""
    m = parse_measure(measure)
    p, k = m.params, m.cutoff
    grades = [qrels_q.get(d) for d in ranking]
    rel = p.get("rel", 1)
    relevant = [g is not None and rel is not None and g >= rel for g in grades]
    judged_grades = [g for g in qrels_q.values() if g >= 0]
    R = sum(1 for g in judged_grades if rel is not None and g >= rel)
    n = len(ranking)
    H = sum(relevant)
    if m.name == "P":   # clip_at_r: trec_eval relative_P, rel_so_far / min(cutoff, R); 0 when R = 0
        den = min(k, R) if p["clip_at_r"] else k
        return sum(relevant[:k]) / den if den else 0.0
    if m.name == "RprecMult":
        cut = int(p["mult"] * R + 0.9)
        return sum(relevant[:cut]) / cut if cut else 0.0
    if m.name == "Hits":
        return float(sum(relevant[:k]))
    if m.name == "SetRelP":
        return H / min(n, R) if n and R else 0.0
    if m.name == "SetAP":
        return H * H / (n * R) if n and R else 0.0
    if m.name == "Utility":
        a, b, c, d, N = p["a"], p["b"], p["c"], p["d"], p["N"]
        return a * H + b * (n - H) + c * (R - H) + d * (N + H - n - R)
    if m.name == "BinG":
        total, so_far = 0.0, 0
        for i, r in enumerate(relevant):
            if r:
                so_far += 1
                total += 1.0 / math.log2(3 + i - so_far)
        return total / R if so_far else 0.0
    if m.name == "RBP":
        q = p["p"]
        top = len(ranking) if k is None else min(k, len(ranking))
        if rel is not None:
            gains = [1.0 if r else 0.0 for r in relevant]
        else:   # trec_eval: gains = grades, scaled by the largest judged grade when it exceeds 1
            scale = max(1.0, max(judged_grades, default=0.0))
            gains = [(g / scale) if g is not None and g >= 0 else 0.0 for g in grades]
        return (1 - q) * sum(gains[i] * q ** i for i in range(top))
    if m.name == "RBPResid":
        q = p["p"]
        unj = [g is None or g < 0 for g in grades]
        if not any(unj):
            return 0.0
        return q ** n + (1 - q) * sum(q ** i for i, u in enumerate(unj) if u)
    if m.name == "NDCGRel":   # m_ndcg_rel.c, linear gains (grade; unjudged 0)
        gains = [g if g is not None and g >= 0 else 0.0 for g in grades]
        ideal = sorted((g for g in judged_grades if g > 0), reverse=True)
        P = len(ideal)
        if not P:
            return 0.0
        idcg = list(itertools.accumulate(x / math.log2(i + 2) for i, x in enumerate(ideal)))
        dcg, total, hits = 0.0, 0.0, 0
        for i, gn in enumerate(gains):
            dcg += gn / math.log2(i + 2)
            if gn > 0:
                total += dcg / idcg[min(i, P - 1)]
                hits += 1
        return (total + (P - hits) * dcg / idcg[-1]) / P
    if m.name == "infAP":   # m_infap.c, one position at a time
        nonrel = rel_so_far = unj = 0
        total = 0.0
        for j, g in enumerate(grades):
            if g is None:
                continue                     # not in the pool: only moves ranks
            if g < 0:
                unj += 1
            elif g < rel:
                nonrel += 1
            else:
                rel_so_far += 1
                if j == 0:
                    total += 1.0
                else:
                    a = rel_so_far - 1
                    total += 1.0 / (j + 1) + (j / (j + 1)) * ((a + nonrel + unj) / j) * (
                        (a + 1e-5) / (a + nonrel + 2e-5))
        return total / R if R else 0.0
    if m.name == "G":   # m_G.c: cost max(ideal gain, 1) per rank, linear gains (unjudged 0)
        gains = [g if g is not None and g >= 0 else 0.0 for g in grades]
        ideal = sorted((g for g in judged_grades if g > 0), reverse=True)
        if not ideal:
            return 0.0
        cost = results = value = 0.0
        for i, gn in enumerate(gains):
            results += gn
            cost += max(ideal[i] if i < len(ideal) else 0.0, 1.0)
            if gn != 0:
                value += gn / math.log2(2 + cost - results)
        return value / sum(ideal)
    if m.name == "Rndcg":
        return _rndcg([g if g is not None and g >= 0 else 0.0 for g in grades], judged_grades, R)
    if m.name in ("IPrec", "IPrecAvg"):
        levels = [p["recall"]] if m.name == "IPrec" else list(p["levels"])
        return sum(_iprec(level, relevant, H, R, p["rounding"]) for level in levels) / len(levels)
    raise ValueError(measure)


def _rndcg(gains, judged_grades, R):
    """m_Rndcg.c's three loops, literally (linear gains; levels 0..max of the judged grades)."""
    if R == 0:
        return 0.0
    ideal = sorted((g for g in judged_grades if g >= 0), reverse=True)

    def ideal_gain(i):   # gain of the i-th ideal document; 0 past the judged ones
        return ideal[i] if i < len(ideal) else 0.0
    n, total, count, dcg, idcg = len(gains), 0.0, 0, 0.0, 0.0
    old, i = ideal_gain(0), 0
    while i < n and ideal_gain(i - 1 if i else 0) > 0:
        new = ideal_gain(i)
        if new != old:
            if idcg > 0:
                total, count = total + dcg / idcg, count + 1
            old = new
        dcg += gains[i] / math.log2(i + 2)
        if new > 0:
            idcg += new / math.log2(i + 2)
        i += 1
    if i < n:
        while i < n:
            dcg += gains[i] / math.log2(i + 2)
            i += 1
        if idcg > 0:
            total, count = total + dcg / idcg, count + 1
    while ideal_gain(i - 1) > 0:
        new = ideal_gain(i)
        if new != old:
            if idcg > 0:
                total, count = total + dcg / idcg, count + 1
            old = new
        if new > 0:
            idcg += new / math.log2(i + 2)
        i += 1
    return total / count if count else 0.0


def _iprec(level, relevant, H, R, rounding):
    """m_iprec_at_recall.c: walk the ranking backwards keeping the best precision seen."""
    c = math.floor(level * R + (0.9 if rounding == "trec9" else 0.5))
    if c > H or not relevant:
        return 0.0
    best, so_far, value = H / len(relevant), H, None
    for i in range(len(relevant), 0, -1):
        if so_far == 0:
            break
        best = max(best, so_far / i)
        if relevant[i - 1]:
            if so_far == c:
                value = best
            so_far -= 1
    return best if value is None else value


def _orderings(run_q: dict):
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
    return sorted(run_q, key=lambda d: (run_q[d], d), reverse=True)


MEASURES = ["P(clip_at_r=True)@{k}", "P(clip_at_r=True, rel=2)@{k}", "relative_P.{k}", "RprecMult",
            "RprecMult(mult=0.2)", "RprecMult(mult=2.5, rel=2)", "Hits@{k}", "Hits(rel=2)@{k}", "SetRelP",
            "SetRelP(rel=2)", "SetAP", "SetAP(rel=0.5)", "Utility", "Utility(a=2, b=-1, c=0.5, d=0.25, N=40)",
            "BinG", "BinG(rel=2)", "RBP", "RBP@{k}", "RBP(p=0.5)", "rbp", "RBP(p=0, rel=None)",
            "RBPResid", "RBPResid(p=0.5)", "rbp_resid", "IPrec", "IPrec(recall=0.3)", "IPrec(recall=1, rel=2)",
            "IPrec(recall=0.2, rounding='trec9')", "IPrecAvg", "IPrecAvg(levels=(0.25, 0.5, 0.75))", "11pt_avg", "NDCGRel", "ndcg_rel", "Rndcg", "Rndcg(rel=2)", "G", "infAP", "infAP(rel=2)"]


def fill(template: str, k: int) -> str:
    return template.replace("{k}", str(k))


@st.composite
def run_case(draw):
    n_q = draw(st.integers(1, 3))
    qrels, run = {}, {}
    for q in range(n_q):
        n = draw(st.integers(1, 6))
        docs = [f"d{i}" for i in range(n + 3)]
        scores = draw(st.lists(st.integers(0, 2), min_size=n, max_size=n))
        run[f"q{q}"] = {d: float(s) for d, s in zip(docs, scores)}
        kinds = draw(st.lists(st.sampled_from([None, -2, 0, 0, 1, 2, 3, 0.5]), min_size=n + 3, max_size=n + 3))
        qrels[f"q{q}"] = {d: g for d, g in zip(docs, kinds) if g is not None} or {"dz": 1}
    k = draw(st.integers(1, 8))
    return qrels, run, k


def _evaluate(qrels, run, measures, **kw):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", tierank.TierankWarning)
        return tierank.evaluate(qrels, run, measures, **kw)


@settings(max_examples=400, deadline=None, derandomize=True, database=None)
@given(run_case())
def test_runs_against_brute_force(case):
    qrels, run, k = case
    measures = list(dict.fromkeys(fill(t, k) for t in MEASURES))
    exp = _evaluate(qrels, run, measures, bounds=True)
    if any(g != int(g) for judged in qrels.values() for g in judged.values()):
        # trec_eval reads grades as integers (0.5 as 0): ties="trec_eval" refuses them (test_trec_eval_grades.py)
        with pytest.raises(tierank.InputError, match=r"is 0\.5, which trec_eval reads as 0"):
            _evaluate(qrels, run, measures, ties="trec_eval")
        fixed = None
    else:
        fixed = _evaluate(qrels, run, measures, ties="trec_eval")
    best = _evaluate(qrels, run, measures, ties="optimistic")
    for q in exp.per_query.index:
        for m in measures:
            mean, lo, hi = brute_force(m, run[q], qrels[q])
            where = (q, m, run[q], qrels[q])
            assert exp.per_query.loc[q, m] == pytest.approx(mean, abs=1e-12), where
            assert exp.lower.loc[q, m] == pytest.approx(lo, abs=1e-12), where
            assert exp.upper.loc[q, m] == pytest.approx(hi, abs=1e-12), where
            if m.startswith("infAP"):   # relevant first is not always infAP's best order (docs/conventions.md)
                assert lo - 1e-12 <= best.per_query.loc[q, m] <= hi + 1e-12, where
            else:
                assert best.per_query.loc[q, m] == pytest.approx(hi, abs=1e-12), where
            if fixed is not None:
                assert fixed.per_query.loc[q, m] == pytest.approx(plain(m, trec_order(run[q]), qrels[q]), abs=1e-12)


def test_brute_force_by_hand():
    # d1 (grade 2) and d2 (not in pool) tie above d3 (grade 0); R = 1 at rel 1, judged grades {2, 0}
    qrels = {"q": {"d1": 2, "d3": 0}}
    run = {"q": {"d1": 1.0, "d2": 1.0, "d3": 0.0}}
    # binG: d1 first scores 1/log2(2) = 1, second (d2 above) 1/log2(3): mean (1 + 1/log2 3) / 2
    assert brute_force("BinG", run["q"], qrels["q"])[0] == pytest.approx((1 + 1 / math.log2(3)) / 2)
    # graded rbp, p = 0.9: gains 2/2 = 1 for d1; d1 at rank 1 or 2: 0.1 * (1 + 0.9) / 2
    assert brute_force("rbp", run["q"], qrels["q"])[0] == pytest.approx(0.1 * 1.9 / 2)
    # rbp_resid: d2 unjudged at rank 1 or 2: p^3 + 0.1 * (1 + 0.9) / 2
    assert brute_force("rbp_resid", run["q"], qrels["q"])[0] == pytest.approx(0.9 ** 3 + 0.1 * 1.9 / 2)
    # utility (1, -1, 0, 0): H = 1, n = 3: 1 - 2 = -1 in every ordering
    assert brute_force("Utility", run["q"], qrels["q"]) == (-1.0, -1.0, -1.0)
    got = _evaluate(qrels, run, ["BinG", "rbp", "rbp_resid", "Utility"]).per_query.loc["q"]
    assert got["BinG"] == pytest.approx((1 + 1 / math.log2(3)) / 2, abs=1e-15)
    assert got["rbp"] == pytest.approx(0.095, abs=1e-15)


def _collection(seed):
    rng = np.random.default_rng(seed)
    qrels, run = {}, {}
    for q in range(20):
        n = int(rng.integers(1, 30))
        docs = [f"d{i}" for i in rng.permutation(60)[:n + 10]]
        run[f"q{q}"] = dict(zip(docs[:n], rng.permutation(n).astype(float)))   # distinct: one ordering
        qrels[f"q{q}"] = {d: int(rng.choice([0, 0, 1, 2, 3])) for d in docs if rng.random() < 0.6}
        qrels[f"q{q}"].setdefault(docs[-1], 1)
    return qrels, run


PYTREC = {"iprec_at_recall_0.10": "iprec_at_recall_0.10", "iprec_at_recall_0.50": "iprec_at_recall_0.50",
          "iprec_at_recall_1.00": "iprec_at_recall_1.00", "11pt_avg": "11pt_avg", "ndcg_rel": "ndcg_rel", "Rndcg": "Rndcg", "G": "G", "infAP": "infAP",
          "relative_P_5": "relative_P.5", "relative_P_10": "relative_P.10", "set_relative_P": "set_relative_P",
          "set_map": "set_map", "utility": "utility", "binG": "binG", "Rprec_mult_0.20": "Rprec_mult_0.20",
          "Rprec_mult_1.00": "Rprec_mult_1.00", "Rprec_mult_2.00": "Rprec_mult_2.00"}


@pytest.mark.parametrize("seed", range(4))
@pytest.mark.parametrize("rel", [1, 2])
def test_pytrec_eval_crosscheck(seed, rel):
    qrels, run = _collection(seed)
    wanted = {"relative_P.5,10", "set_relative_P", "set_map", "utility", "binG", "Rprec_mult.0.2,1.0,2.0",
              "iprec_at_recall", "11pt_avg", "ndcg_rel", "Rndcg", "G", "infAP"}
    want = pytrec_eval.RelevanceEvaluator(qrels, wanted, relevance_level=rel).evaluate(run)
    # trec_eval's -l sets the level of the binary measures; ndcg_rel keeps the grades as gains
    measures = [parse_measure(t).replace(rel=rel) if "rel" in parse_measure(t).params else parse_measure(t)
                for t in PYTREC.values()]
    for ties in ("trec_eval", "expected", "pessimistic"):
        res = _evaluate(qrels, run, measures, ties=ties, trec_eval_version=9)
        for q in want:
            for trec, m in zip(PYTREC, measures):
                assert res.per_query.loc[q, str(m)] == pytest.approx(want[q][trec], abs=1e-12), (q, trec, ties)


@pytest.mark.parametrize("text, canonical", [
    ("relative_P.10", "P(clip_at_r=True)@10"), ("relative_P@10", "P(clip_at_r=True)@10"),
    ("Rprec_mult.0.2", "RprecMult(mult=0.2)"), ("hits@10", "Hits@10"), ("set_map", "SetAP"),
    ("SetAP", "SetAP"), ("set_relative_P", "SetRelP"), ("utility.2,-1,0,0", "Utility(a=2)"),
    ("binG", "BinG"), ("rbp", "RBP(p=0.9)"), ("rbp.p=0.8", "RBP"), ("rbp_resid", "RBPResid"),
    ("RBP(rel=1)", "RBP(rel=1)"), ("rbp.95", "RBP(p=0.95, rel=1)"), ("rbp.8", "RBP(rel=1)"),
])
def test_names(text, canonical):
    assert str(parse_measure(text)) == canonical


def test_utility_needs_four_coefficients():
    with pytest.raises(tierank.InputError, match="four coefficients"):
        parse_measure("utility.1,2")


def test_iprec_by_hand():
    # R = 2, relevant at ranks 2 and 3 of 4: precisions 1/2 and 2/3; level 0.5 -> c = 1: max(1/2, 2/3)
    qrels = {"q": {"b": 1, "c": 1}}
    run = {"q": {"a": 4.0, "b": 3.0, "c": 2.0, "d": 1.0}}
    got = _evaluate(qrels, run, ["IPrec(recall=0.5)", "IPrec(recall=1)"]).per_query.loc["q"]
    assert got.tolist() == [pytest.approx(2 / 3), pytest.approx(2 / 3)]
    # a and b tie at the top: b first (1/1, then 2/3 for c) or a first (1/2, 2/3): mean of max(1, 2/3) and
    # max(1/2, 2/3) = (1 + 2/3) / 2 at level 0.5
    run = {"q": {"a": 4.0, "b": 4.0, "c": 2.0, "d": 1.0}}
    res = _evaluate(qrels, run, ["IPrec(recall=0.5)"], bounds=True)
    assert res.per_query.iloc[0, 0] == pytest.approx((1 + 2 / 3) / 2, abs=1e-15)
    assert (res.lower.iloc[0, 0], res.upper.iloc[0, 0]) == (pytest.approx(2 / 3), 1.0)


def test_iprec_beyond_the_exact_budget_names_the_query_and_tie():
    # five relevant documents (ties of up to four are counted in closed form, at one unit per value)
    qrels = {"q7": {f"d{i}": int(i % 3 == 0) for i in range(15)}}
    run = {"q7": {f"d{i}": 1.0 for i in range(15)}}
    with pytest.raises(tierank.InputError, match=r"tie: ranks 1-15, 15 documents\).*'q7'"):
        _evaluate(qrels, run, ["IPrec(recall=0.5)"], tie_cost_budget=50)
    # fixed orders and bounds need no enumeration
    _evaluate(qrels, run, ["IPrec(recall=0.5)"], ties="trec_eval", tie_cost_budget=50)
    _evaluate(qrels, run, ["IPrec(recall=0.5)"], ties="optimistic", bounds=True, tie_cost_budget=50)


def test_iprec_budget_is_per_query():
    # each query: a tie of 4 with 2 relevant, level 0.5 -> c = 1: both relevant documents' values count,
    # 3 offsets each, counted in closed form: 2 x 3 = 6 units a query, 18 in all: a budget of 6 passes
    # (it does not add up the queries: the check is the same whatever blocks a run is cut into), 5 not
    qrels = {f"q{i}": {"a": 1, "c": 1} for i in range(3)}
    run = {f"q{i}": {"a": 1.0, "b": 1.0, "c": 1.0, "d": 1.0, "e": 0.0} for i in range(3)}
    assert _evaluate(qrels, run, ["IPrec(recall=0.5)"], tie_cost_budget=6).per_query.shape == (3, 1)
    with pytest.raises(tierank.InputError, match=r"needs about 6 operations in this query, beyond the budget of "
                                                 r"5 .*ranks 1-4.*'q0'"):
        _evaluate(qrels, run, ["IPrec(recall=0.5)"], tie_cost_budget=5)
    assert _evaluate(qrels, run, ["IPrec(recall=0.5)"], ties="trec_eval", tie_cost_budget=5).per_query.shape == (3, 1)
