"""PyOpenCL's variables (PYOPENCL_CTX, PYOPENCL_TEST) and a pytest plugin that stays out of
the way of sessions that do not use it."""

from __future__ import annotations

import subprocess
import sys
import textwrap
from types import SimpleNamespace

import pytest

import pyclperf
from pyclperf.device import devices


def _dev(p: int, d: int, name: str, platform: str, kind: str = "CPU", vendor: str = "v") -> SimpleNamespace:
    return SimpleNamespace(platform_index=p, device_index=d, name=name, platform_name=platform,
                           vendor=vendor, type=kind)


# Two platforms as a GPU machine with PoCL shows them.
NV0 = _dev(0, 0, "NVIDIA H200", "NVIDIA CUDA", "GPU", "NVIDIA Corporation")
NV1 = _dev(0, 1, "NVIDIA H100", "NVIDIA CUDA", "GPU", "NVIDIA Corporation")
CPU = _dev(1, 0, "cpu-haswell-AMD EPYC", "Portable Computing Language", "CPU", "AuthenticAMD")
ALL = [NV0, NV1, CPU]


@pytest.mark.parametrize("spec, want", [
    ("0:1", NV1), ("0", NV0), ("1", CPU), ("nvi", NV0), ("nvidia:h100", NV1),
    ("portable:cpu", CPU), ("PORT:0", CPU), ("", NV0), (":1", NV1), ("1:", CPU),
])
def test_pyopencl_ctx_syntax(spec, want):
    assert devices.pyopencl_ctx(spec, ALL) is want


@pytest.mark.parametrize("spec", ["2", "0:5", "amd-gpu", "0:1:2", "nvi:mi300"])
def test_pyopencl_ctx_refuses_what_names_nothing(spec):
    with pytest.raises(pyclperf.InvalidArgumentError, match="PYOPENCL_CTX"):
        devices.pyopencl_ctx(spec, ALL)


@pytest.mark.parametrize("spec, want", [
    ("nvi", [NV0, NV1]), ("portable:cpu", [CPU]), ("0:1,0", [NV1, NV0]),
    ("nvi:h200;port", [NV0, CPU]), ("1", [CPU]),
])
def test_pyopencl_test_syntax(spec, want):
    assert devices.pyopencl_test(spec, ALL) == want


def test_pyclperf_device_wins_over_pyopencl_ctx(monkeypatch):
    real = pyclperf.list_devices()
    last = real[-1]
    monkeypatch.setenv("PYOPENCL_CTX", f"{last.platform_index}:{last.device_index}")
    monkeypatch.delenv("PYCLPERF_DEVICE", raising=False)
    got = pyclperf.select_device()
    assert (got.platform_index, got.device_index) == (last.platform_index, last.device_index)
    monkeypatch.setenv("PYCLPERF_DEVICE", "0")
    assert pyclperf.select_device().name == real[0].name
    monkeypatch.delenv("PYCLPERF_DEVICE")
    monkeypatch.setenv("PYOPENCL_CTX", "no-such-platform")
    with pytest.raises(pyclperf.InvalidArgumentError, match="PYOPENCL_CTX.*available"):
        pyclperf.select_device()


def test_pyopencl_test_is_the_plugins_fallback(monkeypatch):
    import pyclperf_pytest

    first = pyclperf.list_devices()[0]
    monkeypatch.delenv("PYCLPERF_TEST_DEVICES", raising=False)
    monkeypatch.setenv("PYOPENCL_TEST", f"{first.platform_index}:{first.device_index}")
    assert [d.name for d in pyclperf_pytest.selected_devices()] == [first.name]


def _run(code_or_args: list[str], cwd) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, *code_or_args], cwd=cwd, capture_output=True, text=True,
                          timeout=300)


def test_plugin_module_imports_no_opencl(tmp_path):
    probe = "import sys, pyclperf_pytest; print(sorted(m for m in sys.modules if m.startswith(('pyclperf', 'numpy'))))"
    out = _run(["-c", probe], tmp_path)
    assert out.returncode == 0, out.stderr
    assert out.stdout.strip() == "['pyclperf_pytest']"


def test_plugin_does_nothing_in_a_session_without_its_fixtures(tmp_path):
    # A foreign project's tests: the plugin is loaded (entry point) but must not import
    # pyclperf, touch OpenCL or parametrise anything.
    (tmp_path / "test_foreign.py").write_text(textwrap.dedent("""
        import sys

        def test_nothing_of_pyclperf_loaded(request):
            assert request.config.pluginmanager.has_plugin("pyclperf")
            assert not [m for m in sys.modules if m.startswith("pyclperf.") or m == "pyclperf"]
    """))
    out = _run(["-m", "pytest", "-q", "-p", "no:cacheprovider", "test_foreign.py"], tmp_path)
    assert out.returncode == 0, out.stdout + out.stderr
    assert "1 passed" in out.stdout
