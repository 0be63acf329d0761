"""A kernel's parameter names, read from its source before anything is built.

tune() checks ``answer`` and ``reference`` against the arguments before the first configuration
runs, when no program exists yet to ask for its argument info. The names read here let those
messages say ``argument 2 ('c')`` as the kernel spells it. The reading is deliberately modest:
comments are removed and the parameter list of ``__kernel ... name(...)`` is split at its
top-level commas; where the source leaves any doubt (no such kernel, a macro standing for
parameters, two definitions that differ) the answer is None and callers fall back to numbers.
"""

from __future__ import annotations

import re

_COMMENTS = re.compile(r"/\*.*?\*/|//[^\n]*", re.S)
_IDENTIFIER = re.compile(r"[A-Za-z_]\w*")
_ARRAY_SUFFIX = re.compile(r"(\s*\[[^\]]*\])+\s*$")


def _parameter_list(text: str, start: int) -> str | None:
    """The text between the parenthesis at ``start`` and its match."""
    depth = 0
    for i in range(start, len(text)):
        if text[i] == "(":
            depth += 1
        elif text[i] == ")":
            depth -= 1
            if depth == 0:
                return text[start + 1:i]
    return None


def _split(params: str) -> list[str]:
    parts, depth, current = [], 0, []
    for ch in params:
        if ch in "([{":
            depth += 1
        elif ch in ")]}":
            depth -= 1
        if ch == "," and depth == 0:
            parts.append("".join(current))
            current = []
        else:
            current.append(ch)
    parts.append("".join(current))
    return [p.strip() for p in parts]


def _names(params: str) -> list[str] | None:
    if params.strip() in ("", "void"):
        return []
    names = []
    for p in _split(params):
        p = _ARRAY_SUFFIX.sub("", p)
        found = _IDENTIFIER.findall(p)
        # A named parameter has a type before its name; a lone word is a macro or unnamed.
        if len(found) < 2 or not p.endswith(found[-1]):
            return None
        names.append(found[-1])
    return names


def kernel_parameter_names(source: str, kernel_name: str) -> list[str] | None:
    """The parameter names of kernel ``kernel_name`` in ``source``, or None when they cannot
    be read with confidence."""
    text = _COMMENTS.sub(" ", source)
    found: list[list[str]] = []
    for m in re.finditer(rf"\b{re.escape(kernel_name)}\s*\(", text):
        head = text[:m.start()]
        declaration = head[max(head.rfind(";"), head.rfind("}"), head.rfind("#")) + 1:]
        if not re.search(r"\b(__kernel|kernel)\b", declaration):
            continue  # a call, or an ordinary function of that name
        params = _parameter_list(text, m.end() - 1)
        names = None if params is None else _names(params)
        if names is None:
            return None
        found.append(names)
    if not found or any(f != found[0] for f in found):
        return None
    return found[0]
