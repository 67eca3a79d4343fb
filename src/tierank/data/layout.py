"""How a run grouped by query is sorted: its rows laid out as a padded matrix, one row per query,
sorted row by row (no global sort), with small integer scores as 1- or 2-byte ranks (radix sort).

Every key transformation here is exact or not taken: two different scores never get equal keys,
equal scores never get different ones (checked by a round trip, not assumed).
"""

from __future__ import annotations

from typing import Callable

import numpy as np

from .ids import first_duplicate
from .ranked import concat_ranges

__all__ = ["SortKeys", "Blocks"]

_U32_PAD = 2 ** 32 - 1   # pads uint32 rows: no code


class SortKeys:
    """Keys that sort like ``-scores`` within rows, the value that pads rows (sorts last), and the
    score of each key (``hi - key`` for integer ranks, ``-key`` for floats)."""

    def __init__(self, keys: np.ndarray, pad: object, hi: float | None) -> None:
        self.keys, self.pad, self.hi = keys, pad, hi

    @classmethod
    def of(cls, scores: np.ndarray) -> "SortKeys":
        """Small integer scores (quantised scores, an LLM judge's grades) become uint8 or uint16 ranks:
        numpy sorts those by radix, several times faster than float64, and they take 1/8 or 1/4 of
        the memory. ``scores``: float64, or integers (taken as float64 would take them)."""
        if len(scores):
            lo, hi = scores.min(), scores.max()
            exact_ints = scores.dtype.kind in "iub" and -2 ** 53 < int(lo) and int(hi) < 2 ** 53
            finite = exact_ints or (np.isfinite(lo) and np.isfinite(hi))
            for dtype in (np.uint8, np.uint16) if finite else ():
                if float(hi) - float(lo) >= np.iinfo(dtype).max:
                    continue
                if exact_ints:   # hi - s in [0, max): computed modulo 2**bits, in the small type
                    small = np.subtract(dtype(int(hi) & np.iinfo(dtype).max), scores.astype(dtype))
                    return cls(small, np.iinfo(dtype).max, float(hi))
                # floats: taken only if every score comes back exactly from its rank (hi - rank == s),
                # so distinct scores keep distinct ranks (1.0 and 1e-20 would both round to rank 1)
                small = np.subtract(float(hi), scores, dtype=np.float64).astype(dtype)
                if np.array_equal(np.subtract(float(hi), small, dtype=np.float64), scores):
                    return cls(small, np.iinfo(dtype).max, float(hi))
                break
        return cls(-np.asarray(scores, dtype=np.float64), np.nan, None)   # NaN padding sorts last

    def ranked(self, order: np.ndarray) -> tuple[np.ndarray | None, np.ndarray | None, Callable | None]:
        """(keys, tie_keys, keys_fn) of :class:`RankedLists` for the items ``order``: the float scores;
        or, for integer ranks, the sorted ranks (they find the ties) and the scores on demand."""
        if self.hi is None:
            return -self.keys[order], None, None
        ranks = np.take(self.keys, order)
        return None, ranks, ScoresOfRanks(ranks, self.hi)


class ScoresOfRanks:
    """The scores of items from their integer ranks: ``hi - rank`` (exact: integer scores < 2**53)."""

    def __init__(self, ranks: np.ndarray, hi: float) -> None:
        self.ranks, self.hi = ranks, hi

    def __call__(self, items: np.ndarray) -> np.ndarray:
        return np.subtract(self.hi, self.ranks[items], dtype=np.float64)


class Blocks:
    """A run whose rows come grouped by query, laid out as a padded matrix: one row per block.

    Rows of block b are ``qptr[b]:qptr[b+1]``; row r sits at ``flat[r]`` of the (n_blocks, width)
    matrix (``flat`` is None when every block is full, so the matrix is a reshape).
    """

    def __init__(self, qptr: np.ndarray, width: int, flat: np.ndarray | None, block_code: np.ndarray) -> None:
        self.qptr, self.width, self.flat = qptr, width, flat
        self.block_code = block_code   # query code of each block

    @classmethod
    def find(cls, codes: np.ndarray, numbered: bool, counts: np.ndarray | None = None) -> "Blocks | None":
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
        table over every row). The codes are sorted as uint32 (half the memory of int64, a faster
        sort): as they are when below 2**32 - 1; wider codes (hashed string ids) by their low 32 bits,
        which equal codes share, and then only the blocks where two codes share them (or a code's low
        bits are the padding) are checked on the whole codes."""
        low = docs.astype(np.uint32)   # the codes, or the low 32 bits of wider ones (a cast wraps)
        at_pad = np.flatnonzero(low == _U32_PAD) if n_docs >= _U32_PAD else None
        suspect = self._rows_repeating(low)   # sorts ``low`` in place
        if at_pad is None:
            return bool(suspect.any())
        suspect[np.searchsorted(self.qptr, at_pad, side="right") - 1] = True
        return self._blocks_repeat(docs, np.flatnonzero(suspect), n_docs)

    def _rows_repeating(self, low: np.ndarray) -> np.ndarray:
        """Per block: whether two of its uint32 values are equal (``low`` is sorted in place when every
        block is full: not the caller's array)."""
        rows = self.matrix(low, _U32_PAD)
        rows.sort(axis=1)
        return ((rows[:, 1:] == rows[:, :-1]) & (rows[:, 1:] != _U32_PAD)).any(axis=1)

    def _blocks_repeat(self, docs: np.ndarray, blocks: np.ndarray, n_docs: int) -> bool:
        """Whether one of ``blocks`` holds a code of ``docs`` twice: a repeated ``block * n_docs + code``
        key (these fit int64, as the join's ``query * n_docs + code`` keys do)."""
        sizes = self.qptr[blocks + 1] - self.qptr[blocks]
        block = np.repeat(np.arange(len(blocks), dtype=np.int64), sizes)
        return first_duplicate(block * n_docs + docs[concat_ranges(self.qptr[blocks], sizes)]) is not None

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
