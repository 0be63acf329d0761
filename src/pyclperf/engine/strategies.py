"""Interim search strategies (brute force only) until the full strategies module lands."""

from __future__ import annotations

import time
from typing import Any, Mapping

from .space import Config, config_key


class Budget:
    def __init__(self, max_fevals: int | None = None, time_limit: float | None = None) -> None:
        self.max_fevals, self.time_limit, self.used = max_fevals, time_limit, 0

    def count(self) -> None:
        self.used += 1

    def cap(self, n: int) -> int:
        return n if self.max_fevals is None else min(n, int(self.max_fevals))

    def spent(self, started: float) -> bool:
        if self.max_fevals is not None and self.used >= self.max_fevals:
            return True
        return self.time_limit is not None and time.perf_counter() - started >= self.time_limit


class BruteForce:
    def __init__(self, configs: list[Config]) -> None:
        self.configs, self.seen, self.pos = configs, set(), 0

    def ask(self) -> Config | None:
        while self.pos < len(self.configs):
            c = self.configs[self.pos]
            self.pos += 1
            if config_key(c) not in self.seen:
                return c
        return None

    def tell(self, config: Config, objective: float | None) -> None:
        self.seen.add(config_key(config))


def make_strategy(name: str, configs: list[Config], *, seed: int | None = None,
                  options: Mapping[str, Any] | None = None) -> BruteForce:
    if name != "brute_force":
        raise ValueError(f"unknown strategy {name!r}")
    return BruteForce(configs)
