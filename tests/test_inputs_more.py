"""Inputs people have (issue #13): polars DataFrames and pyarrow Tables, runs with only a rank column,
MS MARCO and BEIR TSV files, standard input on the command line, Parquet through read_run / read_qrels.

Each input kind gives the values of the pandas / TREC-file path on the same (randomly tied) data, and bad
input gives the same clear error, naming the column and row or the file and line.
"""

from __future__ import annotations

import gzip
import re
import subprocess
import sys
import warnings
from pathlib import Path

import numpy as np
import pandas as pd
import pyarrow as pa
import pytest
from click.testing import CliRunner
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import tierank
from tierank import InputError
from tierank.cli import main
from tierank.io import trec
from tierank.io.trec import TextInput

pl = pytest.importorskip("polars")

MEASURES = ["nDCG@10", "AP", "P@5", "RR", "R@100", "NumRet", "P(rel=2)@3", "Rprec"]


def evaluate(qrels, run, measures=MEASURES, **kw):
    """Results, with the warnings (queries left out) silenced."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", tierank.TierankWarning)
        return tierank.evaluate(qrels, run, measures, **kw)


def same(a: tierank.Results, b: tierank.Results) -> None:
    assert a == b
    assert [np.float64(v).tobytes() for v in a.mean.values()] == [np.float64(v).tobytes() for v in b.mean.values()]


def random_case(seed: int, int_ids: bool = False, n_queries: int = 15) -> tuple[pd.DataFrame, pd.DataFrame]:
    """qrels and a run with many ties (scores in 0..4, ranks with repeats), grouped by query."""
    rng = np.random.default_rng(seed)
    rows = []
    for q in range(n_queries):
        n = int(rng.integers(1, 40))
        docs = rng.choice(200, size=n, replace=False)
        for d in docs:
            rows.append((q, int(d), float(rng.integers(0, 5))))
    run = pd.DataFrame(rows, columns=["query_id", "doc_id", "score"])
    judged = run.sample(frac=0.4, random_state=seed)[["query_id", "doc_id"]]
    extra = pd.DataFrame({"query_id": [n_queries, n_queries], "doc_id": [1, 2]})   # judged, not retrieved
    qrels = pd.concat([judged, extra], ignore_index=True)
    qrels["relevance"] = rng.choice([-2, 0, 1, 2, 3], size=len(qrels)).astype(np.int64)
    if not int_ids:
        run = run.assign(query_id="q" + run["query_id"].astype(str), doc_id="d" + run["doc_id"].astype(str))
        qrels = qrels.assign(query_id="q" + qrels["query_id"].astype(str),
                             doc_id="d" + qrels["doc_id"].astype(str))
    return qrels, run


def ranks_of(run: pd.DataFrame) -> pd.DataFrame:
    """The run with a rank column instead of scores: equal scores get equal ranks (dense rank from the top)."""
    rank = run.groupby("query_id")["score"].rank(method="dense", ascending=False).astype(np.int64)
    return run.drop(columns="score").assign(rank=rank)


def error_of(qrels, run, **kw) -> str:
    with pytest.raises(InputError) as info:
        evaluate(qrels, run, ["AP"], **kw)
    return str(info.value)


# ------------------------------------------------------------------------------ polars and pyarrow


@pytest.mark.parametrize("seed", range(4))
@pytest.mark.parametrize("int_ids", [False, True])
def test_polars_and_arrow_equal_pandas(seed, int_ids):
    qrels, run = random_case(seed, int_ids)
    want = evaluate(qrels, run, bounds=True)
    kinds = {
        "polars": (pl.from_pandas(qrels), pl.from_pandas(run)),
        "arrow": (pa.Table.from_pandas(qrels), pa.Table.from_pandas(run)),
        "batch": (pa.RecordBatch.from_pandas(qrels), pa.RecordBatch.from_pandas(run)),
        "chunked": (pa.concat_tables([pa.Table.from_pandas(qrels[:5]), pa.Table.from_pandas(qrels[5:])]),
                    pa.concat_tables([pa.Table.from_pandas(run[:7]), pa.Table.from_pandas(run[7:])])),
        "mixed": (qrels, pl.from_pandas(run)),
    }
    for name, (q, r) in kinds.items():
        same(evaluate(q, r, bounds=True), want)
    for ties in ("input", "trec_eval", "random"):
        same(evaluate(pl.from_pandas(qrels), pa.Table.from_pandas(run), ties=ties), evaluate(qrels, run, ties=ties))


def test_polars_types_and_aliases():
    qrels, run = random_case(7)
    want = evaluate(qrels, run)
    prun = pl.from_pandas(run).rename({"query_id": "qid", "doc_id": "docno"})
    pqrels = pl.from_pandas(qrels).rename({"relevance": "label"})
    same(evaluate(pqrels, prun), want)
    cat = prun.with_columns(pl.col("qid").cast(pl.Categorical), pl.col("docno").cast(pl.Categorical))
    same(evaluate(pqrels, cat), want)
    f32 = prun.with_columns(pl.col("score").cast(pl.Int32))
    same(evaluate(pqrels, f32), want)
    view = pa.Table.from_pandas(run).cast(pa.schema([("query_id", pa.string_view()), ("doc_id", pa.string()),
                                                     ("score", pa.float32())]))
    same(evaluate(qrels, view), want)


def test_compare_and_tie_report_take_polars_and_arrow():
    qrels, run = random_case(3)
    other = run.assign(score=run["score"][::-1].to_numpy())
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", tierank.TierankWarning)
        want = tierank.compare(qrels, {"a": run, "b": other}, ["AP"])
        got = tierank.compare(pl.from_pandas(qrels), {"a": pl.from_pandas(run), "b": pa.Table.from_pandas(other)},
                              ["AP"])
        assert got.means.equals(want.means)
        a = tierank.tie_report(qrels, run, ["AP", "P@5"])
        b = tierank.tie_report(pa.Table.from_pandas(qrels), pl.from_pandas(run), ["AP", "P@5"])
    assert str(a) == str(b)


def test_polars_is_never_imported_for_other_inputs():
    code = ("import sys, tierank, pyarrow as pa\n"
            "tierank.evaluate({'q': {'a': 1}}, {'q': {'a': 1.0, 'b': 1.0}}, ['AP'])\n"
            "tierank.evaluate(pa.table({'qid': ['q'], 'docno': ['a'], 'rel': [1]}), "
            "pa.table({'qid': ['q'], 'docno': ['a'], 'rank': [1]}), ['AP'])\n"
            "assert 'polars' not in sys.modules, 'polars imported'\n")
    subprocess.run([sys.executable, "-c", code], check=True)


def test_lazy_frames_and_other_polars_objects():
    _, run = random_case(1)
    lazy = pl.from_pandas(run).lazy()
    assert "polars LazyFrame: collect it first" in error_of({"q0": {"d1": 1}}, lazy)
    assert "polars DataFrame, not a polars Series" in error_of({"q0": {"d1": 1}}, pl.Series([1, 2]))


CASES = {
    # name: (function of the pandas run -> bad pandas run), fragment
    "null query id": (lambda r: r.assign(query_id=[None] + list(r["query_id"][1:])),
                      "the run's 'query_id' column: a missing id"),
    "null doc id": (lambda r: r.assign(doc_id=list(r["doc_id"][:-1]) + [None]),
                    "the run's 'doc_id' column: a missing id"),
    "NaN score": (lambda r: r.assign(score=[float("nan")] + list(r["score"][1:])), "is missing"),
    "duplicate": (lambda r: pd.concat([r, r.iloc[[2]]], ignore_index=True), "is listed twice for query"),
    "no score": (lambda r: r.drop(columns="score"), "the run DataFrame has no score column"),
    "two scores": (lambda r: r.assign(sim=1.0), "the run DataFrame has 2 score columns (score, sim)"),
    "no doc": (lambda r: r.drop(columns="doc_id"), "the run DataFrame has no document id column"),
    "string scores": (lambda r: r.assign(score=r["score"].astype(str)), "not a number"),
    "int and str ids": (lambda r: r.assign(query_id=np.arange(len(r))), "the query ids of the run are integers"),
}


@pytest.mark.parametrize("case", sorted(CASES))
def test_polars_and_arrow_errors_equal_pandas(case):
    qrels, run = random_case(2)
    make, fragment = CASES[case]
    bad = make(run)
    want = error_of(qrels, bad)
    assert fragment in want
    for name, conv in (("polars", pl.from_pandas), ("arrow", pa.Table.from_pandas)):
        got = error_of(qrels, conv(bad))
        expected = want.replace("the run DataFrame", "the run table") if name == "arrow" else want
        if case.startswith("null"):   # pandas shows the missing value (None); Arrow nulls have none to show
            expected = re.sub(r"a missing id \([^)]*\);", "a missing id;", expected)
        got = got.replace("(arrow int64)", "(int64)")   # the dtype named as given: an Arrow type
        assert got == expected, (name, got, expected)


def test_null_score_and_duplicate_column_names():
    qrels, run = random_case(2)
    nulls = pl.from_pandas(run).with_columns(pl.when(pl.int_range(pl.len()) == 3).then(None)
                                             .otherwise(pl.col("score")).alias("score"))
    doc, query = run["doc_id"][3], run["query_id"][3]
    assert error_of(qrels, nulls) == f"score of document {doc!r} for query {query!r} is missing"
    table = pa.Table.from_pandas(run)
    twice = pa.table([table.column(0), table.column(1), table.column(2), table.column(2)],
                     names=["query_id", "doc_id", "score", "score"])
    assert error_of(qrels, twice) == "the run table has the column 'score' twice"


# ------------------------------------------------------------------------------------- rank only


@pytest.mark.parametrize("seed", range(3))
def test_rank_only_runs_equal_minus_rank(seed):
    qrels, run = random_case(seed)
    ranked = ranks_of(run)
    want = evaluate(qrels, ranked.assign(score=-ranked["rank"].astype(float)).drop(columns="rank"), bounds=True)
    same(evaluate(qrels, ranked, bounds=True), want)
    same(evaluate(qrels, pl.from_pandas(ranked), bounds=True), want)
    same(evaluate(qrels, pa.Table.from_pandas(ranked), bounds=True), want)
    same(evaluate(qrels, ranked.astype({"rank": "Int64"}), bounds=True), want)
    same(evaluate(qrels, ranked.astype({"rank": np.uint16}), bounds=True), want)
    # ties in rank are ties in score, so the expected values equal those of the original scores
    same(evaluate(qrels, ranked), evaluate(qrels, run))


def test_score_wins_over_rank_and_bad_ranks():
    qrels, run = random_case(4)
    with_rank = run.assign(rank=np.arange(len(run))[::-1])
    same(evaluate(qrels, with_rank), evaluate(qrels, run))
    ranked = ranks_of(run)
    bad = ranked.assign(rank=ranked["rank"].astype(float))
    bad.loc[5, "rank"] = np.nan
    msg = error_of(qrels, bad)
    assert msg == f"rank of document {ranked['doc_id'][5]!r} for query {ranked['query_id'][5]!r} is missing"
    assert error_of(qrels, pl.from_pandas(bad)) == msg
    assert error_of(qrels, pa.Table.from_pandas(bad)) == msg
    assert error_of(qrels, bad.astype({"rank": "UInt8"})) == msg   # nullable unsigned: no wrap-around
    same(evaluate(qrels, ranked.astype({"rank": "UInt8"})), evaluate(qrels, ranked))
    same(evaluate(qrels, ranked.astype({"rank": "uint16[pyarrow]"})), evaluate(qrels, ranked))
    assert "not a number" in error_of(qrels, ranked.assign(rank=ranked["rank"].astype(str)))


def test_parquet_rank_only(tmp_path):
    qrels, run = random_case(5)
    ranked = ranks_of(run)
    path = tmp_path / "run.parquet"
    ranked.to_parquet(path)
    want = evaluate(qrels, ranked)
    same(evaluate(qrels, str(path)), want)
    same(evaluate(qrels, str(path), block_rows=7), want)
    same(evaluate(qrels, str(path), stream=False), want)


# -------------------------------------------------------------------------------- MS MARCO, BEIR


def write_trec_run(path: Path, run: pd.DataFrame) -> None:
    lines = [f"{q} Q0 {d} 1 {s!r} t\n" for q, d, s in zip(run["query_id"], run["doc_id"], run["score"])]
    path.write_text("".join(lines))


def write_msmarco_run(path: Path, ranked: pd.DataFrame) -> None:
    """Each query's lines together (queries in order of first appearance), by rank, as MS MARCO writes them."""
    first = pd.factorize(ranked["query_id"])[0]
    ranked = ranked.iloc[np.lexsort((ranked["rank"].to_numpy(), first))]
    path.write_text("".join(f"{q}\t{d}\t{r}\n" for q, d, r in zip(ranked["query_id"], ranked["doc_id"], ranked["rank"])))


def write_trec_qrels(path: Path, qrels: pd.DataFrame, sep: str = " ") -> None:
    path.write_text("".join(f"{q}{sep}0{sep}{d}{sep}{g}\n"
                            for q, d, g in zip(qrels["query_id"], qrels["doc_id"], qrels["relevance"])))


def write_beir_qrels(path: Path, qrels: pd.DataFrame, header: bool = True) -> None:
    head = "query-id\tcorpus-id\tscore\n" if header else ""
    path.write_text(head + "".join(f"{q}\t{d}\t{g}\n"
                                   for q, d, g in zip(qrels["query_id"], qrels["doc_id"], qrels["relevance"])))


@pytest.mark.parametrize("seed", range(3))
def test_msmarco_and_beir_files_equal_trec_files(tmp_path, seed):
    qrels, run = random_case(seed)
    ranked = ranks_of(run)
    minus = ranked.assign(score=-ranked["rank"].astype(float)).drop(columns="rank")
    write_trec_run(tmp_path / "run.trec", minus)
    write_msmarco_run(tmp_path / "run.tsv", ranked)
    write_trec_qrels(tmp_path / "qrels.trec", qrels)
    write_trec_qrels(tmp_path / "qrels.msmarco.tsv", qrels, sep="\t")
    write_beir_qrels(tmp_path / "qrels.beir.tsv", qrels)
    write_beir_qrels(tmp_path / "qrels.beir.nohead", qrels, header=False)
    want = evaluate(str(tmp_path / "qrels.trec"), str(tmp_path / "run.trec"), bounds=True)
    assert want == evaluate(qrels, minus, bounds=True)
    for q in (str(tmp_path / "qrels.msmarco.tsv"), str(tmp_path / "qrels.beir.tsv"),
              TextInput(tmp_path / "qrels.beir.nohead", "beir"), TextInput(tmp_path / "qrels.trec", "msmarco")):
        for kw in ({}, {"block_rows": 5}, {"stream": False}):
            same(evaluate(q, TextInput(tmp_path / "run.tsv", "msmarco"), bounds=True, **kw), want)
    frame = trec.read_run(tmp_path / "run.tsv", format="msmarco")
    by_line = frame.groupby(["query_id", "doc_id"])["score"].first()
    assert by_line.to_dict() == (-ranked.set_index(["query_id", "doc_id"])["rank"].astype(float)).to_dict()
    with pytest.raises(InputError, match=r"run.tsv:1: the run's format is not detected"):   # rank or score?
        trec.read_run(tmp_path / "run.tsv")
    beir = trec.read_qrels(tmp_path / "qrels.beir.tsv")
    assert beir.equals(trec.read_qrels(tmp_path / "qrels.trec"))
    assert trec.read_qrels(tmp_path / "qrels.beir.nohead", format="beir").equals(beir)
    assert trec.read_qrels(tmp_path / "qrels.msmarco.tsv", format="msmarco").equals(beir)


def test_format_detection_is_only_where_unambiguous(tmp_path):
    spaces = tmp_path / "spaces.txt"
    spaces.write_text("q1 d1 1\n")                # three fields (rank or score?): not detected, an error
    with pytest.raises(InputError, match=r"spaces.txt:1: the run's format is not detected: .*--run-format msmarco"):
        trec.read_run(spaces)
    assert trec.read_run(spaces, format="msmarco")["score"].tolist() == [-1.0]
    not_rank = tmp_path / "not_rank.txt"
    not_rank.write_text("q1\td1\t0.5\n")          # a score where the rank goes: not detected
    with pytest.raises(InputError, match=r"not_rank.txt:1: the run's format is not detected"):
        trec.read_run(not_rank)
    with pytest.raises(InputError, match=r"not_rank.txt:1: expected at least 6 fields"):
        trec.read_run(not_rank, format="trec")
    no_header = tmp_path / "beir.tsv"
    no_header.write_text("q1\td1\t1\n")           # BEIR lines without the header: not detected
    with pytest.raises(InputError, match=r"beir.tsv:1: the qrels' format is not detected: .*--qrels-format beir"):
        trec.read_qrels(no_header)
    with pytest.raises(InputError, match=r"beir.tsv:1: expected exactly 4 fields \(qid iter docid grade\)"):
        trec.read_qrels(no_header, format="trec")
    with pytest.raises(InputError, match=r"format='bogus': run files are 'trec', 'msmarco'"):
        trec.read_run(spaces, format="bogus")
    with pytest.raises(InputError, match=r"format='beir': run files are"):
        trec.read_run_columns(spaces, format="beir")


MSMARCO_ERRORS = {
    "four fields": ("q1\td1\t1\nq1\td2\t2\textra\n", 2, "expected exactly 3 fields (qid docid rank), found 4"),
    "rank not a number": ("q1\td1\t1\n\nq1\td2\ttwo\n", 3, "the rank 'two' is not a number: 'q1\\td2\\ttwo'"),
    "NaN rank": ("q1\td1\t1\nq1\td2\tnan\n", 2, "the rank is NaN"),
    "infinite rank": ("q1\td1\t1\nq1\td2\tinf\n", 2, "the rank is infinite"),
    "duplicate": ("q1\td1\t1\nq1\td2\t2\nq1\td1\t3\n", 3, "document 'd1' is listed twice for query 'q1'"),
}


@pytest.mark.parametrize("case", sorted(MSMARCO_ERRORS))
def test_msmarco_errors_name_file_and_line(tmp_path, case):
    text, line, fragment = MSMARCO_ERRORS[case]
    path = tmp_path / "run.tsv"
    path.write_text(text)
    qrels = tmp_path / "qrels.txt"
    qrels.write_text("q1 0 d1 1\n")
    messages = set()
    for kw in ({}, {"stream": False}, {"block_rows": 1}):
        with pytest.raises(InputError) as info:
            evaluate(str(qrels), TextInput(str(path), "msmarco"), ["AP"], **kw)
        messages.add(str(info.value))
    assert len(messages) == 1, messages
    assert str(info.value).startswith(f"{path}:{line}: ") and fragment in str(info.value)


def test_beir_errors_count_the_header_line(tmp_path):
    path = tmp_path / "qrels.tsv"
    path.write_text("query-id\tcorpus-id\tscore\nq1\td1\t1\nq1\td2\tx\n")
    with pytest.raises(InputError, match=r"qrels.tsv:3: the grade 'x' is not a number"):
        trec.read_qrels(path)
    path.write_text("query-id\tcorpus-id\tscore\nq1\td1\t1\t0\n")
    with pytest.raises(InputError, match=r"qrels.tsv:2: expected exactly 3 fields \(query-id corpus-id score\), found 4"):
        trec.read_qrels(path)
    path.write_text("query-id\tcorpus-id\tscore\nq1\td1\t1\nq1\td1\t2\n")
    with pytest.raises(InputError, match=r"qrels.tsv:3: document 'd1' is listed twice for query 'q1'"):
        evaluate(str(path), {"q1": {"d1": 1.0}}, ["AP"])
    path.write_text("query-id\tcorpus-id\tscore\n")
    with pytest.raises(InputError, match=r"qrels.tsv:1: no qrels line: the file holds only a header line"):
        trec.read_qrels(path)


# ---------------------------------------------------------------------------------------- Parquet


def test_read_run_and_read_qrels_route_parquet(tmp_path):
    qrels, run = random_case(6)
    run.rename(columns={"query_id": "qid"}).to_parquet(tmp_path / "run.parquet")
    qrels.to_parquet(tmp_path / "qrels.parquet")
    from tierank.io.parquet import read_qrels_parquet, read_run_parquet

    assert tierank.read_run(tmp_path / "run.parquet").equals(read_run_parquet(tmp_path / "run.parquet"))
    assert tierank.read_qrels(tmp_path / "qrels.parquet").equals(read_qrels_parquet(tmp_path / "qrels.parquet"))
    assert tierank.read_run(tmp_path / "run.parquet", format="parquet").equals(run.rename(columns={"query_id": "qid"}))
    same(evaluate(str(tmp_path / "qrels.parquet"), run), evaluate(qrels, run))
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", tierank.TierankWarning)
        assert str(tierank.tie_report(str(tmp_path / "qrels.parquet"), run, ["AP"])) == \
            str(tierank.tie_report(qrels, run, ["AP"]))


# ----------------------------------------------------------------------------------- standard input


def cli(args, stdin: bytes | None = None):
    return CliRunner().invoke(main, [str(a) for a in args], input=stdin)


@pytest.fixture
def files(tmp_path):
    qrels, run = random_case(8, n_queries=25)
    rng = np.random.default_rng(0)
    shuffled = run.iloc[rng.permutation(len(run))].reset_index(drop=True)   # not grouped by query
    write_trec_run(tmp_path / "run.txt", run)
    write_trec_run(tmp_path / "shuffled.txt", shuffled)
    write_trec_qrels(tmp_path / "qrels.txt", qrels)
    write_msmarco_run(tmp_path / "run.tsv", ranks_of(run))
    write_beir_qrels(tmp_path / "qrels.tsv", qrels)
    return tmp_path


@pytest.mark.parametrize("name", ["run.txt", "shuffled.txt", "run.tsv"])
@pytest.mark.parametrize("gz", [False, True])
def test_run_from_stdin_equals_the_file(files, name, gz):
    qrels = files / "qrels.txt"
    data = (files / name).read_bytes()
    fmt = ["--run-format", "msmarco"] if name.endswith(".tsv") else []
    want = cli([qrels, files / name, "-m", "AP", "nDCG@10", "-q", "--format", "csv", *fmt])
    assert want.exit_code == 0, want.output
    got = cli([qrels, "-", "-m", "AP", "nDCG@10", "-q", "--format", "csv", *fmt], gzip.compress(data) if gz else data)
    assert got.exit_code == 0, got.output
    assert got.stdout.replace("<stdin>", name) == want.stdout
    # Python: the first pass streams standard input, a second pass (not grouped) reads its copy
    with open(files / name, "rb") as fh:
        sys_stdin = sys.stdin
        try:
            sys.stdin = _Stdin(fh)
            got_py = evaluate(str(qrels), TextInput("-", "msmarco" if fmt else None), block_rows=16)
        finally:
            sys.stdin = sys_stdin
    same(got_py, evaluate(str(qrels), TextInput(str(files / name), "msmarco" if fmt else None)))


class _Stdin:
    def __init__(self, fh):
        self.buffer = fh


def test_qrels_from_stdin_and_formats_on_the_command_line(files):
    want = cli([files / "qrels.txt", files / "run.txt", "-m", "AP", "RR", "--format", "csv"])
    got = cli(["-", files / "run.txt", "-m", "AP", "RR", "--format", "csv"], (files / "qrels.txt").read_bytes())
    assert got.exit_code == 0 and got.stdout == want.stdout
    beir = cli(["--qrels-format", "beir", "-", files / "run.txt", "-m", "AP", "RR", "--format", "csv"],
               (files / "qrels.tsv").read_bytes())
    assert beir.exit_code == 0 and beir.stdout == want.stdout
    ms = cli([files / "qrels.tsv", files / "run.tsv", "--run-format", "msmarco", "-m", "AP", "RR", "--format", "csv"])
    assert ms.exit_code == 0 and ms.stdout == want.stdout.replace("run.txt", "run.tsv")
    ties = cli(["ties", files / "qrels.txt", "-", "-m", "AP", "--format", "csv", "--run-format", "msmarco"],
               (files / "run.tsv").read_bytes())
    want_ties = cli(["ties", files / "qrels.txt", files / "run.tsv", "-m", "AP", "--format", "csv",
                     "--run-format", "msmarco"])
    assert ties.exit_code == 0 and ties.stdout.replace("<stdin>", "run.tsv") == want_ties.stdout
    trec_fmt = cli([files / "qrels.txt", "-", "-m", "map", "runid", "--format", "trec"], (files / "run.txt").read_bytes())
    assert trec_fmt.exit_code == 0 and "runid                 \tall\tt" in trec_fmt.stdout


def test_stdin_errors(files):
    twice = cli(["-", "-", "-m", "AP"], b"")
    assert twice.exit_code == 2 and "'-' (standard input) can be read only once" in twice.output
    bad = cli([files / "qrels.txt", "-", "-m", "AP"], b"q1 Q0 d1 1 0.5 t\nq1 Q0 d2 2 oops t\n")
    assert bad.exit_code == 2 and "<stdin>:2: the score 'oops' is not a number" in bad.stderr
    wrong = cli([files / "qrels.txt", files / "run.txt", "--run-format", "msmarco", "-m", "AP"])
    assert wrong.exit_code == 2 and "run.txt:1: expected exactly 3 fields (qid docid rank), found 6" in wrong.stderr
    empty = cli([files / "qrels.txt", "-", "-m", "AP"], b"")
    assert empty.exit_code == 2 and "<stdin>:1: no run line: the file is empty" in empty.stderr


@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(block_rows=st.integers(1, 60), chunk=st.sampled_from([7, 64, 1 << 22]))
def test_ungrouped_stdin_second_pass_reads_the_whole_stream(files, monkeypatch, block_rows, chunk):
    # the first pass's reader (a thread reading ahead) must have stopped when the second pass copies the
    # rest of standard input: both reading it at once could lose or reorder lines
    import threading

    import tierank.io.blocks as blocks
    import tierank.engine.streamed as stream

    monkeypatch.setattr(blocks, "_READ_BYTES", chunk)
    bucketed = stream.bucketed

    def second_pass(*args, **kw):
        assert not any(t.name == "tierank-read-ahead" for t in threading.enumerate())
        yield from bucketed(*args, **kw)
    monkeypatch.setattr(stream, "bucketed", second_pass)
    want = evaluate(str(files / "qrels.txt"), str(files / "shuffled.txt"))
    with open(files / "shuffled.txt", "rb") as fh:
        monkeypatch.setattr(sys, "stdin", _Stdin(fh))
        got = evaluate(str(files / "qrels.txt"), TextInput("-"), block_rows=block_rows)
    same(got, want)


def test_stdin_is_read_once_and_grouped_only(files, monkeypatch):
    with open(files / "shuffled.txt", "rb") as fh:
        monkeypatch.setattr(sys, "stdin", _Stdin(fh))
        with pytest.raises(InputError, match=r"<stdin>:\d+: the run is not grouped by query"):
            evaluate(str(files / "qrels.txt"), TextInput("-"), stream="grouped", block_rows=16)
    with open(files / "run.txt", "rb") as fh:
        monkeypatch.setattr(sys, "stdin", _Stdin(fh))
        source = TextInput("-")
        trec.read_run_columns(source)
        with pytest.raises(InputError, match=r"<stdin>: standard input was already read"):
            trec.read_run_columns(source)


def test_a_polars_column_arrow_cannot_hold_is_an_input_error():
    """Regression (hostile probe): a polars Int128 score column gave pyarrow's ArrowInvalid traceback."""
    pl = pytest.importorskip("polars")
    run = pl.DataFrame({"query_id": ["q", "q"], "doc_id": ["d1", "d2"],
                        "score": pl.Series([1, 2], dtype=pl.Int128)})
    with pytest.raises(InputError, match=r"the run's polars DataFrame has a column type Arrow cannot hold "
                                         r"\(.*score: Int128\)"):
        evaluate({"q": {"d1": 0, "d2": 1}}, run, ["P@1"])
