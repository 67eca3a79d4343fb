"""Shared code of tierank.torch: input checks, the torchmetrics conventions of each metric, and the
grouping of flat (preds, target, indexes) by query into padded rows for the dense kernel."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import torch

from ..dense import DENSE_TIES, dense_values, torch_ops
from ..errors import InputError

#: cells of the padded (queries, longest list) matrix evaluated at a time by compute()
CHUNK_CELLS = 1 << 22


@dataclass(frozen=True)
class Spec:
    """A torchmetrics retrieval metric in terms of the dense kernel.

    ``positive_only``: torchmetrics >= 1.8 counts items with a score <= 0 as not retrieved (their target
    is zeroed before ranking) in exactly these metrics: AP, MRR, precision and recall. ``binary``: the
    target must be 0/1 (nDCG takes graded targets).
    """

    name: str
    kernel: str
    positive_only: bool
    binary: bool = True
    has_top_k: bool = True


SPECS = {
    "ndcg": Spec("retrieval_normalized_dcg", "ndcg", False, binary=False),
    "map": Spec("retrieval_average_precision", "ap_retrieved", True),
    "mrr": Spec("retrieval_reciprocal_rank", "rr", True),
    "precision": Spec("retrieval_precision", "hits", True),
    "recall": Spec("retrieval_recall", "hits", True),
    "hit_rate": Spec("retrieval_hit_rate", "hit_rate", False),
    "r_precision": Spec("retrieval_r_precision", "r_precision", False, has_top_k=False),
}


def check_options(top_k: Any, ties: str, *, adaptive_k: bool = False, nonpositive_retrieved: bool = False) -> None:
    """The arguments that do not depend on the data (eager and compiled alike)."""
    if top_k is not None and (isinstance(top_k, bool) or not isinstance(top_k, int) or top_k <= 0):
        raise InputError(f"`top_k` has to be a positive integer or None, got {top_k!r}")
    if ties not in DENSE_TIES:
        raise InputError(f"`ties` must be one of {DENSE_TIES}, got {ties!r}")
    if not isinstance(adaptive_k, bool):
        raise InputError(f"`adaptive_k` has to be a boolean, got {adaptive_k!r}")
    if not isinstance(nonpositive_retrieved, bool):
        raise InputError(f"`nonpositive_retrieved` has to be a boolean, got {nonpositive_retrieved!r}")


def _where(mask: torch.Tensor) -> str:
    """'(row, column)' or 'position i' of the first True entry."""
    at = torch.nonzero(mask)[0].tolist()
    return f"position {at[0]}" if len(at) == 1 else f"(row, column) {tuple(at)}"


def check_tensors(preds: Any, target: Any, spec: Spec, indexes: Any = None, targets: bool = True) -> None:
    """Eager checks of the data: clear InputErrors (ValueErrors) instead of silent numbers."""
    if not isinstance(preds, torch.Tensor) or not isinstance(target, torch.Tensor):
        raise InputError(f"{spec.name}: `preds` and `target` must be torch tensors, got "
                         f"{type(preds).__name__} and {type(target).__name__}")
    if indexes is not None and (not isinstance(indexes, torch.Tensor) or indexes.is_floating_point()
                                or indexes.is_complex() or indexes.dtype == torch.bool):
        raise InputError(f"{spec.name}: `indexes` must be a tensor of integers (torch.long), got "
                         f"{getattr(indexes, 'dtype', type(indexes).__name__)}")
    if preds.shape != target.shape or (indexes is not None and indexes.shape != preds.shape):
        shapes = [tuple(preds.shape), tuple(target.shape)] + ([] if indexes is None else [tuple(indexes.shape)])
        names = "`preds`, `target`" + ("" if indexes is None else " and `indexes`")
        raise InputError(f"{spec.name}: {names} must have the same shape, got {shapes}")
    if preds.numel() == 0 or preds.dim() == 0:
        raise InputError(f"{spec.name}: `preds` and `target` must be non-empty and non-scalar tensors")
    if not preds.is_floating_point():
        raise InputError(f"{spec.name}: `preds` must be a tensor of floats, got {preds.dtype}")
    bad = torch.isnan(preds)
    if bad.any():
        raise InputError(f"{spec.name}: `preds` is NaN at {_where(bad)}; scores must be numbers (+-inf tie)")
    if target.dtype not in (torch.bool, torch.int8, torch.int16, torch.int32, torch.int64, torch.uint8) \
            and not target.is_floating_point():
        raise InputError(f"{spec.name}: `target` must be a tensor of booleans, integers or floats, got {target.dtype}")
    if targets:
        check_targets(target, spec)


def check_targets(target: torch.Tensor, spec: Spec) -> None:
    """Targets finite and >= 0, and 0/1 for the binary metrics."""
    if target.numel() == 0:
        return
    t = target.to(torch.float64)
    bad = ~torch.isfinite(t) | (t < 0)
    if bad.any():
        raise InputError(f"{spec.name}: `target` is {t[bad][0].item()!r} at {_where(bad)}; targets must be "
                         "finite and >= 0 (drop padding with `ignore_index` or a mask)")
    if spec.binary:
        bad = (t != 0) & (t != 1)
        if bad.any():
            raise InputError(f"{spec.name}: `target` must contain binary values (0/1), got {t[bad][0].item()!r} "
                             f"at {_where(bad)}")


def work_dtype(preds: torch.Tensor) -> torch.dtype:
    """float64 for the arithmetic (float32 inputs are exact in it, so ties stay ties), except on MPS."""
    return torch.float32 if preds.device.type == "mps" else torch.float64


def result_dtype(preds: torch.Tensor) -> torch.dtype:
    """The dtype of the values returned: float64 for float64 scores, float32 for every other float
    (float32, and float16 / bfloat16 from mixed precision, whose 8 or 11 bits of mantissa would round
    a MAP of 0.4680 to 0.4688), as torchmetrics returns float32."""
    return torch.float64 if preds.dtype == torch.float64 else torch.float32


def per_query(preds: torch.Tensor, target: torch.Tensor, mask: torch.Tensor | None, spec: Spec,
              top_k: int | None, *, adaptive_k: bool = False, ties: str = "expected", seed: int = 0,
              nonpositive_retrieved: bool = False) -> tuple[torch.Tensor, torch.Tensor]:
    """Values of one metric per row of padded (rows, L) tensors, with torchmetrics' conventions, and
    whether each row is "empty" (no positive target: torchmetrics' ``empty_target_action`` applies).

    Returns ``(values, empty)``, values in float64 (float32 on MPS)."""
    dt = work_dtype(preds)
    scores = preds.to(dt)
    labels = target.to(dt)
    if mask is None:
        mask = torch.ones(scores.shape, dtype=torch.bool, device=scores.device)
    labels = torch.where(mask, labels, torch.zeros_like(labels))
    relevant = labels > 0
    empty = ~relevant.any(dim=-1)
    if spec.positive_only and not nonpositive_retrieved:
        labels = torch.where(scores > 0, labels, torch.zeros_like(labels))
    k = top_k if spec.has_top_k else None
    values, _ = dense_values(torch_ops(), scores, labels, mask, measure=spec.kernel, k=k, ties=ties, seed=seed)
    if spec.name == "retrieval_precision":
        n_real = mask.sum(dim=-1).to(dt)
        if top_k is None:
            den = n_real
        elif adaptive_k:
            den = torch.clamp(n_real, max=float(top_k))
        else:
            den = torch.full_like(n_real, float(top_k))
        values = values / den
    elif spec.name == "retrieval_recall":
        R = relevant.sum(dim=-1).to(dt)
        values = values / torch.clamp(R, min=1.0)
    return torch.where(empty, torch.zeros_like(values), values), empty


def group_rows(indexes: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor, torch.Tensor]:
    """Group flat items by query id with one stable sort.

    Returns ``(perm, row, col, counts)``: item ``perm[j]`` goes to padded cell ``(row[j], col[j])``;
    ``counts[q]`` items belong to the q-th smallest query id.
    """
    ids, perm = torch.sort(indexes, stable=True)
    new = torch.ones_like(ids, dtype=torch.bool)
    new[1:] = ids[1:] != ids[:-1]
    row = torch.cumsum(new.to(torch.int64), 0) - 1
    starts = torch.nonzero(new).flatten()
    col = torch.arange(len(ids), device=ids.device) - starts[row]
    counts = torch.diff(torch.cat([starts, starts.new_tensor([len(ids)])]))
    return perm, row, col, counts


def _padded(preds: torch.Tensor, target: torch.Tensor, row: torch.Tensor, col: torch.Tensor,
            shape: tuple[int, int]) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    """Items scattered into padded (rows, width) preds, target and mask tensors."""
    P = torch.zeros(shape, dtype=preds.dtype, device=preds.device)
    T = torch.zeros(shape, dtype=target.dtype, device=target.device)
    M = torch.zeros(shape, dtype=torch.bool, device=preds.device)
    P[row, col], T[row, col], M[row, col] = preds, target, True
    return P, T, M


def grouped_values(preds: torch.Tensor, target: torch.Tensor, indexes: torch.Tensor, spec: Spec,
                   top_k: int | None, **options: Any) -> tuple[torch.Tensor, torch.Tensor]:
    """Per query (in ascending id order) the metric value and its emptiness, from flat tensors.

    Queries are ordered by length (a sort of the queries, not of the items) and evaluated in blocks of
    at most :data:`CHUNK_CELLS` padded cells (a block holds at least one query), so a few long queries
    do not pad every other one to their length.
    """
    perm, row, col, counts = group_rows(indexes)
    n_q = len(counts)
    width = int(counts.max())
    if n_q * width <= CHUNK_CELLS:   # one block: no reordering by length
        return per_query(*_padded(preds[perm], target[perm], row, col, (n_q, width)), spec, top_k, **options)
    by_len = torch.argsort(counts, descending=True, stable=True)
    slot = torch.empty_like(by_len)
    slot[by_len] = torch.arange(n_q, device=by_len.device)        # query -> its row in length order
    len_sorted = counts[by_len]
    slot_start = torch.cumsum(len_sorted, 0) - len_sorted           # first item of each row, length order
    r_items = slot[row]
    dest = slot_start[r_items] + col                                # a scatter, no second sort of the items
    p_items = torch.empty_like(preds).index_put_((dest,), preds[perm])
    t_items = torch.empty_like(target).index_put_((dest,), target[perm])
    r_all = torch.empty_like(r_items).index_put_((dest,), r_items)
    c_all = torch.empty_like(col).index_put_((dest,), col)
    lengths = len_sorted.tolist()
    starts = slot_start.tolist() + [len(indexes)]
    values = torch.empty(n_q, dtype=work_dtype(preds), device=preds.device)
    empty = torch.empty(n_q, dtype=torch.bool, device=preds.device)
    first = 0
    while first < n_q:   # loop over blocks of queries (few), vectorised inside
        width = lengths[first]
        last = min(n_q, first + max(1, CHUNK_CELLS // max(width, 1)))
        sl = slice(starts[first], starts[last])
        padded = _padded(p_items[sl], t_items[sl], r_all[sl] - first, c_all[sl], (last - first, width))
        v, e = per_query(*padded, spec, top_k, **options)
        values[by_len[first:last]], empty[by_len[first:last]] = v, e
        first = last
    return values, empty
