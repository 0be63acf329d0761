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
# geometry needs; a shift by more than 64 bits is likewise a typo, not a restriction. Every
# intermediate result is bounded too, checked before an operation that could exceed the bound is
# computed (a power, a product, a shift, a repetition), so nesting cannot get round the first two:
# integers to MAX_INT_BITS bits, strings and tuples to MAX_ITEMS items.
_MAX_EXPONENT = 64
_MAX_SHIFT = 64
MAX_INT_BITS = 4096
MAX_ITEMS = 4096
# round(x, n) computes 10**-n for an integer x and negative n: bounded like any other integer.
_MAX_ROUND_DIGITS = int(MAX_INT_BITS * math.log10(2))


class TooLarge(ValueError):
    """An expression's intermediate result would exceed the evaluator's bounds."""


def _is_int(v: Any) -> bool:
    return isinstance(v, int)                     # bool too: True * 4096 is an int


def _bounded(value: Any) -> Any:
    """``value`` itself, or TooLarge when it is bigger than any intermediate may be."""
    if _is_int(value) and value.bit_length() > MAX_INT_BITS:
        raise TooLarge(f"an intermediate integer of {value.bit_length()} bits exceeds the "
                       f"limit of {MAX_INT_BITS} bits")
    if isinstance(value, (str, tuple)) and len(value) > MAX_ITEMS:
        raise TooLarge(f"an intermediate {type(value).__name__} of {len(value)} items exceeds "
                       f"the limit of {MAX_ITEMS}")
    return value


def _check_binop(op: ast.operator, left: Any, right: Any) -> None:
    """Refuse, before computing it, an operation whose result would exceed the bounds."""
    if isinstance(op, ast.Pow) and isinstance(right, (int, float)):
        if abs(right) > _MAX_EXPONENT:
            raise TooLarge(f"exponent {right} is larger than {_MAX_EXPONENT}")
        if _is_int(left) and _is_int(right) and right > 0 and abs(left) > 1 \
                and right * math.log2(abs(left)) > MAX_INT_BITS:
            raise TooLarge(f"a {abs(left).bit_length()}-bit integer to the power {right} would "
                           f"have over {int(right * math.log2(abs(left)))} bits, beyond the "
                           f"limit of {MAX_INT_BITS} bits")
    elif isinstance(op, (ast.LShift, ast.RShift)) and _is_int(right):
        if right > _MAX_SHIFT:
            raise TooLarge(f"shift by {right} bits is larger than {_MAX_SHIFT}")
        if isinstance(op, ast.LShift) and _is_int(left) and right > 0 \
                and left.bit_length() + right > MAX_INT_BITS:
            raise TooLarge(f"a {left.bit_length()}-bit integer shifted left by {right} exceeds "
                           f"the limit of {MAX_INT_BITS} bits")
    elif isinstance(op, ast.Mult):
        if _is_int(left) and _is_int(right):
            if left.bit_length() + right.bit_length() > MAX_INT_BITS + 1:
                raise TooLarge(f"a product of {left.bit_length()}- and {right.bit_length()}-bit "
                               f"integers exceeds the limit of {MAX_INT_BITS} bits")
            return
        seq, times = (left, right) if _is_int(right) else (right, left)
        if isinstance(seq, (str, tuple)) and _is_int(times) \
                and len(seq) * max(times, 0) > MAX_ITEMS:
            raise TooLarge(f"repeating a {type(seq).__name__} of {len(seq)} items {times} times "
                           f"exceeds the limit of {MAX_ITEMS} items")
    elif isinstance(op, ast.Mod) and isinstance(left, str):
        # printf-style formatting: "%0999999999d" % 1 would build a gigabyte string.
        raise TooLarge("string formatting with % is not allowed in an expression")


def _check_call(name: str, args: Sequence[Any]) -> None:
    if name == "round" and len(args) == 2 and _is_int(args[1]) \
            and abs(args[1]) > _MAX_ROUND_DIGITS:
        raise TooLarge(f"round() to {args[1]} digits exceeds the limit of "
                       f"{_MAX_ROUND_DIGITS} digits")


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
        _check_binop(node.op, left, right)
        return _bounded(_BINOPS[type(node.op)](left, right))
    if isinstance(node, ast.UnaryOp):
        return _bounded(_UNOPS[type(node.op)](_eval(node.operand, env)))
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
        args = [_eval(a, env) for a in node.args]
        _check_call(node.func.id, args)
        return _bounded(_FUNCS[node.func.id](*args))
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
        self._what = what
        if self._fold(tree.body) and not isinstance(tree.body, ast.Constant):
            self._try(tree.body)

    def _fold(self, node: ast.AST) -> bool:
        """Evaluate each largest part that uses no parameter now, so a part that exceeds the
        bounds whatever the configuration (2**64**64...) is refused when compiled, not once per
        configuration. Other errors (1/0 in a branch never taken) are left to evaluation.
        Returns whether ``node`` is constant."""
        if isinstance(node, ast.Name):
            return False
        func = node.func if isinstance(node, ast.Call) else None   # a builtin's name
        children = [c for c in ast.iter_child_nodes(node)
                    if isinstance(c, ast.expr) and c is not func]
        constant = [self._fold(c) for c in children]
        if all(constant):
            return True
        for c, const in zip(children, constant):
            if const and not isinstance(c, ast.Constant):
                self._try(c)
        return False

    def _try(self, node: ast.AST) -> None:
        try:
            _eval(node, {})
        except TooLarge as exc:
            raise self._too_large(exc) from None
        except Exception:  # noqa: BLE001 - reported when evaluated, as before
            pass

    def _too_large(self, exc: TooLarge) -> TooLarge:
        return TooLarge(f"{self._what} {self.source!r}: {exc}")

    def __call__(self, env: Mapping[str, Any]) -> Any:
        try:
            return _eval(self._tree, env)
        except TooLarge as exc:
            raise self._too_large(exc) from None

    @property
    def tree(self) -> ast.Expression:
        """The checked syntax tree (tuner.vector_restrictions evaluates it over arrays)."""
        return self._tree

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
