"""Tie statistics for all queries at once (vectorised, no loop over queries or items).

A :class:`TieStats` describes ranked lists only through their groups of tied items: for every group
its query, the number of items before it in its list (``t_{c-1}``, ``first``) and its size (``n_c``),
and the grades inside it. Measure kernels see nothing else (docs/maths.md, "Notation"). Two sources of
grades exist: the items of sorted lists (:meth:`TieStats.from_ranked`, :meth:`TieStats.singletons`)
and per-group grade histograms (:meth:`TieStats.from_histogram`, used for Hamming distances, where
no sort is needed at all).

Positions enter the kernels only through prefix sums of position functions (``Σ 1/i``, ``Σ D(i)``),
accumulated in extended precision, so a group costs O(1) whatever its size.
"""

from __future__ import annotations

from functools import cached_property
from typing import Callable

import numpy as np

from ..data.ranked import NOT_IN_POOL, RankedLists, concat_ranges

__all__ = ["TieStats", "Judged", "Cut", "segment_sum", "segment_reduce", "position_prefix"]

GradeFn = Callable[[np.ndarray, "np.ndarray | None"], np.ndarray]   # f(grades, query_of_each) -> values


def segment_sum(values: np.ndarray, starts: np.ndarray, ends: np.ndarray) -> np.ndarray:
    """Sum ``values[starts[i]:ends[i]]`` for every i (non-overlapping segments in order; empty ones give
    0), without a loop. Each segment is added sequentially in its own order (np.bincount), so its sum has
    the same bits whatever the other segments are (no pairwise order that changes with the array)."""
    out = np.zeros(len(starts), dtype=np.float64)
    keep = ends > starts
    if len(values) == 0 or not keep.any():
        return out
    s, e = starts[keep], ends[keep]
    lengths = (e - s).astype(np.int64)
    index = np.repeat(s - np.cumsum(lengths) + lengths, lengths) + np.arange(int(lengths.sum()))
    segment = np.repeat(np.arange(len(s)), lengths)
    out[keep] = np.bincount(segment, weights=values[index], minlength=len(s))
    return out


def segment_reduce(values: np.ndarray, starts: np.ndarray) -> np.ndarray:
    """``np.add.reduceat(values, starts)`` (non-empty segments) whose result does not depend on the order
    of the values inside each segment: bit-identical under any permutation of the items of a tie.

    Sums of integers are exact in any order while every partial sum stays below 2**53: those are
    summed as they are (the common path, no sort). Other values are sorted inside each segment first,
    so they are always added in the same (ascending) order, one after the other from +0.0
    (np.bincount; reduceat's pairwise order would depend on where zeros sit). A sum is never -0.0
    (it starts from +0.0). So zeros anywhere in a segment leave its sum unchanged, which lets
    per-group sums skip items whose value is +0.0 (:class:`_PooledItems`).

    >>> a = segment_reduce(np.array([0.1, 0.2, 0.3, 1.0]), np.array([0, 3]))
    >>> b = segment_reduce(np.array([0.3, 0.1, 0.2, 1.0]), np.array([0, 3]))
    >>> bool(np.array_equal(a, b))
    True
    """
    n = len(values)
    if n == 0:
        return np.zeros(len(starts))
    values = np.asarray(values)
    if values.dtype == bool:   # indicators (relevant or not): counts, exact in any order
        return np.add.reduceat(values, starts, dtype=np.float64)
    values = values.astype(np.float64, copy=False)
    sizes = np.diff(np.append(starts, n))
    if (sizes <= 1).all() or _exact_integer_sums(values, int(sizes.max())):
        sums = np.add.reduceat(values, starts)
        sums += 0.0   # -0.0 into +0.0, as a sum from +0.0 gives
        return sums
    seg = np.repeat(np.arange(len(starts)), sizes)
    return np.bincount(seg, weights=values[np.lexsort((values, seg))], minlength=len(starts))


def _exact_integer_sums(values: np.ndarray, longest: int) -> bool:
    """Whether every value is an integer and sums of ``longest`` of them stay below 2**53 (exact)."""
    top = float(np.abs(values).max())
    return top * longest < 2.0 ** 53 and bool(np.array_equal(values, np.round(values)))


_BLOCK = 1 << 16   # entries per block of the integrality check (small temporaries, reused)
_ITEM_BLOCK = 1 << 16   # items per block of per-group sums of grade functions


def _integer_abs_sum(values: np.ndarray) -> float | None:
    """``Σ|values|`` when every value is an integer, else None; block by block, so no temporary as
    long as ``values`` (below 2**53 every partial sum of integers is exact in float64)."""
    total = 0.0
    for lo in range(0, len(values), _BLOCK):   # loop over blocks of entries
        v = values[lo:lo + _BLOCK]
        if not np.array_equal(v, np.round(v)):
            return None
        with np.errstate(over="ignore"):   # a total beyond float64 (inf) is simply not below 2**53
            total += float(np.abs(v).sum())
    return total


def within_query_exclusive_cumsum(values: np.ndarray, query: np.ndarray, starts: np.ndarray) -> np.ndarray:
    """For every entry, the sum of the earlier entries of its query (entries grouped by query).

    Integer-valued inputs are summed exactly (in int64 while the sums stay below 2**62, or in float64
    when every partial sum is an integer below 2**53, which is exact too); others (and integers too large
    for int64) in float64 within each query (pandas' grouped cumsum), so rounding depends on the query's
    own sums only. Each entry gets the running sum up to the entry before it, never ``inclusive - value``
    (with values of very different sizes, 1 then 1e300, that difference would lose the 1). ``starts[q]``
    is the index of query q's first entry.

    >>> within_query_exclusive_cumsum(np.array([1.0, 1e300, 2.0]), np.array([0, 0, 1]), np.array([0, 2]))
    array([0., 1., 0.])
    """
    if values.dtype.kind in "iub":
        return _restarting_cumsum(values, starts, np.int64).astype(np.float64)
    total = _integer_abs_sum(values)
    if total is not None and total < 2.0 ** 53:
        return _restarting_cumsum(values, starts, np.float64)
    if total is not None and total < 2.0 ** 62:   # int64 sums cannot overflow
        return _restarting_cumsum(values.astype(np.int64), starts, np.int64).astype(np.float64)
    import pandas as pd   # off the import path: only this rare case (sums of non-integers) needs it

    values = np.asarray(values, dtype=np.float64)
    inclusive = pd.Series(values).groupby(query, sort=False).cumsum().to_numpy()
    out = np.zeros(len(values))
    out[1:] = inclusive[:-1]
    first = starts[starts < len(values)]
    out[first] = 0.0       # a query's first entry has nothing before it
    return out


def _distinct(values: np.ndarray) -> np.ndarray:
    """``np.unique(values)`` of a 1-D array, without loading numpy.ma as np.unique does (start-up time).

    >>> _distinct(np.array([3, 1, 3, 2])).tolist()
    [1, 2, 3]
    """
    out = np.sort(values)
    return out[np.concatenate(([True], out[1:] != out[:-1]))] if len(out) else out


def _restarting_cumsum(values: np.ndarray, starts: np.ndarray, dtype: type) -> np.ndarray:
    """Exclusive cumsum restarting at every query, in one pass and one array: the increments are the
    previous entries, except at a query's first entry, where the previous query's total is taken off
    so the running sum restarts at 0. Exact for int64, and for float64 integer sums below 2**53."""
    n = len(values)
    out = np.empty(n, dtype=dtype)
    if n == 0:
        return out
    out[0] = 0
    out[1:] = values[:-1]
    first = _distinct(starts)
    first = first[(first > 0) & (first < n)]          # first entries of non-empty queries but the first
    totals = np.add.reduceat(values, np.concatenate(([0], first)), dtype=dtype)
    out[first] -= totals[:-1]                          # the total of the query just before each
    return np.cumsum(out, out=out)


#: a position function: ``f(ranks)`` of 1-based ranks (an array it may overwrite) -> f at each rank
PositionFn = Callable[[np.ndarray], np.ndarray]

_PREFIX: dict[PositionFn, np.ndarray] = {}


def position_prefix(f: PositionFn, n: int) -> np.ndarray:
    """Prefix sums ``P[i] = Σ_{l=1}^{i} f(l)`` (``P[0] = 0``) of a position function, in long double.

    ``f`` gets the ranks 1, 2, ... as long doubles (the precision of the sums; :func:`position_sum` gives
    it single ranks as float64). Cached per function and grown on demand; differences are exact to about
    1e-18 relative on x86.
    """
    have = _PREFIX.get(f)
    if have is not None and len(have) > n:
        return have
    size = max(n + 1, 1024, 2 * (len(have) if have is not None else 0))
    values = np.asarray(f(np.arange(1, size, dtype=np.longdouble)), dtype=np.longdouble)
    out = np.zeros(size, dtype=np.longdouble)
    np.cumsum(values, out=out[1:])
    _PREFIX[f] = out
    return out


def position_sum(f: PositionFn, start: np.ndarray, count: np.ndarray) -> np.ndarray:
    """``Σ_{i=start+1}^{start+count} f(i)`` for every entry (positions 1-based, ``start`` items before).

    One slot (singleton groups, fixed orders) is f(start+1) in float64; longer runs are differences
    of the long-double prefix sums.
    """
    if len(start) == 0:
        return np.zeros(0)
    one = count == 1
    if one.all():
        return f(np.add(start, 1.0))      # exact for positions below 2**53
    out = np.zeros(len(start))
    if one.any():
        out[one] = f(np.add(start[one], 1.0))
    many = count > 1
    if many.any():
        s, c = start[many], count[many]
        prefix = position_prefix(f, int((s + c).max()))
        out[many] = (prefix[s + c] - prefix[s]).astype(np.float64)
    return out


class Cut:
    """Where a per-query cutoff ``K`` (1 <= K <= n) falls: the cut group and its slots."""

    def __init__(self, K: np.ndarray, group: np.ndarray, t: np.ndarray, m: np.ndarray, n: np.ndarray) -> None:
        self.K = K            # cutoff per query
        self.group = group    # global index of the cut group c(K)
        self.t = t            # t_{c-1}: items of the query before the cut group
        self.m = m            # slots of the cut group inside the top K
        self.n = n            # n_c: size of the cut group


class Judged:
    """The judged grades of every query as runs ``(query, grade, count)``, sorted by query.

    For runs: all judged documents of the query, retrieved or not; for matrices and hash codes: the
    row. ``R`` and the largest grade come from here.
    """

    def __init__(self, query: np.ndarray, grade: np.ndarray, count: np.ndarray, n_queries: int) -> None:
        self.query = query.astype(np.int64)
        self.grade = grade.astype(np.float64)
        self.count = count.astype(np.int64)
        self.n_queries = n_queries
        self._memo: dict = {}

    @classmethod
    def from_csr(cls, ptr: np.ndarray, grades: np.ndarray) -> "Judged":
        """Run-length encode per-query grade lists (CSR ``ptr``)."""
        n_q = len(ptr) - 1
        q = np.repeat(np.arange(n_q), np.diff(ptr))
        if grades.size and np.all(grades == np.round(grades)) and float(np.abs(grades).max()) < 2.0 ** 53:
            lo, hi = int(grades.min()), int(grades.max())
            width = hi - lo + 1
            if n_q * width <= 50_000_000:   # small integer range: count, no sort
                counts = np.bincount(q * width + (grades.astype(np.int64) - lo), minlength=n_q * width)
                nz = np.flatnonzero(counts)
                return cls(nz // width, nz % width + lo, counts[nz], n_q)
        order = np.lexsort((grades, q))
        qs, gs = q[order], grades[order]
        start = np.ones(len(qs), dtype=bool)
        if len(qs):
            start[1:] = (qs[1:] != qs[:-1]) | (gs[1:] != gs[:-1])
        idx = np.flatnonzero(start)
        counts = np.diff(np.append(idx, len(qs)))
        return cls(qs[idx], gs[idx], counts, n_q)

    def memo(self, key: object, build: Callable[[], object]):
        """Return the cached value for ``key``, building it once (as :meth:`TieStats.memo`)."""
        if key not in self._memo:
            self._memo[key] = build()
        return self._memo[key]

    def per_query(self, weights: np.ndarray) -> np.ndarray:
        """Sum of one weight per run, per query."""
        return np.bincount(self.query, weights=weights, minlength=self.n_queries).astype(np.float64)

    def count_at_least(self, rel: float) -> np.ndarray:
        """R: judged documents with grade >= rel, per query."""
        key = ("R", rel)
        if key not in self._memo:
            self._memo[key] = self.per_query(np.where(self.grade >= rel, self.count, 0).astype(np.float64))
        return self._memo[key]

    def count_positive(self) -> np.ndarray:
        """Judged documents with a positive grade, per query."""
        if "positive" not in self._memo:
            self._memo["positive"] = self.per_query(np.where(self.grade > 0, self.count, 0).astype(np.float64))
        return self._memo["positive"]

    def size(self) -> np.ndarray:
        """Judged documents per query."""
        return self.per_query(self.count.astype(np.float64))

    def max_grade(self) -> np.ndarray:
        """Largest judged grade per query (negative grades count as 0; 0 for no judgment)."""
        out = np.zeros(self.n_queries)
        np.maximum.at(out, self.query, np.maximum(self.grade, 0.0))
        return out


class _ItemGrades:
    """Grades of sorted items; groups are contiguous runs of items.

    ``group_start`` None: every item is its own group (fixed orders), so per-group sums and gathers
    are the items' own values; ``item_query`` may then be given (it is the query of each group).
    """

    def __init__(self, grades: np.ndarray, group_start: np.ndarray | None, qptr: np.ndarray,
                 item_query: np.ndarray | None = None) -> None:
        self.grades = grades
        self.group_start = group_start
        self.qptr = qptr
        self._item_query = item_query

    @property
    def item_query(self) -> np.ndarray:
        """Query of every item (built on first use: only ERR's stop probabilities need it)."""
        if self._item_query is None:
            self._item_query = np.repeat(np.arange(len(self.qptr) - 1), np.diff(self.qptr))
        return self._item_query

    def min_grade(self) -> float:
        return float(self.grades.min()) if len(self.grades) else np.inf

    def group_sum(self, f: GradeFn, with_query: bool) -> np.ndarray:
        if len(self.grades) == 0:
            return np.zeros(0)
        if self.group_start is None:
            return np.asarray(f(self.grades, self.item_query if with_query else None), dtype=np.float64)
        pooled = self._pooled
        if pooled is not None and _zero_off_pool(f, len(self.qptr) - 1, with_query):
            return pooled.group_sum(f, with_query, self.qptr)
        return _blocked_group_sums(f, self.grades, self.group_start, self.item_query if with_query else None)

    @cached_property
    def _pooled(self) -> "_PooledItems | None":
        """The items in the pool, when documents outside it (``NOT_IN_POOL``) are most of the items
        (a deep run against shallow judgments); None otherwise."""
        at = np.flatnonzero(self.grades != NOT_IN_POOL)
        return _PooledItems(at, self.grades[at], self.group_start) if 2 * len(at) <= len(self.grades) else None

    def group_grades(self, groups: np.ndarray, sizes: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """(ptr, grades) of the items of the selected groups."""
        if self.group_start is None:
            return np.arange(len(groups) + 1), self.grades[groups]
        ptr = np.concatenate(([0], np.cumsum(sizes)))
        return ptr, self.grades[concat_ranges(self.group_start[groups], sizes)]


def _blocked_group_sums(f: GradeFn, grades: np.ndarray, starts: np.ndarray,
                        query: np.ndarray | None) -> np.ndarray:
    """``Σ f(grade, query)`` over each run of items ``starts[i]:starts[i+1]`` (non-empty, in order), by
    :func:`segment_reduce`. In blocks of whole groups of about _ITEM_BLOCK items: f's temporaries stay
    small (in cache, and no fresh pages per call); each group is summed in one piece, so the sums are
    the same."""
    n = len(grades)
    bounds = _distinct(np.append(np.searchsorted(starts, np.arange(0, n, _ITEM_BLOCK)), len(starts)))
    ends = np.append(starts, n)
    out = np.empty(len(starts))
    for ga, gb in zip(bounds[:-1], bounds[1:]):   # loop over blocks of items
        a, b = int(ends[ga]), int(ends[gb])
        values = np.asarray(f(grades[a:b], None if query is None else query[a:b]))
        out[ga:gb] = segment_reduce(values, starts[ga:gb] - a)
    return out


def _zero_off_pool(f: GradeFn, n_queries: int, with_query: bool) -> bool:
    """Whether ``f`` is +0.0 at ``NOT_IN_POOL`` for every query (documents outside the pool add
    nothing to its sums)."""
    query = np.arange(n_queries) if with_query else None
    at = np.asarray(f(np.full(n_queries if with_query else 1, NOT_IN_POOL), query), dtype=np.float64)
    return bool(np.all(at == 0.0) and not np.signbit(at).any())


class _PooledItems:
    """The items of sorted lists whose grade is not ``NOT_IN_POOL``, with their groups: per-group sums
    of a grade function that is +0.0 outside the pool read only these (often a small share of a deep
    run judged to a shallow pool: a tenth on the benchmark's task 1). The sums have the same bits as
    over every item: each group's pooled values are added in the same order, one after the other from
    +0.0 (:func:`segment_reduce`), or are integers (exact in any order), and the +0.0 of the others
    changes no partial sum."""

    def __init__(self, at: np.ndarray, grades: np.ndarray, group_start: np.ndarray) -> None:
        self.at = at
        self.grades = grades
        group = np.searchsorted(group_start, at, side="right") - 1
        first = np.ones(len(group), dtype=bool)
        first[1:] = group[1:] != group[:-1]
        self.starts = np.flatnonzero(first)     # runs of the pooled items of one group
        self.groups = group[self.starts]        # the group of each run
        self.n_groups = len(group_start)
        self._query: np.ndarray | None = None

    def group_sum(self, f: GradeFn, with_query: bool, qptr: np.ndarray) -> np.ndarray:
        if with_query and self._query is None:
            self._query = np.searchsorted(qptr, self.at, side="right") - 1
        out = np.zeros(self.n_groups)
        if len(self.at):
            out[self.groups] = _blocked_group_sums(f, self.grades, self.starts,
                                                   self._query if with_query else None)
        return out


class _LevelGrades:
    """Grades given as counts: runs ``(group, grade, count)`` sorted by group."""

    def __init__(self, group: np.ndarray, grade: np.ndarray, count: np.ndarray, query: np.ndarray,
                 n_groups: int) -> None:
        self.group = group
        self.grade = grade
        self.count = count
        self.query = query          # query of each run
        self.n_groups = n_groups

    def min_grade(self) -> float:
        return float(self.grade.min()) if len(self.grade) else np.inf

    def group_sum(self, f: GradeFn, with_query: bool) -> np.ndarray:
        w = np.asarray(f(self.grade, self.query), dtype=np.float64) * self.count
        return np.bincount(self.group, weights=w, minlength=self.n_groups)

    def group_grades(self, groups: np.ndarray, sizes: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        ptr = np.concatenate(([0], np.cumsum(sizes)))
        first = np.searchsorted(self.group, groups, side="left")
        last = np.searchsorted(self.group, groups, side="right")
        runs = concat_ranges(first, last - first)
        return ptr, np.repeat(self.grade[runs], self.count[runs])


class TieStats:
    """Groups of tied items of many ranked lists, with memoised per-group sums.

    Attributes
    ----------
    n_queries : int
    lengths : int64 array, items per query
    group_query, group_first, group_size : int64 arrays, one entry per group (query-major, best first)
    query_groups : int64 array (n_queries + 1), groups of query q are ``query_groups[q]:query_groups[q+1]``
    judged : Judged
    group_key : float64 array, the key of each group, higher is better (a score; for distances and
        histogram bins the negated distance), so "within radius r" is ``group_key >= -r``
    all_singletons : bool
        Every group is one item (a fixed order, :meth:`singletons`): group ``c`` is item ``c``, which
        lets a few hot spots skip identity gathers and searches.
    """

    def __init__(self, lengths: np.ndarray, group_query: np.ndarray, group_size: np.ndarray,
                 source: _ItemGrades | _LevelGrades, judged: Judged, ranked: RankedLists | None = None,
                 group_key: np.ndarray | None = None, all_singletons: bool = False) -> None:
        self.n_queries = len(lengths)
        self.lengths = np.asarray(lengths, dtype=np.int64)
        self.group_query = np.asarray(group_query, dtype=np.int64)
        self.group_size = np.asarray(group_size, dtype=np.int64)
        self.n_groups = len(group_size)
        self.all_singletons = all_singletons
        offsets = np.concatenate(([0], np.cumsum(self.lengths)))
        self._query_offset = offsets
        if all_singletons:   # groups are items: no search; group_first counts 0, 1, ... in each query
            self.query_groups = offsets
            self.group_first = _restarting_cumsum(np.broadcast_to(np.int64(1), (self.n_groups,)),
                                                  offsets[:-1], np.int64)
            self._group_end = None   # cut() computes the cut item directly
        else:
            self.query_groups = np.searchsorted(self.group_query,
                                                np.arange(self.n_queries + 1)).astype(np.int64)
            self.group_first = within_query_exclusive_cumsum(self.group_size, self.group_query,
                                                             self.query_groups[:-1]).astype(np.int64)
            self._group_end = offsets[self.group_query] + self.group_first + self.group_size
        self.source = source
        self.judged = judged
        self.ranked = ranked
        self.group_key = group_key
        self._memo: dict = {}

    # -- constructors --------------------------------------------------------------------------
    @classmethod
    def from_ranked(cls, ranked: RankedLists, judged: Judged) -> "TieStats":
        """Groups = runs of equal keys in each sorted list (exact equality: 0.0 == -0.0, inf == inf)."""
        n = len(ranked.grades)
        keys = ranked.tie_values
        starts = np.empty(n, dtype=bool)
        if n:
            starts[0] = True
            np.not_equal(keys[1:], keys[:-1], out=starts[1:])
            starts[ranked.qptr[:-1][ranked.lengths > 0]] = True
        return cls._from_starts(ranked, ranked.grades, starts, judged)

    @classmethod
    def singletons(cls, ranked: RankedLists, grades: np.ndarray, judged: Judged) -> "TieStats":
        """Every item its own group: a fixed ordering, the plain tie-broken metric.

        Parameters
        ----------
        ranked : RankedLists
            The sorted lists (their query pointers and keys; the keys are constant inside a tie, so
            a reordering inside ties leaves them in place).
        grades : float64 array
            The grade of every item, in the fixed order.
        judged : Judged
            The judged grades of every query.

        Returns
        -------
        TieStats
            Statistics with ``all_singletons`` set.
        """
        query = np.repeat(np.arange(ranked.n_queries, dtype=np.int64), ranked.lengths)
        source = _ItemGrades(grades, None, ranked.qptr, item_query=query)
        ones = np.broadcast_to(np.int64(1), (len(grades),))   # sizes 1 (a read-only view: no memory)
        keys = ranked.keys if ranked.keys is not None else ranked.keys_at(np.arange(len(grades)))
        return cls(ranked.lengths, query, ones, source, judged, ranked, keys, all_singletons=True)

    @classmethod
    def _from_starts(cls, ranked: RankedLists, grades: np.ndarray, starts: np.ndarray,
                     judged: Judged) -> "TieStats":
        group_start = np.flatnonzero(starts)
        group_size = np.diff(np.append(group_start, len(grades)))
        group_query = np.searchsorted(ranked.qptr, group_start, side="right") - 1
        source = _ItemGrades(grades, group_start, ranked.qptr)
        return cls(ranked.lengths, group_query, group_size, source, judged, ranked,
                   ranked.keys_at(group_start))

    @property
    def item_group(self) -> np.ndarray:
        """Group of every item (sorted-list statistics only; built on first use)."""
        if self.all_singletons:
            return np.arange(self.n_groups)
        return self.memo("item_group", lambda: np.repeat(np.arange(self.n_groups), self.group_size))

    @classmethod
    def from_histogram(cls, counts: np.ndarray, levels: np.ndarray,
                       judged_counts: np.ndarray | None = None,
                       bin_keys: np.ndarray | None = None) -> "TieStats":
        """Groups from per-query histograms: ``counts[q, b, l]`` items of query q in bin b (bins best
        first, e.g. Hamming distance 0, 1, ...) with grade ``levels[l]``. The judged set of a query is
        all its items (a database row), or ``judged_counts`` (same shape) when the ranked grades were
        changed (a distance threshold turning far matches into misses). ``bin_keys``: the key of each
        bin, higher is better (default: minus the bin index, i.e. bins are distances). No sort."""
        counts = np.asarray(counts, dtype=np.int64)
        n_q, n_bins, n_lev = counts.shape
        per_bin = counts.sum(axis=2)
        gq, gb = np.nonzero(per_bin)                       # groups in (query, bin) order
        group_size = per_bin[gq, gb]
        group_id = np.full((n_q, n_bins), -1, dtype=np.int64)
        group_id[gq, gb] = np.arange(len(gq))
        rq, rb, rl = np.nonzero(counts)                    # runs in (query, bin, level) order
        source = _LevelGrades(group_id[rq, rb], levels[rl].astype(np.float64), counts[rq, rb, rl], rq, len(gq))
        per_level = (counts if judged_counts is None else np.asarray(judged_counts)).sum(axis=1)
        jq, jl = np.nonzero(per_level)
        judged = Judged(jq, levels[jl], per_level[jq, jl], n_q)
        keys = -np.arange(n_bins, dtype=np.float64) if bin_keys is None else np.asarray(bin_keys, np.float64)
        return cls(per_bin.sum(axis=1), gq, group_size, source, judged, group_key=keys[gb])

    # -- orderings -----------------------------------------------------------------------------
    def refine(self, keys: Callable[[np.ndarray], list[np.ndarray]], best: bool) -> "TieStats":
        """Split every group by the measure's preference values, best first (or worst first).

        ``keys(grades)`` returns the preference arrays, primary first. Items of a sub-group share their
        preference values, so the measure is the same in every order inside it: the result is the
        optimistic (``best``) or pessimistic ordering.
        """
        sign = -1.0 if best else 1.0
        if isinstance(self.source, _ItemGrades):
            grades = self.source.grades
            pref = [sign * np.asarray(v, dtype=np.float64) for v in keys(grades)]
            order = np.lexsort(tuple(reversed(pref)) + (self.item_group,))
            new_grades = grades[order]
            sorted_pref = [p[order] for p in pref]
            group = self.item_group  # unchanged by the sort (it only permutes inside groups)
            starts = np.empty(len(grades), dtype=bool)
            if len(grades):
                starts[0] = True
                diff = group[1:] != group[:-1]
                for p in sorted_pref:  # loop over the few preference keys
                    diff |= p[1:] != p[:-1]
                starts[1:] = diff
            return TieStats._from_starts(self.ranked, new_grades, starts, self.judged)
        src = self.source
        pref = [sign * np.asarray(v, dtype=np.float64) for v in keys(src.grade)]
        order = np.lexsort(tuple(reversed(pref)) + (src.group,))
        grade, count, query = src.grade[order], src.count[order], src.query[order]
        n = len(order)
        source = _LevelGrades(np.arange(n), grade, count, query, n)
        key = None if self.group_key is None else self.group_key[src.group[order]]
        return TieStats(self.lengths, query, count, source, self.judged, group_key=key)

    # -- memoised sums -------------------------------------------------------------------------
    def min_grade(self) -> float:
        """The smallest grade of any item (inf when there is none)."""
        return self.memo("min_grade", self.source.min_grade)

    def memo(self, key: object, build: Callable[[], object]):
        """Return the cached value for ``key``, building it once."""
        if key not in self._memo:
            self._memo[key] = build()
        return self._memo[key]

    def group_sum(self, key: object, f: GradeFn, with_query: bool = False) -> np.ndarray:
        """``Σ f(grade, query)`` over each group; ``key`` names ``f`` for the memo. ``f`` gets the query
        of each grade only with ``with_query`` (else None)."""
        return self.memo(("sum", key), lambda: self.source.group_sum(f, with_query))

    def before(self, key: object, f: GradeFn, with_query: bool = False) -> np.ndarray:
        """For every group, ``Σ f(grade)`` over the earlier groups of its query."""
        return self.memo(("before", key), lambda: within_query_exclusive_cumsum(
            self.group_sum(key, f, with_query), self.group_query, self.query_groups[:-1]))

    def relevant_sum(self, rel: float) -> tuple[np.ndarray, np.ndarray]:
        """(r_c, R_{c-1}): relevant items in each group, and in the earlier groups of its query."""
        key = ("b", rel)

        def f(grades: np.ndarray, _q: np.ndarray) -> np.ndarray:
            return grades >= rel
        return self.group_sum(key, f), self.before(key, f)

    def group_grades(self, groups: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """(ptr, grades): the grades inside each selected group, as a CSR list."""
        return self.source.group_grades(groups, self.group_size[groups])

    def memoised(self, key: object) -> bool:
        """Whether a value for ``key`` is cached (for choosing between a full and a partial path)."""
        return key in self._memo

    def subset_sum(self, key: object, f: GradeFn, groups: np.ndarray, with_query: bool = False) -> np.ndarray:
        """Σ f(grade) over the items of each of ``groups`` (the memoised sums when there are any;
        else only the items of those groups are read, for shallow cutoffs). ``f`` gets the query of
        each grade only with ``with_query`` (else None)."""
        full = self._memo.get(("sum", key))
        if full is not None:
            return full[groups]
        if len(groups) == 0:
            return np.zeros(0)
        ptr, grades = self.group_grades(groups)
        query = np.repeat(self.group_query[groups], np.diff(ptr)) if with_query else None
        return segment_reduce(np.asarray(f(grades, query), dtype=np.float64), ptr[:-1])

    def groups_before_cut(self, cut: Cut) -> tuple[np.ndarray, np.ndarray]:
        """(groups, query): every group of each query before its cut group, query by query."""
        first = self.query_groups[:-1]
        count = np.maximum(cut.group - first, 0)
        return concat_ranges(first, count), np.repeat(np.arange(self.n_queries), count)

    # -- cutoffs -------------------------------------------------------------------------------
    def clamp(self, k: int | np.ndarray | None) -> np.ndarray:
        """K = min(k, n) per query (k None: the whole list)."""
        if k is None:
            return self.lengths.copy()
        return np.minimum(k, self.lengths)

    def cut(self, K: np.ndarray) -> Cut:
        """Locate the cut group of per-query cutoffs ``K`` (requires 1 <= K <= n)."""
        if self.all_singletons:   # the K-th item of the query
            group = self._query_offset[:-1] + (np.asarray(K, dtype=np.int64) - 1)
        else:
            group = np.searchsorted(self._group_end, self._query_offset[:-1] + K, side="left")
        t = self.group_first[group]
        return Cut(K=K, group=group, t=t, m=K - t, n=self.group_size[group])

    def sum_before_cut(self, group_values: np.ndarray, cut: Cut) -> np.ndarray:
        """Σ of a per-group value over the groups of each query before its cut group."""
        return segment_sum(group_values, self.query_groups[:-1], cut.group)

    def expected_top_sum(self, key: object, f: GradeFn, K: np.ndarray, with_query: bool = False) -> np.ndarray:
        """E[Σ_{i<=K} f(g_i)] over tie orderings: earlier groups in full, m/n_c of the cut group
        (docs/maths.md, equation 1). ``K`` may be 0 for some queries (gives 0). ``f`` gets the query of
        each grade only with ``with_query`` (else None)."""
        out = np.zeros(self.n_queries)
        ok = K > 0
        if not ok.any():
            return out
        cut = self.cut(np.where(ok, K, 1))
        total = self.group_sum(key, f, with_query)
        val = self.before(key, f, with_query)[cut.group] + cut.m * total[cut.group] / cut.n
        out[ok] = val[ok]
        return out
