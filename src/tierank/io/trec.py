"""TREC run and qrels files: strict, fast readers and plain writers.

File formats (as trec_eval reads them)
--------------------------------------
run file
    ``qid Q0 docid rank score tag``: at least six fields; the second (``Q0``) and fourth (``rank``)
    fields are ignored, like any field after the sixth (trec_eval orders documents by score, never
    by the rank column). The tag of the first line is the run's name (trec_eval's ``runid``).
qrels file
    ``qid iter docid grade``: exactly four fields; ``iter`` is ignored. Grades are numbers; negative
    grades are valid (TREC marks junk pages with -2) and count as non-relevant with zero gain.
    trec_eval reads a grade's text with C's ``atol`` (``"0.5"`` is 0, ``"2e1"`` is 2); the reader
    records that reading (:func:`trec_eval_atol`), and with ``ties="trec_eval"`` a grade it differs
    from is an error naming the line (:func:`tierank.data.columns.check_trec_eval_grades`).

Other text formats (``format=``)
--------------------------------
MS MARCO run (``"msmarco"``)
    ``qid docid rank``: exactly three fields (tab-separated in MS MARCO's files); the score is
    ``-rank``: rank 1 is best, documents of equal rank tie. Ranks are finite numbers.
MS MARCO qrels (``"msmarco"``)
    ``qid 0 docid rel``, with spaces or tabs: TREC qrels.
BEIR qrels (``"beir"``)
    ``query-id corpus-id score``: exactly three fields, after a header line ``query-id corpus-id
    score`` (skipped; it still counts in line numbers).

With ``format=None`` the format is detected only where it cannot be mistaken: BEIR qrels by their header
line (tab-separated, as BEIR writes it), an MS MARCO run by a first data line of three tab-separated
fields ending with an integer (a TREC run line has at least six). Anything else is read as TREC.
:class:`TextInput` gives a file its format wherever :func:`tierank.evaluate` takes a path, and ``"-"``
is standard input.

Rules, the same for every file
------------------------------
* Fields are separated by runs of spaces and tabs; leading and trailing blanks are ignored.
* Lines end with ``\\n`` or ``\\r\\n``. Blank lines, and lines whose first field starts with ``#``
  (comments), are skipped; they still count in line numbers.
* The file may be gzip-compressed (recognised by its content, whatever its name). A UTF-8 byte order
  mark at the start is ignored.
* Anything else is an error that names the file and the line: too few (or, in qrels, too many)
  fields, a score or grade that is not a number (decimal or exponent notation such as ``2.5``,
  ``-1e-3``, ``.5``, or ``inf`` / ``infinity``; no digit separators, no non-ASCII digits: the
  numbers pyarrow and C's ``strtod`` read), a NaN score or grade, an infinite grade (infinite scores
  are valid and tie with each other), a document listed twice for one query
  (raised when the run is joined with its qrels), a file with no data line, and a file that is not
  text (a NUL or another control character, a lone carriage return, bytes that are not UTF-8).

Speed
-----
The text is split with pyarrow's CSV reader and compute kernels when pyarrow is installed, otherwise
with pandas' C parser; both give the same results and the same errors. Python loops run only to
name the offending line once an error is known.
"""

from __future__ import annotations

import csv
import gzip
import io
import os
import re
import sys
import zlib
from dataclasses import dataclass
from typing import Any, Iterable

import numpy as np
import pandas as pd

from ..data.columns import Columns, normalized
from ..errors import InputError

__all__ = [
    "read_run",
    "read_qrels",
    "read_run_columns",
    "read_qrels_columns",
    "read_run_tag",
    "write_run",
    "write_qrels",
]

#: Force one parsing engine ("pyarrow" or "pandas"); None: pyarrow (the pandas engine is a slower, independent
#: reader the tests compare it with).
ENGINE: str | None = None
#: pyarrow engine: hand ids to the join as pandas ArrowStringArrays instead of numpy object arrays.
ARROW_IDS = True

_BOM = b"\xef\xbb\xbf"
# bytes allowed in a text file: printable ASCII, tab, LF, CR, and every byte >= 0x80 (checked as UTF-8)
_TEXT_BYTES = bytes(range(0x20, 0x7F)) + b"\t\n\r" + bytes(range(0x80, 0x100))
# characters a number may contain (decimal notation, exponent, sign, inf/infinity/nan spelled in any case)
_NUMBER_CHARS = b"0123456789.+-eEiInNfFtTyYaA"


@dataclass(frozen=True)
class _Layout:
    """What one kind of file looks like."""

    kind: str                # "run" or "qrels"
    fields: str              # the field names, for messages
    min_fields: int
    max_fields: int | None   # None: extra fields are ignored
    qid: int                 # field positions
    docid: int
    value: int
    value_name: str          # "score" or "grade"
    finite: bool = False     # infinite values are errors (grades; infinite scores tie with each other)
    negate: bool = False     # the value is a rank: score = -rank
    header: tuple[str, ...] | None = None   # a first line with these fields is a header, skipped
    format: str = "trec"     # the name of the format, for messages


_RUN = _Layout("run", "qid Q0 docid rank score tag", 6, None, 0, 2, 4, "score")
_QRELS = _Layout("qrels", "qid iter docid grade", 4, 4, 0, 2, 3, "grade", finite=True)
_MSMARCO_RUN = _Layout("run", "qid docid rank", 3, 3, 0, 1, 2, "rank", finite=True, negate=True, format="msmarco")
_BEIR_QRELS = _Layout("qrels", "query-id corpus-id score", 3, 3, 0, 1, 2, "grade", finite=True,
                      header=("query-id", "corpus-id", "score"), format="beir")

#: The formats of run files: TREC (``qid Q0 docid rank score tag``) and MS MARCO (``qid<TAB>docid<TAB>rank``).
RUN_FORMATS = ("trec", "msmarco")
#: The formats of qrels files: TREC (``qid iter docid grade``; MS MARCO's qrels, with spaces or tabs, are
#: TREC qrels: ``msmarco`` is another name for it) and BEIR (``query-id<TAB>corpus-id<TAB>score``, header line).
QRELS_FORMATS = ("trec", "msmarco", "beir")
_LAYOUTS = {("run", "trec"): _RUN, ("run", "msmarco"): _MSMARCO_RUN, ("qrels", "trec"): _QRELS,
            ("qrels", "msmarco"): _QRELS, ("qrels", "beir"): _BEIR_QRELS}
#: The name of standard input in messages.
STDIN_NAME = "<stdin>"


class TextInput:
    """A run or qrels text file, or standard input (``"-"``), with its format.

    :func:`tierank.evaluate` takes it where it takes a path: ``tierank.evaluate(TextInput("qrels.tsv",
    "beir"), TextInput("-", "msmarco"), ...)`` reads BEIR qrels and an MS MARCO run from standard input
    (the ``tierank`` command's ``-`` and ``--run-format`` / ``--qrels-format``). Standard input can be read
    only once: a second read raises an InputError; a run streamed from it that is not grouped by query is
    copied to a temporary file as it is read, for the second pass (:mod:`tierank.io.stream`).

    Parameters
    ----------
    path : str or os.PathLike
        The file, or ``"-"`` for standard input.
    format : str, optional
        One of :data:`RUN_FORMATS` (a run) or :data:`QRELS_FORMATS` (qrels); None: detected from the
        first line (see :func:`read_run` and :func:`read_qrels`).

    Examples
    --------
    >>> import tempfile, os, pathlib, tierank
    >>> from tierank.io.trec import TextInput
    >>> folder = tempfile.mkdtemp()
    >>> _ = pathlib.Path(folder, "qrels.tsv").write_text("query-id\\tcorpus-id\\tscore\\nq1\\td2\\t1\\n")
    >>> _ = pathlib.Path(folder, "run.tsv").write_text("q1\\td1\\t1\\nq1\\td2\\t1\\nq1\\td3\\t3\\n")
    >>> tierank.evaluate(TextInput(os.path.join(folder, "qrels.tsv"), "beir"),
    ...                  TextInput(os.path.join(folder, "run.tsv"), "msmarco"), ["RR"]).mean
    {'RR': 0.75}
    """

    def __init__(self, path: Any, format: str | None = None) -> None:
        self.path = path
        self.format = format
        self.head: bytes | None = None   # standard input: the first bytes read (for the run's tag)
        self._read = False

    @property
    def is_stdin(self) -> bool:
        """Whether this is standard input."""
        return isinstance(self.path, str) and self.path == "-"

    @property
    def name(self) -> str:
        """The name in messages: the path, or ``<stdin>``."""
        return STDIN_NAME if self.is_stdin else _name(self.path)

    def open(self) -> Any:
        """A binary file object (standard input: once only; closing it leaves stdin open)."""
        if not self.is_stdin:
            return open(self.path, "rb")
        if self._read:
            raise InputError("standard input was already read: it can be read only once (give one of the "
                             "files as '-', once)", file=STDIN_NAME)
        self._read = True
        return _Unclosed(sys.stdin.buffer)

    def __repr__(self) -> str:
        return f"TextInput({self.path!r}, format={self.format!r})"


class _Unclosed:
    """A file object whose ``close`` does nothing (standard input stays open)."""

    def __init__(self, fh: Any) -> None:
        self._fh = fh

    def read(self, n: int = -1) -> bytes:
        return self._fh.read(n)

    def close(self) -> None:
        pass

    def __enter__(self) -> "_Unclosed":
        return self

    def __exit__(self, *exc: Any) -> None:
        pass


def check_format(format: str | None, kind: str) -> str | None:
    """``format`` if it is a known format of ``kind`` files ("run" or "qrels") or None, else an InputError."""
    choices = RUN_FORMATS if kind == "run" else QRELS_FORMATS
    if format is not None and format not in choices:
        raise InputError(f"format={format!r}: {kind} files are {', '.join(map(repr, choices))} (or None: "
                         "detected from the first line)")
    return format


def _first_data_line(head: bytes) -> bytes | None:
    """The first line of ``head`` that is not blank or a comment (None if none is complete)."""
    if head.startswith(_BOM):
        head = head[len(_BOM):]
    for raw in head.split(b"\n")[:-1] if not head.endswith(b"\n") else head.split(b"\n"):
        line = raw.rstrip(b"\r")
        stripped = line.strip(b" \t")
        if stripped and not stripped.startswith(b"#"):
            return line
    return None


def layout_of(kind: str, format: str | None, head: bytes) -> _Layout:
    """The layout of a ``kind`` file in ``format``; None: detected from ``head`` (the file's first bytes).

    Detection: BEIR qrels start with the header line ``query-id<TAB>corpus-id<TAB>score``; an MS MARCO
    run's first data line is three tab-separated fields, the third an integer (a TREC run line has at
    least six fields, so it cannot be one). Anything else is TREC.
    """
    format = check_format(format, kind)
    if format is None:
        line = _first_data_line(head if len(head) < (1 << 16) else head[: 1 << 16] + b"\n")
        format = "trec"
        if line is not None:
            fields = line.split(b"\t")
            if kind == "qrels" and [f.strip().decode("utf-8", "replace") for f in fields] == \
                    list(_BEIR_QRELS.header or ()) and not line.startswith(_BOM):
                format = "beir"
            elif kind == "run" and len(fields) == 3 and all(f and f.strip() == f for f in fields) \
                    and fields[2].lstrip(b"+-").isdigit() and fields[2].isascii():
                format = "msmarco"
    return _LAYOUTS[(kind, format)]


def _header_end(data: bytes, layout: _Layout) -> int:
    """The length of ``data``'s header line (with its line end), 0 if it has none."""
    if layout.header is None:
        return 0
    end = data.find(b"\n")
    first = data[: end if end >= 0 else len(data)].decode("utf-8", "replace")
    if [f.lower() for f in _fields(first)] == list(layout.header):
        return end + 1 if end >= 0 else len(data)
    return 0


# --------------------------------------------------------------------------------------------- bytes


def _name(path: Any) -> str:
    return os.fspath(path) if not isinstance(path, bytes) else path.decode(errors="replace")


def _line_of(data: bytes, pos: int) -> tuple[int, int]:
    """1-based (line, column) of byte offset ``pos``."""
    line = data.count(b"\n", 0, pos) + 1
    start = data.rfind(b"\n", 0, pos) + 1
    return line, pos - start + 1


def _read_bytes(path: Any) -> tuple[bytes, str]:
    """The file's bytes (gunzipped), checked to be text; raises InputError naming file and line."""
    if isinstance(path, TextInput):
        name = path.name
        with path.open() as fh:
            data = fh.read()
        if path.is_stdin:
            path.head = data[: 1 << 16]
    else:
        name = _name(path)
        with open(path, "rb") as fh:
            data = fh.read()
    if data[:2] == b"\x1f\x8b":
        try:
            data = gzip.decompress(data)
        except (OSError, EOFError, zlib.error) as err:
            raise InputError(f"not a valid gzip file ({err})", file=name) from None
    if data.startswith(_BOM):
        data = data[len(_BOM):]
    _check_text(data, name)
    return data, name


def _check_text(data: bytes, name: str) -> None:
    """Raise InputError at the first byte that is not text: a control character (NUL included), a
    carriage return not followed by a line feed, or a byte sequence that is not UTF-8."""
    problems: list[tuple[int, str]] = []
    bad = data.translate(None, _TEXT_BYTES)
    if bad:
        pos = min(data.find(bytes([b])) for b in set(bad))
        problems.append((pos, "NUL byte" if data[pos] == 0 else f"control character 0x{data[pos]:02x}"))
    if b"\r" in data and data.count(b"\r") != data.count(b"\r\n"):   # `in` is a fast scan; counting is not
        pos = next(i for i in _find_all(data, b"\r") if data[i + 1:i + 2] != b"\n")
        problems.append((pos, "carriage return without a line feed (old Mac line endings are not supported)"))
    if not data.isascii():
        try:
            data.decode("utf-8")
        except UnicodeDecodeError as err:
            problems.append((err.start, f"byte 0x{data[err.start]:02x} is not UTF-8"))
    if problems:
        pos, what = min(problems)
        line, col = _line_of(data, pos)
        raise InputError(f"not a text file: {what}, at column {col}", file=name, line=line)


def _find_all(data: bytes, sub: bytes) -> Iterable[int]:
    i = data.find(sub)
    while i >= 0:
        yield i
        i = data.find(sub, i + 1)


def _line_text(data: bytes, line: int, limit: int = 120) -> str:
    """Line ``line`` (1-based) of the text, shortened for a message."""
    start = 0
    for _ in range(line - 1):
        start = data.find(b"\n", start) + 1
    end = data.find(b"\n", start)
    text = data[start:end if end >= 0 else len(data)].decode("utf-8", errors="replace").rstrip("\r")
    return text if len(text) <= limit else text[:limit] + "..."


# ------------------------------------------------------------------------------------------ engines


def _engine() -> str:
    if ENGINE is not None:
        if ENGINE not in ("pyarrow", "pandas"):
            raise ValueError(f"tierank.io.trec.ENGINE must be 'pyarrow', 'pandas' or None, not {ENGINE!r}")
        return ENGINE
    return "pyarrow"


@dataclass
class _Split:
    """The fields of every physical line (row i is line i + 1), as the engines report them."""

    n_rows: int
    blank: np.ndarray                 # bool per row: no field at all
    comment: np.ndarray               # bool per row: first field starts with '#'
    too_few: np.ndarray               # bool per row: fewer than min_fields fields
    too_many: np.ndarray              # bool per row: more than max_fields fields
    take: Any                         # take(field_index, rows) -> object ndarray of str
    ids: Any                          # ids(field_index, rows) -> array of str ids for Columns
    numbers: Any                      # numbers(field_index, rows) -> float64 ndarray, or None if any is bad
    texts: Any = None                 # texts(field_index, rows) -> Arrow string array (qrels' grades)


def _arrow_objects(array: Any, dictionary: bool = False) -> np.ndarray:
    """An Arrow string array (or chunked array) as a numpy object array of str.

    With ``dictionary=True`` repeated strings (query ids) become one Python object each.
    """
    import pyarrow as pa
    import pyarrow.compute as pc

    if dictionary and not pa.types.is_dictionary(array.type):
        array = pc.dictionary_encode(array)
    if pa.types.is_dictionary(array.type):
        chunks = array.chunks if isinstance(array, pa.ChunkedArray) else [array]
        parts = [np.asarray(c.dictionary.to_numpy(zero_copy_only=False), dtype=object)[
            c.indices.to_numpy(zero_copy_only=False)] for c in chunks]
        return np.concatenate(parts) if parts else np.zeros(0, dtype=object)
    return np.asarray(array.to_numpy(zero_copy_only=False), dtype=object)


def _arrow_ids(array: Any, shared: bool = False) -> Any:
    """Ids for Columns: a numpy object array of str (``shared``: one object per distinct id, for
    query ids), or with ``ARROW_IDS`` a pandas ArrowStringArray (no Python object per id; a join
    that encodes ids in Arrow then needs no conversion back)."""
    import pyarrow as pa
    import pyarrow.compute as pc

    if ARROW_IDS:
        if pa.types.is_dictionary(array.type):
            array = pc.cast(array, pa.string())
        if isinstance(array, pa.ChunkedArray):
            array = array.combine_chunks()
        return pd.arrays.ArrowStringArray(array)
    return _arrow_objects(array, dictionary=shared)


def _split_pyarrow_simple(data: bytes, layout: _Layout) -> _Split | None:
    """Fast path: every line holds exactly the expected fields, separated by one space (or one tab).

    Returns None whenever the file is not that simple (blank or comment lines, runs of blanks, extra
    fields, anything odd in a number); the general path then reads it, with the same results.
    """
    import pyarrow as pa
    import pyarrow.compute as pc
    import pyarrow.csv as pcsv

    n_cols = layout.max_fields if layout.max_fields is not None else layout.min_fields
    if not data or b"\t" in data:
        if not data or b" " in data:
            return None
        delimiter = "\t"
    else:
        delimiter = " "
    names = [str(i) for i in range(n_cols)]
    # fields that are not read (Q0, rank, tag, iter) as bytes: the caller checks the text (UTF-8, no
    # control characters), and its error comes before any of the parse's
    types = {n: pa.binary() for n in names}
    # ids: not a dictionary (building one and casting it back costs more); large strings, as pandas'
    # Arrow-backed string arrays hold them (no cast of the offsets afterwards)
    types[str(layout.qid)] = pa.large_string()
    types[str(layout.docid)] = pa.large_string()
    # qrels: the grades as text, parsed below (trec_eval reads their text its own way: trec_eval_atol)
    types[str(layout.value)] = pa.large_string() if layout.kind == "qrels" else pa.float64()
    try:
        table = pcsv.read_csv(
            pa.py_buffer(data),
            read_options=pcsv.ReadOptions(column_names=names, block_size=1 << 24),
            parse_options=pcsv.ParseOptions(delimiter=delimiter, quote_char=False, escape_char=False,
                                            newlines_in_values=False, ignore_empty_lines=False),
            convert_options=pcsv.ConvertOptions(column_types=types, null_values=[], strings_can_be_null=False,
                                                quoted_strings_can_be_null=False))
    except (pa.ArrowInvalid, pa.ArrowNotImplementedError):
        return None
    for name in names:
        col = table.column(name)
        if name == str(layout.value):
            continue
        # an empty field: two separators in a row, or one at a line's start or end
        if any(len(c) and pc.min(pc.binary_length(c)).as_py() == 0 for c in col.chunks):
            return None
        if name == str(layout.qid) and any(pc.any(pc.starts_with(c, "#")).as_py() for c in col.chunks):
            return None   # a comment line
    value_column = table.column(str(layout.value))
    if layout.kind == "qrels":
        try:   # Arrow's number parser, as the CSV reader's (the general path parses fields so too)
            value_column = value_column.combine_chunks()
            scores = pc.cast(value_column, pa.float64()).to_numpy(zero_copy_only=False)
        except (pa.ArrowInvalid, pa.ArrowNotImplementedError):
            return None
    else:
        scores = value_column.to_numpy()
    if np.isnan(scores).any() or (layout.finite and np.isinf(scores).any()):
        return None
    n_rows = table.num_rows
    false = np.zeros(n_rows, dtype=bool)

    def take(k: int, rows: np.ndarray) -> np.ndarray:
        return _arrow_objects(table.column(str(k)))[rows]

    def ids(k: int, rows: np.ndarray) -> Any:
        col = table.column(str(k))
        if len(rows) != n_rows:
            col = col.take(pa.array(rows))
        return _arrow_ids(col, shared=k == layout.qid)

    def numbers(k: int, rows: np.ndarray) -> np.ndarray:
        return np.asarray(scores, dtype=np.float64)[rows]

    def texts(k: int, rows: np.ndarray) -> Any:
        col = table.column(str(k)).combine_chunks()
        return col if len(rows) == n_rows else col.take(pa.array(rows))

    return _Split(n_rows, false, false, false, false, take, ids, numbers, texts)


def _split_pyarrow(data: bytes, layout: _Layout) -> _Split:
    simple = _split_pyarrow_simple(data, layout)
    if simple is not None:
        return simple

    import pyarrow as pa
    import pyarrow.compute as pc
    import pyarrow.csv as pcsv

    if not data:
        none = np.zeros(0, dtype=bool)
        return _Split(0, none, none, none, none, lambda k, rows: np.zeros(0, dtype=object),
                      lambda k, rows: np.zeros(0, dtype=object), lambda k, rows: np.zeros(0))
    table = pcsv.read_csv(
        pa.py_buffer(data),
        read_options=pcsv.ReadOptions(column_names=["line"], block_size=1 << 24),
        # \x1f cannot occur (control characters are rejected), so each line is one field
        parse_options=pcsv.ParseOptions(delimiter="\x1f", quote_char=False, escape_char=False,
                                        newlines_in_values=False, ignore_empty_lines=False),
        convert_options=pcsv.ConvertOptions(column_types={"line": pa.string()}, null_values=[],
                                            strings_can_be_null=False, quoted_strings_can_be_null=False))
    lines = table.column("line")
    parts = pc.ascii_split_whitespace(pc.ascii_trim_whitespace(lines))
    parts = parts.combine_chunks() if isinstance(parts, pa.ChunkedArray) else parts
    n_rows = len(parts)
    offsets = parts.offsets.to_numpy()[: n_rows + 1].astype(np.int64)
    flat = parts.values
    length = np.diff(offsets)
    starts = offsets[:-1]
    if n_rows:
        first = flat.take(pa.array(starts))
        blank = (length == 1) & pc.equal(first, "").to_numpy(zero_copy_only=False)
        comment = pc.starts_with(first, "#").to_numpy(zero_copy_only=False)
    else:
        blank = comment = np.zeros(0, dtype=bool)
    n_fields = np.where(blank, 0, length)
    too_few = n_fields < layout.min_fields
    too_many = (n_fields > layout.max_fields) if layout.max_fields is not None else np.zeros(n_rows, bool)

    def field(k: int, rows: np.ndarray):
        return flat.take(pa.array(starts[rows] + k))

    def take(k: int, rows: np.ndarray) -> np.ndarray:
        return _arrow_objects(field(k, rows))

    def ids(k: int, rows: np.ndarray) -> Any:
        return _arrow_ids(field(k, rows), shared=k == layout.qid)

    def numbers(k: int, rows: np.ndarray) -> np.ndarray | None:
        try:
            return np.asarray(pc.cast(field(k, rows), pa.float64()).to_numpy(zero_copy_only=False),
                              dtype=np.float64)
        except (pa.ArrowInvalid, pa.ArrowNotImplementedError):
            return None

    return _Split(n_rows, blank, comment, too_few, too_many, take, ids, numbers, field)


def _split_pandas(data: bytes, layout: _Layout) -> _Split:
    n_cols = layout.max_fields + 1 if layout.max_fields is not None else layout.min_fields
    last = n_cols - 1  # run: the tag (absent: too few fields); qrels: a fifth field (too many)
    used = sorted({0, layout.qid, layout.docid, layout.value, last})
    # a first line with n_cols fields: pandas takes the number of columns from the first line, and
    # with usecols it ignores the fields of longer lines
    sentinel = b"x " * n_cols + b"\n"
    frame = pd.read_csv(io.BytesIO(sentinel + data), sep=r"\s+", header=None, names=list(range(n_cols)),
                        usecols=used, dtype=object, na_filter=False,
                        quoting=csv.QUOTE_NONE, skip_blank_lines=False, engine="c", encoding="utf-8")
    n_rows = len(frame) - 1
    cols = {k: frame[k].to_numpy(dtype=object)[1:] for k in used}
    blank = np.asarray(cols[0] == "", dtype=bool)
    if b"#" in data:
        comment = pd.Series(cols[0], dtype=object).str.startswith("#").to_numpy(dtype=bool)
    else:
        comment = np.zeros(n_rows, dtype=bool)
    if layout.max_fields is None:
        too_few = np.asarray(cols[last] == "", dtype=bool)
        too_many = np.zeros(n_rows, dtype=bool)
    else:
        too_few = np.asarray(cols[layout.min_fields - 1] == "", dtype=bool)
        too_many = np.asarray(cols[last] != "", dtype=bool)
    check_chars = b"_" in data or not data.isascii()

    def take(k: int, rows: np.ndarray) -> np.ndarray:
        return cols[k][rows]

    ids = take

    def numbers(k: int, rows: np.ndarray) -> np.ndarray | None:
        values = cols[k][rows]
        try:
            out = np.asarray(values, dtype=np.float64)
        except (TypeError, ValueError):
            return None
        # float() also reads '1_000' and non-ASCII digits, which pyarrow (and trec_eval) do not
        if check_chars and len(values) and "".join(values).encode().translate(None, _NUMBER_CHARS):
            return None
        return out

    def texts(k: int, rows: np.ndarray) -> Any:
        import pyarrow as pa

        return pa.array(cols[k][rows], type=pa.large_string())

    return _Split(n_rows, blank, comment, too_few, too_many, take, ids, numbers, texts)


def _parse_number(text: str) -> float | None:
    """The slow twin of the engines' number parsing: None if ``text`` is not a number."""
    if not text.isascii() or text.encode().translate(None, _NUMBER_CHARS):
        return None
    try:
        return float(text)
    except ValueError:
        return None


# --------------------------------------------------------------------------------------------- read


def check_lines(data: bytes, name: str, layout: _Layout, first_line: int = 1) -> tuple[_Split, np.ndarray, Any]:
    """Split and check the lines of ``data`` (whole lines of a text file, the first being line
    ``first_line`` of the file ``name``): the rules and messages of :func:`read_run` / :func:`read_qrels`.

    Returns ``(split, rows, values)``: the engine's fields, the 0-based rows of the data lines (blank and
    comment lines left out) and their values as float64. Raises an InputError naming the file and the
    line (of the whole file) of the first problem: a line with too few or too many fields, a value that
    is not a number, NaN, or infinite where the layout wants finite values. An empty ``rows`` is the
    caller's to report. The streaming reader (:mod:`tierank.io.stream`) calls it block by block.
    """
    try:
        split = (_split_pyarrow if _engine() == "pyarrow" else _split_pandas)(data, layout)
        skip = split.blank | split.comment
        bad_count = ~skip & (split.too_few | split.too_many)
        rows = np.flatnonzero(~skip & ~bad_count)
        first_bad_count = int(np.argmax(bad_count)) if bad_count.any() else None

        # numbers of the well-formed lines: the fast parser, or a Python loop to find the culprit
        values = split.numbers(layout.value, rows)
        bad_value: tuple[int, str] | None = None  # (row, message)
        if values is None:
            texts = split.take(layout.value, rows)
            for i, text in zip(rows, texts):
                v = _parse_number(text)
                if v is None:
                    bad_value = (int(i), f"the {layout.value_name} {text!r} is not a number")
                    break
                if v != v or (layout.finite and abs(v) == float("inf")):
                    bad_value = (int(i), _bad_float_message(layout, v))
                    break
        else:
            bad = np.isnan(values) | (np.isinf(values) if layout.finite else False)
            if bad.any():
                j = int(np.argmax(bad))
                bad_value = (int(rows[j]), _bad_float_message(layout, float(values[j])))

        if first_bad_count is not None and (bad_value is None or first_bad_count < bad_value[0]):
            line = first_bad_count + 1
            fields = _fields(_line_text(data, line, limit=10 ** 9))
            n = len(fields)
            want = (f"exactly {layout.min_fields}" if layout.max_fields == layout.min_fields
                    else f"at least {layout.min_fields}")
            raise InputError(f"expected {want} fields ({layout.fields}), found {n}: {_line_text(data, line)!r}",
                             file=name, line=line)
        if bad_value is not None:
            line = bad_value[0] + 1
            raise InputError(f"{bad_value[1]}: {_line_text(data, line)!r}", file=name, line=line)
    except InputError as err:
        if first_line == 1 or err.line is None or err.file != name:
            raise
        raise InputError(err.message, file=name, line=err.line + first_line - 1) from None
    return split, rows, values


def _read_columns(path: Any, layout: _Layout | str, format: str | None = None) -> tuple[Columns, bytes, np.ndarray]:
    """Read a file (``layout``: a layout, or the kind, "run" or "qrels", with ``format``) into Columns."""
    if isinstance(path, TextInput) and format is None:
        format = path.format
    data, name = _read_bytes(path)
    if isinstance(layout, str):
        layout = layout_of(layout, format, data[: 1 << 16])
    skip = _header_end(data, layout)
    body = data[skip:] if skip else data
    first_line = 2 if skip else 1
    split, rows, values = check_lines(body, name, layout, first_line)
    if not len(rows):
        what = ("the file is empty" if not data.strip() else "the file holds only a header line" if skip
                else "the file holds only blank and comment lines")
        raise InputError(f"no {layout.kind} line: {what} (expected lines '{layout.fields}')",
                         file=name, line=1)
    values = np.ascontiguousarray(values, dtype=np.float64)
    # qrels: the grades as trec_eval reads their text, for ties="trec_eval" (check_trec_eval_grades)
    atol = trec_eval_atol(split.texts(layout.value, rows)) if layout.kind == "qrels" else None
    cols = Columns(query=split.ids(layout.qid, rows), doc=split.ids(layout.docid, rows),
                   value=-values if layout.negate else values, source=name,
                   lines=(rows + first_line).astype(np.int64), trec_eval_grades=atol)
    return cols, body, rows


_LONG_MIN, _LONG_MAX = -(2 ** 63), 2 ** 63 - 1


def trec_eval_atol(texts: Any) -> np.ndarray:
    """Grades as trec_eval reads them from a qrels file: C's ``atol`` of each text, the integer its
    leading sign and digits spell (``"2e1"`` -> 2, ``"0.5"`` -> 0, ``"-1.7"`` -> -1, ``".5"`` -> 0),
    saturated at the range of a 64-bit long as glibc's ``strtol`` (``get_qrels.c``: ``rel = atol(...)``).

    Parameters
    ----------
    texts : pyarrow string array or sequence of str
        The grade fields, as written.

    Returns
    -------
    numpy.ndarray of int64

    Examples
    --------
    >>> from tierank.io.trec import trec_eval_atol
    >>> trec_eval_atol(["2e1", "0.5", "-1.7", "+3", ".5", "2.0", "10"]).tolist()
    [2, 0, -1, 3, 0, 2, 10]
    >>> trec_eval_atol(["1", "-2", "0x10"]).tolist()
    [1, -2, 0]
    """
    import pyarrow as pa
    import pyarrow.compute as pc

    if not isinstance(texts, (pa.Array, pa.ChunkedArray)):
        texts = pa.array(list(texts), type=pa.large_string())
    if isinstance(texts, pa.ChunkedArray):
        texts = texts.combine_chunks()
    if pa.types.is_binary(texts.type) or pa.types.is_large_binary(texts.type):
        texts = texts.cast(pa.large_string())
    try:   # the usual case: every text is a decimal integer (Arrow would also read hexadecimal "0x10")
        if len(texts) and pc.max(pc.binary_length(texts)).as_py() <= 18 and \
                not any(pc.any(pc.match_substring(texts, x)).as_py() for x in "xX"):
            return pc.cast(texts, pa.int64()).to_numpy(zero_copy_only=False)
    except (pa.ArrowInvalid, pa.ArrowNotImplementedError):
        pass
    # leading white space, then the sign and digits: every text matches (maybe with "")
    lead = pc.extract_regex(texts, r"^[ \t\n\v\f\r]*(?P<int>[+-]?[0-9]*)").field("int")
    lead = pc.utf8_ltrim(lead, "+")   # Arrow's integer parse takes "-3", not "+3"
    digits = pc.utf8_length(pc.utf8_ltrim(lead, "-")).to_numpy(zero_copy_only=False)
    out = np.zeros(len(texts), dtype=np.int64)
    short = (digits > 0) & (digits <= 18)   # fits int64 whatever the digits
    if short.all():
        return pc.cast(lead, pa.int64()).to_numpy(zero_copy_only=False)
    if short.any():
        out[short] = pc.cast(lead.filter(pa.array(short)), pa.int64()).to_numpy(zero_copy_only=False)
    for i in np.flatnonzero(digits > 18):   # long digit strings (leading zeros, or beyond the range): rare
        out[i] = min(max(int(lead[int(i)].as_py()), _LONG_MIN), _LONG_MAX)
    return out   # no digit: 0


def _fields(line: str) -> list[str]:
    """The fields of one line, as the readers split it (runs of spaces and tabs)."""
    return [f for f in re.split(r"[ \t\r]+", line) if f]


def _bad_float_message(layout: _Layout, v: float) -> str:
    if v != v:
        return f"the {layout.value_name} is NaN"
    return f"the {layout.value_name} is infinite"


def read_run_columns(path: Any, format: str | None = None) -> Columns:
    """Read a run file into :class:`~tierank.data.join.Columns` (query, doc, score, line numbers).

    This is what :func:`tierank.evaluate` calls for a run given as a path; see :func:`read_run` for
    the formats and rules (an MS MARCO run's scores are ``-rank``).
    """
    return _read_columns(path, "run", format)[0]


def read_qrels_columns(path: Any, format: str | None = None) -> Columns:
    """Read a qrels file into :class:`~tierank.data.join.Columns` (query, doc, grade, line numbers).

    This is what :func:`tierank.evaluate` calls for qrels given as a path; see :func:`read_qrels`
    for the formats and rules.
    """
    return _read_columns(path, "qrels", format)[0]


def _frame(cols: Columns, value: str) -> pd.DataFrame:
    return pd.DataFrame({"query_id": cols.query, "doc_id": cols.doc, value: cols.value})


def _parquet(path: Any, format: str | None) -> bool:
    """Whether ``path`` is a Parquet file or directory (read by :mod:`tierank.io.parquet`)."""
    if isinstance(path, TextInput) or format not in (None, "parquet"):
        return False
    from .stream import is_parquet

    if format == "parquet" or is_parquet(path):
        return True
    return False


def read_run(path: str | os.PathLike, format: str | None = None) -> pd.DataFrame:
    """Read a run file: TREC (``qid Q0 docid rank score tag``) or MS MARCO (``qid<TAB>docid<TAB>rank``),
    plain or gzip, or a Parquet file or directory.

    Parameters
    ----------
    path : str or os.PathLike
        The file. TREC: at least six whitespace-separated fields per line; ``Q0``, ``rank`` and fields
        after the sixth are ignored, as trec_eval ignores them. MS MARCO: exactly three fields, the
        third the rank; the score is ``-rank`` (rank 1 is best, documents of equal rank tie). Blank
        lines and ``#`` comment lines are skipped. A Parquet file or directory is read by
        ``tierank.io.parquet.read_run_parquet`` (its column names as in the file).
    format : {None, "trec", "msmarco", "parquet"}, optional
        None: Parquet by its magic bytes; MS MARCO when the first data line is three tab-separated
        fields ending with an integer (a TREC run line has six); TREC otherwise.

    Returns
    -------
    pandas.DataFrame
        Columns ``query_id`` (str), ``doc_id`` (str), ``score`` (float64), in file order.

    Raises
    ------
    tierank.InputError
        A malformed line, a score (rank) that is not a number or is NaN (an infinite rank), a file with
        no run line, a file that is not text, an unknown format. The message starts with ``file:line:``.

    Examples
    --------
    >>> import tempfile, os, pathlib, tierank.io.trec as trec
    >>> path = os.path.join(tempfile.mkdtemp(), "run.txt")
    >>> _ = pathlib.Path(path).write_text("# BM25\\nq1 Q0 d1 1 2.5 bm25\\nq1 Q0 d2 2 2.5 bm25 extra\\n")
    >>> trec.read_run(path)
      query_id doc_id  score
    0       q1     d1    2.5
    1       q1     d2    2.5
    >>> _ = pathlib.Path(path).write_text("q1 Q0 d1 1 high bm25\\n")
    >>> trec.read_run(path)
    Traceback (most recent call last):
    ...
    tierank.errors.InputError: ...run.txt:1: the score 'high' is not a number: 'q1 Q0 d1 1 high bm25'

    An MS MARCO run (detected: three tab-separated fields); the score is minus the rank:

    >>> _ = pathlib.Path(path).write_text("q1\\td1\\t1\\nq1\\td2\\t2\\n")
    >>> trec.read_run(path)
      query_id doc_id  score
    0       q1     d1   -1.0
    1       q1     d2   -2.0
    """
    if _parquet(path, format):
        from .parquet import read_run_parquet

        return read_run_parquet(path)
    return _frame(read_run_columns(path, format), "score")


def read_qrels(path: str | os.PathLike, format: str | None = None) -> pd.DataFrame:
    """Read a qrels file: TREC / MS MARCO (``qid iter docid grade``) or BEIR
    (``query-id<TAB>corpus-id<TAB>score`` after a header line), plain or gzip, or a Parquet file or directory.

    Parameters
    ----------
    path : str or os.PathLike
        The file. TREC: exactly four whitespace-separated fields per line; ``iter`` is ignored (MS
        MARCO's qrels, ``qid 0 docid rel`` or with tabs, are TREC qrels). BEIR: exactly three fields,
        and a first line ``query-id corpus-id score`` (skipped; line numbers count it). Blank lines
        and ``#`` comment lines are skipped. Grades may be negative (junk, -2: non-relevant, gain 0).
        A Parquet file or directory is read by ``tierank.io.parquet.read_qrels_parquet``.
    format : {None, "trec", "msmarco", "beir", "parquet"}, optional
        None: Parquet by its magic bytes; BEIR when the first line is BEIR's header; TREC otherwise.

    Returns
    -------
    pandas.DataFrame
        Columns ``query_id`` (str), ``doc_id`` (str), ``relevance`` (float64), in file order.

    Raises
    ------
    tierank.InputError
        A line with the wrong number of fields, a grade that is not a number, NaN or infinite, a file
        with no qrels line, a file that is not text, an unknown format. The message starts with
        ``file:line:``.

    Examples
    --------
    >>> import tempfile, os, pathlib, tierank.io.trec as trec
    >>> path = os.path.join(tempfile.mkdtemp(), "qrels.txt")
    >>> _ = pathlib.Path(path).write_text("q1 0 d1 1\\nq1 0 d7 -2\\n")
    >>> trec.read_qrels(path)
      query_id doc_id  relevance
    0       q1     d1        1.0
    1       q1     d7       -2.0
    >>> _ = pathlib.Path(path).write_text("query-id\\tcorpus-id\\tscore\\nq1\\td1\\t2\\n")
    >>> trec.read_qrels(path)      # BEIR, by its header
      query_id doc_id  relevance
    0       q1     d1        2.0
    """
    if _parquet(path, format):
        from .parquet import read_qrels_parquet

        return read_qrels_parquet(path)
    return _frame(read_qrels_columns(path, format), "relevance")


def read_run_tag(path: Any) -> str:
    """The tag (sixth field) of the first line of a run file: trec_eval's ``runid``.

    Only the lines up to the first data line are read and checked. An MS MARCO run has no tag: its
    runid is the file's name. Standard input (a :class:`TextInput` ``"-"``) is never read again: the
    tag comes from the first bytes kept when it was read.

    Examples
    --------
    >>> import tempfile, os, pathlib, tierank.io.trec as trec
    >>> path = os.path.join(tempfile.mkdtemp(), "run.txt")
    >>> _ = pathlib.Path(path).write_text("q1 Q0 d1 1 2.5 bm25\\n")
    >>> trec.read_run_tag(path)
    'bm25'
    """
    if isinstance(path, TextInput):
        if path.is_stdin:
            head = path.head or b""
            if head[:2] == b"\x1f\x8b":
                head = zlib.decompressobj(31).decompress(head, 1 << 16)
            if layout_of("run", path.format, head).format == "msmarco":
                return "stdin"
            line = _first_data_line(head)
            if line is None:
                raise InputError("no run line in the first bytes read", file=STDIN_NAME)
            fields = line.decode("utf-8", errors="replace").split()
            return fields[5] if len(fields) >= _RUN.min_fields else "stdin"
        if path.format == "msmarco":
            return os.path.basename(_name(path.path))
        path = path.path
    name = _name(path)
    opener = gzip.open if _is_gzip(path) else open
    try:
        with opener(path, "rb") as fh:
            if layout_of("run", None, fh.read(1 << 16)).format == "msmarco":
                return os.path.basename(name)
            fh.seek(0)
            for number, raw in enumerate(fh, start=1):
                fields = raw.decode("utf-8", errors="replace").split()
                if not fields or fields[0].startswith("#"):
                    continue
                if len(fields) < _RUN.min_fields:
                    raise InputError(f"expected at least 6 fields ({_RUN.fields}), found {len(fields)}",
                                     file=name, line=number)
                return fields[5]
    except (OSError, EOFError, zlib.error) as err:
        if isinstance(err, FileNotFoundError):
            raise
        raise InputError(f"cannot read the file ({err})", file=name) from None
    raise InputError("no run line: the file is empty", file=name, line=1)


def _is_gzip(path: Any) -> bool:
    with open(path, "rb") as fh:
        return fh.read(2) == b"\x1f\x8b"


# -------------------------------------------------------------------------------------------- write


def _check_ids(ids: np.ndarray, what: str, kind: str) -> np.ndarray:
    text = np.asarray([str(x) for x in ids], dtype=object) if len(ids) else np.zeros(0, dtype=object)
    for x in text:
        if not x or any(c.isspace() for c in x) or (what == "query id" and x.startswith("#")):
            raise InputError(f"cannot write the {kind}: {what} {x!r} is empty, holds whitespace or "
                             "starts with '#', so it could not be read back")
    return text


def _format_number(v: float) -> str:
    return str(int(v)) if float(v).is_integer() and abs(v) < 1e15 else repr(float(v))


def write_run(run: Any, path: str | os.PathLike, *, tag: str = "tierank") -> None:
    """Write a run as a TREC run file (gzip-compressed if ``path`` ends with ``.gz``).

    Lines are ``qid Q0 docid rank score tag``, grouped by query (queries in sorted order), documents by
    score descending, ties broken as trec_eval breaks them (document id descending), so that the rank
    column matches the order trec_eval evaluates. Scores are written exactly (shortest round-trip
    form), so reading the file back gives the same numbers.

    Parameters
    ----------
    run : dict, DataFrame (pandas or polars) or pyarrow Table
        ``{qid: {docid: score}}`` or a table with ``query_id, doc_id, score`` columns (or their
        aliases; a ``rank`` column without scores: score = -rank).
    path : str or os.PathLike
    tag : str, default="tierank"
        The sixth field (trec_eval's ``runid``).

    Examples
    --------
    >>> import tempfile, os, pathlib, tierank.io.trec as trec
    >>> path = os.path.join(tempfile.mkdtemp(), "run.txt")
    >>> trec.write_run({"q1": {"d1": 0.5, "d2": 0.5, "d3": 0.9}}, path, tag="demo")
    >>> print(pathlib.Path(path).read_text(), end="")
    q1 Q0 d3 1 0.9 demo
    q1 Q0 d2 2 0.5 demo
    q1 Q0 d1 3 0.5 demo
    """
    from .frames import to_columns

    if not tag or any(c.isspace() for c in tag):
        raise InputError(f"the run tag {tag!r} must be a non-empty word without whitespace")
    cols = normalized(to_columns(run, "run"), "score")   # the rules of evaluate(): no missing id, ...
    scores = cols.value.astype(np.float64)
    q = _check_ids(_id_values(cols.query), "query id", "run")
    d = _check_ids(_id_values(cols.doc), "document id", "run")
    qcode = _sort_codes(_id_values(cols.query), q)
    # query, then score descending, then document id descending (trec_eval's order)
    dcode = _string_rank(d)
    order = np.lexsort((-dcode, -scores, qcode))
    q, d, scores = q[order], d[order], scores[order]
    starts = np.r_[True, q[1:] != q[:-1]] if len(q) else np.zeros(0, bool)
    group = np.cumsum(starts) - 1
    first = np.flatnonzero(starts)
    rank = np.arange(len(q)) - first[group] + 1 if len(q) else np.zeros(0, int)
    lines = [f"{a} Q0 {b} {r} {repr(float(s))} {tag}\n" for a, b, r, s in zip(q, d, rank, scores)]
    _write_text(path, "".join(lines))


def write_qrels(qrels: Any, path: str | os.PathLike) -> None:
    """Write judgments as a TREC qrels file (gzip-compressed if ``path`` ends with ``.gz``).

    Lines are ``qid 0 docid grade``, queries in sorted order and documents in the order given.
    Integral grades are written as integers.

    Parameters
    ----------
    qrels : dict, DataFrame (pandas or polars) or pyarrow Table
        ``{qid: {docid: grade}}`` or a table with ``query_id, doc_id, relevance`` columns (or their aliases).
    path : str or os.PathLike

    Examples
    --------
    >>> import tempfile, os, pathlib, tierank.io.trec as trec
    >>> path = os.path.join(tempfile.mkdtemp(), "qrels.txt")
    >>> trec.write_qrels({"q1": {"d1": 2, "d9": -2}}, path)
    >>> print(pathlib.Path(path).read_text(), end="")
    q1 0 d1 2
    q1 0 d9 -2
    """
    from .frames import to_columns

    cols = normalized(to_columns(qrels, "qrels"), "grade")
    grades = cols.value
    q = _check_ids(_id_values(cols.query), "query id", "qrels")
    d = _check_ids(_id_values(cols.doc), "document id", "qrels")
    order = np.argsort(_sort_codes(_id_values(cols.query), q), kind="stable")
    lines = [f"{a} 0 {b} {_format_number(g)}\n" for a, b, g in zip(q[order], d[order], grades[order])]
    _write_text(path, "".join(lines))


def _id_values(ids: Any) -> np.ndarray:
    """Normalised ids (int64, or a pyarrow string array) as a numpy array."""
    return ids if isinstance(ids, np.ndarray) else np.asarray(ids.to_numpy(zero_copy_only=False), dtype=object)


def _string_rank(ids: np.ndarray) -> np.ndarray:
    """Rank of each id in ascending string order (equal ids, equal rank)."""
    uniq, inverse = np.unique(ids.astype(str), return_inverse=True)
    return inverse.astype(np.int64)


def _sort_codes(raw: np.ndarray, text: np.ndarray) -> np.ndarray:
    """Query order: numbers numerically if every id is an int, else string order."""
    if len(raw) and all(isinstance(x, (int, np.integer)) and not isinstance(x, bool) for x in raw):
        return np.asarray(raw, dtype=np.int64)
    return _string_rank(text)


def _write_text(path: Any, text: str) -> None:
    if _name(path).endswith(".gz"):
        with gzip.open(path, "wt", encoding="utf-8", newline="\n") as fh:
            fh.write(text)
    else:
        with open(path, "w", encoding="utf-8", newline="\n") as fh:
            fh.write(text)
