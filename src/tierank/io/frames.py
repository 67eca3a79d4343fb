"""Runs and judgments to columns, whatever they are given as: in memory (:mod:`tierank.io.tables`), or as a
file path: a TREC text file (:mod:`tierank.io.trec`) or a Parquet file or directory (:mod:`tierank.io.parquet`)."""

from __future__ import annotations

import os
from typing import Any

from ..data.columns import Columns
from ..errors import InputError
from . import trec  # the text readers (as a module: tests watch its calls)
from .parquet import read_columns_parquet
from .source import TextInput, is_parquet
from .tables import table_columns

__all__ = ["to_columns"]


def to_columns(obj: Any, kind: str) -> Columns:
    """Turn a run or qrels (``kind``) given as a dict, a DataFrame (pandas or polars), a pyarrow Table,
    or a file path into Columns.

    Columns (e.g. a file read once with :func:`tierank.read_run`) pass through unchanged. A run with a
    ``rank`` column and no score column is scored ``-rank``.

    Examples
    --------
    >>> import pyarrow as pa
    >>> from tierank.io.frames import to_columns
    >>> cols = to_columns(pa.table({"qid": ["q1", "q1"], "docno": ["a", "b"], "rank": [1, 2]}), "run")
    >>> cols.names, cols.value.to_pylist()
    (('qid', 'docno', 'rank'), [-1, -2])
    """
    if isinstance(obj, (str, os.PathLike)) and is_parquet(obj):   # a Parquet file or directory
        return read_columns_parquet(obj, kind)   # errors name the file and its row
    if isinstance(obj, (str, os.PathLike, TextInput)):
        return trec.read_run_columns(obj) if kind == "run" else trec.read_qrels_columns(obj)
    cols = table_columns(obj, kind)
    if cols is None:
        raise InputError(f"the {kind} must be a dict {{qid: {{docid: value}}}}, a pandas or polars DataFrame, "
                         f"a pyarrow Table or a file path, not {type(obj).__name__}")
    return cols
