"""tierank.tie_report and ``tierank ties``: a small run whose every number is worked out by hand.

    query q1 (judged: a = 1, b = 0, c = 1; d unjudged)     query q2 (judged: e = 2, f = 1)
    score 0.9: a, b   (tie: relevant a, non-relevant b)    score 0.8: e, f (tie: both relevant,
    score 0.5: c, d   (tie: relevant c, unjudged d)                         grades 2 and 1)
    score 0.1: g

trec_eval orders ties by document id, descending: b before a, d before c, f before e.
"""

from __future__ import annotations

import json
import warnings
import math

import pytest
from click.testing import CliRunner

import tierank

from tierank.cli import main
from tierank.io.write import write_qrels, write_run
from tierank.report import tie_report

QRELS = {"q1": {"a": 1, "b": 0, "c": 1}, "q2": {"e": 2, "f": 1}}
RUN = {"q1": {"a": 0.9, "b": 0.9, "c": 0.5, "d": 0.5, "g": 0.1}, "q2": {"e": 0.8, "f": 0.8}}
L3 = 1 / math.log2(3)          # DCG discount of rank 2

# per query: (expected, min, max, trec_eval)
AP_Q1 = {  # R = 2; a at rank 1 or 2, c at rank 3 or 4, independently
    (1, 3): (1 + 2 / 3) / 2, (1, 4): (1 + 2 / 4) / 2, (2, 3): (1 / 2 + 2 / 3) / 2, (2, 4): (1 / 2 + 2 / 4) / 2}
IDCG_Q1 = 1 + L3               # ideal: grades 1, 1
IDCG_Q2 = 2 + L3               # ideal: grades 2, 1
BY_HAND = {
    "RR": ((0.75, 0.5, 1.0, 0.5), (1, 1, 1, 1)),
    "P@1": ((0.5, 0, 1, 0), (1, 1, 1, 1)),
    "P@2": ((0.5, 0.5, 0.5, 0.5), (1, 1, 1, 1)),
    "AP": ((sum(AP_Q1.values()) / 4, AP_Q1[(2, 4)], AP_Q1[(1, 3)], AP_Q1[(2, 4)]), (1, 1, 1, 1)),
    "nDCG@2": (((1 / IDCG_Q1 + L3 / IDCG_Q1) / 2, L3 / IDCG_Q1, 1 / IDCG_Q1, L3 / IDCG_Q1),
               ((1 + (1 + 2 * L3) / IDCG_Q2) / 2, (1 + 2 * L3) / IDCG_Q2, 1, (1 + 2 * L3) / IDCG_Q2)),
    "Success@1": ((0.5, 0, 1, 0), (1, 1, 1, 1)),
    "NumRet": ((5, 5, 5, 5), (2, 2, 2, 2)),
}
# queries whose value depends on the order of ties, and documents in ties that can change the measure
CHANGED = {"RR": 1, "P@1": 1, "P@2": 0, "AP": 1, "nDCG@2": 2, "Success@1": 1, "NumRet": 0}
TIED_DOCS = {
    "RR": 2,          # {a, b}: the first relevant document; {c, d} comes after a relevant one
    "P@1": 2,         # {a, b} straddles k = 1; {c, d} is below k
    "P@2": 0,         # {a, b} fills the top 2 exactly: reordering it changes nothing
    "AP": 4,          # {a, b} and {c, d} both mix relevant and non-relevant documents
    "nDCG@2": 4,      # {a, b} (gains 1, 0) and {e, f} (gains 2, 1); {c, d} starts below k = 2
    "Success@1": 2,
    "NumRet": 0,
}


def test_tie_report_by_hand():
    rep = tie_report(QRELS, RUN, list(BY_HAND))
    assert list(rep.table.index) == list(BY_HAND)
    for measure, (q1, q2) in BY_HAND.items():
        row = rep.table.loc[measure]
        for column, a, b in zip(["expected", "min", "max", "trec_eval"], q1, q2):
            want = a + b if measure == "NumRet" else (a + b) / 2   # counts add up, the others average
            assert row[column] == pytest.approx(want, abs=1e-12), (measure, column)
        assert row["queries_changed"] == CHANGED[measure], measure
        assert row["queries"] == 2
        assert row["docs_share"] == pytest.approx(TIED_DOCS[measure] / 7), measure
    assert (rep.n_retrieved, rep.n_tied, rep.n_ties) == (7, 6, 3)


def test_report_text():
    rep = tie_report(QRELS, RUN, ["RR", "NumRet"], name="demo")
    lines = str(rep).splitlines()
    assert lines[0] == "demo: 2 queries, 7 retrieved documents, 6 (85.7%) in 3 ties"
    assert lines[1].split() == ["measure", "expected", "min", "max", "trec_eval", "queries", "tied", "docs"]
    assert lines[2].split() == ["RR", "0.8750", "0.7500", "1.0000", "0.7500", "1/2", "28.6%"]
    assert lines[3].split() == ["NumRet", "7", "7", "7", "7", "0/2", "0%"]
    assert "| RR | 0.8750 | 0.7500 | 1.0000 | 0.7500 | 1/2 | 28.6% |" in rep.to_markdown()
    assert r"RR & 0.8750 & 0.7500 & 1.0000 & 0.7500 & 1/2 & 28.6\% \\" in rep.to_latex()


def test_no_ties_no_change():
    run = {"q1": {"a": 3.0, "b": 2.0, "c": 1.0}}
    rep = tie_report({"q1": {"b": 1}}, run, ["AP", "nDCG@10"])
    assert rep.n_tied == 0 and rep.n_ties == 0
    assert (rep.table["min"] == rep.table["max"]).all() and (rep.table["docs_share"] == 0).all()
    assert (rep.table["expected"] == rep.table["trec_eval"]).all()


def test_rprec_depth_is_r():
    # R = 2; ranks 1-3 tie: {a (rel), b, c (rel)} straddles depth 2 -> can change Rprec
    rep = tie_report({"q1": {"a": 1, "c": 1}}, {"q1": {"a": 1.0, "b": 1.0, "c": 1.0, "d": 0.0}},
                             ["Rprec"])
    row = rep.table.loc["Rprec"]
    assert row["expected"] == pytest.approx(2 / 3)   # 2 * (2/3) relevant expected in the top 2, over R = 2
    assert (row["min"], row["max"]) == (0.5, 1.0)
    assert row["docs_share"] == pytest.approx(3 / 4)


def _write(tmp_path):
    qrels = tmp_path / "qrels.txt"
    run = tmp_path / "run.txt"
    write_qrels(QRELS, qrels)
    write_run(RUN, run, tag="demo")
    return qrels, run


def test_tie_report_from_files(tmp_path):
    qrels, run = _write(tmp_path)
    rep = tie_report(qrels, run, ["AP"])
    assert rep.name == str(run)
    assert rep.table.loc["AP", "expected"] == pytest.approx((sum(AP_Q1.values()) / 4 + 1) / 2)


def test_cli_ties(tmp_path):
    qrels, run = _write(tmp_path)
    res = CliRunner().invoke(main, ["ties", str(qrels), str(run), "-m", "recip_rank", "P.1,2", "ndcg_cut.2"])
    assert res.exit_code == 0, res.stderr
    lines = res.stdout.splitlines()
    assert lines[0] == "run.txt: 2 queries, 7 retrieved documents, 6 (85.7%) in 3 ties"
    assert [line.split()[0] for line in lines[2:]] == ["recip_rank", "P_1", "P_2", "ndcg_cut_2"]
    assert lines[2].split()[1:] == ["0.8750", "0.7500", "1.0000", "0.7500", "1/2", "28.6%"]
    res = CliRunner().invoke(main, ["ties", str(qrels), str(run), "-m", "map", "-f", "json"])
    data = json.loads(res.stdout)
    assert data["run"] == "run.txt" and data["tied"] == 6
    assert data["measures"]["map"]["queries_changed"] == 1
    assert data["measures"]["map"]["docs_share"] == pytest.approx(4 / 7)


def test_cli_ties_with_rel_level(tmp_path):
    # -l 2: in q2 only e is relevant, so the tie {e, f} now changes RR
    qrels, run = _write(tmp_path)
    res = CliRunner().invoke(main, ["ties", str(qrels), str(run), "-m", "recip_rank", "-l", "2", "-f", "csv"])
    assert res.exit_code == 0, res.stderr
    rows = [line.split(",") for line in res.stdout.splitlines()]
    assert rows[0] == ["run", "measure", "expected", "min", "max", "trec_eval", "queries_changed", "queries",
                       "docs_share"]
    # q1 has no document of grade 2: RR 0; q2: e or f first, RR 1 or 1/2
    assert rows[1][:3] == ["run.txt", "recip_rank", str(0.375)]
    assert rows[1][6] == "1"


@pytest.mark.parametrize("grouped", [True, False])
@pytest.mark.parametrize("missing", ["skip", "zero"])
def test_a_run_file_is_streamed_and_gives_the_in_memory_report(tmp_path, grouped, missing):
    """The tie report of a run file, read in blocks of a few lines (and through the second pass when the
    file is not grouped by query), equals the report of the same run as a DataFrame, bit for bit."""
    import numpy as np
    import pandas as pd

    rng = np.random.default_rng(5)
    rows = [(f"q{q}", f"d{d}", float(rng.integers(0, 3))) for q in range(12) for d in rng.choice(40, 9, replace=False)]
    run = pd.DataFrame(rows, columns=["query_id", "doc_id", "score"])
    qrels = pd.DataFrame([(q, d, int(rng.integers(0, 3))) for q, d, _ in rows if rng.random() < 0.6]
                         + [("q99", "d1", 1)], columns=["query_id", "doc_id", "relevance"])
    lines = run if grouped else run.iloc[rng.permutation(len(run))]
    path = tmp_path / "run.txt"
    path.write_text("".join(f"{q} Q0 {d} 1 {s} t\n" for q, d, s in lines.itertuples(index=False)))
    measures = ["AP", "nDCG@5", "RR", "P@3", "NumRelRet"]
    with warnings.catch_warnings(record=True) as said_in_memory:   # q99: judged, not in the run ('skip')
        warnings.simplefilter("always")
        want = tierank.tie_report(qrels, run, measures, missing=missing, name="r")
    with warnings.catch_warnings(record=True) as said_streamed:
        warnings.simplefilter("always")
        got = tierank.tie_report(qrels, str(path), measures, missing=missing, name="r", block_rows=7, progress=False)
    assert [str(w.message) for w in said_streamed] == [str(w.message) for w in said_in_memory]
    assert len(said_in_memory) == (missing == "skip")
    pd.testing.assert_frame_equal(got.table, want.table, check_exact=True)
    assert (got.n_retrieved, got.n_tied, got.n_ties) == (want.n_retrieved, want.n_tied, want.n_ties)
