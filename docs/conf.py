"""Sphinx configuration of pyclperf's documentation (``make docs``; warnings fail the build).

Pages that come from elsewhere are generated into _generated/ (git-ignored) when Sphinx reads
this file, so nothing is written twice by hand: the notebooks are copied from ../notebooks and
executed on the CPU device at build time, and the experiment catalogue is drawn from
``pyclperf.experiments.REGISTRY``.
"""

from __future__ import annotations

import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

import generate  # noqa: E402  (docs/generate.py, found through the line above)

generate.all_pages(HERE / "_generated", HERE.parent / "notebooks")

project = "pyclperf"
author = "the pyclperf developers"
copyright = "the pyclperf developers"  # noqa: A001  (Sphinx's name for it)

extensions = ["myst_nb", "sphinx.ext.autodoc", "sphinx.ext.napoleon", "sphinx.ext.viewcode"]
exclude_patterns = ["_build", "Thumbs.db", ".DS_Store"]
html_theme = "furo"
html_title = "pyclperf"

# The notebooks run top to bottom at every build, in a temporary directory (the files they save
# land there), and an error in a cell fails the build like a warning does.
nb_execution_mode = "force"
nb_execution_timeout = 900
nb_execution_in_temp = True
nb_execution_raise_on_error = True
nb_merge_streams = True
myst_enable_extensions = ["colon_fence"]
myst_heading_anchors = 3

# The API reference: docstrings of the package and of the C++ extension (pybind11 puts the
# signatures the stubs in _core.pyi describe into its docstrings).
autodoc_default_options = {"members": True, "undoc-members": False, "show-inheritance": True}
autodoc_member_order = "bysource"
autodoc_typehints = "description"
autodoc_docstring_signature = True
