"""The command line's arguments, fuzzed: whatever the options and values, tierank exits 0 or 2, prints no
traceback, and an error is one line; errors and warnings name the command line's options (``-M 5``), not
the Python parameters behind them (``max_docs=5``).

Regression tests of issue 27: item 12 (``-m 'P@9223372036854775808'`` and other values gave tracebacks)
and "errors on the command line speak its language".
"""

from __future__ import annotations

import re

import pytest
from click.testing import CliRunner
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from tierank.cli import main

# q1: d1 and d2 tie at rank 1-2 (d1 relevant); q2: one document; q3 judged but not in run a
QRELS = "q1 0 d1 1\nq1 0 d2 0\nq2 0 d1 1\nq3 0 d1 1\n"
RUN_A = "q1 Q0 d1 1 0.5 a\nq1 Q0 d2 2 0.5 a\nq1 Q0 d3 3 0.1 a\nq2 Q0 d3 1 0.2 a\n"
RUN_B = "q1 Q0 d1 1 0.3 b\nq1 Q0 d2 2 0.9 b\nq2 Q0 d1 1 0.2 b\nq3 Q0 d1 1 0.2 b\n"

# a Python parameter as Python spells it in a message (max_docs=5, ties='expected', missing='zero', ...)
PYTHON_SPELLING = re.compile(r"\b(max_docs|ties|missing|no_relevant|rel_level|seed|n_resamples|trec_eval_version"
                             r"|judged_only|bounds|alpha|correction|test|measures)=")


@pytest.fixture(scope="module")
def files(tmp_path_factory):
    path = tmp_path_factory.mktemp("cli_fuzz")
    (path / "qrels").write_text(QRELS)
    (path / "a.run").write_text(RUN_A)
    (path / "b.run").write_text(RUN_B)
    return path


def invoke(args):
    return CliRunner().invoke(main, [str(a) for a in args])


def check(res):
    """Exit 0 or 2, no traceback, and an error in one line naming no Python parameter."""
    assert res.exception is None or isinstance(res.exception, SystemExit), repr(res.exception)
    assert res.exit_code in (0, 2), (res.exit_code, res.output)
    assert "Traceback" not in res.output
    if res.exit_code == 2:
        errors = [line for line in res.stderr.splitlines() if "error:" in line.lower()]
        assert len(errors) == 1, res.stderr
    assert not PYTHON_SPELLING.search(res.stderr), res.stderr


# ---------------------------------------------------------------------------------- reported cases


@pytest.mark.parametrize("measure", ["P@9223372036854775808", f"P@{'9' * 5000}", "P(rel=" + "(" * 3000 + ")",
                                     "P.9223372036854775808", f"map-l{'1' * 5000}", "nDCG(gains={{}: 1})"])
def test_reported_measures_are_one_line_errors(files, measure):
    """Each gave a traceback before (OverflowError, ValueError, RecursionError, TypeError)."""
    res = invoke([files / "qrels", files / "a.run", "-m", measure])
    check(res)
    assert res.exit_code == 2 and res.stderr.startswith("tierank: error: measure")


# ------------------------------------------------------------ errors speak the command line's language


@pytest.mark.parametrize("args, expected", [
    # -M: a tie across the cut rank, under a tie mode with no tie-break
    (["-M", "1"], "-M 1 cuts a tie of documents with equal scores at rank 1, so the documents kept depend on the "
                  "tie-break; with --ties expected no tie-break is made. Use --ties trec_eval, --ties input or "
                  "--ties random (without --bounds)"),
    (["-M", "1", "--ties", "optimistic"], "with --ties optimistic no tie-break is made"),
    (["-M", "1", "--ties", "trec_eval", "--bounds"], "with --bounds no tie-break is made"),   # not --ties trec_eval
    # --no-relevant error: a query with no relevant document (q1 with -l 2)
    (["-l", "2", "--no-relevant", "error"], "--no-relevant error (use --no-relevant zero, --no-relevant skip or "
                                             "--no-relevant one to score such queries)"),
    # -l: a level the measures refuse
    (["-l", "nan"], "tierank: error: -l nan: measure 'P.5': rel must be a finite number, got nan"),
    (["-l", "-1"], "tierank: error: -l -1: measure 'P.5': rel must be >= 0"),
    # --seed and --resamples of the randomised tests
    (["b.run", "--compare", "--test", "permutation", "--resamples", str(10 ** 10)],
     "tierank: error: --resamples 10000000000: the number of resamples must be an integer from 1 to 1,000,000,000"),
])
def test_errors_name_the_options(files, args, expected):
    args = [files / a if a == "b.run" else a for a in args]
    res = invoke([files / "qrels", files / "a.run", "-m", "P.5", *args])
    check(res)
    assert res.exit_code == 2 and expected in res.stderr, res.stderr


@pytest.mark.parametrize("args, expected", [
    ([], "1 judged query is missing from the run and left out (-c scores them 0, like trec_eval -c)"),
    (["b.run", "--compare"], "left out of the comparison (-c scores missing queries 0)"),
])
def test_warnings_name_the_options(files, args, expected):
    args = [files / a if a == "b.run" else a for a in args]
    res = invoke([files / "qrels", files / "a.run", "-m", "P.5", *args])
    check(res)
    assert res.exit_code == 0 and expected in res.stderr, res.stderr


@pytest.mark.parametrize("args", [["-m", "P@9223372036854775808"], ["-m", "P@5", "-l", "nan"],
                                  ["-m", "P@5", "--seed", "-1", "--test", "permutation"],
                                  ["-m", "P@5", "--resamples", str(10 ** 12), "--test", "bootstrap"]])
def test_report_arguments_exit_0_or_2_with_one_line(files, args):
    """The report command shares the measures and tests: the same one-line errors (tracebacks before)."""
    res = invoke(["report", files / "qrels", files / "a.run", files / "b.run", "--no-plots", "-o", "-", *args])
    check(res)
    if "--resamples" in args:   # the report says why its significance section has no tests
        assert res.exit_code == 0 and "no significance tests: --resamples 1000000000000: the number" in res.stdout
    else:
        assert res.exit_code == (0 if "--seed" in args else 2)


def test_a_negative_seed_seeds_the_randomised_tests(files):
    """--seed -1 with --compare --test permutation gave numpy's ValueError traceback; now any integer seeds
    the tests, and equal seeds give equal p-values (the four sign patterns of two queries are exact anyway)."""
    out = []
    for seed in ("-1", "-1", "1"):
        res = invoke([files / "qrels", files / "a.run", files / "b.run", "-m", "P@5", "--compare", "--test",
                      "bootstrap", "--seed", seed, "-f", "csv"])
        check(res)
        assert res.exit_code == 0
        out.append(res.stdout)
    assert out[0] == out[1]


def test_measures_command_suggests_like_the_parser(files):
    """`tierank measures nDGC` said only "unknown"; now it suggests what -m nDGC@10 suggests."""
    res = invoke(["measures", "nDGC"])
    check(res)
    assert res.exit_code == 2 and "did you mean 'ndcg'?" in res.stderr
    res = invoke([files / "qrels", files / "a.run", "-m", "nDGC@10"])
    assert res.exit_code == 2 and "did you mean 'ndcg'?" in res.stderr
    res = invoke(["measures", "ndcg_cut"])   # a trec_eval name is found too
    assert res.exit_code == 0 and res.stdout.startswith("nDCG: ")


# ---------------------------------------------------------------------------------------- the fuzz

_NUMBERS = st.one_of(st.integers(), st.integers(min_value=2 ** 62, max_value=2 ** 80),
                     st.floats().map(repr), st.sampled_from(["nan", "inf", "-inf", "1e400", "-0.0", "0", "1"]),
                     st.sampled_from([19, 400, 5000]).map(lambda n: "9" * n))
_WORDS = st.text(alphabet="abcP@.,()=' -_0123456789", max_size=12)
_MEASURES = st.one_of(st.sampled_from(["P@5", "AP", "nDCG@10", "P.5,10", "official", "map", "RR", "G", "runid",
                                       "relstring.3", "num_q", "iprec_at_recall.0.5", "utility.1,-1,0,0"]),
                      _NUMBERS.map(lambda n: f"P@{n}"), _NUMBERS.map(lambda n: f"ndcg_cut.{n}"),
                      _NUMBERS.map(lambda n: f"P(rel={n})@3"), _WORDS)
_RESAMPLES = st.one_of(st.integers(min_value=-5, max_value=200), st.integers(min_value=10 ** 9 + 1),
                       st.sampled_from(["x", "1.5", "nan"]))
_OPTIONS = {   # option -> strategy of its value (None: a flag)
    "-m": _MEASURES, "-l": _NUMBERS, "-c": None, "--missing": st.sampled_from(["skip", "zero", "x"]),
    "--no-relevant": st.sampled_from(["zero", "skip", "one", "error", "x"]),
    "--trec-eval-version": st.sampled_from(["9", "10", "8"]), "-J": None, "-M": _NUMBERS, "-q": None,
    "--ties": st.sampled_from(["expected", "optimistic", "pessimistic", "input", "trec_eval", "random", "x"]),
    "--bounds": None, "--seed": _NUMBERS, "-f": st.sampled_from(["table", "trec", "json", "csv", "markdown", "latex",
                                                                  "x"]),
    "--digits": _NUMBERS, "--compare": None, "--test": st.sampled_from(["t", "permutation", "bootstrap", "x"]),
    "--alpha": _NUMBERS, "--correction": st.sampled_from(["holm", "bonferroni", "none", "x"]),
    "--resamples": _RESAMPLES, "--run-format": st.sampled_from(["trec", "msmarco", "x"]),
    "--qrels-format": st.sampled_from(["trec", "msmarco", "beir", "x"]),
}
_TIES_OPTIONS = ("-m", "-l", "-c", "--missing", "--no-relevant", "--trec-eval-version", "-f", "--digits",
                 "--run-format", "--qrels-format")


@st.composite
def _arguments(draw, options):
    args = []
    for option in draw(st.lists(st.sampled_from(options), max_size=6)):
        args.append(option)
        if _OPTIONS[option] is not None:
            args.append(str(draw(_OPTIONS[option])))
    return args


FUZZ = settings(max_examples=40, deadline=None, derandomize=True, database=None,
                suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture])


@FUZZ
@given(args=_arguments(sorted(_OPTIONS)), two_runs=st.booleans())
def test_eval_arguments_exit_0_or_2_with_one_line(files, args, two_runs):
    runs = [files / "a.run", files / "b.run"] if two_runs else [files / "a.run"]
    check(invoke([files / "qrels", *runs, *args]))


@FUZZ
@given(args=_arguments(_TIES_OPTIONS))
def test_ties_arguments_exit_0_or_2_with_one_line(files, args):
    if "-f" in args:   # ties has no trec format
        args = [a if a != "trec" else "csv" for a in args]
    check(invoke(["ties", files / "qrels", files / "a.run", *args]))


@settings(max_examples=40, deadline=None, derandomize=True, database=None)
@given(name=st.one_of(_WORDS, _MEASURES))
def test_measures_names_exit_0_or_2_with_one_line(name):
    check(invoke(["measures", name]))
