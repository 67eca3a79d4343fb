"""tierank.evaluate_embeddings against the brute force over tie orderings, with scores computed here.

The expected keys are computed in the test, independently of tierank: exact integer dot products and
cosines as fractions (Python ints), Hamming distances from unpacked bits, float scores as the exact sum
of the products (fractions) rounded once to the precision by an independent rounding written here.
"""

from __future__ import annotations

import math
from fractions import Fraction

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import tierank
from oracle import analyse, fixed_value

MEASURES = ["AP", "nDCG@3", "P@2", "RR", "R@3"]

# -- independent scores ---------------------------------------------------------------------------------

FORMATS = {"float32": (24, -149), "float16": (11, -24), "bfloat16": (8, -133)}


def round_exact(s: Fraction, precision: str) -> float:
    """Round a rational to nearest even with the precision's significand (no overflow in these tests)."""
    bits, emin = FORMATS[precision]
    if s == 0:
        return 0.0
    e = math.floor(math.log2(abs(s)))
    while Fraction(2) ** e > abs(s):
        e -= 1
    while Fraction(2) ** (e + 1) <= abs(s):
        e += 1
    quantum = Fraction(2) ** max(e - bits + 1, emin)
    return float(round(s / quantum) * quantum)


def to_precision(x: np.ndarray, precision: str) -> list[list[Fraction]]:
    if precision == "float32":
        vals = x.astype(np.float32).astype(np.float64)
    else:
        base = x.astype(np.float32).astype(np.float64) if precision == "bfloat16" else x
        vals = np.vectorize(lambda v: round_exact(Fraction(float(v)), precision))(base)
    return [[Fraction(float(v)) for v in row] for row in vals]


def normalised(rows: list[list[Fraction]], precision: str) -> list[list[Fraction]]:
    out = []
    for r in rows:
        norm = math.sqrt(float(sum(v * v for v in r)))   # float64 norm, as documented
        out.append([Fraction(round_exact(Fraction(float(v) / norm), precision)) if norm else Fraction(0) for v in r])
    return out


def float_keys(q: np.ndarray, c: np.ndarray, precision: str, similarity: str) -> np.ndarray:
    qs, cs = to_precision(q, precision), to_precision(c, precision)
    if similarity == "cosine":
        qs, cs = normalised(qs, precision), normalised(cs, precision)
    return np.array([[round_exact(sum(a * b for a, b in zip(qr, cr)), precision) for cr in cs] for qr in qs])


def quantize_int8(x: np.ndarray, ranges: np.ndarray) -> np.ndarray:
    start, stop = ranges[0].astype(np.float32), ranges[1].astype(np.float32)
    steps = (stop - start) / 255
    steps = np.where(steps == 0, 1, steps)
    return (np.clip(np.floor((x - start) / steps), 0, 255) - 128).astype(np.int8)


def int_keys(qi: np.ndarray, ci: np.ndarray, similarity: str) -> list[list[Fraction]]:
    """Exact dot products, or values ordered as the cosine: sign(d) d^2 / |c|^2 (|q| is constant per row)."""
    out = []
    for a in qi.astype(int).tolist():
        row = []
        for b in ci.astype(int).tolist():
            d = sum(x * y for x, y in zip(a, b))
            n = sum(y * y for y in b)
            row.append(Fraction(d) if similarity == "dot" else (Fraction((1 if d > 0 else -1) * d * d, n) if n else Fraction(0)))
        out.append(row)
    return out


def hamming_keys(q: np.ndarray, c: np.ndarray) -> np.ndarray:
    qb, cb = (q > 0).astype(int), (c > 0).astype(int)
    return -np.array([[int(np.sum(a != b)) for b in cb] for a in qb])


def dense(rel: dict, n_q: int, n_c: int) -> np.ndarray:
    g = np.zeros((n_q, n_c))
    for qi, docs in rel.items():
        for ci, grade in docs.items():
            g[qi, ci] = grade
    return g


def ranks(row) -> list[int]:
    """Exact keys (floats or fractions) as dense ranks: the oracle compares floats, which could merge
    two fractions."""
    vals = [Fraction(v) if not isinstance(v, Fraction) else v for v in row]
    order = {v: i for i, v in enumerate(sorted(set(vals)))}
    return [order[v] for v in vals]


def check(res, grades: np.ndarray, keys, measures: list[str]) -> None:
    for r in range(grades.shape[0]):
        ks = ranks(keys[r])
        for m in measures:
            a = analyse(m, list(grades[r]), ks)
            want = {"expected": a.mean, "lower": a.lo, "upper": a.hi}
            assert res.per_query[m].iloc[r] == pytest.approx(want[res.ties], abs=1e-12), (m, r)
            assert res.audit.summary is not None
            lo = float(res.audit.per_query[("width", m)].iloc[r])
            assert lo == pytest.approx(a.hi - a.lo, abs=1e-12)
            assert bool(res.audit.per_query[("depends", m)].iloc[r]) == (a.hi - a.lo > 1e-12)


# -- random small cases ----------------------------------------------------------------------------------

def data(seed: int, n_q: int = 3, n_c: int = 7, dim: int = 4, levels: int = 3):
    rng = np.random.default_rng(seed)
    # few distinct values: ties in every precision
    q = rng.integers(-levels, levels + 1, size=(n_q, dim)) / levels
    c = rng.integers(-levels, levels + 1, size=(n_c, dim)) / levels
    rel = {i: {int(j): int(rng.integers(1, 3)) for j in rng.choice(n_c, size=int(rng.integers(0, 4)), replace=False)}
           for i in range(n_q)}
    return q, c, rel


@pytest.mark.parametrize("precision", ["float32", "float16", "bfloat16"])
@pytest.mark.parametrize("similarity", ["dot", "cosine"])
@pytest.mark.parametrize("seed", range(4))
def test_float_precisions_against_brute_force(precision, similarity, seed):
    q, c, rel = data(seed)
    q = q + np.random.default_rng(seed + 100).normal(scale=1e-3, size=q.shape) * (seed % 2)
    res = tierank.evaluate_embeddings(q, c, rel, MEASURES, similarity=similarity, precision=precision)
    check(res, dense(rel, *q.shape[:1], c.shape[0]), float_keys(q, c, precision, similarity), MEASURES)


@pytest.mark.parametrize("precision", ["int8", "uint8"])
@pytest.mark.parametrize("similarity", ["dot", "cosine"])
@pytest.mark.parametrize("seed", range(4))
def test_integer_precisions_against_brute_force(precision, similarity, seed):
    q, c, rel = data(seed)
    rng = np.random.default_rng(seed)
    info = np.iinfo(np.int8 if precision == "int8" else np.uint8)
    qi = rng.integers(info.min, info.max + 1, size=q.shape).astype(info.dtype)
    ci = np.concatenate([qi[:1], rng.integers(info.min, info.max + 1, size=(c.shape[0] - 1, q.shape[1]))]).astype(
        info.dtype)
    ci[2] = ci[0] * (1 if precision == "uint8" else 1)          # duplicate items: exact ties
    ci[3] = ci[1]
    for ties in ("expected", "lower"):
        res = tierank.evaluate_embeddings(qi, ci, rel, MEASURES, similarity=similarity, precision=precision,
                                          ties=ties)
        check(res, dense(rel, q.shape[0], c.shape[0]), int_keys(qi, ci, similarity), MEASURES)


@pytest.mark.parametrize("precision", ["binary", "ubinary"])
@pytest.mark.parametrize("similarity", ["dot", "cosine", "hamming"])
@pytest.mark.parametrize("seed", range(3))
def test_binary_against_brute_force(precision, similarity, seed):
    q, c, rel = data(seed, dim=11)
    res = tierank.evaluate_embeddings(q, c, rel, MEASURES, similarity=similarity, precision=precision)
    check(res, dense(rel, q.shape[0], c.shape[0]), hamming_keys(q, c), MEASURES)


def test_quantization_matches_sentence_transformers():
    from sentence_transformers.util.quantization import quantize_embeddings

    from tierank.embeddings.quantize import encode, quantization_ranges

    rng = np.random.default_rng(1)
    x = rng.normal(size=(50, 13)).astype(np.float32)
    cal = rng.normal(size=(200, 13)).astype(np.float32)
    for precision in ("int8", "uint8"):
        for calibration in (None, cal):
            ours = encode(x, precision, "x", quantization_ranges(x, calibration, "x")).values
            theirs = quantize_embeddings(x, precision=precision, calibration_embeddings=calibration)
            assert ours.dtype == theirs.dtype and np.array_equal(ours, theirs)
    for precision in ("binary", "ubinary"):
        theirs = quantize_embeddings(x, precision=precision)
        ours = encode(x, precision, "x")
        assert np.array_equal(ours.values, theirs.view(np.uint8) ^ 0x80 if precision == "binary" else theirs)
        # already quantized bytes are taken as they are: same result as quantizing here
        a = tierank.evaluate_embeddings(x[:5], x, {0: {1: 1}}, ["AP"], precision=precision)
        b = tierank.evaluate_embeddings(quantize_embeddings(x[:5], precision=precision), theirs, {0: {1: 1}},
                                        ["AP"], precision=precision)
        assert a.per_query.equals(b.per_query)


@given(st.integers(0, 10 ** 6), st.integers(1, 5), st.sampled_from(["int8", "binary", "float16", "bfloat16"]),
       st.sampled_from(["dot", "cosine"]), st.sampled_from([None, 3]), st.sampled_from(["expected", "input"]))
@settings(max_examples=40, deadline=None)
def test_block_size_invariance(seed, block_size, precision, similarity, k, ties):
    q, c, rel = data(seed, n_q=6, n_c=9)
    kwargs = dict(similarity=similarity, precision=precision, bounds=True, calibration_embeddings=c, k=k, ties=ties)
    whole = tierank.evaluate_embeddings(q, c, rel, MEASURES, **kwargs)
    blocked = tierank.evaluate_embeddings(q, c, rel, MEASURES, block_size=block_size, **kwargs)
    assert whole == blocked
    assert whole.audit == blocked.audit


def test_fixed_tie_modes_order_by_corpus_index():
    q, c, rel = data(3, dim=11)
    keys = hamming_keys(q, c)
    g = dense(rel, q.shape[0], c.shape[0])
    for mode in ("input", "trec_eval", "optimistic", "pessimistic"):
        res = tierank.evaluate_embeddings(q, c, rel, ["AP", "P@2"], precision="binary", ties=mode)
        for r in range(q.shape[0]):
            for m in ("AP", "P@2"):
                assert res.per_query[m].iloc[r] == pytest.approx(fixed_value(m, list(g[r]), list(keys[r]), mode))
