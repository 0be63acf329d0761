"""Your kernel on this device's measured roofline.

* ``profile(ctx)``: the device's ceilings, measured (not assumed) and cached per device and
  driver, each the best over the launch shapes that reach it (search.py): DRAM read/write/copy
  (memory.py, streams.py), cache levels found from the knees of the working-set curves
  (sweep.py, knees.py, levels.py; on a CPU device cpusweep.py, held against the OS's caches in
  cpulevels.py and oscaches.py), each level's copy bandwidth (levelcopy.py), local memory,
  host transfers, FP32/FP64/FP16 and integer throughput, launch latency (ceilings.py,
  compute.py); profiling.py, store.py;
* ``plot_roofline(profile, points)``: the hierarchical roofline from those ceilings (views/plot.py);
* ``explain(results, ...)``: where a tuned kernel's configurations sit on it, which roof binds,
  how far from it, what each tuned parameter moves, and which Guide experiments apply
  (explaining.py, binding.py, traffic.py);
* a roof is a ceiling: measured kernels held against the roof that binds them, and a ceiling
  some kernel beats measured again from that kernel's shape (audit.py, refresh.py).

``pyclperf`` imports this package only when one of its names is first used; matplotlib only
when a figure is drawn.
"""

from __future__ import annotations

from .explaining import Explanation, explain
from .plot import plot_roofline
from .profiling import Profile, Roof, profile

__all__ = ["Explanation", "Profile", "Roof", "explain", "plot_roofline", "profile"]
