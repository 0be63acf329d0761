"""tuner.kt: Kernel Tuner's tune_kernel translated onto tune()'s keywords (tune stubbed)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np
import pytest

import pyclperf
from pyclperf.tuner import kt
from pyclperf.tuner.options import to_flat
from pyclperf.measure.results import Results

SRC = "__kernel void vector_add(__global float *c, __global const float *a) { }"
N = 64


class Stub:
    """Records tune()'s arguments and answers with canned rows."""

    def __init__(self, rows: list[dict] | None = None) -> None:
        self.args: tuple = ()
        self.kw: dict[str, Any] = {}
        self.rows = rows if rows is not None else [
            {"block_size_x": 32, "config": "a", "status": "ok", "time_ms": 2.0,
             "times_ns": [2e6, 2.1e6], "compile_s": 0.1, "verify_s": 0.01, "benchmark_s": 0.02,
             "GB/s": 1.0},
            {"block_size_x": 64, "config": "b", "status": "ok", "time_ms": 1.0,
             "times_ns": [1e6], "compile_s": 0.1, "GB/s": 2.0},
            {"block_size_x": 128, "config": "c", "status": "build failed", "error": "log"},
            {"block_size_x": 256, "config": "d", "status": "skipped", "error": "restriction"},
        ]

    def __call__(self, *args: Any, **kw: Any) -> Results:
        # The groups tune_kernel filled, spread back into Kernel Tuner's flat names.
        self.args, self.kw = args, to_flat(kw)
        return Results({"device": {"name": "Stub GPU", "driver_version": "9"}}, self.rows)


@pytest.fixture
def stub(monkeypatch: pytest.MonkeyPatch) -> Stub:
    s = Stub()
    monkeypatch.setattr(kt, "tune", s)
    monkeypatch.setattr(kt, "_context", lambda platform, device: f"ctx {platform}:{device}")
    return s


def args() -> list:
    return [np.zeros(N, np.float32), np.arange(N, dtype=np.float32)]


def test_exported_from_the_package() -> None:
    assert pyclperf.tune_kernel is kt.tune_kernel and "tune_kernel" in pyclperf.__all__


# Kernel Tuner 1.5.0's tune_kernel parameters, in order (a script may pass some positionally).
KT_PARAMETERS = [
    "kernel_name", "kernel_source", "problem_size", "arguments", "tune_params", "grid_div_x",
    "grid_div_y", "grid_div_z", "restrictions", "answer", "atol", "verify", "verbose", "lang",
    "device", "platform", "smem_args", "cmem_args", "texmem_args", "compiler", "compiler_options",
    "defines", "log", "iterations", "block_size_names", "quiet", "strategy", "strategy_options",
    "cache", "metrics", "simulation_mode", "parallel", "observers", "objective",
    "objective_higher_is_better", "objectives", "seed"]


def test_signature_is_kernel_tuners() -> None:
    import inspect

    assert list(inspect.signature(kt.tune_kernel).parameters) == KT_PARAMETERS


def test_arguments_are_translated(stub: Stub, capsys: pytest.CaptureFixture[str]) -> None:
    a = args()
    answer = [a[1], None]
    results, env = kt.tune_kernel(
        "vector_add", SRC, N, a, {"block_size_x": [32, 64, 128, 256]}, grid_div_x=["block_size_x"],
        restrictions=["block_size_x <= 128"], answer=answer, atol=1e-3, platform=1, device=2,
        compiler_options=["-cl-fast-relaxed-math"], iterations=11, block_size_names=["bsx"],
        strategy="random_sample", strategy_options={"fraction": 0.5, "max_fevals": 3,
                                                    "time_limit": 9.0},
        cache="kt_cache", seed=5)
    src, name, size, passed, params = stub.args
    assert (src, name, size) == (SRC, "vector_add", N) and passed is a
    kw = stub.kw
    assert params == {"block_size_x": [32, 64, 128, 256]}
    assert kw["ctx"] == "ctx 1:2"
    assert kw["restrictions"] == ["block_size_x <= 128"]
    assert kw["answer"] is answer and kw["verify"] is None and kw["atol"] == 1e-3
    assert kw["options"] == ["-cl-fast-relaxed-math"]
    assert kw["grid_div_x"] == ["block_size_x"] and kw["block_size_names"] == ["bsx"]
    assert kw["iterations"] == 11
    assert kw["strategy"] == "random_sample" and kw["strategy_options"] == {"fraction": 0.5}
    assert kw["max_fevals"] == 3 and kw["time_limit"] == 9.0 and kw["seed"] == 5
    assert kw["cache"] == "kt_cache.json"
    # KT-shaped results: restricted configs left out, times in ms, markers for failures.
    assert [r["block_size_x"] for r in results] == [32, 64, 128]
    assert results[0]["time"] == 2.0 and results[0]["times"] == [2.0, 2.1]
    assert results[0]["compile_time"] == pytest.approx(100.0)
    assert results[2]["time"] == "CompilationFailedConfig"
    assert env["device_name"] == "Stub GPU" and env["iterations"] == 11
    assert env["best_config"]["block_size_x"] == 64
    assert isinstance(env["pyclperf_results"], Results)
    assert "block_size_x=64" in capsys.readouterr().out


def test_source_may_be_a_filename(stub: Stub, tmp_path: Path) -> None:
    f = tmp_path / "k.cl"
    f.write_text(SRC)
    kt.tune_kernel("vector_add", str(f), N, args(), {"block_size_x": [32]}, quiet=True)
    assert stub.args[0] == SRC and stub.kw["progress"] is False
    kt.tune_kernel("vector_add", [f], N, args(), {"block_size_x": [32]}, quiet=True)
    assert stub.args[0] == SRC


def test_metrics_get_kt_params_with_time_in_ms_and_compose(stub: Stub) -> None:
    kt.tune_kernel("vector_add", SRC, N, args(), {"block_size_x": [32]}, quiet=True,
                   metrics={"GB/s": lambda p: 8 * N / (p["time"] / 1e3) / 1e9,
                            "x": "block_size_x * 1000 / time", "x2": "x * 2"})
    ours = stub.kw["metrics"]
    cfg = {"block_size_x": 32}
    assert ours["GB/s"](cfg, 1e-3) == pytest.approx(8 * N / 1e-3 / 1e9)
    assert ours["x"](cfg, 2e-3) == pytest.approx(32 * 1000 / 2.0)
    assert ours["x2"](cfg, 2e-3) == pytest.approx(32 * 1000)
    with pytest.raises(ValueError, match="metric 'bad'"):
        kt.tune_kernel("vector_add", SRC, N, args(), {"block_size_x": [32]}, quiet=True,
                       metrics={"bad": "__import__('os')"})


def test_verify_is_called_kt_style(stub: Stub) -> None:
    seen: dict[str, Any] = {}
    a = args()
    answer = [a[1], None]

    def verify(ans: list, result_host: list, atol: float | None = None) -> bool:
        seen.update(ans=ans, host=result_host, atol=atol)
        return bool(np.allclose(ans[0], result_host[0], atol=atol))

    kt.tune_kernel("vector_add", SRC, N, a, {"block_size_x": [32]}, answer=answer, atol=1e-2,
                   verify=verify, quiet=True)
    ours = stub.kw["verify"]
    assert stub.kw["answer"] is None                    # KT's verify replaces the default check
    out = [a[1].copy(), a[1].copy()]
    assert ours({"block_size_x": 32}, out) is True
    assert seen["ans"] is answer and seen["atol"] == 1e-2
    assert seen["host"][1] is None                      # not in the answer: None, as in KT
    assert ours({"block_size_x": 32}, [a[1] + 1, a[1]]) is False
    # A verify without atol is called without it.
    kt.tune_kernel("vector_add", SRC, N, a, {"block_size_x": [32]}, answer=answer, quiet=True,
                   verify=lambda ans, host: True)
    assert stub.kw["verify"]({}, out) is True


def test_kt_restriction_shapes(stub: Stub) -> None:
    stub.rows = []
    names = {"block_size_x": [32, 64], "tile": [1, 2]}
    kt.tune_kernel("vector_add", SRC, N, args(), names, quiet=True,
                   restrictions=["tile <= 2", lambda block_size_x, tile: block_size_x * tile <= 64,
                                 (lambda tile: tile > 0, ["tile"]), lambda p: p["tile"] < 3])
    s, kw_style, tup, dict_style = stub.kw["restrictions"]
    assert s == "tile <= 2"
    assert kw_style({"block_size_x": 64, "tile": 2}) is False
    assert kw_style({"block_size_x": 32, "tile": 2}) is True
    assert tup({"block_size_x": 32, "tile": 2}) is True
    assert dict_style({"block_size_x": 32, "tile": 2}) is True
    # python-constraint objects (KT's solver back end) are named, not silently misused.
    constraint = type("MaxProdConstraint", (), {"__module__": "constraint.constraints",
                                                "__call__": lambda self, *a: True})()
    with pytest.raises(NotImplementedError, match="python-constraint"):
        kt.tune_kernel("vector_add", SRC, N, args(), names, quiet=True, restrictions=[constraint])
    # A lone callable gets the dict, as in KT.
    lone = lambda p: p["tile"] == 1  # noqa: E731
    kt.tune_kernel("vector_add", SRC, N, args(), names, quiet=True, restrictions=lone)
    assert stub.kw["restrictions"] == [lone]


@pytest.mark.parametrize("kw, feature", [
    ({"lang": "CUDA"}, "lang='CUDA'"),
    ({"smem_args": {"size": 4}}, "smem_args"),
    ({"cmem_args": {"c": np.zeros(1)}}, "cmem_args"),
    ({"texmem_args": {"t": np.zeros(1)}}, "texmem_args"),
    ({"observers": [object()]}, "observers"),
    ({"defines": {"X": 1}}, "defines"),
    ({"compiler": "gcc"}, "compiler"),
    ({"parallel": True}, "parallel"),
])
def test_unsupported_features_are_named(stub: Stub, kw: dict, feature: str) -> None:
    with pytest.raises(NotImplementedError, match=feature):
        kt.tune_kernel("vector_add", SRC, N, args(), {"block_size_x": [32]}, **kw)


def test_opencl_lang_and_higher_is_better_objective(stub: Stub) -> None:
    _, env = kt.tune_kernel("vector_add", SRC, N, args(), {"block_size_x": [32, 64]},
                            lang="OpenCL", quiet=True, metrics={"GB/s": lambda p: 1.0},
                            objective="GB/s", objective_higher_is_better=True)
    assert env["best_config"]["block_size_x"] == 64       # the stub's GB/s: 2.0 beats 1.0
