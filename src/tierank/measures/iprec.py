"""Interpolated precision at recall levels: IPrec (trec_eval ``iprec_at_recall``, ir-measures ``IPrec``)
and their mean IPrecAvg (trec_eval ``11pt_avg``).

trec_eval's definition (m_iprec_at_recall.c): with R relevant judged documents and H relevant retrieved,
the level ``x`` becomes the count ``c = round(x R)`` (trec_eval 10 rounds; 9.x took ``floor(x R + 0.9)``,
``rounding='trec9'``); the value is 0 when ``c > H``, else ``max_{j >= max(c, 1)} j / pos(j)``, the best
precision at or after the ``c``-th relevant document (``pos(j)``: rank of the j-th relevant one).

Tie-aware (docs/maths.md, "Interpolated precision"): the j-th relevant document's index is fixed by its
tie (the relevant documents of a tie are numbers ``a+1 .. a+r`` whatever the order), only its position
inside the tie is random, and ties are independent. So ``P(max <= x) = Π_ties P_tie(x)``. The worst
arrangement (relevant documents last in every tie) gives L, the smallest value the maximum can take, so
only ties whose best value (relevant first) exceeds L, and only their values above L, matter. For a tie
with one relevant document, ``P_tie`` at each of its values is a count of offsets; with several, it is
the share of the tie's ``C(n, r)`` placements with every constrained ``(a+k) / (t+o_k) <= x``: in closed
form for two, three and four relevant documents (sums of polynomials in one offset), and for more by a
dynamic programme over the ``r`` order statistics (``O(r (n - r + 1))`` per value). Every tie and value is
computed at once (once per tie for all the levels it lies wholly above), and the distribution of the
maximum is swept in ascending order, in logarithms, within each (query, level). The work is about (values
above L) x r (n - r + 1) for ties of five or more relevant documents: the family declares it (``cost``),
and a query beyond the budget (``tie_cost_budget``) raises an InputError naming the query and the tie
(never an approximation), before the work starts. Ties that hold only relevant or only non-relevant
documents, and fixed orders, cost nothing: every position is known. Moving a relevant document up never lowers any
interpolated precision, so the best and worst orderings are relevant-first and relevant-last.
"""

from __future__ import annotations

import numpy as np

from ..ties.groups import TieStats
from ._common import REL, binary_preference, exact_products
from ._spec import Measure, MeasureFamily, Param, choice_param
from ._trec import TrecName, parse_doubles

__all__ = ["FAMILIES"]

#: dynamic-programme cells computed at once
CHUNK = 4_000_000
#: values (at most) per block of queries whose expectations are computed together
VALUE_BLOCK = 1 << 20

ELEVEN = (0.0, 0.1, 0.2, 0.3, 0.4, 0.5, 0.6, 0.7, 0.8, 0.9, 1.0)


def _cut_counts(R: np.ndarray, levels: np.ndarray, rounding: str) -> np.ndarray:
    """(queries, levels) counts c: trec_eval 10's lround(x R), or 9.x's (long)(x R + 0.9)."""
    x = levels[None, :] * R[:, None]
    return np.floor(x + (0.9 if rounding == "trec9" else 0.5))


def _known_positions(g: TieStats, r: np.ndarray, r_before: np.ndarray, groups: np.ndarray
                     ) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(query, j, pos) of every relevant item of ``groups``, ties whose relevant positions are known
    (singletons, or ties of relevant items only): item k of the tie is relevant number a+k at t+k."""
    counts = r[groups].astype(np.int64)
    rep = np.repeat(groups, counts)
    k = np.arange(len(rep)) - np.repeat(np.cumsum(counts) - counts, counts) + 1
    return g.group_query[rep], r_before[rep] + k, g.group_first[rep] + k


def _in_order(query: np.ndarray, j: np.ndarray) -> bool:
    """Whether the items are sorted by query, then j."""
    dq = np.diff(query)
    return bool(np.all((dq > 0) | ((dq == 0) & (np.diff(j) > 0))))


def _fixed_values(query: np.ndarray, j: np.ndarray, pos: np.ndarray, n_queries: int, cuts: np.ndarray,
                  H: np.ndarray, skip: np.ndarray) -> np.ndarray:
    """Interpolated precision per (query, level) from the known positions of every relevant item
    (queries marked ``skip`` are left at 0: their positions are not all known)."""
    import pandas as pd   # off the import path: only this and _max_mean need it

    out = np.zeros(cuts.shape)
    if not len(j):
        return out
    if not _in_order(query, j):   # the callers list them by query, then j: no sort needed
        order = np.lexsort((j, query))
        query, j, pos = query[order], j[order], pos[order]
    prec = j / pos
    # best precision at or after each relevant item: a reversed cumulative max within each query
    best = pd.Series(prec[::-1]).groupby(query[::-1], sort=False).cummax().to_numpy()[::-1]
    start = np.searchsorted(query, np.arange(n_queries))
    want = np.maximum(cuts, 1)
    ok = (cuts <= H[:, None]) & (H[:, None] > 0) & ~skip[:, None]
    idx = (start[:, None] + want - 1).astype(np.int64)
    out[ok] = best[idx[ok]]
    return out


def _levels_values(g: TieStats, rel: float, rounding: str, levels: tuple) -> np.ndarray:
    """(queries, levels) interpolated precision, cached per level (shared by IPrec and IPrecAvg, and filled
    for every level at once by the family's ``batch``)."""
    cache = g.memo(("iprec", rel, rounding), dict)
    todo = tuple(dict.fromkeys(x for x in levels if x not in cache))
    if todo:
        values = _new_levels(g, rel, rounding, todo)
        cache.update({x: values[:, col] for col, x in enumerate(todo)})
    return np.stack([cache[x] for x in levels], axis=1)


def _new_levels(g: TieStats, rel: float, rounding: str, levels: tuple) -> np.ndarray:
    """:func:`_levels_values` without the cache: known positions where every tie is unmixed, the exact
    expectation (:func:`_expected_values`) in queries with a tie of relevant and non-relevant items."""
    r, r_before, H, cuts, mixed, mixed_query = _setup(g, rel, rounding, levels)
    known = np.flatnonzero((r > 0) & ~mixed_query[g.group_query])
    out = _fixed_values(*_known_positions(g, r, r_before, known), g.n_queries, cuts, H, mixed_query)
    if not mixed.any():
        return out
    expected = _expected_values(g, _pairs(g, r, r_before, cuts, H, mixed_query), H, mixed_query)
    return np.where(mixed_query[:, None], expected, out)


def _setup(g: TieStats, rel: float, rounding: str, levels: tuple) -> tuple:
    """(r and r_before per tie, H per query, the counts c per (query, level), the mixed ties, the queries
    with one)."""
    r, r_before = g.relevant_sum(rel)
    R = g.judged.count_at_least(rel)
    H = np.bincount(g.group_query, weights=r, minlength=g.n_queries)
    cuts = _cut_counts(R, np.asarray(levels, dtype=np.float64), rounding)
    mixed = (r > 0) & (r < g.group_size)
    mixed_query = np.zeros(g.n_queries, dtype=bool)
    mixed_query[g.group_query[mixed]] = True
    return r, r_before, H, cuts, mixed, mixed_query


def _pairs(g: TieStats, r: np.ndarray, r_before: np.ndarray, cuts: np.ndarray, H: np.ndarray,
           mixed_query: np.ndarray) -> dict:
    """The (tie, level) pairs of the queries with mixed ties whose tie can beat L (linear work and memory:
    the expectation's work, :func:`_expected_values`, comes after the cost check, :func:`_cost`).

    The worst arrangement (relevant documents last in every tie) gives L, the smallest value the maximum
    can take; only ties that can beat L, and only their values above L, enter the distribution. Returns
    the ties' indices ``groups`` (every tie with a relevant document in those queries), ``worst`` (L per
    (query, level)), ``ok`` (the cells with a value), and per pair, sorted by cell then tie: ``pair_tie``
    (into ``groups``), ``cell``, ``L`` and ``tie`` = (a, t, n, r, k0)."""
    groups = np.flatnonzero((r > 0) & mixed_query[g.group_query])
    q = g.group_query[groups]
    a, t = r_before[groups].astype(np.int64), g.group_first[groups].astype(np.int64)
    n, k = g.group_size[groups].astype(np.int64), r[groups].astype(np.int64)
    # L per (query, level): the relevant documents at their worst positions, t + n - r + 1 .. t + n
    item = np.repeat(np.arange(len(groups)), k)
    kk = np.arange(len(item)) - np.repeat(np.cumsum(k) - k, k) + 1
    worst = _fixed_values(q[item], a[item] + kk, (t + n - k)[item] + kk, g.n_queries, cuts, H, ~mixed_query)
    first = np.maximum(cuts, 1).astype(np.int64)
    ok = mixed_query[:, None] & (H[:, None] > 0) & (cuts <= H[:, None])
    # the (tie, level) pairs whose tie can beat L: its best value (a + r) / (t + r), relevant first
    levels = cuts.shape[1]
    tie_L = worst[q]                                 # (tie, level)
    keep = ok[q] & ((a + k)[:, None] >= first[q]) & (((a + k) / (t + k))[:, None] > tie_L)
    pair_tie, pair_col = np.nonzero(keep)
    L = tie_L[pair_tie, pair_col]
    cell = q[pair_tie] * levels + pair_col          # (query, level) of each pair
    # pairs by cell, then tie: each cell's values come out together, in one ascending run per tie
    order = np.lexsort((pair_tie, cell))
    pair_tie, cell, L = pair_tie[order], cell[order], L[order]
    k0 = np.maximum(1, first[cell // levels, cell % levels] - a[pair_tie])
    tie = (a[pair_tie], t[pair_tie], n[pair_tie], k[pair_tie], k0)
    return {"groups": groups, "worst": worst, "ok": ok, "pair_tie": pair_tie, "cell": cell, "L": L, "tie": tie}


def _expected_values(g: TieStats, pairs: dict, H: np.ndarray, mixed_query: np.ndarray) -> np.ndarray:
    """E[max_{j >= c} j / pos(j)] per (query, level) of the queries with mixed ties (module docstring),
    from their pairs (:func:`_pairs`)."""
    worst, ok, pair_tie, cell, L, tie = (pairs[k] for k in ("worst", "ok", "pair_tie", "cell", "L", "tie"))
    levels = worst.shape[1]
    _, _, n, k, k0 = tie
    mean = np.zeros(g.n_queries * levels)
    most_values = (k - k0 + 1) * (n - k + 1)   # a pair's values: at most (r-k0+1)(n-r+1)
    for lo, hi in _query_blocks(cell // levels, most_values):   # loop over blocks of queries
        x, delta, at, log_base = _pair_cdfs(tuple(v[lo:hi] for v in tie), pair_tie[lo:hi], L[lo:hi])
        c0, c1 = int(cell[lo]), int(cell[hi - 1]) + 1
        mean[c0:c1] = _max_mean(cell[lo:hi] - c0, L[lo:hi], x, delta, at, log_base, c1 - c0)
    out = np.where(ok, worst, 0.0).ravel()
    has = cell[np.flatnonzero(np.diff(cell, prepend=-1))]   # the cells with pairs (cell is sorted)
    out[has] = mean[has]
    return out.reshape(g.n_queries, levels)


def _query_blocks(query: np.ndarray, values: np.ndarray) -> list[tuple[int, int]]:
    """(start, stop) of blocks of consecutive pairs, cut between queries, each with about
    :data:`VALUE_BLOCK` values (``values``: an upper bound per pair): the arrays of one block stay in the
    cache, and memory is bounded. A query is never split: its cells need all their pairs."""
    if not len(query):
        return []
    starts = np.flatnonzero(np.diff(query, prepend=-1))          # each query's first pair
    before = (np.cumsum(values) - values)[starts]                 # values before each query
    cut = starts[np.flatnonzero(np.diff(before // VALUE_BLOCK, prepend=-1))]
    edges = np.append(cut, len(query)).tolist()
    return list(zip(edges[:-1], edges[1:]))


def _cost(g: TieStats, m: Measure, bounds: bool) -> tuple[np.ndarray, np.ndarray]:
    """The family's ``cost``: per tie of relevant and non-relevant documents in the queries where the
    measure needs the exact expectation, the work of its (tie, level) pairs, each about (the values its
    maximum can take above L, at most (r - k0 + 1) (n - r + 1)) times r (n - r + 1) for ties of five or
    more relevant documents (the dynamic programme; fewer are counted in closed form, one unit a value).
    Exact integers (:func:`exact_products`: a tie of 300,000 documents is about 1e21, beyond int64).
    The bounds are the relevant-first and relevant-last orders: no work beyond linear."""
    none = np.zeros(0, dtype=np.int64), np.zeros(0)
    if bounds:
        return none
    levels = (m["recall"],) if m.family.name == "IPrec" else m["levels"]
    r, r_before, H, cuts, mixed, mixed_query = _setup(g, m["rel"], m["rounding"], levels)
    if not mixed.any():
        return none
    pairs = _pairs(g, r, r_before, cuts, H, mixed_query)
    _, _, n, k, k0 = pairs["tie"]
    dp = k > 4
    work = exact_products(k - k0 + 1, n - k + 1, np.where(dp, k, 1), np.where(dp, n - k + 1, 1))
    per_tie = np.bincount(pairs["pair_tie"], weights=work, minlength=len(pairs["groups"]))
    has = np.flatnonzero(per_tie > 0)
    return pairs["groups"][has], per_tie[has]


def _pair_cdfs(tie: tuple, pair_tie: np.ndarray, L: np.ndarray
               ) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """Every (tie, level) pair's values above its L, ascending within the pair; at each, the change of
    log P(tie max <= value) since the pair's previous value (or since L, for its first); and per pair,
    log P(tie max <= L). Returns (x, delta, pair of each x, log F at L).

    The pairs of one tie with the same k0 (every level the tie lies wholly above) take the same values
    with the same P(max <= value), each pair those above its own L: so they are computed once
    (:func:`_tie_cdfs`, above the smallest L), sorted, and each pair takes the suffix above its L. Its
    P(max <= L) is the one at the largest value at or below L, or at the smallest L if there is none."""
    a, t, n, r, k0 = tie
    if not len(L):
        return np.zeros(0), np.zeros(0), np.zeros(0, dtype=np.int64), np.zeros(0)
    key = pair_tie.astype(np.int64) * (int(r.max()) + 1) + k0
    _, first, variant = np.unique(key, return_index=True, return_inverse=True)
    by_r = np.argsort(r[first], kind="stable")      # variants numbered in ascending order of r
    first = first[by_r]
    variant = np.argsort(by_r)[variant]
    low = np.full(len(first), np.inf)
    np.minimum.at(low, variant, L)
    x, F, of, low_F = _tie_cdfs(tuple(v[first] for v in tie), low)
    order = _sorted_within(of, x)
    x, log_F, of = x[order], np.log(F[order]), of[order]
    size = np.bincount(of, minlength=len(first))
    stop = np.cumsum(size)
    log_low = np.log(low_F)
    step = np.empty(len(x))          # log F's change from the variant's previous value (or its smallest L)
    step[1:] = log_F[1:] - log_F[:-1]
    starts = stop[size > 0] - size[size > 0]
    step[starts] = log_F[starts] - log_low[of[starts]]
    count = _count_above(tuple(v[first][variant] for v in tie), L)
    start = stop[variant] - count                   # the pair's first value above its L
    pair = np.repeat(np.arange(len(L)), count)
    idx = np.arange(len(pair)) + np.repeat(start - (np.cumsum(count) - count), count)
    has_below = start > stop[variant] - size[variant]
    log_base = np.where(has_below, log_F[np.maximum(start - 1, 0)], log_low[variant])
    # a pair's first step, log F there minus log F at its L, is the variant's step there
    return x[idx], step[idx], pair, log_base


def _count_above(tie: tuple, L: np.ndarray) -> np.ndarray:
    """How many of the values :func:`_tie_cdfs` lists for each tie exceed its L."""
    row, _, count = _offsets_above(tie, L)
    return np.bincount(row, weights=count, minlength=len(L)).astype(np.int64)


def _offsets_above(tie: tuple, L: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Per tie and k >= k0: (tie, k, how many offsets give the k-th relevant document a value above L).
    It sits at an offset o in k .. n - r + k, and its value beats L while o is below the first offset at
    which it does not."""
    a, t, n, r, k0 = tie
    per_k = r - k0 + 1
    row = np.repeat(np.arange(len(a)), per_k)
    kk = np.arange(len(row)) + np.repeat(k0 - (np.cumsum(per_k) - per_k), per_k)
    top = np.minimum((n - r)[row] + kk, _first_at_most(a[row] + kk, t[row], L[row]) - 1)
    return row, kk, np.maximum(top - kk + 1, 0)


def _tie_cdfs(tie: tuple, L: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """Every value above L that a tie's maximum can take, ``(a+k)/(t+o)`` for k >= k0, and the tie's
    P(max <= value) there; and P(max <= L) per tie. The ties come in ascending order of r, so each count
    of relevant documents is one slice of ties and one of values. Returns (x, F, tie of each x, F at L)."""
    a, t, n, r, k0 = tie
    kp, kk, count = _offsets_above(tie, L)
    row = np.repeat(np.arange(len(kp)), count)
    o = np.arange(len(row)) + np.repeat(kk - (np.cumsum(count) - count), count)
    pair = kp[row]
    x = (a[pair] + kk[row]) / (t[pair] + o)
    F = np.empty(len(x))
    base = np.empty(len(a))
    ties_at = np.searchsorted(r, [1, 2, 3, 4, 5, np.inf])
    values_at = np.searchsorted(pair, ties_at)
    # one relevant document: max <= (a+1)/(t+o) iff it sits at offset o or below
    one, single = slice(ties_at[0], ties_at[1]), slice(values_at[0], values_at[1])
    n1 = n[pair[single]]
    F[single] = (n1 - o[single] + 1) / n1
    base[one] = (n[one] - np.bincount(kp, weights=count, minlength=len(a))[one]) / n[one]
    for c, below in enumerate((_two_below, _three_below, _four_below, _placements_below), start=1):
        ties, values = slice(ties_at[c], ties_at[c + 1]), slice(values_at[c], values_at[c + 1])
        base[ties] = below(a[ties], t[ties], n[ties], r[ties], k0[ties], L[ties])
        at = pair[values]
        F[values] = below(a[at], t[at], n[at], r[at], k0[at], x[values])
    return x, F, pair, base


def _first_at_most(num: np.ndarray, t: np.ndarray, x: np.ndarray) -> np.ndarray:
    """The smallest offset o >= 1 with ``num / (t + o) <= x`` (x > 0, t >= 0), decided on the same
    correctly rounded quotients as the values themselves.

    The estimate ``ceil(num / x - t)`` is within one of the answer: rounding is monotone, so every offset
    at or above the exact real bound passes, and only the offset just below it can pass by rounding
    (two below, the quotient exceeds x by a relative 1 / (t + o), far more than rounding); the computed
    bound itself is off by at most one. So one step up or down corrects it."""
    num = num.astype(np.float64)
    t = t.astype(np.float64)
    with np.errstate(divide="ignore", over="ignore", invalid="ignore"):
        o = np.clip(np.ceil(num / x - t), 1.0, 2.0 ** 53)
    o += num / (t + o) > x
    o -= (o > 1) & (num / np.maximum(t + o - 1, 1.0) <= x)
    return o.astype(np.int64)


def _two_below(a, t, n, r, k0, x) -> np.ndarray:
    """:func:`_placements_below` for ties of two relevant documents, in closed form: offsets o1 < o2 with
    o1 >= l1 (when k0 = 1) and o2 >= l2 number ``Σ_{o2 >= max(l2, l1 + 1)} (o2 - l1)``."""
    l1 = np.where(k0 <= 1, _first_at_most(a + 1, t, x), 1)
    l2 = _first_at_most(a + 2, t, x)
    lo = np.maximum(np.maximum(l2, l1 + 1), 2)
    m = np.maximum(n - lo + 1, 0)
    return (m * (lo - l1) + m * (m - 1) / 2) / (n * (n - 1) / 2)


def _three_below(a, t, n, r, k0, x) -> np.ndarray:
    """:func:`_placements_below` for ties of three relevant documents, in closed form: with the lowest
    offsets made increasing (l1 >= 1, l2 > l1, l3 > l2), the placements number
    ``Σ_{o2 = l2}^{n-1} (o2 - l1) (n - max(l3, o2 + 1) + 1)``, a sum of a linear and a quadratic
    polynomial in o2 (docs/maths.md, "Interpolated precision")."""
    l1 = np.where(k0 <= 1, _first_at_most(a + 1, t, x), 1).astype(np.float64)
    l2 = np.where(k0 <= 2, _first_at_most(a + 2, t, x), 1).astype(np.float64)
    l3 = _first_at_most(a + 3, t, x).astype(np.float64)
    n = n.astype(np.float64)
    l1 = np.maximum(l1, 1.0)
    l2 = np.maximum(l2, l1 + 1)
    l3 = np.maximum(l3, l2 + 1)
    # o2 in l2 .. l3 - 2: o3 anywhere in l3 .. n
    c1 = l3 - 1 - l2
    first = np.maximum(n - l3 + 1, 0.0) * (c1 * (l2 - l1) + c1 * (c1 - 1) / 2)
    # o2 in l3 - 1 .. n - 1: o3 in o2 + 1 .. n; with u = o2 - l1 and m = n - l1, Σ u (m - u)
    m = n - l1
    lo = l3 - 1 - l1
    s1 = (m - 1) * m / 2 - (lo - 1) * lo / 2
    s2 = (m - 1) * m * (2 * m - 1) / 6 - (lo - 1) * lo * (2 * lo - 1) / 6
    second = np.where(l3 <= n, m * s1 - s2, 0.0)
    return (first + second) / (n * (n - 1) * (n - 2) / 6)


def _power_sums(lo: np.ndarray, hi: np.ndarray) -> tuple[np.ndarray, ...]:
    """``Σ_{w=lo}^{hi} w^p`` for p = 0..3 (1 <= lo; an empty range, hi < lo, gives 0)."""
    hi = np.maximum(hi, lo - 1)
    def upto(v: np.ndarray) -> tuple[np.ndarray, ...]:
        s1 = v * (v + 1) / 2
        return v, s1, v * (v + 1) * (2 * v + 1) / 6, s1 * s1
    return tuple(h - l for h, l in zip(upto(hi), upto(lo - 1)))


def _four_below(a, t, n, r, k0, x) -> np.ndarray:
    """:func:`_placements_below` for ties of four relevant documents, in closed form (docs/maths.md,
    "Interpolated precision"): with the lowest offsets made increasing, the pairs (o1, o2) below o3 number
    ``A(w) = (w - 1) w / 2 - c`` with ``w = o3 - l1``, ``c = (d - 1) d / 2``, ``d = l2 - l1``; o4 has
    ``n - l4 + 1`` places while ``o3 <= l4 - 2`` and ``n - o3`` after, so the count is two sums of
    polynomials in w (degrees 2 and 3)."""
    low = [np.where(k0 <= k, _first_at_most(a + k, t, x), 1).astype(np.float64) for k in (1, 2, 3, 4)]
    low[0] = np.maximum(low[0], 1.0)
    for k in (1, 2, 3):
        low[k] = np.maximum(low[k], low[k - 1] + 1)
    l1, l2, l3, l4 = low
    n = n.astype(np.float64)
    d = l2 - l1
    c = (d - 1) * d / 2
    m = n - l1
    # o3 in l3 .. l4 - 2: o4 anywhere in l4 .. n
    s0, s1, s2, _ = _power_sums(l3 - l1, l4 - 2 - l1)
    first = np.maximum(n - l4 + 1, 0.0) * ((s2 - s1) / 2 - c * s0)
    # o3 in l4 - 1 .. n - 1: o4 in o3 + 1 .. n, that is m - w places
    s0, s1, s2, s3 = _power_sums(l4 - 1 - l1, m - 1)
    second = m * (s2 - s1) / 2 - c * m * s0 - (s3 - s2) / 2 + c * s1
    count = first + np.where(l4 <= n, second, 0.0)
    return count / (n * (n - 1) * (n - 2) * (n - 3) / 24)


def _placements_below(a, t, n, r, k0, x) -> np.ndarray:
    """Per row, the share of the C(n, r) placements of a tie's relevant documents with every
    ``(a+k)/(t+o_k) <= x`` for k >= k0: a dynamic programme over the r order statistics, all rows at
    once (rows sorted by r, then n, and cut into chunks of one r so the padding stays small)."""
    out = np.empty(len(x))
    order = np.lexsort((n, r))
    start = 0
    while start < len(order):   # loop over chunks of rows
        width = int(n[order[start]]) + 1
        stop = min(start + max(1, CHUNK // width), int(np.searchsorted(r[order], r[order[start]], side="right")))
        rows = order[start:stop]
        out[rows] = _placements_chunk(a[rows], t[rows], n[rows], int(r[rows[0]]), k0[rows], x[rows])
        start = stop
    return out


def _placements_chunk(a, t, n, r: int, k0, x) -> np.ndarray:
    """:func:`_placements_below` for rows of ties of ``r`` relevant documents each.

    ``ways[i]`` counts the placements of the first k relevant documents with the k-th at offset
    ``o = k + i`` (it cannot lie before offset k, nor after n - r + k): stored so, the next document's
    counts are the running sum of these, with no shift. The table is laid out (slot, row), so each step
    adds whole rows of it (fast in numpy), and it is only ``n - r + 1`` slots wide."""
    slot = np.arange(int((n - r).max()) + 1)[:, None]
    ways = np.where(slot <= (n - r)[None, :], 1.0, 0.0)   # the first document at offset 1 + i, if it fits
    for kk in range(1, r + 1):   # loop over the k-th relevant document: it lies after the (k-1)-th
        if kk > 1:
            np.cumsum(ways, axis=0, out=ways)
        lowest = np.where(kk >= k0, _first_at_most(a + kk, t, x), 1)
        ways *= slot >= (lowest - kk)[None, :]
    total = np.where(slot <= (n - r)[None, :], ways, 0.0).sum(axis=0)
    comb = np.ones(len(a))
    for i in range(1, r + 1):   # C(n, r) = prod_{i <= r} (n - r + i) / i
        comb = comb * (n - r + i) / i
    return total / comb


def _sorted_within(group: np.ndarray, x: np.ndarray) -> np.ndarray:
    """``np.lexsort((x, group))``: a stable order by group, then x. Done as one stable sort of complex
    numbers ``group + i x`` (numpy orders complex numbers by real part, then imaginary part), which is
    about three times faster; the group numbers are below 2**53, so exact as floats."""
    return np.argsort(group.astype(np.float64) + 1j * x, kind="stable")


def _max_mean(cell: np.ndarray, L: np.ndarray, x: np.ndarray, delta: np.ndarray, pair: np.ndarray,
              log_base: np.ndarray, n_cells: int) -> np.ndarray:
    """E[max] per (query, level) cell from its ties' distributions above L: P(max <= v) is the product over
    the cell's ties of P(tie max <= v), swept over the values in ascending order in logarithms (each value
    changes its tie's factor by ``delta``, from :func:`_pair_cdfs`); E = L P(max <= L) + Σ v (P(max <= v)
    - P(max < v))."""
    import pandas as pd

    cell_L = np.zeros(n_cells)
    cell_L[cell] = L
    cell_log_base = np.bincount(cell, weights=log_base, minlength=n_cells)
    vc = cell[pair]                  # ascending: the sort below keeps it
    order = _sorted_within(vc, x)
    x, delta = x[order], delta[order]
    log_cdf = pd.Series(delta).groupby(vc, sort=False).cumsum().to_numpy() + cell_log_base[vc]
    after = np.exp(log_cdf)
    before = np.empty(len(after))
    before[1:] = after[:-1]
    starts = np.ones(len(vc), dtype=bool)
    starts[1:] = vc[1:] != vc[:-1]
    before[starts] = np.exp(cell_log_base[vc[starts]])
    out = np.bincount(vc, weights=x * (after - before), minlength=n_cells)
    return out + cell_L * np.exp(cell_log_base)


def _all_levels(g: TieStats, measures: list[Measure]) -> None:
    """The family's ``batch``: every level the measures ask for, computed in one pass per (rel, rounding)
    and left in the memo (one pass shares the ties' values and the sorts; 11 passes cost about twice as
    much on the benchmark's task 1)."""
    wanted: dict[tuple, dict[float, None]] = {}
    for m in measures:
        levels = (m["recall"],) if m.family.name == "IPrec" else m["levels"]
        wanted.setdefault((m["rel"], m["rounding"]), {}).update(dict.fromkeys(levels))
    for (rel, rounding), levels in wanted.items():
        _levels_values(g, rel, rounding, tuple(levels))


def iprec(g: TieStats, m: Measure) -> np.ndarray:
    return _levels_values(g, m["rel"], m["rounding"], (m["recall"],))[:, 0]


def iprec_avg(g: TieStats, m: Measure) -> np.ndarray:
    return _levels_values(g, m["rel"], m["rounding"], m["levels"]).mean(axis=1)


class _Level:
    """Checker of one recall level in [0, 1], kept as a float (a class, so measures pickle)."""

    def __call__(self, v: object) -> float:
        if isinstance(v, bool) or not isinstance(v, (int, float)) or not 0 <= v <= 1:
            raise ValueError(f"a recall level must be a number in [0, 1], got {v!r}")
        return float(v)


class _Levels:
    """Checker of a tuple of recall levels in [0, 1] (a class, so measures pickle)."""

    def __call__(self, v: object) -> tuple:
        if isinstance(v, (int, float)) and not isinstance(v, bool):
            v = (v,)
        if not isinstance(v, (tuple, list)) or not v:
            raise ValueError(f"levels must be a non-empty tuple of numbers in [0, 1], got {v!r}")
        return tuple(_Level()(x) for x in v)


RECALL = Param(0.0, _Level(), "recall level in [0, 1]")
LEVELS = Param(ELEVEN, _Levels(), "recall levels averaged (default the eleven 0.0, 0.1, ..., 1.0)")
ROUNDING = Param("trec10", choice_param("rounding", ("trec10", "trec9")),
                 "how a level becomes a count of relevant documents: round(x R) (trec_eval 10) or "
                 "floor(x R + 0.9) (trec_eval 9.x, pytrec_eval)")


def _recall(level: float) -> dict:
    return {"recall": RECALL.check(level)}


def _show_recall(values: dict) -> float:
    return values["recall"]


def _trec_levels(text: str) -> dict:
    return {"levels": LEVELS.check(tuple(parse_doubles(text)))}


def _show_levels(values: dict) -> str:
    return "" if tuple(values["levels"]) == ELEVEN else ",".join(f"{x:g}" for x in values["levels"])


FAMILIES = [
    MeasureFamily("IPrec", "interpolated precision at a recall level: the best precision at or after it "
                  "(trec_eval iprec_at_recall, ir-measures IPrec)", {"rel": REL, "recall": RECALL,
                                                                     "rounding": ROUNDING},
                  "none", iprec, binary_preference, aliases=(("iprec", {}),),
                  value_range=(0.0, 1.0), batch=_all_levels, cost=_cost,
                  trec=(TrecName("iprec_at_recall", "levels", ELEVEN, sets=("recall",), bind=_recall,
                                 show=_show_recall),)),
    MeasureFamily("IPrecAvg", "mean interpolated precision over recall levels (trec_eval 11pt_avg)",
                  {"rel": REL, "levels": LEVELS, "rounding": ROUNDING}, "none", iprec_avg, binary_preference,
                  value_range=(0.0, 1.0), batch=_all_levels, cost=_cost,
                  trec=(TrecName("11pt_avg", "param", sets=("levels",), bind=_trec_levels, show=_show_levels),)),
]
