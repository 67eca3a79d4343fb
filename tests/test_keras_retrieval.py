"""tierank.keras.retrieval against an independent numpy re-statement of TensorFlow Similarity's formulas
(tensorflow_similarity/retrieval_metrics/*.py: bndcg, precision_at_k, recall_at_k, map_at_k), and against
brute force over every order of tied lookups.

TF Similarity reads the columns in the order given; so on tie-free distances (columns sorted by
distance) and with ties="input" the values must equal its formulas, and with ties the expected value /
bounds ("upper" / "lower") must be the mean / max / min of its formula over every order of the tied
lookups, "optimistic" / "pessimistic" its value with each tie's matches first / last.
"""

from __future__ import annotations

import itertools
import math

import numpy as np
import pytest

pytest.importorskip("keras")
import tierank  # noqa: E402
import tierank.keras  # noqa: E402
from tierank.keras.retrieval import BNDCG, MapAtK, PrecisionAtK, RecallAtK  # noqa: E402


# ------------------------------------------------------------------ TF Similarity, restated in numpy

def tfsim_per_query(kind: str, label: int, mm: np.ndarray, dist: np.ndarray, k: int, r=None, clip_at_r=False,
                    threshold=math.inf) -> float:
    """One query's value by TF Similarity's formulas, the lookups in the given (column) order."""
    mm = mm.astype(float)
    rank = np.arange(1, k + 1, dtype=float)
    if kind == "bndcg":
        ks = (mm * (dist <= threshold))[:k]
        weights = np.log1p(rank) / np.log(2.0)
        dcg = (ks / weights).sum()
        idcg = (np.sort(ks)[::-1] / weights).sum()
        return dcg / idcg if idcg else 0.0
    if kind == "recall":
        return float(mm[:k].any())
    count = (r or {}).get(label, 0) if r is not None else k
    matches = mm[:k]
    if kind == "map":
        matches = matches * np.cumsum(matches) / rank
    if clip_at_r:
        return matches[:count].sum() / count if count else 0.0
    return matches.sum() / count if count else 0.0


def tfsim(kind, labels, mm, dist, k, average="micro", **kw) -> float:
    per = np.array([tfsim_per_query(kind, int(lab), mm[i], dist[i], k, **kw) for i, lab in enumerate(labels)])
    if average == "micro":
        return float(per.mean())
    return float(np.mean([per[labels == c].mean() for c in np.unique(labels)]))


def make(kind, k, average="micro", ties="expected", r=None, clip_at_r=False, threshold=math.inf, dtype="float64"):
    if kind == "bndcg":
        return BNDCG(k=k, average=average, ties=ties, distance_threshold=threshold, dtype=dtype)
    if kind == "recall":
        return RecallAtK(k=k, average=average, ties=ties, dtype=dtype)
    if kind == "precision":
        return PrecisionAtK(k=k, average=average, ties=ties, r=r, clip_at_r=clip_at_r, dtype=dtype)
    return MapAtK(k=k, ties=ties, r=r, clip_at_r=clip_at_r, dtype=dtype)


def value(metric, labels, mm, dist) -> float:
    return float(metric.compute(query_labels=labels, lookup_labels=None, lookup_distances=dist, match_mask=mm))


KINDS = ("bndcg", "recall", "precision", "map")


def lookups(rng, Q=9, n=6, n_classes=3, tie_free=True):
    labels = rng.integers(0, n_classes, Q)
    lookup_labels = rng.integers(0, n_classes, (Q, n))
    mm = lookup_labels == labels[:, None]
    if tie_free:
        dist = np.sort(rng.random((Q, n)), axis=1)
    else:
        dist = rng.integers(0, 3, (Q, n)).astype(float) / 4   # heavy ties
    return labels, lookup_labels, mm, dist


def variants(kind):
    r = {0: 2, 1: 5, 2: 1}
    if kind in ("bndcg", "recall"):
        out = [dict(average=a) for a in ("micro", "macro")]
        if kind == "bndcg":
            out.append(dict(threshold=0.5))
        return out
    out = [dict(r=None), dict(r=r), dict(r=r, clip_at_r=True), dict(r={0: 3}, clip_at_r=True)]   # class 1, 2 missing
    if kind == "precision":
        out.append(dict(r=r, average="macro"))
    return out


def kw_for_tfsim(v):
    out = {key: val for key, val in v.items() if key in ("r", "clip_at_r", "average")}
    if "threshold" in v:
        out["threshold"] = v["threshold"]
    return out


@pytest.mark.parametrize("kind", KINDS)
def test_tie_free_equals_tf_similarity(kind):
    rng = np.random.default_rng(KINDS.index(kind))
    labels, lookup_labels, mm, dist = lookups(rng)
    for k in (1, 3, 6):
        for v in variants(kind):
            want = tfsim(kind, labels, mm, dist, k, **kw_for_tfsim(v))
            for ties in tierank.keras.KERAS_TIES:
                got = value(make(kind, k, ties=ties, **v), labels, mm, dist)
                assert math.isclose(got, want, rel_tol=1e-12, abs_tol=1e-12), (kind, k, v, ties)


@pytest.mark.parametrize("kind", KINDS)
def test_input_order_equals_tf_similarity_on_ties(kind):
    """ties='input' reads tied lookups in column order: TF Similarity's value when the columns are sorted."""
    rng = np.random.default_rng(10 + KINDS.index(kind))
    labels, _, mm, dist = lookups(rng, tie_free=False)
    order = np.argsort(dist, axis=1, kind="stable")
    dist, mm = np.take_along_axis(dist, order, 1), np.take_along_axis(mm, order, 1)
    for k in (2, 4):
        for v in variants(kind):
            want = tfsim(kind, labels, mm, dist, k, **kw_for_tfsim(v))
            got = value(make(kind, k, ties="input", **v), labels, mm, dist)
            assert math.isclose(got, want, rel_tol=1e-12, abs_tol=1e-12), (kind, k, v)


def orderings(dist):
    return [p for p in itertools.permutations(range(len(dist)))
            if all(dist[p[i]] <= dist[p[i + 1]] for i in range(len(p) - 1))]


def arrangement(dist, mm, matches_first: bool) -> list:
    """The lookups by distance, each tie's matches first (or last), then by column."""
    sign = -1 if matches_first else 1
    return sorted(range(len(dist)), key=lambda j: (dist[j], sign * int(mm[j]), j))


#: the tie modes checked by brute force: (mode, the per-query value from the formula's values over every
#: order of the ties and the values of the two arrangements)
BRUTE_MODES = (("expected", lambda vals, best, worst: np.mean(vals)),
               ("upper", lambda vals, best, worst: np.max(vals)),
               ("lower", lambda vals, best, worst: np.min(vals)),
               ("optimistic", lambda vals, best, worst: best),
               ("pessimistic", lambda vals, best, worst: worst))


def brute_force(kind, labels, mm, dist, k, **tv) -> np.ndarray:
    """Per query and per mode of BRUTE_MODES, TF Similarity's formula over the orders of the tied lookups."""
    per = []
    for i, lab in enumerate(labels):
        def f(p):
            return tfsim_per_query(kind, int(lab), mm[i][list(p)], dist[i][list(p)], k, **tv)
        vals = [f(p) for p in orderings(dist[i])]
        best, worst = f(arrangement(dist[i], mm[i], True)), f(arrangement(dist[i], mm[i], False))
        per.append([g(vals, best, worst) for _, g in BRUTE_MODES])
    return np.array(per)


@pytest.mark.parametrize("kind", KINDS)
def test_brute_force_over_tie_orders(kind):
    """expected / upper / lower = mean / max / min of TF Similarity's formula over every order of the tied
    lookups (per query; the micro average of per-query bounds is the bound of the average); optimistic /
    pessimistic = its value with each tie's matches first / last."""
    rng = np.random.default_rng(20 + KINDS.index(kind))
    for _ in range(2):
        labels, _, mm, dist = lookups(rng, Q=8, n=int(rng.integers(3, 7)), tie_free=False)
        n = dist.shape[1]
        for k in sorted({1, 2, n}):
            for v in variants(kind):
                if v.get("average") == "macro":
                    continue
                tv = {key: val for key, val in kw_for_tfsim(v).items() if key != "average"}
                per = brute_force(kind, labels, mm, dist, k, **tv)
                for j, (ties, _) in enumerate(BRUTE_MODES):
                    got = value(make(kind, k, ties=ties, **v), labels, mm, dist)
                    assert math.isclose(got, per[:, j].mean(), rel_tol=1e-12, abs_tol=1e-12), (kind, k, v, ties)


def test_random_ties_are_one_of_the_orders_and_seeded():
    rng = np.random.default_rng(5)
    labels, _, mm, dist = lookups(rng, Q=1, n=5, tie_free=False)
    dist[:] = 0.5                 # one tie of five lookups
    mm[0] = [True, False, True, False, False]
    vals = {round(tfsim_per_query("bndcg", 0, mm[0][list(p)], dist[0], 2), 12) for p in orderings(dist[0])}
    for seed in range(4):
        a = value(BNDCG(k=2, ties="random", seed=seed, dtype="float64"), labels, mm, dist)
        assert round(a, 12) in vals
        assert a == value(BNDCG(k=2, ties="random", seed=seed, dtype="float64"), labels, mm, dist)


def test_hand_computed_bndcg_tie_at_the_cut():
    # distances 0.1 (miss), then a tie of three at 0.2 with two matches; k = 2: one slot of the tie in the
    # top 2, filled by a match with probability 2/3 -> DCG 1/log2(3) over IDCG(1) = 1 -> 0.6309; else 0
    d = np.array([[0.1, 0.2, 0.2, 0.2]])
    m = np.array([[False, True, False, True]])
    lab = np.array([0])
    want = 2 / 3 / math.log2(3)
    assert math.isclose(value(BNDCG(k=2, dtype="float64"), lab, m, d), want, rel_tol=1e-12)
    for ties in ("optimistic", "upper"):   # a match in the one slot (the arrangement is the maximum here)
        assert math.isclose(value(BNDCG(k=2, ties=ties, dtype="float64"), lab, m, d), 1 / math.log2(3), rel_tol=1e-12)
    for ties in ("pessimistic", "lower"):
        assert value(BNDCG(k=2, ties=ties), lab, m, d) == 0.0
    # a threshold of 0.15 makes the tied matches misses
    assert value(BNDCG(k=2, distance_threshold=0.15), lab, m, d) == 0.0


def test_names_and_config():
    assert PrecisionAtK(k=3).name == "precision@3"
    assert PrecisionAtK(k=3, clip_at_r=True, r={0: 1}).name == "precision"
    assert BNDCG(k=4, distance_threshold=0.5).name == "ndcg@4 : distance_threshold@0.5"
    assert repr(MapAtK(k=2)) == "map@k : map@2"
    for m in (BNDCG(k=3, ties="optimistic", average="macro"), RecallAtK(k=2, seed=4),
              PrecisionAtK(k=2, r={1: 3}, clip_at_r=True), MapAtK(k=5, r={0: 2}, ties="pessimistic")):
        clone = type(m).from_config(m.get_config())
        assert clone.get_config() == m.get_config()


@pytest.mark.parametrize("make_call, match", [
    (lambda d, m, lab: RecallAtK(k=5).compute(query_labels=lab, lookup_distances=d, match_mask=m), "neighbors"),
    (lambda d, m, lab: RecallAtK(k=2).compute(query_labels=lab, lookup_distances=d, match_mask=m[:, :2]), "shape"),
    (lambda d, m, lab: RecallAtK(k=2).compute(query_labels=lab[:1], lookup_distances=d, match_mask=m),
     "number of query labels"),
    (lambda d, m, lab: BNDCG(k=2).compute(query_labels=lab, lookup_distances=np.where(d > 0.3, np.nan, d),
                                          match_mask=m), "NaN"),
    (lambda d, m, lab: BNDCG(k=2).compute(query_labels=lab, match_mask=m), "lookup_distances is required"),
    (lambda d, m, lab: MapAtK(k=2, average="macro"), "micro"),
    (lambda d, m, lab: RecallAtK(k=0), "positive integer"),
    (lambda d, m, lab: RecallAtK(k=2, average="weighted"), "average"),
    (lambda d, m, lab: RecallAtK(k=2, ties="shuffle"), "ties must be one of"),
    (lambda d, m, lab: RecallAtK(k=2).compute(query_labels=lab, lookup_distances=d, match_mask=m * 3), "boolean"),
])
def test_bad_input(make_call, match):
    d = np.array([[0.1, 0.2, 0.4], [0.2, 0.2, 0.3]])
    m = np.array([[True, False, True], [False, True, False]])
    with pytest.raises(tierank.InputError, match=match):
        make_call(d, m, np.array([0, 1]))


def test_float32_close_to_float64():
    rng = np.random.default_rng(8)
    labels, _, mm, dist = lookups(rng, Q=20, n=8, tie_free=False)
    for kind in KINDS:
        a = value(make(kind, 4, dtype="float32"), labels, mm, dist)
        b = value(make(kind, 4), labels, mm, dist)
        assert math.isclose(a, b, rel_tol=1e-5, abs_tol=1e-6), kind
