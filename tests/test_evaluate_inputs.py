"""Bad input to evaluate() and evaluate_matrix(): a clear InputError naming the problem and where."""

import warnings

import numpy as np
import pandas as pd
import pytest

import tierank

QRELS = {"q1": {"a": 1, "b": 0}, "q2": {"c": 2}}
RUN = {"q1": {"a": 0.5, "b": 0.5}, "q2": {"c": 1.0, "d": 0.2}}


def test_valid_input_works():
    res = tierank.evaluate(QRELS, RUN, ["AP", "NumRet"])
    assert res.mean["NumRet"] == 4.0
    assert list(res.per_query.index) == ["q1", "q2"]


@pytest.mark.parametrize("run, pattern", [
    ({"q1": {"a": float("nan")}}, r"score of document 'a' for query 'q1' is NaN"),
    ({"q1": {"a": "high"}}, r"score of document 'a' for query 'q1' is the string 'high', not a number"),
    ({"q1": ["a", "b"]}, r"query 'q1' maps to list"),
])
def test_bad_scores(run, pattern):
    with pytest.raises(tierank.InputError, match=pattern):
        tierank.evaluate(QRELS, run, ["AP"])


def test_bad_grades():
    with pytest.raises(tierank.InputError, match=r"grade of document 'a' for query 'q1' is NaN"):
        tierank.evaluate({"q1": {"a": float("nan")}}, RUN, ["AP"])
    with pytest.raises(tierank.InputError, match=r"is infinite"):
        tierank.evaluate({"q1": {"a": float("inf")}}, RUN, ["AP"])


def test_duplicate_documents_are_errors():
    run = pd.DataFrame({"query_id": ["q1", "q1", "q1"], "doc_id": ["a", "b", "a"], "score": [1.0, 2.0, 3.0]})
    with pytest.raises(tierank.InputError, match=r"document 'a' is listed twice for query 'q1' in the run"):
        tierank.evaluate(QRELS, run, ["AP"])
    qrels = pd.DataFrame({"query_id": ["q1", "q1"], "doc_id": ["a", "a"], "relevance": [1, 0]})
    with pytest.raises(tierank.InputError, match=r"listed twice for query 'q1' in the qrels"):
        tierank.evaluate(qrels, RUN, ["AP"])


def test_no_common_query_is_an_error():
    with pytest.raises(tierank.InputError, match="no query is both in the run and in the qrels"):
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            tierank.evaluate({"x": {"a": 1}}, RUN, ["AP"])


def test_left_out_queries_are_announced():
    with pytest.warns(tierank.TierankWarning, match="1 query of the run has no judgments"):
        tierank.evaluate({"q1": {"a": 1}}, RUN, ["AP"])
    with pytest.warns(tierank.TierankWarning, match="1 judged query is missing from the run"):
        res = tierank.evaluate({**QRELS, "q3": {"z": 1}}, RUN, ["AP"])
    assert list(res.per_query.index) == ["q1", "q2"]


def test_missing_zero_scores_absent_queries():
    res = tierank.evaluate({**QRELS, "q0": {"z": 1, "y": 1}}, RUN, ["AP", "NumRel", "NumQ", "NumRet"],
                           missing="zero")
    assert list(res.per_query.index) == ["q0", "q1", "q2"]
    row = res.per_query.loc["q0"]
    assert (row["AP"], row["NumRel"], row["NumQ"], row["NumRet"]) == (0.0, 2.0, 1.0, 0.0)


@pytest.mark.parametrize("kwargs, pattern", [
    ({"ties": "docid"}, "ties='docid' is not a tie mode"),
    ({"missing": "drop"}, "missing='drop'"),
    ({"seed": 1.5}, "seed must be an integer"),
])
def test_bad_options(kwargs, pattern):
    with pytest.raises(tierank.InputError, match=pattern):
        tierank.evaluate(QRELS, RUN, ["AP"], **kwargs)


def test_dataframe_without_needed_columns():
    with pytest.raises(tierank.InputError, match="no score column"):
        tierank.evaluate(QRELS, pd.DataFrame({"query_id": ["q1"], "doc_id": ["a"]}), ["AP"])


def test_wrong_container():
    with pytest.raises(tierank.InputError, match="must be a dict"):
        tierank.evaluate(QRELS, [("q1", "a", 1.0)], ["AP"])


def test_empty_measure_list():
    with pytest.raises(tierank.InputError, match="no measure given"):
        tierank.evaluate(QRELS, RUN, [])


def test_grade_above_max_grade_names_the_query():
    with pytest.raises(tierank.InputError, match=r"grade 2 is above max_grade=1 \(query 'q2'\)"):
        tierank.evaluate(QRELS, RUN, ["ERR(max_grade=1)@2"])


def test_negative_grades_in_qrels_are_non_relevant_with_zero_gain():
    qrels = {"q1": {"a": -2, "b": 1}}
    run = {"q1": {"a": 2.0, "b": 1.0}}
    res = tierank.evaluate(qrels, run, ["P@1", "nDCG@2", "NumRel"])
    # a (junk, gain 0) is first, b (gain 1) second: DCG = 1/log2(3), ideal = 1
    assert res.mean["P@1"] == 0.0
    assert res.mean["nDCG@2"] == pytest.approx(1 / np.log2(3))
    assert res.mean["NumRel"] == 1.0


def test_matrix_masks_padding():
    rel = np.array([[1, 0, 5], [0, 1, 0]])
    scores = np.array([[0.1, 0.9, 7.0], [0.5, 0.5, 0.0]])
    mask = np.array([[True, True, False], [True, True, True]])
    res = tierank.evaluate_matrix(rel, scores=scores, mask=mask, measures=["P@1", "NumRet"])
    # row 0 without its padded item: 0.9 (grade 0) before 0.1 (grade 1) -> P@1 = 0
    assert res.per_query["P@1"].tolist() == [0.0, 0.5]
    assert res.per_query["NumRet"].tolist() == [2.0, 3.0]
    with pytest.raises(tierank.InputError, match="mask must be boolean"):
        tierank.evaluate_matrix(rel, scores=scores, mask=mask.astype(int), measures=["P@1"])
    with pytest.warns(tierank.TierankWarning, match="no unmasked item"):
        res = tierank.evaluate_matrix(rel, scores=scores, mask=np.array([[False] * 3, [True] * 3]),
                                      measures=["P@1"])
    assert list(res.per_query.index) == [1]


def test_negative_grades_allowed_under_the_mask():
    rel = np.array([[1, -1]])
    res = tierank.evaluate_matrix(rel, scores=[[1.0, 2.0]], mask=[[True, False]], measures=["P@1"])
    assert res.mean["P@1"] == 1.0


def test_matrix_rejects_non_numeric():
    with pytest.raises(tierank.InputError, match="relevance must be a numeric array"):
        tierank.evaluate_matrix([["a", "b"]], scores=[[1.0, 2.0]], measures=["P@1"])
    with pytest.raises(tierank.InputError, match="1-D or 2-D"):
        tierank.evaluate_matrix(np.zeros((2, 2, 2)), scores=np.zeros((2, 2, 2)), measures=["P@1"])


def test_unjudged_documents_never_borrow_another_querys_judgment():
    # With string ids only judged documents get codes; an unjudged one ("zzz") must stay grade 0,
    # not match the last judged document of the previous query ("b" of q1).
    qrels = pd.DataFrame({"query_id": ["q1", "q1", "q2"], "doc_id": ["a", "b", "a"], "relevance": [1, 1, 0]})
    run = pd.DataFrame({"query_id": ["q1", "q2"], "doc_id": ["b", "zzz"], "score": [1.0, 1.0]})
    res = tierank.evaluate(qrels, run, ["P@1", "NumRelRet"])
    assert res.per_query["P@1"].tolist() == [1.0, 0.0]
    assert res.per_query["NumRelRet"].tolist() == [1.0, 0.0]


def test_duplicates_found_in_ungrouped_string_runs():
    run = pd.DataFrame({"query_id": ["q1", "q2", "q1", "q2"], "doc_id": ["a", "a", "b", "a"],
                        "score": [1.0, 2.0, 3.0, 4.0]})
    with pytest.raises(tierank.InputError, match=r"document 'a' is listed twice for query 'q2' in the run"):
        tierank.evaluate(QRELS, run, ["AP"])


def test_duplicate_search_by_blocks_finds_the_repeated_row():
    import pyarrow as pa
    from tierank.data.ids import _duplicate_by_blocks
    docs = pa.array(["a", "b", "c", "a", "d", "e", "d"])
    rq = np.array([0, 0, 1, 1, 2, 2, 2])
    # blocks of two rows: "a" in queries 0 and 1 is no duplicate; "d" twice in query 2 is (row 6)
    assert _duplicate_by_blocks(docs, rq, block=2) == 6
    assert _duplicate_by_blocks(docs.slice(0, 6), rq[:6], block=2) is None
    shuffled = np.array([6, 0, 4, 1, 2, 3, 5])
    assert _duplicate_by_blocks(docs.take(shuffled), rq[shuffled], block=3) == 2   # the later "d"
