"""G (trec_eval ``G``, "normalized gain"): each retrieved document of gain g at rank i adds
``g / log2(2 + C(i) - S(i))``, where S(i) sums the retrieved gains up to rank i and C(i) the costs
``max(ideal gain, 1)`` of ranks 1..i; the sum is divided by the total ideal gain.

Unlike DCG, a document's weight depends on the gains above it, so G is not linear in the positions.
Tie-aware (docs/maths.md, "G"): for a document in a tie, the tie's documents above it are a uniformly
random subset of the others, of a uniform size s in 0..n-1; the distribution of their gain sum Y given s
is counted by a dynamic programme over the tie's items (subset counts by size and sum), so
``E = (1/n) Σ_s Σ_y P(Y = y | s) g / log2(2 + C(t+s+1) - S_before - g - y)``, exact. Ties whose documents
all have the same gain, and fixed orders, need no counting. The cost is about ``n^3 k`` per tie with k
distinct gains; a query or run beyond :data:`BUDGET` / :data:`TOTAL_BUDGET` raises an InputError naming
the query and the tie.

Bounds: a higher gain first does not always give the higher G (after a document of gain 1 with ideal gains
3, 2, 1, the tie {2, 3} scores more as 2 then 3). Ties add up independently (a tie's terms depend only on
the gain sum before it), so each tie's best and worst arrangement is found by a dynamic programme over how
many documents of each gain have been placed, and the bounds are their sums.
"""

from __future__ import annotations

import math

import numpy as np

from ..ties.groups import TieStats, within_query_exclusive_cumsum
from ._common import divide
from ._spec import Measure, MeasureFamily, QueryError
from ._trec import TrecName
from .dcg import _PARAMS, _normalize, _show_gains, _trec_gains, gain_preference, item_gains

__all__ = ["FAMILIES", "BUDGET", "TOTAL_BUDGET"]

BUDGET = 20_000_000
TOTAL_BUDGET = 100_000_000


def _costs(g: TieStats, m: Measure) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(C at every retrieved position, flat by query; its query offsets; total ideal gain per query)."""
    j = g.judged
    gains = item_gains(m, j.grade)
    keep = gains > 0
    q, gain, count = j.query[keep], gains[keep], j.count[keep]
    order = np.lexsort((-gain, q))
    q, gain, count = q[order], gain[order], count[order]
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
    n = g.group_size.astype(np.float64)
    cost = np.where(mixed, n ** 3 * 4, 0.0) if extreme is None else _extreme_cost(ptr, gains, mixed)
    if cost.sum() > TOTAL_BUDGET or cost.max() > BUDGET:
        worst = int(np.argmax(cost))
        raise QueryError(f"G: the exact expectation over all orderings of tied documents needs about "
                         f"{cost.sum():.2g} operations here, beyond the limit; the costliest tie is at ranks "
                         f"{int(g.group_first[worst]) + 1}-{int(g.group_first[worst] + g.group_size[worst])}. "
                         "Use a fixed tie mode (ties='trec_eval') or bounds", int(g.group_query[worst]))
    out = np.zeros(g.n_queries)
    for c in np.flatnonzero(mixed):   # loop over the ties of documents with different gains
        q = int(g.group_query[c])
        tie = gains[ptr[c]:ptr[c + 1]]
        positions = offsets[q] + g.group_first[c] + np.arange(len(tie))
        if extreme is None:
            out[q] += _expected_tie(tie, float(S_before[c]), C[positions])
        else:
            out[q] += _extreme_tie(tie, float(S_before[c]), C[positions], extreme)
    return out


def _extreme_cost(ptr: np.ndarray, gains: np.ndarray, mixed: np.ndarray) -> np.ndarray:
    """Per tie, the states of :func:`_extreme_tie`: the product over its distinct gains of (count + 1)."""
    cost = np.zeros(len(mixed))
    for c in np.flatnonzero(mixed):   # loop over the ties of documents with different gains
        _, counts = np.unique(gains[ptr[c]:ptr[c + 1]], return_counts=True)
        cost[c] = float(np.prod(counts + 1.0)) * len(counts)
    return cost


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


def _expected_tie(tie: np.ndarray, before: float, C: np.ndarray) -> float:
    """Σ over the tie's items of E[g / log2(2 + C(t+s+1) - before - g - Y)] (module docstring)."""
    n = len(tie)
    total = 0.0
    values, counts = np.unique(tie, return_counts=True)
    for v, c in zip(values, counts):   # loop over the distinct gains of the tie
        if v == 0:
            continue
        others = np.repeat(values, counts - (values == v))
        dist = _subset_sums(others)   # list over s of (sums, probabilities)
        acc = 0.0
        for s, (sums, probs) in enumerate(dist):
            acc += float(np.dot(probs, v / np.log2(2.0 + C[s] - before - v - sums)))
        total += c * acc / n
    return total


def _subset_sums(items: np.ndarray) -> list[tuple[np.ndarray, np.ndarray]]:
    """For every size s, the distinct sums of s-subsets of ``items`` and their probabilities."""
    layers: list[dict] = [{0.0: 1}]
    for x in items:   # loop over the tie's items: add x to every subset
        new = [dict(d) for d in layers] + [{}]
        for s, d in enumerate(layers):
            target = new[s + 1]
            for total, ways in d.items():
                target[total + x] = target.get(total + x, 0) + ways
        layers = new
    out = []
    for s, d in enumerate(layers):
        sums = np.array(list(d.keys()))
        ways = np.array(list(d.values()), dtype=np.float64)
        out.append((sums, ways / math.comb(len(items), s)))
    return out


FAMILIES = [
    MeasureFamily("G", "normalized gain: gains weighted by 1/log2(2 + ideal cost - gain so far), over the ideal "
                  "gain (trec_eval G)", _PARAMS, "none", g_measure, gain_preference, normalize=_normalize, exact_bounds=_bounds,
                  value_range=(0.0, math.inf),
                  trec=(TrecName("G", "param", sets=("gains",), bind=_trec_gains, show=_show_gains),)),
]
