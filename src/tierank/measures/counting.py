"""Measures that count (relevant) items in the top k: P, R, F1, Success, Rprec, ACG, NumQ, NumRet,
NumRel, NumRelRet.

All but Success are linear in the top-k counts, so their tie-aware value uses equation (1) of docs/maths.md ("Sums over the top k"):
``E[H_K] = R_{c-1} + m r_c / n_c``. Success uses the hypergeometric miss probability (§1, hit@k).
"""

from __future__ import annotations

import math

import numpy as np

from ..ties.groups import TieStats
from ._common import (CLIP, REL, REL_OR_ALL, VECTOR_STEPS, binary_preference, divide, f_measure, grade_preference,
                      grade_shifts, k_prime, positive_grade, running_products, unscaled)
from ._spec import Measure, MeasureFamily, Param, bool_param, real_param
from ._trec import TREC_CUTOFFS, TrecName


def _hits(g: TieStats, m: Measure, K: np.ndarray) -> np.ndarray:
    rel = m["rel"]
    return g.expected_top_sum(("b", rel), lambda x, _q: x >= rel, K)


def precision(g: TieStats, m: Measure) -> np.ndarray:
    K = g.clamp(m.cutoff)
    den = k_prime(g, m, K)
    if m["clip_at_r"]:   # trec_eval's relative_P: over the best precision possible (not TF Similarity's formula)
        den = np.minimum(den, g.judged.count_at_least(m["rel"]))
    return divide(_hits(g, m, K), den)


def recall(g: TieStats, m: Measure) -> np.ndarray:
    K = g.clamp(m.cutoff)
    return divide(_hits(g, m, K), g.judged.count_at_least(m["rel"]))


def f1(g: TieStats, m: Measure) -> np.ndarray:
    # F_beta = (1 + b^2) P R / (b^2 P + R) = (1 + b^2) H / (b^2 R + k') is linear in H, so its mean is
    # (1 + b^2) E[H] / (b^2 R + k')  (docs/maths.md, "Sums over the top k"); beta = 1: 2H / (k' + R).
    K = g.clamp(m.cutoff)
    beta = float(m["beta"])
    return f_measure(_hits(g, m, K), k_prime(g, m, K), g.judged.count_at_least(m["rel"]), beta * beta)


def success(g: TieStats, m: Measure) -> np.ndarray:
    # E[hit@k] = 1 - [R_{c-1} = 0] * prod_{i<m} (n_c - r_c - i) / (n_c - i)   (docs/maths.md, "Success (hit rate)")
    r_all, before_all = g.relevant_sum(m["rel"])
    cut = g.cut(g.clamp(m.cutoff))
    before, r = before_all[cut.group], r_all[cut.group]
    miss = np.where(before == 0, 1.0, 0.0)
    miss[(before == 0) & (r > 0) & (cut.m > cut.n - r)] = 0.0
    idx = np.flatnonzero((miss > 0) & (r > 0))
    i = 0
    while idx.size and i < VECTOR_STEPS:  # slots of the cut group, across queries
        miss[idx] *= (cut.n[idx] - r[idx] - i) / (cut.n[idx] - i)
        i += 1
        idx = idx[(cut.m[idx] > i) & (miss[idx] > 0)]
    for q in idx:   # a long cut: its slots i..m-1 at once, multiplied in the same order
        slots = np.arange(i, int(cut.m[q]))
        miss[q] = running_products(miss[q], (cut.n[q] - r[q] - slots) / (cut.n[q] - slots))[-1]
    return 1.0 - miss


def rprec(g: TieStats, m: Measure) -> np.ndarray:
    R = g.judged.count_at_least(m["rel"])
    K = np.minimum(R.astype(np.int64), g.lengths)
    return divide(_hits(g, m, K), R)


def rprec_mult(g: TieStats, m: Measure) -> np.ndarray:
    # trec_eval Rprec_mult: precision at rank K = (long)(mult R + 0.9), divided by K beyond the list too
    R = g.judged.count_at_least(m["rel"])
    with np.errstate(over="ignore"):   # a rank beyond float64 (mult near 1.8e308): hits / inf, 0
        K = np.floor(m["mult"] * R + 0.9)
    return divide(_hits(g, m, np.minimum(K, g.lengths).astype(np.int64)), K)


def hits(g: TieStats, m: Measure) -> np.ndarray:
    return _hits(g, m, g.clamp(m.cutoff))


def acg(g: TieStats, m: Measure) -> np.ndarray:
    K = g.clamp(m.cutoff)
    shift = grade_shifts(g)   # grades near float64's largest: summed times 2**-shift, then scaled back
    if shift is None:
        return divide(g.expected_top_sum("g+", positive_grade, K), k_prime(g, m, K))
    total = g.expected_top_sum(("g+", "scaled"), lambda x, q: np.ldexp(positive_grade(x), -shift[q]), K, True)
    return unscaled(divide(total, k_prime(g, m, K)), shift)


def num_q(g: TieStats, m: Measure) -> np.ndarray:
    return np.ones(g.n_queries)


def num_ret(g: TieStats, m: Measure) -> np.ndarray:
    # rel None: every retrieved item; rel X: the retrieved items with grade >= X (order-free)
    if m["rel"] is None:
        return g.lengths.astype(np.float64)
    r_all, _ = g.relevant_sum(m["rel"])
    return np.bincount(g.group_query, weights=r_all, minlength=g.n_queries)


def _num_ret_preference(m: Measure, grades: np.ndarray) -> list[np.ndarray]:
    # NumRet does not depend on the order; any key will do
    return [np.zeros(len(grades))]


_num_ret_preference.params = ()  # type: ignore[attr-defined]


def num_rel(g: TieStats, m: Measure) -> np.ndarray:
    return g.judged.count_at_least(m["rel"]).copy()


def num_rel_ret(g: TieStats, m: Measure) -> np.ndarray:
    return _hits(g, m, g.lengths)


F_BETA = Param(1, real_param("beta", minimum=0), "van Rijsbergen's beta: recall weighs beta^2 times precision "
               "(F_beta = (1 + beta^2) P R / (beta^2 P + R))")
CLIP_AT_R = Param(False, bool_param("clip_at_r"), "divide by min(k, R), the best precision possible "
                  "(trec_eval relative_P; TF Similarity's clip_at_r, hits in the top min(k, r) over r, is "
                  "tierank.keras.retrieval.PrecisionAtK)")
MULT = Param(1, real_param("mult", minimum=0), "the cutoff as a multiple of R: rank floor(mult R + 0.9)")


def _mult(level: float) -> dict:
    return {"mult": MULT.check(level)}


def _show_mult(values: dict) -> float:
    return values["mult"]


FAMILIES = [
    MeasureFamily("P", "precision: relevant items in the top k, divided by k (clip_at_r: by min(k, R))",
                  {"rel": REL, "clip": CLIP, "clip_at_r": CLIP_AT_R}, "required", precision, binary_preference,
                  aliases=(("precision", {}), ("relative_P", {"clip_at_r": True})), value_range=(0.0, 1.0),
                  trec=(TrecName("P", "cutoffs", TREC_CUTOFFS),
                        TrecName("relative_P", "cutoffs", TREC_CUTOFFS, preset=(("clip_at_r", True),))),
                  reads="top_k", tie_scope="set"),
    MeasureFamily("R", "recall: relevant items in the top k, divided by all relevant (R)", {"rel": REL},
                  "required", recall, binary_preference, aliases=(("recall", {}),), value_range=(0.0, 1.0),
                  trec=(TrecName("recall", "cutoffs", TREC_CUTOFFS),), reads="top_k", tie_scope="set"),
    MeasureFamily("F1", "F1: 2 hits / (k + R), the harmonic mean of P@k and R@k; F_beta with beta=",
                  {"rel": REL, "clip": CLIP, "beta": F_BETA}, "required", f1, binary_preference, value_range=(0.0, 1.0), reads="top_k", tie_scope="set"),
    MeasureFamily("Success", "1 if a relevant item is in the top k (hit rate)", {"rel": REL}, "required",
                  success, binary_preference, aliases=(("hit_rate", {}), ("hit", {})), value_range=(0.0, 1.0),
                  trec=(TrecName("success", "cutoffs", (1, 5, 10)),), reads="top_k", tie_scope="set_first_hit"),
    MeasureFamily("Rprec", "R-precision: precision at rank R", {"rel": REL}, "none", rprec,
                  binary_preference, aliases=(("r-precision", {}), ("r_precision", {})), value_range=(0.0, 1.0),
                  trec=(TrecName("Rprec"),), tie_scope="set_R"),
    MeasureFamily("RprecMult", "precision at rank floor(mult R + 0.9) (trec_eval Rprec_mult)",
                  {"rel": REL, "mult": MULT}, "none", rprec_mult, binary_preference, aliases=(("Rprec_mult", {}),),
                  value_range=(0.0, 1.0),
                  trec=(TrecName("Rprec_mult", "levels", (0.2, 0.4, 0.6, 0.8, 1.0, 1.2, 1.4, 1.6, 1.8, 2.0),
                                 sets=("mult",), bind=_mult, show=_show_mult),)),
    MeasureFamily("Hits", "relevant items in the top k, a count averaged over queries (ranx hits@k)",
                  {"rel": REL}, "required", hits, binary_preference, aliases=(("hits", {}),),
                  value_range=(0.0, math.inf), reads="top_k", tie_scope="set"),
    MeasureFamily("ACG", "average cumulative gain: mean grade in the top k",
                  {"clip": CLIP}, "required", acg, grade_preference, value_range=(0.0, math.inf), reads="top_k", tie_scope="set"),
    # NumQ's rel says which queries have a relevant item (no_relevant="skip" leaves the others out)
    MeasureFamily("NumQ", "number of queries (summed)", {"rel": REL}, "none", num_q, binary_preference,
                  aggregate="sum", empty="one", aliases=(("num_q", {}),), value_range=(0.0, math.inf),
                  trec=(TrecName("num_q"),), reads="judged"),
    MeasureFamily("NumRet", "number of retrieved items (summed); NumRet(rel=X): those with grade >= X",
                  {"rel": REL_OR_ALL}, "none", num_ret, _num_ret_preference, aggregate="sum",
                  aliases=(("num_ret", {}),), value_range=(0.0, math.inf), trec=(TrecName("num_ret"),)),
    MeasureFamily("NumRel", "number of relevant judged items, retrieved or not (summed)", {"rel": REL},
                  "none", num_rel, binary_preference, aggregate="sum", empty="R", aliases=(("num_rel", {}),),
                  value_range=(0.0, math.inf), trec=(TrecName("num_rel"),), reads="judged"),
    MeasureFamily("NumRelRet", "number of relevant retrieved items (summed)", {"rel": REL}, "none",
                  num_rel_ret, binary_preference, aggregate="sum", aliases=(("num_rel_ret", {}),),
                  value_range=(0.0, math.inf), trec=(TrecName("num_rel_ret"),)),
]
