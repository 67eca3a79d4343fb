"""Tie groups, tie statistics and tie modes."""
