"""trec_eval's conventions for naming measures: ``-m name.params``, output names, output order, sets.

Each family declares the trec_eval measures it computes in ``MeasureFamily.trec`` (a tuple of
:class:`TrecName`); this module holds what is common to all of them, as trec_eval 10.0 does it
(its ``meas_init.c`` and ``measures.c``):

* **parameters** follow the measure's name after the first dot, in one of four kinds:

  - ``plain``: none (``map``, ``bpref``);
  - ``cutoffs``: integer cutoffs (``P.5,10``), read as C's ``atol`` reads them (``23.4`` is 23),
    sorted, each printed as ``P_5``;
  - ``levels``: real values (``iprec_at_recall.0.1,.5``, ``Rprec_mult.2``), sorted, each a measure of
    its own printed ``name_%3.2f`` (``iprec_at_recall_0.10``);
  - ``param``: one parameter string for one measure (``utility.2,-1,0,0``, ``ndcg.1=3,2=9``), printed
    ``name_<string as given>`` (``utility_2,-1,0,0``), or ``name`` with trec_eval's defaults;

* **output order** is trec_eval's measure table (:data:`TREC_EVAL_TABLE`), whatever the order on the
  command line; cutoffs and levels ascending;
* **sets**: ``official`` (trec_eval's default), ``all_trec`` and ``set``.

tierank also accepts the output spellings as measure names (``P_5``, ``ndcg_cut_10``,
``iprec_at_recall_0.10``).
"""

from __future__ import annotations

import math
import re
import warnings
from typing import Any, Callable

from ..errors import InputError, TierankWarning
from ._parse import number_value

__all__ = ["TrecName", "TREC_EVAL_TABLE", "TREC_NAMES", "TREC_SETS", "TREC_CUTOFFS", "atol", "atof",
           "parse_doubles", "parse_pairs", "format_level", "split_trec_text"]

# trec_eval 10.0's measure table (measures.c, te_trec_measures): the order of its output
TREC_EVAL_TABLE = (
    "runid", "num_q", "num_ret", "num_rel", "num_rel_ret", "map", "gm_map", "Rprec", "bpref", "recip_rank",
    "iprec_at_recall", "P", "relstring", "recall", "infAP", "gm_bpref", "Rprec_mult", "utility", "11pt_avg",
    "binG", "G", "dcg", "ideal_dcg", "ndcg", "ndcg_rel", "Rndcg", "ndcg_cut", "map_cut", "relative_P",
    "success", "set_P", "set_relative_P", "set_recall", "set_map", "set_F", "num_nonrel_judged_ret",
    "rbp", "rbp_resid", "unj",
)

#: the same names, as a set: the only names a trec_eval spelling can hold (no other is looked up)
TREC_NAMES = frozenset(TREC_EVAL_TABLE)

# trec_eval's measure sets (measures.c, te_trec_measure_nicknames)
TREC_SETS = {
    "official": ("runid", "num_q", "num_ret", "num_rel", "num_rel_ret", "map", "gm_map", "Rprec", "bpref",
                 "recip_rank", "iprec_at_recall", "P"),
    "all_trec": ("runid", "num_q", "num_ret", "num_rel", "num_rel_ret", "map", "gm_map", "Rprec", "bpref",
                 "recip_rank", "iprec_at_recall", "P", "relstring", "recall", "unj", "rbp", "rbp_resid",
                 "infAP", "gm_bpref", "utility", "11pt_avg", "ndcg", "relative_P", "Rprec_mult", "success",
                 "map_cut", "ndcg_cut", "ndcg_rel", "Rndcg", "binG", "G", "set_P", "set_recall",
                 "set_relative_P", "set_map", "set_F", "num_nonrel_judged_ret"),
    "set": ("runid", "num_q", "num_ret", "num_rel", "num_rel_ret", "utility", "set_P", "set_recall",
            "set_relative_P", "set_map", "set_F"),
}

_KINDS = ("plain", "cutoffs", "levels", "param")

# trec_eval's default cutoffs of P, recall, map_cut, ndcg_cut, relative_P
TREC_CUTOFFS = (5, 10, 15, 20, 30, 100, 200, 500, 1000)


class TrecName:
    """One trec_eval measure a family computes, and how its parameters map to the family's.

    Attributes
    ----------
    name : str
        trec_eval's name (``"map_cut"``).
    kind : {"plain", "cutoffs", "levels", "param"}
        How trec_eval reads its parameters (module docstring).
    default : tuple or str or None
        trec_eval's default cutoffs / levels (a tuple), or for ``param`` its default parameter string
        (None: the family's defaults are trec_eval's).
    preset : tuple of (str, object)
        Parameters of the family this name fixes (``relative_P``: ``clip_at_r=True``).
    per_query : bool
        Whether ``trec_eval -q`` prints it per query (gm_map and gm_bpref: on the summary line only).
    sets : tuple of str
        ``levels`` and ``param``: the family's parameters that trec_eval's parameter sets.
    bind : callable, optional
        ``levels``: ``bind(level) -> params``; ``param``: ``bind(text) -> params`` (raises ValueError with
        a reason on a bad string). ``cutoffs`` and ``plain`` need none.
    show : callable, optional
        The inverse, for naming a measure given in another grammar: ``show(values of sets) -> level`` or
        ``-> parameter string`` (``""``: trec_eval's defaults, printed without a suffix; None: not
        expressible under this trec_eval name).
    """

    def __init__(self, name: str, kind: str = "plain", default: Any = None, preset: tuple = (),
                 per_query: bool = True, sets: tuple = (), bind: Callable[[Any], dict] | None = None,
                 show: Callable[[dict], Any] | None = None) -> None:
        if kind not in _KINDS:
            raise ValueError(f"TrecName {name!r}: kind must be one of {_KINDS}")
        if name not in TREC_NAMES:   # (the registry's parser asks for table names only)
            raise ValueError(f"TrecName {name!r} is not in trec_eval's measure table")
        self.name, self.kind, self.default, self.preset = name, kind, default, preset
        self.per_query, self.sets, self.bind, self.show = per_query, sets, bind, show

    @property
    def order(self) -> int:
        """Position in trec_eval's output."""
        return TREC_EVAL_TABLE.index(self.name)

    def expand(self, text: str | None) -> list[tuple[str, dict, int | None]]:
        """The measures ``-m name[.text]`` asks for: ``[(output name, params, cutoff)]`` in trec_eval's
        order (cutoffs and levels ascending). Raises ValueError with a reason on bad parameters."""
        preset = dict(self.preset)
        if self.kind == "plain":
            if text is not None:
                raise ValueError(f"{self.name} takes no parameters")
            return [(self.name, preset, None)]
        if self.kind == "cutoffs":
            cuts = _sorted_unique(self.default if text is None else [atol(t) for t in text.split(",")],
                                  self.name)
            if cuts[0] <= 0:
                raise ValueError(f"{self.name}: cutoffs must be > 0, got {cuts[0]}")
            return [(f"{self.name}_{c}", preset, c) for c in cuts]
        if self.kind == "levels":
            levels = _sorted_unique(self.default if text is None else [atof(t) for t in text.split(",")],
                                    self.name)
            return [(f"{self.name}_{format_level(v)}", {**preset, **self.bind(v)}, None) for v in levels]
        if text is None:
            params = dict(preset) if self.default is None else {**preset, **self.bind(self.default)}
            return [(self.name, params, None)]
        return [(f"{self.name}_{text}", {**preset, **self.bind(text)}, None)]

    def output_name(self, params: dict, cutoff: int | None, defaults: dict) -> str | None:
        """How trec_eval prints the measure with these (complete) parameters, or None if this name
        cannot express them."""
        preset = dict(self.preset)
        if any(params.get(k) != v for k, v in preset.items()):
            return None
        rest = {k: v for k, v in params.items() if k not in preset and k not in self.sets}
        if any(v != defaults[k] for k, v in rest.items()):
            return None
        if self.kind in ("plain", "cutoffs"):
            if (cutoff is None) != (self.kind == "plain"):
                return None
            return self.name if cutoff is None else f"{self.name}_{cutoff}"
        if cutoff is not None or self.show is None:
            return None
        shown = self.show({k: params[k] for k in self.sets})
        if shown is None:
            return None
        if self.kind == "levels":
            return f"{self.name}_{format_level(shown)}"
        return self.name if shown == "" else f"{self.name}_{shown}"


def _sorted_unique(values: Any, name: str) -> list:
    out = sorted(values)
    for a, b in zip(out, out[1:]):
        if a == b:
            raise ValueError(f"{name}: duplicate cutoff {a}")
    return out


_ATOL = re.compile(r"^\s*([+-]?\d+)")
_ATOF = re.compile(r"^\s*([+-]?(?:\d+\.?\d*|\.\d+)(?:[eE][+-]?\d+)?)")


def atol(text: str) -> int:
    """C's ``atol`` as trec_eval reads integer cutoffs: the leading integer of ``text``. A cutoff with
    more after its digits (``23.4``) is read as trec_eval reads it (23), with a warning saying so; a
    cutoff with no leading digits is an error (trec_eval would read 0 and reject it).

    >>> atol("10")
    10
    """
    m = _ATOL.match(text)
    if m is None:
        raise ValueError(f"cutoff {text!r} is not an integer")
    value = number_value(m.group(1))
    if m.group(0) != text:
        warnings.warn(f"cutoff {text!r} is read as {value}, as trec_eval reads it",
                      TierankWarning, stacklevel=2)
    return value


def atof(text: str) -> float:
    """A real parameter as trec_eval reads it (``.25``, ``5.0``, ``1e-3``); anything else is an error
    (trec_eval's ``atof`` would read a silent 0).

    >>> atof(".25")
    0.25
    """
    m = _ATOF.match(text)
    if m is None or m.group(0) != text.strip():
        raise ValueError(f"parameter {text!r} is not a number")
    value = number_value(m.group(1), real=True)
    if not math.isfinite(value):
        raise ValueError(f"parameter {text!r} is not a finite number")
    return value


def parse_doubles(text: str) -> list[float]:
    """``"2,-1,0,0"`` -> ``[2.0, -1.0, 0.0, 0.0]`` (trec_eval's comma-separated real parameters)."""
    return [atof(t) for t in text.split(",")]


def parse_pairs(text: str) -> dict[str, float]:
    """``"1=3,2=9,4=4.5"`` -> ``{"1": 3.0, "2": 9.0, "4": 4.5}`` (trec_eval's name=value parameters)."""
    out: dict[str, float] = {}
    for item in text.split(","):
        name, sep, value = item.partition("=")
        if not sep or not name.strip():
            raise ValueError(f"parameter {item!r} is not name=value")
        if name.strip() in out:
            raise ValueError(f"parameter {name.strip()!r} given twice")
        out[name.strip()] = atof(value)
    return out


def format_level(value: float) -> str:
    """A level as trec_eval prints it in a measure name (C's ``%3.2f``): ``0.1`` -> ``"0.10"``."""
    return f"{value:3.2f}"


def split_trec_text(text: str, names: Any) -> tuple[str, str | None, bool] | None:
    """Split a trec_eval spelling into ``(name, parameter text or None, output spelling)``.

    ``names`` are the trec_eval names known, names of :data:`TREC_EVAL_TABLE` (a container: only a name of
    the table is looked up in it, so a lazy registry is asked nothing for other texts). ``"P.5,10"`` ->
    ``("P", "5,10", False)``; ``"map"`` -> ``("map", None, False)``; the output spelling of a cutoff or level
    ``"ndcg_cut_10"`` -> ``("ndcg_cut", "10", True)``; not a trec_eval spelling -> None.
    """
    text = text.strip()
    base, dot, rest = text.partition(".")   # (no name of the table holds a dot)
    if not dot and text in TREC_NAMES and text in names:
        return text, None, False
    if dot and base in TREC_NAMES and base in names:
        if not rest:
            raise InputError(f"measure {text!r}: nothing after the dot; e.g. '{base}.10'")
        return base, rest, False
    for name in _LONGEST_FIRST:   # output spellings of numbers: P_5, ndcg_cut_10
        suffix = text[len(name) + 1:]
        if text.startswith(name + "_") and _NUMBER.match(suffix) and name in names:
            return name, suffix, True
    return None


_NUMBER = re.compile(r"^(?:\d+\.?\d*|\.\d+)$")
_LONGEST_FIRST = sorted(TREC_EVAL_TABLE, key=len, reverse=True)   # P_5: the longest name it starts with
