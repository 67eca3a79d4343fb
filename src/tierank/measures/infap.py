"""infAP (trec_eval ``infAP``, ir-measures ``infAP``): inferred AP for sampled judgments (Yilmaz & Aslam).

trec_eval's definition (m_infap.c): a judged relevant document at rank p, with a judged relevant, m judged
non-relevant and u in-pool unjudged documents above it (documents not in the pool only move ranks),
scores ``[1 + (a + m + u) (a + ε) / (a + m + 2ε)] / p`` (ε = 1e-5; 1 at rank 1); the sum is divided by R.

Tie-aware (docs/maths.md, "infAP"): take a tie of n = r + q + o documents (r relevant, q judged
non-relevant, o = u + x others: unjudged in the pool or not in it) below t documents. For a relevant
document of the tie, the tie's documents above it are a uniformly random subset of the other n - 1, of a
uniform size s; given s, the numbers i, j and rest of relevant, judged non-relevant and other ones among
them are multivariate hypergeometric, and given those the expected number of unjudged ones is linear
(rest u / o), and the score is linear in it. So the mean is a sum over (i, j, rest) with hypergeometric
weights, ``r (q + 1) (o + 1)`` terms per tie. It is not summed term by term: with k = i + j, the weight
C(r-1, i) C(q, j) C(o, rest) / C(n-1, k + rest) is C(r-1, i) C(q, j) / C(n-1, k) times a profile
C(o, rest) C(n-1, k) / C(n-1, k + rest) that depends on (o, r + q, k) only and is a running product of
simple ratios down rest; and for fixed (i, j) the score is (α + β rest) / (t + 1 + k + rest), so the
(i, j) with the same k add up into one (α, β) first. That leaves, per tie, ``(r + q) (o + 1)`` profile
entries and ``r (q + 1)`` pairs (i, j), about 2e8 a second, evaluated for all ties at once: the ties are
sorted by shape (o, r, q), each shape's pairs and their weights C(r-1, i) C(q, j) / C(n-1, k) computed
once (a template), and they go in chunks of ties with the same o, their profile entries in blocks of
columns. Each tie's sums run in its own fixed order (a column per k, added up by a fixed tree over rest,
then the columns in order of k), so its value does not depend on the other ties. Ties of more than
:data:`PROFILE_MAX_N` documents, whose binomials could leave float64's range, are summed term by term
(``r (q + 1) (o + 1)`` terms, about 2e7 a second). Documents unjudged in the pool are counted tie by tie
only when there are any.
Bounds: the best and worst arrangement of each tie (ties add up independently) by a dynamic programme
over how many documents of each kind are placed, ``O(r m u x)`` per tie. Fixed orders cost nothing;
the family declares the work of both as its ``cost``, and a query beyond the budget (``tie_cost_budget``)
raises an InputError naming the query and tie, before the work starts.
"""

from __future__ import annotations


import numpy as np

from ..ties.groups import TieStats, within_query_exclusive_cumsum
from ._common import PYTHON_STATE, REL, chunks, divide, exact_products
from ._spec import Measure, MeasureFamily
from ._trec import TrecName

__all__ = ["FAMILIES", "EPSILON"]

EPSILON = 1e-5   # trec_eval's INFAP_EPSILON
#: the operations one term of the term-by-term sum counts for in the family's ``cost`` (measured: 0.2 to
#: 2 microseconds and about 150 bytes a term, a tie's terms held at once, against about 5 ns a profile entry)
TERM = 250
#: terms evaluated at once by the term-by-term sum (memory: about 15 float64 arrays of this length)
CHUNK = 2_000_000
#: ties of at most this many documents take the profiles (every nonzero weight stays above 1e-300)
PROFILE_MAX_N = 1000
#: columns and pairs of a chunk of ties, and profile entries of a block of columns, evaluated at once
#: (a few float64 arrays of this length stay in cache)
PROFILE_CHUNK = 131_072


def _score(a, m, u, p):
    return (1.0 + (a + m + u) * (a + EPSILON) / (a + m + 2 * EPSILON)) / p


def _kinds(g: TieStats, rel: float) -> tuple:
    """Per tie: relevant, judged non-relevant, in-pool unjudged (-2), not in pool (-1) counts (every
    grade is one of them, as rel >= 0: the last is what the others leave of the tie's size). The in-pool
    unjudged ones are not counted tie by tie when no item has grade -2."""
    r = g.group_sum(("b", rel), lambda x, _q: x >= rel)
    mj = g.group_sum(("nonrel_judged", rel), lambda x, _q: (x >= 0) & (x < rel))
    if g.min_grade() > -2:
        uj = np.zeros(len(r))
    else:
        uj = g.group_sum("unjudged_pool", lambda x, _q: x == -2)
    return r, mj, uj, g.group_size - r - mj - uj


def _sequence_values(g: TieStats, rel: float, groups_ok: np.ndarray, kinds: tuple, before: tuple) -> np.ndarray:
    """Per query, Σ scores over ties whose order does not matter (one kind only, or one item)."""
    r, mj, uj, x = kinds
    A, M, U = before
    sel = np.flatnonzero(groups_ok & (r > 0))
    counts = r[sel].astype(np.int64)
    rep = np.repeat(sel, counts)
    k = np.arange(len(rep)) - np.repeat(np.cumsum(counts) - counts, counts)   # 0-based among the tie's
    a = A[rep] + k
    p = g.group_first[rep] + 1 + k
    val = _score(a, M[rep], U[rep], p)
    return np.bincount(g.group_query[rep], weights=val, minlength=g.n_queries).astype(np.float64)


def infap(g: TieStats, m: Measure, extreme: str | None = None) -> np.ndarray:
    rel = m["rel"]
    kinds = _kinds(g, rel)
    r, mj, uj, x = kinds
    before = tuple(within_query_exclusive_cumsum(v.astype(np.int64), g.group_query, g.query_groups[:-1])
                   if v.any() else np.zeros(len(v)) for v in (r, mj, uj))   # earlier ties of the query: A, M, U
    single_kind = ((r == g.group_size) | (r == 0))
    out = _sequence_values(g, rel, single_kind, kinds, before)
    mixed = np.flatnonzero(~single_kind)
    if len(mixed):
        mixed_kinds = tuple(k[mixed] for k in kinds)
        if extreme is None:
            per_tie = _tie_means(*mixed_kinds, *(b[mixed] for b in before), g.group_first[mixed])
        else:
            per_tie = np.array([_tie_extreme(int(r[c]), int(mj[c]), int(uj[c]), int(x[c]), float(before[0][c]),
                                             float(before[1][c]), float(before[2][c]), int(g.group_first[c]),
                                             extreme) for c in mixed])   # loop over ties of mixed kinds
        out += np.bincount(g.group_query[mixed], weights=per_tie, minlength=g.n_queries)
    return divide(out, g.judged.count_at_least(rel))


def _cost(g: TieStats, m: Measure, bounds: bool) -> tuple[np.ndarray, np.ndarray]:
    """The family's ``cost``: per tie of relevant and other documents, the exact expectation's
    ``(r + q) (o + 1) + r (q + 1)`` profile entries and pairs (one operation each), or, beyond
    :data:`PROFILE_MAX_N`, its ``r (q + 1) (o + 1)`` terms (:data:`TERM` operations each); for the
    bounds, the ``(r + 1) (q + 1) (u + 1) (x + 1)`` states of the dynamic programme, run in Python
    (:data:`PYTHON_STATE` operations each). Exact integers (:func:`exact_products`)."""
    r, mj, uj, x = (k.astype(np.int64) for k in _kinds(g, m["rel"]))
    mixed = np.flatnonzero((r > 0) & (r < g.group_size))
    r, mj, uj, x = r[mixed], mj[mixed], uj[mixed], x[mixed]
    if bounds:
        return mixed, PYTHON_STATE * exact_products(r + 1, mj + 1, uj + 1, x + 1)
    o1 = uj + x + 1
    profiles = exact_products(r + mj, o1) + exact_products(r, mj + 1)
    big = o1 + r + mj > PROFILE_MAX_N + 1
    return mixed, np.where(big, TERM * exact_products(r, mj + 1, o1), profiles)


def _tie_means(r, mj, uj, x, A, M, U, t) -> np.ndarray:
    """Per tie (arrays, one entry a tie): r x E[score of one relevant document of the tie], all ties at
    once (module docstring). Each tie's terms are summed in their own order, so its value does not
    depend on the other ties."""
    other = uj + x
    n = r + mj + other
    log_fact = np.concatenate(([0.0], np.cumsum(np.log(np.arange(1, int(n.max()) + 1)))))
    big = np.flatnonzero(n > PROFILE_MAX_N)
    if not len(big):   # the common case: every tie by profiles
        return _sorted_profile_means(r, mj, uj, other, A, M, U, t, log_fact)
    out = np.zeros(len(r))
    fast = np.flatnonzero(n <= PROFILE_MAX_N)
    if len(fast):
        out[fast] = _sorted_profile_means(r[fast], mj[fast], uj[fast], other[fast], A[fast], M[fast], U[fast],
                                          t[fast], log_fact)
    # every term on its own (the profiles' products could leave float64's range)
    r, mj, uj, other = (v[big].astype(np.int64) for v in (r, mj, uj, other))
    A, M, U, t = (v[big].astype(np.float64) for v in (A, M, U, t))
    for sel in chunks(r * (mj + 1) * (other + 1), CHUNK):   # loop over chunks of whole ties
        out[big[sel]] = _term_means(r[sel], mj[sel], other[sel], uj[sel], A[sel], M[sel], U[sel], t[sel],
                                    log_fact)
    return out


def _sorted_profile_means(r, mj, uj, other, A, M, U, t, log_fact) -> np.ndarray:
    """:func:`_tie_means` by profiles. The ties are ordered by their shape (o, any unjudged in the pool,
    r, q), one integer key: ties with as many others go together in chunks, a chunk's r and q are read
    off the (sorted) keys, and ties of one shape share one template of their pairs (i, j) and weights,
    computed once per shape."""
    R1, Q1 = int(r.max()) + 1, int(mj.max()) + 1
    key = other * 2.0   # ((o 2 + [u > 0]) (max r + 1) + r) (max q + 1) + q, exact in float64
    key += uj > 0
    key *= R1
    key += r
    key *= Q1
    key += mj
    order = np.argsort(key.astype(np.min_scalar_type(int(key.max()))), kind="stable")  # radix if small
    key = key.astype(np.int64)[order]
    shape_first = np.flatnonzero(np.concatenate(([True], key[1:] != key[:-1])))
    s = order[shape_first]
    sr, smj, so = (v[s].astype(np.int64) for v in (r, mj, other))
    tmpl_start, tmpl = _pair_templates(so, sr, smj, log_fact)
    shape_size = np.diff(np.append(shape_first, len(r)))
    tie_tmpl = np.repeat(tmpl_start, shape_size)   # in that order
    cost = np.repeat(sr + smj + sr * (smj + 1), shape_size)   # columns and pairs of each tie
    work = np.empty((2, max(PROFILE_CHUNK, int(so.max()) + 1)))   # a block's profile entries, reused
    out = np.empty(len(r))
    group = np.concatenate(([0], np.flatnonzero(np.diff(so)) + 1))   # first shape of each o
    bounds = np.append(shape_first[group], len(r))
    for oo, lo, hi in zip(so[group].tolist(), bounds[:-1], bounds[1:]):   # loop over the distinct o
        for sel in chunks(cost[lo:hi], PROFILE_CHUNK):   # loop over chunks of whole ties
            span = slice(lo + int(sel[0]), lo + int(sel[-1]) + 1)
            c, k = order[span], key[span]
            out[c] = _profile_means(oo, (k // Q1) % R1, k % Q1, *(np.take(v, c) for v in (uj, A, M, U, t)),
                                    tie_tmpl[span], tmpl, work)
    return out


def _pair_templates(oo, r, mj, log_fact) -> tuple:
    """Per shape (others ``oo``, r, q; arrays, one entry a shape): its pairs (i, j), i relevant and j
    judged non-relevant documents of the tie above (i < r, j <= q, each shape's in the order (i, j)),
    with weight C(r-1, i) C(q, j) / C(n-1, i + j) (at most 1). Returns (first pair of each shape,
    (rows (i, weight) of every pair, i + j of every pair))."""
    npair = r * (mj + 1)
    start = np.cumsum(npair) - npair
    pair_shape = np.repeat(np.arange(len(r)), npair)
    f = np.arange(len(pair_shape)) - start[pair_shape]
    mj1 = (mj + 1)[pair_shape]
    i = f // mj1
    j = f - i * mj1
    kk = i + j
    rm1, mjp, N = (r - 1)[pair_shape], mj[pair_shape], (r + mj - 1 + oo)[pair_shape]
    w = np.exp(log_fact[rm1] - log_fact[i] - log_fact[rm1 - i] + log_fact[mjp] - log_fact[j] - log_fact[mjp - j]
               - log_fact[N] + log_fact[kk] + log_fact[N - kk])
    return start, (np.stack((i, w), axis=1), kk)


def _column_weights(oo: int, r, mj, uj, A, M, U, col_start, ncol: int, tie_tmpl, tmpl) -> tuple:
    """Per column (tie, k): the weighted (alpha, beta) of :func:`_profile_means`, its pairs (i, j) with
    i + j = k added up in the order (i, j) (np.bincount: sequentially, whatever the other columns);
    beta None when no tie has unjudged documents in the pool (then beta is 0). The pairs' a + m is
    (A + M) + k (integers: exact in any order)."""
    npair = r * (mj + 1)
    idx = np.arange(int(npair.sum())) + np.repeat(tie_tmpl - (np.cumsum(npair) - npair), npair)
    i, w = np.take(tmpl[0], idx, axis=0).T
    kk = tmpl[1][idx]
    # score = (alpha + beta rest) / (t + 1 + k + rest) with alpha = 1 + c (a + m + U), beta = c uj / oo,
    # c = (a + ε) / (a + m + 2ε): alpha and beta weighted by w, added up per column
    wc = np.repeat(A, npair) + i   # a
    wc += EPSILON
    wc *= w
    am = np.repeat(A + M, npair) + kk
    wc /= am + 2 * EPSILON
    col = np.repeat(col_start, npair) + kk
    if U.any():
        am += np.repeat(U, npair)
    am *= wc
    am += w
    alpha = np.bincount(col, weights=am, minlength=ncol)
    if not uj.any():
        return alpha, None
    return alpha, np.bincount(col, weights=wc * np.repeat(uj, npair), minlength=ncol) / oo


def _profile_means(oo: int, r, mj, uj, A, M, U, t, tie_tmpl, tmpl, work) -> np.ndarray:
    """:func:`_tie_means` for ties with ``oo`` others each (module docstring): a column per (tie, k)
    and a row per ``rest``, in blocks of columns of about PROFILE_CHUNK entries, each column summed by
    the same tree whatever the other columns. ``tie_tmpl``: each tie's first pair in the templates
    ``tmpl`` (:func:`_pair_templates`); ``work``: two rows of at least PROFILE_CHUNK and oo + 1
    entries, overwritten."""
    L = r + mj
    nt = len(r)
    # columns (tie, k), k = i + j judged documents of the tie above
    col_start = np.cumsum(L) - L
    ncol = int(col_start[-1] + L[-1])
    k = np.arange(ncol) - np.repeat(col_start, L)
    alpha, beta = _column_weights(oo, r, mj, uj, A, M, U, col_start, ncol, tie_tmpl, tmpl)
    prof, first = _profiles(oo, L)
    inv = np.repeat(first[L], L) + k                 # each column's profile
    T = np.repeat(t, L) + 1.0 + k                    # each column's rank with rest = 0
    rest = np.arange(oo + 1, dtype=np.float64)[:, None]
    sums = np.empty(ncol)
    block = max(1, PROFILE_CHUNK // (oo + 1))
    for c0 in range(0, ncol, block):   # loop over blocks of columns
        c = slice(c0, min(c0 + block, ncol))
        val, tmp = (w[:(oo + 1) * (c.stop - c0)].reshape(oo + 1, c.stop - c0) for w in work)
        np.take(prof, inv[c], axis=1, out=val, mode="clip")
        if beta is None:   # alpha + 0 rest
            val *= alpha[c]
        else:
            np.multiply(beta[c], rest, out=tmp)
            tmp += alpha[c]
            val *= tmp
        np.add(T[c], rest, out=tmp)
        val /= tmp
        sums[c] = _column_sums(val)
    return r * np.bincount(np.repeat(np.arange(nt), L), weights=sums, minlength=nt) / (L + oo)


def _profiles(oo: int, L) -> tuple:
    """The profiles per (L, k), L among ``L`` (one a tie): rest -> C(oo, rest) C(n-1, k) / C(n-1, k + rest),
    a running product of ratios down rest (a row per rest, a column per (L, k)); and the column of
    (L, 0) per L."""
    Ls = np.flatnonzero(np.bincount(L))                        # the distinct L = r + mj, ascending
    first = np.zeros(int(Ls[-1]) + 1, dtype=np.int64)
    first[Ls] = np.cumsum(Ls) - Ls                              # the profile column of (L, 0)
    ku = np.arange(int(Ls.sum())) - np.repeat(first[Ls], Ls)   # k and L - 1 - k per profile column
    mu = np.repeat(Ls, Ls) - 1 - ku
    rest = np.arange(oo + 1, dtype=np.float64)[:, None]
    d = oo - rest[:-1]
    prof = np.empty((oo + 1, len(ku)))
    prof[0] = 1.0
    prof[1:] = d * (ku + 1 + rest[:-1]) / ((rest[:-1] + 1) * (d + mu))
    np.cumprod(prof, axis=0, out=prof)
    return prof, first


def _column_sums(val: np.ndarray) -> np.ndarray:
    """The sums of the columns of ``val`` (overwritten), each added up in the same order (a fixed
    tree over the rows, by halves) whatever the other columns are."""
    rows = len(val)
    while rows > 1:   # loop over the halvings (log2 of the rows)
        half = rows // 2
        val[:half] += val[half:2 * half]
        if rows % 2:
            val[half] = val[rows - 1]
        rows = half + rows % 2
    return val[0]


def _term_means(r, mj, other, uj, A, M, U, t, log_fact) -> np.ndarray:
    """:func:`_tie_means` term by term, for ties too large for the profiles: every (i, j, rest) of every
    tie as one flat array."""
    counts = r * (mj + 1) * (other + 1)
    tie = np.repeat(np.arange(len(r)), counts)
    flat = np.arange(int(counts.sum())) - np.repeat(np.cumsum(counts) - counts, counts)
    rr, mm, oo = r[tie], mj[tie], other[tie]
    rest, ij = flat % (oo + 1), flat // (oo + 1)           # rest: unjudged or not in pool, above
    j, i = ij % (mm + 1), ij // (mm + 1)                   # j judged non-relevant, i relevant, above
    s = i + j + rest
    n = rr + mm + oo

    def log_comb(a, b):
        return log_fact[a] - log_fact[b] - log_fact[a - b]

    w = np.exp(log_comb(rr - 1, i) + log_comb(mm, j) + log_comb(oo, rest) - log_comb(n - 1, s))
    share = np.divide(uj[tie], oo, out=np.zeros(len(oo)), where=oo > 0)   # in-pool share of the others
    a, m = A[tie] + i, M[tie] + j
    score = _score(a, m, U[tie] + rest * share, t[tie] + 1.0 + s)
    sums = np.bincount(tie, weights=w * score, minlength=len(r))
    return r * sums / (r + mj + other)


def _tie_extreme(r: int, mj: int, uj: int, x: int, A: float, M: float, U: float, t: int, extreme: str) -> float:
    """The best (``"max"``) or worst (``"min"``) sum of the tie's relevant scores over its arrangements."""
    pick = max if extreme == "max" else min
    best: dict = {(0, 0, 0, 0): 0.0}
    for _ in range(r + mj + uj + x):   # loop over the tie's positions: extend every state by one item
        nxt: dict = {}
        for (i, j, k, l), v in best.items():
            p = t + 1 + i + j + k + l
            for step, add in (((1, 0, 0, 0), _score(A + i, M + j, U + k, p) if i < r else None),
                              ((0, 1, 0, 0), 0.0 if j < mj else None), ((0, 0, 1, 0), 0.0 if k < uj else None),
                              ((0, 0, 0, 1), 0.0 if l < x else None)):
                if add is None:
                    continue
                key = (i + step[0], j + step[1], k + step[2], l + step[3])
                nxt[key] = pick(nxt.get(key, v + add), v + add)
        best = nxt
    return best[(r, mj, uj, x)]


def _bounds(expected: TieStats, best: TieStats, worst: TieStats, m: Measure, lo: np.ndarray, hi: np.ndarray):
    """Exact bounds: each tie's best / worst arrangement (relevant-first is not always the best)."""
    return infap(expected, m, "min"), infap(expected, m, "max")


def _relevant_first(m: Measure, grades: np.ndarray) -> list[np.ndarray]:
    return [(grades >= m["rel"]).astype(np.float64)]


_relevant_first.params = ("rel",)  # type: ignore[attr-defined]

FAMILIES = [
    MeasureFamily("infAP", "inferred AP for sampled judgments (trec_eval infAP, Yilmaz & Aslam)", {"rel": REL},
                  "none", infap, _relevant_first, exact_bounds=_bounds, aliases=(("infap", {}),), cost=_cost,
                  value_range=(0.0, 1.0), trec=(TrecName("infAP"),)),
]
