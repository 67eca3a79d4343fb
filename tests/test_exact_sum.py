"""Exactly rounded sums: the same bits in any order and any split, equal to the exact rational sum
rounded once (fractions.Fraction, an independent computation) and to math.fsum."""

from __future__ import annotations

import math
from fractions import Fraction

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from tierank.data.exact_sum import ExactSum, exact_mean, exact_sum, finish_aggregate, partial_aggregate

finite = st.floats(allow_nan=False, allow_infinity=False, width=64)
# values of very different sizes, the case where naive summation loses bits
spread = st.builds(lambda m, e: math.ldexp(m, e), st.floats(-1, 1, allow_nan=False), st.integers(-1074, 1000))
values = st.lists(st.one_of(finite, spread, st.sampled_from([0.0, -0.0, 5e-324, 0.1, 1e16, -1e16])),
                  max_size=60)


def fraction_sum(xs: list[float]) -> float:
    """The exact rational sum rounded once to float64 (Fraction -> float is correctly rounded)."""
    total = sum((Fraction(x) for x in xs), Fraction(0))
    try:
        return float(total)
    except OverflowError:
        return math.inf if total > 0 else -math.inf


@settings(max_examples=300, deadline=None)
@given(values)
def test_equals_fraction_sum_correctly_rounded(xs: list[float]) -> None:
    got = exact_sum(np.array(xs, dtype=np.float64))
    want = fraction_sum(xs)
    assert got == want and math.copysign(1, got) == math.copysign(1, want) or (got == 0 and want == 0)


@settings(max_examples=200, deadline=None)
@given(values, st.randoms(use_true_random=False), st.lists(st.integers(0, 60), max_size=6))
def test_any_order_and_split_same_bits(xs: list[float], rnd, cuts: list[int]) -> None:
    whole = ExactSum.of(np.array(xs))
    shuffled = list(xs)
    rnd.shuffle(shuffled)
    bounds = sorted({0, len(xs), *[min(c, len(xs)) for c in cuts]})
    parts = [ExactSum.of(np.array(shuffled[a:b], dtype=np.float64)) for a, b in zip(bounds, bounds[1:])]
    merged = sum(parts, ExactSum())
    assert merged == whole
    assert ExactSum.from_text(merged.to_text()) == whole
    assert merged.value() == whole.value()


@settings(max_examples=200, deadline=None)
@given(st.lists(finite.filter(lambda x: abs(x) < 1e300), max_size=60))
def test_equals_math_fsum(xs: list[float]) -> None:
    assert exact_sum(np.array(xs, dtype=np.float64)) == math.fsum(xs)


def test_cancellation_and_tiny_values_by_hand() -> None:
    assert exact_sum([1e16, 1.0, -1e16]) == 1.0            # naive left-to-right sum: 0.0
    assert exact_sum([0.1] * 10) == 1.0                    # exact 1.0000000000000000555 rounds to 1.0
    assert exact_sum([5e-324, 5e-324]) == 1e-323           # two smallest subnormals
    assert exact_sum([]) == 0.0 and exact_sum([-0.0]) == 0.0
    assert math.isnan(exact_mean([]))
    assert exact_mean([0.1, 0.2, 0.3]) == 0.6 / 3          # exact sum 0.60000000000000000555 -> 0.6


def test_nan_and_infinities_follow_ieee() -> None:
    assert math.isnan(exact_sum([1.0, math.nan]))
    assert math.isnan(exact_sum([math.inf, -math.inf]))
    assert exact_sum([math.inf, 1.0]) == math.inf
    assert exact_sum([1.7976931348623157e308, 1.7976931348623157e308]) == math.inf   # beyond the range
    a, b = ExactSum.of([math.inf]), ExactSum.of([-math.inf])
    assert math.isnan((a + b).value()) and ExactSum.from_text((a + b).to_text()) == a + b


def test_large_arrays_in_chunks_exact() -> None:
    rng = np.random.default_rng(1)
    x = rng.random(3 * (1 << 19) + 17) * 10.0 ** rng.integers(-20, 20, 3 * (1 << 19) + 17)
    assert exact_sum(x) == math.fsum(x)
    assert ExactSum.of(x[:1000]) + ExactSum.of(x[1000:]) == ExactSum.of(x[::-1])


@pytest.mark.parametrize("kind", ["mean", "sum", "gm"])
def test_aggregates_merge_and_skip_nan(kind: str) -> None:
    x = np.array([0.25, np.nan, 0.0, 1.0, 1 / 3])
    whole = finish_aggregate(partial_aggregate(x, kind, 1e-5), kind)
    split = finish_aggregate(partial_aggregate(x[3:], kind, 1e-5) + partial_aggregate(x[:3], kind, 1e-5), kind)
    kept = [0.25, 0.0, 1.0, 1 / 3]
    want = {"mean": math.fsum(kept) / 4, "sum": math.fsum(kept),
            "gm": math.exp(math.fsum(math.log(max(v, 1e-5)) for v in kept) / 4)}[kind]
    assert whole == split == want
