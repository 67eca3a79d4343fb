"""Columns: one table of (query, document, value) rows, checked and normalised before any join.

Whatever the input was (a dict, a DataFrame of any dtype, a pyarrow array, a TREC file), the join sees
only two kinds of ids and one kind of value, so that no fast path downstream can meet a case it was not
written for. The rules, in the order they are checked:

* **Ids are never missing.** ``None``, ``NaN``, ``pd.NA`` or an Arrow null as a query or document id is
  an :class:`~tierank.InputError` naming the column and the first row (in a dict: the query).
* **Ids are integers or strings.** Integers (any numpy or pandas integer dtype, Python ints, floats that
  are whole numbers, e.g. an integer column pandas turned into floats) become an int64 array; strings
  (``object``, ``str``, ``string[pyarrow]``, categorical, Arrow ``string``/``large_string``/
  ``string_view``/``dictionary<string>``) become a pyarrow string array. Integers beyond the int64 range,
  fractional floats, booleans, bytes and columns mixing integers with strings are errors that say what to
  do. Categorical columns count as the kind of their values.
* **Run and qrels agree.** Query ids, and document ids, are of the same kind in the run and in the
  qrels; ``1`` never matches ``"1"``: :func:`check_same_id_kinds` raises an error naming both dtypes.
* **Values are real numbers.** Scores and grades are numbers (numpy numeric dtypes, Python ints and
  floats, numpy scalars, ``Decimal``, ``Fraction``, Arrow decimals); strings, datetimes and complex
  numbers are errors, as are missing values and NaN. Booleans are accepted as grades (``True`` = 1:
  binary relevance labels) but not as scores. Infinite scores are valid (they tie with each other);
  infinite grades are not.
* **Values are exact in float64.** A score or grade that float64 cannot hold exactly (a long double
  such as ``1 + 2**-60``, an integer beyond 2**53 such as ``2**53 + 1``, ``Decimal("0.1")``) is an error
  naming it, rather than a silent tie with its neighbour (:func:`tierank.data.numbers.exact_float64`,
  the rule of every input path). Integer scores are kept as integers.
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from decimal import Decimal
from numbers import Integral, Real
from typing import Any

import numpy as np
import pyarrow as pa

from ..errors import InputError
from .numbers import exact_float64, inexact_problem

__all__ = ["Columns", "normalized", "check_same_id_kinds", "is_integer_ids", "check_trec_eval_grades"]

_INT64_MAX = 2 ** 63 - 1


@dataclass(repr=False, eq=False)
class Columns:
    """One table of (query, doc, value) rows, with where each row came from for error messages.

    Before :func:`normalized`: ids and values as given (numpy arrays, pandas or pyarrow arrays).
    After: ids are an int64 numpy array or a pyarrow string array (no nulls), values a float64 array
    (integer scores stay integers).

    A reader that knows more says so, for the join: ``unique_pairs`` (no (query, document) pair twice:
    a dict's keys), ``query_groups`` (the query id array and the rows of each group of one query) and
    ``doc_hashes`` (the document ids' hashes, started on a worker thread). The join takes the last two
    only for the very arrays they describe (not for a subset, nor once normalising made new arrays).
    """

    query: Any
    doc: Any
    value: Any
    source: str                       # "run", "qrels" or a file name
    lines: np.ndarray | None = None   # 1-based line numbers, for files
    names: tuple[str, str, str] = ("query_id", "doc_id", "value")   # the columns as the user named them
    from_dict: bool = False           # rows of a {query: {doc: value}} dict: name the query, not the row
    dtypes: tuple[str, str] = ("", "")   # the query and doc id dtypes as given (set by normalized())
    trec_eval_grades: np.ndarray | None = None   # qrels text: each grade as trec_eval reads it (C atol)
    unique_pairs: bool = False        # no (query, document) pair repeats (the rows of a dict: its keys)
    doc_hashes: Any = None            # SharedHashes of ``doc`` started by the reader (the join's first step)
    query_groups: Any = None          # (query ids, rows per group of one query) set by a reader that knows them

    def where(self, i: int) -> dict:
        """InputError keywords locating row ``i`` in a file."""
        if self.lines is not None:
            return {"file": self.source, "line": int(self.lines[i])}
        return {}

    def label(self, ids: Any, i: int) -> Any:
        """Id ``i`` of ``ids`` as a plain Python value."""
        value = ids[int(i)]
        if isinstance(value, pa.Scalar):
            return value.as_py()
        return value.item() if isinstance(value, np.generic) else value

    def row_text(self, i: int) -> str:
        """Where row ``i`` is, in words: ``line 7``, ``row 3`` (0-based, as ``df.iloc``), or the query."""
        if self.lines is not None:
            return f"line {int(self.lines[i])}"
        if self.from_dict:
            return f"query {self.label(self.query, i)!r}"
        return f"row {int(i)}"


# ----------------------------------------------------------------------------------------------- ids


def is_integer_ids(ids: Any) -> bool:
    """Whether normalised ids are integers (else they are a pyarrow string array)."""
    return isinstance(ids, np.ndarray)


def _describe(values: Any) -> str:
    dtype = getattr(values, "dtype", None)
    if dtype is None and isinstance(values, (pa.Array, pa.ChunkedArray)):
        return f"arrow {values.type}"
    return str(dtype) if dtype is not None else type(values).__name__


def _id_error(cols: Columns, column: int, i: int, problem: str) -> InputError:
    what = ("query id", "document id")[column]
    where = f"the {what}s of the {_table(cols)}" if cols.from_dict or cols.lines is not None else \
        f"the {_table(cols)}'s {cols.names[column]!r} column"
    return InputError(f"{where}: {problem} ({cols.row_text(i)})", **cols.where(i))


def _table(cols: Columns) -> str:
    return cols.source if cols.source in ("run", "qrels") else f"file {cols.source}"


_UNSHOWN = object()


def _null_error(cols: Columns, column: int, nulls: np.ndarray, value: Any = _UNSHOWN) -> InputError:
    i = int(np.flatnonzero(nulls)[0])
    shown = f" ({value!r})" if value is not _UNSHOWN else ""
    what = ("query", "document")[column]
    return _id_error(cols, column, i, f"a missing id{shown}; every row needs a {what} id")


def _integer_ids_from_float(values: np.ndarray, cols: Columns, column: int) -> np.ndarray:
    nan = np.isnan(values)
    if nan.any():
        raise _null_error(cols, column, nan, float("nan"))
    bad = values != np.floor(values)
    if bad.any():
        i = int(np.flatnonzero(bad)[0])
        raise _id_error(cols, column, i, f"{values[i]!r} is not an integer or a string (ids are integers "
                                         "or strings; floats are accepted only when they are whole numbers)")
    wide = np.abs(values) > 2.0 ** 53   # a float beyond 2**53 may already have lost digits of the id
    if wide.any():
        i = int(np.flatnonzero(wide)[0])
        raise _id_error(cols, column, i, f"the float {values[i]!r} is beyond 2**53, where floats cannot hold "
                                         "every integer: give these ids as integers or strings")
    return values.astype(np.int64)


def _too_wide(cols: Columns, column: int, i: int, value: Any) -> InputError:
    return _id_error(cols, column, i, f"the integer {value!r} is beyond the int64 range; give these ids as "
                                      "strings in both the run and the qrels (e.g. df[col].astype(str))")


def _ids_from_numpy(values: np.ndarray, cols: Columns, column: int) -> Any:
    kind = values.dtype.kind
    if kind == "i":
        return values.astype(np.int64, copy=False)
    if kind == "u":
        if len(values) and int(values.max()) > _INT64_MAX:
            i = int(np.argmax(values))
            raise _too_wide(cols, column, i, int(values[i]))
        return values.astype(np.int64)
    if kind == "f":
        return _integer_ids_from_float(values.astype(np.float64, copy=False), cols, column)
    if kind == "U":
        return _text_ids(values, cols, column)
    if kind == "O":
        return _ids_from_objects(values, cols, column)
    problem = {"b": "booleans", "S": "bytes (decode them to str first, e.g. df[col].str.decode('utf-8'))",
               "M": "datetimes", "m": "timedeltas", "c": "complex numbers"}.get(kind, f"dtype {values.dtype}")
    raise _id_error(cols, column, 0, f"{problem} cannot be ids (ids are integers or strings)")


def _first_of_other_type(values: np.ndarray) -> int:
    """Index of the first value whose type differs (as an id) from the first value's (error path)."""
    def id_type(v: Any) -> str:
        if isinstance(v, bool):
            return "bool"
        return "int" if isinstance(v, Integral) else "str" if isinstance(v, str) else type(v).__name__
    first = id_type(values[0])
    for i, v in enumerate(values):   # only on the error path
        if id_type(v) != first:
            return i
    return 0


def _ids_from_objects(values: np.ndarray, cols: Columns, column: int) -> Any:
    import pandas as pd

    nulls = pd.isna(values)
    if nulls.any():
        i = int(np.flatnonzero(nulls)[0])
        raise _null_error(cols, column, nulls, values[i])
    inferred = pd.api.types.infer_dtype(values, skipna=False)
    if inferred == "empty":
        return np.zeros(0, dtype=np.int64)
    if inferred == "string":
        return _text_ids(values, cols, column)
    if inferred == "integer":
        try:
            return np.asarray(values, dtype=np.int64)
        except OverflowError:
            big = [i for i, v in enumerate(values) if not -2 ** 63 <= v <= _INT64_MAX]   # error path
            raise _too_wide(cols, column, big[0], values[big[0]]) from None
    if inferred in ("floating", "mixed-integer-float"):
        return _integer_ids_from_float(np.asarray(values, dtype=np.float64), cols, column)
    if inferred in ("mixed-integer", "mixed"):
        i = _first_of_other_type(values)
        raise _id_error(cols, column, i, f"a mix of types ({type(values[0]).__name__} {values[0]!r} first, "
                                         f"{type(values[i]).__name__} {values[i]!r} here); use one kind "
                                         "of id, integers or strings, in a column")
    problem = {"bytes": "bytes (decode them to str first)", "boolean": "booleans"}.get(inferred, inferred)
    raise _id_error(cols, column, 0, f"{problem} cannot be ids (ids are integers or strings)")


def _text_ids(values: np.ndarray, cols: Columns, column: int) -> Any:
    """String ids as Arrow text, which is UTF-8: an id holding a lone surrogate (a str UTF-8 cannot
    encode, e.g. from bytes decoded with errors="surrogateescape") is refused, naming it."""
    try:
        return pa.array(values, type=pa.large_string())
    except UnicodeError as err:   # (from numpy's fixed-width text pyarrow raises a decoding error)
        i = next((i for i, v in enumerate(values) if not _has_utf8(v)), None)   # error path
        if i is None:
            raise _id_error(cols, column, 0, f"not text that UTF-8 can hold ({err})") from None
        raise _id_error(cols, column, i, f"{str(values[i])!r} holds a lone surrogate, which is not text (it has no "
                                         "UTF-8 form); decode the ids' bytes without errors='surrogateescape'"
                        ) from None


def _has_utf8(text: str) -> bool:
    try:
        str(text).encode("utf-8")
    except UnicodeEncodeError:
        return False
    return True


def _ids_from_arrow(values: Any, cols: Columns, column: int) -> Any:
    if isinstance(values, pa.ChunkedArray):   # one chunk (pandas' usual case) is taken as it is: no copy
        arr = values.chunk(0) if values.num_chunks == 1 else values.combine_chunks()
    else:
        arr = values
    if arr.null_count:
        raise _null_error(cols, column, arr.is_null().to_numpy(zero_copy_only=False))
    t = arr.type
    if pa.types.is_dictionary(t):
        return _ids_from_arrow(arr.dictionary_decode(), cols, column)
    if pa.types.is_string(t) or pa.types.is_large_string(t):
        return arr
    if pa.types.is_string_view(t):
        try:
            return arr.cast(pa.large_string())
        except pa.ArrowNotImplementedError:   # pyarrow < 17
            raise _id_error(cols, column, 0, "string_view ids cannot be read by this pyarrow; upgrade "
                                             "pyarrow or cast the column to string") from None
    if pa.types.is_integer(t) or pa.types.is_floating(t):
        return _ids_from_numpy(arr.to_numpy(zero_copy_only=False), cols, column)
    if pa.types.is_binary(t) or pa.types.is_large_binary(t) or pa.types.is_binary_view(t):
        raise _id_error(cols, column, 0, "bytes cannot be ids; decode them to strings first")
    raise _id_error(cols, column, 0, f"arrow type {t} cannot be ids (ids are integers or strings)")


def _normalized_ids(values: Any, cols: Columns, column: int) -> Any:
    if isinstance(values, (pa.Array, pa.ChunkedArray)):
        return _ids_from_arrow(values, cols, column)
    if isinstance(values, np.ndarray):   # (pandas is imported for the other inputs only: start-up time)
        return _ids_from_numpy(np.asarray(values), cols, column)
    import pandas as pd

    if isinstance(values, (pd.Series, pd.Index)):
        values = values.array
    if isinstance(values, pd.arrays.NumpyExtensionArray):
        values = values.to_numpy()
    elif isinstance(values, pd.Categorical):
        values = np.asarray(values, dtype=object)
    elif isinstance(values, pd.api.extensions.ExtensionArray):
        try:
            return _ids_from_arrow(pa.array(values), cols, column)   # string, Arrow-backed, nullable ints
        except (pa.ArrowException, TypeError, ValueError, OverflowError):
            values = np.asarray(values, dtype=object)
    return _ids_from_numpy(np.asarray(values), cols, column)


def _id_kind(ids: Any) -> str:
    return "integers" if is_integer_ids(ids) else "strings"


def check_same_id_kinds(run: Columns, qrels: Columns) -> tuple[Columns, Columns]:
    """Raise an InputError when query ids, or document ids, are integers on one side and strings on the
    other (``1`` never matches ``"1"``). An empty table takes the other's kind."""
    for column, what in ((0, "query"), (1, "document")):
        a, b = (run.query, qrels.query) if column == 0 else (run.doc, qrels.doc)
        if _id_kind(a) == _id_kind(b):
            continue
        if len(a) == 0 or len(b) == 0:   # nothing to match: give the empty side the other's kind
            empty = np.zeros(0, np.int64) if is_integer_ids(a if len(a) else b) else pa.array([], pa.large_string())
            if len(a) == 0:
                run = replace(run, **{("query", "doc")[column]: empty})
            else:
                qrels = replace(qrels, **{("query", "doc")[column]: empty})
            continue
        convert = (f"qrels[{qrels.names[column]!r}].astype(int)" if is_integer_ids(a) else
                   f"qrels[{qrels.names[column]!r}].astype(str)")
        raise InputError(f"the {what} ids of the run are {_id_kind(a)} ({run.dtypes[column]}) but those of "
                         f"the qrels are {_id_kind(b)} ({qrels.dtypes[column]}), so none would match "
                         f"(1 is not '1'); convert one side, e.g. {convert}")
    return run, qrels


# -------------------------------------------------------------------------------------------- values


def _value_error(cols: Columns, what: str, i: int, problem: str) -> InputError:
    doc, query = cols.label(cols.doc, i), cols.label(cols.query, i)
    if what == "score" and cols.names[2] == "rank":   # a run given by ranks (score = -rank)
        what = "rank"
    return InputError(f"{what} of document {doc!r} for query {query!r} {problem}", query=query, **cols.where(i))


def _bad_value_hint(v: Any, what: str) -> str:
    if isinstance(v, bool):
        return "is a boolean: booleans are not scores (cast to int if 0/1 is meant)"
    if isinstance(v, str):
        return f"is the string {v!r}, not a number (convert the column to numbers first)"
    return f"is {type(v).__name__} {v!r}, not a real number"


def _is_number(v: Any, allow_bool: bool) -> bool:
    if isinstance(v, (bool, np.bool_)):
        return allow_bool
    return isinstance(v, (Real, np.number, Decimal)) and not isinstance(v, np.complexfloating)


def _values_from_objects(values: np.ndarray, cols: Columns, what: str, allow_bool: bool) -> np.ndarray:
    """Objects as int64 when they are all integers within int64, else the objects themselves once each
    is known to be a real number (converted by :func:`~tierank.data.numbers.exact_float64`)."""
    import pandas as pd

    nulls = pd.isna(values)
    if nulls.any():
        i = int(np.flatnonzero(nulls)[0])
        v = values[i]
        raise _value_error(cols, what, i, "is NaN" if isinstance(v, float) else f"is missing ({v!r})")
    inferred = pd.api.types.infer_dtype(values, skipna=False)
    if inferred == "empty":
        return np.zeros(0)
    if inferred == "integer":
        try:
            return np.asarray(values, dtype=np.int64)
        except OverflowError:
            return values   # beyond int64: exact as float64, or an error
    if inferred in ("floating", "mixed-integer-float", "decimal") or (inferred == "boolean" and allow_bool):
        return values
    for i, v in enumerate(values):   # error path: name the first value that is not a number
        if not _is_number(v, allow_bool):
            raise _value_error(cols, what, i, _bad_value_hint(v, what))
    return values   # e.g. numpy scalars of mixed widths, fractions


def _float64_values(values: np.ndarray, cols: Columns, what: str) -> np.ndarray:
    """``values`` as float64 when float64 holds every one exactly, else an InputError naming the first
    that it does not (:func:`~tierank.data.numbers.exact_float64`: one rule for every input)."""
    out, lost = exact_float64(values)
    if lost is not None:
        i = int(np.argmax(lost))
        ranked = what == "score" and cols.names[2] == "rank"   # a run given by ranks: score = -rank
        raise _value_error(cols, what, i, inexact_problem(-values[i] if ranked else values[i]))
    return out


def _values_from_pandas(values: Any, cols: Columns, what: str) -> Any:
    """Values of pandas or Arrow as numpy arrays (an InputError for a missing one)."""
    import pandas as pd

    if isinstance(values, (pd.Series, pd.Index)):
        values = values.array
    if isinstance(values, (pa.Array, pa.ChunkedArray)):
        values = values.to_pandas().array if values.null_count else values.to_numpy(zero_copy_only=False)
    if isinstance(values, pd.api.extensions.ExtensionArray):
        if values.isna().any():
            i = int(np.flatnonzero(np.asarray(values.isna()))[0])
            raise _value_error(cols, what, i, "is missing")
        if isinstance(values, pd.arrays.NumpyExtensionArray):
            values = values.to_numpy()   # in its own dtype (long doubles stay long: checked below)
        else:
            kind = getattr(values.dtype, "kind", "O")
            values = values.to_numpy(dtype={"f": np.float64, "i": np.int64, "u": np.uint64,
                                            "b": bool}.get(kind, object))
    return values


def _normalized_values(cols: Columns, what: str) -> np.ndarray:
    values = cols.value
    allow_bool = what == "grade"
    if not isinstance(values, np.ndarray):   # (pandas is imported for these inputs only: start-up time)
        values = _values_from_pandas(values, cols, what)
    values = np.asarray(values)
    kind = values.dtype.kind
    if kind == "O":
        values = _values_from_objects(values, cols, what, allow_bool)
        kind = values.dtype.kind
    if kind == "b" and not allow_bool:
        raise _value_error(cols, what, 0, _bad_value_hint(True, what))
    if kind not in "biufO":
        problem = {"U": "strings", "S": "bytes", "M": "datetimes", "m": "timedeltas",
                   "c": "complex numbers"}.get(kind, f"of dtype {values.dtype}")
        first = values[0] if len(values) else None
        raise _value_error(cols, what, 0, f"is {first!r}: {what}s are {problem}, not real numbers")
    if kind in "iu" and what == "score" and (kind == "i" or not len(values) or int(values.max()) <= _INT64_MAX):
        if len(values) and (int(values.max()) > 2 ** 53 or int(values.min()) < -(2 ** 53)):
            _float64_values(values, cols, what)   # beyond 2**53 some integers have no float64 of their own
        return values.astype(np.int64, copy=False)   # integer scores stay integers (exact in float64 too)
    out = _float64_values(values, cols, what)
    for test, problem in ((np.isnan, "is NaN"), (np.isinf, "is infinite")):
        if what == "score" and test is np.isinf:
            continue   # infinite scores are valid and tie with each other
        bad = np.flatnonzero(test(out))
        if bad.size:
            raise _value_error(cols, what, int(bad[0]), problem)
    return out


def check_trec_eval_grades(cols: Columns) -> None:
    """Raise an InputError at the first grade trec_eval would read as another number (``ties="trec_eval"``).

    trec_eval reads a qrels grade with C's ``atol``: the integer its text begins with (``"0.5"`` is 0,
    ``"2e1"`` is 2). So that ``ties="trec_eval"`` reproduces trec_eval, each grade must be that number:
    in a qrels file, the grade its text spells (``cols.trec_eval_grades``, recorded by the reader); in a
    dict or a table, a whole number (trec_eval's grades are integers; pytrec_eval refuses others). Fractional
    grades are valid in every other tie mode.

    ``cols``: normalised qrels (float64 grades).

    >>> qrels = normalized(Columns(query=["q", "q"], doc=["a", "b"], value=[2, 0.5], source="qrels"), "grade")
    >>> check_trec_eval_grades(qrels)
    Traceback (most recent call last):
    ...
    tierank.errors.InputError: grade of document 'b' for query 'q' is 0.5, which trec_eval reads as 0 (it reads grades as integers), so ties='trec_eval' cannot reproduce it: make the grades whole numbers, or use another tie mode
    """
    grades = cols.value
    read = cols.trec_eval_grades
    if read is None:
        read = np.trunc(grades)   # a C conversion of a number to long: toward zero
        bad = read != grades
    else:
        bad = read.astype(np.float64) != grades
        big = np.flatnonzero(~bad & (np.abs(read) > 2 ** 53))   # beyond 2**53 compare exactly (rare)
        bad[big] = [int(read[i]) != int(grades[i]) for i in big]
    if bad.any():
        i = int(np.argmax(bad))
        raise _value_error(cols, "grade", i, f"is {float(grades[i])!r}, which trec_eval reads as {int(read[i])} "
                                             "(it reads grades as integers), so ties='trec_eval' cannot reproduce "
                                             "it: make the grades whole numbers, or use another tie mode")


def normalized(cols: Columns, what: str, *, trec_eval: bool = False) -> Columns:
    """``cols`` with ids and values checked and normalised (see the module docstring).

    ``what``: ``"score"`` (a run) or ``"grade"`` (qrels), for the rules on values and the messages.
    ``trec_eval``: grades are read for ``ties="trec_eval"`` (:func:`check_trec_eval_grades`).

    >>> c = normalized(Columns(query=["q1", "q1"], doc=[3, 4.0], value=[0.5, True], source="qrels"), "grade")
    >>> c.doc.tolist(), c.value.tolist()
    ([3, 4], [0.5, 1.0])
    >>> normalized(Columns(query=["q1", None], doc=[1, 2], value=[1, 0], source="run"), "score")
    Traceback (most recent call last):
    ...
    tierank.errors.InputError: the run's 'query_id' column: a missing id (None); every row needs a query id (row 1)
    """
    # the ids' dtypes as given, for messages; a dict's are Python objects (however they were read)
    dtypes = ("object", "object") if cols.from_dict else (_describe(cols.query), _describe(cols.doc))
    cols = replace(cols, dtypes=dtypes)
    query = _normalized_ids(cols.query, cols, 0)
    doc = _normalized_ids(cols.doc, cols, 1)
    cols = replace(cols, query=query, doc=doc)
    cols = replace(cols, value=_normalized_values(cols, what))
    if trec_eval and what == "grade":
        check_trec_eval_grades(cols)
    return cols
