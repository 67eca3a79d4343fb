"""infAP's exact expectation by profiles (src/tierank/measures/infap.py): both of its paths (the profiles,
and term by term for ties beyond ``PROFILE_MAX_N``) against the brute force of test_measures_interpolated,
with and without documents unjudged in the pool, each tie's value the same bits whatever the chunks and the
other queries, and the budget's cost model."""

from __future__ import annotations

import os
import sys

import numpy as np
import pytest

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from test_measures_interpolated import _big_tie_query, _check_runs, _evaluate  # noqa: E402

import tierank.measures.infap as infap
from tierank.errors import InputError

SHAPES = [(9, (3, 2, 2, 1)), (10, (4, 3, 1, 0)), (11, (2, 2, 2, 2)), (10, (1, 1, 4, 3)), (9, (2, 0, 3, 3)),
          (8, (1, 3, 0, 4)), (7, (3, 1, 3, 0))]


def _queries(seed):
    rng = np.random.default_rng(seed)
    return [_big_tie_query(rng, n, sizes) for n, sizes in SHAPES]


@pytest.mark.parametrize(("max_n", "chunk"), [(1000, 131_072), (1000, 1), (3, 131_072), (10, 7)])
def test_paths_against_enumeration(monkeypatch, max_n, chunk):
    """Ties of 7 to 12 documents with several relevant, judged non-relevant, unjudged in the pool and outside
    it: the profiles, term by term (``PROFILE_MAX_N`` = 3), both in one run, one tie a chunk."""
    monkeypatch.setattr(infap, "PROFILE_MAX_N", max_n)
    monkeypatch.setattr(infap, "PROFILE_CHUNK", chunk)
    _check_runs(_queries(7), ["infAP"], tol=1e-11)


@pytest.mark.parametrize("chunk", [131_072, 3])
def test_no_document_unjudged_in_the_pool(monkeypatch, chunk):
    """No grade -2 anywhere (their documents left out of the qrels: not in the pool): the in-pool unjudged
    counts are not summed tie by tie and every column's beta is 0; against the brute force."""
    monkeypatch.setattr(infap, "PROFILE_CHUNK", chunk)
    queries = [(run_q, {d: k for d, k in qrels_q.items() if k != -2}) for run_q, qrels_q in _queries(5)]
    assert not any(k == -2 for _r, qq in queries for k in qq.values())
    _check_runs(queries, ["infAP"], tol=1e-11)


def test_a_tie_is_the_same_whatever_else_is_evaluated(monkeypatch):
    queries = _queries(11) + _queries(12)
    qrels = {f"q{i}": qq for i, (_r, qq) in enumerate(queries)}
    run = {f"q{i}": rq for i, (rq, _q) in enumerate(queries)}
    together = _evaluate(qrels, run, ["infAP"]).per_query["infAP"]
    for q in run:
        alone = _evaluate({q: qrels[q]}, {q: run[q]}, ["infAP"]).per_query.loc[q, "infAP"]
        assert alone == together[q], q
    monkeypatch.setattr(infap, "PROFILE_CHUNK", 5)
    assert _evaluate(qrels, run, ["infAP"]).per_query["infAP"].tolist() == together.tolist()


@pytest.mark.parametrize(("max_n", "cost"), [(1000, 3 * 3 + 2 * 2), (3, infap.TERM * 2 * 2 * 3)])
def test_budget_counts_the_path_taken(monkeypatch, max_n, cost):
    """A tie of 2 relevant, 1 judged non-relevant and 2 others: (r + q)(o + 1) + r (q + 1) = 13 by profiles,
    r (q + 1)(o + 1) = 12 terms term by term (TERM operations each); one query of exactly the budget
    (tie_cost_budget) passes, one more operation fails."""
    qrels = {"q-tied": {"a": 1, "b": 0, "c": -2, "d": 1}}
    run = {"q-tied": {"z": 9.0, "a": 1.0, "b": 1.0, "c": 1.0, "d": 1.0, "e": 1.0}}
    monkeypatch.setattr(infap, "PROFILE_MAX_N", max_n)
    assert _evaluate(qrels, run, ["infAP"], tie_cost_budget=cost).per_query.shape == (1, 1)
    with pytest.raises(InputError) as err:
        _evaluate(qrels, run, ["infAP"], tie_cost_budget=cost - 1)
    assert "q-tied" in str(err.value) and "2-6" in str(err.value), str(err.value)
