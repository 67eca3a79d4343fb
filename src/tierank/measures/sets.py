"""Set measures over the whole retrieved list: SetP, SetR, SetF, SetRelP, SetAP (trec_eval set_P,
set_recall, set_F, set_relative_P, set_map) and Utility (trec_eval utility).

With H relevant retrieved, n retrieved and R relevant judged documents, SetP = H / n, SetR = H / R and
trec_eval's set_F with parameter x, ``(x + 1) P R / (x P + R)``, simplifies to ``(x + 1) H / (x R + n)``
(0 when H = 0); set_relative_P is ``H / min(n, R)``, set_map ``SetP * SetR``, utility
``a H + b (n - H) + c (R - H) + d (N - n - R + H)`` with N the collection size. None depends on the
order of the list, so every tie mode gives the same value.
"""

from __future__ import annotations

import math

import numpy as np

from ..ties.groups import TieStats
from ._common import REL, divide, f_measure
from ._spec import Measure, MeasureFamily, Param, QueryError, real_param
from ._trec import TrecName, parse_doubles


def _counts(g: TieStats, m: Measure) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(H, n, R) per query."""
    r_all, _ = g.relevant_sum(m["rel"])
    H = np.bincount(g.group_query, weights=r_all, minlength=g.n_queries)
    return H, g.lengths.astype(np.float64), g.judged.count_at_least(m["rel"])


def set_p(g: TieStats, m: Measure) -> np.ndarray:
    H, n, _ = _counts(g, m)
    return divide(H, n)


def set_r(g: TieStats, m: Measure) -> np.ndarray:
    H, _, R = _counts(g, m)
    return divide(H, R)


def set_f(g: TieStats, m: Measure) -> np.ndarray:
    H, n, R = _counts(g, m)
    return f_measure(H, n, R, float(m["beta"]))


def set_relative_p(g: TieStats, m: Measure) -> np.ndarray:
    # trec_eval set_relative_P: H / min(n, R), the set precision over the best one possible
    H, n, R = _counts(g, m)
    return divide(H, np.minimum(n, R))


def set_ap(g: TieStats, m: Measure) -> np.ndarray:
    # trec_eval set_map, ir-measures SetAP: SetP * SetR = H^2 / (n R)
    H, n, R = _counts(g, m)
    return divide(H * H, n * R)


def utility(g: TieStats, m: Measure) -> np.ndarray:
    # trec_eval utility: a H + b (n - H) + c (R - H) + d (N - n - R + H), N the collection size
    H, n, R = _counts(g, m)
    a, b, c, d, N = (float(m[k]) for k in ("a", "b", "c", "d", "N"))
    with np.errstate(over="ignore", invalid="ignore"):   # overflows are caught by the bound below
        terms = (a * H, b * (n - H), c * (R - H), d * (N + H - n - R))
        value = terms[0] + terms[1] + terms[2] + terms[3]
        # a bound on the rounding error of the float64 sum (products, sums, and N + H - n - R)
        u = 2.0 ** -53
        bound = 4 * u * sum(np.abs(t) for t in terms) + 3 * u * abs(d) * (N + H + n + R)
        near = np.isfinite(bound) & (bound <= 2.0 ** -40 * np.abs(value))   # false for NaN and inf
    for q in np.flatnonzero(~near):   # loop over the few queries where the terms cancel or overflow
        value[q] = _exact_utility(m, (a, b, c, d, N), int(H[q]), int(n[q]), int(R[q]), int(q))
    return value


def _exact_utility(m: Measure, coefficients: tuple, H: int, n: int, R: int, query: int) -> float:
    """Utility of one query in exact rational arithmetic, rounded once; a QueryError beyond float64."""
    from fractions import Fraction   # here: only for the rare query whose float64 sum is not exact (1 ms to import)

    a, b, c, d, N = (Fraction(x) for x in coefficients)
    exact = a * H + b * (n - H) + c * (R - H) + d * (N + H - n - R)
    try:
        return float(exact)
    except OverflowError:
        raise QueryError(f"measure {m.text or str(m)!r}: the utility of this query is beyond float64's range "
                         f"(|value| > 1.8e308 with a={m['a']!r}, b={m['b']!r}, c={m['c']!r}, d={m['d']!r}, "
                         f"N={m['N']!r}); use smaller coefficients", query) from None


def _trec_coefficients(text: str) -> dict:
    """trec_eval's ``utility.2,-1,0,0``: the four coefficients a, b, c, d."""
    values = parse_doubles(text)
    if len(values) != 4:
        raise ValueError(f"utility takes four coefficients a,b,c,d, got {len(values)}")
    return dict(zip("abcd", values))


def _show_coefficients(values: dict) -> str:
    if [values[k] for k in "abcd"] == [1, -1, 0, 0]:
        return ""
    return ",".join(f"{values[k]:g}" for k in "abcd")


def _order_free(m: Measure, grades: np.ndarray) -> list[np.ndarray]:
    return [np.zeros(len(grades))]


_order_free.params = ()  # type: ignore[attr-defined]


def _trec_beta(text: str) -> dict:
    """trec_eval's ``set_F.0.5``: the parameter x (``beta`` here). trec_eval reads only the first of several
    values (``set_F.0.5,2`` is x = 0.5, printed ``set_F_0.5,2``): an error here, not a value silently dropped."""
    values = parse_doubles(text)
    if len(values) != 1:
        raise ValueError(f"set_F takes one parameter x, got {len(values)} ({text!r}); give one set_F per "
                         "value, e.g. set_F.0.5 and set_F.2")
    return {"beta": BETA.check(values[0])}


def _show_beta(values: dict) -> str:
    return "" if values["beta"] == 1 else f"{values['beta']:g}"


_UTILITY = {
    "a": Param(1, real_param("a"), "gain per relevant retrieved document"),
    "b": Param(-1, real_param("b"), "gain per non-relevant retrieved document (judged or not)"),
    "c": Param(0, real_param("c"), "gain per relevant document not retrieved"),
    "d": Param(0, real_param("d"), "gain per non-relevant document not retrieved (needs N)"),
    "N": Param(0, real_param("N", minimum=0), "documents in the collection (trec_eval -N; 0 by default)"),
}

BETA = Param(1, real_param("beta", minimum=0),
             "trec_eval's set_F parameter x (ir-measures beta): F = (x + 1) P R / (x P + R); x is the "
             "weight of recall, the square of van Rijsbergen's beta")

FAMILIES = [
    MeasureFamily("SetP", "set precision: relevant retrieved / retrieved (whole list)", {"rel": REL}, "none",
                  set_p, _order_free, aliases=(("set_P", {}),), value_range=(0.0, 1.0),
                  trec=(TrecName("set_P"),)),
    MeasureFamily("SetR", "set recall: relevant retrieved / relevant (whole list)", {"rel": REL}, "none",
                  set_r, _order_free, aliases=(("set_recall", {}),), value_range=(0.0, 1.0),
                  trec=(TrecName("set_recall"),)),
    MeasureFamily("SetF", "set F: (beta + 1) P R / (beta P + R) over the whole list (trec_eval set_F)",
                  {"rel": REL, "beta": BETA}, "none", set_f, _order_free, aliases=(("set_F", {}),),
                  value_range=(0.0, 1.0), trec=(TrecName("set_F", "param", sets=("beta",), bind=_trec_beta,
                                                         show=_show_beta),)),
    MeasureFamily("SetRelP", "relative set precision: relevant retrieved / min(retrieved, relevant) "
                  "(trec_eval set_relative_P)", {"rel": REL}, "none", set_relative_p, _order_free,
                  aliases=(("set_relative_P", {}),), value_range=(0.0, 1.0), trec=(TrecName("set_relative_P"),)),
    MeasureFamily("SetAP", "set AP: SetP * SetR (trec_eval set_map, ir-measures SetAP)", {"rel": REL}, "none",
                  set_ap, _order_free, aliases=(("set_map", {}),), value_range=(0.0, 1.0),
                  trec=(TrecName("set_map"),)),
    MeasureFamily("Utility", "a relret + b nonrelret + c relnotret + d nonrelnotret (trec_eval utility); "
                  "not a proportion", {"rel": REL, **_UTILITY}, "none", utility, _order_free,
                  aliases=(("utility", {}),), value_range=(-math.inf, math.inf),
                  trec=(TrecName("utility", "param", sets=("a", "b", "c", "d"), bind=_trec_coefficients,
                                 show=_show_coefficients),)),
]
