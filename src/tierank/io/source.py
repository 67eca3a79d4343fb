"""Where the bytes of every input come from: one opener for files, pipes, FIFOs, ``/dev/stdin``, process
substitution (``<(...)``) and standard input, and the text reader every text format is read through.

Rules
-----
* An input is opened once. What it holds is told from its first bytes, read once and served again to
  its reader (never by opening the path a second time): gzip (``1f 8b``), Parquet (``PAR1``), else text.
* A regular file can be read again: a second pass (a streamed run not grouped by query) seeks back to
  the start of the same open file. Anything else (a pipe, a FIFO, ``/dev/stdin``, standard input) is read
  once; when a second pass may be needed its bytes are copied, as they are read, to an anonymous
  temporary file (unlinked when it is made, so the system removes it however the process ends), which
  the second pass reads.
* Parquet needs random access: Parquet bytes from anything but a regular file are an InputError.
* Text is read in chunks (gzip decompressed a chunk at a time: a small file that inflates to one huge line
  is never decompressed whole). A line longer than :data:`MAX_LINE_BYTES` is an error as soon as its
  bytes are read, and nothing is read after a NUL byte's line (at most 4 KiB of it: the text check then
  refuses the NUL, or a problem before it, naming the encoding the line looks like): a line with no end (``head -c 1G /dev/zero``, or a gzip bomb) costs a chunk of memory.
"""

from __future__ import annotations

import io
import os
import stat
import sys
import zlib
from typing import Any, cast

import numpy as np

from ..errors import InputError

__all__ = ["MAX_LINE_BYTES", "Input", "TextInput", "TextReader", "open_input", "open_path", "open_stdin", "sniff_path",
           "is_parquet", "is_run_file"]

#: The longest line a text input may hold, in bytes before its line feed (a carriage return before
#: it counts): 1 MiB. A TREC or qrels line is a few dozen bytes; a longer line is an error naming
#: the file and the line, raised as soon as that many bytes without a line end are read.
MAX_LINE_BYTES = 1 << 20

GZIP_MAGIC = b"\x1f\x8b"
PARQUET_MAGIC = b"PAR1"
_MAGIC_BYTES = 5                # bytes peeked to tell gzip and Parquet from text (PAR1 and the byte after)
_COPY_BYTES = 1 << 22           # bytes copied at a time to the spool of a second pass
#: The UTF-8 byte order mark, dropped at the start of a text.
UTF8_BOM = b"\xef\xbb\xbf"
#: The name of standard input in messages.
STDIN_NAME = "<stdin>"
#: The error of Parquet bytes from anything but a regular file.
NOT_SEEKABLE_PARQUET = ("a Parquet file needs random access and cannot be read from a pipe, a FIFO or standard "
                        "input: write it to a file and give its path")


class Input:
    """An input opened once: a binary stream from its first byte, whose first bytes tell what it holds.

    Made by :func:`open_path` and :func:`open_stdin`. ``read`` serves the bytes from the start (the
    peeked ones first); :meth:`rewind` starts again from the first byte (a second pass).

    Parameters
    ----------
    fh : binary file object
        The open input, nothing read from it yet.
    name : str
        Its name in messages.
    regular : bool
        Whether it is a regular file (seekable: a second pass seeks back).
    owned : bool
        Whether :meth:`close` closes ``fh`` (standard input stays open).
    spool : bool
        Copy the bytes of an input that is not a regular file to an anonymous temporary file as they are
        read, for :meth:`rewind`.

    Examples
    --------
    >>> import os, pathlib, tempfile
    >>> from tierank.io.source import open_path
    >>> path = os.path.join(tempfile.mkdtemp(), "run.txt")
    >>> _ = pathlib.Path(path).write_bytes(b"q1 Q0 d1 1 2.5 t\\n")
    >>> with open_path(path) as source:
    ...     source.kind, source.read(5), source.read()
    ('text', b'q1 Q0', b' d1 1 2.5 t\\n')
    """

    def __init__(self, fh: Any, name: str, *, regular: bool, owned: bool, spool: bool = False) -> None:
        self.name = name
        self.regular = regular
        self._fh = fh
        self._owned = owned
        self.count = 0   # bytes read from the input (the progress bar's)
        self._spool = None
        if spool and not regular:
            import tempfile

            # unbuffered (no lock a reading thread could hold at exit); unlinked when made
            self._spool = tempfile.TemporaryFile(prefix="tierank-", buffering=0)
        self._passes = 1
        head = b""
        try:
            while len(head) < _MAGIC_BYTES:
                more = self._raw_read(_MAGIC_BYTES - len(head))
                if not more:
                    break
                head += more
        except BaseException:
            self.close()
            raise
        self.magic = head
        self._pending = head   # read, not yet served

    @property
    def kind(self) -> str:
        """What the first bytes say: "gzip", "parquet" or "text"."""
        if self.magic[:2] == GZIP_MAGIC:
            return "gzip"
        # PAR1 then a blank: a text line whose first field is PAR1 (a Parquet file's first page header
        # follows its magic bytes); told from the bytes read, so a pipe is told as a file is
        if self.magic[:4] == PARQUET_MAGIC and self.magic[4:5] not in (b" ", b"\t", b"\r", b"\n"):
            return "parquet"
        return "text"

    def _raw_read(self, n: int) -> bytes:
        data = self._fh.read(n)
        if data:
            self.count += len(data)
            if self._spool is not None and self._passes == 1:
                view = memoryview(data)
                while view:   # an unbuffered write may write part of it
                    view = view[self._spool.write(view):]
        return data

    def read(self, n: int | None = -1) -> bytes:
        """Up to ``n`` bytes (all that is left if ``n`` is negative or None); fewer only at the end."""
        out = self._pending
        self._pending = b""
        if n is None or n < 0:
            rest = [out]
            while True:
                chunk = self._raw_read(_COPY_BYTES)
                if not chunk:
                    return b"".join(rest)
                rest.append(chunk)
        if len(out) >= n:
            out, self._pending = out[:n], out[n:]
            return out
        parts = [out]
        left = n - len(out)
        while left > 0:   # a pipe gives what it holds: read on to fill the chunk, as a file would
            chunk = self._raw_read(left)
            if not chunk:
                break
            parts.append(chunk)
            left -= len(chunk)
        return b"".join(parts) if len(parts) > 1 else parts[0]

    def readable(self) -> bool:
        return True

    def rewind(self) -> None:
        """Read again from the first byte: a regular file seeks back; any other input reads the copy
        made while it was read (the rest of it is copied first). An InputError if there is none."""
        if self.regular:
            self._fh.seek(0)
        else:
            if self._spool is None:
                raise InputError("the input can be read only once (it is not a regular file)", file=self.name)
            if self._passes == 1:   # copy the part the first pass did not read
                while self._raw_read(_COPY_BYTES):
                    pass
            self._spool.flush()
            self._spool.seek(0)
            if self._owned:
                self._fh.close()
            self._fh, self._owned = self._spool, False
        self._passes += 1
        self._pending = b""
        self.count = 0

    def size(self) -> int | None:
        """The input's size in bytes when known (a regular file; the copy of another input once it is
        read whole), else None."""
        if self.regular:
            return os.fstat(self._fh.fileno()).st_size
        if self._spool is not None and self._passes > 1:
            return os.fstat(self._spool.fileno()).st_size
        return None

    def text_bytes(self, size: int) -> int:
        """About how many bytes of text ``size`` bytes of this input hold: a gzip file's five times its own
        (what the second pass's buckets and the small-run switch count)."""
        return size * (5 if self.kind == "gzip" else 1)

    def spooled_size(self) -> int:
        """The bytes read so far (a lower bound of the size of an input read once)."""
        if self._spool is None:
            return self.count
        self._spool.flush()
        return os.fstat(self._spool.fileno()).st_size

    def close(self) -> None:
        """Close the input (not standard input) and remove its copy."""
        try:
            if self._owned:
                self._fh.close()
        finally:
            if self._spool is not None:
                self._spool.close()

    def __enter__(self) -> "Input":
        return self

    def __exit__(self, *exc: Any) -> None:
        self.close()

    def require_random_access(self) -> None:
        """An InputError if this Parquet input is not a regular file (Parquet is read from its end)."""
        if self.kind == "parquet" and not self.regular:
            raise InputError(NOT_SEEKABLE_PARQUET, file=self.name)


def open_path(path: Any, name: str | None = None, *, spool: bool = False) -> Input:
    """Open the file ``path`` once (a regular file, a pipe, a FIFO, ``/dev/stdin``, ...) as an :class:`Input`.

    Examples
    --------
    >>> import gzip, os, pathlib, tempfile
    >>> from tierank.io.source import open_path
    >>> path = os.path.join(tempfile.mkdtemp(), "run.txt.gz")
    >>> _ = pathlib.Path(path).write_bytes(gzip.compress(b"q1 Q0 d1 1 2.5 t\\n"))
    >>> with open_path(path) as source:
    ...     source.kind, source.regular
    ('gzip', True)
    """
    fh = open(path, "rb", buffering=0)
    try:
        regular = stat.S_ISREG(os.fstat(fh.fileno()).st_mode)
    except BaseException:
        fh.close()
        raise
    if name is None:
        name = os.fsdecode(path) if not isinstance(path, bytes) else path.decode(errors="replace")
    return Input(fh, name, regular=regular, owned=True, spool=spool)


def open_stdin(name: str, *, spool: bool = False) -> Input:
    """Standard input as an :class:`Input` (read once; closing it leaves standard input open).

    Its file descriptor is read through a duplicate, unbuffered: a reading thread left waiting for a
    pipe's next bytes when the process is stopped holds no lock of ``sys.stdin`` (the interpreter
    would abort on it at exit). A ``sys.stdin`` with no file descriptor is read as it is."""
    stdin = getattr(sys.stdin, "buffer", None)
    if stdin is None:
        raise InputError("standard input is closed", file=name)
    try:
        fd = os.dup(stdin.fileno())
    except (AttributeError, OSError, io.UnsupportedOperation):   # not a file (a test's BytesIO)
        return Input(stdin, name, regular=False, owned=False, spool=spool)
    return Input(os.fdopen(fd, "rb", buffering=0), name, regular=False, owned=True, spool=spool)


def sniff_path(path: Any) -> str | None:
    """What a regular file holds by its first bytes ("gzip", "parquet" or "text"); None for anything else
    (a pipe, a FIFO, a missing file: never opened here, since reading it would take its bytes away)."""
    try:
        if not stat.S_ISREG(os.stat(path).st_mode):
            return None
        with open_path(path) as source:
            return source.kind
    except OSError:
        return None


def path_name(path: Any) -> str:
    """The name of a path in messages."""
    return os.fspath(path) if not isinstance(path, bytes) else path.decode(errors="replace")


def is_parquet(path: Any) -> bool:
    """Whether ``path`` is a directory (a Parquet dataset) or a regular file starting with Parquet's magic
    bytes. Anything else (a pipe, a FIFO, ``/dev/stdin``) is not opened here: its bytes would be gone;
    the text reader that reads it refuses Parquet bytes there (Parquet needs random access)."""
    if not isinstance(path, (str, bytes, os.PathLike)):
        return False
    if os.path.isdir(path):
        return True
    return sniff_path(path) == "parquet"


def is_run_file(run: Any) -> bool:
    """Whether ``run`` names a file (a path, or a :class:`TextInput`), which :func:`tierank.evaluate` and
    the tie report read in blocks of whole queries."""
    return isinstance(run, (str, os.PathLike, TextInput))


class TextInput:
    """A run or qrels text file, or standard input (``"-"``), with its format.

    :func:`tierank.evaluate` takes it where it takes a path: ``tierank.evaluate(TextInput("qrels.tsv",
    "beir"), TextInput("-", "msmarco"), ...)`` reads BEIR qrels and an MS MARCO run from standard input
    (the ``tierank`` command's ``-`` and ``--run-format`` / ``--qrels-format``). Standard input can be read
    only once: a second read raises an InputError; a run streamed from it that is not grouped by query is
    copied to a temporary file as it is read, for the second pass (:mod:`tierank.engine.streamed`).

    Parameters
    ----------
    path : str or os.PathLike
        The file, or ``"-"`` for standard input.
    format : str, optional
        One of :data:`tierank.io.trec.RUN_FORMATS` (a run) or :data:`tierank.io.trec.QRELS_FORMATS`
        (qrels); None: detected from the first data line where it cannot be mistaken (see
        :func:`tierank.io.trec.read_run` and :func:`tierank.io.trec.read_qrels`).

    Examples
    --------
    >>> import tempfile, os, pathlib, tierank
    >>> from tierank.io.source import TextInput
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
        self.head: bytes | None = None   # the first bytes of its text, once read (for the run's tag)
        self._read = False

    @property
    def is_stdin(self) -> bool:
        """Whether this is standard input."""
        return isinstance(self.path, str) and self.path == "-"

    @property
    def name(self) -> str:
        """The name in messages: the path, or ``<stdin>``."""
        return STDIN_NAME if self.is_stdin else path_name(self.path)

    def open(self, spool: bool = False) -> Input:
        """The input, opened once (:func:`open_input`); standard input can be opened only once."""
        if not self.is_stdin:
            return open_path(self.path, self.name, spool=spool)
        if self._read:
            raise InputError("standard input was already read: it can be read only once (give one of the "
                             "files as '-', once)", file=STDIN_NAME)
        self._read = True
        return open_stdin(STDIN_NAME, spool=spool)

    def __repr__(self) -> str:
        return f"TextInput({self.path!r}, format={self.format!r})"


def open_input(path: Any, spool: bool = False) -> Input:
    """Open a path or a :class:`TextInput` once: every reader of a text file gets its bytes here.

    What the file holds (gzip, Parquet, text) is told from the first bytes read, never by opening it
    again; ``spool``: copy an input that is not a regular file (a pipe, standard input) to an anonymous
    temporary file as it is read, for a second pass (:meth:`tierank.io.source.Input.rewind`).

    Examples
    --------
    >>> import os, tempfile, pathlib
    >>> from tierank.io.source import open_input
    >>> path = os.path.join(tempfile.mkdtemp(), "qrels.txt")
    >>> _ = pathlib.Path(path).write_text("q1 0 d1 1\\n")
    >>> with open_input(path) as source:
    ...     source.kind, source.read()
    ('text', b'q1 0 d1 1\\n')
    """
    if isinstance(path, TextInput):
        return path.open(spool)
    return open_path(path, path_name(path), spool=spool)


def line_ends(data: bytes) -> np.ndarray:
    """The places of the line feeds of ``data`` (one vectorised scan)."""
    return np.flatnonzero(np.frombuffer(data, dtype=np.uint8) == 10)


#: After a NUL byte the text ends with the NUL's line, or this many bytes after the NUL if that line is
#: longer (``head -c 1G /dev/zero`` reads 4 KiB): the text check names the encoding the line looks like.
_AFTER_NUL = 1 << 12


class TextReader:
    """The text of an :class:`Input` in chunks: gunzipped a chunk at a time, the UTF-8 byte order mark
    dropped, each chunk checked as it arrives: a line longer than :data:`MAX_LINE_BYTES` is an InputError
    naming the file and the line; at a NUL byte the text ends with the NUL's line (at most 4 KiB of it; nothing
    after it is read): the text check
    of the reader that reads it (:func:`tierank.io.trec.check_text`) then reports the first byte of the
    file that is not text, the NUL or one before it, as when the whole file was read.

    ``read()`` gives the next chunk (``b""`` at the end); ``ends`` holds the places of the line feeds of the
    chunk last read and ``lines`` the line feeds read before it.

    Examples
    --------
    >>> import os, pathlib, tempfile
    >>> from tierank.io.source import open_path, TextReader
    >>> path = os.path.join(tempfile.mkdtemp(), "run.txt")
    >>> _ = pathlib.Path(path).write_bytes(b"q1 Q0 d1 1 2.5 t\\nq1 Q0 d\\x002 2 1 t\\n")
    >>> with open_path(path) as source:
    ...     reader = TextReader(source, 1 << 16)
    ...     reader.read(), reader.read()
    (b'q1 Q0 d1 1 2.5 t\\nq1 Q0 d\\x002 2 1 t\\n', b'')
    """

    def __init__(self, source: Input, read_bytes: int) -> None:
        source.require_random_access()   # Parquet bytes from a pipe: say so, not "not a text file"
        self.source = source
        self.name = source.name
        self.read_bytes = max(1, int(read_bytes))
        self._fh: Any = source
        if source.kind == "gzip":
            import gzip

            self._fh = gzip.GzipFile(fileobj=cast(Any, source), mode="rb")
        self.lines = 0                        # line feeds before the last chunk
        self.ends = np.zeros(0, np.int64)     # the line feeds of the last chunk
        self._line_bytes = 0                  # bytes of the line not ended yet, before the last chunk
        self._started = False
        self._ended = False                   # the text has ended (after a NUL byte's line)
        self._after_nul: int | None = None    # a NUL's line goes on: the most bytes of it still to read
        self._last = b""

    def _next(self) -> bytes:
        try:
            return self._fh.read(self.read_bytes)
        except (OSError, EOFError, zlib.error) as err:
            if self.source.kind != "gzip":
                raise
            raise InputError(f"not a valid gzip file ({err})", file=self.name) from None

    def read(self) -> bytes:
        """The next chunk of text (at most ``read_bytes`` bytes; ``b""`` at the end), checked."""
        if self._ended:
            return b""
        chunk = self._next()
        if not self._started:
            self._started = True
            while chunk and len(chunk) < len(UTF8_BOM) and UTF8_BOM.startswith(chunk):   # a byte order mark cut short
                more = self._next()
                if not more:
                    break
                chunk += more
            if chunk.startswith(UTF8_BOM):
                chunk = chunk[len(UTF8_BOM):] or self._next()   # b"" would say the text has ended
        self.lines += len(self.ends)
        self.ends = line_ends(chunk)
        if self._after_nul is not None:   # the NUL's line goes on: read to its end, at most _AFTER_NUL bytes
            stop = self._after_nul
        else:
            nul = self._check(chunk)
            stop = -1 if nul < 0 else nul + _AFTER_NUL
        if stop >= 0:
            # the text ends with the NUL byte's line, or _AFTER_NUL bytes after the NUL (the same bytes
            # whatever the read size): the text check sees the line, to tell the encoding it looks like
            end = chunk.find(b"\n", max(0, stop - _AFTER_NUL), stop)
            cut = end + 1 if end >= 0 else min(stop, len(chunk))
            self._ended = end >= 0 or stop <= len(chunk) or not chunk
            self._after_nul = None if self._ended else stop - len(chunk)
            chunk = chunk[:cut]
            self.ends = self.ends[: int(np.searchsorted(self.ends, cut))]
        self._last = chunk
        return chunk

    def line_ends(self, chunk: bytes) -> np.ndarray:
        """:func:`line_ends` of ``chunk``, found once: the chunk last read has them already."""
        return self.ends if chunk is self._last else line_ends(chunk)

    def _check(self, chunk: bytes) -> int:
        """The first NUL byte or over-long line of the chunk: an over-long line is an InputError, a NUL
        byte's place is returned (-1: none). No loop over bytes or lines."""
        ends = self.ends
        # from the start of a line (the first: before the chunk), its end must be within MAX_LINE_BYTES
        # bytes; the last line end there starts the next look (about one look per MiB of text)
        start, size = -self._line_bytes, len(chunk)
        long_line, long_at = None, None   # the first over-long line (0-based in the chunk), where it passes the limit
        while start + MAX_LINE_BYTES < size:
            end = chunk.rfind(b"\n", max(start, 0), start + MAX_LINE_BYTES + 1)
            if end < 0:
                long_line, long_at = int(np.searchsorted(ends, start)), start + MAX_LINE_BYTES
                break
            start = end + 1
        self._line_bytes = size - (int(ends[-1]) + 1) if len(ends) else self._line_bytes + size
        nul = chunk.find(b"\0")
        if nul >= 0 and (long_at is None or nul <= long_at):
            return nul
        if long_line is not None:
            raise InputError(f"line longer than {MAX_LINE_BYTES:,} bytes, the most a line may hold "
                             "(tierank.io.source.MAX_LINE_BYTES): not a file of runs or judgments?",
                             file=self.name, line=self.lines + long_line + 1)
        return -1
