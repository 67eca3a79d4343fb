"""The small array namespace the dense kernel is written against, and its numpy and torch versions.

:func:`tierank.dense.dense_values` never names a framework: it calls the methods of an ``ops`` object.
:class:`Ops` lists every method with numpy semantics (the reference); :class:`NumpyOps` implements it
with numpy, :class:`TorchOps` with torch (lazily imported), and ``tierank.dense._keras_ops`` with
``keras.ops`` (TensorFlow, JAX and PyTorch backends).

Conventions every implementation follows:

- arrays are 2-D ``(batch, list_size)`` unless said otherwise; every axis argument is the last axis;
- no method may create a data-dependent shape (so the kernel compiles under ``jax.jit``,
  ``tf.function(jit_compile=True)`` and ``torch.compile``);
- the arithmetic and comparison operators ``+ - * / < <= > >=`` of the backend's tensors are used
  directly (with Python numbers too); equality and logic go through :meth:`Ops.equal`,
  :meth:`Ops.not_equal`, :meth:`Ops.logical_and`, :meth:`Ops.logical_or`, :meth:`Ops.logical_not`;
- integer arrays (positions, group ids, counts) have the implementation's integer dtype
  (:meth:`Ops.arange`); :meth:`Ops.to_float` casts them to a float dtype for arithmetic.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from ..errors import install_hint

__all__ = ["Ops", "NumpyOps", "TorchOps", "numpy_ops", "torch_ops"]

#: the ImportError's message when torch is missing (tierank.torch says it too)
TORCH_INSTALL_HINT = f"tierank.torch needs torch and torchmetrics: {install_hint('torch')}"


class Ops:
    """The protocol (numpy semantics). Subclasses implement every method; this class documents them."""

    name = "protocol"

    def arange(self, n: int, like: Any) -> Any:
        """``np.arange(n)`` as integers, on ``like``'s device (``n`` a Python int)."""
        raise NotImplementedError

    def to_float(self, x: Any, like: Any) -> Any:
        """``x`` cast to the float dtype of ``like``."""
        raise NotImplementedError

    def to_int(self, x: Any) -> Any:
        """``x`` (bool or integer-valued float) cast to the integer dtype of :meth:`arange`."""
        raise NotImplementedError

    def where(self, cond: Any, a: Any, b: Any) -> Any:
        """``np.where(cond, a, b)`` (broadcasting; ``a``, ``b`` arrays or Python numbers)."""
        raise NotImplementedError

    def equal(self, a: Any, b: Any) -> Any:
        """``a == b`` elementwise (``0.0 == -0.0`` and ``inf == inf`` are True)."""
        raise NotImplementedError

    def not_equal(self, a: Any, b: Any) -> Any:
        """``a != b`` elementwise."""
        raise NotImplementedError

    def logical_and(self, a: Any, b: Any) -> Any:
        """``a & b`` of bool arrays."""
        raise NotImplementedError

    def logical_or(self, a: Any, b: Any) -> Any:
        """``a | b`` of bool arrays."""
        raise NotImplementedError

    def logical_not(self, a: Any) -> Any:
        """``~a`` of a bool array."""
        raise NotImplementedError

    def minimum(self, a: Any, b: Any) -> Any:
        """``np.minimum(a, b)`` (broadcasting; one side may be a Python number)."""
        raise NotImplementedError

    def maximum(self, a: Any, b: Any) -> Any:
        """``np.maximum(a, b)`` (broadcasting; one side may be a Python number)."""
        raise NotImplementedError

    def log(self, x: Any) -> Any:
        """``np.log(x)`` (``log(0) = -inf`` without a warning)."""
        raise NotImplementedError

    def log2(self, x: Any) -> Any:
        """``np.log2(x)``."""
        raise NotImplementedError

    def exp(self, x: Any) -> Any:
        """``np.exp(x)``."""
        raise NotImplementedError

    def sum(self, x: Any) -> Any:
        """``x.sum(axis=-1)``."""
        raise NotImplementedError

    def max(self, x: Any) -> Any:
        """``x.max(axis=-1)`` (the last axis is never empty)."""
        raise NotImplementedError

    def cumsum(self, x: Any) -> Any:
        """``np.cumsum(x, axis=-1)`` (inclusive)."""
        raise NotImplementedError

    def cumprod(self, x: Any) -> Any:
        """``np.cumprod(x, axis=-1)`` (inclusive)."""
        raise NotImplementedError

    def expand(self, x: Any) -> Any:
        """``x[..., None]``: a (batch,) array as (batch, 1) for broadcasting against a row."""
        raise NotImplementedError

    def take(self, x: Any, index: Any) -> Any:
        """``np.take_along_axis(x, index, axis=-1)`` (``index`` integers, same rank as ``x``)."""
        raise NotImplementedError

    def argsort(self, x: Any) -> Any:
        """``np.argsort(x, axis=-1, kind="stable")``: ascending, equal values keep their order."""
        raise NotImplementedError

    def sort_descending(self, x: Any) -> Any:
        """``-np.sort(-x, axis=-1)``: each row sorted descending (values only)."""
        raise NotImplementedError

    def order_by_score(self, scores: Any, mask: Any) -> Any:
        """Per row, the stable order of the entries by (``mask`` True first, ``scores`` descending): the
        indices, as :meth:`argsort`. This default takes two stable sorts; an implementation may do it
        in one (torch: one sort with padding keyed NaN, which sorts last)."""
        first = self.argsort(-scores)
        return self.take(first, self.argsort(self.to_int(self.logical_not(self.take(mask, first)))))

    def group_sum(self, values: Any, group: Any) -> Any:
        """For every entry, the sum of ``values`` over the entries of its row with the same ``group``
        (``group``: integers in ``[0, list_size)``, same shape as ``values``); same shape and dtype as
        ``values``. Row-wise ``segment_sum`` followed by a gather."""
        raise NotImplementedError


class NumpyOps(Ops):
    """:class:`Ops` on numpy arrays (the reference implementation, used by the tests)."""

    name = "numpy"

    def arange(self, n: int, like: Any) -> Any:
        return np.arange(n, dtype=np.int64)

    def to_float(self, x: Any, like: Any) -> Any:
        return np.asarray(x).astype(np.asarray(like).dtype)

    def to_int(self, x: Any) -> Any:
        return np.asarray(x).astype(np.int64)

    def where(self, cond: Any, a: Any, b: Any) -> Any:
        return np.where(cond, a, b)

    def equal(self, a: Any, b: Any) -> Any:
        return np.equal(a, b)

    def not_equal(self, a: Any, b: Any) -> Any:
        return np.not_equal(a, b)

    def logical_and(self, a: Any, b: Any) -> Any:
        return np.logical_and(a, b)

    def logical_or(self, a: Any, b: Any) -> Any:
        return np.logical_or(a, b)

    def logical_not(self, a: Any) -> Any:
        return np.logical_not(a)

    def minimum(self, a: Any, b: Any) -> Any:
        return np.minimum(a, b)

    def maximum(self, a: Any, b: Any) -> Any:
        return np.maximum(a, b)

    def log(self, x: Any) -> Any:
        with np.errstate(divide="ignore"):
            return np.log(x)

    def log2(self, x: Any) -> Any:
        with np.errstate(divide="ignore"):
            return np.log2(x)

    def exp(self, x: Any) -> Any:
        return np.exp(x)

    def sum(self, x: Any) -> Any:
        return np.sum(x, axis=-1)

    def max(self, x: Any) -> Any:
        return np.max(x, axis=-1)

    def cumsum(self, x: Any) -> Any:
        return np.cumsum(x, axis=-1)

    def cumprod(self, x: Any) -> Any:
        return np.cumprod(x, axis=-1)

    def expand(self, x: Any) -> Any:
        return np.asarray(x)[..., None]

    def take(self, x: Any, index: Any) -> Any:
        return np.take_along_axis(np.asarray(x), np.asarray(index), axis=-1)

    def argsort(self, x: Any) -> Any:
        return np.argsort(x, axis=-1, kind="stable")

    def sort_descending(self, x: Any) -> Any:
        return -np.sort(-np.asarray(x), axis=-1)

    def group_sum(self, values: Any, group: Any) -> Any:
        values = np.asarray(values)
        rows, width = values.shape
        flat = (np.arange(rows)[:, None] * width + group).ravel()
        out = np.zeros(rows * width, dtype=values.dtype)
        np.add.at(out, flat, values.ravel())
        return out[flat].reshape(values.shape)


class TorchOps(Ops):
    """:class:`Ops` on torch tensors (any device; works under ``torch.compile``)."""

    name = "torch"

    def __init__(self) -> None:
        try:
            import torch
        except ImportError:
            raise ImportError(TORCH_INSTALL_HINT) from None
        self.torch = torch

    def arange(self, n: int, like: Any) -> Any:
        return self.torch.arange(n, device=like.device)

    def to_float(self, x: Any, like: Any) -> Any:
        return x.to(like.dtype)

    def to_int(self, x: Any) -> Any:
        return x.to(self.torch.int64)

    def where(self, cond: Any, a: Any, b: Any) -> Any:
        return self.torch.where(cond, a, b)

    def equal(self, a: Any, b: Any) -> Any:
        return self.torch.eq(a, b)

    def not_equal(self, a: Any, b: Any) -> Any:
        return self.torch.ne(a, b)

    def logical_and(self, a: Any, b: Any) -> Any:
        return self.torch.logical_and(a, b)

    def logical_or(self, a: Any, b: Any) -> Any:
        return self.torch.logical_or(a, b)

    def logical_not(self, a: Any) -> Any:
        return self.torch.logical_not(a)

    def _pair(self, a: Any, b: Any) -> tuple[Any, Any]:
        torch = self.torch
        if not isinstance(a, torch.Tensor):
            a = torch.as_tensor(a, dtype=b.dtype, device=b.device)
        if not isinstance(b, torch.Tensor):
            b = torch.as_tensor(b, dtype=a.dtype, device=a.device)
        return a, b

    def minimum(self, a: Any, b: Any) -> Any:
        return self.torch.minimum(*self._pair(a, b))

    def maximum(self, a: Any, b: Any) -> Any:
        return self.torch.maximum(*self._pair(a, b))

    def log(self, x: Any) -> Any:
        return self.torch.log(x)

    def log2(self, x: Any) -> Any:
        return self.torch.log2(x)

    def exp(self, x: Any) -> Any:
        return self.torch.exp(x)

    def sum(self, x: Any) -> Any:
        return x.sum(dim=-1)

    def max(self, x: Any) -> Any:
        return x.amax(dim=-1)

    def cumsum(self, x: Any) -> Any:
        return self.torch.cumsum(x, dim=-1)

    def cumprod(self, x: Any) -> Any:
        return self.torch.cumprod(x, dim=-1)

    def expand(self, x: Any) -> Any:
        return x.unsqueeze(-1)

    def take(self, x: Any, index: Any) -> Any:
        return self.torch.gather(x, -1, index)

    def argsort(self, x: Any) -> Any:
        return self.torch.sort(x, dim=-1, stable=True).indices

    def sort_descending(self, x: Any) -> Any:
        return self.torch.sort(x, dim=-1, descending=True).values

    def order_by_score(self, scores: Any, mask: Any) -> Any:
        # one stable sort: torch sorts NaN after every number (-inf and +inf included)
        key = self.torch.where(mask, -scores, self.torch.full_like(scores, float("nan")))
        return self.torch.sort(key, dim=-1, stable=True).indices

    def group_sum(self, values: Any, group: Any) -> Any:
        out = self.torch.zeros_like(values).scatter_add_(-1, group, values)
        return self.torch.gather(out, -1, group)


numpy_ops = NumpyOps()


def torch_ops() -> TorchOps:
    """The shared :class:`TorchOps` (created on first use: torch is imported then)."""
    global _TORCH_OPS
    if _TORCH_OPS is None:
        _TORCH_OPS = TorchOps()
    return _TORCH_OPS


_TORCH_OPS: TorchOps | None = None
