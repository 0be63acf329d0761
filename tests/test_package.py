"""The package builds, imports, exposes its public names and ships its kernels."""

import importlib.resources

import pytest

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


def test_shared_kernel_pieces_are_put_in_place_of_their_include():
    files = importlib.resources.files("pyclperf").joinpath("kernels")
    assert files.joinpath("group_sum.clh").is_file()  # shipped beside the .cl files
    piece = files.joinpath("group_sum.clh").read_text(encoding="utf-8")
    for name in ("reduction.cl", "gridsync.cl"):
        raw = files.joinpath(name).read_text(encoding="utf-8")
        assert '#include "group_sum.clh"' in raw and "static float group_tree" not in raw
        text = pyclperf.kernel_source(name)
        assert '#include "group_sum.clh"' not in text and piece.rstrip() in text
        assert text.count("static float group_tree") == 1


def test_an_included_file_may_not_include_again(monkeypatch):
    from pyclperf.device import sources

    texts = {"a.cl": '#include "b.clh"\n', "b.clh": '#include "c.clh"\n'}
    monkeypatch.setattr(sources, "_read", texts.__getitem__)
    sources.kernel_source.cache_clear()
    try:
        with pytest.raises(ValueError, match="kernels/b.clh .included by a.cl. includes 'c.clh'"):
            sources.kernel_source("a.cl")
    finally:
        sources.kernel_source.cache_clear()


def test_missing_kernel_file_names_the_available_ones():
    import pytest

    with pytest.raises(FileNotFoundError, match="copy.cl"):
        pyclperf.kernel_source("nope.cl")


def test_compose_options_puts_defines_first():
    opts = _core.compose_options([("TILE", "16"), ("FAST", "")], "-cl-mad-enable")
    assert opts == "-D TILE=16 -D FAST= -cl-kernel-arg-info -cl-mad-enable"
