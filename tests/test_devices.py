"""Device listing and selection, including PYCLPERF_DEVICE and the NVIDIA ICD discovery."""

from pathlib import Path
from types import SimpleNamespace

import pytest

import pyclperf
from pyclperf.device import icd as _icd
from pyclperf.device import devices


def test_at_least_one_device_listed():
    devs = pyclperf.list_devices()
    assert devs, "the test machine must have an OpenCL device (PoCL)"
    for d in devs:
        assert d.name and d.max_work_group_size > 0 and d.global_mem_bytes > 0
        assert len(d.max_work_item_sizes) >= 1


def test_select_by_index_pair_type_and_name():
    devs = pyclperf.list_devices()
    d = devs[0]
    assert pyclperf.select_device(0).name == d.name
    assert pyclperf.select_device("0").name == d.name
    assert pyclperf.select_device(f"{d.platform_index}:{d.device_index}").name == d.name
    assert pyclperf.select_device(d.name[:6].upper()).name == d.name
    kind = "gpu" if d.is_gpu else "cpu"
    assert kind.upper() in pyclperf.select_device(kind).type


def test_default_prefers_gpu_then_cpu():
    cpu = SimpleNamespace(type="CPU", name="c")
    gpu = SimpleNamespace(type="GPU", name="g")
    acc = SimpleNamespace(type="ACCELERATOR", name="a")
    assert devices.default_device([cpu, gpu]) is gpu
    assert devices.default_device([acc, cpu]) is cpu
    assert devices.default_device([acc]) is acc


def test_environment_variable_selects(monkeypatch):
    d = pyclperf.list_devices()[-1]
    monkeypatch.setenv("PYCLPERF_DEVICE", f"{d.platform_index}:{d.device_index}")
    chosen = pyclperf.select_device()
    assert (chosen.platform_index, chosen.device_index) == (d.platform_index, d.device_index)


def test_bad_environment_variable_is_named_in_the_error(monkeypatch):
    monkeypatch.setenv("PYCLPERF_DEVICE", "no-such-device-xyz")
    with pytest.raises(pyclperf.InvalidArgumentError, match="PYCLPERF_DEVICE 'no-such-device-xyz'"):
        pyclperf.Context()


@pytest.mark.parametrize("spec", [99, "99", "9:9", "nonexistent"])
def test_unknown_devices_raise_value_errors(spec):
    with pytest.raises(ValueError, match="matches no OpenCL device; available"):
        pyclperf.select_device(spec)


def test_wrong_spec_type():
    with pytest.raises(TypeError):
        pyclperf.select_device(1.5)


def test_context_reports_its_device(ctx):
    assert repr(ctx).startswith("<pyclperf.Context")
    assert ctx.summary()["name"] == ctx.info.name


@pytest.fixture
def no_pypi_pocl(monkeypatch):
    """Keeps these checks about NVIDIA alone where the pocl extra is installed."""
    monkeypatch.setattr(_icd, "find_pypi_pocl", lambda: None)


def test_icd_discovery_adds_an_unregistered_nvidia_driver(tmp_path, monkeypatch, no_pypi_pocl):
    lib = tmp_path / "libnvidia-opencl.so.1"
    lib.write_text("")
    monkeypatch.setattr(_icd, "_CANDIDATES", (str(lib),))
    vendors = tmp_path / "vendors"
    vendors.mkdir()
    (vendors / "pocl.icd").write_text("libpocl.so.2\n")
    env = {"XDG_CACHE_HOME": str(tmp_path / "cache")}
    note = _icd.configure(env, str(vendors))
    # Registered through a vendors directory, which ocl-icd (the wheel's loader) and the Khronos
    # loader both read; OCL_ICD_FILENAMES would be ignored by ocl-icd.
    made = Path(env["OCL_ICD_VENDORS"])
    icds = {p.name: p.read_text().strip() for p in made.glob("*.icd")}
    assert icds == {"pocl.icd": "libpocl.so.2", _icd.NVIDIA_ICD_NAME: str(lib)}
    assert "OCL_ICD_FILENAMES" not in env and "OCL_ICD_ASSUME_ICD_EXTENSION" not in env
    assert "added unregistered NVIDIA driver" in note


def test_a_single_library_in_ocl_icd_vendors_is_left_alone(tmp_path, monkeypatch):
    lib = tmp_path / "libOpenCL-driver.so"
    lib.write_text("")
    monkeypatch.setattr(_icd, "find_pypi_pocl", lambda: "/somewhere/libpocl-x.so")
    env = {"OCL_ICD_VENDORS": str(lib)}
    assert "left as set" in _icd.configure(env) and env == {"OCL_ICD_VENDORS": str(lib)}


def test_icd_discovery_leaves_registered_or_user_choices_alone(tmp_path, no_pypi_pocl):
    vendors = tmp_path / "vendors"
    vendors.mkdir()
    (vendors / "nvidia.icd").write_text("libnvidia-opencl.so.1\n")
    env: dict[str, str] = {}
    assert "registered" in _icd.configure(env, str(vendors)) and env == {}
    env = {"OCL_ICD_FILENAMES": "/x.so"}
    assert "set by the user" in _icd.configure(env, str(vendors))
    env = {"PYCLPERF_NO_ICD_DISCOVERY": "1"}
    assert "disabled" in _icd.configure(env, str(vendors)) and "OCL_ICD_FILENAMES" not in env


def test_the_wheels_loader_reads_ocl_icd_filenames_through_the_vendors_dir(tmp_path, monkeypatch,
                                                                           no_pypi_pocl):
    """Found on the H200: its environment names NVIDIA's driver in OCL_ICD_FILENAMES only, which
    the system's Khronos loader reads and the wheel's ocl-icd ignores (PoCL alone was listed)."""
    monkeypatch.setattr(_icd, "bundled_loader", lambda: True)
    vendors = tmp_path / "vendors"
    vendors.mkdir()
    (vendors / "pocl.icd").write_text("libpocl.so.2\n")
    env = {"OCL_ICD_FILENAMES": "libpocl.so.2:libnvidia-opencl.so.1",
           "XDG_CACHE_HOME": str(tmp_path / "cache")}
    note = _icd.configure(env, str(vendors))
    icds = {p.name: p.read_text().strip() for p in Path(env["OCL_ICD_VENDORS"]).glob("*.icd")}
    assert icds == {"pocl.icd": "libpocl.so.2", "pyclperf-user-1.icd": "libnvidia-opencl.so.1"}
    assert "through the vendors directory" in note
    # A from-source build uses the system's loader, which reads the variable itself.
    monkeypatch.setattr(_icd, "bundled_loader", lambda: False)
    env = {"OCL_ICD_FILENAMES": "libnvidia-opencl.so.1"}
    assert "set by the user" in _icd.configure(env, str(vendors)) and "OCL_ICD_VENDORS" not in env
