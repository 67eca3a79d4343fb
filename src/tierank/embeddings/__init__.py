"""Dense and quantized embeddings: exact scores in every precision, and sentence-transformers' quantization.

:func:`tierank.evaluate_embeddings` (in ``tierank.arrays``, above this package) ranks the whole corpus for
every query by exact scores (``tierank.embeddings.scores``), so ties are the real ties of the precision:

>>> import numpy as np, tierank
>>> q = np.array([[1.0, 0.0]])
>>> corpus = np.array([[1.0, 0.0], [1.0, 0.001], [0.0, 1.0]])
>>> tierank.evaluate_embeddings(q, corpus, {0: {1: 1}}, ["RR"], precision="float32").mean
{'RR': 0.5}
>>> tierank.evaluate_embeddings(q, corpus, {0: {1: 1}}, ["RR"], precision="bfloat16").mean   # 1 and 0.9999995 tie
{'RR': 0.75}
"""

from .quantize import BIT_PRECISIONS, FLOAT_PRECISIONS, INT_PRECISIONS, PRECISIONS, encode, quantize
from .relevance import Relevance, make_relevance
from .scores import Scorer

__all__ = ["PRECISIONS", "FLOAT_PRECISIONS", "INT_PRECISIONS", "BIT_PRECISIONS", "encode", "quantize", "Scorer",
           "Relevance", "make_relevance", "SIMILARITIES"]

SIMILARITIES = ("cosine", "dot", "hamming")
