"""``python -m pyclperf.experiments``: print the README's experiment list, drawn from each
experiment's own description (tests/test_contract.py checks the README holds it)."""

from . import catalogue_markdown

print(catalogue_markdown())
