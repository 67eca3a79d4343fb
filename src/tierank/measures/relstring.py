"""RelString (trec_eval ``relstring``): the grades of the first documents as text, one character each.

Characters, as trec_eval prints them: the grade for 0-9, ``>`` above 9, ``-`` for a document not in the
qrels (not in the pool), ``.`` for a negative grade (in the pool, unjudged); tierank's fractional grades
(which trec_eval cannot read) show as ``?``.

RelString has no expectation: it is a string, not a number. Under a fixed tie mode (``trec_eval``,
``input``, ``random``, and ``optimistic`` / ``pessimistic``: higher grades first / last) it is the
string of that ordering. Under ``ties="expected"`` it shows the ranking as it is: a tie of several
documents is one bracketed group with its grades sorted descending (``'0[110]0'``: the second to
fourth documents tie, two of them with grade 1), since no order inside it is chosen; a group starting
within the first ``length`` documents is shown whole, or as its first ``length`` characters and
``+N`` for the N more. Bounds give the same string. RelString is left out of means.
"""

from __future__ import annotations

import numpy as np

from ..ties.groups import TieStats, within_query_exclusive_cumsum
from ._spec import Measure, MeasureFamily, Param, real_param
from ._trec import TrecName, atof

__all__ = ["FAMILIES"]


_DIGITS = np.array(list("0123456789"), dtype="<U1")


def _chars(grades: np.ndarray) -> np.ndarray:
    """One character per grade (module docstring)."""
    g = np.asarray(grades, dtype=np.float64)
    out = np.full(len(g), "?", dtype="<U1")
    whole = (g == np.floor(g)) & (g >= 0) & (g <= 9)
    out[whole] = g[whole].astype(np.int64).astype("<U1")
    out[g > 9] = ">"
    out[g == -1] = "-"
    out[(g < 0) & (g != -1)] = "."
    return out


def relstring(g: TieStats, m: Measure) -> np.ndarray:
    length = int(m["length"])
    shown = np.flatnonzero(g.group_first < length)   # groups starting within the first `length` items
    ptr, grades = g.group_grades(shown)
    chars = _chars(grades)
    sizes = np.diff(ptr)
    query = g.group_query[shown]
    tie = sizes > 1
    kept = np.minimum(sizes, max(length, 1))          # characters shown of each group
    more = np.where(tie, sizes - kept, 0)             # a tie's documents beyond them: "+N"
    digits = np.where(more > 0, np.char.str_len(more.astype(str)), 0)
    width = kept + 2 * tie + np.where(more > 0, 1 + digits, 0)
    offset = within_query_exclusive_cumsum(width, query, np.searchsorted(query, np.arange(g.n_queries)))
    offset = offset.astype(np.int64)
    longest = int(np.bincount(query, weights=width, minlength=g.n_queries).max(initial=0))
    table = np.full((g.n_queries, max(longest, 1)), "", dtype="<U1")   # one row of characters per query
    # a tie's grades sorted descending (by character) inside its brackets
    item_group = np.repeat(np.arange(len(shown)), sizes)
    order = np.lexsort((-chars.view(np.uint32).astype(np.int64), item_group))
    k = np.arange(len(chars)) - ptr[item_group]       # rank inside the group after sorting
    use = k < kept[item_group]
    table[query[item_group[use]], (offset + tie)[item_group[use]] + k[use]] = chars[order][use]
    table[query[tie], offset[tie]] = "["
    table[query[tie], (offset + width - 1)[tie]] = "]"
    plus = more > 0
    table[query[plus], (offset + 1 + kept)[plus]] = "+"
    for d in range(int(digits.max(initial=0))):   # loop over the digits of N, most significant first
        has = digits > d
        digit = more[has] // 10 ** (digits[has] - 1 - d) % 10
        table[query[has], (offset + 2 + kept + d)[has]] = _DIGITS[digit]
    return table.view(f"<U{table.shape[1]}").ravel().astype(object)


def _raw_grade_first(m: Measure, grades: np.ndarray) -> list[np.ndarray]:
    # optimistic: higher grades first, judged non-relevant (0) before unjudged (-2) before not in pool (-1)
    return [np.where(grades == -1, -3.0, grades)]


_raw_grade_first.params = ()  # type: ignore[attr-defined]


def _length(params: dict) -> dict:
    if float(params["length"]) != int(params["length"]) or params["length"] < 0:
        raise ValueError(f"length must be a whole number >= 0, got {params['length']!r}")
    return dict(params, length=int(params["length"]))


def _trec_length(text: str) -> dict:
    return _length({"length": atof(text)})


def _show_length(values: dict) -> str:
    return "" if values["length"] == 10 else str(values["length"])


LENGTH = Param(10, real_param("length", minimum=0), "number of leading documents shown")

FAMILIES = [
    MeasureFamily("RelString", "the grades of the first documents as text (trec_eval relstring); not averaged",
                  {"length": LENGTH}, "none", relstring, _raw_grade_first, aggregate="none",
                  normalize=_length, aliases=(("relstring", {}),), value_range=None, text=True,
                  trec=(TrecName("relstring", "param", sets=("length",), bind=_trec_length,
                                 show=_show_length),)),
]
