"""Tie boundaries and per-tie statistics for all queries at once (vectorised, no loop over queries).

Notation follows ``tie_math.md`` §0: ties ``c`` of a query, best first; ``t_{c-1}`` items before tie ``c``
(``tie_first``), ``n_c`` items in it (``tie_size``); for a cutoff ``K`` the cut tie ``c(K)`` holds
position ``K`` and ``m = K - t_{c-1}`` of its slots are inside the top ``K``.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Callable

import numpy as np
import pandas as pd

from ..data.ranked import RankedLists

__all__ = ["TieGroups", "Cut", "segment_sum"]


def segment_sum(values: np.ndarray, starts: np.ndarray, ends: np.ndarray) -> np.ndarray:
    """Sum ``values[starts[i]:ends[i]]`` for every i (empty segments give 0), without a loop."""
    out = np.zeros(len(starts), dtype=np.float64)
    n = len(values)
    keep = ends > starts
    if n == 0 or not keep.any():
        return out
    s, e = starts[keep], ends[keep]
    e_clip = np.minimum(e, n - 1)
    idx = np.empty(2 * len(s), dtype=np.int64)
    idx[0::2] = s
    idx[1::2] = e_clip
    sums = np.add.reduceat(values, idx)[0::2]
    sums = np.where(s < e_clip, sums, 0.0) + np.where(e == n, values[n - 1], 0.0)
    out[keep] = sums
    return out


@dataclass
class Cut:
    """Where a per-query cutoff ``K`` (1 <= K <= n) falls: the cut tie and its slots."""

    K: np.ndarray      # cutoff per query
    tie: np.ndarray    # global index of the cut tie c(K)
    t: np.ndarray      # t_{c-1}: items of the query before the cut tie
    m: np.ndarray      # slots of the cut tie inside the top K
    n: np.ndarray      # n_c: size of the cut tie


class TieGroups:
    """Ranked lists with their tie structure and memoised per-item / per-tie arrays.

    Parameters
    ----------
    ranked : RankedLists
        The lists, every query non-empty.
    grades : ndarray
        Grades in the order of the ranked items (a tie mode may reorder them inside ties).
    singletons : bool
        True for a fixed ordering: every item is its own tie (the plain, tie-broken metric).
    """

    def __init__(self, ranked: RankedLists, grades: np.ndarray, singletons: bool) -> None:
        self.ranked = ranked
        self.grades = grades
        self.qptr = ranked.qptr
        self.n_queries = ranked.n_queries
        n = len(grades)
        self.n_items = n
        self.lengths = np.diff(self.qptr)
        self.item_query = np.repeat(np.arange(self.n_queries), self.lengths)
        self.pos = np.arange(n, dtype=np.int64) - self.qptr[:-1][self.item_query]  # 0-based
        if singletons:
            starts = np.ones(n, dtype=bool)
        else:
            keys = ranked.keys
            starts = np.empty(n, dtype=bool)
            if n:
                starts[0] = True
                np.not_equal(keys[1:], keys[:-1], out=starts[1:])
                starts[self.qptr[:-1][self.lengths > 0]] = True
        self.tie_ptr = np.append(np.flatnonzero(starts), n).astype(np.int64)
        self.n_ties = len(self.tie_ptr) - 1
        self.tie_size = np.diff(self.tie_ptr)
        self.item_tie = np.cumsum(starts) - 1
        self.tie_query = self.item_query[self.tie_ptr[:-1]]
        self.tie_first = self.pos[self.tie_ptr[:-1]]
        self.qtie_ptr = np.searchsorted(self.tie_ptr, self.qptr).astype(np.int64)
        self._memo: dict = {}

    # -- memoisation ---------------------------------------------------------------------------
    def memo(self, key: object, build: Callable[[], object]):
        """Return the cached value for ``key``, building it once."""
        if key not in self._memo:
            self._memo[key] = build()
        return self._memo[key]

    # -- per-tie statistics --------------------------------------------------------------------
    def tie_sum(self, values: np.ndarray) -> np.ndarray:
        """Sum of an item value over each tie (``V_c``)."""
        if self.n_ties == 0:
            return np.zeros(0)
        return np.add.reduceat(values, self.tie_ptr[:-1]).astype(np.float64)

    def tie_sum_of(self, key: object, item_values: np.ndarray) -> np.ndarray:
        """Memoised :meth:`tie_sum` of the item array known as ``key``."""
        return self.memo(("tie_sum", key), lambda: self.tie_sum(item_values))

    def before_tie_of(self, key: object, item_values: np.ndarray) -> np.ndarray:
        """Memoised :meth:`before_tie` of the tie sums of the item array known as ``key``."""
        return self.memo(("before", key), lambda: self.before_tie(self.tie_sum_of(key, item_values)))

    def before_tie(self, tie_values: np.ndarray) -> np.ndarray:
        """For every tie, the sum of ``tie_values`` over the earlier ties of its query.

        Integer-valued inputs are summed exactly in int64; others in float64 within each query
        (pandas' grouped cumsum), so rounding depends on the query's own sums only.
        """
        integral = tie_values.dtype.kind in "iub" or bool(np.all(tie_values == np.round(tie_values)))
        if integral:
            cs = np.concatenate(([0], np.cumsum(tie_values.astype(np.int64))))
            return (cs[:-1] - cs[self.qtie_ptr[:-1]][self.tie_query]).astype(np.float64)
        values = np.asarray(tie_values, dtype=np.float64)
        inclusive = pd.Series(values).groupby(self.tie_query, sort=False).cumsum().to_numpy()
        return inclusive - values

    def judged_count(self, rel: float) -> np.ndarray:
        """R: number of judged documents with grade >= rel, per query."""
        def build():
            j = self.ranked
            hit = (j.judged >= rel).astype(np.int64)
            cs = np.concatenate(([0], np.cumsum(hit)))
            return (cs[j.judged_ptr[1:]] - cs[j.judged_ptr[:-1]]).astype(np.float64)
        return self.memo(("R", rel), build)

    def relevant(self, rel: float) -> np.ndarray:
        """b: 1.0 where the ranked item's grade >= rel."""
        return self.memo(("b", rel), lambda: (self.grades >= rel).astype(np.float64))

    # -- cutoffs -------------------------------------------------------------------------------
    def clamp(self, k: int | np.ndarray | None) -> np.ndarray:
        """K = min(k, n) per query (k None: the whole list)."""
        if k is None:
            return self.lengths.copy()
        return np.minimum(k, self.lengths)

    def cut(self, K: np.ndarray) -> Cut:
        """Locate the cut tie of per-query cutoffs ``K`` (requires 1 <= K <= n)."""
        last = self.qptr[:-1] + K - 1
        tie = self.item_tie[last]
        t = self.tie_first[tie]
        return Cut(K=K, tie=tie, t=t, m=K - t, n=self.tie_size[tie])

    def top_sum(self, item_values: np.ndarray, K: np.ndarray) -> np.ndarray:
        """Sum of an item value over the first K positions of each query."""
        return segment_sum(item_values, self.qptr[:-1], self.qptr[:-1] + K)

    def expected_top_sum(self, key: object, item_values: np.ndarray, K: np.ndarray) -> np.ndarray:
        """E[Σ_{i<=K} v_i] over tie orderings: earlier ties in full, m/n_c of the cut tie (eq. 1).

        ``key`` names ``item_values`` for the memo; ``K`` may be 0 for some queries (gives 0).
        """
        out = np.zeros(self.n_queries)
        ok = K > 0
        if not ok.any():
            return out
        Kq = np.where(ok, K, 1)
        cut = self.cut(Kq)
        tie_v = self.tie_sum_of(key, item_values)
        before = self.before_tie_of(key, item_values)[cut.tie]
        val = before + cut.m * tie_v[cut.tie] / cut.n
        out[ok] = val[ok]
        return out
