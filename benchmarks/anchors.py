"""The benchmark cases: one adapter per library and task.

A case starts from the common source data (pandas DataFrames, TREC files, numpy matrices), ``build``s the
library's natural input from it (dicts of strings for pytrec_eval, Qrels/Run for ranx, tensors for
torchmetrics, the DataFrames themselves for tierank) and ``compute``s the means from that input. The two
are timed separately; "compute" is the time from the library's natural input to the means.
"""

from __future__ import annotations

import importlib.util
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import data
import numpy as np

MEASURES = ["nDCG@10", "AP", "P@10", "R@100", "RR"]
MATRIX_MEASURES = ["AP", "nDCG@100"]
CODE_MEASURES = ["AP", "nDCG@100", "P@1000"]
PYTREC = {"ndcg_cut.10": ("ndcg_cut_10", "nDCG@10"), "map": ("map", "AP"), "P.10": ("P_10", "P@10"),
          "recall.100": ("recall_100", "R@100"), "recip_rank": ("recip_rank", "RR")}
RANX = {"ndcg@10": "nDCG@10", "map": "AP", "precision@10": "P@10", "recall@100": "R@100", "mrr": "RR"}
REFERENCE = ("tierank", "expected")     # the row every other row of its group is compared with
# rough bytes per run row of an anchor's input + working set, to skip sizes that cannot fit in memory
BYTES_PER_ROW = {"pytrec_eval": 260, "ranx": 420, "ir_measures": 400, "torchmetrics": 200}


@dataclass
class Case:
    key: str
    task: str                 # "1", "2", ... (table order)
    dataset: str              # what the data is, e.g. "str ids, 10,000 q x 1,000"
    library: str
    mode: str                 # tie mode / input kind
    load: Callable[[], Any]
    build: Callable[[Any], Any]
    compute: Callable[[Any], dict]
    modules: tuple = ()       # importable names the case needs
    jit: bool = False
    group: str = ""           # rows compared with the group's tierank-expected row
    floor: bool = False
    keep_source: bool = False
    skip: str = ""            # a reason not to run it at all (shown in the table)
    extra: dict = field(default_factory=dict)

    def missing(self) -> str:
        if self.skip:
            return self.skip
        absent = [m for m in self.modules if importlib.util.find_spec(m) is None]
        return f"not installed: {', '.join(absent)}" if absent else ""


# ------------------------------------------------------------------------------------- helpers

def _identity(x):
    return x


def _str_col(frame, col):
    """A column as a list of Python strings (int ids become their decimal text)."""
    s = frame[col]
    return (s if s.dtype == object else s.astype(str)).tolist()


def _nested(frame, value_col, cast) -> dict:
    """{qid: {docid: value}} with string ids, as a user builds it for pytrec_eval / ranx."""
    out: dict = {}
    for q, d, v in zip(_str_col(frame, "query_id"), _str_col(frame, "doc_id"),
                       frame[value_col].astype(cast).tolist()):
        try:
            out[q][d] = v
        except KeyError:
            out[q] = {d: v}
    return out


def _pytrec_dicts(src):
    return {"qrels": _nested(src["qrels"], "relevance", int), "run": _nested(src["run"], "score", float)}


def _pytrec_eval(inp):
    import pytrec_eval

    ev = pytrec_eval.RelevanceEvaluator(inp["qrels"], set(PYTREC))
    res = ev.evaluate(inp["run"])
    return {name: np.mean([r[key] for r in res.values()]) for key, name in PYTREC.values()}


def _ranx_from_dicts(src):
    from ranx import Qrels, Run

    d = _pytrec_dicts(src)
    return {"qrels": Qrels(d["qrels"]), "run": Run(d["run"])}


def _ranx_from_frames(src):
    from ranx import Qrels, Run

    def objects(frame):
        return frame.astype({"query_id": str, "doc_id": str}).astype({"query_id": object, "doc_id": object})

    run = objects(src["run"]).astype({"score": np.float64})
    qrels = objects(src["qrels"]).astype({"relevance": np.int64})
    return {"qrels": Qrels.from_df(qrels, q_id_col="query_id", doc_id_col="doc_id", score_col="relevance"),
            "run": Run.from_df(run, q_id_col="query_id", doc_id_col="doc_id", score_col="score")}


def _ranx_eval(inp):
    import ranx

    res = ranx.evaluate(inp["qrels"], inp["run"], list(RANX))
    return {RANX[k]: v for k, v in res.items()}


def _irm_frames(src):
    run, qrels = src["run"], src["qrels"]
    if run["doc_id"].dtype.kind in "iu":  # pytrec_eval (its default provider) needs string ids
        run = run.astype({"query_id": str, "doc_id": str})
        qrels = qrels.astype({"query_id": str, "doc_id": str})
    return {"run": run, "qrels": qrels}


def _irm_eval(inp):
    import ir_measures
    from ir_measures import AP, RR, P, R, nDCG

    res = ir_measures.calc_aggregate([nDCG @ 10, AP, P @ 10, R @ 100, RR], inp["qrels"], inp["run"])
    return {str(k): v for k, v in res.items()}


def _torch_tensors(src):
    import pandas as pd
    import torch

    merged = src["run"].merge(src["qrels"], on=["query_id", "doc_id"], how="left")
    grade = merged["relevance"].fillna(0).to_numpy(dtype=np.int64)
    return {"preds": torch.from_numpy(merged["score"].to_numpy(dtype=np.float32)),
            "grade": torch.from_numpy(grade), "binary": torch.from_numpy(grade > 0),
            "indexes": torch.from_numpy(pd.factorize(merged["query_id"])[0].astype(np.int64))}


def _torch_eval(inp):
    from torchmetrics import MetricCollection
    from torchmetrics.retrieval import (
        RetrievalMAP,
        RetrievalMRR,
        RetrievalNormalizedDCG,
        RetrievalPrecision,
        RetrievalRecall,
    )

    ndcg = RetrievalNormalizedDCG(top_k=10)
    ndcg.update(inp["preds"], inp["grade"], indexes=inp["indexes"])
    binary = MetricCollection({"AP": RetrievalMAP(), "P@10": RetrievalPrecision(top_k=10),
                               "R@100": RetrievalRecall(top_k=100), "RR": RetrievalMRR()})
    binary.update(inp["preds"], inp["binary"], indexes=inp["indexes"])
    out = {"nDCG@10": float(ndcg.compute())}
    out.update({k: float(v) for k, v in binary.compute().items()})
    return out


def _tierank(ties, measures=MEASURES):
    def compute(inp):
        import tierank

        return tierank.evaluate(inp["qrels"], inp["run"], measures, ties=ties).mean
    return compute


def _tierank_all_trec(inp):
    """trec_eval's all_trec set (every measure, its default parameters), tie-aware, in one call."""
    import warnings

    import tierank
    from tierank.measures import expand

    with warnings.catch_warnings():       # the members of all_trec tierank does not compute are named
        warnings.simplefilter("ignore")
        measures = expand("all_trec")
    mean = tierank.evaluate(inp["qrels"], inp["run"], measures, ties="expected").mean
    return {k: v for k, v in mean.items() if v is not None}   # RelString is text: no mean


def _query_codes(src):
    import pandas as pd

    run = src["run"]
    q = run["query_id"]
    qcode = q.to_numpy() if q.dtype.kind in "iu" else pd.factorize(q)[0]
    return {"q": qcode.astype(np.int64), "score": run["score"].to_numpy()}


def _lexsort(inp):
    np.lexsort((-inp["score"], inp["q"]))
    return {}


def _key_argsort(inp):
    key = inp["q"] * data.SCORE_RANGE + (data.SCORE_RANGE - 1 - inp["score"])
    np.argsort(key)
    return {}


def _score_matrix(src):
    run = src["run"]
    return -run["score"].to_numpy().reshape(-1, data.DOCS_PER_QUERY)  # data is grouped by query


def _rowwise_argsort(m):
    np.argsort(m, axis=1)
    return {}


def _factorize_docs(src):
    return src["run"]["doc_id"]


def _factorize(col):
    import pandas as pd

    pd.factorize(col)
    return {}


def _factorize_lexsort(src):
    """Read once, sort once: encode string doc ids (integer ids are used as they are) and query ids,
    then one np.lexsort."""
    import pandas as pd

    run, qrels = src["run"], src["qrels"]
    if run["doc_id"].dtype.kind not in "iu":
        pd.factorize(pd.concat([run["doc_id"], qrels["doc_id"]], ignore_index=True))
    q = run["query_id"]
    qcode = q.to_numpy() if q.dtype.kind in "iu" else pd.factorize(q)[0]
    np.lexsort((-run["score"].to_numpy(), qcode))
    return {}


# ------------------------------------------------------------------------------------ task 2: files

_RUN_COLS = ["query_id", "iter", "doc_id", "rank", "score", "tag"]
_QRELS_COLS = ["query_id", "iter", "doc_id", "relevance"]


def _read_frames(paths):
    import pandas as pd

    run = pd.read_csv(paths["run"], sep=" ", header=None, names=_RUN_COLS, usecols=[0, 2, 4], engine="c")
    qrels = pd.read_csv(paths["qrels"], sep=" ", header=None, names=_QRELS_COLS, usecols=[0, 2, 3],
                        engine="c")
    return {"run": run, "qrels": qrels}


def _tierank_files(ties):
    def compute(paths):
        import tierank

        return tierank.evaluate(paths["qrels"], paths["run"], MEASURES, ties=ties).mean
    return compute


def _tierank_pandas_files(paths):
    return _tierank("expected")(_read_frames(paths))


def _pytrec_files(paths):
    import pytrec_eval

    with open(paths["qrels"]) as f:
        qrels = pytrec_eval.parse_qrel(f)
    with open(paths["run"]) as f:
        run = pytrec_eval.parse_run(f)
    return _pytrec_eval({"qrels": qrels, "run": run})


def _ranx_files(paths):
    from ranx import Qrels, Run

    return _ranx_eval({"qrels": Qrels.from_file(paths["qrels"], kind="trec"),
                       "run": Run.from_file(paths["run"], kind="trec")})


def _irm_files(paths):
    import ir_measures

    return _irm_eval({"qrels": ir_measures.read_trec_qrels(paths["qrels"]),
                      "run": ir_measures.read_trec_run(paths["run"])})


def _read_only(paths):
    _read_frames(paths)
    return {}


# ------------------------------------------------------------------------------------ task 3: matrix

def _tierank_matrix(ties):
    def compute(m):
        import tierank

        return tierank.evaluate_matrix(m["relevance"], distances=m["distances"], measures=MATRIX_MEASURES,
                                       ties=ties).mean
    return compute


def _sk_ndcg(m):
    from sklearn.metrics import ndcg_score

    return {"nDCG@100": ndcg_score(m["relevance"], -m["distances"], k=100)}  # ties averaged (exact)


def _sk_ap(m):
    from sklearn.metrics import average_precision_score

    rel, dist = m["relevance"], m["distances"]
    aps = [average_precision_score(rel[i] > 0, -dist[i]) for i in range(rel.shape[0])]
    return {"AP": float(np.mean(aps))}


def _torch_matrix_build(m):
    import torch

    n_q, n_items = m["relevance"].shape
    grade = torch.from_numpy(m["relevance"].astype(np.int64).ravel())
    return {"preds": torch.from_numpy(-m["distances"].astype(np.float32).ravel()), "grade": grade,
            "binary": grade > 0,
            "indexes": torch.from_numpy(np.repeat(np.arange(n_q, dtype=np.int64), n_items))}


def _torch_matrix_eval(inp):
    from torchmetrics.retrieval import RetrievalMAP, RetrievalNormalizedDCG

    ap = RetrievalMAP()
    ap.update(inp["preds"], inp["binary"], indexes=inp["indexes"])
    nd = RetrievalNormalizedDCG(top_k=100)
    nd.update(inp["preds"], inp["grade"], indexes=inp["indexes"])
    return {"AP": float(ap.compute()), "nDCG@100": float(nd.compute())}


def _matrix_argsort(m):
    np.argsort(m["distances"], axis=1)
    return {}


# ------------------------------------------------------------------------------------ task 4: codes

def _tierank_codes(c):
    import tierank

    return tierank.evaluate_codes(c["query_codes"], c["db_codes"], c["query_labels"], c["db_labels"],
                                  CODE_MEASURES).mean


def _hamming(c, block=16, sort=False):
    """Hamming distances with packed uint64 words, XOR and popcount, in blocks of queries (uint8 matrix);
    ``sort``: also sort each block row-wise (a stable argsort is a radix sort for uint8)."""
    def pack(codes):
        packed = np.packbits(codes, axis=1)
        pad = (-packed.shape[1]) % 8
        if pad:
            packed = np.pad(packed, ((0, 0), (0, pad)))
        return packed.view(np.uint64)

    q, d = pack(c["query_codes"]), pack(c["db_codes"])
    out = np.empty((q.shape[0], d.shape[0]), dtype=np.uint8)
    for s in range(0, q.shape[0], block):
        x = q[s:s + block, None, :] ^ d[None, :, :]
        out[s:s + block] = np.bitwise_count(x).sum(axis=2, dtype=np.uint8)
        if sort:
            np.argsort(out[s:s + block], axis=1, kind="stable")
    return out


def _hamming_only(c):
    _hamming(c)
    return {}


def _hamming_argsort(c):
    _hamming(c, sort=True)
    return {}


def _codes_matrix(c):
    """evaluate_matrix's natural input: the distance matrix and a relevance matrix (same class)."""
    return {"relevance": (c["query_labels"][:, None] == c["db_labels"][None, :]).astype(np.int8),
            "distances": _hamming(c)}


def _tierank_matrix_codes(m):
    import tierank

    return tierank.evaluate_matrix(m["relevance"], distances=m["distances"], measures=CODE_MEASURES).mean


def _needs_codes() -> str:
    import tierank

    return "" if hasattr(tierank, "evaluate_codes") else (
        "not available yet: tierank.evaluate_codes does not exist (the hashing issue adds it)")


# ------------------------------------------------------------------------------------ the cases

def _fmt(n: int) -> str:
    return f"{n:,}"


def _fits(library: str, n_rows: int) -> str:
    per_row = BYTES_PER_ROW.get(library)
    if per_row is None:
        return ""
    need = per_row * n_rows
    avail = _mem_available()
    if avail and need > 0.6 * avail:
        return (f"skipped: needs ~{need / 2**30:.0f} GB (estimated), "
                f"{avail / 2**30:.0f} GB available")
    return ""


def _mem_available() -> int:
    try:
        with open("/proc/meminfo") as f:
            for line in f:
                if line.startswith("MemAvailable:"):
                    return int(line.split()[1]) * 1024
    except OSError:
        pass
    return 0


def sizes(config: dict) -> dict:
    if config["quick"]:
        return {"n_q": 1000, "scale": [100, 10_000], "dense": (200, 20_000), "codes": (200, 100_000)}
    return {"n_q": 10_000, "scale": [1000, 100_000], "dense": (1000, 100_000), "codes": (1000, 1_000_000)}


ALL = {"tierank/expected", "tierank/trec_eval", "tierank/all_trec", "pytrec_eval", "ranx/dicts", "ranx/frames", "ir_measures",
       "torchmetrics", "floors", "floor"}
TARGETS = {"tierank/expected", "tierank/trec_eval", "tierank/all_trec", "pytrec_eval", "ranx/frames", "floor"}


def _run_cases(task: str, ids: str, n_q: int, include: set, skipped: dict | None = None) -> list[Case]:
    """Rows of task 1 (or 5) on one dataset; ``include`` names the rows to run (see ALL). Rows named in
    ``skipped`` are listed with the reason given there; other rows are left out."""
    skipped = skipped or {}
    group = f"{task}-{ids}-{n_q}"
    what = f"{ids} ids, {_fmt(n_q)} q x 1,000"
    n_rows = n_q * data.DOCS_PER_QUERY

    def load():
        return data.run_frames(n_q, ids)

    def case(name, lib, mode, build, compute, **kw):
        if name not in include:
            if name not in skipped:
                return []
            kw["skip"] = skipped[name]
        kw.setdefault("skip", _fits(lib, n_rows))
        return [_case_maker(group, task, what, load)(lib, mode, compute, build=build, **kw)]

    tr = ("tierank",)
    return (
        case("tierank/expected", "tierank", "expected", _identity, _tierank("expected"), modules=tr)
        + case("tierank/trec_eval", "tierank", "trec_eval", _identity, _tierank("trec_eval"), modules=tr)
        + case("tierank/all_trec", "tierank", "all_trec (every trec_eval measure)", _identity, _tierank_all_trec,
               modules=tr)
        + case("pytrec_eval", "pytrec_eval", "trec_eval, from dicts", _pytrec_dicts, _pytrec_eval,
               modules=("pytrec_eval",))
        + case("ranx/dicts", "ranx", "from dicts", _ranx_from_dicts, _ranx_eval, modules=("ranx",), jit=True)
        + case("ranx/frames", "ranx", "from DataFrames", _ranx_from_frames, _ranx_eval, modules=("ranx",),
               jit=True)
        + case("ir_measures", "ir_measures", "trec_eval, from DataFrames", _irm_frames, _irm_eval,
               modules=("ir_measures", "pytrec_eval"))
        + case("torchmetrics", "torchmetrics", "from tensors", _torch_tensors, _torch_eval,
               modules=("torch", "torchmetrics"))
        + case("floors", "floor", "np.lexsort (score, query)", _query_codes, _lexsort, floor=True)
        + case("floors", "floor", "np.argsort of int64 (query, score) key", _query_codes, _key_argsort,
               floor=True)
        + case("floors", "floor", "row-wise np.argsort of the score matrix", _score_matrix, _rowwise_argsort,
               floor=True)
        + case("floors", "floor", "pandas.factorize of the doc ids", _factorize_docs, _factorize, floor=True)
        + case("floor", "floor", "factorize ids + np.lexsort" if ids == "str" else
               "np.lexsort (int ids as they are)", _identity, _factorize_lexsort, floor=True)
    )



def _case_maker(group: str, task: str, what: str, load):
    """A Case constructor for one data set: ``make(lib, mode, compute, build=_identity, **options)``."""
    def make(lib, mode, compute, build=_identity, **kw):
        return Case(key=f"{group}/{lib}/{mode}", task=task, dataset=what, library=lib, mode=mode, load=load,
                    build=build, compute=compute, group=group, **kw)
    return make

def make_cases(config: dict) -> list[Case]:
    s = sizes(config)
    tasks = set(config["tasks"])
    cases: list[Case] = []
    n_q = s["n_q"]
    quick = config["quick"]
    if 1 in tasks:
        # --quick: ranx from dicts (a numba compilation of ~30 s per process) and, for integer ids, ranx,
        # the slow anchors and the extra floors are left out
        cases += _run_cases("1", "str", n_q, ALL - {"ranx/dicts"} if quick else ALL)
        if quick:
            cases += _run_cases("1", "int", n_q, TARGETS - {"ranx/frames"})
        elif config.get("thorough"):
            cases += _run_cases("1", "int", n_q, ALL)
        else:  # rows whose work does not depend on the id type are not repeated (--thorough does)
            cases += _run_cases("1", "int", n_q, ALL - {"ranx/dicts", "ir_measures", "torchmetrics", "floors"}, {
                "ranx/dicts": "not repeated for int ids (--thorough): ranx needs string ids; same "
                              "compute as from DataFrames",
                "ir_measures": "not repeated for int ids (--thorough): it needs string ids, so the "
                               "compute is that of string ids",
                "torchmetrics": "not repeated for int ids (--thorough): tensors hold no ids, so the "
                                "compute is that of string ids"})
    if 2 in tasks:
        group = f"2-str-{n_q}"
        what = f"TREC files, {_fmt(n_q)} q x 1,000"

        def load():
            return data.trec_files(n_q)

        fcase = _case_maker(group, "2", what, load)

        cases += [
            fcase("tierank", "expected", _tierank_files("expected"), modules=("tierank",)),
            fcase("tierank", "trec_eval", _tierank_files("trec_eval"), modules=("tierank",)),
            fcase("tierank", "expected, pandas.read_csv + DataFrames", _tierank_pandas_files,
                  modules=("tierank",)),
            fcase("pytrec_eval", "trec_eval, parse_qrel/parse_run", _pytrec_files, modules=("pytrec_eval",)),
            fcase("ranx", "Qrels/Run.from_file", _ranx_files, modules=("ranx",), jit=True),
            fcase("ir_measures", "read_trec_qrels/run", _irm_files, modules=("ir_measures", "pytrec_eval")),
            fcase("torchmetrics", "-", _read_only, skip="not applicable: no TREC file reader"),
            fcase("floor", "pandas.read_csv (C engine) of both files", _read_only, floor=True),
        ]
    if 3 in tasks:
        n_rows, n_items = s["dense"]
        group = f"3-{n_rows}x{n_items}"
        what = f"dense {_fmt(n_rows)} x {_fmt(n_items)} int distances"

        def load():
            return data.dense_matrix(n_rows, n_items)

        mcase = _case_maker(group, "3", what, load)

        cases += [
            mcase("tierank", "expected", _tierank_matrix("expected"), modules=("tierank",)),
            mcase("tierank", "trec_eval", _tierank_matrix("trec_eval"), modules=("tierank",)),
            mcase("scikit-learn", "ndcg_score(k=100), ties averaged", _sk_ndcg, modules=("sklearn",)),
            mcase("scikit-learn", "average_precision_score, row loop", _sk_ap, modules=("sklearn",)),
            mcase("torchmetrics", "from tensors", _torch_matrix_eval, build=_torch_matrix_build,
                  modules=("torch", "torchmetrics")),
            mcase("floor", "row-wise np.argsort of the distances", _matrix_argsort, floor=True),
        ]
    if 4 in tasks:
        n_rows, n_db = s["codes"]
        group = f"4-{n_rows}x{n_db}"
        what = f"64-bit codes, {_fmt(n_rows)} q x {_fmt(n_db)} db, 10 classes"

        def load():
            return data.hash_codes(n_rows, n_db)

        ccase = _case_maker(group, "4", what, load)

        cases += [
            ccase("tierank", "expected", _tierank_codes, modules=("tierank",), extra={"check": _needs_codes}),
            ccase("tierank", "evaluate_matrix on the Hamming distance matrix", _tierank_matrix_codes,
                  build=_codes_matrix, modules=("tierank",)),
            ccase("floor", "Hamming distances (packbits, XOR, bitwise_count)", _hamming_only, floor=True),
            ccase("floor", "Hamming distances + row-wise stable np.argsort (radix)", _hamming_argsort,
                  floor=True),
        ]
    if 5 in tasks:
        small, big = s["scale"]
        scale = {"tierank/expected", "pytrec_eval", "floor"} | (set() if quick else {"ranx/frames"})
        cases += _run_cases("5", "str", small, scale)
        cases += _run_cases("5", "int", small, scale)
        cases += _run_cases("5", "int", big, {"tierank/expected", "floor"} if quick else scale)
        if config.get("big_strings"):
            cases += _run_cases("5", "str", big, scale)
    return cases


def case_by_key(config: dict, key: str) -> Case:
    for c in make_cases(config):
        if c.key == key:
            check = c.extra.get("check")
            if check is not None and not c.skip and not c.missing():
                c.skip = check()
            return c
    raise KeyError(key)
