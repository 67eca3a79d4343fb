"""Stateful retrieval metrics: drop-in subclasses of torchmetrics' classes, exact when scores tie.

Each class is a subclass of the torchmetrics class of the same name (so of ``torchmetrics.Metric``):
the same constructor (``empty_target_action``, ``ignore_index``, ``top_k``, ``aggregation``, ...), the
same states (``indexes``, ``preds``, ``target``, concatenated across processes by torchmetrics' sync),
``update(preds, target, indexes)`` and ``compute()``, plus ``ties=`` and ``seed=`` (see
:mod:`tierank.torch.functional`).

``compute()`` groups the items by ``indexes`` with one sort, scatters them into padded
``(queries, longest list)`` blocks and evaluates every query at once with the dense kernel on the
tensors' device: no Python loop over queries. Queries are taken in order of length, in blocks of at most
:data:`tierank.torch._core.CHUNK_CELLS` cells, so a few long queries do not pad all the others.

``update`` checks the data eagerly and raises a clear ``ValueError`` (:class:`tierank.errors.InputError`)
for NaN scores, mismatched shapes, non-integer ``indexes`` and non-binary or negative targets; unlike
torchmetrics it keeps the float dtype of ``preds`` (torchmetrics casts to float32, which can create ties).
``compute()`` works in float64 and returns float64 for float64 scores, float32 for the others (float16 and
bfloat16 included, as torchmetrics).
"""

from __future__ import annotations

from typing import Any

import torch
from torchmetrics import retrieval as tm
from torchmetrics.retrieval.base import _retrieval_aggregate
from torchmetrics.utilities.data import dim_zero_cat

from ._core import SPECS, Spec, check_options, check_targets, check_tensors, grouped_values, result_dtype

__all__ = ["RetrievalNormalizedDCG", "RetrievalMAP", "RetrievalMRR", "RetrievalPrecision", "RetrievalRecall",
           "RetrievalHitRate", "RetrievalRPrecision"]


class _TieAware:
    """The tie-aware update / compute shared by every class (a mixin before the torchmetrics class)."""

    _spec: Spec

    def _init_ties(self, ties: str, seed: int, nonpositive_retrieved: bool) -> None:
        check_options(getattr(self, "top_k", None), ties, nonpositive_retrieved=nonpositive_retrieved)
        self.ties, self.seed, self.nonpositive_retrieved = ties, int(seed), nonpositive_retrieved

    def update(self, preds: torch.Tensor, target: torch.Tensor, indexes: torch.Tensor) -> None:
        """Check the batch (clear ValueErrors), drop ``ignore_index`` targets and store it, flattened."""
        if indexes is None:
            raise ValueError("Argument `indexes` cannot be None")
        check_tensors(preds, target, self._spec, indexes, targets=False)
        ignored = None if self.ignore_index is None else target == self.ignore_index
        check_targets(target if ignored is None else target.masked_fill(ignored, 0), self._spec)
        preds, target, indexes = preds.flatten(), target.flatten(), indexes.flatten().long()
        if ignored is not None:
            keep = ~ignored.flatten()
            preds, target, indexes = preds[keep], target[keep], indexes[keep]
        self.indexes.append(indexes)
        self.preds.append(preds)
        self.target.append(target.float() if target.is_floating_point() else target.long())

    def compute(self) -> torch.Tensor:
        """The aggregated metric over every query seen (torchmetrics' ``empty_target_action`` for queries
        without a positive target)."""
        preds = dim_zero_cat(self.preds)
        if preds.numel() == 0:
            return torch.tensor(0.0, dtype=result_dtype(preds), device=preds.device)
        values, empty = self._grouped(preds, dim_zero_cat(self.target), dim_zero_cat(self.indexes))
        if self.empty_target_action == "error" and bool(empty.any()):
            raise ValueError("`compute` method was provided with a query with no positive target.")
        if self.empty_target_action == "skip":
            values = values[~empty]
        else:
            fill = 1.0 if self.empty_target_action == "pos" else 0.0
            values = torch.where(empty, torch.full_like(values, fill), values)
        if values.numel() == 0:
            return torch.tensor(0.0, dtype=result_dtype(preds), device=preds.device)
        return _retrieval_aggregate(values, self.aggregation).to(result_dtype(preds))

    def _grouped(self, preds: torch.Tensor, target: torch.Tensor,
                 indexes: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        """Per query the value and its emptiness, with this metric's options."""
        return grouped_values(preds, target, indexes, self._spec, getattr(self, "top_k", None),
                              adaptive_k=getattr(self, "adaptive_k", False), ties=self.ties, seed=self.seed,
                              nonpositive_retrieved=self.nonpositive_retrieved)

    def _metric(self, preds: torch.Tensor, target: torch.Tensor) -> torch.Tensor:
        values, _ = self._grouped(preds, target, torch.zeros_like(preds, dtype=torch.long))
        return values[0].to(result_dtype(preds))


_DOC = """{what}, exact when scores tie: a drop-in subclass of ``torchmetrics.retrieval.{name}``.

    Parameters
    ----------
    empty_target_action, ignore_index{extra}, aggregation, **kwargs
        As torchmetrics.
    ties : {{"expected", "lower", "upper", "optimistic", "pessimistic", "input", "trec_eval", "random"}}, \
default="expected"
        How tied scores count, as in :func:`tierank.evaluate`: the exact mean / minimum / maximum over
        every ordering; or one fixed order inside every tie: relevant items first / last, the input order
        (column ascending / descending), or a seeded order.
    seed : int, default=0
        Seed of ``ties="random"``.{nonpos}

    Examples
    --------
    >>> import torch
    >>> from tierank.torch import {name}
    >>> metric = {name}({args})
    >>> metric.update(torch.tensor([0.5, 0.5, 0.5, 0.2, 0.9, 0.9]), torch.tensor([1, 0, 0, 0, 1, 1]),
    ...               indexes=torch.tensor([0, 0, 0, 1, 1, 1]))
    >>> metric.compute()
    {out}
    """

_NONPOS = """
    nonpositive_retrieved : bool, default=False
        False: an item with a score <= 0 is not retrieved (torchmetrics >= 1.8); True: every item is
        ranked (trec_eval, tierank.evaluate)."""


def _doc(name: str, what: str, out: str, extra: str = ", top_k", args: str = "", nonpos: bool = True) -> str:
    return _DOC.format(name=name, what=what, extra=extra, args=args, out=out, nonpos=_NONPOS if nonpos else "")


class RetrievalNormalizedDCG(_TieAware, tm.RetrievalNormalizedDCG):
    __doc__ = _doc("RetrievalNormalizedDCG", "Mean nDCG over queries (graded targets)", "tensor(0.8552)",
                   nonpos=False)
    _spec = SPECS["ndcg"]

    def __init__(self, empty_target_action: str = "neg", ignore_index: int | None = None,
                 top_k: int | None = None, aggregation: Any = "mean", *, ties: str = "expected", seed: int = 0,
                 **kwargs: Any) -> None:
        super().__init__(empty_target_action=empty_target_action, ignore_index=ignore_index, top_k=top_k,
                         aggregation=aggregation, **kwargs)
        self._init_ties(ties, seed, False)


class RetrievalMAP(_TieAware, tm.RetrievalMAP):
    __doc__ = _doc("RetrievalMAP", "Mean average precision (over the relevant items in the top k)",
                   "tensor(0.8056)")
    _spec = SPECS["map"]

    def __init__(self, empty_target_action: str = "neg", ignore_index: int | None = None,
                 top_k: int | None = None, aggregation: Any = "mean", *, ties: str = "expected", seed: int = 0,
                 nonpositive_retrieved: bool = False, **kwargs: Any) -> None:
        super().__init__(empty_target_action=empty_target_action, ignore_index=ignore_index, top_k=top_k,
                         aggregation=aggregation, **kwargs)
        self.top_k = top_k
        self._init_ties(ties, seed, nonpositive_retrieved)


class RetrievalMRR(_TieAware, tm.RetrievalMRR):
    __doc__ = _doc("RetrievalMRR", "Mean reciprocal rank", "tensor(0.8056)")
    _spec = SPECS["mrr"]

    def __init__(self, empty_target_action: str = "neg", ignore_index: int | None = None,
                 top_k: int | None = None, aggregation: Any = "mean", *, ties: str = "expected", seed: int = 0,
                 nonpositive_retrieved: bool = False, **kwargs: Any) -> None:
        super().__init__(empty_target_action=empty_target_action, ignore_index=ignore_index, top_k=top_k,
                         aggregation=aggregation, **kwargs)
        self._init_ties(ties, seed, nonpositive_retrieved)


class RetrievalPrecision(_TieAware, tm.RetrievalPrecision):
    __doc__ = _doc("RetrievalPrecision", "Mean precision at k", "tensor(0.6667)", extra=", top_k, adaptive_k",
                   args="top_k=2")
    _spec = SPECS["precision"]

    def __init__(self, empty_target_action: str = "neg", ignore_index: int | None = None,
                 top_k: int | None = None, adaptive_k: bool = False, aggregation: Any = "mean", *,
                 ties: str = "expected", seed: int = 0, nonpositive_retrieved: bool = False,
                 **kwargs: Any) -> None:
        super().__init__(empty_target_action=empty_target_action, ignore_index=ignore_index, top_k=top_k,
                         adaptive_k=adaptive_k, aggregation=aggregation, **kwargs)
        self._init_ties(ties, seed, nonpositive_retrieved)


class RetrievalRecall(_TieAware, tm.RetrievalRecall):
    __doc__ = _doc("RetrievalRecall", "Mean recall at k", "tensor(0.8333)", args="top_k=2")
    _spec = SPECS["recall"]

    def __init__(self, empty_target_action: str = "neg", ignore_index: int | None = None,
                 top_k: int | None = None, aggregation: Any = "mean", *, ties: str = "expected", seed: int = 0,
                 nonpositive_retrieved: bool = False, **kwargs: Any) -> None:
        super().__init__(empty_target_action=empty_target_action, ignore_index=ignore_index, top_k=top_k,
                         aggregation=aggregation, **kwargs)
        self._init_ties(ties, seed, nonpositive_retrieved)


class RetrievalHitRate(_TieAware, tm.RetrievalHitRate):
    __doc__ = _doc("RetrievalHitRate", "Mean hit rate at k", "tensor(0.6667)", args="top_k=1", nonpos=False)
    _spec = SPECS["hit_rate"]

    def __init__(self, empty_target_action: str = "neg", ignore_index: int | None = None,
                 top_k: int | None = None, aggregation: Any = "mean", *, ties: str = "expected", seed: int = 0,
                 **kwargs: Any) -> None:
        super().__init__(empty_target_action=empty_target_action, ignore_index=ignore_index, top_k=top_k,
                         aggregation=aggregation, **kwargs)
        self._init_ties(ties, seed, False)


class RetrievalRPrecision(_TieAware, tm.RetrievalRPrecision):
    __doc__ = _doc("RetrievalRPrecision", "Mean R-precision", "tensor(0.6667)", extra="", nonpos=False)
    _spec = SPECS["r_precision"]

    def __init__(self, empty_target_action: str = "neg", ignore_index: int | None = None,
                 aggregation: Any = "mean", *, ties: str = "expected", seed: int = 0, **kwargs: Any) -> None:
        super().__init__(empty_target_action=empty_target_action, ignore_index=ignore_index,
                         aggregation=aggregation, **kwargs)
        self._init_ties(ties, seed, False)
