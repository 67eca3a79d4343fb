"""Every measure of the registry at extreme grades, scores, cutoffs and parameters, against an exact oracle.

For each registered family (the test fails when a family has no case here), hypothesis draws small matrices
with ties, grades from 0 and tiny fractions (5e-324, 1e-300) up to 1e16 ... 1.8e308, scores from -1e308 to
1e308 (subnormals, +-0.0) or int64 near 2**63, cutoffs up to 10**18, and the family's parameters at their
extremes (beta 1e308 and 5e-324, Utility coefficients 1e308, RBP p next to 0 and 1, exp2 gains, gains maps
of 1e308). The library must either give the exact value (tests/exact_oracle.py: mpmath at 2400 bits over
every ordering of tied items) to 1e-9 relative, within the family's declared range, for the tie-aware
value, both bounds and trec_eval's tie-break; or raise an InputError naming the value out of float64's
reach. A refusal is accepted only where an exact value is beyond float64 or the case holds a grade or
parameter of at least 2**53 (where float64 sums stop being exact); every other case must give a number.
"""

from __future__ import annotations

import math
import os
import re
import sys

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
mpmath = pytest.importorskip("mpmath")
import exact_oracle  # noqa: E402

import tierank  # noqa: E402
from tierank import InputError, parse_measure  # noqa: E402
from tierank.measures import REGISTRY  # noqa: E402

BIG = 1.7976931348623157e308
# Per family, measure templates at extreme parameters; ``{k}`` is the cutoff.
EXTREME: dict[str, list[str]] = {
    "P": ["P@{k}", "P(rel=1e308)@{k}", "P(rel=5e-324, clip=True)@{k}", "P(clip_at_r=True)@{k}"],
    "R": ["R@{k}", "R(rel=1e-300)@{k}", "R(rel=1e308)@{k}"],
    "F1": ["F1(beta=1e308)@{k}", "F1(beta=1e154)@{k}", "F1(beta=1e-308)@{k}", "F1(beta=3e-162, clip=True)@{k}",
           "F1(beta=0)@{k}"],
    "Success": ["Success@{k}", "Success(rel=1e300)@{k}"],
    "Rprec": ["Rprec", "Rprec(rel=5e-324)"],
    "RprecMult": ["RprecMult(mult=1e308)", "RprecMult(mult=5e-324)", "RprecMult(mult=1e16)"],
    "Hits": ["Hits@{k}", "Hits(rel=1e-300)@{k}"],
    "ACG": ["ACG@{k}", "ACG(clip=True)@{k}"],
    "NumQ": ["NumQ(rel=1e308)"],
    "NumRet": ["NumRet", "NumRet(rel=1e308)", "NumRet(rel=5e-324)"],
    "NumRel": ["NumRel(rel=1e300)", "NumRel(rel=5e-324)"],
    "NumRelRet": ["NumRelRet", "NumRelRet(rel=1e-300)"],
    "AP": ["AP", "AP(rel=1e300, denom='retrieved')@{k}", "AP(denom='min_k_R')@{k}", "AP(rel=5e-324)@{k}"],
    "GMAP": ["GMAP", "GMAP(rel=1e300)"],
    "WAP": ["WAP@{k}", "WAP(denom='R')@{k}", "WAP(rel=1e-300, denom='min_k_R')@{k}"],
    "RR": ["RR", "RR(rel=1e308)@{k}"],
    "nDCG": ["nDCG", "nDCG(gain='exp2')@{k}", "nDCG(gain='exp2', discount='jk')", "nDCG(discount='ln')@{k}",
             "nDCG(gains={1: 1e308, 2: 5e-324})", "nDCG(gain='exp2', gains={0: 1e300})@{k}",
             "nDCG(discount='log10')"],
    "DCG": ["DCG", "DCG(gain='exp2')@{k}", "DCG(gains={1: 1e308})@{k}", "DCG(discount='jk')"],
    "NDCGRel": ["NDCGRel", "NDCGRel(gain='exp2')", "NDCGRel(gains={1: 1e308})"],
    "Rndcg": ["Rndcg", "Rndcg(gain='exp2')", "Rndcg(rel=5e-324, gains={2: 1e300})"],
    "G": ["G", "G(gain='exp2')", "G(gains={1: 1e300})"],
    "ERR": ["ERR", "ERR@{k}", "ERR(max_grade=1.7976931348623157e308)", "ERR(max_grade=5e-324)@{k}"],
    "NumNonRelJudgedRet": ["NumNonRelJudgedRet(rel=1e308)", "NumNonRelJudgedRet(rel=5e-324)"],
    "Judged": ["Judged@{k}", "Judged(clip=False)@{k}"],
    "Unjudged": ["Unjudged@{k}"],
    "SetP": ["SetP(rel=1e308)", "SetP(rel=5e-324)"],
    "SetR": ["SetR(rel=1e-300)"],
    "SetF": ["SetF(beta=1e308)", "SetF(beta=5e-324)", "SetF(beta=0)", "SetF(beta=1e16, rel=1e-300)"],
    "SetRelP": ["SetRelP(rel=1e300)"],
    "SetAP": ["SetAP(rel=5e-324)"],
    "Utility": ["Utility(a=1e308, b=1e308)", "Utility(a=1e308, b=-1e308, c=1e308, d=-1e308, N=1e308)",
                "Utility(a=5e-324, b=-5e-324)", "Utility(a=1e308, b=-1e308)", "Utility(d=1e300, N=1e16)",
                "Utility(a=1e16, b=1)"],
    "RBP": ["RBP(p=0.9999999999999999)", "RBP(p=5e-324)@{k}", "RBP(rel=1e300, p=0.5)", "RBP@{k}"],
    "RBPResid": ["RBPResid(p=0.9999999999999999)", "RBPResid(p=5e-324)"],
    "Bpref": ["Bpref(rel=1e308)", "Bpref(rel=5e-324)"],
    "GMBpref": ["GMBpref(rel=1e-300)"],
    "infAP": ["infAP(rel=1e300)", "infAP"],
    "BinG": ["BinG(rel=1e-300)", "BinG"],
    "IPrec": ["IPrec(recall=5e-324)", "IPrec(recall=1)"],
    "IPrecAvg": ["IPrecAvg(levels=(5e-324, 1))"],
}
CUTOFFS = (1, 2, 3, 7, 2**31, 2**62, 10**18)
GRADES = (0.0, 0.0, 1.0, 2.0, 0.5, 5e-324, 1e-300, 3.0, 1100.0, 2100.0, 1e16, 1e17, 1e18, 1e19, 2.0**53 + 2, 1e300,
          BIG)
FLOAT_KEYS = (1e308, -1e308, 5e-324, -5e-324, 0.0, -0.0, 1.0, 1.0, BIG, -BIG)
INT_KEYS = (2**63 - 1, 2**63 - 2, -2**63, 2**62, 2**62 + 1, 0, 0)

# Absolute errors accepted beside the relative 1e-9 (float64 cannot do better): subnormal results; ERR
# works with the stop terms x = 1 - R, which float64 holds to 2**-53, so values below 1e-15 (every
# grade of the top k far below the largest, R tiny) are exact to that absolute error only
ABSOLUTE = {"ERR": 1e-15}

HYP = settings(deadline=None, derandomize=True, database=None, max_examples=600,
               suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large, HealthCheck.filter_too_much])


def test_every_family_has_extreme_cases():
    numeric = {name for name, f in REGISTRY.items() if not f.text}
    assert set(EXTREME) == numeric
    for name, templates in EXTREME.items():
        for t in templates:
            assert parse_measure(t.replace("{k}", "3")).family is REGISTRY[name], t


def _numbers(text: str) -> list[float]:
    return [float(x) for x in re.findall(r"(?<![\w.])\d[\d.e+-]*", text)]


@st.composite
def extreme_case(draw):
    name = draw(st.sampled_from(sorted(EXTREME)))
    template = draw(st.sampled_from(EXTREME[name]))
    n = draw(st.integers(1, 5))
    measure = template.replace("{k}", str(draw(st.sampled_from(CUTOFFS[:3] + (n,) + CUTOFFS[3:]))))
    rows = draw(st.integers(1, 2))
    grade_pool = draw(st.lists(st.sampled_from(GRADES), min_size=1, max_size=3))
    rel = [[draw(st.sampled_from(grade_pool + [0.0, 1.0])) for _ in range(n)] for _ in range(rows)]
    if draw(st.booleans()):
        keys = [[draw(st.sampled_from(INT_KEYS)) for _ in range(n)] for _ in range(rows)]
    else:
        pool = draw(st.lists(st.sampled_from(FLOAT_KEYS), min_size=1, max_size=3))
        keys = [[draw(st.sampled_from(pool)) for _ in range(n)] for _ in range(rows)]
    return measure, rel, keys


def _may_refuse(measure: str, rel: list) -> bool:
    """A refusal is acceptable where float64 sums stop being exact: a grade or parameter >= 2**53; and for
    G, whose 2 + C - S needs exact gain sums, a gain of 2**52 or more (gain='exp2': a grade of 52) or a
    positive grade or gain below 2**-1000, whose terms g / log2(2 + C - S) would be subnormal."""
    numbers = [abs(x) for x in _numbers(measure)] + [x for r in rel for x in r]
    m = parse_measure(measure)
    if m.name == "G":
        exp2 = m["gain"] == "exp2"
        gains = numbers + [2.0 ** min(x, 1000.0) for r in rel for x in r if exp2]
        return any(0 < x < 2.0**-1000 or x >= 2.0**52 for x in gains)
    return max([0.0] + numbers) >= 2.0**53


def _check(measure: str, rel: list, keys: list) -> None:
    oracles = [exact_oracle.analyse(measure, r, k) for r, k in zip(rel, keys)]
    dtype = np.int64 if isinstance(keys[0][0], int) else np.float64
    R, S = np.array(rel, dtype=np.float64), np.array(keys, dtype=dtype)
    repro = (f"tierank.evaluate_matrix(np.array({rel!r}), scores=np.array({keys!r}, dtype=np.{dtype.__name__}), "
             f"measures=[{measure!r}], bounds=True)")
    if any("error" in o for o in oracles):   # e.g. a grade above ERR's max_grade
        with pytest.raises(InputError):
            tierank.evaluate_matrix(R, scores=S, measures=[measure], bounds=True)
        return
    wanted = [o[w] for o in oracles for w in ("mean", "min", "max", "trec_eval")]
    name = parse_measure(measure).name
    lo_r, hi_r = parse_measure(measure).family.value_range
    try:
        exp = tierank.evaluate_matrix(R, scores=S, measures=[measure], bounds=True)
        trec = tierank.evaluate_matrix(R, scores=S, measures=[measure], ties="trec_eval")
    except InputError as err:
        assert "\n" not in str(err), repro
        out_of_range = not all(exact_oracle.representable(w) for w in wanted)
        assert out_of_range or _may_refuse(measure, rel), f"refused a case it can compute: {err}; {repro}"
        assert re.search(r"float64|beyond|out of reach", str(err)), f"the refusal says not what is out of reach: {err}; {repro}"
        return
    assert all(exact_oracle.representable(w) for w in wanted), f"gave a number for a value beyond float64; {repro}"
    kind = parse_measure(measure).family.aggregate
    if kind in ("mean", "sum"):   # the mean over rows (sums for counts); gm: tests/test_measure_edges.py
        with mpmath.workprec(exact_oracle.PREC):
            total = mpmath.fsum(o["mean"] for o in oracles)
            want = total if kind == "sum" else total / len(oracles)
        assert exact_oracle.close(float(exp.mean[measure]), want, tiny=ABSOLUTE.get(name, 1e-300)), (
            f"mean: library {exp.mean[measure]!r}, exact {mpmath.nstr(want, 20)}; {repro}")
    for r, o in enumerate(oracles):
        got = {"mean": exp.per_query[measure].iloc[r], "min": exp.lower[measure].iloc[r],
               "max": exp.upper[measure].iloc[r], "trec_eval": trec.per_query[measure].iloc[r]}
        for what, value in got.items():
            value = float(value)
            assert lo_r <= value <= hi_r, (what, r, value, (lo_r, hi_r), repro)
            assert exact_oracle.close(value, o[what], tiny=ABSOLUTE.get(name, 1e-300)), (
                f"{what} of row {r}: library {value!r}, exact {mpmath.nstr(o[what], 20)}; {repro}")


@HYP
@given(extreme_case())
def test_registry_at_extremes(case):
    _check(*case)


# ------------------------------------------------------- the cases of the issue, as plain regressions

@pytest.mark.parametrize("grade", [1e16, 1e17, 1e18, 1e19, 1e300])
@pytest.mark.parametrize("measure", ["nDCG(gain='exp2')", "G", "nDCG", "ERR", "ACG@3", "WAP@3", "NDCGRel",
                                     "Rndcg"])
def test_huge_grade(measure, grade):
    _check(measure, [[grade, 1.0, 0.0]], [[3.0, 2.0, 1.0]])
    _check(measure, [[1.0, grade, 2.0, grade]], [[1.0, 1.0, 1.0, 0.0]])


def test_dcg_at_1_next_to_a_huge_grade():
    """DCG(gain='exp2')@1 of grade 1 with a grade 2100 below it: its sum scaled by 2**-1141 underflowed,
    and the DCG was 0 instead of 1."""
    _check("DCG(gain='exp2')@1", [[1.0, 2100.0]], [[2.0, 1.0]])
    _check("DCG(gain='exp2')@1", [[1.0, 2100.0]], [[1.0, 1.0]])   # the tie: 2**2100 / 2 is beyond float64


@pytest.mark.parametrize("measure", ["SetF(beta=1e308)", "Utility(a=1e308, b=1e308)", "F1(beta=1e308)@2",
                                     "F1(beta=1e200)@2", "SetF(beta=1e-308)", "Utility(a=1e308, b=-1e308)"])
def test_extreme_parameters(measure):
    _check(measure, [[1.0, 0.0, 1.0]], [[3.0, 2.0, 1.0]])
    _check(measure, [[2.0, 0.0, 1.0, 0.0]], [[1.0, 1.0, 0.0, 0.0]])


# ------------------------------------------------------------------- the sums under the measures

@settings(HYP, max_examples=200)
@given(st.lists(st.lists(st.sampled_from(GRADES + (-1.0, -1e300, 0.1, 2.0**62, 2.0**63)), min_size=1, max_size=4),
                min_size=1, max_size=4))
def test_within_query_exclusive_cumsum_is_the_sum_before(queries):
    """Each entry gets the sum of the earlier entries of its query: exact for integers of any size (the
    int64 path overflowed from 2**63 on: 1e19 + 1e19 gave -3.07e18), and never ``inclusive - value`` (1
    then 1e300 gave 0 before the 1e300)."""
    from fractions import Fraction

    from tierank.ties.groups import within_query_exclusive_cumsum

    values = np.array([x for q in queries for x in q])
    query = np.repeat(np.arange(len(queries)), [len(q) for q in queries])
    starts = np.searchsorted(query, np.arange(len(queries)))
    with np.errstate(over="ignore"):
        got = within_query_exclusive_cumsum(values, query, starts)
    i = 0
    for q in queries:
        for j in range(len(q)):
            exact = sum((Fraction(x) for x in q[:j]), Fraction(0))
            bound = sum((abs(Fraction(x)) for x in q[:j]), Fraction(0)) * Fraction(j, 2**52)
            if abs(exact) <= Fraction(BIG):   # beyond float64 the sum is inf, as float64 sums are
                assert abs(Fraction(got[i]) - exact) <= bound, (q, j, got[i], float(exact))
            i += 1


def test_mean_of_values_near_the_largest_float():
    """The mean of queries' values near 1.8e308 is exact: the exactly rounded sum overflowed to inf."""
    from fractions import Fraction

    from tierank.data.exact_sum import ExactSum

    values = [BIG, BIG, 1e308]
    assert ExactSum.of(values).mean() == float(sum(Fraction(v) for v in values) / 3)
    assert ExactSum.of([BIG, 1.0]).mean() == BIG / 2
