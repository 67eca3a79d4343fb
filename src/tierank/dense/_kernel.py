"""The dense kernel: ranking measures of a padded (batch, list_size) matrix, exact when scores tie.

Each row is sorted once (stable sorts by the tie-break key, the score, then real items before padding),
its groups of tied items are found by comparing neighbours, and every measure is a sum of per-position
terms: in ``ties="expected"`` a position of a tie holds each item of the tie with the same probability,
so it gets the tie's mean of the item quantity (docs/maths.md, "Position-weighted sums"); the few
non-linear measures (RR, Success, AP with the 'retrieved' denominator) read one group per row (the first
relevant group, the cut group) and sum its closed form over a fixed-size axis. No shape depends on the
data, no loop runs over rows or items.

The definitions are tierank's own (src/tierank/measures/): :data:`DENSE_MEASURES` maps every dense measure
to the registry measure it equals, and the tests compare the two on random batches for every entry.
"""

from __future__ import annotations

import math
from typing import Any, Callable

from ..ties.policy import BOUND_MODES, TIE_MODES
from ._ops import Ops

__all__ = ["dense_values", "DENSE_MEASURES", "DENSE_TIES", "registry_measure", "random_keys"]

#: dense measure -> (tierank registry measure, needs a relevant item to be defined)
DENSE_MEASURES: dict[str, tuple[str, bool]] = {
    "dcg": ("DCG", False),
    "ndcg": ("nDCG", True),
    "ap": ("AP", True),
    "ap_retrieved": ("AP(denom='retrieved')", True),
    "rr": ("RR", True),
    "precision": ("P", False),
    "recall": ("R", True),
    "hit_rate": ("Success", False),
    "r_precision": ("Rprec", True),
    "hits": ("Hits", False),
}
#: the tie modes of the dense kernel: every mode of the core, with the same meaning
DENSE_TIES = TIE_MODES
_NO_CUTOFF = ("r_precision",)
_GAIN_MEASURES = ("dcg", "ndcg")
_HASH_PRIME = 65537   # the random tie-break works modulo this prime: small products, int32-safe


def registry_measure(measure: str, k: int | None, list_size: int) -> str:
    """The tierank measure string :func:`dense_values` equals on ``(batch, list_size)`` arrays (linear gain,
    log2 discount, binary measures at ``rel=1``, i.e. label > 0 for integer labels).

    >>> registry_measure("precision", None, 7), registry_measure("ap_retrieved", 3, 7)
    ('P(clip=True)@7', "AP(denom='retrieved')@3")
    """
    name, _ = DENSE_MEASURES[measure]
    if measure in _NO_CUTOFF:
        return name
    if k is None:
        if measure == "precision":
            return f"P(clip=True)@{list_size}"
        return f"{name}@{list_size}"
    return f"{name}@{k}"


def _check(measure: str, k: Any, ties: str) -> None:
    if measure not in DENSE_MEASURES:
        raise ValueError(f"unknown dense measure {measure!r}; one of {sorted(DENSE_MEASURES)}")
    if ties not in DENSE_TIES:
        raise ValueError(f"ties must be one of {DENSE_TIES}, got {ties!r}")
    if k is not None and (isinstance(k, bool) or not isinstance(k, int) or k <= 0):
        raise ValueError(f"k must be a positive integer or None, got {k!r}")
    if k is not None and measure in _NO_CUTOFF:
        raise ValueError(f"{measure} has no cutoff (its cutoff is R, the number of relevant items)")


def random_keys(ops: Ops, like: Any, seed: int) -> Any:
    """The ``ties="random"`` tie-break key of every column, shape (list_size,): a seeded bijection of the
    column index modulo 65537 (integer arithmetic below 2**31, the same on every backend). Items of a tie
    are ordered by ascending key; columns beyond 65536 may share keys (then the input order decides)."""
    pos = ops.arange(like.shape[-1], like)
    x = (pos * 7919 + (int(seed) % _HASH_PRIME)) % _HASH_PRIME
    for _ in range(3):   # three rounds of a full-period LCG (a bijection modulo the prime)
        x = (x * 75 + 74) % _HASH_PRIME
    return x


def _sort_order(ops: Ops, scores: Any, mask: Any, ties: str, preference: Any, seed: int) -> Any:
    """Per row, the indices of the items by (real before padding, score descending, tie-break key)."""
    pos = ops.arange(scores.shape[-1], scores) + ops.to_int(mask) * 0   # (B, L) column indices
    # "upper" / "lower" start from the preference's best / worst arrangement (the extreme of every
    # measure but AP over the retrieved relevant items, which _ap_retrieved_bound maximises on top of it)
    if ties in ("optimistic", "upper"):
        order = ops.argsort(-preference)
    elif ties in ("pessimistic", "lower"):
        order = ops.argsort(preference)
    elif ties == "trec_eval":
        order = ops.argsort(-pos)
    elif ties == "random":
        order = ops.argsort(random_keys(ops, scores, seed) + ops.to_int(mask) * 0)
    else:   # "expected" (any order inside a tie), "input"
        return ops.order_by_score(scores, mask)
    return ops.take(order, ops.order_by_score(ops.take(scores, order), ops.take(mask, order)))


class SortedRows:
    """A sorted batch and its tie groups: positions, ranks, per-item group start ``t`` and size ``n``."""

    def __init__(self, ops: Ops, s: Any, v: Any, fixed: bool) -> None:
        self.ops, self.v, self.fixed = ops, v, fixed
        L = s.shape[-1]
        self.pos = ops.arange(L, s) + ops.to_int(v) * 0            # (B, L)
        self.rank = ops.to_float(self.pos, s) + 1.0
        self.vf = ops.to_float(v, s)
        self.n_real = ops.sum(self.vf)
        prev = ops.maximum(self.pos - 1, 0)
        new = ops.logical_or(ops.equal(self.pos, 0),
                             ops.logical_or(ops.not_equal(s, ops.take(s, prev)),
                                            ops.not_equal(v, ops.take(v, prev))))
        self.gid = ops.cumsum(ops.to_int(new)) - 1
        self.t = ops.group_sum(ops.where(new, self.pos, 0), self.gid)   # first position of the tie
        self.n = ops.group_sum(ops.to_int(new) * 0 + 1, self.gid)       # size of the tie
        self.nf = ops.to_float(self.n, s)
        self.tf = ops.to_float(self.t, s)

    def tie_sum(self, x: Any) -> Any:
        """Per item, the sum of ``x`` over its tie."""
        return self.ops.group_sum(x, self.gid)

    def mean(self, x: Any) -> Any:
        """Per position, the expected value of ``x`` at it: the tie's mean (fixed orders: ``x`` itself)."""
        return x if self.fixed else self.tie_sum(x) / self.nf

    def at(self, x: Any, index: Any) -> Any:
        """``x`` at one position per row, ``index`` (B, 1) integers -> (B, 1)."""
        return self.ops.take(x, index)


def sort_rows(ops: Ops, scores: Any, mask: Any, ties: str, preference: Any, seed: int) -> tuple[Any, SortedRows]:
    """The order of every row's items (real before padding, score descending, tied items by ``ties``:
    ``preference`` for the fixed orders that prefer items, ``seed`` for "random") and the sorted batch."""
    order = _sort_order(ops, scores, mask, ties, preference, seed)
    return order, SortedRows(ops, ops.take(scores, order), ops.take(mask, order), fixed=ties != "expected")


def safe_div(ops: Ops, a: Any, b: Any) -> Any:
    """a / b with 0 where b == 0."""
    zero = ops.equal(b, 0)
    return ops.where(zero, 0.0, a / ops.where(zero, 1.0, b))


def dense_values(ops: Ops, scores: Any, labels: Any, mask: Any, *, measure: str, k: int | None = None,
                 ties: str = "expected", gain_fn: Callable | None = None, discount_fn: Callable | None = None,
                 seed: int = 0, item_weights: Any = None) -> tuple[Any, Any]:
    """One ranking measure per row of a padded batch, exact when scores tie.

    Parameters
    ----------
    ops : Ops
        The array namespace (:class:`tierank.dense.NumpyOps`, :class:`~tierank.dense.TorchOps`, or the
        keras.ops one).
    scores : array of shape (batch, list_size), float
        Larger is better (distances: negate them first). Ties: exactly equal values (``0.0 == -0.0``).
    labels : array of the same shape
        Grades >= 0 where ``mask``; an item is relevant when its label is > 0.
    mask : bool array of the same shape
        True for real items; False entries (padding) are ignored entirely.
    measure : str
        ``"dcg"``: ``Σ_{i<=k} gain_i D(i)``; ``"ndcg"``: DCG over the ideal DCG (the row's gains sorted
        descending, cut at k); ``"ap"``: ``Σ_{i<=k} rel_i P@i / R`` (tierank "AP@k", trec_eval map_cut);
        ``"ap_retrieved"``: the same sum over the number of relevant items in the top k (tierank
        "AP(denom='retrieved')@k", torchmetrics); ``"rr"``: 1 / rank of the first relevant item, 0 beyond
        k; ``"precision"``: relevant items in the top k over k (k=None: over the number of real items);
        ``"recall"``: over R; ``"hits"``: the count; ``"hit_rate"``: 1 if a relevant item is in the top
        k; ``"r_precision"``: relevant items in the top R over R. :data:`DENSE_MEASURES` names the
        tierank measure each one equals.
    k : int, optional
        The cutoff (None: the whole list). A k beyond the list keeps the whole list (precision still
        divides by k).
    ties : {"expected", "lower", "upper", "optimistic", "pessimistic", "input", "trec_eval", "random"}
        As in :func:`tierank.evaluate_matrix`. Over all orderings of tied items: "expected" the exact
        mean, "lower" / "upper" the exact minimum / maximum. One fixed order inside every tie:
        "optimistic" / "pessimistic" the preferred items (relevant; DCG, nDCG: higher gain) first / last,
        "input" / "trec_eval" by column ascending / descending, "random" by :func:`random_keys` of
        ``seed``.
    gain_fn : callable, optional
        DCG and nDCG: ``gain_fn(labels)`` -> gains >= 0 (default: the label itself, tierank's linear gain).
    discount_fn : callable, optional
        ``discount_fn(rank)`` with ``rank`` a float array ``1..list_size`` (shape (list_size,)) ->
        discounts, non-increasing (default ``1 / log2(rank + 1)``).
    seed : int
        The seed of ``ties="random"``.
    item_weights : array of the same shape, optional
        DCG and nDCG: multiply each item's gain (the ideal DCG sorts the weighted gains).

    Returns
    -------
    values : array of shape (batch,)
        In the float dtype of ``scores``; 0 where not ``valid``.
    valid : bool array of shape (batch,)
        False where a row has no real item or, for measures divided by the relevant items (nDCG, AP, RR,
        recall, R-precision), no relevant item.

    Examples
    --------
    >>> import numpy as np
    >>> from tierank.dense import dense_values, numpy_ops
    >>> values, valid = dense_values(numpy_ops, np.array([[0.5, 0.5, 0.1]]), np.array([[1.0, 0.0, 1.0]]),
    ...                              np.ones((1, 3), bool), measure="rr")
    >>> float(values[0]), bool(valid[0])
    (0.75, True)
    """
    _check(measure, k, ties)
    f = lambda x: ops.to_float(x, scores)   # noqa: E731
    labels = f(labels)
    rel = ops.logical_and(mask, labels > 0)
    gains = None
    if measure in _GAIN_MEASURES:
        gains = f(gain_fn(labels)) if gain_fn is not None else labels
        if item_weights is not None:
            gains = gains * f(item_weights)
        gains = ops.where(mask, gains, 0.0)
    preference = gains if gains is not None else f(rel)
    order, rows = sort_rows(ops, scores, mask, ties, preference, seed)
    b = ops.take(f(rel), order)
    R = ops.sum(b)
    k_eff = rows.n_real if k is None else ops.minimum(rows.n_real, float(k))
    if measure in _GAIN_MEASURES:
        values = _dcg_values(ops, rows, ops.take(gains, order), gains, k_eff, measure, discount_fn)
    elif measure == "ap":
        values = safe_div(ops, ops.sum(ops.where(in_top_k(ops, rows, k_eff), ap_terms(ops, rows, b), 0.0)), R)
    elif measure == "ap_retrieved":
        values = _ap_retrieved(ops, rows, b, k_eff, ties)
    elif measure == "rr":
        values = _rr(ops, rows, b, k_eff)
    elif measure == "hit_rate":
        values = _hit_rate(ops, rows, b, k_eff)
    else:
        values = _counting(ops, rows, b, R, k, k_eff, measure)
    needs_relevant = DENSE_MEASURES[measure][1]
    valid = rows.n_real > 0
    if needs_relevant:
        valid = ops.logical_and(valid, R > 0)
    return ops.where(valid, values, 0.0), valid


def in_top_k(ops: Ops, rows: SortedRows, k_eff: Any) -> Any:
    """Real positions within the cutoff."""
    return ops.logical_and(rows.v, rows.rank <= ops.expand(k_eff))


def _default_discount(ops: Ops) -> Callable:
    return lambda rank: 1.0 / ops.log2(rank + 1.0)


def _dcg_values(ops: Ops, rows: SortedRows, g_sorted: Any, gains: Any, k_eff: Any, measure: str,
                discount_fn: Callable | None) -> Any:
    rank = ops.to_float(ops.arange(g_sorted.shape[-1], g_sorted), g_sorted) + 1.0
    disc = (discount_fn or _default_discount(ops))(rank)
    top = in_top_k(ops, rows, k_eff)
    dcg = ops.sum(ops.where(top, rows.mean(g_sorted) * disc, 0.0))
    if measure == "dcg":
        return dcg
    ideal = ops.sort_descending(gains)
    idcg = ops.sum(ops.where(rows.rank <= ops.expand(k_eff), ideal * disc, 0.0))
    return safe_div(ops, dcg, idcg)


def ap_terms(ops: Ops, rows: SortedRows, b: Any) -> Any:
    """Per position i, E[rel_i * (relevant items at or above i)] / i (docs/maths.md, "Average precision")."""
    before = ops.cumsum(b) - b     # relevant items before each position
    if rows.fixed:
        return b * (before + 1.0) / rows.rank
    r = rows.tie_sum(b)
    R_before = ops.take(before, rows.t)
    offset = ops.to_float(rows.pos - rows.t, b)
    share = ops.where(rows.n > 1, (r - 1.0) / ops.maximum(rows.nf - 1.0, 1.0), 0.0)
    return (r / rows.nf) * (R_before + 1.0 + offset * share) / rows.rank


def cut_group(ops: Ops, rows: SortedRows, b: Any, at: Any) -> tuple[Any, Any, Any, Any]:
    """For the tie holding position ``at`` (B, 1) of every row: its start t, size n, relevant items r and
    the relevant items before it, each (B, 1) floats."""
    t = rows.at(rows.t, at)
    n = rows.at(rows.n, at)
    r = rows.at(ops.group_sum(b, rows.gid), at)
    before = ops.take(ops.cumsum(b) - b, t)
    return ops.to_float(t, b), ops.to_float(n, b), r, before


def cut_index(ops: Ops, rows: SortedRows, k_eff: Any) -> Any:
    return ops.expand(ops.to_int(ops.maximum(k_eff - 1.0, 0.0)))


def _rr(ops: Ops, rows: SortedRows, b: Any, k_eff: Any) -> Any:
    # the first tie holding a relevant item: t before it, n items, r relevant; P(J = 1) = r / n and
    # P(J = j + 1) = P(J = j) (n - j - r + 1) / (n - j) for the offset J of its first relevant item
    first = ops.sum(ops.to_float(ops.logical_and(rows.v, ops.cumsum(b) == 0), b))
    at = ops.expand(ops.to_int(ops.minimum(first, float(b.shape[-1] - 1))))
    t, n, r, _ = cut_group(ops, rows, b, at)
    if rows.fixed:
        t, n, r = ops.to_float(at, b), n * 0 + 1.0, ops.take(b, at)
    j = rows.rank    # offsets 1..L
    step = ops.maximum(n - (j - 1.0) - r + 1.0, 0.0) / ops.maximum(n - (j - 1.0), 1.0)
    p = safe_div(ops, r, n) * ops.cumprod(ops.where(j == 1.0, 1.0, step))
    inside = ops.logical_and(j <= n, t + j <= ops.expand(k_eff))
    return ops.sum(ops.where(inside, p / (t + j), 0.0))


def _hit_rate(ops: Ops, rows: SortedRows, b: Any, k_eff: Any) -> Any:
    # miss = [no relevant item before the cut tie] * prod_{i<m} (n - r - i) / (n - i), m its slots in the top k
    at = cut_index(ops, rows, k_eff)
    t, n, r, before = cut_group(ops, rows, b, at)
    if rows.fixed:
        t, n, r = ops.expand(k_eff) - 1.0, n * 0 + 1.0, ops.take(b, at)
        before = ops.take(ops.cumsum(b) - b, at)
    m = ops.expand(k_eff) - t
    i = rows.rank - 1.0
    step = ops.where(i < m, ops.maximum(n - r - i, 0.0) / ops.maximum(n - i, 1.0), 1.0)
    miss = ops.where(before == 0, ops.cumprod(step), 0.0)
    miss = ops.sum(ops.where(rows.pos == b.shape[-1] - 1, miss, 0.0))   # the full product
    return ops.where(k_eff > 0, 1.0 - miss, 0.0)


def _counting(ops: Ops, rows: SortedRows, b: Any, R: Any, k: int | None, k_eff: Any, measure: str) -> Any:
    if measure == "r_precision":
        hits = ops.sum(ops.where(in_top_k(ops, rows, ops.minimum(R, rows.n_real)), rows.mean(b), 0.0))
        return safe_div(ops, hits, R)
    hits = ops.sum(ops.where(in_top_k(ops, rows, k_eff), rows.mean(b), 0.0))
    if measure == "hits":
        return hits
    if measure == "recall":
        return safe_div(ops, hits, R)
    return safe_div(ops, hits, rows.n_real if k is None else rows.n_real * 0 + float(k))


def _ap_retrieved(ops: Ops, rows: SortedRows, b: Any, k_eff: Any, ties: str) -> Any:
    """AP over the relevant items in the top k. The cut tie c (t before it, n items, r relevant, m slots
    in the top k) puts X ~ Hypergeometric(n, r, m) relevant items in the top k; given X = x the numerator
    is the fixed part S of the ties above plus C(x), the denominator R_before + x."""
    at = cut_index(ops, rows, k_eff)
    t, n, r, R_before = cut_group(ops, rows, b, at)
    m = ops.expand(k_eff) - t
    L = b.shape[-1]
    above = ops.logical_and(rows.v, rows.pos < ops.to_int(t))
    S = ops.expand(ops.sum(ops.where(above, ap_terms(ops, rows, b), 0.0)))
    x = ops.to_float(ops.arange(L + 1, b), b) + t * 0          # (B, L + 1): x = 0..L
    lo, hi = ops.maximum(m - (n - r), 0.0), ops.minimum(m, r)
    feasible = ops.logical_and(x >= lo, x <= hi)
    den = R_before + x
    if ties in BOUND_MODES:
        return _ap_retrieved_bound(ops, S, t, m, R_before, x, feasible, den, ties == "upper")
    if ties != "expected":   # a fixed order: the relevant items in the top k are known
        top = in_top_k(ops, rows, k_eff)
        return safe_div(ops, ops.sum(ops.where(top, ap_terms(ops, rows, b), 0.0)), ops.sum(ops.where(top, b, 0.0)))
    in_cut = ops.logical_and(rows.pos >= ops.to_int(t), rows.rank <= ops.expand(k_eff))
    a0 = ops.expand(ops.sum(ops.where(in_cut, 1.0 / rows.rank, 0.0)))
    a1 = ops.expand(ops.sum(ops.where(in_cut, (rows.tf * 0 + ops.to_float(rows.pos, b) - t) / rows.rank, 0.0)))
    C = safe_div(ops, x, m) * ((R_before + 1.0) * a0 + safe_div(ops, x - 1.0, m - 1.0) * a1)
    ratio = safe_div(ops, S + C, den)
    return ops.sum(hypergeometric_pmf(ops, n, r, m, x, lo, hi, feasible) * ratio)


def hypergeometric_pmf(ops: Ops, n: Any, r: Any, m: Any, x: Any, lo: Any, hi: Any, feasible: Any) -> Any:
    """P(X = x) on the axis x = 0..L for X ~ Hypergeometric(n, r, m): the log of the ratio recurrence
    p(x + 1) / p(x) = (r - x)(m - x) / ((x + 1)(n - r - m + x + 1)) summed from the support's low end."""
    u = x - 1.0
    step_ok = ops.logical_and(ops.logical_and(u >= lo, u < hi), x >= 1.0)
    num = (r - u) * (m - u)
    den = (u + 1.0) * (n - r - m + u + 1.0)
    logs = ops.where(step_ok, ops.log(ops.where(step_ok, num / ops.where(step_ok, den, 1.0), 1.0)), 0.0)
    lp = ops.where(feasible, ops.cumsum(logs), -math.inf)
    w = ops.exp(lp - ops.expand(ops.max(lp)))
    return w / ops.expand(ops.sum(w))


def _ap_retrieved_bound(ops: Ops, S: Any, t: Any, m: Any, R_before: Any, x: Any, feasible: Any, den: Any,
                        best: bool) -> Any:
    """Exact max (min) over the feasible x: the ties above in the preference's best (worst) order,
    already in S, the x relevant items of the cut tie in its first (last) x slots (docs/maths.md,
    "Bounds")."""
    ell = x      # l = 1..x along the axis; index 0 is the empty sum
    if best:     # Σ_{l<=x} (R_before + l) / (t + l)
        part = ops.cumsum(ops.where(ell >= 1.0, (R_before + ell) / ops.maximum(t + ell, 1.0), 0.0))
    else:        # Σ_{q<x} (R_before + x - q) / (t + m - q) = (R_before + x) U(x) - V(x)
        q = x - 1.0
        ok = ops.logical_and(ell >= 1.0, q < m)
        U = ops.cumsum(ops.where(ok, 1.0 / ops.maximum(t + m - q, 1.0), 0.0))
        V = ops.cumsum(ops.where(ok, q / ops.maximum(t + m - q, 1.0), 0.0))
        part = (R_before + x) * U - V
    value = safe_div(ops, S + part, den)
    if best:
        return ops.max(ops.where(feasible, value, -math.inf))
    return -ops.max(ops.where(feasible, -value, -math.inf))
