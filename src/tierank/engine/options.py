"""The options of an evaluation, checked in one place.

Every entry point (:func:`tierank.evaluate`, :func:`tierank.evaluate_matrix`, :func:`tierank.evaluate_codes`,
:func:`tierank.tie_report`, the Spark and Dask adapters) builds one :class:`Options` with
:meth:`Options.checked`; the engine below trusts it and checks nothing again. A new option is a field here,
its check here, and a keyword of the entry points that take it (docs/architecture.md, "Adding an option").
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from numbers import Integral, Real
from typing import Any

import numpy as np

from ..errors import InputError, param_text
from ..measures import Measure, parse_measures
from ..measures._no_relevant import check_no_relevant
from ..ties.policy import check_mode

__all__ = ["Options", "DEFAULT_TIE_COST_BUDGET", "TREC_EVAL_VERSIONS", "check_trec_eval_version",
           "check_tie_cost_budget", "check_workers", "check_positive"]

#: operations one query's exact tie-aware work may take for one measure whose work is more than linear in
#: a tie's size (IPrec and IPrecAvg, ERR, infAP, G; see each family's ``cost``): about 10 seconds on one
#: core of 2026 (an operation is a few nanoseconds) and well under 1 GB. ``tie_cost_budget=`` (Python) and
#: ``--tie-cost-budget`` (command line) raise it
DEFAULT_TIE_COST_BUDGET = 2_000_000_000

#: accepted values of ``trec_eval_version``
TREC_EVAL_VERSIONS = (9, 10)


def check_seed(seed: Any) -> int:
    """``seed`` as an int, else an InputError."""
    if isinstance(seed, bool) or not isinstance(seed, (int, np.integer)):
        raise InputError(f"seed must be an integer, got {seed!r}")
    return int(seed)


def check_trec_eval_version(version: object) -> int:
    """Return ``version`` (9 or 10) as an int, else raise InputError.

    trec_eval 10.0 reads run scores as C doubles; 9.x (embedded in pytrec_eval, ir-measures, PyTerrier)
    stores them as C floats, so scores equal in float32 tie there.

    >>> check_trec_eval_version(9)
    9
    """
    if isinstance(version, bool) or not isinstance(version, (int, np.integer)) \
            or int(version) not in TREC_EVAL_VERSIONS:
        raise InputError(f"trec_eval_version={version!r}: use 10 (run scores read as doubles, the default) "
                         "or 9 (scores stored as floats, as pytrec_eval / ir-measures / PyTerrier do)")
    return int(version)


def check_tie_cost_budget(budget: Any) -> int:
    """The budget of :func:`tierank.engine.core.check_tie_costs`, checked: None gives
    :data:`DEFAULT_TIE_COST_BUDGET`; else a positive whole number (an int, or a float such as ``1e10``).

    >>> check_tie_cost_budget(None) == DEFAULT_TIE_COST_BUDGET, check_tie_cost_budget(1e10)
    (True, 10000000000)
    """
    if budget is None:
        return DEFAULT_TIE_COST_BUDGET
    if isinstance(budget, bool) or not isinstance(budget, Real) or not (
            isinstance(budget, Integral) or (math.isfinite(float(budget)) and float(budget).is_integer())):
        raise InputError(f"{param_text('tie_cost_budget', budget)}: the budget must be a positive whole number of "
                         "operations")
    if budget < 1:
        raise InputError(f"{param_text('tie_cost_budget', budget)}: the budget must be at least 1")
    return int(budget) if isinstance(budget, Integral) else int(float(budget))


def check_workers(workers: Any) -> None:
    """An InputError unless ``workers`` is None or a positive integer.

    >>> check_workers(2)
    >>> check_workers(0)
    Traceback (most recent call last):
    ...
    tierank.errors.InputError: workers must be a positive integer or None, got 0
    """
    if workers is not None and (isinstance(workers, bool) or not isinstance(workers, (int, np.integer))
                                or workers < 1):
        raise InputError(f"workers must be a positive integer or None, got {workers!r}")


def check_positive(value: Any, name: str) -> int:
    """``value`` as an int when it is a positive integer, else an InputError naming ``name``."""
    if isinstance(value, bool) or not isinstance(value, (int, np.integer)) or value < 1:
        raise InputError(f"{name} must be a positive integer, got {value!r}")
    return int(value)


@dataclass(repr=False, eq=False)   # never shown, compared nor hashed; dataclasses.replace makes the changed copies
class Options:
    """The checked options of one evaluation: what every layer below the entry points reads.

    Attributes
    ----------
    measures : dict of str to Measure
        The measures as the user wrote them (the Results' column labels) -> parsed measure; with
        ``trec_eval_version=9``, :func:`tierank.evaluate` holds their trec_eval 9 forms.
    ties, bounds, missing, seed, no_relevant, trec_eval_version, judged_only, max_docs, tie_cost_budget
        As for :func:`tierank.evaluate`.
    names : tuple
        The column names of a run and a qrels table on an engine (Spark, Dask).
    """

    measures: dict
    ties: str = "expected"
    bounds: bool = False
    missing: str = "skip"
    seed: int = 0
    no_relevant: str = "zero"
    trec_eval_version: int = 10
    judged_only: bool = False
    max_docs: int | None = None
    names: tuple = (("query_id", "doc_id", "score"), ("query_id", "doc_id", "relevance"))
    tie_cost_budget: int = DEFAULT_TIE_COST_BUDGET

    @classmethod
    def checked(cls, measures: Any, *, ties: str = "expected", bounds: bool = False, missing: str = "skip",
                seed: Any = 0, no_relevant: str = "zero", trec_eval_version: Any = 10, judged_only: bool = False,
                max_docs: int | None = None, tie_cost_budget: Any = None, workers: Any = None,
                trec9_measures: bool = True) -> "Options":
        """The options checked, in the order of :func:`tierank.evaluate`'s checks (the first bad one is
        the error). ``measures``: measure strings or a dict ``{label: measure}``; ``trec9_measures``: with
        ``trec_eval_version=9``, the measures' trec_eval 9 forms (recall levels counted as 9.x counts)."""
        check_mode(ties)
        seed = check_seed(seed)
        check_workers(workers)
        version = check_trec_eval_version(trec_eval_version)
        check_no_relevant(no_relevant)
        budget = check_tie_cost_budget(tie_cost_budget)
        if missing not in ("skip", "zero"):
            raise InputError(f"missing={missing!r}: use 'skip' or 'zero'")
        parsed = parse_measures(measures)
        if version == 9 and trec9_measures:
            parsed = {text: m.as_trec9() for text, m in parsed.items()}
        return cls(parsed, ties, bool(bounds), missing, seed, no_relevant, version, bool(judged_only), max_docs,
                   tie_cost_budget=budget)

    @property
    def distinct(self) -> list[Measure]:
        """The measures, each once (two labels may name one measure)."""
        return list(dict.fromkeys(self.measures.values()))

    @property
    def scores_as_float32(self) -> bool:
        """Scores rounded to float32 first, as trec_eval 9.x stores them."""
        return self.trec_eval_version == 9

    def columns(self) -> list[str]:
        """The value columns of a per-query table, in order (with bounds: ``<label>_lower``, ``_upper``)."""
        out = list(self.measures)
        if self.bounds:
            out += [f"{t}_lower" for t in self.measures] + [f"{t}_upper" for t in self.measures]
        return out
