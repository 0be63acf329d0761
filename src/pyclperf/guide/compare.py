"""Two guide.json files side by side: every experiment's and recommendation's verdict on each
device or driver, with the ones that differ flagged (``pyclperf compare A/guide.json B/guide.json``).

An experiment or recommendation present in one file only is listed with "absent" on the other
side, and counts as a difference.
"""

from __future__ import annotations

import os
import re
from pathlib import Path
from typing import Any, Sequence

from . import record as guide_json

ABSENT = "absent"
# What a guide.json begins with (guide_json.write puts "format" first): how compare tells one
# from a results file whatever it is called.
_GUIDE_HEAD = re.compile(rb'^\s*\{\s*"format"\s*:\s*"pyclperf-guide"')


def is_guide_file(path: str | os.PathLike[str]) -> bool:
    """Whether compare should read ``path`` as a guide.json: its name ends in .json, or it opens
    the way guide.json does. A file that cannot be opened is left to the results reader's
    error."""
    p = Path(path)
    if p.suffix.lower() == ".json":
        return True
    try:
        with open(p, "rb") as f:
            head = f.read(256)
    except OSError:
        return False
    return bool(_GUIDE_HEAD.match(head))


def _describe(doc: dict[str, Any]) -> str:
    dev = doc["device"]
    parts = [dev.get("name") or "unknown device", f"driver {dev.get('driver') or 'unknown'}",
             f"pyclperf {doc['pyclperf']}", doc["created"]]
    return ", ".join(parts) + (", quick" if doc["quick"] else "")


def _side(items: list[dict[str, Any]], key: str) -> dict[str, dict[str, Any]]:
    return {str(item[key]): item for item in items}


def _rows(kind: str, key: str, a: list[dict[str, Any]], b: list[dict[str, Any]],
          detail: str) -> list[dict[str, Any]]:
    side_a, side_b = _side(a, key), _side(b, key)
    names = list(side_a) + [n for n in side_b if n not in side_a]
    rows = []
    for name in names:
        ra, rb = side_a.get(name), side_b.get(name)
        va = str(ra["verdict"]) if ra else ABSENT
        vb = str(rb["verdict"]) if rb else ABSENT
        rows.append({"kind": kind, "id": name, "verdict_a": va, "verdict_b": vb,
                     "differs": va != vb,
                     "detail_a": ra.get(detail) if ra else None,
                     "detail_b": rb.get(detail) if rb else None})
    return rows


def compare_guides(a: dict[str, Any], b: dict[str, Any]) -> dict[str, Any]:
    """The side-by-side comparison of two checked guide documents: "a" and "b" describe the
    runs, "rows" holds one entry per experiment and per recommendation (kind, id, verdict_a,
    verdict_b, differs, and each side's figure or effect), "differing" counts the flagged rows,
    and "notes" says where the runs differ in how they were made (quick or not, version)."""
    rows = (_rows("experiment", "experiment", a["experiments"], b["experiments"], "device_ratio")
            + _rows("recommendation", "id", a["recommendations"], b["recommendations"], "effect"))
    notes = []
    if a["quick"] != b["quick"]:
        notes.append("one run is --quick and the other is not: quick figures are rough")
    if a["pyclperf"] != b["pyclperf"]:
        notes.append(f"written by pyclperf {a['pyclperf']} and {b['pyclperf']}: verdict rules may differ")
    return {"a": _describe(a), "b": _describe(b), "rows": rows,
            "differing": sum(1 for r in rows if r["differs"]), "notes": notes}


def load_pair(path_a: str | os.PathLike[str], path_b: str | os.PathLike[str]) -> dict[str, Any]:
    """Read both files (GuideFileError naming the file that fails) and compare them."""
    a, b = guide_json.read(path_a), guide_json.read(path_b)
    result = compare_guides(a, b)
    result.update(path_a=str(path_a), path_b=str(path_b))
    return result


def _cell(text: str, width: int) -> str:
    return text if len(text) <= width else text[: width - 3] + "..."


def format_text(result: dict[str, Any]) -> str:
    """The comparison as a table: '*' in the first column marks a verdict that differs."""
    lines = [f"A = {result.get('path_a', 'A')}: {result['a']}",
             f"B = {result.get('path_b', 'B')}: {result['b']}"]
    lines += [f"note: {n}" for n in result["notes"]]
    width = max([len(r["id"]) for r in result["rows"]] + [10])
    for kind, title in (("experiment", "experiments"), ("recommendation", "Appendix A recommendations")):
        rows = [r for r in result["rows"] if r["kind"] == kind]
        if not rows:
            continue
        lines += ["", f"{title}:", f"  {'':<{width}}  {'A':<16} {'B':<16}"]
        for r in rows:
            mark = "*" if r["differs"] else " "
            lines.append(f"{mark} {r['id']:<{width}}  {_cell(r['verdict_a'], 16):<16} "
                         f"{_cell(r['verdict_b'], 16):<16}")
    total = len(result["rows"])
    lines += ["", f"{result['differing']} of {total} verdicts differ" + (" (marked *)" if result["differing"] else "")]
    return "\n".join(line.rstrip() for line in lines)


def write_csv(result: dict[str, Any], path: str | os.PathLike[str]) -> None:
    """The compared verdicts, one row per experiment or recommendation, as CSV."""
    import csv

    with open(path, "w", newline="", encoding="utf-8") as f:
        writer = csv.DictWriter(f, fieldnames=list(result["rows"][0]) if result["rows"] else ["id"])
        writer.writeheader()
        writer.writerows(result["rows"])


__all__: Sequence[str] = ["ABSENT", "compare_guides", "format_text", "is_guide_file", "load_pair",
                          "write_csv"]
