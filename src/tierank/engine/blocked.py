"""The one block loop: dense matrices and binary codes evaluated a block of rows at a time.

:func:`evaluate_matrix_blocked` (behind :func:`tierank.evaluate_matrix`) and :func:`evaluate_codes_blocked`
(behind :func:`tierank.evaluate_codes`) turn each block of rows into tie statistics (a sort, or counting
when the keys are small integers) and hand them to :func:`evaluate_blocks`, which evaluates them with the
core (:func:`tierank.engine.core.evaluate_stats`) and concatenates the per-row values. Rows are independent
queries, so the values do not depend on the block size, and memory is bounded whatever the number of rows.
Run files are evaluated in blocks of whole queries by :mod:`tierank.engine.streamed`.

Top-k fast path
---------------
When every measure looks only at the top ``k`` of a list besides the judged set (the families declared
``reads="top_k"``, with ``@k``; the radius measures ``P(radius=r)`` / ``R(radius=r)``; those declared
``reads="judged"``), a row needs only its items whose key is at least the ``kmax``-th best key
(``np.partition``, no full sort), which keeps the boundary tie whole; only those are sorted. ``R``, the
ideal DCG and ERR's largest grade still come from the whole row, passed as the judged set. Every
quantity the kernels read is then the same as on the full list: ``min(k, n)`` is ``k`` unless the row
is shorter than ``k`` (then nothing is cut), the cut group and everything before it are kept whole.
Other measures (whole-list ones, and those without ``@k``) use the full sort.

Keys
----
Scores / distances keep their dtype until a block is converted: integers (but uint64 beyond the int64
range) become int64, so large integer keys stay exact; floats become float64. Long doubles, Python
objects (ints beyond int64, Decimals, ...) and grades of any dtype become float64 only when float64 holds
every value exactly, else an InputError (:func:`tierank.data.numbers.exact_float64`): two different keys
must never become equal. Every other
key transformation is exact too: ``~x`` / ``-x`` to reverse the order, ``kmax - x`` of the counting path
only on int64 keys whose range it has checked. With ``trec_eval_version=9`` the keys are first rounded
to float32, as trec_eval 9.x stores run scores (then equal float32 values tie); integers that float32
holds exactly (``|x| <= 2**24``, e.g. Hamming distances) are left as they are.

Random tie order
----------------
``ties="random"`` orders each tie by a hash of ``(seed, row * n_columns + column)``
(:func:`tierank.ties.policy.random_tiebreak`), so the order of an item does not depend on the block it
is evaluated in, and memory stays O(block).
"""

from __future__ import annotations

import warnings
from decimal import Decimal
from numbers import Real
from typing import Any, Callable, Iterable, Iterator

import numpy as np

from .._progress import ProgressBar
from ..data.numbers import exact_float64, inexact_problem
from ..data.ranked import RankedLists
from ..embedding_results import EmbeddingResults, build_audit
from ..errors import InputError, TierankWarning
from ..hashing.distance import block_distances
from ..hashing.histogram import apply_threshold, block_histogram, histogram_stats
from ..measures import Measure
from ..results import CodeResults, Results
from ..ties.groups import TieStats
from ..ties.policy import BOUND_MODES, FIXED_ORDER_MODES, ORDER_FREE_MODES, TieOrderings
from .core import QueryValues, evaluate_stats
from .options import Options, check_positive

__all__ = ["evaluate_matrix_blocked", "evaluate_codes_blocked", "evaluate_embeddings_blocked", "evaluate_blocks", "rank_rows", "topk_plan",
           "block_rows", "DEFAULT_MEMORY"]

#: working memory of one block, in bytes (the block size is derived from it)
DEFAULT_MEMORY = 512 << 20

# Peak bytes per matrix entry of one block, measured with tracemalloc (float64 input, 100 x 20000, AP, nDCG,
# ERR, RR, P@10): full sort ~110 (expected), ~280 (with bounds), ~600 (fixed orders: one group per item);
# top-k path with kmax << n_columns ~33. Used to turn the memory budget into rows per block.
_BYTES_TOPK = 48
_BYTES_EXPECTED = 128
_BYTES_BOUNDS = 320
_BYTES_FIXED = 640

_INT64_MAX = 2 ** 63 - 1
_INT64_MIN = -(2 ** 63)
#: integers float32 holds exactly (its 24-bit significand)
_FLOAT32_EXACT_INT = 2 ** 24
#: integers float64 holds exactly
_FLOAT64_EXACT_INT = 2 ** 53

# -- planning ---------------------------------------------------------------------------------------

def topk_plan(measures: list[Measure]) -> tuple[int, float | None] | None:
    """``(kmax, largest radius or None)`` when every measure can use the top-k path, else None."""
    kmax, rmax = 1, None
    for m in measures:
        if "radius" in m.params:
            rmax = m["radius"] if rmax is None else max(rmax, m["radius"])
        elif m.reads == "judged":
            continue
        elif m.reads == "top_k" and m.cutoff is not None:
            kmax = max(kmax, m.cutoff)
        else:
            return None
    return kmax, rmax


def block_rows(n_cols: int, *, topk: bool, ties: str = "expected", bounds: bool = False,
               block_size: int | None = None, memory: int = DEFAULT_MEMORY) -> int:
    """Rows per block: ``block_size`` if given, else as many as fit ``memory`` bytes of working memory."""
    if block_size is not None:
        return check_positive(block_size, "block_size")
    if isinstance(memory, bool) or not isinstance(memory, (int, np.integer)) or memory < 1:
        raise InputError(f"memory must be a positive number of bytes, got {memory!r}")
    if topk:
        per_entry = _BYTES_TOPK
    elif ties in FIXED_ORDER_MODES:
        per_entry = _BYTES_FIXED
    else:   # ties="lower" / "upper" compute the bounds
        per_entry = _BYTES_BOUNDS if bounds or ties in BOUND_MODES else _BYTES_EXPECTED
    return max(1, int(memory) // max(1, n_cols * per_entry))


# -- input checks -------------------------------------------------------------------------------------

def _as_numeric(x: Any, name: str) -> np.ndarray:
    """``x`` as a 2-D numeric array in its own dtype (converted to float64 block by block, exactly:
    :func:`_exact_block`). Objects stay objects unless they are all integers within int64, which become
    int64; so do lists that numpy would turn into floats where an integer may have been rounded."""
    try:
        arr = np.asarray(x)
        if isinstance(x, (list, tuple)) and arr.dtype.kind == "f" and (np.abs(arr) >= 2.0 ** 53).any():
            arr = np.asarray(x, dtype=object)   # [2**53 + 1, 0.5] would be [2**53, 0.5]
    except (TypeError, ValueError):
        raise InputError(f"{name} must be a numeric array") from None
    if arr.dtype == object:
        import pandas as pd

        flat = arr.ravel()
        inferred = pd.api.types.infer_dtype(flat, skipna=False)
        if inferred in ("integer", "boolean", "empty"):
            try:
                arr = arr.astype(np.int64 if inferred == "integer" else np.float64)
            except (OverflowError, TypeError, ValueError):   # beyond int64: objects, exact or an error
                pass
        numbers = ("integer", "floating", "mixed-integer-float", "decimal")
        if arr.dtype == object and inferred not in numbers and not all(
                isinstance(v, (Real, np.number, Decimal)) and not isinstance(v, np.complexfloating) for v in flat):
            raise InputError(f"{name} must be a numeric array")
    if arr.dtype.kind not in "biufO":
        raise InputError(f"{name} must be a numeric array, got dtype {arr.dtype}")
    if arr.ndim == 1:
        arr = arr[None, :]
    if arr.ndim != 2:
        raise InputError(f"{name} must be a 1-D or 2-D array (rows = queries), got {arr.ndim} dimensions")
    return arr


def _exact_block(values: np.ndarray, name: str, valid: np.ndarray | None, row0: int) -> np.ndarray:
    """A block of ``values`` as float64, or an InputError naming the first (unmasked) value that float64
    cannot hold exactly (:func:`tierank.data.numbers.exact_float64`, the rule of every input)."""
    out, lost = exact_float64(values)
    if lost is not None and valid is not None:
        lost &= valid
    if lost is not None and lost.any():
        r, c = (int(i) for i in np.argwhere(lost)[0])
        raise InputError(f"{name}: the value at row {row0 + r}, column {c} {inexact_problem(values[r, c])}",
                         query=row0 + r)
    return out


def _first_bad_row(bad: np.ndarray) -> int:
    return int(np.flatnonzero(bad.any(axis=1))[0])


def _check_block(grades: np.ndarray, keys: np.ndarray, keyname: str, valid: np.ndarray | None,
                 row0: int, what: str = "row") -> None:
    checks: list[tuple[str, np.ndarray, Callable[[np.ndarray], np.ndarray], str]] = [
        ("relevance", grades, np.isnan, "NaN")]
    if keys.dtype.kind == "f":
        checks.append((keyname, keys, np.isnan, "NaN"))
    checks += [("relevance", grades, np.isinf, "an infinite grade"),
               ("relevance", grades, lambda a: a < 0, "a negative grade")]
    for name, arr, test, desc in checks:
        bad = test(arr)
        if valid is not None:
            bad &= valid
        if bad.any():
            row = row0 + _first_bad_row(bad)
            raise InputError(f"{name} contains {desc} ({what} {row})", query=row)


def _round_float32(keys: np.ndarray, valid: np.ndarray | None) -> np.ndarray:
    """Keys as trec_eval 9.x stores run scores: the number read as a double, then stored as a float.

    Returns float64 (or the input when already exact: float32 / float16 / bool, integers within
    ``2**24``). Doubles beyond float32's range become +-inf, as the C conversion does.
    """
    if keys.dtype.kind == "b" or (keys.dtype.kind == "f" and keys.dtype.itemsize <= 4):
        return keys
    if keys.dtype.kind in "iu":
        kv = keys if valid is None else keys[valid]
        if kv.size == 0 or (int(kv.max()) <= _FLOAT32_EXACT_INT and int(kv.min()) >= -_FLOAT32_EXACT_INT):
            return keys
    with np.errstate(over="ignore"):   # |x| > float32 max: inf, as in C
        return keys.astype(np.float64).astype(np.float32).astype(np.float64)


def keys_higher_better(keys: np.ndarray, keyname: str, lower_is_better: bool, valid: np.ndarray | None,
                       row0: int, *, as_float32: bool = False) -> np.ndarray:
    """Keys with higher = better (distances negated): int64 for integer keys (kept exact), else float64.

    Exact: two keys are equal afterwards exactly when they were equal before (float128 keys that float64
    cannot hold are an InputError). ``as_float32``: round to float32 first (``trec_eval_version=9``).
    """
    if as_float32:
        keys = _round_float32(keys, valid)
    if keys.dtype.kind in "iu":
        if keys.dtype == np.uint64 and keys.size:
            big = keys > np.uint64(_INT64_MAX)
            if valid is not None:
                big &= valid
            if big.any():
                row = row0 + _first_bad_row(big)
                raise InputError(f"{keyname} holds integers beyond the int64 range (row {row})", query=row)
        out = keys.astype(np.int64)
        if lower_is_better:
            low = out == _INT64_MIN
            if valid is not None:
                low &= valid
            if low.any():
                row = row0 + _first_bad_row(low)
                raise InputError(f"{keyname} holds -2**63, which cannot be negated in int64 (row {row})",
                                 query=row)
            np.negative(out, out=out)
        return out
    if keys.dtype.kind == "O" or keys.dtype.itemsize > 8:
        # long doubles, objects: float64 must hold every (unmasked) value exactly, or distinct keys would tie
        out = _exact_block(keys, keyname, valid, row0)
    else:
        out = keys.astype(np.float64)
    if lower_is_better:
        np.negative(out, out=out)
    return out


def _descending(keys: np.ndarray) -> np.ndarray:
    """An order-reversing transform that cannot overflow (``~x`` for integers, ``-x`` for floats)."""
    return np.invert(keys) if keys.dtype.kind == "i" else -keys


def _worst(keys: np.ndarray) -> float | int:
    return int(np.iinfo(np.int64).min) if keys.dtype.kind == "i" else -np.inf


# -- one block ----------------------------------------------------------------------------------------

#: largest number of distinct integer keys (and of grade levels) for the histogram path
_HIST_MAX_KEYS = 4096
_HIST_MAX_LEVELS = 64


def histogram_rows(raw_grades: np.ndarray, keys: np.ndarray, valid: np.ndarray | None
                   ) -> tuple[TieStats, np.ndarray] | None:
    """Tie statistics of a block by counting, no sort: (stats, rows kept), or None when not applicable.

    Applies when the keys are integers with at most ``_HIST_MAX_KEYS`` distinct values in the block
    (integer distances, quantised scores) and the grades are integers with a small range: then
    ``counts[row, key, grade]`` (one ``np.bincount``) is all the expected, optimistic and pessimistic
    modes and the bounds need (docs/maths.md, "Computing them"). ``keys`` are higher-is-better int64.
    """
    if keys.dtype.kind != "i" or raw_grades.dtype.kind not in "iub" or keys.size == 0:
        return None
    sel = (lambda a: a[valid]) if valid is not None else (lambda a: a)
    kv = sel(keys)
    if kv.size == 0:
        return None
    kmin, kmax = int(kv.min()), int(kv.max())
    gv = sel(raw_grades)
    gmin, gmax = int(gv.min()), int(gv.max())
    if gmin < -_FLOAT64_EXACT_INT or gmax > _FLOAT64_EXACT_INT:
        return None   # the bins subtract gmin in int64 and the levels are float64: not exact beyond 2**53
    width, n_levels = kmax - kmin + 1, gmax - gmin + 1
    rows = keys.shape[0]
    if width > _HIST_MAX_KEYS or n_levels > _HIST_MAX_LEVELS or rows * width * n_levels > 4 * keys.size + (1 << 20):
        return None
    index = kmax - keys                                   # bin 0 = best key
    index += (np.arange(rows, dtype=np.int64) * width)[:, None]
    index *= n_levels
    index += raw_grades if raw_grades.dtype != np.uint64 else raw_grades.astype(np.int64)
    index -= gmin
    counts = np.bincount(sel(index).ravel(), minlength=rows * width * n_levels).reshape(rows, width, n_levels)
    del index
    keep = np.flatnonzero(counts.any(axis=(1, 2)))
    levels = np.arange(gmin, gmax + 1, dtype=np.float64)
    stats = TieStats.from_histogram(counts[keep], levels, bin_keys=kmax - np.arange(width))
    return stats, keep


def rank_rows(grades: np.ndarray, keys: np.ndarray, valid: np.ndarray | None, row0: int, n_cols: int, *,
              plan: tuple[int, float | None] | None, ties: str, seed: int,
              judged: np.ndarray | None = None, judge_all: bool = False) -> tuple[RankedLists | None, np.ndarray]:
    """Ranked lists of a block of rows: float64 ``grades`` and higher-is-better ``keys`` (int64 or float64,
    from :func:`keys_higher_better`), both (B, n).

    ``plan`` (from :func:`topk_plan`) selects the top-k path; ``judged`` (default ``grades``) holds the
    grades R and the ideal DCG come from: the ``valid`` entries of a row, or with ``judge_all`` all of
    them (the items ``valid`` leaves out are then judged but not retrieved). Returns ``(ranked, labels)``: the global row numbers of the
    non-empty rows (None when every row is empty).
    """
    n_rows = grades.shape[0]
    rows = np.arange(row0, row0 + n_rows)
    judged = grades if judged is None else judged
    lengths = np.full(n_rows, n_cols, dtype=np.int64) if valid is None else valid.sum(axis=1)
    keep_rows = lengths > 0
    if not keep_rows.any():
        return None, rows[:0]
    if plan is not None and plan[0] < n_cols:
        kk = min(plan[0], n_cols)
        work = keys if valid is None else np.where(valid, keys, _worst(keys))
        kth = np.partition(work, n_cols - kk, axis=1)[:, n_cols - kk]
        if plan[1] is not None:
            # keep every item within the radius too: distance <= r, i.e. key >= -r (-floor(r) for integers)
            within = -int(np.floor(plan[1])) if keys.dtype.kind == "i" else -float(plan[1])
            kth = np.minimum(kth, within)
        keep = keys >= kth[:, None]
        if valid is not None:
            keep &= valid
        r_idx, c_idx = np.nonzero(keep)
        kv = keys[r_idx, c_idx]
        order = np.lexsort((_descending(kv), r_idx))
        r_idx, c_idx, sorted_keys = r_idx[order], c_idx[order], kv[order]
        sorted_grades = grades[r_idx, c_idx]
        counts = np.bincount(r_idx, minlength=n_rows)
    else:
        desc = _descending(keys)
        if valid is not None:   # padding sorts last (ties with real worst keys are cut off below)
            desc[~valid] = np.iinfo(np.int64).max if desc.dtype.kind == "i" else np.inf
        order = np.argsort(desc, axis=1)
        del desc
        r_all = np.repeat(np.arange(n_rows), n_cols)
        gather = order.ravel() + r_all * n_cols          # flat gathers (faster than take_along_axis)
        if valid is None:
            c_idx, r_idx = order.ravel(), r_all
        else:
            sv = np.take(valid.ravel(), gather)
            gather = gather[sv]
            c_idx, r_idx = order.ravel()[sv], r_all[sv]
        sorted_keys = np.take(keys.ravel(), gather)
        sorted_grades = np.take(grades.ravel(), gather)
        counts = lengths
    counts = counts[keep_rows]
    qptr = np.zeros(len(counts) + 1, dtype=np.int64)
    np.cumsum(counts, out=qptr[1:])
    judged_vals = judged[keep_rows].ravel() if valid is None or judge_all else judged[valid]
    if judge_all:
        lengths = np.full(n_rows, n_cols, dtype=np.int64)
    judged_ptr = np.zeros(len(counts) + 1, dtype=np.int64)
    np.cumsum(lengths[keep_rows], out=judged_ptr[1:])
    flat = (r_idx.astype(np.int64) + row0) * n_cols + c_idx
    input_order = flat
    columns = c_idx.astype(np.int64)
    ranked = RankedLists(qptr=qptr, keys=np.ascontiguousarray(sorted_keys),
                         grades=np.ascontiguousarray(sorted_grades, dtype=np.float64),
                         judged_ptr=judged_ptr, judged=np.asarray(judged_vals, dtype=np.float64),
                         trec_order_fn=lambda: columns, input_order=input_order)
    return ranked, rows[keep_rows]


def evaluate_blocks(blocks: Iterable[tuple[TieOrderings, np.ndarray]], opts: Options, what: str) -> QueryValues:
    """The values of blocks of rows: each block's tie orderings and the global numbers of its rows
    (``what`` names a row in errors: "row", "query"), evaluated one after the other and concatenated."""
    labels: list[np.ndarray] = []
    columns: dict[str, list[np.ndarray]] = {col: [] for col in opts.columns()}
    for orderings, rows in blocks:
        values, lower, upper = evaluate_stats(orderings, opts, labels=rows, what=what)
        labels.append(rows)
        for text, m in opts.measures.items():
            columns[text].append(values[m])
            if opts.bounds:
                columns[f"{text}_lower"].append(lower[m])
                columns[f"{text}_upper"].append(upper[m])
    if not labels:
        return QueryValues(np.zeros(0, dtype=np.int64), {col: np.zeros(0) for col in columns})
    return QueryValues(np.concatenate(labels), {col: np.concatenate(parts) for col, parts in columns.items()})


def _frames(values: QueryValues, opts: Options, index: Any) -> dict:
    """The per_query, lower and upper frames of :class:`~tierank.Results` (rows in block order)."""
    import pandas as pd

    def frame(suffix: str) -> pd.DataFrame:
        return pd.DataFrame({t: values.columns[t + suffix] for t in opts.measures}, index=index)
    return {"per_query": frame(""), "lower": frame("_lower") if opts.bounds else None,
            "upper": frame("_upper") if opts.bounds else None, "ties": opts.ties, "measures": opts.measures}


# -- the whole matrix ---------------------------------------------------------------------------------

def evaluate_matrix_blocked(relevance: Any, keys: Any, opts: Options, *, keyname: str = "scores",
                            lower_is_better: bool = False, mask: Any = None, block_size: int | None = None,
                            memory: int = DEFAULT_MEMORY, topk: bool | None = None) -> Results:
    """Evaluate a dense matrix block of rows by block of rows (see :func:`tierank.evaluate_matrix`).

    Parameters
    ----------
    relevance : array-like (n_rows, n_cols) or (n_cols,)
        Grades, any numeric dtype (converted to float64 one block at a time).
    keys : array-like, same shape
        Scores (higher is better) or, with ``lower_is_better=True``, distances; float32, float64 or
        integer (kept in their dtype, converted one block at a time; integers stay exact).
    opts : Options
        The checked options (with ``trec_eval_version=9`` the keys are rounded to float32 first, block by
        block).
    keyname : str
        Name of ``keys`` in error messages (``"scores"`` / ``"distances"``).
    block_size : int, optional
        Rows per block. Default: as many as fit ``memory`` bytes of working memory.
    memory : int, default=DEFAULT_MEMORY (512 MiB)
    topk : bool, optional
        Force (True) or forbid (False) the top-k fast path; default: used whenever every measure allows
        it and ``kmax`` is below the number of columns.

    Returns
    -------
    Results
        ``per_query`` indexed by row number; values do not depend on ``block_size``.

    Examples
    --------
    >>> import numpy as np
    >>> from tierank.engine.blocked import evaluate_matrix_blocked
    >>> from tierank.engine.options import Options
    >>> rel = np.array([[1, 0, 1, 0], [0, 1, 0, 0]])
    >>> dist = np.array([[0, 1, 1, 3], [2, 2, 2, 0]], dtype=np.uint8)
    >>> res = evaluate_matrix_blocked(rel, dist, Options.checked(["P@2"]), keyname="distances",
    ...                               lower_is_better=True, block_size=1)
    >>> res.per_query["P@2"].tolist()
    [0.75, 0.16666666666666666]
    """
    import pandas as pd

    grades = _as_numeric(relevance, "relevance")
    keys_arr = _as_numeric(keys, keyname)
    if keys_arr.shape != grades.shape:
        raise InputError(f"shape mismatch: relevance has shape {grades.shape}, {keyname} {keys_arr.shape}")
    if grades.shape[1] == 0 or grades.shape[0] == 0:
        raise InputError(f"empty input: relevance has shape {grades.shape}")
    valid_all = None
    if mask is not None:
        valid_all = np.asarray(mask)
        if valid_all.ndim == 1:
            valid_all = valid_all[None, :]
        if valid_all.shape != grades.shape:
            raise InputError(f"shape mismatch: mask has shape {valid_all.shape}, relevance {grades.shape}")
        if valid_all.dtype != bool:
            raise InputError("mask must be boolean (False marks padding)")
    mlist = opts.distinct
    plan = topk_plan(mlist)
    n_rows, n_cols = grades.shape
    if topk and plan is None:
        slow = [str(m) for m in mlist if "radius" not in m.params and m.reads != "judged"
                 and not (m.reads == "top_k" and m.cutoff is not None)]
        raise InputError("topk=True needs measures that only look at the top k (with @k), radius measures, "
                         f"or the judged grades (NumQ, NumRel); not {', '.join(slow)}")
    if topk is False or (plan is not None and plan[0] >= n_cols and plan[1] is None):
        plan = None
    step = block_rows(n_cols, topk=plan is not None, ties=opts.ties, bounds=opts.bounds, block_size=block_size,
                      memory=memory)
    n_empty = 0

    def blocks() -> Iterator[tuple[TieOrderings, np.ndarray]]:
        nonlocal n_empty
        for r0 in range(0, n_rows, step):  # loop over blocks of rows
            r1 = min(r0 + step, n_rows)
            v = None if valid_all is None else valid_all[r0:r1]
            g = np.array(_exact_block(grades[r0:r1], "relevance", v, r0), dtype=np.float64)   # a copy of its own
            k = keys_arr[r0:r1]
            if k.dtype.kind == "O" or (k.dtype.kind == "f" and k.dtype.itemsize > 8):
                k = _exact_block(k, keyname, v, r0)   # before the NaN check of float keys
            _check_block(g, k, keyname, v, r0)
            kf = keys_higher_better(k, keyname, lower_is_better, v, r0, as_float32=opts.scores_as_float32)
            counted = histogram_rows(grades[r0:r1], kf, v) if opts.ties in ORDER_FREE_MODES else None
            orderings: TieOrderings | None = None
            if counted is not None:   # integer keys and grades of small range: count, no sort
                stats, keep = counted
                rows, orderings = np.arange(r0, r1)[keep], TieOrderings(stats)
            else:
                ranked, rows = rank_rows(g, kf, v, r0, n_cols, plan=plan, ties=opts.ties, seed=opts.seed)
                if ranked is not None:   # None: every row of the block is masked out
                    orderings = TieOrderings.from_ranked(ranked, opts.seed)
                del g, kf
            n_empty += (r1 - r0) - len(rows)
            if orderings is not None and len(rows):
                yield orderings, rows

    values = evaluate_blocks(blocks(), opts, "row")
    if n_empty:
        warnings.warn(f"{n_empty} row(s) have no unmasked item and are left out", TierankWarning,
                      stacklevel=3)
        if n_empty == n_rows:
            raise InputError("every row is masked out: nothing to evaluate")
    return Results(**_frames(values, opts, pd.Index(values.labels, name="row")))


# -- binary codes -------------------------------------------------------------------------------------

def _histogram_rows(bits: int, n_levels: int, memory: int) -> int:
    # counts (int64), the thresholded copy and the tie statistics built from them: ~4 arrays of the size
    return max(1, memory // max(1, (bits + 1) * n_levels * 8 * 4))


def evaluate_codes_blocked(qw: np.ndarray, dw: np.ndarray, nbits: int, grader: Any, opts: Options, *,
                           average: str = "micro", distance_threshold: float | None = None,
                           block_size: int | None = None, memory: int = DEFAULT_MEMORY,
                           progress: bool | None = None) -> CodeResults:
    """Evaluate packed query codes ``qw`` against packed database codes ``dw`` (see
    :func:`tierank.evaluate_codes`), a block of queries at a time.

    For ``ties`` in ``expected`` / ``lower`` / ``upper`` / ``optimistic`` / ``pessimistic`` (and every
    bound) the tie statistics come straight from per-query histograms of (Hamming distance, grade)
    (:mod:`tierank.hashing.histogram`), no sort. The fixed orders ``input`` (database index), ``trec_eval``
    (database index descending) and ``random`` need an order of the items: there the distances of a block
    of queries are sorted as :func:`evaluate_matrix_blocked` sorts them, so both give the same values.
    ``grader``: the grades of a block of queries (:func:`tierank.hashing.labels.make_grader`).
    """
    import pandas as pd

    n_q, n_db = qw.shape[0], dw.shape[0]
    bar = ProgressBar(progress, n_q, "queries", "query")
    if opts.ties in FIXED_ORDER_MODES:
        plan = topk_plan(opts.distinct)
        if plan is not None and plan[0] >= n_db and plan[1] is None:
            plan = None
        step = block_rows(n_db, topk=plan is not None, ties=opts.ties, bounds=opts.bounds, block_size=block_size,
                          memory=memory)

        def block(r0: int, r1: int) -> tuple[TieOrderings, np.ndarray]:
            grades = grader.block(slice(r0, r1)).grades()
            dist = block_distances(qw[r0:r1], dw, nbits)
            ranked_grades = grades if distance_threshold is None else np.where(dist > distance_threshold, 0.0, grades)
            ranked, rows = rank_rows(ranked_grades, -dist.astype(np.float64), None, r0, n_db, plan=plan,
                                     ties=opts.ties, seed=opts.seed, judged=grades)
            assert ranked is not None   # every query is ranked against the whole (non-empty) database
            return TieOrderings.from_ranked(ranked, opts.seed), rows
        what = "query"
    else:
        levels_hint = getattr(grader, "levels", None)
        step = block_size or _histogram_rows(nbits, len(levels_hint) if levels_hint is not None else 16, memory)
        if block_size is None and levels_hint is None:
            # relevance= gives a (block, n_db) float64 grade matrix and its level indices per block
            step = max(1, min(step, memory // (n_db * 16)))

        def block(r0: int, r1: int) -> tuple[TieOrderings, np.ndarray]:
            bg = grader.block(slice(r0, r1))
            counts = block_histogram(qw[r0:r1], dw, nbits, bg)
            ranked_counts = apply_threshold(counts, bg.zero, distance_threshold)
            stats = histogram_stats(ranked_counts, bg.levels,
                                    judged_counts=counts if ranked_counts is not counts else None)
            return TieOrderings(stats), np.arange(r0, r1)
        what = "query"

    def blocks() -> Iterator[tuple[TieOrderings, np.ndarray]]:
        for r0 in range(0, n_q, step):  # loop over blocks of queries
            r1 = min(r0 + step, n_q)
            yield block(r0, r1)
            bar.update(r1 - r0)

    values = evaluate_blocks(blocks(), opts, what)
    bar.close()
    return CodeResults(**_frames(values, opts, pd.RangeIndex(n_q, name="query")), average=average,
                       query_class=grader.query_class)


# -- embeddings ---------------------------------------------------------------------------------------

def tie_mass(keys: np.ndarray, cutoffs: list[int], valid: np.ndarray | None = None) -> dict[int, np.ndarray]:
    """Per row of exact ``keys`` (higher is better) and cutoff ``k``: the number of items of the tie
    holding rank ``k`` that fall beyond rank ``k`` (0 when no tie straddles it, or ``k >= n``). ``valid``:
    the items ranked (the others are not retrieved)."""
    n_rows, n = keys.shape
    out = {k: np.zeros(n_rows, dtype=np.int64) for k in cutoffs}
    inside = [k for k in cutoffs if k < n]
    if not inside:
        return out
    if valid is not None:
        keys = np.where(valid, keys, _worst(keys))
    part = np.partition(keys, [n - k for k in inside], axis=1)
    n_valid = None if valid is None else valid.sum(axis=1)
    for k in inside:
        kth = part[:, n - k][:, None]          # the k-th best key of each row
        eq = keys == kth
        if valid is not None:
            eq &= valid
        out[k] = (keys > kth).sum(axis=1) + eq.sum(axis=1) - k
        if n_valid is not None:
            out[k][n_valid <= k] = 0
    return out


def window(keys: np.ndarray, k: int) -> np.ndarray:
    """The items of each row whose key is at least its ``k``-th best (the boundary tie whole)."""
    n = keys.shape[1]
    if k >= n:
        return np.ones(keys.shape, dtype=bool)
    kth = np.partition(keys, n - k, axis=1)[:, n - k]
    return keys >= kth[:, None]


def _integer_grades(g: np.ndarray) -> np.ndarray:
    """Grades as int64 when they are small integers (the counting path needs them), else as they are."""
    if g.size and np.all(g == np.floor(g)) and g.max() <= _HIST_MAX_LEVELS:
        return g.astype(np.int64)
    return g


def window_counts(counts: np.ndarray, k: int) -> np.ndarray:
    """``counts[q, bin, level]`` whose bins are ties, best first, cut to the top ``k`` of each query with
    the tie holding rank ``k`` kept whole (the bins after it emptied)."""
    total = counts.sum(axis=2)
    start = np.cumsum(total, axis=1) - total
    return counts * (start < k)[:, :, None]


def histogram_tie_mass(counts: np.ndarray, cutoffs: list[int]) -> dict[int, np.ndarray]:
    """:func:`tie_mass` from ``counts[q, bin, level]`` whose bins are ties, best first."""
    cum = np.cumsum(counts.sum(axis=2), axis=1)
    out = {}
    for k in cutoffs:
        b = np.minimum((cum < k).sum(axis=1), cum.shape[1] - 1)   # the bin holding rank k
        end = cum[np.arange(len(cum)), b]
        out[k] = np.where(end > k, end - k, 0)
    return out


class _Anchors:
    """The distinct keys of each query's graded items (its anchors), ascending, padded with +inf.

    ``approx``: each graded item's key as a float; ``exact``: None when those are exact, else their exact
    values (fractions, for the integer cosine), which decide every comparison closer than ``slack`` (per
    query) in floats."""

    def __init__(self, approx: np.ndarray, exact: list | None, rows: np.ndarray, n_rows: int,
                 slack: np.ndarray | None) -> None:
        if exact is None:
            order = np.lexsort((approx, rows))
            same = (approx[order][1:] == approx[order][:-1])
        else:
            order = np.array(sorted(range(len(rows)), key=lambda i: (rows[i], exact[i])), dtype=np.int64)
            same = np.array([exact[a] == exact[b] for a, b in zip(order[1:], order[:-1])], dtype=bool)
        r = rows[order]
        new = np.ones(len(order), dtype=bool)
        new[1:] = ~same | (r[1:] != r[:-1])
        order, r = order[new], r[new]
        self.m = np.bincount(r, minlength=n_rows)
        width = max(1, int(self.m.max(initial=0)))
        self.values = np.full((n_rows, width), np.inf)
        first = np.concatenate(([0], np.cumsum(self.m)[:-1]))
        col = np.arange(len(order)) - first[r]
        self.values[r, col] = approx[order]
        self.exact = None
        if exact is not None:
            self.exact = np.empty((n_rows, width), dtype=object)
            self.exact[r, col] = [exact[i] for i in order]
        self.slack = slack
        self.lowest = self.values[:, 0]            # +inf for a query with no graded item

    def bins(self, rows: np.ndarray, keys: np.ndarray, exact: Callable[[np.ndarray], list] | None) -> np.ndarray:
        """The bin of each key (of query ``rows``): 2a for a key strictly between anchors with ``a``
        anchors above it, 2a + 1 for a key equal to the anchor below ``a`` others (bins best first).
        ``exact(i)``: the exact values of keys ``i``, for the comparisons floats cannot decide."""
        decide = self.exact is not None and self.slack is not None and exact is not None
        if len(rows) and bool((rows[1:] >= rows[:-1]).all()):   # keys grouped by query (np.nonzero's order)
            below, upto = self._sorted_counts(rows, keys, exact if decide else None)
        else:
            a = self.values[rows]
            lt, le = a < keys[:, None], a <= keys[:, None]
            if decide:
                assert exact is not None and self.exact is not None and self.slack is not None
                i, j = np.nonzero(np.abs(a - keys[:, None]) <= self.slack[rows][:, None])
                if len(i):   # too close for floats: the exact values decide
                    v, ae = exact(i), self.exact[rows[i], j]
                    lt[i, j] = [x < y for x, y in zip(ae, v)]
                    le[i, j] = [x <= y for x, y in zip(ae, v)]
            below, upto = lt.sum(axis=1), le.sum(axis=1)
        return 2 * (self.m[rows] - upto) + (upto - below)

    def _sorted_counts(self, rows: np.ndarray, keys: np.ndarray, exact: Callable[[np.ndarray], list] | None
                       ) -> tuple[np.ndarray, np.ndarray]:
        """For keys grouped by query (``rows`` non-decreasing): how many of the query's anchors lie below
        each key, and how many at or below it, by binary searches in the query's sorted anchors (no row x
        anchor table: the corpus's keys are many, the anchors few). ``exact``: the anchors within the
        query's slack of a key are compared with it in exact values (None: the floats decide)."""
        lo = np.empty(len(rows), dtype=np.int64)
        hi = np.empty(len(rows), dtype=np.int64)
        present = np.flatnonzero(np.bincount(rows, minlength=len(self.m)))
        bounds = np.searchsorted(rows, np.append(present, present[-1] + 1))
        for q, s, e in zip(present.tolist(), bounds[:-1].tolist(), bounds[1:].tolist()):
            anchors, k = self.values[q, :self.m[q]], keys[s:e]
            if exact is None:
                lo[s:e] = np.searchsorted(anchors, k, side="left")
            else:   # anchors in [lo, hi) are within the slack of the key: too close for floats
                assert self.slack is not None
                lo[s:e] = np.searchsorted(anchors, k - self.slack[q], side="left")
                hi[s:e] = np.searchsorted(anchors, k + self.slack[q], side="right")
        if exact is None:
            # the anchors are distinct: a key is at or below one more anchor exactly when it equals the
            # next one (when there is a next one: not the +inf padding)
            nxt = self.values[rows, np.minimum(lo, self.values.shape[1] - 1)]
            return lo, lo + ((lo < self.m[rows]) & (nxt == keys))
        assert self.exact is not None
        below, upto = lo.copy(), lo.copy()
        close = np.flatnonzero(hi > lo)
        for i, v in zip(close.tolist(), exact(close) if len(close) else []):
            near = self.exact[rows[i], lo[i]:hi[i]]
            below[i] += sum(a < v for a in near)
            upto[i] += sum(a <= v for a in near)
        return below, upto


def anchored_counts(scorer: Any, relevance: Any, rows: slice, kmax: int | None, tile_cols: int
                    ) -> tuple[np.ndarray, np.ndarray, list[list] | None]:
    """Tie statistics of a block of queries against the whole corpus without ranking it.

    Every measure depends on a ranking only through the grades in it, so the items of grade 0 between
    two consecutive keys of graded items (the query's anchors) are interchangeable: they can be counted
    as one bin. With anchors ``u_1 > ... > u_m``, the bins are ``> u_1``, ``== u_1``, ``(u_2, u_1)``,
    ``== u_2``, ..., ``< u_m`` (2m + 1 of them): ties stay whole (a tie holding a graded item is an
    ``==`` bin) and merging ties of grade 0 changes no measure in any tie mode that does not order items
    by their position in the corpus. The corpus is scored tile by tile, and only the keys at or above the
    lowest anchor are placed; the others fall in the last bin. Keys are exact (``scorer.approx``: exact
    floats), or floats whose comparisons closer than ``scorer.slack`` are decided by exact values (the
    integer cosine).

    ``kmax``: also keep, per query, every key at or above its ``kmax``-th best (the boundary tie whole),
    for the tie mass and the top-k window. Returns ``(counts[q, bin, level], levels, the top keys of
    each query, best first, as exact values)``.
    """
    n_rows, n_c = rows.stop - rows.start, scorer.n_corpus
    r_rel, c_rel, g_rel = relevance.entries(rows)
    slack = scorer.slack(rows)                      # None: the floats are exact
    a_raw = scorer.pair_keys(rows.start + r_rel, c_rel)
    a_exact = None if slack is None else scorer.exact_values(a_raw, c_rel)
    anchors = _Anchors(scorer.approx(a_raw, c_rel), a_exact, r_rel, n_rows, slack)
    n_bins = 2 * anchors.values.shape[1] + 1
    totals = np.zeros(n_rows * n_bins, dtype=np.int64)
    last_bin = np.arange(n_rows) * n_bins + 2 * anchors.m
    margin = np.zeros(n_rows) if slack is None else slack
    tau = np.full(n_rows, -np.inf)                 # keys below tau are not among a query's kmax best
    top_r, top_v, top_raw, top_c = (np.zeros(0, dtype=np.int64), np.zeros(0), np.zeros(0),
                                    np.zeros(0, dtype=np.int64))
    for c0 in range(0, n_c, tile_cols):             # loop over tiles of the corpus
        c1 = min(c0 + tile_cols, n_c)
        cols = slice(c0, c1)
        raw = scorer.tile(rows, cols)
        tile = scorer.approx(raw, cols)
        if kmax is not None and c0 == 0 and kmax < c1:   # a first tau: the first tile's kmax-th best keys
            tau = np.partition(tile, c1 - kmax, axis=1)[:, c1 - kmax].astype(np.float64)
        floor = (np.minimum(anchors.lowest, tau) if kmax is not None else anchors.lowest) - margin
        # anchors and tau are values of the tile's dtype (exact integers, or floats of the precision)
        r, c = np.nonzero(tile >= floor[:, None].astype(tile.dtype))
        v = tile[r, c]
        v_raw = raw[r, c] if raw is not tile else v

        def exact(i: np.ndarray) -> list:
            return scorer.exact_values(v_raw[i], c[i] + c0)
        placed = np.bincount(r, minlength=n_rows)
        totals[last_bin] += (c1 - c0) - placed
        totals += np.bincount(r * n_bins + anchors.bins(r, v.astype(np.float64), exact), minlength=len(totals))
        if kmax is not None:   # the running top kmax of each query, boundary tie whole
            keep = v >= tau[r] - margin[r]
            top_r = np.concatenate([top_r, r[keep]])
            top_v = np.concatenate([top_v, v[keep].astype(np.float64)])
            top_raw = np.concatenate([top_raw, v_raw[keep].astype(np.float64)])
            top_c = np.concatenate([top_c, c[keep] + c0])
            order = np.lexsort((-top_v, top_r))
            top_r, top_v, top_raw, top_c = top_r[order], top_v[order], top_raw[order], top_c[order]
            first = np.searchsorted(top_r, np.arange(n_rows))
            count = np.bincount(top_r, minlength=n_rows)
            full = count >= kmax
            tau = np.where(full, top_v[np.minimum(first + kmax - 1, len(top_v) - 1)] if len(top_v) else -np.inf,
                           -np.inf)
            keep = top_v >= tau[top_r] - margin[top_r]
            top_r, top_v, top_raw, top_c = top_r[keep], top_v[keep], top_raw[keep], top_c[keep]
    levels = np.unique(np.concatenate(([0.0], g_rel)))
    counts = np.zeros((n_rows, n_bins, len(levels)), dtype=np.int64)
    counts[:, :, 0] = totals.reshape(n_rows, n_bins)
    a_approx = scorer.approx(a_raw, c_rel).astype(np.float64)
    rel_bins = anchors.bins(r_rel, a_approx, None if a_exact is None else lambda i: [a_exact[j] for j in i])
    lev = np.searchsorted(levels, g_rel)
    np.add.at(counts, (r_rel, rel_bins, lev), 1)
    np.subtract.at(counts, (r_rel, rel_bins, np.zeros_like(lev)), 1)
    tops = None
    if kmax is not None:
        bounds = np.searchsorted(top_r, np.arange(n_rows + 1))
        tops = []
        for i in range(n_rows):   # each query's few top keys, exact, best first
            lo, hi = bounds[i], bounds[i + 1]
            if slack is None:
                tops.append(list(top_v[lo:hi]))
            else:
                tops.append(sorted(scorer.exact_values(top_raw[lo:hi], top_c[lo:hi]), reverse=True))
    return counts, levels, tops


def _top_tie_mass(tops: list[list], cutoffs: list[int], n: int) -> dict[int, np.ndarray]:
    out = {}
    for k in cutoffs:
        mass = np.zeros(len(tops), dtype=np.int64)
        if k < n:
            for i, t in enumerate(tops):   # loop over queries: their few top keys
                kth = t[k - 1]
                mass[i] = sum(1 for x in t if x >= kth) - k
        out[k] = mass
    return out


def _anchored_window(counts: np.ndarray, tops: list[list], k: int) -> np.ndarray:
    """Anchored ``counts`` cut to the items at or above each query's ``k``-th best key (the tie whole).
    A bin cut in two is a gap of grade 0 between anchors: its first items are kept."""
    retained = np.array([sum(1 for x in t if x >= t[min(k, len(t)) - 1]) for t in tops])
    total = counts.sum(axis=2)
    start = np.cumsum(total, axis=1) - total
    kept = np.clip(retained[:, None] - start, 0, total)
    out = counts * (kept == total)[:, :, None]
    partial = (kept > 0) & (kept < total)
    out[partial, 0] = kept[partial]
    return out


def evaluate_embeddings_blocked(scorer: Any, relevance: Any, opts: Options, *, index: Any, k: int | None = None,
                                block_size: int | None = None, memory: int = DEFAULT_MEMORY,
                                progress: bool | None = None, user_bounds: bool = False,
                                reference: EmbeddingResults | None = None, describe: dict | None = None,
                                rescorer: Any = None, candidates: int | None = None) -> EmbeddingResults:
    """Evaluate embeddings (see :func:`tierank.evaluate_embeddings`) a block of queries at a time.

    ``scorer`` (:class:`tierank.embeddings.scores.Scorer`) gives exact keys tile by tile; ``relevance``
    (:class:`tierank.embeddings.relevance.Relevance`) the grades. Three ways to the tie statistics of a
    block, the same values whatever the block size:

    * **counted** (``ties`` not a fixed order): binary embeddings by per-query histograms of (Hamming
      distance, grade), as :func:`evaluate_codes_blocked` counts them; integer and float scores by
      :func:`anchored_counts` (no sort, the corpus in tiles, memory per query independent of the corpus
      size);
    * **ranked** (the fixed orders ``input``, ``trec_eval``, ``random``; relevance from labels; two
      stages): the whole row of keys, ranked as :func:`evaluate_matrix_blocked` ranks a block, through
      the @k window when every measure has a cutoff.

    ``k``: each query retrieves its top ``k`` (boundary tie whole); the other items are judged but not
    retrieved. Two stages: ``rescorer`` (another Scorer) scores the first stage's top ``candidates``
    (boundary tie whole), which make the ranking. ``opts`` must have ``bounds=True``: the tie audit needs
    them; ``user_bounds`` says whether the result shows them.
    """
    n_q, n_c = scorer.n_queries, scorer.n_corpus
    cutoffs = sorted({m.cutoff for m in opts.distinct if m.cutoff is not None} | ({int(k)} if k is not None else set()))
    kmax = max(cutoffs) if cutoffs else None
    path = "ranked"
    if rescorer is None and opts.ties in ORDER_FREE_MODES:
        if scorer.mode == "bits":
            path = "histogram"
        elif relevance.sparse:
            path = "anchored"
    bar = ProgressBar(progress, n_q, "queries", "query")
    masses: dict[int, list[np.ndarray]] = {c: [] for c in cutoffs}

    if path == "histogram":
        step = block_size or max(1, memory // ((scorer.q.nbits + 1) * 8 * 4 * 4))

        def block(r0: int, r1: int) -> tuple[TieOrderings, np.ndarray]:
            bg = relevance.block(slice(r0, r1))
            counts = block_histogram(scorer.q.words[r0:r1], scorer.c.words, scorer.q.nbits, bg)
            for c, v in histogram_tie_mass(counts, cutoffs).items():
                masses[c].append(v)
            ranked = counts if k is None else window_counts(counts, int(k))
            stats = histogram_stats(ranked, bg.levels, judged_counts=counts if ranked is not counts else None)
            return TieOrderings(stats), np.arange(r0, r1)
    elif path == "anchored":
        step = block_size or 256
        tile_cols = 1024 if scorer.mode == "float" else 8192

        def block(r0: int, r1: int) -> tuple[TieOrderings, np.ndarray]:
            counts, levels, tops = anchored_counts(scorer, relevance, slice(r0, r1), kmax, tile_cols)
            if tops is not None:
                for c, v in _top_tie_mass(tops, cutoffs, n_c).items():
                    masses[c].append(v)
            ranked = counts
            if k is not None and k < n_c:
                assert tops is not None   # kept up to kmax >= k
                ranked = _anchored_window(counts, tops, int(k))
            stats = TieStats.from_histogram(ranked, levels, judged_counts=counts if ranked is not counts else None)
            return TieOrderings(stats), np.arange(r0, r1)
    else:
        plan = (int(k), None) if k is not None else topk_plan(opts.distinct)
        if plan is not None and plan[0] >= n_c:
            plan = None
        step = block_rows(n_c, topk=plan is not None, ties=opts.ties, bounds=True, block_size=block_size,
                          memory=memory)

        # keys are computed for several blocks at once (a GEMM, not one matrix-vector product per query)
        key_step = max(1, min(64, memory // 4 // max(1, n_c * 8)) // step) * step
        cache: dict[str, Any] = {"start": -1}

        def keys_of(r0: int, r1: int) -> tuple[np.ndarray, np.ndarray | None]:
            k0 = r0 - r0 % key_step
            if cache["start"] != k0:
                rows = slice(k0, min(k0 + key_step, n_q))
                keys, valid = scorer.row_keys(rows), None
                if rescorer is not None:   # two stages: the first one's candidates, scored by the second
                    assert candidates is not None
                    valid = window(keys, candidates)
                    keys = rescorer.row_keys(rows)
                cache.update(start=k0, keys=keys, valid=valid)
            v = cache["valid"]
            return cache["keys"][r0 - k0:r1 - k0], None if v is None else v[r0 - k0:r1 - k0]

        def block(r0: int, r1: int) -> tuple[TieOrderings, np.ndarray]:
            keys, valid = keys_of(r0, r1)
            grades = relevance.dense(slice(r0, r1))
            for c, v in tie_mass(keys, cutoffs, valid).items():
                masses[c].append(v)
            counted = None
            if opts.ties in ORDER_FREE_MODES and plan is None and valid is None:
                counted = histogram_rows(_integer_grades(grades), keys, None)
            if counted is not None:   # integer keys of small range: count, no sort
                stats, keep = counted
                return TieOrderings(stats), np.arange(r0, r1)[keep]
            ranked, rows = rank_rows(grades, keys, valid, r0, n_c, plan=plan, ties=opts.ties, seed=opts.seed,
                                     judge_all=True)
            assert ranked is not None   # every query is ranked against the whole (non-empty) corpus
            return TieOrderings.from_ranked(ranked, opts.seed), rows

    def blocks() -> Iterator[tuple[TieOrderings, np.ndarray]]:
        for r0 in range(0, n_q, step):  # loop over blocks of queries
            r1 = min(r0 + step, n_q)
            yield block(r0, r1)
            bar.update(r1 - r0)

    values = evaluate_blocks(blocks(), opts, "query")
    bar.close()
    frames = _frames(values, opts, index)
    tie_masses = {c: np.concatenate(v) if v else np.zeros(0, np.int64) for c, v in masses.items()}
    lower, upper = frames["lower"], frames["upper"]
    if not user_bounds:
        frames["lower"] = frames["upper"] = None
    res = EmbeddingResults(**frames, **(describe or {}))
    res.audit = build_audit(res.per_query, lower, upper, res.mean, tie_masses, reference, res.aggregate_table)
    return res
