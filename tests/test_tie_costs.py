"""The guard on tie-aware work beyond linear in a tie's size (src/tierank/engine/core.py ``check_tie_costs``,
the families' ``cost``): refused up front, with no large allocation, naming the measure, the query, the
tie and the option; estimates exact at any size (never wrapped around as int64); the budget's default and
the option that raises it, in Python and on the command line."""

from __future__ import annotations

import math
import os
import sys
import tracemalloc
import warnings

import numpy as np
import pytest
from hypothesis import example, given, settings
from hypothesis import strategies as st

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import oracle  # noqa: E402

import tierank  # noqa: E402
import tierank.engine.core as evaluation  # noqa: E402
import tierank.engine.options as options  # noqa: E402
from tierank import InputError, parse_measure  # noqa: E402
from tierank.measures._common import exact_products  # noqa: E402
from tierank.ties.groups import TieStats  # noqa: E402


def _one_tie(n: int, r: int, grade: float = 1.0) -> tuple[np.ndarray, np.ndarray]:
    """One row: n items tied, the first r of grade ``grade``, the others 0."""
    relevance = np.zeros((1, n))
    relevance[0, :r] = grade
    return relevance, np.zeros((1, n))


def _peak_mb(fn) -> float:
    """Peak memory traced while ``fn`` runs (numpy's allocations are traced), in MB."""
    tracemalloc.start()
    try:
        fn()
        return tracemalloc.get_traced_memory()[1] / 1e6
    finally:
        tracemalloc.stop()


def _refusal(fn) -> str:
    with pytest.raises(InputError) as err:
        fn()
    text = str(err.value)
    assert "\n" not in text, text   # one line
    return text


# ------------------------------------------------------------------ refused up front, no big allocation

def test_iprec_huge_tie_refused_up_front_without_allocating():
    """A tie of 300,000 documents, 150,000 relevant: IPrec's exact expectation would take about
    76k... x 150,001 x 150,000 x 150,001 operations (beyond int64: the old estimate wrapped around and
    passed, then the evaluation allocated 56 GiB). Now an InputError before the work, within 200 MB."""
    relevance, scores = _one_tie(300_000, 150_000)
    n, r, c = 300_000, 150_000, 75_000          # level 0.5 of R = 150,000: c = 75,000, k0 = c
    exact = (r - c + 1) * (n - r + 1) * r * (n - r + 1)
    assert exact > 2 ** 63                       # an int64 product wraps around
    texts = []
    peak = _peak_mb(lambda: texts.append(_refusal(
        lambda: tierank.evaluate_matrix(relevance, scores, ["IPrec(recall=0.5)"]))))
    assert peak < 200, peak
    text = texts[0]
    assert text.startswith("IPrec(recall=0.5): the exact expectation"), text
    assert f"about {float(exact):.3g} operations" in text, text
    assert f"beyond the budget of {options.DEFAULT_TIE_COST_BUDGET:.3g}" in text, text
    assert "ranks 1-300000, 300000 documents" in text and "(row 0)" in text, text
    assert "tie_cost_budget=2.54e+20" in text and exact <= 2.54e20 and "--tie-cost-budget" not in text, text


def test_err_huge_tie_refused_up_front():
    """ERR's exact expectation is quadratic in a tie of documents of positive grade (100,000 of them:
    about a minute); it had no guard. Refused before the work, with 2 (p + s)(min(p, s) + 1) operations."""
    n = 100_000
    relevance, scores = _one_tie(n, n, grade=2.0)
    texts = []
    peak = _peak_mb(lambda: texts.append(_refusal(lambda: tierank.evaluate_matrix(relevance, scores, ["ERR"]))))
    assert peak < 100, peak
    exact = 2 * (n + n) * (n + 1)
    assert texts[0].startswith(f"ERR: the exact expectation over all orderings of tied documents needs about "
                               f"{float(exact):.3g} operations in this query"), texts[0]


def test_err_optimistic_order_of_equal_grades_is_guarded_too():
    """The optimistic order leaves documents of equal grade tied, and ERR's kernel is quadratic there as
    well: the extreme orders the kernel runs on are checked, not only the expected one."""
    relevance, scores = _one_tie(100_000, 100_000)
    for kw in ({"ties": "optimistic"}, {"ties": "trec_eval", "bounds": True}):
        text = _refusal(lambda: tierank.evaluate_matrix(relevance, scores, ["ERR@200000"], **kw))
        assert "ERR@200000: the exact expectation" in text, text
        assert ("or evaluate without bounds" in text) == ("bounds" in kw), text
    # a fixed order has no tie: nothing to refuse
    assert tierank.evaluate_matrix(relevance, scores, ["ERR"], ties="trec_eval").per_query.shape == (1, 1)


def test_bounds_of_infap_are_checked_as_bounds():
    """infAP's bounds run a dynamic programme in Python over (r + 1)(q + 1)(u + 1)(x + 1) states
    (PYTHON_STATE operations each), far costlier than its expectation's profiles."""
    from tierank.measures._common import PYTHON_STATE

    qrels = {"q": {"a": 1, "b": 0, "c": -2, "d": 1}}
    run = {"q": {"a": 1.0, "b": 1.0, "c": 1.0, "d": 1.0, "e": 1.0}}   # r=2, q=1, u=1, x=1
    states = 3 * 2 * 2 * 2
    profiles = (2 + 1) * (2 + 1) + 2 * (1 + 1)
    budget = PYTHON_STATE * states - 1
    assert tierank.evaluate(qrels, run, ["infAP"], tie_cost_budget=budget).per_query.shape == (1, 1)
    text = _refusal(lambda: tierank.evaluate(qrels, run, ["infAP"], bounds=True, tie_cost_budget=budget))
    assert text.startswith(f"infAP: the exact bounds over all orderings of tied documents needs about "
                           f"{PYTHON_STATE * states:.3g} operations"), text
    assert "(query 'q')" in text and "or evaluate without bounds" in text, text
    assert tierank.evaluate(qrels, run, ["infAP"], bounds=True, tie_cost_budget=budget + 1).lower.shape == (1, 1)
    _refusal(lambda: tierank.evaluate(qrels, run, ["infAP"], tie_cost_budget=profiles - 1))


def test_g_beyond_float_range_says_so():
    """G's terms multiply (count + 1) over a tie's distinct gains: 1,500 distinct gains give 2**1500, beyond
    float64 (inf): the message says "more than 1e+308", not "about inf"."""
    n = 1500
    relevance = np.array([np.arange(1, n + 1) / n * 3])
    text = _refusal(lambda: tierank.evaluate_matrix(relevance, np.zeros((1, n)), ["G"]))
    assert text.startswith("G: the exact expectation over all orderings of tied documents needs more than "
                           "1e+308 operations in this query"), text


# ------------------------------------------------------------------ estimates: exact, never wrapped

@settings(max_examples=300, deadline=None, derandomize=True, database=None)
@given(st.lists(st.lists(st.integers(0, 2 ** 40), min_size=3, max_size=3), min_size=1, max_size=5))
def test_exact_products_are_the_python_integer_products(factors):
    """Products of up to five factors below 2**40 (up to 2**200): float(the exact Python product),
    never negative, whether they fit int64 or not."""
    arrays = [np.array(f, dtype=np.int64) for f in factors]
    got = exact_products(*arrays)
    want = [float(math.prod(col)) for col in zip(*factors)]
    assert got.tolist() == want
    assert (got >= 0).all()


@settings(max_examples=40, deadline=None, derandomize=True, database=None)
@given(st.integers(6, 400_000), st.floats(0.0, 1.0), st.sampled_from([0.0, 0.1, 0.5, 0.9, 1.0]))
@example(400_000, 0.5, 0.0)      # 2e5 ** 4 = 1.6e21: an int64 product wraps around
@example(300_000, 0.5, 0.5)      # the case of the issue: a tie of 300,000 documents
@example(6, 0.0, 1.0)
def test_iprec_estimate_is_the_exact_formula_at_any_size(n, share, x):
    """IPrec's estimate for one tie of n documents, r relevant (r >= 5: the dynamic programme), at the
    top of the list with no other relevant document: float of the Python-integer formula
    (r - k0 + 1)(n - r + 1) r (n - r + 1), k0 = max(c, 1), c = lround(x r); from 1e3 to 1e21."""
    r = 5 + int(share * (n - 6))
    counts = np.zeros((1, 1, 2), dtype=np.int64)
    counts[0, 0] = (n - r, r)                              # grades 0 and 1, all in one bin: one tie
    g = TieStats.from_histogram(counts, np.array([0.0, 1.0]))
    m = parse_measure(f"IPrec(recall={x})")
    ties, operations = m.family.cost(g, m, False)
    k0 = max(math.floor(x * r + 0.5), 1)
    exact = (r - k0 + 1) * (n - r + 1) * r * (n - r + 1)
    assert ties.tolist() == [0]
    assert operations.tolist() == [float(exact)]


# ------------------------------------------------------------------ the budget and the option

def test_the_budget_is_exact_at_its_edge_and_values_match_the_oracle():
    """ERR on a tie of 7 documents of grades 0..3 after one document: a budget of exactly the estimate
    passes (and the value is the mean over every ordering), one less is refused."""
    grades = [2.0, 0.0, 1.0, 3.0, 0.0, 2.0, 1.0, 3.0]
    keys = [9.0] + [1.0] * 7
    p, s = 5, 7                                           # positive grades in the tie, positions in it
    estimate = 2 * (p + s) * (min(p, s) + 1)
    rel, key = np.array([grades]), np.array([keys])
    got = tierank.evaluate_matrix(rel, key, ["ERR"], tie_cost_budget=estimate).per_query["ERR"].iloc[0]
    assert got == pytest.approx(oracle.tie_aware("ERR", grades, keys)[0], rel=1e-12, abs=1e-15)
    text = _refusal(lambda: tierank.evaluate_matrix(rel, key, ["ERR"], tie_cost_budget=estimate - 1))
    assert f"needs about {estimate} operations in this query, beyond the budget of {estimate - 1}" in text, text
    assert "ranks 2-8, 7 documents" in text, text


def test_default_budget_and_the_option_raising_it(monkeypatch):
    """None takes DEFAULT_TIE_COST_BUDGET (read when the evaluation starts); the option raises it, in
    evaluate, evaluate_matrix, evaluate_codes and a streamed run file."""
    monkeypatch.setattr(options, "DEFAULT_TIE_COST_BUDGET", 1000)
    relevance, scores = _one_tie(40, 20)                  # ERR: 2 (20 + 40)(21) = 2520 operations
    text = _refusal(lambda: tierank.evaluate_matrix(relevance, scores, ["ERR"]))
    assert "needs about 2.52e+03 operations in this query, beyond the budget of 1e+03" in text, text
    assert tierank.evaluate_matrix(relevance, scores, ["ERR"], tie_cost_budget=2520).per_query.shape == (1, 1)
    qrels = {"q": {f"d{i}": 1 for i in range(20)}}
    run = {"q": {f"d{i}": 0.5 for i in range(40)}}
    _refusal(lambda: tierank.evaluate(qrels, run, ["ERR"]))
    assert tierank.evaluate(qrels, run, ["ERR"], tie_cost_budget=1e4).per_query.shape == (1, 1)
    codes = np.zeros((40, 8), dtype=np.uint8)              # every database item at distance 0: one tie
    labels = np.array([1] * 20 + [2] * 20)
    _refusal(lambda: tierank.evaluate_codes(codes[:1], codes, [1], labels, ["ERR"]))
    assert tierank.evaluate_codes(codes[:1], codes, [1], labels, ["ERR"], tie_cost_budget=2520).mean


def test_streamed_run_file_takes_the_option(tmp_path):
    path = tmp_path / "run.txt"
    path.write_text("".join(f"q Q0 d{i} {i + 1} 0.5 t\n" for i in range(40)))
    qrels = {"q": {f"d{i}": 1 for i in range(20)}}
    text = _refusal(lambda: tierank.evaluate(qrels, str(path), ["ERR"], tie_cost_budget=2519, block_rows=7))
    assert "(query 'q')" in text, text
    assert tierank.evaluate(qrels, str(path), ["ERR"], tie_cost_budget=2520, block_rows=7).per_query.shape == (1, 1)


@pytest.mark.parametrize("bad", [0, -5, 0.5, "1e9", True, float("inf"), float("nan")])
def test_a_bad_budget_is_a_clear_error(bad):
    text = _refusal(lambda: tierank.evaluate({"q": {"a": 1}}, {"q": {"a": 1.0}}, ["ERR"], tie_cost_budget=bad))
    assert text.startswith(f"tie_cost_budget={bad!r}: the budget must be"), text


def test_the_command_line_flag(tmp_path):
    from click.testing import CliRunner

    from tierank.cli import main

    qrels, run = tmp_path / "qrels.txt", tmp_path / "run.txt"
    qrels.write_text("".join(f"q 0 d{i} 1\n" for i in range(20)))
    run.write_text("".join(f"q Q0 d{i} {i + 1} 0.5 t\n" for i in range(40)))
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        refused = CliRunner().invoke(main, ["eval", str(qrels), str(run), "-m", "ERR", "--tie-cost-budget", "2519"])
        passed = CliRunner().invoke(main, ["eval", str(qrels), str(run), "-m", "ERR", "--tie-cost-budget", "2.52e3"])
        bad = CliRunner().invoke(main, ["eval", str(qrels), str(run), "-m", "ERR", "--tie-cost-budget", "0.5"])
        # the tie report (expected values and bounds) takes it too
        report_refused = CliRunner().invoke(main, ["ties", str(qrels), str(run), "-m", "ERR", "--tie-cost-budget", "99"])
        report = CliRunner().invoke(main, ["ties", str(qrels), str(run), "-m", "ERR", "--tie-cost-budget", "2520"])
    assert refused.exit_code != 0 and "beyond the budget of 2.52e+03" in refused.output, refused.output
    assert "raise it (--tie-cost-budget 2520: time and memory grow with it)" in refused.output and "tie_cost_budget" not in refused.output, \
        refused.output
    assert "Traceback" not in refused.output, refused.output
    assert passed.exit_code == 0 and "ERR" in passed.output, passed.output
    assert bad.exit_code != 0 and "--tie-cost-budget 0.5: the budget must be a positive whole number" in bad.output, bad.output
    assert report_refused.exit_code != 0 and "beyond the budget of 99" in report_refused.output, report_refused.output
    assert report.exit_code == 0 and "ERR" in report.output, report.output


def test_dask_takes_the_option_and_refuses_as_locally():
    pd = pytest.importorskip("pandas")
    dd = pytest.importorskip("dask.dataframe")
    import tierank.dask

    qrels = pd.DataFrame({"query_id": ["q"] * 20, "doc_id": [f"d{i}" for i in range(20)], "relevance": 1})
    run = pd.DataFrame({"query_id": ["q"] * 40, "doc_id": [f"d{i}" for i in range(40)], "score": 0.5})
    local = _refusal(lambda: tierank.evaluate(qrels, run, ["ERR"], tie_cost_budget=2519))
    engine = _refusal(lambda: tierank.dask.evaluate(dd.from_pandas(qrels, npartitions=2),
                                                    dd.from_pandas(run, npartitions=3), ["ERR"], tie_cost_budget=2519))
    assert engine == local and "(query 'q')" in local, (engine, local)
    res = tierank.dask.evaluate(dd.from_pandas(qrels, npartitions=2), dd.from_pandas(run, npartitions=3), ["ERR"],
                                tie_cost_budget=2520)
    assert res.mean == tierank.evaluate(qrels, run, ["ERR"]).mean


@pytest.mark.parametrize("ties", ["lower", "upper"])
def test_bound_modes_are_checked_on_the_extremes_they_compute(ties):
    """ties='lower' / 'upper' compute the extremes (no tie mode's own ordering): their cost is checked on
    those, and refused with a fixed mode as the remedy (a ValueError, 'not one ordering', before). The
    budget that lets them through gives exactly bounds=True's lower / upper value."""
    relevance, scores = _one_tie(40, 20, grade=2.0)
    text = _refusal(lambda: tierank.evaluate_matrix(relevance, scores, ["ERR"], ties=ties, tie_cost_budget=10))
    assert text.startswith("ERR: the exact") and "ties='trec_eval'" in text and "bounds=False" not in text, text
    value = tierank.evaluate_matrix(relevance, scores, ["ERR"], ties=ties).per_query["ERR"].iloc[0]
    both = tierank.evaluate_matrix(relevance, scores, ["ERR"], bounds=True)
    assert value == (both.lower if ties == "lower" else both.upper)["ERR"].iloc[0]


def test_running_out_of_memory_is_one_line(tmp_path, monkeypatch):
    """Regression (hostile probe): past a raised budget, a tie too costly for the memory ended in numpy's
    _ArrayMemoryError traceback; the command line says it in one line (exit 2). The allocation failure is
    simulated: the kernel raises MemoryError."""
    from click.testing import CliRunner

    from tierank.cli import main

    def no_memory(*args, **kwargs):
        raise MemoryError("simulated")

    monkeypatch.setattr(evaluation, "evaluate_stats", no_memory)
    qrels, run = tmp_path / "qrels.txt", tmp_path / "run.txt"
    qrels.write_text("q 0 d1 1\n")
    run.write_text("q Q0 d1 1 0.5 t\nq Q0 d2 2 0.5 t\n")
    res = CliRunner().invoke(main, [str(qrels), str(run), "-m", "ERR"])
    assert res.exit_code == 2 and "Traceback" not in res.output, res.output
    assert res.output.strip().endswith("tierank: error: out of memory (a tie too costly for the memory here, "
                                       "after --tie-cost-budget was raised?)"), res.output
