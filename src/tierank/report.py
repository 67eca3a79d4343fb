"""The tie report: how much the order of tied documents moves each measure.

When two tools disagree on the same run, ties are the usual reason: each tool orders tied documents
its own way. The report gives, per measure, the exact expected value over all orderings of tied
documents, the range [min, max] over those orderings, what trec_eval's tie-break (document id
descending) gives, how many queries change with the order of their ties, and what share of the
retrieved documents sits in ties that can change the measure.
"""

from __future__ import annotations

from dataclasses import dataclass, field, replace
from typing import TYPE_CHECKING, Any, Iterable, Mapping, Sequence

import numpy as np

from .engine.core import QueryValues, evaluate_lists, prepare_lists, preference_of, to_results
from .engine.options import Options
from .engine.streamed import evaluate_file
from .errors import InputError
from .formats import format_percent, render_table
from .io.source import is_run_file
from .io.source import TextInput
from .measures import Measure, parse_measure
from .results import Results, aggregate
from .ties.groups import TieStats
from .ties.policy import TieOrderings

if TYPE_CHECKING:
    import pandas as pd

__all__ = ["tie_report", "TieReport", "render_reports"]

_COLUMNS = ["expected", "min", "max", "trec_eval", "queries_changed", "queries", "docs_share"]


@dataclass(repr=False)   # its own (each generated method is compiled at import)
class TieReport:
    """What :func:`tie_report` returns.

    Attributes
    ----------
    name : str
        The run's name.
    table : pandas.DataFrame
        One row per measure (index: the measure as written), columns:

        ``expected``
            mean over queries of the exact expected value over all orderings of tied documents;
        ``min``, ``max``
            mean over queries of the exact minimum / maximum over those orderings;
        ``trec_eval``
            the value with trec_eval's tie-break (document id descending);
        ``queries_changed``, ``queries``
            queries whose value depends on the order of their ties, and queries evaluated;
        ``docs_share``
            share of the retrieved documents that sit in a tie that can change the measure (see
            :func:`tie_report`).
    n_retrieved : int
        Retrieved documents of the evaluated queries.
    n_tied : int
        Those that share their score with another document of the same query.
    n_ties : int
        Ties: groups of two or more documents of one query with equal scores.
    """

    name: str
    table: pd.DataFrame
    n_retrieved: int
    n_tied: int
    n_ties: int
    counts: set = field(default_factory=set, repr=False)

    @property
    def n_queries(self) -> int:
        return int(self.table["queries"].iloc[0]) if len(self.table) else 0

    def headline(self) -> str:
        share = self.n_tied / self.n_retrieved if self.n_retrieved else 0.0
        q = self.n_queries
        return (f"{self.name}: {q} quer{'y' if q == 1 else 'ies'}, {self.n_retrieved} retrieved documents, "
                f"{self.n_tied} ({format_percent(share)}) in {self.n_ties} tie{'' if self.n_ties == 1 else 's'}")

    def _rows(self, digits: int) -> tuple[list[str], list[list[str]]]:
        header = ["measure", "expected", "min", "max", "trec_eval", "queries", "tied docs"]
        rows = []
        for label, r in self.table.iterrows():
            count = label in self.counts

            def v(x: float) -> str:
                return str(int(x)) if count and float(x).is_integer() else f"{x:.{digits}f}"
            rows.append([str(label), v(r["expected"]), v(r["min"]), v(r["max"]), v(r["trec_eval"]),
                         f"{int(r['queries_changed'])}/{int(r['queries'])}", format_percent(r["docs_share"])])
        return header, rows

    def to_string(self, digits: int = 4) -> str:
        """The report as aligned text, under a one-line summary of the run's ties."""
        return self._render("table", digits)

    def to_markdown(self, digits: int = 4) -> str:
        """The report as a Markdown table."""
        return self._render("markdown", digits)

    def to_latex(self, digits: int = 4) -> str:
        """The report as a LaTeX table (booktabs)."""
        return self._render("latex", digits)

    def _render(self, fmt: str, digits: int) -> str:
        header, rows = self._rows(digits)
        return render_table(fmt, header, rows, title=self.headline()) + "\n"

    def to_dict(self) -> dict:
        """Plain data, for JSON."""
        return {"run": self.name, "queries": self.n_queries, "retrieved": self.n_retrieved,
                "tied": self.n_tied, "ties": self.n_ties,
                "measures": {str(k): {c: (int(v) if c in ("queries_changed", "queries") else float(v))
                                      for c, v in row.items()} for k, row in self.table.iterrows()}}

    def __str__(self) -> str:
        return self.to_string()

    def __repr__(self) -> str:
        return self.to_string()


def render_reports(reports: Sequence[TieReport], fmt: str = "table", digits: int = 4) -> str:
    """Render tie reports as ``table``, ``markdown``, ``latex``, ``json`` or ``csv``."""
    if fmt == "json":
        import json   # only for this format
        return json.dumps([r.to_dict() for r in reports] if len(reports) != 1 else reports[0].to_dict(),
                          indent=2) + "\n"
    if fmt == "csv":
        import pandas as pd

        frames = []
        for r in reports:
            t = r.table.copy()
            t.index.name = "measure"
            t = t.reset_index()
            t.insert(0, "run", r.name)
            frames.append(t)
        return pd.concat(frames).to_csv(index=False, lineterminator="\n")
    render = {"table": TieReport.to_string, "markdown": TieReport.to_markdown, "latex": TieReport.to_latex}
    if fmt not in render:
        raise ValueError(f"a tie report cannot be printed as {fmt!r}")
    return "\n".join(render[fmt](r, digits) for r in reports)


def _measures(measures: Any) -> dict:
    if isinstance(measures, (str, Measure)):
        measures = [measures]
    if isinstance(measures, Mapping):
        return {str(k): parse_measure(v) for k, v in measures.items()}
    return {str(m): parse_measure(m) for m in measures}


def tie_report(qrels: Any, run: Any, measures: str | Iterable[str] | Mapping[str, Any], *,
               missing: str = "skip", name: str | None = None, no_relevant: str = "zero",
               trec_eval_version: int = 10, progress: bool | None = None,
               block_rows: int | None = None, tie_cost_budget: float | None = None) -> TieReport:
    """How much the order of tied documents moves each measure of one run.

    Parameters
    ----------
    qrels, run : dict, pandas.DataFrame or path
        As for :func:`tierank.evaluate`.
    measures : str, list of str, or dict of label to measure
        Measure strings (``"nDCG@10"``, ``"AP"``, ``"P.5"``...).
    missing : {"skip", "zero"}, default="skip"
        As for :func:`tierank.evaluate`.
    name : str, optional
        The run's name in the report (default: the file name, or ``"run"``).
    no_relevant, trec_eval_version, tie_cost_budget
        As for :func:`tierank.evaluate`.
    progress : bool, optional
        A progress bar on stderr while a run file is read; default: when stderr is a terminal.
    block_rows : int, optional
        Lines per block when the run is a file, as for :func:`tierank.evaluate`; the report does not
        depend on it.

    Returns
    -------
    TieReport
        ``.table`` (one row per measure: expected, min, max, trec_eval, queries_changed, queries,
        docs_share), ``str()`` for a text table, ``.to_markdown()``, ``.to_latex()``.

    Notes
    -----
    The inputs are read and joined once; the expected values, the bounds and trec_eval's tie-break all
    come from the same ranked lists. A run given as a file is read in blocks of whole queries, as
    :func:`tierank.evaluate` reads it, in bounded memory; the report is the same. A query *changes* when
    its maximum over tie orderings exceeds its minimum. A tie (two or more documents of one query with the same score) *can change* a measure when,
    in a query that changes, it holds documents the measure tells apart (its preference inside a tie:
    relevant and non-relevant at its ``rel``, or different gains) and lies where the measure looks,
    as the measure declares (``tie_scope``): above its cutoff k; for measures of the top-k set (P, R,
    Success, ...) across k, since reordering inside the top k changes nothing; for RR and Success with
    no relevant document before it; for Rprec across rank R. ``docs_share`` is the share of retrieved
    documents in such ties. Text measures (RelString) are left out.

    Examples
    --------
    The relevant document d1 ties with d2 at the top; d3 is below:

    >>> from tierank.report import tie_report    # also tierank.tie_report
    >>> rep = tie_report({"q1": {"d1": 1}}, {"q1": {"d1": 0.5, "d2": 0.5, "d3": 0.1}}, ["RR", "P@2"])
    >>> rep.table[["expected", "min", "max", "trec_eval", "queries_changed", "docs_share"]]
         expected  min  max  trec_eval  queries_changed  docs_share
    RR       0.75  0.5  1.0        0.5                1    0.666667
    P@2      0.50  0.5  0.5        0.5                0    0.000000
    """
    parsed = {label: m for label, m in _measures(measures).items() if not m.is_text}
    if not parsed:
        raise InputError("no measure given (text measures such as RelString have no tie report)")
    # the expected values with their bounds; trec_eval's tie-break and the counts are kept by _Parts
    opts = Options.checked({str(m): m for m in parsed.values()}, bounds=True, missing=missing,
                           no_relevant=no_relevant, trec_eval_version=trec_eval_version,
                           tie_cost_budget=tie_cost_budget)
    is_file = is_run_file(run)
    if name is None:
        name = (run.name if isinstance(run, TextInput) else str(run)) if is_file else "run"
    parts = _Parts(opts)
    if is_file:   # streamed in blocks of whole queries
        expected = evaluate_file(qrels, run, opts, progress=progress, block_rows=block_rows,
                                 evaluate_block=parts.block)
    else:
        expected = to_results(parts.evaluate(prepare_lists(qrels, run, opts)), opts)
    return parts.report(name, parsed, expected)


class _Parts:
    """The tie report of a run, one block of whole queries at a time: the expected values with their
    bounds (returned, so that the blocks merge as any evaluation's), trec_eval's tie-break and the counts
    of tied documents (kept here; every one of them adds up over queries)."""

    def __init__(self, opts: Options) -> None:
        self.opts = opts
        # per query (a second pass over a run not grouped by query evaluates a query again: the last wins)
        self.trec: list[pd.DataFrame] = []
        self.counts: list[pd.DataFrame] = []

    def block(self, qrels: Any, run: Any, positions: Any, opts: Options) -> QueryValues:
        """``evaluate_block`` of :func:`tierank.engine.streamed.evaluate_file` (positions: not needed)."""
        return self.evaluate(prepare_lists(qrels, run, opts))

    def evaluate(self, lists: Any) -> QueryValues:
        """Expected values and bounds of ``lists``; trec_eval's values and the counts are kept."""
        import pandas as pd

        orderings = TieOrderings.from_ranked(lists.ranked) if lists.ranked.n_queries else None
        expected = evaluate_lists(lists, self.opts, orderings)
        if orderings is not None:
            orderings.forget()   # the best / worst orderings are done with: trec_eval's takes their memory
        trec = evaluate_lists(lists, replace(self.opts, ties="trec_eval", bounds=False), orderings)
        self.trec.append(pd.DataFrame({t: trec.columns[t] for t in self.opts.measures}, index=trec.labels))
        if orderings is not None:
            orderings.forget()
            self._count(orderings.expected, expected, lists)
        return expected

    def _count(self, stats: TieStats, expected: QueryValues, lists: Any) -> None:
        """Per query: retrieved, tied documents, ties, and documents in ties that can change each measure."""
        import pandas as pd

        tied = stats.group_size >= 2
        counts: dict[str, np.ndarray] = {"retrieved": stats.lengths,
                  "tied": np.bincount(stats.group_query[tied], weights=stats.group_size[tied],
                                      minlength=stats.n_queries),
                  "ties": np.bincount(stats.group_query[tied], minlength=stats.n_queries)}
        n = stats.n_queries   # the ranked queries come first in ``expected`` (then the empty runs, which never change)
        for col, m in self.opts.measures.items():
            changed = _moves(expected.columns[f"{col}_lower"][:n], expected.columns[f"{col}_upper"][:n])
            counts[col] = _tied_in_scope(stats, m, changed) if changed.any() else np.zeros(n)
        self.counts.append(pd.DataFrame(counts, index=pd.Index(lists.labels)).astype(np.int64))

    def report(self, name: str, parsed: dict, expected: Any) -> TieReport:
        """The report from the merged expected Results and the kept parts."""
        import pandas as pd

        objects = self.opts.measures
        trec = _last(self.trec, list(objects))
        counts = _last(self.counts, ["retrieved", "tied", "ties", *objects]).sum()
        n_retrieved = int(counts["retrieved"])
        # queries in no block (judged, not retrieved, missing='zero'): no ties, so trec_eval's value is theirs
        trec = trec.reindex(expected.per_query.index).fillna(expected.per_query[list(objects)])
        trec_means = aggregate(trec, objects)
        rows, sums = {}, set()
        for label, m in parsed.items():
            col = str(m)
            if m.aggregate == "sum":
                sums.add(label)
            rows[label] = {"expected": expected.mean[col], "min": expected.mean_lower[col],
                           "max": expected.mean_upper[col], "trec_eval": trec_means[col],
                           "queries_changed": int(_changed(expected, col).sum()),
                           "queries": int(len(expected.per_query)),
                           "docs_share": int(counts[col]) / n_retrieved if n_retrieved else 0.0}
        table = pd.DataFrame.from_dict(rows, orient="index", columns=_COLUMNS)
        table["queries_changed"] = table["queries_changed"].astype(int)
        table["queries"] = table["queries"].astype(int)
        return TieReport(name=name, table=table, n_retrieved=n_retrieved, n_tied=int(counts["tied"]),
                         n_ties=int(counts["ties"]), counts=sums)


def _last(frames: list[pd.DataFrame], columns: list[str]) -> pd.DataFrame:
    """The frames one after the other, each query's last row only."""
    import pandas as pd

    if not frames:
        return pd.DataFrame(columns=columns)
    out = pd.concat(frames)
    return out[~out.index.duplicated(keep="last")]


def _moves(lower: np.ndarray, upper: np.ndarray) -> np.ndarray:
    """Per query: does the order of its ties move the measure (its maximum above its minimum)?"""
    lo, hi = np.asarray(lower, dtype=np.float64), np.asarray(upper, dtype=np.float64)
    return (hi - lo) > 1e-12 * (1.0 + np.maximum(np.abs(lo), np.abs(hi)))


def _changed(expected: Results, col: str) -> pd.Series:
    """Per query of ``expected``: does the order of its ties move measure ``col``?"""
    import pandas as pd

    assert expected.lower is not None and expected.upper is not None   # evaluated with bounds
    return pd.Series(_moves(expected.lower[col], expected.upper[col]), index=expected.per_query.index)


def _tied_in_scope(stats: TieStats, m: Measure, changed: np.ndarray) -> np.ndarray:
    """Per query: documents in ties that can change ``m`` (see :func:`tie_report`), if the query changes.

    Per tie, vectorised: a tie counts when it has 2+ items, its query changes, the measure's preference
    tells some of its items apart, and it lies in the measure's declared ``tie_scope``.
    """
    size, first, query = stats.group_size, stats.group_first, stats.group_query
    ptr, grades = stats.group_grades(np.arange(stats.n_groups))
    key = np.asarray(preference_of(m)[1](grades)[0], dtype=np.float64)
    starts = ptr[:-1]
    mixed = np.zeros(stats.n_groups, dtype=bool)
    if len(key):
        mixed = np.maximum.reduceat(key, starts) > np.minimum.reduceat(key, starts)
    end = first + size
    scope = m.tie_scope
    if scope == "set_R":
        depth = stats.judged.count_at_least(m["rel"])[query]
    else:
        depth = np.full(stats.n_groups, np.inf if m.cutoff is None else float(m.cutoff))
    ok = (size >= 2) & changed[query] & mixed & (first < depth)
    if scope in ("set", "set_first_hit", "set_R"):
        ok &= end > depth
    if scope in ("first_hit", "set_first_hit"):
        # a tie counts only if no preferred item comes before it: its query's first preferred tie
        preferred = np.maximum.reduceat(key, starts) > 0 if len(key) else mixed
        first_hit = np.full(stats.n_queries, np.inf)
        np.minimum.at(first_hit, query[preferred], first[preferred])
        ok &= first <= first_hit[query]
    return np.bincount(query[ok], weights=size[ok], minlength=stats.n_queries).astype(np.int64)
