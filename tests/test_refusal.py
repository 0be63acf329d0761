"""A launch the device refuses for resources it lacks is a finding, not a failure: the point is
skipped with the reason (measure.refusal), and where the claim is about it (launchbounds: only
the build that declares its work-group size can launch 1,024 work-items on NVIDIA) the verdict
counts it. No CPU device refuses such a launch (PoCL has no register file to run out of), so
the refusal is raised here as the core raises the driver's answer; the probe launch that tells
it from a broken device runs for real."""

from __future__ import annotations

import pyclperf
from pyclperf.experiments.base import run_experiment
from pyclperf.experiments.claims import claim_of
from pyclperf.experiments.launchbounds import LaunchBounds
from pyclperf.guide import figures as guide_figures
from pyclperf.guide import run as guide
from pyclperf.measure import refusal as refusal_mod
from pyclperf.measure.refusal import device_still_launches, refusal

QUICK = {"warmup": 1, "repeats": 2}
ITEMS, STEPS, LANES = 1 << 10, 8, 4


def answer(call: str, name: str, code: int) -> pyclperf.ClError:
    """An OpenCL failure as the core's translation raises it: call, code and name set, and
    CL_OUT_OF_RESOURCES as a DeviceMemoryError."""
    cls = pyclperf.DeviceMemoryError if code == -5 else pyclperf.ClError
    exc = cls(f"{call}: {name}")
    exc.call, exc.code, exc.name = call, code, name
    return exc


def test_an_enqueue_refusal_is_told_apart_from_a_failure(ctx, monkeypatch):
    assert device_still_launches(ctx)
    why = refusal(answer("clEnqueueNDRangeKernel", "CL_OUT_OF_RESOURCES", -5), ctx)
    assert why is not None and "CL_OUT_OF_RESOURCES" in why and "probe launch" in why
    assert refusal(answer("clEnqueueNDRangeKernel", "CL_INVALID_WORK_GROUP_SIZE", -54), ctx)
    # A fault reported when the launch is waited for, another code, or no code at all (an
    # exception not from the core) is no refusal.
    assert refusal(answer("clWaitForEvents", "CL_OUT_OF_RESOURCES", -5), ctx) is None
    assert refusal(answer("clEnqueueNDRangeKernel", "CL_INVALID_VALUE", -30), ctx) is None
    assert refusal(pyclperf.ClError("clEnqueueNDRangeKernel: CL_OUT_OF_RESOURCES"), ctx) is None
    assert refusal(ValueError("CL_OUT_OF_RESOURCES"), ctx) is None
    # A context that no longer launches anything (a fault before broke it): a failure.
    monkeypatch.setattr(refusal_mod, "device_still_launches", lambda c: False)
    assert refusal(answer("clEnqueueNDRangeKernel", "CL_OUT_OF_RESOURCES", -5), ctx) is None


class RefusingKernel:
    """A kernel whose launches the driver refuses at their enqueue with CL_OUT_OF_RESOURCES,
    as NVIDIA's refuses a 128-register build at 1,024 work-items."""

    def __init__(self, kernel):
        self._kernel = kernel

    def __getattr__(self, name):
        return getattr(self._kernel, name)

    def set_args(self, *args):
        self._kernel.set_args(*args)
        return self

    def run(self, *args, **kwargs):
        raise answer("clEnqueueNDRangeKernel", "CL_OUT_OF_RESOURCES", -5)

    time = run


class RefusingProgram:
    def __init__(self, program):
        self._program, self.build_log = program, program.build_log

    def kernel(self, name):
        return RefusingKernel(self._program.kernel(name))


def launchbounds_refused_at(ctx, refused, broken=False, monkeypatch=None):
    """launchbounds at 64 and 128 work-items with the build ``refused`` ((bounds, size))
    refused by the driver."""
    exp = LaunchBounds(ctx, items=ITEMS, sizes=[64, 128], steps=STEPS, lanes=LANES)
    real = exp.program
    exp.program = lambda b, s: RefusingProgram(real(b, s)) if (b, s) == refused else real(b, s)
    if broken:
        monkeypatch.setattr(refusal_mod, "device_still_launches", lambda c: False)
    return run_experiment(exp, **QUICK)


def test_launchbounds_refused_without_reqd_is_the_finding_and_holds(ctx):
    res = launchbounds_refused_at(ctx, ("none", 128))
    statuses = [(r["work_group_size"], r["bounds"], r["status"]) for r in res.rows]
    assert statuses == [(64, "none", "ok"), (64, "reqd", "ok"), (128, "none", "skipped"),
                        (128, "reqd", "ok")]
    refused = res.rows[2]
    assert refused["refused"] == "CL_OUT_OF_RESOURCES" and not refused["verified"]
    assert "refused by the device" in refused["error"]
    assert res.meta["only_reqd_launches"] == [128]
    assert "refused the launch (CL_OUT_OF_RESOURCES)" in res.meta["conclusion"]
    # The run passes (a skipped point is no failure) and the verdict counts the refusal,
    # whatever the ratio at 64 where both builds ran.
    outcome = guide.Outcome("launchbounds", guide.outcome_status(guide.PASSED, res), 1.0, 0, "", res)
    assert not guide.failed(outcome)
    record = guide_figures.experiment_verdict(LaunchBounds, res, outcome.status)
    assert record["verdict"] == "holds", record
    assert record["reason"].startswith("at 128 work-items per group only the build with")
    assert "where both sides ran" in record["reason"] and record["device_ratio"] > 0
    assert guide_figures.compare_to_source(res, "launchbounds")["verdict"] == "holds"


def test_a_refusal_of_the_declared_build_is_no_finding(ctx):
    # The claim predicts that the build without the declaration is the one that cannot launch:
    # the other way round is no finding, and the verdict is the ratio's where both ran.
    res = launchbounds_refused_at(ctx, ("reqd", 128))
    assert [r["status"] for r in res.rows] == ["ok", "ok", "ok", "skipped"]
    assert res.meta["only_reqd_launches"] == [] and claim_of(LaunchBounds).finding(res) is None
    claim = claim_of(LaunchBounds)
    record = guide_figures.experiment_verdict(LaunchBounds, res, guide.PASSED)
    assert record["verdict"] == guide_figures.verdict(claim, claim.measure(res).value)
    assert "only the build" not in record["reason"]


def test_a_refusal_on_a_broken_device_stays_a_failure(ctx, monkeypatch):
    res = launchbounds_refused_at(ctx, ("none", 128), broken=True, monkeypatch=monkeypatch)
    row = res.rows[2]
    assert row["status"] == "launch failed" and "refused" not in row
    assert "CL_OUT_OF_RESOURCES" in row["error"]
    assert claim_of(LaunchBounds).finding(res) is None
    outcome = guide.Outcome("launchbounds", guide.FAILED, 1.0, 1, "", res)
    assert guide.failed(outcome)
