"""The one compiled module, declared here (setuptools' table for it in pyproject.toml is experimental):
dicts of dicts read in one pass (src/tierank/io/rowreader.c). Everything else is in pyproject.toml.
``optional``: a machine without a C compiler still installs tierank, which then reads dicts in Python
(the same columns, more slowly; tests/test_dict_reading.py fails there, saying so)."""

from setuptools import Extension, setup

setup(ext_modules=[Extension("tierank.io.rowreader", ["src/tierank/io/rowreader.c"], optional=True)])
