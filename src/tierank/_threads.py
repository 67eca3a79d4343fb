"""Whether tierank's own work may use a second thread.

numpy and pyarrow release the GIL in their loops, so on two cores or more the join and the measures
overlap independent steps on a background thread (:func:`in_background`, the batched kernels of
:mod:`tierank.engine.core`). A worker process of :mod:`tierank.io.workers` switches this off
(:func:`single_threaded`): each worker already keeps one core busy, and a thread started for every
block would only cost its start and the switches; so does a small run, for its call only
(:func:`in_this_thread`). The values are the same either way; only where an error is raised differs
(at the ``result()`` of the future).
"""

from __future__ import annotations

import os
from contextlib import contextmanager
from contextvars import ContextVar
from typing import Any, Callable, Iterator, Protocol

# concurrent.futures is imported where a thread starts: a small run never starts one (1 ms of the command's start)

__all__ = ["cores", "background", "single_threaded", "in_this_thread", "Pending", "in_background",
           "map_on_two_threads"]

_SINGLE_THREADED = False
_IN_THIS_THREAD: ContextVar[bool] = ContextVar("tierank_in_this_thread", default=False)   # per thread


def cores() -> int:
    """The CPU cores this process may run on."""
    try:
        return len(os.sched_getaffinity(0))
    except AttributeError:   # pragma: no cover - not Linux
        return os.cpu_count() or 1


def background() -> bool:
    """Whether work may go to a background thread: two cores or more, and not switched off (for the
    process, or in this thread by :func:`in_this_thread`)."""
    return not _SINGLE_THREADED and not _IN_THIS_THREAD.get() and cores() >= 2


def single_threaded() -> None:
    """Switch background threads off for the rest of this process (a worker process calls it)."""
    global _SINGLE_THREADED
    _SINGLE_THREADED = True


@contextmanager
def in_this_thread(on: bool = True) -> Iterator[None]:
    """While it lasts (``on``), background threads are off for the work this thread does."""
    token = _IN_THIS_THREAD.set(on)
    try:
        yield
    finally:
        _IN_THIS_THREAD.reset(token)


class Pending(Protocol):
    """What :func:`in_background` gives: ``result()`` returns the value of the call or raises its exception
    (a ``concurrent.futures.Future``, or the outcome of a call already made)."""

    def result(self) -> Any: ...


class _Done:
    """The outcome of a call made here and now, read as a future's: ``result()`` returns or raises."""

    def __init__(self, fn: Callable, args: tuple) -> None:
        self._error: Exception | None = None
        try:
            self._value = fn(*args)
        except Exception as err:   # noqa: BLE001 - raised by result(), as from a thread
            self._error = err

    def result(self) -> Any:
        if self._error is not None:
            raise self._error
        return self._value


def in_background(fn: Callable, *args: Any) -> Pending:
    """Run ``fn(*args)`` on a worker thread, or here and now when :func:`background` is False; either
    way its value or its exception comes from ``result()``.

    Examples
    --------
    >>> from tierank._threads import in_background
    >>> in_background(sum, [1, 2, 3]).result()
    6
    """
    if not background():
        return _Done(fn, args)
    from concurrent.futures import ThreadPoolExecutor

    pool = ThreadPoolExecutor(max_workers=1)
    try:
        return pool.submit(fn, *args)
    finally:
        pool.shutdown(wait=False)


def map_on_two_threads(fn: Callable, *iterables: Any) -> list:
    """``list(map(fn, *iterables))``, on two threads when :func:`background` is True.

    Examples
    --------
    >>> from tierank._threads import map_on_two_threads
    >>> map_on_two_threads(pow, [2, 3], [3, 2])
    [8, 9]
    """
    if not background():
        return list(map(fn, *iterables))
    from concurrent.futures import ThreadPoolExecutor

    with ThreadPoolExecutor(max_workers=2) as pool:
        return list(pool.map(fn, *iterables))
