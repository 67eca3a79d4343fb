"""PyTorch / torchmetrics retrieval metrics that are exact when scores tie (``pip install tierank[torch]``).

Drop-in replacements for torchmetrics' retrieval metrics: the same names and arguments plus ``ties=``.

>>> import torch
>>> from tierank.torch import RetrievalMRR
>>> mrr = RetrievalMRR()                      # torchmetrics.retrieval.RetrievalMRR, ties="expected"
>>> mrr.update(torch.tensor([0.3, 0.3, 0.3]), torch.tensor([0, 0, 1]), indexes=torch.tensor([0, 0, 0]))
>>> mrr.compute()                             # (1 + 1/2 + 1/3) / 3, whatever order topk gives
tensor(0.6111)
"""

from ..dense._ops import TORCH_INSTALL_HINT

try:
    import torch as _torch  # noqa: F401
    import torchmetrics as _torchmetrics  # noqa: F401
except ImportError:
    raise ImportError(TORCH_INSTALL_HINT) from None

from .functional import (retrieval_average_precision, retrieval_hit_rate, retrieval_normalized_dcg,
                         retrieval_precision, retrieval_r_precision, retrieval_recall, retrieval_reciprocal_rank)
from .metrics import (RetrievalHitRate, RetrievalMAP, RetrievalMRR, RetrievalNormalizedDCG, RetrievalPrecision,
                      RetrievalRecall, RetrievalRPrecision)

__all__ = ["RetrievalNormalizedDCG", "RetrievalMAP", "RetrievalMRR", "RetrievalPrecision", "RetrievalRecall",
           "RetrievalHitRate", "RetrievalRPrecision", "retrieval_normalized_dcg", "retrieval_average_precision",
           "retrieval_reciprocal_rank", "retrieval_precision", "retrieval_recall", "retrieval_hit_rate",
           "retrieval_r_precision"]
