"""Discounted cumulative gain (DCG, DCG@k) and its normalised form (nDCG, nDCG@k).

Linear in the gains, so the tie-aware value gives every position of a tie the tie's mean gain
(docs/maths.md, section "Position-weighted sums"; what scikit-learn's ``dcg_score`` does). The ideal DCG sorts the judged gains
of the query descending and does not depend on the order of the run.
"""

from __future__ import annotations

import math
from numbers import Real
from typing import Any, Callable, NamedTuple

import numpy as np

from .._user_functions import call_checked
from ..errors import InputError
from ..ties.groups import (GradeFn, Judged, PositionFn, TieStats, position_prefix, position_sum,
                           within_query_exclusive_cumsum)
from ._common import divide
from ._spec import Measure, MeasureFamily, Param, QueryError, choice_param
from ._trec import TREC_CUTOFFS, TrecName, parse_pairs


class _NameOrFunction:
    """Checker of a parameter that is one of some names or, in Python, a function (a class, so measures
    pickle; a module-level function pickles too, a lambda does not)."""

    def __init__(self, name: str, names: tuple) -> None:
        self.name, self.names = name, names

    def __call__(self, v: Any) -> Any:
        if callable(v):
            return v
        return choice_param(self.name, self.names)(v)


GAIN = Param("linear", _NameOrFunction("gain", ("linear", "exp2")),
             "gain of a grade g: 'linear' g, 'exp2' 2^g - 1 (negative grades: 0); in Python also a function "
             "of an array of grades >= 0 (keras-rs gain_fn), giving gains >= 0 that grow with the grade")
DISCOUNT = Param("log2", _NameOrFunction("discount", ("log2", "ln", "log10", "jk")),
                 "discount of position i: 'log2' 1/log2(i+1), 'ln' 1/ln(i+1) (MatchZoo), 'log10' "
                 "1/log10(i+1); 'jk' 1 at i = 1, then 1/log2(i); in Python also a function of an array of "
                 "1-based ranks (keras-rs rank_discount_fn), finite, >= 0, non-increasing")


def log2_discount(ranks: np.ndarray) -> np.ndarray:
    """1/log2(i+1) at 1-based ranks i (in the ranks' precision; ``ranks`` is overwritten)."""
    ranks += 1.0
    np.log2(ranks, out=ranks)
    return np.divide(1.0, ranks, out=ranks)


def ln_discount(ranks: np.ndarray) -> np.ndarray:
    """1/ln(i+1) at 1-based ranks i (MatchZoo)."""
    return 1.0 / np.log(ranks + 1.0)


def log10_discount(ranks: np.ndarray) -> np.ndarray:
    """1/log10(i+1) at 1-based ranks i."""
    return 1.0 / np.log10(ranks + 1.0)


def jk_discount(ranks: np.ndarray) -> np.ndarray:
    """Järvelin and Kekäläinen's discount: 1 at rank 1, then 1/log2(i)."""
    out = np.ones_like(ranks)
    big = ranks >= 2
    out[big] = 1.0 / np.log2(ranks[big])
    return out


#: the named discounts, as position functions of 1-based ranks (:func:`tierank.ties.groups.position_sum`)
DISCOUNTS: dict[str, PositionFn] = {"log2": log2_discount, "ln": ln_discount, "log10": log10_discount,
                                    "jk": jk_discount}


class _UserDiscount(NamedTuple):
    """A user's discount function as a position function, checked at every call: finite and >= 0; on
    the ranks 1, 2, ... of the prefix sums (long doubles, :func:`tierank.ties.groups.position_prefix`)
    also non-increasing, since the bounds assume it. Equal (so cached as one) for the same function."""

    fn: Callable

    def __call__(self, ranks: np.ndarray) -> np.ndarray:
        values = call_checked(self.fn, ranks.astype(np.float64, copy=False), what="discount", of="rank")
        if ranks.dtype == np.longdouble and len(values) > 1 and (np.diff(values) > 0).any():
            i = int(np.argmax(np.diff(values) > 0))
            raise InputError(f"the discount function increases from rank {i + 1} to {i + 2} ({values[i]!r} < "
                             f"{values[i + 1]!r}); discounts must not increase with the rank")
        return values


def discount_function(m: Measure) -> PositionFn:
    """The measure's discount as a position function of 1-based ranks: a named one, or the user's
    function, checked."""
    disc = m["discount"]
    return _UserDiscount(disc) if callable(disc) else DISCOUNTS[disc]


DCG_SPELLING = Param(None, choice_param("dcg", (None, "log2", "exp-log2")),
                     "ir-measures spelling: 'log2' is gain='linear', 'exp-log2' is gain='exp2'")


def _check_gains(v: Any) -> Any:
    if v is None:
        return None
    if not isinstance(v, dict) or not all(isinstance(x, Real) and not isinstance(x, bool) and math.isfinite(float(x))
                                          for kv in v.items() for x in kv):
        raise ValueError(f"gains must be a dict of finite numbers {{grade: gain}}, got {v!r}")
    bad = [k for k in v if k < 0]
    if bad:
        raise ValueError(f"gains: grade {bad[0]!r} is negative; negative grades are unjudged documents, "
                         "whose gain is always 0 (list grades >= 0 only)")
    bad = [k for k, x in v.items() if x < 0]
    if bad:
        raise ValueError(f"gains: the gain of grade {bad[0]!r} is negative ({v[bad[0]]!r}); gains must be >= 0")
    return {k: v[k] for k in sorted(v)}


GAINS = Param(None, _check_gains, "custom gains {grade: gain} (grades and gains >= 0); unlisted grades keep "
                                  "the gain function's; negative grades (unjudged) always have gain 0")


def normalize_dcg_spelling(p: dict[str, Any]) -> dict[str, Any]:
    """The parameters with ir-measures' ``dcg=`` spelling turned into the ``gain`` it means."""
    if p["dcg"] is not None:
        implied = {"log2": "linear", "exp-log2": "exp2"}[p["dcg"]]
        if p["gain"] != "linear" and p["gain"] != implied:
            raise ValueError(f"dcg={p['dcg']!r} contradicts gain={p['gain']!r}")
        p = dict(p, gain=implied, dcg=None)
    return p


def item_gains(m: Measure, grades: np.ndarray, shift: np.ndarray | None = None) -> np.ndarray:
    """Gain of every grade under the measure's gain and gains map, times ``2**-shift`` (``shift``: an
    integer-valued float exponent per grade, None for 0). Negative grades (unjudged) have gain 0 whatever
    the map.

    With a shift, exp2 gains are ``2**(g - s) - 2**-s``: ``2**g`` is never formed, so any finite grade
    gives a finite gain (``g - s`` is exact where it matters: for the grades near the query's largest).
    """
    pos = np.maximum(grades, 0.0)
    if m["gains"]:   # listed grades get their own gains: 0 for the function below (2**2000 would overflow)
        pos = np.where(np.isin(grades, list(m["gains"])), 0.0, pos)
    if callable(m["gain"]):
        out = np.where(grades < 0, 0.0, _custom_gains(m["gain"], pos))
        out = out if shift is None else _scaled(out, shift)
    elif m["gain"] == "linear":
        out = pos if shift is None else _scaled(pos, shift)
    else:
        out = _exp2_gains(pos, shift)
    if m["gains"]:   # the listed grades' values replace the gain function's (an overflowed one too)
        out = out.copy()
        for grade, gain in m["gains"].items():  # loop over the few listed grades
            at = grades == grade
            out[at] = gain if shift is None else _scaled(np.full(int(at.sum()), float(gain)), shift[at])
    return out


def _exp2_gains(pos: np.ndarray, shift: np.ndarray | None) -> np.ndarray:
    """``(2**g - 1) * 2**-shift`` for grades g >= 0: from g >= 1 as ``2**(g - shift) - 2**-shift`` (2**g is
    never formed; the difference loses nothing, 2**g >= 2), below 1 as ``expm1(g ln 2)`` scaled (2**g - 1
    would cancel: 2**1e-20 - 1 is 0 in float64, and the gain of a grade 5e-324 is 3.4e-324)."""
    small = pos < 1.0
    s = np.zeros(len(pos)) if shift is None else np.broadcast_to(shift, pos.shape)
    if not small.any():
        return np.exp2(pos - s) - np.exp2(-s)
    out = np.empty(len(pos))
    out[small] = _scaled(np.expm1(pos[small] * np.log(2.0)), s[small])
    tiny = pos < 2.0 ** -60   # expm1(x) = x here: scale first, so that x ln 2 is not a rounded subnormal
    out[tiny] = _scaled(pos[tiny], s[tiny]) * np.log(2.0)
    big = ~small
    out[big] = np.exp2(pos[big] - s[big]) - np.exp2(-s[big])
    return out


def _scaled(x: np.ndarray, shift: np.ndarray) -> np.ndarray:
    """``x * 2**-shift``, exactly rounded (an exponent change; beyond 2**20 every finite x gives 0)."""
    return np.ldexp(x, -np.clip(shift, -2.0 ** 20, 2.0 ** 20).astype(np.int64))


def ideal_gains(g: TieStats, m: Measure, scaled: bool = False) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """The judged documents of positive gain, as runs (query, gain, count) sorted by query, then gain
    descending: every query's ideal ranking (G, NDCGRel and Rndcg build their ideal weights on it).
    ``scaled``: the gains of :func:`ratio_gains` (times the query's 2**-shift), for measures that are
    ratios of gain sums. Both forms come in the same order, that of the true gains (exp2 gains beyond
    float64 are inf unscaled, small ones may be 0 scaled: each breaks the other's ties)."""
    j = g.judged
    with np.errstate(over="ignore"):   # an exp2 gain beyond float64 is positive (inf)
        gains = item_gains(m, j.grade)
    keep = gains > 0
    order_by = (-gains,)
    if scaled or _shifts(m, g) is not None:
        _key, fn, _with_query = ratio_gains(g, m)
        scaled_gains = fn(j.grade, j.query)
        order_by = (-scaled_gains, -gains)
        if scaled:
            gains = scaled_gains
    order = np.lexsort(tuple(v[keep] for v in order_by) + (j.query[keep],))
    return j.query[keep][order], gains[keep][order], j.count[keep][order]


def ratio_gains(g: TieStats, m: Measure) -> tuple[tuple, Callable, bool]:
    """(memo key, ``f(grades, query)``, whether f needs the query) of the item gains of a measure that is a
    ratio of gain sums of one query (nDCG, NDCGRel, Rndcg): the gains times 2**-shift, a per-query power
    of two (:func:`_shifts`), where some gain of the query reaches 2**_MAX_EXP, so that any finite grade
    gives finite sums; the ratio is unchanged (terms that underflow are below 2**-2000 of the largest)."""
    shift = _shifts(m, g)
    if shift is None:
        return _gain_key(m), lambda grades, _q: item_gains(m, grades), False
    return _gain_key(m) + ("shifted",), lambda grades, q: item_gains(m, grades, shift[q]), True


def _custom_gains(fn: Any, grades: np.ndarray) -> np.ndarray:
    """A user's gain function on grades >= 0, checked: one finite gain >= 0 per grade."""
    return call_checked(fn, grades, what="gain", of="grade", each="gain")


# Exponent of the largest gain a query's DCG may sum before its values are scaled by 2**-shift: sums of
# up to 2**60 discounted gains below 2**_MAX_EXP stay far from float64's 2**1024.
_MAX_EXP = 960


def _gain_exponent(m: Measure, g: TieStats) -> np.ndarray:
    """Per query, an integer-valued float E with every gain of the query < 2**E, from its judged grades'
    positive gains (0 for a query without one; for exp2 gains E is the grade's ceiling plus one, which
    may be far beyond 1024)."""
    j = g.judged
    pos = np.maximum(j.grade, 0.0)
    if callable(m["gain"]):
        gains = item_gains(m, j.grade)
        e = np.frexp(gains)[1].astype(np.float64)
        positive = gains > 0
    elif m["gain"] == "linear":
        e = np.frexp(pos)[1].astype(np.float64)
        positive = pos > 0
    else:   # 2**g - 1 < 2**(ceil(g) + 1), and below grade 1, 2**g - 1 <= g
        e = np.where(pos >= 1.0, np.ceil(pos) + 1.0, np.frexp(pos)[1].astype(np.float64))
        positive = pos > 0
    for grade, gain in (m["gains"] or {}).items():  # loop over the few listed grades
        at = j.grade == grade
        e[at] = float(np.frexp(float(gain))[1])
        positive[at] = gain > 0
    out = np.full(g.n_queries, -np.inf)
    np.maximum.at(out, j.query[positive], e[positive])
    return np.where(np.isfinite(out), out, 0.0)


def _shifts(m: Measure, g: TieStats) -> np.ndarray | None:
    """The per-query scale exponents of the gains, integer-valued floats (None: no query needs one, the
    common case). Every scaled gain is below 2**_MAX_EXP: from 2**53 on, where ``E - _MAX_EXP`` would
    round, the shift is E itself (grade - shift <= 0 then, exactly). A query whose gains are all below
    2**-_MAX_EXP (grades of 1e-300) is scaled up instead, to gains below 1: the inverse of its ideal DCG
    stays finite and its sums keep their digits (subnormal numbers have few)."""
    e = g.memo(("gain_exp", m["gain"], repr(m["gains"])), lambda: _gain_exponent(m, g))
    tiny = e < -_MAX_EXP
    if not ((e > _MAX_EXP) | tiny).any():
        return None
    return np.where(tiny, e, np.where(e < 2.0 ** 53, np.maximum(e - _MAX_EXP, 0.0), e))


def _gain_key(m: Measure) -> tuple:
    return ("gain", m["gain"], repr(m["gains"]))


def _dcg(g: TieStats, m: Measure, shift: np.ndarray | None) -> np.ndarray:
    # every position of a group gets the group's mean gain: docs/maths.md, "Position-weighted sums"
    gkey = _gain_key(m) + (("shifted",) if shift is not None else ())
    disc = discount_function(m)

    if shift is None:
        def gains(grades: np.ndarray, _q: np.ndarray | None) -> np.ndarray:
            return item_gains(m, grades)
    else:
        def gains(grades: np.ndarray, q: np.ndarray | None) -> np.ndarray:
            return item_gains(m, grades, shift[q])
    with_query = shift is not None

    if callable(m["discount"]) and len(g.lengths):   # a user's discount: checked over every rank used
        position_prefix(disc, int(g.lengths.max()))
    cut = g.cut(g.clamp(m.cutoff))
    in_cut = g.subset_sum(gkey, gains, cut.group, with_query) / cut.n   # the cut group's mean gain
    last = in_cut * position_sum(disc, cut.t, cut.m)
    full_key = ("dcg_full", gkey, disc)
    if m.cutoff is not None and not g.memoised(full_key):
        before, query = g.groups_before_cut(cut)
        if 4 * len(before) < g.n_groups:   # a shallow cutoff: read only the groups above the cuts
            mean = g.subset_sum(gkey, gains, before, with_query) / g.group_size[before]
            part = mean * position_sum(disc, g.group_first[before], g.group_size[before])
            return np.bincount(query, weights=part, minlength=g.n_queries) + last

    def build_full() -> np.ndarray:
        total = g.group_sum(gkey, gains, with_query)
        mean = total if g.all_singletons else total / g.group_size   # one item per group: its gain
        d = position_sum(disc, g.group_first, g.group_size)
        return np.multiply(mean, d, out=d)   # in place: d is a fresh array

    return g.sum_before_cut(g.memo(full_key, build_full), cut) + last


def ideal_dcg(judged: Judged, key: object, gain_fn: GradeFn, discount: PositionFn, k: int | None) -> np.ndarray:
    """DCG of the judged gains sorted descending, cut at k, per query (``gain_fn(grades, query)``, which
    ``key`` names for the memo)."""
    def build() -> np.ndarray:
        gains = gain_fn(judged.grade, judged.query)
        order = np.lexsort((-gains, judged.query))
        q, c, gn = judged.query[order], judged.count[order], gains[order]
        first = np.searchsorted(q, np.arange(judged.n_queries))
        start = within_query_exclusive_cumsum(c, q, first).astype(np.int64)
        end = start + c
        if k is not None:
            start, end = np.minimum(start, k), np.minimum(end, k)
        return judged.per_query(gn * position_sum(discount, start, end - start))
    return judged.memo(("idcg", key, discount, k), build)


def _idcg(g: TieStats, m: Measure, shift: np.ndarray | None) -> np.ndarray:
    if shift is None:
        return ideal_dcg(g.judged, _gain_key(m), lambda grades, _q: item_gains(m, grades), discount_function(m),
                         m.cutoff)
    return ideal_dcg(g.judged, _gain_key(m) + ("shifted",), lambda grades, q: item_gains(m, grades, shift[q]),
                     discount_function(m), m.cutoff)


class DCGOverflow(QueryError):
    """A DCG value beyond float64's range; carries the query index for the caller's message."""

    def __init__(self, query: int, text: str, grade: float) -> None:
        super().__init__(f"measure {text!r}: the DCG of this query is beyond float64's range (largest "
                         f"grade {grade:g}); use nDCG, which is a ratio and stays exact, or smaller grades",
                         query)


def dcg(g: TieStats, m: Measure) -> np.ndarray:
    shift = _shifts(m, g)
    if shift is None:
        return _dcg(g, m, None)
    # Some gain of the query reaches 2**_MAX_EXP: the plain sums are right wherever they stay finite (a
    # gain beyond float64 outside the top k does not enter them); elsewhere the sums scaled by 2**-shift,
    # scaled back, when that is finite and the scaled sum is a normal number (the terms that underflowed,
    # each below 2**-1074, are then below 2**-70 of it).
    with np.errstate(over="ignore", invalid="ignore"):
        out = _dcg(g, m, None)
    redo = ~np.isfinite(out)
    if redo.any():
        scaled = _dcg(g, m, shift)
        with np.errstate(over="ignore"):   # values beyond float64 become inf and are reported below
            back = np.ldexp(scaled, np.minimum(shift, 2.0 ** 20).astype(np.int64))
        out = np.where(redo, back, out)
        bad = np.flatnonzero(redo & ~(np.isfinite(back) & (scaled >= 2.0 ** -900)))
        if bad.size:
            q = int(bad[0])
            raise DCGOverflow(q, m.text or str(m), float(g.memo("max_grade", g.judged.max_grade)[q]))
    return out


def ndcg(g: TieStats, m: Measure) -> np.ndarray:
    # a ratio: DCG and the ideal DCG scaled by the same 2**-shift per query give the same value
    shift = _shifts(m, g)
    return divide(_dcg(g, m, shift), _idcg(g, m, shift))


def gain_preference(m: Measure, grades: np.ndarray) -> list[np.ndarray]:
    if callable(m["gain"]) or m["gain"] == "linear" or grades.size == 0 or grades.max() < _MAX_EXP:
        return [item_gains(m, grades)]
    # exp2 gains beyond float64: the same order in log2 space, log2(2**g - 1) = g + log2(1 - 2**-g)
    pos = np.maximum(grades, 0.0)
    with np.errstate(divide="ignore"):   # gain 0 -> -inf, the lowest key
        out = pos + np.log1p(-np.exp2(-pos)) / np.log(2.0)
        for grade, gain in (m["gains"] or {}).items():  # loop over the few listed grades
            out[grades == grade] = np.log2(float(gain))
    return [out]


gain_preference.params = ("gain", "gains")  # type: ignore[attr-defined]


def trec_gains(text: str) -> dict:
    """trec_eval's ``ndcg.1=3,2=9``: gains of grades (levels not listed keep gain = grade)."""
    gains = {}
    for level, gain in parse_pairs(text).items():
        if not level.lstrip("-").isdigit():
            raise ValueError(f"relevance level {level!r} is not an integer")
        gains[int(level)] = gain
    return {"gains": GAINS.check(gains)}


def show_gains(values: dict) -> str:
    """The ``gains`` parameter as trec_eval writes it (``1=3,2=9``), ``""`` for none."""
    gains = values["gains"]
    return "" if gains is None else ",".join(f"{k:g}={v:g}" for k, v in gains.items())


DCG_PARAMS = {"gain": GAIN, "discount": DISCOUNT, "gains": GAINS, "dcg": DCG_SPELLING}

FAMILIES = [
    MeasureFamily("nDCG", "normalised DCG: DCG divided by the ideal DCG of the judged grades", DCG_PARAMS,
                  "optional", ndcg, gain_preference, normalize=normalize_dcg_spelling,
                  aliases=(("ndcg_burges", {"gain": "exp2"}),), value_range=(0.0, 1.0),
                  trec=(TrecName("ndcg", "param", sets=("gains",), bind=trec_gains, show=show_gains),
                        TrecName("ndcg_cut", "cutoffs", TREC_CUTOFFS)), reads="top_k"),
    MeasureFamily("DCG", "discounted cumulative gain", DCG_PARAMS, "optional", dcg, gain_preference,
                  normalize=normalize_dcg_spelling, aliases=(("dcg_burges", {"gain": "exp2"}),), value_range=(0.0, math.inf), reads="top_k"),
]
