"""Tie modes. A fixed policy orders the items of every tie, then splits every tie into singletons, so
the same kernels give the plain (tie-broken) metric; ``expected`` keeps the ties whole.

| mode          | order inside a tie                                                           |
|---------------|------------------------------------------------------------------------------|
| expected      | none: exact mean over all orderings (closed forms)                           |
| optimistic    | the measure's preferred items first (relevant / higher gain)                 |
| pessimistic   | the measure's preferred items last                                           |
| input         | input order                                                                  |
| trec_eval     | document id descending as a string (matrices: column index descending)       |
| random        | a seeded random permutation                                                  |
"""

from __future__ import annotations

import numpy as np

from ..data.ranked import RankedLists
from ..errors import InputError
from ..measures._spec import Measure
from .groups import TieGroups

__all__ = ["TIE_MODES", "TieOrderings", "evaluate_lists"]

TIE_MODES = ("expected", "optimistic", "pessimistic", "input", "trec_eval", "random")


class TieOrderings:
    """The tie groups of one set of ranked lists under each ordering, built on demand and cached."""

    def __init__(self, ranked: RankedLists, seed: int = 0) -> None:
        self.ranked = ranked
        self.seed = seed
        self.expected = TieGroups(ranked, ranked.grades, singletons=False)
        self._cache: dict = {}

    def _within_ties(self, secondary: list[np.ndarray]) -> TieGroups:
        """Reorder every tie by the secondary keys (ascending, first key primary), as singletons."""
        order = np.lexsort(tuple(reversed(secondary)) + (self.expected.item_tie,))
        return TieGroups(self.ranked, self.ranked.grades[order], singletons=True)

    def fixed(self, mode: str) -> TieGroups:
        """Tie groups for a measure-independent fixed order (input, trec_eval, random)."""
        if mode not in self._cache:
            n = len(self.ranked.grades)
            if mode == "input":
                groups = TieGroups(self.ranked, self.ranked.grades, singletons=True)
            elif mode == "trec_eval":
                groups = self._within_ties([-self.ranked.trec_order])
            elif mode == "random":
                groups = self._within_ties([np.random.default_rng(self.seed).permutation(n)])
            else:
                raise ValueError(mode)
            self._cache[mode] = groups
        return self._cache[mode]

    def extreme(self, m: Measure, best: bool) -> TieGroups:
        """Ties sorted by the measure's preference, descending (best) or ascending (worst)."""
        pref = m.family.preference
        key = ("pref", pref, tuple(m[p] if not isinstance(m[p], dict) else repr(m[p])
                                   for p in getattr(pref, "params", ())), best)
        if key not in self._cache:
            values = pref(m, self.ranked.grades)
            self._cache[key] = self._within_ties([-v if best else v for v in values])
        return self._cache[key]

    def for_mode(self, mode: str, m: Measure) -> TieGroups:
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


def evaluate_lists(ranked: RankedLists, measures: list[Measure], ties: str = "expected",
                   bounds: bool = False, seed: int = 0
                   ) -> tuple[dict[Measure, np.ndarray], dict[Measure, np.ndarray], dict[Measure, np.ndarray]]:
    """Run every measure on every (non-empty) query; return (values, lower, upper) per measure."""
    check_mode(ties)
    orderings = TieOrderings(ranked, seed)
    values: dict[Measure, np.ndarray] = {}
    lower: dict[Measure, np.ndarray] = {}
    upper: dict[Measure, np.ndarray] = {}
    for m in dict.fromkeys(measures):  # each distinct measure once, in order
        values[m] = m.family.kernel(orderings.for_mode(ties, m), m)
        if bounds:
            lo = m.family.kernel(orderings.extreme(m, False), m)
            hi = m.family.kernel(orderings.extreme(m, True), m)
            if m.family.exact_bounds is not None:
                lo, hi = m.family.exact_bounds(orderings.expected, orderings.extreme(m, True),
                                               orderings.extreme(m, False), m, lo, hi)
            # the value under any ordering lies in [lo, hi]; absorb last-bit rounding differences
            v = values[m]
            slack = 1e-12 * (1.0 + np.abs(v))
            lower[m] = np.where((v < lo) & (lo - v <= slack), v, lo)
            upper[m] = np.where((v > hi) & (v - hi <= slack), v, hi)
    return values, lower, upper
