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
entries and ``r (q + 1)`` pairs (i, j), about 1e8 a second, evaluated for all ties at once in chunks of
ties with the same o. Each tie's sums run in its own fixed order (a column per k, added up by a fixed tree
over rest), so its value does not depend on the other ties. Ties of more than :data:`PROFILE_MAX_N`
documents, whose binomials could leave float64's range, are summed term by term (``r (q + 1) (o + 1)``
terms, about 2e7 a second).
Bounds: the best and worst arrangement of each tie (ties add up independently) by a dynamic programme
over how many documents of each kind are placed, ``O(r m u x)`` per tie. Fixed orders cost nothing;
a query or run beyond :data:`BUDGET` / :data:`TOTAL_BUDGET` raises an InputError naming the query and tie.
"""

from __future__ import annotations


import numpy as np

from ..ties.groups import TieStats, within_query_exclusive_cumsum
from ._common import REL, chunks, divide
from ._spec import Measure, MeasureFamily, QueryError
from ._trec import TrecName

__all__ = ["FAMILIES", "EPSILON", "BUDGET", "TOTAL_BUDGET"]

EPSILON = 1e-5   # trec_eval's INFAP_EPSILON
#: operations of the exact expectation one query may take: per tie ``(r + q) (o + 1) + r (q + 1)``
#: profile entries and pairs, or ``r (q + 1) (o + 1)`` terms beyond PROFILE_MAX_N (module docstring);
#: bounds: dynamic-programme states
BUDGET = 200_000_000
#: operations one evaluation may take over all queries (the expectation: about 1e8 profile entries a
#: second, 2e7 terms); beyond, an error
TOTAL_BUDGET = 2_000_000_000
#: terms evaluated at once by the term-by-term sum (memory: about 15 float64 arrays of this length)
CHUNK = 2_000_000
#: ties of at most this many documents take the profiles (every nonzero weight stays above 1e-300)
PROFILE_MAX_N = 1000
#: profile entries and pairs evaluated at once (a few float64 arrays of this length stay in cache)
PROFILE_CHUNK = 131_072
_BOUNDS_TOTAL_BUDGET = 100_000_000   # the bounds' dynamic programme runs in Python, state by state


def _score(a, m, u, p):
    return (1.0 + (a + m + u) * (a + EPSILON) / (a + m + 2 * EPSILON)) / p


def _kinds(g: TieStats, rel: float) -> tuple:
    """Per tie: relevant, judged non-relevant, in-pool unjudged (-2), not in pool (-1) counts."""
    return (g.group_sum(("b", rel), lambda x, _q: x >= rel), g.group_sum(("nonrel", rel), lambda x, _q: (x >= 0) & (x < rel)),
            g.group_sum("unjudged_pool", lambda x, _q: x == -2), g.group_sum("not_in_pool", lambda x, _q: x == -1))


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
    before = tuple(within_query_exclusive_cumsum(v, g.group_query, g.query_groups[:-1]) for v in (r, mj, uj))
    single_kind = ((r == g.group_size) | (r == 0))
    out = _sequence_values(g, rel, single_kind, kinds, before)
    mixed = np.flatnonzero(~single_kind)
    if len(mixed):
        _check_cost(g, kinds, mixed, extreme)
        if extreme is None:
            per_tie = _tie_means(*(k[mixed] for k in kinds), *(b[mixed] for b in before), g.group_first[mixed])
        else:
            per_tie = np.array([_tie_extreme(int(r[c]), int(mj[c]), int(uj[c]), int(x[c]), float(before[0][c]),
                                             float(before[1][c]), float(before[2][c]), int(g.group_first[c]),
                                             extreme) for c in mixed])   # loop over ties of mixed kinds
        out += np.bincount(g.group_query[mixed], weights=per_tie, minlength=g.n_queries)
    return divide(out, g.judged.count_at_least(rel))


def _check_cost(g: TieStats, kinds: tuple, mixed: np.ndarray, extreme: str | None) -> None:
    r, mj, uj, x = (k[mixed].astype(np.float64) for k in kinds)
    if extreme is None:   # the profiles, or term by term (module docstring)
        cost = np.where(r + mj + uj + x <= PROFILE_MAX_N, (r + mj) * (uj + x + 1) + r * (mj + 1),
                        r * (mj + 1) * (uj + x + 1))
    else:
        cost = (r + 1) * (mj + 1) * (uj + 1) * (x + 1)
    total_budget = TOTAL_BUDGET if extreme is None else _BOUNDS_TOTAL_BUDGET
    per_query = np.bincount(g.group_query[mixed], weights=cost, minlength=g.n_queries)
    if cost.sum() > total_budget or per_query.max() > BUDGET:
        c = mixed[int(np.argmax(cost))]
        raise QueryError(f"infAP: the exact {'expectation' if extreme is None else 'bounds'} over all orderings of "
                         f"tied documents need about {cost.sum():.2g} operations here, beyond the limit; the "
                         f"costliest tie is at ranks {int(g.group_first[c]) + 1}-{int(g.group_first[c] + g.group_size[c])}."
                         " Use a fixed tie mode (ties='trec_eval')", int(g.group_query[c]))


def _tie_means(r, mj, uj, x, A, M, U, t) -> np.ndarray:
    """Per tie (arrays, one entry a tie): r x E[score of one relevant document of the tie], all ties at
    once (module docstring). Each tie's terms are summed in their own order, so its value does not
    depend on the other ties."""
    r, mj, uj, other = (np.asarray(v, dtype=np.int64) for v in (r, mj, uj, uj + x))
    A, M, U, t = (np.asarray(v, dtype=np.float64) for v in (A, M, U, t))
    n = r + mj + other
    out = np.zeros(len(r))
    log_fact = np.concatenate(([0.0], np.cumsum(np.log(np.arange(1, int(n.max()) + 1)))))
    big = np.flatnonzero(n > PROFILE_MAX_N)
    if len(big):   # every term on its own (the profiles' products could leave float64's range)
        terms = r[big] * (mj[big] + 1) * (other[big] + 1)
        for sel in chunks(terms, CHUNK):   # loop over chunks of whole ties
            c = big[sel]
            out[c] = _term_means(r[c], mj[c], other[c], uj[c], A[c], M[c], U[c], t[c], log_fact)
    fast = np.flatnonzero(n <= PROFILE_MAX_N)
    fast = fast[np.argsort(other[fast], kind="stable")]   # ties with as many others side by side
    bounds = np.concatenate(([0], np.flatnonzero(np.diff(other[fast])) + 1, [len(fast)])) if len(fast) else [0]
    for lo, hi in zip(bounds[:-1], bounds[1:]):   # loop over the distinct numbers of others
        ties = fast[lo:hi]
        oo = int(other[ties[0]])
        cost = (r[ties] + mj[ties]) * (oo + 1) + r[ties] * (mj[ties] + 1)
        for sel in chunks(cost, PROFILE_CHUNK):   # loop over chunks of whole ties
            c = ties[sel]
            out[c] = _profile_means(oo, r[c], mj[c], uj[c], A[c], M[c], U[c], t[c], log_fact)
    return out


def _profile_means(oo: int, r, mj, uj, A, M, U, t, log_fact) -> np.ndarray:
    """:func:`_tie_means` for ties with ``oo`` others each (module docstring): a column per (tie, k)
    and a row per ``rest``, each column summed by the same tree whatever the other columns."""
    L = r + mj
    nt = len(r)
    # columns (tie, k), k = i + j judged documents of the tie above
    col_start = np.cumsum(L) - L
    col_tie = np.repeat(np.arange(nt), L)
    ncol = len(col_tie)
    k = np.arange(ncol) - col_start[col_tie]
    # pairs (tie, i, j), each tie's in its own order: weight C(r-1, i) C(mj, j) / C(n-1, k) (at most 1)
    npair = r * (mj + 1)
    pair_tie = np.repeat(np.arange(nt), npair)
    f = np.arange(len(pair_tie)) - (np.cumsum(npair) - npair)[pair_tie]
    mj1 = (mj + 1)[pair_tie]
    i = f // mj1
    j = f - i * mj1
    kk = i + j
    rm1, mjp, N = (r - 1)[pair_tie], mj[pair_tie], (L - 1 + oo)[pair_tie]
    w = np.exp(log_fact[rm1] - log_fact[i] - log_fact[rm1 - i] + log_fact[mjp] - log_fact[j] - log_fact[mjp - j]
               - log_fact[N] + log_fact[kk] + log_fact[N - kk])
    a, m = A[pair_tie] + i, M[pair_tie] + j
    wc = w * (a + EPSILON) / (a + m + 2 * EPSILON)
    col = col_start[pair_tie] + kk
    # score = (alpha + beta rest) / (t + 1 + k + rest) with alpha = 1 + c (a + m + U), beta = c uj / oo,
    # c = (a + ε) / (a + m + 2ε): alpha and beta weighted by w, added up per column
    alpha = np.bincount(col, weights=w + wc * (a + m + U[pair_tie]), minlength=ncol)
    beta = (np.bincount(col, weights=wc * uj[pair_tie], minlength=ncol) / oo) if oo else np.zeros(ncol)
    # profile per (L, k): rest -> C(oo, rest) C(n-1, k) / C(n-1, k + rest), a product of ratios
    Ls = np.flatnonzero(np.bincount(L))                        # the distinct L = r + mj, ascending
    first = np.zeros(int(Ls[-1]) + 1, dtype=np.int64)
    first[Ls] = np.cumsum(Ls) - Ls                              # the profile column of (L, 0)
    ku = np.arange(int(Ls.sum())) - np.repeat(first[Ls], Ls)   # k and L - 1 - k per profile column
    mu = np.repeat(Ls, Ls) - 1 - ku
    inv = first[L][col_tie] + k
    rest = np.arange(oo + 1, dtype=np.float64)[:, None]
    d = oo - rest[:-1]
    prof = np.empty((oo + 1, len(ku)))
    prof[0] = 1.0
    prof[1:] = d * (ku + 1 + rest[:-1]) / ((rest[:-1] + 1) * (d + mu))
    np.cumprod(prof, axis=0, out=prof)
    val = np.take(prof, inv, axis=1)
    tmp = np.multiply(beta, rest)
    tmp += alpha
    val *= tmp
    np.add(t[col_tie] + 1.0 + k, rest, out=tmp)
    val /= tmp
    sums = np.bincount(col_tie, weights=_column_sums(val), minlength=nt)
    return r * sums / (L + oo)


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
                  "none", infap, _relevant_first, exact_bounds=_bounds, aliases=(("infap", {}),),
                  value_range=(0.0, 1.0), trec=(TrecName("infAP"),)),
]
