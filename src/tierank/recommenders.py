"""Recommender metrics on interaction tables, exact when predictions tie: Microsoft Recommenders'
``recommenders.evaluation.python_evaluation`` conventions, computed by :func:`tierank.evaluate`.

``precision_at_k``, ``recall_at_k``, ``ndcg_at_k``, ``map``, ``map_at_k`` take the arguments of the
functions of the same names in Recommenders (1.2: ``rating_true``, ``rating_pred``, ``col_user``,
``col_item``, ``col_rating``, ``col_prediction``, ``relevancy_method="top_k"``, ``k``, ``threshold``,
``score_type``, ``discfun_type``) and give their numbers on predictions without ties. ``hit_ratio_at_k``
(HR@k) and ``mrr`` (MRR@k), which ``python_evaluation`` lacks, follow the same conventions. Each also takes
tierank's keyword-only ``ties=`` (default ``"expected"``: the exact mean over every order of tied
predictions), ``bounds=`` and ``seed=``. The tables are pandas or polars DataFrames or pyarrow Tables.

The conventions (Recommenders')
-------------------------------
* **Relevant** means *present in rating_true*: every row of ``rating_true`` is a relevant item of its user,
  whatever its rating (0, negative or missing ratings included). Ratings are read only by ``ndcg_at_k`` with
  ``score_type="raw"`` (gain = rating) or ``"exp"`` (gain = 2**rating - 1); ``"binary"`` (the default) gives
  every relevant item gain 1.
* **The ranking** of a user is their rows of ``rating_pred``, by prediction, highest first; the top k are
  kept (``relevancy_method="top_k"``). Recommenders breaks ties by row order (pandas' stable sort):
  ``ties="input"`` reproduces it.
* **Which users count.** ``precision_at_k``, ``recall_at_k``, ``map``, ``map_at_k``, ``hit_ratio_at_k`` and
  ``mrr`` average over the users present in both tables (users of only one table are left out).
  ``ndcg_at_k`` averages over the users of ``rating_true``: one without predictions scores 0, and with
  ``score_type="raw"`` / ``"exp"`` one whose every gain is 0 (ideal DCG 0) is left out.
* **Formulas** per user, with hits = relevant items in the top k and R = the user's rows in rating_true:
  precision = hits / k (k even when the user has fewer predictions); recall = hits / R; nDCG@k =
  DCG@k / ideal DCG@k (the ideal from the user's k largest gains; any log base: ``discfun_type`` "loge" and
  "log2" give the same ratio); ``map`` = the sum of precision at each hit in the top k divided by R;
  ``map_at_k`` the same divided by min(R, k) (Spark's and Kaggle's MAP@k); ``hit_ratio_at_k`` = 1 if there
  is a hit, else 0; ``mrr`` = 1 / rank of the first hit in the top k, 0 without one.

How these differ from trec_eval's measures
------------------------------------------
trec_eval's ``P.k``, ``recall.k``, ``map_cut.k``, ``success.k`` and ``recip_rank`` are these formulas, but
relevance there is a grade >= 1 (here: any row of rating_true); its ``ndcg_cut.k`` uses the grades as gains
(here ``score_type="raw"``; the default ``"binary"`` ignores them) and its ``map`` has no cutoff (here
``map`` stops at k); ``map_at_k``'s min(R, k) denominator is not trec_eval's; trec_eval breaks ties by
document id, descending (``ties="trec_eval"`` does here), Recommenders by row order. trec_eval counts the
queries of the run and the qrels alike for every measure, where ``ndcg_at_k`` counts users without
predictions (as trec_eval ``-c``) and the other functions do not.

Where tierank differs from Recommenders
---------------------------------------
Same numbers on valid input without tied predictions; otherwise an :class:`~tierank.InputError` (one
line, naming the table, column and row) where Recommenders returns a number that depends on an accident:

* a (user, item) pair twice in a table (Recommenders' merges count it twice);
* a missing user or item id, a missing (NaN) or non-numeric prediction;
* no user in both tables (Recommenders returns 0.0);
* ``relevancy_method`` other than ``"top_k"``: ``"by_threshold"`` keeps the top ``threshold`` items but
  divides by k, and ``None`` reads a pre-ranked table, neither a tierank measure;
* ``ndcg_at_k`` with ``score_type="raw"`` / ``"exp"``: a missing or negative rating (negative gains), or
  every user's ideal DCG 0 (Recommenders: NaN or 0.0, depending on hits);
* ``r_precision_at_k``: Recommenders averages it over the users with a hit in their top min(R, k) only, a
  set that depends on the order of tied predictions, so no mean over orders is a tierank measure; it
  raises (use ``recall_at_k``, or :func:`tierank.evaluate` with ``"Rprec"``).

``col_rating`` and ``threshold`` are accepted by every function (as Recommenders' ``**_`` does, so one
keyword dict serves all) and unused except ``col_rating`` by ``ndcg_at_k`` with raw or exp scores; other
unknown keywords are a ``TypeError``, not silently ignored (a misspelt ``ties=`` would be). The value is a
Python float.

Examples
--------
User 1's relevant item ``"c"`` ties with ``"b"`` for the second place:

>>> import pandas as pd
>>> from tierank import recommenders as rec
>>> rating_true = pd.DataFrame({"userID": [1, 2], "itemID": ["c", "a"], "rating": [5, 4]})
>>> rating_pred = pd.DataFrame({"userID": [1, 1, 1, 2, 2], "itemID": ["a", "b", "c", "a", "b"],
...                             "prediction": [0.9, 0.5, 0.5, 0.8, 0.1]})
>>> rec.hit_ratio_at_k(rating_true, rating_pred, k=2)   # user 1: a hit half of the time; user 2: a hit
0.75
>>> rec.hit_ratio_at_k(rating_true, rating_pred, k=2, ties="input")   # b before c, as Recommenders sorts
0.5
>>> rec.hit_ratio_at_k(rating_true, rating_pred, k=2, bounds=True)
Bounds(value=0.75, lower=0.5, upper=1.0)
"""

from __future__ import annotations

import math
from typing import Any, NamedTuple

import numpy as np
import pandas as pd
import pyarrow as pa
import pyarrow.compute as pc

from .api import evaluate
from .engine.options import check_positive
from .data.columns import Columns, is_integer_ids, normalized
from .errors import InputError
from .ties.policy import check_mode

__all__ = ["precision_at_k", "recall_at_k", "ndcg_at_k", "map", "map_at_k", "hit_ratio_at_k", "mrr",
           "r_precision_at_k", "Bounds", "DEFAULT_USER_COL", "DEFAULT_ITEM_COL", "DEFAULT_RATING_COL",
           "DEFAULT_PREDICTION_COL", "DEFAULT_K", "DEFAULT_THRESHOLD"]

#: Recommenders' default column names and k (``recommenders.utils.constants``)
DEFAULT_USER_COL = "userID"
DEFAULT_ITEM_COL = "itemID"
DEFAULT_RATING_COL = "rating"
DEFAULT_PREDICTION_COL = "prediction"
DEFAULT_K = 10
DEFAULT_THRESHOLD = 10

_SCORE_TYPES = ("binary", "raw", "exp")
_DISCFUN_TYPES = ("loge", "log2")


class Bounds(NamedTuple):
    """What a metric returns with ``bounds=True``: its value under ``ties`` and the exact minimum and
    maximum over every order of the tied predictions (each user's extremes, averaged: users' ties are
    independent, so the averages are attained).

    Examples
    --------
    >>> value, lower, upper = Bounds(0.75, 0.5, 1.0)
    >>> upper - lower
    0.5
    """

    value: float
    lower: float
    upper: float


# ------------------------------------------------------------------------------------------ inputs


def _check_relevancy(relevancy_method: Any) -> None:
    if relevancy_method == "top_k":
        return
    if relevancy_method == "by_threshold":
        why = ("Recommenders' 'by_threshold' keeps the top `threshold` items of each user but still divides by "
               "k, which no tierank measure expresses; give k=threshold with 'top_k'")
    elif relevancy_method is None:
        why = ("None reads rating_pred as already ranked (its row order, not its predictions), so no tie is "
               "left to resolve; rank by the predictions with 'top_k' (ties='input' keeps the row order "
               "inside ties)")
    else:
        why = "Recommenders knows 'top_k', 'by_threshold' and None"
    raise InputError(f"relevancy_method={relevancy_method!r} is not supported: only 'top_k' (rank by "
                     f"prediction, keep the top k); {why}")


def _column(table: Any, frame: str, col: str, role: str) -> pd.Series:
    """Column ``col`` of a pandas / polars DataFrame or pyarrow Table, as a pandas Series."""
    if isinstance(table, pd.DataFrame):
        names = list(table.columns)
    elif isinstance(table, pa.Table):
        names = table.column_names
    elif type(table).__module__.split(".")[0] == "polars" and hasattr(table, "get_column"):
        names = list(table.columns)
    else:
        raise InputError(f"{frame} must be a pandas or polars DataFrame or a pyarrow Table, "
                         f"got {type(table).__name__}")
    count = names.count(col)
    if count != 1:
        problem = "no column" if not count else f"{count} columns named"
        raise InputError(f"{frame} has {problem} {col!r} ({role}={col!r}); its columns: "
                         + ", ".join(repr(c) for c in names))
    if isinstance(table, pd.DataFrame):
        return table[col]
    if isinstance(table, pa.Table):
        return table.column(col).to_pandas()
    return table.get_column(col).to_pandas()


def _check_ids(values: pd.Series, frame: str, col: str, what: str) -> None:
    nulls = values.isna().to_numpy()
    if nulls.any():
        raise InputError(f"{frame}'s {col!r} column has a missing {what} id (row {int(np.argmax(nulls))}); "
                         f"every row needs a {what}")


def _numbers(values: pd.Series, frame: str, col: str, users: pd.Series, items: pd.Series) -> np.ndarray:
    """The column as float64, or an InputError naming the first row that is not a number."""
    series = values
    if pd.api.types.is_bool_dtype(series.dtype) or not pd.api.types.is_numeric_dtype(series.dtype):
        raise InputError(f"{frame}'s {col!r} column must hold numbers, not {series.dtype} (row 0: "
                         f"{series.iloc[0]!r})" if len(series) else f"{frame}'s {col!r} column must hold numbers")
    out = series.to_numpy(dtype=np.float64, na_value=np.nan)
    bad = np.isnan(out)
    if bad.any():
        i = int(np.argmax(bad))
        raise InputError(f"{frame}'s {col!r} is missing (NaN) in row {i} (user {_at(users, i)!r}, item "
                         f"{_at(items, i)!r}); give every row a number")
    return out


def _at(values: pd.Series, i: int) -> Any:
    v = values.iloc[i]
    return v.item() if isinstance(v, np.generic) else v


def _check_pairs(users: pd.Series, items: pd.Series, frame: str) -> None:
    """An InputError at the first (user, item) pair listed twice."""
    pairs = pd.DataFrame({"u": users.to_numpy(), "i": items.to_numpy()})
    dup = pairs.duplicated().to_numpy()
    if not dup.any():
        return
    j = int(np.argmax(dup))
    same = (pairs["u"] == pairs["u"].iloc[j]).to_numpy() & (pairs["i"] == pairs["i"].iloc[j]).to_numpy()
    i = int(np.argmax(same))
    raise InputError(f"{frame} lists user {_at(users, j)!r}, item {_at(items, j)!r} twice (rows {i} and {j}); "
                     "give each (user, item) pair once (Recommenders' merges would count it twice)")


def _normalized(users: Any, items: Any, values: np.ndarray, frame: str, names: tuple[str, str, str],
                what: str) -> Columns:
    """tierank's id and value checks on the whole table (so that rows are numbered as the caller's)."""
    source = "run" if what == "score" else "qrels"
    try:
        return normalized(Columns(users, items, values, source, names=names), what)
    except InputError as err:
        message = err.message.replace(f"the {source}'s ", "").replace("query id", "user id")
        raise InputError(f"{frame}: {message.replace('document id', 'item id')}") from None


def _same_kinds(true: Columns, pred: Columns, col_user: str, col_item: str) -> None:
    for col, a, b, da, db in ((col_user, true.query, pred.query, true.dtypes[0], pred.dtypes[0]),
                              (col_item, true.doc, pred.doc, true.dtypes[1], pred.dtypes[1])):
        ka, kb = ("integers" if is_integer_ids(x) else "strings" for x in (a, b))
        if ka != kb and len(a) and len(b):
            raise InputError(f"{col!r} holds {ka} ({da}) in rating_true but {kb} ({db}) in rating_pred, so no id "
                             "would match (1 is not '1'); convert one side (Recommenders: ColumnTypeMismatchError)")


def _isin(ids: Any, keep: Any) -> np.ndarray:
    if is_integer_ids(ids):
        return np.isin(ids, np.unique(keep))
    return pc.is_in(ids, value_set=pc.unique(keep)).to_numpy(zero_copy_only=False)


def _take(values: Any, mask: np.ndarray) -> Any:
    if isinstance(values, np.ndarray):
        return values[mask]
    return values.filter(pa.array(mask))


def _table(cols: Columns, mask: np.ndarray, value_name: str) -> pa.Table:
    return pa.table({"query_id": _take(cols.query, mask), "doc_id": _take(cols.doc, mask),
                     value_name: _take(cols.value, mask)})


def _gains(ratings: np.ndarray, score_type: str, col_rating: str, users: Any, items: Any) -> np.ndarray:
    bad = ratings < 0
    if bad.any():
        i = int(np.argmax(bad))
        raise InputError(f"rating_true's {col_rating!r} is {float(ratings[i])!r} in row {i} (user {_at(users, i)!r}, "
                         f"item {_at(items, i)!r}): score_type={score_type!r} would make its gain negative, which no "
                         "tierank measure expresses; use score_type='binary' or ratings >= 0")
    with np.errstate(over="ignore"):
        gains = ratings if score_type == "raw" else np.exp2(ratings) - 1.0
    bad = ~np.isfinite(gains)
    if bad.any():
        i = int(np.argmax(bad))
        raise InputError(f"rating_true's {col_rating!r} is {float(ratings[i])!r} in row {i} (user {_at(users, i)!r}): "
                         f"its gain under score_type={score_type!r} is not a finite number")
    return gains


def _metric(name: str, measure: str, rating_true: Any, rating_pred: Any, *, col_user: str, col_item: str,
            col_prediction: str, relevancy_method: Any, k: Any, ties: str, bounds: bool, seed: int,
            col_rating: str = DEFAULT_RATING_COL, score_type: str | None = None) -> float | Bounds:
    """One metric: the checks, the users that count, one call of :func:`tierank.evaluate` (``measure``:
    tierank's measure, ``{k}`` standing for the cutoff)."""
    _check_relevancy(relevancy_method)
    k = check_positive(k, "k")
    measure = measure.format(k=k)
    check_mode(ties)
    if not isinstance(bounds, bool):
        raise InputError(f"bounds must be True or False, got {bounds!r}")
    graded = score_type in ("raw", "exp")

    t_users = _column(rating_true, "rating_true", col_user, "col_user")
    t_items = _column(rating_true, "rating_true", col_item, "col_item")
    t_ratings = _column(rating_true, "rating_true", col_rating, "col_rating") if graded else None
    p_users = _column(rating_pred, "rating_pred", col_user, "col_user")
    p_items = _column(rating_pred, "rating_pred", col_item, "col_item")
    p_scores = _column(rating_pred, "rating_pred", col_prediction, "col_prediction")
    for values, frame, col, what in ((t_users, "rating_true", col_user, "user"),
                                     (t_items, "rating_true", col_item, "item"),
                                     (p_users, "rating_pred", col_user, "user"),
                                     (p_items, "rating_pred", col_item, "item")):
        _check_ids(values, frame, col, what)
    scores = _numbers(p_scores, "rating_pred", col_prediction, p_users, p_items)
    if t_ratings is not None:
        assert score_type is not None
        gains = _gains(_numbers(t_ratings, "rating_true", col_rating, t_users, t_items), score_type, col_rating,
                       t_users, t_items)
    else:
        gains = np.ones(len(t_users), dtype=np.float64)   # every row of rating_true is relevant
    if ties == "trec_eval" and graded:   # tierank's trec_eval mode reads grades as trec_eval does: integers
        bad = gains != np.trunc(gains)
        if bad.any():
            i = int(np.argmax(bad))
            raise InputError(f"ties='trec_eval' reads gains as trec_eval reads grades, as integers, but row {i} of "
                             f"rating_true (user {_at(t_users, i)!r}, item {_at(t_items, i)!r}) has gain "
                             f"{float(gains[i])!r} under score_type={score_type!r}; use another tie mode "
                             "(ties='input' is Recommenders' order)")
    true = _normalized(t_users, t_items, gains, "rating_true", (col_user, col_item, col_rating), "grade")
    pred = _normalized(p_users, p_items, scores, "rating_pred", (col_user, col_item, col_prediction), "score")
    _same_kinds(true, pred, col_user, col_item)
    _check_pairs(t_users, t_items, "rating_true")
    _check_pairs(p_users, p_items, "rating_pred")

    pred_has_true_user = _isin(pred.query, true.query)
    if not pred_has_true_user.any():
        raise InputError(f"no user of rating_true is in rating_pred (column {col_user!r}): nothing to evaluate "
                         "(Recommenders returns 0.0)")
    if name == "ndcg_at_k":   # every user of rating_true; one without predictions scores 0
        true_kept = np.ones(len(true.query), dtype=bool)
    else:                     # the users of both tables
        true_kept = _isin(true.query, pred.query)
    res = evaluate(_table(true, true_kept, "relevance"), _table(pred, pred_has_true_user, "score"), [measure],
                   ties=ties, bounds=bounds, seed=seed, missing="zero", no_relevant="skip" if graded else "zero")
    value = res.mean[measure]
    if value is None or math.isnan(value):
        raise InputError(f"ndcg_at_k with score_type={score_type!r}: every user's ideal DCG is 0 (every rating in "
                         f"{col_rating!r} is 0), so nDCG is undefined for all of them")
    if not bounds:
        return float(value)
    low, high = (res.mean_lower or {}).get(measure), (res.mean_upper or {}).get(measure)
    assert low is not None and high is not None
    return Bounds(float(value), float(low), float(high))


_PARAMETERS = """
    Parameters
    ----------
    rating_true : pandas.DataFrame, polars.DataFrame or pyarrow.Table
        The relevant (user, item) pairs: every row is relevant, whatever its rating.
    rating_pred : pandas.DataFrame, polars.DataFrame or pyarrow.Table
        The predictions: one row per (user, item) candidate, a higher ``col_prediction`` ranking higher.
    col_user, col_item, col_prediction : str
        Column names (Recommenders' defaults).
    relevancy_method : {"top_k"}
        Only ``"top_k"``; ``"by_threshold"`` and ``None`` raise an InputError saying why.
    k : int, default=10
        The cutoff.
    threshold : optional
        Accepted and unused (Recommenders reads it for ``relevancy_method="by_threshold"`` only).
    col_rating : str, default="rating"
        Accepted and unused (so one keyword dict serves every function).
    ties : {"expected", "lower", "upper", "input", "optimistic", "pessimistic", "trec_eval", "random"}, \
default="expected"
        ``"expected"``: the exact mean over every order of tied predictions; ``"lower"`` / ``"upper"`` the
        exact minimum / maximum; ``"input"`` the row order inside ties, as Recommenders' stable sort;
        the others as in :func:`tierank.evaluate`.
    bounds : bool, default=False
        Return a :class:`Bounds` (value, lower, upper) instead of a float.
    seed : int, default=0
        Seed of ``ties="random"``.

    Returns
    -------
    float or Bounds
        The mean over the users present in both tables; a :class:`Bounds` with ``bounds=True``.

    Raises
    ------
    InputError
        A missing column or id, a (user, item) pair listed twice, a missing prediction, no user in both
        tables, or an unsupported ``relevancy_method``: one line naming the table, column and row.
"""


def _shared(func: Any) -> Any:
    """Put the shared Parameters / Returns / Raises sections where the docstring says ``{parameters}``."""
    func.__doc__ = func.__doc__.replace("    {parameters}\n", _PARAMETERS.lstrip("\n") + "\n")
    return func


# ----------------------------------------------------------------------------------------- metrics


@_shared
def precision_at_k(rating_true: Any, rating_pred: Any, col_user: str = DEFAULT_USER_COL,
                   col_item: str = DEFAULT_ITEM_COL, col_prediction: str = DEFAULT_PREDICTION_COL,
                   relevancy_method: Any = "top_k", k: int = DEFAULT_K, threshold: Any = DEFAULT_THRESHOLD, *,
                   col_rating: str = DEFAULT_RATING_COL, ties: str = "expected", bounds: bool = False,
                   seed: int = 0) -> Any:
    """Precision at k: the share of each user's top k that is relevant, averaged over users.

    Per user: hits in the top k / k (k even when the user has fewer predictions), as
    Recommenders' ``precision_at_k`` and trec_eval's ``P.k``; tierank's ``P@k``.

    {parameters}
    Examples
    --------
    >>> import pandas as pd
    >>> from tierank.recommenders import precision_at_k
    >>> true = pd.DataFrame({"userID": [1], "itemID": [3]})
    >>> pred = pd.DataFrame({"userID": [1, 1, 1], "itemID": [1, 2, 3], "prediction": [0.9, 0.2, 0.2]})
    >>> precision_at_k(true, pred, k=2)   # item 3 ties with item 2 for the second place
    0.25
    >>> precision_at_k(true, pred, k=2, ties="input")   # item 2 first, as Recommenders sorts
    0.0
    """
    return _metric("precision_at_k", "P@{k}", rating_true, rating_pred, col_user=col_user,
                   col_item=col_item, col_prediction=col_prediction, relevancy_method=relevancy_method, k=k,
                   ties=ties, bounds=bounds, seed=seed)


@_shared
def recall_at_k(rating_true: Any, rating_pred: Any, col_user: str = DEFAULT_USER_COL,
                col_item: str = DEFAULT_ITEM_COL, col_prediction: str = DEFAULT_PREDICTION_COL,
                relevancy_method: Any = "top_k", k: int = DEFAULT_K, threshold: Any = DEFAULT_THRESHOLD, *,
                col_rating: str = DEFAULT_RATING_COL, ties: str = "expected", bounds: bool = False,
                seed: int = 0) -> Any:
    """Recall at k: the share of each user's relevant items that is in their top k, averaged over users.

    Per user: hits in the top k / R, R = the user's rows in rating_true, as Recommenders'
    ``recall_at_k`` and trec_eval's ``recall.k``; tierank's ``R@k``.

    {parameters}
    Examples
    --------
    >>> import pandas as pd
    >>> from tierank.recommenders import recall_at_k
    >>> true = pd.DataFrame({"userID": [1, 1], "itemID": [2, 3]})
    >>> pred = pd.DataFrame({"userID": [1, 1, 1], "itemID": [1, 2, 3], "prediction": [0.5, 0.5, 0.1]})
    >>> recall_at_k(true, pred, k=1, bounds=True)   # item 2 first half of the time: 1/2 of R = 2
    Bounds(value=0.25, lower=0.0, upper=0.5)
    """
    return _metric("recall_at_k", "R@{k}", rating_true, rating_pred, col_user=col_user,
                   col_item=col_item, col_prediction=col_prediction, relevancy_method=relevancy_method, k=k,
                   ties=ties, bounds=bounds, seed=seed)


def ndcg_at_k(rating_true: Any, rating_pred: Any, col_user: str = DEFAULT_USER_COL,
              col_item: str = DEFAULT_ITEM_COL, col_rating: str = DEFAULT_RATING_COL,
              col_prediction: str = DEFAULT_PREDICTION_COL, relevancy_method: Any = "top_k", k: int = DEFAULT_K,
              threshold: Any = DEFAULT_THRESHOLD, score_type: str = "binary", discfun_type: str = "loge", *,
              ties: str = "expected", bounds: bool = False, seed: int = 0) -> Any:
    """nDCG at k, averaged over the users of rating_true (those without predictions score 0).

    Per user: DCG@k / ideal DCG@k, gain / log(1 + rank) summed over the top k, the ideal from the user's k
    largest gains in rating_true; as Recommenders' ``ndcg_at_k``; tierank's ``nDCG@k`` on the gains.

    Parameters
    ----------
    rating_true : pandas.DataFrame, polars.DataFrame or pyarrow.Table
        The relevant (user, item) pairs: every row is relevant; its rating is read with ``score_type``
        ``"raw"`` or ``"exp"`` only.
    rating_pred : pandas.DataFrame, polars.DataFrame or pyarrow.Table
        The predictions: one row per (user, item) candidate, a higher ``col_prediction`` ranking higher.
    col_user, col_item, col_rating, col_prediction : str
        Column names (Recommenders' defaults); ``col_rating`` need not exist with ``score_type="binary"``.
    relevancy_method : {"top_k"}
        Only ``"top_k"``; ``"by_threshold"`` and ``None`` raise an InputError saying why.
    k : int, default=10
        The cutoff.
    threshold : optional
        Accepted and unused.
    score_type : {"binary", "raw", "exp"}, default="binary"
        The gain of a relevant item: 1, its rating, or 2**rating - 1. Ratings must be >= 0 with
        ``"raw"`` / ``"exp"``; a user whose gains are all 0 is left out of the mean (Recommenders: NaN
        skipped); when every user is, an InputError.
    discfun_type : {"loge", "log2"}, default="loge"
        The logarithm of the discount; the base cancels in DCG / ideal DCG, so both give the same value.
    ties, bounds, seed
        As in :func:`precision_at_k`.

    Returns
    -------
    float or Bounds
        The mean over the users of rating_true (see ``score_type``); a :class:`Bounds` with ``bounds=True``.

    Raises
    ------
    InputError
        As :func:`precision_at_k`; also an unknown ``score_type`` / ``discfun_type`` or a negative rating.

    Examples
    --------
    >>> import pandas as pd
    >>> from tierank.recommenders import ndcg_at_k
    >>> true = pd.DataFrame({"userID": [1, 1, 2], "itemID": [1, 2, 1], "rating": [3, 1, 2]})
    >>> pred = pd.DataFrame({"userID": [1, 1, 1], "itemID": [1, 2, 3], "prediction": [0.2, 0.2, 0.9]})
    >>> round(ndcg_at_k(true, pred, k=2), 4)   # user 1: item 3, then item 1 or 2; user 2 has no predictions: 0
    0.1934
    >>> raw = ndcg_at_k(true, pred, k=2, score_type="raw", bounds=True)   # gains 3 and 1: the tie matters
    >>> [round(v, 4) for v in raw]
    [0.1738, 0.0869, 0.2606]
    >>> round(ndcg_at_k(true, pred, k=2, score_type="raw", ties="input"), 4)   # item 1 first, as Recommenders
    0.2606
    """
    if score_type not in _SCORE_TYPES:
        raise InputError(f"score_type must be one of {', '.join(_quoted(_SCORE_TYPES))}, got {score_type!r}")
    if discfun_type not in _DISCFUN_TYPES:
        raise InputError(f"discfun_type must be one of {', '.join(_quoted(_DISCFUN_TYPES))}, "
                         f"got {discfun_type!r}")
    return _metric("ndcg_at_k", "nDCG@{k}", rating_true, rating_pred, col_user=col_user,
                   col_item=col_item, col_prediction=col_prediction, relevancy_method=relevancy_method, k=k,
                   ties=ties, bounds=bounds, seed=seed, col_rating=col_rating, score_type=score_type)


def _quoted(names: tuple[str, ...]) -> list[str]:
    """The choices quoted, for messages."""
    return [repr(n) for n in names]


@_shared
def map(rating_true: Any, rating_pred: Any, col_user: str = DEFAULT_USER_COL,   # noqa: A001 (Recommenders' name)
        col_item: str = DEFAULT_ITEM_COL, col_prediction: str = DEFAULT_PREDICTION_COL,
        relevancy_method: Any = "top_k", k: int = DEFAULT_K, threshold: Any = DEFAULT_THRESHOLD, *,
        col_rating: str = DEFAULT_RATING_COL, ties: str = "expected", bounds: bool = False,
        seed: int = 0) -> Any:
    """Mean average precision of the top k, normalised by R (Recommenders' ``map``).

    Per user: the precision at each hit in the top k, summed, / R (trec_eval's ``map_cut.k``;
    tierank's ``AP@k``). Unlike trec_eval's ``map``, it stops at k.

    {parameters}
    Examples
    --------
    >>> import pandas as pd
    >>> from tierank.recommenders import map
    >>> true = pd.DataFrame({"userID": [1, 1], "itemID": [1, 2]})
    >>> pred = pd.DataFrame({"userID": [1, 1, 1], "itemID": [1, 2, 3], "prediction": [0.9, 0.1, 0.1]})
    >>> map(true, pred, k=2)   # item 1 first; item 2 second (1) or third (0), half of the time each
    0.75
    """
    return _metric("map", "AP@{k}", rating_true, rating_pred, col_user=col_user, col_item=col_item,
                   col_prediction=col_prediction, relevancy_method=relevancy_method, k=k, ties=ties,
                   bounds=bounds, seed=seed)


@_shared
def map_at_k(rating_true: Any, rating_pred: Any, col_user: str = DEFAULT_USER_COL,
             col_item: str = DEFAULT_ITEM_COL, col_prediction: str = DEFAULT_PREDICTION_COL,
             relevancy_method: Any = "top_k", k: int = DEFAULT_K, threshold: Any = DEFAULT_THRESHOLD, *,
             col_rating: str = DEFAULT_RATING_COL, ties: str = "expected", bounds: bool = False,
             seed: int = 0) -> Any:
    """Mean average precision at k, normalised by min(R, k) (Recommenders' ``map_at_k``).

    Per user: the precision at each hit in the top k, summed, / min(R, k) (Spark's and Kaggle's
    MAP@k; tierank's ``AP(denom='min_k_R')@k``; not a trec_eval measure).

    {parameters}
    Examples
    --------
    >>> import pandas as pd
    >>> from tierank.recommenders import map_at_k
    >>> true = pd.DataFrame({"userID": [1, 1, 1], "itemID": [1, 2, 4]})
    >>> pred = pd.DataFrame({"userID": [1, 1, 1], "itemID": [1, 2, 3], "prediction": [0.9, 0.1, 0.1]})
    >>> map_at_k(true, pred, k=2)   # (1 + 1/2 of the time 2/2) / min(3, 2)
    0.75
    """
    return _metric("map_at_k", "AP(denom='min_k_R')@{k}", rating_true, rating_pred, col_user=col_user,
                   col_item=col_item, col_prediction=col_prediction, relevancy_method=relevancy_method, k=k,
                   ties=ties, bounds=bounds, seed=seed)


@_shared
def hit_ratio_at_k(rating_true: Any, rating_pred: Any, col_user: str = DEFAULT_USER_COL,
                   col_item: str = DEFAULT_ITEM_COL, col_prediction: str = DEFAULT_PREDICTION_COL,
                   relevancy_method: Any = "top_k", k: int = DEFAULT_K, threshold: Any = DEFAULT_THRESHOLD, *,
                   col_rating: str = DEFAULT_RATING_COL, ties: str = "expected", bounds: bool = False,
                   seed: int = 0) -> Any:
    """Hit ratio at k (HR@k, hit rate): the share of users with a relevant item in their top k.

    Per user: 1 with a hit in the top k, else 0 (trec_eval's ``success.k``; tierank's ``Success@k``).
    Not in Recommenders' ``python_evaluation``: its conventions here.

    {parameters}
    Examples
    --------
    >>> import pandas as pd
    >>> from tierank.recommenders import hit_ratio_at_k
    >>> true = pd.DataFrame({"userID": [1], "itemID": [3]})
    >>> pred = pd.DataFrame({"userID": [1, 1, 1], "itemID": [1, 2, 3], "prediction": [1, 1, 1]})
    >>> round(hit_ratio_at_k(true, pred, k=1), 4), hit_ratio_at_k(true, pred, k=1, ties="input")
    (0.3333, 0.0)
    """
    return _metric("hit_ratio_at_k", "Success@{k}", rating_true, rating_pred, col_user=col_user,
                   col_item=col_item, col_prediction=col_prediction, relevancy_method=relevancy_method, k=k,
                   ties=ties, bounds=bounds, seed=seed)


@_shared
def mrr(rating_true: Any, rating_pred: Any, col_user: str = DEFAULT_USER_COL,
        col_item: str = DEFAULT_ITEM_COL, col_prediction: str = DEFAULT_PREDICTION_COL,
        relevancy_method: Any = "top_k", k: int = DEFAULT_K, threshold: Any = DEFAULT_THRESHOLD, *,
        col_rating: str = DEFAULT_RATING_COL, ties: str = "expected", bounds: bool = False,
        seed: int = 0) -> Any:
    """Mean reciprocal rank of the top k (MRR@k).

    Per user: 1 / the rank of the first relevant item in the top k, 0 without one (trec_eval's
    ``recip_rank`` cut at k; tierank's ``RR@k``). Not in Recommenders' ``python_evaluation``: its
    conventions here.

    {parameters}
    Examples
    --------
    >>> import pandas as pd
    >>> from tierank.recommenders import mrr
    >>> true = pd.DataFrame({"userID": [1], "itemID": [3]})
    >>> pred = pd.DataFrame({"userID": [1, 1, 1], "itemID": [1, 2, 3], "prediction": [1, 1, 1]})
    >>> round(mrr(true, pred, k=10), 4)   # (1 + 1/2 + 1/3) / 3
    0.6111
    """
    return _metric("mrr", "RR@{k}", rating_true, rating_pred, col_user=col_user, col_item=col_item,
                   col_prediction=col_prediction, relevancy_method=relevancy_method, k=k, ties=ties,
                   bounds=bounds, seed=seed)


def r_precision_at_k(rating_true: Any, rating_pred: Any, col_user: str = DEFAULT_USER_COL,
                     col_item: str = DEFAULT_ITEM_COL, col_prediction: str = DEFAULT_PREDICTION_COL,
                     relevancy_method: Any = "top_k", k: int = DEFAULT_K, threshold: Any = DEFAULT_THRESHOLD, *,
                     col_rating: str = DEFAULT_RATING_COL, ties: str = "expected", bounds: bool = False,
                     seed: int = 0) -> Any:
    """Not computed: always raises an InputError saying why.

    Recommenders' ``r_precision_at_k`` (1.2) gives each user hits in the top min(R, k) / R but averages over
    the users with at least one such hit only, so the set of users averaged over changes with the order of
    tied predictions: no mean over those orders is a per-user measure, and a tie-broken number would not be
    exact. Use :func:`recall_at_k`, or :func:`tierank.evaluate` with ``"Rprec"`` (every user counted).

    Raises
    ------
    InputError
        Always.

    Examples
    --------
    >>> import pandas as pd
    >>> from tierank.recommenders import r_precision_at_k
    >>> r_precision_at_k(pd.DataFrame(), pd.DataFrame())
    Traceback (most recent call last):
    ...
    tierank.errors.InputError: r_precision_at_k is not computed: Recommenders averages it over the users with a hit in their top min(R, k) only, a set that changes with the order of tied predictions, so no exact tie-aware value exists; use recall_at_k, or tierank.evaluate with 'Rprec'
    """
    raise InputError("r_precision_at_k is not computed: Recommenders averages it over the users with a hit in their "
                     "top min(R, k) only, a set that changes with the order of tied predictions, so no exact "
                     "tie-aware value exists; use recall_at_k, or tierank.evaluate with 'Rprec'")
