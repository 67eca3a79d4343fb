"""The progress bar of long jobs: tqdm on stderr, shown after half a second of work (the environment
variable ``TIERANK_PROGRESS_DELAY`` sets another delay, in seconds), and by default only when stderr is
a terminal (``progress=None``), so logs and pipes stay clean."""

from __future__ import annotations

import os
import sys
from typing import Any

__all__ = ["ProgressBar", "delay"]

DELAY = 0.5   # seconds of work before the bar shows up


def delay(default: float = DELAY) -> float:
    """Seconds of work before a bar shows up: ``TIERANK_PROGRESS_DELAY`` if set, else ``default``."""
    text = os.environ.get("TIERANK_PROGRESS_DELAY")
    try:
        return default if text is None else max(0.0, float(text))
    except ValueError:
        return default


class ProgressBar:
    """A tqdm bar on stderr (``enabled=None``: only when stderr is a terminal), or nothing.

    Examples
    --------
    >>> bar = ProgressBar(False, total=3, desc="blocks", unit="block")
    >>> bar.update(1); bar.close()   # disabled: does nothing
    """

    def __init__(self, enabled: bool | None, total: int | None, desc: str, unit: str) -> None:
        if enabled is None:
            enabled = sys.stderr.isatty()
        self.bar: Any = None
        if enabled:
            from tqdm import tqdm

            self.bar = tqdm(total=total, desc=desc, unit=unit, unit_scale=True, file=sys.stderr, leave=False,
                            dynamic_ncols=True, delay=delay(DELAY))

    def update(self, n: int) -> None:
        if self.bar is not None and n:
            self.bar.update(n)

    def close(self) -> None:
        if self.bar is not None:
            self.bar.close()
            self.bar = None
