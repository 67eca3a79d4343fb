"""tierank: ranking and retrieval metrics that are exact when scores tie.

The tie-aware value of a measure is its exact mean over all orderings of tied items (McSherry &
Najork, ECIR 2008), computed in closed form. tierank also gives the exact minimum and maximum over
those orderings, and reproduces the classic tie-breaks (trec_eval's, input order, seeded random).

>>> import tierank
>>> tierank.evaluate_matrix([[1, 0, 0]], scores=[[1.0, 1.0, 1.0]], measures=["P@1"]).mean
{'P@1': 0.3333333333333333}
"""

from typing import TYPE_CHECKING, Any

from .errors import InputError, OutputError, TierankError, TierankWarning

# The public names and the module each comes from. They load when first used (PEP 562), so that
# ``import tierank`` and the command line load only what they need (docs/architecture.md, "Start-up").
_LAZY = {
    "evaluate": "api", "evaluate_matrix": "arrays", "evaluate_codes": "arrays", "evaluate_embeddings": "arrays",
    "EmbeddingResults": "embedding_results", "TieAudit": "embedding_results",
    "compare": "comparison", "Comparison": "comparison",
    "read_run": "io.trec", "read_qrels": "io.trec", "write_run": "io.write", "write_qrels": "io.write",
    "tie_report": "report", "TieReport": "report",
    "parse_measure": "measures", "measure_names": "measures", "Measure": "measures",
    "Results": "results",
    "TIE_MODES": "ties.policy",
}

__version__ = "0.1.0"

__all__ = [
    "evaluate",
    "evaluate_matrix",
    "evaluate_codes",
    "evaluate_embeddings",
    "EmbeddingResults",
    "TieAudit",
    "compare",
    "Comparison",
    "tie_report",
    "TieReport",
    "read_run",
    "read_qrels",
    "write_run",
    "write_qrels",
    "parse_measure",
    "measure_names",
    "Measure",
    "Results",
    "InputError",
    "OutputError",
    "TierankError",
    "TierankWarning",
    "TIE_MODES",
    "__version__",
]


def __getattr__(name: str) -> Any:
    if name in _LAZY:
        import importlib

        value = getattr(importlib.import_module(f"{__name__}.{_LAZY[name]}"), name)
        globals()[name] = value   # once: the next use is a plain attribute
        return value
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


def __dir__() -> list[str]:
    return sorted(__all__)


if TYPE_CHECKING:   # for type checkers and IDEs: the same names, eagerly
    from .api import evaluate
    from .arrays import evaluate_codes, evaluate_embeddings, evaluate_matrix
    from .embedding_results import EmbeddingResults, TieAudit
    from .comparison import Comparison, compare
    from .io.trec import read_qrels, read_run
    from .io.write import write_qrels, write_run
    from .measures import Measure, measure_names, parse_measure
    from .report import TieReport, tie_report
    from .results import Results
    from .ties.policy import TIE_MODES
