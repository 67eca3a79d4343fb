"""infAP (trec_eval ``infAP``, ir-measures ``infAP``): inferred AP for sampled judgments (Yilmaz & Aslam).

trec_eval's definition (m_infap.c): a judged relevant document at rank p, with a judged relevant, m judged
non-relevant and u in-pool unjudged documents above it (documents not in the pool only move ranks),
scores ``[1 + (a + m + u) (a + ε) / (a + m + 2ε)] / p`` (ε = 1e-5; 1 at rank 1); the sum is divided by R.

Tie-aware (docs/maths.md, "infAP"): for a relevant document in a tie of n, the tie's documents above it
are a uniformly random subset of the other n - 1, of a uniform size s; given s, the numbers of relevant
and judged non-relevant ones among them are multivariate hypergeometric, and given those the expected
number of unjudged ones is linear (the rest are unjudged or not in the pool in proportion), and the score
is linear in it. So the mean is a sum over (i, j, rest) with hypergeometric weights, ``r m (u + x)``
terms per tie, evaluated for every tie at once in chunks of :data:`CHUNK` terms.
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
#: terms of the exact expectation (bounds: dynamic-programme states) one query may take
BUDGET = 200_000_000
#: terms one evaluation may take over all queries (the expectation: about 2e7 a second); beyond, an error
TOTAL_BUDGET = 2_000_000_000
#: terms evaluated at once (memory: about 15 float64 arrays of this length)
CHUNK = 2_000_000
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
    cost = r * (mj + 1) * (uj + x + 1) if extreme is None else (r + 1) * (mj + 1) * (uj + 1) * (x + 1)
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
    r, mj, other = (np.asarray(v, dtype=np.int64) for v in (r, mj, uj + x))
    terms = r * (mj + 1) * (other + 1)
    out = np.zeros(len(r))
    log_fact = np.concatenate(([0.0], np.cumsum(np.log(np.arange(1, int((r + mj + other).max()) + 1)))))
    for sel in chunks(terms, CHUNK):   # loop over chunks of whole ties
        out[sel] = _chunk_means(sel, terms, r, mj, other, uj, A, M, U, t, log_fact)
    return out


def _chunk_means(sel, terms, r, mj, other, uj, A, M, U, t, log_fact) -> np.ndarray:
    """:func:`_tie_means` for the ties ``sel``: every (i, j, rest) of every tie as one flat array."""
    counts = terms[sel]
    tie = np.repeat(np.arange(len(sel)), counts)
    flat = np.arange(int(counts.sum())) - np.repeat(np.cumsum(counts) - counts, counts)
    rr, mm, oo = r[sel][tie], mj[sel][tie], other[sel][tie]
    rest, ij = flat % (oo + 1), flat // (oo + 1)           # rest: unjudged or not in pool, above
    j, i = ij % (mm + 1), ij // (mm + 1)                   # j judged non-relevant, i relevant, above
    s = i + j + rest
    n = rr + mm + oo

    def log_comb(a, b):
        return log_fact[a] - log_fact[b] - log_fact[a - b]

    w = np.exp(log_comb(rr - 1, i) + log_comb(mm, j) + log_comb(oo, rest) - log_comb(n - 1, s))
    share = np.divide(uj[sel][tie], oo, out=np.zeros(len(oo)), where=oo > 0)   # in-pool share of the others
    a, m = A[sel][tie] + i, M[sel][tie] + j
    score = _score(a, m, U[sel][tie] + rest * share, t[sel][tie] + 1.0 + s)
    sums = np.bincount(tie, weights=w * score, minlength=len(sel))
    return r[sel] * sums / (r[sel] + mj[sel] + other[sel])


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
