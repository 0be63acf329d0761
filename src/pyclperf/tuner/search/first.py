"""Kernel Tuner's ``x0``: a configuration measured before the strategy's own choices."""

from __future__ import annotations

from typing import Any, Sequence


class First:
    """``inner``, but asking for ``x0`` first (a dict, or the values in parameter order). The
    strategy is told its result like any other, so a model learns from it."""

    def __init__(self, inner: Any, x0: dict | Sequence[Any]) -> None:
        self.inner = inner
        names = inner.space.names
        if not isinstance(x0, dict):
            values = list(x0)
            if len(values) != len(names):
                raise ValueError(f"x0 has {len(values)} values for {len(names)} parameters "
                                 f"({', '.join(names)})")
            x0 = dict(zip(names, values))
        i = inner.space.index(x0)
        if i is None or not inner.space.allows_id(i, report=False):
            raise ValueError(f"x0 {x0} is not one of the allowed configurations")
        self._first: int | None = i

    def ask(self) -> dict | None:
        if self._first is not None:
            i, self._first = self._first, None
            if i not in self.inner.seen:
                self.inner.seen.add(i)
                return self.inner.space.config(i)
        return self.inner.ask()

    def tell(self, config: dict, objective: Any) -> None:
        self.inner.tell(config, objective)

    def __getattr__(self, name: str) -> Any:
        return getattr(self.inner, name)
