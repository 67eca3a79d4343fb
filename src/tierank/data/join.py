"""The one vectorised run x qrels join: ids are dictionary-encoded once, then joined on int64 keys."""

from __future__ import annotations

import warnings
from dataclasses import dataclass

import numpy as np
import pandas as pd

from ..errors import InputError
from .ranked import RankedLists, sort_ranked

__all__ = ["Columns", "JoinedRun", "join_run_qrels", "TierankWarning"]


class TierankWarning(UserWarning):
    """Something in the input was left out or changed; the message says what and how much."""


@dataclass
class Columns:
    """One table of (query, doc, value) rows, with where each row came from for error messages."""

    query: np.ndarray
    doc: np.ndarray
    value: np.ndarray
    source: str                       # "run", "qrels" or a file name
    lines: np.ndarray | None = None   # 1-based line numbers, for files

    def where(self, i: int) -> dict:
        if self.lines is not None:
            return {"file": self.source, "line": int(self.lines[i])}
        return {}


@dataclass
class JoinedRun:
    """Ranked lists of the evaluated queries with a run, plus the queries scored as empty."""

    ranked: RankedLists
    labels: np.ndarray          # query ids of ranked, in ranked order
    empty_labels: np.ndarray    # query ids evaluated with no retrieved item (missing="zero")
    empty_judged: list[np.ndarray]


def _sorted_labels(uniques: np.ndarray) -> np.ndarray:
    """Order of query ids as given: numbers numerically, strings in plain string order."""
    try:
        return np.argsort(uniques, kind="stable")
    except TypeError:
        return np.argsort(np.array([str(u) for u in uniques]), kind="stable")


def _check_duplicates(keys: np.ndarray, cols: Columns, what: str) -> None:
    order = np.argsort(keys, kind="stable")
    dup = np.flatnonzero(keys[order][1:] == keys[order][:-1])
    if dup.size:
        first, second = order[dup[0]], order[dup[0] + 1]
        where = cols.where(int(max(first, second)))
        raise InputError(f"document {cols.doc[second]!r} is listed twice for query {cols.query[second]!r} "
                         f"in the {what}", query=cols.query[second], **where)


def _check_numbers(cols: Columns, what: str) -> np.ndarray:
    try:
        values = np.asarray(cols.value, dtype=np.float64)
    except (TypeError, ValueError):
        for i, v in enumerate(cols.value):  # only on the error path, to name the offending row
            try:
                float(v)
            except (TypeError, ValueError):
                raise InputError(f"{what} {v!r} of document {cols.doc[i]!r} is not a number",
                                 query=cols.query[i], **cols.where(i)) from None
        raise
    bad = np.flatnonzero(np.isnan(values))
    if bad.size:
        i = int(bad[0])
        raise InputError(f"{what} of document {cols.doc[i]!r} for query {cols.query[i]!r} is NaN",
                         query=cols.query[i], **cols.where(i))
    return values


def join_run_qrels(run: Columns, qrels: Columns, missing: str = "skip") -> JoinedRun:
    """Join a run with its judgments and build ranked lists (see design.md §2 for the rules).

    Queries of the qrels without a run are skipped with a warning (``missing="skip"``) or scored as
    empty lists (``missing="zero"``, trec_eval ``-c``); queries of the run without judgments are skipped
    with a warning. Unjudged retrieved documents get grade 0. A document twice in one query is an error.
    """
    if missing not in ("skip", "zero"):
        raise InputError(f"missing={missing!r}: use 'skip' or 'zero'")
    scores = _check_numbers(run, "score")
    grades = _check_numbers(qrels, "grade")
    if np.isinf(grades).any():
        i = int(np.flatnonzero(np.isinf(grades))[0])
        raise InputError(f"grade of document {qrels.doc[i]!r} is infinite", query=qrels.query[i],
                         **qrels.where(i))
    n_run = len(run.query)
    qcodes, quniq = pd.factorize(np.concatenate([np.asarray(run.query, dtype=object),
                                                 np.asarray(qrels.query, dtype=object)])
                                 if _mixed(run.query, qrels.query) else
                                 np.concatenate([run.query, qrels.query]))
    dcodes, duniq = pd.factorize(np.concatenate([np.asarray(run.doc, dtype=object),
                                                 np.asarray(qrels.doc, dtype=object)])
                                 if _mixed(run.doc, qrels.doc) else
                                 np.concatenate([run.doc, qrels.doc]))
    n_docs = max(len(duniq), 1)
    run_q, qrels_q = qcodes[:n_run].astype(np.int64), qcodes[n_run:].astype(np.int64)
    run_d, qrels_d = dcodes[:n_run].astype(np.int64), dcodes[n_run:].astype(np.int64)
    run_key = run_q * n_docs + run_d
    qrels_key = qrels_q * n_docs + qrels_d
    _check_duplicates(qrels_key, qrels, "qrels")
    _check_duplicates(run_key, run, "run")

    n_all = len(quniq)
    in_run = np.bincount(run_q, minlength=n_all) > 0
    in_qrels = np.bincount(qrels_q, minlength=n_all) > 0
    only_qrels = int((in_qrels & ~in_run).sum())
    only_run = int((in_run & ~in_qrels).sum())
    if only_run:
        warnings.warn(f"{only_run} quer{'y' if only_run == 1 else 'ies'} of the run "
                      f"{'has' if only_run == 1 else 'have'} no judgments and "
                      f"{'is' if only_run == 1 else 'are'} left out", TierankWarning, stacklevel=3)
    if only_qrels and missing == "skip":
        warnings.warn(f"{only_qrels} judged quer{'y' if only_qrels == 1 else 'ies'} "
                      f"{'is' if only_qrels == 1 else 'are'} missing from the run and left out "
                      "(missing='zero' scores them 0, like trec_eval -c)", TierankWarning, stacklevel=3)
    evaluated = in_run & in_qrels
    if not evaluated.any() and not (missing == "zero" and only_qrels):
        raise InputError("no query is both in the run and in the qrels: nothing to evaluate")

    # query codes of the evaluated queries, numbered in sorted-id order
    order = _sorted_labels(quniq)
    ranked_ids = order[evaluated[order]]
    new_code = np.full(n_all, -1, dtype=np.int64)
    new_code[ranked_ids] = np.arange(len(ranked_ids))

    keep = evaluated[run_q]
    rq = new_code[run_q[keep]]
    rkey, rdoc, rscore = run_key[keep], run_d[keep], scores[keep]
    # grades of retrieved documents: look up the sorted qrels keys
    qorder = np.argsort(qrels_key, kind="stable")
    sorted_keys = qrels_key[qorder]
    at = np.searchsorted(sorted_keys, rkey)
    at_c = np.minimum(at, max(len(sorted_keys) - 1, 0))
    found = (at < len(sorted_keys)) & (sorted_keys[at_c] == rkey) if len(sorted_keys) else np.zeros(
        len(rkey), bool)
    rgrade = np.where(found, grades[qorder][at_c] if len(sorted_keys) else 0.0, 0.0)

    n_q = len(ranked_ids)
    item_order, qptr = sort_ranked(rq, rscore, n_q)
    sorted_docs = rdoc[item_order]

    jkeep = evaluated[qrels_q]
    jq = new_code[qrels_q[jkeep]]
    jorder = np.argsort(jq, kind="stable")
    judged = grades[jkeep][jorder]
    judged_ptr = np.zeros(n_q + 1, dtype=np.int64)
    np.cumsum(np.bincount(jq, minlength=n_q), out=judged_ptr[1:])

    def trec_order() -> np.ndarray:
        # trec_eval breaks ties by document id as a string; rank every id once
        names = np.asarray(duniq).astype(str)
        rank = np.empty(len(names), dtype=np.int64)
        rank[np.argsort(names, kind="stable")] = np.arange(len(names))
        return rank[sorted_docs]

    ranked = RankedLists(qptr=qptr, keys=rscore[item_order], grades=rgrade[item_order],
                         judged_ptr=judged_ptr, judged=judged, trec_order_fn=trec_order,
                         input_order=np.flatnonzero(keep)[item_order])

    empty_ids = order[(in_qrels & ~in_run)[order]] if missing == "zero" else np.zeros(0, dtype=np.int64)
    empty_judged = []
    if empty_ids.size:
        jo = np.argsort(qrels_q, kind="stable")
        ptr = np.searchsorted(qrels_q[jo], np.arange(n_all + 1))
        empty_judged = [grades[jo][ptr[i]:ptr[i + 1]] for i in empty_ids]  # few queries
    return JoinedRun(ranked=ranked, labels=np.asarray(quniq)[ranked_ids],
                     empty_labels=np.asarray(quniq)[empty_ids], empty_judged=empty_judged)


def _mixed(a: np.ndarray, b: np.ndarray) -> bool:
    return np.asarray(a).dtype != np.asarray(b).dtype
