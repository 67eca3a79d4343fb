"""Runs and judgments given as dicts ``{qid: {docid: value}}`` or pandas DataFrames, to columns."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import numpy as np
import pandas as pd

from ..data.join import Columns
from ..errors import InputError

__all__ = ["to_columns"]

_QUERY = ("query_id", "qid", "q_id", "query")
_DOC = ("doc_id", "docid", "docno", "doc")
_VALUE = {"run": ("score", "scores", "sim"), "qrels": ("relevance", "rel", "grade", "label")}


def _column(frame: pd.DataFrame, names: tuple[str, ...], what: str, kind: str) -> np.ndarray:
    for name in names:
        if name in frame.columns:
            col = frame[name]
            if col.dtype.kind in "iufb":
                return col.to_numpy()
            return col.array if not isinstance(col.dtype, pd.CategoricalDtype) else col.to_numpy(dtype=object)
    raise InputError(f"the {kind} DataFrame has no {what} column (expected one of {', '.join(names)}; "
                     f"found {', '.join(map(str, frame.columns))})")


def to_columns(obj: Any, kind: str) -> Columns:
    """Turn a run or qrels (``kind``) given as a dict, a DataFrame or a TREC file path into Columns.

    Columns (e.g. a file read once with :func:`tierank.read_run`) pass through unchanged.
    """
    if isinstance(obj, Columns):
        return obj
    if isinstance(obj, pd.DataFrame):
        return Columns(query=_column(obj, _QUERY, "query id", kind), doc=_column(obj, _DOC, "document id", kind),
                       value=_column(obj, _VALUE[kind], "score" if kind == "run" else "relevance", kind),
                       source=kind)
    if isinstance(obj, Mapping):
        queries: list = []
        docs: list = []
        values: list = []
        for qid, row in obj.items():  # dict input: one pass over the user's dict
            if not isinstance(row, Mapping):
                raise InputError(f"the {kind} must map each query id to a dict {{doc_id: value}}; "
                                 f"query {qid!r} maps to {type(row).__name__}", query=qid)
            queries.extend([qid] * len(row))
            docs.extend(row.keys())
            values.extend(row.values())
        return Columns(query=_ids(queries), doc=_ids(docs), value=np.asarray(values, dtype=object)
                       if values else np.zeros(0), source=kind)
    try:
        import os
        if isinstance(obj, (str, os.PathLike)):
            from . import trec  # the file readers
            return trec.read_run_columns(obj) if kind == "run" else trec.read_qrels_columns(obj)
    except ImportError:  # pragma: no cover - until the file readers exist
        raise InputError(f"reading {kind} files is not available yet: pass a dict or a DataFrame") from None
    raise InputError(f"the {kind} must be a dict {{qid: {{docid: value}}}}, a pandas DataFrame or a TREC "
                     f"file path, not {type(obj).__name__}")


def _ids(values: list) -> np.ndarray:
    """Ids as given: all ints stay int64, anything else an object array."""
    if values and all(isinstance(v, (int, np.integer)) and not isinstance(v, bool) for v in values):
        return np.asarray(values, dtype=np.int64)
    out = np.empty(len(values), dtype=object)
    out[:] = values
    return out
