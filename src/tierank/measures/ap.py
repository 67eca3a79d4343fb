"""Average precision (AP, AP@k) and weighted AP (WAP@k), with the three denominators.

One kernel serves both: with item weights ``w`` (AP: w = b; WAP: w = grade * b) the numerator is
``Σ_{i<=K} b_i G_i / i`` with ``G_i = w_1 + ... + w_i`` (tie_math.md §1, "AP@k fixed denominator" and
"WAP@k"). Per position ``i = t_{c-1} + j`` of tie ``c``:

    E[b_i G_i] = (r_c/n_c) (G_{c-1} + mu_c (1 + (j-1)(r_c-1)/(n_c-1))),   mu_c = W_c / r_c

For ``denom='retrieved'`` and a cutoff inside a tie the ratio is averaged exactly by conditioning on the
number X of relevant items of the cut tie inside the top k, X ~ Hypergeometric(n_c, r_c, m).
"""

from __future__ import annotations

import numpy as np

from ..ties.expectations import hypergeometric_expectation, hypergeometric_support
from ..ties.groups import TieGroups, segment_sum
from ._common import REL, binary_preference, denom_param, divide, positive_grades, relevant
from ._spec import Measure, MeasureFamily


def _weights(g: TieGroups, m: Measure) -> tuple[object, np.ndarray, object, np.ndarray]:
    """(key of b, b, key of w, w) for this measure."""
    bkey, b = relevant(g, m)
    if m.name == "AP":
        return bkey, b, bkey, b
    wkey = ("w", m["rel"])
    return bkey, b, wkey, g.memo(wkey, lambda: positive_grades(g) * b)


def _position_terms(g: TieGroups, bkey, b, wkey, w) -> np.ndarray:
    """E[b_i G_i] / i for every ranked item (memoised per weight)."""
    def build() -> np.ndarray:
        r = g.tie_sum_of(bkey, b)
        W = g.tie_sum_of(wkey, w)
        G_before = g.before_tie_of(wkey, w)
        mu = divide(W, r)
        n = g.tie_size.astype(np.float64)
        c = g.item_tie
        j = (g.pos - g.tie_first[c]).astype(np.float64)          # j - 1
        spread = divide(j * (r[c] - 1), n[c] - 1)                 # (j-1)(r-1)/(n-1); 0 when n = 1
        expect = (r[c] / n[c]) * (G_before[c] + mu[c] * (1.0 + spread))
        return expect / (g.pos + 1.0)
    return g.memo(("ap_terms", wkey), build)


def _numerator(g: TieGroups, m: Measure, K: np.ndarray) -> np.ndarray:
    bkey, b, wkey, w = _weights(g, m)
    return g.top_sum(_position_terms(g, bkey, b, wkey, w), K)


def average_precision(g: TieGroups, m: Measure) -> np.ndarray:
    K = g.clamp(m.cutoff)
    denom = m["denom"]
    if denom != "retrieved":
        R = g.judged_count(m["rel"])
        D = R if denom == "R" or m.cutoff is None else np.minimum(R, float(m.cutoff))
        return divide(_numerator(g, m, K), D)
    bkey, b, wkey, w = _weights(g, m)
    terms = _position_terms(g, bkey, b, wkey, w)
    cut = g.cut(K)
    r = g.tie_sum_of(bkey, b)[cut.tie]
    R_before = g.before_tie_of(bkey, b)[cut.tie]
    # Cut on a tie boundary: H_K = R_c is order-free.
    out = divide(g.top_sum(terms, K), R_before + r)
    inside = np.flatnonzero(cut.m < cut.n)
    if inside.size == 0:
        return out
    q = inside
    t, mm, n, rq, Rb = cut.t[q], cut.m[q], cut.n[q], r[q], R_before[q]
    W = g.tie_sum_of(wkey, w)[cut.tie[q]]
    Gb = g.before_tie_of(wkey, w)[cut.tie[q]]
    mu = divide(W, rq)
    start = g.qptr[q] + t
    S = segment_sum(terms, g.qptr[q], start)
    inv = 1.0 / (g.pos + 1.0)
    A0 = segment_sum(inv, start, start + mm)
    A1 = segment_sum((g.pos - g.tie_first[g.item_tie]) * inv, start, start + mm)
    mf = mm.astype(np.float64)

    def value(x: np.ndarray, idx: np.ndarray) -> np.ndarray:
        # B(x) = (x/m) [ (G_{c-1} + mu) A_0 + mu (x-1)/(m-1) A_1 ]      (tie_math.md §1)
        second = divide((x - 1) * A1[idx], mf[idx] - 1)
        B = (x / mf[idx]) * ((Gb[idx] + mu[idx]) * A0[idx] + mu[idx] * second)
        return divide(S[idx] + B, Rb[idx] + x)

    out[q] = hypergeometric_expectation(n, rq, mm, value)
    return out


def retrieved_bounds(g: TieGroups, opt: TieGroups, pess: TieGroups, m: Measure,
                     lower: np.ndarray, upper: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Exact min / max of AP or WAP with ``denom='retrieved'`` when k cuts a tie (tie_math.md §2).

    For each feasible number x of relevant items of the cut tie inside the top k: best = earlier ties
    optimistic, the x best relevant items first; worst = earlier ties pessimistic, the x lowest-weight
    relevant items in the last x slots, ascending. Other queries keep the optimistic / pessimistic
    values passed in.
    """
    if m["denom"] != "retrieved":
        return lower, upper
    K = g.clamp(m.cutoff)
    bkey, b, wkey, w = _weights(g, m)
    cut = g.cut(K)
    q = np.flatnonzero(cut.m < cut.n)
    if q.size == 0:
        return lower, upper
    lower, upper = lower.copy(), upper.copy()
    t, mm, n = cut.t[q], cut.m[q], cut.n[q]
    r = g.tie_sum_of(bkey, b)[cut.tie[q]].astype(np.int64)
    Rb = g.before_tie_of(bkey, b)[cut.tie[q]]
    Gb = g.before_tie_of(wkey, w)[cut.tie[q]]
    lo, hi = hypergeometric_support(n, r, mm)
    start = g.qptr[q] + t

    def prefix_terms(h: TieGroups) -> np.ndarray:
        _, hb, _, hw = _weights(h, m)
        return segment_sum(_position_terms(h, bkey, hb, wkey, hw), g.qptr[q], start)

    S_best, S_worst = prefix_terms(opt), prefix_terms(pess)
    w_opt = _weights(opt, m)[3]
    w_pess = _weights(pess, m)[3]
    cw_pess = np.concatenate(([0.0], np.cumsum(w_pess)))
    rel_start = start + n - r            # pessimistic order: the r relevant items close the tie
    best = np.where(lo == 0, divide(S_best, Rb), -np.inf)
    worst = np.where(lo == 0, divide(S_worst, Rb), np.inf)
    best_sum = np.zeros(len(q))
    G_top = np.zeros(len(q))
    for x in range(1, int(hi.max(initial=0)) + 1):  # loop over the count x, vectorised across queries
        a = np.flatnonzero(hi >= x)
        G_top[a] += w_opt[start[a] + x - 1]
        best_sum[a] += (Gb[a] + G_top[a]) / (t[a] + x)
        ok = a[lo[a] <= x]
        best[ok] = np.maximum(best[ok], (S_best[ok] + best_sum[ok]) / (Rb[ok] + x))
        # worst(x): relevant items in slots m-x+1..m, lowest weights first
        ls = np.arange(1, x + 1)
        rows = np.repeat(ok, x)
        l_all = np.tile(ls, len(ok))
        G_low = cw_pess[rel_start[rows] + l_all] - cw_pess[rel_start[rows]]
        terms = (Gb[rows] + G_low) / (t[rows] + mm[rows] - x + l_all)
        sums = np.add.reduceat(terms, np.arange(0, len(terms), x)) if len(terms) else np.zeros(0)
        worst[ok] = np.minimum(worst[ok], (S_worst[ok] + sums) / (Rb[ok] + x))
    lower[q] = worst
    upper[q] = best
    return lower, upper


def _ap_preference(m: Measure, grades: np.ndarray) -> list[np.ndarray]:
    return binary_preference(m, grades)


def _wap_preference(m: Measure, grades: np.ndarray) -> list[np.ndarray]:
    b = (grades >= m["rel"]).astype(np.float64)
    return [b, np.maximum(grades, 0.0) * b]


FAMILIES = [
    MeasureFamily("AP", "average precision (trec_eval map / map_cut with the default denom='R')",
                  {"rel": REL, "denom": denom_param("R")}, "optional", average_precision, _ap_preference,
                  aliases=(("map", {}), ("average_precision", {})), exact_bounds=retrieved_bounds),
    MeasureFamily("WAP", "weighted average precision (multi-label hashing): grades weight the precision",
                  {"rel": REL, "denom": denom_param("retrieved")}, "required", average_precision,
                  _wap_preference, exact_bounds=retrieved_bounds),
]
