"""Measures of judgment coverage: NumNonRelJudgedRet, Judged@k (ir-measures) and Unjudged@k (trec_eval
``unj``).

A retrieved document is judged when its grade is >= 0; in the qrels with a negative grade (-2 in the
ranked lists) or absent from them (-1) it is unjudged. Judged@k and Unjudged@k are linear in the top-k
counts, so their tie-aware value is eq. (1) of the expected top-k sum with f = [grade >= 0] or
[grade < 0]; NumNonRelJudgedRet does not depend on the order.
"""

from __future__ import annotations

import math

import numpy as np

from ..ties.groups import TieStats
from ._common import REL, divide
from ._spec import Measure, MeasureFamily, Param, bool_param
from ._trec import TrecName


def _is_judged(x: np.ndarray, _q: np.ndarray | None = None) -> np.ndarray:
    return (x >= 0).astype(np.float64)


def _is_unjudged(x: np.ndarray, _q: np.ndarray | None = None) -> np.ndarray:
    return (x < 0).astype(np.float64)


def num_nonrel_judged_ret(g: TieStats, m: Measure) -> np.ndarray:
    # retrieved documents with 0 <= grade < rel (trec_eval: retrieved - not in pool - unjudged in pool
    # - relevant retrieved)
    rel = m["rel"]
    per_group = g.group_sum(("nonrel_judged", rel), lambda x, _q: (x >= 0) & (x < rel))
    return np.bincount(g.group_query, weights=per_group, minlength=g.n_queries)


def judged(g: TieStats, m: Measure) -> np.ndarray:
    K = g.clamp(m.cutoff)
    hits = g.expected_top_sum("judged", _is_judged, K)
    return divide(hits, K if m["clip"] else np.full(g.n_queries, float(m.cutoff)))


def unjudged(g: TieStats, m: Measure) -> np.ndarray:
    # trec_eval unj: a list shorter than k is filled with judged documents (divide by k)
    K = g.clamp(m.cutoff)
    return divide(g.expected_top_sum("unjudged", _is_unjudged, K), np.full(g.n_queries, float(m.cutoff)))


def _order_free(m: Measure, grades: np.ndarray) -> list[np.ndarray]:
    return [np.zeros(len(grades))]


def _judged_first(m: Measure, grades: np.ndarray) -> list[np.ndarray]:
    return [_is_judged(grades)]


def _unjudged_first(m: Measure, grades: np.ndarray) -> list[np.ndarray]:
    return [_is_unjudged(grades)]


_order_free.params = ()  # type: ignore[attr-defined]
_judged_first.params = ()  # type: ignore[attr-defined]
_unjudged_first.params = ()  # type: ignore[attr-defined]

JUDGED_CLIP = Param(True, bool_param("clip"),
                    "divide by min(k, list length) (ir-measures) instead of k")

FAMILIES = [
    MeasureFamily("NumNonRelJudgedRet", "number of retrieved judged documents with grade < rel (summed)",
                  {"rel": REL}, "none", num_nonrel_judged_ret, _order_free, aggregate="sum",
                  aliases=(("num_nonrel_judged_ret", {}),), value_range=(0.0, math.inf),
                  trec=(TrecName("num_nonrel_judged_ret"),)),
    MeasureFamily("Judged", "fraction of the top k that is judged (grade >= 0), ir-measures Judged@k",
                  {"clip": JUDGED_CLIP}, "required", judged, _judged_first, aliases=(("judged", {}),),
                  value_range=(0.0, 1.0), tie_scope="set"),
    MeasureFamily("Unjudged", "unjudged documents in the top k divided by k (trec_eval unj)",
                  {}, "required", unjudged, _unjudged_first, aliases=(("unj", {}),),
                  value_range=(0.0, 1.0), trec=(TrecName("unj", "cutoffs", (5, 10, 20)),), tie_scope="set"),
]
