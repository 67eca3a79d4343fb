"""tierank.compare and ``tierank QRELS RUN RUN --compare``: values worked out by hand.

Three runs on three queries, each query with one relevant document ``r`` placed at a chosen rank, so
that RR per query is 1 / rank:

    run   ranks of r   RR per query
    A     1, 1, 1      1,    1, 1
    B     2, 1, 4      1/2,  1, 1/4
    C     4, 4, 4      1/4,  1/4, 1/4

Paired t-tests have 2 degrees of freedom, whose two-sided p-value has a closed form:
p = 1 - |t| / sqrt(2 + t^2). The randomisation test is exact (2^3 sign patterns).
"""

from __future__ import annotations

import math
import warnings

import numpy as np
import pytest
from click.testing import CliRunner

import tierank
from tierank.cli import main
from tierank.comparison import Comparison, compare, holm, paired_test
from tierank.io.write import write_qrels, write_run

RANKS = {"A": (1, 1, 1), "B": (2, 1, 4), "C": (4, 4, 4)}
QUERIES = ("q1", "q2", "q3")
QRELS = {q: {"r": 1, "x1": 0} for q in QUERIES}


def make_run(ranks):
    run = {}
    for q, rank in zip(QUERIES, ranks):
        docs = [f"x{i}" for i in range(1, 4)]
        docs.insert(rank - 1, "r")
        run[q] = {d: 10.0 - i for i, d in enumerate(docs)}
    return run


RUNS = {name: make_run(r) for name, r in RANKS.items()}


def t_pvalue_df2(d):
    d = np.asarray(d, dtype=float)
    mean = d.mean()
    sd = math.sqrt(((d - mean) ** 2).sum() / (len(d) - 1))
    t = mean / (sd / math.sqrt(len(d)))
    return 1 - abs(t) / math.sqrt(2 + t * t)


def write_trec(tmp_path):
    qrels = tmp_path / "qrels.txt"
    write_qrels(QRELS, qrels)
    paths = {}
    for name, run in RUNS.items():
        paths[name] = tmp_path / f"{name}.run"
        write_run(run, paths[name], tag=name)
    return qrels, paths


# ------------------------------------------------------------------------------------- the tests


def test_paired_t_test_by_hand():
    d_ab = [1 - 0.5, 0, 1 - 0.25]
    assert paired_test([1, 1, 1], [0.5, 1, 0.25], "t") == pytest.approx(t_pvalue_df2(d_ab), rel=1e-12)
    assert t_pvalue_df2(d_ab) == pytest.approx(0.19936, abs=1e-5)
    # every difference the same (not 0): infinitely significant; every difference 0: p = 1
    assert paired_test([1, 1, 1], [0.25, 0.25, 0.25], "t") == 0.0
    assert paired_test([0.3, 0.2], [0.3, 0.2], "t") == 1.0


def test_randomisation_test_is_exact_for_few_queries():
    # d = (1/2, 0, 3/4): |mean| >= 5/12 when 1/2 and 3/4 keep the same sign: 4 of 8 sign patterns
    assert paired_test([1, 1, 1], [0.5, 1, 0.25], "permutation") == pytest.approx(0.5)
    # d = (3/4, 3/4, 3/4): only all + and all -: 2 of 8
    assert paired_test([1, 1, 1], [0.25, 0.25, 0.25], "permutation") == pytest.approx(0.25)


def test_bootstrap_test():
    # equal differences: every resample of the centred differences has mean 0 < 3/4: p = 1 / (B + 1)
    assert paired_test([1, 1, 1], [0.25, 0.25, 0.25], "bootstrap", n_resamples=999) == pytest.approx(1 / 1000)
    assert paired_test([0.1, 0.5, 0.9], [0.1, 0.5, 0.9], "bootstrap") == 1.0
    a = np.linspace(0, 1, 40)
    b = a[::-1]
    p1 = paired_test(a, b, "bootstrap", seed=3)
    assert p1 == paired_test(a, b, "bootstrap", seed=3) and 0.5 < p1 <= 1.0   # seeded, and no difference


def test_holm_by_hand():
    # sorted p: 0.01 (x3) = 0.03, 0.03 (x2) = 0.06, 0.04 (x1) = 0.04 -> kept monotone: 0.06
    assert holm([0.01, 0.04, 0.03]).tolist() == pytest.approx([0.03, 0.06, 0.06])
    assert holm([0.5, 0.9]).tolist() == pytest.approx([1.0, 1.0])


def test_compare_means_tests_and_letters():
    cmp = compare(QRELS, RUNS, ["RR"])
    assert cmp.means["RR"].to_dict() == pytest.approx({"A": 1.0, "B": (0.5 + 1 + 0.25) / 3, "C": 0.25})
    p_ab = t_pvalue_df2([0.5, 0, 0.75])
    p_bc = t_pvalue_df2([0.25, 0.75, 0])
    t = cmp.tests.set_index(["run_a", "run_b"])
    assert t.loc[("A", "B"), "p_value"] == pytest.approx(p_ab)
    assert t.loc[("A", "C"), "p_value"] == 0.0
    assert t.loc[("B", "C"), "p_value"] == pytest.approx(p_bc)
    # Holm over 3 pairs: 0 -> 0; p_ab (0.199) x 2 = 0.399; p_bc (0.270) x 1, raised to 0.399
    assert t["p_adjusted"].tolist() == pytest.approx([2 * p_ab, 0.0, 2 * p_ab])
    assert t["significant"].tolist() == [False, True, False]
    assert t.loc[("A", "C"), "better"] == "A"
    assert cmp.letters == {"A": "a", "B": "b", "C": "c"}
    assert (cmp.wins("A", "RR"), cmp.wins("B", "RR"), cmp.wins("C", "RR")) == ("c", "", "")


def test_compare_without_correction_marks_more():
    cmp = compare(QRELS, RUNS, ["RR"], correction="none", alpha=0.3)
    assert (cmp.wins("A", "RR"), cmp.wins("B", "RR"), cmp.wins("C", "RR")) == ("bc", "c", "")
    text = str(cmp).splitlines()
    assert text[0].split() == ["run", "RR"]
    assert text[1].split() == ["a", "A", "1.0000ᵇᶜ"]
    assert text[2].split() == ["b", "B", "0.5833ᶜ"]
    assert text[3].split() == ["c", "C", "0.2500"]


def test_compare_exports():
    cmp = compare(QRELS, RUNS, ["RR", "P@1"], correction="none", alpha=0.3)
    md = cmp.to_markdown()
    assert "| a | A | 1.0000<sup>bc</sup> | 1.0000<sup>bc</sup> |" in md
    tex = cmp.to_latex()
    assert r"a & A & 1.0000$^{bc}$ & 1.0000$^{bc}$ \\" in tex and r"\begin{tabular}{llrr}" in tex
    data = cmp.to_dict()
    assert data["letters"] == {"A": "a", "B": "b", "C": "c"} and len(data["tests"]) == 6


def test_compare_uses_the_tie_mode():
    # r ties with x1 at the top in run T: expected RR 3/4 per query, trec_eval's order (x1 > r) 1/2
    tied = {q: {"r": 1.0, "x1": 1.0, "x2": 0.5} for q in QUERIES}
    cmp = compare(QRELS, {"A": RUNS["A"], "T": tied}, ["RR"])
    assert cmp.means.loc["T", "RR"] == pytest.approx(0.75)
    cmp = compare(QRELS, {"A": RUNS["A"], "T": tied}, ["RR"], ties="trec_eval")
    assert cmp.means.loc["T", "RR"] == pytest.approx(0.5)


def test_compare_over_common_queries_only():
    partial = {q: v for q, v in RUNS["B"].items() if q != "q3"}
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        cmp = compare(QRELS, {"A": RUNS["A"], "B": partial}, ["RR"])
    messages = [str(w.message) for w in caught if issubclass(w.category, tierank.TierankWarning)]
    assert messages == ["1 judged query is missing from the run and left out (missing='zero' scores them 0, "
                        "like trec_eval -c)",
                        "1 query is not evaluated in every run and is left out of the comparison "
                        "(missing='zero' scores missing queries 0)"]
    assert list(cmp.per_query["RR"].index) == ["q1", "q2"]
    assert cmp.means.loc["B", "RR"] == pytest.approx(0.75)


def test_compare_errors():
    with pytest.raises(tierank.InputError, match="at least two runs"):
        compare(QRELS, {"A": RUNS["A"]}, ["RR"])
    with pytest.raises(tierank.InputError, match="test="):
        compare(QRELS, RUNS, ["RR"], test="wilcoxon")
    with pytest.raises(tierank.InputError, match="correction="):
        compare(QRELS, RUNS, ["RR"], correction="fdr")


def test_compare_needs_scipy(monkeypatch):
    import sys

    monkeypatch.setitem(sys.modules, "scipy", None)
    with pytest.raises(ImportError, match=r"pip install 'tierank\[stats\]' \(in a clone of tierank: "
                                          r"pip install '\.\[stats\]'\)"):
        paired_test([1, 2, 3], [1, 1, 1], "t")


def test_compare_files_by_path(tmp_path):
    qrels, paths = write_trec(tmp_path)
    cmp = compare(qrels, [str(paths["A"]), str(paths["B"])], ["RR"], test="permutation")
    assert list(cmp.means.index) == [str(paths["A"]), str(paths["B"])]
    assert cmp.tests.loc[0, "p_value"] == pytest.approx(0.5)


def test_cli_compare(tmp_path):
    qrels, paths = write_trec(tmp_path)
    res = CliRunner().invoke(main, [str(qrels), str(paths["A"]), str(paths["B"]), str(paths["C"]), "-m", "RR",
                                    "--compare", "--correction", "none", "--alpha", "0.3"])
    assert res.exit_code == 0, res.stderr
    lines = res.stdout.splitlines()
    assert lines[1].split() == ["a", "A.run", "1.0000ᵇᶜ"]
    assert lines[3].split() == ["c", "C.run", "0.2500"]
    assert lines[4].startswith("paired t-test, uncorrected p <= 0.3, over 3 queries, ties=expected")
    pairs = [line.split() for line in lines[6:]]
    assert pairs[1][:3] == ["RR", "a", "-"] and pairs[1][-1] == "yes"
    res = CliRunner().invoke(main, [str(qrels), str(paths["A"]), str(paths["B"]), "-m", "RR", "--compare",
                                    "--test", "permutation", "-f", "csv"])
    assert res.exit_code == 0
    assert res.stdout.splitlines()[0] == "measure,run_a,run_b,mean_a,mean_b,diff,p_value,p_adjusted,significant,better"
    assert float(res.stdout.splitlines()[1].split(",")[6]) == pytest.approx(0.5)


def test_from_results_matches_compare():
    results = {n: tierank.evaluate(QRELS, r, ["RR"]) for n, r in RUNS.items()}
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        a = Comparison.from_results(results, {"RR": "RR"})
    b = compare(QRELS, RUNS, ["RR"])
    assert a.tests.equals(b.tests)


def test_geometric_means_are_compared_as_geometric_means():
    # regression: the comparison table showed GMAP as the arithmetic mean of AP
    import math

    import tierank

    qrels = {"a": {"d1": 1}, "b": {"d1": 1}}
    run1 = {"a": {"d1": 2.0, "d2": 1.0}, "b": {"d2": 2.0, "d1": 1.0}}   # AP 1 and 1/2
    run2 = {"a": {"d1": 2.0, "d2": 1.0}, "b": {"d1": 2.0, "d2": 1.0}}   # AP 1 and 1
    cmp = tierank.compare(qrels, {"x": run1, "y": run2}, ["GMAP", "AP"])
    assert cmp.means.loc["x", "GMAP"] == pytest.approx(math.sqrt(0.5), rel=1e-15)
    assert cmp.means.loc["x", "AP"] == pytest.approx(0.75)


def test_counts_are_not_tested_and_print_as_integers():
    """--compare t-tested num_ret and printed '4.0000' (before): counts have no test row, integer sums."""
    qrels = {"q1": {"d1": 1}, "q2": {"d1": 1}, "q3": {"d1": 1}}
    a = {"q1": {"d1": 1.0, "d2": 0.5}, "q2": {"d1": 1.0}, "q3": {"d2": 1.0, "d3": 0.5, "d4": 0.2}}
    b = {"q1": {"d1": 1.0}, "q2": {"d2": 1.0}, "q3": {"d1": 1.0}}
    cmp = tierank.compare(qrels, {"a": a, "b": b}, ["NumRet", "RR"])
    assert cmp.counts == {"NumRet"}
    assert list(cmp.tests["measure"]) == ["RR"]
    assert cmp.means.loc["a", "NumRet"] == 2 + 1 + 3 and cmp.means.loc["b", "NumRet"] == 1 + 1 + 1
    text = cmp.render("table")
    rows = {line.split()[1]: line.split()[2:] for line in text.splitlines()[1:3]}
    assert rows == {"a": ["6", f"{(1 + 1 + 0) / 3:.4f}"], "b": ["3", f"{(1 + 0 + 1) / 3:.4f}"]}
    assert "counts (NumRet) are summed, not tested" in text
