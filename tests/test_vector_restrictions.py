"""Restrictions evaluated over a whole space at once (tuner.vector_restrictions) give, for every
configuration, exactly the verdict of the one-at-a-time evaluator: allowed, ruled out, or why
it raised."""

from __future__ import annotations

import random

import numpy as np
import pytest

from pyclperf.tuner.restrictions import compile_restrictions
from pyclperf.tuner.searchspace import Space

PARAMS = {"a": [0, 1, 2, 3, 4, 8], "b": [1, 2, 4, 16, 32], "c": [-2, 0, 3], "f": [0.5, 1.0, 2.5],
          "t": [True, False]}


def reference(params: dict, restrictions: list) -> tuple[list[int], list[tuple[dict, str]]]:
    """The one-at-a-time walk: the allowed ids and the configurations whose restriction raised."""
    space = Space(params, compile_restrictions(restrictions, list(params)), exact_limit=0)
    ids, failed = [], []
    for i in range(space.size):
        config = space.config(i)
        why = space.verdict(config)
        if why is None:
            ids.append(i)
        elif why:
            failed.append((config, why))
    return ids, failed


CASES = [
    ["a * b <= 32", "b % (a + 1) == 0"],
    ["b % a == 0"],                                       # a == 0 raises: those are invalid
    ["a > 0 and b % a == 0"],                             # ... unless short-circuited
    ["a == 0 or 64 % a == 0"],
    ["not (a == 8 and b == 32)", "a < 3 < b"],
    ["(a if c > 0 else b) // 2 >= 1"],
    ["b / a > 2 if a else True"],
    ["log2(b) == int(log2(b))", "sqrt(a) < 2"],
    ["log2(a) >= 1"],                                     # log2(0) raises
    ["min(a, b) * max(c, 1) > 1", "abs(c) <= a"],
    ["a in (1, 2, 8)", "b not in [2, 16]"],
    ["f * a >= 1.5", "round(f) == 2 or t"],
    ["t and a > 1", "not t or b > 2"],
    ["a ** 2 <= b", "ceil(f) + floor(f) > 1"],
    ["(a and b) + 1 > 2"],                                # and/or used as values
    ["(c or 5) > 2", "bool(c) == (c != 0)"],
]


@pytest.mark.parametrize("restrictions", CASES, ids=[" ; ".join(c) for c in CASES])
def test_the_fast_walk_agrees_with_the_evaluator(restrictions: list) -> None:
    fast = Space(PARAMS, compile_restrictions(restrictions, list(PARAMS)))
    ids, failed = reference(PARAMS, restrictions)
    assert list(fast.allowed_ids) == ids
    assert fast.failed == failed


def test_random_expressions_agree() -> None:
    """Random arithmetic and logic over the parameters, a few hundred of them."""
    rng = random.Random(12)
    atoms = ["a", "b", "c", "f", "1", "2", "3", "0"]
    ops = ["+", "-", "*", "//", "%", "/"]
    cmps = ["<", "<=", "==", "!=", ">", ">="]

    def term(depth: int) -> str:
        if depth == 0 or rng.random() < 0.3:
            return rng.choice(atoms)
        return f"({term(depth - 1)} {rng.choice(ops)} {term(depth - 1)})"

    for _ in range(300):
        expr = f"{term(2)} {rng.choice(cmps)} {term(2)}"
        if rng.random() < 0.4:
            expr = f"{expr} {rng.choice(['and', 'or'])} {term(1)} {rng.choice(cmps)} {term(1)}"
        restrictions = [expr]
        fast = Space(PARAMS, compile_restrictions(restrictions, list(PARAMS)))
        ids, failed = reference(PARAMS, restrictions)
        assert list(fast.allowed_ids) == ids, expr
        assert [c for c, _ in fast.failed] == [c for c, _ in failed], expr


def test_what_it_cannot_do_falls_back_to_the_evaluator() -> None:
    params = {"x": [1, 2, 3], "name": ["u", "v"]}
    for restrictions in (["name == 'u' or x > 1"], ["x << 2 > 4"], ["round(x / 2, 1) > 0.6"],
                         [lambda c: c["x"] != 2, "x > 1"]):
        fast = Space(params, compile_restrictions(restrictions, list(params)))
        ids, failed = reference(params, restrictions)
        assert list(fast.allowed_ids) == ids and fast.failed == failed


def test_values_too_large_for_exact_arithmetic_fall_back() -> None:
    params = {"x": [1, 2**40, 2**60], "y": [1, 3]}
    restrictions = ["x * x % 7 == y"]
    fast = Space(params, compile_restrictions(restrictions, list(params)))
    ids, _ = reference(params, restrictions)
    assert list(fast.allowed_ids) == ids


def test_a_large_space_is_walked_in_well_under_a_second() -> None:
    """Kernel Tuner's GEMM restrictions over its 82,944-configuration space (the benchmark
    hub's gemm spaces): the count agrees with a walk of a sample, and np.int64 configurations
    index it like Python ints."""
    params = {"MWG": [16, 32, 64, 128], "NWG": [16, 32, 64, 128], "KWG": [32],
              "MDIMC": [8, 16, 32], "NDIMC": [8, 16, 32], "MDIMA": [8, 16, 32],
              "NDIMB": [8, 16, 32], "KWI": [2], "VWM": [1, 2, 4, 8], "VWN": [1, 2, 4, 8],
              "STRM": [0], "STRN": [0], "SA": [0, 1], "SB": [0, 1], "PRECISION": [32]}
    restrictions = ["KWG % KWI == 0", "MWG % (MDIMC * VWM) == 0", "NWG % (NDIMC * VWN) == 0",
                    "MWG % (MDIMA * VWM) == 0", "NWG % (NDIMB * VWN) == 0",
                    "KWG % ((MDIMC * NDIMC)/MDIMA) == 0", "KWG % ((MDIMC * NDIMC)/NDIMB) == 0",
                    "not (MWG == 128 and NWG == 128 and MDIMC == 8 and NDIMC == 8)"]
    checks = compile_restrictions(restrictions, list(params))
    space = Space(params, checks)
    assert space.allowed_count == 17472
    allowed = set(space.allowed_ids)
    for i in random.Random(1).sample(range(space.size), 2000):
        assert (i in allowed) == (space.verdict(space.config(i)) is None)
    cfg = {k: np.int64(v) if isinstance(v, int) else v for k, v in space.config(space.allowed_ids[5]).items()}
    assert space.index(cfg) == space.allowed_ids[5]
