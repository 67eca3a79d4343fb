"""BEIR's evaluation, exact when scores tie: ``EvaluateRetrieval.evaluate`` and ``evaluate_custom``.

BEIR (``beir.retrieval.evaluation.EvaluateRetrieval``) computes nDCG, MAP, recall and precision with
pytrec_eval (ties broken by document id) and its custom metrics (``evaluate_custom``: MRR, R_cap, hole,
top-k accuracy) with its own sort (``sorted`` by score: ties in the order the documents were inserted
into the dict). This module gives both with tierank's values:

* :func:`evaluate`, :func:`evaluate_custom`, :func:`mrr`, :func:`recall_cap`, :func:`hole` and
  :func:`top_k_accuracy` take BEIR's arguments and return BEIR's dicts (the same keys, ``MRR@10``,
  ``R_cap@10``, ``Hole@10``, ``Accuracy@10``, means over ``len(qrels)`` rounded to 5 digits), with
  ``ties=`` (keyword only): ``"expected"`` (the default) is the exact mean over all orderings of tied
  documents; ``"input"`` is BEIR's own order (and numbers); every tie mode of :func:`tierank.evaluate`;
* :func:`install` switches BEIR itself over in one line: afterwards ``EvaluateRetrieval.evaluate`` and
  ``EvaluateRetrieval.evaluate_custom`` (and ``beir.retrieval.custom_metrics``' four functions) give
  tierank's values, whenever BEIR was imported; :func:`uninstall` restores BEIR's.

Each metric is a tierank measure, computed by the engine (docs/beir.md gives the derivation):

=================  =====================================  ===================================================
BEIR               definition (BEIR 2.2.0)                tierank measure
=================  =====================================  ===================================================
``MRR@k``          1 / rank of the first relevant          ``RR@k``
``R_cap@k``        relevant in top k / min(R, k)           ``P(clip_at_r=True)@k`` (trec_eval's relative_P)
``Hole@k``         top k not judged for ANY query / k      ``Unjudged@k`` over the judgments of all queries
``Accuracy@k``     1 if a relevant one is in the top k     ``Success@k``
=================  =====================================  ===================================================

Relevant means grade > 0 (BEIR's test); a document judged for any query, whatever its grade, is no hole.
Scores are read as doubles, as BEIR's sort reads them (pytrec_eval's measures read them as float32).
"""

from __future__ import annotations

import contextlib
import math
import sys
from collections.abc import Iterable, Iterator, Mapping
from typing import Any

from . import pytrec_eval as tierank_pytrec_eval
from .api import evaluate as tierank_evaluate
from .errors import InputError, install_hint
from .ties.policy import check_mode

__all__ = ["evaluate", "evaluate_custom", "mrr", "recall_cap", "hole", "top_k_accuracy", "per_query",
           "METRICS", "install", "uninstall", "installed"]

#: BEIR's custom metrics: ``{name: (its output key's prefix, the tierank measure, the spellings
#: evaluate_custom accepts for it)}``
METRICS: dict[str, tuple[str, str, tuple[str, ...]]] = {
    "mrr": ("MRR", "RR@{k}", ("mrr", "mrr@k", "mrr_cut")),
    "recall_cap": ("R_cap", "P(clip_at_r=True)@{k}", ("recall_cap", "r_cap", "r_cap@k")),
    "hole": ("Hole", "Unjudged@{k}", ("hole", "hole@k")),
    "top_k_accuracy": ("Accuracy", "Success@{k}", ("acc", "top_k_acc", "accuracy", "accuracy@k",
                                                    "top_k_accuracy")),
}
_DIGITS = 5   # BEIR rounds every mean to 5 digits


# -------------------------------------------------------------------------------------------- checks


def _check_dicts(qrels: Any, results: Any) -> None:
    for what, value, inner in (("qrels", qrels, "{doc_id: grade}"), ("results", results, "{doc_id: score}")):
        if not isinstance(value, Mapping):
            raise InputError(f"{what} must be a dict {{query_id: {inner}}}, not {type(value).__name__}")
        for qid, docs in value.items():
            if not isinstance(docs, Mapping):
                raise InputError(f"{what} must map each query id to a dict {inner}; query {qid!r} maps to "
                                 f"{type(docs).__name__}", query=qid)


def _check_k_values(k_values: Any) -> list[int]:
    if isinstance(k_values, (str, bytes)) or not isinstance(k_values, Iterable):
        raise InputError(f"k_values must be a list of positive integers such as [1, 10, 100], got {k_values!r}")
    ks = list(k_values)
    if not ks:
        raise InputError("k_values is empty: give at least one cutoff, e.g. [1, 10, 100]")
    for k in ks:
        if isinstance(k, bool) or not isinstance(k, int) or k < 1:
            raise InputError(f"k_values must be positive integers, got {k!r}")
    repeated = sorted({k for k in ks if ks.count(k) > 1})
    if repeated:   # BEIR adds such a k's values twice (MRR@1 = 2.0)
        raise InputError(f"k_values repeats {', '.join(map(str, repeated))}: give each cutoff once")
    return ks


def _is_relevant(grade: Any, qid: Any, doc: Any) -> bool:
    try:
        number = not isinstance(grade, (bool, str, bytes)) and not math.isnan(float(grade))
    except (TypeError, ValueError):
        number = False
    if not number:
        raise InputError(f"the grade of document {doc!r} for query {qid!r} is {grade!r}, not a number", query=qid)
    return bool(grade > 0)


def _fresh_id(docs: Mapping[str, Any]) -> str:
    """A document id that ``docs`` does not hold (a judgment that retrieves nothing)."""
    doc = "tierank:none"
    while doc in docs:
        doc += "_"
    return doc


# -------------------------------------------------------------------------------------------- values


def per_query(qrels: Mapping[str, Mapping[str, Any]], results: Mapping[str, Mapping[str, float]],
              k_values: Iterable[int], metric: str, *, ties: str = "expected",
              strict: bool = True) -> dict[int, list[float | None]]:
    """One of BEIR's custom metrics per query, computed by tierank: ``{k: [value per query of results]}``.

    The building block of :func:`mrr`, :func:`recall_cap`, :func:`hole`, :func:`top_k_accuracy` and of
    MTEB's versions of them (:mod:`tierank.mteb`).

    Parameters
    ----------
    qrels : dict
        ``{query_id: {doc_id: grade}}``; relevant means grade > 0.
    results : dict
        ``{query_id: {doc_id: score}}``, higher is better.
    k_values : list of int
        The cutoffs, each once (BEIR counts a repeated one twice).
    metric : {"mrr", "recall_cap", "hole", "top_k_accuracy"}
    ties : str, default="expected"
        A tie mode of :func:`tierank.evaluate` (``"input"``: BEIR's order, ``"trec_eval"``: MTEB's).
    strict : bool, default=True
        What ``recall_cap`` gives a query without a relevant document, whose denominator min(R, k) is
        0: an InputError (True: BEIR divides by zero) or None (False: MTEB's value).

    Returns
    -------
    dict of int to list
        For each k, the values of the queries of ``results`` in its order.

    Examples
    --------
    The relevant document ties with another for the first place, so it is first or second:

    >>> per_query({"q1": {"d1": 1}}, {"q1": {"d1": 0.5, "d2": 0.5}}, [1, 2], "mrr")
    {1: [0.5], 2: [0.75]}
    >>> per_query({"q1": {"d1": 1}}, {"q1": {"d1": 0.5, "d2": 0.5}}, [1, 2], "mrr", ties="input")
    {1: [1.0], 2: [1.0]}
    """
    if metric not in METRICS:
        raise InputError(f"unknown metric {metric!r}; BEIR's custom metrics are {', '.join(METRICS)}")
    check_mode(ties)
    _check_dicts(qrels, results)
    ks = _check_k_values(k_values)
    qids = list(results)
    if metric != "hole":   # BEIR reads qrels[query_id] for these: a KeyError there
        for qid in qids:
            if qid not in qrels:
                raise InputError(f"query {qid!r} of the results has no entry in qrels (BEIR's {metric} needs "
                                 "one for every query it ranks)", query=qid)
    # the judgments tierank sees: the query's own (relevant: grade > 0, as 1; others 0) and, for hole, the
    # documents it retrieved that some query judged (0); a query without any gets a judgment of a
    # document it does not retrieve, which changes none of the four measures
    annotated = {doc for docs in qrels.values() for doc in docs} if metric == "hole" else set()
    judged: dict[str, dict[str, int]] = {}
    for qid in qids:
        own = qrels.get(qid, {})
        row = {doc: int(_is_relevant(grade, qid, doc)) for doc, grade in own.items()}
        if metric == "recall_cap" and strict and not any(row.values()):
            raise InputError(f"query {qid!r} has no relevant document (grade > 0): BEIR's R_cap divides by "
                             "min(R, k) = 0 there", query=qid)
        row.update((doc, 0) for doc in results[qid] if doc in annotated and doc not in row)
        judged[qid] = row or {_fresh_id(results[qid]): 0}
    labels = {k: f"{metric}@{k}" for k in ks}
    measures = {labels[k]: METRICS[metric][1].format(k=k) for k in ks}
    values: dict[int, list[float | None]] = {k: [] for k in ks}
    if not qids:
        return values
    res = tierank_evaluate(judged, {q: results[q] for q in qids}, measures, ties=ties, missing="zero",
                           no_relevant="zero", trec_eval_version=10)
    frame = res.per_query.reindex(qids)
    for k in ks:
        values[k] = [float(v) for v in frame[labels[k]].to_numpy()]
    if metric == "recall_cap" and not strict:
        for i, qid in enumerate(qids):
            if not any(judged[qid].get(doc, 0) for doc in qrels.get(qid, {})):
                for k in ks:
                    values[k][i] = None
    return values


def _means(metric: str, qrels: Any, results: Any, k_values: Any, ties: str) -> dict[str, float]:
    """BEIR's dict for one custom metric: each k's per-query values summed in the order of ``results``,
    divided by ``len(qrels)`` and rounded to 5 digits, as BEIR computes them."""
    values = per_query(qrels, results, k_values, metric, ties=ties)
    if not len(qrels):
        raise InputError(f"qrels is empty: BEIR's {metric} divides by the number of queries in qrels")
    prefix = METRICS[metric][0]
    out = {}
    for k, column in values.items():
        total = 0.0
        for value in column:
            total += value   # type: ignore[operator]
        out[f"{prefix}@{k}"] = round(total / len(qrels), _DIGITS)
    return out


def mrr(qrels: Mapping[str, Mapping[str, Any]], results: Mapping[str, Mapping[str, float]],
        k_values: Iterable[int], *, ties: str = "expected") -> dict[str, float]:
    """BEIR's ``mrr``: ``{"MRR@k": mean reciprocal rank of the first relevant document in the top k}``.

    Parameters
    ----------
    qrels, results, k_values
        As BEIR takes them: ``{query_id: {doc_id: grade}}``, ``{query_id: {doc_id: score}}``, the cutoffs.
        Every query of ``results`` must be in ``qrels``; the mean is over ``len(qrels)``.
    ties : str, default="expected"
        ``"expected"``: the exact mean over all orderings of tied documents; ``"input"``: BEIR's order;
        any tie mode of :func:`tierank.evaluate`.

    Returns
    -------
    dict
        ``{"MRR@1": ..., "MRR@10": ...}``, rounded to 5 digits as in BEIR.

    Examples
    --------
    >>> qrels = {"q1": {"d1": 1}, "q2": {"d3": 1}}
    >>> results = {"q1": {"d1": 0.5, "d2": 0.5}, "q2": {"d3": 0.9, "d4": 0.1}}
    >>> mrr(qrels, results, [1, 2])
    {'MRR@1': 0.75, 'MRR@2': 0.875}
    """
    return _means("mrr", qrels, results, k_values, ties)


def recall_cap(qrels: Mapping[str, Mapping[str, Any]], results: Mapping[str, Mapping[str, float]],
               k_values: Iterable[int], *, ties: str = "expected") -> dict[str, float]:
    """BEIR's ``recall_cap``: ``{"R_cap@k": relevant documents in the top k / min(relevant, k)}``.

    Parameters are those of :func:`mrr`. A query of ``results`` without a relevant document is an
    InputError (BEIR divides by zero there).

    Examples
    --------
    >>> recall_cap({"q1": {"d1": 1, "d2": 1}}, {"q1": {"d1": 0.5, "d2": 0.5, "d3": 0.5}}, [1, 2, 3])
    {'R_cap@1': 0.66667, 'R_cap@2': 0.66667, 'R_cap@3': 1.0}
    """
    return _means("recall_cap", qrels, results, k_values, ties)


def hole(qrels: Mapping[str, Mapping[str, Any]], results: Mapping[str, Mapping[str, float]],
         k_values: Iterable[int], *, ties: str = "expected") -> dict[str, float]:
    """BEIR's ``hole``: ``{"Hole@k": documents of the top k that no query judged / k}``.

    A document judged for any query (whatever its grade) is no hole; the queries of ``results`` need
    not be in ``qrels``. Parameters are those of :func:`mrr`.

    Examples
    --------
    >>> hole({"q1": {"d1": 1}, "q2": {"d2": 0}}, {"q1": {"d1": 0.5, "d2": 0.5, "d3": 0.5}}, [1, 3])
    {'Hole@1': 0.16667, 'Hole@3': 0.16667}
    """
    return _means("hole", qrels, results, k_values, ties)


def top_k_accuracy(qrels: Mapping[str, Mapping[str, Any]], results: Mapping[str, Mapping[str, float]],
                   k_values: Iterable[int], *, ties: str = "expected") -> dict[str, float]:
    """BEIR's ``top_k_accuracy``: ``{"Accuracy@k": share of queries with a relevant document in the top k}``.

    Parameters are those of :func:`mrr`.

    Examples
    --------
    >>> top_k_accuracy({"q1": {"d1": 1}}, {"q1": {"d1": 0.5, "d2": 0.5, "d3": 0.5}}, [1, 2])
    {'Accuracy@1': 0.33333, 'Accuracy@2': 0.66667}
    """
    return _means("top_k_accuracy", qrels, results, k_values, ties)


def _metric_name(metric: Any) -> str:
    text = metric.lower() if isinstance(metric, str) else None
    for name, (_, _, spellings) in METRICS.items():
        if text in spellings:
            return name
    raise InputError(f"unknown metric {metric!r} for evaluate_custom; BEIR's are "
                     + ", ".join(s for _, _, spellings in METRICS.values() for s in spellings))


def evaluate_custom(qrels: Mapping[str, Mapping[str, Any]], results: Mapping[str, Mapping[str, float]],
                    k_values: Iterable[int], metric: str, *, ties: str = "expected") -> dict[str, float]:
    """``EvaluateRetrieval.evaluate_custom``: one of BEIR's custom metrics by name.

    Parameters
    ----------
    qrels, results, k_values
        As for :func:`mrr`.
    metric : str
        BEIR's spellings, in any case: ``"mrr"`` (``"mrr@k"``, ``"mrr_cut"``), ``"recall_cap"``
        (``"r_cap"``, ``"r_cap@k"``), ``"hole"`` (``"hole@k"``), ``"top_k_accuracy"`` (``"acc"``,
        ``"top_k_acc"``, ``"accuracy"``, ``"accuracy@k"``). Another is an InputError (BEIR returns None).
    ties : str, default="expected"
        As for :func:`mrr`.

    Returns
    -------
    dict
        As BEIR's: ``{"MRR@10": ...}``, ``{"R_cap@10": ...}``, ``{"Hole@10": ...}`` or ``{"Accuracy@10": ...}``.

    Examples
    --------
    >>> evaluate_custom({"q1": {"d1": 1}}, {"q1": {"d1": 0.5, "d2": 0.5}}, [1], "MRR")
    {'MRR@1': 0.5}
    """
    return _means(_metric_name(metric), qrels, results, k_values, ties)


def evaluate(qrels: Mapping[str, Mapping[str, int]], results: Mapping[str, Mapping[str, float]],
             k_values: Iterable[int], ignore_identical_ids: bool = True, *, ties: str = "expected"
             ) -> tuple[dict[str, float], dict[str, float], dict[str, float], dict[str, float]]:
    """``EvaluateRetrieval.evaluate``: nDCG@k, MAP@k, Recall@k and P@k, by :mod:`tierank.pytrec_eval`.

    Parameters
    ----------
    qrels, results, k_values
        As BEIR takes them. Scores are read as float32, as pytrec_eval reads them.
    ignore_identical_ids : bool, default=True
        Leave out a document whose id is its query's (BEIR's default). Unlike BEIR, ``results`` is not
        changed: the documents are left out of a copy.
    ties : str, default="expected"
        As :class:`tierank.pytrec_eval.RelevanceEvaluator` takes it (``"trec_eval"``: BEIR's numbers).

    Returns
    -------
    (ndcg, map, recall, precision) : tuple of dict
        ``{"NDCG@10": ...}``, ``{"MAP@10": ...}``, ``{"Recall@10": ...}``, ``{"P@10": ...}``: the means
        over the queries evaluated, rounded to 5 digits, as BEIR's.

    Examples
    --------
    >>> ndcg, _map, recall, precision = evaluate({"q1": {"d1": 1}}, {"q1": {"d1": 0.5, "d2": 0.5}}, [1])
    >>> ndcg, precision
    ({'NDCG@1': 0.5}, {'P@1': 0.5})
    """
    _check_dicts(qrels, results)
    ks = _check_k_values(k_values)
    if ignore_identical_ids:
        results = {qid: {doc: s for doc, s in docs.items() if doc != qid} for qid, docs in results.items()}
    cuts = ",".join(map(str, ks))
    evaluator = tierank_pytrec_eval.RelevanceEvaluator(
        qrels, {f"map_cut.{cuts}", f"ndcg_cut.{cuts}", f"recall.{cuts}", f"P.{cuts}"}, ties=ties)
    scores = evaluator.evaluate(results)
    if not scores:
        raise InputError("no query of the results has judgments in qrels: BEIR divides by their number, 0")
    out: tuple[dict[str, float], ...] = ({}, {}, {}, {})
    for part, (name, key) in zip(out, (("NDCG", "ndcg_cut"), ("MAP", "map_cut"), ("Recall", "recall"), ("P", "P"))):
        for k in ks:
            total = 0.0
            for row in scores.values():
                total += row[f"{key}_{k}"]
            part[f"{name}@{k}"] = round(total / len(scores), _DIGITS)
    return out   # type: ignore[return-value]


# ------------------------------------------------------------------------------------------- install


_saved: list[tuple[Any, str, Any]] = []   # (object, attribute, what it held) for uninstall()


def _set(obj: Any, name: str, value: Any) -> None:
    _saved.append((obj, name, obj.__dict__[name]))
    setattr(obj, name, value)


def install(ties: str = "expected") -> None:
    """Make BEIR's ``EvaluateRetrieval.evaluate`` and ``evaluate_custom`` give tierank's values.

    Afterwards, in this process, BEIR's ``beir.retrieval.evaluation`` uses :mod:`tierank.pytrec_eval`
    (its module's ``pytrec_eval``) and ``EvaluateRetrieval.evaluate_custom``, ``mrr``, ``recall_cap``,
    ``hole`` and ``top_k_accuracy`` (in ``beir.retrieval.evaluation`` and
    ``beir.retrieval.custom_metrics``) are this module's, with ``ties`` as their default. Works whether
    BEIR was imported before or not; ``sys.modules["pytrec_eval"]`` is left alone. Installing again
    replaces the tie mode; :func:`uninstall` restores BEIR's functions.

    Parameters
    ----------
    ties : str, default="expected"
        The tie mode of every value BEIR's evaluation gives (``"expected"``: tie-aware; ``"trec_eval"``
        and ``"input"``: pytrec_eval's and BEIR's own tie-breaks).

    Examples
    --------
    >>> import tierank.beir
    >>> tierank.beir.install()
    >>> from beir.retrieval.evaluation import EvaluateRetrieval
    >>> EvaluateRetrieval.evaluate_custom({"q1": {"d1": 1}}, {"q1": {"d1": 0.5, "d2": 0.5}}, [1], "mrr")
    {'MRR@1': 0.5}
    >>> tierank.beir.uninstall()
    >>> EvaluateRetrieval.evaluate_custom({"q1": {"d1": 1}}, {"q1": {"d1": 0.5, "d2": 0.5}}, [1], "mrr")
    {'MRR@1': 1.0}
    """
    check_mode(ties)
    try:
        import beir.retrieval.custom_metrics
        import beir.retrieval.evaluation
    except ImportError:   # pragma: no cover - the test extra installs beir
        raise ImportError(f"tierank.beir.install needs BEIR: {install_hint('beir')}") from None
    # the modules a later `from beir.retrieval.evaluation import ...` gets (sys.modules, not attributes of
    # the package, which may hold an older copy of a module that was imported again)
    evaluation = sys.modules["beir.retrieval.evaluation"]
    custom_metrics = sys.modules["beir.retrieval.custom_metrics"]
    uninstall()

    def bound(name: str) -> Any:
        def metric(qrels: Any, results: Any, k_values: Any) -> dict[str, float]:
            return _means(name, qrels, results, k_values, ties)
        metric.__name__ = metric.__qualname__ = name
        metric.__doc__ = f"tierank's {name} (ties={ties!r}); see tierank.beir.{name}"
        return metric

    def custom(qrels: Any, results: Any, k_values: Any, metric: str) -> dict[str, float]:
        return evaluate_custom(qrels, results, k_values, metric, ties=ties)

    custom.__doc__ = f"tierank's evaluate_custom (ties={ties!r}); see tierank.beir.evaluate_custom"
    _set(evaluation, "pytrec_eval", tierank_pytrec_eval.as_module(ties=ties))
    _set(evaluation.EvaluateRetrieval, "evaluate_custom", staticmethod(custom))
    for name in METRICS:
        metric = bound(name)
        _set(evaluation, name, metric)
        _set(custom_metrics, name, metric)


def uninstall() -> None:
    """Restore BEIR's own evaluation (nothing if :func:`install` was not called)."""
    while _saved:
        obj, name, value = _saved.pop()
        setattr(obj, name, value)


@contextlib.contextmanager
def installed(ties: str = "expected") -> Iterator[None]:
    """:func:`install` for the ``with`` block, then :func:`uninstall`.

    Examples
    --------
    >>> import tierank.beir
    >>> from beir.retrieval.evaluation import EvaluateRetrieval
    >>> with tierank.beir.installed(ties="upper"):
    ...     EvaluateRetrieval.evaluate({"q1": {"d1": 1}}, {"q1": {"d1": 0.5, "d2": 0.5}}, [1])[0]
    {'NDCG@1': 1.0}
    """
    install(ties)
    try:
        yield
    finally:
        uninstall()
