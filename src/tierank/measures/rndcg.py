"""Rndcg (trec_eval ``Rndcg``): nDCG averaged at the "R levels", the ranks where the ideal gain changes.

trec_eval's definition (m_Rndcg.c): the judged gains sorted descending change value at ranks
``b_1 < b_2 < ... < b_L = P`` (P: judged documents of positive gain; the last change is to gain 0). At each
``b`` it records ``DCG@min(b, n) / IDCG@b`` (n: retrieved documents), and once more ``DCG@n / IDCG@P``
when ``n > P + 1``; Rndcg is the mean of the records (0 when no judged document reaches ``rel``).

Tie-aware (docs/maths.md, "Rndcg"): the ranks and ideal values are fixed by the judgments and the list
length, and each record is a DCG at a cutoff, linear in the positions, so the expected value is the mean
of the expected DCGs at those cutoffs over their ideal values. Gains sorted in each tie give the bounds.
"""

from __future__ import annotations

import numpy as np

from ..ties.groups import PositionFn, TieStats, position_prefix, position_sum, within_query_exclusive_cumsum
from ._common import REL, divide
from ._spec import Measure, MeasureFamily
from ._trec import TrecName
from .dcg import (DCG_PARAMS, discount_function, gain_preference, ideal_gains, normalize_dcg_spelling, ratio_gains,
                  show_gains, trec_gains)

__all__ = ["FAMILIES"]


def _records(g: TieStats, m: Measure, disc: PositionFn) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(query, cutoff k, ideal DCG) of every record, sorted by query."""
    q, gain, count = ideal_gains(g, m, scaled=True)
    with np.errstate(over="ignore"):   # exp2 gains beyond float64 are inf here: only compared
        _, plain, _ = ideal_gains(g, m)
    # runs of equal gain within a query end at the ranks where the ideal gain changes (the scaled gains
    # of small grades may underflow to one value, the plain ones of huge grades overflow to one: together
    # they tell every two gains apart)
    last = np.ones(len(q), dtype=bool)
    last[:-1] = (q[1:] != q[:-1]) | (gain[1:] != gain[:-1]) | (plain[1:] != plain[:-1])
    end = np.cumsum(count)
    start = np.searchsorted(q, np.arange(g.n_queries))
    before = np.zeros(g.n_queries, dtype=np.int64)
    before[1:] = np.bincount(q, weights=count, minlength=g.n_queries).cumsum()[:-1].astype(np.int64)
    rank = end - before[q]                                   # ranks after each run, within the query
    PD = position_prefix(disc, int(rank.max()) + 1 if len(rank) else 1)
    run_start = rank - count
    ideal_part = gain * (PD[rank] - PD[run_start]).astype(np.float64)
    ideal = _within_query_cumsum(ideal_part, q, start)
    n = g.lengths
    rq, rk, ri = q[last], np.minimum(rank[last], n[q[last]]), ideal[last]
    # the extra record at the list's end when it runs past the ideal's positive part by two or more
    P = np.bincount(q, weights=count, minlength=g.n_queries).astype(np.int64)
    total = np.zeros(g.n_queries)
    np.add.at(total, q, ideal_part)
    extra = np.flatnonzero((P > 0) & (n > P + 1))
    rq, rk, ri = (np.concatenate([rq, extra]), np.concatenate([rk, n[extra]]),
                  np.concatenate([ri, total[extra]]))
    order = np.argsort(rq, kind="stable")
    return rq[order], rk[order].astype(np.int64), ri[order]


def _within_query_cumsum(values: np.ndarray, query: np.ndarray, start: np.ndarray) -> np.ndarray:
    return within_query_exclusive_cumsum(values, query, start) + values


def _expected_dcg_at(g: TieStats, m: Measure, K: np.ndarray, disc: PositionFn) -> np.ndarray:
    """E[DCG@K] per query for a per-query cutoff array K (1 <= K <= n)."""
    # gains scaled per query where they reach float64's range, as the ideal DCG: the ratio is the same
    key, gains, with_query = ratio_gains(g, m)
    cut = g.cut(K)
    in_cut = g.subset_sum(key, gains, cut.group, with_query) / cut.n
    last = in_cut * position_sum(disc, cut.t, cut.m)

    def build_full() -> np.ndarray:
        total = g.group_sum(key, gains, with_query)
        return total / g.group_size * position_sum(disc, g.group_first, g.group_size)
    return g.sum_before_cut(g.memo(("dcg_full", key, disc), build_full), cut) + last


def rndcg(g: TieStats, m: Measure) -> np.ndarray:
    disc = discount_function(m)
    rq, rk, ri = _records(g, m, disc)
    out = np.zeros(g.n_queries)
    if not len(rq):
        return out
    # one round per record index: the r-th record of every query that has one
    rank_in_query = np.arange(len(rq)) - np.searchsorted(rq, rq)
    sums = np.zeros(g.n_queries)
    for r in range(int(rank_in_query.max()) + 1):   # loop over record rounds (a few: levels of gain)
        sel = rank_in_query == r
        K = np.ones(g.n_queries, dtype=np.int64)
        K[rq[sel]] = rk[sel]
        dcg = _expected_dcg_at(g, m, K, disc)
        sums[rq[sel]] += divide(dcg[rq[sel]], ri[sel])
    count = np.bincount(rq, minlength=g.n_queries)
    out = divide(sums, count)
    return np.where(g.judged.count_at_least(m["rel"]) > 0, out, 0.0)


FAMILIES = [
    MeasureFamily("Rndcg", "nDCG averaged at the ranks where the ideal gain changes (trec_eval Rndcg)",
                  {"rel": REL, **DCG_PARAMS}, "none", rndcg, gain_preference, normalize=normalize_dcg_spelling,
                  value_range=(0.0, 1.0),
                  trec=(TrecName("Rndcg", "param", sets=("gains",), bind=trec_gains, show=show_gains),)),
]
