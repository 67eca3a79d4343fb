"""The registry imports a family's module when a name needs it (measures/_registry.py, docs/architecture.md
"Start-up"): its answers are those of a registry built from every module at once, in any order of questions,
and it imports no module beyond the last one a question needed."""

from __future__ import annotations

import importlib
import threading

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

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
