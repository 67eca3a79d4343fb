"""One self-contained HTML report of an evaluation: ``tierank report QRELS RUN... -o report.html``.

The file holds everything it shows: the table of means with the exact range over tie orderings, the
significance tests between runs (:mod:`tierank.compare`), the tie report (:func:`tierank.tie_report`),
the plots (:mod:`tierank.plot`, PNG images embedded as ``data:`` URIs), and how it was made (command,
inputs, versions). Styles are inline; a Content-Security-Policy forbids every request, so opening
the file never touches the network. A few lines of script set ``data-images-loaded="k/n"`` on
``<body>`` once the images have decoded (used by the browser test; harmless otherwise).
"""

from __future__ import annotations

# base64, hashlib, html and matplotlib are imported where used: the command line loads this module
import datetime
import io
import os
import platform
import sys
import warnings
from contextlib import contextmanager
from typing import Any, Iterator, Mapping, Sequence

import numpy as np

from .api import evaluate
from .comparison import CORRECTION_NAMES, TEST_NAMES, Comparison, p_value_text
from .errors import InputError
from .formats import escape_text, format_percent, format_value, shown_measures
from .io.frames import to_columns
from .io.source import TextInput
from .io.output import atomic_write, check_output
from .measures import expand
from .plot import plot_results, plot_runs, require_matplotlib
from .report import tie_report

__all__ = ["report_html", "write_report"]

_SCRIPT = ("(function(){function check(){var im=document.images,ok=0;for(var i=0;i<im.length;i++)"
           "{if(im[i].complete&&im[i].naturalWidth>0)ok++;}"
           "document.body.setAttribute('data-images-loaded',ok+'/'+im.length);}"
           "if(document.readyState==='complete')check();else window.addEventListener('load',check);})();")

_CSS = """
:root { --fg: #1d1d1f; --muted: #5f6368; --line: #d9dce1; --band: #f4f6f9; --accent: #1f5fa8;
        --tie: #fff4e0; --tie-line: #e07b00; }
* { box-sizing: border-box; }
body { font-family: system-ui, -apple-system, "Segoe UI", Roboto, "Helvetica Neue", Arial, sans-serif;
       color: var(--fg); margin: 0; line-height: 1.45; background: #fff; }
main { max-width: 1180px; margin: 0 auto; padding: 1.5rem 2rem 3rem; }
header { border-bottom: 2px solid var(--accent); margin-bottom: 1rem; }
h1 { font-size: 1.7rem; margin: 0 0 .25rem; }
h2 { font-size: 1.3rem; margin: 2.2rem 0 .6rem; border-bottom: 1px solid var(--line); padding-bottom: .2rem; }
h3 { font-size: 1.05rem; margin: 1.4rem 0 .4rem; }
p.sub, p.note, figcaption, .muted { color: var(--muted); }
p.note { font-size: .9rem; max-width: 60rem; }
nav { margin: .6rem 0 1rem; font-size: .95rem; }
nav a { color: var(--accent); text-decoration: none; margin-right: 1.2rem; }
nav a:hover { text-decoration: underline; }
.warnings { background: #fff8e6; border-left: 4px solid var(--tie-line); padding: .5rem 1rem; margin: 1rem 0; }
.warnings li { margin: .2rem 0; }
.scroll { overflow-x: auto; }
table { border-collapse: collapse; margin: .4rem 0 .8rem; font-size: .92rem; }
th, td { padding: .3rem .7rem; border-bottom: 1px solid var(--line); vertical-align: top; }
th { background: var(--band); text-align: left; font-weight: 600; white-space: nowrap; }
td.num, th.num { text-align: right; font-variant-numeric: tabular-nums; white-space: nowrap; }
td.name { font-family: ui-monospace, "SFMono-Regular", Menlo, Consolas, monospace; font-size: .88rem;
          white-space: nowrap; }
td .range { display: block; font-size: .8rem; color: var(--muted); }
td.tied { background: var(--tie); }
td.tied .range { color: #8a4b00; }
tbody tr:hover td { background: #eef3fb; }
sup { color: var(--accent); font-weight: 600; }
.legend-swatch { display: inline-block; width: .9rem; height: .9rem; background: var(--tie);
                 border: 1px solid var(--tie-line); vertical-align: -2px; }
figure { margin: 1rem 0 2rem; }
figure img { max-width: 100%; height: auto; border: 1px solid var(--line); display: block; }
pre { background: var(--band); padding: .6rem .8rem; overflow-x: auto; font-size: .85rem; white-space: pre-wrap;
      word-break: break-all; }
td.hash, td.path { white-space: normal; word-break: break-all; }
td.hash { font-size: .78rem; min-width: 22ch; text-align: left; }
footer { margin-top: 3rem; font-size: .85rem; color: var(--muted); }
"""


class _Run:
    """A run of the report: its name, its source, and what the report finds (results, tie report, notes)."""

    def __init__(self, name: str, source: Any) -> None:
        self.name, self.source = name, source
        self.results: Any = None
        self.ties: Any = None
        self.notes: list = []


# ----------------------------------------------------------------------------------------- building


def report_html(qrels: Any, runs: Sequence[Any] | Mapping[str, Any], measures: Any = None, *,
                ties: str = "expected", missing: str = "skip", no_relevant: str = "zero",
                trec_eval_version: int = 10, rel_level: float | None = None, seed: int = 0, test: str = "t",
                alpha: float = 0.05, correction: str = "holm", n_resamples: int = 10000,
                title: str | None = None, command: str | None = None, digits: int = 4,
                plots: bool = True) -> str:
    """The HTML text of a self-contained report on one or more runs.

    Parameters
    ----------
    qrels : dict, pandas.DataFrame or path
        As for :func:`tierank.evaluate`.
    runs : list of runs (paths, dicts, DataFrames) or dict of name to run
        Paths are named by their file names; other runs ``run_1, run_2, ...``.
    measures : str or list of str, optional
        As ``tierank -m``: measure strings, trec_eval names and sets. Default: trec_eval's ``official`` set.
    ties, missing, no_relevant, trec_eval_version, seed
        As for :func:`tierank.evaluate`; the exact minimum and maximum over tie orderings are always
        computed.
    rel_level : number, optional
        trec_eval's ``-l`` (see :func:`tierank.measures.expand`).
    test, alpha, correction, n_resamples
        The significance tests between runs, as for :func:`tierank.compare` (two or more runs; needs
        scipy, else the section says so).
    title : str, optional
        The page title (default: "tierank report: " and the run names).
    command : str, optional
        The command that produced the report, shown under "How this report was made".
    digits : int, default=4
        Decimals of the tables.
    plots : bool, default=True
        Embed the plots (needs matplotlib, else the section says so).

    Returns
    -------
    str
        An HTML5 document; it loads nothing (a Content-Security-Policy forbids every request).

    Examples
    --------
    >>> page = report_html({"q1": {"d1": 1}}, {"A": {"q1": {"d1": 0.5, "d2": 0.5}}}, ["RR"], plots=False)
    >>> "<title>tierank report: A</title>" in page
    True
    >>> "0.7500" in page and "[0.5000, 1.0000]" in page      # RR: d1 first or second
    True
    """
    named = _name_runs(runs)
    with recorded_warnings() as caught:
        shown = shown_measures(expand(_measure_texts(measures), rel_level=rel_level))
    notes = [f"measures: {w}" for w in _messages(caught)]
    with recorded_warnings() as caught:
        judged = to_columns(qrels, "qrels") if _is_path(qrels) or isinstance(qrels, TextInput) else qrels   # once
    notes += [f"qrels: {w}" for w in _messages(caught)]
    columns = list(dict.fromkeys(str(m.measure) for m in shown))
    numeric = [m for m in shown if not m.is_text]
    for run in named:
        source = _read_once(run.source)
        run.results = _evaluate(run, source, judged, columns, ties=ties, missing=missing, seed=seed,
                                no_relevant=no_relevant, trec_eval_version=trec_eval_version)
        run.ties = _tie_report(run, source, judged, numeric, missing=missing, no_relevant=no_relevant,
                               trec_eval_version=trec_eval_version)
        del source
        notes += [f"{run.name}: {w}" for w in run.notes]
    comparison, comparison_note = _compare(named, numeric, test=test, alpha=alpha, correction=correction,
                                           n_resamples=n_resamples, seed=seed)
    notes += comparison_note
    names = ", ".join(r.name for r in named)
    title = title or f"tierank report: {names}"
    body = [
        _header(title, named, ties),
        _warnings_box(notes),
        _means_section(named, shown, ties, digits),
        _significance_section(comparison, numeric, named, digits, test, alpha, correction),
        _ties_section(named, digits),
        _plots_section(named, numeric, comparison) if plots else "",
        _provenance_section(qrels, named, command, dict(ties=ties, missing=missing, no_relevant=no_relevant,
                                                        trec_eval_version=trec_eval_version, seed=seed,
                                                        rel_level=rel_level, test=test, alpha=alpha,
                                                        correction=correction, resamples=n_resamples)),
    ]
    return _page(title, "\n".join(part for part in body if part))


def write_report(path: str | os.PathLike, qrels: Any, runs: Sequence[Any] | Mapping[str, Any],
                 measures: Any = None, **options: Any) -> None:
    """Write :func:`report_html`'s page to ``path`` (UTF-8).

    ``path`` is checked first (:func:`tierank.io.output.check_output`: an OutputError if it is the
    qrels or a run, or cannot be written) and written whole or not at all.

    Examples
    --------
    >>> import os, tempfile
    >>> path = os.path.join(tempfile.mkdtemp(), "report.html")
    >>> write_report(path, {"q1": {"d1": 1}}, [{"q1": {"d1": 0.5}}], ["AP"], plots=False)
    >>> with open(path, encoding="utf-8") as f:
    ...     f.read(15)
    '<!DOCTYPE html>'
    """
    # before any work: never over an input (the qrels, a run), and a missing directory said first
    if not isinstance(runs, Mapping):
        runs = list(runs)   # a generator is read once: by the check it would be gone for the report
    check_output(path, [qrels, *(runs.values() if isinstance(runs, Mapping) else runs)])
    text = report_html(qrels, runs, measures, **options)
    with atomic_write(path) as f:   # whole or not at all
        f.write(text)


def _measure_texts(measures: Any) -> list[str]:
    if measures is None:
        return ["official"]
    if isinstance(measures, str):
        return [measures]
    return [str(m) for m in measures]


def _is_path(x: Any) -> bool:
    return isinstance(x, (str, bytes)) or hasattr(x, "__fspath__")


def _path_of(source: Any) -> str | None:
    """The path a run or qrels was given by (a TextInput's too), or None (in memory, standard input)."""
    if isinstance(source, TextInput):
        source = None if source.is_stdin else source.path
    if not _is_path(source):
        return None
    path = os.fspath(source)
    return path.decode() if isinstance(path, bytes) else path


def _name_runs(runs: Any) -> list[_Run]:
    if isinstance(runs, Mapping):
        out = [_Run(str(k), v) for k, v in runs.items()]
    else:
        runs = list(runs)
        paths = [_path_of(r) for r in runs]
        base = [os.path.basename(p) for p in paths if p is not None]
        full = len(set(base)) < len(base)
        out = []
        for i, (r, path) in enumerate(zip(runs, paths)):
            if isinstance(r, TextInput) and r.is_stdin:
                name = r.name
            elif path is not None:
                name = path if full else os.path.basename(path)
            else:
                name = f"run_{i + 1}"
            out.append(_Run(name, r))
    if not out:
        raise InputError("no run to report on")
    seen: set = set()
    for i, r in enumerate(out):
        if r.name in seen:
            r.name = f"{r.name} ({i + 1})"
        seen.add(r.name)
    return out


@contextmanager
def recorded_warnings() -> Iterator[list]:
    """Record every warning, each time it is raised (the report shows them all; the command line prints
    tierank's on stderr, one line each)."""
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        yield caught


def _messages(caught: list) -> list[str]:
    return list(dict.fromkeys(str(w.message) for w in caught))


def _read_once(source: Any) -> Any:
    """The run as the report reads it twice (evaluation, tie report): standard input (a TextInput) and a
    path naming a pipe or a FIFO (``<(...)``, ``/dev/stdin``), which can be read only once, are read here
    into memory."""
    if isinstance(source, TextInput) or (_is_path(source) and os.path.exists(source) and not os.path.isfile(source)
                                         and not os.path.isdir(source)):
        return to_columns(source, "run")
    return source


def _evaluate(run: _Run, source: Any, qrels: Any, columns: list[str], **options: Any) -> Any:
    with recorded_warnings() as caught:
        res = evaluate(qrels, source, columns, bounds=True, **options)
    run.notes += _messages(caught)
    return res


def _tie_report(run: _Run, source: Any, qrels: Any, numeric: list, **options: Any) -> Any:
    if not numeric:
        return None
    with recorded_warnings() as caught:
        rep = tie_report(qrels, source, {m.label: m.measure for m in numeric}, name=run.name, **options)
    run.notes += [m for m in _messages(caught) if m not in run.notes]
    return rep


def _compare(runs: list[_Run], numeric: list, **options: Any) -> tuple[Any, list[str]]:
    if len(runs) < 2 or not numeric:
        return None, []
    try:
        with recorded_warnings() as caught:
            cmp = Comparison.from_results({r.name: r.results for r in runs},
                                          {m.label: str(m.measure) for m in numeric}, **options)
    except ImportError as err:
        return str(err), []
    except InputError as err:
        return f"no significance tests: {err}", []
    return cmp, [f"significance tests: {w}" for w in _messages(caught)]


# ------------------------------------------------------------------------------------------ HTML


def _e(x: Any) -> str:
    """Text as the page shows it: control and bidi characters as visible escapes (``\\x1b``, ``\\u202e``:
    a right-to-left override in a run name would show ``r\\u202etxt.exe`` as ``rexe.txt``), then HTML's
    special characters as entities. Backslashes are kept, as in messages (the page quotes messages)."""
    import html

    return html.escape(escape_text(x, one_to_one=False), quote=True)


def _page(title: str, body: str) -> str:
    import base64
    import hashlib

    script_hash = base64.b64encode(hashlib.sha256(_SCRIPT.encode()).digest()).decode()
    csp = (f"default-src 'none'; img-src data:; style-src 'unsafe-inline'; script-src 'sha256-{script_hash}'; "
           "base-uri 'none'; form-action 'none'")
    return (f"<!DOCTYPE html>\n<html lang=\"en\">\n<head>\n<meta charset=\"utf-8\">\n"
            f"<meta http-equiv=\"Content-Security-Policy\" content=\"{csp}\">\n"
            f"<meta name=\"viewport\" content=\"width=device-width, initial-scale=1\">\n"
            f"<meta name=\"generator\" content=\"tierank {_e(_version('tierank'))}\">\n"
            f"<title>{_e(title)}</title>\n<style>{_CSS}</style>\n</head>\n<body>\n<main>\n{body}\n</main>\n"
            f"<script>{_SCRIPT}</script>\n</body>\n</html>\n")


def _table(header: Sequence[str], rows: Sequence[Sequence[Any]], numeric_from: int = 1,
           caption: str | None = None) -> str:
    """Cells are HTML already (escaped by the caller); columns from ``numeric_from`` right-aligned."""
    num = ' class="num"'
    head = "".join(f"<th{num if i >= numeric_from else ''}>{h}</th>" for i, h in enumerate(header))
    body = []
    for row in rows:
        cells = []
        for i, c in enumerate(row):
            if isinstance(c, tuple):     # (html, extra class)
                c, cls = c
            else:
                cls = ""
            classes = " ".join(x for x in ("num" if i >= numeric_from else "name" if i == 0 else "", cls) if x)
            attr = f' class="{classes}"' if classes else ""
            cells.append(f"<td{attr}>{c}</td>")
        body.append("<tr>" + "".join(cells) + "</tr>")
    cap = f"<caption class=\"muted\">{caption}</caption>" if caption else ""
    return (f"<div class=\"scroll\"><table>{cap}<thead><tr>{head}</tr></thead><tbody>\n" + "\n".join(body)
            + "\n</tbody></table></div>")


def _fmt(v: Any, count: bool, digits: int) -> str:
    if v is None:
        return ""
    return format_value(v if isinstance(v, str) else float(v), count, digits)


def _differ(lo: Any, hi: Any) -> bool:
    """Whether a range over tie orderings is wider than rounding noise (NaN or None: no range)."""
    if lo is None or hi is None:
        return False
    lo, hi = float(lo), float(hi)
    if np.isnan(lo) or np.isnan(hi):
        return False
    return hi - lo > 1e-12 * (1.0 + max(abs(lo), abs(hi)))


def _decimals(lo: Any, hi: Any, count: bool, digits: int) -> int:
    """``digits``, or more (up to 12) where two different bounds would print the same."""
    while _differ(lo, hi) and digits < 12 and _fmt(lo, count, digits) == _fmt(hi, count, digits):
        digits += 1
    return digits


def _range(lo: float, hi: float, count: bool, digits: int) -> str:
    """``[lo, hi]`` with enough decimals that two different bounds never print the same."""
    d = _decimals(lo, hi, count, digits)
    return f"[{_fmt(lo, count, d)}, {_fmt(hi, count, d)}]"


def _header(title: str, runs: list[_Run], ties: str) -> str:
    n = len(runs)
    counts = sorted({len(r.results.per_query) for r in runs})
    q = str(counts[0]) if len(counts) == 1 else f"{counts[0]} to {counts[-1]}"
    sections = [("means", "Means"), ("significance", "Significance") if n > 1 else None, ("ties", "Ties"),
                ("plots", "Plots"), ("provenance", "How this report was made")]
    nav = " ".join(f"<a href=\"#{a}\">{t}</a>" for a, t in (s for s in sections if s))
    return (f"<header><h1>{_e(title)}</h1>\n<p class=\"sub\">{n} run{'s' if n > 1 else ''}, {q} queries, "
            f"ties={_e(ties)}: tied documents count {_e(_TIES_TEXT.get(ties, ties))}.</p>\n"
            f"<nav>{nav}</nav></header>")


_TIES_TEXT = {"expected": "at the exact mean over all their orderings",
              "lower": "at the exact minimum over all their orderings",
              "upper": "at the exact maximum over all their orderings",
              "optimistic": "with relevant documents first",
              "pessimistic": "with relevant documents last",
              "input": "in the order of the input", "trec_eval": "in trec_eval's order (document id descending)",
              "random": "in a seeded random order"}


def _warnings_box(notes: list[str]) -> str:
    if not notes:
        return ""
    items = "".join(f"<li>{_e(n)}</li>" for n in dict.fromkeys(notes))
    return f"<div class=\"warnings\" id=\"warnings\"><strong>Warnings</strong><ul>{items}</ul></div>"


def _means_section(runs: list[_Run], shown: list, ties: str, digits: int) -> str:
    header = ["measure"] + [_e(r.name) for r in runs]
    rows = []
    any_tied = False
    for m in shown:
        col = str(m.measure)
        row: list = [_e(m.label)]
        for r in runs:
            res = r.results
            if m.is_text:
                row.append(("<span class=\"muted\">text, per query</span>", ""))
                continue
            v, lo, hi = res.mean[col], res.mean_lower[col], res.mean_upper[col]
            cell = _e(_fmt(v, m.is_count, digits))
            tied = _differ(lo, hi)
            any_tied |= tied
            if tied:
                cell += f"<span class=\"range\">{_e(_range(lo, hi, m.is_count, digits))}</span>"
            row.append((cell, "tied" if tied else ""))
        rows.append(row)
    counts = "; counts (num_ret, ...) are summed over queries" if any(m.is_count for m in shown) else ""
    note = (f"<p class=\"note\">The mean over queries under ties={_e(ties)}{counts}. ")
    if any_tied:
        note += ("<span class=\"legend-swatch\"></span> The order of tied documents can change this value: "
                 "below it, the exact range [min, max] over all their orderings (the mean of the per-query "
                 "minima and maxima; shown with more decimals where the value's decimals would hide it). "
                 "Values without a range are the same whatever the order of ties.")
    else:
        note += "No value here depends on the order of tied documents."
    return "<section id=\"means\"><h2>Means</h2>\n" + note + "</p>\n" + _table(header, rows) + "</section>"


def _significance_section(comparison: Any, numeric: list, runs: list[_Run], digits: int, test: str,
                          alpha: float, correction: str) -> str:
    if len(runs) < 2:
        return ""
    head = "<section id=\"significance\"><h2>Significance</h2>\n"
    if comparison is None or isinstance(comparison, str):
        why = comparison or "no numeric measure to compare"
        return head + f"<p class=\"note\">{_e(why)}</p></section>"
    cmp = comparison
    measures = list(cmp.means.columns)
    header = ["", "run"] + [_e(m) for m in measures]
    rows = []
    for run in cmp.means.index:
        row: list = [_e(cmp.letters[run]), _e(run)]
        for m in measures:
            wins = cmp.wins(run, m)
            row.append(_e(cmp.mean_text(run, m, digits)) + (f"<sup>{_e(wins)}</sup>" if wins else ""))
        rows.append(row)
    n = len(next(iter(cmp.per_query.values()))) if cmp.per_query else 0
    corr = CORRECTION_NAMES[cmp.correction]
    note = (f"<p class=\"note\">{_e(TEST_NAMES.get(cmp.test, cmp.test).capitalize())} over the {n} queries every run has, "
            f"{corr} over the pairs of runs, p &le; {cmp.alpha:g}, ties={_e(cmp.ties)}. A superscript "
            "lists the letters of the runs that run is significantly better than."
            + (f" Counts ({_e(', '.join(m for m in measures if m in cmp.counts))}) are summed over the queries, "
               "not tested." if cmp.counts else "") + "</p>")
    pairs = []
    for r in cmp.tests.itertuples():
        sig = "yes" if r.significant else "no"
        pairs.append([_e(r.measure), _e(f"{cmp.letters[r.run_a]} − {cmp.letters[r.run_b]}"),
                      _e(f"{r.diff:+.{digits}f}"), _e(p_value_text(r.p_value)), _e(p_value_text(r.p_adjusted)),
                      (_e(sig) + (f" ({_e(r.better)})" if r.better else ""), "")])
    return (head + note + _table(header, rows, numeric_from=2)
            + "<h3>Every pair</h3>\n"
            + _table(["measure", "runs", "difference", "p", "p adjusted", "significant"], pairs, numeric_from=2)
            + "</section>")


def _ties_section(runs: list[_Run], digits: int) -> str:
    parts = ["<section id=\"ties\"><h2>Ties</h2>\n<p class=\"note\">How much the order of tied documents "
             "moves each measure: the expected value over all orderings, the exact range [min, max], what "
             "trec_eval's tie-break (document id descending) gives, the queries whose value depends on the "
             "order of their ties, and the share of retrieved documents in ties that can change the "
             "measure.</p>"]
    for r in runs:
        rep = r.ties
        if rep is None:
            continue
        parts.append(f"<h3>{_e(r.name)}</h3>\n<p>{_e(rep.headline())}</p>")
        cells = []
        for label, t in rep.table.iterrows():
            count = label in rep.counts
            lo, hi = t["min"], t["max"]
            d = _decimals(lo, hi, count, digits)
            changed = int(t["queries_changed"]) > 0
            cells.append([_e(label), _e(_fmt(t["expected"], count, d)), _e(_fmt(lo, count, d)),
                          _e(_fmt(hi, count, d)), _e(_fmt(t["trec_eval"], count, d)),
                          (_e(f"{int(t['queries_changed'])}/{int(t['queries'])}"), "tied" if changed else ""),
                          _e(format_percent(float(t["docs_share"])))])
        header = ["measure", "expected", "min", "max", "trec_eval", "queries changed", "tied docs"]
        parts.append(_table([_e(h) for h in header], cells))
    parts.append("</section>")
    return "\n".join(parts)


def _plots_section(runs: list[_Run], numeric: list, comparison: Any) -> str:
    head = "<section id=\"plots\"><h2>Plots</h2>\n"
    try:
        require_matplotlib()
    except ImportError as err:
        return head + f"<p class=\"note\">{_e(err)}</p></section>"
    if not numeric:
        return head + "<p class=\"note\">No numeric measure to plot.</p></section>"
    if len(runs) == 1:
        note = ("Per query, sorted by value: the value under the chosen tie mode (dot) and the exact range "
                "[min, max] over all orderings of tied documents (vertical line); the dashed line is the "
                "mean, the grey band its range.")
    else:
        note = (f"Left: each run's mean with the range ties allow. Right: per query, each run minus "
                f"{_e(runs[0].name)}, sorted, with the exact range of the difference over the tie orderings "
                "of both runs.")
    figures = []
    cmp = comparison if comparison is not None and not isinstance(comparison, str) else None
    for i, m in enumerate(numeric):
        png = _png({r.name: r.results for r in runs}, m.label, str(m.measure), cmp)
        alt = f"{m.label}: " + ("per query, with the range ties allow" if len(runs) == 1
                                else "means and per-query differences between runs")
        figures.append(f"<h3 id=\"plot-{i}\">{_e(m.label)}</h3>\n<figure><img alt=\"{_e(alt)}\" "
                       f"src=\"data:image/png;base64,{png}\"></figure>")
    return head + f"<p class=\"note\">{note}</p>\n" + "\n".join(figures) + "</section>"


def _png(results: dict, label: str, column: str, comparison: Any) -> str:
    import base64

    from matplotlib.figure import Figure

    if len(results) == 1:
        fig = Figure(figsize=(10, 4.2), layout="constrained")
        plot_results(next(iter(results.values())), column, ax=fig.add_subplot(), label=label)
    else:
        fig = Figure(figsize=(11, 4.5), layout="constrained")
        plot_runs(results, column, comparison=comparison, axes=fig.subplots(1, 2, width_ratios=[1, 2]),
                  label=label)
    buf = io.BytesIO()
    fig.savefig(buf, format="png", dpi=100)
    return base64.b64encode(buf.getvalue()).decode("ascii")


# ------------------------------------------------------------------------------------- provenance


def _version(package: str) -> str:
    from importlib import metadata

    try:
        return metadata.version(package)
    except metadata.PackageNotFoundError:
        return "not installed"


def _file_row(label: str, source: Any) -> list:
    if isinstance(source, TextInput) and source.is_stdin:
        return [_e(label), _e(source.name), "", ""]
    path = _path_of(source)
    if path is None:
        return [_e(label), _e(f"in memory ({type(source).__name__})"), "", ""]
    if path == "-" or not os.path.isfile(path):
        return [_e(label), _e(path), "", ""]
    import hashlib

    digest = hashlib.sha256()
    with open(path, "rb") as f:
        for chunk in iter(lambda: f.read(1 << 20), b""):
            digest.update(chunk)
    return [_e(label), (_e(os.path.abspath(path)), "path"), _e(f"{os.path.getsize(path):,}"),
            (f"<code>{digest.hexdigest()}</code>", "hash")]


def _provenance_section(qrels: Any, runs: list[_Run], command: str | None, options: dict) -> str:
    files = [_file_row("qrels", qrels)] + [_file_row(r.name, r.source) for r in runs]
    versions = [[_e(p), _e(_version(p))] for p in ("tierank", "numpy", "pandas", "scipy", "matplotlib")]
    versions.append(["python", _e(f"{platform.python_version()} ({platform.python_implementation()})")])
    versions.append(["platform", _e(platform.platform())])
    opts = [[_e(k), _e(v)] for k, v in options.items() if v is not None]
    when = datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%d %H:%M:%S UTC")
    cmd = command if command is not None else "(built from Python: tierank.html_report.report_html)"
    return ("<section id=\"provenance\"><h2>How this report was made</h2>\n"
            f"<h3>Command</h3>\n<pre>{_e(cmd)}</pre>\n"
            "<h3>Inputs</h3>\n" + _table(["", "file", "bytes", "sha256"], files, numeric_from=2)
            + "<h3>Options</h3>\n" + _table(["option", "value"], opts, numeric_from=9)
            + "<h3>Versions</h3>\n" + _table(["", "version"], versions, numeric_from=9)
            + f"<footer>Written by tierank {_e(_version('tierank'))} on {_e(when)}.</footer></section>")


def command_line(argv: Sequence[str] | None = None) -> str:
    """The command as typed, quoted for a POSIX shell (``tierank`` and its arguments)."""
    import shlex   # only here (loading it compiles a regex)
    args = list(sys.argv[1:] if argv is None else argv)
    return " ".join(["tierank"] + [shlex.quote(a) for a in args])
