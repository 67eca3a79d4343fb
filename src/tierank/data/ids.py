"""Integer codes for the ids of a run and its qrels, one small strategy per kind of id.

Ids arrive normalised (:mod:`tierank.data.columns`): an int64 array or a pyarrow string array, the same
kind in the run and in the qrels. Every document strategy returns :class:`DocCodes` with one contract:

* ``run`` / ``qrels``: an int64 code per row, in ``[0, size)``; equal ids get equal codes. With
  ``complete=False``, run documents that no qrels row names get -1 (they are judged for no query).
* ``hashed``: the codes are truncated hashes, so two different ids may share one. The join then
  checks every match it uses on the strings and treats any repeated code as a possible collision
  (:class:`HashCollision`), after which it starts again with :func:`exact_string_codes`.
* ``duplicates``: for strategies that cannot see repeats in their codes (``complete=False``), a pending
  search for the first run row that repeats a (query, document) pair.

The strategies: :func:`integer_codes` (the ids themselves, shifted; factorised when their range is too
wide for composite keys), :func:`hashed_string_codes` (64-bit hashes read from the Arrow buffers) and
:func:`exact_string_codes` (Arrow dictionary encoding). :func:`trec_order_key` gives, for either kind,
the order in which trec_eval compares document ids (as strings, byte by byte).
"""

from __future__ import annotations

from typing import Any

import numpy as np
import pyarrow as pa

from .._threads import Pending, in_background, map_on_two_threads
from .arrow import cast, compute, from_numpy, index_in, take, to_numpy, to_objects
from .columns import is_integer_ids
from .strings import string_hashes, string_sort_key, strings_equal

__all__ = ["DocCodes", "HashCollision", "QueryCodes", "query_codes", "integer_codes", "SharedHashes",
           "hashed_string_codes", "exact_string_codes", "first_duplicate", "trec_order_key",
           "decimal_string_key", "matches_equal", "id_codes", "positions"]

_KEY_LIMIT = 2 ** 62   # composite keys query * size + code stay below this (int64, with room to spare)


class HashCollision(Exception):
    """Two different document ids got the same hashed code where it matters: encode them exactly."""


class DocCodes:
    """Integer codes of the document ids of a run and its qrels (see the module docstring)."""

    def __init__(self, run: np.ndarray, qrels: np.ndarray, size: int, complete: bool = True, hashed: bool = False,
                 duplicates: Pending | None = None) -> None:
        self.run, self.qrels, self.size, self.complete, self.hashed = run, qrels, size, complete, hashed
        self.duplicates = duplicates


# ------------------------------------------------------------------------------------------- queries


class QueryCodes:
    """Integer codes of the query ids of both tables: the run's queries are 0 .. n_run - 1."""

    def __init__(self, run: np.ndarray, qrels: np.ndarray, labels: np.ndarray, n_run: int,
                 run_counts: np.ndarray | None) -> None:
        self.run = run                 # int32, one per run row (multiply as int64)
        self.qrels = qrels             # int64, one per qrels row
        self.labels = labels           # the id of each code
        self.n_run = n_run
        self.run_counts = run_counts   # rows per run query when the run is grouped by query (codes sorted)


def _group_starts(ids: Any) -> np.ndarray:
    """Row indices where the id changes."""
    if is_integer_ids(ids):
        return np.concatenate(([0], np.flatnonzero(ids[1:] != ids[:-1]) + 1))
    change = to_numpy(compute("not_equal", ids[1:], ids[:-1]))
    return np.concatenate(([0], np.flatnonzero(change) + 1))


def _as_numpy(ids: Any) -> np.ndarray:
    return ids if is_integer_ids(ids) else to_objects(ids)


def id_codes(ids: Any) -> tuple[np.ndarray, Any]:
    """(codes, uniques): ids numbered in order of first appearance, as int64; ``uniques`` is a numpy array
    for numpy ids, and for Arrow ids the pyarrow dictionary (no Python object per id until a caller
    converts it).

    >>> codes, uniques = id_codes(np.array([7, 3, 7]))
    >>> codes.tolist(), uniques.tolist()
    ([0, 1, 0], [7, 3])
    """
    numpy = isinstance(ids, np.ndarray)
    enc = compute("dictionary_encode", from_numpy(ids) if numpy else ids.combine_chunks() if isinstance(ids, pa.ChunkedArray)
                               else ids)
    codes = to_numpy(enc.indices).astype(np.int64)
    return (codes, to_numpy(enc.dictionary).astype(ids.dtype)) if numpy else (codes, enc.dictionary)


def positions(labels: Any, wanted: Any) -> np.ndarray:
    """Where each of ``wanted`` stands in ``labels`` (distinct ids, integers or strings; numpy or Arrow
    arrays), -1 where it is not there: pandas' ``Index.get_indexer``, without pandas.

    >>> positions(np.array(["q1", "q2"], dtype=object), np.array(["q2", "q3"], dtype=object)).tolist()
    [1, -1]
    """
    if not len(labels) or not len(wanted):
        return np.full(len(wanted), -1, dtype=np.int64)
    found = index_in(from_numpy(wanted), from_numpy(labels))
    return to_numpy(found, null=-1).astype(np.int64)


def query_codes(run_q: Any, qrels_q: Any, run_counts: np.ndarray | None = None) -> QueryCodes:
    """Integer codes for the query ids of both tables; codes of run queries come first, in order of
    first appearance. A run grouped by query (each query's rows together) is coded without hashing.
    ``run_counts``: the rows of each group of the run when the caller knows them (a dict's rows come
    grouped by query); then no id is compared with the next."""
    n = len(run_q)
    codes = uniques = counts = None
    if n:
        if run_counts is not None and int(run_counts.sum()) == n and bool((run_counts > 0).all()):
            starts = np.concatenate(([0], np.cumsum(run_counts)[:-1]))
        else:
            starts = _group_starts(run_q)
        blocks = run_q[starts] if is_integer_ids(run_q) else _as_numpy(take(run_q, starts))
        if len(set(blocks.tolist())) == len(blocks):   # grouped by query: no hashing of every row
            counts = np.diff(np.append(starts, n))
            codes = np.repeat(np.arange(len(starts), dtype=np.int32), counts)
            uniques = np.asarray(blocks)
    if codes is None:   # codes in order of first appearance
        codes, uniques = id_codes(run_q)
        uniques = uniques if is_integer_ids(run_q) else _as_numpy(uniques)
    n_run = len(uniques)
    if is_integer_ids(qrels_q):
        qcodes = positions(uniques, qrels_q)
    else:
        value_set = from_numpy(uniques, type=qrels_q.type)
        qcodes = to_numpy(index_in(qrels_q, value_set), null=-1).astype(np.int64)
    unseen = qcodes < 0
    if unseen.any():
        extra_codes, extra = id_codes(qrels_q[unseen] if is_integer_ids(qrels_q) else compute("filter", qrels_q, from_numpy(unseen)))
        qcodes[unseen] = extra_codes + n_run
        uniques = np.concatenate([uniques, np.asarray(extra if is_integer_ids(qrels_q) else _as_numpy(extra),
                                                      dtype=uniques.dtype)])
    # run codes as int32 (a query code per row: half the memory); multiply them as int64
    return QueryCodes(codes.astype(np.int32, copy=False), qcodes.astype(np.int64, copy=False), uniques,
                      n_run, counts)


# ----------------------------------------------------------------------------------------- documents


def integer_codes(run_d: np.ndarray, qrels_d: np.ndarray, n_queries: int) -> DocCodes:
    """Integer ids as codes: shifted to start at 0 (a view when nothing changes, no copy of the run),
    or, when ``n_queries`` times their range would overflow composite keys (hashed ids, tweet ids),
    factorised jointly (exact, any int64 values)."""
    both = [a for a in (run_d, qrels_d) if len(a)]
    if not both:
        return DocCodes(run_d.astype(np.int64), qrels_d.astype(np.int64), 1)
    lo = min(int(a.min()) for a in both)
    hi = max(int(a.max()) for a in both)
    size = hi - lo + 1
    if max(n_queries, 1) * size < _KEY_LIMIT:
        def shifted(ids: np.ndarray) -> np.ndarray:
            return ids if lo == 0 else np.subtract(ids, lo)
        return DocCodes(shifted(run_d), shifted(qrels_d), size)
    codes, uniques = id_codes(np.concatenate([run_d, qrels_d]))
    n = len(run_d)
    return DocCodes(codes[:n].astype(np.int64), codes[n:].astype(np.int64), max(len(uniques), 1))


class SharedHashes:
    """The run's string hashes, computed on two threads: most rows on a worker thread from the start,
    the last ones by the caller when it asks for the result (after its own work in between).

    ``worker_share``: the part the worker hashes (1.0: all of it, for a caller that starts the hashes
    long before it needs them, e.g. the dict reader while it reads the scores). The result is given
    once (``taken`` then): its caller may turn the hashes into codes in place."""

    WORKER_SHARE = 0.75

    def __init__(self, ids: pa.Array, worker_share: float = WORKER_SHARE) -> None:
        self.ids = ids
        self.cut = int(len(ids) * worker_share)
        self.out = np.empty(len(ids), dtype=np.uint64)
        self.taken = False
        self.head = in_background(string_hashes, ids.slice(0, self.cut), self.out[:self.cut])

    def result(self) -> np.ndarray | None:
        if self.taken:
            raise RuntimeError("the hashes were taken already (and may have become codes)")
        self.taken = True
        tail = string_hashes(self.ids.slice(self.cut), self.out[self.cut:])
        head = self.head.result()
        return None if head is None or tail is None else self.out


def hashed_string_codes(run_hashes: SharedHashes, qrels_d: pa.Array, n_queries: int) -> DocCodes | None:
    """Codes of string ids from their 64-bit hashes, truncated so ``query * size + code`` fits int64,
    or None (too many queries for codes wide enough to make collisions rare, or unreadable buffers).

    Hashing reads every string once, straight from the Arrow buffers, with no hash table: about ten
    times faster than dictionary-encoding millions of distinct ids. Codes may collide (``hashed``).
    """
    bits = _code_bits(n_queries)
    if bits is None:
        return None
    hq = string_hashes(qrels_d)
    hr = run_hashes.result()
    if hq is None or hr is None:
        return None
    return DocCodes(_truncated(hr, bits), _truncated(hq, bits), 1 << bits, hashed=True)


def string_hash_codes(ids: pa.Array, n_queries: int) -> tuple[np.ndarray, int] | None:
    """(codes, size): the codes of :func:`hashed_string_codes` for one array of string ids (equal ids,
    equal codes; different ids may collide), or None where that function gives None."""
    bits = _code_bits(n_queries)
    hashes = string_hashes(ids) if bits is not None else None
    if bits is None or hashes is None:
        return None
    return _truncated(hashes, bits), 1 << bits


def _code_bits(n_queries: int) -> int | None:
    """Bits of a hashed code, so that ``query * 2**bits + code`` fits int64; None below 40 bits (too
    few to make collisions rare)."""
    bits = 62 - max(int(n_queries), 1).bit_length()
    return bits if bits >= 40 else None


def _truncated(hashes: np.ndarray, bits: int) -> np.ndarray:
    """The top ``bits`` of uint64 hashes as int64 codes, in place (the hashes become the codes)."""
    hashes >>= np.uint64(64 - bits)
    return hashes.view(np.int64)


def exact_string_codes(run_d: pa.Array, qrels_d: pa.Array, run_q: np.ndarray, find_repeats: bool = True
                       ) -> DocCodes:
    """Codes of string ids by Arrow dictionary encoding of the judged ids; run ids that no qrels row
    names get -1 (no hashing of millions of unjudged ids at once). Repeated (query, document) pairs of
    the run are searched on a worker thread, block by block (``duplicates``), unless ``find_repeats``
    is False (the caller knows there is none)."""
    duplicates = in_background(_duplicate_by_blocks, run_d, run_q) if len(run_q) and find_repeats else None
    if not len(qrels_d):
        return DocCodes(np.full(len(run_d), -1, dtype=np.int64), np.zeros(0, np.int64), 1, False,
                        duplicates=duplicates)
    encoded = compute("dictionary_encode", qrels_d)
    qcodes = to_numpy(encoded.indices).astype(np.int64)
    found = index_in(run_d, encoded.dictionary)
    rcodes = to_numpy(found, null=-1).astype(np.int64)
    size = max(len(encoded.dictionary), 1)
    del found, encoded
    _release_arrow_memory()
    return DocCodes(rcodes, qcodes, size, False, duplicates=duplicates)


def matches_equal(run_d: pa.Array, run_rows: np.ndarray, qrels_d: pa.Array, qrels_rows: np.ndarray) -> bool:
    """Whether the document ids of the matched rows are equal pairwise (hashed codes are verified)."""
    return bool(strings_equal(run_d, run_rows, qrels_d, qrels_rows))


# ----------------------------------------------------------------------------------------- repeats


def first_duplicate(keys: np.ndarray) -> int | None:
    """Index of the first entry whose key appeared before, or None (by a sort; increasing keys, as a
    table sorted by query and document gives them, are seen at once).

    >>> first_duplicate(np.array([5, 3, 9, 3, 5])), first_duplicate(np.array([3, 1, 2]))
    (3, None)
    """
    if len(keys) < 2 or bool((keys[1:] > keys[:-1]).all()):
        return None
    ordered = np.sort(keys)
    if not (ordered[1:] == ordered[:-1]).any():
        return None
    order = np.argsort(keys, kind="stable")   # equal keys in row order: each but the first repeats it
    repeats = order[1:][keys[order[1:]] == keys[order[:-1]]]
    return int(repeats.min())


def _duplicate_by_blocks(docs: pa.Array, rq: np.ndarray, block: int = 1 << 20) -> int | None:
    """First row repeating a (query, document) pair, encoding the documents one block of whole
    queries at a time (bounded memory). ``rq``: query code of each row."""
    perm = None if not np.any(rq[1:] < rq[:-1]) else np.argsort(rq, kind="stable")
    q = (rq if perm is None else rq[perm]).astype(np.int64)
    starts = np.concatenate(([0], np.flatnonzero(q[1:] != q[:-1]) + 1, [len(q)]))
    cuts = np.unique(starts[np.searchsorted(starts, np.arange(0, len(q), block))])
    cuts = np.append(cuts[cuts < len(q)], len(q))

    def first_in_block(a: int, b: int) -> int | None:
        chunk = docs.slice(a, b - a) if perm is None else take(docs, perm[a:b])
        encoded = compute("dictionary_encode", chunk)
        codes = to_numpy(encoded.indices).astype(np.int64)
        dup = first_duplicate((q[a:b] - q[a]) * len(encoded.dictionary) + codes)
        del encoded, chunk
        _release_arrow_memory()
        return None if dup is None else a + dup

    # blocks of whole queries, hashed on two threads (pyarrow releases the GIL)
    found = map_on_two_threads(first_in_block, cuts[:-1], cuts[1:])
    _release_arrow_memory()
    rows = [r for r in found if r is not None]
    if not rows:
        return None
    return int(min(rows) if perm is None else min(perm[r] for r in rows))


def _release_arrow_memory() -> None:
    """Give the memory pyarrow's allocator keeps after hashing back to the system."""
    release = getattr(pa.default_memory_pool(), "release_unused", None)
    if release is not None:
        release()


# --------------------------------------------------------------------------------------- trec order


def trec_order_key(docs: Any, rows: np.ndarray) -> np.ndarray | list[np.ndarray]:
    """A key ordering the ids ``docs[rows]`` as trec_eval compares them: as strings, byte by byte.

    An int64 array, or a list of uint64 words compared lexicographically (most significant first).
    Integer ids are ordered by their decimal strings (``"10" < "9"``), whatever dtype they came in.
    """
    if is_integer_ids(docs):
        key = decimal_string_key(docs[rows])
        if key is not None:
            return key
        docs = cast(from_numpy(docs), pa.large_string())   # over 16 digits: compare the strings
    words = string_sort_key(docs)
    if words is not None:   # byte order, as strcmp: the words, compared only inside ties
        ranked = []
        while words:   # each word of the rows freed once it is taken in ranked order (peak memory)
            ranked.append(np.take(words.pop(0), rows))
        return ranked
    by_name = to_numpy(compute("sort_indices", take(docs, rows)))
    rank = np.empty(len(rows), dtype=np.int64)
    rank[by_name] = np.arange(len(rows))
    return rank


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
