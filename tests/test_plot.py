"""Plots: they draw what the results hold (inspected on the Axes, never compared as pixels)."""

from __future__ import annotations

import os
import sys

import numpy as np
import pandas as pd
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

matplotlib = pytest.importorskip("matplotlib")
matplotlib.use("Agg")   # never a window in the tests

from matplotlib.figure import Figure  # noqa: E402

import tierank  # noqa: E402
from tierank.plot import figure_for, plot_results, plot_runs, save_plot  # noqa: E402

import oracle  # noqa: E402

DATA = os.path.join(os.path.dirname(__file__), "data", "trec_eval")
QRELS = os.path.join(DATA, "qrels.test")
RUN = os.path.join(DATA, "results.test")

MAGIC = {"png": b"\x89PNG\r\n\x1a\n", "pdf": b"%PDF-", "svg": b"<?xml"}


def artists(ax):
    """The artists of an Axes by gid (the plots name what they draw)."""
    return {a.get_gid(): a for a in ax.get_children() if a.get_gid()}


def ranges(collection):
    """(x, low, high) of each vertical segment of a LineCollection."""
    return [(seg[0, 0], seg[0, 1], seg[1, 1]) for seg in collection.get_segments()]


def new_ax():
    return Figure().add_subplot()


def tied_run_frame(n_queries=50, seed=3):
    """A run with heavy ties: scores rounded to one of three values; graded judgments."""
    rng = np.random.default_rng(seed)
    rows, qrows = [], []
    for q in range(n_queries):
        for d in range(12):
            rows.append((f"q{q:02d}", f"d{d}", float(rng.integers(0, 3))))
            qrows.append((f"q{q:02d}", f"d{d}", int(rng.integers(0, 3) == 0)))
    return (pd.DataFrame(qrows, columns=["query_id", "doc_id", "relevance"]),
            pd.DataFrame(rows, columns=["query_id", "doc_id", "score"]))


# ------------------------------------------------------------------------------------ per query


def test_one_tie_by_hand():
    # query a: the relevant item ties with a non-relevant one at the top -> RR is 1 or 1/2, expected 3/4;
    # query b: no tie, relevant second -> 1/2; query c: relevant alone at the top -> 1
    qrels = {"a": {"r": 1}, "b": {"r": 1}, "c": {"r": 1}}
    run = {"a": {"r": 2, "x": 2, "y": 1}, "b": {"x": 3, "r": 2}, "c": {"r": 5, "x": 1}}
    res = tierank.evaluate(qrels, run, ["RR"], bounds=True)
    ax = res.plot("RR", ax=new_ax())
    art = artists(ax)
    assert art["values"].get_ydata().tolist() == [0.5, 0.75, 1.0]          # sorted by value
    assert [t.get_text() for t in ax.get_xticklabels()] == ["b", "a", "c"]
    assert ranges(art["ranges"]) == [(0, 0.5, 0.5), (1, 0.5, 1.0), (2, 1.0, 1.0)]
    assert art["aggregate"].get_ydata()[0] == pytest.approx((0.5 + 0.75 + 1) / 3)
    assert ax.get_ylabel() == "RR"
    assert "ties=expected" in ax.get_title()
    legend = [t.get_text() for t in ax.get_legend().get_texts()]
    assert any("[min, max]" in t for t in legend)
    assert any(t.startswith("mean 0.7500 [0.6667, 0.8333]") for t in legend)   # (1/2+1/2+1)/3, (1/2+1+1)/3


def test_points_and_ranges_are_the_results_values():
    qrels, run = tied_run_frame(30)
    res = tierank.evaluate(qrels, run, ["nDCG@5", "AP"], bounds=True)
    for measure in ("nDCG@5", "AP"):
        ax = res.plot(measure, ax=new_ax())
        art = artists(ax)
        queries = [t.get_text() for t in ax.get_xticklabels()]
        assert sorted(queries) == sorted(res.per_query.index)
        ys = art["values"].get_ydata()
        assert np.all(np.diff(ys) >= 0)
        np.testing.assert_array_equal(ys, res.per_query[measure].loc[queries].to_numpy())
        segs = ranges(art["ranges"])
        assert len(segs) == len(queries) == len(art["values"].get_xdata())
        np.testing.assert_array_equal([s[1] for s in segs], res.lower[measure].loc[queries].to_numpy())
        np.testing.assert_array_equal([s[2] for s in segs], res.upper[measure].loc[queries].to_numpy())
        assert any(lo < hi for _, lo, hi in segs)   # heavy ties: some ranges are open


def test_spelling_of_the_measure_and_default():
    res = tierank.evaluate(QRELS, RUN, ["P@5", "AP"], bounds=True)
    assert res.plot("P_5", ax=new_ax()).get_ylabel() == "P@5"
    assert res.plot(ax=new_ax()).get_ylabel() == "P@5"         # the first measure
    assert res.plot("P_5", ax=new_ax(), label="P_5").get_ylabel() == "P_5"


def test_unknown_and_text_measures_are_errors():
    res = tierank.evaluate(QRELS, RUN, ["AP", "RelString"], bounds=True)
    with pytest.raises(tierank.InputError, match="was not evaluated.*AP"):
        res.plot("nDCG@10", ax=new_ax())
    with pytest.raises(tierank.InputError, match="text measure"):
        res.plot("RelString", ax=new_ax())
    only_text = tierank.evaluate(QRELS, RUN, ["RelString"])
    with pytest.raises(tierank.InputError, match="no numeric measure"):
        only_text.plot(ax=new_ax())


def test_without_bounds_the_title_says_so():
    res = tierank.evaluate(QRELS, RUN, ["AP"], ties="trec_eval")
    ax = res.plot(ax=new_ax())
    assert "ranges" not in artists(ax)
    assert "bounds=True" in ax.get_title() and "ties=trec_eval" in ax.get_title()
    assert len(artists(ax)["values"].get_ydata()) == 3


def test_queries_without_a_value_are_left_out():
    qrels = {"a": {"r": 1}, "b": {"x": 0}}
    run = {"a": {"r": 1, "x": 1}, "b": {"x": 1}}
    res = tierank.evaluate(qrels, run, ["AP"], bounds=True, no_relevant="skip")
    ax = res.plot(ax=new_ax())
    assert artists(ax)["values"].get_ydata().tolist() == [0.75]
    assert "1 left out" in ax.get_xlabel()


def test_many_queries_have_no_query_labels():
    qrels, run = tied_run_frame(50)
    res = tierank.evaluate(qrels, run, ["P@3"], bounds=True)
    ax = res.plot(ax=new_ax())
    assert ax.get_xticklabels() == [] or all(t.get_text() == "" for t in ax.get_xticklabels())
    assert len(artists(ax)["values"].get_ydata()) == 50
    assert "50 queries" in ax.get_xlabel()


def test_counts_show_their_average_per_query():
    res = tierank.evaluate(QRELS, RUN, ["NumRelRet"], bounds=True)
    ax = res.plot(ax=new_ax())
    ys = artists(ax)["values"].get_ydata()
    assert artists(ax)["aggregate"].get_ydata()[0] == pytest.approx(ys.mean())
    assert ys.sum() == res.mean["NumRelRet"]


def test_pyplot_figure_when_no_axes_given():
    import matplotlib.pyplot as plt

    res = tierank.evaluate(QRELS, RUN, ["AP"], bounds=True)
    ax = res.plot()
    try:
        assert ax.figure in [plt.figure(n) for n in plt.get_fignums()]
    finally:
        plt.close("all")


def test_missing_matplotlib_names_the_extra(monkeypatch):
    res = tierank.evaluate(QRELS, RUN, ["AP"], bounds=True)
    monkeypatch.setitem(sys.modules, "matplotlib", None)
    with pytest.raises(ImportError, match=r"pip install 'tierank\[plot\]' \(in a clone of tierank: "
                                         r"pip install '\.\[plot\]'\)"):
        res.plot()


# ---------------------------------------------------------------------------------- several runs


def two_runs():
    qrels = {"a": {"r": 1}, "b": {"r": 1}, "c": {"r": 1}}
    run_a = {"a": {"r": 2, "x": 2}, "b": {"x": 3, "r": 2}, "c": {"r": 5, "x": 1}}     # RR 3/4, 1/2, 1
    run_b = {"a": {"r": 1, "x": 2}, "b": {"x": 3, "r": 3}, "c": {"r": 1, "x": 1}}     # RR 1/2, 3/4, 3/4
    return qrels, run_a, run_b


def test_runs_plot_by_hand():
    qrels, run_a, run_b = two_runs()
    res = {name: tierank.evaluate(qrels, r, ["RR"], bounds=True) for name, r in (("A", run_a), ("B", run_b))}
    fig = Figure()
    plot_runs(res, "RR", axes=fig.subplots(1, 2))
    means, diff = (artists(ax) for ax in fig.axes)
    assert means["means"].get_ydata().tolist() == pytest.approx([2.25 / 3, 2 / 3])
    # B - A per query: a: 1/2 - 3/4, b: 3/4 - 1/2, c: 3/4 - 1; sorted
    assert diff["differences:B"].get_ydata().tolist() == [-0.25, -0.25, 0.25]
    # exact ranges of the difference: a: B fixed 1/2, A in [1/2, 1] -> [-1/2, 0]; b: [0, 1/2]; c: [-1/2, 0]
    segs = sorted((lo, hi) for _, lo, hi in ranges(diff["difference-ranges:B"]))
    assert segs == [(-0.5, 0.0), (-0.5, 0.0), (0.0, 0.5)]
    # A: a in [1/2, 1], b 1/2, c 1; B: a 1/2, b and c in [1/2, 1]
    mean_ranges = [v for s in means["mean-ranges"].get_segments() for v in (s[0, 1], s[1, 1])]
    assert mean_ranges == pytest.approx([2 / 3, 2.5 / 3, 1.5 / 3, 2.5 / 3])
    assert [t.get_text() for t in fig.axes[0].get_xticklabels()] == ["A", "B"]
    assert fig.axes[1].get_ylabel() == "difference in RR"


@settings(max_examples=30, deadline=None)
@given(st.data())
def test_difference_ranges_are_exact(data):
    """The range of a per-query difference is the min / max over every pair of tie orderings of the
    two runs (brute force from the oracle)."""
    n = data.draw(st.integers(2, 5))
    grades = [data.draw(st.lists(st.integers(0, 2), min_size=n, max_size=n)) for _ in range(2)]
    scores = {k: [data.draw(st.lists(st.integers(0, 2), min_size=n, max_size=n)) for _ in range(2)]
              for k in ("A", "B")}
    measure = data.draw(st.sampled_from(["AP", "nDCG@3", "RR", "P@2"]))
    res = {k: tierank.evaluate_matrix(grades, scores=scores[k], measures=[measure], bounds=True) for k in scores}
    fig = Figure()
    plot_runs(res, measure, axes=fig.subplots(1, 2))
    art = artists(fig.axes[1])
    got = sorted(zip(art["differences:B"].get_ydata().tolist(),
                     [(lo, hi) for _, lo, hi in ranges(art["difference-ranges:B"])]))
    want = []
    for q in range(2):
        va = oracle.all_values(measure, grades[q], scores["A"][q])
        vb = oracle.all_values(measure, grades[q], scores["B"][q])
        diffs = [b - a for a in va for b in vb]
        want.append((float(np.mean(vb) - np.mean(va)), (min(diffs), max(diffs))))
    want.sort()
    for (gv, (glo, ghi)), (wv, (wlo, whi)) in zip(got, want):
        assert gv == pytest.approx(wv, abs=1e-12)
        assert glo == pytest.approx(wlo, abs=1e-12) and ghi == pytest.approx(whi, abs=1e-12)


def test_comparison_plot_marks_significant_wins():
    qrels = {f"q{i}": {"r": 1} for i in range(8)}
    good = {q: {"r": 2.0, "x": 1.0} for q in qrels}             # RR 1 everywhere
    bad = {q: {"r": 1.0, "x": 2.0} for q in qrels}              # RR 1/2 everywhere
    cmp = tierank.compare(qrels, {"good": good, "bad": bad}, ["RR"], test="permutation")
    fig = cmp.plot("RR", axes=Figure().subplots(1, 2))
    texts = [t.get_text() for t in fig.axes[0].texts]
    assert texts == ["1.0000 > b", "0.5000"]                    # exact test: p = 2/256
    assert [t.get_text() for t in fig.axes[0].get_xticklabels()] == ["a: good", "b: bad"]
    assert artists(fig.axes[1])["differences:bad"].get_ydata().tolist() == [-0.5] * 8
    assert "mean-ranges" not in artists(fig.axes[0])            # no Results given: no ranges
    with pytest.raises(tierank.InputError, match="not in the comparison"):
        cmp.plot("AP", axes=Figure().subplots(1, 2))


def test_comparison_plot_with_results_has_ranges():
    qrels, run_a, run_b = two_runs()
    res = {n: tierank.evaluate(qrels, r, ["RR"], bounds=True) for n, r in (("A", run_a), ("B", run_b))}
    cmp = tierank.Comparison.from_results(res, {"RR": "RR"})
    fig = cmp.plot("RR", res, axes=Figure().subplots(1, 2), baseline="B")
    art = artists(fig.axes[1])
    assert art["differences:A"].get_ydata().tolist() == [-0.25, 0.25, 0.25]    # A - B
    assert "mean-ranges" in artists(fig.axes[0])


def test_runs_plot_needs_two_runs_and_a_known_baseline():
    res = tierank.evaluate(QRELS, RUN, ["AP"], bounds=True)
    with pytest.raises(tierank.InputError, match="at least two runs"):
        plot_runs({"a": res}, "AP", axes=Figure().subplots(1, 2))
    with pytest.raises(tierank.InputError, match="baseline 'c'"):
        plot_runs({"a": res, "b": res}, "AP", baseline="c", axes=Figure().subplots(1, 2))


# ------------------------------------------------------------------------------------------ files


@pytest.mark.parametrize("ext", ["png", "svg", "pdf"])
def test_files_are_valid_and_deterministic(tmp_path, ext):
    res = tierank.evaluate(QRELS, RUN, ["AP", "P@10"], bounds=True)
    paths = [tmp_path / f"one.{ext}", tmp_path / f"two.{ext}"]
    for p in paths:
        save_plot(p, {"run": res}, [("AP", "AP"), ("P_10", "P@10")])
    data = paths[0].read_bytes()
    assert data.startswith(MAGIC[ext])
    assert data == paths[1].read_bytes()
    if ext == "svg":
        assert b"<svg" in data and b"P_10" in data
    if ext == "pdf":
        assert data.rstrip().endswith(b"%%EOF")
    if ext == "png":
        import matplotlib.image

        image = matplotlib.image.imread(paths[0])
        assert image.shape[0] > 100 and image.shape[1] > 100


def test_figure_layouts():
    res = tierank.evaluate(QRELS, RUN, ["AP", "P@10", "RR"], bounds=True)
    fig = figure_for({"run": res}, [("AP", "AP"), ("P@10", "P@10"), ("RR", "RR")])
    visible = [ax for ax in fig.axes if ax.get_visible()]
    assert [ax.get_ylabel() for ax in visible] == ["AP", "P@10", "RR"]
    fig = figure_for({"a": res, "b": res}, [("AP", "AP"), ("RR", "RR")])
    assert len(fig.axes) == 4


def test_bad_extension_is_an_error(tmp_path):
    res = tierank.evaluate(QRELS, RUN, ["AP"], bounds=True)
    with pytest.raises(tierank.InputError, match="png, svg, pdf"):
        save_plot(tmp_path / "plot.jpg", {"run": res}, [("AP", "AP")])
    assert not (tmp_path / "plot.jpg").exists()


# -------------------------------------------------------------------------------------------- CLI


@pytest.mark.parametrize("ext", ["png", "svg", "pdf"])
def test_cli_plot(tmp_path, ext):
    from click.testing import CliRunner

    from tierank.cli import main

    path = tmp_path / f"plot.{ext}"
    args = [QRELS, RUN, "-m", "AP", "P@10", "-f", "json"]
    plain = CliRunner().invoke(main, args)
    drawn = CliRunner().invoke(main, args + ["--plot", str(path)])
    assert drawn.exit_code == 0, drawn.output
    assert drawn.output == plain.output          # the plot's bounds are not printed unless --bounds
    assert path.read_bytes().startswith(MAGIC[ext])


def test_cli_plot_several_runs_and_bad_extension(tmp_path):
    from click.testing import CliRunner

    from tierank.cli import main

    path = tmp_path / "runs.svg"
    result = CliRunner().invoke(main, [QRELS, RUN, RUN, "-m", "AP", "--compare", "--plot", str(path)])
    assert result.exit_code == 0, result.output
    text = path.read_text()
    assert "AP: mean per run" in text and "per-query difference" in text
    bad = tmp_path / "plot.jpeg"
    result = CliRunner().invoke(main, [QRELS, RUN, "-m", "AP", "--plot", str(bad)])
    assert result.exit_code == 2 and "png, svg, pdf" in result.output and not bad.exists()
