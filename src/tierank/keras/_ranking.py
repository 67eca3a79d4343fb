"""keras-rs's ranking metrics (NDCG, DCG, MAP, MRR, P@k, R@k), exact when scores tie.

Every metric follows keras-rs 0.4's ``RankingMetric.update_state`` step by step (inputs, masks, sample
weights, list weights, the weighted mean over lists) and replaces its sort-and-cut, which breaks ties by a
random shuffle, with :func:`tierank.dense.dense_values`, which handles them exactly.
"""

from __future__ import annotations

from typing import Any, Callable

import keras
import numpy as np
from keras import ops

from ..dense import dense_values
from ..dense._keras_ops import keras_ops
from ..dense._kernel import ap_terms, in_top_k, safe_div, sort_rows
from ..errors import InputError

__all__ = ["NDCG", "DCG", "MeanAveragePrecision", "MeanReciprocalRank", "PrecisionAtK", "RecallAtK",
           "default_gain_fn", "default_rank_discount_fn", "get_list_weights", "KERAS_TIES"]

#: The tie modes of the Keras metrics (those of :func:`tierank.evaluate` but ``"trec_eval"``, same meaning).
KERAS_TIES = ("expected", "optimistic", "pessimistic", "input", "random", "lower", "upper")


@keras.saving.register_keras_serializable(package="tierank")
def default_gain_fn(label: Any) -> Any:
    """keras-rs's default gain, ``2**label - 1``.

    Examples
    --------
    >>> from keras import ops
    >>> [float(g) for g in default_gain_fn(ops.convert_to_tensor([0.0, 1.0, 3.0]))]
    [0.0, 1.0, 7.0]
    """
    return ops.subtract(ops.power(2.0, label), 1.0)


@keras.saving.register_keras_serializable(package="tierank")
def default_rank_discount_fn(rank: Any) -> Any:
    """keras-rs's default discount of the 1-based ``rank``, ``1 / log2(rank + 1)``.

    Examples
    --------
    >>> from keras import ops
    >>> [float(d) for d in default_rank_discount_fn(ops.convert_to_tensor([1.0, 3.0]))]
    [1.0, 0.5]
    """
    return ops.divide(ops.cast(1, dtype=rank.dtype), ops.log2(ops.add(ops.cast(1, dtype=rank.dtype), rank)))


def metric_dtype(dtype: Any) -> str:
    """The float dtype a metric computes and accumulates in: ``dtype`` (default ``keras.backend.floatx()``),
    but float32 for float16 / bfloat16, whose 8 or 11 bits of mantissa would round the metric to about 3
    digits (float16 / bfloat16 scores convert to float32 exactly, so their ties stay ties).

    Examples
    --------
    >>> metric_dtype("bfloat16"), metric_dtype("float64")
    ('float32', 'float64')
    """
    name = keras.backend.standardize_dtype(dtype or keras.backend.floatx())
    return "float32" if name in ("float16", "bfloat16") else name


def _resolve_ties(ties: str | None, shuffle_ties: bool | None) -> str:
    """``ties`` from the two spellings: ``shuffle_ties=True`` is "random", ``False`` is "input"."""
    if shuffle_ties is not None and not isinstance(shuffle_ties, bool):
        raise InputError(f"shuffle_ties must be True, False or None, got {shuffle_ties!r}")
    implied = None if shuffle_ties is None else ("random" if shuffle_ties else "input")
    if ties is None:
        return implied or "expected"
    if ties not in KERAS_TIES:
        raise InputError(f"ties must be one of {KERAS_TIES}, got {ties!r}")
    if implied is not None and implied != ties:
        raise InputError(f"shuffle_ties={shuffle_ties} means ties={implied!r}, which contradicts ties={ties!r}; "
                         "give one of them")
    return ties


def _check_k(k: Any) -> None:
    if k is not None and (isinstance(k, bool) or not isinstance(k, int) or k < 1):
        raise InputError(f"k must be a positive integer or None, got {k!r}")


def _is_eager(x: Any) -> bool:
    """True when ``x`` holds concrete values (not traced by tf.function, jax.jit or torch.compile)."""
    backend = keras.backend.backend()
    if backend == "tensorflow":
        import tensorflow as tf

        return bool(tf.executing_eagerly())
    if backend == "jax":
        import jax

        return not isinstance(x, jax.core.Tracer)
    import torch

    return not torch.compiler.is_compiling()


def to_numpy(x: Any) -> np.ndarray:
    """An eager tensor of any backend, an array or a list as a numpy array (torch tensors directly: keras's
    np.array(tensor) warns under numpy 2)."""
    if hasattr(x, "detach"):   # torch
        return x.detach().cpu().numpy()
    return np.asarray(ops.convert_to_numpy(x) if not isinstance(x, (np.ndarray, list, tuple)) else x)


def _divide_no_nan(a: Any, b: Any) -> Any:
    """a / b, 0 where b == 0, in the dtype of ``a`` (``keras.ops.divide_no_nan`` returns float32 for float64
    tensors on the torch backend)."""
    zero = ops.equal(b, 0)
    return ops.where(zero, ops.zeros_like(a), a / ops.where(zero, ops.ones_like(b), b))


def get_list_weights(weights: Any, relevance: Any) -> Any:
    """keras-rs's ``get_list_weights``, the weight of each list in the mean, shape (batch,).

    ``sum(weights * relevance) / sum(relevance)`` per list; a list with positive weights but no relevance
    gets the mean of those weights over the lists with both (1 if there are none); a list whose weights
    sum to 0 gets 0. Uniform weights give 1 to every list with a real item.

    Examples
    --------
    >>> from keras import ops
    >>> w = ops.convert_to_tensor([[1.0, 3.0], [2.0, 2.0], [0.0, 0.0]])
    >>> rel = ops.convert_to_tensor([[1.0, 1.0], [0.0, 0.0], [1.0, 0.0]])
    >>> [float(x) for x in get_list_weights(w, rel)]   # (1 + 3) / 2; no relevance: the mean 2; no weight
    [2.0, 2.0, 0.0]
    """
    nonzero_weights = ops.greater(ops.sum(weights, axis=1), 0.0)
    per_list_relevance = ops.sum(relevance, axis=1)
    has_relevance = ops.greater(per_list_relevance, 0.0)
    both = ops.cast(ops.logical_and(nonzero_weights, has_relevance), weights.dtype)
    count = ops.sum(both)
    per_list = _divide_no_nan(ops.sum(weights * relevance, axis=1), per_list_relevance)
    total = ops.sum(per_list)
    average = ops.where(ops.greater(count, 0.0), _divide_no_nan(total, count), ops.cast(1, weights.dtype))
    return ops.where(nonzero_weights, ops.where(has_relevance, per_list, average), ops.cast(0, weights.dtype))


class _Inputs:
    """``update_state``'s arguments after keras-rs's processing: (batch, list_size) labels (0 where
    masked), scores, the mask of real items and the item weights (0 where masked)."""

    def __init__(self, labels: Any, scores: Any, mask: Any, weights: Any, per_item: bool) -> None:
        self.labels, self.scores, self.mask, self.weights, self.per_item = labels, scores, mask, weights, per_item


class _RankingMetric(keras.metrics.Mean):
    """The shared ``update_state`` of the ranking metrics (keras-rs's ``RankingMetric``)."""

    _default_name = "ranking_metric"

    def __init__(self, k: int | None = None, *, ties: str | None = None, shuffle_ties: bool | None = None,
                 seed: int | None = None, name: str | None = None, dtype: Any = None) -> None:
        super().__init__(name=name or self._default_name, dtype=metric_dtype(dtype))
        _check_k(k)
        if seed is not None and (isinstance(seed, bool) or not isinstance(seed, int)):
            raise InputError(f"seed must be an integer or None, got {seed!r} (a SeedGenerator cannot give "
                             "a reproducible tie order)")
        self.k = k
        self.ties = _resolve_ties(ties, shuffle_ties)
        self.seed = seed

    # -- inputs ---------------------------------------------------------------------------------------
    def _standardize(self, y_true: Any, y_pred: Any, sample_weight: Any) -> _Inputs:
        passed_mask = None
        if isinstance(y_true, dict):
            if "labels" not in y_true:
                raise InputError(f'y_true as a dict needs the key "labels" (and optionally "mask"); got keys '
                                 f"{sorted(y_true)}")
            passed_mask = y_true.get("mask")
            y_true = y_true["labels"]
        dtype = self.dtype
        labels = ops.cast(ops.convert_to_tensor(y_true), dtype)
        scores = ops.cast(ops.convert_to_tensor(y_pred), dtype)
        if passed_mask is not None:
            passed_mask = ops.convert_to_tensor(passed_mask)
        weights = None if sample_weight is None else ops.cast(ops.convert_to_tensor(sample_weight), dtype)
        rank = len(labels.shape)
        self._check_shapes(labels, scores, passed_mask, weights)
        if _is_eager(scores):
            self._check_values(labels, scores, passed_mask, weights)
        if passed_mask is not None:
            passed_mask = ops.cast(passed_mask, "bool")
        per_item = weights is not None and len(weights.shape) == rank
        if weights is None:
            weights = ops.ones_like(labels)
        elif rank == 2 and len(weights.shape) == 1:
            weights = ops.ones_like(labels) * ops.expand_dims(weights, 1)
        else:
            weights = ops.ones_like(labels) * weights
        if rank == 1:
            labels, scores, weights = (ops.expand_dims(x, 0) for x in (labels, scores, weights))
            passed_mask = None if passed_mask is None else ops.expand_dims(passed_mask, 0)
        mask = ops.logical_and(ops.greater_equal(labels, 0.0), ops.greater(weights, 0.0))
        if passed_mask is not None:
            mask = ops.logical_and(mask, passed_mask)
        zero = ops.zeros_like(labels)
        return _Inputs(ops.where(mask, labels, zero), ops.where(mask, scores, zero), mask,
                       ops.where(mask, weights, zero), per_item)

    def _check_shapes(self, labels: Any, scores: Any, mask: Any, weights: Any) -> None:
        rank = len(labels.shape)
        if rank not in (1, 2):
            raise InputError(f"y_true must have shape (list_size,) or (batch_size, list_size), got shape "
                             f"{tuple(labels.shape)}")
        if tuple(scores.shape) != tuple(labels.shape):
            raise InputError(f"y_pred must have the shape of y_true: y_true {tuple(labels.shape)}, y_pred "
                             f"{tuple(scores.shape)}")
        if mask is not None and tuple(mask.shape) != tuple(labels.shape):
            raise InputError(f'y_true["mask"] must have the shape of y_true["labels"]: labels '
                             f"{tuple(labels.shape)}, mask {tuple(mask.shape)}")
        if weights is None:
            return
        shape, wanted = tuple(weights.shape), [(), tuple(labels.shape)]
        if rank == 2:
            wanted.insert(1, tuple(labels.shape[:1]))
        if shape not in wanted:
            raise InputError(f"sample_weight must be a scalar, of shape (batch_size,) or of the shape of "
                             f"y_true; y_true {tuple(labels.shape)}, sample_weight {shape}")

    def _check_values(self, labels: Any, scores: Any, mask: Any, weights: Any) -> None:
        """Eager mode: NaN anywhere it would count, and a mask that is not boolean, are errors."""
        lab = to_numpy(labels)
        if np.isnan(lab).any():
            row = np.argwhere(np.isnan(lab))[0]
            raise InputError(f"y_true contains NaN (at {tuple(int(i) for i in row)}); pad with -1 or a mask")
        real = lab >= 0
        if mask is not None:
            m = to_numpy(mask)
            if m.dtype != bool and not np.isin(m, (0, 1)).all():
                raise InputError(f'y_true["mask"] must be boolean (or 0/1), got values such as '
                                 f"{m[~np.isin(m, (0, 1))].ravel()[:3].tolist()}")
            real &= m.astype(bool)
        if weights is not None:
            w = to_numpy(weights)
            if np.isnan(w).any():
                raise InputError("sample_weight contains NaN")
        s = to_numpy(scores)
        bad = np.isnan(s) & real
        if bad.any():
            row = np.argwhere(bad)[0]
            raise InputError(f"y_pred contains NaN at {tuple(int(i) for i in row)} (a real item); "
                             "NaN scores cannot be ranked")

    # -- computation ----------------------------------------------------------------------------------
    def _dense(self, x: _Inputs, measure: str, labels: Any, **kw: Any) -> Any:
        values, _ = dense_values(keras_ops(), x.scores, labels, x.mask, measure=measure, k=self.k, ties=self.ties,
                                 seed=0 if self.seed is None else self.seed, **kw)
        return values

    def _compute(self, x: _Inputs) -> tuple[Any, Any]:  # pragma: no cover - abstract
        raise NotImplementedError

    def per_list(self, y_true: Any, y_pred: Any, sample_weight: Any = None) -> tuple[Any, Any]:
        """The value of every list and its weight in the mean, each of shape (batch,) (``(1,)`` for an
        unbatched list): what :meth:`update_state` adds to the metric (keras-rs's ``compute_metric``
        output after its input processing). Same arguments as :meth:`update_state`; no state changes.

        Examples
        --------
        >>> import tierank.keras
        >>> values, weights = tierank.keras.MeanReciprocalRank().per_list([[0.0, 1.0], [1.0, -1.0]],
        ...                                                                 [[0.5, 0.5], [0.2, 0.9]])
        >>> [float(v) for v in values], [float(w) for w in weights]
        ([0.75, 1.0], [1.0, 1.0])
        """
        x = self._standardize(y_true, y_pred, sample_weight)
        return self._compute(x)

    def update_state(self, y_true: Any, y_pred: Any, sample_weight: Any = None) -> None:
        """Add a batch of lists.

        Parameters
        ----------
        y_true : tensor or dict
            Labels of shape (list_size,) or (batch_size, list_size); labels < 0 are padding. Or a dict
            ``{"labels": ..., "mask": ...}`` whose boolean mask marks the real items (False: padding).
        y_pred : tensor
            Scores of the same shape; larger is better.
        sample_weight : scalar or tensor, optional
            A scalar, per list (batch_size,), or per item (the shape of y_true), with keras-rs's rules:
            items of weight <= 0 are padding, per-item weights enter the measure as in keras-rs (NDCG and
            DCG multiply the gains, MAP the precision terms and R) and make the list weights with
            :func:`get_list_weights`.
        """
        values, weights = self.per_list(y_true, y_pred, sample_weight)
        super().update_state(values, sample_weight=weights)

    def get_config(self) -> dict[str, Any]:
        """The constructor's arguments (``from_config(get_config())`` rebuilds the metric)."""
        config: dict[str, Any] = super().get_config()
        config.update({"k": self.k, "ties": self.ties, "seed": self.seed})
        return config

    @classmethod
    def from_config(cls, config: dict[str, Any]) -> Any:
        """The metric of a :meth:`get_config` (or of a keras-rs metric's config: ``shuffle_ties``)."""
        return cls(**config)


class _GainMetric(_RankingMetric):
    """NDCG and DCG: graded labels through ``gain_fn``, positions through ``rank_discount_fn``."""

    def __init__(self, k: int | None = None, gain_fn: Callable = default_gain_fn,
                 rank_discount_fn: Callable = default_rank_discount_fn, **kwargs: Any) -> None:
        super().__init__(k, **kwargs)
        self.gain_fn = gain_fn
        self.rank_discount_fn = rank_discount_fn

    def _gain_values(self, x: _Inputs, measure: str) -> tuple[Any, Any]:
        values = self._dense(x, measure, x.labels, gain_fn=self.gain_fn, discount_fn=self.rank_discount_fn,
                             item_weights=x.weights)
        return values, get_list_weights(x.weights, self.gain_fn(x.labels))

    def get_config(self) -> dict[str, Any]:
        config = super().get_config()
        config.update({"gain_fn": keras.saving.serialize_keras_object(self.gain_fn),
                       "rank_discount_fn": keras.saving.serialize_keras_object(self.rank_discount_fn)})
        return config

    @classmethod
    def from_config(cls, config: dict[str, Any]) -> Any:
        config = dict(config)
        for key in ("gain_fn", "rank_discount_fn"):
            if key in config:
                config[key] = keras.saving.deserialize_keras_object(config[key])
        return cls(**config)


_COMMON = """
    k : int, optional
        The cutoff (keras-rs's ``k``); None: the whole list. A k beyond the list keeps the whole list.
    ties : {"expected", "lower", "upper", "optimistic", "pessimistic", "input", "random"}, default="expected"
        How items with equal scores count, as in :func:`tierank.evaluate`: "expected" / "lower" /
        "upper" the exact mean / minimum / maximum over all their orderings; or one fixed order inside
        every tie: "optimistic" / "pessimistic" relevant (NDCG, DCG: higher-gain) items first / last;
        "input" the input order (what keras-rs's ``shuffle_ties=False`` means to do); "random" a hash of
        ``seed`` and the column (deterministic, unlike keras-rs).
    shuffle_ties : bool, optional
        keras-rs's spelling: True means ``ties="random"``, False ``ties="input"``.
    seed : int, optional
        The seed of ``ties="random"`` (None: 0).
    name : str, optional
        The metric's name.
    dtype : optional
        The dtype of the computation and of the result (default ``keras.backend.floatx()``; float16 and
        bfloat16 compute and accumulate in float32, as Keras's mixed precision keeps metrics)."""


@keras.saving.register_keras_serializable(package="tierank")
class NDCG(_GainMetric):
    __doc__ = f"""Normalised discounted cumulative gain, keras-rs's ``NDCG`` with exact ties.

    Per list, DCG@k over the ideal DCG@k (the gains sorted descending); the metric is the mean over
    lists weighted by :func:`get_list_weights` (lists without gain count as 0, as in keras-rs).
    Per-item sample weights multiply the gains (the ideal DCG sorts the weighted gains).

    Parameters
    ----------{_COMMON}
    gain_fn : callable, default :func:`default_gain_fn` (``2**y - 1``)
        Label tensor -> gains (>= 0; a label of 0 must have gain 0).
    rank_discount_fn : callable, default :func:`default_rank_discount_fn` (``1 / log2(rank + 1)``)
        1-based float rank tensor -> discounts.

    Examples
    --------
    Two items tie at the top; only one is relevant. keras-rs reads 1.0 or 0.63 depending on its shuffle;
    the expected value is their mean, the bounds are those two values:

    >>> import tierank.keras
    >>> y_true, y_pred = [[1.0, 0.0, 0.0]], [[0.5, 0.5, 0.1]]
    >>> round(float(tierank.keras.NDCG()(y_true, y_pred)), 4)
    0.8155
    >>> [round(float(tierank.keras.NDCG(ties=t)(y_true, y_pred)), 4) for t in ("lower", "upper")]
    [0.6309, 1.0]
    """
    _default_name = "ndcg"

    def _compute(self, x: _Inputs) -> tuple[Any, Any]:
        return self._gain_values(x, "ndcg")


@keras.saving.register_keras_serializable(package="tierank")
class DCG(_GainMetric):
    __doc__ = f"""Discounted cumulative gain, keras-rs's ``DCG`` with exact ties.

    Per list ``sum_(i <= k) w_i gain_i discount(i)`` (item weights ``w``, 1 without per-item sample
    weights) divided by the list weight; the metric is the mean over lists weighted by
    :func:`get_list_weights`, so the per-item weights are not applied twice (keras-rs's rule).

    Parameters
    ----------{_COMMON}
    gain_fn : callable, default :func:`default_gain_fn` (``2**y - 1``)
        Label tensor -> gains (>= 0; a label of 0 must have gain 0).
    rank_discount_fn : callable, default :func:`default_rank_discount_fn` (``1 / log2(rank + 1)``)
        1-based float rank tensor -> discounts.

    Examples
    --------
    >>> import tierank.keras
    >>> round(float(tierank.keras.DCG()([[1.0, 0.0, 0.0]], [[0.5, 0.5, 0.1]])), 4)
    0.8155
    """
    _default_name = "dcg"

    def _compute(self, x: _Inputs) -> tuple[Any, Any]:
        values, weights = self._gain_values(x, "dcg")
        return _divide_no_nan(values, weights), weights


class _BinaryMetric(_RankingMetric):
    """MAP, MRR, P@k, R@k: an item is relevant when its label is >= 1 (keras-rs's rule)."""

    def _relevance(self, x: _Inputs) -> Any:
        return ops.cast(ops.greater_equal(x.labels, 1.0), x.labels.dtype)


@keras.saving.register_keras_serializable(package="tierank")
class MeanAveragePrecision(_BinaryMetric):
    __doc__ = f"""Mean average precision, keras-rs's ``MeanAveragePrecision`` with exact ties.

    Per list ``sum_(i <= k) w_i rel_i P@i / sum_(all i) w_i rel_i`` (relevant: label >= 1; ``w`` the
    per-item sample weights, 1 without them; ``P@i`` unweighted), i.e. AP@k with R (not min(k, R)) in the
    denominator; with ties, each position's expected term times the mean weight of its tie's relevant
    items; the
    mean over lists weighted by :func:`get_list_weights`. Per-item sample weights cannot be combined
    with ``ties="lower"`` / ``"upper"`` (the bound is then not an ordering of each tie by a key): an
    error; ``"optimistic"`` / ``"pessimistic"`` put the relevant items of a tie first / last, in input
    order.

    Parameters
    ----------{_COMMON}

    Examples
    --------
    >>> import tierank.keras
    >>> round(float(tierank.keras.MeanAveragePrecision()([[1.0, 0.0, 1.0]], [[0.5, 0.5, 0.1]])), 4)
    0.7083
    """
    _default_name = "mean_average_precision"

    def _compute(self, x: _Inputs) -> tuple[Any, Any]:
        rel = self._relevance(x)
        if not x.per_item:   # a weight per list cancels out of keras-rs's ratio
            return self._dense(x, "ap", rel), get_list_weights(x.weights, rel)
        if self.ties in ("lower", "upper"):
            raise InputError(f"MeanAveragePrecision with per-item sample weights has no ties={self.ties!r}; "
                             "give per-list weights (batch_size,) or another ties mode")
        num = _weighted_ap_sum(keras_ops(), x.scores, rel, x.mask, x.weights, self.k, self.ties,
                               0 if self.seed is None else self.seed)
        values = _divide_no_nan(num, ops.sum(x.weights * rel, axis=1))
        return values, get_list_weights(x.weights, rel)


def _weighted_ap_sum(o: Any, scores: Any, rel: Any, mask: Any, weights: Any, k: int | None, ties: str,
                     seed: int) -> Any:
    """keras-rs's MAP numerator with per-item weights, ``E[sum_(j <= k) w_j rel_j P@j]`` per row.

    In a tie of n items (r relevant, sum of their weights W) a position at offset o holds each item with
    probability 1/n, and given a relevant item there the relevant items above it in the tie number
    o (r - 1) / (n - 1) on average; so the expected term is the unweighted one (the dense kernel's
    ``ap_terms``) times W / r, the mean weight of the tie's relevant items. Fixed orders: ``w_j`` itself.
    """
    order, rows = sort_rows(o, scores, mask, ties, rel, seed)
    b, w = o.take(rel, order), o.take(weights, order)
    factor = w if rows.fixed else safe_div(o, rows.tie_sum(w * b), rows.tie_sum(b))
    k_eff = rows.n_real if k is None else o.minimum(rows.n_real, float(k))
    return o.sum(o.where(in_top_k(o, rows, k_eff), ap_terms(o, rows, b) * factor, 0.0))


@keras.saving.register_keras_serializable(package="tierank")
class MeanReciprocalRank(_BinaryMetric):
    __doc__ = f"""Mean reciprocal rank, keras-rs's ``MeanReciprocalRank`` with exact ties.

    Per list 1 / the rank of the first relevant item (label >= 1), 0 when there is none in the top k;
    the mean over lists weighted by :func:`get_list_weights`.

    Parameters
    ----------{_COMMON}

    Examples
    --------
    Four items tie, one relevant: keras-rs reads 1, 0.5, 0.33 or 0.25 (its issue #205); the exact value
    is their mean:

    >>> import tierank.keras
    >>> round(float(tierank.keras.MeanReciprocalRank()([[0.0, 1.0, 0.0, 0.0]], [[0.3, 0.3, 0.3, 0.3]])), 4)
    0.5208
    """
    _default_name = "mean_reciprocal_rank"

    def _compute(self, x: _Inputs) -> tuple[Any, Any]:
        rel = self._relevance(x)
        return self._dense(x, "rr", rel), get_list_weights(x.weights, rel)


@keras.saving.register_keras_serializable(package="tierank")
class PrecisionAtK(_BinaryMetric):
    __doc__ = f"""Precision at k, keras-rs's ``PrecisionAtK`` with exact ties.

    Per list the relevant items (label >= 1) in the top k over ``min(k, real items)`` (keras-rs divides
    by the length of the cut list: tierank's ``P(clip=True)@k``); the mean over lists weighted by
    :func:`get_list_weights`.

    Parameters
    ----------{_COMMON}

    Examples
    --------
    >>> import tierank.keras
    >>> round(float(tierank.keras.PrecisionAtK(k=1)([[1.0, 0.0, 1.0]], [[0.5, 0.5, 0.1]])), 4)
    0.5
    """
    _default_name = "precision_at_k"

    def _compute(self, x: _Inputs) -> tuple[Any, Any]:
        rel = self._relevance(x)
        hits = self._dense(x, "hits", rel)
        real = ops.sum(ops.cast(x.mask, hits.dtype), axis=1)
        length = real if self.k is None else ops.minimum(real, float(self.k))
        return _divide_no_nan(hits, length), get_list_weights(x.weights, rel)


@keras.saving.register_keras_serializable(package="tierank")
class RecallAtK(_BinaryMetric):
    __doc__ = f"""Recall at k, keras-rs's ``RecallAtK`` with exact ties.

    Per list the relevant items (label >= 1) in the top k over all relevant items (0 when there are
    none); the mean over lists weighted by :func:`get_list_weights`.

    Parameters
    ----------{_COMMON}

    Examples
    --------
    >>> import tierank.keras
    >>> round(float(tierank.keras.RecallAtK(k=1)([[1.0, 0.0, 1.0]], [[0.5, 0.5, 0.1]])), 4)
    0.25
    """
    _default_name = "recall_at_k"

    def _compute(self, x: _Inputs) -> tuple[Any, Any]:
        rel = self._relevance(x)
        return self._dense(x, "recall", rel), get_list_weights(x.weights, rel)
