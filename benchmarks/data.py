"""Benchmark data: generated with a fixed seed, cached under benchmarks/_data/ (git-ignored).

Every dataset is a pure function of its parameters and the seed, so all libraries see the same data and
reruns see the same data. The cache is a pickle of pandas DataFrames / numpy arrays (or TREC text files
for task 2); each measurement subprocess loads it, so data generation is never timed.
"""

from __future__ import annotations

import os
import pickle
from pathlib import Path

import numpy as np
import pandas as pd

SEED = 20240611
DATA_DIR = Path(__file__).resolve().parent / "_data"
DOCS_PER_QUERY = 1000
SCORE_RANGE = 50                        # integer scores in [0, 50): ties are common
JUDGED_FRACTION = 0.10                  # about 10% of the retrieved documents are judged
GRADE_PROBS = (0.5, 0.3, 0.15, 0.05)    # grades 0, 1, 2, 3

__all__ = ["DATA_DIR", "dense_matrix", "hash_codes", "run_frames", "trec_files"]


def _cached(name: str, make):
    """Load ``name`` from the cache, or make it once and store it (written atomically)."""
    DATA_DIR.mkdir(parents=True, exist_ok=True)
    path = DATA_DIR / f"{name}.pkl"
    if path.exists():
        with open(path, "rb") as f:
            return pickle.load(f)
    obj = make()
    tmp = path.with_suffix(f".tmp{os.getpid()}")
    with open(tmp, "wb") as f:
        pickle.dump(obj, f, protocol=5)
    tmp.replace(path)
    return obj


def _make_run(n_queries: int, ids: str) -> dict:
    rng = np.random.default_rng([SEED, n_queries])
    n = n_queries * DOCS_PER_QUERY
    qnum = np.repeat(np.arange(1, n_queries + 1, dtype=np.int64), DOCS_PER_QUERY)  # grouped by query
    dnum = rng.permutation(n).astype(np.int64)             # distinct across the run, random order
    score = rng.integers(0, SCORE_RANGE, size=n, dtype=np.int64)
    judged = np.flatnonzero(rng.random(n) < JUDGED_FRACTION)
    grade = rng.choice(len(GRADE_PROBS), size=len(judged), p=GRADE_PROBS).astype(np.int64)
    # qrels grouped by query too, in a random order within each query
    jorder = np.lexsort((rng.random(len(judged)), qnum[judged]))
    judged, grade = judged[jorder], grade[jorder]
    if ids == "str":
        qid = ("q" + pd.Series(qnum).astype(str)).to_numpy(dtype=object)
        did = ("d" + pd.Series(dnum).astype(str)).to_numpy(dtype=object)
    elif ids == "int":
        qid, did = qnum, dnum
    else:
        raise ValueError(ids)
    # pandas chooses the column dtypes as for any user's DataFrame (pandas >= 3: the "str" dtype)
    run = pd.DataFrame({"query_id": qid, "doc_id": did, "score": score})
    qrels = pd.DataFrame({"query_id": qid[judged], "doc_id": did[judged], "relevance": grade})
    return {"run": run, "qrels": qrels}


def run_frames(n_queries: int, ids: str) -> dict:
    """Task 1/5 data: ``{"run": DataFrame(query_id, doc_id, score), "qrels": DataFrame(query_id, doc_id,
    relevance)}`` with ``n_queries`` x 1,000 retrieved documents, ids ``"q1"``/``"d123"`` (``ids="str"``) or
    int64 (``ids="int"``)."""
    return _cached(f"run_{ids}_{n_queries}", lambda: _make_run(n_queries, ids))


def trec_files(n_queries: int) -> dict:
    """Task 2 data: the string-id run of task 1 written as TREC files (run in rank order per query)."""
    DATA_DIR.mkdir(parents=True, exist_ok=True)
    run_path = DATA_DIR / f"run_{n_queries}.txt"
    qrels_path = DATA_DIR / f"qrels_{n_queries}.txt"
    if not (run_path.exists() and qrels_path.exists()):
        frames = run_frames(n_queries, "str")
        run, qrels = frames["run"], frames["qrels"]
        q = run["query_id"].to_numpy(dtype=object)
        qcode = np.repeat(np.arange(n_queries), DOCS_PER_QUERY)
        score = run["score"].to_numpy()
        order = np.lexsort((-score, qcode))                 # TREC: each query's lines by rank
        rank = np.tile(np.arange(1, DOCS_PER_QUERY + 1), n_queries)
        out = pd.DataFrame({"q": q[order], "iter": "Q0", "doc": run["doc_id"].to_numpy(dtype=object)[order],
                            "rank": rank, "score": score[order], "tag": "bench"})
        tmp = run_path.with_suffix(".tmp")
        out.to_csv(tmp, sep=" ", header=False, index=False)
        tmp.replace(run_path)
        qout = pd.DataFrame({"q": qrels["query_id"], "iter": 0, "doc": qrels["doc_id"],
                             "rel": qrels["relevance"]})
        tmp = qrels_path.with_suffix(".tmp")
        qout.to_csv(tmp, sep=" ", header=False, index=False)
        tmp.replace(qrels_path)
    return {"run": str(run_path), "qrels": str(qrels_path)}


def _make_dense(n_queries: int, n_items: int) -> dict:
    """Integer distances in 0..64 (like 64-bit Hamming distances): about 1% of the items are relevant
    (grades 1-3) and lie somewhat closer than the rest."""
    rng = np.random.default_rng([SEED, n_queries, n_items, 3])
    relevance = np.zeros((n_queries, n_items), dtype=np.int8)
    hit = rng.random((n_queries, n_items)) < 0.01
    relevance[hit] = rng.choice([1, 2, 3], size=int(hit.sum()), p=[0.6, 0.3, 0.1])
    distances = rng.binomial(64, 0.5, size=(n_queries, n_items)).astype(np.int32)
    distances[hit] = rng.binomial(64, 0.42, size=int(hit.sum()))
    return {"relevance": relevance, "distances": distances}


def dense_matrix(n_queries: int, n_items: int) -> dict:
    """Task 3 data: ``{"relevance": int8 (n_queries, n_items), "distances": int32 (n_queries, n_items)}``."""
    return _cached(f"dense_{n_queries}x{n_items}", lambda: _make_dense(n_queries, n_items))


def _make_codes(n_queries: int, n_db: int, bits: int, n_classes: int) -> dict:
    """Binary codes, as in the hashing issue: each class has a random prototype and every item flips each
    bit of its class's prototype with probability 0.2; plus class labels."""
    rng = np.random.default_rng([SEED, n_queries, n_db, bits, 4])
    protos = rng.random((n_classes, bits)) < 0.5

    def codes(n):
        labels = rng.integers(0, n_classes, size=n)
        out = np.empty((n, bits), dtype=bool)
        for s in range(0, n, 100_000):  # in chunks: bounded memory
            lab = labels[s:s + 100_000]
            out[s:s + len(lab)] = protos[lab] ^ (rng.random((len(lab), bits)) < 0.2)
        return out, labels

    qc, ql = codes(n_queries)
    dc, dl = codes(n_db)
    return {"query_codes": qc, "db_codes": dc, "query_labels": ql, "db_labels": dl, "bits": bits}


def hash_codes(n_queries: int, n_db: int, bits: int = 64, n_classes: int = 10) -> dict:
    """Task 4 data: boolean codes ``(n, bits)`` and integer class labels (same class = relevant)."""
    return _cached(f"codes_{n_queries}x{n_db}x{bits}x{n_classes}",
                   lambda: _make_codes(n_queries, n_db, bits, n_classes))
