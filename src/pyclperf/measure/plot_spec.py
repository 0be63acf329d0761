"""The figures a results file may ask for: ``meta["plot"]`` names a kind and gives its
arguments, and this table says which kinds there are and what each argument may hold.

The table belongs to the file format, so that the loader (validate.py) checks a record without
reaching up to the code that draws it; views/plot.py draws each kind with a function of the
same arguments (tests/test_plots.py holds the two together).
"""

from __future__ import annotations

# An argument: the JSON kinds its value may be (validate.kind_of's names; "object of strings"
# is an object whose values are all strings), and whether a record must give it.
Arg = tuple[frozenset[str], bool]


def _arg(*kinds: str, required: bool = False) -> Arg:
    return frozenset(kinds), required


_FLAG = _arg("boolean")
_TEXT = _arg("string")
_LINES = _arg("object", "null")  # label -> position of a reference line

FIGURES: dict[str, dict[str, Arg]] = {
    "bandwidth": {"label": _arg("string", "null")},
    "modes": {"group": _TEXT, "logx": _FLAG, "logy": _FLAG},
    "columns": {"columns": _arg("object of strings", required=True),
                "ylabel": _arg("string", required=True), "logx": _FLAG, "logy": _FLAG},
    "bars": {"label": _TEXT, "value": _TEXT, "xlabel": _TEXT},
    "lines": {"y": _arg("string", required=True), "ylabel": _arg("string", required=True),
              "group": _arg("string", "null"), "mark": _arg("string", "null"),
              "mark_label": _TEXT, "logx": _FLAG, "logy": _FLAG, "hlines": _LINES,
              "vlines": _LINES, "label_format": _TEXT},
    "model": {"group": _arg("string", required=True), "value": _arg("string", required=True),
              "model": _arg("string", required=True), "ylabel": _TEXT, "logx": _FLAG,
              "logy": _FLAG},
}

__all__ = ["FIGURES", "Arg"]
