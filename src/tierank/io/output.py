"""Writing output files safely: never over an input, never half-written.

Every file tierank writes (``tierank report -o``, ``tierank --plot``, :func:`tierank.write_run`,
:func:`tierank.write_qrels`, :func:`tierank.html_report.write_report`, :func:`tierank.plot.save_plot`)
goes through the two functions of this module:

* :func:`check_output`, called before anything is read or computed: the output must not be one of the
  inputs (the same file, whatever the path: symlinks are followed and hard links compared by device
  and inode), must not be a directory, and its directory must exist and be writable. A problem is an
  :class:`~tierank.errors.OutputError` naming the file, before any work is done.
* :func:`atomic_write`, which writes a regular file to a temporary file next to it (in the directory
  of the resolved target, so that a symlinked output is written through its link) and renames it over
  the target only once everything is written: an interrupted or failed run leaves the old file as it
  was, never half of a new one. ``"-"`` (standard output) and targets that are not regular files
  (``/dev/null``, a FIFO, a terminal) are written directly.
"""

from __future__ import annotations

import os
import stat
import sys
from contextlib import contextmanager
from typing import IO, Any, Iterable, Iterator

from ..errors import OutputError
from .source import TextInput

__all__ = ["check_output", "atomic_write"]


def _name(path: Any) -> str:
    name = os.fspath(path)
    return name.decode(errors="surrogateescape") if isinstance(name, bytes) else name


def _input_path(source: Any) -> str | None:
    """The path of an input (a path, or a ``TextInput``'s), or None for data in
    memory."""
    if isinstance(source, TextInput):
        source = source.path
    if isinstance(source, (str, bytes)) or hasattr(source, "__fspath__"):
        return _name(source)
    return None


def _stat(name: str) -> os.stat_result | None:
    """``os.stat`` (symlinks followed) of a path, of standard input / output for ``"-"``, or None if
    there is no such file."""
    try:
        return os.stat(name)
    except FileNotFoundError:
        return None


def _fd_stat(fd: int) -> os.stat_result | None:
    try:
        return os.fstat(fd)
    except (OSError, ValueError):
        return None


def _stdout_stat() -> os.stat_result | None:
    try:
        return _fd_stat(sys.stdout.fileno())
    except (AttributeError, OSError, ValueError):   # replaced by an object without a descriptor
        return None


def _same(a: os.stat_result, b: os.stat_result) -> bool:
    return (a.st_dev, a.st_ino) == (b.st_dev, b.st_ino)


def _is_input(out: os.stat_result, out_real: str | None, source: Any) -> str | None:
    """The input's name if the output is that input (or a file inside an input directory)."""
    name = _input_path(source)
    if name is None:
        return None
    if name == "-":   # standard input redirected from a file
        st = _fd_stat(0)
        return "standard input" if st is not None and stat.S_ISREG(st.st_mode) and _same(st, out) else None
    try:
        st = os.stat(name)
    except OSError:
        return None   # reading it will say what is wrong
    if _same(st, out):
        return name
    if stat.S_ISDIR(st.st_mode) and out_real is not None:   # a Parquet directory: its files are inputs
        inside = os.path.realpath(name)
        if os.path.commonpath([inside, out_real]) == inside:
            return name
    return None


def check_output(path: Any, inputs: Iterable[Any] = ()) -> None:
    """Check, before any work, that ``path`` can be written and is none of ``inputs``.

    Parameters
    ----------
    path : str or os.PathLike
        The output file; ``"-"`` is standard output (checked only against the inputs: a shell
        redirection ``> run.txt`` of an input).
    inputs : iterable
        The inputs of the same command: paths, ``TextInput``, ``"-"``
        (standard input); anything else (data in memory) is skipped.

    Raises
    ------
    OutputError
        ``cannot write X: ...``: X is one of the inputs (the same file through any path, symlink or
        hard link, or a file inside an input directory), a directory, in a directory that does not
        exist or cannot be written, or a file that cannot be written.

    Examples
    --------
    >>> import os, tempfile
    >>> from tierank.errors import OutputError
    >>> folder = tempfile.mkdtemp()
    >>> run = os.path.join(folder, "run.txt")
    >>> with open(run, "w") as f:
    ...     _ = f.write("q1 Q0 d1 1 0.5 x\\n")
    >>> os.symlink(run, os.path.join(folder, "link.txt"))
    >>> check_output(os.path.join(folder, "report.html"), [run])   # fine
    >>> try:
    ...     check_output(os.path.join(folder, "link.txt"), [run])
    ... except OutputError as err:
    ...     print(str(err).replace(folder + os.sep, ""))
    cannot write link.txt: it is the input run.txt
    """
    name = _name(path)
    if name == "-":
        out = _stdout_stat()
        if out is None or not stat.S_ISREG(out.st_mode):
            return
        shown, real = "standard output", None
    else:
        shown = name
        if not name:
            raise OutputError("cannot write '': the file name is empty")
        try:
            out = _stat(name)
        except OSError as err:   # e.g. a path through a file, a loop of symlinks
            raise OutputError(f"cannot write {name}: {err.strerror or err}") from None
        real = os.path.realpath(name)
        if out is not None and stat.S_ISDIR(out.st_mode):
            raise OutputError(f"cannot write {name}: it is a directory")
        if out is None and name.endswith((os.sep, os.altsep or os.sep)):   # "new/": a directory's name
            raise OutputError(f"cannot write {name}: it names a directory")
        if out is None or stat.S_ISREG(out.st_mode):   # a new file or a regular one: made in its directory
            folder = os.path.dirname(real)
            if not os.path.isdir(folder):
                raise OutputError(f"cannot write {name}: no such directory: {os.path.dirname(name) or folder}")
            if not os.access(folder, os.W_OK | os.X_OK):
                raise OutputError(f"cannot write {name}: permission denied (directory {folder})")
        if out is not None and not os.access(name, os.W_OK):
            raise OutputError(f"cannot write {name}: permission denied")
        if out is None:
            return
    for source in inputs:
        same = _is_input(out, real, source)
        if same is not None:
            raise OutputError(f"cannot write {shown}: it is the input {same}")


def _temp_file(folder: str, base: str) -> tuple[int, str]:
    """A new file in ``folder``, created with the mode a plain ``open`` gives (0o666 less the umask)."""
    import secrets   # (here: its hmac and hashlib cost the command line's start-up)

    for _ in range(100):
        tmp = os.path.join(folder, f".{base[:200]}.{secrets.token_hex(6)}.tmp")
        try:
            return os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL | getattr(os, "O_BINARY", 0), 0o666), tmp
        except FileExistsError:
            continue
    raise FileExistsError(f"no free temporary name next to {base}")


@contextmanager
def atomic_write(path: Any, mode: str = "w", *, encoding: str = "utf-8",
                 newline: str | None = "\n") -> Iterator[IO[Any]]:
    """Open ``path`` for writing so that it holds either its old content or the whole new one.

    A regular file (or a new one) is written to a temporary file in the directory of the resolved
    target (a symlink is written through), flushed to disk and renamed over the target when the
    ``with`` block ends without error; on any error (or interruption) the temporary file is removed
    and the target is left as it was. The new file keeps the old one's permission bits (a new file
    gets the umask's, as with ``open``). ``"-"`` is standard output, and a target that is not a
    regular file (``/dev/null``, a FIFO, a terminal) is opened and written directly.

    Parameters
    ----------
    path : str or os.PathLike
    mode : {"w", "wb"}
        Text (``encoding``, ``newline``) or bytes.

    Yields
    ------
    file object

    Raises
    ------
    OutputError
        When writing fails (``cannot write X: No space left on device``); the target is unchanged.

    Examples
    --------
    >>> import os, tempfile
    >>> path = os.path.join(tempfile.mkdtemp(), "out.txt")
    >>> with atomic_write(path) as f:
    ...     _ = f.write("first\\n")
    >>> try:
    ...     with atomic_write(path) as f:
    ...         _ = f.write("half of the second")
    ...         raise RuntimeError("interrupted")
    ... except RuntimeError:
    ...     pass
    >>> with open(path) as f:         # the old content, whole
    ...     f.read()
    'first\\n'
    >>> sorted(os.listdir(os.path.dirname(path)))   # no temporary file left
    ['out.txt']
    """
    if mode not in ("w", "wb"):
        raise ValueError(f"mode {mode!r}: use 'w' or 'wb'")
    binary = mode == "wb"
    enc, nl = (None, None) if binary else (encoding, newline)
    name = _name(path)
    if name == "-":
        if sys.stdout is None:   # started with standard output closed (>&-)
            raise OutputError("cannot write to standard output: it is closed")
        stream: IO[Any] = sys.stdout.buffer if binary else sys.stdout
        yield stream
        stream.flush()
        return
    try:
        target = _stat(name)
        if target is not None and not stat.S_ISREG(target.st_mode):   # a device, a FIFO: no file to replace
            with open(name, mode, encoding=enc, newline=nl) as direct:
                yield direct
            return
        real = os.path.realpath(name)
        fd, tmp = _temp_file(os.path.dirname(real), os.path.basename(real))
    except OSError as err:
        raise OutputError(f"cannot write {name}: {err.strerror or err}") from None
    try:
        if target is not None:
            os.chmod(tmp, stat.S_IMODE(target.st_mode))
        with os.fdopen(fd, mode, encoding=enc, newline=nl) as fh:
            yield fh
            fh.flush()
            os.fsync(fh.fileno())
        os.replace(tmp, real)
    except BaseException as err:
        try:
            os.unlink(tmp)
        except OSError:
            pass
        if isinstance(err, OSError) and not isinstance(err, OutputError):
            raise OutputError(f"cannot write {name}: {err.strerror or err}") from None
        raise
