"""tierank.pytrec_eval against the real pytrec_eval (pytrec-eval-terrier), run inside the tests.

* ``ties="trec_eval"``: pytrec_eval's values (to 1e-12), keys (same names, same order) and queries (same
  order) on random small runs, tied or not, over most of its measures, at relevance levels 1 and 2, with
  and without ``judged_docs_only_flag``, except the documented exceptions (``EXCEPTIONS``), each tested;
* ``ties="expected"`` (the default), ``"lower"``, ``"upper"`` and the bounds: pytrec_eval's values on runs
  without ties in float32; on tied runs, the mean / min / max of pytrec_eval's values over every ordering
  of the tied documents (each ordering given to pytrec_eval with strictly decreasing scores);
* errors are InputErrors; install() / uninstall() swap ``sys.modules["pytrec_eval"]``; open ties at
  cutoffs are the queries a direct definition (sorting the float32 scores) finds.
"""

from __future__ import annotations

import importlib
import math
import sys
import textwrap

import numpy as np
import pytest
import pytrec_eval as real
from hypothesis import given, settings
from hypothesis import strategies as st

import tierank
import tierank.pytrec_eval as ours
from oracle import doc_orderings
from tierank import InputError
from tierank.measures import expand

SETTINGS = settings(max_examples=60, deadline=None, derandomize=True, database=None)
TOL = 1e-12

# mixed case, digits and punctuation: trec_eval orders ties by strcmp ("d9" > "d10", "D3" < "a")
DOC_IDS = ["d1", "d2", "d9", "d10", "D3", "a", "b_1", "Z9", "x-7", "d100"]
QUERY_IDS = ["q1", "q2", "q10", "Q3", "7"]
# scores with ties, and two values that differ as doubles but tie as C floats (pytrec_eval reads those)
TIED_SCORES = [0.0, 0.5, 1.0, 0.3, 0.30000000000000004, -2.0, 7.0]
POOL = ["map", "P.1,3", "P_2", "recall.2,5", "ndcg", "ndcg_cut.1,3", "map_cut.2", "recip_rank", "Rprec",
        "bpref", "infAP", "success.1,2", "relative_P.2", "iprec_at_recall.0.25,0.5", "Rprec_mult.0.5,1.5",
        "set_F", "set_F.0.5", "set_P", "set_recall", "set_map", "set_relative_P", "num_ret", "num_rel",
        "num_rel_ret", "num_nonrel_judged_ret", "num_q", "gm_map", "gm_bpref", "utility", "11pt_avg",
        "binG", "G", "ndcg_rel", "Rndcg", "relstring", "runid", "official", "set"]


# ---------------------------------------------------------------------------------------- helpers


def _pytrec(qrels, run, measures, rel=1, judged=False):
    return real.RelevanceEvaluator(qrels, measures, rel, judged).evaluate(run)


def _ours(qrels, run, measures, rel=1, judged=False, **kw):
    return ours.RelevanceEvaluator(qrels, measures, rel, judged, **kw).evaluate(run)


def _evaluated_list_is_empty(run_q, qrels_q, judged):
    """Whether trec_eval has no document left for the query (empty run; under -J no judged document)."""
    if judged:
        return not any(qrels_q.get(d, -1) >= 0 for d in run_q)
    return not run_q


def _assert_same(got, want, qrels=None, run=None, judged=False, tol=TOL):
    """Same queries in the same order, same keys in the same order, values to ``tol``; where pytrec_eval
    gives NaN, the exception: an empty evaluated list, iprec_at_recall / 11pt_avg, and tierank's 0."""
    assert list(got) == list(want)
    for q in want:
        assert list(got[q]) == list(want[q]), q
        for key, w in want[q].items():
            g = got[q][key]
            if math.isnan(w):
                assert qrels is not None and _evaluated_list_is_empty(run[q], qrels[q], judged), (q, key)
                assert key == "11pt_avg" or key.startswith("iprec_at_recall_"), (q, key)
                assert g == 0.0, (q, key, g)
                continue
            assert isinstance(g, float) and abs(g - w) <= tol, (q, key, g, w)


@st.composite
def collections(draw, tied=True, max_docs=7, nonempty=False):
    """(qrels, run): up to 4 queries, some only in the run, some only in the qrels, some with empty
    judgments or empty runs; tied scores (with float32 ties) or scores distinct in float32."""
    qids = draw(st.lists(st.sampled_from(QUERY_IDS), min_size=1, max_size=4, unique=True))
    qrels, run = {}, {}
    for q in qids:
        where = draw(st.sampled_from(["both"] * 6 + ["run", "qrels"]))
        docs = draw(st.lists(st.sampled_from(DOC_IDS), min_size=1 if nonempty else 0, max_size=max_docs,
                             unique=True))
        if tied:
            scores = draw(st.lists(st.sampled_from(TIED_SCORES), min_size=len(docs), max_size=len(docs)))
        else:
            scores = [0.25 * i + 1.0 for i in draw(st.permutations(range(len(docs))))]
        judged = draw(st.lists(st.sampled_from(DOC_IDS), max_size=6, unique=True))
        grades = draw(st.lists(st.sampled_from([-1, 0, 0, 1, 1, 2, 3]), min_size=len(judged),
                               max_size=len(judged)))
        if where in ("both", "run"):
            run[q] = dict(zip(docs, scores))
        if where in ("both", "qrels"):
            qrels[q] = dict(zip(judged, grades))
    return qrels, run


measure_lists = st.lists(st.sampled_from(POOL), min_size=1, max_size=6, unique=True)


def _c_float(score):
    """A score as pytrec_eval reads it: a C float."""
    return float(np.float32(score))


def _over_orderings(qrels, run, measures, rel):
    """pytrec_eval over every ordering of each query: ``{q: {key: [values]}}`` (pseudo-queries with
    strictly decreasing scores, one per ordering)."""
    pseudo_qrels, pseudo_run, owner = {}, {}, {}
    for q, scores in run.items():
        if q not in qrels or not qrels[q]:
            continue
        for i, order in enumerate(doc_orderings(scores, key=_c_float)):
            p = f"{q}#{i}"
            owner[p] = q
            pseudo_qrels[p] = qrels[q]
            pseudo_run[p] = {d: float(len(order) - j) for j, d in enumerate(order)}
    values = {}
    for p, row in _pytrec(pseudo_qrels, pseudo_run, measures, rel).items():
        into = values.setdefault(owner[p], {})
        for key, v in row.items():
            into.setdefault(key, []).append(v)
    return values


# ------------------------------------------------------------------------ pytrec_eval's tie-break


@SETTINGS
@given(data=collections(), measures=measure_lists, rel=st.sampled_from([1, 2]), judged=st.booleans())
def test_trec_eval_ties_give_pytrec_eval_values(data, measures, rel, judged):
    qrels, run = data
    want = _pytrec(qrels, run, measures, rel, judged)
    _assert_same(_ours(qrels, run, measures, rel, judged, ties="trec_eval"), want, qrels, run, judged)


@settings(max_examples=15, deadline=None, derandomize=True, database=None)
@given(data=collections(max_docs=9), rel=st.sampled_from([1, 2]), judged=st.booleans())
def test_trec_eval_ties_every_measure_of_all_trec(data, rel, judged):
    qrels, run = data
    want = _pytrec(qrels, run, ["all_trec"], rel, judged)
    _assert_same(_ours(qrels, run, ["all_trec"], rel, judged, ties="trec_eval"), want, qrels, run, judged)


@SETTINGS
@given(data=collections(tied=False), measures=measure_lists, rel=st.sampled_from([1, 2]), judged=st.booleans(),
       ties=st.sampled_from(["expected", "trec_eval", "lower", "upper", "optimistic", "input"]))
def test_runs_without_ties_give_pytrec_eval_values_in_every_mode(data, measures, rel, judged, ties):
    qrels, run = data
    want = _pytrec(qrels, run, measures, rel, judged)
    ev = ours.RelevanceEvaluator(qrels, measures, rel, judged, ties=ties)
    _assert_same(ev.evaluate(run), want, qrels, run, judged)
    lower, upper = ev.evaluate_bounds(run)
    _assert_same(lower, want, qrels, run, judged)
    _assert_same(upper, want, qrels, run, judged)


def test_default_is_expected_and_reads_c_floats():
    ev = ours.RelevanceEvaluator({"q": {"a": 1}}, {"recip_rank"})
    assert (ev.ties, ev.trec_eval_version) == ("expected", 9)
    # 0.3 and 0.30000000000000004 are one C float: a tie for pytrec_eval and for the default ...
    run = {"q": {"a": 0.3, "b": 0.30000000000000004}}
    assert _pytrec({"q": {"a": 1}}, run, {"recip_rank"}) == {"q": {"recip_rank": 0.5}}   # "b" > "a"
    assert ev.evaluate(run) == {"q": {"recip_rank": 0.75}}
    # ... not as doubles: "b" is above "a"
    ev10 = ours.RelevanceEvaluator({"q": {"a": 1}}, {"recip_rank"}, trec_eval_version=10)
    assert ev10.evaluate(run) == {"q": {"recip_rank": 0.5}}
    assert ev10.evaluate({"q": {"a": 0.30000000000000004, "b": 0.3}}) == {"q": {"recip_rank": 1.0}}


# ------------------------------------------------------------------- tie-aware: over the orderings

EXPECTED_MEASURES = ["map", "P.1,2,3", "ndcg_cut.2,5", "ndcg", "recip_rank", "recall.2", "success.1",
                     "Rprec", "bpref", "infAP", "map_cut.3", "set_F", "num_rel_ret", "iprec_at_recall.0.5"]


@SETTINGS
@given(data=collections(max_docs=6, nonempty=True), rel=st.sampled_from([1, 2]))
def test_expected_and_bounds_are_mean_min_max_over_orderings(data, rel):
    qrels, run = data
    brute = _over_orderings(qrels, run, EXPECTED_MEASURES, rel)
    ev = ours.RelevanceEvaluator(qrels, EXPECTED_MEASURES, rel, bounds=True)
    got = ev.evaluate(run)
    lower, upper = ev.lower, ev.upper
    assert (lower, upper) == ev.evaluate_bounds(run)
    assert list(got) == list(brute)   # run order, shared queries
    for q, keys in brute.items():
        assert list(got[q]) == list(keys)
        for key, values in keys.items():
            assert abs(got[q][key] - math.fsum(values) / len(values)) <= 1e-12, (q, key)
            assert abs(lower[q][key] - min(values)) <= TOL and abs(upper[q][key] - max(values)) <= TOL, (q, key)


def test_tied_example_by_hand():
    """Two documents tie at the top, the relevant one with the smaller id: pytrec_eval puts it second."""
    qrels = {"q1": {"d1": 1, "d3": 1}}
    run = {"q1": {"d1": 2.0, "d2": 2.0, "d3": 1.0}}
    assert _pytrec(qrels, run, {"recip_rank", "P.1"}) == {"q1": {"recip_rank": 0.5, "P_1": 0.0}}
    assert _ours(qrels, run, {"recip_rank", "P.1"}) == {"q1": {"recip_rank": 0.75, "P_1": 0.5}}
    # AP: d1 first (1 + 2/3) / 2 or second (1/2 + 2/3) / 2, on average 17/24
    assert _ours(qrels, run, {"map"}) == {"q1": {"map": pytest.approx(17 / 24, abs=1e-15)}}
    ev = ours.RelevanceEvaluator(qrels, {"map"})
    assert ev.evaluate_bounds(run) == ({"q1": {"map": pytest.approx(7 / 12)}}, {"q1": {"map": pytest.approx(5 / 6)}})


# --------------------------------------------------------------------------- measure spellings, keys

SPELLINGS = [
    {"ndcg_cut.10,100"}, {"P"}, {"map", "recip_rank", "recall.100", "set_F"}, {"P.5", "P_10", "P.20,5"},
    {"P", "P.3"}, ["recall_5", "recall.5,7"], {"official"}, {"set"}, {"all_trec"}, {"iprec_at_recall"},
    {"iprec_at_recall.0.25"}, {"Rprec_mult"}, {"success"}, {"ndcg_cut"}, {"map_cut", "relative_P"},
    {"set_F.0.5"}, {"set_F", "set_F.0.5"}, {"gm_map", "gm_bpref", "num_q", "runid"}, {"runid"}, ["ndcg_cut_3"],
    {"map_cut_5,10"},
]


@pytest.mark.parametrize("measures", SPELLINGS, ids=[",".join(sorted(m)) for m in SPELLINGS])
def test_keys_and_their_order_are_pytrec_evals(measures):
    qrels = {"q1": {"d1": 1, "d2": 0, "d3": 2}, "q2": {"d1": 1}}
    run = {"q2": {"d1": 0.5, "d2": 0.25}, "q1": {"d1": 0.5, "d4": 0.1, "d3": 0.7}}
    want = _pytrec(qrels, run, measures)
    _assert_same(_ours(qrels, run, measures, ties="trec_eval"), want)
    _assert_same(_ours(qrels, run, measures), want)   # no ties


def test_supported_measures_and_nicknames_are_pytrec_evals():
    assert ours.supported_measures == set(real.supported_measures)
    for name, members in ours.supported_nicknames.items():
        assert members == set(real.supported_nicknames[name]), name
    assert set(real.supported_nicknames) - set(ours.supported_nicknames) == {"all_prefs", "prefs", "qrels_jg"}
    # all_trec lists the measures in the order pytrec_eval's results do
    want = _pytrec({"q": {"a": 1}}, {"q": {"a": 1.0}}, {"all_trec"})["q"]
    keys = list(_ours({"q": {"a": 1}}, {"q": {"a": 1.0}}, {"all_trec"})["q"])
    assert keys == list(want)


def test_queries_evaluated_are_pytrec_evals():
    """Queries in both, in the order of the run; judged queries without judgments are left out; a query with
    an empty run is evaluated (nothing retrieved)."""
    qrels = {"b": {"d1": 1}, "a": {"d1": 1}, "empty": {}, "only_qrels": {"d1": 1}, "c": {"d2": 1}}
    run = {"c": {}, "only_run": {"d1": 1.0}, "a": {"d1": 1.0}, "empty": {"d1": 1.0}, "b": {"d1": 1.0, "d2": 2.0}}
    measures = {"map", "P.5", "num_ret", "num_rel", "ndcg_cut.5"}
    want = _pytrec(qrels, run, measures)
    assert list(want) == ["c", "a", "b"]
    _assert_same(_ours(qrels, run, measures), want)
    _assert_same(_ours(qrels, run, measures, ties="trec_eval"), want)
    # nothing shared, or nothing at all: an empty dict, as pytrec_eval
    for r in ({"zz": {"d1": 1.0}}, {}):
        assert _pytrec(qrels, r, measures) == {} == _ours(qrels, r, measures)
    # every evaluated query with an empty run
    assert _ours(qrels, {"c": {}}, measures) == _pytrec(qrels, {"c": {}}, measures)


def test_numpy_and_integer_scores_are_read_as_numbers():
    qrels = {"q": {"a": 1, "b": 0}}
    want = _pytrec(qrels, {"q": {"a": 1.0, "b": 2.0}}, {"map"})
    assert _pytrec(qrels, {"q": {"a": 1, "b": 2}}, {"map"}) == want
    assert _ours(qrels, {"q": {"a": 1, "b": 2}}, {"map"}) == want
    # pytrec_eval refuses numpy floats (TypeError); tierank reads them
    assert _ours(qrels, {"q": {"a": np.float32(1), "b": np.float64(2)}}, {"map"}) == want


# ------------------------------------------------------------------------------ the exceptions

def test_exceptions_are_documented():
    assert set(ours.EXCEPTIONS) == {"relstring", "runid", "empty lists", "NaN scores", "boolean scores",
                                    "grades beyond the 32-bit int range", "utility with parameters",
                                    "gain maps (ndcg.1=0.5,2=3, ...)"}


def test_exception_relstring_and_runid_are_zero_as_in_pytrec_eval():
    qrels, run = {"q": {"a": 1, "b": 0}}, {"q": {"a": 1.0, "b": 2.0, "c": 0.0}}
    want = _pytrec(qrels, run, {"relstring", "runid"})
    assert want == {"q": {"runid": 0.0, "relstring": 0.0}} == _ours(qrels, run, {"relstring", "runid"})
    assert _ours(qrels, run, {"runid"}) == {"q": {"runid": 0.0}}


def test_exception_empty_lists_nan_in_pytrec_eval_zero_here():
    qrels = {"q": {"a": 1, "b": 0}, "r": {"a": 1}}
    run = {"q": {}, "r": {"zz": 1.0}}
    want = _pytrec(qrels, run, {"iprec_at_recall", "11pt_avg", "map"}, judged=True)
    assert math.isnan(want["q"]["11pt_avg"]) and math.isnan(want["r"]["iprec_at_recall_0.00"])
    got = _ours(qrels, run, {"iprec_at_recall", "11pt_avg", "map"}, judged=True)
    _assert_same(got, want, qrels, run, judged=True)
    assert got["q"]["11pt_avg"] == got["r"]["iprec_at_recall_0.00"] == 0.0


def test_exception_nan_and_boolean_scores_are_input_errors():
    qrels = {"q": {"a": 1}}
    with pytest.raises(InputError, match=r"score of document 'a' for query 'q' is NaN"):
        _ours(qrels, {"q": {"a": float("nan"), "b": 1.0}}, {"map"})
    with pytest.raises(InputError, match=r"score of document 'a' for query 'q' is a boolean"):
        _ours(qrels, {"q": {"a": True}}, {"map"})
    assert _pytrec(qrels, {"q": {"a": True}}, {"map"}) == {"q": {"map": 1.0}}   # pytrec_eval: True is 1


def test_exception_large_grades_are_read_as_they_are():
    qrels = {"q": {"a": 2 ** 32}}
    assert _pytrec(qrels, {"q": {"a": 1.0}}, {"map"}) == {"q": {"map": 0.0}}   # wrapped around to 0
    assert _ours(qrels, {"q": {"a": 1.0}}, {"map"}, ties="trec_eval") == {"q": {"map": 1.0}}


def test_exception_utility_and_gain_maps_with_parameters():
    qrels = {"q": {"a": 1, "b": 0, "c": 2}}
    run = {"q": {"a": 3.0, "b": 2.0, "d": 1.0}}
    # utility = a * rel_ret + b * nonrel_ret + c * rel_not_ret + d * nonrel_not_ret (judged ones only):
    # 1 relevant retrieved (a), 2 other retrieved (b, d), 1 relevant not retrieved (c)
    assert _ours(qrels, run, {"utility.2,-1,0,0"}) == {"q": {"utility": 2 * 1 - 1 * 2}}
    assert _pytrec(qrels, run, {"utility.2,1,0,0"}) == {"q": {"utility": 0.0}}   # coefficients mangled
    # gains 1 -> 0.5, 2 -> 3: DCG = 0.5 (a, rank 1); ideal: c (3) then a (0.5 / log2 3)
    got = _ours(qrels, run, {"ndcg.1=0.5,2=3"})
    assert got == {"q": {"ndcg": pytest.approx(0.5 / (3 + 0.5 / math.log2(3)), abs=1e-15)}}


def test_grades_fractional_only_outside_trec_eval_mode():
    qrels = {"q": {"a": 1.5, "b": 0}}
    assert _ours(qrels, {"q": {"a": 1.0, "b": 2.0}}, {"ndcg"})["q"]["ndcg"] == pytest.approx(
        (1.5 / math.log2(3)) / 1.5)
    with pytest.raises(InputError, match=r"grade of document 'a' for query 'q' is 1.5, which trec_eval reads as 1"):
        _ours(qrels, {"q": {"a": 1.0}}, {"ndcg"}, ties="trec_eval")


# --------------------------------------------------------------------------------------- errors

@pytest.mark.parametrize(("call", "message"), [
    (lambda: ours.RelevanceEvaluator([("q", "d", 1)], {"map"}), r"query_relevance must be a dict"),
    (lambda: ours.RelevanceEvaluator({"q": [1]}, {"map"}), r"query 'q' maps to list"),
    (lambda: ours.RelevanceEvaluator({1: {"d": 1}}, {"map"}), r"the query ids of query_relevance must be strings .* got 1"),
    (lambda: ours.RelevanceEvaluator({"q": {"d": 1}}, "map"), r"measures must be a set or list of measure strings"),
    (lambda: ours.RelevanceEvaluator({"q": {"d": 1}}, {"ndcg_cutt.10"}),
     r"unsupported measure 'ndcg_cutt.10' \(did you mean 'ndcg_cut'\?\)"),
    (lambda: ours.RelevanceEvaluator({"q": {"d": 1}}, {"foo"}), r"unsupported measure 'foo'; pytrec_eval's measures"),
    (lambda: ours.RelevanceEvaluator({"q": {"d": 1}}, {"P.abc"}), r"unsupported measure 'P.abc'"),
    (lambda: ours.RelevanceEvaluator({"q": {"d": 1}}, [3]), r"a measure must be a string .* got 3"),
    (lambda: ours.RelevanceEvaluator({"q": {"d": 1}}, []), r"no measure given"),
    (lambda: ours.RelevanceEvaluator({"q": {"d": 1}}, {"prefs"}), r"preference measures \('prefs'\)"),
    (lambda: ours.RelevanceEvaluator({"q": {"d": 1}}, {"set_F.0.5", "set_F.2"}),
     r"set_F with parameters .* one set of parameters"),
    (lambda: ours.RelevanceEvaluator({"q": {"d": 1}}, {"P.0"}), r"'P.0'"),
    (lambda: ours.RelevanceEvaluator({"q": {"d": 1}}, {"map"}, 0), r"relevance_level must be a positive integer"),
    (lambda: ours.RelevanceEvaluator({"q": {"d": 1}}, {"map"}, 1.5), r"relevance_level must be a positive integer"),
    (lambda: ours.RelevanceEvaluator({"q": {"d": 1}}, {"map"}, ties="best"), r"ties='best' is not a tie mode"),
    (lambda: ours.RelevanceEvaluator({"q": {"d": 1}}, {"map"}, bounds="yes"), r"bounds must be True or False"),
    (lambda: ours.RelevanceEvaluator({"q": {"d": 1}}, {"map"}, trec_eval_version=8), r"trec_eval_version"),
    (lambda: ours.RelevanceEvaluator({"q": {"d": 1}}, {"map"}).evaluate([("q", "d", 1.0)]),
     r"scores must be a dict \{query_id: \{doc_id: score\}\}, not list"),
    (lambda: ours.RelevanceEvaluator({"q": {"d": 1}}, {"map"}).evaluate({"q": [1.0]}), r"query 'q' maps to list"),
    (lambda: ours.RelevanceEvaluator({"q": {"d": 1}}, {"map"}).evaluate({2: {"d": 1.0}}),
     r"the query ids of scores must be strings .* got 2"),
    (lambda: ours.RelevanceEvaluator({"q": {"d": 1}}, {"map"}).evaluate({"q": {"d": "1.0"}}),
     r"score of document 'd' for query 'q' is the string '1.0', not a number"),
    (lambda: ours.RelevanceEvaluator({"q": {"d": "1"}}, {"map"}).evaluate({"q": {"d": 1.0}}),
     r"grade of document 'd' for query 'q' is the string '1'"),
    (lambda: ours.RelevanceEvaluator({"q": {"d": 1}}, {"map"}).evaluate({"q": {1: 1.0}}),
     r"document ids of the run are integers .* but those of the qrels are strings"),
    (lambda: ours.compute_aggregated_measure("map", []), r"no values to aggregate for 'map'"),
    (lambda: ours.compute_aggregated_measure("map", ["a"]), r"the values of 'map' must be numbers"),
    (lambda: ours.compute_aggregated_measure(3, [1.0]), r"measure must be an output key"),
    (lambda: ours.parse_run(["q1 Q0 d1 1 x tag"]), r"run line 1: the score 'x' is not a number"),
    (lambda: ours.parse_run(["q1 Q0 d1 1 2", ""]), r"run line 1: 6 fields expected"),
    (lambda: ours.parse_qrel(["q 0 d 1", "q 0 d 2"]), r"qrels line 2: document 'd' appears twice for query 'q'"),
])
def test_errors_are_input_errors(call, message):
    with pytest.raises(InputError, match=message):
        call()


def test_errors_pytrec_eval_gives_for_the_same_inputs():
    """The inputs above that pytrec_eval also refuses (TypeError, ValueError), so the errors are ones its users
    meet: tierank's are InputErrors (ValueErrors) with where the problem is."""
    for call in (lambda: real.RelevanceEvaluator({1: {"d": 1}}, {"map"}),
                 lambda: real.RelevanceEvaluator({"q": {"d": 1}}, {"foo"}),
                 lambda: real.RelevanceEvaluator({"q": {"d": 1}}, {"map"}, 0),
                 lambda: real.RelevanceEvaluator({"q": {"d": 1}}, {"map"}).evaluate([("q", "d", 1.0)]),
                 lambda: real.RelevanceEvaluator({"q": {"d": 1}}, {"map"}).evaluate({"q": {"d": "1.0"}}),
                 lambda: real.RelevanceEvaluator({"q": {"d": "1"}}, {"map"})):
        with pytest.raises((TypeError, ValueError)):
            call()
    assert issubclass(InputError, ValueError)


# ------------------------------------------------------------------------------------ aggregation


@SETTINGS
@given(data=collections(nonempty=True), ties=st.sampled_from(["expected", "trec_eval"]))
def test_compute_aggregated_measure_is_pytrec_evals_and_tieranks_mean(data, ties):
    qrels, run = data
    measures = ["map", "gm_map", "P.2", "num_ret", "num_rel_ret", "ndcg_cut.3", "gm_bpref"]
    got = _ours(qrels, run, measures, ties=ties)
    if not got:
        return
    shared = {q: run[q] for q in got}
    mean = tierank.evaluate({q: qrels[q] for q in got}, shared, expand(["map", "gm_map", "P.2", "num_ret",
                                                                        "num_rel_ret", "ndcg_cut.3", "gm_bpref"]),
                            ties=ties, trec_eval_version=9).mean
    for key in next(iter(got.values())):
        values = [row[key] for row in got.values()]
        agg = ours.compute_aggregated_measure(key, values)
        assert agg == real.compute_aggregated_measure(key, values)
        assert abs(agg - mean[key]) <= 1e-12 * max(1.0, abs(mean[key])), key


# --------------------------------------------------------------------------------------- bounds


def test_bounds_never_add_keys_to_evaluate():
    qrels, run = {"q": {"a": 1}}, {"q": {"a": 1.0, "b": 1.0}}
    ev = ours.RelevanceEvaluator(qrels, {"P.1", "map"}, bounds=True)
    assert ev.evaluate(run) == {"q": {"map": 0.75, "P_1": 0.5}}
    assert ev.lower == {"q": {"map": 0.5, "P_1": 0.0}} and ev.upper == {"q": {"map": 1.0, "P_1": 1.0}}
    plain = ours.RelevanceEvaluator(qrels, {"P.1", "map"})
    assert plain.evaluate(run) == {"q": {"map": 0.75, "P_1": 0.5}} and plain.lower is None
    assert plain.evaluate_bounds(run) == (ev.lower, ev.upper)
    assert plain.evaluate_bounds({"zz": {"a": 1.0}}) == ({}, {})


# -------------------------------------------------------------------------------------- install


def test_install_then_import_gets_ours_and_uninstall_restores(tmp_path, monkeypatch):
    host = tmp_path / "host_library.py"
    host.write_text(textwrap.dedent("""
        import pytrec_eval

        def p1(qrels, run):
            return pytrec_eval.RelevanceEvaluator(qrels, {"P.1"}).evaluate(run)
    """))
    monkeypatch.syspath_prepend(str(tmp_path))
    qrels, run = {"q": {"a": 1}}, {"q": {"a": 1.0, "b": 1.0}}
    assert sys.modules["pytrec_eval"] is real
    try:
        module = ours.install(ties="expected")
        again = ours.install(ties="lower")   # twice: replaced, and uninstall still restores the real one
        assert sys.modules["pytrec_eval"] is again is not module
        assert importlib.import_module("pytrec_eval") is again
        import pytrec_eval as now
        assert now is again and now.ties == "lower" and now.tierank_version == tierank.__version__
        host_library = importlib.import_module("host_library")
        assert host_library.p1(qrels, run) == {"q": {"P_1": 0.0}}
        assert now.RelevanceEvaluator(qrels, {"P.1"}, ties="upper").evaluate(run) == {"q": {"P_1": 1.0}}
        assert isinstance(now.RelevanceEvaluator(qrels, {"P.1"}), ours.RelevanceEvaluator)
        assert now.supported_measures == real.supported_measures
        assert now.compute_aggregated_measure("num_ret", [1.0, 2.0]) == 3.0
        assert now.parse_run(["q Q0 a 1 1.0 t"]) == real.parse_run(["q Q0 a 1 1.0 t"])
        assert now.parse_qrel(["q 0 a 1"]) == real.parse_qrel(["q 0 a 1"])
        assert now.__version__.startswith("0.5.11+tierank.")
    finally:
        ours.uninstall()
        sys.modules.pop("host_library", None)
    assert sys.modules["pytrec_eval"] is real
    import pytrec_eval as after
    assert after is real
    ours.uninstall()   # not installed: nothing
    assert sys.modules["pytrec_eval"] is real


def test_install_when_pytrec_eval_was_never_imported(monkeypatch):
    monkeypatch.delitem(sys.modules, "pytrec_eval")
    try:
        ours.install(ties="trec_eval")
        import pytrec_eval as now
        assert now.RelevanceEvaluator({"q": {"a": 1}}, {"P.1"}).evaluate({"q": {"a": 1.0, "b": 1.0}}) == \
            {"q": {"P_1": 0.0}}
    finally:
        ours.uninstall()
    assert "pytrec_eval" not in sys.modules


def test_installed_context_restores_what_was_there():
    with ours.installed(ties="upper") as module:
        assert sys.modules["pytrec_eval"] is module
        with ours.installed(ties="lower") as inner:
            assert sys.modules["pytrec_eval"] is inner
        assert sys.modules["pytrec_eval"] is module
    assert sys.modules["pytrec_eval"] is real
    with pytest.raises(InputError, match="ties='nope'"):
        ours.install(ties="nope")
    assert sys.modules["pytrec_eval"] is real


# ---------------------------------------------------------------------------------- open ties


def test_open_ties_by_hand():
    qrels = {"a": {"d0": 1}, "b": {"d0": 1}, "c": {"d0": 1}, "d": {"d0": 1}, "e": {"d0": 1}}
    run = {
        "a": {f"d{i}": float(20 - i) if i < 9 else 1.0 for i in range(12)},   # 10th = last (a tie of 3)
        "b": {f"d{i}": float(20 - i) for i in range(12)},                      # no tie
        "c": {f"d{i}": float(20 - i) for i in range(10)},                      # 10 documents: the 10th is last
        "d": {f"d{i}": float(20 - i) for i in range(8)},                       # shorter than 10
        "e": {f"d{i}": 1.0 for i in range(12)},                                # one tie: every cutoff <= 12
    }
    ev = ours.RelevanceEvaluator(qrels, {"ndcg_cut.10", "P.5,10,20", "map", "recip_rank"})
    ev.evaluate(run)
    assert ev.open_ties == {"P_5": ["e"], "P_10": ["a", "c", "e"], "P_20": [], "ndcg_cut_10": ["a", "c", "e"]}
    assert ev.open_tie_count == 3
    ev.evaluate({"b": run["b"]})   # each evaluate starts again
    assert ev.open_ties == {"P_5": [], "P_10": [], "P_20": [], "ndcg_cut_10": []} and ev.open_tie_count == 0
    assert ours.RelevanceEvaluator(qrels, {"map"}).open_ties == {}


def test_open_ties_read_scores_as_the_values_do():
    qrels = {"q": {"a": 1}}
    run = {"q": {"a": 1.0, "b": 0.3, "c": 0.30000000000000004}}   # one C float
    ev9 = ours.RelevanceEvaluator(qrels, {"P.2"})
    ev9.evaluate(run)
    assert ev9.open_ties == {"P_2": ["q"]}
    ev10 = ours.RelevanceEvaluator(qrels, {"P.2"}, trec_eval_version=10)
    ev10.evaluate(run)
    assert ev10.open_ties == {"P_2": []}
    # -J: the unjudged documents are not in the list
    judged = ours.RelevanceEvaluator({"q": {"a": 1, "b": 0}}, {"P.1"}, judged_docs_only_flag=True)
    judged.evaluate({"q": {"a": 2.0, "b": 1.0, "x": 1.0}})
    assert judged.open_ties == {"P_1": []}
    judged.evaluate({"q": {"a": 2.0, "b": 2.0, "x": 1.0}})
    assert judged.open_ties == {"P_1": ["q"]}


@SETTINGS
@given(data=collections(max_docs=9), cuts=st.lists(st.integers(1, 10), min_size=1, max_size=3, unique=True),
       judged=st.booleans())
def test_open_ties_are_the_queries_whose_kth_score_is_the_last(data, cuts, judged):
    qrels, run = data
    ev = ours.RelevanceEvaluator(qrels, {"P." + ",".join(map(str, cuts)), "map"}, judged_docs_only_flag=judged)
    ev.evaluate(run)
    want = {f"P_{k}": [] for k in sorted(cuts)}
    for q, docs in run.items():
        if not qrels.get(q):
            continue
        kept = [s for d, s in docs.items() if not judged or qrels[q].get(d, -1) >= 0]
        scores = sorted((np.float32(s) for s in kept), reverse=True)
        for k in sorted(cuts):
            if k <= len(scores) and scores[k - 1] == scores[-1]:
                want[f"P_{k}"].append(q)
    assert ev.open_ties == want
    assert ev.open_tie_count == len({q for qs in want.values() for q in qs})


# ------------------------------------------------------------------------------ BEIR recipe


def _beir_evaluate(monkeypatch, qrels, results, k_values, ties=None):
    """beir.retrieval.evaluation.EvaluateRetrieval.evaluate, imported afresh with tierank's module installed
    (``ties``) or with the real pytrec_eval (None); the module is dropped again afterwards."""
    monkeypatch.delitem(sys.modules, "beir.retrieval.evaluation", raising=False)
    try:
        if ties is not None:
            ours.install(ties=ties)
        evaluation = importlib.import_module("beir.retrieval.evaluation")
        assert evaluation.pytrec_eval is (real if ties is None else sys.modules["pytrec_eval"])
        return evaluation.EvaluateRetrieval.evaluate(qrels, results, k_values)
    finally:
        ours.uninstall()
        sys.modules.pop("beir.retrieval.evaluation", None)


def test_beir_evaluate_with_tierank_installed(monkeypatch):
    qrels = {"q1": {"d1": 1, "d3": 2}, "q2": {"d2": 1, "d5": 1}}
    k_values = [1, 2, 3]
    untied = {"q1": {"d1": 0.9, "d2": 0.8, "d3": 0.7, "d4": 0.1}, "q2": {"d1": 0.5, "d2": 0.4, "d5": 0.3}}
    want = _beir_evaluate(monkeypatch, qrels, untied, k_values)
    assert _beir_evaluate(monkeypatch, qrels, untied, k_values, ties="expected") == want
    # tied: BEIR with tierank = the mean of BEIR with pytrec_eval over every ordering (BEIR rounds to 1e-5)
    tied = {"q1": {"d1": 0.9, "d2": 0.9, "d3": 0.9, "d4": 0.1}, "q2": {"d1": 0.5, "d2": 0.5, "d5": 0.5}}
    per_order = [_beir_evaluate(monkeypatch, qrels, {"q1": {d: float(9 - i) for i, d in enumerate(o1)},
                                                     "q2": {d: float(9 - i) for i, d in enumerate(o2)}}, k_values)
                 for o1 in doc_orderings(tied["q1"], key=_c_float) for o2 in doc_orderings(tied["q2"], key=_c_float)]
    got = _beir_evaluate(monkeypatch, qrels, tied, k_values, ties="expected")
    tie_broken = _beir_evaluate(monkeypatch, qrels, tied, k_values)
    for i, part in enumerate(got):
        for key, value in part.items():
            mean = math.fsum(orders[i][key] for orders in per_order) / len(per_order)
            assert abs(value - mean) <= 1.5e-5, (key, value, mean)
    assert got != tie_broken
    assert _beir_evaluate(monkeypatch, qrels, tied, k_values, ties="trec_eval") == tie_broken
    assert sys.modules["pytrec_eval"] is real
