"""The one vectorised run x qrels join: ids become integer codes, rows are joined on int64 keys, and
every evaluated query becomes a ranked list.

The contract
------------
In: two :class:`~tierank.data.columns.Columns` tables, a run (query, document, score) and qrels
(query, document, grade), as the user gave them.

Out: a :class:`JoinedRun`: the ranked lists of the queries that are both in the run and in the qrels
(items sorted by score descending; equal scores form a tie and keep input order), each item with its
grade, plus the queries scored as empty lists (``missing="zero"``).

Rules that hold on every path, whatever the kind of id, the dtypes or the order of the rows:

1. Ids and values are checked first (:func:`~tierank.data.columns.normalized`): no missing id, ids are
   integers or strings of the same kind in both tables, values are real numbers.
2. A retrieved document has one of trec_eval's three kinds: judged (the qrels' grade, >= 0), in the
   qrels with a negative grade (in the pool but unjudged: ``UNJUDGED_IN_POOL``, -2), or absent from the
   qrels (``NOT_IN_POOL``, -1). Negative grades are never relevant and have no gain.
3. A (query, document) pair listed twice in the run, or in the qrels, is an InputError naming the
   query, the document and the row (file line), also in queries that are not evaluated.
4. Queries of the run without judgments are left out with a warning; judged queries without a run are
   left out with a warning (``missing="skip"``) or scored as empty lists (``missing="zero"``).
5. Results do not depend on which fast path was taken: codes are exact or verified (hashes), sort keys
   are exact transformations of the scores (:mod:`tierank.data.layout`).

Fast paths, chosen from the data and invisible in the results: integer document ids are used as they
are; string ids are coded by a hash read straight from the Arrow buffers, every match and repeat it
finds is checked on the strings, and a collision makes the join start again with exact dictionary
encoding (:mod:`tierank.data.ids`); a run grouped by query (as TREC files and most DataFrames are) is
sorted row by row in a padded matrix (:mod:`tierank.data.layout`).
"""

from __future__ import annotations

import warnings
from dataclasses import replace

import numpy as np

from .._threads import Pending, in_background
from ..errors import InputError, TierankWarning, param_text
from .columns import Columns, check_same_id_kinds, is_integer_ids, normalized
from .ids import (DocCodes, HashCollision, QueryCodes, SharedHashes, exact_string_codes, first_duplicate,
                  hashed_string_codes, id_codes, integer_codes, matches_equal, query_codes,
                  string_hash_codes, trec_order_key)
from .layout import Blocks, SortKeys
from .ranked import NOT_IN_POOL, UNJUDGED_IN_POOL, RankedLists, concat_ranges, sort_ranked

__all__ = ["Columns", "JoinedRun", "join_run_qrels", "sorted_label_order"]

# a table of every (query, document) key is used for the judged lookup when it has at most this many
# entries per run row, plus a fixed allowance (4 bytes each)
DENSE_KEYS_PER_ROW, DENSE_KEYS_MIN = 4, 1 << 20


class JoinedRun:
    """Ranked lists of the evaluated queries with a run, plus the queries scored as empty."""

    def __init__(self, ranked: RankedLists, labels: np.ndarray, empty_labels: np.ndarray,
                 empty_judged: list[np.ndarray]) -> None:
        self.ranked = ranked
        self.labels = labels               # query ids of ranked, in ranked order (first appearance in the run)
        self.empty_labels = empty_labels   # query ids evaluated with no retrieved item (missing="zero")
        self.empty_judged = empty_judged


def join_run_qrels(run: Columns, qrels: Columns, missing: str = "skip",
                   scores_as_float32: bool = False, trec_eval_grades: bool = False) -> JoinedRun:
    """Join a run with its judgments and build ranked lists (the rules: see the module docstring).

    ``scores_as_float32``: round the scores to float32 first, as trec_eval 9.x stores them (scores
    equal in float32 then tie). ``trec_eval_grades``: every grade must be one trec_eval reads as the
    same number (``ties="trec_eval"``; :func:`~tierank.data.columns.check_trec_eval_grades`).
    """
    if missing not in ("skip", "zero"):
        raise InputError(f"missing={missing!r}: use 'skip' or 'zero'")
    run, qrels = check_same_id_kinds(normalized(run, "score"),
                                     normalized(qrels, "grade", trec_eval=trec_eval_grades))
    if scores_as_float32:
        with np.errstate(over="ignore"):   # beyond float32's range: +-inf, as a C float in trec_eval 9.x
            run = replace(run, value=run.value.astype(np.float32).astype(np.float64))
    try:
        return _join(run, qrels, missing, exact=False)
    except HashCollision:   # two different ids share a hashed code where it matters: start again
        return _join(run, qrels, missing, exact=True)


def _doc_codes(run: Columns, qrels: Columns, queries: QueryCodes, hashes: SharedHashes | None) -> DocCodes:
    """Document codes by the strategy for the kind of id (see :mod:`tierank.data.ids`)."""
    n_all = len(queries.labels)
    if is_integer_ids(run.doc):
        return integer_codes(run.doc, qrels.doc, n_all)
    codes = hashed_string_codes(hashes, qrels.doc, n_all) if hashes is not None else None
    return codes if codes is not None else exact_string_codes(run.doc, qrels.doc, queries.run,
                                                              find_repeats=not run.unique_pairs)


def _sorted_qrels(qrels: Columns, qrels_q: np.ndarray, codes: DocCodes) -> tuple[np.ndarray, np.ndarray]:
    """(keys, order): the qrels' (query, document) keys sorted, and the rows in that order. A repeated
    pair is an InputError naming the first row that repeats one (or a HashCollision)."""
    qkey = qrels_q * codes.size + codes.qrels
    qsort = _grouped_argsort(qkey, qrels_q)   # keys are unique unless the qrels repeat a pair (an error below)
    qkey = qkey[qsort]
    if (qkey[1:] == qkey[:-1]).any():
        if codes.hashed:
            raise HashCollision
        qsort = np.argsort(qrels_q * codes.size + codes.qrels, kind="stable")   # equal keys in row order
        sorted_keys = (qrels_q * codes.size + codes.qrels)[qsort]
        repeats = np.flatnonzero(sorted_keys[1:] == sorted_keys[:-1]) + 1
        _duplicate_error(qrels, int(qsort[repeats].min()), "qrels")   # the first row repeating one
    return qkey, qsort


def _grouped_argsort(keys: np.ndarray, query: np.ndarray) -> np.ndarray:
    """``np.argsort(keys)`` for keys ordered by ``query`` first: when the rows come grouped by query in
    increasing order (a dict's judgments), each group is sorted in a row of a padded matrix (short
    sorts, no global one); otherwise one sort."""
    if len(query) > 1 and bool((query[1:] >= query[:-1]).all()):
        blocks = Blocks.find(query, numbered=False)
        if blocks is not None:
            order, _ = blocks.sort(keys, np.iinfo(np.int64).max, np.arange(int(query[-1]) + 1))
            return order
    return np.argsort(keys)


class _QuerySets:
    """Which queries are evaluated (in the run and in the qrels), numbered in run order."""

    def __init__(self, in_run: np.ndarray, in_qrels: np.ndarray, ranked_ids: np.ndarray, new_code: np.ndarray,
                 notes: list[str], nothing: bool) -> None:
        self.in_run, self.in_qrels = in_run, in_qrels
        self.ranked_ids = ranked_ids   # codes of the evaluated queries, in run order
        self.new_code = new_code       # code -> number of the evaluated query (-1: not evaluated)
        self.notes = notes             # warnings, given once the input is known to be valid
        self.nothing = nothing         # no query to evaluate (an error, once the run is known to be valid)

    @classmethod
    def of(cls, queries: QueryCodes, missing: str) -> "_QuerySets":
        n_all = len(queries.labels)
        in_run = np.arange(n_all) < queries.n_run
        in_qrels = np.bincount(queries.qrels, minlength=n_all) > 0
        only_qrels = int((in_qrels & ~in_run).sum())
        only_run = int((in_run & ~in_qrels).sum())
        notes = []
        if only_run:
            notes.append(f"{only_run} quer{'y' if only_run == 1 else 'ies'} of the run "
                         f"{'has' if only_run == 1 else 'have'} no judgments and "
                         f"{'is' if only_run == 1 else 'are'} left out")
        if only_qrels and missing == "skip":
            notes.append(f"{only_qrels} judged quer{'y' if only_qrels == 1 else 'ies'} "
                         f"{'is' if only_qrels == 1 else 'are'} missing from the run and left out "
                         f"({param_text('missing', 'zero')} scores them 0, like trec_eval -c)")
        evaluated = in_run & in_qrels
        # evaluated queries are numbered in order of first appearance in the run, so a run grouped by
        # query keeps its blocks in place (evaluate() sorts the results by query id)
        ranked_ids = np.flatnonzero(evaluated)
        new_code = np.full(n_all, -1, dtype=np.int64)
        new_code[ranked_ids] = np.arange(len(ranked_ids))
        nothing = not evaluated.any() and not (missing == "zero" and only_qrels)
        return cls(in_run, in_qrels, ranked_ids, new_code, notes, nothing)

    @property
    def all_run_queries_evaluated(self) -> bool:
        return bool(self.in_qrels[self.in_run].all())


def _join(run: Columns, qrels: Columns, missing: str, exact: bool) -> JoinedRun:
    hashes = None   # string ids: hashed on a worker thread while the queries are coded
    if not exact and not is_integer_ids(run.doc) and len(run.doc):
        started = run.doc_hashes   # by the reader, on these very ids, if not taken by an earlier join
        fresh = isinstance(started, SharedHashes) and started.ids is run.doc and not started.taken
        hashes = started if fresh else SharedHashes(run.doc)
    groups = run.query_groups   # (ids, rows per query) by the reader, when of these very ids
    queries = query_codes(run.query, qrels.query, groups[1] if groups is not None and groups[0] is run.query else None)
    del groups
    codes = _doc_codes(run, qrels, queries, hashes)
    del hashes
    qkey, qsort = _sorted_qrels(qrels, queries.qrels, codes)
    sets = _QuerySets.of(queries, missing)
    run_q, run_d, scores = queries.run, codes.run, run.value
    n_docs = codes.size

    # every run row, evaluated query or not, obeys the duplicate rule
    duplicates: Pending | None = codes.duplicates
    repeats_checked = run.unique_pairs or duplicates is not None or not codes.complete
    keep_rows = None
    if not sets.all_run_queries_evaluated:   # rows of unjudged queries leave now, checked first
        if not repeats_checked:
            _check_no_repeats(run, run_q, run_d, n_docs, codes.hashed)
            repeats_checked = True
        keep_rows = np.flatnonzero(sets.in_qrels[run_q])
        run_q, run_d, scores = run_q[keep_rows], run_d[keep_rows], scores[keep_rows]
    if sets.nothing:
        if duplicates is not None and (dup := duplicates.result()) is not None:
            _duplicate_error(run, dup, "run")
        raise InputError("no query is both in the run and in the qrels: nothing to evaluate")

    # repeats not checked yet: the judged lookup by a table of every key finds them; otherwise the sort does
    ranked_ids, n_q = sets.ranked_ids, len(sets.ranked_ids)
    dense = _dense_keys(codes, n_q, len(run_d))
    sort_checks_repeats = not repeats_checked and not dense
    ranking = _start_ranking(run_q, run_d, scores, n_docs, queries, keep_rows, sets.new_code,
                             check_repeats=sort_checks_repeats)
    labels, qrels_q = queries.labels, queries.qrels
    del queries

    # the judgments of evaluated queries, by (new query code, document): the judged lists and the lookup
    qrels_ptr = np.searchsorted(qkey, np.arange(len(sets.new_code) + 1, dtype=np.int64) * n_docs)
    sizes = np.diff(qrels_ptr)[ranked_ids]
    jrows = qsort[concat_ranges(qrels_ptr[:-1][ranked_ids], sizes)]
    del qkey, qsort
    judged_ptr = np.concatenate(([0], np.cumsum(sizes)))
    jquery = np.repeat(np.arange(n_q, dtype=np.int64), sizes)
    jdoc = codes.qrels[jrows]
    jkey = jquery * n_docs + jdoc
    jgrades = qrels.value[jrows]

    # grades of the run's rows: the qrels' grade, or NOT_IN_POOL
    if dense:   # when every run query is evaluated, the run's query codes are already numbered alike
        evaluated_q = run_q if keep_rows is None else sets.new_code[run_q]
        matched, at, repeated_key = _dense_lookup(np.multiply(evaluated_q, n_docs, dtype=np.int64) + run_d, jkey,
                                                  n_q * n_docs, count_keys=not repeats_checked)
        del evaluated_q
    else:
        candidates = _judged_candidates(run_d, codes.qrels, n_docs, codes.complete, (
            run_q if keep_rows is None else sets.new_code[run_q], jquery, jdoc, n_q))
        matched, at = _find_judged(run_q, run_d, sets.new_code, n_docs, jkey, candidates)
        del candidates
        repeated_key = False
    del jquery, jdoc
    if codes.hashed and not matches_equal(run.doc, matched if keep_rows is None else keep_rows[matched],
                                          qrels.doc, jrows[at]):
        raise HashCollision
    row_grades = np.full(len(run_d), NOT_IN_POOL)
    found = jgrades[at]
    row_grades[matched] = np.where(found < 0, UNJUDGED_IN_POOL, found)
    del matched, at, jkey, found
    if duplicates is not None:   # rows of the whole run, before leaving out unjudged queries
        dup = duplicates.result()
        if dup is not None:
            _duplicate_error(run, dup, "run")
    keys = None
    if ranking is not None:
        repeated, item_order, qptr, keys = ranking.result()
    else:
        repeated = sort_checks_repeats   # the full check below sorts every key
        item_order, qptr = sort_ranked(sets.new_code[run_q], scores.astype(np.float64, copy=False), n_q)
    if repeated or repeated_key:   # find the first repeated (query, document) row
        _check_no_repeats(run, run_q, run_d, n_docs, codes.hashed, keep_rows)
    del run_d, run_q, ranking, codes
    item_grades = row_grades[item_order]
    del row_grades
    if keys is None:
        item_scores, tie_keys, keys_fn = scores.astype(np.float64, copy=False)[item_order], None, None
    else:
        item_scores, tie_keys, keys_fn = keys.ranked(item_order)
    del keys, scores
    rows = item_order if keep_rows is None else keep_rows[item_order]
    del item_order
    ranked = RankedLists(qptr=qptr, keys=item_scores, grades=item_grades, judged_ptr=judged_ptr,
                         judged=jgrades, trec_order_fn=_TrecOrder(run.doc, rows), input_order=rows,
                         tie_keys=tie_keys, keys_fn=keys_fn)
    empty_ids, empty_judged = _empty_queries(sets, qrels_q, qrels.value, missing)
    for note in sets.notes:
        warnings.warn(note, TierankWarning, stacklevel=3)
    return JoinedRun(ranked=ranked, labels=labels[ranked_ids], empty_labels=labels[empty_ids],
                     empty_judged=empty_judged)


def _start_ranking(run_q: np.ndarray, run_d: np.ndarray, scores: np.ndarray, n_docs: int, queries: QueryCodes,
                   keep_rows: np.ndarray | None, new_code: np.ndarray, check_repeats: bool
                   ) -> Pending | None:
    """For a run grouped by query, on a worker thread (during the judged lookup): the repeat check
    (when asked; sorted blocks show a document twice), the sort keys and the sort of the blocks,
    ``(repeated, order, qptr, keys)``. None for other runs, which :func:`sort_ranked` sorts afterwards."""
    blocks = Blocks.find(run_q, numbered=keep_rows is None,
                         counts=queries.run_counts if keep_rows is None else None)
    if blocks is None:
        return None

    def sort_blocks() -> tuple[bool, np.ndarray, np.ndarray, SortKeys]:
        repeated = blocks.has_repeats(run_d, n_docs) if check_repeats else False
        keys = SortKeys.of(scores)
        return (repeated, *blocks.sort(keys.keys, keys.pad, new_code), keys)
    return in_background(sort_blocks)


def _check_no_repeats(run: Columns, run_q: np.ndarray, run_d: np.ndarray, n_docs: int, hashed: bool,
                      keep_rows: np.ndarray | None = None) -> None:
    """The duplicate rule on complete codes: an InputError naming the first row repeating a (query,
    document) pair (a HashCollision first when the codes are hashes: the exact path then decides)."""
    dup = first_duplicate(run_q.astype(np.int64) * n_docs + run_d)
    if dup is None:
        return
    if hashed:
        raise HashCollision
    _duplicate_error(run, int(keep_rows[dup]) if keep_rows is not None else dup, "run")


def _empty_queries(sets: _QuerySets, qrels_q: np.ndarray, grades: np.ndarray, missing: str
                   ) -> tuple[np.ndarray, list[np.ndarray]]:
    """Codes and judged grades of the judged queries without a run, scored as empty (missing="zero")."""
    if missing != "zero":
        return np.zeros(0, dtype=np.int64), []
    empty_ids = np.flatnonzero(sets.in_qrels & ~sets.in_run)
    if not empty_ids.size:
        return empty_ids, []
    jo = np.argsort(qrels_q, kind="stable")
    ptr = np.searchsorted(qrels_q[jo], np.arange(len(sets.new_code) + 1))
    return empty_ids, [grades[jo][ptr[i]:ptr[i + 1]] for i in empty_ids]   # one array per empty query


class _TrecOrder:
    """The trec_eval order of the ranked items' document ids, computed only when that mode is used."""

    def __init__(self, docs: object, rows: np.ndarray) -> None:
        self.docs, self.rows = docs, rows

    def __call__(self) -> np.ndarray | list[np.ndarray]:
        return trec_order_key(self.docs, self.rows)


def _dense_keys(codes: DocCodes, n_q: int, n_rows: int) -> bool:
    """Whether the judged lookup of ``n_rows`` run rows of ``n_q`` evaluated queries uses a table of
    every (query, document) key (:func:`_dense_lookup`): when the codes are complete and the keys span
    few values for the rows (narrow integer document ids, a block of a streamed run); otherwise a
    search in the sorted judged keys (:func:`_find_judged`)."""
    return codes.complete and n_q * codes.size <= DENSE_KEYS_PER_ROW * n_rows + DENSE_KEYS_MIN


def _dense_lookup(key: np.ndarray, jkey: np.ndarray, n_keys: int, count_keys: bool = False
                  ) -> tuple[np.ndarray, np.ndarray, bool]:
    """:func:`_find_judged` for keys in ``[0, n_keys)``: a table of the position of each judged key
    (-1: none), read once per row. The third value, with ``count_keys``: whether a key is there twice
    (fewer distinct keys than rows, counted in a table of flags; a repeated pair); else False."""
    table = np.full(n_keys, -1, dtype=np.int32 if len(jkey) < 2 ** 31 else np.int64)
    table[jkey] = np.arange(len(jkey), dtype=table.dtype)
    at = table[key]
    rows = np.flatnonzero(at >= 0)
    repeated = False
    if count_keys and len(key):
        seen = np.zeros(n_keys, dtype=bool)
        seen[key] = True
        repeated = int(np.count_nonzero(seen)) != len(key)
    return rows, at[rows].astype(np.int64), repeated


def _find_judged(run_q: np.ndarray, run_d: np.ndarray, new_code: np.ndarray, n_docs: int, jkey: np.ndarray,
                 candidates: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """(rows, at): the run rows whose (query, document) is judged, in row order, and where they are
    in the sorted judged keys ``jkey`` (``new query code * n_docs + document code``). Only the
    ``candidates`` rows (increasing) are looked up."""
    if not len(jkey) or not len(candidates):
        return np.zeros(0, dtype=np.int64), np.zeros(0, dtype=np.int64)
    query = new_code[run_q[candidates]]
    key = query * n_docs + run_d[candidates]
    if len(query) < 2 or bool((query[1:] >= query[:-1]).all()):
        # rows grouped by query in code order (a dict, most runs): each search stays in its query's
        # judged keys, which the cache holds, so the needles need no sort
        at = np.searchsorted(jkey, key)
        np.minimum(at, len(jkey) - 1, out=at)
    else:
        by_key = np.argsort(key)   # sorted needles search faster (cache)
        found_at = np.searchsorted(jkey, key[by_key])
        np.minimum(found_at, len(jkey) - 1, out=found_at)
        at = np.empty_like(found_at)
        at[by_key] = found_at   # back in row order: later reads of the rows go forward through memory
        del by_key, found_at
    del query
    found = jkey[at] == key
    return candidates[found], at[found]


def _judged_candidates(run_d: np.ndarray, qrels_d: np.ndarray, n_docs: int, complete: bool,
                       by_query: tuple[np.ndarray, np.ndarray, np.ndarray, int] | None = None) -> np.ndarray:
    """Rows of the run whose document may be judged for their query (a superset; -1 codes never are).

    ``complete``: every run document has a code (else unjudged ones are -1); ``n_docs``: code range.
    ``by_query``: (the evaluated query number of each run row, of each judged key, the judged keys'
    document codes, the number of evaluated queries), for codes of a wide range.
    """
    if not complete:
        return np.flatnonzero(run_d >= 0)   # -1: judged for no query
    if n_docs <= 8 * (len(run_d) + len(qrels_d)) + (1 << 20):
        judged = np.zeros(n_docs, dtype=bool)
        judged[qrels_d] = True
        return np.flatnonzero(judged[run_d])
    if by_query is not None:
        # codes of a wide range (hashes): a row of flags per query on the codes' low bits, 16 flags or more
        # per judged document of the average query (1 in 16 unjudged rows kept, or fewer). A run grouped
        # by query reads one query's flags at a time, which the cache holds, where one table of flags
        # for every query (below) is read at random once it outgrows the cache
        run_q, judged_q, judged_d, n_q = by_query
        width = 1 << max(4, int(16 * len(judged_d) // max(n_q, 1)).bit_length())
        if n_q * width <= 4 * len(run_d) + (1 << 22):
            low = np.int64(width - 1)
            flags = np.zeros(n_q * width, dtype=bool)
            flags[judged_q * width + (judged_d & low)] = True

            def kept(a: int, b: int) -> np.ndarray:   # blocks of rows: small temporaries, reused
                slot = np.multiply(run_q[a:b], width, dtype=np.int64)
                slot += run_d[a:b] & low
                return np.flatnonzero(flags[slot]) + a
            block = 1 << 18
            return np.concatenate([kept(a, a + block) for a in range(0, len(run_d), block)]
                                  or [np.zeros(0, dtype=np.int64)])
    # codes of a wide range (hashes): a bitmap on their low bits leaves out most unjudged rows (about 32
    # bits per judged row keeps 1 in 32 or fewer of them, up to 64 MB of flags)
    low = np.int64((1 << min(max(int(32 * len(qrels_d)).bit_length(), 16), 26)) - 1)
    judged = np.zeros(int(low) + 1, dtype=bool)
    judged[qrels_d & low] = True
    block = 1 << 20
    return np.concatenate([np.flatnonzero(judged[run_d[a:a + block] & low]) + a   # blocks of rows
                           for a in range(0, len(run_d), block)] or [np.zeros(0, dtype=np.int64)])


def check_no_repeated_pairs(cols: Columns, what: str, queries: QueryCodes | None = None) -> None:
    """The duplicate rule on normalised columns: an InputError naming the first row that repeats the
    (query, document) pair of an earlier row, as the join's own check does. ``queries``: the codes
    ``query_codes(cols.query, cols.query[:0])`` when the caller has them."""
    if len(cols.value) < 2:
        return
    if queries is None:
        queries = query_codes(cols.query, cols.query[:0])   # a table grouped by query: no hashing
    n_q, qc = queries.n_run, queries.run.astype(np.int64)
    if is_integer_ids(cols.doc):
        codes = integer_codes(cols.doc, cols.doc[:0], n_q)
        dup = first_duplicate(qc * codes.size + codes.run)
    else:
        hashed = string_hash_codes(cols.doc, n_q)
        if hashed is not None and first_duplicate(qc * hashed[1] + hashed[0]) is None:
            return   # no two rows share a query and a document hash, so none shares a query and a document
        dc, uniques = id_codes(cols.doc)
        dup = first_duplicate(qc * max(len(uniques), 1) + dc)
    if dup is not None:
        _duplicate_error(cols, dup, what)


def _duplicate_error(cols: Columns, row: int, what: str) -> None:
    doc, query = cols.label(cols.doc, row), cols.label(cols.query, row)
    raise InputError(f"document {doc!r} is listed twice for query {query!r} in the {what} "
                     f"({cols.row_text(row)})", query=query, **cols.where(row))


def sorted_label_order(uniques: np.ndarray) -> np.ndarray:
    """Order of query ids as given: numbers numerically, strings in plain string order."""
    try:
        return np.argsort(uniques, kind="stable")
    except TypeError:
        return np.argsort(np.array([str(u) for u in uniques]), kind="stable")
