"""tierank.spark on local[2]: the same results as tierank.evaluate bit for bit (per query, means,
bounds), whatever the partitioning and the Arrow batches; the same InputErrors. The reference is
tierank.evaluate on the same rows in the same order (the cached Spark frames read back with toArrow)."""

from __future__ import annotations

import re

import numpy as np
import pandas as pd
import pyarrow as pa
import pytest

import tierank
from tierank.errors import InputError, TierankWarning

from spark_fixtures import MEASURES, TIE_CASES, random_case, spark_session

pytest.importorskip("pyspark")
import tierank.spark  # noqa: E402

# pyspark 4.x warns on every pandas/Arrow UDF that it "does not yet fully support pandas >= 3.0.0"; tierank
# uses the Arrow path (mapInArrow, toArrow), which does not go through pandas on the JVM side. Only that
# warning is filtered; every other warning is still an error.
pytestmark = pytest.mark.filterwarnings(
    "ignore:PySpark does not yet fully support pandas >= 3.0.0:FutureWarning")


@pytest.fixture(scope="module")
def spark():   # type: ignore[no-untyped-def]
    session = spark_session()
    yield session
    session.stop()


def to_spark(spark, frame: pd.DataFrame, parts: int):   # type: ignore[no-untyped-def]
    """A cached Spark frame of ``frame``'s rows spread round-robin over ``parts`` partitions (every query
    split across partitions), and those rows in the frame's own order (the local reference's input)."""
    df = spark.createDataFrame(pa.Table.from_pandas(frame, preserve_index=False)).repartition(parts).cache()
    df.count()
    return df, df.toArrow().to_pandas()


def local(qrels: pd.DataFrame, run: pd.DataFrame, measures: list, **kw) -> tierank.Results:
    with pytest.warns(TierankWarning):   # the cases have queries only in the run / only in the qrels
        return tierank.evaluate(qrels, run, measures, **kw)


def same(res, ref: tierank.Results) -> None:   # type: ignore[no-untyped-def]
    assert res.collect() == ref
    assert res.mean == ref.mean
    assert res.mean_lower == ref.mean_lower and res.mean_upper == ref.mean_upper


@pytest.fixture(scope="module")
def cases(spark):   # type: ignore[no-untyped-def]
    out = {}
    for string_ids in (False, True):
        qrels, run = random_case(3, string_ids)
        (sq, lq), (sr, lr) = to_spark(spark, qrels, 2), to_spark(spark, run, 3)
        out[string_ids] = (sq, sr, lq, lr)
    return out


@pytest.mark.parametrize("ties,bounds", TIE_CASES)
@pytest.mark.parametrize("string_ids", [False, True])
def test_equals_local_every_tie_mode(cases, ties: str, bounds: bool, string_ids: bool) -> None:   # type: ignore[no-untyped-def]
    sq, sr, lq, lr = cases[string_ids]
    ref = local(lq, lr, MEASURES, ties=ties, bounds=bounds, seed=5)
    with pytest.warns(TierankWarning) as record:
        res = tierank.spark.evaluate(sq, sr, MEASURES, ties=ties, bounds=bounds, seed=5, rows_per_call=100)
    same(res, ref)
    assert sorted(str(w.message) for w in record if w.category is TierankWarning) == [
        "2 queries of the run have no judgments and are left out",
        "5 judged queries are missing from the run and left out (missing='zero' scores them 0, like trec_eval -c)"]
    cols = ["query_id", *MEASURES] + ([f"{m}_{b}" for b in ("lower", "upper") for m in MEASURES] if bounds else [])
    assert res.per_query.columns == cols
    assert res.per_query.count() == len(ref.per_query)


@pytest.mark.parametrize("seed,run_parts,qrels_parts,shuffle,rows_per_call,ties", [
    (11, 1, 1, 1, 1 << 20, "random"), (12, 4, 3, 2, 1, "input"), (13, 5, 1, 7, 37, "expected")])
def test_any_partitioning_same_bits(spark, seed: int, run_parts: int, qrels_parts: int, shuffle: int,  # type: ignore[no-untyped-def]
                                    rows_per_call: int, ties: str) -> None:
    qrels, run = random_case(seed, seed % 2 == 0)
    (sq, lq), (sr, lr) = to_spark(spark, qrels, qrels_parts), to_spark(spark, run, run_parts)
    kw = dict(ties=ties, bounds=ties == "expected", seed=seed, missing="zero", no_relevant="skip")
    ref = local(lq, lr, MEASURES, **kw)
    with pytest.warns(TierankWarning):
        res = tierank.spark.evaluate(sq, sr, MEASURES, partitions=shuffle, rows_per_call=rows_per_call, **kw)
    same(res, ref)


@pytest.mark.parametrize("dtype", ["int64", "float64"])
def test_scores_and_grades_of_one_type_share_a_column(spark, dtype: str) -> None:   # type: ignore[no-untyped-def]
    """Scores and grades typed alike travel in one column: the same bits as local in every tie mode, and
    the same errors (a repeated qrels pair is named by its row, read back from the coded positions)."""
    qrels, run = random_case(17, False)
    run["score"], qrels["relevance"] = run["score"].astype(dtype), qrels["relevance"].astype(dtype)
    (sq, lq), (sr, lr) = to_spark(spark, qrels, 2), to_spark(spark, run, 3)
    assert sr.schema["score"].dataType == sq.schema["relevance"].dataType
    for ties, bounds in TIE_CASES:
        ref = local(lq, lr, MEASURES, ties=ties, bounds=bounds, seed=3)
        with pytest.warns(TierankWarning):
            res = tierank.spark.evaluate(sq, sr, MEASURES, ties=ties, bounds=bounds, seed=3, rows_per_call=50)
        same(res, ref)
    both = qrels[qrels["query_id"].isin(run["query_id"])].reset_index(drop=True)
    for q, r in [(pd.concat([both, both.iloc[[4]]], ignore_index=True), run),
                 (both, pd.concat([run, run.iloc[[9]]], ignore_index=True))]:
        want, got = _errors(spark, q, r)
        assert got == want and "listed twice" in got


def test_options_measures_and_nan_means(spark) -> None:   # type: ignore[no-untyped-def]
    """Text measures, judged-only measures, geometric means, no_relevant='skip', trec_eval 9, -J."""
    qrels, run = random_case(21, True)
    run["score"] = run["score"] + 1e-9 * (np.arange(len(run)) % 3)   # ties in float32 only
    (sq, lq), (sr, lr) = to_spark(spark, qrels, 2), to_spark(spark, run, 2)
    measures = ["AP", "gm_map", "RelString", "Bpref", "P(judged_only=True)@10", "NumQ", "ndcg_cut.10"]
    for kw in [dict(no_relevant="skip", trec_eval_version=9), dict(judged_only=True, missing="zero", bounds=True)]:
        ref = local(lq, lr, measures, **kw)
        with pytest.warns(TierankWarning):
            res = tierank.spark.evaluate(sq, sr, measures, **kw)
        same(res, ref)


def _errors(spark, qrels: pd.DataFrame, run: pd.DataFrame, **kw) -> tuple[str, str]:   # type: ignore[no-untyped-def]
    (sq, lq), (sr, lr) = to_spark(spark, qrels, 2), to_spark(spark, run, 3)
    with pytest.raises(InputError) as local_err:
        tierank.evaluate(lq, lr, ["AP"], **kw)
    with pytest.raises(InputError) as engine_err:
        tierank.spark.evaluate(sq, sr, ["AP"], **kw)
    return str(local_err.value), str(engine_err.value)


def test_same_input_errors(spark) -> None:   # type: ignore[no-untyped-def]
    qrels, run = random_case(5, True, n_queries=12)
    qrels = qrels[qrels["query_id"].isin(run["query_id"])].reset_index(drop=True)
    run = run[run["query_id"].isin(qrels["query_id"])].reset_index(drop=True)
    nulls = run.copy()
    nulls.loc[len(run) - 3, "doc_id"] = None                                  # a missing id
    cases = [(qrels, run.rename(columns={"score": "points"})),               # no score column
             (qrels.assign(rel=1), run),                                      # two relevance columns
             (qrels, nulls),
             (qrels, pd.concat([run, run.iloc[[17]]], ignore_index=True)),    # a repeated (query, doc)
             (pd.concat([qrels, qrels.iloc[[3]]], ignore_index=True), run),   # ... in the qrels
             (qrels, run.assign(score=run["score"].astype(str))),             # string scores
             (qrels.assign(query_id=1), run)]                                 # int vs str query ids
    for q, r in cases:
        want, got = _errors(spark, q, r)
        assert got == want
        assert "Traceback" not in got and "Py4J" not in got
    want, got = _errors(spark, qrels.assign(query_id="other-" + qrels["query_id"]), run)
    assert got == want == "no query is both in the run and in the qrels: nothing to evaluate"
    want, got = _errors(spark, qrels.assign(relevance=0), run, no_relevant="error")
    pattern = r"^measure 'AP': query 'q\d+' has no relevant judged document \(grade >= 1\); no_relevant='error'"
    assert re.match(pattern, got) and re.match(pattern, want)
    with pytest.raises(InputError, match="must be a Spark DataFrame"):
        tierank.spark.evaluate(qrels, run, ["AP"])


def test_compare_from_cluster_per_query(spark) -> None:   # type: ignore[no-untyped-def]
    qrels, run = random_case(6, False)
    other = run.assign(score=run["score"][::-1].to_numpy())
    (sq, lq), (sa, la), (sb, lb) = to_spark(spark, qrels, 1), to_spark(spark, run, 2), to_spark(spark, other, 2)
    with pytest.warns(TierankWarning):
        ref = tierank.compare(lq, {"a": la, "b": lb}, ["AP", "P@5"], test="permutation", n_resamples=200)
    with pytest.warns(TierankWarning):
        got = tierank.spark.compare(sq, {"a": sa, "b": sb}, ["AP", "P@5"], test="permutation", n_resamples=200)
    assert got.means.equals(ref.means) and got.tests.equals(ref.tests)
