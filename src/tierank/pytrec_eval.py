"""A drop-in for pytrec_eval whose values are exact when scores tie.

``import tierank.pytrec_eval as pytrec_eval`` in place of ``import pytrec_eval``: the same
:class:`RelevanceEvaluator` (``query_relevance``, ``measures``, ``relevance_level``,
``judged_docs_only_flag``), the same measure spellings (``"map"``, ``"ndcg_cut.10,100"``, ``"P"``,
``"recall_100"``, ``"official"``...) and output keys (``ndcg_cut_10``, ``P_5`` ... ``P_1000``) as
pytrec-eval-terrier, the same queries in the output, and :data:`supported_measures`,
:func:`compute_aggregated_measure`, :func:`parse_run` and :func:`parse_qrel`. Code that imports
pytrec_eval itself (BEIR, MTEB) switches over with :func:`install`, before it is imported.

Every value is computed by :func:`tierank.evaluate`, in one call per :meth:`RelevanceEvaluator.evaluate`:

* ``ties="expected"`` (the default): the exact mean over all orderings of tied documents; on a run
  whose scores do not tie (as read: see below) that is pytrec_eval's value;
* ``ties="trec_eval"``: ties broken as trec_eval breaks them (document id, descending): pytrec_eval's
  values, to 1e-12, except on the inputs listed in docs/pytrec_eval.md ("Where the values differ");
* the exact minimum and maximum over the orderings through :meth:`RelevanceEvaluator.evaluate_bounds`
  (never as extra keys of :meth:`~RelevanceEvaluator.evaluate`), and tierank's other tie modes.

Scores are read as pytrec_eval reads them, in every tie mode: rounded to C floats (float32,
``trec_eval_version=9``), so scores equal in float32 tie, and ``"expected"`` agrees with pytrec_eval on
exactly the runs in which pytrec_eval sees no tie. ``trec_eval_version=10`` reads doubles instead.

A run truncated to its top k (BEIR, MTEB, vector search) may leave out documents that tie with its
last one: ``RelevanceEvaluator.open_ties`` lists the queries where that tie reaches a cutoff a
measure uses (no warning).
"""

from __future__ import annotations

import collections
import contextlib
import difflib
import itertools
import sys
import types
from collections.abc import Iterable, Iterator, Mapping
from typing import Any

import numpy as np

from . import __version__ as _tierank_version
from .api import evaluate
from .engine.options import check_trec_eval_version
from .errors import InputError
from .measures import Measure, expand
from .ties.policy import check_mode

__all__ = ["RelevanceEvaluator", "supported_measures", "supported_nicknames", "compute_aggregated_measure",
           "parse_run", "parse_qrel", "install", "uninstall", "installed", "as_module", "EXCEPTIONS"]

#: pytrec-eval-terrier's version whose interface this module follows (a local version names tierank's)
__version__ = f"0.5.11+tierank.{_tierank_version}"

# pytrec_eval's measures, in the order its results list them (trec_eval 9's measure table)
_ORDER = ("runid", "num_q", "num_ret", "num_rel", "num_rel_ret", "map", "gm_map", "Rprec", "bpref",
          "recip_rank", "iprec_at_recall", "P", "relstring", "recall", "infAP", "gm_bpref", "Rprec_mult",
          "utility", "11pt_avg", "binG", "G", "ndcg", "ndcg_rel", "Rndcg", "ndcg_cut", "map_cut", "relative_P",
          "success", "set_P", "set_relative_P", "set_recall", "set_map", "set_F", "num_nonrel_judged_ret")
_RANK = {name: i for i, name in enumerate(_ORDER)}
# measures whose keys carry their parameters (P_5, iprec_at_recall_0.10); the others are keyed by their
# name whatever their parameters (set_F.0.5 -> set_F), as pytrec_eval keys them
_LISTED = frozenset({"P", "recall", "ndcg_cut", "map_cut", "relative_P", "success", "iprec_at_recall",
                     "Rprec_mult"})
_NICKNAMES = {
    "official": ("runid", "num_q", "num_ret", "num_rel", "num_rel_ret", "map", "gm_map", "Rprec", "bpref",
                 "recip_rank", "iprec_at_recall", "P"),
    "set": ("runid", "num_q", "num_ret", "num_rel", "num_rel_ret", "utility", "set_P", "set_relative_P",
            "set_recall", "set_map", "set_F"),
    "all_trec": tuple(name for name in _ORDER),
}
# pytrec_eval's other nicknames: trec_eval's preference measures, which tierank does not compute
_PREFS = frozenset({"all_prefs", "prefs", "qrels_jg"})
_MIN_GEO_MEAN = 1e-5   # trec_eval's floor under gm_map and gm_bpref (MIN_GEO_MEAN)

#: The measure names pytrec_eval accepts (each also with parameters: ``"P.5,10"``, ``"P_5"``); a set, as
#: in pytrec_eval.
supported_measures: set[str] = set(_ORDER)

#: pytrec_eval's nicknames for sets of measures that tierank computes (``official``, ``set``, ``all_trec``)
supported_nicknames: dict[str, set[str]] = {name: set(members) for name, members in _NICKNAMES.items()}

#: Where ``ties="trec_eval"`` does not give pytrec_eval's value (docs/pytrec_eval.md explains each;
#: tests/test_pytrec_eval.py checks each): ``{what: what happens}``
EXCEPTIONS = {
    "relstring": "a text measure: 0.0 per query, as pytrec_eval reports it (it has no text values)",
    "runid": "not a measure: 0.0 per query, as in pytrec_eval",
    "empty lists": "a query with no document to rank (an empty run; under judged_docs_only_flag, no judged "
                   "document retrieved): iprec_at_recall and 11pt_avg are 0 where pytrec_eval gives NaN (0/0)",
    "NaN scores": "an InputError naming the query and document (pytrec_eval sorts them arbitrarily)",
    "boolean scores": "an InputError (pytrec_eval reads True as 1.0)",
    "grades beyond the 32-bit int range": "read as the numbers they are (pytrec_eval wraps them around)",
    "utility with parameters": "computed with the coefficients given (pytrec_eval reorders them as a set "
                               "and reports 0)",
    "gain maps (ndcg.1=0.5,2=3, ...)": "computed, keyed by the measure's name (pytrec_eval aborts the process)",
}


# ------------------------------------------------------------------------------------------ measures


def _unknown(text: str) -> InputError:
    known = list(_ORDER) + list(_NICKNAMES)
    close = difflib.get_close_matches(text, known, n=1, cutoff=0.6)
    hint = f" (did you mean {close[0]!r}?)" if close else ""
    return InputError(f"unsupported measure {text!r}{hint}; pytrec_eval's measures: {', '.join(sorted(_ORDER))}, "
                      "each optionally with parameters ('P.5,10', 'ndcg_cut_10'), and the nicknames "
                      + ", ".join(_NICKNAMES))


def _split(text: str) -> tuple[str, str | None]:
    """(measure name, parameter text or None) of one measure string, as pytrec_eval splits it: the name,
    then ``.`` or ``_`` and the parameters."""
    if text in supported_measures:
        return text, None
    for name in sorted(_ORDER, key=len, reverse=True):   # map_cut_10 is map_cut, not map
        rest = text[len(name) + 1:]
        if text.startswith(name) and text[len(name):len(name) + 1] in (".", "_") and rest[:1] in tuple("0123456789.-+"):
            return name, rest
    raise _unknown(text)


def _measure_plan(measures: Any, relevance_level: Any) -> tuple[dict[str, Measure], list[str]]:
    """``({output key: Measure}, output keys in pytrec_eval's order)`` of pytrec_eval's ``measures``."""
    if isinstance(measures, (str, bytes)) or not isinstance(measures, Iterable):
        raise InputError(f"measures must be a set or list of measure strings such as {{'map', 'ndcg_cut.10'}}, "
                         f"not {type(measures).__name__} {measures!r}")
    params: dict[str, list[str]] = {}
    for text in measures:
        if not isinstance(text, str):
            raise InputError(f"a measure must be a string such as 'ndcg_cut.10', got {text!r}")
        if text in _PREFS:
            raise InputError(f"tierank does not compute trec_eval's preference measures ({text!r}); "
                             f"use {', '.join(_NICKNAMES)} or single measures")
        for name in _NICKNAMES.get(text, (text,)):
            base, param = _split(name)
            given = params.setdefault(base, [])
            if param is not None and param not in given:
                given.append(param)
    if not params:
        raise InputError("no measure given, e.g. measures={'map', 'ndcg_cut.10'}")
    if isinstance(relevance_level, bool) or not isinstance(relevance_level, (int, np.integer)) \
            or relevance_level < 1:
        raise InputError("relevance_level must be a positive integer (the lowest relevant grade, as in "
                         f"pytrec_eval), got {relevance_level!r}")
    plan: dict[str, Measure] = {}
    keys: list[str] = []
    for base in sorted(params, key=_RANK.__getitem__):
        given = params[base]
        if base == "runid":
            keys.append(base)
            continue
        if base not in _LISTED and len(given) > 1:
            raise InputError(f"{base} with parameters {' and '.join(map(repr, given))}: pytrec_eval reports "
                             f"{base} under one key, so give it one set of parameters")
        if base in _LISTED and given:   # cutoffs or levels: one list, sorted (as pytrec_eval merges them)
            given = [",".join(dict.fromkeys(p for text in given for p in text.split(",")))]
        texts = [f"{base}.{p}" for p in given] if given else [base]
        for label, m in expand(texts, rel_level=int(relevance_level)).items():
            key = label if base in _LISTED else base
            if key not in plan:
                plan[key] = m
                keys.append(key)
    return plan, keys


# --------------------------------------------------------------------------------------- evaluator


def _check_scores(scores: Any) -> None:
    if not isinstance(scores, Mapping):
        raise InputError(f"scores must be a dict {{query_id: {{doc_id: score}}}}, not {type(scores).__name__}")


def _check_query(qid: Any, docs: Any, what: str) -> None:
    if not isinstance(qid, str):
        raise InputError(f"the query ids of {what} must be strings (as in pytrec_eval), got {qid!r}", query=qid)
    if not isinstance(docs, Mapping):
        raise InputError(f"the {what} must map each query id to a dict {{doc_id: value}}; query {qid!r} maps to "
                         f"{type(docs).__name__}", query=qid)


def _check_queries(queries: Mapping, what: str) -> None:
    """:func:`_check_query` on every query, in order: the types are checked once each, the queries one by
    one only when a type is wrong."""
    if set(map(type, queries)) <= {str} and all(issubclass(t, Mapping) for t in set(map(type, queries.values()))):
        return
    for qid, docs in queries.items():
        _check_query(qid, docs, what)


class RelevanceEvaluator:
    """pytrec_eval's ``RelevanceEvaluator``, exact when scores tie.

    Parameters
    ----------
    query_relevance : dict
        ``{query_id: {doc_id: grade}}`` (string query ids). Queries with no judgment are left out, as
        in pytrec_eval. Grades are integers; other tie modes than ``"trec_eval"`` also take fractional ones.
    measures : set or list of str
        pytrec_eval's measure strings: names (``"map"``, ``"P"``: trec_eval's default cutoffs), with
        parameters (``"ndcg_cut.10,100"``, ``"P_5"``, ``"set_F.0.5"``), or the nicknames ``"official"``,
        ``"set"`` and ``"all_trec"``. A name given bare and with parameters takes the parameters.
    relevance_level : int, default=1
        The lowest relevant grade (trec_eval ``-l``): the binary measures' ``rel``; nDCG's gains stay
        the grades, as in trec_eval.
    judged_docs_only_flag : bool, default=False
        trec_eval ``-J``: retrieved documents without a judgment are dropped first (tierank's
        ``judged_only=True``, exact in every tie mode).
    ties : str, default="expected"
        ``"expected"``: the exact mean over all orderings of tied documents; ``"trec_eval"``: pytrec_eval's
        tie-break (document id, descending); or any of :data:`tierank.TIE_MODES`.
    bounds : bool, default=False
        Also compute the exact minimum and maximum over the orderings in each :meth:`evaluate` call (in
        the same engine call), kept in ``lower`` and ``upper``.
    trec_eval_version : {9, 10}, default=9
        9: scores rounded to float32 first, as pytrec_eval (trec_eval 9) reads them, so scores equal in
        float32 tie (in every tie mode); 10: scores read as doubles.

    Attributes
    ----------
    open_ties : dict of str to list of str
        After :meth:`evaluate`: for each key of a measure with a cutoff k (``P_10``, ``ndcg_cut_10``), the
        queries (in run order) whose k-th document ties with the last one retrieved. If the run was cut to
        its top documents, documents left out may tie with those, and the value would change with them:
        the tie is open. Empty lists when no tie is open; no warning.
    lower, upper : dict or None
        After :meth:`evaluate` with ``bounds=True``: the exact minimum and maximum, shaped as its result.

    Examples
    --------
    Two documents tie for the first place; the relevant one has the smaller id:

    >>> import tierank.pytrec_eval as pytrec_eval
    >>> qrels = {"q1": {"d1": 1}}
    >>> run = {"q1": {"d1": 0.5, "d2": 0.5, "d3": 0.1}}
    >>> pytrec_eval.RelevanceEvaluator(qrels, {"recip_rank", "P.1"}).evaluate(run)
    {'q1': {'recip_rank': 0.75, 'P_1': 0.5}}
    >>> pytrec_eval.RelevanceEvaluator(qrels, {"recip_rank", "P.1"}, ties="trec_eval").evaluate(run)
    {'q1': {'recip_rank': 0.5, 'P_1': 0.0}}
    """

    def __init__(self, query_relevance: Mapping[str, Mapping[str, int]], measures: Iterable[str],
                 relevance_level: int = 1, judged_docs_only_flag: bool = False, *, ties: str = "expected",
                 bounds: bool = False, trec_eval_version: int = 9) -> None:
        check_mode(ties)
        if not isinstance(bounds, bool):
            raise InputError(f"bounds must be True or False, got {bounds!r}")
        if not isinstance(judged_docs_only_flag, (bool, int, np.integer)):
            raise InputError(f"judged_docs_only_flag must be True or False, got {judged_docs_only_flag!r}")
        if not isinstance(query_relevance, Mapping):
            raise InputError("query_relevance must be a dict {query_id: {doc_id: grade}}, not "
                             f"{type(query_relevance).__name__}")
        self.ties = ties
        self.bounds = bounds
        self.trec_eval_version = check_trec_eval_version(trec_eval_version)
        self.relevance_level = relevance_level
        self.judged_docs_only_flag = bool(judged_docs_only_flag)
        self._measures, self._keys = _measure_plan(measures, relevance_level)
        _check_queries(query_relevance, "query_relevance")
        # a copy, as pytrec_eval copies the judgments in; it leaves out queries without judgments
        self._qrels = {qid: dict(docs) for qid, docs in query_relevance.items() if len(docs)}
        self._cutoffs = [(key, m.cutoff) for key, m in self._measures.items() if m.cutoff is not None]
        self.open_ties: dict[str, list[str]] = {key: [] for key, _ in self._cutoffs}
        self.lower: dict[str, dict[str, float]] | None = None
        self.upper: dict[str, dict[str, float]] | None = None

    def __repr__(self) -> str:
        return (f"RelevanceEvaluator({len(self._qrels)} queries, {len(self._keys)} measures, "
                f"ties={self.ties!r}, trec_eval_version={self.trec_eval_version})")

    @property
    def open_tie_count(self) -> int:
        """After :meth:`evaluate`: how many queries have an open tie at some cutoff (``open_ties``)."""
        return len({q for qids in self.open_ties.values() for q in qids})

    def evaluate(self, scores: Mapping[str, Mapping[str, float]]) -> dict[str, dict[str, float]]:
        """Evaluate a run: ``{query_id: {measure key: value}}``.

        Parameters
        ----------
        scores : dict
            ``{query_id: {doc_id: score}}``, higher is better.

        Returns
        -------
        dict
            One dict per query that is both in ``scores`` and (with a judgment) in the qrels, in the order
            of ``scores``, with pytrec_eval's keys in its order. An empty dict if there is none. A query
            whose run is empty counts as retrieving nothing.

        Examples
        --------
        >>> import tierank.pytrec_eval as pytrec_eval
        >>> ev = pytrec_eval.RelevanceEvaluator({"q1": {"d1": 1, "d2": 0}}, {"map", "ndcg_cut.2"})
        >>> ev.evaluate({"q1": {"d1": 2.0, "d2": 2.0}})   # d1 first or second: AP (1 + 1/2) / 2
        {'q1': {'map': 0.75, 'ndcg_cut_2': 0.8154648767857288}}
        """
        values, lower, upper = self._evaluate(scores, self.bounds)
        if self.bounds:
            self.lower, self.upper = lower, upper
        return values

    def evaluate_bounds(self, scores: Mapping[str, Mapping[str, float]]
                        ) -> tuple[dict[str, dict[str, float]], dict[str, dict[str, float]]]:
        """The exact minimum and maximum of every value over all orderings of tied documents.

        Parameters
        ----------
        scores : dict
            ``{query_id: {doc_id: score}}``, as for :meth:`evaluate`.

        Returns
        -------
        (lower, upper) : tuple of dict
            Each shaped as the result of :meth:`evaluate`. ``open_ties`` is updated too.

        Examples
        --------
        >>> import tierank.pytrec_eval as pytrec_eval
        >>> ev = pytrec_eval.RelevanceEvaluator({"q1": {"d1": 1, "d2": 0}}, {"map"})
        >>> ev.evaluate_bounds({"q1": {"d1": 2.0, "d2": 2.0}})
        ({'q1': {'map': 0.5}}, {'q1': {'map': 1.0}})
        """
        _, lower, upper = self._evaluate(scores, True)
        return lower, upper

    def _evaluate(self, scores: Any, bounds: bool) -> tuple[dict, Any, Any]:
        _check_scores(scores)
        _check_queries(scores, "scores")
        qids = [qid for qid in scores if qid in self._qrels]
        self.open_ties = {key: [] for key, _ in self._cutoffs}
        if not qids:
            return {}, {}, {}
        run = {q: scores[q] for q in qids}
        if not self._measures:   # runid alone
            rows = {q: {"runid": 0.0} for q in qids}
            return rows, rows, rows
        res = evaluate({q: self._qrels[q] for q in qids}, run, self._measures, ties=self.ties, bounds=bounds,
                       missing="zero", no_relevant="zero", trec_eval_version=self.trec_eval_version,
                       judged_only=self.judged_docs_only_flag)
        frames = [res.per_query] + ([res.lower, res.upper] if bounds else [])
        at = {q: i for i, q in enumerate(res.per_query.index)}
        order = [at[q] for q in qids]
        out = [self._rows(frame, order, qids) for frame in frames]
        if self._cutoffs:
            self.open_ties = self._open_ties(run)
        return out[0], (out[1] if bounds else None), (out[2] if bounds else None)

    def _rows(self, frame: Any, order: list[int], qids: list[str]) -> dict[str, dict[str, float]]:
        """``{qid: {key: value}}`` from a per-query frame (rows in ``order``), values as pytrec_eval gives
        them: gm_map / gm_bpref as the log of the value (at least trec_eval's 1e-5), text as 0.0."""
        columns = []
        for key in self._keys:
            m = self._measures.get(key)
            if m is None or m.is_text:   # runid, relstring: no number
                columns.append(np.zeros(len(order)))
                continue
            col = frame[key].to_numpy(dtype=np.float64)[order]
            if m.aggregate == "gm":
                col = np.log(np.maximum(col, _MIN_GEO_MEAN))
            columns.append(col)
        rows = np.column_stack(columns).tolist()
        keys = self._keys
        return {q: dict(zip(keys, row)) for q, row in zip(qids, rows)}

    def _open_ties(self, run: dict) -> dict[str, list[str]]:
        """The queries whose document at a measure's cutoff k ties with the last one retrieved (the
        scores as the engine reads them; with ``judged_docs_only_flag``, the judged documents only).

        With n documents of which ``above`` score above the last tie, the k-th is in that tie when
        ``above < k <= n``. ``above`` is counted on the first documents only when those already hold
        more than every cutoff below n (the usual case: one pass over a few values of each query),
        else on all of them."""
        found: dict[str, list[str]] = {key: [] for key, _ in self._cutoffs}
        ks = sorted({k for _, k in self._cutoffs})
        qids, lists, sizes, enough = [], [], [], []
        for qid, docs in run.items():
            values: Any = docs.values()
            if self.judged_docs_only_flag:
                judged = self._qrels[qid]
                values = [v for d, v in docs.items() if judged.get(d, -1) >= 0]
            n = len(values)
            if n < ks[0]:
                continue
            below = [k for k in ks if k < n]   # cutoffs that may fall before the last tie
            need = below[-1] if below else 0
            qids.append(qid)
            lists.append(values)
            sizes.append(n if n <= 2 * need + 16 else need + need // 4 + 16)   # the head read first
            enough.append(need)
        if not qids:
            return found
        head = np.array(sizes, dtype=np.int64)
        above = self._above_minimum(itertools.chain.from_iterable(
            itertools.islice(values, size) for values, size in zip(lists, sizes)), head)
        for i in np.flatnonzero((above < np.array(enough)) & (head < np.fromiter(map(len, lists), np.int64))):
            above[i] = self._above_minimum(iter(lists[i]), np.array([len(lists[i])]))[0]   # all of the list
        for qid, n, a in zip(qids, map(len, lists), above.tolist()):
            for key, k in self._cutoffs:
                if a < k <= n:
                    found[key].append(qid)
        return found

    def _above_minimum(self, values: Iterator, sizes: np.ndarray) -> np.ndarray:
        """For consecutive lists of ``sizes`` values: how many values of each are above its minimum, the
        scores read as the engine reads them (float32 under trec_eval_version=9)."""
        a = np.fromiter(values, dtype=np.float64, count=int(sizes.sum()))
        if self.trec_eval_version == 9:
            with np.errstate(over="ignore"):   # beyond float32's range: +-inf, as the engine reads them
                a = a.astype(np.float32)
        starts = np.concatenate(([0], np.cumsum(sizes)[:-1]))
        lowest = np.minimum.reduceat(a, starts)
        return sizes - np.add.reduceat((a == np.repeat(lowest, sizes)).astype(np.int64), starts)


# ---------------------------------------------------------------------------------- module functions


def compute_aggregated_measure(measure: str, values: Iterable[float]) -> float:
    """Aggregate per-query values over queries, as pytrec_eval does.

    ``num_*`` measures are summed, ``gm_*`` ones (whose per-query values are logs) give
    ``exp(mean)``, the others the mean.

    Parameters
    ----------
    measure : str
        An output key, e.g. ``"map"``, ``"num_ret"``, ``"gm_map"``.
    values : iterable of float
        Its per-query values.

    Returns
    -------
    float

    Examples
    --------
    >>> compute_aggregated_measure("map", [0.5, 1.0]), compute_aggregated_measure("num_ret", [3.0, 4.0])
    (0.75, 7.0)
    """
    if not isinstance(measure, str):
        raise InputError(f"measure must be an output key such as 'map', got {measure!r}")
    try:
        array = np.asarray(list(values), dtype=np.float64)
    except (TypeError, ValueError):
        raise InputError(f"the values of {measure!r} must be numbers") from None
    if array.ndim != 1 or not len(array):
        raise InputError(f"no values to aggregate for {measure!r}: give a list of per-query values")
    if measure.startswith("num_"):
        return float(np.sum(array))
    if measure.startswith("gm_"):
        return float(np.exp(np.sum(array) / len(array)))
    return float(np.mean(array))


def _parse_lines(lines: Iterable[str], what: str, layout: str, value: str, convert: Any, kind: str) -> dict:
    """``{qid: {docid: convert(value)}}`` from whitespace-separated lines of the fields ``layout`` (the
    query id first, the document id third): a line-numbered InputError for a wrong field count, a
    document twice for a query, or a ``value`` that ``convert`` refuses (it is not ``kind``)."""
    names = layout.split()
    at = names.index(value)
    out: dict = collections.defaultdict(dict)
    for number, line in enumerate(lines, 1):
        fields = line.strip().split()
        if len(fields) != len(names):
            raise InputError(f"{what} line {number}: {len(names)} fields expected ({layout}), got {len(fields)}")
        qid, doc, text = fields[0], fields[2], fields[at]
        if doc in out[qid]:
            raise InputError(f"{what} line {number}: document {doc!r} appears twice for query {qid!r}", query=qid)
        try:
            out[qid][doc] = convert(text)
        except ValueError:
            raise InputError(f"{what} line {number}: the {value} {text!r} is not {kind}", query=qid) from None
    return dict(out)


def parse_run(f_run: Iterable[str]) -> dict[str, dict[str, float]]:
    """Read the lines of a TREC run (``qid Q0 docid rank score tag``) into ``{qid: {docid: score}}``.

    >>> parse_run(["q1 Q0 d1 1 2.5 tag", "q1 Q0 d2 2 1.5 tag"])
    {'q1': {'d1': 2.5, 'd2': 1.5}}
    """
    return _parse_lines(f_run, "run", "qid Q0 docid rank score tag", "score", float, "a number")


def parse_qrel(f_qrel: Iterable[str]) -> dict[str, dict[str, int]]:
    """Read the lines of TREC qrels (``qid 0 docid grade``) into ``{qid: {docid: grade}}``.

    >>> parse_qrel(["q1 0 d1 1", "q1 0 d2 0"])
    {'q1': {'d1': 1, 'd2': 0}}
    """
    return _parse_lines(f_qrel, "qrels", "qid 0 docid grade", "grade", int, "an integer")


# ------------------------------------------------------------------------------------ install


_ABSENT = object()
_saved: list[Any] = []   # what sys.modules["pytrec_eval"] was before install() (_ABSENT: nothing)


def _module(ties: str, bounds: bool, trec_eval_version: int) -> types.ModuleType:
    """A module object behaving as pytrec_eval, whose RelevanceEvaluator defaults to these options."""
    RelevanceEvaluator(  # the options checked now, not at the host's first call
        {}, ["map"], ties=ties, bounds=bounds, trec_eval_version=trec_eval_version)

    def __init__(self: RelevanceEvaluator, query_relevance: Mapping[str, Mapping[str, int]],
                 measures: Iterable[str], relevance_level: int = 1, judged_docs_only_flag: bool = False, *,
                 ties: str = ties, bounds: bool = bounds, trec_eval_version: int = trec_eval_version) -> None:
        RelevanceEvaluator.__init__(self, query_relevance, measures, relevance_level, judged_docs_only_flag,
                                    ties=ties, bounds=bounds, trec_eval_version=trec_eval_version)

    evaluator = type("RelevanceEvaluator", (RelevanceEvaluator,),
                     {"__init__": __init__, "__doc__": RelevanceEvaluator.__doc__, "__module__": "pytrec_eval"})
    module = types.ModuleType("pytrec_eval", f"tierank's drop-in for pytrec_eval (ties={ties!r}); see "
                                             "tierank.pytrec_eval")
    module.__dict__.update(
        RelevanceEvaluator=evaluator, supported_measures=set(supported_measures),
        supported_nicknames={k: set(v) for k, v in supported_nicknames.items()},
        compute_aggregated_measure=compute_aggregated_measure, parse_run=parse_run, parse_qrel=parse_qrel,
        __version__=__version__, __all__=["parse_run", "parse_qrel", "supported_measures", "supported_nicknames",
                                          "RelevanceEvaluator", "compute_aggregated_measure"],
        tierank_version=_tierank_version, ties=ties, trec_eval_version=trec_eval_version)
    return module


def as_module(ties: str = "expected", bounds: bool = False, *, trec_eval_version: int = 9) -> types.ModuleType:
    """A module behaving as pytrec_eval whose ``RelevanceEvaluator`` defaults to these options, without
    installing it: for adapters that set one host module's ``pytrec_eval`` (:mod:`tierank.beir`,
    :mod:`tierank.mteb`) rather than ``sys.modules``.

    Examples
    --------
    >>> module = as_module(ties="upper")
    >>> module.ties, module.RelevanceEvaluator({"q1": {"d1": 1}}, {"P.1"}).evaluate({"q1": {"d1": 1.0, "d2": 1.0}})
    ('upper', {'q1': {'P_1': 1.0}})
    """
    return _module(ties, bounds, trec_eval_version)


def install(ties: str = "expected", bounds: bool = False, *, trec_eval_version: int = 9) -> types.ModuleType:
    """Put a module behaving as pytrec_eval in ``sys.modules["pytrec_eval"]``, for code imported afterwards.

    Libraries that ``import pytrec_eval`` themselves (BEIR, MTEB) and cannot pass ``ties=`` then use
    tierank; its ``RelevanceEvaluator`` defaults to the ``ties`` and ``bounds`` given. A module that
    imported pytrec_eval before keeps the real one: install first. Calling it again replaces the
    installed module (e.g. to change ``ties``); :func:`uninstall` restores what was there before the first.

    Parameters
    ----------
    ties, bounds, trec_eval_version
        The defaults of the installed ``RelevanceEvaluator`` (as in :class:`RelevanceEvaluator`).

    Returns
    -------
    module
        The module now in ``sys.modules["pytrec_eval"]`` (its ``ties`` attribute says the tie mode).

    Examples
    --------
    >>> import tierank.pytrec_eval
    >>> tierank.pytrec_eval.install(ties="expected")
    <module 'pytrec_eval'>
    >>> import pytrec_eval
    >>> pytrec_eval.ties
    'expected'
    >>> pytrec_eval.RelevanceEvaluator({"q1": {"d1": 1}}, {"P.1"}).evaluate({"q1": {"d1": 1.0, "d2": 1.0}})
    {'q1': {'P_1': 0.5}}
    >>> tierank.pytrec_eval.uninstall()
    """
    module = _module(ties, bounds, trec_eval_version)
    if not _saved:
        _saved.append(sys.modules.get("pytrec_eval", _ABSENT))
    sys.modules["pytrec_eval"] = module
    return module


def uninstall() -> None:
    """Restore ``sys.modules["pytrec_eval"]`` as it was before :func:`install` (nothing if not installed)."""
    if not _saved:
        return
    previous = _saved.pop()
    if previous is _ABSENT:
        sys.modules.pop("pytrec_eval", None)
    else:
        sys.modules["pytrec_eval"] = previous


@contextlib.contextmanager
def installed(ties: str = "expected", bounds: bool = False, *,
              trec_eval_version: int = 9) -> Iterator[types.ModuleType]:
    """:func:`install` for the ``with`` block, then :func:`uninstall`.

    Examples
    --------
    >>> import tierank.pytrec_eval
    >>> with tierank.pytrec_eval.installed(ties="upper") as pytrec_eval:
    ...     pytrec_eval.RelevanceEvaluator({"q1": {"d1": 1}}, {"P.1"}).evaluate({"q1": {"d1": 1.0, "d2": 1.0}})
    {'q1': {'P_1': 1.0}}
    """
    before: Any = sys.modules.get("pytrec_eval", _ABSENT)
    saved = list(_saved)
    module = install(ties, bounds, trec_eval_version=trec_eval_version)
    try:
        yield module
    finally:
        if before is _ABSENT:
            sys.modules.pop("pytrec_eval", None)
        else:
            sys.modules["pytrec_eval"] = before
        _saved[:] = saved

