"""Runs and judgments given as dicts ``{qid: {docid: value}}``, pandas or polars DataFrames or pyarrow
Tables, to columns (:func:`tierank.io.frames.to_columns` takes file paths too).

Column names
------------
A table names its columns with any one of these aliases (exactly one per role):

* query id: ``query_id``, ``qid``, ``q_id``, ``query``;
* document id: ``doc_id``, ``docid``, ``docno``, ``doc``;
* run score (higher is better): ``score``, ``scores``, ``sim``; a run with none of them but a ``rank``
  column is scored ``-rank`` (rank 1 is best; documents of equal rank tie);
* qrels grade: ``relevance``, ``rel``, ``grade``, ``label``.

polars DataFrames and pyarrow Tables (or RecordBatches) go through Arrow without a Python object per
row (``polars.DataFrame.to_arrow()`` shares the buffers); their ids and values follow the rules of
pandas input (:mod:`tierank.data.columns`) and bad input raises the same errors, naming the column and
the row. polars is never imported: a polars object is recognised by its type's module.
"""

from __future__ import annotations

from collections import OrderedDict
from collections.abc import Iterator, Mapping
from itertools import chain
from operator import countOf, methodcaller
from typing import TYPE_CHECKING, Any

import numpy as np

from ..data.columns import Columns
from ..data.ids import SharedHashes
from ..errors import InputError

try:   # the compiled reader of plain rows (rowreader.c); a build without it reads them in Python below
    from .rowreader import string_rows
except ImportError:   # pragma: no cover - tests/test_dict_reading.py checks that the build has it
    string_rows = None

if TYPE_CHECKING:
    import pandas as pd

__all__ = ["find_columns", "negated_ranks", "table_columns", "dict_columns", "check_dict_rows", "pairs_columns",
           "plain_dict"]

_QUERY = ("query_id", "qid", "q_id", "query")
_DOC = ("doc_id", "docid", "docno", "doc")
_VALUE = {"run": ("score", "scores", "sim"), "qrels": ("relevance", "rel", "grade", "label")}
_RANK = ("rank",)


def _column(frame: pd.DataFrame, name: str, what: str, kind: str) -> Any:
    """The values of the column ``name`` (as :func:`find_columns` names it), which holds ``what``."""
    import pandas as pd

    if name not in frame.columns:
        raise InputError(f"the {kind} DataFrame has no {what} column (expected one of {name}; "
                         f"found {', '.join(map(str, frame.columns))})")
    col = frame[name]
    if isinstance(col, pd.DataFrame):
        raise InputError(f"the {kind} DataFrame has the column {name!r} twice")
    return col.array


def is_polars(obj: Any) -> bool:
    """Whether ``obj`` is a polars object (checked without importing polars)."""
    return type(obj).__module__.startswith("polars")


def _arrow_table(obj: Any, kind: str) -> Any:
    """A polars DataFrame, pyarrow Table or RecordBatch as a pyarrow Table; None for anything else."""
    import pyarrow as pa

    if isinstance(obj, pa.Table):
        return obj
    if isinstance(obj, pa.RecordBatch):
        return pa.Table.from_batches([obj])
    if is_polars(obj):
        name = type(obj).__name__
        if name == "DataFrame":
            try:
                return obj.to_arrow()   # zero-copy for numbers and strings
            except (pa.ArrowInvalid, pa.ArrowNotImplementedError) as err:   # a type Arrow lacks (Int128)
                types = ", ".join(f"{c}: {t}" for c, t in zip(obj.columns, obj.dtypes))
                raise InputError(f"the {kind}'s polars DataFrame has a column type Arrow cannot hold ({types}): "
                                 f"cast it (e.g. to Int64 or Float64) first ({err})") from None
        if name == "LazyFrame":
            raise InputError(f"the {kind} is a polars LazyFrame: collect it first ({kind}.collect())")
        raise InputError(f"the {kind} must be a polars DataFrame, not a polars {name}")
    return None


def _pick(names: list[str], aliases: tuple[str, ...], what: str, kind: str, table: str,
          required: bool = True) -> str | None:
    """The one column of ``names`` among ``aliases`` (the errors of pandas input)."""
    found = [name for name in aliases if name in names]
    if not found:
        if not required:
            return None
        raise InputError(f"the {kind} {table} has no {what} column (expected one of {', '.join(aliases)}; "
                         f"found {', '.join(map(str, names))})")
    if len(found) > 1:
        raise InputError(f"the {kind} {table} has {len(found)} {what} columns ({', '.join(found)}): "
                         "keep one, or rename the others")
    if names.count(found[0]) > 1:
        raise InputError(f"the {kind} {table} has the column {found[0]!r} twice")
    return found[0]


def find_columns(names: Any, kind: str, table: str = "DataFrame", ranks: bool = True) -> tuple[str, str, str, bool]:
    """The query, document and value columns of a table with these column names, and whether the value
    is a rank (a run with no score column but a ``rank`` column: score = -rank).

    Parameters
    ----------
    names : list of str
        The table's column names.
    kind : {"run", "qrels"}
    table : str, default="DataFrame"
        What the messages call the table.
    ranks : bool, default=True
        Whether a run may give ranks instead of scores (False: a run needs a score column).

    Returns
    -------
    (str, str, str, bool)

    Examples
    --------
    >>> from tierank.io.tables import find_columns
    >>> find_columns(["qid", "docno", "score", "rank"], "run")
    ('qid', 'docno', 'score', False)
    >>> find_columns(["qid", "docno", "rank"], "run")
    ('qid', 'docno', 'rank', True)
    """
    names = [str(n) for n in names]
    query = _pick(names, _QUERY, "query id", kind, table)
    doc = _pick(names, _DOC, "document id", kind, table)
    what = "score" if kind == "run" else "relevance"
    if ranks and kind == "run" and not any(n in names for n in _VALUE[kind]) and "rank" in names:
        return query, doc, _pick(names, _RANK, "rank", kind, table), True   # type: ignore[return-value]
    return query, doc, _pick(names, _VALUE[kind], what, kind, table), False   # type: ignore[return-value]


def negated_ranks(ranks: Any) -> Any:
    """Scores of a run given by ranks: ``-rank`` (rank 1 is best; equal ranks tie), with missing ranks
    kept missing and anything that is not a number left for the checks of :mod:`tierank.data.columns`.

    Examples
    --------
    >>> import numpy as np
    >>> from tierank.io.tables import negated_ranks
    >>> negated_ranks(np.array([1, 2, 2])).tolist()
    [-1, -2, -2]
    """
    import pandas as pd
    import pyarrow as pa
    import pyarrow.compute as pc

    if isinstance(ranks, (pa.Array, pa.ChunkedArray)):
        t = ranks.type
        if pa.types.is_integer(t) or pa.types.is_floating(t):
            if pa.types.is_unsigned_integer(t):
                try:
                    ranks = pc.cast(ranks, pa.int64())
                except pa.ArrowInvalid:   # beyond int64: as floats
                    ranks = pc.cast(ranks, pa.float64())
            return pc.negate_checked(ranks)
        return ranks
    if isinstance(ranks, (pd.Series, pd.Index)):
        ranks = ranks.array
    if isinstance(ranks, pd.arrays.NumpyExtensionArray) and ranks.dtype.kind in "if":
        return -ranks   # as a score column: NaN reported as pandas input reports it
    if isinstance(ranks, pd.api.extensions.ExtensionArray) and not isinstance(ranks, pd.arrays.NumpyExtensionArray):
        kind = getattr(ranks.dtype, "kind", "O")
        if kind == "u":   # unsigned (nullable or Arrow-backed): negated as int64 through Arrow
            return negated_ranks(pa.array(ranks))
        if kind in "iuf" and not isinstance(ranks, pd.Categorical):
            return -ranks
        else:
            return ranks
    arr = np.asarray(ranks)
    if arr.dtype.kind == "u":
        arr = arr.astype(np.int64 if not len(arr) or int(arr.max()) <= 2 ** 63 - 1 else np.float64)
    return -arr if arr.dtype.kind in "if" else ranks


def table_columns(obj: Any, kind: str) -> Columns | None:
    """:func:`tierank.io.frames.to_columns` of a run or qrels (``kind``) in memory: a dict, a DataFrame
    (pandas or polars), a pyarrow Table or RecordBatch, or Columns; None for anything else (a path)."""
    if isinstance(obj, Columns):
        return obj
    import pandas as pd

    if isinstance(obj, pd.DataFrame):
        qname, dname, vname, rank = find_columns(list(obj.columns), kind)
        query, doc, value = (_column(obj, qname, "query id", kind), _column(obj, dname, "document id", kind),
                             _column(obj, vname, "score" if kind == "run" else "relevance", kind))
        if rank:
            value = negated_ranks(value)
        return Columns(query=query, doc=doc, value=value, source=kind, names=(qname, dname, vname))
    table = _arrow_table(obj, kind)
    if table is not None:
        qname, dname, vname, rank = find_columns(table.column_names, kind,
                                                 "DataFrame" if is_polars(obj) else "table")
        value = table.column(vname)
        return Columns(query=table.column(qname), doc=table.column(dname),
                       value=negated_ranks(value) if rank else value, source=kind, names=(qname, dname, vname))
    if isinstance(obj, Mapping):
        return dict_columns(obj, kind)
    return None


def dict_columns(obj: Mapping, kind: str) -> Columns:
    """Columns of a run or qrels given as a dict ``{qid: {docid: value}}`` (any Mapping of Mappings).

    The rows are read in one pass per column, straight into typed arrays where the dict holds what
    most dicts hold: string or int ids (a pyarrow string array or int64; pyarrow's own type inference
    says every id is one), Python floats or ints as values (their types counted first). A column
    holding anything else (None, NaN, bools, numpy scalars, Decimals, a mix of types) is read as
    objects, one per row, and :func:`tierank.data.columns.normalized` applies its rules to them: the
    same values and the same errors either way. Query ids are read once per query, not once per row.

    Examples
    --------
    >>> from tierank.io.tables import dict_columns
    >>> cols = dict_columns({"q1": {"d1": 0.5, "d2": 0.25}, "q2": {"d1": 1.0}}, "run")
    >>> cols.query.to_pylist(), cols.doc.to_pylist(), cols.value.tolist()
    (['q1', 'q1', 'q2'], ['d1', 'd2', 'd1'], [0.5, 0.25, 1.0])
    >>> dict_columns({"q1": {"d1": None}}, "run").value   # not a number: objects, for the checks
    array([None], dtype=object)
    """
    pairs = list(obj.items())
    check_dict_rows(pairs, kind)
    return pairs_columns(pairs, kind, unique_keys=plain_dict(type(obj)))


def check_dict_rows(pairs: list, kind: str) -> None:
    """Raise the InputError of :func:`dict_columns` naming the first query (of the ``(query id, row)``
    pairs of a dict, in its order) whose row is not a Mapping; each type is checked once."""
    if not all(issubclass(t, Mapping) for t in set(type(row) for _, row in pairs)):
        qid, row = next((qid, row) for qid, row in pairs if not isinstance(row, Mapping))
        raise InputError(f"the {kind} must map each query id to a dict {{doc_id: value}}; "
                         f"query {qid!r} maps to {type(row).__name__}", query=qid)


def pairs_columns(pairs: list, kind: str, unique_keys: bool) -> Columns:
    """:func:`dict_columns` of the ``(query id, row)`` pairs of a dict (all of them, or a block of them:
    :func:`tierank.io.blocks.dict_blocks`), every row a Mapping (:func:`check_dict_rows`).
    ``unique_keys``: the dict's own iteration gives each query id once (:func:`plain_dict` of its type)."""
    rows: list = [row for _, row in pairs]
    counts = np.fromiter(map(len, rows), dtype=np.int64, count=len(rows))
    qids: list = [qid for qid, _ in pairs]
    if not counts.all():   # a query without rows has no row to read (and no id to check)
        keep = np.flatnonzero(counts).tolist()
        qids, rows, counts = [qids[i] for i in keep], [rows[i] for i in keep], counts[keep]
    n = int(counts.sum())
    labels = _typed_ids(qids)
    if labels is None:   # as objects, one per row
        query: Any = _ids([qid for qid, c in zip(qids, counts.tolist()) for _ in range(c)])
    elif isinstance(labels, np.ndarray):
        query = np.repeat(labels, counts)
    else:
        query = _repeated(labels, counts)
    plain = string_rows(rows) if string_rows is not None else None   # None: not every row is plain
    if plain is not None:   # str keys, float (or int64) values: buffers in one pass
        doc, value, hashes = _plain_rows(*plain, kind)
    else:
        doc, value, hashes = _python_rows(rows, n, kind)
    if len(doc) != n or len(value) != n:   # rows added or removed since they were counted (another thread)
        raise InputError(f"the {kind} dict changed while it was being read: give it unchanged for the call")
    # a dict's keys are distinct, and distinct str or int keys stay distinct ids: no pair repeats
    unique = unique_keys and all(map(plain_dict, set(map(type, rows))))
    return Columns(query=query, doc=doc, value=value, source=kind, from_dict=True, unique_pairs=unique,
                   doc_hashes=hashes, query_groups=(query, counts))


def _plain_rows(offsets: bytes, data: bytes, values: bytes, kind_code: str, kind: str) -> tuple:
    """Doc ids, values and a run's hashes from the buffers of :func:`string_rows`."""
    import pyarrow as pa

    doc = pa.Array.from_buffers(pa.string(), len(offsets) // 4 - 1, [None, pa.py_buffer(offsets), pa.py_buffer(data)])
    hashes = SharedHashes(doc, worker_share=1.0) if kind == "run" else None
    value = np.frombuffer(values, dtype=np.float64 if kind_code == "f" else np.int64)
    if kind_code == "f" and np.isnan(value).any():   # NaN: reported by the checks of objects
        value = _ids(value.tolist())
    return doc, value, hashes


def _python_rows(rows: list, n: int, kind: str) -> tuple:
    """Doc ids, values and a run's hashes of rows of any types, read in Python."""
    docs = list(chain.from_iterable(map(methodcaller("keys"), rows)))
    doc = _typed_ids(docs)
    if doc is None:
        doc = _ids(docs)
    del docs
    # a run's string ids: the join's first step, hashing them, starts on a worker thread while the
    # scores are read here (numpy releases the GIL; reading Python objects cannot)
    hashes = SharedHashes(doc, worker_share=1.0) if kind == "run" and not isinstance(doc, np.ndarray) else None
    value = _typed_values(rows, n, ints_first=kind == "qrels")
    if value is None:
        value = _ids(list(chain.from_iterable(map(methodcaller("values"), rows))))
    return doc, value, hashes


def plain_dict(cls: type) -> bool:
    """Whether ``cls`` is dict or a subclass iterating its own keys (OrderedDict, defaultdict, ...)."""
    return issubclass(cls, dict) and any(cls.__iter__ is d.__iter__ and cls.keys is d.keys for d in (dict, OrderedDict))


def _repeated(labels: Any, counts: np.ndarray) -> Any:
    """The pyarrow strings ``labels``, each ``counts`` times in a row, built from their bytes (a copy of
    each id's bytes per query, not a take of every row)."""
    import pyarrow as pa

    texts = [text.encode("utf-8") for text in labels.to_pylist()]
    data = b"".join([text * c for text, c in zip(texts, counts.tolist())])
    offsets = np.zeros(int(counts.sum()) + 1, dtype=np.int64)
    np.cumsum(np.repeat(np.fromiter(map(len, texts), dtype=np.int64, count=len(texts)), counts), out=offsets[1:])
    wide = len(data) >= 2 ** 31
    return pa.Array.from_buffers(pa.large_string() if wide else pa.string(), len(offsets) - 1,
                                 [None, pa.py_buffer(offsets if wide else offsets.astype(np.int32)), pa.py_buffer(data)])


def _typed_ids(ids: list) -> Any:
    """Ids as a pyarrow string array when all are ``str``, as int64 when all are ints (within int64, no
    bools), as pyarrow's type inference finds them; None otherwise (read them as objects)."""
    import pyarrow as pa

    if not ids:
        return None
    try:
        arr = pa.array(ids)
    except (pa.ArrowException, TypeError, ValueError, OverflowError):   # a mix, a huge int, bad text
        return None
    if not isinstance(arr, pa.Array) or arr.null_count:   # chunked (over 2 GB of text), or None in it
        return None
    if pa.types.is_string(arr.type):
        return arr
    if arr.type == pa.int64():
        return arr.to_numpy()
    return None


def _typed_values(rows: list, n: int, ints_first: bool) -> np.ndarray | None:
    """The values of the rows as float64 when every one is a Python float (NaN aside), as int64 when
    every one is a Python int within int64; None otherwise (read them as objects). ``ints_first``:
    look for ints first (grades)."""
    def values() -> Iterator:
        return chain.from_iterable(map(methodcaller("values"), rows))
    for kind, dtype in ((int, np.int64), (float, np.float64)) if ints_first else ((float, np.float64), (int, np.int64)):
        if countOf(map(type, values()), kind) == n:
            try:
                out = np.fromiter(values(), dtype=dtype, count=n)
            except (OverflowError, ValueError):   # an int beyond int64; a Mapping changed meanwhile
                return None
            if kind is float and np.isnan(out).any():   # NaN: reported by the checks of objects
                return None
            return out
    return None


def _ids(values: list) -> np.ndarray:
    """A list as an object array, element by element (no guessing of dtypes: Columns checks them)."""
    out = np.empty(len(values), dtype=object)
    out[:] = values
    return out
