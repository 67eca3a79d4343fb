"""Reciprocal rank (RR, RR@k).

Only the first group holding a relevant item matters. With ``t`` items before it, ``n`` items and ``r``
relevant in it, the offset J of its first relevant item has ``P(J = j) = C(n-j, r-1) / C(n, r)``
(docs/maths.md, section "Reciprocal rank"), computed by the ratio recurrence ``p_{j+1} = p_j (n-j-r+1)/(n-j)``.
"""

from __future__ import annotations

import numpy as np

from ..ties.groups import TieStats
from ._common import REL, VECTOR_STEPS, binary_preference, running_products
from ._spec import Measure, MeasureFamily
from ._trec import TrecName


def reciprocal_rank(g: TieStats, m: Measure) -> np.ndarray:
    r_all, _ = g.relevant_sum(m["rel"])
    K = g.clamp(m.cutoff)
    out = np.zeros(g.n_queries)
    with_rel = g.memo(("groups_with_rel", m["rel"]), lambda: np.flatnonzero(r_all > 0))
    if with_rel.size == 0:
        return out
    at = np.searchsorted(with_rel, g.query_groups[:-1])
    c = with_rel[np.minimum(at, with_rel.size - 1)]
    has = (at < with_rel.size) & (c < g.query_groups[1:])
    t = g.group_first[c].astype(np.float64)
    n = g.group_size[c].astype(np.float64)
    r = r_all[c]
    L = np.where(has, np.minimum(n - r + 1, K - t), 0)       # offsets j inside the top K
    idx = np.flatnonzero(L >= 1)
    p = np.where(n > 0, r / np.maximum(n, 1), 0.0)            # p_1 = r / n
    j = 1
    while idx.size and j <= VECTOR_STEPS:  # offsets inside the first relevant group, across queries
        out[idx] += p[idx] / (t[idx] + j)
        p[idx] *= (n[idx] - j - r[idx] + 1) / np.maximum(n[idx] - j, 1)
        j += 1
        idx = idx[(L[idx] >= j) & (p[idx] > 0)]
    for q in idx:   # a long tie: its offsets j..L at once, summed in the same order
        js = np.arange(j, int(L[q]) + 1, dtype=np.float64)
        ps = running_products(p[q], (n[q] - js[:-1] - r[q] + 1) / np.maximum(n[q] - js[:-1], 1))
        out[q] = np.cumsum(np.concatenate(([out[q]], ps / (t[q] + js))))[-1]
    return out


FAMILIES = [
    MeasureFamily("RR", "reciprocal rank of the first relevant item (0 if none in the top k)", {"rel": REL},
                  "optional", reciprocal_rank, binary_preference,
                  aliases=(("mrr", {}), ("recip_rank", {}), ("reciprocal_rank", {})), value_range=(0.0, 1.0),
                  trec=(TrecName("recip_rank"),), reads="top_k", tie_scope="first_hit"),
]
