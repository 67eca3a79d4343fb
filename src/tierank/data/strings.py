"""Vectorised work on pyarrow string arrays, read straight from their buffers (no Python strings).

* :func:`string_hashes`: a 64-bit hash of every string. Equal strings get equal hashes; different
  strings almost always get different ones. The join uses hashes as document codes and checks every
  match it relies on against the strings themselves (a collision falls back to exact encoding), so a
  hash never decides a result on its own.
* :func:`strings_equal`: whether pairs of strings (row i of one array, row j of another) are equal.
* :func:`string_sort_key`: words of the strings, big-endian, whose lexicographic order is the byte
  order of the strings (``strcmp``, as trec_eval compares document ids).

All three read the strings 8 bytes at a time: one unaligned 64-bit load per string and word, through a
numpy view with a stride of one byte over the data buffer, so the loop runs over the few words of the
longest string, never over strings.
"""

from __future__ import annotations

import numpy as np

__all__ = ["string_buffers", "string_hashes", "string_sort_key", "strings_equal"]

# masks keeping the first b bytes of a little-endian 64-bit load, b = 0..8
_KEEP = np.array([(1 << (8 * b)) - 1 for b in range(9)], dtype=np.uint64)
_MUL = np.uint64(0x9E3779B97F4A7C15)
_FIN1 = np.uint64(0xBF58476D1CE4E5B9)
_FIN2 = np.uint64(0x94D049BB133111EB)


CHUNK = 1 << 16   # strings per block: bounds the temporaries of hashing and keys (cache-sized)


def string_buffers(arr) -> tuple[np.ndarray, np.ndarray] | None:
    """(data bytes, offsets) of a pyarrow string/binary array without nulls, or None.

    String ``i`` is ``data[offsets[i]:offsets[i+1]]``. ``string_view`` arrays are cast to
    ``large_string`` first. None for other types or with nulls.
    """
    import pyarrow as pa

    if isinstance(arr, pa.ChunkedArray):
        arr = arr.combine_chunks()
    if pa.types.is_string_view(arr.type) or pa.types.is_binary_view(arr.type):
        try:
            arr = arr.cast(pa.large_string() if pa.types.is_string_view(arr.type) else pa.large_binary())
        except pa.ArrowNotImplementedError:   # pyarrow < 17 cannot cast views: no buffers to read
            return None
    if arr.null_count:
        return None
    if pa.types.is_string(arr.type) or pa.types.is_binary(arr.type):
        off_type = np.int32
    elif pa.types.is_large_string(arr.type) or pa.types.is_large_binary(arr.type):
        off_type = np.int64
    else:
        return None
    n = len(arr)
    bufs = arr.buffers()
    offsets = np.frombuffer(bufs[1], dtype=off_type, count=n + 1,
                            offset=arr.offset * np.dtype(off_type).itemsize) if n else np.zeros(1, off_type)
    data = (np.frombuffer(bufs[2], dtype=np.uint8) if bufs[2] is not None and n
            else np.zeros(0, dtype=np.uint8))
    return data, offsets


def _chunks(offsets: np.ndarray):
    """Yield (slice, start, length) of blocks of CHUNK strings (int64 arrays)."""
    n = len(offsets) - 1
    for a in range(0, n, CHUNK):   # loop over blocks of CHUNK strings
        b = min(a + CHUNK, n)
        off = offsets[a:b + 1].astype(np.int64)
        yield slice(a, b), off[:-1], np.diff(off)


class _Loader:
    """Little-endian 64-bit loads at any byte position of a byte buffer (past the end reads zeros)."""

    def __init__(self, data: np.ndarray) -> None:
        self.size = len(data)
        # the unaligned view covers loads that stay inside the buffer; the last few go to a copy
        self.view = (np.ndarray(shape=(self.size - 7,), dtype="<u8", buffer=data, strides=(1,))
                     if self.size >= 8 else np.zeros(0, dtype="<u8"))
        self.tail_start = max(self.size - 8, 0)
        tail = np.zeros(32, dtype=np.uint8)
        tail[: self.size - self.tail_start] = data[self.tail_start:]
        self.tail = np.ndarray(shape=(25,), dtype="<u8", buffer=tail, strides=(1,))

    def load(self, pos: np.ndarray) -> np.ndarray:
        inside = pos < len(self.view)
        if inside.all():
            return self.view[pos]
        out = np.zeros(len(pos), dtype=np.uint64)
        out[inside] = self.view[pos[inside]]
        rest = np.minimum(pos[~inside], self.size) - self.tail_start
        out[~inside] = self.tail[rest]
        return out


def _word(loader: _Loader, start: np.ndarray, length: np.ndarray, w: int, shortest: int) -> np.ndarray:
    """Word w (little-endian) of each string, bytes past the string's end zeroed."""
    word = loader.load(start + 8 * w if w else start)
    if shortest < 8 * (w + 1):   # some string ends inside this word: zero the bytes past its end
        word &= _KEEP[np.clip(length - 8 * w, 0, 8)]
    return word


def _words(loader: _Loader, start: np.ndarray, length: np.ndarray):
    """Yield (w, word w of each string) for the words of the longest string."""
    n_words = int((int(length.max()) + 7) // 8) if len(length) else 0
    shortest = int(length.min()) if len(length) else 0
    for w in range(n_words):   # loop over the 8-byte words of the longest string
        yield w, _word(loader, start, length, w, shortest)


def string_hashes(arr, out: np.ndarray | None = None) -> np.ndarray | None:
    """64-bit hashes (uint64) of the strings of a pyarrow array; None if it is not a string array.

    Each 8-byte word of the string is folded in with a multiply-xorshift step, the length seeds the
    state, and a splitmix64 finaliser spreads the bits (the high bits are used as truncated codes).
    A string's hash depends on its bytes only, not on the other strings of the array. ``out``: a
    uint64 array to write the hashes into (returned).

    >>> import pyarrow as pa
    >>> h = string_hashes(pa.array(["d1", "d10", "d1", "a much longer document id", ""]))
    >>> bool(h[0] == h[2]), len(set(h.tolist()))
    (True, 4)
    """
    bufs = string_buffers(arr)
    if bufs is None:
        return None
    data, offsets = bufs
    loader = _Loader(data)
    if out is None:
        out = np.empty(len(offsets) - 1, dtype=np.uint64)
    for part, start, length in _chunks(offsets):
        out[part] = _hash_chunk(loader, start, length)
    return out


def _hash_chunk(loader: _Loader, start: np.ndarray, length: np.ndarray) -> np.ndarray:
    h = length.astype(np.uint64) * _MUL
    shortest = int(length.min()) if len(length) else 0
    for w, word in _words(loader, start, length):
        # a string's hash must not depend on the others: words past its end leave it unchanged
        word ^= h
        word *= _MUL
        word ^= word >> np.uint64(32)
        if shortest > 8 * w:
            h = word
        else:
            np.copyto(h, word, where=length > 8 * w)
    h ^= h >> np.uint64(30)
    h *= _FIN1
    h ^= h >> np.uint64(27)
    h *= _FIN2
    h ^= h >> np.uint64(31)
    return h


def string_sort_key(arr) -> list[np.ndarray] | None:
    """Keys whose lexicographic order (first array most significant) is the byte order of the strings.

    One uint64 array per 8-byte word, big-endian, bytes past the end zero; then the lengths (a prefix
    sorts first), folded into the last byte of the last word when no string reaches it. Pass
    ``keys[::-1]`` to ``np.lexsort``. None if not a string array.

    >>> import pyarrow as pa
    >>> ids = pa.array(["d10", "d9", "d1", "c", "d1x", "d"])
    >>> keys = string_sort_key(ids)
    >>> [ids[int(i)].as_py() for i in np.lexsort(keys[::-1])]
    ['c', 'd', 'd1', 'd10', 'd1x', 'd9']
    """
    bufs = string_buffers(arr)
    if bufs is None:
        return None
    data, offsets = bufs
    loader = _Loader(data)
    lengths = np.diff(offsets)
    longest = int(lengths.max()) if len(lengths) else 0
    n_words = (longest + 7) // 8
    fold = 0 < longest < min(8 * n_words, 256)   # the last byte of the last word is always zero
    keys = [np.empty(len(lengths), dtype=np.uint64) for _ in range(n_words + (not fold))]
    del lengths
    for part, start, length in _chunks(offsets):
        for w, word in _words(loader, start, length):
            keys[w][part] = word.byteswap()
        for w in range(int((int(length.max()) + 7) // 8), n_words):   # words no string here reaches
            keys[w][part] = 0
        if fold:
            keys[-1][part] |= length.astype(np.uint64)
        else:
            keys[-1][part] = length
    return keys


def strings_equal(a, rows_a: np.ndarray, b, rows_b: np.ndarray) -> bool | None:
    """Whether string ``rows_a[i]`` of ``a`` equals string ``rows_b[i]`` of ``b`` for every i.

    None if either is not a string array. Compares lengths, then 8-byte words, in blocks of pairs.

    >>> import pyarrow as pa
    >>> a, b = pa.array(["x", "d10", "d1"]), pa.array(["d1", "d10"])
    >>> strings_equal(a, np.array([1, 2]), b, np.array([1, 0])), strings_equal(a, np.array([0]), b, np.array([0]))
    (True, False)
    """
    bufs_a, bufs_b = string_buffers(a), string_buffers(b)
    if bufs_a is None or bufs_b is None:
        return None
    (data_a, off_a), (data_b, off_b) = bufs_a, bufs_b
    load_a, load_b = _Loader(data_a), _Loader(data_b)
    for c in range(0, len(rows_a), CHUNK):   # loop over blocks of CHUNK pairs
        ra, rb = rows_a[c:c + CHUNK], rows_b[c:c + CHUNK]
        start_a, start_b = off_a[ra].astype(np.int64), off_b[rb].astype(np.int64)
        length = off_a[ra + 1] - start_a
        if not np.array_equal(length, off_b[rb + 1] - start_b):
            return False
        shortest = int(length.min()) if len(length) else 0
        for w, word in _words(load_a, start_a, length):
            if not np.array_equal(word, _word(load_b, start_b, length, w, shortest)):
                return False
    return True
