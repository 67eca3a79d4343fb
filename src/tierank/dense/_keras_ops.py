""":class:`~tierank.dense.Ops` on ``keras.ops``: the dense kernel on the TensorFlow, JAX and PyTorch backends.

Everything goes through ``keras.ops`` except the two operations whose ``keras.ops`` version does not keep
the protocol's promise on every backend, which call the backend's own function:

- :meth:`KerasOps.argsort` must be stable (ties keep their input order): ``keras.ops.argsort`` is
  ``tf.argsort`` with its default ``stable=False`` on TensorFlow, so each backend's stable sort is called
  (``tf.argsort(stable=True)``, ``jnp.argsort(stable=True)``, ``torch.argsort(stable=True)``);
- :meth:`KerasOps.group_sum` is a row-wise scatter-add, which ``keras.ops`` has no batched form of
  (``keras.ops.segment_sum`` needs a static number of segments, unknown when the batch size is):
  ``tf.tensor_scatter_nd_add``, ``.at[].add`` in JAX, ``scatter_add`` in torch.

All of them work eagerly and compiled (``tf.function(jit_compile=True)``, ``jax.jit``,
``torch.compile``); integer arrays are int32 (TensorFlow's and JAX's index type; keras.ops casts indices
for torch).
"""

from __future__ import annotations

from typing import Any

from ..errors import install_hint
from ._ops import Ops

__all__ = ["KerasOps", "keras_ops"]

#: the ImportError's message when keras is missing (tierank.keras says it too)
KERAS_INSTALL_HINT = ("tierank.keras needs Keras 3 and a backend (TensorFlow, JAX or PyTorch): "
                      f"{install_hint('keras', 'tensorflow')}")


class KerasOps(Ops):
    """:class:`~tierank.dense.Ops` on the tensors of the active Keras backend (``keras.backend.backend()``).

    Examples
    --------
    >>> import numpy as np
    >>> from tierank.dense import dense_values
    >>> from tierank.dense._keras_ops import keras_ops
    >>> ops = keras_ops()
    >>> import keras
    >>> scores = keras.ops.convert_to_tensor(np.array([[0.5, 0.5, 0.1]], "float32"))
    >>> labels = keras.ops.convert_to_tensor(np.array([[1.0, 0.0, 1.0]], "float32"))
    >>> mask = keras.ops.convert_to_tensor(np.ones((1, 3), bool))
    >>> values, valid = dense_values(ops, scores, labels, mask, measure="rr")
    >>> round(float(values[0]), 6)
    0.75
    """

    def __init__(self) -> None:
        try:
            import keras
        except ImportError:
            raise ImportError(KERAS_INSTALL_HINT) from None
        self.keras = keras
        self.k = keras.ops
        self.backend = keras.backend.backend()
        self.name = f"keras-{self.backend}"
        if self.backend not in ("tensorflow", "jax", "torch"):
            raise ImportError(f"tierank.keras supports the tensorflow, jax and torch backends, not {self.backend!r}")

    def arange(self, n: int, like: Any) -> Any:
        return self.k.arange(n, dtype="int32")

    def to_float(self, x: Any, like: Any) -> Any:
        return self.k.cast(x, self.keras.backend.standardize_dtype(like.dtype))

    def to_int(self, x: Any) -> Any:
        return self.k.cast(x, "int32")

    def where(self, cond: Any, a: Any, b: Any) -> Any:
        return self.k.where(cond, a, b)

    def equal(self, a: Any, b: Any) -> Any:
        return self.k.equal(a, b)

    def not_equal(self, a: Any, b: Any) -> Any:
        return self.k.not_equal(a, b)

    def logical_and(self, a: Any, b: Any) -> Any:
        return self.k.logical_and(a, b)

    def logical_or(self, a: Any, b: Any) -> Any:
        return self.k.logical_or(a, b)

    def logical_not(self, a: Any) -> Any:
        return self.k.logical_not(a)

    def minimum(self, a: Any, b: Any) -> Any:
        return self.k.minimum(a, b)

    def maximum(self, a: Any, b: Any) -> Any:
        return self.k.maximum(a, b)

    def log(self, x: Any) -> Any:
        return self.k.log(x)

    def log2(self, x: Any) -> Any:
        return self.k.log2(x)

    def exp(self, x: Any) -> Any:
        return self.k.exp(x)

    def sum(self, x: Any) -> Any:
        return self.k.sum(x, axis=-1)

    def max(self, x: Any) -> Any:
        return self.k.max(x, axis=-1)

    def cumsum(self, x: Any) -> Any:
        return self.k.cumsum(x, axis=-1)

    def cumprod(self, x: Any) -> Any:
        return self.k.cumprod(x, axis=-1)

    def expand(self, x: Any) -> Any:
        return self.k.expand_dims(x, -1)

    def take(self, x: Any, index: Any) -> Any:
        return self.k.take_along_axis(x, index, axis=-1)

    def argsort(self, x: Any) -> Any:
        if self.backend == "tensorflow":
            import tensorflow as tf

            return tf.argsort(x, axis=-1, stable=True)
        if self.backend == "jax":
            import jax.numpy as jnp

            return jnp.argsort(x, axis=-1, stable=True).astype("int32")
        import torch

        return torch.argsort(x, dim=-1, stable=True).to(torch.int32)

    def sort_descending(self, x: Any) -> Any:
        return -self.k.sort(-x, axis=-1)

    def order_by_score(self, scores: Any, mask: Any) -> Any:
        if self.backend != "jax":
            return super().order_by_score(scores, mask)
        import jax.numpy as jnp

        # one stable sort: jax sorts NaN after every number (-inf and +inf included), as numpy does
        key = jnp.where(mask, -scores, jnp.nan)
        return jnp.argsort(key, axis=-1, stable=True).astype("int32")

    def group_sum(self, values: Any, group: Any) -> Any:
        if self.backend == "tensorflow":
            import tensorflow as tf

            group = tf.cast(group, tf.int32)
            rows = tf.broadcast_to(tf.range(tf.shape(values)[0], dtype=tf.int32)[:, None], tf.shape(group))
            out = tf.tensor_scatter_nd_add(tf.zeros_like(values), tf.stack([rows, group], axis=-1), values)
            return tf.gather(out, group, batch_dims=1)
        if self.backend == "jax":
            import jax.numpy as jnp

            rows = jnp.arange(values.shape[0])[:, None]
            out = jnp.zeros_like(values).at[rows, group].add(values)
            return jnp.take_along_axis(out, group, axis=-1)
        import torch

        group = group.to(torch.int64)
        out = torch.zeros_like(values).scatter_add(-1, group, values)
        return torch.gather(out, -1, group)


_KERAS_OPS: KerasOps | None = None


def keras_ops() -> KerasOps:
    """The shared :class:`KerasOps` of the active backend (created on first use: keras is imported then)."""
    global _KERAS_OPS
    if _KERAS_OPS is None:
        _KERAS_OPS = KerasOps()
    return _KERAS_OPS
