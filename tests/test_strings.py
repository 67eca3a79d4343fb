"""String hashing, equality and byte-order keys read straight from pyarrow buffers.

Expected values come from Python itself: ``==`` on the strings, ``sorted`` on the UTF-8 bytes.
"""

from __future__ import annotations

import numpy as np
import pytest

pa = pytest.importorskip("pyarrow")

from tierank.data.strings import string_hashes, string_sort_key


def _random_strings(rng, n, alphabet="ab\u00e9\u4e2dz0", max_len=30):
    lengths = rng.integers(0, max_len + 1, size=n)
    return ["".join(rng.choice(list(alphabet), size=k)) for k in lengths]


def _as_types(strings):
    arr = pa.array(strings, type=pa.string())
    layouts = {
        "string": arr,
        "large_string": pa.array(strings, type=pa.large_string()),
        "chunked": pa.chunked_array([strings[: len(strings) // 3], strings[len(strings) // 3:]]),
        "sliced": pa.array(["pad", *strings, "pad"]).slice(1, len(strings)),
    }
    view = pa.array(strings, type=pa.string_view())
    try:
        view.cast(pa.large_string())
        layouts["string_view"] = view
    except pa.ArrowNotImplementedError:   # pyarrow < 17: views are not read (string_buffers gives None)
        assert string_hashes(view) is None
    return layouts


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


def test_hashes_of_slices_written_into_one_array_equal_the_whole():
    rng = np.random.default_rng(11)
    arr = pa.array(_random_strings(rng, 101, max_len=20))
    out = np.zeros(101, dtype=np.uint64)
    assert string_hashes(arr.slice(0, 75), out[:75]) is not None
    string_hashes(arr.slice(75), out[75:])
    assert np.array_equal(out, string_hashes(arr))
