"""Results: per-query values, bounds and aggregates of one evaluation.

The per-query values may be given as pandas DataFrames or as numpy columns (:class:`QueryTable`); from
columns, the DataFrames are built on first access, so that a command that only prints means never
imports pandas (docs/architecture.md, "Start-up")."""

from __future__ import annotations

from dataclasses import dataclass, field, fields
from typing import TYPE_CHECKING, Any, Mapping

import numpy as np

from .data.exact_sum import finish_aggregate, partial_aggregate
from .measures import Measure
from .plot import plot_results

if TYPE_CHECKING:
    import pandas as pd

__all__ = ["Results", "CodeResults"]

# trec_eval's floor of each value in a geometric mean (MIN_GEO_MEAN): one query at 0 would make it 0
GM_FLOOR = 1e-5


def aggregate(frame: Mapping[str, Any], measures: dict[str, Measure]) -> dict[str, float | None]:
    """Per measure: the mean over queries, the sum for counts, or the geometric mean (``aggregate="gm"``:
    trec_eval's gm_map, each value floored at 1e-5); NaN rows are left out. ``frame``: a DataFrame, or
    any mapping of column names to arrays.

    Sums are exactly rounded (:mod:`tierank.data.exact_sum`) and a mean is that sum divided by the count,
    so the aggregates have the same bits whatever the order of the queries or how they were split
    (blocks, files, Spark or Dask partitions)."""
    out: dict[str, float | None] = {}
    for text, m in measures.items():
        kind = m.aggregate
        if kind == "none":   # text (RelString): no aggregate
            out[text] = None
            continue
        # NaN: a query left out of this measure (P(radius=r, empty='skip')), left out by partial_aggregate
        partial = partial_aggregate(np.asarray(frame[text], dtype=np.float64), kind, GM_FLOOR)
        out[text] = finish_aggregate(partial, kind)
    return out


def _same(a: object, b: object) -> bool:
    """Equality of result fields: frames and series exactly (NaN == NaN), dicts item by item."""
    import pandas as pd

    if isinstance(a, (pd.DataFrame, pd.Series)) or isinstance(b, (pd.DataFrame, pd.Series)):
        return type(a) is type(b) and a.equals(b)  # type: ignore[attr-defined]
    if isinstance(a, dict) and isinstance(b, dict):
        return list(a) == list(b) and all(_same(a[k], b[k]) for k in a)
    if isinstance(a, float) and isinstance(b, float) and np.isnan(a) and np.isnan(b):
        return True
    if isinstance(a, np.ndarray) or isinstance(b, np.ndarray):
        return bool(np.array_equal(np.asarray(a), np.asarray(b), equal_nan=True))
    return bool(a == b)


class QueryTable:
    """Per-query values as numpy arrays: what a ``per_query``-shaped DataFrame of :class:`Results` is
    built from when first read.

    ``ids``: the query ids, one per row (the DataFrame's index, named ``name``; with ``as_str`` of
    pandas' ``str`` dtype); ``columns``: one array per measure, named as the measure was written."""

    def __init__(self, ids: np.ndarray, columns: dict[str, np.ndarray], name: str = "query_id",
                 as_str: bool = False) -> None:
        self.ids, self.columns, self.name, self.as_str = ids, columns, name, as_str

    def __getitem__(self, column: str) -> np.ndarray:
        return self.columns[column]

    def frame(self) -> pd.DataFrame:
        import pandas as pd

        ids = pd.array(self.ids.astype(object), dtype="str") if self.as_str else self.ids
        return pd.DataFrame(self.columns, index=pd.Index(ids, name=self.name))


class _Frame:
    """A DataFrame field of :class:`Results` (``per_query``, ``lower``, ``upper``): set to a DataFrame, a
    :class:`QueryTable` or None; a table becomes its DataFrame on first read (kept for later reads). The
    value is kept in the instance's ``__dict__`` under the field's name (as a plain field's: pickles of
    either kind read back), which this descriptor reads first."""

    def __set_name__(self, owner: type, name: str) -> None:
        self.slot = name

    def __get__(self, obj: Any, owner: type | None = None) -> Any:
        if obj is None:   # on the class: dataclasses ask for a default, and there is none
            raise AttributeError(self.slot)
        value = obj.__dict__[self.slot]
        if isinstance(value, QueryTable):
            value = obj.__dict__[self.slot] = value.frame()
        return value

    def __set__(self, obj: Any, value: Any) -> None:
        obj.__dict__[self.slot] = value


@dataclass(repr=False, eq=False)   # its own (each generated method is compiled at import)
class Results:
    """What :func:`tierank.evaluate` and :func:`tierank.evaluate_matrix` return.

    Attributes
    ----------
    per_query : pandas.DataFrame
        One row per query (index: the query id, sorted; for matrices the row number), one column per
        measure, named exactly as the measure was written. Values under the chosen ``ties`` mode.
    lower, upper : pandas.DataFrame or None
        With ``bounds=True``: the exact minimum / maximum over all orderings of tied items, shaped like
        ``per_query``; otherwise None.
    mean : dict of str to float
        The aggregate of each measure over queries: the mean, or the sum for the counts (NumQ, NumRet,
        NumRel, NumRelRet), as trec_eval reports them.
    ties : str
        The tie mode used.

    ``per_query``, ``lower`` and ``upper`` may be given as DataFrames or as :class:`QueryTable` (numpy
    columns, made into the DataFrames on first access; :attr:`query_ids` and :meth:`column` read them
    without pandas). A subclass adds its own dataclass fields after these and may change
    :meth:`aggregate_table`.
    """

    if TYPE_CHECKING:   # what type checkers see: three fields without defaults
        per_query: pd.DataFrame
        lower: pd.DataFrame | None
        upper: pd.DataFrame | None
    else:   # at run time, their descriptors (no default either: _Frame.__get__)
        per_query: pd.DataFrame = _Frame()
        lower: pd.DataFrame | None = _Frame()
        upper: pd.DataFrame | None = _Frame()
    ties: str
    measures: dict[str, Measure] = field(repr=False)
    mean: dict[str, float | None] = field(init=False)

    def __post_init__(self) -> None:
        self.mean = self.aggregate_table(self._table("value"))

    def aggregate_table(self, frame: Mapping[str, Any]) -> dict[str, float | None]:
        """One value per measure from a ``per_query``-shaped table, as ``mean`` is made from
        ``per_query`` (the mean, a sum for counts, trec_eval's geometric mean for gm_map; a subclass may
        differ): e.g. the aggregates of a subset of the queries.

        Parameters
        ----------
        frame : pandas.DataFrame or mapping
            A column of values per measure (``frame[measure]`` is array-like), as in ``per_query``.

        Returns
        -------
        dict
            ``{measure: value}`` (None for a text measure).

        Examples
        --------
        >>> import tierank
        >>> res = tierank.evaluate_matrix([[1, 0], [0, 1]], [[0.9, 0.1], [0.5, 0.5]], ["RR"])
        >>> res.mean, res.aggregate_table(res.per_query.iloc[1:])   # the second query: a tie of two
        ({'RR': 0.875}, {'RR': 0.75})
        """
        return aggregate(frame, self.measures)

    def _table(self, which: str) -> Any:
        """``per_query`` (``which="value"``), ``lower`` or ``upper`` as set: a QueryTable, a DataFrame or None
        (nothing built)."""
        return self.__dict__["per_query" if which == "value" else which]

    @property
    def query_ids(self) -> np.ndarray:
        """The query ids of ``per_query``'s rows, in its order, as a numpy array (no DataFrame built).

        >>> import tierank
        >>> tierank.evaluate({"q2": {"a": 1}, "q1": {"b": 1}}, {"q2": {"a": 1.0}, "q1": {"a": 1.0}}, "RR").query_ids
        array(['q1', 'q2'], dtype=object)
        """
        table = self._table("value")
        return table.ids if isinstance(table, QueryTable) else table.index.to_numpy()

    def column(self, measure: str, which: str = "value") -> np.ndarray:
        """The values of one column (a measure as written) of ``per_query`` (``which="value"``), ``lower``
        or ``upper``, in the order of :attr:`query_ids`, as a numpy array (no DataFrame built).

        >>> import tierank
        >>> res = tierank.evaluate_matrix([[1, 0]], scores=[[1, 1]], measures=["RR"], bounds=True)
        >>> res.column("RR"), res.column("RR", "upper")
        (array([0.75]), array([1.]))
        """
        table = self._table(which)
        return table[measure] if isinstance(table, QueryTable) else table[measure].to_numpy()

    @property
    def mean_lower(self) -> dict[str, float | None] | None:
        """Aggregate of ``lower`` (the mean of per-query minima), or None without bounds."""
        table = self._table("lower")
        return None if table is None else self.aggregate_table(table)

    @property
    def mean_upper(self) -> dict[str, float | None] | None:
        """Aggregate of ``upper`` (the mean of per-query maxima), or None without bounds."""
        table = self._table("upper")
        return None if table is None else self.aggregate_table(table)

    def summary(self) -> pd.DataFrame:
        """A table with one row per measure: the aggregate, and with bounds its lower and upper value."""
        import pandas as pd

        table = pd.DataFrame({self.ties: pd.Series(self.mean)})
        if self.lower is not None:   # ties="lower" / "upper": the values are that bound's column
            table["lower"] = pd.Series(self.mean_lower)
            table["upper"] = pd.Series(self.mean_upper)
            table = table[["lower", "upper"]] if self.ties in ("lower", "upper") else table
        table.index.name = "measure"
        return table

    def plot(self, measure: str | None = None, ax: Any = None, **kwargs: Any) -> Any:
        """Per query: the value of ``measure`` and, with bounds, the exact [min, max] over tie orderings.

        Queries sorted by value; see :func:`tierank.plot.plot_results` (needs matplotlib:
        ``pip install tierank[plot]``). Returns the matplotlib Axes.

        >>> import tierank
        >>> from matplotlib.figure import Figure
        >>> res = tierank.evaluate_matrix([[1, 0]], scores=[[1, 1]], measures=["RR"], bounds=True)
        >>> res.plot("RR", ax=Figure().add_subplot()).get_ylabel()
        'RR'
        """
        return plot_results(self, measure, ax=ax, **kwargs)

    def __eq__(self, other: object) -> bool:
        """Same class, same tie mode, measures and values (NaN equal to NaN; frames compared exactly).

        >>> import pickle, tierank
        >>> res = tierank.evaluate_matrix([[1, 0, 1]], scores=[[2, 2, 1]], measures=["AP"])
        >>> pickle.loads(pickle.dumps(res)) == res
        True
        """
        if type(other) is not type(self):
            return NotImplemented
        return all(_same(getattr(self, f.name), getattr(other, f.name)) for f in fields(self))

    __hash__ = None  # type: ignore[assignment]   # mutable frames

    def __repr__(self) -> str:
        n = len(self.query_ids)
        return f"Results({n} queries, ties={self.ties!r})\n{self.summary().to_string(float_format='%.4f')}"


@dataclass(repr=False, eq=False)   # Results.__eq__ compares the frames
class CodeResults(Results):
    """:class:`tierank.Results` of :func:`tierank.evaluate_codes`, with the averaging over queries it used.

    ``per_query`` (and ``lower`` / ``upper``) always hold one row per query. ``mean`` is, per measure:
    with ``average="micro"`` the mean over queries; with ``average="macro"`` the mean over query classes
    of the mean over the queries of each class. NaN values (``P(radius=r, empty='skip')`` with nothing
    within r) are left out of both. The counts (NumQ, NumRel, ...) are summed either way.
    """

    average: str = "micro"
    query_class: np.ndarray | None = field(default=None, repr=False)

    def aggregate_table(self, frame: Mapping[str, Any]) -> dict[str, float | None]:
        out = aggregate(frame, self.measures)
        if self.average != "macro" or self.query_class is None:
            return out
        n_cls = int(self.query_class.max(initial=-1)) + 1
        for text, m in self.measures.items():
            if m.aggregate == "sum":
                continue
            col = np.asarray(frame[text], dtype=np.float64)
            ok = ~np.isnan(col)
            cls = self.query_class[ok]
            sums = np.bincount(cls, weights=col[ok], minlength=n_cls)
            counts = np.bincount(cls, minlength=n_cls)
            have = counts > 0
            out[text] = float((sums[have] / counts[have]).mean()) if have.any() else float("nan")
        return out
