"""The boundary between the user's data and the kernels: ids, nulls, dtypes, judged kinds, fast paths.

Each numbered block holds the reproduction of a silent wrong number (or false error) found by a
differential fuzzer, and a hypothesis property test for its class. Expected values come from the
run-level brute force below (every ordering of tied documents, trec_eval's definitions written out
position by position) or from hand computations written in the test.
"""

from __future__ import annotations

import math
import pickle
import warnings
from decimal import Decimal
from itertools import permutations, product

import numpy as np
import pandas as pd
import pyarrow as pa
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import tierank
from tierank.data import ids as ids_module
from test_join import _colliding_hashes   # real hashes cut to 2 bits: equal ids alike, others colliding

SETTINGS = settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])


# ------------------------------------------------------------------------------- run-level brute force


def _orderings(docs: list, scores: list):
    """Every ordering of ``docs`` consistent with ``scores`` (higher first; equal scores permuted)."""
    levels = sorted(set(scores), reverse=True)
    ties = [[d for d, s in zip(docs, scores) if s == v] for v in levels]
    for parts in product(*[list(permutations(t)) for t in ties]):
        yield [d for part in parts for d in part]


def _plain(measure: str, order: list, judged: dict) -> float:
    """trec_eval's definition on one ordering: relevant = judged with grade >= rel (never unjudged)."""
    name, _, k = measure.partition("@")
    cutoff = bool(k)
    rel = 0 if "(rel=0)" in name else 1
    name = name.split("(")[0]
    k = int(k) if k else len(order)
    grade = [judged.get(d) for d in order]
    b = [g is not None and g >= rel for g in grade]
    R = sum(1 for g in judged.values() if g >= rel)
    top = b[:k]
    if name == "P":
        return sum(top) / k
    if name == "NumRet":
        return float(len(order) if rel == 1 and "(rel" not in measure else sum(b))
    if name == "NumRelRet":
        return float(sum(b))
    if name == "RR":
        return next((1.0 / (i + 1) for i, x in enumerate(top) if x), 0.0)
    if name == "AP":
        hits, total = 0, 0.0
        for i, x in enumerate(top):
            if x:
                hits += 1
                total += hits / (i + 1)
        return total / R if R else 0.0
    if name == "nDCG":   # linear gains of judged grades (negative and unjudged: 0)
        gains = [max(g, 0) if g is not None else 0.0 for g in grade]
        dcg = sum(g / math.log2(i + 2) for i, g in enumerate(gains[:k]))
        ideal = sorted((max(g, 0) for g in judged.values()), reverse=True)   # every judged document
        idcg = sum(g / math.log2(i + 2) for i, g in enumerate(ideal[:k] if cutoff else ideal))
        return dcg / idcg if idcg else 0.0
    raise ValueError(measure)


def brute_force(measure: str, run: dict, judged: dict) -> tuple[float, float, float]:
    """(mean, min, max) over every ordering of tied documents, for one query."""
    docs = list(run)
    values = [_plain(measure, o, judged) for o in _orderings(docs, [run[d] for d in docs])]
    return math.fsum(values) / len(values), min(values), max(values)


def _check_against_brute_force(qrels: dict, run: dict, measures: list[str], frame_run=None) -> None:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", tierank.TierankWarning)
        res = tierank.evaluate(qrels, run if frame_run is None else frame_run, measures, bounds=True)
    for q in res.per_query.index:
        for m in measures:
            mean, lo, hi = brute_force(m, run[q], qrels[q])
            assert res.per_query.loc[q, m] == pytest.approx(mean, abs=1e-12), (q, m)
            assert res.lower.loc[q, m] == pytest.approx(lo, abs=1e-12), (q, m)
            assert res.upper.loc[q, m] == pytest.approx(hi, abs=1e-12), (q, m)


def test_brute_force_by_hand():
    # ranking b (judged 0), u (unjudged), a (relevant): AP = (1/3) / 1; with rel=0, b and a: (1 + 2/3) / 2
    run, judged = {"a": 0.1, "b": 0.9, "u": 0.5}, {"a": 1, "b": 0}
    assert brute_force("AP", run, judged) == (1 / 3, 1 / 3, 1 / 3)
    assert brute_force("AP(rel=0)", run, judged)[0] == pytest.approx((1 + 2 / 3) / 2)
    # a tie of a and b for the top: RR = (1 + 1/2) / 2
    assert brute_force("RR", {"a": 1.0, "b": 1.0}, {"a": 1}) == (0.75, 0.5, 1.0)


# ------------------------------------------------------------- 1. key transformations are exact


def test_distinct_scores_never_tie_on_the_small_integer_path():
    # 1.0 - 1e-20 rounds to 1.0: the rank path must not take it ('b' is second, alone)
    res = tierank.evaluate({"q": {"b": 1}}, {"q": {"a": 1.0, "b": 1e-20, "c": 0.0}}, ["RR"], bounds=True)
    assert (res.mean["RR"], res.mean_lower["RR"], res.mean_upper["RR"]) == (0.5, 0.5, 0.5)


@pytest.mark.parametrize("shuffle", [False, True])
def test_near_equal_scores_keep_their_order_grouped_or_not(shuffle):
    # 200.0 - nextafter(3, 4) rounds to 197.0: 'b' must still rank above 'c' (no tie), grouped or not
    up = float(np.nextafter(3.0, 4.0))
    rows = [("q", "a", 200.0), ("q", "b", up), ("q", "c", 3.0), ("r", "x", 1.0), ("r", "y", 2.0)]
    run = pd.DataFrame(rows, columns=["query_id", "doc_id", "score"])
    if shuffle:
        run = run.iloc[[2, 3, 0, 4, 1]]
    qrels = {"q": {"c": 1}, "r": {"x": 1}}
    res = tierank.evaluate(qrels, run, ["RR"], bounds=True)
    assert res.per_query["RR"].tolist() == [1 / 3, 1 / 2]
    assert res.lower["RR"].tolist() == res.upper["RR"].tolist() == [1 / 3, 1 / 2]


_NEAR = [0.0, -0.0, 1e-20, 1.0, float(np.nextafter(1.0, 2.0)), float(np.nextafter(1.0, 0.0)), 3.0,
         float(np.nextafter(3.0, 4.0)), 200.0, 2.0 ** 53, 2.0 ** 53 + 2, 1e300, -1e300, float("inf"),
         float("-inf"), 0.5, 0.30000000000000004, 0.3]


@st.composite
def _runs(draw, score_pool=_NEAR, max_docs=6):
    n_q = draw(st.integers(1, 3))
    run, qrels = {}, {}
    for q in range(n_q):
        n = draw(st.integers(1, max_docs))
        docs = [f"d{i}" for i in range(n + 2)]
        run[f"q{q}"] = {d: draw(st.sampled_from(score_pool)) for d in docs[:n]}
        judged = draw(st.lists(st.sampled_from(docs), min_size=1, max_size=n + 2, unique=True))
        qrels[f"q{q}"] = {d: draw(st.sampled_from([-2, 0, 1, 2])) for d in judged}
    return qrels, run


@SETTINGS
@given(_runs(), st.randoms())
def test_property_near_equal_scores_rank_as_brute_force_on_every_layout(data, rnd):
    qrels, run = data
    rows = [(q, d, s) for q, docs in run.items() for d, s in docs.items()]
    frame = pd.DataFrame(rows, columns=["query_id", "doc_id", "score"])
    shuffled = frame.iloc[rnd.sample(range(len(frame)), len(frame))]
    for r in (run, frame, shuffled):
        _check_against_brute_force(qrels, run, ["RR", "AP", "P@2", "nDCG@3"], frame_run=r)


# ---------------------------------------------------------------------------- 2. missing ids


def test_missing_query_id_in_a_dict_is_an_error_not_a_merge():
    with pytest.raises(tierank.InputError, match=r"missing id \(None\).*query id"):
        tierank.evaluate({"q1": {"a": 1}}, {"q1": {"a": .5}, None: {"x": .9}}, ["AP", "NumRet"])
    with pytest.raises(tierank.InputError, match=r"missing id \(None\).*document id"):
        tierank.evaluate({"q1": {"a": 1, None: 0}}, {"q1": {"a": .5}}, ["AP"])


_NULLS = {"object": [None, np.nan, pd.NA], "str": [None, np.nan], "string[pyarrow]": [None, pd.NA],
          "float": [np.nan], "Int64": [pd.NA], "category": [None, np.nan]}


def _column_with_null(dtype: str, n: int, at: int, null) -> pd.Series:
    if dtype in ("float", "Int64"):
        values = [float(i + 1) if dtype == "float" else i + 1 for i in range(n)]
    else:
        values = [f"x{i}" for i in range(n)]
    values = list(values)
    values[at] = null
    if dtype == "float":
        return pd.Series(values, dtype="float64")
    return pd.Series(values, dtype=dtype if dtype != "str" else "str")


@SETTINGS
@given(st.sampled_from(sorted(_NULLS)), st.sampled_from(["run", "qrels"]),
       st.sampled_from(["query_id", "doc_id"]), st.integers(0, 5), st.data())
def test_property_a_missing_id_anywhere_is_an_error_naming_column_and_row(dtype, table, column, at, data):
    null = data.draw(st.sampled_from(_NULLS[dtype]))
    n = 6
    ints = dtype in ("float", "Int64")
    q = [1, 1, 1, 2, 2, 2] if ints else ["q1", "q1", "q1", "q2", "q2", "q2"]
    d = [1, 2, 3, 4, 5, 6] if ints else ["a", "b", "c", "d", "e", "f"]
    frames = {
        "run": pd.DataFrame({"query_id": q, "doc_id": d, "score": np.linspace(0, 1, n)}),
        "qrels": pd.DataFrame({"query_id": q, "doc_id": d, "relevance": [1, 0] * 3}),
    }
    frames[table][column] = _column_with_null(dtype, n, at, null)
    other = "qrels" if table == "run" else "run"
    if not ints:   # the other table's ids of the same kind
        frames[other][column] = [f"x{i}" for i in range(n)]
    with pytest.raises(tierank.InputError, match=rf"the {table}'s '{column}' column: a missing id.*\(row {at}\)"):
        tierank.evaluate(frames["qrels"], frames["run"], ["AP"])


# ---------------------------------------------------------- 3-4. judged kinds: rel=0, gains


def test_rel_0_counts_judged_non_relevant_documents_only():
    qrels = {"q": {"a": 1, "b": 0}}
    run = {"q": {"a": .1, "b": .9, "u1": .8, "u2": .7, "u3": .6}}
    res = tierank.evaluate(qrels, run, ["AP(rel=0)", "NumRelRet(rel=0)", "NumRel(rel=0)"])
    # ranking b u1 u2 u3 a: relevant at level 0 are b (rank 1) and a (rank 5); R = 2
    assert res.mean["AP(rel=0)"] == pytest.approx((1 / 1 + 2 / 5) / 2)
    assert res.mean["NumRelRet(rel=0)"] == 2.0
    assert res.mean["NumRel(rel=0)"] == 2.0


def test_rel_0_matches_pytrec_eval_relevance_level_0():
    pytrec_eval = pytest.importorskip("pytrec_eval")
    rng = np.random.default_rng(7)
    qrels, run = {}, {}
    for q in range(20):
        docs = [f"d{i}" for i in range(12)]
        run[f"q{q}"] = {d: float(s) for d, s in zip(docs[:9], rng.permutation(9))}   # no ties
        judged = rng.choice(docs, size=6, replace=False)
        qrels[f"q{q}"] = {str(d): int(g) for d, g in zip(judged, rng.integers(-1, 3, size=6))}
    # pytrec_eval takes no level 0; level 0 on grades g is level 1 on g + 1 for the judged (g >= 0)
    shifted = {q: {d: g + 1 if g >= 0 else g for d, g in docs.items()} for q, docs in qrels.items()}
    ev = pytrec_eval.RelevanceEvaluator(shifted, {"map", "num_rel_ret", "recip_rank", "P_5"})
    want = ev.evaluate(run)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", tierank.TierankWarning)
        got = tierank.evaluate(qrels, run, ["AP(rel=0)", "NumRelRet(rel=0)", "RR(rel=0)", "P(rel=0)@5"],
                               ties="trec_eval").per_query
    for q in run:
        assert got.loc[q, "AP(rel=0)"] == pytest.approx(want[q]["map"], abs=1e-12)
        assert got.loc[q, "NumRelRet(rel=0)"] == want[q]["num_rel_ret"]
        assert got.loc[q, "RR(rel=0)"] == pytest.approx(want[q]["recip_rank"], abs=1e-12)
        assert got.loc[q, "P(rel=0)@5"] == pytest.approx(want[q]["P_5"], abs=1e-12)


def test_gains_map_gives_unjudged_documents_no_gain():
    qrels = {"q": {"a": 1, "b": 0}}
    run = {"q": {"u": 0.9, "b": 0.5, "a": 0.1}}
    res = tierank.evaluate(qrels, run, ["nDCG(gains={0: 1, 1: 4})", "DCG(gains={0: 1, 1: 4})"])
    # u unjudged: gain 0 (not gains[0]); b judged 0: gain 1; a: gain 4
    dcg = 0 / math.log2(2) + 1 / math.log2(3) + 4 / math.log2(4)
    idcg = 4 / math.log2(2) + 1 / math.log2(3)
    assert res.mean["DCG(gains={0: 1, 1: 4})"] == pytest.approx(dcg)
    assert res.mean["nDCG(gains={0: 1, 1: 4})"] == pytest.approx(dcg / idcg)


@SETTINGS
@given(_runs(score_pool=[0.0, 1.0, 2.0, 0.5]))
def test_property_unjudged_documents_are_never_relevant(data):
    qrels, run = data
    _check_against_brute_force(qrels, run, ["AP(rel=0)", "P(rel=0)@2", "NumRelRet(rel=0)", "RR(rel=0)",
                                            "AP", "nDCG"])


# --------------------------------------------------------------------- 6. id kinds must match


@pytest.mark.parametrize("qrels, run, what", [
    ({"1": {10: 1}}, {"1": {"10": .9}}, "document"),
    ({1: {"a": 1}}, {"1": {"a": .9}}, "query"),
])
def test_integer_ids_against_string_ids_are_an_error_naming_both_dtypes(qrels, run, what):
    with pytest.raises(tierank.InputError, match=rf"the {what} ids of the run are (strings|integers) "
                                                 r"\(.+\) but those of the qrels are (integers|strings)"):
        tierank.evaluate(qrels, run, ["AP"])


# --------------------------------------------------- 7. trec_eval's order does not depend on dtype


def _int_doc_columns(values: list[int]) -> dict:
    return {
        "int64": pd.Series(values, dtype="int64"),
        "object": pd.Series(values, dtype="object"),
        "category": pd.Series(values, dtype="category"),
        "Int64": pd.Series(values, dtype="Int64"),
        "float": pd.Series(values, dtype="float64"),
        "uint32": pd.Series(values, dtype="uint32"),
        "arrow": pd.Series(pd.array(values, dtype="int64[pyarrow]")),
    }


def test_trec_eval_order_of_integer_ids_is_the_same_in_every_column_dtype():
    # 9 > 10 > 1 as strings: trec_eval puts "9" first among tied documents
    docs = [1, 9, 10, 100]
    qrels = pd.DataFrame({"query_id": ["q"] * 4, "doc_id": docs, "relevance": [0, 0, 1, 0]})
    results = {}
    for name, col in _int_doc_columns(docs).items():
        run = pd.DataFrame({"query_id": ["q"] * 4, "doc_id": col, "score": [1.0] * 4})
        results[name] = tierank.evaluate(qrels, run, ["RR"], ties="trec_eval").mean["RR"]
    # descending string order: "9", "100", "10", "1": the relevant 10 is third
    assert results == {name: 1 / 3 for name in results}


@SETTINGS
@given(st.lists(st.integers(0, 10 ** 6), min_size=2, max_size=8, unique=True), st.data())
def test_property_integer_ids_rank_alike_in_every_dtype(docs, data):
    grades = data.draw(st.lists(st.sampled_from([0, 1, 2]), min_size=len(docs), max_size=len(docs)))
    scores = data.draw(st.lists(st.sampled_from([0.0, 1.0]), min_size=len(docs), max_size=len(docs)))
    qrels = pd.DataFrame({"query_id": [1] * len(docs), "doc_id": docs, "relevance": grades})
    outs = []
    for col in _int_doc_columns(docs).values():
        run = pd.DataFrame({"query_id": [1] * len(docs), "doc_id": col, "score": scores})
        outs.append(tierank.evaluate(qrels, run, ["AP", "nDCG@3"], ties="trec_eval").per_query)
    as_str = tierank.evaluate(qrels.assign(doc_id=[str(d) for d in docs]),
                              pd.DataFrame({"query_id": [1] * len(docs), "doc_id": [str(d) for d in docs],
                                            "score": scores}), ["AP", "nDCG@3"], ties="trec_eval").per_query
    for out in outs:
        pd.testing.assert_frame_equal(out, outs[0], check_exact=True)
    pd.testing.assert_frame_equal(outs[0], as_str, check_exact=True)   # decimal strings, as trec_eval


# -------------------------------------------------------- 9. wide integer ids are no duplicates


def test_integer_ids_over_a_wide_range_are_not_reported_twice():
    res = tierank.evaluate({1: {0: 1}}, {1: {0: .5, 2 ** 62 - 1: .4, 7: .3}}, ["AP"])
    assert res.mean["AP"] == 1.0


@SETTINGS
@given(st.lists(st.integers(-2 ** 63 + 1, 2 ** 63 - 1), min_size=1, max_size=8, unique=True), st.data())
def test_property_any_int64_ids_give_the_values_of_the_same_ids_as_strings(docs, data):
    n_q = data.draw(st.integers(1, 3))
    scores = data.draw(st.lists(st.sampled_from([0.0, 1.0, 2.0]), min_size=len(docs), max_size=len(docs)))
    grades = data.draw(st.lists(st.sampled_from([0, 1, 2]), min_size=len(docs), max_size=len(docs)))
    run = {q: dict(zip(docs, scores)) for q in range(n_q)}
    qrels = {q: dict(zip(docs, grades)) for q in range(n_q)}
    as_str = ({q: {str(d): v for d, v in r.items()} for q, r in qrels.items()},
              {q: {str(d): v for d, v in r.items()} for q, r in run.items()})
    for ties in ("expected", "trec_eval"):
        a = tierank.evaluate(qrels, run, ["AP", "nDCG@3", "P@2"], ties=ties, bounds=True)
        b = tierank.evaluate(*as_str, ["AP", "nDCG@3", "P@2"], ties=ties, bounds=True)
        pd.testing.assert_frame_equal(a.per_query, b.per_query, check_exact=True)
        pd.testing.assert_frame_equal(a.lower, b.lower, check_exact=True)


# ----------------------------------------------------------- 10. the duplicate rule on every path


def test_duplicate_in_an_unjudged_query_is_an_error_on_the_hash_path():
    qrels = pd.DataFrame({"query_id": ["q1"], "doc_id": ["a"], "relevance": [1]})
    run = pd.DataFrame({"query_id": ["q1", "q2", "q2"], "doc_id": ["a", "x", "x"], "score": [1.0, 2.0, 1.0]})
    with pytest.raises(tierank.InputError, match="document 'x' is listed twice for query 'q2' in the run"):
        tierank.evaluate(qrels, run, ["AP"])


@SETTINGS
@given(_runs(score_pool=[0.0, 1.0]), st.integers(0, 100), st.sampled_from(["str", "int"]),
       st.booleans(), st.booleans())
def test_property_a_repeated_pair_is_always_an_error(data, pick, kind, judged_query, collide):
    qrels, run = data
    rows = [(q, d, s) for q, docs in run.items() for d, s in docs.items()]
    q, d, s = rows[pick % len(rows)]
    if not judged_query:   # the repeated pair sits in a query with no judgments
        qrels = {k: v for k, v in qrels.items() if k != q} or {"other": {"z": 1}}
    frame = pd.DataFrame(rows + [(q, d, s)], columns=["query_id", "doc_id", "score"])
    qframe = pd.DataFrame([(k, dd, g) for k, docs in qrels.items() for dd, g in docs.items()],
                          columns=["query_id", "doc_id", "relevance"])
    if kind == "int":
        frame["doc_id"] = frame["doc_id"].str.lstrip("dz").replace("", "0").astype(int)
        qframe["doc_id"] = qframe["doc_id"].str.lstrip("dz").replace("", "0").astype(int)
    with pytest.MonkeyPatch.context() as mp:
        if collide:
            mp.setattr(ids_module, "string_hashes", _colliding_hashes)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", tierank.TierankWarning)
            with pytest.raises(tierank.InputError, match=f"is listed twice for query '{q}' in the run"):
                tierank.evaluate(qframe, frame, ["AP"])


# ------------------------------------------------------------ 11. Arrow types and wide integers


@pytest.mark.parametrize("arrow_type", [pa.string(), pa.large_string(), pa.string_view(),
                                        pa.dictionary(pa.int32(), pa.string())])
def test_arrow_string_columns_of_every_type(arrow_type):
    docs = ["a", "b", "c"]
    col = pd.Series(pd.array(pa.array(docs).cast(arrow_type), dtype=pd.ArrowDtype(arrow_type)))
    qrels = pd.DataFrame({"query_id": ["q"] * 3, "doc_id": col, "relevance": [0, 1, 0]})
    run = pd.DataFrame({"query_id": ["q"] * 3, "doc_id": col, "score": [3.0, 2.0, 1.0]})
    assert tierank.evaluate(qrels, run, ["RR"]).mean["RR"] == 0.5


@pytest.mark.parametrize("docs", [np.array([1, 2 ** 63 + 5], dtype=np.uint64), [1, 2 ** 64 + 5]])
def test_integer_ids_beyond_int64_say_what_to_do(docs):
    run = pd.DataFrame({"query_id": ["q", "q"], "doc_id": pd.Series(docs, dtype=object if isinstance(docs, list)
                                                                       else np.uint64), "score": [1.0, 2.0]})
    qrels = pd.DataFrame({"query_id": ["q"], "doc_id": [1], "relevance": [1]})
    with pytest.raises(tierank.InputError, match=r"beyond the int64 range; give these ids as strings"):
        tierank.evaluate(qrels, run, ["AP"])


# ------------------------------------------------------------------ 12. what a value can be


@pytest.mark.parametrize("value, pattern", [
    ("0.5", r"is the string '0.5', not a number"),
    (Decimal("0.1"), r"is Decimal\('0.1'\), which float64 cannot hold exactly"),
    (pd.Timestamp("2024-01-01"), r"not a real number"),
    (True, r"booleans are not scores"),
    (1 + 2j, r"not a real number"),
])
def test_scores_must_be_real_numbers(value, pattern):
    with pytest.raises(tierank.InputError, match=pattern):
        tierank.evaluate({"q": {"a": 1}}, {"q": {"a": value, "b": 0.1}}, ["AP"])


@pytest.mark.parametrize("value", ["1", Decimal("0.1"), pd.Timestamp("2024-01-01")])
def test_grades_must_be_real_numbers(value):
    with pytest.raises(tierank.InputError, match=r"grade of document 'a' for query 'q'"):
        tierank.evaluate({"q": {"a": value}}, {"q": {"a": 0.5}}, ["AP"])


def test_boolean_grades_are_binary_relevance():
    run = {"q": {"a": 0.9, "b": 0.5}}
    assert tierank.evaluate({"q": {"a": False, "b": True}}, run, ["RR"]).mean == \
        tierank.evaluate({"q": {"a": 0, "b": 1}}, run, ["RR"]).mean == {"RR": 0.5}


def test_bytes_ids_are_an_error_not_a_match_with_str():
    with pytest.raises(tierank.InputError, match="bytes"):
        tierank.evaluate({"q": {b"a": 1}}, {"q": {"a": 0.5}}, ["AP"])


@pytest.mark.parametrize("columns", [["score", "scores"], ["score", "sim"]])
def test_a_frame_with_two_score_columns_is_ambiguous(columns):
    run = pd.DataFrame({"query_id": ["q"], "doc_id": ["a"], columns[0]: [1.0], columns[1]: [2.0]})
    with pytest.raises(tierank.InputError, match=rf"2 score columns \({columns[0]}, {columns[1]}\)"):
        tierank.evaluate({"q": {"a": 1}}, run, ["AP"])


def test_mixed_integer_and_string_ids_in_one_column_are_an_error():
    with pytest.raises(tierank.InputError, match=r"a mix of types .*row 1"):
        tierank.evaluate(pd.DataFrame({"query_id": ["q", "q"], "doc_id": ["a", 1], "relevance": [1, 0]}),
                         {"q": {"a": 0.5}}, ["AP"])


# ------------------------------------------------ row order never changes a tie-independent value


@st.composite
def _fractional_runs(draw):
    qrels, run = draw(_runs(score_pool=[0.0, 1.0, 2.0]))
    for q in qrels:
        qrels[q] = {d: draw(st.sampled_from([-2, 0, 0.25, 0.7, 1, 1.5, 3.3])) for d in qrels[q]}
    return qrels, run


@SETTINGS
@given(_fractional_runs(), st.randoms())
def test_property_results_are_bit_identical_under_any_row_order(data, rnd):
    qrels, run = data
    measures = ["nDCG", "nDCG(gain='exp2')@3", "ERR@3", "AP", "DCG@2", "P@2", "RR", "ACG@3"]
    rows = [(q, d, s) for q, docs in run.items() for d, s in docs.items()]
    frame = pd.DataFrame(rows, columns=["query_id", "doc_id", "score"])
    qframe = pd.DataFrame([(q, d, g) for q, docs in qrels.items() for d, g in docs.items()],
                          columns=["query_id", "doc_id", "relevance"])
    shuffled = frame.iloc[rnd.sample(range(len(frame)), len(frame))]
    qshuffled = qframe.iloc[rnd.sample(range(len(qframe)), len(qframe))]
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", tierank.TierankWarning)
        for ties in ("expected", "optimistic", "pessimistic", "lower", "upper", "trec_eval"):
            q, qs = qframe, qshuffled
            if ties == "trec_eval":   # trec_eval reads whole grades only: fractional ones are an error there
                q, qs = (f.assign(relevance=np.trunc(f["relevance"])) for f in (qframe, qshuffled))
            a = tierank.evaluate(q, frame, measures, ties=ties, bounds=True)
            b = tierank.evaluate(qs, shuffled, measures, ties=ties, bounds=True)
            for x, y in ((a.per_query, b.per_query), (a.lower, b.lower), (a.upper, b.upper)):
                pd.testing.assert_frame_equal(x, y, check_exact=True)


def test_results_pickle():
    res = tierank.evaluate({"q": {"a": 1}}, {"q": {"a": 0.5, "b": 0.5}}, ["AP", "nDCG@2"], bounds=True)
    back = pickle.loads(pickle.dumps(res))
    pd.testing.assert_frame_equal(back.per_query, res.per_query)
    assert back.mean == res.mean


def test_writers_follow_the_same_rules(tmp_path):
    # a None id written as the text "None" would read back as a real id
    with pytest.raises(tierank.InputError, match=r"missing id \(None\)"):
        tierank.write_run({"q": {None: 0.5}}, tmp_path / "run.txt")
    with pytest.raises(tierank.InputError, match=r"is the string 'x', not a number"):
        tierank.write_qrels({"q": {"a": "x"}}, tmp_path / "qrels.txt")


def test_the_three_kinds_of_retrieved_document_reach_the_ranked_lists():
    # trec_eval's res_rels: judged grade, -2 for a negative grade in the qrels (any), -1 when absent
    from tierank.data.join import join_run_qrels
    from tierank.io.frames import to_columns
    qrels = {"q": {"a": 2, "b": 0, "c": -1, "d": -5}}
    run = {"q": {"a": 6.0, "b": 5.0, "c": 4.0, "d": 3.0, "e": 2.0}}
    ranked = join_run_qrels(to_columns(run, "run"), to_columns(qrels, "qrels")).ranked
    assert ranked.grades.tolist() == [2.0, 0.0, -2.0, -2.0, -1.0]
    assert sorted(ranked.judged.tolist()) == [-5.0, -1.0, 0.0, 2.0]   # R and the ideal DCG see the judged set


_INT_COLUMNS = {
    "int64": lambda v: pd.Series(v, dtype="int64"), "object": lambda v: pd.Series(v, dtype=object),
    "Int32": lambda v: pd.Series(v, dtype="Int32"), "category": lambda v: pd.Series(v, dtype="category"),
    "float": lambda v: pd.Series(v, dtype="float64"), "arrow": lambda v: pd.Series(pd.array(v, dtype="int64[pyarrow]")),
}
_STR_COLUMNS = {
    "str": lambda v: pd.Series([str(x) for x in v], dtype="str"),
    "object": lambda v: pd.Series([str(x) for x in v], dtype=object),
    "string[pyarrow]": lambda v: pd.Series([str(x) for x in v], dtype="string[pyarrow]"),
    "category": lambda v: pd.Series([str(x) for x in v], dtype="category"),
}
_ID_COLUMNS = [("int", k, f) for k, f in _INT_COLUMNS.items()] + [("str", k, f) for k, f in _STR_COLUMNS.items()]


@SETTINGS
@given(st.sampled_from(_ID_COLUMNS), st.sampled_from(_ID_COLUMNS), st.sampled_from(["query_id", "doc_id"]))
def test_property_ids_match_only_within_one_kind(run_col, qrels_col, column):
    # integer ids in any integer dtype match each other; strings in any string dtype match each other;
    # an integer side against a string side is an error naming both dtypes, never a silent 0
    values = [1, 2, 3]
    run = pd.DataFrame({"query_id": [7, 7, 7], "doc_id": values, "score": [3.0, 2.0, 1.0]})
    qrels = pd.DataFrame({"query_id": [7, 7, 7], "doc_id": values, "relevance": [0, 1, 0]})
    run[column] = run_col[2](run[column].tolist())
    qrels[column] = qrels_col[2](qrels[column].tolist())
    if run_col[0] == qrels_col[0]:
        assert tierank.evaluate(qrels, run, ["RR"]).mean == {"RR": 0.5}
    else:
        what = "query" if column == "query_id" else "document"
        with pytest.raises(tierank.InputError, match=rf"the {what} ids of the run are .* but those of the qrels"):
            tierank.evaluate(qrels, run, ["RR"])


# decimals are numbers: exact ones are read, others are an error (tests/test_exact_values.py)
_NOT_NUMBERS = st.one_of(st.text(max_size=3), st.binary(max_size=2),
                         st.datetimes().map(pd.Timestamp), st.complex_numbers(allow_nan=False).filter(lambda c: c.imag),
                         st.none(), st.just(float("nan")))


@SETTINGS
@given(_NOT_NUMBERS, st.integers(0, 2), st.sampled_from(["run", "qrels"]))
def test_property_a_value_that_is_not_a_real_number_is_always_an_error(bad, at, table):
    run = {"q": {"a": 0.3, "b": 0.2, "c": 0.1}}
    qrels = {"q": {"a": 1, "b": 0, "c": 2}}
    doc = "abc"[at]
    (run if table == "run" else qrels)["q"][doc] = bad
    with pytest.raises(tierank.InputError, match=rf"of document '{doc}' for query 'q'"):
        tierank.evaluate(qrels, run, ["AP"])


def test_float_ids_beyond_2_53_are_an_error_not_a_rounded_id():
    # 2**53 + 1 read into a float column is 2**53: two tweet ids would become one
    qrels = pd.DataFrame({"query_id": [1], "doc_id": [float(2 ** 53 + 2)], "relevance": [1]})
    run = pd.DataFrame({"query_id": [1], "doc_id": [float(2 ** 53 + 2)], "score": [1.0]})
    with pytest.raises(tierank.InputError, match=r"beyond 2\*\*53, where floats cannot hold every integer"):
        tierank.evaluate(qrels, run, ["AP"])
