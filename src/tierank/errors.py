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

__all__ = ["TierankError", "InputError", "OutputError", "TierankWarning"]


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
