"""numpy <-> Arrow arrays without pandas, and Arrow's compute kernels without ``pyarrow.compute``.

pyarrow's own bridges (``pa.array`` of a numpy array or a list, ``Array.to_numpy``, a Python scalar given
to a compute function) import pandas on first use, about 0.1 s, which the command line cannot pay at
start-up (docs/architecture.md, "Start-up"). These functions read and write the Arrow buffers directly:
numbers and booleans without nulls, and strings; the results are the arrays pyarrow's bridges give.

Importing ``pyarrow.compute`` builds a documented wrapper for each of Arrow's ~300 kernels (about 30 ms,
a quarter of ``import numpy, pyarrow.csv``); :func:`compute` calls a kernel by name as those wrappers
do (``pyarrow.compute.call_function``), and so do the Array methods it stands for here (``take``,
``cast``, ``filter``, ``dictionary_encode``), which import ``pyarrow.compute`` on first use.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import pyarrow as pa

try:   # the module behind pyarrow.compute's wrappers (pyarrow.compute.call_function is this function)
    from pyarrow._compute import CastOptions, MatchSubstringOptions, SetLookupOptions, call_function
except ImportError:   # pragma: no cover   (a pyarrow that moved them: the public module has them too)
    from pyarrow.compute import CastOptions, MatchSubstringOptions, SetLookupOptions, call_function

__all__ = ["to_numpy", "from_numpy", "to_objects", "compute", "cast", "take", "index_in", "starts_with", "contains",
           "matches"]


def compute(name: str, *args: Any, options: Any = None) -> Any:
    """``pyarrow.compute.<name>(*args)``: Arrow's kernel ``name`` on Arrow arrays and scalars (``options``:
    its options object, None for the kernel's defaults).

    >>> compute("not_equal", from_numpy(np.array([1, 2])), from_numpy(np.array([1, 3]))).to_pylist()
    [False, True]
    """
    return call_function(name, list(args), options)


def cast(arr: Any, type: Any) -> Any:
    """``arr.cast(type)`` (a safe cast; ``arr`` itself when it has that type already)."""
    return arr if arr.type == type else compute("cast", arr, options=CastOptions.safe(type))


def take(arr: Any, rows: Any) -> Any:
    """``arr.take(rows)``: the values at ``rows`` (a numpy array of indices, or an Arrow one)."""
    return compute("take", arr, rows if isinstance(rows, (pa.Array, pa.ChunkedArray)) else from_numpy(rows))


def index_in(values: Any, value_set: Any) -> Any:
    """``pyarrow.compute.index_in``: where each of ``values`` is in ``value_set`` (null where it is not)."""
    return compute("index_in", values, options=SetLookupOptions(value_set))


def starts_with(strings: Any, prefix: str) -> Any:
    """``pyarrow.compute.starts_with``: whether each string starts with ``prefix``."""
    return compute("starts_with", strings, options=MatchSubstringOptions(prefix))


def matches(strings: Any, pattern: str) -> Any:
    """``pyarrow.compute.match_substring_regex``: whether each string matches the regular expression
    ``pattern`` (RE2 syntax) somewhere (anchor it with ``^`` / ``$``)."""
    return compute("match_substring_regex", strings, options=MatchSubstringOptions(pattern))


def contains(strings: Any, text: str) -> Any:
    """``pyarrow.compute.match_substring``: whether each string contains ``text``."""
    return compute("match_substring", strings, options=MatchSubstringOptions(text))


def to_numpy(arr: Any, null: Any = None) -> np.ndarray:
    """An Arrow array (or chunked array) of numbers or booleans as a numpy array: a read-only view of its
    buffer where it can be (booleans are unpacked); nulls become ``null`` (an error without it).

    >>> to_numpy(pa.chunked_array([[1, 2], [3]])).tolist(), to_numpy(pa.array([True, None]), null=False).tolist()
    ([1, 2, 3], [True, False])
    """
    if isinstance(arr, pa.ChunkedArray):
        arr = arr.combine_chunks()
    n, offset = len(arr), arr.offset
    validity, data = arr.buffers()[:2]
    if pa.types.is_boolean(arr.type):
        bits = np.zeros(0, np.uint8) if data is None else np.frombuffer(data, dtype=np.uint8)
        out = np.unpackbits(bits, count=offset + n, bitorder="little")[offset:].astype(bool)
    else:
        dtype = np.dtype(arr.type.to_pandas_dtype())   # (a numpy dtype for numbers: no pandas)
        out = np.zeros(0, dtype) if not n else np.frombuffer(data, dtype=dtype, count=n, offset=offset * dtype.itemsize)
    if arr.null_count:
        if null is None:
            raise ValueError("an Arrow array with nulls has no numpy form here (give `null`)")
        valid = np.unpackbits(np.frombuffer(validity, dtype=np.uint8), count=offset + n,
                              bitorder="little")[offset:].astype(bool)
        out = np.where(valid, out, null).astype(out.dtype)
    return out


def from_numpy(values: Any, type: Any = None) -> pa.Array:
    """A numpy array (numbers, booleans, or Python strings as objects) as an Arrow array; numbers share
    the numpy buffer. Strings become ``type`` (default ``large_string``).

    >>> from_numpy(np.array([3, 1])).type, from_numpy(np.array(["q1", "é"], dtype=object)).to_pylist()
    (DataType(int64), ['q1', 'é'])
    """
    values = np.ascontiguousarray(values)
    n = len(values)
    if values.dtype == bool:
        return pa.Array.from_buffers(pa.bool_(), n, [None, pa.py_buffer(np.packbits(values, bitorder="little"))])
    if values.dtype.kind in "iuf":
        out = pa.Array.from_buffers(pa.from_numpy_dtype(values.dtype), n, [None, pa.py_buffer(values)])
        return out if type is None else cast(out, type)
    encoded = [str(v).encode("utf-8") for v in values.tolist()]
    offsets = np.zeros(n + 1, dtype=np.int64)
    np.cumsum(np.fromiter(map(len, encoded), dtype=np.int64, count=n), out=offsets[1:])
    out = pa.Array.from_buffers(pa.large_string(), n, [None, pa.py_buffer(offsets), pa.py_buffer(b"".join(encoded))])
    return out if type is None else cast(out, type)


def to_objects(arr: Any) -> np.ndarray:
    """An Arrow array of strings (or anything) as a numpy array of Python objects.

    >>> to_objects(pa.array(["a", "b"]))
    array(['a', 'b'], dtype=object)
    """
    out = np.empty(len(arr), dtype=object)
    out[:] = arr.to_pylist()
    return out
