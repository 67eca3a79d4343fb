"""How a measure is declared: a family (name, aliases, parameters, cutoff rule, kernel) and a
:class:`Measure` value (a family with every parameter bound, and a cutoff).

A kernel maps tie statistics (:class:`tierank.ties.groups.TieStats`) to one value per query; it never
sees ids, files or DataFrames. A tie mode never needs code in a kernel: fixed orderings are passed as
lists of singleton ties.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from numbers import Real
from typing import TYPE_CHECKING, Any, Callable, Sequence

import numpy as np

from ..errors import InputError

if TYPE_CHECKING:
    from ..ties.groups import Judged

__all__ = ["Param", "MeasureFamily", "Measure", "QueryError", "real_param", "bool_param", "choice_param",
           "MAX_CUTOFF"]

# The largest cutoff k: longer than any ranking (so P@k is relevant retrieved / k, other measures as with
# no cutoff), and with room in int64 for k + k, which the kernels' rank arithmetic may compute.
MAX_CUTOFF = 2 ** 62


class QueryError(ValueError):
    """A kernel's complaint about one query's data; carries the query index, and the evaluation turns
    it into an :class:`~tierank.errors.InputError` naming the query id (or row)."""

    def __init__(self, message: str, query: int) -> None:
        super().__init__(message)
        self.query = query


@dataclass(frozen=True)
class Param:
    """A declared parameter: its default, a checker that returns the normalised value, a description."""

    default: Any
    check: Callable[[Any], Any]
    desc: str


class _RealCheck:
    """Checker of a real-number parameter (a class, not a closure, so measures pickle)."""

    def __init__(self, name: str, positive: bool, allow_none: bool, minimum: float | None,
                 why: str) -> None:
        self.name, self.positive, self.allow_none, self.minimum, self.why = (
            name, positive, allow_none, minimum, why)

    def __call__(self, v: Any) -> Any:
        if v is None and self.allow_none:
            return None
        if isinstance(v, bool) or not isinstance(v, Real) or not _finite(v):
            raise ValueError(f"{self.name} must be a finite number, got {v!r}")
        if self.positive and v <= 0:
            raise ValueError(f"{self.name} must be > 0, got {v!r}")
        if self.minimum is not None and v < self.minimum:
            raise ValueError(f"{self.name} must be >= {self.minimum:g}{self.why}, got {v!r}")
        # whole numbers below 2**53 as int (shown as P(rel=2)); larger ones stay float (1e+308, not 309 digits)
        return int(v) if float(v).is_integer() and abs(v) < 2 ** 53 else float(v)


def _finite(v: Real) -> bool:
    """Whether ``v`` is a finite number that a float holds (an int beyond 1.8e308 is not)."""
    try:
        return math.isfinite(float(v))
    except OverflowError:
        return False


class _BoolCheck:
    def __init__(self, name: str) -> None:
        self.name = name

    def __call__(self, v: Any) -> Any:
        if not isinstance(v, bool):
            raise ValueError(f"{self.name} must be True or False, got {v!r}")
        return v


class _ChoiceCheck:
    def __init__(self, name: str, choices: Sequence[str]) -> None:
        self.name, self.choices = name, tuple(choices)

    def __call__(self, v: Any) -> Any:
        if v not in self.choices:
            raise ValueError(f"{self.name} must be one of {', '.join(repr(c) for c in self.choices)}, "
                             f"got {v!r}")
        return v


def real_param(name: str, *, positive: bool = False, allow_none: bool = False,
               minimum: float | None = None, why: str = "") -> Callable[[Any], Any]:
    """Checker of a finite real parameter (``minimum``: smallest accepted value, ``why`` its reason)."""
    return _RealCheck(name, positive, allow_none, minimum, why)


def bool_param(name: str) -> Callable[[Any], Any]:
    return _BoolCheck(name)


def choice_param(name: str, choices: Sequence[str]) -> Callable[[Any], Any]:
    return _ChoiceCheck(name, choices)


@dataclass(frozen=True, repr=False, eq=False)   # its own __repr__
class MeasureFamily:
    """One measure, declared once.

    Attributes
    ----------
    name : str
        Canonical name (``"nDCG"``).
    summary : str
        One line for help texts.
    params : dict of str to Param
    cutoff : {"required", "optional", "none"}
        Whether ``@k`` must, may or must not be given.
    kernel : callable
        ``kernel(groups, measure) -> ndarray`` of one value per query.
    preference : callable
        ``preference(measure, grades) -> list of arrays``, the item value the measure prefers higher
        (primary key first): the optimistic order sorts ties by it descending, the pessimistic ascending.
    aliases : tuple of (str, dict)
        Other names (matched case-insensitively) with the parameters they preset.
    aggregate : {"mean", "sum", "gm", "none"}
        Over queries: the mean, the sum (counts), trec_eval's geometric mean (gm_map), or none (text).
    exact_bounds : callable, optional
        ``exact_bounds(expected_groups, optimistic, pessimistic, measure) -> (lower, upper)`` where the
        optimistic / pessimistic orderings are not the extremes (AP with ``denom='retrieved'``).
    normalize : callable, optional
        ``normalize(params) -> params``: cross-parameter checks and spellings.
    empty : {"zero", "one", "R"}
        The value for a query that retrieved nothing (``missing="zero"``, trec_eval ``-c``).
    value_range : (float, float)
        The smallest and largest value a query can take under any ordering (``(0.0, 1.0)`` for
        proportions, ``(0.0, inf)`` for counts, DCG and grade-weighted measures). Every family declares
        it (the registry-wide property test checks it).
    text : bool
        Values are strings (RelString), not numbers: no range, no bounds of their own, no mean.
    reads : {"list", "top_k", "judged"}
        What of a ranked list the measure reads: the whole list; with ``@k`` only the top k items
        (and the judged grades: R, the ideal DCG), so a matrix row needs only its k best items (the
        top-k path); or only the judged grades (NumQ, NumRel).
    tie_scope : {"rank", "set", "first_hit", "set_first_hit", "set_R"}
        Which ties can change the measure (the tie report's ``docs_share``), among ties holding items
        the measure's preference tells apart: ``rank``, ties starting above the cutoff; ``set``, ties
        crossing the cutoff (the order inside the top k does not matter); ``first_hit``, ties above the
        cutoff with no preferred item before them; ``set_first_hit`` both; ``set_R``, ties crossing
        rank R (Rprec).
    trec : tuple of TrecName
        The trec_eval measures this family computes: their names, parameters, defaults
        (:class:`tierank.measures._trec.TrecName`); empty if trec_eval has none.
    batch : callable, optional
        ``batch(groups, measures)``, called once per tie statistics with every measure of an evaluation
        that has this ``batch`` before their kernels run: it computes what those measures share in one
        pass and leaves it in ``groups.memo`` for the kernels (IPrec: every recall level at once).
    cost : callable, optional
        ``cost(groups, measure, bounds) -> (ties, operations)``, declared by the families whose exact
        expectation (``bounds=False``: the kernel on ties kept whole) or exact bounds (``bounds=True``:
        ``exact_bounds``) take more than linear time or memory in a tie's size: the ties (distinct indices
        into ``groups``) that need such work and an estimate of each one's operations (float64, an exact
        integer below 2**53, never wrapped: see ``measures._common.exact_products``). The
        evaluation sums it per query and raises an InputError before any kernel runs when a query's sum
        exceeds the budget (``tie_cost_budget``, ``tierank.engine.core.check_tie_costs``). None: linear
        in every tie, nothing to check.
    """

    name: str
    summary: str
    params: dict[str, Param]
    cutoff: str
    kernel: Callable
    preference: Callable
    aliases: tuple = ()
    aggregate: str = "mean"
    exact_bounds: Callable | None = None
    normalize: Callable | None = None
    empty: str = "zero"
    value_range: tuple | None = None
    text: bool = False
    reads: str = "list"
    tie_scope: str = "rank"
    trec: tuple = ()
    batch: Callable | None = None
    cost: Callable | None = None

    def __repr__(self) -> str:
        return f"<measure family {self.name}: {self.summary}>"

    @property
    def is_count(self) -> bool:
        """Whether the measure counts (NumQ, NumRet, NumRel, NumRelRet): its aggregate over queries is their
        sum, its values are whole numbers, printed as integers, and it is never tested for significance.

        >>> from tierank.measures import REGISTRY
        >>> REGISTRY["NumRet"].is_count, REGISTRY["AP"].is_count
        (True, False)
        """
        return self.aggregate == "sum"

    @property
    def proportion(self) -> bool:
        """Whether every value lies in [0, 1] (``no_relevant="one"`` applies to these)."""
        return self.value_range is not None and tuple(self.value_range) == (0.0, 1.0)

    def bind(self, params: dict[str, Any], cutoff: int | None, text: str) -> "Measure":
        """Check parameters and cutoff against the declaration and return a :class:`Measure`.

        ``judged_only`` (ir-measures; ``judged`` is taken for it) is accepted by every measure: the
        measure is computed on the retrieved documents that have a judgment (trec_eval ``-J``)."""
        params = dict(params)
        judged_only = params.pop("judged_only", params.pop("judged", False))
        if not isinstance(judged_only, bool):
            raise InputError(f"measure {text!r}: judged_only must be True or False, got {judged_only!r}")
        unknown = sorted(set(params) - set(self.params))
        if unknown:
            accepted = ", ".join(self.params) or "none"
            raise InputError(f"measure {text!r}: unknown parameter {unknown[0]!r} for {self.name} "
                             f"(accepted: {accepted})")
        values: dict[str, Any] = {}
        for key, spec in self.params.items():
            if key in params:
                try:
                    values[key] = spec.check(params[key])
                except ValueError as err:
                    raise InputError(f"measure {text!r}: {err}") from None
                except (TypeError, OverflowError) as err:   # a check's float() or numpy call on a value out of reach
                    raise InputError(f"measure {text!r}: {key} cannot be {params[key]!r} ({err})") from None
            else:
                values[key] = spec.default
        if self.normalize is not None:
            try:
                values = self.normalize(values)
            except ValueError as err:
                raise InputError(f"measure {text!r}: {err}") from None
        if cutoff is None and self.cutoff == "required":
            raise InputError(f"measure {text!r}: {self.name} needs a cutoff k, e.g. '{self.name}@10'")
        if cutoff is not None and self.cutoff == "none":
            raise InputError(f"measure {text!r}: {self.name} takes no cutoff k")
        if cutoff is not None and cutoff > MAX_CUTOFF:   # every cutoff, of every spelling, is bound here
            raise InputError(f"measure {text!r}: the cutoff k={cutoff} is too large; at most {MAX_CUTOFF} "
                             "(2**62, beyond any ranking)")
        if judged_only:
            values["judged_only"] = True
        return Measure(self, tuple(sorted(values.items(), key=lambda kv: kv[0])), cutoff, text)


def _shown(value: Any) -> str:
    """A parameter value as a measure string shows it; a function by its name (it cannot be parsed back:
    give such measures as Measure objects, e.g. ``parse_measure("nDCG@10").replace(gain=my_gain)``)."""
    if callable(value):
        return getattr(value, "__name__", type(value).__name__)
    return repr(value)


@dataclass(frozen=True, repr=False, eq=False)   # its own __repr__, __eq__ and __hash__
class Measure:
    """A measure with every parameter bound. ``str(m)`` is its canonical spelling."""

    family: MeasureFamily = field(compare=False)
    items: tuple
    cutoff: int | None
    text: str = field(default="", compare=False)
    name: str = field(default="", init=False)

    def __post_init__(self) -> None:
        object.__setattr__(self, "name", self.family.name)

    @property
    def params(self) -> dict[str, Any]:
        return dict(self.items)

    @property
    def judged_only(self) -> bool:
        """Whether the measure is computed on judged documents only (``judged_only=True``)."""
        return dict(self.items).get("judged_only", False)

    @property
    def is_text(self) -> bool:
        """Whether the values are text (RelString's strings), not numbers: no mean, range or bounds.

        >>> from tierank import parse_measure
        >>> parse_measure("relstring").is_text, parse_measure("AP").is_text
        (True, False)
        """
        return self.family.text

    @property
    def aggregate(self) -> str:
        """How the values combine over queries: ``"mean"``, ``"sum"`` (counts), ``"gm"`` (trec_eval's
        geometric mean, gm_map) or ``"none"`` (text)."""
        return self.family.aggregate

    @property
    def is_count(self) -> bool:
        """Whether the measure counts (NumQ, NumRet, NumRel, NumRelRet): summed over queries, whole
        numbers printed as integers, never tested for significance."""
        return self.family.is_count

    @property
    def value_range(self) -> tuple | None:
        """(smallest, largest) value a query can take under any ordering; None for text."""
        return self.family.value_range

    @property
    def tie_scope(self) -> str:
        """Which ties can change the measure: ``"rank"``, ``"set"``, ``"first_hit"``, ``"set_first_hit"``
        or ``"set_R"`` (its family's ``tie_scope``)."""
        return self.family.tie_scope

    @property
    def reads(self) -> str:
        """What of a ranked list the measure reads: ``"list"``, ``"top_k"`` or ``"judged"``
        (its family's ``reads``)."""
        return self.family.reads

    def as_trec9(self) -> "Measure":
        """The measure as trec_eval 9.x computes it: recall levels become counts by floor(x R + 0.9)
        (``rounding='trec9'``) where the measure has that choice; else the measure itself.

        >>> from tierank import parse_measure
        >>> str(parse_measure("IPrec@0.2").as_trec9())
        "IPrec(recall=0.2, rounding='trec9')"
        """
        if "rounding" in self.family.params and self["rounding"] == "trec10":
            return self.replace(rounding="trec9")
        return self

    def empty_values(self, judged: Judged) -> np.ndarray:
        """The values of queries scored as an empty run (``missing="zero"``, trec_eval ``-c``), before the
        ``no_relevant`` policy: ``""`` for text, else 0, 1, or R (the judged documents with grade >= rel),
        as the family declares (``empty``); ``judged``: the judged grades of those queries."""
        n = judged.n_queries
        if self.is_text:
            return np.full(n, "", dtype=object)
        if self.family.empty == "one":
            return np.ones(n)
        if self.family.empty == "R":
            return judged.count_at_least(self["rel"]).astype(np.float64)
        return np.zeros(n)

    def __getitem__(self, key: str) -> Any:
        return dict(self.items)[key]

    def replace(self, **params: Any) -> "Measure":
        """A copy with some parameters changed (checked like parsed ones); unknown ones raise InputError.

        >>> from tierank import parse_measure
        >>> str(parse_measure("P@5").replace(rel=2))
        'P(rel=2)@5'
        """
        return self.family.bind({**self.params, **params}, self.cutoff, self.text or str(self))

    def __str__(self) -> str:
        shown = [f"{k}={_shown(v)}" for k, v in self.items
                 if k == "judged_only" or (v != self.family.params[k].default and not (k == "dcg" and v is None))]
        out = self.name + (f"({', '.join(shown)})" if shown else "")
        return out + (f"@{self.cutoff}" if self.cutoff is not None else "")

    def __repr__(self) -> str:
        """``Measure('nDCG@10')``: the canonical spelling, which parses back to an equal measure.

        >>> from tierank import parse_measure
        >>> parse_measure("ndcg_cut.10")
        Measure('nDCG@10')
        """
        return f"Measure({str(self)!r})"

    def __hash__(self) -> int:
        return hash((self.name, repr(self.items), self.cutoff))

    def __eq__(self, other: object) -> bool:
        return isinstance(other, Measure) and (self.name, repr(self.items), self.cutoff) == (
            other.name, repr(other.items), other.cutoff)
