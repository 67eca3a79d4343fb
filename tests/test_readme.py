"""The README's Python examples run as doctests, in order, in one session: what it shows is what a user
sees."""

import doctest
import io
import re
import warnings
from pathlib import Path

README = Path(__file__).resolve().parent.parent / "README.md"


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


def test_readme_measure_table_is_the_registry():
    from tierank.formats import render_measures

    text = README.read_text(encoding="utf-8")
    block = text.split("<!-- measures:start -->\n", 1)[1].split("<!-- measures:end -->", 1)[0]
    assert block == render_measures("markdown"), "regenerate with: tierank measures -f markdown"
