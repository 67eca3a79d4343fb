"""Benchmark of issue 30 (not a test): tierank.evaluate_embeddings against the floors of its scores.

1,000 queries x 1,000,000 corpus items, 10 relevant items per query (noisy copies of the query planted in
the corpus), AP and nDCG@10, expected values over tie orderings, the whole corpus ranked:

* int8, dim 384, dot product: against a float32 GEMM of the same int8 matrices (exact at this size),
  tile by tile, the corpus tile converted to float32 as tierank converts it;
* binary, 1024 bits (ubinary bytes), Hamming: against the Hamming distances alone (packed XOR +
  popcount, :func:`tierank.hashing.distance.block_distances`).

The corpus is generated quantized (int8 values, packed bits): a float32 corpus of this size would take
1.5 GB before anything is evaluated.

    python benchmarks/bench_embeddings.py [--queries 1000] [--corpus 1000000] [--quick]

Prints wall and CPU seconds (the machine may be shared: CPU time is the steadier number), the ratio to
the floor and the peak resident memory of the evaluation (VmHWM reset once the data exist).
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))
from measure import peak_mb, reset_peak, rss_mb   # noqa: E402


def make_int8(n_q: int, n_c: int, dim: int, n_rel: int, seed: int = 0):
    rng = np.random.default_rng(seed)
    q = rng.integers(-128, 128, size=(n_q, dim), dtype=np.int8)
    c = np.empty((n_c, dim), dtype=np.int8)
    for s in range(0, n_c, 100_000):   # in chunks: bounded memory
        c[s:s + 100_000] = rng.integers(-128, 128, size=(min(100_000, n_c - s), dim), dtype=np.int8)
    rel = {}
    for i in range(n_q):
        idx = rng.choice(n_c, size=n_rel, replace=False)
        noise = rng.integers(-60, 61, size=(n_rel, dim))
        c[idx] = np.clip(q[i].astype(np.int16) + noise, -128, 127).astype(np.int8)
        rel[i] = {int(j): 1 for j in idx}
    return q, c, rel


def make_binary(n_q: int, n_c: int, bits: int, n_rel: int, seed: int = 0):
    rng = np.random.default_rng(seed)
    nb = bits // 8
    q = rng.integers(0, 256, size=(n_q, nb), dtype=np.uint8)
    c = np.empty((n_c, nb), dtype=np.uint8)
    for s in range(0, n_c, 100_000):
        c[s:s + 100_000] = rng.integers(0, 256, size=(min(100_000, n_c - s), nb), dtype=np.uint8)
    rel = {}
    for i in range(n_q):
        idx = rng.choice(n_c, size=n_rel, replace=False)
        flips = np.packbits(rng.random((n_rel, bits)) < 0.3, axis=1)
        c[idx] = q[i] ^ flips
        rel[i] = {int(j): 1 for j in idx}
    return q, c, rel


def gemm_floor(q: np.ndarray, c: np.ndarray, block: int = 256, tile: int = 8192) -> None:
    qf = q.astype(np.float32)
    for r0 in range(0, len(q), block):
        for c0 in range(0, len(c), tile):
            qf[r0:r0 + block] @ c[c0:c0 + tile].astype(np.float32).T


def hamming_floor(q: np.ndarray, c: np.ndarray) -> None:
    from tierank.hashing.distance import block_distances
    from tierank.hashing.codes import as_words

    qw, bits = as_words(q, "q", packed=True)
    cw, _ = as_words(c, "c", packed=True)
    for r0 in range(0, len(qw), 256):
        block_distances(qw[r0:r0 + 256], cw, bits)


def timed(fn) -> tuple[float, float, float]:
    """(wall s, CPU s, peak MB above the resident set before the call)."""
    base = rss_mb()
    reset_peak()
    w0, c0 = time.perf_counter(), time.process_time()
    fn()
    return time.perf_counter() - w0, time.process_time() - c0, peak_mb() - base


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--queries", type=int, default=1000)
    ap.add_argument("--corpus", type=int, default=1_000_000)
    ap.add_argument("--quick", action="store_true", help="200 queries x 100,000 items")
    args = ap.parse_args()
    if args.quick:
        args.queries, args.corpus = 200, 100_000
    from tierank import evaluate_embeddings   # loaded before anything is timed

    measures = ["AP", "nDCG@10"]
    print(f"{args.queries} queries x {args.corpus} corpus items, 10 relevant per query, {', '.join(measures)}")
    print()
    print("| precision | run | wall s | CPU s | x floor (wall) | x floor (CPU) | peak MB | AP | nDCG@10 |")
    print("|---|---|---|---|---|---|---|---|---|")
    for precision in ("int8", "ubinary"):
        if precision == "int8":
            q, c, rel = make_int8(args.queries, args.corpus, 384, 10)
            floor = ("float32 GEMM", lambda: gemm_floor(q, c))
            sim = "dot"
        else:
            q, c, rel = make_binary(args.queries, args.corpus, 1024, 10)
            floor = ("XOR + popcount", lambda: hamming_floor(q, c))
            sim = "hamming"
        fw, fc, fm = timed(floor[1])
        out = {}
        tw, tc, tm = timed(lambda: out.setdefault("res", evaluate_embeddings(
            q, c, rel, measures, similarity=sim, precision=precision)))
        res = out["res"]
        print(f"| {precision} | {floor[0]} (floor) | {fw:.1f} | {fc:.1f} | 1 | 1 | {fm:.0f} | | |")
        print(f"| {precision} | evaluate_embeddings | {tw:.1f} | {tc:.1f} | {tw / fw:.2f} | {tc / fc:.2f} | {tm:.0f} "
              f"| {res.mean['AP']:.4f} | {res.mean['nDCG@10']:.4f} |")
        print(f"RESULT {precision} wall={tw:.2f} cpu={tc:.2f} floor_wall={fw:.2f} floor_cpu={fc:.2f} peak_mb={tm:.0f} "
              f"tie_dependent={res.audit.tie_dependent:.4f}")
        del q, c, rel, res, out


if __name__ == "__main__":
    main()
