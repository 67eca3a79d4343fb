"""NDCGRel (trec_eval ``ndcg_rel``): nDCG averaged over the relevant documents, like AP averages precision.

trec_eval's definition (m_ndcg_rel.c): with P judged documents of positive gain and H+ retrieved ones,
``(1/P) [Σ_{i: gain_i > 0} DCG@i / IDCG@min(i, P) + (P - H+) DCG / IDCG]``, where DCG@i sums the
retrieved gains up to rank i and IDCG@i the ideal gains (the judged gains sorted descending).

Tie-aware (docs/maths.md, "nDCG averaged over relevant documents"): the weights ``w_i = 1/IDCG@min(i, P)``
are fixed per position (one number from rank P on), so the mean is ``Σ_i w_i E[b_i DCG@i]``
(b: positive gain) plus a linear term. At offset j of a tie after t items, with p positive items of total gain G among n,
``E[b_i DCG@i] = (p/n) E[DCG@t] + κ (PD(t+j-1) - PD(t)) + (G/n) D(t+j)``, ``κ = G (p-1) / (n (n-1))``
(fact 2: the gain of another item of the tie at an earlier offset), with PD the prefix sums of the
discount. Summed over a tie's offsets this needs per-position prefix sums of ``w``, ``w PD`` and ``w D``.
Moving a higher gain up never lowers the value, so bounds come from gains sorted in each tie.
"""

from __future__ import annotations

import numpy as np

from ..ties.groups import PositionFn, TieStats, position_prefix, within_query_exclusive_cumsum
from ._common import divide
from ._spec import Measure, MeasureFamily
from ._trec import TrecName
from .dcg import (DCG_PARAMS, discount_function, gain_preference, ideal_dcg, ideal_gains, item_gains,
                  normalize_dcg_spelling, ratio_gains, show_gains, trec_gains)

__all__ = ["FAMILIES"]


def _ideal_dcg_by_rank(g: TieStats, m: Measure, disc: PositionFn
                       ) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """(IDCG@1, IDCG@2, ... up to IDCG@reach, flat by query; each query's offset there; reach per query),
    with reach = min(P, list length) the ideal ranks a weight ``1 / IDCG@min(i, P)`` can use; and P."""
    q, gain, count = ideal_gains(g, m, scaled=True)
    P = np.bincount(q, weights=count, minlength=g.n_queries).astype(np.int64)
    reach = np.minimum(P, g.lengths)
    flat_q = np.repeat(q, count)
    flat_gain = np.repeat(gain, count)
    start = np.searchsorted(flat_q, np.arange(g.n_queries))
    rank = np.arange(len(flat_q)) - start[flat_q]     # 0-based ideal rank within the query
    use = rank < reach[flat_q]
    flat_q, flat_gain, rank = flat_q[use], flat_gain[use], rank[use]
    D = position_prefix(disc, int(g.lengths.max()) + 1)
    disc_at = (D[rank + 1] - D[rank]).astype(np.float64)
    first = np.searchsorted(flat_q, np.arange(g.n_queries))
    idcg = within_query_exclusive_cumsum(flat_gain * disc_at, flat_q, first) + flat_gain * disc_at
    return idcg, first, reach, P


def _weighted_tie_sums(g: TieStats, m: Measure, disc: PositionFn) -> tuple[tuple, np.ndarray]:
    """Per tie, Σ w_i, Σ w_i PD(i - 1) and Σ w_i D(i) over its positions i (w_i = 1 / IDCG@min(i, P));
    and P per query. From rank ``reach`` on, w is one number per query, so those positions' sums come from
    prefix sums over positions; only the ranks below ``reach`` (at most P per query) are visited one by one."""
    idcg, first, reach, P = _ideal_dcg_by_rank(g, m, disc)
    PD = position_prefix(disc, int(g.lengths.max()) + 1)
    CPD = np.zeros(len(PD) + 1, dtype=PD.dtype)
    np.cumsum(PD, out=CPD[1:])                       # CPD[k] = Σ_{j < k} PD(j)
    q, t, n = g.group_query, g.group_first.astype(np.int64), g.group_size.astype(np.int64)
    last = reach[q] - 1                              # 0-based position from which w stays constant
    has = reach[q] > 0
    w_tail = np.zeros(g.n_groups)
    w_tail[has] = 1.0 / idcg[first[q[has]] + last[has]]
    lo = np.maximum(t, last)
    hi = np.maximum(t + n, lo)
    sums = [w_tail * (hi - lo), w_tail * (CPD[hi] - CPD[lo]).astype(np.float64),
            w_tail * (PD[hi] - PD[lo]).astype(np.float64)]
    # positions below `last`: a weight each
    head = np.where(has, np.clip(last - t, 0, n), 0)
    tie = np.repeat(np.arange(g.n_groups), head)
    pos = np.arange(len(tie)) - np.repeat(np.cumsum(head) - head, head) + t[tie]   # 0-based
    w = 1.0 / idcg[first[q[tie]] + pos]
    for i, v in enumerate((w, w * PD[pos].astype(np.float64), w * (PD[pos + 1] - PD[pos]).astype(np.float64))):
        sums[i] = sums[i] + np.bincount(tie, weights=v, minlength=g.n_groups)
    return tuple(sums), P


def ndcg_rel(g: TieStats, m: Measure) -> np.ndarray:
    disc = discount_function(m)
    (SW, SWPD, SWD), P = _weighted_tie_sums(g, m, disc)
    # gains scaled per query where they reach float64's range (a ratio of gain sums: the same value)
    gains_key, gains, with_query = ratio_gains(g, m)
    G = g.group_sum(gains_key, gains, with_query)
    p = g.group_sum(("positive_gain", m["gain"], repr(m["gains"])), _positive_gain(m))
    n = g.group_size.astype(np.float64)
    t = g.group_first
    PD = position_prefix(disc, int(g.lengths.max()) + 1)
    tie_dcg = G / n * (PD[t + g.group_size] - PD[t]).astype(np.float64)   # expected DCG of each tie
    dcg_before = within_query_exclusive_cumsum(tie_dcg, g.group_query, g.query_groups[:-1])
    kappa = divide(G * (p - 1), n * (n - 1))
    per_tie = p / n * dcg_before * SW + kappa * (SWPD - PD[t].astype(np.float64) * SW) + G / n * SWD
    total = np.bincount(g.group_query, weights=per_tie, minlength=g.n_queries)
    H = np.bincount(g.group_query, weights=p, minlength=g.n_queries)
    dcg = np.bincount(g.group_query, weights=tie_dcg, minlength=g.n_queries)
    last = np.zeros(g.n_queries)
    has = P > 0
    if has.any():
        idcg = _total_idcg(g, m, disc)
        last[has] = (P[has] - H[has]) * dcg[has] / idcg[has]
    return divide(total + last, P)


def _positive_gain(m: Measure):
    def positive(x: np.ndarray, _q: np.ndarray | None) -> np.ndarray:
        with np.errstate(over="ignore"):   # an exp2 gain beyond float64 is positive (inf)
            return item_gains(m, x) > 0
    return positive


def _total_idcg(g: TieStats, m: Measure, disc: PositionFn) -> np.ndarray:
    key, gains, _with_query = ratio_gains(g, m)
    return ideal_dcg(g.judged, key + ("custom",) if callable(m["discount"]) else key, gains, disc, None)


FAMILIES = [
    MeasureFamily("NDCGRel", "nDCG averaged over the relevant documents, at each one's rank (trec_eval ndcg_rel)",
                  DCG_PARAMS, "none", ndcg_rel, gain_preference, normalize=normalize_dcg_spelling, aliases=(("ndcg_rel", {}),),
                  value_range=(0.0, 1.0),
                  trec=(TrecName("ndcg_rel", "param", sets=("gains",), bind=trec_gains, show=show_gains),)),
]
