"""Hamming ranking of train-free binary codes on scikit-learn's digits: classic tie-breaks vs exact values.

Short binary codes put many database items at the same Hamming distance from a query, so the usual
numbers depend on how those ties happen to be broken. This example hashes the 8x8 digit images
(1,797 images, 10 classes; 300 queries against the other 1,497) with two train-free codes,

* LSH: the sign of random Gaussian projections of the centred pixels,
* PCA + sign: the sign of the top principal components (16/32/64 of the 64 pixel dimensions),

and prints, for AP (whole list), nDCG@100 and P@100 (relevant = same digit), the values under the
classic tie-breaks (database order as given, trec_eval's "document id descending", a seeded shuffle)
next to the tie-aware expected value and the exact minimum / maximum over all tie orders, and the largest
per-query gap between a classic tie-break and the expected value.

A second table stores the database class by class, as many datasets are: the fixed tie-breaks then
favour some classes and penalise others, reaching the exact bounds for whole classes of queries.

Run with ``pip install "tierank[examples]"`` (scikit-learn), then ``python examples/hashing_digits.py``.
"""

from __future__ import annotations

import numpy as np

from tierank.hashing import evaluate_codes, hamming_distances

MEASURES = ["AP", "nDCG@100", "P@100"]
BREAKS = ["input", "trec_eval", "random"]


def load(seed: int = 0):
    from sklearn.datasets import load_digits

    x, y = load_digits(return_X_y=True)
    x = x - x.mean(axis=0)
    order = np.random.default_rng(seed).permutation(len(y))
    q_idx, db_idx = np.sort(order[:300]), np.sort(order[300:])   # database keeps the dataset's order
    return x[q_idx], y[q_idx], x[db_idx], y[db_idx]


def lsh_codes(xq: np.ndarray, xdb: np.ndarray, bits: int, seed: int = 0):
    w = np.random.default_rng(seed).standard_normal((xq.shape[1], bits))
    return xq @ w > 0, xdb @ w > 0


def pca_codes(xq: np.ndarray, xdb: np.ndarray, bits: int):
    from sklearn.decomposition import PCA

    pca = PCA(n_components=bits, random_state=0).fit(xdb)
    return pca.transform(xq) > 0, pca.transform(xdb) > 0


def main() -> None:
    xq, yq, xdb, ydb = load()
    header = f"{'codes':<14}{'measure':<10}" + "".join(f"{b:>11}" for b in BREAKS) + \
        f"{'expected':>10}{'min':>8}{'max':>8}{'max|gap|':>10}"
    print(header)
    print("-" * len(header))
    for name, make in (("LSH", lambda b: lsh_codes(xq, xdb, b)), ("PCA+sign", lambda b: pca_codes(xq, xdb, b))):
        for bits in (16, 32, 64):
            q, db = make(bits)
            exact = evaluate_codes(q, db, yq, ydb, MEASURES, bounds=True)
            broken = {t: evaluate_codes(q, db, yq, ydb, MEASURES, ties=t) for t in BREAKS}
            tied = _mean_tie_size(hamming_distances(q, db))
            for i, m in enumerate(MEASURES):
                label = f"{name} {bits}b" if i == 0 else (f"  ties~{tied:.0f}" if i == 1 else "")
                row = f"{label:<14}{m:<10}" + "".join(f"{broken[t].mean[m]:>11.4f}" for t in BREAKS)
                gap = max(float((broken[t].per_query[m] - exact.per_query[m]).abs().max()) for t in BREAKS)
                row += f"{exact.mean[m]:>10.4f}{exact.mean_lower[m]:>8.4f}{exact.mean_upper[m]:>8.4f}{gap:>10.4f}"
                print(row)
    print("\ninput: database order; trec_eval: database index descending; random: seeded shuffle;")
    print("expected: exact mean over all orders of tied items; min / max: exact bounds (means over queries);")
    print("max|gap|: largest |tie-break value - expected value| of a single query;")
    print("ties~: mean number of database items at the same distance from the query as a given item.")

    # the database stored class by class: fixed tie-breaks are biased per class
    order = np.argsort(ydb, kind="stable")
    q, db = lsh_codes(xq, xdb[order], 16)
    m = "P@100"
    exact = evaluate_codes(q, db, yq, ydb[order], [m], bounds=True)
    broken = {t: evaluate_codes(q, db, yq, ydb[order], [m], ties=t) for t in ("input", "trec_eval")}
    print(f"\nDatabase stored class by class, LSH 16 bits: {m} averaged over the queries of each class")
    print(f"{'class':<10}" + "".join(f"{c:>6}" for c in range(10)))
    rows = [("input", broken["input"].per_query), ("trec_eval", broken["trec_eval"].per_query),
            ("expected", exact.per_query), ("min", exact.lower), ("max", exact.upper)]
    for label, frame in rows:
        means = frame[m].groupby(yq).mean()
        print(f"{label:<10}" + "".join(f"{means[c]:>6.3f}" for c in range(10)))


def _mean_tie_size(dist: np.ndarray) -> float:
    """Average, over queries and database items, of how many items share the item's distance."""
    width = int(dist.max()) + 1
    flat = np.arange(dist.shape[0])[:, None] * width + dist
    counts = np.bincount(flat.ravel(), minlength=dist.shape[0] * width).reshape(dist.shape[0], width)
    return float((counts.astype(float) ** 2).sum(axis=1).mean() / dist.shape[1])


if __name__ == "__main__":
    main()
