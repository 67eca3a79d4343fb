"""Plots: what the order of tied documents allows, per query and across runs (matplotlib).

matplotlib is needed (``pip install tierank[plot]``); it is imported only here, only when a plot is
drawn. Files are drawn on a bare :class:`matplotlib.figure.Figure` (the Agg renderer, never a window);
``Results.plot()`` without ``ax`` draws on a new pyplot figure, so that it shows in notebooks and with
``plt.show()``.

Run names, query ids and measure labels are shown as written: never as mathtext (``$`` is a dollar
sign), with control and bidi characters as escapes (``tierank.formats.escape_text``).

Two plots:

* :func:`plot_results` (``Results.plot``): one point per query, the value under the chosen tie mode,
  and a vertical line from the exact minimum to the exact maximum over all orderings of tied
  documents; queries sorted by value; the aggregate as a horizontal line, its range as a band.
* :func:`plot_runs` (``Comparison.plot``): several runs side by side, their means with the range ties
  allow (and the letters of the runs each is significantly better than), and the per-query
  differences to a baseline run, sorted, each with its exact range.
"""

from __future__ import annotations

import os
from typing import Any, Mapping, Sequence

import numpy as np

from .errors import InputError, install_hint
from .formats import escape_text
from .io.output import atomic_write, check_output
from .measures import parse_measure

__all__ = ["plot_results", "plot_runs", "plot_comparison", "save_plot", "figure_for", "plot_format", "PLOT_FORMATS"]

#: file formats of :func:`save_plot` and ``tierank --plot`` (by the file's extension)
PLOT_FORMATS = ("png", "svg", "pdf")

_MAX_TICK_LABELS = 40   # more queries than this: no query ids under the axis
_VALUE_COLOR = "#1f5fa8"
_RANGE_COLOR = "#e07b00"


def require_matplotlib() -> Any:
    """The matplotlib module, or an ImportError that says how to install it."""
    try:
        import matplotlib
    except ImportError:
        raise ImportError(f"plots need matplotlib: {install_hint('plot')}") from None
    return matplotlib


def _literal_texts(ax: Any) -> None:
    """Every text of ``ax`` shown as written, never as mathtext: run names, query ids and labels are
    data (``$`` in a file name such as ``c$x_{$.run`` made matplotlib fail on the figure). The texts
    themselves go through ``tierank.formats.escape_text`` (control and bidi characters as escapes)."""
    from matplotlib.text import Text

    for text in ax.findobj(Text):   # title, axis labels, tick labels, legend, annotations
        text.set_parse_math(False)


def _pyplot() -> Any:
    """matplotlib's pyplot, for a new figure (shown in notebooks and by ``plt.show()``)."""
    require_matplotlib()
    import matplotlib.pyplot as plt

    return plt


# ------------------------------------------------------------------------------------------ columns


def _column(results: Any, measure: str | None) -> str:
    """The column of ``results.per_query`` that ``measure`` names: the column itself, or any spelling
    of the same measure (``"P_5"`` for ``"P@5"``); None: the only numeric measure, or the first one."""
    numeric = [c for c in results.per_query.columns if not _is_text(results, c)]
    if measure is None:
        if not numeric:
            raise InputError("no numeric measure to plot (text measures such as RelString have no plot)")
        return numeric[0]
    measure = str(measure)
    column = measure if measure in results.per_query.columns else None
    if column is None:
        try:
            spelled = str(parse_measure(measure))
        except (InputError, ValueError):
            spelled = None
        if spelled in results.per_query.columns:
            column = spelled
    if column is None:
        raise InputError(f"measure {measure!r} was not evaluated; the results hold "
                         f"{', '.join(map(str, results.per_query.columns))}")
    if _is_text(results, column):
        raise InputError(f"{measure}: a text measure has no plot")
    return column


def _is_text(results: Any, column: str) -> bool:
    m = getattr(results, "measures", {}).get(column)
    return m is not None and m.is_text


def _aggregate_kind(results: Any, column: str) -> str:
    m = getattr(results, "measures", {}).get(column)
    return "mean" if m is None else m.aggregate


def _floats(frame: Any, column: str) -> np.ndarray | None:
    return None if frame is None else frame[column].to_numpy(dtype=np.float64)


def _sorted(values: np.ndarray, lower: np.ndarray | None, upper: np.ndarray | None) -> np.ndarray:
    """Positions ordered by value, then lower, then upper bound, then position (deterministic)."""
    keys = [np.arange(len(values))]
    if upper is not None:
        keys.append(upper)
    if lower is not None:
        keys.append(lower)
    keys.append(values)
    return np.lexsort(keys)


# --------------------------------------------------------------------------------- one run, per query


def plot_results(results: Any, measure: str | None = None, *, ax: Any = None, label: str | None = None,
                 title: str | None = None) -> Any:
    """Per query: the value of one measure and the exact range that the order of ties allows.

    Parameters
    ----------
    results : Results
        From :func:`tierank.evaluate` or :func:`tierank.evaluate_matrix`; with ``bounds=True`` each
        query gets a vertical line from its exact minimum to its exact maximum over all orderings of
        tied documents (without bounds only the values are drawn, and the title says so).
    measure : str, optional
        The measure to plot, as written or any spelling of it (``"P_5"``, ``"P@5"``). Default: the
        first numeric measure.
    ax : matplotlib.axes.Axes, optional
        Where to draw; default: a new pyplot figure.
    label : str, optional
        The measure's name on the axis (default: as evaluated).
    title : str, optional
        Default: the measure, the number of queries and the tie mode.

    Returns
    -------
    matplotlib.axes.Axes
        Queries are sorted by value (then by their bounds), one point each (the line with gid
        ``"values"``), the ranges a LineCollection with gid ``"ranges"`` (one segment from lower to
        upper per query); the aggregate is a dashed horizontal line (gid ``"aggregate"``), its range a
        band. Queries left out
        of the measure (NaN, ``no_relevant="skip"``) are not drawn. With at most 40 queries, their
        ids label the x axis.

    Examples
    --------
    >>> import tierank
    >>> res = tierank.evaluate_matrix([[1, 0, 0], [0, 1, 0]], scores=[[1, 1, 0], [3, 2, 1]],
    ...                               measures=["RR"], bounds=True)
    >>> from matplotlib.figure import Figure
    >>> ax = res.plot("RR", ax=Figure().add_subplot())
    >>> artists = {a.get_gid(): a for a in ax.get_children()}
    >>> artists["values"].get_ydata().tolist()     # sorted: query 0 is 0.75 (RR 1 or 1/2), query 1 is 0.5
    [0.5, 0.75]
    >>> [seg[:, 1].tolist() for seg in artists["ranges"].get_segments()]
    [[0.5, 0.5], [0.5, 1.0]]
    """
    column = _column(results, measure)
    label = label or column
    values = results.per_query[column].to_numpy(dtype=np.float64)
    lower, upper = _floats(results.lower, column), _floats(results.upper, column)
    keep = ~np.isnan(values)
    queries = np.asarray(results.per_query.index)[keep]
    values = values[keep]
    lower = None if lower is None else lower[keep]
    upper = None if upper is None else upper[keep]
    order = _sorted(values, lower, upper)
    if ax is None:
        _, ax = _pyplot().subplots(figsize=(8, 4.5), layout="constrained")
    x = np.arange(len(values), dtype=np.float64)
    n = len(values)
    width = 2.0 if n <= 100 else 1.0 if n <= 1000 else 0.5
    if lower is not None and upper is not None:
        ax.vlines(x, lower[order], upper[order], colors=_RANGE_COLOR, linewidth=width,
                  alpha=1.0 if n <= 200 else 0.5, label="exact [min, max] over tie orderings", gid="ranges")
    ax.plot(x, values[order], "o", color=_VALUE_COLOR, markersize=4 if n <= 200 else 2,
            label=f"value (ties={results.ties})", zorder=3, gid="values")
    _aggregate_lines(ax, results, column, values, lower, upper)
    if n <= _MAX_TICK_LABELS:
        ax.set_xticks(x, [escape_text(q) for q in queries[order]], rotation=90, fontsize="small")
    else:
        ax.set_xticks([])
    skipped = int((~keep).sum())
    ax.set_xlabel(f"{n} quer{'y' if n == 1 else 'ies'}, sorted by value"
                  + (f" ({skipped} left out: no value)" if skipped else ""))
    ax.set_ylabel(escape_text(label))
    if title is None:
        title = f"{escape_text(label)} per query, ties={results.ties}"
        if lower is None:
            title += "\n(no bounds: evaluate with bounds=True to see the range ties allow)"
    ax.set_title(title, fontsize="medium")
    if n:
        ax.set_xlim(-0.5 - 0.02 * n, n - 0.5 + 0.02 * n)
    ax.legend(loc="best", fontsize="small")
    _literal_texts(ax)
    return ax


def _aggregate_lines(ax: Any, results: Any, column: str, values: np.ndarray, lower: np.ndarray | None,
                     upper: np.ndarray | None) -> None:
    """The aggregate as a dashed line and its range over tie orderings as a band (counts, which are
    summed, are shown as their average per query)."""
    kind = _aggregate_kind(results, column)
    if len(values) == 0:
        return
    if kind == "sum":
        name, value = "average", float(values.mean())
        lo = None if lower is None else float(lower.mean())
        hi = None if upper is None else float(upper.mean())
    else:
        name = "geometric mean" if kind == "gm" else "mean"
        value = float(results.mean[column])
        lo = None if lower is None else float(results.mean_lower[column])
        hi = None if upper is None else float(results.mean_upper[column])
    text = f"{name} {value:.4f}" + ("" if lo is None else f" [{lo:.4f}, {hi:.4f}]")
    ax.axhline(value, color="#555555", linestyle="--", linewidth=1, label=text, gid="aggregate")
    if lo is not None and hi is not None and hi > lo:
        ax.axhspan(lo, hi, color="#888888", alpha=0.15, linewidth=0)


# ---------------------------------------------------------------------------------- several runs


def plot_runs(results: Mapping[str, Any], measure: str | None = None, *, baseline: str | None = None,
              comparison: Any = None, axes: Sequence[Any] | None = None, label: str | None = None) -> Any:
    """Several runs on one measure: means with the range ties allow, and per-query differences.

    Parameters
    ----------
    results : dict of run name to Results
        Two or more runs evaluated with the same measure; with ``bounds=True`` the means and the
        differences get their exact ranges over tie orderings.
    measure : str, optional
        As for :func:`plot_results`.
    baseline : str, optional
        The run the others are compared with, per query (default: the first).
    comparison : Comparison, optional
        From :func:`tierank.compare` on the same runs: each mean is marked with the letters of the runs
        it is significantly better than (ranx's notation), and the runs are named ``a``, ``b``, ...
    axes : pair of matplotlib Axes, optional
        Where to draw the means and the differences; default: a new pyplot figure.
    label : str, optional
        The measure's name on the axes.

    Returns
    -------
    matplotlib.figure.Figure
        Left axes: one point per run, its mean (the line with gid ``"means"``), with error bars from
        the mean of the per-query minima to the mean of the maxima (gid ``"mean-ranges"``). Right
        axes: for each other run, the per-query difference run minus baseline on the queries both
        have, sorted (gid ``"differences:<run>"``, the run named as ``tierank.formats.escape_text``
        shows it), and the exact range of the difference,
        ``[min_run - max_base, max_run - min_base]`` (the tie orderings of two runs are
        independent), as vertical lines (gid ``"difference-ranges:<run>"``).

    Examples
    --------
    >>> import tierank
    >>> rel = [[1, 0, 0], [0, 1, 0]]
    >>> runs = {"A": tierank.evaluate_matrix(rel, scores=[[1, 1, 0], [3, 2, 1]], measures="RR", bounds=True),
    ...         "B": tierank.evaluate_matrix(rel, scores=[[0, 1, 2], [1, 2, 3]], measures="RR", bounds=True)}
    >>> from matplotlib.figure import Figure
    >>> fig = Figure()
    >>> fig = plot_runs(runs, "RR", axes=fig.subplots(1, 2))
    >>> diff = {a.get_gid(): a for a in fig.axes[1].get_children()}["differences:B"]
    >>> [round(float(d), 4) for d in diff.get_ydata()]    # B - A: 1/3 - 3/4 and 1/2 - 1/2, sorted
    [-0.4167, 0.0]
    """
    names = list(results)
    if len(names) < 2:
        raise InputError("plotting runs side by side needs at least two runs")
    baseline = names[0] if baseline is None else baseline
    if baseline not in results:
        raise InputError(f"baseline {baseline!r} is not one of the runs: {', '.join(names)}")
    columns = {n: _column(results[n], measure) for n in names}
    label = label or columns[names[0]]
    if axes is None:
        _, axes = _pyplot().subplots(1, 2, figsize=(11, 4.5), width_ratios=[1, 2], layout="constrained")
    ax_means, ax_diff = axes
    _draw_means(ax_means, results, columns, label, comparison)
    _draw_differences(ax_diff, results, columns, baseline, label)
    _literal_texts(ax_means)
    _literal_texts(ax_diff)
    return ax_means.figure


def _draw_means(ax: Any, results: Mapping[str, Any], columns: dict, label: str, comparison: Any) -> None:
    names = list(results)
    x = np.arange(len(names), dtype=np.float64)
    means = np.array([float(results[n].mean[columns[n]]) for n in names])
    lows, highs = [], []
    for n in names:
        r, c = results[n], columns[n]
        has = r.lower is not None
        lows.append(float(r.mean_lower[c]) if has else np.nan)
        highs.append(float(r.mean_upper[c]) if has else np.nan)
    lo, hi = np.array(lows), np.array(highs)
    if not np.all(np.isnan(lo)):
        below = np.where(np.isnan(lo), 0.0, means - lo)
        above = np.where(np.isnan(hi), 0.0, hi - means)
        bars = ax.errorbar(x, means, yerr=np.vstack([below, above]), fmt="none", ecolor=_RANGE_COLOR,
                           elinewidth=2, capsize=6, label="range over tie orderings")
        bars.lines[2][0].set_gid("mean-ranges")
    ties = next(iter(results.values())).ties
    ax.plot(x, means, "o", color=_VALUE_COLOR, markersize=7, label=f"mean (ties={ties})", zorder=3, gid="means")
    letters = getattr(comparison, "letters", None) or {}
    any_wins = False
    for xi, n, m in zip(x, names, means):
        wins = ""
        if comparison is not None:
            wins = _wins(comparison, n, label, columns[n])
        any_wins |= bool(wins)
        text = f"{m:.4f}" + (f" > {wins}" if wins else "")
        ax.annotate(text, (xi, m), xytext=(8, 0), textcoords="offset points", va="center", fontsize="small")
    ticks = [f"{letters[n]}: {escape_text(n)}" if n in letters else escape_text(n) for n in names]
    ax.set_xticks(x, ticks, rotation=30 if max(len(t) for t in ticks) > 8 else 0, ha="right"
                  if max(len(t) for t in ticks) > 8 else "center", fontsize="small")
    ax.set_xlim(-0.5, len(names) - 0.2)
    ax.set_ylabel(escape_text(label))
    ax.set_title(f"{escape_text(label)}: mean per run", fontsize="medium")
    if any_wins:
        ax.set_xlabel("> x: significantly better than run x", fontsize="small")
    ax.legend(loc="best", fontsize="small")


def _wins(comparison: Any, run: str, label: str, column: str) -> str:
    columns = comparison.means.columns if hasattr(comparison, "means") else ()
    for key in (label, column):
        if key in columns:
            return comparison.wins(run, key)
    return ""


def _draw_differences(ax: Any, results: Mapping[str, Any], columns: dict, baseline: str, label: str) -> None:
    base = results[baseline]
    bc = columns[baseline]
    others = [n for n in results if n != baseline]
    colors = ["#1f5fa8", "#2a9d4b", "#c0392b", "#8e44ad", "#7f6000", "#16a085"]
    longest = 0
    for k, n in enumerate(others):
        r, c = results[n], columns[n]
        common = r.per_query.index.intersection(base.per_query.index, sort=False)

        def on_common(frame: Any, column: str) -> np.ndarray:
            return frame[column].reindex(common).to_numpy(np.float64)
        v = on_common(r.per_query, c) - on_common(base.per_query, bc)
        lo = hi = None
        if r.lower is not None and base.lower is not None:
            lo = on_common(r.lower, c) - on_common(base.upper, bc)
            hi = on_common(r.upper, c) - on_common(base.lower, bc)
        keep = ~np.isnan(v)
        v = v[keep]
        lo = None if lo is None else lo[keep]
        hi = None if hi is None else hi[keep]
        order = _sorted(v, lo, hi)
        x = np.arange(len(v), dtype=np.float64)
        color = colors[k % len(colors)]
        if lo is not None and hi is not None:
            ax.vlines(x, lo[order], hi[order], colors=color, alpha=0.35, linewidth=2,
                      label="exact range over tie orderings" if k == 0 else None,
                      gid=f"difference-ranges:{escape_text(n)}")
        ax.plot(x, v[order], "o", color=color, markersize=4 if len(v) <= 200 else 2,
                label=f"{escape_text(n)} - {escape_text(baseline)}", zorder=3, gid=f"differences:{escape_text(n)}")
        longest = max(longest, len(v))
    ax.axhline(0.0, color="#555555", linewidth=1, gid="zero")
    ax.set_xticks([])
    ax.set_xlabel(f"{longest} quer{'y' if longest == 1 else 'ies'} in both runs, sorted by difference")
    if longest:
        ax.set_xlim(-0.5 - 0.02 * longest, longest - 0.5 + 0.02 * longest)
    ax.set_ylabel(f"difference in {escape_text(label)}")
    ax.set_title(f"{escape_text(label)}: per-query difference to {escape_text(baseline)}", fontsize="medium")
    ax.legend(loc="best", fontsize="small")


class _ComparedRun:
    """One run of a :class:`~tierank.Comparison`, shaped as the plots read Results (no bounds)."""

    def __init__(self, comparison: Any, label: str, run: str) -> None:
        self.per_query = comparison.per_query[label][[run]].rename(columns={run: label})
        self.lower = self.upper = None
        self.mean = {label: float(comparison.means.loc[run, label])}
        self.mean_lower = self.mean_upper = None
        self.ties = comparison.ties
        self.measures: dict = {}


def plot_comparison(comparison: Any, measure: str | None = None, results: Mapping[str, Any] | None = None, *,
                    baseline: str | None = None, axes: Sequence[Any] | None = None) -> Any:
    """:meth:`tierank.Comparison.plot`: :func:`plot_runs` with the comparison's significance letters.

    Without ``results``, the comparison's own per-query values (the queries every run has) are drawn,
    without ranges; with the runs' Results (``bounds=True``), their means and ranges.

    Examples
    --------
    >>> import tierank
    >>> qrels = {q: {"rel": 1} for q in ("q1", "q2", "q3")}
    >>> a = {q: {"rel": 2.0, "other": 1.0} for q in qrels}
    >>> b = {q: {"rel": 1.0, "other": 1.0} for q in qrels}
    >>> cmp = tierank.compare(qrels, {"A": a, "B": b}, ["RR"])
    >>> from matplotlib.figure import Figure
    >>> fig = cmp.plot("RR", axes=Figure().subplots(1, 2))
    >>> fig.axes[1].lines[0].get_ydata().tolist()     # B - A: RR 3/4 (tied with "other") - 1
    [-0.25, -0.25, -0.25]
    """
    columns = list(map(str, comparison.means.columns))
    label = columns[0] if measure is None else str(measure)
    if label not in columns:
        raise InputError(f"measure {label!r} is not in the comparison: {', '.join(columns)}")
    if results is None:
        results = {run: _ComparedRun(comparison, label, run) for run in comparison.means.index}
    return plot_runs(results, label, baseline=baseline, comparison=comparison, axes=axes, label=label)


# ------------------------------------------------------------------------------------------- files


def plot_format(path: str | os.PathLike) -> str:
    """The format of a plot file from its extension (``png``, ``svg`` or ``pdf``), else an InputError."""
    ext = os.path.splitext(os.fspath(path))[1].lower().lstrip(".")
    if ext not in PLOT_FORMATS:
        raise InputError(f"{os.fspath(path)}: a plot is written as {', '.join(PLOT_FORMATS)}; name the file "
                         f"with one of these extensions")
    return ext


def figure_for(results: Mapping[str, Any], measures: Sequence[tuple[str, str]], *,
               comparison: Any = None) -> Any:
    """A bare Figure (no pyplot, no window) with one plot per measure: per query for one run, means and
    differences for several. ``measures``: pairs (label, column) to plot."""
    require_matplotlib()
    from matplotlib.figure import Figure

    names = list(results)
    n = len(measures)
    if n == 0:
        raise InputError("no numeric measure to plot")
    if len(names) == 1:
        cols = 1 if n == 1 else 2
        rows = -(-n // cols)
        fig = Figure(figsize=(7.5 * cols, 4.2 * rows), layout="constrained")
        axes = np.atleast_1d(fig.subplots(rows, cols, squeeze=False).ravel())
        only = results[names[0]]
        for ax, (label, column) in zip(axes, measures):
            plot_results(only, column, ax=ax, label=label)
        for ax in axes[n:]:
            ax.set_visible(False)
        return fig
    fig = Figure(figsize=(12, 4.5 * n), layout="constrained")
    grid = fig.subplots(n, 2, squeeze=False, width_ratios=[1, 2])
    for (label, column), pair in zip(measures, grid):
        plot_runs(results, column, comparison=comparison, axes=pair, label=label)
    return fig


def save_plot(path: str | os.PathLike, results: Mapping[str, Any], measures: Sequence[tuple[str, str]], *,
              comparison: Any = None, dpi: int = 110) -> None:
    """Write :func:`figure_for`'s figure to ``path`` (png, svg or pdf, by its extension).

    The same results give the same file, byte for byte (no date in svg and pdf files).

    Examples
    --------
    >>> import os, tempfile, tierank
    >>> res = tierank.evaluate_matrix([[1, 0, 0]], scores=[[1, 1, 0]], measures=["RR"], bounds=True)
    >>> path = os.path.join(tempfile.mkdtemp(), "rr.svg")
    >>> save_plot(path, {"run": res}, [("RR", "RR")])
    >>> with open(path) as f:
    ...     f.read(5)
    '<?xml'
    """
    fmt = plot_format(path)
    check_output(path)   # before drawing: a missing directory is said first
    matplotlib = require_matplotlib()
    fig = figure_for(results, measures, comparison=comparison)
    # the same ids in every svg file; the file written whole or not at all
    with matplotlib.rc_context({"svg.hashsalt": "tierank"}), \
            atomic_write(path, "wb") as fh:
        fig.savefig(fh, format=fmt, dpi=dpi, metadata=_metadata(fmt))


def _metadata(fmt: str) -> dict | None:
    """No creation date in svg / pdf files, so that the same results give the same file."""
    if fmt == "svg":
        return {"Date": None}
    if fmt == "pdf":
        return {"CreationDate": None}
    return None
