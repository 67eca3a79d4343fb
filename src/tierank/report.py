"""The tie report: how much the order of tied documents moves each measure.

When two tools disagree on the same run, ties are the usual reason: each tool orders tied documents
its own way. The report gives, per measure, the exact expected value over all orderings of tied
documents, the range [min, max] over those orderings, what trec_eval's tie-break (document id
descending) gives, how many queries change with the order of their ties, and what share of the
retrieved documents sits in ties that can change the measure.
"""

from __future__ import annotations

import json
import warnings
from dataclasses import dataclass, field
from typing import Any, Iterable, Mapping, Sequence

import numpy as np
import pandas as pd

__all__ = ["tie_report", "TieReport", "render_reports"]

# measures whose value depends only on which documents are in the top k, not on their order there
_SET_MEASURES = {"P", "R", "F1", "Success", "Rprec", "ACG"}
# measures decided by the first relevant document
_FIRST_HIT = {"RR", "Success"}
# measures that weigh grades (gains) rather than relevant / non-relevant
_GRADED = {"nDCG", "DCG", "ERR", "ACG", "WAP"}
# measures no ordering changes
_ORDER_FREE = {"NumQ", "NumRet", "NumRel", "NumRelRet"}

_COLUMNS = ["expected", "min", "max", "trec_eval", "queries_changed", "queries", "docs_share"]


@dataclass
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
                f"{self.n_tied} ({_percent(share)}) in {self.n_ties} tie{'' if self.n_ties == 1 else 's'}")

    def _rows(self, digits: int) -> tuple[list[str], list[list[str]]]:
        header = ["measure", "expected", "min", "max", "trec_eval", "queries", "tied docs"]
        rows = []
        for label, r in self.table.iterrows():
            count = label in self.counts

            def v(x: float) -> str:
                return str(int(x)) if count and float(x).is_integer() else f"{x:.{digits}f}"
            rows.append([str(label), v(r["expected"]), v(r["min"]), v(r["max"]), v(r["trec_eval"]),
                         f"{int(r['queries_changed'])}/{int(r['queries'])}", _percent(r["docs_share"])])
        return header, rows

    def to_string(self, digits: int = 4) -> str:
        """The report as aligned text, under a one-line summary of the run's ties."""
        from .formats import text_table

        header, rows = self._rows(digits)
        return self.headline() + "\n" + text_table(header, rows) + "\n"

    def to_markdown(self, digits: int = 4) -> str:
        """The report as a Markdown table."""
        from .formats import markdown_table

        header, rows = self._rows(digits)
        return f"**{self.headline()}**\n\n" + markdown_table(header, rows) + "\n"

    def to_latex(self, digits: int = 4) -> str:
        """The report as a LaTeX table (booktabs)."""
        from .formats import latex_table

        header, rows = self._rows(digits)
        return latex_table(header, rows, caption=self.headline()) + "\n"

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


def _percent(share: float) -> str:
    if share == 0:
        return "0%"
    if share < 0.001:
        return "<0.1%"
    return f"{100 * share:.1f}%"


def render_reports(reports: Sequence[TieReport], fmt: str = "table", digits: int = 4) -> str:
    """Render tie reports as ``table``, ``markdown``, ``latex``, ``json`` or ``csv``."""
    if fmt == "json":
        return json.dumps([r.to_dict() for r in reports] if len(reports) != 1 else reports[0].to_dict(),
                          indent=2) + "\n"
    if fmt == "csv":
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
    from .measures import Measure, parse_measure

    if isinstance(measures, (str, Measure)):
        measures = [measures]
    if isinstance(measures, Mapping):
        return {str(k): parse_measure(v) for k, v in measures.items()}
    return {str(m): parse_measure(m) for m in measures}


def tie_report(qrels: Any, run: Any, measures: str | Iterable[str] | Mapping[str, Any], *,
               missing: str = "skip", name: str | None = None) -> TieReport:
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

    Returns
    -------
    TieReport
        ``.table`` (one row per measure: expected, min, max, trec_eval, queries_changed, queries,
        docs_share), ``str()`` for a text table, ``.to_markdown()``, ``.to_latex()``.

    Notes
    -----
    A query *changes* when its maximum over tie orderings exceeds its minimum. A tie (two or more
    documents of one query with the same score) *can change* a measure when, in a query that changes:
    it holds documents the measure values differently (relevant and non-relevant at the measure's
    ``rel``; different gains for nDCG, DCG, ERR, ACG, WAP); it starts above the cutoff k (Rprec: R);
    for measures of the top-k set (P, R, F1, Success, Rprec, ACG) it also reaches beyond k, since
    reordering inside the top k changes nothing; and for RR and Success no relevant document comes
    before it. ``docs_share`` is the share of retrieved documents in such ties. NumQ, NumRet, NumRel
    and NumRelRet never change.

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
    import tierank
    from .io.frames import to_columns

    parsed = _measures(measures)
    if not parsed:
        raise tierank.InputError("no measure given")
    objects = list(dict.fromkeys(parsed.values()))
    expected = tierank.evaluate(qrels, run, objects, ties="expected", bounds=True, missing=missing)
    run_cols = to_columns(run, "run")
    qrels_cols = to_columns(qrels, "qrels")
    run_df = pd.DataFrame({"query_id": run_cols.query, "doc_id": run_cols.doc,
                           "score": np.asarray(run_cols.value, dtype=np.float64)})
    qrels_df = pd.DataFrame({"query_id": qrels_cols.query, "doc_id": qrels_cols.doc,
                             "relevance": np.asarray(qrels_cols.value, dtype=np.float64)})
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # the same warnings were given by the first evaluation
        trec = tierank.evaluate(qrels_df, run_df, objects, ties="trec_eval", missing=missing)
    if name is None:
        name = str(run) if isinstance(run, str) or hasattr(run, "__fspath__") else "run"

    queries = expected.per_query.index
    ranked = _ranked(run_df, qrels_df, queries)
    judged = qrels_df[qrels_df["query_id"].isin(queries)]
    rows = {}
    counts = set()
    for label, m in parsed.items():
        col = str(m)
        lo = expected.lower[col].to_numpy(dtype=np.float64)
        hi = expected.upper[col].to_numpy(dtype=np.float64)
        scale = 1.0 + np.maximum(np.abs(lo), np.abs(hi))
        changed = (hi - lo) > 1e-12 * scale
        changed_ids = set(queries[changed])
        if m.family.aggregate == "sum":
            counts.add(label)
        rows[label] = {"expected": expected.mean[col], "min": expected.mean_lower[col],
                       "max": expected.mean_upper[col], "trec_eval": trec.mean[col],
                       "queries_changed": int(changed.sum()), "queries": int(len(queries)),
                       "docs_share": _docs_share(ranked, judged, m, changed_ids)}
    table = pd.DataFrame.from_dict(rows, orient="index", columns=_COLUMNS)
    table["queries_changed"] = table["queries_changed"].astype(int)
    table["queries"] = table["queries"].astype(int)
    tied = ranked["size"] >= 2
    return TieReport(name=name, table=table, n_retrieved=int(len(ranked)), n_tied=int(tied.sum()),
                     n_ties=int(ranked.loc[tied, "group"].nunique()), counts=counts)


def _ranked(run: pd.DataFrame, qrels: pd.DataFrame, queries: pd.Index) -> pd.DataFrame:
    """Retrieved documents of the evaluated queries, ranked, with grade, tie group, start and end."""
    run = run[run["query_id"].isin(queries)]
    grades = qrels.drop_duplicates(["query_id", "doc_id"])
    df = run.merge(grades, on=["query_id", "doc_id"], how="left")
    df["relevance"] = df["relevance"].fillna(0.0)
    df["qcode"] = pd.factorize(df["query_id"])[0]
    df = df.sort_values(["qcode", "score"], ascending=[True, False], kind="stable").reset_index(drop=True)
    df["pos"] = df.groupby("qcode").cumcount()
    new = (df["qcode"].diff().fillna(1) != 0) | (df["score"].diff().fillna(1) != 0)
    df["group"] = new.cumsum()
    g = df.groupby("group")["pos"]
    df["start"] = g.transform("min")
    df["end"] = g.transform("max") + 1
    df["size"] = df["end"] - df["start"]
    return df


def _docs_share(ranked: pd.DataFrame, judged: pd.DataFrame, m: Any, changed: set) -> float:
    if not len(ranked):
        return 0.0
    family = m.family.name
    if family in _ORDER_FREE or not changed:
        return 0.0
    df = ranked[ranked["query_id"].isin(changed) & (ranked["size"] >= 2)]
    if not len(df):
        return 0.0
    params = m.params
    grades = ranked["relevance"].to_numpy()
    if family in _GRADED:
        gains = params.get("gains") or {}
        value_all = np.array([max(float(gains.get(g, g)), 0.0) for g in grades]) if gains else np.maximum(grades, 0)
    else:
        value_all = (grades >= params["rel"]).astype(float)
    ranked = ranked.assign(value=value_all)
    df = ranked.loc[df.index]
    grp = df.groupby("group")["value"]
    mixed = (grp.transform("max") > grp.transform("min")).to_numpy()
    if family == "Rprec":
        rel = params["rel"]
        r = judged.assign(hit=judged["relevance"] >= rel).groupby("query_id")["hit"].sum()
        depth = df["query_id"].map(r).fillna(0).to_numpy(dtype=float)
    else:
        depth = np.full(len(df), float(m.cutoff) if m.cutoff is not None else np.inf)
    start = df["start"].to_numpy(dtype=float)
    end = df["end"].to_numpy(dtype=float)
    ok = mixed & (start < depth)
    if family in _SET_MEASURES:
        ok &= end > depth
    if family in _FIRST_HIT:
        # position of each query's first relevant document
        hits = ranked[ranked["value"] > 0].groupby("query_id")["pos"].min()
        first = df["query_id"].map(hits).fillna(np.inf).to_numpy(dtype=float)
        ok &= first >= start
    return float(ok.sum()) / float(len(ranked))
