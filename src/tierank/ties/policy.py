"""Tie modes. A fixed policy orders the items of every tie, then splits every tie into singletons, so
the same kernels give the plain (tie-broken) metric; ``expected`` keeps the ties whole.

| mode          | order inside a tie                                                           |
|---------------|------------------------------------------------------------------------------|
| expected      | none: exact mean over all orderings (closed forms)                           |
| optimistic    | the measure's preferred items first (relevant / higher gain)                 |
| pessimistic   | the measure's preferred items last                                           |
| input         | input order                                                                  |
| trec_eval     | document id descending as a string (matrices: column index descending)       |
| random        | a seeded hash of the input position (splitmix64), so independent of the sort  |
"""

from __future__ import annotations

from typing import Any

import numpy as np

from ..data.ranked import RankedLists
from ..errors import InputError
from ..measures._spec import Measure
from ..measures.err import GradeAboveMax
from .groups import Judged, TieStats

__all__ = ["TIE_MODES", "TieOrderings", "evaluate_lists", "evaluate_stats", "check_mode", "random_tiebreak"]

TIE_MODES = ("expected", "optimistic", "pessimistic", "input", "trec_eval", "random")

_M1 = np.array([0xBF58476D1CE4E5B9], dtype=np.uint64)
_M2 = np.array([0x94D049BB133111EB], dtype=np.uint64)
_GOLDEN = np.array([0x9E3779B97F4A7C15], dtype=np.uint64)


def _mix(z: np.ndarray) -> np.ndarray:
    """splitmix64 finaliser on uint64 arrays (wrapping arithmetic)."""
    z = (z ^ (z >> np.uint64(30))) * _M1
    z = (z ^ (z >> np.uint64(27))) * _M2
    return z ^ (z >> np.uint64(31))


def random_tiebreak(seed: int, index: np.ndarray) -> np.ndarray:
    """A seeded pseudo-random int64 per item, a function of ``(seed, input position)`` only.

    ``ties="random"`` orders every tie by it: the order of an item depends neither on how the input was
    sorted nor on the block it is evaluated in, and no permutation of the whole input is built.
    """
    s = _mix(np.array([int(seed) & 0xFFFFFFFFFFFFFFFF], dtype=np.uint64))
    z = np.asarray(index).astype(np.uint64) * _GOLDEN + s
    return _mix(z).view(np.int64)


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

    def fixed(self, mode: str) -> TieStats:
        """Statistics for a measure-independent fixed order (input, trec_eval, random)."""
        if mode in self._cache:
            return self._cache[mode]
        ranked = self.ranked
        if ranked is None:
            raise InputError(f"ties={mode!r} needs an order of the items; it is not available for "
                             "histogram-based evaluation (use evaluate_matrix on the distances)")
        if mode == "input":
            secondary = ranked.input_order
        elif mode == "trec_eval":
            secondary = -ranked.trec_order
        elif mode == "random":
            secondary = random_tiebreak(self.seed, ranked.input_order)
        else:
            raise ValueError(mode)
        order = np.lexsort((secondary, self.expected.item_group))
        stats = TieStats.singletons(ranked, ranked.grades[order], self.expected.judged)
        self._cache[mode] = stats
        return stats

    def extreme(self, m: Measure, best: bool) -> TieStats:
        """Groups split by the measure's preference, best first (optimistic) or last (pessimistic)."""
        pref = m.family.preference
        key = ("pref", pref, tuple(m[p] if not isinstance(m[p], dict) else repr(m[p])
                                   for p in getattr(pref, "params", ())), best)
        if key not in self._cache:
            self._cache[key] = self.expected.refine(lambda grades: pref(m, grades), best)
        return self._cache[key]

    def for_mode(self, mode: str, m: Measure) -> TieStats:
        if mode == "expected":
            return self.expected
        if mode == "optimistic":
            return self.extreme(m, True)
        if mode == "pessimistic":
            return self.extreme(m, False)
        return self.fixed(mode)


def check_mode(ties: str) -> None:
    if ties not in TIE_MODES:
        raise InputError(f"ties={ties!r} is not a tie mode; use one of {', '.join(TIE_MODES)}")


Values = dict[Measure, np.ndarray]


def evaluate_stats(orderings: TieOrderings, measures: list[Measure], ties: str = "expected",
                   bounds: bool = False, labels: Any = None, what: str = "query"
                   ) -> tuple[Values, Values, Values]:
    """Run every measure on every query; return (values, lower, upper) per measure.

    ``labels[i]`` names query i (``what`` says what it is: query, row) in the InputError raised for a
    grade above ERR's ``max_grade``.
    """
    check_mode(ties)
    try:
        return _evaluate_stats(orderings, measures, ties, bounds)
    except GradeAboveMax as err:
        label = err.query if labels is None else labels[err.query]
        label = label.item() if isinstance(label, np.generic) else label
        raise InputError(f"{err} ({what} {label!r})", query=label) from None


def _evaluate_stats(orderings: TieOrderings, measures: list[Measure], ties: str,
                    bounds: bool) -> tuple[Values, Values, Values]:
    values: Values = {}
    lower: Values = {}
    upper: Values = {}
    for m in dict.fromkeys(measures):  # each distinct measure once, in order
        values[m] = m.family.kernel(orderings.for_mode(ties, m), m)
        if bounds:
            worst, best = orderings.extreme(m, False), orderings.extreme(m, True)
            lo, hi = m.family.kernel(worst, m), m.family.kernel(best, m)
            if m.family.exact_bounds is not None:
                lo, hi = m.family.exact_bounds(orderings.expected, best, worst, m, lo, hi)
            # the value under any ordering lies in [lo, hi]; absorb last-bit rounding differences
            v = values[m]
            slack = 1e-12 * (1.0 + np.abs(v))
            lower[m] = np.where((v < lo) & (lo - v <= slack), v, lo)
            upper[m] = np.where((v > hi) & (v - hi <= slack), v, hi)
    return values, lower, upper


def evaluate_lists(ranked: RankedLists, measures: list[Measure], ties: str = "expected",
                   bounds: bool = False, seed: int = 0, labels: Any = None, what: str = "query"
                   ) -> tuple[Values, Values, Values]:
    """:func:`evaluate_stats` on sorted ranked lists (every query non-empty)."""
    check_mode(ties)
    return evaluate_stats(TieOrderings.from_ranked(ranked, seed), measures, ties, bounds, labels, what)
