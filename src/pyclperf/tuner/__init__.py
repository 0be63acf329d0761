"""The tuner: tune(), run_kernel() and tune_kernel() on a user's kernel. Its search spaces and
strategies, its spec files, the worker processes that run each configuration, and Kernel
Tuner's formats. A configuration's launch is timed by the policy the experiments use too
(tuner.timing)."""
