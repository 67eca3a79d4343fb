"""Rank-biased precision (RBP, RBP@k): ``(1 - p) Σ_{i<=k} p^(i-1) b_i`` with ``b_i = [grade_i >= rel]``.

RBP is linear in the positions, so the tie-aware value takes each tie's mean relevance ``r / n`` times
the total weight of its positions: for a tie after t items, its first s positions weigh
``(1 - p) Σ_{j=1}^{s} p^(t+j-1) = p^t (1 - p^s)`` (a geometric series). With p = 0 only rank 1 counts.
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np

from ..ties.groups import TieStats
from ._common import binary_preference, divide
from ._spec import Measure, MeasureFamily, Param, real_param


class _Persistence:
    """Checker of p: a real number in [0, 1) (a class, so measures pickle)."""

    def __call__(self, v: Any) -> Any:
        if isinstance(v, bool) or not isinstance(v, (int, float)) or not math.isfinite(float(v)):
            raise ValueError(f"p must be a finite number, got {v!r}")
        if not 0 <= v < 1:
            raise ValueError(f"p must be >= 0 and < 1 (the persistence), got {v!r}")
        return float(v)


def _weight(p: float, t: np.ndarray, s: np.ndarray) -> np.ndarray:
    """p^t (1 - p^s): the RBP weight of positions t+1 .. t+s (s >= 0)."""
    t = np.asarray(t, dtype=np.float64)
    s = np.asarray(s, dtype=np.float64)
    if p == 0.0:
        return ((t == 0) & (s > 0)).astype(np.float64)
    lp = math.log(p)
    return np.exp(t * lp) * -np.expm1(s * lp)     # exp underflows quietly to 0 far down the list


def rbp(g: TieStats, m: Measure) -> np.ndarray:
    p, rel = m["p"], m["rel"]
    r = g.group_sum(("b", rel), lambda x, _q: x >= rel)
    frac = divide(r, g.group_size)
    full = g.memo(("rbp_full", p, rel), lambda: frac * _weight(p, g.group_first, g.group_size))
    K = g.clamp(m.cutoff)
    out = np.zeros(g.n_queries)
    ok = K > 0
    if not ok.any():
        return out
    cut = g.cut(np.where(ok, K, 1))
    val = g.sum_before_cut(full, cut) + frac[cut.group] * _weight(p, cut.t, cut.m)
    out[ok] = val[ok]
    return out


def _require_rel(params: dict[str, Any]) -> dict[str, Any]:
    # ir-measures' RBP without rel is graded; only the binary form is computed here, so rel is explicit
    if params["rel"] is None:
        raise ValueError("RBP needs rel= (e.g. RBP(rel=1)): without rel, ir-measures computes graded RBP, "
                         "which tierank does not compute yet")
    return params


REL_REQUIRED = Param(None, real_param("rel", allow_none=True, minimum=0, why=": negative grades are unjudged"),
                     "grade threshold (required): an item is relevant when its grade >= rel")

P_PARAM = Param(0.8, _Persistence(), "persistence: the probability of looking at the next item "
                                      "(ir-measures' default 0.8; trec_eval's rbp uses 0.9)")

FAMILIES = [
    MeasureFamily("RBP", "rank-biased precision: (1 - p) Σ p^(i-1) [grade_i >= rel]", {"p": P_PARAM, "rel": REL_REQUIRED},
                  "optional", rbp, binary_preference, normalize=_require_rel, value_range=(0.0, 1.0)),
]
