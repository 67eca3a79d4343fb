"""The results of :func:`tierank.evaluate_embeddings`: :class:`~tierank.Results` with a tie audit.

The audit says how much of an evaluation the ties decide. Scores are exact (:mod:`tierank.embeddings`),
so a tie is a real tie of the precision, never rounding noise:

* per query and measure, whether the value depends on the order of tied items (exact ``lower < upper``,
  by more than the measure's own rounding: ``upper - lower > 2**-46 * max(1, upper)``; a real
  difference is far larger: 1 / (R n**2) for AP with n corpus items is above 1e-13 at a million items
  and 100 relevant) and by how much (``upper - lower``);
* the tie mass at each cutoff ``k`` (the measures' ``@k`` and ``k=``): the number of items of the tie
  that holds rank ``k`` which fall beyond rank ``k`` (0 when no tie straddles ``k``): the items a
  top-k search must cut at random;
* given ``reference_precision=``, the same run at that precision: ``delta`` (value minus reference: what
  quantization cost, in expectation over the tie orderings) beside ``width`` (what the ties leave open).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

import numpy as np

from .results import Results

if TYPE_CHECKING:   # pandas is imported where a frame is built: not on the command line's path
    import pandas as pd

__all__ = ["EmbeddingResults", "TieAudit", "build_audit", "NOISE"]

#: relative difference of the exact bounds below which they are one value computed two ways (64 ulps)
NOISE = 2.0 ** -46


@dataclass(repr=False, eq=False)   # its own (each generated method is compiled at import)
class TieAudit:
    """What the ties of an evaluation decide: the tie audit of :func:`tierank.evaluate_embeddings`.

    Attributes
    ----------
    per_query : pandas.DataFrame
        Index: the queries. Columns (a MultiIndex ``(quantity, name)``): ``("depends", measure)``
        (bool: exact lower < upper), ``("width", measure)`` (upper - lower), ``("tie_mass", "@k")``
        per cutoff, and with a reference ``("reference", measure)`` and ``("delta", measure)``.
    summary : pandas.DataFrame
        One row per measure: ``value`` (the mean under the tie mode), ``lower``, ``upper`` (means of the
        exact bounds), ``tie_dependent`` (the share of queries whose value depends on tie order),
        ``width`` (mean upper - lower); with a reference ``reference`` (its mean), ``delta`` (value -
        reference) and ``reference_in_bounds`` (share of queries whose reference value lies within
        [lower, upper]: there the quantized ranking could have scored it with a lucky tie order).
    tie_mass : pandas.DataFrame
        One row per cutoff ``k``: ``mean`` (mean tie mass at k over queries), ``share`` (share of queries
        with a tie straddling rank k), ``max``.
    tie_dependent : float
        Share of queries whose value of at least one measure depends on tie order.
    reference : Results or None
        The run at ``reference_precision``.
    """

    per_query: pd.DataFrame
    summary: pd.DataFrame
    tie_mass: pd.DataFrame
    tie_dependent: float
    reference: Results | None = field(default=None, repr=False)

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, TieAudit):
            return NotImplemented
        same = (self.per_query.equals(other.per_query) and self.summary.equals(other.summary)
                and self.tie_mass.equals(other.tie_mass))
        both_nan = np.isnan(self.tie_dependent) and np.isnan(other.tie_dependent)
        return bool(same and (both_nan or self.tie_dependent == other.tie_dependent)
                    and (self.reference == other.reference if self.reference is not None
                         else other.reference is None))

    __hash__ = None  # type: ignore[assignment]

    def __repr__(self) -> str:
        return (f"TieAudit({len(self.per_query)} queries, {self.tie_dependent:.1%} tie-dependent)\n"
                f"{self.summary.to_string(float_format='%.4f')}")


@dataclass(repr=False, eq=False)   # Results.__eq__ compares the frames and the audit
class EmbeddingResults(Results):
    """:class:`tierank.Results` of :func:`tierank.evaluate_embeddings`, with its tie audit (``.audit``,
    a :class:`TieAudit`) and how the scores were made (``similarity``, ``precision``,
    ``query_precision``)."""

    audit: TieAudit | None = None
    similarity: str = "cosine"
    precision: str = "float32"
    query_precision: str = "float32"

    def __repr__(self) -> str:
        text = super().__repr__().replace("Results(", "EmbeddingResults(", 1)
        if self.audit is not None:
            text += f"\ntie-dependent queries: {self.audit.tie_dependent:.1%}"
        return text


def build_audit(per_query: pd.DataFrame, lower: pd.DataFrame, upper: pd.DataFrame, mean: dict,
                tie_mass: dict[int, np.ndarray], reference: Results | None, aggregate: Any) -> TieAudit:
    """The audit from the per-query values and exact bounds (always computed for it), the tie mass per
    cutoff, and the reference run. ``aggregate`` reduces a per_query-shaped frame to one value per measure
    (:meth:`Results.aggregate_table`)."""
    import pandas as pd

    measures = list(per_query.columns)
    lo, hi = lower.to_numpy(dtype=np.float64), upper.to_numpy(dtype=np.float64)
    # the bounds are exact up to the measure's own float arithmetic (a few ulps): beyond that, a real tie
    depends = pd.DataFrame(hi - lo > NOISE * np.maximum(1.0, np.abs(hi)), index=per_query.index, columns=measures)
    width = upper - lower
    parts = {"depends": depends, "width": width}
    table = pd.DataFrame({"value": pd.Series(mean), "lower": pd.Series(aggregate(lower)),
                          "upper": pd.Series(aggregate(upper)),
                          "tie_dependent": depends.mean(axis=0) if len(depends) else np.nan,
                          "width": pd.Series(aggregate(width))}, index=measures)
    if reference is not None:
        ref = reference.per_query[measures]
        ref.index = per_query.index
        parts["reference"] = ref
        parts["delta"] = per_query - ref
        within = (lower.to_numpy() <= ref.to_numpy()) & (ref.to_numpy() <= upper.to_numpy())
        table["reference"] = pd.Series(reference.mean)
        table["delta"] = table["value"] - table["reference"]
        table["reference_in_bounds"] = within.mean(axis=0) if len(ref) else np.nan
    table.index.name = "measure"
    frame = pd.concat(parts, axis=1)
    masses = {f"@{k}": v for k, v in sorted(tie_mass.items())}
    if masses:
        frame = pd.concat([frame, pd.concat({"tie_mass": pd.DataFrame(masses, index=per_query.index)}, axis=1)],
                          axis=1)
    mass_table = pd.DataFrame({"mean": [float(np.mean(v)) if len(v) else np.nan for v in masses.values()],
                               "share": [float(np.mean(v > 0)) if len(v) else np.nan for v in masses.values()],
                               "max": [int(np.max(v, initial=0)) for v in masses.values()]},
                              index=pd.Index(sorted(tie_mass), name="k", dtype=np.int64))
    any_dep = float(depends.any(axis=1).mean()) if len(depends) else float("nan")
    return TieAudit(frame, table, mass_table, any_dep, reference)
