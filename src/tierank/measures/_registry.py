"""The registry of measure families and :func:`parse_measure`."""

from __future__ import annotations

import difflib
import re
import warnings
from typing import Iterable

from ..errors import InputError
from . import ap, bing, bpref, counting, dcg, err, gain_g, infap, iprec, judged, ndcg_rel, radius, rbp, relstring, rndcg, rr, sets
from ._parse import parse_measure_string
from ._spec import Measure, MeasureFamily
from ._trec import TREC_EVAL_TABLE, TREC_SETS, TrecName, split_trec_text

__all__ = ["REGISTRY", "TREC_INDEX", "parse_measure", "parse_measures", "measure_names", "expand_trec",
           "trec_output_name", "trec_order", "trec_prints_per_query", "trec_set"]

REGISTRY: dict[str, MeasureFamily] = {
    f.name: f for module in (counting, ap, rr, dcg, ndcg_rel, rndcg, gain_g, err, judged, sets, rbp, bpref, infap, bing, iprec, relstring) for f in module.FAMILIES
}

_LOOKUP: dict[str, tuple[MeasureFamily, dict]] = {}
for _family in REGISTRY.values():
    _LOOKUP[_family.name.lower()] = (_family, {})
    for _alias, _preset in _family.aliases:
        _LOOKUP[_alias.lower()] = (_family, _preset)


# trec_eval name -> (the family computing it, its declaration)
TREC_INDEX: dict[str, tuple[MeasureFamily, TrecName]] = {}
for _family in REGISTRY.values():
    for _trec in _family.trec:
        if _trec.name in TREC_INDEX:
            raise RuntimeError(f"trec_eval measure {_trec.name!r} declared by {TREC_INDEX[_trec.name][0].name} "
                               f"and {_family.name}")
        TREC_INDEX[_trec.name] = (_family, _trec)

# trec_eval names that are not measures of a family (runid: the run's tag)
TREC_PSEUDO = frozenset({"runid"})

# trec_eval spellings whose trec_eval definition differs from the measure of the same name here: an error
# rather than a different number under a familiar name
_NOT_YET_TREC: dict[str, str] = {}


_TREC_WORD = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*$")


def measure_names() -> list[str]:
    """Canonical names of every measure, in registry order."""
    return list(REGISTRY)


def _suggest(name: str) -> str:
    """`` (did you mean 'X'?)`` for the closest known spelling, or ``""``."""
    known = {n.lower(): n for n in [*REGISTRY, *TREC_INDEX, *TREC_SETS]}
    known.update({alias.lower(): alias for f in REGISTRY.values() for alias, _ in f.aliases})
    close = difflib.get_close_matches(name.lower(), list(known), n=1, cutoff=0.6)
    return f" (did you mean {known[close[0]]!r}?)" if close else ""


def expand_trec(text: str) -> list[tuple[str, Measure]] | None:
    """The measures a trec_eval spelling asks for, as ``[(trec_eval output name, Measure)]``.

    ``"P.5,10"`` gives P_5 and P_10, bare ``"P"`` trec_eval's default cutoffs, ``"map"`` one measure,
    ``"iprec_at_recall.0.1,0.2"`` one measure per level; trec_eval's output spellings (``"P_5"``,
    ``"ndcg_cut_10"``) give that one measure. None if ``text`` is not a trec_eval spelling.

    >>> [(name, str(m)) for name, m in expand_trec("P.10,5")]
    [('P_5', 'P@5'), ('P_10', 'P@10')]
    """
    if text.strip() in _NOT_YET_TREC:
        raise InputError(_NOT_YET_TREC[text.strip()])
    split = split_trec_text(text, TREC_INDEX)
    if split is None:
        return None
    name, params, _output_spelling = split
    family, trec = TREC_INDEX[name]
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("always")   # atol's note on '23.4' goes to the caller once
            expanded = trec.expand(params)
    except ValueError as err:
        raise InputError(f"measure {text!r}: {err}") from None
    return [(out, family.bind(p, cutoff, text)) for out, p, cutoff in expanded]


def trec_output_name(m: Measure) -> str | None:
    """How trec_eval prints this measure (``P_5``, ``ndcg_cut_10``, ``set_F_0.5``), or None if trec_eval
    has no measure with these parameters.

    >>> trec_output_name(parse_measure("nDCG@10"))
    'ndcg_cut_10'
    >>> trec_output_name(parse_measure("nDCG(gain='exp2')@10")) is None
    True
    """
    if m.judged_only:   # trec_eval has -J for a whole run, not a measure of its own
        return None
    defaults = {k: p.default for k, p in m.family.params.items()}
    params = m.params
    for trec in m.family.trec:
        name = trec.output_name(params, m.cutoff, defaults)
        if name is not None:
            return name
    return None


def trec_order(output_name: str) -> tuple:
    """Sort key of a trec_eval output name (``P_5``, ``iprec_at_recall_0.10``, ``map``) putting measures
    in trec_eval's output order: its measure table, then cutoffs and levels ascending.

    >>> sorted(["P_10", "map", "P_5", "num_q"], key=trec_order)
    ['num_q', 'map', 'P_5', 'P_10']
    """
    name = _trec_base(output_name)
    if name is None:
        return (len(TREC_EVAL_TABLE), 0.0)
    suffix = output_name[len(name) + 1:]
    kind = TREC_INDEX[name][1].kind if name in TREC_INDEX else "plain"
    number = float(suffix) if suffix and kind in ("cutoffs", "levels") else 0.0
    return (TREC_EVAL_TABLE.index(name), number)


def _trec_base(output_name: str) -> str | None:
    """The trec_eval measure of an output name (``P_5`` -> ``P``, ``utility_2,-1,0,0`` -> ``utility``)."""
    for name in sorted(TREC_EVAL_TABLE, key=len, reverse=True):
        if output_name == name or output_name.startswith(name + "_"):
            return name
    return None


def trec_prints_per_query(output_name: str) -> bool:
    """Whether ``trec_eval -q`` prints this measure per query (gm_map: on the summary line only)."""
    name = _trec_base(output_name)
    return name not in TREC_INDEX or TREC_INDEX[name][1].per_query


def trec_set(name: str) -> tuple[str, ...] | None:
    """The trec_eval names of a trec_eval measure set (``official``, ``all_trec``, ``set``), or None."""
    return TREC_SETS.get(name)


def parse_measure(text: str | Measure) -> Measure:
    """Parse a measure string (tierank / ir-measures / ranx / trec_eval spelling) into a Measure.

    Parameters
    ----------
    text : str
        ``"nDCG@10"``, ``"P(rel=2)@5"``, ``"AP(denom='retrieved')@5"``, ``"ndcg_burges@10"``,
        ``"map@100-l2"``, ``"ndcg_cut.10"``, ``"P_5"``... One cutoff per string.

    Returns
    -------
    Measure

    Raises
    ------
    InputError
        Unknown name or parameter (the message lists what exists), bad value, bad cutoff.

    Examples
    --------
    >>> str(parse_measure("ndcg_burges@10"))
    "nDCG(gain='exp2')@10"
    >>> str(parse_measure("map@100-l2"))
    'AP(rel=2)@100'
    >>> str(parse_measure("ndcg_cut.10"))
    'nDCG@10'
    """
    if isinstance(text, Measure):
        return text
    if not isinstance(text, str):
        raise InputError(f"a measure must be a string such as 'nDCG@10', got {text!r}")
    if text.strip() in _NOT_YET_TREC:
        raise InputError(_NOT_YET_TREC[text.strip()])
    if text.strip() in TREC_SETS or text.strip() in TREC_PSEUDO:
        raise InputError(f"{text.strip()!r} is a trec_eval measure set or pseudo-measure, not one measure; "
                         "give it to the command line (-m) or list the measures")
    # a trec_eval name (exact case) means what trec_eval means: 'rbp' is p=0.9, 'RBP' ir-measures' p=0.8
    exact_trec = text.strip() in TREC_INDEX
    trec = expand_trec(text) if exact_trec or text.lower() not in _LOOKUP else None
    if trec is not None:
        if len(trec) != 1:
            raise InputError(f"measure {text!r}: one measure per string; trec_eval's {text.strip()!r} means it at "
                             "each of its default cutoffs or levels, "
                             + ", ".join(repr(name) for name, _ in trec)
                             + f": write one of them (e.g. {trec[0][0]!r}, or {str(trec[0][1])!r})")
        return trec[0][1]
    base = text.strip().split(".", 1)[0]
    if "." in text and _TREC_WORD.match(base) and base.lower() not in _LOOKUP:   # a trec_eval name, misspelt
        raise InputError(f"unknown measure {base!r} in {text!r}{_suggest(base)}; `tierank measures` lists "
                         "every measure and its trec_eval names")
    parsed = parse_measure_string(text)
    found = _LOOKUP.get(parsed.name.lower())
    if found is None:
        raise InputError(f"unknown measure {parsed.name!r} in {text!r}{_suggest(parsed.name)}; known measures: "
                         + ", ".join(REGISTRY) + " (and their ir-measures, ranx and trec_eval names; "
                         "`tierank measures` lists them all)")
    family, preset = found
    if "radius" in parsed.params and family.name in radius.RADIUS_FAMILIES:
        family = radius.RADIUS_FAMILIES[family.name]   # P(radius=2): within a Hamming radius, no @k
    params = dict(preset)
    if parsed.level is not None:   # IPrec@0.2: the level is the measure's recall parameter
        if "recall" not in family.params:
            raise InputError(f"measure {text!r}: the cutoff k must be a positive integer, got {parsed.level}")
        params["recall"] = parsed.level
    for key, value in parsed.params.items():
        if key in preset and preset[key] != value:
            raise InputError(f"measure {text!r}: {parsed.name} fixes {key}={preset[key]!r}")
        params[key] = value
    return family.bind(params, parsed.cutoff, text)


def parse_measures(measures: "str | Measure | Iterable[str | Measure]") -> dict[str, Measure]:
    """Parse one measure or a list of them into ``{text as given: Measure}`` (the Results keys).

    >>> list(parse_measures(["P@5", "ndcg_cut.10"]).values())[1].name
    'nDCG'
    """
    if isinstance(measures, (str, Measure)):
        measures = [measures]
    parsed = {str(m) if isinstance(m, Measure) else m: parse_measure(m) for m in measures}
    if not parsed:
        raise InputError("no measure given, e.g. measures=['nDCG@10', 'AP']")
    return parsed
