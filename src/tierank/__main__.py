"""``python -m tierank`` and the ``tierank`` console script: the command, with the cyclic garbage collector
off while its modules load (:func:`tierank.cli.run` freezes them and turns it on; docs/architecture.md,
"Start-up"). Only a process started as the command imports this module, never code that imports tierank."""

import gc

gc.disable()
from .cli import run  # noqa: E402  (after the collector is off)

if __name__ == "__main__":  # pragma: no cover
    run()
