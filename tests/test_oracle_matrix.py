"""tierank.evaluate_matrix against the brute-force oracle (tests/oracle.py) on many small random lists.

Every case: one matrix (rows = queries, a few rows so rows are also checked to be independent), one measure
string, every tie mode; per row the library's per_query / lower / upper and the mean over rows must equal the
oracle's enumeration of all tie orderings to 1e-9.  Keys come from tiny ranges so ties are everywhere (k
inside ties, all tied, no ties, +-inf, 0.0 / -0.0), grades are binary, 0..4 or fractional.

Two drivers: seeded numpy loops (one pytest case per measure template, several thousand lists overall) and
hypothesis (derandomized, no example database) which also shrinks a failure to a small example.
"""

from __future__ import annotations

import math
import os
import sys

import numpy as np
import pytest
from hypothesis import HealthCheck, given, note, settings
from hypothesis import strategies as st

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import oracle  # noqa: E402

tierank = pytest.importorskip("tierank")

# ``{k}`` is replaced by the cutoff; templates without it are whole-list measures.
TEMPLATES = [
    # precision / recall / F1 / success
    "P@{k}", "P(clip=True)@{k}", "P(rel=2)@{k}", "P(rel=0.5)@{k}", "P(rel=2, clip=True)@{k}",
    "R@{k}", "R(rel=2)@{k}", "R(rel=0.5)@{k}",
    "F1@{k}", "F1(clip=True)@{k}", "F1(rel=2)@{k}",
    "Success@{k}", "Success(rel=2)@{k}",
    # average precision, all denominators, with and without cutoff
    "AP@{k}", "AP(denom='R')@{k}", "AP(denom='retrieved')@{k}", "AP(denom='min_k_R')@{k}",
    "AP", "AP(denom='retrieved')", "AP(denom='min_k_R')", "AP(rel=2)", "AP(rel=2)@{k}",
    "AP(rel=0.5, denom='retrieved')@{k}", "AP(rel=2, denom='min_k_R')@{k}",
    # reciprocal rank
    "RR@{k}", "RR", "RR(rel=2)@{k}", "RR(rel=2)",
    # DCG / nDCG
    "DCG@{k}", "DCG", "DCG(gain='exp2')@{k}", "DCG(discount='jk')@{k}", "DCG(gain='exp2', discount='jk')",
    "nDCG@{k}", "nDCG", "nDCG(gain='exp2')@{k}", "nDCG(discount='jk')@{k}",
    "nDCG(discount='jk', gain='exp2')@{k}", "nDCG(dcg='exp-log2')@{k}", "nDCG(dcg='log2')@{k}",
    "nDCG(gains={1: 1, 2: 5})@{k}", "nDCG(gain='exp2', gains={4: 3})@{k}", "nDCG(gains={0: 0, 3: 0.5})",
    "DCG(gains={1: 1, 2: 5})@{k}",
    # ERR
    "ERR@{k}", "ERR", "ERR(max_grade=4)@{k}", "ERR(max_grade=5)",
    # multi-label hashing measures
    "ACG@{k}", "ACG(clip=True)@{k}",
    "WAP@{k}", "WAP(denom='retrieved')@{k}", "WAP(denom='R')@{k}", "WAP(denom='min_k_R')@{k}",
    "WAP(rel=2)@{k}", "WAP(rel=0.5, denom='R')@{k}",
    # R-precision and counts
    "Rprec", "Rprec(rel=2)", "Rprec(rel=0.5)",
    "NumQ", "NumRet", "NumRel", "NumRelRet", "NumRel(rel=2)", "NumRelRet(rel=2)",
]

GRADE_SETS = [
    (0.0, 1.0),
    (0.0, 1.0, 2.0, 3.0, 4.0),
    (0.0, 0.25, 0.5, 1.5),
    (0.0, 0.5, 2.25),
    (0.0, 0.0, 0.0, 1.0, 2.0),  # mostly non-relevant
]

SPECIAL_KEYS = (-math.inf, -2.5, -0.0, 0.0, 1.0, math.inf)
KEY_STYLES = ("small", "small", "small", "binary", "equal", "distinct", "special")


def has_k(template: str) -> bool:
    return "{k}" in template


def fill(template: str, k) -> str:
    # str.replace, not str.format: templates hold dict literals such as gains={1: 1}
    return template.replace("{k}", str(k)) if has_k(template) else template


# ----------------------------------------------------------------------------------- data generators


def gen_keys(rng: np.random.Generator, n: int, style: str) -> np.ndarray:
    if style == "small":
        return rng.integers(0, int(rng.integers(1, 4)) + 1, size=n).astype(float)
    if style == "binary":
        return rng.integers(0, 2, size=n).astype(float)
    if style == "equal":
        return np.full(n, float(rng.choice([0.0, -1.0, 3.5])))
    if style == "distinct":
        return rng.permutation(n).astype(float) * float(rng.choice([1.0, -0.5]))
    if style == "special":
        return rng.choice(np.array(SPECIAL_KEYS), size=n)
    raise ValueError(style)


def gen_matrix(rng: np.random.Generator, n: int, nrows: int, grade_set):
    """(relevance, keys) with one random key style per row; keys higher = better."""
    rel = rng.choice(np.array(grade_set), size=(nrows, n))
    keys = np.stack([gen_keys(rng, n, str(rng.choice(KEY_STYLES))) for _ in range(nrows)])
    if rng.random() < 0.3 and np.all(rel == np.round(rel)):
        rel = rel.astype(np.int64)
    if rng.random() < 0.3 and np.all(np.isfinite(keys)) and np.all(keys == np.round(keys)):
        keys = keys.astype(np.int64)
    return rel, keys


def call_kwargs(rng_or_bool, keys):
    """scores=keys or distances=-keys (lower distance = better): same orderings either way."""
    use_dist = rng_or_bool if isinstance(rng_or_bool, bool) else bool(rng_or_bool.random() < 0.5)
    return {"distances": -keys} if use_dist else {"scores": keys}


# -------------------------------------------------------------------------------------- seeded loops


def _configs(rng: np.random.Generator, template: str):
    """(n, k) pairs: n = 1..7; k = a random one in 1..n+2 and, in turn, 1 / n / n+1 / n+2
    (whole-list measures: two per n).  Few calls, many rows per call: the library call dominates the time."""
    out = []
    for n in range(1, 8):
        if has_k(template):
            ks = {int(rng.integers(1, n + 3)), (1, n, n + 1, n + 2)[n % 4]}
            out.extend((n, k) for k in sorted(ks))
        else:
            out.extend([(n, None), (n, None)])
    return out


@pytest.mark.parametrize("template", TEMPLATES)
def test_seeded_matrix_against_oracle(template):
    rng = np.random.default_rng(_stable_seed(template))
    for n, k in _configs(rng, template):
        measure = fill(template, k)
        nrows = int(rng.integers(3, 8))
        rel, keys = gen_matrix(rng, n, nrows, GRADE_SETS[int(rng.integers(len(GRADE_SETS)))])
        kw = call_kwargs(rng, keys)
        oracle.check_library(tierank, rel, measure, **kw)


def _stable_seed(s: str) -> int:
    # hash() of str is salted per process; use a fixed digest so runs are reproducible
    h = 0
    for ch in s:
        h = (h * 131 + ord(ch)) % (2**32)
    return h


# ---------------------------------------------------------------------------------------- hypothesis

HYP = settings(max_examples=500, deadline=None, derandomize=True, database=None,
               suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])


@st.composite
def keys_row(draw, n):
    style = draw(st.sampled_from(KEY_STYLES))
    if style == "small":
        hi = draw(st.integers(1, 3))
        return [float(draw(st.integers(0, hi))) for _ in range(n)]
    if style == "binary":
        return [float(draw(st.integers(0, 1))) for _ in range(n)]
    if style == "equal":
        return [draw(st.sampled_from([0.0, -1.0, math.inf]))] * n
    if style == "distinct":
        return [float(x) for x in draw(st.permutations(list(range(n))))]
    return [draw(st.sampled_from(SPECIAL_KEYS)) for _ in range(n)]


@st.composite
def matrix_case(draw):
    template = draw(st.sampled_from(TEMPLATES))
    n = draw(st.integers(1, 7))
    nrows = draw(st.integers(1, 3))
    k = draw(st.integers(1, n + 2))
    measure = fill(template, k)
    gset = draw(st.sampled_from(GRADE_SETS))
    rel = np.array([[draw(st.sampled_from(gset)) for _ in range(n)] for _ in range(nrows)], dtype=float)
    keys = np.array([draw(keys_row(n)) for _ in range(nrows)], dtype=float)
    use_dist = draw(st.booleans())
    mode = draw(st.sampled_from(oracle.ALL_MODES))
    return measure, rel, keys, use_dist, mode


@HYP
@given(matrix_case())
def test_hypothesis_matrix_against_oracle(case):
    measure, rel, keys, use_dist, mode = case
    note(f"measure={measure!r} mode={mode!r} use_dist={use_dist}\nrel={rel.tolist()}\nkeys={keys.tolist()}")
    oracle.check_library(tierank, rel, measure, modes=(mode,), **call_kwargs(use_dist, keys))


@settings(HYP, max_examples=200)
@given(matrix_case(), st.integers(0, 2**31 - 1))
def test_hypothesis_random_mode_seeds(case, seed):
    """ties='random' with an explicit seed: a real ordering's value, within bounds, reproducible."""
    measure, rel, keys, use_dist, _ = case
    oracle.check_library(tierank, rel, measure, modes=("random",), seed=seed, **call_kwargs(use_dist, keys))


# ------------------------------------------------------- metamorphic checks (library against itself,
# each justified by the definitions; cheap and catch index / orientation slips the oracle might share)


def _frames(res, m):
    return (res.per_query[m].to_numpy(float), res.lower[m].to_numpy(float), res.upper[m].to_numpy(float))


@settings(max_examples=120, deadline=None, derandomize=True, database=None,
          suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])
@given(matrix_case(), st.randoms(use_true_random=False))
def test_metamorphic_invariances(case, rnd):
    measure, rel, keys, _, _ = case
    n = rel.shape[1]
    perm = list(range(n))
    rnd.shuffle(perm)
    for mode in ("expected", "optimistic", "pessimistic", "input", "trec_eval"):
        base = tierank.evaluate_matrix(rel, scores=keys, measures=[measure], ties=mode, bounds=True)
        b = _frames(base, measure)
        # distances = -scores orders identically (and column indices are unchanged)
        mir = _frames(tierank.evaluate_matrix(rel, distances=-keys, measures=[measure], ties=mode,
                                              bounds=True), measure)
        for x, y in zip(b, mir):
            np.testing.assert_allclose(x, y, atol=1e-9, rtol=0)
        # a strictly increasing transform of the scores changes nothing (exp keeps -inf / inf / ties)
        mono = _frames(tierank.evaluate_matrix(rel, scores=np.exp(np.clip(keys, -50, 50)) * 3.0,
                                               measures=[measure], ties=mode, bounds=True), measure)
        for x, y in zip(b, mono):
            np.testing.assert_allclose(x, y, atol=1e-9, rtol=0)
        # permuting columns changes only the index-based tie-breaks
        shuffled = _frames(tierank.evaluate_matrix(rel[:, perm], scores=keys[:, perm], measures=[measure],
                                                   ties=mode, bounds=True), measure)
        np.testing.assert_allclose(b[1], shuffled[1], atol=1e-9, rtol=0)
        np.testing.assert_allclose(b[2], shuffled[2], atol=1e-9, rtol=0)
        if mode in ("expected", "optimistic", "pessimistic"):
            np.testing.assert_allclose(b[0], shuffled[0], atol=1e-9, rtol=0)
    # reversing the columns swaps input (index ascending) and trec_eval (index descending)
    inp = tierank.evaluate_matrix(rel, scores=keys, measures=[measure], ties="input").per_query[measure]
    rev = tierank.evaluate_matrix(rel[:, ::-1].copy(), scores=keys[:, ::-1].copy(), measures=[measure],
                                  ties="trec_eval").per_query[measure]
    np.testing.assert_allclose(inp.to_numpy(float), rev.to_numpy(float), atol=1e-9, rtol=0)


# ------------------------------------------- AP / WAP with the 'retrieved' denominator, k cutting a tie
# There the min / max are not the pessimistic / optimistic orderings (tie_math.md §2); random data rarely
# produces such rows, so build them on purpose: earlier ties, then a tie with relevant and non-relevant
# items that the cutoff cuts.

CUT_TEMPLATES = ["AP(denom='retrieved')@{k}", "AP(rel=2, denom='retrieved')@{k}", "WAP@{k}",
                 "WAP(rel=2)@{k}", "AP@{k}", "AP(denom='min_k_R')@{k}", "WAP(denom='R')@{k}", "P@{k}",
                 "nDCG@{k}", "ERR@{k}", "RR@{k}", "Success@{k}"]


def gen_cut_tie_row(rng: np.random.Generator, n: int, grade_set):
    """(grades, keys, k) with k strictly inside a tie that holds relevant and non-relevant items."""
    cut_size = int(rng.integers(2, n + 1))
    before = int(rng.integers(0, n - cut_size + 1))
    after = n - cut_size - before
    keys = ([3.0] * before if rng.random() < 0.5 else list(rng.integers(3, 6, size=before).astype(float)))
    keys = sorted(keys, reverse=True) + [2.0] * cut_size + list(rng.integers(0, 2, size=after).astype(float))
    grades = list(rng.choice(np.array(grade_set), size=n))
    pos = grade_set[1:]
    grades[before] = float(rng.choice(np.array(pos)))  # at least one relevant-ish item in the cut tie
    grades[before + 1] = 0.0  # and one non-relevant
    k = before + int(rng.integers(1, cut_size))  # before < k < before + cut_size
    perm = rng.permutation(n)  # shuffle columns so index tie-breaks vary
    return [grades[i] for i in perm], [keys[i] for i in perm], k


@pytest.mark.parametrize("template", CUT_TEMPLATES)
def test_seeded_k_cuts_a_tie(template):
    rng = np.random.default_rng(_stable_seed("cut" + template))
    for _ in range(40):
        n = int(rng.integers(3, 8))
        gset = GRADE_SETS[int(rng.integers(4))]
        g, key, k = gen_cut_tie_row(rng, n, gset)
        # one k per call, so rows share it: build rows with the same n and k
        rows = [(g, key)]
        while len(rows) < 3:
            g2, key2, k2 = gen_cut_tie_row(rng, n, gset)
            if k2 == k:
                rows.append((g2, key2))
        rel = np.array([r[0] for r in rows], dtype=float)
        keys = np.array([r[1] for r in rows], dtype=float)
        oracle.check_library(tierank, rel, fill(template, k), **call_kwargs(rng, keys))


# ------------------------------------------------- longer lists (n = 8..16) with big, sparse ties
# Exercises the library's recurrences over bigger ties (hypergeometric terms, ERR's split of zero grades)
# while the number of distinct orderings stays small: few positive grades, keys from tiny ranges.

LONG_TEMPLATES = ["AP(denom='retrieved')@{k}", "AP@{k}", "AP(denom='min_k_R')@{k}", "AP", "WAP@{k}",
                  "WAP(denom='R')@{k}", "ERR@{k}", "ERR", "RR@{k}", "Success@{k}", "nDCG@{k}",
                  "DCG(gain='exp2', discount='jk')@{k}", "P@{k}", "F1(clip=True)@{k}", "ACG@{k}", "Rprec"]


def gen_long_row(rng: np.random.Generator, n: int, cap: int = 1500):
    while True:
        grades = np.zeros(n)
        pos = rng.choice(n, size=int(rng.integers(0, 6)), replace=False)
        grades[pos] = rng.choice(np.array([1.0, 2.0, 0.5, 3.0]), size=len(pos))
        if rng.random() < 0.3:
            keys = np.zeros(n)
        else:
            keys = rng.integers(0, int(rng.integers(1, 6)) + 1, size=n).astype(float)
        if oracle.count_orderings(list(grades), list(keys)) <= cap:
            return grades, keys


@pytest.mark.parametrize("template", LONG_TEMPLATES)
def test_seeded_longer_lists(template):
    rng = np.random.default_rng(_stable_seed("long" + template))
    for _ in range(8):
        n = int(rng.integers(8, 17))
        k = int(rng.integers(1, n + 3))
        rows = [gen_long_row(rng, n) for _ in range(4)]
        rel = np.array([r[0] for r in rows])
        keys = np.array([r[1] for r in rows])
        oracle.check_library(tierank, rel, fill(template, k), **call_kwargs(rng, keys))
