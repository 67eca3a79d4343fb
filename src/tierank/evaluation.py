"""Apply a tie mode to every measure: the loop above :mod:`tierank.ties` (orderings of tied items,
which knows no measure) and :mod:`tierank.measures` (kernels, which know no tie mode).

For each measure the kernel runs on the tie statistics of the chosen mode (``expected``: ties kept
whole; a fixed mode: ties split into singletons in that mode's order); with bounds, also on the
measure's best and worst orderings (its ``preference`` first / last inside every tie, or the family's
``exact_bounds`` where those are not the extremes).
"""

from __future__ import annotations

from concurrent.futures import Future, ThreadPoolExecutor
from typing import Any

import numpy as np

from ._threads import background
from .data.ranked import RankedLists
from .errors import InputError
from .measures._no_relevant import apply_no_relevant, check_no_relevant, has_relevant
from .measures._spec import Measure, QueryError
from .ties.groups import TieStats
from .ties.policy import Preference, TieOrderings, check_mode

__all__ = ["evaluate_stats", "evaluate_lists", "preference_of"]

Values = dict[Measure, np.ndarray]


def preference_of(m: Measure) -> Preference:
    """The measure's preference inside a tie, keyed by the family's preference function and the
    parameters it reads (measures that prefer the same items share one ordering)."""
    pref = m.family.preference
    key = (pref, tuple(m[p] if not isinstance(m[p], dict) else repr(m[p]) for p in getattr(pref, "params", ())))
    return key, lambda grades: pref(m, grades)


def evaluate_stats(orderings: TieOrderings, measures: list[Measure], ties: str = "expected",
                   bounds: bool = False, labels: Any = None, what: str = "query", no_relevant: str = "zero"
                   ) -> tuple[Values, Values, Values]:
    """Run every measure on every query; return (values, lower, upper) per measure.

    ``labels[i]`` names query i (``what`` says what it is: query, row) in the InputError raised for bad
    query data (a grade above ERR's ``max_grade``, a DCG beyond float64) and for ``no_relevant="error"``.
    ``no_relevant`` is applied to values, lower and upper
    (:func:`tierank.measures._no_relevant.apply_no_relevant`).
    """
    check_mode(ties)
    check_no_relevant(no_relevant)
    try:
        values, lower, upper = _evaluate_stats(orderings, measures, ties, bounds)
    except QueryError as err:
        label = err.query if labels is None else labels[err.query]
        label = label.item() if isinstance(label, np.generic) else label
        raise InputError(f"{err} ({what} {label!r})", query=label) from None
    if no_relevant != "zero":
        judged = orderings.expected.judged
        for m in (m for m in values if not m.family.text):
            has = has_relevant(m, judged)
            values[m] = apply_no_relevant(m, values[m], has, no_relevant, labels, what)
            if bounds:
                lower[m] = apply_no_relevant(m, lower[m], has, no_relevant, labels, what)
                upper[m] = apply_no_relevant(m, upper[m], has, no_relevant, labels, what)
    return values, lower, upper


def _evaluate_stats(orderings: TieOrderings, measures: list[Measure], ties: str,
                    bounds: bool) -> tuple[Values, Values, Values]:
    values: Values = {}
    lower: Values = {}
    upper: Values = {}
    distinct = list(dict.fromkeys(measures))
    with _BatchedKernels(distinct) as kernel:
        if ties == "expected":
            kernel.start(orderings.expected)
        # each distinct measure once; those whose batch runs in the background last, so it overlaps the rest
        for m in sorted(distinct, key=kernel.in_background):
            _apply(kernel, orderings, m, ties, bounds, values, lower, upper)
    values = {m: values[m] for m in distinct}
    if bounds:
        lower, upper = {m: lower[m] for m in distinct}, {m: upper[m] for m in distinct}
    return values, lower, upper


def _apply(kernel: "_BatchedKernels", orderings: TieOrderings, m: Measure, ties: str, bounds: bool,
           values: Values, lower: Values, upper: Values) -> None:
    """The measure's values under the tie mode, and its bounds, into ``values``, ``lower``, ``upper``."""
    pref = preference_of(m)
    if m.family.text:   # a string per query (RelString): no range, its bounds are itself
        values[m] = kernel(orderings.for_mode(ties, pref), m)
        if bounds:
            lower[m] = upper[m] = values[m]
        return
    values[m] = _into_range(m, kernel(orderings.for_mode(ties, pref), m))
    if bounds:
        worst, best = orderings.extreme(pref, False), orderings.extreme(pref, True)
        lo, hi = _into_range(m, kernel(worst, m)), _into_range(m, kernel(best, m))
        if m.family.exact_bounds is not None:
            lo, hi = m.family.exact_bounds(orderings.expected, best, worst, m, lo, hi)
            lo, hi = _into_range(m, lo), _into_range(m, hi)
        # the value under any ordering lies in [lo, hi]; absorb last-bit rounding differences
        v = values[m]
        slack = 1e-12 * (1.0 + np.abs(v))
        lower[m] = np.where((v < lo) & (lo - v <= slack), v, lo)
        upper[m] = np.where((v > hi) & (v - hi <= slack), v, hi)


class _BatchedKernels:
    """``kernel(groups, m)``: the measure's kernel, after its family's ``batch`` (if any) has run once on
    these tie statistics with every measure of the evaluation that shares it.

    :meth:`start` runs the batches on one set of statistics in a background thread while the other
    kernels run (numpy releases the GIL, so a second core does the batch); a kernel that needs a batch
    waits for it there, and its errors are raised there. The values are the same numbers either way.
    Use as a context manager: leaving it waits for the background work, whatever happened."""

    def __init__(self, measures: list[Measure]) -> None:
        self.measures = measures
        self._done: list[tuple[TieStats, Any, Future | None]] = []
        self._pool: ThreadPoolExecutor | None = None

    def __enter__(self) -> "_BatchedKernels":
        return self

    def __exit__(self, *exc: object) -> None:
        if self._pool is not None:
            self._pool.shutdown(wait=True)

    def start(self, groups: TieStats) -> None:
        """Run every batch of these statistics in the background, if there is a second core."""
        if not background():
            return
        for batch in dict.fromkeys(m.family.batch for m in self.measures if m.family.batch is not None):
            if self._pool is None:
                self._pool = ThreadPoolExecutor(max_workers=1, thread_name_prefix="tierank-batch")
            future = self._pool.submit(batch, groups, self._sharing(batch))
            self._done.append((groups, batch, future))

    def in_background(self, m: Measure) -> bool:
        """Whether the measure's batch was started in the background."""
        return any(b is m.family.batch and f is not None for _, b, f in self._done)

    def __call__(self, groups: TieStats, m: Measure) -> Any:
        batch = m.family.batch
        if batch is not None:
            done = [f for g, b, f in self._done if g is groups and b is batch]
            if not done:
                self._done.append((groups, batch, None))
                batch(groups, self._sharing(batch))
            elif done[0] is not None:
                done[0].result()
        return m.family.kernel(groups, m)

    def _sharing(self, batch: Any) -> list[Measure]:
        return [o for o in self.measures if o.family.batch is batch]


def _into_range(m: Measure, v: np.ndarray) -> np.ndarray:
    """Values a last-bit rounding put just outside the family's declared range, moved onto its end
    (an nDCG of 1 + 1 ulp when the DCG equals the ideal DCG summed another way). Larger excesses are
    left alone: they would be bugs, not rounding.

    A value that is not finite raises a QueryError naming the query: kernels give exact values or refuse,
    and a value beyond float64 (a Utility or an ACG of grades near 1.8e308 scaled back to inf) is never
    passed on as a number. NaN is a value only where the measure says so (``empty='skip'``)."""
    skipped = np.isnan(v) if dict(m.items).get("empty") == "skip" else np.zeros(len(v), dtype=bool)
    bad = np.flatnonzero(~np.isfinite(v) & ~skipped)
    if bad.size:
        raise QueryError(f"measure {m.text or str(m)!r}: the value of this query is beyond float64's range "
                         f"({float(v[bad[0]])!r}): its grades or the measure's parameters are too large", int(bad[0]))
    lo, hi = m.family.value_range
    slack = 1e-12 * (1.0 + np.abs(v))
    over = (v > hi) & (v - hi <= slack)
    under = (v < lo) & (lo - v <= slack)
    if over.any() or under.any():
        v = np.where(over, hi, np.where(under, lo, v))
    return v


def evaluate_lists(ranked: RankedLists, measures: list[Measure], ties: str = "expected",
                   bounds: bool = False, seed: int = 0, labels: Any = None, what: str = "query",
                   no_relevant: str = "zero") -> tuple[Values, Values, Values]:
    """:func:`evaluate_stats` on sorted ranked lists (every query non-empty)."""
    check_mode(ties)
    return evaluate_stats(TieOrderings.from_ranked(ranked, seed), measures, ties, bounds, labels, what,
                          no_relevant)

