"""A streamed Parquet run evaluated by worker processes (tierank.io.workers): the results equal the
in-memory evaluation bit for bit, and anything unusual (errors, warnings, a run not grouped by query, a
worker that dies) gives what one process gives."""

from __future__ import annotations

import os
import sys
import warnings

import numpy as np
import pandas as pd
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq
import pytest
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st

import tierank
import tierank.engine.streamed as stream
import tierank.io.workers as workers_module
from tierank.io.blocks import parquet_blocks
from tierank.io.parquet import ParquetRun

from test_streaming import _evaluate as _evaluate_with, _same   # noqa: I001 - the streaming tests' helpers

MEASURES = ["nDCG@10", "AP", "P@5", "RR", "NumRet", "Rprec"]
TIES = ["expected", "optimistic", "pessimistic", "input", "trec_eval", "random"]


def _evaluate(qrels, run, measures=MEASURES, **kw):
    """Results and the messages of the warnings."""
    return _evaluate_with(qrels, run, measures, **kw)


pytestmark = pytest.mark.skipif(not sys.platform.startswith("linux"), reason="worker processes need fork (Linux)")


class _Paths:
    """Records whether each evaluation was done by worker processes."""

    def __init__(self, monkeypatch) -> None:
        self.taken: list[bool] = []
        original = stream._in_workers

        def spy(*args, **kw):
            took = original(*args, **kw)
            self.taken.append(took)
            return took
        monkeypatch.setattr(stream, "_in_workers", spy)


def _tables(rng, n_q, int_ids, long_queries):
    """A run grouped by query (some queries far longer than a row group) and its qrels."""
    sizes = rng.integers(1, 60 if long_queries else 12, n_q)
    qnum = np.repeat(rng.permutation(n_q * 3)[:n_q], sizes)   # query ids not in order
    dnum = np.concatenate([rng.permutation(80)[:k] for k in sizes])
    run = pd.DataFrame({"qid": qnum if int_ids else [f"q{q}" for q in qnum],
                        "docno": dnum if int_ids else [f"d{d}" for d in dnum],
                        "sim": rng.integers(0, 4, len(qnum)).astype(np.float64)})
    judged = rng.random(len(run)) < 0.4
    qrels = pd.DataFrame({"query_id": run["qid"][judged], "doc_id": run["docno"][judged],
                          "relevance": rng.integers(-1, 3, int(judged.sum()))})
    extra = pd.DataFrame({"query_id": ["z1", "z2"] if not int_ids else [10 ** 6, 10 ** 6 + 1],
                          "doc_id": ["d1", "d1"] if not int_ids else [1, 1], "relevance": [1, 0]})
    return run, pd.concat([qrels, extra], ignore_index=True)   # two judged queries the run never meets


@settings(max_examples=30, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(seed=st.integers(0, 10 ** 6), n_q=st.integers(2, 40), group_rows=st.integers(1, 30),
       n_workers=st.integers(2, 4), block_rows=st.integers(1, 50), int_ids=st.booleans(),
       long_queries=st.booleans(), ties=st.sampled_from(TIES), missing=st.sampled_from(["skip", "zero"]),
       files=st.integers(1, 3))
@example(seed=49, n_q=2, group_rows=1, n_workers=2, block_rows=1, int_ids=False, long_queries=False,
         ties="expected", missing="skip", files=1)   # no run row judged: both paths raise "nothing to evaluate"
def test_workers_equal_in_memory(tmp_path_factory, monkeypatch, seed, n_q, group_rows, n_workers, block_rows,
                                 int_ids, long_queries, ties, missing, files):
    rng = np.random.default_rng(seed)
    run, qrels = _tables(rng, n_q, int_ids, long_queries)
    folder = tmp_path_factory.mktemp("run")
    cuts = np.sort(rng.integers(0, len(run) + 1, files - 1))   # a query may span two files
    for i, (a, b) in enumerate(zip(np.r_[0, cuts], np.r_[cuts, len(run)])):
        run.iloc[a:b].to_parquet(folder / f"part{i}.parquet", row_group_size=group_rows)
    bounds = ties not in ("input", "trec_eval", "random")
    paths = _Paths(monkeypatch)
    try:
        expected, warned = _evaluate(qrels, run, ties=ties, bounds=bounds, missing=missing)
    except tierank.InputError as err:   # no run row judged (a small run): the same error from the workers' path
        with pytest.raises(tierank.InputError) as streamed:
            _evaluate(qrels, str(folder), ties=ties, bounds=bounds, missing=missing, block_rows=block_rows,
                      workers=n_workers)
        assert str(streamed.value) == str(err)
        return
    got, got_warned = _evaluate(qrels, str(folder), ties=ties, bounds=bounds, missing=missing,
                                block_rows=block_rows, workers=n_workers)
    _same(got, expected)
    assert got_warned == warned
    groups = ParquetRun.open(folder).groups
    assert paths.taken == ([True] if int((groups[:, 3] > 0).sum()) > 1 else [])   # split when there are two row groups


def test_segments_cover_the_rows_at_row_group_starts(tmp_path):
    run, _ = _tables(np.random.default_rng(3), 30, True, True)
    run.to_parquet(tmp_path / "run.parquet", row_group_size=17)
    dataset = ParquetRun.open(tmp_path / "run.parquet")
    starts = set(dataset.groups[:, 2].tolist())
    for n in (1, 2, 3, 7, 1000):
        segments = dataset.segments(n)
        assert 1 <= len(segments) <= n
        assert segments[0][0] == 0 and segments[-1][1] == len(run)
        assert all(a < b for a, b in segments) and all(s[1] == t[0] for s, t in zip(segments, segments[1:]))
        assert {a for a, _ in segments} <= starts
        # each query is read by exactly one segment, whole, in file order
        rows = [c.lines for part in segments for c, _, _ in parquet_blocks(tmp_path / "run.parquet", 9, False, part)]
        assert np.array_equal(np.concatenate(rows), np.arange(len(run)))


def test_ungrouped_run_takes_the_second_pass(tmp_path, monkeypatch):
    run, qrels = _tables(np.random.default_rng(5), 20, True, False)
    run = pd.concat([run, run.iloc[:1].assign(docno=999)], ignore_index=True)   # the first query comes back
    run.to_parquet(tmp_path / "run.parquet", row_group_size=10)
    paths = _Paths(monkeypatch)
    expected, _ = _evaluate(qrels, run, ties="random")
    got, _ = _evaluate(qrels, str(tmp_path / "run.parquet"), ties="random", block_rows=7, workers=2)
    _same(got, expected)
    assert paths.taken == [False]
    messages = []
    for n in (1, 3):
        with pytest.raises(tierank.InputError) as err:
            tierank.evaluate(qrels, str(tmp_path / "run.parquet"), ["AP"], block_rows=7, workers=n, stream="grouped")
        messages.append(str(err.value))
    assert messages[0] == messages[1] and "not grouped by query" in messages[0]


def _problem(run, qrels, problem):
    run, qrels = run.copy(), qrels.copy()
    last = len(run) - 1
    if problem == "run repeat":   # in the last worker's rows
        run.loc[last, "docno"] = run.loc[last - 1, "docno"] if run.loc[last, "qid"] == run.loc[last - 1, "qid"] else 0
        run = pd.concat([run, run.iloc[[last]]], ignore_index=True)
    elif problem == "null doc":
        run["docno"] = run["docno"].astype("Int64")
        run.loc[last // 2, "docno"] = pd.NA
    elif problem == "nan score":
        run.loc[last, "sim"] = np.nan
    elif problem == "qrels repeat, query met":
        qrels = pd.concat([qrels, qrels.iloc[[0]]], ignore_index=True)
    elif problem == "qrels repeat, query never met":
        qrels = pd.concat([qrels, qrels.iloc[[-1]]], ignore_index=True)
    elif problem == "string ids in the qrels":
        qrels["query_id"] = qrels["query_id"].astype(str)
    return run, qrels


@pytest.mark.parametrize("problem", ["run repeat", "null doc", "nan score", "qrels repeat, query met",
                                     "qrels repeat, query never met", "string ids in the qrels"])
def test_errors_are_those_of_one_process(tmp_path, monkeypatch, problem):
    run, qrels = _problem(*_tables(np.random.default_rng(9), 30, True, False), problem)
    run.to_parquet(tmp_path / "run.parquet", row_group_size=13)
    paths = _Paths(monkeypatch)
    messages = []
    for n in (1, 2, 3):
        with pytest.raises(tierank.InputError) as err:
            tierank.evaluate(qrels, str(tmp_path / "run.parquet"), ["AP"], block_rows=8, workers=n)
        messages.append(str(err.value))
    assert messages[0] == messages[1] == messages[2]
    assert "run.parquet" in messages[0] or "qrels" in messages[0]
    assert paths.taken in ([False, False], [])   # workers=1 never tries; the others gave the run back


@pytest.mark.parametrize("how", ["dies", "raises", "warns"])
def test_a_worker_that_fails_gives_the_run_back(tmp_path, monkeypatch, how):
    run, qrels = _tables(np.random.default_rng(11), 25, False, True)
    run.to_parquet(tmp_path / "run.parquet", row_group_size=20)
    parent = os.getpid()
    add = stream.Driver.add

    def add_in_worker(self, *args, **kw):   # fails in the workers only
        if os.getpid() != parent:
            if how == "dies":
                os._exit(3)
            if how == "raises":
                raise MemoryError
            warnings.warn("something odd in a worker", UserWarning)
        return add(self, *args, **kw)
    monkeypatch.setattr(stream.Driver, "add", add_in_worker)
    paths = _Paths(monkeypatch)
    expected, warned = _evaluate(qrels, run)
    got, got_warned = _evaluate(qrels, str(tmp_path / "run.parquet"), block_rows=10, workers=2)
    _same(got, expected)
    assert got_warned == warned   # the worker's warning does not reach the caller: the run was evaluated again
    assert paths.taken == [False]


def test_no_process_can_be_started(tmp_path, monkeypatch):
    # no semaphores (AWS Lambda has no /dev/shm) or a process limit: this process evaluates the run
    run, qrels = _tables(np.random.default_rng(4), 25, True, True)
    run.to_parquet(tmp_path / "run.parquet", row_group_size=20)

    def refuse(*args, **kw):
        raise OSError(38, "Function not implemented")
    monkeypatch.setattr(workers_module, "_start", refuse)
    paths = _Paths(monkeypatch)
    expected, warned = _evaluate(qrels, run)
    got, got_warned = _evaluate(qrels, str(tmp_path / "run.parquet"), block_rows=10, workers=3)
    _same(got, expected)
    assert got_warned == warned and paths.taken == [False]


def _dataset_of_two_types(folder, frame, column, types):
    """``frame`` as two Parquet files storing ``column`` as ``types[0]`` and ``types[1]``."""
    folder.mkdir()
    for i, (part, kind) in enumerate(zip((frame.iloc[:100], frame.iloc[100:]), types)):
        table = pa.Table.from_pandas(part, preserve_index=False)
        values = table.column(column)
        if pa.types.is_string(kind) or pa.types.is_large_string(kind):
            values = pc.cast(values, pa.string())
        table = table.set_column(table.schema.get_field_index(column), column, pc.cast(values, kind))
        pq.write_table(table, folder / f"part{i}.parquet", row_group_size=30)
    return str(folder)


@pytest.mark.parametrize("types", [(pa.int32(), pa.int64()), (pa.string(), pa.large_string()), (pa.int64(), pa.string())])
@pytest.mark.parametrize("column", ["query_id", "doc_id", "value"])
def test_files_storing_a_column_as_different_types(tmp_path, types, column):
    # pyarrow refused to put their rows together with its own error; now an InputError naming the files
    run, qrels = _tables(np.random.default_rng(6), 20, True, False)
    run = run.rename(columns={"qid": "query_id", "docno": "doc_id", "sim": "score"})
    if column == "value":
        types = (pa.float32(), pa.float64()) if types[1] == pa.string() else (pa.int32(), pa.float64())
    name = "score" if column == "value" else column
    path = _dataset_of_two_types(tmp_path / "run", run, name, types)
    message = (rf"part1.parquet: the files of the dataset store the column '{name}' as different types: "
               rf"{types[0]} in part0.parquet, {types[1]} in part1.parquet; write every file with the same schema")
    for options in ({"workers": 1}, {"workers": 2}, {"stream": False}):
        with pytest.raises(tierank.InputError, match=message):
            tierank.evaluate(qrels, path, ["AP"], block_rows=16, **options)
    name = "relevance" if column == "value" else column   # the same rule for Parquet qrels
    path = _dataset_of_two_types(tmp_path / "qrels", qrels.iloc[:200].astype({"relevance": np.int64}), name, types)
    with pytest.raises(tierank.InputError, match=message.replace("score", name).replace("'" + column, "'" + name)):
        tierank.evaluate(path, run, ["AP"])


_TYPES = {"query_id": [pa.int32(), pa.int64(), pa.string(), pa.large_string(), pa.null()],
          "doc_id": [pa.int64(), pa.string(), pa.null()],
          "score": [pa.float32(), pa.float64(), pa.int64(), pa.null()]}


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(data=st.data(), n_files=st.integers(1, 3), n_workers=st.integers(1, 3))
def test_datasets_of_any_column_types_give_values_or_an_input_error(tmp_path_factory, data, n_files, n_workers):
    # whatever types the files store, the evaluation gives the values of the in-memory evaluation of the
    # rows (when every file agrees) or an InputError, never another exception
    run, qrels = _tables(np.random.default_rng(data.draw(st.integers(0, 99))), 12, True, False)
    run = run.rename(columns={"qid": "query_id", "docno": "doc_id", "sim": "score"})
    folder = tmp_path_factory.mktemp("types")
    cuts = np.linspace(0, len(run), n_files + 1).astype(int)
    chosen = []
    for i in range(n_files):
        table = pa.Table.from_pandas(run.iloc[cuts[i]:cuts[i + 1]], preserve_index=False)
        types = {c: data.draw(st.sampled_from(_TYPES[c])) for c in _TYPES}
        for column, kind in types.items():
            values = table.column(column)
            if kind == pa.null():
                values = pa.nulls(len(values))
            elif pa.types.is_string(kind) or pa.types.is_large_string(kind):
                values = pc.cast(pc.cast(values, pa.string()), kind)
            else:
                values = pc.cast(values, kind)
            table = table.set_column(table.schema.get_field_index(column), column, values)
        chosen.append(types)
        pq.write_table(table, folder / f"part{i}.parquet", row_group_size=25)
    outcomes = []
    for options in ({"workers": n_workers, "block_rows": 20}, {"stream": False}):
        try:
            outcomes.append(_evaluate(qrels, str(folder), ["AP", "nDCG@10"], **options)[0])
        except tierank.InputError as err:
            outcomes.append(str(err))
    assert isinstance(outcomes[0], str) == isinstance(outcomes[1], str)   # (with several problems, the
    if not isinstance(outcomes[0], str):                                    # first block with one reports it)
        _same(outcomes[0], outcomes[1])
    if any(t != chosen[0] for t in chosen):
        assert isinstance(outcomes[0], str) and "as different types" in outcomes[0]


@settings(max_examples=15, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(seed=st.integers(0, 10 ** 6), group_rows=st.integers(3, 40), block_rows=st.integers(5, 60),
       int_ids=st.booleans())
def test_tie_report_of_a_big_parquet_run_counts_every_block(tmp_path_factory, monkeypatch, seed, group_rows,
                                                            block_rows, int_ids):
    # the tie report keeps the trec_eval values and tie counts of each block it is handed: with worker
    # processes those stayed in the workers and the report said "0 retrieved documents" and gave the
    # expected values as trec_eval's, silently (a run over 2**22 rows); its blocks stay in this process
    from tierank.report import tie_report

    monkeypatch.setattr(workers_module, "MIN_ROWS_PER_WORKER", 10)   # every run is "big"
    run, qrels = _tables(np.random.default_rng(seed), 25, int_ids, True)
    path = tmp_path_factory.mktemp("report") / "run.parquet"
    run.to_parquet(path, row_group_size=group_rows)
    reports, warned = [], []
    for where, options in ((run, {}), (str(path), {"block_rows": block_rows})):
        with warnings.catch_warnings(record=True) as caught:   # queries of the run without judgments
            warnings.simplefilter("always")
            reports.append(tie_report(qrels, where, ["AP", "P@5", "nDCG@10"], name="run", **options))
        warned.append(sorted(str(w.message) for w in caught))
    expected, got = reports
    assert got.to_dict() == expected.to_dict() and warned[0] == warned[1]
    judged_queries = set(qrels["query_id"])
    assert got.n_retrieved == int(run["qid"].isin(judged_queries).sum()) > 0   # every block was counted


@pytest.mark.parametrize("bad", [0, -1, 1.5, True, "2"])
def test_bad_workers(tmp_path, bad):
    run, qrels = _tables(np.random.default_rng(1), 5, True, False)
    run.to_parquet(tmp_path / "run.parquet")
    for where in (str(tmp_path / "run.parquet"), run):
        with pytest.raises(tierank.InputError, match=r"workers must be a positive integer or None, got "):
            tierank.evaluate(qrels, where, ["AP"], workers=bad)


def test_worker_count(monkeypatch):
    big = workers_module.MIN_ROWS_PER_WORKER
    cores = workers_module.cores()
    assert workers_module.worker_count(None, big - 1) == 1   # small runs: one process
    assert workers_module.worker_count(None, 100 * big) == min(cores, workers_module.MAX_DEFAULT_WORKERS)
    assert workers_module.worker_count(None, 2 * big) == min(cores, 2)
    assert workers_module.worker_count(3, 10) == 3   # asked for: even for a small run
    monkeypatch.setattr(workers_module, "can_fork", lambda: False)
    assert workers_module.worker_count(4, 100 * big) == 1


def test_progress_bar_counts_the_rows_of_every_worker(tmp_path, capsys, monkeypatch):
    import tierank._progress

    monkeypatch.setattr(tierank._progress, "DELAY", 0)
    counted = []

    class Counting(tierank._progress.ProgressBar):
        def update(self, n):
            counted.append(n)
            super().update(n)
    monkeypatch.setattr(workers_module, "ProgressBar", Counting)
    run, qrels = _tables(np.random.default_rng(2), 30, True, False)
    run.to_parquet(tmp_path / "run.parquet", row_group_size=10)
    paths = _Paths(monkeypatch)
    _evaluate(qrels, str(tmp_path / "run.parquet"), ["AP"], block_rows=5, progress=True, workers=2)
    assert paths.taken == [True]
    assert sum(counted) == len(run)
    assert f"run.parquet:   0%|          | 0.00/{len(run)}" in capsys.readouterr().err
