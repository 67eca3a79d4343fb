"""Cross-check tierank's DCG / nDCG on dense matrices against scikit-learn.

scikit-learn's ``ndcg_score`` / ``dcg_score`` with the default ``ignore_ties=False``
average the gain over every tie (McSherry & Najork 2008), with linear gain
``y_true`` and discount ``1 / log2(i + 1)``: exactly tierank's default
``ties="expected"`` with the default ``gain="linear"``, ``discount="log2"``.

Every expected value below is computed by scikit-learn inside the test.  The
public functions are called one row at a time (a ``(1, n)`` matrix) to get
per-query values; sklearn rejects single-column inputs, so every matrix here
has at least two columns.

``ignore_ties=True`` sorts with an unstable ``np.argsort`` reversed, so it is
compared value-for-value only on rows without ties; on rows with ties it is just
*one* ordering consistent with the scores, so it must lie within tierank's
bounds.
"""

from __future__ import annotations

import numpy as np
import pytest
from sklearn.metrics import dcg_score, ndcg_score

import tierank

ATOL = 1e-9
TIE_MODES_ALL = ["expected", "optimistic", "pessimistic", "trec_eval", "input", "random"]


# --------------------------------------------------------------------------- data


def _tied_case(seed: int, n_rows: int, n_cols: int, score_range: int, int_scores: bool):
    """Random grades 0..3 (mostly 0) and integer-valued scores in a small range: many ties."""
    rng = np.random.default_rng(seed)
    rel = rng.choice([0, 1, 2, 3], size=(n_rows, n_cols), p=[0.5, 0.25, 0.15, 0.1]).astype(float)
    scores = rng.integers(0, score_range, size=(n_rows, n_cols))
    # Hand-made rows that exercise the corners of the tie formulas.
    rel[0] = 0.0  # IDCG = 0: every library here returns 0
    scores[1] = 1  # one tie holding the whole row
    rel[2] = 2.0  # all grades equal: every ordering gives the same value
    rel[3] = 0.0
    rel[3, -1] = 3.0  # a single relevant item, in the last column
    scores[3] = 0
    scores[3, 0] = 1
    if not int_scores:
        scores = scores.astype(float) * 0.5 - 0.75  # float keys, still tied, some negative
    return rel, scores


CASES = {
    "2cols": _tied_case(0, 30, 2, 2, True),
    "3cols": _tied_case(1, 30, 3, 2, True),
    "7cols": _tied_case(2, 40, 7, 3, True),
    "7cols_float": _tied_case(3, 40, 7, 3, False),
    "20cols": _tied_case(4, 40, 20, 4, True),
    "33cols": _tied_case(5, 20, 33, 5, False),
}


def _tie_free_case(seed: int, n_rows: int, n_cols: int):
    """Distinct scores in every row: one ordering only."""
    rng = np.random.default_rng(seed)
    rel = rng.choice([0, 1, 2, 3], size=(n_rows, n_cols), p=[0.5, 0.25, 0.15, 0.1]).astype(float)
    scores = np.stack([rng.permutation(n_cols) for _ in range(n_rows)]).astype(float)
    scores = scores + rng.uniform(0.0, 0.1, size=scores.shape)  # non-integer, still distinct
    return rel, scores


def _cutoffs(n_cols: int):
    """k in {1, 3, 5, n, n + 2, None}, deduplicated, order kept."""
    ks = []
    for k in (1, 3, 5, n_cols, n_cols + 2, None):
        if k not in ks:
            ks.append(k)
    return ks


def _names(k):
    if k is None:
        return "nDCG", "DCG"
    return f"nDCG@{k}", f"DCG@{k}"


# ------------------------------------------------------------------ sklearn per row


_SK_CACHE: dict = {}


def _sk_rows(fn, rel, scores, k, ignore_ties=False):
    """sklearn's value for each row, calling the public function on one row at a time (cached)."""
    key = (fn.__name__, rel.shape, rel.tobytes(), scores.dtype.str, scores.tobytes(), k, ignore_ties)
    if key not in _SK_CACHE:
        _SK_CACHE[key] = np.array(
            [
                float(fn(rel[i : i + 1], scores[i : i + 1], k=k, ignore_ties=ignore_ties))
                for i in range(rel.shape[0])
            ]
        )
    return _SK_CACHE[key].copy()


def _rows_with_ties(scores):
    return np.array([len(np.unique(row)) < len(row) for row in scores])


def _column(frame, name, n_rows):
    """A per-query column as a float array, after checking the index is 0..n-1."""
    assert list(frame.index) == list(range(n_rows)), "per_query must be indexed by row number"
    return frame[name].to_numpy(dtype=float)


def _measures_for(n_cols):
    measures = []
    for k in _cutoffs(n_cols):
        measures.extend(_names(k))
    return measures


# -------------------------------------------------------------------------- tests


def test_cases_really_have_ties():
    # Guard against the generator drifting into tie-free data (the tests would then prove little).
    for rel, scores in CASES.values():
        assert _rows_with_ties(scores).mean() > 0.5
        assert (rel > 0).any() and (rel == 0).any()


@pytest.mark.parametrize("case", sorted(CASES))
def test_tie_averaged_matches_sklearn_per_row(case):
    rel, scores = CASES[case]
    n_rows, n_cols = rel.shape
    measures = _measures_for(n_cols)
    res = tierank.evaluate_matrix(rel, scores=scores, measures=measures)  # default ties="expected"
    assert list(res.per_query.columns) == measures
    for k in _cutoffs(n_cols):
        for name, sk_score in zip(_names(k), (ndcg_score, dcg_score)):
            np.testing.assert_allclose(
                _column(res.per_query, name, n_rows),
                _sk_rows(sk_score, rel, scores, k),
                rtol=0,
                atol=ATOL,
                err_msg=f"{case} {name}",
            )


@pytest.mark.parametrize("case", sorted(CASES))
def test_explicit_expected_mode_same_as_default(case):
    rel, scores = CASES[case]
    measures = _measures_for(rel.shape[1])
    a = tierank.evaluate_matrix(rel, scores=scores, measures=measures)
    b = tierank.evaluate_matrix(rel, scores=scores, measures=measures, ties="expected")
    np.testing.assert_allclose(
        a.per_query[measures].to_numpy(float), b.per_query[measures].to_numpy(float), rtol=0, atol=0
    )


@pytest.mark.parametrize("case", sorted(CASES))
def test_mean_matches_sklearn_matrix_average(case):
    # sklearn's matrix-level score is the plain average over rows, as tierank's .mean.
    rel, scores = CASES[case]
    measures = _measures_for(rel.shape[1])
    res = tierank.evaluate_matrix(rel, scores=scores, measures=measures)
    assert set(res.mean) == set(measures)
    for k in _cutoffs(rel.shape[1]):
        ndcg_name, dcg_name = _names(k)
        assert abs(res.mean[ndcg_name] - ndcg_score(rel, scores, k=k)) <= ATOL, ndcg_name
        assert abs(res.mean[dcg_name] - dcg_score(rel, scores, k=k)) <= ATOL, dcg_name


def test_full_list_cutoff_equals_no_cutoff():
    rel, scores = CASES["20cols"]
    n = rel.shape[1]
    res = tierank.evaluate_matrix(
        rel, scores=scores, measures=["nDCG", f"nDCG@{n}", f"nDCG@{n + 7}", "DCG", f"DCG@{n}"]
    )
    pq = res.per_query
    np.testing.assert_allclose(pq[f"nDCG@{n}"], pq["nDCG"], rtol=0, atol=ATOL)
    np.testing.assert_allclose(pq[f"nDCG@{n + 7}"], pq["nDCG"], rtol=0, atol=ATOL)
    np.testing.assert_allclose(pq[f"DCG@{n}"], pq["DCG"], rtol=0, atol=ATOL)
    np.testing.assert_allclose(pq["nDCG"], _sk_rows(ndcg_score, rel, scores, None), rtol=0, atol=ATOL)


@pytest.mark.parametrize("ties", TIE_MODES_ALL)
@pytest.mark.parametrize("n_cols", [2, 6, 25])
def test_tie_free_rows_every_mode_matches_sklearn_ignore_ties(ties, n_cols):
    rel, scores = _tie_free_case(10 + n_cols, 25, n_cols)
    assert not _rows_with_ties(scores).any()
    measures = _measures_for(n_cols)
    res = tierank.evaluate_matrix(rel, scores=scores, measures=measures, ties=ties)
    for k in _cutoffs(n_cols):
        ndcg_name, dcg_name = _names(k)
        for name, fn in ((ndcg_name, ndcg_score), (dcg_name, dcg_score)):
            got = _column(res.per_query, name, rel.shape[0])
            np.testing.assert_allclose(
                got, _sk_rows(fn, rel, scores, k, ignore_ties=True), rtol=0, atol=ATOL, err_msg=name
            )
            # Without ties the tie-averaged value is the same number.
            np.testing.assert_allclose(got, _sk_rows(fn, rel, scores, k), rtol=0, atol=ATOL, err_msg=name)


@pytest.mark.parametrize("case", ["7cols", "20cols", "33cols"])
def test_bounds_are_grade_sorted_orderings_scored_by_sklearn(case):
    """Upper / lower = ties sorted by grade descending / ascending (tie_math §2), scored by sklearn.

    Breaking every tie by grade gives a score matrix whose remaining ties hold equal
    grades only, so sklearn's tie averaging is exact for that one ordering.
    """
    rel, scores = CASES[case]
    n_rows, n_cols = rel.shape
    order_keys = np.unique(scores)
    rank_of = np.searchsorted(order_keys, scores).astype(float)  # 0..m-1, same ties as scores
    best_first = rank_of * 10.0 + rel  # within a tie, higher grade first
    worst_first = rank_of * 10.0 + (5.0 - rel)  # within a tie, lower grade first
    measures = _measures_for(n_cols)
    res = tierank.evaluate_matrix(rel, scores=scores, measures=measures, bounds=True)
    opt = tierank.evaluate_matrix(rel, scores=scores, measures=measures, ties="optimistic")
    pes = tierank.evaluate_matrix(rel, scores=scores, measures=measures, ties="pessimistic")
    for k in _cutoffs(n_cols):
        for name, fn in zip(_names(k), (ndcg_score, dcg_score)):
            upper = _sk_rows(fn, rel, best_first, k)
            lower = _sk_rows(fn, rel, worst_first, k)
            np.testing.assert_allclose(_column(res.upper, name, n_rows), upper, rtol=0, atol=ATOL, err_msg=name)
            np.testing.assert_allclose(_column(res.lower, name, n_rows), lower, rtol=0, atol=ATOL, err_msg=name)
            np.testing.assert_allclose(_column(opt.per_query, name, n_rows), upper, rtol=0, atol=ATOL, err_msg=name)
            np.testing.assert_allclose(_column(pes.per_query, name, n_rows), lower, rtol=0, atol=ATOL, err_msg=name)
            # per_query with bounds=True is still the default (tie-averaged) value
            np.testing.assert_allclose(
                _column(res.per_query, name, n_rows), _sk_rows(fn, rel, scores, k), rtol=0, atol=ATOL, err_msg=name
            )


@pytest.mark.parametrize("ties", ["expected", "trec_eval", "input"])
@pytest.mark.parametrize("case", ["3cols", "7cols_float", "20cols"])
def test_sklearn_orderings_lie_within_bounds(case, ties):
    # sklearn ignore_ties=True scores *some* ordering consistent with the scores (its argsort is
    # unstable), and ignore_ties=False the mean over orderings: both must lie within the bounds.
    rel, scores = CASES[case]
    n_rows, n_cols = rel.shape
    measures = _measures_for(n_cols)
    res = tierank.evaluate_matrix(rel, scores=scores, measures=measures, ties=ties, bounds=True)
    for k in _cutoffs(n_cols):
        for name, fn in zip(_names(k), (ndcg_score, dcg_score)):
            lo = _column(res.lower, name, n_rows)
            hi = _column(res.upper, name, n_rows)
            mine = _column(res.per_query, name, n_rows)
            for value in (_sk_rows(fn, rel, scores, k, ignore_ties=True), _sk_rows(fn, rel, scores, k), mine):
                assert np.all(lo <= value + ATOL), name
                assert np.all(value <= hi + ATOL), name
            # rows without ties: the bounds collapse onto the single value
            free = ~_rows_with_ties(scores)
            np.testing.assert_allclose(lo[free], hi[free], rtol=0, atol=ATOL)
    # row 1 is one tie: with varied grades, DCG@1 spans (max grade - min grade) >= 1
    if (rel[1] != rel[1][0]).any():
        res1 = tierank.evaluate_matrix(rel, scores=scores, measures=["DCG@1"], ties=ties, bounds=True)
        assert res1.upper["DCG@1"].iloc[1] - res1.lower["DCG@1"].iloc[1] > 0.5


@pytest.mark.parametrize("case", ["7cols", "33cols"])
def test_distances_are_negated_scores(case):
    rel, scores = CASES[case]
    n_rows, n_cols = rel.shape
    measures = _measures_for(n_cols)
    res = tierank.evaluate_matrix(rel, distances=-scores, measures=measures)
    for k in _cutoffs(n_cols):
        for name, fn in zip(_names(k), (ndcg_score, dcg_score)):
            np.testing.assert_allclose(
                _column(res.per_query, name, n_rows), _sk_rows(fn, rel, scores, k), rtol=0, atol=ATOL, err_msg=name
            )


def test_integer_and_float_inputs_agree():
    rel, scores = CASES["20cols"]
    measures = _measures_for(rel.shape[1])
    a = tierank.evaluate_matrix(rel.astype(np.int64), scores=scores.astype(np.int64), measures=measures)
    b = tierank.evaluate_matrix(rel, scores=scores.astype(float), measures=measures)
    np.testing.assert_allclose(
        a.per_query[measures].to_numpy(float), b.per_query[measures].to_numpy(float), rtol=0, atol=ATOL
    )
    for k in (3, None):
        name = _names(k)[0]
        np.testing.assert_allclose(
            a.per_query[name].to_numpy(float), _sk_rows(ndcg_score, rel, scores, k), rtol=0, atol=ATOL
        )
