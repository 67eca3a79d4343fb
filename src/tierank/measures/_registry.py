"""The registry of measure families and :func:`parse_measure`.

The families are declared in the modules of this package named by :data:`FAMILY_MODULES`, each in its own
``FAMILIES`` list. A module is imported when the registry is first asked for a name that no module imported
so far declares: the next modules, in registry order, until one does (``-m map`` imports two of the
sixteen); reading the whole registry (iterating, ``len``, a name no module declares) imports them all. Every
answer is the one a registry built from all the modules gives; only the start-up differs
(docs/architecture.md, "Start-up"). This is the registry's half of the one mechanism of lazy loading.
"""

from __future__ import annotations

import copyreg
import difflib
import importlib
import re
import threading
import warnings
from collections.abc import Iterator, Mapping
from typing import Any, Iterable, Sequence

from ..errors import InputError, TierankWarning, param_text
from ._parse import parse_measure_string
from ._spec import Measure, MeasureFamily
from ._trec import TREC_EVAL_TABLE, TREC_NAMES, TREC_SETS, split_trec_text
from .radius import RADIUS_FAMILIES

__all__ = ["FAMILY_MODULES", "REGISTRY", "TREC_INDEX", "registered_family", "parse_measure", "parse_measures",
           "measure_names", "did_you_mean", "expand", "expand_trec", "ExpandedMeasures", "trec_output_name",
           "trec_order", "trec_prints_per_query", "trec_set"]

#: the modules of this package that declare families (a ``FAMILIES`` list each), in registry order: the
#: order of ``tierank measures`` and of the measure table
FAMILY_MODULES = ("counting", "ap", "rr", "dcg", "ndcg_rel", "rndcg", "gain_g", "err", "judged", "sets", "rbp",
                  "bpref", "infap", "bing", "iprec", "relstring")


class _Table(Mapping):
    """One table of the registry: asked for a key it does not hold yet, it has the next family modules
    imported until one declares the key (a dict's answers otherwise); iterated or measured, all of them."""

    def __init__(self, tables: "_Tables") -> None:
        self.tables = tables
        self.known: dict = {}

    def __getitem__(self, key: Any) -> Any:
        while key not in self.known and self.tables.import_next():
            pass
        return self.known[key]

    def __iter__(self) -> Iterator:
        self.tables.import_all()
        return iter(self.known)

    def __len__(self) -> int:
        self.tables.import_all()
        return len(self.known)


class _Tables:
    """The registry's tables, filled with the families of ``modules`` one module at a time, in order:
    ``families`` (name -> family), ``lookup`` (lower-case name or alias -> (family, the parameters the alias
    fixes)), ``trec`` (trec_eval name -> (family, its declaration))."""

    def __init__(self, modules: Sequence[str]) -> None:
        self.modules = modules
        self.imported = 0   # how many of the modules are in the tables
        self.families, self.lookup, self.trec = _Table(self), _Table(self), _Table(self)
        self._lock = threading.RLock()   # two threads asking at once enter a module once

    def import_next(self) -> bool:
        """Import the next module and enter its families; False when every module is in already."""
        with self._lock:
            if self.imported == len(self.modules):
                return False
            for family in importlib.import_module(f"{__package__}.{self.modules[self.imported]}").FAMILIES:
                self.families.known[family.name] = family
                self.lookup.known[family.name.lower()] = (family, {})
                for alias, preset in family.aliases:
                    self.lookup.known[alias.lower()] = (family, preset)
                for trec in family.trec:
                    if trec.name in self.trec.known:
                        raise RuntimeError(f"trec_eval measure {trec.name!r} declared by "
                                           f"{self.trec.known[trec.name][0].name} and {family.name}")
                    self.trec.known[trec.name] = (family, trec)
            self.imported += 1
            return True

    def import_all(self) -> None:
        while self.import_next():
            pass


_TABLES = _Tables(FAMILY_MODULES)
#: family name -> family, in registry order (a read-only mapping)
REGISTRY = _TABLES.families
_LOOKUP = _TABLES.lookup
#: trec_eval name -> (the family computing it, its declaration)
TREC_INDEX = _TABLES.trec


def registered_family(name: str, radius: bool) -> MeasureFamily | None:
    """The registered family of that name (``radius``: the Hamming-radius variant), or None: what a
    pickled registered family unpickles to (the same object)."""
    return (RADIUS_FAMILIES if radius else REGISTRY).get(name)


def _reduce_family(family: MeasureFamily) -> tuple:
    """How a family pickles: a registered one as a reference to the registry, any other by its fields."""
    key = (family.name, "radius" in family.params)
    if registered_family(*key) is family:
        return registered_family, key
    return MeasureFamily, tuple(getattr(family, f) for f in family.__dataclass_fields__)


copyreg.pickle(MeasureFamily, _reduce_family)


# trec_eval names that are not measures of a family (runid: the run's tag)
TREC_PSEUDO = frozenset({"runid"})

# trec_eval spellings whose trec_eval definition differs from the measure of the same name here: an error
# rather than a different number under a familiar name
_NOT_YET_TREC: dict[str, str] = {}


_TREC_WORD = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*$")


def measure_names() -> list[str]:
    """Canonical names of every measure, in registry order."""
    return list(REGISTRY)


def did_you_mean(name: str) -> str:
    """`` (did you mean 'X'?)`` for the known spelling closest to ``name`` (case-insensitive, over the
    measures' names, their ir-measures / ranx aliases, trec_eval's names and sets), or ``""``: the one
    suggestion rule of every "unknown measure" message.

    >>> did_you_mean("nDGC"), did_you_mean("zzz")
    (" (did you mean 'ndcg'?)", '')
    """
    known = {n.lower(): n for n in [*REGISTRY, *TREC_INDEX, *TREC_SETS]}
    known.update({alias.lower(): alias for f in REGISTRY.values() for alias, _ in f.aliases})
    close = difflib.get_close_matches(name.lower(), list(known), n=1, cutoff=0.6)
    return f" (did you mean {known[close[0]]!r}?)" if close else ""


def expand_trec(text: str) -> list[tuple[str, Measure]] | None:
    """The measures a trec_eval spelling asks for, as ``[(trec_eval output name, Measure)]``.

    ``"P.5,10"`` gives P_5 and P_10, bare ``"P"`` trec_eval's default cutoffs, ``"map"`` one measure,
    ``"iprec_at_recall.0.1,0.2"`` one measure per level; trec_eval's output spellings (``"P_5"``,
    ``"ndcg_cut_10"``) give that one measure. None if ``text`` is not a trec_eval spelling.

    >>> [(name, str(m)) for name, m in expand_trec("P.10,5")]
    [('P_5', 'P@5'), ('P_10', 'P@10')]
    """
    if text.strip() in _NOT_YET_TREC:
        raise InputError(_NOT_YET_TREC[text.strip()])
    split = split_trec_text(text, TREC_INDEX)
    if split is None:
        return None
    name, params, _output_spelling = split
    family, trec = TREC_INDEX[name]
    try:
        expanded = trec.expand(params)   # atol's note on '23.4' goes to the caller, under the caller's filters
    except ValueError as err:
        raise InputError(f"measure {text!r}: {err}") from None
    return [(out, family.bind(p, cutoff, text)) for out, p, cutoff in expanded]


def trec_output_name(m: Measure) -> str | None:
    """How trec_eval prints this measure (``P_5``, ``ndcg_cut_10``, ``set_F_0.5``), or None if trec_eval
    has no measure with these parameters.

    >>> trec_output_name(parse_measure("nDCG@10"))
    'ndcg_cut_10'
    >>> trec_output_name(parse_measure("nDCG(gain='exp2')@10")) is None
    True
    """
    if m.judged_only:   # trec_eval has -J for a whole run, not a measure of its own
        return None
    defaults = {k: p.default for k, p in m.family.params.items()}
    params = m.params
    for trec in m.family.trec:
        name = trec.output_name(params, m.cutoff, defaults)
        if name is not None:
            return name
    return None


def trec_order(output_name: str) -> tuple:
    """Sort key of a trec_eval output name (``P_5``, ``iprec_at_recall_0.10``, ``map``) putting measures
    in trec_eval's output order: its measure table, then cutoffs and levels ascending.

    >>> sorted(["P_10", "map", "P_5", "num_q"], key=trec_order)
    ['num_q', 'map', 'P_5', 'P_10']
    """
    name = _trec_base(output_name)
    if name is None:
        return (len(TREC_EVAL_TABLE), 0.0)
    suffix = output_name[len(name) + 1:]
    kind = TREC_INDEX[name][1].kind if name in TREC_INDEX else "plain"
    number = float(suffix) if suffix and kind in ("cutoffs", "levels") else 0.0
    return (TREC_EVAL_TABLE.index(name), number)


def _trec_base(output_name: str) -> str | None:
    """The trec_eval measure of an output name (``P_5`` -> ``P``, ``utility_2,-1,0,0`` -> ``utility``)."""
    for name in sorted(TREC_EVAL_TABLE, key=len, reverse=True):
        if output_name == name or output_name.startswith(name + "_"):
            return name
    return None


def trec_prints_per_query(output_name: str) -> bool:
    """Whether ``trec_eval -q`` prints this measure per query (gm_map: on the summary line only)."""
    name = _trec_base(output_name)
    return name not in TREC_INDEX or TREC_INDEX[name][1].per_query


def trec_set(name: str) -> tuple[str, ...] | None:
    """The trec_eval names of a trec_eval measure set (``official``, ``all_trec``, ``set``), or None."""
    return TREC_SETS.get(name)


def parse_measure(text: str | Measure) -> Measure:
    """Parse a measure string (tierank / ir-measures / ranx / trec_eval spelling) into a Measure.

    Parameters
    ----------
    text : str
        ``"nDCG@10"``, ``"P(rel=2)@5"``, ``"AP(denom='retrieved')@5"``, ``"ndcg_burges@10"``,
        ``"map@100-l2"``, ``"ndcg_cut.10"``, ``"P_5"``... One cutoff per string.

    Returns
    -------
    Measure

    Raises
    ------
    InputError
        Unknown name or parameter (the message lists what exists), bad value, bad cutoff.

    Examples
    --------
    >>> str(parse_measure("ndcg_burges@10"))
    "nDCG(gain='exp2')@10"
    >>> str(parse_measure("map@100-l2"))
    'AP(rel=2)@100'
    >>> str(parse_measure("ndcg_cut.10"))
    'nDCG@10'
    """
    if isinstance(text, Measure):
        return text
    if not isinstance(text, str):
        raise InputError(f"a measure must be a string such as 'nDCG@10', got {text!r}")
    if text.strip() in _NOT_YET_TREC:
        raise InputError(_NOT_YET_TREC[text.strip()])
    if text.strip() in TREC_SETS or text.strip() in TREC_PSEUDO:
        raise InputError(f"{text.strip()!r} is a trec_eval measure set or pseudo-measure, not one measure; "
                         "give it to the command line (-m) or list the measures")
    # a trec_eval name (exact case) means what trec_eval means: 'rbp' is p=0.9, 'RBP' ir-measures' p=0.8.
    # The registry is asked only what it may hold (a name of trec_eval's table; a name or alias holds no
    # '@', '(' or '.'), so that 'AP' or 'nDCG@10' imports only the families up to its own.
    exact_trec = text.strip() in TREC_NAMES and text.strip() in TREC_INDEX
    alias = not any(c in text for c in "@(.") and text.lower() in _LOOKUP
    trec = expand_trec(text) if exact_trec or not alias else None
    if trec is not None:
        if len(trec) != 1:
            # measures that differ by their cutoff only (P, ndcg_cut): say that a cutoff is what is missing
            one_cutoff_each = len({(m.family.name, m.items) for _, m in trec}) == 1
            per = ", one cutoff k each" if one_cutoff_each else ""
            raise InputError(f"measure {text!r}: one measure per string; trec_eval's {text.strip()!r} means "
                             f"{len(trec)} measures, " + ", ".join(repr(name) for name, _ in trec)
                             + f": write one of them (e.g. {trec[0][0]!r}, or {str(trec[0][1])!r}{per}), or "
                             f"give tierank.measures.expand({text.strip()!r}) to have them all")
        return trec[0][1]
    base = text.strip().split(".", 1)[0]
    if "." in text and _TREC_WORD.match(base) and base.lower() not in _LOOKUP:   # a trec_eval name, misspelt
        raise InputError(f"unknown measure {base!r} in {text!r}{did_you_mean(base)}; `tierank measures` lists "
                         "every measure and its trec_eval names")
    parsed = parse_measure_string(text)
    found = _LOOKUP.get(parsed.name.lower())
    if found is None:
        raise InputError(f"unknown measure {parsed.name!r} in {text!r}{did_you_mean(parsed.name)}; known measures: "
                         + ", ".join(REGISTRY) + " (and their ir-measures, ranx and trec_eval names; "
                         "`tierank measures` lists them all)")
    family, preset = found
    if "radius" in parsed.params and family.name in RADIUS_FAMILIES:
        family = RADIUS_FAMILIES[family.name]   # P(radius=2): within a Hamming radius, no @k
    params = dict(preset)
    if parsed.level is not None:   # IPrec@0.2: the level is the measure's recall parameter
        if "recall" not in family.params:
            raise InputError(f"measure {text!r}: the cutoff k must be a positive integer, got {parsed.level}")
        params["recall"] = parsed.level
    for key, value in parsed.params.items():
        if key in preset and preset[key] != value:
            raise InputError(f"measure {text!r}: {parsed.name} fixes {key}={preset[key]!r}")
        params[key] = value
    return family.bind(params, parsed.cutoff, text)


def parse_measures(measures: "str | Measure | Iterable[str | Measure] | Mapping[str, str | Measure]"
                   ) -> dict[str, Measure]:
    """Parse one measure or a list of them into ``{text as given: Measure}`` (the Results keys); a dict
    ``{label: measure}`` (as :func:`tierank.measures.expand` gives) keeps its labels.

    >>> list(parse_measures(["P@5", "ndcg_cut.10"]).values())[1].name
    'nDCG'
    """
    if isinstance(measures, (str, Measure)):
        measures = [measures]
    if isinstance(measures, Mapping):   # {label: measure}, as expand() gives: the labels are the keys
        parsed = {str(label): parse_measure(m) for label, m in measures.items()}
    else:
        parsed = {str(m) if isinstance(m, Measure) else m: parse_measure(m) for m in measures}
    if not parsed:
        raise InputError("no measure given, e.g. measures=['nDCG@10', 'AP']")
    return parsed


class ExpandedMeasures(dict):
    """What :func:`tierank.measures.expand` gives: a dict ``{label: Measure}`` in the order asked for, with

    Attributes
    ----------
    trec_names : dict of str to str or None
        Each label's trec_eval output name (``"P_5"``, ``"ndcg_cut_10"``), None if trec_eval has none.
    pseudo : frozenset of str
        trec_eval's pseudo-measures asked for (``runid``, the run's tag, which is no measure; ``num_q``
        when NumQ is asked for), which ``--format trec`` prints as trec_eval does.
    """

    def __init__(self, items: Iterable[tuple[str, Measure]] = (),
                 trec_names: Mapping[str, str | None] | None = None, pseudo: Iterable[str] = ()) -> None:
        super().__init__(items)
        self.trec_names = dict(trec_names or {})
        self.pseudo = frozenset(pseudo)


def _split_measure_list(text: str) -> list[str]:
    """Split one ``-m`` value into measure strings: at blanks and at commas followed by a letter,
    outside parentheses, brackets and quotes (``P.5,10`` and ``P(rel=2, clip=True)@5`` stay whole)."""
    out: list[str] = []
    buf: list[str] = []
    depth = 0
    quote: str | None = None
    for i, c in enumerate(text):
        if quote:
            buf.append(c)
            if c == quote:
                quote = None
            continue
        if c in "'\"":
            quote = c
        elif c in "([{":
            depth += 1
        elif c in ")]}":
            depth -= 1
        elif depth == 0 and (c.isspace() or (c == "," and text[i + 1:i + 2].isalpha())):
            if buf:
                out.append("".join(buf))
            buf = []
            continue
        buf.append(c)
    if buf:
        out.append("".join(buf))
    return out


def _trec_set_members(token: str) -> tuple[str, ...]:
    """The members of a trec_eval set (``official``, ``all_trec``, ``set``) that tierank computes, with
    a warning naming the others; any other token as it is."""
    members = trec_set(token)
    if members is None:
        return (token,)
    missing = [name for name in members if name not in TREC_INDEX and name not in TREC_PSEUDO]
    if missing:
        warnings.warn(f"{param_text('measures', token)}: tierank does not compute trec_eval's "
                      f"{', '.join(missing)} yet; they are left out", TierankWarning, stacklevel=3)
    return tuple(name for name in members if name not in missing)


def _with_rel_level(m: Measure, rel_level: Any) -> Measure:
    """``m`` with trec_eval's ``-l``: its relevance level, if it has one and leaves it at the default."""
    if rel_level is None or "rel" not in m.family.params:
        return m
    default = m.family.params["rel"].default
    if default is None or m["rel"] != default:
        return m
    try:
        return m.replace(rel=rel_level)
    except InputError as err:
        raise InputError(f"{param_text('rel_level', rel_level)}: {err}") from None


def expand(measures: "str | Sequence[str]", *, rel_level: float | None = None) -> ExpandedMeasures:
    """The measures that measure strings ask for, trec_eval's sets and lists expanded, labelled as shown.

    Parameters
    ----------
    measures : str or sequence of str
        Measure strings as :func:`tierank.parse_measure` takes them, and what trec_eval's ``-m`` takes besides:
        cutoff lists (``"P.5,10"``; bare ``"P"``: trec_eval's default cutoffs), level lists
        (``"iprec_at_recall.0.1,0.5"``), trec_eval's sets (``"official"``, ``"all_trec"``, ``"set"``;
        a warning names the members tierank does not compute), several in one string separated by
        blanks. As in trec_eval, a bare trec_eval name given together with the same name with parameters
        (``["all_trec", "relstring.20"]``) takes those parameters.
    rel_level : number, optional
        trec_eval's ``-l``: the relevance level of every measure that has a ``rel`` parameter and leaves
        it at its default (nDCG gains are not changed, as in trec_eval).

    Returns
    -------
    ExpandedMeasures
        A dict ``{label: Measure}``: trec_eval spellings labelled as trec_eval prints them (``P_5``), other
        strings as written; a label given twice is kept once. It can be given as ``measures`` to
        :func:`tierank.evaluate` (the labels become the result's keys).

    Raises
    ------
    InputError
        A measure string that does not parse, or no measure at all.

    Examples
    --------
    >>> from tierank.measures import expand
    >>> {label: str(m) for label, m in expand("P.5,10 nDCG@10").items()}
    {'P_5': 'P@5', 'P_10': 'P@10', 'nDCG@10': 'nDCG@10'}
    >>> list(expand("all_trec"))[:5]
    ['num_q', 'num_ret', 'num_rel', 'num_rel_ret', 'map']
    >>> sorted(expand("official").pseudo)
    ['num_q', 'runid']
    """
    if isinstance(measures, str):
        measures = [measures]
    tokens: list[str] = []
    for text in measures:
        if not isinstance(text, str):
            raise InputError(f"a measure must be a string such as 'nDCG@10', got {text!r}")
        for token in _split_measure_list(text):
            tokens.extend(_trec_set_members(token))
    # a bare trec_eval name yields to the same name given with parameters (trec_eval's rule)
    with_params = {token.split(".", 1)[0] for token in tokens if "." in token}
    tokens = [t for t in tokens if not (t in with_params and t in TREC_INDEX)]
    items: dict[str, Measure] = {}
    trec_names: dict[str, str | None] = {}
    pseudo: set[str] = set()

    def add(label: str, m: Measure, trec_name: str | None) -> None:
        if trec_output_name(m) == "num_q":
            pseudo.add("num_q")
        m = _with_rel_level(m, rel_level)
        if label not in items:
            items[label] = m
            trec_names[label] = trec_name

    for token in tokens:
        if token in TREC_PSEUDO:
            pseudo.add(token)
            continue
        trec = expand_trec(token)
        if trec is not None:  # trec_eval's meaning first: bare "P" and "recall" at its default cutoffs
            for name, m in trec:
                add(name, m, name)
            continue
        m = parse_measure(token)
        add(token, m, trec_output_name(m))
    if not items and not pseudo:
        raise InputError("no measure given")
    return ExpandedMeasures(items.items(), trec_names, pseudo)
