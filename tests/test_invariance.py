"""Invariance tests over the whole registry (scikit-learn's test_common style).

Every measure family must appear in MEASURES (checked below), so a new measure cannot be forgotten.
"""

import numpy as np
import pandas as pd
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import tierank
from tierank.measures import REGISTRY, parse_measure

MEASURES = [
    "P@3", "P(clip=True, rel=2)@7", "R@5", "F1@4", "Success@2", "Rprec", "ACG@3", "AP", "AP@4",
    "AP(denom='retrieved')@5", "AP(denom='min_k_R')@3", "WAP@4", "RR", "RR@3", "DCG@5", "nDCG",
    "nDCG(gain='exp2', discount='jk')@4", "ERR@5", "ERR(max_grade=3)", "NumQ", "NumRet", "NumRel",
    "NumRelRet", "NumNonRelJudgedRet", "Judged@3", "Unjudged@5", "SetP", "SetR", "SetF(beta=0.5)", "RBP(rel=1)",
    "RBP(rel=1, p=0.5)@3", "Bpref", "GMAP", "GMBpref", "RBP", "RBPResid", "RprecMult(mult=0.4)", "Hits@3", "SetRelP", "SetAP",
    "Utility(a=2, d=1, N=30)", "BinG", "IPrec(recall=0.3)", "IPrecAvg", "NDCGRel", "Rndcg", "G", "infAP",
]
TEXT_MEASURES = ["RelString", "RelString(length=4)"]
ORDER_FREE_MODES = ("expected", "optimistic", "pessimistic")


def test_every_family_is_covered():
    assert {parse_measure(m).name for m in MEASURES + TEXT_MEASURES} == set(REGISTRY)


@pytest.mark.parametrize("seed", range(5))
@pytest.mark.parametrize("ties", ["expected", "trec_eval", "optimistic"])
def test_text_measures_do_not_depend_on_row_order(seed, ties):
    qrels, run = _random_run(seed)
    base = tierank.evaluate(qrels, run, TEXT_MEASURES, ties=ties)
    shuffled = tierank.evaluate(qrels, run.sample(frac=1, random_state=seed), TEXT_MEASURES, ties=ties)
    assert base.per_query.equals(shuffled.per_query)


def _random_run(seed, n_queries=12, max_docs=12):
    rng = np.random.default_rng(seed)
    run_rows, qrels_rows = [], []
    for q in range(n_queries):
        n = int(rng.integers(1, max_docs))
        docs = rng.choice(500, size=n + 5, replace=False)
        scores = rng.integers(0, 4, size=n)
        for d, s in zip(docs[:n], scores):
            run_rows.append((f"q{q}", f"d{d}", float(s)))
        judged = rng.choice(docs, size=int(rng.integers(1, n + 5)), replace=False)
        for d in judged:
            qrels_rows.append((f"q{q}", f"d{d}", int(rng.integers(0, 4))))
    run = pd.DataFrame(run_rows, columns=["query_id", "doc_id", "score"])
    qrels = pd.DataFrame(qrels_rows, columns=["query_id", "doc_id", "relevance"])
    return qrels, run


def _all(qrels, run, ties):
    return tierank.evaluate(qrels, run, MEASURES, ties=ties, bounds=True)


def _same(a, b, tol=1e-12):
    for frame in ("per_query", "lower", "upper"):
        x, y = getattr(a, frame), getattr(b, frame)
        assert list(x.index) == list(y.index)
        np.testing.assert_allclose(x.to_numpy(), y.to_numpy(), rtol=0, atol=tol)


@pytest.mark.parametrize("seed", range(4))
def test_permuting_run_rows_changes_nothing_but_input_order(seed):
    qrels, run = _random_run(seed)
    shuffled = run.sample(frac=1.0, random_state=seed).reset_index(drop=True)
    for ties in ORDER_FREE_MODES + ("trec_eval",):
        _same(_all(qrels, run, ties), _all(qrels, shuffled, ties))


@pytest.mark.parametrize("seed", range(4))
def test_renaming_documents_changes_nothing_but_id_tiebreaks(seed):
    qrels, run = _random_run(seed)
    rename = {f"d{i}": f"x{(i * 7919) % 1000:04d}" for i in range(500)}
    run2 = run.assign(doc_id=run.doc_id.map(rename))
    qrels2 = qrels.assign(doc_id=qrels.doc_id.map(rename))
    for ties in ORDER_FREE_MODES + ("input",):
        _same(_all(qrels, run, ties), _all(qrels2, run2, ties))


@pytest.mark.parametrize("seed", range(4))
def test_splitting_the_query_set_gives_the_same_rows(seed):
    qrels, run = _random_run(seed)
    qids = sorted(run.query_id.unique())
    first, second = set(qids[: len(qids) // 2]), set(qids[len(qids) // 2:])
    for ties in ORDER_FREE_MODES + ("trec_eval", "input"):
        whole = _all(qrels, run, ties)
        parts = [_all(qrels[qrels.query_id.isin(s)], run[run.query_id.isin(s)], ties) for s in (first, second)]
        for frame in ("per_query", "lower", "upper"):
            joined = pd.concat([getattr(p, frame) for p in parts]).sort_index()
            np.testing.assert_allclose(getattr(whole, frame).to_numpy(), joined.to_numpy(), rtol=0, atol=1e-12)


@settings(max_examples=8, deadline=None, derandomize=True)
@given(seed=st.integers(0, 10 ** 6), ties=st.sampled_from(["expected", "trec_eval"]))
def test_a_query_has_the_same_bits_alone_as_with_others(seed, ties):
    """The class of the ERR and DCG regressions (a sum padded to the batch's widest tie; two summation
    orders chosen from the whole batch): every query's values, bounds included, are bit-identical whether
    it is evaluated alone or with the other queries (up to 60 documents a query, heavy ties)."""
    qrels, run = _random_run(seed, n_queries=10, max_docs=60)
    whole = _all(qrels, run, ties)
    for q in sorted(set(run.query_id)):
        alone = _all(qrels[qrels.query_id == q], run[run.query_id == q], ties)
        for frame in ("per_query", "lower", "upper"):
            np.testing.assert_array_equal(getattr(whole, frame).loc[[q]].to_numpy(),
                                          getattr(alone, frame).loc[[q]].to_numpy(), err_msg=f"{q} {frame}")


@pytest.mark.parametrize("seed", range(3))
def test_dict_dataframe_and_integer_ids_agree(seed):
    qrels, run = _random_run(seed)
    as_dict = {}
    for q, d, s in run.itertuples(index=False):
        as_dict.setdefault(q, {})[d] = s
    qrels_dict = {}
    for q, d, g in qrels.itertuples(index=False):
        qrels_dict.setdefault(q, {})[d] = g
    ints = lambda frame: frame.assign(doc_id=frame.doc_id.str[1:].astype(np.int64))
    for ties in ORDER_FREE_MODES:
        base = _all(qrels, run, ties)
        _same(base, _all(qrels_dict, as_dict, ties))
        _same(base, _all(ints(qrels), ints(run), ties))


@pytest.mark.parametrize("seed", range(3))
def test_matrix_column_permutation_and_row_order(seed):
    rng = np.random.default_rng(seed)
    rel = rng.integers(0, 4, size=(6, 9)).astype(float)
    scores = rng.integers(0, 3, size=(6, 9)).astype(float)
    perm = rng.permutation(9)
    rows = rng.permutation(6)
    base = tierank.evaluate_matrix(rel, scores=scores, measures=MEASURES, bounds=True)
    cols = tierank.evaluate_matrix(rel[:, perm], scores=scores[:, perm], measures=MEASURES, bounds=True)
    _same(base, cols)
    shuffled = tierank.evaluate_matrix(rel[rows], scores=scores[rows], measures=MEASURES, bounds=True)
    np.testing.assert_allclose(shuffled.per_query.to_numpy(), base.per_query.to_numpy()[rows], rtol=0, atol=1e-12)


@pytest.mark.parametrize("seed", range(3))
def test_runs_and_matrices_agree(seed):
    """A matrix row is a run that retrieved every judged document of its query."""
    rng = np.random.default_rng(seed)
    rel = rng.integers(0, 4, size=(5, 8)).astype(float)
    scores = rng.integers(0, 3, size=(5, 8)).astype(float)
    run = {q: {f"d{j}": scores[q, j] for j in range(8)} for q in range(5)}
    qrels = {q: {f"d{j}": rel[q, j] for j in range(8)} for q in range(5)}
    for ties in ORDER_FREE_MODES:
        a = tierank.evaluate(qrels, run, MEASURES, ties=ties, bounds=True)
        b = tierank.evaluate_matrix(rel, scores=scores, measures=MEASURES, ties=ties, bounds=True)
        np.testing.assert_allclose(a.per_query.to_numpy(), b.per_query.to_numpy(), rtol=0, atol=1e-12)
        np.testing.assert_allclose(a.upper.to_numpy(), b.upper.to_numpy(), rtol=0, atol=1e-12)


def test_results_are_bit_identical_across_runs():
    qrels, run = _random_run(7)
    for ties in ("expected", "trec_eval", "random"):
        a, b = _all(qrels, run, ties), _all(qrels, run, ties)
        assert a.per_query.equals(b.per_query) and a.lower.equals(b.lower) and a.upper.equals(b.upper)
