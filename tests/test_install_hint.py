"""Install hints: one function words them, and they work from PyPI and from a clone of the repository."""

from __future__ import annotations

import re
import shlex
import sys
import tomllib
from pathlib import Path

import pytest

from tierank.errors import install_hint

ROOT = Path(__file__).resolve().parents[1]
EXTRAS = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]["optional-dependencies"]


@pytest.mark.parametrize("extra", sorted(EXTRAS))
def test_both_commands_install_the_extra(extra):
    """The hint holds two commands: the package's name (PyPI) and '.' (a clone), each quoted for the shell
    (zsh reads an unquoted [...] as a glob)."""
    hint = install_hint(extra, "tensorflow")
    first, second = re.fullmatch(r"(.*) \(in a clone of tierank: (.*)\)", hint).groups()
    assert shlex.split(first) == ["pip", "install", f"tierank[{extra}]", "tensorflow"]
    assert shlex.split(second) == ["pip", "install", f".[{extra}]", "tensorflow"]
    assert f"'tierank[{extra}]'" in first and f"'.[{extra}]'" in second


def test_every_hint_names_an_extra_and_none_is_spelt_by_hand():
    """Each install_hint('x') of the package names an extra of pyproject.toml, and no message spells
    'pip install tierank[' itself (docstrings aside)."""
    used = set()
    for path in (ROOT / "src" / "tierank").rglob("*.py"):
        text = path.read_text(encoding="utf-8")
        used |= set(re.findall(r"install_hint\(['\"]([\w-]+)['\"]", text))
        for line in text.splitlines():
            if re.search(r"[\"']pip install tierank\[", line) or re.search(r"ImportError\(.*pip install", line):
                pytest.fail(f"{path.name}: an install hint spelt by hand: {line.strip()}")
    assert used and used <= set(EXTRAS), used - set(EXTRAS)


def test_a_missing_scipy_gets_the_hint(monkeypatch):
    from tierank.comparison import paired_test

    monkeypatch.setitem(sys.modules, "scipy", None)
    monkeypatch.setitem(sys.modules, "scipy.stats", None)
    with pytest.raises(ImportError) as err:
        paired_test([0.5, 0.6], [0.4, 0.6], "t")
    assert str(err.value) == f"significance tests need scipy: {install_hint('stats')}"
