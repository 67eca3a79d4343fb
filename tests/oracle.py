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
from itertools import chain, permutations, product
from typing import Iterator, Sequence

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
    b = [1 if x >= rel else 0 for x in g]
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
    raise ValueError(f"oracle: unknown measure {name}")


# ------------------------------------------------------------------------------------------- orderings


def tie_groups(keys: Sequence[float]) -> list[list[int]]:
    """Indices grouped by equal key (``==``), best (highest key) group first, indices ascending inside."""
    ks = [float(x) for x in keys]
    if any(math.isnan(x) for x in ks):
        raise ValueError("oracle: NaN key")
    distinct = sorted(set(ks), reverse=True)  # set() merges 0.0 / -0.0 (they are == and hash alike)
    return [[i for i, x in enumerate(ks) if x == d] for d in distinct]


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
        return self.mean if mode == "expected" else self.fixed[mode]


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

ALL_MODES = ("expected", "optimistic", "pessimistic", "input", "trec_eval", "random")
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
