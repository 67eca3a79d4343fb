"""Where the bytes of an input come from: pipes, FIFOs, ``/dev/stdin`` and process substitution read like
the same bytes in a regular file (each input opened once, what it holds told from the bytes read), a
Parquet input that is not a regular file is a clear error (:mod:`tierank.io.source`)."""

from __future__ import annotations

import gzip
import io
import os
import re
import shutil
import subprocess
import sys
import threading
from contextlib import contextmanager

import numpy as np
import pandas as pd
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import tierank
from tierank import InputError
from tierank.io import blocks, trec
from tierank.io.trec import TextInput
from tierank.engine.core import evaluate_lists, prepare_lists
from tierank.engine.options import Options
from tierank.engine.streamed import evaluate_file

pytestmark = pytest.mark.skipif(not os.path.exists("/dev/fd/0") or sys.platform == "win32",
                                reason="needs /dev/fd and POSIX pipes")

N_LINES = 400   # 64-byte lines: 25,600 bytes, over three 8 KiB buffers
TIMEOUT = 120   # seconds: a command that hangs on a FIFO fails instead of blocking the suite


def _run_lines(order: list[int] | None = None) -> bytes:
    """400 run lines of exactly 64 bytes: 4 queries of 100 documents, scores falling with the rank."""
    lines = []
    for i in order if order is not None else range(N_LINES):
        line = f"q{i // 100} Q0 doc{i:05d} {i % 100 + 1} {1000 - i % 100} runtag"
        lines.append(line.ljust(63) + "\n")
    assert all(len(line) == 64 for line in lines)
    return "".join(lines).encode()


QRELS = b"".join(f"q{q} 0 doc{q * 100 + 7:05d} 1\nq{q} 0 doc{q * 100 + 60:05d} 2\n".encode() for q in range(4))


@pytest.fixture
def files(tmp_path):
    (tmp_path / "run.txt").write_bytes(_run_lines())
    (tmp_path / "run.txt.gz").write_bytes(gzip.compress(_run_lines()))
    # not grouped by query: a query comes back after others (a streamed run's second pass)
    order = [i for pair in zip(range(0, 200), range(200, 400)) for i in pair]
    (tmp_path / "shuffled.txt").write_bytes(_run_lines(order))
    (tmp_path / "qrels.txt").write_bytes(QRELS)
    return tmp_path


@contextmanager
def pipe_path(data: bytes):
    """A path naming the read end of a pipe (``/dev/fd/N``, as bash's ``<(...)``) that a thread fills
    with ``data``: it can be read once, from its start."""
    r, w = os.pipe()

    def write() -> None:
        try:
            with os.fdopen(w, "wb") as fh:
                fh.write(data)
        except BrokenPipeError:
            pass
    writer = threading.Thread(target=write, daemon=True)
    writer.start()
    try:
        yield f"/dev/fd/{r}"
    finally:
        os.close(r)   # the writer, if still blocked, gets a broken pipe
        writer.join(timeout=TIMEOUT)


def _same_columns(a, b):
    for field in ("query", "doc", "value", "lines"):
        assert np.array_equal(np.asarray(getattr(a, field)), np.asarray(getattr(b, field))), field


def _cli(args: list[str], *, stdin: bytes | None = None, shell: bool = False) -> subprocess.CompletedProcess:
    """The command, ``stdin`` written to its standard input through a pipe."""
    command = [sys.executable, "-m", "tierank", *map(str, args)]
    if shell:   # bash's process substitution, in the arguments as given
        command = ["bash", "-c", " ".join([f"'{sys.executable}'", "-m", "tierank", *map(str, args)])]
    return subprocess.run(command, input=stdin, capture_output=True, timeout=TIMEOUT, env=dict(os.environ))


def _values(out: bytes) -> dict:
    """measure -> value of the CLI's csv output (the run's name left out: it is the path's)."""
    frame = pd.read_csv(io.StringIO(out.decode()))
    return dict(zip(frame["measure"], frame["value"]))


MEASURES = ["-m", "NumRet", "-m", "AP", "-m", "nDCG@10", "-f", "csv"]


# ------------------------------------------------------------------------------ the command line


@pytest.mark.skipif(shutil.which("bash") is None, reason="needs bash")
def test_pipes_given_as_paths_read_every_byte(files):
    """Regression (issue 27, item 1): ``cat run | tierank qrels /dev/stdin``, ``<(cat run)`` and
    ``<(cat qrels)`` lost their first 8 KiB (the gzip/Parquet check read through a buffer, closed the
    file and opened the path again): NumRet 272 for a run of 400 lines, exit 0."""
    want = _cli([files / "qrels.txt", files / "run.txt", *MEASURES])
    assert want.returncode == 0, want.stderr
    assert _values(want.stdout)["NumRet"] == N_LINES
    for run in ("run.txt", "run.txt.gz", "shuffled.txt"):
        got = _cli([files / "qrels.txt", "/dev/stdin", *MEASURES], stdin=(files / run).read_bytes())
        assert got.returncode == 0, got.stderr
        assert _values(got.stdout) == _values(want.stdout), run
        got = _cli([files / "qrels.txt", f"<(cat {files / run})", *MEASURES], shell=True)
        assert got.returncode == 0, got.stderr
        assert _values(got.stdout) == _values(want.stdout), run
    big_qrels = files / "big.qrels"   # qrels over 8 KiB, the judged lines at their end
    big_qrels.write_bytes(b"".join(f"q{q} 0 unretrieved{i:05d} 0\n".encode() for q in range(4) for i in range(200))
                          + QRELS)
    want = _cli([big_qrels, files / "run.txt", *MEASURES])
    got = _cli([f"<(cat {big_qrels})", files / "run.txt", *MEASURES], shell=True)
    assert want.returncode == 0 and got.returncode == 0, got.stderr
    assert _values(got.stdout) == _values(want.stdout)


def test_fifo_is_read_once_and_does_not_hang(files):
    """Regression: a FIFO made with mkfifo hung (opened a second time, with no writer left)."""
    want = _values(_cli([files / "qrels.txt", files / "run.txt", *MEASURES]).stdout)
    for run_fifo in (True, False):
        fifo = files / f"fifo-{run_fifo}"
        os.mkfifo(fifo)
        data = (files / ("shuffled.txt" if run_fifo else "qrels.txt")).read_bytes()

        def write(fifo=fifo, data=data) -> None:
            try:
                with open(fifo, "wb") as fh:   # blocks until the command opens it
                    fh.write(data)
            except BrokenPipeError:
                pass
        writer = threading.Thread(target=write, daemon=True)
        writer.start()
        args = [files / "qrels.txt", fifo] if run_fifo else [fifo, files / "shuffled.txt"]
        try:
            got = _cli([*args, *MEASURES])
        finally:
            if writer.is_alive():   # the command did not open the FIFO: let the writer go
                with open(fifo, "rb") as fh:
                    fh.read()
            writer.join(TIMEOUT)
        assert got.returncode == 0, got.stderr
        assert _values(got.stdout) == want


def test_run_tag_of_a_pipe_comes_from_the_bytes_read(files):
    """``--format trec`` prints the runid, read from the first line: of a pipe, the bytes the evaluation
    read (opening it again would find nothing, or hang)."""
    for path in ("/dev/stdin", "-"):
        got = _cli([files / "qrels.txt", path, "-m", "runid", "-m", "NumRet", "-f", "trec"],
                   stdin=(files / "run.txt.gz").read_bytes())
        assert got.returncode == 0, got.stderr
        assert got.stdout.decode().split() == ["runid", "all", "runtag", "num_ret", "all", str(N_LINES)]


def test_parquet_from_a_pipe_is_a_clear_error(files):
    pd.DataFrame({"qid": ["q0"], "docno": ["doc00000"], "score": [1.0]}).to_parquet(files / "run.parquet")
    ok = _cli([files / "qrels.txt", files / "run.parquet", "-m", "NumRet", "-f", "csv"])
    assert ok.returncode == 0 and _values(ok.stdout)["NumRet"] == 1
    for args in (["/dev/stdin"], ["-"]):
        got = _cli([files / "qrels.txt", *args, "-m", "NumRet"], stdin=(files / "run.parquet").read_bytes())
        assert got.returncode == 2
        lines = got.stderr.decode().splitlines()
        assert len(lines) == 1 and "a Parquet file needs random access" in lines[0], lines
    with pipe_path((files / "run.parquet").read_bytes()) as path:
        with pytest.raises(InputError, match="a Parquet file needs random access"):
            tierank.io.trec.read_run(path, format="parquet")
    with pipe_path((files / "run.parquet").read_bytes()) as path:
        with pytest.raises(InputError, match="a Parquet file needs random access"):
            tierank.evaluate(str(files / "qrels.txt"), path, ["AP"])


# ------------------------------------------------------------------------------------- the library


@pytest.mark.parametrize("stream_mode", [None, False])
@pytest.mark.parametrize("run", ["run.txt", "run.txt.gz", "shuffled.txt"])
def test_library_reads_a_pipe_as_the_file(files, stream_mode, run):
    """tierank.evaluate on pipes (run, qrels), streamed (a run not grouped by query: the second pass
    reads the copy made while the pipe was read) and in memory, equals the files' evaluation."""
    qrels = str(files / "qrels.txt")
    want = tierank.evaluate(qrels, str(files / run), ["NumRet", "AP", "nDCG@10"], stream=stream_mode, block_rows=64)
    assert want.mean["NumRet"] == N_LINES   # summed over queries, as trec_eval sums num_ret
    with pipe_path((files / run).read_bytes()) as path:
        got = tierank.evaluate(qrels, path, ["NumRet", "AP", "nDCG@10"], stream=stream_mode, block_rows=64)
    assert got.mean == want.mean
    pd.testing.assert_frame_equal(got.per_query, want.per_query)
    with pipe_path(QRELS) as path:
        got = tierank.evaluate(path, str(files / run), ["NumRet", "AP", "nDCG@10"], stream=stream_mode, block_rows=64)
    assert got.mean == want.mean


def test_a_pipe_read_once_cannot_be_read_again(files):
    """A TextInput of a pipe keeps its first lines: the run's tag needs no second read."""
    with pipe_path(gzip.compress((files / "run.txt").read_bytes())) as path:
        source = TextInput(path)
        cols = trec.read_run_columns(source)
        assert len(cols.value) == N_LINES
        assert trec.read_run_tag(source) == "runtag"


_RUN_LINE = st.tuples(st.integers(0, 5), st.integers(0, 10 ** 6), st.integers(-50, 50), st.integers(0, 90),
                      st.sampled_from(["\n", "\r\n"]))


@settings(max_examples=30, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(lines=st.lists(_RUN_LINE, min_size=1, max_size=600), compress=st.booleans(),
       read_bytes=st.sampled_from([7, 4096, 8192, 8193, 65536, 1 << 22]), block_rows=st.integers(1, 300))
def test_reading_a_pipe_equals_reading_the_file(tmp_path, monkeypatch, lines, compress, read_bytes, block_rows):
    """For runs around and beyond 8 KiB (lines padded to random lengths), whatever the read size:
    the rows read from a pipe are those of the same bytes in a regular file, in memory and streamed."""
    text = "".join(f"q{q} Q0 d{d} 1 {s} {'t' * (1 + pad)}{end}" for q, d, s, pad, end in lines).encode()
    data = gzip.compress(text) if compress else text
    path = tmp_path / "run"
    path.write_bytes(data)
    monkeypatch.setattr(blocks, "_READ_BYTES", read_bytes)
    monkeypatch.setattr(trec, "_READ_BYTES", read_bytes)
    try:
        want = trec.read_run_columns(str(path))
    except InputError as err:   # a document twice is the join's error, not the reader's
        pytest.fail(f"the file itself is refused: {err}")
    with pipe_path(data) as pipe:
        _same_columns(trec.read_run_columns(pipe), want)
    want_blocks = [(c.query, c.value, first) for c, first, _ in blocks.trec_blocks(str(path), block_rows, False)]
    with pipe_path(data) as pipe:
        got_blocks = [(c.query, c.value, first) for c, first, _ in blocks.trec_blocks(pipe, block_rows, False)]
    assert len(got_blocks) == len(want_blocks)
    for (q1, v1, f1), (q2, v2, f2) in zip(got_blocks, want_blocks):
        assert f1 == f2 and list(q1) == list(q2) and np.array_equal(v1, v2)


# ------------------------------------------------------------------------------ temporary files

_LAUNCH = ("import sys, tierank.engine.streamed as s; s.DEFAULT_BLOCK_ROWS = 500; from tierank.cli import main; "
           "sys.argv[0] = 'tierank'; main()")


@pytest.mark.parametrize("from_pipe", [False, True])
def test_sigterm_in_the_second_pass_removes_the_temporary_files(tmp_path, from_pipe):
    """Regression (issue 27, item 11): SIGTERM while a run not grouped by query is read a second time
    left its temporary files (about 370 MB each time on a large run); SIGINT cleaned up. The command
    now ends as on an exception, exit status 128 + 15, and TMPDIR is left empty."""
    import signal
    import time

    n_queries, n_docs = 300, 200   # 60,000 lines, queries interleaved: blocks of 500 lines come back
    run = tmp_path / "run.txt"
    run.write_bytes(b"".join(f"q{q} Q0 d{d} 1 {d % 7} t\n".encode() for d in range(n_docs) for q in range(n_queries)))
    qrels = tmp_path / "qrels.txt"
    qrels.write_bytes(b"".join(f"q{q} 0 d{q % n_docs} 1\n".encode() for q in range(n_queries)))
    tmpdir = tmp_path / "tmp"
    tmpdir.mkdir()
    env = dict(os.environ, TMPDIR=str(tmpdir))
    args = [sys.executable, "-c", _LAUNCH, str(qrels), "-" if from_pipe else str(run), "-m", "AP", "nDCG@10"]
    proc = subprocess.Popen(args, stdin=subprocess.PIPE if from_pipe else subprocess.DEVNULL,
                            stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, env=env)
    if from_pipe:
        proc.stdin.write(run.read_bytes())
        proc.stdin.close()
        proc.stdin = None   # written: communicate() has nothing to send
    deadline = time.monotonic() + TIMEOUT
    try:
        # the second pass has begun once its directory holds a bucket file
        while not any(p.suffix == ".arrow" for p in tmpdir.rglob("*")):
            assert proc.poll() is None, "the command ended before its second pass was seen"
            assert time.monotonic() < deadline, "no second pass seen"
            time.sleep(0.002)
        proc.send_signal(signal.SIGTERM)
        _, err = proc.communicate(timeout=TIMEOUT)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
    assert list(tmpdir.iterdir()) == []
    assert proc.returncode == 128 + signal.SIGTERM, err


@pytest.mark.parametrize("from_pipe", [False, True])
def test_an_error_in_the_second_pass_removes_the_temporary_files(files, monkeypatch, tmp_path, from_pipe):
    """The library keeps no temporary file after an exception in the second pass (a bucket file is
    removed as the loop over the buckets stops; the copy of a pipe is unlinked from the start)."""
    import tempfile

    tmpdir = tmp_path / "tmp"
    tmpdir.mkdir()
    monkeypatch.setattr(tempfile, "tempdir", str(tmpdir))
    calls = []
    def evaluate_block(qrels, run, positions, opts):
        calls.append(sorted(p.name for p in tmpdir.rglob("*")))
        if len(calls) == 3:   # the first pass's blocks, then the second pass's first bucket
            raise RuntimeError("stop")
        return evaluate_lists(prepare_lists(qrels, run, opts, positions), opts)
    with pipe_path((files / "shuffled.txt").read_bytes()) as pipe:
        run = pipe if from_pipe else str(files / "shuffled.txt")
        with pytest.raises(RuntimeError, match="stop"):
            evaluate_file(str(files / "qrels.txt"), run, Options.checked(["AP"]), block_rows=64,
                          evaluate_block=evaluate_block)
    assert calls[0] == []   # the copy of a pipe is never a name in TMPDIR
    assert any(name.endswith(".arrow") for name in calls[-1])   # the error came in the second pass
    assert list(tmpdir.iterdir()) == []


# ------------------------------------------------------------------ line length, NUL, blank lines


@contextmanager
def endless_pipe(pattern: bytes, limit: int):
    """A pipe path a thread fills with ``pattern`` over and over (up to ``limit`` bytes) until the
    reader closes it; yields (path, written), ``written[0]`` the bytes written so far."""
    r, w = os.pipe()
    written = [0]

    def write() -> None:
        try:
            with os.fdopen(w, "wb") as fh:
                while written[0] < limit:
                    fh.write(pattern)
                    written[0] += len(pattern)
        except BrokenPipeError:
            pass
    writer = threading.Thread(target=write, daemon=True)
    writer.start()
    try:
        yield f"/dev/fd/{r}", written
    finally:
        os.close(r)
        writer.join(timeout=TIMEOUT)


def _readers():
    """Every reader of a run's text: the whole-file reader, the streamed reader, the run tag."""
    return {"whole file": trec.read_run_columns,
            "streamed": lambda path: list(blocks.trec_blocks(path, 1 << 18, False)),
            "run tag": trec.read_run_tag}


@pytest.mark.parametrize("reader", sorted(_readers()))
@pytest.mark.parametrize("case", ["line with no end", "NUL bytes"])
def test_a_line_with_no_end_and_nul_bytes_are_refused_as_they_arrive(reader, case):
    """Regression (issue 27, item 10): ``head -c 1G /dev/zero | tierank qrels -`` (and a line of 1 GB with
    no end) were read whole, 4-8 GB, then a MemoryError. Both are refused once the first chunks are read:
    the writer is stopped long before the 64 MiB it would write."""
    pattern, message = ((b"x" * (1 << 16), "<pipe>:1: line longer than 1,048,576 bytes") if case == "line with no end"
                        else (b"\0" * (1 << 16), "<pipe>:1: not a text file: NUL byte, at column 1"))
    with endless_pipe(pattern, 64 << 20) as (path, written):
        with pytest.raises(InputError) as err:
            _readers()[reader](path)
        at_error = written[0]
    assert str(err.value).replace(path, "<pipe>").startswith(message), str(err.value)
    # what was read: at most the line's limit (1 MiB) and a read of 4 MiB, and what the pipe and the
    # writer's last write hold (64 KiB each, 2 MiB allowed)
    assert at_error <= (1 << 20) + (4 << 20) + (2 << 20)


def test_a_gzip_bomb_is_never_decompressed_whole(tmp_path):
    """A gzip file of a few hundred KB holding one line of 256 MiB: refused after a chunk or two of
    decompressed text (it was decompressed whole by the whole-file reader, and the run tag's
    readline held the line whole)."""
    import tracemalloc
    import zlib

    packer = zlib.compressobj(9, zlib.DEFLATED, 31)
    parts = [packer.compress(b"q1 Q0 d1 1 1 t\n")]
    parts += [packer.compress(b"a" * (1 << 20)) for _ in range(256)]
    path = tmp_path / "bomb.txt.gz"
    path.write_bytes(b"".join(parts) + packer.flush())
    assert path.stat().st_size < 1 << 20
    for name, read in _readers().items():
        if name == "run tag":   # its first line is a run line: the tag is read without the rest
            assert read(str(path)) == "t"
            continue
        tracemalloc.start()
        try:
            with pytest.raises(InputError, match=r"bomb\.txt\.gz:2: line longer than 1,048,576 bytes"):
                read(str(path))
            peak = tracemalloc.get_traced_memory()[1]
        finally:
            tracemalloc.stop()
        assert peak < 64 << 20, (name, peak)   # a few chunks of 4 MiB, not 256 MiB


def _first_problem(text: bytes, limit: int) -> tuple[int, str] | None:
    """The oracle: (line, message) of the first NUL byte or over-long line, scanning line by line
    (a NUL within the first ``limit`` bytes of a line comes before that line's excess)."""
    for number, line in enumerate(text.split(b"\n"), start=1):
        nul = line.find(b"\0")
        if 0 <= nul <= limit:
            return number, f"not a text file: NUL byte, at column {nul + 1}"
        if len(line) > limit:
            return number, "line longer than"
    return None


@settings(max_examples=150, deadline=None)
@given(lines=st.lists(st.tuples(st.integers(0, 70), st.sampled_from([b"\n", b"\r\n"]), st.integers(-1, 80)),
                      min_size=1, max_size=30),
       end=st.booleans(), compress=st.booleans(), read_bytes=st.integers(1, 200))
def test_line_limit_and_nul_checked_as_the_bytes_arrive(lines, end, compress, read_bytes):
    """Property: with the limit at 50 bytes, whatever the chunks the text arrives in (gzip or not), the
    reader refuses exactly the texts with a line over 50 bytes (before its line feed; a carriage return
    counts) that comes before any NUL byte, naming its line; it gives the text up to the end of its first
    NUL byte's line (the readers' text check refuses it as it refuses the whole text), or all of it."""
    from tierank.io import source

    text = b"".join(b"y" * n + (b"\0" if 0 <= nul <= n else b"") + b"z" * max(0, n - max(nul, 0)) + eol
                    for n, eol, nul in lines)
    if not end:
        text = text.rstrip(b"\r\n")
    want = _first_problem(text, 50)
    data = gzip.compress(text) if compress else text
    with pytest.MonkeyPatch.context() as mp:
        mp.setattr(source, "MAX_LINE_BYTES", 50)
        with pipe_path(data) as path, source.open_path(path) as opened:
            reader = source.TextReader(opened, read_bytes)
            got, err = [], None
            try:
                while chunk := reader.read():
                    got.append(chunk)
            except InputError as e:
                err = e
    if want is None:
        assert err is None and b"".join(got) == text
    elif want[1].startswith("not a text file: NUL byte"):
        # the text ends with the NUL's line (or _AFTER_NUL bytes after the NUL)
        nul = text.find(b"\0")
        eol = text.find(b"\n", nul)
        stop = min(nul + source._AFTER_NUL, eol + 1 if eol >= 0 else len(text))
        assert err is None and b"".join(got) == text[:stop]
        # the text check of what was read says what the whole text's says, at the oracle's line
        with pytest.raises(InputError) as checked:
            trec.check_text(b"".join(got), "text")
        with pytest.raises(InputError) as whole:
            trec.check_text(text, "text")
        assert (checked.value.message, checked.value.line) == (whole.value.message, whole.value.line)
        assert checked.value.line == want[0]
    else:
        assert err is not None and err.line == want[0] and err.message.startswith(want[1]), (err, want)


def test_exactly_the_maximum_line_length_is_read():
    """A line of MAX_LINE_BYTES bytes (its carriage return included) is read; one byte more is refused."""
    from tierank.io.source import MAX_LINE_BYTES

    ok = b"q1 Q0 d1 1 1 " + b"t" * (MAX_LINE_BYTES - 14) + b"\r\nq1 Q0 d2 1 1 t\n"
    assert len(ok.split(b"\n")[0]) == MAX_LINE_BYTES
    with pipe_path(ok) as path:
        assert len(trec.read_run_columns(path).value) == 2
    with pipe_path(ok.replace(b"\r\n", b"t\r\n", 1)) as path:
        with pytest.raises(InputError, match=r":1: line longer than"):
            trec.read_run_columns(path)


@pytest.mark.parametrize("reader", ["whole file", "streamed"])
def test_blank_lines_cost_no_memory_per_line(tmp_path, monkeypatch, reader):
    """Regression (issue 27, item 10): 256 MiB of blank lines between two run lines took 4 GB (the
    parse holds a few dozen bytes per line, and a query with blank lines inside grew its block over
    all of them). Here 16 MiB of blank lines: the readers hold the bytes and buffers of the read size
    (before: 448 MiB in memory, 592 MiB streamed, as numpy arrays alone)."""
    import tracemalloc

    monkeypatch.setattr(trec, "_READ_BYTES", 1 << 20, raising=False)   # the whole-file reader's reads
    monkeypatch.setattr(blocks, "_READ_BYTES", 1 << 20)
    blank = 16 << 20
    path = tmp_path / "run.txt"
    path.write_bytes(b"q1 Q0 d1 1 1 t\n" + b"\n" * (blank // 2) + b" \r\n" * (blank // 6) + b"q1 Q0 d2 1 1 t\n")
    last_line = 1 + blank // 2 + blank // 6 + 1
    tracemalloc.start()
    try:
        if reader == "whole file":
            parts = [trec.read_run_columns(str(path))]
        else:
            parts = [cols for cols, _, _ in blocks.trec_blocks(str(path), 1 << 18, False)]
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert [int(line) for cols in parts for line in cols.lines] == [1, last_line]
    assert peak < 5 * blank, peak


def test_run_tag_after_a_long_preamble(tmp_path):
    """The run tag is read past any number of comment lines, which are forgotten as they are read."""
    path = tmp_path / "run.txt"
    path.write_bytes(b"# a comment\n" * 20_000 + b"\n\nq1 Q0 d1 1 1 bm25\n")
    assert trec.read_run_tag(str(path)) == "bm25"
    path.write_bytes(b"# a comment\n" * 20_000 + b"q1 Q0 d1 1\n")
    with pytest.raises(InputError, match=r"run\.txt:20001: expected at least 6 fields"):
        trec.read_run_tag(str(path))


def test_the_first_problem_of_a_text_with_a_nul_byte_is_reported():
    """Nothing is read after a NUL byte's line (at most 4 KiB of it), and the error is the first byte that is
    not text, as when the whole file was read: here a byte that is not UTF-8 on the first line."""
    data = b"\x89PNG\r\n\x1a\n\x00\x00" + b"\0" * (8 << 20)
    for name, read in _readers().items():
        with pipe_path(data) as path:
            with pytest.raises(InputError, match=r":1: not UTF-8 text: byte 0x89 is not UTF-8, at column 1"):
                read(path)


def test_report_reads_a_pipe_once(files):
    """The HTML report reads each run twice (its evaluation, its tie report): a pipe is read once, into
    memory (it read an empty pipe the second time: 'no run line: the file is empty'; a FIFO hung)."""
    from tierank.html_report import report_html

    qrels, run = str(files / "qrels.txt"), files / "shuffled.txt"
    want = report_html(qrels, {"A": str(run)}, ["AP", "nDCG@10"], plots=False)
    with pipe_path(run.read_bytes()) as path:
        got = report_html(qrels, {"A": path}, ["AP", "nDCG@10"], plots=False)
    numbers = re.compile(r"\d\.\d{4}")
    assert numbers.findall(got) == numbers.findall(want)
    mean_ap = tierank.evaluate(qrels, str(run), ["AP"]).mean["AP"]
    assert f"{mean_ap:.4f}" in got


def test_sigterm_while_a_pipe_is_waited_for_ends_the_command(files):
    """SIGTERM while the reading thread waits for a pipe's next bytes ends the command at once (it waited
    for the thread, that is for the producer's next bytes or its end; leaving the thread behind then made
    the interpreter abort at exit on the lock of sys.stdin it held)."""
    import signal
    import time

    with subprocess.Popen([sys.executable, "-m", "tierank", str(files / "qrels.txt"), "-", "-m", "AP"],
                          stdin=subprocess.PIPE, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE,
                          env=dict(os.environ)) as proc:
        try:
            proc.stdin.write((files / "run.txt").read_bytes()[:10_000])   # a part: the producer runs on
            proc.stdin.flush()
            time.sleep(3)   # the command has started and waits for the rest
            assert proc.poll() is None
            proc.send_signal(signal.SIGTERM)
            proc.wait(timeout=15)
            err = proc.stderr.read()
        finally:
            if proc.poll() is None:
                proc.kill()
    assert proc.returncode == 128 + signal.SIGTERM, err
    assert b"Fatal Python error" not in err, err


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(lines=st.lists(st.sampled_from(["q1 Q0 d1 1 1 t", "q1 Q0 d2 2 0.5 t", "q2 Q0 d1 1 2 t", "", "  ", "# c",
                                       "q3 Q0 d9 1 x t", "q3 Q0 d8 1", "q\xe9 Q0 d7 1 1 t"]), min_size=1, max_size=40),
       piece=st.integers(1, 8), crlf=st.booleans(), read_bytes=st.sampled_from([3, 17, 1 << 22]))
def test_whole_file_read_in_pieces_equals_read_at_once(tmp_path, monkeypatch, lines, piece, crlf, read_bytes):
    """The whole-file reader parses pieces of _PIECE_LINES lines: the rows (ids, values, line numbers), or
    the error (message and line), are those of one parse of the whole file."""
    path = tmp_path / "run.txt"
    path.write_bytes(("\r\n" if crlf else "\n").join(lines).encode("latin-1"))
    monkeypatch.setattr(trec, "_READ_BYTES", read_bytes)

    def read(piece_lines):
        monkeypatch.setattr(trec, "_PIECE_LINES", piece_lines)
        try:
            cols = trec.read_run_columns(str(path))
        except InputError as err:
            return err.message, err.line
        return list(cols.query), list(cols.doc), cols.value.tolist(), cols.lines.tolist()
    assert read(piece) == read(1 << 40)


def test_a_text_file_whose_first_field_is_par1_is_text(tmp_path):
    """Regression (hostile probe): a run and qrels whose first query id is PAR1 were taken for Parquet by
    their first four bytes ('not a Parquet file'; from a pipe, 'needs random access'). Parquet's magic
    bytes are followed by binary data, never by a blank."""
    import tierank

    qrels, run = tmp_path / "qrels", tmp_path / "run"
    qrels.write_bytes(b"PAR1 0 d1 1\n")
    run.write_bytes(b"PAR1 Q0 d1 1 2 t\nPAR1 Q0 d2 2 1 t\n")
    assert tierank.evaluate(str(qrels), str(run), ["RR"]).mean == {"RR": 1.0}
    with pipe_path(run.read_bytes()) as path:
        assert tierank.evaluate(str(qrels), path, ["RR"]).mean == {"RR": 1.0}
