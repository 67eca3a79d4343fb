"""A streamed Parquet run evaluated by worker processes, each on its own range of row groups.

One Python thread evaluates about 40 ns of numpy work per run row, holding the GIL often enough that
threads do not scale; processes do. After the qrels are read and indexed (once, in the caller's
process), :func:`evaluate_in_workers` forks ``workers`` processes, which share those arrays
(copy-on-write, never written). Worker ``i`` reads the row groups of its range of rows and evaluates
the queries that *start* in that range, block by block as :mod:`tierank.engine.streamed` does (each row at
its row number in the whole dataset, so every tie mode orders ties as in memory): it leaves out the
leading rows of a query that started before its range and reads its last query to its end (see
``rows=`` of :func:`tierank.io.blocks.parquet_blocks`). Each worker sends back its per-query values
only; the caller puts them together in row order, so the results are those of one process bit for bit.
A worker runs without tierank's background threads (:mod:`tierank._threads`): the processes already
keep every core busy.

Anything unusual gives the whole run back to the one-process path, which then says or does what it
always does: a worker that raises (an InputError included) or warns, a query met by two workers (a run
not grouped by query: the second pass), a worker that dies, a repeated judgment of a query no worker met
(the judgments of the others are checked by their blocks' join). So errors, warnings and their order are
those of ``workers=1``; only a run that would raise costs two reads.

Workers need ``fork`` (Linux): elsewhere, and in a process that may not have children (a daemonic
multiprocessing worker), the run is evaluated in the caller's process. Memory grows by one worker's
blocks (about ``block_rows`` rows each, as in one process) per worker.
"""

from __future__ import annotations

import os
import sys
import warnings
from typing import Any, Callable, Iterator

import numpy as np

from .._progress import ProgressBar
from .._threads import cores, single_threaded
from ..data.columns import Columns, normalized

__all__ = ["worker_count", "evaluate_in_workers"]

#: Rows a worker should have at least before a run is split (fewer: one process is about as fast).
MIN_ROWS_PER_WORKER = 1 << 21
#: Workers by default at most (each holds its own blocks).
MAX_DEFAULT_WORKERS = 8

_POLL_SECONDS = 0.2


def can_fork() -> bool:
    """Whether worker processes can be forked here (Linux, and not inside a daemonic process)."""
    import multiprocessing

    return sys.platform.startswith("linux") and not multiprocessing.current_process().daemon


def worker_count(workers: int | None, rows: int) -> int:
    """The processes to evaluate ``rows`` run rows with: ``workers``, or by default one per core (at
    most :data:`MAX_DEFAULT_WORKERS`) with at least :data:`MIN_ROWS_PER_WORKER` rows each; 1 where
    processes cannot be forked.

    Examples
    --------
    >>> from tierank.io.workers import worker_count
    >>> worker_count(None, 1000)   # a small run: this process
    1
    >>> worker_count(3, 1000) in (1, 3)   # 1 where processes cannot be forked
    True
    """
    if not can_fork():
        return 1
    if workers is not None:
        return int(workers)
    return int(max(1, min(cores(), MAX_DEFAULT_WORKERS, rows // MIN_ROWS_PER_WORKER)))


def _work(driver: Any, blocks: Callable[[], Iterator[tuple[Columns, int, bool]]], counter: Any, send: Any) -> None:
    """In a worker: evaluate the blocks with (a copy of) the driver; send its per-query values, or None."""
    out = None
    single_threaded()   # this process already keeps a core busy: no thread per block
    try:
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            for cols, row0, _ in blocks():
                cols = normalized(cols, "score")
                driver.add(cols, row0, check_grouped=True)
                with counter.get_lock():
                    counter.value += len(cols.value)
        if not caught:
            out = (driver.done, driver.used, driver.empty_run)
    except BaseException:   # noqa: BLE001 - the caller evaluates the run again in its own process
        out = None
    try:
        send.send(out)
    except Exception:   # noqa: BLE001 - values that cannot be pickled: the same
        send.send(None)
    send.close()


def _start(ctx: Any, target: Callable, args: tuple) -> Any:
    process = ctx.Process(target=target, args=args, daemon=True, name="tierank-worker")
    with warnings.catch_warnings():
        # Python 3.12+ warns that a process with threads (OpenBLAS', Arrow's pools) may deadlock after
        # fork. Both libraries restart their pools in the child (pthread_atfork), and the child runs
        # only tierank's numpy and pyarrow code.
        warnings.filterwarnings("ignore", message=r".*multi-threaded, use of fork\(\)", category=DeprecationWarning)
        process.start()
    return process


def evaluate_in_workers(driver: Any, parts: list[Callable[[], Iterator[Any]]], progress: bool | None, total: int,
                        name: str) -> list[tuple[list, np.ndarray, Any]] | None:
    """Evaluate the blocks of each part (``part()``: blocks as :func:`tierank.io.blocks.trec_blocks`
    yields them) in its own process with a copy of ``driver`` (:class:`tierank.engine.streamed.Driver`),
    the bar counting ``total`` rows: what each copy computed (``done``, ``used``, ``empty_run``), in
    the order of the parts, or None when a worker raised, warned or died, or when no process could be
    started (no semaphores, a process limit)."""
    import multiprocessing

    ctx = multiprocessing.get_context("fork")
    processes, receivers = [], []
    bar = None
    try:
        try:
            counter = ctx.Value("q", 0)
            for blocks in parts:
                receive, send = ctx.Pipe(duplex=False)
                receivers.append(receive)
                try:
                    processes.append(_start(ctx, _work, (driver, blocks, counter, send)))
                finally:
                    send.close()
        except OSError:   # this process evaluates the run
            return None
        bar = ProgressBar(progress, total, os.path.basename(name), "rows")
        outs = _receive(receivers, counter, bar)
    finally:
        if bar is not None:
            bar.close()
        for process in processes:
            if process.is_alive():
                process.terminate()
            process.join()
        for receive in receivers:
            receive.close()
    return None if any(out is None for out in outs) else outs


def _receive(receivers: list[Any], counter: Any, bar: ProgressBar) -> list[Any]:
    """What each worker sends (None for a worker that died), updating the bar as rows are evaluated."""
    import multiprocessing.connection

    outs: list[Any] = [None] * len(receivers)
    waiting = dict(enumerate(receivers))
    shown = 0
    while waiting:
        ready = multiprocessing.connection.wait(list(waiting.values()), timeout=_POLL_SECONDS)
        for i in [i for i, r in waiting.items() if r in ready]:
            try:
                outs[i] = waiting.pop(i).recv()
            except (EOFError, OSError):
                outs[i] = None
        now = counter.value
        bar.update(now - shown)
        shown = now
    return outs
