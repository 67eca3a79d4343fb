"""trec_eval's ``-M`` (at most N documents per query) and ``-J`` (judged documents only) on ranked lists.

trec_eval applies both after sorting a query's documents by score (ties by document id): ``-M N`` keeps
the first N, then ``-J`` drops the retrieved documents with no judgment (absent from the qrels, or a
negative grade) and closes the gaps, keeping the original order of the rest.

Tie-aware: dropping documents from a tie leaves a tie of the others, and a uniformly random ordering of a
tie restricted to some of its items is a uniformly random ordering of those, so ``-J`` is exact in every
tie mode. ``-M N`` keeps a set of documents that depends on the order of a tie only when the tie straddles
rank N; then the fixed modes (``input``, ``trec_eval``, ``random``) keep the first N in their order, and
the other modes (``expected``, ``lower``, ``upper`` and bounds, over all orderings; ``optimistic`` /
``pessimistic``, whose order depends on the measure) raise an :class:`~tierank.errors.InputError` naming
the query and the tie: the documents evaluated would depend on a tie-break those modes do not make.
"""

from __future__ import annotations

from dataclasses import replace
from typing import Any

import numpy as np

from ..data.ranked import RankedLists, concat_ranges
from ..errors import InputError, param_text
from .groups import Judged, TieStats
from .policy import TieOrderings

__all__ = ["RestrictedLists", "restrict"]

_FIXED = ("input", "trec_eval", "random")


class RestrictedLists:
    """Ranked lists after ``-M``/``-J``: queries left with no document move to the empty ones."""

    def __init__(self, ranked: RankedLists, labels: np.ndarray, emptied_labels: np.ndarray,
                 emptied_judged: list[np.ndarray]) -> None:
        self.ranked, self.labels = ranked, labels
        self.emptied_labels, self.emptied_judged = emptied_labels, emptied_judged


def _check_max_docs(max_docs: Any) -> int | None:
    if max_docs is None:
        return None
    if isinstance(max_docs, bool) or not isinstance(max_docs, (int, np.integer)) or max_docs < 1:
        raise InputError(f"max_docs must be a positive integer (trec_eval -M), got {max_docs!r}")
    return int(max_docs)


def restrict(ranked: RankedLists, labels: np.ndarray, *, judged_only: bool = False, max_docs: Any = None,
             ties: str = "expected", bounds: bool = False, seed: int = 0) -> RestrictedLists:
    """Apply ``-M max_docs`` then ``-J`` (``judged_only``) to every query (see the module docstring)."""
    max_docs = _check_max_docs(max_docs)
    keep = np.ones(len(ranked.grades), dtype=bool)
    if max_docs is not None:
        if ties in _FIXED and not bounds:
            ranked = _in_mode_order(ranked, ties, seed)
        else:
            _check_no_straddling_tie(ranked, labels, max_docs, ties, bounds)
        position = np.arange(len(keep)) - np.repeat(ranked.qptr[:-1], ranked.lengths)
        keep &= position < max_docs
    if judged_only:
        keep &= ranked.grades >= 0
    if keep.all():
        return RestrictedLists(ranked, labels, labels[:0], [])
    return _keep(ranked, labels, keep)


def _in_mode_order(ranked: RankedLists, mode: str, seed: int) -> RankedLists:
    """The same lists with every tie in the order of a fixed tie mode (the order that mode evaluates)."""
    stats = TieStats.from_ranked(ranked, Judged.from_csr(ranked.judged_ptr, ranked.judged))
    order = TieOrderings(stats, ranked, seed).fixed_order(mode)
    return ranked if order is None else _take(ranked, order)


def _check_no_straddling_tie(ranked: RankedLists, labels: np.ndarray, max_docs: int, ties: str,
                             bounds: bool = False) -> None:
    long_enough = np.flatnonzero(ranked.lengths > max_docs)
    if not len(long_enough):
        return
    last = ranked.qptr[long_enough] + max_docs - 1     # the N-th document and the one after it
    tie = ranked.tie_values
    straddles = tie[last] == tie[last + 1]
    if straddles.any():
        q = long_enough[np.argmax(straddles)]
        label = labels[q].item() if isinstance(labels[q], np.generic) else labels[q]
        fixed = [param_text("ties", mode) for mode in ("trec_eval", "input", "random")]
        # the bounds range over every tie order, so with them no fixed mode makes a tie-break either
        why = param_text("bounds", True) if ties in _FIXED else param_text("ties", ties)
        raise InputError(
            f"query {label!r}: {param_text('max_docs', max_docs)} cuts a tie of documents with equal scores "
            f"at rank {max_docs}, so the documents kept depend on the tie-break; with {why} no tie-break is "
            f"made. Use {fixed[0]}, {fixed[1]} or {fixed[2]} (without {param_text('bounds', True)}), or a "
            f"measure cutoff (@{max_docs}) instead", query=label)


def _take(ranked: RankedLists, items: np.ndarray) -> RankedLists:
    """The lists with their items replaced by ``items`` (indices into the old items, query by query)."""
    old_fn, keys_fn, trec_fn = ranked.keys_fn, None, ranked.trec_order_fn
    if ranked.keys is None and old_fn is not None:
        keys_fn = _Compose(old_fn, items)
    return replace(ranked, keys=None if ranked.keys is None else ranked.keys[items],
                   grades=ranked.grades[items], input_order=ranked.input_order[items],
                   tie_keys=None if ranked.tie_keys is None else ranked.tie_keys[items],
                   keys_fn=keys_fn, trec_order_fn=_ComposeOrder(trec_fn, items), cache={})


def _keep(ranked: RankedLists, labels: np.ndarray, keep: np.ndarray) -> RestrictedLists:
    counts = np.add.reduceat(keep.astype(np.int64), ranked.qptr[:-1]) if len(keep) else np.zeros(0, np.int64)
    counts[ranked.lengths == 0] = 0
    kept_q = np.flatnonzero(counts > 0)
    emptied = np.flatnonzero(counts == 0)
    items = np.flatnonzero(keep)
    qptr = np.zeros(len(kept_q) + 1, dtype=np.int64)
    np.cumsum(counts[kept_q], out=qptr[1:])
    jp = ranked.judged_ptr
    judged_items = concat_ranges(jp[kept_q], jp[kept_q + 1] - jp[kept_q])
    new_jp = np.zeros(len(kept_q) + 1, dtype=np.int64)
    np.cumsum(jp[kept_q + 1] - jp[kept_q], out=new_jp[1:])
    out = _take(ranked, items)
    out = replace(out, qptr=qptr, judged_ptr=new_jp, judged=ranked.judged[judged_items])
    emptied_judged = [ranked.judged[jp[q]:jp[q + 1]] for q in emptied]   # few queries: those emptied
    return RestrictedLists(out, labels[kept_q], labels[emptied], emptied_judged)


class _Compose:
    """``fn(items[i])``: the keys of the kept items (a class, so the lists pickle)."""

    def __init__(self, fn: Any, items: np.ndarray) -> None:
        self.fn, self.items = fn, items

    def __call__(self, i: np.ndarray) -> np.ndarray:
        return self.fn(self.items[i])


class _ComposeOrder:
    """The trec_eval order key of the kept items (an array, or words of string ids)."""

    def __init__(self, fn: Any, items: np.ndarray) -> None:
        self.fn, self.items = fn, items

    def __call__(self) -> Any:
        key = self.fn()
        return [w[self.items] for w in key] if isinstance(key, list) else key[self.items]
