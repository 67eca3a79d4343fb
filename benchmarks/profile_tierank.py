"""cProfile of one tierank call on the benchmark data, to see where its time goes.

    python benchmarks/profile_tierank.py                      # task 1, string ids, expected mode
    python benchmarks/profile_tierank.py --ids int --ties trec_eval --queries 1000 --top 30
    python benchmarks/profile_tierank.py --task 3             # the dense matrix of task 3
"""

from __future__ import annotations

import argparse
import cProfile
import pstats
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

import anchors
import data


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--task", type=int, choices=(1, 3), default=1)
    p.add_argument("--ids", choices=("str", "int"), default="str")
    p.add_argument("--ties", default="expected")
    p.add_argument("--queries", type=int, default=10_000, help="task 1: number of queries")
    p.add_argument("--top", type=int, default=20, help="how many functions to list")
    p.add_argument("--sort", default="tottime", help="pstats sort key (tottime, cumulative, ...)")
    a = p.parse_args()
    import tierank

    if a.task == 1:
        src = data.run_frames(a.queries, a.ids)

        def call():
            return tierank.evaluate(src["qrels"], src["run"], anchors.MEASURES, ties=a.ties)
    else:
        m = data.dense_matrix(1000, 100_000)

        def call():
            return tierank.evaluate_matrix(m["relevance"], distances=m["distances"],
                                           measures=anchors.MATRIX_MEASURES, ties=a.ties)
    call()  # warm-up
    t = time.perf_counter()
    call()
    print(f"one call: {time.perf_counter() - t:.2f} s (without the profiler)")
    prof = cProfile.Profile()
    prof.enable()
    call()
    prof.disable()
    pstats.Stats(prof).sort_stats(a.sort).print_stats(a.top)


if __name__ == "__main__":
    main()
