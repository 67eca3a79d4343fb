"""Binary codes: validation, packing into machine words, unpacking.

Accepted formats (one code per row):

* unpacked, shape ``(n, bits)``: booleans, ``{0, 1}`` or ``{-1, +1}`` values (any integer or float dtype;
  ``np.sign`` output works as long as it has no zeros);
* packed (``packed=True``), shape ``(n, n_words)``: ``uint8`` or ``uint64`` words along the last axis, with
  ``bits=`` when the last word is only partly used.

Bit order (the one :func:`pack_codes` writes and :func:`unpack_codes` reads): code bit ``j`` is bit
``7 - j % 8`` of byte ``j // 8`` (``np.packbits``' default, big-endian within a byte), and a ``uint64`` word
is 8 consecutive bytes in memory order. Hamming distances do not depend on the bit order as long as
queries and database use the same one; ``bits=`` only needs the padding bits (past ``bits``, in this
order) to be 0.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from ..errors import InputError

__all__ = ["pack_codes", "unpack_codes", "as_words", "check_pair"]

_WORD_DTYPES = {"uint8": np.uint8, "uint64": np.uint64}


def _as_array(codes: Any, name: str) -> np.ndarray:
    try:
        arr = np.asarray(codes)
    except (TypeError, ValueError):
        raise InputError(f"{name} must be an array of binary codes") from None
    if arr.dtype == object or arr.dtype.kind not in "biuf":
        raise InputError(f"{name} must be a numeric or boolean array of binary codes, got dtype {arr.dtype}")
    return arr


def _two_d(arr: np.ndarray, name: str, allow_1d: bool) -> np.ndarray:
    if arr.ndim == 1 and allow_1d:
        return arr[None, :]
    if arr.ndim != 2:
        want = "1-D (one code) or 2-D" if allow_1d else "2-D"
        raise InputError(f"{name} must be {want} (rows = codes), got {arr.ndim} dimension(s) "
                         f"with shape {arr.shape}")
    return arr


def _to_bits(arr: np.ndarray, name: str) -> np.ndarray:
    """Unpacked codes -> bool array: {0,1}, {-1,+1} or bool; anything else is an InputError."""
    if arr.dtype == bool:
        return arr
    if arr.size == 0:
        return arr.astype(bool)
    if arr.dtype.kind == "f" and np.isnan(arr).any():
        raise InputError(f"{name} contains NaN; codes must be {{0, 1}}, {{-1, +1}} or boolean")
    is_one = arr == 1
    is_zero = arr == 0
    is_minus = arr == -1
    if not np.all(is_one | is_zero | is_minus):
        bad = arr[~(is_one | is_zero | is_minus)].flat[0]
        raise InputError(f"{name} is not binary: found the value {bad!r}; codes must be {{0, 1}}, "
                         "{-1, +1} or boolean (or packed words with packed=True)")
    if is_zero.any() and is_minus.any():
        raise InputError(f"{name} mixes 0 and -1: use {{0, 1}} or {{-1, +1}} codes, not both "
                         "(np.sign gives 0 for exact zeros)")
    return is_one


def _padding_mask(bits: int, n_bytes: int) -> np.ndarray:
    """uint8 mask of the padding bits (positions >= bits) of a packed code of ``n_bytes`` bytes."""
    pad = np.zeros(n_bytes * 8, dtype=bool)
    pad[bits:] = True
    return np.packbits(pad)


def pack_codes(codes: Any, *, dtype: str | type = "uint64") -> np.ndarray:
    """Pack binary codes into words, one row per code.

    Parameters
    ----------
    codes : array-like of shape (n, bits) or (bits,)
        Booleans, ``{0, 1}`` or ``{-1, +1}`` values.
    dtype : {"uint64", "uint8"}, default="uint64"
        Word type. The last word is zero-padded; keep ``bits`` to unpack exactly.

    Returns
    -------
    ndarray of shape (n, ceil(bits / word_bits))

    Examples
    --------
    >>> import numpy as np
    >>> from tierank.hashing import pack_codes, unpack_codes
    >>> words = pack_codes([[1, -1, -1, 1, 1, 1, -1, -1, 1]], dtype="uint8")
    >>> words
    array([[156, 128]], dtype=uint8)
    >>> unpack_codes(words, bits=9)
    array([[1, 0, 0, 1, 1, 1, 0, 0, 1]], dtype=uint8)
    """
    word = _word_dtype(dtype)
    arr = _two_d(_as_array(codes, "codes"), "codes", allow_1d=True)
    bits = _to_bits(arr, "codes")
    packed = np.packbits(bits, axis=1)                     # (n, ceil(bits / 8)) uint8
    if word == np.uint8:
        return packed
    n_words = -(-packed.shape[1] // 8)
    out = np.zeros((packed.shape[0], n_words * 8), dtype=np.uint8)
    out[:, :packed.shape[1]] = packed
    return out.view(np.uint64)


def unpack_codes(words: Any, bits: int | None = None, *, dtype: Any = np.uint8) -> np.ndarray:
    """Unpack ``uint8`` / ``uint64`` words (as written by :func:`pack_codes`) into ``{0, 1}`` codes.

    Parameters
    ----------
    words : array-like of uint8 or uint64, shape (n, n_words) or (n_words,)
    bits : int, optional
        Code length; default: every bit of the words.
    dtype : numpy dtype, default=uint8
        Output dtype (``bool`` for booleans).

    Returns
    -------
    ndarray of shape (n, bits)

    Examples
    --------
    >>> import numpy as np
    >>> from tierank.hashing import unpack_codes
    >>> unpack_codes(np.array([[5]], dtype=np.uint8))
    array([[0, 0, 0, 0, 0, 1, 0, 1]], dtype=uint8)
    """
    w, nbits = as_words(words, "words", packed=True, bits=bits, allow_1d=True)
    raw = np.ascontiguousarray(w).view(np.uint8)
    return np.unpackbits(raw, axis=1, count=nbits).astype(dtype)


def _word_dtype(dtype: Any) -> type:
    key = np.dtype(dtype).name if not isinstance(dtype, str) else dtype
    if key not in _WORD_DTYPES:
        raise InputError(f"dtype must be 'uint8' or 'uint64', got {dtype!r}")
    return _WORD_DTYPES[key]


def as_words(codes: Any, name: str, *, packed: bool = False, bits: int | None = None,
             allow_1d: bool = False) -> tuple[np.ndarray, int]:
    """Validate codes in any accepted format; return ``(uint64 words of shape (n, n_words), bits)``.

    Padding bits of the words are 0, so the Hamming distance of two rows is the popcount of their XOR.
    Errors name the argument (``name``).
    """
    arr = _two_d(_as_array(codes, name), name, allow_1d)
    if bits is not None and (isinstance(bits, bool) or not isinstance(bits, (int, np.integer)) or bits <= 0):
        raise InputError(f"bits must be a positive integer, got {bits!r}")
    if not packed:
        if bits is not None and bits != arr.shape[1]:
            raise InputError(f"{name} has {arr.shape[1]} bits per code (columns) but bits={bits}")
        if arr.shape[1] == 0:
            raise InputError(f"{name} has 0 bits per code (shape {arr.shape})")
        return pack_codes(_to_bits(arr, name)), int(arr.shape[1])
    if arr.dtype not in (np.uint8, np.uint64):
        raise InputError(f"{name}: packed codes must be uint8 or uint64 words, got dtype {arr.dtype} "
                         "(use packed=False for 0/1, -1/+1 or boolean codes)")
    word_bits = arr.dtype.itemsize * 8
    total = arr.shape[1] * word_bits
    if arr.shape[1] == 0:
        raise InputError(f"{name} has 0 words per code (shape {arr.shape})")
    nbits = total if bits is None else int(bits)
    if nbits > total or nbits <= total - word_bits:
        raise InputError(f"{name}: bits={nbits} does not fit {arr.shape[1]} {arr.dtype} word(s) per code "
                         f"({total - word_bits + 1}..{total} bits)")
    raw = np.ascontiguousarray(arr).view(np.uint8) if arr.dtype == np.uint64 else np.ascontiguousarray(arr)
    if nbits < total:
        mask = _padding_mask(nbits, raw.shape[1])
        used = -(-nbits // 8)
        if np.any(raw[:, used - 1:] & mask[used - 1:]):
            row = int(np.flatnonzero(np.any(raw[:, used - 1:] & mask[used - 1:], axis=1))[0])
            raise InputError(f"{name}: row {row} has bits set past bits={nbits} (the padding must be 0; "
                             "bit j of a code is bit 7 - j % 8 of byte j // 8, as np.packbits writes it)")
    n_bytes = raw.shape[1]
    n_words = -(-n_bytes // 8)
    if n_bytes == n_words * 8:
        return raw.view(np.uint64), nbits
    out = np.zeros((raw.shape[0], n_words * 8), dtype=np.uint8)
    out[:, :n_bytes] = raw
    return out.view(np.uint64), nbits


def check_pair(query_codes: Any, db_codes: Any, *, packed: bool = False,
               bits: int | None = None) -> tuple[np.ndarray, np.ndarray, int]:
    """Validate query and database codes together: ``(query words, database words, bits)``.

    Query codes may be one code (1-D); database codes must be 2-D. The bit widths must match.
    """
    qw, qbits = as_words(query_codes, "query_codes", packed=packed, bits=bits, allow_1d=True)
    dw, dbits = as_words(db_codes, "db_codes", packed=packed, bits=bits)
    if qbits != dbits or qw.shape[1] != dw.shape[1]:
        raise InputError(f"bit widths differ: query_codes has {qbits} bits per code, db_codes {dbits}")
    if dw.shape[0] == 0:
        raise InputError("db_codes is empty (0 codes)")
    if qw.shape[0] == 0:
        raise InputError("query_codes is empty (0 codes)")
    return qw, dw, qbits
