"""trec_eval output names -> tierank measure strings, shared by the trec_eval and pytrec_eval tests.

Written from trec_eval's documentation and output files, independently of tierank's own table
(the ``trec=`` declarations in ``tierank.measures``), so that a wrong entry there is caught.
"""

from __future__ import annotations

import re

# (trec_eval name, tierank base, takes @k, binary i.e. takes rel=)
PATTERNS = [
    (re.compile(r"map"), "AP", False, True),
    (re.compile(r"map_cut_(\d+)"), "AP", True, True),
    (re.compile(r"P_(\d+)"), "P", True, True),
    (re.compile(r"recall_(\d+)"), "R", True, True),
    # trec_eval's ndcg ignores -l: gains are the grades (negative -> 0) whatever the level
    (re.compile(r"ndcg"), "nDCG", False, False),
    (re.compile(r"ndcg_cut_(\d+)"), "nDCG", True, False),
    (re.compile(r"recip_rank"), "RR", False, True),
    (re.compile(r"Rprec"), "Rprec", False, True),
    (re.compile(r"success_(\d+)"), "Success", True, True),
    (re.compile(r"num_ret"), "NumRet", False, False),
    (re.compile(r"num_rel"), "NumRel", False, True),
    (re.compile(r"num_rel_ret"), "NumRelRet", False, True),
    (re.compile(r"num_q"), "NumQ", False, False),
]


def tierank_name(trec_name: str, rel: int = 1) -> str | None:
    """The tierank measure string for a trec_eval output name (None if not shared).

    ``rel`` is trec_eval's ``-l``: it goes to the binary measures only.
    """
    for pattern, base, has_k, binary in PATTERNS:
        m = pattern.fullmatch(trec_name)
        if m:
            name = base + (f"(rel={rel})" if binary and rel != 1 else "")
            return name + (f"@{m.group(1)}" if has_k else "")
    return None
