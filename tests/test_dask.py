"""tierank.dask: the same results as tierank.evaluate bit for bit (per query, means, bounds), whatever
the partitioning; the same InputErrors. The reference is tierank.evaluate on the same rows, in the
same order (dask's compute() of the frames)."""

from __future__ import annotations

import re

import dask
import dask.dataframe as dd
import numpy as np
import pandas as pd
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import tierank
import tierank.dask
from tierank.errors import InputError, TierankWarning

from spark_fixtures import MEASURES, TIE_CASES, random_case


@pytest.fixture(autouse=True)
def synchronous():   # type: ignore[no-untyped-def]
    with dask.config.set(scheduler="synchronous"):
        yield


def split(frame: pd.DataFrame, parts: int, rng: np.random.Generator) -> dd.DataFrame:
    """A dask frame of ``frame``'s rows in order, cut into ``parts`` partitions at random places
    (a query's rows end up in several partitions)."""
    cuts = np.sort(rng.choice(np.arange(1, max(len(frame), 2)), size=min(parts - 1, max(len(frame) - 1, 0)),
                              replace=False)) if parts > 1 and len(frame) > 1 else []
    pieces = np.split(np.arange(len(frame)), cuts)
    return dd.from_map(lambda rows: frame.iloc[rows].reset_index(drop=True), pieces)


def local(qrels: pd.DataFrame, run: pd.DataFrame, measures: list, **kw) -> tierank.Results:
    with pytest.warns(TierankWarning):   # the cases have queries only in the run / only in the qrels
        return tierank.evaluate(qrels, run, measures, **kw)


def same(res: tierank.dask.E.EngineResults, ref: tierank.Results) -> None:
    got = res.collect()
    assert got == ref
    assert res.mean == ref.mean
    assert res.mean_lower == ref.mean_lower and res.mean_upper == ref.mean_upper


@pytest.mark.parametrize("ties,bounds", TIE_CASES)
@pytest.mark.parametrize("string_ids", [False, True])
def test_equals_local_every_tie_mode(ties: str, bounds: bool, string_ids: bool) -> None:
    qrels, run = random_case(3, string_ids)
    rng = np.random.default_rng(7)
    ref = local(qrels, run, MEASURES, ties=ties, bounds=bounds, seed=5)
    with pytest.warns(TierankWarning) as record:
        res = tierank.dask.evaluate(split(qrels, 3, rng), split(run, 5, rng), MEASURES, ties=ties, bounds=bounds,
                                    seed=5, npartitions=4)
    same(res, ref)
    assert sorted(str(w.message) for w in record) == sorted(
        str(w.message) for w in _warnings_of(qrels, run, ties=ties, bounds=bounds))
    assert set(res.per_query.columns) >= {"query_id", *MEASURES}


def _warnings_of(qrels: pd.DataFrame, run: pd.DataFrame, **kw) -> list:
    with pytest.warns(TierankWarning) as record:
        tierank.evaluate(qrels, run, ["AP"], **kw)
    return list(record)


@settings(max_examples=12, deadline=None, derandomize=True, suppress_health_check=[HealthCheck.too_slow])
@given(seed=st.integers(0, 10 ** 6), run_parts=st.integers(1, 7), qrels_parts=st.integers(1, 4),
       shuffled=st.integers(1, 5), ties=st.sampled_from(["expected", "input", "random", "trec_eval"]),
       string_ids=st.booleans(), missing=st.sampled_from(["skip", "zero"]))
def test_any_partitioning_same_bits(seed: int, run_parts: int, qrels_parts: int, shuffled: int, ties: str,
                                    string_ids: bool, missing: str) -> None:
    qrels, run = random_case(seed, string_ids, n_queries=25)
    rng = np.random.default_rng(seed)
    kw = dict(ties=ties, bounds=ties == "expected", seed=seed, missing=missing, no_relevant="skip")
    ref = local(qrels, run, MEASURES, **kw)
    with pytest.warns(TierankWarning):
        res = tierank.dask.evaluate(split(qrels, qrels_parts, rng), split(run, run_parts, rng), MEASURES,
                                    npartitions=shuffled, **kw)
    same(res, ref)


def test_options_measures_and_nan_means() -> None:
    """Text measures, judged-only measures, geometric means, no_relevant='skip' (NaN left out),
    trec_eval 9 scores, -J and -M, missing='zero'."""
    qrels, run = random_case(11, False)
    run["score"] = run["score"] + 1e-9 * (run["doc_id"] % 3)   # ties in float32 only
    measures = ["AP", "gm_map", "RelString", "Bpref", "P(judged_only=True)@10", "NumQ"]
    rng = np.random.default_rng(1)
    for kw in [dict(no_relevant="skip"), dict(trec_eval_version=9), dict(judged_only=True, missing="zero"),
               dict(max_docs=10, ties="input"), dict(no_relevant="one", bounds=True)]:
        ref = local(qrels, run, measures, **kw)
        with pytest.warns(TierankWarning):
            res = tierank.dask.evaluate(split(qrels, 2, rng), split(run, 3, rng), measures, **kw)
        same(res, ref)


def test_random_ties_use_global_row_numbers() -> None:
    """ties='random' hashes each row's place in the whole run: another order of the same rows gives
    other values locally, and the engine follows the order it is given."""
    qrels, run = random_case(4, True)
    rng = np.random.default_rng(2)
    flipped = run.iloc[::-1].reset_index(drop=True)
    refs = [local(qrels, r, ["AP"], ties="random", seed=1) for r in (run, flipped)]
    assert refs[0] != refs[1]   # the order matters, so the test below can fail
    for r, ref in zip((run, flipped), refs):
        with pytest.warns(TierankWarning):
            same(tierank.dask.evaluate(split(qrels, 2, rng), split(r, 4, rng), ["AP"], ties="random", seed=1), ref)


def _errors(qrels: pd.DataFrame, run: pd.DataFrame, parts: int = 3, **kw) -> tuple[str, str]:
    """The local error on the rows as dask holds them (dask stores strings as string[pyarrow]), and the
    engine's."""
    rng = np.random.default_rng(0)
    dq, dr = split(qrels, 2, rng), split(run, parts, rng)
    with pytest.raises(InputError) as local_err:
        tierank.evaluate(dq.compute(), dr.compute().reset_index(drop=True), ["AP"], **kw)
    with pytest.raises(InputError) as engine_err:
        tierank.dask.evaluate(dq, dr, ["AP"], **kw)
    return str(local_err.value), str(engine_err.value)


def test_same_input_errors() -> None:
    qrels, run = random_case(5, True, n_queries=12)
    qrels = qrels[qrels["query_id"].isin(run["query_id"])].reset_index(drop=True)
    run = run[run["query_id"].isin(qrels["query_id"])].reset_index(drop=True)
    cases = []
    cases.append((qrels, run.rename(columns={"score": "points"})))          # no score column
    cases.append((qrels.assign(rel=1), run))                                 # two relevance columns
    nulls = run.copy()
    nulls.loc[len(run) - 3, "doc_id"] = None                                 # a missing id, late in the run
    cases.append((qrels, nulls))
    dup = pd.concat([run, run.iloc[[17]]], ignore_index=True)                # a repeated row, at the end
    cases.append((qrels, dup))
    dupq = pd.concat([qrels.iloc[:30], qrels.iloc[[3]], qrels.iloc[30:]], ignore_index=True)
    cases.append((dupq, run))                                                # in the qrels, row 30
    cases.append((qrels, run.assign(score=run["score"].astype(str))))        # string scores
    cases.append((qrels.assign(query_id=1), run))                            # int vs str query ids
    nan = run.copy()
    nan.loc[40, "score"] = np.nan
    cases.append((qrels, nan))
    for q, r in cases:
        want, got = _errors(q, r)
        assert got == want
    want, got = _errors(qrels.assign(query_id="other-" + qrels["query_id"]), run)   # no query in common
    assert got == want == "no query is both in the run and in the qrels: nothing to evaluate"
    want, got = _errors(qrels.assign(relevance=0), run, no_relevant="error")
    # every query lacks a relevant document: the engine names the first it meets, which may be another
    pattern = r"^measure 'AP': query 'q\d+' has no relevant judged document \(grade >= 1\); no_relevant='error'"
    assert re.match(pattern, got) and re.match(pattern, want)
    with pytest.raises(InputError, match="must be a dask DataFrame"):
        tierank.dask.evaluate(qrels, run, ["AP"])
    with pytest.raises(InputError, match="ties="):
        tierank.dask.evaluate(dd.from_pandas(qrels, npartitions=1), dd.from_pandas(run, npartitions=1), ["AP"],
                              ties="best")


def test_compare_from_cluster_per_query() -> None:
    qrels, run = random_case(6, False)
    other = run.assign(score=run["score"][::-1].to_numpy())
    with pytest.warns(TierankWarning):
        ref = tierank.compare(qrels, {"a": run, "b": other}, ["AP", "P@5"], test="permutation", n_resamples=200)
    with pytest.warns(TierankWarning):
        got = tierank.dask.compare(dd.from_pandas(qrels, npartitions=2),
                                   {"a": dd.from_pandas(run, npartitions=3), "b": dd.from_pandas(other, npartitions=2)},
                                   ["AP", "P@5"], test="permutation", n_resamples=200)
    assert got.means.equals(ref.means) and got.tests.equals(ref.tests)


def test_err_does_not_depend_on_other_queries() -> None:
    """Regression: ERR's expected value summed over columns padded to the widest tie of the call."""
    qrels, run = random_case(1, False, n_queries=25)
    with pytest.warns(TierankWarning):
        full = tierank.evaluate(qrels, run, ["ERR@10"], bounds=True)
    alone = tierank.evaluate(qrels[qrels.query_id == 3], run[run.query_id == 3], ["ERR@10"], bounds=True)
    assert alone.per_query.loc[3].equals(full.per_query.loc[3])


def test_dcg_does_not_depend_on_other_queries() -> None:
    """Regression: DCG's full and shallow-cutoff paths summed in different orders (reduceat, bincount)."""
    qrels, run = random_case(79399, False, n_queries=25)
    kw = dict(ties="trec_eval", no_relevant="skip")
    with pytest.warns(TierankWarning):
        full = tierank.evaluate(qrels, run, ["nDCG@10"], **kw)
    alone = tierank.evaluate(qrels[qrels.query_id == 22], run[run.query_id == 22], ["nDCG@10"], **kw)
    assert alone.per_query.loc[22, "nDCG@10"] == full.per_query.loc[22, "nDCG@10"]
