"""TensorFlow Similarity's retrieval metrics (BNDCG, precision, recall and MAP at k), exact when lookup
distances tie.

TF Similarity (``tensorflow_similarity.retrieval_metrics``) reads the first k columns of ``match_mask`` as
the k nearest lookups, so when distances tie, which matches count depends on the order in which the index
returned the tied lookups. Here the lookups of each query are ranked by ``lookup_distances`` (smaller is
better: the dense kernel runs on ``scores = -distance``) and tied lookups are handled exactly:
``ties="expected"`` (default) is the mean over every order of the tied lookups, ``"lower"`` /
``"upper"`` the exact minimum / maximum over them (bounds); ``"optimistic"`` / ``"pessimistic"`` put
the matches of a tie first / last, ``"input"`` keeps the given column order (TF Similarity's value when
the lookups come sorted), ``"random"`` a seeded order (the tie modes of :func:`tierank.evaluate`).

Only the lookups given are ranked. When the k-th nearest lookup ties with lookups beyond the k-th column,
the tie is resolved among the columns given (pass more than k lookups, e.g. the index's top 2k, to take
ties across the k-th distance into account); lookups the index did not return cannot be part of a tie.
With exactly k lookups every metric that reads the top k as a set (recall, precision without clip_at_r)
is tie-independent; rank-weighted ones (BNDCG, MAP) still depend on the order inside the top k.

The metrics compute eagerly (the class counts of ``r`` and the macro average are looked up on the host),
like TF Similarity's, on the tensors of the active Keras backend.
"""

from __future__ import annotations

import math
from typing import Any, Mapping

import numpy as np
from keras import ops

from ..dense import dense_values
from ..dense._keras_ops import keras_ops
from ..dense._kernel import ap_terms, cut_group, cut_index, hypergeometric_pmf, safe_div, sort_rows
from ..errors import InputError
from ._ranking import KERAS_TIES, metric_dtype, to_numpy

__all__ = ["BNDCG", "PrecisionAtK", "RecallAtK", "MapAtK", "RetrievalMetric"]

_ARGS = """
    k : int, default=5
        The number of nearest lookups the metric reads (``lookup_distances`` must have >= k columns).
    ties : {"expected", "lower", "upper", "optimistic", "pessimistic", "input", "random"}, default="expected"
        How lookups at equal distance count: "expected" / "lower" / "upper" the exact mean / minimum /
        maximum over all their orders; "optimistic" / "pessimistic" the matches first / last, "input"
        the column order, "random" a seeded order (``seed``).
    seed : int, optional
        The seed of ``ties="random"``.
    name : str, optional
        The metric's name (TF Similarity's ``name``; :attr:`name` adds ``@k``).
    dtype : str, optional
        The float dtype of the computation and the result (default ``keras.backend.floatx()``; float16 and
        bfloat16 compute in float32)."""


class RetrievalMetric:
    """The shared arguments and input checks of the retrieval metrics (TF Similarity's ``RetrievalMetric``).

    Examples
    --------
    >>> from tierank.keras.retrieval import RecallAtK
    >>> RecallAtK(k=2).name
    'recall@2'
    """

    _default_name = "retrieval"
    _canonical = "metric@k"
    _macro_allowed = True

    def __init__(self, name: str | None = None, canonical_name: str | None = None, k: int = 5,
                 distance_threshold: float = math.inf, average: str = "micro", ties: str = "expected",
                 seed: int | None = None, dtype: str | None = None) -> None:
        if isinstance(k, bool) or not isinstance(k, int) or k < 1:
            raise InputError(f"k must be a positive integer, got {k!r}")
        if average not in ("micro", "macro"):
            raise InputError(f"average must be 'micro' or 'macro', got {average!r}")
        if average == "macro" and not self._macro_allowed:
            raise InputError(f"{type(self).__name__} only supports micro averaging (as in TF Similarity)")
        if ties not in KERAS_TIES:
            raise InputError(f"ties must be one of {KERAS_TIES}, got {ties!r}")
        if seed is not None and (isinstance(seed, bool) or not isinstance(seed, int)):
            raise InputError(f"seed must be an integer or None, got {seed!r}")
        threshold = float(distance_threshold)
        if math.isnan(threshold):
            raise InputError("distance_threshold must be a number, got NaN")
        self._name = name or self._default_name
        self.canonical_name = canonical_name or self._canonical
        self.k, self.distance_threshold, self.average = k, threshold, average
        self.ties, self.seed, self.dtype = ties, seed, dtype

    @property
    def name(self) -> str:
        """``name@k`` (and the distance threshold when one is set), as in TF Similarity."""
        if self.distance_threshold != math.inf:
            return f"{self._name}@{self.k} : distance_threshold@{self.distance_threshold}"
        return f"{self._name}@{self.k}"

    def __repr__(self) -> str:
        return f"{self.canonical_name} : {self.name}"

    def get_config(self) -> dict[str, Any]:
        """The constructor's arguments."""
        return {"name": self._name, "canonical_name": self.canonical_name, "k": self.k,
                "distance_threshold": self.distance_threshold, "average": self.average, "ties": self.ties,
                "seed": self.seed, "dtype": self.dtype}

    @classmethod
    def from_config(cls, config: dict[str, Any]) -> Any:
        """The metric of a :meth:`get_config`."""
        return cls(**config)

    # -- inputs -------------------------------------------------------------------------------------
    def _inputs(self, query_labels: Any, lookup_distances: Any, match_mask: Any) -> tuple[Any, Any, Any, np.ndarray]:
        """(scores = -distance, matches as floats, mask of real lookups, query labels on the host)."""
        if lookup_distances is None:
            raise InputError("lookup_distances is required: ties are found by comparing the distances "
                             "(pass the index's distances; equal ones are ties)")
        dtype = metric_dtype(self.dtype)
        d = ops.cast(ops.convert_to_tensor(lookup_distances), dtype)
        mm = ops.convert_to_tensor(match_mask)
        labels = to_numpy(query_labels).reshape(-1)
        if len(d.shape) != 2:
            raise InputError(f"lookup_distances must have shape (queries, lookups), got {tuple(d.shape)}")
        if tuple(mm.shape) != tuple(d.shape):
            raise InputError(f"match_mask must have the shape of lookup_distances: match_mask {tuple(mm.shape)}, "
                             f"lookup_distances {tuple(d.shape)}")
        if d.shape[1] < self.k:
            raise InputError(f"The number of neighbors must be >= k: {d.shape[1]} lookups per query but k is "
                             f"{self.k}")
        if labels.shape[0] != d.shape[0]:
            raise InputError(f"The number of lookup sets must equal the number of query labels: "
                             f"{d.shape[0]} rows of lookups, {labels.shape[0]} query labels")
        dn = to_numpy(d)
        if np.isnan(dn).any():
            raise InputError(f"lookup_distances contains NaN (at {tuple(int(i) for i in np.argwhere(np.isnan(dn))[0])})")
        mn = to_numpy(mm)
        if mn.dtype != bool and not np.isin(mn, (0, 1)).all():
            raise InputError("match_mask must be boolean (or 0/1)")
        b = ops.cast(ops.cast(mm, "bool"), dtype)
        real = ops.ones_like(b) > 0
        return ops.negative(d), b, real, labels

    def _class_counts(self, labels: np.ndarray, r: Mapping[int, int] | None, like: Any) -> Any:
        """Per query, r[label] (0 for a label missing from r; k when r is None), as a float tensor."""
        if r is None:
            counts = np.full(labels.shape, self.k, np.float64)
        else:
            keys = np.array(list(r.keys()))
            vals = np.array(list(r.values()), np.float64)
            if keys.size == 0:
                counts = np.zeros(labels.shape, np.float64)
            else:
                order = np.argsort(keys, kind="stable")
                keys, vals = keys[order], vals[order]
                pos = np.clip(np.searchsorted(keys, labels), 0, len(keys) - 1)
                counts = np.where(keys[pos] == labels, vals[pos], 0.0)
        return ops.cast(ops.convert_to_tensor(counts), like.dtype)

    def _average(self, per_query: Any, labels: np.ndarray) -> Any:
        if self.average == "micro":
            return ops.mean(per_query)
        _, inverse = np.unique(labels, return_inverse=True)
        n_classes = int(inverse.max()) + 1
        ids = ops.convert_to_tensor(inverse.astype("int32"))
        sums = ops.segment_sum(per_query, ids, num_segments=n_classes)
        counts = ops.cast(ops.convert_to_tensor(np.bincount(inverse, minlength=n_classes)), per_query.dtype)
        return ops.mean(sums / counts)

    def _order(self, scores: Any, b: Any, real: Any) -> tuple[Any, Any, Any]:
        """Rows sorted by distance (ties by the mode), their tie groups, and the sorted matches."""
        o = keras_ops()
        order, rows = sort_rows(o, scores, real, self.ties, b, 0 if self.seed is None else self.seed)
        return o, rows, o.take(b, order)

    def compute(self, *, query_labels: Any, lookup_labels: Any = None, lookup_distances: Any = None,
                match_mask: Any, **kwargs: Any) -> Any:   # pragma: no cover - abstract
        raise NotImplementedError


class RecallAtK(RetrievalMetric):
    __doc__ = f"""TF Similarity's ``RecallAtK``: 1 for a query when a lookup in its k nearest matches, else 0.

    The mean over queries ("micro") or the mean over query classes of the per-class means ("macro").
    With ties, the probability that a match is among the k nearest (exact).

    Parameters
    ----------{_ARGS}
    distance_threshold : float, default=inf
        Kept for TF Similarity's signature and name; its recall does not apply it, nor does this one.
    average : {{"micro", "macro"}}, default="micro"

    Examples
    --------
    Two lookups tie at distance 0.1 for the first query, one matches; with k=1 TF Similarity reads 1 or 0
    depending on the index's order, the exact value is 0.5:

    >>> import numpy as np
    >>> from tierank.keras.retrieval import RecallAtK
    >>> d = np.array([[0.1, 0.1, 0.5], [0.2, 0.3, 0.4]])
    >>> m = np.array([[False, True, False], [True, False, False]])
    >>> float(RecallAtK(k=1).compute(query_labels=np.array([0, 1]), lookup_distances=d, match_mask=m))
    0.75
    """
    _default_name, _canonical = "recall", "recall@k"

    def compute(self, *, query_labels: Any, lookup_labels: Any = None, lookup_distances: Any = None,
                match_mask: Any, **kwargs: Any) -> Any:
        """The metric, a rank-0 tensor. ``lookup_labels`` is accepted and unused (as in TF Similarity)."""
        scores, b, real, labels = self._inputs(query_labels, lookup_distances, match_mask)
        values, _ = dense_values(keras_ops(), scores, b, real, measure="hit_rate", k=self.k, ties=self.ties,
                                 seed=0 if self.seed is None else self.seed)
        return self._average(values, labels)


class PrecisionAtK(RetrievalMetric):
    __doc__ = f"""TF Similarity's ``PrecisionAtK``: the matches among the k nearest lookups over ``r[label]``.

    Per query ``hits@c / r_q`` with ``r_q = r[query label]`` (k when ``r`` is None, 0 -> value 0 for a
    label missing from ``r``) and ``c = min(k, r_q)`` with ``clip_at_r`` (R-precision), else ``c = k``.
    With ties, the expected number of matches among the c nearest (exact); the bounds ("upper" /
    "lower") are the orders with each tie's matches first / last ("optimistic" / "pessimistic").

    Parameters
    ----------{_ARGS}
    r : mapping, optional
        Class id -> number of indexed examples of the class.
    clip_at_r : bool, default=False
        Count the matches among the ``min(k, r_q)`` nearest only.
    distance_threshold : float, default=inf
        Kept for TF Similarity's signature and name; its precision does not apply it, nor does this one.
    average : {{"micro", "macro"}}, default="micro"

    Examples
    --------
    >>> import numpy as np
    >>> from tierank.keras.retrieval import PrecisionAtK
    >>> d = np.array([[0.1, 0.1, 0.5]])
    >>> m = np.array([[False, True, True]])
    >>> p = PrecisionAtK(k=1, r={{0: 2}}, clip_at_r=True)   # half a match in the top min(1, 2), over r = 2
    >>> float(p.compute(query_labels=np.array([0]), lookup_distances=d, match_mask=m))
    0.25
    """
    _default_name, _canonical = "precision", "precision@k"

    def __init__(self, r: Mapping[int, int] | None = None, clip_at_r: bool = False, name: str | None = None,
                 **kwargs: Any) -> None:
        super().__init__(name=name, **kwargs)
        self.r = None if r is None else {int(key): int(v) for key, v in dict(r).items()}
        self.clip_at_r = bool(clip_at_r)

    @property
    def name(self) -> str:
        return self._name if self.clip_at_r else super().name

    def get_config(self) -> dict[str, Any]:
        return {**super().get_config(), "r": self.r, "clip_at_r": self.clip_at_r}

    def _terms(self, o: Any, rows: Any, b: Any) -> Any:
        return rows.mean(b)

    def compute(self, *, query_labels: Any, lookup_labels: Any = None, lookup_distances: Any = None,
                match_mask: Any, **kwargs: Any) -> Any:
        """The metric, a rank-0 tensor. ``lookup_labels`` is accepted and unused (as in TF Similarity)."""
        scores, b, real, labels = self._inputs(query_labels, lookup_distances, match_mask)
        counts = self._class_counts(labels, self.r, scores)
        cut = ops.minimum(counts, float(self.k)) if self.clip_at_r else ops.zeros_like(counts) + float(self.k)
        o, rows, bs = self._order(scores, b, real)
        top = rows.rank <= o.expand(cut)
        per_query = safe_div(o, o.sum(o.where(top, self._terms(o, rows, bs), 0.0)), counts)
        return self._average(per_query, labels)


class MapAtK(PrecisionAtK):
    __doc__ = f"""TF Similarity's ``MapAtK``: ``sum_(j <= c) match_j P@j / r[label]``, mean over queries.

    ``c`` and ``r`` as in :class:`PrecisionAtK` (``clip_at_r``: MAP@R); micro averaging only. With ties,
    each position's expected ``match_j P@j`` (exact); the bounds ("upper" / "lower") are the orders
    with each tie's matches first / last ("optimistic" / "pessimistic").

    Parameters
    ----------{_ARGS}
    r : mapping, optional
        Class id -> number of indexed examples of the class (None: k for every class).
    clip_at_r : bool, default=False
        Sum over the ``min(k, r_q)`` nearest only.
    distance_threshold : float, default=inf
        Kept for TF Similarity's signature and name; its MAP does not apply it, nor does this one.
    average : {{"micro"}}, default="micro"

    Examples
    --------
    >>> import numpy as np
    >>> from tierank.keras.retrieval import MapAtK
    >>> d = np.array([[0.1, 0.1, 0.5]])
    >>> m = np.array([[True, False, True]])
    >>> map3 = MapAtK(k=3, r={{0: 2}}).compute(query_labels=np.array([0]), lookup_distances=d, match_mask=m)
    >>> round(float(map3), 4)   # (1/2 * 1/1 + 1/2 * 1/2 + 2/3) / 2
    0.7083
    """
    _default_name, _canonical = "map", "map@k"
    _macro_allowed = False

    def _terms(self, o: Any, rows: Any, b: Any) -> Any:
        return ap_terms(o, rows, b)


class BNDCG(RetrievalMetric):
    __doc__ = f"""TF Similarity's ``BNDCG``: binary nDCG of the k nearest lookups, ideal DCG over those k.

    Matches farther than ``distance_threshold`` count as misses. Per query
    ``DCG = sum_(j <= k) match_j / log2(j + 1)`` over ``IDCG = sum_(j <= X) 1 / log2(j + 1)``, where X is
    the number of matches among the k nearest (TF Similarity sorts the top-k slice itself: the ideal is
    not over all matches of the query). So the normaliser depends on which tied lookups land in the top
    k: when the k-th nearest lookup is in a tie that straddles the cut, ``ties="expected"`` is
    ``E[DCG / IDCG(X)]`` over the hypergeometric number of the tie's matches that fall inside (not
    ``E[DCG] / E[IDCG]``), and the bounds ("lower" / "upper") are the min / max over the feasible X of
    the worst / best DCG given X over ``IDCG(X)``. A query with no match in the top k scores 0, so the
    lower bound is 0 whenever the tie at the cut can push every match out (the upper one is 1 whenever
    the matches can all come first). "optimistic" / "pessimistic" are the values of the orders with
    each tie's matches first / last.

    Parameters
    ----------{_ARGS}
    distance_threshold : float, default=inf
        Lookups farther than this (``distance > threshold``) are not matches.
    average : {{"micro", "macro"}}, default="micro"

    Examples
    --------
    >>> import numpy as np
    >>> from tierank.keras.retrieval import BNDCG
    >>> d = np.array([[0.1, 0.2, 0.2]])
    >>> m = np.array([[False, True, False]])
    >>> [round(float(BNDCG(k=2, ties=t).compute(query_labels=np.array([0]), lookup_distances=d,
    ...                                           match_mask=m)), 4) for t in ("lower", "expected", "upper")]
    [0.0, 0.3155, 0.6309]
    """
    _default_name, _canonical = "ndcg", "ndcg@k"

    def compute(self, *, query_labels: Any, lookup_labels: Any = None, lookup_distances: Any = None,
                match_mask: Any, **kwargs: Any) -> Any:
        """The metric, a rank-0 tensor. ``lookup_labels`` is accepted and unused (as in TF Similarity)."""
        scores, b, real, labels = self._inputs(query_labels, lookup_distances, match_mask)
        b = ops.where(ops.less_equal(ops.negative(scores), self.distance_threshold), b, ops.zeros_like(b))
        o, rows, bs = self._order(scores, b, real)
        k = float(self.k)
        L = bs.shape[-1]
        disc = 1.0 / o.log2(rows.rank + 1.0)
        x = o.to_float(o.arange(L + 1, bs), bs) + o.expand(o.sum(bs)) * 0.0       # (Q, L + 1): 0..L
        ideal = o.cumsum(1.0 / o.log2(x + 2.0)) - 1.0 / o.log2(x + 2.0)          # IDCG(x) = sum_(j<=x) D(j)
        if self.ties not in ("expected", "lower", "upper"):   # one fixed order
            top = rows.rank <= k
            dcg = o.sum(o.where(top, bs * disc, 0.0))
            n_top = o.to_int(o.sum(o.where(top, bs, 0.0)))
            per_query = safe_div(o, dcg, o.take(ideal, o.expand(n_top))[..., 0])
            return self._average(per_query, labels)
        t, n, r, before = cut_group(o, rows, bs, cut_index(o, rows, rows.n_real * 0.0 + k))
        m = k - t                                                        # the cut tie's slots in the top k
        above = rows.pos < o.to_int(t)
        lo, hi = o.maximum(m - (n - r), 0.0), o.minimum(m, r)
        feasible = o.logical_and(x >= lo, x <= hi)
        idcg = o.take(ideal, o.to_int(o.minimum(before + x, float(L))))
        if self.ties == "expected":
            S = o.expand(o.sum(o.where(above, rows.mean(bs) * disc, 0.0)))
            A = o.expand(o.sum(o.where(o.logical_and(rows.pos >= o.to_int(t), rows.rank <= k), disc, 0.0)))
            ratio = safe_div(o, S + safe_div(o, x, m) * A, idcg)
            per_query = o.sum(hypergeometric_pmf(o, n, r, m, x, lo, hi, feasible) * ratio)
            return self._average(per_query, labels)
        S = o.expand(o.sum(o.where(above, bs * disc, 0.0)))      # ties above in the bound's order
        if self.ties == "upper":   # the x matches of the cut tie in its first x slots
            part = o.cumsum(o.where(x >= 1.0, 1.0 / o.log2(t + x + 1.0), 0.0))
            value = safe_div(o, S + part, idcg)
            per_query = o.max(o.where(feasible, value, -math.inf))
        else:                           # in its last x slots of the top k: ranks t + m - x + 1 .. t + m
            ok = o.logical_and(x >= 1.0, x <= m)
            part = o.cumsum(o.where(ok, 1.0 / o.log2(o.maximum(t + m - x + 2.0, 2.0)), 0.0))
            value = safe_div(o, S + part, idcg)
            per_query = -o.max(o.where(feasible, -value, -math.inf))
        return self._average(per_query, labels)
