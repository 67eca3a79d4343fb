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
from typing import Any, Callable, Sequence

from ..errors import InputError

__all__ = ["Param", "MeasureFamily", "Measure", "real_param", "bool_param", "choice_param"]


@dataclass(frozen=True)
class Param:
    """A declared parameter: its default, a checker that returns the normalised value, a description."""

    default: Any
    check: Callable[[Any], Any]
    desc: str


def real_param(name: str, *, positive: bool = False, allow_none: bool = False) -> Callable[[Any], Any]:
    def check(v: Any) -> Any:
        if v is None and allow_none:
            return None
        if isinstance(v, bool) or not isinstance(v, Real) or not math.isfinite(float(v)):
            raise ValueError(f"{name} must be a finite number, got {v!r}")
        if positive and v <= 0:
            raise ValueError(f"{name} must be > 0, got {v!r}")
        return float(v) if not float(v).is_integer() else int(v)
    return check


def bool_param(name: str) -> Callable[[Any], Any]:
    def check(v: Any) -> Any:
        if not isinstance(v, bool):
            raise ValueError(f"{name} must be True or False, got {v!r}")
        return v
    return check


def choice_param(name: str, choices: Sequence[str]) -> Callable[[Any], Any]:
    def check(v: Any) -> Any:
        if v not in choices:
            raise ValueError(f"{name} must be one of {', '.join(repr(c) for c in choices)}, got {v!r}")
        return v
    return check


@dataclass(frozen=True, eq=False)
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
    aggregate : {"mean", "sum"}
    exact_bounds : callable, optional
        ``exact_bounds(expected_groups, optimistic, pessimistic, measure) -> (lower, upper)`` where the
        optimistic / pessimistic orderings are not the extremes (AP with ``denom='retrieved'``).
    normalize : callable, optional
        ``normalize(params) -> params``: cross-parameter checks and spellings.
    empty : {"zero", "one", "R"}
        The value for a query that retrieved nothing (``missing="zero"``, trec_eval ``-c``).
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

    def bind(self, params: dict[str, Any], cutoff: int | None, text: str) -> "Measure":
        """Check parameters and cutoff against the declaration and return a :class:`Measure`."""
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
        return Measure(self, tuple(sorted(values.items(), key=lambda kv: kv[0])), cutoff, text)


@dataclass(frozen=True)
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
        shown = [f"{k}={v!r}" for k, v in self.items
                 if v != self.family.params[k].default and not (k == "dcg" and v is None)]
        out = self.name + (f"({', '.join(shown)})" if shown else "")
        return out + (f"@{self.cutoff}" if self.cutoff is not None else "")

    def __hash__(self) -> int:
        return hash((self.name, repr(self.items), self.cutoff))

    def __eq__(self, other: object) -> bool:
        return isinstance(other, Measure) and (self.name, repr(self.items), self.cutoff) == (
            other.name, repr(other.items), other.cutoff)
