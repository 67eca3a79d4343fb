"""Background threads on or off (tierank._threads): the same values bit for bit, the same errors."""

from __future__ import annotations

import os
import sys
import warnings

import numpy as np
import pandas as pd
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import tierank
import tierank._threads as threads
import tierank.data.join as join
import tierank.io.workers as workers_module

MEASURES = ["AP", "nDCG@5", "P@3", "RR", "IPrec(recall=0.5)", "bpref"]


def _outcome(qrels, run, **kw):
    """The Results and the warnings' messages, or the message of the InputError."""
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        try:
            res = tierank.evaluate(qrels, run, MEASURES, **kw)
        except tierank.InputError as err:
            return str(err)
    return res, [str(w.message) for w in caught]


def _same(a, b) -> None:
    assert type(a) is type(b)
    if isinstance(a, str):
        assert a == b
        return
    (a, warned_a), (b, warned_b) = a, b
    assert warned_a == warned_b
    assert a == b
    for x, y in ((a.mean, b.mean), (a.mean_lower, b.mean_lower)):
        assert (x is None) == (y is None)
        if x is not None:
            assert [np.float64(v).tobytes() for v in x.values()] == [np.float64(v).tobytes() for v in y.values()]


@settings(max_examples=40, deadline=None, derandomize=True, database=None,
          suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(st.integers(0, 2 ** 32 - 1), st.booleans(), st.booleans(), st.booleans(), st.booleans(),
       st.sampled_from(["expected", "trec_eval", "input", "random"]))
def test_threads_off_give_the_same_bits_and_errors(monkeypatch, seed, int_ids, grouped, repeat, exact, ties):
    rng = np.random.default_rng(seed)
    n_q = int(rng.integers(1, 12))
    sizes = rng.integers(1, 25, n_q)
    qnum = np.repeat(np.arange(n_q), sizes)
    dnum = np.concatenate([rng.permutation(40)[:k] for k in sizes])
    run = pd.DataFrame({"query_id": qnum if int_ids else [f"q{q}" for q in qnum],
                        "doc_id": dnum if int_ids else [f"d{d}" for d in dnum],
                        "score": rng.integers(0, 4, len(qnum)).astype(np.float64)})
    if repeat:   # a (query, document) pair twice: the duplicate search (on a thread, or not) names it
        run = pd.concat([run, run.iloc[[int(rng.integers(len(run)))]]], ignore_index=True)
    if not grouped:
        run = run.sample(frac=1.0, random_state=int(rng.integers(2 ** 31)))
    judged = rng.random(len(run)) < 0.5
    qrels = pd.DataFrame({"query_id": run["query_id"][judged], "doc_id": run["doc_id"][judged],
                          "relevance": rng.integers(-1, 3, int(judged.sum()))}).drop_duplicates(["query_id", "doc_id"])
    if exact:   # string ids coded by dictionary encoding: its duplicate search is a background task
        monkeypatch.setattr(join, "hashed_string_codes", lambda *a: None)
    kw = {"ties": ties, "bounds": ties == "expected"}
    monkeypatch.setattr(threads, "_SINGLE_THREADED", False)
    monkeypatch.setattr(threads, "cores", lambda: 2)
    with_threads = _outcome(qrels, run, **kw)
    monkeypatch.setattr(threads, "_SINGLE_THREADED", True)
    without = _outcome(qrels, run, **kw)
    _same(with_threads, without)
    if repeat:
        assert isinstance(without, str) and "listed twice" in without


def test_in_background_raises_at_result_either_way(monkeypatch):
    def fail() -> None:
        raise ValueError("boom")

    for single in (False, True):
        monkeypatch.setattr(threads, "_SINGLE_THREADED", single)
        monkeypatch.setattr(threads, "cores", lambda: 2)
        future = threads.in_background(fail)   # no exception yet
        with pytest.raises(ValueError, match="boom"):
            future.result()
    monkeypatch.setattr(threads, "_SINGLE_THREADED", False)
    monkeypatch.setattr(threads, "cores", lambda: 1)
    assert not threads.background()   # one core: in line


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="worker processes need fork (Linux)")
def test_worker_processes_run_without_background_threads(tmp_path, monkeypatch):
    """Each worker switches the threads off for itself (it keeps a core busy already); the caller keeps them."""
    rng = np.random.default_rng(3)
    qnum = np.repeat(np.arange(40), 10)
    run = pd.DataFrame({"query_id": qnum, "doc_id": np.tile(np.arange(10), 40),
                        "score": rng.integers(0, 3, len(qnum)).astype(np.float64)})
    run.to_parquet(tmp_path / "run.parquet", row_group_size=50)
    qrels = run.iloc[::3].rename(columns={"score": "relevance"})
    seen = tmp_path / "seen"
    seen.mkdir()
    real_normalized = workers_module.normalized

    def recording(cols, what):   # runs in the workers: writes whether threads are on there
        (seen / str(os.getpid())).write_text(str(threads.background()))
        return real_normalized(cols, what)

    monkeypatch.setattr(workers_module, "normalized", recording)
    monkeypatch.setattr(threads, "cores", lambda: 2)
    res = tierank.evaluate(qrels, str(tmp_path / "run.parquet"), ["AP"], workers=2, block_rows=20)
    assert res == tierank.evaluate(qrels, run, ["AP"])
    assert sorted(p.read_text() for p in seen.iterdir()) == ["False", "False"]   # two workers, threads off
    assert threads.background()   # not in the caller


@settings(max_examples=40, deadline=None, derandomize=True, database=None,
          suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(st.integers(0, 2 ** 32 - 1), st.booleans(), st.sampled_from([None, "repeat", "bad line", "not text"]),
       st.integers(1, 40), st.sampled_from(["expected", "trec_eval", "input", "random"]), st.booleans())
def test_a_small_run_file_in_this_thread_gives_the_same_bits_and_errors(tmp_path, monkeypatch, seed, grouped,
                                                                          problem, block_rows, ties, gzipped):
    """A run file below ``SMALL_RUN_BYTES`` (gzip: a fifth of it) is read and evaluated in the caller's
    thread (no thread started); one byte larger, by the read-ahead thread and the join's threads: the
    same values bit for bit, the same warnings, the same error, whatever the blocks (a run not grouped:
    the second pass)."""
    import gzip
    import threading

    import tierank.engine.streamed as streamed

    rng = np.random.default_rng(seed)
    n_q = int(rng.integers(1, 8))
    sizes = rng.integers(1, 20, n_q)
    lines = [f"q{q} Q0 d{d} 1 {rng.integers(0, 4)} t" for q, k in enumerate(sizes) for d in rng.permutation(30)[:k]]
    if problem == "repeat":   # a (query, document) pair twice
        lines.append(lines[int(rng.integers(len(lines)))])
    elif problem == "bad line":
        lines.insert(int(rng.integers(len(lines) + 1)), "q0 Q0 dx 1 high t")
    if not grouped:
        lines = [lines[i] for i in rng.permutation(len(lines))]
    run = tmp_path / ("run.txt.gz" if gzipped else "run.txt")
    data = ("\n".join(lines) + "\n").encode()
    if problem == "not text":   # bytes that are not UTF-8: the text check fails while the lines are parsed
        at = int(rng.integers(len(lines) + 1))
        data = b"".join(line.encode() + b"\n" for line in lines[:at]) + b"q0 Q0 d\xff 1 2 t\n" + \
            b"".join(line.encode() + b"\n" for line in lines[at:])
    run.write_bytes((gzip.compress if gzipped else bytes)(data))
    size = run.stat().st_size * (5 if gzipped else 1)
    qrels = tmp_path / "qrels.txt"
    qrels.write_text("".join(f"{l.split()[0]} 0 {l.split()[2]} {rng.integers(-1, 3)}\n"
                             for l in dict.fromkeys(lines) if rng.random() < 0.5 and "high" not in l) or "q0 0 d0 1\n")
    monkeypatch.setattr(threads, "_SINGLE_THREADED", False)
    monkeypatch.setattr(threads, "cores", lambda: 2)
    started = []
    start = threading.Thread.start
    monkeypatch.setattr(threading.Thread, "start", lambda self: (started.append(self.name), start(self))[1])
    outcomes = []
    for threshold in (size + 1, size):   # in this thread, then with threads
        monkeypatch.setattr(streamed, "SMALL_RUN_BYTES", threshold)
        started.clear()
        outcomes.append(_outcome(str(qrels), str(run), block_rows=block_rows, ties=ties, bounds=ties == "expected"))
        assert bool(started) == (threshold == size)
    _same(*outcomes)


@settings(max_examples=40, deadline=None, derandomize=True, database=None,
          suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(st.integers(0, 2 ** 32 - 1), st.sampled_from(["expected", "trec_eval", "input", "random"]),
       st.sampled_from([None, "nan"]))
def test_a_dict_of_one_block_in_this_thread_gives_the_same_bits_and_errors(monkeypatch, seed, ties, problem):
    """A dict run of at most one default block (api.DICT_BLOCK_ROWS rows) is evaluated in the caller's
    thread; a larger one with the join's threads: the same values bit for bit, the same error."""
    import tierank.api as api
    import tierank.io.tables as tables

    rng = np.random.default_rng(seed)
    run = {f"q{q}": {f"d{d}": float(rng.integers(0, 4)) for d in rng.permutation(30)[:int(rng.integers(1, 20))]}
           for q in range(int(rng.integers(1, 8)))}
    if problem == "nan":
        run["q0"]["d0"] = float("nan")
    qrels = {q: {d: int(rng.integers(-1, 3)) for d in docs if rng.random() < 0.5} or {"d0": 1} for q, docs in run.items()}
    rows = sum(map(len, run.values()))
    monkeypatch.setattr(threads, "_SINGLE_THREADED", False)
    monkeypatch.setattr(threads, "cores", lambda: 2)
    seen = []   # whether the run's hashes may go to a worker thread, each time they start
    real_hashes = tables.SharedHashes
    monkeypatch.setattr(tables, "SharedHashes", lambda *a, **k: (seen.append(threads.background()), real_hashes(*a, **k))[1])
    outcomes = []
    for limit in (rows, rows - 1):   # in this thread, then with threads
        monkeypatch.setattr(api, "DICT_BLOCK_ROWS", limit)
        seen.clear()
        outcomes.append(_outcome(qrels, run, block_rows=7, ties=ties, bounds=ties == "expected"))
        if problem is None:
            assert seen and set(seen) == {limit == rows - 1}
    _same(*outcomes)
