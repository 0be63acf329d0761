"""Interim restrictions (callables only) until the Kernel Tuner expression parser lands."""

from __future__ import annotations

from typing import Any, Callable, Sequence


def compile_restrictions(restrictions: Sequence[Any], param_names: Sequence[str]) -> list[Callable[[dict], bool]]:
    out = []
    for r in restrictions:
        if not callable(r):
            raise TypeError(f"restriction {r!r} is not callable")
        out.append(r)
    return out
