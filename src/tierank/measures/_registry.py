"""The registry of measure families and :func:`parse_measure`."""

from __future__ import annotations

from typing import Iterable

from ..errors import InputError
from . import ap, bpref, counting, dcg, err, judged, radius, rbp, rr, sets
from ._parse import parse_measure_string
from ._spec import Measure, MeasureFamily
from ._trec_names import TREC_NAMES, split_trec_name

__all__ = ["REGISTRY", "parse_measure", "parse_measures", "measure_names"]

REGISTRY: dict[str, MeasureFamily] = {
    f.name: f for module in (counting, ap, rr, dcg, err, judged, sets, rbp, bpref) for f in module.FAMILIES
}

_LOOKUP: dict[str, tuple[MeasureFamily, dict]] = {}
for _family in REGISTRY.values():
    _LOOKUP[_family.name.lower()] = (_family, {})
    for _alias, _preset in _family.aliases:
        _LOOKUP[_alias.lower()] = (_family, _preset)


# trec_eval spellings whose trec_eval definition differs from the measure of the same name here: an error
# rather than a different number under a familiar name
_NOT_YET_TREC = {
    "rbp": "measure 'rbp': trec_eval's rbp (p=0.9, graded gains scaled to [0, 1]) is not available yet; "
           "RBP(p=0.9) is binary rank-biased precision (relevant: grade >= rel), as ir-measures computes it",
}


def measure_names() -> list[str]:
    """Canonical names of every measure, in registry order."""
    return list(REGISTRY)


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
    trec = split_trec_name(text) if ("." in text or text in TREC_NAMES or "_" in text) else None
    if trec is not None and text.lower() not in _LOOKUP:
        base, cutoffs = trec
        family = REGISTRY[TREC_NAMES[base][0]]
        if cutoffs is not None and len(cutoffs) != 1:
            raise InputError(f"measure {text!r}: one cutoff per measure string; write "
                             + ", ".join(f"'{base}.{c}'" for c in cutoffs))
        return family.bind({}, cutoffs[0] if cutoffs else None, text)
    parsed = parse_measure_string(text)
    found = _LOOKUP.get(parsed.name.lower())
    if found is None:
        raise InputError(f"unknown measure {parsed.name!r} in {text!r}; known measures: "
                         + ", ".join(REGISTRY) + " (and their ir-measures, ranx and trec_eval names)")
    family, preset = found
    if "radius" in parsed.params and family.name in radius.RADIUS_FAMILIES:
        family = radius.RADIUS_FAMILIES[family.name]   # P(radius=2): within a Hamming radius, no @k
    params = dict(preset)
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
