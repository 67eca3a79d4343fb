"""Parquet tables read whole: the row-group reader of plain numeric columns (parquet._read_numbers) gives
what the table reader gives (pyarrow's read_table and to_pandas), frames, Columns and errors alike."""

from __future__ import annotations

import os

import numpy as np
import pandas as pd
import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import tierank
import tierank.io.blocks as blocks
import tierank.io.parquet as parquet

NUMERIC = ["int8", "int32", "int64", "uint16", "uint64", "float32", "float64"]
KINDS = NUMERIC + ["string", "Int64"]   # Int64: pandas' nullable integers (pandas metadata says so)


def _column(rng, kind: str, n: int, nulls: bool):
    """n values of the kind; with ``nulls``, one missing (NaN in a float column: stored as null)."""
    if kind == "string":
        values = pd.array([f"x{v}" for v in rng.integers(0, 9, n)], dtype=object)
    elif kind == "Int64":
        values = pd.array(rng.integers(0, 9, n), dtype="Int64")
    else:
        values = rng.integers(0, 9, n).astype(kind)
    if nulls and n:
        if kind.startswith("float"):
            values[int(rng.integers(n))] = np.nan
        else:
            values = pd.array(values, dtype="Int64" if kind != "string" else object)
            values[int(rng.integers(n))] = None
    return values


def _dataset(tmp_path, rng, n_files, kinds, nulls, row_group):
    """A directory of Parquet files, file i's columns of the types kinds[i]."""
    for i in range(n_files):
        n = int(rng.integers(0, 30))
        frame = pd.DataFrame({name: _column(rng, kinds[i][j], n, nulls and i == n_files - 1)
                              for j, name in enumerate(("query_id", "doc_id", "relevance"))})
        frame.to_parquet(tmp_path / f"part{i}.parquet", row_group_size=row_group, index=False)
    return tmp_path


def _outcome(read):
    try:
        return read()
    except tierank.InputError as err:
        return str(err)


@settings(max_examples=150, deadline=None, derandomize=True, database=None,
          suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(st.integers(0, 2 ** 32 - 1), st.integers(1, 3), st.booleans(), st.booleans(), st.integers(1, 12),
       st.sampled_from(KINDS), st.sampled_from(KINDS), st.sampled_from(KINDS))
def test_row_group_reader_gives_what_the_table_reader_gives(tmp_path_factory, seed, n_files, same_types, nulls,
                                                            row_group, kq, kd, kv):
    rng = np.random.default_rng(seed)
    first = (kq, kd, kv)
    kinds = [first if same_types or i == 0 else tuple(rng.choice(KINDS, 3)) for i in range(n_files)]
    path = _dataset(tmp_path_factory.mktemp("ds"), rng, n_files, kinds, nulls, row_group)
    taken = []
    real = parquet._read_numbers

    def spy(*args):
        out = real(*args)
        taken.append(out is not None)
        return out

    parquet._read_numbers = spy
    try:
        fast_frame = _outcome(lambda: tierank.read_qrels(path))
        fast_cols = _outcome(lambda: parquet.read_columns_parquet(path, "qrels"))
        parquet._read_numbers = lambda *args: None
        slow_frame = _outcome(lambda: tierank.read_qrels(path))
        slow_cols = _outcome(lambda: parquet.read_columns_parquet(path, "qrels"))
    finally:
        parquet._read_numbers = real
    plain = all(set(k) <= set(NUMERIC) for k in kinds) and all(k == kinds[0] for k in kinds) and not nulls
    assert taken == [plain, plain]
    if isinstance(slow_frame, str):
        assert fast_frame == slow_frame and fast_cols == slow_cols
        return
    pd.testing.assert_frame_equal(fast_frame, slow_frame, check_exact=True)
    for a, b in ((fast_cols.query, slow_cols.query), (fast_cols.doc, slow_cols.doc),
                 (fast_cols.value, slow_cols.value), (fast_cols.lines, slow_cols.lines)):
        assert type(a) is type(b) and np.asarray(a).dtype == np.asarray(b).dtype
        assert [repr(x) for x in np.asarray(a, dtype=object)] == [repr(x) for x in np.asarray(b, dtype=object)]
    assert fast_cols.files == slow_cols.files and np.array_equal(fast_cols.starts, slow_cols.starts)
    for i in range(len(fast_cols.value)):
        assert fast_cols.row_text(i) == slow_cols.row_text(i) and fast_cols.where(i) == slow_cols.where(i)


def test_row_group_reader_falls_back_on_an_index_column_and_a_damaged_file(tmp_path):
    frame = pd.DataFrame({"doc_id": [1, 2], "relevance": [1, 0]}, index=pd.Index([7, 7], name="query_id"))
    frame.to_parquet(tmp_path / "indexed.parquet")   # query_id stored as pandas' index
    assert parquet._read_numbers([str(tmp_path / "indexed.parquet")], ("query_id", "doc_id", "relevance")) is None
    good = pd.DataFrame({"query_id": [1, 1], "doc_id": [1, 2], "relevance": [1, 0]})
    good.to_parquet(tmp_path / "good.parquet")
    data = (tmp_path / "good.parquet").read_bytes()
    (tmp_path / "bad.parquet").write_bytes(data[:4] + b"\0" * (len(data) - 8) + data[-4:])   # pages zeroed
    assert parquet._read_numbers([str(tmp_path / "bad.parquet")], ("query_id", "doc_id", "relevance")) is None
    with pytest.raises(tierank.InputError, match="bad.parquet"):
        tierank.read_qrels(tmp_path / "bad.parquet")


def test_row_group_reader_reads_big_row_groups_in_order(tmp_path):
    """Many row groups over two files, read on two threads: every row where it belongs."""
    n = 50_000
    qrels = pd.DataFrame({"query_id": np.arange(n) // 7, "doc_id": np.arange(n), "relevance": np.arange(n) % 4})
    pq.write_table(pa.Table.from_pandas(qrels.iloc[:20_000], preserve_index=False), tmp_path / "a.parquet",
                   row_group_size=999)
    pq.write_table(pa.Table.from_pandas(qrels.iloc[20_000:], preserve_index=False), tmp_path / "b.parquet",
                   row_group_size=4_096)
    read = tierank.read_qrels(tmp_path)
    pd.testing.assert_frame_equal(read, qrels, check_exact=True)


def _blocks(path, block_rows, plain):
    """The blocks of a streamed Parquet run, with the arrays-from-Arrow path (plain) allowed or not."""
    real = parquet.ParquetRun.open

    def opened(cls_path):
        dataset = real(cls_path)
        dataset.plain = dataset.plain and plain
        return dataset

    parquet.ParquetRun.open = opened
    try:
        return _outcome(lambda: list(blocks.parquet_blocks(path, block_rows)))
    finally:
        parquet.ParquetRun.open = real


@settings(max_examples=100, deadline=None, derandomize=True, database=None,
          suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(st.integers(0, 2 ** 32 - 1), st.integers(1, 3), st.booleans(), st.integers(1, 12), st.integers(1, 40),
       st.sampled_from(KINDS), st.sampled_from(KINDS), st.sampled_from(KINDS), st.sampled_from(["score", "rank"]))
def test_blocks_of_plain_numbers_are_the_blocks_pandas_gives(tmp_path_factory, seed, n_files, nulls, row_group,
                                                             block_rows, kq, kd, kv, value_name):
    """A streamed block built from the Arrow arrays has the ids, values, dtypes, names and row locations of
    the block built through pandas; runs of ranks only, nulls and other types take the pandas path."""
    rng = np.random.default_rng(seed)
    base = tmp_path_factory.mktemp("run")
    for i in range(n_files):
        n = int(rng.integers(0, 30))
        frame = pd.DataFrame({"query_id": _column(rng, kq, n, False), "doc_id": _column(rng, kd, n, False),
                              value_name: _column(rng, kv, n, nulls and i == n_files - 1)})
        frame.to_parquet(base / f"part{i}.parquet", row_group_size=row_group, index=False)
    if not any(pq.read_metadata(f).num_rows for f in base.iterdir()):
        return
    plain_dataset = _outcome(lambda: parquet.ParquetRun.open(base).plain)   # or the error of mixed types
    if value_name == "rank" or not {kq, kd, kv} <= set(NUMERIC):
        assert plain_dataset is not True
    elif not nulls:
        assert plain_dataset is True
    fast, slow = _blocks(base, block_rows, True), _blocks(base, block_rows, False)
    if isinstance(slow, str):
        assert fast == slow
        return
    assert [(row0, last) for _, row0, last in fast] == [(row0, last) for _, row0, last in slow]
    for (a, _, _), (b, _, _) in zip(fast, slow):
        assert a.names == b.names and a.source == b.source and a.files == b.files
        assert [type(x) for x in (a.query, a.doc, a.value)] == [type(y) for y in (b.query, b.doc, b.value)]
        for x, y in ((a.query, b.query), (a.doc, b.doc), (a.value, b.value), (a.lines, b.lines)):
            assert np.asarray(x).dtype == np.asarray(y).dtype
            assert [repr(v) for v in np.asarray(x, dtype=object)] == [repr(v) for v in np.asarray(y, dtype=object)]
        for i in range(len(a.value)):
            assert a.row_text(i) == b.row_text(i) and a.where(i) == b.where(i)


@pytest.mark.parametrize("dtype", ["float32", "float64"])
@pytest.mark.parametrize("workers", [1, 2])
def test_nan_scores_of_a_streamed_parquet_run_are_reported_as_pandas_reports_them(tmp_path, dtype, workers):
    """A NaN stored as a value (not a null) in a float score column: the error of a DataFrame read by
    pandas ("is missing"), streamed or not, with the blocks built from the Arrow arrays or not."""
    q = np.repeat(np.arange(4), 5)
    scores = np.arange(len(q), dtype=dtype)
    scores[12] = np.nan
    pq.write_table(pa.table({"query_id": q, "doc_id": np.tile(np.arange(5), 4), "score": scores}),
                   tmp_path / "run.parquet", row_group_size=6)   # pyarrow keeps the NaN a value
    qrels = pd.DataFrame({"query_id": q[::2], "doc_id": np.tile(np.arange(5), 4)[::2], "relevance": 1})
    expected = _outcome(lambda: tierank.evaluate(qrels, pd.read_parquet(tmp_path / "run.parquet"), ["AP"]))
    assert "score of document 2 for query 2 is missing" in expected
    for stream in (True, False):
        got = _outcome(lambda: tierank.evaluate(qrels, str(tmp_path / "run.parquet"), ["AP"], stream=stream,
                                                block_rows=4, workers=workers))
        assert got.endswith(expected), (stream, got)


def test_a_directory_is_walked_without_following_links_and_stops_at_a_file_that_is_not_parquet(tmp_path):
    """Regression (hostile probe): a directory given as a run was handed to pyarrow's discovery, which
    followed a symlink to '.' for ever (10 minutes, 3 GB, deaf to SIGTERM) and walked a whole tree
    (`tierank qrels /usr`) before failing. Links to folders are not followed, and a file that is not
    Parquet is an error naming it."""
    import pandas as pd

    import tierank

    run = tmp_path / "run"
    run.mkdir()
    pd.DataFrame({"query_id": ["q1", "q1"], "doc_id": ["d1", "d2"], "score": [2.0, 1.0]}).to_parquet(run / "a.parquet")
    (run / "_SUCCESS").write_text("")           # left out, as pyarrow's discovery does
    os.symlink(".", run / "loop")               # a folder linking to itself: not followed
    os.symlink(".", run / "loop2")
    res = tierank.evaluate({"q1": {"d1": 1}}, str(run), ["RR", "NumRet"])
    assert res.mean == {"RR": 1.0, "NumRet": 2.0}
    (run / "notes.txt").write_text("q1 Q0 d1 1 2 t\n")
    with pytest.raises(tierank.InputError, match=r"notes.txt: not a Parquet dataset: a file in the directory"):
        tierank.evaluate({"q1": {"d1": 1}}, str(run), ["RR"])
