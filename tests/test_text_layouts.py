"""How a text file's format is chosen and confirmed (issue 27): a 3-field run is never guessed, MS MARCO
ranks are checked line by line, comma-separated files and files in other encodings are named as such.

Every case is read whole and streamed in small blocks (and small reads): both give the same decision
and the same error, at the same line.
"""

from __future__ import annotations

import codecs
import gzip

import numpy as np
import pytest
from click.testing import CliRunner
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st

import tierank
from tierank.cli import main
from tierank.errors import InputError
from tierank.io import blocks, trec
from tierank.io.blocks import trec_blocks
from tierank.io.trec import TextInput


def use_engine(monkeypatch, engine):
    """Parse with pyarrow's fast path, its general path, or pandas (the readers give the same results)."""
    monkeypatch.setattr(trec, "ENGINE", "pandas" if engine == "pandas" else "pyarrow")
    monkeypatch.setattr(trec, "_split_pyarrow_simple",   # set at each call: hypothesis draws again and again
                        (lambda data, layout: None) if engine == "pyarrow-general" else FAST_PATH)


FAST_PATH = trec._split_pyarrow_simple
ENGINES = ["pyarrow-fast", "pyarrow-general", "pandas"]


def read_whole_and_streamed(path, kind="run", format=None, block_rows=1):
    """(whole, streamed): the columns or the InputError of each reading (streamed: runs only)."""
    def catch(fn):
        try:
            return fn()
        except InputError as err:
            return err
    source = TextInput(path, format)
    read = trec.read_run_columns if kind == "run" else trec.read_qrels_columns
    whole = catch(lambda: read(source))
    if kind != "run":
        return whole, None
    streamed = catch(lambda: [c for c, _, _ in trec_blocks(str(path), block_rows, progress=False, format=format)])
    return whole, streamed


def same_error(path, kind="run", format=None):
    """The error of the whole file's reading, checked to be the streamed reading's too (message and line)."""
    whole, streamed = read_whole_and_streamed(path, kind, format)
    assert isinstance(whole, InputError), whole
    if kind == "run":
        assert isinstance(streamed, InputError), streamed
        assert (streamed.message, streamed.line, streamed.file) == (whole.message, whole.line, whole.file)
    return whole


# ------------------------------------------------------------------------------- 3-field runs


QRELS = "q1 0 d1 1\n"


@pytest.mark.parametrize("third", [("30", "20", "10"), ("1", "2", "3"), ("0.9", "0.5", "0.1")])
def test_a_three_field_run_is_never_guessed(tmp_path, third):
    """A run of lines `qid<TAB>docid<TAB>x` could be MS MARCO ranks or scores: the reading is not guessed.
    (Failed before: 30/20/10 was read as ranks, reversed: RR 1/3, exit 0; 1/2/3 as ranks, silently.)"""
    path = tmp_path / "run.tsv"
    path.write_text("".join(f"q1\td{i + 1}\t{x}\n" for i, x in enumerate(third)))
    (tmp_path / "qrels.txt").write_text(QRELS)
    err = same_error(path)
    assert err.line == 1 and "--run-format msmarco" in err.message and "format='msmarco'" in err.message
    for stream_ in (None, False):
        with pytest.raises(InputError) as info:
            tierank.evaluate(str(tmp_path / "qrels.txt"), str(path), ["RR"], stream=stream_)
        assert str(info.value) == str(err)
    out = CliRunner().invoke(main, [str(tmp_path / "qrels.txt"), str(path), "-m", "RR"])
    assert out.exit_code == 2 and "--run-format msmarco" in out.stderr and "RR" not in out.stdout


@pytest.mark.parametrize("read_bytes", [1, 2, 5, 1 << 22])
def test_the_first_data_line_decides_after_comments_and_a_bom(tmp_path, monkeypatch, read_bytes):
    """The first data line decides, whatever the reads, also when it is the last line and has no line end.
    (Failed before: the whole file and small reads read such a file as TREC, 'expected at least 6 fields'.)"""
    monkeypatch.setattr(blocks, "_READ_BYTES", read_bytes)
    path = tmp_path / "run.tsv"
    path.write_bytes(b"\xef\xbb\xbf# ranks\n\nq1\td1\t1\nq1\td2\t2\n")
    assert same_error(path).line == 3
    path.write_bytes(b"\xef\xbb\xbf\n# ranks\nq1\td1\t1")
    err = same_error(path)
    assert err.line == 3 and "--run-format msmarco" in err.message


def test_explicit_msmarco_reads_ranks(tmp_path):
    """With the format given, the ranks are read: 1 best, equal ranks tie (hand computation: the relevant
    d1 at rank 1 gives RR 1; d1 tied with d2 at rank 1 gives (1 + 1/2) / 2 = 0.75)."""
    qrels = tmp_path / "qrels.txt"
    qrels.write_text(QRELS)
    path = tmp_path / "run.tsv"
    for text, rr in [("q1\td1\t1\nq1\td2\t2\nq1\td3\t3\n", 1.0), ("q1\td2\t1\nq1\td1\t1\nq1\td3\t3\n", 0.75),
                     ("q1\td2\t1\nq1\td3\t1\nq1\td1\t2\n", 1 / 3)]:   # dense ranks: d1 third
        path.write_text(text)
        for stream_ in (None, False):
            got = tierank.evaluate(str(qrels), TextInput(str(path), "msmarco"), ["RR"], stream=stream_).mean["RR"]
            assert got == pytest.approx(rr)
        out = CliRunner().invoke(main, [str(qrels), str(path), "--run-format", "msmarco", "-m", "RR", "-f", "json"])
        assert out.exit_code == 0, out.output


BAD_RANKS = {   # text, bad line, words of the message
    "fractional": ("q1\td1\t1\nq1\td2\t0.5\n", 2, "the rank '0.5' is not a positive integer"),
    "negative": ("q1\td1\t1\nq1\td2\t2\nq1\td3\t-7e3\n", 3, "the rank '-7e3' is not a positive integer"),
    "zero": ("q1\td1\t0\n", 1, "the rank '0' is not a positive integer"),
    "scores going down": ("q1\td1\t30\nq1\td2\t20\n", 1, "query 'q1' starts at rank 30, not 1"),
    "going down": ("q1\td1\t1\nq1\td2\t2\nq1\td3\t1\n", 3, "the rank 1 comes after rank 2 of query 'q1'"),
    "a gap": ("q1\td1\t1\nq1\td2\t3\n", 2, "the rank 3 is on line 2 of query 'q1'"),
    "not restarting": ("q1\td1\t1\nq1\td2\t2\nq2\td3\t3\n", 3, "query 'q2' starts at rank 3, not 1"),
    "comes back": ("q1\td1\t1\nq2\td3\t1\n\n# x\nq1\td2\t2\n", 5, "query 'q1' comes back after other queries"),
}


@pytest.mark.parametrize("engine", ENGINES)
@pytest.mark.parametrize("case", sorted(BAD_RANKS))
def test_explicit_msmarco_checks_every_rank(tmp_path, monkeypatch, case, engine):
    """(Failed before: every one of these was read, 0.5 and -7e3 as ranks that order the documents.)"""
    use_engine(monkeypatch, engine)
    text, line, words = BAD_RANKS[case]
    path = tmp_path / "run.tsv"
    path.write_text(text)
    err = same_error(path, format="msmarco")
    assert err.line == line and words in err.message, err
    qrels = tmp_path / "qrels.txt"
    qrels.write_text(QRELS)
    out = CliRunner().invoke(main, [str(qrels), str(path), "--run-format", "msmarco", "-m", "RR"])
    assert out.exit_code == 2 and f"run.tsv:{line}: {words}" in out.stderr


def oracle_rank_error(rows):
    """The first data row (0-based) whose rank breaks the rule, by a plain loop: within each run of
    consecutive lines of one query, the rank at place p (1, 2, ...) is an integer, at least the rank
    before it (place 1: at least 1) and at most p; and a query whose lines come back after another
    query's is out of place at its first line back."""
    previous_query, place, previous = None, 0, 1.0
    over = set()
    for i, (query, rank) in enumerate(rows):
        if query != previous_query:
            if query in over:
                return i
            over.add(previous_query)
            previous_query, place, previous = query, 0, 1.0
        place += 1
        if not (rank == int(rank) and previous <= rank <= place):
            return i
        previous = rank
    return None


@st.composite
def three_field_runs(draw):
    """Small MS MARCO runs: queries of 1-5 lines (a query may come back), ranks in order, tied, out of
    order, fractional, zero, negative or not restarting, blank and comment lines anywhere."""
    rows, lines = [], []
    for _ in range(draw(st.integers(1, 6))):
        query = f"q{draw(st.integers(0, 3))}"
        rank = 0.0
        for place in range(1, draw(st.integers(1, 5)) + 1):
            step = draw(st.sampled_from(["next", "next", "next", "tie", "jump", "back", "half", "minus", "zero",
                                         "place"]))
            rank = {"next": rank + 1, "tie": max(rank, 1), "jump": rank + 2, "back": rank - 1, "half": rank + 0.5,
                    "minus": -7e3, "zero": 0.0, "place": place}[step]
            rows.append((query, rank))
            lines.extend(draw(st.lists(st.sampled_from(["", "# c"]), max_size=2)))
            lines.append(f"{query}\td{len(rows)}\t{int(rank) if rank == int(rank) else rank}")
    return rows, "\n".join(lines) + draw(st.sampled_from(["", "\n"]))


@settings(max_examples=120, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(run=three_field_runs(), block_rows=st.integers(1, 6), read_bytes=st.integers(1, 30),
       piece_lines=st.integers(1, 6), engine=st.sampled_from(ENGINES))
def test_ranks_are_checked_alike_whole_and_streamed(tmp_path, monkeypatch, run, block_rows, read_bytes, piece_lines,
                                                    engine):
    """Whatever the blocks and reads (and the pieces the whole file is parsed in), a streamed MS MARCO run
    is refused at the line where the whole file's reading refuses it (and where a plain loop finds the
    first broken rank), or read to the same rows; without the format, both refuse the file at its first
    data line. (Blocks and pieces that start inside a query go on with its ranks: trec.RanksBefore.)"""
    monkeypatch.setattr(blocks, "_READ_BYTES", read_bytes)
    monkeypatch.setattr(trec, "_PIECE_LINES", piece_lines)
    use_engine(monkeypatch, engine)
    rows, text = run
    path = tmp_path / "run.tsv"
    path.write_text(text)
    whole, streamed = read_whole_and_streamed(path, format="msmarco", block_rows=block_rows)
    bad = oracle_rank_error(rows)
    if bad is None:
        assert not isinstance(whole, InputError) and not isinstance(streamed, InputError), (whole, streamed)
        assert np.asarray(whole.value).tolist() == [-r for _, r in rows]
        assert np.concatenate([c.value for c in streamed]).tolist() == np.asarray(whole.value).tolist()
        assert np.concatenate([c.lines for c in streamed]).tolist() == np.asarray(whole.lines).tolist()
    else:
        assert isinstance(whole, InputError) and isinstance(streamed, InputError), (whole, streamed)
        assert (streamed.message, streamed.line) == (whole.message, whole.line)
        data_lines = [n for n, line in enumerate(text.split("\n"), 1) if line and not line.startswith("#")]
        assert whole.line == data_lines[bad]
    undetected = same_error(path)
    assert undetected.line == next(n for n, line in enumerate(text.split("\n"), 1) if line and line[0] != "#")


# ------------------------------------------------------------------------------------------- qrels


def test_qrels_formats(tmp_path):
    """BEIR qrels by their header (tabs or spaces, any case); three fields without it: not guessed.
    (Failed before: a header with spaces read as TREC, 'expected exactly 4 fields'; three fields without
    a header said nothing of BEIR.)"""
    path = tmp_path / "qrels.tsv"
    path.write_text("query-id corpus-id score\nq1 d1 2\n")
    got = trec.read_qrels(path)
    assert got["relevance"].tolist() == [2.0] and got["doc_id"].tolist() == ["d1"]
    path.write_text("Query-ID\tCorpus-ID\tScore\nq1\td1\t2\n")
    assert trec.read_qrels(path)["relevance"].tolist() == [2.0]
    path.write_text("# judged\nq1\td1\t2\n")
    err = same_error(path, "qrels")
    assert err.line == 2 and "--qrels-format beir" in err.message and "format='beir'" in err.message
    assert trec.read_qrels(path, format="beir")["relevance"].tolist() == [2.0]
    path.write_text("q1 0 d1 2\n")
    assert trec.read_qrels(path)["relevance"].tolist() == [2.0]
    out = CliRunner().invoke(main, [str(path), str(path), "-m", "RR"])   # qrels given as the run: 4 fields
    assert out.exit_code == 2 and "expected at least 6 fields" in out.stderr


# --------------------------------------------------------------------------------------------- CSV


@pytest.mark.parametrize("kind, text", [("run", "qid,docid,score\nq1,d1,0.5\n"), ("run", "q1,d1,0.5\n"),
                                        ("run", "q1, d1, 0.5\n"), ("qrels", "query_id,doc_id,relevance\nq1,d1,1\n")])
def test_a_csv_file_is_named_as_such(tmp_path, kind, text):
    """(Failed before: 'expected at least 6 fields ..., found 1', nothing about the commas.)"""
    path = tmp_path / f"{kind}.csv"
    path.write_text(text)
    err = same_error(path, kind)
    assert err.line == 1 and "comma-separated" in err.message and "pandas.read_csv" in err.message
    if kind == "run":
        assert "comma-separated" in same_error(path, kind, format="trec").message


# ---------------------------------------------------------------------------------------- encodings


TEXT = "q1 Q0 d1 1 0.5 t\nq1 Q0 d2 2 0.25 t\n"


@pytest.mark.parametrize("encoding, name, source", [
    ("utf-16", "UTF-16 (little-endian, with a byte order mark)", "UTF-16"),   # Python writes a BOM
    ("utf-16-le", "UTF-16 (little-endian, no byte order mark)", "UTF-16LE"),
    ("utf-16-be", "UTF-16 (big-endian, no byte order mark)", "UTF-16BE"),
    ("utf-32", "UTF-32 (little-endian, with a byte order mark)", "UTF-32"),
])
def test_utf16_files_name_the_encoding(tmp_path, encoding, name, source):
    """(Failed before: 'not a text file: NUL byte' or 'byte 0xff is not UTF-8'.)"""
    path = tmp_path / "run.txt"
    path.write_bytes(TEXT.encode(encoding))
    assert path.read_bytes().startswith(codecs.BOM_UTF16_LE) == (encoding in ("utf-16", "utf-32"))
    err = same_error(path)
    assert err.line == 1 and name in err.message and f"iconv -f {source} -t UTF-8 " in err.message, err
    gz = tmp_path / "run.txt.gz"
    gz.write_bytes(gzip.compress(TEXT.encode(encoding)))
    assert f"zcat {gz} | iconv -f {source} -t UTF-8 " in same_error(gz).message


def test_latin1_files_name_the_encoding(tmp_path):
    """(Failed before: 'not a text file: byte 0xe9 is not UTF-8'.)"""
    path = tmp_path / "run.txt"
    path.write_bytes("q1 Q0 d1 1 0.5 t\nq1 Q0 caf\u00e9 2 0.25 t\n".encode("latin-1"))
    err = same_error(path)
    assert err.line == 2 and "column 10" in err.message and "Latin-1" in err.message
    assert f"iconv -f LATIN1 -t UTF-8 {path} > " in err.message
    qrels = tmp_path / "qrels.txt"
    qrels.write_text(QRELS)
    out = CliRunner().invoke(main, [str(qrels), "-", "-m", "RR"], input=path.read_bytes())
    assert out.exit_code == 2 and "<stdin>:2: " in out.stderr and "| iconv -f LATIN1 -t UTF-8 | tierank" in out.stderr


@pytest.mark.parametrize("encoding", ["utf-16-le", "utf-16-be"])
def test_utf16_after_a_blank_line_does_not_guess_the_byte_order(tmp_path, encoding):
    """A line after the first starts next to a line feed's NUL, on either side: its byte order cannot be
    told from it (whole or streamed, the same words)."""
    path = tmp_path / "run.txt"
    path.write_bytes(("\n" + TEXT).encode(encoding))
    err = same_error(path)
    first = err.line == 1   # big-endian: the NUL of the first line feed is on line 1
    assert ("big-endian, no byte order mark" in err.message) == (first and encoding == "utf-16-be")
    assert first or "UTF-16 (no byte order mark; little-endian, UTF-16LE, unless it is big-endian" in err.message


def test_binary_files_are_still_not_text(tmp_path):
    path = tmp_path / "run.txt"
    path.write_bytes(b"q1 Q0 d1 1 0.5 t\n\x00\x01binary\n")
    err = same_error(path)
    assert err.line == 2 and err.message == "not a text file: NUL byte, at column 1"
    path.write_bytes(b"q1 Q0 d1 1 0.5 t\na\x00\n")   # one NUL: not taken for UTF-16
    assert same_error(path).message == "not a text file: NUL byte, at column 2"


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(lines=st.lists(st.sampled_from(["q1 Q0 d1 1 0.5 t", "q2\tQ0\td2\t1\t2\tt", "# note", "", "q1 d1 1"]),
                      min_size=1, max_size=6).filter(lambda ls: any(ls)),
       encoding=st.sampled_from(["utf-16", "utf-16-le", "utf-16-be", "utf-32"]), end=st.sampled_from(["\n", "\r\n"]),
       block_rows=st.integers(1, 4), read_bytes=st.integers(1, 9))
@example(lines=["", "q1 Q0 d1 1 0.5 t"], encoding="utf-16-le", end="\r\n", block_rows=1, read_bytes=1)
def test_any_utf16_text_is_named_alike_whole_and_streamed(tmp_path, monkeypatch, lines, encoding, end, block_rows,
                                                          read_bytes):
    """Any text in UTF-16 or UTF-32 (blank and comment lines first or not, LF or CRLF) is refused as such,
    with the iconv command, read whole or streamed in small blocks and reads. (The example failed before:
    a blank first line with CRLF, in UTF-16LE, was 'a carriage return without a line feed'.)"""
    monkeypatch.setattr(blocks, "_READ_BYTES", read_bytes)
    path = tmp_path / "run.txt"
    path.write_bytes((end.join(lines) + end).encode(encoding))
    whole, streamed = read_whole_and_streamed(path, block_rows=block_rows)
    assert isinstance(whole, InputError) and isinstance(streamed, InputError), (whole, streamed)
    assert (streamed.message, streamed.line) == (whole.message, whole.line)
    family = "UTF-32" if encoding == "utf-32" else "UTF-16"
    assert whole.message.startswith(f"not UTF-8 text: the file is {family} (") and "iconv -f UTF-" in whole.message


def test_a_query_that_comes_back_is_refused(tmp_path):
    """Regression (hostile probe): an MS MARCO run whose query q1 comes back restarting at rank 1 (two runs
    concatenated) was merged, the second d4 tying with d1 at rank 1 (NumRet 4, AP 0.8542, exit 0)."""
    qrels = tmp_path / "qrels.txt"
    qrels.write_text("q1 0 d1 1\nq1 0 d3 1\nq2 0 d2 1\n")
    path = tmp_path / "run.tsv"
    path.write_text("q1\td1\t1\nq1\td3\t2\nq2\td2\t1\nq1\td4\t1\n")
    for stream_ in (None, False):
        for block_rows in (1, 2, 1000):
            with pytest.raises(InputError, match=r"run.tsv:4: query 'q1' comes back after other queries"):
                tierank.evaluate(str(qrels), TextInput(str(path), "msmarco"), ["AP"], stream=stream_,
                                 block_rows=block_rows)


def test_a_beir_header_after_blank_and_comment_lines_is_skipped(tmp_path):
    """Regression (hostile probe): detection found BEIR's header after a blank or comment line, but the
    reader skipped only a header on the file's first line ('the grade 'score' is not a number')."""
    run = tmp_path / "run.txt"
    run.write_text("q1 Q0 d1 1 2 t\nq1 Q0 d2 2 1 t\n")
    for head in ("\n", "# judged in 2026\n", "\n# c\n\n"):
        qrels = tmp_path / "qrels.tsv"
        qrels.write_text(head + "query-id\tcorpus-id\tscore\nq1\td2\t1\n")
        assert tierank.evaluate(str(qrels), str(run), ["RR"]).mean == {"RR": 0.5}   # d2 at rank 2
        qrels.write_text(head + "query-id\tcorpus-id\tscore\nq1\td2\tx\n")
        lines = head.count("\n") + 2
        with pytest.raises(InputError, match=rf"qrels.tsv:{lines}: the grade 'x' is not a number"):
            tierank.evaluate(str(qrels), str(run), ["RR"])
