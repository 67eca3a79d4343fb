"""Readers and converters for runs and judgments (dicts, DataFrames, TREC files)."""
