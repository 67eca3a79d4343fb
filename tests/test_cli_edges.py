"""The tierank command at its edges: output streams that cannot encode non-ASCII characters (significance
superscripts, run names, query ids), --no-relevant and --trec-eval-version.

Expected values are computed by hand in each test.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
from click.testing import CliRunner
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from tierank.cli import main
from tierank.comparison import SUPERSCRIPTS

HYP = settings(deadline=None, derandomize=True, database=None, max_examples=25,
               suppress_health_check=[HealthCheck.too_slow])

# run b finds the relevant document of each query at rank 1, run a at rank 2 on every query but one:
# RR means a = (0.5 * 3 + 1) / 4 = 0.625, b = 1; with --alpha 0.9 --correction none b beats a on RR
QRELS = "q1 0 d1 1\nq2 0 d1 1\nq3 0 d1 1\nq4 0 d1 1\n"
RUN_A = "".join(f"q{i} Q0 d1 1 {1.0 if i == 4 else 0.5} a\nq{i} Q0 d2 2 0.9 a\n" for i in range(1, 5))
RUN_B = "".join(f"q{i} Q0 d1 1 0.9 b\nq{i} Q0 d2 2 0.5 b\n" for i in range(1, 5))


@pytest.fixture
def files(tmp_path: Path) -> Path:
    (tmp_path / "qrels").write_text(QRELS)
    (tmp_path / "a.run").write_text(RUN_A)
    (tmp_path / "b.run").write_text(RUN_B)
    return tmp_path


def _run_cli(args: list[str], cwd: Path, encoding: str) -> subprocess.CompletedProcess:
    env = dict(os.environ, PYTHONIOENCODING=encoding, PYTHONUTF8="0")
    return subprocess.run([sys.executable, "-m", "tierank", *args], cwd=cwd, env=env, capture_output=True,
                          timeout=120)


@pytest.mark.parametrize("encoding", ["cp1252", "ascii"])
def test_compare_letters_fall_back_to_ascii(files, encoding):
    """Regression: UnicodeEncodeError on the superscript letters when stdout is not UTF-8."""
    proc = _run_cli(["qrels", "a.run", "b.run", "-m", "RR", "--compare", "--alpha", "0.9", "--correction", "none"],
                    files, encoding)
    assert proc.returncode == 0, proc.stderr.decode("utf-8", "replace")
    out = proc.stdout.decode(encoding)
    assert b"Traceback" not in proc.stderr
    assert "1.0000^a" in out                      # b's mean, better than a
    assert all(c not in out for c in SUPERSCRIPTS)
    assert out.isascii()


def test_compare_letters_superscript_on_utf8(files):
    proc = _run_cli(["qrels", "a.run", "b.run", "-m", "RR", "--compare", "--alpha", "0.9", "--correction", "none"],
                    files, "utf-8")
    assert proc.returncode == 0
    assert "1.0000\u1d43" in proc.stdout.decode("utf-8")


@pytest.mark.parametrize("encoding", ["cp1252", "ascii"])
@pytest.mark.parametrize("args", [[], ["-q"], ["--compare", "--alpha", "0.9", "--correction", "none"],
                                  ["-f", "markdown", "-q"], ["-f", "latex"], ["-f", "csv", "-q"], ["-f", "trec", "-q"],
                                  ["-f", "json", "-q"], ["--bounds"], ["ties"]])
def test_non_ascii_names_and_ids_never_crash(tmp_path, encoding, args):
    # a query id and a run file name cp1252 / ascii cannot encode: written as \\u escapes
    (tmp_path / "qrels").write_text("q\u2603 0 d1 1\nq2 0 d1 1\n", encoding="utf-8")
    run = "q\u2603 Q0 d1 1 0.5 x\nq\u2603 Q0 d2 2 0.9 x\nq2 Q0 d1 1 0.9 x\n"
    (tmp_path / "\u2603.run").write_text(run, encoding="utf-8")
    (tmp_path / "c.run").write_text(run.replace("0.5", "0.95"), encoding="utf-8")
    if args[:1] == ["ties"]:
        cmd = ["ties", "qrels", "\u2603.run", "-m", "RR"]
    else:
        cmd = ["qrels", "\u2603.run", "c.run", "-m", "RR", *args]
    proc = _run_cli(cmd, tmp_path, encoding)
    assert proc.returncode == 0, proc.stderr.decode("utf-8", "replace")
    assert b"Traceback" not in proc.stderr
    out = proc.stdout.decode(encoding)
    if args[:1] != ["-f"] or "-q" in args:   # every output naming the run or the query
        assert "\\u2603" in out or "\\\\u2603" in out


@pytest.mark.parametrize("encoding", ["cp1252", "ascii"])
def test_error_with_non_ascii_line_is_reported(tmp_path, encoding):
    (tmp_path / "qrels").write_text("q1 0 d1 1\n")
    (tmp_path / "bad.run").write_text("q1 Q0 d\u2603 1 \u00bd x\n", encoding="utf-8")
    proc = _run_cli(["qrels", "bad.run", "-m", "RR"], tmp_path, encoding)
    assert proc.returncode == 2
    assert b"Traceback" not in proc.stderr
    err = proc.stderr.decode(encoding, "replace")
    assert "tierank: error: bad.run:1" in err and proc.stdout == b""


@HYP
@given(st.text(alphabet=st.characters(min_codepoint=32, max_codepoint=0x2FFF, blacklist_categories=("Cs", "Cc")),
               max_size=8),
       st.sampled_from(["ascii", "cp1252", "latin-1", "utf-8"]))
def test_property_echo_writes_any_text_to_any_stream(text, encoding):
    """Whatever the text and the stream's encoding, the command's one writer never raises and loses
    nothing: what the stream cannot encode is written as a backslash escape."""
    import io

    from tierank.cli import _echo

    buf = io.BytesIO()
    stream = io.TextIOWrapper(buf, encoding=encoding, errors="strict", newline="\n")
    old = sys.stdout
    sys.stdout = stream
    try:
        _echo(text + "\t0.5")
        stream.flush()
    finally:
        sys.stdout = old
    written = buf.getvalue().decode(encoding)
    assert written.endswith("\t0.5\n")
    want = text.encode(encoding, "backslashreplace").decode(encoding)
    assert written[:-5] == want
    if encoding == "utf-8":
        assert written[:-5] == text


# ------------------------------------------------------------------------- options

def test_no_relevant_option(files):
    # q5 is judged with no relevant document and retrieved: RR 0 (zero), left out (skip), 1 (one), error
    (files / "qrels").write_text(QRELS + "q5 0 d1 0\n")
    (files / "b.run").write_text(RUN_B + "q5 Q0 d1 1 0.9 b\n")
    runner = CliRunner()
    out = {}
    for policy in ("zero", "skip", "one"):
        res = runner.invoke(main, [str(files / "qrels"), str(files / "b.run"), "-m", "RR", "-f", "json",
                                   "--no-relevant", policy])
        assert res.exit_code == 0, res.output
        out[policy] = json.loads(res.output)
    means = {p: o["runs"][0]["mean"]["RR"] for p, o in out.items()}
    assert means == {"zero": 4 / 5, "skip": 1.0, "one": 1.0}
    res = runner.invoke(main, [str(files / "qrels"), str(files / "b.run"), "-m", "RR", "--no-relevant", "error"])
    assert res.exit_code == 2 and "q5" in res.output and "--no-relevant error" in res.output
    assert "no_relevant=" not in res.output   # the command line's option, not Python's parameter
    res = runner.invoke(main, [str(files / "qrels"), str(files / "b.run"), "-m", "RR", "--no-relevant", "nan"])
    assert res.exit_code == 2


def _json_mean(obj, measure):
    return obj["runs"][0]["mean"][measure]


def test_trec_eval_version_option(tmp_path):
    # d1 (relevant) scores 0.3, d2 0.30000000000000004: 10 ranks d2 first (RR 1/2); 9 ties them and the
    # trec_eval tie-break (document id descending) puts d2 first too, while expected gives 3/4
    (tmp_path / "qrels").write_text("q1 0 d1 1\n")
    (tmp_path / "r.run").write_text("q1 Q0 d1 1 0.3 x\nq1 Q0 d2 2 0.30000000000000004 x\n")
    runner = CliRunner()
    base = [str(tmp_path / "qrels"), str(tmp_path / "r.run"), "-m", "RR", "-f", "json"]
    got = {}
    for version in ("9", "10"):
        res = runner.invoke(main, [*base, "--trec-eval-version", version])
        assert res.exit_code == 0, res.output
        got[version] = _json_mean(json.loads(res.output), "RR")
    assert got == {"9": 0.75, "10": 0.5}
    res = runner.invoke(main, [*base, "--trec-eval-version", "8"])
    assert res.exit_code == 2


def test_compare_with_skip_leaves_nan_queries_out(files):
    # q5 has no relevant document: skipped in both runs, the comparison runs on q1..q4
    (files / "qrels").write_text(QRELS + "q5 0 d1 0\n")
    (files / "a.run").write_text(RUN_A + "q5 Q0 d1 1 0.9 a\n")
    (files / "b.run").write_text(RUN_B + "q5 Q0 d1 1 0.9 b\n")
    res = CliRunner().invoke(main, [str(files / "qrels"), str(files / "a.run"), str(files / "b.run"), "-m", "RR",
                                    "--compare", "--no-relevant", "skip", "-f", "json"])
    assert res.exit_code == 0, res.output
    data = json.loads(res.output)
    assert len(data["queries"]) == 4
    means = data["means"]
    assert means[str(files / "a.run") if str(files / "a.run") in means else "a.run"]["RR"] == 0.625


def test_the_judgments_are_read_once_for_all_runs(tmp_path, monkeypatch):
    import tierank.io.trec as trec
    from click.testing import CliRunner
    from tierank.cli import main

    calls = []
    read = trec.read_qrels_columns
    monkeypatch.setattr(trec, "read_qrels_columns", lambda path: calls.append(path) or read(path))
    (tmp_path / "q").write_text("1 0 a 1\n")
    for name in ("r1", "r2", "r3"):
        (tmp_path / name).write_text("1 Q0 a 1 1.0 t\n")
    out = CliRunner().invoke(main, [str(tmp_path / "q")] + [str(tmp_path / n) for n in ("r1", "r2", "r3")]
                             + ["-m", "map"])
    assert out.exit_code == 0, out.output
    assert calls == [str(tmp_path / "q")]
