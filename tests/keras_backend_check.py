"""Checks of tierank.keras on ONE Keras backend, run as a script in a fresh process (the backend is read
when keras is imported): ``python tests/keras_backend_check.py BACKEND OUT.json [SECTION ...]``.

tests/test_keras.py starts one process per backend and reads the JSON report: for every section, the
number of comparisons made and the failures (each a readable string), so one process does every check
of its backend (importing TensorFlow alone takes ~10 s; the first torch.compile 60-90 s).

Sections
--------
core      eager: every metric, tie mode, k, dtype (float32 / float64) equals tierank.evaluate_matrix
compiled  tf.function(jit_compile=True) / jax.jit / torch.compile: the same in float32 (one compilation)
fit       model.fit / model.evaluate with metrics=[...] and weighted_metrics=[...] on a tiny model whose
          scores are rounded (ties), against evaluate_matrix on model.predict's scores
kerasrs   tie-free data: every metric equals keras-rs's (sample weights, masks, k, gain/discount functions)
config    get_config / from_config round trips (and keras-rs configs)
errors    bad input: a clear tierank.InputError from update_state (eager)
"""

from __future__ import annotations

import json
import os
import sys
import time
import traceback
import warnings

BACKEND = sys.argv[1]
os.environ["KERAS_BACKEND"] = BACKEND
os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "3")
if BACKEND == "jax":
    os.environ["JAX_ENABLE_X64"] = "1"   # float64 arrays stay float64 (keras's floatx stays float32)

# Valid input raises no warning (as under pytest's filterwarnings=error), except these known third-party ones.
warnings.simplefilter("error")
warnings.filterwarnings("ignore", category=DeprecationWarning, module=r"(tensorflow|keras|jax|google|flatbuffers)")
warnings.filterwarnings("ignore", message=r".*np\.find_common_type.*", category=DeprecationWarning)
# torch.compile imports torch.utils.mkldnn, which uses the deprecated torch.jit.script_method (torch 2.13)
warnings.filterwarnings("ignore", message=r"`torch\.jit\.script_method` is deprecated", category=DeprecationWarning)

import numpy as np  # noqa: E402

import keras  # noqa: E402
from keras import ops  # noqa: E402

import tierank  # noqa: E402
import tierank.keras as tk  # noqa: E402
from tierank.dense import numpy_ops, random_keys, registry_measure  # noqa: E402

TIES = tk.KERAS_TIES
BOUND = ("lower", "upper")
CLASSES = {"NDCG": tk.NDCG, "DCG": tk.DCG, "MeanAveragePrecision": tk.MeanAveragePrecision,
           "MeanReciprocalRank": tk.MeanReciprocalRank, "PrecisionAtK": tk.PrecisionAtK, "RecallAtK": tk.RecallAtK}
SEED = 3   # the seed of ties="random"


class Report:
    def __init__(self) -> None:
        self.sections: dict = {}
        self.current = ""

    def start(self, name: str) -> None:
        self.current = name
        self.sections[name] = {"checks": 0, "failures": [], "seconds": 0.0}

    def check(self, ok: bool, what: str) -> None:
        sec = self.sections[self.current]
        sec["checks"] += 1
        if not ok and len(sec["failures"]) < 30:
            sec["failures"].append(what)

    def close(self, name: str, t0: float) -> None:
        self.sections[name]["seconds"] = round(time.perf_counter() - t0, 1)


R = Report()


def close(got, want, rtol: float) -> bool:
    got, want = np.asarray(got, np.float64), np.asarray(want, np.float64)
    return got.shape == want.shape and bool(np.allclose(got, want, rtol=rtol, atol=rtol))


def to_np(x) -> np.ndarray:
    if BACKEND == "torch" and hasattr(x, "detach"):
        return x.detach().cpu().numpy()
    return np.asarray(ops.convert_to_numpy(x))


# ------------------------------------------------------------------------------------------ data

def tied_batch(rng, B: int = 12, L: int = 7):
    """Integer scores in 0..2 (heavy ties), grades 0..3, ~20% padding; every row has a real item, some rows
    have no relevant item. Returns scores, labels (-1 at padding), mask, labels with junk at padding."""
    S = rng.integers(0, 3, (B, L)).astype(np.float64)
    Y = rng.integers(0, 4, (B, L)).astype(np.float64)
    Y[rng.random(B) < 0.25] = 0.0
    M = rng.random((B, L)) < 0.8
    M[:, 0] |= ~M.any(axis=1)
    padded = np.where(M, Y, -1.0)
    junk = np.where(M, Y, 2.0)   # what a mask must hide
    return S, padded, M, junk


def core_name(metric: str, k, L: int) -> str:
    kk = L if k is None else k
    return {"NDCG": f"nDCG(gain='exp2')@{kk}", "DCG": f"DCG(gain='exp2')@{kk}",
            "MeanAveragePrecision": registry_measure("ap", k, L), "MeanReciprocalRank": registry_measure("rr", k, L),
            "PrecisionAtK": f"P(clip=True)@{kk}", "RecallAtK": registry_measure("recall", k, L)}[metric]


def reference(metric: str, S, Y, M, k, ties: str) -> np.ndarray:
    """tierank.evaluate_matrix (the numpy core) per row, 0 where undefined: keras-rs's rules for NDCG
    (exp2 gain) and P (divide by min(k, real items)); every tie mode the core's (lower / upper also equal
    to its bounds); random = input order after sorting the columns by random_keys(SEED)."""
    Y = np.where(M, Y, 0.0)
    name = core_name(metric, k, S.shape[1])
    if ties == "random":
        perm = np.argsort(random_keys(numpy_ops, S, SEED), kind="stable")
        S, Y, M, ties = S[:, perm], Y[:, perm], M[:, perm], "input"
    res = tierank.evaluate_matrix(Y, S, [name], ties=ties, mask=M, bounds=ties in BOUND)
    if ties in BOUND:
        R.check(np.array_equal(res.per_query[name].to_numpy(), getattr(res, ties)[name].to_numpy()),
                f"core {name}: ties={ties!r} is not its bound")
    return res.per_query[name].to_numpy()


# ------------------------------------------------------------------------------------------ sections

def section_core() -> None:
    rng = np.random.default_rng(0)
    S, Yp, M, junk = tied_batch(rng)
    L = S.shape[1]
    for dtype, rtol in (("float32", 1e-5), ("float64", 1e-12)):
        for name, cls in CLASSES.items():
            for k in (None, 3):
                for ties in TIES:
                    want = reference(name, S, Yp, M, k, ties)
                    # k=None: padding by label -1; k=3: by y_true["mask"] over junk labels
                    y_true = Yp if k is None else {"labels": junk, "mask": M}
                    m = cls(k=k, ties=ties, seed=SEED, dtype=dtype)
                    values, weights = m.per_list(y_true, S.astype(dtype))
                    what = f"{name} k={k} ties={ties} {dtype}"
                    R.check(values.dtype == dtype if BACKEND != "torch" else str(values.dtype).endswith(dtype),
                            f"{what}: dtype {values.dtype}")
                    R.check(close(to_np(values), want, rtol), f"{what}: per list {to_np(values)} != {want}")
                    R.check(close(to_np(weights), np.ones(len(S)), rtol), f"{what}: list weights {to_np(weights)}")
                    m.update_state(y_true, S.astype(dtype))
                    m.update_state(y_true, S.astype(dtype))   # twice: the mean is unchanged
                    # Keras's Mean.result() is float32 on torch even with dtype="float64" (keras.ops.divide_no_nan
                    # of float64 tensors returns float32 there): float32 precision for that one value
                    rrtol = 1e-6 if BACKEND == "torch" and dtype == "float64" else rtol
                    R.check(close(float(m.result()), want.mean(), rrtol), f"{what}: result {float(m.result())} "
                            f"!= {want.mean()}")
    # unbatched (list_size,) input: one list
    for name, cls in CLASSES.items():
        want = reference(name, S[:1], Yp[:1], M[:1], 2, "expected")
        got = float(cls(k=2)(Yp[0], S[0]))
        R.check(close(got, want[0], 1e-5), f"{name} unbatched: {got} != {want[0]}")
    # infinite scores, 0.0 and -0.0 (equal: a tie) and padding: the one-sort orders of the backends
    S2 = np.array([[np.inf, 0.0, -0.0, -np.inf, 1.0, 0.0, -np.inf], [0.0, -np.inf, -0.0, 2.0, np.inf, -0.0, 5.0]])
    Y2 = np.array([[1.0, 0.0, 2.0, 1.0, 0.0, 1.0, 3.0], [2.0, 1.0, 0.0, 0.0, 1.0, 3.0, 1.0]])
    M2 = np.array([[True, True, True, True, True, True, False], [True, True, True, True, False, True, False]])
    for name, cls in CLASSES.items():
        for ties in TIES:
            want = reference(name, S2, np.where(M2, Y2, -1.0), M2, None, ties)
            got = to_np(cls(ties=ties, seed=SEED).per_list({"labels": Y2, "mask": M2}, S2)[0])
            R.check(close(got, want, 1e-5), f"{name} ties={ties} with inf and -0.0 scores: {got} != {want}")
    # per-item weights with ties: the mean over every ordering of keras-rs's formulas (numpy, brute force)
    brute_force_item_weights()
    # half precision (issue 27 item 7): float16 / bfloat16 scores or dtype compute and return float32, equal to
    # float32 precision to float64 on the same scores (every half value is exact in float64)
    half = S.astype("float16")
    for name, cls in CLASSES.items():
        want = float(cls(k=3, dtype="float64")(Yp, half.astype("float64")))
        for dtype in (None, "float16", "bfloat16"):
            m = cls(k=3, dtype=dtype)
            m.update_state(Yp, half)
            got = m.result()
            R.check(keras.backend.standardize_dtype(got.dtype) == "float32", f"{name} dtype={dtype}: result dtype {got.dtype}")
            R.check(close(float(got), want, 1e-6), f"{name} dtype={dtype}: {float(got)} != float64 {want}")
    for kind in ("bndcg", "map"):
        import test_keras_retrieval as tr

        labels, _, mm, dist = tr.lookups(np.random.default_rng(2), Q=6, n=5, tie_free=False)
        want = tr.value(tr.make(kind, 3, dtype="float64"), labels, mm, dist)
        got = tr.make(kind, 3, dtype="bfloat16").compute(query_labels=labels, lookup_distances=dist.astype("float16"),
                                                        match_mask=mm)
        R.check(keras.backend.standardize_dtype(got.dtype) == "float32" and close(float(got), want, 1e-6),
                f"retrieval {kind} bfloat16: {got.dtype} {float(got)} != float64 {want}")
    # shuffle_ties spellings
    for flag, ties in ((True, "random"), (False, "input")):
        m = tk.NDCG(shuffle_ties=flag)
        R.check(m.ties == ties, f"shuffle_ties={flag} gave ties={m.ties}")
    assert L == 7


def _orderings(scores):
    """Every permutation of the items that sorts the scores descending (ties in every order)."""
    import itertools

    return [p for p in itertools.permutations(range(len(scores)))
            if all(scores[p[i]] >= scores[p[i + 1]] for i in range(len(p) - 1))]


def _kerasrs_formula(name, y, w, k):
    """keras-rs's per-list MAP / NDCG of labels y and item weights w already in ranked order (numpy)."""
    L = len(y)
    kk = L if k is None else min(k, L)
    rank = np.arange(1, L + 1)
    if name == "MeanAveragePrecision":
        rel = (y >= 1).astype(float)
        p_at = np.cumsum(rel) / rank
        den = (w * rel).sum()
        return (p_at * w * rel)[:kk].sum() / den if den > 0 else 0.0
    g = (2.0 ** y - 1.0) * w
    disc = 1.0 / np.log2(rank + 1.0)
    ideal = (np.sort(g)[::-1] * disc)[:kk].sum()
    return (g * disc)[:kk].sum() / ideal if ideal > 0 else 0.0


def brute_force_item_weights() -> None:
    rng = np.random.default_rng(10)
    for _ in range(12):
        L = int(rng.integers(2, 6))
        s = rng.integers(0, 2, L).astype(np.float64)
        y = rng.integers(0, 3, L).astype(np.float64)
        w = rng.choice([0.5, 1.0, 2.0, 3.0], L)
        perms = _orderings(s)
        for name in ("MeanAveragePrecision", "NDCG"):
            for k in (None, 2):
                want = np.mean([_kerasrs_formula(name, y[list(p)], w[list(p)], k) for p in perms])
                values, _ = CLASSES[name](k=k, dtype="float64").per_list(y[None], s[None], sample_weight=w[None])
                R.check(close(to_np(values)[0], want, 1e-12),
                        f"{name} k={k} item weights {w} scores {s} labels {y}: {to_np(values)[0]} != brute force {want}")
        # MAP's arrangements with item weights: the relevant items of each tie first / last, in input order
        for ties, sign in (("optimistic", -1), ("pessimistic", 1)):
            p = sorted(range(L), key=lambda i: (-s[i], sign * int(y[i] >= 1), i))
            want = _kerasrs_formula("MeanAveragePrecision", y[p], w[p], 2)
            values, _ = tk.MeanAveragePrecision(k=2, ties=ties, dtype="float64").per_list(y[None], s[None],
                                                                                         sample_weight=w[None])
            R.check(close(to_np(values)[0], want, 1e-12), f"MAP ties={ties} item weights {w} scores {s} labels {y}: "
                    f"{to_np(values)[0]} != {want}")


def compiled_fn(fn):
    if BACKEND == "tensorflow":
        import tensorflow as tf

        return tf.function(fn, jit_compile=True)
    if BACKEND == "jax":
        import jax

        return jax.jit(fn)
    import torch

    return torch.compile(fn, dynamic=False)


COMPILED_CASES = [(name, k, ties) for name in CLASSES for k, ties in
                  ((None, "expected"), (3, "expected"), (2, "optimistic"), (None, "pessimistic"), (3, "input"),
                   (3, "random"), (2, "upper"))]
if BACKEND == "torch":   # torch.compile (inductor) of the 42 cases takes many minutes: six cases, every metric once
    COMPILED_CASES = [("NDCG", 3, "expected"), ("MeanAveragePrecision", 2, "pessimistic"),
                      ("MeanReciprocalRank", None, "optimistic"), ("PrecisionAtK", 3, "random"),
                      ("DCG", None, "input"), ("RecallAtK", 2, "upper")]


def section_compiled() -> None:
    rng = np.random.default_rng(1)
    S, Yp, M, junk = tied_batch(rng, B=8, L=6)
    metrics = [(CLASSES[name](k=k, ties=ties, seed=SEED), name, k, ties) for name, k, ties in COMPILED_CASES]

    def all_values(labels, mask, scores):
        out = []
        for i, (m, *_rest) in enumerate(metrics):
            y_true = labels if i % 2 == 0 else {"labels": labels, "mask": mask}   # both paddings traced
            out.append(m.per_list(y_true, scores)[0])
        return ops.stack(out)

    labels = ops.convert_to_tensor(np.where(M, Yp, -1.0).astype("float32"))
    mask = ops.convert_to_tensor(M)
    scores = ops.convert_to_tensor(S.astype("float32"))
    fn = compiled_fn(all_values)
    t0 = time.perf_counter()
    got = to_np(fn(labels, mask, scores))
    R.sections["compiled"]["first_call_seconds"] = round(time.perf_counter() - t0, 1)
    got2 = to_np(fn(labels, mask, ops.convert_to_tensor((S + 1.0).astype("float32"))))   # no recompilation
    for i, (_m, name, k, ties) in enumerate(metrics):
        want = reference(name, S, Yp, M, k, ties)
        R.check(close(got[i], want, 1e-5), f"compiled {name} k={k} ties={ties}: {got[i]} != {want}")
        R.check(close(got2[i], want, 1e-5), f"compiled (second call) {name} k={k} ties={ties}")
    if BACKEND == "jax":   # the traced arrays are jax Tracers: no value checks inside (they would fail)
        R.check(True, "jax traced")


class RoundScores(keras.layers.Layer):
    """Scores rounded to halves in the forward pass (straight-through gradient): many ties."""

    def call(self, x):
        return x + ops.stop_gradient(ops.round(x * 2.0) / 2.0 - x)


def section_fit() -> None:
    rng = np.random.default_rng(2)
    N, L, F = 16, 6, 3
    x = rng.normal(size=(N, L, F)).astype("float32")
    Y = rng.integers(0, 3, (N, L)).astype("float32")
    Y[:, 0] = np.maximum(Y[:, 0], 1.0)        # every list has a relevant item: its list weight is its weight
    M = rng.random((N, L)) < 0.85
    M[:, 0] = True
    y = np.where(M, Y, -1.0).astype("float32")
    w = rng.choice([0.5, 1.0, 2.0], size=N).astype("float32")
    keras.utils.set_random_seed(0)
    model = keras.Sequential([keras.Input((L, F)), keras.layers.Dense(1), keras.layers.Reshape((L,)), RoundScores()])
    specs = [("NDCG", 3, "expected"), ("DCG", None, "expected"), ("MeanAveragePrecision", None, "pessimistic"),
             ("MeanReciprocalRank", 2, "optimistic"), ("PrecisionAtK", 2, "expected"), ("RecallAtK", 2, "input")]
    metrics = [CLASSES[n](k=k, ties=t, name=f"m{i}") for i, (n, k, t) in enumerate(specs)]
    weighted = [tk.NDCG(k=3, name="w_ndcg"), tk.MeanAveragePrecision(name="w_map")]
    model.compile(optimizer="adam", loss="mse", metrics=metrics, weighted_metrics=weighted)
    hist = model.fit(x, y, sample_weight=w, epochs=2, batch_size=N, verbose=0)
    R.check(all(f"m{i}" in hist.history for i in range(len(specs))), f"fit history keys {sorted(hist.history)}")
    res = model.evaluate(x, y, sample_weight=w, batch_size=N, verbose=0, return_dict=True)
    S = np.asarray(model.predict(x, batch_size=N, verbose=0), np.float64)
    R.check(len(np.unique(S)) < S.size / 2, f"the fit scores should tie: {len(np.unique(S))} values")
    for i, (n, k, t) in enumerate(specs):
        want = reference(n, S, Y, M, k, t).mean()
        R.check(close(res[f"m{i}"], want, 1e-5), f"evaluate {n} k={k} ties={t}: {res[f'm{i}']} != {want}")
    for key, n, k in (("w_ndcg", "NDCG", 3), ("w_map", "MeanAveragePrecision", None)):
        v = reference(n, S, Y, M, k, "expected")
        want = float((w * v).sum() / w.sum())
        R.check(close(res[key], want, 1e-5), f"evaluate weighted {key}: {res[key]} != {want}")


def _kerasrs_case_data(rng, B=6, L=5):
    """Tie-free scores (distinct per row), grades 0..3, padding -1; row 0 without relevant items."""
    S = np.stack([rng.permutation(L) for _ in range(B)]).astype("float32") / L + rng.normal(size=(B, 1)).astype("float32")
    Y = rng.integers(0, 4, (B, L)).astype("float32")
    Y[0] = 0.0
    M = rng.random((B, L)) < 0.8
    M[:, 0] = True
    return S, Y, M


def section_kerasrs() -> None:
    import keras_rs

    rng = np.random.default_rng(3)
    S, Y, M = _kerasrs_case_data(rng)
    S2, Y2, M2 = _kerasrs_case_data(rng)
    B, L = S.shape
    weights = {
        "none": None, "scalar": 0.7, "per_list": rng.choice([0.0, 0.5, 2.0], size=B).astype("float32"),
        "per_item": rng.choice([0.0, 0.5, 1.0, 2.0], size=(B, L)).astype("float32"),
        "all_zero": np.zeros((B, L), "float32"),
    }
    gain = lambda y: ops.add(y, 0.5 * ops.square(y))            # noqa: E731 - custom gain (0 at 0)
    disc = lambda r: ops.divide(1.0, r)                         # noqa: E731 - 1/rank
    for name, cls in CLASSES.items():
        ref_cls = getattr(keras_rs.metrics, name)
        for k in (None, 3):
            for wname, sw in weights.items():
                for form in ("padded", "dict"):
                    for fns in ((None, None), (gain, disc)) if name in ("NDCG", "DCG") else ((None, None),):
                        kw = {} if fns[0] is None else {"gain_fn": fns[0], "rank_discount_fn": fns[1]}
                        ours, theirs = cls(k=k, **kw), ref_cls(k=k, **kw)
                        for s, y, m in ((S, Y, M), (S2, Y2, M2)):
                            y_true = np.where(m, y, -1.0) if form == "padded" else {"labels": y, "mask": m}
                            ours.update_state(y_true, s, sample_weight=sw)
                            theirs.update_state(y_true, s, sample_weight=sw)
                        a, b = float(ours.result()), float(theirs.result())
                        what = f"{name} k={k} weights={wname} {form} custom_fns={fns[0] is not None}"
                        R.check(close(a, b, 1e-5), f"{what}: tierank {a} != keras-rs {b}")
    # unbatched lists, and ties in keras-rs's input order (shuffle_ties=False) on the backends where it is stable
    for name, cls in CLASSES.items():
        a = float(cls(k=2)(Y[1], S[1], sample_weight=np.linspace(0.5, 1.5, L).astype("float32")))
        b = float(getattr(keras_rs.metrics, name)(k=2)(Y[1], S[1], sample_weight=np.linspace(0.5, 1.5, L).astype("float32")))
        R.check(close(a, b, 1e-5), f"{name} unbatched with item weights: {a} != {b}")


def section_config() -> None:
    import keras_rs

    rng = np.random.default_rng(4)
    S, Yp, M, _ = tied_batch(rng, B=5, L=6)
    for name, cls in CLASSES.items():
        m = cls(k=4, ties="pessimistic", seed=9, name=f"my_{name}", dtype="float32")
        config = m.get_config()
        clone = cls.from_config(config)
        R.check(clone.get_config() == config, f"{name}: config round trip {clone.get_config()} != {config}")
        R.check((clone.k, clone.ties, clone.seed, clone.name) == (4, "pessimistic", 9, f"my_{name}"),
                f"{name}: from_config attributes")
        R.check(close(float(clone(Yp, S)), float(m(Yp, S)), 1e-6), f"{name}: the clone computes another value")
        ser = keras.saving.serialize_keras_object(m)
        back = keras.saving.deserialize_keras_object(ser)
        R.check(type(back) is cls and back.get_config() == config, f"{name}: keras serialization round trip")
        # a keras-rs metric's config (shuffle_ties=False -> ties="input")
        kr = getattr(keras_rs.metrics, name)(k=2, shuffle_ties=False, name="kr").get_config()
        kr = {key: v for key, v in kr.items() if key not in ("gain_fn", "rank_discount_fn")}
        ours = cls.from_config(kr)
        R.check(ours.ties == "input" and ours.k == 2, f"{name}: from keras-rs config {kr} -> ties {ours.ties}")
    for name in ("NDCG", "DCG"):
        m = CLASSES[name](k=3)
        clone = CLASSES[name].from_config(m.get_config())
        R.check(clone.gain_fn is tk.default_gain_fn and clone.rank_discount_fn is tk.default_rank_discount_fn,
                f"{name}: gain/discount functions after the round trip {clone.gain_fn}, {clone.rank_discount_fn}")


def expect_error(what: str, fn, match: str) -> None:
    try:
        fn()
    except tierank.InputError as e:
        R.check(match.lower() in str(e).lower(), f"{what}: message {str(e)!r} lacks {match!r}")
        return
    except Exception as e:   # noqa: BLE001 - reported
        R.check(False, f"{what}: {type(e).__name__} instead of InputError: {e}")
        return
    R.check(False, f"{what}: no error")


def section_errors() -> None:
    y = np.array([[1.0, 0.0, 2.0], [0.0, 1.0, -1.0]], "float32")
    s = np.array([[0.5, 0.2, 0.1], [0.3, 0.3, 0.0]], "float32")
    nan = s.copy()
    nan[0, 1] = np.nan
    for name, cls in CLASSES.items():
        expect_error(f"{name} shape mismatch", lambda: cls().update_state(y, s[:, :2]), "shape")
        expect_error(f"{name} NaN score", lambda: cls().update_state(y, nan), "NaN")
        expect_error(f"{name} NaN label", lambda: cls().update_state(np.where(y > 1, np.nan, y), s), "NaN")
        expect_error(f"{name} k=0", lambda: cls(k=0), "positive integer")
        expect_error(f"{name} k=-2", lambda: cls(k=-2), "positive integer")
        expect_error(f"{name} k=1.5", lambda: cls(k=1.5), "positive integer")
        expect_error(f"{name} mask shape", lambda: cls().update_state({"labels": y, "mask": np.ones((2, 2), bool)}, s),
                     "mask")
        expect_error(f"{name} mask values", lambda: cls().update_state({"labels": y, "mask": np.full((2, 3), 2.0)}, s),
                     "mask")
        expect_error(f"{name} dict without labels", lambda: cls().update_state({"mask": np.ones((2, 3), bool)}, s),
                     "labels")
        expect_error(f"{name} sample_weight shape", lambda: cls().update_state(y, s, sample_weight=np.ones(3)),
                     "sample_weight")
        expect_error(f"{name} rank 3", lambda: cls().update_state(y[None], s[None]), "shape")
        expect_error(f"{name} ties", lambda: cls(ties="shuffle"), "ties must be one of")
        expect_error(f"{name} shuffle_ties vs ties", lambda: cls(ties="expected", shuffle_ties=True), "contradicts")
    # NaN at a padded item is ignored
    m = tk.NDCG()
    m.update_state(np.where(np.isnan(nan), -1.0, y), nan)
    R.check(np.isfinite(float(m.result())), "NaN at padding should be ignored")
    for ties in BOUND:
        expect_error(f"MAP per-item weights with ties={ties}",
                     lambda: tk.MeanAveragePrecision(ties=ties).update_state(y, s, sample_weight=np.ones((2, 3))),
                     "per-item")


def section_retrieval() -> None:
    """tierank.keras.retrieval on this backend: brute force over tie orders of TF Similarity's formulas (the
    numpy re-statement in test_keras_retrieval.py), float32."""
    import math

    import test_keras_retrieval as tr

    rng = np.random.default_rng(6)
    labels, _, mm, dist = tr.lookups(rng, Q=6, n=5, tie_free=False)
    for kind in tr.KINDS:
        for k in (1, 3):
            for v in tr.variants(kind):
                if v.get("average") == "macro":
                    continue
                tv = {key: val for key, val in tr.kw_for_tfsim(v).items() if key != "average"}
                per = tr.brute_force(kind, labels, mm, dist, k, **tv)
                for j, (ties, _) in enumerate(tr.BRUTE_MODES):
                    got = float(tr.value(tr.make(kind, k, ties=ties, dtype="float32", **v), labels, mm, dist))
                    want = per[:, j].mean()
                    R.check(math.isclose(got, want, rel_tol=1e-5, abs_tol=1e-6),
                            f"retrieval {kind} k={k} {v} ties={ties}: {got} != brute force {want}")


SECTIONS = {"retrieval": section_retrieval, "core": section_core, "compiled": section_compiled, "fit": section_fit, "kerasrs": section_kerasrs,
            "config": section_config, "errors": section_errors}


def main() -> None:
    out = sys.argv[2]
    wanted = sys.argv[3:] or list(SECTIONS)
    report = {"backend": keras.backend.backend(), "keras": keras.__version__}
    for name in wanted:
        t0 = time.perf_counter()
        R.start(name)
        try:
            SECTIONS[name]()
        except Exception:   # noqa: BLE001 - reported to the test, which fails with the traceback
            R.check(False, f"section {name} raised:\n{traceback.format_exc()}")
        R.close(name, t0)
    report["sections"] = R.sections
    with open(out, "w") as f:
        json.dump(report, f, indent=1)


if __name__ == "__main__":
    main()
