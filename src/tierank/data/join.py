"""The one vectorised run x qrels join: ids become integer codes, then rows are joined on int64 keys.

Fast paths, chosen from the data and invisible in the results: integer document ids are used as
they are (no encoding); string ids (through pyarrow) are coded by a hash read straight from the
string buffers, every match and repeat it finds is checked on the strings, and a collision makes the
join start again with exact dictionary encoding; a run grouped by query (as TREC files and most
DataFrames are) is sorted row by row in a padded matrix instead of by one global sort, with small
integer scores as uint8/uint16 keys (radix sort).
"""

from __future__ import annotations

import warnings
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import dataclass
from typing import Any, Callable

import numpy as np
import pandas as pd

from ..errors import InputError
from ..ties.groups import concat_ranges
from .ranked import RankedLists, sort_ranked
from .strings import string_hashes, string_sort_key, strings_equal

__all__ = ["Columns", "JoinedRun", "join_run_qrels", "TierankWarning", "sorted_label_order"]


class TierankWarning(UserWarning):
    """Something in the input was left out or changed; the message says what and how much."""


@dataclass
class Columns:
    """One table of (query, doc, value) rows, with where each row came from for error messages.

    ``query`` and ``doc`` are numpy arrays or pandas arrays (e.g. pyarrow-backed strings) of ids as
    given; ``value`` is numeric.
    """

    query: Any
    doc: Any
    value: Any
    source: str                       # "run", "qrels" or a file name
    lines: np.ndarray | None = None   # 1-based line numbers, for files

    def where(self, i: int) -> dict:
        if self.lines is not None:
            return {"file": self.source, "line": int(self.lines[i])}
        return {}

    def label(self, ids: Any, i: int) -> Any:
        value = ids[int(i)]
        return value.item() if isinstance(value, np.generic) else value


@dataclass
class JoinedRun:
    """Ranked lists of the evaluated queries with a run, plus the queries scored as empty."""

    ranked: RankedLists
    labels: np.ndarray          # query ids of ranked, in ranked order (first appearance in the run)
    empty_labels: np.ndarray    # query ids evaluated with no retrieved item (missing="zero")
    empty_judged: list[np.ndarray]


def _is_integer_ids(ids: Any) -> bool:
    return isinstance(ids, np.ndarray) and ids.dtype.kind in "iu"


def _numbers(cols: Columns, what: str) -> np.ndarray:
    try:
        values = np.asarray(cols.value, dtype=np.float64)
    except (TypeError, ValueError):
        for i, v in enumerate(cols.value):  # only on the error path, to name the offending row
            try:
                float(v)
            except (TypeError, ValueError):
                raise InputError(f"{what} {v!r} of document {cols.label(cols.doc, i)!r} is not a number",
                                 query=cols.label(cols.query, i), **cols.where(i)) from None
        raise
    for test, problem in ((np.isnan, "NaN"), (np.isinf, "infinite")):
        if what == "score" and problem == "infinite":
            continue  # infinite scores are valid and tie with each other
        bad = np.flatnonzero(test(values))
        if bad.size:
            i = int(bad[0])
            raise InputError(f"{what} of document {cols.label(cols.doc, i)!r} for query "
                             f"{cols.label(cols.query, i)!r} is {problem}",
                             query=cols.label(cols.query, i), **cols.where(i))
    return values


def _arrow(ids: Any):
    """The ids as a pyarrow array, or None (no pyarrow, or ids pyarrow cannot hold)."""
    try:
        import pyarrow as pa
    except ImportError:  # pragma: no cover - pyarrow is optional
        return None
    if isinstance(ids, pa.Array):
        return ids
    try:
        arr = pa.array(ids)
    except (TypeError, ValueError, pa.ArrowException):
        return None
    return arr.combine_chunks() if isinstance(arr, pa.ChunkedArray) else arr


def _group_starts(ids: Any) -> np.ndarray | None:
    """Row indices where the id changes, when cheap to find (numbers, or strings through pyarrow)."""
    if isinstance(ids, np.ndarray) and ids.dtype.kind in "iuf":
        return np.concatenate(([0], np.flatnonzero(ids[1:] != ids[:-1]) + 1))
    arr = _arrow(ids)
    if arr is None or len(arr) < 2:
        return None
    import pyarrow.compute as pc
    change = pc.not_equal(arr[1:], arr[:-1]).to_numpy(zero_copy_only=False)
    return np.concatenate(([0], np.flatnonzero(change) + 1))


@dataclass
class _QueryCodes:
    """Integer codes of the query ids of both tables: the run's queries are 0 .. n_run - 1."""

    run: np.ndarray              # int32, one per run row (multiply as int64)
    qrels: np.ndarray            # int64, one per qrels row
    labels: np.ndarray           # the id of each code
    n_run: int
    run_counts: np.ndarray | None   # rows per run query when the run is grouped by query (codes sorted)


def _encode_queries(run_q: Any, qrels_q: Any) -> _QueryCodes:
    """Integer codes for the query ids of both tables; codes of run queries come first."""
    n = len(run_q)
    starts = _group_starts(run_q) if n else None
    codes = uniques = counts = None
    if starts is not None:
        blocks = np.asarray(run_q[starts] if isinstance(run_q, np.ndarray) else
                            np.asarray(run_q, dtype=object)[starts] if n < 1_000 else
                            _arrow(run_q).take(starts).to_numpy(zero_copy_only=False))
        if pd.Index(blocks).is_unique:   # grouped by query: no hashing of every row
            counts = np.diff(np.append(starts, n))
            codes = np.repeat(np.arange(len(starts), dtype=np.int32), counts)
            uniques = blocks
    if codes is None:
        codes, uniques = pd.factorize(pd.Series(run_q, copy=False))   # any array kind, any pandas
        uniques = np.asarray(uniques)
    n_run = len(uniques)
    index = pd.Index(uniques)
    qcodes = _index_in(qrels_q, uniques)
    if qcodes is None:
        qcodes = index.get_indexer(qrels_q)
    unseen = qcodes < 0
    if unseen.any():
        extra_codes, extra = pd.factorize(np.asarray(qrels_q, dtype=object)[unseen])
        qcodes[unseen] = extra_codes + len(index)
        uniques = np.concatenate([np.asarray(index, dtype=object), np.asarray(extra, dtype=object)])
    else:
        uniques = np.asarray(index)
    # run codes as int32 (a query code per row: half the memory); multiply them as int64
    return _QueryCodes(codes.astype(np.int32, copy=False), qcodes.astype(np.int64, copy=False), uniques,
                       n_run, counts)


def _index_in(ids: Any, values: np.ndarray) -> np.ndarray | None:
    """Position of each id among ``values`` (-1: absent) through pyarrow's hashing, or None."""
    a = _arrow(ids) if not isinstance(ids, np.ndarray) else None
    if a is None or not len(a):
        return None
    import pyarrow as pa
    import pyarrow.compute as pc
    try:
        value_set = pa.array(values, type=a.type)
    except (TypeError, ValueError, pa.ArrowException):
        return None
    found = pc.fill_null(pc.index_in(a, value_set=value_set), -1)
    return found.to_numpy(zero_copy_only=False).astype(np.int64)


@dataclass
class _DocCodes:
    """Integer codes of document ids for the join.

    ``complete``: every run document has a code of its own (integer ids, or ids encoded in full). With
    pyarrow-encodable string ids only the judged documents get codes (the run's others are -1), which
    saves hashing millions of unjudged ids at once; duplicates are then checked block by block.
    """

    run: np.ndarray
    qrels: np.ndarray
    size: int
    complete: bool
    hashed: bool = False   # codes are truncated string hashes: a match or a repeat must be checked


class _HashCollision(Exception):
    """Two different document ids got the same hashed code where it matters: encode them exactly."""


def _in_background(fn: Callable, *args: Any) -> Future:
    """Run ``fn(*args)`` on a worker thread. numpy and pyarrow release the GIL in their loops, so on
    the two cores of this machine class the join overlaps its two largest independent steps."""
    pool = ThreadPoolExecutor(max_workers=1)
    try:
        return pool.submit(fn, *args)
    finally:
        pool.shutdown(wait=False)


class _SharedHashes:
    """The run's string hashes, computed on two threads: most rows on a worker thread from the start,
    the last ones by the caller when it asks for the result (after its own work in between)."""

    WORKER_SHARE = 0.75

    def __init__(self, ids: Any) -> None:
        self.ids = ids
        self.cut = int(len(ids) * self.WORKER_SHARE)
        self.out = np.empty(len(ids), dtype=np.uint64)
        self.head = _in_background(string_hashes, ids.slice(0, self.cut), self.out[:self.cut])

    def result(self) -> np.ndarray | None:
        tail = string_hashes(self.ids.slice(self.cut), self.out[self.cut:])
        head = self.head.result()
        return None if head is None or tail is None else self.out


def _hashed_docs(run_hashes: _SharedHashes, qrels_d: Any, n_queries: int) -> _DocCodes | None:
    """Codes of string ids from their 64-bit hashes, truncated so ``query * size + code`` fits int64.

    ``run_hashes``: the (pending) :func:`string_hashes` of the run's ids. Hashing reads every string
    once, straight from the arrow buffers, and needs no hash table: about ten times faster than
    dictionary-encoding millions of distinct ids. Codes may collide; the join checks the strings of
    every judged match and treats any repeated code as a possible collision.
    """
    bits = 62 - max(int(n_queries), 1).bit_length()
    if bits < 40:   # too many queries for codes wide enough to make collisions rare
        return None
    b = _arrow(qrels_d)
    hq = string_hashes(b) if b is not None else None
    hr = run_hashes.result()
    if hq is None or hr is None:
        return None
    shift = np.uint64(64 - bits)
    hr >>= shift   # in place: the hashes become the codes
    hq >>= shift
    return _DocCodes(hr.view(np.int64), hq.view(np.int64), 1 << bits, True, hashed=True)


def _encode_docs(run_d: Any, qrels_d: Any) -> _DocCodes:
    if _is_integer_ids(run_d) and _is_integer_ids(qrels_d) and len(run_d):
        lo = int(min(run_d.min(), qrels_d.min() if len(qrels_d) else run_d.min()))
        hi = int(max(run_d.max(), qrels_d.max() if len(qrels_d) else run_d.max()))
        def shifted(ids: np.ndarray) -> np.ndarray:   # a view when nothing changes (no copy of the run)
            ids = ids.astype(np.int64, copy=False)
            return ids if lo == 0 else np.subtract(ids, lo)
        return _DocCodes(shifted(run_d), shifted(qrels_d), hi - lo + 1, True)
    a, b = _arrow(run_d), _arrow(qrels_d)
    if a is not None and b is not None and a.type == b.type and len(b):
        import pyarrow.compute as pc
        encoded = pc.dictionary_encode(b)
        qcodes = encoded.indices.to_numpy(zero_copy_only=False).astype(np.int64)
        found = pc.fill_null(pc.index_in(a, value_set=encoded.dictionary), -1)
        rcodes = found.to_numpy(zero_copy_only=False).astype(np.int64)
        size = max(len(encoded.dictionary), 1)
        del found, encoded
        _release_arrow_memory()
        return _DocCodes(rcodes, qcodes, size, False)
    n = len(run_d)
    both = np.concatenate([np.asarray(run_d, dtype=object), np.asarray(qrels_d, dtype=object)])
    codes, uniques = pd.factorize(both)
    return _DocCodes(codes[:n].astype(np.int64), codes[n:].astype(np.int64), max(len(uniques), 1), True)


def _duplicate_by_blocks(docs: Any, rq: np.ndarray, block: int = 1 << 20) -> int | None:
    """First row repeating a (query, document) pair, encoding the documents one block of whole
    queries at a time (bounded memory). ``rq``: query code of each row."""
    import pyarrow.compute as pc
    arr = _arrow(docs)
    perm = None if not np.any(rq[1:] < rq[:-1]) else np.argsort(rq, kind="stable")
    q = (rq if perm is None else rq[perm]).astype(np.int64)
    starts = np.concatenate(([0], np.flatnonzero(q[1:] != q[:-1]) + 1, [len(q)]))
    cuts = np.unique(starts[np.searchsorted(starts, np.arange(0, len(q), block))])
    cuts = np.append(cuts[cuts < len(q)], len(q))
    def first_in_block(a: int, b: int) -> int | None:
        chunk = arr.slice(a, b - a) if perm is None else arr.take(perm[a:b])
        encoded = pc.dictionary_encode(chunk)
        codes = encoded.indices.to_numpy(zero_copy_only=False).astype(np.int64)
        dup = _first_duplicate((q[a:b] - q[a]) * len(encoded.dictionary) + codes)
        del encoded, chunk
        _release_arrow_memory()
        return None if dup is None else a + dup

    # blocks of whole queries, hashed on two threads (pyarrow releases the GIL)
    with ThreadPoolExecutor(max_workers=2) as pool:
        found = list(pool.map(first_in_block, cuts[:-1], cuts[1:]))
    _release_arrow_memory()
    for row in found:   # the first block holding a duplicate names it
        if row is not None:
            return int(row if perm is None else perm[row])
    return None


def _release_arrow_memory() -> None:
    """Give the memory pyarrow's allocator keeps after hashing back to the system."""
    import pyarrow as pa
    release = getattr(pa.default_memory_pool(), "release_unused", None)
    if release is not None:
        release()


def _first_duplicate(keys: np.ndarray) -> int | None:
    """Index of the first row whose key appeared before, or None (hash-based)."""
    index = pd.Index(keys)
    if index.is_unique:
        return None
    return int(np.flatnonzero(index.duplicated(keep="first"))[0])


@dataclass
class _SortKeys:
    """Keys that sort like ``-scores`` within rows, the value that pads rows (sorts last), and the
    score of each key (``hi - key`` for integer ranks, ``-key`` for floats)."""

    keys: np.ndarray
    pad: object
    hi: float | None

    @classmethod
    def of(cls, scores: np.ndarray) -> "_SortKeys":
        """Small integer scores (quantised scores, an LLM judge's grades) become uint8 or uint16 ranks:
        numpy sorts those by radix, several times faster than float64, and they take 1/8 or 1/4 of
        the memory. ``scores``: float64, or integers (taken as float64 would take them)."""
        if len(scores):
            lo, hi = scores.min(), scores.max()
            exact_ints = scores.dtype.kind in "iub" and -2 ** 53 < int(lo) and int(hi) < 2 ** 53
            for dtype in (np.uint8, np.uint16):
                if float(hi) - float(lo) >= np.iinfo(dtype).max:
                    continue
                if exact_ints:   # hi - s in [0, max): computed modulo 2**bits, in the small type
                    small = np.subtract(dtype(int(hi) & np.iinfo(dtype).max), scores.astype(dtype))
                    return cls(small, np.iinfo(dtype).max, float(hi))
                rank = np.subtract(float(hi), scores, dtype=np.float64)
                small = rank.astype(dtype)
                if np.array_equal(small, rank):
                    return cls(small, np.iinfo(dtype).max, float(hi))
                break
        return cls(-np.asarray(scores, dtype=np.float64), np.nan, None)   # NaN padding sorts last

    def ranked(self, order: np.ndarray) -> tuple[np.ndarray | None, np.ndarray | None, Callable | None]:
        """(keys, tie_keys, keys_fn) of :class:`RankedLists` for the items ``order``: the float scores;
        or, for integer ranks, the sorted ranks (they find the ties) and the scores on demand."""
        if self.hi is None:
            return -self.keys[order], None, None
        ranks = np.take(self.keys, order)
        return None, ranks, _ScoresOfRanks(ranks, self.hi)


@dataclass
class _ScoresOfRanks:
    """The scores of items from their integer ranks: ``hi - rank`` (exact: integer scores < 2**53)."""

    ranks: np.ndarray
    hi: float

    def __call__(self, items: np.ndarray) -> np.ndarray:
        return np.subtract(self.hi, self.ranks[items], dtype=np.float64)


@dataclass
class _Blocks:
    """A run whose rows come grouped by query, laid out as a padded matrix: one row per block.

    Rows of block b are ``qptr[b]:qptr[b+1]``; row r sits at ``flat[r]`` of the (n_blocks, width)
    matrix (``flat`` is None when every block is full, so the matrix is a reshape).
    """

    qptr: np.ndarray
    width: int
    flat: np.ndarray | None
    block_code: np.ndarray   # query code of each block

    @classmethod
    def find(cls, codes: np.ndarray, numbered: bool, counts: np.ndarray | None = None) -> "_Blocks | None":
        """The layout of a run grouped by query, or None (not grouped, or too ragged to pad).

        ``numbered``: the codes of a grouped run are 0, 1, 2, ... (factorised codes of a whole run
        are), so they number the blocks as they are. ``counts``: rows per code when already known
        to be grouped (no pass over the codes).
        """
        n = len(codes)
        if counts is None or not len(counts):
            if n == 0 or np.any(codes[1:] < codes[:-1]):
                return None
            if numbered:
                counts = np.bincount(codes)
            else:
                starts = np.concatenate(([0], np.flatnonzero(codes[1:] != codes[:-1]) + 1))
                counts = np.diff(np.append(starts, n))
        width = int(counts.max())
        if len(counts) * width > 2 * n + 1024:   # too ragged: padding would cost more than a sort
            return None
        qptr = np.zeros(len(counts) + 1, dtype=np.int64)
        np.cumsum(counts, out=qptr[1:])
        flat = None
        if n != len(counts) * width:
            flat = np.arange(n, dtype=np.int64)
            flat += np.repeat(np.arange(len(counts), dtype=np.int64) * width - qptr[:-1], counts)
        return cls(qptr, width, flat, codes[qptr[:-1]])

    def matrix(self, values: np.ndarray, pad: object) -> np.ndarray:
        shape = (len(self.qptr) - 1, self.width)
        if self.flat is None:
            return values.reshape(shape)
        out = np.full(shape, pad, dtype=values.dtype)
        out.ravel()[self.flat] = values
        return out

    def has_repeats(self, docs: np.ndarray, n_docs: int) -> bool:
        """Whether a block holds a document code twice (codes in [0, n_docs); rows sorted, no hash
        table). Codes below 2**32 - 1 are sorted as uint32: half the memory, a faster sort."""
        small = n_docs < 2 ** 32 - 1
        pad = 2 ** 32 - 1 if small else -1   # the padding is no code
        codes = docs.astype(np.uint32) if small else docs
        rows = self.matrix(codes, pad)
        if self.flat is None and not small:
            rows = rows.copy()   # a reshape of the codes themselves
        rows.sort(axis=1)
        return bool(((rows[:, 1:] == rows[:, :-1]) & (rows[:, 1:] != pad)).any())

    def sort(self, keys: np.ndarray, pad: object, new_code: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """(order, qptr): rows sorted by key within each block, blocks in ``new_code`` order.

        ``keys`` sort ascending (best first); ``pad`` sorts after every key.
        """
        padded = self.matrix(keys, pad)
        # small unsigned keys: numpy's stable sort is a radix sort; floats: its default sort is faster
        order = np.argsort(padded, axis=1, kind="stable" if padded.dtype.kind == "u" else None)
        del padded
        order += self.qptr[:-1, None]
        sizes = np.diff(self.qptr)
        order = order.ravel() if self.flat is None else order[np.arange(self.width)[None, :] < sizes[:, None]]
        qptr = self.qptr
        block_new = new_code[self.block_code]
        if np.any(block_new[1:] < block_new[:-1]):   # blocks in input order -> in query-code order
            perm = np.argsort(block_new, kind="stable")
            order = order[concat_ranges(qptr[:-1][perm], sizes[perm])]
            qptr = np.concatenate(([0], np.cumsum(sizes[perm])))
        return order, qptr


def join_run_qrels(run: Columns, qrels: Columns, missing: str = "skip") -> JoinedRun:
    """Join a run with its judgments and build ranked lists (see design.md §2 for the rules).

    Queries of the qrels without a run are skipped with a warning (``missing="skip"``) or scored as
    empty lists (``missing="zero"``, trec_eval ``-c``); queries of the run without judgments are skipped
    with a warning. Unjudged retrieved documents get grade 0. A document twice in one query is an error.
    """
    if missing not in ("skip", "zero"):
        raise InputError(f"missing={missing!r}: use 'skip' or 'zero'")
    try:
        return _join(run, qrels, missing, exact_ids=False)
    except _HashCollision:   # two different ids share a hashed code where it matters: start again
        return _join(run, qrels, missing, exact_ids=True)


def _join(run: Columns, qrels: Columns, missing: str, exact_ids: bool) -> JoinedRun:
    run_hashes = None   # string ids: hashed on a worker thread while the rest is validated and coded
    if not exact_ids and not _is_integer_ids(run.doc) and len(run.doc):
        arrow_docs = _arrow(run.doc)
        if arrow_docs is not None:
            run_hashes = _SharedHashes(arrow_docs)
    # integer scores stay integers (no NaN to look for; sort keys come straight from them)
    int_scores = isinstance(run.value, np.ndarray) and run.value.dtype.kind in "iub"
    scores = run.value if int_scores else _numbers(run, "score")
    grades = _numbers(qrels, "grade")
    queries = _encode_queries(run.query, qrels.query)
    run_q, qrels_q, quniq = queries.run, queries.qrels, queries.labels
    n_all = len(quniq)
    codes = _hashed_docs(run_hashes, qrels.doc, n_all) if run_hashes is not None else None
    del run_hashes
    string_duplicates = None
    if codes is None:
        # String ids: hash the run's (query, document) pairs for duplicates on another thread while
        # the judged documents are encoded.
        run_docs = run.doc
        if not _is_integer_ids(run_docs) and len(run_q):
            arrow_docs = _arrow(run_docs)
            if arrow_docs is not None:
                run_docs = arrow_docs
                string_duplicates = _in_background(_duplicate_by_blocks, arrow_docs, run_q)
        codes = _encode_docs(run_docs, qrels.doc)
        del run_docs
        if n_all * codes.size >= 2 ** 62:   # composite keys would overflow: encode the documents
            codes = _encode_docs(np.asarray(run.doc, dtype=object), np.asarray(qrels.doc, dtype=object))
    run_d, qrels_d, n_docs = codes.run, codes.qrels, codes.size
    hashed, complete = codes.hashed, codes.complete
    del codes   # run_d is the only reference to the run's codes: freed as soon as the lookup is done
    # the judgments sorted by (query, document): a repeated pair is adjacent
    qkey = qrels_q * n_docs + qrels_d
    qsort = np.argsort(qkey)   # keys are unique unless the qrels repeat a pair (an error below)
    qkey = qkey[qsort]
    if (qkey[1:] == qkey[:-1]).any():
        if hashed:
            raise _HashCollision
        qsort = np.argsort(qrels_q * n_docs + qrels_d, kind="stable")   # equal keys in row order
        sorted_keys = (qrels_q * n_docs + qrels_d)[qsort]
        repeats = np.flatnonzero(sorted_keys[1:] == sorted_keys[:-1]) + 1
        _duplicate_error(qrels, int(qsort[repeats].min()), "qrels")   # the first row repeating one

    in_run = np.arange(n_all) < queries.n_run
    in_qrels = np.bincount(qrels_q, minlength=n_all) > 0
    only_qrels = int((in_qrels & ~in_run).sum())
    only_run = int((in_run & ~in_qrels).sum())
    notes = []   # warnings, given once the input is known to be valid
    if only_run:
        notes.append(f"{only_run} quer{'y' if only_run == 1 else 'ies'} of the run "
                     f"{'has' if only_run == 1 else 'have'} no judgments and "
                     f"{'is' if only_run == 1 else 'are'} left out")
    if only_qrels and missing == "skip":
        notes.append(f"{only_qrels} judged quer{'y' if only_qrels == 1 else 'ies'} "
                     f"{'is' if only_qrels == 1 else 'are'} missing from the run and left out "
                     "(missing='zero' scores them 0, like trec_eval -c)")
    evaluated = in_run & in_qrels
    if not evaluated.any() and not (missing == "zero" and only_qrels):
        raise InputError("no query is both in the run and in the qrels: nothing to evaluate")

    # evaluated queries are numbered in order of first appearance in the run, so a run grouped by
    # query keeps its blocks in place (evaluate() sorts the results by query id)
    ranked_ids = np.flatnonzero(evaluated)
    new_code = np.full(n_all, -1, dtype=np.int64)
    new_code[ranked_ids] = np.arange(len(ranked_ids))
    n_q = len(ranked_ids)

    keep_rows = None
    if only_run:   # rows of unjudged queries leave now
        keep_rows = np.flatnonzero(evaluated[run_q])
        run_q, run_d, scores = run_q[keep_rows], run_d[keep_rows], scores[keep_rows]
    blocks = _Blocks.find(run_q, numbered=keep_rows is None,
                          counts=queries.run_counts if keep_rows is None else None)
    del queries
    keys = None
    if blocks is not None:
        keys = _SortKeys.of(scores)
        scores = None   # the keys give them back
    elif int_scores:
        scores = scores.astype(np.float64)
    # on a worker thread during the lookup below: a document twice in a query (sorted blocks show it),
    # then the ranked lists (rows sorted by query, then score descending)
    check_repeats = string_duplicates is None and complete
    ranking = None
    if blocks is not None:
        def sort_blocks() -> tuple[bool, np.ndarray, np.ndarray]:
            repeated = blocks.has_repeats(run_d, n_docs) if check_repeats else True
            return (repeated, *blocks.sort(keys.keys, keys.pad, new_code))
        ranking = _in_background(sort_blocks)

    # the judgments of evaluated queries, by (new query code, document): the judged lists and the lookup
    qrels_ptr = np.searchsorted(qkey, np.arange(n_all + 1, dtype=np.int64) * n_docs)
    sizes = np.diff(qrels_ptr)[ranked_ids]
    jrows = qsort[concat_ranges(qrels_ptr[:-1][ranked_ids], sizes)]
    del qkey, qsort
    judged_ptr = np.concatenate(([0], np.cumsum(sizes)))
    jkey = np.repeat(np.arange(n_q, dtype=np.int64) * n_docs, sizes) + qrels_d[jrows]
    jgrades = grades[jrows]

    # grades of the run's rows (unjudged: 0)
    matched, at = _find_judged(run_q, run_d, new_code, n_docs, jkey,
                               _judged_candidates(run_d, qrels_d, n_docs, complete))
    if hashed:
        _check_matches(run, qrels, matched if keep_rows is None else keep_rows[matched], jrows[at])
    row_grades = np.zeros(len(run_d))
    row_grades[matched] = jgrades[at]
    del matched, at, jkey
    if string_duplicates is not None:   # rows of the whole run, before leaving out unjudged queries
        dup = string_duplicates.result()
        if dup is not None:
            _duplicate_error(run, dup, "run")
    if ranking is not None:
        repeated, item_order, qptr = ranking.result()
    else:
        repeated = True
        item_order, qptr = sort_ranked(new_code[run_q], scores, n_q)
    if string_duplicates is None and repeated:   # find the first repeated (query, document) row
        dup = _first_duplicate(run_q.astype(np.int64) * n_docs + run_d)
        if dup is not None:
            if hashed:
                raise _HashCollision
            _duplicate_error(run, int(keep_rows[dup]) if keep_rows is not None else dup, "run")
    del run_d, run_q, blocks, ranking
    item_grades = row_grades[item_order]
    del row_grades
    if keys is None:
        item_scores, tie_keys, keys_fn = scores[item_order], None, None
    else:
        item_scores, tie_keys, keys_fn = keys.ranked(item_order)
    del keys, scores
    rows = item_order if keep_rows is None else keep_rows[item_order]
    del item_order

    def trec_order() -> np.ndarray | list[np.ndarray]:
        # trec_eval breaks ties by document id compared as strings: a key ordering the ranked items' ids
        docs = run.doc
        if _is_integer_ids(docs):
            key = decimal_string_key(docs[rows])
            if key is not None:
                return key
        arr = _arrow(docs) if not _is_integer_ids(docs) else None
        keys = string_sort_key(arr) if arr is not None else None
        if keys is not None:   # byte order, as strcmp: the words, compared only inside ties
            return [np.take(k, rows) for k in keys]
        if arr is not None:
            import pyarrow.compute as pc
            by_name = pc.sort_indices(arr.take(rows)).to_numpy()
        else:
            taken = docs[rows] if isinstance(docs, np.ndarray) else np.asarray(docs, dtype=object)[rows]
            by_name = np.argsort(np.asarray(taken).astype(str), kind="stable")
        rank = np.empty(len(rows), dtype=np.int64)
        rank[by_name] = np.arange(len(rows))
        return rank

    ranked = RankedLists(qptr=qptr, keys=item_scores, grades=item_grades,
                         judged_ptr=judged_ptr, judged=jgrades, trec_order_fn=trec_order,
                         input_order=rows, tie_keys=tie_keys, keys_fn=keys_fn)

    empty_ids = np.flatnonzero(in_qrels & ~in_run) if missing == "zero" else np.zeros(0, dtype=np.int64)
    empty_judged: list[np.ndarray] = []
    if empty_ids.size:
        jo = np.argsort(qrels_q, kind="stable")
        ptr = np.searchsorted(qrels_q[jo], np.arange(n_all + 1))
        empty_judged = [grades[jo][ptr[i]:ptr[i + 1]] for i in empty_ids]  # one array per empty query
    for note in notes:
        warnings.warn(note, TierankWarning, stacklevel=3)
    return JoinedRun(ranked=ranked, labels=quniq[ranked_ids], empty_labels=quniq[empty_ids],
                     empty_judged=empty_judged)


def _find_judged(run_q: np.ndarray, run_d: np.ndarray, new_code: np.ndarray, n_docs: int, jkey: np.ndarray,
                 candidates: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """(rows, at): the run rows whose (query, document) is judged, in row order, and where they are
    in the sorted judged keys ``jkey`` (``new query code * n_docs + document code``). Only the
    ``candidates`` rows (increasing) are looked up."""
    if not len(jkey) or not len(candidates):
        return np.zeros(0, dtype=np.int64), np.zeros(0, dtype=np.int64)
    key = new_code[run_q[candidates]] * n_docs + run_d[candidates]
    by_key = np.argsort(key)   # sorted needles search faster (cache)
    sorted_key = key[by_key]
    found_at = np.searchsorted(jkey, sorted_key)
    np.minimum(found_at, len(jkey) - 1, out=found_at)
    at = np.empty_like(found_at)
    at[by_key] = found_at   # back in row order: later reads of the rows go forward through memory
    del by_key, sorted_key, found_at
    found = jkey[at] == key
    return candidates[found], at[found]


def _judged_candidates(run_d: np.ndarray, qrels_d: np.ndarray, n_docs: int, complete: bool) -> np.ndarray:
    """Rows of the run whose document may be judged for some query (a superset; -1 codes never are).

    ``complete``: every run document has a code (else unjudged ones are -1); ``n_docs``: code range.
    """
    if not complete:
        return np.flatnonzero(run_d >= 0)   # -1: judged for no query
    if n_docs <= 8 * (len(run_d) + len(qrels_d)) + (1 << 20):
        judged = np.zeros(n_docs, dtype=bool)
        judged[qrels_d] = True
        return np.flatnonzero(judged[run_d])
    # codes of a wide range (hashes): a bitmap on their low bits leaves out most unjudged rows
    low = np.int64((1 << min(max(int(8 * len(qrels_d)).bit_length(), 16), 30)) - 1)
    judged = np.zeros(int(low) + 1, dtype=bool)
    judged[qrels_d & low] = True
    block = 1 << 20
    return np.concatenate([np.flatnonzero(judged[run_d[a:a + block] & low]) + a   # blocks of rows
                           for a in range(0, len(run_d), block)] or [np.zeros(0, dtype=np.int64)])


def _check_matches(run: Columns, qrels: Columns, run_rows: np.ndarray, qrels_rows: np.ndarray) -> None:
    """Raise _HashCollision unless the document ids of the matched rows are equal pairwise."""
    if not strings_equal(_arrow(run.doc), run_rows, _arrow(qrels.doc), qrels_rows):
        raise _HashCollision


def _duplicate_error(cols: Columns, row: int, what: str) -> None:
    doc, query = cols.label(cols.doc, row), cols.label(cols.query, row)
    raise InputError(f"document {doc!r} is listed twice for query {query!r} in the {what}",
                     query=query, **cols.where(row))


def decimal_string_key(ids: np.ndarray) -> np.ndarray | None:
    """An int64 key that orders integers as trec_eval orders their decimal strings (``"10" < "9"``).

    A digit string compares like its digits padded with zeros to a common length, then by length
    (a prefix sorts first); ``-`` sorts before every digit. None when the ids have over 16 digits.

    >>> ids = np.array([9, 10, 1, 100, -5, -12, 0])
    >>> [int(i) for i in ids[np.argsort(decimal_string_key(ids))]]
    [-12, -5, 0, 1, 10, 100, 9]
    """
    x = np.asarray(ids).astype(np.int64)
    if x.size == 0:
        return np.zeros(0, dtype=np.int64)
    if (x == np.iinfo(np.int64).min).any():
        return None
    a = np.abs(x)
    digits = np.ones(len(a), dtype=np.int64)
    for k in range(1, 19):  # loop over powers of ten
        digits += a >= 10 ** k
    width = int(digits.max())
    if width > 16:
        return None
    powers = 10 ** np.arange(width + 1, dtype=np.int64)
    padded = a * powers[width - digits]
    return (x >= 0) * (20 * int(powers[width])) + padded * 20 + digits


def sorted_label_order(uniques: np.ndarray) -> np.ndarray:
    """Order of query ids as given: numbers numerically, strings in plain string order."""
    try:
        return np.argsort(uniques, kind="stable")
    except TypeError:
        return np.argsort(np.array([str(u) for u in uniques]), kind="stable")
