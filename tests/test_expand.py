"""tierank.measures.expand: trec_eval's sets and lists in Python (it was the command line's private
expand_measures), and did_you_mean, the one suggestion rule of unknown measure names."""

from __future__ import annotations

import warnings

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import tierank
from tierank.measures import REGISTRY, expand, parse_measure
from tierank.measures._registry import TREC_INDEX, did_you_mean
from tierank.measures._trec import TREC_SETS

QRELS = {"q1": {"d1": 1, "d3": 2}, "q2": {"d2": 1}}
RUN = {"q1": {"d1": 0.5, "d2": 0.5, "d3": 0.1}, "q2": {"d1": 0.9, "d2": 0.2}}


@settings(max_examples=50, deadline=None)
@given(st.lists(st.integers(min_value=1, max_value=10 ** 6), min_size=1, max_size=6, unique=True))
def test_a_cutoff_list_gives_one_measure_per_cutoff_ascending(cutoffs):
    expanded = expand("P." + ",".join(map(str, cutoffs)))
    assert list(expanded) == [f"P_{k}" for k in sorted(cutoffs)]
    assert list(expanded.values()) == [parse_measure(f"P@{k}") for k in sorted(cutoffs)]
    assert expanded.trec_names == {f"P_{k}": f"P_{k}" for k in cutoffs}


def test_sets_expand_to_their_members():
    """official: trec_eval's default set; runid is the run's tag, no measure, so it is in .pseudo only."""
    expanded = expand("official")
    assert expanded.pseudo == {"runid", "num_q"}
    bases = {name.split("_")[0] if name[:2] in ("P_", "ip") else name for name in expanded}
    members = set(TREC_SETS["official"]) - {"runid"}
    assert {"P", "iprec"} <= bases and members - {"P", "iprec_at_recall"} <= set(expanded)


def test_evaluate_takes_the_expansion_with_its_labels():
    """The labels are the result's keys, and the values those of the measures written out by hand."""
    res = tierank.evaluate(QRELS, RUN, expand("P.1,2 map", rel_level=2))
    by_hand = tierank.evaluate(QRELS, RUN, ["P(rel=2)@1", "P(rel=2)@2", "AP(rel=2)"])
    assert list(res.mean) == ["P_1", "P_2", "map"]
    assert list(res.mean.values()) == list(by_hand.mean.values())


def test_errors_and_warnings():
    with pytest.raises(tierank.InputError, match="no measure given"):
        expand([])
    with pytest.raises(tierank.InputError, match="unknown measure 'Foo'"):
        expand("P@5 Foo@3")
    with pytest.raises(tierank.InputError, match=r"rel_level=nan: measure 'P.5': rel must be a finite number"):
        expand("P.5", rel_level=float("nan"))
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        expand("all_trec")   # every member computed: no warning


_SPELLINGS = sorted({*REGISTRY, *TREC_INDEX, *(a for f in REGISTRY.values() for a, _ in f.aliases)})


@settings(max_examples=60, deadline=None)
@given(st.sampled_from(_SPELLINGS), st.data())
def test_a_known_spelling_in_any_case_is_suggested_as_itself(name, data):
    """Case-insensitive: a known spelling with its letters' case changed is closest to itself (or to a
    spelling equal to it but for case)."""
    flips = data.draw(st.lists(st.booleans(), min_size=len(name), max_size=len(name)))
    typed = "".join(c.swapcase() if f else c for c, f in zip(name, flips))
    suggestion = did_you_mean(typed)
    assert suggestion.startswith(" (did you mean '") and suggestion[16:-3].lower() == name.lower()


def test_the_atol_note_obeys_the_callers_warning_filters():
    """expand_trec set the filter to "always" around trec_eval's '23.4 is read as 23' note, so a caller's
    "error" or "ignore" had no effect on it (before: no exception here, and a recorded warning below)."""
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        with pytest.raises(tierank.TierankWarning, match="'23.4' is read as 23"):
            expand("ndcg_cut.10,23.4")
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("ignore")
        assert list(expand("ndcg_cut.10,23.4")) == ["ndcg_cut_10", "ndcg_cut_23"]
    assert caught == []
