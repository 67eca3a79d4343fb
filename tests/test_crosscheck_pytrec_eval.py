"""Cross-check tierank against pytrec_eval (trec_eval 9/10 compiled as a Python extension).

Expected values all come from ``pytrec_eval.RelevanceEvaluator`` run inside the tests:

* ``ties="trec_eval"`` (score descending, then document id in descending string order) must
  reproduce pytrec_eval per query, for every measure the two share, at relevance level 1 and 2;
* a run without ties has one ordering, so every tie mode must reproduce pytrec_eval;
* ``ties="optimistic"`` / ``"pessimistic"`` and the bounds must equal pytrec_eval on the run
  re-ordered with each tie sorted by grade (given to pytrec_eval with strictly decreasing scores);
* ``ties="expected"`` must equal the mean of pytrec_eval over *every* ordering of the tied
  documents (enumerated on small runs), and the bounds their min / max.

Behaviour of pytrec_eval checked here (and relied upon):
* only queries present in both the qrels and the run are evaluated; a query whose judgments are
  all non-relevant is evaluated (every measure 0);
* negative grades (TREC's -2 "junk") behave exactly like grade 0 (non-relevant, zero gain);
* ``relevance_level=2`` changes the binary measures and ``num_rel`` but NOT ``ndcg`` /
  ``ndcg_cut`` (gains stay the raw grades), so tierank's plain ``nDCG`` is compared with it.
"""

from __future__ import annotations

import math
import warnings

import numpy as np
import pandas as pd
import pytest
import pytrec_eval

import tierank
from oracle import doc_orderings
from trec_measure_names import tierank_name

ATOL = 1e-9
CUTS = (1, 3, 5, 10, 20, 50)  # 50 > longest list (40): cutoffs beyond the list too
_CUTS = ",".join(map(str, CUTS))
PYTREC_MEASURES = {
    "map",
    f"map_cut.{_CUTS}",
    f"P.{_CUTS}",
    f"recall.{_CUTS}",
    "ndcg",
    f"ndcg_cut.{_CUTS}",
    "recip_rank",
    "Rprec",
    f"success.{_CUTS}",
    "num_ret",
    "num_rel",
    "num_rel_ret",
}



def _measure_map(trec_names, rel=1):
    out = {}
    for t in sorted(trec_names):
        name = tierank_name(t, rel)
        assert name is not None, t
        out[t] = name
    return out


# --------------------------------------------------------------------------- data

_PREFIXES = ["d", "D", "doc-", "d_", "FT9"]  # mixed case / punctuation: byte order matters


def _doc_ids(rng, n):
    ids = set()
    while len(ids) < n:
        ids.add(f"{rng.choice(_PREFIXES)}{int(rng.integers(0, 3000))}")
    ids = sorted(ids)
    rng.shuffle(ids)
    return ids


def _grade(rng):
    return int(rng.choice([0, 1, 2, 3, -2], p=[0.45, 0.25, 0.13, 0.12, 0.05]))


def make_collection(seed=0, n_queries=30, max_docs=40, score_range=5):
    """Random qrels / run dicts with many tied integer-valued scores.

    Also: a query with no relevant judgment, a query whose relevant documents are all grade 1
    (none at level 2), a query entirely tied, a query with one retrieved document, a query
    retrieving no judged document, judged documents not retrieved, two queries only in the qrels
    and two only in the run.
    """
    rng = np.random.default_rng(seed)
    qrels, run = {}, {}
    for i in range(n_queries):
        qid = f"q{i}"  # 'q10' < 'q2' in string order
        n_ret = int(rng.integers(1, max_docs + 1))
        n_extra = int(rng.integers(0, 9))  # judged, not retrieved
        docs = _doc_ids(rng, n_ret + n_extra)
        retrieved, unretrieved = docs[:n_ret], docs[n_ret:]
        run[qid] = {d: float(rng.integers(0, score_range)) for d in retrieved}
        judged = [d for d in retrieved if rng.random() < 0.6] + unretrieved
        qrels[qid] = {d: _grade(rng) for d in judged}
        if not any(g >= 1 for g in qrels[qid].values()):  # keep most queries with something relevant
            qrels[qid][docs[0]] = 1
    # corner cases (overwrite a few of the random ones)
    qrels["q0"] = {d: int(rng.choice([0, -2])) for d in list(run["q0"])[:5]} | {"zz-unret": 0}
    qrels["q1"] = {d: 1 for d in list(run["q1"])[::2]} | {"zz-unret": 0}  # nothing at level 2
    run["q2"] = {d: 2.0 for d in run["q2"]}  # one tie
    qrels["q2"] = {d: _grade(rng) for d in run["q2"]} | {list(run["q2"])[0]: 3}
    run["q3"] = {"d42": 1.0}  # one retrieved document
    qrels["q3"] = {"d42": 2, "d7": 1, "d100": 3}
    qrels["q4"] = {"nowhere1": 2, "nowhere2": 1}  # nothing retrieved is judged
    qrels["qrels_only_a"] = {"d1": 1, "d2": 2, "d3": 0}
    qrels["qrels_only_b"] = {"d5": 3}
    run["run_only_a"] = {"d1": 1.0, "d2": 1.0}
    run["run_only_b"] = {"d9": 0.0}
    return qrels, run


QRELS, RUN = make_collection()
SHARED = sorted(set(QRELS) & set(RUN))


def _evaluate(*args, **kwargs):
    """tierank.evaluate with its (expected) warnings about unmatched queries silenced."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return tierank.evaluate(*args, **kwargs)


def _pytrec(qrels, run, rel=1, measures=PYTREC_MEASURES):
    return pytrec_eval.RelevanceEvaluator(qrels, measures, relevance_level=rel).evaluate(run)


def _pytrec_names(result):
    names = set(next(iter(result.values())))
    assert len(names) == 4 + 5 * len(CUTS) + 3  # map ndcg recip_rank Rprec + 5 cut families + 3 counts
    return names


def _assert_per_query(res, expected, mapping, what="per_query", qids=None):
    frame = getattr(res, what)
    qids = sorted(expected) if qids is None else qids
    for qid in qids:
        for trec, ours in mapping.items():
            got = float(frame.loc[qid, ours])
            want = expected[qid][trec]
            assert abs(got - want) <= ATOL, f"{what} {qid} {trec}->{ours}: tierank {got!r}, pytrec_eval {want!r}"


def _strictly_ordered_run(ordering_per_query):
    """A run giving pytrec_eval exactly these orders (best first): strictly decreasing scores."""
    return {q: {d: float(len(docs) - i) for i, d in enumerate(docs)} for q, docs in ordering_per_query.items()}


def _grade_sorted_orders(qrels, run, best_first: bool):
    """Each query's documents by score descending, each tie sorted by grade (desc or asc)."""
    orders = {}
    for q, docs in run.items():
        qr = qrels.get(q, {})
        sign = -1 if best_first else 1
        orders[q] = sorted(docs, key=lambda d: (-docs[d], sign * qr.get(d, 0), d))
    return orders


# ------------------------------------------------------------------ pytrec_eval facts


def test_collection_has_ties_and_string_order_differs_from_numeric():
    tied = sum(len(set(s.values())) < len(s) for s in RUN.values())
    assert tied >= 20
    assert "d9" > "d10" and "D9" < "d1"  # what trec_eval's strcmp does, too


def test_pytrec_eval_scope_and_negative_grades():
    """What the comparisons below rely on about pytrec_eval itself."""
    res = _pytrec(QRELS, RUN)
    # only queries in both inputs
    assert set(res) == set(SHARED)
    # a query with only non-relevant judgments is evaluated, with zeros
    assert res["q0"]["map"] == 0.0 and res["q0"]["ndcg"] == 0.0 and res["q0"]["num_rel"] == 0.0
    # -2 behaves as 0 in every shared measure, at both relevance levels
    flat = {q: {d: max(g, 0) for d, g in j.items()} for q, j in QRELS.items()}
    assert flat != QRELS
    for rel in (1, 2):
        assert _pytrec(flat, RUN, rel) == _pytrec(QRELS, RUN, rel)
    # relevance_level does not touch ndcg / ndcg_cut
    lvl2 = _pytrec(QRELS, RUN, 2)
    for q in SHARED:
        for m, v in res[q].items():
            if m.startswith("ndcg") or m == "num_ret":
                assert lvl2[q][m] == v, (q, m)
    assert any(lvl2[q]["map"] != res[q]["map"] for q in SHARED)


# ------------------------------------------------------------------ trec_eval tie-break


@pytest.mark.parametrize("rel", [1, 2])
def test_trec_eval_ties_match_pytrec_eval(rel):
    expected = _pytrec(QRELS, RUN, rel)
    mapping = _measure_map(_pytrec_names(expected), rel)
    with pytest.warns(Warning):  # queries only in the qrels / only in the run are left out
        res = tierank.evaluate(QRELS, RUN, list(mapping.values()), ties="trec_eval")
    assert list(res.per_query.index) == sorted(expected)  # plain string order, shared queries only
    assert list(res.per_query.columns) == list(mapping.values())
    _assert_per_query(res, expected, mapping)


@pytest.mark.parametrize("rel", [1, 2])
def test_trec_eval_means_match_pytrec_aggregation(rel):
    expected = _pytrec(QRELS, RUN, rel)
    mapping = _measure_map(_pytrec_names(expected), rel)
    measures = list(mapping.values()) + ["NumQ"]
    res = _evaluate(QRELS, RUN, measures, ties="trec_eval")
    assert set(res.mean) == set(measures)
    for trec, ours in mapping.items():
        want = pytrec_eval.compute_aggregated_measure(trec, [expected[q][trec] for q in expected])
        assert abs(res.mean[ours] - want) <= 1e-9 * max(1.0, abs(want)), (trec, ours, res.mean[ours], want)
    # counts are sums (trec_eval's "all" line), num_q the number of evaluated queries
    assert res.mean["NumRet"] == sum(len(RUN[q]) for q in expected)
    assert res.mean["NumQ"] == len(expected)


def test_dataframe_input_matches_pytrec_eval():
    expected = _pytrec(QRELS, RUN)
    mapping = _measure_map(_pytrec_names(expected))
    qrels_df = pd.DataFrame(
        [(q, d, g) for q, j in QRELS.items() for d, g in j.items()], columns=["query_id", "doc_id", "relevance"]
    )
    run_df = pd.DataFrame(
        [(q, d, s) for q, r in RUN.items() for d, s in r.items()], columns=["query_id", "doc_id", "score"]
    )
    run_df = run_df.sample(frac=1.0, random_state=3).reset_index(drop=True)  # row order must not matter
    res = _evaluate(qrels_df, run_df, list(mapping.values()), ties="trec_eval")
    assert list(res.per_query.index) == sorted(expected)
    _assert_per_query(res, expected, mapping)


def test_integer_scores_same_as_float_scores():
    expected = _pytrec(QRELS, RUN)
    mapping = _measure_map(_pytrec_names(expected))
    int_run = {q: {d: int(s) for d, s in r.items()} for q, r in RUN.items()}
    res = _evaluate(QRELS, int_run, list(mapping.values()), ties="trec_eval")
    _assert_per_query(res, expected, mapping)


# ------------------------------------------------------------------ runs without ties


def _untied(seed=5):
    rng = np.random.default_rng(seed)
    run = {}
    for q, docs in RUN.items():
        vals = rng.permutation(len(docs)).astype(float) * 0.37 + rng.uniform(0, 0.01)
        run[q] = dict(zip(docs, vals.tolist()))
    assert all(len(set(s.values())) == len(s) for s in run.values())
    return run


@pytest.mark.parametrize("ties", ["expected", "optimistic", "pessimistic", "trec_eval", "input", "random"])
@pytest.mark.parametrize("rel", [1, 2])
def test_no_ties_every_mode_matches_pytrec_eval(ties, rel):
    run = _untied()
    expected = _pytrec(QRELS, run, rel)
    mapping = _measure_map(_pytrec_names(expected), rel)
    res = _evaluate(QRELS, run, list(mapping.values()), ties=ties, bounds=True)
    _assert_per_query(res, expected, mapping)
    _assert_per_query(res, expected, mapping, "lower")
    _assert_per_query(res, expected, mapping, "upper")


# ------------------------------------------------------------------ runs with ties: bounds


@pytest.mark.parametrize("ties", ["expected", "trec_eval"])
@pytest.mark.parametrize("rel", [1, 2])
def test_pytrec_eval_lies_within_bounds(ties, rel):
    expected = _pytrec(QRELS, RUN, rel)
    mapping = _measure_map(_pytrec_names(expected), rel)
    res = _evaluate(QRELS, RUN, list(mapping.values()), ties=ties, bounds=True)
    assert list(res.lower.index) == list(res.per_query.index) == list(res.upper.index)
    for q in expected:
        for trec, ours in mapping.items():
            lo, mid, hi = (float(f.loc[q, ours]) for f in (res.lower, res.per_query, res.upper))
            want = expected[q][trec]
            assert lo - ATOL <= want <= hi + ATOL, (q, trec, lo, want, hi)
            assert lo - ATOL <= mid <= hi + ATOL, (q, trec, lo, mid, hi)
    if ties == "trec_eval":  # per_query keeps the chosen mode's value when bounds are asked for
        _assert_per_query(res, expected, mapping)
    # the ties really matter somewhere
    spread = (res.upper - res.lower).to_numpy(float)
    assert (spread > 1e-6).sum() > 50


@pytest.mark.parametrize("rel", [1, 2])
def test_bounds_and_optimistic_pessimistic_match_grade_sorted_ties(rel):
    """For all these measures max / min over tie orderings = ties sorted by grade desc / asc."""
    best = _pytrec(QRELS, _strictly_ordered_run(_grade_sorted_orders(QRELS, RUN, True)), rel)
    worst = _pytrec(QRELS, _strictly_ordered_run(_grade_sorted_orders(QRELS, RUN, False)), rel)
    mapping = _measure_map(_pytrec_names(best), rel)
    measures = list(mapping.values())
    bounds = _evaluate(QRELS, RUN, measures, bounds=True)
    _assert_per_query(bounds, best, mapping, "upper")
    _assert_per_query(bounds, worst, mapping, "lower")
    _assert_per_query(_evaluate(QRELS, RUN, measures, ties="optimistic"), best, mapping)
    _assert_per_query(_evaluate(QRELS, RUN, measures, ties="pessimistic"), worst, mapping)


# ---------------------------------------------------- expected = mean over all orderings


def _small_tied_collection(seed=11, n_queries=8, max_perms=720):
    rng = np.random.default_rng(seed)
    qrels, run = {}, {}
    while len(run) < n_queries:
        n = int(rng.integers(4, 13))
        docs = _doc_ids(rng, n + 2)
        scores = {d: float(rng.integers(0, max(2, n // 3))) for d in docs[:n]}
        sizes = np.unique(list(scores.values()), return_counts=True)[1]
        if math.prod(math.factorial(int(s)) for s in sizes) > max_perms or sizes.max() < 2:
            continue
        qid = f"t{len(run)}"
        run[qid] = scores
        qrels[qid] = {d: _grade(rng) for d in docs if rng.random() < 0.8}
        if not any(g >= 2 for g in qrels[qid].values()):
            qrels[qid][docs[0]] = 2
    return qrels, run


@pytest.mark.parametrize("rel", [1, 2])
def test_expected_is_mean_over_all_orderings_by_pytrec_eval(rel):
    qrels, run = _small_tied_collection()
    pseudo_qrels, pseudo_orders, owner = {}, {}, {}
    for q, scores in run.items():
        for i, order in enumerate(doc_orderings(scores)):
            pq = f"{q}#{i}"
            pseudo_qrels[pq] = qrels[q]
            pseudo_orders[pq] = order
            owner[pq] = q
    assert len(pseudo_orders) > 100
    per_order = _pytrec(pseudo_qrels, _strictly_ordered_run(pseudo_orders), rel)
    mapping = _measure_map(_pytrec_names(per_order), rel)
    mean, lo, hi = {}, {}, {}
    for q in run:
        rows = [per_order[pq] for pq in per_order if owner[pq] == q]
        mean[q] = {m: math.fsum(r[m] for r in rows) / len(rows) for m in mapping}
        lo[q] = {m: min(r[m] for r in rows) for m in mapping}
        hi[q] = {m: max(r[m] for r in rows) for m in mapping}
    res = _evaluate(qrels, run, list(mapping.values()), bounds=True)  # default ties="expected"
    _assert_per_query(res, mean, mapping)
    _assert_per_query(res, lo, mapping, "lower")
    _assert_per_query(res, hi, mapping, "upper")
    # with the trec_eval tie-break the value is one of the enumerated orderings
    tr = _evaluate(qrels, run, list(mapping.values()), ties="trec_eval")
    _assert_per_query(tr, _pytrec(qrels, run, rel), mapping)


# ------------------------------------------------------------- missing queries (-c)


def test_missing_zero_scores_qrels_only_queries_like_trec_eval_c():
    """missing="zero" (trec_eval -c): a qrels-only query gets what trec_eval gives a run holding
    only an unjudged document (everything 0, num_rel its real count), except num_ret = 0."""
    expected = _pytrec(QRELS, RUN)
    mapping = _measure_map(_pytrec_names(expected))
    only_qrels = sorted(set(QRELS) - set(RUN))
    assert only_qrels
    dummy = _pytrec({q: QRELS[q] for q in only_qrels}, {q: {"__never_judged__": 1.0} for q in only_qrels})
    for q in only_qrels:
        dummy[q]["num_ret"] = 0.0
        expected[q] = dummy[q]
    assert dummy["qrels_only_a"]["num_rel"] == 2.0
    measures = list(mapping.values()) + ["NumQ"]
    res = _evaluate(QRELS, RUN, measures, ties="trec_eval", missing="zero")
    assert list(res.per_query.index) == sorted(expected)  # run-only queries still left out
    _assert_per_query(res, expected, mapping)
    for trec, ours in mapping.items():
        want = pytrec_eval.compute_aggregated_measure(trec, [expected[q][trec] for q in expected])
        assert abs(res.mean[ours] - want) <= 1e-9 * max(1.0, abs(want)), (trec, res.mean[ours], want)
    assert res.mean["NumQ"] == len(expected)


def test_missing_skip_is_default_and_warns():
    mapping = {"map": "AP"}
    with pytest.warns(Warning):
        a = tierank.evaluate(QRELS, RUN, ["AP"])
    b = _evaluate(QRELS, RUN, ["AP"], missing="skip")
    assert list(a.per_query.index) == list(b.per_query.index) == SHARED
    # a run with only run-only queries removed still warns about the qrels-only ones
    run = {q: RUN[q] for q in SHARED}
    with pytest.warns(Warning):
        c = tierank.evaluate(QRELS, run, ["AP"], ties="trec_eval")
    _assert_per_query(c, _pytrec(QRELS, run), mapping)


# ------------------------------------------------------------------ dense matrices


def test_matrix_trec_eval_mode_matches_pytrec_eval():
    """evaluate_matrix(ties="trec_eval") breaks ties by column index, descending: the same as
    pytrec_eval on the matrix written as a run whose document ids are zero-padded column numbers
    (so string order = column order), with every column judged (R and the ideal from the row)."""
    rng = np.random.default_rng(21)
    n_rows, n_cols = 40, 15
    rel = rng.choice([0, 1, 2, 3], size=(n_rows, n_cols), p=[0.5, 0.25, 0.15, 0.1])
    scores = rng.integers(0, 4, size=(n_rows, n_cols)).astype(float)
    rel[0] = 0  # no relevant item
    scores[1] = 7.0  # one tie for the whole row
    qid = [f"r{i:03d}" for i in range(n_rows)]
    col = [f"c{j:03d}" for j in range(n_cols)]
    qrels = {qid[i]: {col[j]: int(rel[i, j]) for j in range(n_cols)} for i in range(n_rows)}
    run = {qid[i]: {col[j]: float(scores[i, j]) for j in range(n_cols)} for i in range(n_rows)}
    cuts = [c for c in CUTS if c <= 20]
    measures = {"map", "ndcg", "recip_rank", "Rprec"} | {
        f"{m}.{','.join(map(str, cuts))}" for m in ("map_cut", "P", "recall", "ndcg_cut", "success")
    }
    for level in (1, 2):
        expected = _pytrec(qrels, run, level, measures)
        mapping = _measure_map(set(expected[qid[0]]), level)
        res = tierank.evaluate_matrix(rel, scores=scores, measures=list(mapping.values()), ties="trec_eval")
        assert list(res.per_query.index) == list(range(n_rows))
        for i in range(n_rows):
            for trec, ours in mapping.items():
                got = float(res.per_query.loc[i, ours])
                want = expected[qid[i]][trec]
                assert abs(got - want) <= ATOL, (level, i, trec, ours, got, want)
