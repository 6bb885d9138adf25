"""Tests of the package; generated with the expected values of its reference implementation."""

from stats_core.core import mean, median, clamp, moving_average, histogram, variance


def test_mean():
    assert mean([37, 39, 41]) == 39.0
    assert mean([37]) == 37.0


def test_median_odd():
    assert median([41, 37, 39]) == 39


def test_median_even():
    assert median([37, 39, 41, 48]) == 40.0


def test_clamp_inside():
    assert clamp(39, 0, 100) == 39


def test_clamp_edges():
    assert clamp(-37, 0, 100) == 0
    assert clamp(100 + 37, 0, 100) == 100
    assert clamp(0, 0, 100) == 0
    assert clamp(100, 0, 100) == 100


def test_moving_average():
    assert moving_average([37, 39, 41, 48], 2) == [38.0, 40.0, 44.5]
    assert moving_average([37, 39, 41], 3) == [39.0]


def test_histogram():
    assert histogram([37, 39, 41, 48, 100, 0], 4, 0, 100) == [1, 4, 0, 1]


def test_histogram_ignores_outside():
    assert histogram([-1, 101, 37], 2, 0, 100) == [1, 0]


def test_variance():
    assert variance([37, 39, 41, 48]) == 22.916666666666668
