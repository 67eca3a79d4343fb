"""tierank with ties="trec_eval" reproduces trec_eval's own test outputs (tests/data/trec_eval).

The files are trec_eval 10.0's ``test/`` folder, unchanged (see README.md there):

* ``out.test.aq``  = ``trec_eval -m all_trec -q qrels.test results.test``
* ``out.test.aqc`` = ``trec_eval -m all_trec -q -c qrels.test results.trunc``
* ``out.test.aql`` = ``trec_eval -m all_trec -q -l2 qrels.rel_level results.test``

The run and qrels files are read by a tiny local reader (not tierank's) into dicts, so that this
test checks the measures, not the file parser.  Expected outputs are parsed generically
(``measure <tab> qid <tab> value``) and every measure shared with tierank is compared, per query
and on the ``all`` line.  trec_eval prints 4 decimals, hence the tolerance 5e-5; counts are exact.

Conventions of trec_eval visible in these outputs (and encoded below):

* the ``all`` line is the mean over queries for every measure except the counts ``num_ret``,
  ``num_rel``, ``num_rel_ret`` (sums) and ``num_q`` (number of queries);
* ``P_k`` divides by k even beyond the list (P_1000 = 71/1000 for a 500-document run);
* ``num_ret`` counts every retrieved document of the query (no cap below 1000 here);
* with ``-c`` a query missing from the run is printed with every measure 0 and ``num_ret`` 0,
  but ``num_rel`` is its true count (302: 77), which also enters the ``all`` sum (561) and the
  mean's denominator (num_q = 3);
* with ``-l2`` the binary measures use grade >= 2 as relevant (num_rel 301: 474 -> 12), while
  ``ndcg`` / ``ndcg_cut`` keep the raw grades as gains: e.g. ndcg 302 is 0.6617 in both aq and
  aql, and in aql the values are reproduced with gain = max(grade, 0) for every grade, including
  grade 1 documents that are non-relevant at level 2.  Negative grades (-1 in qrels.rel_level)
  have gain 0 (keeping them negative would give 0.3643 instead of 0.3669 for query 303).
"""

from __future__ import annotations

import re
import warnings
from collections import defaultdict
from pathlib import Path

import pytest

import tierank
from trec_measure_names import tierank_name

DATA = Path(__file__).parent / "data" / "trec_eval"
TOL = 5e-5 + 1e-12
COUNTS = {"num_ret", "num_rel", "num_rel_ret", "num_q"}


# ------------------------------------------------------------------ local readers


def read_qrels(path):
    """``qid iter docid grade`` per line -> {qid: {docid: grade}}."""
    qrels = defaultdict(dict)
    for line in Path(path).read_text().splitlines():
        fields = line.split()
        if not fields:
            continue
        qid, _iter, docid, grade = fields[:4]
        assert docid not in qrels[qid]
        qrels[qid][docid] = int(grade)
    return dict(qrels)


def read_run(path):
    """``qid Q0 docid rank score tag [anything]`` per line -> {qid: {docid: score}}; rank ignored."""
    run = defaultdict(dict)
    for line in Path(path).read_text().splitlines():
        fields = line.split()
        if not fields:
            continue
        assert len(fields) >= 6, line
        qid, _q0, docid, _rank, score = fields[:5]
        assert docid not in run[qid]
        run[qid][docid] = float(score)
    return dict(run)


def read_expected(path):
    """trec_eval -q output -> {qid or 'all': {measure: value string}}."""
    out = defaultdict(dict)
    for line in Path(path).read_text().splitlines():
        parts = line.split("\t")
        if len(parts) != 3:
            continue
        measure, qid, value = (p.strip() for p in parts)
        out[qid][measure] = value
    return dict(out)


# ------------------------------------------------------------ trec_eval -> tierank



CONFIGS = {
    # id: (qrels file, run file, expected output, relevance level, missing)
    "aq": ("qrels.test", "results.test", "out.test.aq", 1, "skip"),
    "aqc": ("qrels.test", "results.trunc", "out.test.aqc", 1, "zero"),
    "aql": ("qrels.rel_level", "results.test", "out.test.aql", 2, "skip"),
}


def _load(config):
    qrels_file, run_file, out_file, rel, missing = CONFIGS[config]
    qrels = read_qrels(DATA / qrels_file)
    run = read_run(DATA / run_file)
    expected = read_expected(DATA / out_file)
    names = sorted({m for values in expected.values() for m in values})
    mapping = {t: tierank_name(t, rel) for t in names if tierank_name(t, rel) is not None}
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # no unmatched query here, but do not depend on it
        res = tierank.evaluate(qrels, run, list(mapping.values()), ties="trec_eval", missing=missing)
    return expected, mapping, res


_CACHE = {}


def load(config):
    if config not in _CACHE:
        _CACHE[config] = _load(config)
    return _CACHE[config]


def _check(got, printed, where):
    if "." in printed:
        assert abs(got - float(printed)) <= TOL, f"{where}: tierank {got!r}, trec_eval {printed}"
    else:
        assert got == int(printed), f"{where}: tierank {got!r}, trec_eval {printed}"


# -------------------------------------------------------------------------- tests


def test_data_files_are_present_and_parse():
    qrels = read_qrels(DATA / "qrels.test")
    run = read_run(DATA / "results.test")
    assert sorted(run) == ["301", "302", "303"] and all(len(v) == 500 for v in run.values())
    assert sum(len(v) for v in qrels.values()) == 3681
    trunc = read_run(DATA / "results.trunc")  # lines with junk after the tag
    assert sorted(trunc) == ["301", "303"] and len(trunc["303"]) == 84
    assert min(g for j in read_qrels(DATA / "qrels.rel_level").values() for g in j.values()) == -1
    # the run really has ties, so the trec_eval tie-break matters
    assert any(len(set(v.values())) < len(v) for v in run.values())


@pytest.mark.parametrize("config", sorted(CONFIGS))
def test_mapping_covers_every_shared_measure(config):
    expected, mapping, _ = load(config)
    assert {"map", "ndcg", "recip_rank", "Rprec", "num_ret", "num_rel", "num_rel_ret", "num_q"} <= set(mapping)
    for family in ("map_cut", "P", "recall", "ndcg_cut"):
        cuts = {int(t.rsplit("_", 1)[1]) for t in mapping if re.fullmatch(rf"{family}_\d+", t)}
        assert cuts == {5, 10, 15, 20, 30, 100, 200, 500, 1000}, (family, cuts)
    assert {t for t in mapping if t.startswith("success_")} == {"success_1", "success_5", "success_10"}
    assert len(mapping) == 4 + 4 * 9 + 3 + 4  # 47 measures
    # names that must NOT be mapped (different measures with similar names)
    for other in ("relative_P_5", "Rprec_mult_1.00", "ndcg_rel", "set_P", "map_cut", "gm_map", "Rndcg"):
        assert tierank_name(other) is None


@pytest.mark.parametrize("config", sorted(CONFIGS))
def test_per_query_values(config):
    expected, mapping, res = load(config)
    qids = sorted(q for q in expected if q != "all")
    assert list(res.per_query.index) == qids
    n = 0
    for qid in qids:
        for trec, ours in mapping.items():
            if trec not in expected[qid]:  # num_q is printed on the all line only
                continue
            _check(float(res.per_query.loc[qid, ours]), expected[qid][trec], f"{config} {qid} {trec}->{ours}")
            n += 1
    assert n == 3 * 46


@pytest.mark.parametrize("config", sorted(CONFIGS))
def test_all_line(config):
    expected, mapping, res = load(config)
    assert set(res.mean) == set(mapping.values())
    for trec, ours in mapping.items():
        _check(float(res.mean[ours]), expected["all"][trec], f"{config} all {trec}->{ours}")


def test_missing_query_under_c():
    # out.test.aqc: 302 is not in results.trunc; -c scores it 0 but keeps its num_rel
    expected, mapping, res = load("aqc")
    row = res.per_query.loc["302"]
    assert row["NumRel"] == 77 and row["NumRet"] == 0 and row["NumRelRet"] == 0
    assert all(row[ours] == 0 for trec, ours in mapping.items() if trec not in ("num_rel", "num_q"))
    # without -c the same run evaluates only the two queries it has
    qrels = read_qrels(DATA / "qrels.test")
    run = read_run(DATA / "results.trunc")
    with pytest.warns(Warning):
        skipped = tierank.evaluate(qrels, run, ["AP", "NumQ", "NumRel"], ties="trec_eval")
    assert list(skipped.per_query.index) == ["301", "303"]
    assert skipped.mean["NumQ"] == 2 and skipped.mean["NumRel"] == 474 + 10
    for q in ("301", "303"):
        _check(float(skipped.per_query.loc[q, "AP"]), expected[q]["map"], f"skip {q} map")


def test_ndcg_gains_unchanged_by_relevance_level():
    # out.test.aq and out.test.aql agree on ndcg for 302, whose grades are the same in both qrels
    aq = read_expected(DATA / "out.test.aq")
    aql = read_expected(DATA / "out.test.aql")
    assert aq["302"]["ndcg"] == aql["302"]["ndcg"]
    qrels = read_qrels(DATA / "qrels.rel_level")
    run = read_run(DATA / "results.test")
    res = tierank.evaluate(qrels, run, ["nDCG", "nDCG@10", "AP(rel=2)", "AP"], ties="trec_eval")
    for q in ("301", "302", "303"):
        _check(float(res.per_query.loc[q, "nDCG"]), aql[q]["ndcg"], f"{q} ndcg")
        _check(float(res.per_query.loc[q, "nDCG@10"]), aql[q]["ndcg_cut_10"], f"{q} ndcg_cut_10")
        _check(float(res.per_query.loc[q, "AP(rel=2)"]), aql[q]["map"], f"{q} map -l2")
    # at level 1, query 301 has more relevant documents, so AP changes while nDCG does not
    assert float(res.per_query.loc["301", "AP"]) > float(res.per_query.loc["301", "AP(rel=2)"]) + 0.01
