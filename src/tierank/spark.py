"""tierank on Spark DataFrames: :func:`evaluate` and :func:`compare` (``pip install tierank[spark]``).

The run and the qrels become one table, shuffled once on the query id (``repartition`` then
``sortWithinPartitions`` on the query id alone: every query's rows are contiguous in one partition),
and ``mapInArrow`` evaluates many whole queries per Python call (blocks of about ``rows_per_call``
rows, cut at query boundaries) with the local code, so the per-query values are those of
:func:`tierank.evaluate` bit for bit. The means are merged on the driver from exact partial sums of
each partition (:mod:`tierank.exact_sum`): the same bits whatever the partitioning. See docs/scale.md.
"""

from __future__ import annotations

from contextlib import contextmanager
from typing import Any, Iterable, Iterator, Mapping

import numpy as np
import pandas as pd
import pyarrow as pa
import pyarrow.compute as pc

from . import _engines as E
from .errors import InputError, install_hint

__all__ = ["evaluate", "compare"]


def _pyspark() -> Any:
    try:
        from pyspark.sql import DataFrame, functions, types
    except ImportError:
        raise ImportError(f"tierank.spark needs pyspark: {install_hint('spark')}") from None
    return DataFrame, functions, types


def _col(F: Any, name: str) -> Any:
    return F.col("`" + name.replace("`", "``") + "`")   # names with dots are not struct fields here


def _select(df: Any, names: tuple, side: int, F: Any, value: str) -> Any:
    """The rows of one table as ``(q, d, <value>, pos)``: ``pos`` is the row's place in its table, and
    minus one minus it for the qrels (so the side costs no column of its own in the shuffle)."""
    qn, dn, vn = names
    pos = F.monotonically_increasing_id()
    return df.select(_col(F, qn).alias("q"), _col(F, dn).alias("d"), _col(F, vn).alias(value),
                     (pos if side == 0 else -pos - 1).alias("pos"))


def _value_names(run: Any, qrels: Any, names: tuple) -> tuple[str, str]:
    """One value column ``v`` for scores and grades when Spark types them alike (one column less in the
    shuffle), else ``s`` and ``g`` (each side null in the other's rows)."""
    same = run.schema[names[0][2]].dataType == qrels.schema[names[1][2]].dataType
    return ("v", "v") if same else ("s", "g")


def _offsets(sel: Any, F: Any) -> np.ndarray:
    """Rows before each source partition (indexed by partition number), from the positions."""
    pos = F.when(F.col("pos") < 0, -F.col("pos") - 1).otherwise(F.col("pos"))
    counts = sel.groupBy(F.shiftright(pos, E.POS_BITS).alias("p")).count().collect()
    sizes = np.zeros(max([r["p"] for r in counts], default=0) + 1, dtype=np.int64)
    for r in counts:
        sizes[r["p"]] = r["count"]
    return np.concatenate(([0], np.cumsum(sizes)))[:-1]


def _global(offsets: np.ndarray, pos: np.ndarray) -> np.ndarray:
    return offsets[pos >> E.POS_BITS] + (pos & ((1 << E.POS_BITS) - 1))


def _frames(table: pa.Table, opts: E.Options) -> tuple:
    """The run and qrels rows of a block of whole queries, each in input order, with their positions."""
    coded = table.column("pos").to_numpy()
    qrels_side = coded < 0
    pos = np.where(qrels_side, -coded - 1, coded)
    shared = "v" in table.column_names
    out = []
    for is_qrels, value, names in ((False, "s", opts.names[0]), (True, "g", opts.names[1])):
        rows = np.flatnonzero(qrels_side == is_qrels)
        rows = rows[np.argsort(pos[rows], kind="stable")]
        part = table.take(pa.array(rows))
        frame = pd.DataFrame({names[0]: part.column("q").to_pandas(), names[1]: part.column("d").to_pandas(),
                              names[2]: part.column("v" if shared else value).to_pandas()})
        out += [frame, pos[rows]]
    return tuple(out)


def _evaluator(opts: E.Options, schema: pa.Schema, rows_per_call: int, offsets: np.ndarray | None) -> Any:
    """The function given to mapInArrow: blocks of whole queries from the sorted partition."""
    global_rows = None if offsets is None else (lambda pos: _global(offsets, pos))

    def evaluate_block(table: pa.Table) -> pa.RecordBatch:
        run, run_pos, qrels, qrels_pos = _frames(table, opts)
        out = E.evaluate_rows(run, run_pos, qrels, qrels_pos, opts, global_rows)
        out.columns = schema.names   # internal names (v0, v1, ...): Spark resolves dots in names as fields
        return pa.RecordBatch.from_pandas(out, schema=schema, preserve_index=False)

    def run_partition(batches: Iterator[pa.RecordBatch]) -> Iterator[pa.RecordBatch]:
        pending: list[pa.RecordBatch] = []
        size = 0
        for batch in batches:
            pending.append(batch)
            size += batch.num_rows
            if size < rows_per_call:
                continue
            table = pa.Table.from_batches(pending)
            q = table.column("q")
            last = q[len(q) - 1]
            start = pc.index(q, last).as_py() if last.is_valid else -1
            if start > 0:   # evaluate the whole queries, keep the last one (it may go on)
                yield evaluate_block(table.slice(0, start))
                pending = table.slice(start).to_batches()
                size = len(table) - start
        if size:
            yield evaluate_block(pa.Table.from_batches(pending))
    return run_partition


def _schema(opts: E.Options, integer_ids: bool) -> pa.Schema:
    fields = [pa.field("query_id", pa.int64() if integer_ids else pa.string()), pa.field("status", pa.int8())]
    for i, col in enumerate(opts.columns()):
        text = opts.measures[E._measure_of(col, opts)].is_text
        fields.append(pa.field(f"v{i}", pa.string() if text else pa.float64()))
    return pa.schema(fields)


def _partials(opts: E.Options) -> Any:
    def run_partition(batches: Iterator[pa.RecordBatch]) -> Iterator[pa.RecordBatch]:
        tables = list(batches)
        frame = pa.Table.from_batches(tables).to_pandas() if tables else None
        if frame is None or not len(frame):
            return
        frame.columns = ["query_id", "status", *opts.columns()]
        yield pa.RecordBatch.from_pandas(E.partials(frame, opts), preserve_index=False)
    return run_partition


def _sample(df: Any, names: tuple, F: Any) -> pd.DataFrame:
    return df.select(*[_col(F, n) for n in names]).limit(1).toArrow().to_pandas()


ARROW_BATCH_ROWS = 1 << 17
_BATCH_KEY = "spark.sql.execution.arrow.maxRecordsPerBatch"


@contextmanager
def _arrow_batches(session: Any) -> Iterator[None]:
    """Arrow batches of 2**17 rows to the Python workers during the evaluation, unless the session sets
    their size (Spark's default, 10,000 rows, costs about 30% more time per row on the JVM side)."""
    if session.conf.get(_BATCH_KEY, None) is not None:
        yield
        return
    session.conf.set(_BATCH_KEY, str(ARROW_BATCH_ROWS))
    try:
        yield
    finally:
        session.conf.unset(_BATCH_KEY)


def _plain_schema(run: Any, qrels: Any, names: tuple, T: Any) -> bool:
    """Whether the schemas show ids that are strings or integers of the same kind on both sides, and
    numeric scores and grades (then the type checks on the first rows can be skipped)."""
    integral = (T.ByteType, T.ShortType, T.IntegerType, T.LongType)

    def kind(df: Any, name: str) -> str:
        t = df.schema[name].dataType
        return "str" if isinstance(t, T.StringType) else "int" if isinstance(t, integral) else "other"
    ids = [(kind(run, names[0][i]), kind(qrels, names[1][i])) for i in (0, 1)]
    numbers = integral + (T.FloatType, T.DoubleType)
    return (all(a == b != "other" for a, b in ids) and isinstance(run.schema[names[0][2]].dataType, numbers)
            and isinstance(qrels.schema[names[1][2]].dataType, numbers + (T.BooleanType,)))


def evaluate(qrels: Any, run: Any, measures: str | Iterable[str], *, ties: str = "expected", bounds: bool = False,
             missing: str = "skip", seed: int = 0, no_relevant: str = "zero", trec_eval_version: int = 10,
             judged_only: bool = False, max_docs: int | None = None, partitions: int | None = None,
             rows_per_call: int = 1 << 20, tie_cost_budget: float | None = None) -> E.EngineResults:
    """:func:`tierank.evaluate` on Spark DataFrames, with the same results bit for bit.

    Parameters
    ----------
    qrels, run : pyspark.sql.DataFrame
        Columns named as for pandas input (``query_id, doc_id, relevance`` / ``score`` or their
        aliases). Any partitioning: a query's rows may be spread over partitions.
    measures, ties, bounds, missing, seed, no_relevant, trec_eval_version, judged_only, max_docs, tie_cost_budget
        As for :func:`tierank.evaluate` (the budget is per query: the same whatever the partitions).
    partitions : int, optional
        Partitions of the shuffle on the query id (default: ``spark.sql.shuffle.partitions``).
    rows_per_call : int, default=2**20
        Rows evaluated per Python call (whole queries: a longer query is evaluated in one call).

    Returns
    -------
    EngineResults
        ``.per_query`` (a Spark DataFrame, persisted: ``query_id`` and one column per measure, with
        ``bounds`` also ``<measure>_lower`` / ``<measure>_upper``), ``.mean``, ``.collect()`` (the
        local :class:`tierank.Results`, equal to :func:`tierank.evaluate` on the same rows).

    Examples
    --------
    With a Spark session (``local[2]`` here; the README shows the output)::

        import tierank.spark
        run_df = spark.read.parquet("run.parquet")        # query_id, doc_id, score
        qrels_df = spark.read.parquet("qrels.parquet")    # query_id, doc_id, relevance
        res = tierank.spark.evaluate(qrels_df, run_df, ["nDCG@10", "AP"], bounds=True)
        res.mean                  # {'nDCG@10': ..., 'AP': ...}
        res.per_query.show()      # query_id, nDCG@10, AP, nDCG@10_lower, AP_lower, nDCG@10_upper, AP_upper
        res.collect()             # tierank.Results, == tierank.evaluate on the same rows
    """
    DataFrame, F, T = _pyspark()
    opts = E.Options.checked(measures, ties=ties, bounds=bounds, missing=missing, seed=seed,
                             no_relevant=no_relevant, trec_eval_version=trec_eval_version,
                             judged_only=judged_only, max_docs=max_docs, tie_cost_budget=tie_cost_budget)
    for obj, kind in ((run, "run"), (qrels, "qrels")):
        if not isinstance(obj, DataFrame):
            raise InputError(f"the {kind} must be a Spark DataFrame, not {type(obj).__name__} "
                             "(tierank.evaluate takes pandas DataFrames)")
    names = (E.find_columns(run.columns, "run"), E.find_columns(qrels.columns, "qrels"))
    opts = E.replace(opts, names=names)
    if not _plain_schema(run, qrels, names, T):   # a type problem: the local error, from the first rows
        E.check_samples(_sample(run, names[0], F), _sample(qrels, names[1], F), names)
    values = _value_names(run, qrels, names)
    sel = {"run": _select(run, names[0], 0, F, values[0]), "qrels": _select(qrels, names[1], 1, F, values[1])}
    offsets: dict = {}

    def row_of(side: str, pos: int) -> int:
        if side not in offsets:
            offsets[side] = _offsets(sel[side], F)
        return int(_global(offsets[side], np.array([pos]))[0])

    if opts.ties == "random":
        offsets["run"] = _offsets(sel["run"], F)
    rows = sel["run"].unionByName(sel["qrels"], allowMissingColumns=True)
    rows = (rows.repartition(partitions, "q") if partitions else rows.repartition("q"))
    # the query id is the only key needed: each block puts its run and qrels rows back in input order
    # itself (_frames). (Sorting by (q, side, pos) measured the same time on 10^7 rows.)
    rows = rows.sortWithinPartitions("q")
    integer_ids = not isinstance(run.schema[names[0][0]].dataType, T.StringType)
    schema = _schema(opts, integer_ids)
    spark_schema = T.StructType([T.StructField(f.name, {pa.int64(): T.LongType(), pa.string(): T.StringType(),
                                                         pa.int8(): T.ByteType(), pa.float64(): T.DoubleType()}[f.type])
                                 for f in schema])
    out = rows.mapInArrow(_evaluator(opts, schema, rows_per_call, offsets.get("run")), spark_schema)
    try:
        out = out.persist()
        with _arrow_batches(run.sparkSession):
            parts = out.mapInArrow(_partials(opts), "column string, partial string").toArrow().to_pandas()
    except Exception as err:
        payload = E.payload_of(err)
        if payload is None:
            raise
        out.unpersist()
        raise E.input_error(payload, row_of) from None
    if not len(parts):
        parts = pd.DataFrame({"column": [], "partial": []})
    mean, lower, upper = E.finish(parts, opts)
    per_query = out.filter(F.col("status").isin(list(E.KEPT))).select(
        "query_id", *[F.col(f"v{i}").alias(c) for i, c in enumerate(opts.columns())])
    return E.EngineResults(per_query, mean, lower, upper, opts.ties, opts.measures,
                           _collect=lambda: per_query.toArrow().to_pandas(), _opts=opts)


def compare(qrels: Any, runs: Mapping[str, Any], measures: str | Iterable[str], *, test: str = "t",
            alpha: float = 0.05, correction: str = "holm", n_resamples: int = 10000, seed: int = 0,
            **options: Any) -> Any:
    """:func:`tierank.compare` on Spark DataFrames: each run evaluated on the cluster, the paired tests
    on the collected per-query values.

    ``options``: ``ties``, ``missing``, ``no_relevant``, ... as for :func:`evaluate`.
    """
    return E.compare_collected(evaluate, qrels, runs, measures, test=test, alpha=alpha, correction=correction,
                               n_resamples=n_resamples, seed=seed, **options)
