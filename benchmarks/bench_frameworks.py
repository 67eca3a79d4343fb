"""Benchmark of issue 11 (not a test): tierank's framework metrics against the libraries they replace.

Rows
----
- Keras, per backend (TensorFlow, JAX, PyTorch): one compiled ``update_state`` of tierank.keras.NDCG(k=10)
  and of keras_rs.metrics.NDCG(k=10) on a 256 x 100 batch (integer scores 0..9: heavy ties; graded labels).
  Compiled as ``stateless_update_state`` under tf.function(jit_compile=True) / jax.jit / torch.compile;
  the first call (compilation) is reported apart; the time is the median of the repeats, each synchronised
  (results copied to numpy).
  The eager ``update_state`` + ``result()`` (tierank's includes its NaN / mask checks on the host) is
  reported too.
- PyTorch: ``compute()`` of tierank.torch.RetrievalNormalizedDCG and torchmetrics.retrieval's on 10,000
  queries x 100 items (flat preds / target / indexes, already updated), CPU; the CUDA row says "no GPU"
  when torch.cuda is unavailable.

Each framework runs in its own subprocess (Keras reads its backend at import).

    python benchmarks/bench_frameworks.py [--repeat 7] [--rows keras,torch]

Prints a markdown table. It is a stand-alone script like bench_hashing.py and bench_engines.py (run.py's
task table is built from anchors.make_cases; see the module's report for how to add it there).
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import time

B, L, K = 256, 100, 10
N_QUERIES, N_ITEMS = 10_000, 100


def _batch(seed: int = 0):
    import numpy as np

    rng = np.random.default_rng(seed)
    scores = rng.integers(0, 10, (B, L)).astype("float32")
    labels = rng.integers(0, 4, (B, L)).astype("float32")
    labels[rng.random((B, L)) < 0.05] = -1.0   # some padding
    return labels, scores


def _compile(backend: str, fn):
    if backend == "tensorflow":
        import tensorflow as tf

        return tf.function(fn, jit_compile=True)
    if backend == "jax":
        import jax

        return jax.jit(fn)
    import torch

    return torch.compile(fn)


def _sync(x) -> None:
    import keras

    for leaf in keras.tree.flatten(x):
        keras.ops.convert_to_numpy(leaf)


def keras_worker(backend: str, repeat: int) -> list[dict]:
    """In a process with KERAS_BACKEND=backend: time one compiled update_state of each library's NDCG."""
    import warnings

    warnings.filterwarnings("ignore")
    import keras
    import keras_rs

    import tierank.keras

    y, s = _batch()
    yt, st = keras.ops.convert_to_tensor(y), keras.ops.convert_to_tensor(s)
    rows = []
    for lib, metric in (("tierank", tierank.keras.NDCG(k=K)), ("keras-rs", keras_rs.metrics.NDCG(k=K))):
        row = {"framework": f"Keras ({backend})", "library": lib,
               "what": f"NDCG@{K} update_state, {B} x {L} batch, compiled", "runs": repeat}
        try:
            variables = [v.value for v in metric.variables]

            def step(variables, y_true, y_pred, metric=metric):
                return metric.stateless_update_state(variables, y_true, y_pred)

            fn = _compile(backend, step)
            t0 = time.perf_counter()
            _sync(fn(variables, yt, st))
            row["first_s"] = time.perf_counter() - t0
            times = []
            for _ in range(repeat):
                t0 = time.perf_counter()
                _sync(fn(variables, yt, st))
                times.append(time.perf_counter() - t0)
            row["median_ms"] = 1e3 * statistics.median(times)
        except Exception as e:   # noqa: BLE001 - a row saying why
            row["note"] = f"failed: {type(e).__name__}: {str(e).splitlines()[0][:150]}"
        rows.append(row)
        eager = {"framework": f"Keras ({backend})", "library": lib,
                 "what": f"NDCG@{K} update_state + result, {B} x {L} batch, eager", "runs": repeat}
        metric.reset_state()
        t0 = time.perf_counter()
        metric.update_state(yt, st)
        _sync(metric.result())
        eager["first_s"] = time.perf_counter() - t0
        times = []
        for _ in range(repeat):
            t0 = time.perf_counter()
            metric.update_state(yt, st)
            _sync(metric.result())
            times.append(time.perf_counter() - t0)
        eager["median_ms"] = 1e3 * statistics.median(times)
        rows.append(eager)
    return rows


def torch_worker(repeat: int) -> list[dict]:
    import warnings

    warnings.filterwarnings("ignore")
    import torch
    import torchmetrics

    import tierank.torch

    g = torch.Generator().manual_seed(0)
    n = N_QUERIES * N_ITEMS
    preds = torch.randint(0, 10, (n,), generator=g).float()    # ties
    target = torch.randint(0, 2, (n,), generator=g)
    indexes = torch.arange(N_QUERIES).repeat_interleave(N_ITEMS)
    rows = []
    for lib, cls in (("tierank.torch", tierank.torch.RetrievalNormalizedDCG),
                     ("torchmetrics", torchmetrics.retrieval.RetrievalNormalizedDCG)):
        row = {"framework": "PyTorch (CPU)", "library": lib,
               "what": f"RetrievalNormalizedDCG.compute(), {N_QUERIES:,} queries x {N_ITEMS} items", "runs": repeat}
        metric = cls()
        metric.update(preds, target, indexes=indexes)
        times = []
        for i in range(repeat + 1):
            metric._computed = None   # torchmetrics caches compute(); time the computation every run
            t0 = time.perf_counter()
            value = metric.compute()
            (times.append if i else (lambda t: row.__setitem__("first_s", t)))(time.perf_counter() - t0)
        row["median_ms"] = 1e3 * statistics.median(times)
        row["value"] = float(value)
        rows.append(row)
    cuda = {"framework": "PyTorch (CUDA)", "library": "tierank.torch / torchmetrics",
            "what": "RetrievalNormalizedDCG.compute()", "runs": 0}
    if not torch.cuda.is_available():
        cuda["note"] = "no GPU"
    else:
        cuda["note"] = "not measured by this script yet"
    rows.append(cuda)
    return rows


def _run(args: list[str], env: dict, timeout: float) -> list[dict]:
    proc = subprocess.run([sys.executable, os.path.abspath(__file__), *args], capture_output=True, text=True,
                          env=env, timeout=timeout)
    for line in proc.stdout.splitlines()[::-1]:
        if line.startswith("ROWS "):
            return json.loads(line[5:])
    return [{"framework": " ".join(args), "library": "-", "what": "-", "runs": 0,
             "note": f"worker failed (exit {proc.returncode}): {proc.stderr.strip().splitlines()[-1:] }"}]


def rows(repeat: int = 7, which=("keras", "torch"), timeout: float = 900.0) -> list[dict]:
    """Every row, each framework in a fresh subprocess (callable from another benchmark script)."""
    out: list[dict] = []
    base = {k: v for k, v in os.environ.items() if k != "KERAS_BACKEND"}
    base.setdefault("TF_CPP_MIN_LOG_LEVEL", "3")
    if "keras" in which:
        for backend in ("tensorflow", "jax", "torch"):
            out += _run(["--worker", "keras", "--backend", backend, "--repeat", str(repeat)],
                        {**base, "KERAS_BACKEND": backend}, timeout)
    if "torch" in which:
        out += _run(["--worker", "torch", "--repeat", str(repeat)], base, timeout)
    return out


def table(rs: list[dict]) -> str:
    lines = ["| framework | library | what | median ms | first call s | runs | note |", "|---|---|---|---|---|---|---|"]
    for r in rs:
        med = f"{r['median_ms']:.2f}" if "median_ms" in r else "-"
        first = f"{r['first_s']:.2f}" if "first_s" in r else "-"
        note = r.get("note", "") or (f"value {r['value']:.6f}" if "value" in r else "")
        lines.append(f"| {r['framework']} | {r['library']} | {r['what']} | {med} | {first} | {r['runs']} | {note} |")
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--repeat", type=int, default=7)
    p.add_argument("--rows", default="keras,torch", help="comma-separated: keras, torch")
    p.add_argument("--worker", default=None, help=argparse.SUPPRESS)
    p.add_argument("--backend", default=None, help=argparse.SUPPRESS)
    a = p.parse_args(argv)
    if a.worker == "keras":
        print("ROWS " + json.dumps(keras_worker(a.backend, a.repeat)))
        return 0
    if a.worker == "torch":
        print("ROWS " + json.dumps(torch_worker(a.repeat)))
        return 0
    t0 = time.perf_counter()
    rs = rows(a.repeat, tuple(x.strip() for x in a.rows.split(",")))
    print(table(rs))
    print(f"\n{os.cpu_count()} CPU cores; load average {os.getloadavg()[0]:.1f}; {time.perf_counter() - t0:.0f} s")
    return 0


if __name__ == "__main__":
    sys.exit(main())
