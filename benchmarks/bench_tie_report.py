"""Benchmark of issue 13 (not a test): the tie report against an evaluation with bounds, same files.

The task-2 files of benchmarks/data.py (a 10-million-line TREC run of 10,000 queries x 1,000 documents,
heavy ties, and its qrels). Each row is one ``tierank`` command in a fresh process; time is its wall
time, memory the peak resident set of that process (``ru_maxrss`` of the child).

    python benchmarks/bench_tie_report.py [--queries 10000]

Rows: ``tierank QRELS RUN -m nDCG@10 AP P@10 --bounds`` and ``tierank ties QRELS RUN -m nDCG@10 AP P@10``
(target: the tie report within 1.5x of the evaluation with bounds in time and in memory).
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
MEASURES = ["nDCG@10", "AP", "P@10"]


def measure(args: list[str]) -> dict:
    """Wall time and peak RSS (MB) of ``python -m tierank ARGS`` in a child process."""
    with tempfile.TemporaryFile(mode="w+") as err:
        t0 = time.perf_counter()
        child = subprocess.Popen([sys.executable, "-m", "tierank", *args], stdout=subprocess.DEVNULL, stderr=err)
        _, status, usage = os.wait4(child.pid, 0)
        seconds = time.perf_counter() - t0
        if status:
            err.seek(0)
            return {"failed": err.read().strip().splitlines()[-1:]}
    return {"seconds": seconds, "peak_mb": usage.ru_maxrss / 1024}


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--queries", type=int, default=10_000)
    a = p.parse_args(argv)
    from data import trec_files

    files = trec_files(a.queries)
    qrels, run = str(files["qrels"]), str(files["run"])
    rows = {"evaluate --bounds": [qrels, run, "-m", *MEASURES, "--bounds"],
            "ties (tie report)": ["ties", qrels, run, "-m", *MEASURES]}
    print(f"{a.queries:,} queries x 1,000 documents, TREC files; measures {', '.join(MEASURES)}")
    print("| command | seconds | peak RSS MB |\n|---|---:|---:|")
    res = {}
    for label, args in rows.items():
        res[label] = r = measure(args)
        print(f"| {label} | {r['seconds']:.2f} | {r['peak_mb']:.0f} |" if "seconds" in r else
              f"| {label} | failed: {r['failed']} | |", flush=True)
    if all("seconds" in r for r in res.values()):
        base, ties = res["evaluate --bounds"], res["ties (tie report)"]
        t, m = ties["seconds"] / base["seconds"], ties["peak_mb"] / base["peak_mb"]
        print(f"\ntarget {'met' if max(t, m) <= 1.5 else 'MISSED'}: the tie report takes {t:.2f}x the time and "
              f"{m:.2f}x the memory of the evaluation with bounds (goal <= 1.5x)")
    print("RESULT " + json.dumps(res))
    return 0


if __name__ == "__main__":
    sys.exit(main())
