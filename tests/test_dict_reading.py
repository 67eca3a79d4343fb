"""Dicts of dicts read straight into typed columns give what reading them as objects gives.

The reader (:func:`tierank.io.tables.dict_columns`) takes shortcuts for str / int ids and Python float / int
values: the compiled reader of plain rows (``tierank.io.rowreader``, str keys with float or int64 values) and,
where it does not apply or is not built, pyarrow and counted types in Python. Each property runs with the
compiled reader and without it. The reference here is the plain reading written in the test: every
query id, document id and value in a Python list, one object per row, as an object array, for
:func:`tierank.data.columns.normalized` to check. Both must give the same normalised columns, or the same
InputError (message and query), and the same Results, on random dicts with ties, mixed id types, empty
rows, NaN, None, bools, numpy scalars, Decimals and integers beyond float64's exact range.
"""

from __future__ import annotations

import collections
import contextlib
import warnings
from collections.abc import Mapping
from decimal import Decimal

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import tierank
import tierank.io.tables as tables
import tierank.pytrec_eval as drop_in
from tierank.data.columns import Columns, is_integer_ids, normalized
from tierank.io.tables import dict_columns

MEASURES = ["map", "P@2", "nDCG@3", "RR", "R@5"]


def reference_columns(obj: Mapping, kind: str) -> Columns:
    """A dict of dicts read the plain way: lists of Python objects, one per row."""
    queries: list = []
    docs: list = []
    values: list = []
    for qid, row in obj.items():
        if not isinstance(row, Mapping):
            raise tierank.InputError(f"the {kind} must map each query id to a dict {{doc_id: value}}; "
                                     f"query {qid!r} maps to {type(row).__name__}", query=qid)
        queries.extend([qid] * len(row))
        docs.extend(row.keys())
        values.extend(row.values())

    def objects(items: list) -> np.ndarray:
        out = np.empty(len(items), dtype=object)
        out[:] = items
        return out
    return Columns(query=objects(queries), doc=objects(docs), value=objects(values), source=kind, from_dict=True)


def outcome(fn):
    """(True, value) or (False, (message, query)) of an InputError."""
    try:
        return True, fn()
    except tierank.InputError as err:
        return False, (str(err), err.query)


def plain(ids):
    return ids.tolist() if is_integer_ids(ids) else ids.to_pylist()


def same_columns(a: Columns, b: Columns) -> None:
    assert is_integer_ids(a.query) == is_integer_ids(b.query)
    assert is_integer_ids(a.doc) == is_integer_ids(b.doc)
    assert plain(a.query) == plain(b.query)
    assert plain(a.doc) == plain(b.doc)
    assert a.dtypes == b.dtypes
    assert a.value.dtype == b.value.dtype
    assert a.value.tobytes() == b.value.tobytes()   # bit for bit: -0.0, inf


# ------------------------------------------------------------------------------------------ strategies

STR_IDS = st.sampled_from(["a", "b", "c", "d10", "d9", "é", "x" * 12])
INT_IDS = st.sampled_from([0, 1, 7, -3, 2 ** 40])
class Text(str):
    pass


ODD_IDS = st.sampled_from([None, float("nan"), 2.0, 2.5, True, b"b", np.str_("a"), np.int64(1), 2 ** 70,
                           Text("a"), "lone \ud800 surrogate", "δοκ", ""])
TIED_FLOATS = st.sampled_from([0.5, 0.25, 1.0, -0.0, 0.0, float("inf")])
ODD_VALUES = st.sampled_from([float("nan"), None, True, False, np.float32(0.5), np.float64(0.25), np.int32(3),
                              Decimal("0.5"), Decimal("0.1"), 2 ** 53 + 1, 2 ** 70, "0.5",
                              2 ** 63 - 1, -2 ** 63, 2 ** 63, -2 ** 63 - 1,
                              np.longdouble(1) + np.longdouble(2) ** -60])


def table(ids, values, rare_ids, rare_values):
    doc_ids = ids if rare_ids is None else st.one_of(ids, rare_ids)
    row_values = values if rare_values is None else st.one_of(values, rare_values)
    row = st.dictionaries(doc_ids, row_values, max_size=6)
    return row


@st.composite
def dicts(draw, grades: bool = False):
    kind = draw(st.sampled_from(["str", "int"]))
    ids = STR_IDS if kind == "str" else INT_IDS
    rare = draw(st.booleans()) and draw(st.booleans())   # a quarter of the cases: odd ids or values
    values = (st.integers(0, 3) if grades else
              draw(st.sampled_from([TIED_FLOATS, st.integers(-2, 2), st.floats(allow_nan=False)])))
    row = table(ids, values, ODD_IDS if rare and draw(st.booleans()) else None,
                ODD_VALUES if rare else None)
    qids = st.sampled_from(["q1", "q2", "q3", "q10"]) if draw(st.booleans()) else st.sampled_from([1, 2, 3])
    if rare and draw(st.booleans()):
        qids = st.one_of(qids, ODD_IDS)
    out = draw(st.dictionaries(qids, row, max_size=4))
    if draw(st.booleans()):
        out = collections.OrderedDict(out)
    if rare and out and draw(st.booleans()):   # a row whose order is not its dict's storage order
        qid = next(iter(out))
        out[qid] = collections.OrderedDict(out[qid])
        if out[qid]:
            out[qid].move_to_end(next(iter(out[qid])))
    return out


@contextlib.contextmanager
def reading(reader: str):
    """Dicts read by the compiled reader of plain rows (as built), or in Python only."""
    compiled = tables.string_rows
    if reader == "python":
        tables.string_rows = None
    try:
        yield
    finally:
        tables.string_rows = compiled


# ------------------------------------------------------------------------------------------- properties


@pytest.mark.parametrize("reader", ["compiled", "python"])
@settings(max_examples=400, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(obj=dicts(), grades=st.booleans())
def test_reader_gives_the_columns_of_the_plain_reading(reader, obj, grades):
    what = "grade" if grades else "score"
    kind = "qrels" if grades else "run"
    with reading(reader):
        ok_new, new = outcome(lambda: normalized(dict_columns(obj, kind), what))
    ok_ref, ref = outcome(lambda: normalized(reference_columns(obj, kind), what))
    assert ok_new == ok_ref, (new, ref)
    if ok_new:
        same_columns(new, ref)
    else:
        assert new == ref


@pytest.mark.parametrize("reader", ["compiled", "python"])
@settings(max_examples=200, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(run=dicts(), qrels=dicts(grades=True), ties=st.sampled_from(["expected", "trec_eval", "input"]))
def test_evaluate_gives_the_results_of_the_plain_reading(reader, run, qrels, ties):
    def results(read):
        with warnings.catch_warnings(), reading(reader):
            warnings.simplefilter("ignore")
            res = tierank.evaluate(read(qrels, "qrels"), read(run, "run"), MEASURES, ties=ties,
                                   missing="zero", bounds=True)
        return res.per_query, res.lower, res.upper
    ok_new, new = outcome(lambda: results(dict_columns))
    ok_ref, ref = outcome(lambda: results(reference_columns))
    assert ok_new == ok_ref, (new, ref)
    if not ok_new:
        assert new == ref
        return
    for a, b in zip(new, ref):
        assert a.index.tolist() == b.index.tolist()
        assert a.equals(b)


def test_a_dict_run_evaluates_as_its_plain_reading_with_every_tie_mode():
    rng = np.random.default_rng(3)
    run = {f"q{q}": {f"d{d}": float(rng.integers(0, 3)) for d in rng.choice(50, 30, replace=False)}
           for q in range(20)}
    qrels = {f"q{q}": {f"d{d}": int(rng.integers(0, 3)) for d in rng.choice(50, 10, replace=False)}
             for q in range(20)}
    for ties in tierank.TIE_MODES:
        new = tierank.evaluate(qrels, run, MEASURES, ties=ties, seed=1)
        ref = tierank.evaluate(reference_columns(qrels, "qrels"), reference_columns(run, "run"), MEASURES,
                               ties=ties, seed=1)
        assert new.per_query.equals(ref.per_query), ties


# ------------------------------------------------------------------------------------------- examples


def test_the_compiled_reader_is_built():
    # `pip install` builds it with the machine's C compiler (setup.py); where that failed, dicts are read
    # in Python: the same columns, about twice as slowly
    assert tables.string_rows is not None, "tierank.io.rowreader was not built: is a C compiler installed?"


def test_the_compiled_reader_gives_the_buffers_of_the_keys_and_values():
    rows = [{"d1": 0.5, "δοκ": -0.0, "": float("inf")}, {"d1": 2.0}]
    offsets, data, values, kind = tables.string_rows(rows)
    keys = ["d1", "δοκ", "", "d1"]
    texts = [k.encode("utf-8") for k in keys]
    assert data == b"".join(texts) and kind == "f"
    assert np.frombuffer(offsets, dtype=np.int32).tolist() == np.cumsum([0] + [len(t) for t in texts]).tolist()
    assert np.frombuffer(values, dtype=np.float64).tobytes() == np.array([0.5, -0.0, np.inf, 2.0]).tobytes()
    assert tables.string_rows([{"a": 2 ** 63 - 1, "b": -2 ** 63}])[2:] == (
        np.array([2 ** 63 - 1, -2 ** 63], dtype=np.int64).tobytes(), "i")


@pytest.mark.parametrize("rows", [
    [{"a": 0.5, "b": 1}], [{"a": 1, "b": 0.5}], [{"a": True}], [{"a": np.float64(0.5)}], [{"a": 2 ** 63}],
    [{"a": -2 ** 63 - 1}], [{Text("a"): 0.5}], [{"\ud800": 0.5}], [{1: 0.5}], [collections.OrderedDict(a=0.5)],
    [{"a": 0.5}, collections.defaultdict(float, b=0.5)], [{}], [], [{"a": None}], [{"a": "0.5"}]])
def test_the_compiled_reader_leaves_other_rows_to_python(rows):
    assert tables.string_rows(rows) is None


def test_typed_columns_where_the_dict_holds_plain_types():
    cols = dict_columns({"q1": {"a": 0.5, "b": 0.25}, "q2": {}, "q3": {"a": 1.0}}, "run")
    assert cols.query.to_pylist() == ["q1", "q1", "q3"]   # an empty row has no row, nor id to check
    assert cols.doc.to_pylist() == ["a", "b", "a"]
    assert cols.value.dtype == np.float64 and cols.unique_pairs
    ints = dict_columns({1: {10: 3, 11: 4}}, "run")
    assert ints.query.tolist() == [1, 1] and ints.doc.tolist() == [10, 11] and ints.value.dtype == np.int64


@pytest.mark.parametrize("row", [{"a": 0.5, "b": True}, {"a": 0.5, "b": np.float32(0.5)}, {"a": 0.5, "b": None},
                                 {"a": 1, "b": 2 ** 64}, {"a": float("nan")}])
def test_other_values_are_read_as_objects(row):
    assert dict_columns({"q1": row}, "run").value.dtype == object


def test_a_dict_whose_iteration_is_its_own_is_not_taken_for_unique_pairs():
    class Listed(dict):
        def keys(self):
            return list(super().keys())
    assert not dict_columns({"q1": Listed(a=1.0)}, "run").unique_pairs
    assert dict_columns(collections.defaultdict(dict, q1={"a": 1.0}), "run").unique_pairs


def test_columns_of_a_dict_evaluate_alike_twice():
    # the reader's hashes of the ids become codes in the first join: a later join hashes the ids again
    run = {"q1": {"a": 0.5, "b": 0.2, "c": 0.1}, "q2": {"a": 0.3, "b": 0.3}}
    qrels = {"q1": {"b": 1}, "q2": {"b": 1, "a": 2}}
    cols = dict_columns(run, "run")
    expected = tierank.evaluate(qrels, reference_columns(run, "run"), MEASURES).per_query
    assert tierank.evaluate(qrels, cols, MEASURES).per_query.equals(expected)
    assert tierank.evaluate(qrels, cols, MEASURES).per_query.equals(expected)
    assert tierank.evaluate(qrels, cols, ["map"], ties="trec_eval").per_query.loc["q1", "map"] == 0.5


def test_errors_name_the_query_as_before():
    with pytest.raises(tierank.InputError, match=r"score of document 'b' for query 'q2' is NaN") as err:
        tierank.evaluate({"q2": {"a": 1}}, {"q1": {"a": 0.5}, "q2": {"a": 0.5, "b": float("nan")}}, ["map"])
    assert err.value.query == "q2"
    with pytest.raises(tierank.InputError, match=r"the run must map each query id to a dict .* query 'q2' "
                                                 r"maps to list"):
        tierank.evaluate({"q1": {"a": 1}}, {"q1": {"a": 0.5}, "q2": [("a", 0.5)]}, ["map"])
    with pytest.raises(tierank.InputError, match=r"the document ids of the run: a mix of types \(str 'a' first, "
                                                 r"int 2 here\).* \(query 'q1'\)"):
        tierank.evaluate({"q1": {"a": 1}}, {"q1": {"a": 0.5, 2: 0.5}}, ["map"])


def test_the_drop_in_open_ties_counted_on_the_head_agree_with_a_full_count():
    rng = np.random.default_rng(5)
    run = {}
    for q in range(60):
        n = int(rng.integers(1, 300))
        scores = rng.integers(0, int(rng.integers(1, 40)), n).astype(float)
        run[f"q{q}"] = {f"d{d}": float(s) for d, s in enumerate(scores)}
    qrels = {q: {"d0": 1} for q in run}
    ev = drop_in.RelevanceEvaluator(qrels, {"P.5,10,100", "ndcg_cut.20"})
    ev.evaluate(run)
    for key, k in (("P_5", 5), ("P_10", 10), ("P_100", 100), ("ndcg_cut_20", 20)):
        expected = []
        for q, docs in run.items():   # the k-th best score equals the lowest one
            s = sorted(np.float32(v) for v in docs.values())[::-1]
            if k <= len(s) and s[k - 1] == s[-1]:
                expected.append(q)
        assert ev.open_ties[key] == expected, key


@pytest.mark.parametrize("run, where", [
    ({"q1": {"a\udc80b": 0.5}}, r"the document ids of the run: 'a\\udc80b' .* \(query 'q1'\)"),
    ({"q\ud800": {"a": 0.5}}, r"the query ids of the run: 'q\\ud800' .* \(query 'q\\ud800'\)"),
    (Columns(query=np.array(["q1", "q1"]), doc=np.array(["a", "b\udc80"]), value=np.array([1.0, 2.0]),
             source="run"), r"the run's 'doc_id' column: 'b\\udc80' .* \(row 1\)"),
    (Columns(query=np.array(["q1", "q1"], dtype=object), doc=np.array(["a", "b\udc80"], dtype=object),
             value=np.array([1.0, 2.0]), source="run"), r"the run's 'doc_id' column: 'b\\udc80' .* \(row 1\)")])
def test_an_id_with_a_lone_surrogate_is_refused_naming_it(run, where):
    # such a str (bytes decoded with errors="surrogateescape") has no UTF-8 form: pyarrow's conversion
    # raised a UnicodeEncodeError (a traceback) before
    with pytest.raises(tierank.InputError, match=where + "$") as err:
        tierank.evaluate({"q1": {"a": 1}}, run, ["map"])
    assert "holds a lone surrogate, which is not text (it has no UTF-8 form)" in str(err.value)


@pytest.mark.parametrize("reader", ["compiled", "python"])
@settings(max_examples=100, deadline=None)
@given(rows=st.lists(st.dictionaries(STR_IDS, TIED_FLOATS, min_size=1, max_size=5), min_size=1, max_size=4),
       which=st.integers(0, 3), grow=st.booleans())
def test_a_dict_changed_while_it_is_read_is_refused(reader, rows, which, grow):
    # rows counted, then one grows or shrinks before its keys are read (another thread): the columns would
    # not line up (a ValueError from numpy's broadcasting, deep in the join, before)
    run = {f"q{i}": dict(row) for i, row in enumerate(rows)}
    row = run[f"q{which % len(run)}"]
    new_key = next(k for k in ("new", "new2", "new3", "new4", "new5", "new6") if k not in row)

    def change():
        if grow:
            row[new_key] = 0.5
        else:
            row.pop(next(iter(row)))
    compiled, typed_ids = tables.string_rows, tables._typed_ids
    changed = []

    def first_change_then(read):   # the change comes once, just before the first read of ids
        def reading(ids):
            if not changed:
                changed.append(change())
            return read(ids)
        return reading
    try:
        if reader == "compiled":
            tables.string_rows = first_change_then(compiled)
        else:
            tables.string_rows = None
            tables._typed_ids = first_change_then(typed_ids)
        with pytest.raises(tierank.InputError, match=r"^the run dict changed while it was being read"):
            dict_columns(run, "run")
    finally:
        tables.string_rows, tables._typed_ids = compiled, typed_ids
