"""trec_eval breaks ties by document id compared as strings, also when the ids are integers."""

import numpy as np
import pandas as pd
import pytest

import tierank
from tierank.data.ids import decimal_string_key


@pytest.mark.parametrize("width", [1, 3, 7, 12, 16])
def test_integer_key_orders_like_decimal_strings(width):
    rng = np.random.default_rng(width)
    ids = rng.integers(-10 ** width, 10 ** width, 5000)
    ids[:3] = [0, 10 ** (width - 1), -1]
    key = decimal_string_key(ids)
    as_str = ids.astype(str)
    assert (as_str[np.argsort(key, kind="stable")] == np.sort(as_str)).all()


def test_key_refuses_what_it_cannot_hold():
    assert decimal_string_key(np.array([10 ** 17])) is None
    assert decimal_string_key(np.array([np.iinfo(np.int64).min])) is None


def test_trec_eval_mode_same_for_integer_and_string_ids():
    rng = np.random.default_rng(5)
    n = 400
    run = pd.DataFrame({"query_id": np.repeat([1, 2, 3, 4], n // 4), "doc_id": rng.permutation(10 ** 5)[:n],
                        "score": rng.integers(0, 3, n).astype(float)})
    judged = run.sample(150, random_state=1)
    qrels = pd.DataFrame({"query_id": judged.query_id, "doc_id": judged.doc_id,
                          "relevance": rng.integers(0, 3, 150)})
    measures = ["AP", "nDCG@10", "P@5", "RR"]
    as_int = tierank.evaluate(qrels, run, measures, ties="trec_eval")
    as_str = tierank.evaluate(qrels.assign(doc_id=qrels.doc_id.astype(str)),
                              run.assign(doc_id=run.doc_id.astype(str)), measures, ties="trec_eval")
    np.testing.assert_allclose(as_int.per_query.to_numpy(), as_str.per_query.to_numpy(), rtol=0, atol=1e-15)
