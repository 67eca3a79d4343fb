"""Shared by tests/test_spark.py and tests/test_dask.py: random runs with heavy ties, and the local
reference they are compared with (tierank.evaluate on the same rows, in the same order)."""

from __future__ import annotations

import os
import sys

import numpy as np
import pandas as pd

# every tie mode, with and without bounds where the mode has them
TIE_CASES = [("expected", True), ("optimistic", False), ("pessimistic", False), ("input", False),
             ("trec_eval", False), ("random", False), ("lower", True), ("upper", False)]
# ERR is left out until its expected value stops depending on the other queries of the call (see
# test_dask.py::test_err_does_not_depend_on_other_queries)
# AP(denom='retrieved')@5: its optimistic arrangement is not its maximum (ties="optimistic" != "upper")
MEASURES = ["AP", "nDCG@10", "P@5", "RR", "Rprec", "NumRet", "NumRelRet", "R@20", "Bpref", "RBP", "ERR@10",
            "AP(denom='retrieved')@5"]


def random_case(seed: int, string_ids: bool, n_queries: int = 40) -> tuple[pd.DataFrame, pd.DataFrame]:
    """(qrels, run): queries of 0-40 documents, scores in {0, 1, 2} (heavy ties), grades 0-2 with some
    judged-but-unretrieved documents, queries only in the run and only in the qrels, rows in random
    order (queries interleaved)."""
    rng = np.random.default_rng(seed)
    rows = []
    judged = []
    for q in range(n_queries):
        n = int(rng.integers(0, 40))
        docs = rng.choice(200, size=n + 5, replace=False)
        if q % 13 != 5:   # a few queries only in the qrels
            for d in docs[:n]:
                rows.append((q, int(d), float(rng.integers(0, 3))))
        if q % 11 != 7:   # a few only in the run
            for d in docs[rng.random(n + 5) < 0.5]:
                judged.append((q, int(d), int(rng.integers(0, 3))))
    run = pd.DataFrame(rows, columns=["query_id", "doc_id", "score"])
    qrels = pd.DataFrame(judged, columns=["query_id", "doc_id", "relevance"])
    run = run.iloc[rng.permutation(len(run))].reset_index(drop=True)
    qrels = qrels.iloc[rng.permutation(len(qrels))].reset_index(drop=True)
    if string_ids:
        for f in (run, qrels):
            f["query_id"] = ["q" + str(v) for v in f["query_id"]]
            f["doc_id"] = ["doc-" + str(v) for v in f["doc_id"]]
    return qrels, run


def spark_session():   # type: ignore[no-untyped-def]
    """A local[2] Spark session whose Python workers use this interpreter (which has pyarrow)."""
    os.environ["PYSPARK_PYTHON"] = sys.executable
    os.environ["PYSPARK_DRIVER_PYTHON"] = sys.executable
    from pyspark.sql import SparkSession

    spark = (SparkSession.builder.master("local[2]").appName("tierank-tests")
             .config("spark.ui.enabled", "false").config("spark.sql.shuffle.partitions", "3")
             .config("spark.default.parallelism", "2").config("spark.driver.memory", "1g")
             # small Arrow batches: a query's rows reach the Python worker in several batches
             .config("spark.sql.execution.arrow.maxRecordsPerBatch", "64")
             .getOrCreate())
    spark.sparkContext.setLogLevel("ERROR")
    return spark
