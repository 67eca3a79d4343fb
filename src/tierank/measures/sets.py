"""Set measures over the whole retrieved list (trec_eval set_P, set_recall, set_F): SetP, SetR, SetF.

With H relevant retrieved, n retrieved and R relevant judged documents, SetP = H / n, SetR = H / R and
trec_eval's set_F with parameter x, ``(x + 1) P R / (x P + R)``, simplifies to ``(x + 1) H / (x R + n)``
(0 when H = 0). None depends on the order of the list, so every tie mode gives the same value.
"""

from __future__ import annotations

import numpy as np

from ..ties.groups import TieStats
from ._common import REL, divide
from ._spec import Measure, MeasureFamily, Param, real_param
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
    x = float(m["beta"])
    return divide((x + 1.0) * H, x * R + n)


def _order_free(m: Measure, grades: np.ndarray) -> list[np.ndarray]:
    return [np.zeros(len(grades))]


_order_free.params = ()  # type: ignore[attr-defined]

def _trec_beta(text: str) -> dict:
    """trec_eval's ``set_F.0.5``: the parameter x (``beta`` here)."""
    (beta,) = parse_doubles(text)
    return {"beta": BETA.check(beta)}


def _show_beta(values: dict) -> str:
    return "" if values["beta"] == 1 else f"{values['beta']:g}"


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
]
