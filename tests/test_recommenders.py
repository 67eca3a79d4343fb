"""tierank.recommenders: Microsoft Recommenders' ``python_evaluation`` conventions, exact when predictions tie.

Expected values come from a brute force written here, independent of tierank: for each user every order of
the tied predictions is enumerated, the metric computed by a plain-Python transcription of Recommenders'
formula (which users count, every row of rating_true relevant, P@k over k, map over R, map_at_k over
min(R, k), nDCG with binary / raw / exp gains and an ideal from the k largest gains), and the orders
averaged (min / max for the bounds); the stable row order (pandas' sort, Recommenders' tie-break) gives the
``ties="input"`` value. Small cases are also written out by hand.

A recommender toolkit's own evaluation runs here too: Cornac's ``ranking_eval`` and its metric objects, on a
small synthetic dataset made in the test, give tierank's numbers without ties, and under a popularity
model's ties the value of the order numpy's ``argpartition`` / ``argsort`` left (within tierank's exact range).
"""

from __future__ import annotations

import inspect
import itertools
import math
import re

import cornac
import numpy as np
import pandas as pd
import polars as pl
import pyarrow as pa
import pytest
from cornac.eval_methods import BaseMethod, ranking_eval
from cornac.metrics import MAP, MRR, NDCG, HitRatio, Precision, Recall
from cornac.models import MostPop, Recommender
from hypothesis import assume, given, settings
from hypothesis import strategies as st

from tierank import InputError
from tierank import recommenders as rec

METRICS = ("precision_at_k", "recall_at_k", "map", "map_at_k", "hit_ratio_at_k", "mrr", "ndcg_at_k")


# ------------------------------------------------------------------------------------- brute force


def _per_order(metric: str, order: list, relevant: dict, k: int, score_type: str) -> float | None:
    """The metric of one user for one complete order of their predicted items (Recommenders' formula);
    None when the user is left out (nDCG with ideal DCG 0)."""
    top = order[:k]
    hits = [j for j, item in enumerate(top, start=1) if item in relevant]
    r = len(relevant)
    if metric == "precision_at_k":
        return len(hits) / k
    if metric == "recall_at_k":
        return len(hits) / r
    if metric in ("map", "map_at_k"):
        total = sum(n / j for n, j in enumerate(hits, start=1))
        return total / (r if metric == "map" else min(r, k))
    if metric == "hit_ratio_at_k":
        return 1.0 if hits else 0.0
    if metric == "mrr":
        return 1.0 / hits[0] if hits else 0.0
    assert metric == "ndcg_at_k"

    def gain(rating: float) -> float:
        return {"binary": 1.0, "raw": rating, "exp": 2.0 ** rating - 1.0}[score_type]

    dcg = sum(gain(relevant[top[j - 1]]) / math.log(1 + j) for j in hits)
    ideal = sorted((gain(v) for v in relevant.values()), reverse=True)[:k]
    idcg = sum(g / math.log(1 + j) for j, g in enumerate(ideal, start=1))
    return None if idcg == 0 else dcg / idcg


def _orders(rows: list) -> list[list]:
    """Every order of a user's (item, prediction) rows that sorts the predictions descending."""
    groups = [[item for item, _ in grp] for _, grp in itertools.groupby(sorted(rows, key=lambda r: -r[1]),
                                                                        key=lambda r: r[1])]
    return [sum(map(list, combo), []) for combo in itertools.product(*(itertools.permutations(g) for g in groups))]


def brute(metric: str, true_rows: list, pred_rows: list, k: int, score_type: str = "binary") -> dict:
    """``{"expected", "lower", "upper", "input"}``: the metric averaged over users, by enumeration.

    true_rows: (user, item, rating); pred_rows: (user, item, prediction), in row order."""
    relevant: dict = {}
    for u, i, rating in true_rows:
        relevant.setdefault(u, {})[i] = rating
    preds: dict = {}
    for u, i, p in pred_rows:
        preds.setdefault(u, []).append((i, p))
    if metric == "ndcg_at_k":
        users = list(relevant)                       # every user of rating_true
    else:
        users = [u for u in relevant if u in preds]  # the users of both tables
    per_user = {"expected": [], "lower": [], "upper": [], "input": []}
    for u in users:
        rows = preds.get(u, [])
        stable = [item for item, _ in sorted(rows, key=lambda r: -r[1])]   # Python's sort is stable
        values = [_per_order(metric, order, relevant[u], k, score_type) for order in _orders(rows)]
        if values[0] is None:   # nDCG, ideal DCG 0: the same for every order
            continue
        per_user["expected"].append(math.fsum(values) / len(values))
        per_user["lower"].append(min(values))
        per_user["upper"].append(max(values))
        per_user["input"].append(_per_order(metric, stable, relevant[u], k, score_type))
    return {key: (math.fsum(v) / len(v) if v else None) for key, v in per_user.items()}


def _frames(true_rows: list, pred_rows: list) -> tuple[pd.DataFrame, pd.DataFrame]:
    true = pd.DataFrame(true_rows, columns=["userID", "itemID", "rating"])
    pred = pd.DataFrame(pred_rows, columns=["userID", "itemID", "prediction"])
    return true, pred


def _which(which: str) -> tuple[str, str]:
    """("ndcg_at_k", "raw") for "ndcg_raw"; (metric, "binary") otherwise."""
    return ("ndcg_at_k", which[5:]) if which in ("ndcg_raw", "ndcg_exp") else (which, "binary")


def _call(metric: str, true: object, pred: object, k: int, score_type: str = "binary", **kw: object) -> object:
    extra = {"score_type": score_type} if metric == "ndcg_at_k" else {}
    return getattr(rec, metric)(true, pred, k=k, **extra, **kw)


@st.composite
def tables(draw: st.DrawFn, max_tie: int = 5, tied: bool = True) -> tuple[list, list, int]:
    """Small interaction tables: a few users and items, predictions from three values (many ties) or all
    distinct, users in one table only, ratings 0..3; k from 1 to beyond the lists."""
    n_users, n_items = draw(st.integers(1, 4)), draw(st.integers(1, max_tie))
    string_items = draw(st.booleans())
    pairs = [(u, f"i{i}" if string_items else i) for u in range(n_users) for i in range(n_items)]
    true_pairs = draw(st.lists(st.sampled_from(pairs), unique=True, min_size=1, max_size=len(pairs)))
    pred_pairs = draw(st.lists(st.sampled_from(pairs), unique=True, min_size=1, max_size=len(pairs)))
    assume({u for u, _ in true_pairs} & {u for u, _ in pred_pairs})
    ratings = draw(st.lists(st.integers(0, 3), min_size=len(true_pairs), max_size=len(true_pairs)))
    if tied:
        preds = draw(st.lists(st.sampled_from([0.0, 0.5, 1.0]), min_size=len(pred_pairs), max_size=len(pred_pairs)))
    else:
        preds = draw(st.lists(st.floats(-1e3, 1e3), min_size=len(pred_pairs), max_size=len(pred_pairs),
                              unique=True))
    k = draw(st.integers(1, n_items + 2))
    true_rows = [(u, i, float(r)) for (u, i), r in zip(true_pairs, ratings)]
    pred_rows = [(u, i, p) for (u, i), p in zip(pred_pairs, preds)]
    return true_rows, pred_rows, k


# ---------------------------------------------------------------------------- against the brute force


@settings(max_examples=150, deadline=None)
@given(tables(), st.sampled_from(METRICS + ("ndcg_raw", "ndcg_exp")))
def test_tied_predictions_equal_the_enumeration(case, which):
    true_rows, pred_rows, k = case
    metric, score_type = _which(which)
    want = brute(metric, true_rows, pred_rows, k, score_type)
    true, pred = _frames(true_rows, pred_rows)
    if want["expected"] is None:   # every user's ideal DCG is 0
        with pytest.raises(InputError, match="every user's ideal DCG is 0"):
            _call(metric, true, pred, k, score_type)
        return
    got = _call(metric, true, pred, k, score_type, bounds=True)
    assert isinstance(got, rec.Bounds)
    assert got.value == pytest.approx(want["expected"], abs=1e-12)
    assert got.lower == pytest.approx(want["lower"], abs=1e-12)
    assert got.upper == pytest.approx(want["upper"], abs=1e-12)
    for mode in ("lower", "upper", "input"):
        value = _call(metric, true, pred, k, score_type, ties=mode)
        assert isinstance(value, float)
        assert value == pytest.approx(want[mode], abs=1e-12), mode


@settings(max_examples=100, deadline=None)
@given(tables(max_tie=6, tied=False), st.sampled_from(METRICS + ("ndcg_raw", "ndcg_exp")),
       st.sampled_from(["expected", "trec_eval", "random", "optimistic", "pessimistic"]))
def test_untied_predictions_equal_the_plain_formula(case, which, ties):
    true_rows, pred_rows, k = case
    metric, score_type = _which(which)
    want = brute(metric, true_rows, pred_rows, k, score_type)
    assert want["expected"] == want["input"] == want["lower"] == want["upper"]   # one order per user
    true, pred = _frames(true_rows, pred_rows)
    if want["expected"] is None:
        with pytest.raises(InputError, match="ideal DCG is 0"):
            _call(metric, true, pred, k, score_type, ties=ties)
        return
    assert _call(metric, true, pred, k, score_type, ties=ties) == pytest.approx(want["expected"], abs=1e-12)


@settings(max_examples=60, deadline=None)
@given(tables(), st.sampled_from(METRICS + ("ndcg_raw",)), st.randoms(use_true_random=False))
def test_row_order_changes_only_the_input_tie_break(case, which, random):
    # the bug class: a number that depends on the order of the rows. Shuffled tables give the same tie-aware
    # value and bounds; ties="input" (Recommenders' sort) follows the rows, always within the bounds.
    true_rows, pred_rows, k = case
    metric, score_type = _which(which)
    if brute(metric, true_rows, pred_rows, k, score_type)["expected"] is None:
        return
    true, pred = _frames(true_rows, pred_rows)
    shuffled_rows = list(pred_rows)
    random.shuffle(shuffled_rows)
    true2, pred2 = _frames(sorted(true_rows, key=str), shuffled_rows)
    a = _call(metric, true, pred, k, score_type, bounds=True)
    b = _call(metric, true2, pred2, k, score_type, bounds=True)
    assert a == pytest.approx(b, abs=1e-12)
    replay = _call(metric, true2, pred2, k, score_type, ties="input")
    assert replay == pytest.approx(brute(metric, true_rows, shuffled_rows, k, score_type)["input"], abs=1e-12)
    assert a.lower - 1e-12 <= replay <= a.upper + 1e-12


@settings(max_examples=60, deadline=None)
@given(tables(), st.sampled_from(METRICS), st.data())
def test_duplicate_pairs_are_an_error_naming_the_rows(case, metric, data):
    true_rows, pred_rows, k = case
    which = data.draw(st.sampled_from(["rating_true", "rating_pred"]))
    rows = true_rows if which == "rating_true" else pred_rows
    j = data.draw(st.integers(0, len(rows) - 1))
    at = data.draw(st.integers(j + 1, len(rows)))
    rows.insert(at, rows[j])   # row `at` repeats row j's (user, item)
    true, pred = _frames(true_rows, pred_rows)
    u, i = rows[j][:2]
    with pytest.raises(InputError, match=re.escape(f"{which} lists user {u!r}, item {i!r} twice (rows {j} and {at})")):
        _call(metric, true, pred, k)


# ------------------------------------------------------------------------------------ written out


def test_worked_example_by_hand():
    # user 1: a 0.9 | b, c tie at 0.5 | d 0.1; relevant: c.   user 2: a, b, c tie at 0.7 | d; relevant: a, d.
    # user 3 has no predictions; user 4 nothing relevant (not in rating_true).
    true = pd.DataFrame({"userID": [1, 2, 2, 3], "itemID": ["c", "a", "d", "a"], "rating": [1, 2, 1, 3]})
    pred = pd.DataFrame({"userID": [1, 1, 1, 1, 2, 2, 2, 2, 4],
                         "itemID": ["a", "b", "c", "d", "a", "b", "c", "d", "a"],
                         "prediction": [0.9, 0.5, 0.5, 0.1, 0.7, 0.7, 0.7, 0.2, 1.0]})
    # HR@2: user 1 hits when c is second (1/2); user 2 when a is among the first two of three (2/3)
    assert rec.hit_ratio_at_k(true, pred, k=2) == pytest.approx((1 / 2 + 2 / 3) / 2)
    assert rec.hit_ratio_at_k(true, pred, k=2, ties="input") == 0.5   # b before c; a first
    # P@2: user 1 1/2 * 1/2; user 2 (2/3) / 2
    assert rec.precision_at_k(true, pred, k=2) == pytest.approx((1 / 4 + 1 / 3) / 2)
    # MRR@10: user 1 c at 2 or 3 -> (1/2 + 1/3) / 2; user 2 a at 1, 2, 3 -> (1 + 1/2 + 1/3) / 3
    assert rec.mrr(true, pred) == pytest.approx(((1 / 2 + 1 / 3) / 2 + (1 + 1 / 2 + 1 / 3) / 3) / 2)
    # nDCG@2 (binary) over users 1, 2 and 3 (3 has no predictions: 0); ideal with R=1: 1, with R=2: 1 + 1/log2(3)
    d2 = 1 / math.log2(3)
    user1 = (d2 / 2) / 1                  # c second half of the time
    user2 = (1 / 3 + d2 / 3) / (1 + d2)   # a first 1/3, second 1/3
    assert rec.ndcg_at_k(true, pred, k=2) == pytest.approx((user1 + user2 + 0) / 3)
    assert rec.ndcg_at_k(true, pred, k=2, ties="input") == pytest.approx((0 + 1 / (1 + d2) + 0) / 3)
    # map (over R) and map_at_k (over min(R, k)) at k=1: user 2's a first 1/3 of the time
    assert rec.map(true, pred, k=1) == pytest.approx((0 + (1 / 3) / 2) / 2)
    assert rec.map_at_k(true, pred, k=1) == pytest.approx((0 + (1 / 3) / 1) / 2)
    assert rec.recall_at_k(true, pred, k=3) == pytest.approx((1 + (1 / 2)) / 2)


def test_k_one_and_k_beyond_the_lists():
    true = pd.DataFrame({"userID": [1, 1], "itemID": [1, 2], "rating": [1, 1]})
    pred = pd.DataFrame({"userID": [1, 1, 1], "itemID": [1, 2, 3], "prediction": [1.0, 1.0, 1.0]})
    assert rec.precision_at_k(true, pred, k=1) == pytest.approx(2 / 3)
    assert rec.precision_at_k(true, pred, k=100) == pytest.approx(2 / 100)   # divided by k, as Recommenders
    assert rec.recall_at_k(true, pred, k=100) == 1.0
    d2 = 1 / math.log2(3)   # the relevant pair at ranks (1, 2), (1, 3) or (2, 3), a third of the time each
    assert rec.ndcg_at_k(true, pred, k=100) == pytest.approx(((1 + d2) + (1 + 1 / 2) + (d2 + 1 / 2)) / 3 / (1 + d2))
    assert rec.ndcg_at_k(true, pred, k=1) == pytest.approx(2 / 3)
    # map@k: precision at each hit / R; 3 orders of the relevant pair among 3: (1,2) (1,3) (2,3) equally likely
    ap = ((1 + 1) + (1 + 2 / 3) + (1 / 2 + 2 / 3)) / 3 / 2
    assert rec.map(true, pred, k=100) == pytest.approx(ap)
    assert rec.map_at_k(true, pred, k=100) == pytest.approx(ap)   # min(R, k) = R
    assert rec.map_at_k(true, pred, k=1) == pytest.approx(2 / 3)  # min(R, 1) = 1


def test_discount_base_does_not_change_ndcg():
    true = pd.DataFrame({"userID": [1, 1, 2], "itemID": [1, 2, 3], "rating": [3, 1, 2]})
    pred = pd.DataFrame({"userID": [1, 1, 1, 2, 2], "itemID": [1, 2, 3, 3, 4], "prediction": [1, 2, 2, 0, 0]})
    for score_type in ("binary", "raw", "exp"):
        a = rec.ndcg_at_k(true, pred, k=2, score_type=score_type, discfun_type="loge", bounds=True)
        b = rec.ndcg_at_k(true, pred, k=2, score_type=score_type, discfun_type="log2", bounds=True)
        assert a == pytest.approx(b, abs=1e-15)


def test_which_users_count():
    # user 1 in both tables (a hit), user 2 in rating_true only, user 3 in rating_pred only
    true = pd.DataFrame({"userID": [1, 2], "itemID": [1, 1], "rating": [2, 2]})
    pred = pd.DataFrame({"userID": [1, 3], "itemID": [1, 1], "prediction": [0.5, 0.5]})
    for metric in ("precision_at_k", "recall_at_k", "map", "map_at_k", "hit_ratio_at_k", "mrr"):
        assert getattr(rec, metric)(true, pred, k=1) == 1.0, metric   # user 1 only
    assert rec.ndcg_at_k(true, pred, k=1) == 0.5                      # users 1 and 2 (2 scores 0)
    # score_type="raw": a user whose ratings are all 0 is left out; so is one absent from rating_pred
    true0 = pd.DataFrame({"userID": [1, 2, 4], "itemID": [1, 1, 2], "rating": [2, 0, 0]})
    pred0 = pd.DataFrame({"userID": [1, 4], "itemID": [1, 2], "prediction": [0.5, 0.5]})
    assert rec.ndcg_at_k(true0, pred0, k=1, score_type="raw") == 1.0
    assert rec.ndcg_at_k(true0, pred0, k=1) == pytest.approx(2 / 3)   # binary: every row relevant, gain 1
    # every row of rating_true is relevant, whatever its rating (0 and negative included)
    neg = true.assign(rating=[-1, 0])
    assert rec.precision_at_k(neg, pred, k=1) == 1.0
    assert rec.ndcg_at_k(neg, pred, k=1) == 0.5


def test_inputs_pandas_polars_arrow_and_column_names():
    true = pd.DataFrame({"u": ["x", "x", "y"], "i": [1, 2, 1], "r": [1.0, 2.0, 3.0]})
    pred = pd.DataFrame({"u": ["x", "x", "y", "y"], "i": [1, 3, 1, 2], "s": [0.5, 0.5, 1, 1]})
    names = {"col_user": "u", "col_item": "i", "col_prediction": "s"}
    for metric in METRICS:
        kw = dict(names, k=1, bounds=True)
        if metric == "ndcg_at_k":
            kw.update(col_rating="r", score_type="raw")
        want = getattr(rec, metric)(true, pred, **kw)
        for to in (pl.from_pandas, pa.Table.from_pandas):
            assert getattr(rec, metric)(to(true), to(pred), **kw) == want, (metric, to)
    # one keyword dict serves every function (col_rating and threshold accepted everywhere, as Recommenders)
    shared = dict(col_user="u", col_item="i", col_rating="r", col_prediction="s", relevancy_method="top_k", k=1,
                  threshold=10)
    assert [getattr(rec, m)(true, pred, **shared) for m in METRICS] == \
        [getattr(rec, m)(true, pred, **{**names, "k": 1}) for m in METRICS]


def test_signatures_follow_recommenders():
    # the positional parameters of recommenders.evaluation.python_evaluation (1.2.1), in their order
    plain = ["rating_true", "rating_pred", "col_user", "col_item", "col_prediction", "relevancy_method", "k",
             "threshold"]
    ndcg = ["rating_true", "rating_pred", "col_user", "col_item", "col_rating", "col_prediction",
            "relevancy_method", "k", "threshold", "score_type", "discfun_type"]
    defaults = {"col_user": "userID", "col_item": "itemID", "col_rating": "rating", "col_prediction": "prediction",
                "relevancy_method": "top_k", "k": 10, "threshold": 10, "score_type": "binary",
                "discfun_type": "loge"}
    for metric in METRICS + ("r_precision_at_k",):
        params = inspect.signature(getattr(rec, metric)).parameters.values()
        positional = [p.name for p in params if p.kind is p.POSITIONAL_OR_KEYWORD]
        assert positional == (ndcg if metric == "ndcg_at_k" else plain), metric
        assert {p.name: p.default for p in params if p.name in defaults} == \
            {n: defaults[n] for n in positional + ["col_rating"] if n in defaults}, metric
        keyword_only = [p.name for p in params if p.kind is p.KEYWORD_ONLY]
        assert {"ties", "bounds", "seed"} <= set(keyword_only), metric


# ------------------------------------------------------------------------------------------ errors


def _tp():
    true = pd.DataFrame({"userID": [1, 2], "itemID": [1, 2], "rating": [1.0, 2.0]})
    pred = pd.DataFrame({"userID": [1, 1, 2], "itemID": [1, 2, 2], "prediction": [0.5, 0.4, 0.3]})
    return true, pred


@pytest.mark.parametrize("metric", METRICS)
def test_errors_are_one_line_and_say_where(metric):
    true, pred = _tp()
    f = getattr(rec, metric)
    cases = [
        (lambda: f(true, pred.drop(columns="prediction")),
         "rating_pred has no column 'prediction' (col_prediction='prediction'); its columns: 'userID', 'itemID'"),
        (lambda: f(true.rename(columns={"userID": "user"}), pred), "rating_true has no column 'userID' (col_user="),
        (lambda: f(true, pred, relevancy_method="by_threshold"), "relevancy_method='by_threshold' is not supported"),
        (lambda: f(true, pred, relevancy_method=None), "relevancy_method=None is not supported"),
        (lambda: f(true, pred, k=0), "k must be a positive integer, got 0"),
        (lambda: f(true, pred, k=2.0), "k must be a positive integer, got 2.0"),
        (lambda: f(true, pred, ties="first"), "ties='first' is not a tie mode"),
        (lambda: f(true, pred, bounds="yes"), "bounds must be True or False"),
        (lambda: f(true, pred.assign(prediction=[0.5, np.nan, 0.3])),
         "rating_pred's 'prediction' is missing (NaN) in row 1 (user 1, item 2); give every row a number"),
        (lambda: f(true, pred.assign(prediction=["a", "b", "c"])),
         "rating_pred's 'prediction' column must hold numbers"),
        (lambda: f(true, pred.assign(userID=[1, None, 2])),
         "rating_pred's 'userID' column has a missing user id (row 1)"),
        (lambda: f(true.assign(itemID=["1", "2"]), pred),
         "'itemID' holds strings (str) in rating_true but integers (int64) in rating_pred, so no id would match"),
        (lambda: f(true, pred.assign(userID=[1, "a", 2])), "rating_pred: 'userID' column: a mix of types"),
        (lambda: f(true.assign(userID=[7, 8]), pred), "no user of rating_true is in rating_pred"),
        (lambda: f([(1, 1)], pred), "rating_true must be a pandas or polars DataFrame or a pyarrow Table, got list"),
    ]
    for call, message in cases:
        with pytest.raises(InputError, match=re.escape(message)) as err:
            call()
        assert "\n" not in str(err.value)
    with pytest.raises(TypeError):
        f(true, pred, tie="upper")   # a misspelt keyword is not swallowed


def test_ndcg_specific_errors():
    true, pred = _tp()
    with pytest.raises(InputError, match="score_type must be one of 'binary', 'raw', 'exp', got 'log'"):
        rec.ndcg_at_k(true, pred, score_type="log")
    with pytest.raises(InputError, match="discfun_type must be one of 'loge', 'log2', got 'log10'"):
        rec.ndcg_at_k(true, pred, discfun_type="log10")
    with pytest.raises(InputError, match=r"rating_true's 'rating' is -1.0 in row 1 \(user 2, item 2\): "
                                         "score_type='raw' would make its gain negative"):
        rec.ndcg_at_k(true.assign(rating=[1.0, -1.0]), pred, score_type="raw")
    with pytest.raises(InputError, match=r"rating_true's 'rating' is missing \(NaN\) in row 0"):
        rec.ndcg_at_k(true.assign(rating=[np.nan, 1.0]), pred, score_type="exp")
    with pytest.raises(InputError, match="rating_true has no column 'rating'"):
        rec.ndcg_at_k(true.drop(columns="rating"), pred, score_type="exp")
    assert rec.ndcg_at_k(true.drop(columns="rating"), pred) == rec.ndcg_at_k(true, pred)   # binary: not read
    with pytest.raises(InputError, match="every user's ideal DCG is 0"):
        rec.ndcg_at_k(true.assign(rating=[0, 0]), pred, score_type="raw")
    with pytest.raises(InputError, match=re.escape("ties='trec_eval' reads gains as trec_eval reads grades, as "
                                                   "integers, but row 1 of rating_true (user 2, item 2) has gain "
                                                   "2.5 under score_type='raw'")):
        rec.ndcg_at_k(true.assign(rating=[1.0, 2.5]), pred, score_type="raw", ties="trec_eval")
    assert rec.ndcg_at_k(true.assign(rating=[1.0, 2.5]), pred, score_type="raw", ties="input") == 1.0
    assert rec.ndcg_at_k(true, pred, score_type="exp", ties="trec_eval") == 1.0   # 2**2 - 1: whole
    with pytest.raises(InputError, match="its gain under score_type='exp' is not a finite number"):
        rec.ndcg_at_k(true.assign(rating=[1.0, 5000.0]), pred, score_type="exp")


def test_r_precision_at_k_raises_and_says_why():
    true, pred = _tp()
    with pytest.raises(InputError, match="r_precision_at_k is not computed: .* changes with the order of tied"):
        rec.r_precision_at_k(true, pred, k=1)


# ------------------------------------------------------------------------------------ inside Cornac


class FixedScores(Recommender):
    """A Cornac model whose scores are a given (users x items) matrix."""

    def __init__(self, scores: np.ndarray) -> None:
        super().__init__(name="FixedScores", trainable=True, verbose=False)
        self.scores = scores

    def fit(self, train_set, val_set=None):   # noqa: ANN001, ANN201 (Cornac's signature)
        Recommender.fit(self, train_set, val_set)
        return self

    def score(self, user_idx, item_idx=None):   # noqa: ANN001, ANN201
        return self.scores[user_idx] if item_idx is None else self.scores[user_idx, item_idx]


@pytest.fixture(scope="module")
def cornac_split() -> BaseMethod:
    """40 users x 30 items, 8 interactions each: 3 to test, 5 to train (Cornac's own split object)."""
    rng = np.random.default_rng(0)
    rows = []
    for u in range(40):
        for j, i in enumerate(rng.choice(30, size=8, replace=False)):
            rows.append((f"u{u}", f"i{i}", 1.0, j < 3))
    return BaseMethod.from_splits(train_data=[r[:3] for r in rows if not r[3]],
                                  test_data=[r[:3] for r in rows if r[3]], exclude_unknowns=True,
                                  rating_threshold=1.0, verbose=False)


def _cornac_tables(split: BaseMethod, model: Recommender, k: int) -> tuple[pd.DataFrame, pd.DataFrame]:
    """rating_true and rating_pred as Cornac's ranking_eval sees them: per test user, the test positives, and
    every item not seen in training (the positives included) with the model's score, in the order of
    ``model.rank`` (Cornac's own tie-break, so that ``ties="input"`` replays it)."""
    train, test = split.train_set, split.test_set
    true_rows, pred_rows = [], []
    for u in sorted(set(test.uir_tuple[0])):
        pos = [i for i in test.csr_matrix.getrow(u).indices if i < train.num_items]
        seen = set(train.csr_matrix.getrow(u).indices) - set(pos)
        candidates = np.array([i for i in range(train.num_items) if i not in seen])
        ranked, scores = model.rank(user_idx=u, item_indices=candidates, k=k)
        score_of = dict(zip(candidates.tolist(), scores.tolist()))
        true_rows += [(u, i) for i in pos]
        pred_rows += [(u, i, score_of[i]) for i in ranked.tolist()]
    return (pd.DataFrame(true_rows, columns=["userID", "itemID"]),
            pd.DataFrame(pred_rows, columns=["userID", "itemID", "prediction"]))


def _cornac_and_tierank(split: BaseMethod, model: Recommender, k: int = 5) -> list[tuple[str, float, object]]:
    """(name, Cornac's value, tierank's Bounds) for NDCG@k, Precision@k, Recall@k, HitRatio@k (one
    ranking_eval call, as Cornac users make it), MRR and MAP (whole lists: calls of their own)."""
    train, test = split.train_set, split.test_set
    at_k, _ = ranking_eval(model, [NDCG(k=k), Precision(k=k), Recall(k=k), HitRatio(k=k)], train, test)
    (mrr_value,), _ = ranking_eval(model, [MRR()], train, test)
    (map_value,), _ = ranking_eval(model, [MAP()], train, test)
    true, pred = _cornac_tables(split, model, k)
    true_all, pred_all = _cornac_tables(split, model, -1)
    everything = train.num_items   # a cutoff beyond every list: MRR and MAP of the whole ranking
    ours = [rec.ndcg_at_k(true, pred, k=k, bounds=True, ties="input"),
            rec.precision_at_k(true, pred, k=k, bounds=True, ties="input"),
            rec.recall_at_k(true, pred, k=k, bounds=True, ties="input"),
            rec.hit_ratio_at_k(true, pred, k=k, bounds=True, ties="input"),
            rec.mrr(true_all, pred_all, k=everything, bounds=True, ties="input"),
            rec.map(true_all, pred_all, k=everything, bounds=True, ties="input")]
    names = [f"NDCG@{k}", f"Precision@{k}", f"Recall@{k}", f"HitRatio@{k}", "MRR", "MAP"]
    return list(zip(names, [*at_k, mrr_value, map_value], ours))


def test_cornac_without_ties_gives_tierank_numbers(cornac_split):
    train = cornac_split.train_set
    model = FixedScores(np.random.default_rng(1).random((train.num_users, train.num_items))).fit(train)
    for name, theirs, ours in _cornac_and_tierank(cornac_split, model):
        assert ours.lower == ours.upper, name   # no tie
        assert theirs == pytest.approx(ours.value, abs=1e-12), name
        assert theirs == pytest.approx(ours.lower, abs=1e-12), name


def test_cornac_ties_give_the_order_numpy_left(cornac_split):
    # MostPop scores every item by its training count: ties everywhere. Cornac ranks with np.argpartition /
    # np.argsort, so its value is one order's: tierank's with that order as the row order (ties="input"),
    # inside the exact range; the tie-aware value differs.
    model = MostPop().fit(cornac_split.train_set)
    results = _cornac_and_tierank(cornac_split, model)
    widths = []
    for name, theirs, ours in results:
        if name == "MAP":
            continue   # Cornac's own tie convention (below)
        assert theirs == pytest.approx(ours.value, abs=1e-12), name
        assert ours.lower - 1e-12 <= theirs <= ours.upper + 1e-12, name
        widths.append(ours.upper - ours.lower)
    assert min(widths) > 0.01   # the ties matter for every metric here
    true, pred = _cornac_tables(cornac_split, model, 5)
    tie_aware = rec.precision_at_k(true, pred, k=5)
    cornac_p5 = results[1][1]
    assert abs(tie_aware - cornac_p5) > 1e-3


def test_cornac_map_ranks_a_tie_at_its_worst_place():
    # Cornac's MAP ranks tied items at the tie's last place (scipy rankdata "max"): two relevant items tied
    # at ranks 2-3 both count as rank 3 with 2 relevant at or above, 2/3 each. Every order of the tie gives
    # AP = (1/2 + 2/3) / 2 = 7/12: Cornac's value is no order's.
    theirs = MAP().compute(item_indices=np.array([0, 1, 2]), pd_scores=np.array([0.9, 0.5, 0.5]),
                           gt_pos=np.array([1, 2]))
    assert theirs == pytest.approx(2 / 3)
    true = pd.DataFrame({"userID": [0, 0], "itemID": [1, 2]})
    pred = pd.DataFrame({"userID": [0, 0, 0], "itemID": [0, 1, 2], "prediction": [0.9, 0.5, 0.5]})
    assert rec.map(true, pred, k=3, bounds=True) == pytest.approx((7 / 12, 7 / 12, 7 / 12))
    assert cornac.__version__ == "3.0.1"
