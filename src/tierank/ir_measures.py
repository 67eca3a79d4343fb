"""tierank as an ir-measures provider: tie-aware values through ir-measures' own calls
(``pip install tierank[ir-measures]``).

:class:`TierankProvider` is an ir-measures ``Provider``: give it ir-measures measure objects
(``nDCG@10``, ``AP(rel=2)``, ``P@5``, ``RR``, ``IPrec@0.2``, ``SetF(beta=0.5)``, ``Judged@10``...) and
qrels and runs in any form ir-measures accepts (dicts of dicts, iterables of ``Qrel`` / ``ScoredDoc``
namedtuples, pandas DataFrames); ``iter_calc``, ``calc_aggregate``, ``calc`` and ``evaluator`` answer
as any ir-measures provider does, with ``ir_measures.Metric(query_id, measure, value)`` objects, but
the values are exact when scores tie (``ties="expected"``: the mean over all orderings of the tied
documents), or the exact bounds (``"lower"``, ``"upper"``: the minimum / maximum over them), or one
fixed order inside every tie (``"trec_eval"``, ``"optimistic"`` / ``"pessimistic"``: relevant documents
first / last, ``"input"``, ``"random"``): the tie modes of :func:`tierank.evaluate`, with the same
meaning.

:func:`install` makes it the first provider of ``ir_measures.DefaultPipeline``, so that
``ir_measures.calc_aggregate``, ``ir_measures.iter_calc``, ``ir_measures.evaluator`` (and what calls
them: PyTerrier's ``pt.Experiment``) use tierank for every measure it supports; the others fall back to
the providers after it. :func:`uninstall` undoes it; :func:`installed` does both around a ``with``
block.

Which measures, and what they mean
-----------------------------------
A measure is mapped to tierank by its string form (``str(measure)``, e.g. ``"AP(rel=2)@100"``), with the
meaning of ir-measures' default provider for it, checked against that provider on runs without ties:

* pytrec_eval (trec_eval 9): ``P``, ``RR``, ``Rprec``, ``AP``, ``nDCG`` (``dcg='log2'``, ``gains=`` of grades >= 0),
  ``R``, ``Success``, ``Bpref``, ``infAP``, ``IPrec``, ``SetP``, ``SetR``, ``SetF``, ``SetAP``,
  ``NumRet``, ``NumRel``, ``NumQ``, and ``judged_only=True`` (trec_eval ``-J``) where they take it;
* gdeval: ``nDCG(dcg='exp-log2')@k`` and ``ERR@k`` (ERR with gdeval's maximum grade 4: grades above 4
  raise, as gdeval refuses them);
* ir-measures' judged provider: ``Judged@k`` (a document in the qrels is judged, whatever its grade;
  the top k of a shorter list divides by its length);
* cwl_eval: ``RBP(rel=r, p=...)``, binary RBP (``RBP`` with no ``rel``, graded, is left to the other
  providers).

``supports(measure)`` is False for every other measure (``alpha_nDCG``, ``SetP(relative=True)``,
``SDCG``, measures made with ``ir_measures.define``...), which ir-measures' ``DefaultPipeline`` then
gives to its other providers; asked directly, the provider raises a :class:`tierank.InputError`.

As in ir-measures, queries of the qrels that the run lacks get the measure's default value (0), and
queries of the run that the qrels lack are left out. Run scores are read as float32 by default
(``trec_eval_version=9``, as pytrec_eval does), so a run without ties in float32 gives the numbers of
ir-measures' default providers; ``trec_eval_version=10`` reads them as doubles.
"""

from __future__ import annotations

import contextlib
import math
from typing import Any, Iterable, Iterator

import numpy as np
import pandas as pd

from .errors import install_hint

try:
    import ir_measures as _irm
    from ir_measures import providers as _providers
    from ir_measures.providers.base import NOT_PROVIDED as _NOT_PROVIDED
    from ir_measures.util import Metric, QrelsConverter, RunConverter
except ImportError:   # pragma: no cover - the extra is installed in the tests
    raise ImportError(f"tierank.ir_measures needs ir-measures: {install_hint('ir-measures')}") from None

from .api import evaluate
from .engine.options import check_trec_eval_version
from .errors import InputError
from .measures import parse_measure
from .ties.policy import TIE_MODES

__all__ = ["TierankProvider", "TierankEvaluator", "TIES", "install", "uninstall", "installed",
           "to_tierank"]

#: The ``ties=`` choices: tierank's tie modes (:data:`tierank.TIE_MODES`), with the same meaning
TIES = TIE_MODES

# ir-measures measures whose meaning tierank gives (checked against their default provider)
_NAMES = frozenset({"P", "RR", "Rprec", "AP", "nDCG", "R", "Success", "Bpref", "infAP", "IPrec", "SetP",
                    "SetR", "SetF", "SetAP", "NumRet", "NumRel", "NumQ", "Judged", "ERR", "RBP"})
_GDEVAL_MAX_GRADE = 4   # gdeval.pl's $MAX_JUDGMENT: ERR's stop probability is (2^g - 1) / 2^4


def _check_ties(ties: object) -> str:
    if not isinstance(ties, str) or ties not in TIES:
        raise InputError(f"ties={ties!r} is not a tie mode; use one of {', '.join(TIES)}")
    return ties


def to_tierank(measure: Any) -> tuple[str, bool]:
    """The tierank measure string of an ir-measures measure, and whether the qrels are read as ir-measures'
    judged provider reads them (negative grades count as judged).

    Parameters
    ----------
    measure : ir_measures.Measure
        For example ``ir_measures.nDCG@10`` or ``ir_measures.ERR@20``.

    Returns
    -------
    text : str
        A string :func:`tierank.parse_measure` accepts, with the meaning of ir-measures' default provider.
    judged_grades : bool
        True for ``Judged@k``: a document in the qrels is judged whatever its grade.

    Raises
    ------
    InputError
        The measure is not one tierank computes with ir-measures' meaning.

    Examples
    --------
    >>> import ir_measures
    >>> to_tierank(ir_measures.AP(rel=2)@100)
    ('AP(rel=2)@100', False)
    >>> to_tierank(ir_measures.ERR@20)
    ('ERR(max_grade=4)@20', False)
    """
    if not isinstance(measure, _irm.measures.Measure):
        raise InputError(f"not an ir-measures measure: {measure!r} (use e.g. ir_measures.nDCG@10, or "
                         "ir_measures.parse_measure('nDCG@10'))")
    name = getattr(measure, "NAME", None)
    if hasattr(measure, "runtime_impl") or name not in _NAMES \
            or not type(measure).__module__.startswith("ir_measures.measures"):
        raise InputError(f"tierank does not compute the ir-measures measure {measure}; its measures: "
                         + ", ".join(sorted(_NAMES)))
    try:
        measure.validate_params()
    except (AssertionError, ValueError, TypeError) as err:
        raise InputError(f"ir-measures measure {measure}: {err}") from None
    params = measure.params
    text = str(measure)
    if name == "RBP" and params.get("rel", _NOT_PROVIDED) is _NOT_PROVIDED:
        raise InputError(f"tierank does not compute {measure}: give rel= (binary RBP, as cwl_eval); graded "
                         "RBP has no fixed meaning in ir-measures")
    if name == "ERR":   # gdeval's ERR: grades scaled by the fixed maximum 4, not the query's own
        cutoff = params.get("cutoff", _NOT_PROVIDED)
        text = f"ERR(max_grade={_GDEVAL_MAX_GRADE})" + ("" if cutoff is _NOT_PROVIDED else f"@{cutoff}")
    try:
        parse_measure(text)
    except InputError as err:
        raise InputError(f"tierank does not compute the ir-measures measure {measure}: {err}") from None
    return text, name == "Judged"


class TierankProvider(_providers.Provider):
    """An ir-measures provider whose values are exact when scores tie.

    Parameters
    ----------
    ties : {"expected", "lower", "upper", "trec_eval", "optimistic", "pessimistic", "input", "random"}, \
default="expected"
        ``"expected"``: the exact mean over all orderings of tied documents; ``"lower"`` / ``"upper"``:
        the exact minimum / maximum over them; ``"trec_eval"``: ties broken by document id, descending,
        as trec_eval (pytrec_eval) does; ``"optimistic"`` / ``"pessimistic"``: relevant documents first /
        last inside every tie (a fixed order, not always the maximum / minimum); the others as in
        :func:`tierank.evaluate`.
    seed : int, default=0
        Seed of ``ties="random"``.
    trec_eval_version : {9, 10}, default=9
        9: run scores rounded to float32 first, as pytrec_eval (trec_eval 9) reads them, so scores equal
        in float32 tie; 10: scores read as doubles.

    Examples
    --------
    Two documents tie for the first place; one of them is relevant:

    >>> import ir_measures
    >>> from ir_measures import P, RR
    >>> from tierank.ir_measures import TierankProvider
    >>> qrels = {"q1": {"d1": 1}}
    >>> run = {"q1": {"d1": 0.5, "d2": 0.5, "d3": 0.1}}
    >>> TierankProvider().calc_aggregate([RR, P@1], qrels, run)
    {RR: 0.75, P@1: 0.5}
    >>> ir_measures.pytrec_eval.calc_aggregate([RR, P@1], qrels, run)   # d2 > d1: d2 first
    {RR: 0.5, P@1: 0.0}
    >>> TierankProvider(ties="trec_eval").calc_aggregate([RR, P@1], qrels, run)
    {RR: 0.5, P@1: 0.0}
    >>> TierankProvider(ties="upper").calc_aggregate([RR, P@1], qrels, run)
    {RR: 1.0, P@1: 1.0}
    >>> list(TierankProvider().iter_calc([RR], qrels, run))
    [Metric(query_id='q1', measure=RR, value=0.75)]
    """

    NAME = "tierank"
    SUPPORTED_MEASURES: list = []   # supports() decides (every measure whose string tierank parses)

    def __init__(self, ties: str = "expected", *, seed: int = 0, trec_eval_version: int = 9) -> None:
        super().__init__()
        self.ties = _check_ties(ties)
        if isinstance(seed, bool) or not isinstance(seed, (int, np.integer)):
            raise InputError(f"seed must be an integer, got {seed!r}")
        self.seed = int(seed)
        self.trec_eval_version = check_trec_eval_version(trec_eval_version)

    def __repr__(self) -> str:
        return (f"TierankProvider(ties={self.ties!r}, seed={self.seed}, "
                f"trec_eval_version={self.trec_eval_version})")

    def supports(self, measure: Any) -> bool:
        """Whether tierank computes this ir-measures measure (with the meaning of its default provider).

        >>> import ir_measures
        >>> p = TierankProvider()
        >>> p.supports(ir_measures.nDCG@10), p.supports(ir_measures.alpha_nDCG@10)
        (True, False)
        """
        try:
            to_tierank(measure)
        except InputError:
            return False
        return True

    def install_instructions(self) -> str:
        return install_hint("ir-measures")

    def _evaluator(self, measures: Iterable[Any], qrels: Any) -> "TierankEvaluator":
        return TierankEvaluator(measures, qrels, self)


def _qrels_frame(qrels: Any) -> pd.DataFrame:
    return _frame(qrels, QrelsConverter, "qrels", "relevance")


def _run_frame(run: Any) -> pd.DataFrame:
    return _frame(run, RunConverter, "run", "score")


def _frame(data: Any, converter: Any, what: str, value: str) -> pd.DataFrame:
    """``query_id, doc_id, <value>`` from any form ir-measures reads (its converter tells which)."""
    conv = converter(data)
    kind, err = conv.predict_type()
    columns = ["query_id", "doc_id", value]
    if kind == "UNKNOWN":
        raise InputError(f"the {what} {'are' if what == 'qrels' else 'is'} in no format ir-measures reads: {err}")
    if kind == "pd_dataframe":
        frame = data[columns]
    elif kind == "dict_of_dict":
        rows = [(q, d, v) for q, docs in data.items() for d, v in _items(docs, what, q)]
        frame = pd.DataFrame(rows, columns=columns)
    else:
        frame = pd.DataFrame([(r.query_id, r.doc_id, getattr(r, value)) for r in conv.as_namedtuple_iter()],
                             columns=columns)
    return frame.reset_index(drop=True)


def _items(docs: Any, kind: str, qid: Any) -> Iterable:
    if not isinstance(docs, dict):
        raise InputError(f"the {kind} must map each query id to a dict {{doc_id: value}}; query {qid!r} maps "
                         f"to {type(docs).__name__}", query=qid)
    return docs.items()


def _keep(frame: pd.DataFrame, codes: tuple, ids: set) -> pd.DataFrame:
    """The rows of ``frame`` whose query id (factorized: ``codes``) is in ``ids``; one test per distinct
    query id (pandas' ``isin`` on Arrow strings tests every row in Python)."""
    keep = np.fromiter((q in ids for q in codes[1]), dtype=bool, count=len(codes[1]))
    if keep.all():
        return frame
    return frame[keep[codes[0]]] if len(codes[0]) else frame


def _plain(qid: Any) -> Any:
    return qid.item() if isinstance(qid, np.generic) else qid


class TierankEvaluator(_providers.Evaluator):
    """What :meth:`TierankProvider.evaluator` returns: the qrels read once, for any number of runs.

    Parameters
    ----------
    measures : iterable of ir_measures.Measure
        Measures :meth:`TierankProvider.supports` accepts (others raise an InputError).
    qrels : dict, iterable of ir_measures.Qrel or pandas.DataFrame
        The judgments, in any form ir-measures reads.
    provider : TierankProvider
        Its ``ties``, ``seed`` and ``trec_eval_version``.

    Examples
    --------
    >>> from ir_measures import AP
    >>> ev = TierankProvider().evaluator([AP], {"q1": {"d1": 1, "d2": 0}})
    >>> ev.calc_aggregate({"q1": {"d1": 1.0, "d2": 1.0}})   # d1 first or second: (1 + 1/2) / 2
    {AP: 0.75}
    """

    def __init__(self, measures: Iterable[Any], qrels: Any, provider: TierankProvider) -> None:
        measures = list(dict.fromkeys(measures))
        plan: dict[tuple[str, bool], list] = {}
        for m in measures:
            plan.setdefault(to_tierank(m), []).append(m)
        self.plan = plan
        self.provider = provider
        self.qrels = _qrels_frame(qrels)
        self._qrels_codes = pd.factorize(self.qrels["query_id"], use_na_sentinel=False)
        super().__init__(measures, {_plain(q) for q in self._qrels_codes[1]})

    def _iter_calc(self, run: Any) -> Iterator[Metric]:
        run = _run_frame(run)
        qrels = self.qrels
        run_codes = pd.factorize(run["query_id"], use_na_sentinel=False)
        run = _keep(run, run_codes, set(self._qrels_codes[1]))       # ir-measures: judged queries only;
        qrels = _keep(qrels, self._qrels_codes, set(run_codes[1]))  # ... those not run get the default
        if not len(run):
            return
        p = self.provider
        mode = p.ties
        for judged_grades in (False, True):
            texts = {text: ms for (text, jg), ms in self.plan.items() if jg == judged_grades}
            if not texts:
                continue
            these = qrels.assign(relevance=qrels["relevance"].clip(lower=0)) if judged_grades else qrels
            res = evaluate(these, run, list(texts), ties=mode, seed=p.seed, trec_eval_version=p.trec_eval_version,
                           missing="skip", no_relevant="zero")
            for text, ms in texts.items():
                col = res.per_query[text]
                for qid, value in zip(col.index, col.to_numpy(dtype=np.float64)):
                    if math.isnan(value):
                        continue
                    for m in ms:
                        yield Metric(query_id=_plain(qid), measure=m, value=float(value))


#: The provider :func:`install` put in ``ir_measures.DefaultPipeline`` (None when not installed)
_installed: list[TierankProvider] = []


def install(ties: str = "expected", *, seed: int = 0, trec_eval_version: int = 9) -> TierankProvider:
    """Make tierank the first provider of ``ir_measures.DefaultPipeline`` in this process.

    ``ir_measures.iter_calc``, ``calc_aggregate``, ``calc`` and ``evaluator`` (and PyTerrier's
    ``pt.Experiment``, which calls ``ir_measures.iter_calc``) then give tie-aware values for every
    measure tierank supports; the other measures go to ir-measures' own providers as before. Calling it
    again replaces the installed provider (e.g. to change ``ties``).

    Parameters
    ----------
    ties, seed, trec_eval_version
        As in :class:`TierankProvider`.

    Returns
    -------
    TierankProvider
        The provider now first in ``ir_measures.DefaultPipeline.providers``.

    Examples
    --------
    >>> import ir_measures
    >>> import tierank.ir_measures
    >>> qrels = {"q1": {"d1": 1}}
    >>> run = {"q1": {"d1": 0.5, "d2": 0.5}}
    >>> ir_measures.calc_aggregate([ir_measures.RR], qrels, run)   # pytrec_eval: d2 first
    {RR: 0.5}
    >>> tierank.ir_measures.install()
    TierankProvider(ties='expected', seed=0, trec_eval_version=9)
    >>> ir_measures.calc_aggregate([ir_measures.RR], qrels, run)
    {RR: 0.75}
    >>> tierank.ir_measures.uninstall()
    >>> ir_measures.calc_aggregate([ir_measures.RR], qrels, run)
    {RR: 0.5}
    """
    provider = TierankProvider(ties, seed=seed, trec_eval_version=trec_eval_version)
    uninstall()
    _irm.DefaultPipeline.providers.insert(0, provider)
    _installed.append(provider)
    return provider


def uninstall() -> None:
    """Take tierank's provider out of ``ir_measures.DefaultPipeline`` (nothing if it is not there)."""
    providers = _irm.DefaultPipeline.providers
    providers[:] = [p for p in providers if not isinstance(p, TierankProvider)]
    _installed.clear()


@contextlib.contextmanager
def installed(ties: str = "expected", *, seed: int = 0, trec_eval_version: int = 9) -> Iterator[TierankProvider]:
    """:func:`install` for the ``with`` block, then the providers as they were.

    Examples
    --------
    >>> import ir_measures
    >>> import tierank.ir_measures
    >>> with tierank.ir_measures.installed(ties="lower"):
    ...     ir_measures.calc_aggregate([ir_measures.P@1], {"q1": {"d1": 1}}, {"q1": {"d1": 0.5, "d2": 0.5}})
    {P@1: 0.0}
    """
    before = list(_irm.DefaultPipeline.providers)
    previous = list(_installed)
    try:
        yield install(ties, seed=seed, trec_eval_version=trec_eval_version)
    finally:
        _irm.DefaultPipeline.providers[:] = before
        _installed[:] = previous


_providers.register(TierankProvider())
