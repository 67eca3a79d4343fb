"""trec_eval's naming conventions (``-m name.params``, output names and order, sets) and the geometric
means, checked against trec_eval's documented behaviour (meas_init.c, measures.c) written out here."""

from __future__ import annotations

import math

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import tierank
from tierank.measures import expand
from tierank.errors import InputError, TierankWarning
from tierank.measures import REGISTRY, expand_trec, parse_measure, trec_order, trec_output_name
from tierank.measures._trec import TREC_EVAL_TABLE, TREC_SETS, atof, atol


def names(text):
    return [name for name, _ in expand_trec(text)]


def test_cutoffs_are_sorted_and_named_as_trec_eval_prints_them():
    # trec_eval -m P.5,7,3 prints P_3, P_5, P_7 (out.test.meas_params)
    assert names("P.5,7,3") == ["P_3", "P_5", "P_7"]
    assert [str(m) for _, m in expand_trec("P.5,7,3")] == ["P@3", "P@5", "P@7"]
    # bare name: trec_eval's default cutoffs
    assert names("map_cut") == [f"map_cut_{k}" for k in (5, 10, 15, 20, 30, 100, 200, 500, 1000)]
    assert names("success") == ["success_1", "success_5", "success_10"]
    assert names("unj") == ["unj_5", "unj_10", "unj_20"]


def test_cutoff_read_as_atol_reads_it_with_a_warning():
    # trec_eval -m ndcg_cut.10,20,23.4 prints ndcg_cut_23 (atol stops at the dot)
    with pytest.warns(TierankWarning, match="'23.4' is read as 23"):
        assert names("ndcg_cut.10,20,23.4") == ["ndcg_cut_10", "ndcg_cut_20", "ndcg_cut_23"]
    assert atol("10") == 10


@pytest.mark.parametrize("text, problem", [
    ("P.5,5", "duplicate cutoff"),          # trec_eval: "duplicate cutoffs detected"
    ("P.0,5", "must be > 0"),               # trec_eval: "Negative cutoff detected"
    ("P.x", "not an integer"),              # trec_eval's atol would read 0
    ("map.5", "takes no parameters"),
    ("set_F.abc", "not a number"),
    ("ndcg.1=3,x", "not name=value"),
    ("P.", "nothing after the dot"),
])
def test_bad_trec_parameters_are_errors_naming_them(text, problem):
    with pytest.raises(InputError, match=problem):
        expand_trec(text)


def test_output_spellings_are_accepted_as_names():
    assert str(parse_measure("P_5")) == "P@5"
    assert str(parse_measure("ndcg_cut_10")) == "nDCG@10"
    # an ir-measures name that starts like a trec_eval name is not taken for one
    assert str(parse_measure("ndcg_burges@10")) == "nDCG(gain='exp2')@10"


def test_parameter_strings_are_part_of_the_name():
    # s_double_p measures print name_<parameters as given>; with trec_eval's defaults just the name
    assert names("set_F.0.5") == ["set_F_0.5"]
    assert names("set_F") == ["set_F"]
    assert names("ndcg.1=3,2=9,4=4.5") == ["ndcg_1=3,2=9,4=4.5"]
    (_, m), = expand_trec("ndcg.1=3,2=9,4=4.5")
    assert m["gains"] == {1: 3.0, 2: 9.0, 4: 4.5}


def test_measures_given_in_other_grammars_get_trec_eval_names():
    assert trec_output_name(parse_measure("AP@10")) == "map_cut_10"
    assert trec_output_name(parse_measure("SetF(beta=0.5)")) == "set_F_0.5"
    assert trec_output_name(parse_measure("RR")) == "recip_rank"
    # not trec_eval's measure: no trec_eval name (printed under its own name)
    assert trec_output_name(parse_measure("nDCG(gain='exp2')@10")) is None
    assert trec_output_name(parse_measure("P(rel=2)@5")) is None


def test_output_order_is_trec_eval_measure_table():
    # measures.c: runid, num_q, num_ret, ..., map, gm_map, Rprec, bpref, recip_rank, ..., P, ..., recall
    given = ["recall_5", "P_10", "map", "num_q", "P_5", "bpref", "gm_map", "ndcg_cut_5", "success_1"]
    assert sorted(given, key=trec_order) == ["num_q", "map", "gm_map", "bpref", "P_5", "P_10", "recall_5",
                                             "ndcg_cut_5", "success_1"]


def test_every_declared_trec_name_is_in_trec_eval_table_once():
    declared = [t.name for f in REGISTRY.values() for t in f.trec]
    assert len(declared) == len(set(declared))
    assert set(declared) <= set(TREC_EVAL_TABLE)
    for members in TREC_SETS.values():
        assert set(members) <= set(TREC_EVAL_TABLE)


def test_a_bare_name_yields_to_the_same_name_with_parameters():
    # trec_eval -m all_trec -m relstring.20 computes relstring_20 only; -m P -m P.5 computes P_5 only
    assert list(expand(["P", "P.5"])) == ["P_5"]
    assert list(expand(["P.5", "map", "P.10"])) == ["P_5", "map", "P_10"]


@pytest.mark.parametrize("text", ["0.25", ".5", "5.0", "1e-3"])
def test_atof_reads_what_c_reads(text):
    assert atof(text) == float(text)


def test_gm_map_is_the_geometric_mean_of_ap_with_trec_eval_floor():
    # query a: AP = 1 (relevant first); query b: no relevant retrieved, AP = 0 -> floored at 1e-5
    # query c: relevant at 2 of 2 -> AP = 1/2
    qrels = {"a": {"d1": 1}, "b": {"d9": 1}, "c": {"d2": 1}}
    run = {"a": {"d1": 2.0, "d2": 1.0}, "b": {"d1": 2.0}, "c": {"d1": 2.0, "d2": 1.0}}
    res = tierank.evaluate(qrels, run, ["GMAP", "gm_map", "AP", "GMBpref"])
    want = math.exp((math.log(1.0) + math.log(1e-5) + math.log(0.5)) / 3)
    assert res.mean["GMAP"] == pytest.approx(want, rel=1e-15)
    assert res.mean["gm_map"] == res.mean["GMAP"]
    # per query, GMAP is AP
    assert res.per_query["GMAP"].tolist() == res.per_query["AP"].tolist()


@settings(max_examples=60, deadline=None)
@given(st.lists(st.floats(0, 1), min_size=1, max_size=30))
def test_gm_aggregate_does_not_depend_on_query_order(values):
    from tierank.results import aggregate
    import pandas as pd

    m = {"GMAP": parse_measure("GMAP")}
    a = aggregate(pd.DataFrame({"GMAP": values}), m)["GMAP"]
    b = aggregate(pd.DataFrame({"GMAP": values[::-1]}), m)["GMAP"]
    assert a == b
    assert a == pytest.approx(math.exp(sum(math.log(max(v, 1e-5)) for v in values) / len(values)), rel=1e-12)


def test_gm_map_is_printed_on_the_summary_line_only(tmp_path):
    from click.testing import CliRunner
    from tierank.cli import main

    (tmp_path / "q").write_text("1 0 a 1\n2 0 b 1\n")
    (tmp_path / "r").write_text("1 Q0 a 1 2.0 t\n1 Q0 b 2 1.0 t\n2 Q0 a 1 2.0 t\n2 Q0 b 2 1.0 t\n")
    out = CliRunner().invoke(main, [str(tmp_path / "q"), str(tmp_path / "r"), "-m", "gm_map", "map", "-q",
                                    "-f", "trec"]).output.splitlines()
    assert [line.split("\t")[:2] for line in out] == [
        ["map                   ", "1"], ["map                   ", "2"],
        ["map                   ", "all"], ["gm_map                ", "all"]]
    # AP: 1 and 1/2; gm = sqrt(1/2)
    assert out[-1].endswith(f"{math.sqrt(0.5):.4f}")
    assert np.isclose(float(out[-2].split("\t")[2]), 0.75)


# ----------------------------------------------------------------------------------------- relstring


def test_relstring_characters_as_trec_eval_prints_them():
    # m_relstring.c: the grade 0-9, '>' above 9, '-' not in the pool, '.' in the pool but unjudged
    qrels = {"q": {"a": 0, "b": 3, "c": 12, "d": -1}}
    run = {"q": {"a": 6.0, "b": 5.0, "c": 4.0, "d": 3.0, "e": 2.0}}
    res = tierank.evaluate(qrels, run, ["RelString", "relstring"], ties="trec_eval")
    assert res.per_query.loc["q", "RelString"] == "03>.-"
    assert res.mean["RelString"] is None


def test_relstring_shows_ties_as_bracketed_groups_under_expected():
    qrels = {"q": {"a": 1, "b": 0, "c": 2}}
    run = {"q": {"a": 5.0, "b": 4.0, "c": 4.0, "d": 4.0, "e": 1.0}}
    got = tierank.evaluate(qrels, run, ["RelString", "RelString(length=2)"], bounds=True)
    # a first; then the tie {b: 0, c: 2, d: not in pool} sorted descending; then e
    assert got.per_query.loc["q", "RelString"] == "1[20-]-"
    # a tie starting inside the first `length` documents is shown with its first `length` characters
    assert got.per_query.loc["q", "RelString(length=2)"] == "1[20+1]"
    assert got.lower.loc["q", "RelString"] == got.upper.loc["q", "RelString"] == "1[20-]-"
    # fixed modes: the string of that ordering (trec_eval: d, c, b by document id descending)
    assert tierank.evaluate(qrels, run, ["RelString"], ties="trec_eval").per_query.iloc[0, 0] == "1-20-"
    assert tierank.evaluate(qrels, run, ["RelString"], ties="optimistic").per_query.iloc[0, 0] == "120--"


@settings(max_examples=100, deadline=None)
@given(st.lists(st.tuples(st.integers(0, 3), st.sampled_from([None, -1, 0, 1, 2, 10])), min_size=1, max_size=12),
       st.integers(0, 15))
def test_relstring_of_a_fixed_order_is_the_grades_in_that_order(items, length):
    # an independent statement of trec_eval's definition: sort by score desc, ties by doc id desc
    run = {"q": {f"d{i:02d}": float(s) for i, (s, _) in enumerate(items)}}
    qrels = {"q": {f"d{i:02d}": g for i, (_, g) in enumerate(items) if g is not None}}
    qrels["q"]["zz"] = 1
    order = sorted(run["q"], key=lambda d: (-run["q"][d], [-ord(c) for c in d]))
    char = {None: "-", -1: ".", 10: ">"}
    want = "".join(char.get(qrels["q"].get(d), str(qrels["q"].get(d))) for d in order[:length])
    got = tierank.evaluate(qrels, run, [f"RelString(length={length})"], ties="trec_eval").per_query.iloc[0, 0]
    assert got == want


@settings(max_examples=150, deadline=None)
@given(st.lists(st.lists(st.tuples(st.integers(0, 2), st.sampled_from([None, -1, 0, 1, 2, 10, 0.5])),
                         min_size=1, max_size=30), min_size=1, max_size=4),
       st.integers(0, 12))
def test_relstring_under_expected_brackets_each_tie_shown(queries, length):
    # the documented string, built query by query here: groups of equal score, best first; a group
    # starting within the first `length` documents is its character, or "[" + its characters sorted
    # descending (the first `length` of them) + "+N" for the N more + "]"; ties of up to 30 documents
    # give two-digit N
    run = {f"q{i}": {f"d{j}": float(s) for j, (s, _) in enumerate(items)} for i, items in enumerate(queries)}
    qrels = {f"q{i}": {f"d{j}": g for j, (_, g) in enumerate(items) if g is not None} | {"zz": 1}
             for i, items in enumerate(queries)}
    char = {None: "-", -1: ".", 10: ">", 0.5: "?"}
    want = {}
    for q, docs in run.items():
        text, seen = "", 0
        for score in sorted(set(docs.values()), reverse=True):
            group = sorted((char.get(qrels[q].get(d), str(qrels[q].get(d))) for d in docs if docs[d] == score),
                           reverse=True)
            if seen < length:
                if len(group) == 1:
                    text += group[0]
                else:
                    more = len(group) - length
                    text += "[" + "".join(group[:length]) + (f"+{more}" if more > 0 else "") + "]"
            seen += len(group)
        want[q] = text
    got = tierank.evaluate(qrels, run, [f"RelString(length={length})"]).per_query.iloc[:, 0].to_dict()
    assert got == want


def test_relstring_of_a_query_missing_from_the_run_is_empty():
    res = tierank.evaluate({"a": {"d": 1}, "b": {"d": 1}}, {"a": {"d": 1.0}}, ["relstring"], missing="zero")
    assert res.per_query["relstring"].tolist() == ["1", ""]


def test_relstring_is_not_compared():
    qrels = {"a": {"d": 1}, "b": {"d": 1}}
    run = {"a": {"d": 1.0}, "b": {"d": 1.0}}
    with pytest.raises(InputError, match="RelString is text"):
        tierank.compare(qrels, {"x": run, "y": run}, ["relstring", "AP"])


def test_trec_format_labels_runs_and_keeps_bounds(tmp_path):
    from click.testing import CliRunner
    from tierank.cli import main

    (tmp_path / "q").write_text("1 0 a 1\n1 0 b 0\n")
    (tmp_path / "r1").write_text("1 Q0 a 1 1.0 t\n1 Q0 b 2 1.0 t\n")   # a and b tie: AP in [1/2, 1]
    (tmp_path / "r2").write_text("1 Q0 a 1 2.0 t\n1 Q0 b 2 1.0 t\n")
    out = CliRunner().invoke(main, [str(tmp_path / "q"), str(tmp_path / "r1"), str(tmp_path / "r2"), "-m", "map",
                                    "-f", "trec", "--bounds"])
    assert out.exit_code == 0, out.output
    rows = [line.split("\t") for line in out.stdout.splitlines()]
    assert [(name.strip(), q, v) for name, q, v in rows] == [
        ("run", "all", "r1"), ("map", "all", "0.7500"), ("map:min", "all", "0.5000"), ("map:max", "all", "1.0000"),
        ("run", "all", "r2"), ("map", "all", "1.0000"), ("map:min", "all", "1.0000"), ("map:max", "all", "1.0000")]


def test_measures_have_a_readable_repr():
    m = parse_measure("ndcg_cut.10")
    assert repr(m) == "Measure('nDCG@10')"
    assert parse_measure(str(m)) == m
    assert repr(m.family).startswith("<measure family nDCG:")


def test_a_trec_eval_declaration_is_checked_when_made():
    """A family declares only names of trec_eval's measure table, of a known kind (the parser asks the
    registry for table names only: a name outside it would never be found)."""
    from tierank.measures._trec import TrecName

    assert TrecName("map").name == "map"
    with pytest.raises(ValueError, match="'map_at_k' is not in trec_eval's measure table"):
        TrecName("map_at_k")
    with pytest.raises(ValueError, match="kind must be one of"):
        TrecName("P", "cutoff")
