"""PyTerrier's pt.Experiment reports tierank's tie-aware values once tierank.ir_measures.install() has run.

pt.Experiment evaluates through ir_measures.iter_calc, so the provider installed first in ir-measures'
DefaultPipeline decides the numbers. The runs are DataFrames given to pt.Transformer.from_df: no
Terrier index and no Java needed. Expected values: tierank.evaluate on the same data (tied run) and
PyTerrier's own default providers (tie-free run); RR by hand below.
"""

from __future__ import annotations

import pandas as pd
import pyterrier as pt   # the test extra installs python-terrier: never skipped
import pytest
from ir_measures import AP, RR, P, nDCG

import tierank
import tierank.ir_measures

TOPICS = pd.DataFrame({"qid": ["q1", "q2"], "query": ["a", "b"]})
QRELS = pd.DataFrame({"qid": ["q1", "q1", "q2"], "docno": ["d1", "d2", "d3"], "label": [1, 0, 1]})
MEASURES = [RR, P @ 1, AP, nDCG @ 10]


def _run(scores: list[float]) -> pd.DataFrame:
    return pd.DataFrame({"qid": ["q1"] * 3 + ["q2"] * 2, "docno": ["d1", "d2", "d4", "d3", "d5"],
                         "score": scores, "rank": [0, 1, 2, 0, 1]})


def _experiment(run: pd.DataFrame) -> dict:
    table = pt.Experiment([pt.Transformer.from_df(run)], TOPICS, QRELS, eval_metrics=MEASURES, names=["run"])
    return {str(m): float(table[str(m)].iloc[0]) for m in MEASURES}


@pytest.fixture
def provider_removed_after():
    yield
    tierank.ir_measures.uninstall()


def test_experiment_reports_tie_aware_values_after_install(provider_removed_after):
    tied = _run([0.5, 0.5, 0.1, 1.0, 1.0])     # each query's relevant document ties with a non-relevant one
    before = _experiment(tied)                 # ir-measures' default provider: trec_eval's tie-break
    tierank.ir_measures.install()
    after = _experiment(tied)
    run = tied.rename(columns={"qid": "query_id", "docno": "doc_id"})[["query_id", "doc_id", "score"]]
    qrels = QRELS.rename(columns={"qid": "query_id", "docno": "doc_id", "label": "relevance"})
    want = tierank.evaluate(qrels, run, ["RR", "P@1", "AP", "nDCG@10"]).mean
    assert after == pytest.approx({"RR": want["RR"], "P@1": want["P@1"], "AP": want["AP"],
                                   "nDCG@10": want["nDCG@10"]}, abs=1e-12)
    # by hand: the relevant document is first or second with probability 1/2 each: RR = (1 + 1/2) / 2
    assert after["RR"] == pytest.approx(0.75, abs=1e-12)
    assert before["RR"] == pytest.approx(0.5, abs=1e-12)   # trec_eval's tie-break put it second
    tierank.ir_measures.uninstall()
    assert _experiment(tied) == pytest.approx(before, abs=1e-12)


def test_experiment_is_unchanged_on_a_run_without_ties(provider_removed_after):
    free = _run([0.5, 0.4, 0.1, 1.0, 0.9])
    before = _experiment(free)
    tierank.ir_measures.install()
    assert _experiment(free) == pytest.approx(before, abs=1e-6)
