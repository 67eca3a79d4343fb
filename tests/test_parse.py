"""The measure-string grammar, aliases (ir-measures, ranx, trec_eval) and their errors."""

import pytest

import tierank
from tierank.measures import REGISTRY, parse_measure


@pytest.mark.parametrize("text, canonical", [
    ("nDCG@10", "nDCG@10"),
    ("ndcg@10", "nDCG@10"),
    ("ndcg_cut.10", "nDCG@10"),
    ("ndcg_cut_10", "nDCG@10"),
    ("ndcg_burges@10", "nDCG(gain='exp2')@10"),
    ("nDCG(dcg='exp-log2')@10", "nDCG(gain='exp2')@10"),
    ("nDCG(dcg='log2')", "nDCG"),
    ("dcg_burges", "DCG(gain='exp2')"),
    ("P(rel=2)@5", "P(rel=2)@5"),
    ("P.5", "P@5"),
    ("P_5", "P@5"),
    ("precision@10", "P@10"),
    ("recall@100", "R@100"),
    ("recall.100", "R@100"),
    ("R@1000", "R@1000"),
    ("map", "AP"),
    ("map@100-l2", "AP(rel=2)@100"),
    ("map_cut.100", "AP@100"),
    ("AP(rel=2)@100", "AP(rel=2)@100"),
    ("AP(denom='retrieved')@5", "AP(denom='retrieved')@5"),
    ("mrr", "RR"),
    ("mrr-l2", "RR(rel=2)"),
    ("recip_rank", "RR"),
    ("RR(rel=2)", "RR(rel=2)"),
    ("hit_rate@10", "Success@10"),
    ("success.10", "Success@10"),
    ("f1@10", "F1@10"),
    ("r-precision", "Rprec"),
    ("Rprec", "Rprec"),
    ("ERR@20", "ERR@20"),
    ("ERR(max_grade=4)@2", "ERR(max_grade=4)@2"),
    ("num_q", "NumQ"),
    ("num_rel_ret", "NumRelRet"),
    ("P(clip=True, rel=0.25)@4", "P(clip=True, rel=0.25)@4"),
    ("nDCG(discount='jk', gain='exp2')@3", "nDCG(discount='jk', gain='exp2')@3"),
    ("nDCG(gains={0: 0, 1: 1, 2: 3})@10", "nDCG(gains={0: 0, 1: 1, 2: 3})@10"),
    ("WAP@10", "WAP@10"),
    ("ACG(clip=True)@5", "ACG(clip=True)@5"),
])
def test_names_resolve_to_one_measure(text, canonical):
    assert str(parse_measure(text)) == canonical


def test_equal_measures_compare_equal_and_hash_alike():
    a, b = parse_measure("ndcg_cut.10"), parse_measure("nDCG@10")
    assert a == b and hash(a) == hash(b)
    assert parse_measure("P@5") != parse_measure("P@10")


@pytest.mark.parametrize("text, pattern", [
    ("Foo@3", "unknown measure 'Foo'.*known measures: P, R"),
    ("P(bogus=1)@3", "unknown parameter 'bogus'.*accepted: rel, clip"),
    ("P", "trec_eval.s .P. means 9 measures, .P_5., .P_10.*tierank.measures.expand"),
    ("R", "needs a cutoff"),
    ("Rprec@5", "takes no cutoff"),
    ("P@0", "positive integer"),
    ("P@-1", "positive integer"),
    ("P@2.5", "positive integer"),
    ("P(rel='a')@3", "rel must be a finite number"),
    ("P(clip=1)@3", "clip must be True or False"),
    ("AP(denom='all')", "denom must be one of"),
    ("nDCG(dcg='exp-log2', gain='linear')", None),   # the default gain is not a contradiction
    ("P.5,10", "one measure per string"),
    ("P(rel=1", "expected"),
    ("P@5 extra", "unexpected"),
    ("ERR(max_grade=0)@3", "max_grade must be > 0"),
    ("nDCG(gains={1: 'x'})", "gains must be a dict of finite numbers"),
    ("map@10-l2(rel=3)", "unexpected"),
    ("AP(rel=1)@5-l2", "relevance level given twice"),
    ("AP(rel=1)-l2", "unexpected"),
])
def test_bad_measure_strings_name_the_problem(text, pattern):
    if pattern is None:
        parse_measure(text)
        return
    with pytest.raises(tierank.InputError, match=pattern):
        parse_measure(text)


def test_a_trec_eval_list_is_not_called_default_cutoffs():
    """'P.5,10' in Python: the user's cutoffs, not "its default cutoffs" (failed before), and a pointer to
    tierank.measures.expand, which gives them all."""
    with pytest.raises(tierank.InputError) as info:
        parse_measure("P.5,10")
    assert "default" not in str(info.value)
    assert "2 measures, 'P_5', 'P_10'" in str(info.value)
    assert "tierank.measures.expand('P.5,10')" in str(info.value)
    assert {label: str(m) for label, m in tierank.measures.expand("P.5,10").items()} == {"P_5": "P@5",
                                                                                         "P_10": "P@10"}


def test_contradicting_spellings_are_an_error():
    with pytest.raises(tierank.InputError, match="contradicts"):
        parse_measure("nDCG(dcg='log2', gain='exp2')")


def test_no_eval_of_values():
    with pytest.raises(tierank.InputError):
        parse_measure("P(rel=__import__('os'))@3")


def test_every_family_has_a_kernel_a_preference_and_a_summary():
    for family in REGISTRY.values():
        assert callable(family.kernel) and callable(family.preference) and family.summary
        assert family.cutoff in ("required", "optional", "none")
        assert family.aggregate in ("mean", "sum", "gm", "none")
        assert (family.aggregate == "none") == family.text


def test_replace_checks_parameters():
    assert str(parse_measure("AP@10").replace(rel=2)) == "AP(rel=2)@10"
    with pytest.raises(tierank.InputError, match="unknown parameter 'rel'"):
        parse_measure("nDCG@10").replace(rel=2)
