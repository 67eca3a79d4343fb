"""Exact similarity scores of embeddings, tile by tile: the keys the block loop ranks.

Every key is exact, so two items tie exactly when their scores are equal in the chosen precision and
never because of a kernel's summation order (docs/maths.md, "Exact scores of embeddings"):

* **integers** (``int8``, ``uint8``, dot): the integer dot product, int64. It is a float32 GEMM when that is
  provably exact (``dim * max|a| * max|b| <= 2**24``: every partial sum is an integer float32 holds),
  else a float64 GEMM (exact below ``2**53``).
* **bits** (``binary``, ``ubinary``): minus the Hamming distance (XOR and popcount,
  ``tierank.hashing.distance``). Dot and cosine of the +-1 vectors the bits stand for are
  ``nbits - 2 * hamming`` and that over ``nbits``: the same order, so the same key.
* **integer cosine**: ``dot / |c|`` orders a query's items as the cosine does (``|q|`` is one constant
  per query). It is compared exactly: as ``sign(dot) * dot**2 / |c|**2``, a rational of integers, where
  the float64 quotient ``dot / sqrt(|c|**2)`` (relative error below ``2.01 * 2**-53``) cannot tell
  two items apart; the key of a row is the rank of its exact value among the row's distinct values.
* **floats** (``float32``, ``float16``, ``bfloat16``, and float queries against an integer or binary
  corpus): one rounding of the exact sum to the precision. Products of two such values are exact in
  float64 (at most 24 + 24 significant bits), so the float64 GEMM ``s~`` errs by at most
  ``gamma_dim * sum|q_i c_i| <= gamma_dim * |q| |c|`` (any summation order; ``gamma_n = n u / (1 - n u)``,
  ``u = 2**-53``; doubled here for the rounding of the bound itself). Where rounding ``s~ - E`` and
  ``s~ + E`` to the precision gives the same value, it is the correctly rounded exact sum (rounding is
  monotone); the rare other pairs are summed exactly (fractions) and rounded once.
  Cosine: each vector is divided by its float64 norm and rounded to the precision, then the same.
"""

from __future__ import annotations

import math
from fractions import Fraction
from typing import Any, Callable

import numpy as np

from ..errors import InputError
from ..hashing.distance import block_distances
from .quantize import FLOAT_FORMATS, Encoded, round_significand

__all__ = ["Scorer", "ratio_ranks", "round_fraction", "exact_dot"]

_U = 2.0 ** -53
#: columns per tile of the float path (its float64 tiles stay a few MB per query row)
_TILE_COLS = 1 << 14


def round_fraction(s: Fraction, precision: str) -> float:
    """The exact rational ``s`` rounded once, to nearest even, to ``precision``, as a float.

    >>> round_fraction(Fraction(1) + Fraction(1, 2 ** 24), "float32"), round_fraction(Fraction(1, 3), "bfloat16")
    (1.0, 0.333984375)
    """
    bits, emin, fmax = FLOAT_FORMATS[precision]
    if s == 0:
        return 0.0
    a = abs(s)
    e = a.numerator.bit_length() - a.denominator.bit_length()   # 2**e <= a < 2**(e+1), or one less
    if Fraction(2) ** e > a:
        e -= 1
    qexp = max(e - bits + 1, emin)
    n = round(a / Fraction(2) ** qexp)                          # half to even
    r = n * Fraction(2) ** qexp
    out = math.inf if r > fmax else float(r)
    return out if s > 0 else -out


def exact_dot(q: np.ndarray, c: np.ndarray) -> Fraction:
    """The exact dot product of two float64 vectors, as a fraction.

    Each value is ``m * 2**e`` with ``m`` an integer of at most 53 bits (``np.frexp``, scaled), so each
    product is the integer ``m_q * m_c`` at the exponent ``e_q + e_c``: the sum is one Python integer over
    the smallest exponent (no rational arithmetic per term, 20-50x faster than summing Fractions).

    >>> exact_dot(np.array([0.1, 3.0]), np.array([0.1, -1.0])) == Fraction(0.1) ** 2 - 3
    True
    """
    keep = (q != 0) & (c != 0)
    mq, eq = np.frexp(q[keep])
    mc, ec = np.frexp(c[keep])
    if not len(mq):
        return Fraction(0)
    nq = (mq * 2.0 ** 53).astype(np.int64).tolist()     # |mq| in [0.5, 1) with 53 bits: exact integers
    nc = (mc * 2.0 ** 53).astype(np.int64).tolist()
    exps = (eq.astype(np.int64) + ec - 106).tolist()
    e0 = min(exps)
    total = sum((a * b) << (e - e0) for a, b, e in zip(nq, nc, exps))
    return Fraction(total, 1 << -e0) if e0 < 0 else Fraction(total << e0)


def ratio_ranks(dot: np.ndarray, norm2: np.ndarray) -> np.ndarray:
    """Exact order keys of ``dot / sqrt(norm2)`` (int64 arrays of one row; ``norm2 == 0`` counts as 0):
    the dense rank of each item's exact value, higher = larger.

    >>> ratio_ranks(np.array([3, 6, -1, 0, 1]), np.array([1, 4, 1, 0, 1])).tolist()
    [3, 3, 0, 1, 2]
    """
    d = dot.astype(np.float64)
    n = norm2.astype(np.float64)
    with np.errstate(invalid="ignore", divide="ignore"):
        f = np.where(norm2 > 0, d / np.sqrt(n), 0.0)
    order = np.argsort(f, kind="stable")
    fs = f[order]
    # consecutive values farther apart than both errors are ordered by their floats
    near = np.abs(np.diff(fs)) <= 8 * _U * np.maximum(np.abs(fs[1:]), np.abs(fs[:-1]))
    rank = np.zeros(len(f), dtype=np.int64)
    if len(f) == 0:
        return rank
    step = np.ones(len(f) - 1, dtype=np.int64)       # rank increments between consecutive sorted items
    if near.any():
        starts = np.flatnonzero(near & ~np.concatenate(([False], near[:-1])))
        for s in starts:                             # loop over the runs of items too close for floats
            e = s + 1
            while e < len(near) and near[e]:
                e += 1
            idx = order[s:e + 1]                     # the run: sorted items s..e
            exact = [Fraction(int(np.sign(dot[i])) * int(dot[i]) ** 2, int(norm2[i])) if norm2[i] else Fraction(0)
                     for i in idx]
            perm = sorted(range(len(idx)), key=exact.__getitem__)
            order[s:e + 1] = idx[perm]
            ex = [exact[p] for p in perm]
            step[s:e] = [int(ex[j + 1] != ex[j]) for j in range(len(ex) - 1)]
    rank[order[1:]] = np.cumsum(step)
    return rank


def _max_abs(x: np.ndarray) -> int:
    return max(abs(int(x.max())), abs(int(x.min())))


class Scorer:
    """Exact keys (higher is better) of queries against a corpus, both ``tierank.embeddings.quantize.Encoded``.

    ``mode``: ``"bits"`` (minus Hamming distance, int64), ``"int"`` (integer dot, int64), ``"ratio"``
    (integer cosine: exact ranks per row, int64) or ``"float"`` (rounded exact dot, float64).
    ``precision``: the float precision of ``"float"`` scores.
    """

    def __init__(self, queries: Encoded, corpus: Encoded, similarity: str) -> None:
        self.q, self.c, self.similarity = queries, corpus, similarity
        self.n_queries, self.n_corpus = queries.values.shape[0], corpus.values.shape[0]
        qk, ck = queries.kind, corpus.kind
        if similarity == "hamming" and (qk != "bits" or ck != "bits"):
            raise InputError("similarity='hamming' needs binary embeddings on both sides (precision 'binary' or "
                             f"'ubinary'); got queries in {queries.precision!r}, corpus in {corpus.precision!r}")
        if qk == "bits" and ck == "bits":
            if queries.nbits != corpus.nbits:
                raise InputError(f"queries have {queries.nbits} bits, the corpus {corpus.nbits}")
            self.mode = "bits"
            self._bits_dtype = np.int16 if queries.nbits < 2 ** 15 else np.int64
        elif qk == "int" and ck == "int":
            self._check_dim()
            self.mode = "ratio" if similarity == "cosine" else "int"
            qa, ca = _max_abs(queries.values), _max_abs(corpus.values)
            dim = queries.values.shape[1]
            # every partial sum of a GEMM is an integer of magnitude <= dim * qa * ca: float32 holds them
            # all exactly up to 2**24 (int8 at dim 384: 384 * 128 * 128 < 2**23; uint8: 384 * 255 * 255 > 2**24)
            self._gemm = np.float32 if dim * qa * ca <= 2 ** 24 else np.float64
            self._cnorm2 = None
            if self.mode == "ratio":
                self._cnorm2 = np.concatenate([np.einsum("ij,ij->i", *(corpus.values[s:s + 65536].astype(np.int64),) * 2)
                                               for s in range(0, self.n_corpus, 65536)])
        elif qk == "float":
            if ck == "bits":
                if queries.values.shape[1] > corpus.nbits or queries.values.shape[1] <= corpus.nbits - 8:
                    raise InputError(f"queries have {queries.values.shape[1]} dimensions, the binary corpus "
                                     f"{corpus.nbits} bits")
                self._dim = queries.values.shape[1]
            else:
                self._check_dim()
            self.mode = "float"
            self.precision = queries.precision
            self._prepare_float()
        else:
            raise InputError(f"queries in {queries.precision!r} against a corpus in {corpus.precision!r}: "
                             "give the queries in the corpus's precision, or float queries (query_precision)")
        self.dtype = np.float64 if self.mode == "float" else np.int64

    def _check_dim(self) -> None:
        if self.q.values.shape[1] != self.c.values.shape[1]:
            raise InputError(f"queries have {self.q.values.shape[1]} dimensions, the corpus {self.c.values.shape[1]}")

    # -- floats -------------------------------------------------------------------------------------
    def _prepare_float(self) -> None:
        q = self.q.values
        if self.similarity == "cosine":
            q = self._normalise(q)
        self._qf = q
        self._qnorm = self._norm_up(q)

    def _normalise(self, x: np.ndarray) -> np.ndarray:
        """Each row divided by its float64 norm, rounded to the precision (zero rows stay zero)."""
        norm = np.sqrt(np.einsum("ij,ij->i", x, x))
        with np.errstate(invalid="ignore", divide="ignore"):
            y = np.where(norm[:, None] > 0, x / norm[:, None], 0.0)
        return round_significand(y, self.precision)

    @staticmethod
    def _norm_up(x: np.ndarray) -> np.ndarray:
        """Euclidean norms, rounded up enough to bound the true ones."""
        dim = x.shape[1]
        return np.sqrt(np.einsum("ij,ij->i", x, x)) * (1 + (dim + 4) * _U)

    def _corpus_float(self, cols: slice) -> np.ndarray:
        """Corpus rows ``cols`` as float64 values of the score's precision (cosine: normalised)."""
        c = self.c
        if c.kind == "bits":
            x = np.unpackbits(c.values[cols], axis=1)[:, :self._dim].astype(np.float64)
        elif c.kind == "int":
            x = c.values[cols].astype(np.float64)
        else:
            x = c.values[cols]
        return self._normalise(x) if self.similarity == "cosine" else x

    def _round_exact(self, s: np.ndarray, qnorm: np.ndarray, cnorm: np.ndarray, dim: int,
                     exact: "Callable[[int], Fraction]", pair: "Callable[[int], tuple[int, int]]") -> np.ndarray:
        """The float64 sums ``s`` of exact products rounded to the precision, each exactly the correctly
        rounded exact sum: where the error bound leaves two candidates, ``exact(flat index)`` decides.
        A score beyond the precision's range (it would round to infinity, and infinities tie) is an
        InputError naming its ``pair(flat index)``: (query row, corpus row)."""
        gamma = dim * _U / (1 - dim * _U)
        bound = 2 * gamma * qnorm * cnorm
        lo = np.nextafter(s - bound, -np.inf)
        hi = np.nextafter(s + bound, np.inf)
        if self.precision == "float32":
            with np.errstate(over="ignore"):
                r_lo, r_hi = lo.astype(np.float32), hi.astype(np.float32)
                out = s.astype(np.float32).astype(np.float64)
        else:
            r_lo, r_hi = round_significand(lo, self.precision), round_significand(hi, self.precision)
            out = round_significand(s, self.precision)
        hard = np.flatnonzero(r_lo != r_hi)
        if len(hard):   # the float64 sum is too close to a rounding boundary: sum exactly, round once
            flat = out.reshape(-1)
            for i in hard:
                flat[i] = round_fraction(exact(int(i)), self.precision)
        overflow = np.flatnonzero(~np.isfinite(out))
        if len(overflow):
            q, c = pair(int(overflow[0]))
            raise InputError(f"the {self.precision} score of query row {q} and corpus row {c} is beyond "
                             f"{self.precision}'s range: scale the embeddings or choose a wider precision")
        return out

    def _float_tile(self, rows: slice, cols: slice) -> np.ndarray:
        q = self._qf[rows]
        c = self._corpus_float(cols)
        n_c = c.shape[0]
        return self._round_exact(q @ c.T, self._qnorm[rows][:, None], self._norm_up(c)[None, :], q.shape[1],
                                 lambda i: exact_dot(q[i // n_c], c[i % n_c]),
                                 lambda i: (rows.start + i // n_c, cols.start + i % n_c))

    def pair_keys(self, q_idx: np.ndarray, c_idx: np.ndarray) -> np.ndarray:
        """The keys of the pairs ``(q_idx[i], c_idx[i])``: the same values :meth:`tile` gives them."""
        if self.mode == "bits":
            x = np.bitwise_xor(self.q.words[q_idx], self.c.words[c_idx])
            return -np.bitwise_count(x).sum(axis=1, dtype=np.int64).astype(self._bits_dtype)
        if self.mode in ("int", "ratio"):
            g = self._gemm
            # exact in any order: every partial sum is an integer within the dtype's exact range
            return np.einsum("ij,ij->i", self.q.values[q_idx].astype(g), self.c.values[c_idx].astype(g))
        q = self._qf[q_idx]
        c = np.concatenate([self._corpus_float(slice(int(j), int(j) + 1)) for j in c_idx]) if len(c_idx) \
            else np.zeros((0, q.shape[1]))
        return self._round_exact(np.einsum("ij,ij->i", q, c), self._qnorm[q_idx], self._norm_up(c), q.shape[1],
                                 lambda i: exact_dot(q[i], c[i]), lambda i: (int(q_idx[i]), int(c_idx[i])))

    # -- tiles and rows -----------------------------------------------------------------------------
    def tile(self, rows: slice, cols: slice) -> np.ndarray:
        """Keys of queries ``rows`` x corpus items ``cols``: exact values, in the dtype they come in (int16
        or int64 minus Hamming distances; integer dot products as float32 / float64 integers; float64 scores).
        ``"ratio"``: the integer dot products (:meth:`row_keys` ranks them)."""
        if self.mode == "bits":   # minus the distance, int16 (distances are at most 65535 bits here)
            return -block_distances(self.q.words[rows], self.c.words[cols], self.q.nbits).astype(self._bits_dtype)
        if self.mode in ("int", "ratio"):   # integers held exactly by the GEMM's float dtype
            g = self._gemm
            return self.q.values[rows].astype(g) @ self.c.values[cols].astype(g).T
        return self._float_tile(rows, cols)

    # -- keys that floats approximate (the integer cosine) -------------------------------------------
    def slack(self, rows: slice) -> np.ndarray | None:
        """Per query, how close two :meth:`approx` keys may be and still be in the wrong order (None:
        the keys are exact). The integer cosine's ``d / sqrt(|c|^2)`` is at most ``|q|`` in size and errs
        by less than ``2.01 * 2**-53`` of it: twice that, and twice again for safety."""
        if self.mode != "ratio":
            return None
        q = self.q.values[rows].astype(np.float64)
        return 8 * _U * np.sqrt(np.einsum("ij,ij->i", q, q)) + 1e-300

    def approx(self, raw: np.ndarray, cols: Any) -> np.ndarray:
        """Keys from :meth:`tile` or :meth:`pair_keys` output (``cols``: their corpus items): the same
        (exact) but for the integer cosine, whose keys are the floats ``d / sqrt(|c|^2)``."""
        if self.mode != "ratio":
            return raw
        assert self._cnorm2 is not None
        n = self._cnorm2[cols].astype(np.float64)
        with np.errstate(invalid="ignore", divide="ignore"):
            return np.where(n > 0, raw / np.sqrt(n), 0.0)

    def exact_values(self, raw: np.ndarray, cols: np.ndarray) -> list:
        """The exact keys of the integer cosine, ``sign(d) d^2 / |c|^2`` as fractions (0 for a zero
        vector), ordered as the cosine."""
        assert self._cnorm2 is not None
        out = []
        for d, n in zip(np.asarray(raw).tolist(), self._cnorm2[cols].tolist()):
            d = int(d)
            out.append(Fraction((1 if d > 0 else -1) * d * d, int(n)) if n else Fraction(0))
        return out

    def row_keys(self, rows: slice) -> np.ndarray:
        """Exact keys of queries ``rows`` against the whole corpus, (B, n_corpus), computed in tiles."""
        n_rows = rows.stop - rows.start
        out = np.empty((n_rows, self.n_corpus), dtype=self.dtype)
        step = _TILE_COLS
        for c0 in range(0, self.n_corpus, step):   # loop over tiles of the corpus
            c1 = min(c0 + step, self.n_corpus)
            out[:, c0:c1] = self.tile(rows, slice(c0, c1))
        if self.mode == "ratio":
            assert self._cnorm2 is not None
            for i in range(n_rows):               # exact ranks, one row at a time
                out[i] = ratio_ranks(out[i], self._cnorm2)
        return out
