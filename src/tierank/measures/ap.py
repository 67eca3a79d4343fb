"""Average precision (AP, AP@k) and weighted AP (WAP@k), with the three denominators.

One kernel serves both: with item weights ``w`` (AP: w = b; WAP: w = grade * b) the numerator is
``Σ_{i<=K} b_i G_i / i`` with ``G_i = w_1 + ... + w_i`` (docs/maths.md, section
"Average precision"). Per position ``i = t_{c-1} + j`` of group ``c``:

    E[b_i G_i] = (r_c/n_c) (G_{c-1} + mu_c (1 + (j-1)(r_c-1)/(n_c-1))),   mu_c = W_c / r_c

and over ``s`` slots of a group (docs/maths.md, "Computing them"): ``(r/n)[(G_{c-1} + mu) A_0 + mu (r-1)/(n-1) A_1]`` with
``A_0 = Σ_{j<=s} 1/(t+j)`` and ``A_1 = Σ_{j<=s} (j-1)/(t+j) = s - (t+1) A_0``.

For ``denom='retrieved'`` and a cutoff inside a group the ratio is averaged exactly by conditioning on
the number X of relevant items of the cut group inside the top k, X ~ Hypergeometric(n_c, r_c, m).
"""

from __future__ import annotations

import math

import numpy as np

from ..ties.expectations import hypergeometric_expectation, hypergeometric_support
from ..ties.groups import TieStats, position_prefix, position_sum
from ._common import REL, binary_preference, denom_param, divide, grade_shifts, unscaled
from ._spec import Measure, MeasureFamily
from ._trec import TREC_CUTOFFS, TrecName


def _fns(m: Measure, shift: np.ndarray | None = None):
    """(key of b, b(grades), key of w, w(grades, query)) for AP (w = b) or WAP (w = grade * b, times the
    query's 2**-shift when ``shift`` is given: grades near float64's largest, :func:`grade_shifts`)."""
    rel = m["rel"]

    def b(x: np.ndarray, _q: np.ndarray | None = None) -> np.ndarray:
        return (x >= rel).astype(np.float64)

    if m.name == "AP":
        return ("b", rel), b, ("b", rel), b

    def w(x: np.ndarray, q: np.ndarray | None = None) -> np.ndarray:
        weight = np.maximum(x, 0.0) * (x >= rel)
        return weight if shift is None else np.ldexp(weight, -shift[q])

    return ("b", rel), b, ("w", rel) if shift is None else ("w", rel, "scaled"), w


def _shift(g: TieStats, m: Measure) -> np.ndarray | None:
    """WAP's per-query scale of the grades (None: none needed, and always for AP, whose weights are 0/1).
    WAP is linear in the weights, so its value is computed on scaled weights and scaled back."""
    return None if m.name == "AP" else grade_shifts(g)


def harmonic(ranks: np.ndarray) -> np.ndarray:
    """1/i at 1-based ranks i, a position function (``ranks`` is overwritten)."""
    return np.divide(1.0, ranks, out=ranks)


def _slot_sums(t: np.ndarray, s: np.ndarray) -> tuple[np.ndarray, np.ndarray | None]:
    """A_0 = Σ_{j=1}^{s} 1/(t+j) and A_1 = Σ_{j=1}^{s} (j-1)/(t+j), in extended precision.

    One slot: A_0 = 1/(t+1), A_1 = 0 exactly (singleton groups of fixed orders take this path). A_1 is
    None when no entry has more than one slot (all zero).
    """
    a0 = position_sum(harmonic, t, s)
    many = s > 1
    if not many.any():
        return a0, None
    a1 = np.zeros(len(t))
    tm, sm = t[many], s[many]
    H = position_prefix(harmonic, int((tm + sm).max()))
    a1[many] = (sm - (tm + 1) * (H[tm + sm] - H[tm])).astype(np.float64)
    return a0, a1


class _Groups:
    """Per-group r, R_{c-1}, W, G_{c-1}, mu of one TieStats for one measure."""

    def __init__(self, g: TieStats, m: Measure) -> None:
        shift = _shift(g, m)
        bkey, b, wkey, w = _fns(m, shift)
        self.r = g.group_sum(bkey, b)
        self.R_before = g.before(bkey, b)
        self.W = g.group_sum(wkey, w, shift is not None)
        self.G_before = g.before(wkey, w, shift is not None)
        self.mu = divide(self.W, self.r)
        # n_c; None when every group is one item (fixed orders), where r/n = r and A_1 = 0
        self.n = None if g.all_singletons else g.group_size.astype(np.float64)

    def slots(self, groups: np.ndarray | None, t: np.ndarray, s: np.ndarray) -> np.ndarray:
        """Σ over the first s slots of each group of E[b_i G_i] / i (``groups`` None: every group)."""
        a0, a1 = _slot_sums(t, s)

        def pick(v: np.ndarray) -> np.ndarray:
            return v if groups is None else v[groups]

        r, mu = pick(self.r), pick(self.mu)
        out = pick(self.G_before) + mu
        out *= a0
        if a1 is not None:   # some group has two slots or more (A_1 = 0 otherwise)
            n = pick(self.n)
            out += mu * divide(r - 1, n - 1) * a1
        out *= r if self.n is None else r / pick(self.n)
        return out


def _numerator(g: TieStats, m: Measure, K: np.ndarray) -> np.ndarray:
    """E[Σ_{i<=K} b_i G_i / i] per query (K may be 0)."""
    grp = g.memo(("ap_groups", m.name, m["rel"]), lambda: _Groups(g, m))
    full = g.memo(("ap_full", m.name, m["rel"]),
                  lambda: grp.slots(None, g.group_first, g.group_size))
    out = np.zeros(g.n_queries)
    ok = K > 0
    cut = g.cut(np.where(ok, K, 1))
    val = g.sum_before_cut(full, cut) + grp.slots(cut.group, cut.t, cut.m)
    out[ok] = val[ok]
    return out


def average_precision(g: TieStats, m: Measure) -> np.ndarray:
    K = g.clamp(m.cutoff)
    denom = m["denom"]
    if denom != "retrieved":
        R = g.judged.count_at_least(m["rel"])
        D = R if denom == "R" or m.cutoff is None else np.minimum(R, float(m.cutoff))
        return unscaled(divide(_numerator(g, m, K), D), _shift(g, m))
    grp = g.memo(("ap_groups", m.name, m["rel"]), lambda: _Groups(g, m))
    cut = g.cut(K)
    r, Rb = grp.r[cut.group], grp.R_before[cut.group]
    # Cut on a group boundary: H_K = R_c is order-free.
    out = divide(_numerator(g, m, K), Rb + r)
    q = np.flatnonzero(cut.m < cut.n)
    if q.size == 0:
        return unscaled(out, _shift(g, m))
    c, t, mm, n = cut.group[q], cut.t[q], cut.m[q], cut.n[q]
    full = g.memo(("ap_full", m.name, m["rel"]),
                  lambda: grp.slots(None, g.group_first, g.group_size))
    S = g.sum_before_cut(full, cut)[q]
    A0, A1 = _slot_sums(t, mm)
    A1 = np.zeros(len(t)) if A1 is None else A1
    mf = mm.astype(np.float64)
    mu, Gb, Rq = grp.mu[c], grp.G_before[c], Rb[q]

    def value(x: np.ndarray, idx: np.ndarray) -> np.ndarray:
        # B(x) = (x/m) [ (G_{c-1} + mu) A_0 + mu (x-1)/(m-1) A_1 ]      (docs/maths.md, "Average precision")
        second = divide((x - 1) * A1[idx], mf[idx] - 1)
        B = (x / mf[idx]) * ((Gb[idx] + mu[idx]) * A0[idx] + mu[idx] * second)
        return divide(S[idx] + B, Rq[idx] + x)

    out[q] = hypergeometric_expectation(n, r[q], mm, value)
    return unscaled(out, _shift(g, m))


def retrieved_bounds(g: TieStats, opt: TieStats, pess: TieStats, m: Measure,
                     lower: np.ndarray, upper: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Exact min / max of AP or WAP with ``denom='retrieved'`` when k cuts a group (docs/maths.md, "Bounds").

    For each feasible number x of relevant items of the cut group inside the top k: best = earlier
    groups optimistic, the x best relevant items first; worst = earlier groups pessimistic, the x
    lowest-weight relevant items in the last x slots, ascending. Other queries keep the optimistic /
    pessimistic values passed in. Cost O(x^2) per cut query (a loop over x, vectorised across queries).
    """
    if m["denom"] != "retrieved":
        return lower, upper
    K = g.clamp(m.cutoff)
    cut = g.cut(K)
    q = np.flatnonzero(cut.m < cut.n)
    if q.size == 0:
        return lower, upper
    lower, upper = lower.copy(), upper.copy()
    grp = g.memo(("ap_groups", m.name, m["rel"]), lambda: _Groups(g, m))
    c, t, mm, n = cut.group[q], cut.t[q], cut.m[q], cut.n[q]
    r = grp.r[c].astype(np.int64)
    Rb, Gb = grp.R_before[c], grp.G_before[c]
    lo, hi = hypergeometric_support(n, r, mm)
    t_all = np.zeros(g.n_queries, dtype=np.int64)
    t_all[q] = t
    S_best, S_worst = _numerator(opt, m, t_all)[q], _numerator(pess, m, t_all)[q]
    # weights inside each cut group: non-relevant first, then relevant ascending
    shift = _shift(g, m)
    _, bfn, _, wfn = _fns(m, shift)
    ptr, grades = g.group_grades(c)
    seg = np.repeat(np.arange(len(q)), np.diff(ptr))
    b, w = bfn(grades), wfn(grades, q[seg])
    ws = w[np.lexsort((w, b, seg))]
    cw = np.concatenate(([0.0], np.cumsum(ws)))
    rel_start, rel_end = ptr[1:] - r, ptr[1:]
    best = np.where(lo == 0, divide(S_best, Rb), -np.inf)
    worst = np.where(lo == 0, divide(S_worst, Rb), np.inf)
    best_sum = np.zeros(len(q))
    for x in range(1, int(hi.max(initial=0)) + 1):  # loop over the count x, vectorised across queries
        a = np.flatnonzero(hi >= x)
        G_top = cw[rel_end[a]] - cw[rel_end[a] - x]           # the x largest weights
        best_sum[a] += (Gb[a] + G_top) / (t[a] + x)
        ok = a[lo[a] <= x]
        best[ok] = np.maximum(best[ok], (S_best[ok] + best_sum[ok]) / (Rb[ok] + x))
        if ok.size == 0:
            continue
        # worst(x): relevant items in slots m-x+1..m, lowest weights first
        rows = np.repeat(ok, x)
        ls = np.tile(np.arange(1, x + 1), len(ok))
        G_low = cw[rel_start[rows] + ls] - cw[rel_start[rows]]
        terms = (Gb[rows] + G_low) / (t[rows] + mm[rows] - x + ls)
        sums = np.add.reduceat(terms, np.arange(0, len(terms), x))
        worst[ok] = np.minimum(worst[ok], (S_worst[ok] + sums) / (Rb[ok] + x))
    lower[q] = unscaled(worst, None if shift is None else shift[q])
    upper[q] = unscaled(best, None if shift is None else shift[q])
    return lower, upper


def _wap_preference(m: Measure, grades: np.ndarray) -> list[np.ndarray]:
    b = (grades >= m["rel"]).astype(np.float64)
    return [b, np.maximum(grades, 0.0) * b]


_wap_preference.params = ("rel",)  # type: ignore[attr-defined]

def _ap_of_gmap(g: TieStats, m: Measure) -> np.ndarray:
    """GMAP's value per query: AP (denom='R', no cutoff) at the same relevance level."""
    return average_precision(g, FAMILIES[0].bind({"rel": m["rel"]}, None, str(m)))


FAMILIES = [
    MeasureFamily("AP", "average precision (trec_eval map / map_cut with the default denom='R')",
                  {"rel": REL, "denom": denom_param("R")}, "optional", average_precision, binary_preference,
                  aliases=(("map", {}), ("average_precision", {})), exact_bounds=retrieved_bounds, value_range=(0.0, 1.0),
                  trec=(TrecName("map"), TrecName("map_cut", "cutoffs", TREC_CUTOFFS)), reads="top_k"),
    # trec_eval's gm_map: AP per query, the geometric mean over queries (docs/maths.md, "Geometric means")
    MeasureFamily("GMAP", "geometric mean of AP over queries (trec_eval gm_map; values floored at 1e-5)",
                  {"rel": REL}, "none", _ap_of_gmap, binary_preference, aggregate="gm",
                  aliases=(("gm_map", {}),), value_range=(0.0, 1.0),
                  trec=(TrecName("gm_map", per_query=False),)),
    MeasureFamily("WAP", "weighted average precision (multi-label hashing): grades weight the precision",
                  {"rel": REL, "denom": denom_param("retrieved")}, "required", average_precision,
                  _wap_preference, exact_bounds=retrieved_bounds, value_range=(0.0, math.inf), reads="top_k"),
]
