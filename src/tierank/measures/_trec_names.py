"""trec_eval measure names (``map``, ``P.5``, ``ndcg_cut.10``, ``P.5,10``, ``P_5``) and their spelling in
trec_eval's output (``P_5``, ``ndcg_cut_10``)."""

from __future__ import annotations

import re

__all__ = ["TREC_NAMES", "DEFAULT_CUTOFFS", "split_trec_name", "trec_output_name"]

# trec_eval name -> (tierank family, takes a cutoff)
TREC_NAMES: dict[str, tuple[str, bool]] = {
    "map": ("AP", False),
    "map_cut": ("AP", True),
    "P": ("P", True),
    "recall": ("R", True),
    "ndcg": ("nDCG", False),
    "ndcg_cut": ("nDCG", True),
    "recip_rank": ("RR", False),
    "Rprec": ("Rprec", False),
    "success": ("Success", True),
    "num_q": ("NumQ", False),
    "num_ret": ("NumRet", False),
    "num_rel": ("NumRel", False),
    "num_rel_ret": ("NumRelRet", False),
    "num_nonrel_judged_ret": ("NumNonRelJudgedRet", False),
    "set_P": ("SetP", False),
    "set_recall": ("SetR", False),
    "set_F": ("SetF", False),
    "bpref": ("Bpref", False),
    "unj": ("Unjudged", True),
}

# cutoffs trec_eval uses when a cutoff measure is named without values
DEFAULT_CUTOFFS: dict[str, tuple[int, ...]] = {
    "map_cut": (5, 10, 15, 20, 30, 100, 200, 500, 1000),
    "P": (5, 10, 15, 20, 30, 100, 200, 500, 1000),
    "recall": (5, 10, 15, 20, 30, 100, 200, 500, 1000),
    "ndcg_cut": (5, 10, 15, 20, 30, 100, 200, 500, 1000),
    "success": (1, 5, 10),
    "unj": (5, 10, 20),
}

_TREC = re.compile(r"^(?P<base>[A-Za-z_]+?)(?:[._](?P<cut>\d+(?:,\d+)*))?$")


def split_trec_name(text: str) -> tuple[str, tuple[int, ...] | None] | None:
    """``"P.5,10"`` -> ``("P", (5, 10))``; ``"map"`` -> ``("map", None)``; not a trec_eval name -> None."""
    m = _TREC.match(text.strip())
    if m is None or m.group("base") not in TREC_NAMES:
        return None
    base = m.group("base")
    cut = m.group("cut")
    takes_cutoff = TREC_NAMES[base][1]
    if cut is None:
        return base, (DEFAULT_CUTOFFS[base] if takes_cutoff else None)
    if not takes_cutoff:
        return None
    return base, tuple(int(c) for c in cut.split(","))


def trec_output_name(family: str, cutoff: int | None) -> str:
    """How trec_eval prints a measure: ``P_5``, ``map``, ``map_cut_10``, ``ndcg_cut_10``."""
    for base, (fam, takes_cutoff) in TREC_NAMES.items():
        if fam == family and takes_cutoff == (cutoff is not None):
            return f"{base}_{cutoff}" if cutoff is not None else base
    raise KeyError(family)
