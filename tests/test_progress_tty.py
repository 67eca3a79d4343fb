"""On a terminal, the command line shows a progress bar while it reads and evaluates runs; in a pipe it
shows none. Run in a pseudo-terminal, as a user's shell would run it."""

from __future__ import annotations

import fcntl
import os
import pty
import select
import struct
import subprocess
import sys
import termios

import numpy as np


def _files(tmp_path, n_queries=300, docs=1000):
    rng = np.random.default_rng(0)
    q = np.repeat(np.arange(n_queries), docs)
    d = rng.permutation(n_queries * docs)
    s = rng.integers(0, 50, n_queries * docs)
    run = tmp_path / "run.txt"
    run.write_text("".join(f"q{a} Q0 d{b} 1 {c} t\n" for a, b, c in zip(q, d, s)))
    judged = rng.random(len(q)) < 0.05
    qrels = tmp_path / "qrels.txt"
    qrels.write_text("".join(f"q{a} 0 d{b} 1\n" for a, b in zip(q[judged], d[judged])))
    return str(qrels), str(run)


def _on_a_terminal(args: list[str]) -> str:
    """Everything the command writes to a terminal (stdout and stderr both on the pseudo-terminal)."""
    leader, follower = pty.openpty()
    # a terminal of 30 x 100 (a new pseudo-terminal has 0 columns, and tqdm draws nothing in 0 columns)
    fcntl.ioctl(follower, termios.TIOCSWINSZ, struct.pack("HHHH", 30, 100, 0, 0))
    env = dict(os.environ, TIERANK_PROGRESS_DELAY="0")   # the bars wait 0.5-1 s of work otherwise
    proc = subprocess.Popen([sys.executable, "-m", "tierank", *args], stdin=follower, stdout=follower,
                            stderr=follower, close_fds=True, env=env)
    os.close(follower)
    out = b""
    while True:
        ready, _, _ = select.select([leader], [], [], 60)
        if not ready:
            break
        try:
            chunk = os.read(leader, 65536)
        except OSError:   # the command ended and closed the terminal
            break
        if not chunk:
            break
        out += chunk
    proc.wait(timeout=120)
    os.close(leader)
    assert proc.returncode == 0, out.decode(errors="replace")
    return out.decode(errors="replace")


def test_progress_bar_on_a_terminal_and_none_in_a_pipe(tmp_path):
    qrels, run = _files(tmp_path)
    shown = _on_a_terminal([qrels, run, "-m", "AP", "nDCG@10"])
    assert "evaluating run.txt" in shown, shown[-2000:]   # the bar of the command's steps, naming the run
    assert "run.txt: " in shown and "%|" in shown          # the bar of the file being read
    assert "AP " in shown.split("evaluating run.txt")[-1]  # and the results after it
    piped = subprocess.run([sys.executable, "-m", "tierank", qrels, run, "-m", "AP", "nDCG@10"],
                           capture_output=True, text=True, check=True)
    assert "evaluating" not in piped.stderr + piped.stdout and "AP " in piped.stdout
