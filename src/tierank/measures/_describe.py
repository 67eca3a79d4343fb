"""The measure reference, generated from the registry: ``tierank measures``, the README's measure table
and the documentation's measure pages all come from :func:`describe_measures` (rendered as text by
:func:`tierank.formats.render_measures`)."""

from __future__ import annotations

from typing import Any

from ._registry import REGISTRY
from ._spec import MeasureFamily
from ._trec import format_level

__all__ = ["describe_family", "describe_measures"]


def _trec_spellings(family: MeasureFamily) -> list[str]:
    out = []
    for t in family.trec:
        if t.kind == "cutoffs":
            out.append(f"{t.name}.k (default {','.join(str(c) for c in t.default)})")
        elif t.kind == "levels":
            out.append(f"{t.name}.x (default {','.join(format_level(v) for v in t.default)})")
        elif t.kind == "param":
            default = f" (default {t.default})" if t.default is not None else ""
            out.append(f"{t.name}.params{default}")
        else:
            out.append(t.name)
    return out


def describe_family(family: MeasureFamily) -> dict[str, Any]:
    """Everything the registry knows about a family, as plain data.

    >>> describe_family(REGISTRY["AP"])["trec_eval"]
    ['map', 'map_cut.k (default 5,10,15,20,30,100,200,500,1000)']
    """
    return {
        "name": family.name,
        "summary": family.summary,
        "cutoff": family.cutoff,
        "params": {k: {"default": p.default, "description": p.desc} for k, p in family.params.items()
                   if k != "dcg"},
        "aliases": [alias for alias, _ in family.aliases],
        "trec_eval": _trec_spellings(family),
        "aggregate": family.aggregate,
        "value_range": None if family.value_range is None else list(family.value_range),
    }


def describe_measures() -> list[dict[str, Any]]:
    """:func:`describe_family` of every registered family, in registry order."""
    return [describe_family(f) for f in REGISTRY.values()]
