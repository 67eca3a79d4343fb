"""tierank.torch: torchmetrics' retrieval metrics, exact when scores tie.

References: torchmetrics 1.9 itself (run here) on tie-free data, including empty_target_action,
ignore_index, top_k, adaptive_k, aggregation and its "score <= 0 is not retrieved" convention;
tierank.evaluate_matrix (the numpy core) per query in every tie mode; hand computations for ties.
"""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import tierank

torch = pytest.importorskip("torch")
torchmetrics = pytest.importorskip("torchmetrics")
from torchmetrics import retrieval as tmr  # noqa: E402
from torchmetrics.functional import retrieval as tmf  # noqa: E402

import tierank.torch as tt  # noqa: E402
from tierank.errors import InputError  # noqa: E402
from tierank.torch import _core  # noqa: E402

CLASSES = ["RetrievalNormalizedDCG", "RetrievalMAP", "RetrievalMRR", "RetrievalPrecision", "RetrievalRecall",
           "RetrievalHitRate", "RetrievalRPrecision"]
FUNCTIONS = {"RetrievalNormalizedDCG": "retrieval_normalized_dcg", "RetrievalMAP": "retrieval_average_precision",
             "RetrievalMRR": "retrieval_reciprocal_rank", "RetrievalPrecision": "retrieval_precision",
             "RetrievalRecall": "retrieval_recall", "RetrievalHitRate": "retrieval_hit_rate",
             "RetrievalRPrecision": "retrieval_r_precision"}
# the tierank registry measure of each metric when every item is ranked (nonpositive_retrieved=True)
REGISTRY = {"RetrievalNormalizedDCG": "nDCG@{k}", "RetrievalMAP": "AP(denom='retrieved')@{k}",
            "RetrievalMRR": "RR@{k}", "RetrievalPrecision": "P@{k}", "RetrievalRecall": "R@{k}",
            "RetrievalHitRate": "Success@{k}", "RetrievalRPrecision": "Rprec"}
POSITIVE_ONLY = {"RetrievalMAP", "RetrievalMRR", "RetrievalPrecision", "RetrievalRecall"}
per_query = lambda values, dim=None: values   # noqa: E731  (aggregation: the per-query vector)


def flat_data(seed: int, n: int = 1500, queries: int = 120, graded: bool = False, ties: bool = False):
    """Flat (preds, target, indexes): ragged queries with non-contiguous ids, scores of both signs
    (tie-free unless ``ties``), ~20% relevant, some queries with no relevant item."""
    g = torch.Generator().manual_seed(seed)
    ids = torch.randperm(10 * queries, generator=g)[:queries] - 3 * queries      # negative ids too
    indexes = ids[torch.randint(0, queries, (n,), generator=g)]
    preds = torch.randint(-2, 3, (n,), generator=g).float() if ties else torch.randn(n, generator=g)
    if graded:
        target = torch.randint(0, 4, (n,), generator=g) * (torch.rand(n, generator=g) < 0.4)
    else:
        target = (torch.rand(n, generator=g) < 0.2).long()
    return preds, target, indexes


def kwargs_for(name: str) -> list[dict]:
    out = [{}, {"empty_target_action": "pos"}, {"empty_target_action": "skip"},
           {"aggregation": "median"}, {"aggregation": "min"}, {"aggregation": "max"},
           {"aggregation": lambda v, dim=None: v.pow(2).mean()}]
    if name != "RetrievalRPrecision":
        out += [{"top_k": 1}, {"top_k": 4}, {"top_k": 60, "empty_target_action": "skip"}]
    if name == "RetrievalPrecision":
        out += [{"top_k": 4, "adaptive_k": True}, {"top_k": 60, "adaptive_k": True}]
    return out


@pytest.mark.parametrize("name", CLASSES)
def test_class_equals_torchmetrics_on_tie_free_data(name):
    preds, target, indexes = flat_data(CLASSES.index(name), graded=name == "RetrievalNormalizedDCG")
    for kw in kwargs_for(name):
        ours, theirs = getattr(tt, name)(**kw), getattr(tmr, name)(**kw)
        for part in torch.tensor_split(torch.arange(len(preds)), 3):   # several updates
            ours.update(preds[part], target[part], indexes[part])
            theirs.update(preds[part], target[part], indexes[part])
        assert isinstance(ours, getattr(tmr, name)) and isinstance(ours, torchmetrics.Metric)
        torch.testing.assert_close(ours.compute(), theirs.compute(), rtol=1e-5, atol=1e-6, msg=str(kw))


@pytest.mark.parametrize("name", CLASSES)
def test_class_ignore_index_equals_torchmetrics(name):
    preds, target, indexes = flat_data(20 + CLASSES.index(name))
    target = torch.where(torch.rand(len(target)) < 0.1, torch.full_like(target, -100), target)
    ours, theirs = getattr(tt, name)(ignore_index=-100), getattr(tmr, name)(ignore_index=-100)
    ours.update(preds, target, indexes)
    theirs.update(preds, target, indexes)
    torch.testing.assert_close(ours.compute(), theirs.compute(), rtol=1e-5, atol=1e-6)


@pytest.mark.parametrize("name", CLASSES)
def test_empty_target_error_like_torchmetrics(name):
    preds, target, indexes = torch.tensor([0.3, 0.2, 0.5]), torch.tensor([0, 0, 1]), torch.tensor([0, 0, 1])
    for cls in (getattr(tt, name), getattr(tmr, name)):
        metric = cls(empty_target_action="error")
        metric.update(preds, target, indexes)
        with pytest.raises(ValueError, match="no positive target"):
            metric.compute()


@pytest.mark.parametrize("name", CLASSES)
def test_functional_equals_torchmetrics_on_tie_free_data(name):
    ours, theirs = getattr(tt, FUNCTIONS[name]), getattr(tmf, FUNCTIONS[name])
    g = torch.Generator().manual_seed(3)
    for trial in range(12):
        n = int(torch.randint(1, 30, (1,), generator=g))
        preds = torch.randn(n, generator=g)          # negative scores: the "<= 0 not retrieved" rule
        target = torch.randint(0, 4 if name == "RetrievalNormalizedDCG" else 2, (n,), generator=g)
        for k in (None, 1, 3, n + 5):
            if name == "RetrievalRPrecision" and k is not None:
                continue
            kws = [{}] if name == "RetrievalRPrecision" else [{"top_k": k}]
            if name == "RetrievalPrecision":
                kws.append({"top_k": k, "adaptive_k": True})
            for kw in kws:
                torch.testing.assert_close(ours(preds, target, **kw), theirs(preds, target, **kw),
                                           rtol=1e-5, atol=1e-6, msg=f"{trial} {kw}")


def test_nonpositive_scores_convention():
    """torchmetrics >= 1.8: a score <= 0 means "not retrieved" in AP, MRR, P and R (not nDCG, hit rate,
    R-precision). Hand computations; nonpositive_retrieved=True ranks every item."""
    preds, target = torch.tensor([0.5, 0.0, -1.0]), torch.tensor([0, 1, 1])
    # retrieved: only the first item (not relevant) -> AP 0, RR 0, P@2 0, R@2 0
    assert tt.retrieval_average_precision(preds, target).item() == 0.0
    assert tt.retrieval_reciprocal_rank(preds, target).item() == 0.0
    assert tt.retrieval_precision(preds, target, top_k=2).item() == 0.0
    assert tt.retrieval_recall(preds, target, top_k=2).item() == 0.0
    # every item ranked: relevant at ranks 2 and 3
    kw = {"nonpositive_retrieved": True}
    assert tt.retrieval_average_precision(preds, target, **kw).item() == pytest.approx((1 / 2 + 2 / 3) / 2)
    assert tt.retrieval_reciprocal_rank(preds, target, **kw).item() == pytest.approx(0.5)
    assert tt.retrieval_precision(preds, target, top_k=2, **kw).item() == pytest.approx(0.5)
    assert tt.retrieval_recall(preds, target, top_k=2, **kw).item() == pytest.approx(0.5)
    # these rank every item anyway: hit@2 = 1; R-precision: 1 relevant in the top 2; nDCG: 1/log2(3) + 1/2 over 1 + 1/log2(3)
    assert tt.retrieval_hit_rate(preds, target, top_k=2).item() == 1.0
    assert tt.retrieval_r_precision(preds, target).item() == pytest.approx(0.5)
    want = (1 / np.log2(3) + 0.5) / (1 + 1 / np.log2(3))
    assert tt.retrieval_normalized_dcg(preds, target).item() == pytest.approx(want, rel=1e-6)
    # and torchmetrics agrees on all of it
    for fn in FUNCTIONS.values():
        kwk = {} if fn == "retrieval_r_precision" else {"top_k": 2}
        torch.testing.assert_close(getattr(tt, fn)(preds, target, **kwk), getattr(tmf, fn)(preds, target, **kwk))
    metric = tt.RetrievalMAP(nonpositive_retrieved=True)
    metric.update(preds, target, torch.zeros(3, dtype=torch.long))
    assert metric.compute().item() == pytest.approx((1 / 2 + 2 / 3) / 2)


def padded(preds, target, indexes):
    """Flat data as a padded (queries, longest) matrix, queries by ascending id (test-side, a loop)."""
    ids = sorted(set(indexes.tolist()))
    width = max(int((indexes == q).sum()) for q in ids)
    S, Y, M = np.zeros((len(ids), width)), np.zeros((len(ids), width)), np.zeros((len(ids), width), bool)
    for r, q in enumerate(ids):
        sel = (indexes == q).numpy()
        n = int(sel.sum())
        S[r, :n], Y[r, :n], M[r, :n] = preds.numpy()[sel], target.numpy()[sel], True
    return S, Y, M


@pytest.mark.parametrize("name", CLASSES)
@pytest.mark.parametrize("ties", ["expected", "optimistic", "pessimistic", "input", "trec_eval", "lower", "upper"])
def test_class_per_query_equals_evaluate_matrix(name, ties):
    """Per-query values with heavy ties = tierank.evaluate_matrix on the padded matrix (every item ranked)
    in the same tie mode, for the class and the function; "lower" / "upper" are also the core's bounds."""
    preds, target, indexes = flat_data(40, n=600, queries=50, graded=name == "RetrievalNormalizedDCG", ties=True)
    preds = preds.double()
    S, Y, M = padded(preds, target, indexes)
    for k in ([None] if name == "RetrievalRPrecision" else [1, 3, S.shape[1] + 1]):
        kw = {} if k is None else {"top_k": k}
        metric = getattr(tt, name)(aggregation=per_query, ties=ties, **kw,
                                   **({"nonpositive_retrieved": True} if name in POSITIVE_ONLY else {}))
        metric.update(preds, target, indexes)
        got = metric.compute().numpy()
        spec = REGISTRY[name].format(k=k)
        res = tierank.evaluate_matrix(Y, S, [spec], ties=ties, mask=M, bounds=True)
        want = res.per_query[spec].to_numpy()
        if ties in ("lower", "upper"):
            np.testing.assert_array_equal(want, getattr(res, ties)[spec].to_numpy())
        want = np.where((Y > 0).any(axis=1), want, 0.0)   # empty_target_action="neg"
        np.testing.assert_allclose(got, want, rtol=1e-12, atol=1e-12)
        rows = getattr(tt, FUNCTIONS[name])(torch.tensor(S), torch.tensor(Y).long(), mask=torch.tensor(M),
                                            reduction="none", ties=ties, **kw,
                                            **({"nonpositive_retrieved": True} if name in POSITIVE_ONLY else {}))
        np.testing.assert_allclose(rows.numpy(), want, rtol=1e-12, atol=1e-12)


def test_optimistic_map_is_the_core_arrangement():
    """Issue 27 item 8: RetrievalMAP(top_k=3, ties="optimistic") gave the exact maximum where the core's
    AP(denom='retrieved')@3 with ties="optimistic" gives the arrangement with relevant items first.
    Scores [3, 2, 1, 1], relevance [1, 0, 1, 0]: relevant first, the top 3 holds both relevant items:
    (1/1 + 2/3) / 2 = 5/6; relevant last, only the first: 1/1 = 1 (the maximum, "upper")."""
    preds, target = torch.tensor([3.0, 2.0, 1.0, 1.0]), torch.tensor([1, 0, 1, 0])
    hand = {"optimistic": 5 / 6, "pessimistic": 1.0, "upper": 1.0, "lower": 5 / 6}
    for ties, want in hand.items():
        core = tierank.evaluate_matrix([target.tolist()], [preds.tolist()], ["AP(denom='retrieved')@3"],
                                       ties=ties).mean["AP(denom='retrieved')@3"]
        assert core == pytest.approx(want, rel=1e-12)
        metric = tt.RetrievalMAP(top_k=3, ties=ties)
        metric.update(preds, target, torch.zeros(4, dtype=torch.long))
        assert metric.compute().item() == pytest.approx(want, rel=1e-6), ties
        assert tt.retrieval_average_precision(preds, target, top_k=3, ties=ties).item() == pytest.approx(want, rel=1e-6)


def test_tied_scores_hand_computed():
    """All-tied scores: torchmetrics' value depends on what topk does with ties, tierank's does not."""
    preds = torch.full((4,), 0.5)
    target = torch.tensor([0, 0, 1, 0])
    assert tt.retrieval_reciprocal_rank(preds, target).item() == pytest.approx((1 + 1 / 2 + 1 / 3 + 1 / 4) / 4)
    assert tt.retrieval_reciprocal_rank(preds, target, ties="optimistic").item() == 1.0
    assert tt.retrieval_reciprocal_rank(preds, target, ties="pessimistic").item() == 0.25
    assert tt.retrieval_reciprocal_rank(preds, target, ties="input").item() == pytest.approx(1 / 3)
    assert tt.retrieval_precision(preds, target, top_k=2).item() == pytest.approx(0.25)
    assert tt.retrieval_hit_rate(preds, target, top_k=3).item() == pytest.approx(0.75)
    # AP over the relevant items in the top 2: the relevant item is in the top 2 with probability 1/2,
    # at rank 1 or 2 equally: E = 1/4 * 1 + 1/4 * 1/2 (0 when it is not retrieved)
    assert tt.retrieval_average_precision(preds, target, top_k=2).item() == pytest.approx(0.375)


def test_batched_functional_and_mask():
    preds, target, indexes = flat_data(5, n=200, queries=15, ties=True)
    S, Y, M = padded(preds.double(), target, indexes)
    st_, yt, mt = torch.tensor(S), torch.tensor(Y).long(), torch.tensor(M)
    for name, fn in FUNCTIONS.items():
        metric = getattr(tt, name)(aggregation=per_query)
        metric.update(preds.double(), target, indexes)
        rows = getattr(tt, fn)(st_, yt, mask=mt, reduction="none")
        assert rows.shape == (S.shape[0],)
        torch.testing.assert_close(rows, metric.compute(), rtol=1e-12, atol=1e-12)
        torch.testing.assert_close(getattr(tt, fn)(st_, yt, mask=mt), rows.mean())


def test_chunked_compute_equals_one_block(monkeypatch):
    preds, target, indexes = flat_data(8, n=3000, queries=300, ties=True)
    preds[indexes == indexes[0]] = torch.linspace(-1, 1, int((indexes == indexes[0]).sum()))  # one long query
    extra = torch.arange(400)
    preds = torch.cat([preds, torch.rand(400)])
    target = torch.cat([target, (torch.rand(400) < 0.1).long()])
    indexes = torch.cat([indexes, torch.full_like(extra, 10_000)])
    one = tt.RetrievalMAP(top_k=5, aggregation=per_query)
    one.update(preds, target, indexes)
    want = one.compute()
    monkeypatch.setattr(_core, "CHUNK_CELLS", 500)
    many = tt.RetrievalMAP(top_k=5, aggregation=per_query)
    many.update(preds, target, indexes)
    torch.testing.assert_close(many.compute(), want, rtol=0, atol=0)


def test_merge_state_like_distributed_sync():
    """States are torchmetrics' (indexes, preds, target lists, concatenated on sync): two workers' halves
    merged give the value of one metric over everything."""
    preds, target, indexes = flat_data(9, ties=True)
    whole = tt.RetrievalNormalizedDCG(top_k=5)
    whole.update(preds, target, indexes)
    a, b = tt.RetrievalNormalizedDCG(top_k=5), tt.RetrievalNormalizedDCG(top_k=5)
    half = len(preds) // 2
    a.update(preds[:half], target[:half], indexes[:half])
    b.update(preds[half:], target[half:], indexes[half:])
    a.merge_state(b)
    torch.testing.assert_close(a.compute(), whole.compute(), rtol=1e-12, atol=0)
    assert set(whole.metric_state) == {"indexes", "preds", "target"}


def test_forward_reset_and_dtype():
    preds, target, indexes = flat_data(10)
    ours, theirs = tt.RetrievalMRR(), tmr.RetrievalMRR()
    torch.testing.assert_close(ours(preds, target, indexes), theirs(preds, target, indexes))
    ours.reset()
    theirs.reset()
    for metric in (ours, theirs):   # as torchmetrics: a warning, then an error, when nothing was seen
        with pytest.warns(UserWarning, match="before the ``update``"), pytest.raises(ValueError, match="No samples"):
            metric.compute()
    # float64 scores are kept (torchmetrics rounds to float32, which would tie these two)
    p = torch.tensor([1.0 + 1e-12, 1.0], dtype=torch.float64)
    m = tt.RetrievalMRR(ties="pessimistic")
    m.update(p, torch.tensor([1, 0]), torch.zeros(2, dtype=torch.long))
    assert m.compute().dtype == torch.float64 and m.compute().item() == 1.0


@pytest.mark.parametrize("call, match", [
    (lambda: tt.RetrievalMAP().update(torch.rand(3), torch.tensor([0, 1]), torch.zeros(3, dtype=torch.long)),
     "same shape"),
    (lambda: tt.RetrievalMAP().update(torch.tensor([0.1, float("nan")]), torch.tensor([0, 1]),
                                      torch.zeros(2, dtype=torch.long)), "NaN at position 1"),
    (lambda: tt.RetrievalMAP().update(torch.rand(2), torch.tensor([0, 1]), torch.tensor([0.0, 1.0])),
     "integers"),
    (lambda: tt.RetrievalMAP().update(torch.rand(2), torch.tensor([0, 2]), torch.zeros(2, dtype=torch.long)),
     "binary values"),
    (lambda: tt.RetrievalNormalizedDCG().update(torch.rand(2), torch.tensor([0, -1]), torch.zeros(2, dtype=torch.long)),
     "-1.0 at position 1"),
    (lambda: tt.RetrievalMAP().update(torch.tensor([1, 2]), torch.tensor([0, 1]), torch.zeros(2, dtype=torch.long)),
     "floats"),
    (lambda: tt.RetrievalMAP(top_k=0), "positive integer"),
    (lambda: tt.RetrievalMRR(top_k=-1), "positive integer"),
    (lambda: tt.RetrievalMRR(ties="shuffled"), "ties"),
    (lambda: tt.retrieval_recall(torch.rand(3), torch.tensor([0, 1, 1]), top_k=0), "positive integer"),
    (lambda: tt.retrieval_recall(torch.rand(3), torch.tensor([0, 1, 1]), top_k=2.0), "positive integer"),
    (lambda: tt.retrieval_hit_rate(torch.rand(2, 3), torch.ones(2, 2)), "same shape"),
    (lambda: tt.retrieval_normalized_dcg(torch.tensor([[0.1, float("nan")]]), torch.ones(1, 2)),
     r"NaN at \(row, column\) \(0, 1\)"),
])
def test_bad_input_raises(call, match):
    with pytest.raises(ValueError, match=match) as info:
        call()
    assert isinstance(info.value, ValueError)


def test_ignore_index_values_are_not_checked_as_targets():
    m = tt.RetrievalMAP(ignore_index=-1)
    m.update(torch.tensor([0.5, 0.4, 0.3]), torch.tensor([-1, 1, 0]), torch.zeros(3, dtype=torch.long))
    assert m.compute().item() == 1.0
    with pytest.raises(InputError, match="at position 2"):
        m.update(torch.tensor([0.5, 0.4, 0.3]), torch.tensor([-1, 1, 3]), torch.zeros(3, dtype=torch.long))


@settings(max_examples=40, deadline=None, derandomize=True, database=None)
@given(n=st.integers(1, 40), n_q=st.integers(1, 6), k=st.one_of(st.none(), st.integers(1, 8)),
       name=st.sampled_from(CLASSES), seed=st.integers(0, 2**16))
def test_property_bounds_bracket_expected_and_orders(n, n_q, k, name, seed):
    """Per query: lower <= expected <= upper, and every fixed order lies in between."""
    g = torch.Generator().manual_seed(seed)
    preds = torch.randint(-1, 3, (n,), generator=g).float()
    target = torch.randint(0, 2, (n,), generator=g)
    indexes = torch.randint(0, n_q, (n,), generator=g)
    kw = {} if name == "RetrievalRPrecision" or k is None else {"top_k": k}
    vals = {}
    for ties in tierank.TIE_MODES:
        m = getattr(tt, name)(aggregation=per_query, ties=ties, **kw)
        m.update(preds, target, indexes)
        vals[ties] = m.compute().double()
    lo, hi = vals["lower"] - 1e-6, vals["upper"] + 1e-6
    for ties, v in vals.items():
        assert bool(((lo <= v) & (v <= hi)).all()), (ties, vals)


@pytest.fixture(scope="module")
def compiled():
    """One torch.compile per test session (60-90 s on 2 cores): every metric in one graph, fixed shape."""
    def every_metric(S, Y, M):
        out = []
        for name, fn in FUNCTIONS.items():
            for ties in ("expected", "optimistic", "lower", "upper"):
                kw = {} if name == "RetrievalRPrecision" else {"top_k": 3}
                out.append(getattr(tt, fn)(S, Y, mask=M, ties=ties, reduction="none", validate_args=False, **kw))
        return torch.stack(out)
    return every_metric, torch.compile(every_metric, fullgraph=True, dynamic=False)


# torch 2.13's inductor calls its own deprecated torch.jit.script_method while compiling
@pytest.mark.filterwarnings("ignore:`torch.jit.script_method` is deprecated:DeprecationWarning")
def test_torch_compile_equals_eager_and_core(compiled):
    eager, fast = compiled
    preds, target, indexes = flat_data(12, n=60, queries=8, ties=True)
    S, Y, M = padded(preds.double(), target, indexes)
    S, Y, M = S[:, :6], Y[:, :6], M[:, :6]
    M[:, 0] = True
    args = (torch.tensor(S), torch.tensor(Y), torch.tensor(M))
    got, want = fast(*args), eager(*args)
    torch.testing.assert_close(got, want, rtol=1e-12, atol=1e-12)
    # row 0 of the stack: nDCG@3 expected = evaluate_matrix (every query here has a relevant item or is 0)
    core = tierank.evaluate_matrix(Y, S, ["nDCG@3"], mask=M).per_query["nDCG@3"].to_numpy()
    np.testing.assert_allclose(got[0].numpy(), np.where((Y > 0).any(axis=1) & M.any(axis=1), core, 0.0),
                               rtol=1e-12, atol=1e-12)


@pytest.mark.parametrize("dtype", [torch.bfloat16, torch.float16, torch.float32, torch.float64])
def test_result_dtype_and_precision(dtype):
    """Issue 27 item 7: bf16 / fp16 scores gave the result in their dtype (MAP 0.4688 for 0.4680). Now
    float32 (float64 for float64 scores), equal to float32 precision to the float64 computation on the
    same (rounded) scores, for the classes and the functions."""
    preds, target, indexes = flat_data(31, n=400, queries=30)
    preds = preds.to(dtype)
    want_dtype = torch.float64 if dtype == torch.float64 else torch.float32
    exact = preds.double()   # the same scores (every half / bf16 value is a float64)
    for name in CLASSES:
        ours, ref = getattr(tt, name)(), getattr(tt, name)()
        ours.update(preds, target, indexes)
        ref.update(exact, target, indexes)
        got, want = ours.compute(), ref.compute()
        assert got.dtype == want_dtype, (name, got.dtype)
        assert want.dtype == torch.float64
        assert got.item() == pytest.approx(want.item(), rel=1e-6, abs=1e-7), name
        fn = getattr(tt, FUNCTIONS[name])
        rows = fn(preds.reshape(20, 20), target.reshape(20, 20), reduction="none")
        rows64 = fn(exact.reshape(20, 20), target.reshape(20, 20), reduction="none")
        assert rows.dtype == want_dtype and fn(preds[:20], target[:20]).dtype == want_dtype
        torch.testing.assert_close(rows.double(), rows64, rtol=1e-6, atol=1e-7)
