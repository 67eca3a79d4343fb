"""One meaning per tie mode (issue 27, item 8): "optimistic" / "pessimistic" are fixed arrangements (the
measure's preferred items first / last inside every tie), "lower" / "upper" the exact minimum / maximum
over all orderings, the same numbers as ``bounds=True``'s lower / upper.

Here: the core's entry points (evaluate on tables and on files, evaluate_matrix, evaluate_codes), the
brute-force oracle (tests/oracle.py) for the modes, the issue's example, and the CLI. The adapters are
checked against the core in their own modules (test_dense_kernel, test_torch, test_keras*,
test_spark, test_dask, test_ir_measures_provider).
"""

from __future__ import annotations

import json
import math
import os
import sys

import numpy as np
import pandas as pd
import pytest
from click.testing import CliRunner
from hypothesis import given, settings
from hypothesis import strategies as st

import tierank
from tierank.cli import main
from tierank.errors import InputError

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import oracle  # noqa: E402

BOUND_MODES = ("lower", "upper")
MODES = ("expected", "optimistic", "pessimistic", "lower", "upper")
# measures whose extremes are and are not the preference's arrangements (AP over the retrieved relevant
# items, WAP), one per kernel family, and RelString (a string: no extreme)
MEASURES = ["AP(denom='retrieved')@3", "WAP@4", "AP", "nDCG@5", "RR", "P@3", "ERR@5", "Bpref", "RBP",
            "Success@2", "RelString"]
NUMERIC = [m for m in MEASURES if m != "RelString"]


def tied_matrix(seed: int, rows: int = 30, cols: int = 8):
    rng = np.random.default_rng(seed)
    return rng.integers(0, 3, (rows, cols)).astype(float), rng.integers(0, 3, (rows, cols)).astype(float)


def as_tables(grades: np.ndarray, scores: np.ndarray) -> tuple[pd.DataFrame, pd.DataFrame]:
    q, d = np.nonzero(np.ones_like(grades, dtype=bool))
    qid, did = [f"q{i}" for i in q], [f"d{i}" for i in d]
    qrels = pd.DataFrame({"query_id": qid, "doc_id": did, "relevance": grades[q, d].astype(int)})
    run = pd.DataFrame({"query_id": qid, "doc_id": did, "score": scores[q, d]})
    return qrels, run


def assert_modes_are_bounds(call) -> None:
    """``call(ties, bounds)`` -> Results: per_query under "lower" / "upper" is bounds=True's lower / upper
    bit for bit, and the bounds do not depend on the mode."""
    ref = call("expected", True)
    for mode in BOUND_MODES:
        res = call(mode, True)
        bound = getattr(ref, mode)
        pd.testing.assert_frame_equal(res.per_query[NUMERIC], bound[NUMERIC])
        pd.testing.assert_frame_equal(call(mode, False).per_query[NUMERIC], bound[NUMERIC])
        pd.testing.assert_frame_equal(res.lower[NUMERIC], ref.lower[NUMERIC])
        pd.testing.assert_frame_equal(res.upper[NUMERIC], ref.upper[NUMERIC])
        assert res.mean[NUMERIC[0]] == getattr(ref, f"mean_{mode}")[NUMERIC[0]]
        assert res.ties == mode
    opt, pes = call("optimistic", False), call("pessimistic", False)
    ap = "AP(denom='retrieved')@3"   # the data has rows where the arrangement is not the extreme
    assert (opt.per_query[ap] < ref.upper[ap]).any() and (pes.per_query[ap] > ref.lower[ap]).any()


def test_matrix_bound_modes_are_the_bounds():
    grades, scores = tied_matrix(1)
    assert_modes_are_bounds(lambda ties, bounds: tierank.evaluate_matrix(grades, scores, MEASURES, ties=ties,
                                                                          bounds=bounds))


def test_evaluate_bound_modes_are_the_bounds(tmp_path):
    grades, scores = tied_matrix(2)
    qrels, run = as_tables(grades, scores)
    assert_modes_are_bounds(lambda ties, bounds: tierank.evaluate(qrels, run, MEASURES, ties=ties, bounds=bounds))
    # a run file, streamed in blocks of whole queries (tierank.engine.streamed): the same numbers
    path = tmp_path / "run.txt"
    path.write_text("".join(f"{q} Q0 {d} 0 {s!r} x\n" for q, d, s in run.itertuples(index=False)))
    for mode in MODES:
        want = tierank.evaluate(qrels, run, NUMERIC, ties=mode).per_query
        got = tierank.evaluate(qrels, str(path), NUMERIC, ties=mode, block_rows=50).per_query
        pd.testing.assert_frame_equal(got, want)


def test_codes_bound_modes_are_the_bounds():
    rng = np.random.default_rng(3)
    queries, database = rng.integers(0, 2, (12, 6)), rng.integers(0, 2, (40, 6))
    q_labels, db_labels = rng.integers(0, 3, 12), rng.integers(0, 3, 40)
    measures = ["AP(denom='retrieved')@5", "nDCG@5", "P@5", "RR"]
    ref = tierank.evaluate_codes(queries, database, q_labels, db_labels, measures, bounds=True)
    for mode in BOUND_MODES:
        got = tierank.evaluate_codes(queries, database, q_labels, db_labels, measures, ties=mode).per_query
        pd.testing.assert_frame_equal(got, getattr(ref, mode))
    # the same distances as a matrix: every mode gives evaluate_matrix's values
    dist = (queries[:, None, :] != database[None, :, :]).sum(axis=2)
    rel = (q_labels[:, None] == db_labels[None, :]).astype(float)
    for mode in MODES:
        got = tierank.evaluate_codes(queries, database, q_labels, db_labels, measures, ties=mode).per_query
        want = tierank.evaluate_matrix(rel, distances=dist, measures=measures, ties=mode).per_query
        np.testing.assert_allclose(got.to_numpy(), want.to_numpy(), rtol=1e-12, atol=1e-12)


def test_issue_example_by_hand():
    """relevance [1, 0, 1, 0], scores [3, 2, 1, 1]: the tie {2, 3} straddles rank 3. Relevant first
    (optimistic): top 3 = 1, 0, 1, AP = (1/1 + 2/3) / 2 = 5/6. Relevant last (pessimistic): top 3 =
    1, 0, 0, AP = 1/1 = 1. So the maximum ("upper") is 1 and the minimum ("lower") 5/6: a pessimistic
    value above the optimistic one, as the README's table now says."""
    hand = {"optimistic": 5 / 6, "pessimistic": 1.0, "upper": 1.0, "lower": 5 / 6, "expected": (5 / 6 + 1) / 2}
    m = "AP(denom='retrieved')@3"
    for mode, want in hand.items():
        got = tierank.evaluate_matrix([[1, 0, 1, 0]], [[3, 2, 1, 1]], [m], ties=mode).mean[m]
        assert math.isclose(got, want, rel_tol=1e-12), mode
        got = tierank.evaluate({"q": {"a": 1, "c": 1}}, {"q": {"a": 3, "b": 2, "c": 1, "d": 1}}, [m], ties=mode).mean[m]
        assert math.isclose(got, want, rel_tol=1e-12), mode


ORACLE_MEASURES = ["AP(denom='retrieved')@3", "AP(denom='retrieved')@2", "WAP@3", "nDCG@3", "RR@2", "P@2",
                   "ERR@3", "Bpref"]


@settings(max_examples=60, deadline=None, derandomize=True, database=None)
@given(data=st.data(), measure=st.sampled_from(ORACLE_MEASURES))
def test_property_modes_equal_the_oracle(data, measure):
    """Every mode against brute force over the orderings of the ties: expected / lower / upper the mean /
    min / max, optimistic / pessimistic the value of the arrangement (oracle.fixed_value)."""
    n = data.draw(st.integers(1, 6))
    grades = data.draw(st.lists(st.sampled_from([0.0, 0.0, 1.0, 2.0]), min_size=n, max_size=n))
    keys = data.draw(st.lists(st.sampled_from([0.0, 1.0, 2.0]), min_size=n, max_size=n))
    a = oracle.analyse(measure, grades, keys)
    for mode in MODES:
        got = tierank.evaluate_matrix([grades], [keys], [measure], ties=mode).per_query[measure].iloc[0]
        assert math.isclose(got, a.expected_for(mode), rel_tol=1e-9, abs_tol=1e-12), (mode, grades, keys)


def test_relstring_under_bound_modes_shows_the_ties():
    """A string has no maximum: under "lower" / "upper" RelString shows the ties whole, as under
    "expected"; under the arrangements it is the string of that order."""
    res = {mode: tierank.evaluate_matrix([[1, 0, 2, 0]], [[3, 1, 1, 1]], ["RelString"], ties=mode)
           .per_query["RelString"].iloc[0] for mode in MODES}
    assert res["lower"] == res["upper"] == res["expected"] == "1[200]"
    # the arrangements: grade 2 first / last in the tie (its two 0s, equal for the measure, stay a group)
    assert res["optimistic"].startswith("12") and res["pessimistic"].endswith("2")


@pytest.mark.parametrize("mode", BOUND_MODES)
def test_max_docs_cutting_a_tie_is_an_error(mode):
    with pytest.raises(InputError, match=f"ties='{mode}' no tie-break is made"):
        tierank.evaluate({"q": {"a": 1}}, {"q": {"a": 1.0, "b": 1.0, "c": 0.5}}, ["P@2"], ties=mode, max_docs=1)


def test_for_mode_refuses_bound_modes():
    from tierank.ties.policy import TieOrderings

    with pytest.raises(ValueError, match="not one ordering"):
        TieOrderings(None).for_mode("upper", None)   # type: ignore[arg-type]
    assert set(tierank.TIE_MODES) >= set(MODES) | {"input", "trec_eval", "random"}


@pytest.mark.parametrize("mode", MODES)
def test_cli_ties_equal_the_core(tmp_path, mode):
    grades, scores = tied_matrix(5, rows=6, cols=6)
    qrels, run = as_tables(grades, scores)
    qpath, rpath = tmp_path / "qrels.txt", tmp_path / "run.txt"
    qpath.write_text("".join(f"{q} 0 {d} {g}\n" for q, d, g in qrels.itertuples(index=False)))
    rpath.write_text("".join(f"{q} Q0 {d} 0 {s!r} x\n" for q, d, s in run.itertuples(index=False)))
    measures = ["AP(denom='retrieved')@3", "nDCG@3", "RR"]
    out = CliRunner().invoke(main, ["eval", str(qpath), str(rpath), *[a for m in measures for a in ("-m", m)],
                                    "--ties", mode, "-q", "-f", "json"])
    assert out.exit_code == 0, out.output
    data = json.loads(out.stdout)
    assert data["ties"] == mode
    want = tierank.evaluate(qrels, run, measures, ties=mode)
    got = data["runs"][0]
    for m in measures:
        assert got["mean"][m] == pytest.approx(want.mean[m], rel=1e-12, abs=1e-15)
        for q in want.per_query.index:
            assert got["per_query"][str(q)][m] == pytest.approx(want.per_query.loc[q, m], rel=1e-12, abs=1e-15)


def test_summary_of_a_bound_mode_has_one_column_per_bound():
    """ties="upper" with bounds=True: the values are the upper bound; the summary shows lower and upper once
    (a column named "upper" for the values would collide with the bound's)."""
    res = tierank.evaluate_matrix([[1, 0, 1, 0]], [[3, 2, 1, 1]], ["AP(denom='retrieved')@3"], ties="upper",
                                  bounds=True)
    table = res.summary()
    assert list(table.columns) == ["lower", "upper"]
    assert table.loc["AP(denom='retrieved')@3", "upper"] == res.mean["AP(denom='retrieved')@3"] == 1.0
    assert math.isclose(table.loc["AP(denom='retrieved')@3", "lower"], 5 / 6, rel_tol=1e-12)
