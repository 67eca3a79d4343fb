"""Comparing runs: side-by-side means and paired significance tests over queries, as ranx's ``compare``.

Each pair of runs is tested on every measure, over the queries both runs have (paired): a paired
t-test, a randomisation (sign-flip permutation) test or a paired bootstrap test. The p-values of one
measure are corrected for multiple testing over the pairs (Holm by default). A run's mean is marked
with the letters of the runs it is significantly better than, as ranx marks them.

scipy is needed (``pip install tierank[stats]``); it is imported only here, only when tests run.
"""

from __future__ import annotations

import string
import warnings
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Callable, Iterable, Mapping, Sequence

import numpy as np

from .api import evaluate
from .errors import InputError, TierankWarning, install_hint, param_text
from .formats import (format_value, latex_escape, latex_table, markdown_escape, markdown_table, sorted_ids,
                      text_table)
from .plot import plot_comparison
from .results import aggregate

if TYPE_CHECKING:
    import pandas as pd

__all__ = ["compare", "Comparison", "paired_test", "holm", "TESTS"]

TESTS = ("t", "permutation", "bootstrap")
_TEST_ALIASES = {"t": "t", "student": "t", "ttest": "t", "t-test": "t", "permutation": "permutation",
                 "randomization": "permutation", "randomisation": "permutation", "fisher": "permutation",
                 "bootstrap": "bootstrap"}
#: each test and each multiple-testing correction as the tables' notes name them
TEST_NAMES = {"t": "paired t-test", "permutation": "paired randomisation (permutation) test",
              "bootstrap": "paired bootstrap test"}
CORRECTION_NAMES = {"holm": "Holm-corrected", "bonferroni": "Bonferroni-corrected", "none": "uncorrected"}
_SUPERSCRIPT = dict(zip(string.ascii_lowercase, "ᵃᵇᶜᵈᵉᶠᵍʰⁱʲᵏˡᵐⁿᵒᵖ𐞥ʳˢᵗᵘᵛʷˣʸᶻ"))
#: every non-ASCII character a comparison table may print (besides run names and query ids)
SUPERSCRIPTS = "".join(_SUPERSCRIPT.values())


def _scipy_stats() -> Any:
    try:
        from scipy import stats
    except ImportError:
        raise ImportError(f"significance tests need scipy: {install_hint('stats')}") from None
    return stats


def _check_test(test: str) -> str:
    key = _TEST_ALIASES.get(str(test).lower())
    if key is None:
        raise InputError(f"test={test!r}: use one of {', '.join(TESTS)} (or student, randomization, fisher)")
    return key


# the most resamples of the randomised tests: beyond, a test would run for hours (or forever)
MAX_RESAMPLES = 10 ** 9


def _check_resamples(n_resamples: Any) -> int:
    if (isinstance(n_resamples, bool) or not isinstance(n_resamples, (int, np.integer))
            or not 1 <= n_resamples <= MAX_RESAMPLES):
        raise InputError(f"{param_text('n_resamples', n_resamples)}: the number of resamples must be an integer "
                         f"from 1 to {MAX_RESAMPLES:,}")
    return int(n_resamples)


def _rng(seed: Any) -> np.random.Generator:
    """The random generator of the randomised tests; any integer seeds it (numpy takes non-negative seeds
    only: a negative one seeds it with [1, -seed])."""
    if isinstance(seed, bool) or not isinstance(seed, (int, np.integer)):
        raise InputError(f"{param_text('seed', seed)}: the seed must be an integer")
    seed = int(seed)
    return np.random.default_rng(seed if seed >= 0 else [1, -seed])


def paired_test(a: Sequence[float], b: Sequence[float], test: str = "t", *, n_resamples: int = 10000,
                seed: int = 0) -> float:
    """Two-sided p-value of a paired test that runs ``a`` and ``b`` have the same mean.

    Parameters
    ----------
    a, b : array-like of float
        Per-query values of two runs, in the same query order.
    test : {"t", "permutation", "bootstrap"}
        ``"t"``: paired t-test (scipy ``ttest_rel``). ``"permutation"``: randomisation test flipping the
        sign of each query's difference (exact when ``2**n_queries <= n_resamples``; scipy
        ``permutation_test``). ``"bootstrap"``: the differences are shifted to mean 0 and resampled
        with replacement; p is the share of resampled means at least as far from 0 as the observed
        one, counting the observed sample: ``(count + 1) / (n_resamples + 1)``.
    n_resamples : int, default=10000
    seed : int, default=0
        Seed of the randomised tests (reruns give the same p-values).

    Returns
    -------
    float
        The p-value; 1.0 when every difference is 0.

    Examples
    --------
    Three queries, run A better by 0.1 on each: the exact randomisation test sees 2 sign patterns out
    of 8 as extreme as that.

    >>> paired_test([0.5, 0.6, 0.7], [0.4, 0.5, 0.6], "permutation")
    0.25
    """
    x = np.asarray(a, dtype=np.float64)
    y = np.asarray(b, dtype=np.float64)
    if x.shape != y.shape or x.ndim != 1:
        raise InputError("paired tests need two 1-D arrays of the same length")
    test = _check_test(test)
    n_resamples = _check_resamples(n_resamples)
    rng = _rng(seed)
    d = x - y
    n = len(d)
    if n == 0:
        raise InputError("no query to test on")
    scale = max(1.0, float(np.max(np.abs(x), initial=0)), float(np.max(np.abs(y), initial=0)))
    if np.all(np.abs(d) <= 1e-12 * scale):
        return 1.0
    if test == "t":
        if n < 2:
            return float("nan")
        if np.ptp(d) <= 1e-12 * scale:  # every difference the same, not 0: infinitely significant
            return 0.0
        stats = _scipy_stats()
        return float(stats.ttest_rel(x, y).pvalue)
    if test == "permutation":
        stats = _scipy_stats()
        def mean_difference(u: np.ndarray, v: np.ndarray, axis: int = -1) -> np.ndarray:
            return np.mean(u - v, axis=axis)

        res = stats.permutation_test((x, y), mean_difference, vectorized=True,
                                     permutation_type="samples", n_resamples=n_resamples,
                                     alternative="two-sided", random_state=rng)
        return float(min(1.0, res.pvalue))
    # bootstrap (Efron & Tibshirani's paired test, as in Sakai's IR evaluation papers)
    _scipy_stats()  # same requirement for every test
    observed = abs(d.mean())
    centred = d - d.mean()
    count = 0
    block = max(1, 2_000_000 // n)
    done = 0
    while done < n_resamples:
        size = min(block, n_resamples - done)
        idx = rng.integers(0, n, size=(size, n))
        means = centred[idx].mean(axis=1)
        count += int(np.sum(np.abs(means) >= observed - 1e-12 * scale))
        done += size
    return (count + 1) / (n_resamples + 1)


def holm(p_values: Sequence[float] | np.ndarray) -> np.ndarray:
    """Holm's step-down adjusted p-values (controls the family-wise error rate).

    Examples
    --------
    >>> holm([0.01, 0.04, 0.03]).tolist()
    [0.03, 0.06, 0.06]
    """
    p = np.asarray(p_values, dtype=np.float64)
    m = len(p)
    order = np.argsort(p, kind="stable")
    adjusted = np.empty(m)
    running = 0.0
    for rank, i in enumerate(order):
        running = max(running, min(1.0, (m - rank) * p[i]))
        adjusted[i] = running
    return adjusted


def _correct(p: np.ndarray, correction: str) -> np.ndarray:
    if correction == "holm":
        return holm(p)
    if correction == "bonferroni":
        return np.minimum(1.0, p * len(p))
    return p.copy()


@dataclass(repr=False)   # its own (each generated method is compiled at import)
class Comparison:
    """What :func:`compare` returns.

    Attributes
    ----------
    means : pandas.DataFrame
        Runs (rows, in the order given) by measures (columns): the mean over the compared queries.
    per_query : dict of str to pandas.DataFrame
        For each measure, queries (rows) by runs (columns): the values tested.
    tests : pandas.DataFrame
        One row per measure and pair of runs: ``measure, run_a, run_b, mean_a, mean_b, diff, p_value,
        p_adjusted, significant, better`` (the name of the better run when significant, else "").
    letters : dict of str to str
        The letter of each run (a, b, c, ...), used to mark significant wins.
    test, correction : str
    alpha : float
    ties : str
    counts : frozenset of str
        The measures that count (num_ret...: ``MeasureFamily.is_count``): their sums are shown, as
        integers, and never tested (a difference of counts is no evidence for either run).
    """

    means: pd.DataFrame
    per_query: dict
    tests: pd.DataFrame
    letters: dict
    test: str
    correction: str
    alpha: float
    ties: str
    counts: frozenset = frozenset()

    @classmethod
    def from_results(cls, results: Mapping[str, Any], measures: Mapping[str, str], *, test: str = "t",
                     alpha: float = 0.05, correction: str = "holm", n_resamples: int = 10000,
                     seed: int = 0) -> "Comparison":
        """Build a comparison from :class:`~tierank.Results` of each run.

        ``measures`` maps the label to show to the column of ``Results.per_query``.
        """
        import pandas as pd

        test = _check_test(test)
        if correction not in CORRECTION_NAMES:
            raise InputError(f"correction={correction!r}: use 'holm', 'bonferroni' or 'none'")
        if not 0 < alpha < 1:
            raise InputError(f"alpha={alpha!r} must be between 0 and 1")
        names = list(results)
        if len(names) < 2:
            raise InputError("comparing needs at least two runs")
        for label, column in measures.items():
            for res in results.values():
                m = getattr(res, "measures", {}).get(column)
                if m is not None and m.is_text:
                    raise InputError(f"{label}: {m.name} is text, not a number; there is nothing to compare")
        if len(set(names)) < len(names):
            raise InputError("two runs have the same name")
        indexes = [results[n].per_query.index for n in names]
        common = union = indexes[0]
        for ix in indexes[1:]:
            common, union = common.intersection(ix, sort=False), union.union(ix, sort=False)
        if len(common) == 0:
            raise InputError("the runs have no query in common: nothing to compare")
        if len(common) < len(union):
            n_out = len(union) - len(common)
            warnings.warn(f"{n_out} quer{'y is' if n_out == 1 else 'ies are'} not evaluated in every run and "
                          f"{'is' if n_out == 1 else 'are'} left out of the comparison "
                          f"({param_text('missing', 'zero')} scores missing queries 0)", TierankWarning, stacklevel=2)
        common = pd.Index(sorted_ids(common), name=common.name)
        per_query = {}
        means = {}
        for label, column in measures.items():
            frame = pd.DataFrame({n: results[n].per_query[column].reindex(common).to_numpy(dtype=np.float64)
                                  for n in names}, index=common)
            # NaN: a query left out of this measure (no_relevant='skip'): out of every run's mean and test
            frame = frame.dropna()
            if frame.empty:
                raise InputError(f"measure {label!r}: no query has a value in every run (NaN values, e.g. "
                                 "no_relevant='skip', are left out): nothing to compare")
            per_query[label] = frame
            means[label] = pd.Series({n: _aggregate_column(results[n], column, frame[n]) for n in names})
        means_frame = pd.DataFrame(means).loc[names]
        means_frame.index.name = "run"
        counts = frozenset(label for label, column in measures.items()
                           if any(_is_count(res, column) for res in results.values()))
        rows = []
        pairs = [(i, j) for i in range(len(names)) for j in range(i + 1, len(names))]
        for label in measures:
            if label in counts:
                continue
            frame = per_query[label]
            p = np.array([paired_test(frame[names[i]].to_numpy(), frame[names[j]].to_numpy(), test,
                                      n_resamples=n_resamples, seed=seed) for i, j in pairs])
            finite = ~np.isnan(p)
            adjusted = np.full(len(p), np.nan)
            adjusted[finite] = _correct(p[finite], correction)
            for (i, j), pv, pa in zip(pairs, p, adjusted):
                ma, mb = float(means_frame.loc[names[i], label]), float(means_frame.loc[names[j], label])
                significant = bool(pa <= alpha) if not np.isnan(pa) else False
                better = "" if not significant or ma == mb else (names[i] if ma > mb else names[j])
                rows.append({"measure": label, "run_a": names[i], "run_b": names[j], "mean_a": ma, "mean_b": mb,
                             "diff": ma - mb, "p_value": float(pv), "p_adjusted": float(pa),
                             "significant": significant, "better": better})
        tests = pd.DataFrame(rows, columns=["measure", "run_a", "run_b", "mean_a", "mean_b", "diff", "p_value",
                                            "p_adjusted", "significant", "better"])
        letters = {n: _letter(i) for i, n in enumerate(names)}
        ties = getattr(results[names[0]], "ties", "")
        return cls(means=means_frame, per_query=per_query, tests=tests, letters=letters, test=test,
                   correction=correction, alpha=alpha, ties=ties, counts=counts)

    # ------------------------------------------------------------------------------- presentation

    def wins(self, run: str, measure: str) -> str:
        """Letters of the runs that ``run`` is significantly better than on ``measure`` (e.g. ``"bc"``)."""
        t = self.tests[(self.tests["measure"] == measure) & (self.tests["better"] == run)]
        losers = [b if a == run else a for a, b in zip(t["run_a"], t["run_b"])]
        return "".join(sorted(self.letters[x] for x in losers))

    def mean_text(self, run: str, measure: str, digits: int = 4) -> str:
        """The mean of ``run`` on ``measure`` as the tables print it: ``digits`` decimals, a count as an
        integer."""
        return format_value(float(self.means.loc[run, measure]), measure in self.counts, digits)

    def _rows(self, digits: int, mark: Any) -> tuple[list[str], list[list[str]]]:
        header = ["", "run"] + list(self.means.columns)
        rows = []
        for run in self.means.index:
            cells = [self.letters[run], str(run)]
            for measure in self.means.columns:
                cells.append(self.mean_text(run, measure, digits) + mark(self.wins(run, measure)))
            rows.append(cells)
        return header, rows

    def _note(self) -> str:
        n = len(next(iter(self.per_query.values()))) if self.per_query else 0
        counts = (f"; counts ({', '.join(c for c in self.means.columns if c in self.counts)}) are summed, "
                  "not tested") if self.counts else ""
        return (f"{TEST_NAMES[self.test]}, {CORRECTION_NAMES[self.correction]} p <= {self.alpha:g}, over {n} "
                f"quer{'y' if n == 1 else 'ies'}, ties={self.ties}; letters mark the runs a run is "
                f"significantly better than{counts}")

    def _pairs_rows(self, digits: int) -> tuple[list[str], list[list[str]]]:
        header = ["measure", "runs", "diff", "p", "p adjusted", "significant"]
        rows = []
        for r in self.tests.itertuples():
            rows.append([r.measure, f"{self.letters[r.run_a]} - {self.letters[r.run_b]}", f"{r.diff:+.{digits}f}",
                         p_value_text(r.p_value), p_value_text(r.p_adjusted), "yes" if r.significant else "no"])
        return header, rows

    def to_string(self, digits: int = 4, ascii: bool = False) -> str:
        """The comparison as aligned text: means with superscript letters (``ascii=True``: ``^ab``, for
        streams that cannot encode superscripts), then every pair's p-values."""
        if ascii:
            header, rows = self._rows(digits, lambda w: f"^{w}" if w else "")
        else:
            header, rows = self._rows(digits, lambda w: "".join(_SUPERSCRIPT[c] for c in w))
        ph, pr = self._pairs_rows(digits)
        return (text_table(header, rows, "ll" + "r" * (len(header) - 2)) + "\n" + self._note() + "\n\n"
                + text_table(ph, pr, "llrrrl") + "\n")

    def to_markdown(self, digits: int = 4) -> str:
        """The comparison as Markdown tables (significance letters as ``<sup>``)."""
        header, rows = self._rows(digits, lambda w: f"<sup>{w}</sup>" if w else "")
        header = [markdown_escape(c) for c in header]
        rows = [[markdown_escape(c) if k < 2 else c for k, c in enumerate(r)] for r in rows]   # <sup> kept
        ph, pr = self._pairs_rows(digits)
        return (markdown_table(header, rows, "ll" + "r" * (len(header) - 2), raw=True) + "\n\n" + self._note()
                + "\n\n" + markdown_table(ph, pr, "llrrrl") + "\n")

    def to_latex(self, digits: int = 4, caption: str | None = None) -> str:
        """The comparison as a LaTeX table (booktabs), significance letters as superscripts, as ranx's
        ``Report.to_latex``."""
        header, rows = self._rows(digits, lambda w: f"$^{{{w}}}$" if w else "")
        rows = [[latex_escape(c) if k < 2 else c for k, c in enumerate(r)] for r in rows]
        return latex_table(header, rows, "ll" + "r" * (len(header) - 2),
                           caption=caption or self._note(), raw=True) + "\n"

    def to_dict(self) -> dict:
        """Plain data: means, letters and the tests (for JSON)."""
        return {"test": self.test, "correction": self.correction, "alpha": self.alpha, "ties": self.ties,
                "queries": [str(q) for q in next(iter(self.per_query.values())).index] if self.per_query else [],
                "letters": self.letters,
                "means": {str(r): {m: float(self.means.loc[r, m]) for m in self.means.columns}
                          for r in self.means.index},
                "tests": [{k: (v.item() if hasattr(v, "item") else v) for k, v in row.items()}
                          for row in self.tests.to_dict(orient="records")]}

    def render(self, fmt: str = "table", digits: int = 4, ascii: bool = False) -> str:
        """Render in one of ``table``, ``markdown``, ``latex``, ``json``, ``csv`` (the tests table).

        ``ascii=True``: the table marks significance with ``^ab`` instead of superscript letters (the
        other formats are ASCII already, but for the run names and query ids).
        """
        if fmt == "table":
            return self.to_string(digits, ascii=ascii)
        if fmt == "markdown":
            return self.to_markdown(digits)
        if fmt == "latex":
            return self.to_latex(digits)
        if fmt == "json":
            import json

            return json.dumps(self.to_dict(), indent=2) + "\n"
        if fmt == "csv":
            return self.tests.to_csv(index=False, lineterminator="\n")
        raise InputError(f"a comparison cannot be printed as {fmt!r}; use table, markdown, latex, json or csv")

    def plot(self, measure: str | None = None, results: Mapping[str, Any] | None = None, *,
             baseline: str | None = None, axes: Any = None) -> Any:
        """Means (with each run's significance letters) and per-query differences to ``baseline``.

        Parameters
        ----------
        measure : str, optional
            A measure of the comparison (default: the first).
        results : dict of run name to Results, optional
            The runs' :class:`~tierank.Results`; evaluated with ``bounds=True`` they add the range
            that ties allow to the means and the differences. Without them, the comparison's own
            per-query values are drawn (no ranges).
        baseline : str, optional
            Default: the first run.
        axes : pair of matplotlib Axes, optional
            Default: a new pyplot figure.

        Returns
        -------
        matplotlib.figure.Figure
            See :func:`tierank.plot.plot_runs` (needs matplotlib: ``pip install tierank[plot]``).
        """
        return plot_comparison(self, measure, results, baseline=baseline, axes=axes)

    def __str__(self) -> str:
        return self.to_string()

    def __repr__(self) -> str:
        return self.to_string()


def p_value_text(p: float) -> str:
    """A p-value as the tables print it: four decimals, ``<0.0001`` below, ``nan`` for none."""
    if np.isnan(p):
        return "nan"
    return "<0.0001" if p < 1e-4 else f"{p:.4f}"


def _letter(i: int) -> str:
    letters = string.ascii_lowercase
    return letters[i] if i < 26 else letters[i // 26 - 1] + letters[i % 26]


def _aggregate_column(results: Any, column: str, values: pd.Series) -> float:
    """The run's aggregate of these per-query values, as its Results aggregates them (mean, sum, or
    trec_eval's geometric mean for GMAP)."""
    import pandas as pd

    measure = getattr(results, "measures", {}).get(column)
    if measure is None:
        return float(values.mean())
    value = aggregate(pd.DataFrame({column: values.to_numpy()}), {column: measure})[column]
    return float("nan") if value is None else value   # None: text measures, which are never compared


def _is_count(results: Any, column: str) -> bool:
    m = results.measures.get(column) if hasattr(results, "measures") else None
    return m is not None and m.is_count


def compare(qrels: Any, runs: Mapping[str, Any] | Sequence[Any], measures: str | Iterable[str], *,
            ties: str = "expected", test: str = "t", alpha: float = 0.05, correction: str = "holm",
            n_resamples: int = 10000, seed: int = 0, missing: str = "skip", no_relevant: str = "zero",
            trec_eval_version: int = 10) -> Comparison:
    """Compare runs on the same judgments with paired significance tests over queries.

    Parameters
    ----------
    qrels : dict, pandas.DataFrame or path
        As for :func:`tierank.evaluate`.
    runs : dict of name to run, or list of runs
        Two or more runs (dicts, DataFrames or TREC file paths). A list is named by file names
        (paths) or ``run_1, run_2, ...``.
    measures : str or list of str
        Measure strings, as for :func:`tierank.evaluate`.
    ties : str, default="expected"
        Tie mode of every evaluation.
    test : {"t", "permutation", "bootstrap"}, default="t"
        Paired t-test, randomisation (sign-flip permutation) test, or paired bootstrap test; see
        :func:`paired_test`.
    alpha : float, default=0.05
        Significance level, applied to the corrected p-values.
    correction : {"holm", "bonferroni", "none"}, default="holm"
        Multiple-testing correction over the pairs of runs, per measure.
    n_resamples : int, default=10000
        Resamples of the permutation and bootstrap tests.
    seed : int, default=0
        Seed of the randomised tests (and of ``ties="random"``).
    missing : {"skip", "zero"}, default="skip"
        As for :func:`tierank.evaluate`. Only queries evaluated in every run are compared.
    no_relevant, trec_eval_version
        As for :func:`tierank.evaluate`; with ``no_relevant="skip"`` a query left out of a measure (NaN)
        in any run is left out of that measure's comparison.

    Returns
    -------
    Comparison
        ``.means``, ``.tests`` (p-values, corrected p-values, which run is better), ``.letters``;
        ``str()``, ``.to_markdown()``, ``.to_latex()`` print ranx-style tables.

    Examples
    --------
    Run A beats run B by 0.5 in RR on each of three queries; the exact randomisation test gives
    p = 2/8:

    >>> from tierank.comparison import compare      # also tierank.compare
    >>> qrels = {q: {"rel": 1} for q in ("q1", "q2", "q3")}
    >>> a = {q: {"rel": 2.0, "other": 1.0} for q in qrels}
    >>> b = {q: {"rel": 1.0, "other": 2.0} for q in qrels}
    >>> cmp = compare(qrels, {"A": a, "B": b}, ["RR"], test="permutation")
    >>> cmp.means["RR"].tolist()
    [1.0, 0.5]
    >>> float(cmp.tests.loc[0, "p_value"])
    0.25
    """
    if isinstance(runs, Mapping):
        named = dict(runs)
    else:
        runs = list(runs)
        named = {}
        for i, r in enumerate(runs):
            name = str(r) if isinstance(r, (str, bytes)) or hasattr(r, "__fspath__") else f"run_{i + 1}"
            if name in named:
                name = f"{name} ({i + 1})"
            named[name] = r
    if isinstance(measures, str):
        measures = [measures]
    measures = list(measures)
    _check_test(test)
    results = {name: evaluate(qrels, run, measures, ties=ties, missing=missing, seed=seed,
                              no_relevant=no_relevant, trec_eval_version=trec_eval_version)
               for name, run in named.items()}
    return Comparison.from_results(results, {str(m): str(m) for m in measures}, test=test, alpha=alpha, correction=correction,
                                   n_resamples=n_resamples, seed=seed)


def compare_collected(evaluate: Callable[..., Any], qrels: Any, runs: Mapping[str, Any], measures: Any, *,
                      test: str, alpha: float, correction: str, n_resamples: int, seed: int,
                      **options: Any) -> Any:
    """``compare`` of an engine: each run evaluated by the engine's ``evaluate``, the paired tests on the
    collected per-query values (:meth:`tierank.Comparison.from_results`)."""
    measures = [measures] if isinstance(measures, str) else list(measures)
    results = {name: evaluate(qrels, run, measures, seed=seed, **options).collect() for name, run in runs.items()}
    return Comparison.from_results(results, {m: m for m in measures}, test=test, alpha=alpha,
                                   correction=correction, n_resamples=n_resamples, seed=seed)
