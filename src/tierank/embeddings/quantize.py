"""Embeddings as arrays of exact numbers: float precisions rounded, integer precisions quantized.

Quantization follows sentence-transformers' ``quantize_embeddings`` (``sentence_transformers/util/
quantization.py``, version 6.2) operation for operation, so the same float embeddings give the same bytes:

* ``int8`` / ``uint8``: ``ranges`` = per-dimension ``(min, max)`` of ``calibration_embeddings`` (or of the
  embeddings themselves), as float32; ``steps = (max - min) / 255`` (1 where 0);
  ``q = clip(floor((x - min) / steps), 0, 255)``, minus 128 for ``int8``. The arithmetic is numpy's, in the
  dtype numpy gives ``x - min`` (float32 for float32 embeddings), as in sentence-transformers.
* ``binary`` / ``ubinary``: ``np.packbits(x > 0)`` along the last axis (``ubinary``, uint8), minus 128 as
  int8 (``binary``).

Already quantized arrays are taken as they are: int8 / uint8 values for ``int8`` / ``uint8``, packed bytes
for ``binary`` (int8, offset -128) and ``ubinary`` (uint8).

Float precisions: ``float32`` and ``float16`` are numpy's conversions of the values (float64 input is rounded
once, to nearest even); ``bfloat16`` (numpy has none) is float32 rounded to its top 16 bits, to nearest even
(``round_significand`` with 8 significant bits on the float32 values), as ``torch.Tensor.to(
torch.bfloat16)`` rounds float32. Every value is then held in float64, which holds them exactly.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np

from ..errors import InputError

__all__ = ["PRECISIONS", "FLOAT_PRECISIONS", "INT_PRECISIONS", "BIT_PRECISIONS", "Encoded", "encode",
           "quantize", "as_float_matrix", "round_significand", "FLOAT_FORMATS"]

FLOAT_PRECISIONS = ("float32", "float16", "bfloat16")
INT_PRECISIONS = ("int8", "uint8")
BIT_PRECISIONS = ("binary", "ubinary")
PRECISIONS = FLOAT_PRECISIONS + INT_PRECISIONS + BIT_PRECISIONS

#: significant bits (with the implicit one), smallest exponent of the last place (subnormals) and largest
#: finite value of each float precision
FLOAT_FORMATS = {
    "float32": (24, -149, float(np.finfo(np.float32).max)),
    "float16": (11, -24, float(np.finfo(np.float16).max)),
    "bfloat16": (8, -133, float.fromhex("0x1.fep127")),
}


@dataclass(repr=False, eq=False)
class Encoded:
    """Embeddings in one precision. ``kind``: ``"float"`` (``values`` float64, each exactly a value of the
    precision), ``"int"`` (``values`` int8 / uint8 as given or quantized) or ``"bits"`` (``words``: packed
    bits as uint64 words, ``nbits`` bits, padding 0; ``values``: the packed bytes as uint8)."""

    precision: str
    kind: str
    values: np.ndarray
    words: np.ndarray | None = None
    nbits: int = 0


def round_significand(x: np.ndarray, precision: str) -> np.ndarray:
    """``x`` (float64) rounded once, to nearest even, to ``precision`` (float32, float16, bfloat16), as
    float64. Beyond the largest finite value: +-inf (as IEEE rounding gives, for the overflow threshold
    of round to nearest: values at or beyond max + half an ulp).

    >>> round_significand(np.array([1 + 2**-8, 1 + 3 * 2**-9, 1e-45]), "bfloat16").tolist()
    [1.0, 1.0078125, 0.0]
    """
    bits, emin, fmax = FLOAT_FORMATS[precision]
    x = np.asarray(x, dtype=np.float64)
    _, e = np.frexp(x)                              # |x| in [2**(e-1), 2**e)
    quantum = np.ldexp(1.0, np.maximum(e - bits, emin))
    with np.errstate(over="ignore", invalid="ignore"):
        out = np.rint(x / quantum) * quantum         # x / quantum is exact: a power of two
        out = np.where(np.abs(out) > fmax, np.copysign(np.inf, x), out)
    return np.where(np.isfinite(x), out, x)


def as_float_matrix(x: Any, name: str) -> np.ndarray:
    """``x`` (numpy, torch, a list, anything with ``__array__``) as a 2-D float or integer numpy array."""
    if hasattr(x, "detach") and hasattr(x, "cpu"):   # a torch tensor (bfloat16 has no numpy dtype)
        import torch

        t = x.detach().cpu()
        x = t.to(torch.float32).numpy() if t.dtype == torch.bfloat16 else t.numpy()   # exact
    try:
        arr = np.asarray(x)
    except (TypeError, ValueError):
        raise InputError(f"{name} must be a numeric array (n, dim)") from None
    if arr.dtype == bool:   # unpacked bits: values 0 / 1 (``binary`` keeps the ones, as x > 0 does)
        arr = arr.astype(np.float32)
    if arr.dtype.kind not in "iuf":
        raise InputError(f"{name} must be a numeric array (n, dim), got dtype {arr.dtype}")
    if arr.ndim == 1:
        arr = arr[None, :]
    if arr.ndim != 2:
        raise InputError(f"{name} must be a 2-D array (n, dim), got {arr.ndim} dimensions")
    if arr.shape[0] == 0 or arr.shape[1] == 0:
        raise InputError(f"{name} is empty (shape {arr.shape})")
    if arr.dtype.kind == "f" and not np.isfinite(arr).all():
        row = int(np.flatnonzero(~np.isfinite(arr).all(axis=1))[0])
        raise InputError(f"{name} contains NaN or an infinite value (row {row})")
    return arr


def quantize(x: np.ndarray, precision: str, ranges: np.ndarray | None) -> np.ndarray:
    """Float embeddings to ``precision`` as sentence-transformers' ``quantize_embeddings`` does."""
    if precision in INT_PRECISIONS:
        assert ranges is not None
        starts = ranges[0, :]
        steps = (ranges[1, :] - starts) / 255
        steps = np.where(steps == 0, 1, steps)
        q_vals = np.clip(np.floor((x - starts) / steps), 0, 255)
        return q_vals.astype(np.uint8) if precision == "uint8" else (q_vals - 128).astype(np.int8)
    packed = np.packbits(x > 0, axis=-1)
    return packed if precision == "ubinary" else (packed - 128).astype(np.int8)


def quantization_ranges(embeddings: np.ndarray, calibration: Any, name: str) -> np.ndarray:
    """Per-dimension (min, max) as float32, from ``calibration`` or else ``embeddings``."""
    source = embeddings
    if calibration is not None:
        source = as_float_matrix(calibration, "calibration_embeddings")
        if source.shape[1] != embeddings.shape[1]:
            raise InputError(f"calibration_embeddings has {source.shape[1]} dimensions, {name} "
                             f"{embeddings.shape[1]}")
    elif embeddings.shape[0] == 1:
        raise InputError(f"cannot compute int8/uint8 quantization ranges of {name} from a single embedding: "
                         "give calibration_embeddings=")
    return np.vstack((source.min(axis=0), source.max(axis=0))).astype(np.float32, copy=False)


def _words(packed: np.ndarray) -> np.ndarray:
    """Packed bytes (n, B) as uint64 words (n, ceil(B / 8)), zero padded."""
    n, nb = packed.shape
    out = np.zeros((n, -(-nb // 8) * 8), dtype=np.uint8)
    out[:, :nb] = packed
    return out.view(np.uint64)


def encode(x: np.ndarray, precision: str, name: str, ranges: np.ndarray | None = None) -> Encoded:
    """``x`` (from ``as_float_matrix``) in ``precision``: quantized from floats, or taken as it is."""
    if precision in FLOAT_PRECISIONS:
        if x.dtype.kind != "f":
            raise InputError(f"{name} holds integers ({x.dtype}) but precision {precision!r} needs float embeddings")
        if precision == "float32":
            with np.errstate(over="ignore"):   # a value beyond float32's range: refused below
                v = x.astype(np.float32).astype(np.float64)
        elif precision == "float16":
            v = round_significand(x.astype(np.float64), "float16")
        else:   # bfloat16: from float32, as torch rounds float32 to bfloat16
            with np.errstate(over="ignore"):
                v = round_significand(x.astype(np.float32).astype(np.float64), "bfloat16")
        beyond = ~np.isfinite(v).all(axis=1)   # finite input (checked) that rounds to infinity
        if beyond.any():
            raise InputError(f"{name} holds a value beyond {precision}'s range (row {int(np.flatnonzero(beyond)[0])}): "
                             "scale the embeddings or choose a wider precision")
        return Encoded(precision, "float", v)
    if x.dtype.kind == "f":
        if precision in INT_PRECISIONS and ranges is None:
            raise InputError(f"{name}: int8/uint8 quantization needs ranges")   # the caller computes them
        x = quantize(x, precision, ranges)
    want = np.int8 if precision in ("int8", "binary") else np.uint8
    if x.dtype != want:
        raise InputError(f"{name} has dtype {x.dtype}; precision {precision!r} takes float embeddings (quantized "
                         f"here) or already quantized {np.dtype(want).name} values")
    if precision in INT_PRECISIONS:
        return Encoded(precision, "int", x)
    packed = x.view(np.uint8) ^ np.uint8(0x80) if precision == "binary" else x   # undo the -128 offset
    packed = np.ascontiguousarray(packed)
    return Encoded(precision, "bits", packed, _words(packed), packed.shape[1] * 8)
