"""Discounted cumulative gain (DCG, DCG@k) and its normalised form (nDCG, nDCG@k).

Linear in the gains, so the tie-aware value gives every position of a tie the tie's mean gain
(tie_math.md §1, DCG@k; what scikit-learn's ``dcg_score`` does). The ideal DCG sorts the judged gains
of the query descending and does not depend on the order of the run.
"""

from __future__ import annotations

from numbers import Real
from typing import Any

import numpy as np

from ..ties.groups import TieStats, position_sum
from ._common import divide
from ._spec import Measure, MeasureFamily, Param, choice_param

GAIN = Param("linear", choice_param("gain", ("linear", "exp2")),
             "gain of a grade g: 'linear' g, 'exp2' 2^g - 1 (negative grades: 0)")
DISCOUNT = Param("log2", choice_param("discount", ("log2", "jk")),
                 "discount of position i: 'log2' 1/log2(i+1); 'jk' 1 at i = 1, then 1/log2(i)")
DCG_SPELLING = Param(None, choice_param("dcg", (None, "log2", "exp-log2")),
                     "ir-measures spelling: 'log2' is gain='linear', 'exp-log2' is gain='exp2'")


def _check_gains(v: Any) -> Any:
    if v is None:
        return None
    if not isinstance(v, dict) or not all(
            isinstance(x, Real) and not isinstance(x, bool) and np.isfinite(x) for kv in v.items() for x in kv):
        raise ValueError(f"gains must be a dict of finite numbers {{grade: gain}}, got {v!r}")
    return {k: v[k] for k in sorted(v)}


GAINS = Param(None, _check_gains, "custom gains {grade: gain}; unlisted grades keep the gain function's")


def _normalize(p: dict[str, Any]) -> dict[str, Any]:
    if p["dcg"] is not None:
        implied = {"log2": "linear", "exp-log2": "exp2"}[p["dcg"]]
        if p["gain"] != "linear" and p["gain"] != implied:
            raise ValueError(f"dcg={p['dcg']!r} contradicts gain={p['gain']!r}")
        p = dict(p, gain=implied, dcg=None)
    return p


def item_gains(m: Measure, grades: np.ndarray) -> np.ndarray:
    """Gain of every grade under the measure's gain, gains map (negative grades: 0)."""
    pos = np.maximum(grades, 0.0)
    out = pos if m["gain"] == "linear" else np.exp2(pos) - 1.0
    if m["gains"]:
        out = out.copy()
        for grade, gain in m["gains"].items():  # loop over the few listed grades
            out[grades == grade] = gain
    return out


def _gain_key(m: Measure) -> tuple:
    return ("gain", m["gain"], repr(m["gains"]))


def _dcg(g: TieStats, m: Measure) -> np.ndarray:
    # every position of a group gets the group's mean gain: DCG_T@k of tie_math.md §1
    gkey = _gain_key(m)
    disc = m["discount"]

    def gains(grades: np.ndarray, _q: np.ndarray | None) -> np.ndarray:
        return item_gains(m, grades)

    cut = g.cut(g.clamp(m.cutoff))
    in_cut = g.subset_sum(gkey, gains, cut.group) / cut.n   # the cut group's mean gain
    last = in_cut * position_sum(disc, cut.t, cut.m)
    full_key = ("dcg_full", gkey, disc)
    if m.cutoff is not None and not g.memoised(full_key):
        before, query = g.groups_before_cut(cut)
        if 4 * len(before) < g.n_groups:   # a shallow cutoff: read only the groups above the cuts
            mean = g.subset_sum(gkey, gains, before) / g.group_size[before]
            part = mean * position_sum(disc, g.group_first[before], g.group_size[before])
            return np.bincount(query, weights=part, minlength=g.n_queries) + last

    def build_full() -> np.ndarray:
        total = g.group_sum(gkey, gains)
        mean = total if g.all_singletons else total / g.group_size   # one item per group: its gain
        d = position_sum(disc, g.group_first, g.group_size)
        return np.multiply(mean, d, out=d)   # in place: d is a fresh array

    return g.sum_before_cut(g.memo(full_key, build_full), cut) + last


def _idcg(g: TieStats, m: Measure) -> np.ndarray:
    return g.judged.ideal_dcg(_gain_key(m), lambda grades: item_gains(m, grades), m["discount"], m.cutoff)


def dcg(g: TieStats, m: Measure) -> np.ndarray:
    return _dcg(g, m)


def ndcg(g: TieStats, m: Measure) -> np.ndarray:
    return divide(_dcg(g, m), _idcg(g, m))


def gain_preference(m: Measure, grades: np.ndarray) -> list[np.ndarray]:
    return [item_gains(m, grades)]


gain_preference.params = ("gain", "gains")  # type: ignore[attr-defined]

_PARAMS = {"gain": GAIN, "discount": DISCOUNT, "gains": GAINS, "dcg": DCG_SPELLING}

FAMILIES = [
    MeasureFamily("nDCG", "normalised DCG: DCG divided by the ideal DCG of the judged grades", _PARAMS,
                  "optional", ndcg, gain_preference, normalize=_normalize,
                  aliases=(("ndcg_burges", {"gain": "exp2"}),)),
    MeasureFamily("DCG", "discounted cumulative gain", _PARAMS, "optional", dcg, gain_preference,
                  normalize=_normalize, aliases=(("dcg_burges", {"gain": "exp2"}),)),
]
