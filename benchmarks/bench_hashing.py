"""Benchmark of issue 4 (not a test): 1,000 queries x 1,000,000 database items, 64-bit codes, 10 classes.

Tie-aware AP (whole list), nDCG@100 and P@1000 with ``tierank.evaluate_codes`` (expected values, counted
from per-distance histograms), against the time of computing the Hamming distance matrix alone, block by
block (XOR + popcount of packed uint64 words into a preallocated uint8 matrix, the same tiling).

Codes are synthetic but class-structured: each class has a random 64-bit prototype and every item flips
each bit of its class prototype with probability 0.2, so distances (and ties) look like those of a
trained hash rather than uniform noise.

    python benchmarks/bench_hashing.py [--queries 1000] [--db 1000000] [--bits 64] [--classes 10]

Prints wall time, peak RSS (``ru_maxrss``) and the ratio. Peak RSS is that of the whole process (the
interpreter, numpy, pandas and the input codes included).
"""

from __future__ import annotations

import argparse
import resource
import time

import numpy as np


def make_data(n_q: int, n_db: int, bits: int, n_classes: int, seed: int = 0):
    """(query words, query labels, database words, database labels): packed uint64 codes."""
    from tierank.hashing import pack_codes

    rng = np.random.default_rng(seed)
    protos = rng.random((n_classes, bits)) < 0.5

    def sample(n: int):
        labels = rng.integers(0, n_classes, size=n)
        parts = []
        for s in range(0, n, 100_000):  # in chunks: bounded memory
            lab = labels[s:s + 100_000]
            parts.append(pack_codes(protos[lab] ^ (rng.random((len(lab), bits)) < 0.2)))
        return np.concatenate(parts), labels

    q, ql = sample(n_q)
    db, dl = sample(n_db)
    return q, ql, db, dl


def hamming_only(qw: np.ndarray, dw: np.ndarray, bits: int, block: int) -> float:
    """Seconds to compute the full distance matrix, one block of queries at a time (tiled, no alloc)."""
    from tierank.hashing.distance import block_distances
    t0 = time.perf_counter()
    for r0 in range(0, len(qw), block):
        block_distances(qw[r0:r0 + block], dw, bits)
    return time.perf_counter() - t0


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--queries", type=int, default=1000)
    ap.add_argument("--db", type=int, default=1_000_000)
    ap.add_argument("--bits", type=int, default=64)
    ap.add_argument("--classes", type=int, default=10)
    ap.add_argument("--measures", nargs="+", default=["AP", "nDCG@100", "P@1000"])
    ap.add_argument("--bounds", action="store_true", help="also compute the exact bounds")
    ap.add_argument("--baseline-block", type=int, default=64,
                    help="queries per block of the distance-matrix baseline")
    args = ap.parse_args()

    import tierank
    from tierank.hashing import evaluate_codes

    t0 = time.perf_counter()
    q, ql, db, dl = make_data(args.queries, args.db, args.bits, args.classes)
    print(f"data: {args.queries} queries x {args.db} items, {args.bits} bits, {args.classes} classes "
          f"(generated in {time.perf_counter() - t0:.1f} s); tierank {tierank.__version__}, numpy {np.__version__}")
    rss_before = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024

    t0 = time.perf_counter()
    res = evaluate_codes(q, db, ql, dl, args.measures, packed=True, bits=args.bits, bounds=args.bounds)
    t_eval = time.perf_counter() - t0
    rss_eval = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024

    t_ham = hamming_only(q, db, args.bits, args.baseline_block)
    print("means:", {k: round(v, 4) for k, v in res.mean.items()})
    what = "expected + bounds" if args.bounds else "expected"
    print(f"evaluate_codes ({what}, histograms): {t_eval:.2f} s, peak RSS {rss_eval:.0f} MiB "
          f"(before: {rss_before:.0f} MiB)")
    print(f"Hamming distance matrix alone (block of {args.baseline_block} queries at a time): {t_ham:.2f} s")
    print(f"ratio evaluate / distances alone: {t_eval / t_ham:.2f}")


if __name__ == "__main__":
    main()
