"""Exceptions raised by tierank.

Hierarchy::

    TierankError                    base class of every tierank exception
    ├── InputError (also ValueError) bad input: data, measure strings, parameters
    └── OutputError (also OSError)   an output that cannot or must not be written

    TierankWarning (a UserWarning)  something in the input was left out or changed

An :class:`InputError` names the problem and where it is: the file and line for files,
the query id (or row number) for in-memory data, the measure string for measures.
"""

from __future__ import annotations

from contextlib import contextmanager
from typing import Any, Callable, Iterator

__all__ = ["TierankError", "InputError", "OutputError", "TierankWarning", "install_hint", "param_text", "spelled_as"]


class TierankError(Exception):
    """Base class of the exceptions raised by tierank."""


class InputError(TierankError, ValueError):
    """Invalid input: the message says what is wrong and where.

    Parameters
    ----------
    message : str
        What is wrong.
    file : str, optional
        The file the problem is in.
    line : int, optional
        The 1-based line number in ``file``.
    query : object, optional
        The query id (or matrix row) the problem is in.

    Examples
    --------
    >>> import tierank
    >>> try:
    ...     tierank.evaluate_matrix([[1, 0]], scores=[[0.5, float("nan")]], measures=["P@1"])
    ... except tierank.InputError as err:
    ...     print(err)
    scores contains NaN (row 0)
    """

    def __init__(self, message: str, *, file: str | None = None, line: int | None = None,
                 query: object = None) -> None:
        self.file = file
        self.line = line
        self.query = query
        where = []
        if file is not None:
            where.append(f"{file}:{line}" if line is not None else str(file))
        text = f"{where[0]}: {message}" if where else message
        super().__init__(text)
        self.message = message


class OutputError(TierankError, OSError):
    """An output file that cannot be written, or must not be: the message names the file and why
    (its directory is missing, it is a directory, it is one of the inputs, the disk is full).

    Examples
    --------
    >>> import os, tempfile
    >>> from tierank.io.output import check_output
    >>> folder = tempfile.mkdtemp()
    >>> try:
    ...     check_output(os.path.join(folder, "missing", "report.html"))
    ... except OutputError as err:
    ...     print(str(err).replace(folder, "DIR"))
    cannot write DIR/missing/report.html: no such directory: DIR/missing
    """


class TierankWarning(UserWarning):
    """Something in the input was left out or changed; the message says what and how much."""


# How messages name a parameter and its value: None for Python's ``name=value``; the command line sets its
# own (``-M 50``) with spelled_as() while it runs. A plain global, not a ContextVar: worker threads raise too.
_SPELLING: Callable[[str, Any], str | None] | None = None


def param_text(name: str, value: Any) -> str:
    """A parameter with its value, as the caller of tierank writes it: the one place where messages name
    the options a user can change.

    Python spells it ``name=value``; the command line, through :func:`spelled_as`, by its flag.

    Parameters
    ----------
    name : str
        The parameter's name in the Python API (``"max_docs"``, ``"ties"``).
    value : object
        Its value.

    Returns
    -------
    str

    Examples
    --------
    >>> param_text("ties", "trec_eval")
    "ties='trec_eval'"
    >>> with spelled_as(lambda name, value: f"--{name} {value}"):
    ...     param_text("ties", "trec_eval")
    '--ties trec_eval'
    """
    if _SPELLING is not None:
        spelled = _SPELLING(name, value)
        if spelled is not None:
            return spelled
    return f"{name}={value!r}"


@contextmanager
def spelled_as(spelling: Callable[[str, Any], str | None]) -> Iterator[None]:
    """Within the block, :func:`param_text` names parameters with ``spelling(name, value)`` (None: as
    Python does). The command line uses it so that its errors speak of ``-M 50``, not ``max_docs=50``.

    Examples
    --------
    >>> with spelled_as(lambda name, value: "-M 5" if name == "max_docs" else None):
    ...     param_text("max_docs", 5), param_text("seed", 1)
    ('-M 5', 'seed=1')
    """
    global _SPELLING
    before, _SPELLING = _SPELLING, spelling
    try:
        yield
    finally:
        _SPELLING = before


def install_hint(extra: str, *also: str) -> str:
    """The command that installs an optional part of tierank, worded to work whether tierank came from
    PyPI or from a clone of its repository: the one place that spells it.

    Parameters
    ----------
    extra : str
        The extra of pyproject.toml (``"stats"``, ``"plot"``, ``"keras"``...).
    *also : str
        Other packages to install with it (Keras's backend: ``"tensorflow"``).

    Returns
    -------
    str

    Examples
    --------
    >>> install_hint("stats")
    "pip install 'tierank[stats]' (in a clone of tierank: pip install '.[stats]')"
    >>> install_hint("keras", "tensorflow")
    "pip install 'tierank[keras]' tensorflow (in a clone of tierank: pip install '.[keras]' tensorflow)"
    """
    rest = "".join(f" {package}" for package in also)
    return f"pip install 'tierank[{extra}]'{rest} (in a clone of tierank: pip install '.[{extra}]'{rest})"
