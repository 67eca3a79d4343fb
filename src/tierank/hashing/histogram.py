"""Per-query histograms of (Hamming distance, grade level): tie statistics with no sort at all.

For a block of queries, ``counts[q, d, l]`` is the number of database items at distance ``d`` from query
``q`` whose grade is ``levels[l]``. It is built tile by tile with one ``np.bincount`` over
``q * (bits + 1) * L + d * L + l`` per tile; histograms of database tiles (or shards) simply add up.
Distances are the bins, best (0) first, so :meth:`TieStats.from_histogram` turns the counts into the tie
statistics every measure needs (ERR and graded bounds included): a tie is all the items at one distance.
"""

from __future__ import annotations

import numpy as np

from ..ties.groups import TieStats
from .distance import TILE_PAIRS, TileBuffers, tile_distances
from .labels import BlockGrades

__all__ = ["block_histogram", "apply_threshold", "histogram_stats"]


def block_histogram(qw: np.ndarray, dw: np.ndarray, bits: int, grades: BlockGrades) -> np.ndarray:
    """``counts[q, d, l]`` for the queries ``qw`` (B, W) against the whole database ``dw`` (n_db, W).

    Parameters
    ----------
    qw, dw : uint64 arrays of packed codes (see :func:`tierank.hashing.codes.as_words`)
    bits : int, code length (distances are 0..bits)
    grades : BlockGrades of this block of queries

    Returns
    -------
    int64 array of shape (B, bits + 1, len(grades.levels))

    Notes
    -----
    Per tile of (rows x columns) pairs: distances (uint8), level indices, and the bin of every pair
    ``row * cells + distance * L + level`` computed in uint16 when a tile's bins fit (the usual case:
    16 rows x 65 distances x 2 levels), copied to intp and counted by one ``np.bincount``.
    """
    n_rows, n_db = qw.shape[0], dw.shape[0]
    n_bins, n_lev = bits + 1, len(grades.levels)
    cells = n_bins * n_lev
    narrow = cells <= 65536
    rows = max(1, min(n_rows, 16, 65536 // cells if narrow else 16))
    cols = max(1, min(n_db, TILE_PAIRS // rows))
    buf = TileBuffers(rows, cols, bits)
    code_dtype = np.uint16 if narrow else np.intp
    code_buf = np.empty(rows * cols, dtype=code_dtype)
    idx_buf = np.empty(rows * cols, dtype=np.intp) if narrow else code_buf
    counts = np.zeros(n_rows * cells, dtype=np.int64)
    for r0 in range(0, n_rows, rows):          # loop over tiles of query rows ...
        r1 = min(r0 + rows, n_rows)
        nr = r1 - r0
        offset = (np.arange(nr) * cells).astype(code_dtype)[:, None]
        acc = np.zeros(nr * cells, dtype=np.int64)
        for c0 in range(0, n_db, cols):        # ... and of database columns
            c1 = min(c0 + cols, n_db)
            nc = c1 - c0
            dist = tile_distances(qw[r0:r1], dw[c0:c1], buf)
            code = code_buf[:nr * nc].reshape(nr, nc)
            if n_lev == 1:
                np.add(dist, offset, out=code, dtype=code_dtype, casting="unsafe")
            else:
                lev = grades.level_tile(slice(r0, r1), slice(c0, c1))
                np.multiply(dist, n_lev, out=code, dtype=code_dtype, casting="unsafe")
                np.add(code, lev, out=code, dtype=code_dtype, casting="unsafe")
                np.add(code, offset, out=code, dtype=code_dtype, casting="unsafe")
            idx = idx_buf[:nr * nc]
            if narrow:
                np.copyto(idx, code.ravel(), casting="unsafe")
            acc += np.bincount(idx, minlength=nr * cells)
        counts[r0 * cells:r1 * cells] = acc
    return counts.reshape(n_rows, n_bins, n_lev)


def apply_threshold(counts: np.ndarray, zero: int, threshold: float | None) -> np.ndarray:
    """Items farther than ``threshold`` keep their place in the ranking but get grade 0 (a copy)."""
    if threshold is None:
        return counts
    first_out = int(np.floor(threshold)) + 1          # distances >= first_out are beyond the threshold
    first_out = max(first_out, 0)
    if first_out >= counts.shape[1]:
        return counts
    out = counts.copy()
    beyond = out[:, first_out:, :]
    moved = beyond.sum(axis=2)
    beyond[...] = 0
    beyond[:, :, zero] = moved
    return out


def histogram_stats(counts: np.ndarray, levels: np.ndarray, judged_counts: np.ndarray | None = None
                    ) -> TieStats:
    """Tie statistics from ``counts[q, d, l]``; the judged set of a query is its whole database row.

    ``judged_counts`` (same shape) gives the judged grades when they differ from the ranked ones (the
    ``distance_threshold`` of :func:`tierank.evaluate_codes`: R and the ideal DCG keep the true grades).
    """
    return TieStats.from_histogram(counts, levels, judged_counts)
