"""Sphinx configuration of tierank's documentation (``make docs``)."""

from __future__ import annotations

import os
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE / "_ext"))
sys.path.insert(0, str(HERE.parent / "src"))

# tierank.keras works on every Keras 3 backend; torch imports faster than TensorFlow
os.environ.setdefault("KERAS_BACKEND", "torch")
os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "3")

import tierank  # noqa: E402

project = "tierank"
author = "tierank contributors"
copyright = "tierank contributors"
release = version = tierank.__version__

extensions = [
    "myst_parser",
    "sphinx.ext.autodoc",
    "numpydoc",
    "sphinx.ext.doctest",
    "sphinx.ext.intersphinx",
    "tierank_docs",
]

source_suffix = {".rst": "restructuredtext", ".md": "markdown"}
root_doc = "index"
# files starting with "_" are fragments (e.g. README sections), not pages
exclude_patterns = ["_build", "_*.md", "_*.rst", "Thumbs.db", ".DS_Store"]
templates_path: list[str] = []
smartquotes = False   # measure strings such as denom='R' stay as typed

# MyST: `##` and `###` headings get anchors, so pages link to sections of docs/maths.md
myst_heading_anchors = 3
myst_enable_extensions = ["colon_fence"]
suppress_warnings = ["myst.strikethrough"]

# autodoc + numpydoc
autodoc_default_options = {"members": True}
autodoc_member_order = "bysource"
autodoc_typehints = "none"          # numpydoc's Parameters sections already give the types
numpydoc_show_class_members = False
numpydoc_class_members_toctree = False
numpydoc_xref_param_type = False
numpydoc_validation_checks: set[str] = set()

# no network: intersphinx has no inventories, so references to numpy, pandas... stay plain text
intersphinx_mapping: dict = {}

# -n: every cross-reference must resolve, except the types of other libraries named in docstrings
nitpicky = True
nitpick_ignore_regex = [
    (r"py:.*", r"(numpy|np|pandas|pd|pyarrow|pa|pyspark|dask|torch|torchmetrics|keras|keras_rs|matplotlib|scipy|click|math)(\..*)?"),
    (r"py:mod", r"tierank\.io\.(stream|workers)"),                   # cited by tierank.evaluate
    # names that docstrings cite but that are not part of the documented API
    (r"py:func", r"paired_test"),                                   # tierank.compare.paired_test
    (r"py:(mod|func)", r"tierank\.hashing\.codes(\..*)?"),             # an internal module of tierank.hashing
    (r"py:mod", r"tierank\.keras\.retrieval"),                       # cited by tierank.keras; does not exist
    (r"py:meth", r"TierankProvider\.evaluator"),                      # inherited from ir_measures' provider
]

# the doctests run in the directory holding the pages' example files ({tierank-file})
doctest_global_setup = """
import os as _os
_tierank_cwd = _os.getcwd()
_os.chdir(_os.environ["TIERANK_DOCS_EXAMPLES"])
import warnings as _warnings
import numpy as np
import pandas as pd
import tierank
"""
doctest_global_cleanup = """
_os.chdir(_tierank_cwd)
"""
doctest_test_doctest_blocks = ""   # only the {doctest} / {testcode} blocks of the pages run
import doctest as _doctest  # noqa: E402

doctest_default_flags = (_doctest.ELLIPSIS | _doctest.IGNORE_EXCEPTION_DETAIL | _doctest.DONT_ACCEPT_TRUE_FOR_1
                         | _doctest.NORMALIZE_WHITESPACE)

html_theme = "furo"
html_title = f"tierank {release}"
html_static_path: list[str] = []
