"""Brute-force oracle for tie-aware ranking metrics (test helper, not part of tierank).

Independent of the library on purpose: it never imports ``tierank`` and never uses the closed forms of
``tie_math.md``.  For one list (one query) it

1. groups items whose keys compare equal (``==``: ``0.0`` ties ``-0.0``, ``inf`` ties ``inf``; higher key =
   better, so callers pass ``-distance`` for distances),
2. enumerates every ordering consistent with the keys (each tie permuted independently, ``itertools``),
3. computes the *plain* metric, straight from its textbook definition, on each ordering,
4. returns the exact mean, min and max over the orderings, and the values under fixed tie-breaks
   (``input``: column index ascending, ``trec_eval``: column index descending, ``optimistic`` /
   ``pessimistic``: within a tie, item value descending / ascending).

Every metric here depends on an ordering only through the sequence of grades it produces.  Within a tie of
size n whose grades have multiplicities m_1, m_2, ..., each *distinct* grade arrangement is produced by
exactly m_1! m_2! ... of the n! permutations, so the uniform mean over all permutations equals the uniform
mean over the distinct arrangements (and min / max are the same sets of values).  ``enumerate_orderings``
therefore deduplicates by default (``dedupe=False`` gives the literal n! enumeration; the self-tests check
that both agree).

Measure strings are parsed here with a tiny parser of our own (``ast.literal_eval`` on trusted test
strings) so that the tests can hand the very same string to the library.
"""

from __future__ import annotations

import ast
import math
import re
from dataclasses import dataclass, field
from decimal import ROUND_HALF_UP, Decimal
from functools import lru_cache
from itertools import chain, permutations, product
from typing import Any, Callable, Iterator, Mapping, Sequence

# --------------------------------------------------------------------------------------------- parsing

_MEASURE_RE = re.compile(r"^\s*([A-Za-z][A-Za-z0-9_]*)\s*(?:\((.*)\))?\s*(?:@\s*(\S+))?\s*$", re.S)

KNOWN = {
    "P", "R", "F1", "Success", "AP", "RR", "DCG", "nDCG", "ERR", "ACG", "WAP", "Rprec",
    "NumQ", "NumRet", "NumRel", "NumRelRet",
    "NumNonRelJudgedRet", "Judged", "Unjudged", "SetP", "SetR", "SetF", "RBP", "Bpref",
    "GMAP", "GMBpref",
}
NEEDS_K = {"P", "R", "F1", "Success", "ACG", "WAP", "Judged", "Unjudged"}
NO_K = {"Rprec", "NumQ", "NumRet", "NumRel", "NumRelRet", "NumNonRelJudgedRet", "SetP", "SetR", "SetF", "Bpref",
        "GMAP", "GMBpref"}
# trec_eval's infAP, iprec_at_recall and 11pt_avg (ir-measures infAP, IPrec): definitions at the end of this
# section, from m_infap.c, m_iprec_at_recall.c and m_11pt_avg.c
KNOWN |= {"infAP", "IPrec", "IPrecAvg"}
NO_K |= {"infAP", "IPrec", "IPrecAvg"}
# trec_eval 10's other measures (m_Rprec_mult.c, m_set_rel_P.c, m_set_map.c, m_utility.c, m_binG.c, m_G.c,
# m_ndcg_rel.c, m_Rndcg.c, m_rbp_resid.c; relative_P and graded rbp are P and RBP's branches) and ranx's
# hits: definitions in trec_other_value below
KNOWN |= {"RprecMult", "Hits", "SetRelP", "SetAP", "Utility", "BinG", "G", "NDCGRel", "Rndcg", "RBPResid"}
NEEDS_K |= {"Hits"}
NO_K |= {"RprecMult", "SetRelP", "SetAP", "Utility", "BinG", "G", "NDCGRel", "Rndcg", "RBPResid"}


@dataclass(frozen=True)
class Measure:
    name: str
    params: dict = field(default_factory=dict, hash=False, compare=False)
    k: int | None = None

    def __repr__(self) -> str:  # pragma: no cover - debugging aid
        return f"Measure({self.name!r}, {self.params!r}, k={self.k!r})"


def parse(spec: str | Measure) -> Measure:
    """Parse ``Name(p=v, ...)@k`` (test strings only; trusted input)."""
    if isinstance(spec, Measure):
        return spec
    mt = _MEASURE_RE.match(spec)
    if not mt:
        raise ValueError(f"oracle cannot parse measure {spec!r}")
    name, inner, k = mt.group(1), mt.group(2), mt.group(3)
    if name not in KNOWN:
        raise ValueError(f"oracle: unknown measure {name!r}")
    params = {}
    if inner is not None and inner.strip():
        call = ast.parse(f"f({inner})", mode="eval").body
        assert isinstance(call, ast.Call) and not call.args
        for kw in call.keywords:
            params[kw.arg] = ast.literal_eval(kw.value)
    kk = int(k) if k is not None else None
    if name in NEEDS_K and kk is None:
        raise ValueError(f"oracle: {name} needs @k")
    if name in NO_K and kk is not None:
        raise ValueError(f"oracle: {name} takes no @k")
    return Measure(name, params, kk)


# ------------------------------------------------------------------------------------- plain metrics


def _log2_discount(i: int) -> float:
    return 1.0 / math.log2(i + 1)


def _jk_discount(i: int) -> float:
    return 1.0 if i == 1 else 1.0 / math.log2(i)


def gain_function(m: Measure):
    """The item value G(g) of DCG / nDCG for measure m."""
    p = m.params
    base = p.get("gain", "linear")
    dcg = p.get("dcg")
    if dcg is not None:
        base = {"log2": "linear", "exp-log2": "exp2"}[dcg]
    gains = p.get("gains") or {}
    if base == "linear":
        def f(g):
            return float(g)
    elif base == "exp2":
        def f(g):
            return 2.0 ** g - 1.0
    else:
        raise ValueError(base)

    def G(g):
        if g in gains:
            return float(gains[g])
        return f(g)

    return G


def item_value_function(m: Measure):
    """What optimistic / pessimistic sort a tie by: the gain for DCG / nDCG, the grade otherwise."""
    if m.name in ("DCG", "nDCG"):
        return gain_function(m)
    return float


def plain_value(spec: str | Measure, g: Sequence[float]) -> float:
    """The plain (untied) metric of one ordered list of grades ``g`` (best first).

    The list is the whole judged set (matrix row): R, the ideal DCG and ERR's default max grade come from it.
    Textbook definitions, one position at a time; empty denominators give 0.
    """
    m = parse(spec)
    if m.name in ("GMAP", "GMBpref"):   # per query: AP / Bpref; only the mean over queries is geometric
        return plain_value(Measure(m.name[2:], m.params), g)
    p = m.params
    g = [float(x) for x in g]
    n = len(g)
    name = m.name
    k = m.k
    K = n if k is None else min(k, n)
    rel = p.get("rel", 1)
    b = [1 if rel is not None and x >= rel else 0 for x in g]   # rel=None: graded RBP (no binary b)
    R = sum(b)
    H = []  # H[i-1] = relevant among positions 1..i
    acc = 0
    for x in b:
        acc += x
        H.append(acc)
    HK = H[K - 1] if K > 0 else 0
    clip = bool(p.get("clip", False))
    kp = (K if clip else k) if k is not None else n

    if name == "NumQ":
        return 1.0
    if name == "NumRet":
        return float(n)
    if name == "NumRel":
        return float(R)
    if name == "NumRelRet":
        return float(H[-1] if n else 0)
    if name == "P":
        if p.get("clip_at_r", False):   # trec_eval relative_P: divided by min(cutoff, R); 0 when R = 0
            kp = min(kp, R)
        return HK / kp if kp else 0.0
    if name == "R":
        return HK / R if R else 0.0
    if name == "F1":   # F_beta from P and R (beta = 1: 2PR / (P + R))
        b2 = p.get("beta", 1) ** 2
        P_, R_ = HK / kp if kp else 0.0, HK / R if R else 0.0
        return (1 + b2) * P_ * R_ / (b2 * P_ + R_) if HK else 0.0
    if name == "Success":
        return 1.0 if HK > 0 else 0.0
    if name == "Rprec":
        if R == 0:
            return 0.0
        return H[min(R, n) - 1] / R
    if name == "RR":
        for i in range(1, K + 1):
            if b[i - 1]:
                return 1.0 / i
        return 0.0
    if name == "ACG":
        return sum(g[:K]) / kp if kp else 0.0
    if name in ("AP", "WAP"):
        default = "R" if name == "AP" else "retrieved"
        denom = p.get("denom", default)
        num = 0.0
        wsum = 0.0  # WAP: sum of grades of relevant items in positions 1..i
        for i in range(1, K + 1):
            if name == "WAP":
                wsum += b[i - 1] * g[i - 1]
            if b[i - 1]:
                num += (H[i - 1] if name == "AP" else wsum) / i
        if denom == "R":
            D = R
        elif denom == "retrieved":
            D = HK
        elif denom == "min_k_R":
            D = R if k is None else min(k, R)
        else:
            raise ValueError(denom)
        return num / D if D else 0.0
    if name in ("DCG", "nDCG"):
        G = gain_function(m)
        disc = {"log2": _log2_discount, "jk": _jk_discount}[p.get("discount", "log2")]
        gains = [G(x) for x in g]
        dcg = sum(gains[i - 1] * disc(i) for i in range(1, K + 1))
        if name == "DCG":
            return dcg
        ideal = sorted(gains, reverse=True)
        idcg = sum(ideal[i - 1] * disc(i) for i in range(1, K + 1))
        return dcg / idcg if idcg != 0 else 0.0
    if name == "ERR":
        gmax = p.get("max_grade")
        if gmax is None:
            gmax = max(g) if n else 0.0
        if any(x > gmax for x in g):
            raise ValueError("oracle: grade above max_grade")
        scale = 2.0 ** gmax
        err = 0.0
        not_stopped = 1.0
        for i in range(1, K + 1):
            Ri = (2.0 ** g[i - 1] - 1.0) / scale
            err += not_stopped * Ri / i
            not_stopped *= 1.0 - Ri
        return err
    # judgment-based measures: a negative grade is unjudged (a matrix row has none)
    if name == "NumNonRelJudgedRet":
        return float(sum(1 for x in g if 0 <= x < rel))
    if name == "Judged":
        den = K if p.get("clip", True) else k
        return sum(1 for x in g[:K] if x >= 0) / den if den else 0.0
    if name == "Unjudged":
        return sum(1 for x in g[:K] if x < 0) / k
    if name in ("SetP", "SetR", "SetF"):
        hits = H[-1] if n else 0
        P = hits / n if n else 0.0
        Rc = hits / R if R else 0.0
        if name == "SetP":
            return P
        if name == "SetR":
            return Rc
        x = p.get("beta", 1)
        return (x + 1) * P * Rc / (x * P + Rc) if hits else 0.0   # trec_eval set_F
    if name == "RBP":
        q = p.get("p", 0.8)
        if p.get("rel", None) is None:   # m_rbp.c: gains = grades, divided by the largest when it exceeds 1
            scale = max([1.0] + [x for x in g if x >= 0])
            return (1 - q) * sum(max(g[i - 1], 0.0) / scale * q ** (i - 1) for i in range(1, K + 1))
        return (1 - q) * sum(b[i - 1] * q ** (i - 1) for i in range(1, K + 1))
    if name == "Bpref":
        N = sum(1 for x in g if 0 <= x < rel)
        nonrel_above, total = 0, 0.0
        for x in g:
            if x >= rel:
                total += 1.0 - (min(nonrel_above, R) / min(N, R) if nonrel_above else 0.0)
            elif x >= 0:
                nonrel_above += 1
        return total / R if R else 0.0
    if name in ("infAP", "IPrec", "IPrecAvg"):
        return trec_interpolated_value(m, g)
    if name in ("RprecMult", "Hits", "SetRelP", "SetAP", "Utility", "BinG", "G", "NDCGRel", "Rndcg", "RBPResid"):
        return trec_other_value(m, g)
    raise ValueError(f"oracle: unknown measure {name}")


def _trec_gain(m: Measure, x: float) -> float:
    """The gain of grade x in G, ndcg_rel and Rndcg: the grade (or the measure's gain / gains), 0 when
    unjudged (negative)."""
    return 0.0 if x < 0 else gain_function(m)(x)


def trec_other_value(spec, g: Sequence[float]) -> float:
    """trec_eval 10's Rprec_mult, set_relative_P, set_map, utility, binG, G, ndcg_rel, Rndcg and rbp_resid,
    and ranx's hits@k, on one ranking's grades ``g`` (a matrix row: every judged item is ranked; a negative
    grade is an unjudged one). Literal transcriptions of the C loops, one position at a time."""
    m = parse(spec)
    p, name, n = m.params, m.name, len(g)
    rel = p.get("rel", 1)
    relevant = [x >= rel for x in g]
    R, H = sum(relevant), sum(relevant)   # every judged item is ranked: all relevant ones are retrieved
    if name == "Hits":                   # ranx hits: relevant in the top k
        return float(sum(relevant[:m.k]))
    if name == "RprecMult":              # cutoff (long)(mult R + 0.9); beyond the list: num_rel_ret / cutoff
        cut = int(p.get("mult", 1) * R + 0.9)
        return sum(relevant[:cut]) / cut if cut else 0.0
    if name == "SetRelP":
        return H / min(n, R) if n and R else 0.0
    if name == "SetAP":
        return H * H / (n * R) if n and R else 0.0
    if name == "Utility":
        a, b_, c, d, N = (p.get(k, v) for k, v in (("a", 1), ("b", -1), ("c", 0), ("d", 0), ("N", 0)))
        return a * H + b_ * (n - H) + c * (R - H) + d * (N + H - n - R)
    if name == "BinG":
        total, so_far = 0.0, 0
        for i, r in enumerate(relevant):
            if r:
                so_far += 1
                total += 1.0 / math.log2(3 + i - so_far)
        return total / R if so_far else 0.0
    if name == "RBPResid":
        q = p.get("p", 0.9)
        unj, total, cur = 0, 0.0, 1.0
        for x in g:
            if x < 0:
                unj += 1
                total += cur
            cur *= q
        return cur + (1 - q) * total if unj else 0.0
    gains = [_trec_gain(m, x) for x in g]
    ideal = sorted((x for x in (_trec_gain(m, y) for y in g if y >= 0) if x > 0), reverse=True)
    if name == "G":
        return _trec_g(gains, ideal)
    if name == "NDCGRel":
        return _trec_ndcg_rel(gains, ideal)
    return _trec_rndcg(gains, ideal) if R else 0.0   # m_Rndcg.c: 0 when no document reaches rel


def _ideal_at(ideal: list, i: int) -> float:
    return ideal[i] if 0 <= i < len(ideal) else 0.0


def _trec_g(gains: list, ideal: list) -> float:
    """m_G.c: each rank costs max(ideal gain there, 1); a gain counts 1 / log2(2 + cost - gain so far)."""
    if not ideal:
        return 0.0
    cost = got = value = 0.0
    for i, x in enumerate(gains):
        got += x
        cost += max(_ideal_at(ideal, i), 1.0)
        if x != 0:
            value += x / math.log2(2 + cost - got)
    return value / math.fsum(ideal)


def _trec_ndcg_rel(gains: list, ideal: list) -> float:
    """m_ndcg_rel.c: nDCG at each retrieved positive-gain document (ideal DCG up to that rank, at most all
    P ideal documents); each of the P not retrieved counts the final DCG over the full ideal DCG."""
    P = len(ideal)
    if P == 0:
        return 0.0
    idcg, dcg, total, seen = 0.0, 0.0, 0.0, 0
    for i, x in enumerate(gains):
        if x != 0:
            dcg += x / math.log2(i + 2)
        if i < P:
            idcg += ideal[i] / math.log2(i + 2)
        if x > 0:
            total += dcg / idcg
            seen += 1
    for i in range(len(gains), P):
        idcg += ideal[i] / math.log2(i + 2)
    total += (P - seen) * dcg / idcg
    return total / P if total > 0 else 0.0


def _trec_rndcg(gains: list, ideal: list) -> float:
    """m_Rndcg.c's loops: nDCG at each rank where the ideal gain changes (the R levels), the DCG so far
    over the ideal DCG so far; and at the end of a list that runs past the ideal list plus one."""
    n, total, count, dcg, idcg = len(gains), 0.0, 0, 0.0, 0.0
    old = _ideal_at(ideal, 0)
    i = 0
    current = old
    while i < n and current > 0:                   # first loop: documents and ideal together
        current = _ideal_at(ideal, i)
        if current != old:
            if idcg > 0:
                total, count = total + dcg / idcg, count + 1
            old = current
        if gains[i] != 0:
            dcg += gains[i] / math.log2(i + 2)
        if current > 0:
            idcg += current / math.log2(i + 2)
        i += 1
    if i < n:                                      # documents past the ideal list
        for j in range(i, n):
            if gains[j] != 0:
                dcg += gains[j] / math.log2(j + 2)
        if idcg > 0:
            total, count = total + dcg / idcg, count + 1
    while current > 0:                             # ideal documents past the list
        current = _ideal_at(ideal, i)
        if current != old:
            if idcg > 0:
                total, count = total + dcg / idcg, count + 1
            old = current
        if current > 0:
            idcg += current / math.log2(i + 2)
        i += 1
    return total / count if count else 0.0


@lru_cache(maxsize=None)
def _trec_lround(x: float) -> int:
    """C's lround: the nearest integer to the exact double x, halves away from zero."""

    return int(Decimal(x).quantize(Decimal(1), rounding=ROUND_HALF_UP))


def _trec_iprec_levels(levels: Sequence[float], g: Sequence, rel: float, rounding: str,
                       num_rel: int | None) -> list[float]:
    """m_iprec_at_recall.c / m_11pt_avg.c literally: one value per level (levels ascending, as trec_eval
    stores them). Levels become counts of relevant documents: lround(x R) (trec_eval 10) or
    (long)(x R + 0.9) (9.x); then one backward walk keeps the best precision seen so far."""
    g = [-1.0 if x is None else x for x in g]
    num_ret = len(g)
    rel_ret = sum(1 for x in g if x >= rel)
    if num_rel is None:
        num_rel = rel_ret                           # a matrix row: every judged item is retrieved
    if rounding == "trec9":
        cutoffs = [int(x * num_rel + 0.9) for x in levels]
    else:
        cutoffs = [_trec_lround(x * num_rel) for x in levels]
    values = [0.0] * len(levels)
    if num_ret == 0:
        return values
    current = len(levels) - 1
    while current >= 0 and cutoffs[current] > rel_ret:
        current -= 1
    int_precis = rel_ret / num_ret
    rel_so_far = rel_ret
    i = num_ret
    while i > 0 and rel_so_far > 0:
        int_precis = max(int_precis, rel_so_far / i)
        if g[i - 1] >= rel:
            while current >= 0 and rel_so_far == cutoffs[current]:
                values[current] = int_precis
                current -= 1
            rel_so_far -= 1
        i -= 1
    while current >= 0:
        values[current] = int_precis
        current -= 1
    return values


def trec_interpolated_value(spec, g: Sequence, num_rel: int | None = None) -> float:
    """trec_eval's infAP (m_infap.c), iprec_at_recall (IPrec) and 11pt_avg (IPrecAvg) on one ranking's
    grades ``g``: None for a document outside the pool, a negative grade for one in the pool but unjudged.
    ``num_rel`` (R) defaults to the relevant documents of ``g`` (a matrix row: every judged item ranked)."""
    m = parse(spec)
    p = m.params
    rel = p.get("rel", 1)
    if num_rel is None:
        num_rel = sum(1 for x in g if x is not None and x >= rel)
    if m.name == "infAP":
        eps = 1e-5
        nonrel = rel_so_far = unjudged = 0
        total = 0.0
        for j, x in enumerate(g):
            if x is None:
                continue                            # not in the pool: only moves the ranks below
            if x < 0:
                unjudged += 1
            elif x < rel:
                nonrel += 1
            else:
                rel_so_far += 1
                if j == 0:
                    total += 1.0
                else:
                    fj = float(j)
                    total += 1.0 / (fj + 1.0) + (fj / (fj + 1.0)) * (
                        (rel_so_far - 1 + nonrel + unjudged) / fj) * (
                        (rel_so_far - 1 + eps) / (rel_so_far - 1 + nonrel + 2 * eps))
        return total / num_rel if num_rel else 0.0
    rounding = p.get("rounding", "trec10")
    if m.name == "IPrec":
        return _trec_iprec_levels([float(p.get("recall", 0.0))], g, rel, rounding, num_rel)[0]
    levels = sorted(float(x) for x in p.get("levels", (0.0, 0.1, 0.2, 0.3, 0.4, 0.5, 0.6, 0.7, 0.8, 0.9, 1.0)))
    values = _trec_iprec_levels(levels, g, rel, rounding, num_rel)
    total = 0.0
    for v in reversed(values):   # m_11pt_avg.c adds them from the highest level down
        total += v
    return total / len(values)


# ------------------------------------------------------------------------------------------- orderings


def tie_groups(keys: Sequence[float]) -> list[list[int]]:
    """Indices grouped by equal key (``==``), best (highest key) group first, indices ascending inside."""
    ks = [float(x) for x in keys]
    if any(math.isnan(x) for x in ks):
        raise ValueError("oracle: NaN key")
    distinct = sorted(set(ks), reverse=True)  # set() merges 0.0 / -0.0 (they are == and hash alike)
    return [[i for i, x in enumerate(ks) if x == d] for d in distinct]


def doc_orderings(scores: Mapping, key: Callable[[Any], float] = float) -> Iterator[list]:
    """Every order (best first) of the documents of ``{doc: score}`` that the scores allow: each tie
    permuted in every way, ties in the dict's order first. ``key``: how a score is read (a C float for
    pytrec_eval)."""
    docs = list(scores)
    groups = tie_groups([key(scores[d]) for d in docs])
    for combo in product(*(permutations([docs[i] for i in g]) for g in groups)):
        yield [d for tie in combo for d in tie]


def count_orderings(grades: Sequence[float], keys: Sequence[float], dedupe: bool = True) -> int:
    total = 1
    for grp in tie_groups(keys):
        c = math.factorial(len(grp))
        if dedupe:
            mult: dict[float, int] = {}
            for i in grp:
                mult[float(grades[i])] = mult.get(float(grades[i]), 0) + 1
            for v in mult.values():
                c //= math.factorial(v)
        total *= c
    return total


def distinct_permutations(vals: Sequence[float]) -> list[tuple]:
    """Each distinct arrangement of the multiset ``vals`` once (without generating all n! first)."""
    counts: dict[float, int] = {}
    for v in vals:
        counts[v] = counts.get(v, 0) + 1
    distinct = sorted(counts)
    out: list[tuple] = []
    prefix: list[float] = []

    def rec(remaining: int) -> None:
        if remaining == 0:
            out.append(tuple(prefix))
            return
        for v in distinct:
            if counts[v]:
                counts[v] -= 1
                prefix.append(v)
                rec(remaining - 1)
                prefix.pop()
                counts[v] += 1

    rec(len(vals))
    return out


def enumerate_orderings(grades: Sequence[float], keys: Sequence[float], dedupe: bool = True,
                        cap: int = 20000) -> Iterator[tuple]:
    """Every grade sequence (best first) produced by an ordering consistent with ``keys``.

    With ``dedupe`` (default) each distinct grade arrangement of a tie appears once; all distinct
    arrangements are equally likely under a uniform shuffle, see the module docstring.
    """
    n_ord = count_orderings(grades, keys, dedupe)
    if n_ord > cap:
        raise ValueError(f"oracle: {n_ord} orderings exceed the cap {cap}; use a smaller case")
    per_group = []
    for grp in tie_groups(keys):
        vals = [float(grades[i]) for i in grp]
        per_group.append(distinct_permutations(vals) if dedupe else list(permutations(vals)))
    for combo in product(*per_group):
        yield tuple(chain.from_iterable(combo))


def all_values(spec, grades, keys, dedupe: bool = True) -> list[float]:
    m = parse(spec)
    return [plain_value(m, seq) for seq in enumerate_orderings(grades, keys, dedupe)]


def tie_aware(spec, grades, keys, dedupe: bool = True) -> tuple[float, float, float]:
    """(exact mean, min, max) of the plain metric over all orderings consistent with ``keys``."""
    vals = all_values(spec, grades, keys, dedupe)
    return math.fsum(vals) / len(vals), min(vals), max(vals)


def fixed_order(spec, grades, keys, mode: str) -> list[int]:
    """Item indices best first under one fixed tie-break."""
    m = parse(spec)
    ks = [float(x) for x in keys]
    idx = range(len(ks))
    if mode == "input":
        return sorted(idx, key=lambda i: (-ks[i], i))
    if mode == "trec_eval":
        return sorted(idx, key=lambda i: (-ks[i], -i))
    val = item_value_function(m)
    if mode == "optimistic":
        return sorted(idx, key=lambda i: (-ks[i], -val(float(grades[i])), i))
    if mode == "pessimistic":
        return sorted(idx, key=lambda i: (-ks[i], val(float(grades[i])), i))
    raise ValueError(mode)


def fixed_value(spec, grades, keys, mode: str) -> float:
    """The plain metric under a fixed tie-break mode (input / trec_eval / optimistic / pessimistic)."""
    order = fixed_order(spec, grades, keys, mode)
    return plain_value(spec, [float(grades[i]) for i in order])


@dataclass
class Analysis:
    mean: float
    lo: float
    hi: float
    values: list
    fixed: dict

    def expected_for(self, mode: str) -> float:
        """The value under a tie mode: the mean / min / max over orderings, or a fixed order's value."""
        over_all = {"expected": self.mean, "lower": self.lo, "upper": self.hi}
        return over_all[mode] if mode in over_all else self.fixed[mode]


FIXED_MODES = ("input", "trec_eval", "optimistic", "pessimistic")


def analyse(spec, grades, keys) -> Analysis:
    """Everything the tests need for one list, from one enumeration."""
    m = parse(spec)
    vals = all_values(m, grades, keys)
    fixed = {mode: fixed_value(m, grades, keys, mode) for mode in FIXED_MODES}
    return Analysis(math.fsum(vals) / len(vals), min(vals), max(vals), sorted(set(vals)), fixed)


def is_sum_measure(spec) -> bool:
    """NumQ / NumRet / NumRel / NumRelRet / NumNonRelJudgedRet aggregate over rows as sums, every other measure as a mean."""
    return parse(spec).name in ("NumQ", "NumRet", "NumRel", "NumRelRet", "NumNonRelJudgedRet")


# ------------------------------------------------------------------------ comparing a library result
# The harness below only *calls* the library's public ``evaluate_matrix`` (passed in as ``tr``) and compares
# its output with the enumeration above; it knows nothing about how the library computes.

ALL_MODES = ("expected", "optimistic", "pessimistic", "input", "trec_eval", "random", "lower", "upper")
TOL = 1e-9


def _as_rows(a):
    import numpy as np

    a = np.asarray(a)
    return a.reshape(1, -1) if a.ndim == 1 else a


def _column(frame, measure, nrows, what, repro):
    col = frame[measure]
    got_index = list(col.index)
    assert got_index == list(range(nrows)), f"{what}: index {got_index!r}, expected row numbers; {repro}"
    return [float(x) for x in col.to_numpy()]


def repro_call(relevance, measure, mode, scores=None, distances=None, seed=None):
    import numpy as np

    arg = "scores" if scores is not None else "distances"
    keys = scores if scores is not None else distances
    s = (f"tierank.evaluate_matrix(np.array({np.asarray(relevance).tolist()!r}), "
         f"{arg}=np.array({np.asarray(keys).tolist()!r}), measures=[{measure!r}], ties={mode!r}, bounds=True")
    if seed is not None:
        s += f", seed={seed!r}"
    return s + ")"


def check_library(tr, relevance, measure, *, scores=None, distances=None, modes=ALL_MODES, seed=None,
                  analyses=None, tol=TOL):
    """Call ``tr.evaluate_matrix`` once per tie mode and compare every row with the oracle.

    Checks per_query (value under the mode), lower / upper (min / max over orderings) and mean (mean over
    rows, sums for the Num* counts).  ``random``: the value must be one of the orderings' values, lie in
    [lower, upper], and be identical on a repeated call with the same seed.  Returns the analyses so callers
    can reuse them.
    """
    import numpy as np

    assert (scores is None) != (distances is None)
    rel_rows = _as_rows(relevance)
    key_rows = _as_rows(scores) if scores is not None else -_as_rows(distances)
    nrows = rel_rows.shape[0]
    if analyses is None:
        analyses = [analyse(measure, list(rel_rows[r]), list(key_rows[r])) for r in range(nrows)]
    keyarg = {"scores": scores} if scores is not None else {"distances": distances}
    for mode in modes:
        extra = {"seed": seed} if (mode == "random" and seed is not None) else {}
        repro = repro_call(relevance, measure, mode, scores, distances, extra.get("seed"))
        res = tr.evaluate_matrix(relevance, **keyarg, measures=[measure], ties=mode, bounds=True, **extra)
        pq = _column(res.per_query, measure, nrows, "per_query", repro)
        lo = _column(res.lower, measure, nrows, "lower", repro)
        hi = _column(res.upper, measure, nrows, "upper", repro)
        for r, a in enumerate(analyses):
            where = f"row {r} (grades {rel_rows[r].tolist()}, keys {key_rows[r].tolist()})"
            assert abs(lo[r] - a.lo) <= tol, f"lower: library {lo[r]!r} != oracle min {a.lo!r}; {where}; {repro}"
            assert abs(hi[r] - a.hi) <= tol, f"upper: library {hi[r]!r} != oracle max {a.hi!r}; {where}; {repro}"
            if mode == "random":
                near = min(abs(pq[r] - v) for v in a.values)
                assert near <= tol, (f"random: library {pq[r]!r} is not the value of any ordering "
                                     f"(values {a.values!r}); {where}; {repro}")
                assert a.lo - tol <= pq[r] <= a.hi + tol, f"random value outside bounds; {where}; {repro}"
            else:
                want = a.expected_for(mode)
                assert abs(pq[r] - want) <= tol, (f"per_query[{mode}]: library {pq[r]!r} != oracle {want!r} "
                                                  f"(mean {a.mean!r}, min {a.lo!r}, max {a.hi!r}, "
                                                  f"fixed {a.fixed!r}); {where}; {repro}")
        base = pq if mode == "random" else [a.expected_for(mode) for a in analyses]
        agg = math.fsum(base) if is_sum_measure(measure) else math.fsum(base) / nrows
        got = float(res.mean[measure])
        assert abs(got - agg) <= tol, f"mean[{mode}]: library {got!r} != {agg!r}; {repro}"
        if mode == "random":
            res2 = tr.evaluate_matrix(relevance, **keyarg, measures=[measure], ties=mode, bounds=True, **extra)
            pq2 = [float(x) for x in res2.per_query[measure].to_numpy()]
            assert np.array_equal(np.array(pq), np.array(pq2)), f"random not reproducible: {pq} vs {pq2}; {repro}"
    return analyses
