"""A run given as a dict is evaluated in blocks of whole queries (tierank.io.blocks.dict_source, the
streamed driver): the results equal those of the whole dict evaluated at once (``stream=False``) bit for
bit, whatever the block size, and bad input raises the whole dict's error, naming the same query.

The reference is the in-memory evaluation of the same dict (``stream=False``), which reads it whole with
:func:`tierank.io.tables.dict_columns`; that reading is itself checked against a plain Python reading
in tests/test_dict_reading.py, and the values against the oracle and pytrec_eval elsewhere.
"""

from __future__ import annotations

import warnings
from collections.abc import Mapping

import numpy as np
import pytest
from hypothesis import HealthCheck, event, given, settings
from hypothesis import strategies as st

import tierank
import tierank.api
import tierank.pytrec_eval as drop_in
from tierank.io.blocks import dict_blocks

MEASURES = ["AP", "nDCG@3", "P@2", "RR", "R@5", "NumRet", "Rprec", "infAP"]


def outcome(fn):
    """("ok", results, warnings) or ("error", (message, query), None)."""
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        try:
            res = fn()
        except tierank.InputError as err:
            return "error", (str(err), err.query), None
    return "ok", res, sorted(str(w.message) for w in caught)


def same_results(a: tierank.Results, b: tierank.Results) -> None:
    """Equal bit for bit: per-query values (index too), bounds and means."""
    for x, y in ((a.per_query, b.per_query), (a.lower, b.lower), (a.upper, b.upper)):
        if x is None:
            assert y is None
            continue
        assert x.index.equals(y.index) and x.index.dtype == y.index.dtype
        assert list(x.columns) == list(y.columns)
        for col in x.columns:
            assert x[col].to_numpy().tobytes() == y[col].to_numpy().tobytes(), col
    for x, y in ((a.mean, b.mean), (a.mean_lower, b.mean_lower), (a.mean_upper, b.mean_upper)):
        if x is None:
            assert y is None
            continue
        assert list(x) == list(y)
        assert [np.float64(v).tobytes() for v in x.values()] == [np.float64(v).tobytes() for v in y.values()]


# ------------------------------------------------------------------------------------------ strategies

TIED = st.sampled_from([0.5, 0.25, 1.0, 0.0, -0.0, 2.0, float("inf")])   # few values: many ties
ODD = st.sampled_from([float("nan"), None, True, "0.5", 2 ** 70, np.float32(0.5)])


@st.composite
def run_and_qrels(draw, odd: bool = False):
    """A run and its qrels as dicts of dicts: str or int ids, tied scores (ints or floats), empty
    queries, queries only in one of them; ``odd``: sometimes a bad value or id somewhere."""
    int_ids = draw(st.booleans())
    docs = st.integers(0, 12) if int_ids else st.sampled_from([f"d{i}" for i in range(13)])
    qids = [q if int_ids else f"q{q}" for q in draw(st.lists(st.integers(0, 30), max_size=12, unique=True))]
    scores = TIED if draw(st.booleans()) else st.integers(-2, 2)
    run = {q: draw(st.dictionaries(docs, scores, max_size=8)) for q in qids if draw(st.integers(0, 5))}
    qrels = {q: draw(st.dictionaries(docs, st.integers(-1, 3), min_size=1, max_size=6)) for q in qids
             if draw(st.integers(0, 5))}
    if odd and run and draw(st.booleans()):
        q = draw(st.sampled_from(sorted(run)))
        key = draw(docs) if draw(st.booleans()) else draw(st.sampled_from([None, 2.5, "x" if int_ids else 7]))
        run[q] = {**run[q], key: draw(st.one_of(scores, ODD))}
    if odd and qrels and draw(st.integers(0, 3)) == 0:
        q = draw(st.sampled_from(sorted(qrels)))
        qrels[q] = {**qrels[q], draw(docs): draw(st.sampled_from([0.5, float("nan"), None, True]))}
    return run, qrels


# ------------------------------------------------------------------------------------------- properties


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(data=run_and_qrels(), block_rows=st.integers(1, 40), ties=st.sampled_from(tierank.TIE_MODES),
       bounds=st.booleans(), missing=st.sampled_from(["skip", "zero"]), judged_only=st.booleans(),
       version=st.sampled_from([9, 10]))
def test_any_block_size_gives_the_whole_dicts_results(data, block_rows, ties, bounds, missing, judged_only, version):
    run, qrels = data
    options = dict(ties=ties, bounds=bounds, missing=missing, judged_only=judged_only, trec_eval_version=version,
                   seed=3)
    blocked = outcome(lambda: tierank.evaluate(qrels, run, MEASURES, block_rows=block_rows, **options))
    whole = outcome(lambda: tierank.evaluate(qrels, run, MEASURES, stream=False, **options))
    event(f"{blocked[0]}, {'one block' if sum(map(len, run.values())) <= block_rows else 'blocks'}")
    assert blocked[0] == whole[0], (blocked, whole)
    if blocked[0] == "error":
        assert blocked[1] == whole[1]
        return
    same_results(blocked[1], whole[1])
    assert blocked[2] == whole[2]   # the same warnings


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(data=run_and_qrels(odd=True), block_rows=st.integers(1, 20), ties=st.sampled_from(["expected", "trec_eval"]))
def test_bad_input_raises_the_whole_dicts_error(data, block_rows, ties):
    run, qrels = data
    blocked = outcome(lambda: tierank.evaluate(qrels, run, ["AP", "P@2"], ties=ties, block_rows=block_rows))
    whole = outcome(lambda: tierank.evaluate(qrels, run, ["AP", "P@2"], ties=ties, stream=False))
    event(blocked[0] if blocked[0] == "ok" else blocked[1][0][:40])
    assert blocked[0] == whole[0], (blocked, whole)
    if blocked[0] == "error":
        assert blocked[1] == whole[1]   # message and query
    else:
        same_results(blocked[1], whole[1])


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(data=run_and_qrels(), block_rows=st.integers(1, 30), ties=st.sampled_from(["expected", "trec_eval"]),
       bounds=st.booleans())
def test_the_drop_in_gives_the_same_dicts_whatever_the_blocks(data, block_rows, ties, bounds):
    run, qrels = data
    run = {str(q): {str(d): float(s) for d, s in docs.items()} for q, docs in run.items()}
    qrels = {str(q): {str(d): g for d, g in docs.items()} for q, docs in qrels.items()}
    measures = {"map", "ndcg_cut.3", "P.2", "recip_rank", "recall.5"}

    def evaluate(rows):
        old = tierank.api.DICT_BLOCK_ROWS
        tierank.api.DICT_BLOCK_ROWS = rows
        try:
            ev = drop_in.RelevanceEvaluator(qrels, measures, ties=ties, bounds=bounds)
            return ev.evaluate(run), ev.lower, ev.upper, ev.open_ties
        finally:
            tierank.api.DICT_BLOCK_ROWS = old
    assert evaluate(block_rows) == evaluate(2 ** 40)


# ------------------------------------------------------------------------------------------- examples


def test_blocks_hold_whole_queries_in_dict_order():
    run = {"q1": {"a": 3.0, "b": 2.0, "c": 1.0}, "q2": {}, "q3": {"a": 5.0}, "q4": {"a": 1.0, "b": 1.0}}
    assert [(c.query.to_pylist(), first, last) for c, first, last in dict_blocks(run, 2)] == [
        (["q1", "q1", "q1"], 0, False), (["q3", "q4", "q4"], 3, True)]
    assert [(c.query.to_pylist(), first, last) for c, first, last in dict_blocks(run, 1)] == [
        (["q1", "q1", "q1"], 0, False), (["q3"], 3, False), (["q4", "q4"], 4, True)]
    (only, first, last), = dict_blocks({"q1": {}}, 5)   # no row: one empty block
    assert len(only.value) == 0 and (first, last) == (0, True)


def test_ties_input_and_random_use_the_row_numbers_of_the_whole_dict():
    run = {f"q{q}": {f"d{d}": 1.0 for d in range(6)} for q in range(5)}
    qrels = {f"q{q}": {f"d{q}": 1} for q in range(5)}
    for ties in ("input", "random"):
        whole = tierank.evaluate(qrels, run, ["RR", "AP"], ties=ties, seed=7, stream=False)
        for rows in (1, 4, 7, 100):
            same_results(tierank.evaluate(qrels, run, ["RR", "AP"], ties=ties, seed=7, block_rows=rows), whole)


def test_a_mapping_giving_a_query_twice_is_evaluated_as_a_whole():
    class Twice(Mapping):   # iterates q1, q2, q1: its items repeat q1's rows
        def __init__(self, rows):
            self.rows = rows

        def __getitem__(self, key):
            return self.rows[key]

        def __iter__(self):
            return iter(["q1", "q2", "q1"])

        def __len__(self):
            return 3
    run = Twice({"q1": {"a": 1.0, "b": 0.5}, "q2": {"a": 1.0}})
    qrels = {"q1": {"a": 1}, "q2": {"a": 1}}
    whole = outcome(lambda: tierank.evaluate(qrels, run, ["AP"], stream=False))
    assert whole[0] == "error" and "listed twice for query 'q1'" in whole[1][0]
    for rows in (1, 2, 3, 100):
        assert outcome(lambda: tierank.evaluate(qrels, run, ["AP"], block_rows=rows)) == whole


def test_errors_name_the_first_bad_query_of_the_whole_dict():
    # a NaN score in q2 (an early block) and an id of the wrong kind in q5 (a later block): the whole
    # dict's reading checks every id before any score, so it names q5, and so do the blocks
    run = {f"q{q}": {"a": 1.0, "b": 0.5} for q in range(6)}
    run["q2"] = {"a": float("nan")}
    run["q5"] = {"a": 1.0, 7: 0.5}
    qrels = {f"q{q}": {"a": 1} for q in range(6)}
    with pytest.raises(tierank.InputError, match=r"document ids of the run: a mix of types .* \(query 'q5'\)"):
        tierank.evaluate(qrels, run, ["AP"], block_rows=2)
    with pytest.raises(tierank.InputError, match=r"score of document 'a' for query 'q2' is NaN") as err:
        tierank.evaluate(qrels, {**run, "q5": {"a": 1.0}}, ["AP"], block_rows=2)
    assert err.value.query == "q2"


@pytest.mark.parametrize("bad", [0, -1, 2.5, "10", True])
def test_bad_block_rows(bad):
    with pytest.raises(tierank.InputError, match=r"block_rows must be a positive integer"):
        tierank.evaluate({"q": {"a": 1}}, {"q": {"a": 1.0}}, ["AP"], block_rows=bad)
