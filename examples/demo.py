"""A short demonstration: trec_eval's own test run, evaluated with and without tie-breaking.

Run with ``make demo`` (or ``python examples/demo.py``). It prints, per measure, the tie-aware
expected value, the exact range over all orderings of tied documents, and what trec_eval's
tie-break (document id, descending) gives.
"""

from __future__ import annotations

from pathlib import Path

import pandas as pd

import tierank

DATA = Path(__file__).resolve().parent.parent / "tests" / "data" / "trec_eval"
MEASURES = ["AP", "nDCG@10", "P@10", "RR", "R@100", "ERR@20"]


def main() -> None:
    run = pd.read_csv(DATA / "results.test", sep=r"\s+", header=None, usecols=[0, 2, 4],
                      names=["query_id", "doc_id", "score"], dtype={0: str, 2: str})
    qrels = pd.read_csv(DATA / "qrels.test", sep=r"\s+", header=None, usecols=[0, 2, 3],
                        names=["query_id", "doc_id", "relevance"], dtype={0: str, 2: str})
    print(f"trec_eval's test run: {run.query_id.nunique()} queries, {len(run)} retrieved documents\n")
    show(qrels, run, "scores as given (a few ties)")
    show(qrels, run.assign(score=run.score.round(1)), "scores rounded to 1 decimal (a quantised scorer)")


def show(qrels: pd.DataFrame, run: pd.DataFrame, title: str) -> None:
    expected = tierank.evaluate(qrels, run, MEASURES, bounds=True)
    trec = tierank.evaluate(qrels, run, MEASURES, ties="trec_eval")
    table = pd.DataFrame({
        "expected": expected.mean,
        "min": expected.mean_lower,
        "max": expected.mean_upper,
        "trec_eval": trec.mean,
    })
    table.index.name = "measure"
    print(title)
    print(table.to_string(float_format="%.4f"), end="\n\n")


if __name__ == "__main__":
    main()
