"""Scores and grades as float64: exactly, or an error.

tierank computes in float64 (integer scores and distances are kept as int64 where they can be). A
value float64 does not hold exactly would be rounded to a neighbour, and two different scores could
become one, a tie the user never gave; a grade could cross a relevance level. So every path that turns
user values into float64 (DataFrame columns of any library, dicts, Arrow and Parquet columns, dense
matrices) applies one rule, :func:`exact_float64`: the values float64 holds exactly are converted, any
other is an :class:`~tierank.InputError` naming where it is (the caller knows where: a file line, a
query and document, a matrix row). Such values are:

* long doubles (``np.longdouble``, float128 on most Linux machines) with more precision or range than
  float64, e.g. ``1 + 2**-60``;
* integers beyond ``2**53`` that are not multiples of a large enough power of two (``2**53 + 1``),
  Python ints beyond the float64 range, ``uint64`` beyond ``2**63`` likewise;
* ``decimal.Decimal`` and ``fractions.Fraction`` values that are not binary fractions
  (``Decimal("0.1")``; ``Decimal("2.5")`` is exact and accepted).

Numbers in text (TREC files) are not concerned: a decimal string is read as the nearest float64, as
C's ``strtod`` reads it in trec_eval.
"""

from __future__ import annotations

from decimal import Decimal
from numbers import Integral, Rational
from typing import Any

import numpy as np

__all__ = ["exact_float64", "inexact_problem"]

#: integers of magnitude up to this are exact in float64 (its 53-bit significand)
_EXACT_INT = 2 ** 53


def _exact_scalar(v: Any) -> bool:
    """Whether the number ``v`` has an exact float64 value (one value, compared exactly)."""
    if isinstance(v, np.integer):
        v = int(v)   # numpy compares an int64 with a float in float64, which would hide the rounding
    try:
        f = float(v)
    except (OverflowError, ValueError, TypeError):
        return False
    return f == v or (f != f and v != v)


def _float_or_nan(v: Any) -> float:
    try:
        return float(v)
    except (OverflowError, ValueError, TypeError):
        return float("nan")


def exact_float64(values: np.ndarray) -> tuple[np.ndarray, np.ndarray | None]:
    """``values`` as float64, and where float64 does not hold them exactly.

    The rule of the module docstring, for an array of numbers of any dtype: booleans, integers,
    floats of any width, or objects (Python ints and floats, numpy scalars, ``Decimal``, ``Fraction``).
    NaN counts as exact (the callers report NaN themselves).

    Parameters
    ----------
    values : numpy.ndarray
        Numbers, of dtype kind ``b``, ``i``, ``u``, ``f`` or ``O`` (objects must be real numbers; the
        callers check that first).

    Returns
    -------
    (numpy.ndarray, numpy.ndarray or None)
        The float64 values (same shape; an inexact value is its nearest float64, or NaN when it has
        none), and a boolean mask of the inexact ones, or None when every value is exact.

    Examples
    --------
    >>> import numpy as np
    >>> from decimal import Decimal
    >>> from tierank.data.numbers import exact_float64
    >>> exact_float64(np.array([2 ** 53, 2 ** 53 + 1, 3]))[1].tolist()
    [False, True, False]
    >>> out, lost = exact_float64(np.array([Decimal("2.5"), 1, 0.25], dtype=object))
    >>> out.tolist(), lost
    ([2.5, 1.0, 0.25], None)
    >>> exact_float64(np.array([Decimal("0.1")], dtype=object))[1].tolist()
    [True]
    """
    kind = values.dtype.kind
    if kind == "b" or (kind == "f" and values.dtype.itemsize <= 8):
        return values.astype(np.float64, copy=False), None
    if kind == "f":   # long double: a round trip tells whether float64 holds it
        with np.errstate(over="ignore"):
            out = values.astype(np.float64)
        lost = (out.astype(values.dtype) != values) & ~np.isnan(values)
    elif kind in "iu":
        out = values.astype(np.float64)
        if not values.size or (int(values.max()) <= _EXACT_INT and int(values.min()) >= -_EXACT_INT):
            return out, None   # the usual case: every integer within 2**53 is exact
        big = values > _EXACT_INT   # only these can be inexact
        if kind == "i":
            big |= values < -_EXACT_INT
        if not big.any():
            return out, None
        lost = np.zeros(values.shape, dtype=bool)
        wide = out[big]
        # a float64 at or beyond 2**63 (2**64 for uint64) is no int64 (uint64): inexact; else compare
        limit = 2.0 ** 64 if kind == "u" else 2.0 ** 63
        fits = wide < limit
        back = np.zeros(wide.shape, dtype=values.dtype)
        back[fits] = wide[fits].astype(values.dtype)
        lost[big] = ~fits | (back != values[big])
    elif kind == "O":
        try:
            out = values.astype(np.float64)
        except (OverflowError, ValueError, TypeError):   # a Python int beyond float64's range, ...
            out = np.vectorize(_float_or_nan, otypes=[np.float64])(values) if values.size else \
                np.zeros(values.shape)
        # Python compares ints, floats, Decimals and Fractions with floats exactly, numpy's long
        # doubles too; numpy integers are compared in float64, so those beyond 2**53 are checked alone
        same = np.asarray(values == out, dtype=bool)
        lost = ~same & ~np.isnan(out)
        suspect = np.isnan(out) | (np.abs(np.nan_to_num(out)) >= _EXACT_INT)   # 2**53 + 1 rounds to 2**53
        if suspect.any():
            idx = np.flatnonzero(suspect.ravel())
            flat = values.ravel()
            lost.ravel()[idx] = [not _exact_scalar(flat[i]) for i in idx]
    else:
        raise TypeError(f"exact_float64 takes numbers, not dtype {values.dtype}")
    return out, lost if lost.any() else None


def inexact_problem(value: Any) -> str:
    """What is wrong with a value :func:`exact_float64` found inexact, for an error message.

    Examples
    --------
    >>> from decimal import Decimal
    >>> from tierank.data.numbers import inexact_problem
    >>> print(inexact_problem(2 ** 53 + 1).split(":")[0])
    is 9007199254740993, which float64 cannot hold exactly (the nearest float64 is 9007199254740992.0)
    >>> print(inexact_problem(Decimal("0.1")).split(":")[0])
    is Decimal('0.1'), which float64 cannot hold exactly (the nearest float64 is 0.1000000000000000055511151231257827021181583404541015625)
    """
    shown = repr(int(value)) if isinstance(value, (int, np.integer)) else repr(value)
    nearest = _float_or_nan(value)
    # a Decimal or a Fraction (a Rational that is not an integer) is shown with all the digits of the nearest
    # float64: 0.1 would look like Decimal("0.1")  (fractions is not imported here: 1 ms of the command's start)
    exact_text = isinstance(value, Decimal) or (isinstance(value, Rational) and not isinstance(value, Integral))
    near = ("it is beyond float64's range" if nearest != nearest or abs(nearest) == float("inf")
            else f"the nearest float64 is {Decimal(nearest) if exact_text else repr(nearest)}")
    return (f"is {shown}, which float64 cannot hold exactly ({near}): distinct values would become equal; "
            "convert them to float64 yourself if rounding is meant")
