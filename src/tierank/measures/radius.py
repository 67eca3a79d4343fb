"""Hamming-radius measures of hashing papers: precision and recall within distance r.

``P(radius=r)`` and ``R(radius=r)`` are the P and R families with ``radius=`` instead of a cutoff ``@k``:
the retrieved set is every item at distance <= r (hash lookup within radius r; "precision within Hamming
radius 2" of Liu et al. 2012 and most hashing papers since). A radius never cuts a tie (tied items are at
the same distance), so both are the same under every tie ordering.

Conventions (documented parameters):

* ``P(radius=r)`` when no item lies within r: ``empty='zero'`` (default; "zero precision for failing to
  find any hash bucket", Liu et al. 2012), ``empty='one'``, or ``empty='skip'``: NaN in ``per_query`` and
  the query is left out of the mean (the papers that average only over queries that retrieved
  something); 0 and 1 are accepted for 'zero' and 'one', the words of ``no_relevant``;
* ``R(radius=r)`` with no relevant item at all: 0, like ``R@k``.

The distance of a group of tied items is ``-group_key`` (:class:`tierank.ties.groups.TieStats`: keys are
higher-is-better, so distances enter negated): these measures need distances (``evaluate_codes``, or
``evaluate_matrix(distances=...)``). With ``scores=`` the radius would apply to ``-score``.
"""

from __future__ import annotations

import math
from numbers import Real
from typing import Any

import numpy as np

from ..errors import InputError
from ..ties.groups import TieStats
from ._common import REL, binary_preference, divide
from ._spec import Measure, MeasureFamily, Param

__all__ = ["RADIUS_FAMILIES", "radius_measure", "precision_within", "recall_within"]


def _check_radius(v: Any) -> Any:
    if isinstance(v, bool) or not isinstance(v, Real) or not math.isfinite(float(v)) or v < 0:
        raise ValueError(f"radius must be a finite number >= 0, got {v!r}")
    return int(v) if float(v).is_integer() else float(v)


class _EmptyCheck:
    """``empty=``: 'zero', 'one' or 'skip' (the words of ``no_relevant``); 0 and 1 are aliases."""

    def __call__(self, v: Any) -> Any:
        if isinstance(v, str) and v in ("zero", "one", "skip"):
            return v
        if not isinstance(v, bool) and isinstance(v, Real) and float(v) in (0.0, 1.0):
            return "zero" if float(v) == 0.0 else "one"
        raise ValueError(f"empty must be 'zero', 'one' or 'skip' (0 and 1 are aliases of 'zero' and 'one'), "
                         f"got {v!r}")


RADIUS = Param(None, _check_radius, "Hamming radius r: the retrieved set is every item at distance <= r")
EMPTY = Param("zero", _EmptyCheck(), "P when nothing lies within the radius: 'zero', 'one', or 'skip' (NaN, "
                                     "left out of the mean); 0 and 1 are aliases")


def within_radius(g: TieStats, m: Measure) -> tuple[np.ndarray, np.ndarray]:
    """(relevant items within the radius, items within the radius) per query."""
    if g.group_key is None:
        raise InputError(f"measure {m.text or str(m)!r}: radius measures need the distance of each item "
                         "(use evaluate_codes or evaluate_matrix(distances=...))")
    inside = g.group_key >= -float(m["radius"])
    r, _ = g.relevant_sum(m["rel"])
    size_in = np.bincount(g.group_query, weights=np.where(inside, g.group_size, 0).astype(np.float64),
                          minlength=g.n_queries)
    hits_in = np.bincount(g.group_query, weights=np.where(inside, r, 0.0), minlength=g.n_queries)
    return hits_in, size_in


def precision_within(g: TieStats, m: Measure) -> np.ndarray:
    """Relevant items within the radius / items within the radius (``empty`` when none)."""
    hits, size = within_radius(g, m)
    fill = {"zero": 0.0, "one": 1.0, "skip": np.nan}[m["empty"]]
    return np.where(size == 0, fill, divide(hits, size))


def recall_within(g: TieStats, m: Measure) -> np.ndarray:
    """Relevant items within the radius / all relevant items of the query (0 when none)."""
    hits, _ = within_radius(g, m)
    return divide(hits, g.judged.count_at_least(m["rel"]))


P_RADIUS = MeasureFamily(
    "P", "precision within Hamming radius r: relevant items at distance <= r / items at distance <= r",
    {"radius": RADIUS, "rel": REL, "empty": EMPTY}, "none", precision_within, binary_preference, value_range=(0.0, 1.0))
R_RADIUS = MeasureFamily(
    "R", "recall within Hamming radius r: relevant items at distance <= r / all relevant items",
    {"radius": RADIUS, "rel": REL}, "none", recall_within, binary_preference, value_range=(0.0, 1.0))

#: the family a measure string uses when it names ``radius=``: ``P(radius=2)`` -> P_RADIUS. These share
#: their names with the cutoff families of ``counting.py``, so they are not registered by name (no
#: ``FAMILIES`` list on purpose): the parser switches to them when the parameters include ``radius``.
RADIUS_FAMILIES = {"P": P_RADIUS, "R": R_RADIUS}


def radius_measure(name: str, radius: float, **params: Any) -> Measure:
    """``P(radius=r)`` / ``R(radius=r)`` as a :class:`Measure` (what the parser returns for the string).

    >>> from tierank.measures.radius import radius_measure
    >>> str(radius_measure("P", 2))
    'P(radius=2)'
    >>> str(radius_measure("P", 2, empty="skip"))
    "P(empty='skip', radius=2)"
    """
    family = RADIUS_FAMILIES.get(name)
    if family is None:
        raise InputError(f"radius= is accepted by {', '.join(RADIUS_FAMILIES)}, not {name!r}")
    shown = ", ".join(f"{k}={v!r}" for k, v in {"radius": radius, **params}.items())
    return family.bind({"radius": radius, **params}, None, f"{name}({shown})")
