"""Measure declarations, the registry and the measure-string parser."""

from ._no_relevant import NO_RELEVANT
from ._registry import REGISTRY, measure_names, parse_measure, parse_measures
from ._spec import Measure, MeasureFamily

__all__ = ["NO_RELEVANT", "REGISTRY", "Measure", "MeasureFamily", "measure_names", "parse_measure", "parse_measures"]
