"""What a search minimises: the time, another figure of the rows, or several at once.

An objective is a row's field: "time" is the median time (``time_ms``), any other name a
metric or a recorded figure (``GFLOP/s``, ``energy``). Strategies minimise, so a figure where
higher is better is negated for them. With several objectives a strategy that takes them
(nsga2, nsga3, genetic_algorithm, tpe, auto) minimises all at once, and the result is their
Pareto front: the rows no other row beats on every objective at once (``pareto`` True), in
``meta["pareto"]``.
"""

from __future__ import annotations

from typing import Any, Mapping, Sequence


class Objectives:
    """The objective names and, for each, whether higher is better (Kernel Tuner's default,
    lower, where not said)."""

    def __init__(self, objective: str | Sequence[str] = "time",
                 higher_is_better: bool | Sequence[bool] | None = None) -> None:
        names = [objective] if isinstance(objective, str) else list(objective)
        if not names or not all(isinstance(n, str) and n for n in names):
            raise ValueError(f"objective must be a field name or a list of them, not {objective!r}")
        if len(set(names)) != len(names):
            raise ValueError(f"objective names {names} repeat one")
        if higher_is_better is None:
            higher = [False] * len(names)
        elif isinstance(higher_is_better, bool):
            higher = [higher_is_better] * len(names)
        else:
            higher = [bool(h) for h in higher_is_better]
            if len(higher) != len(names):
                raise ValueError(f"{len(higher)} higher_is_better flags for {len(names)} objectives")
        self.names = names
        self.higher = higher

    def __len__(self) -> int:
        return len(self.names)

    @staticmethod
    def field(name: str) -> str:
        return "time_ms" if name == "time" else name

    def raw(self, row: Mapping[str, Any]) -> tuple[float, ...] | None:
        """The objectives' values as the row has them, None when one is missing."""
        out = []
        for n in self.names:
            v = row.get(self.field(n))
            if isinstance(v, bool) or not isinstance(v, (int, float)) or v != v:
                return None
            out.append(float(v))
        return tuple(out)

    def value(self, row: Mapping[str, Any]) -> float | tuple[float, ...] | None:
        """What the strategy minimises for a row that produced figures (one number, or a
        tuple for several objectives)."""
        raw = self.raw(row)
        if raw is None:
            return None
        signed = tuple(-v if h else v for v, h in zip(raw, self.higher))
        return signed[0] if len(signed) == 1 else signed

    def mark_front(self, rows: Sequence[dict[str, Any]], statuses: Sequence[str]) -> list[str]:
        """Set ``pareto`` on every row of ``statuses`` (True on the front) and return the front's
        config keys, best first by the first objective."""
        scored = [(self.value(r), r) for r in rows if r.get("status") in statuses]
        scored = [(v, r) for v, r in scored if v is not None]
        front = []
        for v, r in scored:
            vv = v if isinstance(v, tuple) else (v,)
            dominated = False
            for w, _ in scored:
                ww = w if isinstance(w, tuple) else (w,)
                if all(a <= b for a, b in zip(ww, vv)) and any(a < b for a, b in zip(ww, vv)):
                    dominated = True
                    break
            r["pareto"] = not dominated
            if not dominated:
                front.append((vv, r))
        front.sort(key=lambda p: p[0])
        return [str(r.get("config")) for _, r in front]
