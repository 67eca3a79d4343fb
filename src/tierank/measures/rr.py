"""Reciprocal rank (RR, RR@k).

Only the first tie holding a relevant item matters. With ``t`` items before it, ``n`` items and ``r``
relevant in it, the offset J of its first relevant item has ``P(J = j) = C(n-j, r-1) / C(n, r)``
(tie_math.md §1, RR@k), computed by the ratio recurrence ``p_{j+1} = p_j (n-j-r+1)/(n-j)``.
"""

from __future__ import annotations

import numpy as np

from ..ties.groups import TieGroups
from ._common import REL, binary_preference, relevant
from ._spec import Measure, MeasureFamily


def reciprocal_rank(g: TieGroups, m: Measure) -> np.ndarray:
    key, b = relevant(g, m)
    K = g.clamp(m.cutoff)
    out = np.zeros(g.n_queries)
    rel_items = g.memo(("rel_items", key), lambda: np.flatnonzero(b))
    if rel_items.size == 0:
        return out
    first = np.searchsorted(rel_items, g.qptr[:-1])
    first_item = rel_items[np.minimum(first, rel_items.size - 1)]
    has = (first < rel_items.size) & (first_item < g.qptr[1:])
    c = g.item_tie[first_item]
    t = g.tie_first[c].astype(np.float64)
    n = g.tie_size[c].astype(np.float64)
    r = g.tie_sum_of(key, b)[c]
    L = np.where(has, np.minimum(n - r + 1, K - t), 0)       # offsets j inside the top K
    idx = np.flatnonzero(L >= 1)
    p = np.where(n > 0, r / n, 0.0)                            # p_1 = r / n
    j = 1
    while idx.size:  # loop over offsets inside the first relevant tie, vectorised across queries
        out[idx] += p[idx] / (t[idx] + j)
        p[idx] *= (n[idx] - j - r[idx] + 1) / np.maximum(n[idx] - j, 1)
        j += 1
        idx = idx[(L[idx] >= j) & (p[idx] > 0)]
    return out


FAMILIES = [
    MeasureFamily("RR", "reciprocal rank of the first relevant item (0 if none in the top k)", {"rel": REL},
                  "optional", reciprocal_rank, binary_preference,
                  aliases=(("mrr", {}), ("recip_rank", {}), ("reciprocal_rank", {}))),
]
