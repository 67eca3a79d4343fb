"""The measure reference comes from the registry: `tierank measures`, its formats, "did you mean"."""

from __future__ import annotations

import json

import pytest
from click.testing import CliRunner

from tierank.cli import main
from tierank.errors import InputError
from tierank.measures import REGISTRY, parse_measure


def run(*args):
    return CliRunner().invoke(main, list(args))


def test_measures_command_lists_every_family():
    out = run("measures")
    assert out.exit_code == 0
    first_words = {line.split()[0] for line in out.output.splitlines()[1:]}
    assert first_words == set(REGISTRY)


def test_measures_json_has_every_parameter_with_its_default():
    items = json.loads(run("measures", "-f", "json").output)
    assert [d["name"] for d in items] == list(REGISTRY)
    for d in items:
        family = REGISTRY[d["name"]]
        for key, p in family.params.items():
            if key != "dcg":
                assert d["params"][key]["default"] == json.loads(json.dumps(p.default, default=str))
        # every trec_eval name a family declares is shown, and parses back to that family
        for t in family.trec:
            assert any(s.startswith(t.name) for s in d["trec_eval"])


def test_one_measure_in_detail_by_alias():
    out = run("measures", "ndcg_burges")
    assert out.exit_code == 0 and out.output.startswith("nDCG: ")
    assert "gain='linear'" in out.output


def test_help_lists_the_commands_and_the_measures():
    out = run("--help")
    assert out.exit_code == 0
    for command in ("eval", "ties", "measures"):
        assert command in out.output
    eval_help = run("eval", "--help").output.replace("\n", " ")
    eval_help = " ".join(eval_help.split())
    for name in REGISTRY:
        assert name in eval_help


@pytest.mark.parametrize("text, suggestion", [("ndgc@10", "ndcg"), ("Rprec_mul.0.2", "Rprec"),
                                              ("precison@5", "precision"), ("bpre", "bpref")])
def test_unknown_names_suggest_the_closest(text, suggestion):
    with pytest.raises(InputError, match=f"did you mean '{suggestion}"):
        parse_measure(text)
