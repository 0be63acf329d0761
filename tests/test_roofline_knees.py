"""Cache levels from the knees of working-set curves (pyclperf.roofline.knees), on synthetic
curves whose steps are known: sharp steps, steps between the sampled sizes, noise, a slow start,
a gradual ramp, latency curves that rise, and a curve with no knee at all."""

from __future__ import annotations

import math

import numpy as np
import pytest

from pyclperf.roofline import knees as K

KiB, MiB = 1 << 10, 1 << 20
SIZES = [4 * KiB << i for i in range(19)]  # 4 KiB .. 1 GiB


def sharp(sizes, levels, values):
    return [next((v for level, v in zip(levels, values) if s <= level), values[-1]) for s in sizes]


def test_sharp_steps_between_powers_of_two_are_found_near_their_sizes():
    # Capacities that are no power of two: 48 KiB, 3 MiB, 50 MiB (an H200's L2).
    levels = [48 * KiB, 3 * MiB, 50 * MiB]
    values = [20000.0, 11800.0, 7000.0, 4450.0]
    found = K.knees(SIZES, sharp(SIZES, levels, values))
    assert len(found) == 3
    for knee, level in zip(found, levels):
        # The estimate lies between the bracketing samples, within sqrt(2) of the capacity.
        assert knee.below <= level < knee.above
        assert 1 / math.sqrt(2) <= knee.size / level <= math.sqrt(2), (knee.size, level)
    assert [round(k.before.value) for k in found] == [20000, 11800, 7000]
    assert round(found[-1].after.value) == 4450


def test_denser_sampling_around_a_knee_pins_it_down():
    level = 50 * MiB
    values = [11800.0, 4450.0]
    coarse = K.knees(SIZES, sharp(SIZES, [level], values))[0]
    extra = K.bracket_sizes(coarse, steps=4)
    assert len(extra) == 3 and all(coarse.below < s < coarse.above for s in extra)
    sizes = sorted(SIZES + extra)
    fine = K.knees(sizes, sharp(sizes, [level], values))[0]
    assert abs(math.log2(fine.size / level)) < abs(math.log2(coarse.size / level)) + 1e-9
    assert 2 ** -0.25 <= fine.size / level <= 2 ** 0.25


def test_noise_of_a_few_percent_moves_nothing():
    rng = np.random.default_rng(7)
    levels = [256 * KiB, 32 * MiB]
    clean = sharp(SIZES, levels, [15000.0, 9000.0, 3000.0])
    for _ in range(20):
        noisy = [v * rng.uniform(0.95, 1.05) for v in clean]
        found = K.knees(SIZES, noisy)
        assert len(found) == 2
        for knee, level in zip(found, levels):
            assert knee.below <= level < knee.above


def test_a_slow_start_is_overhead_not_a_level():
    # The smallest sets run short launches: their bandwidth is lower than the first plateau's.
    curve = sharp(SIZES, [1 * MiB], [13000.0, 2000.0])
    curve[0], curve[1] = 7700.0, 8100.0
    found = K.knees(SIZES, curve)
    assert len(found) == 1 and found[0].below <= 1 * MiB < found[0].above
    assert found[0].before.first == 2  # the plateau starts after the slow points


def test_an_isolated_outlier_is_no_level():
    curve = sharp(SIZES, [4 * MiB], [10000.0, 3000.0])
    curve[15] = 6000.0  # one point far off, on the DRAM side
    found = K.knees(SIZES, curve)
    assert len(found) == 1 and found[0].below <= 4 * MiB < found[0].above


def test_latency_curves_rise_and_are_read_the_other_way():
    levels = [192 * KiB, 50 * MiB]
    lat = sharp(SIZES, levels, [21.0, 140.0, 330.0])
    found = K.knees(SIZES, lat, lower_is_better=True)
    assert len(found) == 2
    for knee, level in zip(found, levels):
        assert knee.below <= level < knee.above
    assert found[0].before.value == 21.0 and found[1].after.value == 330.0
    # Read as a bandwidth curve (higher is better), the same numbers rise: no falling knee.
    assert K.knees(SIZES, lat) == []


def test_a_gradual_ramp_between_plateaus_is_one_knee_not_a_staircase():
    # The H200's measured chase latency: L1-ish, a ramp, an L2 plateau, a long ramp to DRAM.
    ns = [674, 690, 722, 785, 912, 1160, 2730, 4090, 4470, 4640, 4710, 4890, 5840, 7360, 8770,
          9810, 10400, 10800, 11000]
    lat = [x / 32.768 for x in ns]
    found = K.knees(SIZES, lat, lower_is_better=True)
    assert len(found) == 2, [k.size for k in found]
    assert 128 * KiB < found[0].size < 256 * KiB
    assert 16 * MiB < found[1].size < 32 * MiB


def test_a_plateau_that_scatters_without_a_trend_is_still_a_level():
    # A quick profile's read curve on this project's PoCL CPU device (L1d 48 KiB, L2 2 MiB),
    # measured under the sanitizer's build: the L2 plateau scatters by a fifth (107-128 GB/s)
    # and the L1 one has a spike (225 among 154-166); the step between them is 1.4x. Judged by
    # their spread, one of the two was taken for a slope and the L1 knee was lost.
    kib = [16, 32, 38, 45.2, 53.8, 64, 128, 256, 512, 1024, 2048, 2896.2, 4096, 8192, 16384,
           32768, 46341, 65536, 131072, 262144, 524288]
    gbs = [154.07, 166.34, 225.37, 158.51, 113.32, 118.58, 118.24, 112.24, 107.54, 128.12, 61.14,
           33.46, 31.99, 29.27, 29.11, 29.14, 24.57, 19.0, 14.6, 13.07, 13.06]
    found = K.knees([k * KiB for k in kib], gbs)
    assert 45 * KiB < found[0].size < 54 * KiB, [k.size / KiB for k in found]
    assert 1 * MiB < found[1].size < 2896 * KiB
    assert len(found) == 3


def test_a_flat_curve_has_no_knee_and_one_plateau():
    curve = [5000.0 * (1 + 0.01 * math.sin(i)) for i in range(len(SIZES))]
    assert K.knees(SIZES, curve) == []
    flat = K.plateaus(SIZES, curve)
    assert len(flat) == 1 and flat[0].first == 0 and flat[0].last == len(SIZES) - 1


def test_steps_below_the_threshold_are_not_levels():
    curve = sharp(SIZES, [1 * MiB], [10000.0, 8500.0])  # 1.18x: less than MIN_STEP
    assert K.knees(SIZES, curve) == []
    assert len(K.knees(SIZES, curve, min_step=1.1)) == 1


def test_a_cache_that_keeps_part_of_a_larger_set_still_shows_its_knee_near_its_size():
    # Random-like replacement: past the capacity the hit rate falls off, not to zero at once.
    level, fast, slow = 8 * MiB, 12000.0, 4000.0
    curve = []
    for s in SIZES:
        hit = 1.0 if s <= level else (level / s) ** 2
        curve.append(1 / (hit / fast + (1 - hit) / slow))
    found = K.knees(SIZES, curve)
    assert len(found) == 1
    assert level / 2 < found[0].size < 2 * level


def test_matching_pairs_knees_of_two_curves_within_a_factor():
    bw = K.knees(SIZES, sharp(SIZES, [48 * MiB], [11800.0, 4450.0]))
    lat = K.knees(SIZES, sharp(SIZES, [192 * KiB, 28 * MiB], [21.0, 140.0, 330.0]), lower_is_better=True)
    pairs = K.match(bw, lat)
    assert len(pairs) == 2
    assert pairs[0] == (None, lat[0])          # a level only the latency shows
    assert pairs[1] == (bw[0], lat[1])         # one level seen by both (48 vs 28 MiB)
    assert K.match(bw, lat, within=1.2)[-1] == (bw[0], None)


def test_spans_to_measure_again_hold_each_candidates_plateau_ends():
    # A bandwidth knee and a latency knee of one level (48 and 57 KiB) are one candidate; the
    # L2's (2 and 2.3 MiB) another; given in any order, the spans come smallest first.
    spans = K.spans([2.3 * MiB, 48 * KiB, 2 * MiB, 57 * KiB], near=6, within=2.5)
    assert spans == [pytest.approx((8 * KiB, 342 * KiB)), pytest.approx((2 * MiB / 6, 13.8 * MiB))]
    assert 16 * KiB > spans[0][0]  # the curve's first L1 point is in its span
    assert K.spans([], near=6, within=2.5) == [] and K.spans([0.0, -1.0], 6, 2.5) == []
    assert len(K.spans([48 * KiB, 57 * KiB], near=6, within=1.1)) == 2  # too far apart for one
    with pytest.raises(ValueError, match="near"):
        K.spans([1.0], near=0.5, within=2.5)


def test_bad_input_is_refused():
    with pytest.raises(ValueError, match="sizes but"):
        K.knees([1, 2, 3], [1.0, 2.0])
    with pytest.raises(ValueError, match="once"):
        K.knees([1, 1, 2, 3], [1.0, 1.0, 2.0, 3.0])
    with pytest.raises(ValueError, match="min_step"):
        K.knees(SIZES, [1.0] * len(SIZES), min_step=1.0)


def test_unusable_values_are_left_out():
    curve = sharp(SIZES, [1 * MiB], [10000.0, 3000.0])
    curve[3] = float("nan")
    curve[10] = 0.0
    found = K.knees(SIZES, curve)
    assert len(found) == 1 and found[0].below <= 1 * MiB < found[0].above

