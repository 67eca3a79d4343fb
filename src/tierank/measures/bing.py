"""BinG (trec_eval ``binG``): each relevant retrieved document scores ``1 / log2(2 + N_above)``, with
``N_above`` the non-relevant documents (judged or not) ranked above it; the sum is divided by R.

Tie-aware (docs/maths.md, "BinG"): for a relevant document in a tie holding ``q`` non-relevant documents,
after ties holding ``A`` non-relevant ones, the number of the tie's non-relevant documents above it is
uniform on ``0..q`` (its place among itself and those ``q`` is uniform; the tie's other relevant
documents do not matter). So its mean score is ``(F(A + q + 1) - F(A)) / (q + 1)`` with the prefix sums
``F(x) = Σ_{y<x} 1/log2(2 + y)``, and a tie with ``r`` relevant documents adds ``r`` times that. Moving a
relevant document up never lowers the score: relevant first is the best ordering, last the worst.
"""

from __future__ import annotations

import numpy as np

from ..ties.groups import TieStats, position_prefix
from ._common import REL, binary_preference, divide
from ._spec import Measure, MeasureFamily
from ._trec import TrecName
from .dcg import log2_discount

__all__ = ["FAMILIES"]


def bin_g(g: TieStats, m: Measure) -> np.ndarray:
    r, r_before = g.relevant_sum(m["rel"])
    q = g.group_size - r                                   # non-relevant items of each tie
    A = (g.group_first - r_before).astype(np.int64)        # non-relevant items in earlier ties
    top = A + q.astype(np.int64) + 1
    F = position_prefix(log2_discount, int(top.max()) if len(top) else 0)   # F[x] = Σ_{l=1}^{x} 1/log2(l+1)
    mean = ((F[top] - F[A]) / (q + 1)).astype(np.float64)
    total = np.bincount(g.group_query, weights=r * mean, minlength=g.n_queries)
    return divide(total, g.judged.count_at_least(m["rel"]))


FAMILIES = [
    MeasureFamily("BinG", "binary G: relevant retrieved documents score 1/log2(2 + non-relevant above), "
                  "over R (trec_eval binG)", {"rel": REL}, "none", bin_g, binary_preference,
                  aliases=(("binG", {}),), value_range=(0.0, 1.0), trec=(TrecName("binG"),)),
]
