"""Functions a user passes in (gain and discount functions): called once on a numpy array, and checked."""

from __future__ import annotations

from typing import Any, Callable

import numpy as np

from .errors import InputError

__all__ = ["call_checked"]


def call_checked(fn: Callable[[np.ndarray], Any], x: np.ndarray, *, what: str, of: str,
                 each: str = "value") -> np.ndarray:
    """``fn(x)`` as float64, one finite value >= 0 per entry of ``x``, or an InputError that names the
    function (``what``: "gain" / "discount"), the entry (``of``: "grade" / "rank") and what one entry
    should give (``each``).

    Examples
    --------
    >>> call_checked(lambda r: 1 / r, np.array([1.0, 2.0]), what="discount", of="rank")
    array([1. , 0.5])
    """
    try:
        out = np.asarray(fn(x.copy()), dtype=np.float64)
    except Exception as err:   # the user's function failed: say which one
        raise InputError(f"the {what} function {getattr(fn, '__name__', fn)!r} failed on an array of {of}s: "
                         f"{err}") from None
    if out.shape != x.shape:
        raise InputError(f"the {what} function must return one {each} per {of} (vectorised over a numpy "
                         f"array), got shape {out.shape} for {x.shape}")
    bad = ~np.isfinite(out) | (out < 0)
    if bad.any():
        i = int(np.argmax(bad))
        raise InputError(f"the {what} function gives {out[i]!r} {'for' if of == 'grade' else 'at'} {of} "
                         f"{x[i]:g}; {what}s must be finite and >= 0")
    return out
