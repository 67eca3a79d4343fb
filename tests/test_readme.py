"""The README's examples show what users see: its Python examples run as doctests, in order, in one
session, and its ```console blocks run in a shell on trec_eval's test files, their output compared with
what the README shows. Its links lead somewhere, and it stays a front door of at most 300 lines.

``run_console_blocks`` is shared with tests/test_docs.py, which runs the documentation pages' console
blocks the same way.
"""

from __future__ import annotations

import doctest
import io
import os
import re
import shutil
import subprocess
import sys
import warnings
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
README = ROOT / "README.md"
TREC_EVAL_DATA = ROOT / "tests" / "data" / "trec_eval"
SEPARATOR = "@@tierank-console-example@@"


def test_readme_examples_show_what_users_see():
    blocks = [b for b in re.findall(r"```python\n(.*?)```", README.read_text(encoding="utf-8"), flags=re.S)
              if ">>>" in b]
    assert blocks, "the README shows no interactive example"
    parser = doctest.DocTestParser()
    runner = doctest.DocTestRunner(optionflags=doctest.ELLIPSIS | doctest.NORMALIZE_WHITESPACE)
    out = io.StringIO()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        runner.run(parser.get_doctest("\n".join(blocks), {}, "README", str(README), 0), out=out.write)
    assert runner.summarize(verbose=False).failed == 0, out.getvalue()


def console_examples(markdown: str) -> list[tuple[str, str]]:
    """The ``$ command`` lines of the page's ```console blocks, each with the output shown under it."""
    examples: list[tuple[str, str]] = []
    for block in re.findall(r"^```console\n(.*?)^```", markdown, flags=re.S | re.M):
        for line in block.splitlines():
            if line.startswith("$ "):
                examples.append((line[2:], ""))
            else:
                assert examples, f"output before any command in a console block: {line!r}"
                command, shown = examples[-1]
                examples[-1] = (command, shown + line + "\n")
    return examples


def run_console_blocks(markdown: str, workdir: Path) -> list[str]:
    """Run the page's console examples in order, in one shell, in ``workdir`` (which holds trec_eval's test
    files), with ``tierank`` this checkout's command; return how each output differs from the page's
    (lines compared without trailing blanks; standard error is shown where the page shows it)."""
    examples = console_examples(markdown)
    assert examples, "no console example"
    for name in ("qrels.test", "results.test"):
        shutil.copy(TREC_EVAL_DATA / name, workdir / name)
    bin_dir = workdir / ".bin"
    bin_dir.mkdir(exist_ok=True)
    (bin_dir / "tierank").write_text(f'#!/bin/sh\nexec "{sys.executable}" -m tierank "$@"\n')
    (bin_dir / "tierank").chmod(0o755)
    # each command's status survives the separator, so that `echo $?` shows the command's
    script = "".join(f"printf '%s\\n' '{SEPARATOR}'; ( exit $rc ); {{ {command}\n}} 2>&1; rc=$?\n"
                     for command, _ in examples)
    env = {**os.environ, "PATH": f"{bin_dir}{os.pathsep}{os.environ.get('PATH', '')}",
           "PYTHONPATH": os.pathsep.join(filter(None, [str(ROOT / "src"), os.environ.get("PYTHONPATH")]))}
    proc = subprocess.run(["sh", "-c", "rc=0\n" + script], cwd=workdir, env=env, capture_output=True,
                          text=True, timeout=600)
    outputs = proc.stdout.split(SEPARATOR + "\n")[1:]
    assert len(outputs) == len(examples), (proc.stdout[-3000:], proc.stderr[-3000:])

    def lines(text: str) -> list[str]:
        return [x.rstrip() for x in text.rstrip().splitlines()]

    return [f"$ {command}\n--- shown:\n{shown}--- real:\n{real}"
            for (command, shown), real in zip(examples, outputs) if lines(shown) != lines(real)]


def test_readme_console_examples_are_real_output(tmp_path):
    differences = run_console_blocks(README.read_text(encoding="utf-8"), tmp_path)
    assert not differences, "\n".join(differences)


def test_readme_links_lead_somewhere():
    text = README.read_text(encoding="utf-8")
    links = re.findall(r"\]\(([^)\s]+)\)", text)
    local = [link for link in links if not re.match(r"[a-z]+://", link)]
    assert len(local) >= 10
    for link in local:
        path = link.split("#", 1)[0]
        assert (ROOT / path).is_file(), link


def test_readme_is_a_front_door():
    lines = README.read_text(encoding="utf-8").splitlines()
    assert len(lines) <= 300, f"README.md has {len(lines)} lines: move details to docs/"


def test_readme_and_benchmark_page_hold_the_markers_make_bench_rewrites():
    readme = README.read_text(encoding="utf-8")
    page = (ROOT / "docs" / "benchmarks.md").read_text(encoding="utf-8")
    summary = readme.split("<!-- bench-summary:start -->\n", 1)[1].split("<!-- bench-summary:end -->", 1)[0]
    assert "[docs/benchmarks.md](docs/benchmarks.md)" in summary
    table = page.split("<!-- bench:start -->\n", 1)[1].split("<!-- bench:end -->", 1)[0]
    assert "| task | data | library |" in table
