"""The ``tierank`` command: trec_eval's job, telling the truth about ties.

::

    tierank QRELS RUN [RUN ...] -m MEASURE ...     evaluate (short for ``tierank eval``)
    tierank ties QRELS RUN [RUN ...] -m MEASURE    the tie report

Exit status: 0 on success, 2 on bad usage or bad input (the message, on stderr, names the file and
line). Nothing is written on stdout when there is an error.
"""

from __future__ import annotations

import gc
import os
import signal
import sys
import threading
import time
import warnings
from contextlib import contextmanager
from typing import Any, Iterator, Sequence

import click

from ._progress import delay as progress_delay
from .api import evaluate
from .comparison import SUPERSCRIPTS, TESTS, Comparison
from .errors import InputError, TierankError, TierankWarning, spelled_as
from .formats import FORMATS, RunResults, escape_text, render, render_measures, shown_measures
from .html_report import command_line, recorded_warnings, report_html
from .io.frames import to_columns
from .io.output import atomic_write, check_output
from .io.source import TextInput, is_parquet
from .io.trec import read_run_tag
from .measures import expand, measure_names
from .measures._parse import number_value
from .plot import plot_format, save_plot
from .report import render_reports, tie_report
from .ties.policy import TIE_MODES

__all__ = ["main"]


# ------------------------------------------------------------------------------------------ measures


def _shown(texts: Sequence[str], rel_level: float | None) -> tuple[list, set[str]]:
    """The ``-m`` values as the measures to show (:func:`tierank.measures.expand`) and the pseudo-measures
    asked for (``runid``, ``num_q``), which ``--format trec`` prints as trec_eval does."""
    expanded = expand(texts, rel_level=rel_level)
    return shown_measures(expanded), set(expanded.pseudo)


# ------------------------------------------------------------------------------------------ progress


class _Progress:
    """A tqdm bar on stderr that shows up only when the work takes more than ``delay`` seconds."""

    def __init__(self, total: int, enabled: bool, delay: float | None = None) -> None:
        delay = progress_delay(1.0) if delay is None else delay
        self.enabled = enabled
        self.bar = None
        if not enabled:
            return
        from tqdm import tqdm

        self.bar = tqdm(total=total, file=sys.stderr, leave=False, delay=delay, unit="step",
                        bar_format="{desc} {bar} {n_fmt}/{total_fmt} [{elapsed}]", dynamic_ncols=True)
        self._start = time.monotonic()
        self._delay = delay
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._tick, daemon=True)
        self._thread.start()

    def _tick(self) -> None:
        while not self._stop.wait(0.25):
            if time.monotonic() - self._start >= self._delay and self.bar is not None:
                self.bar.refresh()

    def step(self, desc: str) -> None:
        if self.bar is not None:
            shown = time.monotonic() - self._start >= self._delay
            self.bar.set_description_str(desc, refresh=shown)

    def advance(self) -> None:
        if self.bar is not None:
            self.bar.update(1)

    def close(self) -> None:
        if self.bar is not None:
            self._stop.set()
            self._thread.join()
            self.bar.close()
            self.bar = None


def _progress_enabled(flag: bool | None, fmt: str) -> bool:
    if flag is not None:
        return flag
    # never when the output goes to a pipe or a file, nor in the formats made for machines
    return (fmt in ("table", "markdown", "latex") and sys.stdout is not None and sys.stdout.isatty()
            and sys.stderr is not None and sys.stderr.isatty())


# ------------------------------------------------------------------------------------ error handling


def _encoding(err: bool) -> str:
    stream = sys.stderr if err else sys.stdout
    return getattr(stream, "encoding", None) or "utf-8"


def can_encode(text: str, err: bool = False) -> bool:
    """Whether stdout (``err``: stderr) can encode ``text`` (e.g. not when PYTHONIOENCODING=cp1252)."""
    try:
        text.encode(_encoding(err))
    except (UnicodeEncodeError, LookupError):
        return False
    return True


def _echo(text: str, *, err: bool = False, nl: bool = True) -> None:
    """``click.echo``, with what the stream cannot encode (a run name, a query id) written as
    ``\\uXXXX`` escapes instead of a UnicodeEncodeError.

    Messages (``err``) go through :func:`tierank.formats.escape_text` (backslashes kept: the ids in
    messages are quoted with ``repr``): a file name or an id with a newline or a terminal escape
    sequence stays one visible line. Standard output that cannot be
    written (a full disk, ``> /dev/full``) is a one-line error, exit status 2; a closed pipe (``| head``)
    ends the command quietly with status 1 (Python's and click's convention: the reader chose to stop).
    """
    if not err and sys.stdout is None:   # started with standard output closed (>&-): click would drop the text
        _fail("cannot write to standard output: it is closed")
    if err:
        text = escape_text(text, one_to_one=False)
    if not can_encode(text, err):
        enc = _encoding(err)
        try:
            text = text.encode(enc, "backslashreplace").decode(enc)
        except LookupError:
            text = text.encode("ascii", "backslashreplace").decode("ascii")
    try:
        click.echo(text, err=err, nl=nl)
    except OSError as error:
        if err:
            return    # standard error cannot be written: there is no one to tell
        _silence_stdout()
        if isinstance(error, BrokenPipeError):
            sys.exit(1)
        _fail(f"cannot write to standard output: {error.strerror or error}")


def _silence_stdout() -> None:
    """Point standard output at the null device, so that the text still buffered is not written
    (and fails) again when Python exits."""
    try:
        fd = os.open(os.devnull, os.O_WRONLY)
        os.dup2(fd, sys.stdout.fileno())
        os.close(fd)
    except (OSError, ValueError, AttributeError):   # no descriptor (a test's stream)
        pass


def _print_warnings(caught: list, where: str | None = None) -> None:
    for w in caught:
        if issubclass(w.category, TierankWarning):
            prefix = f"{where}: " if where else ""
            _echo(f"tierank: warning: {prefix}{w.message}", err=True)


def _fail(message: str) -> None:
    _echo(f"tierank: error: {message}", err=True)
    sys.exit(2)


# the Python parameters that messages name (tierank.errors.param_text), by the options that set them
_FLAGS = {"max_docs": "-M", "ties": "--ties", "missing": "--missing", "no_relevant": "--no-relevant",
          "rel_level": "-l", "seed": "--seed", "test": "--test", "alpha": "--alpha", "correction": "--correction",
          "n_resamples": "--resamples", "trec_eval_version": "--trec-eval-version", "judged_only": "-J",
          "bounds": "--bounds", "measures": "-m", "digits": "--digits", "run_format": "--run-format",
          "qrels_format": "--qrels-format", "tie_cost_budget": "--tie-cost-budget"}


class _Real(click.ParamType):
    """A number option, read by the measure strings' rule (:func:`tierank.measures._parse.number_value`):
    ``1e-400`` is an error, not the 0 that ``float`` makes of it."""

    name = "float"

    def convert(self, value: Any, param: Any, ctx: Any) -> float:
        if isinstance(value, float):
            return value
        try:
            return float(number_value(str(value), real=True))
        except ValueError as err:   # float()'s own message speaks Python: say it plainly
            message = str(err)
            self.fail(f"{value!r} is not a number" if message.startswith("could not convert") else message, param, ctx)


_REAL = _Real()


def _cli_spelling(name: str, value: Any) -> str | None:
    """A Python parameter and its value as the command line sets them (``max_docs=50`` is ``-M 50``), or
    None for a parameter that has no option."""
    flag = _FLAGS.get(name)
    if flag is None:
        return None
    if isinstance(value, bool):   # the flags -J and --bounds
        return flag if value else f"no {flag}"
    if name == "missing" and value == "zero":
        return "-c"
    import shlex   # only for messages that name an option (loading it compiles a regex)
    return f"{flag} {shlex.quote(str(value))}"


@contextmanager
def _errors_to_exit() -> Iterator[None]:
    """InputError, unreadable files and missing optional packages: a one-line message, exit status 2.
    Inside, messages name parameters by the command line's options (tierank.errors.spelled_as)."""
    try:
        with spelled_as(_cli_spelling):
            yield
    except (InputError, TierankError) as err:
        _fail(str(err))
    except OSError as err:
        name = getattr(err, "filename", None)
        reason = err.strerror or str(err)
        _fail(f"{name}: cannot read the file: {reason}" if name else f"cannot read the file: {reason}")
    except ImportError as err:
        _fail(str(err))
    except MemoryError:   # numpy's _ArrayMemoryError too: a one-line error, not a traceback
        _fail("out of memory (a tie too costly for the memory here, after --tie-cost-budget was raised?)")


# --------------------------------------------------------------------------------------- the group


class _DefaultGroup(click.Group):
    """A group whose first argument is a subcommand name, or else the arguments of ``eval``."""

    default_command = "eval"

    def parse_args(self, ctx: click.Context, args: list[str]) -> list[str]:
        if not args or (args[0] not in self.commands and args[0] not in ("--version", "--help", "-h")):
            args = [self.default_command, *args]
        return super().parse_args(ctx, args)


class _GreedyMeasures(click.Command):
    """``-m A B C``: the words after ``-m`` that read as measure names are measures too.

    A word is taken as a measure when it parses as one and is not an existing file; so
    ``tierank qrels run -m nDCG@10 AP P@5`` works, and run files can still follow ``-m X``.
    """

    def parse_args(self, ctx: click.Context, args: list[str]) -> list[str]:
        return super().parse_args(ctx, _greedy_measures(args))


def _is_measure(word: str) -> bool:
    if word.startswith("-") or os.path.exists(word):
        return False
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")   # only asking whether it is a measure; eval reports them
            expand(word)
    except InputError:
        return False
    return True


def _greedy_measures(args: list[str]) -> list[str]:
    out: list[str] = []
    i = 0
    while i < len(args):
        a = args[i]
        if a == "--":
            out.extend(args[i:])
            break
        out.append(a)
        i += 1
        if a in ("-m", "--measure") and i < len(args):
            out.append(args[i])  # the option's own value
            i += 1
            while i < len(args) and _is_measure(args[i]):
                out.extend([a, args[i]])
                i += 1
    return out


def run() -> None:
    """The ``tierank`` command (:func:`main`), with what click leaves as a traceback made one line: its help
    or version text into a full device (``tierank --help > /dev/full``), exit status 2; into a closed
    pipe, exit status 1 quietly."""
    # what is loaded by now (modules, classes, functions) lives as long as the process: the collector
    # need not scan it again, neither while the command runs nor when the interpreter exits, and is on
    # again (tierank.__main__ turns it off while the modules load; docs/architecture.md, "Start-up")
    gc.freeze()
    gc.enable()
    try:
        main(prog_name="tierank")
    except BrokenPipeError:
        _silence_stdout()
        sys.exit(1)
    except OSError as error:
        _silence_stdout()
        _fail(f"cannot write to standard output: {error.strerror or error}")


@click.group(cls=_DefaultGroup, context_settings={"help_option_names": ["-h", "--help"]})
@click.version_option(package_name="tierank", prog_name="tierank", message="%(prog)s %(version)s")
def main() -> None:
    """Evaluate rankings exactly when scores tie: trec_eval's job, telling the truth about ties.

    \b
      tierank QRELS RUN [RUN]... -m MEASURE ...    evaluate (see `tierank eval --help`)
      tierank ties QRELS RUN -m MEASURE ...        how much ties move each measure
      tierank measures [NAME]                      every measure, its parameters and names
      tierank report QRELS RUN... -o report.html   one self-contained HTML report
    """
    _exit_on_sigterm(click.get_current_context())


def _exit_on_sigterm(ctx: click.Context) -> None:
    """SIGTERM ends the command as an exception would (exit status 128 + 15), so that the ``finally``
    blocks and ``with`` statements on the way out run: the temporary files of a run read a second time
    are removed, as on Ctrl-C (the default action of SIGTERM kills the process on the spot). The handler
    is the command's only: the one before it comes back when the command ends."""
    if threading.current_thread() is not threading.main_thread():   # signal handlers: main thread only
        return

    def terminate(signum: int, frame: Any) -> None:
        raise SystemExit(128 + signum)
    previous = signal.signal(signal.SIGTERM, terminate)
    ctx.call_on_close(lambda: signal.signal(signal.SIGTERM, previous))


class _MeasuresOption(click.Option):
    """``-m``: its help ends with every measure's name, read from the registry when the help is read (at
    import it would import every family's module: docs/architecture.md, "Start-up")."""

    @property   # type: ignore[override]
    def help(self) -> str | None:
        return self._help and self._help + ", ".join(measure_names()) + "."

    @help.setter
    def help(self, text: str | None) -> None:
        self._help = text


_COMMON_OPTIONS = [
    click.option("-m", "--measure", "measures", cls=_MeasuresOption, multiple=True, metavar="MEASURE",
                 help="Measure(s): nDCG@10, AP, P(rel=2)@5, ranx names (ndcg@10, map@100-l2), trec_eval names "
                      "with parameters (ndcg_cut.10, P.5,10, map, utility.2,-1,0,0), trec_eval's sets "
                      "'official', 'all_trec' and 'set'. Repeat -m or list several after one -m. "
                      "Default: trec_eval's default set (official). `tierank measures` lists every "
                      "measure: "),
    click.option("-l", "--rel-level", type=_REAL, default=None, metavar="N",
                 help="Relevance level: grades >= N are relevant, for every measure with a rel parameter "
                      "that does not set it (like trec_eval -l; nDCG gains are unchanged)."),
    click.option("-c", "complete", is_flag=True,
                 help="Judged queries missing from a run score 0 (trec_eval -c); same as --missing zero."),
    click.option("--missing", type=click.Choice(["skip", "zero"]), default=None,
                 help="Judged queries missing from a run: left out with a warning (skip, default) or "
                      "scored 0 (zero)."),
]

_EVAL_OPTIONS = [
    click.option("--no-relevant", "no_relevant", type=click.Choice(["zero", "skip", "one", "error"]),
                 default="zero", show_default=True,
                 help="Queries with no relevant judged document: the measure's own value (zero, as "
                      "trec_eval), left out of the mean (skip), 1 for measures in [0, 1] (one), or an "
                      "error (error)."),
    click.option("--trec-eval-version", "trec_eval_version", type=click.Choice(["9", "10"]), default="10",
                 show_default=True,
                 help="9: scores rounded to float32 first, as trec_eval 9.x (pytrec_eval, ir-measures, "
                      "PyTerrier) stores them, so scores equal in float32 tie; 10: read as doubles."),
    click.option("-J", "--judged-only", "judged_only", is_flag=True,
                 help="Drop retrieved documents with no judgment and close the gaps (trec_eval -J)."),
    click.option("-M", "--max-docs", "max_docs", type=click.IntRange(min=1), default=None,
                 help="At most this many documents per query, the first ones (trec_eval -M). A tie across "
                      "that rank is an error unless --ties is input, trec_eval or random."),
    click.option("--tie-cost-budget", "tie_cost_budget", type=_REAL, default=None, metavar="N",
                 help="Operations one query may take for a measure whose exact tie-aware work grows faster "
                      "than a tie's size (IPrec, 11pt_avg, ERR, infAP, G); beyond, an error up front naming the "
                      "query and tie. Default 2e9 (about 10 s); raise it (e.g. 2e10) to wait longer."),
]


_SEED_OPTION = click.option("--seed", type=int, default=0, show_default=True,
                            help="Seed of --ties random and of the randomised tests.")
_DIGITS_OPTION = click.option("--digits", type=click.IntRange(0, 17), default=4, show_default=True,
                              help="Decimals of the printed values.")


def _options(*options: Any) -> Any:
    """A decorator that adds ``options`` to a command, listed in this order by its help."""
    def add(f: Any) -> Any:
        for option in reversed(options):
            f = option(f)
        return f
    return add


def _missing(complete: bool, missing: str | None) -> str:
    if complete and missing == "skip":
        raise click.UsageError("-c and --missing skip contradict each other")
    return "zero" if complete else (missing or "skip")


def _rel(level: float | None) -> int | float | None:
    if level is None:
        return None
    return int(level) if float(level).is_integer() else level


_FILE = click.Path(exists=True, dir_okay=False, readable=True)
_DATA = click.Path(exists=True, readable=True, allow_dash=True)   # eval: a file, a Parquet directory, '-'
_TEXT = click.Path(exists=True, dir_okay=False, readable=True, allow_dash=True)   # a file or '-' (stdin)

_FORMAT_OPTIONS = [
    click.option("--run-format", "run_format", type=click.Choice(["trec", "msmarco"]), default=None,
                 help="Format of the run files: trec (qid Q0 docid rank score tag) or msmarco (qid docid rank, "
                      "scored -rank: rank 1 is best, equal ranks tie; ranks go 1, 2, 3, ... within each query). "
                      "Default: trec (Parquet: by content); a run whose first line has three fields is refused: "
                      "its third field may be a rank or a score, so say --run-format msmarco for ranks."),
    click.option("--qrels-format", "qrels_format", type=click.Choice(["trec", "msmarco", "beir"]), default=None,
                 help="Format of the qrels file: trec or msmarco (qid iter docid grade) or beir (query-id "
                      "corpus-id score, after a header line). Default: beir when the first line is BEIR's "
                      "header, else trec (Parquet: by content); qrels whose first line has three fields and "
                      "no header are refused: say --qrels-format beir."),
]


def _text_inputs(qrels: str, runs: Sequence[str], run_format: str | None,
                 qrels_format: str | None) -> tuple[Any, tuple]:
    """The qrels and runs, as :class:`tierank.io.trec.TextInput` where a format is given, the file is
    '-' (standard input, at most once) or it is not a regular file (a pipe, ``/dev/stdin``, ``<(...)``:
    read once, the TextInput keeps its first lines for the run's tag); plain paths otherwise."""
    if [qrels, *runs].count("-") > 1:
        raise click.UsageError("'-' (standard input) can be read only once: give it for one file only")

    def wrap(path: str, fmt: str | None) -> Any:
        once = path != "-" and not os.path.isdir(path) and not os.path.isfile(path)
        return TextInput(path, fmt) if path == "-" or fmt is not None or once else path
    return wrap(qrels, qrels_format), tuple(wrap(r, run_format) for r in runs)


@main.command("eval", cls=_GreedyMeasures,
              epilog="See also `tierank ties --help`: how much ties move each measure.")
@click.argument("qrels", type=_DATA)
@click.argument("runs", nargs=-1, required=True, type=_DATA, metavar="RUN [RUN]...")
@_options(*_COMMON_OPTIONS)
@click.option("-q", "--per-query", is_flag=True, help="Also print one row per query (trec_eval -q).")
@click.option("--ties", type=click.Choice(TIE_MODES), default="expected", show_default=True,
              help="How tied documents count: expected / lower / upper = exact mean / minimum / maximum over "
                   "all their orderings; optimistic / pessimistic = relevant (higher gain) documents first / "
                   "last; trec_eval = document id descending, as trec_eval does; input = input order; random = "
                   "a seeded order.")
@click.option("--bounds", is_flag=True, help="Also print the minimum and maximum over all tie orderings.")
@_SEED_OPTION
@click.option("-f", "--format", "fmt", type=click.Choice(FORMATS), default="table", show_default=True,
              help="Output format; trec prints exactly trec_eval's layout.")
@_DIGITS_OPTION
@click.option("--compare", is_flag=True, help="Paired significance tests between the runs, over queries.")
@click.option("--test", "test", type=click.Choice(TESTS), default="t", show_default=True,
              help="--compare: paired t-test, randomisation (permutation) test, or bootstrap test.")
@click.option("--alpha", type=click.FloatRange(0, 1, min_open=True, max_open=True), default=0.05,
              show_default=True, help="--compare: significance level, after the correction.")
@click.option("--correction", type=click.Choice(["holm", "bonferroni", "none"]), default="holm",
              show_default=True, help="--compare: multiple-testing correction over the pairs of runs.")
@click.option("--resamples", type=click.IntRange(min=1), default=10000, show_default=True,
              help="--compare: resamples of the permutation and bootstrap tests.")
@click.option("--progress/--no-progress", default=None,
              help="Progress bar on stderr (default: only for table, markdown and latex on a terminal).")
@click.option("--plot", "plot_file", type=click.Path(dir_okay=False), default=None, metavar="FILE",
              help="Also draw the measures to FILE (png, svg or pdf, by its extension; needs matplotlib): "
                   "per query with the range ties allow for one run; means and per-query differences for "
                   "several.")
@_options(*_EVAL_OPTIONS, *_FORMAT_OPTIONS)
def eval_command(qrels: str, runs: tuple[str, ...], measures: tuple[str, ...], rel_level: float | None,
                 complete: bool, missing: str | None, per_query: bool, ties: str, bounds: bool, seed: int,
                 fmt: str, digits: int, compare: bool, test: str, alpha: float, correction: str,
                 resamples: int, progress: bool | None, no_relevant: str = "zero",
                 trec_eval_version: str = "10", judged_only: bool = False, max_docs: int | None = None,
                 plot_file: str | None = None, run_format: str | None = None,
                 qrels_format: str | None = None, tie_cost_budget: float | None = None) -> None:
    """Evaluate RUN(s) against QRELS (TREC, MS MARCO or BEIR text files, plain or gzip, or Parquet;
    '-' reads one of them from standard input).

    `tierank QRELS RUN` is short for `tierank eval QRELS RUN`. By default tied documents count at the
    exact mean over all their orderings; `--ties trec_eval --format trec` prints what trec_eval prints.

    \b
    Examples:
      tierank qrels.txt run.txt -m nDCG@10 AP P@5
      tierank qrels.txt run.txt -m ndcg_cut.10 -m map -q --ties trec_eval --format trec
      tierank qrels.txt runA.txt runB.txt -m AP --compare
      zcat run.txt.gz | tierank qrels.txt - -m AP
      tierank qrels/test.tsv run.dev.tsv --run-format msmarco -m RR@10
    """
    missing_mode = _missing(complete, missing)
    if compare and fmt == "trec":
        raise click.UsageError("--compare prints table, markdown, latex, json or csv, not trec")
    if compare and len(runs) < 2:
        raise click.UsageError("--compare needs at least two runs")
    with _errors_to_exit():
        with recorded_warnings() as caught:
            shown, extra = _shown(measures or ("official",), _rel(rel_level))
        _print_warnings(caught)
        if not shown:
            raise InputError("no measure to evaluate besides runid/num_q; add one with -m")
        qrels_in, runs_in = _text_inputs(qrels, runs, run_format, qrels_format)
        out = _evaluate_and_render(qrels_in, runs_in, shown, extra, missing=missing_mode, per_query=per_query,
                                   ties=ties, bounds=bounds, seed=seed, fmt=fmt, digits=digits, compare=compare,
                                   test=test, alpha=alpha, correction=correction, resamples=resamples,
                                   progress=_progress_enabled(progress, fmt), no_relevant=no_relevant,
                                   trec_eval_version=int(trec_eval_version), judged_only=judged_only,
                                   max_docs=max_docs, plot=plot_file, tie_cost_budget=tie_cost_budget)
    _echo(out, nl=False)


def _check_outputs(inputs: Sequence[Any], *outputs: str | None) -> None:
    """Before any work: each output file (and standard output, ``"-"``, when it is a file) can be
    written and is none of the inputs (:func:`tierank.io.output.check_output`)."""
    for path in outputs:
        if path is not None:
            check_output(path, inputs)


def _run_names(paths: Sequence[str]) -> list[str]:
    """Names of the runs: file names, or longer paths when two file names are the same."""
    paths = [getattr(p, "name", p) for p in paths]   # TextInput: its path, or <stdin>
    names = [os.path.basename(p) for p in paths]
    if len(set(names)) < len(names):
        names = list(paths)
    if len(set(names)) < len(names):
        names = [f"{p} ({i + 1})" for i, p in enumerate(paths)]
    return names


def _evaluate_and_render(qrels: str, runs: Sequence[str], shown: list, extra: set[str], *, missing: str,
                         per_query: bool, ties: str, bounds: bool, seed: int, fmt: str, digits: int,
                         compare: bool, test: str, alpha: float, correction: str, resamples: int,
                         progress: bool, no_relevant: str = "zero", trec_eval_version: int = 10,
                         judged_only: bool = False, max_docs: int | None = None, plot: str | None = None,
                         tie_cost_budget: float | None = None) -> str:
    names = _run_names(runs)
    if plot is not None:
        plot_format(plot)    # a bad extension fails before any work
    _check_outputs([qrels, *runs], plot, "-")   # and an output over an input, or in no directory
    # the plot shows the range ties allow (not with -M, where a tie across rank M has no bounds)
    plot_bounds = plot is not None and max_docs is None
    bar = _Progress(len(runs) + (1 if compare else 0) + (1 if plot else 0), progress)
    results = []
    try:
        bar.step("reading the judgments")
        judgments = to_columns(qrels, "qrels")   # once for every run
        for path, name in zip(runs, names):
            bar.step(f"evaluating {name}")
            with recorded_warnings() as caught:
                res = evaluate(judgments, path, list(dict.fromkeys(m.measure for m in shown)), ties=ties,
                               bounds=bounds or plot_bounds, missing=missing, seed=seed, no_relevant=no_relevant,
                               trec_eval_version=trec_eval_version, judged_only=judged_only,
                               max_docs=max_docs, progress=progress,
                               tie_cost_budget=tie_cost_budget)   # streamed in blocks of queries
            _print_warnings(caught, name)
            runid = ((os.path.basename(path) if is_parquet(path) else read_run_tag(path))
                     if fmt in ("trec", "json") else None)
            results.append(RunResults(name, res, runid))
            bar.advance()
        if compare:
            if len(runs) < 2:
                raise InputError("--compare needs at least two runs")
            bar.step("significance tests")
            with recorded_warnings() as caught:
                comparison = Comparison.from_results({r.name: r.results for r in results},
                                                     {m.label: str(m.measure) for m in shown}, test=test,
                                                     alpha=alpha, correction=correction,
                                                     n_resamples=resamples, seed=seed)
            _print_warnings(caught)
            bar.advance()
        if plot is not None:
            bar.step("drawing")
            save_plot(plot, {r.name: r.results for r in results},
                      [(m.label, str(m.measure)) for m in shown if not m.is_text],
                      comparison=comparison if compare else None)
            bar.advance()
    finally:
        bar.close()
    if compare:
        # superscript letters where stdout can encode them, else ^ab (e.g. PYTHONIOENCODING=cp1252)
        return comparison.render(fmt, digits=digits, ascii=not can_encode(SUPERSCRIPTS))
    return render(results, shown, fmt, per_query=per_query, bounds=bounds, digits=digits,
                  show_runid="runid" in extra, show_num_q="num_q" in extra)


@main.command("ties", cls=_GreedyMeasures)
@click.argument("qrels", type=_TEXT)
@click.argument("runs", nargs=-1, required=True, type=_TEXT, metavar="RUN [RUN]...")
@_options(*_COMMON_OPTIONS)
@click.option("-f", "--format", "fmt", type=click.Choice([f for f in FORMATS if f != "trec"]),
              default="table", show_default=True, help="Output format.")
@_DIGITS_OPTION
@click.option("--progress/--no-progress", default=None, help="Progress bar on stderr.")
@_options(*_EVAL_OPTIONS[:2], _EVAL_OPTIONS[4], *_FORMAT_OPTIONS)
def ties_command(qrels: str, runs: tuple[str, ...], measures: tuple[str, ...], rel_level: float | None,
                 complete: bool, missing: str | None, fmt: str, digits: int, progress: bool | None,
                 no_relevant: str = "zero", trec_eval_version: str = "10", run_format: str | None = None,
                 qrels_format: str | None = None, tie_cost_budget: float | None = None) -> None:
    """How much ties move each measure: the first thing to look at when two tools disagree.

    For each measure: the expected value over all orderings of tied documents, the range [min, max]
    over those orderings, what trec_eval's tie-break (document id descending) gives, how many queries
    change with the order of ties, and the share of retrieved documents in ties that can change it.

    \b
    Example:
      tierank ties qrels.txt run.txt -m nDCG@10 AP P@5
    """
    missing_mode = _missing(complete, missing)
    qrels, runs = _text_inputs(qrels, runs, run_format, qrels_format)
    with _errors_to_exit():
        with recorded_warnings() as caught:
            shown, _ = _shown(measures or ("official",), _rel(rel_level))
        _print_warnings(caught)
        shown = [m for m in shown if not m.is_text]
        if not shown:
            raise InputError("no measure to report on; add one with -m")
        names = _run_names(runs)
        _check_outputs([qrels, *runs], "-")
        show_progress = _progress_enabled(progress, fmt)
        bar = _Progress(len(runs) + 1, show_progress)
        parts = []
        try:
            bar.step("reading the judgments")
            judgments = to_columns(qrels, "qrels")   # once for every run
            for path, name in zip(runs, names):
                bar.step(f"tie report of {name}")
                with recorded_warnings() as caught:
                    report = tie_report(judgments, path, {m.label: m.measure for m in shown}, missing=missing_mode,
                                        name=name, no_relevant=no_relevant,
                                        trec_eval_version=int(trec_eval_version), progress=show_progress,
                                        tie_cost_budget=tie_cost_budget)
                _print_warnings(caught, name)
                parts.append(report)
                bar.advance()
        finally:
            bar.close()
        out = render_reports(parts, fmt, digits=digits)
    _echo(out, nl=False)


@main.command("measures")
@click.argument("name", required=False)
@click.option("-f", "--format", "fmt", type=click.Choice(["table", "markdown", "json"]), default="table",
              show_default=True, help="Output format.")
def measures_command(name: str | None, fmt: str) -> None:
    """Every measure tierank computes: its parameters and defaults, its cutoff, its trec_eval names and
    the ir-measures / ranx spellings it also accepts. With NAME, that measure in detail.

    \b
    Examples:
      tierank measures
      tierank measures nDCG
      tierank measures --format markdown
    """
    with _errors_to_exit():
        out = render_measures(fmt, name)
    _echo(out, nl=False)


class _ReportCommand(_GreedyMeasures):
    """Keeps the command's arguments as typed, for the report's "how it was made"."""

    def parse_args(self, ctx: click.Context, args: list[str]) -> list[str]:
        ctx.meta["tierank.report.args"] = list(args)
        return super().parse_args(ctx, args)


@main.command("report", cls=_ReportCommand)
@click.argument("qrels", type=_DATA)
@click.argument("runs", nargs=-1, required=True, type=_DATA, metavar="RUN [RUN]...")
@_options(*_COMMON_OPTIONS)
@click.option("-o", "--output", required=True, type=click.Path(dir_okay=False), metavar="FILE",
              help="The HTML file to write ('-': stdout).")
@click.option("--ties", type=click.Choice(TIE_MODES), default="expected", show_default=True,
              help="How tied documents count in the tables of means, as in `tierank eval` (their exact "
                   "range is always shown).")
@_SEED_OPTION
@click.option("--test", "test", type=click.Choice(TESTS), default="t", show_default=True,
              help="Significance test between runs: paired t-test, randomisation (permutation) or bootstrap.")
@click.option("--alpha", type=click.FloatRange(0, 1, min_open=True, max_open=True), default=0.05,
              show_default=True, help="Significance level, after the correction.")
@click.option("--correction", type=click.Choice(["holm", "bonferroni", "none"]), default="holm",
              show_default=True, help="Multiple-testing correction over the pairs of runs.")
@click.option("--resamples", type=click.IntRange(min=1), default=10000, show_default=True,
              help="Resamples of the permutation and bootstrap tests.")
@click.option("--title", default=None, help="The report's title (default: the run names).")
@click.option("--digits", type=click.IntRange(0, 17), default=4, show_default=True,
              help="Decimals of the tables.")
@click.option("--plots/--no-plots", default=True, show_default=True, help="Embed the plots (needs matplotlib).")
@_options(*_EVAL_OPTIONS[:2], *_FORMAT_OPTIONS)
def report_command(qrels: str, runs: tuple[str, ...], measures: tuple[str, ...], rel_level: float | None,
                   complete: bool, missing: str | None, output: str, ties: str, seed: int, test: str,
                   alpha: float, correction: str, resamples: int, title: str | None, digits: int, plots: bool,
                   no_relevant: str = "zero", trec_eval_version: str = "10", run_format: str | None = None,
                   qrels_format: str | None = None) -> None:
    """Write one self-contained HTML report on RUN(s): means with the range ties allow, significance
    tests between runs, the tie report, plots, and the command and versions that made it.

    The file loads nothing when opened (images are embedded, styles inline).

    \b
    Examples:
      tierank report qrels.txt run.txt -m nDCG@10 AP P@10 -o report.html
      tierank report qrels.txt runA.txt runB.txt -m AP RR --test permutation -o compare.html
    """
    missing_mode = _missing(complete, missing)
    with _errors_to_exit():
        _check_outputs([qrels, *runs], output)   # before any work
        qrels_in, runs_in = _text_inputs(qrels, runs, run_format, qrels_format)   # '-', pipes, formats
        with recorded_warnings() as caught:
            page = report_html(qrels_in, list(runs_in), list(measures) or None, ties=ties, missing=missing_mode,
                               no_relevant=no_relevant, trec_eval_version=int(trec_eval_version),
                               rel_level=_rel(rel_level), seed=seed, test=test, alpha=alpha,
                               correction=correction, n_resamples=resamples, title=title,
                               command=command_line(["report", *click.get_current_context().meta.get(
                                   "tierank.report.args", [])]), digits=digits, plots=plots)
        _print_warnings(caught)
        if output == "-":
            _echo(page, nl=False)
            return
        with atomic_write(output) as f:   # whole or not at all
            f.write(page)


if __name__ == "__main__":  # pragma: no cover
    main()
