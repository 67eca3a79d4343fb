"""The measure-string parser never crashes: every string gives a Measure or an InputError.

Regression tests of issue 27 item 12 (cutoffs >= 2**63, numbers of thousands of digits, deep nesting gave
OverflowError, ValueError and RecursionError tracebacks) and a hypothesis fuzz over the grammar's alphabet.
"""

import warnings

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import tierank
from tierank.errors import InputError
from tierank.measures import REGISTRY, Measure, expand, parse_measure
from tierank.measures._spec import MAX_CUTOFF
from click.testing import CliRunner
from tierank.cli import main

QRELS = {"q1": {"d1": 1, "d3": 1}}
RUN = {"q1": {"d1": 0.5, "d2": 0.5, "d3": 0.1}}

HUGE = "9" * 5000


def _parse_or_input_error(text):
    """parse_measure(text) and expand(text): a Measure, or an InputError; anything else fails the test."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", tierank.TierankWarning)   # trec_eval's '23.4' read as 23: said, not wrong
        _parse_or_input_error_warned(text)


def _parse_or_input_error_warned(text):
    try:
        m = parse_measure(text)
        assert isinstance(m, Measure)
        if m.cutoff is not None:   # a cutoff that parses evaluates (extreme parameter values: test_extremes)
            tierank.evaluate(QRELS, RUN, [f"P@{m.cutoff}"])
    except InputError as err:
        assert "\n" not in str(err)
    try:
        out = expand(text)
        assert all(isinstance(m, Measure) for m in out.values())
    except InputError as err:
        assert "\n" not in str(err)


@pytest.mark.parametrize("text", [
    "P@9223372036854775808", f"P@{2 ** 64}", f"P@{HUGE}", f"P.{HUGE}", f"P.{2 ** 63}", f"P_{2 ** 63}",
    f"ndcg_cut.5,{2 ** 70}", f"map@{HUGE}", f"map-l{HUGE}", f"map@10-l{HUGE}", f"P(rel={HUGE})@5",
    f"P(rel={HUGE}.5)@5", f"Utility(a={HUGE})", f"Utility(a=1{'0' * 400})", f"utility.{HUGE},1,0,0",
    f"iprec_at_recall.{HUGE}", "P(rel=" + "(" * 3000 + ")" * 3000 + ")@5", "P(rel=" + "[" * 3000 + ")",
    "nDCG(gains=" + "{" * 3000 + ")", "nDCG(gains={{}: 1})", "nDCG(gains={(): 1})", "nDCG(gains={({},): 1})",
    f"P(radius=1{'0' * 399})", f"P(radius=1{'0' * 320})", f"RBP(p=1{'0' * 320})", f"nDCG(gains={{1: 1{'0' * 320}}})",
])
def test_reported_crashes_are_input_errors(text):
    """Each failed before with OverflowError, ValueError or RecursionError (or evaluated to a traceback)."""
    with pytest.raises(InputError):
        m = parse_measure(text)
        tierank.evaluate(QRELS, RUN, [m])   # a cutoff that parses must also evaluate


def test_cutoff_bound_is_inclusive_and_named():
    """The largest cutoff evaluates (it is beyond every ranking, so P@k = relevant retrieved / k); one more
    is an error that names the measure and the limit."""
    res = tierank.evaluate(QRELS, RUN, [f"P@{MAX_CUTOFF}"])
    assert res.mean[f"P@{MAX_CUTOFF}"] == pytest.approx(2 / MAX_CUTOFF)
    for text in (f"P@{MAX_CUTOFF + 1}", f"P.{MAX_CUTOFF + 1}", f"P_{MAX_CUTOFF + 1}"):
        with pytest.raises(InputError, match=rf"{text}.*at most {MAX_CUTOFF}"):
            parse_measure(text)


@pytest.mark.parametrize("depth", [2, 5, 20])
def test_nesting_within_the_limit_reaches_the_parameter_check(depth):
    """Nested tuples parse (the parameter's own check then refuses them); only deeper nesting is refused
    by the parser."""
    with pytest.raises(InputError, match="a recall level must be a number"):
        parse_measure("IPrecAvg(levels=" + "(" * depth + "0.5" + ",)" * depth + ")")
    with pytest.raises(InputError, match="nested more than"):
        parse_measure("IPrecAvg(levels=" + "(" * 200 + "0.5" + ",)" * 200 + ")")


_EXTREME_VALUES = ["1" + "0" * 307, "-1" + "0" * 307, "1" + "0" * 308, "1" + "0" * 30, "1e308", "-1e308", "1e-308",
                   "1e400", "nan", "0", "-1", "0.5", "True", "None", "'x'", "(1e308,)", "{1: 1" + "0" * 307 + "}",
                   "{1" + "0" * 30 + ": 1}", "{-1: 1e308}"]


@pytest.mark.parametrize("family", sorted(REGISTRY))
def test_every_parameter_of_every_measure_takes_extreme_values_or_says_no(family):
    """Every declared parameter (and radius=, and judged_only=) of every registered measure, given numbers at
    and beyond the ends of the floats: a Measure or an InputError, never another exception (radius=, RBP's
    p= and nDCG's gains= raised OverflowError or TypeError on integers beyond the floats before)."""
    cutoff = "@5" if REGISTRY[family].cutoff == "required" else ""
    for param in [*REGISTRY[family].params, "radius", "judged_only"]:
        for value in _EXTREME_VALUES:
            _parse_or_input_error(f"{family}({param}={value}){cutoff}")


_ALPHABET = "PRnDCGAPUtiliyavgsmbr_cut0123456789.,@()[]{}=:'\" _-+eElTrueFalsNone"


@settings(max_examples=400, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.text(alphabet=_ALPHABET, max_size=40))
def test_random_strings_parse_or_raise_input_error(text):
    _parse_or_input_error(text)


_NAMES = st.sampled_from(sorted({*REGISTRY, "P", "ndcg_cut", "map", "utility", "iprec_at_recall", "set_F",
                                 "Rprec_mult", "success", "map@10-l", "P.5,", "rbp"}))
_NUMBERS = st.one_of(st.integers(), st.integers(min_value=2 ** 60, max_value=2 ** 70),
                     st.floats(allow_nan=True, allow_infinity=True).map(repr),
                     st.sampled_from([1, 18, 19, 20, 309, 400, 4301, 6000]).map(lambda n: "7" * n),
                     st.sampled_from([3, 400, 6000]).map(lambda n: "1e" + "9" * n))
_PARAMS = st.sampled_from(["rel", "a", "b", "levels", "gains", "p", "beta", "clip", "x", "max_grade", "radius"])


@st.composite
def _grammar_strings(draw):
    name = draw(_NAMES)
    text = name
    if draw(st.booleans()):
        items = draw(st.lists(st.tuples(_PARAMS, _NUMBERS), max_size=3))
        text += "(" + ", ".join(f"{k}={v}" for k, v in items) + ")"
    sep = draw(st.sampled_from(["@", ".", "_", "-l", ""]))
    if sep:
        text += sep + ",".join(str(draw(_NUMBERS)) for _ in range(draw(st.integers(1, 3))))
    return text


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(_grammar_strings())
def test_grammar_strings_with_numbers_of_any_size(text):
    _parse_or_input_error(text)


@settings(max_examples=200, deadline=None)
@given(digits=st.text("0123456789", min_size=1, max_size=6), point=st.integers(0, 6),
       exponent=st.integers(-700, 400), sign=st.sampled_from(["", "-", "+"]))
def test_a_nonzero_literal_never_reads_as_zero(digits, point, exponent, sign):
    """A number written with a non-zero digit is never read as 0 (float64 underflow: AP(rel=1e-400) was
    AP(rel=0), which counts grade 0 as relevant): its value, or a ValueError saying it is below float64."""
    from tierank.measures._parse import number_value

    mantissa = digits[:point] + "." + digits[point:] if point < len(digits) else digits
    literal = f"{sign}{mantissa}e{exponent}"
    try:
        value = number_value(literal)
    except ValueError as err:
        assert "below the smallest float64" in str(err) and any(c in "123456789" for c in digits)
        return
    assert (value != 0) == any(c in "123456789" for c in digits), (literal, value)


def test_underflowing_parameters_are_refused_in_python_and_on_the_command_line(tmp_path):
    with pytest.raises(InputError, match=r"1e-400 is below the smallest float64"):
        tierank.evaluate({"q": {"a": 1, "b": 0}}, {"q": {"a": 1.0, "b": 0.5}}, ["AP(rel=1e-400)"])
    (tmp_path / "q").write_text("q1 0 d1 1\nq1 0 d2 0\n")
    (tmp_path / "r").write_text("q1 Q0 d1 1 2 r\nq1 Q0 d2 2 1 r\n")
    res = CliRunner().invoke(main, [str(tmp_path / "q"), str(tmp_path / "r"), "-m", "P@2", "-l", "1e-400"])
    assert res.exit_code == 2 and "1e-400 is below the smallest float64" in res.output, res.output
    assert "P@2" not in res.stdout


def test_a_key_given_twice_is_an_error():
    """Regression (hostile probe): nDCG(gains={1:2,1:3}) silently kept the last gain of grade 1."""
    for text in ("nDCG(gains={1:2,1:3})", "nDCG(gains={1:2,1.0:3})"):
        with pytest.raises(InputError, match=r"the key 1(\.0)? is given twice"):
            parse_measure(text)
    assert parse_measure("nDCG(gains={1:2,2:3})") == parse_measure("nDCG(gains={2:3,1:2})")
