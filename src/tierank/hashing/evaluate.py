"""evaluate_codes: binary codes + labels -> tie-aware measures, block by block, without a sort.

For ``ties`` in ``expected`` / ``lower`` / ``upper`` / ``optimistic`` / ``pessimistic`` (and every bound)
the tie statistics come
straight from per-query histograms of (Hamming distance, grade) (:mod:`tierank.hashing.histogram`). The
fixed orders ``input`` (database index), ``trec_eval`` (database index descending) and ``random`` need
an order of the items: there the distances of a block of queries are sorted like
``evaluate_matrix(relevance, distances=D)`` does, so both give the same values.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Callable, Iterable

import numpy as np
import pandas as pd

from ..blocks import DEFAULT_MEMORY, block_rows, check_trec_eval_version, rank_rows, run_rows, topk_plan
from ..errors import InputError
from ..measures import Measure, parse_measures
from ..measures._no_relevant import check_no_relevant
from ..results import Results, aggregate
from ..evaluation import check_tie_cost_budget, evaluate_stats
from ..ties.policy import FIXED_ORDER_MODES, TieOrderings, check_mode
from .codes import check_pair
from .._progress import ProgressBar
from .distance import block_distances
from .histogram import apply_threshold, block_histogram, histogram_stats
from .labels import make_grader

__all__ = ["evaluate_codes", "CodeResults"]



@dataclass(repr=False, eq=False)   # Results.__eq__ compares the frames
class CodeResults(Results):
    """:class:`tierank.Results` of :func:`evaluate_codes`, with the averaging over queries it used.

    ``per_query`` (and ``lower`` / ``upper``) always hold one row per query. ``mean`` is, per measure:
    with ``average="micro"`` the mean over queries; with ``average="macro"`` the mean over query classes
    of the mean over the queries of each class. NaN values (``P(radius=r, empty='skip')`` with nothing
    within r) are left out of both. The counts (NumQ, NumRel, ...) are summed either way.
    """

    average: str = "micro"
    query_class: np.ndarray | None = field(default=None, repr=False)

    def _aggregate(self, frame: pd.DataFrame) -> dict[str, float | None]:
        out = aggregate(frame, self.measures)
        if self.average != "macro" or self.query_class is None:
            return out
        n_cls = int(self.query_class.max(initial=-1)) + 1
        for text, m in self.measures.items():
            if m.aggregate == "sum":
                continue
            col = frame[text].to_numpy(dtype=np.float64)
            ok = ~np.isnan(col)
            cls = self.query_class[ok]
            sums = np.bincount(cls, weights=col[ok], minlength=n_cls)
            counts = np.bincount(cls, minlength=n_cls)
            have = counts > 0
            out[text] = float((sums[have] / counts[have]).mean()) if have.any() else float("nan")
        return out


def _check_int(value: Any, name: str, *, positive: bool = True) -> int:
    if isinstance(value, bool) or not isinstance(value, (int, np.integer)) or (positive and value < 1):
        raise InputError(f"{name} must be a positive integer, got {value!r}")
    return int(value)


def _histogram_rows(bits: int, n_levels: int, memory: int) -> int:
    # counts (int64), the thresholded copy and the tie statistics built from them: ~4 arrays of the size
    return max(1, memory // max(1, (bits + 1) * n_levels * 8 * 4))


def evaluate_codes(query_codes: Any, db_codes: Any, query_labels: Any = None, db_labels: Any = None,
                   measures: str | Iterable[str] = ("AP", "nDCG@100", "P@1000"), *,
                   relevance: np.ndarray | Callable[[np.ndarray, np.ndarray], Any] | None = None,
                   packed: bool = False, bits: int | None = None, ties: str = "expected",
                   bounds: bool = False, average: str = "micro", distance_threshold: float | None = None,
                   block_size: int | None = None, memory: int = DEFAULT_MEMORY, seed: int = 0,
                   no_relevant: str = "zero", trec_eval_version: int = 10,
                   progress: bool | None = None, tie_cost_budget: float | None = None) -> Results:
    """Evaluate Hamming ranking of binary codes: every query against the whole database, ties exact.

    Items at equal Hamming distance tie; ``ties="expected"`` gives the exact mean over all their orderings
    (McSherry & Najork), computed from per-distance counts without sorting anything.

    Parameters
    ----------
    query_codes : array-like (n_queries, bits) or (bits,)
        ``{0, 1}``, ``{-1, +1}`` or boolean codes; with ``packed=True``, uint8 or uint64 words
        (:func:`tierank.hashing.pack_codes`).
    db_codes : array-like (n_db, bits)
        Database codes, same format and width.
    query_labels, db_labels : array-like, optional
        Class ids (1-D; relevant = same class, grade 1) or multi-hot matrices (2-D ``{0, 1}``, one column
        per label; grade = number of shared labels, so ``rel=1`` means "at least one shared label" and
        nDCG / ACG / WAP use the count).
    measures : str or list of str
        E.g. ``["AP", "nDCG@100", "P@1000", "P(radius=2)", "R(radius=2)", "WAP@100", "ACG@100"]``.
    relevance : array (n_queries, n_db) or callable, optional
        Grades for anything else, instead of labels: a matrix, or a vectorised callable
        ``relevance(query_index, db_index)``, called once per block of B queries with integer index
        arrays ``query_index`` of shape (B, 1) and ``db_index`` of shape (1, n_db); it must return a
        numeric array of their broadcast shape (B, n_db), e.g. ``lambda q, d: yq[q] == ydb[d]``. It is
        not called per pair: a wrong shape or dtype, or an exception, is an InputError stating this.
        ``query_labels`` may still be given (class ids) for ``average="macro"``.
    packed : bool, default=False
        Codes are packed words along the last axis.
    bits : int, optional
        Code length of packed codes whose last word is partial (padding bits must be 0).
    ties : {"expected", "lower", "upper", "optimistic", "pessimistic", "input", "trec_eval", "random"}, \
default="expected"
        As :func:`tierank.evaluate`. ``input`` breaks ties by database index ascending, ``trec_eval``
        descending, ``random`` by a seeded hash; these three sort the distances of each block of queries,
        the others sort nothing.
    bounds : bool, default=False
        Also return the exact minimum and maximum over all orderings of tied items.
    average : {"micro", "macro"}, default="micro"
        ``mean``: over queries, or over query classes of the per-class means (TensorFlow Similarity;
        needs class-id ``query_labels``). ``per_query`` holds per-query values either way.
    distance_threshold : float, optional
        Matches farther than this count as misses (TensorFlow Similarity's ``distance_threshold``): items
        at distance > threshold keep their place in the ranking but count as non-relevant (grade 0),
        while ``R`` and the ideal DCG still count every relevant item of the database. So recall and AP
        (denominator R) fall, and P@k counts only matches within the threshold.
    block_size : int, optional
        Queries per block; default from ``memory``.
    progress : bool, optional
        A progress bar on stderr over the blocks of queries; default: when stderr is a terminal.
    memory : int, default=512 MiB
        Working memory budget of a block (bytes), used when ``block_size`` is None.
    seed : int, default=0
        Seed of ``ties="random"``.
    no_relevant : {"zero", "skip", "one", "error"}, default="zero"
        Queries with no relevant database item (for the measure's ``rel``; ``distance_threshold`` does
        not change which items are relevant): the measure's own value, NaN left out of ``.mean``, 1 for
        measures in [0, 1], or an InputError naming the query.
    trec_eval_version : {10, 9}, default=10
        Accepted for symmetry with :func:`tierank.evaluate`: Hamming distances are small integers,
        exact in float32, so 9 and 10 give the same values.
    tie_cost_budget : int, optional
        Operations one query may take for a measure whose exact tie-aware work is more than linear in a
        tie (IPrec, IPrecAvg, ERR, infAP, G); beyond, an InputError up front. Default
        ``tierank.evaluation.DEFAULT_TIE_COST_BUDGET`` (about 10 s).

    Returns
    -------
    CodeResults
        ``per_query`` indexed by query number (0..n_queries-1), ``mean`` (micro or macro) and with
        ``bounds=True`` ``lower`` / ``upper``.

    Examples
    --------
    Two database items tie with the query at distance 1; one of them is of the query's class:

    >>> from tierank.hashing import evaluate_codes
    >>> q = [[0, 0, 0, 0]]
    >>> db = [[0, 0, 0, 1], [0, 0, 1, 0], [1, 1, 1, 1]]
    >>> res = evaluate_codes(q, db, [7], [7, 3, 7], ["P@1", "AP"], bounds=True)
    >>> res.mean
    {'P@1': 0.5, 'AP': 0.7083333333333333}
    >>> res.lower.loc[0, "P@1"], res.upper.loc[0, "P@1"]
    (np.float64(0.0), np.float64(1.0))
    >>> evaluate_codes(q, db, [7], [7, 3, 7], ["P@1"], ties="trec_eval").mean   # item 1 before item 0
    {'P@1': 0.0}
    """
    check_mode(ties)
    check_no_relevant(no_relevant)
    tie_cost_budget = check_tie_cost_budget(tie_cost_budget)
    check_trec_eval_version(trec_eval_version)   # distances <= bits < 2**24: float32 is exact, nothing to round
    if isinstance(seed, bool) or not isinstance(seed, (int, np.integer)):
        raise InputError(f"seed must be an integer, got {seed!r}")
    if average not in ("micro", "macro"):
        raise InputError(f"average must be 'micro' or 'macro', got {average!r}")
    if distance_threshold is not None:
        if isinstance(distance_threshold, bool) or not isinstance(distance_threshold, (int, float, np.number)) \
                or not np.isfinite(distance_threshold):
            raise InputError(f"distance_threshold must be a finite number, got {distance_threshold!r}")
    if block_size is not None:
        block_size = _check_int(block_size, "block_size")
    memory = _check_int(memory, "memory")
    parsed = parse_measures(measures)
    mlist = list(dict.fromkeys(parsed.values()))
    qw, dw, nbits = check_pair(query_codes, db_codes, packed=packed, bits=bits)
    n_q, n_db = qw.shape[0], dw.shape[0]
    grader = make_grader(query_labels, db_labels, relevance, n_q, n_db)
    if average == "macro" and grader.query_class is None:
        raise InputError("average='macro' needs class ids as query_labels (1-D), to group the queries")

    parts: dict[Measure, list] = {m: [] for m in mlist}
    lo_parts: dict[Measure, list] = {m: [] for m in mlist}
    hi_parts: dict[Measure, list] = {m: [] for m in mlist}
    bar = ProgressBar(progress, n_q, "queries", "query")
    if ties in FIXED_ORDER_MODES:
        plan = topk_plan(mlist)
        if plan is not None and plan[0] >= n_db and plan[1] is None:
            plan = None
        step = block_rows(n_db, topk=plan is not None, ties=ties, bounds=bounds, block_size=block_size,
                          memory=memory)
        for r0 in range(0, n_q, step):  # loop over blocks of queries
            r1 = min(r0 + step, n_q)
            bg = grader.block(slice(r0, r1))
            grades = bg.grades()
            dist = block_distances(qw[r0:r1], dw, nbits)
            ranked_grades = grades
            if distance_threshold is not None:
                ranked_grades = np.where(dist > distance_threshold, 0.0, grades)
            keys = -dist.astype(np.float64)
            del dist
            ranked, lab = rank_rows(ranked_grades, keys, None, r0, n_db, plan=plan, ties=ties, seed=seed,
                                    judged=grades)
            del keys, ranked_grades, grades
            assert ranked is not None   # every query is ranked against the whole (non-empty) database
            values, lower, upper = run_rows(ranked, lab, mlist, ties=ties, bounds=bounds, seed=seed,
                                            what="query", no_relevant=no_relevant,
                                            tie_cost_budget=tie_cost_budget)
            _collect(parts, lo_parts, hi_parts, values, lower, upper, bounds)
            bar.update(r1 - r0)
    else:
        levels_hint = getattr(grader, "levels", None)
        n_lev = len(levels_hint) if levels_hint is not None else 16
        step = block_size or _histogram_rows(nbits, n_lev, memory)
        if block_size is None and levels_hint is None:
            # relevance= gives a (block, n_db) float64 grade matrix and its level indices per block
            step = max(1, min(step, memory // (n_db * 16)))
        for r0 in range(0, n_q, step):  # loop over blocks of queries
            r1 = min(r0 + step, n_q)
            bg = grader.block(slice(r0, r1))
            counts = block_histogram(qw[r0:r1], dw, nbits, bg)
            ranked_counts = apply_threshold(counts, bg.zero, distance_threshold)
            stats = histogram_stats(ranked_counts, bg.levels,
                                    judged_counts=counts if ranked_counts is not counts else None)
            values, lower, upper = evaluate_stats(TieOrderings(stats), mlist, ties=ties, bounds=bounds,
                                                  labels=np.arange(r0, r1), no_relevant=no_relevant,
                                                  tie_cost_budget=tie_cost_budget)
            _collect(parts, lo_parts, hi_parts, values, lower, upper, bounds)
            bar.update(r1 - r0)
    bar.close()

    index = pd.RangeIndex(n_q, name="query")

    def frame(source: dict[Measure, list]) -> pd.DataFrame:
        return pd.DataFrame({t: np.concatenate(source[m]) for t, m in parsed.items()}, index=index)

    return CodeResults(per_query=frame(parts), lower=frame(lo_parts) if bounds else None,
                       upper=frame(hi_parts) if bounds else None, ties=ties, measures=parsed,
                       average=average, query_class=grader.query_class)


def _collect(parts: dict, lo_parts: dict, hi_parts: dict, values: dict, lower: dict, upper: dict,
             bounds: bool) -> None:
    for m in parts:
        parts[m].append(values[m])
        if bounds:
            lo_parts[m].append(lower[m])
            hi_parts[m].append(upper[m])
