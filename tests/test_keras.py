"""tierank.keras on the TensorFlow, JAX and PyTorch backends, each in its own process.

Keras reads KERAS_BACKEND once, at import, so every backend runs tests/keras_backend_check.py in a fresh
subprocess that does all of that backend's checks and writes a JSON report (the three run side by side,
started once per test session). Each test below reads one section of one backend's report:

- core: eager, every metric x tie mode x k x dtype (float32 rtol 1e-5, float64 1e-12) equals
  tierank.evaluate_matrix on the same heavily tied, padded batch in the same tie mode ("lower" / "upper"
  also its bounds, "random" its input order after the seeded column permutation); per-item weights with ties equal the
  mean over every ordering of keras-rs's formulas (brute force);
- compiled: the same under tf.function(jit_compile=True) / jax.jit / torch.compile;
- fit: model.fit / model.evaluate with metrics=[...] and weighted_metrics=[...] on a model with tied scores;
- kerasrs: on tie-free data every metric equals keras-rs's (sample weights scalar / per list / per item /
  all zero, dict y_true with a mask, k=None and k=3, custom gain_fn and rank_discount_fn);
- config: get_config / from_config and Keras serialization round trips, keras-rs configs;
- errors: shape mismatch, NaN, bad k, a mask that does not match the labels: tierank.InputError;
- retrieval: tierank.keras.retrieval on the backend's tensors against brute force over tie orders.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

HERE = Path(__file__).resolve().parent
BACKENDS = ("tensorflow", "jax", "torch")
SECTIONS = ("core", "compiled", "fit", "kerasrs", "config", "errors", "retrieval")
TIMEOUT = 600


@pytest.fixture(scope="module")
def reports(tmp_path_factory):
    """Start one subprocess per backend (in parallel) and read their JSON reports."""
    out = tmp_path_factory.mktemp("keras")
    env = {k: v for k, v in os.environ.items() if k not in ("KERAS_BACKEND", "PYTHONWARNINGS")}
    env.setdefault("OMP_NUM_THREADS", "1")   # three processes on a shared machine
    procs = {}
    for backend in BACKENDS:
        procs[backend] = subprocess.Popen(
            [sys.executable, str(HERE / "keras_backend_check.py"), backend, str(out / f"{backend}.json")],
            stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, env=env, cwd=str(HERE.parent))
    result = {}
    for backend, proc in procs.items():
        try:
            log, _ = proc.communicate(timeout=TIMEOUT)
        except subprocess.TimeoutExpired:
            proc.kill()
            log, _ = proc.communicate()
            log = f"timed out after {TIMEOUT} s\n{log}"
        path = out / f"{backend}.json"
        if proc.returncode != 0 or not path.exists():
            result[backend] = {"crashed": f"exit code {proc.returncode}\n{log[-4000:]}"}
        else:
            result[backend] = json.loads(path.read_text())
    return result


@pytest.mark.parametrize("section", SECTIONS)
@pytest.mark.parametrize("backend", BACKENDS)
def test_backend_section(reports, backend, section):
    report = reports[backend]
    assert "crashed" not in report, report.get("crashed")
    assert report["backend"] == backend
    sec = report["sections"][section]
    assert not sec["failures"], "\n".join(sec["failures"])
    assert sec["checks"] > 0, f"{backend} {section}: nothing was checked"


def test_every_combination_was_compared(reports):
    """The core section compared 6 metrics x 2 k x 7 tie modes x 2 dtypes x 4 checks, plus extras."""
    for backend in BACKENDS:
        report = reports[backend]
        if "crashed" in report:
            pytest.fail(f"{backend} crashed")
        assert report["sections"]["core"]["checks"] >= 6 * 2 * 7 * 2 * 4
        assert report["sections"]["kerasrs"]["checks"] >= 6 * 2 * 5 * 2


def test_example_keras_ranking_prints_both_ndcgs():
    """examples/keras_ranking.py trains for a few epochs and prints keras-rs's and tierank's NDCG each epoch;
    tierank's is the same on both evaluations of an epoch and lies within its bounds."""
    import re

    env = {k: v for k, v in os.environ.items() if k != "PYTHONWARNINGS"}
    env["KERAS_BACKEND"] = "jax"
    proc = subprocess.run([sys.executable, str(HERE.parent / "examples" / "keras_ranking.py")], capture_output=True,
                          text=True, env=env, timeout=300, cwd=str(HERE.parent))
    assert proc.returncode == 0, proc.stderr[-3000:]
    row = re.compile(r"^\s*(\d+) \|\s+(\d+)% \| ([\d.]+), again ([\d.]+)\s+\| ([\d.]+), again ([\d.]+) \| "
                     r"\[([\d.]+), ([\d.]+)\]$")
    rows = [row.match(line) for line in proc.stdout.splitlines()]
    rows = [[float(g) for g in r.groups()] for r in rows if r]
    assert len(rows) >= 4, proc.stdout
    for _epoch, _tied, kr1, kr2, ours1, ours2, low, high in rows:
        assert 0.0 <= kr1 <= 1.0 and 0.0 <= kr2 <= 1.0
        assert ours1 == ours2 and low <= ours1 <= high
    assert rows[0][1] > 50   # ties early on
