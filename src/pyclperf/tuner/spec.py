"""The ``pyclperf tune SPEC.json`` file: a Kernel-Tuner-like description of one tuning job.

Format (paths are relative to the spec file's folder; only the first five keys are required)::

    {
      "kernel_source": "copy.cl",                 # OpenCL source file
      "kernel_name": "copy",
      "problem_size": 1048576,                    # int or list of up to 3 ints
      "arguments": [                              # one entry per kernel argument, in order
        {"name": "dst", "dtype": "float32", "size": 1048576, "fill": "zeros"},
        {"name": "src", "dtype": "float32", "shape": [1024, 1024], "fill": "random"},
        {"name": "n",   "dtype": "int32", "value": 1048576},            # a scalar
        {"name": "tile", "local_nbytes": 4096}                          # __local memory
      ],                                          # fill: random | zeros | ones | arange
      "tune_params": {"block_size_x": [64, 128, 256], "vec": [1, 2, 4]},
      "restrictions": ["block_size_x * vec <= 1024"],     # KT expressions (safe subset)
      "grid_div_x": ["block_size_x", "vec"], "grid_div_y": [], "grid_div_z": [],
      "block_size_names": ["block_size_x"],
      "compiler_options": ["-cl-fast-relaxed-math"],
      "metrics": {"GB/s": "2*4*1048576/time/1e9"},        # over the params and time (seconds)
      "reference": {"kind": "copy", "from": "src", "to": "dst"},   # or an index; omit: unverified
      "rtol": 1e-5, "atol": 1e-8,                 # atol omitted: rtol x the answer's median
      "inout": ["dst"],                           # restored before every launch (names/indices)
      "strategy": "brute_force", "strategy_options": {}, "max_fevals": 50, "time_limit": 600,
      "timeout": 30,                              # seconds one configuration may take
      "memory_limit": "4G",                       # a worker's memory (default: 75% available)
      "seed": 1, "iterations": 7, "warmup": 3, "min_time": 0.05, "method": "auto",
      "out": "copy_tune.jsonl", "cache": "copy_cache.json", "t4": "copy_t4.json"
    }

``reference`` kinds: ``copy`` (after the kernel, argument ``to`` must equal the initial ``from``),
``npy`` (argument ``arg`` must equal the array in the .npy file ``path``), ``expression``
(argument ``arg`` must equal an elementwise expression of the other arguments by name, e.g.
``{"kind": "expression", "arg": "c", "expression": "a + b"}``, evaluated by the restrictions'
safe evaluator in the arguments' own dtypes) and ``matmul`` (argument ``to`` must equal ``a``
times ``b``, 2-D arrays given a ``shape``, computed in float64). Random fills are
seeded with ``data_seed`` (default 0), so two runs tune on the same data. Metric expressions use
the same safe evaluator as restrictions (tuner.restrictions).

``parse_spec`` checks everything first (tuner/speccheck.py: the JSON Schema spec.schema.json,
then dtypes, values, sizes against the memory available, names, expressions, strategy options
and the files to read and write) and raises SpecError with one line naming the key on the
first problem, e.g. ``spec: arguments[2].value: 1180591620717411303424 does not fit int32``.
Only then are the arrays made (not at all for ``allocate=False``, which ``--dry-run`` uses).
"""

from __future__ import annotations

import json
import os
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable, Mapping

import numpy as np

from . import speccheck
from .restrictions import compile_expression, compile_restrictions
from .rows import ROW_FIELDS
from .searchspace import Space
from .speccheck import (ArgumentPlan, SpecError, check_memory, check_outputs,
                        check_schema, check_strategy, fail, non_finite, plan_argument,
                        readable_text)
from .space import compile_divisors

__all__ = ["SpecError", "TuneSpec", "parse_spec"]

_OUTPUTS = ("out", "cache", "t4")
_PASSED = ("grid_div_x", "grid_div_y", "grid_div_z", "block_size_names", "compiler_options",
           "strategy_options", "max_fevals", "time_limit", "timeout", "seed", "iterations",
           "warmup", "min_time", "min_repeats", "max_repeats", "rtol", "atol", "method",
           "memory_limit")


@dataclass
class TuneSpec:
    """A parsed spec: ``kwargs`` for pyclperf.tune() and where the outputs go. With
    ``allocate=False`` the arrays are not made: ``kwargs`` lacks "args" and "answer"."""

    path: Path
    kwargs: dict[str, Any]
    t4: Path | None = None
    arg_names: list[str] = field(default_factory=list)
    verified: bool = False

    def search_space(self) -> Space:
        """The configurations of tune_params the restrictions allow (counted when few enough,
        searchspace.EXACT_LIMIT, or without restrictions)."""
        params = self.kwargs["params"]
        return Space(params, compile_restrictions(self.kwargs.get("restrictions"), list(params)))

    def space_size(self) -> tuple[int, int | None]:
        """(configs in the product of tune_params, configs the restrictions allow, or None when
        too many to count); a config whose restriction raises counts as not allowed, as the
        engine marks it invalid."""
        space = self.search_space()
        return space.size, space.allowed_count


def _read(path: Path) -> Any:
    """The spec file's JSON; SpecError for a file that cannot be read or parsed."""
    try:
        text = path.read_text(encoding="utf-8")
    except OSError as e:
        raise SpecError(f"spec: cannot read {str(path)!r}: {e.strerror or e}") from None
    except UnicodeDecodeError as e:
        raise SpecError(f"spec: {str(path)!r} is not UTF-8 text ({e.reason} at byte {e.start})") from None
    try:
        return json.loads(text)
    except RecursionError:
        raise SpecError(f"spec: {str(path)!r} nests lists or objects too deeply") from None
    except ValueError as e:  # JSONDecodeError, and integers of more digits than Python reads
        raise SpecError(f"spec: {str(path)!r} is not valid JSON ({str(e).splitlines()[0]})") from None


def _arg_index(ref: Any, names: list[str], key: tuple, labels: Mapping[str, str]) -> int:
    if isinstance(ref, int) and 0 <= ref < len(names):
        return ref
    if isinstance(ref, str) and ref in names:
        return names.index(ref)
    raise fail(key, f"{json.dumps(ref)} names no argument (arguments: {', '.join(names)})", labels)


def _fill(plan: ArgumentPlan, rng: np.random.Generator) -> np.ndarray:
    n, dt = plan.elements, plan.dtype
    if plan.fill == "zeros":
        arr = np.zeros(n, dt)
    elif plan.fill == "ones":
        arr = np.ones(n, dt)
    elif plan.fill == "arange":
        arr = np.arange(n).astype(dt)
    elif dt.kind in "fc":
        arr = rng.random(n).astype(dt)
    else:
        arr = rng.integers(0, 100, n).astype(dt)
    return arr.reshape(plan.shape)


def _npy(path: Path, plan: ArgumentPlan, name: str, key: tuple) -> np.ndarray:
    """The expected array of an npy reference, opened without reading it whole."""
    if not path.is_file():
        raise fail(key, f"{str(path)!r} is not a file")
    try:
        arr = np.load(path, mmap_mode="r", allow_pickle=False)
    except Exception as e:  # noqa: BLE001 - OSError, ValueError for pickles and non-.npy files
        raise fail(key, f"cannot read {str(path)!r} as a .npy array ({str(e).splitlines()[0]})") from None
    if not isinstance(arr, np.ndarray):
        raise fail(key, f"{str(path)!r} holds several arrays (.npz); give one .npy array")
    if plan.kind != "array":
        raise fail(key, f"argument {name!r} is no array, so nothing can be compared with it")
    if arr.dtype.newbyteorder("=") != plan.dtype.newbyteorder("="):
        raise fail(key, f"{str(path)!r} holds {arr.dtype}, but argument {name!r} is "
                        f"{plan.dtype}; save it as {plan.dtype}")
    if arr.size != plan.elements:
        raise fail(key, f"{str(path)!r} holds {arr.size} elements, argument {name!r} "
                        f"{plan.elements}")
    return arr


def _computed_reference(ref: Mapping[str, Any], plans: list[ArgumentPlan], names: list[str],
                        labels: Mapping[str, str]) -> tuple[int, Callable[[list[Any]], Any]]:
    """An ``expression`` or ``matmul`` reference, checked against the arguments' plans: (the
    checked argument, a function of the made arguments giving its expected contents)."""
    if ref["kind"] == "expression":
        checked = _arg_index(ref["arg"], names, ("reference", "arg"), labels)
        if plans[checked].kind != "array":
            raise fail(("reference", "arg"), f"argument {names[checked]!r} is no array", labels)
        usable = [n for n, p in zip(names, plans) if p.kind in ("array", "scalar")]
        try:
            expr = compile_expression(ref["expression"], usable, what="reference expression")
        except ValueError as e:
            raise fail(("reference", "expression"), str(e), labels) from None
        plan = plans[checked]

        def evaluate(args: list[Any]) -> Any:
            env = {n: a for n, a in zip(names, args) if n in usable}
            value = np.asarray(expr(env))
            return np.broadcast_to(value, plan.shape).astype(plan.dtype)
        return checked, evaluate
    a, b, to = (_arg_index(ref[k], names, ("reference", k), labels) for k in ("a", "b", "to"))
    shapes = [plans[i].shape if plans[i].kind == "array" else None for i in (a, b, to)]
    if any(sh is None or len(sh) != 2 for sh in shapes) or shapes[0][1] != shapes[1][0] or \
            tuple(shapes[2]) != (shapes[0][0], shapes[1][1]):
        raise fail(("reference",), "'matmul' needs 2-D arrays a (M x K), b (K x N) and to "
                                   f"(M x N): give them a 'shape' (got {shapes})", labels)
    dtype = plans[to].dtype

    def product(args: list[Any]) -> Any:
        return (args[a].astype(np.float64) @ args[b].astype(np.float64)).astype(dtype)
    return to, product


def parse_spec(path: str | os.PathLike[str], overrides: Mapping[str, Any] | None = None, *,
               labels: Mapping[str, str] | None = None, allocate: bool = True) -> TuneSpec:
    """Read and check a spec file; SpecError on the first problem.

    ``overrides`` replace keys of the file before anything is checked (the command line's
    --max-fevals, --out, ...); ``labels`` names them in messages ({"max_fevals":
    "--max-fevals"}). Paths in the file are relative to its folder; an override's path is
    used as given. ``allocate=False`` checks everything but makes no arrays."""
    path = Path(path)
    labels = dict(labels or {})
    doc = _read(path)
    if isinstance(doc, dict):
        doc = {**doc, **dict(overrides or {})}
    for where, number in non_finite(doc):
        spelled = "NaN" if number != number else ("Infinity" if number > 0 else "-Infinity")
        raise fail(where, f"{spelled} is not a number a spec may hold", labels)
    check_schema(doc, labels)
    folder = path.parent
    params = dict(doc["tune_params"])
    for name in params:
        if name in ROW_FIELDS or name == "time":
            why = ("is what metric expressions call the measured seconds" if name == "time"
                   else "is a field every row has")
            raise fail(("tune_params", name), f"{name!r} {why}; rename the parameter")
    source_path = folder / doc["kernel_source"]
    source = readable_text(source_path, ("kernel_source",))

    plans = [plan_argument(a, ("arguments", i)) for i, a in enumerate(doc["arguments"])]
    names = [str(a.get("name", i)) for i, a in enumerate(doc["arguments"])]
    for i, name in enumerate(names):
        if names.index(name) != i:
            raise fail(("arguments", i, "name"), f"{name!r} names argument {names.index(name)} already")
    inout = [_arg_index(r, names, ("inout", i), labels) for i, r in enumerate(doc.get("inout", []))]

    needs = [(("arguments", i, "size" if "size" in doc["arguments"][i] else "shape"),
              p.nbytes, p.transient_bytes) for i, p in enumerate(plans) if p.kind == "array"]
    available = speccheck.available_memory()
    check_memory(needs, available, labels)  # before the reference, which may copy one of them
    ref = doc.get("reference")
    expected: Any = None
    if ref is not None and ref["kind"] == "copy":
        src = _arg_index(ref["from"], names, ("reference", "from"), labels)
        dst = _arg_index(ref["to"], names, ("reference", "to"), labels)
        for key, i in (("from", src), ("to", dst)):
            if plans[i].kind != "array":
                raise fail(("reference", key), f"argument {names[i]!r} is no array; 'copy' "
                                               "compares arrays")
        if plans[src].elements != plans[dst].elements:
            raise fail(("reference",), f"'from' ({names[src]!r}) has {plans[src].elements} "
                                       f"elements and 'to' ({names[dst]!r}) {plans[dst].elements}")
        needs.append((("reference",), plans[dst].nbytes, 0))
    elif ref is not None and ref["kind"] == "npy":
        checked = _arg_index(ref["arg"], names, ("reference", "arg"), labels)
        expected = _npy(folder / ref["path"], plans[checked], names[checked], ("reference", "path"))
        needs.append((("reference",), plans[checked].nbytes, 0))
    elif ref is not None:
        checked, expected = _computed_reference(ref, plans, names, labels)
        needs.append((("reference",), plans[checked].nbytes, 0))
    check_memory(needs, available, labels)

    restrictions = doc.get("restrictions", [])
    restrictions = [restrictions] if isinstance(restrictions, str) else list(restrictions)
    for i, r in enumerate(restrictions):
        try:
            compile_restrictions([r], list(params))
        except ValueError as e:
            raise fail(("restrictions", i), str(e), labels) from None
    metrics: dict[str, Callable[[dict, float], float]] = {}
    for name, expr in doc.get("metrics", {}).items():
        try:
            e = compile_expression(expr, list(params) + ["time"], what=f"metric {name!r}")
        except ValueError as err:
            raise fail(("metrics", name), str(err), labels) from None
        metrics[name] = (lambda e: lambda config, seconds: float(e({**config, "time": seconds})))(e)
    for axis in "xyz":
        for i, part in enumerate(doc.get(f"grid_div_{axis}", [])):
            try:
                compile_divisors([[part]], list(params))
            except ValueError as e:
                raise fail((f"grid_div_{axis}", i), str(e), labels) from None
    check_strategy(doc, labels)
    if "memory_limit" in doc:
        from .ceiling import parse_limit

        try:
            parse_limit(doc["memory_limit"], "")
        except ValueError as e:
            raise fail(("memory_limit",), str(e), labels) from None

    outputs = {k: folder / doc[k] for k in _OUTPUTS if k in doc}
    inputs = [path, source_path] + ([folder / ref["path"]] if ref and ref["kind"] == "npy" else [])
    check_outputs(outputs, inputs, labels)

    ps = doc["problem_size"]
    kwargs: dict[str, Any] = {
        "source": source, "kernel_name": doc["kernel_name"],
        "problem_size": ps if isinstance(ps, int) else tuple(ps), "params": params,
        "restrictions": restrictions, "strategy": doc.get("strategy", "auto"),
    }
    if "inout" in doc:
        kwargs["inout"] = inout
    for key in _PASSED:
        if key in doc:
            kwargs[key] = doc[key]
    if metrics:
        kwargs["metrics"] = metrics
    for key in ("out", "cache"):
        if key in outputs:
            kwargs[key] = str(outputs[key])
    if allocate:
        kwargs["args"] = args = _make(plans, doc.get("data_seed", 0))
        if ref is not None:
            answer: list[Any] = [None] * len(args)
            if ref["kind"] == "copy":
                answer[dst] = args[src].astype(args[dst].dtype, copy=True)
            elif ref["kind"] == "npy":
                answer[checked] = np.array(expected)
            else:
                answer[checked] = expected(args)
            kwargs["answer"] = answer
    return TuneSpec(path=path, kwargs=kwargs, t4=outputs.get("t4"), arg_names=names,
                    verified=ref is not None)


def _make(plans: list[ArgumentPlan], data_seed: int) -> list[Any]:
    """The arguments themselves: arrays filled (random ones from ``data_seed``), scalars,
    LocalMemory."""
    from ..device.program import LocalMemory

    rng = np.random.default_rng(data_seed)
    out: list[Any] = []
    for p in plans:
        if p.kind == "local":
            out.append(LocalMemory(p.local_nbytes))
        elif p.kind == "scalar":
            out.append(p.value)
        else:
            out.append(_fill(p, rng))
    return out
