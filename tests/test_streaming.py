"""Streaming evaluation of run files (tierank.engine.streamed, tierank.io.blocks): the results equal the
in-memory evaluation bit for bit, whatever the blocks; runs not grouped by query; Parquet; errors."""

from __future__ import annotations

import gzip
import os
import tempfile
import warnings
from pathlib import Path

import numpy as np
import pandas as pd
import pyarrow as pa
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import tierank
from tierank.io.parquet import read_run_parquet
from tierank.errors import InputError
from tierank.io.blocks import trec_blocks

MEASURES = ["nDCG@10", "AP", "P@5", "RR", "R@100", "NumRet", "P(rel=2)@3", "Rprec"]
BIG_MEASURES = ["nDCG@10", "AP", "P@5", "RR", "NumRet"]
TIES = ["expected", "optimistic", "pessimistic", "input", "trec_eval", "random"]


def _evaluate(qrels, run, measures=MEASURES, **kw):
    """Results and the messages of the warnings."""
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        res = tierank.evaluate(qrels, run, measures, **kw)
    return res, sorted(str(w.message) for w in caught)


def _same(a: tierank.Results, b: tierank.Results) -> None:
    """Equal bit for bit: per-query values, bounds, means."""
    assert a == b
    for x, y in ((a.mean, b.mean), (a.mean_lower, b.mean_lower), (a.mean_upper, b.mean_upper)):
        if x is None:
            assert y is None
            continue
        assert [np.float64(v).tobytes() for v in x.values()] == [np.float64(v).tobytes() for v in y.values()]


def _write_run(path, qid, did, score, extra: str = "") -> None:
    frame = pd.DataFrame({"q": qid, "iter": "Q0", "d": did, "rank": 1, "s": score, "tag": "t"})
    frame.to_csv(path, sep=" ", header=False, index=False)
    if extra:
        with open(path, "a") as fh:
            fh.write(extra)


# ------------------------------------------------------------------------------- a large run file


@pytest.fixture(scope="module")
def big(tmp_path_factory):
    """About 2 million run lines, 2,000 queries of 1,000 documents (a few more in the first), grouped;
    scores in 0..19 (ties everywhere); 10% judged; 100 queries without judgments, 50 judged queries
    without a run."""
    rng = np.random.default_rng(12)
    folder = tmp_path_factory.mktemp("big")
    n_q, per_q = 2000, 1000
    qnum = np.repeat(np.arange(n_q), per_q)
    qnum = np.concatenate([np.zeros(3000, np.int64), qnum])   # a query of 4,000 lines: longer than a block
    dnum = np.concatenate([rng.permutation(len(qnum))])
    score = rng.integers(0, 20, len(qnum))
    qid = ("q" + pd.Series(qnum).astype(str)).to_numpy(dtype=object)
    did = ("d" + pd.Series(dnum).astype(str)).to_numpy(dtype=object)
    run = folder / "run.txt"
    _write_run(run, qid, did, score)
    judged = np.flatnonzero((rng.random(len(qnum)) < 0.1) & (qnum >= 100))
    grade = rng.choice([-2, 0, 1, 2, 3], size=len(judged), p=[0.05, 0.45, 0.3, 0.15, 0.05])
    extra_q = np.repeat(np.arange(n_q, n_q + 50), 3)
    qrels = folder / "qrels.txt"
    pd.DataFrame({"q": np.concatenate([qid[judged], [f"q{i}" for i in extra_q]]), "i": 0,
                  "d": np.concatenate([did[judged], [f"x{i}" for i in range(len(extra_q))]]),
                  "g": np.concatenate([grade, np.ones(len(extra_q), np.int64)])}).to_csv(
        qrels, sep=" ", header=False, index=False)
    return {"run": str(run), "qrels": str(qrels), "n": len(qnum)}


@pytest.mark.parametrize("ties", TIES)
def test_big_file_equals_in_memory(big, ties):
    kw = dict(ties=ties, bounds=ties == "expected", seed=7, missing="zero")
    memory, notes = _evaluate(big["qrels"], big["run"], BIG_MEASURES, stream=False, **kw)
    assert notes == ["100 queries of the run have no judgments and are left out"]
    streamed, notes2 = _evaluate(big["qrels"], big["run"], BIG_MEASURES, block_rows=150_000, progress=False, **kw)
    assert notes2 == notes
    _same(memory, streamed)
    assert len(memory.per_query) == 1900 + 50


def test_big_file_judged_only_and_max_docs(big):
    kw = dict(ties="random", seed=3, judged_only=True, max_docs=500)
    memory, notes = _evaluate(big["qrels"], big["run"], ["AP", "nDCG@20", "bpref"], stream=False, **kw)
    streamed, notes2 = _evaluate(big["qrels"], big["run"], ["AP", "nDCG@20", "bpref"], block_rows=400_000, **kw)
    _same(memory, streamed)
    assert notes == notes2


def test_blocks_hold_whole_queries(big):
    seen = set()
    rows = 0
    for cols, first, last in trec_blocks(big["run"], 100_000):
        assert first == rows
        labels = set(pd.unique(np.asarray(cols.query, dtype=object)))
        assert not labels & seen
        seen |= labels
        rows += len(cols.value)
        assert len(cols.value) <= 100_000 or len(labels) == 1
    assert last and rows == big["n"]


# ------------------------------------------------------------------------------------- small runs


def _small(tmp_path, n_q=30, per_q=12, seed=0, shuffle=False, comments=False, name="run.txt", qrels_order="run"):
    rng = np.random.default_rng(seed)
    sizes = rng.integers(1, per_q + 1, n_q)
    qnum = np.repeat(np.arange(n_q), sizes)
    dnum = np.concatenate([rng.permutation(40)[:k] for k in sizes])
    score = rng.integers(0, 4, len(qnum)) / 2
    if shuffle:
        order = rng.permutation(len(qnum))
        qnum, dnum, score = qnum[order], dnum[order], score[order]
    lines = [f"q{q} Q0 d{d} 0 {s} t\n" for q, d, s in zip(qnum, dnum, score)]
    if comments:
        for i in sorted(rng.choice(len(lines), size=min(5, len(lines)), replace=False), reverse=True):
            lines.insert(int(i), "# comment\n" if i % 2 else "\n")
    run = tmp_path / name
    run.write_text("".join(lines))
    judged = np.flatnonzero(rng.random(len(qnum)) < 0.4)
    if qrels_order == "queries reversed":   # grouped by query, the queries in the other order
        judged = judged[np.argsort(-qnum[judged], kind="stable")]
    elif qrels_order == "shuffled":
        judged = rng.permutation(judged)
    qrels = tmp_path / "qrels.txt"
    qrels.write_text("".join(f"q{q} 0 d{d} {g}\n" for q, d, g in zip(
        qnum[judged], dnum[judged], rng.integers(0, 3, len(judged)))) + "q999 0 d1 1\n")
    return str(qrels), str(run)


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(block_rows=st.integers(1, 400), seed=st.integers(0, 10 ** 6), shuffle=st.booleans(),
       ties=st.sampled_from(TIES), missing=st.sampled_from(["skip", "zero"]),
       qrels_order=st.sampled_from(["run", "queries reversed", "shuffled"]))
def test_any_block_size_equals_in_memory(tmp_path, block_rows, seed, shuffle, ties, missing, qrels_order):
    qrels, run = _small(tmp_path, seed=seed, shuffle=shuffle, comments=True, qrels_order=qrels_order)
    kw = dict(ties=ties, bounds=ties == "expected", seed=seed, missing=missing)
    memory, notes = _evaluate(qrels, run, stream=False, **kw)
    streamed, notes2 = _evaluate(qrels, run, block_rows=block_rows, **kw)
    _same(memory, streamed)
    assert notes == notes2


@pytest.mark.parametrize("options", [
    dict(trec_eval_version=9, ties="trec_eval"),
    dict(no_relevant="skip", missing="zero", bounds=True),
    dict(judged_only=True, ties="random", seed=11),
    dict(max_docs=3, ties="input"),
    dict(no_relevant="one", measures=["AP", "nDCG@5", "gm_map", "NumRel", "bpref", "infAP"]),
])
@pytest.mark.parametrize("shuffle", [False, True])
def test_options_equal_in_memory(tmp_path, options, shuffle):
    qrels, run = _small(tmp_path, n_q=50, seed=21, shuffle=shuffle)
    options = dict(options)
    measures = options.pop("measures", MEASURES)
    memory, notes = _evaluate(qrels, run, measures, stream=False, **options)
    for block_rows in (3, 40):
        streamed, notes2 = _evaluate(qrels, run, measures, block_rows=block_rows, **options)
        _same(memory, streamed)
        assert notes == notes2


def test_ungrouped_run_takes_a_second_pass(tmp_path):
    qrels, run = _small(tmp_path, n_q=60, seed=4, shuffle=True)
    for ties in ("random", "input", "expected"):
        memory, _ = _evaluate(qrels, run, ties=ties, seed=1, stream=False)
        streamed, _ = _evaluate(qrels, run, ties=ties, seed=1, block_rows=20)
        _same(memory, streamed)


def test_ungrouped_run_with_stream_grouped_says_how_to_sort(tmp_path):
    qrels, run = _small(tmp_path, n_q=60, seed=4, shuffle=True)
    with pytest.raises(tierank.InputError, match=r"not grouped by query: query 'q\d+' comes back at line \d+ "
                                                 r".*LC_ALL=C sort -s -k1,1 ") as info:
        tierank.evaluate(qrels, run, ["AP"], stream="grouped", block_rows=20)
    assert info.value.file == run and info.value.line > 1
    # the sorted file (stable sort on the query id) gives the same results, except for ties="random"
    lines = Path(run).read_text().splitlines(keepends=True)
    (tmp_path / "sorted.txt").write_text("".join(sorted(lines, key=lambda s: s.split()[0])))
    a, _ = _evaluate(qrels, run, ties="input", stream=False)
    b, _ = _evaluate(qrels, str(tmp_path / "sorted.txt"), ties="input", stream="grouped", block_rows=20)
    _same(a, b)


def test_one_block_is_never_checked_for_grouping(tmp_path):
    qrels, run = _small(tmp_path, seed=5, shuffle=True)
    a, _ = _evaluate(qrels, run, stream=False)
    b, _ = _evaluate(qrels, run, stream="grouped")   # the whole file is one block
    _same(a, b)


def test_gzip_run(tmp_path):
    qrels, run = _small(tmp_path, seed=6)
    gz = tmp_path / "run.txt.gz"
    gz.write_bytes(gzip.compress(b"\xef\xbb\xbf" + Path(run).read_bytes()))
    a, _ = _evaluate(qrels, run, stream=False)
    b, _ = _evaluate(qrels, str(gz), block_rows=7)
    _same(a, b)


def test_progress_bar_is_optional(tmp_path, capsys):
    qrels, run = _small(tmp_path, seed=8)
    a, _ = _evaluate(qrels, run, block_rows=5, progress=True)
    b, _ = _evaluate(qrels, run, block_rows=5)   # not a terminal under pytest: silent
    _same(a, b)
    assert capsys.readouterr().err == ""   # the bar shows up only after half a second


def test_progress_bar_shows_the_file(tmp_path, capsys, monkeypatch):
    import tierank._progress

    monkeypatch.setattr(tierank._progress, "DELAY", 0)
    qrels, run = _small(tmp_path, seed=8)
    _evaluate(qrels, run, ["AP"], block_rows=5, progress=True)
    assert "run.txt" in capsys.readouterr().err
    _evaluate(qrels, run, ["AP"], block_rows=5, progress=False)
    assert capsys.readouterr().err == ""


def test_bad_block_rows(tmp_path):
    qrels, run = _small(tmp_path)
    with pytest.raises(tierank.InputError, match="block_rows must be a positive integer"):
        tierank.evaluate(qrels, run, ["AP"], block_rows=0)
    with pytest.raises(tierank.InputError, match="stream='yes'"):
        tierank.evaluate(qrels, run, ["AP"], stream="yes")


# ------------------------------------------------------------------------------------------ errors


def _lines_run(tmp_path, n=300):
    return [f"q{i // 10} Q0 d{i} 1 {i % 3} t\n" for i in range(n)]


@pytest.mark.parametrize("bad, message", [
    ("q29 Q0 dx 1 high t\n", r"the score 'high' is not a number: 'q29 Q0 dx 1 high t'"),
    ("q29 Q0 dx 1 nan t\n", r"the score is NaN"),
    ("q29 Q0 dx 1\n", r"expected at least 6 fields \(qid Q0 docid rank score tag\), found 4"),
    ("q29 Q0 d\x00x 1 1 t\n", r"not a text file: NUL byte, at column 9"),
    ("q28 Q0 d289 1 1 t\n", r"document 'd289' is listed twice for query 'q28' in the run \(line 291\)"),
    ("q29 Q0 d290 1 1 t\n", r"document 'd290' is listed twice for query 'q29' in the run \(line 292\)"),
])
def test_bad_lines_name_file_and_line(tmp_path, bad, message):
    qrels = tmp_path / "qrels.txt"
    qrels.write_text("q1 0 d10 1\nq29 0 d290 1\n")
    lines = _lines_run(tmp_path)
    lines.insert(290, bad)   # line 291, in a late block
    run = tmp_path / "run.txt"
    run.write_text("".join(lines))
    for block_rows in (7, 64, 10 ** 6):
        with pytest.raises(tierank.InputError, match=message) as info:
            tierank.evaluate(str(qrels), str(run), ["AP"], block_rows=block_rows)
        line = 292 if "d290" in bad else 291
        assert (info.value.file, info.value.line) == (str(run), line)
        assert str(info.value).startswith(f"{run}:{line}: ")


def test_bad_gzip_lines_name_file_and_line(tmp_path):
    qrels = tmp_path / "qrels.txt"
    qrels.write_text("q1 0 d10 1\n")
    lines = _lines_run(tmp_path)
    lines.insert(200, "q20 Q0 dx 1 x t\n")
    run = tmp_path / "run.txt.gz"
    run.write_bytes(gzip.compress("".join(lines).encode()))
    with pytest.raises(tierank.InputError, match=r"run.txt.gz:201: the score 'x' is not a number"):
        tierank.evaluate(str(qrels), str(run), ["AP"], block_rows=16)


@pytest.mark.parametrize("text, what", [("", "the file is empty"),
                                        ("# only\n\n# comments\n", "the file holds only blank and comment lines")])
def test_no_run_line(tmp_path, text, what):
    qrels = tmp_path / "qrels.txt"
    qrels.write_text("q1 0 d10 1\n")
    run = tmp_path / "run.txt"
    run.write_text(text)
    for stream in (None, False):
        with pytest.raises(tierank.InputError, match=f"run.txt:1: no run line: {what}"):
            tierank.evaluate(str(qrels), str(run), ["AP"], stream=stream, block_rows=1)


def test_nothing_to_evaluate_and_qrels_errors(tmp_path):
    run = tmp_path / "run.txt"
    run.write_text("".join(_lines_run(tmp_path)))
    qrels = tmp_path / "qrels.txt"
    qrels.write_text("z1 0 d10 1\n")
    for stream in (None, False):
        with pytest.raises(tierank.InputError, match="no query is both in the run and in the qrels"):
            tierank.evaluate(str(qrels), str(run), ["AP"], stream=stream, block_rows=10)
    qrels.write_text("q1 0 d10 1\nq1 0 d10 0\n")
    for stream in (None, False):
        with pytest.raises(tierank.InputError, match=r"qrels.txt:2: document 'd10' is listed twice for query "
                                                     r"'q1' in the qrels \(line 2\)"):
            tierank.evaluate(str(qrels), str(run), ["AP"], stream=stream, block_rows=10)


def test_missing_file(tmp_path):
    with pytest.raises(FileNotFoundError):
        tierank.evaluate({"q": {"d": 1}}, str(tmp_path / "nope.txt"), ["AP"])


# ------------------------------------------------------------------------------------------ Parquet


def _frame(seed=0, n_q=40, shuffle=False, int_ids=True):
    rng = np.random.default_rng(seed)
    sizes = rng.integers(1, 15, n_q)
    qnum = np.repeat(np.arange(n_q), sizes)
    dnum = np.concatenate([rng.permutation(50)[:k] for k in sizes])
    run = pd.DataFrame({"qid": qnum if int_ids else [f"q{q}" for q in qnum],
                        "docno": dnum if int_ids else [f"d{d}" for d in dnum],
                        "sim": rng.integers(0, 4, len(qnum)).astype(np.float32), "other": 1})
    if shuffle:
        run = run.sample(frac=1, random_state=seed).reset_index(drop=True)
    judged = rng.random(len(run)) < 0.4
    qrels = pd.DataFrame({"query_id": run["qid"][judged], "doc_id": run["docno"][judged],
                          "relevance": rng.integers(0, 3, int(judged.sum()))})
    return run, qrels


@pytest.mark.parametrize("int_ids", [True, False])
@pytest.mark.parametrize("ties", ["expected", "random", "input"])
def test_parquet_file_and_directory(tmp_path, int_ids, ties):
    run, qrels = _frame(seed=1, int_ids=int_ids)
    file = tmp_path / "run.parquet"
    run.to_parquet(file, row_group_size=37)
    folder = tmp_path / "ds"
    folder.mkdir()
    for i, part in enumerate(np.array_split(np.arange(len(run)), 5)):   # queries cut across files
        run.iloc[part].to_parquet(folder / f"part-{i}.parquet")
    kw = dict(ties=ties, bounds=True, seed=3)
    memory, _ = _evaluate(qrels, run, **kw)
    for path in (file, folder):
        for block_rows in (1, 25, 10 ** 6):
            _same(memory, _evaluate(qrels, str(path), block_rows=block_rows, **kw)[0])
        _same(memory, _evaluate(qrels, path, stream=False, **kw)[0])   # os.PathLike too
    pd.testing.assert_frame_equal(read_run_parquet(folder), run[["qid", "docno", "sim"]])


def test_parquet_qrels_and_ungrouped_run(tmp_path):
    run, qrels = _frame(seed=2, shuffle=True)
    run.to_parquet(tmp_path / "run.parquet")
    qrels.to_parquet(tmp_path / "qrels.parquet")
    memory, _ = _evaluate(qrels, run, ties="random", seed=9)
    streamed, _ = _evaluate(str(tmp_path / "qrels.parquet"), str(tmp_path / "run.parquet"), ties="random",
                            seed=9, block_rows=20)
    _same(memory, streamed)
    with pytest.raises(tierank.InputError, match=r"run.parquet: the run is not grouped by query: query \d+ "
                                                 r"comes back at row \d+ .*sort_indices"):
        tierank.evaluate(qrels, str(tmp_path / "run.parquet"), ["AP"], block_rows=20, stream="grouped")


def test_parquet_qrels_with_a_run_in_memory(tmp_path):
    run, qrels = _frame(seed=5)
    qrels.to_parquet(tmp_path / "qrels.parquet")
    _same(_evaluate(qrels, run)[0], _evaluate(tmp_path / "qrels.parquet", run)[0])


def test_parquet_errors_name_file_and_row(tmp_path):
    run, qrels = _frame(seed=3)
    run.loc[101, "docno"] = run.loc[100, "docno"] if run.loc[100, "qid"] == run.loc[101, "qid"] else 0
    run.loc[101, "qid"] = run.loc[100, "qid"]
    folder = tmp_path / "ds"
    folder.mkdir()
    run.iloc[:60].to_parquet(folder / "a.parquet")
    run.iloc[60:].to_parquet(folder / "b.parquet")
    with pytest.raises(tierank.InputError, match=r"b.parquet: document \d+ is listed twice for query \d+ in the "
                                                 r"run \(row 41\)"):
        tierank.evaluate(qrels, str(folder), ["AP"], block_rows=10)
    with pytest.raises(tierank.InputError, match=r"is listed twice .* \(row 101\)"):
        tierank.evaluate(qrels, run, ["AP"])   # in memory: the row of the DataFrame
    bad = run.rename(columns={"qid": "topic"})
    bad.to_parquet(tmp_path / "bad.parquet")
    with pytest.raises(tierank.InputError, match=r"bad.parquet: the run table has no query id column"):
        tierank.evaluate(qrels, str(tmp_path / "bad.parquet"), ["AP"])
    nan = run.copy()
    nan.loc[70, "sim"] = np.nan
    nan.to_parquet(tmp_path / "nan.parquet")
    with pytest.raises(tierank.InputError, match=r"nan.parquet: score of document \d+ for query \d+ is missing"):
        tierank.evaluate(qrels, str(tmp_path / "nan.parquet"), ["AP"], block_rows=8)


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(n=st.integers(2, 30), data=st.data(), problem=st.sampled_from(["repeat", "missing grade"]),
       int_ids=st.booleans(), stream=st.sampled_from([None, False]))
def test_parquet_qrels_errors_name_the_file_and_its_row(tmp_path, n, data, problem, int_ids, stream):
    """Qrels stored as a Parquet dataset of 1-3 files (read whole, in memory): an error names the file
    holding the bad row, and for a repeated pair the row in that file (the run is evaluated in blocks or
    in one piece: the qrels are read the same way)."""
    bad = data.draw(st.integers(1, n - 1))
    cuts = sorted(data.draw(st.lists(st.integers(1, n - 1), max_size=2, unique=True)))
    qnum, dnum = np.arange(n) // 4, np.arange(n)
    grade = np.arange(n, dtype=np.float64) % 3
    if problem == "repeat":
        earlier = data.draw(st.integers(0, bad - 1))
        qnum[bad], dnum[bad] = qnum[earlier], dnum[earlier]
    else:
        grade[bad] = np.nan
    ids = (lambda a: a) if int_ids else (lambda a: [f"x{v}" for v in a])
    qrels = pd.DataFrame({"query_id": ids(qnum), "doc_id": ids(dnum), "relevance": grade})
    folder = Path(tempfile.mkdtemp(dir=tmp_path))   # one per example (tmp_path is shared)
    bounds = [0, *cuts, n]
    for f in range(len(bounds) - 1):
        qrels.iloc[bounds[f]:bounds[f + 1]].to_parquet(folder / f"part{f}.parquet")
    run = folder.with_suffix(".run.parquet")
    pd.DataFrame({"query_id": ids(qnum[:1]), "doc_id": ids(dnum[:1]), "score": [1.0]}).to_parquet(run)
    f = int(np.searchsorted(bounds, bad, side="right")) - 1   # the file of the bad row, and its row there
    expected = rf"part{f}\.parquet: " + (
        rf"document '?x?{dnum[bad]}'? is listed twice for query '?x?{qnum[bad]}'? in the qrels "
        rf"\(row {bad - bounds[f]}\)" if problem == "repeat" else "grade of document .* is missing")
    with pytest.raises(tierank.InputError, match=expected):
        tierank.evaluate(str(folder), str(run), ["AP"], stream=stream)


# ----------------------------------------------------------------------------------------------- CLI


def test_cli_streams_text_and_parquet(tmp_path):
    from click.testing import CliRunner

    from tierank.cli import main

    run, qrels = _frame(seed=4, int_ids=False)
    run.to_parquet(tmp_path / "run.parquet")
    qrels.to_parquet(tmp_path / "qrels.parquet")
    tierank.write_run(run.rename(columns={"qid": "query_id", "docno": "doc_id", "sim": "score"}),
                      tmp_path / "run.txt")
    tierank.write_qrels(qrels, tmp_path / "qrels.txt")
    outputs = []
    for q, r in (("qrels.txt", "run.txt"), ("qrels.parquet", "run.parquet"), ("qrels.txt", "run.parquet")):
        result = CliRunner().invoke(main, ["eval", str(tmp_path / q), str(tmp_path / r), "-m", "AP", "nDCG@10",
                                           "--format", "csv"])
        assert result.exit_code == 0, result.output
        outputs.append(result.output.replace(r.split(".")[0] + "." + r.split(".")[1], "RUN"))
    assert outputs[0] == outputs[1] == outputs[2]
    folder = tmp_path / "ds"
    folder.mkdir()
    run.to_parquet(folder / "p.parquet")
    result = CliRunner().invoke(main, ["eval", str(tmp_path / "qrels.txt"), str(folder), "-m", "AP"])
    assert result.exit_code == 0, result.output


def test_read_ahead_keeps_order_raises_in_place_and_stops_with_the_caller():
    import threading

    from tierank.io.blocks import read_ahead

    closed = []

    def blocks(fail_at=None):
        try:
            for i in range(6):
                if i == fail_at:
                    raise InputError(f"run.txt:{i}: bad line")
                yield i
        finally:
            closed.append(threading.current_thread().name)

    assert list(read_ahead(blocks())) == list(range(6))
    got = []
    with pytest.raises(InputError, match="run.txt:4: bad line"):
        for i in read_ahead(blocks(fail_at=4)):
            got.append(i)
    assert got == [0, 1, 2, 3]                  # every block before the bad one, then its error
    it = read_ahead(blocks())
    assert next(it) == 0
    it.close()                                  # the caller stops early (an error in its evaluation)
    assert len(closed) == 3 and not any(t.name == "tierank-read-ahead" for t in threading.enumerate())


@settings(max_examples=200, deadline=None)
@given(sizes=st.lists(st.integers(1, 3000), min_size=1, max_size=12), seed=st.integers(0, 10 ** 6),
       kind=st.sampled_from(["numpy", "arrow", "chunked", "strings"]))
def test_last_query_start_is_where_the_last_query_starts(sizes, seed, kind):
    # it looks in growing windows from the end: the answer is that of a scan of every row
    from tierank.io.blocks import _last_query_start

    rng = np.random.default_rng(seed)
    q = np.repeat(rng.integers(0, 3, len(sizes)), sizes)   # runs of ids; neighbours may share one
    other = np.flatnonzero(q != q[-1])
    expected = int(other[-1]) + 1 if len(other) else 0
    arr = {"numpy": lambda: q, "arrow": lambda: pa.array(q), "strings": lambda: pa.array([f"q{x}" for x in q]),
           "chunked": lambda: pa.chunked_array([q[: len(q) // 2], q[len(q) // 2:]])}[kind]()
    assert _last_query_start(arr) == expected


def test_read_ahead_reads_at_most_depth_blocks_ahead():
    import time

    from tierank.io.blocks import read_ahead

    made = []

    def blocks():
        for i in range(40):
            made.append(i)
            yield i

    def settled():   # the reader has stopped making blocks
        n = -1
        while n != len(made):
            n = len(made)
            time.sleep(0.2)
        return n
    reader = read_ahead(blocks(), depth=5)   # started at once: reads while the caller does other work
    assert settled() == 6                     # five in the queue, one waiting to go in
    reader.keep(1)
    assert [next(reader) for _ in range(6)] == list(range(6))
    assert settled() == 8                     # from now on one block ahead
    assert list(reader) == list(range(6, 40))
    reader.close()


def test_run_errors_wait_for_the_qrels_errors(tmp_path):
    # the run is read while the qrels are, but a bad qrels line is still reported first
    (tmp_path / "qrels.txt").write_text("q1 0 d1 1\nq1 0 d2 high\n")
    (tmp_path / "run.txt").write_text("q1 Q0 d1 1 oops t\n")
    with pytest.raises(InputError, match=r"qrels.txt:2: the grade 'high' is not a number"):
        tierank.evaluate(str(tmp_path / "qrels.txt"), str(tmp_path / "run.txt"), ["AP"])


@pytest.mark.parametrize("rows", [[2, 3, 4], [0, 2, 2, 1, 4], [4, 3, 2], [1, 3], [5], []])
def test_take_reads_the_rows_asked_for(rows):
    from tierank.data.columns import Columns
    from tierank.io.blocks import take_rows

    q = pa.array([f"q{i}" for i in range(6)])
    cols = Columns(query=q, doc=np.arange(6) * 10, value=np.arange(6) / 2, source="run.txt", lines=np.arange(6) + 1)
    got = take_rows(cols, np.array(rows, dtype=np.int64))
    assert got.query.to_pylist() == [f"q{i}" for i in rows]
    assert got.doc.tolist() == [10 * i for i in rows]
    assert got.value.tolist() == [i / 2 for i in rows]
    assert got.lines.tolist() == [i + 1 for i in rows]


@st.composite
def _run_texts(draw):
    """A grouped TREC run as text: queries of 1-6 lines, runs of blank and comment lines anywhere
    (several in a row, enough to fill a block), LF or CRLF line ends, a last line with or without its
    line end."""
    n_q = draw(st.integers(1, 8))
    lines = []
    for q in range(n_q):
        for d in range(draw(st.integers(1, 6))):
            lines.extend(draw(st.lists(st.sampled_from(["", "# note", "   "]), max_size=4)))
            lines.append(f"q{q} Q0 d{d} {d} {draw(st.integers(0, 3))} t")
    end = draw(st.sampled_from(["\n", "\r\n"]))
    return end.join(lines) + draw(st.sampled_from(["", end]))


_LINE_PROBLEMS = ["q0 Q0 dx 1 high t", "q0 Q0 dx 1", "q0 Q0 dx 1 nan t", "q0\tQ0  dx 1 - t",
                  "q0,Q0,dx,1,1,t"]   # comma-separated: the message says so
# a NUL, a control character, Latin-1 and a UTF-16 line (the messages name the encoding)
_TEXT_PROBLEMS = ["q0 Q0 d\x00x 1 1 t", "q0 Q0 dx 1 1 t\x07", "q0 Q0 d\xe9 1 1 t",
                  "q0 Q0 dx 1 1 t".encode("utf-16-le").decode("latin-1")]


@settings(max_examples=200, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(text=_run_texts(), block_rows=st.integers(1, 12), read_bytes=st.integers(1, 80), data=st.data())
def test_blocks_report_the_first_bad_line_as_in_memory(tmp_path, monkeypatch, text, block_rows, read_bytes, data):
    """Whatever the blocks and the reads, the error of a streamed run is the one of its first bad line,
    with the message and the line of the whole file's reading; so too when the lines are parsed in line
    (no background thread) instead of beside the text check."""
    import tierank._threads as threads
    from tierank.io import blocks, trec

    monkeypatch.setattr(blocks, "_READ_BYTES", read_bytes)
    monkeypatch.setattr(threads, "_SINGLE_THREADED", data.draw(st.booleans(), "threads off"))
    lines = text.split("\n")
    if data.draw(st.booleans(), "two line problems"):   # the first of two bad lines is named
        bad = [data.draw(st.sampled_from(_LINE_PROBLEMS)) for _ in range(2)]
    else:   # a byte that is not text (the whole file's reading checks these before the lines)
        bad = [data.draw(st.sampled_from(_LINE_PROBLEMS + _TEXT_PROBLEMS))]
    for problem in bad:
        lines.insert(data.draw(st.integers(0, len(lines))), problem)
    path = tmp_path / "run.txt"
    path.write_bytes("\n".join(lines).encode("latin-1"))
    with pytest.raises(InputError) as whole:
        trec.read_run_columns(str(path))
    with pytest.raises(InputError) as streamed:
        for _ in trec_blocks(str(path), block_rows, progress=False):
            pass
    assert (streamed.value.message, streamed.value.line) == (whole.value.message, whole.value.line)


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(text=_run_texts(), block_rows=st.integers(1, 12), read_bytes=st.integers(1, 80))
def test_blocks_at_any_read_size(tmp_path, monkeypatch, text, block_rows, read_bytes):
    """Blocks cut from chunks of any size (line ends found once per chunk, carried from block to
    block): together they are the rows of the whole file, each holds whole queries, and a block holds
    at most ``block_rows`` lines unless its first query alone is longer."""
    from tierank.io import blocks, trec

    monkeypatch.setattr(blocks, "_READ_BYTES", read_bytes)
    path = tmp_path / "run.txt"
    path.write_bytes(text.encode())
    whole = trec.read_run_columns(str(path))
    got, seen, rows = [], set(), 0
    for cols, first, last in trec_blocks(str(path), block_rows, progress=False):
        assert first == rows and len(cols.value)
        queries = list(dict.fromkeys(np.asarray(cols.query, dtype=object).tolist()))
        assert not seen & set(queries)
        seen |= set(queries)
        span = int(cols.lines[-1]) - int(cols.lines[0]) + 1         # lines from its first row to its last
        if len(queries) > 1:   # a block of w lines holding one query only is read again with 2w lines
            second = int(cols.lines[np.flatnonzero(np.asarray(cols.query, dtype=object) != queries[0])[0]])
            before = second - int(cols.lines[0]) + 4                  # + the comment lines before its first row
            assert span <= max(block_rows, 2 * before)
        got.append((np.asarray(cols.query, dtype=object), np.asarray(cols.doc, dtype=object), cols.value, cols.lines))
        rows += len(cols.value)
    assert last and rows == len(whole.value)
    for i, part in enumerate((whole.query, whole.doc, whole.value, whole.lines)):
        assert np.concatenate([g[i] for g in got]).tolist() == np.asarray(part, dtype=object).tolist()


@settings(max_examples=300, deadline=None)
@given(lines=st.lists(st.binary(max_size=6).map(lambda b: b.replace(b"\n", b"")), max_size=25),
       end=st.booleans(), read_bytes=st.integers(1, 12), asks=st.lists(st.integers(0, 40), max_size=12))
def test_pending_text_holds_the_bytes_read_and_cuts_at_line_ends(lines, end, read_bytes, asks):
    """The reader's buffer of chunks: after any reads and cuts it holds exactly the bytes not yet cut,
    counts their line ends, and places the j-th line end where the bytes have it."""
    from tierank.io.blocks import _Pending

    text = b"\n".join(lines) + (b"\n" if end and lines else b"")
    chunks = iter([text[i:i + read_bytes] for i in range(read_bytes, len(text), read_bytes)] + [b""])
    held = _Pending(lambda: next(chunks), text[:read_bytes])
    cut = 0   # bytes of the text cut off so far
    for ask in asks:
        held.fill(ask)
        rest = text[cut:cut + held.size]
        assert rest == held.head(held.size) and held.n_lines == rest.count(b"\n")
        assert held.n_lines >= ask or (held.eof and cut + held.size == len(text))
        if held.n_lines:
            j = 1 + ask % held.n_lines
            stop = held.line_end(j)
            assert rest[:stop].count(b"\n") == j and rest[stop - 1:stop] == b"\n"
            held.drop(stop)
            cut += stop


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(n_lines=st.integers(1, 30), head=st.sampled_from(["", "# a comment\n", "\n\n# two\n"]),
       block_rows=st.integers(1, 12), read_bytes=st.integers(1, 40))
def test_blocks_tell_the_layout_whatever_the_read_size(tmp_path, monkeypatch, n_lines, head, block_rows, read_bytes):
    """A run of three fields (qid<TAB>docid<TAB>rank) is told from a TREC run by its first data line, even
    when the first read holds less than that line: without a format both readings refuse it at that line
    (rank or score?), with format="msmarco" the blocks hold the rows of the whole file's reading.
    (Failed before: reads of a few bytes took such a run for TREC and refused its lines.)"""
    from tierank.io import blocks, trec

    monkeypatch.setattr(blocks, "_READ_BYTES", read_bytes)
    path = tmp_path / "run.tsv"
    path.write_text(head + "".join(f"q{i // 4}\td{i}\t{i % 4 + 1}\n" for i in range(n_lines)))
    with pytest.raises(InputError) as whole_error:
        trec.read_run_columns(str(path))
    with pytest.raises(InputError) as streamed_error:
        list(trec_blocks(str(path), block_rows, progress=False))
    assert (streamed_error.value.message, streamed_error.value.line) == \
        (whole_error.value.message, whole_error.value.line)
    assert whole_error.value.line == head.count("\n") + 1 and "--run-format msmarco" in whole_error.value.message
    whole = trec.read_run_columns(trec.TextInput(str(path), "msmarco"))
    blocks = list(trec_blocks(str(path), block_rows, progress=False, format="msmarco"))
    assert np.concatenate([np.asarray(c.doc, dtype=object) for c, _, _ in blocks]).tolist() == \
        np.asarray(whole.doc, dtype=object).tolist()
    assert np.concatenate([c.value for c, _, _ in blocks]).tolist() == np.asarray(whole.value).tolist()
