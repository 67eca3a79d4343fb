"""Exactly rounded sums of float64 arrays, the same bits whatever the order and the grouping of the values.

A float64 is ``M * 2**(e - 53)`` with an integer mantissa ``|M| < 2**53``; every finite float64 is
thus an integer multiple of ``2**-1127`` below ``2**1151``. :class:`ExactSum` keeps the exact sum of
its values as one Python integer (in units of ``2**-1127``), built without a Python loop over the
values: each mantissa is cut into 32-bit pieces at fixed bit positions, the pieces of a chunk are
added per position with :func:`numpy.bincount` (exact: every partial sum stays below ``2**53``), and
the few dozen position totals become one integer. Partial sums of any split of the values (Spark or
Dask partitions, blocks of a file) merge by integer addition, so the final float -- the exact sum
rounded once, to nearest even -- does not depend on the order or the split. It equals
:func:`math.fsum`, which is also correctly rounded, on every input where ``fsum`` does not overflow.

NaN and infinities follow IEEE addition: a NaN, or both ``+inf`` and ``-inf``, give NaN; otherwise
an infinity gives that infinity. A finite sum beyond the float64 range rounds to an infinity.
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np

__all__ = ["ExactSum", "exact_sum", "exact_mean"]

_SCALE = 1127                # units of 2**-1127: M * 2**(e - 53) = M * 2**(e + 1074 - 1127)
_N_LIMBS = 2112 // 32 + 3    # bit positions up to 2098 + 85 bits of a shifted mantissa
_CHUNK = 1 << 19             # values per bincount: each position total stays below 2**53 (exact)
_MASK = np.int64(0xFFFFFFFF)


def _limb_totals(v: np.ndarray) -> np.ndarray:
    """Per 32-bit position, the signed total of the finite non-zero values ``v`` (float64 totals that
    are exact integers, since ``len(v) <= _CHUNK``)."""
    m, e = np.frexp(v)
    mant = (m * 9007199254740992.0).astype(np.int64)   # m * 2**53: exact, |mant| < 2**53
    sign = np.where(mant < 0, -1.0, 1.0)
    mag = np.abs(mant)
    pos = e.astype(np.int64) + 1074                    # bit position of the mantissa's last bit, >= 1
    limb, off = pos >> 5, pos & 31
    lo = (mag & _MASK) << off                          # < 2**63
    hi = (mag >> 32) << off                            # < 2**52
    pieces = (lo & _MASK, (lo >> 32) + (hi & _MASK), hi >> 32)   # each < 2**33, at limb, limb+1, limb+2
    totals = np.zeros(_N_LIMBS)
    for shift, piece in enumerate(pieces):
        totals += np.bincount(limb + shift, weights=piece * sign, minlength=_N_LIMBS)
    return totals


class ExactSum:
    """The exact sum of float64 values so far: merge partial sums with ``+``, read with :meth:`value`.

    Attributes
    ----------
    total : int
        The exact sum of the finite values, in units of ``2**-1127``.
    count : int
        How many values were added (NaN and infinities included).
    nan, pos_inf, neg_inf : bool
        Whether a NaN, ``+inf``, ``-inf`` was added.

    Examples
    --------
    >>> import numpy as np
    >>> from tierank.data.exact_sum import ExactSum
    >>> a = ExactSum.of(np.array([1e16, 1.0])) + ExactSum.of(np.array([-1e16]))
    >>> a.value(), sum([1e16, 1.0, -1e16])
    (1.0, 0.0)
    >>> ExactSum.from_text(a.to_text()) == a
    True
    """

    def __init__(self, total: int = 0, count: int = 0, nan: bool = False, pos_inf: bool = False,
                 neg_inf: bool = False) -> None:
        self.total, self.count, self.nan, self.pos_inf, self.neg_inf = total, count, nan, pos_inf, neg_inf

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, ExactSum):
            return NotImplemented
        return (self.total, self.count, self.nan, self.pos_inf, self.neg_inf) == \
            (other.total, other.count, other.nan, other.pos_inf, other.neg_inf)

    @classmethod
    def of(cls, values: Any) -> "ExactSum":
        """The exact sum of an array of numbers (converted to float64)."""
        v = np.asarray(values, dtype=np.float64).ravel()
        out = cls(count=len(v))
        finite = np.isfinite(v)
        if not finite.all():
            bad = v[~finite]
            out.nan = bool(np.isnan(bad).any())
            out.pos_inf = bool((bad == np.inf).any())
            out.neg_inf = bool((bad == -np.inf).any())
            v = v[finite]
        v = v[v != 0]
        acc = np.zeros(_N_LIMBS, dtype=object)
        for start in range(0, len(v), _CHUNK):
            acc += _limb_totals(v[start:start + _CHUNK]).astype(np.int64).astype(object)
        out.total = sum((int(t) << (32 * k) for k, t in enumerate(acc) if t), 0)
        return out

    def __add__(self, other: "ExactSum") -> "ExactSum":
        if not isinstance(other, ExactSum):
            return NotImplemented
        return ExactSum(self.total + other.total, self.count + other.count, self.nan or other.nan,
                        self.pos_inf or other.pos_inf, self.neg_inf or other.neg_inf)

    def value(self) -> float:
        """The sum rounded once to the nearest float64 (ties to even)."""
        if self.nan or (self.pos_inf and self.neg_inf):
            return math.nan
        if self.pos_inf or self.neg_inf:
            return math.inf if self.pos_inf else -math.inf
        try:
            return self.total / (1 << _SCALE)   # int / int: correctly rounded by Python
        except OverflowError:
            return math.inf if self.total > 0 else -math.inf

    def mean(self) -> float:
        """The correctly rounded sum divided by the count (NaN when nothing was added); when that sum is
        beyond float64 but the mean is not (values near 1.8e308), the exact sum over the count, rounded once.

        >>> ExactSum.of([1.7e308, 1.7e308]).mean()
        1.7e+308
        """
        if not self.count:
            return math.nan
        total = self.value()
        if math.isinf(total) and not (self.nan or self.pos_inf or self.neg_inf):
            return self.total / (self.count << _SCALE)   # int / int: correctly rounded (inf beyond float64)
        return total / self.count

    def to_text(self) -> str:
        """A plain text form (for shipping partial sums between processes), read by :meth:`from_text`."""
        flags = "".join(c for c, f in zip("npm", (self.nan, self.pos_inf, self.neg_inf)) if f)
        return f"{self.total:x}/{self.count}/{flags}"

    @classmethod
    def from_text(cls, text: str) -> "ExactSum":
        """The sum written by :meth:`to_text`."""
        total, count, flags = text.split("/")
        return cls(int(total, 16), int(count), "n" in flags, "p" in flags, "m" in flags)


def exact_sum(values: Any) -> float:
    """The exact sum of ``values`` rounded once to float64: the same bits in any order or split.

    >>> from tierank.data.exact_sum import exact_sum
    >>> exact_sum([0.1] * 10), sum([0.1] * 10)
    (1.0, 0.9999999999999999)
    """
    return ExactSum.of(values).value()


def exact_mean(values: Any) -> float:
    """:func:`exact_sum` divided by the number of values (NaN for none).

    >>> from tierank.data.exact_sum import exact_mean
    >>> exact_mean([0.1, 0.2, 0.3])   # 0.6 / 3
    0.19999999999999998
    """
    return ExactSum.of(values).mean()


def partial_aggregate(values: Any, kind: str, gm_floor: float) -> ExactSum:
    """The mergeable part of a measure's aggregate over some queries' values (NaN values left out):
    the exact sum of the values, or for ``kind="gm"`` of ``log(max(value, gm_floor))``."""
    v = np.asarray(values, dtype=np.float64)
    v = v[~np.isnan(v)]
    if kind == "gm":
        v = np.log(np.maximum(v, gm_floor))
    return ExactSum.of(v)


def finish_aggregate(partial: ExactSum, kind: str) -> float:
    """A measure's aggregate from the merged :func:`partial_aggregate` of every query: the mean
    (exactly rounded sum / count), the sum (``kind="sum"``) or the geometric mean (``kind="gm"``)."""
    if kind == "sum":
        return partial.value()
    if kind == "gm":
        return math.exp(partial.mean()) if partial.count else math.nan
    return partial.mean()
