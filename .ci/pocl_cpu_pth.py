"""Run by every Python of the wheel-check venv at start-up (a .pth file imports it) when
WHEEL_CHECK_POCL_CPU is set: PoCL from PyPI then detects that CPU name, e.g. 'generic' as on a
CPU newer than its LLVM, so that the whole check runs as it would on such a machine. Uses
pyclperf/device/pocl_cpu.py loaded on its own: importing pyclperf would register PoCL first."""

import glob
import importlib.util
import os
import sysconfig

_name = os.environ.get("WHEEL_CHECK_POCL_CPU")
if _name:
    _site = sysconfig.get_paths()["purelib"]
    _spec = importlib.util.spec_from_file_location(
        "_wheel_check_pocl_cpu", os.path.join(_site, "pyclperf", "device", "pocl_cpu.py"))
    assert _spec is not None and _spec.loader is not None
    _mod = importlib.util.module_from_spec(_spec)
    _spec.loader.exec_module(_mod)
    _pocl = sorted(glob.glob(os.path.join(_site, "pyopencl", ".libs", "libpocl*.so*")))[0]
    _mod.replace(_mod._load(_pocl), _name)
