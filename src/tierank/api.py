"""Public entry points: wiring only (inputs -> ranked lists -> tie statistics -> kernels -> Results)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Iterable

import numpy as np
import pandas as pd

from .blocks import check_trec_eval_version, evaluate_matrix_blocked
from .data.join import join_run_qrels, sorted_label_order
from .data.ranked import RankedLists
from .hashing.evaluate import evaluate_codes
from .errors import InputError
from .io.frames import to_columns
from .io.workers import check_workers
from .measures import parse_measures
from .measures._no_relevant import apply_no_relevant, check_no_relevant, has_relevant
from .results import Results
from .ties.groups import Judged
from .ties.restrict import restrict
from .evaluation import check_tie_cost_budget, evaluate_lists
from .ties.policy import check_mode

__all__ = ["evaluate", "evaluate_matrix", "evaluate_codes"]


def _check_seed(seed: Any) -> int:
    if isinstance(seed, bool) or not isinstance(seed, (int, np.integer)):
        raise InputError(f"seed must be an integer, got {seed!r}")
    return int(seed)


def evaluate(qrels: Any, run: Any, measures: str | Iterable[str], *, ties: str = "expected",
             bounds: bool = False, missing: str = "skip", seed: int = 0, no_relevant: str = "zero",
             trec_eval_version: int = 10, judged_only: bool = False, max_docs: int | None = None,
             stream: bool | str | None = None, block_rows: int | None = None,
             progress: bool | None = None, workers: int | None = None,
             tie_cost_budget: float | None = None) -> Results:
    """Evaluate a run against relevance judgments, exactly when scores tie.

    Parameters
    ----------
    qrels : dict, DataFrame (pandas or polars), pyarrow Table or path
        Judgments: ``{query_id: {doc_id: grade}}``, a table with columns ``query_id, doc_id,
        relevance`` (or their aliases), a TREC, MS MARCO or BEIR qrels file, or a Parquet file or
        directory. Negative grades (TREC junk, -2) are non-relevant with gain 0.
    run : dict, DataFrame (pandas or polars), pyarrow Table or path
        Scores (higher is better): ``{query_id: {doc_id: score}}``, a table with columns
        ``query_id, doc_id, score`` (a ``rank`` column alone is scored ``-rank``), or a TREC or MS MARCO
        run file (plain or gzip) or a Parquet file or directory, read in blocks of whole queries (see
        ``stream``). Retrieved documents absent from the qrels are unjudged: never relevant, and told
        apart from judged non-relevant ones (``Bpref``, ``Judged``, ``judged_only=``).
    measures : str or list of str
        Measure strings such as ``"nDCG@10"``, ``"AP"``, ``"P(rel=2)@5"``, ``"ndcg_cut.10"``.
    ties : {"expected", "lower", "upper", "optimistic", "pessimistic", "input", "trec_eval", "random"}, \
default="expected"
        How tied documents count. Over all their orderings: ``"expected"`` the exact mean, ``"lower"`` /
        ``"upper"`` the exact minimum / maximum (the ``bounds``). One fixed order inside every tie:
        ``"optimistic"`` / ``"pessimistic"`` the measure's preferred documents (relevant, higher gain)
        first / last, ``"input"`` the input order, ``"trec_eval"`` document id descending, as trec_eval
        does, ``"random"`` a seeded order. The fixed arrangements are usually the extremes, but not
        always: ``AP(denom='retrieved')@k`` can be higher with a relevant document left out of the top k.
    bounds : bool, default=False
        Also return the exact minimum and maximum over all orderings of tied documents.
    missing : {"skip", "zero"}, default="skip"
        Judged queries absent from the run: left out with a warning, or scored as empty runs
        (0 for every measure; trec_eval ``-c``).
    seed : int, default=0
        Seed of ``ties="random"``.
    no_relevant : {"zero", "skip", "one", "error"}, default="zero"
        Queries with no relevant judged document (for the measure's ``rel``; negative grades never
        count), including those scored as empty runs: the measure's own value (trec_eval; 0 for
        proportions), NaN left out of ``.mean``, 1 for measures in [0, 1], or an InputError.
    trec_eval_version : {10, 9}, default=10
        9: scores rounded to float32 first, as trec_eval 9.x (pytrec_eval, ir-measures, PyTerrier)
        stores them, so scores equal in float32 tie, whatever ``ties``.
    judged_only : bool, default=False
        trec_eval ``-J``: drop retrieved documents with no judgment (absent from the qrels or a negative
        grade) and close the gaps; exact in every tie mode. A query left with no document counts as an
        empty run.
    max_docs : int, optional
        trec_eval ``-M``: keep the first ``max_docs`` documents of each query (before ``judged_only``).
        When a tie straddles that rank, only the fixed tie modes (``input``, ``trec_eval``, ``random``,
        without bounds) say which documents stay; the others raise an InputError naming the query.
    stream : {None, True, False, "grouped"}, default=None
        A run given as a path (TREC text, gzip or Parquet) is read and evaluated in blocks of whole
        queries, in bounded memory (None or True; see :mod:`tierank.io.stream`); a run not grouped by
        query takes a second pass through temporary files. ``"grouped"``: an InputError saying how to sort
        the file instead of the second pass. False: the whole file in memory. The results are the same
        bit for bit.
    block_rows : int, optional
        Lines (Parquet: rows) per block when streaming; default 2**18 (about 100 MB of working memory).
    progress : bool, optional
        A progress bar on stderr while a file is streamed; default: when stderr is a terminal.
    workers : int, optional
        Processes evaluating a streamed Parquet run, each its own range of row groups (Linux; see
        :mod:`tierank.io.workers`): by default one per core (at most 8) when the run has over 2**21 rows
        per worker; 1: this process only. The results are the same bit for bit.
    tie_cost_budget : int, optional
        Operations one query may take for a measure whose exact tie-aware work is more than linear in a
        tie's size (IPrec, IPrecAvg and ERR; infAP and G, also for their bounds); beyond, an InputError up
        front naming the measure, the query and its costliest tie. Default
        ``tierank.evaluation.DEFAULT_TIE_COST_BUDGET`` (2e9, about 10 s; docs/conventions.md, "Ties
        too costly to average exactly").

    Returns
    -------
    Results
        ``.mean``, ``.per_query`` (index: query id, sorted) and, with ``bounds=True``, ``.lower`` and
        ``.upper``.

    Examples
    --------
    Two documents tie for the first place; one of them is relevant:

    >>> import tierank
    >>> qrels = {"q1": {"d1": 1}}
    >>> run = {"q1": {"d1": 0.5, "d2": 0.5, "d3": 0.1}}
    >>> res = tierank.evaluate(qrels, run, ["RR", "P@1"], bounds=True)
    >>> res.mean
    {'RR': 0.75, 'P@1': 0.5}
    >>> res.lower.loc["q1", "RR"], res.upper.loc["q1", "RR"]
    (np.float64(0.5), np.float64(1.0))
    >>> tierank.evaluate(qrels, run, ["RR"], ties="trec_eval").mean   # "d2" > "d1": d2 first
    {'RR': 0.5}

    0.3 and 0.30000000000000004 are one float32: they tie in trec_eval 9.x, not in 10.0:

    >>> run = {"q1": {"d1": 0.3, "d2": 0.30000000000000004}}
    >>> tierank.evaluate(qrels, run, ["RR"]).mean, tierank.evaluate(qrels, run, ["RR"], trec_eval_version=9).mean
    ({'RR': 0.5}, {'RR': 0.75})
    """
    check_mode(ties)
    seed = _check_seed(seed)
    check_workers(workers)
    as_float32 = check_trec_eval_version(trec_eval_version) == 9
    check_no_relevant(no_relevant)
    tie_cost_budget = check_tie_cost_budget(tie_cost_budget)
    parsed = parse_measures(measures)
    if as_float32:   # trec_eval 9.x also turns recall levels into counts its own way
        parsed = {text: m.as_trec9() for text, m in parsed.items()}
    from .io.source import is_run_file

    if is_run_file(run):   # a run file: in blocks of whole queries (tierank.io.stream)
        from .io.source import is_parquet
        from .io.stream import evaluate_file

        if stream not in (None, True, False, "grouped"):
            raise InputError(f"stream={stream!r}: use None, True, False or 'grouped'")
        if stream is not False or is_parquet(run):
            return evaluate_file(qrels, run, measures, ties=ties, bounds=bounds, missing=missing, seed=seed,
                                 no_relevant=no_relevant, trec_eval_version=trec_eval_version,
                                 judged_only=judged_only, max_docs=max_docs,
                                 block_rows=block_rows if stream is not False else 2 ** 62,
                                 progress=progress if stream is not False else False,
                                 grouped_only=stream == "grouped", workers=workers if stream is not False else 1,
                                 tie_cost_budget=tie_cost_budget)
    lists = prepare_lists(qrels, run, missing=missing, scores_as_float32=as_float32, judged_only=judged_only,
                          max_docs=max_docs, ties=ties, bounds=bounds, seed=seed)
    plain = {text: m for text, m in parsed.items() if not m.judged_only}
    judged = {text: m for text, m in parsed.items() if m.judged_only}
    results = [_evaluate_prepared(plain, lists, ties, bounds, seed, no_relevant, tie_cost_budget)] if plain else []
    if judged:   # measures with judged_only=True: on the judged documents only (-J for these measures)
        results.append(_evaluate_prepared(judged, judged_part(lists, ties, bounds, seed), ties, bounds, seed,
                                          no_relevant, tie_cost_budget))
    return results[0] if len(results) == 1 else merge_results(parsed, results)


def _evaluate_prepared(parsed: dict, lists: "PreparedLists", ties: str, bounds: bool, seed: int,
                       no_relevant: str, tie_cost_budget: float | None = None) -> Results:
    return assemble_results(parsed, lists, *lists_values(parsed, lists, ties, bounds, seed, no_relevant,
                                                         tie_cost_budget),
                            ties=ties, no_relevant=no_relevant)


def lists_values(parsed: dict, lists: "PreparedLists", ties: str, bounds: bool, seed: int,
                 no_relevant: str, tie_cost_budget: float | None = None) -> tuple[dict, dict | None, dict | None]:
    """(values, lower, upper): the kernels' values of the ranked queries of ``lists``, by measure
    (lower and upper: None without bounds; empty dicts when no query has a ranked list)."""
    values: dict = {}
    lower: dict = {}
    upper: dict = {}
    if lists.ranked.n_queries:
        values, lower, upper = evaluate_lists(lists.ranked, list(parsed.values()), ties=ties, bounds=bounds,
                                              seed=seed, labels=lists.labels, no_relevant=no_relevant,
                                              tie_cost_budget=tie_cost_budget)
    return values, lower if bounds else None, upper if bounds else None


def judged_part(lists: "PreparedLists", ties: str, bounds: bool, seed: int) -> "PreparedLists":
    """The lists with the retrieved documents that have no judgment dropped (trec_eval -J)."""
    kept = restrict(lists.ranked, lists.labels, judged_only=True, ties=ties, bounds=bounds, seed=seed)
    return PreparedLists(kept.ranked, kept.labels, np.concatenate([lists.empty_labels, kept.emptied_labels]),
                         list(lists.empty_grades) + kept.emptied_judged)


def merge_results(parsed: dict, parts: list[Results]) -> Results:
    """One Results with the columns of several (same queries), in the order of ``parsed``."""
    first = parts[0]

    def frame(attr: str) -> pd.DataFrame | None:
        if getattr(first, attr) is None:
            return None
        joined = pd.concat([getattr(r, attr).reindex(first.per_query.index) for r in parts], axis=1)
        return joined[list(parsed)]
    return Results(per_query=frame("per_query"), lower=frame("lower"), upper=frame("upper"), ties=first.ties,
                   measures=parsed)


@dataclass
class PreparedLists:
    """A run joined with its judgments, ``-M``/``-J`` applied: the ranked lists of the queries with
    documents, and the judged grades of the queries scored as empty runs."""

    ranked: RankedLists
    labels: np.ndarray
    empty_labels: np.ndarray
    empty_grades: list


def prepare_lists(qrels: Any, run: Any, *, missing: str = "skip", scores_as_float32: bool = False,
                  judged_only: bool = False, max_docs: int | None = None, ties: str = "expected",
                  bounds: bool = False, seed: int = 0) -> PreparedLists:
    """Read, check and join the inputs of :func:`evaluate` into ranked lists."""
    joined = join_run_qrels(to_columns(run, "run"), to_columns(qrels, "qrels"), missing=missing,
                            scores_as_float32=scores_as_float32, trec_eval_grades=ties == "trec_eval")
    ranked, labels = joined.ranked, joined.labels
    empty_labels, empty_grades = joined.empty_labels, list(joined.empty_judged)
    if judged_only or max_docs is not None:
        kept = restrict(ranked, labels, judged_only=bool(judged_only), max_docs=max_docs, ties=ties,
                        bounds=bounds, seed=seed)
        ranked, labels = kept.ranked, kept.labels
        empty_labels = np.concatenate([empty_labels, kept.emptied_labels])
        empty_grades += kept.emptied_judged
    return PreparedLists(ranked, labels, empty_labels, empty_grades)


def assemble_results(parsed: dict, lists: PreparedLists, values: dict, lower: dict | None, upper: dict | None,
                     *, ties: str, no_relevant: str = "zero") -> Results:
    """:class:`Results` from the values of the ranked queries plus those of the queries scored as empty
    runs, sorted by query id."""
    labels, cols, lo_cols, hi_cols = value_columns(parsed, lists, values, lower, upper, no_relevant=no_relevant)
    index = pd.Index(labels, name="query_id")
    order = sorted_label_order(index.to_numpy())
    per_query = pd.DataFrame(cols, index=index).iloc[order]
    lo = pd.DataFrame(lo_cols, index=index).iloc[order] if lo_cols is not None else None
    hi = pd.DataFrame(hi_cols, index=index).iloc[order] if hi_cols is not None else None
    return Results(per_query=per_query, lower=lo, upper=hi, ties=ties, measures=parsed)


def value_columns(parsed: dict, lists: PreparedLists, values: dict, lower: dict | None, upper: dict | None,
                  *, no_relevant: str = "zero") -> tuple[np.ndarray, dict, dict | None, dict | None]:
    """(labels, values, lower, upper): the query ids of the ranked queries then of those scored as empty
    runs, and one array per measure text in that order (lower and upper: None without bounds)."""
    empty_judged = _judged(lists.empty_grades)
    bounds = lower is not None and upper is not None
    cols, lo_cols, hi_cols = {}, {}, {}
    for text, m in parsed.items():
        empty = m.empty_values(empty_judged)
        if not m.is_text:
            empty = apply_no_relevant(m, empty, has_relevant(m, empty_judged), no_relevant, lists.empty_labels)
        cols[text] = np.concatenate([values.get(m, np.zeros(0)), empty])
        if lower is not None and upper is not None:
            lo_cols[text] = np.concatenate([lower.get(m, np.zeros(0)), empty])
            hi_cols[text] = np.concatenate([upper.get(m, np.zeros(0)), empty])
    labels = lists.labels
    all_labels = np.concatenate([labels, lists.empty_labels]) if len(lists.empty_labels) else labels
    return all_labels, cols, lo_cols if bounds else None, hi_cols if bounds else None


def _judged(grades: list[np.ndarray]) -> Judged:
    """The judged grades of the queries scored as empty runs, as one :class:`Judged`."""
    ptr = np.zeros(len(grades) + 1, dtype=np.int64)
    np.cumsum([len(g) for g in grades], out=ptr[1:])
    flat = np.concatenate(grades).astype(np.float64) if grades else np.zeros(0)
    return Judged.from_csr(ptr, flat)


def _check_measures_arg(measures: Any) -> None:
    """A clear error when an array of numbers comes where the measure strings belong (the old
    ``evaluate_matrix(relevance, scores, distances, measures)`` order)."""
    if isinstance(measures, str):
        return
    numeric = False
    if isinstance(measures, np.ndarray):
        numeric = measures.dtype.kind in "biufc"
    elif isinstance(measures, (list, tuple)):
        numeric = any(isinstance(x, (int, float, complex, np.number, np.ndarray, list, tuple))
                      and not isinstance(x, str) for x in measures)
    elif hasattr(measures, "__array__") or isinstance(measures, (int, float, np.number)):
        numeric = True
    if numeric:
        raise InputError("measures looks like an array of numbers, not measure strings: the third positional "
                         "parameter of evaluate_matrix is measures. Give the keys by name: "
                         "evaluate_matrix(relevance, distances=D, measures=[...]) or "
                         "evaluate_matrix(relevance, scores=S, measures=[...])")


def evaluate_matrix(relevance: Any, scores: Any = None, measures: str | Iterable[str] = ("nDCG@10",), *,
                    distances: Any = None, ties: str = "expected", bounds: bool = False, mask: Any = None,
                    seed: int = 0, block_size: int | None = None, no_relevant: str = "zero",
                    trec_eval_version: int = 10, tie_cost_budget: float | None = None) -> Results:
    """Evaluate dense score (or distance) matrices, one row per query, exactly when values tie.

    Parameters
    ----------
    relevance : array-like of shape (n_queries, n_items) or (n_items,)
        Grades (>= 0, may be fractional); the row is the query's whole judged set (R and the ideal DCG
        come from it).
    scores : array-like, same shape, optional
        Higher is better. Give exactly one of ``scores`` and ``distances``. Infinite values are valid
        and tie with each other.
    measures : str or list of str, default="nDCG@10"
        Measure strings, e.g. ``["nDCG@10", "AP@100", "P(rel=2)@5"]``. An array of numbers here is an
        InputError (the keys go by name: ``evaluate_matrix(relevance, distances=D, measures=[...])``).
    distances : array-like, same shape, optional (keyword only)
        Lower is better (e.g. Hamming distances).
    ties : {"expected", "lower", "upper", "optimistic", "pessimistic", "input", "trec_eval", "random"}, \
default="expected"
        As :func:`evaluate`; ``"input"`` breaks ties by column index ascending, ``"trec_eval"`` by column
        index descending.
    bounds : bool, default=False
        Also return the exact minimum and maximum over all orderings of tied items.
    mask : array-like of bool, same shape, optional
        False marks padding (ragged lists); padded entries are ignored entirely.
    seed : int, default=0
        Seed of ``ties="random"`` (each tie is ordered by a hash of the seed and the entries' positions,
        so the order does not depend on the blocks).
    block_size : int, optional
        Rows evaluated at a time; default: as many as fit a 512 MiB working-memory budget. Values do
        not depend on it. Scores / distances keep their dtype (float32, float64, integers) until a block
        is converted. When every measure has ``@k`` (or is a radius measure), each row is first cut to
        the items at or above its k-th best key (``np.partition``; the boundary tie is kept whole) and
        only those are sorted; ``R`` and the ideal DCG still count the whole row.
    no_relevant : {"zero", "skip", "one", "error"}, default="zero"
        Rows with no relevant item (for the measure's ``rel``): the measure's own value, NaN left out of
        ``.mean``, 1 for measures in [0, 1], or an InputError naming the row.
    trec_eval_version : {10, 9}, default=10
        9: scores / distances rounded to float32 first (block by block), as trec_eval 9.x stores run
        scores, so values equal in float32 tie, whatever ``ties``. Integers within ``2**24`` are
        unchanged.
    tie_cost_budget : int, optional
        Operations one row may take for a measure whose exact tie-aware work is more than linear in a
        tie's size (IPrec, IPrecAvg and ERR; infAP and G, also for their bounds); beyond, an InputError up
        front naming the measure, the row and its costliest tie. Default
        ``tierank.evaluation.DEFAULT_TIE_COST_BUDGET`` (2e9, about 10 s; docs/conventions.md, "Ties
        too costly to average exactly").

    Returns
    -------
    Results
        ``.per_query`` indexed by row number.

    Examples
    --------
    Hamming distances of 4 database items to one query; items 1 and 2 tie at distance 1:

    >>> import tierank
    >>> res = tierank.evaluate_matrix([[1, 0, 1, 0]], distances=[[0, 1, 1, 3]],
    ...                               measures=["AP", "P@2"], bounds=True)
    >>> round(res.mean["AP"], 4), round(res.mean["P@2"], 4)
    (0.9167, 0.75)
    >>> float(res.lower.loc[0, "AP"]), float(res.upper.loc[0, "AP"])
    (0.8333333333333333, 1.0)

    ``"upper"`` is the exact maximum; ``"optimistic"``, the relevant items first, is not always one:

    >>> [tierank.evaluate_matrix([[1, 0, 1, 0]], [[3, 2, 1, 1]], ["AP(denom='retrieved')@3"], ties=t).mean
    ...  ["AP(denom='retrieved')@3"] for t in ("optimistic", "pessimistic", "upper", "lower")]
    [0.8333333333333333, 1.0, 1.0, 0.8333333333333333]
    """
    check_mode(ties)
    seed = _check_seed(seed)
    _check_measures_arg(measures)
    parsed = parse_measures(measures)
    if (scores is None) == (distances is None):
        raise InputError("give exactly one of scores= (higher is better) and distances= (lower is better)"
                         + ("; both were given" if scores is not None else "; neither was given"))
    keyname = "scores" if scores is not None else "distances"
    return evaluate_matrix_blocked(relevance, scores if scores is not None else distances, measures=parsed,
                                   keyname=keyname, lower_is_better=distances is not None, ties=ties,
                                   bounds=bounds, mask=mask, seed=seed, block_size=block_size,
                                   trec_eval_version=trec_eval_version, no_relevant=no_relevant,
                                   tie_cost_budget=tie_cost_budget)
