"""Learning to hash and embedding retrieval: binary codes ranked by Hamming distance, ties exact.

Every query is ranked against the whole database; short codes make huge ties, which is what the
tie-aware measures were invented for. Codes are packed into ``uint64`` words, distances computed by XOR
and popcount in blocks (bounded memory), and the tie statistics counted per distance (no sort).

>>> import numpy as np
>>> from tierank.hashing import pack_codes, unpack_codes, hamming_distances
>>> codes = np.array([[1, 0, 1, 1], [0, 0, 1, 1]])
>>> hamming_distances(codes, codes)
array([[0, 1],
       [1, 0]], dtype=uint8)
>>> unpack_codes(pack_codes(codes), bits=4)
array([[1, 0, 1, 1],
       [0, 0, 1, 1]], dtype=uint8)
"""

from typing import Any

from .codes import pack_codes, unpack_codes
from .distance import distance_blocks, hamming_distances
from .histogram import block_histogram

__all__ = ["evaluate_codes", "CodeResults", "pack_codes", "unpack_codes", "hamming_distances",
           "distance_blocks", "block_histogram"]


def __getattr__(name: str) -> Any:
    """``evaluate_codes`` and ``CodeResults`` live above this package (in :mod:`tierank.arrays` and
    :mod:`tierank.results`), which builds on it: they load when first asked for (PEP 562), as in
    :mod:`tierank`."""
    if name in ("evaluate_codes", "CodeResults"):
        import importlib

        module = importlib.import_module("tierank.arrays" if name == "evaluate_codes" else "tierank.results")
        return getattr(module, name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
