"""The entry points for arrays: a score matrix (:func:`evaluate_matrix`), binary codes
(:func:`evaluate_codes`) and embeddings (:func:`evaluate_embeddings`), each evaluated in blocks of queries by
:mod:`tierank.engine.blocked`. Wiring only: check the arguments, build the Options, call the engine.

Runs (dicts, DataFrames, files) go through :func:`tierank.api.evaluate`; the two modules are one layer
(docs/architecture.md), apart so that the command line does not load this one.
"""

from __future__ import annotations

from typing import Any, Callable, Iterable

import numpy as np

from .embedding_results import EmbeddingResults
from .embeddings import PRECISIONS, SIMILARITIES, Scorer, make_relevance
from .embeddings.quantize import FLOAT_PRECISIONS, INT_PRECISIONS, Encoded, as_float_matrix, encode, quantization_ranges
from .engine.blocked import DEFAULT_MEMORY, evaluate_codes_blocked, evaluate_embeddings_blocked, evaluate_matrix_blocked
from .engine.options import Options, check_positive
from .errors import InputError
from .hashing.codes import check_pair
from .hashing.labels import make_grader
from .results import CodeResults, Results

__all__ = ["evaluate_matrix", "evaluate_codes", "evaluate_embeddings"]


def _check_measures_arg(measures: Any) -> None:
    """A clear error when an array of numbers comes where the measure strings belong (the old
    ``evaluate_matrix(relevance, scores, distances, measures)`` order)."""
    if isinstance(measures, str):
        return
    numeric = False
    if isinstance(measures, np.ndarray):
        numeric = measures.dtype.kind in "biufc"
    elif isinstance(measures, (list, tuple)):
        numeric = any(isinstance(x, (int, float, complex, np.number, np.ndarray, list, tuple))
                      and not isinstance(x, str) for x in measures)
    elif hasattr(measures, "__array__") or isinstance(measures, (int, float, np.number)):
        numeric = True
    if numeric:
        raise InputError("measures looks like an array of numbers, not measure strings: the third positional "
                         "parameter of evaluate_matrix is measures. Give the keys by name: "
                         "evaluate_matrix(relevance, distances=D, measures=[...]) or "
                         "evaluate_matrix(relevance, scores=S, measures=[...])")


def evaluate_matrix(relevance: Any, scores: Any = None, measures: str | Iterable[str] = ("nDCG@10",), *,
                    distances: Any = None, ties: str = "expected", bounds: bool = False, mask: Any = None,
                    seed: int = 0, block_size: int | None = None, no_relevant: str = "zero",
                    trec_eval_version: int = 10, tie_cost_budget: float | None = None) -> Results:
    """Evaluate dense score (or distance) matrices, one row per query, exactly when values tie.

    Parameters
    ----------
    relevance : array-like of shape (n_queries, n_items) or (n_items,)
        Grades (>= 0, may be fractional); the row is the query's whole judged set (R and the ideal DCG
        come from it).
    scores : array-like, same shape, optional
        Higher is better. Give exactly one of ``scores`` and ``distances``. Infinite values are valid
        and tie with each other.
    measures : str or list of str, default="nDCG@10"
        Measure strings, e.g. ``["nDCG@10", "AP@100", "P(rel=2)@5"]``. An array of numbers here is an
        InputError (the keys go by name: ``evaluate_matrix(relevance, distances=D, measures=[...])``).
    distances : array-like, same shape, optional (keyword only)
        Lower is better (e.g. Hamming distances).
    ties : {"expected", "lower", "upper", "optimistic", "pessimistic", "input", "trec_eval", "random"}, \
default="expected"
        As :func:`evaluate`; ``"input"`` breaks ties by column index ascending, ``"trec_eval"`` by column
        index descending.
    bounds : bool, default=False
        Also return the exact minimum and maximum over all orderings of tied items.
    mask : array-like of bool, same shape, optional
        False marks padding (ragged lists); padded entries are ignored entirely.
    seed : int, default=0
        Seed of ``ties="random"`` (each tie is ordered by a hash of the seed and the entries' positions,
        so the order does not depend on the blocks).
    block_size : int, optional
        Rows evaluated at a time; default: as many as fit a 512 MiB working-memory budget. Values do
        not depend on it. Scores / distances keep their dtype (float32, float64, integers) until a block
        is converted. When every measure has ``@k`` (or is a radius measure), each row is first cut to
        the items at or above its k-th best key (``np.partition``; the boundary tie is kept whole) and
        only those are sorted; ``R`` and the ideal DCG still count the whole row.
    no_relevant : {"zero", "skip", "one", "error"}, default="zero"
        Rows with no relevant item (for the measure's ``rel``): the measure's own value, NaN left out of
        ``.mean``, 1 for measures in [0, 1], or an InputError naming the row.
    trec_eval_version : {10, 9}, default=10
        9: scores / distances rounded to float32 first (block by block), as trec_eval 9.x stores run
        scores, so values equal in float32 tie, whatever ``ties``. Integers within ``2**24`` are
        unchanged.
    tie_cost_budget : int, optional
        Operations one row may take for a measure whose exact tie-aware work is more than linear in a
        tie's size (IPrec, IPrecAvg and ERR; infAP and G, also for their bounds); beyond, an InputError up
        front naming the measure, the row and its costliest tie. Default
        ``tierank.engine.options.DEFAULT_TIE_COST_BUDGET`` (2e9, about 10 s; docs/conventions.md, "Ties
        too costly to average exactly").

    Returns
    -------
    Results
        ``.per_query`` indexed by row number.

    Examples
    --------
    Hamming distances of 4 database items to one query; items 1 and 2 tie at distance 1:

    >>> import tierank
    >>> res = tierank.evaluate_matrix([[1, 0, 1, 0]], distances=[[0, 1, 1, 3]],
    ...                               measures=["AP", "P@2"], bounds=True)
    >>> round(res.mean["AP"], 4), round(res.mean["P@2"], 4)
    (0.9167, 0.75)
    >>> float(res.lower.loc[0, "AP"]), float(res.upper.loc[0, "AP"])
    (0.8333333333333333, 1.0)

    ``"upper"`` is the exact maximum; ``"optimistic"``, the relevant items first, is not always one:

    >>> [tierank.evaluate_matrix([[1, 0, 1, 0]], [[3, 2, 1, 1]], ["AP(denom='retrieved')@3"], ties=t).mean
    ...  ["AP(denom='retrieved')@3"] for t in ("optimistic", "pessimistic", "upper", "lower")]
    [0.8333333333333333, 1.0, 1.0, 0.8333333333333333]
    """
    _check_measures_arg(measures)
    opts = Options.checked(measures, ties=ties, bounds=bounds, seed=seed, no_relevant=no_relevant,
                           trec_eval_version=trec_eval_version, tie_cost_budget=tie_cost_budget,
                           trec9_measures=False)
    if (scores is None) == (distances is None):
        raise InputError("give exactly one of scores= (higher is better) and distances= (lower is better)"
                         + ("; both were given" if scores is not None else "; neither was given"))
    return evaluate_matrix_blocked(relevance, scores if scores is not None else distances, opts,
                                   keyname="scores" if scores is not None else "distances",
                                   lower_is_better=distances is not None, mask=mask, block_size=block_size)


def evaluate_codes(query_codes: Any, db_codes: Any, query_labels: Any = None, db_labels: Any = None,
                   measures: str | Iterable[str] = ("AP", "nDCG@100", "P@1000"), *,
                   relevance: np.ndarray | Callable[[np.ndarray, np.ndarray], Any] | None = None,
                   packed: bool = False, bits: int | None = None, ties: str = "expected",
                   bounds: bool = False, average: str = "micro", distance_threshold: float | None = None,
                   block_size: int | None = None, memory: int = DEFAULT_MEMORY, seed: int = 0,
                   no_relevant: str = "zero", trec_eval_version: int = 10,
                   progress: bool | None = None, tie_cost_budget: float | None = None) -> CodeResults:
    """Evaluate Hamming ranking of binary codes: every query against the whole database, ties exact.

    Items at equal Hamming distance tie; ``ties="expected"`` gives the exact mean over all their orderings
    (McSherry & Najork), computed from per-distance counts without sorting anything.

    Parameters
    ----------
    query_codes : array-like (n_queries, bits) or (bits,)
        ``{0, 1}``, ``{-1, +1}`` or boolean codes; with ``packed=True``, uint8 or uint64 words
        (:func:`tierank.hashing.pack_codes`).
    db_codes : array-like (n_db, bits)
        Database codes, same format and width.
    query_labels, db_labels : array-like, optional
        Class ids (1-D; relevant = same class, grade 1) or multi-hot matrices (2-D ``{0, 1}``, one column
        per label; grade = number of shared labels, so ``rel=1`` means "at least one shared label" and
        nDCG / ACG / WAP use the count).
    measures : str or list of str
        E.g. ``["AP", "nDCG@100", "P@1000", "P(radius=2)", "R(radius=2)", "WAP@100", "ACG@100"]``.
    relevance : array (n_queries, n_db) or callable, optional
        Grades for anything else, instead of labels: a matrix, or a vectorised callable
        ``relevance(query_index, db_index)``, called once per block of B queries with integer index
        arrays ``query_index`` of shape (B, 1) and ``db_index`` of shape (1, n_db); it must return a
        numeric array of their broadcast shape (B, n_db), e.g. ``lambda q, d: yq[q] == ydb[d]``. It is
        not called per pair: a wrong shape or dtype, or an exception, is an InputError stating this.
        ``query_labels`` may still be given (class ids) for ``average="macro"``.
    packed : bool, default=False
        Codes are packed words along the last axis.
    bits : int, optional
        Code length of packed codes whose last word is partial (padding bits must be 0).
    ties : {"expected", "lower", "upper", "optimistic", "pessimistic", "input", "trec_eval", "random"}, \
default="expected"
        As :func:`tierank.evaluate`. ``input`` breaks ties by database index ascending, ``trec_eval``
        descending, ``random`` by a seeded hash; these three sort the distances of each block of queries,
        the others sort nothing.
    bounds : bool, default=False
        Also return the exact minimum and maximum over all orderings of tied items.
    average : {"micro", "macro"}, default="micro"
        ``mean``: over queries, or over query classes of the per-class means (TensorFlow Similarity;
        needs class-id ``query_labels``). ``per_query`` holds per-query values either way.
    distance_threshold : float, optional
        Matches farther than this count as misses (TensorFlow Similarity's ``distance_threshold``): items
        at distance > threshold keep their place in the ranking but count as non-relevant (grade 0),
        while ``R`` and the ideal DCG still count every relevant item of the database. So recall and AP
        (denominator R) fall, and P@k counts only matches within the threshold.
    block_size : int, optional
        Queries per block; default from ``memory``.
    progress : bool, optional
        A progress bar on stderr over the blocks of queries; default: when stderr is a terminal.
    memory : int, default=512 MiB
        Working memory budget of a block (bytes), used when ``block_size`` is None.
    seed : int, default=0
        Seed of ``ties="random"``.
    no_relevant : {"zero", "skip", "one", "error"}, default="zero"
        Queries with no relevant database item (for the measure's ``rel``; ``distance_threshold`` does
        not change which items are relevant): the measure's own value, NaN left out of ``.mean``, 1 for
        measures in [0, 1], or an InputError naming the query.
    trec_eval_version : {10, 9}, default=10
        Accepted for symmetry with :func:`tierank.evaluate`: Hamming distances are small integers,
        exact in float32, so 9 and 10 give the same values.
    tie_cost_budget : int, optional
        Operations one query may take for a measure whose exact tie-aware work is more than linear in a
        tie (IPrec, IPrecAvg, ERR, infAP, G); beyond, an InputError up front. Default
        ``tierank.engine.options.DEFAULT_TIE_COST_BUDGET`` (about 10 s).

    Returns
    -------
    CodeResults
        ``per_query`` indexed by query number (0..n_queries-1), ``mean`` (micro or macro) and with
        ``bounds=True`` ``lower`` / ``upper``.

    Examples
    --------
    Two database items tie with the query at distance 1; one of them is of the query's class:

    >>> from tierank.hashing import evaluate_codes
    >>> q = [[0, 0, 0, 0]]
    >>> db = [[0, 0, 0, 1], [0, 0, 1, 0], [1, 1, 1, 1]]
    >>> res = evaluate_codes(q, db, [7], [7, 3, 7], ["P@1", "AP"], bounds=True)
    >>> res.mean
    {'P@1': 0.5, 'AP': 0.7083333333333333}
    >>> res.lower.loc[0, "P@1"], res.upper.loc[0, "P@1"]
    (np.float64(0.0), np.float64(1.0))
    >>> evaluate_codes(q, db, [7], [7, 3, 7], ["P@1"], ties="trec_eval").mean   # item 1 before item 0
    {'P@1': 0.0}
    """
    opts = Options.checked(measures, ties=ties, bounds=bounds, seed=seed, no_relevant=no_relevant,
                           trec_eval_version=trec_eval_version, tie_cost_budget=tie_cost_budget, trec9_measures=False)
    # distances <= bits < 2**24: float32 holds them exactly, trec_eval_version=9 has nothing to round
    if average not in ("micro", "macro"):
        raise InputError(f"average must be 'micro' or 'macro', got {average!r}")
    if distance_threshold is not None:
        if isinstance(distance_threshold, bool) or not isinstance(distance_threshold, (int, float, np.number)) \
                or not np.isfinite(distance_threshold):
            raise InputError(f"distance_threshold must be a finite number, got {distance_threshold!r}")
    if block_size is not None:
        block_size = check_positive(block_size, "block_size")
    memory = check_positive(memory, "memory")
    qw, dw, nbits = check_pair(query_codes, db_codes, packed=packed, bits=bits)
    grader = make_grader(query_labels, db_labels, relevance, qw.shape[0], dw.shape[0])
    if average == "macro" and grader.query_class is None:
        raise InputError("average='macro' needs class ids as query_labels (1-D), to group the queries")
    return evaluate_codes_blocked(qw, dw, nbits, grader, opts, average=average, distance_threshold=distance_threshold,
                                  block_size=block_size, memory=memory, progress=progress)


def _encode(x: np.ndarray, precision: str, name: str, calibration: Any) -> Encoded:
    """Embeddings in ``precision``: int8 / uint8 ranges from ``calibration`` or else ``x`` itself."""
    ranges = None
    if precision in INT_PRECISIONS and x.dtype.kind == "f":
        ranges = quantization_ranges(x, calibration, name)
    return encode(x, precision, name, ranges)


def _check_choice(value: Any, name: str, choices: tuple, none_ok: bool = False) -> None:
    if (value is None and none_ok) or (isinstance(value, str) and value in choices):
        return
    raise InputError(f"{name}={value!r}: use one of {', '.join(repr(c) for c in choices)}"
                     + (" or None" if none_ok else ""))


def evaluate_embeddings(queries: Any, corpus: Any, relevance: Any = None,
                        measures: str | Iterable[str] = ("nDCG@10", "AP"), *, similarity: str = "cosine",
                        precision: str = "float32", query_precision: str | None = None,
                        ties: str = "expected", bounds: bool = False, k: int | None = None,
                        rescore: str | None = None, candidates: int | None = None,
                        query_ids: Any = None, corpus_ids: Any = None, query_labels: Any = None,
                        corpus_labels: Any = None, calibration_embeddings: Any = None,
                        reference_precision: str | None = None, block_size: int | None = None,
                        memory: int = DEFAULT_MEMORY, progress: bool | None = None, seed: int = 0,
                        no_relevant: str = "zero", tie_cost_budget: float | None = None) -> EmbeddingResults:
    """Evaluate embedding retrieval exactly, in any precision: every query against the whole corpus.

    Scores are computed exactly in the chosen precision (integer dot products, popcounts, one rounding
    of the exact sum for floats: :mod:`tierank.embeddings.scores`), so items tie exactly when their
    scores are equal in that precision, whatever the block size or the hardware; the tie-aware value
    (``ties="expected"``) is the exact mean over the orderings of tied items.

    Parameters
    ----------
    queries, corpus : array-like (n, dim)
        Embeddings (numpy, torch or anything with ``__array__``): floats, quantized here to
        ``precision`` as sentence-transformers' ``quantize_embeddings`` does, or already quantized
        (int8 / uint8 values; for ``binary`` / ``ubinary`` the packed bytes ``quantize_embeddings``
        returns: ``np.packbits`` order, ``binary`` as int8 with an offset of -128).
    relevance : mapping, sparse matrix or array, optional
        ``{query: {corpus item: grade}}`` (or ``{query: set of items}``, grade 1) with row numbers, or
        with ids named by ``query_ids`` / ``corpus_ids``; a scipy sparse or dense matrix (n_queries,
        n_corpus). Or None with ``query_labels`` / ``corpus_labels`` (class ids: relevant = same class;
        multi-hot: the number of shared labels), as :func:`evaluate_codes` takes them.
    measures : str or list of str, default=("nDCG@10", "AP")
    similarity : {"cosine", "dot", "hamming"}, default="cosine"
        Cosine: each float vector is divided by its float64 norm and rounded to the precision (integer
        vectors: the exact integer cosine). ``hamming``: binary precisions only. On ``binary`` /
        ``ubinary`` embeddings dot and cosine are those of the +-1 vectors the bits stand for, which
        order items as minus the Hamming distance.
    precision : {"float32", "float16", "bfloat16", "int8", "uint8", "binary", "ubinary"}, default="float32"
        The precision of the corpus, and of the queries unless ``query_precision`` is given.
    query_precision : str, optional
        The queries' precision when it differs from the corpus's (sentence-transformers'
        ``semantic_search_faiss`` names the corpus's ``corpus_precision`` and keeps float queries for
        rescoring): a float query against an int8 corpus scores the dot product of the float values with
        the integers (cosine: the integers divided by their norm), rounded once to the query's precision;
        against a binary corpus, with the bits as 0 / 1.
    ties : {"expected", "lower", "upper", "optimistic", "pessimistic", "input", "trec_eval", "random"}, \
default="expected"
        As :func:`evaluate`; ``"input"`` orders a tie by corpus index, ``"trec_eval"`` by corpus index
        descending.
    bounds : bool, default=False
        Show the exact minimum and maximum over tie orderings (``.lower`` / ``.upper``); the tie audit
        computes them either way.
    k : int, optional
        Retrieve each query's top ``k`` only, the tie at rank ``k`` kept whole (nothing cut at random):
        the items below are judged but not retrieved, as in an evaluator that searches the top k.
        Default: the whole corpus is ranked. When every measure has a cutoff, only the window up to the
        largest is sorted either way.
    rescore : str, optional
        Two-stage search: the top ``candidates`` items of each query by the first stage (``precision``;
        the tie at the cut kept whole) are rescored with float queries (``query_precision`` if it is a
        float precision, else float32) against the corpus in ``rescore`` precision ("float32": both in
        float32; "int8": float queries against the int8 corpus), by ``similarity`` (the dot product
        after a Hamming first stage), and that second ranking, with its ties, is evaluated; the other
        items are not retrieved. sentence-transformers'
        ``rescore_multiplier * top_k`` is ``candidates``.
    candidates : int, optional
        The first stage's number of candidates (with ``rescore``).
    query_ids, corpus_ids : sequence, optional
        The ids of the rows, when ``relevance`` names ids; ``per_query`` is then indexed by query id.
    query_labels, corpus_labels : array-like, optional
        Class ids or multi-hot matrices instead of ``relevance``.
    calibration_embeddings : array-like, optional
        Float embeddings whose per-dimension min and max give the int8 / uint8 ranges (as in
        ``quantize_embeddings``); default: the queries' own ranges for the queries and the corpus's own
        for the corpus, as ``quantize_embeddings`` called on each does.
    reference_precision : str, optional
        Also evaluate the same embeddings in this (float) precision, for the tie audit's ``delta``: what
        the quantization cost, beside what its ties leave open.
    block_size : int, optional
        Queries per block; default: as many as fit ``memory``. Values do not depend on it.
    memory : int, default=512 MiB
    progress : bool, optional
        A progress bar over the blocks of queries; default: when stderr is a terminal.
    seed, no_relevant, tie_cost_budget
        As :func:`evaluate_matrix`.

    Returns
    -------
    EmbeddingResults
        :class:`Results` (``per_query`` indexed by query number, or by id with ``query_ids``) with
        ``.audit``, a :class:`tierank.embedding_results.TieAudit`: ``per_query``, ``summary``,
        ``tie_mass``, ``tie_dependent`` (share of queries whose value depends on tie order),
        ``reference``.

    Examples
    --------
    By dot product in float32 the relevant items come first; binary embeddings (the signs of the values) make every
    item of this corpus tie, so which one comes first is decided by the tie order:

    >>> import numpy as np, tierank
    >>> q = np.array([[0.9, 0.1], [0.1, 0.9]])
    >>> corpus = np.array([[0.90, 0.10], [0.901, 0.1001], [0.1, 0.9], [0.5, 0.5]])
    >>> relevance = {0: {1: 1}, 1: {2: 1}}
    >>> tierank.evaluate_embeddings(q, corpus, relevance, ["RR"], similarity="dot").mean
    {'RR': 1.0}
    >>> res = tierank.evaluate_embeddings(q, corpus, relevance, ["RR"], similarity="dot", precision="binary",
    ...                                   bounds=True, reference_precision="float32")
    >>> res.mean, res.mean_lower, res.mean_upper
    ({'RR': 0.5208333333333333}, {'RR': 0.25}, {'RR': 1.0})
    >>> res.audit.tie_dependent, res.audit.summary.loc["RR", "delta"]
    (1.0, np.float64(-0.47916666666666674))
    """
    _check_choice(similarity, "similarity", SIMILARITIES)
    _check_choice(precision, "precision", PRECISIONS)
    _check_choice(query_precision, "query_precision", PRECISIONS, none_ok=True)
    _check_choice(rescore, "rescore", PRECISIONS, none_ok=True)
    _check_choice(reference_precision, "reference_precision", FLOAT_PRECISIONS, none_ok=True)
    _check_measures_arg(measures)
    opts = Options.checked(measures, ties=ties, bounds=True, seed=seed, no_relevant=no_relevant,
                           tie_cost_budget=tie_cost_budget, trec9_measures=False)
    radius = [text for text, m in opts.measures.items() if "radius" in m.params]
    if radius:
        raise InputError(f"evaluate_embeddings has no radius measures ({', '.join(radius)}): use evaluate_codes")
    if k is not None:
        k = check_positive(k, "k")
    if block_size is not None:
        block_size = check_positive(block_size, "block_size")
    memory = check_positive(memory, "memory")
    if (rescore is None) != (candidates is None):
        raise InputError("two-stage search needs both rescore= (the second stage's precision) and candidates=")
    if candidates is not None:
        candidates = check_positive(candidates, "candidates")
    q = as_float_matrix(queries, "queries")
    c = as_float_matrix(corpus, "corpus")
    qp = query_precision or precision
    scorer = Scorer(_encode(q, qp, "queries", calibration_embeddings),
                    _encode(c, precision, "corpus", calibration_embeddings), similarity)
    rescorer = None
    if rescore is not None:
        rq = qp if qp in FLOAT_PRECISIONS else "float32"
        rescorer = Scorer(_encode(q, rq, "queries", calibration_embeddings),
                          _encode(c, rescore, "corpus", calibration_embeddings),
                          "dot" if similarity == "hamming" else similarity)
    rel = make_relevance(relevance, q.shape[0], c.shape[0], query_ids=query_ids, corpus_ids=corpus_ids,
                         query_labels=query_labels, corpus_labels=corpus_labels)
    import pandas as pd

    index = pd.Index(list(query_ids), name="query_id") if query_ids is not None else pd.RangeIndex(q.shape[0],
                                                                                                  name="query")
    reference = None
    if reference_precision is not None:
        ref_scorer = Scorer(_encode(q, reference_precision, "queries", None),
                            _encode(c, reference_precision, "corpus", None), similarity)
        reference = evaluate_embeddings_blocked(ref_scorer, rel, opts, index=index, k=k, block_size=block_size,
                                                memory=memory, progress=progress, user_bounds=bounds,
                                                describe={"similarity": similarity, "precision": reference_precision,
                                                          "query_precision": reference_precision})
    return evaluate_embeddings_blocked(scorer, rel, opts, index=index, k=k, block_size=block_size, memory=memory,
                                       progress=progress, user_bounds=bounds, reference=reference,
                                       rescorer=rescorer, candidates=candidates,
                                       describe={"similarity": similarity, "precision": precision,
                                                 "query_precision": qp})
