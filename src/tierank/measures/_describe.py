"""The measure reference, generated from the registry: ``tierank measures``, the README's measure table
and the documentation's measure pages all come from :func:`describe_measures`."""

from __future__ import annotations

import json
from typing import Any

from ..errors import InputError
from ._registry import REGISTRY, TREC_INDEX, did_you_mean
from ._spec import MeasureFamily
from ._trec import format_level

__all__ = ["describe_family", "describe_measures", "render_measures"]

_CUTOFF = {"required": "@k required", "optional": "@k optional", "none": "no @k"}


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


def _params_text(d: dict) -> str:
    return ", ".join(f"{k}={v['default']!r}" for k, v in d["params"].items()) or "-"


def _rows(items: list[dict]) -> list[list[str]]:
    return [[d["name"], _params_text(d), _CUTOFF[d["cutoff"]], "; ".join(d["trec_eval"]) or "-",
             ", ".join(d["aliases"]) or "-", d["summary"]] for d in items]


def render_measures(fmt: str = "table", name: str | None = None) -> str:
    """The measure reference as text (``table``), ``markdown`` or ``json``; ``name``: one family, with
    each parameter described.

    >>> print(render_measures("markdown").splitlines()[0])
    | measure | parameters (defaults) | cutoff | trec_eval | also accepted as | what it is |
    """
    from ..formats import markdown_table, text_table

    items = describe_measures()
    if name is not None:
        # a name or alias (any case), else a trec_eval name (exact: 'rbp' is trec_eval's, 'RBP' ir-measures')
        family = TREC_INDEX[name][0].name if name in TREC_INDEX else None
        items = [d for d in items if d["name"].lower() == name.lower()
                 or name.lower() in (a.lower() for a in d["aliases"])] or [d for d in items if d["name"] == family]
        if not items:
            raise InputError(f"unknown measure {name!r}{did_you_mean(name)}; `tierank measures` lists them all")
    if fmt == "json":
        return json.dumps(items, indent=2, default=str) + "\n"
    header = ["measure", "parameters (defaults)", "cutoff", "trec_eval", "also accepted as", "what it is"]
    if fmt == "markdown":
        rows = [[f"`{c}`" if i in (0, 1) and c != "-" else c for i, c in enumerate(r)] for r in _rows(items)]
        return markdown_table(header, rows, align="l" * len(header), raw=True) + "\n"   # our own Markdown
    if fmt != "table":
        raise InputError(f"format {fmt!r}: use table, markdown or json")
    if name is None:
        return text_table(["measure", "parameters (defaults)", "cutoff", "trec_eval"],
                          [r[:4] for r in _rows(items)], align="llll") + "\n"
    d = items[0]
    lines = [f"{d['name']}: {d['summary']}", f"  cutoff: {_CUTOFF[d['cutoff']]}"]
    lines += [f"  {k}={v['default']!r}: {v['description']}" for k, v in d["params"].items()]
    lines += [f"  trec_eval: {'; '.join(d['trec_eval']) or '-'}", f"  also accepted as: {', '.join(d['aliases']) or '-'}",
              f"  aggregate over queries: {d['aggregate']}"]
    return "\n".join(lines) + "\n"
