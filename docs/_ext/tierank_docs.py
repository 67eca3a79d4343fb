"""Sphinx extension of tierank's documentation: pages generated from the code, and examples that run.

* ``<!-- tierank:measures -->`` in a page becomes the measure reference, generated from the measure
  registry (:data:`tierank.measures._registry.REGISTRY`, through
  :func:`tierank.measures._describe.describe_measures`, which also powers ``tierank measures``).
* ``<!-- tierank:cli -->`` becomes the command-line reference: click's own help of ``tierank`` and of
  each of its commands.
* ``{tierank-file} NAME`` shows a file's content and writes it to the examples directory of the build;
  ``{tierank-cli} tierank ARGS...`` runs the command there (in-process, through click's test runner)
  and shows what it prints: the command-line examples are real by construction. The doctests
  (``sphinx.ext.doctest``) run in the same directory, so they can read these files too.

Both placeholders are replaced when the page is read (``source-read``), so the generated text is parsed
as MyST markdown like the rest of the page: links to docs/maths.md's sections are checked by Sphinx.
"""

from __future__ import annotations

import os
import re
import shlex
from pathlib import Path
from typing import Any

from docutils import nodes
from docutils.parsers.rst import directives
from sphinx.application import Sphinx
from sphinx.util import logging
from sphinx.util.docutils import SphinxDirective

logger = logging.getLogger(__name__)

MEASURES_MARK = "<!-- tierank:measures -->"
CLI_MARK = "<!-- tierank:cli -->"

# the section of docs/maths.md deriving each family's tie-aware value (heading text, exactly). A family
# missing here fails the build, so a new measure cannot be documented without its derivation.
MATHS_SECTION = {
    "P": "Sums over the top k", "R": "Sums over the top k", "F1": "Sums over the top k",
    "Success": "Success (hit rate)", "Rprec": "Sums over the top k", "RprecMult": "Sums over the top k",
    "Hits": "Sums over the top k", "ACG": "Sums over the top k", "NumQ": "Notation",
    "NumRet": "Sums over the top k", "NumRel": "Notation", "NumRelRet": "Sums over the top k",
    "AP": "Average precision", "GMAP": "Geometric means (gm_map, gm_bpref)", "WAP": "Average precision",
    "RR": "Reciprocal rank", "nDCG": "Position-weighted sums: DCG, nDCG, RBP",
    "DCG": "Position-weighted sums: DCG, nDCG, RBP", "NDCGRel": "nDCG averaged over relevant documents",
    "Rndcg": "Rndcg", "G": "G", "ERR": "Expected reciprocal rank",
    "NumNonRelJudgedRet": "Sums over the top k", "Judged": "Sums over the top k",
    "Unjudged": "Sums over the top k", "SetP": "Sums over the top k", "SetR": "Sums over the top k",
    "SetF": "Sums over the top k", "SetRelP": "Sums over the top k", "SetAP": "Sums over the top k",
    "Utility": "Sums over the top k", "RBP": "Position-weighted sums: DCG, nDCG, RBP",
    "RBPResid": "Position-weighted sums: DCG, nDCG, RBP", "Bpref": "Bpref",
    "GMBpref": "Geometric means (gm_map, gm_bpref)", "infAP": "infAP", "BinG": "BinG",
    "IPrec": "Interpolated precision", "IPrecAvg": "Interpolated precision", "RelString": "RelString and runid",
}

_CUTOFF = {"required": "`@k` required", "optional": "`@k` optional (whole list without it)",
           "none": "no `@k`"}
_AGGREGATE = {"mean": "mean over queries", "sum": "sum over queries",
              "gm": "geometric mean over queries (values floored at 1e-5, as trec_eval)",
              "none": "not aggregated"}


def _slug(title: str) -> str:
    from myst_parser.mdit_to_docutils.base import default_slugify

    return default_slugify(title)


def _maths_headings(srcdir: str) -> set[str]:
    text = Path(srcdir, "maths.md").read_text(encoding="utf-8")
    return {m.group(1).strip() for m in re.finditer(r"^##\s+(.+)$", text, flags=re.M)}


def _code(text: Any) -> str:
    s = str(text)
    ticks = "``" if "`" in s else "`"
    return f"{ticks}{s}{ticks}" if s else ""


def _kv(key: str, default: Any) -> str:
    return f"{key}={default!r}"


def _cell(text: str) -> str:
    return text.replace("|", "\\|")


def _range(value_range: Any) -> str:
    if value_range is None:
        return "text"
    lo, hi = value_range
    fmt = lambda v: "∞" if v == float("inf") else f"{v:g}"   # noqa: E731
    return f"[{fmt(lo)}, {fmt(hi)}]"


def render_measure_reference(srcdir: str) -> str:
    """The measure reference as MyST markdown: an index table, then one section per family."""
    from tierank.measures._describe import describe_measures
    from tierank.measures.radius import RADIUS_FAMILIES
    from tierank.measures._describe import describe_family

    headings = _maths_headings(srcdir)
    items = describe_measures()
    for d in items:
        section = MATHS_SECTION.get(d["name"])
        if section is None:
            logger.warning("measure %s has no docs/maths.md section in docs/_ext/tierank_docs.py MATHS_SECTION",
                           d["name"], type="tierank", subtype="measures")
        elif section not in headings:
            logger.warning("docs/maths.md has no section %r (cited for measure %s)", section, d["name"],
                           type="tierank", subtype="measures")

    out = [f"{len(items)} measure families, in registry order. Each is written `Name(param=value, ...)@k`; "
           "the names in *also accepted as* and the trec_eval names resolve to the same measure.", "",
           "| measure | cutoff | trec_eval | what it is |", "|:--|:--|:--|:--|"]
    for d in items:
        out.append(f"| [{d['name']}](#measure-{d['name'].lower()}) | {_CUTOFF[d['cutoff']]} | "
                   f"{_cell(', '.join(_code(t) for t in d['trec_eval']) or '-')} | {_cell(d['summary'])} |")
    out.append("")
    for d in items:
        section = MATHS_SECTION.get(d["name"], "Notation")
        out += [f"(measure-{d['name'].lower()})=", f"## {d['name']}", "", d["summary"][:1].upper() + d["summary"][1:]
                + ".", ""]
        out.append(f"- **Cutoff**: {_CUTOFF[d['cutoff']]}")
        if d["params"]:
            out.append("- **Parameters**:")
            for k, p in d["params"].items():
                out.append(f"  - {_code(_kv(k, p['default']))}: {p['description']}")
        else:
            out.append("- **Parameters**: none")
        out.append(f"- **Also accepted as**: {', '.join(_code(a) for a in d['aliases']) or '-'}")
        out.append(f"- **trec_eval**: {', '.join(_code(t) for t in d['trec_eval']) or 'none'}")
        values = ("values are text" if d["value_range"] is None
                  else f"values in {_range(d['value_range'])} under every ordering")
        out.append(f"- **Over queries**: {_AGGREGATE.get(d['aggregate'], d['aggregate'])}; {values}")
        out.append(f"- **Tie-aware value**: [{section}](maths.md#{_slug(section)})")
        out.append("")
    out += ["## Hamming-radius variants", "",
            "With `radius=` instead of a cutoff, `P` and `R` become the precision and recall of the items "
            "within a Hamming distance (for `evaluate_codes`, or `evaluate_matrix(distances=...)`). A radius "
            "never cuts a tie, so they are the same under every tie ordering.", ""]
    for name, family in RADIUS_FAMILIES.items():
        d = describe_family(family)
        out += [f"(measure-{name.lower()}-radius)=", f"### {name}(radius=r)", "", d["summary"][:1].upper()
                + d["summary"][1:] + ".", ""]
        for k, p in d["params"].items():
            out.append(f"- {_code(_kv(k, p['default']))}: {p['description']}")
        out.append("")
    return "\n".join(out)


def _help(command: Any, info_name: str, parent: Any = None) -> str:
    import click

    settings = {**(command.context_settings or {}), "terminal_width": 100, "max_content_width": 100}
    with click.Context(command, info_name=info_name, parent=parent, **settings) as ctx:
        return ctx.get_help()


def render_cli_reference() -> str:
    """click's help of ``tierank`` and of each of its commands, as MyST markdown."""
    import click
    from tierank.cli import main

    out = ["## tierank", "", "```text", _help(main, "tierank"), "```", ""]
    root = click.Context(main, info_name="tierank", **(main.context_settings or {}))
    for name in main.list_commands(root):
        command = main.get_command(root, name)
        out += [f"(cli-{name})=", f"## tierank {name}", ""]
        if name == "eval":
            out += ["`eval` is the default command: `tierank QRELS RUN ...` is `tierank eval QRELS RUN ...`.", ""]
        out += ["```text", _help(command, name, parent=root), "```", ""]
    return "\n".join(out)


def _note_dynamic(env: Any, docname: str) -> None:
    """The page shows what the code gives now: it is read again on every build."""
    dynamic = getattr(env, "tierank_dynamic", set())
    dynamic.add(docname)
    env.tierank_dynamic = dynamic


def _source_read(app: Sphinx, docname: str, source: list[str]) -> None:
    text = source[0]
    if MEASURES_MARK in text or CLI_MARK in text:
        _note_dynamic(app.env, docname)
    if MEASURES_MARK in text:
        text = text.replace(MEASURES_MARK, render_measure_reference(app.srcdir))
    if CLI_MARK in text:
        text = text.replace(CLI_MARK, render_cli_reference())
    source[0] = text


# ------------------------------------------------------------------------------------ runnable examples

def examples_dir(app: Sphinx) -> Path:
    path = Path(app.doctreedir).parent / "tierank-examples"
    path.mkdir(parents=True, exist_ok=True)
    return path


class TierankFile(SphinxDirective):
    """A file of the examples: shown, and written to the examples directory."""

    required_arguments = 1
    has_content = True
    option_spec = {"language": directives.unchanged}

    def run(self) -> list[nodes.Node]:
        name = self.arguments[0]
        content = "\n".join(self.content) + "\n"
        files = getattr(self.env, "tierank_files", {})
        files[name] = content
        self.env.tierank_files = files
        (examples_dir(self.env.app) / name).write_text(content, encoding="utf-8")
        block = nodes.literal_block(content, content, language=self.options.get("language", "text"))
        caption = nodes.caption(name, name)
        container = nodes.container("", caption, block, classes=["literal-block-wrapper"], literal_block=True)
        return [container]


class TierankCli(SphinxDirective):
    """``tierank ARGS...`` run in the examples directory; shows the command and its output (stdout, then
    stderr). A non-zero exit status is a build warning unless ``:returncode:`` declares it."""

    required_arguments = 1
    final_argument_whitespace = True
    option_spec = {"returncode": directives.nonnegative_int}

    def run(self) -> list[nodes.Node]:
        from click.testing import CliRunner
        from tierank.cli import main

        _note_dynamic(self.env, self.env.docname)
        line = self.arguments[0]
        argv = shlex.split(line)
        if argv[0] != "tierank":
            raise self.error(f"tierank-cli runs tierank commands only, got {line!r}")
        cwd = os.getcwd()
        os.chdir(examples_dir(self.env.app))
        try:
            result = CliRunner().invoke(main, argv[1:], prog_name="tierank", catch_exceptions=True)
        finally:
            os.chdir(cwd)
        expected = self.options.get("returncode", 0)
        if result.exit_code != expected:
            detail = repr(result.exception) if result.exception and not isinstance(result.exception, SystemExit) else ""
            logger.warning("%r exited with %s (expected %s): %s%s", line, result.exit_code, expected,
                           result.output, detail, location=self.get_location(), type="tierank", subtype="cli")
        text = f"$ {line}\n{result.output}".rstrip("\n")
        if expected:
            text += f"\n$ echo $?\n{result.exit_code}"
        return [nodes.literal_block(text, text, language="console")]


def _env_merge(app: Sphinx, env: Any, docnames: Any, other: Any) -> None:
    env.tierank_files = {**getattr(env, "tierank_files", {}), **getattr(other, "tierank_files", {})}
    env.tierank_dynamic = getattr(env, "tierank_dynamic", set()) | getattr(other, "tierank_dynamic", set())


def _env_purge(app: Sphinx, env: Any, docname: str) -> None:
    getattr(env, "tierank_dynamic", set()).discard(docname)


def _env_outdated(app: Sphinx, env: Any, added: set, changed: set, removed: set) -> list[str]:
    # generated pages and pages running commands follow the code, not their own source files
    return sorted(d for d in getattr(env, "tierank_dynamic", set()) if d in env.found_docs and d not in removed)


def _env_updated(app: Sphinx, env: Any) -> None:
    # write the example files again when the pages were not re-read (a cached environment)
    path = examples_dir(app)
    for name, content in getattr(env, "tierank_files", {}).items():
        (path / name).write_text(content, encoding="utf-8")
    os.environ["TIERANK_DOCS_EXAMPLES"] = str(path)


def setup(app: Sphinx) -> dict[str, Any]:
    app.connect("source-read", _source_read)
    app.connect("env-merge-info", _env_merge)
    app.connect("env-purge-doc", _env_purge)
    app.connect("env-get-outdated", _env_outdated)
    app.connect("env-updated", _env_updated)
    app.add_directive("tierank-file", TierankFile)
    app.add_directive("tierank-cli", TierankCli)
    return {"version": "1", "parallel_read_safe": True, "parallel_write_safe": True, "env_version": 2}
