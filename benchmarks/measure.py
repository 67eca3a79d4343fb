"""Timing and memory of one measurement, and the subprocess that runs it.

Each (library, task) measurement runs in a fresh Python process (``python benchmarks/measure.py ...``), so
peak memory belongs to that measurement alone. Memory is read from /proc/self/status: VmHWM (the peak
resident set) is reset by writing "5" to /proc/self/clear_refs once the input exists, so

    peak MB = VmHWM after the runs - VmRSS once the input exists

Without /proc (not Linux) it falls back to ``ru_maxrss`` (never reset: an upper bound).
"""

from __future__ import annotations

import gc
import json
import os
import resource
import subprocess
import sys
import time
import traceback
from pathlib import Path

_HERE = Path(__file__).resolve().parent


# ----------------------------------------------------------------------------------------- memory

def _status_kb(field: str) -> int | None:
    try:
        with open("/proc/self/status") as f:
            for line in f:
                if line.startswith(field + ":"):
                    return int(line.split()[1])
    except OSError:
        pass
    return None


def rss_mb() -> float:
    kb = _status_kb("VmRSS")
    if kb is None:
        return 0.0
    return kb / 1024


def reset_peak() -> bool:
    """Reset the peak RSS (VmHWM) to the current RSS; False where the kernel does not allow it."""
    try:
        with open("/proc/self/clear_refs", "w") as f:
            f.write("5")
        return True
    except OSError:
        return False


def peak_mb() -> float:
    kb = _status_kb("VmHWM")
    if kb is None:  # not Linux: ru_maxrss is KiB on Linux, bytes on macOS
        kb = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
        if sys.platform == "darwin":
            kb //= 1024
    return kb / 1024


# ----------------------------------------------------------------------------------------- timing

def release_memory() -> None:
    """Collect garbage and hand freed heap back to the OS (glibc), so that RSS baselines are honest."""
    gc.collect()
    try:
        import ctypes

        ctypes.CDLL("libc.so.6").malloc_trim(0)
    except (OSError, AttributeError):
        pass


def _timed(fn, *args):
    gc.collect()
    t = time.perf_counter()
    out = fn(*args)
    return time.perf_counter() - t, out


def run_case(case, repeat: int, budget: float) -> dict:
    """Load the data, build the library's input, then time the computation.

    Timed runs after the first (warm-up) call: up to ``repeat``, stopping once they add up to ``budget``
    seconds (at least one). A non-JIT library whose first call alone exceeds ``budget`` is timed by that
    call only (``runs`` = 1, ``cold`` = True), which keeps the largest sizes within the time limit.
    """
    out: dict = {"key": case.key}
    source = case.load()
    release_memory()
    rss_source = rss_mb()
    can_reset = reset_peak()
    # build the library's natural input from the common source data
    build_times = []
    inp = None
    while True:
        inp = None
        gc.collect()
        dt, inp = _timed(case.build, source)
        build_times.append(dt)
        if len(build_times) == 1:
            out["mem_build_mb"] = peak_mb() - rss_source
        if len(build_times) < (2 if case.jit else 1):
            continue  # a JIT library compiles in its first build: time a second one
        if len(build_times) >= repeat or sum(build_times) >= budget / 2 or dt < 1e-4:
            break
    if not case.keep_source:
        source = None
    release_memory()
    rss_input = rss_mb()
    reset_peak()
    first, means = _timed(case.compute, inp)
    means = {k: float(v) for k, v in (means or {}).items()}
    times: list[float] = []
    cold = False
    if first > budget and not case.jit:
        times, cold = [first], True
    else:
        while len(times) < repeat and (not times or sum(times) < budget):
            dt, _ = _timed(case.compute, inp)
            times.append(dt)
    out.update(build_times=build_times, first=first, times=times, cold=cold, means=means,
               mem_mb=peak_mb() - rss_input, rss_input_mb=rss_input, rss_source_mb=rss_source,
               mem_exact=can_reset)
    return out


def run_subprocess(config: dict, key: str, timeout: float, python: str | None = None,
                   prepare: bool = False) -> dict:
    """Run one case in a fresh interpreter; never raises: failures come back as ``{"error": ...}``."""
    import tempfile

    with tempfile.NamedTemporaryFile("r", suffix=".json", delete=False) as f:
        result_path = f.name
    cmd = [python or sys.executable, str(_HERE / "measure.py"), "--config", json.dumps(config),
           "--key", key, "--result", result_path] + (["--prepare"] if prepare else [])
    t0 = time.perf_counter()
    try:
        proc = subprocess.run(cmd, check=False, capture_output=True, text=True, timeout=timeout)
    except subprocess.TimeoutExpired:
        os.unlink(result_path)
        return {"key": key, "error": f"timeout after {timeout:.0f} s", "wall": time.perf_counter() - t0}
    try:
        with open(result_path) as f:
            text = f.read()
        res = json.loads(text) if text.strip() else None
    finally:
        os.unlink(result_path)
    if res is None:
        tail = (proc.stderr or proc.stdout or "").strip().splitlines()
        why = tail[-1] if tail else f"exit code {proc.returncode}"
        if proc.returncode < 0:
            why = f"killed by signal {-proc.returncode} (out of memory?)" + (f": {why}" if tail else "")
        res = {"key": key, "error": why[:300]}
    res["wall"] = time.perf_counter() - t0
    return res


def _main() -> None:
    import argparse

    sys.path.insert(0, str(_HERE))
    import anchors

    p = argparse.ArgumentParser(description="run one benchmark case (used by run.py)")
    p.add_argument("--config", required=True)
    p.add_argument("--key", required=True)
    p.add_argument("--result", required=True)
    p.add_argument("--prepare", action="store_true", help="only generate and cache the case's data")
    a = p.parse_args()
    config = json.loads(a.config)
    case = anchors.case_by_key(config, a.key)
    if a.prepare:
        case.load()
        with open(a.result, "w") as f:
            json.dump({"key": a.key, "prepared": True}, f)
        return
    try:
        missing = case.missing()
        if missing:
            res = {"key": a.key, "error": missing, "skipped": True}
        else:
            res = run_case(case, repeat=config["repeat"], budget=config["budget"])
    except Exception as err:  # noqa: BLE001 - any library failure becomes a row with its reason
        tb = traceback.format_exc(limit=-3)
        sys.stderr.write(tb)
        msg = f"{type(err).__name__}: {err}".strip().splitlines()
        res = {"key": a.key, "error": (msg[0] if msg else type(err).__name__)[:300]}
    with open(a.result, "w") as f:
        json.dump(res, f)


if __name__ == "__main__":
    _main()
