"""Expected reciprocal rank (ERR, ERR@k; Chapelle et al. 2009).

``R_i = (2^{g_i} - 1) / 2^{gmax}``, ``x_i = 1 - R_i`` (computed without forming ``2^g``: grades in the
thousands are exact too). Tie ``c`` contributes
``S_c Σ_{j=1}^{s_c} (ē_{j-1} - ē_j) / (t_{c-1} + j)`` where ``S_c`` is the product of ``x`` over the earlier
ties and ``ē_j`` the mean of the elementary symmetric polynomial of the tie's ``x`` (docs/maths.md, section "Expected reciprocal rank";
ERR@k). Only positive-grade items enter the recurrence; grade-0 items (x = 1) are mixed in with
hypergeometric weights. The loops run over items of a tie and over offsets, vectorised across ties:
quadratic in a tie of many documents of positive grade, so the family declares its ``cost`` and a query
beyond the budget (``tie_cost_budget``) is refused up front.
"""

from __future__ import annotations

import numpy as np

from ..ties.groups import TieStats
from ._common import exact_products, grade_preference
from ._spec import Measure, MeasureFamily, Param, QueryError, real_param

MAX_GRADE = Param(None, real_param("max_grade", positive=True, allow_none=True),
                  "gmax of R = (2^g - 1) / 2^gmax; None: the largest judged grade of the query")

_BATCH_CELLS = 1 << 22  # cells of the per-batch DP tables (bounds peak memory)


class GradeAboveMax(QueryError):
    """A judged grade exceeds ``max_grade``; carries the query index for the caller's message."""

    def __init__(self, query: int, grade: float, max_grade: float) -> None:
        super().__init__(f"grade {grade:g} is above max_grade={max_grade:g}", query)


def max_grades(g: TieStats, m: Measure) -> np.ndarray:
    """gmax per query; raises GradeAboveMax when a judged grade is above an explicit max_grade."""
    top = g.memo("max_grade", g.judged.max_grade)
    if m["max_grade"] is None:
        return top
    bad = np.flatnonzero(top > m["max_grade"])
    if bad.size:
        raise GradeAboveMax(int(bad[0]), float(top[bad[0]]), float(m["max_grade"]))
    return np.full(g.n_queries, float(m["max_grade"]))


def _stop_terms(grades: np.ndarray, gmax: np.ndarray, want_log: bool) -> np.ndarray:
    """x = 1 - R = 1 - (2^g - 1) / 2^gmax per grade (or log x), without forming 2^g or 2^gmax.

    ``x = (1 - 2^d) + 2^-gmax`` with ``d = g - gmax <= 0``: ``1 - 2^d`` is exact for integer d and taken
    as ``-expm1(d ln 2)`` for fractional d (no cancellation). Grades <= 0 (non-relevant, unjudged) have
    x = 1. When ``2^-gmax`` underflows at g = gmax, log x is ``-gmax ln 2`` exactly.
    """
    pos = np.maximum(grades, 0.0)
    d = np.minimum(pos - gmax, 0.0)
    whole = d == np.round(d)
    a = np.where(whole, 1.0 - np.exp2(np.where(whole, d, 0.0)), -np.expm1(d * np.log(2.0)))
    x = a + np.exp2(-gmax)
    x[pos <= 0] = 1.0
    if not want_log:
        return x
    out = np.log(np.where(x > 0, x, 1.0))
    zero = x <= 0
    out[zero] = -gmax[zero] * np.log(2.0)
    return out


def expected_reciprocal_rank(g: TieStats, m: Measure) -> np.ndarray:
    K = g.clamp(m.cutoff)
    gmax = max_grades(g, m)

    # S_c = prod of x over earlier groups of the query, in log space
    S = np.exp(g.before(("logx", m["max_grade"]), lambda x, q: _stop_terms(x, gmax[q], True), with_query=True))
    t = g.group_first
    s = np.minimum(g.group_size, K[g.group_query] - t)
    groups = np.flatnonzero(s > 0)
    ptr, grades = g.group_grades(groups)
    if not g.all_singletons and len(grades):
        # the recurrence below takes each tie's items in a canonical order (by grade): its rounding
        # then does not depend on the input order of tied items
        seg = np.repeat(np.arange(len(groups)), np.diff(ptr))
        if (np.diff(grades)[np.diff(seg) == 0] < 0).any():
            grades = grades[np.lexsort((grades, seg))]
    item_query = np.repeat(g.group_query[groups], np.diff(ptr))
    positive = grades > 0
    x_pos = _stop_terms(grades[positive], gmax[item_query[positive]], False)
    p_count = np.add.reduceat(positive.astype(np.int64), ptr[:-1]) if len(groups) else np.zeros(0, np.int64)
    p_first = np.concatenate(([0], np.cumsum(p_count)))[:-1]
    contrib = np.zeros(len(groups))
    order = np.argsort(s[groups], kind="stable")
    order = order[p_count[order] > 0]   # a tie with no positive grade adds exactly 0 (its ē stays 1): skipped
    s_sorted = s[groups][order]
    start = 0
    while start < order.size:  # batches of groups sorted by s: rows x (s + 1) cells stay bounded
        cost = np.arange(1, order.size - start + 1) * (s_sorted[start:] + 1)
        stop = start + max(1, int(np.searchsorted(cost, _BATCH_CELLS, side="right")))
        batch = order[start:stop]
        gb = groups[batch]
        contrib[batch] = _tie_contributions(s[gb], g.group_size[gb], p_count[batch], p_first[batch],
                                            x_pos, t[gb])
        start = stop
    return np.bincount(g.group_query[groups], weights=S[groups] * contrib, minlength=g.n_queries)


def _cost(g: TieStats, m: Measure, bounds: bool) -> tuple[np.ndarray, np.ndarray]:
    """The family's ``cost``: per tie of more than one document with a positive grade within the cutoff,
    the work of :func:`_tie_contributions`, ``(p + s) (min(p, s) + 1)`` for p documents of positive grade
    and s positions within the cutoff (the recurrence over the p positive ones, then the mixing over the
    s offsets, each row min(p, s) + 1 wide), times 2 (measured: about twice the time of an IPrec unit)."""
    K = g.clamp(m.cutoff)
    s = np.minimum(g.group_size, K[g.group_query] - g.group_first)
    p = g.group_sum("err_positive", lambda x, _q: x > 0)
    ties = np.flatnonzero((g.group_size > 1) & (s > 0) & (p > 0))
    p, s = p[ties].astype(np.int64), s[ties]
    return ties, exact_products(2, p + s, np.minimum(p, s) + 1)


def _tie_contributions(s: np.ndarray, n: np.ndarray, p: np.ndarray, p_first: np.ndarray,
                       x_pos: np.ndarray, t: np.ndarray) -> np.ndarray:
    """Σ_{j<=s} (ē_{j-1} - ē_j) / (t + j) for a batch of ties (one row each)."""
    rows = len(s)
    smax = int(s.max())
    A = int(min(p.max(initial=0), smax))
    # ē^{(A)}_a over the positive items only: convex recurrence (docs/maths.md, "Expected reciprocal rank")
    E = np.zeros((rows, A + 1))
    E[:, 0] = 1.0
    a_idx = np.arange(1, A + 1, dtype=np.float64)
    for q in range(1, int(p.max(initial=0)) + 1):
        live = np.flatnonzero(p >= q)
        xq = x_pos[p_first[live] + q - 1]
        top = min(q, A)
        a = a_idx[:top]
        old = E[live]
        E[live, 1:top + 1] = ((q - a) / q) * old[:, 1:top + 1] + (a / q) * xq[:, None] * old[:, 0:top]
    # mix in the grade-0 items: ē_j = Σ_a Hyp(a; n, p, j) ē^{(A)}_a, Hyp by its recurrence in j
    H = np.zeros((rows, A + 1))
    H[:, 0] = 1.0
    nf, pf = n.astype(np.float64), p.astype(np.float64)
    a_all = np.arange(A + 1, dtype=np.float64)
    prev = np.ones(rows)             # ē_0 = 1
    total = np.zeros(rows)
    for j in range(1, smax + 1):     # loop over offsets j inside the ties
        live = s >= j
        jm = j - 1.0
        left = np.where(live, nf - jm, 1.0)[:, None]   # items not yet drawn (> 0 on live rows)
        stay = H * ((nf - pf)[:, None] - (jm - a_all)) / left
        move = np.zeros_like(H)
        move[:, 1:] = H[:, :-1] * (pf[:, None] - a_all[:-1]) / left
        H = np.where(live[:, None], np.maximum(stay + move, 0.0), H)
        # a sequential sum (the last of a cumulative one): the zero columns a wider tie elsewhere in the
        # batch adds at the end cannot change its bits, as np.sum's pairwise order would
        cur = np.cumsum(H * E, axis=1)[:, -1]
        total += np.where(live, (prev - cur) / (t + j), 0.0)
        prev = np.where(live, cur, prev)
    return total


FAMILIES = [
    MeasureFamily("ERR", "expected reciprocal rank (cascade model)", {"max_grade": MAX_GRADE}, "optional",
                  expected_reciprocal_rank, grade_preference, value_range=(0.0, 1.0), reads="top_k",
                  cost=_cost),
]
