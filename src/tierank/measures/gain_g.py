"""G (trec_eval ``G``, "normalized gain"): each retrieved document of gain g at rank i adds
``g / log2(2 + C(i) - S(i))``, where S(i) sums the retrieved gains up to rank i and C(i) the costs
``max(ideal gain, 1)`` of ranks 1..i; the sum is divided by the total ideal gain.

Unlike DCG, a document's weight depends on the gains above it, so G is not linear in the positions.
Tie-aware (docs/maths.md, "G"), for a tie of n documents after t others: its first p documents are a
uniformly random p-subset of the tie, and the document at position p is any of them with equal chance, so
position p adds on average ``E[(S_p / p) / log2(2 + C(t + p) - S_before - S_p)]``, where S_p is the gain
sum of the subset, whose counts of each gain are multivariate hypergeometric. The expectation is summed
exactly over those count vectors: for each count vector of the tie's non-zero gains (a *segment*), the
number k of its documents of gain 0 runs over 0..z (z the tie's documents of gain 0), so a tie costs at
most (the product over its distinct non-zero gains of (count + 1), less 1) times (z + 1) terms; each term
is one table look-up for its weight (the weights depend only on z, the tie's count of non-zero gains, the
segment's count and k, so they are tabled once per distinct kind), one for C and a log2. Every tie is
done at once, in chunks of :data:`CHUNK` terms. Ties past rank R (below) with the same gains, counts and
z and the same ``2 + t + X(R) - S_before`` have the same terms, and so do such segments of the same kind
and the same ``2 + t + X(R) - S_before - S``: each is summed once (the same bits). Ties whose documents
all have the same gain, and fixed orders, need no counting, and documents of gain 0 are only counted,
never read one by one. C is never built over all positions: it is ``i + X(min(i, R))``, X summing the
ideal gains' excess over 1 up to rank R, the last ideal rank of positive gain. The family declares its
terms (and the bounds' states) as its ``cost``: a query beyond the budget (``tie_cost_budget``) raises an
InputError naming the query and tie, before the work starts.

Exactness: ``2 + C - S`` is small where C and S are large, so float64 must hold both sums exactly: a query
whose integer gains sum past 2**52 (a grade of 1e16; ``gain='exp2'`` from grade 52), whose other gains sum
past 2**23, or with a positive gain below 2**-1000 raises an InputError naming it (:meth:`_Costs.check_exact`)
rather than giving a number made of rounding.

Bounds: a higher gain first does not always give the higher G (after a document of gain 1 with ideal gains
3, 2, 1, the tie {2, 3} scores more as 2 then 3). Ties add up independently (a tie's terms depend only on
the gain sum before it), so each tie's best and worst arrangement is found by a dynamic programme over how
many documents of each gain have been placed, and the bounds are their sums.
"""

from __future__ import annotations

import math

import numpy as np

from ..ties.groups import TieStats, within_query_exclusive_cumsum
from ._common import PYTHON_STATE, chunks, divide
from ._spec import Measure, MeasureFamily, QueryError
from ._trec import TrecName
from .dcg import (DCG_PARAMS, gain_preference, ideal_gains, item_gains, normalize_dcg_spelling, show_gains,
                  trec_gains)

__all__ = ["FAMILIES"]

#: terms evaluated at once: small enough that the few work arrays of this length stay in the CPU cache
CHUNK = 1 << 16
#: segments (a tie's count vectors of its non-zero gains) summed as one block, and segments enumerated at
#: once (memory: about 20 arrays of this length)
_SEGMENT_BLOCK = 1 << 16
_SEGMENT_CHUNK = 1 << 21


class _Costs:
    """C, the sum of the costs ``max(ideal gain, 1)`` of ranks 1..i, without an array over every position:
    ``C(i) = i + X(min(i, R))``, where R counts the query's ideal ranks of positive gain and X sums their
    excesses ``max(ideal gain - 1, 0)`` (so from rank R on, C grows by one per rank)."""

    def __init__(self, g: TieStats, m: Measure) -> None:
        with np.errstate(over="ignore"):   # gains and totals beyond float64 are refused by check_exact
            q, gain, count = ideal_gains(g, m)
            self.total = np.bincount(q, weights=gain * count, minlength=g.n_queries)
        self.R = np.bincount(q, weights=count, minlength=g.n_queries).astype(np.int64)
        self.check_exact(g, m, gain, q)
        flat_q = np.repeat(q, count)
        excess = np.repeat(np.maximum(gain - 1.0, 0.0), count)
        self.start = np.searchsorted(flat_q, np.arange(g.n_queries))
        self.X = within_query_exclusive_cumsum(excess, flat_q, self.start) + excess
        self.beyond = np.zeros(g.n_queries)      # X(R): the whole excess of each query
        has = self.R > 0
        self.beyond[has] = self.X[self.start[has] + self.R[has] - 1]

    def check_exact(self, g: TieStats, m: Measure, gains: np.ndarray, q: np.ndarray) -> None:
        """Raise a QueryError for a query whose ``C - S`` float64 cannot hold to better than 2**-30.

        G reads ``log2(2 + C - S)``, C and S sums of up to the query's whole gain: C - S is small while
        both are large, so float64's rounding of the sums (an ulp of the total) would be all that is left
        (a grade of 1e17 gave G 1.8e-19). The sums are exact when every gain is a multiple of 2**-f and the
        largest sum, below ``T = n + R + 2 total``, stays under 2**52 in those units (whole gains up to
        about 4.5e15, halves and quarters alike); otherwise the rounding, about ``T 2**-53``, must stay below
        2**-30, which keeps each term's relative error below 1e-9."""
        f = np.zeros(g.n_queries)
        np.maximum.at(f, q, _fraction_bits(gains))
        with np.errstate(over="ignore", invalid="ignore"):   # T may be inf (gains beyond float64)
            T = g.lengths + self.R + 2.0 * self.total
            exact = np.ldexp(T, np.minimum(f, 2000).astype(np.int64)) < 2.0 ** 52
        bad = np.flatnonzero(~exact & ~(T * 2.0 ** -53 <= 2.0 ** -30))
        tiny = np.flatnonzero((gains > 0) & (gains < 2.0 ** -1000))   # terms g / log2(...) would be subnormal
        if tiny.size:
            query = int(q[tiny[0]])
            raise QueryError(f"measure {m.text or str(m)!r}: a gain of this query ({gains[tiny[0]]:g}) is too small "
                             "for float64 to weigh exactly in G (below 2**-1000); use larger grades or gains", query)
        if bad.size:
            query = int(bad[0])
            top = float(g.memo("max_grade", g.judged.max_grade)[query])
            raise QueryError(f"measure {m.text or str(m)!r}: this query's gains (largest grade {top:g}) are too large for float64 to hold G's costs minus gains exactly "
                             "(the 2 + C - S of its discounts); use smaller grades or gains", query)

    def at(self, q: np.ndarray, rank: np.ndarray) -> np.ndarray:
        """C at 1-based ranks ``rank`` of queries ``q``."""
        r = np.minimum(rank, self.R[q])
        x = np.zeros(len(r))
        near = r > 0
        x[near] = self.X[self.start[q[near]] + r[near] - 1]
        return rank + x


def _costs(g: TieStats, m: Measure) -> _Costs:
    """The :class:`_Costs` of these statistics (memo): built, and so checked exact, before any gain sum
    (the family's ``cost`` runs before the kernel)."""
    return g.memo(("G costs", m["gain"], repr(m["gains"])), lambda: _Costs(g, m))


def _read(g: TieStats, m: Measure) -> dict:
    """Per tie, the gain sum ``G``; the ties holding a document of non-zero gain (``lit``) and of their
    documents those of non-zero gain (``nz``: index among the tie's grades ``ptr``; ``v``: gain; ``nz_lit``:
    tie among ``lit``; ``n_lit``: count per tie), and the ties of one gain only (``uniform``). Shared by the
    kernel and the family's ``cost`` (memo of the statistics)."""
    def build() -> dict:
        G = g.group_sum(("gain", m["gain"], repr(m["gains"])), lambda x, _q: item_gains(m, x))
        # only the ties holding a document of non-zero gain are read (gains are >= 0), and of their
        # documents only those of non-zero gain one by one: a tie's documents of gain 0 are counted
        lit = np.flatnonzero(G > 0)
        out = {"G": G, "lit": lit}
        if len(lit):
            ptr, grades = g.group_grades(lit)
            nz, v = _nonzero_gains(m, grades)
            nz_ptr = np.searchsorted(nz, ptr)
            n_lit = np.diff(nz_ptr)                     # per tie read, its documents of non-zero gain (>= 1)
            first = nz_ptr[:-1]
            uniform = (n_lit == g.group_size[lit]) & (np.maximum.reduceat(v, first) == np.minimum.reduceat(v, first))
            out.update(ptr=ptr, nz=nz, v=v, n_lit=n_lit, nz_lit=np.repeat(np.arange(len(lit)), n_lit),
                       uniform=uniform)
        return out
    return g.memo(("G read", m["gain"], repr(m["gains"])), build)


def _mixed(g: TieStats, read: dict) -> tuple:
    """The ties of documents of different gains (``ties``), the tie (index into ``ties``) and gain of each
    of their documents of non-zero gain, and the other documents' selector ``use`` (ties of one gain)."""
    uniform, nz_lit = read["uniform"], read["nz_lit"]
    use = uniform[nz_lit]
    sel = ~use
    return read["lit"][~uniform], np.cumsum(~uniform)[nz_lit[sel]] - 1, read["v"][sel], use


def _cost(g: TieStats, m: Measure, bounds: bool) -> tuple[np.ndarray, np.ndarray]:
    """The family's ``cost``: per tie of documents of different gains, the terms of the exact expectation
    (:func:`_expected_cost`, about 4 operations each, measured) or the dynamic-programme states of the
    exact bounds (:func:`_extreme_cost`, run in Python: :data:`PYTHON_STATE` operations each)."""
    _costs(g, m)   # gains float64 cannot sum exactly are refused first (and overflow nowhere)
    read = _read(g, m)
    if not len(read["lit"]) or read["uniform"].all():
        return np.zeros(0, dtype=np.int64), np.zeros(0)
    ties, nz_tie, v, _ = _mixed(g, read)
    n_nz = np.zeros(g.n_groups, dtype=np.int64)
    n_nz[read["lit"]] = read["n_lit"]
    runs = _runs(nz_tie, v)
    zeros = g.group_size[ties] - n_nz[ties]
    if bounds:
        return ties, PYTHON_STATE * _extreme_cost(runs, zeros)
    return ties, 4.0 * _expected_cost(runs, zeros)


def _fraction_bits(x: np.ndarray) -> np.ndarray:
    """Per positive float, the f with x a whole multiple of 2**-f (0 for whole numbers)."""
    mant, exp = np.frexp(np.where(np.isfinite(x), x, 0.0))
    whole = np.ldexp(mant, 53).astype(np.int64)          # x = whole * 2**(exp - 53), exactly
    low = (whole & -whole).astype(np.float64)            # its lowest set bit, 2**tz (1 for x = 0)
    return np.maximum(53.0 - exp - np.log2(np.maximum(low, 1.0)), 0.0)


def g_measure(g: TieStats, m: Measure, extreme: str | None = None) -> np.ndarray:
    costs = _costs(g, m)
    read = _read(g, m)
    G, lit = read["G"], read["lit"]
    S_before = within_query_exclusive_cumsum(G, g.group_query, g.query_groups[:-1])
    value = np.zeros(g.n_queries)
    if len(lit) == 0:
        return divide(value, costs.total)
    ptr, nz, v, n_lit, nz_lit, uniform = (read[k] for k in ("ptr", "nz", "v", "n_lit", "nz_lit", "uniform"))
    # ties of equal gains (and fixed orders): the k-th item of the tie sees k-1 equal gains above it
    use = uniform[nz_lit]
    grp, gv = lit[nz_lit[use]], v[use]
    k = nz[use] - ptr[nz_lit[use]]
    q = g.group_query[grp]
    sums = S_before[grp] + (k + 1) * gv
    term = gv / np.log2(2.0 + costs.at(q, g.group_first[grp] + k + 1) - sums)
    value += np.bincount(q, weights=term, minlength=g.n_queries)
    if not uniform.all():
        n_nz = np.zeros(g.n_groups, dtype=np.int64)
        n_nz[lit] = n_lit
        ties, nz_tie, v_mixed, _ = _mixed(g, read)
        value += _mixed_ties(g, ties, nz_tie, v_mixed, n_nz, S_before, costs, extreme)
    return divide(value, costs.total)


def _nonzero_gains(m: Measure, grades: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """(index, gain) of the grades of non-zero gain. Most grades are 0 or negative (unjudged); when all of
    those have gain 0 (the built-in gains, unless the gains map gives a grade <= 0 a gain), only the
    others are turned into gains."""
    listed = m["gains"] or {}
    if callable(m["gain"]) or any(gain != 0 for grade, gain in listed.items() if not grade > 0):
        gains = item_gains(m, grades)
        nz = np.flatnonzero(gains != 0)
        return nz, gains[nz]
    maybe = np.flatnonzero(~(grades <= 0))
    gains = item_gains(m, grades[maybe])
    keep = gains != 0
    return maybe[keep], gains[keep]


def _bounds(expected: TieStats, best: TieStats, worst: TieStats, m: Measure, lo: np.ndarray, hi: np.ndarray):
    """Exact bounds: each tie's best / worst arrangement (module docstring)."""
    return g_measure(expected, m, "min"), g_measure(expected, m, "max")


def _mixed_ties(g: TieStats, ties: np.ndarray, nz_tie: np.ndarray, v: np.ndarray, n_nz: np.ndarray,
                S_before: np.ndarray, costs: _Costs, extreme: str | None) -> np.ndarray:
    """Per query, the sum over its ties ``ties`` of documents of different gains. ``nz_tie``, ``v``: the tie
    (an index into ``ties``) and gain of each of their documents of non-zero gain, tie by tie."""
    runs = _runs(nz_tie, v)
    zeros = g.group_size[ties] - n_nz[ties]
    if extreme is None:
        per_tie = _tie_means(g, ties, runs, zeros, S_before[ties], costs)
    else:
        per_tie = np.array([_extreme_tie(_tie_gains(vals, counts, z), float(S_before[c]),
                                         costs.at(np.full(n, g.group_query[c]), g.group_first[c] + np.arange(1, n + 1)),
                                         extreme)
                            for c, vals, counts, z, n in zip(ties, *_split_runs(runs, len(ties)), zeros,
                                                             g.group_size[ties])])   # loop over the ties
    return np.bincount(g.group_query[ties], weights=per_tie, minlength=g.n_queries)


def _runs(tie: np.ndarray, v: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """(tie, gain, count, number of the (gain, count) pair) of every distinct non-zero gain of every tie, by
    tie then gain."""
    u, at = _levels(v)
    runs, count = _distinct(tie * len(u) + at, counts=True)
    _, pair = _distinct(runs % len(u) * (int(count.max()) + 1) + count)
    return runs // len(u), u[runs % len(u)], count, pair


def _levels(v: np.ndarray, short: int = 256) -> tuple[np.ndarray, np.ndarray]:
    """(levels, the level of each of the values): every integer from the least value to the largest when
    the values are integers in a range shorter than ``short`` (no sort; some levels may be absent), else
    the distinct values."""
    lo, hi = (v.min(), v.max()) if len(v) else (0.0, 0.0)
    if hi - lo < short and np.array_equal(v, np.rint(v)):
        return lo + np.arange(int(hi - lo) + 1), (v - lo).astype(np.int64)
    u = np.unique(v)
    return u, np.searchsorted(u, v)


def _distinct(code: np.ndarray, counts: bool = False) -> tuple[np.ndarray, np.ndarray]:
    """np.unique(code, return_counts=True) (``counts``) or np.unique(code, return_inverse=True) of
    non-negative integers: by a bincount when their range is not much larger than their number (the
    common case: few distinct gains and tie sizes), else by a sort."""
    top = int(code.max(initial=0)) + 1
    if top > 4 * len(code) + 4096:
        return np.unique(code, return_counts=True) if counts else np.unique(code, return_inverse=True)
    seen = np.bincount(code, minlength=top)
    kinds = np.flatnonzero(seen > 0)   # (a boolean is searched much faster than the counts)
    if counts:
        return kinds, seen[kinds]
    number = np.empty(top, dtype=np.int64)
    number[kinds] = np.arange(len(kinds))
    return kinds, number[code]


def _split_runs(runs, n_ties: int) -> tuple[list, list]:
    tie, value, count, _ = runs
    cut = np.searchsorted(tie, np.arange(1, n_ties))
    return np.split(value, cut), np.split(count, cut)


def _tie_gains(values: np.ndarray, counts: np.ndarray, zeros: int) -> np.ndarray:
    return np.concatenate((np.zeros(zeros), np.repeat(values, counts)))


def _configurations(runs, n_ties: int) -> np.ndarray:
    """Per tie, the product over its distinct non-zero gains of (count + 1), multiplied in float64: exact
    below 2**53, never wrapped (inf beyond 1e308)."""
    tie, _, count, _ = runs
    out = np.ones(n_ties)
    with np.errstate(over="ignore"):
        np.multiply.at(out, tie, count + 1.0)
    return out


def _expected_cost(runs, zeros: np.ndarray) -> np.ndarray:
    """Per tie, the terms of :func:`_tie_means`: (the product of (count + 1) over its distinct non-zero
    gains, less 1) times (its documents of gain 0, plus 1)."""
    return (_configurations(runs, len(zeros)) - 1.0) * (zeros + 1.0)


def _extreme_cost(runs, zeros: np.ndarray) -> np.ndarray:
    """Per tie, the states of :func:`_extreme_tie`: the product over its distinct gains of (count + 1),
    times the number of distinct gains."""
    levels = np.bincount(runs[0], minlength=len(zeros)) + (zeros > 0)
    return _configurations(runs, len(zeros)) * (zeros + 1.0) * levels


def _tie_means(g: TieStats, ties: np.ndarray, runs, zeros: np.ndarray, before: np.ndarray,
               costs: _Costs) -> np.ndarray:
    """Per tie, the expected sum of its terms over all its orderings (module docstring).

    The first p documents of a tie of n are a uniformly random p-subset, and the one at position p is any
    of them with equal chance, so position p adds ``E[(S/p) / log2(2 + C(t+p) - before - S)]``, S the
    subset's gain sum. Given the counts K of the subset's documents of each non-zero gain (s of them, gain
    sum S > 0) and k of its z documents of gain 0 (p = s + k), the probability is
    ``Π C(c_l, K_l) C(z, k) / C(n, p)``. A *segment* is a tie's count vector K: its terms run over
    k = 0..z with the weight ``C(z, k) / (C(n, p) p)``, which depends only on (z, c, s, k), c the tie's
    documents of non-zero gain, so it is tabled once per distinct (z, c, s); ``Π C(c_l, K_l) S`` is a
    factor of the segment. Segments are numbered inside each tie and taken in blocks of
    :data:`_SEGMENT_BLOCK`; each block is summed in its own order, then each tie's blocks in order, so a
    tie's value does not depend on the other ties. Ties, then segments, whose terms are the same numbers
    are summed once (:func:`_alike`).
    """
    n_t = len(ties)
    n = g.group_size[ties]
    vals, cnts, kind = _digits(runs, zeros)
    n_seg = np.ones(n_t, dtype=np.int64)
    for level in range(len(cnts)):   # loop over the (few) distinct non-zero gains of a tie
        n_seg *= cnts[level] + 1
    n_seg -= 1                                # the non-zero count vectors K, numbered 1..n_seg (mixed radix)
    log_fact = np.concatenate(([0.0], np.cumsum(np.log(np.arange(1, int(n.max(initial=1)) + 1)))))
    Cs, c_base, add_base, far = _tie_costs(g, ties, n, before, costs)
    # ties alike (same z, gains and counts, reading the ramp of C from the same add_base) have the same
    # terms in the same order: only one of each is summed
    one, alike = _alike(kind, far, add_base)
    vals, cnts, zeros, n, n_seg = vals[:, one], cnts[:, one], zeros[one], n[one], n_seg[one]
    place = (Cs, c_base[one], add_base[one], far[one])
    # blocks of segments: (tie, first segment number, segments)
    blocks = -(-n_seg // _SEGMENT_BLOCK)
    block_tie = np.repeat(np.arange(len(one)), blocks)
    block_first = (np.arange(len(block_tie)) - np.repeat(np.cumsum(blocks) - blocks, blocks)) * _SEGMENT_BLOCK + 1
    block_len = np.minimum(_SEGMENT_BLOCK, n_seg[block_tie] - block_first + 1)
    block_sum = np.empty(len(block_tie))
    for part in chunks(block_len, _SEGMENT_CHUNK):   # loop over batches of blocks
        block_sum[part] = _block_sums(block_tie[part], block_first[part], block_len[part], vals, cnts, zeros, n,
                                      place, log_fact)
    return np.bincount(block_tie, weights=block_sum, minlength=len(one))[alike]


def _digits(runs, zeros: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Per tie, its distinct non-zero gains and their counts, a row per digit (0 beyond its own), and a
    number per distinct (z, gains and counts)."""
    tie, value, count, pair = runs
    n_t = len(zeros)
    per_tie = np.bincount(tie, minlength=n_t)
    D = int(per_tie.max())
    slot = np.arange(len(tie)) - np.repeat(np.cumsum(per_tie) - per_tie, per_tie)
    vals, cnts, pairs = np.zeros((D, n_t)), np.zeros((D, n_t), dtype=np.int64), np.zeros((D, n_t), dtype=np.int64)
    at = slot * n_t + tie
    vals.reshape(-1)[at], cnts.reshape(-1)[at], pairs.reshape(-1)[at] = value, count, pair + 1
    kind, top = zeros, int(pair.max(initial=0)) + 2
    for level in range(D):   # loop over the (few) distinct non-zero gains of a tie
        _, kind = _distinct(kind * top + pairs[level])
    return vals, cnts, kind


def _tie_costs(g: TieStats, ties: np.ndarray, n: np.ndarray, before: np.ndarray, costs: _Costs):
    """Where each tie reads C: ``C(t + p) + 2 - before - S = Cs[c_base + p - 1] + add_base - S``. From rank R
    on, C(t + p) = t + p + X(R), a ramp (the end of Cs, which holds p at index ``c_base + p - 1``); ties
    starting before rank R read C from Cs, which holds it at their positions. Returns (Cs, c_base,
    add_base, far: the ties that read the ramp)."""
    q = g.group_query[ties]
    t = g.group_first[ties]
    near = t < costs.R[q]
    near_n = np.where(near, n, 0)
    near_at = np.cumsum(near_n) - near_n
    tot = int(near_n.sum())
    pos_tie = np.repeat(np.arange(len(ties)), near_n)
    rank = t[pos_tie] + np.arange(tot) - near_at[pos_tie] + 1
    Cs = np.concatenate((costs.at(q[pos_tie], rank), np.arange(int(n.max()) + 1, dtype=np.float64)))
    c_base = np.where(near, near_at - 1, tot)
    add_base = 2.0 + np.where(near, 0.0, t + costs.beyond[q]) - before
    return Cs, c_base, add_base, ~near


def _block_sums(bt, bf, bl, vals, cnts, zeros, n, place, log_fact) -> np.ndarray:
    """The sums of blocks of segments (tie ``bt``, first segment ``bf``, segments ``bl``; per tie its
    digits ``vals``, ``cnts``, its z and n; ``place`` from :func:`_tie_costs`): each segment number is read
    as mixed-radix digits, one per distinct non-zero gain of its tie (the counts K), giving s, S and
    ``log Π C(c_l, K_l)``; segments whose terms are the same numbers are summed once (:func:`_alike`)."""
    Cs, c_base, add_base, far = place
    seg_block = np.repeat(np.arange(len(bt)), bl)
    seg_tie = bt[seg_block]
    rest = np.repeat(bf - np.cumsum(bl) + bl, bl) + np.arange(len(seg_tie))
    s = np.zeros(len(seg_tie), dtype=np.int64)
    S = np.zeros(len(seg_tie))
    log_a = np.zeros(len(seg_tie))
    for level in range(len(vals)):   # loop over the (few) distinct non-zero gains of a tie: one digit each
        c_l = cnts[level][seg_tie]
        rest, K = np.divmod(rest, c_l + 1)
        s += K
        S += K * vals[level][seg_tie]
        log_a += log_fact[c_l] - log_fact[K] - log_fact[c_l - K]
    z = zeros[seg_tie]
    table, table_at, top, kind = _weights(z, n[seg_tie] - z, s, log_fact)
    c_at, add = c_base[seg_tie] + s, add_base[seg_tie] - S
    rep, alike = _alike(kind, far[seg_tie], add)
    sums = _segment_sums(z[rep] + 1, c_at[rep], add[rep], table_at[rep], Cs, table)[alike]
    return np.bincount(seg_block, weights=S * np.exp(log_a + top) * sums, minlength=len(bt))


def _alike(kind: np.ndarray, far: np.ndarray, add: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Classes of ties or segments whose terms are the same numbers in the same order, so whose sums are
    the same bits: those reading the ramp of C (``far``, where ``C(t + p) + 2 - before - S`` is
    ``p + add``) of the same kind (a tie's z, gains and counts; a segment's (z, c, s)) and the same ``add``
    (with integer gains, few values); every other one is alone. Returns (a representative of each class,
    the class of each)."""
    levels, code = _levels(add, short=len(add))   # with integer gains, offsets in a short range
    span = max(len(levels), 1)
    n = len(add)
    code += kind * span
    top = (int(kind.max(initial=0)) + 1) * span
    if top > 8 * n + (1 << 20):   # too sparse for a table over every code (only n of it are touched)
        _, code = np.unique(code, return_inverse=True)
        top = n
    code = np.where(far, code, top + np.arange(n))
    last = np.empty(top + n, dtype=np.int64)   # per code, one of its segments (whichever was written last)
    last[code] = np.arange(n)
    mine = last[code]
    rep = np.flatnonzero(mine == np.arange(n))
    last[rep] = np.arange(len(rep))            # now the class of each representative
    alike = last[mine]
    return rep, alike


def _weights(z: np.ndarray, c: np.ndarray, s: np.ndarray, log_fact: np.ndarray):
    """The weights ``C(z, k) / (C(z + c, s + k) (s + k))``, k = 0..z, of segments (z, c, s): one block of
    z + 1 entries per distinct (z, c, s), divided by its largest entry. Returns (the table, the start of
    each segment's block in it, the log of each segment's divisor, the kind of each segment)."""
    span = int(c.max()) + 1
    if (int(z.max()) + 1) * span * span < 2 ** 62:   # (z, c, s) as one integer
        kinds, kind = _distinct((z * span + c) * span + s)
        kz, kc, ks = kinds // (span * span), kinds // span % span, kinds % span
    else:
        kinds, kind = np.unique(np.stack((z, c, s), axis=1), axis=0, return_inverse=True)
        kz, kc, ks = kinds.T
        kind = kind.ravel()
    block = kz + 1
    at = np.cumsum(block) - block
    k = np.arange(int(block.sum())) - np.repeat(at, block)
    z, c, s = np.repeat(kz, block), np.repeat(kc, block), np.repeat(ks, block)
    log_w = ((log_fact[k + s - 1] - log_fact[k]) + (log_fact[z - k + c - s] - log_fact[z - k])
             + (log_fact[z] - log_fact[z + c]))
    top = np.maximum.reduceat(log_w, at)
    return np.exp(log_w - np.repeat(top, block)), at[kind], top[kind], kind


def _segment_sums(L, c_at, add, table_at, Cs, table) -> np.ndarray:
    """Per segment i, ``Σ_{k < L[i]} table[table_at[i] + k] / log2(Cs[c_at[i] + k] + add[i])``, in chunks of
    whole segments of about :data:`CHUNK` terms (a segment's terms are summed in their own order)."""
    out = np.empty(len(L))
    ends = np.cumsum(L)
    size = max(CHUNK, int(L.max(initial=1)))
    ibuf, xbuf, wbuf = np.empty(size, dtype=np.int64), np.empty(size), np.empty(size)
    a = 0
    while a < len(L):   # loop over chunks of whole segments
        done = ends[a] - L[a]
        b = max(int(np.searchsorted(ends, done + size, side="right")), a + 1)
        l = L[a:b]
        T = int(ends[b - 1] - done)
        st = ends[a:b] - l - done
        i = ibuf[:T]
        i.fill(1)
        i[st[1:]] = c_at[a + 1:b] - (c_at[a:b - 1] + l[:-1] - 1)
        i[0] = c_at[a]
        np.cumsum(i, out=i)
        x = Cs.take(i, out=xbuf[:T], mode="clip")
        x += np.repeat(add[a:b], l)
        np.log2(x, out=x)
        i += np.repeat(table_at[a:b] - c_at[a:b], l)
        w = table.take(i, out=wbuf[:T], mode="clip")
        np.divide(w, x, out=x)
        out[a:b] = np.add.reduceat(x, st)
        a = b
    return out


def _extreme_tie(tie: np.ndarray, before: float, C: np.ndarray, extreme: str) -> float:
    """The largest (``"max"``) or smallest (``"min"``) sum of the tie's terms over its arrangements: a
    dynamic programme over the counts of each distinct gain placed so far (their sum fixes the gain above)."""
    pick = max if extreme == "max" else min
    values, counts = np.unique(tie, return_counts=True)
    values, counts = values.tolist(), counts.tolist()
    layer: dict = {(0,) * len(values): 0.0}
    for s in range(len(tie)):   # loop over the tie's positions: extend every state by one document
        nxt: dict = {}
        for state, acc in layer.items():
            above = sum(c * v for c, v in zip(state, values))
            for i, v in enumerate(values):
                if state[i] == counts[i]:
                    continue
                term = v / math.log2(2.0 + C[s] - before - above - v) if v else 0.0
                key = state[:i] + (state[i] + 1,) + state[i + 1:]
                nxt[key] = pick(nxt[key], acc + term) if key in nxt else acc + term
        layer = nxt
    return layer[tuple(counts)]


FAMILIES = [
    MeasureFamily("G", "normalized gain: gains weighted by 1/log2(2 + ideal cost - gain so far), over the ideal "
                  "gain (trec_eval G)", DCG_PARAMS, "none", g_measure, gain_preference, normalize=normalize_dcg_spelling, exact_bounds=_bounds,
                  value_range=(0.0, math.inf), cost=_cost,
                  trec=(TrecName("G", "param", sets=("gains",), bind=trec_gains, show=show_gains),)),
]
