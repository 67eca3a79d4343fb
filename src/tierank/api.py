"""Public entry points: wiring only (inputs -> ranked lists -> tie statistics -> kernels -> Results)."""

from __future__ import annotations

import warnings
from typing import Any, Iterable

import numpy as np
import pandas as pd

from .data.join import TierankWarning, join_run_qrels
from .data.ranked import RankedLists
from .errors import InputError
from .io.frames import to_columns
from .measures import Measure, parse_measure
from .measures.err import GradeAboveMax
from .results import Results
from .ties.policy import check_mode, evaluate_lists

__all__ = ["evaluate", "evaluate_matrix"]


def _parse_all(measures: str | Measure | Iterable[str | Measure]) -> dict[str, Measure]:
    if isinstance(measures, (str, Measure)):
        measures = [measures]
    parsed = {str(m) if isinstance(m, Measure) else m: parse_measure(m) for m in measures}
    if not parsed:
        raise InputError("no measure given, e.g. measures=['nDCG@10', 'AP']")
    return parsed


def _check_seed(seed: Any) -> int:
    if isinstance(seed, bool) or not isinstance(seed, (int, np.integer)):
        raise InputError(f"seed must be an integer, got {seed!r}")
    return int(seed)


def _run_engine(ranked: RankedLists, measures: dict[str, Measure], labels: np.ndarray, ties: str,
                bounds: bool, seed: int, label_name: str) -> tuple[dict, dict, dict]:
    try:
        return evaluate_lists(ranked, list(measures.values()), ties=ties, bounds=bounds, seed=seed)
    except GradeAboveMax as err:
        label = labels[err.query]
        label = label.item() if isinstance(label, np.generic) else label
        raise InputError(f"{err} ({label_name} {label!r})", query=label) from None


def _frame(columns: dict[str, np.ndarray], index: pd.Index) -> pd.DataFrame:
    return pd.DataFrame(columns, index=index)


def evaluate(qrels: Any, run: Any, measures: str | Iterable[str], *, ties: str = "expected",
             bounds: bool = False, missing: str = "skip", seed: int = 0) -> Results:
    """Evaluate a run against relevance judgments, exactly when scores tie.

    Parameters
    ----------
    qrels : dict, pandas.DataFrame or path
        Judgments: ``{query_id: {doc_id: grade}}``, a DataFrame with columns ``query_id, doc_id,
        relevance``, or a TREC qrels file. Negative grades (TREC junk, -2) are non-relevant with gain 0.
    run : dict, pandas.DataFrame or path
        Scores (higher is better): ``{query_id: {doc_id: score}}``, a DataFrame with columns
        ``query_id, doc_id, score``, or a TREC run file. Unjudged documents have grade 0.
    measures : str or list of str
        Measure strings such as ``"nDCG@10"``, ``"AP"``, ``"P(rel=2)@5"``, ``"ndcg_cut.10"``.
    ties : {"expected", "optimistic", "pessimistic", "input", "trec_eval", "random"}, default="expected"
        How tied documents are ordered; ``"expected"`` is the exact mean over all orderings,
        ``"trec_eval"`` breaks ties by document id, descending, as trec_eval does.
    bounds : bool, default=False
        Also return the exact minimum and maximum over all orderings of tied documents.
    missing : {"skip", "zero"}, default="skip"
        Judged queries absent from the run: left out with a warning, or scored as empty runs
        (0 for every measure; trec_eval ``-c``).
    seed : int, default=0
        Seed of ``ties="random"``.

    Returns
    -------
    Results
        ``.mean``, ``.per_query`` (index: query id, sorted) and, with ``bounds=True``, ``.lower`` and
        ``.upper``.

    Examples
    --------
    Two documents tie for the first place; one of them is relevant:

    >>> import tierank
    >>> qrels = {"q1": {"d1": 1}}
    >>> run = {"q1": {"d1": 0.5, "d2": 0.5, "d3": 0.1}}
    >>> res = tierank.evaluate(qrels, run, ["RR", "P@1"], bounds=True)
    >>> res.mean
    {'RR': 0.75, 'P@1': 0.5}
    >>> res.lower.loc["q1", "RR"], res.upper.loc["q1", "RR"]
    (np.float64(0.5), np.float64(1.0))
    >>> tierank.evaluate(qrels, run, ["RR"], ties="trec_eval").mean   # "d2" > "d1": d2 first
    {'RR': 0.5}
    """
    check_mode(ties)
    seed = _check_seed(seed)
    parsed = _parse_all(measures)
    joined = join_run_qrels(to_columns(run, "run"), to_columns(qrels, "qrels"), missing=missing)
    ranked = joined.ranked
    labels = joined.labels
    values: dict = {}
    lower: dict = {}
    upper: dict = {}
    if ranked.n_queries:
        values, lower, upper = _run_engine(ranked, parsed, labels, ties, bounds, seed, "query")
    cols, lo_cols, hi_cols = {}, {}, {}
    for text, m in parsed.items():
        empty = _empty_values(m, joined.empty_judged)
        cols[text] = np.concatenate([values.get(m, np.zeros(0)), empty])
        if bounds:
            lo_cols[text] = np.concatenate([lower.get(m, np.zeros(0)), empty])
            hi_cols[text] = np.concatenate([upper.get(m, np.zeros(0)), empty])
    all_labels = np.concatenate([labels, joined.empty_labels]) if len(joined.empty_labels) else labels
    index = pd.Index(all_labels, name="query_id")
    order = _label_order(index)
    per_query = _frame(cols, index).iloc[order]
    lo = _frame(lo_cols, index).iloc[order] if bounds else None
    hi = _frame(hi_cols, index).iloc[order] if bounds else None
    return Results(per_query=per_query, lower=lo, upper=hi, ties=ties, measures=parsed)


def _label_order(index: pd.Index) -> np.ndarray:
    values = index.to_numpy()
    try:
        return np.argsort(values, kind="stable")
    except TypeError:
        return np.argsort(values.astype(str), kind="stable")


def _empty_values(m: Measure, judged: list[np.ndarray]) -> np.ndarray:
    """Values of queries scored with an empty run (missing="zero")."""
    if m.family.empty == "one":
        return np.ones(len(judged))
    if m.family.empty == "R":
        return np.array([float((j >= m["rel"]).sum()) for j in judged])
    return np.zeros(len(judged))


def _as_matrix(x: Any, name: str, keep_integers: bool = False) -> np.ndarray:
    """A 2-D float64 array (int64 kept as is with ``keep_integers``: large integer keys stay exact)."""
    try:
        arr = np.asarray(x)
        if keep_integers and arr.dtype.kind in "iu" and arr.dtype.itemsize <= 8 and arr.dtype != np.uint64:
            arr = arr.astype(np.int64, copy=False)
        else:
            arr = arr.astype(np.float64, copy=False)
    except (TypeError, ValueError):
        raise InputError(f"{name} must be a numeric array") from None
    if arr.ndim == 1:
        arr = arr[None, :]
    if arr.ndim != 2:
        raise InputError(f"{name} must be a 1-D or 2-D array (rows = queries), got {arr.ndim} dimensions")
    return arr


def _first_bad_row(bad: np.ndarray) -> int:
    return int(np.flatnonzero(bad.any(axis=1))[0])


def evaluate_matrix(relevance: Any, scores: Any = None, distances: Any = None,
                    measures: str | Iterable[str] = ("nDCG@10",), *, ties: str = "expected",
                    bounds: bool = False, mask: Any = None, seed: int = 0) -> Results:
    """Evaluate dense score (or distance) matrices, one row per query, exactly when values tie.

    Parameters
    ----------
    relevance : array-like of shape (n_queries, n_items) or (n_items,)
        Grades (>= 0, may be fractional); the row is the query's whole judged set (R and the ideal DCG
        come from it).
    scores : array-like, same shape, optional
        Higher is better. Give exactly one of ``scores`` and ``distances``. Infinite values are valid
        and tie with each other.
    distances : array-like, same shape, optional
        Lower is better (e.g. Hamming distances).
    measures : str or list of str
        Measure strings, e.g. ``["nDCG@10", "AP@100", "P(rel=2)@5"]``.
    ties : {"expected", "optimistic", "pessimistic", "input", "trec_eval", "random"}, default="expected"
        ``"input"`` breaks ties by column index ascending, ``"trec_eval"`` by column index descending.
    bounds : bool, default=False
        Also return the exact minimum and maximum over all orderings of tied items.
    mask : array-like of bool, same shape, optional
        False marks padding (ragged lists); padded entries are ignored entirely.
    seed : int, default=0
        Seed of ``ties="random"``.

    Returns
    -------
    Results
        ``.per_query`` indexed by row number.

    Examples
    --------
    Hamming distances of 4 database items to one query; items 1 and 2 tie at distance 1:

    >>> import tierank
    >>> res = tierank.evaluate_matrix([[1, 0, 1, 0]], distances=[[0, 1, 1, 3]],
    ...                               measures=["AP", "P@2"], bounds=True)
    >>> round(res.mean["AP"], 4), round(res.mean["P@2"], 4)
    (0.9167, 0.75)
    >>> float(res.lower.loc[0, "AP"]), float(res.upper.loc[0, "AP"])
    (0.8333333333333333, 1.0)
    """
    check_mode(ties)
    seed = _check_seed(seed)
    parsed = _parse_all(measures)
    if (scores is None) == (distances is None):
        raise InputError("give exactly one of scores= (higher is better) and distances= (lower is better)"
                         + ("; both were given" if scores is not None else "; neither was given"))
    grades = _as_matrix(relevance, "relevance")
    keyname = "scores" if scores is not None else "distances"
    keys = _as_matrix(scores if scores is not None else distances, keyname, keep_integers=True)
    if keys.shape != grades.shape:
        raise InputError(f"shape mismatch: relevance has shape {grades.shape}, {keyname} {keys.shape}")
    if grades.shape[1] == 0 or grades.shape[0] == 0:
        raise InputError(f"empty input: relevance has shape {grades.shape}")
    if mask is not None:
        mask = np.asarray(mask)
        if mask.ndim == 1:
            mask = mask[None, :]
        if mask.shape != grades.shape:
            raise InputError(f"shape mismatch: mask has shape {mask.shape}, relevance {grades.shape}")
        if mask.dtype != bool:
            raise InputError("mask must be boolean (False marks padding)")
    valid = np.ones(grades.shape, dtype=bool) if mask is None else mask
    key_nan = np.isnan if keys.dtype.kind == "f" else (lambda a: np.zeros(a.shape, dtype=bool))
    for name, arr, test, what in (("relevance", grades, np.isnan, "NaN"), (keyname, keys, key_nan, "NaN"),
                                  ("relevance", grades, np.isinf, "an infinite grade"),
                                  ("relevance", grades, lambda a: a < 0, "a negative grade")):
        bad = test(arr) & valid
        if bad.any():
            row = _first_bad_row(bad)
            raise InputError(f"{name} contains {what} (row {row})", query=row)
    if distances is not None:
        keys = -keys
    n_rows, n_cols = grades.shape
    rows = np.arange(n_rows)
    lengths = valid.sum(axis=1)
    empty = lengths == 0
    if empty.any():
        warnings.warn(f"{int(empty.sum())} row(s) have no unmasked item and are left out", TierankWarning,
                      stacklevel=2)
        if empty.all():
            raise InputError("every row is masked out: nothing to evaluate")
    if mask is None:
        order = np.argsort(-keys, axis=1)
        columns = order.ravel()
        flat = columns + np.repeat(rows * n_cols, n_cols)
        sorted_keys = np.take(keys.ravel(), flat)
        sorted_grades = np.take(grades.ravel(), flat)
        qptr = np.arange(n_rows + 1, dtype=np.int64) * n_cols
        labels = rows
    else:
        # masked entries go last in their row and are cut off; valid ones keep key order (stable)
        sort_keys = np.where(valid, -keys, 0)
        order = np.lexsort((sort_keys, ~valid), axis=1) if False else _masked_order(sort_keys, valid)
        sorted_valid = np.take_along_axis(valid, order, axis=1)
        sorted_keys = np.take_along_axis(keys, order, axis=1)[sorted_valid]
        sorted_grades = np.take_along_axis(grades, order, axis=1)[sorted_valid]
        columns = order[sorted_valid]
        flat = (order + rows[:, None] * n_cols)[sorted_valid]
        keep = ~empty
        labels = rows[keep]
        qptr = np.zeros(len(labels) + 1, dtype=np.int64)
        np.cumsum(lengths[keep], out=qptr[1:])
    ranked = RankedLists(qptr=qptr, keys=np.ascontiguousarray(sorted_keys), grades=sorted_grades,
                         judged_ptr=qptr, judged=sorted_grades, trec_order_fn=lambda: columns,
                         input_order=flat)
    values, lower, upper = _run_engine(ranked, parsed, labels, ties, bounds, seed, "row")
    index = pd.Index(labels, name="row")
    per_query = _frame({t: values[m] for t, m in parsed.items()}, index)
    lo = _frame({t: lower[m] for t, m in parsed.items()}, index) if bounds else None
    hi = _frame({t: upper[m] for t, m in parsed.items()}, index) if bounds else None
    return Results(per_query=per_query, lower=lo, upper=hi, ties=ties, measures=parsed)


def _masked_order(sort_keys: np.ndarray, valid: np.ndarray) -> np.ndarray:
    """Row-wise order: valid entries by key (stable), then the masked ones."""
    order = np.argsort(sort_keys, axis=1, kind="stable")
    v = np.take_along_axis(valid, order, axis=1)
    second = np.argsort(~v, axis=1, kind="stable")
    return np.take_along_axis(order, second, axis=1)
