"""The one evaluation core: prepare -> evaluate -> assemble, used by every entry point.

* **prepare**: a run and its judgments (any input :func:`tierank.io.frames.to_columns` reads) joined into
  ranked lists (:func:`tierank.data.join.join_run_qrels`), ``-M`` / ``-J`` applied
  (:func:`prepare_lists`);
* **evaluate**: the tie mode applied to every measure (:func:`evaluate_stats`: the loop above
  :mod:`tierank.ties`, which knows no measure, and :mod:`tierank.measures`, whose kernels know no tie
  mode), the queries scored as empty runs added (:func:`evaluate_lists`);
* **assemble**: the values of a batch of queries (:class:`QueryValues`) as sorted
  :class:`~tierank.Results` (:func:`to_results`).

For each measure the kernel runs on the tie statistics of the chosen mode (``expected``: ties kept
whole; a fixed mode: ties split into singletons in that mode's order); with bounds, and for
``ties="lower"`` / ``"upper"``, also on the measure's best and worst orderings (its ``preference`` first
/ last inside every tie, or the family's ``exact_bounds`` where those are not the extremes). The blocks
of :mod:`tierank.engine.blocked` and the partitions of :mod:`tierank.engine.partitioned` call the same
functions on their part of the queries. The path of one call: docs/architecture.md.
"""

from __future__ import annotations

import math
from dataclasses import replace
from typing import Any

import numpy as np

from .._threads import Pending, background
from ..data.join import join_run_qrels, sorted_label_order
from ..data.ranked import RankedLists
from ..errors import InputError, param_text
from ..io.frames import to_columns
from ..measures._no_relevant import apply_no_relevant, has_relevant
from ..measures._spec import Measure, QueryError
from ..results import QueryTable, Results
from ..ties.groups import Judged, TieStats
from ..ties.policy import BOUND_MODES, Preference, TieOrderings
from ..ties.restrict import restrict
from .options import Options

__all__ = ["PreparedLists", "QueryValues", "prepare_lists", "evaluate_lists", "evaluate_stats", "to_results",
           "check_tie_costs", "preference_of"]

Values = dict[Measure, np.ndarray]


# ------------------------------------------------------------------------------------------ prepare


class PreparedLists:
    """A run joined with its judgments, ``-M``/``-J`` applied: the ranked lists of the queries with
    documents, and the judged grades of the queries scored as empty runs."""

    def __init__(self, ranked: RankedLists, labels: np.ndarray, empty_labels: np.ndarray, empty_grades: list) -> None:
        self.ranked, self.labels, self.empty_labels, self.empty_grades = ranked, labels, empty_labels, empty_grades

    def restricted(self, opts: Options, judged_only: bool, max_docs: int | None) -> "PreparedLists":
        """The lists with ``-M max_docs`` then ``-J`` applied (:func:`tierank.ties.restrict.restrict`)."""
        if not judged_only and max_docs is None:
            return self
        kept = restrict(self.ranked, self.labels, judged_only=judged_only, max_docs=max_docs, ties=opts.ties,
                        bounds=opts.bounds, seed=opts.seed)
        return PreparedLists(kept.ranked, kept.labels, np.concatenate([self.empty_labels, kept.emptied_labels]),
                             list(self.empty_grades) + kept.emptied_judged)


def prepare_lists(qrels: Any, run: Any, opts: Options, positions: np.ndarray | int | None = None
                  ) -> PreparedLists:
    """Read, check and join a run with its judgments into ranked lists, ``-M``/``-J`` applied.

    ``positions``: where each run row stands in the whole run (an array; an int: the first row's, the
    others following it), for ``ties="input"`` and ``"random"`` on a block or a partition of a run; None:
    the rows' own order.
    """
    joined = join_run_qrels(to_columns(run, "run"), to_columns(qrels, "qrels"), missing=opts.missing,
                            scores_as_float32=opts.scores_as_float32, trec_eval_grades=opts.ties == "trec_eval")
    ranked = joined.ranked
    if positions is not None:
        rows = ranked.input_order
        ranked.input_order = positions[rows] if isinstance(positions, np.ndarray) else rows + int(positions)
    lists = PreparedLists(ranked, joined.labels, joined.empty_labels, list(joined.empty_judged))
    return lists.restricted(opts, bool(opts.judged_only), opts.max_docs)


# ------------------------------------------------------------------------------------------ evaluate


class QueryValues:
    """The values of a batch of queries: their ids (any order) and one array per column of
    :meth:`Options.columns <tierank.engine.options.Options.columns>`, in the order of ``labels``."""

    def __init__(self, labels: np.ndarray, columns: dict) -> None:
        self.labels, self.columns = labels, columns


def evaluate_lists(lists: PreparedLists, opts: Options, orderings: TieOrderings | None = None) -> QueryValues:
    """The values of every query of ``lists``: the ranked ones (measures with ``judged_only=True`` on
    their judged documents only, trec_eval ``-J`` for those measures), then those scored as empty runs.
    ``orderings``: the tie orderings of ``lists.ranked``, when the caller has them already."""
    plain = {t: m for t, m in opts.measures.items() if not m.judged_only}
    judged = {t: m for t, m in opts.measures.items() if m.judged_only}
    parts = [_values(lists, replace(opts, measures=plain), orderings)] if plain else []
    if judged:   # on the judged documents only: the same queries, maybe in another order
        parts.append(_values(lists.restricted(opts, True, None), replace(opts, measures=judged)))
    labels, columns = parts[0].labels, dict(parts[0].columns)
    for part in parts[1:]:
        at = _positions(part.labels, labels)
        columns.update({col: a[at] for col, a in part.columns.items()})
    return QueryValues(labels, {col: columns[col] for col in opts.columns()})


def _positions(labels: np.ndarray, wanted: np.ndarray) -> np.ndarray:
    """Where each of ``wanted`` stands in ``labels`` (the same ids, maybe in another order)."""
    if len(labels) == len(wanted) and (labels == wanted).all():
        return np.arange(len(labels))
    order = np.argsort(labels, kind="stable")
    at = order[np.searchsorted(labels, wanted, sorter=order)]
    if len(labels) != len(wanted) or not (labels[at] == wanted).all():
        raise RuntimeError("the judged-only measures were computed on other queries (a bug: please report it)")
    return at


def _values(lists: PreparedLists, opts: Options, orderings: TieOrderings | None = None) -> QueryValues:
    """The values of ``opts.measures`` on ``lists``: ranked queries then those scored as empty runs."""
    values: Values = {}
    lower: Values = {}
    upper: Values = {}
    if lists.ranked.n_queries:
        if orderings is None:
            orderings = TieOrderings.from_ranked(lists.ranked, opts.seed)
        values, lower, upper = evaluate_stats(orderings, opts, labels=lists.labels)
    empty_judged = _judged(lists.empty_grades)
    columns = {}
    for text, m in opts.measures.items():
        empty = m.empty_values(empty_judged)
        if not m.is_text:
            empty = apply_no_relevant(m, empty, has_relevant(m, empty_judged), opts.no_relevant,
                                      lists.empty_labels)
        columns[text] = np.concatenate([values.get(m, np.zeros(0)), empty])
        if opts.bounds:
            columns[f"{text}_lower"] = np.concatenate([lower.get(m, np.zeros(0)), empty])
            columns[f"{text}_upper"] = np.concatenate([upper.get(m, np.zeros(0)), empty])
    labels = lists.labels
    all_labels = np.concatenate([labels, lists.empty_labels]) if len(lists.empty_labels) else labels
    return QueryValues(all_labels, columns)


def _judged(grades: list[np.ndarray]) -> Judged:
    """The judged grades of the queries scored as empty runs, as one :class:`Judged`."""
    ptr = np.zeros(len(grades) + 1, dtype=np.int64)
    np.cumsum([len(g) for g in grades], out=ptr[1:])
    flat = np.concatenate(grades).astype(np.float64) if grades else np.zeros(0)
    return Judged.from_csr(ptr, flat)


# ------------------------------------------------------------------------------------------ assemble


def to_results(values: QueryValues, opts: Options, as_str: bool = False) -> Results:
    """:class:`~tierank.Results` of a batch of queries, sorted by query id, as numpy columns (the DataFrames
    are built when first read; ``as_str``: their index of pandas' ``str`` dtype, for ids that are not
    integers collected from an engine)."""
    order = sorted_label_order(values.labels)
    ids = values.labels[order]

    def table(suffix: str) -> QueryTable:
        return QueryTable(ids, {t: values.columns[t + suffix][order] for t in opts.measures}, "query_id", as_str)
    return Results(per_query=table(""), lower=table("_lower") if opts.bounds else None,
                   upper=table("_upper") if opts.bounds else None, ties=opts.ties, measures=opts.measures)


# ------------------------------------------------------------------------------- tie modes on measures


def _round_up(x: float) -> float | int:
    """``x`` rounded up to three significant digits (an int where it is one), to suggest a budget.

    >>> _round_up(2519.2), _round_up(2514.0), _round_up(2.5313e20), _round_up(9.991e8)
    (2520, 2520, 2.54e+20, 1000000000)
    """
    v = float(f"{x:.3g}")
    if v < x:
        v = float(f"{v + 10.0 ** (math.floor(math.log10(v)) - 2):.3g}")   # the third digit up by one
    return int(v) if v < 2 ** 53 and v.is_integer() else v


def check_tie_costs(groups: TieStats, m: Measure, bounds: bool, budget: int, remedy: str | None = None) -> None:
    """Raise a :class:`QueryError` (the evaluation names the query) when the exact work of ``m`` on these
    tie statistics (``bounds``: its ``exact_bounds``; else its kernel) would take more than ``budget``
    operations in some query, by the family's ``cost`` estimate; nothing for families without one, or
    for fixed orders (no tie). The check is per query, so it does not depend on how a run is cut into
    blocks or partitions. ``remedy``: what else the message suggests."""
    cost = m.family.cost
    if cost is None or groups.all_singletons:
        return
    ties, operations = cost(groups, m, bounds)
    if not len(ties):
        return
    query = groups.group_query[ties]
    per_query = np.bincount(query, weights=operations, minlength=groups.n_queries)
    worst = int(np.argmax(per_query))
    if not per_query[worst] > budget:
        return
    mine = np.flatnonzero(query == worst)
    tie = int(ties[mine[int(np.argmax(operations[mine]))]])
    first, size = int(groups.group_first[tie]), int(groups.group_size[tie])
    work = "exact bounds" if bounds else "exact expectation"
    # G's estimate is a float product, inf beyond 1e308 (a tie of over a thousand distinct gains)
    needed = float(per_query[worst])
    amount = f"about {needed:.3g}" if math.isfinite(needed) else "more than 1e+308"
    # the options as the caller spells them (tie_cost_budget=... in Python, --tie-cost-budget ... on the CLI)
    raise_it = (f"raise it ({param_text('tie_cost_budget', _round_up(needed))}: time and memory grow with it), or "
                if math.isfinite(needed) else "")
    remedy = remedy or f"use a fixed tie mode ({param_text('ties', 'trec_eval')})"
    raise QueryError(f"{m}: the {work} over all orderings of tied documents needs {amount} "
                     f"operations in this query, beyond the budget of {budget:.3g} (its costliest tie: ranks "
                     f"{first + 1}-{first + size}, {size} documents); {raise_it}{remedy}", worst)


def preference_of(m: Measure) -> Preference:
    """The measure's preference inside a tie, keyed by the family's preference function and the
    parameters it reads (measures that prefer the same items share one ordering)."""
    pref = m.family.preference
    key = (pref, tuple(m[p] if not isinstance(m[p], dict) else repr(m[p]) for p in getattr(pref, "params", ())))
    return key, lambda grades: pref(m, grades)


def evaluate_stats(orderings: TieOrderings, opts: Options, labels: Any = None,
                   what: str = "query") -> tuple[Values, Values, Values]:
    """Run every measure of ``opts`` on every query; return (values, lower, upper) per measure.

    ``labels[i]`` names query i (``what`` says what it is: query, row) in the InputError raised for bad
    query data (a grade above ERR's ``max_grade``, a DCG beyond float64) and for ``no_relevant="error"``.
    The ``no_relevant`` policy is applied to values, lower and upper
    (:func:`tierank.measures._no_relevant.apply_no_relevant`); costly ties are refused up front
    (:func:`check_tie_costs`).
    """
    try:
        values, lower, upper = _evaluate_stats(orderings, opts.distinct, opts.ties, opts.bounds,
                                               opts.tie_cost_budget)
    except QueryError as err:
        label = err.query if labels is None else labels[err.query]
        label = label.item() if isinstance(label, np.generic) else label
        raise InputError(f"{err} ({what} {label!r})", query=label) from None
    if opts.no_relevant != "zero":
        judged = orderings.expected.judged
        for m in (m for m in values if not m.is_text):
            has = has_relevant(m, judged)
            values[m] = apply_no_relevant(m, values[m], has, opts.no_relevant, labels, what)
            if opts.bounds:
                lower[m] = apply_no_relevant(m, lower[m], has, opts.no_relevant, labels, what)
                upper[m] = apply_no_relevant(m, upper[m], has, opts.no_relevant, labels, what)
    return values, lower, upper


def _evaluate_stats(orderings: TieOrderings, measures: list[Measure], ties: str,
                    bounds: bool, budget: int) -> tuple[Values, Values, Values]:
    values: Values = {}
    lower: Values = {}
    upper: Values = {}
    distinct = list(dict.fromkeys(measures))
    for m in distinct:   # every costly tie refused up front, before any kernel runs
        _check_costs(orderings, m, ties, bounds, budget)
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


def _plan(orderings: TieOrderings, m: Measure, ties: str, bounds: bool) -> tuple[TieStats | None, bool]:
    """What :func:`_apply` runs ``m`` on: (the tie statistics of its value, or None when the value is
    itself a bound; whether the exact bounds are computed). The one place of this choice, so that
    :func:`_check_costs` checks exactly the work :func:`_apply` will do."""
    if m.is_text:   # a string per query (RelString): no range; under lower / upper, the ties shown whole
        return (orderings.expected if ties in BOUND_MODES else orderings.for_mode(ties, preference_of(m))), False
    if ties in BOUND_MODES:   # ties="lower" / "upper" are the bounds themselves
        return None, True
    return orderings.for_mode(ties, preference_of(m)), bounds


def _check_costs(orderings: TieOrderings, m: Measure, ties: str, bounds: bool, budget: int) -> None:
    """:func:`check_tie_costs` on every tie statistics :func:`_apply` runs ``m`` on."""
    if m.family.cost is None:
        return
    stats, extremes = _plan(orderings, m, ties, bounds)
    if stats is not None:
        check_tie_costs(stats, m, False, budget)
    if extremes:   # as _extremes computes them
        pref = preference_of(m)
        remedy = None if ties in BOUND_MODES else f"evaluate without bounds ({param_text('bounds', False)})"
        check_tie_costs(orderings.extreme(pref, False), m, False, budget, remedy)
        check_tie_costs(orderings.extreme(pref, True), m, False, budget, remedy)
        if m.family.exact_bounds is not None:
            check_tie_costs(orderings.expected, m, True, budget, remedy)


def _apply(kernel: "_BatchedKernels", orderings: TieOrderings, m: Measure, ties: str, bounds: bool,
           values: Values, lower: Values, upper: Values) -> None:
    """The measure's values under the tie mode, and its bounds, into ``values``, ``lower``, ``upper``."""
    stats, extremes = _plan(orderings, m, ties, bounds)
    if stats is not None:
        values[m] = kernel(stats, m) if m.is_text else _into_range(m, kernel(stats, m))
    if m.is_text and bounds:   # no order of a string is its extreme: its bounds are itself
        lower[m] = upper[m] = values[m]
    if not extremes:
        return
    lo, hi = _extremes(kernel, orderings, m, preference_of(m))
    if stats is None:   # ties="lower" / "upper"
        values[m] = lo if ties == "lower" else hi
        if bounds:
            lower[m], upper[m] = lo, hi
        return
    # the value under any ordering lies in [lo, hi]; absorb last-bit rounding differences
    v = values[m]
    slack = 1e-12 * (1.0 + np.abs(v))
    lower[m] = np.where((v < lo) & (lo - v <= slack), v, lo)
    upper[m] = np.where((v > hi) & (v - hi <= slack), v, hi)


def _extremes(kernel: "_BatchedKernels", orderings: TieOrderings, m: Measure, pref: Preference
              ) -> tuple[np.ndarray, np.ndarray]:
    """The exact (minimum, maximum) of a numeric measure over all orderings of tied items: its values on
    the preference's worst and best orderings, or the family's ``exact_bounds`` where those are not the
    extremes. The one place of ``bounds=True`` and ``ties="lower"`` / ``"upper"``."""
    worst, best = orderings.extreme(pref, False), orderings.extreme(pref, True)
    lo, hi = _into_range(m, kernel(worst, m)), _into_range(m, kernel(best, m))
    if m.family.exact_bounds is not None:
        lo, hi = m.family.exact_bounds(orderings.expected, best, worst, m, lo, hi)
        lo, hi = _into_range(m, lo), _into_range(m, hi)
    return lo, hi


class _BatchedKernels:
    """``kernel(groups, m)``: the measure's kernel, after its family's ``batch`` (if any) has run once on
    these tie statistics with every measure of the evaluation that shares it.

    :meth:`start` runs the batches on one set of statistics in a background thread while the other
    kernels run (numpy releases the GIL, so a second core does the batch); a kernel that needs a batch
    waits for it there, and its errors are raised there. The values are the same numbers either way.
    Use as a context manager: leaving it waits for the background work, whatever happened."""

    def __init__(self, measures: list[Measure]) -> None:
        self.measures = measures
        self._done: list[tuple[TieStats, Any, Pending | None]] = []
        self._pool: Any = None   # a ThreadPoolExecutor, made when the first batch starts

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
                from concurrent.futures import ThreadPoolExecutor   # here: a small run never starts a thread

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
    lo, hi = m.value_range or (-np.inf, np.inf)
    slack = 1e-12 * (1.0 + np.abs(v))
    over = (v > hi) & (v - hi <= slack)
    under = (v < lo) & (lo - v <= slack)
    if over.any() or under.any():
        v = np.where(over, hi, np.where(under, lo, v))
    return v


