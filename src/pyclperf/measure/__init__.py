"""The measuring core: points, rows, statistics, checks, results files."""
