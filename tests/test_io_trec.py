"""TREC run and qrels files: the format rules of tierank.io.trec, each tested, on every parsing path.

Every test that reads a file runs three times: pyarrow's fast path (one delimiter, fixed columns),
pyarrow's general path (any whitespace, comments, blank lines) and pandas' C parser (the fallback
without pyarrow). Results and error messages must be the same on all three.
"""

from __future__ import annotations

import gzip
import math
import tempfile
import warnings
from decimal import Decimal
from pathlib import Path

import numpy as np
import pandas as pd
import pyarrow as pa
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import tierank
import tierank.io.trec as trec
from tierank import InputError
from tierank.io.write import write_qrels, write_run

DATA = Path(__file__).parent / "data" / "trec_eval"
ENGINES = ("pyarrow-fast", "pyarrow-general", "pandas")


def _no_pyarrow(*args, **kwargs):  # pragma: no cover - must not be called
    raise AssertionError("the pandas engine must not use pyarrow")


def _set_engine(monkeypatch, engine):
    if engine == "pandas":
        monkeypatch.setattr(trec, "ENGINE", "pandas")
        monkeypatch.setattr(trec, "_split_pyarrow", _no_pyarrow)
    else:
        monkeypatch.setattr(trec, "ENGINE", "pyarrow")
        if engine == "pyarrow-general":
            monkeypatch.setattr(trec, "_split_pyarrow_simple", lambda data, layout: None)


@pytest.fixture(params=ENGINES)
def engine(request, monkeypatch):
    _set_engine(monkeypatch, request.param)
    return request.param


def write(tmp_path, name, content):
    path = tmp_path / name
    path.write_bytes(content.encode() if isinstance(content, str) else content)
    return path


def as_lists(cols):
    return (list(map(str, cols.query)), list(map(str, cols.doc)), cols.value.tolist(), cols.lines.tolist())


def error_of(func, path):
    with pytest.raises(InputError) as info:
        func(path)
    return info.value


def check_error(err, path, line, fragment):
    assert err.file == str(path)
    assert err.line == line
    assert str(err).startswith(f"{path}:{line}: "), str(err)
    assert fragment in str(err), str(err)


# ------------------------------------------------------------------------------------ valid files

CLEAN_RUN = "q1 Q0 d1 1 2.5 tag\nq1 Q0 d2 2 1.5 tag\nq2 Q0 d3 1 -0.5 tag\n"


def test_reads_a_run(tmp_path, engine):
    cols = trec.read_run_columns(write(tmp_path, "run.txt", CLEAN_RUN))
    assert as_lists(cols) == (["q1", "q1", "q2"], ["d1", "d2", "d3"], [2.5, 1.5, -0.5], [1, 2, 3])
    assert cols.source == str(tmp_path / "run.txt")
    assert cols.value.dtype == np.float64 and cols.lines.dtype == np.int64


def test_reads_qrels_with_negative_grades(tmp_path, engine):
    cols = trec.read_qrels_columns(write(tmp_path, "qrels.txt", "q1 0 d1 1\nq1 0 d2 -2\nq2 0 d3 0\n"))
    assert as_lists(cols) == (["q1", "q1", "q2"], ["d1", "d2", "d3"], [1.0, -2.0, 0.0], [1, 2, 3])


def test_whitespace_comments_blank_lines_and_extra_fields(tmp_path, engine):
    text = ("# a comment\n"
            "\n"
            "   \t \n"
            "  q1\tQ0   d1 1\t 2.5 tag\r\n"        # leading blanks, tabs, runs of blanks, CRLF
            "q1 Q0 d2 2 1.5 tag more junk after the tag\n"  # fields after the sixth are ignored
            "   # an indented comment, with fields: a b c d e f\n"
            "q2 Q0 #d3 1 -0.5 tag   \n")           # '#' inside a line is data; trailing blanks
    cols = trec.read_run_columns(write(tmp_path, "run.txt", text))
    assert as_lists(cols) == (["q1", "q1", "q2"], ["d1", "d2", "#d3"], [2.5, 1.5, -0.5], [4, 5, 7])


def test_file_without_final_newline_and_bom(tmp_path, engine):
    cols = trec.read_qrels_columns(write(tmp_path, "qrels.txt", b"\xef\xbb\xbfq1 0 d1 1\nq1 0 d2 0"))
    assert as_lists(cols) == (["q1", "q1"], ["d1", "d2"], [1.0, 0.0], [1, 2])


def test_gzip_is_recognised_by_content(tmp_path, engine):
    plain = trec.read_run_columns(write(tmp_path, "run.txt", CLEAN_RUN))
    for name in ("run.txt.gz", "run.gzipped"):
        cols = trec.read_run_columns(write(tmp_path, name, gzip.compress(CLEAN_RUN.encode())))
        assert as_lists(cols) == as_lists(plain)


def test_numbers(tmp_path, engine):
    values = ["1e5", "1E-3", ".5", "5.", "+5", "-0", "inf", "-Infinity", "00012", "1e300",
              "0.1000000000000000055511151231257827"]   # (1e500: refused, test_numbers_lost_in_float64_are_refused)
    text = "".join(f"q1 Q0 d{i} {i} {v} t\n" for i, v in enumerate(values))
    cols = trec.read_run_columns(write(tmp_path, "run.txt", text))
    assert cols.value.tolist() == [float(v) for v in values]


def test_trec_eval_files_read_the_same_on_every_path(monkeypatch):
    seen = {}
    for engine in ENGINES:
        with monkeypatch.context() as m:
            _set_engine(m, engine)
            seen[engine] = [as_lists(trec.read_run_columns(DATA / "results.test")),
                            as_lists(trec.read_run_columns(DATA / "results.trunc")),
                            as_lists(trec.read_qrels_columns(DATA / "qrels.test")),
                            as_lists(trec.read_qrels_columns(DATA / "qrels.rel_level"))]
    assert seen["pyarrow-fast"] == seen["pyarrow-general"] == seen["pandas"]
    run = seen["pandas"][0]
    assert len(run[0]) == 1500 and run[3] == list(range(1, 1501))
    assert run[1][0] == "FR940202-2-00150" and run[2][0] == 2.129133


def test_fast_path_is_taken_for_simple_files(tmp_path, monkeypatch):
    monkeypatch.setattr(trec, "ENGINE", "pyarrow")
    calls = []
    original = trec._split_pyarrow_simple

    def spy(data, layout):
        out = original(data, layout)
        calls.append(out is not None)
        return out
    monkeypatch.setattr(trec, "_split_pyarrow_simple", spy)
    trec.read_run_columns(write(tmp_path, "a.txt", CLEAN_RUN))
    trec.read_run_columns(write(tmp_path, "b.txt", CLEAN_RUN.replace(" ", "\t")))
    trec.read_run_columns(write(tmp_path, "c.txt", CLEAN_RUN.replace("d1 1", "d1  1")))   # run of blanks
    trec.read_run_columns(write(tmp_path, "d.txt", "#c\n" + CLEAN_RUN))                   # comment
    trec.read_qrels_columns(write(tmp_path, "e.txt", "q1 0 d1 1\n"))
    assert calls == [True, True, False, False, True]


def test_engine_is_pyarrow_unless_forced(monkeypatch):
    monkeypatch.setattr(trec, "ENGINE", None)
    assert trec._engine() == "pyarrow"   # a required dependency


def test_read_run_and_read_qrels_frames(tmp_path, engine):
    run = trec.read_run(write(tmp_path, "run.txt", CLEAN_RUN))
    assert list(run.columns) == ["query_id", "doc_id", "score"]
    assert run["score"].tolist() == [2.5, 1.5, -0.5] and run["doc_id"].tolist() == ["d1", "d2", "d3"]
    qrels = trec.read_qrels(write(tmp_path, "qrels.txt", "q1 0 d1 1\n"))
    assert list(qrels.columns) == ["query_id", "doc_id", "relevance"]
    assert qrels["relevance"].tolist() == [1.0]


def test_run_tag(tmp_path):
    assert trec.read_run_tag(DATA / "results.test") == "STANDARD"
    path = write(tmp_path, "run.txt.gz", gzip.compress(b"# c\n\nq1 Q0 d1 1 0.5 bm25\n"))
    assert trec.read_run_tag(path) == "bm25"


def test_run_tag_of_a_broken_gzip_file_names_the_file(tmp_path):
    path = write(tmp_path, "run.txt.gz", b"\x1f\x8b\x08\x00garbage, not deflate data")
    with pytest.raises(InputError, match=r"run\.txt\.gz: not a valid gzip file"):   # as every reader says
        trec.read_run_tag(path)


@settings(max_examples=150, deadline=None)
@given(st.integers(0, 400), st.binary(max_size=20))
def test_run_tag_of_a_cut_or_spoiled_gzip_file_is_the_tag_or_an_input_error(tmp_path_factory, cut, junk):
    # a gzip run cut anywhere, junk appended: the tag of its first line or an InputError, never another error
    text = b"# comment\n" * 20 + b"q1 Q0 d1 1 0.5 bm25\n" + b"q1 Q0 d2 2 0.4 bm25\n" * 50
    data = gzip.compress(text)[:cut] + junk
    path = write(tmp_path_factory.mktemp("gz"), "run.txt.gz", b"\x1f\x8b" + data[2:] if len(data) >= 2 else data)
    try:
        assert trec.read_run_tag(path) == "bm25"
    except InputError as err:
        assert "run.txt.gz" in str(err)


# ------------------------------------------------------------------------------ evaluate(path)


def test_evaluate_accepts_paths(tmp_path, engine):
    qrels = write(tmp_path, "qrels.txt", "q1 0 d1 1\nq1 0 d2 0\nq2 0 d3 1\n")
    run = write(tmp_path, "run.txt", CLEAN_RUN)
    by_path = tierank.evaluate(str(qrels), run, ["AP", "P@1"])   # str and pathlib.Path
    by_dict = tierank.evaluate({"q1": {"d1": 1, "d2": 0}, "q2": {"d3": 1}},
                               {"q1": {"d1": 2.5, "d2": 1.5}, "q2": {"d3": -0.5}}, ["AP", "P@1"])
    assert by_path.mean == by_dict.mean
    assert list(by_path.per_query.index) == ["q1", "q2"]


def test_rank_and_q0_columns_are_ignored(tmp_path, engine):
    qrels = write(tmp_path, "qrels.txt", "q1 0 d1 1\nq1 0 d2 0\n")
    a = write(tmp_path, "a.txt", "q1 Q0 d1 1 0.2 t\nq1 Q0 d2 2 0.9 t\n")
    b = write(tmp_path, "b.txt", "q1 XX d1 7 0.2 t\nq1 0 d2 1 0.9 t\n")
    assert tierank.evaluate(qrels, a, ["RR"]).mean == tierank.evaluate(qrels, b, ["RR"]).mean == {"RR": 0.5}


def test_negative_grades_are_non_relevant_with_zero_gain(tmp_path, engine):
    # TREC marks junk with -2: not relevant, gain 0 (not a negative gain), as trec_eval does
    run = write(tmp_path, "run.txt", "q1 Q0 junk 1 0.9 t\nq1 Q0 good 2 0.5 t\n")
    junk = write(tmp_path, "junk.txt", "q1 0 junk -2\nq1 0 good 1\n")
    zero = write(tmp_path, "zero.txt", "q1 0 junk 0\nq1 0 good 1\n")
    measures = ["P@1", "nDCG@2", "AP", "NumRel", "DCG@2"]
    with_junk = tierank.evaluate(junk, run, measures).mean
    assert with_junk == tierank.evaluate(zero, run, measures).mean
    assert with_junk["P@1"] == 0.0 and with_junk["NumRel"] == 1
    assert with_junk["DCG@2"] == pytest.approx(1 / np.log2(3))


def test_trec_eval_numbers_through_files(engine):
    # map and P_5 of trec_eval's out.test, through the readers
    res = tierank.evaluate(DATA / "qrels.test", DATA / "results.test", ["map", "P.5", "num_rel_ret"],
                           ties="trec_eval")
    assert round(res.mean["map"], 4) == 0.1785 and round(res.mean["P.5"], 4) == 0.2667
    assert res.mean["num_rel_ret"] == 131


# ---------------------------------------------------------------------------------- malformed files

RUN_ERRORS = {
    # name: (text, line, fragment)
    "too few fields": ("q1 Q0 d1 1 0.5 t\nq1 Q0 d2 2 0.4\n", 2,
                       "expected at least 6 fields (qid Q0 docid rank score tag), found 5: 'q1 Q0 d2 2 0.4'"),
    "one field": ("q1 Q0 d1 1 0.5 t\n\nq1\n", 3, "found 1"),
    "score not a number": ("q1 Q0 d1 1 0.5 t\nq1 Q0 d2 2 high t\n", 2, "the score 'high' is not a number"),
    "score with underscore": ("q1 Q0 d1 1 1_000 t\n", 1, "the score '1_000' is not a number"),
    "score with a comma": ("q1 Q0 d1 1 0,5 t\n", 1, "the score '0,5' is not a number"),
    "non-ASCII digits": ("q1 Q0 d1 1 \u0661 t\n", 1, "is not a number"),
    "NaN score": ("# x\nq1 Q0 d1 1 0.5 t\nq1 Q0 d2 2 NaN t\n", 3, "the score is NaN"),
    "first problem wins (number)": ("q1 Q0 d1 1 x t\nq1 Q0 d2\n", 1, "the score 'x' is not a number"),
    "first problem wins (fields)": ("q1 Q0 d1 1 0.5\nq1 Q0 d2 2 x t\n", 1, "found 5"),
    "empty file": ("", 1, "no run line: the file is empty"),
    "only comments": ("# nothing\n\n   \n", 1, "the file holds only blank and comment lines"),
    "NUL byte": ("q1 Q0 d1 1 0.5 t\nq1 Q0 d2 2 0.4 t\n\x00\x01binary", 3, "not a text file: NUL byte, at column 1"),
    "control character": ("q1 Q0 d1 1 0.5 t\x0b\n", 1, "not a text file: control character 0x0b, at column 17"),
    "invalid UTF-8": (b"q1 Q0 d1 1 0.5 t\nq1 Q0 d\xff 2 0.4 t\n", 2, "not UTF-8 text: byte 0xff is not UTF-8, at column 8"),
    "lone carriage return": ("q1 Q0 d1 1 0.5 t\nq1 Q0 d2 2 0.4 t\rq1 Q0 d3 3 0.3 t\n", 2,
                             "carriage return without a line feed"),
}

QRELS_ERRORS = {
    "three fields": ("q1 0 d1 1\nq1 0 d2\n", 2, "expected exactly 4 fields (qid iter docid grade), found 3"),
    "five fields": ("q1 0 d1 1\nq1 0 d2 1 extra\n", 2, "found 5: 'q1 0 d2 1 extra'"),
    "run line in qrels": ("q1 Q0 d1 1 0.5 t\n", 1, "found 6"),
    "grade not a number": ("q1 0 d1 1\n\nq1 0 d2 relevant\n", 3, "the grade 'relevant' is not a number"),
    "NaN grade": ("q1 0 d1 nan\n", 1, "the grade is NaN"),
    "infinite grade": ("q1 0 d1 1\nq1 0 d2 -inf\n", 2, "the grade is infinite"),
    "empty file": ("", 1, "no qrels line: the file is empty"),
    "binary file": (bytes(range(256)), 1, "not a text file"),
}


@pytest.mark.parametrize("case", sorted(RUN_ERRORS))
def test_malformed_run(tmp_path, engine, case):
    text, line, fragment = RUN_ERRORS[case]
    path = write(tmp_path, "bad.run", text)
    check_error(error_of(trec.read_run_columns, path), path, line, fragment)
    # the same through evaluate()
    qrels = write(tmp_path, "qrels.txt", "q1 0 d1 1\n")
    with pytest.raises(InputError) as info:
        tierank.evaluate(qrels, path, ["AP"])
    check_error(info.value, path, line, fragment)


@pytest.mark.parametrize("case", sorted(QRELS_ERRORS))
def test_malformed_qrels(tmp_path, engine, case):
    text, line, fragment = QRELS_ERRORS[case]
    path = write(tmp_path, "bad.qrels", text)
    check_error(error_of(trec.read_qrels_columns, path), path, line, fragment)


@pytest.mark.parametrize("case", sorted(RUN_ERRORS) + sorted(QRELS_ERRORS))
def test_errors_are_the_same_on_every_path(tmp_path, monkeypatch, case):
    text, _, _ = RUN_ERRORS.get(case) if case in RUN_ERRORS else QRELS_ERRORS[case]
    reader = trec.read_run_columns if case in RUN_ERRORS else trec.read_qrels_columns
    path = write(tmp_path, "bad.txt", text)
    messages = set()
    for engine in ENGINES:
        with monkeypatch.context() as m:
            _set_engine(m, engine)
            messages.add(str(error_of(reader, path)))
    assert len(messages) == 1, messages


def test_gzip_errors_name_the_file_and_line(tmp_path, engine):
    path = write(tmp_path, "bad.run.gz", gzip.compress(b"q1 Q0 d1 1 0.5 t\nq1 Q0 d2 2 oops t\n"))
    check_error(error_of(trec.read_run_columns, path), path, 2, "the score 'oops' is not a number")
    broken = write(tmp_path, "broken.gz", gzip.compress(CLEAN_RUN.encode())[:20])
    err = error_of(trec.read_run_columns, broken)
    assert str(err).startswith(f"{broken}: not a valid gzip file")


@pytest.mark.parametrize("kind", ["run", "qrels"])
def test_duplicate_document_names_file_and_line(tmp_path, engine, kind):
    run_text = "q1 Q0 d1 1 0.5 t\nq1 Q0 d2 2 0.4 t\n"
    qrels_text = "q1 0 d1 1\nq1 0 d2 0\n"
    if kind == "run":
        run_text = "# header\n" + run_text + "q2 Q0 d1 1 0.5 t\nq1 Q0 d1 3 0.3 t\n"   # line 5
    else:
        qrels_text = qrels_text + "\nq1 0 d2 1\n"                                     # line 4
    run = write(tmp_path, "run.txt", run_text)
    qrels = write(tmp_path, "qrels.txt", qrels_text)
    with pytest.raises(InputError) as info:
        tierank.evaluate(qrels, run, ["AP"])
    path, line, doc = (run, 5, "'d1'") if kind == "run" else (qrels, 4, "'d2'")
    check_error(info.value, path, line, f"document {doc} is listed twice for query 'q1'")


def test_missing_file_is_an_os_error(tmp_path):
    with pytest.raises(FileNotFoundError):
        trec.read_run_columns(tmp_path / "nope.txt")


# ---------------------------------------------------------------------------------------- writers


def test_write_run_round_trip_and_trec_eval_order(tmp_path, engine):
    run = {"q2": {"a": 0.5}, "q1": {"d1": 0.5, "d2": 0.5, "d3": 0.9, "d4": 0.1 + 0.2}}
    path = tmp_path / "run.txt"
    write_run(run, path, tag="mine")
    assert path.read_text().splitlines() == [
        "q1 Q0 d3 1 0.9 mine", "q1 Q0 d2 2 0.5 mine", "q1 Q0 d1 3 0.5 mine",
        "q1 Q0 d4 4 0.30000000000000004 mine", "q2 Q0 a 1 0.5 mine"]
    back = trec.read_run(path)
    assert dict(zip(zip(back["query_id"], back["doc_id"]), back["score"])) == {
        (q, d): s for q, docs in run.items() for d, s in docs.items()}   # scores exact
    assert trec.read_run_tag(path) == "mine"


def test_write_qrels_round_trip_and_gzip(tmp_path, engine):
    qrels = pd.DataFrame({"query_id": ["q1", "q1", "q0"], "doc_id": ["d1", "d9", "x"],
                          "relevance": [2, -2, 0.5]})
    path = tmp_path / "qrels.txt.gz"
    write_qrels(qrels, path)
    assert gzip.decompress(path.read_bytes()).decode().splitlines() == [
        "q0 0 x 0.5", "q1 0 d1 2", "q1 0 d9 -2"]
    back = trec.read_qrels(path)
    assert back["relevance"].tolist() == [0.5, 2.0, -2.0]


def test_writers_refuse_what_could_not_be_read_back(tmp_path):
    with pytest.raises(InputError, match="whitespace"):
        write_run({"q1": {"doc one": 1.0}}, tmp_path / "r.txt")
    with pytest.raises(InputError, match="whitespace"):
        write_qrels({"#q": {"d": 1}}, tmp_path / "q.txt")
    with pytest.raises(InputError, match="tag"):
        write_run({"q1": {"d": 1.0}}, tmp_path / "r.txt", tag="two words")


def test_large_file_is_read_quickly(tmp_path, engine):
    # 200,000 lines: seconds for 10 million means well under a second here on every path
    import time

    n = 200_000
    q = np.repeat(np.arange(n // 1000), 1000)
    text = "".join(f"{a} Q0 doc{b} {b} {b / 7:.6f} run\n" for a, b in zip(q, range(n)))
    path = write(tmp_path, "big.run", text)
    start = time.perf_counter()
    cols = trec.read_run_columns(path)
    elapsed = time.perf_counter() - start
    assert len(cols.query) == n and cols.lines[-1] == n
    assert elapsed < 5.0, elapsed


def test_warnings_are_not_raised_for_clean_files(tmp_path, engine):
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        trec.read_run_columns(write(tmp_path, "run.txt", CLEAN_RUN))


def test_arrow_ids_option_reads_the_same(tmp_path, monkeypatch):
    # ARROW_IDS hands ids over as Arrow string arrays (for a join that encodes them in Arrow)
    path = write(tmp_path, "run.txt", "#c\n" + CLEAN_RUN)
    monkeypatch.setattr(trec, "ENGINE", "pyarrow")
    plain = as_lists(trec.read_run_columns(path))
    monkeypatch.setattr(trec, "ARROW_IDS", True)
    for simple in (True, False):
        with monkeypatch.context() as m:
            if not simple:
                m.setattr(trec, "_split_pyarrow_simple", lambda data, layout: None)
            cols = trec.read_run_columns(write(tmp_path, "run2.txt", CLEAN_RUN) if simple else path)
            assert isinstance(cols.doc, pa.Array) and pa.types.is_large_string(cols.doc.type)
            assert as_lists(cols)[:3] == plain[:3]


_RUN_FIELDS = [["q1", "q2", "#c"], ["Q0"], ["d1", "d2", "d3"], ["1", "2"], ["0.5", "3", "1e2"], ["tag", "é"]]
_QRELS_FIELDS = [["q1", "q2", "#c"], ["0"], ["d1", "d2", "d3"], ["0", "1", "2"]]


@st.composite
def _lines_with_empty_fields(draw, kind):
    """Lines of the right number of fields (the first may start a comment), some of them empty (the
    separator then shows twice in a row, or at a line's start or end), some with a field too many or
    too few."""
    choices = _RUN_FIELDS if kind == "run" else _QRELS_FIELDS
    lines = []
    for _ in range(draw(st.integers(1, 5))):
        fields = [draw(st.sampled_from(c)) for c in choices]
        for i in draw(st.sets(st.integers(0, len(fields) - 1), max_size=2)):
            fields[i] = ""
        shape = draw(st.sampled_from(["same", "same", "same", "one more", "one less"]))
        if shape == "one more":
            fields.append("x")
        elif shape == "one less":
            fields.pop()
        lines.append(draw(st.sampled_from([" ", "\t"])).join(fields) + "\n")
    return "".join(lines)


@settings(max_examples=300, deadline=None)
@given(st.data(), st.sampled_from(["run", "qrels"]))
def test_lines_with_empty_fields_read_alike_on_every_path(tmp_path_factory, data, kind):
    # the fast path converts only the id and value fields: an empty field elsewhere (Q0, rank, tag,
    # iter) must send the lines to the general path, which reads or reports them
    text = data.draw(_lines_with_empty_fields(kind))
    path = write(tmp_path_factory.mktemp("empty"), f"{kind}.txt", text)
    reader = trec.read_run_columns if kind == "run" else trec.read_qrels_columns
    seen = {}
    for engine in ENGINES:
        with pytest.MonkeyPatch.context() as m:
            _set_engine(m, engine)
            try:
                seen[engine] = as_lists(reader(path))
            except InputError as err:
                seen[engine] = str(err)
    assert seen["pyarrow-fast"] == seen["pyarrow-general"] == seen["pandas"], (text, seen)


@pytest.mark.parametrize("text", ["q1 Q0 d1  0.5 tag\n", "q1  d1 1 0.5 tag\n", "q1 Q0 d1 1 0.5 \n",
                                  " Q0 d1 1 0.5 tag\n"])
def test_an_empty_field_is_not_read_as_a_field(tmp_path, text):
    with pytest.raises(InputError, match="run.txt"):
        trec.read_run_columns(write(tmp_path, "run.txt", text))


# ------------------------------------------------- pyarrow's threads and Python memory (abort at exit)
# When read_csv fails (the fast path meets a score that is not a number), tasks on Arrow's thread pool
# may still hold its input after the call has raised. An input over Python memory (pa.py_buffer of the
# bytes) is released there with the GIL, and a process exiting at that moment (the command line after
# its one-line error) aborted with "terminate called without an active exception" (exit -6; CI, once in
# a few hundred runs under load). The readers hand Arrow a copy in memory Arrow owns instead.

def _read_csv_sources(monkeypatch):
    """The sources pyarrow.csv.read_csv is called with, recorded as (address, size)."""
    import pyarrow.csv as pcsv

    seen: list[tuple[int, int]] = []
    real = pcsv.read_csv

    def recording(source, *args, **kwargs):
        seen.append((source.address, source.size))
        return real(source, *args, **kwargs)
    monkeypatch.setattr(pcsv, "read_csv", recording)
    return seen


def _inside(address: int, data: bytes) -> bool:
    start = np.frombuffer(data, dtype=np.uint8).ctypes.data
    return start <= address < start + max(len(data), 1)


@pytest.mark.parametrize("text", [b"q1 Q0 d1 1 0.5 t\nq1 Q0 d2 2 x t\n",      # fast path fails: not a number
                                  b"q1 Q0 d1 1 0.5 t\n# comment\nq1 Q0 d2 2 0.4 t\n",
                                  b"q1 Q0 d1 1 0.5 t\nq1 Q0 d2 2 0.4 t\n"])
def test_pyarrow_never_reads_python_memory(monkeypatch, text):
    seen = _read_csv_sources(monkeypatch)
    monkeypatch.setattr(trec, "ENGINE", "pyarrow")
    layout = trec.layout_of("run", None, text, "my.run")
    try:
        trec.columns_of_lines(text, "my.run", layout)
    except InputError:
        pass
    assert seen, "pyarrow's reader was not used"
    assert not any(_inside(address, text) for address, _ in seen), "Arrow was given the bytes' own memory"
    assert all(size == len(text) for _, size in seen)


@settings(max_examples=150, deadline=None)
@given(st.lists(st.tuples(st.sampled_from(["q1", "q2", "é"]), st.sampled_from(["d1", "d2", "d 3"]),
                          st.sampled_from(["0.5", "1e300", "x", "nan", "-0", ""]),
                          st.sampled_from([" ", "\t", "  "]), st.booleans()), min_size=1, max_size=6))
def test_every_pyarrow_read_gets_arrow_owned_memory_with_the_same_bytes(lines):
    # whatever the lines (valid, malformed, comments), every read_csv source lies outside the Python
    # bytes and holds exactly their content
    import pyarrow.csv as pcsv

    text = "".join(("# c\n" if comment else "") + sep.join([q, "Q0", d, "1", s, "t"]) + "\n"
                   for q, d, s, sep, comment in lines).encode()
    seen, real = [], pcsv.read_csv

    def recording(source, *args, **kwargs):
        seen.append((source.address, source.to_pybytes()))
        return real(source, *args, **kwargs)
    with pytest.MonkeyPatch.context() as mp:
        mp.setattr(pcsv, "read_csv", recording)
        mp.setattr(trec, "ENGINE", "pyarrow")
        try:
            trec.columns_of_lines(text, "my.run", trec.layout_of("run", None, text, "my.run"))
        except InputError:
            pass
    for address, content in seen:
        assert not _inside(address, text)
        assert content == text


# ---------------------------------------------------- numbers beyond float64: read as 0 or infinite
# Regression: '1e400' and '2e400' both became inf and tied (AP 0.75 instead of 0.5, silently), and so did
# '1e-400' and '2e-400' (both 0). A number whose float64 is 0 although its text is not, or infinite
# although its text is finite, is now refused, naming the line; true zeros and infinities are read.

@pytest.mark.parametrize("kind,text,line,fragment", [
    ("run", "q1 Q0 d1 1 0.5 t\nq1 Q0 d2 2 1e400 t\n", 2, "the score '1e400' is too large for a 64-bit float"),
    ("run", "q1 Q0 d1 1 -1.5E+999 t\n", 1, "the score '-1.5E+999' is too large"),
    ("run", "q1 Q0 d1 1 0.5 t\n# c\nq1  Q0 d2 2 1e-400 t\n", 3, "the score '1e-400' is too small for a 64-bit float, "
                                                               "which would read it as 0"),
    ("run", "q1 Q0 d1 1 -0.00002e-320 t\n", 1, "the score '-0.00002e-320' is too small"),
    ("qrels", "q1 0 d1 1e400\n", 1, "the grade '1e400' is too large"),
    ("qrels", "q1 0 d1 0\nq1 0 d2 1e-400\n", 2, "the grade '1e-400' is too small"),
    ("run", "q1 Q0 d1 1 0 t\nq1 Q0 d2 2 0." + "0" * 330 + "1 t\n", 2, "is too small"),     # no exponent
    ("run", "q1 Q0 d1 1 0." + "0" * 330 + "1e+5 t\n", 1, "is too small"),
    ("run", "q1 Q0 d1 1 1" + "0" * 320 + " t\n", 1, "is too large"),
])
def test_numbers_lost_in_float64_are_refused(tmp_path, engine, kind, text, line, fragment):
    path = write(tmp_path, kind, text)
    err = error_of(trec.read_run_columns if kind == "run" else trec.read_qrels_columns, path)
    check_error(err, path, line, fragment)


def test_zeros_infinities_and_subnormals_are_read(tmp_path, engine):
    text = ("q1 Q0 a 1 0 t\nq1 Q0 b 2 -0.0e-400 t\nq1 Q0 c 3 0e999 t\nq1 Q0 d 4 -INF t\nq1 Q0 e 5 +Infinity t\n"
            "q1 Q0 f 6 5e-324 t\nq1 Q0 g 7 1.7976931348623157e308 t\n")
    values = trec.read_run_columns(write(tmp_path, "run", text)).value.tolist()
    assert values == [0.0, 0.0, 0.0, -math.inf, math.inf, 5e-324, 1.7976931348623157e308]


@settings(max_examples=200, deadline=None)
@given(st.sampled_from(["", "-", "+"]), st.text("0123456789", min_size=1, max_size=4),
       st.text("0123456789", max_size=3), st.integers(-420, 420))
def test_property_a_score_is_read_as_python_reads_it_or_refused_when_lost(sign, whole, frac, exponent):
    # the reference: Decimal (exact) says whether the text is zero; Python's float says what float64 reads
    text = f"{sign}{whole}{'.' + frac if frac else ''}e{exponent}"
    exact, got = Decimal(text), float(text)
    lost = (exact != 0 and got == 0) or math.isinf(got)
    with tempfile.TemporaryDirectory() as tmp:
        path = write(Path(tmp), "run", f"q1 Q0 d1 1 {text} t\n")
        if lost:
            with pytest.raises(InputError, match="too (small|large) for a 64-bit float"):
                trec.read_run_columns(path)
        else:
            assert trec.read_run_columns(path).value.tolist() == [got]
