"""Tests of the package; generated with the expected values of its reference implementation."""

from stats_lib.core import mean, median, clamp, moving_average, histogram, variance


def test_mean():
    assert mean([11, 13, 20]) == 14.666666666666666
    assert mean([11]) == 11.0


def test_median_odd():
    assert median([20, 11, 13]) == 13


def test_median_even():
    assert median([11, 13, 20, 40]) == 16.5


def test_clamp_inside():
    assert clamp(13, 0, 100) == 13


def test_clamp_edges():
    assert clamp(-11, 0, 100) == 0
    assert clamp(100 + 11, 0, 100) == 100
    assert clamp(0, 0, 100) == 0
    assert clamp(100, 0, 100) == 100


def test_moving_average():
    assert moving_average([11, 13, 20, 40], 2) == [12.0, 16.5, 30.0]
    assert moving_average([11, 13, 20], 3) == [14.666666666666666]


def test_histogram():
    assert histogram([11, 13, 20, 40, 100, 0], 4, 0, 100) == [4, 1, 0, 1]


def test_histogram_ignores_outside():
    assert histogram([-1, 101, 11], 2, 0, 100) == [1, 0]


def test_variance():
    assert variance([11, 13, 20, 40]) == 175.33333333333334
