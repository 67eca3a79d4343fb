"""The HTML report: self-contained, and showing what the evaluation gives (parsed, not eyeballed)."""

from __future__ import annotations

import base64
import html
import hashlib
import os
import re
import sys
from html.parser import HTMLParser

import pytest
from click.testing import CliRunner

import tierank
from tierank.cli import main
from tierank.html_report import report_html, write_report
from tierank.io.source import TextInput

DATA = os.path.join(os.path.dirname(__file__), "data", "trec_eval")
QRELS = os.path.join(DATA, "qrels.test")
RUN = os.path.join(DATA, "results.test")
PNG = b"\x89PNG\r\n\x1a\n"


class Page(HTMLParser):
    """Title, CSP, inline scripts and styles, images, links, and every table as rows of cell texts,
    grouped by the id of the <section> they are in."""

    def __init__(self, text: str) -> None:
        super().__init__(convert_charrefs=True)
        self.title = ""
        self.csp = None
        self.scripts: list[str] = []
        self.styles: list[str] = []
        self.images: list[dict] = []
        self.urls: list[str] = []
        self.tags: set[str] = set()
        self.tables: dict[str, list[list[list[str]]]] = {}
        self.section = None
        self._stack: list[str] = []
        self._cell = None
        self._row = None
        self.feed(text)
        self.close()

    def handle_starttag(self, tag, attrs):
        a = dict(attrs)
        self.tags.add(tag)
        self._stack.append(tag)
        if tag == "section":
            self.section = a.get("id")
        if tag == "meta" and a.get("http-equiv") == "Content-Security-Policy":
            self.csp = a["content"]
        if tag == "img":
            self.images.append(a)
        for key in ("src", "href", "action", "srcset", "poster", "data"):
            if key in a:
                self.urls.append(a[key])
        if tag == "table":
            self.tables.setdefault(self.section, []).append([])
        if tag == "tr":
            self._row = []
        if tag in ("td", "th"):
            self._cell = []

    def handle_endtag(self, tag):
        if self._stack:
            self._stack.pop()
        if tag in ("td", "th") and self._cell is not None:
            self._row.append(" ".join("".join(self._cell).split()))
            self._cell = None
        if tag == "tr" and self._row is not None:
            self.tables[self.section][-1].append(self._row)
            self._row = None

    def handle_data(self, data):
        top = self._stack[-1] if self._stack else ""
        if top == "title":
            self.title += data
        elif top == "script":
            self.scripts.append(data)
        elif top == "style":
            self.styles.append(data)
        if self._cell is not None:
            self._cell.append(data + " ")

    def table(self, section: str, i: int = 0) -> dict[str, list[str]]:
        """A table of a section as {first cell: other cells}."""
        return {row[0]: row[1:] for row in self.tables[section][i][1:]}


def trec_eval_all(path: str) -> dict[str, str]:
    """trec_eval's own summary lines (measure, 'all', value) from its expected output."""
    out = {}
    with open(path) as f:
        for line in f:
            name, qid, value = line.split()
            if qid == "all":
                out[name] = value
    return out


# --------------------------------------------------------------------------------- self-contained


def test_the_page_loads_nothing(tmp_path):
    page_text = report_html(QRELS, [RUN, RUN], ["AP", "P@10"])
    page = Page(page_text)
    assert page_text.startswith("<!DOCTYPE html>")
    assert page.csp is not None and "default-src 'none'" in page.csp and "img-src data:" in page.csp
    # every URL in the page is a data: URI; no stylesheet, font or script is fetched
    assert page.urls and all(u.startswith(("data:", "#")) for u in page.urls)
    assert "link" not in page.tags and "iframe" not in page.tags
    assert not any(re.search(r"url\(|@import", s) for s in page.styles)
    # the one inline script is allowed by its hash, nothing else is
    assert len(page.scripts) == 1
    digest = base64.b64encode(hashlib.sha256(page.scripts[0].encode()).digest()).decode()
    assert f"script-src 'sha256-{digest}'" in page.csp
    # images: PNG files in data: URIs
    assert len(page.images) == 2
    for img in page.images:
        prefix = "data:image/png;base64,"
        assert img["src"].startswith(prefix) and img["alt"]
        assert base64.b64decode(img["src"][len(prefix):]).startswith(PNG)


def test_names_are_escaped():
    name = "<b>run & \"co\"</b>"
    page_text = report_html({"q": {"d": 1}}, {name: {"q": {"d": 1.0, "e": 1.0}}}, ["RR"], plots=False)
    assert "<b>run" not in page_text
    assert Page(page_text).title == f"tierank report: {name}"


# ----------------------------------------------------------------------------------- the numbers


def test_trec_eval_test_run_shows_trec_eval_numbers():
    """With trec_eval's tie-break the table of means is trec_eval's own output (its test data)."""
    page = Page(report_html(QRELS, [RUN], None, ties="trec_eval", plots=False))
    means = page.table("means")
    expected = trec_eval_all(os.path.join(DATA, "out.test"))
    checked = 0
    for name, value in expected.items():
        if name in means:
            assert means[name][0].split(" [")[0] == value, name
            checked += 1
    assert checked >= 25     # every measure of trec_eval's default set but runid
    assert page.title == "tierank report: results.test"
    assert "significance" not in page.tables      # one run: no tests


def test_ties_by_hand():
    # d1 (relevant) ties with d2 at the top: RR is 1 or 1/2, expected 3/4; trec_eval puts d2 first (1/2)
    qrels = {"q1": {"d1": 1}}
    run = {"q1": {"d1": 0.5, "d2": 0.5, "d3": 0.1}}
    page = Page(report_html(qrels, {"tied": run}, ["RR", "P@3"], plots=False))
    means = page.table("means")
    assert means["RR"] == ["0.7500 [0.5000, 1.0000]"]
    assert means["P@3"] == ["0.3333"]                    # no range: ties cannot change it
    ties = page.table("ties")
    assert ties["RR"] == ["0.7500", "0.5000", "1.0000", "0.5000", "1/1", "66.7%"]
    assert ties["P@3"][4] == "0/1"


def test_a_range_hidden_by_rounding_gets_more_decimals():
    # two relevant items: "a" first, "z" tied with "y" after 1000 others: z at rank 1002 or 1003, so by
    # hand AP = (1/1 + 2/r) / 2 lies in [(1 + 2/1003) / 2, (1 + 2/1002) / 2]: equal to 4 decimals
    qrels = {"q": {"a": 1, "z": 1}}
    run = {"q": {"a": 3.0, **{f"n{i:04d}": 2.0 - i / 1e4 for i in range(1000)}, "z": 0.5, "y": 0.5}}
    lo, hi = (1 + 2 / 1003) / 2, (1 + 2 / 1002) / 2
    assert f"{lo:.4f}" == f"{hi:.4f}"          # the premise
    page = Page(report_html(qrels, {"r": run}, ["AP"], plots=False))
    value, bracket = page.table("means")["AP"][0].split(" [")
    shown_lo, shown_hi = bracket.rstrip("]").split(", ")
    decimals = len(shown_lo.split(".")[1])
    assert decimals > 4 and shown_lo != shown_hi
    assert (shown_lo, shown_hi) == (f"{lo:.{decimals}f}", f"{hi:.{decimals}f}")
    assert value == f"{(lo + hi) / 2:.4f}"
    assert page.table("ties")["AP"][1:3] == [shown_lo, shown_hi]


def test_significance_table_marks_wins():
    qrels = {f"q{i}": {"r": 1} for i in range(8)}
    good = {q: {"r": 2.0, "x": 1.0} for q in qrels}             # RR 1 everywhere
    bad = {q: {"r": 1.0, "x": 2.0} for q in qrels}              # RR 1/2 everywhere
    page = Page(report_html(qrels, {"good": good, "bad": bad}, ["RR"], test="permutation", plots=False))
    sig = page.table("significance", 0)
    assert sig["a"] == ["good", "1.0000 b"]                    # <sup>b</sup>: better than b
    assert sig["b"] == ["bad", "0.5000"]
    pairs = page.tables["significance"][1]
    assert pairs[1][:3] == ["RR", "a − b", "+0.5000"]
    assert pairs[1][3] == f"{2 / 256:.4f}"                     # exact sign-flip test: 2 of 2^8 patterns
    assert pairs[1][5] == "yes (good)"


def test_counts_are_summed_as_integers_and_not_tested():
    """num_ret and num_rel_ret were t-tested and printed as 4.0000 in the significance table (before); now
    they are shown as integers and have no row among the pairs, and the note says so."""
    qrels = {"q1": {"d1": 1, "d2": 1}, "q2": {"d1": 1}, "q3": {"d9": 1}}
    a = {"q1": {"d1": 0.5, "d2": 0.4, "d3": 0.3}, "q2": {"d1": 1.0}, "q3": {"d1": 1.0, "d2": 0.9}}
    b = {"q1": {"d3": 0.5}, "q2": {"d2": 1.0, "d1": 0.5}, "q3": {"d9": 1.0}}
    page_text = report_html(qrels, {"a": a, "b": b}, ["num_ret", "P@1", "num_rel_ret"], plots=False)
    page = Page(page_text)
    sig = page.table("significance", 0)
    # by hand: a retrieves 3 + 1 + 2 = 6 documents, 2 + 1 + 0 = 3 relevant; b 1 + 2 + 1 = 4, 0 + 1 + 1 = 2
    assert sig["a"] == ["a", "6", f"{(1 + 1 + 0) / 3:.4f}", "3"]
    assert sig["b"] == ["b", "4", f"{(0 + 0 + 1) / 3:.4f}", "2"]
    pairs = page.tables["significance"][1]
    assert [row[0] for row in pairs[1:]] == ["P@1"]
    assert "Counts (num_ret, num_rel_ret) are summed over the queries, not tested." in page_text


def test_warnings_are_shown_in_the_page():
    import warnings

    qrels = {"q1": {"d": 1}, "q2": {"d": 1}}
    run = {"q1": {"d": 1.0}}
    with warnings.catch_warnings():
        warnings.simplefilter("error")       # the report shows warnings instead of raising them
        text = report_html(qrels, {"partial": run}, ["AP"], plots=False)
    box = re.search(r'<div class="warnings".*?</div>', text, re.S)
    assert box is not None
    assert "partial: 1 judged query is missing" in box.group(0)


def test_provenance(tmp_path):
    text = report_html(QRELS, [RUN], ["AP"], command="tierank report x y -o z", plots=False)
    page = Page(text)
    inputs = page.tables["provenance"][0]
    with open(RUN, "rb") as f:
        digest = hashlib.sha256(f.read()).hexdigest()
    assert ["results.test", os.path.abspath(RUN), f"{os.path.getsize(RUN):,}", digest] in inputs
    assert page.table("provenance", 1)["ties"] == ["expected"]
    versions = page.table("provenance", 2)
    assert versions["tierank"] == [tierank.__version__]
    assert "tierank report x y -o z" in text


# ------------------------------------------------------------------------------------------ plots


def test_one_plot_per_numeric_measure():
    page = Page(report_html(QRELS, [RUN], ["AP", "NumRet", "RelString", "P@5"]))
    assert len(page.images) == 3                                # RelString is text: no plot
    assert page.table("means")["RelString"] == ["text, per query"]


def test_without_matplotlib_the_section_says_so(monkeypatch):
    monkeypatch.setitem(sys.modules, "matplotlib", None)
    text = report_html(QRELS, [RUN], ["AP"])
    from tierank.errors import install_hint

    assert "<img" not in text and html.escape(install_hint("plot")) in text


def test_write_report(tmp_path):
    path = tmp_path / "r.html"
    write_report(path, QRELS, [RUN], ["AP"], plots=False)
    assert Page(path.read_text(encoding="utf-8")).table("means")["AP"][0].startswith("0.1785")


# -------------------------------------------------------------------------------------------- CLI


def test_cli_report(tmp_path):
    out = tmp_path / "report.html"
    result = CliRunner().invoke(main, ["report", QRELS, RUN, RUN, "-m", "AP", "P@10", "-o", str(out),
                                       "--title", "Two copies"])
    assert result.exit_code == 0, result.output
    assert result.output == ""
    page = Page(out.read_text(encoding="utf-8"))
    assert page.title == "Two copies"
    assert len(page.images) == 2
    assert "significance" in page.tables
    command = f"tierank report {QRELS} {RUN} {RUN} -m AP P@10 -o {out} --title 'Two copies'"
    assert f"<pre>{command}</pre>".replace("'", "&#x27;") in out.read_text(encoding="utf-8")


def test_cli_report_to_stdout_and_errors(tmp_path):
    result = CliRunner().invoke(main, ["report", QRELS, RUN, "-m", "AP", "-o", "-", "--no-plots"])
    assert result.exit_code == 0 and result.output.startswith("<!DOCTYPE html>")
    bad = tmp_path / "bad.run"
    bad.write_text("301 Q0 d1 1 notanumber x\n")
    out = tmp_path / "never.html"
    result = CliRunner().invoke(main, ["report", QRELS, str(bad), "-m", "AP", "-o", str(out)])
    assert result.exit_code == 2 and "bad.run" in result.output
    assert not out.exists()
    result = CliRunner().invoke(main, ["report", QRELS, RUN, "-m", "AP"])
    assert result.exit_code == 2 and "-o" in result.output


def test_cli_report_reads_standard_input_and_parquet_directories(tmp_path):
    # `tierank report` took paths of regular files only: '-' (which `tierank eval` reads) was refused as
    # "File '-' does not exist", and a Parquet directory as a directory
    def page(args, stdin=None):
        out = tmp_path / "r.html"
        result = CliRunner().invoke(main, ["report", *args, "-m", "AP", "P@10", "-o", str(out), "--no-plots"],
                                    input=stdin)
        assert result.exit_code == 0, result.output
        return Page(out.read_text(encoding="utf-8"))

    def run_name(p):
        return p.tables["means"][0][0][1]
    from_files = page([QRELS, RUN])
    with open(RUN, "rb") as f:
        run_bytes = f.read()
    with open(QRELS, "rb") as f:
        qrels_bytes = f.read()
    from_stdin = page([QRELS, "-"], stdin=run_bytes)
    assert from_stdin.table("means") == from_files.table("means") and run_name(from_stdin) == "<stdin>"
    assert page(["-", RUN], stdin=qrels_bytes).table("means") == from_files.table("means")
    folder = tmp_path / "run.parquet"
    folder.mkdir()
    tierank.read_run(RUN).to_parquet(folder / "part-0.parquet")
    from_parquet = page([QRELS, str(folder)])
    assert from_parquet.table("means") == from_files.table("means") and run_name(from_parquet) == "run.parquet"
    result = CliRunner().invoke(main, ["report", "-", "-", "-m", "AP", "-o", str(tmp_path / "x.html")],
                                input=run_bytes)
    assert result.exit_code == 2 and "'-' (standard input) can be read only once" in result.output


def test_cli_report_takes_the_formats_eval_takes(tmp_path):
    # a qrels file of three fields is refused "say --qrels-format beir", which `tierank report` did not take
    beir = tmp_path / "qrels.beir"
    trec = tmp_path / "qrels.trec"
    with open(QRELS) as f:
        lines = [line.split() for line in f if line.strip()]
    beir.write_text("".join(f"{q}\t{d}\t{g}\n" for q, _, d, g in lines))
    trec.write_text("".join(f"{q} 0 {d} {g}\n" for q, _, d, g in lines))
    msmarco = tmp_path / "run.msmarco"   # qid docid rank, no score: scored -rank (ranks 1, 2, ... per query)
    seen: dict = {}
    with open(RUN) as f:
        rows = [line.split() for line in f if line.strip()]
    with open(msmarco, "w") as f:
        for q, _, d, *_ in rows:
            seen[q] = seen.get(q, 0) + 1
            f.write(f"{q}\t{d}\t{seen[q]}\n")

    def page(args):
        out = tmp_path / "r.html"
        result = CliRunner().invoke(main, ["report", *args, "-m", "AP", "P@10", "-o", str(out), "--no-plots"])
        assert result.exit_code == 0, result.output
        return Page(out.read_text(encoding="utf-8")).table("means")
    refused = CliRunner().invoke(main, ["report", str(beir), RUN, "-m", "AP", "-o", str(tmp_path / "x.html")])
    assert refused.exit_code == 2 and "--qrels-format beir" in refused.output
    assert page([str(beir), RUN, "--qrels-format", "beir"]) == page([str(trec), RUN])
    want = tierank.evaluate(QRELS, TextInput(str(msmarco), "msmarco"), ["AP"]).mean["AP"]
    assert page([QRELS, str(msmarco), "--run-format", "msmarco"])["AP"][0].startswith(f"{want:.4f}")
