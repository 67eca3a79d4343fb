"""Relevance of corpus items to queries, in any of the forms people hold it, as sparse rows.

* a qrels mapping ``{query: {corpus item: grade}}``: row and column numbers, or ids named by
  ``query_ids=`` / ``corpus_ids=`` (sentence-transformers' ``relevant_docs`` is ``{qid: set of cids}``:
  a set, list or tuple gives grade 1 to each);
* a scipy sparse matrix or a dense array ``(n_queries, n_corpus)``;
* class labels (``query_labels=`` / ``corpus_labels=``, as :func:`tierank.evaluate_codes` takes them),
  turned into grades block by block (``tierank.hashing.labels.make_grader``).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import numpy as np

from ..errors import InputError
from ..hashing.labels import BlockGrades, Grader, make_grader

__all__ = ["Relevance", "make_relevance", "SparseBlockGrades"]


class Relevance:
    """Grades of blocks of queries: CSR rows (``indptr``, ``indices``, ``grades``) or a label grader."""

    def __init__(self, n_queries: int, n_corpus: int, indptr: np.ndarray | None = None,
                 indices: np.ndarray | None = None, grades: np.ndarray | None = None,
                 grader: Grader | None = None) -> None:
        self.n_queries, self.n_corpus = n_queries, n_corpus
        self.indptr, self.indices, self.grades, self.grader = indptr, indices, grades, grader

    @property
    def sparse(self) -> bool:
        return self.grader is None

    def dense(self, rows: slice) -> np.ndarray:
        """The float64 grades of queries ``rows`` against the whole corpus, (B, n_corpus)."""
        if self.grader is not None:
            return np.asarray(self.grader.block(rows).grades(), dtype=np.float64)
        assert self.indptr is not None and self.indices is not None and self.grades is not None
        out = np.zeros((rows.stop - rows.start, self.n_corpus))
        lo, hi = self.indptr[rows.start], self.indptr[rows.stop]
        r = np.repeat(np.arange(rows.stop - rows.start), np.diff(self.indptr[rows.start:rows.stop + 1]))
        out[r, self.indices[lo:hi]] = self.grades[lo:hi]
        return out

    def block(self, rows: slice) -> BlockGrades:
        """The grades of queries ``rows`` as level indices tile by tile (for the counting of Hamming
        distances, ``tierank.hashing.histogram.block_histogram``)."""
        if self.grader is not None:
            return self.grader.block(rows)
        return SparseBlockGrades(self, rows)

    def entries(self, rows: slice) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """The graded items of queries ``rows``: (row within the block, corpus index, grade), by row."""
        assert self.indptr is not None and self.indices is not None and self.grades is not None
        lo, hi = self.indptr[rows.start], self.indptr[rows.stop]
        r = np.repeat(np.arange(rows.stop - rows.start), np.diff(self.indptr[rows.start:rows.stop + 1]))
        return r, self.indices[lo:hi], self.grades[lo:hi]

    def row(self, i: int) -> tuple[np.ndarray, np.ndarray]:
        """Corpus indices and grades of the items of query ``i`` with a grade (sparse form)."""
        assert self.indptr is not None and self.indices is not None and self.grades is not None
        lo, hi = self.indptr[i], self.indptr[i + 1]
        return self.indices[lo:hi], self.grades[lo:hi]


def _positions(ids: Any, n: int, name: str) -> dict:
    if ids is None:
        return {}
    ids = list(ids)
    if len(ids) != n:
        raise InputError(f"{name} has {len(ids)} ids for {n} rows")
    pos = {}
    for i, x in enumerate(ids):
        if x in pos:
            raise InputError(f"{name} holds the id {x!r} twice (rows {pos[x]} and {i})")
        pos[x] = i
    return pos


def _index(key: Any, pos: dict, n: int, what: str, name: str, where: str = "") -> int:
    if pos:
        if key not in pos:
            raise InputError(f"relevance names {what} {key!r}{where}, which is not in {name}")
        return pos[key]
    if isinstance(key, (bool, np.bool_)) or not isinstance(key, (int, np.integer)):
        raise InputError(f"relevance names {what} {key!r}{where}: give row numbers, or the ids with {name}=")
    if not 0 <= int(key) < n:
        raise InputError(f"relevance names {what} {int(key)}{where}, outside 0..{n - 1}")
    return int(key)


def _check_grades(grades: np.ndarray, query: np.ndarray, labels: Any) -> None:
    bad = ~np.isfinite(grades) | (grades < 0)
    if bad.any():
        i = int(np.flatnonzero(bad)[0])
        what = "NaN" if np.isnan(grades[i]) else ("an infinite grade" if np.isinf(grades[i]) else "a negative grade")
        q = int(query[i])
        raise InputError(f"relevance contains {what} (query {labels[q] if labels is not None else q})", query=q)


def _from_mapping(rel: Mapping, n_q: int, n_c: int, query_ids: Any, corpus_ids: Any) -> Relevance:
    qpos, cpos = _positions(query_ids, n_q, "query_ids"), _positions(corpus_ids, n_c, "corpus_ids")
    rows, cols, vals = [], [], []
    for qkey, docs in rel.items():
        qi = _index(qkey, qpos, n_q, "the query", "query_ids")
        if isinstance(docs, Mapping):
            items = docs.items()
        elif isinstance(docs, (set, frozenset, list, tuple)):
            items = ((d, 1) for d in docs)
        else:
            raise InputError(f"relevance of query {qkey!r} must be a mapping {{item: grade}} or a set of items")
        for ckey, grade in items:
            ci = _index(ckey, cpos, n_c, "the corpus item", "corpus_ids", f" (query {qkey!r})")
            if isinstance(grade, (bool, np.bool_)) or not isinstance(grade, (int, float, np.integer, np.floating)):
                raise InputError(f"relevance of query {qkey!r}, item {ckey!r}: the grade {grade!r} is not a number")
            rows.append(qi)
            cols.append(ci)
            vals.append(float(grade))
    return _csr(np.array(rows, dtype=np.int64), np.array(cols, dtype=np.int64), np.array(vals, dtype=np.float64),
                n_q, n_c, list(query_ids) if query_ids is not None else None)


def _csr(rows: np.ndarray, cols: np.ndarray, vals: np.ndarray, n_q: int, n_c: int, labels: Any) -> Relevance:
    _check_grades(vals, rows, labels)
    keep = vals != 0
    rows, cols, vals = rows[keep], cols[keep], vals[keep]
    order = np.lexsort((cols, rows))
    rows, cols, vals = rows[order], cols[order], vals[order]
    dup = (rows[1:] == rows[:-1]) & (cols[1:] == cols[:-1])
    if dup.any():
        i = int(np.flatnonzero(dup)[0])
        raise InputError(f"relevance gives query {rows[i]} item {cols[i]} twice")
    indptr = np.zeros(n_q + 1, dtype=np.int64)
    np.cumsum(np.bincount(rows, minlength=n_q), out=indptr[1:])
    return Relevance(n_q, n_c, indptr, cols, vals)


def make_relevance(relevance: Any, n_q: int, n_c: int, *, query_ids: Any = None, corpus_ids: Any = None,
                   query_labels: Any = None, corpus_labels: Any = None) -> Relevance:
    """Check ``relevance`` (or the labels) against the numbers of queries and corpus items."""
    if relevance is None:
        if query_labels is None or corpus_labels is None:
            raise InputError("give relevance (a mapping, a sparse or dense matrix) or query_labels and corpus_labels")
        return Relevance(n_q, n_c, grader=make_grader(query_labels, corpus_labels, None, n_q, n_c))
    if query_labels is not None or corpus_labels is not None:
        raise InputError("give either relevance or query_labels and corpus_labels, not both")
    if isinstance(relevance, Mapping):
        return _from_mapping(relevance, n_q, n_c, query_ids, corpus_ids)
    if hasattr(relevance, "tocoo"):   # scipy sparse
        coo = relevance.tocoo()
        if coo.shape != (n_q, n_c):
            raise InputError(f"relevance has shape {coo.shape}; expected (n_queries, n_corpus) = ({n_q}, {n_c})")
        return _csr(np.asarray(coo.row, np.int64), np.asarray(coo.col, np.int64),
                    np.asarray(coo.data, dtype=np.float64), n_q, n_c, None)
    try:
        arr = np.asarray(relevance)
    except (TypeError, ValueError):
        raise InputError("relevance must be a mapping, a scipy sparse matrix or a numeric array") from None
    if arr.dtype.kind not in "biuf":
        raise InputError(f"relevance must be a mapping, a scipy sparse matrix or a numeric array, got {arr.dtype}")
    if arr.ndim == 1 and n_q == 1:
        arr = arr[None, :]
    if arr.shape != (n_q, n_c):
        raise InputError(f"relevance has shape {arr.shape}; expected (n_queries, n_corpus) = ({n_q}, {n_c})")
    r, c = np.nonzero(arr)
    return _csr(r.astype(np.int64), c.astype(np.int64), arr[r, c].astype(np.float64), n_q, n_c, None)


class SparseBlockGrades(BlockGrades):
    """Level indices of a block of queries from sparse rows: 0 (grade 0) but at the graded items."""

    def __init__(self, rel: Relevance, rows: slice) -> None:
        self.r, self.c, g = rel.entries(rows)
        self.levels = np.unique(np.concatenate(([0.0], g)))
        self.zero = 0
        self.lev = np.searchsorted(self.levels, g)
        self._dtype = np.uint8 if len(self.levels) <= 256 else np.uint32
        self._shape = (rows.stop - rows.start, rel.n_corpus)

    def level_tile(self, rows: slice, cols: slice) -> np.ndarray:
        out = np.zeros((rows.stop - rows.start, cols.stop - cols.start), dtype=self._dtype)
        sel = (self.r >= rows.start) & (self.r < rows.stop) & (self.c >= cols.start) & (self.c < cols.stop)
        out[self.r[sel] - rows.start, self.c[sel] - cols.start] = self.lev[sel]
        return out

    def grades(self) -> np.ndarray:
        out = np.zeros(self._shape)
        out[self.r, self.c] = self.levels[self.lev]
        return out
