"""tierank benchmark: tierank against pytrec_eval (trec_eval in C), ranx, ir-measures, scikit-learn,
torchmetrics and the floor (read the input once, sort it once), on the same generated data, in one table.

    python benchmarks/run.py                 # everything, about 20 min on 2 cores
    python benchmarks/run.py --quick         # small sizes, a smoke run (~3 min)
    python benchmarks/run.py --tasks 1 --docs  # writes docs/benchmarks.md and README.md's summary

Every measurement runs in a fresh subprocess (see measure.py); a library that is missing, fails or times out
gives a row saying why. See benchmarks/README.md for what each task and column means.
"""

from __future__ import annotations

import argparse
import datetime as _dt
import importlib.metadata as md
import json
import os
import platform
import re
import statistics
import subprocess
import sys
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent
sys.path.insert(0, str(HERE))

import anchors
from measure import run_subprocess

# the full table goes between these markers of docs/benchmarks.md, a short summary between the others in
# README.md
START, END = "<!-- bench:start -->", "<!-- bench:end -->"
SUMMARY_START, SUMMARY_END = "<!-- bench-summary:start -->", "<!-- bench-summary:end -->"
PAGE = ROOT / "docs" / "benchmarks.md"
LIBS = ["tierank", "numpy", "pandas", "pyarrow", "pytrec-eval-terrier", "ranx", "numba", "ir-measures",
        "scikit-learn", "torch", "torchmetrics"]
TASK_TITLES = {
    "1": "TREC-style run in memory (nDCG@10, AP, P@10, R@100, RR)",
    "2": "the same from TREC files on disk (read + evaluate)",
    "3": "dense matrix of integer distances (AP, nDCG@100)",
    "4": "hash codes (AP, nDCG@100, P@1000)",
    "5": "scaling: 10x fewer and 10x more queries",
}


# ------------------------------------------------------------------------------------ machine info

def _cpu_model() -> str:
    try:
        with open("/proc/cpuinfo") as f:
            for line in f:
                if line.startswith("model name"):
                    return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or platform.machine()


def _ram_gb() -> float:
    try:
        with open("/proc/meminfo") as f:
            for line in f:
                if line.startswith("MemTotal:"):
                    return int(line.split()[1]) / 2**20
    except OSError:
        pass
    return float("nan")


def _git_rev() -> str:
    try:
        rev = subprocess.run(["git", "-C", str(ROOT), "rev-parse", "--short", "HEAD"], check=False,
                             capture_output=True, text=True, timeout=10).stdout.strip()
        dirty = subprocess.run(["git", "-C", str(ROOT), "status", "--porcelain", "--untracked-files=no",
                                "src"], check=False, capture_output=True, text=True, timeout=10).stdout.strip()
        return rev + ("+local changes" if dirty else "") if rev else "unknown"
    except (OSError, subprocess.SubprocessError):
        return "unknown"


def machine_info(load_start: tuple | None = None) -> list[str]:
    versions = []
    for lib in LIBS:
        try:
            versions.append(f"{lib} {md.version(lib)}")
        except md.PackageNotFoundError:
            versions.append(f"{lib} (not installed)")
    env = [f"{k}={os.environ[k]}" for k in ("OPENBLAS_CORETYPE", "OPENBLAS_L2_SIZE", "NUMBA_NUM_THREADS",
                                            "OMP_NUM_THREADS") if k in os.environ]
    return [
        (f"Machine: {_cpu_model()}, {os.cpu_count()} cores, {_ram_gb():.0f} GiB RAM, "
         f"{platform.system()} {platform.release()}"),
        f"Python {platform.python_version()}; " + ", ".join(versions),
        f"tierank commit {_git_rev()}" + (f"; env {' '.join(env)}" if env else "")
        + (f"; load average {load_start[0]:.1f} at the start, {os.getloadavg()[0]:.1f} at the end "
           "(other processes on the machine slow the timings)" if load_start else ""),
    ]


# ------------------------------------------------------------------------------------ the table

def _t(x) -> str:
    if x is None:
        return "-"
    if x >= 100:
        return f"{x:.0f}"
    if x >= 10:
        return f"{x:.1f}"
    if x >= 1:
        return f"{x:.2f}"
    return f"{x:.3f}"


def _mb(x) -> str:
    return "-" if x is None else f"{max(x, 0):,.0f}"


def _median(xs):
    return statistics.median(xs) if xs else None


def summarise(case, res: dict) -> dict:
    row = {"task": case.task, "data": case.dataset, "library": case.library, "mode": case.mode,
           "group": case.group, "floor": case.floor, "jit": case.jit, "key": case.key}
    if "error" in res:
        row["note"] = res["error"]
        row["failed"] = True
        return row
    bt = res["build_times"]
    build = _median(bt[1:] if case.jit and len(bt) > 1 else bt)
    comp = _median(res["times"])
    row.update(build=build, compute=comp, first=res["first"], total=(build or 0) + comp,
               mem=res["mem_mb"], mem_build=res.get("mem_build_mb"), runs=len(res["times"]),
               means=res["means"], failed=False)
    notes = []
    if case.jit:
        notes.append("JIT: the first call includes compilation"
                     + (f"; first build {_t(bt[0])} s" if bt and bt[0] > 1e-3 else ""))
    if res.get("cold"):
        notes.append("one cold run (first call > budget)")
    if not res.get("mem_exact", True):
        notes.append("peak = lifetime ru_maxrss")
    row["note"] = "; ".join(notes)
    return row


def add_ratios(rows: list[dict]) -> None:
    """x tierank: compute / the group's tierank expected compute (else its first tierank row)."""
    ref: dict = {}
    for r in rows:
        if r["library"] == "tierank" and not r.get("failed") and (
                (r["library"], r["mode"]) == anchors.REFERENCE or r["group"] not in ref):
            ref[r["group"]] = r["compute"]
    for r in rows:
        base = ref.get(r["group"])
        r["ratio"] = (r["compute"] / base) if base and not r.get("failed") else None


def table(rows: list[dict]) -> list[str]:
    head = ["task", "data", "library", "mode / input", "build s", "compute s", "first call s",
            "build+compute s", "peak MB", "build peak MB", "x tierank", "runs", "note"]
    out = ["| " + " | ".join(head) + " |", "|" + "|".join("---" for _ in head) + "|"]
    for r in rows:
        lib = f"**{r['library']}**" if r["library"] == "tierank" else r["library"]
        if r.get("failed"):
            cells = [r["task"], r["data"], lib, r["mode"]] + ["-"] * 8 + [r["note"].replace("|", "/")]
        else:
            cells = [r["task"], r["data"], lib, r["mode"], _t(r["build"]) if r["build"] else "0",
                     _t(r["compute"]), _t(r["first"]), _t(r["total"]), _mb(r["mem"]), _mb(r["mem_build"]),
                     f"{r['ratio']:.2f}x" if r["ratio"] is not None else "-", str(r["runs"]),
                     r["note"].replace("|", "/")]
        out.append("| " + " | ".join(cells) + " |")
    return out


# ------------------------------------------------------------------------------------ checks, targets

def _find(rows, group, library, mode_prefix):
    for r in rows:
        if r["group"] == group and r["library"] == library and r["mode"].startswith(mode_prefix) \
                and not r.get("failed"):
            return r
    return None


def checks(rows: list[dict]) -> list[str]:
    """tierank's trec_eval mode must reproduce pytrec_eval (and its expected nDCG sklearn's tie-averaged one)."""
    out = []
    for group in dict.fromkeys(r["group"] for r in rows):
        pairs = [("tierank", "trec_eval", "pytrec_eval", "trec_eval"),
                 ("tierank", "expected", "scikit-learn", "ndcg_score"),
                 ("tierank", "expected", "tierank", "evaluate_matrix")]
        for lib_a, mode_a, lib_b, mode_b in pairs:
            a, b = _find(rows, group, lib_a, mode_a), _find(rows, group, lib_b, mode_b)
            if not a or not b:
                continue
            common = [m for m in b["means"] if m in a["means"]]
            if not common:
                continue
            diff = {m: abs(a["means"][m] - b["means"][m]) for m in common}
            worst = max(diff, key=diff.get)
            what = (f"{lib_a} {mode_a} vs {lib_b} {b['mode'] if lib_b == lib_a else ''}".rstrip()
                    + f" ({a['data']}): max |difference| {diff[worst]:.1e} ({worst})")
            out.append(("check OK: " if diff[worst] <= 1e-6 else "WARNING: means differ, ") + what)
    return out


def targets(rows: list[dict]) -> list[str]:
    """The issue's targets for tierank in expected mode, each anchor from its natural input."""
    out = []
    for r in rows:
        if r["task"] != "1" or (r["library"], r["mode"]) != anchors.REFERENCE or r.get("failed"):
            continue
        g = r["group"]
        strings = "-str-" in g
        want = {"pytrec_eval": 1.5 if strings else 5.0, "ranx": 3.0 if strings else 5.0}
        for lib, goal in want.items():
            anchors_rows = [a for a in rows if a["group"] == g and a["library"] == lib and not a.get("failed")]
            if not anchors_rows:
                out.append(f"target ? {r['data']}: no {lib} row to compare with")
                continue
            best = min(anchors_rows, key=lambda a: a["compute"])
            speed = best["compute"] / r["compute"]
            out.append(f"target {'met ' if speed >= goal else 'MISSED'} {r['data']}: tierank "
                       f"{_t(r['compute'])} s vs {lib} ({best['mode']}) {_t(best['compute'])} s = "
                       f"{speed:.1f}x faster (goal >= {goal:g}x)")
        a = _find(rows, g, "tierank", "all_trec")
        if a:
            k = a["compute"] / r["compute"]
            out.append(f"target {'met ' if k <= 3 else 'MISSED'} {r['data']}: all_trec {_t(a['compute'])} s = "
                       f"{k:.1f}x the five measures ({_t(r['compute'])} s) (goal <= 3x)")
        p = _find(rows, g, "pytrec_eval", "trec_eval")
        if p:
            ok = r["mem"] <= p["mem"]
            out.append(f"target {'met ' if ok else 'MISSED'} {r['data']}: peak memory tierank {_mb(r['mem'])} MB "
                       f"vs pytrec_eval {_mb(p['mem'])} MB (goal: no larger)")
    for r in rows:
        if r["task"] == "3" and (r["library"], r["mode"]) == anchors.REFERENCE and not r.get("failed"):
            f = _find(rows, r["group"], "floor", "row-wise np.argsort")
            if f:
                k = r["compute"] / f["compute"]
                out.append(f"target {'met ' if k <= 3 else 'MISSED'} {r['data']}: tierank {_t(r['compute'])} s "
                           f"= {k:.1f}x one row-wise np.argsort ({_t(f['compute'])} s) (goal <= 3x)")
    return out


# ------------------------------------------------------------------------------------ output

# the benchmarks of single features, each its own script run in a subprocess: (title, script, full args,
# quick args); their tables follow the main one
EXTRAS = [
    ("Files larger than memory: streaming TREC text and Parquet (issue 12)", "bench_streaming.py",
     ["--queries", "10000", "--repeat", "3"], ["--queries", "1000"]),
    ("Spark and Dask against Spark MLlib's RankingMetrics, Parquet on disk (issue 12)", "bench_engines.py",
     ["--queries", "100000", "--rows", "spark,dask,mllib,stream,read", "--repeat", "3"], ["--queries", "200"]),
    ("The tie report against the evaluation with bounds (issue 13)", "bench_tie_report.py",
     ["--queries", "10000"], ["--queries", "1000"]),
    ("Training-loop metrics: Keras (each backend, compiled) and PyTorch (issue 11)", "bench_frameworks.py",
     ["--repeat", "7"], ["--repeat", "3"]),
    ("Start-up: a fresh process against importing numpy and pyarrow (issue 28)", "bench_startup.py",
     ["--repeat", "10"], ["--repeat", "3"]),
    ("tierank.pytrec_eval against pytrec_eval from the same dicts, both tie modes (issue 29)", "bench_pytrec_eval.py",
     ["--queries", "2000,10000"], ["--queries", "200"]),
    ("evaluate_embeddings against its floors: int8 GEMM, Hamming distances (issue 30)", "bench_embeddings.py",
     [], ["--quick"]),
]


def run_extras(config: dict, timeout: float) -> list[str]:
    """Each extra benchmark's own output, under its title (a failure is reported, not raised)."""
    lines: list[str] = []
    for title, script, full, quick in EXTRAS:
        sys.stderr.write(f"{script} ... ")
        sys.stderr.flush()
        t0 = time.perf_counter()
        try:
            proc = subprocess.run([sys.executable, str(HERE / script), *(quick if config["quick"] else full)],
                                  capture_output=True, text=True, timeout=timeout * 4)
            out = [x for x in proc.stdout.splitlines() if not x.startswith("RESULT ")]
            if proc.returncode:
                out.append(f"failed (exit {proc.returncode}): {proc.stderr.strip().splitlines()[-1:]}")
        except subprocess.TimeoutExpired:
            out = [f"stopped after {timeout * 4:.0f} s"]
        sys.stderr.write(f"{time.perf_counter() - t0:.0f} s\n")
        body = out if any(x.startswith("|") for x in out) else ["```", *out, "```"]   # a markdown table, or text
        lines += [f"### {title}", f"`python benchmarks/{script} {' '.join(quick if config['quick'] else full)}`",
                  "", *body, ""]
    return lines


def render(rows, info, elapsed, config, extras=()) -> str:
    lines = [f"tierank benchmark, {_dt.date.today().isoformat()}"
             f"{' (--quick)' if config['quick'] else ''}; tasks "
             + ", ".join(f"{t}: {TASK_TITLES[str(t)]}" for t in config["tasks"]), ""]
    lines += [f"- {x}" for x in info]
    lines += ["", *table(rows), ""]
    lines += [("Times are medians of the runs after a first (warm-up) call; the first call is shown apart. "
              "build = from the common pandas DataFrames (or files, matrices) to the library's natural input; "
              "compute = from that input to the means (for files: read + evaluate). "
              "peak MB = peak RSS during compute minus RSS once the input exists. "
              "x tierank = compute time / tierank expected compute time on the same data."), ""]
    lines += [f"- {x}" for x in targets(rows) + checks(rows)]
    if extras:
        lines += ["", *extras]
    cmd = " ".join(["python benchmarks/run.py", *config["argv"]])
    lines += ["", f"Generated by `{cmd}` in {elapsed / 60:.1f} min."]
    return "\n".join(lines) + "\n"


def summary(rows: list[dict], info: list[str], page: str) -> str:
    """A few lines for README.md: per data set, tierank's time and each other library's fastest, with
    where the full table is (``page``, a link relative to README.md)."""
    lines = []
    for group in dict.fromkeys(r["group"] for r in rows):
        done = [r for r in rows if r["group"] == group and not r.get("failed") and not r["floor"]]
        ours = next((r for r in done if (r["library"], r["mode"]) == anchors.REFERENCE), None)
        if ours is None:
            continue
        others = {}
        for r in done:
            if r["library"] != "tierank" and (r["library"] not in others
                                               or r["compute"] < others[r["library"]]["compute"]):
                others[r["library"]] = r
        if not others:
            continue
        them = ", ".join(f"{lib} {_t(r['compute'])} s ({r['compute'] / ours['compute']:.1f}x)"
                         for lib, r in others.items())
        lines.append(f"- {ours['data']} (task {ours['task']}): tierank {_t(ours['compute'])} s; {them}")
    machine = next((x[len("Machine: "):] for x in info if x.startswith("Machine: ")), "this machine")
    return "\n".join([
        f"`make bench`, {_dt.date.today().isoformat()}, on {machine}: compute time from each library's "
        "natural input to the means, tierank's tie-aware (`expected`) value against the anchors' fastest "
        "way (in brackets: their time / tierank's).", "", *lines, "",
        f"The full table (memory, first calls, floors, the targets, and the benchmarks of streaming, Spark "
        f"and Dask, the tie report, Keras and PyTorch, start-up time) is in [{page}]({page})."]) + "\n"


def write_block(path: Path, text: str, start: str = START, end: str = END) -> None:
    """Replace what lies between the markers ``start`` and ``end`` of ``path`` by ``text``; the markers
    must be there (a page without them is an error, not a page with a block appended)."""
    old = path.read_text(encoding="utf-8")
    if start not in old or end not in old:
        raise SystemExit(f"{path} has no {start} ... {end} block to rewrite")
    block = f"{start}\n{text}{end}"
    new = re.sub(re.escape(start) + r".*?" + re.escape(end), lambda _: block, old, count=1, flags=re.DOTALL)
    path.write_text(new, encoding="utf-8")


def main(argv: list[str] | None = None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0],
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--quick", action="store_true", help="small sizes for a smoke run (1,000 queries, ...)")
    p.add_argument("--tasks", default="1,2,3,4,5", help="comma-separated task numbers (default: all)")
    p.add_argument("--only", default="", help="run only cases whose key contains this text (e.g. 'tierank')")
    p.add_argument("--repeat", type=int, default=None,
                   help="timed runs after the warm-up, at most (default 5, quick 3)")
    p.add_argument("--budget", type=float, default=None,
                   help="seconds of timed runs per measurement before stopping early (default 15, quick 3)")
    p.add_argument("--timeout", type=float, default=None,
                   help="seconds per measurement subprocess (default 900, quick 120)")
    p.add_argument("--thorough", action="store_true",
                   help="task 1: also repeat, for integer ids, the rows that do not depend on the id type")
    p.add_argument("--big-strings", action="store_true",
                   help="task 5: also string ids at 10x more queries (about 8 min more)")
    p.add_argument("--out", default=str(HERE / "out" / "table.md"), help="where to write the table")
    p.add_argument("--docs", nargs="?", const=str(PAGE), default=None,
                   help="rewrite the table in docs/benchmarks.md (or the page given) and the summary in README.md")
    p.add_argument("--readme", default=str(ROOT / "README.md"),
                   help="the README whose summary --docs rewrites (default: the project's README.md)")
    p.add_argument("--list", action="store_true", help="list the cases and exit")
    p.add_argument("--no-extras", action="store_true",
                   help="skip the feature benchmarks (streaming, Spark/Dask, tie report, Keras/PyTorch, start-up)")
    a = p.parse_args(argv)
    config = {"quick": a.quick, "tasks": sorted({int(t) for t in a.tasks.split(",") if t.strip()}),
              "repeat": a.repeat or (3 if a.quick else 5), "budget": a.budget if a.budget is not None else (3.0 if a.quick else 15.0),
              "big_strings": a.big_strings, "thorough": a.thorough, "argv": argv}
    timeout = a.timeout if a.timeout is not None else (120.0 if a.quick else 900.0)
    cases = [c for c in anchors.make_cases(config) if a.only in c.key]
    if a.list:
        for c in cases:
            print(c.key)
        return 0
    worker_config = {k: v for k, v in config.items() if k != "argv"}
    t0 = time.perf_counter()
    load_start = os.getloadavg() if hasattr(os, "getloadavg") else None
    rows = []
    prepared: set = set()
    for i, case in enumerate(cases, 1):
        if case.group not in prepared:  # generate and cache the data once, outside any measurement
            prepared.add(case.group)
            sys.stderr.write(f"preparing data of {case.dataset} ...\n")
            run_subprocess(worker_config, case.key, timeout, prepare=True)
        sys.stderr.write(f"[{i}/{len(cases)}] {case.key} ... ")
        sys.stderr.flush()
        res = run_subprocess(worker_config, case.key, timeout)
        row = summarise(case, res)
        rows.append(row)
        sys.stderr.write((f"-> {row['note']}" if row.get("failed") else
                          f"compute {_t(row['compute'])} s, build {_t(row['build'])} s, "
                          f"peak {_mb(row['mem'])} MB") + f" [{res.get('wall', 0):.0f} s]\n")
    add_ratios(rows)
    extras = [] if a.no_extras or a.only else run_extras(config, timeout)
    info = machine_info(load_start)
    text = render(rows, info, time.perf_counter() - t0, config, extras)
    print(text)
    out = Path(a.out)
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(text)
    (out.with_suffix(".json")).write_text(json.dumps(rows, indent=1, default=str))
    sys.stderr.write(f"table written to {out}\n")
    if a.docs:
        page, readme = Path(a.docs).resolve(), Path(a.readme).resolve()
        write_block(page, text)
        write_block(readme, summary(rows, info, os.path.relpath(page, readme.parent)),
                    SUMMARY_START, SUMMARY_END)
        sys.stderr.write(f"table rewritten in {page}, summary in {readme}\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
