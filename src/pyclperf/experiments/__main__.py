"""``python -m pyclperf.experiments``: print the experiment list, one line each from the
experiment's own description, as the documentation's catalogue shows it."""

from . import catalogue_markdown

print(catalogue_markdown())
