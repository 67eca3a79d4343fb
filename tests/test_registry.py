"""The registry imports a family's module when a name needs it (measures/_registry.py, docs/architecture.md
"Start-up"): its answers are those of a registry built from every module at once, in any order of questions,
and it imports no module beyond the last one a question needed."""

from __future__ import annotations

import importlib
import threading
import warnings

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from tierank.errors import InputError
from tierank.measures import _registry
from tierank.measures._registry import FAMILY_MODULES, REGISTRY

# the registry built at once from every module, written out here: name -> (module index, family)
EAGER_FAMILIES: dict = {}
EAGER_LOOKUP: dict = {}
EAGER_TREC: dict = {}
for _i, _name in enumerate(FAMILY_MODULES):
    for _f in importlib.import_module(f"tierank.measures.{_name}").FAMILIES:
        EAGER_FAMILIES[_f.name] = (_i, _f)
        EAGER_LOOKUP[_f.name.lower()] = (_i, (_f, {}))
        for _alias, _preset in _f.aliases:
            EAGER_LOOKUP[_alias.lower()] = (_i, (_f, _preset))
        for _t in _f.trec:
            EAGER_TREC[_t.name] = (_i, (_f, _t))
EAGER = {"families": EAGER_FAMILIES, "lookup": EAGER_LOOKUP, "trec": EAGER_TREC}

KEYS = sorted({*EAGER_FAMILIES, *EAGER_LOOKUP, *EAGER_TREC, "nDCG@10", "P.5", "ndcg_cut_10", "official", ""})
QUESTIONS = st.tuples(st.sampled_from(sorted(EAGER)), st.sampled_from(["in", "get", "[]"]),
                      st.one_of(st.sampled_from(KEYS), st.text(max_size=6)))


@settings(max_examples=300, deadline=None, derandomize=True, database=None)
@given(st.lists(QUESTIONS, max_size=12), st.sampled_from(["iter", "len", "none"]))
def test_lazy_tables_answer_as_the_whole_registry(questions, end):
    tables = _registry._Tables(FAMILY_MODULES)
    needed = 0   # modules the questions so far needed: no more are imported
    for table, how, key in questions:
        lazy, eager = getattr(tables, table), EAGER[table]
        expected = eager[key][1] if key in eager else None
        if how == "in":
            assert (key in lazy) == (key in eager)
        elif how == "get":
            assert lazy.get(key) == expected
        elif key in eager:
            assert lazy[key] == expected
        else:
            with pytest.raises(KeyError):
                lazy[key]
        needed = max(needed, eager[key][0] + 1 if key in eager else len(FAMILY_MODULES))
        assert tables.imported == needed
    if end == "iter":   # in registry order, as a dict built from every module
        assert [(k, tables.families[k]) for k in tables.families] == [(k, f) for k, (_, f) in EAGER_FAMILIES.items()]
        assert list(tables.trec) == list(EAGER_TREC) and list(tables.lookup) == list(EAGER_LOOKUP)
    elif end == "len":
        assert (len(tables.families), len(tables.lookup), len(tables.trec)) == tuple(map(len, EAGER.values()))
    assert tables.imported in (needed, len(FAMILY_MODULES))


def test_the_registry_is_the_whole_registry():
    assert list(REGISTRY) == list(EAGER_FAMILIES)
    assert dict(REGISTRY.items()) == {k: f for k, (_, f) in EAGER_FAMILIES.items()}
    with pytest.raises(TypeError):   # as a dict: an unhashable key is an error, not a missing one
        {"a": 1}.__contains__([1])
    with pytest.raises(TypeError):
        [1] in REGISTRY   # noqa: B015


def test_threads_asking_at_once_enter_each_module_once():
    tables = _registry._Tables(FAMILY_MODULES)
    last = next(iter(importlib.import_module(f"tierank.measures.{FAMILY_MODULES[-1]}").FAMILIES)).name
    barrier = threading.Barrier(4)
    errors: list = []

    def ask() -> None:
        barrier.wait()
        try:
            assert tables.families[last] is EAGER_FAMILIES[last][1]
        except BaseException as err:   # noqa: BLE001 - reported below
            errors.append(err)

    threads = [threading.Thread(target=ask) for _ in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert not errors and tables.imported == len(FAMILY_MODULES)
    assert list(tables.families) == list(EAGER_FAMILIES)


# -- the parser asks the registry only what it may hold ---------------------------------------------------
def test_what_the_parser_takes_for_granted():
    """parse_measure and split_trec_text ask the registry for a trec_eval name only when the text is a name
    of trec_eval's table, and for a name or alias only when the text holds no '@', '(' or '.'."""
    from tierank.measures._trec import TREC_EVAL_TABLE

    assert set(EAGER_TREC) <= set(TREC_EVAL_TABLE)
    assert not [k for k in EAGER_LOOKUP if any(c in k for c in "@(.")]
    assert not [n for n in TREC_EVAL_TABLE if "." in n]


def _outcome(fn, text):
    """What ``fn(text)`` gives, as text: the measures (with their families and trec_eval names), or the
    error; and the warnings."""
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        try:
            got = fn(text)
            if isinstance(got, dict):
                shown = [(k, str(m), m.family.name) for k, m in got.items()]
                value = repr((shown, getattr(got, "trec_names", None), sorted(getattr(got, "pseudo", ()))))
            else:
                value = repr((str(got), got.family.name))
        except InputError as err:
            value = f"InputError: {err}"
    return value, [str(w.message) for w in caught]


_NAMES = sorted({*EAGER_FAMILIES, *EAGER_TREC, *(a for _, (f, _) in EAGER_LOOKUP.values() for a, _ in f.aliases)})
_SPELLING = st.one_of(
    st.sampled_from(_NAMES),
    st.builds(lambda n, k: f"{n}@{k}", st.sampled_from(_NAMES), st.sampled_from(["1", "10", "0", "x"])),
    st.builds(lambda n, p: f"{n}.{p}", st.sampled_from(_NAMES), st.sampled_from(["5", "5,10", "", "0.5", "p=0.8"])),
    st.builds(lambda n, p: f"{n}_{p}", st.sampled_from(_NAMES), st.sampled_from(["5", "0.10", "x"])),
    st.builds(lambda n, p: f"{n}({p})@5", st.sampled_from(_NAMES), st.sampled_from(["rel=2", "gain='exp2'", "p=0.8"])),
    st.builds(lambda n: n.swapcase(), st.sampled_from(_NAMES)),
    st.sampled_from(["official", "all_trec", "runid", " map ", "map P.5", "nDGC@10"]),
    st.text(max_size=8),
)


def _fresh_registry(monkeypatch):
    """The parser's registry replaced by tables that have imported no family module yet."""
    fresh = _registry._Tables(FAMILY_MODULES)
    monkeypatch.setattr(_registry, "_TABLES", fresh)
    monkeypatch.setattr(_registry, "REGISTRY", fresh.families)
    monkeypatch.setattr(_registry, "_LOOKUP", fresh.lookup)
    monkeypatch.setattr(_registry, "TREC_INDEX", fresh.trec)
    return fresh


@settings(max_examples=400, deadline=None, derandomize=True, database=None,
          suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(_SPELLING, st.sampled_from(["parse", "expand"]))
def test_a_fresh_registry_parses_as_the_whole_one(monkeypatch, text, how):
    """Every spelling (known names, cutoffs, parameters, trec_eval's output spellings, sets, other case,
    any text) parses to the same measures, errors and warnings on a registry that has imported nothing yet
    as on the whole one."""
    fn = {"parse": _registry.parse_measure, "expand": _registry.expand}[how]
    whole = _outcome(fn, text)
    _fresh_registry(monkeypatch)
    assert _outcome(fn, text) == whole


@pytest.mark.parametrize("text, modules", [
    ("map", 2), ("P.5,10", 1), ("P_5", 1), ("AP", 2), ("nDCG@10", 4), ("ndcg_cut.10", 4), ("RR@10", 3),
])
def test_a_measure_string_imports_the_families_up_to_its_own(monkeypatch, text, modules):
    fresh = _fresh_registry(monkeypatch)
    _registry.expand(text)
    assert fresh.imported == modules
