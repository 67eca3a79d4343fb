"""Keras 3 ranking metrics that are exact when scores tie (TensorFlow, JAX and PyTorch backends).

Drop-in replacements for keras-rs's metrics (same arguments, inputs, masks and sample-weight rules),
except that tied scores are handled exactly: ``ties="expected"`` (the default) is the mean over all
orderings of the tied items, ``"lower"`` / ``"upper"`` the exact bounds; ``"optimistic"`` /
``"pessimistic"`` put relevant items first / last, ``"input"`` keeps the input order, ``"random"`` a
seeded deterministic order (the tie modes of :func:`tierank.evaluate`, with the same meaning).
keras-rs shuffles ties on every call, even with ``shuffle_ties=False``, so its values move from one
evaluation to the next when scores tie. ::

    import tierank.keras
    model.compile(loss=..., metrics=[tierank.keras.NDCG(k=10), tierank.keras.MeanReciprocalRank()])

:mod:`tierank.keras.retrieval` has TensorFlow Similarity's retrieval metrics (BNDCG, precision, recall
and MAP at k over lookup distances).
"""

from ..dense._keras_ops import KERAS_INSTALL_HINT

try:
    import keras as _keras
except ImportError:   # pragma: no cover - depends on the environment
    raise ImportError(KERAS_INSTALL_HINT) from None
if not hasattr(_keras, "ops"):   # pragma: no cover - Keras 2
    raise ImportError(f"tierank.keras needs Keras 3 (keras.ops); found keras {_keras.__version__}: "
                      "pip install 'keras>=3.8'")

from ._ranking import (DCG, KERAS_TIES, NDCG, MeanAveragePrecision, MeanReciprocalRank, PrecisionAtK,  # noqa: E402
                       RecallAtK, default_gain_fn, default_rank_discount_fn, get_list_weights)
from . import retrieval  # noqa: E402

__all__ = ["NDCG", "DCG", "MeanAveragePrecision", "MeanReciprocalRank", "PrecisionAtK", "RecallAtK",
           "default_gain_fn", "default_rank_discount_fn", "get_list_weights", "KERAS_TIES", "retrieval"]
