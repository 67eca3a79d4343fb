"""Human-readable outputs show ids and names as text: control and bidi characters as visible escapes
(never raw, never stripped), HTML in Markdown cells as entities, ``$`` in plot labels as itself.

Expected values: the escapes written out by hand (``\\x1b``, ``\\u202e``), Python's ``unicode_escape``
codec (which reads the escapes back), and the names themselves.
"""

from __future__ import annotations

import io
import os
import unicodedata
from pathlib import Path

import pytest
from click.testing import CliRunner
from hypothesis import given, settings
from hypothesis import strategies as st

import tierank
from tierank.cli import main
from tierank.formats import escape_text, markdown_escape

ESCAPED = {"Cc", "Cf", "Cs", "Zl", "Zp"}


def raw_controls(text: str) -> list[str]:
    """The characters of ``text`` that must never be written raw (the newlines and tabs of the layout
    excepted)."""
    return [c for c in text if c not in "\n\t" and unicodedata.category(c) in ESCAPED]


def unescape(shown: str) -> str:
    """Read escape_text's output back, with Python's own codec (independent of escape_text)."""
    return shown.encode("latin-1", "backslashreplace").decode("unicode_escape")


@settings(deadline=None, derandomize=True, database=None, max_examples=300)
@given(st.text(max_size=12), st.text(max_size=12))
def test_property_escape_text_is_one_to_one_and_visible(a, b):
    shown = escape_text(a)
    assert unescape(shown) == a                 # nothing lost: distinct texts are shown differently
    assert (escape_text(b) == shown) == (a == b)
    assert raw_controls(shown + "x") == []      # nothing acts on the terminal
    assert "\n" not in shown                    # one line
    if a.isprintable() and "\\" not in a:
        assert shown == a                       # the usual id unchanged


def test_escape_examples():
    assert escape_text("q1\x1b]0;title\x07") == "q1\\x1b]0;title\\x07"
    assert escape_text("abc\u202edef") == "abc\\u202edef"
    assert escape_text("a\\b") == "a\\\\b"
    assert escape_text("\u2066x\u2069\u200e\u061c\x85\x7f") == "\\u2066x\\u2069\\u200e\\u061c\\x85\\x7f"
    assert markdown_escape("<b>x</b> & \x1b") == "&lt;b&gt;x&lt;/b&gt; &amp; \\\\x1b"


# ------------------------------------------------------------------------------------- the command

RUN_NAME = "r\x1b]0;title\x07.run"      # an OSC sequence in a file name: sets the terminal's title
QIDS = ["q\u202e1", "q\\u202e1", "<b>q|3</b>", "q\x854"]   # RLO, the same shown as text, HTML, a C1 control


@pytest.fixture
def files(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    qrels = "".join(f"{q} 0 d1 1\n" for q in QIDS)
    run = "".join(f"{q} Q0 d1 1 0.5 t\n{q} Q0 d2 2 0.5 t\n" for q in QIDS)
    (tmp_path / "qrels").write_text(qrels, encoding="utf-8")
    (tmp_path / RUN_NAME).write_text(run, encoding="utf-8")
    (tmp_path / "b.run").write_text(run.replace("0.5 t\n" + QIDS[0] + " Q0 d2", "0.9 t\n" + QIDS[0] + " Q0 d2"),
                                    encoding="utf-8")
    monkeypatch.chdir(tmp_path)
    return tmp_path


SHOWN_IDS = ["q\\u202e1", "q\\\\u202e1", "<b>q|3</b>", "q\\x854"]
SHOWN_RUN = "r\\x1b]0;title\\x07.run"


@pytest.mark.parametrize("args", [
    ["-q"], ["-q", "-f", "trec"], ["-q", "-f", "latex"], ["-q", "--bounds"],
    ["ties"], ["ties", "-f", "latex"], ["two", "-q"], ["two", "--compare"],
])
def test_ids_and_names_are_shown_escaped(files, args):
    """Regression: ids and run names with control and bidi characters reached the terminal raw."""
    if args[:1] == ["ties"]:
        cmd = ["ties", "qrels", RUN_NAME, "-m", "AP", *args[1:]]
    elif args[:1] == ["two"]:
        cmd = ["qrels", RUN_NAME, "b.run", "-m", "AP", *args[1:]]
    else:
        cmd = ["qrels", RUN_NAME, "-m", "AP", *args]
    res = CliRunner().invoke(main, cmd)
    assert res.exit_code == 0, res.output
    assert raw_controls(res.output) == []
    latex = {"\\": "\\textbackslash{}", "_": "\\_", "&": "\\&", "{": "\\{", "}": "\\}", "$": "\\$",
             "<": "\\textless{}", ">": "\\textgreater{}", "|": "\\textbar{}"}

    def shown(text: str) -> str:   # as LaTeX writes the text
        return "".join(latex.get(c, c) for c in text) if "latex" in args else text
    if "--compare" not in args and "trec" not in args:
        assert shown(SHOWN_RUN) in res.output
    if "-q" in args:
        for text in SHOWN_IDS:
            assert shown(text) in res.output, text


def test_markdown_escapes_html_and_control_characters(files):
    """Regression: `-f markdown` passed HTML in ids through, and control characters raw."""
    for cmd in (["qrels", RUN_NAME, "-m", "AP", "-q", "-f", "markdown"],
                ["qrels", RUN_NAME, "b.run", "-m", "AP", "-q", "-f", "markdown"],
                ["qrels", RUN_NAME, "b.run", "-m", "AP", "--compare", "-f", "markdown"],
                ["ties", "qrels", RUN_NAME, "-m", "AP", "-f", "markdown"]):
        res = CliRunner().invoke(main, cmd)
        assert res.exit_code == 0, res.output
        out = res.output
        assert raw_controls(out) == [] and "<b>" not in out
        assert "r\\\\x1b\\]0;title\\\\x07.run" in out          # the backslash doubled for Markdown, ] escaped
        if "-q" in cmd:
            assert "| &lt;b&gt;q\\|3&lt;/b&gt; |" in out
            assert "| q\\\\u202e1 |" in out and "| q\\\\\\\\u202e1 |" in out   # still two different ids
        if "--compare" in cmd:
            assert "<sup>" in out or "| b.run | 0." in out   # the significance markup is kept


def test_trec_layout_unchanged_for_plain_ids(tmp_path):
    """trec_eval's layout: ids without control characters or backslashes are written as they are."""
    (tmp_path / "qrels").write_text("q<1> 0 d1 1\nq&2 0 d1 1\n")
    (tmp_path / "run").write_text("q<1> Q0 d1 1 0.5 t\nq&2 Q0 d2 1 0.5 t\n")
    res = CliRunner().invoke(main, [str(tmp_path / "qrels"), str(tmp_path / "run"), "-m", "P@1", "-q",
                                    "-f", "trec"])
    assert res.output == ("P_1                   \tq&2\t0.0000\nP_1                   \tq<1>\t1.0000\n"
                          "P_1                   \tall\t0.5000\n")


def test_messages_are_escaped(files):
    """A warning naming a run file with a terminal escape sequence in its name stays one visible line."""
    (files / "qrels").write_text(f"{QIDS[0]} 0 d1 1\nq9 0 d1 1\n", encoding="utf-8")
    res = CliRunner().invoke(main, ["qrels", RUN_NAME, "-m", "AP", "-f", "json"])
    assert res.exit_code == 0
    assert raw_controls(res.output) == []
    assert f"tierank: warning: {SHOWN_RUN}: " in res.output


# ------------------------------------------------------------------------------------------- plots

DOLLAR = "c$x_{$.run"


def test_plot_labels_are_literal(files):
    """Regression: a run named c$x_{$.run went to matplotlib's mathtext, which failed on the figure."""
    from matplotlib.figure import Figure

    from tierank.plot import plot_runs

    res = tierank.evaluate("qrels", "b.run", ["AP"], bounds=True)
    names = [DOLLAR, "a\x1bb", "$\\alpha$"]
    fig = Figure()
    plot_runs({n: res for n in names}, "AP", axes=fig.subplots(1, 2))
    fig.savefig(io.BytesIO(), format="png")
    assert [t.get_text() for t in fig.axes[0].get_xticklabels()] == [DOLLAR, "a\\x1bb", "$\\\\alpha$"]
    legend = [t.get_text() for t in fig.axes[1].get_legend().get_texts()]
    assert f"a\\x1bb - {DOLLAR}" in legend
    single = tierank.evaluate_matrix([[1, 0]], scores=[[1, 1]], measures=["RR"], bounds=True)
    single.per_query.index = [DOLLAR]
    single.lower.index = single.upper.index = [DOLLAR]
    ax = single.plot("RR", ax=Figure().add_subplot())
    ax.figure.savefig(io.BytesIO(), format="png")
    assert [t.get_text() for t in ax.get_xticklabels()] == [DOLLAR]


def test_plot_and_report_of_a_dollar_run_name(files):
    """Regression: `tierank report` and `--plot` with two runs, one named c$x_{$.run: a traceback."""
    (files / DOLLAR).write_bytes((files / "b.run").read_bytes())
    res = CliRunner().invoke(main, ["qrels", DOLLAR, RUN_NAME, "-m", "AP", "--plot", "p.png"])
    assert res.exit_code == 0, res.output
    assert (files / "p.png").read_bytes()[:4] == b"\x89PNG"
    res = CliRunner().invoke(main, ["report", "qrels", DOLLAR, RUN_NAME, "-m", "AP", "-o", "r.html"])
    assert res.exit_code == 0, res.output
    page = (files / "r.html").read_text(encoding="utf-8")
    assert page.startswith("<!DOCTYPE html>") and "data:image/png;base64," in page
    assert os.path.getsize(files / "r.html") > 1000


def test_messages_keep_the_backslashes_of_quoted_ids(tmp_path, monkeypatch):
    """Messages quote ids and lines with repr, whose escapes are shown once (the line's tabs read
    'q1\\td1', not 'q1\\\\td1' as when the backslash was doubled), while a control character of a file
    name is still escaped."""
    (tmp_path / "qrels").write_text("q1 0 d1 1\n")
    name = "m3\x1b[2J.tsv"
    (tmp_path / name).write_text("q1\td1\t30\n")
    monkeypatch.chdir(tmp_path)
    res = CliRunner().invoke(main, ["qrels", name, "-m", "RR"])
    assert res.exit_code == 2 and raw_controls(res.output) == [], res.output
    assert "tierank: error: m3\\x1b[2J.tsv:1: the run's format is not detected" in res.output, res.output
    assert "('q1\\td1\\t30')" in res.output, res.output


def test_html_report_shows_control_and_bidi_characters_escaped(files):
    """Regression (hostile probe): the HTML report wrote a run name's U+202E and a title's ESC raw (a
    browser shows 'r\\u202etxt.exe' as 'rexe.txt'); every other output escaped them."""
    name = "r\u202etxt.exe"
    Path(name).write_text(Path(RUN_NAME).read_text(encoding="utf-8"), encoding="utf-8")
    res = CliRunner().invoke(main, ["report", "qrels", name, "-m", "AP", "-o", "rep.html", "--no-plots",
                                    "--title", "T\x1b[2J"])
    assert res.exit_code == 0, res.output
    page = Path("rep.html").read_text(encoding="utf-8")
    assert "\u202e" not in page and "\x1b" not in page
    assert "r\\u202etxt.exe" in page and "T\\x1b[2J" in page


# ------------------------------------------------ Markdown cells read as the text table (markdown-it)

def _rendered_cells(table: str) -> list[list[tuple[list[str], str]]]:
    """The cells of a Markdown table as a CommonMark + GFM-tables renderer (markdown-it-py, as GitHub's
    tables) reads them: per cell, the inline token types and the text they show."""
    from markdown_it import MarkdownIt

    tokens = MarkdownIt("commonmark").enable(["table", "strikethrough"]).parse(table)
    rows, row = [], None
    for tok in tokens:
        if tok.type == "tr_open":
            row = []
        elif tok.type == "inline" and row is not None:
            kids = tok.children or []
            row.append(([k.type for k in kids], "".join(k.content for k in kids)))
        elif tok.type == "tr_close":
            rows.append(row)
            row = None
    return rows


MARKDOWN_TEXT = st.text(alphabet=st.sampled_from(list("ab1_*`[]()~<>&|\\!#é-. ") + ["\x1b", "\u202e"]),
                        min_size=1, max_size=10).map(str.strip).filter(bool)


@settings(deadline=None, derandomize=True, database=None, max_examples=400)
@given(MARKDOWN_TEXT, MARKDOWN_TEXT)
def test_property_markdown_cells_render_as_the_text_table_shows_them(a, b):
    """Regression: `-f markdown` left emphasis, code and link syntax in ids active (q*2* showed an
    italic 2): every cell must render as plain text equal to escape_text's."""
    from tierank.formats import markdown_table

    rows = _rendered_cells(markdown_table(["query", "AP"], [[a, "0.5000"], [b, "1.0000"]]))
    assert [cells[0] for cells in rows] == [(["text"], "query"), (["text"], escape_text(a)),
                                            (["text"], escape_text(b))]
    assert all(kind == "text" for _, cells in zip(rows, rows) for kind in cells[1][0])


def test_markdown_measure_names_keep_their_underscores():
    # inside a word an underscore is never emphasis: ndcg_cut_10 is written as it is
    assert markdown_escape("ndcg_cut_10") == "ndcg_cut_10"
    assert markdown_escape("_x_") == "\\_x\\_" and markdown_escape("q*2*") == "q\\*2\\*"


# --------------------------------------------------- a query named "all" beside the row of means

@pytest.mark.parametrize("fmt", ["trec", "table", "csv", "markdown", "latex"])
def test_a_query_named_all_is_refused_where_the_means_row_is_all(tmp_path, fmt):
    """Regression: with -q, a query 'all' gave a second row 'all' (trec_eval's layout: `map all 1.0`
    twice) and a reader could take its value for the mean."""
    (tmp_path / "qrels").write_text("all 0 d1 1\nq2 0 d1 1\n")
    (tmp_path / "run").write_text("all Q0 d1 1 0.5 t\nq2 Q0 d2 1 0.5 t\n")
    res = CliRunner().invoke(main, [str(tmp_path / "qrels"), str(tmp_path / "run"), "-m", "P@1", "-q", "-f", fmt])
    assert res.exit_code == 2 and res.stdout == ""
    assert res.stderr == ("tierank: error: run: the query id 'all' cannot be told apart from the "
                          f"row 'all' of the means in per-query {fmt} output; rename the query, or use the json "
                          "format\n")
    # without -q there is one row 'all', the mean: (1 + 0) / 2 by hand
    res = CliRunner().invoke(main, [str(tmp_path / "qrels"), str(tmp_path / "run"), "-m", "P@1", "-f", "trec"])
    assert res.exit_code == 0 and res.stdout == "P_1                   \tall\t0.5000\n"
    # json keeps the query and the mean apart
    res = CliRunner().invoke(main, [str(tmp_path / "qrels"), str(tmp_path / "run"), "-m", "P@1", "-q", "-f", "json"])
    assert res.exit_code == 0
    import json
    out = json.loads(res.stdout)["runs"][0]
    assert out["per_query"]["all"] == {"P@1": 1.0} and out["mean"] == {"P@1": 0.5}
