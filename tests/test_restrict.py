"""trec_eval's -J (judged documents only) and -M (at most N documents per query), in every tie mode.

Independent references: pytrec_eval's ``judged_docs_only_flag`` (trec_eval 9.x's -J), and the
definitions applied to the input by hand here (drop the unjudged documents; keep the first N documents
in the mode's order) then evaluated without the option.
"""

from __future__ import annotations

import random

import pytest
from click.testing import CliRunner
from hypothesis import given, settings
from hypothesis import strategies as st

import tierank
from tierank.cli import main
from tierank.errors import InputError

MEASURES = ["AP", "P@3", "nDCG", "RR", "Bpref", "NumRet", "NumRelRet", "R@5"]
MODES = ["expected", "optimistic", "pessimistic", "input", "trec_eval", "random"]


def random_case(rng: random.Random, n_queries: int = 4):
    qrels, run = {}, {}
    for q in range(n_queries):
        qid = f"q{q}"
        docs = [f"d{i}" for i in range(rng.randint(1, 9))]
        run[qid] = {d: float(rng.randint(0, 3)) for d in docs}   # heavy ties
        judged = {d: rng.choice([0, 1, 2, -1]) for d in docs if rng.random() < 0.6}
        judged[f"x{q}"] = 1                     # a relevant document nobody retrieved
        qrels[qid] = judged
    return qrels, run


def judged_part(qrels, run):
    """-J by hand: the retrieved documents with a grade >= 0 in the qrels."""
    return {q: {d: s for d, s in docs.items() if qrels.get(q, {}).get(d, -1) >= 0} for q, docs in run.items()}


def first_n(run, n, order):
    """-M by hand: the first n documents of each query, score descending, ties by ``order(doc)``."""
    out = {}
    for q, docs in run.items():
        ranked = sorted(docs, key=lambda d: (-docs[d], order(q, d)))
        out[q] = {d: docs[d] for d in ranked[:n]}
    return out


def same(a, b):
    assert list(a.per_query.index) == list(b.per_query.index)
    for col in a.per_query:
        assert a.per_query[col].tolist() == pytest.approx(b.per_query[col].tolist(), abs=1e-12), col
    if a.lower is not None:
        for col in a.lower:
            assert a.lower[col].tolist() == pytest.approx(b.lower[col].tolist(), abs=1e-12), col
            assert a.upper[col].tolist() == pytest.approx(b.upper[col].tolist(), abs=1e-12), col


@settings(max_examples=150, deadline=None)
@given(st.integers(0, 10**9), st.sampled_from([m for m in MODES if m != "random"]), st.booleans())
def test_judged_only_equals_dropping_the_unjudged_documents(seed, mode, bounds):
    # (ties="random" keys each document by its input position, which dropping rows by hand changes)
    qrels, run = random_case(random.Random(seed))
    bounds = bounds and mode == "expected"
    got = tierank.evaluate(qrels, run, MEASURES, ties=mode, bounds=bounds, judged_only=True, missing="zero")
    kept = judged_part(qrels, run)
    # queries left with no document are scored as empty runs: drop them, missing="zero" scores them
    want = tierank.evaluate(qrels, {q: d for q, d in kept.items() if d}, MEASURES, ties=mode, bounds=bounds,
                            missing="zero")
    same(got, want)


@settings(max_examples=150, deadline=None)
@given(st.integers(0, 10**9), st.integers(1, 6))
def test_max_docs_with_trec_eval_ties_keeps_the_first_in_trec_eval_order(seed, n):
    qrels, run = random_case(random.Random(seed))
    got = tierank.evaluate(qrels, run, MEASURES, ties="trec_eval", max_docs=n)
    # trec_eval: score descending, ties by document id descending (as strings)
    inverted = {d: "".join(chr(0x10FFFF - ord(c)) for c in d) for docs in run.values() for d in docs}
    want = tierank.evaluate(qrels, first_n(run, n, lambda q, d: inverted[d]), MEASURES, ties="trec_eval")
    same(got, want)


@settings(max_examples=100, deadline=None)
@given(st.integers(0, 10**9), st.integers(1, 6))
def test_max_docs_with_input_ties_keeps_the_first_in_input_order(seed, n):
    qrels, run = random_case(random.Random(seed))
    position = {(q, d): i for q, docs in run.items() for i, d in enumerate(docs)}
    got = tierank.evaluate(qrels, run, MEASURES, ties="input", max_docs=n)
    want = tierank.evaluate(qrels, first_n(run, n, lambda q, d: position[q, d]), MEASURES, ties="input")
    same(got, want)


@settings(max_examples=100, deadline=None)
@given(st.integers(0, 10**9), st.integers(1, 6), st.sampled_from(["expected", "optimistic", "pessimistic"]))
def test_max_docs_over_all_orderings_is_exact_or_an_error_naming_the_query(seed, n, mode):
    qrels, run = random_case(random.Random(seed))
    straddling = [q for q, docs in run.items()
                  if len(docs) > n and sorted(docs.values(), reverse=True)[n - 1] == sorted(docs.values(),
                                                                                           reverse=True)[n]]
    if straddling:
        with pytest.raises(InputError, match="cuts a tie") as err:
            tierank.evaluate(qrels, run, MEASURES, ties=mode, max_docs=n)
        assert repr(err.value.query) in str(err.value) and err.value.query in straddling
        return
    got = tierank.evaluate(qrels, run, MEASURES, ties=mode, max_docs=n, bounds=mode == "expected")
    want = tierank.evaluate(qrels, first_n(run, n, lambda q, d: 0), MEASURES, ties=mode, bounds=mode == "expected")
    same(got, want)


def test_judged_only_matches_pytrec_eval():
    pytrec_eval = pytest.importorskip("pytrec_eval")
    rng = random.Random(7)
    for _ in range(30):
        qrels, run = random_case(rng, 5)
        qrels = {q: {d: g for d, g in docs.items() if g >= 0} for q, docs in qrels.items()}
        ev = pytrec_eval.RelevanceEvaluator(qrels, {"map", "P_3", "recip_rank", "bpref", "num_ret"},
                                            judged_docs_only_flag=True)
        want = ev.evaluate(run)
        got = tierank.evaluate(qrels, run, ["map", "P_3", "recip_rank", "bpref", "num_ret"], ties="trec_eval",
                               trec_eval_version=9, judged_only=True, missing="zero")
        for q, values in want.items():
            for name, v in values.items():
                assert got.per_query.loc[q, name] == pytest.approx(v, abs=1e-12), (q, name)


def test_a_query_left_with_no_document_is_an_empty_run():
    qrels = {"a": {"d1": 1}, "b": {"d9": 1}}
    run = {"a": {"d1": 1.0}, "b": {"d2": 1.0, "d3": 0.5}}   # b retrieved only unjudged documents
    res = tierank.evaluate(qrels, run, ["AP", "NumRet", "NumRel"], judged_only=True)
    assert res.per_query.loc["b"].tolist() == [0.0, 0.0, 1.0]
    assert res.per_query.loc["a"].tolist() == [1.0, 1.0, 1.0]


@pytest.mark.parametrize("bad", [0, -3, 2.5, True, "10"])
def test_max_docs_must_be_a_positive_integer(bad):
    with pytest.raises(InputError, match="max_docs must be a positive integer"):
        tierank.evaluate({"a": {"d": 1}}, {"a": {"d": 1.0}}, ["AP"], max_docs=bad)


def test_cli_passes_j_and_m_through(tmp_path):
    (tmp_path / "q").write_text("1 0 a 1\n1 0 b 0\n2 0 c 1\n")
    (tmp_path / "r").write_text("1 Q0 z 1 3 t\n1 Q0 a 2 2 t\n1 Q0 b 3 1 t\n2 Q0 c 1 5 t\n2 Q0 y 2 4 t\n")
    out = CliRunner().invoke(main, [str(tmp_path / "q"), str(tmp_path / "r"), "-m", "map", "num_ret", "-J",
                                    "-M", "2", "-f", "trec", "--ties", "trec_eval"])
    assert out.exit_code == 0, out.output
    # -M 2: query 1 keeps z, a; -J drops z -> [a]: AP 1; query 2 keeps c, y; -J -> [c]: AP 1
    assert out.output.splitlines() == ["num_ret               \tall\t2", "map                   \tall\t1.0000"]


@settings(max_examples=80, deadline=None)
@given(st.integers(0, 10**9), st.sampled_from([m for m in MODES if m != "random"]))
def test_a_measure_with_judged_only_equals_the_run_evaluated_with_judged_only(seed, mode):
    # ir-measures' nDCG(judged_only=True): -J for one measure, beside measures on the whole run
    qrels, run = random_case(random.Random(seed))
    got = tierank.evaluate(qrels, run, ["nDCG(judged_only=True)", "nDCG", "P(judged=True)@3"], ties=mode,
                           bounds=mode == "expected", missing="zero")
    whole = tierank.evaluate(qrels, run, ["nDCG"], ties=mode, bounds=mode == "expected", missing="zero")
    kept = tierank.evaluate(qrels, run, ["nDCG", "P@3"], ties=mode, bounds=mode == "expected", missing="zero",
                            judged_only=True)
    assert list(got.per_query.columns) == ["nDCG(judged_only=True)", "nDCG", "P(judged=True)@3"]
    assert got.per_query["nDCG"].tolist() == whole.per_query["nDCG"].tolist()
    assert got.per_query["nDCG(judged_only=True)"].tolist() == kept.per_query["nDCG"].tolist()
    assert got.per_query["P(judged=True)@3"].tolist() == kept.per_query["P@3"].tolist()
    if mode == "expected":
        assert got.upper["nDCG(judged_only=True)"].tolist() == kept.upper["nDCG"].tolist()


def test_judged_only_prints_and_has_no_trec_eval_name():
    from tierank.measures import parse_measure, trec_output_name

    m = parse_measure("nDCG(judged=True)@10")
    assert str(m) == "nDCG(judged_only=True)@10" and m.judged_only
    assert trec_output_name(m) is None
    assert not parse_measure("nDCG@10").judged_only
    with pytest.raises(InputError, match="judged_only must be True or False"):
        parse_measure("nDCG(judged_only=1)")
