"""MTEB's retrieval scores, exact when scores tie: ``tierank.mteb.install()``.

MTEB (2.26) scores a retrieval task in ``mteb._evaluators.retrieval_metrics``: nDCG@k, MAP@k, recall@k,
precision@k and hit rate@k by pytrec_eval (ties broken by document id, descending), MRR@k by its own sort
(the same tie-break, since MTEB #5092), nAUC from those per-query values, and, for some tasks,
``recall_cap`` (R_cap), ``hole`` and ``top_k_accuracy`` by its own sort too. :func:`install` switches
every one of them to tierank at once, so that no tie-aware nDCG sits beside a tie-broken MRR:

* the module's ``pytrec_eval`` becomes :mod:`tierank.pytrec_eval` (``ties``; scores read as float32,
  as pytrec_eval reads them);
* ``mrr``, ``recall_cap``, ``hole`` and ``top_k_accuracy`` become this module's functions (scores read as
  doubles, as MTEB's sort reads them), in ``retrieval_metrics`` and in every MTEB module that imported
  them by name (the LMEB tasks' ``recall_cap``);
* nAUC (``nAUC_ndcg_at_10_max``...) is computed by MTEB from those per-query values, so it follows;
* every retrieval result (``AbsTaskRetrieval``: retrieval, reranking, instruction retrieval) carries
  ``"tierank": {"version": ..., "ties": ...}`` beside its scores: kept in MTEB's result files and
  ``TaskResult`` (:func:`tie_mode` reads it back), and MTEB's result cache is only reused for results
  tagged with the installed tie mode (others count as missing and are computed again);
* p-MRR (FollowIR's instruction tasks: ``calculate_pmrr``) becomes :func:`p_mrr`, whose ranks are
  tie-aware too (``"expected"``; ``"trec_eval"`` and ``"input"`` give the fixed orders' values);
* ``skip_first_result`` (image tasks whose query is in the corpus drop each query's first result) drops
  the first of each ordering of the top tie, not the first given: ``calculate_retrieval_scores`` averages
  over which document that is (``"expected"``), or takes the extremes or the preferred arrangement.

:func:`uninstall` restores MTEB's own functions; :func:`installed` does both around a ``with`` block.

What stays MTEB's: ``skip_first_result`` under the fixed orders ``"trec_eval"``, ``"input"`` and
``"random"`` (MTEB drops the first of the top tie in the input order): see docs/mteb.md.
"""

from __future__ import annotations

import collections
import contextlib
import logging
import math
import sys
from collections.abc import Callable, Iterable, Iterator, Mapping
from typing import Any

import numpy as np

from . import __version__ as tierank_version
from . import beir as tierank_beir
from . import pytrec_eval as tierank_pytrec_eval
from .engine.options import check_trec_eval_version
from .errors import InputError, install_hint
from .ties.policy import check_mode

__all__ = ["mrr", "recall_cap", "hole", "top_k_accuracy", "p_mrr", "install", "uninstall", "installed", "tie_mode",
           "TAG"]

#: The key of the tag each retrieval result gets when installed: ``{"version": tierank's, "ties": mode}``
TAG = "tierank"


def _lists(qrels: Any, results: Any, k_values: Any, metric: str, key: str, ties: str,
           ) -> collections.defaultdict[str, list[Any]]:
    out: collections.defaultdict[str, list[Any]] = collections.defaultdict(list)
    if not isinstance(results, Mapping) or results:   # MTEB gives no key at all for no query
        values = tierank_beir.per_query(qrels, results, k_values, metric, ties=ties, strict=False)
        for k, column in values.items():
            out[key.format(k=k)] = column
    return out


def mrr(qrels: Mapping[str, Mapping[str, Any]], results: Mapping[str, Mapping[str, float]],
        k_values: Iterable[int], *, ties: str = "expected") -> collections.defaultdict[str, list[float]]:
    """MTEB's ``mrr``: ``{"MRR@k": [reciprocal rank of the first relevant document in the top k, per query]}``.

    Parameters
    ----------
    qrels : dict
        ``{query_id: {doc_id: grade}}``; relevant means grade > 0. Every query of ``results`` must be in it.
    results : dict
        ``{query_id: {doc_id: score}}``; the lists follow its order.
    k_values : list of int
        The cutoffs, each once.
    ties : str, default="expected"
        ``"expected"``: the exact mean over all orderings of tied documents; ``"trec_eval"``: MTEB's own
        order (document id, descending); any tie mode of :func:`tierank.evaluate`.

    Returns
    -------
    collections.defaultdict
        As MTEB's: one list per cutoff, one value per query of ``results``.

    Examples
    --------
    >>> dict(mrr({"q1": {"d1": 1}}, {"q1": {"d1": 0.5, "d2": 0.5}}, [1, 10]))
    {'MRR@1': [0.5], 'MRR@10': [0.75]}
    """
    return _lists(qrels, results, k_values, "mrr", "MRR@{k}", ties)


def recall_cap(qrels: Mapping[str, Mapping[str, Any]], results: Mapping[str, Mapping[str, float]],
               k_values: Iterable[int], *, ties: str = "expected") -> collections.defaultdict[str, list[Any]]:
    """MTEB's ``recall_cap``: ``{"R_cap_at_k": [relevant in the top k / min(relevant, k), per query]}``,
    None for a query without a relevant document (as MTEB). Parameters are those of :func:`mrr`.

    Examples
    --------
    >>> dict(recall_cap({"q1": {"d1": 1}, "q2": {"d1": 0}}, {"q1": {"d1": 0.5, "d2": 0.5}, "q2": {"d1": 1.0}}, [1]))
    {'R_cap_at_1': [0.5, None]}
    """
    return _lists(qrels, results, k_values, "recall_cap", "R_cap_at_{k}", ties)


def hole(qrels: Mapping[str, Mapping[str, Any]], results: Mapping[str, Mapping[str, float]],
         k_values: Iterable[int], *, ties: str = "expected") -> collections.defaultdict[str, list[float]]:
    """MTEB's ``hole``: ``{"Hole_at_k": [documents of the top k no query judged / k, per query]}``.
    Parameters are those of :func:`mrr` (the queries of ``results`` need not be in ``qrels``).

    Examples
    --------
    >>> dict(hole({"q1": {"d1": 1}}, {"q1": {"d1": 0.5, "d2": 0.5}}, [1, 2]))
    {'Hole_at_1': [0.5], 'Hole_at_2': [0.5]}
    """
    return _lists(qrels, results, k_values, "hole", "Hole_at_{k}", ties)


def top_k_accuracy(qrels: Mapping[str, Mapping[str, Any]], results: Mapping[str, Mapping[str, float]],
                   k_values: Iterable[int], *, ties: str = "expected") -> collections.defaultdict[str, list[float]]:
    """MTEB's ``top_k_accuracy``: ``{"Accuracy@k": [...]}``, with MTEB's shape: a value for each query
    whose chance of a relevant document in the top k is above 0 (MTEB lists a 1.0 per query that has
    one and nothing for the others), and no key when there is none. Parameters are those of :func:`mrr`.

    Examples
    --------
    >>> dict(top_k_accuracy({"q1": {"d1": 1}, "q2": {"d9": 1}}, {"q1": {"d1": 0.5, "d2": 0.5}, "q2": {"d1": 1.0}}, [1]))
    {'Accuracy@1': [0.5]}
    """
    lists = _lists(qrels, results, k_values, "top_k_accuracy", "Accuracy@{k}", ties)
    out: collections.defaultdict[str, list[float]] = collections.defaultdict(list)
    for key, column in lists.items():
        kept = [value for value in column if value > 0]
        if kept:
            out[key] = kept
    return out


#: The tie modes :func:`p_mrr` takes: the mean over orderings, and two fixed orders
P_MRR_TIES = ("expected", "trec_eval", "input")


def p_mrr(original_run: Mapping[str, Mapping[str, float]], new_run: Mapping[str, Mapping[str, float]],
          changed_qrels: Mapping[str, Iterable[str]], *, ties: str = "expected") -> float:
    """MTEB's ``calculate_pmrr`` (FollowIR's p-MRR), with each document's ranks in both runs tie-aware.

    For each query ``q`` of ``changed_qrels`` (whose runs are ``original_run[q + "-og"]`` and
    ``new_run[q + "-changed"]``) and each of its changed documents, MTEB scores the move from its rank
    ``o`` in the original run to its rank ``n`` in the new one: ``n / o - 1`` if ``o >= n``, else
    ``1 - o / n`` (a document missing from a run ranks after its last); p-MRR is the mean over queries of
    the mean over their documents. With ``ties="expected"`` each term is its exact mean over every ordering
    of the ties of both runs (docs/mteb.md derives it): a document of a tie takes each of the tie's places
    equally often, and the two runs are ordered independently.

    Parameters
    ----------
    original_run, new_run : dict
        ``{query_id: {doc_id: score}}`` with MTEB's ``-og`` and ``-changed`` query ids.
    changed_qrels : dict
        ``{query_id: [doc_id, ...]}``: the documents whose relevance the new instruction changed.
    ties : {"expected", "trec_eval", "input"}, default="expected"
        ``"trec_eval"``: MTEB's own order (document id descending inside a tie); ``"input"``: the dict's.

    Returns
    -------
    float

    Examples
    --------
    >>> og = {"q1-og": {"d1": 0.5, "d2": 0.5}}          # d1 is first or second
    >>> new = {"q1-changed": {"d1": 0.1, "d2": 0.9}}    # d1 is second
    >>> p_mrr(og, new, {"q1": ["d1"]})                  # ((1 - 1/2) + (2/2 - 1)) / 2
    0.25
    >>> p_mrr(og, new, {"q1": ["d1"]}, ties="trec_eval")   # d2 first in the original run's tie
    0.0
    """
    if ties not in P_MRR_TIES:
        raise InputError(f"p-MRR takes ties= one of {', '.join(map(repr, P_MRR_TIES))}, not {ties!r}: its "
                         "bounds over the orderings of two runs are not computed")
    per_query = []
    for qid, docs in changed_qrels.items():
        og, new = original_run.get(f"{qid}-og"), new_run.get(f"{qid}-changed")
        if og is None or new is None:   # as MTEB: said and skipped
            logging.getLogger("mteb._evaluators.retrieval_metrics").warning(
                f"Query {qid} not found in the runs for calculating p-MRR")
            continue
        og_ranks, new_ranks = _rank_ranges(og, f"{qid}-og", ties), _rank_ranges(new, f"{qid}-changed", ties)
        terms = [_mean_rank_score(og_ranks(doc), new_ranks(doc)) for doc in docs]
        if terms:
            per_query.append(math.fsum(terms) / len(terms))
    if not per_query:
        raise InputError("p-MRR has no changed document of a query found in both runs to score")
    return math.fsum(per_query) / len(per_query)


def _rank_ranges(run: Mapping[str, float], qid: str, ties: str) -> Callable[[str], tuple[int, int]]:
    """A function of a document: the first and last rank it can take in ``run`` (the same for a fixed
    order); the run's scores are read and checked once, when a document of the run is first asked for."""
    read: list = []   # [scores as float64, as floats], once read

    def ranks(doc: str) -> tuple[int, int]:
        if doc not in run:
            return len(run) + 1, len(run) + 1   # MTEB's rank of a document the run lacks
        if not read:
            try:
                scores = np.array(list(run.values()), dtype=np.float64)
            except (TypeError, ValueError):
                raise InputError(f"p-MRR: the scores of query {qid!r} are not all numbers", query=qid) from None
            if np.isnan(scores).any():
                raise InputError(f"p-MRR: a score of query {qid!r} is NaN", query=qid)
            read.extend([scores, scores.tolist()])
        scores, floats = read
        score = float(run[doc])
        above = int(np.count_nonzero(scores > score))
        tied = [d for d, s in zip(run, floats) if s == score]
        if ties == "expected":
            return above + 1, above + len(tied)
        before = sum(d > doc for d in tied) if ties == "trec_eval" else tied.index(doc)
        return above + before + 1, above + before + 1
    return ranks


def _mean_rank_score(og: tuple[int, int], new: tuple[int, int]) -> float:
    """The mean of MTEB's ``rank_score`` over an original rank ``o`` in ``og`` and a new rank ``n`` in
    ``new`` (each range inclusive, every pair equally likely): for each ``o``, the ``n <= o`` add
    ``sum(n) / o - count`` and the others ``count - o * sum(1 / n)``, from running sums over ``new``."""
    o = np.arange(og[0], og[1] + 1, dtype=np.float64)
    n = np.arange(new[0], new[1] + 1, dtype=np.float64)
    at_most = np.clip(o - new[0] + 1, 0, len(n)).astype(np.int64)   # how many n <= o
    n_sums = np.concatenate(([0.0], np.cumsum(n)))
    inverse_sums = np.concatenate(([0.0], np.cumsum(1.0 / n)))
    terms = n_sums[at_most] / o - at_most + (len(n) - at_most) - o * (inverse_sums[-1] - inverse_sums[at_most])
    return math.fsum(terms.tolist()) / (len(o) * len(n))


def _first_dropped(results: Mapping[str, Mapping[str, float]], qrels: Mapping[str, Mapping[str, Any]],
                   ties: str) -> tuple[list[dict[str, dict[str, float]]], list[dict[str, float]]]:
    """The runs ``skip_first_result`` may leave, as layers: each layer holds every query of ``results``
    with one document of its top tie dropped, and ``weights[j][qid]`` is the chance that layer ``j``'s
    drop is the one (0 where a query has fewer kinds of document in its top tie than ``j + 1``).

    A query's measures after the drop depend only on the grade of the document dropped (the rest of the
    tie stays tied), so there is a layer per grade of the top tie: with ``"expected"`` the document dropped
    is each of the tie's with the same chance; ``"lower"``/``"upper"`` keep every grade (their extremes are
    taken over the layers); ``"optimistic"``/``"pessimistic"`` drop the preferred / least preferred
    document first, the highest / lowest grade (unjudged as 0)."""
    per_query: dict[str, list[tuple[str | None, float]]] = {}   # per query: (document dropped, chance)
    for qid, scores in results.items():
        top = max(scores.values(), default=None)
        tied = [doc for doc, score in scores.items() if score == top]
        grades = qrels.get(qid, {})
        first: dict[Any, str] = {}   # a grade -> the first document of the tie with it
        counts: collections.Counter = collections.Counter()
        for doc in tied:
            first.setdefault(grades.get(doc), doc)
            counts[grades.get(doc)] += 1
        kinds = sorted(first, key=lambda grade: (grade is not None, grade or 0))   # a fixed order
        if ties in ("optimistic", "pessimistic"):
            key = (lambda grade: grade or 0)
            kinds = [(max if ties == "optimistic" else min)(kinds, key=key)] if kinds else kinds
        fixed = ties in ("optimistic", "pessimistic")   # one arrangement: its drop happens
        per_query[qid] = [(first[grade], 1.0 if fixed else counts[grade] / len(tied)) for grade in kinds] or [(None, 1.0)]
    n_layers = max((len(options) for options in per_query.values()), default=1)
    layers, weights = [], []
    for j in range(n_layers):
        layer, weight = {}, {}
        for qid, options in per_query.items():
            dropped, chance = options[j] if j < len(options) else (options[0][0], 0.0)
            layer[qid] = {doc: score for doc, score in results[qid].items() if doc != dropped}
            weight[qid] = chance
        layers.append(layer)
        weights.append(weight)
    return layers, weights


def _tie_aware_skip(calculate: Any, ties: str) -> Any:
    """MTEB's ``calculate_retrieval_scores`` whose ``skip_first_result`` drops the first of each ordering
    of the top tie (see :func:`_first_dropped`); without it, or under a fixed order, MTEB's own."""
    def calculate_retrieval_scores(results: Any, qrels: Any, k_values: Any, skip_first_result: bool = False) -> Any:
        if not skip_first_result or ties in ("trec_eval", "input", "random") or not isinstance(results, Mapping):
            return calculate(results, qrels, k_values, skip_first_result)
        metrics = sys.modules["mteb._evaluators.retrieval_metrics"]
        layers, weights = _first_dropped(results, qrels, ties)
        measures = {f"{name}." + ",".join(map(str, k_values))
                    for name in ("map_cut", "ndcg_cut", "recall", "P", "success")}
        evaluator = metrics.pytrec_eval.RelevanceEvaluator(qrels, measures)
        per_layer = [evaluator.evaluate(layer) for layer in layers]
        mrr_layers = [metrics.mrr(qrels, layer, k_values) for layer in layers]
        combine = _combined(ties)
        scores = {qid: {key: combine([s[qid][key] for s in per_layer], [w[qid] for w in weights])
                        for key in per_layer[0][qid]} for qid in per_layer[0]}
        qids = list(results)
        mrr_scores = {key: [combine([m[key][i] for m in mrr_layers], [w[qid] for w in weights])
                            for i, qid in enumerate(qids)] for key in mrr_layers[0]}
        ndcg, _map, recall, precision, all_ndcgs, all_aps, all_recalls, all_precisions, hit_rate = \
            metrics.parse_metrics_from_scores(scores, k_values)
        # the confidences nAUC reads are those of any layer: each drops a document of the same top score
        naucs = metrics.evaluate_abstention(layers[0], {**all_ndcgs, **all_aps, **all_recalls, **all_precisions})
        return metrics.RetrievalEvaluationResult(
            all_scores=scores, ndcg=ndcg, map=_map, recall=recall, precision=precision, naucs=naucs,
            mrr={k: sum(v) / len(v) for k, v in mrr_scores.items()},
            naucs_mrr=metrics.evaluate_abstention(layers[0], mrr_scores), hit_rate=hit_rate)
    calculate_retrieval_scores.__doc__ = f"MTEB's calculate_retrieval_scores, skip_first_result tie-aware ({ties=})"
    return calculate_retrieval_scores


def _combined(ties: str) -> Any:
    """How a query's values over the layers of :func:`_first_dropped` make its value: their mean by the
    chances (``"expected"``), the extreme over the layers that can happen (``"lower"``/``"upper"``), or the
    one layer (``"optimistic"``/``"pessimistic"``)."""
    if ties in ("lower", "upper"):
        pick = min if ties == "lower" else max
        return lambda values, chances: pick(v for v, c in zip(values, chances) if c > 0)
    return lambda values, chances: math.fsum(v * c for v, c in zip(values, chances))


def tie_mode(result: Any) -> str | None:
    """The tie mode a result was computed in: the ``ties`` of its ``"tierank"`` tags, or None for a
    result without one (MTEB's own, tie-broken numbers).

    Parameters
    ----------
    result : mteb.TaskResult or dict
        A ``TaskResult`` (``scores`` by split, a list of dicts), its ``to_dict()``, or one scores dict.

    Returns
    -------
    str or None
        None if any of its scores dicts has no tag.

    Examples
    --------
    >>> tie_mode({"ndcg_at_10": 0.5, "tierank": {"version": "0.1.0", "ties": "expected"}})
    'expected'
    >>> tie_mode({"test": [{"ndcg_at_10": 0.5}]}) is None
    True
    """
    scores = result.scores if hasattr(result, "scores") else result
    if isinstance(scores, Mapping) and "scores" in scores and "task_name" in scores:
        scores = scores["scores"]
    if isinstance(scores, Mapping) and TAG in scores:
        return str(scores[TAG]["ties"])
    found = {tie_mode(entry) if isinstance(entry, Mapping) and TAG in entry else None
             for entries in (scores.values() if isinstance(scores, Mapping) else ())
             for entry in (entries if isinstance(entries, list) else [entries])}
    return found.pop() if len(found) == 1 else None


# ------------------------------------------------------------------------------------------- install


_saved: list[tuple[Any, str, Any]] = []   # (object, attribute, what its __dict__ held) for uninstall()
_METRICS = {"mrr": mrr, "recall_cap": recall_cap, "hole": hole, "top_k_accuracy": top_k_accuracy,
            "calculate_pmrr": p_mrr}


def _set(obj: Any, name: str, value: Any) -> None:
    _saved.append((obj, name, obj.__dict__[name]))
    setattr(obj, name, value)


def install(ties: str = "expected", *, trec_eval_version: int = 9) -> None:
    """Make every retrieval score MTEB reports tie-aware (or of another tie mode), and tag the results.

    Call it before ``mteb.evaluate`` (whether mteb was imported before or not). Installing again
    replaces the tie mode; :func:`uninstall` restores MTEB's own scoring.

    Parameters
    ----------
    ties : str, default="expected"
        The tie mode of every score: ``"expected"``, the exact mean over all orderings of tied documents;
        ``"trec_eval"``, MTEB's own numbers (document id, descending, inside a tie); any tie mode of
        :func:`tierank.evaluate` (p-MRR takes ``"expected"``, ``"trec_eval"`` and ``"input"``: see :func:`p_mrr`).
    trec_eval_version : {9, 10}, default=9
        How the pytrec_eval measures read scores: 9 as float32 (pytrec_eval's reading), 10 as doubles.

    Examples
    --------
    >>> import tierank.mteb
    >>> tierank.mteb.install()
    >>> from mteb._evaluators.retrieval_metrics import calculate_retrieval_scores
    >>> constant = {"q1": {"d1": 1.0, "d2": 1.0, "d3": 1.0, "d4": 1.0}}   # a model that scores all alike
    >>> scores = calculate_retrieval_scores(constant, {"q1": {"d1": 1}}, [1, 10])
    >>> scores.mrr["MRR@10"], scores.ndcg["NDCG@10"], scores.hit_rate["HitRate@1"]
    (0.5208333333333333, 0.6404, 0.25)
    >>> tierank.mteb.uninstall()
    >>> scores = calculate_retrieval_scores(constant, {"q1": {"d1": 1}}, [1, 10])
    >>> scores.mrr["MRR@10"], scores.ndcg["NDCG@10"], scores.hit_rate["HitRate@1"]
    (0.25, 0.43068, 0.0)
    """
    check_mode(ties)
    check_trec_eval_version(trec_eval_version)
    try:
        import mteb  # noqa: F401  (loads the tasks, some of which import the metrics by name)
        import mteb._evaluators.retrieval_metrics
        from mteb.abstasks.retrieval import AbsTaskRetrieval
        from mteb.cache import ResultCache
    except ImportError:   # pragma: no cover - the test extra installs mteb
        raise ImportError(f"tierank.mteb.install needs MTEB: {install_hint('mteb')}") from None
    uninstall()
    retrieval_metrics = sys.modules["mteb._evaluators.retrieval_metrics"]
    tag = {"version": tierank_version, "ties": ties}
    _set(retrieval_metrics, "pytrec_eval", tierank_pytrec_eval.as_module(ties=ties,
                                                                         trec_eval_version=trec_eval_version))
    originals = {name: retrieval_metrics.__dict__[name] for name in _METRICS}
    for name, function in _METRICS.items():
        bound = _bind(function, ties)
        for module in [m for key, m in list(sys.modules.items()) if key.split(".")[0] == "mteb" and m]:
            if module.__dict__.get(name) is originals[name]:
                _set(module, name, bound)

    calculate = retrieval_metrics.__dict__["calculate_retrieval_scores"]
    skipping = _tie_aware_skip(calculate, ties)
    for module in [m for key, m in list(sys.modules.items()) if key.split(".")[0] == "mteb" and m]:
        if module.__dict__.get("calculate_retrieval_scores") is calculate:
            _set(module, "calculate_retrieval_scores", skipping)

    evaluate_subset = AbsTaskRetrieval.__dict__["_evaluate_subset"]

    def _evaluate_subset(self: Any, *args: Any, **kwargs: Any) -> Any:
        scores = evaluate_subset(self, *args, **kwargs)
        return {**scores, TAG: dict(tag)}

    load_task_result = ResultCache.__dict__["load_task_result"]

    def _load_task_result(self: Any, *args: Any, **kwargs: Any) -> Any:
        result = load_task_result(self, *args, **kwargs)
        # a cached result of another tie mode (or MTEB's own) counts as missing: never merged with these
        return result if result is None or tie_mode(result) == ties else None

    _set(AbsTaskRetrieval, "_evaluate_subset", _evaluate_subset)
    _set(ResultCache, "load_task_result", _load_task_result)


def _bind(function: Any, ties: str) -> Any:
    def metric(qrels: Any, results: Any, k_values: Any) -> Any:
        return function(qrels, results, k_values, ties=ties)
    metric.__name__ = metric.__qualname__ = function.__name__
    metric.__doc__ = f"tierank's {function.__name__} (ties={ties!r}); see tierank.mteb.{function.__name__}"
    return metric


def uninstall() -> None:
    """Restore MTEB's own scoring (nothing if :func:`install` was not called)."""
    while _saved:
        obj, name, value = _saved.pop()
        setattr(obj, name, value)


@contextlib.contextmanager
def installed(ties: str = "expected", *, trec_eval_version: int = 9) -> Iterator[None]:
    """:func:`install` for the ``with`` block, then :func:`uninstall`.

    Examples
    --------
    >>> import tierank.mteb
    >>> from mteb._evaluators.retrieval_metrics import calculate_retrieval_scores
    >>> with tierank.mteb.installed(ties="upper"):
    ...     calculate_retrieval_scores({"q1": {"d1": 1.0, "d2": 1.0}}, {"q1": {"d2": 1}}, [1]).mrr
    {'MRR@1': 1.0}
    """
    install(ties, trec_eval_version=trec_eval_version)
    try:
        yield
    finally:
        uninstall()

