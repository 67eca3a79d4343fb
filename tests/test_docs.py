"""The documentation site builds (warnings are errors, every cross-reference resolves), its examples
pass, and the measure reference lists every measure of the registry. The pages' ```console blocks (on
trec_eval's test files) run in a shell as the README's do (tests/test_readme.py), and ``make bench``'s
writer of the benchmark page works on a small fake result.

One Sphinx run per session, in a temporary directory: the HTML builder then the doctest builder, in one
subprocess (the documentation sets KERAS_BACKEND and imports every optional module; the test process
stays clean).
"""

from __future__ import annotations

import html
import re
import subprocess
import sys
from pathlib import Path

import pytest

pytest.importorskip("sphinx")
pytest.importorskip("furo")
pytest.importorskip("numpydoc")
pytest.importorskip("myst_parser")

from test_readme import run_console_blocks  # noqa: E402
from tierank.measures._registry import REGISTRY  # noqa: E402
from tierank.measures.radius import RADIUS_FAMILIES  # noqa: E402

DOCS = Path(__file__).resolve().parent.parent / "docs"
BENCHMARKS = DOCS.parent / "benchmarks"

_BUILD = """
import sys
from sphinx.cmd.build import build_main
src, out = sys.argv[1], sys.argv[2]
doctrees = out + "/doctrees"
status = build_main(["-b", "html", "-n", "-W", "--keep-going", "-q", "-d", doctrees, src, out + "/html"])
if status == 0:
    status = build_main(["-b", "doctest", "-n", "-W", "--keep-going", "-q", "-d", doctrees, src, out + "/doctest"])
sys.exit(status)
"""


@pytest.fixture(scope="module")
def site(tmp_path_factory: pytest.TempPathFactory) -> Path:
    out = tmp_path_factory.mktemp("docs")
    proc = subprocess.run([sys.executable, "-c", _BUILD, str(DOCS), str(out)], capture_output=True, text=True,
                          timeout=300)
    noise = re.compile(r"^(I0000|WARNING: All log messages|To enable the following)")
    stderr = "\n".join(line for line in proc.stderr.splitlines() if not noise.match(line))
    assert proc.returncode == 0, f"the documentation build failed:\n{proc.stdout[-5000:]}\n{stderr[-10000:]}"
    return out


def _text(path: Path) -> str:
    page = path.read_text(encoding="utf-8")
    page = re.sub(r"<(script|style)\b.*?</\1>", "", page, flags=re.S)
    return html.unescape(re.sub(r"<[^>]+>", "", page))


def _ids(path: Path) -> set[str]:
    return set(re.findall(r'\bid="([^"]+)"', path.read_text(encoding="utf-8")))


def test_build_passes_with_warnings_as_errors(site: Path) -> None:
    for page in ("index", "start-trec", "start-codes", "start-matrices", "start-training", "start-clusters",
                 "measures", "cli", "api", "conventions", "anchors", "maths", "scale", "report", "benchmarks"):
        assert (site / "html" / f"{page}.html").is_file(), page


def test_doctests_ran_and_passed(site: Path) -> None:
    report = (site / "doctest" / "output.txt").read_text(encoding="utf-8")
    tests = int(re.search(r"^\s*(\d+) tests?$", report, flags=re.M).group(1))
    assert tests >= 50, report[-2000:]
    assert re.search(r"^\s*0 failures in tests$", report, flags=re.M), report[-5000:]
    for page in ("index", "start-trec", "start-codes", "start-matrices", "start-training", "start-clusters",
                 "conventions", "anchors", "measures"):
        assert f"Document: {page}" in report, page


def test_measure_reference_lists_every_registry_entry(site: Path) -> None:
    page = site / "html" / "measures.html"
    ids, text = _ids(page), _text(page)
    for name, family in REGISTRY.items():
        assert f"measure-{name.lower()}" in ids, name
        assert family.summary[1:] in text, name
        for alias, _preset in family.aliases:
            assert alias in text, (name, alias)
        for trec in family.trec:
            assert trec.name in text, (name, trec.name)
        for param, spec in family.params.items():
            if param != "dcg":
                assert f"{param}={spec.default!r}" in text, (name, param)
    for name in RADIUS_FAMILIES:
        assert f"measure-{name.lower()}-radius" in ids, name


def test_measure_reference_links_resolve_to_maths_sections(site: Path) -> None:
    page = (site / "html" / "measures.html").read_text(encoding="utf-8")
    targets = set(re.findall(r'href="maths\.html#([^"]+)"', page))
    assert len(targets) >= 10
    maths_ids = _ids(site / "html" / "maths.html")
    assert targets <= maths_ids, targets - maths_ids
    # every registered family links to a section
    assert page.count('href="maths.html#') >= len(REGISTRY)


def test_api_reference_has_every_public_name(site: Path) -> None:
    import tierank

    ids = _ids(site / "html" / "api.html")
    for name in tierank.__all__:
        assert f"tierank.{name}" in ids, name
    for module in ("hashing", "spark", "dask", "keras", "torch", "ir_measures"):
        assert f"module-tierank.{module}" in ids, module


def test_cli_reference_has_every_command(site: Path) -> None:
    import click

    from tierank.cli import main

    text = _text(site / "html" / "cli.html")
    ctx = click.Context(main, info_name="tierank")
    for name in main.list_commands(ctx):
        command = main.get_command(ctx, name)
        assert f"Usage: tierank {name}" in text, name
        for param in command.params:
            for opt in getattr(param, "opts", []):
                if opt.startswith("-"):
                    assert opt in text, (name, opt)


def test_cli_examples_are_real_output(site: Path) -> None:
    text = _text(site / "html" / "start-trec.html")
    assert "$ tierank qrels.txt run.txt -m nDCG@3 AP P@2 RR" in text
    assert "run.txt: 2 queries, ties=expected" in text
    assert "tierank: error: bad.txt:2:" in text


@pytest.mark.parametrize("page", sorted(p.name for p in DOCS.glob("*.md") if "```console" in p.read_text(encoding="utf-8")))
def test_console_examples_are_real_output(page: str, tmp_path: Path) -> None:
    differences = run_console_blocks((DOCS / page).read_text(encoding="utf-8"), tmp_path)
    assert not differences, "\n".join(differences)


def test_console_examples_cover_the_pages_that_show_commands() -> None:
    pages = {p.name for p in DOCS.glob("*.md") if "```console" in p.read_text(encoding="utf-8")}
    assert {"start-trec.md", "report.md"} <= pages


def test_make_bench_writes_the_benchmark_page_and_the_readme_summary(tmp_path: Path, monkeypatch) -> None:
    monkeypatch.syspath_prepend(str(BENCHMARKS))
    import run

    def row(task, data, library, mode, compute, floor=False):
        return {"task": task, "data": data, "library": library, "mode": mode, "group": f"{task}-{data}",
                "floor": floor, "compute": compute, "failed": False}

    rows = [row("1", "str ids", "tierank", "expected", 0.5), row("1", "str ids", "pytrec_eval", "trec_eval", 4.0),
            row("1", "str ids", "ranx", "from dicts", 1.6), row("1", "str ids", "ranx", "from DataFrames", 1.5),
            row("1", "str ids", "floor", "np.lexsort", 0.3, floor=True),
            row("3", "dense", "tierank", "expected", 0.6)]
    text = run.summary(rows, ["Machine: a test machine, 2 cores"], "docs/benchmarks.md")
    assert "- str ids (task 1): tierank 0.500 s; pytrec_eval 4.00 s (8.0x), ranx 1.50 s (3.0x)\n" in text
    assert "dense" not in text and "np.lexsort" not in text     # no anchor to compare with; floors apart
    assert "on a test machine, 2 cores:" in text
    assert "[docs/benchmarks.md](docs/benchmarks.md)" in text

    page, readme = tmp_path / "benchmarks.md", tmp_path / "README.md"
    page.write_text("# Benchmarks\n\n<!-- bench:start -->\nold table\n<!-- bench:end -->\nafter\n")
    readme.write_text("# x\n<!-- bench-summary:start -->\nold\n<!-- bench-summary:end -->\n## Next\n")
    run.write_block(page, "| new | table |\n")
    run.write_block(readme, text, run.SUMMARY_START, run.SUMMARY_END)
    assert page.read_text() == "# Benchmarks\n\n<!-- bench:start -->\n| new | table |\n<!-- bench:end -->\nafter\n"
    assert readme.read_text() == f"# x\n<!-- bench-summary:start -->\n{text}<!-- bench-summary:end -->\n## Next\n"
    with pytest.raises(SystemExit, match="no <!-- bench:start -->"):
        run.write_block(readme, "x\n")
    for path, start, end in ((DOCS / "benchmarks.md", run.START, run.END),
                             (DOCS.parent / "README.md", run.SUMMARY_START, run.SUMMARY_END)):
        text = path.read_text(encoding="utf-8")
        assert text.count(start) == 1 and text.count(end) == 1, path
