"""Where the bytes of an input come from: pipes, FIFOs, ``/dev/stdin`` and process substitution read like
the same bytes in a regular file (each input opened once, what it holds told from the bytes read), a
Parquet input that is not a regular file is a clear error (:mod:`tierank.io.source`)."""

from __future__ import annotations

import gzip
import io
import os
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
from tierank.io import stream, trec
from tierank.io.trec import TextInput

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
    monkeypatch.setattr(stream, "_READ_BYTES", read_bytes)
    monkeypatch.setattr(trec, "_READ_BYTES", read_bytes)
    try:
        want = trec.read_run_columns(str(path))
    except InputError as err:   # a document twice is the join's error, not the reader's
        pytest.fail(f"the file itself is refused: {err}")
    with pipe_path(data) as pipe:
        _same_columns(trec.read_run_columns(pipe), want)
    want_blocks = [(c.query, c.value, first) for c, first, _ in stream.trec_blocks(str(path), block_rows, False)]
    with pipe_path(data) as pipe:
        got_blocks = [(c.query, c.value, first) for c, first, _ in stream.trec_blocks(pipe, block_rows, False)]
    assert len(got_blocks) == len(want_blocks)
    for (q1, v1, f1), (q2, v2, f2) in zip(got_blocks, want_blocks):
        assert f1 == f2 and list(q1) == list(q2) and np.array_equal(v1, v2)


# ------------------------------------------------------------------------------ temporary files

_LAUNCH = ("import sys, tierank.io.stream as s; s.DEFAULT_BLOCK_ROWS = 500; from tierank.cli import main; "
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
    from tierank import _engines

    def evaluate_block(qrels, run, positions, opts):
        calls.append(sorted(p.name for p in tmpdir.rglob("*")))
        if len(calls) == 3:   # the first pass's blocks, then the second pass's first bucket
            raise RuntimeError("stop")
        return _engines._evaluate(qrels, run, positions, opts)
    with pipe_path((files / "shuffled.txt").read_bytes()) as pipe:
        run = pipe if from_pipe else str(files / "shuffled.txt")
        with pytest.raises(RuntimeError, match="stop"):
            stream.evaluate_file(str(files / "qrels.txt"), run, ["AP"], block_rows=64, evaluate_block=evaluate_block)
    assert calls[0] == []   # the copy of a pipe is never a name in TMPDIR
    assert any(name.endswith(".arrow") for name in calls[-1])   # the error came in the second pass
    assert list(tmpdir.iterdir()) == []
