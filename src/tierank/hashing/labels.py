"""Labels -> relevance grades, block by block, as small integer level indices.

Three sources of grades:

* **class ids** (1-D ``query_labels`` and ``db_labels``, any comparable values): grade 1 when the classes
  are equal, else 0;
* **multi-hot** (2-D ``{0, 1}`` / boolean matrices with one column per label): grade = the number of
  labels the query and the item share (0..L). With the default ``rel=1`` a binary measure counts an item
  as relevant when it shares at least one label; nDCG, ACG and WAP use the count as the grade, as in
  multi-label hashing papers. Shared counts are computed like Hamming distances: AND + popcount of
  packed label words;
* **relevance=**, a matrix ``(n_queries, n_db)`` or a vectorised callable ``relevance(query_index,
  db_index)`` for anything else (the contract: :data:`CALLABLE_CONTRACT`).

A grader hands out, for a block of queries, the distinct grade values (``levels``) and level indices
tile by tile; histograms then count items per (distance, level) with no sort.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from ..errors import InputError
from .distance import TILE_PAIRS, popcount_pairs

__all__ = ["make_grader", "Grader", "BlockGrades", "CALLABLE_CONTRACT"]

#: what a ``relevance=`` callable receives and returns (quoted in its error messages)
CALLABLE_CONTRACT = ("relevance(query_index, db_index) is called once per block of B queries with integer "
                     "index arrays query_index of shape (B, 1) and db_index of shape (1, n_db), and must "
                     "return the grades of every pair as one numeric array of their broadcast shape "
                     "(B, n_db) (e.g. labels_q[query_index] == labels_db[db_index]); it is not called once "
                     "per pair")


class BlockGrades:
    """Grades of one block of queries (rows) against the whole database.

    Attributes
    ----------
    levels : float64 array, the distinct grade values (contains 0)
    zero : int, index of grade 0 in ``levels``
    """

    levels: np.ndarray
    zero: int

    def level_tile(self, rows: slice, cols: slice) -> np.ndarray:
        """Level indices (unsigned ints) of block rows ``rows`` x database columns ``cols``."""
        raise NotImplementedError

    def grades(self) -> np.ndarray:
        """The float64 grades of the whole block, (B, n_db)."""
        raise NotImplementedError


class Grader:
    """Makes :class:`BlockGrades` for blocks of queries; ``query_class`` for macro averaging."""

    n_queries: int
    n_db: int
    query_class: np.ndarray | None = None   # int codes of the query classes (class-id labels only)
    class_names: np.ndarray | None = None

    def block(self, rows: slice) -> BlockGrades:
        raise NotImplementedError


# -- class ids ------------------------------------------------------------------------------------

class _ClassBlock(BlockGrades):
    def __init__(self, qc: np.ndarray, dc: np.ndarray) -> None:
        self.qc, self.dc = qc, dc
        self.levels = np.array([0.0, 1.0])
        self.zero = 0
        self._buf = np.empty(TILE_PAIRS, dtype=bool)

    def level_tile(self, rows: slice, cols: slice) -> np.ndarray:
        q, d = self.qc[rows], self.dc[cols]
        out = self._buf[:len(q) * len(d)].reshape(len(q), len(d)) if len(q) * len(d) <= len(self._buf) \
            else np.empty((len(q), len(d)), dtype=bool)
        np.equal(q[:, None], d[None, :], out=out)
        return out.view(np.uint8)

    def grades(self) -> np.ndarray:
        return (self.qc[:, None] == self.dc[None, :]).astype(np.float64)


class _ClassGrader(Grader):
    def __init__(self, qc: np.ndarray, dc: np.ndarray, names: np.ndarray) -> None:
        self.qc, self.dc = qc, dc
        self.n_queries, self.n_db = len(qc), len(dc)
        self.query_class = qc
        self.class_names = names
        self.levels = np.array([0.0, 1.0])

    def block(self, rows: slice) -> BlockGrades:
        return _ClassBlock(self.qc[rows], self.dc)


# -- multi-hot --------------------------------------------------------------------------------------

class _MultiHotBlock(BlockGrades):
    def __init__(self, qw: np.ndarray, dw: np.ndarray, levels: np.ndarray) -> None:
        self.qw, self.dw = qw, dw
        self.levels = levels
        self.zero = 0
        self._and = np.empty(TILE_PAIRS, dtype=np.uint64)
        self._cnt = np.empty(TILE_PAIRS, dtype=np.uint8)
        self._out = np.empty(TILE_PAIRS, dtype=np.uint16 if len(levels) > 255 else np.uint8)

    def level_tile(self, rows: slice, cols: slice) -> np.ndarray:
        q, d = self.qw[rows], self.dw[cols]
        r, c = q.shape[0], d.shape[0]
        if r * c > len(self._and):
            self._and = np.empty(r * c, dtype=np.uint64)
            self._cnt = np.empty(r * c, dtype=np.uint8)
            self._out = np.empty(r * c, dtype=self._out.dtype)
        x = self._and[:r * c].reshape(r, c)
        cnt = self._cnt[:r * c].reshape(r, c)
        out = self._out[:r * c].reshape(r, c)
        return popcount_pairs(np.bitwise_and, q, d, x, cnt, out)

    def grades(self) -> np.ndarray:
        rows = slice(0, self.qw.shape[0])
        return self.level_tile(rows, slice(0, self.dw.shape[0])).astype(np.float64)


class _MultiHotGrader(Grader):
    def __init__(self, qw: np.ndarray, dw: np.ndarray, max_shared: int) -> None:
        self.qw, self.dw = qw, dw
        self.n_queries, self.n_db = qw.shape[0], dw.shape[0]
        self.levels = np.arange(max_shared + 1, dtype=np.float64)

    def block(self, rows: slice) -> BlockGrades:
        return _MultiHotBlock(self.qw[rows], self.dw, self.levels)


# -- relevance= matrix or callable ------------------------------------------------------------------

class _MatrixBlock(BlockGrades):
    def __init__(self, grades: np.ndarray, row0: int) -> None:
        bad = ~np.isfinite(grades) | (grades < 0)
        if bad.any():
            r = int(np.flatnonzero(bad.any(axis=1))[0])
            what = "NaN" if np.isnan(grades[r]).any() else ("an infinite grade" if np.isinf(grades[r]).any()
                                                             else "a negative grade")
            raise InputError(f"relevance contains {what} (query {row0 + r})", query=row0 + r)
        self._grades = grades
        lo, hi = (float(grades.min()), float(grades.max())) if grades.size else (0.0, 0.0)
        if hi <= 255 and np.all(grades == np.floor(grades)):
            # integer grades in a small range: levels 0..hi, index = grade (no sort)
            self.levels = np.arange(0, int(hi) + 1, dtype=np.float64)
            self._index = grades.astype(np.uint8)
        else:
            levels, inverse = np.unique(grades, return_inverse=True)
            if levels[0] != 0:
                levels = np.concatenate(([0.0], levels))
                inverse = inverse + 1
            self.levels = levels.astype(np.float64)
            self._index = inverse.reshape(grades.shape).astype(np.uint32)
        self.zero = 0

    def level_tile(self, rows: slice, cols: slice) -> np.ndarray:
        return self._index[rows, cols]

    def grades(self) -> np.ndarray:
        return self._grades


class _MatrixGrader(Grader):
    def __init__(self, source: Any, n_queries: int, n_db: int) -> None:
        self.source = source
        self.n_queries, self.n_db = n_queries, n_db

    def block(self, rows: slice) -> BlockGrades:
        want = (rows.stop - rows.start, self.n_db)
        if callable(self.source):
            grades = self._call(rows, want)
        else:
            grades = np.asarray(self.source[rows], dtype=np.float64)
        return _MatrixBlock(grades, rows.start)

    def _call(self, rows: slice, want: tuple[int, int]) -> np.ndarray:
        """Call the callable on a block; anything but a numeric (B, n_db) array is an InputError."""
        qi = np.arange(rows.start, rows.stop, dtype=np.intp)[:, None]
        di = np.arange(self.n_db, dtype=np.intp)[None, :]
        try:
            raw = self.source(qi, di)
        except Exception as err:   # a per-pair function fails on arrays in many ways
            raise InputError(f"the relevance callable raised {type(err).__name__}: {err} (queries "
                             f"{rows.start}..{rows.stop - 1}). {CALLABLE_CONTRACT}") from err
        arr = np.asarray(raw) if not isinstance(raw, np.ndarray) else raw
        if arr.dtype == object:
            try:
                arr = arr.astype(np.float64)
            except (TypeError, ValueError):
                pass
        if arr.dtype.kind not in "biuf":
            raise InputError(f"the relevance callable returned dtype {arr.dtype}, not numeric grades "
                             f"(queries {rows.start}..{rows.stop - 1}). {CALLABLE_CONTRACT}")
        if arr.shape != want:
            raise InputError(f"the relevance callable returned shape {arr.shape} for {want[0]} queries x "
                             f"{want[1]} database items; expected {want}. {CALLABLE_CONTRACT}")
        return arr.astype(np.float64)


# -- construction and checks ---------------------------------------------------------------------------

def _labels_array(x: Any, name: str) -> np.ndarray:
    try:
        arr = np.asarray(x)
    except (TypeError, ValueError):
        raise InputError(f"{name} must be an array of class ids or a multi-hot matrix") from None
    if arr.ndim == 0:
        arr = arr[None]
    if arr.ndim > 2:
        raise InputError(f"{name} must be 1-D (class ids) or 2-D (multi-hot), got shape {arr.shape}")
    if arr.dtype == object:
        try:
            arr = arr.astype(str) if all(isinstance(v, str) for v in arr.ravel()) else arr
        except TypeError:
            pass
    if arr.dtype.kind == "f" and np.isnan(arr).any():
        raise InputError(f"{name} contains NaN")
    return arr


def _multi_hot_words(arr: np.ndarray, name: str) -> np.ndarray:
    if arr.dtype.kind not in "biuf":
        raise InputError(f"{name} must be a {{0, 1}} or boolean multi-hot matrix, got dtype {arr.dtype}")
    bits = arr if arr.dtype == bool else (arr == 1)
    if arr.dtype != bool and not np.all(bits | (arr == 0)):
        bad = arr[~(bits | (arr == 0))].flat[0]
        raise InputError(f"{name} is not multi-hot: found the value {bad!r}; use 0/1 or booleans "
                         "(or 1-D class ids)")
    packed = np.packbits(bits, axis=1)
    n_words = max(1, -(-packed.shape[1] // 8))
    out = np.zeros((packed.shape[0], n_words * 8), dtype=np.uint8)
    out[:, :packed.shape[1]] = packed
    return out.view(np.uint64)


def make_grader(query_labels: Any, db_labels: Any, relevance: Any, n_queries: int, n_db: int) -> Grader:
    """Validate labels (or ``relevance=``) against the code counts and return a :class:`Grader`."""
    if relevance is not None:
        if db_labels is not None:
            raise InputError("give either db_labels (with query_labels) or relevance=, not both")
        if not callable(relevance):
            try:
                rel = np.asarray(relevance)
            except (TypeError, ValueError):
                raise InputError("relevance must be a numeric matrix or a callable") from None
            if rel.ndim == 1 and n_queries == 1:
                rel = rel[None, :]
            if rel.shape != (n_queries, n_db):
                raise InputError(f"relevance has shape {rel.shape}; expected (n_queries, n_db) = "
                                 f"({n_queries}, {n_db})")
            if rel.dtype.kind not in "biuf":
                raise InputError(f"relevance must be numeric, got dtype {rel.dtype}")
            relevance = rel
        grader: Grader = _MatrixGrader(relevance, n_queries, n_db)
        if query_labels is not None:
            q = _labels_array(query_labels, "query_labels")
            if q.ndim != 1 or len(q) != n_queries:
                raise InputError(f"query_labels must be class ids of the {n_queries} queries (1-D); "
                                 f"got shape {q.shape}")
            names, inverse = np.unique(q, return_inverse=True)
            grader.query_class, grader.class_names = inverse.ravel(), names
        return grader
    if query_labels is None or db_labels is None:
        raise InputError("give query_labels and db_labels (class ids or multi-hot), or relevance=")
    q = _labels_array(query_labels, "query_labels")
    d = _labels_array(db_labels, "db_labels")
    if d.ndim == 2 and q.ndim == 1 and n_queries == 1 and len(q) == d.shape[1]:
        q = q[None, :]   # one query's multi-hot row
    if q.ndim != d.ndim:
        kinds = {1: "class ids (1-D)", 2: "multi-hot (2-D)"}
        raise InputError(f"query_labels are {kinds[q.ndim]} but db_labels are {kinds[d.ndim]}")
    if len(q) != n_queries:
        raise InputError(f"query_labels has {len(q)} rows but query_codes has {n_queries} codes")
    if len(d) != n_db:
        raise InputError(f"db_labels has {len(d)} rows but db_codes has {n_db} codes")
    if q.ndim == 1:
        try:
            names, inverse = np.unique(np.concatenate([q, d]), return_inverse=True)
        except TypeError:
            raise InputError("query_labels and db_labels must hold comparable class ids") from None
        inverse = inverse.ravel().astype(np.int64)
        return _ClassGrader(inverse[:n_queries], inverse[n_queries:], names)
    if q.shape[1] != d.shape[1]:
        raise InputError(f"query_labels has {q.shape[1]} label columns but db_labels has {d.shape[1]}")
    qw = _multi_hot_words(q, "query_labels")
    dw = _multi_hot_words(d, "db_labels")
    q_max = int(np.bitwise_count(qw).sum(axis=1, dtype=np.int64).max(initial=0))
    d_max = int(np.bitwise_count(dw).sum(axis=1, dtype=np.int64).max(initial=0))
    return _MultiHotGrader(qw, dw, min(q_max, d_max))

