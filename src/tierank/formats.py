"""Output formats of the command line: aligned text tables, trec_eval's layout, JSON, CSV, Markdown, LaTeX.

The command line evaluates one or more runs and hands the results here as :class:`RunResults`
(one per run) with the measures to show, each a :class:`ShownMeasure` (the label the user wrote,
the measure, and how trec_eval spells it). Every function returns text; nothing is printed here.
"""

from __future__ import annotations

import io
import math
from typing import TYPE_CHECKING, Any, Iterable, Mapping, NamedTuple, Sequence

import numpy as np

from .errors import InputError
from .measures import Measure, trec_order, trec_prints_per_query
from .measures._describe import describe_measures
from .measures._registry import TREC_INDEX, did_you_mean

if TYPE_CHECKING:
    from .results import Results

__all__ = [
    "FORMATS",
    "ShownMeasure",
    "shown_measures",
    "RunResults",
    "render",
    "render_table",
    "escape_text",
    "markdown_escape",
    "latex_escape",
    "text_table",
    "markdown_table",
    "latex_table",
    "format_value",
    "format_percent",
    "sorted_ids",
    "trec_eval_order",
    "render_measures",
]

FORMATS = ("table", "trec", "json", "csv", "markdown", "latex")

class ShownMeasure(NamedTuple):   # tuples: no code compiled at import (docs/architecture.md, "Start-up")
    """A measure as the user asked for it.

    Attributes
    ----------
    label : str
        How it is shown (``"nDCG@10"`` as written; trec_eval names as trec_eval prints them, ``"P_5"``).
    measure : Measure
        The measure evaluated (with ``-l`` applied).
    trec_name : str or None
        trec_eval's spelling (``"ndcg_cut_10"``), or None if trec_eval has no such measure; then
        ``--format trec`` prints ``str(measure)``.
    """

    label: str
    measure: Measure
    trec_name: str | None = None

    @property
    def is_count(self) -> bool:
        """True for NumQ, NumRet, NumRel, NumRelRet: summed over queries and printed as integers."""
        return self.measure.is_count

    @property
    def is_text(self) -> bool:
        """True for RelString: a string per query, no range and no aggregate."""
        return self.measure.is_text


def shown_measures(expanded: Mapping[str, Measure]) -> list[ShownMeasure]:
    """The measures of :func:`tierank.measures.expand` as shown: label, measure and trec_eval name.

    >>> from tierank.measures import expand
    >>> [(m.label, str(m.measure), m.trec_name) for m in shown_measures(expand("P.5 nDCG@10"))]
    [('P_5', 'P@5', 'P_5'), ('nDCG@10', 'nDCG@10', 'ndcg_cut_10')]
    """
    trec_names = getattr(expanded, "trec_names", {})
    return [ShownMeasure(label, m, trec_names.get(label)) for label, m in expanded.items()]


class RunResults(NamedTuple):
    """The results of one run, with its display name and trec_eval ``runid`` (the run's tag)."""

    name: str
    results: Results
    runid: str | None = None

    def column(self, m: ShownMeasure, which: str = "value") -> np.ndarray:
        """The values per query, in the order of :meth:`query_ids` (``which``: ``"value"``, or the bound
        ``"lower"`` or ``"upper"``)."""
        return self.results.column(str(m.measure), which)

    def query_ids(self) -> list:
        """The query ids (Python ints or strings), sorted as ``per_query``'s index."""
        return self.results.query_ids.tolist()

    def mean(self, m: ShownMeasure, which: str = "value") -> float:
        """The aggregate over queries (NaN for a text measure, which has none) of ``which``, as in
        :meth:`column`."""
        source = {"value": self.results.mean, "lower": self.results.mean_lower,
                  "upper": self.results.mean_upper}[which]
        value = source[str(m.measure)]
        return math.nan if value is None else float(value)


def trec_eval_order(measures: Sequence[ShownMeasure]) -> list[ShownMeasure]:
    """Measures in the order trec_eval prints them: its measure table, cutoffs and levels ascending;
    measures trec_eval does not know come last, in the order given."""
    def key(item: tuple[int, ShownMeasure]) -> tuple:
        i, m = item
        return (*trec_order(m.trec_name), i) if m.trec_name is not None else (math.inf, 0, i)
    return [m for _, m in sorted(enumerate(measures), key=key)]


def format_value(v: float | str, count: bool = False, digits: int = 4) -> str:
    """``0.1785`` with ``digits`` decimals; counts as integers when they are whole numbers; text
    (RelString) quoted as trec_eval prints it."""
    if isinstance(v, str):
        return f"'{v}'"
    if v is None or (isinstance(v, float) and math.isnan(v)):
        return ""
    if count and float(v).is_integer():
        return str(int(v))
    return f"{v:.{digits}f}"


def format_percent(share: float) -> str:
    """A share as a percentage with one decimal; a share too small to show is ``<0.1%``, none is ``0%``.

    >>> format_percent(0.25), format_percent(0.0004), format_percent(0)
    ('25.0%', '<0.1%', '0%')
    """
    if share == 0:
        return "0%"
    if share < 0.001:
        return "<0.1%"
    return f"{100 * share:.1f}%"


def _cell(v: float, lo: float | None, hi: float | None, count: bool, digits: int) -> str:
    text = format_value(v, count, digits)
    if lo is None:
        return text
    return f"{text} [{format_value(lo, count, digits)}, {format_value(hi, count, digits)}]"


def _shown_values(bounds: bool) -> tuple[str, ...]:
    """What is shown of each measure (:meth:`RunResults.column`): its value, and with ``bounds`` its range."""
    return ("value", "lower", "upper") if bounds else ("value",)


def _mean_cell(r: RunResults, m: ShownMeasure, bounds: bool, digits: int) -> str:
    """A run's aggregate of one measure, with its range over tie orderings when ``bounds``."""
    return _cell(r.mean(m), r.mean(m, "lower") if bounds else None, r.mean(m, "upper") if bounds else None,
                 m.is_count, digits)


# ----------------------------------------------------------------------------------- tables of text

#: characters shown as escapes in human-readable output: control characters (C0, DEL, C1), format
#: characters (bidi overrides and isolates U+202A-202E, U+2066-2069, marks U+200E/F, U+061C, zero-width
#: characters), lone surrogates, and the line and paragraph separators U+2028/2029
_ESCAPED_CATEGORIES = frozenset({"Cc", "Cf", "Cs", "Zl", "Zp"})


def _escape_char(c: str, backslash: bool = True) -> str:
    if c == "\\":
        return "\\\\" if backslash else c
    import unicodedata   # only for text that is not printable as it is (escape_text)
    if unicodedata.category(c) not in _ESCAPED_CATEGORIES:
        return c
    code = ord(c)
    return f"\\x{code:02x}" if code < 0x100 else f"\\u{code:04x}" if code < 0x10000 else f"\\U{code:08x}"


def escape_text(text: Any, *, one_to_one: bool = True) -> str:
    """A name or id as it is shown to people: control and bidi characters as visible escapes.

    Query ids, document ids and run names are data: an ANSI or OSC escape sequence (``\\x1b]0;...``),
    a right-to-left override (U+202E) or a newline in them would act on the terminal or the page
    instead of being shown. Every human-readable output (text, Markdown and LaTeX tables, trec_eval's
    layout, the tie report, plot labels, messages) shows them as Python-style escapes: ``\\x1b``,
    ``\\u202e``, ``\\U000e0001``; the backslash itself is doubled, so that two different texts are
    never shown the same (the mapping is one-to-one: ``codecs.decode(..., "unicode_escape")`` reads
    it back). Text without backslashes or such characters is returned as it is.

    Parameters
    ----------
    text : object
        Converted with ``str``.
    one_to_one : bool, default True
        False: the backslash is left as it is (messages, which quote ids with ``repr``: its escapes
        would show doubled); control and bidi characters are still escaped.

    Returns
    -------
    str

    Examples
    --------
    >>> print(escape_text("q1\\x1b]0;title\\x07"))
    q1\\x1b]0;title\\x07
    >>> print(escape_text("abc\\u202edef"), escape_text("a\\\\x1b"), escape_text("nDCG@10"))
    abc\\u202edef a\\\\x1b nDCG@10
    >>> print(escape_text("run.tsv:1: 'q1\\\\td1' \\x1b[2J", one_to_one=False))
    run.tsv:1: 'q1\\td1' \\x1b[2J
    """
    text = str(text)
    if text.isprintable() and ("\\" not in text or not one_to_one):   # the usual id: nothing to escape
        return text                                  # (isprintable is False for every character escaped here)
    return "".join(_escape_char(c, one_to_one) for c in text)


#: punctuation that would turn a Markdown cell's text into emphasis, code, a link or a strike-through;
#: written after a backslash, each is shown as itself
_MARKDOWN_ACTIVE = frozenset("*_`[]~")


def markdown_escape(text: Any) -> str:
    """A name or id as a Markdown (GitHub) table cell shows it: :func:`escape_text`, then HTML's
    ``&``, ``<`` and ``>`` as entities, the backslash doubled and ``* _ ` [ ] ~`` after a backslash (an
    ``_`` inside a word excepted), so that the rendered cell reads as the text table does: no HTML,
    emphasis, code or link in an id is interpreted. (``|`` is escaped by :func:`markdown_table`, in every cell.)

    Examples
    --------
    >>> print(markdown_escape("<b>run</b> & co"), markdown_escape("q\\x1b"), markdown_escape("_q_1*"))
    &lt;b&gt;run&lt;/b&gt; &amp; co q\\\\x1b \\_q_1\\*
    """
    shown = (escape_text(text).replace("\\", "\\\\").replace("&", "&amp;").replace("<", "&lt;")
             .replace(">", "&gt;"))
    return "".join("\\" + c if c in _MARKDOWN_ACTIVE and not _inside_word(shown, i) else c
                   for i, c in enumerate(shown))


def _inside_word(text: str, i: int) -> bool:
    """Whether ``text[i]`` is an ``_`` between letters or digits: never emphasis in Markdown
    (CommonMark's flanking rules), so ``ndcg_cut_10`` stays as it is written."""
    return text[i] == "_" and 0 < i < len(text) - 1 and text[i - 1].isalnum() and text[i + 1].isalnum()


def text_table(header: Sequence[str], rows: Sequence[Sequence[str]], align: str | None = None) -> str:
    """An aligned plain-text table: first column left-aligned, the others right-aligned; every cell
    through :func:`escape_text`.

    Examples
    --------
    >>> print(text_table(["measure", "value"], [["AP", "0.5000"], ["P@10", "0.3000"]]))
    measure   value
    AP       0.5000
    P@10     0.3000
    """
    align = align or "l" + "r" * (len(header) - 1)
    cells = [[escape_text(c) for c in r] for r in [header, *rows]]
    widths = [max(len(r[i]) for r in cells) for i in range(len(header))]

    def line(cells: Sequence[str]) -> str:
        out = [c.ljust(w) if a == "l" else c.rjust(w) for c, w, a in zip(cells, widths, align)]
        return "  ".join(out).rstrip()
    return "\n".join(line(r) for r in cells)


def markdown_table(header: Sequence[str], rows: Sequence[Sequence[str]], align: str | None = None,
                   raw: bool = False) -> str:
    """A GitHub-flavoured Markdown table (numbers right-aligned).

    Cells go through :func:`markdown_escape` unless ``raw`` (cells that hold Markdown or HTML on
    purpose, their names escaped by the caller); ``|`` is escaped in every cell.

    Examples
    --------
    >>> print(markdown_table(["measure", "value"], [["AP", "0.5000"]]))
    | measure | value |
    |:--|--:|
    | AP | 0.5000 |
    """
    align = align or "l" + "r" * (len(header) - 1)
    cell = (lambda c: str(c)) if raw else markdown_escape
    esc = [[cell(c).replace("|", "\\|") for c in r] for r in [header, *rows]]
    rule = "|" + "|".join(":--" if a == "l" else "--:" for a in align) + "|"
    return "\n".join(["| " + " | ".join(esc[0]) + " |", rule, *("| " + " | ".join(r) + " |" for r in esc[1:])])


# < > | too: in LaTeX's default font encoding (OT1) they are printed as other glyphs (¡ ¿ —)
_LATEX_SPECIAL = {"\\": r"\textbackslash{}", "&": r"\&", "%": r"\%", "$": r"\$", "#": r"\#", "_": r"\_",
                  "{": r"\{", "}": r"\}", "~": r"\textasciitilde{}", "^": r"\textasciicircum{}",
                  "<": r"\textless{}", ">": r"\textgreater{}", "|": r"\textbar{}"}


def latex_escape(text: str) -> str:
    """Escape LaTeX's special characters (after :func:`escape_text`).

    >>> latex_escape("ndcg_cut_10 & P@5")
    'ndcg\\\\_cut\\\\_10 \\\\& P@5'
    """
    return "".join(_LATEX_SPECIAL.get(c, c) for c in escape_text(text))


def latex_table(header: Sequence[str], rows: Sequence[Sequence[str]], align: str | None = None,
                caption: str | None = None, raw: bool = False) -> str:
    """A LaTeX ``table`` with a booktabs ``tabular`` (cells escaped unless ``raw``)."""
    align = align or "l" + "r" * (len(header) - 1)
    esc = (lambda c: str(c)) if raw else latex_escape
    lines = [r"\begin{table}[t]", r"\centering"]
    if caption:
        lines.append(r"\caption{" + latex_escape(caption) + "}")
    lines += [r"\begin{tabular}{" + align + "}", r"\toprule",
              " & ".join(latex_escape(h) for h in header) + r" \\", r"\midrule"]
    lines += [" & ".join(esc(c) for c in r) + r" \\" for r in rows]
    lines += [r"\bottomrule", r"\end{tabular}", r"\end{table}"]
    return "\n".join(lines)


def render_table(fmt: str, header: Sequence[str], rows: Sequence[Sequence[str]], title: str | None = None) -> str:
    """A table with an optional title line, as ``table`` (aligned text), ``markdown`` or ``latex``;
    the title and the cells escaped as the format needs (:func:`escape_text`, :func:`markdown_escape`,
    :func:`latex_escape`).

    Examples
    --------
    >>> print(render_table("markdown", ["measure", "value"], [["AP", "0.5000"]], title="run<1>: 2 queries"))
    **run&lt;1&gt;: 2 queries**
    <BLANKLINE>
    | measure | value |
    |:--|--:|
    | AP | 0.5000 |
    """
    if fmt == "markdown":
        body = markdown_table(header, rows)
        return (f"**{markdown_escape(title)}**\n\n" if title else "") + body
    if fmt == "latex":
        return latex_table(header, rows, caption=title)
    body = text_table(header, rows)
    return (escape_text(title) + "\n" if title else "") + body


# ---------------------------------------------------------------------------------------- renderers


def render(runs: Sequence[RunResults], measures: Sequence[ShownMeasure], fmt: str = "table", *,
           per_query: bool = False, bounds: bool = False, digits: int = 4, show_runid: bool = False,
           show_num_q: bool = False) -> str:
    """Render evaluation results in one of :data:`FORMATS`.

    Parameters
    ----------
    runs : sequence of RunResults
    measures : sequence of ShownMeasure
        In the order to show (``trec`` reorders them as trec_eval does).
    fmt : {"table", "trec", "json", "csv", "markdown", "latex"}
    per_query : bool
        Also show one row per query (trec_eval ``-q``).
    bounds : bool
        Show the minimum and maximum over tie orderings (the results must hold them).
    digits : int
        Decimals of the human formats and of ``trec`` (trec_eval prints 4).
    show_runid, show_num_q : bool
        ``trec`` only: print trec_eval's ``runid`` and ``num_q`` lines (it prints them when they are
        asked for, as in its default measure set).
    """
    if per_query and fmt != "json":
        _check_no_query_named_all(runs, fmt)
    if fmt == "trec":   # several runs: each block starts with a line naming its run
        return "".join(trec_eval_text(r, measures, per_query=per_query, digits=digits, bounds=bounds,
                                      show_runid=show_runid, show_num_q=show_num_q, label=len(runs) > 1)
                       for r in runs)
    if fmt == "json":
        return json_text(runs, measures, per_query=per_query, bounds=bounds)
    if fmt == "csv":
        return csv_text(runs, measures, per_query=per_query, bounds=bounds)
    if fmt not in ("table", "markdown", "latex"):
        raise ValueError(f"unknown format {fmt!r}; use one of {', '.join(FORMATS)}")
    parts = [_summary(runs, measures, fmt, bounds, digits)]
    if per_query:
        parts += _per_query_tables(runs, measures, fmt, bounds, digits)
    return "\n\n".join(parts) + "\n"


def _check_no_query_named_all(runs: Sequence[RunResults], fmt: str) -> None:
    """Per-query output in a layout whose row of means is named ``all`` (trec_eval's, and the tables
    and CSV after it): a query named ``all`` would be a second such row, and a reader (a person, a
    script looking for ``all``) could take its value for the mean. Refused, with the way out."""
    for r in runs:
        if "all" in r.results.query_ids.tolist():
            raise InputError(f"the query id 'all' cannot be told apart from the row 'all' of the means in "
                             f"per-query {fmt} output; rename the query, or use the json format",
                             file=r.name, query="all")


def _title(runs: Sequence[RunResults]) -> str:
    ties = runs[0].results.ties
    if len(runs) == 1:
        n = len(runs[0].results.query_ids)
        return f"{runs[0].name}: {n} quer{'y' if n == 1 else 'ies'}, ties={ties}"
    return f"{len(runs)} runs, ties={ties}"


def _summary(runs: Sequence[RunResults], measures: Sequence[ShownMeasure], fmt: str, bounds: bool,
             digits: int) -> str:
    if len(runs) == 1:
        r = runs[0]
        header = ["measure", "value"] + (["min", "max"] if bounds else [])
        rows = [[m.label, *(format_value(r.mean(m, w), m.is_count, digits) for w in _shown_values(bounds))]
                for m in measures]
        return render_table(fmt, header, rows, _title(runs))
    header = ["measure"] + [r.name for r in runs]
    rows = [[m.label] + [_mean_cell(r, m, bounds, digits) for r in runs] for m in measures]
    return render_table(fmt, header, rows, _title(runs))


def _per_query_tables(runs: Sequence[RunResults], measures: Sequence[ShownMeasure], fmt: str, bounds: bool,
                      digits: int) -> list[str]:
    rows_of = [{q: i for i, q in enumerate(r.query_ids())} for r in runs]   # each run's row of a query id

    def cell(k: int, m: ShownMeasure, q: Any) -> str:
        r, i = runs[k], rows_of[k].get(q)
        if i is None:
            return ""
        v = r.column(m)[i]
        if m.is_text:
            return format_value(v)
        lo = r.column(m, "lower")[i] if bounds else None
        hi = r.column(m, "upper")[i] if bounds else None
        return _cell(float(v), None if lo is None else float(lo), None if hi is None else float(hi),
                     m.is_count, digits)

    if len(runs) == 1:
        r = runs[0]
        header = ["query"] + [m.label for m in measures]
        rows = [[str(q)] + [cell(0, m, q) for m in measures] for q in r.query_ids()]
        rows.append(["all"] + [_mean_cell(r, m, bounds, digits) for m in measures])
        return [render_table(fmt, header, rows, f"{r.name}: per query")]
    queries = sorted_ids(dict.fromkeys(q for r in runs for q in r.query_ids()))
    tables = []
    for m in measures:
        header = ["query"] + [r.name for r in runs]
        rows = [[str(q)] + [cell(k, m, q) for k in range(len(runs))] for q in queries]
        rows.append(["all"] + [_mean_cell(r, m, bounds, digits) for r in runs])
        tables.append(render_table(fmt, header, rows, f"{m.label}: per query"))
    return tables


def sorted_ids(ids: Iterable[Any]) -> list:
    """Query ids sorted by value, or as text where they do not compare (numbers and strings mixed).

    >>> sorted_ids([3, 1, 2]), sorted_ids(["q2", 10, "q1"])
    ([1, 2, 3], [10, 'q1', 'q2'])
    """
    values = list(ids)
    try:
        return sorted(values)
    except TypeError:
        return sorted(values, key=str)


def trec_eval_text(run: RunResults, measures: Sequence[ShownMeasure], *, per_query: bool = False,
                   digits: int = 4, show_runid: bool = False, show_num_q: bool = False,
                   bounds: bool = False, label: bool = False) -> str:
    """trec_eval's output: ``%-22s\\t%s\\t%.4f`` lines, per query (string order) then ``all``.

    Measures are named as trec_eval names them (``P_5``, ``ndcg_cut_10``, ``num_rel_ret``) and put in
    trec_eval's order; counts are printed as integers. ``runid`` (the run's tag) and ``num_q`` lines
    come first in the ``all`` block when asked for. With ``bounds``, each value line is followed by
    ``name:min`` and ``name:max`` lines (the minimum and maximum over tie orderings; not trec_eval's).
    With ``label`` (several runs in one output) the block starts with a ``run`` line naming the run.
    Names, query ids and run names go through :func:`escape_text` (the same bytes as trec_eval for
    ids without control characters or backslashes).
    """
    ordered = []
    names = set()
    for m in trec_eval_order(measures):  # each printed name once, as trec_eval prints it
        name = m.trec_name or str(m.measure)
        if name != "num_q" and name not in names:   # num_q: printed once, in the all block
            names.add(name)
            ordered.append(m)
    lines: list[str] = []

    def line(name: str, qid: str, value: str, lo: str | None = None, hi: str | None = None) -> None:
        # names, query ids and run names escaped (a tab or newline in one would also break the layout)
        name, qid, value = escape_text(name), escape_text(qid), escape_text(value)
        lines.append(f"{name:<22}\t{qid}\t{value}")
        if lo is not None:
            lines.append(f"{name + ':min':<22}\t{qid}\t{lo}")
            lines.append(f"{name + ':max':<22}\t{qid}\t{hi}")

    def value(v: Any, m: ShownMeasure) -> str:
        if m.is_text:
            return format_value(v)
        if m.is_count and float(v).is_integer():
            return str(int(v))
        return f"{v:.{digits}f}"

    if label:
        line("run", "all", run.name)
    ids = run.query_ids()
    if per_query:
        for i in sorted(range(len(ids)), key=lambda i: str(ids[i])):   # the ids in string order
            for m in ordered:
                if m.trec_name is None or trec_prints_per_query(m.trec_name):
                    lo = hi = None
                    if bounds and not m.is_text:
                        lo = value(run.column(m, "lower")[i], m)
                        hi = value(run.column(m, "upper")[i], m)
                    line(m.trec_name or str(m.measure), str(ids[i]), value(run.column(m)[i], m), lo, hi)
    if show_runid:
        line("runid", "all", run.runid or run.name)
    if show_num_q:
        line("num_q", "all", str(len(ids)))
    for m in ordered:
        if not m.is_text:   # text (relstring): per query only, as trec_eval
            lo, hi = ((value(run.mean(m, "lower"), m), value(run.mean(m, "upper"), m)) if bounds
                      else (None, None))
            line(m.trec_name or str(m.measure), "all", value(run.mean(m), m), lo, hi)
    return "\n".join(lines) + ("\n" if lines else "")


def _nan_to_none(v: Any) -> Any:
    if isinstance(v, (float, np.floating)):
        v = float(v)
        return None if math.isnan(v) else v
    if isinstance(v, np.integer):
        return int(v)
    return v


def json_text(runs: Sequence[RunResults], measures: Sequence[ShownMeasure], *, per_query: bool = False,
              bounds: bool = False) -> str:
    """JSON: ``{"ties", "measures": {label: canonical}, "runs": [{"run", "runid", "queries", "mean",
    ["lower", "upper"], ["per_query": {qid: {label: value}}, "per_query_lower", "per_query_upper"]}]}``."""
    import json

    out: dict[str, Any] = {"ties": runs[0].results.ties if runs else None,
                           "measures": {m.label: str(m.measure) for m in measures}, "runs": []}
    for r in runs:
        ids = r.query_ids()
        item: dict[str, Any] = {"run": r.name, "runid": r.runid, "queries": len(ids),
                                "mean": {m.label: _nan_to_none(r.mean(m)) for m in measures}}
        for which in ("lower", "upper") if bounds else ():
            item[which] = {m.label: _nan_to_none(r.mean(m, which)) for m in measures}
        for which in _shown_values(bounds) if per_query else ():
            item["per_query" if which == "value" else f"per_query_{which}"] = {
                str(q): {m.label: _nan_to_none(r.column(m, which)[i]) for m in measures} for i, q in enumerate(ids)}
        out["runs"].append(item)
    return json.dumps(out, indent=2) + "\n"


def _number_or_text(v: Any) -> Any:
    """A CSV cell: text as it is, a number at full precision (``repr``), NaN (or no text) empty."""
    if isinstance(v, str):
        return v
    if v is None:
        return ""
    v = float(v)
    return "" if math.isnan(v) else v


def csv_text(runs: Sequence[RunResults], measures: Sequence[ShownMeasure], *, per_query: bool = False,
             bounds: bool = False) -> str:
    """Tidy CSV, one value per line: ``run,query,measure,value[,lower,upper]``; ``query`` is ``all`` for
    the aggregate over queries (as in trec_eval), values at full precision."""
    import csv

    out = io.StringIO()
    writer = csv.writer(out, lineterminator="\n")
    writer.writerow(["run", "query", "measure", "value"] + (["lower", "upper"] if bounds else []))
    which = _shown_values(bounds)
    for r in runs:
        if per_query:
            for i, q in enumerate(r.query_ids()):
                for m in measures:
                    writer.writerow([r.name, str(q), m.label, *(_number_or_text(r.column(m, w)[i]) for w in which)])
        for m in measures:
            writer.writerow([r.name, "all", m.label, *(_number_or_text(r.mean(m, w)) for w in which)])
    return out.getvalue()


_CUTOFF = {"required": "@k required", "optional": "@k optional", "none": "no @k"}


def _params_text(d: dict) -> str:
    return ", ".join(f"{k}={v['default']!r}" for k, v in d["params"].items()) or "-"


def _rows(items: list[dict]) -> list[list[str]]:
    return [[d["name"], _params_text(d), _CUTOFF[d["cutoff"]], "; ".join(d["trec_eval"]) or "-",
             ", ".join(d["aliases"]) or "-", d["summary"]] for d in items]


def render_measures(fmt: str = "table", name: str | None = None) -> str:
    """The measure reference as text (``table``), ``markdown`` or ``json``; ``name``: one family, with
    each parameter described.

    >>> print(render_measures("markdown").splitlines()[0])
    | measure | parameters (defaults) | cutoff | trec_eval | also accepted as | what it is |
    """
    items = describe_measures()
    if name is not None:
        # a name or alias (any case), else a trec_eval name (exact: 'rbp' is trec_eval's, 'RBP' ir-measures')
        family = TREC_INDEX[name][0].name if name in TREC_INDEX else None
        items = [d for d in items if d["name"].lower() == name.lower()
                 or name.lower() in (a.lower() for a in d["aliases"])] or [d for d in items if d["name"] == family]
        if not items:
            raise InputError(f"unknown measure {name!r}{did_you_mean(name)}; `tierank measures` lists them all")
    if fmt == "json":
        import json

        return json.dumps(items, indent=2, default=str) + "\n"
    header = ["measure", "parameters (defaults)", "cutoff", "trec_eval", "also accepted as", "what it is"]
    if fmt == "markdown":
        rows = [[f"`{c}`" if i in (0, 1) and c != "-" else c for i, c in enumerate(r)] for r in _rows(items)]
        return markdown_table(header, rows, align="l" * len(header), raw=True) + "\n"   # our own Markdown
    if fmt != "table":
        raise InputError(f"format {fmt!r}: use table, markdown or json")
    if name is None:
        return text_table(["measure", "parameters (defaults)", "cutoff", "trec_eval"],
                          [r[:4] for r in _rows(items)], align="llll") + "\n"
    d = items[0]
    lines = [f"{d['name']}: {d['summary']}", f"  cutoff: {_CUTOFF[d['cutoff']]}"]
    lines += [f"  {k}={v['default']!r}: {v['description']}" for k, v in d["params"].items()]
    lines += [f"  trec_eval: {'; '.join(d['trec_eval']) or '-'}", f"  also accepted as: {', '.join(d['aliases']) or '-'}",
              f"  aggregate over queries: {d['aggregate']}"]
    return "\n".join(lines) + "\n"
