"""Views of results: tables, plots, comparisons, fleets."""
