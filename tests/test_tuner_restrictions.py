"""tuner.restrictions: KT-style string restrictions evaluated safely, mixed with callables."""

from __future__ import annotations

import itertools

import pytest

from pyclperf.tuner.restrictions import allowed, compile_expression, compile_restrictions

NAMES = ["block_size_x", "block_size_y", "tile", "n", "vec"]


def cfg(**kw: object) -> dict:
    base = {"block_size_x": 32, "block_size_y": 4, "tile": 2, "n": 8, "vec": "float4"}
    base.update(kw)
    return base


@pytest.mark.parametrize("expr, config, expected", [
    ("block_size_x*block_size_y>=64", cfg(), True),
    ("block_size_x*block_size_y>=256", cfg(), False),
    ("tile % 2 == 0 and n > 4", cfg(), True),
    ("tile % 2 == 0 and n > 4", cfg(tile=3), False),
    ("16 <= block_size_x <= 64", cfg(), True),        # chained comparison
    ("16 <= block_size_x <= 64", cfg(block_size_x=128), False),
    ("tile in (1, 2, 4)", cfg(), True),
    ("tile not in [1, 2, 4]", cfg(), False),
    ("vec == 'float4' or tile > 8", cfg(), True),
    ("not tile > 1", cfg(), False),
    ("-tile < 0", cfg(), True),
    ("max(block_size_x, n) // min(tile, n) == 16", cfg(), True),
    ("abs(tile - n) == 6", cfg(), True),
    ("int(block_size_x / 3) == 10", cfg(), True),
    ("(block_size_x & (block_size_x - 1)) == 0", cfg(), True),   # power of two
    ("(block_size_x & (block_size_x - 1)) == 0", cfg(block_size_x=48), False),
    ("2**tile == 4", cfg(), True),
    ("tile if n > 4 else 0", cfg(), True),
])
def test_string_restrictions_evaluate_like_python(expr: str, config: dict, expected: bool) -> None:
    (r,) = compile_restrictions([expr], NAMES)
    assert r(config) is expected


def test_single_string_single_callable_and_none_are_accepted() -> None:
    assert len(compile_restrictions("tile > 1", NAMES)) == 1
    assert len(compile_restrictions(lambda c: c["tile"] > 1, NAMES)) == 1
    assert compile_restrictions(None, NAMES) == []
    assert compile_restrictions((), NAMES) == []


def test_mixed_callables_and_strings_prune_a_space() -> None:
    rs = compile_restrictions(["block_size_x * block_size_y <= 64",
                               lambda c: c["block_size_x"] >= c["block_size_y"]],
                              ["block_size_x", "block_size_y"])
    space = [dict(block_size_x=x, block_size_y=y)
             for x, y in itertools.product([1, 2, 4, 8, 16, 32], [1, 2, 4, 8])]
    kept = [(c["block_size_x"], c["block_size_y"]) for c in space if allowed(c, rs)]
    expected = [(x, y) for x, y in itertools.product([1, 2, 4, 8, 16, 32], [1, 2, 4, 8])
                if x * y <= 64 and x >= y]
    assert kept == expected and len(kept) < len(space)


@pytest.mark.parametrize("expr, construct", [
    ("__import__('os').system('true')", "calling __import__"),
    ("tile.__class__", "Attribute"),
    ("[c for c in (1, 2)]", "ListComp"),
    ("(lambda: 1)()", "calling"),
    ("open('x')", "calling open"),
    ("tile[0]", "Subscript"),
    ("min", "used as a value"),
    ("None == tile", "constant None"),
    ("x := 3", "not a Python expression"),
    ("tile > ", "not a Python expression"),
    ("max(tile, key=abs)", "keyword"),
])
def test_unsafe_constructs_are_refused_at_compile_time(expr: str, construct: str) -> None:
    with pytest.raises(ValueError) as e:
        compile_restrictions([expr], NAMES)
    assert construct in str(e.value)
    assert repr(expr) in str(e.value)                 # names the restriction


def test_unknown_name_lists_the_parameters() -> None:
    with pytest.raises(ValueError, match=r"unknown name 'blocksize_x'.*block_size_x, block_size_y"):
        compile_restrictions(["blocksize_x > 4"], NAMES)


def test_runtime_errors_reach_the_caller() -> None:
    (r,) = compile_restrictions(["64 % tile == 0"], NAMES)
    with pytest.raises(ZeroDivisionError):
        r(cfg(tile=0))
    # Short-circuit: the guard keeps the division from happening.
    (g,) = compile_restrictions(["tile > 0 and 64 % tile == 0"], NAMES)
    assert g(cfg(tile=0)) is False


def test_huge_powers_are_refused() -> None:
    (r,) = compile_restrictions(["10 ** (n * 100) > 1"], NAMES)
    with pytest.raises(ValueError, match="exponent"):
        r(cfg())


BLOW_UPS = [
    ("(x << 64 << 64 << 64 << 64 << 64 << 64 << 64 << 64) > 0", 2 ** 4000, "shifted left"),
    ("x * x > 0", 2 ** 3000, "product of"),
    ("(x ** 2) ** 2 > 0", 2 ** 1100, "4400 bits"),
    ("'ab' * x * x * x > 'a'", 100, "repeating a str"),
    ("(1, 2) * x * x == ()", 1000, "repeating a tuple"),
    ("'%0999999d' % x == ''", 1, "string formatting"),
    ("round(x, -5000) == 0", 7, "to -5000 digits exceeds"),
]


@pytest.mark.parametrize("expr, x, message", BLOW_UPS, ids=[b[0] for b in BLOW_UPS])
def test_every_intermediate_result_is_bounded(expr: str, x: int, message: str) -> None:
    (r,) = compile_restrictions([expr], ["x"])
    with pytest.raises(ValueError, match=message) as e:
        r({"x": x})
    assert repr(expr) in str(e.value)                 # names the restriction


def test_a_blow_up_that_uses_no_parameter_is_refused_when_compiled() -> None:
    with pytest.raises(ValueError, match=r"restriction '\(2\*\*64\)\*\*64 > x'.*4096 bits"):
        compile_restrictions(["(2**64)**64 > x"], ["x"])
    # Only bounds are checked early: other errors wait for a configuration that reaches them.
    (r,) = compile_restrictions(["x > 0 or 1 // 0 > 0"], ["x"])
    assert r({"x": 1}) is True
    # Large but bounded values are fine.
    (big,) = compile_restrictions(["(x * 2**62) ** 64 > 10**60 and 'ab' * 2048 > 'a'"], ["x"])
    assert big({"x": 3}) is True


def test_a_parameter_may_shadow_a_builtin_name() -> None:
    (r,) = compile_restrictions(["max > 3"], ["max"])
    assert r({"max": 4}) is True


def test_non_string_non_callable_is_a_type_error() -> None:
    with pytest.raises(TypeError, match="restriction 1"):
        compile_restrictions(["tile > 1", 42], NAMES)  # type: ignore[list-item]


def test_metric_expressions_use_the_same_evaluator() -> None:
    gbps = compile_expression("3*4*1048576/time/1e9", ["time"], what="metric")
    assert gbps({"time": 1e-3}) == pytest.approx(3 * 4 * 1048576 / 1e-3 / 1e9)
    with pytest.raises(ValueError, match="metric"):
        compile_expression("time.real", ["time"], what="metric")
