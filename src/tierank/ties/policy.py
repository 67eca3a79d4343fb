"""Tie modes. A fixed policy orders the items of every tie, then splits every tie into singletons, so
the same kernels give the plain (tie-broken) metric; ``expected`` keeps the ties whole; ``lower`` and
``upper`` are no ordering but the exact extremes over all of them (the values of ``bounds=True``).

| mode          | order inside a tie                                                           |
|---------------|------------------------------------------------------------------------------|
| expected      | none: exact mean over all orderings (closed forms)                           |
| lower         | none: exact minimum over all orderings (``bounds=True``'s lower)             |
| upper         | none: exact maximum over all orderings (``bounds=True``'s upper)             |
| optimistic    | the measure's preferred items first (relevant / higher gain)                 |
| pessimistic   | the measure's preferred items last                                           |
| input         | input order                                                                  |
| trec_eval     | document id descending as a string (matrices: column index descending)       |
| random        | a seeded hash of the input position (splitmix64), so independent of the sort  |

``optimistic`` / ``pessimistic`` are fixed arrangements: for most measures they give the maximum /
minimum too, but not for every one (``AP(denom='retrieved')@k``, whose denominator counts the relevant
items that make the top k, can score higher when a tie at the cut keeps a relevant item out); ``upper``
/ ``lower`` are always the extremes.
"""

from __future__ import annotations

from typing import Any, Callable

import numpy as np

from ..data.ranked import RankedLists
from ..errors import InputError
from .groups import Judged, TieStats

__all__ = ["TIE_MODES", "BOUND_MODES", "ORDER_FREE_MODES", "FIXED_ORDER_MODES", "TieOrderings", "Preference",
           "check_mode", "random_tiebreak", "order_within_groups", "order_within_groups_by_words"]

# (key, fn): fn(grades) -> the item values preferred higher, primary key first; key identifies fn
Preference = tuple[Any, Callable[[np.ndarray], list]]

TIE_MODES = ("expected", "optimistic", "pessimistic", "input", "trec_eval", "random", "lower", "upper")
#: the modes that are the exact minimum / maximum over all orderings of tied items (no ordering)
BOUND_MODES = ("lower", "upper")
#: the modes computed from the tie groups alone (no order of the items by position or id needed)
ORDER_FREE_MODES = ("expected", "optimistic", "pessimistic") + BOUND_MODES
#: the modes that order the items of a tie by position, id or a seeded hash (measure-independent)
FIXED_ORDER_MODES = ("input", "trec_eval", "random")

_M1 = np.array([0xBF58476D1CE4E5B9], dtype=np.uint64)
_M2 = np.array([0x94D049BB133111EB], dtype=np.uint64)
_GOLDEN = np.array([0x9E3779B97F4A7C15], dtype=np.uint64)


def _mix(z: np.ndarray) -> np.ndarray:
    """splitmix64 finaliser on a uint64 array (wrapping arithmetic), in place: returns ``z``."""
    tmp = np.empty_like(z)   # the one temporary, reused by every step
    for bits, mult in ((30, _M1), (27, _M2), (31, None)):   # the three xor-shift steps
        z ^= np.right_shift(z, np.uint64(bits), out=tmp)
        if mult is not None:
            z *= mult
    return z


def random_tiebreak(seed: int, index: np.ndarray) -> np.ndarray:
    """A seeded pseudo-random int64 per item, a function of ``(seed, input position)`` only.

    ``ties="random"`` orders every tie by it: the order of an item depends neither on how the input was
    sorted nor on the block it is evaluated in, and no permutation of the whole input is built.
    """
    s = _mix(np.array([int(seed) & 0xFFFFFFFFFFFFFFFF], dtype=np.uint64))
    z = np.asarray(index).astype(np.uint64)
    z *= _GOLDEN
    z += s
    return _mix(z).view(np.int64)


def order_within_groups(sizes: np.ndarray, secondary: np.ndarray, descending: bool = False
                        ) -> np.ndarray | None:
    """Order the items of each group (contiguous runs of items) by ``secondary``; None if unchanged.

    The result is ``np.lexsort((secondary, group))`` with ``group = np.repeat(np.arange(len(sizes)),
    sizes)``: the groups stay where they are, equal ``secondary`` values keep their positions. Integer
    ``secondary`` takes one in-place sort of a combined key ``group | secondary - min(secondary) |
    position inside the group`` (bit fields, high to low) instead of lexsort's two passes: the position
    field makes the keys unique, orders equal values by position, and gives the item back after the
    sort. When the fields need more than 63 bits (random hashes), the low bits of ``secondary`` are
    dropped; the few runs of items whose truncated keys then collide are sorted by their full
    ``secondary`` afterwards, so the result is exactly lexsort's in every case.

    Parameters
    ----------
    sizes : int array (n_groups,)
        Items per group, >= 1, in item order (``TieStats.group_size`` of sorted lists).
    secondary : array (sum(sizes),)
        The order inside each group. Non-integer dtypes take lexsort.
    descending : bool, default=False
        Larger ``secondary`` first (``lexsort((-secondary, group))`` without the negated copy; equal
        values still in position order).

    Returns
    -------
    int64 array (n,) or None
        The items in order, or None when they already are (e.g. ``ties="input"`` on lists whose ties
        kept the input order).
    """
    sizes = np.asarray(sizes, dtype=np.int64)
    sec = np.asarray(secondary)
    n = len(sec)
    if int(sizes.sum()) != n or (sizes < 1).any():
        raise ValueError("sizes must be >= 1 and add up to len(secondary)")
    starts = np.concatenate(([0], np.cumsum(sizes)[:-1])) if len(sizes) else np.zeros(0, np.int64)

    def lexsort(idx: np.ndarray | None = None, run: np.ndarray | None = None) -> np.ndarray:
        v = sec if idx is None else sec[idx]
        if descending:   # ~v = -v - 1 reverses integers without overflow
            v = ~v if v.dtype.kind in "iub" else -v
        return np.lexsort((v, np.repeat(np.arange(len(sizes)), sizes) if run is None else run))

    if n == 0:
        return None
    wrong = sec[1:] > sec[:-1] if descending else sec[1:] < sec[:-1]
    wrong[starts[1:] - 1] = False       # pairs across a group boundary
    if not wrong.any():
        return None
    del wrong
    if sec.dtype.kind not in "iub":
        return lexsort()
    g_bits = (len(sizes) - 1).bit_length()
    p_bits = int(sizes.max() - 1).bit_length()
    if g_bits + p_bits > 62:   # beyond 2**62 items: no room for any bit of secondary
        return lexsort()
    # d = secondary - min(secondary) as uint64 (any integer range); every array here has one entry per
    # item, so everything is computed in place, in two arrays (d's is reused)
    if sec.dtype.kind == "i":   # order-preserving map to uint64: flip the sign bit
        d = sec.astype(np.int64, copy=False).view(np.uint64) ^ np.uint64(1 << 63)
    else:
        d = sec.astype(np.uint64)
    if descending:
        np.invert(d, out=d)
    d -= d.min()
    d_bits = int(d.max()).bit_length()
    shift = max(0, g_bits + d_bits + p_bits - 63)   # low bits of d dropped to fit in 63 bits
    key = np.zeros(n, dtype=np.uint64)   # the group of every item: a cumsum of group starts
    key[starts[1:]] = 1
    np.cumsum(key, out=key)
    key <<= np.uint64(d_bits - shift + p_bits)
    if shift:
        d >>= np.uint64(shift)
    d <<= np.uint64(p_bits)
    key |= d
    buf = d.view(np.int64)
    # position inside the group: a cumsum of ones restarting at 0 at each group's first item
    buf.fill(1)
    buf[0] = 0
    buf[starts[1:]] = 1 - sizes[:-1]
    np.cumsum(buf, out=buf)
    key |= buf.view(np.uint64)
    key.sort()
    tie = None
    if shift:   # truncated keys of one group may collide: equal bits above the position field
        np.right_shift(key, np.uint64(p_bits), out=buf.view(np.uint64))
        tie = buf[1:] == buf[:-1]
    key &= np.uint64((1 << p_bits) - 1)                 # the position inside the group ...
    order = key.view(np.int64)
    buf.fill(0)                                          # ... plus the group's first item (a cumsum)
    buf[starts[1:]] = sizes[:-1]
    order += np.cumsum(buf, out=buf)
    del buf, d
    if tie is None or not tie.any():
        return order
    # runs of colliding keys are in position order: sort each by its full secondary (stable)
    member = np.zeros(n, dtype=bool)
    member[1:] = tie
    member[:-1] |= tie
    at = np.flatnonzero(member)
    if 2 * len(at) > n:
        return lexsort()
    items = order[at]
    order[at] = items[lexsort(items, np.cumsum(np.concatenate(([True], ~tie)))[at])]
    return order


def order_within_groups_by_words(sizes: np.ndarray, words: list[np.ndarray], descending: bool = False
                                 ) -> np.ndarray | None:
    """:func:`order_within_groups` for a secondary key given as words compared lexicographically
    (most significant first, e.g. the 8-byte words of document ids); None if already in order.

    The first word orders each group; only the runs of items whose first words are equal inside a
    group are then sorted by the other words (few in practice: ids sharing their first 8 bytes).
    """
    words = list(words)
    order = order_within_groups(sizes, words[0], descending)
    if len(words) == 1:
        return order
    n = len(words[0])
    idx = np.arange(n) if order is None else order
    first = words[0][idx]
    same = first[1:] == first[:-1]
    del first
    ends = np.cumsum(np.asarray(sizes, dtype=np.int64))
    same[ends[:-1] - 1] = False          # pairs across a group boundary
    if not same.any():
        return order
    member = np.zeros(n, dtype=bool)
    member[1:] = same
    member[:-1] |= same
    at = np.flatnonzero(member)
    run = np.cumsum(np.concatenate(([True], ~same)))[at]   # one number per run of equal first words
    items = idx[at]
    rest = [np.invert(w[items]) if descending else w[items] for w in words[1:]]   # invert: descending
    idx[at] = items[np.lexsort((*rest[::-1], run))]
    return idx


class TieOrderings:
    """The tie statistics of one set of ranked lists under each ordering, built on demand and cached."""

    def __init__(self, stats: TieStats, ranked: RankedLists | None = None, seed: int = 0) -> None:
        self.expected = stats
        self.ranked = ranked
        self.seed = seed
        self._cache: dict = {}

    @classmethod
    def from_ranked(cls, ranked: RankedLists, seed: int = 0) -> "TieOrderings":
        judged = Judged.from_csr(ranked.judged_ptr, ranked.judged)
        return cls(TieStats.from_ranked(ranked, judged), ranked, seed)

    def forget(self) -> None:
        """Drop the cached orderings (memory), keeping the expected statistics."""
        self._cache.clear()

    def fixed(self, mode: str) -> TieStats:
        """Statistics for a measure-independent fixed order (input, trec_eval, random)."""
        if mode in self._cache:
            return self._cache[mode]
        order = self.fixed_order(mode)
        ranked = self.ranked
        grades = ranked.grades if order is None else ranked.grades[order]
        stats = TieStats.singletons(ranked, grades, self.expected.judged)
        self._cache[mode] = stats
        return stats

    def fixed_order(self, mode: str) -> np.ndarray | None:
        """The items in the order of a fixed tie mode (None: already in that order)."""
        ranked = self.ranked
        if ranked is None:
            raise InputError(f"ties={mode!r} needs an order of the items; it is not available for "
                             "histogram-based evaluation (use evaluate_matrix on the distances)")
        if mode == "input":
            secondary = ranked.input_order
        elif mode == "trec_eval":
            secondary = ranked.trec_order   # descending below
        elif mode == "random":
            secondary = random_tiebreak(self.seed, ranked.input_order)
        else:
            raise ValueError(mode)
        if isinstance(secondary, list):   # words of the document ids, most significant first
            return order_within_groups_by_words(self.expected.group_size, secondary, descending=True)
        return order_within_groups(self.expected.group_size, secondary, descending=mode == "trec_eval")

    def extreme(self, preference: Preference, best: bool) -> TieStats:
        """Groups split by a preference, best first (optimistic) or last (pessimistic).

        ``preference = (key, fn)``: ``fn(grades)`` gives the item values preferred higher (primary key
        first), ``key`` identifies it (orderings of equal keys are computed once)."""
        key, fn = preference
        if ("pref", key, best) not in self._cache:
            self._cache[("pref", key, best)] = self.expected.refine(fn, best)
        return self._cache[("pref", key, best)]

    def for_mode(self, mode: str, preference: Preference) -> TieStats:
        """The statistics under a tie mode; ``preference`` serves the optimistic and pessimistic ones.
        ``lower`` / ``upper`` are no ordering (:func:`tierank.engine.core.evaluate_stats` computes them)."""
        if mode in BOUND_MODES:
            raise ValueError(f"ties={mode!r} is an extreme over all orderings, not one ordering")
        if mode == "expected":
            return self.expected
        if mode == "optimistic":
            return self.extreme(preference, True)
        if mode == "pessimistic":
            return self.extreme(preference, False)
        return self.fixed(mode)


def check_mode(ties: str) -> None:
    if ties not in TIE_MODES:
        raise InputError(f"ties={ties!r} is not a tie mode; use one of {', '.join(TIE_MODES)}")
