"""Run files evaluated in blocks of whole queries: the driver of a streamed evaluation, with the results
of the in-memory evaluation bit for bit.

How it works
------------
1. The qrels are read once, in memory (they are small next to a run), checked and indexed by query.
2. The run is read block by block (:mod:`tierank.io.blocks`: how blocks of whole queries are cut, the
   read-ahead thread that starts while the qrels are read, up to 8 blocks ahead until then and one block
   ahead of the evaluation afterwards, none for a run under ``SMALL_RUN_BYTES``, and the parsing with the
   rules and messages of :func:`tierank.io.trec.read_run`: errors name the file and the line of the whole file).
3. Each block is evaluated as :mod:`tierank.spark` and :mod:`tierank.dask` evaluate a partition (the core,
   :func:`tierank.engine.core.evaluate_lists`: the local join, ``-M``/``-J`` and kernels), every run row
   standing at its row number in the whole file, so ``ties="input"`` and ``ties="random"`` (which
   hashes row numbers) order ties as in memory. Only the per-query values are kept (one row per query).
4. At the end the judged queries never met in the run are scored as empty runs (``missing="zero"``) or
   counted for the warning, and the :class:`~tierank.Results` are built; the means come from exactly
   rounded sums (:mod:`tierank.data.exact_sum`), so they have the same bits whatever the blocks.
5. A Parquet run is split between worker processes (``workers``, on Linux), each evaluating the queries
   that start in its range of row groups (:mod:`tierank.io.workers`); their values are put together in
   row order, so the results are the same bit for bit.

Runs not grouped by query
-------------------------
TREC runs list each query's lines together. When a query comes back in a later block after other
queries, the first pass stops and a second pass reads the file again (the same open file, from its
start; a pipe or standard input: the copy made while the first pass read it), writing its rows to temporary
Arrow files, one per hash bucket of the query id (about ``block_rows`` rows each, at most 256 files, in
``tempfile.gettempdir()`` unless ``TMPDIR`` says otherwise), then evaluates bucket by bucket: memory
stays bounded, the results are the same bit for bit, and the run costs about one more read and one
write of its rows to disk. With ``stream="grouped"`` the evaluation raises an InputError naming the
file and line instead, saying how to sort the file (``LC_ALL=C sort -s -k1,1``: stable, so each
query's lines keep their order; only ``ties="random"`` depends on the row positions of the sorted
file). A run that fits in one block is never checked (nothing to group).

Errors
------
Every error of :func:`tierank.io.trec.read_run` and of the join names the file and the line of the
whole file. When a file has several problems, the first block with one reports it (in memory the
whole file is checked for bytes that are not text before any line is parsed), and the qrels are read
(and checked) before the run.
"""

from __future__ import annotations

import sys
from contextlib import closing
from typing import Any, Callable, Iterator

import numpy as np

from .._threads import in_this_thread
from ..data.columns import Columns, check_same_id_kinds, normalized
from ..data.ids import query_codes
from ..data.join import check_no_repeated_pairs
from ..data.ranked import concat_ranges
from ..errors import InputError
from ..io.blocks import RunSource, bucketed, first_seen_codes, parquet_source, read_ahead, take_rows, trec_source
from ..io.frames import to_columns
from ..io.source import is_parquet, open_input
from ..io.workers import evaluate_in_workers
from ..results import Results
from . import partitioned as E
from .core import QueryValues, evaluate_lists, prepare_lists
from .options import Options

__all__ = ["evaluate_file", "evaluate_source", "Driver", "DEFAULT_BLOCK_ROWS", "DICT_BLOCK_ROWS"]

#: Run lines (or Parquet rows) per block by default: about 100 MB of working memory per block (larger
#: blocks are hardly faster: benchmarks/bench_streaming.py).
DEFAULT_BLOCK_ROWS = 1 << 18
_EARLY_BLOCKS = 8              # blocks read ahead while the qrels are read
#: A text run of fewer bytes is read and evaluated in the caller's thread (no read-ahead thread, no
#: background threads in the join): starting them costs more than they overlap (measured on 2 cores, runs
#: of 100 lines a query: 20% faster at 256 KB, 9,500 lines; even at 768 KB; the threads 4% faster at 1 MB)
SMALL_RUN_BYTES = 1 << 19
#: Rows per block of a run given as a dict (:func:`evaluate_source`): the working memory stays small (about
#: 20-30 MB) and the blocks are hardly slower than larger ones (benchmarks/bench_pytrec_eval.py)
DICT_BLOCK_ROWS = 1 << 17


class _NotGrouped(Exception):
    """A query of the run comes back after other queries (in a later block)."""

    def __init__(self, query: Any, where: dict, row_text: str) -> None:
        super().__init__(query)
        self.query = query
        self.where = where
        self.row_text = row_text


# ---------------------------------------------------------------------------------------- the driver


class Driver:
    """Evaluates blocks of whole queries against qrels read once, and builds the Results."""

    def __init__(self, qrels: Columns, opts: Options, evaluate_block: Any = None) -> None:
        self.opts = opts
        self.evaluate_block = _evaluate_block if evaluate_block is None else evaluate_block
        self.qrels = qrels
        self.queries = query_codes(qrels.query, qrels.query[:0])   # also for the qrels' repeat check
        codes, uniques = self.queries.run, self.queries.labels
        self.qlabels = uniques
        self.qindex = {label: i for i, label in enumerate(uniques.tolist())}   # each judged query's code
        grouped = self.queries.run_counts is not None
        self.qorder = None if grouped else np.argsort(codes, kind="stable")   # rows by query code
        sizes = np.bincount(codes, minlength=len(uniques))
        self.qsizes = sizes
        self.qptr = np.concatenate(([0], np.cumsum(sizes)))
        self.used = np.zeros(len(uniques), dtype=bool)
        self.seen: set = set()
        self.done: list[tuple[np.ndarray, np.ndarray, dict]] = []   # per block: ids, statuses, values
        self.empty_run: Columns | None = None

    def add(self, run: Columns, pos: np.ndarray | int, check_grouped: bool) -> None:
        """Evaluate the whole queries of ``run`` (normalised), row i standing at position ``pos[i]`` (an
        int ``pos``: at ``pos + i``)."""
        run, _ = check_same_id_kinds(run, self.qrels)
        groups = run.query_groups   # (ids, rows per query) from a dict's reader, when of these very ids
        codes, uniques = first_seen_codes(run.query, groups[1] if groups is not None and groups[0] is run.query
                                          else None)
        labels = uniques.tolist()
        if check_grouped:
            if not self.seen.isdisjoint(labels):
                back = np.flatnonzero(np.isin(codes, np.flatnonzero([u in self.seen for u in labels])))
                i = int(back[0])
                raise _NotGrouped(run.label(run.query, i), run.where(i), run.row_text(i))
            self.seen.update(labels)
        if self.empty_run is None:
            self.empty_run = take_rows(run, slice(0, 0))
        idx = np.fromiter(map(self.qindex.get, labels, [-1] * len(labels)), dtype=np.int64, count=len(labels))
        in_qrels = idx >= 0
        row_kept = None if in_qrels.all() else in_qrels[codes]   # None: every row (most blocks)
        if row_kept is not None:   # rows of queries without judgments: checked, then left out
            check_no_repeated_pairs(take_rows(run, np.flatnonzero(np.logical_not(row_kept))), "run")
        status = np.where(in_qrels, E.EVALUATED, E.ONLY_RUN).astype(np.int8)
        res = None
        if in_qrels.any():
            kept_q = idx[in_qrels]
            self.used[kept_q] = True
            qrels = take_rows(self.qrels, self.qrels_rows(kept_q))
            if row_kept is not None:
                if not isinstance(pos, np.ndarray):
                    pos = int(pos) + np.arange(len(row_kept), dtype=np.int64)
                run, pos = take_rows(run, np.flatnonzero(row_kept)), pos[row_kept]
            res = self.evaluate_block(qrels, run, pos, self.opts)
        self.done.append((uniques, status, E.aligned_values(uniques, res, self.opts)))

    def qrels_rows(self, queries: np.ndarray) -> np.ndarray:
        """The qrels rows of these query codes, in file order."""
        rows = concat_ranges(self.qptr[queries], self.qsizes[queries])
        if self.qorder is not None:
            return np.sort(self.qorder[rows])
        return rows if not len(rows) or bool((rows[1:] > rows[:-1]).all()) else np.sort(rows)

    def results(self) -> Results:
        """The judged queries never met (empty runs or left out), the warnings, the Results."""
        rest = np.flatnonzero(~self.used)
        if len(rest):
            zero = self.opts.missing == "zero"
            labels = self.qlabels[rest]
            status = np.full(len(rest), E.ONLY_QRELS_ZERO if zero else E.ONLY_QRELS_SKIPPED, dtype=np.int8)
            res = None
            if zero:
                empty = self.empty_run if self.empty_run is not None else take_rows(self.qrels, slice(0, 0))
                res = _evaluate_block(take_rows(self.qrels, self.qrels_rows(rest)), empty, np.zeros(0, np.int64),
                                      self.opts)
            self.done.append((labels, status, E.aligned_values(labels, res, self.opts)))
        status = np.concatenate([d[1] for d in self.done])
        out = {"query_id": np.concatenate([d[0] for d in self.done]),
               **{col: np.concatenate([d[2][col] for d in self.done]) for col in self.opts.columns()}}
        E.finish(E.partial_sums(status, out, self.opts), self.opts)   # the warnings, or nothing to evaluate
        kept = np.isin(status, E.KEPT)
        return E.to_results({col: a[kept] for col, a in out.items()}, self.opts)


# -------------------------------------------------------------------------------------- entry point


def evaluate_file(qrels: Any, run: Any, opts: Options, *, block_rows: int | None = None,
                  progress: bool | None = None, grouped_only: bool = False, evaluate_block: Any = None,
                  workers: int | None = None) -> Results:
    """:func:`tierank.evaluate` on a run file (TREC text, gzip, or Parquet) read in blocks of whole queries.

    This is what :func:`tierank.evaluate` calls for a run given as a path (``stream=None`` or
    ``True``); the results equal those of the in-memory evaluation (``stream=False``) bit for bit.

    Parameters
    ----------
    qrels : dict, pandas.DataFrame, Columns or path
        Read once, in memory (a TREC qrels file or a Parquet file / directory).
    run : str or os.PathLike
        A TREC run file (plain or gzip) or a Parquet file or directory (see :mod:`tierank.io.parquet`).
    opts : Options
        The checked options of :func:`tierank.evaluate`.
    block_rows : int, optional
        Lines (Parquet: rows) per block; default :data:`DEFAULT_BLOCK_ROWS`. A query longer than a block
        makes its block longer. The results do not depend on it.
    progress : bool, optional
        A progress bar on stderr; default: when stderr is a terminal.
    grouped_only : bool, default=False
        Raise an InputError when a query comes back after other queries, instead of the second pass
        through temporary files (see the module docstring).
    evaluate_block : callable, optional
        ``(qrels, run, positions, options) -> QueryValues`` (:class:`tierank.engine.core.QueryValues`) for
        each block of whole queries, ``positions`` the run rows' row numbers in the whole run (an array,
        or an int: the first row's, the others following it); default: the evaluation of
        :func:`tierank.evaluate`; the tie report passes its own. It is called in this process, block by
        block (never by worker processes: it may keep what it sees, as the tie report does).
    workers : int, optional
        Processes evaluating a Parquet run, each its own range of row groups (:mod:`tierank.io.workers`):
        by default one per core (at most 8) when the run has over 2**21 rows per worker; 1: this
        process only. Text runs, and runs given an ``evaluate_block``, are evaluated by this process.
        The results do not depend on it.

    Returns
    -------
    Results

    Examples
    --------
    >>> import os, pathlib, tempfile, tierank
    >>> from tierank.engine.options import Options
    >>> from tierank.engine.streamed import evaluate_file
    >>> path = os.path.join(tempfile.mkdtemp(), "run.txt")
    >>> _ = pathlib.Path(path).write_text("q1 Q0 a 1 3 t\\nq1 Q0 b 2 3 t\\nq2 Q0 c 1 5 t\\nq2 Q0 d 2 1 t\\n")
    >>> qrels = {"q1": {"a": 1}, "q2": {"d": 1}}
    >>> evaluate_file(qrels, path, Options.checked(["RR"]), block_rows=2, progress=False).mean
    {'RR': 0.625}
    >>> tierank.evaluate(qrels, path, ["RR"], stream=False).mean
    {'RR': 0.625}
    """
    block_rows = DEFAULT_BLOCK_ROWS if block_rows is None else int(block_rows)
    if block_rows < 1:
        raise InputError(f"block_rows must be a positive integer, got {block_rows!r}")
    if evaluate_block is not None:   # it may keep state (the tie report does): in this process only
        workers = 1
    if is_parquet(run):
        return _evaluate_source(qrels, parquet_source(run, block_rows, progress), opts, grouped_only,
                                evaluate_block, workers, progress)
    # opened once; a pipe is copied to an anonymous temporary file as it is read, for a second pass
    with open_input(run, spool=not grouped_only) as opened:
        size = opened.size()   # None: a pipe's
        small = size is not None and opened.text_bytes(size) < SMALL_RUN_BYTES
        with in_this_thread(small):
            return _evaluate_source(qrels, trec_source(run, block_rows, progress, opened), opts, grouped_only,
                                    evaluate_block, workers, progress, early=0 if small else _EARLY_BLOCKS)


def evaluate_source(qrels: Any, source: RunSource, opts: Options, *, ahead: int = 0) -> Results:
    """:func:`evaluate_file`'s driver on a run read in blocks of whole queries by ``source`` (a dict's:
    :func:`tierank.io.blocks.dict_source`), in this process. ``ahead``: blocks read ahead of the one
    evaluated, on a thread (:class:`tierank.io.blocks.read_ahead`); 0: each block read when its turn
    comes (a dict's blocks: a thread reading Python objects makes the evaluation wait for the GIL, which
    costs more than it overlaps). The results equal those of the in-memory evaluation bit for bit.

    Examples
    --------
    >>> from tierank.engine.options import Options
    >>> from tierank.engine.streamed import evaluate_source
    >>> from tierank.io.blocks import dict_source
    >>> run = {"q1": {"a": 3.0, "b": 3.0}, "q2": {"c": 5.0, "d": 1.0}}
    >>> evaluate_source({"q1": {"a": 1}, "q2": {"d": 1}}, dict_source(run, 2), Options.checked(["RR"])).mean
    {'RR': 0.625}
    """
    return _evaluate_source(qrels, source, opts, False, None, 1, early=ahead)


def _evaluate_source(qrels: Any, source: RunSource, opts: Options, grouped_only: bool,
                     evaluate_block: Any, workers: int | None = 1, progress: bool | None = None,
                     early: int = _EARLY_BLOCKS) -> Results:
    rows, parts = source.parts(workers) if source.parts is not None and workers != 1 else (0, [])
    # a run evaluated here is read while the qrels are: up to ``early`` blocks, then one at a time
    reader = read_ahead(source.blocks(), early) if len(parts) < 2 else None
    try:
        # a path: TREC text or Parquet, read once
        q = normalized(to_columns(qrels, "qrels"), "grade", trec_eval=opts.ties == "trec_eval")
        driver = Driver(q, opts, evaluate_block)
        if reader is None:
            if _in_workers(driver, q, parts, rows, progress, source.name):
                return driver.results()
            reader = read_ahead(source.blocks())
        reader.keep(1)
        q_checked = False
        for cols, row0, last in reader:
            cols = normalized(cols, "score")
            if not q_checked:   # as the join: ids of one kind, then the qrels' repeats, before the run's
                check_same_id_kinds(cols, q)
                if not q.unique_pairs:   # (a dict's keys are distinct: no pair repeats)
                    check_no_repeated_pairs(q, "qrels", driver.queries)
                q_checked = True
            driver.add(cols, row0, check_grouped=not (last and row0 == 0))
    except _NotGrouped as err:
        if reader is not None:   # the first pass's reader stops before the second pass reads the run
            reader.close()
        if grouped_only:
            raise InputError(f"the run is not grouped by query: query {err.query!r} comes back at {err.row_text} after "
                             f"other queries, and stream='grouped' evaluates whole queries block by block; "
                             f"{source.sort_hint}", **err.where) from None
        driver = Driver(q, opts, evaluate_block)
        # closed at once when anything stops the loop: the temporary files go with it
        import tempfile   # (the second pass only)

        with closing(bucketed(source.blocks(), source.n_buckets(), tempfile.gettempdir())) as buckets:
            for cols, pos in buckets:
                driver.add(cols, pos, check_grouped=False)
    finally:
        if reader is not None:   # stopped (SystemExit, KeyboardInterrupt): do not wait for a pipe's bytes
            stopping = sys.exc_info()[0]
            reader.close(wait=stopping is None or issubclass(stopping, Exception))
    return driver.results()


def _in_workers(driver: Driver, qrels: Columns, parts: list[Callable[[], Iterator[Any]]], rows: int,
                progress: bool | None, name: str) -> bool:
    """Whether the run was evaluated by worker processes (:mod:`tierank.io.workers`, one per part) into
    ``driver``; False (``driver`` untouched) when this process must evaluate it, which then raises or
    warns as always (a worker raised or warned, a query is met by two workers, a judged query never
    met has a repeated pair)."""
    import pandas as pd   # Parquet runs only (their reader uses pandas)

    outs = evaluate_in_workers(driver, parts, progress, rows, name)
    if outs is None:
        return False
    labels = [uniques for done, _, _ in outs for uniques, _, _ in done]
    if labels and not pd.Index(np.concatenate(labels)).is_unique:   # a query met by two workers: not grouped
        return False
    used = np.logical_or.reduce([out[1] for out in outs])
    try:   # the judged queries no worker met (the others' qrels were checked by their blocks' join)
        check_no_repeated_pairs(take_rows(qrels, driver.qrels_rows(np.flatnonzero(~used))), "qrels")
    except InputError:
        return False
    for done, _, empty_run in outs:
        driver.done.extend(done)
        if driver.empty_run is None:
            driver.empty_run = empty_run
    driver.used |= used
    return True


def _evaluate_block(qrels: Columns, run: Columns, positions: np.ndarray | int, opts: Options) -> QueryValues:
    """The default ``evaluate_block``: the core's evaluation of a block of whole queries."""
    return evaluate_lists(prepare_lists(qrels, run, opts, positions), opts)
