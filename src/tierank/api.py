"""The entry point for runs: wiring only (inputs -> ranked lists -> tie statistics -> kernels -> Results).

:func:`evaluate` takes judgments and a run (dicts, DataFrames, Arrow tables, files). The entry points for
arrays (a score matrix, binary codes, embeddings) are in :mod:`tierank.arrays`, so that the command line,
which only reads runs, does not load the block engine with the embeddings and hashing packages
(docs/architecture.md, "Start-up").
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Iterable

from ._threads import in_this_thread
from .engine.core import evaluate_lists, prepare_lists, to_results
from .engine.options import Options, check_positive
from .engine.streamed import DICT_BLOCK_ROWS, evaluate_file, evaluate_source
from .errors import InputError
from .io.blocks import dict_rows, dict_source
from .io.source import is_parquet, is_run_file
from .results import Results

__all__ = ["evaluate"]


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
        queries, in bounded memory (None or True; see ``tierank.engine.streamed``); a run not grouped by
        query takes a second pass through temporary files. ``"grouped"``: an InputError saying how to sort
        the file instead of the second pass. False: the whole file in memory. A run given as a dict is
        evaluated in blocks of whole queries too (its Python objects read one block at a time, in bounded
        memory), and at once with False. The results are the same bit for bit.
    block_rows : int, optional
        Lines (Parquet: rows) per block when streaming; default 2**18 (about 100 MB of working memory).
        For a dict run, rows per block; default 2**17 (about 20-30 MB of working memory).
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
        ``tierank.engine.options.DEFAULT_TIE_COST_BUDGET`` (2e9, about 10 s; docs/conventions.md, "Ties
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
    opts = Options.checked(measures, ties=ties, bounds=bounds, missing=missing, seed=seed, no_relevant=no_relevant,
                           trec_eval_version=trec_eval_version, judged_only=judged_only, max_docs=max_docs,
                           tie_cost_budget=tie_cost_budget, workers=workers)
    if is_run_file(run):   # a run file: in blocks of whole queries (tierank.engine.streamed)
        if stream not in (None, True, False, "grouped"):
            raise InputError(f"stream={stream!r}: use None, True, False or 'grouped'")
        if stream is not False or is_parquet(run):
            return evaluate_file(qrels, run, opts, block_rows=block_rows if stream is not False else 2 ** 62,
                                 progress=progress if stream is not False else False,
                                 grouped_only=stream == "grouped", workers=workers if stream is not False else 1)
    if isinstance(run, Mapping) and stream is not False:   # a dict: in blocks of whole queries too
        rows = DICT_BLOCK_ROWS if block_rows is None else check_positive(block_rows, "block_rows")
        # a dict of at most one default block: in this thread (its threads would overlap less than they cost)
        small = dict_rows(run) <= DICT_BLOCK_ROWS
        try:
            with in_this_thread(small):
                return evaluate_source(qrels, dict_source(run, rows), opts)
        except InputError:   # the whole dict's evaluation raises its error: the first in its order of checks
            pass
    return to_results(evaluate_lists(prepare_lists(qrels, run, opts), opts), opts)
