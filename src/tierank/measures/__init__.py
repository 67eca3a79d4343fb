"""Measure declarations, the registry and the measure-string parser."""

from ._no_relevant import NO_RELEVANT
from ._registry import (REGISTRY, ExpandedMeasures, expand, expand_trec, measure_names, parse_measure,
                        parse_measures, trec_order, trec_output_name, trec_prints_per_query, trec_set)
from ._spec import Measure, MeasureFamily

__all__ = ["NO_RELEVANT", "REGISTRY", "ExpandedMeasures", "Measure", "MeasureFamily", "expand", "expand_trec",
           "measure_names", "parse_measure", "parse_measures", "trec_order", "trec_output_name",
           "trec_prints_per_query", "trec_set"]
