"""Grades where tierank reproduces trec_eval (ties="trec_eval"): read as trec_eval reads them, or an error.

trec_eval reads a qrels grade with C's atol (get_qrels.c: ``rel = atol(lines[i].rel)``): the integer
its leading sign and digits spell, so "0.5" is 0, "2e1" is 2, "-1.7" is -1, "2.0" is 2. tierank reads
the number the text spells. With ties="trec_eval" a grade on which the two differ is an InputError
naming the file and line (files) or the query and document (dicts, tables); in every other tie mode
fractional grades are read as given, without a warning. Expected values are hand computations written
out below, an independent atol written as C's loop, or pytrec_eval (trec_eval's own code).
"""

from __future__ import annotations

import math
from pathlib import Path

import pandas as pd
import pytest
from click.testing import CliRunner
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import tierank
from tierank import InputError
from tierank.cli import main
from tierank.io import trec
from tierank.io.trec import trec_eval_atol

pa = pytest.importorskip("pyarrow")

RUN = "q Q0 a 1 3 t\nq Q0 b 2 2 t\nq Q0 c 3 1 t\n"   # a > b > c


def _files(tmp_path: Path, grade_b: str, sep: str = " ") -> tuple[str, str]:
    qrels, run = tmp_path / "qrels", tmp_path / "run"
    qrels.write_text(sep.join(["q", "0", "a", "1"]) + "\n" + sep.join(["q", "0", "b", grade_b]) + "\nq 0 c 0\n")
    run.write_text(RUN)
    return str(qrels), str(run)


def c_atol(text: str) -> int:
    """C's atol, written as its loop: optional blanks and sign, then digits until the first other char."""
    i, n = 0, len(text)
    while i < n and text[i] in " \t\n\v\f\r":   # isspace
        i += 1
    sign = 1
    if i < n and text[i] in "+-":
        sign = -1 if text[i] == "-" else 1
        i += 1
    value = 0
    while i < n and "0" <= text[i] <= "9":
        value = value * 10 + (ord(text[i]) - ord("0"))
        i += 1
    return max(-(2 ** 63), min(2 ** 63 - 1, sign * value))   # glibc's strtol saturates


def _ndcg(gains_in_run_order: list[float]) -> float:
    """nDCG (linear gains, 1/log2(i + 1)) of a list holding every judged document."""
    dcg = sum(g / math.log2(i + 2) for i, g in enumerate(gains_in_run_order))
    ideal = sorted(gains_in_run_order, reverse=True)
    return dcg / sum(g / math.log2(i + 2) for i, g in enumerate(ideal))


# ----------------------------------------------------------------- files: an error where atol differs


@pytest.mark.parametrize("text, value, atol", [
    ("0.5", "0.5", 0), ("2e1", "20.0", 2), ("-1.7", "-1.7", -1), ("1.5e1", "15.0", 1), (".5", "0.5", 0),
])
@pytest.mark.parametrize("stream", [None, False])
@pytest.mark.parametrize("sep", [" ", "\t ", "  "])   # one space: the reader's fast path; others: its general one
def test_grades_trec_eval_reads_otherwise_are_an_error_naming_the_line(tmp_path, text, value, atol, stream, sep):
    qrels, run = _files(tmp_path, text, sep)
    with pytest.raises(InputError, match=rf"qrels:2: grade of document 'b' for query 'q' is {value}, which trec_eval "
                                         rf"reads as {atol} \(it reads grades as integers\)"):
        tierank.evaluate(qrels, run, ["nDCG"], ties="trec_eval", stream=stream)


def test_pandas_engine_reads_grades_as_the_pyarrow_engine(tmp_path, monkeypatch):
    monkeypatch.setattr(trec, "ENGINE", "pandas")
    qrels, run = _files(tmp_path, "2e1")
    with pytest.raises(InputError, match=r"qrels:2: .* is 20\.0, which trec_eval reads as 2 "):
        tierank.evaluate(qrels, run, ["nDCG"], ties="trec_eval")
    qrels, run = _files(tmp_path, "+2.0")
    assert tierank.evaluate(qrels, run, ["nDCG"], ties="trec_eval").mean["nDCG"] == \
        pytest.approx(_ndcg([1, 2, 0]), abs=1e-15)


@pytest.mark.parametrize("text", ["2", "2.0", "+2", "2.", "02", "20e-1", "0.2e1"])
def test_grades_atol_reads_as_written_are_read(tmp_path, text):
    # atol("2.0") = atol("+2") = 2 ... = the number written; "20e-1" and "0.2e1" are 2 but atol reads 20 and 0
    qrels, run = _files(tmp_path, text)
    if text in ("20e-1", "0.2e1"):
        with pytest.raises(InputError, match=rf"is 2\.0, which trec_eval reads as {c_atol(text)} "):
            tierank.evaluate(qrels, run, ["nDCG"], ties="trec_eval")
        return
    # run order a (1), b (2), c (0): DCG = 1/log2(2) + 2/log2(3); ideal 2/log2(2) + 1/log2(3)
    want = (1 + 2 / math.log2(3)) / (2 + 1 / math.log2(3))
    assert tierank.evaluate(qrels, run, ["nDCG"], ties="trec_eval").mean["nDCG"] == pytest.approx(want, abs=1e-15)


@pytest.mark.parametrize("text, grade", [("0.5", 0.5), ("2e1", 20.0), ("-1.7", -1.7)])
def test_fractional_grades_are_read_as_given_in_other_modes(tmp_path, text, grade):
    qrels, run = _files(tmp_path, text)
    gains = [1, max(grade, 0), 0]   # a negative grade is unjudged: gain 0
    for ties in ("expected", "input", "optimistic"):
        assert tierank.evaluate(qrels, run, ["nDCG"], ties=ties).mean["nDCG"] == pytest.approx(_ndcg(gains), abs=1e-15)


def test_cli_ties_trec_eval_refuses_what_trec_eval_reads_otherwise(tmp_path):
    # run b > a > c. trec_eval reads b's "0.5" as 0: gains 0, 1, 0, nDCG = (1/log2(3)) / 1 = 0.6309.
    # Before, --ties trec_eval -f trec printed tierank's reading of 0.5 instead: gains 0.5, 1, 0,
    # nDCG = (0.5 + 1/log2(3)) / (1 + 0.5/log2(3)) = 0.8597
    qrels, run = _files(tmp_path, "0.5")
    Path(run).write_text("q Q0 b 1 3 t\nq Q0 a 2 2 t\nq Q0 c 3 1 t\n")
    runner = CliRunner()
    res = runner.invoke(main, ["--ties", "trec_eval", "-f", "trec", "-m", "ndcg", qrels, run])
    assert res.exit_code == 2, res.output
    assert "qrels:2: grade of document 'b' for query 'q' is 0.5, which trec_eval reads as 0" in res.output
    res = runner.invoke(main, ["-f", "trec", "-m", "ndcg", qrels, run])   # the default mode: 0.5 as given
    as_given = (0.5 + 1 / math.log2(3)) / (1 + 0.5 / math.log2(3))
    assert res.exit_code == 0 and res.output.split() == ["ndcg", "all", f"{as_given:.4f}"] == ["ndcg", "all", "0.8597"]
    # the grade written as trec_eval reads it: trec_eval's value
    Path(qrels).write_text("q 0 a 1\nq 0 b 0\nq 0 c 0\n")
    res = runner.invoke(main, ["--ties", "trec_eval", "-f", "trec", "-m", "ndcg", qrels, run])
    assert res.output.split() == ["ndcg", "all", f"{1 / math.log2(3):.4f}"] == ["ndcg", "all", "0.6309"]


# ------------------------------------------------------------------ dicts and tables: whole numbers


@pytest.mark.parametrize("make", [
    lambda g: {"q": {"a": 1, "b": g}},
    lambda g: pd.DataFrame({"qid": ["q", "q"], "docno": ["a", "b"], "rel": [1.0, g]}),
    lambda g: pa.table({"qid": ["q", "q"], "docno": ["a", "b"], "rel": pa.array([1.0, g])}),
], ids=["dict", "pandas", "arrow"])
def test_in_memory_grades_must_be_whole_numbers_under_trec_eval(make):
    run = {"q": {"a": 3.0, "b": 2.0, "c": 1.0}}
    with pytest.raises(InputError, match=r"grade of document 'b' for query 'q' is 0\.5, which trec_eval reads as 0"):
        tierank.evaluate(make(0.5), run, ["nDCG"], ties="trec_eval")
    with pytest.raises(InputError, match=r"is -1\.5, which trec_eval reads as -1 "):
        tierank.evaluate(make(-1.5), run, ["nDCG"], ties="trec_eval")
    assert tierank.evaluate(make(0.5), run, ["nDCG"]).mean["nDCG"] == 1.0   # other modes: as given
    assert tierank.evaluate(make(2.0), run, ["nDCG"], ties="trec_eval").mean["nDCG"] == \
        pytest.approx(_ndcg([1, 2]), abs=1e-15)


def test_whole_float_grades_match_pytrec_eval():
    pytrec_eval = pytest.importorskip("pytrec_eval")
    run = {"q": {"a": 3.0, "b": 2.0, "c": 2.0, "d": 1.0}}
    want = pytrec_eval.RelevanceEvaluator({"q": {"a": 1, "b": 2, "c": 0}}, {"ndcg"}).evaluate(run)["q"]["ndcg"]
    got = tierank.evaluate({"q": {"a": 1.0, "b": 2.0, "c": 0.0}}, run, ["nDCG"], ties="trec_eval").mean["nDCG"]
    assert got == pytest.approx(want, abs=1e-12)
    with pytest.raises(TypeError):   # pytrec_eval (trec_eval's code) takes integer grades only
        pytrec_eval.RelevanceEvaluator({"q": {"a": 1, "b": 0.5}}, {"ndcg"})


# ------------------------------------------------------------------------------------- properties


_NUMBER_TEXT = st.builds(
    lambda sign, whole, frac, exp: sign + whole + frac + exp,
    st.sampled_from(["", "+", "-"]),
    st.text("0123456789", min_size=1, max_size=4),
    st.one_of(st.just(""), st.text("0123456789", max_size=3).map(lambda d: "." + d)),
    st.one_of(st.just(""), st.builds(lambda s, d: "e" + s + d, st.sampled_from(["", "-", "+"]),
                                     st.text("0123456789", min_size=1, max_size=2))),
)


@settings(max_examples=200, deadline=None)
@given(st.lists(_NUMBER_TEXT | st.text("0123456789", min_size=19, max_size=24).map(lambda d: "-" + d)
                | st.text("0123456789abcdefxX.+-e ", max_size=6), max_size=8))
def test_property_trec_eval_atol_is_c_atol(texts):
    assert trec_eval_atol(texts).tolist() == [c_atol(t) for t in texts]


@settings(max_examples=30, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(_NUMBER_TEXT)
def test_property_a_grade_is_read_as_trec_eval_reads_it_or_refused(tmp_path, text):
    qrels, run = _files(tmp_path, text)
    grade = float(text)
    if c_atol(text) != grade:
        with pytest.raises(InputError, match=r"qrels:2: .*, which trec_eval reads as"):
            tierank.evaluate(qrels, run, ["nDCG"], ties="trec_eval")
    else:
        want = _ndcg([1, max(grade, 0), 0]) if not math.isinf(grade) else None
        if want is not None:
            got = tierank.evaluate(qrels, run, ["nDCG"], ties="trec_eval").mean["nDCG"]
            assert got == pytest.approx(want, rel=1e-12)


def test_dask_engine_reads_grades_by_the_same_rule():
    dd = pytest.importorskip("dask.dataframe")
    import tierank.dask

    qrels = dd.from_pandas(pd.DataFrame({"query_id": ["q", "q"], "doc_id": ["a", "b"], "relevance": [1, 0.5]}),
                           npartitions=1)
    run = dd.from_pandas(pd.DataFrame({"query_id": ["q"] * 3, "doc_id": ["a", "b", "c"], "score": [3.0, 2.0, 1.0]}),
                         npartitions=1)
    with pytest.raises(InputError, match=r"grade of document 'b' for query 'q' is 0\.5, which trec_eval reads as 0"):
        tierank.dask.evaluate(qrels, run, ["nDCG"], ties="trec_eval")
    assert tierank.dask.evaluate(qrels, run, ["nDCG"]).mean["nDCG"] == 1.0   # gains 1, 0.5, 0: the ideal order
