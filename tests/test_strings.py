"""String hashing and byte-order keys read from pyarrow buffers, and the join that relies on them.

Expected values come from Python itself: ``==`` on the strings for hashes, ``sorted`` on the UTF-8
bytes for the order, and the join's exact (dictionary-encoding) path for the results.
"""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

pa = pytest.importorskip("pyarrow")

import tierank
from tierank.data import join
from tierank.data.strings import string_hashes, string_sort_key


def _random_strings(rng, n, alphabet="ab\u00e9\u4e2dz0", max_len=30):
    lengths = rng.integers(0, max_len + 1, size=n)
    return ["".join(rng.choice(list(alphabet), size=k)) for k in lengths]


def _as_types(strings):
    arr = pa.array(strings, type=pa.string())
    return {
        "string": arr,
        "large_string": pa.array(strings, type=pa.large_string()),
        "string_view": pa.array(strings, type=pa.string_view()),
        "chunked": pa.chunked_array([strings[: len(strings) // 3], strings[len(strings) // 3:]]),
        "sliced": pa.array(["pad", *strings, "pad"]).slice(1, len(strings)),
    }


@pytest.mark.parametrize("seed", range(5))
def test_equal_strings_hash_equal_in_every_layout(seed):
    rng = np.random.default_rng(seed)
    strings = _random_strings(rng, 400, alphabet="ab", max_len=20)  # many repeats and shared prefixes
    reference = string_hashes(pa.array(strings))
    for name, arr in _as_types(strings).items():
        assert np.array_equal(string_hashes(arr), reference), name
    same = np.equal.outer(reference, reference)
    assert np.array_equal(same, np.equal.outer(np.array(strings, dtype=object), np.array(strings, dtype=object)))


def test_hashes_separate_distinct_strings():
    # strings that differ in one byte, in their length only (trailing NUL), or past the 8th byte
    strings = ["", "\0", "a", "a\0", "abcdefgh", "abcdefgh\0", "abcdefghi", "abcdefgj", "d1", "d10",
               "d01", "1d", "clueweb09-en0000-00-00000", "clueweb09-en0000-00-00001"]
    strings += [f"doc{i}" for i in range(20_000)]
    h = string_hashes(pa.array(strings))
    assert len(set(h.tolist())) == len(strings)


@pytest.mark.parametrize("seed", range(3))
def test_a_string_hashes_alike_whatever_else_is_in_the_array(seed):
    rng = np.random.default_rng(seed)
    strings = _random_strings(rng, 300, max_len=40)
    whole = string_hashes(pa.array(strings))
    for part in (strings[:1], strings[5:9], [s for s in strings if len(s) < 9], strings[::-1]):
        expected = [whole[strings.index(s)] for s in part]
        assert string_hashes(pa.array(part)).tolist() == expected


def test_join_matches_ids_when_run_and_qrels_have_different_longest_ids():
    qrels = pd.DataFrame({"query_id": ["q1", "q1"], "doc_id": ["d1", "a-much-longer-document-id"],
                          "relevance": [1, 1]})
    run = pd.DataFrame({"query_id": ["q1", "q1"], "doc_id": ["d1", "d2"], "score": [2.0, 1.0]})
    res = tierank.evaluate(qrels, run, ["P@1", "NumRelRet", "NumRel"]).per_query
    assert res.loc["q1"].tolist() == [1.0, 1.0, 2.0]


def test_non_strings_and_nulls_are_not_hashed():
    assert string_hashes(pa.array([1, 2, 3])) is None
    assert string_hashes(pa.array(["a", None])) is None
    assert string_sort_key(pa.array(["a", None])) is None


@pytest.mark.parametrize("seed", range(5))
def test_sort_key_orders_like_bytes(seed):
    rng = np.random.default_rng(seed)
    strings = _random_strings(rng, 500) + ["", "a", "a\0", "abcdefgh", "abcdefgha", "abcdefg"]
    expected = sorted(range(len(strings)), key=lambda i: (strings[i].encode(), i))
    for name, arr in _as_types(strings).items():
        keys = string_sort_key(arr)
        # np.lexsort: the last key is the most significant; the index breaks ties as in `expected`
        order = np.lexsort((np.arange(len(strings)), *keys[::-1]))
        assert order.tolist() == expected, name


@pytest.mark.parametrize("longest", [1, 7, 8, 9, 16, 300])   # the length folded into the last word, or not
def test_sort_key_orders_like_bytes_at_every_longest_length(longest):
    rng = np.random.default_rng(longest)
    strings = [s[:longest] for s in _random_strings(rng, 300, alphabet="a\0b", max_len=longest)]
    strings += ["a" * longest, "", "b"]
    expected = sorted(range(len(strings)), key=lambda i: (strings[i].encode(), i))
    keys = string_sort_key(pa.array(strings))
    assert np.lexsort((np.arange(len(strings)), *keys[::-1])).tolist() == expected


def test_blocks_of_strings_give_the_same_hashes_and_keys(monkeypatch):
    from tierank.data import strings
    rng = np.random.default_rng(7)
    values = _random_strings(rng, 200, max_len=25) + ["x" * 40]   # the longest in the last block
    arr = pa.array(values)
    whole_h, whole_k = string_hashes(arr), string_sort_key(arr)
    monkeypatch.setattr(strings, "CHUNK", 7)
    assert np.array_equal(string_hashes(arr), whole_h)
    assert all(np.array_equal(a, b) for a, b in zip(string_sort_key(arr), whole_k, strict=True))


def test_buffers_at_the_very_end_of_the_data():
    # the last strings start within 8 bytes of the end of the data buffer
    strings = ["x" * 20, "ab", "c", "", "defghijklm"]
    arr = pa.array(strings)
    h = string_hashes(arr)
    for i, s in enumerate(strings):
        assert h[i] == string_hashes(pa.array([s]))[0]


# ---- the join: hashed codes must give exactly the results of exact encoding ----

def _frames(seed):
    rng = np.random.default_rng(seed)
    n_q, n_d = 6, 40
    rows = []
    for q in range(n_q):
        docs = rng.choice(n_d, size=rng.integers(1, 15), replace=False)
        for d in docs:
            rows.append((f"q{q}", f"doc-{d}", float(rng.integers(0, 4))))
    run = pd.DataFrame(rows, columns=["query_id", "doc_id", "score"])
    judged = [(f"q{q}", f"doc-{d}", int(rng.integers(0, 3))) for q in range(n_q + 1)
              for d in rng.choice(n_d, size=8, replace=False)]
    qrels = pd.DataFrame(judged, columns=["query_id", "doc_id", "relevance"])
    return qrels, run.sample(frac=1, random_state=seed) if seed % 2 else run


MEASURES = ["AP", "nDCG@5", "P@3", "RR", "NumRelRet", "ERR@10"]


def _colliding_hashes(arr):
    """Real hashes keeping only 2 bits: different ids collide all the time."""
    h = string_hashes(arr)
    return None if h is None else (h >> np.uint64(62)) << np.uint64(62)


def _exact(monkeypatch):
    monkeypatch.setattr(join, "_hashed_docs", lambda *a: None)


@pytest.mark.parametrize("seed", range(8))
@pytest.mark.parametrize("ties", ["expected", "trec_eval", "input"])
def test_collisions_fall_back_to_exact_encoding(seed, ties, monkeypatch):
    qrels, run = _frames(seed)
    with pytest.warns(tierank.TierankWarning):
        hashed = tierank.evaluate(qrels, run, MEASURES, ties=ties).per_query
    calls = []
    original = join._join
    monkeypatch.setattr(join, "_join", lambda *a, **k: calls.append(k["exact_ids"]) or original(*a, **k))
    monkeypatch.setattr(join, "string_hashes", _colliding_hashes)
    with pytest.warns(tierank.TierankWarning):
        fallback = tierank.evaluate(qrels, run, MEASURES, ties=ties).per_query
    assert calls == [False, True]   # collisions were seen and the join started again, exactly
    monkeypatch.undo()
    _exact(monkeypatch)
    with pytest.warns(tierank.TierankWarning):
        exact = tierank.evaluate(qrels, run, MEASURES, ties=ties).per_query
    pd.testing.assert_frame_equal(hashed, exact, check_exact=True)
    pd.testing.assert_frame_equal(fallback, exact, check_exact=True)


def test_hashed_path_is_taken_for_string_ids(monkeypatch):
    qrels, run = _frames(0)
    seen = []
    original = join._hashed_docs
    monkeypatch.setattr(join, "_hashed_docs", lambda *a: seen.append(1) or original(*a))
    with pytest.warns(tierank.TierankWarning):
        tierank.evaluate(qrels, run, ["AP"])
    assert seen == [1]


@pytest.mark.parametrize("hashes", [string_hashes, _colliding_hashes])
def test_duplicates_are_reported_with_hashed_codes(hashes, monkeypatch):
    monkeypatch.setattr(join, "string_hashes", hashes)
    qrels = pd.DataFrame({"query_id": ["q1", "q1", "q2"], "doc_id": ["a", "b", "a"], "relevance": [1, 0, 1]})
    run = pd.DataFrame({"query_id": ["q1", "q1", "q2", "q2", "q2"], "doc_id": ["a", "b", "c", "d", "c"],
                        "score": [1.0, 2.0, 1.0, 1.0, 3.0]})
    with pytest.raises(tierank.InputError, match=r"document 'c' is listed twice for query 'q2' in the run"):
        tierank.evaluate(qrels, run, ["AP"])
    bad_qrels = pd.concat([qrels, qrels.iloc[[1]]])
    with pytest.raises(tierank.InputError, match=r"document 'b' is listed twice for query 'q1' in the qrels"):
        tierank.evaluate(bad_qrels, run.iloc[:4], ["AP"])
    # no duplicate at all: collisions must not invent one
    tierank.evaluate(qrels, run.iloc[:4], ["AP"])


@pytest.mark.parametrize("scale, shift", [(1.0, 0.0), (0.5, 0.25), (1.0, -100.0), (300.0, 0.0), (1e5, 0.0)])
def test_score_keys_of_every_width_rank_alike(scale, shift):
    # small integers sort as uint8, up to 65535 distinct steps as uint16, anything else as float64
    qrels, run = _frames(3)
    base = run.assign(score=run["score"].astype(np.int64))
    moved = run.assign(score=run["score"] * scale + shift)
    with pytest.warns(tierank.TierankWarning):
        a = tierank.evaluate(qrels, base, MEASURES, ties="input").per_query
    with pytest.warns(tierank.TierankWarning):
        b = tierank.evaluate(qrels, moved, MEASURES, ties="input").per_query
    pd.testing.assert_frame_equal(a, b, check_exact=True)


@pytest.mark.parametrize("top", [254, 255, 65534, 65535])   # uint8, uint16, uint16, float64 keys
def test_ragged_runs_pad_small_integer_keys_last(top):
    # queries of different lengths: the padding of a short row must never rank above a real item
    qrels = pd.DataFrame({"query_id": ["q1", "q2"], "doc_id": ["a", "x"], "relevance": [1, 1]})
    run = pd.DataFrame({"query_id": ["q1"] * 3 + ["q2"], "doc_id": ["a", "b", "c", "x"],
                        "score": [0, top, top - 1, 0]})
    res = tierank.evaluate(qrels, run, ["RR", "P@1"]).per_query
    # q1: 'a' (score 0) is third of three -> RR 1/3; q2: 'x' alone -> RR 1
    assert res["RR"].tolist() == [1 / 3, 1.0]
    assert res["P@1"].tolist() == [0.0, 1.0]


@pytest.mark.parametrize("seed", range(4))
def test_strings_equal_agrees_with_python(seed, monkeypatch):
    from tierank.data import strings
    monkeypatch.setattr(strings, "CHUNK", 5)
    rng = np.random.default_rng(seed)
    a_values = _random_strings(rng, 60, alphabet="ab", max_len=18)
    b_values = _random_strings(rng, 40, alphabet="ab", max_len=18) + a_values[:10]
    a, b = pa.array(a_values), pa.array(b_values, type=pa.large_string())
    for _ in range(50):
        ra = rng.integers(0, len(a_values), size=rng.integers(0, 12))
        rb = rng.integers(0, len(b_values), size=len(ra))
        equal = all(a_values[i] == b_values[j] for i, j in zip(ra, rb))
        assert strings.strings_equal(a, ra, b, rb) is equal
    same = np.arange(10)
    assert strings.strings_equal(a, same, b, same + 40) is True
    assert strings.strings_equal(pa.array([1]), same[:1], b, same[:1]) is None
