"""G (trec_eval ``G``, "normalized gain"): each retrieved document of gain g at rank i adds
``g / log2(2 + C(i) - S(i))``, where S(i) sums the retrieved gains up to rank i and C(i) the costs
``max(ideal gain, 1)`` of ranks 1..i; the sum is divided by the total ideal gain.

Unlike DCG, a document's weight depends on the gains above it, so G is not linear in the positions.
Tie-aware (docs/maths.md, "G"): for a document in a tie, the tie's documents above it are a uniformly
random subset of the others, of a uniform size s in 0..n-1; the distribution of their gain sum Y given s
is multivariate hypergeometric over the counts of each gain among them, so
``E = (1/n) Σ_s Σ_y P(Y = y | s) g / log2(2 + C(t+s+1) - S_before - g - y)``, exact. Ties whose documents
all have the same gain, and fixed orders, need no counting. The sum runs over the count vectors of the
other documents' gains above (multivariate hypergeometric), for every tie at once in chunks of
:data:`CHUNK` terms: per distinct non-zero gain of a tie, the product over its gains of (count + 1) terms.
A query or run beyond :data:`BUDGET` / :data:`TOTAL_BUDGET` raises an InputError naming the query and tie.

Bounds: a higher gain first does not always give the higher G (after a document of gain 1 with ideal gains
3, 2, 1, the tie {2, 3} scores more as 2 then 3). Ties add up independently (a tie's terms depend only on
the gain sum before it), so each tie's best and worst arrangement is found by a dynamic programme over how
many documents of each gain have been placed, and the bounds are their sums.
"""

from __future__ import annotations

import math

import numpy as np

from ..ties.groups import TieStats, within_query_exclusive_cumsum
from ._common import chunks, divide
from ._spec import Measure, MeasureFamily, QueryError
from ._trec import TrecName
from .dcg import (_PARAMS, _normalize, _show_gains, _trec_gains, gain_preference, ideal_gains,
                  item_gains)

__all__ = ["FAMILIES", "BUDGET", "TOTAL_BUDGET"]

#: terms of the exact expectation (bounds: dynamic-programme states) one query may take
BUDGET = 200_000_000
#: terms one evaluation may take over all queries; beyond, an error says so up front
TOTAL_BUDGET = 2_000_000_000
#: terms evaluated at once (memory: about 10 float64 arrays of this length)
CHUNK = 2_000_000
_BOUNDS_TOTAL_BUDGET = 100_000_000   # the bounds' dynamic programme runs in Python, state by state


def _costs(g: TieStats, m: Measure) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(C at every retrieved position, flat by query; its query offsets; total ideal gain per query)."""
    q, gain, count = ideal_gains(g, m)
    total = np.bincount(q, weights=gain * count, minlength=g.n_queries)
    flat_q, flat_gain = np.repeat(q, count), np.repeat(gain, count)
    start = np.searchsorted(flat_q, np.arange(g.n_queries))
    rank = np.arange(len(flat_q)) - start[flat_q]
    item_q = np.repeat(np.arange(g.n_queries), g.lengths)
    offsets = np.concatenate(([0], np.cumsum(g.lengths)))
    pos = np.arange(len(item_q)) - offsets[item_q]
    ideal = np.zeros(len(item_q))
    use = rank < g.lengths[flat_q]
    ideal[offsets[flat_q[use]] + rank[use]] = flat_gain[use]
    cost = np.maximum(ideal, 1.0)
    C = within_query_exclusive_cumsum(cost, item_q, offsets[:-1]) + cost
    del pos
    return C, offsets, total


def g_measure(g: TieStats, m: Measure, extreme: str | None = None) -> np.ndarray:
    C, offsets, total = _costs(g, m)
    key = ("gain", m["gain"], repr(m["gains"]))
    G = g.group_sum(key, lambda x, _q: item_gains(m, x))
    S_before = within_query_exclusive_cumsum(G, g.group_query, g.query_groups[:-1])
    ptr, grades = g.group_grades(np.arange(g.n_groups))
    gains = item_gains(m, grades)
    starts = ptr[:-1]
    if len(gains):
        mixed = np.maximum.reduceat(gains, starts) > np.minimum.reduceat(gains, starts)
    else:
        mixed = np.zeros(0, dtype=bool)
    mixed &= g.group_size > 1
    # ties of equal gains (and fixed orders): the k-th item of the tie sees k-1 equal gains above it
    item_group = np.repeat(np.arange(g.n_groups), g.group_size)
    k = np.arange(len(gains)) - np.repeat(starts, g.group_size)
    pos = offsets[g.group_query[item_group]] + g.group_first[item_group] + k
    sums = S_before[item_group] + (k + 1) * gains
    use = (gains != 0) & ~mixed[item_group]   # mixed ties: below
    term = np.zeros(len(gains))
    term[use] = gains[use] / np.log2(2.0 + C[pos[use]] - sums[use])
    value = np.bincount(g.group_query[item_group], weights=term, minlength=g.n_queries)
    if mixed.any():
        value += _mixed_ties(g, mixed, ptr, gains, S_before, C, offsets, extreme)
    return divide(value, total)


def _bounds(expected: TieStats, best: TieStats, worst: TieStats, m: Measure, lo: np.ndarray, hi: np.ndarray):
    """Exact bounds: each tie's best / worst arrangement (module docstring)."""
    return g_measure(expected, m, "min"), g_measure(expected, m, "max")


def _mixed_ties(g: TieStats, mixed: np.ndarray, ptr: np.ndarray, gains: np.ndarray, S_before: np.ndarray,
                C: np.ndarray, offsets: np.ndarray, extreme: str | None) -> np.ndarray:
    ties = np.flatnonzero(mixed)
    levels = _levels(ties, ptr, gains)
    cost = _expected_cost(levels) if extreme is None else _extreme_cost(levels)
    per_query = np.bincount(g.group_query[ties], weights=cost, minlength=g.n_queries)
    if cost.sum() > (TOTAL_BUDGET if extreme is None else _BOUNDS_TOTAL_BUDGET) or per_query.max() > BUDGET:
        worst = ties[int(np.argmax(cost))]
        raise QueryError(f"G: the exact {'expectation' if extreme is None else 'bounds'} over all orderings of tied "
                         f"documents needs about {cost.sum():.2g} operations here, beyond the limit; the costliest "
                         f"tie is at ranks {int(g.group_first[worst]) + 1}-"
                         f"{int(g.group_first[worst] + g.group_size[worst])}. Use a fixed tie mode (ties='trec_eval')",
                         int(g.group_query[worst]))
    base = offsets[g.group_query[ties]] + g.group_first[ties]   # flat index of each tie's first position
    if extreme is None:
        per_tie = _tie_means(levels, S_before[ties], base, C)
    else:
        per_tie = np.array([_extreme_tie(gains[ptr[c]:ptr[c + 1]], float(S_before[c]),
                                         C[b:b + ptr[c + 1] - ptr[c]], extreme)
                            for c, b in zip(ties, base)])   # loop over the ties of documents with different gains
    return np.bincount(g.group_query[ties], weights=per_tie, minlength=g.n_queries)


def _levels(ties: np.ndarray, ptr: np.ndarray, gains: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """(values, counts), each (ties, D): every tie's distinct gains and how many documents have each,
    padded with count 0 to the most distinct gains D of a tie."""
    sizes = ptr[ties + 1] - ptr[ties]
    tie = np.repeat(np.arange(len(ties)), sizes)
    item = np.repeat(ptr[ties] - np.cumsum(sizes) + sizes, sizes) + np.arange(int(sizes.sum()))
    value = gains[item]
    order = np.lexsort((value, tie))
    tie, value = tie[order], value[order]
    new = np.ones(len(tie), dtype=bool)
    new[1:] = (tie[1:] != tie[:-1]) | (value[1:] != value[:-1])
    first = np.flatnonzero(new)
    count = np.diff(np.append(first, len(tie)))
    level_tie = tie[first]
    tie_start = np.searchsorted(level_tie, np.arange(len(ties)))
    slot = np.arange(len(first)) - tie_start[level_tie]
    D = int(slot.max()) + 1 if len(slot) else 1
    values, counts = np.zeros((len(ties), D)), np.zeros((len(ties), D), dtype=np.int64)
    values[level_tie, slot], counts[level_tie, slot] = value[first], count
    return values, counts


def _rows(levels: tuple[np.ndarray, np.ndarray]) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """One row per (tie, distinct non-zero gain v): its tie, its level, and the counts of the tie's other
    documents (the tie's counts with one document of gain v taken out)."""
    values, counts = levels
    row_tie, row_level = np.nonzero((values != 0) & (counts > 0))
    others = counts[row_tie].copy()
    others[np.arange(len(row_tie)), row_level] -= 1
    return row_tie, row_level, others


def _expected_cost(levels: tuple[np.ndarray, np.ndarray]) -> np.ndarray:
    """Per tie, the terms of :func:`_tie_means`: over its non-zero gains, the product of (count + 1) over
    the other documents' gains."""
    row_tie, _, others = _rows(levels)
    return np.bincount(row_tie, weights=np.prod(others + 1.0, axis=1), minlength=len(levels[0]))


def _tie_means(levels: tuple[np.ndarray, np.ndarray], before: np.ndarray, base: np.ndarray,
               C: np.ndarray) -> np.ndarray:
    """Per tie, Σ over its documents of E[g / log2(2 + C(t+s+1) - before - g - Y)] (module docstring), all
    ties at once: for a document of gain v, every count vector k of the others above it (k_l of gain l,
    s = Σ k_l of them, Y = Σ k_l l) has probability (1/n) Π C(others_l, k_l) / C(n - 1, s). Each tie's
    terms are summed in their own order, so its value does not depend on the other ties."""
    values, counts = levels
    row_tie, row_level, others = _rows(levels)
    terms = np.prod(others + 1, axis=1)
    n = counts.sum(axis=1)
    log_fact = np.concatenate(([0.0], np.cumsum(np.log(np.arange(1, int(n.max(initial=1)) + 1)))))
    row_sum = np.zeros(len(row_tie))
    for rows in chunks(terms, CHUNK):   # loop over chunks of whole rows
        row_sum[rows] = _chunk_sums(rows, terms, row_tie, row_level, others, values, n, before, base, C, log_fact)
    per_row = row_sum * counts[row_tie, row_level] / n[row_tie]
    return np.bincount(row_tie, weights=per_row, minlength=len(n))


def _chunk_sums(rows, terms, row_tie, row_level, others, values, n, before, base, C, log_fact) -> np.ndarray:
    """For the rows ``rows``, Σ_k P(k) v / log2(...) (:func:`_tie_means`), every k as one flat array."""
    counts = terms[rows]
    row = np.repeat(np.arange(len(rows)), counts)
    rest = np.arange(int(counts.sum())) - np.repeat(np.cumsum(counts) - counts, counts)   # mixed-radix index
    tie = row_tie[rows][row]
    s = np.zeros(len(row), dtype=np.int64)
    Y = np.zeros(len(row))
    log_w = np.zeros(len(row))
    for level in range(others.shape[1]):   # loop over the (few) distinct gains: one digit each
        radix = others[rows, level][row] + 1
        k = rest % radix
        rest //= radix
        s += k
        Y += k * values[tie, level]
        log_w += log_fact[radix - 1] - log_fact[k] - log_fact[radix - 1 - k]
    log_w -= log_fact[n[tie] - 1] - log_fact[s] - log_fact[n[tie] - 1 - s]
    v = values[row_tie[rows], row_level[rows]][row]
    term = np.exp(log_w) * v / np.log2(2.0 + C[base[tie] + s] - before[tie] - v - Y)
    return np.bincount(row, weights=term, minlength=len(rows))


def _extreme_cost(levels: tuple[np.ndarray, np.ndarray]) -> np.ndarray:
    """Per tie, the states of :func:`_extreme_tie`: the product over its distinct gains of (count + 1)."""
    counts = levels[1]
    return np.prod(counts + 1.0, axis=1) * (counts > 0).sum(axis=1)


def _extreme_tie(tie: np.ndarray, before: float, C: np.ndarray, extreme: str) -> float:
    """The largest (``"max"``) or smallest (``"min"``) sum of the tie's terms over its arrangements: a
    dynamic programme over the counts of each distinct gain placed so far (their sum fixes the gain above)."""
    pick = max if extreme == "max" else min
    values, counts = np.unique(tie, return_counts=True)
    values, counts = values.tolist(), counts.tolist()
    layer: dict = {(0,) * len(values): 0.0}
    for s in range(len(tie)):   # loop over the tie's positions: extend every state by one document
        nxt: dict = {}
        for state, acc in layer.items():
            above = sum(c * v for c, v in zip(state, values))
            for i, v in enumerate(values):
                if state[i] == counts[i]:
                    continue
                term = v / math.log2(2.0 + C[s] - before - above - v) if v else 0.0
                key = state[:i] + (state[i] + 1,) + state[i + 1:]
                nxt[key] = pick(nxt[key], acc + term) if key in nxt else acc + term
        layer = nxt
    return layer[tuple(counts)]


FAMILIES = [
    MeasureFamily("G", "normalized gain: gains weighted by 1/log2(2 + ideal cost - gain so far), over the ideal "
                  "gain (trec_eval G)", _PARAMS, "none", g_measure, gain_preference, normalize=_normalize, exact_bounds=_bounds,
                  value_range=(0.0, math.inf),
                  trec=(TrecName("G", "param", sets=("gains",), bind=_trec_gains, show=_show_gains),)),
]
