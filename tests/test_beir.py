"""tierank.beir: BEIR's evaluate_custom (MRR, R_cap, hole, top-k accuracy) and evaluate, tie-aware.

References: BEIR 2.2.0 itself (beir.retrieval.custom_metrics and EvaluateRetrieval, run in the test) on
tie-free data and, with ties="input", on tied data (BEIR's sort keeps tied documents in insertion order);
on tied data, the brute force over every ordering of each tie of the per-query definitions written
below, each of which is checked against BEIR's own function on every ordering it enumerates.
"""

from __future__ import annotations

import importlib
import math
import sys

import pytest
from beir.retrieval import custom_metrics
from beir.retrieval.evaluation import EvaluateRetrieval
from hypothesis import given, settings
from hypothesis import strategies as st

import tierank.beir as tb
import tierank.pytrec_eval as tp
from oracle import doc_orderings
from tierank.errors import InputError

SETTINGS = settings(max_examples=80, deadline=None, derandomize=True, database=None)
BEIR = {"mrr": custom_metrics.mrr, "recall_cap": custom_metrics.recall_cap, "hole": custom_metrics.hole,
        "top_k_accuracy": custom_metrics.top_k_accuracy}


# ----------------------------------------------------------------- the definitions, one ordered list


def reference(metric, ranked, own, annotated, k):
    """BEIR's per-query value of ``metric`` at k for ``ranked`` (doc ids, best first): relevant means
    a grade > 0 in the query's own judgments ``own``; hole counts documents outside ``annotated``."""
    top = ranked[:k]
    relevant = {d for d, g in own.items() if g > 0}
    if metric == "mrr":
        return next((1.0 / (i + 1) for i, d in enumerate(top) if d in relevant), 0.0)
    if metric == "recall_cap":
        return sum(d in relevant for d in top) / min(len(relevant), k)
    if metric == "hole":
        return sum(d not in annotated for d in top) / k
    return 1.0 if relevant & set(top) else 0.0


def brute_force(metric, qrels, results, ks):
    """{k: [(mean, min, max) per query of results]} over every ordering, each ordering's value also
    checked against BEIR's function run on that ordering alone (strictly decreasing scores)."""
    annotated = {d for docs in qrels.values() for d in docs}
    out = {k: [] for k in ks}
    for qid, scores in results.items():
        own = qrels.get(qid, {})
        per_k = {k: [] for k in ks}
        for order in doc_orderings(scores):   # (doubles, as BEIR sorts them)
            for k in ks:
                per_k[k].append(reference(metric, order, own, annotated, k))
            untied = {qid: {d: float(len(order) - i) for i, d in enumerate(order)}}
            base = qrels if metric == "hole" else {qid: own}
            got = BEIR[metric](base, untied, ks)
            for k in ks:
                key = f"{tb.METRICS[metric][0]}@{k}"
                assert got[key] == round(per_k[k][-1] / len(base), 5), (metric, order, k)
        for k in ks:
            values = per_k[k] or [0.0]   # an empty run: one ordering, nothing retrieved
            out[k].append((math.fsum(values) / len(values), min(values), max(values)))
    return out


# ------------------------------------------------------------------------------------ random cases

DOCS = [f"d{i}" for i in range(7)]


@st.composite
def cases(draw, tied=True, max_docs=5):
    """(qrels, results, k_values): 1-3 queries, up to max_docs documents each, scores from a few values
    (ties) or all distinct, grades -1..2, judgments of documents not retrieved, and queries of qrels
    without results."""
    n_q = draw(st.integers(1, 3))
    qrels, results = {}, {}
    for q in range(n_q):
        qid = f"q{q}"
        docs = draw(st.lists(st.sampled_from(DOCS), max_size=max_docs, unique=True))
        if tied:
            values = draw(st.lists(st.sampled_from([0.1, 0.2, 0.3]), min_size=len(docs), max_size=len(docs)))
        else:
            values = draw(st.permutations(range(len(docs)))) if docs else []
        results[qid] = {d: float(v) for d, v in zip(docs, values)}
        judged = draw(st.lists(st.sampled_from(DOCS), max_size=4, unique=True))
        qrels[qid] = {d: draw(st.integers(-1, 2)) for d in judged}
    if draw(st.booleans()):
        qrels["q-only-judged"] = {"d1": 1}
    ks = draw(st.lists(st.integers(1, 7), min_size=1, max_size=3, unique=True))
    return qrels, results, ks


def _usable(metric, qrels, results):
    """BEIR raises for recall_cap on a query without a relevant document: leave such cases out."""
    return metric != "recall_cap" or all(any(g > 0 for g in qrels[q].values()) for q in results)


@SETTINGS
@given(data=cases(tied=False), metric=st.sampled_from(sorted(tb.METRICS)))
def test_equal_to_beir_without_ties(data, metric):
    qrels, results, ks = data
    if not _usable(metric, qrels, results):
        return
    want = BEIR[metric](qrels, results, ks)
    for ties in ("expected", "trec_eval", "lower", "upper", "input"):
        assert getattr(tb, metric)(qrels, results, ks, ties=ties) == want


@SETTINGS
@given(data=cases(), metric=st.sampled_from(sorted(tb.METRICS)))
def test_input_order_is_beirs_own_on_tied_data(data, metric):
    qrels, results, ks = data
    if _usable(metric, qrels, results):
        assert getattr(tb, metric)(qrels, results, ks, ties="input") == BEIR[metric](qrels, results, ks)


@SETTINGS
@given(data=cases(), metric=st.sampled_from(sorted(tb.METRICS)))
def test_tie_aware_is_the_mean_over_orderings(data, metric):
    qrels, results, ks = data
    strict = _usable(metric, qrels, results)
    want = brute_force(metric, qrels, results, ks) if strict else None
    if want is None:   # recall_cap with a query without relevant documents: None there (MTEB's value)
        got = tb.per_query(qrels, results, ks, metric, strict=False)
        for k in ks:
            assert [v is None for v in got[k]] == [not any(g > 0 for g in qrels[q].values()) for q in results]
        return
    expected = tb.per_query(qrels, results, ks, metric)
    lower = tb.per_query(qrels, results, ks, metric, ties="lower")
    upper = tb.per_query(qrels, results, ks, metric, ties="upper")
    for k in ks:
        for i, (mean, low, high) in enumerate(want[k]):
            assert abs(expected[k][i] - mean) <= 1e-12, (k, i, expected[k][i], mean)
            assert abs(lower[k][i] - low) <= 1e-12 and abs(upper[k][i] - high) <= 1e-12
    # the aggregate: BEIR's sum in the order of results over len(qrels), rounded to 5 digits
    means = getattr(tb, metric)(qrels, results, ks)
    for k in ks:
        total = 0.0
        for value in expected[k]:
            total += value
        assert means[f"{tb.METRICS[metric][0]}@{k}"] == round(total / len(qrels), 5)


# ---------------------------------------------------------------------------------------- the edges


@pytest.mark.parametrize("metric", sorted(tb.METRICS))
def test_edges_against_the_brute_force(metric):
    qrels = {"q1": {"d1": 1, "d2": 0, "d5": 2}, "q2": {"d3": 1}, "q3": {"d9": 1}}
    cases = {
        "all tied": {"q1": {d: 0.5 for d in ("d1", "d2", "d3", "d4", "d5")}},
        "no ties": {"q1": {"d1": 0.1, "d2": 0.9, "d3": 0.5, "d5": 0.7}},
        "no relevant retrieved": {"q2": {"d1": 0.5, "d2": 0.5}},
        "one item": {"q1": {"d5": 1.0}},
        "empty run": {"q1": {}},
        "k inside a tie": {"q1": {"d4": 0.9, "d1": 0.5, "d2": 0.5, "d3": 0.5, "d5": 0.1}},
    }
    for name, results in cases.items():
        for ks in ([1], [1, 2, 5], [4, 5, 6], [50]):   # k = 1, k = n, k > n, k inside a tie
            want = brute_force(metric, qrels, results, ks)
            got = tb.per_query(qrels, results, ks, metric)
            for k in ks:
                assert got[k] == pytest.approx([w[0] for w in want[k]], abs=1e-12), (name, k)


def test_what_counts_as_relevant_and_as_a_hole():
    # grade 0 and negative grades are not relevant; any judgment, for any query, keeps a document out of
    # the holes (d2: judged 0 for q1, d6: judged -1 for q2)
    qrels = {"q1": {"d1": 1, "d2": 0}, "q2": {"d6": -1}}
    results = {"q1": {"d2": 0.9, "d6": 0.8, "d1": 0.7, "d7": 0.6}}
    assert tb.mrr(qrels, results, [1, 3]) == {"MRR@1": 0.0, "MRR@3": round(1 / 3 / 2, 5)}
    assert tb.hole(qrels, results, [4]) == {"Hole@4": round(1 / 4 / 2, 5)}
    assert tb.top_k_accuracy(qrels, results, [2, 3]) == {"Accuracy@2": 0.0, "Accuracy@3": 0.5}
    assert tb.recall_cap(qrels, results, [2, 3]) == {"R_cap@2": 0.0, "R_cap@3": 0.5}
    for metric in tb.METRICS:
        assert getattr(tb, metric)(qrels, results, [1, 3]) == BEIR[metric](qrels, results, [1, 3])
    # hole counts queries of the results that qrels lacks; the mean is over len(qrels)
    results["q9"] = {"d1": 0.5, "d8": 0.5}
    assert tb.hole(qrels, results, [1, 2], ties="input") == BEIR["hole"](qrels, results, [1, 2])
    assert tb.hole(qrels, results, [1]) == {"Hole@1": round((0 + 0.5) / 2, 5)}   # d1 or d8 first


def test_evaluate_custom_spellings_and_errors():
    qrels = {"q1": {"d1": 1}}
    results = {"q1": {"d1": 0.5, "d2": 0.5}}
    for metric, (prefix, _, spellings) in tb.METRICS.items():
        for spelling in spellings + (spellings[0].upper(),):
            got = tb.evaluate_custom(qrels, results, [1, 2], spelling)
            assert got == getattr(tb, metric)(qrels, results, [1, 2])
            assert list(got) == [f"{prefix}@1", f"{prefix}@2"]
    errors = [
        (lambda: tb.evaluate_custom(qrels, results, [1], "ndcg"), "unknown metric 'ndcg'"),
        (lambda: tb.mrr(qrels, {"q2": {"d1": 1.0}}, [1]), "query 'q2' of the results has no entry in qrels"),
        (lambda: tb.recall_cap({"q1": {"d1": 0}}, results, [1]), "query 'q1' has no relevant document"),
        (lambda: tb.mrr(qrels, results, []), "k_values is empty"),
        (lambda: tb.mrr(qrels, results, [0]), "k_values must be positive integers, got 0"),
        (lambda: tb.mrr(qrels, results, [1, 5, 1]), "k_values repeats 1"),
        (lambda: tb.mrr({"q1": {"d1": "1"}}, results, [1]), "the grade of document 'd1' for query 'q1'"),
        (lambda: tb.mrr(qrels, {"q1": {"d1": float("nan")}}, [1]), "NaN"),
        (lambda: tb.mrr(qrels, results, [1], ties="best"), "ties"),
        (lambda: tb.hole({}, results, [1]), "qrels is empty"),
        (lambda: tb.mrr(qrels, [("q1", "d1", 1.0)], [1]), "results must be a dict"),
    ]
    for call, message in errors:
        with pytest.raises(InputError, match=message):
            call()


# ---------------------------------------------------------------------------- evaluate and install


def test_evaluate_is_beirs_with_tierank_pytrec_eval():
    qrels = {"q1": {"d1": 1, "d3": 2}, "q2": {"d2": 1, "d5": 1}}
    untied = {"q1": {"d1": 0.9, "d2": 0.8, "d3": 0.7, "q1": 0.95}, "q2": {"d1": 0.5, "d2": 0.4, "d5": 0.3}}
    tied = {"q1": {"d1": 0.9, "d2": 0.9, "d3": 0.9, "d4": 0.1}, "q2": {"d1": 0.5, "d2": 0.5, "d5": 0.5}}
    for results in (untied, tied):
        copy = {q: dict(d) for q, d in results.items()}
        want = EvaluateRetrieval.evaluate(qrels, copy, [1, 2, 3])   # BEIR pops the id "q1" from its argument
        assert tb.evaluate(qrels, results, [1, 2, 3], ties="trec_eval") == want
    assert "q1" in untied["q1"]   # tierank leaves it in place
    assert tb.evaluate(qrels, untied, [1, 2, 3]) == tb.evaluate(qrels, untied, [1, 2, 3], ties="trec_eval")
    # tied: the mean of pytrec_eval's values over the orderings (tierank.pytrec_eval's tie-aware values)
    ev = tp.RelevanceEvaluator(qrels, {"ndcg_cut.2"})
    per_query = ev.evaluate(tied)
    assert tb.evaluate(qrels, tied, [2])[0] == {"NDCG@2": round(sum(r["ndcg_cut_2"] for r in per_query.values()) / 2, 5)}


@pytest.mark.parametrize("before", [True, False], ids=["beir imported before", "beir imported after"])
def test_install_switches_beir_over_and_uninstall_restores(before, monkeypatch):
    qrels = {"q1": {"d1": 1, "d3": 2}, "q2": {"d2": 1}}
    tied = {"q1": {"d1": 0.9, "d2": 0.9, "d3": 0.9, "d4": 0.1}, "q2": {"d1": 0.5, "d2": 0.5}}
    original = {name: getattr(custom_metrics, name) for name in tb.METRICS}
    real_pytrec_eval = sys.modules["pytrec_eval"]
    if not before:   # a script that installs first and imports BEIR's evaluation afterwards
        monkeypatch.delitem(sys.modules, "beir.retrieval.evaluation")
        monkeypatch.delattr(sys.modules["beir.retrieval"], "evaluation")
    try:
        tb.install()
        evaluation = importlib.import_module("beir.retrieval.evaluation")
        ER = evaluation.EvaluateRetrieval
        for metric in tb.METRICS:
            assert ER.evaluate_custom(qrels, tied, [1, 3], metric) == getattr(tb, metric)(qrels, tied, [1, 3])
            assert ER(k_values=[1]).evaluate_custom(qrels, tied, [1], metric) == getattr(tb, metric)(qrels, tied, [1])
            assert getattr(custom_metrics, metric)(qrels, tied, [2]) == getattr(tb, metric)(qrels, tied, [2])
        assert ER.evaluate(qrels, tied, [1, 3]) == tb.evaluate(qrels, tied, [1, 3])
        assert ER.evaluate(qrels, tied, [1, 3]) != tb.evaluate(qrels, tied, [1, 3], ties="trec_eval")
        tb.install(ties="trec_eval")   # again: replaces the tie mode
        assert ER.evaluate(qrels, tied, [1, 3]) == tb.evaluate(qrels, tied, [1, 3], ties="trec_eval")
        assert ER.evaluate_custom(qrels, tied, [1], "mrr") == tb.mrr(qrels, tied, [1], ties="trec_eval")
        assert sys.modules["pytrec_eval"] is real_pytrec_eval
    finally:
        tb.uninstall()
    assert {name: getattr(custom_metrics, name) for name in tb.METRICS} == original
    assert evaluation.pytrec_eval is real_pytrec_eval
    assert evaluation.EvaluateRetrieval.evaluate_custom(qrels, tied, [1], "mrr") == custom_metrics.mrr(qrels, tied, [1])
    tb.uninstall()   # twice: nothing to do


def test_installed_block():
    qrels = {"q1": {"d1": 1}}
    tied = {"q1": {"d1": 0.5, "d2": 0.5}}
    from beir.retrieval.evaluation import EvaluateRetrieval   # the module in sys.modules now

    with tb.installed(ties="lower"):
        assert EvaluateRetrieval.evaluate_custom(qrels, tied, [1], "acc") == {"Accuracy@1": 0.0}
    assert EvaluateRetrieval.evaluate_custom(qrels, tied, [1], "acc") == {"Accuracy@1": 1.0}
    with pytest.raises(InputError):
        tb.install(ties="nope")
