"""The OpenCL C sources shipped inside the package (kernels/*.cl), with their shared pieces.

A shipped file may hold lines ``#include "name.clh"``: the text of kernels/name.clh is put in
their place here, so the driver's compiler never needs an include path (which differs between
an installed wheel, a source tree and a remote worker, and which drivers that cache builds by
source text would not see change). Included files include nothing themselves.
"""

from __future__ import annotations

import functools
import os
import re
from importlib import resources
from pathlib import Path

_INCLUDE = re.compile(r'^[ \t]*#[ \t]*include[ \t]+"([^"\n]+)"[ \t]*$', re.MULTILINE)


def _read(filename: str) -> str:
    path = resources.files("pyclperf").joinpath("kernels", filename)
    if not path.is_file():
        available = sorted(p.name for p in resources.files("pyclperf").joinpath("kernels").iterdir())
        raise FileNotFoundError(f"no shipped kernel file {filename!r}; available: {available}")
    return path.read_text(encoding="utf-8")


def _included(name: str, by: str) -> str:
    text = _read(name)
    nested = _INCLUDE.search(text)
    if nested:
        raise ValueError(f"kernels/{name} (included by {by}) includes {nested.group(1)!r}: "
                         "included files include nothing")
    return f"// ---- kernels/{name} ----\n{text.rstrip()}\n// ---- end of kernels/{name} ----"


@functools.lru_cache(maxsize=None)
def kernel_source(filename: str) -> str:
    """Text of a shipped kernel file with its includes in place, e.g.
    ``kernel_source("copy.cl")``. Read once per process: the package's files do not change
    under it, and experiments ask for theirs on every run."""
    return _INCLUDE.sub(lambda m: _included(m.group(1), filename), _read(filename))


def load_source(source: str | os.PathLike[str]) -> str:
    """OpenCL C given as text, as a path to a .cl file, or as the name of a shipped kernel file."""
    text = os.fspath(source)
    if "\n" in text or not text.endswith(".cl"):
        return text
    if Path(text).is_file():
        return Path(text).read_text(encoding="utf-8")
    try:
        return kernel_source(text)
    except FileNotFoundError as exc:
        from .._core import InvalidArgumentError

        raise InvalidArgumentError(f"{text!r} is not a path that exists here, and {exc}") from None
