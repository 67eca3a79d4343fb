"""Writing TREC run and qrels files (read back by :mod:`tierank.io.trec`), whole or not at all
(:mod:`tierank.io.output`)."""

from __future__ import annotations

import gzip
import os
from typing import Any

import numpy as np

from ..data.columns import normalized
from ..errors import InputError
from .frames import to_columns
from .output import atomic_write, check_output
from .source import path_name
from .trec import format_number

__all__ = ["write_run", "write_qrels"]


def _check_ids(ids: np.ndarray, what: str, kind: str) -> np.ndarray:
    text = np.asarray([str(x) for x in ids], dtype=object) if len(ids) else np.zeros(0, dtype=object)
    for x in text:
        if not x or any(c.isspace() for c in x) or (what == "query id" and x.startswith("#")):
            raise InputError(f"cannot write the {kind}: {what} {x!r} is empty, holds whitespace or "
                             "starts with '#', so it could not be read back")
    return text


def write_run(run: Any, path: str | os.PathLike, *, tag: str = "tierank") -> None:
    """Write a run as a TREC run file (gzip-compressed if ``path`` ends with ``.gz``).

    Lines are ``qid Q0 docid rank score tag``, grouped by query (queries in sorted order), documents by
    score descending, ties broken as trec_eval breaks them (document id descending), so that the rank
    column matches the order trec_eval evaluates. Scores are written exactly (shortest round-trip
    form), so reading the file back gives the same numbers.

    Parameters
    ----------
    run : dict, DataFrame (pandas or polars) or pyarrow Table
        ``{qid: {docid: score}}`` or a table with ``query_id, doc_id, score`` columns (or their
        aliases; a ``rank`` column without scores: score = -rank).
    path : str or os.PathLike
        Written whole or not at all (a temporary file renamed over it, see
        :func:`tierank.io.output.atomic_write`); an OutputError if it is the input itself or cannot be
        written, before anything is read.
    tag : str, default="tierank"
        The sixth field (trec_eval's ``runid``).

    Examples
    --------
    >>> import tempfile, os, pathlib, tierank.io.write as write
    >>> path = os.path.join(tempfile.mkdtemp(), "run.txt")
    >>> write.write_run({"q1": {"d1": 0.5, "d2": 0.5, "d3": 0.9}}, path, tag="demo")
    >>> print(pathlib.Path(path).read_text(), end="")
    q1 Q0 d3 1 0.9 demo
    q1 Q0 d2 2 0.5 demo
    q1 Q0 d1 3 0.5 demo
    """
    check_output(path, [run])   # before reading: never over the run itself
    if not tag or any(c.isspace() for c in tag):
        raise InputError(f"the run tag {tag!r} must be a non-empty word without whitespace")
    cols = normalized(to_columns(run, "run"), "score")   # the rules of evaluate(): no missing id, ...
    scores = cols.value.astype(np.float64)
    q = _check_ids(_id_values(cols.query), "query id", "run")
    d = _check_ids(_id_values(cols.doc), "document id", "run")
    qcode = _sort_codes(_id_values(cols.query), q)
    # query, then score descending, then document id descending (trec_eval's order)
    dcode = _string_rank(d)
    order = np.lexsort((-dcode, -scores, qcode))
    q, d, scores = q[order], d[order], scores[order]
    starts = np.r_[True, q[1:] != q[:-1]] if len(q) else np.zeros(0, bool)
    group = np.cumsum(starts) - 1
    first = np.flatnonzero(starts)
    rank = np.arange(len(q)) - first[group] + 1 if len(q) else np.zeros(0, int)
    lines = [f"{a} Q0 {b} {r} {repr(float(s))} {tag}\n" for a, b, r, s in zip(q, d, rank, scores)]
    _write_text(path, "".join(lines))


def write_qrels(qrels: Any, path: str | os.PathLike) -> None:
    """Write judgments as a TREC qrels file (gzip-compressed if ``path`` ends with ``.gz``).

    Lines are ``qid 0 docid grade``, queries in sorted order and documents in the order given.
    Integral grades are written as integers.

    Parameters
    ----------
    qrels : dict, DataFrame (pandas or polars) or pyarrow Table
        ``{qid: {docid: grade}}`` or a table with ``query_id, doc_id, relevance`` columns (or their aliases).
    path : str or os.PathLike
        Written whole or not at all (a temporary file renamed over it, see
        :func:`tierank.io.output.atomic_write`); an OutputError if it is the input itself or cannot be
        written, before anything is read.

    Examples
    --------
    >>> import tempfile, os, pathlib, tierank.io.write as write
    >>> path = os.path.join(tempfile.mkdtemp(), "qrels.txt")
    >>> write.write_qrels({"q1": {"d1": 2, "d9": -2}}, path)
    >>> print(pathlib.Path(path).read_text(), end="")
    q1 0 d1 2
    q1 0 d9 -2
    """
    check_output(path, [qrels])   # before reading: never over the qrels themselves
    cols = normalized(to_columns(qrels, "qrels"), "grade")
    grades = cols.value
    q = _check_ids(_id_values(cols.query), "query id", "qrels")
    d = _check_ids(_id_values(cols.doc), "document id", "qrels")
    order = np.argsort(_sort_codes(_id_values(cols.query), q), kind="stable")
    lines = [f"{a} 0 {b} {format_number(g)}\n" for a, b, g in zip(q[order], d[order], grades[order])]
    _write_text(path, "".join(lines))


def _id_values(ids: Any) -> np.ndarray:
    """Normalised ids (int64, or a pyarrow string array) as a numpy array."""
    return ids if isinstance(ids, np.ndarray) else np.asarray(ids.to_numpy(zero_copy_only=False), dtype=object)


def _string_rank(ids: np.ndarray) -> np.ndarray:
    """Rank of each id in ascending string order (equal ids, equal rank)."""
    uniq, inverse = np.unique(ids.astype(str), return_inverse=True)
    return inverse.astype(np.int64)


def _sort_codes(raw: np.ndarray, text: np.ndarray) -> np.ndarray:
    """Query order: numbers numerically if every id is an int, else string order."""
    if len(raw) and all(isinstance(x, (int, np.integer)) and not isinstance(x, bool) for x in raw):
        return np.asarray(raw, dtype=np.int64)
    return _string_rank(text)


def _write_text(path: Any, text: str) -> None:
    """Write ``text`` as UTF-8 (gzip-compressed if the name ends with ``.gz``), whole or not at all."""
    data = text.encode("utf-8")
    if path_name(path).endswith(".gz"):
        data = gzip.compress(data)
    with atomic_write(path, "wb") as fh:
        fh.write(data)
