"""String restrictions evaluated over a whole space at once, with NumPy.

A space of up to searchspace.EXACT_LIMIT configurations is checked against its restrictions when
made. The tree-walking evaluator (tuner.restrictions) costs some microseconds a node, which for
Kernel Tuner's GEMM space (82,944 configurations, eight restrictions) is seconds; here each
restriction's tree is evaluated once, over arrays holding every configuration's values.

The answer must be the evaluator's, configuration by configuration, so this evaluates only what
it can evaluate exactly, and marks the rest for the evaluator:
* numbers only (a string, a tuple outside ``in``, a parameter with non-numeric values, a value
  past 2**52, a round to digits or a bit operation: the whole space goes to the evaluator);
* Python's short-circuits (``and``, ``or``, chained comparisons, ``x if c else y``) are kept:
  a part that would not have been evaluated for a configuration cannot make it fail;
* where the evaluator would raise for a configuration (a division or modulo by zero, log2 or
  sqrt out of their domain), that configuration is marked unsure and left to the evaluator;
* restrictions apply in order and one that rules a configuration out ends its check, as
  ``all()`` does.
"""

from __future__ import annotations

import ast
from typing import Any, Sequence

import numpy as np

_EXACT = 2.0 ** 52           # beyond this, int64 and float64 arithmetic may differ from Python's


class NotVectorizable(Exception):
    """The expression (or a value) needs the evaluator."""


def _truthy(v: np.ndarray) -> np.ndarray:
    return np.asarray(v) != 0


def _check(v: Any) -> Any:
    arr = np.asarray(v)
    if arr.dtype.kind not in "biuf":
        raise NotVectorizable()
    if arr.size and arr.dtype.kind in "iuf":
        with np.errstate(invalid="ignore"):
            big = np.nanmax(np.abs(arr[np.isfinite(arr)])) if arr.dtype.kind == "f" and np.isfinite(arr).any() \
                else (np.abs(arr).max() if arr.dtype.kind != "f" else 0.0)
        if big > _EXACT:
            raise NotVectorizable()
    return v


class _Vector:
    """One evaluation: ``env`` maps names to arrays of ``n`` values; ``unsure`` collects the
    configurations the evaluator must decide."""

    def __init__(self, env: dict[str, np.ndarray], n: int) -> None:
        self.env = env
        self.n = n

    def eval(self, node: ast.AST, active: np.ndarray) -> tuple[Any, np.ndarray]:
        """(values, unsure) of ``node`` for the configurations where ``active``."""
        none = np.zeros(self.n, dtype=bool)
        if isinstance(node, ast.Expression):
            return self.eval(node.body, active)
        if isinstance(node, ast.Constant):
            if isinstance(node.value, bool) or not isinstance(node.value, (int, float)):
                if isinstance(node.value, bool):
                    return int(node.value), none
                raise NotVectorizable()
            return _check(node.value), none
        if isinstance(node, ast.Name):
            return self.env[node.id], none
        if isinstance(node, ast.BinOp):
            return self._binop(node, active)
        if isinstance(node, ast.UnaryOp):
            v, u = self.eval(node.operand, active)
            if isinstance(node.op, ast.USub):
                return _check(-np.asarray(v)), u
            if isinstance(node.op, ast.UAdd):
                return v, u
            if isinstance(node.op, ast.Not):
                return (~_truthy(v)).astype(np.int64), u
            raise NotVectorizable()
        if isinstance(node, ast.BoolOp):
            return self._boolop(node, active)
        if isinstance(node, ast.Compare):
            return self._compare(node, active)
        if isinstance(node, ast.IfExp):
            t, ut = self.eval(node.test, active)
            test = _truthy(np.broadcast_to(t, (self.n,)))
            b, ub = self.eval(node.body, active & test)
            o, uo = self.eval(node.orelse, active & ~test)
            return np.where(test, b, o), ut | (ub & test) | (uo & ~test)
        if isinstance(node, ast.Call):
            return self._call(node, active)
        raise NotVectorizable()

    def _binop(self, node: ast.BinOp, active: np.ndarray) -> tuple[Any, np.ndarray]:
        a, ua = self.eval(node.left, active)
        b, ub = self.eval(node.right, active)
        unsure = ua | ub
        a, b = np.asarray(a), np.asarray(b)
        with np.errstate(all="ignore"):
            if isinstance(node.op, (ast.Div, ast.FloorDiv, ast.Mod)):
                zero = np.broadcast_to(b == 0, (self.n,))
                unsure = unsure | (zero & active)
                safe = np.where(b == 0, 1, b)
                op = {ast.Div: np.true_divide, ast.FloorDiv: np.floor_divide, ast.Mod: np.mod}
                out = op[type(node.op)](a, safe)
                if isinstance(node.op, ast.Div):
                    out = out.astype(float)
            elif isinstance(node.op, ast.Add):
                out = a + b
            elif isinstance(node.op, ast.Sub):
                out = a - b
            elif isinstance(node.op, ast.Mult):
                out = a * b
            elif isinstance(node.op, ast.Pow):
                if b.dtype.kind != "f" and np.any(b < 0):
                    raise NotVectorizable()      # Python gives a float, NumPy refuses
                if np.any(np.abs(b) > 64):
                    raise NotVectorizable()
                out = np.power(a.astype(float) if a.dtype.kind == "f" or b.dtype.kind == "f" else a, b)
            else:
                raise NotVectorizable()            # bit operations: the evaluator's
        return _check(out), unsure

    def _boolop(self, node: ast.BoolOp, active: np.ndarray) -> tuple[Any, np.ndarray]:
        value, unsure = self.eval(node.values[0], active)
        value = np.broadcast_to(value, (self.n,))
        going = active & (_truthy(value) if isinstance(node.op, ast.And) else ~_truthy(value))
        for sub in node.values[1:]:
            v, u = self.eval(sub, going)
            v = np.broadcast_to(v, (self.n,))
            value = np.where(going, v, value)
            unsure = unsure | (u & going)
            going = going & (_truthy(v) if isinstance(node.op, ast.And) else ~_truthy(v))
        return value, unsure

    def _compare(self, node: ast.Compare, active: np.ndarray) -> tuple[Any, np.ndarray]:
        left, unsure = self.eval(node.left, active)
        result = np.ones(self.n, dtype=bool)
        going = active.copy()
        for op, comp in zip(node.ops, node.comparators):
            if isinstance(op, (ast.In, ast.NotIn)):
                if not isinstance(comp, (ast.Tuple, ast.List)):
                    raise NotVectorizable()
                items = []
                for e in comp.elts:
                    v, _ = self.eval(e, going)
                    if np.ndim(v) != 0:
                        raise NotVectorizable()
                    items.append(float(v))
                hit = np.isin(np.broadcast_to(left, (self.n,)), items)
                ok = hit if isinstance(op, ast.In) else ~hit
                right = None
            else:
                right, u = self.eval(comp, going)
                unsure = unsure | (u & going)
                cmp = {ast.Eq: np.equal, ast.NotEq: np.not_equal, ast.Lt: np.less,
                       ast.LtE: np.less_equal, ast.Gt: np.greater, ast.GtE: np.greater_equal}
                ok = np.broadcast_to(cmp[type(op)](left, right), (self.n,))
            result = result & (ok | ~going)
            going = going & ok
            left = right
        return result.astype(np.int64), unsure

    def _call(self, node: ast.Call, active: np.ndarray) -> tuple[Any, np.ndarray]:
        name = node.func.id if isinstance(node.func, ast.Name) else ""
        if node.keywords:
            raise NotVectorizable()
        parts = [self.eval(a, active) for a in node.args]
        args = [np.asarray(p[0]) for p in parts]
        unsure = np.zeros(self.n, dtype=bool)
        for _, u in parts:
            unsure |= u
        with np.errstate(all="ignore"):
            if name in ("min", "max") and len(args) >= 2:
                f = np.minimum if name == "min" else np.maximum
                out = args[0]
                for a in args[1:]:
                    out = f(out, a)
            elif name == "abs" and len(args) == 1:
                out = np.abs(args[0])
            elif name == "bool" and len(args) == 1:
                out = _truthy(args[0]).astype(np.int64)
            elif name == "float" and len(args) == 1:
                out = args[0].astype(float)
            elif name == "int" and len(args) == 1:
                out = np.trunc(args[0]).astype(np.int64) if args[0].dtype.kind == "f" else args[0]
            elif name == "round" and len(args) == 1:
                out = np.round(args[0]).astype(np.int64) if args[0].dtype.kind == "f" else args[0]
            elif name in ("ceil", "floor") and len(args) == 1:
                out = (np.ceil if name == "ceil" else np.floor)(args[0]).astype(np.int64)
            elif name in ("log2", "sqrt") and len(args) == 1:
                bad = args[0] <= 0 if name == "log2" else args[0] < 0
                unsure = unsure | (np.broadcast_to(bad, (self.n,)) & active)
                safe = np.where(bad, 1, args[0])
                out = (np.log2 if name == "log2" else np.sqrt)(safe.astype(float))
            else:
                raise NotVectorizable()
        return _check(out), unsure


def verdicts(values: Sequence[Sequence[Any]], names: Sequence[str], trees: Sequence[ast.AST],
             ids: np.ndarray, strides: Sequence[int]) -> tuple[np.ndarray, np.ndarray] | None:
    """For the configurations ``ids`` of the product of ``values`` (parameter ``k``'s digit is
    ``ids // strides[k] % len(values[k])``), (allowed, unsure): unsure ones need the evaluator.
    None where the restrictions cannot be evaluated here at all."""
    n = len(ids)
    env: dict[str, np.ndarray] = {}
    try:
        for name, vals, stride in zip(names, values, strides):
            col = np.asarray([int(v) if isinstance(v, (bool, np.bool_)) else v for v in vals])
            if col.dtype.kind not in "iuf":
                continue                              # used by no vectorised restriction, or refused
            _check(col)
            env[name] = col[(ids // stride) % len(vals)]
        allowed = np.ones(n, dtype=bool)
        unsure = np.zeros(n, dtype=bool)
        for tree in trees:
            used = {s.id for s in ast.walk(tree) if isinstance(s, ast.Name)}
            if not used <= set(env) | {"min", "max", "abs", "int", "float", "round", "bool",
                                        "log2", "sqrt", "ceil", "floor"}:
                return None
            live = allowed & ~unsure
            v, u = _Vector(env, n).eval(tree, live)
            ok = _truthy(np.broadcast_to(v, (n,)))
            unsure |= u & live
            allowed &= ok | unsure
        return allowed, unsure
    except (NotVectorizable, KeyError, TypeError, ValueError, OverflowError):
        return None
