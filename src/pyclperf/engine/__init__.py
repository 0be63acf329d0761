"""The engine: points -> launches -> verified, timed rows. tune() and run_kernel() live here,
and the experiments time their launches through the same code (engine.timing)."""
