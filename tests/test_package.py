"""The package builds, imports, exposes its public names and ships its kernels."""

import importlib.resources

import pyclperf
from pyclperf import _core


def test_public_names_resolve():
    for name in pyclperf.__all__:
        assert hasattr(pyclperf, name), name


def test_exceptions_form_one_hierarchy():
    assert issubclass(pyclperf.ClError, pyclperf.PyclperfError)
    assert issubclass(pyclperf.ClError, RuntimeError)
    assert issubclass(pyclperf.BuildError, pyclperf.ClError)
    assert issubclass(pyclperf.DeviceMemoryError, MemoryError)
    assert issubclass(pyclperf.InvalidArgumentError, ValueError)
    assert issubclass(pyclperf.ReleasedError, pyclperf.PyclperfError)


def test_error_names():
    assert _core.error_name(-54) == "CL_INVALID_WORK_GROUP_SIZE"
    assert _core.error_name(-5) == "CL_OUT_OF_RESOURCES"
    assert _core.error_name(-12345) == "CL_UNKNOWN_ERROR(-12345)"


def test_kernels_ship_inside_the_package():
    files = importlib.resources.files("pyclperf").joinpath("kernels")
    assert files.joinpath("copy.cl").is_file()
    assert "__kernel void offset_copy" in pyclperf.kernel_source("copy.cl")


def test_missing_kernel_file_names_the_available_ones():
    import pytest

    with pytest.raises(FileNotFoundError, match="copy.cl"):
        pyclperf.kernel_source("nope.cl")


def test_compose_options_puts_defines_first():
    opts = _core.compose_options([("TILE", "16"), ("FAST", "")], "-cl-mad-enable")
    assert opts == "-D TILE=16 -D FAST= -cl-kernel-arg-info -cl-mad-enable"
