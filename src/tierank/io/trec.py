"""TREC run and qrels files: strict, fast readers (the writers: :mod:`tierank.io.write`).

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
    ``-rank``: rank 1 is best, documents of equal rank tie. Each query's lines are together and its
    ranks go 1, 2, 3, ... in file order: the rank at place p of the query's lines is an integer, at
    least the rank before it (equal ranks tie) and at most p (``1 2 3``, ``1 1 3``, ``1 1 2``); the
    first line out of place is an error (a third field of scores, ``0.5`` or ``-7e3`` are no ranks).
MS MARCO qrels (``"msmarco"``)
    ``qid 0 docid rel``, with spaces or tabs: TREC qrels.
BEIR qrels (``"beir"``)
    ``query-id corpus-id score``: exactly three fields, after a header line ``query-id corpus-id
    score`` (skipped; it still counts in line numbers).

With ``format=None`` the format is detected from the first data line, only where it cannot be mistaken:
BEIR qrels by their header line (tabs or spaces, any case). A file whose first data line has three
fields is refused with an InputError that says how to give the format (``format=`` / ``TextInput``,
``--run-format`` / ``--qrels-format``): a run's third field may be an MS MARCO rank or a score (read as
a rank, a score reverses the ranking), and three-field qrels are BEIR qrels without their header. Anything
else is read as TREC, and every line must be a TREC line.
:class:`TextInput` gives a file its format wherever :func:`tierank.evaluate` takes a path, and ``"-"``
is standard input.

Rules, the same for every file
------------------------------
* Fields are separated by runs of spaces and tabs; leading and trailing blanks are ignored.
* Lines end with ``\\n`` or ``\\r\\n``. Blank lines, and lines whose first field starts with ``#``
  (comments), are skipped; they still count in line numbers.
* The file may be gzip-compressed (recognised by its content, whatever its name). A UTF-8 byte order
  mark at the start is ignored. A path may name a pipe, a FIFO, ``/dev/stdin`` or bash's ``<(...)``:
  each input is opened and read once (:mod:`tierank.io.source`).
* Anything else is an error that names the file and the line: too few (or, in qrels, too many)
  fields, a score or grade that is not a number (decimal or exponent notation such as ``2.5``,
  ``-1e-3``, ``.5``, or ``inf`` / ``infinity``; no digit separators, no non-ASCII digits: the
  numbers pyarrow and C's ``strtod`` read), a NaN score or grade, an infinite grade (infinite scores
  are valid and tie with each other), a number beyond a 64-bit float (``1e400`` or ``1e-400``: read as
  infinite or as 0, it would tie with numbers it differs from), a document listed twice for one query
  (raised when the run is joined with its qrels), a file with no data line, and a file that is not
  text (a NUL or another control character, a lone carriage return, bytes that are not UTF-8). A
  UTF-16 or UTF-32 file, or one in Latin-1 / Windows-1252, is named as such, with the ``iconv``
  command that converts it; a comma-separated line too (read CSV files with pandas or polars).

Speed
-----
The text is split with pyarrow's CSV reader and compute kernels when pyarrow is installed, otherwise
with pandas' C parser; both give the same results and the same errors. Python loops run only to
name the offending line once an error is known.
"""

from __future__ import annotations

import io
import math
import os
import re
from dataclasses import replace
from typing import TYPE_CHECKING, Any, Iterable

import numpy as np

from ..data.arrow import cast, compute, contains, from_numpy, matches, starts_with, to_numpy, to_objects
from ..data.arrow import take as take_at
from ..data.columns import Columns
from ..errors import InputError
from .parquet import read_qrels_parquet, read_run_parquet
from .source import STDIN_NAME, UTF8_BOM, TextInput, TextReader, is_parquet, open_input, path_name

if TYPE_CHECKING:
    import pandas as pd

__all__ = [
    "read_run",
    "read_qrels",
    "read_run_columns",
    "read_qrels_columns",
    "read_run_tag",
]

#: Force one parsing engine ("pyarrow" or "pandas"); None: pyarrow (the pandas engine is a slower, independent
#: reader the tests compare it with).
ENGINE: str | None = None
#: pyarrow engine: hand ids to the join as pyarrow (large) string arrays instead of numpy object arrays.
ARROW_IDS = True

# bytes allowed in a text file: printable ASCII, tab, LF, CR, and every byte >= 0x80 (checked as UTF-8)
_TEXT_BYTES = bytes(range(0x20, 0x7F)) + b"\t\n\r" + bytes(range(0x80, 0x100))
# characters a number may contain (decimal notation, exponent, sign, inf/infinity/nan spelled in any case)
_NUMBER_CHARS = b"0123456789.+-eEiInNfFtTyYaA"


class _Layout:
    """What one kind of file looks like."""

    def __init__(self, kind: str, fields: str, min_fields: int, max_fields: int | None, qid: int, docid: int,
                 value: int, value_name: str, finite: bool = False, negate: bool = False,
                 header: tuple[str, ...] | None = None, format: str = "trec") -> None:
        self.kind = kind                 # "run" or "qrels"
        self.fields = fields             # the field names, for messages
        self.min_fields, self.max_fields = min_fields, max_fields   # max None: extra fields are ignored
        self.qid, self.docid, self.value = qid, docid, value        # field positions
        self.value_name = value_name     # "score" or "grade"
        self.finite = finite             # infinite values are errors (grades; infinite scores tie with each other)
        self.negate = negate             # the value is a rank: score = -rank
        self.header = header             # a first line with these fields is a header, skipped
        self.format = format             # the name of the format, for messages


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


def check_format(format: str | None, kind: str) -> str | None:
    """``format`` if it is a known format of ``kind`` files ("run" or "qrels") or None, else an InputError."""
    choices = RUN_FORMATS if kind == "run" else QRELS_FORMATS
    if format is not None and format not in choices:
        raise InputError(f"format={format!r}: {kind} files are {', '.join(map(repr, choices))} (or None: "
                         "detected from the first line)")
    return format


def first_data(head: bytes) -> tuple[bytes, int, int] | None:
    """``(line, number, end)``: the first line of ``head`` that is not blank or a comment, its 1-based
    number and the place just after it in ``head`` (None if no such line is complete)."""
    start = len(UTF8_BOM) if head.startswith(UTF8_BOM) else 0
    number = 0
    while True:
        end = head.find(b"\n", start)
        if end < 0:
            return None
        number += 1
        line = head[start:end].rstrip(b"\r")
        stripped = line.strip(b" \t")
        if stripped and not stripped.startswith(b"#"):
            return line, number, end + 1
        start = end + 1


def _is_header(line: str, layout: _Layout) -> bool:
    """Whether ``line`` is the header line of ``layout`` (its field names, in any case, separated by blanks)."""
    return layout.header is not None and [f.lower() for f in _fields(line)] == list(layout.header)


def _csv_hint(line: str, kind: str) -> str:
    """A hint for a line of a ``kind`` file whose fields are separated by commas ("" for any other line)."""
    if len([f for f in line.split(",") if f.strip()]) < 3:
        return ""
    return ("; the line is comma-separated (CSV?), but fields are separated by spaces or tabs here: load a CSV "
            "file with pandas or polars and pass the table (tierank.evaluate(qrels, pandas.read_csv(path), ...)), "
            f"or save it as Parquet for the command line (pandas.read_csv(path).to_parquet('{kind}.parquet'); "
            f"columns query_id, doc_id, {'score' if kind == 'run' else 'relevance'})")


def layout_of(kind: str, format: str | None, head: bytes, name: str = "<text>") -> _Layout:
    """The layout of a ``kind`` file in ``format``; None: detected from ``head`` (the file's first bytes,
    gunzipped, without a UTF-8 byte order mark: the whole file, or at least its first 64 KB), the file
    being called ``name`` in messages.

    Detection only chooses a reading that cannot be mistaken, from the first data line (blank and
    comment lines skipped): BEIR qrels by their header line ``query-id corpus-id score`` (any case,
    tabs or spaces); a line of three fields is refused (an InputError naming ``--run-format`` /
    ``--qrels-format`` and ``format=``): a run's third field may be an MS MARCO rank or a score, which
    read as a rank gives the reverse order, and qrels of three fields are BEIR qrels without their
    header. Anything else is TREC, and every line of the file must then be a TREC line. The lines up to
    the first data line are checked to be text first (their error comes before the refusal).
    Whole-file and streamed reading call it on the same bytes, so they decide alike.

    Examples
    --------
    >>> from tierank.io.trec import layout_of
    >>> layout_of("run", None, b"# BM25\\nq1 Q0 d1 1 2.5 bm25\\n").format
    'trec'
    >>> layout_of("qrels", None, b"query-id\\tcorpus-id\\tscore\\nq1\\td1\\t1\\n").format
    'beir'
    >>> layout_of("run", None, b"q1\\td1\\t1\\n", "run.tsv")
    Traceback (most recent call last):
    ...
    tierank.errors.InputError: run.tsv:1: the run's format is not detected: ...
    """
    format = check_format(format, kind)
    if format is None:
        # shorter than 64 KB: the whole file (its last line ends with it); else its first 64 KB, whole lines
        text = head[: 1 << 16] if len(head) >= 1 << 16 else head if head.endswith(b"\n") else head + b"\n"
        found = first_data(text)
        format = "trec"
        if found is not None:
            raw, number, end = found
            check_text(text[:end], name)
            line = raw.decode("utf-8")
            if kind == "qrels" and _is_header(line, _BEIR_QRELS):
                format = "beir"
            elif len(_fields(line)) == 3:
                raise InputError(_undetected(kind, line), file=name, line=number)
    return _LAYOUTS[(kind, format)]


def _undetected(kind: str, line: str) -> str:
    """Why a line of three fields gives a file no format, and what to do."""
    if kind == "run":
        what = ("the third may be a rank or a score (read as ranks, scores give the reverse order): for MS MARCO "
                "ranks (qid docid rank) say --run-format msmarco, or format='msmarco' in Python; scores go in "
                "TREC runs (qid Q0 docid rank score tag)")
    else:
        what = ("for BEIR qrels (query-id corpus-id score) without their header line say --qrels-format beir, or "
                "format='beir' in Python; TREC qrels have four fields (qid iter docid grade)")
    whose = "the run's" if kind == "run" else "the qrels'"
    return f"{whose} format is not detected: the line has 3 fields ({_shorten(line)!r}); {what}{_csv_hint(line, kind)}"


def _shorten(text: str, limit: int = 120) -> str:
    return text if len(text) <= limit else text[:limit] + "..."


def _header_end(data: bytes, layout: _Layout) -> tuple[int, int]:
    """``(end, line)``: where the lines after ``data``'s header line start, and the number of the first
    of them; ``(0, 1)`` if it has none. The header is the first line that is not blank or a comment,
    as format detection finds it (:func:`layout_of`)."""
    found = None if layout.header is None else first_data(data if data.endswith(b"\n") else data + b"\n")
    if found is not None and _is_header(found[0].decode("utf-8", "replace"), layout):
        line, number, end = found
        return min(end, len(data)), number + 1
    return 0, 1


# --------------------------------------------------------------------------------------------- bytes


def _line_of(data: bytes, pos: int) -> tuple[int, int]:
    """1-based (line, column) of byte offset ``pos``."""
    line = data.count(b"\n", 0, pos) + 1
    start = data.rfind(b"\n", 0, pos) + 1
    return line, pos - start + 1


#: Bytes of text read at a time by the whole-file reader.
_READ_BYTES = 1 << 22
#: Lines parsed at a time by the whole-file reader. Parsing holds a few dozen bytes for each line of the
#: piece, blank lines included, so a file of a million blank lines costs its bytes and one piece.
_PIECE_LINES = 1 << 20


def _read_bytes(path: Any) -> tuple[bytes, str, list[tuple[int, int]]]:
    """The file's text (gunzipped as it is read, without its byte order mark); the caller checks that it
    is text (:func:`check_text`), after the layout (as the streamed reader does). Raises InputError
    naming file and line for an over-long line as soon as it is read, and nothing is read after a NUL
    byte (:class:`tierank.io.source.TextReader`). Also the places where pieces of
    :data:`_PIECE_LINES` lines end, as (byte offset, number of the next line)."""
    cuts: list[tuple[int, int]] = []
    with open_input(path) as source:
        name = source.name
        reader = TextReader(source, _READ_BYTES)
        text = io.BytesIO()   # its value is the bytes written, not a copy of them
        size = lines = 0
        while True:
            chunk = reader.read()
            if not chunk:
                break
            ends = reader.ends   # the chunk's line ends: those that complete a piece are cuts
            at = np.arange(_PIECE_LINES - 1 - lines % _PIECE_LINES, len(ends), _PIECE_LINES)
            cuts.extend((size + int(ends[i]) + 1, lines + int(i) + 2) for i in at)
            lines += len(ends)
            size += len(chunk)
            text.write(chunk)
            del chunk
    data = text.getvalue()
    del text
    if isinstance(path, TextInput):
        path.head = text_head(data, whole=True)
    return data, name, cuts


def check_text(data: bytes, name: str, first_line: int = 1) -> None:
    """Raise InputError at the first byte that is not text: a control character (NUL included), a
    carriage return not followed by a line feed, or a byte sequence that is not UTF-8. ``data`` holds
    whole lines of the file ``name``, the first being its line ``first_line``. The message names the
    encoding the line looks like (:func:`_encoding_of`), and how to convert it."""
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
        line += first_line - 1
        start = data.rfind(b"\n", 0, pos) + 1
        end = data.find(b"\n", pos)
        encoding = _encoding_of(data[start:end if end >= 0 else len(data)], data[pos], line == 1)
        if encoding is not None:
            described, source = encoding
            found = (f"the file is {described}" if source.startswith("UTF-")
                     else f"{what}, at column {col} ({described})")
            raise InputError(f"not UTF-8 text: {found}; convert it to UTF-8, e.g. "
                             f"`{_convert_command(name, source)}`", file=name, line=line)
        raise InputError(f"not a text file: {what}, at column {col}", file=name, line=line)


# byte order marks of the encodings iconv reads by that name, longest first
_BOMS = ((b"\xff\xfe\x00\x00", "UTF-32", "little-endian"), (b"\x00\x00\xfe\xff", "UTF-32", "big-endian"),
         (b"\xff\xfe", "UTF-16", "little-endian"), (b"\xfe\xff", "UTF-16", "big-endian"))


def _encoding_of(line: bytes, byte: int, first: bool) -> tuple[str, str] | None:
    """``(description, iconv name)`` of the encoding a line that is not UTF-8 text looks like (``byte``: its
    first byte that is not text; ``first``: whether it is the file's first line), or None (binary data).
    Only the line itself is looked at, so that a file read whole and read in blocks of lines get the
    same answer.

    UTF-16 and UTF-32 by their byte order mark, else UTF-16 when at least two fifths of the line's bytes
    (and two at least, or a blank line's one NUL) are NULs, all at places of one parity (ASCII text: one
    NUL beside each character).
    The file's first line starts at an even place of the file, so there NULs at odd places are
    little-endian and at even places big-endian; a later line starts after the byte of a line feed
    whose NUL is either side of it, so its byte order cannot be told. A byte of 0x80 or more that is not
    UTF-8, in a line without control characters: Latin-1 or Windows-1252 (the usual single-byte
    encodings; their text with such bytes is never UTF-8).
    """
    for bom, family, order in _BOMS:
        if line.startswith(bom):
            return f"{family} ({order}, with a byte order mark)", family
    nuls = np.flatnonzero(np.frombuffer(line, dtype=np.uint8) == 0)
    blank = len(nuls) > 0 and not line.replace(b"\r", b"").strip(b"\x00")   # a blank line: NULs (and a CR's byte)
    if (len(nuls) >= 2 or blank) and 5 * len(nuls) >= 2 * len(line):
        odd = bool((nuls % 2 == 1).all())
        if not odd and not bool((nuls % 2 == 0).all()):
            return None
        if not first:
            return "UTF-16 (no byte order mark; little-endian, UTF-16LE, unless it is big-endian, UTF-16BE)", \
                "UTF-16LE"
        if odd:
            return "UTF-16 (little-endian, no byte order mark)", "UTF-16LE"
        return "UTF-16 (big-endian, no byte order mark)", "UTF-16BE"
    if byte >= 0x80 and not line.translate(None, _TEXT_BYTES):
        return "Latin-1 or Windows-1252 text?", "LATIN1"
    return None


def _convert_command(name: str, source: str) -> str:
    """A shell command converting the file ``name`` from the encoding ``source`` to UTF-8."""
    import shlex

    iconv = f"iconv -f {source} -t UTF-8"
    if name == STDIN_NAME:
        return f"... | {iconv} | tierank ..."
    base = os.path.basename(name)
    stem = base[:-3] if base.endswith(".gz") else base
    root, ext = os.path.splitext(stem)
    target = shlex.quote(os.path.join(os.path.dirname(name), f"{root}.utf8{ext}"))
    if base.endswith(".gz"):
        return f"zcat {shlex.quote(name)} | {iconv} > {target}"
    return f"{iconv} {shlex.quote(name)} > {target}"


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
    return _shorten(data[start:end if end >= 0 else len(data)].decode("utf-8", errors="replace").rstrip("\r"), limit)


# ------------------------------------------------------------------------------------------ engines


def _engine() -> str:
    if ENGINE is not None:
        if ENGINE not in ("pyarrow", "pandas"):
            raise ValueError(f"tierank.io.trec.ENGINE must be 'pyarrow', 'pandas' or None, not {ENGINE!r}")
        return ENGINE
    return "pyarrow"


class _Split:
    """The fields of every physical line (row i is line i + 1), as the engines report them."""

    def __init__(self, n_rows: int, blank: np.ndarray, comment: np.ndarray, too_few: np.ndarray,
                 too_many: np.ndarray, take: Any, ids: Any, numbers: Any, texts: Any = None) -> None:
        self.n_rows = n_rows
        self.blank = blank           # bool per row: no field at all
        self.comment = comment       # bool per row: first field starts with '#'
        self.too_few = too_few       # bool per row: fewer than min_fields fields
        self.too_many = too_many     # bool per row: more than max_fields fields
        self.take = take             # take(field_index, rows) -> object ndarray of str
        self.ids = ids               # ids(field_index, rows) -> array of str ids for Columns
        self.numbers = numbers       # numbers(field_index, rows) -> float64 ndarray, or None if any is bad
        self.texts = texts           # texts(field_index, rows) -> Arrow string array (qrels' grades)


def _arrow_objects(array: Any, dictionary: bool = False) -> np.ndarray:
    """An Arrow string array (or chunked array) as a numpy object array of str.

    With ``dictionary=True`` repeated strings (query ids) become one Python object each.
    """
    import pyarrow as pa

    if dictionary and not pa.types.is_dictionary(array.type):
        array = compute("dictionary_encode", array)
    if pa.types.is_dictionary(array.type):
        chunks = array.chunks if isinstance(array, pa.ChunkedArray) else [array]
        parts = [to_objects(c.dictionary)[to_numpy(c.indices)] for c in chunks]
        return np.concatenate(parts) if parts else np.zeros(0, dtype=object)
    return to_objects(array)


def _arrow_ids(array: Any, shared: bool = False) -> Any:
    """Ids for Columns: a numpy object array of str (``shared``: one object per distinct id, for
    query ids), or with ``ARROW_IDS`` a pyarrow large string array (no Python object per id; a join
    that encodes ids in Arrow then needs no conversion back)."""
    import pyarrow as pa

    if ARROW_IDS:
        if isinstance(array, pa.ChunkedArray):
            array = array.combine_chunks()
        return cast(array, pa.large_string())
    return _arrow_objects(array, dictionary=shared)


def _read_csv(data: bytes, delimiter: str, types: dict, names: list[str] | None = None) -> Any:
    """The fields of every line of ``data`` (columns named and typed by ``types``), read by pyarrow's CSV
    reader as plain fields: no quotes, no escapes, empty lines kept. ``names``: the names of all the
    columns, when ``types`` names the ones to read."""
    import pyarrow.csv as pcsv

    return pcsv.read_csv(
        arrow_owned(data), read_options=pcsv.ReadOptions(column_names=names or list(types), block_size=1 << 24),
        parse_options=pcsv.ParseOptions(delimiter=delimiter, quote_char=False, escape_char=False,
                                        newlines_in_values=False, ignore_empty_lines=False),
        convert_options=pcsv.ConvertOptions(column_types=types, include_columns=list(types) if names else None,
                                            null_values=[], strings_can_be_null=False,
                                            quoted_strings_can_be_null=False))


def arrow_owned(data: bytes) -> Any:
    """A copy of ``data`` in memory that Arrow owns, for pyarrow's threaded readers.

    When ``read_csv`` fails, its tasks on Arrow's thread pool may still hold the input after the call
    has raised. A buffer over a Python object (``pa.py_buffer``) needs the GIL to be released, and a
    process that exits then (the command line after an error) aborts ("terminate called without an
    active exception", apache/arrow#34314). A buffer Arrow owns is released without Python. The copy
    costs about 1% of the parse.

    >>> bytes(arrow_owned(b"q1 0 d1 1")) == b"q1 0 d1 1"
    True
    """
    import pyarrow as pa

    buf = pa.allocate_buffer(len(data))
    np.frombuffer(buf, dtype=np.uint8)[:] = np.frombuffer(data, dtype=np.uint8)
    return buf


def _split_pyarrow_simple(data: bytes, layout: _Layout) -> _Split | None:
    """Fast path: every line holds exactly the expected fields, separated by one space (or one tab).

    Returns None whenever the file is not that simple (blank or comment lines, runs of blanks, extra
    fields, anything odd in a number); the general path then reads it, with the same results.
    """
    import pyarrow as pa

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
        table = _read_csv(data, delimiter, types)
    except (pa.ArrowInvalid, pa.ArrowNotImplementedError):
        return None
    for name in names:
        col = table.column(name)
        if name == str(layout.value):
            continue
        # an empty field: two separators in a row, or one at a line's start or end
        if any(len(c) and compute("min", compute("binary_length", c)).as_py() == 0 for c in col.chunks):
            return None
        if name == str(layout.qid) and any(compute("any", starts_with(c, "#")).as_py() for c in col.chunks):
            return None   # a comment line
    value_column = table.column(str(layout.value))
    if layout.kind == "qrels":
        try:   # Arrow's number parser, as the CSV reader's (the general path parses fields so too)
            value_column = value_column.combine_chunks()
            scores = to_numpy(cast(value_column, pa.float64()))
        except (pa.ArrowInvalid, pa.ArrowNotImplementedError):
            return None
    else:
        scores = to_numpy(value_column)
    if np.isnan(scores).any() or (layout.finite and np.isinf(scores).any()):
        return None
    n_rows = table.num_rows
    false = np.zeros(n_rows, dtype=bool)

    def take(k: int, rows: np.ndarray) -> np.ndarray:
        return _arrow_objects(table.column(str(k)))[rows]

    def ids(k: int, rows: np.ndarray) -> Any:
        col = table.column(str(k))
        if len(rows) != n_rows:
            col = take_at(col, rows)
        return _arrow_ids(col, shared=k == layout.qid)

    def numbers(k: int, rows: np.ndarray) -> np.ndarray:
        return np.asarray(scores, dtype=np.float64)[rows]

    def texts(k: int, rows: np.ndarray) -> Any:
        col = table.column(str(k))
        if not pa.types.is_large_string(col.type):   # the scores, read as numbers: their text read again
            col = _read_csv(data, delimiter, {str(k): pa.large_string()}, names).column(str(k))
        col = col.combine_chunks()
        return col if len(rows) == n_rows else take_at(col, rows)

    return _Split(n_rows, false, false, false, false, take, ids, numbers, texts)


def _split_pyarrow(data: bytes, layout: _Layout) -> _Split:
    simple = _split_pyarrow_simple(data, layout)
    if simple is not None:
        return simple

    import pyarrow as pa

    if not data:
        none = np.zeros(0, dtype=bool)
        return _Split(0, none, none, none, none, lambda k, rows: np.zeros(0, dtype=object),
                      lambda k, rows: np.zeros(0, dtype=object), lambda k, rows: np.zeros(0))
    # \x1f cannot occur (control characters are rejected), so each line is one field
    table = _read_csv(data, "\x1f", {"line": pa.string()})
    lines = table.column("line")
    parts = compute("ascii_split_whitespace", compute("ascii_trim_whitespace", lines))
    parts = parts.combine_chunks() if isinstance(parts, pa.ChunkedArray) else parts
    n_rows = len(parts)
    offsets = to_numpy(parts.offsets)[: n_rows + 1].astype(np.int64)
    flat = parts.values
    length = np.diff(offsets)
    starts = offsets[:-1]
    if n_rows:
        first = take_at(flat, starts)
        blank = (length == 1) & (to_numpy(compute("binary_length", first)) == 0)
        comment = to_numpy(starts_with(first, "#"))
    else:
        blank = comment = np.zeros(0, dtype=bool)
    n_fields = np.where(blank, 0, length)
    too_few = n_fields < layout.min_fields
    too_many = (n_fields > layout.max_fields) if layout.max_fields is not None else np.zeros(n_rows, bool)

    def field(k: int, rows: np.ndarray):
        return take_at(flat, starts[rows] + k)

    def take(k: int, rows: np.ndarray) -> np.ndarray:
        return _arrow_objects(field(k, rows))

    def ids(k: int, rows: np.ndarray) -> Any:
        return _arrow_ids(field(k, rows), shared=k == layout.qid)

    def numbers(k: int, rows: np.ndarray) -> np.ndarray | None:
        try:
            return to_numpy(cast(field(k, rows), pa.float64()))
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
    import csv

    import pandas as pd

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


def check_lines(data: bytes, name: str, layout: _Layout, first_line: int = 1,
                ranks_before: RanksBefore | None = None) -> tuple[_Split, np.ndarray, Any]:
    """Split and check the lines of ``data`` (whole lines of a text file, the first being line
    ``first_line`` of the file ``name``): the rules and messages of :func:`read_run` / :func:`read_qrels`.
    ``ranks_before``: for MS MARCO ranks, the query whose lines come just before ``data`` (see
    :func:`ranks_after`), None when ``data`` starts with a query's first line.

    Returns ``(split, rows, values)``: the engine's fields, the 0-based rows of the data lines (blank and
    comment lines left out) and their values as float64. Raises an InputError naming the file and the
    line (of the whole file) of the first problem: a line with too few or too many fields, a value that
    is not a number, NaN, or infinite where the layout wants finite values. An empty ``rows`` is the
    caller's to report. The streaming reader (:mod:`tierank.engine.streamed`) calls it block by block.
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
        read = values   # the values of the rows before the first bad value
        if values is None:
            texts = split.take(layout.value, rows)
            parsed = []
            for i, text in zip(rows, texts):
                v = _parse_number(text)
                if v is None:
                    bad_value = (int(i), f"the {layout.value_name} {text!r} is not a number")
                    break
                lost = _lost_in_float64(layout, text, v)
                if lost is not None or v != v or (layout.finite and abs(v) == float("inf")):
                    bad_value = (int(i), lost or _bad_float_message(layout, v))
                    break
                parsed.append(v)
            read = np.asarray(parsed, dtype=np.float64)
        else:
            lost_at = _first_lost_in_float64(data, split, layout, rows, values)
            bad = np.isnan(values) | (np.isinf(values) if layout.finite else False)
            if bad.any() or lost_at is not None:
                j = int(np.argmax(bad)) if bad.any() else len(values)
                if lost_at is not None and lost_at[0] <= j:
                    j, message = lost_at
                else:
                    message = _bad_float_message(layout, float(values[j]))
                bad_value = (int(rows[j]), message)
                read = values[:j]
        if layout.negate:   # ranks: the first rank out of place comes before any later problem
            bad_rank = _rank_problem(data, split, rows[:len(read)], read, layout, ranks_before)
            if bad_rank is not None:
                bad_value = bad_rank

        if first_bad_count is not None and (bad_value is None or first_bad_count < bad_value[0]):
            line = first_bad_count + 1
            text = _line_text(data, line, limit=10 ** 9)
            n = len(_fields(text))
            want = (f"exactly {layout.min_fields}" if layout.max_fields == layout.min_fields
                    else f"at least {layout.min_fields}")
            hint = _csv_hint(text, layout.kind) if n < layout.min_fields else ""
            raise InputError(f"expected {want} fields ({layout.fields}), found {n}: {_line_text(data, line)!r}{hint}",
                             file=name, line=line)
        if bad_value is not None:
            line = bad_value[0] + 1
            raise InputError(f"{bad_value[1]}: {_line_text(data, line)!r}", file=name, line=line)
    except InputError as err:
        if first_line == 1 or err.line is None or err.file != name:
            raise
        raise InputError(err.message, file=name, line=err.line + first_line - 1) from None
    return split, rows, values


class RanksBefore:
    """What the MS MARCO lines before a piece of text leave to it: the query whose lines come just before
    (None: the piece starts with a query's first line), its last rank and its number of lines so far (a
    piece cut inside a query goes on with its ranks), and the queries whose lines are over (``seen``: a
    query's lines are together, so none of them may come back)."""

    def __init__(self, query: Any = None, rank: float = 0.0, lines: int = 0, seen: frozenset = frozenset()) -> None:
        self.query, self.rank, self.lines, self.seen = query, rank, lines, seen

    def finished(self) -> "RanksBefore":
        """The same text followed by another query's first line: its last query is over too."""
        return RanksBefore(seen=self.seen if self.query is None else self.seen | {self.query})


def ranks_after(cols: Columns, before: RanksBefore | None) -> RanksBefore:
    """The :class:`RanksBefore` of the text after ``cols`` (the rows of an MS MARCO piece, ``before``
    being the one before it): its last query, with the lines it had before ``cols`` if it goes on, and
    every query before it."""
    import pandas as pd

    before = before or RanksBefore()
    ids = _pandas_ids(cols.query)
    query = ids[len(ids) - 1]
    same = np.asarray(pd.Series(ids, copy=False) == query, dtype=bool)
    other = np.flatnonzero(~same)
    start = int(other[-1]) + 1 if len(other) else 0
    lines = len(same) - start
    goes_on = start == 0 and before.query == query
    if goes_on:
        lines += before.lines
    over = before.seen if goes_on else before.finished().seen
    over = over | set(pd.unique(pd.Series(ids[:start], copy=False)))   # the queries before the last
    return RanksBefore(query, -float(cols.value[-1]), lines, frozenset(over))   # MS MARCO values are -rank


def _rank_problem(data: bytes, split: _Split, rows: np.ndarray, ranks: np.ndarray,
                  layout: _Layout, before: RanksBefore | None = None) -> tuple[int, str] | None:
    """``(row, message)`` of the first of ``rows`` (rows of the lines of ``data``) whose rank (``ranks``,
    numbers) is out of place in an MS MARCO run, or None.

    The rule, on each run of consecutive data lines of one query: the rank at place p (1, 2, ...) is an
    integer, at least the rank before it (place 1: at least 1) and at most p. So ranks start at 1 and go
    up, equal ranks tie, and a rank skips no place: ``1 2 3``, ``1 1 3`` and ``1 1 2`` are ranks; scores
    such as ``30 20 10``, ``0.5`` or ``-7e3`` are not. And a query's lines are together: a query that
    comes back after another one (``cat run1 run2``) is out of place. A line's check needs only the
    lines of its query before it and the queries before them, which ``before`` gives a piece (a streamed
    block, a piece of the whole file), so both readings stop at the same line.
    """
    import pandas as pd

    n = len(rows)
    if not n:
        return None
    queries = _pandas_ids(split.ids(layout.qid, rows))
    new = np.ones(n, dtype=bool)   # the first line of a run of lines of one query
    if n > 1:
        new[1:] = np.asarray(queries[1:] != queries[:-1], dtype=bool)
    before = before or RanksBefore()
    goes_on = before.query is not None and queries[0] == before.query   # the piece starts inside a query
    new[0] = not goes_on
    # a run of lines of a query seen before (in an earlier piece, or earlier in this one) comes back
    over = before.finished().seen
    firsts = pd.Series(queries[new] if isinstance(queries, np.ndarray) else pd.Series(queries, copy=False)[new],
                       copy=False)
    back = np.zeros(n, dtype=bool)
    back[new] = np.asarray(firsts.duplicated() | firsts.isin(list(over)), dtype=bool)
    row = np.arange(n)
    place = row - np.maximum.accumulate(np.where(new, row, 0)) + 1   # 1, 2, ... from each run's first line
    previous = np.roll(ranks, 1)
    if goes_on:
        assert before is not None
        place[: int(np.argmax(new)) if new.any() else n] += before.lines   # the lines it had before the piece
        previous[0] = before.rank
    before_rank = np.where(new, 1.0, previous)
    integer = ranks == np.floor(ranks)
    bad = back | ~(integer & (ranks >= before_rank) & (ranks <= place))
    if not bad.any():
        return None
    j = int(np.argmax(bad))
    fields = _fields(_line_text(data, int(rows[j]) + 1, limit=10 ** 9))   # as written (engines give numbers)
    text, query = fields[layout.value], fields[layout.qid]
    if back[j]:
        what = f"query {query!r} comes back after other queries (each query's lines must be together)"
    elif not integer[j] or ranks[j] < 1:
        what = f"the rank {text!r} is not a positive integer"
    elif new[j]:
        what = f"query {query!r} starts at rank {text}, not 1"
    elif ranks[j] < before_rank[j]:
        what = f"the rank {text} comes after rank {format_number(before_rank[j])} of query {query!r}"
    else:
        what = f"the rank {text} is on line {place[j]} of query {query!r}, and a rank skips no place"
    return int(rows[j]), (f"{what} (MS MARCO ranks go 1, 2, 3, ... within each query's lines, equal ranks "
                          "tie; a third field of scores must be written as a TREC run: qid Q0 docid rank score tag)")


def columns_of_lines(data: bytes, name: str, layout: _Layout, first_line: int = 1,
                     ranks_before: RanksBefore | None = None) -> Columns | None:
    """The rows of the lines of ``data`` (whole lines, the first being line ``first_line`` of the file
    ``name``), checked by :func:`check_lines` (``ranks_before``: see there); None when it holds no data
    line."""
    if not data.strip():   # blank lines only (a C scan; bytes that are not text are the text check's)
        return None
    split, rows, values = check_lines(data, name, layout, first_line, ranks_before)
    if not len(rows):
        return None
    values = np.ascontiguousarray(values, dtype=np.float64)
    # qrels: the grades as trec_eval reads their text, for ties="trec_eval" (check_trec_eval_grades)
    atol = trec_eval_atol(split.texts(layout.value, rows)) if layout.kind == "qrels" else None
    return Columns(query=split.ids(layout.qid, rows), doc=split.ids(layout.docid, rows),
                   value=-values if layout.negate else values, source=name,
                   lines=(rows + first_line).astype(np.int64), trec_eval_grades=atol)


def concat_columns(parts: list[Columns]) -> Columns:
    """The rows of ``parts`` one after the other (the ids of the readers: numpy or pandas Arrow arrays)."""
    if len(parts) == 1:
        return parts[0]

    def ids(arrays: list[Any]) -> Any:
        if isinstance(arrays[0], np.ndarray):
            return np.concatenate(arrays)
        import pyarrow as pa

        return pa.concat_arrays(arrays)
    lines = None if any(p.lines is None for p in parts) else np.concatenate([p.lines for p in parts])
    atol = (None if any(p.trec_eval_grades is None for p in parts)
            else np.concatenate([p.trec_eval_grades for p in parts]))
    return replace(parts[0], query=ids([p.query for p in parts]), doc=ids([p.doc for p in parts]),
                   value=np.concatenate([np.asarray(p.value) for p in parts]), lines=lines, trec_eval_grades=atol)


def _read_columns(path: Any, layout: _Layout | str, format: str | None = None) -> Columns:
    """Read a file (``layout``: a layout, or the kind, "run" or "qrels", with ``format``) into Columns,
    parsing it :data:`_PIECE_LINES` lines at a time (the first bad line is the first piece's with one)."""
    if isinstance(path, TextInput) and format is None:
        format = path.format
    data, name, cuts = _read_bytes(path)
    if isinstance(layout, str):
        layout = layout_of(layout, format, data[: 1 << 16], name)
    check_text(data, name)
    skip, after = _header_end(data, layout)
    starts = [(skip, after)] + [(at, line) for at, line in cuts if skip < at < len(data)]
    parts = []
    ranks: RanksBefore | None = None   # MS MARCO: a piece may start inside a query, whose ranks go on
    for (start, first_line), (stop, _) in zip(starts, starts[1:] + [(len(data), 0)]):
        part = columns_of_lines(data[start:stop], name, layout, first_line, ranks)
        if part is not None:
            parts.append(part)
            ranks = ranks_after(part, ranks) if layout.negate else None
    if not parts:
        what = ("the file is empty" if not data.strip() else "the file holds only a header line" if skip
                else "the file holds only blank and comment lines")
        raise InputError(f"no {layout.kind} line: {what} (expected lines '{layout.fields}')",
                         file=name, line=1)
    return concat_columns(parts)


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

    if not isinstance(texts, (pa.Array, pa.ChunkedArray)):
        texts = from_numpy(np.asarray(list(texts), dtype=object))
    if isinstance(texts, pa.ChunkedArray):
        texts = texts.combine_chunks()
    if pa.types.is_binary(texts.type) or pa.types.is_large_binary(texts.type):
        texts = cast(texts, pa.large_string())
    try:   # the usual case: every text is a decimal integer (Arrow would also read hexadecimal "0x10")
        if len(texts) and compute("max", compute("binary_length", texts)).as_py() <= 18 and \
                not any(compute("any", contains(texts, x)).as_py() for x in "xX"):
            return to_numpy(cast(texts, pa.int64()))
    except (pa.ArrowInvalid, pa.ArrowNotImplementedError):
        pass
    import pyarrow.compute as pc   # (the other texts: rare)

    # leading white space, then the sign and digits: every text matches (maybe with "")
    lead = pc.extract_regex(texts, r"^[ \t\n\v\f\r]*(?P<int>[+-]?[0-9]*)").field("int")
    lead = pc.utf8_ltrim(lead, "+")   # Arrow's integer parse takes "-3", not "+3"
    digits = to_numpy(pc.utf8_length(pc.utf8_ltrim(lead, "-")))
    out = np.zeros(len(texts), dtype=np.int64)
    short = (digits > 0) & (digits <= 18)   # fits int64 whatever the digits
    if short.all():
        return to_numpy(pc.cast(lead, pa.int64()))
    if short.any():
        out[short] = to_numpy(pc.cast(lead.filter(from_numpy(short)), pa.int64()))
    for i in np.flatnonzero(digits > 18):   # long digit strings (leading zeros, or beyond the range): rare
        out[i] = min(max(int(lead[int(i)].as_py()), _LONG_MIN), _LONG_MAX)
    return out   # no digit: 0


def _fields(line: str) -> list[str]:
    """The fields of one line, as the readers split it (runs of spaces and tabs)."""
    return [f for f in re.split(r"[ \t\r]+", line) if f]


# a number's text with a nonzero digit before its exponent, and the texts of infinity (any case)
_NONZERO_MANTISSA = r"^[+-]?[0-9.]*[1-9]"
_INFINITY = r"^[+-]?(?i:inf|infinity)$"


def _lost_in_float64(layout: _Layout, text: str, v: float) -> str | None:
    """Why the number ``text`` is not ``v``, its float64, in kind (None when it is): a nonzero value
    read as 0 (below about 2.5e-324), or a finite one read as infinite (beyond about 1.8e308). Either would tie
    values that differ (1e400 with 2e400): refused rather than read."""
    if v == 0 and re.match(_NONZERO_MANTISSA, text):
        return f"the {layout.value_name} {text!r} is too small for a 64-bit float, which would read it as 0"
    if v in (math.inf, -math.inf) and not re.match(_INFINITY, text):
        return f"the {layout.value_name} {text!r} is too large for a 64-bit float, which would read it as infinite"
    return None


def _first_lost_in_float64(data: bytes, split: _Split, layout: _Layout, rows: np.ndarray, values: np.ndarray
                           ) -> tuple[int, str] | None:
    """The first of ``values`` (read from the texts of ``rows`` of ``data``) for which
    :func:`_lost_in_float64` has a reason, as (its place in ``values``, the reason); None when there is
    none. Only infinities and zeros are looked at again, in their texts; zeros only when ``data`` holds
    a negative exponent or 300 zeros in a row: a nonzero text read as 0 (below 2.5e-324) has one or the
    other, so without them every 0 is a true 0 (runs of 0-3 grades from a re-ranker pay a scan)."""
    zero = values == 0
    if zero.any() and not _may_underflow(data):
        zero[:] = False
    suspect = np.flatnonzero(zero | np.isinf(values))
    if not len(suspect):
        return None
    texts = split.texts(layout.value, rows[suspect])
    zero = from_numpy(values[suspect] == 0)
    # a zero from a nonzero text, or an infinity from a text that does not say so
    lost = compute("if_else", zero, matches(texts, _NONZERO_MANTISSA),
                   compute("invert", matches(texts, _INFINITY)))
    hit = np.flatnonzero(to_numpy(lost))
    if not len(hit):
        return None
    j = int(suspect[hit[0]])
    reason = _lost_in_float64(layout, texts[int(hit[0])].as_py(), float(values[j]))
    assert reason is not None
    return j, reason


def _may_underflow(data: bytes) -> bool:
    """Whether ``data`` holds a negative exponent (``e-``, ``E-``) or 300 zeros in a row (two numpy
    passes: ``bytes.find`` of a two-byte pattern is four times slower)."""
    if b"0" * 300 in data:
        return True
    buf = np.frombuffer(data, dtype=np.uint8)
    minus = np.flatnonzero(buf[1:] == ord("-"))   # buf[i + 1] is a '-': is buf[i] an 'e' or an 'E'?
    return bool(((buf[minus] | 0x20) == ord("e")).any())


def _bad_float_message(layout: _Layout, v: float) -> str:
    if v != v:
        return f"the {layout.value_name} is NaN"
    return f"the {layout.value_name} is infinite"


def read_run_columns(path: Any, format: str | None = None) -> Columns:
    """Read a run file into :class:`~tierank.data.join.Columns` (query, doc, score, line numbers).

    This is what :func:`tierank.evaluate` calls for a run given as a path; see :func:`read_run` for
    the formats and rules (an MS MARCO run's scores are ``-rank``).
    """
    return _read_columns(path, "run", format)


def read_qrels_columns(path: Any, format: str | None = None) -> Columns:
    """Read a qrels file into :class:`~tierank.data.join.Columns` (query, doc, grade, line numbers).

    This is what :func:`tierank.evaluate` calls for qrels given as a path; see :func:`read_qrels`
    for the formats and rules.
    """
    return _read_columns(path, "qrels", format)


def _frame(cols: Columns, value: str) -> pd.DataFrame:
    import pandas as pd

    return pd.DataFrame({"query_id": _pandas_ids(cols.query), "doc_id": _pandas_ids(cols.doc), value: cols.value})


def _pandas_ids(ids: Any) -> Any:
    """Ids of the readers (numpy objects or Arrow strings: :func:`_arrow_ids`) as pandas holds them."""
    import pandas as pd

    return ids if isinstance(ids, np.ndarray) else pd.arrays.ArrowStringArray(ids)


def _parquet(path: Any, format: str | None) -> bool:
    """Whether ``path`` is a Parquet file or directory (read by :mod:`tierank.io.parquet`)."""
    if isinstance(path, TextInput) or format not in (None, "parquet"):
        return False
    return format == "parquet" or is_parquet(path)


def read_run(path: str | os.PathLike, format: str | None = None) -> pd.DataFrame:
    """Read a run file: TREC (``qid Q0 docid rank score tag``) or MS MARCO (``qid<TAB>docid<TAB>rank``),
    plain or gzip, or a Parquet file or directory.

    Parameters
    ----------
    path : str or os.PathLike
        The file. TREC: at least six whitespace-separated fields per line; ``Q0``, ``rank`` and fields
        after the sixth are ignored, as trec_eval ignores them. MS MARCO: exactly three fields, the
        third the rank; the score is ``-rank`` (rank 1 is best, documents of equal rank tie); ranks go
        1, 2, 3, ... within each query's lines (see the module's documentation). Blank
        lines and ``#`` comment lines are skipped. A Parquet file or directory is read by
        ``tierank.io.parquet.read_run_parquet`` (its column names as in the file).
    format : {None, "trec", "msmarco", "parquet"}, optional
        None: Parquet by its magic bytes; a first data line of three fields is refused (an MS MARCO
        rank or a score? give ``format="msmarco"`` for ranks); TREC otherwise.

    Returns
    -------
    pandas.DataFrame
        Columns ``query_id`` (str), ``doc_id`` (str), ``score`` (float64), in file order.

    Raises
    ------
    tierank.InputError
        A malformed line, a score (rank) that is not a number or is NaN (an infinite rank, a rank out of
        place), a file with no run line, a file that is not text, an unknown format, a first data line of
        three fields with ``format=None``. The message starts with ``file:line:``.

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

    An MS MARCO run, three fields: the third may be a rank or a score, so the format must be given; the
    score is minus the rank:

    >>> _ = pathlib.Path(path).write_text("q1\\td1\\t1\\nq1\\td2\\t2\\n")
    >>> trec.read_run(path)
    Traceback (most recent call last):
    ...
    tierank.errors.InputError: ...run.txt:1: the run's format is not detected: the line has 3 fields ...
    >>> trec.read_run(path, format="msmarco")
      query_id doc_id  score
    0       q1     d1   -1.0
    1       q1     d2   -2.0
    """
    if _parquet(path, format):
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
        None: Parquet by its magic bytes; BEIR when the first data line is BEIR's header; a first data
        line of three fields is refused (BEIR qrels without their header? give ``format="beir"``); TREC
        otherwise.

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
        return read_qrels_parquet(path)
    return _frame(read_qrels_columns(path, format), "relevance")


def read_run_tag(path: Any) -> str:
    """The tag (sixth field) of the first line of a run file: trec_eval's ``runid``.

    Only the lines up to the first data line are read and checked. An MS MARCO run has no tag: its
    runid is the file's name (``stdin`` for standard input). A :class:`TextInput` already read (standard
    input, a pipe) is never read again: the tag comes from the first lines kept when it was read.

    Examples
    --------
    >>> import tempfile, os, pathlib, tierank.io.trec as trec
    >>> path = os.path.join(tempfile.mkdtemp(), "run.txt")
    >>> _ = pathlib.Path(path).write_text("q1 Q0 d1 1 2.5 bm25\\n")
    >>> trec.read_run_tag(path)
    'bm25'
    """
    source = path if isinstance(path, TextInput) else None
    name = source.name if source is not None else path_name(path)
    format = source.format if source is not None else None
    runid = "stdin" if source is not None and source.is_stdin else os.path.basename(name)
    if format == "msmarco":
        return runid
    head, first = (source.head, 1) if source is not None and source.head is not None else (None, 1)
    if head is None:   # not read yet: its first lines (a pipe's are then gone)
        head, first = _first_lines(path)
    if layout_of("run", format, head, name).format == "msmarco":
        return runid
    for number, raw in enumerate(head.split(b"\n")[:-1], start=first):
        fields = raw.decode("utf-8", errors="replace").split()
        if not fields or fields[0].startswith("#"):
            continue
        if len(fields) < _RUN.min_fields:
            raise InputError(f"expected at least 6 fields ({_RUN.fields}), found {len(fields)}",
                             file=name, line=number)
        return fields[5]
    what = "in the first 64 KiB read" if source is not None and source.head is not None else "in the file"
    raise InputError(f"no run line {what} (expected lines '{_RUN.fields}')", file=name, line=1)


def text_head(text: bytes, whole: bool) -> bytes:
    """The first 64 KiB of a text (for the run's tag and the layout), a line end added when ``whole``
    (``text`` is the whole text) and its last line has none."""
    head = text[: 1 << 16]
    if whole and len(text) <= 1 << 16 and not head.endswith(b"\n"):
        head += b"\n"
    return head


def _first_lines(path: Any) -> tuple[bytes, int]:
    """The lines of a text file from the last blank or comment line before its first data line to
    that line (or to its end), and the number of the first of them: the lines before are read and
    forgotten, so a long preamble costs no memory."""
    with open_input(path) as source:
        name = source.name
        reader = TextReader(source, 1 << 16)
        text, first = b"", 1
        while True:
            more = reader.read()
            if not more:
                text += b"\n" if text and not text.endswith(b"\n") else b""
                break
            text += more
            if first_data(text) is not None:
                break
            cut = text.rfind(b"\n") + 1   # whole lines, blank or comments: forgotten
            check_text(text[:cut], name, first)
            first += text.count(b"\n", 0, cut)
            text = text[cut:]
    check_text(text[: text.rfind(b"\n") + 1], name, first)   # whole lines (a UTF-8 character may be cut)
    return text, first


def format_number(v: float) -> str:
    """A number as the writers write it: an integral value as an integer, else its shortest round-trip form."""
    return str(int(v)) if float(v).is_integer() and abs(v) < 1e15 else repr(float(v))
