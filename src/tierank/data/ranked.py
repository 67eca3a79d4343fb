"""RankedLists: the canonical form every input is turned into.

All queries at once, CSR-style: items of query ``q`` are ``qptr[q]:qptr[q+1]``, sorted best first
(key descending; equal keys form a tie and stay in input order). Beside them, the judged grades of
each query (``judged_ptr``/``judged``): for runs all judged documents of the query, retrieved or not;
for matrices the row itself. ``R`` and the ideal DCG come from the judged grades (docs/maths.md, "Notation").
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Callable

import numpy as np

__all__ = ["RankedLists", "sort_ranked", "concat_ranges", "NOT_IN_POOL", "UNJUDGED_IN_POOL"]

# The grades of unjudged retrieved documents, trec_eval's three kinds: absent from the qrels ("not in
# pool", -1), or in the qrels with a negative grade ("in pool, unjudged", -2, whatever negative value the
# qrels gave). Every negative grade means unjudged: never relevant whatever the relevance level, gain 0
# whatever the gains; judged documents keep their grade (>= 0).
NOT_IN_POOL = -1.0
UNJUDGED_IN_POOL = -2.0


def concat_ranges(starts: np.ndarray, sizes: np.ndarray) -> np.ndarray:
    """Indices ``starts[0]:starts[0]+sizes[0]``, then ``starts[1]:...``, concatenated (no loop).

    >>> concat_ranges(np.array([5, 0, 9]), np.array([2, 0, 3])).tolist()
    [5, 6, 9, 10, 11]
    """
    ends = np.cumsum(sizes)
    return np.repeat(starts - (ends - sizes), sizes) + np.arange(int(ends[-1]) if len(ends) else 0)


@dataclass(repr=False, eq=False)
class RankedLists:
    """Ranked lists of many queries (see the module docstring).

    Attributes
    ----------
    qptr : int64 array (n_queries + 1)
    keys : float64 array (n_items), higher is better, sorted descending within each query; or None
        when ``tie_keys`` and ``keys_fn`` stand for them (small integer scores: no 8-byte copy)
    grades : float64 array (n_items), the grade of each ranked item: the qrels' grade when >= 0 (judged),
        ``UNJUDGED_IN_POOL`` (-2) for a negative grade in the qrels, ``NOT_IN_POOL`` (-1) when absent
    judged_ptr : int64 array (n_queries + 1)
    judged : float64 array, grades of all judged documents of each query
    trec_order_fn : callable returning an integer array (n_items) that orders the items' document ids
        as strings ascending (``ties="trec_eval"`` puts the larger id first), or a list of uint64
        arrays compared lexicographically, most significant first (the 8-byte words of string ids);
        for matrices the column index. Computed only when that mode is used.
    input_order : int64 array (n_items): where each item stood in the input (a unique number per
        item, increasing in input order: the row of a run, the flat index of a matrix entry).
    tie_keys : array (n_items), optional: equal exactly where the keys are equal (finds the ties).
    keys_fn : callable, optional: the keys of given items, when ``keys`` is None.
    """

    qptr: np.ndarray
    keys: np.ndarray | None
    grades: np.ndarray
    judged_ptr: np.ndarray
    judged: np.ndarray
    trec_order_fn: Callable[[], np.ndarray | list[np.ndarray]]
    input_order: np.ndarray
    cache: dict = field(default_factory=dict, repr=False)
    tie_keys: np.ndarray | None = None
    keys_fn: Callable[[np.ndarray], np.ndarray] | None = None

    @property
    def tie_values(self) -> np.ndarray:
        """Values equal exactly where the keys are: ``tie_keys`` (e.g. 1-byte ranks) or the keys."""
        return self.keys if self.tie_keys is None else self.tie_keys

    def keys_at(self, items: np.ndarray) -> np.ndarray:
        """The float64 keys of the given items (from ``keys_fn`` when the keys are not stored)."""
        return self.keys[items] if self.keys is not None else self.keys_fn(items)

    @property
    def n_queries(self) -> int:
        return len(self.qptr) - 1

    @property
    def lengths(self) -> np.ndarray:
        return np.diff(self.qptr)

    @property
    def trec_order(self) -> np.ndarray | list[np.ndarray]:
        if "trec_order" not in self.cache:
            self.cache["trec_order"] = self.trec_order_fn()
        return self.cache["trec_order"]


def sort_ranked(query: np.ndarray, keys: np.ndarray, n_queries: int) -> tuple[np.ndarray, np.ndarray]:
    """Order items by query, then key descending, ties in input order; return (order, qptr).

    ``query`` holds integer query codes ``0..n_queries-1``. One stable sort on the key, then one
    stable sort on the query code (a two-pass radix-style sort; equal keys keep input order).
    """
    order = np.argsort(-keys, kind="stable")
    order = order[np.argsort(query[order], kind="stable")]
    counts = np.bincount(query, minlength=n_queries)
    qptr = np.zeros(n_queries + 1, dtype=np.int64)
    np.cumsum(counts, out=qptr[1:])
    return order, qptr
