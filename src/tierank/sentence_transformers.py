"""sentence-transformers' ``InformationRetrievalEvaluator``, exact when scores tie.

``from tierank.sentence_transformers import InformationRetrievalEvaluator`` in place of
``from sentence_transformers.evaluation import InformationRetrievalEvaluator``: the same constructor
arguments, the same output keys in the same order (``{name}_{score function}_ndcg@10``, ...), the same
``primary_metric``, CSV file and model-card entry, so it drops into ``model.evaluate(evaluator)``,
``SentenceTransformerTrainer(evaluator=...)`` and ``SequentialEvaluator``. It is a subclass of the original
(itself a ``BaseEvaluator``), so code that checks ``isinstance(evaluator, InformationRetrievalEvaluator)``
(the model card does) treats it as one.

What changes is how the values are computed. The original keeps, chunk by chunk, the top
``max(k)`` corpus entries of each query (``torch.topk``) and breaks ties by corpus id; here every corpus
entry is ranked, and a measure's value is its exact mean over every ordering of the tied entries
(``ties="expected"``), or the exact minimum / maximum (``"lower"``, ``"upper"``):

* the model's cosine or dot similarity (and ``sentence_transformers.util.cos_sim`` / ``dot_score`` given in
  ``score_functions``): the scores are computed exactly in the chosen ``precision`` (each one rounding of
  the exact value), so the ties are the real ties of that precision;
* any other score function (a callable, e.g. Euclidean or Manhattan): it is called as the original calls
  it (all queries against one corpus chunk of ``corpus_chunk_size``; quantized embeddings as float32,
  binary ones unpacked to 0 / 1, as ``EmbeddingSimilarityEvaluator`` feeds them), and its scores, taken
  as it returns them, are ranked whole: every corpus entry whose score reaches a query's ``max(k)``-th
  best is kept (the tie at the cut whole) and evaluated by :func:`tierank.evaluate`, so no tie is decided
  by the chunking or by ``torch.topk``. "Exact" is then about the ties of those scores, not their rounding.

Measures (the original's definitions, each computed by a tierank measure): accuracy@k is ``Success@k``,
precision@k ``P@k`` (hits / k), recall@k ``R@k``, mrr@k ``RR@k``, ndcg@k ``nDCG@k`` (binary gains, ideal DCG
of min(k, R) relevant entries), map@k ``AP(denom='min_k_R')@k``; R counts every relevant id, in the corpus
or not, as the original does.

After the original's keys come the tie audit's, one set per score function: ``{score}_tie_dependent_share``
(the share of queries where at least one measure depends on the order of tied entries: its exact minimum
is below its maximum) and the exact bounds of the ndcg the primary metric uses
(``{score}_ndcg@10_lower`` / ``_upper``); with ``reference_precision=``, that ndcg at the reference
precision (``{score}_ndcg@10_reference``). No original key ends so, so they cannot collide.
"""

from __future__ import annotations

import json
import logging
import math
import os
from collections.abc import Callable, Mapping
from typing import Any

import numpy as np

from .errors import install_hint

try:
    import torch
    from sentence_transformers.sentence_transformer.evaluation import (
        InformationRetrievalEvaluator as _OriginalEvaluator,
    )
    from sentence_transformers.util.quantization import quantize_embeddings
    from sentence_transformers.util.similarity import cos_sim, dot_score
    from tqdm import trange
except ImportError:   # pragma: no cover - the extra is installed in the tests
    raise ImportError("tierank.sentence_transformers needs sentence-transformers: "
                      f"{install_hint('sentence-transformers')}") from None

from .api import evaluate
from .arrays import evaluate_embeddings
from .errors import InputError

__all__ = ["InformationRetrievalEvaluator", "PerQuery", "PRECISIONS", "FLOAT_PRECISIONS", "TIES", "MEASURES"]

logger = logging.getLogger(__name__)

#: The ``precision=`` values: the embeddings' precision before scoring
PRECISIONS = ("float32", "float16", "bfloat16", "int8", "uint8", "binary", "ubinary")
#: The ``reference_precision=`` values
FLOAT_PRECISIONS = ("float32", "float16", "bfloat16")
#: The ``ties=`` values: the exact mean over tie orderings, or its exact minimum / maximum
TIES = ("expected", "lower", "upper")
#: ``{the original's metric name: (its constructor argument, the tierank measure at k)}``, in the order of
#: the original's output keys
MEASURES = {
    "accuracy@k": ("accuracy_at_k", "Success@{}"),
    "precision@k": ("precision_recall_at_k", "P@{}"),
    "recall@k": ("precision_recall_at_k", "R@{}"),
    "ndcg@k": ("ndcg_at_k", "nDCG@{}"),
    "mrr@k": ("mrr_at_k", "RR@{}"),
    "map@k": ("map_at_k", "AP(denom='min_k_R')@{}"),
}
# the score functions computed exactly by name (the others are called as callables)
_NAMED = {cos_sim: "cosine", dot_score: "dot"}
_BY_NAME = {name: fn for fn, name in _NAMED.items()}


def _mean(column: Any) -> float:
    """The mean of a per-query column, from its exactly rounded sum."""
    values = column.to_numpy(dtype=np.float64)
    return math.fsum(values) / len(values)


class PerQuery:
    """One score function's per-query values (``per_query``) and their exact bounds over the orderings of
    tied corpus entries (``lower``, ``upper``): DataFrames indexed by query position (in ``queries_ids``),
    one column per tierank measure. ``audit``: :func:`tierank.evaluate_embeddings`' tie audit for cosine
    and dot (``tierank.TieAudit``; before relevant ids outside the corpus are counted), None for callables."""

    def __init__(self, per_query: Any, lower: Any, upper: Any, audit: Any) -> None:
        self.per_query, self.lower, self.upper, self.audit = per_query, lower, upper, audit
        #: the same at ``reference_precision`` (None without one)
        self.reference: PerQuery | None = None

    def tie_dependent_share(self) -> float:
        """The share of queries whose value of at least one measure depends on the order of tied entries
        (exact lower < upper)."""
        depends = (self.lower.to_numpy(dtype=np.float64) < self.upper.to_numpy(dtype=np.float64)).any(axis=1)
        return float(np.count_nonzero(depends)) / len(depends)

    def __repr__(self) -> str:
        return f"PerQuery({len(self.per_query)} queries, measures {list(self.per_query.columns)})"


def _check_cutoffs(name: str, value: Any) -> list[int]:
    if isinstance(value, (str, bytes)) or not hasattr(value, "__iter__"):
        raise InputError(f"{name} must be a list of positive integers such as [1, 3, 5, 10], got {value!r}")
    ks = list(value)
    bad = [k for k in ks if isinstance(k, bool) or not isinstance(k, (int, np.integer)) or k < 1]
    if bad or not ks:
        raise InputError(f"{name} must be a non-empty list of positive integers, got {value!r}")
    return [int(k) for k in ks]


class InformationRetrievalEvaluator(_OriginalEvaluator):
    """sentence-transformers' ``InformationRetrievalEvaluator``, exact when scores tie.

    Parameters
    ----------
    queries, corpus, relevant_docs, corpus_chunk_size, mrr_at_k, ndcg_at_k, accuracy_at_k, \
precision_recall_at_k, map_at_k, show_progress_bar, batch_size, name, write_csv, truncate_dim, \
score_functions, main_score_function, query_prompt, query_prompt_name, corpus_prompt, corpus_prompt_name, \
write_predictions
        As in sentence-transformers (same order, same defaults). ``relevant_docs`` maps a query id to its
        relevant corpus ids (a set; a dict's keys); queries with none are left out, as in the original.
    precision : {"float32", "float16", "bfloat16", "int8", "uint8", "binary", "ubinary"}, default="float32"
        Keyword only. The precision the embeddings are scored in. int8 / uint8 take their ranges from the
        corpus embeddings (queries are quantized with the corpus's ranges, as an index would); binary and
        ubinary are the sign bits. The output keys do not change; the CSV file's name gets
        ``_{precision}`` as sentence-transformers' ``EmbeddingSimilarityEvaluator`` names it.
    ties : {"expected", "lower", "upper"}, default="expected"
        Keyword only. The exact mean over all orderings of tied corpus entries, or its exact minimum or
        maximum.
    reference_precision : {"float32", "float16", "bfloat16"}, optional
        Keyword only. Also evaluate the same embeddings in this precision and add
        ``{score}_ndcg@{k}_reference`` to the keys: beside ``precision``'s value and bounds, what the
        quantization cost.

    Attributes
    ----------
    results : dict of str to PerQuery
        After a call: per score function, the per-query values and their exact bounds (DataFrames indexed
        by position in ``queries_ids``, one column per tierank measure) and, for cosine and dot,
        :func:`tierank.evaluate_embeddings`' tie audit.

    Examples
    --------
    >>> import numpy as np
    >>> from tokenizers import Tokenizer, models, pre_tokenizers
    >>> from sentence_transformers import SentenceTransformer
    >>> from sentence_transformers.sentence_transformer.modules import StaticEmbedding
    >>> from tierank.sentence_transformers import InformationRetrievalEvaluator
    >>> tokenizer = Tokenizer(models.WordLevel({"[UNK]": 0, "a": 1, "b": 2, "c": 3}, unk_token="[UNK]"))
    >>> tokenizer.pre_tokenizer = pre_tokenizers.Whitespace()
    >>> weights = np.array([[0, 0], [1, 0], [0, 1], [0, 1]], dtype=np.float32)   # b and c: one vector
    >>> model = SentenceTransformer(modules=[StaticEmbedding(tokenizer, embedding_weights=weights)],
    ...                             device="cpu")
    >>> evaluator = InformationRetrievalEvaluator(
    ...     {"q1": "b"}, {"d1": "a", "d2": "b", "d3": "c"}, {"q1": {"d2"}},
    ...     accuracy_at_k=[1], precision_recall_at_k=[1], mrr_at_k=[3], ndcg_at_k=[3], map_at_k=[3])
    >>> metrics = evaluator(model)
    >>> metrics["cosine_accuracy@1"], metrics["cosine_mrr@3"]   # d2 and d3 tie: first or second
    (0.5, 0.75)
    >>> metrics["cosine_tie_dependent_share"], metrics["cosine_ndcg@3_lower"], metrics["cosine_ndcg@3_upper"]
    (1.0, 0.6309297535714575, 1.0)
    """

    def __init__(
        self,
        queries: dict[str, Any],
        corpus: dict[str, Any],
        relevant_docs: dict[str, set[str]],
        corpus_chunk_size: int = 50000,
        mrr_at_k: list[int] = [10],   # noqa: B006 - the original's defaults, never mutated
        ndcg_at_k: list[int] = [10],   # noqa: B006
        accuracy_at_k: list[int] = [1, 3, 5, 10],   # noqa: B006
        precision_recall_at_k: list[int] = [1, 3, 5, 10],   # noqa: B006
        map_at_k: list[int] = [100],   # noqa: B006
        show_progress_bar: bool = False,
        batch_size: int = 32,
        name: str = "",
        write_csv: bool = True,
        truncate_dim: int | None = None,
        score_functions: dict[str, Callable[[Any, Any], Any]] | None = None,
        main_score_function: Any = None,
        query_prompt: str | None = None,
        query_prompt_name: str | None = None,
        corpus_prompt: str | None = None,
        corpus_prompt_name: str | None = None,
        write_predictions: bool = False,
        *,
        precision: str = "float32",
        ties: str = "expected",
        reference_precision: str | None = None,
    ) -> None:
        if precision not in PRECISIONS:
            raise InputError(f"precision must be one of {', '.join(PRECISIONS)}, got {precision!r}")
        if reference_precision is not None and reference_precision not in FLOAT_PRECISIONS:
            raise InputError(f"reference_precision must be one of {', '.join(FLOAT_PRECISIONS)} (or None), got "
                             f"{reference_precision!r}")
        if ties not in TIES:
            raise InputError(f"ties must be one of {', '.join(TIES)} (the exact mean, minimum or maximum over "
                             f"the orderings of tied corpus entries), got {ties!r}")
        for what, value in (("queries", queries), ("corpus", corpus), ("relevant_docs", relevant_docs)):
            if not isinstance(value, Mapping):
                raise InputError(f"{what} must be a dict keyed by id, not {type(value).__name__}")
        cutoffs = {arg: _check_cutoffs(arg, value) for arg, value in (
            ("mrr_at_k", mrr_at_k), ("ndcg_at_k", ndcg_at_k), ("accuracy_at_k", accuracy_at_k),
            ("precision_recall_at_k", precision_recall_at_k), ("map_at_k", map_at_k))}
        if isinstance(corpus_chunk_size, bool) or not isinstance(corpus_chunk_size, (int, np.integer)) \
                or corpus_chunk_size < 1:
            raise InputError(f"corpus_chunk_size must be a positive integer, got {corpus_chunk_size!r}")
        if score_functions is not None:
            if not isinstance(score_functions, Mapping) or not score_functions:
                raise InputError("score_functions must be a non-empty dict {name: function(queries, corpus) -> "
                                 f"scores}}, got {score_functions!r}")
            for fn_name, fn in score_functions.items():
                if not callable(fn):
                    raise InputError(f"score function {fn_name!r} is not callable: {fn!r}")
        for qid, docs in relevant_docs.items():
            if isinstance(docs, (str, bytes)) or not hasattr(docs, "__iter__"):
                raise InputError(f"relevant_docs[{qid!r}] must be a set of corpus ids, got {docs!r}", query=qid)
        super().__init__(queries, corpus, relevant_docs, corpus_chunk_size, cutoffs["mrr_at_k"],
                         cutoffs["ndcg_at_k"], cutoffs["accuracy_at_k"], cutoffs["precision_recall_at_k"],
                         cutoffs["map_at_k"], show_progress_bar, batch_size, name, write_csv, truncate_dim,
                         score_functions, main_score_function, query_prompt, query_prompt_name, corpus_prompt,
                         corpus_prompt_name, write_predictions)
        if not self.queries_ids:
            raise InputError("no query of queries has a relevant document in relevant_docs: nothing to evaluate")
        self.precision = precision
        self.ties = ties
        self.reference_precision = reference_precision
        if precision != "float32":
            self.csv_file = self.csv_file.replace("_results.csv", f"_{precision}_results.csv")
        self.results: dict[str, Any] = {}
        self._audit: dict[str, float] = {}
        self._plan = self._measure_plan()

    # ------------------------------------------------------------------------------------- the plan

    def _measure_plan(self) -> dict[str, dict[int, str]]:
        """``{the original's metric name: {k: tierank measure}}``, ks in the original's order."""
        return {metric: {k: template.format(k) for k in getattr(self, arg)}
                for metric, (arg, template) in MEASURES.items()}

    def _measures(self) -> list[str]:
        return list(dict.fromkeys(m for ks in self._plan.values() for m in ks.values()))

    def _max_k(self) -> int:
        return max(k for ks in self._plan.values() for k in ks)

    def _positions(self) -> list[tuple[list[int], int]]:
        """Per query (in ``queries_ids`` order): the positions in ``corpus_ids`` of its relevant ids, and
        how many of its relevant ids are not in the corpus (they count in R, as in the original)."""
        at = {cid: j for j, cid in enumerate(self.corpus_ids)}
        out = []
        for qid in self.queries_ids:
            found = [at[cid] for cid in self.relevant_docs[qid] if cid in at]
            out.append((found, len(self.relevant_docs[qid]) - len(found)))
        return out

    def _judgments(self) -> Any:
        """The judgments as a table of positions for :func:`tierank.evaluate`: query = position in
        ``queries_ids``, doc = position in ``corpus_ids``, relevant ids not in the corpus after it."""
        import pandas as pd

        queries, docs = [], []
        extra = len(self.corpus_ids)
        for i, (found, absent) in enumerate(self._positions()):
            docs += found + list(range(extra, extra + absent))
            queries += [i] * (len(found) + absent)
            extra += absent
        return pd.DataFrame({"query_id": np.asarray(queries, dtype=np.int64),
                             "doc_id": np.asarray(docs, dtype=np.int64),
                             "relevance": np.ones(len(docs), dtype=np.int64)})

    # --------------------------------------------------------------------------------- evaluation

    def __call__(self, model: Any, output_path: str | None = None, epoch: int = -1, steps: int = -1,
                 *args: Any, **kwargs: Any) -> dict[str, float]:
        """Evaluate ``model``: the original's keys, then the tie audit's (see the module docstring)."""
        self._audit = {}
        metrics = super().__call__(model, output_path, epoch, steps, *args, **kwargs)
        metrics.update(self.prefix_name_to_metrics(dict(self._audit), self.name))
        return metrics

    def compute_all_metrics(self, model: Any, corpus_model: Any = None, corpus_embeddings: Any = None,
                            output_path: str | None = None) -> Any:
        """``{score function name: {"accuracy@k": {k: value}, ...}}`` as the original returns it, every
        value computed by tierank over the whole corpus."""
        if corpus_model is None:
            corpus_model = model
        queries = self.embed_inputs(model, self.queries, encode_fn_name="query",
                                    prompt_name=self.query_prompt_name, prompt=self.query_prompt)
        if corpus_embeddings is None:
            chunks = [self.embed_inputs(corpus_model, self.corpus[start:start + self.corpus_chunk_size],
                                        encode_fn_name="document", prompt_name=self.corpus_prompt_name,
                                        prompt=self.corpus_prompt)
                      for start in trange(0, len(self.corpus), self.corpus_chunk_size, desc="Corpus Chunks",
                                          disable=not self.show_progress_bar)]
            corpus = torch.cat([torch.as_tensor(c) for c in chunks]) if chunks else None
        else:
            corpus = corpus_embeddings.to_dense() if getattr(corpus_embeddings, "is_sparse", False) \
                else corpus_embeddings
        if corpus is None or len(corpus) != len(self.corpus_ids):
            raise InputError(f"the corpus has {len(self.corpus_ids)} entries but "
                             f"{0 if corpus is None else len(corpus)} embeddings")
        scores = {}
        self.results = {}
        functions: dict[str, Callable] = self.score_functions or {}   # set by __call__ before this
        for fn_name, fn in functions.items():
            similarity = self._similarity_name(fn, model)
            values = self._evaluate(fn_name, fn, similarity, queries, corpus, self.precision)
            if self.reference_precision is not None:
                values.reference = self._evaluate(fn_name, fn, similarity, queries, corpus, self.reference_precision)
            self.results[fn_name] = values
            if self.write_predictions and output_path is not None:
                self._write_predictions(output_path, fn_name, fn if similarity is None else _BY_NAME[similarity],
                                        *self._quantized(queries, corpus, self.precision))
            scores[fn_name] = {metric: {k: _mean(values.per_query[m]) for k, m in ks.items()}
                               for metric, ks in self._plan.items()}
            self._audit.update(self._audit_metrics(fn_name, values))
        logger.info(f"Queries: {len(self.queries)}")
        logger.info(f"Corpus: {len(self.corpus)}\n")
        for fn_name in self.score_function_names:
            logger.info(f"Score-Function: {fn_name}")
            self.output_scores(scores[fn_name])
        return scores

    # the original's alias
    compute_metrices = compute_all_metrics

    def _evaluate(self, fn_name: str, fn: Callable, similarity: str | None, queries: Any, corpus: Any,
                  precision: str) -> PerQuery:
        if similarity is not None:
            return self._evaluate_named(similarity, queries, corpus, precision)
        return self._evaluate_callable(fn_name, fn, *self._quantized(queries, corpus, precision))

    @staticmethod
    def _quantized(queries: Any, corpus: Any, precision: Any) -> tuple[Any, Any]:
        """The embeddings in ``precision`` as float32 tensors (binary: unpacked bits), as
        ``EmbeddingSimilarityEvaluator`` feeds quantized embeddings to score functions."""
        if precision == "float32":
            return queries, corpus
        q = queries.detach().float().cpu().numpy()
        c = corpus.detach().float().cpu().numpy()
        if precision in ("float16", "bfloat16"):
            dtype = torch.float16 if precision == "float16" else torch.bfloat16
            return (torch.from_numpy(q).to(dtype).float(), torch.from_numpy(c).to(dtype).float())
        qq: Any = quantize_embeddings(q, precision, calibration_embeddings=c)
        cq: Any = quantize_embeddings(c, precision, calibration_embeddings=c)
        if precision in ("binary", "ubinary"):
            offset = 128 if precision == "binary" else 0
            qq = np.unpackbits((qq.astype(np.int16) + offset).astype(np.uint8), axis=1)
            cq = np.unpackbits((cq.astype(np.int16) + offset).astype(np.uint8), axis=1)
        return torch.from_numpy(qq.astype(np.float32)), torch.from_numpy(cq.astype(np.float32))

    def _similarity_name(self, fn: Callable, model: Any) -> str | None:
        """"cosine" or "dot" when ``fn`` is one that tierank computes exactly by name, else None."""
        for named, name in _NAMED.items():
            if fn is named:
                return name
        if fn == model.similarity and model.similarity_fn_name in ("cosine", "dot"):
            return str(model.similarity_fn_name)
        return None

    def _evaluate_named(self, similarity: str, queries: Any, corpus: Any, precision: str) -> PerQuery:
        """Cosine or dot by :func:`tierank.evaluate_embeddings`: scores exact in ``precision``, every
        corpus entry ranked; relevant ids outside the corpus then counted in R (:meth:`_with_absent`)."""
        q = np.asarray(torch.as_tensor(queries).detach().to("cpu", torch.float32))
        c = np.asarray(torch.as_tensor(corpus).detach().to("cpu", torch.float32))
        positions = self._positions()
        relevance = {i: dict.fromkeys(found, 1) for i, (found, _) in enumerate(positions) if found}
        res = evaluate_embeddings(q, c, relevance, self._measures(), similarity=similarity,
                                  precision=precision, ties=self.ties, bounds=True,
                                  calibration_embeddings=c if precision in ("int8", "uint8") else None,
                                  progress=bool(self.show_progress_bar))
        bounds: Any = (res.lower, res.upper)   # computed: bounds=True
        values, lower, upper = (self._with_absent(frame.reset_index(drop=True), positions)
                                for frame in (res.per_query, *bounds))
        return PerQuery(values, lower, upper, audit=res.audit)

    def _with_absent(self, frame: Any, positions: list[tuple[list[int], int]]) -> Any:
        """Per-query values with R counting the relevant ids outside the corpus too.

        Only three measures read R, each as a factor that no ordering changes, so the exact value (mean,
        minimum or maximum over the tie orderings) with R' = R + absent is the value with R times the ratio
        of the factors: recall (hits / R), nDCG@k (DCG over the ideal DCG of min(k, R) relevant entries,
        binary gains) and AP(denom='min_k_R')@k (the sum over min(k, R)). With R = 0 every value is 0.
        """
        r_in = np.array([len(found) for found, _ in positions], dtype=np.float64)
        r_all = r_in + np.array([absent for _, absent in positions], dtype=np.float64)
        if (r_in == r_all).all():
            return frame
        ideal = np.concatenate([[0.0], np.cumsum(1.0 / np.log2(np.arange(2, int(r_all.max()) + 2)))])
        out = frame.copy()
        for metric, ks in self._plan.items():
            for k, m in ks.items():
                if metric == "recall@k":
                    factor = r_in / r_all
                elif metric == "ndcg@k":
                    factor = ideal[np.minimum(k, r_in).astype(int)] / ideal[np.minimum(k, r_all).astype(int)]
                elif metric == "map@k":
                    factor = np.minimum(k, r_in) / np.minimum(k, r_all)
                else:
                    continue
                out[m] = frame[m].to_numpy(dtype=np.float64) * factor
        return out

    def _window(self, fn_name: str, fn: Callable, queries: Any, corpus: Any) -> tuple[list, list]:
        """Per query, the scores and corpus positions of every entry scoring at least its max(k)-th best
        score by ``fn`` (the tie at the cut whole), ``fn`` called as the original calls it: all queries
        against one chunk of ``corpus_chunk_size`` entries at a time."""
        max_k = self._max_k()
        n_q = len(queries)
        kept_scores: list[np.ndarray] = [np.empty(0)] * n_q
        kept_docs: list[np.ndarray] = [np.empty(0, dtype=np.int64)] * n_q
        for start in trange(0, len(corpus), self.corpus_chunk_size, desc="Corpus Chunks",
                            disable=not self.show_progress_bar):
            size = min(self.corpus_chunk_size, len(corpus) - start)
            block = fn(queries, corpus[start:start + size])
            block = np.asarray(torch.as_tensor(block).detach().to("cpu", torch.float64))   # exact
            if block.shape != (n_q, size):
                raise InputError(f"score function {fn_name!r} returned shape {block.shape} for {n_q} queries and "
                                 f"{size} corpus entries")
            if np.isnan(block).any():
                i, j = np.argwhere(np.isnan(block))[0]
                raise InputError(f"score function {fn_name!r} gave NaN for query {self.queries_ids[i]!r} and "
                                 f"corpus id {self.corpus_ids[start + j]!r}", query=self.queries_ids[i])
            if size > max_k:   # the chunk's own cut first: its max(k)-th best score per query
                cut = np.partition(block, size - max_k, axis=1)[:, size - max_k]
                keep = block >= cut[:, None]
            else:
                keep = np.ones(block.shape, dtype=bool)
            for i in range(n_q):
                cols = np.flatnonzero(keep[i])
                s = np.concatenate([kept_scores[i], block[i, cols]])
                d = np.concatenate([kept_docs[i], cols + start])
                if len(s) > max_k:
                    kth = np.partition(s, len(s) - max_k)[len(s) - max_k]
                    inside = s >= kth
                    s, d = s[inside], d[inside]
                kept_scores[i], kept_docs[i] = s, d
        return kept_scores, kept_docs

    def _evaluate_callable(self, fn_name: str, fn: Callable, queries: Any, corpus: Any) -> PerQuery:
        """Rank the whole corpus by ``fn``'s scores and evaluate exactly: entries left out of a query's
        :meth:`_window` rank below every measure's cutoff, whatever the order of ties."""
        import pandas as pd

        kept_scores, kept_docs = self._window(fn_name, fn, queries, corpus)
        n_q = len(queries)
        sizes = [len(s) for s in kept_scores]
        run = pd.DataFrame({"query_id": np.repeat(np.arange(n_q, dtype=np.int64), sizes),
                            "doc_id": np.concatenate(kept_docs) if n_q else np.empty(0, np.int64),
                            "score": np.concatenate(kept_scores) if n_q else np.empty(0)})
        res = evaluate(self._judgments(), run, self._measures(), ties=self.ties, bounds=True, missing="zero")
        order = np.arange(n_q)   # per_query is indexed by query position; make sure of the order
        bounds: Any = (res.lower, res.upper)   # computed: bounds=True
        values, lower, upper = (frame.loc[order].reset_index(drop=True) for frame in (res.per_query, *bounds))
        return PerQuery(values, lower, upper, audit=None)

    def _write_predictions(self, output_path: str, fn_name: str, fn: Callable, queries: Any, corpus: Any) -> None:
        """The original's predictions file of one score function: per query its top max(k) entries by
        ``fn``'s scores, ties broken by corpus id (the original's order), as JSON lines."""
        kept_scores, kept_docs = self._window(fn_name, fn, queries, corpus)
        os.makedirs(output_path, exist_ok=True)
        path = os.path.join(output_path, self.predictions_file.replace(".jsonl", f"_{fn_name}.jsonl"))
        with open(path, mode="w", encoding="utf-8") as out:
            for i, (scores, docs) in enumerate(zip(kept_scores, kept_docs)):
                hits = sorted(((float(score), self.corpus_ids[j]) for score, j in zip(scores, docs)),
                              key=lambda hit: (-hit[0], hit[1]))[:self._max_k()]
                out.write(json.dumps({"query_id": self.queries_ids[i], "query": self.queries[i],
                                      "results": [{"corpus_id": cid, "score": score} for score, cid in hits]})
                          + "\n")

    # ---------------------------------------------------------------------------------- the audit

    def _audit_metrics(self, fn_name: str, values: PerQuery) -> dict[str, float]:
        """The tie audit's keys of one score function (module docstring)."""
        k = max(self.ndcg_at_k)
        ndcg = self._plan["ndcg@k"][k]
        keys = {f"{fn_name}_tie_dependent_share": values.tie_dependent_share(),
                f"{fn_name}_ndcg@{k}_lower": _mean(values.lower[ndcg]),
                f"{fn_name}_ndcg@{k}_upper": _mean(values.upper[ndcg])}
        if values.reference is not None:
            keys[f"{fn_name}_ndcg@{k}_reference"] = _mean(values.reference.per_query[ndcg])
        return keys

    def get_config_dict(self) -> dict[str, Any]:
        """The original's configuration for the model card, with ``precision`` and ``ties`` when not the
        defaults."""
        config = super().get_config_dict()
        if self.precision != "float32":
            config["precision"] = self.precision
        if self.ties != "expected":
            config["ties"] = self.ties
        if self.reference_precision is not None:
            config["reference_precision"] = self.reference_precision
        return config
