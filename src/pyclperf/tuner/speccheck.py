"""Every check a ``pyclperf tune`` spec goes through, in one place, before anything is
allocated, built or written: the same for ``--dry-run`` and for the real run.

First the document's shape, by its JSON Schema (spec.schema.json, shipped beside this file,
validated with jsonschema); then what a schema cannot say: numbers JSON should not hold (NaN,
Infinity), dtypes and whether a value fits one, the bytes the arrays need against the memory
this machine has, argument and parameter names that must exist or must not collide,
restriction, metric and grid-divisor expressions, the strategy's options and what it needs
installed, and files to read and to write. Every refusal is a SpecError whose one line starts
with the key's path, such as ``arguments[2].value: 1180591620717411303424 does not fit int32``.
"""

from __future__ import annotations

import json
import math
import os
import re
import tempfile
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path
from typing import Any, Iterator, Mapping, Sequence

import numpy as np

from .ceiling import available_memory, human_bytes  # noqa: F401  (spec.py asks here)

KeyPath = Sequence[Any]  # keys and list indices from the document's root

_IDENTIFIER = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*$")
# Parameter names a row already uses for its own fields: a parameter of that name would be
# overwritten in its row. "time" is what metric expressions call the measured seconds.
_RESERVED = ("time",)


class SpecError(ValueError):
    """A spec file problem; the message is one line naming the key."""


def fail(path: KeyPath, message: str, labels: Mapping[str, str] | None = None) -> SpecError:
    """A SpecError for the key at ``path``; ``labels`` names keys that came from elsewhere (the
    command line's --max-fevals for max_fevals)."""
    where = key_path(path, labels)
    return SpecError(f"spec: {where}: {message}" if where else f"spec: {message}")


def key_path(path: Sequence[Any], labels: Mapping[str, str] | None = None) -> str:
    """``("arguments", 2, "value")`` as ``arguments[2].value``; a key that is no identifier
    in brackets (``metrics["GB/s"]``)."""
    out = ""
    for i, part in enumerate(path):
        if i == 0 and labels and part in labels:
            out = labels[part]
        elif isinstance(part, int):
            out += f"[{part}]"
        elif _IDENTIFIER.match(str(part)):
            out += f".{part}" if out else str(part)
        else:
            out += f"[{json.dumps(part)}]"
    return out


def show(value: Any, limit: int = 60) -> str:
    """A value as the spec wrote it, shortened."""
    try:
        text = json.dumps(value, allow_nan=True)
    except (TypeError, ValueError):
        text = repr(value)
    return text if len(text) <= limit else text[: limit - 3] + "..."


# --- the schema ----------------------------------------------------------------------------
@lru_cache(maxsize=None)
def schema() -> dict[str, Any]:
    return json.loads((Path(__file__).parent / "spec.schema.json").read_text(encoding="utf-8"))


@lru_cache(maxsize=None)
def _validator() -> Any:
    from jsonschema import Draft202012Validator, validators

    # JSON Schema lets 4.0 pass as an integer; a size or a count of 4.0 is a slip here.
    checker = Draft202012Validator.TYPE_CHECKER.redefine(
        "integer", lambda _, v: isinstance(v, int) and not isinstance(v, bool))
    strict = validators.extend(Draft202012Validator, type_checker=checker)
    return strict(schema())


_TYPE_WORDS = {"integer": "an integer", "number": "a number", "string": "a string",
               "array": "a list", "object": "an object", "boolean": "true or false",
               "null": "null"}


def _describe(error: Any) -> str:
    """One schema failure in pyclperf's words."""
    v, value, sub = error.validator, error.instance, error.schema
    custom = sub.get("x-message") if isinstance(sub, dict) else None
    if v == "required":
        missing = [k for k in error.validator_value if k not in value]
        return f"missing key {missing[0]!r}"
    if v == "additionalProperties":
        known = list(sub.get("properties", {}))
        extra = [k for k in value if k not in known]
        return f"unknown key {extra[0]!r}" + (f" (known: {', '.join(known)})" if known else "")
    if custom and v in ("oneOf", "anyOf", "not", "pattern", "type"):
        if v == "pattern":
            return f"{show(value)} {custom}"
        return custom + (f", not {show(value)}" if not isinstance(value, dict) and v != "not" else "")
    if v == "type":
        kinds = [error.validator_value] if isinstance(error.validator_value, str) \
            else list(error.validator_value)
        return f"must be {' or '.join(_TYPE_WORDS.get(k, k) for k in kinds)}, not {show(value)}"
    if v == "enum":
        return (f"must be one of {', '.join(json.dumps(e) for e in error.validator_value)}, "
                f"not {show(value)}")
    if v in ("minimum", "exclusiveMinimum", "maximum"):
        how = {"minimum": "at least", "exclusiveMinimum": "more than", "maximum": "at most"}[v]
        return f"must be {how} {error.validator_value}, not {show(value)}"
    if v in ("minItems", "maxItems"):
        n = error.validator_value
        how = "at least" if v == "minItems" else "at most"
        return f"must hold {how} {n} item{'s' if n != 1 else ''}, not {len(value)}"
    if v in ("minLength", "minProperties"):
        return "must not be empty"
    return str(error.message).splitlines()[0]


def _order(doc: Any, path: Sequence[Any]) -> tuple[int, ...]:
    """Where ``path`` lies in the document, so the first problem in reading order is told."""
    out, node = [], doc
    for part in path:
        if isinstance(node, dict):
            out.append(list(node).index(part) if part in node else len(node))
        else:
            out.append(int(part))
        try:
            node = node[part]
        except (KeyError, IndexError, TypeError):
            break
    return tuple(out)


def check_schema(doc: Any, labels: Mapping[str, str] | None = None) -> None:
    errors = list(_validator().iter_errors(doc))
    if errors:
        first = min(errors, key=lambda e: _order(doc, list(e.absolute_path)))
        raise fail(list(first.absolute_path), _describe(first), labels)


def non_finite(node: Any, path: tuple[Any, ...] = ()) -> Iterator[tuple[tuple[Any, ...], float]]:
    """The NaN and Infinity numbers in the document (Python's json reads them; no schema rule
    can refuse them, since NaN compares false with every bound)."""
    if isinstance(node, float) and not math.isfinite(node):
        yield path, node
    elif isinstance(node, dict):
        for k, v in node.items():
            yield from non_finite(v, path + (k,))
    elif isinstance(node, list):
        for i, v in enumerate(node):
            yield from non_finite(v, path + (i,))


# --- arguments -----------------------------------------------------------------------------
@dataclass
class ArgumentPlan:
    """One kernel argument as the spec describes it, checked, not yet allocated."""

    kind: str                    # "array", "scalar" or "local"
    dtype: np.dtype | None = None
    shape: tuple[int, ...] = ()
    fill: str = "zeros"
    value: Any = None
    local_nbytes: int = 0

    @property
    def elements(self) -> int:
        return math.prod(self.shape)

    @property
    def nbytes(self) -> int:
        return self.elements * self.dtype.itemsize if self.kind == "array" and self.dtype else 0

    @property
    def transient_bytes(self) -> int:
        """What building it costs on top of itself: random and arange fills make 64-bit
        numbers first and cast them."""
        return 8 * self.elements if self.kind == "array" and self.fill in ("random", "arange") else 0


def dtype_of(text: str, path: KeyPath) -> np.dtype:
    """A spec's dtype string as a dtype of plain numbers a fill can make and a kernel read."""
    try:
        dt = np.dtype(text)
    except Exception:  # noqa: BLE001 - NumPy raises TypeError, ValueError, SyntaxError...
        raise fail(path, f"unknown dtype {text!r} (e.g. float32, int32, uint8)") from None
    if dt.kind not in "biufc" or dt.fields is not None or dt.subdtype is not None:
        from ..device.argtypes import plain_problem

        what = plain_problem(dt) or "a structured type"
        raise fail(path, f"{text!r} holds {what}, not numbers a kernel reads; use a numeric "
                         "dtype such as float32 or int32")
    return dt


def scalar_value(value: Any, dt: np.dtype, path: KeyPath) -> Any:
    """``value`` as a NumPy scalar of ``dt``, or SpecError when the type cannot hold it."""
    if dt.kind == "b":
        if value not in (0, 1) or isinstance(value, float) and not value.is_integer():
            raise fail(path, f"{show(value)} is no bool (use true, false, 0 or 1)")
        return dt.type(bool(value))
    if isinstance(value, bool):
        raise fail(path, f"{show(value)} is a boolean; a {dt.name} takes a number")
    if dt.kind in "iu":
        if isinstance(value, float) and not value.is_integer():
            raise fail(path, f"{show(value)} is no integer, which a {dt.name} holds")
        info = np.iinfo(dt)
        if not info.min <= int(value) <= info.max:
            raise fail(path, f"{show(value)} does not fit {dt.name} ({info.min} to {info.max})")
        return dt.type(int(value))
    top = float(np.finfo(dt).max)
    if abs(float(value)) > top:
        raise fail(path, f"{show(value)} does not fit {dt.name} (largest magnitude {top:.4g})")
    return dt.type(value)


def plan_argument(a: dict[str, Any], path: KeyPath) -> ArgumentPlan:
    if "local_nbytes" in a:
        return ArgumentPlan("local", local_nbytes=int(a["local_nbytes"]))
    dt = dtype_of(a["dtype"], path + ("dtype",))
    if "value" in a:
        return ArgumentPlan("scalar", dt, value=scalar_value(a["value"], dt, path + ("value",)))
    shape = (a["size"],) if "size" in a else tuple(a["shape"])
    return ArgumentPlan("array", dt, shape, a.get("fill", "zeros"))


def check_memory(needs: Sequence[tuple[KeyPath, int, int]], available: int | None,
                 labels: Mapping[str, str] | None = None) -> None:
    """``needs``: (key path, bytes kept, bytes needed while making it) of every array the
    spec makes. Refuse, naming the key that crosses it, when they would not fit in memory."""
    if available is None:
        return
    kept = 0
    for path, nbytes, transient in needs:
        kept += nbytes
        if kept + transient > available:
            raise fail(path, f"needs {human_bytes(nbytes + transient)} to make, "
                             f"{human_bytes(kept + transient)} with the arrays before it: more "
                             f"than the {human_bytes(available)} of memory available", labels)


# --- files ---------------------------------------------------------------------------------
def readable_text(path: Path, key: KeyPath) -> str:
    if not path.is_file():
        raise fail(key, f"{str(path)!r} is not a file")
    try:
        return path.read_text(encoding="utf-8")
    except OSError as exc:
        raise fail(key, f"cannot read {str(path)!r}: {exc.strerror or exc}") from None
    except UnicodeDecodeError as exc:
        raise fail(key, f"{str(path)!r} is not UTF-8 text ({exc.reason} at byte {exc.start})") from None


def writable_file(path: Path, key: KeyPath, labels: Mapping[str, str] | None = None) -> None:
    """Refuse unless ``path`` can be written as a file: not a folder, under a folder that
    exists or can be made, which this process can create files in. Probed by creating (and
    removing) a temporary file there: permission bits say nothing for root, nor of a
    read-only filesystem."""
    if path.is_dir():
        raise fail(key, f"{str(path)!r} is a folder; name a file (e.g. {str(path / 'results.jsonl')!r})",
                   labels)
    if path.exists() and not path.is_file():
        raise fail(key, f"{str(path)!r} exists and is not a regular file", labels)
    folder = path.parent
    while not folder.exists():
        folder = folder.parent
    if not folder.is_dir():
        raise fail(key, f"{str(folder)!r} is a file, so nothing can be written under it", labels)
    try:
        with tempfile.TemporaryFile(dir=folder, prefix=".pyclperf-probe-"):
            pass
        if path.is_file():
            with open(path, "a", encoding="utf-8"):
                pass
    except OSError as exc:
        raise fail(key, f"cannot write {str(path)!r}: {exc.strerror or exc}", labels) from None


def check_outputs(outputs: Mapping[str, Path], inputs: Sequence[Path],
                  labels: Mapping[str, str] | None = None) -> None:
    seen: dict[Path, str] = {}
    resolved_inputs = {p.resolve() for p in inputs}
    for key, path in outputs.items():
        real = path.resolve()
        if real in resolved_inputs:
            raise fail((key,), f"{str(path)!r} is one of the spec's own input files; name "
                               "another file", labels)
        if real in seen:
            raise fail((key,), f"{str(path)!r} is also the {key_path((seen[real],), labels)} "
                               "file; give each output its own file", labels)
        seen[real] = key
        writable_file(path, (key,), labels)


# --- strategy ------------------------------------------------------------------------------
def check_strategy(doc: Mapping[str, Any], labels: Mapping[str, str] | None = None) -> None:
    from .strategies import COMMON_OPTIONS, STRATEGIES

    name = doc.get("strategy", "auto")
    entry = STRATEGIES[name]
    allowed = entry.used + entry.inert + COMMON_OPTIONS
    for option in doc.get("strategy_options", {}):
        if option not in allowed:
            raise fail(("strategy_options", option),
                       f"strategy {name!r} has no option {option!r}; its options are "
                       f"{', '.join(allowed)}", labels)
    library = {"optuna": "optuna", "scipy": "scipy", "nevergrad": "nevergrad"}.get(entry.family)
    if library is not None:
        import importlib.util

        if importlib.util.find_spec(library) is None:
            raise fail(("strategy",), f"{name!r} needs {library}, which is not installed: "
                                      "pip install \"pyclperf[tune]\"", labels)
