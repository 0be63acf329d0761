"""The self-contained wheel: its own ICD loader, and PoCL from PyPI registered beside the
system's drivers without hiding them."""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

import pyclperf
from pyclperf import _core
from pyclperf.device import icd as _icd


def _loaded(name: str) -> set[str]:
    """Paths of the mapped files of this process whose name holds ``name``."""
    maps = Path("/proc/self/maps").read_text().splitlines()
    return {line.split(None, 5)[5] for line in maps if len(line.split(None, 5)) == 6 and name in line}


def test_libopencl_comes_from_the_wheel():
    libs = Path(_core.__file__).resolve().parent.parent / "pyclperf.libs"
    if not libs.is_dir():
        pytest.skip("not installed from the repaired wheel: no pyclperf.libs beside the package")
    # The ICD set-up must know the wheel's loader is ocl-icd: it alone decides whether the
    # libraries in OCL_ICD_FILENAMES go into the vendors directory (on the H200 machine, NVIDIA's
    # driver is named only there; with this check wrong, PoCL alone was listed).
    assert Path(_icd.wheel_libs_dir()).resolve() == libs.resolve() and _icd.bundled_loader()
    pyclperf.list_devices()
    loaders = _loaded("libOpenCL")
    assert loaders, "no libOpenCL mapped after listing devices"
    assert all(Path(p).parent == libs for p in loaders), f"loader(s) outside the wheel: {loaders}"


def _fake_pocl(monkeypatch, tmp_path) -> str:
    lib = tmp_path / "site" / "pyopencl" / ".libs" / "libpocl-0123abcd.so"
    lib.parent.mkdir(parents=True)
    lib.write_text("")
    monkeypatch.setattr(_icd, "find_pypi_pocl", lambda: str(lib))
    monkeypatch.setattr(_icd, "_CANDIDATES", ())
    return str(lib)


def test_pypi_pocl_is_registered_beside_the_system_icds(tmp_path, monkeypatch):
    lib = _fake_pocl(monkeypatch, tmp_path)
    vendors = tmp_path / "vendors"
    vendors.mkdir()
    (vendors / "nvidia.icd").write_text("libnvidia-opencl.so.1\n")
    env = {"XDG_CACHE_HOME": str(tmp_path / "cache")}
    note = _icd.configure(env, str(vendors))
    made = Path(env["OCL_ICD_VENDORS"])
    assert made.is_relative_to(tmp_path / "cache") and env["OCL_ICD_ASSUME_ICD_EXTENSION"] == "1"
    icds = {p.name: p.read_text().strip() for p in made.glob("*.icd")}
    assert icds == {"nvidia.icd": "libnvidia-opencl.so.1", _icd.POCL_ICD_NAME: lib}
    assert "added PoCL from PyPI" in note and "nvidia.icd" in note
    # A second process with the same drivers reuses the directory.
    env2 = {"XDG_CACHE_HOME": str(tmp_path / "cache")}
    _icd.configure(env2, str(vendors))
    assert env2["OCL_ICD_VENDORS"] == str(made)


def test_pypi_pocl_is_not_doubled_with_a_registered_pocl(tmp_path, monkeypatch):
    _fake_pocl(monkeypatch, tmp_path)
    vendors = tmp_path / "vendors"
    vendors.mkdir()
    (vendors / "pocl.icd").write_text("libpocl.so.2\n")
    env: dict[str, str] = {"XDG_CACHE_HOME": str(tmp_path / "cache")}
    note = _icd.configure(env, str(vendors))
    assert "OCL_ICD_VENDORS" not in env and "not added" in note


def test_unwritable_cache_falls_back_to_the_temporary_directory(tmp_path, monkeypatch):
    _fake_pocl(monkeypatch, tmp_path)
    blocked = tmp_path / "blocked"
    blocked.write_text("a file where the cache directory would go")
    env = {"XDG_CACHE_HOME": str(blocked)}
    _icd.configure(env, str(tmp_path / "no-vendors"))
    assert Path(env["OCL_ICD_VENDORS"]).is_dir()
    assert not Path(env["OCL_ICD_VENDORS"]).is_relative_to(blocked)


def test_the_note_names_the_icd_files_used():
    assert "ICD files:" in _icd.NOTE or "disabled" in _icd.NOTE
    vendors = os.environ.get("OCL_ICD_VENDORS", _icd.SYSTEM_VENDORS)
    for icd in Path(vendors).glob("*.icd"):
        assert str(icd) in _icd.NOTE


def test_a_driver_found_by_path_reaches_the_bundled_loader(tmp_path):
    """The route an unregistered NVIDIA driver takes, through the wheel's own loader, with PyPI's
    PoCL standing in for the driver (the sandbox of .ci/wheel-check has no other)."""
    libs = Path(_core.__file__).resolve().parent.parent / "pyclperf.libs"
    pocl = _icd.find_pypi_pocl()
    if not libs.is_dir() or not pocl:
        pytest.skip("needs the repaired wheel and the pocl extra")
    # ocl-icd reads its variables at the first OpenCL call, not when _core is imported, so the
    # child can set them after import: discovery is off at import and run by hand afterwards.
    code = textwrap.dedent(f"""
        import os, pyclperf
        from pyclperf.device import icd as _icd
        _icd._CANDIDATES = ({pocl!r},)
        _icd.find_pypi_pocl = lambda: None
        del os.environ["PYCLPERF_NO_ICD_DISCOVERY"]
        os.environ["OCL_ICD_ASSUME_ICD_EXTENSION"] = "1"  # for PoCL; NVIDIA's needs none
        print(_icd.configure(vendors_dir={str(tmp_path / "no-vendors")!r}))
        print([d.platform_name for d in pyclperf.list_devices()])
    """)
    env = {k: v for k, v in os.environ.items() if not k.startswith("OCL_ICD")}
    env.update(PYCLPERF_NO_ICD_DISCOVERY="1", XDG_CACHE_HOME=str(tmp_path / "cache"))
    out = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True,
                         timeout=300)
    assert out.returncode == 0, out.stderr
    assert "added unregistered NVIDIA driver" in out.stdout
    assert "Portable Computing Language" in out.stdout
