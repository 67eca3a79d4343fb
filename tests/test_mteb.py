"""tierank.mteb: every retrieval score MTEB 2.26 reports, tie-aware, and the results tagged.

Two levels, both offline:
* MTEB's scoring function itself (``mteb._evaluators.retrieval_metrics.calculate_retrieval_scores``, the
  one its RetrievalEvaluator calls) on saved predictions built in the test: equal to MTEB's own on
  tie-free data and, with ties="trec_eval", on tied data; on tied data, every per-query score equal to
  the mean of MTEB's own over every ordering of each tie (MTEB run on each ordering);
* ``mteb.evaluate`` end to end on a tiny retrieval task built in the test (MTEB's mock retrieval task with
  a corpus of five documents, no download) and a model that embeds every text alike (MTEB #5092's
  constant scorer): the scores, the tag in the result file, ``TaskResult.from_disk`` and the cache.
"""

from __future__ import annotations

import json
import math

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import mteb
from mteb._evaluators import retrieval_metrics as rm
from mteb.cache import ResultCache
from mteb.results import TaskResult

import tierank
import tierank.beir as tb
import tierank.mteb as tm
from oracle import doc_orderings
from tierank.errors import InputError

SETTINGS = settings(max_examples=25, deadline=None, derandomize=True, database=None)
KS = [1, 2, 3, 5]
MTEB_OWN = {name: getattr(rm, name) for name in ("mrr", "recall_cap", "hole", "top_k_accuracy")}


def _same(a, b, tol=1e-12):
    """Equal to ``tol`` (tierank's nDCG may differ from pytrec_eval's in the last bit), NaN equal to NaN
    (nAUC is NaN where its curve is flat), MTEB's rounded means to their rounding."""
    if isinstance(a, dict):
        return a.keys() == b.keys() and all(_same(a[k], b[k], tol) for k in a)
    if isinstance(a, (list, tuple)):
        return len(a) == len(b) and all(_same(x, y, tol) for x, y in zip(a, b))
    if isinstance(a, float) and math.isnan(a):
        return isinstance(b, float) and math.isnan(b)
    if isinstance(a, float) and isinstance(b, float):
        return abs(a - b) <= tol or (abs(a - b) <= 1e-5 + 1e-12 and round(a, 5) == a and round(b, 5) == b)
    return a == b


def _scores(results, qrels, ties=None, ks=KS):
    """MTEB's calculate_retrieval_scores: its own (ties None) or with tierank installed."""
    if ties is None:
        return rm.calculate_retrieval_scores(results, qrels, ks)
    with tm.installed(ties=ties):
        return rm.calculate_retrieval_scores(results, qrels, ks)


@st.composite
def predictions(draw, tied=True):
    """(results, qrels): 1-3 queries, 1-4 documents each, every query with a relevant document (MTEB
    drops the others before scoring), scores exact in float32 (a few values: ties; or distinct)."""
    results, qrels = {}, {}
    for q in range(draw(st.integers(1, 3))):
        docs = draw(st.lists(st.sampled_from([f"d{i}" for i in range(6)]), min_size=1, max_size=4, unique=True))
        if tied:
            values = draw(st.lists(st.sampled_from([0.25, 0.5, 0.75]), min_size=len(docs), max_size=len(docs)))
        else:
            values = [v / 8 for v in draw(st.permutations(range(len(docs))))]
        results[f"q{q}"] = dict(zip(docs, values))
        judged = draw(st.lists(st.sampled_from([f"d{i}" for i in range(6)]), min_size=1, max_size=4, unique=True))
        grades = draw(st.lists(st.integers(0, 2), min_size=len(judged), max_size=len(judged)))
        grades[0] = max(grades[0], 1)
        qrels[f"q{q}"] = dict(zip(judged, grades))
    return results, qrels


# ------------------------------------------------------------------------------ the scoring function


@SETTINGS
@given(data=predictions(tied=False))
def test_equal_to_mtebs_own_without_ties(data):
    results, qrels = data
    want = _scores(results, qrels)
    for ties in ("expected", "trec_eval"):
        assert _same(tuple(_scores(results, qrels, ties)), tuple(want), 1e-9), ties


@SETTINGS
@given(data=predictions())
def test_trec_eval_mode_is_mtebs_own_on_tied_data(data):
    results, qrels = data
    assert _same(tuple(_scores(results, qrels, "trec_eval")), tuple(_scores(results, qrels)))
    for name, own in MTEB_OWN.items():
        with tm.installed(ties="trec_eval"):
            assert _same(dict(getattr(rm, name)(qrels, results, KS)), dict(own(qrels, results, KS))), name


def _brute_force(results, qrels, ks=KS):
    """Per query, the mean over every ordering of MTEB's own per-query scores (pytrec_eval's and its
    MRR), MTEB run on each ordering alone with strictly decreasing scores."""
    per_query, mrr = {}, {f"MRR@{k}": [] for k in ks}
    for qid, scores in results.items():
        runs = []
        for order in doc_orderings(scores):
            untied = {qid: {d: float(len(order) - i) for i, d in enumerate(order)}}
            runs.append(rm.calculate_retrieval_scores(untied, {qid: qrels[qid]}, ks))
        keys = runs[0].all_scores[qid]
        per_query[qid] = {key: math.fsum(r.all_scores[qid][key] for r in runs) / len(runs) for key in keys}
        for k in ks:
            mrr[f"MRR@{k}"].append(math.fsum(MTEB_OWN["mrr"]({qid: qrels[qid]}, {qid: r_scores}, ks)[f"MRR@{k}"][0]
                                             for r_scores in ({d: float(len(o) - i) for i, d in enumerate(o)}
                                                              for o in doc_orderings(scores))) / len(runs))
    return per_query, mrr


@SETTINGS
@given(data=predictions())
def test_every_score_is_the_mean_over_orderings(data):
    results, qrels = data
    got = _scores(results, qrels, "expected")
    per_query, mrr = _brute_force(results, qrels)
    for qid, row in per_query.items():
        for key, value in row.items():
            assert abs(got.all_scores[qid][key] - value) <= 1e-12, (qid, key)
    n = len(results)
    for k in KS:   # the means MTEB reports, from those per-query values (rounded to 5 digits by MTEB)
        for part, (name, key) in ((got.ndcg, ("NDCG", "ndcg_cut")), (got.map, ("MAP", "map_cut")),
                                  (got.recall, ("Recall", "recall")), (got.precision, ("P", "P")),
                                  (got.hit_rate, ("HitRate", "success"))):
            mean = sum(per_query[q][f"{key}_{k}"] for q in results) / n
            assert abs(part[f"{name}@{k}"] - mean) <= 5e-6 + 1e-12
        assert abs(got.mrr[f"MRR@{k}"] - sum(mrr[f"MRR@{k}"]) / n) <= 1e-12
    # nAUC: MTEB's own formula on those tie-aware per-query values
    per_metric = {f"{name}@{k}": [per_query[q][f"{key}_{k}"] for q in results] for k in KS
                  for name, key in (("NDCG", "ndcg_cut"), ("MAP", "map_cut"), ("Recall", "recall"), ("P", "P"))}
    want = rm.evaluate_abstention(results, per_metric)
    assert got.naucs.keys() == want.keys()
    for key in want:
        assert _same(got.naucs[key], want[key]) or abs(got.naucs[key] - want[key]) <= 1e-9, key
    want_mrr = rm.evaluate_abstention(results, mrr)
    for key in want_mrr:
        assert _same(got.naucs_mrr[key], want_mrr[key]) or abs(got.naucs_mrr[key] - want_mrr[key]) <= 1e-9, key


@SETTINGS
@given(data=predictions(), tied=st.booleans())
def test_the_task_metrics_are_tierank_beirs(data, tied):
    """recall_cap, hole and top_k_accuracy (brute-forced in tests/test_beir.py) in MTEB's shapes."""
    results, qrels = data
    if not tied:
        results = {q: {d: float(i) for i, d in enumerate(docs)} for q, docs in results.items()}
    with tm.installed():
        got = {name: dict(getattr(rm, name)(qrels, results, KS)) for name in MTEB_OWN}
    for name, prefix in (("mrr", "MRR@{k}"), ("recall_cap", "R_cap_at_{k}"), ("hole", "Hole_at_{k}")):
        values = tb.per_query(qrels, results, KS, name, strict=False)
        assert got[name] == {prefix.format(k=k): values[k] for k in KS}
    accuracy = tb.per_query(qrels, results, KS, "top_k_accuracy")
    assert got["top_k_accuracy"] == {f"Accuracy@{k}": [v for v in accuracy[k] if v > 0] for k in KS
                                     if any(v > 0 for v in accuracy[k])}
    if not tied:
        for name, own in MTEB_OWN.items():
            assert _same(got[name], dict(own(qrels, results, KS))), name


def test_mteb_5092_a_constant_scorer():
    """A model scoring every document alike: MTEB's own MRR@10 and nDCG@10 come from one arbitrary
    order (document id, descending); tierank's from all of them, consistently."""
    results = {"q1": {f"d{i}": 0.5 for i in range(10)}}
    qrels = {"q1": {"d0": 1}}
    own = _scores(results, qrels, ks=[10])
    got = _scores(results, qrels, "expected", ks=[10])
    assert own.mrr["MRR@10"] == 0.1 and own.ndcg["NDCG@10"] == round(1 / math.log2(11), 5)
    assert got.mrr["MRR@10"] == pytest.approx(sum(1 / r for r in range(1, 11)) / 10, abs=1e-15)
    assert got.ndcg["NDCG@10"] == round(sum(1 / math.log2(r + 1) for r in range(1, 11)) / 10, 5)


# ------------------------------------------------------------------------- skip_first_result (image tasks)


def _own_per_query(qid, order, qrels, ks=KS):
    """MTEB's own per-query scores and MRR of one query ordered as ``order``, its first result skipped."""
    got = rm.calculate_retrieval_scores({qid: _untied(order)}, {qid: qrels[qid]}, ks, skip_first_result=True)
    return {**got.all_scores[qid], **got.mrr}


@SETTINGS
@given(data=predictions())
def test_skip_first_result_drops_the_first_of_every_ordering(data):
    results, qrels = data
    runs = {qid: [_own_per_query(qid, order, qrels) for order in doc_orderings(scores)]
            for qid, scores in results.items()}
    for ties, reduce in (("expected", lambda v: math.fsum(v) / len(v)), ("lower", min), ("upper", max)):
        with tm.installed(ties=ties):
            got = rm.calculate_retrieval_scores(results, qrels, KS, skip_first_result=True)
        for qid in results:
            for key in got.all_scores[qid]:
                assert abs(got.all_scores[qid][key] - reduce([r[key] for r in runs[qid]])) <= 1e-12, (ties, qid, key)
        for k in KS:   # MRR: the mean over the queries of theirs
            want = [reduce([r[f"MRR@{k}"] for r in runs[qid]]) for qid in results]
            assert abs(got.mrr[f"MRR@{k}"] - math.fsum(want) / len(want)) <= 1e-12, (ties, k)
        # nAUC: MTEB's formula on those per-query values, with the confidences of the list after the drop
        dropped = {q: dict(sorted(s.items(), key=lambda x: x[1], reverse=True)[1:]) for q, s in results.items()}
        per_metric = {f"{name}@{k}": [reduce([r[f"{key}_{k}"] for r in runs[q]]) for q in results] for k in KS
                      for name, key in (("NDCG", "ndcg_cut"), ("MAP", "map_cut"), ("Recall", "recall"), ("P", "P"))}
        want_naucs = rm.evaluate_abstention(dropped, per_metric)
        assert all(_same(got.naucs[key], want_naucs[key]) or abs(got.naucs[key] - want_naucs[key]) <= 1e-9
                   for key in want_naucs), ties


@SETTINGS
@given(data=predictions())
def test_skip_first_result_in_the_fixed_arrangements(data):
    results, qrels = data
    for ties, sign in (("optimistic", -1), ("pessimistic", 1)):   # higher grades first / last in each tie
        with tm.installed(ties=ties):
            got = rm.calculate_retrieval_scores(results, qrels, KS, skip_first_result=True)
        for qid, scores in results.items():
            grade = {d: qrels[qid].get(d, 0) for d in scores}
            order = sorted(scores, key=lambda d: (-scores[d], sign * grade[d]))
            want = _own_per_query(qid, order, qrels)
            for key in got.all_scores[qid]:
                assert abs(got.all_scores[qid][key] - want[key]) <= 1e-12, (ties, qid, key)
    for ties in ("trec_eval", "input"):   # MTEB's own drop: the first given of the top tie
        with tm.installed(ties=ties):
            got = rm.calculate_retrieval_scores(results, qrels, KS, skip_first_result=True)
        dropped = {q: dict(sorted(s.items(), key=lambda x: x[1], reverse=True)[1:]) for q, s in results.items()}
        with tm.installed(ties=ties):
            want = rm.calculate_retrieval_scores(dropped, qrels, KS)
        assert _same(got.all_scores, want.all_scores) and _same(got.mrr, want.mrr), ties


def test_skip_first_result_with_a_duplicate_of_the_query():
    # an image and its duplicate both at 1.0: MTEB drops the one given first, so P@1 is 1 or 0 by the
    # input order; tie-aware, each is dropped in half the orderings
    results = {"q1": {"self": 1.0, "dup": 1.0, "a": 0.5, "b": 0.2}}
    qrels = {"q1": {"dup": 1, "a": 1}}
    assert rm.calculate_retrieval_scores(results, qrels, [1], skip_first_result=True).precision["P@1"] == 1.0
    with tm.installed():
        got = rm.calculate_retrieval_scores(results, qrels, [1, 3], skip_first_result=True)
    assert got.precision == {"P@1": (1 + 0) / 2, "P@3": (2 / 3 + 1 / 3) / 2}
    assert got.mrr == {"MRR@1": 0.5, "MRR@3": (1 + 1 / 2) / 2}


# ------------------------------------------------------------------------------------- p-MRR (FollowIR)


@st.composite
def instruction_runs(draw):
    """(original_run, new_run, changed_qrels) as MTEB's FollowIR tasks give them: 1-2 queries, runs of
    1-4 documents with a few tied scores, 1-3 changed documents each (some missing from a run)."""
    original, new, changed = {}, {}, {}
    for q in range(draw(st.integers(1, 2))):
        for run, suffix in ((original, "-og"), (new, "-changed")):
            docs = draw(st.lists(st.sampled_from([f"d{i}" for i in range(5)]), min_size=1, max_size=4, unique=True))
            values = draw(st.lists(st.sampled_from([0.25, 0.5, 0.75]), min_size=len(docs), max_size=len(docs)))
            run[f"q{q}{suffix}"] = dict(zip(docs, values))
        changed[f"q{q}"] = draw(st.lists(st.sampled_from([f"d{i}" for i in range(5)]), min_size=1, max_size=3,
                                         unique=True))
    return original, new, changed


def _untied(order):
    return {d: float(len(order) - i) for i, d in enumerate(order)}


@settings(max_examples=150, deadline=None, derandomize=True, database=None)
@given(runs=instruction_runs())
def test_p_mrr_is_the_mean_over_orderings_of_mtebs_own(runs):
    original, new, changed = runs
    per_query = []
    for q, docs in changed.items():   # a mean over queries: its mean over orderings, query by query
        og, ch = original[f"{q}-og"], new[f"{q}-changed"]
        values = [rm.calculate_pmrr({f"{q}-og": _untied(a)}, {f"{q}-changed": _untied(b)}, {q: docs})
                  for a in doc_orderings(og) for b in doc_orderings(ch)]
        per_query.append(math.fsum(values) / len(values))
    assert abs(tm.p_mrr(original, new, changed) - math.fsum(per_query) / len(per_query)) <= 1e-12
    # the fixed orders: MTEB's own (document id, descending, inside a tie), and the dicts' order
    assert abs(tm.p_mrr(original, new, changed, ties="trec_eval") - rm.calculate_pmrr(original, new, changed)) <= 1e-12
    in_order = [{q: _untied(sorted(run[q], key=lambda d: -run[q][d])) for q in run} for run in (original, new)]
    assert abs(tm.p_mrr(original, new, changed, ties="input") - rm.calculate_pmrr(*in_order, changed)) <= 1e-12


def test_p_mrr_over_long_ties_by_its_running_sums():
    # a tie of 40 in each run: the mean of rank_score over its 1,600 pairs of places, written out
    og = {"q-og": {f"d{i}": 0.5 for i in range(40)}}
    new = {"q-changed": {**{f"d{i}": 0.5 for i in range(40)}, "top": 0.9}}
    want = math.fsum(n / o - 1 if o >= n else 1 - o / n for o in range(1, 41) for n in range(2, 42)) / 1600
    assert abs(tm.p_mrr(og, new, {"q": ["d7"]}) - want) <= 1e-14


def test_install_makes_followirs_p_mrr_tie_aware_with_its_other_scores():
    original = {"q1-og": {"d1": 0.5, "d2": 0.5, "d3": 0.1}}
    new = {"q1-changed": {"d1": 0.5, "d2": 0.5, "d3": 0.5}}
    qrels = {"q1-og": {"d1": 1, "d2": 1}, "q1-changed": {"d2": 1}}
    changed = {"q1": ["d1"]}
    own = rm.evaluate_p_mrr_change(qrels, {**original, **new}, changed, [1, 2])
    with tm.installed():
        got = rm.evaluate_p_mrr_change(qrels, {**original, **new}, changed, [1, 2])
    # d1: original rank 1 or 2, new rank 1, 2 or 3: the six pairs' rank_score, written out
    assert got["p-MRR"] == pytest.approx((0 + (1 - 1 / 2) + (1 - 1 / 3) + (1 / 2 - 1) + 0 + (1 - 2 / 3)) / 6,
                                         abs=1e-15)
    # MTEB's own order (document id, descending, inside a tie): d1 second in the original run, third in the new
    assert own["p-MRR"] == pytest.approx(1 - 2 / 3, abs=1e-15)
    assert got["changed"]["mrr_at_1"] == pytest.approx(1 / 3)   # d2 first in a third of the orderings
    assert own["changed"]["mrr_at_1"] == 0.0   # d3 first
    with tm.installed(ties="trec_eval"):
        assert rm.evaluate_p_mrr_change(qrels, {**original, **new}, changed, [1, 2])["p-MRR"] == own["p-MRR"]


@pytest.mark.parametrize("call, message", [
    (lambda: tm.p_mrr({"q-og": {"a": 1.0}}, {"q-changed": {"a": 1.0}}, {"q": ["a"]}, ties="random"),
     r"p-MRR takes ties= one of 'expected', 'trec_eval', 'input', not 'random'"),
    (lambda: tm.p_mrr({"q-og": {"a": 1.0}}, {"q-changed": {"a": float("nan")}}, {"q": ["a"]}),
     r"p-MRR: a score of query 'q-changed' is NaN"),
    (lambda: tm.p_mrr({"q-og": {"a": 1.0}}, {"q-changed": {"a": 1.0}}, {"q": []}),
     r"p-MRR has no changed document of a query found in both runs to score")])
def test_p_mrr_errors_say_what_is_wrong(call, message):
    with pytest.raises(InputError, match=message):
        call()


def test_install_covers_the_modules_that_imported_the_metrics_and_uninstall_restores():
    from mteb.abstasks.retrieval import AbsTaskRetrieval
    from mteb.tasks.retrieval.eng import lmeb_retrieval

    own_pytrec_eval = rm.pytrec_eval
    from mteb._evaluators import retrieval_evaluator
    own_calculate = rm.calculate_retrieval_scores
    own_subset, own_load = AbsTaskRetrieval._evaluate_subset, ResultCache.load_task_result
    assert lmeb_retrieval.recall_cap is MTEB_OWN["recall_cap"]
    tm.install()
    try:
        assert rm.pytrec_eval.ties == "expected" and rm.pytrec_eval.__name__ == "pytrec_eval"
        assert lmeb_retrieval.recall_cap is rm.recall_cap is not MTEB_OWN["recall_cap"]
        tm.install(ties="upper")   # again: replaces
        assert rm.pytrec_eval.ties == "upper"
        assert rm.mrr({"q1": {"d2": 1}}, {"q1": {"d1": 1.0, "d2": 1.0}}, [1]) == {"MRR@1": [1.0]}
    finally:
        tm.uninstall()
    assert rm.pytrec_eval is own_pytrec_eval
    assert rm.calculate_retrieval_scores is retrieval_evaluator.calculate_retrieval_scores is own_calculate
    assert {name: getattr(rm, name) for name in MTEB_OWN} == MTEB_OWN
    assert lmeb_retrieval.recall_cap is MTEB_OWN["recall_cap"]
    assert AbsTaskRetrieval._evaluate_subset is own_subset and ResultCache.load_task_result is own_load
    tm.uninstall()   # twice: nothing to do
    with pytest.raises(InputError):
        tm.install(ties="best")


# ------------------------------------------------------------------------------------- end to end


@pytest.fixture(scope="module")
def tiny():
    """(model, task factory): MTEB's mock retrieval task with five documents and two queries, and a model
    that embeds every text alike (all ten scores tie); encode calls are counted."""
    from datasets import Dataset
    from mteb.mocks.mock_tasks.retrieval import MockRetrievalTask, base_retrieval_datasplit
    from mteb.models import ModelMeta
    from mteb.models.model_implementations.random_baseline import RandomEncoderBaseline

    class Constant(RandomEncoderBaseline):
        calls = 0

        def encode(self, inputs, **kwargs):
            Constant.calls += 1
            return np.ones_like(super().encode(inputs, **kwargs))

    meta = ModelMeta(loader=Constant, name="tierank-test/constant", revision="1", model_type=["dense"],
                     embed_dim=8, similarity_fn_name="cosine", languages=None, open_weights=True,
                     release_date=None, n_parameters=0, n_embedding_parameters=0, memory_usage_mb=0,
                     license="mit", max_tokens=np.inf, reference=None, framework=[], use_instructions=False,
                     public_training_code=None, public_training_data=None, training_datasets=set(),
                     modalities=["text"])

    class Tiny(MockRetrievalTask):
        metadata = MockRetrievalTask.metadata.model_copy(update={"name": "TierankTinyRetrieval",
                                                                 "eval_splits": ["test"]})

        def load_data(self, num_proc=None, **kwargs):
            split = base_retrieval_datasplit()
            split["corpus"] = Dataset.from_list([{"id": f"d{i}", "text": f"document {i}", "title": ""}
                                                 for i in range(5)])
            split["relevant_docs"] = {"q1": {"d1": 1, "d3": 0}, "q2": {"d4": 1, "d2": 1}}
            split["top_ranked"] = None
            self.dataset = {"default": {"test": split}}
            self.data_loaded = True

    return meta.load_model(), Tiny, Constant


QRELS = {"q1": {"d1": 1, "d3": 0}, "q2": {"d4": 1, "d2": 1}}
TIED = {q: {f"d{i}": 1.0 for i in range(5)} for q in QRELS}


def _run(tiny, cache, strategy="always"):
    model, Tiny, _ = tiny
    res = mteb.evaluate(model, Tiny(), cache=cache, show_progress_bar=False, overwrite_strategy=strategy)
    return res.task_results[0]


def test_mteb_evaluate_reports_every_score_tie_aware_and_tags_it(tiny, tmp_path):
    cache = ResultCache(tmp_path)
    own = _run(tiny, cache).scores["test"][0]
    assert tm.TAG not in own and "tierank" not in json.dumps(own)
    with tm.installed():
        got = _run(tiny, cache).scores["test"][0]
    assert got[tm.TAG]["ties"] == "expected" and got[tm.TAG]["version"] == tierank.__version__
    # the same task scored from the predictions by MTEB on every ordering: the brute force
    per_query, mrr = _brute_force(TIED, QRELS, [1, 3, 5, 10])
    for k in (1, 3, 5):
        for key, name in (("ndcg_cut", "ndcg"), ("map_cut", "map"), ("recall", "recall"), ("P", "precision"),
                          ("success", "hit_rate")):
            mean = sum(per_query[q][f"{key}_{k}"] for q in QRELS) / 2
            assert abs(got[f"{name}_at_{k}"] - mean) <= 5e-6 + 1e-12, (name, k)
        assert abs(got[f"mrr_at_{k}"] - sum(mrr[f"MRR@{k}"]) / 2) <= 1e-12
    assert got["accuracy"] == got["recall_at_1"] and got["main_score"] == got["ndcg_at_10"]
    # MTEB's own: d4 (the largest id) first in every tie
    assert own["mrr_at_1"] == 0.5 and got["mrr_at_1"] == pytest.approx((1 / 5 + 2 / 5) / 2)
    assert set(own) | {tm.TAG} == set(got)


def test_the_tag_survives_the_result_file_and_the_cache_never_mixes(tiny, tmp_path):
    _, Tiny, Constant = tiny
    cache = ResultCache(tmp_path)
    path = cache.get_task_result_path("TierankTinyRetrieval", tiny[0].mteb_model_meta)
    with tm.installed():
        _run(tiny, cache)
    assert json.loads(path.read_text())["scores"]["test"][0][tm.TAG]["ties"] == "expected"
    loaded = TaskResult.from_disk(path)
    assert tm.tie_mode(loaded) == "expected" and tm.tie_mode(loaded.to_dict()) == "expected"
    calls = Constant.calls
    with tm.installed():   # the same tie mode: MTEB reuses its cached result
        again = _run(tiny, cache, "only-missing")
    assert Constant.calls == calls and tm.tie_mode(again) == "expected"
    with tm.installed(ties="trec_eval"):   # another tie mode: computed again, never merged
        other = _run(tiny, cache, "only-missing")
    assert Constant.calls > calls and tm.tie_mode(other) == "trec_eval"
    own = _run(tiny, cache, "always")   # MTEB's own: untagged, and equal to the trec_eval mode's numbers
    assert tm.tie_mode(own) is None and tm.tie_mode(TaskResult.from_disk(path)) is None
    assert {k: v for k, v in other.scores["test"][0].items() if k != tm.TAG} == own.scores["test"][0]
    with tm.installed():   # an untagged cached result is not reused either
        calls = Constant.calls
        assert tm.tie_mode(_run(tiny, cache, "only-missing")) == "expected" and Constant.calls > calls
    with tm.installed(ties="upper"), pytest.raises(ValueError, match="no results found in cache"):
        _run(tiny, cache, "only-cache")   # only the cache, which holds another tie mode's numbers
