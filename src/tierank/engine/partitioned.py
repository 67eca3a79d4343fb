"""Partial sums and their merge: what :mod:`tierank.spark` and :mod:`tierank.dask` share (the checks on
the driver, the evaluation of a batch of whole queries on a worker, the assembly of the results on the
driver), and the statuses and warnings that the streamed evaluation (:mod:`tierank.engine.streamed`)
shares with them.

The plan, the same on both engines:

1. On the driver: the columns are found by the names and aliases of pandas input
   (:mod:`tierank.io.frames`), and the first row of each table is checked with the local rules
   (:func:`tierank.data.columns.normalized`), so type errors are the local InputErrors.
2. Both tables become one table of rows ``(q, d, s, g, side, pos)`` (``side`` 0: run, 1: qrels;
   ``pos``: the row's place in its table, monotone in the input order), shuffled once on ``q`` so that
   every query's run and qrels rows meet in one partition.
3. On a worker, :func:`evaluate_rows` evaluates many whole queries per call with the core
   (:mod:`tierank.engine.core`: the same checks, joins and kernels as :func:`tierank.evaluate`), and
   returns one row per query: the
   query id, its status (evaluated, only in the run, only in the qrels), the values and bounds.
4. On the driver: the counts of queries left out become the local warnings, the means are merged
   from exact partial sums per partition (:mod:`tierank.data.exact_sum`), and ``collect()`` builds the
   local :class:`~tierank.Results`.

Per-query values do not depend on the partitioning: a query's rows are evaluated together, in input
order (``ties="input"``), and ``ties="random"`` hashes each row's global row number, as locally.
"""

from __future__ import annotations

import re
import warnings
from dataclasses import dataclass, field, replace
from typing import TYPE_CHECKING, Any, Callable

import numpy as np
import pyarrow as pa

from ..data.columns import Columns, check_same_id_kinds, normalized
from ..data.ids import positions
from ..data.exact_sum import ExactSum, finish_aggregate, partial_aggregate
from ..data.join import check_no_repeated_pairs
from ..errors import InputError, TierankWarning, param_text
from ..io.tables import find_columns as find_table_columns
from ..results import GM_FLOOR, Results
from .core import QueryValues, evaluate_lists, prepare_lists
from .core import to_results as core_results
from .options import Options

if TYPE_CHECKING:
    import pandas as pd

__all__ = ["evaluate_rows", "EngineInputError", "EngineResults"]

# statuses of a query in the per-query output
EVALUATED, ONLY_RUN, ONLY_QRELS_SKIPPED, ONLY_QRELS_ZERO = 0, 1, 2, 3
KEPT = (EVALUATED, ONLY_QRELS_ZERO)
POS_BITS = 33   # pos = partition number << 33 | row in the partition (Spark's monotonically_increasing_id)
_MARK = "tierank-input-error:"


def find_columns(columns: list[str], kind: str) -> tuple[str, str, str]:
    """The query, document and value column names of a table with these columns (the errors of
    pandas input when one is missing or given twice). Runs given by ranks alone are not taken here."""
    return find_table_columns(columns, kind, ranks=False)[:3]


def check_samples(run: pd.DataFrame, qrels: pd.DataFrame, names: tuple) -> None:
    """The local checks of ids and values on the first rows of both tables (type errors: the local
    messages), and that ids are of one kind on both sides."""
    r = normalized(_columns(run, "run", names[0]), "score")
    q = normalized(_columns(qrels, "qrels", names[1]), "grade")
    check_same_id_kinds(r, q)


def _columns(frame: pd.DataFrame, kind: str, names: tuple) -> Columns:
    qn, dn, vn = names
    return Columns(query=frame[qn].array, doc=frame[dn].array, value=frame[vn].array, source=kind, names=names)


# --------------------------------------------------------------------------------------- the worker


class EngineInputError(Exception):
    """An InputError raised on a worker, with the row it names as a position for the driver to turn
    into the row number of the whole table."""

    def __init__(self, message: str, side: str | None = None, pos: int | None = None, row: int | None = None,
                 query: Any = None) -> None:
        import json

        self.payload = {"message": message, "side": side, "pos": pos, "row": row, "query": query}
        super().__init__(_MARK + json.dumps(self.payload) + "\n")

    def __reduce__(self) -> Any:
        p = self.payload
        return (EngineInputError, (p["message"], p["side"], p["pos"], p["row"], p["query"]))


_ROW = re.compile(r"\(row (\d+)\)$")


def _reraise(err: InputError, side: str | None, pos: np.ndarray | None) -> None:
    """An InputError of a worker as an EngineInputError: the row it names becomes its position."""
    match = _ROW.search(err.message)
    query = err.query if isinstance(err.query, (int, str)) else None
    if isinstance(query, np.integer):
        query = int(query)
    if match and side is not None and pos is not None:
        row = int(match.group(1))
        raise EngineInputError(err.message, side, int(pos[row]), row, query) from None
    raise EngineInputError(err.message, query=query) from None


def _subset(cols: Columns, rows: np.ndarray) -> Columns:
    def pick(a: Any) -> Any:
        return a[rows] if isinstance(a, np.ndarray) else a.take(pa.array(rows))
    return replace(cols, query=pick(cols.query), doc=pick(cols.doc), value=cols.value[rows],
                   trec_eval_grades=None if cols.trec_eval_grades is None else cols.trec_eval_grades[rows])


def _query_sets(run: Columns, qrels: Columns) -> tuple[pd.Index, np.ndarray, np.ndarray]:
    """(ids of every query of the batch, in_run, in_qrels)."""
    import pandas as pd

    def ids(a: Any) -> np.ndarray:
        return a if isinstance(a, np.ndarray) else a.to_numpy(zero_copy_only=False)
    rq, qq = pd.Index(ids(run.query)).unique(), pd.Index(ids(qrels.query)).unique()
    every = rq.append(qq).unique()
    return every, every.isin(rq), every.isin(qq)


def evaluate_rows(run: pd.DataFrame, run_pos: np.ndarray, qrels: pd.DataFrame, qrels_pos: np.ndarray,
                  opts: Options, global_rows: Callable[[np.ndarray], np.ndarray] | None = None) -> pd.DataFrame:
    """Evaluate whole queries (every row of each query is here) as :func:`tierank.evaluate` does.

    ``run`` and ``qrels``: the rows in input order, with the user's column names; ``*_pos``: their
    positions (monotone in the input order). ``global_rows`` turns run positions into row numbers of
    the whole run (needed by ``ties="random"``, which hashes them). InputErrors come back as
    :class:`EngineInputError`. Returns one row per query: ``query_id``, ``status`` and the columns of
    :meth:`Options.columns` (NaN for queries not evaluated).
    """
    import pandas as pd

    side: str | None = "run"
    try:
        r = normalized(_columns(run, "run", opts.names[0]), "score")
        side = "qrels"
        q = normalized(_columns(qrels, "qrels", opts.names[1]), "grade", trec_eval=opts.ties == "trec_eval")
        r, q = check_same_id_kinds(r, q)
        check_no_repeated_pairs(q, "qrels")
        side = "run"
        check_no_repeated_pairs(r, "run")
        side = None
        every, in_run, in_qrels = _query_sets(r, q)
        status = np.where(in_run & in_qrels, EVALUATED, np.where(in_run, ONLY_RUN, np.where(
            opts.missing == "zero", ONLY_QRELS_ZERO, ONLY_QRELS_SKIPPED)))
        kept = every[np.isin(status, KEPT)]
        out = pd.DataFrame({"query_id": every.to_numpy(), "status": status.astype(np.int8)})
        if not len(kept):
            return _with_values(out, None, opts)
        run_rows = np.flatnonzero(pd.Index(_plain(r.query)).isin(kept))
        qrels_rows = np.flatnonzero(pd.Index(_plain(q.query)).isin(kept))
        pos = run_pos[run_rows]
        if opts.ties == "random" and global_rows is not None:
            pos = global_rows(pos)
        res = evaluate_lists(prepare_lists(_subset(q, qrels_rows), _subset(r, run_rows), opts, pos), opts)
    except InputError as err:
        _reraise(err, side, run_pos if side == "run" else qrels_pos)
    return _with_values(out, res, opts)


def _plain(a: Any) -> np.ndarray:
    return a if isinstance(a, np.ndarray) else a.to_numpy(zero_copy_only=False)


def _with_values(out: pd.DataFrame, res: QueryValues | None, opts: Options) -> pd.DataFrame:
    """``out`` (query ids and statuses) with the values of the evaluated queries (NaN / None for others)."""
    import pandas as pd

    columns = aligned_values(out["query_id"].to_numpy(), res, opts)
    return pd.concat([out, pd.DataFrame(columns, index=out.index)], axis=1) if columns else out


def aligned_values(labels: np.ndarray, res: QueryValues | None, opts: Options) -> dict:
    """One array per column of :meth:`Options.columns`: the values of the queries ``labels`` (NaN, or
    None for text, where ``res`` has none)."""
    at = np.full(len(labels), -1) if res is None else positions(res.labels, labels)
    got = at >= 0
    columns = {}
    for col in opts.columns():
        text = opts.measures[measure_of(col, opts)].is_text
        values = np.full(len(labels), None, dtype=object) if text else np.full(len(labels), np.nan)
        if res is not None:
            values[got] = res.columns[col][at[got]]
        if text:   # NaN or None: no text
            values[[v is None or v != v for v in values]] = None
        columns[col] = values
    return columns


# --------------------------------------------------------------------------------------- the driver


def partials(frame: pd.DataFrame, opts: Options) -> pd.DataFrame:
    """The mergeable parts of the aggregates of one partition of per-query output: one row per value
    column (``column``, ``partial`` as :meth:`ExactSum.to_text`) plus the counts of each status."""
    import pandas as pd

    return pd.DataFrame(partial_sums(frame["status"].to_numpy(dtype=np.int64), frame, opts))


def partial_sums(status: np.ndarray, columns: Any, opts: Options) -> dict[str, list[str]]:
    """:func:`partials` of per-query output given as its statuses and its columns (a DataFrame or a dict
    of numpy arrays): ``{"column": [...], "partial": [...]}``."""
    kept = np.isin(status, KEPT)
    rows = []
    for col in opts.columns():
        m = opts.measures[measure_of(col, opts)]
        if m.aggregate == "none":
            continue
        p = partial_aggregate(_numpy(columns[col], np.float64)[kept], m.aggregate, GM_FLOOR)
        rows.append((col, p.to_text()))
    counts = np.bincount(status.astype(np.int64), minlength=4)
    rows += [(f"status:{s}", str(int(c))) for s, c in enumerate(counts)]
    return {"column": [c for c, _ in rows], "partial": [p for _, p in rows]}


def measure_of(col: str, opts: Options) -> str:
    if col in opts.measures:
        return col
    return col.rsplit("_", 1)[0]


def finish(parts: Any, opts: Options) -> tuple[dict, dict | None, dict | None]:
    """Warnings and the "nothing to evaluate" error of the local join from the status counts; the
    means (and of the bounds) from the merged partial sums (``parts``: :func:`partials` of every
    partition, or :func:`partial_sums`)."""
    counts = [0, 0, 0, 0]
    merged: dict[str, ExactSum] = {}
    for col, text in zip(parts["column"], parts["partial"]):
        if col.startswith("status:"):
            counts[int(col[7:])] += int(text)
        else:
            merged[col] = merged.get(col, ExactSum()) + ExactSum.from_text(text)
    evaluated, only_run, skipped, zero = counts
    if not evaluated and not zero:
        raise InputError("no query is both in the run and in the qrels: nothing to evaluate")
    if only_run:
        warnings.warn(f"{only_run} quer{'y' if only_run == 1 else 'ies'} of the run "
                      f"{'has' if only_run == 1 else 'have'} no judgments and "
                      f"{'is' if only_run == 1 else 'are'} left out", TierankWarning, stacklevel=3)
    if skipped:
        warnings.warn(f"{skipped} judged quer{'y' if skipped == 1 else 'ies'} "
                      f"{'is' if skipped == 1 else 'are'} missing from the run and left out "
                      f"({param_text('missing', 'zero')} scores them 0, like trec_eval -c)", TierankWarning,
                      stacklevel=3)

    def means(suffix: str) -> dict:
        out = {}
        for text, m in opts.measures.items():
            kind = m.aggregate
            out[text] = None if kind == "none" else finish_aggregate(merged.get(text + suffix, ExactSum()), kind)
        return out
    return means(""), means("_lower") if opts.bounds else None, means("_upper") if opts.bounds else None


def to_results(frame: Any, opts: Options) -> Results:
    """The local :class:`~tierank.Results` from the collected per-query output (kept queries: a DataFrame,
    or a dict of numpy arrays), assembled by the core (:func:`tierank.engine.core.to_results`); query ids
    that are not integers as strings."""
    labels = _numpy(frame["query_id"])
    columns = {col: _numpy(frame[col], object if opts.measures[measure_of(col, opts)].is_text else np.float64)
               for col in opts.columns()}
    return core_results(QueryValues(labels, columns), opts, as_str=not is_integer_like(labels))


def _numpy(column: Any, dtype: Any = None) -> np.ndarray:
    """A column of a DataFrame (``.to_numpy``) or a numpy array, as a numpy array of ``dtype``."""
    return column.to_numpy(dtype=dtype) if hasattr(column, "to_numpy") else np.asarray(column, dtype=dtype)


def is_integer_like(labels: np.ndarray) -> bool:
    return labels.dtype.kind in "iu"


def input_error(payload: dict, row_of: Callable[[str, int], int]) -> InputError:
    """The local InputError from a worker's payload, its row renumbered in the whole table."""
    message = payload["message"]
    if payload.get("pos") is not None:
        row = row_of(payload["side"], int(payload["pos"]))
        message = _ROW.sub(f"(row {row})", message)
    return InputError(message, query=payload.get("query"))


def payload_of(err: BaseException) -> dict | None:
    """The payload of an EngineInputError, found in an engine's exception (or its text)."""
    seen: BaseException | None = err
    while seen is not None:
        if isinstance(seen, EngineInputError):
            return seen.payload
        seen = seen.__cause__ or seen.__context__
    text = str(err)
    at = text.find(_MARK)
    if at < 0:
        return None
    import json

    return json.JSONDecoder().raw_decode(text[at + len(_MARK):])[0]


@dataclass(eq=False)
class EngineResults:
    """What :func:`tierank.spark.evaluate` and :func:`tierank.dask.evaluate` return.

    Attributes
    ----------
    per_query : DataFrame of the engine
        One row per evaluated query: ``query_id`` and one column per measure (with ``bounds=True`` also
        ``<measure>_lower`` and ``<measure>_upper``), computed on the cluster.
    mean : dict of str to float
        The aggregates, merged on the driver from exact partial sums of each partition: equal bit for
        bit to :attr:`tierank.Results.mean` on the same data.
    mean_lower, mean_upper : dict or None
        The aggregates of the bounds (``bounds=True``).
    ties : str
    measures : dict of str to Measure
    """

    per_query: Any
    mean: dict
    mean_lower: dict | None
    mean_upper: dict | None
    ties: str
    measures: dict = field(repr=False)
    _collect: Callable[[], pd.DataFrame] = field(repr=False, default=None)   # type: ignore[assignment]
    _opts: Options | None = field(repr=False, default=None)

    def collect(self) -> Results:
        """The local :class:`~tierank.Results` (per-query values brought to the driver): equal (``==``)
        to :func:`tierank.evaluate` on the same data."""
        return to_results(self._collect(), self._opts)   # type: ignore[arg-type]

    def __repr__(self) -> str:
        means = ", ".join(f"{k}: {v:.4f}" if isinstance(v, float) else f"{k}: {v}" for k, v in self.mean.items())
        return f"{type(self).__name__}(ties={self.ties!r}, mean={{{means}}})"
