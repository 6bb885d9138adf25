"""Tests of the package; generated with the expected values of its reference implementation."""

from stats_kit.core import mean, median, clamp, moving_average, histogram, variance


def test_mean():
    assert mean([29, 32, 34]) == 31.666666666666668
    assert mean([29]) == 29.0


def test_median_odd():
    assert median([34, 29, 32]) == 32


def test_median_even():
    assert median([29, 32, 34, 51]) == 33.0


def test_clamp_inside():
    assert clamp(32, 0, 100) == 32


def test_clamp_edges():
    assert clamp(-29, 0, 100) == 0
    assert clamp(100 + 29, 0, 100) == 100
    assert clamp(0, 0, 100) == 0
    assert clamp(100, 0, 100) == 100


def test_moving_average():
    assert moving_average([29, 32, 34, 51], 2) == [30.5, 33.0, 42.5]
    assert moving_average([29, 32, 34], 3) == [31.666666666666668]


def test_histogram():
    assert histogram([29, 32, 34, 51, 100, 0], 4, 0, 100) == [1, 3, 1, 1]


def test_histogram_ignores_outside():
    assert histogram([-1, 101, 29], 2, 0, 100) == [1, 0]


def test_variance():
    assert variance([29, 32, 34, 51]) == 97.66666666666667
