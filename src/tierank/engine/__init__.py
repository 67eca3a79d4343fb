"""The engine: options checked once (:mod:`~tierank.engine.options`), the one evaluation core
(:mod:`~tierank.engine.core`), the block loop of matrices and codes (:mod:`~tierank.engine.blocked`),
run files in blocks of whole queries (:mod:`~tierank.engine.streamed`) and the partial sums of Spark and
Dask (:mod:`~tierank.engine.partitioned`). Internal: the public entry points are in :mod:`tierank.api` and
:mod:`tierank.arrays`.
"""
