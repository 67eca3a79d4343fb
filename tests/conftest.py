"""pytest's settings for this folder."""

# scripts the tests run in subprocesses, not test modules: importing one here would set KERAS_BACKEND for
# the whole session (--doctest-modules imports every module of the test paths)
collect_ignore = ["keras_backend_check.py"]

# Hypothesis: no per-example deadline anywhere. CI runs the suite on two loaded cores, where an example's
# time says nothing about the code; speed is measured in benchmarks/, never asserted in tests.
from hypothesis import settings  # noqa: E402

settings.register_profile("tierank", deadline=None)
settings.load_profile("tierank")
