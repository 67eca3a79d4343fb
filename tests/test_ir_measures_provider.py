"""tierank.ir_measures: the ir-measures provider against ir-measures' own providers (tie-free runs), against
tierank.evaluate (tied runs, every tie mode), the input forms ir-measures accepts, the fallback of
unsupported measures, install() into ir_measures.DefaultPipeline, and clear errors."""

from __future__ import annotations

import math

import numpy as np
import pandas as pd
import pytest

ir_measures = pytest.importorskip("ir_measures")
pytest.importorskip("pytrec_eval")

import tierank  # noqa: E402
from ir_measures import (  # noqa: E402
    AP, ERR, IPrec, NumQ, NumRel, NumRet, P, R, RBP, RR, Bpref, Judged, Rprec, SetAP, SetF, SetP, SetR,
    Success, infAP, nDCG,
)
from tierank.ir_measures import TierankProvider, install, installed, to_tierank, uninstall  # noqa: E402

# measures whose default ir-measures provider is pytrec_eval (trec_eval 9)
PYTREC = [P@5, P@10, P(rel=2)@10, P(judged_only=True)@5, RR, RR(rel=2), RR(judged_only=True), Rprec,
          Rprec(rel=2), AP, AP(rel=2), AP@10, AP(rel=2)@100, AP(judged_only=True), nDCG, nDCG@10, nDCG@3,
          nDCG(judged_only=True)@10, nDCG(gains={0: 0, 1: 1, 2: 5, 3: 7})@10, nDCG(gains={0: 1, 1: 2})@5, R@10, R@100,
          R(judged_only=True)@10, Success@1, Success@5, Success(rel=2)@5, Bpref, Bpref(rel=2), infAP,
          IPrec@0.0, IPrec@0.2, IPrec@0.5, IPrec@1.0, SetP, SetP(rel=2), SetR, SetR(rel=2), SetF,
          SetF(beta=0.5), SetF(rel=2, beta=2.0), SetAP, NumRet, NumRet(rel=1), NumRet(rel=2), NumRel, NumQ]
GDEVAL = [ERR@5, ERR@20, nDCG(dcg="exp-log2")@10, nDCG(dcg="exp-log2")@3]
JUDGED = [Judged@5, Judged@10, Judged@100]
ALL = PYTREC + GDEVAL + JUDGED + [RBP(rel=1), RBP(rel=2, p=0.5)@10]


def _data(seed: int, tied: bool = False, numeric_ids: bool = False, grades=(-2, 0, 0, 0, 1, 1, 2, 3)):
    """Random qrels and run; scores are multiples of 0.25 (exact in float32); some judged queries have no
    run, some run queries no qrels, some queries no relevant document."""
    rng = np.random.default_rng(seed)
    qrels, run = {}, {}
    docs = [f"d{i}" for i in range(40)]
    for q in range(25):
        qid = str(q + 1) if numeric_ids else f"q{q}"
        if q != 3:
            pool = grades if q != 5 else tuple(g for g in grades if g <= 0)
            qrels[qid] = {str(d): int(rng.choice(pool)) for d in rng.choice(docs, 25, replace=False)}
        if q != 7:
            n = int(rng.integers(1, 40))
            ids = rng.choice(docs + ["x1", "x2", "x3"], n, replace=False)
            scores = rng.permutation(n) * 0.25
            if tied:
                scores = np.floor(scores / rng.choice([1.0, 2.0])) * 0.25   # ties of sizes 1..8
            run[qid] = {str(d): float(s) for d, s in zip(ids, scores)}
    return qrels, run


def _by_query(metrics) -> dict:
    out: dict = {}
    for m in metrics:
        key = (m.measure, m.query_id)
        assert key not in out, f"{key} given twice"
        out[key] = m.value
    return out


def _pytrec_eval(measures, qrels, run) -> dict:
    return _by_query(ir_measures.pytrec_eval.iter_calc(measures, qrels, run))


@pytest.fixture(autouse=True)
def _clean_pipeline():
    before = list(ir_measures.DefaultPipeline.providers)
    yield
    uninstall()
    ir_measures.DefaultPipeline.providers[:] = before


# -- tie-free runs: ir-measures' own providers -------------------------------------------------------------


@pytest.mark.parametrize("seed", [0, 1])
def test_tie_free_equals_pytrec_eval(seed):
    qrels, run = _data(seed)
    ref = _pytrec_eval(PYTREC, qrels, run)
    got = _by_query(TierankProvider().iter_calc(PYTREC, qrels, run))
    assert set(got) == set(ref)
    for key, value in ref.items():
        assert got[key] == pytest.approx(value, rel=1e-12, abs=1e-12), key
    ref_agg = ir_measures.pytrec_eval.calc_aggregate(PYTREC, qrels, run)
    got_agg = TierankProvider().calc_aggregate(PYTREC, qrels, run)
    assert set(got_agg) == set(ref_agg)
    for m in PYTREC:
        assert got_agg[m] == pytest.approx(ref_agg[m], rel=1e-12, abs=1e-12), m


def test_tie_free_equals_default_pipeline_every_measure():
    """Every supported measure against DefaultPipeline as ir-measures ships it (gdeval prints 5 decimals;
    it needs numeric query ids and grades up to 4)."""
    qrels, run = _data(2, numeric_ids=True, grades=(0, 0, 0, 1, 1, 2, 3, 4))
    measures = PYTREC + GDEVAL + JUDGED
    # one measure at a time: ir-measures 0.4.3 puts NumRet, NumQ and nDCG without gains into whichever
    # pytrec_eval invocation comes first in a set (hash order): NumRet then counts judged documents only
    # when that one is judged_only=True, nDCG takes the gains of an nDCG(gains=...) next to it
    ref = {}
    for m in measures:
        ref.update(_by_query(ir_measures.iter_calc([m], qrels, run)))
    got = _by_query(TierankProvider().iter_calc(measures, qrels, run))
    assert set(got) == set(ref)
    for (m, q), value in ref.items():
        tol = 6e-6 if m in GDEVAL else 1e-12
        assert got[m, q] == pytest.approx(value, abs=tol), (m, q)


def test_judged_counts_negative_grades_as_judged():
    """ir-measures' judged provider: a document in the qrels is judged, whatever its grade."""
    qrels = {"q1": {"d1": -2, "d2": 0, "d3": 1}}
    run = {"q1": {"d1": 3.0, "d2": 2.0, "x": 1.0}}
    assert ir_measures.judged.calc_aggregate([Judged@2, Judged@10], qrels, run) == {Judged@2: 1.0, Judged@10: 2 / 3}
    assert TierankProvider().calc_aggregate([Judged@2, Judged@10], qrels, run) == {Judged@2: 1.0, Judged@10: 2 / 3}
    qrels, run = _data(3)
    ref = _by_query(ir_measures.judged.iter_calc(JUDGED, qrels, run))
    assert _by_query(TierankProvider().iter_calc(JUDGED, qrels, run)) == pytest.approx(ref, abs=1e-15)


def test_rbp_binary():
    """RBP(rel=r) (cwl_eval's, not installed here): (1 - p) sum of p^(i-1) over relevant ranks i."""
    qrels = {"q1": {"a": 2, "b": 1, "c": 0}}
    run = {"q1": {"c": 4.0, "a": 3.0, "b": 2.0, "x": 1.0}}
    got = TierankProvider().calc_aggregate([RBP(rel=1), RBP(rel=2, p=0.5), RBP(rel=1)@2], qrels, run)
    assert got[RBP(rel=1)] == pytest.approx(0.2 * (0.8 + 0.8**2))
    assert got[RBP(rel=2, p=0.5)] == pytest.approx(0.5 * 0.5)
    assert got[RBP(rel=1)@2] == pytest.approx(0.2 * 0.8)


# -- tied runs: tierank.evaluate's values ------------------------------------------------------------------


def _expected(qrels, run, measures, judged=False, **kw) -> dict:
    """tierank.evaluate's per-query values, with ir-measures' query rules (judged queries only; those
    without a run get 0)."""
    texts = {}
    for m in measures:
        texts.setdefault(to_tierank(m)[0], []).append(m)
    if judged:
        qrels = {q: {d: max(g, 0) for d, g in docs.items()} for q, docs in qrels.items()}
    run = {q: docs for q, docs in run.items() if q in qrels}
    qrels_in_run = {q: docs for q, docs in qrels.items() if q in run}
    res = tierank.evaluate(qrels_in_run, run, list(texts), trec_eval_version=9, **kw)
    frame = res.per_query
    out = {}
    for text, ms in texts.items():
        for m in ms:
            for q in qrels:
                out[m, q] = float(frame.loc[q, text]) if q in frame.index else 0.0
    return out


@pytest.mark.parametrize("ties", ["expected", "trec_eval", "optimistic", "pessimistic", "input", "random", "lower",
                                  "upper"])
def test_tied_equals_evaluate(ties):
    qrels, run = _data(4, tied=True)
    measures = PYTREC + [ERR@10, nDCG(dcg="exp-log2")@10, RBP(rel=1)]
    got = _by_query(TierankProvider(ties=ties, seed=7).iter_calc(measures, qrels, run))
    want = _expected(qrels, run, measures, ties=ties, seed=7)
    assert set(got) == set(want)
    for key, value in want.items():
        assert got[key] == value, key
    got = _by_query(TierankProvider(ties=ties, seed=7).iter_calc(JUDGED, qrels, run))
    assert got == _expected(qrels, run, JUDGED, judged=True, ties=ties, seed=7)


@pytest.mark.parametrize("which", ["lower", "upper"])
def test_tied_bounds(which):
    qrels, run = _data(5, tied=True)
    measures = [P@5, AP, nDCG@10, RR, R@10, Bpref, infAP, IPrec@0.2, ERR@10, Judged@10]
    got = _by_query(TierankProvider(ties=which).iter_calc(measures, qrels, run))
    res = tierank.evaluate({q: d for q, d in qrels.items() if q in run}, {q: d for q, d in run.items() if q in qrels},
                           [to_tierank(m)[0] for m in measures if m != Judged@10], bounds=True,
                           trec_eval_version=9)
    frame = res.lower if which == "lower" else res.upper
    for m in measures:
        if m == Judged@10:
            continue
        text = to_tierank(m)[0]
        for q in qrels:
            assert got[m, q] == (float(frame.loc[q, text]) if q in frame.index else 0.0), (m, q)
    expected = _by_query(TierankProvider().iter_calc(measures, qrels, run))
    for key, value in expected.items():
        assert (got[key] <= value + 1e-12) if which == "lower" else (got[key] >= value - 1e-12), key
    assert any(got[k] != expected[k] for k in expected)   # the data has ties that matter


def test_trec_eval_ties_equal_pytrec_eval():
    """ties="trec_eval": trec_eval 9's tie-break (document id descending), so pytrec_eval's values."""
    qrels, run = _data(6, tied=True)
    ref = _pytrec_eval(PYTREC, qrels, run)
    got = _by_query(TierankProvider(ties="trec_eval").iter_calc(PYTREC, qrels, run))
    assert set(got) == set(ref)
    for key, value in ref.items():
        assert got[key] == pytest.approx(value, rel=1e-12, abs=1e-12), key
    expected = _by_query(TierankProvider().iter_calc(PYTREC, qrels, run))
    assert any(abs(expected[k] - ref[k]) > 1e-6 for k in ref)   # the ties change the values


def test_float32_ties():
    """trec_eval_version=9 (default): scores equal in float32 tie, as in pytrec_eval; 10: doubles."""
    qrels = {"q1": {"d1": 1}}
    run = {"q1": {"d1": 0.3, "d2": 0.30000000000000004}}
    assert TierankProvider().calc_aggregate([RR], qrels, run) == {RR: 0.75}
    assert TierankProvider(trec_eval_version=10).calc_aggregate([RR], qrels, run) == {RR: 0.5}
    assert TierankProvider(ties="trec_eval").calc_aggregate([RR], qrels, run) \
        == ir_measures.pytrec_eval.calc_aggregate([RR], qrels, run) == {RR: 0.5}   # d2 > d1: d2 first


# -- input forms -------------------------------------------------------------------------------------------


def _forms(qrels, run):
    qrel_rows = [ir_measures.Qrel(q, d, g) for q, docs in qrels.items() for d, g in docs.items()]
    run_rows = [ir_measures.ScoredDoc(q, d, s) for q, docs in run.items() for d, s in docs.items()]
    yield qrels, run
    yield qrel_rows, run_rows
    yield iter(qrel_rows), iter(run_rows)
    yield pd.DataFrame(qrel_rows), pd.DataFrame(run_rows)
    yield pd.DataFrame(qrel_rows).assign(iteration="Q0", other=1), pd.DataFrame(run_rows).assign(rank=0, x="y")
    yield pd.DataFrame(qrel_rows).iloc[::-1], pd.DataFrame(run_rows).sample(frac=1.0, random_state=0)


def test_input_forms():
    qrels, run = _data(8, tied=True)
    measures = [P@5, AP, nDCG@10, Judged@10, ERR@10, NumQ]
    want = _by_query(TierankProvider().iter_calc(measures, qrels, run))
    for q_form, r_form in _forms(qrels, run):
        got = _by_query(TierankProvider().iter_calc(measures, q_form, r_form))
        assert got == want
    for q_form, r_form in _forms(qrels, run):   # one evaluator, several runs
        ev = TierankProvider().evaluator(measures, q_form)
        for _, r_again in _forms(qrels, run):
            assert _by_query(ev.iter_calc(r_again)) == want


def test_calc_and_aggregators():
    qrels, run = _data(9, tied=True)
    measures = [AP, NumQ, NumRet, NumRel, P@5]
    res = TierankProvider().calc(measures, qrels, run)
    agg = TierankProvider().calc_aggregate(measures, qrels, run)
    assert res.aggregated == agg
    assert agg[NumQ] == len(set(qrels) & set(run))   # sums, as ir-measures aggregates them (a judged
    assert agg[NumQ] == ir_measures.pytrec_eval.calc_aggregate([NumQ], qrels, run)[NumQ]   # query not run: 0)
    assert agg[NumRet] == sum(len(d) for q, d in run.items() if q in qrels)
    per_q = [m.value for m in res.per_query if m.measure == AP]
    assert agg[AP] == pytest.approx(sum(per_q) / len(qrels))
    assert all(isinstance(m, ir_measures.Metric) and isinstance(m.value, float) for m in res.per_query)


def test_integer_query_ids():
    qrels = pd.DataFrame({"query_id": [1, 1, 2], "doc_id": ["a", "b", "a"], "relevance": [1, 0, 1]})
    run = pd.DataFrame({"query_id": [1, 1, 2], "doc_id": ["a", "b", "b"], "score": [1.0, 1.0, 3.0]})
    got = list(TierankProvider().iter_calc([P@1], qrels, run))
    assert sorted((type(m.query_id), m.query_id, m.value) for m in got) == [(int, 1, 0.5), (int, 2, 0.0)]


def test_empty_run_and_no_common_query():
    qrels = {"q1": {"d1": 1}, "q2": {"d1": 1}}
    assert TierankProvider().calc_aggregate([AP, P@5], qrels, {}) == {AP: 0.0, P@5: 0.0}
    assert TierankProvider().calc_aggregate([AP], qrels, {"q9": {"d1": 1.0}}) == {AP: 0.0}
    assert TierankProvider().calc_aggregate([AP], qrels, {"q1": {"d1": 1.0}}) == {AP: 0.5}


# -- supported measures, fallback, install -----------------------------------------------------------------


def test_supports():
    p = TierankProvider()
    for m in ALL:
        assert p.supports(m), m
    for m in [ir_measures.alpha_nDCG@10, ir_measures.SetP(relative=True), ir_measures.SDCG(max_rel=3)@10,
              RBP, ir_measures.Compat(p=0.8), ir_measures.Accuracy(), ir_measures.NERR8(max_rel=3)@10,
              ir_measures.define(lambda qrels, run: 1.0, name="P"), Judged, R, Success, P,
              nDCG(gains={-2: 3, 3: 0})@4]:   # tierank: negative grades have gain 0; pytrec_eval takes it
        assert not p.supports(m), m
    with pytest.raises(tierank.InputError, match="does not compute"):
        p.calc_aggregate([ir_measures.alpha_nDCG@10], {"q": {"d": 1}}, {"q": {"d": 1.0}})
    with pytest.raises(tierank.InputError, match="not an ir-measures measure"):
        p.calc_aggregate(["nDCG@10"], {"q": {"d": 1}}, {"q": {"d": 1.0}})


def test_install_puts_tierank_first_and_falls_back():
    qrels = {"q1": {"d1": 1, "d2": 0}}
    run = {"q1": {"d1": 0.5, "d2": 0.5, "d3": 0.1}}
    measures = [RR, ir_measures.SetP(relative=True)]   # the second one: pytrec_eval only
    before = ir_measures.calc_aggregate(measures, qrels, run)
    assert before[RR] == 0.5
    provider = install()
    assert ir_measures.DefaultPipeline.providers[0] is provider
    after = ir_measures.calc_aggregate(measures, qrels, run)
    assert after == {RR: 0.75, ir_measures.SetP(relative=True): before[ir_measures.SetP(relative=True)]}
    assert _by_query(ir_measures.iter_calc([RR], qrels, run)) == {(RR, "q1"): 0.75}
    assert ir_measures.evaluator([RR], qrels).calc_aggregate(run) == {RR: 0.75}
    assert ir_measures.calc([RR], qrels, run).aggregated == {RR: 0.75}
    assert sorted(ir_measures.run_inputs([RR])) == ["doc_id", "query_id", "score"]
    again = install(ties="upper")   # replaces, does not stack
    assert [p for p in ir_measures.DefaultPipeline.providers if isinstance(p, TierankProvider)] == [again]
    assert ir_measures.calc_aggregate([RR], qrels, run) == {RR: 1.0}
    uninstall()
    assert not any(isinstance(p, TierankProvider) for p in ir_measures.DefaultPipeline.providers)
    assert ir_measures.calc_aggregate(measures, qrels, run) == before
    uninstall()   # nothing to do


def test_installed_restores():
    qrels = {"q1": {"d1": 1}}
    run = {"q1": {"d1": 0.5, "d2": 0.5}}
    before = list(ir_measures.DefaultPipeline.providers)
    with installed(ties="lower") as provider:
        assert ir_measures.DefaultPipeline.providers[0] is provider
        assert ir_measures.calc_aggregate([P@1], qrels, run) == {P@1: 0.0}
    assert ir_measures.DefaultPipeline.providers == before
    outer = install()
    with installed(ties="upper"):
        assert ir_measures.calc_aggregate([P@1], qrels, run) == {P@1: 1.0}
    assert ir_measures.DefaultPipeline.providers[0] is outer
    assert ir_measures.calc_aggregate([P@1], qrels, run) == {P@1: 0.5}


def test_registered():
    assert isinstance(ir_measures.providers.registry["tierank"], TierankProvider)


# -- errors ------------------------------------------------------------------------------------------------


def test_bad_input():
    p = TierankProvider()
    qrels = {"q1": {"d1": 1}}
    with pytest.raises(tierank.InputError, match="ties='best' is not a tie mode"):
        TierankProvider(ties="best")
    with pytest.raises(tierank.InputError, match="trec_eval_version"):
        TierankProvider(trec_eval_version=8)
    with pytest.raises(tierank.InputError, match="seed must be an integer"):
        TierankProvider(seed=1.5)
    with pytest.raises(tierank.InputError, match="run is in no format ir-measures reads"):
        p.calc_aggregate([AP], qrels, 42)
    with pytest.raises(tierank.InputError, match="run is in no format.*missing columns"):
        p.calc_aggregate([AP], qrels, pd.DataFrame({"qid": ["q1"], "docno": ["d1"], "score": [1.0]}))
    with pytest.raises(tierank.InputError, match="qrels are in no format ir-measures reads"):
        p.calc_aggregate([AP], [("q1", "d1", 1)], {"q1": {"d1": 1.0}})
    with pytest.raises(tierank.InputError, match="query 'q1' maps to list"):
        p.calc_aggregate([AP], qrels, {"q1": [("d1", 1.0)]})
    with pytest.raises(tierank.InputError):
        p.calc_aggregate([AP], qrels, {"q1": {"d1": float("nan")}})
    with pytest.raises(tierank.InputError, match="'d1' is listed twice for query 'q1' in the run"):
        p.calc_aggregate([AP], qrels, [ir_measures.ScoredDoc("q1", "d1", 1.0), ir_measures.ScoredDoc("q1", "d1", 2.0)])
    with pytest.raises(tierank.InputError, match="score of document 'd1' for query 'q1' is the string"):
        p.calc_aggregate([AP], qrels, {"q1": {"d1": "high"}})
    with pytest.raises(tierank.InputError, match="missing id"):
        frame = pd.DataFrame({"query_id": ["q1", None], "doc_id": ["d1", "d2"], "score": [1.0, 2.0]})
        p.calc_aggregate([AP], frame.rename(columns={"score": "relevance"}).astype({"relevance": int}), frame)
    with pytest.raises(tierank.InputError, match="max_grade"):   # gdeval refuses grades above 4 too
        p.calc_aggregate([ERR@10], {"q1": {"d1": 5}}, {"q1": {"d1": 1.0}})
    assert issubclass(tierank.InputError, ValueError)   # ir-measures' usual error type


def test_nan_free_values():
    qrels, run = _data(10, tied=True)
    for m in TierankProvider().iter_calc(ALL, qrels, run):
        assert not math.isnan(m.value), m
