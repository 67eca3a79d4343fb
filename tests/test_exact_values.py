"""Scores and grades float64 cannot hold exactly are an error on every input path, never a silent tie.

One rule (tierank.data.numbers.exact_float64) for DataFrames (pandas, polars, pyarrow), dicts, Parquet
files and dense matrices: long doubles such as 1 + 2**-60, integers such as 2**53 + 1 or 2**64 + 1,
Decimals such as Decimal("0.1"). Values float64 holds exactly (Decimal("2.5"), 2**60) are read as
they are. Expected values come from the brute-force oracle (tests/oracle.py) on ranks computed from
the exact values in fractions.Fraction, and exactness from Fraction arithmetic.
"""

from __future__ import annotations

import math
from decimal import Decimal
from fractions import Fraction

import numpy as np
import pandas as pd
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import oracle
import tierank
from tierank import InputError

pa = pytest.importorskip("pyarrow")

LD = np.longdouble
EXTENDED = np.finfo(np.longdouble).nmant > np.finfo(np.float64).nmant
needs_extended = pytest.mark.skipif(not EXTENDED, reason="long double is float64 on this platform")
TINY = LD(2) ** -60 if EXTENDED else LD(0)   # 1 + TINY is a long double float64 cannot hold

QRELS = {"q": {"a": 1}}
MESSAGE = r"score of document 'a' for query 'q' is {}, which float64 cannot hold exactly"


def _frame(scores: list, **kw) -> pd.DataFrame:
    """Run rows b (score scores[0]) then a (scores[1]): a, the relevant one, is the higher only in exact values.
    Silently rounded, both tie and ties='trec_eval' puts b first (document ids descending): AP 0.5."""
    return pd.DataFrame({"qid": ["q", "q"], "docno": ["b", "a"], "score": scores}, **kw)


def _ap(run, **kw) -> float:
    return tierank.evaluate(QRELS, run, ["AP"], ties="trec_eval", **kw).mean["AP"]


# ------------------------------------------------------------------- regressions (silent ties before)


@needs_extended
def test_long_double_column_of_a_dataframe_is_an_error_not_a_tie():
    run = _frame(np.array([LD(1), LD(1) + TINY]))
    assert run["score"].dtype == np.longdouble
    with pytest.raises(InputError, match=MESSAGE.format(r"np\.longdouble\('1\.0000000000000000009'\)")):
        _ap(run)
    # exact long doubles are read as float64 would be: 'a' first, AP 1
    assert _ap(_frame(np.array([LD(1), LD(1.5)]))) == 1.0


@needs_extended
def test_long_double_scalars_in_a_dict_are_an_error_not_a_tie():
    with pytest.raises(InputError, match=MESSAGE.format(r"np\.longdouble\('1\.0000000000000000009'\)")):
        _ap({"q": {"b": LD(1), "a": LD(1) + TINY, "c": 0.5}})
    assert _ap({"q": {"b": LD(1), "a": LD(2), "c": 0.5}}) == 1.0


@needs_extended
def test_long_double_rank_column_is_an_error_naming_the_rank():
    run = pd.DataFrame({"qid": ["q", "q"], "docno": ["b", "a"], "rank": np.array([LD(2), LD(2) - TINY])})
    with pytest.raises(InputError, match=r"rank of document 'a' for query 'q' is np\.longdouble\('1\.99"):
        _ap(run)


@needs_extended
def test_long_double_grades_are_an_error():
    # 1 - 2**-60 would be read as grade 1: relevant at rel=1 though below it
    with pytest.raises(InputError, match=r"grade of document 'a' for query 'q' is np\.longdouble\("):
        tierank.evaluate({"q": {"a": LD(1) - TINY}}, {"q": {"a": 1.0, "b": 0.5}}, ["P@1"])


@pytest.mark.parametrize("big", [2 ** 53, 2 ** 64, -(2 ** 70)])
def test_python_ints_float64_cannot_hold_in_a_dict_are_an_error(big):
    # 2**64 + 1 went through float64 without a check (beyond int64), 2**53 + 1 with a float beside it too
    with pytest.raises(InputError, match=MESSAGE.format(big + 1)):
        _ap({"q": {"b": big, "a": big + 1}})
    with pytest.raises(InputError, match=MESSAGE.format(big + 1)):
        _ap({"q": {"b": big, "a": big + 1, "c": 0.5}})


def test_numpy_int64_scalars_with_floats_in_a_dict_are_an_error():
    with pytest.raises(InputError, match=MESSAGE.format(2 ** 53 + 1)):
        _ap({"q": {"b": np.int64(2 ** 53), "a": np.int64(2 ** 53 + 1), "c": 0.5}})


def test_ints_beyond_float64_range_are_an_error():
    with pytest.raises(InputError, match=r"is 1797.*, which float64 cannot hold exactly "
                                         r"\(it is beyond float64's range\)"):
        _ap({"q": {"b": 0, "a": 2 ** 1024 + 1}})


@pytest.mark.parametrize("make", [
    lambda v: pd.DataFrame({"qid": ["q", "q"], "docno": ["b", "a"], "score": np.array(v, dtype=np.uint64)}),
    lambda v: pa.table({"qid": ["q", "q"], "docno": ["b", "a"], "score": pa.array(v, pa.uint64())}),
    lambda v: pd.DataFrame({"qid": ["q", "q"], "docno": ["b", "a"], "score": pd.array(v, dtype="UInt64")}),
], ids=["numpy", "arrow", "nullable"])
def test_uint64_scores_beyond_int64_are_exact_or_an_error(make):
    # 2**64 - 2 and 2**64 - 1 are both 2**64 in float64
    with pytest.raises(InputError, match=r"score of document '.' for query 'q' is 1844674407370955161[45], which"):
        _ap(make([2 ** 64 - 2, 2 ** 64 - 1]))
    # 2**63 and 2**63 + 2**11 are exact: 'a' above 'b'
    assert _ap(make([2 ** 63, 2 ** 63 + 2 ** 11])) == 1.0


@pytest.mark.parametrize("make", [
    lambda v: {"q": dict(zip("ba", v))},
    lambda v: pd.DataFrame({"qid": ["q", "q"], "docno": ["b", "a"], "score": np.array(v, dtype=object)}),
    lambda v: pa.table({"qid": ["q", "q"], "docno": ["b", "a"], "score": pa.array(v, pa.decimal128(38, 19))}),
], ids=["dict", "pandas", "arrow"])
def test_decimals_are_read_when_exact_else_an_error(make):
    with pytest.raises(InputError, match=MESSAGE.format(r"Decimal\('1\.0000000000000000001'\)")):
        _ap(make([Decimal(1), Decimal("1.0000000000000000001")]))
    # exact decimals: the same values as floats (they were refused before)
    assert _ap(make([Decimal(1), Decimal("1.5")])) == _ap({"q": {"b": 1.0, "a": 1.5}}) == 1.0


def test_polars_decimal_column():
    pl = pytest.importorskip("polars")
    schema = {"qid": pl.Utf8, "docno": pl.Utf8, "score": pl.Decimal(38, 19)}
    bad = pl.DataFrame({"qid": ["q", "q"], "docno": ["b", "a"],
                        "score": [Decimal(1), Decimal("1.0000000000000000001")]}, schema=schema)
    with pytest.raises(InputError, match=MESSAGE.format(r"Decimal\('1\.0000000000000000001'\)")):
        _ap(bad)
    ok = pl.DataFrame({"qid": ["q", "q"], "docno": ["b", "a"], "score": [Decimal(1), Decimal("1.5")]}, schema=schema)
    assert _ap(ok) == 1.0


@pytest.mark.parametrize("stream", [None, False])
def test_parquet_decimal_and_uint64_columns(tmp_path, stream):
    import pyarrow.parquet as pq

    path = tmp_path / "run.parquet"
    for column, shown in ((pa.array([Decimal(1), Decimal("1.0000000000000000001")], pa.decimal128(38, 19)),
                           r"Decimal\('1\.0000000000000000001'\)"),
                          (pa.array([2 ** 64 - 1, 2 ** 64 - 2], pa.uint64()), "18446744073709551615")):
        pq.write_table(pa.table({"qid": ["q", "q"], "docno": ["b", "a"], "score": column}), path)
        with pytest.raises(InputError, match=rf"run\.parquet: score of document '.' for query 'q' is {shown}, which"):
            _ap(str(path), stream=stream)


def test_fractions_are_exact_or_an_error():
    with pytest.raises(InputError, match=MESSAGE.format(r"Fraction\(1, 3\)")) as caught:
        _ap({"q": {"b": 0.3333333333333333, "a": Fraction(1, 3)}})
    # an exact value is shown beside every digit of its nearest float64, as a Decimal is
    assert f"the nearest float64 is {Decimal(float(Fraction(1, 3)))})" in str(caught.value)
    assert _ap({"q": {"b": 0.25, "a": Fraction(1, 2)}}) == 1.0


@pytest.mark.parametrize("scores, shown", [
    ([[2 ** 53, 2 ** 53 + 1, 0.5]], str(2 ** 53 + 1)),                      # numpy would make these floats
    ([[2 ** 64, 2 ** 64 + 1, 0]], str(2 ** 64 + 1)),                          # beyond int64: objects
    (np.array([[Decimal(1), Decimal("1.0000000000000000001"), 0]], dtype=object), r"Decimal\("),
])
def test_matrices_of_values_float64_cannot_hold_are_an_error(scores, shown):
    with pytest.raises(InputError, match=rf"scores: the value at row 0, column 1 is {shown}"):
        tierank.evaluate_matrix([[0, 1, 0]], scores=scores, measures=["AP"], ties="trec_eval")


def test_matrix_exact_objects_and_masked_values():
    # exact objects are read; an inexact value under the mask (padding) is ignored, as padding is
    want = tierank.evaluate_matrix([[0, 1, 0]], scores=[[1.0, 1.5, 0.0]], measures=["AP"]).mean
    objects = np.array([[Decimal(1), Decimal("1.5"), 0]], dtype=object)
    assert tierank.evaluate_matrix([[0, 1, 0]], scores=objects, measures=["AP"]).mean == want == {"AP": 1.0}
    padded = np.array([[Decimal(1), Decimal("1.5"), Decimal("0.1")]], dtype=object)
    assert tierank.evaluate_matrix([[0, 1, 0]], scores=padded, mask=[[True, True, False]], measures=["AP"]).mean \
        == {"AP": 1.0}


@needs_extended
def test_matrix_long_double_grades_are_an_error():
    with pytest.raises(InputError, match=r"relevance: the value at row 0, column 0 is np\.longdouble\("):
        tierank.evaluate_matrix(np.array([[LD(1) - TINY, 0]]), scores=[[1.0, 2.0]], measures=["P@1"])


# ------------------------------------------------------------------------------------- the property


def _exact(v) -> Fraction:
    """The exact rational value of a number (independent of tierank)."""
    if isinstance(v, np.integer):
        return Fraction(int(v))
    if isinstance(v, Fraction):
        return v
    return Fraction(*v.as_integer_ratio())


def _held_by_float64(v) -> bool:
    try:
        return Fraction(float(v)) == _exact(v)
    except OverflowError:
        return False


_NEAR = [0, 1, 2, 3]
_VALUES = st.one_of(
    st.sampled_from(_NEAR).map(lambda k: LD(1) + k * TINY),                  # long doubles near 1
    st.sampled_from(_NEAR).map(lambda k: 2 ** 53 + k),                       # Python ints near 2**53
    st.sampled_from(_NEAR).map(lambda k: np.int64(2 ** 53 + k)),             # numpy ints near 2**53
    st.sampled_from(_NEAR).map(lambda k: 2 ** 64 + k * 2 ** 11),             # beyond int64, some exact
    st.sampled_from(_NEAR).map(lambda k: Decimal(1) + Decimal(k) / 4),        # exact decimals
    st.sampled_from(_NEAR).map(lambda k: Decimal("0.1") + Decimal(k) * Decimal("1e-20")),   # inexact ones
    st.sampled_from(_NEAR).map(lambda k: k / 4),                             # plain floats
)


@settings(max_examples=80, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.lists(st.tuples(_VALUES, st.integers(0, 2)), min_size=2, max_size=6),
       st.sampled_from(["dict", "pandas", "matrix"]))
def test_property_exact_values_or_an_error_never_a_silent_tie(items, path):
    scores = [s for s, _ in items]
    grades = [g for _, g in items]
    docs = [f"d{i}" for i in range(len(items))]
    # the ranking of the exact values, as integer keys the oracle compares (equal exactly when tied)
    distinct = sorted({_exact(s) for s in scores})
    keys = [distinct.index(_exact(s)) for s in scores]
    measures = ["AP", "nDCG"]
    if path == "dict":
        call = lambda: tierank.evaluate({"q": dict(zip(docs, grades))}, {"q": dict(zip(docs, scores))}, measures)
    elif path == "pandas":
        column = np.empty(len(scores), dtype=object)
        column[:] = scores
        run = pd.DataFrame({"qid": "q", "docno": docs, "score": column})
        call = lambda: tierank.evaluate(pd.DataFrame({"qid": "q", "docno": docs, "rel": grades}), run, measures)
    else:
        call = lambda: tierank.evaluate_matrix([grades], scores=[scores], measures=measures)
    # a matrix of integers within int64 is kept as int64 keys: exact without float64
    int64_keys = path == "matrix" and all(isinstance(s, (int, np.integer)) and -2 ** 63 <= int(s) < 2 ** 63
                                          for s in scores)
    if int64_keys or all(_held_by_float64(s) for s in scores):
        if not any(grades):
            return   # no relevant document: nothing the ranking could change
        mean = call().mean
        for m in measures:
            assert math.isclose(mean[m], oracle.tie_aware(m, grades, keys)[0], rel_tol=1e-12, abs_tol=1e-12)
    else:
        with pytest.raises(InputError, match="which float64 cannot hold exactly"):
            call()


@needs_extended
def test_dask_engine_refuses_long_doubles_too():
    dd = pytest.importorskip("dask.dataframe")
    import tierank.dask

    qrels = dd.from_pandas(pd.DataFrame({"query_id": ["q"], "doc_id": ["a"], "relevance": [1]}), npartitions=1)
    run = dd.from_pandas(pd.DataFrame({"query_id": ["q", "q"], "doc_id": ["b", "a"],
                                       "score": np.array([LD(1), LD(1) + TINY])}), npartitions=1)
    with pytest.raises(InputError, match=MESSAGE.format(r"np\.longdouble\('1\.0000000000000000009'\)")):
        tierank.dask.evaluate(qrels, run, ["AP"], ties="trec_eval")
