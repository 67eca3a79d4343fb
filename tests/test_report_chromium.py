"""The HTML report rendered for real, in headless Chromium (Debian package ``chromium``).

Skipped when no Chromium is installed, unless TIERANK_REQUIRE_CHROMIUM=1 (then it fails). With
TIERANK_SCREENSHOTS=DIR the screenshots are copied to DIR, to look at them.
"""

from __future__ import annotations

import os
import shutil
import struct
import subprocess

import pytest
from click.testing import CliRunner

from tierank.cli import main

from test_html_report import Page, trec_eval_all

pytest.importorskip("matplotlib")

DATA = os.path.join(os.path.dirname(__file__), "data", "trec_eval")
QRELS = os.path.join(DATA, "qrels.test")
RUN = os.path.join(DATA, "results.test")
WIDTH, HEIGHT = 1280, 2400


def chromium() -> str:
    for name in ("chromium", "chromium-browser", "google-chrome", "google-chrome-stable"):
        path = shutil.which(name)
        if path:
            return path
    if os.environ.get("TIERANK_REQUIRE_CHROMIUM") == "1":
        pytest.fail("Chromium is required (TIERANK_REQUIRE_CHROMIUM=1) but not installed: apt-get install chromium")
    pytest.skip("no Chromium installed (apt-get install chromium)")


def render(html_path, tmp_path, name: str) -> tuple[str, bytes, str]:
    """Open the page in a fresh headless Chromium: the DOM after scripts ran, a screenshot, the log."""
    shot = tmp_path / f"{name}.png"
    profile = tmp_path / f"profile-{name}"
    cmd = [chromium(), "--headless", "--no-sandbox", "--disable-gpu", "--no-first-run",
           "--disable-background-networking", "--disable-extensions", f"--user-data-dir={profile}",
           "--enable-logging=stderr", "--v=0", f"--window-size={WIDTH},{HEIGHT}", f"--screenshot={shot}",
           "--virtual-time-budget=10000", "--dump-dom", html_path.resolve().as_uri()]
    done = subprocess.run(cmd, capture_output=True, text=True, timeout=180)
    assert done.returncode == 0, done.stderr[-2000:]
    data = shot.read_bytes()
    target = os.environ.get("TIERANK_SCREENSHOTS")
    if target:
        os.makedirs(target, exist_ok=True)
        shutil.copy(shot, os.path.join(target, f"{name}.png"))
    return done.stdout, data, done.stderr


def body_attribute(dom: str, name: str) -> str | None:
    import re

    m = re.search(r"<body[^>]*\b" + name + r'="([^"]*)"', dom)
    return m.group(1) if m else None


def png_size(data: bytes) -> tuple[int, int]:
    assert data.startswith(b"\x89PNG\r\n\x1a\n") and data[12:16] == b"IHDR"
    return struct.unpack(">II", data[16:24])


def check_rendered(dom: str, shot: bytes, log: str, n_images: int) -> None:
    assert body_attribute(dom, "data-images-loaded") == f"{n_images}/{n_images}"   # every image decoded
    assert "Content Security Policy" not in log         # nothing blocked: the page asks for nothing
    assert png_size(shot) == (WIDTH, HEIGHT)
    assert len(set(shot[200:])) > 50                     # not a blank page (many distinct byte values)


def tied_copy(tmp_path):
    """trec_eval's test run with scores rounded to one decimal: 99% of the documents in ties."""
    path = tmp_path / "tied.test"
    with open(RUN) as f, open(path, "w") as out:
        for line in f:
            q, q0, doc, rank, score, tag = line.split()
            out.write(f"{q} {q0} {doc} {rank} {float(score):.1f} tied\n")
    return path


def test_trec_eval_test_run_renders(tmp_path):
    report = tmp_path / "trec_eval.html"
    result = CliRunner().invoke(main, ["report", QRELS, RUN, "--ties", "trec_eval", "-o", str(report)])
    assert result.exit_code == 0, result.output
    dom, shot, log = render(report, tmp_path, "report_trec_eval_test")
    dom_page = Page(dom)
    assert dom_page.title == "tierank report: results.test"
    means = dom_page.table("means")
    expected = trec_eval_all(os.path.join(DATA, "out.test"))   # trec_eval's own numbers
    for name in ("map", "P_10", "recip_rank", "bpref", "num_rel_ret"):
        assert means[name][0].split(" [")[0] == expected[name]
    check_rendered(dom, shot, log, n_images=len(means))


def test_heavy_ties_render(tmp_path):
    tied = tied_copy(tmp_path)
    report = tmp_path / "ties.html"
    result = CliRunner().invoke(main, ["report", QRELS, str(tied), RUN, "-m", "AP", "nDCG@10", "P@10", "RR",
                                       "-o", str(report)])
    assert result.exit_code == 0, result.output
    dom, shot, log = render(report, tmp_path, "report_heavy_ties")
    dom_page = Page(dom)
    assert dom_page.title == "tierank report: tied.test, results.test"
    means = dom_page.table("means")
    assert set(means) == {"AP", "nDCG@10", "P@10", "RR"}
    assert all("[" in means[m][0] for m in means)        # the tied run: every measure has a range
    assert "0.3000" in means["P@10"][1]                  # the original run: trec_eval's P_10
    ties = dom_page.table("ties", 0)
    assert ties["AP"][4] == "3/3"                        # every query's AP moves with its ties
    assert "significance" in dom_page.tables
    check_rendered(dom, shot, log, n_images=4)
