"""What a query with no relevant document scores: the ``no_relevant`` policy.

"No relevant document" is decided per measure, from the judged documents of the query (retrieved or
not; for matrices and hash codes, the row):

* a measure with a ``rel`` parameter: no judged document has grade >= rel;
* a graded measure without one (nDCG, DCG, ERR, ACG, WAP's weights..., and ``NumRet`` with
  ``rel=None``): no judged document has a positive grade.

Negative grades are unjudged documents and never count. The policies:

========  ==================================================================================
"zero"    the measure's own value (trec_eval; 0 for proportions), the default
"skip"    NaN for the query, left out of the mean (and of NumQ's sum)
"one"     1 for measures whose values lie in [0, 1]; counts and DCG keep their value
"error"   an InputError naming the measure and the first such query
========  ==================================================================================
"""

from __future__ import annotations

from typing import Any

import numpy as np

from ..errors import InputError, param_text
from ..ties.groups import Judged
from ._spec import Measure

__all__ = ["NO_RELEVANT", "check_no_relevant", "has_relevant", "apply_no_relevant", "relevance_rule"]

NO_RELEVANT = ("zero", "skip", "one", "error")


def check_no_relevant(policy: str) -> str:
    """Return ``policy`` if it is one of :data:`NO_RELEVANT`, else raise InputError listing them.

    >>> check_no_relevant("skip")
    'skip'
    """
    if not isinstance(policy, str) or policy not in NO_RELEVANT:
        raise InputError(f"no_relevant={policy!r} is not a policy; use one of "
                         + ", ".join(repr(p) for p in NO_RELEVANT))
    return policy


def _threshold(m: Measure) -> float | None:
    """The measure's ``rel`` (None: graded measure, relevant means a positive grade)."""
    return m["rel"] if "rel" in m.family.params else None


def relevance_rule(m: Measure) -> str:
    """In words, what a relevant document is for ``m`` (for messages).

    >>> from tierank.measures import parse_measure
    >>> relevance_rule(parse_measure("P(rel=2)@5")), relevance_rule(parse_measure("nDCG@10"))
    ('grade >= 2', 'grade > 0')
    """
    rel = _threshold(m)
    return "grade > 0" if rel is None else f"grade >= {rel:g}"


def has_relevant(m: Measure, judged: Judged) -> np.ndarray:
    """Whether each query has a relevant judged document for measure ``m`` (bool per query).

    Parameters
    ----------
    m : Measure
    judged : Judged
        The judged grades of every query (retrieved or not).

    Returns
    -------
    bool ndarray (n_queries,)

    Examples
    --------
    >>> import numpy as np
    >>> from tierank.measures import parse_measure
    >>> from tierank.ties.groups import Judged
    >>> j = Judged.from_csr(np.array([0, 2, 4]), np.array([0.0, 1.0, 0.0, -2.0]))
    >>> has_relevant(parse_measure("AP"), j).tolist(), has_relevant(parse_measure("AP(rel=0)"), j).tolist()
    ([True, False], [True, True])
    """
    rel = _threshold(m)
    if rel is None:
        return judged.count_positive() > 0
    return judged.count_at_least(rel) > 0


def apply_no_relevant(m: Measure, values: np.ndarray, has_rel: np.ndarray, policy: str,
                      labels: Any = None, what: str = "query") -> np.ndarray:
    """The values of ``m`` under the ``no_relevant`` policy (a new array; raises for ``"error"``).

    Parameters
    ----------
    m : Measure
    values : float ndarray (n_queries,)
        The measure's own values (``no_relevant="zero"``).
    has_rel : bool ndarray (n_queries,)
        :func:`has_relevant`.
    policy : {"zero", "skip", "one", "error"}
    labels : sequence, optional
        ``labels[i]`` names query i in the error message (default: its index).
    what : str
        What a query is called in the message ("query", "row").

    Examples
    --------
    >>> import numpy as np
    >>> from tierank.measures import parse_measure
    >>> v, has = np.array([0.5, 0.0]), np.array([True, False])
    >>> apply_no_relevant(parse_measure("AP"), v, has, "one").tolist()
    [0.5, 1.0]
    >>> apply_no_relevant(parse_measure("NumRet"), v, has, "one").tolist()
    [0.5, 0.0]
    >>> apply_no_relevant(parse_measure("AP"), v, has, "skip").tolist()
    [0.5, nan]
    """
    check_no_relevant(policy)
    out = np.array(values, dtype=np.float64, copy=True)
    none = ~np.asarray(has_rel, dtype=bool)
    if policy == "zero" or not none.any():
        return out
    if policy == "skip":
        out[none] = np.nan
    elif policy == "one":
        if m.family.proportion:
            out[none] = 1.0
    else:
        first = int(np.flatnonzero(none)[0])
        label = first if labels is None else labels[first]
        label = label.item() if isinstance(label, np.generic) else label
        raise InputError(f"measure {m.text or str(m)!r}: {what} {label!r} has no relevant judged document "
                         f"({relevance_rule(m)}); {param_text('no_relevant', 'error')} (use "
                         f"{param_text('no_relevant', 'zero')}, {param_text('no_relevant', 'skip')} or "
                         f"{param_text('no_relevant', 'one')} to score such "
                         f"{'queries' if what == 'query' else what + 's'})", query=label)
    return out
