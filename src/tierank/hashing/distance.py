"""Hamming distances by XOR and popcount (``np.bitwise_count``) on packed ``uint64`` words, in blocks.

Memory stays bounded whatever the sizes: distances are produced one tile of ``(query rows, database
columns)`` at a time into reused buffers, and whole rows (every database item of a block of queries) only
where a caller asks for them.
"""

from __future__ import annotations

from typing import Any, Iterator

import numpy as np

from ..errors import InputError
from .codes import check_pair

__all__ = ["hamming_distances", "distance_blocks", "block_distances", "distance_dtype", "TileBuffers",
           "tile_distances", "popcount_pairs"]

#: pairs per tile of the tiled loops (query rows x database columns): the tile's buffers stay in L2 cache
TILE_PAIRS = 1 << 17


def distance_dtype(bits: int) -> type:
    """The smallest unsigned dtype that holds distances 0..bits."""
    return np.uint8 if bits <= 255 else (np.uint16 if bits <= 65535 else np.uint32)


class TileBuffers:
    """Scratch arrays reused by :func:`tile_distances` (one allocation for the whole loop)."""

    def __init__(self, rows: int, cols: int, bits: int) -> None:
        self.xor = np.empty(rows * cols, dtype=np.uint64)
        self.count = np.empty(rows * cols, dtype=np.uint8)
        self.dist = np.empty(rows * cols, dtype=distance_dtype(bits))

    def view(self, arr: np.ndarray, rows: int, cols: int) -> np.ndarray:
        return arr[:rows * cols].reshape(rows, cols)


def tile_distances(qwords: np.ndarray, dwords: np.ndarray, buf: TileBuffers,
                   out: np.ndarray | None = None) -> np.ndarray:
    """Hamming distances of every row of ``qwords`` (B, W) to every row of ``dwords`` (C, W): (B, C).

    The result is a view of ``buf`` (overwritten by the next call) unless ``out`` is given.
    """
    rows, cols = qwords.shape[0], dwords.shape[0]
    dist = out if out is not None else buf.view(buf.dist, rows, cols)
    return popcount_pairs(np.bitwise_xor, qwords, dwords, buf.view(buf.xor, rows, cols),
                          buf.view(buf.count, rows, cols), dist)


def popcount_pairs(op: np.ufunc, qwords: np.ndarray, dwords: np.ndarray, scratch: np.ndarray,
                   count: np.ndarray, out: np.ndarray) -> np.ndarray:
    """``out[i, j] = Σ_w popcount(op(qwords[i, w], dwords[j, w]))`` for uint64 words, into ``out``.

    ``op`` is ``np.bitwise_xor`` (Hamming distance) or ``np.bitwise_and`` (shared labels); ``scratch``
    (uint64) and ``count`` (uint8) are reused buffers shaped like ``out``.
    """
    n_words = qwords.shape[1]
    for w in range(n_words):  # loop over the words of a code
        op(qwords[:, w, None], dwords[None, :, w], out=scratch)
        if w == 0 and out.dtype == np.uint8:
            np.bitwise_count(scratch, out=out)
            continue
        np.bitwise_count(scratch, out=count)
        if w == 0:
            out[...] = count
        else:
            np.add(out, count, out=out, casting="unsafe")
    return out


def _rows_per_block(n_cols: int, itemsize: int, memory: int) -> int:
    return max(1, memory // max(1, n_cols * itemsize))


def distance_blocks(query_codes: Any, db_codes: Any, *, packed: bool = False, bits: int | None = None,
                    block_size: int | None = None, memory: int = 256 << 20
                    ) -> Iterator[tuple[slice, np.ndarray]]:
    """Yield ``(query slice, distances)`` blocks: the Hamming distances of a block of queries to every
    database code, shape ``(block rows, n_db)``, smallest sufficient unsigned dtype.

    Parameters
    ----------
    query_codes, db_codes : array-like
        Codes in any accepted format (see :mod:`tierank.hashing.codes`): ``{0, 1}``, ``{-1, +1}`` or
        boolean of shape ``(n, bits)``, or with ``packed=True`` uint8 / uint64 words.
    packed : bool, default=False
    bits : int, optional
        Code length of packed codes whose last word is partial.
    block_size : int, optional
        Queries per block; default: as many as fit in ``memory`` bytes of distances.
    memory : int, default=256 MiB

    Examples
    --------
    >>> from tierank.hashing import distance_blocks
    >>> q = [[0, 0, 1, 1], [1, 1, 1, 1]]
    >>> db = [[0, 0, 1, 1], [0, 1, 1, 0], [1, 1, 0, 0]]
    >>> for rows, dist in distance_blocks(q, db, block_size=1):
    ...     print(rows, dist)
    slice(0, 1, None) [[0 2 4]]
    slice(1, 2, None) [[2 2 2]]
    """
    qw, dw, nbits = check_pair(query_codes, db_codes, packed=packed, bits=bits)
    yield from _blocks(qw, dw, nbits, block_size, memory)


def _blocks(qw: np.ndarray, dw: np.ndarray, nbits: int, block_size: int | None,
            memory: int) -> Iterator[tuple[slice, np.ndarray]]:
    n_q, n_db = qw.shape[0], dw.shape[0]
    dt = distance_dtype(nbits)
    if block_size is not None and (isinstance(block_size, bool) or not isinstance(block_size, (int, np.integer))
                                   or block_size < 1):
        raise InputError(f"block_size must be a positive integer, got {block_size!r}")
    step = block_size if block_size is not None else _rows_per_block(n_db, np.dtype(dt).itemsize, memory)
    step = max(1, min(int(step), n_q))
    for start in range(0, n_q, step):  # loop over query blocks
        stop = min(start + step, n_q)
        yield slice(start, stop), block_distances(qw[start:stop], dw, nbits)


def block_distances(qw: np.ndarray, dw: np.ndarray, nbits: int) -> np.ndarray:
    """Distances of a block of queries to the whole database, (B, n_db), computed tile by tile."""
    n_rows, n_db = qw.shape[0], dw.shape[0]
    out = np.empty((n_rows, n_db), dtype=distance_dtype(nbits))
    rows = max(1, min(n_rows, 16))
    cols = max(1, min(n_db, TILE_PAIRS // rows))
    buf = TileBuffers(rows, cols, nbits)
    for r0 in range(0, n_rows, rows):          # loop over tiles of query rows ...
        r1 = min(r0 + rows, n_rows)
        for c0 in range(0, n_db, cols):        # ... and of database columns
            c1 = min(c0 + cols, n_db)
            tile_distances(qw[r0:r1], dw[c0:c1], buf, out=out[r0:r1, c0:c1])
    return out


def hamming_distances(query_codes: Any, db_codes: Any, *, packed: bool = False,
                      bits: int | None = None) -> np.ndarray:
    """The full Hamming distance matrix, shape ``(n_queries, n_db)`` (for small inputs; see
    :func:`distance_blocks` for large ones).

    Examples
    --------
    >>> from tierank.hashing import hamming_distances
    >>> hamming_distances([[1, -1, 1]], [[1, 1, 1], [-1, 1, -1]])
    array([[1, 3]], dtype=uint8)
    >>> hamming_distances([[True, False, True]], [[1, 1, 1], [0, 1, 0]])
    array([[1, 3]], dtype=uint8)
    """
    qw, dw, nbits = check_pair(query_codes, db_codes, packed=packed, bits=bits)
    return block_distances(qw, dw, nbits)
