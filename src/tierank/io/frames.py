"""Runs and judgments given as dicts ``{qid: {docid: value}}`` or pandas DataFrames, to columns."""

from __future__ import annotations

import os
from collections.abc import Mapping
from typing import Any

import numpy as np
import pandas as pd

from ..data.columns import Columns
from ..errors import InputError

__all__ = ["to_columns"]

_QUERY = ("query_id", "qid", "q_id", "query")
_DOC = ("doc_id", "docid", "docno", "doc")
_VALUE = {"run": ("score", "scores", "sim"), "qrels": ("relevance", "rel", "grade", "label")}


def _column(frame: pd.DataFrame, names: tuple[str, ...], what: str, kind: str) -> tuple[Any, str]:
    """The column holding ``what`` (one of ``names``) and its name; exactly one may be present."""
    found = [name for name in names if name in frame.columns]
    if not found:
        raise InputError(f"the {kind} DataFrame has no {what} column (expected one of {', '.join(names)}; "
                         f"found {', '.join(map(str, frame.columns))})")
    if len(found) > 1:
        raise InputError(f"the {kind} DataFrame has {len(found)} {what} columns ({', '.join(found)}): "
                         "keep one, or rename the others")
    col = frame[found[0]]
    if isinstance(col, pd.DataFrame):
        raise InputError(f"the {kind} DataFrame has the column {found[0]!r} twice")
    return col.array, found[0]


def to_columns(obj: Any, kind: str) -> Columns:
    """Turn a run or qrels (``kind``) given as a dict, a DataFrame or a TREC file path into Columns.

    Columns (e.g. a file read once with :func:`tierank.read_run`) pass through unchanged.
    """
    if isinstance(obj, Columns):
        return obj
    if isinstance(obj, pd.DataFrame):
        (query, qname), (doc, dname), (value, vname) = (
            _column(obj, _QUERY, "query id", kind), _column(obj, _DOC, "document id", kind),
            _column(obj, _VALUE[kind], "score" if kind == "run" else "relevance", kind))
        return Columns(query=query, doc=doc, value=value, source=kind, names=(qname, dname, vname))
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
        return Columns(query=_ids(queries), doc=_ids(docs), value=_ids(values), source=kind,
                       from_dict=True)
    if isinstance(obj, (str, os.PathLike)):
        from . import trec  # the file readers
        return trec.read_run_columns(obj) if kind == "run" else trec.read_qrels_columns(obj)
    raise InputError(f"the {kind} must be a dict {{qid: {{docid: value}}}}, a pandas DataFrame or a TREC "
                     f"file path, not {type(obj).__name__}")


def _ids(values: list) -> np.ndarray:
    """A list as an object array, element by element (no guessing of dtypes: Columns checks them)."""
    out = np.empty(len(values), dtype=object)
    out[:] = values
    return out
