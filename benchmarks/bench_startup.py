"""Benchmark of start-up time (not a test): how long a fresh process takes before tierank does any work.

Two pairs, each a tierank command against the floor it cannot go below (the libraries it needs, imported
and nothing else):

* ``tierank QRELS RUN -m map`` on trec_eval's own test files (tests/data/trec_eval/qrels.test and
  results.test: 3 queries, 1,500 lines), against ``python -c "import numpy, pyarrow.csv"``;
* ``python -c "import tierank"`` against ``python -c "import numpy, pyarrow"``.

Every run is a fresh process; the two commands of a pair take turns (A B A B ...), so that a change in
the machine's load hits both alike; each time is the median of ``--repeat`` runs (default 10), with the
range in brackets. The target is a ratio of at most 1.3x the floor.

    python benchmarks/bench_startup.py [--repeat 10] [--module] [--split] [--instructions]

The command runs the console script installed next to the interpreter (``bin/tierank``), or
``python -m tierank`` with ``--module`` (or when there is no script); the output says which, and which
tierank was imported (``PYTHONPATH`` is passed on). The package's bytecode is compiled first and the
processes run without ``PYTHONDONTWRITEBYTECODE``, as an installed package starts: without its ``.pyc``
files every start would compile tierank's sources again (about 0.15 s here).

``--split`` also says where the command's time goes, in CPU time (user + system, the medians of the same
number of runs, taking turns; less moved by the machine's load than wall time): the floor, the floor and
``import tierank.cli`` (the modules the command loads before it reads a file), the whole command.

``--instructions`` also counts the instructions of the first pair, one run each under valgrind's callgrind
(every thread; not the kernel's work, nor waits): the same count from run to run, whatever the machine's
load, with ``OPENBLAS_NUM_THREADS=1`` (numpy's BLAS thread spins while the floor loads, a count that
varies) and ``PYTHONHASHSEED=0``.
"""

from __future__ import annotations

import argparse
import os
import re
import resource
import statistics
import tempfile
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
DATA = ROOT / "tests" / "data" / "trec_eval"
TARGET = 1.3


#: the environment of the timed processes: bytecode read (and written), as an installed package runs
ENV = {k: v for k, v in os.environ.items() if k != "PYTHONDONTWRITEBYTECODE"}


def wall_time(argv: list[str]) -> float:
    """Seconds from starting ``argv`` to its exit (its output discarded); a failure is an error."""
    t0 = time.perf_counter()
    proc = subprocess.run(argv, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, env=ENV)
    seconds = time.perf_counter() - t0
    if proc.returncode:
        raise SystemExit(f"{' '.join(argv)} failed (exit {proc.returncode}): {proc.stderr.decode()[-500:]}")
    return seconds


def alternate(a: list[str], b: list[str], repeat: int) -> tuple[list[float], list[float]]:
    """``repeat`` wall times of each command, run in turn: A B A B ... (one untimed run of each first)."""
    wall_time(a), wall_time(b)      # the files and libraries into the page cache
    times_a, times_b = [], []
    for _ in range(repeat):
        times_a.append(wall_time(a))
        times_b.append(wall_time(b))
    return times_a, times_b


def cpu_time(argv: list[str]) -> float:
    """CPU seconds (user + system) of running ``argv`` to its exit (its output discarded)."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    subprocess.run(argv, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, env=ENV, check=True)
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    return (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)


def split(commands: list[tuple[str, list[str]]], repeat: int) -> None:
    """The median CPU time of each command (run in turn, ``repeat`` times), and its share of the first's."""
    times: dict[str, list[float]] = {label: [] for label, _ in commands}
    for _ in range(repeat):
        for label, argv in commands:
            times[label].append(cpu_time(argv))
    floor = statistics.median(times[commands[0][0]])
    print("| CPU time of | seconds | x floor |\n|---|---:|---:|")
    for label, _ in commands:
        cpu = statistics.median(times[label])
        print(f"| `{label}` | {cpu:.3f} | {cpu / floor:.2f}x |")


def instructions(argv: list[str]) -> int:
    """The instructions ``argv`` executes (all its threads), counted by valgrind's callgrind."""
    with tempfile.TemporaryDirectory() as tmp:
        out = os.path.join(tmp, "callgrind.out")
        env = {**ENV, "OPENBLAS_NUM_THREADS": "1", "PYTHONHASHSEED": "0"}
        subprocess.run(["valgrind", "--tool=callgrind", f"--callgrind-out-file={out}", *argv], env=env, check=True,
                       stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        with open(out) as fh:
            return int(re.search(r"^(?:summary|totals): (\d+)", fh.read(), re.M)[1])


def tierank_command(module: bool) -> tuple[list[str], str]:
    """The command that starts tierank, and how to say it."""
    script = Path(sys.executable).with_name("tierank")
    if not module and script.is_file():
        stale = "tierank.__main__" not in script.read_text(errors="replace")   # installed before the entry moved
        return [str(script)], f"the console script {script}" + (
            " (STALE: it calls tierank.cli:run; reinstall the package for tierank.__main__:run)" if stale else "")
    return [sys.executable, "-m", "tierank"], f"{sys.executable} -m tierank"


def _cell(times: list[float]) -> str:
    return f"{statistics.median(times):.3f} [{min(times):.3f}-{max(times):.3f}]"


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--repeat", type=int, default=10, help="timed runs of each command (default 10)")
    p.add_argument("--module", action="store_true", help="run python -m tierank, not the console script")
    p.add_argument("--split", action="store_true", help="also the CPU time of the floor, the imports, the command")
    p.add_argument("--instructions", action="store_true", help="also the instructions of the first pair (valgrind)")
    a = p.parse_args(argv)
    py = sys.executable
    tierank, how = tierank_command(a.module)
    imported = subprocess.run([py, "-c", "import tierank; print(tierank.__file__, tierank.__version__)"],
                              capture_output=True, text=True, check=True).stdout.strip()
    package = Path(imported.rsplit(" ", 1)[0]).parent
    subprocess.run([py, "-m", "compileall", "-q", str(package)], check=True, env=ENV, stdout=subprocess.DEVNULL)
    qrels, run = str(DATA / "qrels.test"), str(DATA / "results.test")
    pairs = [
        ("tierank qrels.test results.test -m map", [*tierank, qrels, run, "-m", "map", "--no-progress"],
         'python -c "import numpy, pyarrow.csv"', [py, "-c", "import numpy, pyarrow.csv"]),
        ('python -c "import tierank"', [py, "-c", "import tierank"],
         'python -c "import numpy, pyarrow"', [py, "-c", "import numpy, pyarrow"]),
    ]
    print(f"tierank: {how}; imports {imported}; PYTHONPATH={os.environ.get('PYTHONPATH', '')!r}")
    print(f"each row: median of {a.repeat} fresh processes, the two commands of a pair taking turns "
          "(min-max in brackets)")
    print()
    print("| command | seconds | floor | floor seconds | ratio |\n|---|---:|---|---:|---:|")
    verdicts = []
    for label, cmd, floor_label, floor in pairs:
        times, floor_times = alternate(cmd, floor, a.repeat)
        ratio = statistics.median(times) / statistics.median(floor_times)
        print(f"| `{label}` | {_cell(times)} | `{floor_label}` | {_cell(floor_times)} | {ratio:.2f}x |",
              flush=True)
        verdicts.append(f"`target {'met   ' if ratio <= TARGET else 'MISSED'} {label}: {ratio:.2f}x "
                        f"{floor_label} (goal <= {TARGET:g}x)`  ")
    print()
    print("\n".join(verdicts))
    if a.split:
        print()
        split([('python -c "import numpy, pyarrow.csv"', pairs[0][3]),
               ('python -c "import numpy, pyarrow.csv, tierank.cli"', [py, "-c", "import numpy, pyarrow.csv, tierank.cli"]),
               (pairs[0][0], pairs[0][1])], a.repeat)
    if a.instructions:
        label, cmd, floor_label, floor = pairs[0]
        counts = instructions(cmd), instructions(floor)
        print(f"\n| instructions of | count | ratio |\n|---|---:|---:|\n| `{label}` | {counts[0]:,} | "
              f"{counts[0] / counts[1]:.3f}x |\n| `{floor_label}` | {counts[1]:,} | 1x |")
    return 0


if __name__ == "__main__":
    sys.exit(main())
