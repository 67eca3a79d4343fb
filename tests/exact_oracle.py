"""Exact oracle for measures at extreme grades, scores and parameters (test helper, not part of tierank).

Like tests/oracle.py it never imports ``tierank`` and enumerates every ordering of tied items, but every
measure whose value depends on the size of a grade or of a parameter is computed here in mpmath at
2400 bits: enough that sums and differences of a few float64 values (exponents from 2**-1074 to 2**1024)
are exact, and that 2**g for any float64 grade g has an exact exponent. Logarithms and the final
divisions are correctly rounded to those 2400 bits, far below float64's 2**-53. Measures whose values
depend on grades only through ``grade >= rel`` (counts, positions) are taken from tests/oracle.py, whose
float arithmetic on small counts is exact to a few ulps.

Items are tied when their keys compare equal as Python numbers (``int`` and ``float`` compare exactly:
2**62 + 1 and 2**62 are two different keys, as they are two different int64 scores).
"""

from __future__ import annotations

import math
from itertools import chain, product
from typing import Sequence

import mpmath

import oracle

PREC = 2400


def _mp(x) -> mpmath.mpf:
    return mpmath.mpf(x)


# measures computed here; every other one comes from tests/oracle.py
EXACT = {"DCG", "nDCG", "ERR", "ACG", "WAP", "RBP", "G", "NDCGRel", "Rndcg", "Utility", "SetF", "F1",
         "RprecMult"}


def _gain(p: dict, x: float) -> mpmath.mpf:
    """DCG-family gain of grade x: the gains map, else x ('linear') or 2**x - 1 ('exp2'); 0 when x < 0."""
    gains = p.get("gains") or {}
    if x < 0:
        return _mp(0)
    if x in gains:
        return _mp(gains[x])
    base = p.get("gain", "linear")
    if p.get("dcg") is not None:
        base = {"log2": "linear", "exp-log2": "exp2"}[p["dcg"]]
    return _mp(x) if base == "linear" else mpmath.power(2, _mp(x)) - 1


def _discount(p: dict, i: int) -> mpmath.mpf:
    kind = p.get("discount", "log2")
    if kind == "log2":
        return 1 / mpmath.log(i + 1, 2)
    if kind == "ln":
        return 1 / mpmath.log(i + 1)
    if kind == "log10":
        return 1 / mpmath.log10(i + 1)
    if kind == "jk":
        return _mp(1) if i == 1 else 1 / mpmath.log(i, 2)
    raise ValueError(kind)


def _log2(x) -> mpmath.mpf:
    return mpmath.log(x, 2)


def exact_plain(m: oracle.Measure, g: Sequence[float]):
    """The plain metric of one ordered list of grades (best first) as an mpf (or a float from oracle.py)."""
    if m.name == "NumRet":   # NumRet(rel=X): the retrieved items with grade >= X (tests/oracle.py has no rel)
        rel = m.params.get("rel")
        return _mp(len(g) if rel is None else sum(x >= rel for x in g))
    if m.name not in EXACT:
        return _mp(oracle.plain_value(m, g))
    p, name, n = m.params, m.name, len(g)
    k = m.k
    K = n if k is None else min(k, n)
    rel = p.get("rel", None if name == "RBP" else 1)   # RBP's default: trec_eval's graded rbp
    relevant = [rel is not None and x >= rel for x in g]
    R = sum(relevant)
    HK = sum(relevant[:K])
    kp = (K if p.get("clip", False) else k) if k is not None else n
    if name in ("DCG", "nDCG"):
        gains = [_gain(p, x) for x in g]
        dcg = mpmath.fsum(gains[i - 1] * _discount(p, i) for i in range(1, K + 1))
        if name == "DCG":
            return dcg
        ideal = sorted(gains, reverse=True)
        idcg = mpmath.fsum(ideal[i - 1] * _discount(p, i) for i in range(1, K + 1))
        return dcg / idcg if idcg != 0 else _mp(0)
    if name == "ERR":
        gmax = p.get("max_grade")
        gmax = max([0.0] + list(g)) if gmax is None else gmax
        if any(x > gmax for x in g):
            raise ValueError("grade above max_grade")
        scale = mpmath.power(2, _mp(gmax))
        total, going = _mp(0), _mp(1)
        for i in range(1, K + 1):
            r = (mpmath.power(2, _mp(max(g[i - 1], 0.0))) - 1) / scale
            total += going * r / i
            going *= 1 - r
        return total
    if name == "ACG":
        return mpmath.fsum(_mp(max(x, 0.0)) for x in g[:K]) / kp if kp else _mp(0)
    if name == "WAP":
        denom = p.get("denom", "retrieved")
        num, wsum, hits = _mp(0), _mp(0), 0
        for i in range(1, K + 1):
            if relevant[i - 1]:
                wsum += _mp(g[i - 1])
                num += wsum / i
        D = {"R": R, "retrieved": HK, "min_k_R": R if k is None else min(k, R)}[denom]
        return num / D if D else _mp(0)
    if name == "RBP":
        q = _mp(p.get("p", 0.8))
        if rel is None:   # trec_eval's graded rbp: grades over the largest one when it exceeds 1
            scale = _mp(max([1.0] + list(g)))
            return (1 - q) * mpmath.fsum(_mp(max(g[i - 1], 0.0)) / scale * q ** (i - 1) for i in range(1, K + 1))
        return (1 - q) * mpmath.fsum(q ** (i - 1) for i in range(1, K + 1) if relevant[i - 1])
    if name == "Utility":
        a, b, c, d, N = (_mp(p.get(key, v)) for key, v in (("a", 1), ("b", -1), ("c", 0), ("d", 0), ("N", 0)))
        H = R   # every judged item is ranked (a matrix row)
        return a * H + b * (n - H) + c * (R - H) + d * (N + H - n - R)
    if name == "SetF":   # trec_eval set_F: (x + 1) P R / (x P + R), 0 without a hit
        x = _mp(p.get("beta", 1))
        if R == 0:
            return _mp(0)
        P_, R_ = _mp(R) / n, _mp(1)
        return (x + 1) * P_ * R_ / (x * P_ + R_)
    if name == "F1":     # (1 + b^2) P R / (b^2 P + R), 0 without a hit
        if HK == 0:
            return _mp(0)
        b2 = _mp(p.get("beta", 1)) ** 2
        P_, R_ = _mp(HK) / kp, _mp(HK) / R
        return (1 + b2) * P_ * R_ / (b2 * P_ + R_)
    if name == "RprecMult":   # precision at rank floor(mult R + 0.9), divided by that rank beyond the list
        cut = mpmath.floor(_mp(p.get("mult", 1)) * R + _mp(0.9))
        if cut == 0:
            return _mp(0)
        return _mp(sum(relevant[:int(min(cut, n))])) / cut
    gains = [_mp(0) if x < 0 else _gain(p, x) for x in g]
    ideal = sorted((x for x in gains if x > 0), reverse=True)
    if name == "G":
        if not ideal:
            return _mp(0)
        cost = got = value = _mp(0)
        for i, x in enumerate(gains):
            got += x
            cost += max(ideal[i] if i < len(ideal) else _mp(0), _mp(1))
            if x != 0:
                value += x / _log2(2 + cost - got)
        return value / mpmath.fsum(ideal)
    if name == "NDCGRel":
        P = len(ideal)
        if P == 0:
            return _mp(0)
        idcg = dcg = total = _mp(0)
        seen = 0
        for i, x in enumerate(gains):
            if x != 0:
                dcg += x / _log2(i + 2)
            if i < P:
                idcg += ideal[i] / _log2(i + 2)
            if x > 0:
                total += dcg / idcg
                seen += 1
        for i in range(len(gains), P):
            idcg += ideal[i] / _log2(i + 2)
        total += (P - seen) * dcg / idcg
        return total / P if total > 0 else _mp(0)
    if name == "Rndcg":   # m_Rndcg.c's loops (tests/oracle.py's _trec_rndcg), in mpmath
        if R == 0:
            return _mp(0)

        def at(i):
            return ideal[i] if 0 <= i < len(ideal) else _mp(0)
        total, count, dcg, idcg = _mp(0), 0, _mp(0), _mp(0)
        old = at(0)
        i = 0
        current = old
        while i < n and current > 0:
            current = at(i)
            if current != old:
                if idcg > 0:
                    total, count = total + dcg / idcg, count + 1
                old = current
            if gains[i] != 0:
                dcg += gains[i] / _log2(i + 2)
            if current > 0:
                idcg += current / _log2(i + 2)
            i += 1
        if i < n:
            for j in range(i, n):
                if gains[j] != 0:
                    dcg += gains[j] / _log2(j + 2)
            if idcg > 0:
                total, count = total + dcg / idcg, count + 1
        while current > 0:
            current = at(i)
            if current != old:
                if idcg > 0:
                    total, count = total + dcg / idcg, count + 1
                old = current
            if current > 0:
                idcg += current / _log2(i + 2)
            i += 1
        return total / count if count else _mp(0)
    raise ValueError(name)


def tie_groups(keys: Sequence) -> list[list[int]]:
    """Indices grouped by equal key (exact comparison of Python ints / floats), best group first."""
    distinct = sorted(set(keys), reverse=True)
    return [[i for i, x in enumerate(keys) if x == d] for d in distinct]


def orderings(grades: Sequence[float], keys: Sequence, cap: int = 3000) -> list[tuple]:
    """Every distinct grade sequence of an ordering consistent with the keys (see tests/oracle.py)."""
    per_group = [oracle.distinct_permutations([grades[i] for i in grp]) for grp in tie_groups(keys)]
    if math.prod(len(x) for x in per_group) > cap:
        raise ValueError("too many orderings")
    return [tuple(chain.from_iterable(c)) for c in product(*per_group)]


def analyse(spec: str, grades: Sequence[float], keys: Sequence) -> dict:
    """Exact mean, min and max over the orderings, and the value under trec_eval's tie-break (column
    index descending), each an mpf; ``error`` holds the oracle's refusal (e.g. a grade above max_grade)."""
    m = oracle.parse(spec)
    with mpmath.workprec(PREC):
        try:
            values = [exact_plain(m, seq) for seq in orderings(grades, keys)]
            trec_order = sorted(range(len(keys)), key=lambda i: (tie_rank(keys, i), -i))
            trec = exact_plain(m, [grades[i] for i in trec_order])
        except ValueError as err:
            if "too many" in str(err):
                raise
            return {"error": str(err)}
        return {"mean": mpmath.fsum(values) / len(values), "min": min(values), "max": max(values),
                "trec_eval": trec}


def tie_rank(keys: Sequence, i: int) -> int:
    """Rank of item i's key among the distinct keys, best first (exact comparisons)."""
    return sorted(set(keys), reverse=True).index(keys[i])


def close(got: float, want, rel: float = 1e-9, tiny: float = 1e-300) -> bool:
    """Whether a float64 result equals the exact value to ``rel`` (plus ``tiny``, for subnormal values)."""
    if not math.isfinite(got):
        return False
    with mpmath.workprec(PREC):
        return abs(_mp(got) - want) <= rel * abs(want) + tiny


def representable(want) -> bool:
    """Whether an exact value lies within float64's finite range."""
    return abs(want) <= _mp(1.7976931348623157e308)
