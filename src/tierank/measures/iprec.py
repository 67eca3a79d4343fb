"""Interpolated precision at recall levels: IPrec (trec_eval ``iprec_at_recall``, ir-measures ``IPrec``)
and their mean IPrecAvg (trec_eval ``11pt_avg``).

trec_eval's definition (m_iprec_at_recall.c): with R relevant judged documents and H relevant retrieved,
the level ``x`` becomes the count ``c = round(x R)`` (trec_eval 10 rounds; 9.x took ``floor(x R + 0.9)``,
``rounding='trec9'``); the value is 0 when ``c > H``, else ``max_{j >= max(c, 1)} j / pos(j)``, the best
precision at or after the ``c``-th relevant document (``pos(j)``: rank of the j-th relevant one).

Tie-aware (docs/maths.md, "Interpolated precision"): the j-th relevant document's index is fixed by its
tie (the relevant documents of a tie are numbers ``a+1 .. a+r`` whatever the order), only its position
inside the tie is random, and ties are independent. So ``P(max <= x) = Π_ties P_tie(x)``, where
``P_tie(x)`` is the share of the tie's ``C(n, r)`` placements of its relevant documents with every
constrained ``(a+k) / (t+o_k) <= x``; it is counted by a dynamic programme over the ``r`` order statistics
(``O(r n)`` per value of x, integer comparisons, no rounding), at every value the tie's maximum can take
(``r (n - r + 1)`` of them). The mean of the maximum follows from its distribution. Cost per query: the sum
over ties of ``r^2 n (n - r + 1)``; a query above :data:`BUDGET`, or a run above :data:`TOTAL_BUDGET`,
raises an InputError naming the query and the tie (never an approximation), before the work starts. Ties that hold only relevant or only non-relevant documents, and fixed
orders, cost nothing: every position is known. Moving a relevant document up never lowers any
interpolated precision, so the best and worst orderings are relevant-first and relevant-last.
"""

from __future__ import annotations

import math

import numpy as np
import pandas as pd

from ..ties.groups import TieStats
from ._common import REL, binary_preference
from ._spec import Measure, MeasureFamily, Param, QueryError, choice_param
from ._trec import TrecName

__all__ = ["FAMILIES", "BUDGET"]

#: work units (sum over ties of r^2 n (n - r + 1)) one query's exact expectation may take
BUDGET = 20_000_000
#: work units one evaluation may take over all queries (about a minute); beyond, an error says so up front
TOTAL_BUDGET = 100_000_000

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


def _fixed_values(query: np.ndarray, j: np.ndarray, pos: np.ndarray, n_queries: int, cuts: np.ndarray,
                  H: np.ndarray, skip: np.ndarray) -> np.ndarray:
    """Interpolated precision per (query, level) from the known positions of every relevant item
    (queries marked ``skip`` are left at 0: their positions are not all known)."""
    out = np.zeros(cuts.shape)
    if not len(j):
        return out
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


def _levels_values(g: TieStats, m: Measure, levels: tuple) -> np.ndarray:
    rel = m["rel"]
    r, r_before = g.relevant_sum(rel)
    R = g.judged.count_at_least(rel)
    H = np.bincount(g.group_query, weights=r, minlength=g.n_queries)
    cuts = _cut_counts(R, np.asarray(levels, dtype=np.float64), m["rounding"])
    mixed = (r > 0) & (r < g.group_size)
    mixed_query = np.zeros(g.n_queries, dtype=bool)
    mixed_query[g.group_query[mixed]] = True
    known = np.flatnonzero((r > 0) & ~mixed_query[g.group_query])
    out = _fixed_values(*_known_positions(g, r, r_before, known), g.n_queries, cuts, H, mixed_query)
    if not mixed.any():
        return out
    _check_total_cost(g, r, mixed)
    cache = g.memo(("iprec_expected", rel), dict)   # shared by every level and measure of this evaluation
    for q in np.unique(g.group_query[mixed]):   # loop over queries with a tie of mixed relevance
        groups = np.flatnonzero((g.group_query == q) & (r > 0))
        ties = (r_before[groups].astype(np.int64), g.group_first[groups].astype(np.int64),
                g.group_size[groups].astype(np.int64), r[groups].astype(np.int64))
        for col in range(len(levels)):
            c = int(cuts[q, col])
            if not (0 < H[q] and c <= H[q]):
                continue
            key = (int(q), max(c, 1))
            if key not in cache:
                cache[key] = _expected_max(ties, max(c, 1), q)
            out[q, col] = cache[key]
    return out


def _check_total_cost(g: TieStats, r: np.ndarray, mixed: np.ndarray) -> None:
    """An error up front, naming the costliest query, when the exact expectation would take too long."""
    n = g.group_size.astype(np.float64)
    cost = np.where(mixed, r.astype(np.float64) ** 2 * n * (n - r + 1), 0.0)
    total = float(cost.sum())
    if total > TOTAL_BUDGET:
        worst = int(np.argmax(cost))
        raise QueryError(f"interpolated precision: the exact expectation over all orderings of tied documents "
                         f"needs about {total:.2g} operations here ({int(np.unique(g.group_query[mixed]).size)} "
                         f"queries with ties of relevant and non-relevant documents), beyond the limit "
                         f"{TOTAL_BUDGET:.2g}; the costliest tie is at ranks {int(g.group_first[worst]) + 1}-"
                         f"{int(g.group_first[worst] + g.group_size[worst])}. Use a fixed tie mode (ties='trec_eval'), "
                         "bounds, or leave IPrec / iprec_at_recall / 11pt_avg out", int(g.group_query[worst]))


def _expected_max(ties: tuple, first: int, query: int) -> float:
    """E[max_{j >= first} j / pos(j)] over the independent ties of one query (module docstring)."""
    a, t, n, r = ties
    cost = r.astype(np.float64) ** 2 * n * (n - r + 1)
    if cost.sum() > BUDGET:
        i = int(np.argmax(cost))
        raise QueryError(f"interpolated precision: the tie at ranks {t[i] + 1}-{t[i] + n[i]} ({n[i]} documents, "
                         f"{r[i]} relevant) is beyond the exact method's budget (cost {cost.sum():.3g} > "
                         f"{BUDGET:.3g}); use a fixed tie mode or bounds", query)
    steps = []
    for ai, ti, ni, ri in zip(a, t, n, r):   # loop over the ties holding relevant items
        k0 = max(1, first - ai)
        if k0 > ri:
            continue
        steps.append(_tie_distribution(int(ai), int(ti), int(ni), int(ri), int(k0)))
    if not steps:
        return 0.0
    grid = np.unique(np.concatenate([v for v, _ in steps]))
    cdf = np.ones(len(grid))
    for values, probs in steps:   # P(max <= x) = product over ties
        at = np.searchsorted(values, grid, side="right") - 1
        cdf *= np.where(at >= 0, probs[np.maximum(at, 0)], 0.0)
    mass = np.diff(np.concatenate(([0.0], cdf)))
    return float(np.dot(grid, mass))


def _tie_distribution(a: int, t: int, n: int, r: int, k0: int) -> tuple[np.ndarray, np.ndarray]:
    """Values (ascending) the tie's max over relevant items k >= k0 can take, and P(max <= value)."""
    k = np.arange(k0, r + 1)
    num = np.repeat(a + k, n - r + 1)
    den = (t + k[:, None] + np.arange(n - r + 1)[None, :]).ravel()
    g = np.gcd(num, den)
    frac = np.unique(np.stack([num // g, den // g], axis=1), axis=0)
    value = frac[:, 0] / frac[:, 1]
    order = np.argsort(value, kind="stable")
    frac, value = frac[order], value[order]
    # ways[x, p]: placements of the first k relevant items with the k-th at offset p (1..n) allowed at x
    ways = np.zeros((len(value), n + 1))
    ways[:, 0] = 1.0
    offsets = np.arange(n + 1)
    for kk in range(1, r + 1):
        cum = np.cumsum(ways, axis=1)
        ways = np.zeros_like(ways)
        ways[:, 1:] = cum[:, :-1]
        ways[:, 0] = 0.0
        if kk >= k0:   # (a+kk) / (t+p) <= num/den  <=>  (a+kk) den <= num (t+p), in integers
            allowed = (a + kk) * frac[:, 1:2] <= frac[:, 0:1] * (t + offsets[None, :])
            ways *= allowed
    return value, ways.sum(axis=1) / math.comb(n, r)


def iprec(g: TieStats, m: Measure) -> np.ndarray:
    return _levels_values(g, m, (m["recall"],))[:, 0]


def iprec_avg(g: TieStats, m: Measure) -> np.ndarray:
    return _levels_values(g, m, m["levels"]).mean(axis=1)


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
    from ._trec import parse_doubles

    return {"levels": LEVELS.check(tuple(parse_doubles(text)))}


def _show_levels(values: dict) -> str:
    return "" if tuple(values["levels"]) == ELEVEN else ",".join(f"{x:g}" for x in values["levels"])


FAMILIES = [
    MeasureFamily("IPrec", "interpolated precision at a recall level: the best precision at or after it "
                  "(trec_eval iprec_at_recall, ir-measures IPrec)", {"rel": REL, "recall": RECALL,
                                                                     "rounding": ROUNDING},
                  "none", iprec, binary_preference, aliases=(("iprec", {}),),
                  value_range=(0.0, 1.0),
                  trec=(TrecName("iprec_at_recall", "levels", ELEVEN, sets=("recall",), bind=_recall,
                                 show=_show_recall),)),
    MeasureFamily("IPrecAvg", "mean interpolated precision over recall levels (trec_eval 11pt_avg)",
                  {"rel": REL, "levels": LEVELS, "rounding": ROUNDING}, "none", iprec_avg, binary_preference,
                  value_range=(0.0, 1.0),
                  trec=(TrecName("11pt_avg", "param", sets=("levels",), bind=_trec_levels, show=_show_levels),)),
]
