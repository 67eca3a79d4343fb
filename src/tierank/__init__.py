"""tierank: ranking and retrieval metrics that are exact when scores tie.

The tie-aware value of a measure is its exact mean over all orderings of tied items (McSherry &
Najork, ECIR 2008), computed in closed form. tierank also gives the exact minimum and maximum over
those orderings, and reproduces the classic tie-breaks (trec_eval's, input order, seeded random).

>>> import tierank
>>> tierank.evaluate_matrix([[1, 0, 0]], scores=[[1.0, 1.0, 1.0]], measures=["P@1"]).mean
{'P@1': 0.3333333333333333}
"""

from .api import evaluate, evaluate_codes, evaluate_matrix
from .compare import Comparison, compare
from .io.trec import read_qrels, read_run
from .io.write import write_qrels, write_run
from .report import TieReport, tie_report
from .errors import InputError, OutputError, TierankError, TierankWarning
from .measures import Measure, measure_names, parse_measure
from .results import Results
from .ties.policy import TIE_MODES

__version__ = "0.1.0"

__all__ = [
    "evaluate",
    "evaluate_matrix",
    "evaluate_codes",
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
