"""Functional retrieval metrics with torchmetrics' names and arguments, exact when scores tie.

Each function takes ``preds`` and ``target`` of one query (shape ``(n,)``, as torchmetrics) or of a
batch of queries (shape ``(..., n)``, one query per row; ``mask=`` marks padding) and returns a scalar
tensor: the value of the query, or the mean over the rows (rows without a positive target count 0, as
torchmetrics' functional nDCG does). ``reduction="none"`` returns one value per row instead.

What changes from torchmetrics: ``ties=``, the tie modes of :func:`tierank.evaluate` with the same
meaning. Over every ordering of tied items: ``"expected"`` (default) the exact mean, ``"lower"`` /
``"upper"`` the exact minimum / maximum. One fixed order inside every tie: ``"optimistic"`` /
``"pessimistic"`` relevant (nDCG: higher-gain) items first / last, ``"input"`` / ``"trec_eval"`` the
input order / its reverse, ``"random"`` a seeded order. So values are deterministic and do not depend
on what ``torch.topk`` / ``torch.argsort`` do with ties. The fixed arrangements are the extremes for
every metric here but average precision over the top k, whose denominator (the relevant items in the
top k) can make the pessimistic arrangement score higher: only ``"lower"`` / ``"upper"`` are bounds.

On tie-free input every function equals torchmetrics 1.9, including its convention (since torchmetrics
1.8) that an item with a score <= 0 is not retrieved in average precision, reciprocal rank, precision
and recall (pass ``nonpositive_retrieved=True`` to rank every item, as trec_eval and tierank.evaluate
do). nDCG, hit rate and R-precision rank every item.

Computation stays on the tensors' device, in float64 (float32 on MPS), whatever the dtype of ``preds``;
the result is float64 for float64 ``preds`` and float32 for every other float dtype (float16 and
bfloat16 too, as torchmetrics: a half-precision result would round a MAP of 0.4680 to 0.4688). The
checks of the data (NaN scores, shapes, targets) run eagerly; ``validate_args=False`` skips them (under
``torch.compile``).
"""

from __future__ import annotations

from typing import Any

import torch

from ..errors import InputError
from ._core import SPECS, Spec, check_options, check_targets, check_tensors, per_query, result_dtype

__all__ = ["retrieval_normalized_dcg", "retrieval_average_precision", "retrieval_reciprocal_rank",
           "retrieval_precision", "retrieval_recall", "retrieval_hit_rate", "retrieval_r_precision"]


def _run(spec: Spec, preds: Any, target: Any, top_k: int | None, *, adaptive_k: bool = False, ties: str,
         seed: int, mask: Any, reduction: str, nonpositive_retrieved: bool, validate_args: bool) -> torch.Tensor:
    check_options(top_k, ties, adaptive_k=adaptive_k, nonpositive_retrieved=nonpositive_retrieved)
    if reduction not in ("mean", "none"):
        raise InputError(f"`reduction` must be 'mean' or 'none', got {reduction!r}")
    if validate_args:
        check_tensors(preds, target, spec, targets=False)
        if mask is not None and (not isinstance(mask, torch.Tensor) or mask.shape != preds.shape
                                 or mask.dtype != torch.bool):
            raise InputError(f"{spec.name}: `mask` must be a bool tensor of the shape of `preds` "
                             f"{tuple(preds.shape)}")
        check_targets(target if mask is None else target.masked_fill(~mask, 0), spec)
    shape = preds.shape[:-1]
    n = preds.shape[-1]
    P, T = preds.reshape(-1, n), target.reshape(-1, n)
    M = None if mask is None else mask.reshape(-1, n)
    values, _ = per_query(P, T, M, spec, top_k, adaptive_k=adaptive_k, ties=ties, seed=seed,
                          nonpositive_retrieved=nonpositive_retrieved)
    values = values.to(result_dtype(preds))
    if reduction == "none":
        return values.reshape(shape)
    return values.mean()


def retrieval_normalized_dcg(preds: torch.Tensor, target: torch.Tensor, top_k: int | None = None, *,
                             ties: str = "expected", seed: int = 0, mask: torch.Tensor | None = None,
                             reduction: str = "mean", validate_args: bool = True) -> torch.Tensor:
    """nDCG (linear gain, ``1/log2(rank+1)`` discount, ideal DCG from the target), exact when scores tie.

    Parameters
    ----------
    preds : Tensor of shape (n,) or (..., n), float
        Scores, higher is better.
    target : Tensor of the same shape
        Graded relevance (>= 0).
    top_k : int, optional
        Consider only the top k ranks (None: all).
    ties : {"expected", "lower", "upper", "optimistic", "pessimistic", "input", "trec_eval", "random"}, \
default="expected"
        How tied scores count (see the module docstring); torchmetrics averages ties in nDCG too, so
        "expected" gives torchmetrics' nDCG.
    seed : int, default=0
        Seed of ``ties="random"``.
    mask : bool Tensor of the same shape, optional
        False marks padding.
    reduction : {"mean", "none"}, default="mean"
        The mean over rows, or one value per row.
    validate_args : bool, default=True
        Check the data (NaN, shapes, negative targets) with clear errors.

    Returns
    -------
    Tensor

    Examples
    --------
    >>> import torch
    >>> from tierank.torch.functional import retrieval_normalized_dcg
    >>> retrieval_normalized_dcg(torch.tensor([0.1, 0.2, 0.3, 4.0, 70.0]), torch.tensor([10, 0, 0, 1, 5]))
    tensor(0.6957)
    """
    return _run(SPECS["ndcg"], preds, target, top_k, ties=ties, seed=seed, mask=mask, reduction=reduction,
                nonpositive_retrieved=False, validate_args=validate_args)


def retrieval_average_precision(preds: torch.Tensor, target: torch.Tensor, top_k: int | None = None, *,
                                ties: str = "expected", seed: int = 0, mask: torch.Tensor | None = None,
                                reduction: str = "mean", nonpositive_retrieved: bool = False,
                                validate_args: bool = True) -> torch.Tensor:
    """Average precision over the relevant items in the top k (torchmetrics' AP; tierank
    ``AP(denom='retrieved')@k``), exact when scores tie.

    When ``top_k`` cuts a tie, how many relevant items of the tie make the top k is itself random: the
    expectation is taken over it exactly (a hypergeometric mixture), and ``ties="upper"`` / ``"lower"``
    are the exact best and worst over every ordering, which ``"optimistic"`` / ``"pessimistic"`` (relevant
    items first / last) need not be. Items with a score <= 0 are not retrieved (torchmetrics >= 1.8) unless
    ``nonpositive_retrieved=True``. Other parameters: see :func:`retrieval_normalized_dcg`; targets are
    binary.

    Examples
    --------
    >>> import torch
    >>> from tierank.torch.functional import retrieval_average_precision
    >>> retrieval_average_precision(torch.tensor([0.2, 0.3, 0.5]), torch.tensor([True, False, True]))
    tensor(0.8333)
    >>> retrieval_average_precision(torch.tensor([0.5, 0.5, 0.5]), torch.tensor([1, 0, 0]))   # (1 + 1/2 + 1/3) / 3
    tensor(0.6111)

    Relevant items first is not the best here: the second relevant item, kept out of the top 3, would
    not lower the mean:

    >>> p, t = torch.tensor([3.0, 2.0, 1.0, 1.0]), torch.tensor([1, 0, 1, 0])
    >>> [retrieval_average_precision(p, t, top_k=3, ties=m) for m in ("optimistic", "pessimistic", "upper")]
    [tensor(0.8333), tensor(1.), tensor(1.)]
    """
    return _run(SPECS["map"], preds, target, top_k, ties=ties, seed=seed, mask=mask, reduction=reduction,
                nonpositive_retrieved=nonpositive_retrieved, validate_args=validate_args)


def retrieval_reciprocal_rank(preds: torch.Tensor, target: torch.Tensor, top_k: int | None = None, *,
                              ties: str = "expected", seed: int = 0, mask: torch.Tensor | None = None,
                              reduction: str = "mean", nonpositive_retrieved: bool = False,
                              validate_args: bool = True) -> torch.Tensor:
    """Reciprocal rank of the first relevant item (0 beyond ``top_k``), exact when scores tie.

    Items with a score <= 0 are not retrieved (torchmetrics >= 1.8) unless ``nonpositive_retrieved=True``.
    Other parameters: see :func:`retrieval_normalized_dcg`; targets are binary.

    Examples
    --------
    >>> import torch
    >>> from tierank.torch.functional import retrieval_reciprocal_rank
    >>> retrieval_reciprocal_rank(torch.tensor([0.7, 0.7, 0.7, 0.7]), torch.tensor([0, 1, 0, 0]))
    tensor(0.5208)
    >>> retrieval_reciprocal_rank(torch.tensor([0.7, 0.7, 0.7, 0.7]), torch.tensor([0, 1, 0, 0]), ties="pessimistic")
    tensor(0.2500)
    """
    return _run(SPECS["mrr"], preds, target, top_k, ties=ties, seed=seed, mask=mask, reduction=reduction,
                nonpositive_retrieved=nonpositive_retrieved, validate_args=validate_args)


def retrieval_precision(preds: torch.Tensor, target: torch.Tensor, top_k: int | None = None,
                        adaptive_k: bool = False, *, ties: str = "expected", seed: int = 0,
                        mask: torch.Tensor | None = None, reduction: str = "mean",
                        nonpositive_retrieved: bool = False, validate_args: bool = True) -> torch.Tensor:
    """Relevant items in the top k over k (``top_k=None``: over the number of items; ``adaptive_k``: over
    ``min(k, n)``), exact when scores tie.

    Items with a score <= 0 are not retrieved (torchmetrics >= 1.8) unless ``nonpositive_retrieved=True``.
    Other parameters: see :func:`retrieval_normalized_dcg`; targets are binary.

    Examples
    --------
    >>> import torch
    >>> from tierank.torch.functional import retrieval_precision
    >>> retrieval_precision(torch.tensor([0.2, 0.3, 0.5]), torch.tensor([True, False, True]), top_k=2)
    tensor(0.5000)
    >>> retrieval_precision(torch.tensor([0.5, 0.5, 0.5]), torch.tensor([1, 0, 0]), top_k=1)
    tensor(0.3333)
    """
    return _run(SPECS["precision"], preds, target, top_k, adaptive_k=adaptive_k, ties=ties, seed=seed, mask=mask,
                reduction=reduction, nonpositive_retrieved=nonpositive_retrieved, validate_args=validate_args)


def retrieval_recall(preds: torch.Tensor, target: torch.Tensor, top_k: int | None = None, *,
                     ties: str = "expected", seed: int = 0, mask: torch.Tensor | None = None,
                     reduction: str = "mean", nonpositive_retrieved: bool = False,
                     validate_args: bool = True) -> torch.Tensor:
    """Relevant items in the top k over all relevant items, exact when scores tie.

    Items with a score <= 0 are not retrieved (torchmetrics >= 1.8) unless ``nonpositive_retrieved=True``;
    they still count in the denominator. Other parameters: see :func:`retrieval_normalized_dcg`; targets
    are binary.

    Examples
    --------
    >>> import torch
    >>> from tierank.torch.functional import retrieval_recall
    >>> retrieval_recall(torch.tensor([0.5, 0.5, 0.5, 0.1]), torch.tensor([1, 0, 0, 1]), top_k=2)
    tensor(0.3333)
    """
    return _run(SPECS["recall"], preds, target, top_k, ties=ties, seed=seed, mask=mask, reduction=reduction,
                nonpositive_retrieved=nonpositive_retrieved, validate_args=validate_args)


def retrieval_hit_rate(preds: torch.Tensor, target: torch.Tensor, top_k: int | None = None, *,
                       ties: str = "expected", seed: int = 0, mask: torch.Tensor | None = None,
                       reduction: str = "mean", validate_args: bool = True) -> torch.Tensor:
    """1 if a relevant item is in the top k, else 0; with ties, the exact probability. Every item is
    ranked (as torchmetrics does here). Other parameters: see :func:`retrieval_normalized_dcg`.

    Examples
    --------
    >>> import torch
    >>> from tierank.torch.functional import retrieval_hit_rate
    >>> retrieval_hit_rate(torch.tensor([0.5, 0.5, 0.5, 0.5]), torch.tensor([1, 0, 0, 0]), top_k=2)
    tensor(0.5000)
    """
    return _run(SPECS["hit_rate"], preds, target, top_k, ties=ties, seed=seed, mask=mask, reduction=reduction,
                nonpositive_retrieved=False, validate_args=validate_args)


def retrieval_r_precision(preds: torch.Tensor, target: torch.Tensor, *, ties: str = "expected", seed: int = 0,
                          mask: torch.Tensor | None = None, reduction: str = "mean",
                          validate_args: bool = True) -> torch.Tensor:
    """Precision at rank R (the number of relevant items), exact when scores tie. Every item is ranked.
    Other parameters: see :func:`retrieval_normalized_dcg`.

    Examples
    --------
    >>> import torch
    >>> from tierank.torch.functional import retrieval_r_precision
    >>> retrieval_r_precision(torch.tensor([0.9, 0.5, 0.5, 0.1]), torch.tensor([0, 1, 1, 0]))
    tensor(0.5000)
    """
    return _run(SPECS["r_precision"], preds, target, None, ties=ties, seed=seed, mask=mask, reduction=reduction,
                nonpositive_retrieved=False, validate_args=validate_args)
