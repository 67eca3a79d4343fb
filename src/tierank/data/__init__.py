"""Canonical data structures and the run x qrels join."""
