"""The public API at its edges: evaluate_matrix's signature, relevance callables of evaluate_codes,
trec_eval_version (float32 scores of trec_eval 9.x), no_relevant on every entry point, and the key
transformations of the fast paths (exact or not taken).

Expected values come from hand computations written out below, the brute-force oracle (tests/oracle.py,
fed with keys ranked by exact Python comparison), ``struct``'s C float conversion, and pytrec_eval.
"""

from __future__ import annotations

import math
import struct
import warnings

import numpy as np
import pytest
import pytrec_eval
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import oracle
import tierank
from tierank import InputError
from tierank.engine.blocked import evaluate_matrix_blocked
from tierank.engine.options import Options
from tierank.measures import parse_measures

HYP = settings(deadline=None, derandomize=True, database=None, max_examples=120,
               suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])
TOL = 1e-9


def _quiet(fn, *args, **kwargs):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", tierank.TierankWarning)
        return fn(*args, **kwargs)


# ------------------------------------------------------------------ 1. evaluate_matrix's signature

def test_matrix_measures_third_positional():
    # rel [1, 0, 1], scores [3, 2, 1]: relevant at ranks 1 and 3 -> AP = (1/1 + 2/3) / 2 = 5/6
    res = tierank.evaluate_matrix([[1, 0, 1]], [[3.0, 2.0, 1.0]], ["AP", "P@1"])
    assert res.mean["AP"] == pytest.approx(5 / 6, abs=1e-15)
    assert res.mean["P@1"] == 1.0
    # distances are keyword-only: the same ranking given as distances
    res = tierank.evaluate_matrix([[1, 0, 1]], measures=["AP"], distances=[[0, 1, 2]])
    assert res.mean["AP"] == pytest.approx(5 / 6, abs=1e-15)
    with pytest.raises(TypeError):
        tierank.evaluate_matrix([[1, 0, 1]], None, [[0, 1, 2]], ["AP"])   # the old 4-positional order


@pytest.mark.parametrize("bad", [[[0.1, 0.2, 0.3]], np.array([[0, 1, 2]]), [0.5, 0.1, 0.2],
                                 np.array([1.0, 2.0, 3.0], dtype=np.float32), [1, 2, 3], 3.0])
def test_matrix_numbers_as_measures_show_the_right_call(bad):
    with pytest.raises(InputError, match=r"evaluate_matrix\(relevance, distances=D, measures=\[\.\.\.\]\)"):
        tierank.evaluate_matrix([[1, 0, 1]], [[3.0, 2.0, 1.0]], bad)
    with pytest.raises(InputError, match="distances=D"):
        tierank.evaluate_matrix([[1, 0, 1]], None, bad)


@HYP
@given(st.lists(st.one_of(st.floats(allow_nan=False), st.integers(-5, 5)), min_size=1, max_size=6),
       st.sampled_from(["list", "array", "nested"]))
def test_property_any_numbers_as_measures_is_input_error(values, kind):
    arg = {"list": values, "array": np.array(values, dtype=float), "nested": [values]}[kind]
    with pytest.raises(InputError, match="distances=D"):
        tierank.evaluate_matrix([[1, 0]], [[1.0, 0.0]], arg)


# ------------------------------------------------------------------ 2. relevance callables

def _codes_case(seed=3, n_q=7, n_db=40, bits=10):
    rng = np.random.default_rng(seed)
    q = rng.integers(0, 2, (n_q, bits))
    db = rng.integers(0, 2, (n_db, bits))
    yq, yd = rng.integers(0, 4, n_q), rng.integers(0, 4, n_db)
    return q, db, yq, yd


@pytest.mark.parametrize("ties", ["expected", "input", "trec_eval"])
@pytest.mark.parametrize("block_size", [None, 1, 3])
def test_vectorised_callable_equals_matrix(ties, block_size):
    q, db, yq, yd = _codes_case()
    grades = (np.abs(yq[:, None] - yd[None, :]) <= 1).astype(float) + (yq[:, None] == yd[None, :])
    shapes = []

    def rel(qi, di):
        shapes.append((qi.shape, di.shape, qi.dtype.kind, di.dtype.kind))
        return (np.abs(yq[qi] - yd[di]) <= 1).astype(float) + (yq[qi] == yd[di])

    ms = ["AP", "nDCG@5", "P@3", "ERR"]
    a = tierank.evaluate_codes(q, db, relevance=grades, measures=ms, ties=ties, bounds=True, block_size=block_size)
    b = tierank.evaluate_codes(q, db, relevance=rel, measures=ms, ties=ties, bounds=True, block_size=block_size)
    for frame in ("per_query", "lower", "upper"):
        np.testing.assert_allclose(getattr(b, frame).to_numpy(), getattr(a, frame).to_numpy(), rtol=0, atol=1e-12)
    n_db = len(db)
    assert all(s[0][1] == 1 and s[1] == (1, n_db) and s[2] == "i" and s[3] == "i" for s in shapes)
    assert sum(s[0][0] for s in shapes) == len(q)   # every query once, in blocks of (B, 1)


@pytest.mark.parametrize("fn, what", [
    (lambda yq, yd: (lambda i, j: 1.0 if yq[i] == yd[j] else 0.0), "raised ValueError"),   # per pair
    (lambda yq, yd: (lambda i, j: float(yq[i] == yd[j])), "raised TypeError"),
    (lambda yq, yd: (lambda i, j: yq[i.ravel()] == yd[j.ravel()]), "raised ValueError"),   # 1-D thinking
    (lambda yq, yd: (lambda i, j: 1), r"returned shape \(\)"),
    (lambda yq, yd: (lambda i, j: (yq[i] == yd[j])[:, :3]), r"returned shape \(\d+, 3\)"),
    (lambda yq, yd: (lambda i, j: np.full(np.broadcast_shapes(i.shape, j.shape), "x")), "returned dtype"),
    (lambda yq, yd: (lambda i, j: (yq[i] == yd[j]) * 1j), "returned dtype complex"),
])
def test_per_pair_or_wrong_callable_states_the_contract(fn, what):
    q, db, yq, yd = _codes_case()
    with pytest.raises(InputError, match=what) as info:
        tierank.evaluate_codes(q, db, relevance=fn(yq, yd), measures=["AP"])
    msg = str(info.value)
    assert "query_index of shape (B, 1)" in msg and "db_index of shape (1, n_db)" in msg and "(B, n_db)" in msg


@HYP
@given(st.integers(1, 6), st.integers(1, 12), st.integers(1, 4), st.integers(0, 2 ** 32 - 1))
def test_property_vectorised_callable_equals_matrix(n_q, n_db, block_size, seed):
    rng = np.random.default_rng(seed)
    q, db = rng.integers(0, 2, (n_q, 6)), rng.integers(0, 2, (n_db, 6))
    g = rng.integers(0, 3, (n_q, n_db)).astype(float)
    a = tierank.evaluate_codes(q, db, relevance=g, measures=["AP", "P@2", "nDCG"], block_size=block_size)
    b = tierank.evaluate_codes(q, db, relevance=lambda i, j: g[i, j], measures=["AP", "P@2", "nDCG"],
                               block_size=block_size)
    assert a == b


# ------------------------------------------------------------------ 4. trec_eval_version

A, B = 0.3, 0.30000000000000004      # different doubles, one float32
assert A != B and np.float32(A) == np.float32(B)


@pytest.mark.parametrize("bad", [8, 11, "9", 9.0, True, None])
def test_trec_eval_version_values(bad):
    q, db, yq, yd = _codes_case()
    calls = [lambda: tierank.evaluate({"q": {"a": 1}}, {"q": {"a": 1.0}}, ["AP"], trec_eval_version=bad),
             lambda: tierank.evaluate_matrix([[1, 0]], [[1.0, 0.0]], ["AP"], trec_eval_version=bad),
             lambda: tierank.evaluate_codes(q, db, yq, yd, ["AP"], trec_eval_version=bad)]
    for call in calls:
        with pytest.raises(InputError, match="trec_eval_version"):
            call()


@pytest.mark.parametrize("ties", ["expected", "optimistic", "pessimistic", "input", "trec_eval", "random"])
def test_float32_equal_scores_tie_in_9_not_10_evaluate(ties):
    # the relevant d1 scores A < B: 10 ranks d2 first (RR 1/2); 9 ties them (RR by the tie mode)
    qrels, run = {"q": {"d1": 1}}, {"q": {"d1": A, "d2": B, "d3": 0.1}}
    v10 = tierank.evaluate(qrels, run, ["RR"], ties=ties, bounds=True)
    v9 = tierank.evaluate(qrels, run, ["RR"], ties=ties, bounds=True, trec_eval_version=9)
    assert v10.mean["RR"] == 0.5 and v10.lower.loc["q", "RR"] == v10.upper.loc["q", "RR"] == 0.5
    assert v9.lower.loc["q", "RR"] == 0.5 and v9.upper.loc["q", "RR"] == 1.0   # a tie of d1 and d2
    want = {"expected": 0.75, "optimistic": 1.0, "pessimistic": 0.5, "trec_eval": 0.5}  # "d2" > "d1"
    if ties in want:
        assert v9.mean["RR"] == want[ties]


@pytest.mark.parametrize("ties", ["expected", "input", "trec_eval"])
@pytest.mark.parametrize("dtype", [np.float64, np.longdouble])
def test_float32_equal_scores_tie_in_9_not_10_matrix(ties, dtype):
    rel = [[1, 0, 0]]
    s = np.array([[A, B, 0.1]], dtype=dtype)
    assert tierank.evaluate_matrix(rel, s, ["RR"], ties=ties).mean["RR"] == 0.5
    want = {"expected": 0.75, "input": 1.0, "trec_eval": 0.5}[ties]   # input: column 0 first
    assert tierank.evaluate_matrix(rel, s, ["RR"], ties=ties, trec_eval_version=9).mean["RR"] == want
    # distances: -A, -B
    d = -s
    assert tierank.evaluate_matrix(rel, distances=d, measures=["RR"], ties=ties).mean["RR"] == 0.5
    assert tierank.evaluate_matrix(rel, distances=d, measures=["RR"], ties=ties,
                                   trec_eval_version=9).mean["RR"] == want


@pytest.mark.parametrize("ties", ["expected", "input"])
def test_float32_rounds_big_integers_not_small_ones(ties):
    # 2**24 + 1 is not a float32 (it rounds to 2**24): ties with 2**24 in 9; 2**24 - 1 vs 2**24 stay apart
    rel = [[1, 0]]
    big = np.array([[2 ** 24, 2 ** 24 + 1]], dtype=np.int64)
    small = np.array([[2 ** 24 - 1, 2 ** 24]], dtype=np.int64)
    assert tierank.evaluate_matrix(rel, big, ["RR"], ties=ties).mean["RR"] == 0.5
    assert tierank.evaluate_matrix(rel, big, ["RR"], ties=ties, trec_eval_version=9).mean["RR"] == \
        {"expected": 0.75, "input": 1.0}[ties]
    assert tierank.evaluate_matrix(rel, small, ["RR"], ties=ties, trec_eval_version=9).mean["RR"] == 0.5
    # Hamming-like small distances: unchanged (and the histogram path still applies)
    dist = np.array([[1, 0]], dtype=np.uint8)
    assert tierank.evaluate_matrix(rel, distances=dist, measures=["RR"], trec_eval_version=9).mean["RR"] == 0.5


def test_float32_overflow_is_inf_without_warning():
    # 1e300 and 2e300 both become +inf in float32: a tie in 9, not in 10 (RuntimeWarnings are errors here)
    rel = [[1, 0, 0]]
    s = [[1e300, 2e300, 1.0]]
    assert tierank.evaluate_matrix(rel, s, ["RR"]).mean["RR"] == 0.5
    assert tierank.evaluate_matrix(rel, s, ["RR"], trec_eval_version=9).mean["RR"] == 0.75
    run = {"q": {"a": 1e300, "b": 2e300, "c": 1.0}}
    assert tierank.evaluate({"q": {"a": 1}}, run, ["RR"]).mean["RR"] == 0.5
    assert tierank.evaluate({"q": {"a": 1}}, run, ["RR"], trec_eval_version=9).mean["RR"] == 0.75


def test_codes_versions_agree():
    q, db, yq, yd = _codes_case()
    for ties in ("expected", "input"):
        a = tierank.evaluate_codes(q, db, yq, yd, ["AP", "P@3"], ties=ties, bounds=True)
        b = tierank.evaluate_codes(q, db, yq, yd, ["AP", "P@3"], ties=ties, bounds=True, trec_eval_version=9)
        assert a == b


def _c_float(x: float) -> float:
    """x stored in a C float (struct's conversion), +-inf beyond the float32 range."""
    try:
        return struct.unpack("f", struct.pack("f", x))[0]
    except OverflowError:
        return math.copysign(math.inf, x)


@HYP
@given(st.lists(st.tuples(st.integers(0, 3), st.integers(0, 5), st.integers(-3, 3)), min_size=1, max_size=7),
       st.sampled_from(["AP", "nDCG", "RR", "P@2", "ERR", "nDCG@3"]),
       st.sampled_from(["expected", "trec_eval", "input"]))
def test_property_float32_keys_match_oracle(items, measure, mode):
    """Scores near each other (a few ulps apart around a few bases): trec_eval_version=9 equals the oracle on
    the C-float scores, 10 the oracle on the doubles."""
    bases = [0.1, 1.0, 1e-30, 3e38]
    grades = [g for g, _, _ in items]
    scores = []
    for _, b, ulps in items:
        x = bases[b % len(bases)] * (1 if b < 4 else -1)
        for _ in range(abs(ulps)):
            x = math.nextafter(x, math.inf if ulps > 0 else -math.inf)
        scores.append(x)
    for version, keys in ((10, scores), (9, [_c_float(x) for x in scores])):
        res = tierank.evaluate_matrix([grades], [scores], [measure], ties=mode, bounds=True,
                                      trec_eval_version=version)
        if mode == "expected":
            want, lo, hi = oracle.tie_aware(measure, grades, keys)
            assert res.lower.iloc[0, 0] == pytest.approx(lo, abs=TOL)
            assert res.upper.iloc[0, 0] == pytest.approx(hi, abs=TOL)
        else:
            want = oracle.fixed_value(measure, grades, keys, mode)
        assert res.per_query.iloc[0, 0] == pytest.approx(want, abs=TOL), (version, scores)


def test_trec_eval_9_matches_pytrec_eval_on_near_equal_scores():
    """pytrec_eval embeds trec_eval 9.x: run scores stored as C floats. Near-equal scores (1 ulp to 1e-7
    apart, some equal in float32, some not) with ties='trec_eval' and trec_eval_version=9 give its values."""
    rng = np.random.default_rng(8)
    qrels, run = {}, {}
    for qi in range(30):
        q = f"q{qi:02d}"
        docs = [f"d{j:02d}" for j in range(int(rng.integers(3, 16)))]
        base = rng.choice([0.3, 1.7, 12.5, 1e-3], size=len(docs))
        nudge = rng.choice([0.0, 1.0, -1.0, 2.0], size=len(docs)) * rng.choice([np.finfo(float).eps, 1e-9, 1e-7],
                                                                                 size=len(docs))
        scores = base * (1 + nudge)
        run[q] = {d: float(s) for d, s in zip(docs, scores)}
        qrels[q] = {d: int(g) for d, g in zip(docs, rng.choice([0, 0, 1, 2], size=len(docs)))}
        qrels[q]["unretrieved"] = 1
    expected = pytrec_eval.RelevanceEvaluator(qrels, {"map", "recip_rank", "P.5", "ndcg_cut.10"}).evaluate(run)
    names = {"map": "AP", "recip_rank": "RR", "P_5": "P@5", "ndcg_cut_10": "nDCG@10"}
    res9 = tierank.evaluate(qrels, run, list(names.values()), ties="trec_eval", trec_eval_version=9)
    res10 = tierank.evaluate(qrels, run, list(names.values()), ties="trec_eval")
    differs = 0
    for q in qrels:
        for trec, ours in names.items():
            assert res9.per_query.loc[q, ours] == pytest.approx(expected[q][trec], abs=1e-12), (q, trec)
            differs += abs(res10.per_query.loc[q, ours] - expected[q][trec]) > 1e-12
    assert differs > 0   # the case does exercise the difference between 9 and 10


# ------------------------------------------------------------------ 5. no_relevant

# qrels: q1 a=1 b=0 (relevant: a); q2 a=0 (no relevant document); q3 c=2 (not in the run: scored empty);
# q4 x=0 (not in the run, no relevant document). run: q1 a > b; q2 b > a.
QRELS = {"q1": {"a": 1, "b": 0}, "q2": {"a": 0}, "q3": {"c": 2}, "q4": {"x": 0}}
RUN = {"q1": {"a": 2.0, "b": 1.0}, "q2": {"a": 1.0, "b": 2.0}}


def test_no_relevant_evaluate_by_hand():
    ms = ["AP", "P@2", "P(rel=2)@2", "NumRel"]
    # per query (zero): AP q1 = 1 (a at rank 1), q2 0, q3 0 (empty run), q4 0
    #                   P@2 q1 = 1/2, others 0; P(rel=2)@2: q3 is the only query with grade >= 2, value 0
    zero = _quiet(tierank.evaluate, QRELS, RUN, ms, missing="zero")
    assert zero.per_query["AP"].tolist() == [1.0, 0.0, 0.0, 0.0]
    assert zero.mean == {"AP": 1 / 4, "P@2": 0.5 / 4, "P(rel=2)@2": 0.0, "NumRel": 2.0}
    skip = _quiet(tierank.evaluate, QRELS, RUN, ms, missing="zero", no_relevant="skip")
    # AP: q2, q4 left out -> (1 + 0) / 2; P(rel=2)@2: only q3 has a grade >= 2 -> 0 / 1
    assert np.isnan(skip.per_query.loc["q2", "AP"]) and np.isnan(skip.per_query.loc["q4", "AP"])
    assert np.isnan(skip.per_query.loc["q1", "P(rel=2)@2"]) and skip.per_query.loc["q3", "P(rel=2)@2"] == 0
    assert skip.mean == {"AP": 0.5, "P@2": 0.25, "P(rel=2)@2": 0.0, "NumRel": 2.0}
    one = _quiet(tierank.evaluate, QRELS, RUN, ms, missing="zero", no_relevant="one")
    # q2 and q4 score 1 on AP and P@2; P(rel=2)@2: q1, q2, q4 score 1, q3 0 -> 3/4; NumRel is a count: unchanged
    assert one.per_query["AP"].tolist() == [1.0, 1.0, 0.0, 1.0]
    assert one.mean == {"AP": 3 / 4, "P@2": (0.5 + 1 + 0 + 1) / 4, "P(rel=2)@2": 3 / 4, "NumRel": 2.0}
    with pytest.raises(InputError, match="'q2'.*no_relevant='error'"):
        _quiet(tierank.evaluate, QRELS, RUN, ["AP"], missing="zero", no_relevant="error")
    # the empty-run path raises too: only q4 (not in the run) lacks a relevant document
    with pytest.raises(InputError, match="'q4'"):
        _quiet(tierank.evaluate, {"q1": QRELS["q1"], "q4": QRELS["q4"]}, RUN, ["AP"], missing="zero",
               no_relevant="error")
    with pytest.raises(InputError, match="no_relevant"):
        tierank.evaluate(QRELS, RUN, ["AP"], no_relevant="nan")


@pytest.mark.parametrize("scores", [np.array([[3, 2, 1], [1, 2, 3]]),                 # integer: counting path
                                    np.array([[3.0, 2.0, 1.0], [1.0, 2.0, 3.0]])])   # float: sorting path
@pytest.mark.parametrize("ties", ["expected", "input"])
def test_no_relevant_matrix_by_hand(scores, ties):
    rel = np.array([[1, 0, 1], [0, 0, 0]])
    # row 0: relevant at ranks 1 and 3 -> AP = (1 + 2/3) / 2 = 5/6, P@2 = 1/2; row 1: no relevant item
    cases = {"zero": ([5 / 6, 0.0], (5 / 6) / 2), "skip": ([5 / 6, np.nan], 5 / 6), "one": ([5 / 6, 1.0], (5 / 6 + 1) / 2)}
    for policy, (per_row, mean) in cases.items():
        res = tierank.evaluate_matrix(rel, scores, ["AP", "P@2"], ties=ties, no_relevant=policy, bounds=True)
        np.testing.assert_allclose(res.per_query["AP"].to_numpy(), per_row, rtol=0, atol=1e-15)
        np.testing.assert_allclose(res.lower["AP"].to_numpy(), per_row, rtol=0, atol=1e-15)
        assert res.mean["AP"] == pytest.approx(mean, abs=1e-15)
    with pytest.raises(InputError, match="row 1"):
        tierank.evaluate_matrix(rel, scores, ["AP"], ties=ties, no_relevant="error")


@pytest.mark.parametrize("ties", ["expected", "input"])   # histogram path / sorting path
def test_no_relevant_codes_by_hand(ties):
    q = [[0, 0], [1, 1]]
    db = [[0, 0], [0, 1], [1, 1]]
    # query 0 (class 0): distances 0, 1, 2; relevant db 0 and 2 -> ranks 1 and 3 -> AP = 5/6
    # query 1 (class 5): no database item of its class
    for policy, (per_q, mean) in {"zero": ([5 / 6, 0.0], 5 / 12), "skip": ([5 / 6, np.nan], 5 / 6),
                                  "one": ([5 / 6, 1.0], 11 / 12)}.items():
        res = tierank.evaluate_codes(q, db, [0, 5], [0, 1, 0], ["AP"], ties=ties, no_relevant=policy)
        np.testing.assert_allclose(res.per_query["AP"].to_numpy(), per_q, rtol=0, atol=1e-15)
        assert res.mean["AP"] == pytest.approx(mean, abs=1e-15)
    with pytest.raises(InputError, match="query 1"):
        tierank.evaluate_codes(q, db, [0, 5], [0, 1, 0], ["AP"], ties=ties, no_relevant="error")
    with pytest.raises(InputError, match="no_relevant"):
        tierank.evaluate_codes(q, db, [0, 5], [0, 1, 0], ["AP"], no_relevant=None)


@HYP
@given(st.lists(st.lists(st.integers(0, 2), min_size=3, max_size=3), min_size=1, max_size=5),
       st.sampled_from(["skip", "one"]))
def test_property_no_relevant_only_touches_rows_without_relevant(rows, policy):
    rel = np.array(rows)
    scores = np.tile([3.0, 2.0, 1.0], (len(rows), 1))
    base = tierank.evaluate_matrix(rel, scores, ["AP", "nDCG"]).per_query
    got = tierank.evaluate_matrix(rel, scores, ["AP", "nDCG"], no_relevant=policy).per_query
    none = ~(rel > 0).any(axis=1)
    for col in ("AP", "nDCG"):
        np.testing.assert_array_equal(got[col].to_numpy()[~none], base[col].to_numpy()[~none])
        assert np.all(np.isnan(got[col].to_numpy()[none])) if policy == "skip" else \
            np.all(got[col].to_numpy()[none] == 1.0)


# ------------------------------------------------------------------ 6. key transformations are exact

def _exact_ranks(values) -> list[int]:
    """Keys replaced by their rank among the distinct values, by exact Python comparison (int vs float
    compare exactly; 0.0 == -0.0; inf == inf)."""
    py = [v.item() if isinstance(v, np.generic) else v for v in values]
    distinct = sorted(set(py))
    return [distinct.index(v) for v in py]


_FLOAT_POOL = [1.0, math.nextafter(1.0, 2), math.nextafter(1.0, 0), 1e300, -1e300, math.nextafter(1e300, 0),
               0.0, -0.0, math.inf, -math.inf, 5e-324, -5e-324, 2.0 ** 60, 2.0 ** 60 + 2 ** 8]
_INT_POOL = [0, 1, -1, 2 ** 53, 2 ** 53 + 1, 2 ** 60, 2 ** 60 + 1, 2 ** 63 - 1, 2 ** 63 - 2, -(2 ** 63) + 1,
             -(2 ** 62), 7, 8]


@st.composite
def _keyed_rows(draw):
    kind = draw(st.sampled_from(["float64", "int64", "uint64", "smallint", "float32"]))
    n_rows = draw(st.integers(1, 3))
    n_cols = draw(st.integers(1, 6))
    if kind == "float64":
        pool = _FLOAT_POOL
    elif kind == "int64":
        pool = _INT_POOL
    elif kind == "uint64":
        pool = [0, 1, 2 ** 62, 2 ** 62 + 1, 2 ** 63 - 1, 5]
    elif kind == "smallint":
        pool = list(range(-3, 4))
    else:
        pool = [1.0, float(np.nextafter(np.float32(1), np.float32(2))), 3e38, -3e38, math.inf, -0.0, 0.0]
    keys = [[draw(st.sampled_from(pool)) for _ in range(n_cols)] for _ in range(n_rows)]
    grades = [[draw(st.integers(0, 2)) for _ in range(n_cols)] for _ in range(n_rows)]
    dtype = {"float64": np.float64, "int64": np.int64, "uint64": np.uint64, "smallint": np.int8,
             "float32": np.float32}[kind]
    return np.array(keys, dtype=dtype), np.array(grades, dtype=np.int64)


@HYP
@given(_keyed_rows(), st.sampled_from([("AP", "nDCG", "RR"), ("P@2", "nDCG@2"), ("ERR", "P@1")]),
       st.sampled_from(["expected", "trec_eval", "input"]), st.booleans(), st.booleans())
def test_property_key_transforms_are_exact(case, measures, mode, as_distances, topk):
    """Near-equal floats (1 ulp), huge magnitudes (1e300, 2**60, int64 extremes), -0.0, +-inf, int8 / uint64
    / float32: every path (counting, top-k, full sort; scores and distances) equals the oracle on keys
    ranked by exact comparison, so no two keys merged and no equal keys split."""
    keys, grades = case
    if as_distances and keys.dtype == np.uint64:
        keys = keys.astype(np.int64)
    parsed = parse_measures(list(measures))
    topk_ok = all(m.cutoff is not None for m in parsed.values())
    kw = {"distances" if as_distances else "scores": keys}
    res = _quiet(tierank.evaluate_matrix, grades, measures=list(measures), ties=mode, bounds=True, **kw)
    blocked = _quiet(evaluate_matrix_blocked, grades, keys, Options.checked(parsed, ties=mode, bounds=True),
                     keyname="k", lower_is_better=as_distances, block_size=1,
                     topk=(topk and topk_ok) if topk_ok else False)
    assert res == blocked
    for r in range(keys.shape[0]):
        ranks = _exact_ranks(list(keys[r]))
        okeys = [-x for x in ranks] if as_distances else ranks
        for text in measures:
            if mode == "expected":
                want, lo, hi = oracle.tie_aware(text, grades[r].tolist(), okeys)
                assert res.lower.loc[r, text] == pytest.approx(lo, abs=TOL)
                assert res.upper.loc[r, text] == pytest.approx(hi, abs=TOL)
            else:
                want = oracle.fixed_value(text, grades[r].tolist(), okeys, mode)
            assert res.per_query.loc[r, text] == pytest.approx(want, abs=TOL), (keys[r], text)


def test_longdouble_keys_float64_cannot_hold_are_an_error():
    s = np.array([[1.0, 1.0, 0.5]], dtype=np.longdouble)
    if np.finfo(np.longdouble).nmant <= np.finfo(np.float64).nmant:
        pytest.skip("long double is float64 on this platform")
    s[0, 1] += np.longdouble(2.0) ** -60          # distinct from s[0, 0] in long double only
    with pytest.raises(InputError, match=r"scores: the value at row 0, column 1 is .*, which float64 cannot hold "
                                         r"exactly"):
        tierank.evaluate_matrix([[1, 0, 0]], s, ["AP"])
    # exact long doubles are fine: the same values as float64
    ok = np.array([[1.0, 2.0, 0.5]], dtype=np.longdouble)
    assert tierank.evaluate_matrix([[1, 0, 0]], ok, ["AP"]) == tierank.evaluate_matrix([[1, 0, 0]], ok.astype(float), ["AP"])


@pytest.mark.parametrize("g", [2 ** 63 + 2 ** 11, 2 ** 62])
def test_huge_integer_grades_counting_path_not_taken(g):
    # regression: uint64 / int64 grades beyond 2**53 made the counting path overflow (OverflowError);
    # these are exact in float64 (those that are not are an error: test_huge_inexact_integer_grades_are_an_error)
    dtype = np.uint64 if g > 2 ** 63 - 1 else np.int64
    grades = np.full((1, 4), g, dtype=dtype)
    d = np.array([[0, 1, 1, 2]])
    # every item relevant: P@2 = 1, NumRel = 4
    res = tierank.evaluate_matrix(grades, distances=d, measures=["P@2", "NumRel"])
    assert res.mean == {"P@2": 1.0, "NumRel": 4.0}


@pytest.mark.parametrize("g", [2 ** 63 + 5, 2 ** 62 + 1])
def test_huge_inexact_integer_grades_are_an_error(g):
    # 2**62 + 1 would be read as 2**62 (one rule for every input: tierank.data.numbers.exact_float64)
    dtype = np.uint64 if g > 2 ** 63 - 1 else np.int64
    grades = np.full((1, 4), g, dtype=dtype)
    with pytest.raises(InputError, match=rf"relevance: the value at row 0, column 0 is {g}, which float64 cannot"):
        tierank.evaluate_matrix(grades, distances=[[0, 1, 1, 2]], measures=["P@2", "NumRel"])


@pytest.mark.parametrize("value", [np.inf, -np.inf])
@pytest.mark.parametrize("ties", ["expected", "optimistic", "input", "trec_eval", "random"])
def test_all_infinite_keys_no_warning(value, ties):
    # RuntimeWarning is an error in this suite; one tie of 4 items, 2 relevant: P@2 expected = 1/2
    rel = [[1, 0, 1, 0]]
    for kw in ({"scores": [[value] * 4]}, {"distances": [[value] * 4]}):
        for ms in (["P@2", "AP"], ["P@2"]):
            res = tierank.evaluate_matrix(rel, measures=ms, ties=ties, bounds=True, **kw)
            assert res.lower.loc[0, "P@2"] == 0.0 and res.upper.loc[0, "P@2"] == 1.0
            if ties == "expected":
                assert res.mean["P@2"] == 0.5
    q, db = [[0, 0]], [[1, 1], [1, 1], [0, 0]]
    tierank.evaluate_codes(q, db, [0], [0, 1, 0], ["AP"], ties=ties, trec_eval_version=9)
    run = {"q": {"a": value, "b": value, "c": value}}
    res = tierank.evaluate({"q": {"a": 1}}, run, ["RR"], ties=ties, bounds=True, trec_eval_version=9)
    assert res.lower.loc["q", "RR"] == pytest.approx(1 / 3) and res.upper.loc["q", "RR"] == 1.0
