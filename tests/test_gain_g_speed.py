"""G's exact expectation on ties of several distinct non-zero gains (and gain-0 documents), against the
brute-force oracle (tests/oracle.py: every ordering of the tied items, trec_eval's m_G.c loop per ordering),
its independence of the other queries evaluated with it (bit for bit), and the classes of ties and segments
alike that are summed once."""

from __future__ import annotations

import os
import sys

import numpy as np
import pytest

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import oracle  # noqa: E402

import tierank  # noqa: E402

MEASURES = ["G", "G(gains={1: 3, 2: 0.5})", "G(gain='exp2')", "G(gains={0: 1, 3: 0.25})"]


def _rows(seed: int) -> tuple[np.ndarray, np.ndarray]:
    """Rows of 9 items in at most 3 ties, grades 0 (often) to 3 and 0.5: ties of up to 9 items with
    several distinct non-zero gains, some starting after the ideal ranks of positive gain."""
    rng = np.random.default_rng(seed)
    grades = rng.choice([0.0, 0.0, 0.0, 0.5, 1.0, 2.0, 3.0], size=(4, 9))
    keys = rng.integers(0, rng.integers(1, 4), size=(4, 9)).astype(np.float64)
    grades[0, :3], keys[0, :3] = 0.0, 9.0      # a tie after three documents of gain 0
    return grades, keys


@pytest.mark.parametrize("measure", MEASURES)
@pytest.mark.parametrize("seed", range(6))
def test_expectation_matches_every_ordering(measure, seed):
    grades, keys = _rows(seed)
    got = tierank.evaluate_matrix(grades, keys, [measure]).per_query[measure].to_numpy()
    want = [oracle.tie_aware(measure, list(grades[r]), list(keys[r]))[0] for r in range(len(grades))]
    np.testing.assert_allclose(got, want, rtol=1e-12, atol=1e-12)


@pytest.mark.parametrize("measure", MEASURES[:2])
def test_a_query_does_not_depend_on_the_others(measure):
    grades, keys = _rows(11)
    alone = tierank.evaluate_matrix(grades[1:2], keys[1:2], [measure]).per_query[measure].to_numpy()
    big_g = np.concatenate([_rows(12)[0], grades[1:2], _rows(13)[0]])
    big_k = np.concatenate([_rows(12)[1], keys[1:2], _rows(13)[1]])
    among = tierank.evaluate_matrix(big_g, big_k, [measure]).per_query[measure].to_numpy()[4]
    assert among == alone[0]


@pytest.mark.parametrize("measure", MEASURES[:3])
def test_small_chunks_and_blocks(monkeypatch, measure):
    """Ties split into several blocks of segments, batches and chunks of terms: still the oracle's mean,
    and still the same bits whatever else is evaluated with the query."""
    from tierank.measures import gain_g

    monkeypatch.setattr(gain_g, "_SEGMENT_BLOCK", 3)
    monkeypatch.setattr(gain_g, "_SEGMENT_CHUNK", 40)
    monkeypatch.setattr(gain_g, "CHUNK", 16)
    grades, keys = _rows(21)
    got = tierank.evaluate_matrix(grades, keys, [measure]).per_query[measure].to_numpy()
    want = [oracle.tie_aware(measure, list(grades[r]), list(keys[r]))[0] for r in range(len(grades))]
    np.testing.assert_allclose(got, want, rtol=1e-12, atol=1e-12)
    for r in range(len(grades)):
        alone = tierank.evaluate_matrix(grades[r:r + 1], keys[r:r + 1], [measure]).per_query[measure].iloc[0]
        assert alone == got[r]


def test_alike_ties_and_segments_are_summed_once_with_the_same_bits():
    """Many queries holding the same ties at the same places (after the ideal ranks, so they read the same
    costs): the ties and segments alike are summed once, and every query keeps the bits it has alone."""
    grades, keys = _rows(31)
    rows = np.arange(len(grades)).repeat(5)
    big_g, big_k = grades[rows], keys[rows]
    for measure in MEASURES:
        got = tierank.evaluate_matrix(big_g, big_k, [measure]).per_query[measure].to_numpy()
        for r in range(len(grades)):
            alone = tierank.evaluate_matrix(grades[r:r + 1], keys[r:r + 1], [measure]).per_query[measure].iloc[0]
            assert (got[rows == r] == alone).all()


@pytest.mark.parametrize("seed", range(4))
def test_alike_classes(seed):
    """_alike puts two segments in one class exactly when both read the ramp of C and have the same kind and
    add (integer adds in a short range, integer adds spread wide, and other floats), and each class's
    representative is one of its members."""
    from tierank.measures import gain_g

    rng = np.random.default_rng(seed)
    n = 300
    kind = rng.integers(0, 7, n)
    far = rng.random(n) < 0.8
    add = [rng.integers(-3, 5, n).astype(float), rng.integers(0, 4, n) * 1e9,
           rng.integers(0, 4, n) * 0.5 + 0.25][seed % 3]
    rep, alike = gain_g._alike(kind, far, add)
    key = [(k, a) if f else ("alone", i) for i, (k, f, a) in enumerate(zip(kind.tolist(), far.tolist(), add.tolist()))]
    assert len(rep) == len(set(key)) == alike.max() + 1
    assert all(key[rep[alike[i]]] == key[i] for i in range(n))
    same = alike[:, None] == alike[None, :]
    assert (same == np.array([[a == b for b in key] for a in key])).all()
