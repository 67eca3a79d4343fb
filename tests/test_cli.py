"""The ``tierank`` command.

The main check: on trec_eval's own test data, ``tierank --ties trec_eval --format trec`` prints what
trec_eval printed (tests/data/trec_eval/out.test*), line for line, per query and overall, with -c and
-l. Then bad input: exit status 2, the file and line in the message on stderr, nothing on stdout.
"""

from __future__ import annotations

import gzip
import json
import subprocess
import sys
from pathlib import Path

import pandas as pd
import pytest
from click.testing import CliRunner

import tierank.io.trec as trec
from tierank.cli import _Progress, main
from tierank.formats import shown_measures
from tierank.measures import expand
from tierank.measures._registry import FAMILY_MODULES, _split_measure_list

DATA = Path(__file__).parent / "data" / "trec_eval"

# the trec_eval measures of the acceptance criterion, asked for as a user would
MEASURES = ["-m", "map", "-m", "map_cut", "-m", "P", "-m", "recall", "-m", "ndcg",
            "-m", "ndcg_cut", "-m", "recip_rank", "-m", "Rprec", "-m", "success", "-m", "num_ret",
            "-m", "num_rel", "-m", "num_rel_ret"]
SHARED = ("map", "map_cut_", "P_", "recall_", "ndcg", "ndcg_cut_", "recip_rank", "Rprec", "success_",
          "num_ret", "num_rel", "num_rel_ret", "num_q", "runid")


def run_cli(*args, engine=None, monkeypatch=None):
    if engine is not None:
        monkeypatch.setattr(trec, "ENGINE", engine)
    return CliRunner().invoke(main, [str(a) for a in args])


def trec_lines(text):
    """(measure, query, value) of trec_eval output, measure names unpadded."""
    out = []
    for line in text.splitlines():
        name, qid, value = line.split("\t")
        out.append((name.strip(), qid, value))
    return out


def is_shared(name):
    return any(name == s or (s.endswith("_") and name.startswith(s) and name[len(s):].isdigit())
               for s in SHARED)


def expected_lines(name):
    return [t for t in trec_lines((DATA / name).read_text()) if is_shared(t[0])]


# ---------------------------------------------------------------------- reproducing trec_eval


CONFIGS = {
    # trec_eval output: (tierank arguments)
    "out.test.aq": ("qrels.test", "results.test", "-q"),
    "out.test.aqc": ("qrels.test", "results.trunc", "-q", "-c"),
    "out.test.aql": ("qrels.rel_level", "results.test", "-q", "-l", "2"),
}


@pytest.mark.parametrize("expected", sorted(CONFIGS))
def test_reproduces_trec_eval_per_query(expected):
    qrels, run, *options = CONFIGS[expected]
    res = run_cli(DATA / qrels, DATA / run, *MEASURES, "-m", "num_q", "-m", "runid", *options,
                  "--ties", "trec_eval", "--format", "trec")
    assert res.exit_code == 0, res.stderr
    got = res.stdout.splitlines()
    want = [line for line in (DATA / expected).read_text().splitlines() if is_shared(line.split("\t")[0].strip())]
    # every line of the shared measures, in trec_eval's order, byte for byte (names padded to 22)
    assert got == want
    assert len(got) == 3 * 46 + 48   # 46 measures per query; runid and num_q on the all line only


def test_trec_format_prints_only_what_is_asked(monkeypatch):
    # like trec_eval -m map -m P.5: no runid / num_q lines unless asked for
    res = run_cli(DATA / "qrels.test", DATA / "results.test", "-m", "P.5", "-m", "map", "--ties", "trec_eval",
                  "-f", "trec")
    assert res.stdout == "map                   \tall\t0.1785\nP_5                   \tall\t0.2667\n"


def test_trec_format_names_other_measures_by_their_tierank_string():
    res = run_cli(DATA / "qrels.test", DATA / "results.test", "-m", "nDCG@10", "ERR@20", "P(rel=2)@5",
                  "--ties", "trec_eval", "-f", "trec")
    names = [t[0] for t in trec_lines(res.stdout)]
    assert names == ["ndcg_cut_10", "ERR@20", "P(rel=2)@5"]


def test_python_dash_m_and_exit_status():
    cmd = [sys.executable, "-m", "tierank", str(DATA / "qrels.test"), str(DATA / "results.test"),
           "-m", "map", "--ties", "trec_eval", "-f", "trec"]
    done = subprocess.run(cmd, capture_output=True, text=True)
    assert done.returncode == 0 and done.stdout == "map                   \tall\t0.1785\n" and done.stderr == ""


def test_default_ties_are_expected_and_differ_from_trec_eval_on_ties(tmp_path):
    qrels = tmp_path / "qrels"
    qrels.write_text("q1 0 a 1\n")
    run = tmp_path / "run"
    run.write_text("q1 Q0 a 1 0.5 t\nq1 Q0 b 2 0.5 t\n")   # a and b tie; trec_eval puts b first
    expected = run_cli(qrels, run, "-m", "recip_rank", "-f", "trec")
    broken = run_cli(qrels, run, "-m", "recip_rank", "-f", "trec", "--ties", "trec_eval")
    assert expected.stdout.split("\t")[-1] == "0.7500\n"
    assert broken.stdout.split("\t")[-1] == "0.5000\n"


def test_parquet_qrels_give_the_numbers_of_their_text_file(tmp_path):
    # the same judgments as TREC text and as Parquet: eval and ties print the same thing
    text = DATA / "qrels.test"
    frame = trec.read_qrels(text)
    frame.to_parquet(tmp_path / "qrels.parquet")
    for command in (["eval", "-m", "map", "-m", "P.5", "-q"], ["ties", "-m", "map", "-m", "P.5"]):
        from_text = run_cli(command[0], text, DATA / "results.test", *command[1:])
        from_parquet = run_cli(command[0], tmp_path / "qrels.parquet", DATA / "results.test", *command[1:])
        assert from_text.exit_code == 0, from_text.output
        assert from_parquet.exit_code == 0, from_parquet.output
        assert from_parquet.stdout == from_text.stdout


# -------------------------------------------------------------------------------- bad input

MALFORMED = {
    # name: (qrels text, run text, which file is bad, line)
    "run: too few columns": ("q1 0 d1 1\n", "q1 Q0 d1 1 0.5 t\nq1 Q0 d2 2 0.4\n", "run", 2),
    "run: score not a number": ("q1 0 d1 1\n", "q1 Q0 d1 1 0.5 t\n#\nq1 Q0 d2 2 x t\n", "run", 3),
    "run: NaN score": ("q1 0 d1 1\n", "q1 Q0 d1 1 nan t\n", "run", 1),
    "run: duplicate document": ("q1 0 d1 1\n", "q1 Q0 d1 1 0.5 t\nq1 Q0 d1 2 0.4 t\n", "run", 2),
    "run: empty file": ("q1 0 d1 1\n", "", "run", 1),
    "run: not text": ("q1 0 d1 1\n", b"\x89PNG\r\n\x1a\n\x00\x00", "run", 1),
    "qrels: too few columns": ("q1 0 d1\n", "q1 Q0 d1 1 0.5 t\n", "qrels", 1),
    "qrels: too many columns": ("q1 0 d1 1\nq1 0 d2 1 1\n", "q1 Q0 d1 1 0.5 t\n", "qrels", 2),
    "qrels: grade not a number": ("q1 0 d1 yes\n", "q1 Q0 d1 1 0.5 t\n", "qrels", 1),
    "qrels: NaN grade": ("q1 0 d1 1\nq1 0 d2 NaN\n", "q1 Q0 d1 1 0.5 t\n", "qrels", 2),
    "qrels: duplicate document": ("\nq1 0 d1 1\nq1 0 d1 0\n", "q1 Q0 d1 1 0.5 t\n", "qrels", 3),
    "qrels: empty file": ("", "q1 Q0 d1 1 0.5 t\n", "qrels", 1),
    "qrels: not text": (b"q1 0 d1 1\n\xff\xfe\x00", "q1 Q0 d1 1 0.5 t\n", "qrels", 2),
}


def _files(tmp_path, case):
    qrels_text, run_text, bad, line = MALFORMED[case]
    qrels = tmp_path / "my.qrels"
    run = tmp_path / "my.run"
    for path, text in ((qrels, qrels_text), (run, run_text)):
        path.write_bytes(text if isinstance(text, bytes) else text.encode())
    return qrels, run, (run if bad == "run" else qrels), line


@pytest.mark.parametrize("engine", ["pyarrow", "pandas"])
@pytest.mark.parametrize("case", sorted(MALFORMED))
def test_malformed_file_exit_status_message_and_empty_stdout(tmp_path, monkeypatch, case, engine):
    qrels, run, bad, line = _files(tmp_path, case)
    for command in ([], ["ties"]):
        res = run_cli(*command, qrels, run, "-m", "map", engine=engine, monkeypatch=monkeypatch)
        assert res.exit_code == 2, (res.stdout, res.stderr)
        assert res.stdout == ""
        assert res.stderr.startswith(f"tierank: error: {bad}:{line}: "), res.stderr
        assert res.stderr.count("\n") == 1 and "Traceback" not in res.stderr


def test_malformed_file_in_a_real_process(tmp_path):
    qrels, run, bad, line = _files(tmp_path, "run: score not a number")
    done = subprocess.run([sys.executable, "-m", "tierank", str(qrels), str(run), "-m", "map"],
                          capture_output=True, text=True)
    assert done.returncode == 2 and done.stdout == ""
    assert done.stderr == f"tierank: error: {bad}:{line}: the score 'x' is not a number: 'q1 Q0 d2 2 x t'\n"


@pytest.mark.parametrize("fmt", ["table", "trec"])
def test_the_command_loads_no_pandas(fmt):
    # start-up (docs/architecture.md): evaluating a run file and printing means loads none of these
    # (csv, unicodedata, shlex: only to write CSV, escape text, quote an option in a message; fractions and
    # concurrent.futures: only for an inexact sum and a thread; the entry points for arrays; the measure
    # families after the last one -m names: map is in the second module, P in the first), and the
    # collector, off while the modules load (tierank/__main__.py), is on again
    families = tuple(f"tierank.measures.{name}" for name in FAMILY_MODULES[2:])
    heavy = ("pandas", "pyarrow.compute", "numpy.ma", "scipy", "matplotlib", "tqdm", "csv", "unicodedata", "shlex",
             "fractions", "concurrent.futures", "tierank.arrays", "tierank.engine.blocked", "tierank.embeddings",
             "tierank.hashing", *families)
    code = ("import atexit, gc, runpy, sys\n"
            f"atexit.register(lambda: print([m for m in {heavy!r} if m in sys.modules], gc.isenabled(),"
            " file=sys.stderr))\n"
            f"sys.argv = ['tierank', {str(DATA / 'qrels.test')!r}, {str(DATA / 'results.test')!r}, '-m', 'map', 'P.5',"
            f" '-f', {fmt!r}, '--no-progress']\n"
            "runpy.run_module('tierank', run_name='__main__')\n")
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    assert "0.1785" in done.stdout and done.stderr == "[] True\n", done.stderr


@pytest.mark.parametrize("args, message", [
    (["-m", "nDGC@10"], "unknown measure 'nDGC'"),
    (["-m", "P"], None),                                     # fine: trec_eval's default cutoffs
    (["-m", "map", "--ties", "random-ish"], "Invalid value for '--ties'"),
    (["-m", "map", "--compare"], "--compare needs at least two runs"),
    (["-m", "map", "-c", "--missing", "skip"], "contradict"),
    (["-m", "map", "--format", "xml"], "Invalid value for '-f' / '--format'"),
    (["-m", "AP@0"], "positive integer"),
])
def test_bad_usage(args, message):
    res = run_cli(DATA / "qrels.test", DATA / "results.test", *args)
    if message is None:
        assert res.exit_code == 0
        return
    assert res.exit_code == 2 and res.stdout == ""
    assert message in res.stderr


def test_missing_file_is_a_usage_error(tmp_path):
    res = run_cli(DATA / "qrels.test", tmp_path / "nope.run", "-m", "map")
    assert res.exit_code == 2 and res.stdout == "" and "does not exist" in res.stderr


def test_warnings_go_to_stderr_on_one_line():
    res = run_cli(DATA / "qrels.test", DATA / "results.trunc", "-m", "map")
    assert res.exit_code == 0
    assert res.stderr == ("tierank: warning: results.trunc: 1 judged query is missing from the run and "
                          "left out (-c scores them 0, like trec_eval -c)\n")


# --------------------------------------------------------------------------------- measures


def test_measure_lists():
    assert _split_measure_list("nDCG@10 AP,P.5,10 P(rel=2, clip=True)@5") == [
        "nDCG@10", "AP", "P.5,10", "P(rel=2, clip=True)@5"]
    expanded = expand(["P.5,10", "map ndcg_cut.10", "P_5", "AP"])
    shown, extra = shown_measures(expanded), expanded.pseudo
    assert [(m.label, str(m.measure), m.trec_name) for m in shown] == [
        ("P_5", "P@5", "P_5"), ("P_10", "P@10", "P_10"), ("map", "AP", "map"),
        ("ndcg_cut_10", "nDCG@10", "ndcg_cut_10"), ("AP", "AP", "map")]   # the second P_5 is dropped
    assert extra == set()
    expanded = expand(["official"])
    shown, extra = shown_measures(expanded), expanded.pseudo
    assert extra == {"runid", "num_q"} and [m.label for m in shown][:5] == [
        "num_q", "num_ret", "num_rel", "num_rel_ret", "map"]


def test_two_spellings_of_one_measure():
    res = run_cli(DATA / "qrels.test", DATA / "results.test", "-m", "map", "AP", "hit_rate@10", "Success@10",
                  "-f", "csv")
    frame = pd.read_csv(__import__("io").StringIO(res.stdout))
    assert frame["measure"].tolist() == ["map", "AP", "hit_rate@10", "Success@10"]
    assert frame["value"].iloc[0] == frame["value"].iloc[1]
    trec_out = run_cli(DATA / "qrels.test", DATA / "results.test", "-m", "map", "AP", "-f", "trec").stdout
    assert trec_out.count("map") == 1 and len(trec_out.splitlines()) == 1   # trec_eval prints a name once


def test_rel_level_applies_where_rel_is_not_given():
    shown = expand(["map P(rel=3)@5 nDCG@10 num_rel"], rel_level=2).values()
    assert [str(m) for m in shown] == ["AP(rel=2)", "P(rel=3)@5", "nDCG@10", "NumRel(rel=2)"]


def test_measures_after_one_dash_m_and_runs_after_them(tmp_path):
    a = run_cli(DATA / "qrels.test", DATA / "results.test", "-m", "nDCG@10", "AP", "P@5", "-f", "csv")
    b = run_cli(DATA / "qrels.test", DATA / "results.test", "-m", "nDCG@10", "-m", "AP", "-mP@5", "-f", "csv")
    assert a.exit_code == 0 and a.stdout == b.stdout
    assert pd.read_csv(__import__("io").StringIO(a.stdout))["measure"].tolist() == ["nDCG@10", "AP", "P@5"]
    # a run file after the measures is a run, not a measure
    c = run_cli(DATA / "qrels.test", DATA / "results.test", "-m", "map", "P.5", DATA / "results.test", "-f", "csv")
    runs = pd.read_csv(__import__("io").StringIO(c.stdout))["run"]
    assert sorted(set(runs)) == [f"{DATA / 'results.test'} (1)", f"{DATA / 'results.test'} (2)"]  # same file twice
    d = run_cli(DATA / "qrels.test", DATA / "results.test", "-m", "map", "P.5", DATA / "results.trunc", "-c",
                "-f", "csv")
    assert d.exit_code == 0, d.stderr
    assert sorted(set(pd.read_csv(__import__("io").StringIO(d.stdout))["run"])) == ["results.test", "results.trunc"]


# ---------------------------------------------------------------------------------- formats


def test_table_format():
    res = run_cli(DATA / "qrels.test", DATA / "results.test", "-m", "map", "P.10", "num_rel_ret", "--bounds")
    assert res.exit_code == 0
    assert res.stdout.splitlines() == [
        "results.test: 3 queries, ties=expected",
        "measure       value     min     max",
        "map          0.1785  0.1785  0.1785",
        "P_10         0.3000  0.3000  0.3000",
        "num_rel_ret     131     131     131",
    ]


def test_per_query_table_and_several_runs():
    res = run_cli(DATA / "qrels.test", DATA / "results.test", DATA / "results.trunc", "-c", "-m", "P.10", "-q")
    lines = res.stdout.splitlines()
    assert lines[:3] == ["2 runs, ties=expected", "measure  results.test  results.trunc",
                         "P_10           0.3000         0.2000"]
    assert lines[4:] == ["P_10: per query", "query  results.test  results.trunc", "301          0.2000         0.2000",
                         "302          0.7000         0.0000", "303          0.0000         0.4000",
                         "all          0.3000         0.2000"]


def test_json_format():
    res = run_cli(DATA / "qrels.test", DATA / "results.test", "-m", "map", "P.5", "-q", "--bounds",
                  "--ties", "trec_eval", "-f", "json")
    data = json.loads(res.stdout)
    assert data["ties"] == "trec_eval" and data["measures"] == {"map": "AP", "P_5": "P@5"}
    run = data["runs"][0]
    assert run["run"] == "results.test" and run["runid"] == "STANDARD" and run["queries"] == 3
    assert round(run["mean"]["map"], 4) == 0.1785 and set(run["lower"]) == {"map", "P_5"}
    assert sorted(run["per_query"]) == ["301", "302", "303"] and run["per_query"]["302"]["P_5"] == 0.8


def test_csv_format_is_tidy_and_exact():
    res = run_cli(DATA / "qrels.test", DATA / "results.test", "-m", "map", "-q", "--ties", "trec_eval",
                  "-f", "csv")
    frame = pd.read_csv(__import__("io").StringIO(res.stdout), dtype={"query": str})
    assert list(frame.columns) == ["run", "query", "measure", "value"]
    assert frame["query"].tolist() == ["301", "302", "303", "all"]
    assert frame["value"].iloc[-1] == pytest.approx(frame["value"].iloc[:3].mean(), abs=1e-15)


def test_markdown_and_latex_formats():
    md = run_cli(DATA / "qrels.test", DATA / "results.test", "-m", "ndcg_cut.10", "-f", "markdown").stdout
    assert "| measure | value |\n|:--|--:|\n| ndcg_cut_10 | 0.3016 |" in md
    tex = run_cli(DATA / "qrels.test", DATA / "results.test", "-m", "ndcg_cut.10", "-f", "latex").stdout
    assert r"\begin{tabular}{lr}" in tex and r"ndcg\_cut\_10 & 0.3016 \\" in tex and r"\bottomrule" in tex


def test_digits():
    res = run_cli(DATA / "qrels.test", DATA / "results.test", "-m", "map", "--digits", "6", "-f", "trec",
                  "--ties", "trec_eval")
    assert res.stdout.endswith("\tall\t0.178545\n")


def test_gzip_files_on_the_command_line(tmp_path):
    gz = tmp_path / "results.test.gz"
    gz.write_bytes(gzip.compress((DATA / "results.test").read_bytes()))
    plain = run_cli(DATA / "qrels.test", DATA / "results.test", "-m", "map", "-f", "trec").stdout
    assert run_cli(DATA / "qrels.test", gz, "-m", "map", "-f", "trec").stdout == plain


# ----------------------------------------------------------------------- help, version, progress


def test_help_and_version():
    res = run_cli("--help")   # the commands
    assert res.exit_code == 0 and all(c in res.stdout for c in ("eval", "ties", "measures"))
    res = run_cli("eval", "--help")
    assert res.exit_code == 0 and "QRELS RUN" in res.stdout and "tierank ties --help" in res.stdout
    assert run_cli("ties", "--help").exit_code == 0
    version = run_cli("--version")
    assert version.exit_code == 0 and version.stdout.startswith("tierank ")
    assert run_cli().exit_code == 2


def test_no_progress_bar_in_piped_output():
    # CliRunner's streams are not terminals: nothing but the output may appear
    res = run_cli(DATA / "qrels.test", DATA / "results.test", "-m", "map")
    assert res.stderr == ""


def test_progress_bar_writes_to_stderr_only(capsys):
    bar = _Progress(2, True, delay=0)
    bar.step("evaluating run.txt")
    bar.advance()
    bar.close()
    captured = capsys.readouterr()
    assert captured.out == "" and "evaluating run.txt" in captured.err
    quiet = _Progress(2, False)
    quiet.step("x")
    quiet.advance()
    quiet.close()
    assert capsys.readouterr().err == ""
