"""The measure-string grammar, parsed by hand (no ``eval``, no ``ast``).

::

    measure := NAME [ "(" [ param { "," param } ] ")" ] [ "@" CUTOFF ] [ "-l" NUMBER ]
    param   := IDENT "=" value
    value   := NUMBER | STRING | "True" | "False" | "None" | "{" [ value ":" value { "," ... } ] "}"

``NAME`` may contain letters, digits, ``_`` and ``-`` (ranx's ``r-precision``); the ``-lN`` suffix is
ranx's relevance level (``map@100-l2`` is ``AP(rel=2)@100``).

Every failure is an :class:`~tierank.errors.InputError`: numbers longer than :data:`MAX_NUMBER_CHARS`
characters, integers beyond every float and values nested deeper than :data:`MAX_NESTING` are refused
before Python's own limits (its 4300-digit integer conversion, float()'s OverflowError, its recursion
depth) would raise something else.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Any

from ..errors import InputError

__all__ = ["ParsedMeasure", "parse_measure_string", "number_value", "MAX_NUMBER_CHARS", "MAX_INT_DIGITS",
           "MAX_NESTING"]

# the longest number literal read: a float has at most 309 integer digits (1.8e308), and a longer integer
# is no cutoff, grade or parameter any measure can use; Python refuses int() of more than 4300 digits
MAX_NUMBER_CHARS = 400
# the most digits of an integer literal: 10**308 - 1 still converts to a float (at most 1.8e308)
MAX_INT_DIGITS = 308
# the deepest nesting of (...), [...] and {...} in a parameter value (the parser recurses once a level)
MAX_NESTING = 100

_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_\-]*")
_NUMBER = re.compile(r"[+-]?(?:\d+\.?\d*|\.\d+)(?:[eE][+-]?\d+)?")
_IDENT = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")
_REL_SUFFIX = re.compile(r"^(?P<base>.+?)-l(?P<rel>\d+(?:\.\d+)?)$")


@dataclass(eq=False)
class ParsedMeasure:
    """The pieces of a measure string, before they are checked against the registry."""

    name: str
    params: dict[str, Any] = field(default_factory=dict)
    cutoff: int | None = None
    text: str = ""
    level: float | None = field(default=None, repr=False)   # ir-measures' IPrec@0.2: a recall level


def number_value(literal: str, real: bool = False) -> int | float:
    """The value of a number literal: an int if it has no ``.``, ``e`` or ``E`` (and not ``real``), else
    a float (``inf`` beyond the floats, which the parameter checks refuse).

    Raises ValueError if the literal is longer than :data:`MAX_NUMBER_CHARS` characters, or an integer
    of more than :data:`MAX_INT_DIGITS` digits (beyond every float): the one rule for the numbers of
    measure strings, trec_eval's parameters included.

    >>> number_value("10"), number_value("-2.5e3"), number_value("0e-400")
    (10, -2500.0, 0.0)
    >>> number_value("1e-400")
    Traceback (most recent call last):
    ...
    ValueError: 1e-400 is below the smallest float64 (about 5e-324): it would be read as 0
    """
    literal = literal.strip()
    if len(literal) > MAX_NUMBER_CHARS:
        raise ValueError(f"a number of {len(literal)} characters is too long (at most {MAX_NUMBER_CHARS})")
    if real or any(c in literal for c in ".eE"):
        value = float(literal)
        mantissa = literal.lstrip("+-").split("e")[0].split("E")[0]
        if value == 0 and any(c in "123456789" for c in mantissa):   # 1e-400: not zero, but float64's 0
            raise ValueError(f"{literal} is below the smallest float64 (about 5e-324): it would be read as 0")
        return value
    digits = len(literal.lstrip("+-").lstrip("0"))
    if digits > MAX_INT_DIGITS:   # every parameter check may take float() of it: no OverflowError there
        raise ValueError(f"an integer of {digits} digits is beyond every float (at most {MAX_INT_DIGITS} digits)")
    return int(literal)


class _Scanner:
    def __init__(self, text: str) -> None:
        self.text = text
        self.pos = 0
        self.depth = 0

    def error(self, what: str) -> InputError:
        return InputError(f"measure {self.text!r}: {what} (at character {self.pos + 1})")

    def skip_space(self) -> None:
        while self.pos < len(self.text) and self.text[self.pos].isspace():
            self.pos += 1

    def peek(self) -> str:
        self.skip_space()
        return self.text[self.pos] if self.pos < len(self.text) else ""

    def take(self, char: str) -> bool:
        if self.peek() == char:
            self.pos += 1
            return True
        return False

    def expect(self, char: str) -> None:
        if not self.take(char):
            found = self.peek() or "end of text"
            raise self.error(f"expected {char!r}, found {found!r}")

    def match(self, pattern: re.Pattern[str]) -> str | None:
        self.skip_space()
        m = pattern.match(self.text, self.pos)
        if m is None:
            return None
        self.pos = m.end()
        return m.group(0)

    def number(self, literal: str) -> int | float:
        try:
            return number_value(literal)
        except ValueError as err:
            raise self.error(str(err)) from None

    def value(self) -> Any:
        if self.depth >= MAX_NESTING:
            raise self.error(f"a value nested more than {MAX_NESTING} levels deep")
        self.depth += 1
        try:
            return self._value()
        finally:
            self.depth -= 1

    def _value(self) -> Any:
        char = self.peek()
        if char in ("'", '"'):
            end = self.text.find(char, self.pos + 1)
            if end < 0:
                raise self.error("unterminated string")
            out = self.text[self.pos + 1:end]
            self.pos = end + 1
            return out
        if char in ("(", "["):   # a tuple of values: IPrecAvg(levels=(0.25, 0.5, 0.75))
            close = ")" if char == "(" else "]"
            self.pos += 1
            items: list[Any] = []
            while not self.take(close):
                items.append(self.value())
                if not self.take(","):
                    self.expect(close)
                    break
            return tuple(items)
        if char == "{":
            self.pos += 1
            out: dict[Any, Any] = {}
            if self.take("}"):
                return out
            while True:
                at = self.pos
                key = self.value()
                try:
                    hash(key)
                except TypeError:   # a dict, or a tuple holding one
                    self.pos = at
                    raise self.error("a key cannot be or hold a dict {...}") from None
                if key in out:   # {1: 2, 1: 3}: Python keeps the last; a typo here would be a silent number
                    self.pos = at
                    raise self.error(f"the key {key!r} is given twice")
                self.expect(":")
                out[key] = self.value()
                if self.take("}"):
                    return out
                self.expect(",")
        number = self.match(_NUMBER)
        if number is not None:
            return self.number(number)
        word = self.match(_IDENT)
        if word in ("True", "true"):
            return True
        if word in ("False", "false"):
            return False
        if word == "None":
            return None
        raise self.error(f"expected a value (number, 'string', True, False, None, (...) or {{...}}), "
                         f"found {word or char or 'end of text'!r}")


def parse_measure_string(text: str) -> ParsedMeasure:
    """Split a measure string into name, parameters and cutoff.

    Parameters
    ----------
    text : str
        For example ``"nDCG@10"``, ``"P(rel=2)@5"``, ``"AP(denom='retrieved')@5"``, ``"map@100-l2"``.

    Returns
    -------
    ParsedMeasure

    Examples
    --------
    >>> parse_measure_string("P(rel=2, clip=True)@5")
    ParsedMeasure(name='P', params={'rel': 2, 'clip': True}, cutoff=5, text='P(rel=2, clip=True)@5')
    """
    if not isinstance(text, str):
        raise InputError(f"a measure must be a string such as 'nDCG@10', got {text!r}")
    sc = _Scanner(text)
    name = sc.match(_NAME)
    if name is None:
        raise sc.error("expected a measure name")
    params: dict[str, Any] = {}
    rel_suffix: str | None = None
    m = _REL_SUFFIX.match(name)
    if m is not None and sc.peek() in ("", "("):
        name, rel_suffix = m.group("base"), m.group("rel")
    if sc.take("("):
        if not sc.take(")"):
            while True:
                key = sc.match(_IDENT)
                if key is None:
                    raise sc.error("expected a parameter name")
                sc.expect("=")
                if key in params:
                    raise sc.error(f"parameter {key!r} given twice")
                params[key] = sc.value()
                if sc.take(")"):
                    break
                sc.expect(",")
    cutoff: int | None = None
    if sc.take("@"):
        raw = sc.match(_NUMBER)
        if raw is None:
            raise sc.error("expected a cutoff k after '@'")
        if re.fullmatch(r"0?\.\d+|1\.0*|0\.0*", raw) and not sc.peek():   # a recall level (IPrec@0.2)
            if "recall" in params:   # ir-measures would take the level after '@': no silent choice
                raise InputError(f"measure {text!r}: the recall level given twice (recall= and @{raw})")
            return ParsedMeasure(name=name, params=params, cutoff=None, text=text, level=float(sc.number(raw)))
        value = sc.number(raw)
        if not re.fullmatch(r"[+-]?\d+", raw) or value <= 0:
            raise InputError(f"measure {text!r}: the cutoff k must be a positive integer, got {raw}")
        cutoff = int(value)
        rest = sc.match(re.compile(r"-l(\d+(?:\.\d+)?)"))
        if rest is not None:
            rel_suffix = rest[2:]
    if sc.peek():
        raise sc.error(f"unexpected {sc.text[sc.pos:]!r}")
    if rel_suffix is not None:
        if "rel" in params:
            raise InputError(f"measure {text!r}: relevance level given twice (rel= and -l)")
        params["rel"] = sc.number(rel_suffix)
    return ParsedMeasure(name=name, params=params, cutoff=cutoff, text=text)
