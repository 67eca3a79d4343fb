"""Runs and judgments as Parquet files or directories (datasets), read whole or in blocks of whole queries.

A run table has the columns ``query_id, doc_id, score`` or any of the aliases pandas input accepts
(``qid``/``query``, ``docid``/``docno``/``doc``, ``scores``/``sim``); qrels ``query_id, doc_id,
relevance`` (or ``rel``/``grade``/``label``); a run with a ``rank`` column and no score column is scored
``-rank`` (rank 1 is best, equal ranks tie). Other columns are not read. Ids are integers or strings,
values numbers, with the rules of DataFrame input (:mod:`tierank.data.columns`): a Parquet table is
evaluated exactly as ``pandas.read_parquet`` of it would be.

A directory is read as :func:`pyarrow.dataset.dataset` finds its ``.parquet`` files (sorted by path,
hidden files and ``_``-prefixed files left out); its rows are those of the files one after the
other. :func:`tierank.evaluate` reads a Parquet run in batches of row groups (``block_rows`` rows) and
evaluates it in blocks of whole queries, as a TREC run (:mod:`tierank.io.blocks`); Parquet qrels are read
whole (:func:`read_columns_parquet`). Errors in either name the file and the row in that file (0-based,
as ``df.iloc``).
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Iterator

import numpy as np
import pyarrow as pa

from .._threads import map_on_two_threads
from ..data.columns import Columns
from ..errors import InputError
from .source import NOT_SEEKABLE_PARQUET
from .tables import find_columns, table_columns

if TYPE_CHECKING:
    import pandas as pd

__all__ = ["parquet_files", "read_run_parquet", "read_qrels_parquet", "read_columns_parquet"]


def parquet_files(path: str | os.PathLike) -> list[str]:
    """The Parquet files of ``path``: the file itself, or those of a directory in dataset order.

    Examples
    --------
    >>> import os, tempfile, pandas as pd
    >>> from tierank.io.parquet import parquet_files
    >>> folder = tempfile.mkdtemp()
    >>> for i in (2, 1):
    ...     pd.DataFrame({"qid": [i], "docno": ["d"], "score": [1.0]}).to_parquet(os.path.join(folder, f"p{i}.parquet"))
    >>> [os.path.basename(f) for f in parquet_files(folder)]
    ['p1.parquet', 'p2.parquet']
    """
    name = os.fspath(path)
    if not os.path.isdir(name):
        if os.path.exists(name) and not os.path.isfile(name):   # a pipe, a FIFO: read once, from the start
            raise InputError(NOT_SEEKABLE_PARQUET, file=os.fsdecode(name))
        return [name]
    files: list[str] = []
    # the dataset's files as pyarrow's discovery finds them (names starting with '.' or '_' left out:
    # _SUCCESS, .crc), but walked here: symlinked folders are not followed (a link to '.' made pyarrow
    # walk for ever), and the walk stops at the first file that is not Parquet (`tierank qrels . ...`
    # in a large tree is an error at once, not a walk of the whole tree)
    for folder, dirs, names in os.walk(os.fsdecode(name), onerror=_raise, followlinks=False):
        dirs[:] = sorted(d for d in dirs if not d.startswith((".", "_")))
        for file in sorted(n for n in names if not n.startswith((".", "_"))):
            path = os.path.join(folder, file)
            if not os.path.isfile(path):   # a FIFO, a socket, a dangling link
                raise InputError("not a Parquet dataset: not a regular file", file=os.fsdecode(path))
            with open(path, "rb") as fh:
                if fh.read(4) != b"PAR1":
                    raise InputError("not a Parquet dataset: a file in the directory is not Parquet (no PAR1 "
                                     "magic bytes)", file=os.fsdecode(path))
            files.append(path)
    if not files:
        raise InputError("no Parquet file in the directory", file=name)
    return sorted(files)


def _raise(err: OSError) -> None:
    raise InputError(f"cannot read the directory ({err.strerror or err})", file=os.fsdecode(err.filename or ""))


def _names(files: list[str], kind: str) -> tuple[str, str, str]:
    """The query, document and value columns (the errors of DataFrame input, naming the file)."""
    import pyarrow.parquet as pq

    try:
        schema = pq.read_schema(files[0])
    except (pa.ArrowInvalid, OSError) as err:
        raise InputError(f"not a Parquet file ({err})", file=files[0]) from None
    try:
        return find_columns(list(schema.names), kind, "table")[:3]   # a run with only ranks: the rank column
    except InputError as err:
        raise InputError(err.message, file=files[0]) from None


def _read_frame(path: Any, kind: str) -> tuple[pd.DataFrame, list[str], list[int]]:
    """(frame, files, rows of each file): the query, document and value columns of every file."""
    import pyarrow.parquet as pq

    files = parquet_files(path)
    names = _names(files, kind)
    numbers = _read_numbers(files, names)
    if numbers is not None:
        return numbers
    tables = []
    for f in files:
        try:
            tables.append(pq.read_table(f, columns=list(names)))
        except (pa.ArrowInvalid, OSError, KeyError) as err:
            raise InputError(f"cannot read the columns {', '.join(names)} ({err})", file=f) from None
    _check_same_types(files, [t.schema for t in tables], names)
    sizes = [t.num_rows for t in tables]
    table = pa.concat_tables(tables, promote_options="default") if len(tables) > 1 else tables[0]
    del tables   # the table's buffers are freed as they are converted
    # one pandas block per column: no copy into a 2-D block (ten times faster on 10**7 rows)
    return table.to_pandas(split_blocks=True, self_destruct=True), files, sizes


def _read_numbers(files: list[str], names: tuple[str, ...]) -> tuple[pd.DataFrame, list[str], list[int]] | None:
    """What :func:`_read_frame` returns, read row group by row group (on two threads) into one numpy
    array per column, when every file stores the columns as integers or floats without missing values
    and ``to_pandas`` would give them their numpy types; else None (read as a table, which raises or
    converts as it does).

    One copy of the data instead of two (the Arrow table, then the DataFrame's): 10**7 judgments take
    about 300 MB less memory while they are read.
    """
    import pandas as pd
    import pyarrow.parquet as pq

    try:
        readers = [pq.ParquetFile(f) for f in files]
        metadata, schemas = [r.metadata for r in readers], [r.schema_arrow for r in readers]
    except (pa.ArrowException, OSError):
        return None
    if not _plain_numbers(schemas, names):
        return None
    types = [schemas[0].field(n).type for n in names]
    sizes = [m.num_rows for m in metadata]
    out = [np.empty(sum(sizes), dtype=t.to_pandas_dtype()) for t in types]
    groups = [(f, m, g, m.row_group(g).num_rows) for f, m in zip(files, metadata) for g in range(m.num_row_groups)]
    if sum(group[-1] for group in groups) != len(out[0]):
        return None
    starts = np.cumsum([0] + [group[-1] for group in groups])

    def read(group: tuple[str, Any, int, int], at: int) -> bool:
        """Copies one row group into ``out`` from row ``at``; False if it is not as its metadata says."""
        path, meta, index, rows = group
        try:   # the footer read once above, not once per row group (its size grows with the row groups)
            table = pq.ParquetFile(path, metadata=meta).read_row_group(index, columns=list(names), use_threads=False)
            if table.num_rows != rows or any(c.null_count for c in table.columns):
                return False
            for column, array in zip(table.columns, out):
                row = at
                for chunk in column.chunks:
                    array[row:row + len(chunk)] = chunk.to_numpy(zero_copy_only=True)
                    row += len(chunk)
        except (pa.ArrowException, OSError, ValueError):
            return False
        return True

    if not all(map_on_two_threads(read, groups, starts[:-1].tolist())):
        return None
    return pd.DataFrame(dict(zip(names, out)), copy=False), files, sizes


def _plain_numbers(schemas: list[pa.Schema], names: tuple[str, ...]) -> bool:
    """Whether every schema stores the columns ``names`` as one type each, integers or floats, that
    ``to_pandas`` turns into the same numpy type (then the Arrow arrays are what pandas would give)."""
    if any(s.get_field_index(n) < 0 for s in schemas for n in names):   # missing or repeated names
        return False
    types = [schemas[0].field(n).type for n in names]
    return not any(s.field(n).type != t for s in schemas for n, t in zip(names, types)) and \
        all(pa.types.is_integer(t) or pa.types.is_floating(t) for t in types) and \
        all(_pandas_dtype(s, n, t) is not None for s in schemas for n, t in zip(names, types))


def _pandas_dtype(schema: pa.Schema, name: str, kind: pa.DataType) -> np.dtype | None:
    """The numpy type ``to_pandas`` gives the column, or None when the file's pandas metadata asks for
    another (a nullable ``Int64`` column, say)."""
    dtype = np.dtype(kind.to_pandas_dtype())
    meta = schema.pandas_metadata or {}
    if name in meta.get("index_columns", []):   # to_pandas makes it the index
        return None
    for entry in meta.get("columns", []):
        if entry.get("field_name", entry.get("name")) == name and entry.get("numpy_type") != str(dtype):
            return None
    return dtype


def _check_same_types(files: list[str], schemas: list[pa.Schema], names: tuple[str, ...]) -> None:
    """An InputError naming two files of a dataset that store one of the columns read as different types
    (``null`` for a column of missing values only; a missing column is said when the file is read)."""
    for name in names:
        types = [(i, s.field(name).type) for i, s in enumerate(schemas) if s.get_field_index(name) >= 0]
        other = next(((i, t) for i, t in types if t != types[0][1]), None)
        if other is not None:
            (first, kind), (i, other_kind) = types[0], other
            raise InputError(f"the files of the dataset store the column {name!r} as different types: "
                             f"{kind} in {os.path.basename(files[first])}, {other_kind} in "
                             f"{os.path.basename(files[i])}; write every file with the same schema", file=files[i])


def read_run_parquet(path: str | os.PathLike) -> pd.DataFrame:
    """A run stored as Parquet (a file or a directory), with its column names as in the file.

    Parameters
    ----------
    path : str or os.PathLike
        A Parquet file, or a directory of them (a dataset).

    Returns
    -------
    pandas.DataFrame
        The query, document and score columns (other columns are not read), in file order.

    Examples
    --------
    >>> import os, tempfile, pandas as pd
    >>> from tierank.io.parquet import read_run_parquet
    >>> path = os.path.join(tempfile.mkdtemp(), "run.parquet")
    >>> pd.DataFrame({"qid": ["q1"], "docno": ["d1"], "score": [2.5], "x": [0]}).to_parquet(path)
    >>> read_run_parquet(path)
      qid docno  score
    0  q1    d1    2.5
    """
    return _read_frame(path, "run")[0]


def read_qrels_parquet(path: str | os.PathLike) -> pd.DataFrame:
    """Judgments stored as Parquet (a file or a directory): the query, document and relevance columns.

    Examples
    --------
    >>> import os, tempfile, pandas as pd
    >>> from tierank.io.parquet import read_qrels_parquet
    >>> path = os.path.join(tempfile.mkdtemp(), "qrels.parquet")
    >>> pd.DataFrame({"query_id": [1], "doc_id": [7], "relevance": [2]}).to_parquet(path)
    >>> read_qrels_parquet(path)
       query_id  doc_id  relevance
    0         1       7          2
    """
    return _read_frame(path, "qrels")[0]


@dataclass(repr=False, eq=False)   # Columns' (each generated method is compiled at import)
class RowColumns(Columns):
    """Columns of Parquet rows: ``lines`` holds each row's number in the whole dataset; errors name the
    file and the row in that file."""

    files: tuple = ()
    starts: Any = None   # first dataset row of each file

    def _file(self, i: int) -> tuple[int, int]:
        row = int(self.lines[i])   # type: ignore[index]
        f = int(np.searchsorted(self.starts, row, side="right")) - 1
        return f, row - int(self.starts[f])

    def where(self, i: int) -> dict:
        return {"file": self.files[self._file(i)[0]]}

    def row_text(self, i: int) -> str:
        return f"row {self._file(i)[1]}"


def read_columns_parquet(path: str | os.PathLike, kind: str) -> Columns:
    """A run or qrels (``kind``) stored as Parquet, read whole, as the Columns of its DataFrame
    (:func:`read_run_parquet`, :func:`read_qrels_parquet`) whose errors name the file and the row in
    that file.

    Examples
    --------
    >>> import os, tempfile, pandas as pd, tierank
    >>> from tierank.io.parquet import read_columns_parquet
    >>> folder = tempfile.mkdtemp()
    >>> for name, q, docs in (("a", 1, [7, 8]), ("b", 2, [7, 7])):   # b repeats document 7 for query 2
    ...     pd.DataFrame({"query_id": q, "doc_id": docs, "relevance": 1}).to_parquet(f"{folder}/{name}.parquet")
    >>> qrels = read_columns_parquet(folder, "qrels")
    >>> qrels.row_text(3), os.path.basename(qrels.where(3)["file"])
    ('row 1', 'b.parquet')
    >>> tierank.evaluate(qrels, {1: {7: 1.0}, 2: {7: 1.0}}, ["AP"])
    Traceback (most recent call last):
    ...
    tierank.errors.InputError: ...b.parquet: document 7 is listed twice for query 2 in the qrels (row 1)
    """
    frame, files, sizes = _read_frame(path, kind)
    return row_columns(frame, kind, 0, files, _file_starts(sizes))


def _file_starts(sizes: Any) -> np.ndarray:
    """The first dataset row of each file, from the rows of each."""
    return np.concatenate(([0], np.cumsum(sizes, dtype=np.int64)))[:-1]


def row_columns(cols: pd.DataFrame | Columns, kind: str, first_row: int, files: list[str], starts: np.ndarray
                ) -> RowColumns:
    """The Columns of ``cols`` (a DataFrame or Columns), rows of the dataset ``files`` (first rows
    ``starts``) from ``first_row`` on."""
    cols = table_columns(cols, kind)
    assert cols is not None   # a DataFrame or Columns
    return RowColumns(query=cols.query, doc=cols.doc, value=cols.value, source=kind,
                       lines=first_row + np.arange(len(cols.value), dtype=np.int64), names=cols.names,
                       files=tuple(files), starts=starts)


class ParquetRun:
    """The files of a Parquet run, their column names, rows and row groups."""

    def __init__(self, files: list[str], names: tuple[str, str, str], readers: list[Any], sizes: np.ndarray,
                 starts: np.ndarray, groups: np.ndarray, plain: bool = False) -> None:
        self.files, self.names, self.readers = files, names, readers
        self.sizes = sizes      # rows of each file
        self.starts = starts    # first dataset row of each file
        self.groups = groups    # (file, row group, first dataset row, rows) of each row group, in dataset order
        self.plain = plain      # the columns are plain numbers (:func:`_plain_numbers`) and the run has scores

    @classmethod
    def open(cls, path: Any) -> "ParquetRun":
        import pyarrow.parquet as pq

        files = parquet_files(path)
        names = _names(files, "run")
        readers = []
        for f in files:
            try:
                readers.append(pq.ParquetFile(f))
            except (pa.ArrowInvalid, OSError) as err:
                raise InputError(f"not a Parquet file ({err})", file=f) from None
        schemas = [r.schema_arrow for r in readers]
        _check_same_types(files, schemas, names)
        sizes = np.array([r.metadata.num_rows for r in readers], dtype=np.int64)
        starts = _file_starts(sizes)
        groups = [(f, g, 0, r.metadata.row_group(g).num_rows) for f, r in enumerate(readers)
                  for g in range(r.metadata.num_row_groups)]
        table = np.array(groups, dtype=np.int64).reshape(-1, 4)
        table[:, 2] = _file_starts(table[:, 3])
        scored = not find_columns(list(schemas[0].names), "run", "table")[3]   # not a run of ranks only
        return cls(files, names, readers, sizes, starts, table, scored and _plain_numbers(schemas, names))

    def batches(self, start: int, batch_rows: int) -> Iterator[pa.RecordBatch]:
        """The rows from ``start`` (the first row of a row group) to the end, in batches."""
        later = np.flatnonzero(self.groups[:, 2] >= start)
        if start and (not len(later) or int(self.groups[later[0], 2]) != start):
            raise ValueError(f"row {start} does not start a row group")   # pragma: no cover - a caller's bug
        f0, g0 = (int(self.groups[later[0], 0]), int(self.groups[later[0], 1])) if len(later) else (len(self.files), 0)
        for f in range(f0, len(self.files)):
            reader = self.readers[f]
            groups = list(range(g0 if f == f0 else 0, reader.num_row_groups))
            try:
                yield from reader.iter_batches(batch_size=batch_rows, row_groups=groups, columns=list(self.names))
            except (pa.ArrowInvalid, OSError) as err:
                raise InputError(f"cannot read the columns {', '.join(self.names)} ({err})",
                                 file=self.files[f]) from None

    def query_before(self, start: int) -> Any:
        """The query id of the row before ``start`` (a pyarrow scalar), or None at the first row."""
        if not start:
            return None
        i = int(np.flatnonzero((self.groups[:, 2] < start) & (self.groups[:, 3] > 0))[-1])   # the group ending there
        f, g = int(self.groups[i, 0]), int(self.groups[i, 1])
        try:
            column = self.readers[f].read_row_group(g, columns=[self.names[0]]).column(0)
        except (pa.ArrowInvalid, OSError) as err:
            raise InputError(f"cannot read the column {self.names[0]} ({err})", file=self.files[f]) from None
        return column[len(column) - 1]

    def segments(self, n: int) -> list[tuple[int, int]]:
        """At most ``n`` ranges of rows ``(start, stop)`` of about as many rows each, cut where row
        groups start."""
        total = int(self.sizes.sum())
        firsts = self.groups[self.groups[:, 3] > 0, 2]   # first rows of the row groups with rows
        if not len(firsts):
            return [(0, 0)]
        cuts = np.unique(firsts[np.minimum(np.searchsorted(firsts, np.arange(n) * total // n), len(firsts) - 1)])
        bounds = np.append(cuts, total)
        return [(int(a), int(b)) for a, b in zip(bounds[:-1], bounds[1:])]
