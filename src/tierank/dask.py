"""tierank on Dask DataFrames: :func:`evaluate` and :func:`compare` (``pip install tierank[dask]``).

The run and the qrels become one table, shuffled once on the query id (every query's rows in one
partition), and each partition is evaluated in one call by the local code; the per-query values
are those of :func:`tierank.evaluate` bit for bit, and the means are merged from exact partial sums
(:mod:`tierank.exact_sum`), so they do not depend on the partitioning either. See docs/scale.md.
"""

from __future__ import annotations

from typing import Any, Iterable, Mapping

import numpy as np
import pandas as pd

from . import _engines as E
from .errors import InputError, install_hint

__all__ = ["evaluate", "compare"]


def _dd() -> Any:
    try:
        import dask.dataframe as dd
    except ImportError:
        raise ImportError(f"tierank.dask needs dask: {install_hint('dask')}") from None
    return dd


def _with_pos(frame: pd.DataFrame, names: tuple, side: int, partition_info: Any = None) -> pd.DataFrame:
    """The table's rows as (q, d, s or g, side, pos): pos = partition number << 33 | row in it."""
    number = 0 if partition_info is None else int(partition_info["number"])
    qn, dn, vn = names
    return pd.DataFrame({"q": frame[qn].array, "d": frame[dn].array,   # dtypes kept, for the error messages
                         ("s" if side == 0 else "g"): frame[vn].array,
                         "side": np.full(len(frame), side, dtype=np.int8),
                         "pos": (np.int64(number) << E.POS_BITS) + np.arange(len(frame), dtype=np.int64)})


def _lengths(frame: Any) -> np.ndarray:
    """Row offsets of the partitions of ``frame`` (one pass)."""
    sizes = np.asarray(frame.map_partitions(len).compute(), dtype=np.int64)
    return np.concatenate(([0], np.cumsum(sizes)))


def _global(offsets: np.ndarray, pos: np.ndarray) -> np.ndarray:
    return offsets[pos >> E.POS_BITS] + (pos & ((1 << E.POS_BITS) - 1))


def _worker(part: pd.DataFrame, opts: E.Options, dtypes: tuple, offsets: np.ndarray | None) -> pd.DataFrame:
    """Evaluate the whole queries of one shuffled partition."""
    part = part.sort_values(["side", "pos"], kind="stable")
    side = part["side"].to_numpy()
    r, q = part[side == 0], part[side == 1]
    (rq, rd, rv), (qq, qd, qv) = opts.names
    run = pd.DataFrame({rq: r["q"].array, rd: r["d"].array, rv: r["s"].array})
    qrels = pd.DataFrame({qq: q["q"].array, qd: q["d"].array, qv: q["g"].array})
    run[rv] = run[rv].astype(dtypes[0])
    qrels[qv] = qrels[qv].astype(dtypes[1])
    rows = None if offsets is None else (lambda pos: _global(offsets, pos))
    return E.evaluate_rows(run, r["pos"].to_numpy(), qrels, q["pos"].to_numpy(), opts, rows)


def _meta(opts: E.Options, id_dtype: Any) -> pd.DataFrame:
    cols: dict = {"query_id": pd.Series([], dtype=id_dtype), "status": pd.Series([], dtype=np.int8)}
    for col in opts.columns():
        text = opts.measures[E._measure_of(col, opts)].is_text
        cols[col] = pd.Series([], dtype=object if text else np.float64)
    return pd.DataFrame(cols)


def evaluate(qrels: Any, run: Any, measures: str | Iterable[str], *, ties: str = "expected", bounds: bool = False,
             missing: str = "skip", seed: int = 0, no_relevant: str = "zero", trec_eval_version: int = 10,
             judged_only: bool = False, max_docs: int | None = None, npartitions: int | None = None,
             tie_cost_budget: float | None = None) -> E.EngineResults:
    """:func:`tierank.evaluate` on Dask DataFrames, with the same results bit for bit.

    Parameters
    ----------
    qrels, run : dask.dataframe.DataFrame
        Columns named as for pandas input (``query_id, doc_id, relevance`` / ``score`` or their
        aliases). Any partitioning: a query's rows may be spread over partitions.
    measures, ties, bounds, missing, seed, no_relevant, trec_eval_version, judged_only, max_docs, tie_cost_budget
        As for :func:`tierank.evaluate` (the budget is per query: the same whatever the partitions).
    npartitions : int, optional
        Partitions after the shuffle on the query id (default: those of the run); each is evaluated
        in one call, so it should hold a few million rows at most.

    Returns
    -------
    EngineResults
        ``.per_query`` (a dask DataFrame, persisted: ``query_id`` and one column per measure, with
        ``bounds`` also ``<measure>_lower`` / ``<measure>_upper``), ``.mean``, ``.collect()`` (the
        local :class:`tierank.Results`).

    Examples
    --------
    >>> import dask, pandas as pd, dask.dataframe as dd
    >>> import tierank.dask
    >>> qrels = dd.from_pandas(pd.DataFrame({"query_id": [1], "doc_id": [1], "relevance": [1]}), npartitions=1)
    >>> run = dd.from_pandas(pd.DataFrame({"query_id": [1, 1, 1], "doc_id": [1, 2, 3],
    ...                                    "score": [0.5, 0.5, 0.1]}), npartitions=2)
    >>> with dask.config.set(scheduler="synchronous"):
    ...     res = tierank.dask.evaluate(qrels, run, ["RR", "P@1"])
    >>> res.mean
    {'RR': 0.75, 'P@1': 0.5}
    """
    dd = _dd()
    opts = E.Options.checked(measures, ties=ties, bounds=bounds, missing=missing, seed=seed,
                             no_relevant=no_relevant, trec_eval_version=trec_eval_version,
                             judged_only=judged_only, max_docs=max_docs, tie_cost_budget=tie_cost_budget)
    for obj, kind in ((run, "run"), (qrels, "qrels")):
        if not isinstance(obj, dd.DataFrame):
            raise InputError(f"the {kind} must be a dask DataFrame, not {type(obj).__name__} "
                             "(tierank.evaluate takes pandas DataFrames)")
    names = (E.find_columns(list(run.columns), "run"), E.find_columns(list(qrels.columns), "qrels"))
    opts = E.replace(opts, names=names)
    E.check_samples(run.head(1, npartitions=-1), qrels.head(1, npartitions=-1), names)
    offsets: dict = {}

    def row_of(side: str, pos: int) -> int:
        if side not in offsets:
            offsets[side] = _lengths(run if side == "run" else qrels)
        return int(_global(offsets[side], np.array([pos]))[0])

    if opts.ties == "random":
        offsets["run"] = _lengths(run)
    rows = dd.concat([run.map_partitions(_with_pos, names[0], 0), qrels.map_partitions(_with_pos, names[1], 1)])
    shuffled = rows.shuffle(on="q", npartitions=npartitions or run.npartitions)
    id_dtype = np.int64 if run[names[0][0]].dtype.kind in "iuf" else object
    dtypes = (run[names[0][2]].dtype, qrels[names[1][2]].dtype)
    out = shuffled.map_partitions(_worker, opts, dtypes, offsets.get("run"), meta=_meta(opts, id_dtype))
    try:
        out = out.persist()
        parts = out.map_partitions(E.partials, opts, meta=pd.DataFrame({"column": [], "partial": []},
                                                                         dtype=object)).compute()
    except Exception as err:
        payload = E.payload_of(err)
        if payload is None:
            raise
        raise E.input_error(payload, row_of) from None
    mean, lower, upper = E.finish(parts, opts)
    per_query = out[out["status"].isin(list(E.KEPT))].drop(columns="status")
    return E.EngineResults(per_query, mean, lower, upper, opts.ties, opts.measures,
                           _collect=lambda: per_query.compute(), _opts=opts)


def compare(qrels: Any, runs: Mapping[str, Any], measures: str | Iterable[str], *, test: str = "t",
            alpha: float = 0.05, correction: str = "holm", n_resamples: int = 10000, seed: int = 0,
            **options: Any) -> Any:
    """:func:`tierank.compare` on Dask DataFrames: each run evaluated on the cluster, the paired tests
    on the collected per-query values.

    ``options``: ``ties``, ``missing``, ``no_relevant``, ... as for :func:`evaluate`.
    """
    return E.compare_collected(evaluate, qrels, runs, measures, test=test, alpha=alpha, correction=correction,
                               n_resamples=n_resamples, seed=seed, **options)
