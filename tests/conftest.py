"""pytest's settings for this folder."""

# scripts the tests run in subprocesses, not test modules: importing one here would set KERAS_BACKEND for
# the whole session (--doctest-modules imports every module of the test paths)
collect_ignore = ["keras_backend_check.py"]
