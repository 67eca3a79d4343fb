"""Every output tierank writes: never over an input, never half-written, a one-line error when it cannot
be written (checked before any work), and standard output that cannot be written.

Expected values: the bytes of the inputs before the command (they must not change), and the messages
the checks promise.
"""

from __future__ import annotations

import errno
import os
import signal
import stat
import subprocess
import sys
import threading
from pathlib import Path

import pytest
from click.testing import CliRunner
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import tierank
from tierank.cli import main
from tierank.errors import OutputError
from tierank.io.output import atomic_write, check_output

HYP = settings(deadline=None, derandomize=True, database=None, max_examples=40,
               suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture])

QRELS = "q1 0 d1 1\nq2 0 d2 1\n"
RUN = "q1 Q0 d1 1 0.5 a\nq1 Q0 d2 2 0.5 a\nq2 Q0 d2 1 0.9 a\n"
RUN_B = "q1 Q0 d1 1 0.9 b\nq1 Q0 d2 2 0.5 b\nq2 Q0 d1 1 0.9 b\nq2 Q0 d2 2 0.8 b\n"


@pytest.fixture
def files(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    (tmp_path / "qrels").write_text(QRELS)
    (tmp_path / "run").write_text(RUN)
    (tmp_path / "b.run").write_text(RUN_B)
    monkeypatch.chdir(tmp_path)
    return tmp_path


def cli(*args: str):
    return CliRunner().invoke(main, list(args))


def snapshot(folder: Path) -> dict:
    """Every file's bytes (symlinks as their targets), to compare before and after."""
    out = {}
    for p in sorted(folder.rglob("*")):
        if p.is_symlink():
            out[p.name] = ("link", os.readlink(p))
        elif p.is_file():
            out[p.name] = p.read_bytes()
    return out


# ------------------------------------------------------------------------ an output over an input


@pytest.mark.parametrize("make_output", [
    pytest.param(lambda d: "run", id="same-name"),
    pytest.param(lambda d: str(d / "run"), id="absolute"),
    pytest.param(lambda d: "./sub/../run", id="other-spelling"),
    pytest.param(lambda d: (os.symlink("run", d / "link"), "link")[1], id="symlink"),
    pytest.param(lambda d: (os.link(d / "run", d / "hard"), "hard")[1], id="hard-link"),
    pytest.param(lambda d: "qrels", id="the-qrels"),
])
def test_report_over_an_input_is_refused(files, make_output):
    """Regression: `tierank report qrels run -o run` replaced the run with the report."""
    (files / "sub").mkdir()
    out = make_output(files)
    before = snapshot(files)
    res = cli("report", "qrels", "run", "-m", "AP", "-o", out)
    assert res.exit_code == 2
    assert "cannot write" in res.output and "it is the input" in res.output
    assert "Traceback" not in res.output and len(res.output.strip().splitlines()) == 1
    assert snapshot(files) == before


def test_plot_over_the_run_is_refused(files):
    """Regression: `tierank qrels run.png -m AP --plot run.png` replaced the run with the plot."""
    (files / "run.png").write_text(RUN)
    before = snapshot(files)
    res = cli("qrels", "run.png", "-m", "AP", "--plot", "run.png")
    assert res.exit_code == 2
    assert "cannot write run.png: it is the input run.png" in res.output
    assert snapshot(files) == before


def test_stdout_appended_to_an_input_is_refused(files):
    """`tierank qrels run >> run`: standard output is the run itself."""
    before = snapshot(files)
    with open(files / "run", "ab") as out:
        proc = subprocess.run([sys.executable, "-m", "tierank", "qrels", "run", "-m", "AP"], cwd=files,
                              stdout=out, stderr=subprocess.PIPE, timeout=120)
    assert proc.returncode == 2
    assert proc.stderr.decode() == "tierank: error: cannot write standard output: it is the input run\n"
    assert snapshot(files) == before


def test_api_writers_refuse_their_input(files):
    before = snapshot(files)
    with pytest.raises(OutputError, match="cannot write run: it is the input run"):
        tierank.write_run("run", "run")
    with pytest.raises(OutputError, match="it is the input qrels"):
        tierank.write_qrels(tierank.io.trec.TextInput("qrels"), "qrels")
    from tierank.html_report import write_report

    with pytest.raises(OutputError, match="it is the input b.run"):
        write_report("b.run", "qrels", {"a": "run", "b": "b.run"}, ["AP"], plots=False)
    assert snapshot(files) == before


# hypothesis: outputs named in every way a file can be reached, inputs among them
_ALIASES = {   # name -> the file it is (None: a new file)
    "run": "run", "./run": "run", "sub/../run": "run", "link_run": "run", "hard_run": "run",
    "link_link_run": "run", "qrels": "qrels", "link_qrels": "qrels", "hard_qrels": "qrels",
    "new.txt": None, "link_new": None, "sub/new.txt": None, "other": "other", "hard_other": "other",
}


def _make_aliases(d: Path) -> None:
    (d / "sub").mkdir()
    (d / "other").write_text("other\n")
    os.symlink("run", d / "link_run")
    os.symlink("link_run", d / "link_link_run")
    os.link(d / "run", d / "hard_run")
    os.symlink(d / "qrels", d / "link_qrels")
    os.link(d / "qrels", d / "hard_qrels")
    os.symlink("new.txt", d / "link_new")        # dangling: writing it creates new.txt
    os.link(d / "other", d / "hard_other")


@HYP
@given(inputs=st.lists(st.sampled_from(sorted(n for n, f in _ALIASES.items() if f)), min_size=1, max_size=3),
       output=st.sampled_from(sorted(_ALIASES)))
def test_property_an_output_that_is_an_input_is_always_refused(tmp_path_factory, inputs, output):
    """For inputs and an output named through paths, symlinks and hard links: the write is refused
    exactly when the output is one of the inputs (by the construction of the names), and the inputs'
    bytes never change."""
    d = tmp_path_factory.mktemp("aliases")
    (d / "qrels").write_text(QRELS)
    (d / "run").write_text(RUN)
    _make_aliases(d)
    cwd = os.getcwd()
    os.chdir(d)
    try:
        before = {name: Path(name).read_bytes() for name in inputs}
        refused = _ALIASES[output] is not None and _ALIASES[output] in {_ALIASES[i] for i in inputs}
        try:
            check_output(output, inputs)
            with atomic_write(output, "wb") as f:       # a copy of the first input
                f.write(before[inputs[0]])
        except OutputError as err:
            assert refused, err
            assert str(err).startswith(f"cannot write {output}: it is the input ")
        else:
            assert not refused
            assert Path(output).read_bytes() == before[inputs[0]]
            assert Path(output).is_symlink() == output.startswith("link_")   # written through its link
        after = {name: Path(name).read_bytes() for name in inputs}
        assert after == before
    finally:
        os.chdir(cwd)


@settings(deadline=None, derandomize=True, database=None, max_examples=20,
          suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture])
@given(runs=st.lists(st.sampled_from(sorted(n for n, f in _ALIASES.items() if f == "run")), min_size=1,
                     max_size=2),
       qrels=st.sampled_from(sorted(n for n, f in _ALIASES.items() if f == "qrels")),
       output=st.sampled_from(sorted(_ALIASES)))
def test_property_the_command_never_writes_over_an_input(tmp_path_factory, runs, qrels, output):
    """The same through `tierank report QRELS RUN... -o OUTPUT`: exit status 2 and the message exactly
    when the output is the qrels or a run, else a report; the inputs' bytes never change."""
    d = tmp_path_factory.mktemp("cli")
    (d / "qrels").write_text(QRELS)
    (d / "run").write_text(RUN)
    _make_aliases(d)
    cwd = os.getcwd()
    os.chdir(d)
    try:
        before = snapshot(d)
        res = cli("report", qrels, *runs, "-m", "AP", "-o", output, "--no-plots")
        refused = _ALIASES[output] in ("run", "qrels")
        if refused:
            assert res.exit_code == 2
            assert res.output.startswith(f"tierank: error: cannot write {output}: it is the input ")
            assert snapshot(d) == before
        else:
            assert res.exit_code == 0, res.output
            assert Path(output).read_text().startswith("<!DOCTYPE html>")
            assert Path("run").read_bytes() == RUN.encode() and Path("qrels").read_bytes() == QRELS.encode()
    finally:
        os.chdir(cwd)


# ----------------------------------------------------------- cannot write: said before any work


def test_missing_directory_is_said_before_the_evaluation(files):
    """Regression: a missing directory was found after the evaluation, as "cannot read the file"."""
    (files / "bad.run").write_text("q1 Q0 d1 1 high a\n")      # evaluating it would fail
    for args in (["report", "qrels", "bad.run", "-m", "AP", "-o", "missing/report.html"],
                 ["qrels", "bad.run", "-m", "AP", "--plot", "missing/plot.png"]):
        res = cli(*args)
        assert res.exit_code == 2
        out = args[-1]
        assert res.output == f"tierank: error: cannot write {out}: no such directory: missing\n"


def test_no_work_is_done_when_the_output_cannot_be_written(files, monkeypatch):
    import tierank.html_report

    def never(*args, **kwargs):
        raise AssertionError("evaluated although the output cannot be written")
    monkeypatch.setattr(tierank.html_report, "report_html", never)
    monkeypatch.setattr(tierank, "evaluate", never)
    (files / "folder").mkdir()
    for args, message in [
        (["report", "qrels", "run", "-m", "AP", "-o", "run/report.html"],
         "cannot write run/report.html: Not a directory"),
        (["qrels", "run", "-m", "AP", "--plot", "missing/x.svg"], "cannot write missing/x.svg: no such directory"),
    ]:
        res = cli(*args)
        assert res.exit_code == 2 and message in res.output, res.output


def test_read_only_output_is_not_replaced(files, monkeypatch):
    (files / "old.html").write_text("old")
    os.chmod(files / "old.html", 0o444)
    if os.geteuid() == 0:   # root may write anywhere (CI runs as root): answer as for any other user
        access = os.access
        monkeypatch.setattr(os, "access", lambda path, mode, **kw: access(path, mode, **kw) and not (
            mode & os.W_OK and not os.stat(path).st_mode & 0o222))
    res = cli("report", "qrels", "run", "-m", "AP", "-o", "old.html", "--no-plots")
    assert res.exit_code == 2 and "cannot write old.html: permission denied" in res.output
    assert (files / "old.html").read_text() == "old"


def test_api_writers_check_before_work(tmp_path):
    from tierank.plot import save_plot

    missing = tmp_path / "missing"
    for write in (lambda: tierank.write_run({"q1": {"d1": 1.0}}, missing / "run.txt"),
                  lambda: tierank.write_qrels({"q1": {"d1": 1}}, missing / "qrels.txt.gz"),
                  lambda: save_plot(missing / "p.png", {}, [])):       # no figure: it would fail later
        with pytest.raises(OutputError, match="cannot write .*: no such directory"):
            write()
    with pytest.raises(OutputError, match="it is a directory"):
        tierank.write_run({"q1": {"d1": 1.0}}, tmp_path)
    with pytest.raises(OutputError, match="it names a directory"):
        tierank.write_run({"q1": {"d1": 1.0}}, f"{tmp_path}/new/")
    assert list(tmp_path.iterdir()) == []


# -------------------------------------------------------------------- whole or not at all


def _fail_at_fsize_limit(limit: int):
    def apply() -> None:
        import resource

        signal.signal(signal.SIGXFSZ, signal.SIG_IGN)   # a write past the limit fails with EFBIG
        resource.setrlimit(resource.RLIMIT_FSIZE, (limit, limit))
    return apply


_WRITERS = {
    "report": ["-m", "tierank", "report", "qrels", "run", "b.run", "-m", "AP", "-o", "out"],
    "plot": ["-m", "tierank", "qrels", "run", "-m", "AP", "--plot", "out.png"],
    "write_run": ["-c", "import tierank, sys; tierank.write_run('run', sys.argv[1])", "out"],
    "write_qrels.gz": ["-c", "import tierank, sys; tierank.write_qrels('qrels', sys.argv[1])", "out.gz"],
}


@pytest.mark.parametrize("writer", sorted(_WRITERS))
def test_a_failed_write_leaves_the_old_file(files, writer):
    """Regression: the output was opened (truncated) and written in place: a write that failed half
    way (here: past a file size limit, as on a full disk) left half a file and lost the old one."""
    args = _WRITERS[writer]
    out = files / args[-1]
    old = b"x" * 60            # the old file, under the limit
    out.write_bytes(old)
    limit = 64                 # every new file is longer
    if writer == "write_qrels.gz":
        (files / "qrels").write_text("".join(f"q{i} 0 d{i * 7919 % 1009} {i % 3}\n" for i in range(50)))
    env = dict(os.environ, PYTHONDONTWRITEBYTECODE="1")
    proc = subprocess.run([sys.executable, *args], cwd=files, capture_output=True, timeout=120, env=env,
                          preexec_fn=_fail_at_fsize_limit(limit))
    assert proc.returncode != 0
    assert out.read_bytes() == old
    assert sorted(p.name for p in files.iterdir() if p.name.startswith(".")) == []   # no temporary file
    if writer in ("report", "plot"):
        assert proc.returncode == 2
        assert proc.stderr.decode() == f"tierank: error: cannot write {args[-1]}: File too large\n"


def test_an_interrupted_plot_leaves_the_old_file(files, monkeypatch):
    """Regression: savefig wrote the plot in place; an error half way left half a PNG."""
    from matplotlib.figure import Figure

    def half(self, fname, **kwargs):
        if isinstance(fname, (str, os.PathLike)):
            with open(fname, "wb") as f:
                f.write(b"\x89PNG half")
        else:
            fname.write(b"\x89PNG half")
        raise KeyboardInterrupt
    monkeypatch.setattr(Figure, "savefig", half)
    (files / "p.png").write_bytes(b"old plot")
    with pytest.raises(KeyboardInterrupt):
        from tierank.plot import save_plot

        save_plot("p.png", {"run": tierank.evaluate("qrels", "run", ["AP"], bounds=True)}, [("AP", "AP")])
    assert (files / "p.png").read_bytes() == b"old plot"
    assert sorted(p.name for p in files.iterdir()) == ["b.run", "p.png", "qrels", "run"]


def test_atomic_write_keeps_links_modes_and_devices(files):
    (files / "real.html").write_text("old")
    os.chmod(files / "real.html", 0o640)
    os.symlink("real.html", files / "out.html")
    assert cli("report", "qrels", "run", "-m", "AP", "-o", "out.html", "--no-plots").exit_code == 0
    assert (files / "out.html").is_symlink() and os.readlink(files / "out.html") == "real.html"
    assert (files / "real.html").read_text().startswith("<!DOCTYPE html>")
    assert stat.S_IMODE(os.stat(files / "real.html").st_mode) == 0o640
    umask = os.umask(0o022)
    os.umask(umask)
    assert cli("report", "qrels", "run", "-m", "AP", "-o", "new.html", "--no-plots").exit_code == 0
    assert stat.S_IMODE(os.stat(files / "new.html").st_mode) == 0o666 & ~umask
    # not a regular file: written to, never replaced
    assert cli("report", "qrels", "run", "-m", "AP", "-o", os.devnull, "--no-plots").exit_code == 0
    assert stat.S_ISCHR(os.stat(os.devnull).st_mode)


def test_atomic_write_to_a_fifo(tmp_path):
    fifo = tmp_path / "fifo"
    os.mkfifo(fifo)
    got = []
    reader = threading.Thread(target=lambda: got.append(fifo.read_bytes()))
    reader.start()
    with atomic_write(fifo) as f:
        f.write("through the pipe\n")
    reader.join(10)
    assert got == [b"through the pipe\n"]
    assert stat.S_ISFIFO(os.stat(fifo).st_mode)


# ------------------------------------------------------------------------------- standard output


def test_stdout_on_a_full_device_is_a_one_line_error(files):
    """Regression: `tierank ... > /dev/full` ended in an OSError traceback."""
    if not os.path.exists("/dev/full"):
        pytest.skip("no /dev/full")
    for args in (["qrels", "run", "-m", "AP"], ["ties", "qrels", "run", "-m", "AP"], ["measures"],
                 ["report", "qrels", "run", "-m", "AP", "-o", "-", "--no-plots"]):
        with open("/dev/full", "w") as full:
            proc = subprocess.run([sys.executable, "-m", "tierank", *args], cwd=files, stdout=full,
                                  stderr=subprocess.PIPE, timeout=120)
        assert proc.returncode == 2, args
        assert proc.stderr.decode() == "tierank: error: cannot write to standard output: No space left on device\n"


@pytest.mark.parametrize("args", [["qrels", "run", "-m", "AP", "-q"],
                                  ["report", "qrels", "run", "-m", "AP", "-o", "-", "--no-plots"]])
def test_closed_pipe_ends_quietly(files, args):
    """`tierank ... | head`: the reader went away; no message, status 1 (as click and Python's docs do).
    Regression: `report -o -` said "cannot read the file: Broken pipe"."""
    proc = subprocess.Popen([sys.executable, "-m", "tierank", *args], cwd=files,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    proc.stdout.close()          # before anything is written
    err = proc.stderr.read()
    proc.stderr.close()
    assert proc.wait(120) == 1
    assert err == b""


def test_write_error_names_the_output(tmp_path, monkeypatch):
    def full(fd):
        raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))
    monkeypatch.setattr(os, "fsync", full)
    path = tmp_path / "run.txt"
    with pytest.raises(OutputError, match=r"cannot write .*run.txt: No space left on device"):
        tierank.write_run({"q1": {"d1": 1.0}}, path)
    assert list(tmp_path.iterdir()) == []


def test_a_file_of_an_input_directory_is_an_input(tmp_path):
    """A Parquet dataset is read as a directory: its files are inputs; a new file beside them is not."""
    data = tmp_path / "run.parquet"
    data.mkdir()
    (data / "part-0.parquet").write_bytes(b"PAR1")
    with pytest.raises(OutputError, match="it is the input"):
        check_output(data / "part-0.parquet", [data])
    with pytest.raises(OutputError, match="it is a directory"):
        check_output(data, [tmp_path / "qrels"])
    check_output(tmp_path / "report.html", [data])


def test_standard_input_redirected_from_the_output(files):
    """`tierank qrels - --plot run.png < run.png`: the plot would replace the run being read."""
    (files / "run.png").write_text(RUN)
    before = snapshot(files)
    with open(files / "run.png", "rb") as stdin:
        proc = subprocess.run([sys.executable, "-m", "tierank", "qrels", "-", "-m", "AP", "--plot", "run.png"],
                              cwd=files, stdin=stdin, capture_output=True, timeout=120)
    assert proc.returncode == 2, proc.stderr
    assert proc.stderr.decode() == "tierank: error: cannot write run.png: it is the input standard input\n"
    assert snapshot(files) == before


def _shell(command: str, cwd: Path) -> subprocess.CompletedProcess:
    """``command`` in bash, ``tierank`` being this Python's ``-m tierank``."""
    tierank_cmd = f"{sys.executable} -m tierank"
    return subprocess.run(["bash", "-c", command.replace("tierank", tierank_cmd, 1)], cwd=cwd,
                          capture_output=True, text=True, timeout=120)


@pytest.mark.parametrize("args", ["qrels run -m AP", "qrels run -m AP -f json", "ties qrels run -m AP",
                                  "measures", "report qrels run -m AP -o - --no-plots"])
def test_closed_standard_output_is_an_error(files, args):
    """Regression (hostile probe): started with standard output closed (>&-), the table formats ended in
    an AttributeError traceback and the others exited 0 having written nothing."""
    res = _shell(f"tierank {args} >&-", files)
    assert res.returncode == 2, (res.returncode, res.stderr)
    assert res.stderr.strip() == "tierank: error: cannot write to standard output: it is closed", res.stderr


def test_report_to_a_file_needs_no_standard_output(files):
    res = _shell("tierank report qrels run -m AP -o out.html --no-plots >&-", files)
    assert res.returncode == 0 and (files / "out.html").stat().st_size > 0, res.stderr


@pytest.mark.skipif(not os.path.exists("/dev/full"), reason="no /dev/full on this system")
@pytest.mark.parametrize("args", ["--help", "eval --help", "--version"])
def test_help_into_a_full_device_is_one_line(files, args):
    """Regression (hostile probe): click's help and version text into /dev/full was an OSError traceback."""
    res = _shell(f"tierank {args} > /dev/full", files)
    assert res.returncode == 2 and "Traceback" not in res.stderr, res.stderr
    assert res.stderr.strip() == "tierank: error: cannot write to standard output: No space left on device"


def test_write_report_takes_a_generator_of_runs(files):
    """Regression (hostile probe): the output check read a generator of runs, and the report then had
    none ('no run to report on')."""
    from tierank.html_report import write_report

    write_report("g.html", "qrels", (p for p in ["run"]), ["AP"], plots=False)
    assert "AP" in Path("g.html").read_text(encoding="utf-8")
