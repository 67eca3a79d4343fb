"""Rank-biased precision (RBP, RBP@k) and its residual (RBPResid).

RBP is ``(1 - p) Σ_{i<=k} p^(i-1) v_i`` with ``v_i = [grade_i >= rel]`` (binary, ir-measures'
``RBP(rel=1)``) or, with ``rel=None``, trec_eval 10's graded ``rbp``: the grade (negative grades: 0)
divided by the query's largest judged grade when that exceeds 1, so gains lie in [0, 1].
RBPResid (trec_eval ``rbp_resid``) is the most the unjudged documents could add:
``p^n + (1 - p) Σ_i p^(i-1) [grade_i < 0]`` when some retrieved document is unjudged, else 0.

Both are linear in the positions (docs/maths.md, "Position-weighted sums"), so the tie-aware value
takes each tie's mean item value times the total weight of its positions: for a tie after t items, its
first s positions weigh ``(1 - p) Σ_{j=1}^{s} p^(t+j-1) = p^t (1 - p^s)``. With p = 0 only rank 1 counts.
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np

from ..ties.groups import TieStats
from ._common import divide, grade_shifts
from ._spec import Measure, MeasureFamily, Param, real_param
from ._trec import TrecName, parse_pairs


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


def _group_values(g: TieStats, m: Measure) -> tuple[object, np.ndarray]:
    """(memo key, per-group sum of the item values): binary ``[grade >= rel]``, or with ``rel=None``
    trec_eval's graded gain, the grade divided by the query's largest judged grade when that exceeds 1
    (the grades are summed first, exactly when they are whole, then divided by the query's scale)."""
    rel = m["rel"]
    if rel is not None:
        return ("b", rel), g.group_sum(("b", rel), lambda x, _q: x >= rel)
    scale = g.memo("rbp_scale", lambda: np.maximum(g.judged.max_grade(), 1.0))
    shift = grade_shifts(g)
    if shift is None:
        grades = g.group_sum("positive_grade", lambda x, _q: np.maximum(x, 0.0))
        return "rbp_gain", grades / scale[g.group_query]
    # grades near float64's largest: summed times 2**-shift (a power of two: exact), over the scale alike
    grades = g.group_sum(("positive_grade", "scaled"), lambda x, q: np.ldexp(np.maximum(x, 0.0), -shift[q]), True)
    return "rbp_gain", grades / np.ldexp(scale, -shift)[g.group_query]


def rbp(g: TieStats, m: Measure) -> np.ndarray:
    p = m["p"]
    key, r = _group_values(g, m)
    frac = divide(r, g.group_size)
    full = g.memo(("rbp_full", p, key), lambda: frac * _weight(p, g.group_first, g.group_size))
    return _top_k_weighted(g, m, frac, full, p)


def _top_k_weighted(g: TieStats, m: Measure, frac: np.ndarray, full: np.ndarray, p: float) -> np.ndarray:
    """Σ over the top K of the group's mean item value times the RBP weight of its positions."""
    K = g.clamp(m.cutoff)
    out = np.zeros(g.n_queries)
    ok = K > 0
    if not ok.any():
        return out
    cut = g.cut(np.where(ok, K, 1))
    val = g.sum_before_cut(full, cut) + frac[cut.group] * _weight(p, cut.t, cut.m)
    out[ok] = val[ok]
    return out


def _unjudged(x: np.ndarray, _q: np.ndarray | None = None) -> np.ndarray:
    return x < 0


def rbp_resid(g: TieStats, m: Measure) -> np.ndarray:
    # trec_eval rbp_resid: p^n + (1 - p) Σ p^(i-1) [unjudged_i] when any retrieved document is unjudged,
    # else 0 (whether any is unjudged does not depend on the order); the sum is linear in the positions
    p = m["p"]
    u = g.group_sum("unjudged", _unjudged)
    frac = divide(u, g.group_size)
    full = frac * _weight(p, g.group_first, g.group_size)
    n = g.lengths.astype(np.float64)
    tail = np.exp(n * math.log(p)) if p > 0 else (n == 0).astype(np.float64)
    value = tail + np.bincount(g.group_query, weights=full, minlength=g.n_queries)
    any_unjudged = np.bincount(g.group_query, weights=u, minlength=g.n_queries) > 0
    return np.where(any_unjudged, value, 0.0)


def _graded_or_binary(m: Measure, grades: np.ndarray) -> list[np.ndarray]:
    rel = m["rel"]
    return [(grades >= rel).astype(np.float64) if rel is not None else np.maximum(grades, 0.0)]


_graded_or_binary.params = ("rel",)  # type: ignore[attr-defined]


def _unjudged_first(m: Measure, grades: np.ndarray) -> list[np.ndarray]:
    return [(grades < 0).astype(np.float64)]


_unjudged_first.params = ()  # type: ignore[attr-defined]


def _trec_p(text: str) -> dict:
    """trec_eval's ``rbp.p=0.8``: the persistence (other names are gains, which rbp here does not take);
    ranx's ``rbp.95`` (digits only): p = 0.95, binary relevance (grade >= 1), as ranx computes it."""
    if text.isdigit():
        return {"p": P_PARAM.check(float("0." + text)), "rel": 1}
    pairs = parse_pairs(text)
    unknown = sorted(set(pairs) - {"p"})
    if unknown:
        raise ValueError(f"rbp takes p=..., not {unknown[0]}= (custom gains are not supported)")
    return {"p": P_PARAM.check(pairs.get("p", 0.9))}


def _show_p(values: dict) -> str:
    return "" if values["p"] == 0.9 else f"p={values['p']:g}"


REL_OR_GRADED = Param(None, real_param("rel", allow_none=True, minimum=0, why=": negative grades are unjudged"),
                      "grade threshold: relevant when grade >= rel (binary RBP, ir-measures); None: graded, "
                      "gains = grades divided by the query's largest judged grade when above 1 (trec_eval rbp)")

P_PARAM = Param(0.8, _Persistence(), "persistence: the probability of looking at the next item "
                                      "(ir-measures' default 0.8; trec_eval's rbp uses 0.9)")
P_RESID = Param(0.9, _Persistence(), "persistence, as in trec_eval's rbp_resid (default 0.9)")

FAMILIES = [
    MeasureFamily("RBP", "rank-biased precision: (1 - p) Σ p^(i-1) gain_i, gain [grade >= rel] or the scaled grade",
                  {"p": P_PARAM, "rel": REL_OR_GRADED}, "optional", rbp, _graded_or_binary, value_range=(0.0, 1.0),
                  trec=(TrecName("rbp", "param", default="p=0.9", preset=(("rel", None),), sets=("p",),
                                 bind=_trec_p, show=_show_p),)),
    MeasureFamily("RBPResid", "RBP's residual: the most the unjudged documents could add, p^n + (1 - p) Σ p^(i-1) "
                  "[unjudged_i] (trec_eval rbp_resid)", {"p": P_RESID}, "none", rbp_resid, _unjudged_first,
                  aliases=(("rbp_resid", {}),), value_range=(0.0, 1.0),
                  trec=(TrecName("rbp_resid", "param", default="p=0.9", sets=("p",), bind=_trec_p,
                                 show=_show_p),)),
]
