"""What a finished run says about itself: noisy points and suspect points, counted into the
results' metadata and appended to the conclusion, so no conclusion rests on them silently."""

from __future__ import annotations

from typing import Any

from ..measure.results import OK, SUSPECT, Results
from ..measure.stats import NOISY_SPREAD_PCT


def say_noise(results: Results) -> None:
    """Count the verified rows whose spread exceeds the threshold (``meta["noisy_points"]``) and
    say so at the end of the conclusion, so no conclusion rests on them silently."""
    ok = [r for r in results.rows if r.get("status") == OK]
    noisy = [r for r in ok if r.get("noisy")]
    results.meta["noisy_points"] = len(noisy)
    if noisy and results.meta.get("conclusion"):
        results.meta["conclusion"] += (
            f" [{len(noisy)} of {len(ok)} verified points noisy: spread over "
            f"{NOISY_SPREAD_PCT:.0f}% (largest {max(r['spread_pct'] for r in noisy):.0f}%)]")


def say_suspect(results: Results) -> None:
    """Count the suspect rows (``meta["suspect_points"]``) and say so at the end of the
    conclusion (or as the conclusion, where the experiment draws none)."""
    suspect = [r for r in results.rows if r.get("status") == SUSPECT]
    results.meta["suspect_points"] = len(suspect)
    if not suspect:
        return
    note = (f"[{len(suspect)} of {len(results.rows)} points suspect, left out of every "
            f"conclusion: {suspect[0]['suspect']}"
            + (" (and the like: column suspect)" if len(suspect) > 1 else "") + "]")
    text = results.meta.get("conclusion")
    results.meta["conclusion"] = f"{text} {note}" if text else note


def noise_note(row: dict[str, Any]) -> str:
    """" (noisy: spread 23%)" for a row whose spread exceeds the threshold, else ""."""
    spread = row.get("spread_pct")
    if spread is not None and spread > NOISY_SPREAD_PCT:
        return f" (noisy: spread {spread:.0f}%)"
    return ""
