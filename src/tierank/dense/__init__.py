"""The dense kernel behind tierank.torch and tierank.keras: ranking measures of padded (batch, list_size)
matrices, exact when scores tie, written once against a small array namespace (:class:`Ops`)."""

from ._kernel import DENSE_MEASURES, DENSE_TIES, dense_values, random_keys, registry_measure
from ._ops import NumpyOps, Ops, TorchOps, numpy_ops, torch_ops

__all__ = ["dense_values", "DENSE_MEASURES", "DENSE_TIES", "registry_measure", "random_keys", "Ops", "NumpyOps",
           "TorchOps", "numpy_ops", "torch_ops"]
