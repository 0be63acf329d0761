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
      "rtol": 1e-5, "atol": 1e-8,
      "inout": ["dst"],                           # restored before every launch (names/indices)
      "strategy": "brute_force", "strategy_options": {}, "max_fevals": 50, "time_limit": 600,
      "timeout": 30,                              # seconds one configuration may take
      "seed": 1, "iterations": 7, "warmup": 3, "min_time": 0.05,
      "out": "copy_tune.jsonl", "cache": "copy_cache.json", "t4": "copy_t4.json"
    }

``reference`` kinds: ``copy`` (after the kernel, argument ``to`` must equal the initial ``from``),
``npy`` (argument ``arg`` must equal the array in the .npy file ``path``), ``expression``
(argument ``arg`` must equal an elementwise expression of the other arguments by name, e.g.
``{"kind": "expression", "arg": "c", "expression": "a + b"}``, evaluated by the restrictions'
safe evaluator in the arguments' own dtypes) and ``matmul`` (argument ``to`` must equal ``a``
times ``b``, 2-D arrays given a ``shape``, computed in float64). Random fills are
seeded with ``data_seed`` (default 0), so two runs tune on the same data. Metric expressions use
the same safe evaluator as restrictions (engine.restrictions). ``parse_spec`` checks everything
and raises SpecError with a one-line message on the first problem.
"""

from __future__ import annotations

import itertools
import json
import os
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable

import numpy as np

from .restrictions import compile_expression, compile_restrictions
from .strategies import STRATEGIES

REQUIRED = ("kernel_source", "kernel_name", "problem_size", "arguments", "tune_params")
OPTIONAL = ("restrictions", "grid_div_x", "grid_div_y", "grid_div_z", "block_size_names",
            "compiler_options", "metrics", "reference", "rtol", "atol", "strategy",
            "strategy_options", "max_fevals", "time_limit", "timeout", "seed", "data_seed", "iterations",
            "inout", "warmup", "min_time", "min_repeats", "max_repeats", "out", "cache", "t4", "comment")
FILLS = ("random", "zeros", "ones", "arange")
_ARG_KEYS = ("name", "dtype", "size", "shape", "fill", "value", "local_nbytes")


class SpecError(ValueError):
    """A spec file problem; the message is one line naming the key."""


@dataclass
class TuneSpec:
    """A parsed spec: ``kwargs`` for pyclperf.tune() and where the outputs go."""

    path: Path
    kwargs: dict[str, Any]
    t4: Path | None = None
    arg_names: list[str] = field(default_factory=list)

    def space_size(self) -> tuple[int, int]:
        """(configs in the product of tune_params, configs the restrictions allow); a config whose
        restriction raises counts as not allowed, as the engine marks it invalid."""
        params = self.kwargs["params"]
        rs = compile_restrictions(self.kwargs.get("restrictions"), list(params))
        total = allowed = 0
        for values in itertools.product(*params.values()):
            total += 1
            cfg = dict(zip(params, values))
            try:
                allowed += all(r(cfg) for r in rs)
            except Exception:  # noqa: BLE001 - any error in a restriction rules the config out
                pass
        return total, allowed


def _fail(msg: str) -> SpecError:
    return SpecError(f"spec: {msg}")


def _is_int(v: Any) -> bool:
    return isinstance(v, int) and not isinstance(v, bool)


def _is_num(v: Any) -> bool:
    return isinstance(v, (int, float)) and not isinstance(v, bool)


def _str_list(spec: dict, key: str) -> list[str] | None:
    v = spec.get(key)
    if v is None:
        return None
    if not isinstance(v, list) or not all(isinstance(s, str) for s in v):
        raise _fail(f"{key!r} must be a list of strings")
    return list(v)


def _dtype(a: dict, where: str) -> np.dtype:
    try:
        return np.dtype(a["dtype"])
    except KeyError:
        raise _fail(f"{where} needs a 'dtype'") from None
    except TypeError:
        raise _fail(f"{where}: unknown dtype {a['dtype']!r}") from None


def _argument(a: Any, i: int, rng: np.random.Generator) -> Any:
    """One kernel argument: an array, a numpy scalar or a LocalMemory."""
    from ..program import LocalMemory

    where = f"argument {i}" + (f" ({a['name']!r})" if isinstance(a, dict) and "name" in a else "")
    if not isinstance(a, dict):
        raise _fail(f"{where} must be an object")
    unknown = sorted(set(a) - set(_ARG_KEYS))
    if unknown:
        raise _fail(f"{where}: unknown key {unknown[0]!r} (known: {', '.join(_ARG_KEYS)})")
    if "local_nbytes" in a:
        if not _is_int(a["local_nbytes"]) or a["local_nbytes"] <= 0:
            raise _fail(f"{where}: 'local_nbytes' must be a positive integer")
        return LocalMemory(int(a["local_nbytes"]))
    dt = _dtype(a, where)
    if "value" in a:
        if {"size", "shape", "fill"} & set(a):
            raise _fail(f"{where}: a scalar ('value') takes no 'size', 'shape' or 'fill'")
        if not _is_num(a["value"]):
            raise _fail(f"{where}: 'value' must be a number")
        return dt.type(a["value"])
    if ("size" in a) == ("shape" in a):
        raise _fail(f"{where} needs exactly one of 'size', 'shape' (an array) or 'value' (a scalar)")
    shape = [a["size"]] if "size" in a else a["shape"]
    if not isinstance(shape, list) or not shape or not all(_is_int(s) and s > 0 for s in shape):
        raise _fail(f"{where}: 'size'/'shape' must be a positive integer or a list of them")
    fill = a.get("fill", "zeros")
    if fill not in FILLS:
        raise _fail(f"{where}: 'fill' must be one of {', '.join(FILLS)}, not {fill!r}")
    n = int(np.prod(shape))
    if fill == "zeros":
        arr = np.zeros(n, dt)
    elif fill == "ones":
        arr = np.ones(n, dt)
    elif fill == "arange":
        arr = np.arange(n).astype(dt)
    elif np.issubdtype(dt, np.floating):
        arr = rng.random(n).astype(dt)
    else:
        arr = rng.integers(0, 100, n).astype(dt)
    return arr.reshape(shape)


def _arg_index(ref: Any, names: list[str], key: str) -> int:
    if _is_int(ref) and 0 <= ref < len(names):
        return int(ref)
    if isinstance(ref, str) and ref in names:
        return names.index(ref)
    raise _fail(f"{key!r} must name an argument or be its index, not {ref!r}")


def _reference(ref: Any, args: list[Any], names: list[str], folder: Path) -> list[Any]:
    """The ``answer`` list: expected contents of the checked argument, None elsewhere."""
    if not isinstance(ref, dict) or "kind" not in ref:
        raise _fail("'reference' must be an object with a 'kind' (copy, npy, expression or matmul)")
    answer: list[Any] = [None] * len(args)
    if ref["kind"] == "copy":
        if set(ref) != {"kind", "from", "to"}:
            raise _fail("reference kind 'copy' takes exactly 'from' and 'to'")
        src, dst = _arg_index(ref["from"], names, "from"), _arg_index(ref["to"], names, "to")
        if not isinstance(args[src], np.ndarray) or not isinstance(args[dst], np.ndarray):
            raise _fail("reference 'copy' needs array arguments on both sides")
        answer[dst] = args[src].astype(args[dst].dtype, copy=True)
    elif ref["kind"] == "npy":
        if set(ref) != {"kind", "arg", "path"}:
            raise _fail("reference kind 'npy' takes exactly 'arg' and 'path'")
        i = _arg_index(ref["arg"], names, "arg")
        try:
            answer[i] = np.load(folder / str(ref["path"]), allow_pickle=False)
        except OSError as e:
            raise _fail(f"reference file: {e}") from None
    elif ref["kind"] == "expression":
        if set(ref) != {"kind", "arg", "expression"}:
            raise _fail("reference kind 'expression' takes exactly 'arg' and 'expression'")
        i = _arg_index(ref["arg"], names, "arg")
        if not isinstance(args[i], np.ndarray):
            raise _fail("reference 'expression' needs an array argument as 'arg'")
        env = {n: a for n, a in zip(names, args) if isinstance(a, (np.ndarray, np.generic))}
        try:
            value = compile_expression(ref["expression"], list(env), what="reference expression")(env)
            answer[i] = np.broadcast_to(np.asarray(value), args[i].shape).astype(args[i].dtype)
        except (ValueError, TypeError, ArithmeticError) as e:
            raise _fail(str(e)) from None
    elif ref["kind"] == "matmul":
        if set(ref) != {"kind", "a", "b", "to"}:
            raise _fail("reference kind 'matmul' takes exactly 'a', 'b' and 'to'")
        a, b, c = (args[_arg_index(ref[k], names, k)] for k in ("a", "b", "to"))
        if not all(isinstance(x, np.ndarray) and x.ndim == 2 for x in (a, b, c)) or \
                a.shape[1] != b.shape[0] or c.shape != (a.shape[0], b.shape[1]):
            raise _fail("reference 'matmul' needs 2-D arrays a (M x K), b (K x N) and to (M x N): "
                        "give them a 'shape'")
        answer[_arg_index(ref["to"], names, "to")] = (a.astype(np.float64) @ b.astype(np.float64)).astype(c.dtype)
    else:
        raise _fail(f"unknown reference kind {ref['kind']!r} (copy, npy, expression or matmul)")
    return answer


def _metric(expr: Any, name: str, params: list[str]) -> Callable[[dict, float], float]:
    if not isinstance(expr, str):
        raise _fail(f"metric {name!r} must be an expression string")
    try:
        e = compile_expression(expr, params + ["time"], what=f"metric {name!r}")
    except ValueError as err:
        raise _fail(str(err)) from None
    return lambda config, seconds: float(e({**config, "time": seconds}))


def parse_spec(path: str | os.PathLike[str]) -> TuneSpec:
    """Read and check a spec file; SpecError on the first problem."""
    path = Path(path)
    try:
        spec = json.loads(path.read_text())
    except json.JSONDecodeError as e:
        raise _fail(f"{path} is not valid JSON ({e})") from None
    if not isinstance(spec, dict):
        raise _fail("the file must hold a JSON object")
    unknown = sorted(set(spec) - set(REQUIRED) - set(OPTIONAL))
    if unknown:
        raise _fail(f"unknown key {unknown[0]!r} (known: {', '.join(REQUIRED + OPTIONAL)})")
    missing = [k for k in REQUIRED if k not in spec]
    if missing:
        raise _fail(f"missing key {missing[0]!r}")
    folder = path.parent
    for key in ("kernel_source", "kernel_name"):
        if not isinstance(spec[key], str) or not spec[key]:
            raise _fail(f"{key!r} must be a non-empty string")
    source_path = folder / spec["kernel_source"]
    if not source_path.is_file():
        raise _fail(f"kernel_source {str(source_path)!r} is not a file")
    ps = spec["problem_size"]
    if not (_is_int(ps) or (isinstance(ps, list) and 1 <= len(ps) <= 3 and all(map(_is_int, ps)))):
        raise _fail("'problem_size' must be an integer or a list of 1 to 3 integers")
    tp = spec["tune_params"]
    if not isinstance(tp, dict) or not tp or not all(
            isinstance(v, list) and v for v in tp.values()):
        raise _fail("'tune_params' must map each parameter name to a non-empty list of values")
    params = list(tp)
    if not isinstance(spec["arguments"], list) or not spec["arguments"]:
        raise _fail("'arguments' must be a non-empty list")
    rng = np.random.default_rng(spec.get("data_seed", 0))
    args = [_argument(a, i, rng) for i, a in enumerate(spec["arguments"])]
    names = [str(a.get("name", i)) for i, a in enumerate(spec["arguments"])]
    restrictions = spec.get("restrictions", [])
    if isinstance(restrictions, str):
        restrictions = [restrictions]
    if not isinstance(restrictions, list) or not all(isinstance(r, str) for r in restrictions):
        raise _fail("'restrictions' must be a list of expression strings")
    try:
        compile_restrictions(restrictions, params)    # check now, with the spec's line of sight
    except ValueError as e:
        raise _fail(str(e)) from None
    metrics = spec.get("metrics")
    if metrics is not None and not isinstance(metrics, dict):
        raise _fail("'metrics' must map names to expression strings")
    strategy = spec.get("strategy", "brute_force")
    if strategy not in STRATEGIES:
        raise _fail(f"unknown strategy {strategy!r} (one of {', '.join(STRATEGIES)})")
    if not isinstance(spec.get("strategy_options", {}), dict):
        raise _fail("'strategy_options' must be an object")
    for key, check, what in (("max_fevals", _is_int, "an integer"), ("seed", _is_int, "an integer"),
                             ("data_seed", _is_int, "an integer"),
                             ("iterations", _is_int, "an integer"),
                             ("warmup", _is_int, "an integer"),
                             ("min_repeats", _is_int, "an integer"),
                             ("max_repeats", _is_int, "an integer"),
                             ("time_limit", _is_num, "a number"), ("min_time", _is_num, "a number"),
                             ("timeout", lambda v: _is_num(v) and v > 0, "a positive number"),
                             ("rtol", _is_num, "a number"), ("atol", _is_num, "a number"),
                             ("out", lambda v: isinstance(v, str), "a path string"),
                             ("cache", lambda v: isinstance(v, str), "a path string"),
                             ("t4", lambda v: isinstance(v, str), "a path string")):
        if key in spec and not check(spec[key]):
            raise _fail(f"{key!r} must be {what}")
    for key in ("grid_div_x", "grid_div_y", "grid_div_z", "block_size_names", "compiler_options"):
        _str_list(spec, key)
    kwargs: dict[str, Any] = {
        "source": source_path.read_text(), "kernel_name": spec["kernel_name"],
        "problem_size": ps if _is_int(ps) else tuple(ps), "args": args, "params": dict(tp),
        "restrictions": restrictions, "strategy": strategy,
    }
    if "inout" in spec:
        if not isinstance(spec["inout"], list):
            raise _fail("'inout' must be a list of argument names or indices")
        kwargs["inout"] = [_arg_index(r, names, "inout") for r in spec["inout"]]
    for key in ("grid_div_x", "grid_div_y", "grid_div_z", "block_size_names", "compiler_options",
                "strategy_options", "max_fevals", "time_limit", "timeout", "seed", "iterations", "warmup",
                "min_time", "min_repeats", "max_repeats", "rtol", "atol"):
        if key in spec:
            kwargs[key] = spec[key]
    if metrics:
        kwargs["metrics"] = {n: _metric(e, n, params) for n, e in metrics.items()}
    if "reference" in spec:
        kwargs["answer"] = _reference(spec["reference"], args, names, folder)
    for key in ("out", "cache"):
        if key in spec:
            kwargs[key] = str(folder / spec[key])
    return TuneSpec(path=path, kwargs=kwargs,
                    t4=folder / spec["t4"] if "t4" in spec else None, arg_names=names)
