"""Runs read in blocks of whole queries: a TREC (or MS MARCO) text run (:func:`trec_blocks`), a
Parquet run (:func:`parquet_blocks`) or a dict ``{qid: {docid: score}}`` (:func:`dict_blocks`), and what
the streamed evaluation (:mod:`tierank.engine.streamed`) needs to read one: a description of the run
(:class:`RunSource`: its blocks, the second pass's buckets, how to sort it, its parts for worker
processes), blocks read ahead on a thread (:class:`read_ahead`), and the second pass of a run not grouped
by query (:func:`bucketed`). How blocks are cut: see :mod:`tierank.engine.streamed`.
"""

from __future__ import annotations

import contextlib
import functools
import os
import queue
import threading
from dataclasses import replace
from collections.abc import Mapping
from typing import Any, Callable, Generator, Iterator

import numpy as np
import pyarrow as pa

from .._progress import ProgressBar
from .._threads import in_background
from ..data.arrow import compute, take, to_numpy
from ..data.columns import Columns, is_integer_ids, normalized
from ..data.ids import query_codes
from ..errors import InputError
from . import trec
from .parquet import ParquetRun, parquet_files, row_columns
from .source import Input, TextInput, TextReader, line_ends, open_input
from .tables import check_dict_rows, pairs_columns, plain_dict
from .workers import worker_count

__all__ = ["trec_blocks", "parquet_blocks", "dict_blocks", "RunSource", "trec_source", "parquet_source", "dict_source",
           "dict_rows", "read_ahead", "bucketed"]

_READ_BYTES = 1 << 22          # bytes read from a text file at a time
_BATCH_ROWS = 1 << 16          # rows per batch read from a Parquet row group
_MAX_BUCKETS = 256             # temporary files of the second pass, at most

#: A block: its rows (line or row numbers of the whole file), the number of rows before it, whether it is the last.
Block = tuple[Columns, int, bool]


# ------------------------------------------------------------------------------------ TREC blocks


def _parse_lines(data: bytes, name: str, first_line: int, layout: Any,
                 meanwhile: Callable[[], None] | None = None,
                 ranks_before: trec.RanksBefore | None = None) -> Columns | None:
    """The run rows of ``data`` (whole lines, the first being line ``first_line`` of the file), with
    the rules and messages of :func:`tierank.io.trec.read_run` (``layout``: TREC or MS MARCO,
    ``ranks_before`` saying which query's ranks go on); None when it holds no run line.

    The lines are parsed on a background thread (pyarrow's parser releases the GIL) while this thread
    checks that ``data`` is text, then calls ``meanwhile()`` (the reader reads on). The text check's
    error comes first, as when the whole file is read."""
    parsing = in_background(trec.columns_of_lines, data, name, layout, first_line, ranks_before)
    try:
        trec.check_text(data, name, first_line)
        if meanwhile is not None:
            meanwhile()
    except BaseException:
        with contextlib.suppress(BaseException):   # the parse ends before the error leaves (its own is not the first)
            parsing.result()
        raise
    return parsing.result()


def _last_query_start(query: Any) -> int:
    """The first row of the last run of equal query ids (a missing id is unlike every id: its row is a
    query of its own, refused later), looked for in the last 1,024 rows, then in 8 times as many, and so
    on (a block ends with one query, not with a block's worth of rows)."""
    arr = query if isinstance(query, (np.ndarray, pa.Array, pa.ChunkedArray)) else pa.array(query)
    n = len(arr)
    last = arr[n - 1]
    size = 1024
    while True:
        lo = max(0, n - size)
        if isinstance(arr, np.ndarray):
            other = np.flatnonzero(arr[lo:] != last)
        else:
            other = np.flatnonzero(arrow_differs(arr.slice(lo), last))
        if len(other):
            return lo + int(other[-1]) + 1
        if not lo:
            return 0
        size *= 8


def arrow_differs(ids: Any, other: Any) -> np.ndarray:
    """``ids != other`` (Arrow arrays of ids, or an array and a scalar) as a numpy bool array, a missing
    id (null, or a column of nulls only) differing from every id, missing or not."""
    if pa.types.is_null(ids.type) or (isinstance(other, pa.Scalar) and pa.types.is_null(other.type)):
        return np.ones(len(ids), dtype=bool)
    return to_numpy(compute("not_equal", ids, other), null=True)


def take_rows(cols: Columns, rows: np.ndarray | slice) -> Columns:
    """Rows of ``cols`` (line numbers too); increasing rows that follow each other are a slice (views,
    no copy)."""
    if isinstance(rows, np.ndarray) and len(rows) and int(rows[-1]) - int(rows[0]) + 1 == len(rows) \
            and bool((rows[1:] > rows[:-1]).all()):
        rows = slice(int(rows[0]), int(rows[-1]) + 1)

    def pick(a: Any) -> Any:
        if isinstance(rows, slice) or isinstance(a, np.ndarray):
            return a[rows]
        return take(a, np.asarray(rows, dtype=np.int64))
    return replace(cols, query=pick(cols.query), doc=pick(cols.doc), value=pick(np.asarray(cols.value)),
                   lines=None if cols.lines is None else cols.lines[rows],
                   trec_eval_grades=None if cols.trec_eval_grades is None else cols.trec_eval_grades[rows])


def trec_blocks(path: Any, block_rows: int, progress: bool | None = None, *, format: str | None = None,
                source: Input | None = None) -> Iterator[Block]:
    """The rows of a TREC (or MS MARCO) run file in blocks of whole queries.

    ``path``: a path or a :class:`tierank.io.source.TextInput`; ``source``: its input, already opened
    (:func:`tierank.io.source.open_input`; left open), else it is opened here (and closed); ``format``: as for
    :func:`tierank.io.trec.read_run` (None: detected from the first bytes).

    Yields ``(columns, first_row, last)``: the rows of the block (ids and scores as
    :func:`tierank.io.trec.read_run_columns` gives them, line numbers of the whole file), the number
    of data rows before it, and whether it is the last block.

    Examples
    --------
    >>> import os, pathlib, tempfile
    >>> from tierank.io.blocks import trec_blocks
    >>> path = os.path.join(tempfile.mkdtemp(), "run.txt")
    >>> _ = pathlib.Path(path).write_text("q1 Q0 a 1 3 t\\nq1 Q0 b 2 2 t\\nq2 Q0 c 1 5 t\\nq3 Q0 a 1 1 t\\n")
    >>> [(c.query.to_pylist(), first, last) for c, first, last in trec_blocks(path, block_rows=2)]
    [(['q1', 'q1', 'q2'], 0, False), (['q3'], 3, True)]
    """
    text_input = path if isinstance(path, TextInput) else None
    if text_input is not None and format is None:
        format = text_input.format
    block_rows = max(1, int(block_rows))
    owned = source is None
    if source is None:
        source = open_input(path)
    name = source.name
    bar = ProgressBar(progress, source.size(), os.path.basename(name), "B")
    try:
        reader = TextReader(source, _READ_BYTES)
        at = 0

        def read() -> bytes:
            nonlocal at
            chunk = reader.read()
            bar.update(source.count - at)
            at = source.count
            return chunk
        first = read()
        whole = not first
        # the layout is told from a whole first data line, whatever the read size: read on until one is
        # held, or 64 KB (the reader drops a byte order mark: what the whole file's reading looks at), or the end
        while first and len(first) < 1 << 16 and trec.first_data(first) is None:
            more = read()
            if not more:
                whole = True
                break
            first += more
        if text_input is not None:
            text_input.head = trec.text_head(first, whole)
        pending = _Pending(read, first, reader.line_ends)   # the line ends the reader found are used again
        yield from _line_blocks(pending, name, trec.layout_of("run", format, first, name), block_rows)
    finally:
        bar.close()
        if owned:
            source.close()


class _Pending:
    """Text read from a file and not yet cut into blocks: chunks as read (no copy until a block is
    cut), each scanned once for its line ends. ``fill`` reads on until enough lines are held;
    ``prefetch`` does too but keeps a read error for the ``fill`` that needs those bytes."""

    def __init__(self, read: Callable[[], bytes], first: bytes,
                 newlines: Callable[[bytes], np.ndarray] = line_ends) -> None:
        self._read = read
        self._newlines = newlines
        self.chunks: list[memoryview] = []
        self.ends: list[np.ndarray] = []    # the line ends of each chunk, as places in that chunk
        self.size = 0                       # bytes held
        self.n_lines = 0                    # line ends held
        self.eof = not first
        self.error: InputError | None = None
        self._add(first)

    def _add(self, chunk: bytes) -> None:
        if chunk:
            self.chunks.append(memoryview(chunk))
            self.ends.append(self._newlines(chunk))
            self.size += len(chunk)
            self.n_lines += len(self.ends[-1])

    def fill(self, lines: int) -> None:
        """Read until ``lines`` line ends are held or the text ends."""
        while self.n_lines < lines and not self.eof:
            if self.error is not None:
                raise self.error
            chunk = self._read()
            self.eof = not chunk
            self._add(chunk)

    def prefetch(self, lines: int) -> None:
        try:
            self.fill(lines)
        except InputError as err:
            self.error = err

    def line_end(self, j: int) -> int:
        """The place just after the ``j``-th line end held (1-based; ``j <= n_lines``)."""
        before = 0
        for chunk, ends in zip(self.chunks, self.ends):
            if j <= len(ends):
                return before + int(ends[j - 1]) + 1
            j -= len(ends)
            before += len(chunk)
        raise AssertionError("fewer line ends held than asked for")

    def head(self, stop: int) -> bytes:
        """The first ``stop`` bytes held (one copy)."""
        parts, left = [], stop
        for chunk in self.chunks:
            if left <= 0:
                break
            parts.append(chunk[:left])
            left -= len(chunk)
        return b"".join(parts)

    def drop(self, stop: int) -> None:
        """Forget the first ``stop`` bytes held (whole lines)."""
        while stop and stop >= len(self.chunks[0]):
            stop -= len(self.chunks[0])
            self.size -= len(self.chunks[0])
            self.n_lines -= len(self.ends[0])
            del self.chunks[0], self.ends[0]
        if stop:
            ends = self.ends[0]
            gone = int(np.searchsorted(ends, stop))   # line ends before the cut
            self.chunks[0] = self.chunks[0][stop:]
            self.ends[0] = ends[gone:] - stop
            self.size -= stop
            self.n_lines -= gone


def _line_blocks(text: _Pending, name: str, layout: Any, block_rows: int) -> Iterator[Block]:
    """The blocks of :func:`trec_blocks`: ``block_rows`` lines are parsed (while the next lines are
    read), the rows of their last query are held back and parsed again at the start of the next block.
    A query longer than a block: the rows parsed so far are kept and their lines dropped, and the next
    ``block_rows`` lines are parsed, until another query starts (lines are parsed once, at most
    ``block_rows`` at a time: blank lines cost their bytes only)."""
    line0, row0, want = 1, 0, block_rows
    seen_text = False
    carried: list[Columns] = []   # rows of one query, whose lines are dropped
    ranks: trec.RanksBefore | None = None   # MS MARCO: the carried query's ranks go on in the next block
    while True:
        text.fill(want)
        last = text.eof and text.n_lines <= want
        block = text.head(text.size if last else text.line_end(want))
        seen_text = seen_text or bool(block.strip())
        read_on = None if last else (lambda: text.prefetch(want + block_rows))
        cols = _parse_lines(block, name, line0, layout, meanwhile=read_on, ranks_before=ranks)
        del block
        if last:
            if cols is None and row0 == 0 and not carried:
                what = "the file is empty" if not seen_text else "the file holds only blank and comment lines"
                raise InputError(f"no run line: {what} (expected lines '{layout.fields}')", file=name, line=1)
            if cols is not None or carried:
                yield trec.concat_columns(carried + ([cols] if cols is not None else [])), row0, True
            return
        keep = want   # lines of the block before the held-back query (all of them: nothing held back)
        if cols is not None:
            # the first row of the last query, counting the last carried row as row -1
            before = [take_rows(carried[-1], slice(len(carried[-1].value) - 1, None))] if carried else []
            start = _last_query_start(trec.concat_columns(before + [cols]).query)
            k = start - len(before)   # the held-back rows of this block start at row k (0: all of them)
            if start == 0:   # one query so far (the carried one, if any): keep its rows, read on
                carried.append(cols)
                ranks = trec.ranks_after(cols, ranks) if layout.negate else None
            else:
                assert cols.lines is not None
                keep = int(cols.lines[k]) - line0
                block_cols = trec.concat_columns(carried + [take_rows(cols, slice(0, k))])
                # the next block starts with the held-back query's first line: every query before it is over
                if layout.negate:
                    ranks = (trec.ranks_after(take_rows(cols, slice(0, k)), ranks) if k
                             else ranks or trec.RanksBefore()).finished()
                carried = []
                yield block_cols, row0, False
                row0 += len(block_cols.value)
                del block_cols
        line0 += keep
        text.drop(text.line_end(keep) if keep else 0)



# --------------------------------------------------------------------------------- Parquet blocks


def parquet_blocks(path: Any, block_rows: int, progress: bool | None = None, rows: tuple[int, int] | None = None
                   ) -> Iterator[Block]:
    """The rows of a Parquet run in blocks of whole queries: ``(columns, first_row, last)`` as
    :func:`trec_blocks` yields them.

    ``rows``: ``(start, stop)``, ``start`` the first row of a row group: only the queries whose first
    row is in ``[start, stop)`` (the rows a worker process evaluates, :mod:`tierank.io.workers`): the
    leading rows of a query that started before ``start`` are left out, and the last query is read to
    its end past ``stop``.

    Examples
    --------
    >>> import os, tempfile, pandas as pd
    >>> from tierank.io.blocks import parquet_blocks
    >>> path = os.path.join(tempfile.mkdtemp(), "run.parquet")
    >>> pd.DataFrame({"query_id": [1, 1, 2, 3], "doc_id": [1, 2, 3, 4], "score": [1.0] * 4}).to_parquet(path)
    >>> [(len(c.value), first, last) for c, first, last in parquet_blocks(path, block_rows=2)]
    [(3, 0, False), (1, 3, True)]
    """
    dataset = ParquetRun.open(path)
    files, names, starts = dataset.files, dataset.names, dataset.starts
    total = int(dataset.sizes.sum())
    if not total:
        raise InputError("no run row: the table is empty", file=files[0])
    block_rows = max(1, int(min(block_rows, total)))
    bar = ProgressBar(progress, total, os.path.basename(os.fspath(path)), "rows")
    start, stop = (0, total) if rows is None else rows
    batches = dataset.batches(start, min(block_rows, _BATCH_ROWS))
    segment = None if rows is None else _Segment(batches, names[0], dataset.query_before(start), stop - start)

    def columns(table: pa.Table, row0: int) -> Columns:   # a slice: its buffers are shared, not destructed
        if dataset.plain and not any(table.column(n).null_count for n in names):
            # the arrays a DataFrame's columns would hold (``frame[col].array``: NaN counts as missing)
            import pandas as pd

            query, doc, score = (pd.arrays.NumpyExtensionArray(table.column(n).to_numpy()) for n in names)
            arrays = Columns(query=query, doc=doc, value=score, source="run", names=names)
            return row_columns(arrays, "run", row0, files, starts)
        return row_columns(table.to_pandas(split_blocks=True), "run", row0, files, starts)

    try:
        pending: list[pa.RecordBatch] = []
        n_pending, row0, want = 0, -1, block_rows
        source = batches if segment is None else iter(segment)
        done = False
        while True:
            while n_pending < want and not done:
                batch = next(source, None)
                if batch is None:
                    done = True
                    break
                bar.update(batch.num_rows)
                if row0 < 0:   # the first row kept
                    row0 = start + (segment.skipped if segment is not None else 0)
                pending.append(batch)
                n_pending += batch.num_rows
            table = pa.Table.from_batches(pending) if pending else None
            if done:
                if table is not None and table.num_rows:
                    yield columns(table, row0), row0, True
                return
            assert table is not None   # rows are pending until the last batch
            k = _last_query_start(table.column(names[0]))   # chunked: only its last rows are read
            if k == 0:   # one query so far: read more rows before cutting
                want *= 2
                continue
            yield columns(table.slice(0, k), row0), row0, False
            row0 += k
            pending = table.slice(k).combine_chunks().to_batches()
            n_pending = table.num_rows - k
            want = block_rows
    finally:
        bar.close()


class _Segment:
    """The batches of the queries that start in the next ``length`` rows of ``batches``: the leading
    rows of the query ``before`` (a pyarrow scalar, or None) are left out (``skipped`` counts them),
    and the rows after ``length`` are kept up to the first row of another query."""

    def __init__(self, batches: Iterator[pa.RecordBatch], query: str, before: Any, length: int) -> None:
        self.batches, self.query, self.before, self.length = batches, query, before, length
        self.skipped = 0

    def __iter__(self) -> Iterator[pa.RecordBatch]:
        read, previous = 0, self.before   # rows read; the query id of the row before the batch
        skipping = self.before is not None
        for batch in self.batches:
            q, n = batch.column(self.query), batch.num_rows
            if not n:
                continue
            if not skipping and read + n <= self.length:   # inside the range: every row is kept
                yield batch
                read += n
                previous = q[n - 1]
                continue
            # where the query changes (a missing id counts as a change: its row is kept, and refused later)
            first = arrow_differs(q.slice(0, 1), previous) if previous is not None else np.ones(1, dtype=bool)
            new = np.concatenate([first, arrow_differs(q.slice(1), q.slice(0, n - 1))])
            lo = 0
            if skipping:
                kept = np.flatnonzero(new)
                lo = int(kept[0]) if len(kept) else n
                self.skipped += lo
                skipping = lo == n
            after = max(lo, self.length - read)   # the range ends here (or before the first row kept)
            later = np.flatnonzero(new[after:])      # queries starting there or later: not ours
            hi = n if not len(later) else after + int(later[0])
            if hi > lo:
                yield batch.slice(lo, hi - lo)
            if hi < n:
                return
            read += n
            previous = q[n - 1]


# ------------------------------------------------------------------------------------ dict blocks


def dict_blocks(obj: Any, block_rows: int) -> Iterator[Block]:
    """The rows of a run given as a dict ``{qid: {docid: score}}`` (any Mapping of Mappings) in blocks of
    whole queries: ``(columns, first_row, last)`` as :func:`trec_blocks` yields them.

    Each block holds the next queries in the dict's order up to about ``block_rows`` rows (a query
    longer than that: a block of its own), read by :func:`tierank.io.tables.pairs_columns` as
    :func:`tierank.io.tables.dict_columns` reads a whole dict: rows, ids, values and the errors naming
    a query are those of the whole dict's reading, restricted to the block. Queries without rows are
    left out, as the whole reading leaves them out; a dict with no row at all is one empty block.

    Examples
    --------
    >>> from tierank.io.blocks import dict_blocks
    >>> run = {"q1": {"a": 3.0, "b": 2.0}, "q2": {}, "q3": {"c": 5.0}, "q4": {"a": 1.0}}
    >>> [(c.query.to_pylist(), first, last) for c, first, last in dict_blocks(run, block_rows=2)]
    [(['q1', 'q1'], 0, False), (['q3', 'q4'], 2, True)]
    >>> [(c.query.to_pylist(), first, last) for c, first, last in dict_blocks(run, block_rows=1)]
    [(['q1', 'q1'], 0, False), (['q3'], 2, False), (['q4'], 3, True)]
    """
    pairs = list(obj.items())
    check_dict_rows(pairs, "run")
    unique = plain_dict(type(obj))
    counts = np.fromiter((len(row) for _, row in pairs), dtype=np.int64, count=len(pairs))
    kept = np.flatnonzero(counts)
    if len(kept) < len(pairs):
        pairs, counts = [pairs[i] for i in kept.tolist()], counts[kept]
    if not len(pairs):   # no row
        yield pairs_columns(pairs, "run", unique), 0, True
        return
    ends = np.cumsum(counts)
    a = 0
    while a < len(pairs):   # a block: from query a to the first whose rows make it block_rows long
        row0 = int(ends[a - 1]) if a else 0
        b = min(len(pairs), int(np.searchsorted(ends, row0 + max(1, block_rows))) + 1)
        yield pairs_columns(pairs[a:b], "run", unique), row0, b == len(pairs)
        a = b


# ---------------------------------------------------------------------------- reading a run file


class read_ahead:   # noqa: N801 - used as a function returning an iterator
    """``blocks``, read on a thread started at once while the caller does something else (reading the
    qrels, evaluating the current block: reading and pyarrow's parsing release the GIL), at most
    ``depth`` blocks ahead (memory grows by that many blocks; :meth:`keep` changes it). The reader's
    errors are raised where its block would have come, and the reader stops when the caller closes
    the iterator or comes to its end. ``depth=0``: no thread, each block is read when asked for (a
    dict's blocks: reading Python objects holds the GIL, and a thread reading them would keep the
    evaluation waiting for the GIL each time numpy releases it)."""

    _END = object()

    def __init__(self, blocks: Iterator[Any], depth: int = 1) -> None:
        self.blocks = blocks
        self.ready: queue.Queue = queue.Queue(maxsize=max(depth, 1))
        self.stop = threading.Event()
        self.finished = False
        self.reader = threading.Thread(target=self._read, name="tierank-read-ahead", daemon=True) if depth else None
        if self.reader is not None:
            self.reader.start()

    def keep(self, depth: int) -> None:
        """Read at most ``depth`` blocks ahead from now on (a reader with a thread)."""
        with self.ready.mutex:
            self.ready.maxsize = depth

    def _read(self) -> None:
        try:
            for item in self.blocks:
                while not self.stop.is_set():
                    try:
                        self.ready.put((item, None), timeout=0.05)
                        break
                    except queue.Full:
                        continue
                if self.stop.is_set():
                    return
            self.ready.put((self._END, None))
        except BaseException as err:   # noqa: BLE001 - handed to the caller's thread, raised there
            self.ready.put((None, err))
        finally:
            self._close_blocks()

    def _close_blocks(self) -> None:
        close = getattr(self.blocks, "close", None)
        if close is not None:
            close()

    def __iter__(self) -> "read_ahead":
        return self

    def __next__(self) -> Any:
        if self.finished:
            raise StopIteration
        if self.reader is None:   # read here
            try:
                return next(self.blocks)
            except BaseException:
                self.close()
                raise
        item, err = self.ready.get()
        if err is not None or item is self._END:
            self.close()
            if err is not None:
                raise err
            raise StopIteration
        return item

    def close(self, wait: bool = True) -> None:
        """Stop the reader; ``wait``: until it has stopped (``False`` when the process is being stopped,
        by SIGTERM or Ctrl-C: a reader waiting for a pipe's next bytes is left behind, a daemon thread)."""
        self.finished = True
        if self.reader is None:
            self._close_blocks()
            return
        self.stop.set()
        while wait and self.reader.is_alive():   # let a reader blocked on the full queue see the stop
            try:
                self.ready.get(timeout=0.05)
            except queue.Empty:
                pass
        if wait:
            self.reader.join()


class RunSource:
    """A run file: its blocks, how many buckets a second pass needs, what to say when it is not grouped."""

    def __init__(self, blocks: Callable[[], Iterator[Block]], n_buckets: Callable[[], int], name: str,
                 sort_hint: str,
                 parts: Callable[[int | None], tuple[int, list[Callable[[], Iterator[Block]]]]] | None = None
                 ) -> None:
        self.blocks, self.n_buckets, self.name, self.sort_hint = blocks, n_buckets, name, sort_hint
        # workers -> (rows, one callable giving the blocks of each worker): a run split between processes
        self.parts = parts


def trec_source(path: Any, block_rows: int, progress: bool | None, opened: Input) -> RunSource:
    """A text run, opened once (``opened``): the first pass reads it, a second pass reads it again from
    its start (:meth:`tierank.io.source.Input.rewind`: the same file, or the copy of a pipe)."""
    name = opened.name
    passes = 0

    def blocks() -> Iterator[Block]:
        nonlocal passes
        if passes:
            opened.rewind()   # the first pass's reader has stopped: the rest of a pipe is copied now
        passes += 1
        return trec_blocks(path, block_rows, progress, source=opened)

    def n_buckets() -> int:
        size = opened.size()
        return _bucket_count(opened.text_bytes(opened.spooled_size() if size is None else size),
                             25 * block_rows)   # >= 25 bytes a line
    if not opened.regular:
        command = "... | LC_ALL=C sort -s -k1,1 | tierank ..."
    elif opened.kind == "gzip":
        command = f"zcat {name} | LC_ALL=C sort -s -k1,1 | gzip > sorted.txt.gz"
    else:
        command = f"LC_ALL=C sort -s -k1,1 {name} > sorted.txt"
    hint = (f"sort the file keeping the order of each query's lines, e.g. `{command}` (only ties='random' "
            "depends on where the lines stand), or evaluate it with stream=None (the default), which reads "
            "it a second time through temporary files")
    return RunSource(blocks, n_buckets, name, hint)


def parquet_source(path: Any, block_rows: int, progress: bool | None) -> RunSource:
    """A Parquet run (a file or a directory)."""
    import pyarrow.parquet as pq

    files = parquet_files(path)

    def n_buckets() -> int:
        rows = sum(pq.ParquetFile(f).metadata.num_rows for f in files)
        return _bucket_count(rows, block_rows)
    hint = ("write it sorted by query, keeping the order of each query's rows, e.g. with pyarrow: "
            "t = pq.read_table(path); pq.write_table(t.take(pc.sort_indices(t, [(query_column, 'ascending')])), "
            "'sorted.parquet') (sort_indices is stable; only ties='random' depends on where the rows stand), or "
            "evaluate it with stream=None (the default), which reads it a second time through temporary files")

    def parts(workers: int | None) -> tuple[int, list[Callable[[], Iterator[Block]]]]:
        dataset = ParquetRun.open(path)
        rows = int(dataset.sizes.sum())
        n = worker_count(workers, rows)
        ranges = dataset.segments(n) if n > 1 and rows else []
        return rows, [functools.partial(parquet_blocks, path, block_rows, False, r) for r in ranges]
    return RunSource(lambda: parquet_blocks(path, block_rows, progress), n_buckets, os.fspath(path), hint, parts)


def dict_source(obj: Any, block_rows: int) -> RunSource:
    """A run given as a dict ``{qid: {docid: score}}``, read in blocks (:func:`dict_blocks`). A dict
    lists each query once, so its blocks are grouped by query; a Mapping whose iteration gives a query
    twice takes the second pass as a file does."""
    def n_buckets() -> int:
        return _bucket_count(dict_rows(obj), block_rows)
    return RunSource(lambda: dict_blocks(obj, block_rows), n_buckets, "run",
                     "give each query id once (a dict does)")


def dict_rows(obj: Mapping) -> int:
    """The rows of a dict ``{qid: {docid: value}}``: its rows' lengths summed (a row that is not a
    Mapping, an error :func:`dict_blocks` reports, counts none)."""
    return sum(len(row) for row in obj.values() if isinstance(row, Mapping))


def _bucket_count(size: int, per_bucket: int) -> int:
    """Temporary files of a second pass: ``size`` (rows, or bytes) in buckets of about ``per_bucket``, at
    most :data:`_MAX_BUCKETS`."""
    return int(min(_MAX_BUCKETS, max(1, -(-size // per_bucket))))


# ------------------------------------------------------------------------------- the second pass


def first_seen_codes(ids: Any, counts: np.ndarray | None = None) -> tuple[np.ndarray, np.ndarray]:
    """(codes, uniques): ids numbered in order of first appearance (uniques as a numpy array).
    ``counts``: the rows of each group of one id, when the reader knows them (a dict's)."""
    queries = query_codes(ids, ids[:0], counts)
    return queries.run, queries.labels


def bucketed(blocks: Iterator[Block], n_buckets: int, where: str,
              ) -> Generator[tuple[Columns, np.ndarray], None, None]:
    """Blocks of whole queries of any run: its rows written to ``n_buckets`` temporary Arrow files by a
    hash of the query id, then read back one file at a time (rows in file order in each)."""
    import tempfile

    import pandas as pd
    import pyarrow.ipc as ipc

    with tempfile.TemporaryDirectory(prefix="tierank-", dir=where) as tmp:
        writers: dict[int, Any] = {}
        template: Columns | None = None
        try:
            for cols, row0, _ in blocks:
                cols = normalized(cols, "score")
                if template is None:
                    template = take_rows(cols, slice(0, 0))
                n = len(cols.value)
                codes, uniques = first_seen_codes(cols.query)   # each query id coded once
                bucket = (pd.util.hash_array(uniques) % np.uint64(n_buckets)).astype(np.int64)[codes]
                order = np.argsort(bucket, kind="stable")
                bounds = np.searchsorted(bucket[order], np.arange(n_buckets + 1))
                table = pa.table({"q": _arrow(cols.query), "d": _arrow(cols.doc), "v": pa.array(cols.value),
                                  "pos": pa.array(row0 + np.arange(n, dtype=np.int64)),
                                  "line": pa.array(cols.lines if cols.lines is not None
                                                   else np.zeros(n, np.int64))})
                for b in np.flatnonzero(np.diff(bounds)).tolist():   # a loop over buckets, not queries
                    part = table.take(pa.array(order[bounds[b]:bounds[b + 1]]))
                    if b not in writers:
                        writers[b] = ipc.new_file(os.path.join(tmp, f"{b}.arrow"), part.schema)
                    writers[b].write_table(part)
        finally:
            for w in writers.values():
                w.close()
        assert template is not None
        for b in sorted(writers):
            with pa.OSFile(os.path.join(tmp, f"{b}.arrow")) as source:   # read into memory: the file can go
                table = ipc.open_file(source).read_all()
            q, d = table.column("q").combine_chunks(), table.column("d").combine_chunks()
            cols = replace(template, query=q.to_numpy() if is_integer_ids(template.query) else q,
                           doc=d.to_numpy() if is_integer_ids(template.doc) else d,
                           value=table.column("v").to_numpy(),
                           lines=None if template.lines is None else table.column("line").to_numpy())
            yield cols, table.column("pos").to_numpy()
            del table, cols


def _arrow(ids: Any) -> Any:
    if isinstance(ids, np.ndarray):
        return pa.array(ids)
    return ids.combine_chunks() if isinstance(ids, pa.ChunkedArray) else ids
