"""Search-space restrictions: Python callables and Kernel Tuner's string expressions, made safe.

Kernel Tuner (KT) accepts restrictions as a callable, a string, or a list mixing both, where each
string is a Python expression over the tunable parameters, e.g. ``"block_size_x*block_size_y>=64"``,
and evaluates it with ``eval``. We accept the same strings but never ``eval`` them: each one is
parsed with :mod:`ast` and checked against a whitelist (parameter names, number/string constants,
arithmetic, comparisons, boolean logic, ``in`` over literal tuples/lists, conditional expressions
and a few pure builtins), then interpreted by walking the tree. A spec file or a copied KT script
therefore cannot run arbitrary code through a restriction.

The same evaluator serves the CLI's metric expressions (``compile_expression`` with the extra name
``time``).
"""

from __future__ import annotations

import ast
import math
import operator
from typing import Any, Callable, Iterable, Mapping, Sequence, Union

Restriction = Union[str, Callable[[dict], Any]]

# Builtins an expression may call: pure, cheap, and enough for the restrictions seen in KT examples.
_FUNCS: dict[str, Callable[..., Any]] = {
    "min": min, "max": max, "abs": abs, "int": int, "float": float, "round": round, "bool": bool,
    "log2": math.log2, "sqrt": math.sqrt, "ceil": math.ceil, "floor": math.floor,
}
_BINOPS: dict[type, Callable[[Any, Any], Any]] = {
    ast.Add: operator.add, ast.Sub: operator.sub, ast.Mult: operator.mul,
    ast.Div: operator.truediv, ast.FloorDiv: operator.floordiv, ast.Mod: operator.mod,
    ast.Pow: operator.pow, ast.BitAnd: operator.and_, ast.BitOr: operator.or_,
    ast.BitXor: operator.xor, ast.LShift: operator.lshift, ast.RShift: operator.rshift,
}
_UNOPS: dict[type, Callable[[Any], Any]] = {
    ast.UAdd: operator.pos, ast.USub: operator.neg, ast.Not: operator.not_, ast.Invert: operator.invert,
}
_CMPOPS: dict[type, Callable[[Any, Any], Any]] = {
    ast.Eq: operator.eq, ast.NotEq: operator.ne, ast.Lt: operator.lt, ast.LtE: operator.le,
    ast.Gt: operator.gt, ast.GtE: operator.ge,
    ast.In: lambda a, b: a in b, ast.NotIn: lambda a, b: a not in b,
}
# Bounds that keep one expression from eating the machine: 2**64 is the largest power any launch
# geometry needs; a shift by more than 64 bits is likewise a typo, not a restriction.
_MAX_EXPONENT = 64
_MAX_SHIFT = 64


def _check(node: ast.AST, names: frozenset[str], source: str, what: str) -> None:
    """Raise ValueError unless every node of the tree is on the whitelist."""
    def bad(construct: str) -> ValueError:
        return ValueError(f"{what} {source!r}: {construct} is not allowed (only parameter names, "
                          "numbers, strings, arithmetic, comparisons, and/or/not, 'in' over a "
                          f"literal list, 'x if c else y' and {', '.join(sorted(_FUNCS))}())")

    for sub in ast.walk(node):
        if isinstance(sub, (ast.Expression, ast.Load, ast.operator, ast.unaryop, ast.cmpop,
                            ast.boolop)):
            if isinstance(sub, ast.MatMult):
                raise bad("the @ operator")
            continue
        if isinstance(sub, ast.Constant):
            if not isinstance(sub.value, (int, float, str, bool)):
                raise bad(f"the constant {sub.value!r}")
        elif isinstance(sub, ast.Name):
            if sub.id not in names and sub.id not in _FUNCS:
                raise ValueError(f"{what} {source!r}: unknown name {sub.id!r}; the names it may use "
                                 f"are {', '.join(sorted(names)) or '(none)'}")
        elif isinstance(sub, ast.Call):
            if not (isinstance(sub.func, ast.Name) and sub.func.id in _FUNCS
                    and sub.func.id not in names):
                raise bad(f"calling {ast.unparse(sub.func)}")
            if sub.keywords:
                raise bad("keyword arguments")
        elif isinstance(sub, (ast.Tuple, ast.List)):
            if any(isinstance(e, ast.Starred) for e in sub.elts):
                raise bad("a starred expression")
        elif not isinstance(sub, (ast.BinOp, ast.UnaryOp, ast.BoolOp, ast.Compare, ast.IfExp)):
            raise bad(f"a {type(sub).__name__} expression ({ast.unparse(sub)})")
    # A function name used as a value (e.g. "min < 3") would leak the builtin; refuse it.
    called = {id(c.func) for c in ast.walk(node) if isinstance(c, ast.Call)}
    for sub in ast.walk(node):
        if isinstance(sub, ast.Name) and sub.id in _FUNCS and sub.id not in names \
                and id(sub) not in called:
            raise bad(f"the function {sub.id!r} used as a value")


def _eval(node: ast.AST, env: Mapping[str, Any]) -> Any:
    """Interpret a whitelisted tree; arithmetic errors (ZeroDivisionError...) propagate."""
    if isinstance(node, ast.Expression):
        return _eval(node.body, env)
    if isinstance(node, ast.Constant):
        return node.value
    if isinstance(node, ast.Name):
        return env[node.id]
    if isinstance(node, ast.BinOp):
        left, right = _eval(node.left, env), _eval(node.right, env)
        if isinstance(node.op, ast.Pow) and isinstance(right, (int, float)) \
                and abs(right) > _MAX_EXPONENT:
            raise ValueError(f"exponent {right} is larger than {_MAX_EXPONENT}")
        if isinstance(node.op, (ast.LShift, ast.RShift)) and isinstance(right, int) \
                and right > _MAX_SHIFT:
            raise ValueError(f"shift by {right} bits is larger than {_MAX_SHIFT}")
        return _BINOPS[type(node.op)](left, right)
    if isinstance(node, ast.UnaryOp):
        return _UNOPS[type(node.op)](_eval(node.operand, env))
    if isinstance(node, ast.BoolOp):
        # Short-circuit like Python, so "n > 0 and 64 % n == 0" never divides by zero.
        if isinstance(node.op, ast.And):
            value: Any = True
            for v in node.values:
                value = _eval(v, env)
                if not value:
                    return value
            return value
        value = False
        for v in node.values:
            value = _eval(v, env)
            if value:
                return value
        return value
    if isinstance(node, ast.Compare):
        left = _eval(node.left, env)
        for op, comp in zip(node.ops, node.comparators):
            right = _eval(comp, env)
            if not _CMPOPS[type(op)](left, right):
                return False
            left = right
        return True
    if isinstance(node, ast.IfExp):
        return _eval(node.body, env) if _eval(node.test, env) else _eval(node.orelse, env)
    if isinstance(node, (ast.Tuple, ast.List)):
        return tuple(_eval(e, env) for e in node.elts)
    if isinstance(node, ast.Call):
        assert isinstance(node.func, ast.Name)
        return _FUNCS[node.func.id](*(_eval(a, env) for a in node.args))
    raise AssertionError(f"unchecked node {type(node).__name__}")  # _check rules this out


class Expression:
    """A compiled, whitelisted expression; call it with a mapping of names to values."""

    def __init__(self, source: str, names: Iterable[str], what: str = "expression") -> None:
        self.source = source
        self.names = frozenset(names)
        try:
            tree = ast.parse(source.strip(), mode="eval")
        except SyntaxError as e:
            raise ValueError(f"{what} {source!r}: not a Python expression ({e.msg})") from None
        _check(tree, self.names, source, what)
        self._tree = tree

    def __call__(self, env: Mapping[str, Any]) -> Any:
        return _eval(self._tree, env)

    def __repr__(self) -> str:
        return f"Expression({self.source!r})"


def compile_expression(source: str, names: Iterable[str], *, what: str = "expression"
                       ) -> Expression:
    """Parse and check ``source`` once; ValueError names ``what`` and the offending construct."""
    if not isinstance(source, str):
        raise TypeError(f"{what} must be a string, not {type(source).__name__}")
    return Expression(source, names, what)


class _StringRestriction:
    """A KT-style string restriction as a cfg -> bool callable (keeps its text for messages)."""

    def __init__(self, source: str, names: Sequence[str]) -> None:
        self.expr = compile_expression(source, names, what="restriction")
        self.source = source

    def __call__(self, cfg: dict) -> bool:
        return bool(self.expr(cfg))

    def __repr__(self) -> str:
        return f"<restriction {self.source!r}>"


def compile_restrictions(restrictions: Restriction | Iterable[Restriction] | None,
                         param_names: Iterable[str]) -> list[Callable[[dict], bool]]:
    """Turn restrictions into a list of cfg -> bool callables (a config is allowed when all pass).

    ``restrictions`` is None, one callable or string, or an iterable mixing them (KT accepts all
    three shapes). Strings are checked now: a disallowed construct or a name that is not a
    parameter is a ValueError naming the restriction. Callables are used as given and called with
    the config dict. Errors raised while evaluating (ZeroDivisionError...) reach the caller, which
    marks the config invalid.
    """
    names = list(param_names)
    if restrictions is None:
        return []
    if isinstance(restrictions, str) or callable(restrictions):
        restrictions = [restrictions]
    out: list[Callable[[dict], bool]] = []
    for i, r in enumerate(restrictions):
        if isinstance(r, str):
            out.append(_StringRestriction(r, names))
        elif callable(r):
            out.append(r)
        else:
            raise TypeError(f"restriction {i} is a {type(r).__name__}: expected a string "
                            "expression or a callable taking the config dict")
    return out


def allowed(cfg: dict, restrictions: Sequence[Callable[[dict], bool]]) -> bool:
    """True when every restriction passes (errors propagate: the caller decides what they mean)."""
    return all(r(cfg) for r in restrictions)
