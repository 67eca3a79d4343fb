"""tierank.sentence_transformers.InformationRetrievalEvaluator against sentence-transformers' own, run here.

The model is built in the test (a ``StaticEmbedding`` over a word-level tokenizer made in code: no download),
so the embeddings are known: a text's embedding is the mean of its words' vectors.

* tie-free data: every key of the original, in its order, to 1e-9 (and ``primary_metric``), for the model's
  cosine and dot similarity and for score functions given as callables (cos_sim, dot_score, euclidean,
  manhattan), over random sizes, cutoffs, chunk sizes, names and relevant ids outside the corpus;
* tied data (words sharing a vector, so texts share an embedding): each value is the mean over queries of
  the brute force (tests/oracle.py: every ordering of the tied corpus entries) and the audit's keys its
  exact min / max;
* it runs in ``SentenceTransformerTrainer(evaluator=...)`` for one step, through ``model.evaluate`` and
  ``SequentialEvaluator``, and writes the original's CSV;
* bad arguments are one-line InputErrors.
"""

from __future__ import annotations

import csv
import inspect
import math

import numpy as np
import pytest
import torch
from hypothesis import assume, given, settings
from hypothesis import strategies as st
from sentence_transformers import SentenceTransformer
from sentence_transformers.base.evaluation import BaseEvaluator, SequentialEvaluator
from sentence_transformers.sentence_transformer.evaluation import InformationRetrievalEvaluator as Original
from sentence_transformers.sentence_transformer.modules import StaticEmbedding
from sentence_transformers.util import cos_sim, dot_score, euclidean_sim, manhattan_sim
from tokenizers import Tokenizer, models, pre_tokenizers

import oracle
from tierank import InputError
from tierank.sentence_transformers import MEASURES, InformationRetrievalEvaluator

SETTINGS = settings(max_examples=25, deadline=None, derandomize=True, database=None)
TOL = 1e-9
FUNCTIONS = {"cos_sim": cos_sim, "dot_score": dot_score, "euclidean": euclidean_sim, "manhattan": manhattan_sim}


# ---------------------------------------------------------------------------------------- helpers


def tiny_model(weights, similarity: str = "cosine") -> SentenceTransformer:
    """A SentenceTransformer whose word ``w{i}`` has the vector ``weights[i + 1]`` (row 0: unknown words);
    a text's embedding is the mean of its words' vectors."""
    vocab = {"[UNK]": 0, **{f"w{i}": i + 1 for i in range(len(weights) - 1)}}
    tokenizer = Tokenizer(models.WordLevel(vocab, unk_token="[UNK]"))
    tokenizer.pre_tokenizer = pre_tokenizers.Whitespace()
    module = StaticEmbedding(tokenizer, embedding_weights=np.asarray(weights, dtype=np.float32))
    return SentenceTransformer(modules=[module], device="cpu", similarity_fn_name=similarity)


def texts(rng, n: int, n_words: int, max_len: int, unique: bool) -> list[str]:
    """``n`` texts of 1..max_len words, words sorted (equal multisets give equal texts, hence equal
    embeddings); ``unique``: no two texts alike."""
    out: list[str] = []
    for _ in range(1000 * n):
        words = sorted(rng.choice(n_words, size=rng.integers(1, max_len + 1)))
        text = " ".join(f"w{w}" for w in words)
        if not unique or text not in out:
            out.append(text)
        if len(out) == n:
            return out
    raise AssertionError("not enough distinct texts")


def float64_scores(model, queries: list[str], corpus: list[str], similarity: str) -> np.ndarray:
    """The scores in float64 from the model's float32 embeddings (cosine: each side normalised)."""
    q = model.encode(queries, convert_to_numpy=True).astype(np.float64)
    c = model.encode(corpus, convert_to_numpy=True).astype(np.float64)
    if similarity == "cosine":
        q = q / np.linalg.norm(q, axis=1, keepdims=True)
        c = c / np.linalg.norm(c, axis=1, keepdims=True)
    if similarity in ("cosine", "dot"):
        return q @ c.T
    p = 2 if similarity == "euclidean" else 1
    return -np.linalg.norm(q[:, None, :] - c[None, :, :], ord=p, axis=2)


def separated(scores: np.ndarray, gap: float = 1e-5) -> bool:
    """Whether, in each row, values that differ differ by more than ``gap`` (relative): rounding in
    float32 then cannot reorder them, and equal values are the embeddings' real ties."""
    for row in scores:
        v = np.unique(row)
        if len(v) > 1 and np.min(np.diff(v)) <= gap * max(1.0, float(np.max(np.abs(v)))):
            return False
    return True


def assert_same_as_original(ours: dict, original: dict) -> None:
    """The original's keys first, in its order, each value to TOL; then only audit keys."""
    keys = list(original)
    assert list(ours)[:len(keys)] == keys
    for key in keys:
        assert isinstance(ours[key], float)
        assert abs(ours[key] - original[key]) <= TOL, (key, ours[key], original[key])
    for key in list(ours)[len(keys):]:
        assert key.endswith(("_tie_dependent_share", "_lower", "_upper")), key


def random_case(seed: int, n_q: int, n_c: int, dim: int, unique: bool = True, n_words: int = 40):
    rng = np.random.default_rng(seed)
    model = tiny_model(rng.standard_normal((n_words + 1, dim)))
    q_texts = texts(rng, n_q, n_words, 3, unique=False)
    c_texts = texts(rng, n_c, n_words, 4, unique=unique)
    queries = {f"q{i}": t for i, t in enumerate(q_texts)}
    corpus = {f"d{j}": t for j, t in enumerate(c_texts)}
    relevant = {}
    for i in range(n_q):
        docs = {f"d{j}" for j in rng.choice(n_c, size=rng.integers(0, min(n_c, 4) + 1), replace=False)}
        if rng.random() < 0.3:
            docs.add(f"absent{i}")   # relevant but not in the corpus: counts in R, as in the original
        relevant[f"q{i}"] = docs
    return model, queries, corpus, relevant, rng


# ----------------------------------------------------------------------- against the original (no ties)

cutoff_lists = st.lists(st.integers(1, 30), min_size=1, max_size=3, unique=True)


@SETTINGS
@given(seed=st.integers(0, 10**6), n_q=st.integers(1, 8), n_c=st.integers(1, 25), dim=st.integers(2, 6),
       mrr=cutoff_lists, ndcg=cutoff_lists, acc=cutoff_lists, pr=cutoff_lists, maps=cutoff_lists,
       chunk=st.integers(1, 30), name=st.sampled_from(["", "dev"]),
       similarity=st.sampled_from(["cosine", "dot", "callables"]))
def test_same_as_original_without_ties(seed, n_q, n_c, dim, mrr, ndcg, acc, pr, maps, chunk, name, similarity):
    model, queries, corpus, relevant, _ = random_case(seed, n_q, n_c, dim)
    kwargs = dict(mrr_at_k=mrr, ndcg_at_k=ndcg, accuracy_at_k=acc, precision_recall_at_k=pr, map_at_k=maps,
                  corpus_chunk_size=chunk, name=name)
    if similarity == "callables":
        kwargs["score_functions"] = dict(FUNCTIONS)
        checked = ["cosine", "dot", "euclidean", "manhattan"]
    else:
        model.similarity_fn_name = similarity
        checked = [similarity]
    assume(any(relevant[q] for q in queries))
    for sim in checked:
        assume(separated(float64_scores(model, list(queries.values()), list(corpus.values()), sim)))
    original = Original(queries, corpus, relevant, **kwargs)
    ours = InformationRetrievalEvaluator(queries, corpus, relevant, **kwargs)
    want = original(model)
    got = ours(model)
    assert_same_as_original(got, want)
    assert ours.primary_metric == original.primary_metric
    for fn_name in ours.score_function_names:   # no tie: nothing depends on tie order
        assert got[f"{name + '_' if name else ''}{fn_name}_tie_dependent_share"] == 0.0


def test_repeated_cutoffs_count_once():
    """The original adds a query's hit once per repetition of k in accuracy_at_k and mrr_at_k (so
    accuracy@1 can reach 2.0); here a repeated k is the same measure, as given once."""
    model, queries, corpus, relevant, _ = random_case(8, 6, 30, 6)
    relevant = {q: docs | set(corpus) if i < 2 else docs for i, (q, docs) in enumerate(relevant.items())}
    once = InformationRetrievalEvaluator(queries, corpus, relevant, accuracy_at_k=[1], mrr_at_k=[10])(model)
    twice = InformationRetrievalEvaluator(queries, corpus, relevant, accuracy_at_k=[1, 1], mrr_at_k=[10, 10])(model)
    theirs = Original(queries, corpus, relevant, accuracy_at_k=[1, 1], mrr_at_k=[10, 10])(model)
    assert list(twice) == list(once)
    assert twice == once
    assert once["cosine_accuracy@1"] > 0
    assert theirs["cosine_accuracy@1"] == pytest.approx(2 * once["cosine_accuracy@1"], abs=TOL)
    assert theirs["cosine_mrr@10"] == pytest.approx(2 * once["cosine_mrr@10"], abs=TOL)


def test_same_as_original_defaults_prompts_and_truncation():
    model, queries, corpus, relevant, _ = random_case(7, 6, 40, 8)
    for kwargs in ({}, {"truncate_dim": 4}, {"query_prompt": "w3 ", "corpus_prompt": "w5 "},
                   {"main_score_function": "dot", "score_functions": {"cosine": cos_sim, "dot": dot_score}}):
        original = Original(queries, corpus, relevant, **kwargs)
        ours = InformationRetrievalEvaluator(queries, corpus, relevant, **kwargs)
        assert_same_as_original(ours(model), original(model))
        assert ours.primary_metric == original.primary_metric
        assert ours.get_config_dict() == original.get_config_dict()


def test_corpus_embeddings_given_and_progress_bars(capsys):
    """compute_all_metrics(model, corpus_embeddings=...) (how subclasses and callers pass precomputed
    embeddings) gives the original's values; show_progress_bar draws the original's bars."""
    model, queries, corpus, relevant, _ = random_case(9, 5, 30, 6)
    embeddings = model.encode(list(corpus.values()), convert_to_tensor=True)
    original = Original(queries, corpus, relevant)
    ours = InformationRetrievalEvaluator(queries, corpus, relevant, show_progress_bar=True)
    original(model)
    ours(model)   # resolves the score functions from the model, as the original's call does
    want = original.compute_all_metrics(model, corpus_embeddings=embeddings)
    got = ours.compute_all_metrics(model, corpus_embeddings=embeddings)
    assert list(got) == list(want) == ["cosine"]
    for metric, values in want["cosine"].items():
        assert list(got["cosine"][metric]) == list(values)
        for k, value in values.items():
            assert abs(got["cosine"][metric][k] - value) <= TOL
    assert "Corpus Chunks" in capsys.readouterr().err
    assert ours.results["cosine"].audit is not None   # by name, through evaluate_embeddings
    with pytest.raises(InputError, match="the corpus has 30 entries but 29 embeddings"):
        ours.compute_all_metrics(model, corpus_embeddings=embeddings[:29])


def test_signature_is_the_originals_plus_keywords():
    ours = inspect.signature(InformationRetrievalEvaluator.__init__).parameters
    theirs = inspect.signature(Original.__init__).parameters
    names = list(theirs)
    assert list(ours)[:len(names)] == names
    for name in names:
        assert ours[name].default == theirs[name].default, name
        assert ours[name].kind == theirs[name].kind, name
    extra = list(ours)[len(names):]
    assert extra == ["precision", "ties", "reference_precision"]
    assert all(ours[name].kind is inspect.Parameter.KEYWORD_ONLY for name in extra)
    assert issubclass(InformationRetrievalEvaluator, Original)
    assert issubclass(InformationRetrievalEvaluator, BaseEvaluator)


# --------------------------------------------------------------------- tied data against the brute force


def oracle_means(spec: str, grades: np.ndarray, keys: np.ndarray) -> tuple[float, float, float]:
    """(mean over queries of the exact mean, of the min, of the max) over tie orderings."""
    values = [oracle.tie_aware(spec, list(g), list(k)) for g, k in zip(grades, keys)]
    return tuple(math.fsum(v[i] for v in values) / len(values) for i in range(3))


def measure_values(ev) -> dict[str, str]:
    """``{output key without the name prefix: tierank measure}`` of an evaluator's plan."""
    out = {}
    for metric, (arg, template) in MEASURES.items():
        for k in getattr(ev, arg):
            out[metric.replace("@k", f"@{k}")] = template.format(k)
    return out


@settings(max_examples=25, deadline=None, derandomize=True, database=None)
@given(seed=st.integers(0, 10**6), n_q=st.integers(1, 5), n_c=st.integers(2, 14),
       similarity=st.sampled_from(["cosine", "dot", "manhattan"]), ks=st.lists(st.integers(1, 8), min_size=1,
                                                                               max_size=2),
       chunk=st.integers(1, 14))
def test_tied_embeddings_against_brute_force(seed, n_q, n_c, similarity, ks, chunk):
    """Ties inside a chunk, across chunks and across the cut at max(k) (corpus_chunk_size from 1)."""
    rng = np.random.default_rng(seed)
    # 10 words sharing 3 vectors: texts of one or two words often have the same embedding
    distinct = rng.standard_normal((3, 3))
    weights = np.vstack([np.zeros((1, 3)), distinct[rng.integers(0, 3, size=10)]])
    model = tiny_model(weights, similarity if similarity != "manhattan" else "cosine")
    q_texts = texts(rng, n_q, 10, 1, unique=False)
    c_texts = texts(rng, n_c, 10, 2, unique=False)
    queries = {f"q{i}": t for i, t in enumerate(q_texts)}
    corpus = {f"d{j}": t for j, t in enumerate(c_texts)}
    grades = (rng.random((n_q, n_c)) < 0.35).astype(int)
    grades[:, 0] = 1   # every query has a relevant entry
    relevant = {f"q{i}": {f"d{j}" for j in np.flatnonzero(grades[i])} for i in range(n_q)}
    keys = float64_scores(model, q_texts, c_texts, similarity)
    assume(separated(keys))
    kwargs = dict(mrr_at_k=ks, ndcg_at_k=ks, accuracy_at_k=ks, precision_recall_at_k=ks, map_at_k=ks,
                  corpus_chunk_size=chunk)
    if similarity == "manhattan":
        kwargs["score_functions"] = {"manhattan": manhattan_sim}
    ev = InformationRetrievalEvaluator(queries, corpus, relevant, **kwargs)
    got = ev(model)
    dependent = np.zeros(n_q, dtype=bool)
    for key, spec in measure_values(ev).items():
        mean, lo, hi = oracle_means(spec, grades, keys)
        assert abs(got[f"{similarity}_{key}"] - mean) <= TOL, (key, got[f"{similarity}_{key}"], mean)
        per_query = [oracle.tie_aware(spec, list(g), list(k)) for g, k in zip(grades, keys)]
        dependent |= np.array([v[1] < v[2] for v in per_query])
        if key == f"ndcg@{max(ks)}":
            assert abs(got[f"{similarity}_{key}_lower"] - lo) <= TOL
            assert abs(got[f"{similarity}_{key}_upper"] - hi) <= TOL
    assert got[f"{similarity}_tie_dependent_share"] == dependent.mean()


def quantized_keys(model, queries: list[str], corpus: list[str], precision: str, similarity: str) -> list[list]:
    """Exact scores of quantized embeddings, computed here from sentence-transformers' own
    ``quantize_embeddings`` (int8: both sides with the corpus's ranges): int8 dot as integers, int8 cosine as
    the exact rational sign(dot) dot^2 / (|q|^2 |c|^2) (ordered as the cosine), binary as minus the Hamming
    distance of the sign bits (dot and cosine of the +-1 vectors order so)."""
    from fractions import Fraction

    from sentence_transformers.util import quantize_embeddings

    q = model.encode(queries, convert_to_numpy=True)
    c = model.encode(corpus, convert_to_numpy=True)
    if precision == "int8":
        qi = quantize_embeddings(q, "int8", calibration_embeddings=c).astype(np.int64)
        ci = quantize_embeddings(c, "int8", calibration_embeddings=c).astype(np.int64)
        dots = [[int(x) for x in row] for row in qi @ ci.T]
        if similarity == "dot":
            return dots
        nq, nc = (qi * qi).sum(axis=1), (ci * ci).sum(axis=1)
        cosines = [[Fraction(d * abs(d), int(nq[i]) * int(nc[j])) if nq[i] and nc[j] else Fraction(0)
                    for j, d in enumerate(row)] for i, row in enumerate(dots)]
        # the oracle reads keys as floats: give it each fraction's rank, equal fractions equal ranks
        return [[sorted(set(row)).index(x) for x in row] for row in cosines]
    qb = np.unpackbits((quantize_embeddings(q, precision).astype(np.int16) + (128 if precision == "binary" else 0))
                       .astype(np.uint8), axis=1)
    cb = np.unpackbits((quantize_embeddings(c, precision).astype(np.int16) + (128 if precision == "binary" else 0))
                       .astype(np.uint8), axis=1)
    return [[-int(np.count_nonzero(a != b)) for b in cb] for a in qb]


@settings(max_examples=12, deadline=None, derandomize=True, database=None)
@given(seed=st.integers(0, 10**6), n_q=st.integers(1, 4), n_c=st.integers(2, 12),
       precision=st.sampled_from(["int8", "binary", "ubinary"]), similarity=st.sampled_from(["cosine", "dot"]),
       k=st.integers(1, 6))
def test_quantized_precisions_against_brute_force(seed, n_q, n_c, precision, similarity, k):
    """int8 and binary scores tie far more often than float32 ones; every value is the brute force's over
    the exact quantized scores, computed here independently."""
    rng = np.random.default_rng(seed)
    model = tiny_model(rng.standard_normal((9, 8)), similarity)
    q_texts = texts(rng, n_q, 8, 2, unique=False)
    c_texts = texts(rng, n_c, 8, 3, unique=False)
    assume(precision != "int8" or n_c > 1)
    grades = (rng.random((n_q, n_c)) < 0.4).astype(int)
    grades[:, -1] = 1
    queries = {f"q{i}": t for i, t in enumerate(q_texts)}
    corpus = {f"d{j}": t for j, t in enumerate(c_texts)}
    relevant = {f"q{i}": {f"d{j}" for j in np.flatnonzero(grades[i])} for i in range(n_q)}
    keys = quantized_keys(model, q_texts, c_texts, precision, similarity)
    ev = InformationRetrievalEvaluator(queries, corpus, relevant, precision=precision, mrr_at_k=[k], ndcg_at_k=[k],
                                       accuracy_at_k=[k], precision_recall_at_k=[k], map_at_k=[k])
    got = ev(model)
    assert ev.results[similarity].audit is not None   # computed by evaluate_embeddings, by name
    for key, spec in measure_values(ev).items():
        mean, lo, hi = oracle_means(spec, grades, keys)
        assert abs(got[f"{similarity}_{key}"] - mean) <= TOL, (key, got[f"{similarity}_{key}"], mean)
        if key == f"ndcg@{k}":
            assert abs(got[f"{similarity}_{key}_lower"] - lo) <= TOL
            assert abs(got[f"{similarity}_{key}_upper"] - hi) <= TOL


def test_ties_lower_and_upper_are_the_bounds():
    rng = np.random.default_rng(5)
    weights = np.vstack([np.zeros((1, 2)), np.repeat(rng.standard_normal((2, 2)), 3, axis=0)])
    model = tiny_model(weights)
    queries = {"q0": "w0", "q1": "w3"}
    corpus = {f"d{j}": f"w{j}" for j in range(6)}   # d0-d2 and d3-d5 share an embedding
    relevant = {"q0": {"d1"}, "q1": {"d3", "d5"}}
    kw = dict(ndcg_at_k=[2], mrr_at_k=[2], accuracy_at_k=[1], precision_recall_at_k=[1], map_at_k=[2])
    expected = InformationRetrievalEvaluator(queries, corpus, relevant, **kw)(model)
    lower = InformationRetrievalEvaluator(queries, corpus, relevant, ties="lower", **kw)(model)
    upper = InformationRetrievalEvaluator(queries, corpus, relevant, ties="upper", **kw)(model)
    assert lower["cosine_ndcg@2"] == expected["cosine_ndcg@2_lower"] < expected["cosine_ndcg@2"]
    assert upper["cosine_ndcg@2"] == expected["cosine_ndcg@2_upper"] == 1.0
    # q0: d1 is one of 3 tied first: P@1 = 1/3; q1: 2 of 3 tied first are relevant: P@1 = 2/3
    assert expected["cosine_precision@1"] == pytest.approx((1 / 3 + 2 / 3) / 2, abs=1e-15)
    assert expected["cosine_tie_dependent_share"] == 1.0


# ----------------------------------------------------------------------- training, CSV, model card


def read_csv(path) -> list[list[str]]:
    with open(path, newline="", encoding="utf-8") as f:
        return list(csv.reader(f))


def test_csv_is_the_originals(tmp_path):
    model, queries, corpus, relevant, _ = random_case(11, 5, 30, 6)
    assert separated(float64_scores(model, list(queries.values()), list(corpus.values()), "cosine"))
    for cls, folder in ((Original, "original"), (InformationRetrievalEvaluator, "tierank")):
        ev = cls(queries, corpus, relevant, name="dev")
        ev(model, output_path=str(tmp_path / folder), epoch=1, steps=10)
        ev(model, output_path=str(tmp_path / folder), epoch=2, steps=20)   # appended, header once
    theirs, ours = (read_csv(tmp_path / folder / "Information-Retrieval_evaluation_dev_results.csv")
                    for folder in ("original", "tierank"))
    assert ours[0] == theirs[0] and len(ours) == len(theirs) == 3
    for row_ours, row_theirs in zip(ours[1:], theirs[1:]):
        assert row_ours[:2] == row_theirs[:2]
        assert np.allclose(np.array(row_ours[2:], float), np.array(row_theirs[2:], float), rtol=0, atol=TOL)


def test_predictions_are_the_originals(tmp_path):
    """write_predictions: the same JSON lines as the original (its top max(k) per query, ties by corpus
    id), on tied embeddings too, for the model's similarity and for a callable."""
    rng = np.random.default_rng(21)
    weights = np.vstack([np.zeros((1, 4)), rng.standard_normal((4, 4))[rng.integers(0, 4, size=12)]])
    model = tiny_model(weights)
    queries = {f"q{i}": t for i, t in enumerate(texts(rng, 5, 12, 2, unique=False))}
    corpus = {f"d{j}": t for j, t in enumerate(texts(rng, 40, 12, 2, unique=False))}
    relevant = {q: {f"d{j}" for j in rng.choice(40, size=3, replace=False)} for q in queries}
    for kwargs in ({}, {"score_functions": {"manhattan": manhattan_sim}, "corpus_chunk_size": 7}):
        for cls, folder in ((Original, "original"), (InformationRetrievalEvaluator, "tierank")):
            cls(queries, corpus, relevant, name="dev", write_predictions=True, map_at_k=[20], **kwargs)(
                model, output_path=str(tmp_path / folder))
        name = "cosine" if not kwargs else "manhattan"
        file = f"Information-Retrieval_evaluation_dev_predictions_{name}.jsonl"
        theirs = (tmp_path / "original" / file).read_text(encoding="utf-8")
        assert (tmp_path / "tierank" / file).read_text(encoding="utf-8") == theirs
        assert len(theirs.splitlines()) == 5


def test_precision_names_the_csv_as_embedding_similarity_evaluator_does(tmp_path):
    model, queries, corpus, relevant, _ = random_case(12, 3, 12, 4)
    ev = InformationRetrievalEvaluator(queries, corpus, relevant, name="dev", precision="int8")
    metrics = ev(model, output_path=str(tmp_path))
    assert (tmp_path / "Information-Retrieval_evaluation_dev_int8_results.csv").exists()
    assert ev.get_config_dict() == {"precision": "int8"}
    assert "dev_cosine_ndcg@10" in metrics


def test_reference_precision_is_the_same_evaluation_in_that_precision():
    model, queries, corpus, relevant, _ = random_case(16, 6, 40, 8)
    for kwargs in ({}, {"score_functions": {"manhattan": manhattan_sim}}):
        name = "manhattan" if kwargs else "cosine"
        ev = InformationRetrievalEvaluator(queries, corpus, relevant, precision="binary", reference_precision="float32",
                                           **kwargs)
        got = ev(model)
        assert list(got)[-1] == f"{name}_ndcg@10_reference"
        float32 = InformationRetrievalEvaluator(queries, corpus, relevant, **kwargs)(model)
        binary = InformationRetrievalEvaluator(queries, corpus, relevant, precision="binary", **kwargs)(model)
        assert got[f"{name}_ndcg@10_reference"] == float32[f"{name}_ndcg@10"]
        assert {key: got[key] for key in binary} == binary
        assert ev.get_config_dict() == {"precision": "binary", "reference_precision": "float32"}


def test_model_evaluate_and_sequential_evaluator(tmp_path):
    model, queries, corpus, relevant, _ = random_case(13, 4, 20, 5)
    ev = InformationRetrievalEvaluator(queries, corpus, relevant, name="a")
    direct = ev(model)
    assert model.evaluate(ev) == direct
    seq = SequentialEvaluator([ev, InformationRetrievalEvaluator(queries, corpus, relevant, name="b")])
    both = seq(model)
    assert both["a_cosine_ndcg@10"] == direct["a_cosine_ndcg@10"]
    assert both["b_cosine_ndcg@10"] == direct["a_cosine_ndcg@10"]
    assert model.model_card_data.eval_results_dict[ev]["a_cosine_ndcg@10"] == direct["a_cosine_ndcg@10"]


def test_runs_in_sentence_transformer_trainer(tmp_path):
    from datasets import Dataset
    from sentence_transformers import SentenceTransformerTrainer, SentenceTransformerTrainingArguments
    from sentence_transformers.sentence_transformer.losses import MultipleNegativesRankingLoss

    model, queries, corpus, relevant, _ = random_case(14, 4, 16, 8)
    train = Dataset.from_dict({"anchor": list(queries.values()), "positive": list(corpus.values())[:4]})
    ev = InformationRetrievalEvaluator(queries, corpus, relevant, name="dev")
    args = SentenceTransformerTrainingArguments(
        output_dir=str(tmp_path), max_steps=1, per_device_train_batch_size=4, eval_strategy="steps",
        eval_steps=1, save_strategy="no", report_to="none", use_cpu=True, logging_steps=1,
        disable_tqdm=True)
    trainer = SentenceTransformerTrainer(model=model, args=args, train_dataset=train, eval_dataset=train,
                                         loss=MultipleNegativesRankingLoss(model), evaluator=ev)
    trainer.train()
    metrics = trainer.evaluate()
    assert metrics["eval_dev_cosine_ndcg@10"] == ev(model)["dev_cosine_ndcg@10"]
    assert "eval_dev_cosine_tie_dependent_share" in metrics
    assert (tmp_path / "eval" / "Information-Retrieval_evaluation_dev_results.csv").exists()
    logged = [row for row in trainer.state.log_history if "eval_dev_cosine_ndcg@10" in row]
    assert logged   # the evaluation during training, at step 1


# the old fit API builds a DataLoader with pin_memory=True, which torch warns about on a machine without GPU
@pytest.mark.filterwarnings("ignore:'pin_memory' argument is set as true:UserWarning")
def test_runs_in_model_fit(tmp_path):
    from sentence_transformers import InputExample
    from sentence_transformers.sentence_transformer.losses import MultipleNegativesRankingLoss
    from torch.utils.data import DataLoader

    model, queries, corpus, relevant, _ = random_case(15, 4, 16, 8)
    ev = InformationRetrievalEvaluator(queries, corpus, relevant, name="dev")
    examples = [InputExample(texts=[q, c]) for q, c in zip(queries.values(), list(corpus.values())[:4])]
    seen = []
    model.fit(train_objectives=[(DataLoader(examples, batch_size=4), MultipleNegativesRankingLoss(model))],
              evaluator=ev, epochs=1, output_path=str(tmp_path), show_progress_bar=False,
              callback=lambda score, epoch, steps: seen.append(score))
    assert seen == [ev(model)["dev_cosine_ndcg@10"]]   # the callback gets the primary metric
    assert (tmp_path / "eval" / "Information-Retrieval_evaluation_dev_results.csv").exists()


# --------------------------------------------------------------------------------------------- errors


@pytest.mark.parametrize("kwargs, message", [
    ({"precision": "int4"}, "precision must be one of float32"),
    ({"ties": "trec_eval"}, "ties must be one of expected, lower, upper"),
    ({"reference_precision": "int8"}, "reference_precision must be one of float32, float16, bfloat16"),
    ({"ndcg_at_k": [0]}, "ndcg_at_k must be a non-empty list of positive integers"),
    ({"map_at_k": 10}, "map_at_k must be a list of positive integers"),
    ({"mrr_at_k": []}, "mrr_at_k must be a non-empty list"),
    ({"corpus_chunk_size": 0}, "corpus_chunk_size must be a positive integer"),
    ({"score_functions": {"f": 3}}, "score function 'f' is not callable"),
    ({"score_functions": {}}, "score_functions must be a non-empty dict"),
])
def test_bad_arguments_are_one_line_input_errors(kwargs, message):
    with pytest.raises(InputError, match=message) as info:
        InformationRetrievalEvaluator({"q": "w1"}, {"d": "w1"}, {"q": {"d"}}, **kwargs)
    assert "\n" not in str(info.value)


def test_bad_data_are_input_errors():
    with pytest.raises(InputError, match="no query of queries has a relevant document"):
        InformationRetrievalEvaluator({"q": "w1"}, {"d": "w1"}, {"q": set()})
    with pytest.raises(InputError, match="queries must be a dict"):
        InformationRetrievalEvaluator(["w1"], {"d": "w1"}, {"q": {"d"}})
    with pytest.raises(InputError, match=r"relevant_docs\['q'\] must be a set of corpus ids"):
        InformationRetrievalEvaluator({"q": "w1"}, {"d": "w1"}, {"q": "d"})
    model = tiny_model(np.eye(3))
    nan = InformationRetrievalEvaluator({"q": "w0"}, {"d": "w1", "e": "w2"}, {"q": {"d"}},
                                        score_functions={"bad": lambda a, b: torch.full((len(a), len(b)), math.nan)})
    with pytest.raises(InputError, match="score function 'bad' gave NaN for query 'q' and corpus id 'd'"):
        nan(model)
    shape = InformationRetrievalEvaluator({"q": "w0"}, {"d": "w1"}, {"q": {"d"}},
                                          score_functions={"bad": lambda a, b: torch.zeros(3)})
    with pytest.raises(InputError, match="score function 'bad' returned shape"):
        shape(model)
