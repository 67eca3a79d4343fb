"""``python -m tierank`` and the ``tierank`` console script: the ``tierank`` command.

The cyclic garbage collector is off while the command's modules load: what they define lives as long as
the process, and scanning it again and again as it grows costs about a tenth of the start-up;
:func:`tierank.cli.run` freezes it and turns the collector on (docs/architecture.md, "Start-up"). Only a
process started as the command imports this module, never code that imports tierank.
"""

import gc

gc.disable()

from .cli import run  # noqa: E402  (after the collector is off)

if __name__ == "__main__":  # pragma: no cover
    run()
