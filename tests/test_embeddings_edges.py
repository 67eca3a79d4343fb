"""tierank.evaluate_embeddings: the tie audit, top-k windows, two stages, asymmetric precisions, exactness
cases built to fool a float64 GEMM, the edges and the errors. Expected values come from the brute force
over tie orderings (tests/oracle.py) on keys computed in the test (tests/test_embeddings.py)."""

from __future__ import annotations

import math
from fractions import Fraction

import numpy as np
import pytest
import scipy.sparse as sp
from hypothesis import given, settings
from hypothesis import strategies as st

import tierank
from oracle import analyse, enumerate_orderings
from test_embeddings import data, dense, float_keys, hamming_keys, int_keys, ranks


# -- measures with R from the whole judged set (items outside the window are judged, not retrieved) ---------

def ap(seq: list[float], n_rel: int) -> float:
    hits, total = 0, 0.0
    for i, g in enumerate(seq, 1):
        if g > 0:
            hits += 1
            total += hits / i
    return total / n_rel if n_rel else 0.0


def recall_at(seq: list[float], n_rel: int, k: int) -> float:
    return sum(1 for g in seq[:k] if g > 0) / n_rel if n_rel else 0.0


def rr(seq: list[float]) -> float:
    return next((1 / i for i, g in enumerate(seq, 1) if g > 0), 0.0)


def window_expected(grades, keys, kept, fn) -> float:
    """The mean of ``fn(grade sequence)`` over the tie orderings of the items ``kept``."""
    g = [grades[i] for i in kept]
    k = [keys[i] for i in kept]
    vals = [fn(list(seq)) for seq in enumerate_orderings(g, k)]
    return math.fsum(vals) / len(vals)


def top_window(keys, k: int) -> list[int]:
    """The items whose key is at least the k-th best (the tie at rank k whole)."""
    if k >= len(keys):
        return list(range(len(keys)))
    kth = sorted(keys, reverse=True)[k - 1]
    return [i for i, x in enumerate(keys) if x >= kth]


def brute_tie_mass(keys, k: int) -> int:
    if k >= len(keys):
        return 0
    kth = sorted(keys, reverse=True)[k - 1]
    return sum(1 for x in keys if x >= kth) - k


CASES = [("float16", "dot", "expected"), ("int8", "dot", "expected"), ("binary", "hamming", "expected"),
         ("int8", "cosine", "expected"), ("float32", "cosine", "input"), ("bfloat16", "dot", "upper")]


def case_keys(q, c, precision, similarity):
    from tierank.embeddings.quantize import quantization_ranges, quantize

    if precision in ("float32", "float16", "bfloat16"):
        return float_keys(q, c, precision, similarity)
    if precision == "binary":
        return hamming_keys(q, c)
    rq = quantize(q, "int8", quantization_ranges(c, None, "c"))   # the test passes calibration_embeddings=c
    rc = quantize(c, "int8", quantization_ranges(c, None, "c"))
    return int_keys(rq, rc, similarity)


@pytest.mark.parametrize("precision,similarity,ties", CASES)
@pytest.mark.parametrize("seed", range(3))
def test_tie_mass_and_top_k_window(precision, similarity, ties, seed):
    q, c, rel = data(seed, n_q=3, n_c=8, dim=5, levels=2)
    keys = case_keys(q, c, precision, similarity)
    grades = dense(rel, 3, 8)
    for k in (1, 3, 4, 8, 20):
        res = tierank.evaluate_embeddings(q, c, rel, ["AP", "R@3", "RR", "P@2"], similarity=similarity,
                                          precision=precision, k=k, calibration_embeddings=c)
        for r in range(3):
            kr = ranks(keys[r])
            kept = top_window(kr, k)
            n_rel = int((grades[r] > 0).sum())
            assert res.per_query["AP"].iloc[r] == pytest.approx(window_expected(grades[r], kr, kept,
                                                                                lambda s: ap(s, n_rel)), abs=1e-12)
            assert res.per_query["R@3"].iloc[r] == pytest.approx(
                window_expected(grades[r], kr, kept, lambda s: recall_at(s, n_rel, 3)), abs=1e-12)
            assert res.per_query["RR"].iloc[r] == pytest.approx(window_expected(grades[r], kr, kept, rr), abs=1e-12)
            for cut in (2, 3, k):
                assert res.audit.per_query[("tie_mass", f"@{cut}")].iloc[r] == brute_tie_mass(kr, cut), (k, cut, r)
        assert list(res.audit.tie_mass.index) == sorted({2, 3, k})
    # the audit's mass in the tie modes that rank (fixed orders) and those that count
    res = tierank.evaluate_embeddings(q, c, rel, ["P@3"], similarity=similarity, precision=precision, ties=ties,
                                      calibration_embeddings=c)
    assert res.audit.per_query[("tie_mass", "@3")].tolist() == [brute_tie_mass(ranks(keys[r]), 3) for r in range(3)]


@pytest.mark.parametrize("first", ["binary", "int8"])
@pytest.mark.parametrize("second", ["float32", "int8"])
def test_two_stage_rescoring(first, second):
    q, c, rel = data(5, n_q=3, n_c=9, dim=8, levels=2)
    keys1 = case_keys(q, c, first, "hamming" if first == "binary" else "dot")
    if second == "float32":
        keys2 = float_keys(q, c, "float32", "dot")
    else:   # float32 queries against the int8 corpus: exact dot rounded once to float32
        from tierank.embeddings.quantize import quantization_ranges, quantize

        ci = quantize(c, "int8", quantization_ranges(c, None, "c")).astype(np.float64)
        keys2 = float_keys(q, ci, "float32", "dot")
    grades = dense(rel, 3, 9)
    res = tierank.evaluate_embeddings(q, c, rel, ["AP", "RR"], similarity="hamming" if first == "binary" else "dot",
                                      precision=first, rescore=second, candidates=4, calibration_embeddings=c)
    for r in range(3):
        kept = top_window(ranks(keys1[r]), 4)
        k2 = ranks(keys2[r])
        n_rel = int((grades[r] > 0).sum())
        assert res.per_query["AP"].iloc[r] == pytest.approx(window_expected(grades[r], k2, kept,
                                                                            lambda s: ap(s, n_rel)), abs=1e-12)
        assert res.per_query["RR"].iloc[r] == pytest.approx(window_expected(grades[r], k2, kept, rr), abs=1e-12)


@pytest.mark.parametrize("corpus_precision", ["int8", "binary", "ubinary"])
@pytest.mark.parametrize("similarity", ["dot", "cosine"])
def test_float_queries_against_a_quantized_corpus(corpus_precision, similarity):
    from tierank.embeddings.quantize import quantization_ranges, quantize

    q, c, rel = data(7, n_q=3, n_c=8, dim=9, levels=2)
    if corpus_precision == "int8":
        values = quantize(c, "int8", quantization_ranges(c, None, "c")).astype(np.float64)
    else:
        values = (c > 0).astype(np.float64)                     # the bits as 0 / 1
    keys = float_keys(q, values, "float32", similarity)
    res = tierank.evaluate_embeddings(q, c, rel, ["AP", "nDCG@3"], similarity=similarity, precision=corpus_precision,
                                      query_precision="float32", bounds=True)
    grades = dense(rel, 3, 8)
    for r in range(3):
        for m in ("AP", "nDCG@3"):
            a = analyse(m, list(grades[r]), ranks(keys[r]))
            assert res.per_query[m].iloc[r] == pytest.approx(a.mean, abs=1e-12)
            assert (res.lower[m].iloc[r], res.upper[m].iloc[r]) == pytest.approx((a.lo, a.hi), abs=1e-12)


def test_reference_precision_in_the_audit():
    q, c, rel = data(11, n_q=4, n_c=10, dim=6, levels=3)
    res = tierank.evaluate_embeddings(q, c, rel, ["AP", "nDCG@3"], precision="binary", reference_precision="float32")
    ref = tierank.evaluate_embeddings(q, c, rel, ["AP", "nDCG@3"], precision="float32")
    assert res.audit.reference == ref
    summary = res.audit.summary
    for m in ("AP", "nDCG@3"):
        assert summary.loc[m, "reference"] == ref.mean[m]
        assert summary.loc[m, "delta"] == pytest.approx(res.mean[m] - ref.mean[m], abs=1e-15)
        delta = res.audit.per_query[("delta", m)]
        assert np.allclose(delta.to_numpy(), res.per_query[m].to_numpy() - ref.per_query[m].to_numpy())
        lo, hi = res.audit.per_query[("width", m)], summary.loc[m, "width"]
        assert hi == pytest.approx(lo.mean())
    assert 0 <= res.audit.tie_dependent <= 1


# -- exactness: scores a float64 GEMM, or a float32 GEMM, would round differently -------------------------

def test_float32_score_is_one_rounding_of_the_exact_sum():
    # q . c1 = 1 + 2**-24 + 2**-80: in float64 the sum is 1 + 2**-24, a float32 midpoint, which rounds to
    # even (1.0); the exact sum lies above the midpoint and rounds to 1 + 2**-23, the score of c2 exactly
    q = np.array([[1.0, 1.0, 1.0]], dtype=np.float32)
    c = np.array([[1.0, 2.0 ** -24, 2.0 ** -80], [1 + 2.0 ** -23, 0, 0], [1.0, 0, 0]], dtype=np.float32)
    assert float(np.float32(np.float64(q[0]) @ np.float64(c[0]))) == 1.0        # what a GEMM would give
    res = tierank.evaluate_embeddings(q, c, {0: {0: 1}}, ["RR"], similarity="dot", bounds=True)
    assert res.mean["RR"] == 0.75 and res.mean_upper["RR"] == 1.0              # c0 ties c2 at the top
    res = tierank.evaluate_embeddings(q, c, {0: {2: 1}}, ["RR"], similarity="dot")
    assert res.mean["RR"] == 1 / 3                                              # c2 alone in third place


def test_bfloat16_score_is_one_rounding_of_the_exact_sum():
    # bfloat16 has 8 significant bits: 1 + 2**-8 is a midpoint, 1 + 2**-7 the next value after 1
    q = np.array([[1.0, 1.0, 1.0]])
    c = np.array([[1.0, 2.0 ** -8, 2.0 ** -70], [1 + 2.0 ** -7, 0, 0], [1.0, 0, 0]])
    res = tierank.evaluate_embeddings(q, c, {0: {0: 1}}, ["RR"], similarity="dot", precision="bfloat16")
    assert res.mean["RR"] == 0.75


def test_uint8_dot_beyond_float32_exact_integers():
    # dim 384 of uint8: dot products reach 384 * 255**2 > 2**24, where float32 has a spacing of 2 and
    # would tie c0 (24904828) with c1 (24904827, a midpoint rounded to even: 24904828)
    q = np.full((1, 384), 255, dtype=np.uint8)
    q[0, -1] = 1
    c = np.full((2, 384), 255, dtype=np.uint8)
    c[0, -1], c[1, -1] = 253, 252
    assert (q.astype(int) @ c.T.astype(int)).tolist() == [[24904828, 24904827]]
    assert np.float32(24904828) == np.float32(24904827)
    res = tierank.evaluate_embeddings(q, c, {0: {1: 1}}, ["RR"], similarity="dot", precision="uint8")
    assert res.mean["RR"] == 0.5


def test_integer_cosine_compared_exactly():
    # c0 = 2 * c1 (the same cosine exactly); c2 differs from them by less than float64 can tell
    v = np.array([120, 17, -3, 99], dtype=np.int64)
    c = np.stack([2 * v // 2 * 1, v // 1, v]).astype(np.int8)
    c[0] = v // 1
    base = np.array([[100, 1, 0, 0], [50, 0, 0, 0], [100, 1, 0, 1]], dtype=np.int8)   # c1 = c0 / 2 in direction
    q = np.array([[100, 1, 0, 0]], dtype=np.int8)
    res = tierank.evaluate_embeddings(q, base, {0: {1: 1}}, ["RR"], precision="int8", bounds=True)
    exact = [Fraction(int(q[0] @ x.astype(int)) ** 2, int(x.astype(int) @ x.astype(int))) for x in base]
    assert exact[0] > exact[1]   # [100, 1] is closer to itself than [50, 0]
    want = analyse("RR", [0, 1, 0], ranks(exact))
    assert res.mean["RR"] == pytest.approx(want.mean)
    # multiples tie exactly: [2, 4] and [1, 2] have one direction
    q = np.array([[3, 1]], dtype=np.int8)
    c = np.array([[2, 4], [1, 2], [3, 1]], dtype=np.int8)
    res = tierank.evaluate_embeddings(q, c, {0: {0: 1}}, ["RR"], precision="int8", bounds=True)
    assert (res.mean["RR"], res.mean_lower["RR"], res.mean_upper["RR"]) == (0.41666666666666663, 1 / 3, 0.5)


# -- edges --------------------------------------------------------------------------------------------------

@pytest.mark.parametrize("precision", ["float32", "int8", "binary"])
def test_all_tied(precision):
    q = np.ones((2, 4))
    c = np.ones((5, 4))
    rel = {0: {1: 1, 3: 1}, 1: {}}
    res = tierank.evaluate_embeddings(q, c, rel, ["AP", "P@2"], precision=precision, bounds=True,
                                      calibration_embeddings=np.vstack([c, -c]))
    want = analyse("AP", [0, 1, 0, 1, 0], [0] * 5)
    assert res.per_query["AP"].iloc[0] == pytest.approx(want.mean)
    assert res.per_query["AP"].iloc[1] == 0.0                                  # no relevant item
    assert res.audit.per_query[("tie_mass", "@2")].tolist() == [3, 3]
    assert res.audit.per_query[("depends", "AP")].tolist() == [True, False]
    assert res.audit.tie_dependent == 0.5


def test_one_item_and_k_beyond_the_corpus():
    q = np.array([[1.0, 0.0]])
    c = np.array([[0.5, 0.5]])
    res = tierank.evaluate_embeddings(q, c, {0: {0: 2}}, ["AP", "nDCG@10", "P@10"], k=50)
    assert res.mean == {"AP": 1.0, "nDCG@10": 1.0, "P@10": 0.1}
    assert res.audit.tie_mass["max"].tolist() == [0, 0]


def test_k_inside_a_tie_keeps_the_tie_whole():
    q = np.array([[1.0, 0.0]])
    c = np.array([[2.0, 0.0], [1.0, 0.0], [1.0, 0.5], [1.0, -0.5], [0.0, 1.0]])
    res = tierank.evaluate_embeddings(q, c, {0: {3: 1, 4: 1}}, ["AP", "NumRet"], similarity="dot", k=2)
    # window: c0, then the tie c1, c2, c3 (all kept); c4 is judged (R = 2) but not retrieved
    assert res.mean["NumRet"] == 4
    assert res.mean["AP"] == pytest.approx(((1 / 2 + 1 / 3 + 1 / 4) / 3) / 2)
    assert res.audit.per_query[("tie_mass", "@2")].tolist() == [2]


def test_no_relevant_anywhere_and_skip():
    q, c, _ = data(1)
    res = tierank.evaluate_embeddings(q, c, {}, ["AP"])
    assert res.mean == {"AP": 0.0}
    res = tierank.evaluate_embeddings(q, c, {0: {1: 1}}, ["AP"], no_relevant="skip")
    assert np.isnan(res.per_query["AP"].iloc[1])


def test_relevance_forms_agree():
    q, c, rel = data(2, n_q=3, n_c=7)
    base = tierank.evaluate_embeddings(q, c, rel, ["AP", "nDCG@3"])
    g = dense(rel, 3, 7)
    qids, cids = ["a", "b", "c"], [f"d{i}" for i in range(7)]
    by_id = {qids[i]: {cids[j]: v for j, v in docs.items()} for i, docs in rel.items()}
    named = tierank.evaluate_embeddings(q, c, by_id, ["AP", "nDCG@3"], query_ids=qids, corpus_ids=cids)
    assert named.per_query.index.tolist() == qids and named.per_query.index.name == "query_id"
    assert np.array_equal(named.per_query.to_numpy(), base.per_query.to_numpy())
    for other in (sp.csr_matrix(g), g):
        assert tierank.evaluate_embeddings(q, c, other, ["AP", "nDCG@3"]) == base
    binary = {i: set(docs) for i, docs in rel.items()}
    assert tierank.evaluate_embeddings(q, c, binary, ["AP"]).per_query["AP"].tolist() == \
        tierank.evaluate_embeddings(q, c, {i: {j: 1 for j in d} for i, d in binary.items()}, ["AP"]
                                    ).per_query["AP"].tolist()
    labels = tierank.evaluate_embeddings(q, c, None, ["AP"], query_labels=[0, 1, 0], corpus_labels=[0, 1, 1, 0, 1, 0, 0])
    eye = np.array([[a == b for b in [0, 1, 1, 0, 1, 0, 0]] for a in [0, 1, 0]], dtype=float)
    assert labels.per_query["AP"].tolist() == tierank.evaluate_embeddings(q, c, eye, ["AP"]).per_query["AP"].tolist()


def test_torch_tensors_including_bfloat16():
    import torch

    q, c, rel = data(4)
    t = tierank.evaluate_embeddings(torch.tensor(q, dtype=torch.bfloat16), torch.tensor(c, dtype=torch.bfloat16), rel,
                                    ["AP"], precision="bfloat16")
    n = tierank.evaluate_embeddings(torch.tensor(q).to(torch.bfloat16).float().numpy(),
                                    torch.tensor(c).to(torch.bfloat16).float().numpy(), rel, ["AP"],
                                    precision="bfloat16")
    assert t == n


def test_bfloat16_rounding_matches_torch():
    import torch

    from tierank.embeddings.quantize import round_significand

    x = np.random.default_rng(0).normal(size=10000).astype(np.float32) * np.float32(3.0) ** np.arange(-20, 20, 0.004)[
        :10000].astype(np.float32)
    ours = round_significand(x.astype(np.float64), "bfloat16")
    theirs = torch.tensor(x).to(torch.bfloat16).to(torch.float64).numpy()
    assert np.array_equal(ours, theirs)


@given(st.integers(0, 10 ** 6), st.sampled_from(["int8", "uint8", "float16", "binary"]), st.sampled_from([None, 2, 5]),
       st.sampled_from(["dot", "cosine"]))
@settings(max_examples=40, deadline=None)
def test_counted_and_ranked_paths_agree(seed, precision, k, similarity):
    # expected values are counted (no sort); optimistic/pessimistic are counted too; "input" ranks every
    # row: its bounds must be the same exact min and max
    q, c, rel = data(seed, n_q=4, n_c=9, dim=5, levels=2)
    c[5] = 2 * c[4]                                          # the same direction: an exact cosine tie
    kw = dict(precision=precision, similarity=similarity, bounds=True, k=k, calibration_embeddings=c)
    counted = tierank.evaluate_embeddings(q, c, rel, ["AP", "nDCG@3", "RR"], **kw)
    ranked = tierank.evaluate_embeddings(q, c, rel, ["AP", "nDCG@3", "RR"], ties="input", **kw)
    assert np.allclose(counted.lower.to_numpy(), ranked.lower.to_numpy(), rtol=0, atol=1e-12)
    assert np.allclose(counted.upper.to_numpy(), ranked.upper.to_numpy(), rtol=0, atol=1e-12)
    assert counted.audit.per_query["tie_mass"].equals(ranked.audit.per_query["tie_mass"])


# -- errors --------------------------------------------------------------------------------------------------

@pytest.mark.parametrize("kwargs,message", [
    (dict(similarity="l2"), "similarity='l2'"),
    (dict(precision="int4"), "precision='int4'"),
    (dict(similarity="hamming"), "similarity='hamming' needs binary"),
    (dict(rescore="float32"), "needs both rescore="),
    (dict(candidates=3), "needs both rescore="),
    (dict(k=0), "k must be a positive integer"),
    (dict(reference_precision="int8"), "reference_precision='int8'"),
    (dict(measures=["P(radius=2)"]), "no radius measures"),
    (dict(relevance={0: {99: 1}}), "outside 0..6"),
    (dict(relevance={0: {1: -1}}), "negative grade (query 0)"),
    (dict(relevance={"q": {1: 1}}), "give row numbers, or the ids with query_ids="),
    (dict(relevance={0: {1: 1}}, query_ids=["a", "b", "c"]), "names the query 0, which is not in query_ids"),
    (dict(relevance={0: {1: "x"}}), "the grade 'x' is not a number"),
])
def test_errors_name_the_problem(kwargs, message):
    q, c, rel = data(0)
    args = dict(relevance=rel, measures=["AP"])
    args.update(kwargs)
    with pytest.raises(tierank.InputError, match=None) as err:
        tierank.evaluate_embeddings(q, c, **args)
    assert message in str(err.value)


def test_errors_on_arrays():
    q, c, rel = data(0)
    with pytest.raises(tierank.InputError, match="queries have 4 dimensions, the corpus 3"):
        tierank.evaluate_embeddings(q, c[:, :3], rel, ["AP"])
    with pytest.raises(tierank.InputError, match=r"corpus contains NaN or an infinite value \(row 2\)"):
        bad = c.copy()
        bad[2, 1] = np.nan
        tierank.evaluate_embeddings(q, bad, rel, ["AP"])
    with pytest.raises(tierank.InputError, match="holds integers .int8. but precision 'float32' needs float"):
        tierank.evaluate_embeddings(q.astype(np.int8), c.astype(np.int8), rel, ["AP"])
    with pytest.raises(tierank.InputError, match="has dtype uint8; precision 'int8' takes float embeddings"):
        tierank.evaluate_embeddings(q.astype(np.uint8), c.astype(np.uint8), rel, ["AP"], precision="int8")
    with pytest.raises(tierank.InputError, match="from a single embedding: give calibration_embeddings="):
        tierank.evaluate_embeddings(q[:1], c, {0: {1: 1}}, ["AP"], precision="int8")
    with pytest.raises(tierank.InputError, match="corpus is empty"):
        tierank.evaluate_embeddings(q, c[:0], rel, ["AP"])
    with pytest.raises(tierank.InputError, match="queries in 'binary' against a corpus in 'int8'"):
        tierank.evaluate_embeddings(q, c, rel, ["AP"], precision="int8", query_precision="binary")


# -- the score kernels themselves, against exact sums ----------------------------------------------------------

@given(st.integers(0, 10 ** 6), st.sampled_from(["float32", "float16", "bfloat16"]), st.sampled_from(["dot", "cosine"]))
@settings(max_examples=40, deadline=None)
def test_float_scores_are_the_exact_sum_rounded_once(seed, precision, similarity):
    # values with few significant bits and mixed scales: exact sums land on rounding midpoints of the
    # precision often, and tiny terms sit below float64's last place of the large ones
    from tierank.embeddings import Scorer, encode

    rng = np.random.default_rng(seed)
    scale = 2.0 ** rng.choice([0, -3, -9, -30, -60], size=(2, 6))
    q = rng.integers(-15, 16, size=(3, 6)) * scale[0]
    c = rng.integers(-15, 16, size=(9, 6)) * scale[1]
    scorer = Scorer(encode(q, precision, "q"), encode(c, precision, "c"), similarity)
    got = scorer.row_keys(slice(0, 3))
    want = float_keys(q, c, precision, similarity)
    assert np.array_equal(got, want)
    assert np.array_equal(scorer.pair_keys(np.array([0, 2]), np.array([5, 8])), want[[0, 2], [5, 8]])


@given(st.lists(st.tuples(st.integers(-40, 40), st.integers(0, 3)), min_size=1, max_size=30))
@settings(max_examples=60, deadline=None)
def test_integer_cosine_ranks_are_exact(pairs):
    # dot products and squared norms of multiples of a few directions: many exact ties, and near ties
    from tierank.embeddings.scores import ratio_ranks

    dirs = [(3, 4), (6, 8), (5, 5), (7, 1)]
    q = np.array([2, 1])
    vecs = [np.array(dirs[d]) * m + (m % 3 == 0) for m, d in pairs]
    dot = np.array([int(q @ v) for v in vecs])
    norm2 = np.array([int(v @ v) for v in vecs])
    got = ratio_ranks(dot, norm2)
    exact = [Fraction(int(np.sign(d)) * int(d) ** 2, int(n)) if n else Fraction(0) for d, n in zip(dot, norm2)]
    assert got.tolist() == ranks(exact)


def test_large_corpus_counted_equals_the_matrix_evaluation():
    # 20,000 items: the counted path merges the items of grade 0 between anchors into bins of thousands;
    # every measure (ERR's tie recurrence included, which skips ties without a positive grade) must give
    # the values of evaluate_matrix on the same exact integer scores
    rng = np.random.default_rng(3)
    q = rng.integers(-128, 128, size=(3, 16), dtype=np.int8)
    c = rng.integers(-4, 5, size=(20000, 16), dtype=np.int8)        # small values: many exact ties
    rel = {i: {int(j): int(rng.integers(1, 4)) for j in rng.choice(20000, 8, replace=False)} for i in range(3)}
    measures = ["ERR", "AP", "nDCG@10", "RBP", "Bpref", "R@100"]
    got = tierank.evaluate_embeddings(q, c, rel, measures, similarity="dot", precision="int8", bounds=True)
    scores = q.astype(np.int64) @ c.astype(np.int64).T
    want = tierank.evaluate_matrix(dense(rel, 3, 20000), scores=scores, measures=measures, bounds=True)
    for frame in ("per_query", "lower", "upper"):
        assert np.allclose(getattr(got, frame).to_numpy(), getattr(want, frame).to_numpy(), rtol=1e-12, atol=1e-15)


@settings(max_examples=300, deadline=None)
@given(st.lists(st.tuples(st.floats(allow_nan=False, allow_infinity=False, width=64),
                          st.floats(allow_nan=False, allow_infinity=False, width=32)),
                min_size=0, max_size=40))
def test_exact_dot_is_the_sum_of_fractions(pairs):
    """The integer form of the exact dot product (frexp mantissas summed over the smallest exponent) is
    the plain sum of the exact rational products, including subnormals, zeros and huge exponents."""
    from tierank.embeddings.scores import exact_dot

    q = np.array([a for a, _ in pairs], dtype=np.float64)
    c = np.array([b for _, b in pairs], dtype=np.float64)
    assert exact_dot(q, c) == sum((Fraction(a) * Fraction(b) for a, b in pairs), Fraction(0))


@pytest.mark.parametrize("precision", ["float32", "float16", "bfloat16"])
def test_values_and_scores_beyond_the_precision_are_refused(precision):
    """A finite float64 embedding beyond the precision's range, or a score that rounds beyond it, would
    become an infinity, and infinities tie: before, 1e300 in float32 gave AP 0.75 (NaN scores) with
    warnings, and float16 scores of 7.2e9 tied at +inf. Now a one-line error names the row."""
    corpus = np.array([[1.0, 0.0], [0.0, 1.0]])
    with pytest.raises(tierank.InputError, match=rf"queries holds a value beyond {precision}'s range \(row 1\)"):
        tierank.evaluate_embeddings(np.array([[1.0, 2.0], [1e300, 1.0]]), corpus, {0: {1: 1}}, ["AP"],
                                    precision=precision, similarity="dot")
    big = float(np.finfo(np.float16).max) if precision == "float16" else 1.5e38
    q, c = np.array([[big, big]]), np.array([[1.0, 0.0], [big, big]])
    with pytest.raises(tierank.InputError, match=rf"score of query row 0 and corpus row 1 is beyond {precision}"):
        tierank.evaluate_embeddings(q, c, {0: {1: 1}}, ["AP"], precision=precision, similarity="dot")


@settings(max_examples=60, deadline=None)
@given(st.integers(0, 600), st.sampled_from(["float32", "float16", "bfloat16"]), st.integers(0, 2 ** 32 - 1))
def test_scaling_by_a_power_of_two_keeps_the_value_or_is_refused(e, precision, seed):
    """Small integer embeddings times 2**e: every score scales by 2**(2e) exactly, so the ranking (ties
    included) and every value are those of e = 0, unless a value or score leaves the precision's range,
    which must be the one-line error, never another number."""
    rng = np.random.default_rng(seed)
    q = rng.integers(-3, 4, size=(3, 4)).astype(np.float64)
    c = rng.integers(-3, 4, size=(8, 4)).astype(np.float64)
    rel = {i: {int(j): 1 for j in rng.choice(8, 2, replace=False)} for i in range(3)}
    base = tierank.evaluate_embeddings(q, c, rel, ["AP", "nDCG@3"], precision=precision, similarity="dot").mean
    try:
        scaled = tierank.evaluate_embeddings(q * 2.0 ** e, c * 2.0 ** e, rel, ["AP", "nDCG@3"],
                                             precision=precision, similarity="dot").mean
    except tierank.InputError as err:
        assert f"beyond {precision}'s range" in str(err)
    else:
        assert scaled == base


@given(st.integers(0, 2 ** 32 - 1), st.sampled_from([None, 5]))
@settings(max_examples=30, deadline=None)
def test_integer_cosine_counted_in_sorted_keys_is_exact(seed, k):
    # a corpus of multiples of four directions (exact cosine ties) and their neighbours one step away
    # (near ties, closer than floats can order once squared and divided): the counted path, which finds
    # each key's anchors by binary search and decides the close ones in exact values, must give the
    # values of evaluate_matrix on the exact ranks (fractions sign(d) d^2 / |c|^2)
    rng = np.random.default_rng(seed)
    n = 700
    dirs = rng.integers(-9, 10, size=(4, 6))
    c = dirs[rng.integers(0, 4, n)] * rng.integers(1, 13, n)[:, None]
    c[rng.random(n) < 0.3, 0] += 1
    c = np.clip(c, -127, 127).astype(np.int8)
    q = np.vstack([dirs[:2] * 7, rng.integers(-127, 128, size=(1, 6))]).clip(-127, 127).astype(np.int8)
    rel = {i: {int(j): int(rng.integers(1, 3)) for j in rng.choice(n, 6, replace=False)} for i in range(3)}
    measures = ["AP", "nDCG@5", "RR", "P@5"] if k is None else ["AP@5", "nDCG@5", "RR@5", "P@5"]   # k: the top-k window
    got = tierank.evaluate_embeddings(q, c, rel, measures, similarity="cosine", precision="int8", bounds=True, k=k)
    d = q.astype(np.int64) @ c.astype(np.int64).T
    norm2 = (c.astype(np.int64) ** 2).sum(axis=1)
    keys = [[Fraction(int(np.sign(x)) * int(x) ** 2, int(m)) if m else Fraction(0) for x, m in zip(row, norm2)]
            for row in d]
    want = tierank.evaluate_matrix(dense(rel, 3, n), scores=np.array([ranks(row) for row in keys], dtype=float),
                                   measures=measures, bounds=True)
    for frame in ("per_query", "lower", "upper"):
        assert np.allclose(getattr(got, frame).to_numpy(), getattr(want, frame).to_numpy(), rtol=1e-12, atol=1e-15)
