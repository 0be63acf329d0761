"""PoCL from PyPI on a CPU its LLVM 14 does not know: it detects 'generic', which it cannot build
for, and pyclperf gives it the CPU of the kernel library it runs there (pyclperf.device.pocl_cpu).

The tests that run PoCL force the 'generic' detection, as on such a CPU, by replacing PoCL's
detection in a child process before pyclperf loads, with the module under test loaded on its own.
They need PoCL from PyPI (the `pocl` extra, as `make wheel-check` installs it)."""

from __future__ import annotations

import ctypes
import json
import os
import re
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from pyclperf.device import icd as _icd
from pyclperf.device import pocl_cpu as _pocl_cpu
from pyclperf.device.pocl_cpu import ENV, KERNELLIB_VARIANTS, cpu_flags, kernellib_cpu

POCL = _icd.find_pypi_pocl()
needs_pocl = pytest.mark.skipif(POCL is None, reason="needs PoCL from PyPI: the pocl extra")


def test_cpu_flags_read_the_flags_line(tmp_path):
    info = tmp_path / "cpuinfo"
    info.write_text("processor\t: 0\nmodel name\t: AMD EPYC\nflags\t\t: fpu sse2 avx2 avx512f\n"
                    "bugs\t\t: sysret_ss_attrs\n\nprocessor\t: 1\nflags\t\t: fpu\n")
    assert cpu_flags(str(info)) == {"fpu", "sse2", "avx2", "avx512f"}
    assert cpu_flags(str(tmp_path / "absent")) == frozenset()


def test_kernellib_cpu_follows_pocls_choice_of_variant():
    # An AVX2 CPU of the machine this was found on (its flags, less the ones that do not count).
    zen = frozenset("sse2 ssse3 cx16 sse4_1 sse4_2 popcnt avx f16c fma abm bmi1 bmi2 avx2".split())
    assert kernellib_cpu(zen) == ("avx2", "haswell")
    assert kernellib_cpu(zen | {"avx512f", "avx512bw"}) == ("avx512", "skylake-avx512")
    # One AVX2-variant feature missing falls back to the best variant it still satisfies.
    assert kernellib_cpu(zen - {"bmi2"}) == ("avx_f16c", "ivybridge")
    # Unreadable flags: the SSE2 variant, which every x86-64 CPU runs.
    assert kernellib_cpu(frozenset()) == ("sse2", "x86-64")


def test_a_name_that_does_not_fit_is_refused():
    for bad in ("", "x" * 64, "has space", "caf\u00e9"):
        with pytest.raises(ValueError, match=ENV):
            _pocl_cpu.replace(None, bad)


def test_a_build_refused_for_its_cpu_name_says_what_works(monkeypatch, capsys):
    from pyclperf import _core, cli

    def refuse(args):
        raise _core.BuildError("clBuildProgram: CL_BUILD_PROGRAM_FAILURE (build log:\n"
                               "error: unknown target CPU 'generic')")

    monkeypatch.setattr(cli, "cmd_devices", refuse)
    assert cli.main(["devices"]) == cli.EXIT_ERROR
    err = capsys.readouterr().err
    assert "unknown target CPU 'generic'" in err
    assert f"set {ENV}" in err and "apt install pocl-opencl-icd" in err
    # Any other build failure gets no such advice.
    monkeypatch.setattr(cli, "cmd_devices", lambda args: (_ for _ in ()).throw(
        _core.BuildError("error: use of undeclared identifier 'x'")))
    assert cli.main(["devices"]) == cli.EXIT_ERROR
    assert ENV not in capsys.readouterr().err


class _OtherPocl:
    """A library whose pocl_get_llvm_cpu_name answers 'generic' but is not PoCL 3.0's code."""

    def __init__(self) -> None:
        libc = ctypes.CDLL(None)
        libc.strdup.restype = ctypes.c_void_p
        libc.strdup.argtypes = [ctypes.c_char_p]
        self.pocl_get_llvm_cpu_name = ctypes.CFUNCTYPE(ctypes.c_void_p)(
            lambda: libc.strdup(b"generic"))


def test_another_pocl_build_gets_the_variable_not_a_patch(monkeypatch):
    fake = _OtherPocl()
    monkeypatch.setattr(_pocl_cpu, "_load", lambda library: fake)
    env: dict[str, str] = {}
    note = _pocl_cpu.configure("libpocl-other.so", env)
    assert env == {ENV: kernellib_cpu(cpu_flags())[1]}
    assert "detects CPU 'generic'" in note and f"{ENV}={env[ENV]} set" in note
    assert _pocl_cpu.current_name(fake) == "generic"  # its code was left alone
    # The user's value is never overwritten.
    env = {ENV: "znver2"}
    _pocl_cpu.configure("libpocl-other.so", env)
    assert env == {ENV: "znver2"}


def _child(code: str, tmp_path: Path, **extra: str) -> subprocess.CompletedProcess[str]:
    """Run ``code`` in a fresh Python with PyPI's PoCL as the only OpenCL driver."""
    empty = tmp_path / "no-vendors"
    empty.mkdir(exist_ok=True)
    env = {k: v for k, v in os.environ.items()
           if not k.startswith(("OCL_ICD", "POCL_", "PYCLPERF_"))}
    env.update(OCL_ICD_VENDORS=str(empty), XDG_CACHE_HOME=str(tmp_path / "cache"),
               POCL_CACHE_DIR=str(tmp_path / "pocl-cache"), MPLBACKEND="Agg", **extra)
    return subprocess.run([sys.executable, "-c", textwrap.dedent(code)], env=env, cwd=tmp_path,
                          capture_output=True, text=True, timeout=300)


# Loads pyclperf/_pocl_cpu.py on its own (importing pyclperf would register PoCL first) and
# makes PoCL detect 'generic', as LLVM 14 does on a CPU newer than itself.
FORCE_GENERIC = """
    import importlib.util, os
    where = importlib.util.find_spec("pyclperf").submodule_search_locations[0]
    spec = importlib.util.spec_from_file_location("alone", os.path.join(where, "device/pocl_cpu.py"))
    alone = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(alone)
    lib = alone._load({pocl!r})
    alone.replace(lib, "generic")
    assert alone.current_name(lib) == "generic"
"""

RUN_OFFSET = ["run", "offset", "--size", "65536", "--repeats", "3", "--warmup", "1", "--no-plot",
              "--out", "results"]


@needs_pocl
def test_pocl_given_generic_fails_as_on_an_unknown_cpu_and_says_what_works(tmp_path):
    """The failure this module exists for, reproduced: 'generic' given to PyPI's PoCL."""
    out = _child(f"from pyclperf.cli import main; raise SystemExit(main({RUN_OFFSET!r}))",
                 tmp_path, **{ENV: "generic"})
    assert out.returncode == 2, out.stdout + out.stderr
    assert "unknown target CPU 'generic'" in out.stderr
    assert "apt install pocl-opencl-icd" in out.stderr and ENV in out.stderr


@needs_pocl
def test_pocl_detecting_generic_runs_offset_on_its_kernel_library_cpu(tmp_path):
    variant, cpu = kernellib_cpu(cpu_flags())
    code = FORCE_GENERIC.format(pocl=POCL) + f"""
    from pyclperf.cli import main
    assert main(["devices"]) == 0
    raise SystemExit(main({RUN_OFFSET!r}))
    """
    out = _child(code, tmp_path, POCL_DEBUG="llvm")
    assert out.returncode == 0, out.stdout + out.stderr[-4000:]
    assert f"PoCL from PyPI detects CPU 'generic', builds for '{cpu}'" in out.stdout
    # PoCL compiled for that CPU (its device version names it) ...
    lines = (tmp_path / "results" / "offset.jsonl").read_text().splitlines()
    meta, rows = json.loads(lines[0]), [json.loads(line) for line in lines[1:]]
    assert meta["device"]["version"].endswith(f"-{cpu}"), meta["device"]["version"]
    # ... every point of the run was checked against the host's expected values ...
    assert rows and all(r["status"] == "ok" and r["verified"] for r in rows)
    # ... and linked the kernel library variant the name was chosen from.
    libs = set(re.findall(r"kernel-x86_64-[a-z-]+-(\w+)\.bc as the built-in lib", out.stderr))
    assert libs == {variant}, out.stderr[-4000:]


@needs_pocl
@pytest.mark.parametrize("cpu", sorted({row[1] for row in KERNELLIB_VARIANTS}))
def test_every_kernel_library_cpu_is_one_pypi_pocl_builds_for(tmp_path, cpu):
    """Any name kernellib_cpu can pick (and the variable, which gives it by hand): PoCL takes it
    and its clang builds for it. Only built, not run: the CPU here need not have its features."""
    code = """
        import pyclperf
        from pyclperf.device.icd import NOTE
        ctx = pyclperf.Context("cpu")
        ctx.program(source="__kernel void k(__global float *a) { a[get_global_id(0)] *= 2.0f; }")
        print(ctx.info.version)
        print(NOTE)
    """
    out = _child(code, tmp_path, **{ENV: cpu})
    assert out.returncode == 0, out.stderr[-4000:]
    assert out.stdout.splitlines()[0].endswith(f"-{cpu}")
    said = out.stdout
    assert f"builds for CPU '{cpu}' ({ENV} set)" in said or f"builds for '{cpu}' ({ENV} set)" in said
