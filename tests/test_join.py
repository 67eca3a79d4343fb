"""The run x qrels join's fast paths give exactly the results of its plain ones.

Hashed string ids vs exact dictionary encoding (with forced hash collisions), small-integer sort keys
vs float keys, ragged runs vs full ones. Expected values come from the plain paths run in the test, or
from a hand count written out in the test.
"""

from __future__ import annotations

import warnings

import numpy as np
import pandas as pd
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

pa = pytest.importorskip("pyarrow")

import tierank
from tierank.data import ids, join
from tierank.data.strings import string_hashes


def test_join_matches_ids_when_run_and_qrels_have_different_longest_ids():
    qrels = pd.DataFrame({"query_id": ["q1", "q1"], "doc_id": ["d1", "a-much-longer-document-id"],
                          "relevance": [1, 1]})
    run = pd.DataFrame({"query_id": ["q1", "q1"], "doc_id": ["d1", "d2"], "score": [2.0, 1.0]})
    res = tierank.evaluate(qrels, run, ["P@1", "NumRelRet", "NumRel"]).per_query
    assert res.loc["q1"].tolist() == [1.0, 1.0, 2.0]


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


def _colliding_hashes(arr, out=None):
    """Real hashes keeping only 2 bits: different ids collide all the time."""
    h = string_hashes(arr, out)
    if h is not None:
        h >>= np.uint64(62)
        h <<= np.uint64(62)
    return h


def _exact(monkeypatch):
    monkeypatch.setattr(join, "hashed_string_codes", lambda *a: None)


@pytest.mark.parametrize("seed", range(8))
@pytest.mark.parametrize("ties", ["expected", "trec_eval", "input"])
def test_collisions_fall_back_to_exact_encoding(seed, ties, monkeypatch):
    qrels, run = _frames(seed)
    with pytest.warns(tierank.TierankWarning):
        hashed = tierank.evaluate(qrels, run, MEASURES, ties=ties).per_query
    calls = []
    original = join._join
    monkeypatch.setattr(join, "_join", lambda *a, **k: calls.append(k["exact"]) or original(*a, **k))
    monkeypatch.setattr(ids, "string_hashes", _colliding_hashes)
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
    original = join.hashed_string_codes
    monkeypatch.setattr(join, "hashed_string_codes", lambda *a: seen.append(1) or original(*a))
    with pytest.warns(tierank.TierankWarning):
        tierank.evaluate(qrels, run, ["AP"])
    assert seen == [1]


@pytest.mark.parametrize("hashes", [string_hashes, _colliding_hashes])
def test_duplicates_are_reported_with_hashed_codes(hashes, monkeypatch):
    monkeypatch.setattr(ids, "string_hashes", hashes)
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


def test_integer_scores_float64_cannot_hold_are_an_error():
    # 2**60 + 1 has no float64 of its own (it would tie with 2**60): an error naming it, not a silent tie
    qrels = pd.DataFrame({"query_id": ["q1"] * 2, "doc_id": ["a", "b"], "relevance": [1, 0]})
    big = pd.DataFrame({"query_id": ["q1"] * 3, "doc_id": ["a", "b", "c"],
                        "score": np.array([2 ** 60, 2 ** 60 + 1, 0], dtype=np.int64)})
    with pytest.raises(tierank.InputError, match=r"document 'b' for query 'q1' is 1152921504606846977, "
                                                 r"which float64 cannot hold exactly"):
        tierank.evaluate(qrels, big, ["RR"])
    # 2**60 and 2**61 are exact: 'a' is below 'c'
    exact = big.assign(score=np.array([2 ** 60, 0, 2 ** 61], dtype=np.int64))
    assert tierank.evaluate(qrels, exact, ["RR"]).mean["RR"] == 0.5


def test_boolean_scores_are_an_error():
    qrels, run = _frames(5)
    with pytest.raises(tierank.InputError, match="booleans are not scores"):
        tierank.evaluate(qrels, run.assign(score=run["score"] > 1), MEASURES)


@pytest.mark.parametrize("dtype", [np.int8, np.int16, np.int32, np.int64, np.uint8, np.uint64])
def test_integer_score_dtypes_rank_like_floats(dtype):
    qrels, run = _frames(5)
    values = run["score"].to_numpy()
    as_int = run.assign(score=values.astype(dtype))
    as_float = run.assign(score=as_int["score"].astype(np.float64) + 0.5)   # float keys path
    with pytest.warns(tierank.TierankWarning):
        a = tierank.evaluate(qrels, as_int, MEASURES, ties="input").per_query
    with pytest.warns(tierank.TierankWarning):
        b = tierank.evaluate(qrels, as_float, MEASURES, ties="input").per_query
    pd.testing.assert_frame_equal(a, b, check_exact=True)


@pytest.mark.parametrize("offset", [0, 2 ** 40])   # codes sorted as uint32, or as int64
@pytest.mark.parametrize("ragged", [False, True])
def test_repeated_integer_documents_are_found_in_grouped_runs(offset, ragged):
    docs = np.array([1, 2, 3, 4, 5, 6, 7, 6]) + offset   # query q2 lists document 6 twice
    queries = ["q1"] * 4 + ["q2"] * 4
    if ragged:   # 3 rows for q1, 4 for q2: the blocks are padded
        docs, queries = docs[1:], queries[1:]
    run = pd.DataFrame({"query_id": queries, "doc_id": docs, "score": np.arange(len(docs), dtype=float)})
    qrels = pd.DataFrame({"query_id": ["q1", "q2"], "doc_id": [docs[0], docs[-1]], "relevance": [1, 1]})
    with pytest.raises(tierank.InputError, match=rf"document {6 + offset} is listed twice for query 'q2'"):
        tierank.evaluate(qrels, run, ["AP"])
    ok = run.assign(doc_id=np.arange(len(docs)) + offset)
    assert tierank.evaluate(qrels.assign(doc_id=[offset, offset + len(docs) - 1]), ok, ["AP"]).per_query.shape == (2, 1)


@settings(max_examples=300, deadline=None)
@given(st.lists(st.integers(0, 2 ** 54 - 1), max_size=40), st.lists(st.integers(0, 2 ** 54 - 1), max_size=20),
       st.integers(0, 2 ** 54 - 1), st.data())
def test_judged_candidates_keep_every_judged_row(run_codes, qrels_codes, low_bits, data):
    """The candidates of the judged lookup (hashed codes of a wide range: a bitmap on their low bits)
    hold every run row whose code is judged, in row order; a code sharing the low bits of a judged one
    is a candidate too, the others are left out."""
    qrels_codes = qrels_codes + [(c & ~0xFFFF) | (low_bits & 0xFFFF) for c in qrels_codes[:2]]   # low bits shared
    if qrels_codes:   # judged codes, and unjudged ones with a judged code's low bits
        run_codes = run_codes + data.draw(st.lists(st.sampled_from(qrels_codes), max_size=10))
        run_codes = run_codes + [c ^ (1 << 40) for c in qrels_codes[:2] if c ^ (1 << 40) not in qrels_codes]
    run_codes = data.draw(st.permutations(run_codes))
    run_d, qrels_d = np.array(run_codes, dtype=np.int64), np.array(qrels_codes, dtype=np.int64)
    rows = join._judged_candidates(run_d, qrels_d, 2 ** 54, complete=True)
    judged = set(qrels_codes)
    assert set(i for i, c in enumerate(run_codes) if c in judged) <= set(rows.tolist())
    assert (np.diff(rows) > 0).all() and all(0 <= r < len(run_codes) for r in rows.tolist())
    # by hand: for at most 22 judged codes the bitmap has the fewest flags, 2**16, and keeps exactly the
    # rows whose low 16 bits are those of a judged code
    lows = {c & 0xFFFF for c in qrels_codes}
    assert rows.tolist() == [i for i, c in enumerate(run_codes) if c & 0xFFFF in lows]


@settings(max_examples=300, deadline=None)
@given(st.integers(1, 6), st.integers(1, 30), st.data())
def test_dense_lookup_finds_what_the_search_finds(n_q, n_docs, data):
    n_keys = n_q * n_docs
    jkey = np.array(sorted(data.draw(st.sets(st.integers(0, n_keys - 1), max_size=n_keys))), dtype=np.int64)
    key = np.array(data.draw(st.lists(st.integers(0, n_keys - 1), max_size=60)), dtype=np.int64)
    run_q, run_d = (key // n_docs).astype(np.int32), key % n_docs
    count_keys = data.draw(st.booleans())
    rows, at, repeated = join._dense_lookup(key, jkey, n_keys, count_keys=count_keys)
    want_rows, want_at = join._find_judged(run_q, run_d, np.arange(n_q, dtype=np.int64), n_docs, jkey,
                                           np.arange(len(key)))
    np.testing.assert_array_equal(rows, want_rows)
    np.testing.assert_array_equal(at, want_at)
    # by hand: a row is found exactly when its key is judged, at that key's place
    np.testing.assert_array_equal(rows, [i for i, k in enumerate(key) if k in set(jkey.tolist())])
    assert (jkey[at] == key[rows]).all()
    # a key listed twice is reported exactly when asked for
    assert repeated == (count_keys and len(set(key.tolist())) < len(key))


def _narrow_int_frames(rng):
    """Integer ids of a narrow range shared by queries: unjudged, negative grades, queries on one side."""
    n_q, n_d = int(rng.integers(1, 6)), int(rng.integers(1, 25))
    rows, judged = [], []
    for q in range(n_q):
        docs = rng.choice(n_d, size=int(rng.integers(1, n_d + 1)), replace=False) + 3 * q + 100
        rows += [(q, int(d), int(rng.integers(0, 4))) for d in docs]
        picked = rng.choice(docs, size=int(rng.integers(0, len(docs) + 1)), replace=False)
        judged += [(q + (q == n_q - 1 and n_q > 2), int(d), int(rng.integers(-1, 4))) for d in picked]
    judged += [(0, 99, 2)]   # judged, never retrieved
    if rng.random() < 0.25:   # a repeated pair (an InputError), next to the row it repeats: still grouped
        i = int(rng.integers(len(rows)))
        rows.insert(i + 1, (rows[i][0], rows[i][1], int(rng.integers(0, 4))))
    run = pd.DataFrame(rows, columns=["query_id", "doc_id", "score"])
    qrels = pd.DataFrame(judged, columns=["query_id", "doc_id", "relevance"]).drop_duplicates(
        ["query_id", "doc_id"])
    return qrels, run.sample(frac=1, random_state=int(rng.integers(1 << 30))) if rng.random() < 0.5 else run


@settings(max_examples=150, deadline=None)
@given(st.integers(0, 2 ** 32 - 1), st.sampled_from(["expected", "trec_eval", "input"]))
def test_judged_lookup_by_table_equals_search(seed, ties):
    qrels, run = _narrow_int_frames(np.random.default_rng(seed))
    measures = ["AP", "nDCG@5", "P@3", "bpref", "infAP", "NumRelRet", "NumRet"]

    def evaluate(per_row, fixed):
        with pytest.MonkeyPatch.context() as mp, warnings.catch_warnings():
            warnings.simplefilter("ignore", tierank.TierankWarning)
            mp.setattr(join, "DENSE_KEYS_PER_ROW", per_row)
            mp.setattr(join, "DENSE_KEYS_MIN", fixed)
            calls = []
            real = join._dense_lookup
            mp.setattr(join, "_dense_lookup", lambda *a, **k: calls.append(1) or real(*a, **k))
            try:
                res = tierank.evaluate(qrels, run, measures, ties=ties, bounds=True, missing="zero")
            except tierank.InputError as err:
                return str(err), calls
            return res, calls

    table, table_calls = evaluate(1 << 20, 1 << 20)
    search, search_calls = evaluate(0, 0)
    if isinstance(table, str):   # the same error (a repeated pair may be found before the lookup)
        assert table == search
        return
    assert table_calls and not search_calls   # each path was taken
    for part in ("per_query", "lower", "upper"):
        pd.testing.assert_frame_equal(getattr(table, part), getattr(search, part), check_exact=True)


@settings(max_examples=300, deadline=None)
@given(st.lists(st.tuples(st.integers(0, 4), st.integers(0, 6)), min_size=0, max_size=30),
       st.booleans(), st.sampled_from([0, 2 ** 40, -(2 ** 62)]), st.booleans())
def test_repeated_pairs_are_found_at_the_first_repeat(pairs, strings, offset, grouped):
    from tierank.data.columns import Columns, normalized

    if grouped:   # each query's rows together (the fast path), in order of first appearance
        firsts = {q: i for i, (q, _) in reversed(list(enumerate(pairs)))}
        pairs = sorted(pairs, key=lambda p: firsts[p[0]])
    queries = [f"q{q}" if strings else q for q, _ in pairs]
    docs = [f"doc-{d}" if strings else d + offset for _, d in pairs]
    if strings:
        queries, docs = pa.array(queries, pa.string()), pa.array(docs, pa.string())
    else:
        queries, docs = np.array(queries, dtype=np.int64), np.array(docs, dtype=np.int64)
    cols = normalized(Columns(query=queries, doc=docs, value=np.ones(len(pairs)), source="qrels"), "grade")
    seen, first = set(), None   # by hand: the first row whose pair an earlier row has
    for i, p in enumerate(pairs):
        if p in seen:
            first = i
            break
        seen.add(p)
    if first is None:
        join.check_no_repeated_pairs(cols, "qrels")
        return
    with pytest.raises(tierank.InputError, match=rf"\(row {first}\)"):
        join.check_no_repeated_pairs(cols, "qrels")


def test_repeated_string_pairs_are_found_when_hashes_collide(monkeypatch):
    from tierank.data.columns import Columns, normalized

    monkeypatch.setattr(ids, "string_hashes", lambda arr, out=None: np.zeros(len(arr), dtype=np.uint64))
    docs = pa.array(["a", "b", "c", "b"])
    cols = normalized(Columns(query=pa.array(["q"] * 4), doc=docs, value=np.ones(4), source="qrels"), "grade")
    with pytest.raises(tierank.InputError, match=r"document 'b' is listed twice for query 'q'.*\(row 3\)"):
        join.check_no_repeated_pairs(cols, "qrels")
    unique = normalized(Columns(query=pa.array(["q"] * 3), doc=docs[:3], value=np.ones(3), source="qrels"), "grade")
    join.check_no_repeated_pairs(unique, "qrels")   # every hash equal, every document different: no error


@settings(max_examples=400, deadline=None)
@given(wide=st.booleans(), data=st.data())
def test_blocks_find_a_repeated_document_exactly_as_counting_does(wide, data):
    """The repeat check of a grouped run's blocks (rows sorted as uint32: wide codes by their low 32 bits
    first) says True exactly when some query holds a document code twice, counted here one by one:
    wide codes sharing their low 32 bits without being equal (in one query, and the same code in two
    queries), codes whose low bits are the padding, full and ragged blocks."""
    from tierank.data.layout import Blocks

    n_docs = 2 ** 45 if wide else 2 ** 20
    # a few low parts (one of them all ones: the uint32 padding) and high parts that wide codes may vary
    lows = [0, 4, 5, 2 ** 20 - 1] + ([2 ** 32 - 1] if wide else [])
    pool = [h * 2 ** 32 + lo for h in ([0, 1, 2 ** 12] if wide else [0]) for lo in lows]
    queries = []
    for _ in range(data.draw(st.integers(1, 8), "queries")):
        docs = data.draw(st.lists(st.sampled_from(pool), min_size=1, max_size=len(pool), unique=True))
        if data.draw(st.integers(0, 9)) == 0:   # now and then a document twice
            docs.insert(data.draw(st.integers(0, len(docs))), data.draw(st.sampled_from(docs)))
        queries.append(docs)
    sizes = [len(q) for q in queries]
    blocks = Blocks.find(np.repeat(np.arange(len(sizes)), sizes), numbered=True)
    assert blocks is not None
    expected = any(len(set(q)) < len(q) for q in queries)
    assert blocks.has_repeats(np.array([d for q in queries for d in q], dtype=np.int64), n_docs) == expected
