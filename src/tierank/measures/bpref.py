"""Binary preference (Bpref, trec_eval ``bpref``), tie-aware.

trec_eval's definition: with R judged relevant documents (grade >= rel) and N judged non-relevant
ones (0 <= grade < rel) in the qrels, retrieved or not, and D = min(N, R),

    Bpref = (1/R) Σ over relevant retrieved d of (1 - min(n_d, R) / D),

where n_d is the number of judged non-relevant documents ranked above d (the term is 1 when n_d = 0).
Unjudged documents (negative grades, in the pool or not) are skipped: they never move n_d.

Derivation of the expected value over tie orderings. Take a relevant document d in a tie holding m
judged non-relevant documents, after ties holding B of them in all. Under a uniform order of the tie,
the relative order of d and those m documents is uniform, so the number of them above d is uniform on
0..m whatever the other (relevant or unjudged) members of the tie: n_d = B + U, U ~ Uniform{0..m}.
Hence E[term] = 1 - S / ((m + 1) D) with S = Σ_{u=0}^{m} min(B + u, R), a sum of an arithmetic run
(B + u below R) and a constant run (R). Every relevant document of the tie has this same expectation,
so the tie contributes r E[term] (r its relevant documents). Each term decreases in n_d, and putting
the relevant documents of every tie first (last) minimises (maximises) every n_d at once: those
orderings give the exact upper (lower) bound.
"""

from __future__ import annotations

import numpy as np

from ..ties.groups import TieStats
from ._common import REL, binary_preference, divide
from ._spec import Measure, MeasureFamily
from ._trec import TrecName


def _capped_sum(B: np.ndarray, m: np.ndarray, R: np.ndarray) -> np.ndarray:
    """Σ_{u=0}^{m} min(B + u, R) for every entry (all non-negative integers as floats)."""
    below = np.clip(np.minimum(B + m, R - 1) - B + 1, 0, None)   # how many B + u lie below R
    first, last = B, B + below - 1
    return below * (first + last) / 2.0 + (m + 1 - below) * R


def bpref(g: TieStats, m: Measure) -> np.ndarray:
    rel = m["rel"]
    r = g.group_sum(("b", rel), lambda x, _q: x >= rel)
    nonrel = ("nonrel_judged", rel)

    def f(x: np.ndarray, _q: np.ndarray | None = None) -> np.ndarray:
        return (x >= 0) & (x < rel)

    mc = g.group_sum(nonrel, f)
    B = g.before(nonrel, f)
    R = g.judged.count_at_least(rel)
    N = g.judged.count_at_least(0) - R
    Rg, Dg = R[g.group_query], np.minimum(N, R)[g.group_query]
    S = _capped_sum(B, mc, Rg)
    terms = r * (1.0 - divide(S, (mc + 1.0) * Dg))
    return divide(np.bincount(g.group_query, weights=terms, minlength=g.n_queries), R)


FAMILIES = [
    MeasureFamily("Bpref", "binary preference: how often judged relevant documents rank above judged "
                  "non-relevant ones (trec_eval bpref)", {"rel": REL}, "none", bpref, binary_preference,
                  aliases=(("bpref", {}),), value_range=(0.0, 1.0), trec=(TrecName("bpref"),)),
    MeasureFamily("GMBpref", "geometric mean of Bpref over queries (trec_eval gm_bpref; values floored at "
                  "1e-5)", {"rel": REL}, "none", bpref, binary_preference, aggregate="gm",
                  aliases=(("gm_bpref", {}),), value_range=(0.0, 1.0),
                  trec=(TrecName("gm_bpref", per_query=False),)),
]
